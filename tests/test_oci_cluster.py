"""OKE cluster and GPU node pools under Pulumi mocks: the exact inputs OCI would receive."""

import base64
import json

import pulumi
import pytest
from conftest import planned_stack

from gpu_platform.clouds.oci import cluster_from_config
from gpu_platform.config import parse_config
from gpu_platform.testing import run_program

COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
RDMA_IMAGE = "ocid1.image.oc1.iad.aaaaaaaaubuntudocaofed"
NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
A10 = {"name": "a10-infer", "instanceType": "VM.GPU.A10.1", "minNodes": 1, "maxNodes": 4, "role": "inference",
       "bootVolumeSizeGiB": 256}
H100 = {"name": "h100-train", "instanceType": "BM.GPU.H100.8", "minNodes": 2, "maxNodes": 2, "rdma": True,
        "role": "training", "imageId": RDMA_IMAGE, "zones": [2], "taints": ["team=research:NoSchedule"]}


def run_oci(*pools, **top):
    """Run `cluster_from_config` for an OCI stack; returns the recording, the handle and resolved outputs."""
    raw = {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT,
           "nodePools": list(pools) or [dict(A10), dict(H100)], **top}
    config = parse_config(raw, "oci-test")
    captured: dict = {}

    def program():
        handle = cluster_from_config("oci-test", config, pulumi.ResourceOptions())
        captured["handle"] = handle
        pulumi.Output.all(
            ids=pulumi.Output.all(**handle.node_pool_ids),
            compute=pulumi.Output.all(**handle.outputs["compute_cluster_ids"]),
            version=handle.outputs["kubernetes_version"], kubeconfig=handle.kubeconfig,
        ).apply(captured.update)

    return run_program(program, stack="oci-test"), captured


@pytest.fixture(scope="module")
def dev():
    return run_oci()


def node_pool(rec, pool: str):
    return rec.one(NODE_POOL, f"oci-test-{pool}-nodes")


def cloud_init(reg) -> str:
    return base64.b64decode(reg.inputs["nodeMetadata"]["user_data"]).decode()


def test_inference_pool_gets_the_shape_the_looked_up_gpu_image_and_its_size(dev):
    rec, _ = dev
    inputs = node_pool(rec, "a10-infer").inputs
    assert inputs["nodeShape"] == "VM.GPU.A10.1"
    assert inputs["name"] == "a10-infer"
    assert inputs["kubernetesVersion"] == "v1.36.1"
    # Newest x86_64 GPU image OKE lists for v1.36.1 (the Oracle Linux 9 build of 2026.10.01 in the mock).
    assert inputs["nodeSourceDetails"] == {"sourceType": "IMAGE", "imageId": "ocid1.image.oc1.iad.ol9-gpu-1-36-1",
                                           "bootVolumeSizeInGbs": "256"}
    details = inputs["nodeConfigDetails"]
    assert details["size"] == 1
    assert [p["availabilityDomain"] for p in details["placementConfigs"]] == [
        "Uocm:US-ASHBURN-AD-1", "Uocm:US-ASHBURN-AD-2", "Uocm:US-ASHBURN-AD-3"]
    assert {p["subnetId"] for p in details["placementConfigs"]} == {"ocid1.subnet.oc1.iad.oci-test-network-workers"}
    assert details["nodePoolPodNetworkOptionDetails"] == {
        "cniType": "OCI_VCN_IP_NATIVE", "podSubnetIds": ["ocid1.subnet.oc1.iad.oci-test-network-pods"]}
    assert "computeClusterId" not in details
    assert inputs["initialNodeLabels"] == [
        {"key": "gpu-platform.io/accelerator", "value": "a10"},
        {"key": "gpu-platform.io/gpu-sharing", "value": "exclusive"},
        {"key": "gpu-platform.io/pool", "value": "a10-infer"},
    ]


