"""The argument contract of the AWS components: what `EksCluster`, `EksGpuNodePool`, `EksClusterAutoscaler` and
`KarpenterAutoscaler` refuse before they register anything.

Types, unknown keys and pool specs are `component_args.Args`'s; the rules here are the stack file's AWS rules
(``options.py``) spelled for the components' snake_case arguments, plus what only a component can get wrong (a
pool of an `EksCluster` naming the cluster's own settings, a standalone node group without its cluster). No SDK:
the components call these with their TypedDict schemas.
"""

import re
from collections.abc import Mapping
from typing import Any, Optional

from ... import control_plane, provisioning, versions
from ...component_args import NON_EMPTY, Args, Rule, at_least, choice, cidr, matching, offered_kubernetes_version
from ...errors import ConfigError
from ...pools import GpuPool
from ...upgrades.maintenance import parse_window
from ...upgrades.pool_upgrade import PoolUpgrade, argument_path, upgrade_from_args
from . import options
from . import upgrade as aws_upgrade
from .efa import vpc_cni_supports_efa_only

COMPUTE_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
"""Installed before any node joins (a node is NotReady without the CNI)."""
LATE_ADDONS = ("coredns",)
"""Installed once the system nodes exist (CoreDNS pods need a node)."""
ADDONS = (*COMPUTE_ADDONS, *LATE_ADDONS)

SET_BY_CLUSTER = ("cluster_name", "node_role_arn", "vpc_id", "cluster_security_group_id", "kubernetes_version")
"""`EksGpuNodePoolArgs` an `EksCluster` fills in for its own pools (a value given there would be overwritten)."""

REGION = matching(options._REGION.pattern.strip("^$"), "an AWS region such as us-west-2")
VPC_ID = matching(options._VPC_ID.pattern.strip("^$"), "a VPC id such as vpc-0123456789abcdef0")
SUBNET_ID = matching(options._SUBNET_ID.pattern.strip("^$"), "a subnet id such as subnet-0123456789abcdef0")
SECURITY_GROUP_ID = matching(r"sg-[0-9a-f]{8,17}", "a security group id such as sg-0123456789abcdef0")
INSTANCE_TYPE = matching(options._INSTANCE_TYPE.pattern.strip("^$"), "an EC2 instance type such as m6i.xlarge")
IAM_PRINCIPAL = matching(options._IAM_PRINCIPAL.pattern.strip("^$"), "an IAM role or user ARN")
EKS_CLUSTER_NAME = matching(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}",
                            "an EKS cluster name (letters, digits, '-' and '_', at most 100)")
ADDON_VERSION = r"v\d+\.\d+\.\d+-eksbuild\.\d+"


