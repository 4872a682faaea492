"""Configuration keys of the Azure (AKS) cloud layer, parsed without the cloud SDK.

Cluster keys (top level of the ``gpu-platform`` namespace), all optional:

| key | default | meaning |
|---|---|---|
| ``resourceGroupName`` | a new group | existing resource group to create the cluster (and its VNet) in |
| ``clusterName`` | Pulumi auto-name | the AKS managed cluster's resource name |
| ``vnetSubnetId`` | a new VNet + subnet | existing subnet resource ID for every node pool |
| ``vnetAddressSpace`` | ``10.224.0.0/12`` | address space of the new VNet (AKS's own default) |
| ``subnetAddressPrefix`` | ``10.224.0.0/16`` | node subnet of the new VNet |
| ``podCidr`` | ``10.244.0.0/16`` | Azure CNI overlay pod range (outside the VNet) |
| ``serviceCidr`` | ``10.0.0.0/16`` | Kubernetes service range; the DNS service takes its ``.10`` address |
| ``osSku`` | ``Ubuntu`` | node OS of every pool: ``Ubuntu``, ``Ubuntu2204``, ``AzureLinux``, ``AzureLinux3`` |
| ``systemPoolVmSize`` | ``Standard_D4ds_v5`` | VM size of the System pool (platform services run there) |
| ``systemPoolMinNodes`` / ``systemPoolMaxNodes`` | 2 / 3 | System pool autoscaling bounds |
| ``skuTier`` | ``Standard`` | AKS pricing tier: ``Free``, ``Standard`` (uptime SLA), ``Premium`` |
| ``registerInfinibandFeature`` | true | register ``AKSInfinibandSupport`` when a pool is an InfiniBand pool |
| ``apiAllowedCidrs`` | ``[]`` | empty: a private cluster (API server reachable from the VNet only); CIDRs: a public \
endpoint restricted to them (``authorizedIPRanges``); see `control_plane` |
| ``secretsEncryption`` | true | KMS envelope encryption of Secrets with a key in a key vault the stack creates |
| ``adminGroupObjectIds`` | ``[]`` | Entra ID group object IDs whose members are cluster-admin |
| ``amdDriverImage`` | none | with an AMD Instinct pool (required there): registry repository, without a tag, where \
the AMD GPU Operator stores the amdgpu driver images it builds (AKS installs no driver on AMD pools) |

Pool keys (``nodePools[i]``), each an `AksGpuNodePool` argument (`pool_args`): ``agentPoolName`` (default
derived, see `azure_names.agent_pool_name`), ``osSku``
(default the cluster's), ``spotMaxPrice`` (USD/hour, -1 = up to on-demand; spot pools only),
``spotEvictionPolicy`` (``Delete``/``Deallocate``; spot pools only), ``osDiskSizeGb``. ``zones`` are Azure
availability zones ``1``, ``2``, ``3``. ``provisioning: reservation`` with ``reservation:`` a capacity reservation
group's resource id (shared keys) associates the pool with that group; the cluster's identity gets Contributor on the
group's resource group, as AKS requires.
"""

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Optional

from ... import catalog, control_plane, provisioning
from ...cidrs import CidrRule
from ...control_plane import ControlPlaneSecurity
from ...fields import ConfigError, join, read_bool, read_enum, read_int, read_list, read_str
from ..common_options import ManagedClusterOptions, entry_args, physical_name_problem, read_matching
from .names import AGENT_POOL_NAME, SYSTEM_POOL_NAME, agent_pool_name
from .specs import (
    EVICTION_POLICIES,
    LINUX_OS_SKUS,
    SKU_TIERS,
    aks_mig_profiles,
    authorized_ranges_problem,
    capacity_reservation_group_problem,
    gb_os_sku_problem,
    gpu_driver,
)
from .storage_options import check_stack_storage
from .storage_options import check_storage as check_storage  # the stack parser's AKS ``storage`` rules
from .upgrade import check_pool_upgrade, window_problem

