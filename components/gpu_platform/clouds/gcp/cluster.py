"""Google Cloud: a GKE Standard cluster (`GkeCluster`) and its GPU / GPUDirect node pools (`GkeGpuNodePool`).

`cluster_from_config` builds both from a validated `PlatformConfig`; the decisions live in pure modules
(``gcp_options``, ``gcp_pools``, ``gcp_networks``) and are unit-tested there. Property names and values are those
of pulumi_gcp 10.2.0 (``container.Cluster``, ``container.NodePool``, ``compute.*``).
"""

from dataclasses import replace
from typing import Any, Optional, TypedDict

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ... import catalog
from ...config import PlatformConfig
from ...kube.common import child_opts, metadata
from ...pools import GpuPool, GpuPoolSpec
from ..autoscaler_profile import GKE_PROFILE, gke_cluster_autoscaling
from ..handle import ClusterHandle
from . import networks as gcp_networks
from . import options as gcp_options
from . import pools as gcp_pools

# ---------------------------------------------------------------------------------------------------------
# Arguments


class GpuSubnetSpec(TypedDict):
    """One GPU NIC subnet; its name is also the Kubernetes ``Network`` pods attach."""

    name: str
    """Kubernetes network name (``vpc1``, ``gvnic-1``, ``rdma-0``); the GCE subnet is ``<cluster>-<name>-sub``."""
    cidr: str
    """Primary range of the subnet."""
    device_mode: str
    """``GKENetworkParamSet`` deviceMode: ``NetDevice`` (gVNIC) or ``RDMA``."""


class GpuVpcSpec(TypedDict, total=False):
    """One extra VPC for GPU NICs (see ``gcp_networks.plan_networks``)."""

    key: str
    """Suffix of the VPC name (``vpc1``, ``gvnic-1``, ``rdma``); the network is ``<cluster>-<key>-net``."""
    mtu: int
    """MTU: 8244 for TCPX/TCPXO VPCs, 8896 for A3 Ultra's."""
    roce_zone: str
    """Zone of the RoCE network profile for an RDMA VPC; empty for a gVNIC VPC."""
    subnets: list[GpuSubnetSpec]
    """The VPC's subnets."""


class GkeClusterArgs(TypedDict, total=False):
    """Arguments of `GkeCluster`. Only ``region`` is required."""

    region: Required[str]
    """Region of the cluster, its subnetwork and the GPU NIC subnets."""
    project: Optional[pulumi.Input[str]]
    """Project ID. Default: the provider's project."""
    zone: Optional[str]
    """Make a zonal cluster in this zone. Default: a regional cluster (control plane replicated across zones)."""
    cluster_name: str
    """GKE cluster name. Default: derived from the component name."""
    kubernetes_version: str
    """Minimum control-plane version (a minor such as ``1.34``); the release channel upgrades from there."""
    release_channel: str
    """``RAPID``, ``REGULAR`` (default), ``STABLE`` or ``EXTENDED``."""
    network: Optional[pulumi.Input[str]]
    """Existing VPC (name or self link). Default: a new VPC, subnetwork and (with private nodes) Cloud NAT."""
    subnetwork: Optional[pulumi.Input[str]]
    """Existing subnetwork with the Pod and Service secondary ranges; required with ``network``."""
    pods_range_name: str
    """Secondary range name for Pods. Default: ``pods``."""
    services_range_name: str
    """Secondary range name for Services. Default: ``services``."""
    node_cidr: str
    """Primary range of a new subnetwork. Default: ``10.0.0.0/20``."""
    pod_cidr: str
    """Pod secondary range of a new subnetwork. Default: ``10.4.0.0/14``."""
    service_cidr: str
    """Service secondary range of a new subnetwork. Default: ``10.8.0.0/20``."""
    private_nodes: bool
    """Nodes without external IPs. Default: true."""
    system_machine_type: str
    """Machine type of the system (CPU) pool. Default: ``e2-standard-4``."""
    system_min_nodes: int
    """Minimum system nodes (whole pool). Default: 1."""
    system_max_nodes: int
    """Maximum system nodes (whole pool). Default: 3."""
    system_disk_size_gb: int
    """Boot disk of the system nodes. Default: 100."""
    node_service_account: Optional[pulumi.Input[str]]
    """Service account email of the nodes. Default: a new account with GKE's least-privilege node roles."""
    managed_dcgm: bool
    """Turn on GKE-managed DCGM GPU metrics (needs GKE's driver and device plugin). Default: false."""
    multi_networking: bool
    """GKE multi-networking (needed for extra GPU NICs). Default: true when ``gpu_networks`` is not empty."""
    gpu_networks: list[GpuVpcSpec]
    """Extra VPCs for GPUDirect NICs, plus their in-cluster ``GKENetworkParamSet``/``Network`` objects."""
    gpu_network_cidr: str
    """Range the GPU NIC subnets come from (allowed by the gVNIC VPCs' internal firewall rule)."""
    deletion_protection: bool
    """GKE deletion protection. Default: true."""
    autoscaling_profile: str
    """Cluster autoscaler profile: ``BALANCED`` (default; spare GPU nodes are kept longer, which slow-starting
    GPU nodes need) or ``OPTIMIZE_UTILIZATION``. Node auto-provisioning stays off."""


