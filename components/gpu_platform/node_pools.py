"""The ``nodePools[]`` entry parser: one entry into a `NodePoolConfig` (hardware, sharing, taints, provisioning, GPU
allocation, upgrade settings), each cloud's own keys read by ``clouds/<cloud>/options.py``.

Below the stack parser (`config`, which composes it with the other sections) and the component contract
(`pool_spec` re-derives a `GpuPoolSpec` through it), so neither needs the other.
"""

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Optional

from . import catalog, labels, provisioning
from .accelerators import gpu_allocation
from .config_model import NodePoolConfig
from .errors import ConfigError, check_keys, join, one_of
from .fields import (
    as_mapping,
    read_bool,
    read_dns_label,
    read_enum,
    read_int,
    read_list,
    read_str,
    read_string_map,
)
from .pools import SHARING_MODES, Sharing
from .upgrades.pool_upgrade import parse_pool_upgrade

POOL_ROLES = ("general", "inference", "training")


def parse_taint(value: Any, path: str) -> labels.Taint:
    """A taint from ``key=value:Effect`` or ``{key, value, effect}``."""
    if isinstance(value, str):
        match = re.fullmatch(r"([^=:\s]+)(?:=([^:\s]*))?:(\w+)", value)
        if not match:
            raise ConfigError(path, f"'{value}' is not a taint of the form key=value:Effect")
        key, val, effect = match.group(1), match.group(2) or "", match.group(3)
    else:
        raw = as_mapping(value, path)
        check_keys(raw, {"key", "value", "effect"}, path)
        key = read_str(raw, "key", path, required=True)
        val = read_str(raw, "value", path, "")
        effect = read_str(raw, "effect", path, "NoSchedule")
    if effect not in labels.TAINT_EFFECTS:
        raise ConfigError(path, f"taint effect {one_of(effect, labels.TAINT_EFFECTS)}")
    return labels.Taint(key, val, effect)


def parse_sharing(raw_pool: Mapping, path: str, gpu: Optional[catalog.GpuModel], shape_name: str) -> Sharing:
    if "sharing" not in raw_pool or raw_pool["sharing"] is None:
        return Sharing()
    spath = join(path, "sharing")
    raw = as_mapping(raw_pool["sharing"], spath)
    check_keys(raw, {"mode", "replicas", "profile"}, spath)
    mode = read_enum(raw, "mode", spath, SHARING_MODES, "exclusive")
    vendor = gpu.accelerator if gpu is not None else None
    if vendor is not None and mode not in vendor.sharing_modes:
        raise ConfigError(join(spath, "mode"), f"{vendor.display_name} accelerators ({gpu.display_name} on "
                                               f"'{shape_name}') support sharing mode "
                                               f"{', '.join(vendor.sharing_modes)} only, got '{mode}'")
    if mode in ("time-slicing", "mps", "hami"):
        replicas = read_int(raw, "replicas", spath, required=True)
        if replicas < 2:
            raise ConfigError(join(spath, "replicas"), f"{mode} needs at least 2 replicas per GPU, got {replicas}")
        if "profile" in raw:
            raise ConfigError(join(spath, "profile"), f"a MIG profile does not apply to {mode}")
        return Sharing(mode, replicas)
    if mode == "mig":
        model = gpu.display_name if gpu else "this GPU"
        if gpu is None or not gpu.mig_capable:
            raise ConfigError(join(spath, "mode"), f"mig needs a MIG-capable GPU; {model} on '{shape_name}' has no MIG")
        profile = read_str(raw, "profile", spath, required=True)
        if profile not in gpu.mig_profiles:
            raise ConfigError(join(spath, "profile"),
                              f"{gpu.display_name} MIG profile {one_of(profile, gpu.mig_profiles)}")
        if "replicas" in raw:
            raise ConfigError(join(spath, "replicas"), "replicas applies to time-slicing and mps only")
        return Sharing("mig", 1, profile)
    if "replicas" in raw or "profile" in raw:
        raise ConfigError(spath, "exclusive GPUs take no replicas or profile")
    return Sharing()


