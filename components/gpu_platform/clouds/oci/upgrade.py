"""How OKE cycles a GPU node pool's nodes: ``nodePoolCyclingDetails`` and ``nodeEvictionNodePoolSettings``, as data.

OKE never upgrades or cycles a node pool on its own: existing nodes take a new image or Kubernetes version only when
an UpdateNodePool with node cycling enabled replaces them (OCI docs ContEng "Upgrading Managed Nodes": nodes are
upgraded by cycling or by hand; ``isNodeCyclingEnabled``: "if nodes in the nodepool will be cycled to have new
changes"), that is a ``pulumi up`` that changes the pool, and ``oci.containerengine.Cluster`` has no maintenance
window or auto-upgrade setting. So ``automatic`` and ``maintenance.window`` have nothing to set and are refused.

- ``maxSurge`` / ``maxUnavailable`` -> ``maximum_surge`` / ``maximum_unavailable`` (strings: a count or a
  percentage, 0 to the pool's size; OKE defaults 1 and 0), with cycling on so a changed image or version replaces
  the nodes that many at a time instead of only reaching new nodes.
- ``drainTimeoutMinutes`` -> ``eviction_grace_duration`` (ISO 8601, ``PT0M`` to ``PT60M``: pulumi_oci
  ``NodePoolNodeEvictionNodePoolSettings``); more than 60 minutes is refused.
- ``is_force_delete_after_grace_duration``: never on training pools (a rank that could not be evicted keeps its
  node; the cycle waits for the operator), after the grace on inference and general pools (their replicas are
  behind PodDisruptionBudgets that the grace honours).
- ``soakMinutes`` and ``blue-green`` are refused: OKE has neither.
"""

from typing import Any

from ...errors import ConfigError
from ...upgrades.pool_upgrade import TRAINING, PoolUpgrade, refuse_unsupported, stack_key

SUPPORTED = {
    "max_surge": "nodePoolCyclingDetails.maximumSurge",
    "max_unavailable": "nodePoolCyclingDetails.maximumUnavailable",
    "drain_timeout_minutes": "nodeEvictionNodePoolSettings.evictionGraceDuration",
    "strategy": "surge",
}
"""What an OKE node pool honours, and the provider input it reaches."""
MAX_EVICTION_GRACE_MINUTES = 60
"""``evictionGraceDuration``: Min PT0M, Max PT60M (pulumi_oci containerengine NodePoolNodeEvictionNodePoolSettings)."""
OKE = "OKE"


def refuse(upgrade: PoolUpgrade, path: str) -> None:
    """Refuse what an OKE node pool cannot honour (``path``: ``nodePools[0].upgrade`` or ``upgrade``)."""
    if "automatic" in upgrade.given:
        raise ConfigError(f"{path}.{stack_key('automatic')}",
                          "OKE never upgrades or cycles a node pool on its own (only an update of the pool with node "
                          "cycling, that is a pulumi up, replaces its nodes): there is nothing to set")
    refuse_unsupported(upgrade, path, SUPPORTED, OKE)
    minutes = upgrade.drain_timeout_minutes
    if minutes is not None and minutes > MAX_EVICTION_GRACE_MINUTES:
        raise ConfigError(f"{path}.{stack_key('drain_timeout_minutes')}",
                          f"OKE's eviction grace is at most {MAX_EVICTION_GRACE_MINUTES} minutes, got {minutes}")


def cycling_details(upgrade: PoolUpgrade) -> dict[str, Any]:
    """``node_pool_cycling_details`` of a pool's resolved settings."""
    return {"is_node_cycling_enabled": True, "maximum_surge": upgrade.max_surge,
            "maximum_unavailable": upgrade.max_unavailable}


def eviction_settings(upgrade: PoolUpgrade, role: str) -> dict[str, Any]:
    """``node_eviction_node_pool_settings``: the drain timeout when given (else OKE's 60 minutes), and whether a
    node whose pods could not all be evicted is deleted anyway (never on training pools)."""
    out: dict[str, Any] = {"is_force_delete_after_grace_duration": role != TRAINING}
    if upgrade.drain_timeout_minutes is not None:
        out["eviction_grace_duration"] = f"PT{upgrade.drain_timeout_minutes}M"
    return out
