"""GPU sharing configs of the NVIDIA device plugin: one ConfigMap, one named config per shared pool.

The device plugin (standalone chart or GPU Operator) reads a ConfigMap in its own namespace whose keys are named
configs; each node picks one by its ``nvidia.com/device-plugin.config`` label, which the cloud layer sets to the
pool name on time-slicing and MPS pools (`labels.pool_node_labels`). Nodes without the label fall back to the
default config, which shares nothing: without an explicit default the plugin's ``single`` fallback would apply
a lone pool's time-slicing config to every GPU node in the cluster.

Neither the operator nor the plugin watches the ConfigMap, so `config_checksum` goes into a pod-template
annotation of the plugin: a changed config rolls the plugin pods.
"""

import hashlib
import json
from collections.abc import Sequence

import yaml

from .. import catalog, labels
from ..pools import GpuPool

GPU_RESOURCE = catalog.NVIDIA_GPU_RESOURCE
"""The NVIDIA device plugin's resource: only NVIDIA pools share their devices (`catalog.VENDORS` sharing modes)."""
CONFIG_MAP_NAME = "gpu-sharing-config"
"""Name of the ConfigMap of named device-plugin configs, in the NVIDIA stack's namespace."""
DEFAULT_CONFIG = "exclusive.default"
"""Key of the config nodes without the config label use. The dot keeps it apart from every pool name (DNS labels
have no dots)."""
CHECKSUM_ANNOTATION = "checksum/config"
"""Pod annotation carrying `config_checksum`; the device plugin chart's own name for it (its podAnnotations helper
only computes one itself for an embedded ConfigMap)."""
SHARING_KEYS = {"time-slicing": "timeSlicing", "mps": "mps"}
"""Sharing mode of a pool -> the key under ``sharing`` in the device plugin's config file (README § Shared Access)."""


def shared_pools(pools: Sequence[GpuPool]) -> list[GpuPool]:
    """NVIDIA pools whose GPUs the NVIDIA device plugin shares (time-slicing or MPS), in name order."""
    return sorted((p for p in pools if p.sharing.mode in SHARING_KEYS and p.vendor == catalog.NVIDIA),
                  key=lambda p: p.name)


def plugin_config(pool: GpuPool) -> dict:
    """The device plugin config (``version: v1``) that shares each GPU of ``pool`` ``replicas`` ways.

    ``failRequestsGreaterThanOne``: a replica is not a proportional share, so a pod asking for two replicas would
    get two slices of possibly the same GPU; the plugin rejects such pods instead of misleading them. The plugin
    forces it for MPS anyway (k8s-device-plugin v0.19.3 ``api/config/v1/config.go``); written for both so the
    config says what happens.
    """
    mode = pool.sharing.mode
    if mode not in SHARING_KEYS:
        raise ValueError(f"pool {pool.name}: {mode} is not a device-plugin sharing mode")
    body: dict = {"renameByDefault": False, "failRequestsGreaterThanOne": True}
    body["resources"] = [{"name": GPU_RESOURCE, "replicas": pool.sharing.replicas}]
    return {"version": "v1", "sharing": {SHARING_KEYS[mode]: body}}


def default_config() -> dict:
    """The config of every GPU node without a sharing label: whole GPUs, plugin defaults otherwise."""
    return {"version": "v1"}


def configmap_data(pools: Sequence[GpuPool]) -> dict[str, str]:
    """``data`` of the sharing ConfigMap: the default config plus one YAML config per shared pool.

    Empty when no pool shares GPUs through the device plugin (then no ConfigMap is created at all).
    """
    shared = shared_pools(pools)
    if not shared:
        return {}
    data = {DEFAULT_CONFIG: _yaml(default_config())}
    for pool in shared:
        data[pool.name] = _yaml(plugin_config(pool))
    return data


def config_checksum(data: dict[str, str]) -> str:
    """SHA-256 of the ConfigMap data (keys sorted), for the plugin's pod-template annotation."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def node_config_label(pool: GpuPool) -> str:
    """The config a pool's nodes select: the value of their ``nvidia.com/device-plugin.config`` label."""
    return pool.labels.get(labels.DEVICE_PLUGIN_CONFIG_LABEL, DEFAULT_CONFIG)


def _yaml(document: dict) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
