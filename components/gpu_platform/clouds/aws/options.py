"""Configuration keys of the AWS (EKS) cloud layer, parsed without the cloud SDK.

Cluster keys (top level of the stack's ``gpu-platform`` namespace):

========================== =================================================================================
``vpcId``                  Existing VPC to use; needs ``privateSubnetIds``. Default: a new VPC.
``privateSubnetIds``       Existing private subnets (two zones at least) for the control plane and nodes.
``publicSubnetIds``        Existing public subnets for internet-facing load balancers.
``vpcCidr``                New VPC only: its CIDR (``/16`` to ``/20``). Default ``10.0.0.0/16``.
``availabilityZones``      New VPC only: its 2-3 zones. Default: the zones the pools name, then the region's first.
``singleNatGateway``       New VPC only: one NAT gateway (cheap) instead of one per zone. Default true.
``adminRoleArns``          IAM roles/users made cluster admins through EKS access entries.
``systemNodeInstanceType`` Instance type of the small non-GPU node group for system pods. Default ``m6i.xlarge``.
``systemNodes``            Size of that node group. Default 2.
``apiAllowedCidrs``        IPv4 CIDRs allowed to a public API endpoint. Default empty: private endpoint only
                           (reachable from the VPC). ``0.0.0.0/0`` opens it to the internet and must be written.
``secretsEncryption``      Envelope-encrypt Kubernetes Secrets with a KMS key the stack creates. Default true.
========================== =================================================================================

``endpointPublicAccess`` and ``publicAccessCidrs`` were replaced by ``apiAllowedCidrs`` (see `control_plane`).

Pool keys (per ``nodePools[]`` entry): ``amiType``, ``capacityBlock``, ``diskSizeGiB``, ``subnetIds``,
``placementGroup``; see `AwsPoolOptions`. Reserved capacity is the shared ``provisioning: reservation`` with
``reservation: cr-...`` (an On-Demand Capacity Reservation, or with ``capacityBlock: true`` a Capacity Block for ML);
``capacityReservationId`` was replaced by them and is refused naming them (`RENAMED_POOL_KEYS`).
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ... import catalog, control_plane, provisioning, versions
from ...accelerators import gpu_allocation
from ...cidrs import CidrRule
from ...component_args import camel_case
from ...fields import ConfigError, join, read_bool, read_enum, read_int, read_list
from ..common_options import ManagedClusterOptions, entry_args, physical_name_problem, read_matching
from . import upgrade as aws_upgrade
from .storage_options import check_storage as check_storage  # the stack parser's AWS ``storage`` rules

CLUSTER_KEYS = {
    "vpcId", "privateSubnetIds", "publicSubnetIds", "vpcCidr", "availabilityZones", "singleNatGateway",
    "adminRoleArns", "systemNodeInstanceType", "systemNodes", *control_plane.KEYS,
}
RENAMED_POOL_KEYS = {"capacityReservationId": "provisioning: reservation and reservation: cr-... (the same id)"}
"""First-round pool keys and what replaced them: the stack parser refuses them naming the replacement."""
POOL_KEYS = {"amiType", "capacityBlock", "diskSizeGiB", "subnetIds", "placementGroup"}

AL2023_NVIDIA = "AL2023_x86_64_NVIDIA"
BOTTLEROCKET_NVIDIA = "BOTTLEROCKET_x86_64_NVIDIA"
GPU_AMI_TYPES = (AL2023_NVIDIA, BOTTLEROCKET_NVIDIA)
"""EKS managed-node-group AMI types with the NVIDIA driver for the x86_64 GPU shapes of the catalog."""
AL2023_ARM_NVIDIA = "AL2023_ARM_64_NVIDIA"
"""EKS AMI type with the NVIDIA driver for arm64 (Graviton/Grace) GPU shapes: the EKS user guide's "AL2023 ARM NVIDIA"
accelerated AMI (``ml-eks-optimized-ami``: p6e-gb200, p6e-gb300, g5g), which the "Use P6e-GB200 UltraServers"
guide recommends; it carries the driver, fabric manager, IMEX driver and EFA driver (EKS API Nodegroup amiType,
AWS CDK ``NodegroupAmiType.AL2023_ARM_64_NVIDIA``). Bottlerocket's arm64 NVIDIA variant is documented for g5g only."""
ARM_GPU_AMI_TYPES = (AL2023_ARM_NVIDIA,)
AL2023_NEURON = "AL2023_x86_64_NEURON"
"""EKS AMI type with the AWS Neuron driver and runtime for Inferentia/Trainium (EKS API Nodegroup amiType; AWS CDK
``NodegroupAmiType.AL2023_X86_64_NEURON`` "Amazon Linux 2023 with AWS Neuron drivers (x86-64)")."""
AMI_TYPES_BY_VENDOR: dict[str, dict[str, tuple[str, ...]]] = {
    catalog.NVIDIA: {catalog.AMD64: GPU_AMI_TYPES, catalog.ARM64: ARM_GPU_AMI_TYPES},
    catalog.AWS_NEURON: {catalog.AMD64: (AL2023_NEURON,)},
}
"""The AMI types a pool may use, by its accelerator vendor and its nodes' CPU architecture (the first is the
default): an AMI carries one vendor's driver built for one architecture, so a pool on another vendor's AMI would
boot without its devices, and an instance cannot boot an AMI of the other architecture."""
AMI_ARCHITECTURES: dict[str, str] = {
    ami: arch for by_arch in AMI_TYPES_BY_VENDOR.values() for arch, amis in by_arch.items() for ami in amis}
