"""Configuration keys of the GKE layer (``cloud: gcp``), parsed and validated without the cloud SDK.

Cluster keys (top level of the stack's ``gpu-platform`` namespace) and pool keys (in each ``nodePools`` entry)
become `GcpClusterOptions` / `GcpPoolOptions`. Rules that need the whole configuration (software mode, zones
of every pool) run in `parse_cluster_options`, which sees every pool, so each error still names its field.

The control-plane keys every managed cloud shares (``apiAllowedCidrs``, ``secretsEncryption``) are parsed by
`gpu_platform.control_plane` into ``GcpClusterOptions.control_plane``: on GKE an empty ``apiAllowedCidrs`` (the
default) turns the public IP endpoint off, a list of CIDRs keeps it with authorized networks limited to them, and
``secretsEncryption`` (default true) turns on application-layer Secrets encryption with a Cloud KMS key the
cluster creates.

Grace-Blackwell racks (``a4x-highgpu-4g``: arm64, 4 GB200 per VM, 18 VMs per 72-GPU NVLink domain) shape several
rules. Their pools are DRA pools (`gpu_allocation`), so the stack runs the GPU Operator, and GKE must not install a
driver or run its device plugin there ("Prepare GKE infrastructure for DRA workloads",
docs.cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra: ``gpu-driver-version=disabled``, the node labels
``gke-no-default-nvidia-gpu-device-plugin=true`` and ``nvidia.com/gpu.present=true``; time-sharing, MIG and MPS
excluded). A stack with such a pool runs its GPU pools on COS with Google's COS driver installer
(`google_driver_installer`) rather than on Ubuntu with the operator's driver container: every A4X source runs COS
(GoogleCloudPlatform/cluster-toolkit ``examples/gke-a4x``, NVIDIA AI Cluster Runtime's ``gb200-gke-cos-*`` recipes),
none shows the operator's driver container on GKE's arm64 Ubuntu, GKE's DRA page installs the COS installer itself,
and GPUDirect-RDMA's NCCL plugin expects the driver where that installer puts it (/home/kubernetes/bin/nvidia).
A4X is sold through reservations only (Compute Engine "GPU machine types": "When provisioning A4X instances, you
must reserve capacity"), so its pools are ``provisioning: reservation`` with their ``reservation``.

How a pool's VMs are bought (``nodePools[].provisioning``, `gpu_platform.provisioning`) sets GKE node pool inputs
(`capacity_problem` holds the rules GKE imposes, `gcp_pools` the inputs):

- ``reservation``: ``reservation_affinity`` ``SPECIFIC_RESERVATION`` with key
  ``compute.googleapis.com/reservation-name`` and the pool's ``reservation`` (``name`` or
  ``name/reservationBlocks/block``).
- ``spot``: ``node_config.spot``, ``NO_RESERVATION``, autoscaling location policy ``ANY``.
- ``flex-start`` (Dynamic Workload Scheduler, "About GPU obtainability with flex-start"):
  ``node_config.flex_start``, ``NO_RESERVATION``, location policy ``ANY``, no auto-repair; an autoscaled pool (not
  a fixed size), not Spot, and COMPACT only on A3 Ultra, A4 and H4D (cluster-toolkit
  ``modules/compute/gke-node-pool`` preconditions).
- ``queued`` ("Run a large-scale workload with flex-start with queued provisioning"): flex-start plus
  ``queued_provisioning.enabled``; total minimum 0, ``NO_RESERVATION``, no COMPACT placement, no auto-repair, no
  auto-upgrade (cluster-toolkit ``dws-flex-start-queued-provisioning`` blueprint); GKE taints the nodes
  ``cloud.google.com/gke-queued=true:NoSchedule``, which the pool's workloads tolerate (`gcp_pools.with_cloud_taints`).
- ``on-demand``: ``reservationAffinity`` (``NO_RESERVATION``, ``ANY_RESERVATION``, ``ANY_RESERVATION_THEN_FAIL``)
  still chooses whether the VMs may use matching reservations.
"""

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from ... import catalog, control_plane, provisioning
from ...cidrs import CidrRule
from ...fields import ConfigError, as_mapping, check_keys, join, read_bool, read_enum, read_int, read_str
from ...pools import DRA
from ..common_options import ManagedClusterOptions, entry_args, read_matching
from . import upgrade as gcp_upgrade
from .pools import DWS_MODES, FLEX_START_COMPACT_MACHINES, nvlink_topology
from .storage_options import check_stack_storage
from .storage_options import check_storage as check_storage  # the stack parser's GKE ``storage`` rules

CLUSTER_KEYS = {
    "project", "zone", "releaseChannel", "network", "subnetwork", "podsRangeName", "servicesRangeName",
    "nodeCidr", "podCidr", "serviceCidr", "gpuNetworkCidr", "privateNodes", "systemPool", "nodeServiceAccount",
    "deletionProtection", "managedDcgm", "proxyOnlyCidr", *control_plane.KEYS,
}
POOL_KEYS = {
    "gpuDriverVersion", "imageType", "reservationAffinity", "compactPlacement",
    "placementPolicyName", "diskSizeGb", "diskType", "serviceAccount", "tpuTopology",
}
RENAMED_POOL_KEYS = {
    "reservations": "provisioning: reservation with reservation: <name> (or <name>/reservationBlocks/<block>)",
}
"""Pool keys of earlier releases and what replaced them (refused before the unknown-key check, naming the new keys)."""
SYSTEM_POOL_KEYS = {"machineType", "minNodes", "maxNodes", "diskSizeGb"}