class AdditionalNodeNetwork(TypedDict):
    """One extra NIC of a node: the VPC and subnet it attaches to."""

    network: pulumi.Input[str]
    """VPC name."""
    subnetwork: pulumi.Input[str]
    """Subnetwork name."""


class GkeGpuNodePoolArgs(TypedDict, total=False):
    """Arguments of `GkeGpuNodePool`: the cloud-neutral pool, then where and how GKE runs it."""

    pool: Required[GpuPoolSpec]
    """The pool (name, machine type, GPUs, sharing, labels, taints, sizes)."""
    cluster: Required[pulumi.Input[str]]
    """Cluster ID or name."""
    location: Required[pulumi.Input[str]]
    """Cluster location (region or zone)."""
    project: Optional[pulumi.Input[str]]
    """Project ID. Default: the provider's project."""
    node_locations: list[str]
    """Zones of the nodes. Default: the cluster's node zones."""
    zone_count: int
    """Zones the pool spans when ``node_locations`` is empty (1 on a zonal cluster, 3 on a regional one)."""
    desired_nodes: Optional[int]
    """Initial size of the whole pool. Default: ``min_nodes``."""
    accelerator_type: str
    """GCE accelerator type. Default: the machine type's own (required for N1 machine types)."""
    gpu_driver_version: str
    """``DEFAULT``, ``LATEST`` or ``INSTALLATION_DISABLED`` (the GPU Operator installs it). Default: ``DEFAULT``."""
    gke_sharing: bool
    """GKE's device plugin shares GPUs (``gpu_sharing_config`` for time-slicing/MPS). Default: true."""
    gke_partitioning: bool
    """GKE creates the MIG partitions (``gpu_partition_size``). Default: true."""
    disable_gke_device_plugin: bool
    """Label the nodes so GKE's device plugin stays off (NVIDIA's runs instead). Default: false."""
    image_type: str
    """``COS_CONTAINERD`` (default) or ``UBUNTU_CONTAINERD``."""
    service_account: Optional[pulumi.Input[str]]
    """Node service account email. Default: the Compute Engine default account."""
    reservation_affinity: Optional[str]
    """``NO_RESERVATION``, ``ANY_RESERVATION``, ``SPECIFIC_RESERVATION`` or ``ANY_RESERVATION_THEN_FAIL``."""
    reservations: list[str]
    """Reservation names for ``SPECIFIC_RESERVATION``."""
    compact_placement: bool
    """COMPACT placement policy. Default: true for RDMA pools."""
    placement_policy_name: Optional[str]
    """An existing compact resource policy."""
    additional_networks: list[AdditionalNodeNetwork]
    """Extra NICs (GPUDirect), in interface order (eth1 first)."""
    disk_size_gb: int
    """Boot disk size. Default: 200."""
    disk_type: Optional[str]
    """Boot disk type. Default: GKE's choice for the machine type."""


def _get(args: dict, key: str, default: Any = None) -> Any:
    value = args.get(key)
    return default if value is None else value


# ---------------------------------------------------------------------------------------------------------
# GkeCluster