def test_decoded_cloud_init_taints_the_node_and_runs_okes_bootstrap(dev):
    rec, _ = dev
    script = cloud_init(node_pool(rec, "a10-infer"))
    assert "KUBELET_EXTRA_ARGS=--register-with-taints=nvidia.com/gpu=present:NoSchedule\n" in script
    assert ("curl --fail -H \"Authorization: Bearer Oracle\" -L0 "
            "http://169.254.169.254/opc/v2/instance/metadata/oke_init_script | base64 --decode >/var/run/oke-init.sh"
            in script)
    assert 'bash /var/run/oke-init.sh --kubelet-extra-args "$KUBELET_EXTRA_ARGS"' in script
    assert 'oke bootstrap --kubelet-extra-args "$KUBELET_EXTRA_ARGS"' in script


def test_rdma_pool_joins_a_compute_cluster_in_one_availability_domain(dev):
    rec, captured = dev
    compute = rec.one("oci:Core/computeCluster:ComputeCluster", "oci-test-h100-train-compute-cluster")
    assert compute.inputs == {"availabilityDomain": "Uocm:US-ASHBURN-AD-2", "compartmentId": COMPARTMENT,
                              "displayName": "oci-test-h100-train-rdma"}
    details = node_pool(rec, "h100-train").inputs["nodeConfigDetails"]
    assert details["computeClusterId"] == "ocid1.computecluster.oc1.iad.oci-test-h100-train-compute-cluster"
    assert compute.urn in node_pool(rec, "h100-train").dependencies
    assert details["placementConfigs"] == [{"availabilityDomain": "Uocm:US-ASHBURN-AD-2",
                                            "subnetId": "ocid1.subnet.oc1.iad.oci-test-network-workers"}]
    assert details["size"] == 2
    assert captured["compute"] == {"h100-train": details["computeClusterId"]}


def test_rdma_pool_uses_the_given_image_labels_rdma_and_adds_user_taints_and_memlock(dev):
    rec, _ = dev
    reg = node_pool(rec, "h100-train")
    assert reg.inputs["nodeShape"] == "BM.GPU.H100.8"
    assert reg.inputs["nodeSourceDetails"] == {"sourceType": "IMAGE", "imageId": RDMA_IMAGE,
                                               "bootVolumeSizeInGbs": "512"}
    assert {"key": "gpu-platform.io/rdma", "value": "roce"} in reg.inputs["initialNodeLabels"]
    script = cloud_init(reg)
    assert "--register-with-taints=nvidia.com/gpu=present:NoSchedule,team=research:NoSchedule" in script
    assert '"memlock=-1:-1"' in script


def test_published_pools_carry_nccl_settings_and_node_pool_ids(dev):
    rec, captured = dev
    handle = captured["handle"]
    a10, h100 = handle.pools
    assert a10.nccl_env == () and a10.rdma_fabric is None
    env = dict(h100.nccl_env)
    assert (env["NCCL_IB_GID_INDEX"], env["NCCL_IB_TC"], env["NCCL_IB_SL"], env["NCCL_IB_TIMEOUT"]) == (
        "3", "41", "0", "22")
    assert (h100.rdma_fabric, h100.rdma_interfaces, h100.role) == ("roce", 16, "training")
    assert captured["ids"] == {"a10-infer": "ocid1.nodepool.oc1.iad.oci-test-a10-infer-nodes",
                               "h100-train": "ocid1.nodepool.oc1.iad.oci-test-h100-train-nodes"}
    assert handle.cloud == "oci" and len(handle.ready) == 2


def test_autoscaled_pool_leaves_its_size_to_the_autoscaler(dev):
    rec, _ = dev
    assert node_pool(rec, "a10-infer").ignore_changes == ["nodeConfigDetails.size"]
    assert node_pool(rec, "h100-train").ignore_changes == []  # minNodes == maxNodes: Pulumi owns the size


