"""GKE cluster and GPU node pools under the mock engine: the exact inputs GKE would receive."""

import json

import pulumi
import pytest

from gpu_platform import testing
from gpu_platform.clouds import gcp
from gpu_platform.config import parse_config

REGION = "us-central1"
NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
NETWORK = "gcp:compute/network:Network"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
PARAM_SET = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"
K8S_NETWORK = "kubernetes:networking.gke.io/v1:Network"
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]


def build(pools, project="gpu-dev-1", **top):
    """Run `cluster_from_config` for a GKE stack; returns (recording, handle, resolved kubeconfig)."""
    raw = {"cloud": "gcp", "region": REGION, "nodePools": pools, **top}
    if project:
        raw["project"] = project
    config = parse_config(raw, "dev")
    captured: dict = {}

    def program():
        handle = gcp.cluster_from_config("dev", config, pulumi.ResourceOptions())
        captured["handle"] = handle
        handle.kubeconfig.apply(lambda text: captured.setdefault("kubeconfig", text))

    recording = testing.run_program(program, stack="dev")
    return recording, captured["handle"], captured.get("kubeconfig")


def node_pool(recording, pool_name):
    return recording.one(NODE_POOL, f"dev-{pool_name}-pool")


def accelerator(recording, pool_name):
    (accel,) = node_pool(recording, pool_name).inputs["nodeConfig"]["guestAccelerators"]
    return accel


@pytest.fixture(scope="module")
def l4_time_shared():
    return build([{"name": "infer", "instanceType": "g2-standard-8", "minNodes": 1, "maxNodes": 4,
                   "zones": [f"{REGION}-a", f"{REGION}-b"], "role": "inference",
                   "sharing": {"mode": "time-slicing", "replicas": 4}}])


def test_l4_pool_machine_accelerator_driver_taint_and_time_sharing(l4_time_shared):
    recording, _, _ = l4_time_shared
    pool = node_pool(recording, "infer").inputs
    config = pool["nodeConfig"]
    assert config["machineType"] == "g2-standard-8"
    assert accelerator(recording, "infer") == {
        "type": "nvidia-l4", "count": 1,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"},
        "gpuSharingConfig": {"gpuSharingStrategy": "TIME_SHARING", "maxSharedClientsPerGpu": 4},
    }
    assert config["taints"] == GPU_TAINT
    assert config["labels"] == {
        "gpu-platform.io/pool": "infer", "gpu-platform.io/accelerator": "l4",
        "gpu-platform.io/gpu-sharing": "time-slicing", "nvidia.com/device-plugin.config": "infer"}
    assert config["imageType"] == "COS_CONTAINERD"
    assert config["gvnic"] == {"enabled": True}
    assert pool["autoscaling"] == {"totalMinNodeCount": 1, "totalMaxNodeCount": 4}
    assert (pool["nodeLocations"], pool["initialNodeCount"]) == ([f"{REGION}-a", f"{REGION}-b"], 1)
    assert "placementPolicy" not in pool and "networkConfig" not in pool
    assert pool["name"] == "infer"


def test_gpu_pool_is_replaced_by_deleting_first_and_parented_by_its_component(l4_time_shared):
    recording, _, _ = l4_time_shared
    pool = node_pool(recording, "infer")
    assert pool.delete_before_replace is True
    component = recording.one("gpuplatform:index:GkeGpuNodePool", "dev-infer")
    assert recording.children_of(component) == [pool]
    assert pool.inputs["cluster"] == recording.one(CLUSTER).urn.rsplit("::", 1)[-1] + "-id"


def test_cluster_is_vpc_native_dataplane_v2_workload_identity_with_dcgm(l4_time_shared):
    recording, handle, _ = l4_time_shared
    cluster = recording.one(CLUSTER, "dev-cluster").inputs
    assert cluster["name"] == "dev" and cluster["location"] == REGION and cluster["project"] == "gpu-dev-1"
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH"
    assert cluster["networkingMode"] == "VPC_NATIVE"
    assert cluster["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods",
                                             "servicesSecondaryRangeName": "services"}
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "gpu-dev-1.svc.id.goog"}
    assert cluster["releaseChannel"] == {"channel": "REGULAR"}
    assert cluster["minMasterVersion"] == "1.36"
    assert cluster["removeDefaultNodePool"] is True
    # No apiAllowedCidrs: no public endpoint (tests/test_gcp_security.py has the rest of the control plane).
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    assert cluster["monitoringConfig"] == {"enableComponents": ["SYSTEM_COMPONENTS", "DCGM"],
                                           "managedPrometheus": {"enabled": True}}
    assert "enableMultiNetworking" not in cluster
    assert handle.outputs["managed_dcgm"] is True
    assert handle.outputs["driver_install_dir"] == "/home/kubernetes/bin/nvidia"