RELEASE_CHANNELS = ("RAPID", "REGULAR", "STABLE", "EXTENDED")
DEFAULT_PROXY_ONLY_CIDR = "10.9.0.0/23"
"""The proxy-only subnet of a new VPC: clear of the default node (10.0.0.0/20), Pod (10.4.0.0/14) and Service
(10.8.0.0/20) ranges; a /23, the size Google recommends (Cloud Load Balancing "Proxy-only subnets")."""
PROXY_ONLY_PREFIX_MAX = 26
"""The smallest proxy-only subnet Google accepts is a /26."""
PROXY_ONLY_CIDR = CidrRule(example=DEFAULT_PROXY_ONLY_CIDR, max_prefix=PROXY_ONLY_PREFIX_MAX,
                           sizes="a proxy-only subnet is a /26 or larger (a /23 is recommended)")
"""``proxyOnlyCidr`` / ``proxy_only_cidr``."""
GPU_NETWORK_PREFIX_MAX = 19
"""The GPU NIC subnets are 32 equal slots of ``gpuNetworkCidr``: a /19 gives /24s."""
GPU_NETWORK_CIDR = CidrRule(example="192.168.0.0/16", max_prefix=GPU_NETWORK_PREFIX_MAX,
                            sizes=f"GPU NIC subnets need a /{GPU_NETWORK_PREFIX_MAX} or larger")
"""``gpuNetworkCidr`` / ``gpu_network_cidr``."""
GPU_SUBNET_CIDR = CidrRule(example="192.168.0.0/24")
"""A GPU NIC subnet given to the cluster (``gpu_networks[].subnets[].cidr``)."""
# GPUDriverInstallationConfig.GPUDriverVersion values a pool may choose when GKE installs the driver.
# DEFAULT is the platform default: the driver GKE qualifies for the node version (cluster-toolkit's
# gke-node-pool defaults to it too); LATEST tracks newer drivers sooner, and newer drivers have broken
# GPUDirect-TCPX before (cluster-toolkit#3032), so it is an explicit opt-in per pool.
DRIVER_VERSIONS = ("DEFAULT", "LATEST")
DEFAULT_DRIVER_VERSION = "DEFAULT"
DRIVER_DISABLED = "INSTALLATION_DISABLED"
COS = "COS_CONTAINERD"
UBUNTU = "UBUNTU_CONTAINERD"
IMAGE_TYPES = (COS, UBUNTU)
RESERVATION_AFFINITIES = ("NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION", "ANY_RESERVATION_THEN_FAIL")
"""``reservation_affinity.consume_reservation_type`` values of pulumi_gcp 10.2.0; a pool gives one of them only when
on demand, and never ``SPECIFIC_RESERVATION`` (that is ``provisioning: reservation``)."""
SYSTEM_POOL_NAME = "system"
NODE_POOL_NAME_MAX = 40
# GKE spreads a regional cluster's nodes over three zones unless node locations are given.
REGIONAL_DEFAULT_ZONES = 3

PROJECT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]+$")
RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class SystemPoolOptions:
    """``systemPool``: the small CPU pool for cluster add-ons (GPU pools are tainted, so they need one)."""

    machine_type: str = "e2-standard-4"
    """Machine type of the system nodes."""
    min_nodes: int = 1
    """Minimum nodes in the whole pool (all zones)."""
    max_nodes: int = 3
    """Maximum nodes in the whole pool (all zones)."""
    disk_size_gb: int = 100
    """Boot disk size."""