"""The CPU architecture each accelerator AMI type is built for."""
ACCELERATOR_AMI_TYPES = tuple(AMI_ARCHITECTURES)
"""Every accelerator AMI type the AWS layer accepts."""
MIME_USER_DATA_AMI_TYPES = (AL2023_NVIDIA, AL2023_ARM_NVIDIA, AL2023_NEURON)
"""AMI types whose launch-template user data EKS merges as a MIME multi-part archive (Amazon Linux; Bottlerocket
takes TOML settings instead): the EKS guide "Customize managed nodes with launch templates", Amazon EC2 user data."""
SHAPE_CAPACITY_BLOCK = "capacity-block"
"""`catalog.MachineShape.capacity` of shapes EC2 sells through Capacity Blocks for ML only (p6e-gb200.36xlarge)."""
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"

ON_DEMAND, SPOT, CAPACITY_BLOCK = "ON_DEMAND", "SPOT", "CAPACITY_BLOCK"
"""EKS node-group capacity types."""

DEFAULT_VPC_CIDR = "10.0.0.0/16"
VPC_CIDR = CidrRule(example=DEFAULT_VPC_CIDR, min_prefix=16, max_prefix=20,
                    sizes="a new VPC is a /16 (the largest block AWS allows) to a /20 (its private subnets are "
                          "quarters of it, one per zone)")
"""``vpcCidr`` / ``vpc_cidr``: the block of a new VPC (`aws_vpc.subnet_cidrs` splits it)."""
DEFAULT_SYSTEM_INSTANCE_TYPE = "m6i.xlarge"
MAX_VPC_ZONES = 3
"""A new VPC spans at most three zones (see `aws_vpc.subnet_cidrs`)."""
MIN_DISK_GIB = 50
"""The NVIDIA AMIs plus one CUDA image already need tens of GiB; below this a node fills up on its first pull."""

_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8,17}$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{8,17}$")
_IAM_PRINCIPAL = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+$")
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")
_REGION = re.compile(r"^[a-z]{2,4}(-[a-z]+){1,3}-\d+$")


