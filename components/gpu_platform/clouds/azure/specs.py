"""What AKS receives for a GPU pool and for the cluster: pure decisions, plain dicts, no SDK import.

Property names are the ``pulumi_azure_native.containerservice`` 3.29.0 keyword arguments (API 2025-09-01):
``AgentPool(vm_size, node_taints, node_labels, enable_auto_scaling, min_count, max_count, scale_set_priority,
scale_set_eviction_policy, spot_max_price, gpu_profile, gpu_instance_profile, os_sku, ...)`` and
``ManagedCluster(agent_pool_profiles, network_profile, oidc_issuer_profile, security_profile, ...)``; enum
values are the SDK's (``GPUDriver``: ``Install``/``None``; ``GPUInstanceProfile``: ``MIG1g``...``MIG7g``).
"""

import dataclasses
from collections.abc import Sequence
from typing import Any, Optional

from ... import catalog, labels
from ...pools import GpuPool
from .names import SYSTEM_POOL_NAME

GPU_DRIVER_INSTALL = "Install"
GPU_DRIVER_NONE = "None"
GPU_INSTANCE_PROFILES = ("MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g")
"""The SDK's ``GPUInstanceProfile`` enum: AKS partitions every GPU of the pool into one profile size."""
SPOT_PRIORITY = "Spot"
REGULAR_PRIORITY = "Regular"
DEFAULT_SPOT_MAX_PRICE = -1.0
"""-1: pay up to the on-demand price; nodes are never evicted for price (AKS spot docs)."""
DEFAULT_EVICTION_POLICY = "Delete"
EVICTION_POLICIES = ("Delete", "Deallocate")
LINUX_OS_SKUS = ("Ubuntu", "Ubuntu2204", "AzureLinux", "AzureLinux3")
"""The SDK's Linux ``OSSKU`` values (``CBLMariner`` is deprecated in favour of ``AzureLinux``)."""
SKU_TIERS = ("Free", "Standard", "Premium")


def gpu_driver(gpu_software: str) -> str:
    """``gpuProfile.driver``: ``None`` when the GPU Operator owns the driver, else AKS installs it.

    AKS applies it when nodes are created only: changing it leaves existing nodes as they are (AKS docs,
    ``nvidia-gpu-operator.md``), so `AksGpuNodePool` replaces the pool when it changes.
    """
    return GPU_DRIVER_NONE if gpu_software == "operator" else GPU_DRIVER_INSTALL


def aks_mig_profiles(gpu_model: str) -> dict[str, str]:
    """MIG profile -> ``gpuInstanceProfile`` for the profiles AKS itself can apply on this GPU.

    ``MIG<n>g`` is the ``<n>g`` slice with its standard memory share: the first ``<n>g.*`` profile NVIDIA lists
    for the GPU (on ``Standard_ND96asr_v4``: MIG1g = 1g.5gb ... MIG7g = 7g.40gb, AKS ``gpu-multi-instance.md``).
    Double-memory variants (``1g.20gb`` on H100) have no ``gpuInstanceProfile``; the GPU Operator's MIG manager
    can apply them instead.
    """
    gpu = catalog.GPU_MODELS.get(gpu_model)
    mapping: dict[str, str] = {}
    for profile in gpu.mig_profiles if gpu else ():
        instance_profile = f"MIG{profile.split('g.', 1)[0]}g"
        if instance_profile in GPU_INSTANCE_PROFILES and instance_profile not in mapping.values():
            mapping[profile] = instance_profile
    return mapping


def gpu_instance_profile(pool: GpuPool, driver: str) -> Optional[str]:
    """``gpuInstanceProfile`` of a MIG pool when AKS owns the driver; None otherwise.

    With ``driver: None`` there is no AKS driver to partition the GPUs at node creation: the GPU Operator's MIG
    manager applies the pool's ``nvidia.com/mig.config`` label instead.
    """
    if pool.sharing.mode != "mig" or driver != GPU_DRIVER_INSTALL or not pool.sharing.mig_profile:
        return None
    profile = aks_mig_profiles(pool.gpu_model).get(pool.sharing.mig_profile)
    if profile is None:
        raise ValueError(f"AKS has no gpuInstanceProfile for MIG {pool.sharing.mig_profile} on {pool.gpu_model}")
    return profile


def aks_pool(pool: GpuPool) -> GpuPool:
    """The pool as AKS runs it: a spot pool carries AKS's spot taint, so every workload toleration includes it."""
    if pool.spot and labels.AKS_SPOT_TAINT not in pool.taints:
        return dataclasses.replace(pool, extra_taints=(*pool.extra_taints, labels.AKS_SPOT_TAINT))
    return pool