@dataclass(frozen=True)
class GcpClusterOptions(ManagedClusterOptions):
    """GKE cluster settings."""

    project: Optional[str] = None
    """Project ID. Default: the provider's project (``gcp:project``)."""
    zone: Optional[str] = None
    """Make a zonal cluster in this zone. Default: a regional cluster in ``region``."""
    release_channel: str = "REGULAR"
    """``RAPID``, ``REGULAR``, ``STABLE`` or ``EXTENDED``."""
    network: Optional[str] = None
    """Existing VPC network (name or self link). Default: a new VPC."""
    subnetwork: Optional[str] = None
    """Existing subnetwork with the two secondary ranges; required with ``network``."""
    pods_range_name: str = "pods"
    """Secondary range for Pod IPs (created with a new subnetwork, looked up in a given one)."""
    services_range_name: str = "services"
    """Secondary range for Service IPs."""
    node_cidr: str = "10.0.0.0/20"
    """Primary range of a new subnetwork."""
    pod_cidr: str = "10.4.0.0/14"
    """Pod secondary range of a new subnetwork."""
    service_cidr: str = "10.8.0.0/20"
    """Service secondary range of a new subnetwork."""
    gpu_network_cidr: str = "192.168.0.0/16"
    """Range carved into the GPUDirect NIC subnets (32 equal slots)."""
    proxy_only_cidr: Optional[str] = None
    """``proxyOnlyCidr``: range of the region's proxy-only subnet (purpose ``REGIONAL_MANAGED_PROXY``), which the
    regional Gateway's load balancer proxies take their addresses from and which the services' NetworkPolicies admit.
    A new VPC gets the subnet (default ``10.9.0.0/23``, clear of the default node, Pod and Service ranges); with
    ``network`` it names the range of the network's existing proxy-only subnet (a region has one per VPC) and is
    required when the stack publishes a service. Refused when the stack has no Gateway."""
    private_nodes: bool = True
    """Nodes without external IPs (a Cloud NAT is added to a new VPC so they still reach registries)."""
    system_pool: SystemPoolOptions = field(default_factory=SystemPoolOptions)
    """The CPU pool for add-ons."""
    node_service_account: Optional[str] = None
    """Service account email of every node. Default: a new least-privilege account."""
    deletion_protection: bool = True
    """GKE deletion protection of the cluster."""
    managed_dcgm: bool = False
    """GKE-managed DCGM metrics (``monitoring_config`` component ``DCGM``). Default: on with ``cloud-managed``."""

    @property
    def regional(self) -> bool:
        return self.zone is None


NODE_CIDR = CidrRule(example=GcpClusterOptions.node_cidr)
"""``nodeCidr`` / ``node_cidr``: a new subnetwork's primary range."""
POD_CIDR = CidrRule(example=GcpClusterOptions.pod_cidr)
"""``podCidr`` / ``pod_cidr``."""
SERVICE_CIDR = CidrRule(example=GcpClusterOptions.service_cidr)
"""``serviceCidr`` / ``service_cidr``."""


@dataclass(frozen=True)
class GcpPoolOptions:
    """GKE settings of one GPU node pool."""

    gpu_driver_version: Optional[str] = None
    """``DEFAULT`` or ``LATEST`` when GKE installs the driver (None: ``DEFAULT``)."""
    image_type: Optional[str] = None
    """``COS_CONTAINERD`` or ``UBUNTU_CONTAINERD`` (None: COS, or Ubuntu when the GPU Operator's driver container
    installs the driver; COS in a GPU Operator stack with an arm64 pool, where Google's COS driver installer does)."""
    reservation_affinity: Optional[str] = None
    """``reservationAffinity`` of an on-demand pool: ``NO_RESERVATION``, ``ANY_RESERVATION`` or
    ``ANY_RESERVATION_THEN_FAIL`` (None: GCE's default). Other modes set it (`gcp_pools.consumed_reservation`)."""
    compact_placement: Optional[bool] = None
    """COMPACT placement policy (None: on for RDMA pools and multi-node NVLink pools, which refuse false). Needs
    exactly one zone."""
    placement_policy_name: Optional[str] = None
    """An existing resource policy to place the nodes with (implies compact placement)."""
    disk_size_gb: int = 200
    """Boot disk size; CUDA images are large."""
    disk_type: Optional[str] = None
    """Boot disk type (None: GKE's default for the machine type, e.g. Hyperdisk on A3 Ultra)."""
    service_account: Optional[str] = None
    """Service account email of this pool's nodes (default: the cluster's node service account)."""
    tpu_topology: Optional[str] = None
    """TPU machine types only: the slice topology (``tpuTopology``; None: the machine type's single-host one)."""


# ---------------------------------------------------------------------------------------------------------
# Derived facts (pure): used by the cloud layer, tested without the engine.


def software_installs_driver(gpu_software: str) -> bool:
    """True when GKE installs the NVIDIA driver (everything but the GPU Operator, which brings its own)."""
    return gpu_software != "operator"


def driver_version(pool: GcpPoolOptions, gpu_software: str) -> str:
    """``gpu_driver_installation_config.gpu_driver_version`` of a pool."""
    if not software_installs_driver(gpu_software):
        return DRIVER_DISABLED
    return pool.gpu_driver_version or DEFAULT_DRIVER_VERSION


def shape_of(pool: Any) -> Optional[catalog.MachineShape]:
    """The catalog shape of a ``nodePools`` entry (None for a machine type the catalog lacks)."""
    return catalog.SHAPES.get(("gcp", pool.instance_type))


def is_arm64(pool: Any) -> bool:
    """The pool's nodes have arm64 CPUs (A4X's Grace)."""
    shape = shape_of(pool)
    return shape is not None and shape.architecture == catalog.ARM64


def google_driver_installer(gpu_software: str, pools: Iterable[Any]) -> bool:
    """Whether a GPU Operator stack's GPU pools run COS with Google's COS driver installer (the operator's
    ``driver_preinstalled``, driver root /home/kubernetes/bin/nvidia) instead of Ubuntu with the operator's driver
    container: so when a pool has arm64 (Grace-Blackwell) nodes, which run COS (module docstring). The operator's
    driver switch is cluster-wide, so every GPU pool of the stack follows."""
    return gpu_software == "operator" and any(is_arm64(p) for p in pools)