class GkeCluster(pulumi.ComponentResource):
    """A GKE Standard cluster for GPU work: VPC-native with Dataplane V2 and Workload Identity, the default pool
    replaced by a small system pool, and (for GPUDirect) the extra NIC VPCs with multi-networking and the
    in-cluster ``GKENetworkParamSet``/``Network`` objects pods attach them by."""

    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, args: GkeClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("gpuplatform:index:GkeCluster", name, {}, opts)
        self._opts = opts
        region = args["region"]
        zone = args.get("zone")
        self.location = zone or region
        self.project: pulumi.Output[str] = pulumi.Output.from_input(args["project"]) if args.get("project") else (
            gcp.organizations.get_client_config_output(opts=pulumi.InvokeOptions(parent=self)).project)
        cluster_name = _get(args, "cluster_name", gcp_pools.resource_name(name))
        prefix = gcp_pools.resource_name(cluster_name, 30)
        gpu_networks = list(_get(args, "gpu_networks", []))
        pods_range = _get(args, "pods_range_name", "pods")
        services_range = _get(args, "services_range_name", "services")

        network_ref, subnetwork_ref = self._node_network(name, prefix, region, args, pods_range, services_range)
        self._node_identity(name, prefix, cluster_name, args)
        self._gpu_vpcs(name, prefix, region, gpu_networks, _get(args, "gpu_network_cidr", "192.168.0.0/16"))

        managed_dcgm = _get(args, "managed_dcgm", False)
        multi_networking = _get(args, "multi_networking", bool(gpu_networks))
        self.cluster = gcp.container.Cluster(
            f"{name}-cluster",
            name=cluster_name,
            project=self.project,
            location=self.location,
            network=network_ref,
            subnetwork=subnetwork_ref,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy={"cluster_secondary_range_name": pods_range,
                                  "services_secondary_range_name": services_range},
            # Dataplane V2: network policy enforcement, and a precondition of multi-networking.
            datapath_provider="ADVANCED_DATAPATH",
            enable_multi_networking=True if multi_networking else None,
            release_channel={"channel": _get(args, "release_channel", "REGULAR")},
            min_master_version=args.get("kubernetes_version"),
            workload_identity_config={"workload_pool": self.project.apply(lambda p: f"{p}.svc.id.goog")},
            private_cluster_config={"enable_private_nodes": True, "enable_private_endpoint": False}
            if _get(args, "private_nodes", True) else None,
            monitoring_config={"enable_components": ["SYSTEM_COMPONENTS", "DCGM"],
                               "managed_prometheus": {"enabled": True}} if managed_dcgm else None,
            # The default pool is replaced by the system pool below; it still boots once, with our identity.
            remove_default_node_pool=True,
            initial_node_count=1,
            node_config={"service_account": self.node_service_account, "oauth_scopes": gcp_pools.OAUTH_SCOPES},
            deletion_protection=_get(args, "deletion_protection", True),
            cluster_autoscaling={**gke_cluster_autoscaling(),
                                 "autoscaling_profile": _get(args, "autoscaling_profile", GKE_PROFILE)},
            opts=self._child(*self.service_account_roles, *([self.nat] if self.nat else [])),
        )
        system_zones = 1 if zone else gcp_options.REGIONAL_DEFAULT_ZONES
        system_min = _get(args, "system_min_nodes", 1)
        self.system_pool = gcp.container.NodePool(
            f"{name}-system",
            name=gcp_options.SYSTEM_POOL_NAME,
            project=self.project,
            cluster=self.cluster.id,
            location=self.location,
            initial_node_count=max(1, -(-system_min // system_zones)),
            autoscaling={"total_min_node_count": system_min,
                         "total_max_node_count": _get(args, "system_max_nodes", 3)},
            management={"auto_repair": True, "auto_upgrade": True},
            node_config={
                "machine_type": _get(args, "system_machine_type", "e2-standard-4"),
                "disk_size_gb": _get(args, "system_disk_size_gb", 100),
                "image_type": "COS_CONTAINERD",
                "service_account": self.node_service_account,
                "oauth_scopes": gcp_pools.OAUTH_SCOPES,
                "workload_metadata_config": {"mode": "GKE_METADATA"},
                "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
            },
            opts=self._child(),
        )

        self.cluster_name = self.cluster.name
        self.endpoint = self.cluster.endpoint
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(
            self.cluster.name, self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate,
        ).apply(lambda a: gcp_pools.kubeconfig(a[0], a[1], a[2])))
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, enable_server_side_apply=True,
                                     opts=self._child())
        self._network_objects(name, gpu_networks)
        self.register_outputs({
            "cluster_name": self.cluster_name,
            "endpoint": self.endpoint,
            "kubeconfig": self.kubeconfig,
            "location": self.location,
        })

    def _child(self, *depends_on: Any, **extra: Any) -> pulumi.ResourceOptions:
        return child_opts(self, self._opts, list(depends_on), **extra)

    def _node_network(self, name: str, prefix: str, region: str, args: GkeClusterArgs, pods_range: str,
                      services_range: str) -> tuple[pulumi.Input[str], pulumi.Input[str]]:
        """The given network, or a new VPC-native subnetwork with Pod/Service ranges (+ Cloud NAT for private
        nodes, which have no external IPs but must pull images)."""
        self.network: Optional[gcp.compute.Network] = None
        self.subnetwork: Optional[gcp.compute.Subnetwork] = None
        self.router: Optional[gcp.compute.Router] = None
        self.nat: Optional[gcp.compute.RouterNat] = None
        if args.get("network"):
            return args["network"], args["subnetwork"]
        self.network = gcp.compute.Network(
            f"{name}-vpc", name=f"{prefix}-vpc", project=self.project, auto_create_subnetworks=False,
            routing_mode="REGIONAL", opts=self._child())
        self.subnetwork = gcp.compute.Subnetwork(
            f"{name}-subnet", name=f"{prefix}-nodes", project=self.project, region=region,
            network=self.network.id, ip_cidr_range=_get(args, "node_cidr", "10.0.0.0/20"),
            private_ip_google_access=True,
            secondary_ip_ranges=[
                {"range_name": pods_range, "ip_cidr_range": _get(args, "pod_cidr", "10.4.0.0/14")},
                {"range_name": services_range, "ip_cidr_range": _get(args, "service_cidr", "10.8.0.0/20")},
            ],
            opts=self._child())
        if _get(args, "private_nodes", True):
            self.router = gcp.compute.Router(
                f"{name}-router", name=f"{prefix}-router", project=self.project, region=region,
                network=self.network.id, opts=self._child())
            self.nat = gcp.compute.RouterNat(
                f"{name}-nat", name=f"{prefix}-nat", project=self.project, region=region,
                router=self.router.name, nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES", opts=self._child())
        return self.network.self_link, self.subnetwork.self_link

    def _node_identity(self, name: str, prefix: str, cluster_name: str, args: GkeClusterArgs) -> None:
        """The nodes' service account: the given one, or a new one with GKE's least-privilege node roles."""
        self.service_account: Optional[gcp.serviceaccount.Account] = None
        self.service_account_roles: list[gcp.projects.IAMMember] = []
        if args.get("node_service_account"):
            self.node_service_account: pulumi.Output[str] = pulumi.Output.from_input(args["node_service_account"])
            return
        self.service_account = gcp.serviceaccount.Account(
            f"{name}-nodes", account_id=gcp_pools.resource_name(f"{prefix}-nodes", 30), project=self.project,
            display_name=f"GKE nodes of {cluster_name}", opts=self._child())
        self.node_service_account = self.service_account.email
        member = self.service_account.email.apply(lambda email: f"serviceAccount:{email}")
        self.service_account_roles = [
            gcp.projects.IAMMember(f"{name}-nodes-{role.split('/')[-1].replace('.', '-')}", project=self.project,
                                   role=role, member=member, opts=self._child())
            for role in gcp_pools.NODE_SERVICE_ACCOUNT_ROLES
        ]

    def _gpu_vpcs(self, name: str, prefix: str, region: str, gpu_networks: list[GpuVpcSpec], gpu_cidr: str) -> None:
        """GPUDirect NIC VPCs: a subnet per GPU NIC network; gVNIC VPCs allow traffic among the GPU subnets."""
        self.gpu_networks: dict[str, gcp.compute.Network] = {}
        self.gpu_subnetworks: dict[str, gcp.compute.Subnetwork] = {}
        self.gpu_firewalls: list[gcp.compute.Firewall] = []
        for vpc in gpu_networks:
            roce_zone = vpc.get("roce_zone") or ""
            profile = self.project.apply(lambda p, z=roce_zone: gcp_networks.roce_network_profile(p, z))
            network = gcp.compute.Network(
                f"{name}-{vpc['key']}-net", name=f"{prefix}-{vpc['key']}-net", project=self.project,
                auto_create_subnetworks=False, mtu=vpc["mtu"], routing_mode="REGIONAL",
                network_profile=profile if roce_zone else None, opts=self._child())
            self.gpu_networks[vpc["key"]] = network
            for subnet in vpc["subnets"]:
                self.gpu_subnetworks[subnet["name"]] = gcp.compute.Subnetwork(
                    f"{name}-{subnet['name']}-sub", name=f"{prefix}-{subnet['name']}-sub", project=self.project,
                    region=region, network=network.id, ip_cidr_range=subnet["cidr"], opts=self._child())
            if not roce_zone:
                self.gpu_firewalls.append(gcp.compute.Firewall(
                    f"{name}-{vpc['key']}-internal", name=f"{prefix}-{vpc['key']}-internal", project=self.project,
                    network=network.id, direction="INGRESS", source_ranges=[gpu_cidr],
                    allows=[{"protocol": "tcp", "ports": ["0-65535"]}, {"protocol": "udp", "ports": ["0-65535"]},
                            {"protocol": "icmp"}],
                    opts=self._child()))

    def _network_objects(self, name: str, gpu_networks: list[GpuVpcSpec]) -> None:
        """A ``GKENetworkParamSet`` + ``Network`` per GPU NIC subnet (CRDs GKE installs with multi-networking)."""
        self.network_objects: list[k8s.apiextensions.CustomResource] = []
        for vpc in gpu_networks:
            for spec in vpc["subnets"]:
                subnet = gcp_networks.GpuSubnet(spec["name"], spec["cidr"], spec["device_mode"])
                params = k8s.apiextensions.CustomResource(
                    f"{name}-{subnet.name}-params",
                    api_version=gcp_networks.API_VERSION,
                    kind="GKENetworkParamSet",
                    metadata=metadata(subnet.name),
                    spec=gcp_networks.network_param_set(
                        subnet, self.gpu_networks[vpc["key"]].name, self.gpu_subnetworks[subnet.name].name),
                    opts=self._child(self.cluster, provider=self.provider),
                )
                network_object = k8s.apiextensions.CustomResource(
                    f"{name}-{subnet.name}-network",
                    api_version=gcp_networks.API_VERSION,
                    kind="Network",
                    metadata=metadata(subnet.name),
                    spec=gcp_networks.network_spec(subnet),
                    opts=self._child(params, provider=self.provider),
                )
                self.network_objects += [params, network_object]

    def attachments(self, subnets: tuple[tuple[str, str], ...]) -> list[AdditionalNodeNetwork]:
        """``additional_networks`` for a pool attaching ``subnets`` = ((VPC key, subnet name), ...)."""
        return [AdditionalNodeNetwork(network=self.gpu_networks[vpc].name, subnetwork=self.gpu_subnetworks[sub].name)
                for vpc, sub in subnets]


# ---------------------------------------------------------------------------------------------------------
# GkeGpuNodePool


class GkeGpuNodePool(pulumi.ComponentResource):
    """One GPU node pool: accelerators and driver from the catalog, the GPU taint and the platform's labels set
    explicitly, GKE sharing/MIG when GKE runs the device plugin, autoscaling, Spot, reservations, and COMPACT
    placement plus the extra GPU NICs for GPUDirect pools."""

    node_pool_id: pulumi.Output[str]
    node_pool_name: pulumi.Output[str]

    def __init__(self, name: str, args: GkeGpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("gpuplatform:index:GkeGpuNodePool", name, {}, opts)
        self.pool = GpuPool.from_spec(args["pool"])
        pool = self.pool
        zones = list(_get(args, "node_locations", []))
        accelerator = gcp_pools.accelerator_type(pool, _get(args, "accelerator_type", ""))
        node_config: dict[str, Any] = {
            "machine_type": pool.instance_type,
            "image_type": _get(args, "image_type", "COS_CONTAINERD"),
            "disk_size_gb": _get(args, "disk_size_gb", 200),
            "disk_type": args.get("disk_type"),
            "guest_accelerators": [gcp_pools.guest_accelerator(
                pool, accelerator, _get(args, "gpu_driver_version", gcp_options.DEFAULT_DRIVER_VERSION),
                _get(args, "gke_sharing", True), _get(args, "gke_partitioning", True))],
            "taints": gcp_pools.taints(pool),
            "labels": gcp_pools.node_labels(pool, _get(args, "disable_gke_device_plugin", False)),
            "spot": pool.spot or None,
            "reservation_affinity": gcp_pools.reservation_affinity(
                args.get("reservation_affinity"), tuple(_get(args, "reservations", []))),
            "service_account": args.get("service_account"),
            "oauth_scopes": gcp_pools.OAUTH_SCOPES,
            # gVNIC: required for the extra GPU NICs, and the faster virtual NIC on every GPU machine.
            "gvnic": {"enabled": True},
            "workload_metadata_config": {"mode": "GKE_METADATA"},
        }
        networks = list(_get(args, "additional_networks", []))
        self.node_pool = gcp.container.NodePool(
            f"{name}-pool",
            name=pool.name,  # a DNS label of at most 40 characters (checked in gcp_options)
            project=args.get("project"),
            cluster=args["cluster"],
            location=args["location"],
            node_locations=zones or None,
            initial_node_count=gcp_pools.initial_node_count(
                pool, args.get("desired_nodes"), len(zones) or _get(args, "zone_count", 1)),
            autoscaling=gcp_pools.autoscaling(pool),
            management={"auto_repair": True, "auto_upgrade": True},
            placement_policy=gcp_pools.placement_policy(
                _get(args, "compact_placement", bool(pool.rdma_fabric)), args.get("placement_policy_name")),
            network_config={"additional_node_network_configs": [
                {"network": n["network"], "subnetwork": n["subnetwork"]} for n in networks]} if networks else None,
            node_config={k: v for k, v in node_config.items() if v is not None},
            # GPU quota and reservations rarely hold two copies of a pool: replace by deleting first.
            opts=child_opts(self, opts, delete_before_replace=True),
        )
        self.node_pool_id = self.node_pool.id
        self.node_pool_name = self.node_pool.name
        self.register_outputs({"node_pool_id": self.node_pool_id, "node_pool_name": self.node_pool_name})


# ---------------------------------------------------------------------------------------------------------
# From configuration


def _rdma_pools(config: PlatformConfig, options: gcp_options.GcpClusterOptions) -> list[tuple[str, str, int, Any]]:
    out = []
    for pool in config.node_pools:
        shape = catalog.SHAPES.get(("gcp", pool.instance_type))
        if pool.rdma and shape is not None and shape.rdma_fabric in gcp_networks.PROFILES:
            zones = gcp_options.pool_zones(pool, options)
            out.append((pool.name, shape.rdma_fabric, shape.rdma_interfaces, zones[0] if zones else None))
    return out


def network_plan(config: PlatformConfig) -> gcp_networks.GpuNetworkPlan:
    """The extra GPU NIC networks a configuration needs (empty without GPUDirect pools)."""
    options = config.cluster_options or gcp_options.GcpClusterOptions()
    return gcp_networks.plan_networks(_rdma_pools(config, options), options.gpu_network_cidr)


def _vpc_spec(vpc: gcp_networks.GpuVpc) -> GpuVpcSpec:
    return GpuVpcSpec(key=vpc.key, mtu=vpc.mtu, roce_zone=vpc.roce_zone or "",
                      subnets=[GpuSubnetSpec(name=s.name, cidr=s.cidr, device_mode=s.device_mode) for s in vpc.subnets])


def cluster_from_config(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> ClusterHandle:
    """A GKE cluster, its GPU pools and GPUDirect networks from the stack configuration."""
    options: gcp_options.GcpClusterOptions = config.cluster_options or gcp_options.GcpClusterOptions()
    plan = network_plan(config)
    system = options.system_pool
    cluster = GkeCluster(name, GkeClusterArgs(
        region=config.region,
        project=options.project,
        zone=options.zone,
        cluster_name=gcp_pools.resource_name(name),
        kubernetes_version=config.kubernetes_version,
        release_channel=options.release_channel,
        network=options.network,
        subnetwork=options.subnetwork,
        pods_range_name=options.pods_range_name,
        services_range_name=options.services_range_name,
        node_cidr=options.node_cidr,
        pod_cidr=options.pod_cidr,
        service_cidr=options.service_cidr,
        private_nodes=options.private_nodes,
        system_machine_type=system.machine_type,
        system_min_nodes=system.min_nodes,
        system_max_nodes=system.max_nodes,
        system_disk_size_gb=system.disk_size_gb,
        node_service_account=options.node_service_account,
        managed_dcgm=options.managed_dcgm,
        multi_networking=plan.multi_networking,
        gpu_networks=[_vpc_spec(v) for v in plan.vpcs],
        gpu_network_cidr=options.gpu_network_cidr,
        deletion_protection=options.deletion_protection,
    ), opts)

    software = config.gpu_software
    pools: list[GpuPool] = []
    components: list[GkeGpuNodePool] = []
    for pool_config, pool in zip(config.node_pools, config.gpu_pools(), strict=True):
        attach = plan.attachments.get(pool.name, ())
        if attach:
            pool = replace(pool, rdma_pod_annotations=tuple(sorted(gcp_networks.pod_annotations(attach).items())))
        pools.append(pool)
        pool_options: gcp_options.GcpPoolOptions = pool_config.cloud_options or gcp_options.GcpPoolOptions()
        components.append(GkeGpuNodePool(f"{name}-{pool.name}", GkeGpuNodePoolArgs(
            pool=pool.spec(),
            cluster=cluster.cluster.id,
            location=cluster.location,
            project=cluster.project,
            node_locations=list(gcp_options.pool_zones(pool_config, options)),
            zone_count=gcp_options.zone_count(pool_config, options),
            desired_nodes=pool_config.desired_nodes,
            accelerator_type=pool_config.accelerator,
            gpu_driver_version=gcp_options.driver_version(pool_options, software),
            gke_sharing=gcp_options.managed_sharing(software),
            gke_partitioning=gcp_options.managed_partitioning(software),
            disable_gke_device_plugin=gcp_options.disables_gke_device_plugin(software),
            image_type=gcp_options.image_type(pool_options, software),
            service_account=pool_options.service_account or cluster.node_service_account,
            reservation_affinity=pool_options.reservation_affinity,
            reservations=list(pool_options.reservations),
            compact_placement=gcp_options.compact_placement(pool_config),
            placement_policy_name=pool_options.placement_policy_name,
            additional_networks=cluster.attachments(attach),
            disk_size_gb=pool_options.disk_size_gb,
            disk_type=pool_options.disk_type,
        ), opts=opts))

    outputs: dict[str, Any] = {
        "project": cluster.project,
        "location": cluster.location,
        "endpoint": cluster.endpoint,
        "network": cluster.network.name if cluster.network else options.network,
        "subnetwork": cluster.subnetwork.name if cluster.subnetwork else options.subnetwork,
        "node_service_account": cluster.node_service_account,
        "multi_networking": plan.multi_networking,
        "gpu_networks": [s.name for v in plan.vpcs for s in v.subnets],
        "managed_dcgm": options.managed_dcgm,
    }
    if gcp_options.software_installs_driver(software):
        outputs["driver_install_dir"] = gcp_pools.GKE_DRIVER_INSTALL_DIR
    return ClusterHandle(
        cloud="gcp",
        cluster_name=cluster.cluster_name,
        kubeconfig=cluster.kubeconfig,
        provider=cluster.provider,
        pools=pools,
        node_pool_ids={c.pool.name: c.node_pool_id for c in components},
        outputs=outputs,
        ready=[cluster.system_pool, *(c.node_pool for c in components), *cluster.network_objects],
    )
