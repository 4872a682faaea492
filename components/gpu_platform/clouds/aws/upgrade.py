"""How EKS upgrades a GPU pool: managed node group ``updateConfig`` and Karpenter NodePool disruption, as data.

A pool's `PoolUpgrade` reaches two kinds of nodes:

- a managed node group (every pool with the cluster-autoscaler; a Karpenter pool's ``minNodes`` baseline). EKS never
  upgrades a managed node group on its own: a new AMI release reaches it only through ``UpdateNodegroupVersion``,
  which Pulumi calls when the node group's version, release or launch template changes (EKS user guide
  update-managed-node-group.md: "you must initiate the update"). So nothing automatic can touch it and
  ``automatic`` has nothing to set. ``maxUnavailable`` is ``updateConfig.maxUnavailable`` (a count, 1-100) or
  ``maxUnavailablePercentage`` (1-100); ``maxSurge: 0`` is ``updateStrategy: MINIMAL`` ("terminates the old instances
  before launching the new instances ... useful ... with hardware accelerators such as GPUs", EKS API
  NodegroupUpdateConfig), any surge is ``DEFAULT``, where EKS itself picks how many nodes to add (the larger of up
  to two per Availability Zone and ``maxUnavailable``: managed-node-update-behavior.md, scale up phase), so a
  written surge count other than 0 is refused. The drain waits a fixed 15 minutes (same page, upgrade phase):
  ``drainTimeoutMinutes`` is refused.
- a Karpenter NodePool (``autoscaling.autoscaler: karpenter``). Karpenter replaces drifted nodes on its own (a new
  AMI behind the EC2NodeClass's ``@latest`` alias, a changed NodePool or EC2NodeClass). ``automatic: never`` is a
  ``Drifted`` budget of ``nodes: "0"`` that is always active; ``window`` is a ``Drifted`` budget of the pool's
  ``maxUnavailable`` with a ``nodes: "0"`` budget over every closed span of the week (Karpenter uses the most
  restrictive active budget: NodePool CRD ``spec.disruption.budgets``). Karpenter launches a replacement before it
  drains a drifted node, so it cannot run without a surge: ``maxSurge`` is refused; ``maxUnavailable: 0`` (the
  inference default) replaces one node at a time. ``drainTimeoutMinutes`` is ``terminationGracePeriod``.
"""

from collections.abc import Iterable
from typing import Any

from ...errors import ConfigError
from ...upgrades.maintenance import DAYS, MaintenanceWindow
from ...upgrades.pool_upgrade import NEVER, WINDOW, PoolUpgrade, count_of, refuse_unsupported, stack_key

NODE_GROUP_FIELDS = {
    "max_surge": "updateConfig.updateStrategy (0: MINIMAL)",
    "max_unavailable": "updateConfig.maxUnavailable / maxUnavailablePercentage",
    "strategy": "surge",
}
"""What an EKS managed node group honours, and the provider input it reaches."""
KARPENTER_FIELDS = {
    "max_unavailable": "NodePool spec.disruption.budgets (Drifted nodes)",
    "drain_timeout_minutes": "NodePool spec.template.spec.terminationGracePeriod",
    "automatic": "NodePool spec.disruption.budgets (Drifted: 0 outside the window)",
    "strategy": "surge",
}
"""What a Karpenter NodePool honours, and the field it reaches."""
MINIMAL, DEFAULT = "MINIMAL", "DEFAULT"
"""``updateConfig.updateStrategy`` values (pulumi_aws ``eks.NodeGroupUpdateConfig``)."""
MAX_UNAVAILABLE_NODES = 100
"""EKS caps ``maxUnavailable`` at 100 nodes (NodegroupUpdateConfig)."""
DRIFTED = "Drifted"
CONSOLIDATION_REASONS = ["Empty", "Underutilized"]
"""Karpenter's other budget reasons (NodePool CRD enum: Underutilized, Empty, Drifted)."""
CONSOLIDATION_BUDGET = {"nodes": "1", "reasons": CONSOLIDATION_REASONS}
"""At most one GPU node of a pool is consolidated at a time (what the pool's single budget said before drift got
budgets of its own)."""
MANAGED_NODE_GROUP = "EKS managed node groups"
KARPENTER_NAME = "Karpenter"


