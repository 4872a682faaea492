"""The argument rules of the OKE components (`OkeCluster`, `OkeGpuNodePool`, `OkeVcn`, `OkeClusterAutoscaler`),
pure: the stack file's OCI rules (`oci.options`) restated for the components' snake_case args, so a program that
imports them gets the same refusals as a stack file (`component_args`). No cloud SDK import.
"""

import re
from collections.abc import Mapping
from typing import Any, Optional

from ... import catalog, control_plane
from ...component_args import Args, Rule, at_least, between
from ...provisioning import RESERVATION
from ...upgrades import kubernetes_versions
from .options import (
    AD_NAME,
    MAX_AVAILABILITY_DOMAINS,
    MAX_BOOT_VOLUME_GIB,
    MIN_BOOT_VOLUME_GIB,
    PATCH_VERSION,
    compute_cluster_problem,
    image_problem,
    is_bare_metal,
    ocid_problem,
    reservation_problem,
    vcn_cidr_problem,
)

MINOR_VERSION = r"1\.(2[5-9]|3[0-9])"


def ocid(kind: str, *others: str) -> Rule:
    """An OCID of ``kind`` (or one of ``others``: a compartment may be the tenancy, its root)."""
    def problem(value: str) -> Optional[str]:
        if any(ocid_problem(value, k) is None for k in others):
            return None
        return ocid_problem(value, kind)
    return Rule(check=problem)


COMPARTMENT = ocid("compartment", "tenancy")
VCN_CIDR = Rule(check=vcn_cidr_problem)


def _cluster_version_problem(value: str) -> Optional[str]:
    if re.fullmatch(MINOR_VERSION, value) or PATCH_VERSION.match(value):
        return _offered_problem(value)
    return (f"'{value}' is not a Kubernetes minor version (1.25 to 1.39, such as {kubernetes_versions.default_minor()})"
            f" or an OKE version such as v{kubernetes_versions.default_minor()}.1")


def _offered_problem(version: str) -> Optional[str]:
    """The minor of ``1.36`` or ``v1.36.1`` must be one OKE offers."""
    minor = ".".join(version.lstrip("v").split(".")[:2])
    return kubernetes_versions.offered_problem("oci", minor)


def _pool_version_problem(value: str) -> Optional[str]:
    if not PATCH_VERSION.match(value):
        return f"'{value}' is not an exact OKE version such as v1.34.1 (OkeCluster.kubernetes_version)"
    return _offered_problem(value)


def _ad_names_problem(names: list[str]) -> Optional[str]:
    if not names:
        return "must name at least one availability domain"
    for name in names:
        if not AD_NAME.match(name):
            return f"'{name}' is not an availability domain name such as Uocm:US-ASHBURN-AD-1"
    return None


def _unique_problem(values: list) -> Optional[str]:
    return f"lists an availability domain twice: {values}" if len(set(values)) != len(values) else None


CLUSTER_RULES: dict[str, Rule] = {
    "compartment_id": COMPARTMENT,
    "kubernetes_version": Rule(check=_cluster_version_problem),
    "cluster_name": Rule(check=lambda v: "must not be empty" if not v.strip() else None),
    "vcn_cidr": VCN_CIDR,
    "vcn_id": ocid("vcn"),
    "endpoint_subnet_id": ocid("subnet"),
    "worker_subnet_id": ocid("subnet"),
    "pod_subnet_id": ocid("subnet"),
    "load_balancer_subnet_id": ocid("subnet"),
    "api_allowed_cidrs": control_plane.ALLOWED_CIDRS,
    "api_allowed_cidrs[]": control_plane.CIDR,
}
VCN_RULES: dict[str, Rule] = {
    "compartment_id": COMPARTMENT,
    "cidr": VCN_CIDR,
    "api_allowed_cidrs": control_plane.ALLOWED_CIDRS,
    "api_allowed_cidrs[]": control_plane.CIDR,
}
POOL_RULES: dict[str, Rule] = {
    "cluster_id": ocid("cluster"),
    "compartment_id": COMPARTMENT,
    "kubernetes_version": Rule(check=_pool_version_problem),
    "worker_subnet_id": ocid("subnet"),
    "pod_subnet_id": ocid("subnet"),
    "availability_domains": Rule(check=_ad_names_problem),
    "zones": Rule(check=_unique_problem),
    "zones[]": between(1, MAX_AVAILABILITY_DOMAINS),
    "image_id": ocid("image"),
    "boot_volume_size_gib": between(MIN_BOOT_VOLUME_GIB, MAX_BOOT_VOLUME_GIB),
    "size": at_least(0),
    "compute_cluster_id": ocid("computecluster"),
}
AUTOSCALER_RULES: dict[str, Rule] = {
    "cluster_id": ocid("cluster"),
    "compartment_id": COMPARTMENT,
    "node_pools[].node_pool_id": ocid("nodepool"),
    "node_pools[].min_nodes": at_least(0),
    "node_pools[].max_nodes": at_least(1),
    "scale_down_unneeded_minutes": at_least(1),
    "max_node_provision_minutes": at_least(1),
}