CLUSTER_KEYS = {
    "resourceGroupName", "clusterName", "vnetSubnetId", "vnetAddressSpace", "subnetAddressPrefix", "podCidr",
    "serviceCidr", "osSku", "systemPoolVmSize", "systemPoolMinNodes", "systemPoolMaxNodes", "skuTier",
    "registerInfinibandFeature", "adminGroupObjectIds", "amdDriverImage", "storageResourceGroup",
    *control_plane.KEYS,
}
POOL_KEYS = {"agentPoolName", "osSku", "spotMaxPrice", "spotEvictionPolicy", "osDiskSizeGb"}

AZURE_ZONES = ("1", "2", "3")
MAX_OS_DISK_GB = 2048
MAX_POOL_NODES = 1000
"""The SDK's ``count`` range for an agent pool: 0-1000 for user pools, 1-1000 for system pools."""
INFINIBAND_FEATURE = "AKSInfinibandSupport"
"""Subscription feature (namespace ``Microsoft.ContainerService``) that places the nodes of an InfiniBand pool on
one InfiniBand network (AKS ``use-amd-gpus.md``, Azure/aks-rdma-infiniband ``deploy-aks.sh``)."""
RESOURCE_GROUP_NAME = re.compile(r"^[-\w.()]{0,89}[-\w()]$")
CLUSTER_NAME = re.compile(r"^[a-zA-Z0-9]$|^[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]$")
SUBNET_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/[^/]+/subnets/[^/]+$",
    re.IGNORECASE,
)
VM_SIZE = re.compile(r"^Standard_[A-Za-z0-9_]+$")
ENTRA_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
"""An Entra ID object ID (a GUID), as ``aadProfile.adminGroupObjectIDs`` takes them."""
DRIVER_IMAGE_REPOSITORY = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$")
"""A registry host (optional port) and repository path, no tag or digest: the operator picks the tag per node."""
RESERVED_LABEL_DOMAINS = ("kubernetes.azure.com", "kubernetes.io")
"""AKS reserved node-label prefixes (AKS ``use-labels.md``); ``*.kubernetes.io`` is Kubernetes' own."""


@dataclass(frozen=True)
class AzureClusterOptions(ManagedClusterOptions):
    """The AKS cluster's own settings (``gpu-platform:<key>``)."""

    resource_group_name: Optional[str] = None
    """Existing resource group; None creates one."""
    cluster_name: Optional[str] = None
    """Managed cluster resource name; None lets Pulumi auto-name it."""
    vnet_subnet_id: Optional[str] = None
    """Existing node subnet; None creates a VNet and subnet."""
    vnet_address_space: str = "10.224.0.0/12"
    """Address space of a new VNet (AKS's own default)."""
    subnet_address_prefix: str = "10.224.0.0/16"
    """Node subnet of a new VNet."""
    pod_cidr: str = "10.244.0.0/16"
    """Azure CNI overlay pod range (outside the VNet)."""
    service_cidr: str = "10.0.0.0/16"
    """Kubernetes Service range; the DNS service takes its ``.10`` address."""
    dns_service_ip: str = "10.0.0.10"
    """The ``.10`` address of ``service_cidr`` (AKS's convention)."""
    os_sku: str = "Ubuntu"
    """Node OS of every pool: ``Ubuntu``, ``Ubuntu2204``, ``AzureLinux`` or ``AzureLinux3``."""
    system_pool_vm_size: str = "Standard_D4ds_v5"
    """VM size of the System pool (platform services run there)."""
    system_pool_min_nodes: int = 2
    """System pool autoscaler minimum."""
    system_pool_max_nodes: int = 3
    """System pool autoscaler maximum (at least the minimum)."""
    sku_tier: str = "Standard"
    """AKS pricing tier: ``Free``, ``Standard`` (uptime SLA) or ``Premium``."""
    register_infiniband_feature: bool = True
    """Register ``AKSInfinibandSupport`` when a pool has ``rdma: true``; false when it is registered already."""
    admin_group_object_ids: tuple[str, ...] = ()
    """Entra ID group object IDs whose members are cluster-admin (``aadProfile.adminGroupObjectIDs``); Azure RBAC
    role assignments grant everyone else."""
    amd_driver_image: Optional[str] = None
    """Registry repository (no tag) for the amdgpu driver images the AMD GPU Operator builds; required with an AMD
    pool: AKS installs no driver on AMD pools (AKS ``use-amd-gpus.md``), so the operator's KMM builds and loads it."""
    storage_resource_group: Optional[str] = None
    """``storageResourceGroup``: resource group of the storage accounts of ``storage.buckets`` (their containers'
    role assignments and the Blob CSI driver's ``resourcegroup``). Default: the cluster's resource group."""


