"""What AKS receives for a GPU pool and for the cluster: pure decisions, plain dicts, no SDK import.

Property names are the ``pulumi_azure_native.containerservice`` 3.29.0 keyword arguments (API 2025-09-01):
``AgentPool(vm_size, node_taints, node_labels, enable_auto_scaling, min_count, max_count, scale_set_priority,
scale_set_eviction_policy, spot_max_price, gpu_profile, gpu_instance_profile, os_sku, ...)`` and
``ManagedCluster(agent_pool_profiles, network_profile, oidc_issuer_profile, security_profile, aad_profile,
disable_local_accounts, api_server_access_profile, ...)``; enum values are the SDK's (``GPUDriver``:
``Install``/``None``; ``GPUInstanceProfile``: ``MIG1g``...``MIG7g``; ``NetworkDataplane``/``NetworkPolicy``:
``cilium``; ``KeyVaultNetworkAccessTypes``: ``Public``).
"""

import dataclasses
import re
from collections.abc import Sequence
from typing import Any, Optional

from ... import catalog, labels
from ...pools import GpuPool
from ...provisioning import RESERVATION
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
NETWORK_PLUGIN = "azure"
NETWORK_PLUGIN_MODE = "overlay"
NETWORK_DATAPLANE = "cilium"
NETWORK_POLICY = "cilium"
"""Azure CNI Powered by Cilium (SDK enums ``NetworkPlugin``, ``NetworkPluginMode``, ``NetworkDataplane``,
``NetworkPolicy``); see `network_profile`."""
KEY_VAULT_NETWORK_ACCESS = "Public"
"""The SDK's ``KeyVaultNetworkAccessTypes.PUBLIC``; see `kms_profile`."""
LOAD_BALANCER_ONLY_RANGE = "0.0.0.0/32"


def gpu_driver(gpu_software: str) -> str:
    """``gpuProfile.driver``: ``None`` when the GPU Operator owns the driver, else AKS installs it.

    AKS applies it when nodes are created only: changing it leaves existing nodes as they are (AKS docs,
    ``nvidia-gpu-operator.md``), so `AksGpuNodePool` replaces the pool when it changes.
    """
    return GPU_DRIVER_NONE if gpu_software == "operator" else GPU_DRIVER_INSTALL


def aks_lists_gpu_size(architecture: str) -> bool:
    """Whether AKS's own GPU software (``gpuProfile.driver: Install``) covers a GPU size of this CPU architecture.

    The arm64 NVIDIA sizes are the Grace-Blackwell racks (``Standard_ND128isr_NDR_GB200_v6``,
    ``Standard_ND128isr_GB300_v6``), which AKS's documentation does not list at all (MicrosoftDocs/azure-aks-docs as of
    2026-08-21 never names GB200 or GB300). AKS ``use-nvidia-gpu.md``: "If a GPU VM size is not in our list of
    supported VM sizes, AKS does not install the necessary GPU software components or provide support. AKS allows
    the use of unsupported GPU VM sizes after skipping the automatic GPU driver installation." So those pools are
    created with ``gpuProfile.driver: None`` (the GPU Operator's driver); AKS accepts any VM size string in
    ``vmSize``, so the pool itself is creatable.
    """
    return architecture != catalog.ARM64


GB_OS_SKUS = ("Ubuntu",)
"""OS SKUs that can run the arm64 Grace-Blackwell nodes: AKS builds their node image on Ubuntu 24.04 arm64 only
(Azure/AgentBaker ``aks-ubuntu-arm64-gb200-containerd-24.04-gen2``; its VHD build: "NVIDIA GB setup is only
supported on arm64 Ubuntu 24.04"). ``Ubuntu2204`` is 22.04, and Azure Linux has no such image (Azure Container
Linux, AKS ``azure-container-linux-overview.md``, "doesn't support ARM64 architectures for GPU-enabled node pools").
``Ubuntu`` resolves to 24.04 from Kubernetes 1.35 (AKS ``upgrade-os-version.md``); which image AKS picks for these
sizes on 1.34 is not documented."""


def gb_os_sku_problem(architecture: str, vm_size: str, os_sku: str) -> Optional[str]:
    """Why ``os_sku`` cannot run a pool of this architecture and size, or None."""
    if architecture != catalog.ARM64 or os_sku in GB_OS_SKUS:
        return None
    return (f"'{os_sku}' cannot run the arm64 Grace-Blackwell nodes of {vm_size}: AKS builds their node image on "
            "Ubuntu 24.04 arm64 only (Azure/AgentBaker); use Ubuntu")


