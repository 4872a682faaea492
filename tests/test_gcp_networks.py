"""GPUDirect NIC networks: how many VPCs/subnets each A3 shape gets, their ranges, the in-cluster objects and the
pod annotations, all pure."""

import ipaddress
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_platform import catalog
from gpu_platform.clouds.gcp import networks as gcp_networks
from gpu_platform.schemas import ManifestError, validate_manifest

ZONE = "us-central1-c"


def nics(machine: str) -> int:
    return catalog.find_shape("gcp", machine).rdma_interfaces


def test_catalog_nic_counts_of_the_a3_shapes():
    # GPU NICs beside the primary one: 4 on A3 High (TCPX), 8 on A3 Mega (TCPXO), 8 RDMA NICs on A3 Ultra.
    assert [(s.rdma_fabric, s.rdma_interfaces) for s in map(
        lambda m: catalog.find_shape("gcp", m), ("a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g"))] == [
        ("gpudirect-tcpx", 4), ("gpudirect-tcpxo", 8), ("gpudirect-rdma", 8)]


def test_tcpx_pool_gets_four_gvnic_vpcs():
    plan = gcp_networks.plan_networks([("train", "gpudirect-tcpx", nics("a3-highgpu-8g"), ZONE)], "192.168.0.0/16")
    assert [(v.key, v.mtu, v.roce_zone) for v in plan.vpcs] == [
        ("vpc1", 8244, None), ("vpc2", 8244, None), ("vpc3", 8244, None), ("vpc4", 8244, None)]
    assert [s.device_mode for v in plan.vpcs for s in v.subnets] == ["NetDevice"] * 4
    assert [s.cidr for v in plan.vpcs for s in v.subnets] == [
        "192.168.0.0/21", "192.168.8.0/21", "192.168.16.0/21", "192.168.24.0/21"]
    assert plan.attachments["train"] == (("vpc1", "vpc1"), ("vpc2", "vpc2"), ("vpc3", "vpc3"), ("vpc4", "vpc4"))
    assert all(v.firewalled for v in plan.vpcs)


def test_tcpx_and_tcpxo_pools_share_the_gvnic_vpcs():
    plan = gcp_networks.plan_networks([
        ("mega", "gpudirect-tcpxo", nics("a3-megagpu-8g"), ZONE),
        ("high", "gpudirect-tcpx", nics("a3-highgpu-8g"), "us-central1-a"),
    ], "192.168.0.0/16")
    assert [v.key for v in plan.vpcs] == [f"vpc{i}" for i in range(1, 9)]
    assert len(plan.attachments["mega"]) == 8
    assert plan.attachments["high"] == plan.attachments["mega"][:4]


def test_a3_ultra_gets_a_gvnic_vpc_and_one_roce_vpc_with_eight_rdma_subnets():
    plan = gcp_networks.plan_networks([("ultra", "gpudirect-rdma", nics("a3-ultragpu-8g"), ZONE)], "192.168.0.0/16")
    gvnic, rdma = plan.vpcs
    assert (gvnic.key, gvnic.mtu, gvnic.roce_zone, [s.name for s in gvnic.subnets]) == (
        "gvnic-1", 8896, None, ["gvnic-1"])
    assert (rdma.key, rdma.mtu, rdma.roce_zone, rdma.firewalled) == ("rdma", 8896, ZONE, False)
    assert [(s.name, s.device_mode) for s in rdma.subnets] == [(f"rdma-{i}", "RDMA") for i in range(8)]
    assert rdma.subnets[0].cidr == "192.168.128.0/21"
    assert plan.attachments["ultra"] == (("gvnic-1", "gvnic-1"), *((("rdma", f"rdma-{i}")) for i in range(8)))
    assert gcp_networks.roce_network_profile("proj-1", ZONE) == \
        "projects/proj-1/global/networkProfiles/us-central1-c-vpc-roce"


def test_no_rdma_pools_no_networks():
    plan = gcp_networks.plan_networks([], "192.168.0.0/16")
    assert (plan.vpcs, plan.multi_networking) == ((), False)


@given(st.integers(min_value=8, max_value=19), st.integers(min_value=0, max_value=255))
def test_gpu_subnets_never_overlap_and_stay_in_the_range(prefix, second_octet):
    base = ipaddress.ip_network(f"10.{second_octet}.0.0/{prefix}", strict=False)
    plan = gcp_networks.plan_networks([
        ("mega", "gpudirect-tcpxo", 8, ZONE), ("ultra", "gpudirect-rdma", 8, ZONE)], str(base))
    subnets = [ipaddress.ip_network(s.cidr) for v in plan.vpcs for s in v.subnets]
    assert len(subnets) == 17
    assert all(s.subnet_of(base) for s in subnets)
    assert all(not a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1:])


def test_pod_annotations_attach_every_gpu_nic_after_eth0():
    plan = gcp_networks.plan_networks([("ultra", "gpudirect-rdma", 8, ZONE)], "192.168.0.0/16")
    annotations = gcp_networks.pod_annotations(plan.attachments["ultra"])
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    assert json.loads(annotations["networking.gke.io/interfaces"]) == [
        {"interfaceName": "eth0", "network": "default"},
        {"interfaceName": "eth1", "network": "gvnic-1"},
        *({"interfaceName": f"eth{i + 2}", "network": f"rdma-{i}"} for i in range(8)),
    ]


def test_network_objects_match_the_vendored_crd_schemas():
    subnet = gcp_networks.GpuSubnet("rdma-0", "192.168.128.0/21", "RDMA")
    params = {"apiVersion": "networking.gke.io/v1", "kind": "GKENetworkParamSet", "metadata": {"name": "rdma-0"},
              "spec": gcp_networks.network_param_set(subnet, "dev-rdma-net", "dev-rdma-0-sub")}
    network = {"apiVersion": "networking.gke.io/v1", "kind": "Network", "metadata": {"name": "rdma-0"},
               "spec": gcp_networks.network_spec(subnet)}
    validate_manifest(params, "1.34")
    validate_manifest(network, "1.34")
    assert params["spec"] == {"vpc": "dev-rdma-net", "vpcSubnet": "dev-rdma-0-sub", "deviceMode": "RDMA"}
    assert network["spec"] == {"type": "Device", "parametersRef": {
        "group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": "rdma-0"}}


def test_vendored_schema_rejects_an_unknown_device_mode():
    bad = {"apiVersion": "networking.gke.io/v1", "kind": "GKENetworkParamSet", "metadata": {"name": "rdma-0"},
           "spec": {"vpc": "v", "vpcSubnet": "s", "deviceMode": "Rdma"}}
    with pytest.raises(ManifestError, match=r"^GKENetworkParamSet/rdma-0: spec.deviceMode: 'Rdma' is not one of"):
        validate_manifest(bad, "1.34")
