"""``teams[]`` and ``scheduling``: the stack sections of scheduling and tenancy (parsed with `fields`).

`parse_team` reads one ``teams`` entry (its quotas checked against the resources the stack's node pools advertise),
`parse_scheduling` the ``scheduling`` section, and `check_scheduling` the limits the scheduling layer inherits from
Kueue's API once the whole configuration is parsed. The dataclasses (`TeamConfig`, `SchedulingConfig`) stay in
`config_model`; `config` composes these parsers and re-exports them.
"""

from collections.abc import Mapping
from typing import Any, Optional

from .. import catalog
from ..config_model import PlatformConfig, SchedulingConfig, TeamConfig, accelerator_devices
from ..errors import ConfigError, check_keys, did_you_mean, join
from ..fields import as_mapping, read_bool, read_dns_label, read_enum, read_int, read_str
from ..fields import section as _section
from ..security.namespace_security import LEVELS as POD_SECURITY_LEVELS
from . import priorities
from .kueue_objects import MAX_POOL_TAINTS


def parse_quotas(raw: Mapping, path: str, advertised: tuple[str, ...]) -> dict[str, int]:
    """``teams[].quotas``: ``{<resource>: <count>}``, each a resource a pool advertises, counts integers >= 0."""
    if raw.get("quotas") is None:
        return {}
    qpath = join(path, "quotas")
    quotas = {}
    for resource, _ in as_mapping(raw["quotas"], qpath).items():
        at = join(qpath, str(resource))
        if resource not in advertised:
            raise ConfigError(at, f"no node pool advertises '{resource}' (the pools advertise "
                                  f"{', '.join(advertised)}){did_you_mean(str(resource), advertised)}")
        if resource == catalog.NVIDIA_GPU_RESOURCE and raw.get("gpuQuota") is not None:
            raise ConfigError(at, f"duplicates gpuQuota, the team's {resource} quota; give one of them")
        quotas[str(resource)] = read_int(raw["quotas"], resource, qpath, minimum=0, required=True)
    return quotas


def parse_team(raw_value: Any, path: str,
               advertised: tuple[str, ...] = (catalog.NVIDIA_GPU_RESOURCE,)) -> TeamConfig:
    """One ``teams`` entry; ``advertised``: the accelerator resources the stack's node pools advertise."""
    raw = as_mapping(raw_value, path)
    check_keys(raw, {"name", "gpuQuota", "cpuQuota", "memoryQuotaGi", "group", "borrowingLimit", "lendingLimit",
                     "podSecurity", "quotas", "storageQuota"}, path)
    name = read_dns_label(raw, "name", path)
    quotas = parse_quotas(raw, path, advertised)
    # `quotas: {nvidia.com/gpu: n}` is gpuQuota spelled the other way: one field holds it.
    gpu_quota = quotas.pop(catalog.NVIDIA_GPU_RESOURCE, None)
    if gpu_quota is None:
        gpu_quota = read_int(raw, "gpuQuota", path, 0, minimum=0)
    if gpu_quota and catalog.NVIDIA_GPU_RESOURCE not in advertised:
        raise ConfigError(join(path, "gpuQuota"), f"counts {catalog.NVIDIA_GPU_RESOURCE}, which no node pool "
                                                  f"advertises (the pools advertise {', '.join(advertised)}); "
                                                  "give the team quotas of those")
    lending = read_int(raw, "lendingLimit", path, None, minimum=0)
    if lending is not None and lending > gpu_quota:
        raise ConfigError(join(path, "lendingLimit"), f"cannot exceed gpuQuota ({gpu_quota}), got {lending}")
    devices = accelerator_devices(gpu_quota, quotas)
    return TeamConfig(
        name=name,
        gpu_quota=gpu_quota,
        cpu_quota=read_int(raw, "cpuQuota", path, max(4, 8 * devices), minimum=0),
        memory_quota_gib=read_int(raw, "memoryQuotaGi", path, max(16, 64 * devices), minimum=0),
        group=read_str(raw, "group", path, name),
        borrowing_limit=read_int(raw, "borrowingLimit", path, None, minimum=0),
        lending_limit=lending,
        pod_security=read_enum(raw, "podSecurity", path, POD_SECURITY_LEVELS, "baseline"),
        quotas=tuple(sorted(quotas.items())),
        storage_quota=_storage_quota(raw, path),
    )


def _storage_quota(raw: Mapping, path: str) -> Optional[str]:
    """``teams[].storageQuota`` checked (`storage_config.parse_storage_quota`), as given."""
    from ..storage.storage_config import parse_storage_quota

    value = read_str(raw, "storageQuota", path, None)
    parse_storage_quota(value, join(path, "storageQuota"))
    return value


def parse_scheduling(raw: Mapping) -> SchedulingConfig:
    sec, path = _section(raw, "scheduling"), "scheduling"
    check_keys(sec, {"kueue", "perGpuPriorityClasses", "defaultPriorityClass"}, path)
    return SchedulingConfig(
        kueue=read_bool(sec, "kueue", path, True),
        per_gpu_priority_classes=read_bool(sec, "perGpuPriorityClasses", path, False),
        default_priority_class=read_enum(sec, "defaultPriorityClass", path, tuple(t.name for t in priorities.TIERS)),
    )


def check_scheduling(config: PlatformConfig) -> None:
    """Limits the scheduling layer inherits from Kueue's API."""
    if not config.scheduling.kueue:
        return
    for i, pool in enumerate(config.gpu_pools()):
        if len(pool.taints) > MAX_POOL_TAINTS:
            raise ConfigError(join(join("nodePools", i), "taints"),
                              f"the pool's nodes would carry {len(pool.taints)} taints (the GPU taint included); "
                              f"a Kueue flavor tolerates at most {MAX_POOL_TAINTS}")