@dataclass(frozen=True)
class AzurePoolOptions:
    """One GPU pool's AKS settings (``nodePools[i].<key>``)."""

    agent_pool_name: str
    """AKS agent pool name (lower-case letters and digits, at most 12, starting with a letter). Default: derived
    from the pool name."""
    os_sku: Optional[str] = None
    """Node OS; None means the cluster's ``osSku``."""
    spot_max_price: Optional[float] = None
    """Spot pools: max USD/hour, -1 = up to the on-demand price (the default)."""
    spot_eviction_policy: Optional[str] = None
    """Spot pools: ``Delete`` (default) or ``Deallocate``."""
    os_disk_size_gb: Optional[int] = None
    """OS disk size; None keeps AKS's default for the VM size."""


def _cidr(raw: Mapping, key: str, default: str) -> ipaddress.IPv4Network:
    return CidrRule(example=default).network(read_str(raw, key, "", default), key)


def _check_networks(raw: Mapping, subnet_given: bool) -> dict[str, str]:
    """Address ranges that fit together: subnet inside the VNet; pods and services outside both."""
    if subnet_given:
        for key in ("vnetAddressSpace", "subnetAddressPrefix"):
            if key in raw:
                raise ConfigError(key, "does not apply with vnetSubnetId (the existing subnet has its own range)")
    vnet = _cidr(raw, "vnetAddressSpace", AzureClusterOptions.vnet_address_space)
    subnet = _cidr(raw, "subnetAddressPrefix", AzureClusterOptions.subnet_address_prefix)
    pods = _cidr(raw, "podCidr", AzureClusterOptions.pod_cidr)
    services = _cidr(raw, "serviceCidr", AzureClusterOptions.service_cidr)
    if not subnet_given and not subnet.subnet_of(vnet):
        raise ConfigError("subnetAddressPrefix", f"{subnet} is not inside vnetAddressSpace {vnet}")
    others = [("serviceCidr", services)] + ([] if subnet_given else [("vnetAddressSpace", vnet)])
    for key, other in others:
        if pods.overlaps(other):
            raise ConfigError("podCidr", f"{pods} overlaps {key} {other}; Azure CNI overlay pod ranges must not")
    if not subnet_given and services.overlaps(vnet):
        raise ConfigError("serviceCidr", f"{services} overlaps vnetAddressSpace {vnet}")
    if services.num_addresses < 16:
        raise ConfigError("serviceCidr", f"{services} is too small for the cluster's services")
    return {"vnet_address_space": str(vnet), "subnet_address_prefix": str(subnet), "pod_cidr": str(pods),
            "service_cidr": str(services), "dns_service_ip": str(services.network_address + 10)}


def object_id_problem(value: Any) -> Optional[str]:
    """What is wrong with an Entra ID object ID, or None."""
    if not isinstance(value, str) or not ENTRA_OBJECT_ID.match(value):
        return (f"{value!r} is not an Entra ID group object ID (a GUID such as "
                "00000000-0000-0000-0000-000000000000)")
    return None


def unique_problem(values: Any) -> Optional[str]:
    """A list naming the same value twice, or None."""
    return "lists an ID twice" if len(set(values)) != len(values) else None


def _admin_groups(raw: Mapping) -> tuple[str, ...]:
    groups = read_list(raw, "adminGroupObjectIds", "")
    for i, value in enumerate(groups):
        problem = object_id_problem(value)
        if problem:
            raise ConfigError(join("adminGroupObjectIds", i), problem)
    problem = unique_problem([g.lower() for g in groups])
    if problem:
        raise ConfigError("adminGroupObjectIds", problem)
    return tuple(groups)