@dataclass(frozen=True)
class AwsClusterOptions(ManagedClusterOptions):
    """The EKS cluster's own settings."""

    vpc_id: Optional[str] = None
    """Existing VPC (None: a new VPC is created)."""
    private_subnet_ids: tuple[str, ...] = ()
    """Existing private subnets (with ``vpc_id``)."""
    public_subnet_ids: tuple[str, ...] = ()
    """Existing public subnets (with ``vpc_id``)."""
    vpc_cidr: str = DEFAULT_VPC_CIDR
    """New VPC: its CIDR."""
    availability_zones: tuple[str, ...] = ()
    """New VPC: its zones as configured (empty: chosen at deploy time, see `aws_vpc.vpc_zones`)."""
    single_nat_gateway: bool = True
    """New VPC: one NAT gateway for all zones."""
    admin_role_arns: tuple[str, ...] = ()
    """IAM principals granted ``AmazonEKSClusterAdminPolicy`` through access entries."""
    system_node_instance_type: str = DEFAULT_SYSTEM_INSTANCE_TYPE
    """Instance type of the system node group."""
    system_nodes: int = 2
    """Nodes in the system node group."""
    addon_versions: tuple[tuple[str, str], ...] = ()
    """Pinned EKS managed add-on versions for the stack's Kubernetes version (from `versions.EKS_ADDONS`)."""

    @property
    def new_vpc(self) -> bool:
        return self.vpc_id is None


@dataclass(frozen=True)
class AwsPoolOptions:
    """An EKS GPU node group's own settings."""

    ami_type: str = AL2023_NVIDIA
    """``AL2023_x86_64_NVIDIA`` (NVIDIA default) or ``BOTTLEROCKET_x86_64_NVIDIA``; ``AL2023_ARM_64_NVIDIA`` (only
    choice) on arm64 NVIDIA shapes; ``AL2023_x86_64_NEURON`` on Neuron pools (`AMI_TYPES_BY_VENDOR`)."""
    capacity_type: str = ON_DEMAND
    """``ON_DEMAND``, ``SPOT`` or ``CAPACITY_BLOCK`` (derived from ``provisioning`` and ``capacityBlock``)."""
    capacity_reservation_id: Optional[str] = None
    """The pool's ``reservation`` with ``provisioning: reservation``: the On-Demand Capacity Reservation or Capacity
    Block (``cr-...``) the nodes launch into."""
    disk_size_gib: int = 200
    """Root (AL2023) or data (Bottlerocket) volume size; default by GPU count, see `default_disk_size`."""
    subnet_ids: tuple[str, ...] = ()
    """Existing VPC only: the pool's own subnets (one zone for EFA and reserved capacity)."""
    placement_group: bool = False
    """A ``cluster`` placement group for the pool (EFA pools without a reservation by default)."""

    @property
    def capacity_block(self) -> bool:
        """``capacityBlock``: the pool's reservation is a Capacity Block for ML (capacity type ``CAPACITY_BLOCK``);
        only with ``provisioning: reservation``. Default false."""
        return self.capacity_type == CAPACITY_BLOCK


def default_disk_size(gpus_per_node: int) -> int:
    """Disk for a GPU node: training images (NGC PyTorch ~20 GiB each, several tags cached) on 8-GPU nodes get more."""
    return 500 if gpus_per_node >= 8 else 200


def _read_ids(raw: Mapping, key: str, path: str, pattern: re.Pattern, what: str) -> tuple[str, ...]:
    values = read_list(raw, key, path)
    for i, value in enumerate(values):
        if not isinstance(value, str) or not pattern.match(value):
            raise ConfigError(join(join(path, key), i), f"{value!r} is not {what}")
    return tuple(values)


def ami_types(vendor: str, architecture: str) -> tuple[str, ...]:
    """The AMI types a pool of ``vendor``'s accelerators on ``architecture`` nodes may use (default first); empty
    when EKS publishes none."""
    return AMI_TYPES_BY_VENDOR.get(vendor, AMI_TYPES_BY_VENDOR[catalog.NVIDIA]).get(architecture, ())


def default_ami_type(vendor: str, architecture: str) -> str:
    """The AMI type of a pool whose ``amiType`` is not given: AL2023 with its vendor's driver, built for the pool's
    CPU architecture (``AL2023_ARM_64_NVIDIA`` on Grace-Blackwell). A combination EKS has no AMI for gets the amd64
    default, which `ami_problem` then refuses with the reason."""
    return (ami_types(vendor, architecture) or ami_types(vendor, catalog.AMD64))[0]


def _arch_name(architecture: str) -> str:
    return "x86_64 (amd64)" if architecture == catalog.AMD64 else f"{architecture} (aarch64)"


