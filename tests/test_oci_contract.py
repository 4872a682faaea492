"""OKE components as a library: every argument takes effect or is refused with one `ConfigError` line, and a pool
built with `pool_args("oci", entry)` plans exactly what the same stack-file entry plans (RoCE plumbing included)."""

import re

import pulumi
import pytest

from gpu_platform.clouds.oci import OkeCluster, OkeClusterAutoscaler, OkeGpuNodePool, OkeVcn, cluster_from_config
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool, pool_args
from gpu_platform.testing import run_program

COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
IMAGE = "ocid1.image.oc1.iad.aaaaaaaaubuntudocaofed"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
A10 = {"name": "a10", "instanceType": "VM.GPU.A10.1", "maxNodes": 3}
H100 = {"name": "h100", "instanceType": "BM.GPU.H100.8", "minNodes": 2, "maxNodes": 2, "rdma": True,
        "imageId": IMAGE}


def in_cluster(entry: dict, name: str = "p") -> OkeGpuNodePool:
    """A hand-composed pool on a hand-composed cluster (the cluster fills the ids, version, subnets and ADs)."""
    cluster = OkeCluster("oke", {"compartment_id": COMPARTMENT, "kubernetes_version": "1.34"})
    return OkeGpuNodePool(name, {**entry, "cluster_id": cluster.cluster_id, "compartment_id": COMPARTMENT,
                                 "kubernetes_version": cluster.kubernetes_version,
                                 "worker_subnet_id": cluster.worker_subnet_id, "pod_subnet_id": cluster.pod_subnet_id,
                                 "availability_domains": cluster.availability_domains})


PLAIN = {"cluster_id": "ocid1.cluster.oc1.iad.aaaaaaaacluster", "compartment_id": COMPARTMENT,
         "kubernetes_version": "v1.34.1", "worker_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaaworkers",
         "pod_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaapods", "availability_domains": ["Uocm:US-ASHBURN-AD-1"]}