def _control_plane(raw: Mapping) -> ControlPlaneSecurity:
    security = control_plane.parse_control_plane(raw)
    problem = authorized_ranges_problem(security.api_allowed_cidrs)
    if problem:
        raise ConfigError("apiAllowedCidrs", problem)
    return security


def parse_cluster_options(raw: Mapping, config: Any) -> AzureClusterOptions:
    """Cluster keys, then the rules that need every pool (names, OS mix, MIG, InfiniBand)."""
    group = read_matching(raw, "resourceGroupName", "", RESOURCE_GROUP_NAME, "a resource group name (1-90 letters, "
                          "digits, '_', '-', '.', '(', ')', not ending with '.')")
    cluster = read_matching(raw, "clusterName", "", CLUSTER_NAME, "an AKS cluster name (1-63 letters, digits, '-', "
                            "'_', starting and ending with a letter or digit)")
    subnet_id = read_matching(raw, "vnetSubnetId", "", SUBNET_ID, "a subnet resource ID (/subscriptions/<id>/"
                              "resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/"
                              "<subnet>)")
    networks = _check_networks(raw, subnet_id is not None)
    vm_size = read_matching(raw, "systemPoolVmSize", "", VM_SIZE, "an Azure VM size such as Standard_D4ds_v5",
                            AzureClusterOptions.system_pool_vm_size)
    if ("azure", vm_size) in catalog.SHAPES:
        raise ConfigError("systemPoolVmSize", f"'{vm_size}' is a GPU size; the System pool runs the platform's "
                                              "services on a CPU size such as Standard_D4ds_v5")
    min_nodes = read_int(raw, "systemPoolMinNodes", "", AzureClusterOptions.system_pool_min_nodes, minimum=1)
    max_nodes = read_int(raw, "systemPoolMaxNodes", "", max(min_nodes, AzureClusterOptions.system_pool_max_nodes),
                         minimum=1)
    if max_nodes < min_nodes:
        raise ConfigError("systemPoolMaxNodes", f"must be >= systemPoolMinNodes ({min_nodes}), got {max_nodes}")
    if max_nodes > MAX_POOL_NODES:
        raise ConfigError("systemPoolMaxNodes", f"an AKS agent pool holds at most {MAX_POOL_NODES} nodes, "
                                                f"got {max_nodes}")
    options = AzureClusterOptions(
        resource_group_name=group,
        cluster_name=cluster,
        vnet_subnet_id=subnet_id,
        os_sku=read_enum(raw, "osSku", "", LINUX_OS_SKUS, AzureClusterOptions.os_sku),
        system_pool_vm_size=vm_size,
        system_pool_min_nodes=min_nodes,
        system_pool_max_nodes=max_nodes,
        sku_tier=read_enum(raw, "skuTier", "", SKU_TIERS, AzureClusterOptions.sku_tier),
        register_infiniband_feature=read_bool(raw, "registerInfinibandFeature", "", True),
        control_plane=_control_plane(raw),
        admin_group_object_ids=_admin_groups(raw),
        amd_driver_image=_amd_driver_image(raw, config),
        storage_resource_group=_storage_resource_group(raw, config),
        **networks,
    )
    _check_pools(raw, config, options)
    problem = window_problem(config.maintenance)
    if problem is not None:
        raise ConfigError(join("maintenance.window", problem[0]), problem[1])
    check_stack_storage(config, options)
    return options


def _storage_resource_group(raw: Mapping, config: Any) -> Optional[str]:
    group = read_matching(raw, "storageResourceGroup", "", RESOURCE_GROUP_NAME, "a resource group name")
    if group is None:
        return None
    if not config.storage.buckets:
        raise ConfigError("storageResourceGroup", "takes effect only with storage.buckets (their storage accounts' "
                                                  "resource group)")
    return group


