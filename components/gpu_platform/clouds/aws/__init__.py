"""AWS: EKS clusters, GPU/EFA managed node groups, Karpenter and the cluster autoscaler.

The components are imported on first use (the cloud SDK with them); the pure modules beside them (``options``
and the other decision modules) import no cloud SDK, so configuration is validated without one.
"""

from ..._lazy import lazy_exports

_EXPORTS = {
    "EksBucketAccess": ".storage_components",
    "EksBucketAccessArgs": ".storage_components",
    "EksCluster": ".cluster",
    "EksClusterArgs": ".cluster",
    "EksClusterAutoscaler": ".cluster_autoscaler",
    "EksClusterAutoscalerArgs": ".cluster_autoscaler",
    "EksGpuNodePool": ".cluster",
    "EksGpuNodePoolArgs": ".cluster",
    "EksSharedFileSystem": ".storage_components",
    "EksSharedFileSystemArgs": ".storage_components",
    "KarpenterAutoscaler": ".karpenter",
    "KarpenterAutoscalerArgs": ".karpenter",
    "KarpenterPoolArgs": ".karpenter",
    "cluster_from_config": ".cluster",
    "karpenter_pools": ".cluster",
    "pool_options": ".cluster",
    "region_zones": ".cluster",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