def eks_cluster_name(name: str) -> str:
    """The EKS cluster name for a component (or stack) ``name``: itself when EKS takes it, else with every character
    EKS refuses as ``-`` (a Pulumi stack name such as ``Team.Azure`` may hold ``.``), at most 100 characters."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]", "-", name).lstrip("-_")[:100]
    return cleaned or "gpu-platform"


def _addons(value: Mapping[str, str]) -> Optional[str]:
    missing = [a for a in ADDONS if a not in value]
    if missing:
        return f"missing the {', '.join(missing)} add-on version (EksCluster installs {', '.join(ADDONS)}; " \
               "pinned sets: gpu_platform.versions.EKS_ADDONS)"
    unknown = sorted(set(value) - set(ADDONS))
    if unknown:
        return f"EksCluster installs only {', '.join(ADDONS)}; remove {', '.join(unknown)}"
    for addon, version in value.items():
        if not isinstance(version, str) or not re.fullmatch(ADDON_VERSION, version):
            return f"{addon}: '{version}' is not an EKS add-on version such as v1.20.4-eksbuild.2"
    return None


def _zones(value: list[str]) -> Optional[str]:
    if not 2 <= len(value) <= options.MAX_VPC_ZONES:
        return f"name two or three zones (EKS needs two), got {len(value)}"
    if len(set(value)) != len(value):
        return "lists a zone twice"
    return None


def pool_rules(prefix: str = "") -> dict[str, Rule]:
    """Rules of `EksGpuNodePoolArgs` keys, under ``prefix`` (``gpu_pools[].`` inside `EksClusterArgs`)."""
    return {
        f"{prefix}ami_type": choice(*options.ACCELERATOR_AMI_TYPES),
        f"{prefix}disk_size_gib": at_least(options.MIN_DISK_GIB),
        f"{prefix}desired_nodes": at_least(0),
        f"{prefix}subnet_ids": NON_EMPTY,
        f"{prefix}subnet_ids[]": SUBNET_ID,
        f"{prefix}vpc_id": VPC_ID,
        f"{prefix}cluster_security_group_id": SECURITY_GROUP_ID,
        f"{prefix}zones": NON_EMPTY,
        f"{prefix}kubernetes_version": offered_kubernetes_version("aws"),
    }


CLUSTER_RULES: dict[str, Rule] = {
    "cluster_name": EKS_CLUSTER_NAME,
    "region": REGION,
    "kubernetes_version": offered_kubernetes_version("aws"),
    "addon_versions": Rule(check=_addons),
    "vpc_id": VPC_ID,
    "private_subnet_ids[]": SUBNET_ID,
    "public_subnet_ids[]": SUBNET_ID,
    "vpc_cidr": cidr(options.VPC_CIDR),
    "availability_zones": Rule(check=_zones),
    "admin_role_arns[]": IAM_PRINCIPAL,
    "system_node_instance_type": INSTANCE_TYPE,
    "system_nodes": at_least(1),
    "api_allowed_cidrs": control_plane.ALLOWED_CIDRS,
    "api_allowed_cidrs[]": control_plane.CIDR,
    **pool_rules("gpu_pools[]."),
}

RENAMED_ARGS = {"endpoint_public_access": "api_allowed_cidrs", "public_access_cidrs": "api_allowed_cidrs"}
"""`EksCluster` arguments of the first round that ``api_allowed_cidrs`` replaced: refused naming it."""
RENAMED_POOL_ARGS = {
    "capacity_reservation_id": "pool.provisioning 'reservation' and pool.reservation (the same cr-... id)"}
"""Pool arguments (`EksGpuNodePool`, `EksCluster.gpu_pools[]`, `KarpenterAutoscaler.node_pools[]`) of the first round
and what replaced them: the pool's own provisioning mode and reservation."""


def pool_key(key: str) -> str:
    """How the components spell a pool key in `capacity_problem`'s messages: the shared ones live in the pool."""
    return f"pool.{key}" if key in ("provisioning", "reservation") else key


def refuse_renamed_pool_args(checker: Args, entries: Any, path: str = "") -> None:
    """Refuse a first-round pool argument naming its replacement, before the unknown-argument check (``entries``: one
    pool's args, or with ``path`` ``gpu_pools``/``node_pools`` the list of them)."""
    many = isinstance(entries, list)
    for i, entry in enumerate(entries if many else [entries]):
        if not isinstance(entry, Mapping):
            continue
        for old, new in RENAMED_POOL_ARGS.items():
            if old in entry:
                checker.fail(f"{path}[{i}].{old}" if many else old, f"was replaced by {new}")


def _zone_of(checker: Args, zone: str, region: str, path: str) -> None:
    if region and not re.fullmatch(re.escape(region) + r"[a-z]", zone):
        checker.fail(path, f"'{zone}' is not an availability zone of {region} (such as {region}a)")