def default_gpu_driver(pool: GpuPool) -> str:
    """An `AksGpuNodePool`'s ``gpuProfile.driver`` when none is given: ``None`` on AMD pools (AKS enforces it at
    their creation and installs no AMD driver, AKS ``use-amd-gpus.md``) and on sizes AKS's GPU software does not
    cover (`aks_lists_gpu_size`), else ``Install``."""
    if pool.vendor == catalog.AMD or not aks_lists_gpu_size(pool.architecture):
        return GPU_DRIVER_NONE
    return GPU_DRIVER_INSTALL


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


CAPACITY_RESERVATION_GROUP_ID = re.compile(
    r"^(/subscriptions/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/resourceGroups/[-\w._()]{1,90})"
    r"/providers/Microsoft\.Compute/capacityReservationGroups/[-\w._]{1,80}$", re.IGNORECASE)
"""An Azure capacity reservation group's resource id (Azure resource ids are case-insensitive)."""
CONTRIBUTOR_ROLE = "b24988ac-6180-42a0-ab88-20f7382dd24c"
"""Built-in role "Contributor": what AKS asks of the cluster's user-assigned identity on the capacity reservation
group's resource group before a pool may use the group (AKS ``use-capacity-reservation-groups.md``; a
system-assigned identity does not work)."""


def capacity_reservation_group_problem(value: str) -> Optional[str]:
    """Why ``value`` is not a capacity reservation group resource id, or None."""
    if CAPACITY_RESERVATION_GROUP_ID.match(value):
        return None
    return (f"'{value}' is not a capacity reservation group id such as /subscriptions/<subscription id>/"
            "resourceGroups/<group>/providers/Microsoft.Compute/capacityReservationGroups/<name>")


def capacity_reservation_group_scope(value: str) -> str:
    """The resource group id (``/subscriptions/.../resourceGroups/<group>``) of a capacity reservation group id: where
    the cluster identity needs Contributor."""
    found = CAPACITY_RESERVATION_GROUP_ID.match(value)
    if found is None:
        raise ValueError(capacity_reservation_group_problem(value))
    return found.group(1)


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
    `GpuPool`, spot settings only on spot pools (AKS rejects an eviction policy on regular pools), and on reservation
    pools the capacity reservation group (``capacity_reservation_group_id``: AKS associates the pool's scale set with
    the group; attaching it to an existing pool reimages the nodes).
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
    if pool.provisioning == RESERVATION:
        props["capacity_reservation_group_id"] = pool.reservation
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
    """Azure CNI overlay powered by Cilium: nodes take subnet IPs, pods take IPs from ``pod_cidr`` outside the
    VNet, and Cilium's eBPF dataplane enforces Kubernetes NetworkPolicies.

    Without ``network_policy`` AKS enforces no NetworkPolicy at all (the SDK's ``NetworkPolicy.NONE`` is the
    default), so the platform's tenant isolation would be decorative. Cilium is the engine Microsoft manages and
    supports in AKS ("Azure CNI Powered by Cilium", learn.microsoft.com/azure/aks/azure-cni-powered-by-cilium: no
    separate policy engine needed); the alternative, Azure Network Policy Manager, is being retired: AKS ends NPM
    support on Linux nodes on 30 September 2028 (Windows: 30 September 2026) and asks clusters to migrate to Cilium
    Network Policy (MicrosoftDocs/azure-aks-docs ``includes/azure-network-policy-manager-linux-retirement.md``,
    Azure update 500268). ``network_policy: cilium`` requires
    ``network_dataplane: cilium`` (the SDK's ``NetworkPolicy.CILIUM`` docstring). The overlay pod range is unchanged
    (Cilium assigns pod IPs from ``pod_cidr`` in overlay mode), and InfiniBand NICs are outside the CNI: the RDMA
    shared device plugin hands them to pods as host devices (Azure/aks-rdma-infiniband), so RDMA traffic neither
    needs nor passes through the eBPF dataplane.

    The Standard load balancer is what spot node pools and API server authorized IP ranges require (AKS
    ``spot-node-pool.md``, ``api-server-authorized-ip-ranges.md``).
    """
    return {
        "network_plugin": NETWORK_PLUGIN,
        "network_plugin_mode": NETWORK_PLUGIN_MODE,
        "network_dataplane": NETWORK_DATAPLANE,
        "network_policy": NETWORK_POLICY,
        "pod_cidr": pod_cidr,
        "service_cidr": service_cidr,
        "dns_service_ip": dns_service_ip,
        "load_balancer_sku": "standard",
    }