def test_enhanced_cluster_with_vcn_native_pods_and_a_secret_kubeconfig(dev):
    rec, captured = dev
    cluster = rec.one("oci:ContainerEngine/cluster:Cluster", "oci-test-oke")
    assert cluster.inputs == {
        "compartmentId": COMPARTMENT,
        "kubernetesVersion": "v1.36.1",
        "name": "oci-test",
        "vcnId": "ocid1.vcn.oc1.iad.oci-test-network-vcn",
        "type": "ENHANCED_CLUSTER",
        "clusterPodNetworkOptions": [{"cniType": "OCI_VCN_IP_NATIVE"}],
        # Secure by default: no public IP on the API endpoint, Secrets encrypted with the stack's own Vault key.
        "endpointConfig": {"subnetId": "ocid1.subnet.oc1.iad.oci-test-network-endpoint", "isPublicIpEnabled": False},
        "kmsKeyId": "ocid1.key.oc1.iad.oci-test-secrets-key",
        "options": {"serviceLbSubnetIds": ["ocid1.subnet.oc1.iad.oci-test-network-load-balancers"],
                    "kubernetesNetworkConfig": {"servicesCidr": "10.96.0.0/16"}},
    }
    provider = rec.one("pulumi:providers:kubernetes", "oci-test-k8s")
    assert provider.inputs["kubeconfig"] == "[secret]"
    assert json.loads(captured["kubeconfig"])["current-context"] == "ocid1.cluster.oc1.iad.oci-test-oke"
    assert captured["version"] == "v1.36.1"


def test_every_oci_resource_goes_through_the_stack_region_provider(dev):
    rec, _ = dev
    provider = rec.one("pulumi:providers:oci", "oci-test-oci")
    assert provider.inputs == {"region": "us-ashburn-1"}
    oci_resources = [r for r in rec if r.custom and r.type.startswith("oci:")]
    assert oci_resources and all(r.provider.startswith(provider.urn + "::") for r in oci_resources)


def test_new_vcn_has_gateways_routes_and_four_subnets(dev):
    rec, _ = dev
    subnets = {r.name: r.inputs for r in rec.of_type("oci:Core/subnet:Subnet")}
    assert {n: (s["cidrBlock"], s["prohibitPublicIpOnVnic"]) for n, s in subnets.items()} == {
        "oci-test-network-endpoint": ("10.0.0.0/28", False),
        "oci-test-network-load-balancers": ("10.0.1.0/24", False),
        "oci-test-network-workers": ("10.0.16.0/20", True),
        "oci-test-network-pods": ("10.0.64.0/18", True),
    }
    assert subnets["oci-test-network-workers"]["routeTableId"] == "ocid1.routetable.oc1.iad.oci-test-network-private"
    private = rec.one("oci:Core/routeTable:RouteTable", "oci-test-network-private").inputs["routeRules"]
    assert [(r["destination"], r["destinationType"], r["networkEntityId"]) for r in private] == [
        ("0.0.0.0/0", "CIDR_BLOCK", "ocid1.natgateway.oc1.iad.oci-test-network-nat"),
        ("all-iad-services-in-oracle-services-network", "SERVICE_CIDR_BLOCK",
         "ocid1.servicegateway.oc1.iad.oci-test-network-sgw")]
    assert rec.one("oci:Core/serviceGateway:ServiceGateway").inputs["services"] == [
        {"serviceId": "ocid1.service.oc1.iad.all-services"}]
    workers = rec.one("oci:Core/securityList:SecurityList", "oci-test-network-workers-rules").inputs
    node_ports = [r for r in workers["ingressSecurityRules"] if r.get("tcpOptions") == {"min": 30000, "max": 32767}]
    assert [r["source"] for r in node_ports] == ["10.0.1.0/24"]
    assert rec.one("oci:Core/vcn:Vcn").inputs["cidrBlocks"] == ["10.0.0.0/16"]


