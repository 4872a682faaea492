"""Pools for programs that compose the components themselves, from the keys a stack file's ``nodePools`` entry
takes, validated the same way (the same one-line `ConfigError`).

- `pool_args(cloud, entry)`: one entry of the cloud's cluster ``gpu_pools`` (``EksCluster``, ``GkeCluster``,
  ``AksCluster``, ``OkeCluster``) or the args of its pool component: the pool plus every cloud key of the entry
  (``capacityBlock``, ``zones``, ``desiredNodes``, disks...), so nothing the entry says is lost::

      from gpu_platform import EksCluster, pool_args

      train = pool_args("aws", {"name": "h100-train", "instanceType": "p5.48xlarge", "maxNodes": 2, "rdma": True,
                                "provisioning": "reservation", "reservation": "cr-0123456789abcdef0",
                                "zones": ["us-west-2a"]})
      EksCluster("train", {"region": "us-west-2", ..., "gpu_pools": [train]})

- `gpu_pool(cloud, entry)`: the cloud-neutral `GpuPool` alone (for the Kubernetes layer's components). It has no
  place for the cloud's own keys, so it refuses them and names `pool_args`.

Keys: ``docs/configuration.md`` (``nodePools[]`` and the cloud's pool keys).
"""

from collections.abc import Mapping
from typing import Any

from . import config
from .errors import ConfigError
from .pools import GpuPool

# Entry keys that describe how a cloud runs the pool, not the pool itself: a GpuPool cannot carry them.
PLACEMENT_KEYS = ("zones", "desiredNodes")


def node_pool(cloud: str, entry: Mapping[str, Any]) -> config.NodePoolConfig:
    """The validated ``nodePools`` entry (cloud pool options included); errors name ``nodePools[<name>]``."""
    if cloud not in config.catalog.CLOUDS:
        raise ConfigError("cloud", config.one_of(cloud, config.catalog.CLOUDS))
    if not isinstance(entry, Mapping):
        raise ConfigError("nodePools[?]", f"must be a mapping of nodePools keys, got {type(entry).__name__}")
    path = f"nodePools[{entry.get('name', '?')}]"
    return config.parse_node_pool(entry, path, cloud, config.options_module(cloud))


def _published_pool(cloud: str, pool: config.NodePoolConfig) -> GpuPool:
    platform = config.PlatformConfig(stack="", cloud=cloud, region="", node_pools=(pool,))
    return config.gpu_pool(platform, pool)


def gpu_pool(cloud: str, entry: Mapping[str, Any]) -> GpuPool:
    """The `GpuPool` a ``nodePools`` entry of ``cloud`` publishes (what `PlatformConfig.gpu_pools` returns for
    it). Cloud layers may add facts on top: `OkeGpuNodePool.gpu_pool` adds RoCE NCCL settings, `GkeCluster`
    the GPUDirect pod annotations. Cloud keys are refused: use `pool_args`, which keeps them."""
    pool = node_pool(cloud, entry)
    cloud_keys = set(getattr(config.options_module(cloud), "POOL_KEYS", set())) | set(PLACEMENT_KEYS)
    for key in entry:
        if key in cloud_keys:
            raise ConfigError(f"nodePools[{pool.name}].{key}",
                              f"gpu_pool() returns a cloud-neutral GpuPool with no place for '{key}'; use "
                              f"pool_args('{cloud}', entry), which keeps it for the cluster's gpu_pools")
    return _published_pool(cloud, pool)


def pool_args(cloud: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster ``gpu_pools`` entry (the args of the cloud's pool component, less what the cluster fills in)
    for a ``nodePools`` entry of ``cloud``: ``{"pool": <GpuPoolSpec>, ...every cloud key of the entry}``."""
    pool = node_pool(cloud, entry)
    return config.options_module(cloud).pool_args(pool, _published_pool(cloud, pool))