def _check_pools(raw: Mapping, config: Any, options: AzureClusterOptions) -> None:
    seen: dict[str, int] = {}
    infiniband = False
    for i, pool in enumerate(config.node_pools):
        path = join("nodePools", i)
        name = pool.cloud_options.agent_pool_name
        if name == SYSTEM_POOL_NAME or name in seen:
            other = "the System pool" if name == SYSTEM_POOL_NAME else f"nodePools[{seen[name]}]"
            raise ConfigError(join(path, "agentPoolName"), f"agent pool name '{name}' is also used by {other}; "
                                                           "set a distinct agentPoolName")
        seen[name] = i
        os_sku = pool.cloud_options.os_sku or options.os_sku
        if _is_amd(pool) and not os_sku.startswith("Ubuntu"):
            raise ConfigError(join(path, "osSku"), f"'{os_sku}' is not supported on AMD GPU pools; AKS runs them on "
                                                   "Ubuntu only (AKS use-amd-gpus.md)")
        shape = catalog.SHAPES.get(("azure", pool.instance_type))
        problem = gb_os_sku_problem(shape.architecture, shape.name, os_sku) if shape else None
        if problem:
            at = join(path, "osSku") if pool.cloud_options.os_sku else "osSku"
            raise ConfigError(at, problem if at != "osSku" else
                              f"{problem} (nodePools[{i}] '{pool.name}' takes the cluster's osSku)")
        if config.gpu_software == "operator" and os_sku != options.os_sku:
            raise ConfigError(join(path, "osSku"), f"'{os_sku}' differs from the cluster's osSku '{options.os_sku}'; "
                                                   "the NVIDIA GPU Operator does not support several OS versions in "
                                                   "one AKS cluster")
        if pool.sharing.mode == "mig" and gpu_driver(config.gpu_software) != "None":
            supported = aks_mig_profiles(pool.gpu_model)
            if pool.sharing.mig_profile not in supported:
                listed = ", ".join(f"{p} ({v})" for p, v in supported.items())
                raise ConfigError(join(path, "sharing.profile"),
                                  f"AKS applies MIG through gpuInstanceProfile, which offers {listed} on "
                                  f"{pool.instance_type}; use one of them or gpuSoftware 'operator' (MIG manager)")
        infiniband = infiniband or (pool.rdma and _fabric(pool) == catalog.INFINIBAND)
    if "registerInfinibandFeature" in raw and not infiniband:
        raise ConfigError("registerInfinibandFeature", "only applies when a pool has rdma: true on an InfiniBand "
                                                       "size (Standard_ND96isr_H100_v5...)")


def _is_amd(pool: Any) -> bool:
    shape = catalog.SHAPES.get(("azure", pool.instance_type))
    return shape is not None and catalog.vendor_of(shape.gpu_model).key == catalog.AMD


def _amd_driver_image(raw: Mapping, config: Any) -> Optional[str]:
    """``amdDriverImage``: required with an AMD pool, refused without; a repository without tag or digest."""
    image = read_str(raw, "amdDriverImage", "", None)
    if not any(_is_amd(pool) for pool in config.node_pools):
        if image is not None:
            raise ConfigError("amdDriverImage", "only applies with an AMD Instinct pool (Standard_ND96isr_MI300X_v5)")
        return None
    if image is None:
        raise ConfigError("amdDriverImage", "is required with an AMD Instinct pool: AKS installs no driver on AMD "
                                            "pools, the AMD GPU Operator builds it and pushes it to this repository")
    if not DRIVER_IMAGE_REPOSITORY.match(image):
        raise ConfigError("amdDriverImage", f"'{image}' is not an image repository without tag "
                                            "(myregistry.azurecr.io/amdgpu-driver)")
    return image


def _fabric(pool: Any) -> Optional[str]:
    shape = catalog.SHAPES.get(("azure", pool.instance_type))
    return shape.rdma_fabric if shape else None


def _spot_max_price(raw: Mapping, path: str) -> Optional[float]:
    if raw.get("spotMaxPrice") is None:
        return None
    value = raw["spotMaxPrice"]
    try:
        if isinstance(value, bool):
            raise InvalidOperation
        price = Decimal(str(value))
    except InvalidOperation:
        raise ConfigError(join(path, "spotMaxPrice"), f"must be a number, got {value!r}") from None
    if price != -1 and (price <= 0 or price.as_tuple().exponent < -5):
        raise ConfigError(join(path, "spotMaxPrice"), f"must be -1 (up to the on-demand price) or a positive USD "
                                                      f"price with at most 5 decimals, got {value}")
    return float(price)


