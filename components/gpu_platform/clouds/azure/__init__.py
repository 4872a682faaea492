"""Azure: AKS clusters and GPU/InfiniBand agent pools.

The components are imported on first use (the cloud SDK with them); the pure modules beside them (``options``
and the other decision modules) import no cloud SDK, so configuration is validated without one.
"""

from ..._lazy import lazy_exports

_EXPORTS = {
    "AksBucketAccess": ".storage_components",
    "AksBucketAccessArgs": ".storage_components",
    "AksCluster": ".cluster",
    "AksClusterArgs": ".cluster",
    "AksGpuNodePool": ".cluster",
    "AksGpuNodePoolArgs": ".cluster",
    "AksSharedFileSystem": ".storage_components",
    "AksSharedFileSystemArgs": ".storage_components",
    "cluster_from_config": ".cluster",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
