"""Azure: an AKS cluster and its GPU / InfiniBand node pools (pulumi-azure-native 3.29.0, AKS API 2025-09-01).

`AksCluster` creates (or uses) a resource group, a VNet and node subnet, a user-assigned control-plane identity
with Network Contributor on the subnet, and the managed cluster: a System pool, Azure CNI overlay powered by Cilium
(NetworkPolicies enforced), OIDC issuer and workload identity, Entra ID authentication with Azure RBAC and no local
accounts, a private API server (or a public one restricted to ``api_allowed_cidrs``), and KMS envelope encryption
of Secrets with a key in a key vault it creates (the identity holds Key Vault Crypto User on it). Each GPU pool
is an `AksGpuNodePool` (``containerservice.AgentPool``) built from a `GpuPoolSpec`: VM size, the GPU taint plus
user taints, the platform's node labels, cluster-autoscaler bounds, spot settings, the GPU driver mode and, for MIG
pools, the GPU instance profile.

Decisions live in the pure modules `specs`, `names` and `kubeconfig`; this module only wires resources.

The Kubernetes provider authenticates with Entra ID through ``kubelogin`` (local accounts are disabled, so AKS
hands out no static credentials): ``kubelogin`` must be on the PATH of the machine running Pulumi, logged in with
the Azure CLI (or ``AAD_LOGIN_METHOD`` set), and the deploying identity needs the Azure role "Azure Kubernetes
Service RBAC Cluster Admin" on the cluster, or membership of an ``admin_group_object_ids`` group.

Things AKS fixes at creation (the pool is replaced, deleted first because its name is fixed, when they change):
VM size, ``gpuProfile.driver`` (AKS only applies it to nodes it creates: ``gpuSoftware: operator`` sets
``None`` so the GPU Operator owns the driver), ``gpuInstanceProfile``, spot priority / eviction / max price and
zones.

Grace-Blackwell racks (``Standard_ND128isr_NDR_GB200_v6``, ``Standard_ND128isr_GB300_v6``: arm64, 4 GPUs and 4
InfiniBand NICs per VM, 18 VMs per NVLink domain): AKS's documentation does not list these sizes (none of
MicrosoftDocs/azure-aks-docs names GB200 or GB300 as of 2026-08-21), and AKS installs no GPU software on sizes off
its list unless the driver install is skipped (``use-nvidia-gpu.md``); so their pools take ``gpuProfile.driver:
None`` (refusing ``Install``) and the GPU Operator installs the driver. AKS accepts any ``vmSize`` string, so the
pools are created like any other; their OS SKU must be ``Ubuntu`` (`specs.GB_OS_SKUS`).

InfiniBand: pools with ``rdma: true`` on an InfiniBand size (``Standard_ND96isr_H100_v5``...) are labelled
``gpu-platform.io/rdma=infiniband`` for the NVIDIA Network Operator. AKS only places their nodes on one InfiniBand
network when the subscription feature ``Microsoft.ContainerService/AKSInfinibandSupport`` is registered; with
``register_infiniband_feature`` (default) the cluster registers it (a subscription-wide setting, kept when the
stack is destroyed) and those pools wait for it. Registration can stay ``Pending`` for minutes; Azure's docs then
re-register the resource provider (``az provider register --namespace Microsoft.ContainerService``). Set it to
false where the feature is registered already or the deploying identity may not register features.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ... import catalog
from ...component_args import Args, KeywordArgs
from ...config_model import PlatformConfig
from ...kubernetes_base.common import child_opts
from ...pools import GpuPool, GpuPoolSpec
from ...provisioning import RESERVATION
from ...upgrades.maintenance import MaintenanceWindowArgs, parse_window, window_as_args
from ...upgrades.pool_upgrade import PoolUpgradeArgs, upgrade_from_args
from .. import missing_extra
from ..autoscaler_profile import GpuScalingProfile, aks_auto_scaler_profile
from ..handle import ClusterHandle
from . import contract
from .kubeconfig import USER_CREDENTIALS_FORMAT, decode_kubeconfig, non_interactive
from .names import agent_pool_name, dns_prefix, key_vault_name
from .options import INFINIBAND_FEATURE, AzureClusterOptions, pool_args
from .specs import (
    CONTRIBUTOR_ROLE,
    GPU_DRIVER_NONE,
    aad_profile,
    agent_pool_properties,
    aks_pool,
    api_server_access_profile,
    capacity_reservation_group_scope,
    cluster_identity_profiles,
    default_gpu_driver,
    gpu_driver,
    kms_profile,
    network_profile,
    system_pool_profile,
)
from .storage import storage_from_config
from .upgrade import (
    AUTO_UPGRADE_SCHEDULE,
    AUTOMATIC_DEFAULT,
    NODE_OS_UPGRADE_SCHEDULE,
    auto_upgrade_profile,
    maintenance_window,
    upgrade_settings,
)

try:
    from pulumi_azure_native import (
        authorization,
        containerservice,
        features,
        keyvault,
        managedidentity,
        network,
        resources,
    )
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None

NETWORK_CONTRIBUTOR_ROLE = "4d97b98b-1d4f-4787-a291-c67834d212e7"
"""Built-in role the control-plane identity needs on the node subnet (join VMSS NICs, internal load balancers)."""
KEY_VAULT_CRYPTO_USER_ROLE = "12338af0-0e69-4776-bea7-57ae8d297424"
"""Built-in role "Key Vault Crypto User" (Azure built-in roles: "Perform cryptographic operations using keys. Only
works for key vaults that use the Azure role-based access control permission model"): what AKS KMS asks for on an
RBAC key vault (AKS ``use-kms-etcd-encryption.md``)."""
KMS_KEY_NAME = "aks-kms"
KMS_KEY_PROPERTIES: dict[str, Any] = {"kty": "RSA", "key_size": 2048, "key_ops": ["encrypt", "decrypt"]}
"""The key encryption key: RSA 2048 (what ``az keyvault key create`` makes for the AKS KMS how-to) limited to the
two operations the KMS plugin calls (Azure/kubernetes-kms ``pkg/plugin/keyvault.go``: ``Encrypt``/``Decrypt`` with
an RSA algorithm; the how-to's access policy grants exactly ``encrypt decrypt``)."""
SOFT_DELETE_RETENTION_DAYS = 90
# Properties AKS only honours at pool creation; a change must recreate the pool rather than update it in place.
CREATE_TIME_POOL_PROPERTIES = [
    "vmSize", "gpuProfile", "gpuInstanceProfile", "scaleSetPriority", "scaleSetEvictionPolicy", "spotMaxPrice",
    "availabilityZones",
]


class AksGpuNodePoolArgs(TypedDict, total=False):
    """Arguments of `AksGpuNodePool`: the cloud-neutral pool, then AKS's own settings."""

    pool: Required[GpuPoolSpec]
    """The GPU pool (VM size, GPU model, min/max nodes, sharing, RDMA, spot, labels, taints). With ``provisioning``
    ``reservation``, ``reservation`` is a capacity reservation group's resource id, set as the agent pool's
    ``capacity_reservation_group_id``: a pool of an `AksCluster` gets the Contributor role AKS requires for the
    cluster identity on the group's resource group; a pool composed on its own needs that role granted beforehand."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster (set by `AksCluster` for its own pools)."""
    cluster_name: pulumi.Input[str]
    """Managed cluster resource name (set by `AksCluster` for its own pools)."""
    agent_pool_name: str
    """AKS agent pool name. Default: derived from the pool name (`azure_names.agent_pool_name`)."""
    os_sku: str
    """``Ubuntu`` (default), ``Ubuntu2204``, ``AzureLinux`` or ``AzureLinux3``; ``Ubuntu`` only on the arm64
    Grace-Blackwell sizes (AKS's node image for them is Ubuntu 24.04 arm64)."""
    vnet_subnet_id: pulumi.Input[str]
    """Node subnet. Default: the cluster's (set by `AksCluster`)."""
    gpu_driver: str
    """``Install`` (default: AKS installs the NVIDIA driver) or ``None`` (the GPU Operator installs it).
    Create-time only: changing it replaces the pool. AMD pools: ``None`` only (the default there; AKS enforces it
    and the AMD GPU Operator installs the driver). Grace-Blackwell sizes (ND GB200 v6 / ND GB300 v6): ``None`` only
    too (the default there), AKS's GPU software does not cover them."""
    spot_max_price: float
    """Spot pools: max USD per node-hour; default -1 (up to the on-demand price, never evicted for price)."""
    spot_eviction_policy: str
    """Spot pools: ``Delete`` (default) or ``Deallocate``."""
    availability_zones: list[str]
    """Availability zones (``1``, ``2``, ``3``). Default: AKS's choice (regional)."""
    os_disk_size_gb: int
    """OS disk size. Default: AKS's default for the VM size."""
    kubernetes_version: str
    """Pool Kubernetes version (``1.34``). Default: the control plane's."""
    initial_nodes: int
    """Nodes at creation. Default: the pool's min nodes; afterwards the cluster autoscaler owns the count."""
    upgrade: PoolUpgradeArgs
    """How AKS upgrades the pool (``upgrade_settings``): ``max_surge`` / ``max_unavailable`` (a count or a
    percentage; training pools 0 / 1, others 1 / 0), ``drain_timeout_minutes`` (1-1440, AKS default 30),
    ``soak_minutes`` (0-30, AKS default 0). ``strategy: blue-green`` and ``automatic: never`` are refused: AKS has no
    blue-green pool upgrade and no per-pool opt-out; its pools are upgraded automatically only inside the cluster's
    ``maintenance_window`` (docs/upgrades.md)."""


class AksGpuNodePool(pulumi.ComponentResource, metaclass=KeywordArgs):
    """One AKS GPU node pool: an autoscaled, tainted and labelled ``containerservice.AgentPool``."""

    agent_pool: containerservice.AgentPool
    agent_pool_name: pulumi.Output[str]
    agent_pool_id: pulumi.Output[str]

    def __init__(self, name: str, args: AksGpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = _checked_pool_args(name, args)  # type: ignore[assignment]
        super().__init__("gpuplatform:index:AksGpuNodePool", name, {}, opts)
        # The pool as AKS runs it (spot pools carry AKS's spot taint). Python-only: a GpuPool has no schema form,
        # so it carries no class-level annotation.
        self.pool: GpuPool = aks_pool(GpuPool.from_spec(args["pool"]))
        properties = agent_pool_properties(
            self.pool,
            agent_pool_name=args.get("agent_pool_name") or agent_pool_name(self.pool.name),
            os_sku=args.get("os_sku", AzureClusterOptions.os_sku),
            driver=args.get("gpu_driver", default_gpu_driver(self.pool)),
            spot_max_price=args.get("spot_max_price"),
            spot_eviction_policy=args.get("spot_eviction_policy"),
            zones=args.get("availability_zones", []),
            os_disk_size_gb=args.get("os_disk_size_gb"),
            initial_nodes=args.get("initial_nodes"),
        )
        optional = {k: args[k] for k in ("vnet_subnet_id",) if args.get(k) is not None}
        if args.get("kubernetes_version"):
            optional["orchestrator_version"] = args["kubernetes_version"]
        self.agent_pool = containerservice.AgentPool(
            f"{name}-pool",
            resource_group_name=args["resource_group_name"],
            resource_name_=args["cluster_name"],
            **properties,
            **optional,
            upgrade_settings=upgrade_settings(
                upgrade_from_args(args.get("upgrade"), "upgrade").resolved(self.pool.role, AUTOMATIC_DEFAULT)),
            opts=child_opts(
                self, opts,
                # The cluster autoscaler owns the node count once the pool exists.
                ignore_changes=["count"],
                replace_on_changes=CREATE_TIME_POOL_PROPERTIES,
                # The agent pool name is fixed, so the old pool must go before its replacement is created.
                delete_before_replace=True,
            ),
        )
        self.agent_pool_name = self.agent_pool.name
        self.agent_pool_id = self.agent_pool.id
        self.register_outputs({"agent_pool_name": self.agent_pool_name, "agent_pool_id": self.agent_pool_id})


def _checked_pool_args(name: str, args: Any) -> dict[str, Any]:
    """`AksGpuNodePool`'s args checked (a `ConfigError` line otherwise); the group and cluster, which
    `AksCluster` fills in for its own pools, are required of a pool composed on its own."""
    checker = Args("AksGpuNodePool", name, cloud="azure")
    checked = checker.check(args, AksGpuNodePoolArgs, contract.POOL_RULES)
    for key in ("resource_group_name", "cluster_name"):
        if key not in checked:
            checker.fail(key, "is required (AksCluster sets it for the pools in its gpu_pools)")
    contract.check_pool_entry(checker, checked)
    return checked


class AksClusterArgs(TypedDict, total=False):
    """Arguments of `AksCluster`. Only ``location`` is required; defaults match `AzureClusterOptions`."""

    location: Required[pulumi.Input[str]]
    """Azure region (``westeurope``)."""
    kubernetes_version: str
    """Kubernetes minor version (``1.34``); AKS picks its latest GA patch."""
    resource_group_name: pulumi.Input[str]
    """Existing resource group. Default: a new one."""
    cluster_name: str
    """Managed cluster resource name. Default: Pulumi auto-name."""
    vnet_subnet_id: pulumi.Input[str]
    """Existing node subnet. Default: a new VNet and subnet."""
    vnet_address_space: str
    """New VNet's address space. Default ``10.224.0.0/12`` (AKS's own default)."""
    subnet_address_prefix: str
    """New node subnet. Default ``10.224.0.0/16``."""
    pod_cidr: str
    """Azure CNI overlay pod range. Default ``10.244.0.0/16``."""
    service_cidr: str
    """Service range. Default ``10.0.0.0/16``."""
    dns_service_ip: str
    """Cluster DNS service IP inside ``service_cidr``. Default ``10.0.0.10``."""
    os_sku: str
    """Node OS of the System pool (and the GPU pools' default). Default ``Ubuntu``."""
    system_pool_vm_size: str
    """System pool VM size. Default ``Standard_D4ds_v5``."""
    system_pool_min_nodes: int
    """System pool autoscaler minimum. Default 2."""
    system_pool_max_nodes: int
    """System pool autoscaler maximum. Default 3 (or the minimum when that is larger)."""
    sku_tier: str
    """``Free``, ``Standard`` (default; uptime SLA) or ``Premium``."""
    gpu_pools: list[AksGpuNodePoolArgs]
    """GPU pools; their ``resource_group_name``, ``cluster_name`` and default subnet come from the cluster."""
    register_infiniband_feature: bool
    """Register ``AKSInfinibandSupport`` when a pool is an InfiniBand pool. Default true."""
    auto_scaler_profile: dict[str, str]
    """The cluster autoscaler's settings (``auto_scaler_profile`` fields, snake_case). Default: the GPU profile
    of `autoscaler_profile.aks_auto_scaler_profile` (slow GPU node starts, longer idle before scale-down)."""
    tags: dict[str, str]
    """Tags on the resource group, network, identity, key vault and cluster."""
    api_allowed_cidrs: list[str]
    """IPv4 CIDRs allowed to reach the API server. Default ``[]``: a private cluster (API server reachable from the
    VNet only, so Pulumi must run there); otherwise a public endpoint restricted to these ranges."""
    secrets_encryption: bool
    """Envelope-encrypt Secrets with AKS KMS and a key in a key vault the cluster creates. Default true."""
    admin_group_object_ids: list[str]
    """Entra ID group object IDs whose members are cluster-admin. Default: none (Azure RBAC role assignments
    only)."""
    maintenance_window: MaintenanceWindowArgs
    """When AKS may upgrade on its own: ``days`` (one week day, or all seven), ``start`` (``HH:MM`` UTC), ``hours``
    (4-24). Default: Saturdays 00:00 UTC for 12 hours. Both ``aksManagedAutoUpgradeSchedule`` (patch versions,
    ``upgrade_channel: patch``) and ``aksManagedNodeOSUpgradeSchedule`` (node images, ``node_os_upgrade_channel:
    NodeImage``) take it, so no node is upgraded by AKS outside it."""
    blob_csi_driver: bool
    """Turn on AKS's managed Blob CSI driver (``storage_profile.blob_csi_driver``; blobfuse2 mounts of blob
    containers). Default: false (AKS's default)."""


class AksCluster(pulumi.ComponentResource, metaclass=KeywordArgs):
    """An AKS cluster with GPU node pools, its kubeconfig and a Kubernetes provider."""

    resource_group: Optional[resources.ResourceGroup]
    """The created resource group (None when one was given)."""
    virtual_network: Optional[network.VirtualNetwork]
    subnet: Optional[network.Subnet]
    identity: managedidentity.UserAssignedIdentity
    managed_cluster: containerservice.ManagedCluster
    infiniband_feature: Optional[features.SubscriptionFeatureRegistration]
    key_vault: Optional[keyvault.Vault]
    """The KMS key vault (None with ``secrets_encryption`` false)."""
    kms_key: Optional[keyvault.Key]
    """The key encryption key of Secrets (None with ``secrets_encryption`` false)."""
    kms_role: Optional[authorization.RoleAssignment]
    """Key Vault Crypto User for the cluster identity on the vault (None with ``secrets_encryption`` false)."""
    reservation_roles: dict[str, authorization.RoleAssignment]
    """Contributor for the cluster identity on the resource group of each capacity reservation group a pool uses
    (by that resource group's id), which AKS requires before it associates a pool with the group."""
    resource_group_name: pulumi.Output[str]
    cluster_name: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    """The cluster user kubeconfig (a secret): Entra ID through ``kubelogin``, logging in with the Azure CLI."""
    oidc_issuer_url: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, args: AksClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("AksCluster", name, cloud="azure")
        args = checker.check(args, AksClusterArgs, contract.CLUSTER_RULES)  # type: ignore[assignment]
        contract.check_cluster(checker, args)
        super().__init__("gpuplatform:index:AksCluster", name, {}, opts)
        defaults = AzureClusterOptions()
        location = args["location"]
        tags = args.get("tags", {})
        version = args.get("kubernetes_version")

        self.resource_group = None
        if args.get("resource_group_name") is None:
            self.resource_group = resources.ResourceGroup(
                f"{name}-rg", location=location, tags=tags, opts=child_opts(self, opts))
        group_name = self.resource_group.name if self.resource_group else args["resource_group_name"]

        self.virtual_network, self.subnet = None, None
        subnet_id = args.get("vnet_subnet_id")
        if subnet_id is None:
            self.virtual_network = network.VirtualNetwork(
                f"{name}-vnet", resource_group_name=group_name, location=location, tags=tags,
                address_space={"address_prefixes": [args.get("vnet_address_space", defaults.vnet_address_space)]},
                opts=child_opts(self, opts))
            self.subnet = network.Subnet(
                f"{name}-nodes", resource_group_name=group_name, virtual_network_name=self.virtual_network.name,
                address_prefix=args.get("subnet_address_prefix", defaults.subnet_address_prefix),
                opts=child_opts(self, opts))
            subnet_id = self.subnet.id

        # A user-assigned control-plane identity exists before the cluster, so its role on the subnet can too.
        self.identity = managedidentity.UserAssignedIdentity(
            f"{name}-identity", resource_group_name=group_name, location=location, tags=tags,
            opts=child_opts(self, opts))
        client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        self.subnet_role = _role_assignment(f"{name}-subnet-network-contributor", self.identity,
                                            NETWORK_CONTRIBUTOR_ROLE, subnet_id, client, child_opts(self, opts))

        kms = self._secrets_encryption(name, args, group_name, client, tags, opts)

        os_sku = args.get("os_sku", defaults.os_sku)
        system_min = args.get("system_pool_min_nodes", defaults.system_pool_min_nodes)
        system_pool = system_pool_profile(
            args.get("system_pool_vm_size", defaults.system_pool_vm_size), system_min,
            args.get("system_pool_max_nodes", max(system_min, defaults.system_pool_max_nodes)), os_sku)
        system_pool["vnet_subnet_id"] = subnet_id
        if version:
            system_pool["orchestrator_version"] = version
        cluster_optional: dict[str, Any] = {"kubernetes_version": version} if version else {}
        if args.get("cluster_name"):
            cluster_optional["resource_name_"] = args["cluster_name"]
        self.managed_cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_group_name=group_name,
            location=location,
            dns_prefix=dns_prefix(name),
            agent_pool_profiles=[system_pool],
            network_profile=network_profile(
                args.get("pod_cidr", defaults.pod_cidr), args.get("service_cidr", defaults.service_cidr),
                args.get("dns_service_ip", defaults.dns_service_ip)),
            sku={"name": "Base", "tier": args.get("sku_tier", defaults.sku_tier)},
            auto_scaler_profile=dict(args.get("auto_scaler_profile") or aks_auto_scaler_profile(GpuScalingProfile())),
            aad_profile=aad_profile(args.get("admin_group_object_ids", [])),
            # No static admin/user certificates: every access is an Entra ID identity, audited and revocable.
            disable_local_accounts=True,
            api_server_access_profile=api_server_access_profile(args.get("api_allowed_cidrs", [])),
            # Patches and node images stay current, the minor stays Pulumi's; both only in the window below.
            auto_upgrade_profile=auto_upgrade_profile(),
            **({"storage_profile": {"blob_csi_driver": {"enabled": True}}} if args.get("blob_csi_driver") else {}),
            tags=tags,
            **cluster_identity_profiles(self.identity.id, kms),
            **cluster_optional,
            opts=child_opts(
                self, opts,
                # AKS checks the identity's key vault access when it enables KMS.
                depends_on=[self.subnet_role, *([self.kms_role] if self.kms_role is not None else [])],
                # The cluster autoscaler owns the System pool's node count.
                ignore_changes=["agentPoolProfiles[0].count"]),
        )
        self.resource_group_name = pulumi.Output.from_input(group_name)
        self.cluster_name = self.managed_cluster.name
        self.oidc_issuer_url = self.managed_cluster.oidc_issuer_profile.apply(
            lambda profile: (profile or {}).get("issuer_url") or "")

        # The schedules AKS reads for the two auto-upgrade channels: nothing is upgraded by AKS outside the window.
        window = maintenance_window(parse_window(args.get("maintenance_window"), "maintenance_window"))
        self.maintenance_configurations: dict[str, containerservice.MaintenanceConfiguration] = {
            config_name: containerservice.MaintenanceConfiguration(
                f"{name}-{suffix}", resource_group_name=group_name, resource_name_=self.managed_cluster.name,
                config_name=config_name, maintenance_window=window, opts=child_opts(self, opts))
            for config_name, suffix in ((AUTO_UPGRADE_SCHEDULE, "auto-upgrade-schedule"),
                                        (NODE_OS_UPGRADE_SCHEDULE, "node-os-upgrade-schedule"))
        }

        pools = [aks_pool(GpuPool.from_spec(p["pool"])) for p in args.get("gpu_pools", [])]
        self.infiniband_feature = None
        if args.get("register_infiniband_feature", True) and any(
                p.rdma_fabric == catalog.INFINIBAND for p in pools):
            self.infiniband_feature = features.SubscriptionFeatureRegistration(
                f"{name}-infiniband-feature",
                provider_namespace="Microsoft.ContainerService",
                feature_name=INFINIBAND_FEATURE,
                # Subscription-wide: other clusters may rely on it, so destroying this stack keeps it.
                opts=child_opts(self, opts, retain_on_delete=True))

        # AKS use-capacity-reservation-groups.md: the cluster's user-assigned identity needs Contributor on the
        # resource group of a capacity reservation group before a pool can be associated with it. One assignment
        # per resource group: Azure refuses a second identical one.
        self.reservation_roles: dict[str, authorization.RoleAssignment] = {}
        for pool in pools:
            if pool.provisioning != RESERVATION:
                continue
            scope = capacity_reservation_group_scope(pool.reservation)
            if scope not in self.reservation_roles:
                self.reservation_roles[scope] = _role_assignment(
                    f"{name}-{pool.name}-crg-contributor", self.identity, CONTRIBUTOR_ROLE, scope, client,
                    child_opts(self, opts))

        # GPU node pool components by pool name, and the pools they publish (Python-only attributes: component
        # references and GpuPools have no schema form, so they carry no class-level annotation).
        self.node_pools: dict[str, AksGpuNodePool] = {}
        previous: list[pulumi.Resource] = []
        for pool, entry in zip(pools, args.get("gpu_pools", []), strict=True):
            waits = list(previous)
            if pool.provisioning == RESERVATION:
                waits.append(self.reservation_roles[capacity_reservation_group_scope(pool.reservation)])
            if self.infiniband_feature is not None and pool.rdma_fabric == catalog.INFINIBAND:
                waits.append(self.infiniband_feature)
            component = AksGpuNodePool(
                f"{name}-{pool.name}",
                {"vnet_subnet_id": subnet_id, "os_sku": os_sku, **({"kubernetes_version": version} if version else {}),
                 **entry, "resource_group_name": group_name, "cluster_name": self.managed_cluster.name},
                # AKS rejects a pool operation while another one on the cluster is running
                # ("Another agentpool operation ... is in progress"), so pools are created one after another.
                opts=child_opts(self, opts, depends_on=waits))
            self.node_pools[pool.name] = component
            previous = [component.agent_pool]
        self.gpu_pools: list[GpuPool] = [component.pool for component in self.node_pools.values()]

        # Local accounts are disabled, so AKS refuses admin credentials; the user credentials in exec format
        # authenticate with Entra ID through kubelogin.
        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=group_name, resource_name=self.managed_cluster.name, format=USER_CREDENTIALS_FORMAT,
            opts=pulumi.InvokeOutputOptions(parent=self))
        self.kubeconfig = pulumi.Output.secret(
            credentials.kubeconfigs.apply(lambda k: non_interactive(decode_kubeconfig(k))))
        self.provider = k8s.Provider(
            f"{name}-k8s", kubeconfig=self.kubeconfig, enable_server_side_apply=True, opts=child_opts(self, opts))
        self.register_outputs({
            "resource_group_name": self.resource_group_name,
            "cluster_name": self.cluster_name,
            "kubeconfig": self.kubeconfig,
            "oidc_issuer_url": self.oidc_issuer_url,
            "node_resource_group": self.managed_cluster.node_resource_group,
            "gpu_pools": [p.name for p in self.gpu_pools],
            "agent_pool_names": {n: c.agent_pool_name for n, c in self.node_pools.items()},
            "key_vault_id": self.key_vault.id if self.key_vault is not None else None,
        })

    def _secrets_encryption(self, name: str, args: dict[str, Any], group_name: Any, client: Any,
                            tags: dict[str, str], opts: Optional[pulumi.ResourceOptions]) -> Optional[dict[str, Any]]:
        """The key vault, key and role assignment of KMS, and the ``azure_key_vault_kms`` profile (None when
        ``secrets_encryption`` is false: none of them exist)."""
        self.key_vault, self.kms_key, self.kms_role = None, None, None
        if not args.get("secrets_encryption", True):
            return None
        # AKS supports deleting none of the three: Secrets written under KMS stay encrypted with the key after KMS is
        # turned off, until they are rewritten (AKS KMS how-to). Removing them from the stack leaves them in Azure.
        def kept() -> pulumi.ResourceOptions:
            return child_opts(self, opts, retain_on_delete=True)

        vault_name = pulumi.Output.all(client.subscription_id, group_name).apply(
            lambda values: key_vault_name(name, values[0], values[1]))
        self.key_vault = keyvault.Vault(
            f"{name}-kms-vault",
            resource_group_name=group_name,
            location=args["location"],
            vault_name=vault_name,
            tags=tags,
            properties={
                "tenant_id": client.tenant_id,
                "sku": {"family": "A", "name": "standard"},
                # Azure RBAC decides who may use the key (the cluster identity's role below), not access policies.
                "enable_rbac_authorization": True,
                # Losing the key makes every Secret unreadable and AKS cannot recover (AKS KMS how-to): a deleted
                # vault or key stays recoverable for the retention period and cannot be purged before it ends.
                "enable_soft_delete": True,
                "soft_delete_retention_in_days": SOFT_DELETE_RETENTION_DAYS,
                "enable_purge_protection": True,
                # No firewall: AKS KMS does not support a vault limited to some networks (AKS KMS how-to).
                "network_acls": {"default_action": "Allow", "bypass": "AzureServices"},
            },
            opts=kept())
        self.kms_key = keyvault.Key(
            f"{name}-kms-key",
            resource_group_name=group_name,
            vault_name=self.key_vault.name,
            key_name=KMS_KEY_NAME,
            properties=KMS_KEY_PROPERTIES,
            opts=kept())
        self.kms_role = _role_assignment(f"{name}-kms-crypto-user", self.identity, KEY_VAULT_CRYPTO_USER_ROLE,
                                         self.key_vault.id, client, kept())
        # The versioned URI: the KMS plugin needs the key version (`specs.kms_profile`).
        return kms_profile(self.kms_key.key_uri_with_version)


def _role_assignment(name: str, identity: Any, role_guid: str, scope: pulumi.Input[str], client: Any,
                     opts: pulumi.ResourceOptions) -> "authorization.RoleAssignment":
    """The built-in role ``role_guid`` for the cluster's user-assigned identity on ``scope``."""
    return authorization.RoleAssignment(
        name,
        principal_id=identity.principal_id,
        principal_type="ServicePrincipal",
        role_definition_id=client.subscription_id.apply(
            lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{role_guid}"),
        scope=scope,
        opts=opts)


def cluster_from_config(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> ClusterHandle:
    """The AKS cluster of a stack: `AksCluster` built from the validated `PlatformConfig`."""
    options: AzureClusterOptions = config.cluster_options
    driver = gpu_driver(config.gpu_software)
    # The same entries a program gets from `pool_args("azure", entry)`, plus what only the stack knows.
    pools: list[AksGpuNodePoolArgs] = [
        {**pool_args(pool_config, pool),  # type: ignore[typeddict-item]
         "gpu_driver": GPU_DRIVER_NONE if pool.vendor == catalog.AMD else driver}
        for pool_config, pool in zip(config.node_pools, config.gpu_pools(), strict=True)
    ]
    cluster_args = AksClusterArgs(
        location=config.region, kubernetes_version=config.kubernetes_version, os_sku=options.os_sku,
        api_allowed_cidrs=list(options.control_plane.api_allowed_cidrs),
        secrets_encryption=options.control_plane.secrets_encryption,
        admin_group_object_ids=list(options.admin_group_object_ids),
        pod_cidr=options.pod_cidr, service_cidr=options.service_cidr, dns_service_ip=options.dns_service_ip,
        system_pool_vm_size=options.system_pool_vm_size, system_pool_min_nodes=options.system_pool_min_nodes,
        system_pool_max_nodes=options.system_pool_max_nodes, sku_tier=options.sku_tier, gpu_pools=pools,
        auto_scaler_profile=aks_auto_scaler_profile(GpuScalingProfile(
            config.autoscaling.scale_down_unneeded_minutes, config.autoscaling.max_node_provision_minutes)),
        tags={"gpu-platform-stack": config.stack},
        maintenance_window=window_as_args(config.maintenance),
    )
    if options.vnet_subnet_id is None:  # the address ranges of a new VNet only
        cluster_args.update(vnet_address_space=options.vnet_address_space,
                            subnet_address_prefix=options.subnet_address_prefix)
    if any(pool.rdma_fabric == catalog.INFINIBAND for pool in config.gpu_pools()):
        cluster_args["register_infiniband_feature"] = options.register_infiniband_feature
    for key in ("resource_group_name", "cluster_name", "vnet_subnet_id"):
        if getattr(options, key) is not None:
            cluster_args[key] = getattr(options, key)  # type: ignore[literal-required]
    if config.storage.buckets:
        cluster_args["blob_csi_driver"] = True
    cluster = AksCluster(name, cluster_args, opts=opts)
    storage = {"storage": storage_from_config(name, config, cluster, opts)} if config.storage.enabled else {}
    return ClusterHandle(
        cloud="azure",
        cluster_name=cluster.cluster_name,
        kubeconfig=cluster.kubeconfig,
        provider=cluster.provider,
        pools=cluster.gpu_pools,
        node_pool_ids={n: c.agent_pool_id for n, c in cluster.node_pools.items()},
        outputs={
            "resourceGroupName": cluster.resource_group_name,
            "oidcIssuerUrl": cluster.oidc_issuer_url,
            "nodeResourceGroup": cluster.managed_cluster.node_resource_group,
            # `kube.amd.AmdGpuStack`'s driver_image: where the AMD GPU Operator pushes the driver it builds.
            **({"amd_driver_image": options.amd_driver_image} if options.amd_driver_image else {}),
            **storage,
        },
        # The managed cluster carries the System pool the platform's services run on.
        ready=[cluster.managed_cluster, *(c.agent_pool for c in cluster.node_pools.values())],
    )