def check_pool_entry(checker: Args, args: Mapping[str, Any], path: str) -> GpuPool:
    """The AWS rules one pool's args break, across keys (``path``: ``""`` or ``gpu_pools[0].``); its `GpuPool`."""
    pool = GpuPool.from_spec(args["pool"])
    if "desired_nodes" in args and not pool.min_nodes <= args["desired_nodes"] <= pool.max_nodes:
        checker.fail(f"{path}desired_nodes", f"must be between the pool's min_nodes ({pool.min_nodes}) and "
                                             f"max_nodes ({pool.max_nodes}), got {args['desired_nodes']}")
    problem = options.capacity_problem(
        mode=pool.provisioning, rdma=bool(pool.rdma_fabric), sharing_mode=pool.sharing.mode,
        ami_type=args.get("ami_type", options.default_ami_type(pool.vendor, pool.architecture)),
        reservation=pool.reservation, capacity_block=bool(args.get("capacity_block", False)),
        placement=bool(args.get("placement_group", False)), placement_given="placement_group" in args,
        spell=pool_key, vendor=pool.vendor, architecture=pool.architecture, instance_type=pool.instance_type,
        dra=pool.dra)
    if problem is not None:
        checker.fail(f"{path}{problem[0]}", problem[1])
    upgrade = checked_upgrade(checker, args.get("upgrade"), f"{path}upgrade")
    _refused(checker, f"{path}upgrade", lambda: aws_upgrade.refuse_on_node_group(upgrade, "upgrade"))
    return pool


def checked_upgrade(checker: Args, value: Any, path: str) -> PoolUpgrade:
    """An ``upgrade`` argument parsed (`upgrade_from_args`), its errors in the component's one-line form."""
    try:
        return upgrade_from_args(value, "upgrade")
    except ConfigError as err:
        checker.fail(path + err.path[len("upgrade"):], err.problem)


def _refused(checker: Args, path: str, refuse: Any) -> None:
    """Run a refusal worded for the stack file (``upgrade.maxSurge``) and name the component argument instead
    (``gpu_pools[0].upgrade.max_surge``)."""
    try:
        refuse()
    except ConfigError as err:
        checker.fail(path + argument_path(err.path)[len("upgrade"):], err.problem)


def node_pool_args(name: str, args: Any, schema: type) -> dict[str, Any]:
    """`EksGpuNodePool`'s args checked; standalone it needs what an `EksCluster` would give it."""
    checker = Args("EksGpuNodePool", name, cloud="aws")
    refuse_renamed_pool_args(checker, args)
    out = checker.check(args, schema, pool_rules())
    pool = check_pool_entry(checker, out, "")
    for key in ("cluster_name", "node_role_arn", "subnet_ids"):
        if key not in out:
            checker.fail(key, "is required (an EksCluster sets it for the pools in its gpu_pools)")
    if "zones" in out:
        checker.fail("zones", "only an EksCluster maps zones to its subnets; give this node group subnet_ids")
    if pool.rdma_fabric:
        for key in ("vpc_id", "cluster_security_group_id"):
            if key not in out:
                checker.fail(key, f"is required for the EFA pool '{pool.name}' (its security group)")
    return out


