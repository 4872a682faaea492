"""How every cloud's cluster autoscaler is tuned for GPU nodes, and that tuning in each cloud's own spelling.

GPU nodes start slowly (boot, NVIDIA driver and toolkit, device plugin, sometimes a MIG reconfiguration) and cost
a lot while idle. The defaults of the Kubernetes cluster autoscaler assume fast, cheap nodes: it gives a node 15
minutes to come up and removes it after 10 idle minutes. The profile instead:

- waits ``max_node_provision_minutes`` (25 by default) for a new node before giving up on it;
- keeps an idle node ``scale_down_unneeded_minutes`` (30) — a replica that comes back a few minutes later should
  not pay another slow start — and pauses scale-down for as long as a new node may take to provision;
- picks the node group that wastes least (``least-waste``), balances similar groups across zones;
- does not let kube-system pods or emptyDir volumes pin an idle GPU node (both are recreated elsewhere).

Pure data, no SDK: `cluster_autoscaler_flags` (the cluster-autoscaler chart on EKS), `aks_auto_scaler_profile`
(``ManagedCluster.auto_scaler_profile``), `oke_addon_configurations` (the OKE ``ClusterAutoscaler`` add-on) and
`gke_cluster_autoscaling` (``Cluster.cluster_autoscaling``: GKE exposes a profile, not the individual timings).
"""

from collections.abc import Sequence
from dataclasses import dataclass

EXPANDER = "least-waste"
GKE_PROFILE = "BALANCED"
"""GKE's ``autoscaling_profile``: ``BALANCED`` keeps spare nodes longer; ``OPTIMIZE_UTILIZATION`` removes them
aggressively, which slow-starting GPU nodes pay for on every burst."""
OKE_AUTH_TYPE = "workload"
"""The OKE add-on authenticates as its service account through OKE workload identity (enhanced clusters)."""


@dataclass(frozen=True)
class GpuScalingProfile:
    """Cluster autoscaler timings for GPU node pools."""

    scale_down_unneeded_minutes: int = 30
    """How long a node stays unneeded before it is removed."""
    max_node_provision_minutes: int = 25
    """How long a new node may take to register and become ready."""

    def __post_init__(self) -> None:
        if self.scale_down_unneeded_minutes < 1 or self.max_node_provision_minutes < 1:
            raise ValueError("autoscaler timings are whole minutes >= 1")

    @property
    def scale_down_delay_after_add_minutes(self) -> int:
        """Scale-down pauses after a scale-up for as long as the new node may take to become useful."""
        return self.max_node_provision_minutes


def _minutes(value: int) -> str:
    return f"{value}m"


def cluster_autoscaler_flags(profile: GpuScalingProfile) -> dict[str, object]:
    """``extraArgs`` of the cluster-autoscaler chart (each becomes ``--<flag>=<value>``; flags from the
    autoscaler FAQ "What are the parameters to CA?"). No ``--gpu-total``: the FAQ documents it as GKE-only."""
    return {
        "expander": EXPANDER,
        "balance-similar-node-groups": True,
        "skip-nodes-with-system-pods": False,
        "skip-nodes-with-local-storage": False,
        "max-node-provision-time": _minutes(profile.max_node_provision_minutes),
        "scale-down-unneeded-time": _minutes(profile.scale_down_unneeded_minutes),
        "scale-down-delay-after-add": _minutes(profile.scale_down_delay_after_add_minutes),
    }


def aks_auto_scaler_profile(profile: GpuScalingProfile) -> dict[str, str]:
    """``ManagedClusterPropertiesAutoScalerProfileArgs`` (snake_case keyword arguments; AKS takes strings, times
    in whole minutes ``Nm``)."""
    return {
        "expander": EXPANDER,
        "balance_similar_node_groups": "true",
        "skip_nodes_with_system_pods": "false",
        "skip_nodes_with_local_storage": "false",
        "max_node_provision_time": _minutes(profile.max_node_provision_minutes),
        "scale_down_unneeded_time": _minutes(profile.scale_down_unneeded_minutes),
        "scale_down_delay_after_add": _minutes(profile.scale_down_delay_after_add_minutes),
    }


def gke_cluster_autoscaling() -> dict[str, object]:
    """``Cluster.cluster_autoscaling``: node auto-provisioning off (the GPU pools are the platform's own; GKE
    requires ``enabled`` on Standard clusters), the ``BALANCED`` profile."""
    return {"enabled": False, "autoscaling_profile": GKE_PROFILE}


@dataclass(frozen=True)
class OkeNodePoolRange:
    """One node pool the OKE add-on scales, and its bounds."""

    node_pool_id: str
    min_nodes: int
    max_nodes: int


def oke_nodes(pools: Sequence[OkeNodePoolRange]) -> str:
    """The add-on's ``nodes`` value: ``<min>:<max>:<node pool OCID>`` per pool, comma-separated."""
    return ",".join(f"{p.min_nodes}:{p.max_nodes}:{p.node_pool_id}" for p in pools)


def oke_addon_configurations(profile: GpuScalingProfile, pools: Sequence[OkeNodePoolRange]) -> list[dict[str, str]]:
    """``configurations`` of the OKE ``ClusterAutoscaler`` add-on (key/value strings)."""
    if not pools:
        raise ValueError("the OKE cluster autoscaler needs at least one node pool to scale")
    settings = {
        "authType": OKE_AUTH_TYPE,
        "nodes": oke_nodes(pools),
        "expander": EXPANDER,
        "balanceSimilarNodeGroups": "true",
        "skipNodesWithSystemPods": "false",
        "skipNodesWithLocalStorage": "false",
        "maxNodeProvisionTime": _minutes(profile.max_node_provision_minutes),
        "scaleDownUnneededTime": _minutes(profile.scale_down_unneeded_minutes),
        "scaleDownDelayAfterAdd": _minutes(profile.scale_down_delay_after_add_minutes),
    }
    return [{"key": k, "value": v} for k, v in settings.items()]
