"""Which parts of a stack rely on NetworkPolicies for their isolation.

Every managed cloud layer enables a policy engine (VPC CNI network policy agent, Cilium on AKS, Dataplane V2,
the OKE engine; see ``docs/security.md``). An ``existing`` cluster states whether it enforces policies
(``networkPolicyEnforced``); a stack that isolates anything with NetworkPolicies on a cluster that enforces
none is refused, because a policy nothing enforces is worse than none: users believe it.
"""

from ..config_model import PlatformConfig


def network_policy_users(config: PlatformConfig) -> tuple[str, ...]:
    """The parts of the stack whose isolation is a NetworkPolicy, as the stack keys that turn them on."""
    users = []
    if config.teams:
        users.append("teams")
    if config.monitoring.enabled:
        users.append("monitoring")
    if config.inference.enabled:
        users.append("inference")
    if config.runs_optimizer:
        users.append("optimizer")
    if config.llm is not None:
        users.append("llm")
    return tuple(users)


def unenforced_problem(config: PlatformConfig, enforced: bool) -> str | None:
    """Why a stack cannot be planned on a cluster whose policy enforcement is ``enforced``, or None."""
    users = network_policy_users(config)
    if enforced or not users:
        return None
    return (f"the cluster is not declared to enforce NetworkPolicies, but {', '.join(users)} rely on them; run a "
            "policy engine (Calico, Cilium) and set networkPolicyEnforced: true, or turn those off")