def cluster_args(name: str, args: Any, schema: type) -> dict[str, Any]:
    """`EksCluster`'s args checked, the rules that tie its pools to its VPC included."""
    checker = Args("EksCluster", name, cloud="aws")
    if isinstance(args, Mapping):
        for old, new in RENAMED_ARGS.items():
            if old in args:
                checker.fail(old, f"was replaced by {new} (empty: private endpoint only; a list of CIDRs: a public "
                                  "endpoint open to those CIDRs only)")
        refuse_renamed_pool_args(checker, args.get("gpu_pools"), "gpu_pools")
    out = checker.check(args, schema, CLUSTER_RULES)
    region = out["region"]
    existing_vpc = "vpc_id" in out
    if existing_vpc:
        if len(out.get("private_subnet_ids", [])) < 2:
            checker.fail("private_subnet_ids", "an existing VPC (vpc_id) needs at least two private subnets "
                                               "(EKS requires two availability zones)")
        for key in ("vpc_cidr", "availability_zones", "single_nat_gateway"):
            if key in out:
                checker.fail(key, "only applies to a new VPC; remove it or remove vpc_id")
    else:
        for key in ("private_subnet_ids", "public_subnet_ids"):
            if key in out:
                checker.fail(key, "only applies with vpc_id (an existing VPC)")
    vpc_zones = out.get("availability_zones", [])
    for j, zone in enumerate(vpc_zones):
        _zone_of(checker, zone, region, f"availability_zones[{j}]")

    entries = out.get("gpu_pools", [])
    pools = [check_pool_entry(checker, entry, f"gpu_pools[{i}].") for i, entry in enumerate(entries)]
    checker.unique([p.name for p in pools], "gpu_pools", "pool name")
    named: list[str] = []
    for i, (entry, pool) in enumerate(zip(entries, pools, strict=True)):
        path = f"gpu_pools[{i}]"
        for key in SET_BY_CLUSTER:
            if key in entry:
                checker.fail(f"{path}.{key}", "is set by the EksCluster for its own pools; remove it")
        zones = entry.get("zones", [])
        reserved = pool.provisioning == provisioning.RESERVATION
        if existing_vpc:
            if zones:
                checker.fail(f"{path}.zones", "with vpc_id, place the pool with subnet_ids instead")
            if (pool.rdma_fabric or reserved) and "subnet_ids" not in entry:
                why = "an EFA pool" if pool.rdma_fabric else "a pool on reserved capacity"
                checker.fail(f"{path}.subnet_ids", f"{why} in an existing VPC needs the subnet(s) of its one "
                                                   "availability zone")
            continue
        if "subnet_ids" in entry:
            checker.fail(f"{path}.subnet_ids", "only applies with vpc_id; in a new VPC use zones")
        for j, zone in enumerate(zones):
            _zone_of(checker, zone, region, f"{path}.zones[{j}]")
            if vpc_zones and zone not in vpc_zones:
                checker.fail(f"{path}.zones[{j}]", f"'{zone}' is not one of availability_zones "
                                                   f"({', '.join(vpc_zones)})")
            if zone not in named:
                named.append(zone)
            if not vpc_zones and len(named) > options.MAX_VPC_ZONES:
                checker.fail(f"{path}.zones[{j}]", f"pools name more than {options.MAX_VPC_ZONES} zones "
                                                   f"({', '.join(named)}); a new VPC spans {options.MAX_VPC_ZONES}")
        if pool.rdma_fabric and len(zones) > 1:
            checker.fail(f"{path}.zones", f"EFA traffic stays in one subnet of one zone; name one zone, not "
                                          f"{len(zones)}")
        if reserved and len(zones) != 1:
            checker.fail(f"{path}.zones", "name the one zone of pool.reservation (an EC2 capacity reservation lives "
                                          "in one availability zone)")
    if any(p.rdma_fabric for p in pools) and not vpc_cni_supports_efa_only(out["addon_versions"]["vpc-cni"]):
        checker.fail("addon_versions.vpc-cni", f"EFA pools need vpc-cni v1.18.5 or later (efa-only interfaces), got "
                                               f"{out['addon_versions']['vpc-cni']}")
    return out


AUTOSCALER_RULES: dict[str, Rule] = {
    "region": REGION,
    "kubernetes_version": choice(*versions.CLUSTER_AUTOSCALER_IMAGE_TAGS),
    "scale_down_unneeded_minutes": at_least(1),
    "max_node_provision_minutes": at_least(1),
}


def autoscaler_args(name: str, args: Any, schema: type) -> dict[str, Any]:
    """`EksClusterAutoscaler`'s args checked."""
    return Args("EksClusterAutoscaler", name, cloud="aws").check(args, schema, AUTOSCALER_RULES)


KARPENTER_RULES: dict[str, Rule] = {
    "region": REGION,
    "system_nodes": at_least(1),
    "consolidate_after_minutes": at_least(1),
    "node_pools[].nodes": at_least(1),
    "node_pools[].ami_type": choice(*options.ACCELERATOR_AMI_TYPES),
    "node_pools[].capacity_type": choice(options.ON_DEMAND, options.SPOT, options.CAPACITY_BLOCK),
    "node_pools[].disk_size_gib": at_least(options.MIN_DISK_GIB),
    "node_pools[].subnet_ids": NON_EMPTY,
    "node_pools[].subnet_ids[]": SUBNET_ID,
    "node_pools[].security_group_ids[]": SECURITY_GROUP_ID,
    "vpc_id": VPC_ID,
    "cluster_security_group_id": SECURITY_GROUP_ID,
}


