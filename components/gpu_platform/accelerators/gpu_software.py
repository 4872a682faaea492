"""Which GPU software (the NVIDIA GPU Operator, NVIDIA's device plugin or the cloud's own) a stack runs, and the
sharing modes each can deliver per cloud: the rule the stack parser (``gpuSoftware``) and `NvidiaGpuStack`
(``gpu_software``) both apply.
"""

from typing import Optional

from ..config_model import NodePoolConfig
from ..errors import ConfigError, join
from . import gpu_allocation

GPU_SOFTWARE = ("operator", "device-plugin", "cloud-managed")
# What each cloud's own documentation recommends (DESIGN, research notes k8s_layer §1.1):
# EKS NVIDIA AMIs carry driver + toolkit but no device plugin; AKS likewise; GKE installs driver and plugin;
# OKE GPU images carry the driver and OKE runs its NVIDIA device plugin; bare clusters need the full operator.
DEFAULT_GPU_SOFTWARE = {
    "aws": "device-plugin",
    "azure": "device-plugin",
    "gcp": "cloud-managed",
    "oci": "cloud-managed",
    "existing": "operator",
}


def default_gpu_software(cloud: str, pools: list[NodePoolConfig]) -> str:
    """The cloud's recommended GPU software, or the GPU Operator when a pool's sharing needs what that cannot
    deliver (MIG partitioning outside AKS, time-slicing/MPS/HAMi with the cloud's own plugin outside GKE) or a pool
    is allocated through DRA (`gpu_allocation.software_problem`)."""
    if any(p.gpu_allocation == gpu_allocation.DRA for p in pools):
        return "operator"
    try:
        check_pool_software(cloud, DEFAULT_GPU_SOFTWARE[cloud], pools)
    except ConfigError:
        return "operator"
    return DEFAULT_GPU_SOFTWARE[cloud]


def check_pool_software(cloud: str, gpu_software: str, pools: list[NodePoolConfig]) -> None:
    """Sharing modes the chosen GPU software can actually deliver on this cloud."""
    if gpu_software == "device-plugin" and cloud == "gcp":
        # GKE installs its own device plugin with its driver; NVIDIA's chart has no GKE driver-root preset.
        raise ConfigError("gpuSoftware", "'device-plugin' is not supported on GKE, which runs its own device plugin; "
                                         "use 'cloud-managed' (GKE's) or 'operator'")
    first_hami: Optional[int] = None
    for i, pool in enumerate(pools):
        mode = pool.sharing.mode
        if mode == "hami" and gpu_software == "cloud-managed":
            raise ConfigError(join(join("nodePools", i), "sharing.mode"),
                              "hami replaces the NVIDIA device plugin on its pools, which gpuSoftware "
                              "'cloud-managed' leaves to the cloud; use 'operator' or 'device-plugin'")
        if mode == "hami" and first_hami is None:
            first_hami = i
        elif mode == "hami" and pool.sharing.replicas != pools[first_hami].sharing.replicas:
            # HAMi's deviceSplitCount is one chart-wide value.
            raise ConfigError(join(join("nodePools", i), "sharing.replicas"),
                              f"hami pools share GPUs one way cluster-wide (HAMi's deviceSplitCount): "
                              f"nodePools[{first_hami}] uses {pools[first_hami].sharing.replicas}, "
                              f"got {pool.sharing.replicas}")
        if gpu_software == "device-plugin" and mode == "mig" and cloud != "azure":
            raise ConfigError(join(join("nodePools", i), "sharing.mode"),
                              "mig with gpuSoftware 'device-plugin' needs GPUs the cloud partitions (AKS only); "
                              "use 'operator', whose MIG manager applies the pool's profile")
        if gpu_software == "cloud-managed" and mode in ("time-slicing", "mps") and cloud != "gcp":
            raise ConfigError(join(join("nodePools", i), "sharing.mode"),
                              f"{mode} with gpuSoftware 'cloud-managed' is only possible on GKE; "
                              "use gpuSoftware 'device-plugin' or 'operator'")
        if gpu_software == "cloud-managed" and mode == "mig" and cloud not in ("gcp", "azure"):
            raise ConfigError(join(join("nodePools", i), "sharing.mode"),
                              "mig with gpuSoftware 'cloud-managed' is only possible on GKE and AKS; use 'operator'")