def ami_problem(vendor: str, architecture: str, ami_type: str) -> Optional[str]:
    """Why ``ami_type`` cannot boot a pool of ``vendor``'s accelerators on ``architecture`` nodes, or None."""
    allowed = ami_types(vendor, architecture)
    if ami_type in allowed:
        return None
    name = catalog.VENDORS[vendor].display_name if vendor in catalog.VENDORS else vendor
    if not allowed:
        return f"EKS publishes no {name} AMI for {_arch_name(architecture)} nodes"
    built_for = AMI_ARCHITECTURES.get(ami_type, architecture)
    if built_for != architecture:
        return (f"{ami_type} is an {_arch_name(built_for)} AMI and the pool's nodes are {_arch_name(architecture)}; "
                f"use {' or '.join(allowed)}")
    return f"{ami_type} has no {name} driver; use {' or '.join(allowed)}"


def sold_as(instance_type: str) -> str:
    """How EC2 sells ``instance_type`` when not on demand (`catalog.MachineShape.capacity`); empty otherwise."""
    shape = catalog.SHAPES.get(("aws", instance_type))
    return shape.capacity if shape is not None else ""


def reservation_id_problem(reservation: str) -> Optional[str]:
    """Why ``reservation`` is not an EC2 capacity reservation id (ODCR or Capacity Block), or None."""
    if _RESERVATION_ID.match(reservation):
        return None
    return f"'{reservation}' is not an EC2 capacity reservation id such as cr-0123456789abcdef0"


def capacity_problem(*, mode: str, rdma: bool, sharing_mode: str, ami_type: str, reservation: str,
                     capacity_block: bool, placement: bool, placement_given: bool,
                     spell: Callable[[str], str], architecture: str, instance_type: str,
                     vendor: str = catalog.NVIDIA, dra: bool = False) -> Optional[tuple[str, str]]:
    """``(key, problem)`` of the first AWS capacity rule a pool breaks, or None. One rule set for the stack file
    (``spell`` = camelCase, ``reservation``/``provisioning`` as the pool's keys) and the components (``spell``: the
    argument's path, ``pool.reservation``): keys are snake_case, spelled by ``spell``. ``mode``: the pool's
    ``provisioning``; ``reservation``: its reservation (empty unless ``mode`` is ``reservation``); ``vendor`` and
    ``architecture``: the pool's accelerator vendor and CPU architecture, whose driver and instruction set the AMI
    type must carry; ``instance_type``: its shape (some are sold as Capacity Blocks only); ``dra``: the pool's GPUs
    are allocated through DRA."""
    wrong_ami = ami_problem(vendor, architecture, ami_type)
    if wrong_ami is not None:
        return spell("ami_type"), wrong_ami
    if ami_type == BOTTLEROCKET_NVIDIA and sharing_mode != "exclusive":
        # Bottlerocket runs its own NVIDIA device plugin; the platform's sharing configs never reach it.
        return spell("ami_type"), (f"{sharing_mode} sharing needs the platform's device plugin, which Bottlerocket "
                                   f"replaces with its own; use {AL2023_NVIDIA}")
    if ami_type == BOTTLEROCKET_NVIDIA and dra:
        # The OS's own plugin ignores the GPU Operator's deploy label, so it would advertise the GPUs DRA allocates.
        return spell("ami_type"), ("a DRA pool runs no device plugin, and Bottlerocket runs its own NVIDIA device "
                                   f"plugin; use {AL2023_NVIDIA}")
    reserved = mode == provisioning.RESERVATION
    if sold_as(instance_type) == SHAPE_CAPACITY_BLOCK and not (reserved and capacity_block):
        return spell("capacity_block"), (f"{instance_type} is sold through EC2 Capacity Blocks for ML only; set "
                                         f"{spell('provisioning')}: reservation, {spell('reservation')}: cr-... (the "
                                         f"purchased block's id) and {spell('capacity_block')}: true")
    if reserved and reservation_id_problem(reservation) is not None:
        return spell("reservation"), reservation_id_problem(reservation)
    if capacity_block and not reserved:
        return spell("capacity_block"), (f"a Capacity Block is reserved capacity; set {spell('provisioning')}: "
                                         f"reservation and {spell('reservation')}: cr-... (the purchased block's id)")
    if placement_given and placement and not rdma:
        return spell("placement_group"), "a cluster placement group is only for rdma: true pools"
    if placement_given and placement and reserved:
        # The reservation's instances exist wherever it was made; a new placement group cannot contain them
        # and launches fail with InsufficientInstanceCapacity.
        return spell("placement_group"), (f"cannot be combined with {spell('provisioning')}: reservation: reserved "
                                          "instances cannot launch into a new placement group")
    return None