def refuse_on_node_group(upgrade: PoolUpgrade, path: str, automatic_elsewhere: bool = False) -> None:
    """Refuse what a managed node group cannot honour. ``automatic_elsewhere``: the pool's Karpenter share takes
    ``automatic`` (its baseline node group is never upgraded on its own either way)."""
    supported = dict(NODE_GROUP_FIELDS)
    if automatic_elsewhere:
        supported["automatic"] = "the pool's Karpenter NodePool"
    if "automatic" in upgrade.given and not automatic_elsewhere:
        raise ConfigError(f"{path}.{stack_key('automatic')}",
                          "EKS never upgrades a managed node group on its own (a new AMI reaches it only through "
                          "UpdateNodegroupVersion, that is a pulumi up): there is nothing to set")
    if "drain_timeout_minutes" in upgrade.given:
        raise ConfigError(f"{path}.{stack_key('drain_timeout_minutes')}",
                          "EKS drains a managed node group's node for a fixed 15 minutes; it has no setting for it")
    refuse_unsupported(upgrade, path, supported, MANAGED_NODE_GROUP)
    if "max_surge" in upgrade.given and count_of(upgrade.max_surge) != 0:
        raise ConfigError(f"{path}.{stack_key('max_surge')}",
                          "EKS picks the surge of a managed node group itself (updateStrategy DEFAULT: up to two "
                          "nodes per zone, at least maxUnavailable); write 0 (MINIMAL) or leave it out")
    if count_of(upgrade.max_unavailable) > MAX_UNAVAILABLE_NODES and not upgrade.is_percentage("max_unavailable"):
        raise ConfigError(f"{path}.{stack_key('max_unavailable')}",
                          f"EKS takes at most {MAX_UNAVAILABLE_NODES} nodes, got {upgrade.max_unavailable}")


def refuse_on_karpenter(upgrade: PoolUpgrade, path: str) -> None:
    """Refuse what a Karpenter NodePool cannot honour."""
    if "max_surge" in upgrade.given:
        raise ConfigError(f"{path}.{stack_key('max_surge')}",
                          "Karpenter launches one replacement before it drains each drifted node; the nodes "
                          "replaced at once are maxUnavailable")
    refuse_unsupported(upgrade, path, KARPENTER_FIELDS, KARPENTER_NAME)


def node_group_update_config(upgrade: PoolUpgrade) -> dict[str, Any]:
    """``eks.NodeGroup.update_config`` of a pool's resolved settings. EKS needs at least one unavailable node: with
    ``maxUnavailable: 0`` and a surge (DEFAULT) the replacements are launched before old nodes go, so capacity never
    drops and 1 is what it means."""
    unavailable = max(1, count_of(upgrade.max_unavailable))
    out: dict[str, Any] = ({"max_unavailable_percentage": unavailable} if upgrade.is_percentage("max_unavailable")
                           else {"max_unavailable": unavailable})
    out["update_strategy"] = MINIMAL if count_of(upgrade.max_surge) == 0 else DEFAULT
    return out


def _duration(minutes: int) -> str:
    """A budget ``duration`` (CRD pattern: hours and minutes only)."""
    hours, rest = divmod(minutes, 60)
    return f"{hours}h" if not rest else f"{hours}h{rest}m" if hours else f"{rest}m"


def _cron(minute_of_week: int) -> str:
    """The weekly cron (UTC: Karpenter budgets take no time zone) that fires ``minute_of_week`` minutes after
    Monday 00:00. Cron counts days of the week from Sunday (0)."""
    day, minute = divmod(minute_of_week, 1440)
    return f"{minute % 60} {minute // 60} * * {(day + 1) % len(DAYS)}"


def drift_nodes(upgrade: PoolUpgrade) -> str:
    """Nodes Karpenter may replace at once for drift: ``maxUnavailable``, or one when it is 0 (each replacement is
    launched before its node drains, so no capacity is lost)."""
    return upgrade.max_unavailable if count_of(upgrade.max_unavailable) > 0 else "1"


def disruption_budgets(upgrade: PoolUpgrade, window: MaintenanceWindow) -> list[dict[str, Any]]:
    """``spec.disruption.budgets`` of a pool's NodePool from its resolved settings: consolidation one node at a
    time; drift never (``automatic: never``) or only inside ``window``."""
    budgets: list[dict[str, Any]] = [{"nodes": CONSOLIDATION_BUDGET["nodes"],
                                      "reasons": list(CONSOLIDATION_BUDGET["reasons"])}]
    if upgrade.automatic == NEVER:
        return [*budgets, {"nodes": "0", "reasons": [DRIFTED]}]
    if upgrade.automatic != WINDOW:
        raise ValueError(f"automatic must be resolved to {WINDOW} or {NEVER}, got {upgrade.automatic!r}")
    budgets.append({"nodes": drift_nodes(upgrade), "reasons": [DRIFTED]})
    for start, length in window.closed_intervals():
        budgets.append({"nodes": "0", "reasons": [DRIFTED], "schedule": _cron(start), "duration": _duration(length)})
    return budgets


def termination_grace_period(upgrade: PoolUpgrade, default: str) -> str:
    """``terminationGracePeriod``: ``drainTimeoutMinutes`` when given, else ``default``."""
    if upgrade.drain_timeout_minutes is None:
        return default
    return _duration(upgrade.drain_timeout_minutes)


def uses_window(upgrades: Iterable[PoolUpgrade]) -> bool:
    """Some Karpenter pool (resolved settings) replaces drifted nodes in the window, so the window reaches a
    NodePool; a window nothing uses is refused."""
    return any(u.automatic == WINDOW for u in upgrades)
