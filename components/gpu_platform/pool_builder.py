"""`gpu_pool`: a `GpuPool` from the same keys a stack file's ``nodePools`` entry takes, validated the same way.

For programs that compose the components themselves (``examples/``) instead of running `GpuPlatform`: the GPU
model, GPU count, memory, vCPUs and RDMA NICs come from the catalog, and a bad entry is the same one-line
`ConfigError` a stack file gets::

    from gpu_platform.pool_builder import gpu_pool

    train = gpu_pool("aws", {"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": 2, "rdma": True})
    EksCluster("train", {"region": "us-west-2", ..., "gpu_pools": [{"pool": train.spec()}]})

Keys: ``docs/configuration.md`` (``nodePools[]`` and the cloud's pool keys).
"""

from collections.abc import Mapping
from typing import Any

from . import config
from .errors import ConfigError
from .pools import GpuPool


def node_pool(cloud: str, entry: Mapping[str, Any]) -> config.NodePoolConfig:
    """The validated ``nodePools`` entry (cloud pool options included); errors name ``nodePools[<name>]``."""
    if cloud not in config.catalog.CLOUDS:
        raise ConfigError("cloud", config.one_of(cloud, config.catalog.CLOUDS))
    path = f"nodePools[{entry.get('name', '?')}]"
    return config.parse_node_pool(entry, path, cloud, config.options_module(cloud))


def gpu_pool(cloud: str, entry: Mapping[str, Any]) -> GpuPool:
    """The `GpuPool` a ``nodePools`` entry of ``cloud`` publishes (what `PlatformConfig.gpu_pools` returns for
    it). Cloud layers may add facts on top: `OkeGpuNodePool.gpu_pool` adds RoCE NCCL settings, `GkeCluster`
    the GPUDirect pod annotations."""
    pool = node_pool(cloud, entry)
    platform = config.PlatformConfig(stack="", cloud=cloud, region="", node_pools=(pool,))
    return config.gpu_pool(platform, pool)