MISUSE = {
    "pool of another cloud": (
        lambda: OkeGpuNodePool("p", {**PLAIN, "pool": gpu_pool("azure", {
            "name": "a100", "instanceType": "Standard_NC24ads_A100_v4"}).spec()}),
        "OkeGpuNodePool p: pool.cloud: pool 'a100' is an Azure pool; OkeGpuNodePool takes OCI pools"),
    "spot RDMA pool": (
        lambda: OkeGpuNodePool("p", {**PLAIN, **pool_args("oci", H100), "pool": {
            **pool_args("oci", H100)["pool"], "spot": True}}),
        "OkeGpuNodePool p: pool.spot: an RDMA pool cannot use preemptible capacity (bare metal shapes only)"),
    "preemptible contradicting spot": (
        lambda: OkeGpuNodePool("p", {**PLAIN, **pool_args("oci", A10), "preemptible": True}),
        "OkeGpuNodePool p: preemptible: True contradicts pool.spot (False); set spot in the pool (preemptible "
        "follows it)"),
    "RDMA pool without an RDMA image": (
        lambda: OkeGpuNodePool("p", {**PLAIN, "pool": pool_args("oci", H100)["pool"]}),
        "OkeGpuNodePool p: image_id: is required on an RDMA pool; OKE's Oracle Linux GPU images have no RDMA (OFED) "
        "stack, import an RDMA-ready image (oracle-quickstart/oci-hpc-oke)"),
    "compute cluster on a non-RDMA pool (would be dropped)": (
        lambda: OkeGpuNodePool("p", {**PLAIN, **pool_args("oci", A10),
                                     "compute_cluster_id": "ocid1.computecluster.oc1.iad.aaaaaaaacc"}),
        "OkeGpuNodePool p: compute_cluster_id: only applies to an RDMA pool (pool.rdma_fabric 'roce')"),
    "image OCID of another kind": (
        lambda: OkeGpuNodePool("p", {**PLAIN, **pool_args("oci", A10), "image_id": "ocid1.subnet.oc1.iad.aaaa"}),
        "OkeGpuNodePool p: image_id: 'ocid1.subnet.oc1.iad.aaaa' is a subnet OCID; expected ocid1.image.oc1..<unique "
        "id>"),
    "availability domain number out of range": (
        lambda: OkeGpuNodePool("p", {**PLAIN, **pool_args("oci", A10), "zones": [4]}),
        "OkeGpuNodePool p: zones[0]: must be <= 3, got 4"),
    "boot volume too small": (
        lambda: OkeGpuNodePool("p", {**PLAIN, **pool_args("oci", A10), "boot_volume_size_gib": 20}),
        "OkeGpuNodePool p: boot_volume_size_gib: must be >= 50, got 20"),
    "size above max": (
        lambda: OkeGpuNodePool("p", {**PLAIN, **pool_args("oci", A10), "size": 9}),
        "OkeGpuNodePool p: size: must be between pool.min_nodes (0) and pool.max_nodes (3), got 9"),
    "missing cluster id": (
        lambda: OkeGpuNodePool("p", {k: v for k, v in {**PLAIN, **pool_args("oci", A10)}.items()
                                     if k != "cluster_id"}),
        "OkeGpuNodePool p: cluster_id: is required"),
    "kubernetes version": (
        lambda: OkeCluster("oke", {"compartment_id": COMPARTMENT, "kubernetes_version": "1.99"}),
        "OkeCluster oke: kubernetes_version: '1.99' is not a Kubernetes minor version (1.25 to 1.39, such as 1.36) or "
        "an OKE version such as v1.36.1"),
    "camelCase key": (
        lambda: OkeCluster("oke", {"compartmentId": COMPARTMENT}),
        "OkeCluster oke: compartmentId: unknown argument; arguments are snake_case in Python: use 'compartment_id' "
        "(camelCase is the stack file's spelling)"),
    "compartment OCID": (
        lambda: OkeCluster("oke", {"compartment_id": "ocid1.vcn.oc1.iad.aaaa"}),
        "OkeCluster oke: compartment_id: 'ocid1.vcn.oc1.iad.aaaa' is a vcn OCID; expected "
        "ocid1.compartment.oc1..<unique id>"),
    "VCN CIDR with an existing VCN (would be dropped)": (
        lambda: OkeCluster("oke", {"compartment_id": COMPARTMENT, "vcn_id": "ocid1.vcn.oc1.iad.aaaa",
                                   "vcn_cidr": "10.1.0.0/16", **{k: "ocid1.subnet.oc1.iad.aaaa" for k in (
                                       "endpoint_subnet_id", "worker_subnet_id", "pod_subnet_id",
                                       "load_balancer_subnet_id")}}),
        "OkeCluster oke: vcn_cidr: applies to the VCN OkeCluster creates; remove it or remove vcn_id"),
    "existing VCN without its subnets": (
        lambda: OkeCluster("oke", {"compartment_id": COMPARTMENT, "vcn_id": "ocid1.vcn.oc1.iad.aaaa"}),
        "OkeCluster oke: endpoint_subnet_id: is required with vcn_id (an existing VCN needs all of "
        "endpoint_subnet_id, worker_subnet_id, pod_subnet_id, load_balancer_subnet_id)"),
    "VCN too small": (
        lambda: OkeVcn("net", {"compartment_id": COMPARTMENT, "cidr": "10.0.0.0/24"}),
        # "too small:" as on every cloud since one rule checks them all (gpu_platform.cidrs); OKE used a semicolon.
        "OkeVcn net: cidr: '10.0.0.0/24' is too small: the API, worker, pod and load-balancer subnets need a /16 or "
        "larger"),
    "first-round public_endpoint on the VCN": (
        lambda: OkeVcn("net", {"compartment_id": COMPARTMENT, "public_endpoint": True}),
        "OkeVcn net: public_endpoint: was replaced by api_allowed_cidrs (empty: private endpoint only; a list of "
        "CIDRs: a public endpoint open to those CIDRs only)"),
    "first-round public_endpoint on the cluster": (
        lambda: OkeCluster("oke", {"compartment_id": COMPARTMENT, "public_endpoint": False}),
        "OkeCluster oke: public_endpoint: was replaced by api_allowed_cidrs (empty: private endpoint only; a list "
        "of CIDRs: a public endpoint open to those CIDRs only)"),
    "allowed CIDR that is not a CIDR": (
        lambda: OkeCluster("oke", {"compartment_id": COMPARTMENT, "api_allowed_cidrs": ["office"]}),
        "OkeCluster oke: api_allowed_cidrs[0]: 'office' is not an IPv4 CIDR block such as 203.0.113.0/24 (Expected "
        "4 octets in 'office')"),
    "allowed CIDR listed twice": (
        lambda: OkeCluster("oke", {"compartment_id": COMPARTMENT,
                                   "api_allowed_cidrs": ["192.0.2.0/24", "192.0.2.0/24"]}),
        "OkeCluster oke: api_allowed_cidrs: lists a CIDR twice"),
    "secrets encryption not a boolean": (
        lambda: OkeCluster("oke", {"compartment_id": COMPARTMENT, "secrets_encryption": "yes"}),
        "OkeCluster oke: secrets_encryption: must be true or false, got 'yes'"),
    "autoscaler without pools": (
        lambda: OkeClusterAutoscaler("ca", {"cluster_id": PLAIN["cluster_id"], "compartment_id": COMPARTMENT,
                                            "node_pools": []}),
        "OkeClusterAutoscaler ca: node_pools: must list at least one node pool to autoscale"),
    "autoscaler min above max": (
        lambda: OkeClusterAutoscaler("ca", {"cluster_id": PLAIN["cluster_id"], "compartment_id": COMPARTMENT,
                                            "node_pools": [{"node_pool_id": "ocid1.nodepool.oc1.iad.aaaa",
                                                            "min_nodes": 3, "max_nodes": 2}]}),
        "OkeClusterAutoscaler ca: node_pools[0].min_nodes: min_nodes (3) is greater than max_nodes (2)"),
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_misuse_is_refused_before_any_resource(case, monkeypatch):
    program, line = MISUSE[case]
    registered: list[str] = []
    init = pulumi.ComponentResource.__init__

    def recording_init(self, t, name, *args, **kwargs):
        if t.startswith("gpuplatform:") and not name.startswith("oke"):  # the pool's own cluster may come first
            registered.append(name)
        init(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.ComponentResource, "__init__", recording_init)
    with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
        run_program(program)
    assert registered == []


def pool_inputs(entry: dict) -> dict:
    return run_program(lambda: in_cluster(entry)).one(NODE_POOL).inputs


# nodePools key -> (entry, changed entry, a NodePool input path, its new value)
TAKES_EFFECT = {
    "bootVolumeSizeGiB": (A10, {**A10, "bootVolumeSizeGiB": 256}, ("nodeSourceDetails", "bootVolumeSizeInGbs"), "256"),
    "imageId": (A10, {**A10, "imageId": IMAGE}, ("nodeSourceDetails", "imageId"), IMAGE),
    "desiredNodes": (A10, {**A10, "desiredNodes": 2}, ("nodeConfigDetails", "size"), 2),
    "zones": (A10, {**A10, "zones": [2]}, ("nodeConfigDetails", "placementConfigs"),
              [{"availabilityDomain": "Uocm:US-ASHBURN-AD-2", "subnetId": "ocid1.subnet.oc1.iad.oke-network-workers"}]),
    "spot": (A10, {**A10, "spot": True}, ("nodeConfigDetails", "placementConfigs", 0, "preemptibleNodeConfig"),
             {"preemptionAction": {"type": "TERMINATE", "isPreserveBootVolume": False}}),
    "computeClusterId": (H100, {**H100, "computeClusterId": "ocid1.computecluster.oc1.iad.aaaaaaaacc"},
                         ("nodeConfigDetails", "computeClusterId"), "ocid1.computecluster.oc1.iad.aaaaaaaacc"),
}


def dig(inputs, path):
    for key in path:
        inputs = inputs[key] if isinstance(key, int) or key in inputs else None
        if inputs is None:
            return None
    return inputs


@pytest.mark.parametrize("key", sorted(TAKES_EFFECT))
def test_every_pool_key_reaches_the_node_pool(key):
    entry, changed, path, expected = TAKES_EFFECT[key]
    before = pool_inputs(pool_args("oci", entry))
    after = pool_inputs(pool_args("oci", changed))
    assert dig(after, path) == expected
    assert dig(before, path) != expected


def test_hand_composed_roce_pool_gets_the_stack_plumbing():
    entry = {**H100, "zones": [2]}
    config = parse_config({"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT,
                           "kubernetesVersion": "1.34", "gpuSoftware": "cloud-managed", "nodePools": [entry]}, "oke")
    stack = run_program(lambda: cluster_from_config("oke", config, pulumi.ResourceOptions()))
    seen = {}

    def program():
        seen["pool"] = in_cluster(pool_args("oci", entry), "oke-h100")

    hand = run_program(program)
    compute = "oci:Core/computeCluster:ComputeCluster"
    assert hand.one(NODE_POOL).inputs == stack.one(NODE_POOL).inputs
    assert hand.one(compute).inputs == stack.one(compute).inputs
    assert hand.one(compute).inputs["availabilityDomain"] == "Uocm:US-ASHBURN-AD-2"
    assert dict(seen["pool"].gpu_pool.nccl_env)["NCCL_IB_GID_INDEX"] == "3"