def parse_pool_options(raw: Mapping, path: str, pool: Any, shape: Any) -> AwsPoolOptions:
    """A pool's AWS keys; rules that need the cluster's keys (VPC, zones) live in `parse_cluster_options`."""
    vendor = catalog.vendor_of(pool.gpu_model).key
    architecture = shape.architecture if shape is not None else catalog.AMD64
    # Another vendor's or architecture's AMI type is refused by `capacity_problem` with the reason; anything else by
    # the enum.
    ami_type = raw.get("amiType")
    if ami_type not in ACCELERATOR_AMI_TYPES:
        allowed = ami_types(vendor, architecture) or ami_types(vendor, catalog.AMD64)
        ami_type = read_enum(raw, "amiType", path, allowed, allowed[0])
    reserved = pool.provisioning == provisioning.RESERVATION
    capacity_block = read_bool(raw, "capacityBlock", path, False)
    placement = read_bool(raw, "placementGroup", path, pool.rdma and not reserved)
    # ``gpuAllocation`` is parsed after the cloud keys (config._with_allocation); its default is the hardware's.
    multi_node = shape is not None and shape.multi_node_nvlink
    dra = raw.get("gpuAllocation", gpu_allocation.default_allocation(pool.gpu_model, multi_node)) == gpu_allocation.DRA
    problem = capacity_problem(mode=pool.provisioning, rdma=pool.rdma, sharing_mode=pool.sharing.mode,
                               ami_type=ami_type, reservation=pool.reservation, capacity_block=capacity_block,
                               placement=placement,
                               placement_given="placementGroup" in raw, spell=camel_case, vendor=vendor,
                               architecture=architecture, instance_type=pool.instance_type, dra=dra)
    if problem is not None:
        raise ConfigError(join(path, problem[0]), problem[1])
    capacity_type = CAPACITY_BLOCK if capacity_block else SPOT if pool.spot else ON_DEMAND
    return AwsPoolOptions(
        ami_type=ami_type,
        capacity_type=capacity_type,
        capacity_reservation_id=pool.reservation if reserved else None,
        disk_size_gib=read_int(raw, "diskSizeGiB", path, default_disk_size(pool.gpus_per_node), minimum=MIN_DISK_GIB),
        subnet_ids=_read_ids(raw, "subnetIds", path, _SUBNET_ID, "a subnet id such as subnet-0123456789abcdef0"),
        placement_group=placement,
    )


def pool_args(pool_config: Any, pool: Any) -> dict[str, Any]:
    """The ``EksCluster`` ``gpu_pools`` entry (``EksGpuNodePoolArgs``) of a parsed ``nodePools`` entry: the pool
    plus every AWS key of the entry under the component's snake_case name. Pure: the stack path
    (`cluster_from_config`) and `gpu_platform.pool_args("aws", entry)` both build their entries here, so a key
    cannot reach one path and not the other. What only the stack knows (tags, Karpenter's baseline) is added there.
    """
    options: AwsPoolOptions = pool_config.cloud_options or AwsPoolOptions()
    return entry_args(pool, {
        "ami_type": options.ami_type, "disk_size_gib": options.disk_size_gib,
        "placement_group": options.placement_group, "capacity_block": options.capacity_block,
        "subnet_ids": list(options.subnet_ids) or None,
        "zones": list(pool_config.zones) or None,
        "desired_nodes": pool_config.desired_nodes,
        "upgrade": pool_config.upgrade.as_args() if pool_config.upgrade.given else None,
    })


def _check_zone(zone: str, region: str, path: str) -> None:
    if not re.fullmatch(re.escape(region) + r"[a-z]", zone):
        raise ConfigError(path, f"'{zone}' is not an availability zone of {region} (such as {region}a)")