def image_type(pool: GcpPoolOptions, gpu_software: str, google_installer: bool = False) -> str:
    """Node image: the GPU Operator's driver container runs on Ubuntu only; GKE's driver and Google's COS installer
    (`google_driver_installer`) on COS."""
    if pool.image_type:
        return pool.image_type
    return COS if software_installs_driver(gpu_software) or google_installer else UBUNTU


def pool_zones(pool: Any, cluster: GcpClusterOptions) -> tuple[str, ...]:
    """Zones a GPU pool's nodes go to: its own ``zones``, else the zonal cluster's zone, else GKE's choice (())."""
    if pool.zones:
        return tuple(pool.zones)
    return (cluster.zone,) if cluster.zone else ()


def zone_count(pool: Any, cluster: GcpClusterOptions) -> int:
    """How many zones the pool spans (GKE's default for a regional cluster is three)."""
    return len(pool_zones(pool, cluster)) or (1 if cluster.zone else REGIONAL_DEFAULT_ZONES)


def tpu_shape(pool: Any) -> Optional[catalog.MachineShape]:
    """The catalog shape of a pool's TPU machine type; None for every other pool."""
    shape = catalog.SHAPES.get(("gcp", pool.instance_type))
    return shape if shape is not None and shape.tpu_topologies else None


def tpu_topology(pool: Any) -> Optional[str]:
    """The TPU slice topology of a pool (``tpuTopology``, default its machine type's single-host one); None for a
    pool that is not a TPU pool."""
    shape = tpu_shape(pool)
    if shape is None:
        return None
    options: GcpPoolOptions = pool.cloud_options or GcpPoolOptions()
    return options.tpu_topology or shape.tpu_topologies[0]


def tpu_multi_host(pool: Any) -> bool:
    """A TPU pool whose slice spans several VMs (GKE creates and removes its nodes as one unit)."""
    shape, topology = tpu_shape(pool), tpu_topology(pool)
    return shape is not None and topology is not None and catalog.tpu_hosts(shape, topology) > 1


def multi_node_nvlink(pool: Any) -> bool:
    """The pool's machine type joins several VMs in one NVLink domain (A4X: 18 VMs, 72 GPUs)."""
    shape = shape_of(pool)
    return shape is not None and shape.multi_node_nvlink


def compact_placement(pool: Any) -> bool:
    """Whether a pool gets the COMPACT placement policy: RDMA pools and multi-node NVLink pools (whose NVLink domain
    needs a workload policy) by default, or when asked."""
    options: GcpPoolOptions = pool.cloud_options or GcpPoolOptions()
    if options.placement_policy_name:
        return True
    if options.compact_placement is None:
        return pool.rdma or multi_node_nvlink(pool)
    return options.compact_placement


def managed_sharing(gpu_software: str) -> bool:
    """GKE's own device plugin shares GPUs (time-sharing/MPS) only when GKE runs the device plugin."""
    return gpu_software == "cloud-managed"


def managed_partitioning(gpu_software: str) -> bool:
    """GKE creates MIG partitions (``gpu_partition_size``) whenever GKE installs the driver; the GPU Operator's
    MIG manager does it otherwise."""
    return software_installs_driver(gpu_software)


def disables_gke_device_plugin(gpu_software: str) -> bool:
    """NVIDIA's own device plugin (chart or operator) replaces GKE's; two plugins would both advertise GPUs."""
    return gpu_software != "cloud-managed"


_STACK_KEYS = {"min_nodes": "minNodes", "max_nodes": "maxNodes", "desired_nodes": "desiredNodes",
               "reservation_affinity": "reservationAffinity", "compact_placement": "compactPlacement"}


def _stack_key(key: str) -> str:
    return _STACK_KEYS.get(key, key)


