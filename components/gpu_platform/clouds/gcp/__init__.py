"""Google Cloud: GKE Standard clusters, GPU node pools and GPUDirect networks.

The components are imported on first use (the cloud SDK with them); the pure modules beside them (``options``
and the other decision modules) import no cloud SDK, so configuration is validated without one.
"""

from ..._lazy import lazy_exports

_EXPORTS = {
    "AdditionalNodeNetwork": ".cluster",
    "GkeBucketAccess": ".storage_components",
    "GkeBucketAccessArgs": ".storage_components",
    "GkeCluster": ".cluster",
    "GkeClusterArgs": ".cluster",
    "GkeGpuNodePool": ".cluster",
    "GkeGpuNodePoolArgs": ".cluster",
    "GkeSharedFileSystem": ".storage_components",
    "GkeSharedFileSystemArgs": ".storage_components",
    "GpuSubnetSpec": ".cluster",
    "GpuVpcSpec": ".cluster",
    "cluster_from_config": ".cluster",
    "network_plan": ".cluster",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
