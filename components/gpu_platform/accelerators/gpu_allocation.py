"""How pods get a pool's GPUs: the device plugin or Dynamic Resource Allocation, and the rules between the two.

``nodePools[].gpuAllocation`` (``GpuPoolSpec.gpu_allocation``): ``device-plugin`` advertises ``nvidia.com/gpu`` as an
extended resource; ``dra`` leaves the GPUs to NVIDIA's DRA driver, which publishes them as ``resource.k8s.io/v1``
devices that pods claim through ResourceClaims. A pool is one or the other, never both: DRA pools carry
``nvidia.com/gpu.deploy.device-plugin=false`` (no device plugin) and ``gpu-platform.io/gpu-allocation=dra`` (the
DRA driver's kubelet plugin selects it), device-plugin pools neither.

Every rule is a pure function returning ``(field, problem)`` or None, shared by the stack-file parser and the
components' argument checks so both refuse the same input with the same words.
"""

from typing import Optional

from .. import catalog
from ..pools import DEVICE_PLUGIN, DRA, GPU_ALLOCATION_MODES  # noqa: F401  (re-exported)
from ..versions import DRA_DRIVER, DRA_MIN_KUBERNETES

DEVICE_PLUGIN_SHARING = ("time-slicing", "mps", "hami")
"""Sharing modes configured through the device plugin (its sharing ConfigMap, or HAMi's plugin): meaningless on a
pool the device plugin never runs on."""

Problem = Optional[tuple[str, str]]
"""``(field, problem)`` of a refused input, the field relative to the pool (``gpuAllocation``, ``sharing.mode``)."""


def default_allocation(gpu_model: str, multi_node_nvlink: bool) -> str:
    """``dra`` where only DRA can use the GPUs (an NVLink domain across nodes), else ``device-plugin``."""
    return DRA if multi_node_nvlink and catalog.vendor_of(gpu_model).key == catalog.NVIDIA else DEVICE_PLUGIN


def allocation_problem(allocation: str, gpu_model: str, shape_name: str, nvlink_domain_gpus: int,
                       gpus_per_node: int) -> Problem:
    """Why a pool of this hardware cannot use ``allocation``, or None."""
    vendor = catalog.vendor_of(gpu_model)
    if allocation == DRA and vendor.key != catalog.NVIDIA:
        return ("gpuAllocation", f"dra is served by NVIDIA's DRA driver; {vendor.display_name} accelerators "
                                 f"('{shape_name}') are allocated by their device plugin")
    if allocation == DEVICE_PLUGIN and nvlink_domain_gpus > gpus_per_node > 0:
        return ("gpuAllocation", f"'{shape_name}' joins the GPUs of {nvlink_domain_gpus // gpus_per_node} nodes in "
                                 f"one {nvlink_domain_gpus}-GPU NVLink domain, which a job reaches only through DRA "
                                 "ComputeDomains; gpuAllocation must be dra")
    return None


def sharing_problem(allocation: str, mode: str, multi_node_nvlink: bool) -> Problem:
    """Why a DRA pool cannot share its GPUs this way, or None (device-plugin pools: the sharing rules of their own)."""
    if allocation != DRA:
        return None
    if mode in DEVICE_PLUGIN_SHARING:
        return ("sharing.mode", f"{mode} is a device-plugin sharing config, and a DRA pool (gpuAllocation: dra) runs "
                                "no device plugin; use exclusive or mig, or gpuAllocation: device-plugin")
    if mode == "mig" and multi_node_nvlink:
        return ("sharing.mode", "mig partitions GPUs that then cannot join the pool's multi-node NVLink domain "
                                "(ComputeDomains allocate whole GPUs); use exclusive")
    return None


def size_problem(allocation: str, cloud: str, min_nodes: int, max_nodes: int) -> Problem:
    """A DRA pool of a cloud has a fixed size: the platform's node autoscalers are not set up to add nodes for pending
    ResourceClaims (cluster-autoscaler's DRA support is behind a flag the platform leaves off; Karpenter 1.14.1 has
    none), so a claim would wait for ever on a pool at its minimum. An existing cluster's pools are not scaled by
    the platform."""
    if allocation == DRA and cloud != "existing" and min_nodes != max_nodes:
        return ("minNodes", f"a DRA pool has a fixed size (minNodes = maxNodes, got {min_nodes} and {max_nodes}): "
                            "the node autoscalers do not add nodes for pending ResourceClaims")
    return None


def kubernetes_problem(kubernetes_version: str) -> Optional[str]:
    """Why a cluster of this minor cannot run DRA pools, or None."""
    if _minor(kubernetes_version) < _minor(DRA_MIN_KUBERNETES):
        return (f"DRA needs Kubernetes >= {DRA_MIN_KUBERNETES} (resource.k8s.io/v1, which NVIDIA's DRA driver "
                f"{DRA_DRIVER.version} serves); kubernetesVersion is {kubernetes_version}")
    return None


def software_problem(gpu_software: str) -> Optional[str]:
    """Why DRA pools cannot run under this ``gpuSoftware``, or None."""
    if gpu_software != "operator":
        return (f"DRA pools need gpuSoftware 'operator' (got '{gpu_software}'): its GPU Feature Discovery labels "
                "their nodes (nvidia.com/gpu.clique) while its device plugin stays off them, which neither the "
                "device-plugin chart nor the cloud's own plugin can do")
    return None


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)