def capacity_problem(*, mode: str, instance_type: str, min_nodes: int, max_nodes: int, desired_nodes: Optional[int],
                     affinity: Optional[str], compact: bool,
                     spell: Callable[[str], str]) -> Optional[tuple[str, str]]:
    """``(key, problem)`` of the first rule GKE imposes on how a pool's VMs are bought, or None. One rule set for the
    stack file (``spell`` gives camelCase keys) and the components (``spell`` gives the argument's path); keys are
    snake_case (``min_nodes``, ``reservation_affinity``...). ``mode``: the pool's ``provisioning``; ``affinity``: the
    ``reservationAffinity`` given (None: none); ``compact``: the pool gets a COMPACT placement policy (never said of
    a TPU pool, which a multi-host slice's topology places)."""
    shape = catalog.SHAPES.get(("gcp", instance_type))
    if shape is not None and shape.capacity == "reservation" and mode != provisioning.RESERVATION:
        return spell("provisioning"), (f"{instance_type} is sold through reservations only (Compute Engine GPU "
                                       f"machine types), not {mode}; set {spell('provisioning')}: reservation and "
                                       f"{spell('reservation')}: <reservation> or <reservation>/reservationBlocks/"
                                       "<block>")
    if affinity == "SPECIFIC_RESERVATION":
        return spell("reservation_affinity"), (f"a specific reservation is {spell('provisioning')}: reservation with "
                                               f"{spell('reservation')}: <name>; remove "
                                               f"{spell('reservation_affinity')}")
    if affinity is not None and mode == provisioning.RESERVATION:
        return spell("reservation_affinity"), (f"{spell('provisioning')}: reservation consumes the named reservation "
                                               f"(SPECIFIC_RESERVATION); remove {spell('reservation_affinity')}")
    if affinity not in (None, "NO_RESERVATION") and mode == provisioning.SPOT:
        return spell("reservation_affinity"), "Spot VMs cannot consume reservations; use NO_RESERVATION or another " \
                                              "provisioning"
    if affinity not in (None, "NO_RESERVATION") and mode in DWS_MODES:
        return spell("reservation_affinity"), (f"{mode} VMs come from Dynamic Workload Scheduler, not from "
                                               "reservations (GKE requires NO_RESERVATION); remove "
                                               f"{spell('reservation_affinity')}")
    if mode == provisioning.QUEUED:
        if min_nodes:
            return spell("min_nodes"), (f"GKE adds queued-provisioning nodes only for a ProvisioningRequest and "
                                        f"removes them after, so the pool's total minimum is 0: set "
                                        f"{spell('min_nodes')}: 0, got {min_nodes}")
        if desired_nodes:
            return spell("desired_nodes"), (f"GKE adds queued-provisioning nodes only for a ProvisioningRequest; "
                                            f"remove {spell('desired_nodes')} ({desired_nodes})")
        if compact:
            return spell("compact_placement"), (f"GKE does not place queued-provisioning nodes COMPACT (except TPUs); "
                                                f"set {spell('compact_placement')}: false or use another "
                                                "provisioning")
    if mode == provisioning.FLEX_START:
        if min_nodes == max_nodes:
            return spell("max_nodes"), (f"flex-start VMs come when capacity is found and live at most 7 days, so "
                                        f"the pool autoscales: set {spell('min_nodes')} below {spell('max_nodes')}, "
                                        f"got {min_nodes}-{max_nodes}")
        if compact and not instance_type.startswith(FLEX_START_COMPACT_MACHINES):
            return spell("compact_placement"), (f"GKE places flex-start VMs COMPACT only on A3 Ultra, A4 and H4D, "
                                                f"not {instance_type}; set {spell('compact_placement')}: false or "
                                                "use another provisioning")
    return None


# ---------------------------------------------------------------------------------------------------------
# Parsing


def _read_cidr(raw: Mapping, key: str, rule: CidrRule) -> str:
    """A cluster CIDR key checked by ``rule``; its default is the rule's example (the field's default)."""
    return rule.checked(read_str(raw, key, "", rule.example), key)


def _proxy_only_cidr(raw: Mapping, config: Any, existing_network: bool) -> Optional[str]:
    """``proxyOnlyCidr``: the proxy-only subnet's range when the stack has a Gateway (GKE's regional Gateway classes
    need one in the region), checked against the new VPC's other ranges; refused without a Gateway."""
    from ...serving.gateway_config import publishes_services

    if not publishes_services(config):
        if raw.get("proxyOnlyCidr") is not None:
            raise ConfigError("proxyOnlyCidr", "takes effect only with a Gateway (the stack publishes no service, or "
                                               "gateway.enabled is false)")
        return None
    if existing_network and raw.get("proxyOnlyCidr") is None:
        raise ConfigError("proxyOnlyCidr", "is required with an existing network: the range of its proxy-only subnet "
                                           f"(purpose REGIONAL_MANAGED_PROXY) in {config.region}, which the Gateway's "
                                           "proxies connect from")
    cidr = _read_cidr(raw, "proxyOnlyCidr", PROXY_ONLY_CIDR)
    network = PROXY_ONLY_CIDR.network(cidr, "proxyOnlyCidr")
    if not existing_network:
        for key, rule in (("nodeCidr", NODE_CIDR), ("podCidr", POD_CIDR), ("serviceCidr", SERVICE_CIDR)):
            other = _read_cidr(raw, key, rule)
            if network.overlaps(rule.network(other, key)):
                raise ConfigError("proxyOnlyCidr", f"'{cidr}' overlaps {key} ({other})")
    return cidr


def _read_email(raw: Mapping, key: str, path: str) -> Optional[str]:
    return read_matching(raw, key, path, EMAIL, "a service account email")


def _check_zone(zone: str, region: str, path: str) -> None:
    if not ZONE.match(zone):
        raise ConfigError(path, f"'{zone}' is not a zone name such as {region}-a")
    if not zone.startswith(region + "-"):
        raise ConfigError(path, f"zone '{zone}' is not in region '{region}'")