_SUBNETS = ("endpoint_subnet_id", "worker_subnet_id", "pod_subnet_id", "load_balancer_subnet_id")


RENAMED_ARGS = {"public_endpoint": "api_allowed_cidrs"}
"""First-round arguments of `OkeCluster` and `OkeVcn` and the argument that replaced them."""


def refuse_renamed(checker: Args, args: Any) -> None:
    """Refuse a first-round argument with a pointer to its replacement (before the unknown-argument check, whose
    message would not say what to use instead)."""
    if not isinstance(args, Mapping):
        return
    for old, new in RENAMED_ARGS.items():
        if old in args:
            checker.fail(old, f"was replaced by {new} (empty: private endpoint only; a list of CIDRs: a public "
                              "endpoint open to those CIDRs only)")


def check_cluster(checker: Args, args: Mapping[str, Any]) -> None:
    """An existing VCN comes with its four subnets and without the created VCN's CIDR."""
    if "vcn_id" in args:
        for key in _SUBNETS:
            if key not in args:
                checker.fail(key, f"is required with vcn_id (an existing VCN needs all of {', '.join(_SUBNETS)})")
        if "vcn_cidr" in args:
            checker.fail("vcn_cidr", "applies to the VCN OkeCluster creates; remove it or remove vcn_id")
    else:
        for key in _SUBNETS:
            if key in args:
                checker.fail(key, "needs vcn_id: subnets are only given together with an existing VCN")


def check_pool(checker: Args, args: Mapping[str, Any]) -> None:
    """RDMA pools: bare metal, not preemptible, an RDMA-ready image, one AD; reservation pools: a capacity
    reservation OCID and one AD (`options.reservation_problem`); ``compute_cluster_id`` only on RDMA
    pools, and required on dedicated-capacity shapes (GB200/GB300 racks); an image on AMD and arm64 shapes
    (`options.image_problem`); ``preemptible`` agrees with the pool's ``spot`` and needs a VM shape; ``size`` within
    the bounds."""
    pool = args["pool"]
    rdma = pool.get("rdma_fabric") == catalog.ROCE
    preemptible = args.get("preemptible", pool.get("spot", False))
    if "preemptible" in args and args["preemptible"] != pool.get("spot", False):
        checker.fail("preemptible", f"{args['preemptible']} contradicts pool.spot ({pool.get('spot', False)}); "
                                    "set spot in the pool (preemptible follows it)")
    if rdma and preemptible:
        checker.fail("pool.spot", "an RDMA pool cannot use preemptible capacity (bare metal shapes only)")
    if preemptible and is_bare_metal(pool["instance_type"]):
        checker.fail("pool.spot", f"OCI preemptible capacity does not support bare metal shapes such as "
                                  f"'{pool['instance_type']}'; use a VM.GPU shape or spot false")
    shape = catalog.SHAPES.get(("oci", pool["instance_type"]))
    # The catalog knows a shape's CPU; a spec of an uncatalogued shape says its own.
    architecture = shape.architecture if shape is not None else pool.get("architecture") or catalog.AMD64
    missing_image = image_problem(pool.get("gpu_model", ""), architecture, pool["instance_type"])
    if "image_id" not in args and missing_image is not None:
        checker.fail("image_id", missing_image)
    if "compute_cluster_id" not in args and compute_cluster_problem(shape, "pool.rdma_fabric 'roce'") is not None:
        checker.fail("compute_cluster_id", compute_cluster_problem(shape, "pool.rdma_fabric 'roce'"))
    if rdma and "image_id" not in args:
        checker.fail("image_id", "is required on an RDMA pool; OKE's Oracle Linux GPU images have no RDMA (OFED) "
                                 "stack, import an RDMA-ready image (oracle-quickstart/oci-hpc-oke)")
    if "compute_cluster_id" in args and not rdma:
        checker.fail("compute_cluster_id", "only applies to an RDMA pool (pool.rdma_fabric 'roce')")
    if rdma and len(args.get("zones", [])) > 1:
        checker.fail("zones", f"an RDMA pool's compute cluster lives in one availability domain, "
                              f"got {len(args['zones'])}")
    if pool.get("provisioning") == RESERVATION:
        problem = reservation_problem(pool.get("reservation", ""), len(args.get("zones", [])))
        if problem is not None:
            checker.fail("pool.reservation" if problem[0] == "reservation" else problem[0], problem[1])
    if "size" in args and not pool["min_nodes"] <= args["size"] <= pool["max_nodes"]:
        checker.fail("size", f"must be between pool.min_nodes ({pool['min_nodes']}) and pool.max_nodes "
                             f"({pool['max_nodes']}), got {args['size']}")


def check_autoscaler(checker: Args, args: Mapping[str, Any]) -> None:
    pools = args.get("node_pools", [])
    if not pools:
        checker.fail("node_pools", "must list at least one node pool to autoscale")
    for i, pool in enumerate(pools):
        if pool["min_nodes"] > pool["max_nodes"]:
            checker.fail(f"node_pools[{i}].min_nodes", f"min_nodes ({pool['min_nodes']}) is greater than "
                                                       f"max_nodes ({pool['max_nodes']})")