def cluster_identity_profiles(identity_id: Any, kms: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """A user-assigned control-plane identity, the OIDC issuer and workload identity (pods get Azure tokens
    through federated credentials), and with ``kms`` (`kms_profile`) envelope encryption of Secrets.

    The identity is user-assigned because AKS KMS does not work with a system-assigned one: the key vault role must
    exist before the cluster does (AKS ``use-kms-etcd-encryption.md``, Limitations).
    """
    security: dict[str, Any] = {"workload_identity": {"enabled": True}}
    if kms is not None:
        security["azure_key_vault_kms"] = kms
    return {
        "identity": {"type": "UserAssigned", "user_assigned_identities": [identity_id]},
        "oidc_issuer_profile": {"enabled": True},
        "security_profile": security,
        "enable_rbac": True,
    }


def kms_profile(key_id: Any) -> dict[str, Any]:
    """``security_profile.azure_key_vault_kms``: Secrets in etcd envelope-encrypted with the platform's key.

    ``key_id`` must be a versioned key identifier (``https://<vault>.vault.azure.net/keys/<key>/<version>``): the
    KMS plugin refuses a key without a version (Azure/kubernetes-kms ``pkg/plugin/keyvault.go``: "key vault name,
    key name and key version are required"). The vault is ``Public`` (reachable over the Azure backbone, guarded by
    Entra RBAC): a ``Private`` vault needs API Server VNet Integration, and a vault firewall limited to some networks
    is not supported at all (AKS ``use-kms-etcd-encryption.md``); with ``Public`` AKS wants no
    ``key_vault_resource_id``.
    """
    return {"enabled": True, "key_id": key_id, "key_vault_network_access": KEY_VAULT_NETWORK_ACCESS}


def aad_profile(admin_group_object_ids: Sequence[str] = ()) -> dict[str, Any]:
    """``aad_profile``: AKS-managed Entra ID authentication and Azure RBAC for Kubernetes authorization.

    Who may do what in the cluster is then an Azure role assignment (``Azure Kubernetes Service RBAC Cluster
    Admin`` ...), auditable and revocable in one place (AKS ``manage-azure-rbac.md``). Members of
    ``admin_group_object_ids`` are cluster-admin through Kubernetes RBAC as well. The tenant is the subscription's
    (the SDK's ``tenant_id`` default), which Azure RBAC for Kubernetes requires.
    """
    profile: dict[str, Any] = {"managed": True, "enable_azure_rbac": True}
    if admin_group_object_ids:
        profile["admin_group_object_ids"] = list(admin_group_object_ids)
    return profile


def api_server_access_profile(allowed_cidrs: Sequence[str]) -> dict[str, Any]:
    """``api_server_access_profile``: no CIDRs, a private cluster (the API server has only a private endpoint in
    the node VNet); CIDRs, a public endpoint that only those ranges reach (``authorized_ip_ranges``).

    AKS does not combine the two: authorized IP ranges are "not supported on private clusters" (AKS
    ``api-server-authorized-ip-ranges.md``). With authorized ranges AKS also admits the cluster's own Standard load
    balancer outbound IP, so nodes keep reaching the API server.
    """
    if not allowed_cidrs:
        return {"enable_private_cluster": True}
    return {"authorized_ip_ranges": list(allowed_cidrs)}


def authorized_ranges_problem(allowed_cidrs: Sequence[str]) -> Optional[str]:
    """What AKS refuses in a list of authorized IP ranges beyond the shared CIDR rules, or None.

    ``0.0.0.0/32`` means "only the cluster's load balancer outbound IP" and AKS rejects it beside other ranges
    ("Setting apiServerAuthorizedIPRange to 0.0.0.0/32 is not allowed with other IP ranges",
    Azure/terraform-azurerm-aks#378).
    """
    if LOAD_BALANCER_ONLY_RANGE in allowed_cidrs and len(allowed_cidrs) > 1:
        return (f"lists {LOAD_BALANCER_ONLY_RANGE} (AKS: only the cluster's load balancer outbound IP) beside other "
                "ranges; AKS accepts it only on its own")
    return None