def node_taints(pool: GpuPool) -> list[str]:
    """``node_taints``: the GPU taint, the user's taints, and on spot pools AKS's own spot taint.

    AKS adds ``kubernetes.azure.com/scalesetpriority=spot:NoSchedule`` to every spot pool and reports it back in
    the pool's ``nodeTaints`` (``az aks nodepool show`` in AKS ``spot-node-pool.md``). Sending it too keeps what
    we send equal to what AKS stores: an update without it reads as removing a system taint, which AKS refused
    (``Changing property 'properties.nodeTaints' is not allowed``, pulumi/pulumi-azure-native#959) and which
    made other tools re-apply forever (kubernetes-sigs/cluster-api-provider-azure#3976).
    """
    return [t.as_string() for t in aks_pool(pool).taints]


def agent_pool_properties(
    pool: GpuPool,
    *,
    agent_pool_name: str,
    os_sku: str = "Ubuntu",
    driver: str = GPU_DRIVER_INSTALL,
    spot_max_price: Optional[float] = None,
    spot_eviction_policy: Optional[str] = None,
    zones: Sequence[str] = (),
    os_disk_size_gb: Optional[int] = None,
    initial_nodes: Optional[int] = None,
) -> dict[str, Any]:
    """The ``AgentPool`` arguments of a GPU pool (plain values; cluster, group and subnet are added by the caller).

    Autoscaled between the pool's min and max (the AKS cluster autoscaler), tainted and labelled from the
    `GpuPool`, spot settings only on spot pools (AKS rejects an eviction policy on regular pools).
    """
    count = pool.min_nodes if initial_nodes is None else initial_nodes
    props: dict[str, Any] = {
        "agent_pool_name": agent_pool_name,
        "mode": "User",
        "type": "VirtualMachineScaleSets",
        "os_type": "Linux",
        "os_sku": os_sku,
        "vm_size": pool.instance_type,
        "count": count,
        "enable_auto_scaling": True,
        "min_count": pool.min_nodes,
        "max_count": pool.max_nodes,
        "node_taints": node_taints(pool),
        "node_labels": dict(sorted(pool.labels.items())),
        "gpu_profile": {"driver": driver},
        "scale_set_priority": SPOT_PRIORITY if pool.spot else REGULAR_PRIORITY,
    }
    if pool.spot:
        props["scale_set_eviction_policy"] = spot_eviction_policy or DEFAULT_EVICTION_POLICY
        props["spot_max_price"] = DEFAULT_SPOT_MAX_PRICE if spot_max_price is None else spot_max_price
    elif spot_max_price is not None or spot_eviction_policy is not None:
        raise ValueError(f"pool {pool.name}: spot max price and eviction policy apply to spot pools only")
    mig = gpu_instance_profile(pool, driver)
    if mig:
        props["gpu_instance_profile"] = mig
    if zones:
        props["availability_zones"] = list(zones)
    if os_disk_size_gb is not None:
        props["os_disk_size_gb"] = os_disk_size_gb
    return props


def system_pool_profile(vm_size: str, min_nodes: int, max_nodes: int, os_sku: str) -> dict[str, Any]:
    """The cluster's System pool (``ManagedClusterAgentPoolProfile``): untainted, so the platform's own services
    (monitoring, Kueue, operators' controllers) run here while GPU nodes stay tainted for GPU work."""
    return {
        "name": SYSTEM_POOL_NAME,
        "mode": "System",
        "type": "VirtualMachineScaleSets",
        "os_type": "Linux",
        "os_sku": os_sku,
        "vm_size": vm_size,
        "count": min_nodes,
        "enable_auto_scaling": True,
        "min_count": min_nodes,
        "max_count": max_nodes,
    }


def network_profile(pod_cidr: str, service_cidr: str, dns_service_ip: str) -> dict[str, Any]:
    """Azure CNI overlay: nodes take subnet IPs, pods take IPs from ``pod_cidr`` outside the VNet.

    The Standard load balancer is what spot node pools require (AKS ``spot-node-pool.md``).
    """
    return {
        "network_plugin": "azure",
        "network_plugin_mode": "overlay",
        "pod_cidr": pod_cidr,
        "service_cidr": service_cidr,
        "dns_service_ip": dns_service_ip,
        "load_balancer_sku": "standard",
    }


def cluster_identity_profiles(identity_id: Any) -> dict[str, Any]:
    """A user-assigned control-plane identity, the OIDC issuer and workload identity (pods get Azure tokens
    through federated credentials)."""
    return {
        "identity": {"type": "UserAssigned", "user_assigned_identities": [identity_id]},
        "oidc_issuer_profile": {"enabled": True},
        "security_profile": {"workload_identity": {"enabled": True}},
        "enable_rbac": True,
    }