def _check_pools(config: Any, new_vpc: bool, vpc_zones: tuple[str, ...]) -> None:
    """Pool placement rules that depend on whether the VPC is new (zones) or existing (subnet ids)."""
    named: list[str] = []
    for i, pool in enumerate(config.node_pools):
        if new_vpc and not vpc_zones:
            # Without availabilityZones the new VPC is built around the zones pools name (three at most).
            for j, zone in enumerate(pool.zones):
                if zone not in named:
                    named.append(zone)
                if len(named) > MAX_VPC_ZONES:
                    raise ConfigError(join(join(join("nodePools", i), "zones"), j),
                                      f"pools name more than {MAX_VPC_ZONES} zones ({', '.join(named)}); a new VPC "
                                      f"spans {MAX_VPC_ZONES}")
        path = join("nodePools", i)
        options: AwsPoolOptions = pool.cloud_options
        reserved = options.capacity_reservation_id is not None
        if new_vpc:
            if options.subnet_ids:
                raise ConfigError(join(path, "subnetIds"), "only applies with vpcId; in a new VPC use zones")
            for j, zone in enumerate(pool.zones):
                _check_zone(zone, config.region, join(join(path, "zones"), j))
                if vpc_zones and zone not in vpc_zones:
                    raise ConfigError(join(join(path, "zones"), j),
                                      f"'{zone}' is not one of availabilityZones ({', '.join(vpc_zones)})")
            if pool.rdma and len(pool.zones) > 1:
                raise ConfigError(join(path, "zones"), "EFA traffic stays in one subnet of one zone; "
                                                       f"name one zone, not {len(pool.zones)}")
            if reserved and len(pool.zones) != 1:
                raise ConfigError(join(path, "zones"), "name the one zone of the reservation (an EC2 capacity "
                                                       "reservation lives in one availability zone)")
        else:
            if pool.zones:
                raise ConfigError(join(path, "zones"), "with vpcId, place the pool with subnetIds instead")
            if (pool.rdma or reserved) and not options.subnet_ids:
                why = "an EFA pool" if pool.rdma else "a pool on reserved capacity"
                raise ConfigError(join(path, "subnetIds"), f"{why} in an existing VPC needs the subnet(s) of its "
                                                           "one availability zone")


def _check_karpenter(config: Any) -> None:
    """Pools Karpenter cannot provision for correctly. Karpenter sizes a node from its instance type's physical
    GPUs; a time-slicing, MPS or HAMi pool advertises several ``nvidia.com/gpu`` per GPU, so Karpenter would launch
    one node per pending pod. The cluster-autoscaler reads the shared count from the node group's tags."""
    if config.autoscaling.autoscaler != "karpenter":
        return
    for i, pool in enumerate(config.node_pools):
        if pool.gpu_allocation == "dra":
            # Karpenter 1.14.1 launches nodes for extended resources only; it neither reads ResourceClaims nor knows
            # the devices a node would publish, and EKS documents DRA (P6e-GB200) on managed node groups only.
            raise ConfigError(join(join("nodePools", i), "gpuAllocation"),
                              f"Karpenter {versions.KARPENTER.version} does not provision nodes for DRA "
                              "ResourceClaims; use autoscaling.autoscaler cluster-autoscaler (managed node groups)")
        if pool.sharing.shared:
            raise ConfigError(join(join("nodePools", i), "sharing.mode"),
                              f"{pool.sharing.mode} advertises {pool.sharing.replicas} GPUs per physical GPU, which "
                              "Karpenter cannot know when it sizes nodes (it would launch a node per pod); use "
                              "autoscaling.autoscaler cluster-autoscaler or sharing mode exclusive/mig")