def _parse_system_pool(raw: Mapping) -> SystemPoolOptions:
    path = "systemPool"
    value = raw.get(path)
    if value is None:
        return SystemPoolOptions()
    sec = as_mapping(value, path)
    check_keys(sec, SYSTEM_POOL_KEYS, path)
    defaults = SystemPoolOptions()
    min_nodes = read_int(sec, "minNodes", path, defaults.min_nodes, minimum=0)
    max_nodes = read_int(sec, "maxNodes", path, max(defaults.max_nodes, min_nodes), minimum=1)
    if min_nodes > max_nodes:
        raise ConfigError(join(path, "minNodes"), f"minNodes ({min_nodes}) is greater than maxNodes ({max_nodes})")
    return SystemPoolOptions(
        machine_type=read_str(sec, "machineType", path, defaults.machine_type),
        min_nodes=min_nodes,
        max_nodes=max_nodes,
        disk_size_gb=read_int(sec, "diskSizeGb", path, defaults.disk_size_gb, minimum=10),
    )


def parse_cluster_options(raw: Mapping, config: Any) -> GcpClusterOptions:
    """Cluster keys, then the rules that involve several pools or the GPU software mode."""
    project = read_matching(raw, "project", "", PROJECT_ID, "a project ID (6-30 lower-case letters, digits, '-')")
    zone = read_str(raw, "zone", "", None)
    if zone is not None:
        _check_zone(zone, config.region, "zone")
    network = read_str(raw, "network", "", None)
    subnetwork = read_str(raw, "subnetwork", "", None)
    if (network is None) != (subnetwork is None):
        missing = "subnetwork" if network is not None else "network"
        raise ConfigError(missing, "an existing VPC needs both network and subnetwork")
    for key in ("nodeCidr", "podCidr", "serviceCidr") if network is not None else ():
        if key in raw:
            raise ConfigError(key, "applies only to a new VPC; the given subnetwork has its own ranges")
    gpu_cidr = _read_cidr(raw, "gpuNetworkCidr", GPU_NETWORK_CIDR)
    options = GcpClusterOptions(
        project=project,
        zone=zone,
        release_channel=read_enum(raw, "releaseChannel", "", RELEASE_CHANNELS, "REGULAR"),
        network=network,
        subnetwork=subnetwork,
        pods_range_name=read_str(raw, "podsRangeName", "", "pods"),
        services_range_name=read_str(raw, "servicesRangeName", "", "services"),
        node_cidr=_read_cidr(raw, "nodeCidr", NODE_CIDR),
        pod_cidr=_read_cidr(raw, "podCidr", POD_CIDR),
        service_cidr=_read_cidr(raw, "serviceCidr", SERVICE_CIDR),
        gpu_network_cidr=gpu_cidr,
        private_nodes=read_bool(raw, "privateNodes", "", True),
        system_pool=_parse_system_pool(raw),
        node_service_account=_read_email(raw, "nodeServiceAccount", ""),
        deletion_protection=read_bool(raw, "deletionProtection", "", True),
        managed_dcgm=read_bool(raw, "managedDcgm", "", config.gpu_software == "cloud-managed"),
        control_plane=control_plane.parse_control_plane(raw),
        proxy_only_cidr=_proxy_only_cidr(raw, config, network is not None),
    )
    if options.managed_dcgm and config.gpu_software != "cloud-managed":
        raise ConfigError("managedDcgm", "GKE's managed DCGM metrics need GKE's driver and device plugin "
                                         f"(gpuSoftware 'cloud-managed'), not '{config.gpu_software}'")
    _check_pools(config, options)
    _check_upgrades(config)
    check_stack_storage(config, zone)
    return options


def _check_upgrades(config: Any) -> None:
    """The maintenance window GKE accepts, and one ``automatic`` for the cluster's nodes (`gcp_upgrade`)."""
    problem = gcp_upgrade.window_problem(config.maintenance)
    if problem is not None:
        raise ConfigError("maintenance.window", problem)
    gcp_upgrade.cluster_automatic([(p.name, p.upgrade, p.role) for p in config.node_pools],
                                  lambda i: join(join(join("nodePools", i), "upgrade"), "automatic"))


