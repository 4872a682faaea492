"""Oracle Cloud: OKE clusters, their VCN, GPU/RoCE node pools and the cluster autoscaler add-on.

The components are imported on first use (the cloud SDK with them); the pure modules beside them (``options``
and the other decision modules) import no cloud SDK, so configuration is validated without one.
"""

from ..._lazy import lazy_exports

_EXPORTS = {
    "OkeAutoscaledPool": ".autoscaler",
    "OkeBucketAccess": ".storage_components",
    "OkeBucketAccessArgs": ".storage_components",
    "OkeCluster": ".cluster",
    "OkeClusterArgs": ".cluster",
    "OkeClusterAutoscaler": ".autoscaler",
    "OkeClusterAutoscalerArgs": ".autoscaler",
    "OkeGpuNodePool": ".cluster",
    "OkeGpuNodePoolArgs": ".cluster",
    "OkeSharedFileSystem": ".storage_components",
    "OkeSharedFileSystemArgs": ".storage_components",
    "OkeVcn": ".vcn",
    "OkeVcnArgs": ".vcn",
    "cluster_from_config": ".cluster",
    "node_labels": ".cluster",
    "placement_configs": ".cluster",
    "select_availability_domains": ".cluster",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