def _check_upgrades(config: Any) -> None:
    """``nodePools[].upgrade`` against the nodes each pool runs on (a managed node group, a Karpenter NodePool or
    both: `karpenter_objects.split`), and ``maintenance.window`` against the pools that use it (`aws_upgrade`)."""
    karpenter = config.autoscaling.autoscaler == "karpenter"
    drifting = []
    for i, pool in enumerate(config.node_pools):
        path = join(join("nodePools", i), "upgrade")
        karpenter_share = karpenter and pool.max_nodes > pool.min_nodes
        if not karpenter or pool.min_nodes > 0:  # a managed node group holds the pool, or its baseline
            aws_upgrade.refuse_on_node_group(pool.upgrade, path, automatic_elsewhere=karpenter_share)
        if karpenter_share:
            aws_upgrade.refuse_on_karpenter(pool.upgrade, path)
            drifting.append(pool.upgrade.resolved(pool.role))
    if config.maintenance.given and not aws_upgrade.uses_window(drifting):
        why = ("no Karpenter pool replaces drifted nodes in it (every one is automatic: never)" if karpenter else
               "EKS never upgrades managed node groups on its own, so no window applies (Karpenter pools use one)")
        raise ConfigError("maintenance.window", why)


def parse_cluster_options(raw: Mapping, config: Any) -> AwsClusterOptions:
    """The cluster keys, plus the rules that tie pools to the VPC (zones, subnets)."""
    if not _REGION.match(config.region):
        raise ConfigError("region", f"'{config.region}' is not an AWS region such as us-west-2")
    addons = versions.EKS_ADDONS.get(config.kubernetes_version)
    if addons is None:
        pinned = ", ".join(sorted(versions.EKS_ADDONS))
        raise ConfigError("kubernetesVersion", f"EKS add-on versions are pinned for Kubernetes {pinned}; "
                                               f"got '{config.kubernetes_version}'")
    vpc_id = read_matching(raw, "vpcId", "", _VPC_ID, "a VPC id such as vpc-0123456789abcdef0")
    subnet_id = "a subnet id such as subnet-0123456789abcdef0"
    private = _read_ids(raw, "privateSubnetIds", "", _SUBNET_ID, subnet_id)
    public = _read_ids(raw, "publicSubnetIds", "", _SUBNET_ID, subnet_id)
    if vpc_id is None:
        for key in ("privateSubnetIds", "publicSubnetIds"):
            if key in raw:
                raise ConfigError(key, "only applies with vpcId (an existing VPC)")
    else:
        if len(private) < 2:
            raise ConfigError("privateSubnetIds", "an existing VPC needs at least two private subnets "
                                                  "(EKS requires two availability zones)")
        for key in ("vpcCidr", "availabilityZones", "singleNatGateway"):
            if key in raw:
                raise ConfigError(key, "only applies to a new VPC; remove it or remove vpcId")
    cidr = VPC_CIDR.checked(raw["vpcCidr"], "vpcCidr") if "vpcCidr" in raw else DEFAULT_VPC_CIDR
    zones = tuple(str(z) for z in read_list(raw, "availabilityZones", ""))
    if zones and not 2 <= len(zones) <= 3:
        raise ConfigError("availabilityZones", f"name two or three zones, got {len(zones)}")
    for j, zone in enumerate(zones):
        _check_zone(zone, config.region, join("availabilityZones", j))
    if len(set(zones)) != len(zones):
        raise ConfigError("availabilityZones", "lists a zone twice")
    admins = _read_ids(raw, "adminRoleArns", "", _IAM_PRINCIPAL, "an IAM role or user ARN")
    instance_type = read_matching(raw, "systemNodeInstanceType", "", _INSTANCE_TYPE,
                                  "an EC2 instance type such as m6i.xlarge", DEFAULT_SYSTEM_INSTANCE_TYPE)
    security = control_plane.parse_control_plane(raw)
    _check_pools(config, vpc_id is None, zones)
    _check_karpenter(config)
    _check_upgrades(config)
    return AwsClusterOptions(
        vpc_id=vpc_id,
        private_subnet_ids=private,
        public_subnet_ids=public,
        vpc_cidr=cidr,
        availability_zones=zones,
        single_nat_gateway=read_bool(raw, "singleNatGateway", "", True),
        admin_role_arns=admins,
        system_node_instance_type=instance_type,
        system_nodes=read_int(raw, "systemNodes", "", 2, minimum=1),
        control_plane=security,
        addon_versions=tuple(sorted(addons.items())),
    )


def stack_name_problem(stack: str) -> Optional[str]:
    """Why a stack cannot be named ``stack`` on AWS (the stack parser asks first), or None."""
    return physical_name_problem(stack, "EKS node groups")