def _check_pools(config: Any, cluster: GcpClusterOptions) -> None:
    rdma_zone: Optional[tuple[str, int]] = None
    google_installer = google_driver_installer(config.gpu_software, config.node_pools)
    arm_pool = next((i for i, p in enumerate(config.node_pools) if is_arm64(p)), None)
    for i, pool in enumerate(config.node_pools):
        path = join("nodePools", i)
        options: GcpPoolOptions = pool.cloud_options or GcpPoolOptions()
        if pool.name == SYSTEM_POOL_NAME:
            raise ConfigError(join(path, "name"), f"'{SYSTEM_POOL_NAME}' is the GKE layer's own CPU pool; "
                                                  "choose another name")
        if len(pool.name) > NODE_POOL_NAME_MAX:
            raise ConfigError(join(path, "name"), f"GKE node pool names have at most {NODE_POOL_NAME_MAX} "
                                                  f"characters, '{pool.name}' has {len(pool.name)}")
        for j, zone in enumerate(pool.zones):
            _check_zone(zone, config.region, join(join(path, "zones"), j))
        if config.gpu_software == "operator":
            if options.gpu_driver_version is not None:
                raise ConfigError(join(path, "gpuDriverVersion"),
                                  "the GPU Operator installs the driver (gpuSoftware 'operator'); remove it")
            _check_operator_pool(pool, path, options, google_installer, arm_pool)
        if pool.gpu_allocation == DRA and pool.sharing.mode == "mig":
            raise ConfigError(join(path, "sharing.mode"), "GKE's DRA setup cannot use multi-instance GPUs (GKE "
                                                          "'Prepare GKE infrastructure for DRA workloads', "
                                                          "Limitations); use exclusive or gpuAllocation: "
                                                          "device-plugin")
        zones = pool_zones(pool, cluster)
        if tpu_multi_host(pool) and len(zones) != 1:
            raise ConfigError(join(path, "zones"), f"a multi-host TPU slice ({tpu_topology(pool)} on "
                                                   f"{pool.instance_type}) lives in one zone, got "
                                                   f"{len(zones) or 'GKE default'}; set zones: [<a zone offering "
                                                   "the TPU>]")
        if compact_placement(pool) and len(zones) != 1:
            raise ConfigError(join(path, "zones"), "compact placement needs exactly one zone, got "
                                                   f"{len(zones) or 'GKE default'}; set zones: [{config.region}-a]"
                                                   " (a zone offering the GPU) or compactPlacement: false")
        shape = catalog.SHAPES.get(("gcp", pool.instance_type))
        if pool.rdma and shape is not None and shape.rdma_fabric == catalog.GPUDIRECT_RDMA:
            if len(zones) != 1:
                raise ConfigError(join(path, "zones"), "GPUDirect-RDMA uses a zonal RoCE network; set exactly one zone")
            if rdma_zone is None:
                rdma_zone = (zones[0], i)
            elif zones[0] != rdma_zone[0]:
                raise ConfigError(join(path, "zones"), "every GPUDirect-RDMA pool shares one RoCE network; use "
                                                       f"the zone of nodePools[{rdma_zone[1]}] ({rdma_zone[0]})")


def _check_operator_pool(pool: Any, path: str, options: GcpPoolOptions, google_installer: bool,
                         arm_pool: Optional[int]) -> None:
    """A pool under the GPU Operator: Ubuntu with the operator's driver container, or (`google_driver_installer`)
    COS with Google's installer, which also leaves the driver where GPUDirect-RDMA's NCCL plugin looks for it."""
    if not google_installer:
        if options.image_type == COS:
            raise ConfigError(join(path, "imageType"), "the GPU Operator's driver needs UBUNTU_CONTAINERD nodes; use "
                                                       "gpuSoftware 'cloud-managed' for COS")
        if pool.rdma:
            raise ConfigError(join(path, "rdma"), "GPUDirect on GKE needs GKE's driver (its NCCL plugin installers "
                                                  "use /home/kubernetes/bin/nvidia); use gpuSoftware "
                                                  "'cloud-managed'")
        return
    if options.image_type == UBUNTU:
        raise ConfigError(join(path, "imageType"), f"this stack's GPU pools run Google's COS driver installer "
                                                   f"(nodePools[{arm_pool}] has arm64 nodes, which GKE runs on COS); "
                                                   "remove imageType or use COS_CONTAINERD")
    shape = shape_of(pool)
    fabric = shape.rdma_fabric if shape is not None else None
    if pool.rdma and fabric != catalog.GPUDIRECT_RDMA:
        raise ConfigError(join(path, "rdma"), f"{fabric} on GKE needs GKE's driver and device plugin (gpuSoftware "
                                              "'cloud-managed'); under the GPU Operator the platform runs "
                                              "gpudirect-rdma only")


def _parse_tpu_topology(raw: Mapping, path: str, pool: Any, shape: Any) -> Optional[str]:
    """``tpuTopology``: only on TPU machine types, one of the slices the machine type forms; a multi-host slice
    fixes the pool's size at its VM count (GKE creates the slice's nodes together, minNodes == maxNodes)."""
    topology = read_str(raw, "tpuTopology", path, None)
    at = join(path, "tpuTopology")
    if shape is None or not shape.tpu_topologies:
        if topology is not None:
            raise ConfigError(at, f"applies only to TPU machine types, not '{pool.instance_type}'")
        return None
    for key in ("gpuDriverVersion", "compactPlacement", "placementPolicyName"):
        if key in raw:
            raise ConfigError(join(path, key), f"does not apply to TPU machine type '{pool.instance_type}'")
    chosen = topology or shape.tpu_topologies[0]
    if chosen not in shape.tpu_topologies:
        shown = ", ".join(shape.tpu_topologies[:8]) + (", ..." if len(shape.tpu_topologies) > 8 else "")
        raise ConfigError(at, f"'{chosen}' is not a TPU topology of {shape.name} ({shape.gpu_count} chips per VM); "
                              f"use one of {shown}")
    hosts = catalog.tpu_hosts(shape, chosen)
    if hosts > 1 and (pool.min_nodes != hosts or pool.max_nodes != hosts):
        raise ConfigError(join(path, "maxNodes" if pool.max_nodes != hosts else "minNodes"),
                          f"a {chosen} slice of {shape.name} is {catalog.tpu_chips(chosen)} chips / "
                          f"{shape.gpu_count} per VM = {hosts} nodes, created together: set minNodes and "
                          f"maxNodes to {hosts}, got {pool.min_nodes}-{pool.max_nodes}")
    return topology