def karpenter_args(name: str, args: Any, schema: type) -> dict[str, Any]:
    """`KarpenterAutoscaler`'s args checked: each pool's capacity agrees with its spec, pools are unique, and
    what its pools need from the cluster is there."""
    checker = Args("KarpenterAutoscaler", name, cloud="aws")
    if isinstance(args, Mapping):
        refuse_renamed_pool_args(checker, args.get("node_pools"), "node_pools")
    out = checker.check(args, schema, KARPENTER_RULES)
    entries = out.get("node_pools", [])
    pools = [GpuPool.from_spec(entry["pool"]) for entry in entries]
    checker.unique([p.name for p in pools], "node_pools", "pool name")
    if entries and "cluster_security_group_id" not in out:
        checker.fail("cluster_security_group_id", "is required with node_pools (every Karpenter node joins it)")
    for i, (entry, pool) in enumerate(zip(entries, pools, strict=True)):
        path = f"node_pools[{i}]"
        capacity = entry.get("capacity_type", options.SPOT if pool.spot else options.ON_DEMAND)
        if (capacity == options.SPOT) != pool.spot:
            checker.fail(f"{path}.capacity_type", f"'{capacity}' disagrees with the pool's spot: {pool.spot}")
        if pool.dra:
            # As the stack file's rule (options._check_karpenter): the managed node groups' cluster-autoscaler
            # path is the one EKS documents for DRA.
            checker.fail(f"{path}.pool.gpu_allocation",
                         f"Karpenter {versions.KARPENTER.version} does not provision nodes for DRA ResourceClaims; "
                         "give the pool to an EksCluster (managed node groups) instead")
        problem = options.capacity_problem(
            mode=pool.provisioning, rdma=bool(pool.rdma_fabric), sharing_mode=pool.sharing.mode,
            ami_type=entry.get("ami_type", options.default_ami_type(pool.vendor, pool.architecture)),
            reservation=pool.reservation, capacity_block=capacity == options.CAPACITY_BLOCK,
            placement=bool(entry.get("placement_group", False)), placement_given="placement_group" in entry,
            spell=pool_key, vendor=pool.vendor, architecture=pool.architecture,
            instance_type=pool.instance_type)
        if problem is not None:
            key = "capacity_type" if problem[0] == "capacity_block" else problem[0]
            checker.fail(f"{path}.{key}", problem[1])
        if "subnet_ids" not in entry:
            checker.fail(f"{path}.subnet_ids", "is required (the subnets Karpenter launches the pool's nodes in)")
        if pool.sharing.shared:
            checker.fail(f"{path}.pool.sharing_mode",
                         f"{pool.sharing.mode} advertises {pool.sharing.replicas} GPUs per physical GPU, which "
                         "Karpenter cannot know when it sizes nodes (it would launch a node per pod); use "
                         "EksClusterAutoscaler or sharing mode exclusive/mig")
        if pool.rdma_fabric and not entry.get("security_group_ids") and "vpc_id" not in out:
            checker.fail("vpc_id", f"is required for the EFA pool '{pool.name}' (its security group)")
        upgrade = checked_upgrade(checker, entry.get("upgrade"), f"{path}.upgrade")
        _refused(checker, f"{path}.upgrade", lambda u=upgrade: aws_upgrade.refuse_on_karpenter(u, "upgrade"))
    try:
        parse_window(out.get("maintenance_window"), "maintenance_window")
    except ConfigError as err:
        checker.fail(err.path, err.problem)
    resolved = [upgrade_from_args(entry.get("upgrade"), "upgrade").resolved(pool.role)
                for entry, pool in zip(entries, pools, strict=True)]
    if "maintenance_window" in out and not aws_upgrade.uses_window(resolved):
        checker.fail("maintenance_window", "no pool lets Karpenter replace drifted nodes in a window (every pool "
                                           "is automatic: never); remove it")
    return out