def test_existing_vcn_creates_no_network_and_uses_the_given_subnets():
    subnet = "ocid1.subnet.oc1.iad.aaaaaaaa{}"
    rec, _ = run_oci(dict(A10), vcnId="ocid1.vcn.oc1.iad.aaaaaaaavcn", endpointSubnetId=subnet.format("api"),
                     workerSubnetId=subnet.format("workers"), podSubnetId=subnet.format("pods"),
                     loadBalancerSubnetId=subnet.format("lb"), kubernetesPatchVersion="v1.36.1")
    assert not [r for r in rec if r.type.startswith("oci:Core/") or r.type == "gpuplatform:index:OkeVcn"]
    cluster = rec.one("oci:ContainerEngine/cluster:Cluster").inputs
    assert (cluster["vcnId"], cluster["kubernetesVersion"]) == ("ocid1.vcn.oc1.iad.aaaaaaaavcn", "v1.36.1")
    assert cluster["endpointConfig"] == {"subnetId": subnet.format("api"), "isPublicIpEnabled": False}
    details = rec.one(NODE_POOL).inputs["nodeConfigDetails"]
    assert details["placementConfigs"][0]["subnetId"] == subnet.format("workers")
    assert details["nodePoolPodNetworkOptionDetails"]["podSubnetIds"] == [subnet.format("pods")]
    assert rec.one(NODE_POOL).inputs["nodeSourceDetails"]["imageId"] == "ocid1.image.oc1.iad.ol9-gpu-1-36-1"


def test_operator_disables_okes_device_plugin_and_spot_becomes_preemptible():
    rec, _ = run_oci(dict(A10, spot=True, zones=[3], desiredNodes=2), gpuSoftware="operator",
                     availabilityDomains=[1, 2])
    inputs = rec.one(NODE_POOL).inputs
    assert {"key": "oci.oraclecloud.com/disable-gpu-device-plugin", "value": "true"} in inputs["initialNodeLabels"]
    assert inputs["nodeConfigDetails"]["size"] == 2
    assert inputs["nodeConfigDetails"]["placementConfigs"] == [{
        "availabilityDomain": "Uocm:US-ASHBURN-AD-3", "subnetId": "ocid1.subnet.oc1.iad.oci-test-network-workers",
        "preemptibleNodeConfig": {"preemptionAction": {"type": "TERMINATE", "isPreserveBootVolume": False}}}]


def test_cluster_availability_domains_apply_to_pools_without_zones():
    rec, _ = run_oci(dict(A10), availabilityDomains=[3, 1])
    ads = [p["availabilityDomain"] for p in rec.one(NODE_POOL).inputs["nodeConfigDetails"]["placementConfigs"]]
    assert ads == ["Uocm:US-ASHBURN-AD-3", "Uocm:US-ASHBURN-AD-1"]


def test_existing_compute_cluster_is_joined_not_created():
    cc = "ocid1.computecluster.oc1.iad.aaaaaaaaexisting"
    rec, _ = run_oci(dict(H100, computeClusterId=cc))
    assert rec.of_type("oci:Core/computeCluster:ComputeCluster") == []
    assert rec.one(NODE_POOL).inputs["nodeConfigDetails"]["computeClusterId"] == cc


def test_oci_dev_reference_stack_plans_a10_inference_and_h100_rdma_training():
    result = planned_stack("oci-dev")
    assert result.errors == []
    pools = {r.inputs["name"]: r.inputs for r in result.recording.of_type(NODE_POOL)}
    assert {name: p["nodeShape"] for name, p in pools.items()} == {
        "a10-infer": "VM.GPU.A10.1", "a10-spot": "VM.GPU.A10.1", "h100-train": "BM.GPU.H100.8"}
    assert "computeClusterId" in pools["h100-train"]["nodeConfigDetails"]
    # a10-spot (a10-infer's fallback) is preemptible; h100-train launches into a capacity reservation in AD 1.
    assert all("preemptibleNodeConfig" in c for c in pools["a10-spot"]["nodeConfigDetails"]["placementConfigs"])
    assert [c.get("capacityReservationId") for c in pools["h100-train"]["nodeConfigDetails"]["placementConfigs"]] == [
        "ocid1.capacityreservation.oc1.iad.aaaaaaaagpuplatformexampleh100reservation0000000000"]
    assert [p.role for p in result.config.gpu_pools()] == ["inference", "inference", "training"]
    assert result.config.scheduling.per_gpu_priority_classes
    assert result.config.region == "us-ashburn-1"
