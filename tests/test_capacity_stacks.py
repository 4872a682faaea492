"""The dev stacks, one per cloud, plan what issue 22 asks of them: a reservation pool, a spot pool that an on-demand
pool falls back to (its Kueue flavor last), GKE's queued-provisioning admission check, and Topology levels from the
labels each cloud's nodes carry."""

import pytest
from conftest import planned_stack

TOPOLOGY = {
    "aws-dev": ("gpu-network-aws-3", ["topology.kubernetes.io/zone", "topology.k8s.aws/network-node-layer-1",
                                      "topology.k8s.aws/network-node-layer-2", "topology.k8s.aws/network-node-layer-3",
                                      "kubernetes.io/hostname"]),
    "azure-dev": ("gpu-network", ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
    "gcp-dev": ("gpu-network-gcp", ["topology.kubernetes.io/zone", "cloud.google.com/gce-topology-block",
                                    "cloud.google.com/gce-topology-subblock", "cloud.google.com/gce-topology-host",
                                    "kubernetes.io/hostname"]),
    "oci-dev": ("gpu-network-oci", ["topology.kubernetes.io/zone", "oci.oraclecloud.com/rdma.hpc_island_id",
                                    "oci.oraclecloud.com/rdma.network_block_id",
                                    "oci.oraclecloud.com/rdma.local_block_id", "kubernetes.io/hostname"]),
}
FALLBACK = {"aws-dev": ("l4-infer", "l4-spot"), "azure-dev": ("a100-infer", "a100-spot"),
            "gcp-dev": ("l4-infer", "l4-spot"), "oci-dev": ("a10-infer", "a10-spot")}


@pytest.fixture(scope="module", params=sorted(TOPOLOGY))
def planned(request):
    result = planned_stack(request.param)
    assert result.errors == []
    return request.param, result


def kinds(result, kind):
    return {m["metadata"]["name"]: m for m in result.manifests if m["kind"] == kind}


def test_a_reservation_pool_and_a_spot_fallback(planned):
    stack, result = planned
    by_name = {p.name: p for p in result.config.gpu_pools()}
    assert [p.provisioning for p in by_name.values()].count("reservation") == 1
    primary, spot = FALLBACK[stack]
    assert (by_name[primary].fallback_pool, by_name[spot].provisioning) == (spot, "spot")
    for queue in kinds(result, "ClusterQueue").values():
        order = [f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"]]
        assert order.index(spot) > order.index(primary)
        reserved = next(p.name for p in by_name.values() if p.provisioning == "reservation")
        assert order.index(reserved) < order.index(primary)


def test_topology_levels_from_the_clouds_own_labels(planned):
    stack, result = planned
    expected = TOPOLOGY[stack]
    topologies = {name: [level["nodeLabel"] for level in t["spec"]["levels"]]
                  for name, t in kinds(result, "Topology").items()}
    name, levels = expected
    assert topologies == {name: levels}
    flavors = {n: f["spec"].get("topologyName") for n, f in kinds(result, "ResourceFlavor").items()}
    assert flavors["h100-train"] == name


def test_gke_queues_queued_pools_through_a_provisioning_request(planned):
    stack, result = planned
    checks, configs = kinds(result, "AdmissionCheck"), kinds(result, "ProvisioningRequestConfig")
    if stack != "gcp-dev":
        assert (checks, configs) == ({}, {})
        return
    assert checks["queued-provisioning"]["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert configs["queued-provisioning"]["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    for queue in kinds(result, "ClusterQueue").values():
        assert queue["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
            {"name": "queued-provisioning", "onFlavors": ["h100-queued"]}]