def _check_rack_pool(raw: Mapping, path: str, pool: Any, shape: Any) -> None:
    """A multi-node NVLink pool is placed by a workload policy (Compute Engine, "About workload policies in MIGs":
    required for A4X), one NVLink domain per pool (accelerator topology ``1x72``: 18 VMs)."""
    if shape is None or not shape.multi_node_nvlink:
        return
    if raw.get("compactPlacement") is False:
        raise ConfigError(join(path, "compactPlacement"), f"{shape.name} forms its {shape.nvlink_domain_gpus}-GPU "
                                                          "NVLink domain only under a workload policy, which Compute "
                                                          "Engine requires for it; remove compactPlacement: false")
    domain_nodes = shape.nvlink_domain_gpus // shape.gpu_count
    if pool.max_nodes > domain_nodes:
        raise ConfigError(join(path, "maxNodes"), f"each {shape.name} node pool is one {shape.nvlink_domain_gpus}-GPU "
                                                  f"NVLink domain (workload policy accelerator topology "
                                                  f"{nvlink_topology(shape)}: {domain_nodes} VMs), got maxNodes "
                                                  f"{pool.max_nodes}; add a pool per domain")


def parse_pool_options(raw: Mapping, path: str, pool: Any, shape: Any) -> GcpPoolOptions:
    """Pool keys that only need the pool itself."""
    topology = _parse_tpu_topology(raw, path, pool, shape)
    affinity = read_enum(raw, "reservationAffinity", path, RESERVATION_AFFINITIES, None)
    _check_rack_pool(raw, path, pool, shape)
    policy = read_matching(raw, "placementPolicyName", path, RESOURCE_NAME, "a resource policy name")
    compact = read_bool(raw, "compactPlacement", path, True) if "compactPlacement" in raw else None
    if policy is not None and compact is False:
        raise ConfigError(join(path, "compactPlacement"), "placementPolicyName is a compact placement policy")
    placed = policy is not None or (compact if compact is not None else pool.rdma or multi_node_nvlink(pool))
    gcp_upgrade.check_pool_upgrade(pool.upgrade, join(path, "upgrade"))
    problem = capacity_problem(
        mode=pool.provisioning, instance_type=pool.instance_type, min_nodes=pool.min_nodes,
        max_nodes=pool.max_nodes, desired_nodes=pool.desired_nodes, affinity=affinity,
        compact=placed and not (shape is not None and shape.tpu_topologies), spell=_stack_key)
    if problem is not None:
        raise ConfigError(join(path, problem[0]), problem[1])
    return GcpPoolOptions(
        gpu_driver_version=read_enum(raw, "gpuDriverVersion", path, DRIVER_VERSIONS, None),
        image_type=read_enum(raw, "imageType", path, IMAGE_TYPES, None),
        reservation_affinity=affinity,
        compact_placement=compact,
        placement_policy_name=policy,
        disk_size_gb=read_int(raw, "diskSizeGb", path, GcpPoolOptions.disk_size_gb, minimum=10),
        disk_type=read_str(raw, "diskType", path, None),
        service_account=_read_email(raw, "serviceAccount", path),
        tpu_topology=topology,
    )


# ---------------------------------------------------------------------------------------------------------
# A nodePools entry as GKE component args


def pool_args(pool_config: Any, pool: Any) -> dict[str, Any]:
    """The ``GkeCluster`` ``gpu_pools`` entry (``GkeGpuPoolArgs``) of a parsed ``nodePools`` entry: the pool plus
    every GKE key the entry gave, under the component's snake_case name. Pure: the stack path
    (`cluster_from_config`) and `gpu_platform.pool_args("gcp", entry)` both build their entries here, so a key
    cannot reach one path and not the other. What only the stack knows (the GPU software mode) is added there."""
    options: GcpPoolOptions = pool_config.cloud_options or GcpPoolOptions()
    shape = catalog.SHAPES.get(("gcp", pool_config.instance_type))
    attached = shape is not None and shape.attachable_accelerators
    return entry_args(pool, {
        "disk_size_gb": options.disk_size_gb,
        "node_locations": list(pool_config.zones) or None,
        "desired_nodes": pool_config.desired_nodes,
        "accelerator_type": pool_config.accelerator if attached else None,  # N1: the GPU is chosen by the entry
        "gpu_driver_version": options.gpu_driver_version,
        "image_type": options.image_type,
        "reservation_affinity": options.reservation_affinity,
        "compact_placement": options.compact_placement,
        "placement_policy_name": options.placement_policy_name,
        "disk_type": options.disk_type,
        "service_account": options.service_account,
        "tpu_topology": tpu_topology(pool_config),
        "upgrade": pool_config.upgrade.as_args() or None,  # only what the entry wrote; roles give the rest
    })