def test_new_vpc_subnet_with_secondary_ranges_nat_and_node_identity(l4_time_shared):
    recording, _, _ = l4_time_shared
    subnet = recording.one(SUBNETWORK, "dev-subnet").inputs
    assert subnet["ipCidrRange"] == "10.0.0.0/20" and subnet["region"] == REGION
    assert subnet["secondaryIpRanges"] == [{"rangeName": "pods", "ipCidrRange": "10.4.0.0/14"},
                                           {"rangeName": "services", "ipCidrRange": "10.8.0.0/20"}]
    assert recording.one(NETWORK, "dev-vpc").inputs["autoCreateSubnetworks"] is False
    assert recording.one("gcp:compute/routerNat:RouterNat").inputs["sourceSubnetworkIpRangesToNat"] == \
        "ALL_SUBNETWORKS_ALL_IP_RANGES"
    roles = sorted(r.inputs["role"] for r in recording.of_type("gcp:projects/iAMMember:IAMMember"))
    assert roles == ["roles/artifactregistry.reader", "roles/logging.logWriter", "roles/monitoring.metricWriter",
                     "roles/monitoring.viewer", "roles/stackdriver.resourceMetadata.writer"]
    assert node_pool(recording, "infer").inputs["nodeConfig"]["serviceAccount"] == \
        "dev-nodes@mock.iam.gserviceaccount.com"


def test_system_pool_replaces_the_default_pool(l4_time_shared):
    recording, _, _ = l4_time_shared
    system = recording.one(NODE_POOL, "dev-system").inputs
    assert system["nodeConfig"]["machineType"] == "e2-standard-4"
    assert "taints" not in system["nodeConfig"] and "guestAccelerators" not in system["nodeConfig"]
    assert system["autoscaling"] == {"totalMinNodeCount": 1, "totalMaxNodeCount": 3}