POOL_KEYS = {
    "name", "instanceType", "minNodes", "maxNodes", "desiredNodes", "rdma", "spot", "sharing", "role",
    "labels", "taints", "zones", "gpuModel", "gpusPerNode", "accelerator", "gpuAllocation", "provisioning",
    "reservation", "fallbackPool", "upgrade",
}


def _pool_hardware(raw: Mapping, path: str, cloud: str) -> tuple[str, Optional[catalog.MachineShape], str, int, str]:
    """(instance type, catalog shape, GPU model key, GPUs per node, GCP accelerator) of a pool."""
    if cloud == "existing":
        instance_type = read_str(raw, "instanceType", path, "")
        gpu_model = read_enum(raw, "gpuModel", path, tuple(catalog.GPU_MODELS), required=True)
        gpus = read_int(raw, "gpusPerNode", path, minimum=1, required=True)
        return instance_type, None, gpu_model, gpus, ""
    instance_type = read_str(raw, "instanceType", path, required=True)
    try:
        shape = catalog.find_shape(cloud, instance_type)
    except catalog.UnknownShapeError as err:
        raise ConfigError(join(path, "instanceType"), str(err)) from None
    for key in ("gpuModel", "gpusPerNode"):
        if key in raw:
            raise ConfigError(join(path, key), f"is derived from instanceType '{instance_type}'; remove it")
    if not shape.attachable_accelerators:
        if "accelerator" in raw:
            raise ConfigError(join(path, "accelerator"),
                              f"'{instance_type}' carries its own GPUs; accelerator is only for GCP N1 machine types")
        return instance_type, shape, shape.gpu_model, shape.gpu_count, shape.accelerator_type or ""
    accelerator = read_enum(raw, "accelerator", path, shape.attachable_accelerators, required=True)
    model, counts = catalog.GCP_ATTACHABLE[accelerator]
    count = read_int(raw, "gpuCount", path, 1) if "gpuCount" in raw else 1
    if count not in counts:
        raise ConfigError(join(path, "gpuCount"), f"{accelerator} attaches {counts} GPUs per VM, not {count}")
    return instance_type, shape, model, count, accelerator


def parse_node_pool(raw_value: Any, path: str, cloud: str, options_module: Any) -> NodePoolConfig:
    raw = as_mapping(raw_value, path)
    extra_keys = set(getattr(options_module, "POOL_KEYS", set()))
    allowed = POOL_KEYS | extra_keys | ({"gpuCount"} if cloud == "gcp" else set())
    name = read_dns_label(raw, "name", path)
    for old_key, new_keys in getattr(options_module, "RENAMED_POOL_KEYS", {}).items():
        if old_key in raw:  # before the unknown-key check, so an old key names the keys that replaced it
            raise ConfigError(join(path, old_key), f"replaced by {new_keys}")
    check_keys(raw, allowed, path)
    instance_type, shape, gpu_model, gpus, accelerator = _pool_hardware(raw, path, cloud)
    gpu = catalog.GPU_MODELS.get(gpu_model)
    min_nodes = read_int(raw, "minNodes", path, 0, minimum=0)
    max_nodes = read_int(raw, "maxNodes", path, max(1, min_nodes))
    if max_nodes < 1:
        raise ConfigError(join(path, "maxNodes"), f"must be >= 1, got {max_nodes}")
    if min_nodes > max_nodes:
        raise ConfigError(join(path, "minNodes"), f"minNodes ({min_nodes}) is greater than maxNodes ({max_nodes})")
    desired = read_int(raw, "desiredNodes", path, None, minimum=0)
    if desired is not None and not min_nodes <= desired <= max_nodes:
        raise ConfigError(join(path, "desiredNodes"),
                          f"must be between minNodes ({min_nodes}) and maxNodes ({max_nodes})")
    mode = _pool_provisioning(raw, path, cloud)
    rdma = read_bool(raw, "rdma", path)
    if rdma and cloud != "existing" and not (shape and shape.rdma_capable):
        raise ConfigError(join(path, "rdma"), f"'{instance_type}' has no RDMA fabric; "
                                              f"RDMA-capable {catalog.CLOUD_NAMES[cloud]} shapes: "
                                              + ", ".join(s.name for s in catalog.shapes_of(cloud)
                                                          if s.rdma_capable and s.gpu_count >= 8))
    pool = NodePoolConfig(
        name=name,
        instance_type=instance_type,
        min_nodes=min_nodes,
        max_nodes=max_nodes,
        desired_nodes=desired,
        rdma=rdma,
        spot=mode == provisioning.SPOT,
        provisioning=mode,
        reservation=read_str(raw, "reservation", path, ""),
        fallback_pool=read_str(raw, "fallbackPool", path, ""),
        sharing=parse_sharing(raw, path, gpu, instance_type or gpu_model),
        role=read_enum(raw, "role", path, POOL_ROLES, "general"),
        labels=tuple(sorted(read_string_map(raw, "labels", path).items())),
        taints=tuple(parse_taint(t, join(join(path, "taints"), i))
                     for i, t in enumerate(read_list(raw, "taints", path))),
        zones=tuple(str(z) for z in read_list(raw, "zones", path)),
        gpu_model=gpu_model,
        gpus_per_node=gpus,
        accelerator=accelerator,
        upgrade=parse_pool_upgrade(raw.get("upgrade"), join(path, "upgrade")),
    )
    for key, _ in pool.labels:
        if key.startswith(labels.DOMAIN + "/"):
            raise ConfigError(join(join(path, "labels"), key), f"keys under {labels.DOMAIN}/ are set by the platform")
    parse_pool = getattr(options_module, "parse_pool_options", None)
    if parse_pool is not None:
        pool = replace(pool, cloud_options=parse_pool(raw, path, pool, shape))
    return _with_allocation(raw, path, pool, shape, cloud)