def _check_labels_and_taints(pool: Any, path: str) -> None:
    for key, _ in pool.labels:
        domain = key.split("/", 1)[0] if "/" in key else ""
        if domain in RESERVED_LABEL_DOMAINS or domain.endswith(".kubernetes.io"):
            raise ConfigError(join(join(path, "labels"), key), f"'{domain}/' is a prefix AKS reserves for its own "
                                                               "node labels")
    for i, taint in enumerate(pool.taints):
        if taint.key.startswith("kubernetes.azure.com/"):
            raise ConfigError(join(join(path, "taints"), i), f"'{taint.key}' is an AKS system taint; AKS sets it "
                                                             "itself (spot pools) and rejects changes to it")


def parse_pool_options(raw: Mapping, path: str, pool: Any, shape: Any) -> AzurePoolOptions:
    """A pool's AKS keys and the rules that need only this pool."""
    explicit = read_matching(raw, "agentPoolName", path, AGENT_POOL_NAME, "an AKS agent pool name (lower-case "
                             "letters and digits, starting with a letter, at most 12)")
    if pool.max_nodes > MAX_POOL_NODES:
        raise ConfigError(join(path, "maxNodes"), f"an AKS agent pool holds at most {MAX_POOL_NODES} nodes, "
                                                  f"got {pool.max_nodes}")
    price = _spot_max_price(raw, path)
    eviction = read_enum(raw, "spotEvictionPolicy", path, EVICTION_POLICIES, None)
    if not pool.spot:
        for key, value in (("spotMaxPrice", price), ("spotEvictionPolicy", eviction)):
            if value is not None:
                raise ConfigError(join(path, key), "only applies to spot pools (spot: true)")
    for i, zone in enumerate(pool.zones):
        if zone not in AZURE_ZONES:
            raise ConfigError(join(join(path, "zones"), i), f"'{zone}' is not an Azure availability zone (1, 2, 3)")
    _check_labels_and_taints(pool, path)
    check_pool_upgrade(pool.upgrade, join(path, "upgrade"))
    if pool.provisioning == provisioning.RESERVATION and capacity_reservation_group_problem(pool.reservation):
        raise ConfigError(join(path, "reservation"), capacity_reservation_group_problem(pool.reservation))
    disk = read_int(raw, "osDiskSizeGb", path, None, minimum=30)
    if disk is not None and disk > MAX_OS_DISK_GB:
        raise ConfigError(join(path, "osDiskSizeGb"), f"must be <= {MAX_OS_DISK_GB}, got {disk}")
    return AzurePoolOptions(
        agent_pool_name=explicit or agent_pool_name(pool.name),
        os_sku=read_enum(raw, "osSku", path, LINUX_OS_SKUS, None),
        spot_max_price=price,
        spot_eviction_policy=eviction,
        os_disk_size_gb=disk,
    )


def pool_args(pool_config: Any, pool: Any) -> dict[str, Any]:
    """The `AksCluster` ``gpu_pools`` entry (`AksGpuNodePool` args) of a validated ``nodePools`` entry: the pool and
    every AKS key the entry sets (``zones`` -> ``availability_zones``, ``desiredNodes`` -> ``initial_nodes``)."""
    options: AzurePoolOptions = pool_config.cloud_options
    return entry_args(pool, {
        "agent_pool_name": options.agent_pool_name,
        "os_sku": options.os_sku,
        "spot_max_price": options.spot_max_price,
        "spot_eviction_policy": options.spot_eviction_policy,
        "os_disk_size_gb": options.os_disk_size_gb,
        "initial_nodes": pool_config.desired_nodes,
        "availability_zones": list(pool_config.zones) or None,
        "upgrade": pool_config.upgrade.as_args() or None,  # only what the entry wrote; roles give the rest
    })


def stack_name_problem(stack: str) -> Optional[str]:
    """Why a stack cannot be named ``stack`` on Azure (the stack parser asks first), or None."""
    return physical_name_problem(stack, "the AKS cluster and its managed identity")