def test_kubeconfig_uses_the_gke_auth_plugin_and_is_secret(l4_time_shared):
    recording, handle, kubeconfig = l4_time_shared
    document = json.loads(kubeconfig)
    assert document["clusters"][0]["cluster"]["server"] == "https://34.1.2.3"
    assert document["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert document["users"][0]["user"]["exec"]["apiVersion"] == "client.authentication.k8s.io/v1beta1"
    provider = recording.one("pulumi:providers:kubernetes", "dev-k8s")
    assert provider.inputs["kubeconfig"] == testing.REDACTED
    assert handle.pools[0].name == "infer" and handle.pools[0].rdma_pod_annotations == ()


def test_mps_and_mig_pools():
    recording, _, _ = build([
        {"name": "mps", "instanceType": "g2-standard-24", "sharing": {"mode": "mps", "replicas": 3}},
        {"name": "mig", "instanceType": "a2-highgpu-1g", "sharing": {"mode": "mig", "profile": "1g.5gb"}},
    ])
    assert accelerator(recording, "mps")["type"] == "nvidia-l4" and accelerator(recording, "mps")["count"] == 2
    assert accelerator(recording, "mps")["gpuSharingConfig"] == {"gpuSharingStrategy": "MPS",
                                                                 "maxSharedClientsPerGpu": 3}
    mig = accelerator(recording, "mig")
    assert (mig["type"], mig["count"], mig["gpuPartitionSize"]) == ("nvidia-tesla-a100", 1, "1g.5gb")
    assert "gpuSharingConfig" not in mig
    assert node_pool(recording, "mig").inputs["nodeConfig"]["labels"]["nvidia.com/mig.config"] == "all-1g.5gb"


def test_operator_mode_disables_gke_driver_and_device_plugin():
    recording, handle, _ = build([{"name": "t4", "instanceType": "n1-standard-8", "accelerator": "nvidia-tesla-t4",
                                   "gpuCount": 2, "sharing": {"mode": "time-slicing", "replicas": 2}}],
                                 gpuSoftware="operator")
    config = node_pool(recording, "t4").inputs["nodeConfig"]
    assert accelerator(recording, "t4") == {
        "type": "nvidia-tesla-t4", "count": 2,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"}}
    assert config["labels"]["gke-no-default-nvidia-gpu-device-plugin"] == "true"
    assert config["imageType"] == "UBUNTU_CONTAINERD"
    assert config["taints"] == GPU_TAINT
    assert "monitoringConfig" not in recording.one(CLUSTER).inputs
    assert "driver_install_dir" not in handle.outputs


def test_latest_driver_spot_and_reservation_settings():
    recording, _, _ = build([
        {"name": "spot", "instanceType": "g2-standard-8", "spot": True, "gpuDriverVersion": "LATEST"},
        {"name": "reserved", "instanceType": "a3-highgpu-8g", "maxNodes": 4, "provisioning": "reservation",
         "reservation": "h100-res", "zones": [f"{REGION}-a"], "diskType": "pd-ssd"},
    ])
    spot = node_pool(recording, "spot").inputs
    assert accelerator(recording, "spot")["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "LATEST"}
    assert spot["nodeConfig"]["spot"] is True
    assert spot["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert spot["autoscaling"]["locationPolicy"] == "ANY"
    reserved = node_pool(recording, "reserved").inputs
    assert reserved["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": ["h100-res"]}
    assert reserved["nodeConfig"]["diskType"] == "pd-ssd"
    assert accelerator(recording, "reserved")["type"] == "nvidia-h100-80gb"
    assert accelerator(recording, "reserved")["count"] == 8


@pytest.fixture(scope="module")
def a3_ultra():
    return build([
        {"name": "infer", "instanceType": "g2-standard-8"},
        {"name": "ultra", "instanceType": "a3-ultragpu-8g", "rdma": True, "maxNodes": 4, "role": "training",
         "zones": [f"{REGION}-b"]},
    ])


def test_gpudirect_rdma_pool_placement_and_extra_networks(a3_ultra):
    recording, _, _ = a3_ultra
    pool = node_pool(recording, "ultra").inputs
    assert pool["nodeConfig"]["machineType"] == "a3-ultragpu-8g"
    assert accelerator(recording, "ultra")["type"] == "nvidia-h200-141gb"
    assert accelerator(recording, "ultra")["count"] == 8
    assert pool["placementPolicy"] == {"type": "COMPACT"}
    assert pool["nodeLocations"] == [f"{REGION}-b"]
    assert pool["networkConfig"]["additionalNodeNetworkConfigs"] == [
        {"network": "dev-gvnic-1-net", "subnetwork": "dev-gvnic-1-sub"},
        *({"network": "dev-rdma-net", "subnetwork": f"dev-rdma-{i}-sub"} for i in range(8))]
    assert pool["nodeConfig"]["labels"]["gpu-platform.io/rdma"] == "gpudirect-rdma"
    assert "placementPolicy" not in node_pool(recording, "infer").inputs


def test_gpudirect_rdma_vpcs_roce_profile_and_multi_networking(a3_ultra):
    recording, handle, _ = a3_ultra
    rdma = recording.one(NETWORK, "dev-rdma-net").inputs
    assert (rdma["mtu"], rdma["networkProfile"]) == (
        8896, "projects/gpu-dev-1/global/networkProfiles/us-central1-b-vpc-roce")
    assert "networkProfile" not in recording.one(NETWORK, "dev-gvnic-1-net").inputs
    assert recording.one(SUBNETWORK, "dev-rdma-7-sub").inputs["ipCidrRange"] == "192.168.184.0/21"
    firewalls = recording.of_type("gcp:compute/firewall:Firewall")
    assert [f.name for f in firewalls] == ["dev-gvnic-1-internal"]
    assert firewalls[0].inputs["sourceRanges"] == ["192.168.0.0/16"]
    cluster = recording.one(CLUSTER).inputs
    assert (cluster["enableMultiNetworking"], cluster["datapathProvider"]) == (True, "ADVANCED_DATAPATH")
    assert handle.outputs["gpu_networks"] == ["gvnic-1", *(f"rdma-{i}" for i in range(8))]


def test_gke_network_objects_for_every_gpu_nic(a3_ultra):
    recording, handle, _ = a3_ultra
    params = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in recording.of_type(PARAM_SET)}
    assert params["gvnic-1"] == {"vpc": "dev-gvnic-1-net", "vpcSubnet": "dev-gvnic-1-sub", "deviceMode": "NetDevice"}
    assert params["rdma-3"] == {"vpc": "dev-rdma-net", "vpcSubnet": "dev-rdma-3-sub", "deviceMode": "RDMA"}
    assert len(params) == 9
    networks = recording.of_type(K8S_NETWORK)
    assert {n.inputs["spec"]["parametersRef"]["name"] for n in networks} == set(params)
    provider_urn = recording.one("pulumi:providers:kubernetes").urn
    assert all(n.provider.startswith(provider_urn) for n in networks)
    # The Kubernetes layer waits for the system pool, both GPU pools, the 18 network objects and the proxy-only
    # subnet of the Gateway.
    assert len(handle.ready) == 1 + 2 + 18 + 1


def test_rdma_pool_publishes_pod_annotations_and_no_extended_resource(a3_ultra):
    _, handle, _ = a3_ultra
    ultra = next(p for p in handle.pools if p.name == "ultra")
    annotations = dict(ultra.rdma_pod_annotations)
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    interfaces = json.loads(annotations["networking.gke.io/interfaces"])
    assert [i["network"] for i in interfaces] == ["default", "gvnic-1", *(f"rdma-{i}" for i in range(8))]
    assert ultra.rdma_resource is None
    assert ultra.spec()["rdma_pod_annotations"] == annotations
    assert set(handle.node_pool_ids) == {"infer", "ultra"}


def test_tcpxo_pool_gets_eight_gvnic_networks():
    recording, handle, _ = build([{"name": "mega", "instanceType": "a3-megagpu-8g", "rdma": True,
                                   "zones": [f"{REGION}-c"]}])
    networks = node_pool(recording, "mega").inputs["networkConfig"]["additionalNodeNetworkConfigs"]
    assert [n["network"] for n in networks] == [f"dev-vpc{i}-net" for i in range(1, 9)]
    assert {r.inputs["mtu"] for r in recording.of_type(NETWORK) if r.name.endswith("-net")} == {8244}
    assert {r.inputs["spec"]["deviceMode"] for r in recording.of_type(PARAM_SET)} == {"NetDevice"}
    assert accelerator(recording, "mega")["type"] == "nvidia-h100-mega-80gb"
    assert len(json.loads(dict(handle.pools[0].rdma_pod_annotations)["networking.gke.io/interfaces"])) == 9


def test_existing_network_and_zonal_cluster():
    recording, _, _ = build([{"name": "infer", "instanceType": "g2-standard-8", "minNodes": 2, "maxNodes": 2}],
                            network="shared-vpc", subnetwork="gke-nodes", podsRangeName="gke-pods",
                            servicesRangeName="gke-svc", zone=f"{REGION}-a", privateNodes=False,
                            nodeServiceAccount="gke@gpu-dev-1.iam.gserviceaccount.com",
                            proxyOnlyCidr="172.16.0.0/23")
    # The given network's own proxy-only subnet serves the Gateway: none is created.
    assert recording.of_type(NETWORK) == [] and recording.of_type(SUBNETWORK) == []
    assert recording.of_type("gcp:compute/routerNat:RouterNat") == []
    assert recording.of_type("gcp:serviceaccount/account:Account") == []
    cluster = recording.one(CLUSTER).inputs
    assert (cluster["network"], cluster["subnetwork"], cluster["location"]) == (
        "shared-vpc", "gke-nodes", f"{REGION}-a")
    assert cluster["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "gke-pods",
                                             "servicesSecondaryRangeName": "gke-svc"}
    # Public nodes, but the API still has no public endpoint.
    assert cluster["privateClusterConfig"] == {"enablePrivateNodes": False, "enablePrivateEndpoint": True}
    pool = node_pool(recording, "infer").inputs
    assert (pool["nodeLocations"], pool["initialNodeCount"]) == ([f"{REGION}-a"], 2)
    assert pool["nodeConfig"]["serviceAccount"] == "gke@gpu-dev-1.iam.gserviceaccount.com"


def test_every_resource_is_inside_a_component(l4_time_shared):
    recording, _, _ = l4_time_shared
    components = {r.urn for r in recording if r.type.startswith("gpuplatform:index:")}
    assert all(r.parent in components for r in recording if r.custom)


def test_project_defaults_to_the_providers():
    recording, handle, _ = build([{"name": "infer", "instanceType": "g2-standard-8"}], project=None)
    cluster = recording.one(CLUSTER).inputs
    assert (cluster["project"], cluster["workloadIdentityConfig"]) == (
        "mock-project", {"workloadPool": "mock-project.svc.id.goog"})
    assert node_pool(recording, "infer").inputs["project"] == "mock-project"