def _pool_provisioning(raw: Mapping, path: str, cloud: str) -> str:
    """``provisioning`` of a pool (``spot: true`` is ``spot``), checked against the cloud and ``reservation``."""
    spot = read_bool(raw, "spot", path) if raw.get("spot") is not None else None
    given = read_enum(raw, "provisioning", path, provisioning.PROVISIONING_MODES, None)
    mode = given or (provisioning.SPOT if spot else provisioning.ON_DEMAND)
    reservation = read_str(raw, "reservation", path, "")
    for problem in (provisioning.spot_alias_problem(spot, given), provisioning.mode_problem(cloud, mode),
                    provisioning.reservation_problem(mode, reservation)):
        if problem is not None:
            raise ConfigError(join(path, problem[0]), problem[1])
    return mode




def _with_allocation(raw: Mapping, path: str, pool: NodePoolConfig, shape: Optional[catalog.MachineShape],
                     cloud: str) -> NodePoolConfig:
    """The pool with its ``gpuAllocation`` (default from the hardware), checked against the pool's hardware, sharing
    and size (`gpu_allocation`). A DRA pool without ``minNodes`` is fixed at ``maxNodes``."""
    nvlink = shape.nvlink_domain_gpus if shape else getattr(pool.cloud_options, "nvlink_domain_gpus", 0)
    multi_node = nvlink > pool.gpus_per_node > 0
    allocation = read_enum(raw, "gpuAllocation", path, gpu_allocation.GPU_ALLOCATION_MODES,
                           gpu_allocation.default_allocation(pool.gpu_model, multi_node))
    for problem in (
        gpu_allocation.allocation_problem(allocation, pool.gpu_model, pool.instance_type or pool.gpu_model, nvlink,
                                          pool.gpus_per_node),
        gpu_allocation.sharing_problem(allocation, pool.sharing.mode, multi_node),
    ):
        if problem is not None:
            raise ConfigError(join(path, problem[0]), problem[1])
    if allocation != gpu_allocation.DRA:
        return replace(pool, gpu_allocation=allocation)
    min_nodes = pool.min_nodes if "minNodes" in raw else pool.max_nodes
    problem = gpu_allocation.size_problem(allocation, cloud, min_nodes, pool.max_nodes)
    if problem is not None:
        raise ConfigError(join(path, problem[0]), problem[1])
    desired = pool.desired_nodes if pool.desired_nodes is None else max(pool.desired_nodes, min_nodes)
    return replace(pool, gpu_allocation=allocation, min_nodes=min_nodes, desired_nodes=desired)
