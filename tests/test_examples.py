"""Every example project planned under the mock engine the way `pulumi up` would run it: its own Pulumi.yaml
project name, its stack file's configuration, its ``__main__.py``. Inputs are asserted, manifests validated."""

import base64
import json
import runpy
from pathlib import Path

import pytest
import yaml

from gpu_platform import labels, plan, schemas
from gpu_platform.errors import ConfigError
from gpu_platform.testing import Recording, run_program

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PROJECTS = sorted(p.parent.name for p in EXAMPLES.glob("*/Pulumi.yaml"))
GPU_TAINT_API = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
GPU_TAINT_K8S = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def project_of(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name / "Pulumi.yaml").read_text())


def run_example(name: str, stack: str = "dev", overrides: dict | None = None) -> Recording:
    """Run ``examples/<name>/__main__.py`` with its ``Pulumi.<stack>.yaml`` under the mock engine."""
    directory = EXAMPLES / name
    config = yaml.safe_load((directory / f"Pulumi.{stack}.yaml").read_text())["config"]
    config.update(overrides or {})
    return run_program(lambda: runpy.run_path(str(directory / "__main__.py"), run_name="__main__"),
                       stack=stack, project=project_of(name)["name"], config=config)


@pytest.fixture(scope="module")
def recordings():
    """Each example run once (they take 0.5-4 s each: cloud SDK imports and registrations)."""
    return {name: run_example(name) for name in PROJECTS}


def test_there_are_five_examples_besides_the_inference_app():
    assert set(PROJECTS) >= {"onprem-rdma", "eks-efa-kueue", "gke-l4-timeshare", "aks-infiniband", "oke-rdma-h100"}


@pytest.mark.parametrize("name", PROJECTS)
def test_example_is_a_complete_pulumi_project(name):
    directory = EXAMPLES / name
    project = project_of(name)
    assert project["name"] == name
    assert project["runtime"]["name"] == "python"
    assert (directory / "README.md").read_text().startswith("# ")
    assert "../.." in (directory / "requirements.txt").read_text()
    stack = yaml.safe_load((directory / "Pulumi.dev.yaml").read_text())["config"]
    declared = set(project.get("config", {}))
    own = {k.split(":", 1)[1] for k in stack if k.startswith(f"{name}:")}
    assert own <= declared, f"stack keys not declared in Pulumi.yaml: {own - declared}"


@pytest.mark.parametrize("name", PROJECTS)
def test_example_manifests_validate(recordings, name):
    manifests = plan.render_manifests(recordings[name])
    assert manifests
    for obj in manifests:
        schemas.validate_manifest(obj, "1.34")


@pytest.mark.parametrize("name", PROJECTS)
def test_example_children_are_parented_to_components(recordings, name):
    rec = recordings[name]
    components = [r for r in rec if r.type.startswith("gpuplatform:index:")]
    assert components
    for component in components:
        assert rec.children_of(component), component.name


def test_onprem_nodes_get_labels_and_taints_by_node_patch(recordings):
    rec = recordings["onprem-rdma"]
    patches = rec.of_type("kubernetes:core/v1:NodePatch")
    assert sorted(p.inputs["metadata"]["name"] for p in patches) == ["dgx-01", "dgx-02"]
    for patch in patches:
        assert patch.parent_name == "h100-ib"
        assert patch.inputs["spec"]["taints"] == [
            GPU_TAINT_K8S, {"key": "dedicated", "value": "ml-platform", "effect": "NoSchedule"}]
        assert patch.inputs["metadata"]["labels"] == {
            labels.POOL_LABEL: "h100-ib", labels.ACCELERATOR_LABEL: "h100", labels.RDMA_LABEL: "infiniband",
            labels.SHARING_LABEL: "exclusive"}
        assert patch.inputs["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}


def test_onprem_high_and_medium_priority_classes(recordings):
    rec = recordings["onprem-rdma"]
    classes = {r.inputs["metadata"]["name"]: r.inputs
               for r in rec.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")}
    assert {n: c["value"] for n, c in classes.items()} == {
        "inference-critical": 100000, "high-priority": 10000, "medium-priority": 1000, "low-priority": 100,
        "high-priority-h100": 10000, "medium-priority-h100": 1000}
    assert [n for n, c in classes.items() if c["globalDefault"]] == ["medium-priority"]
    assert not rec.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")  # kueue: False


def test_onprem_infiniband_devices_and_full_gpu_operator(recordings):
    rec = recordings["onprem-rdma"]
    policy = rec.one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy").inputs
    plugin = json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"][0]
    assert (plugin["resourcePrefix"], plugin["resourceName"]) == ("rdma", "ib")
    assert plugin["selectors"]["linkTypes"] == ["infiniband"]
    releases = {r.inputs["chart"]: r.inputs for r in rec.of_type("kubernetes:helm.sh/v3:Release")}
    operator = releases["gpu-operator"]["values"]
    assert operator["driver"]["enabled"] is True  # bare hosts: the operator installs the driver
    assert "network-operator" in releases


def test_eks_efa_pool_launch_template_and_placement(recordings):
    rec = recordings["eks-efa-kueue"]
    interfaces = rec.one("aws:ec2/launchTemplate:LaunchTemplate", "train-h100-efa-lt").inputs["networkInterfaces"]
    assert len(interfaces) == 32  # p5.48xlarge: 32 EFA interfaces
    assert interfaces[0]["interfaceType"] == "efa" and interfaces[0]["networkCardIndex"] == 0
    assert {i["interfaceType"] for i in interfaces[1:]} == {"efa-only"}
    assert rec.one("aws:ec2/placementGroup:PlacementGroup").inputs["strategy"] == "cluster"
    group = rec.named("train-h100-efa-nodes").inputs
    assert group["instanceTypes"] == ["p5.48xlarge"]
    assert group["amiType"] == "AL2023_x86_64_NVIDIA"
    assert group["taints"] == [GPU_TAINT_API]
    assert group["scalingConfig"] == {"minSize": 0, "maxSize": 2, "desiredSize": 0}
    assert group["tags"]["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == "32"
    assert len(group["subnetIds"]) == 1  # EFA traffic stays in one subnet


def test_eks_kueue_flavor_and_team_queue(recordings):
    rec = recordings["eks-efa-kueue"]
    flavor = rec.named("train-scheduling-flavor-h100-efa").inputs
    assert flavor["spec"]["nodeLabels"] == {labels.POOL_LABEL: "h100-efa", labels.ACCELERATOR_LABEL: "h100"}
    assert flavor["spec"]["tolerations"] == [{**GPU_TAINT_K8S, "operator": "Equal"}]
    queue = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue").inputs
    assert queue["metadata"]["name"] == "research"
    gpu_quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
                 for f in queue["spec"]["resourceGroups"][0]["flavors"]}
    assert gpu_quota["h100-efa"]["nvidia.com/gpu"] == 16
    local = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue").inputs
    assert (local["metadata"]["namespace"], local["spec"]["clusterQueue"]) == ("research", "research")
    releases = {r.inputs["chart"].rsplit("/", 1)[-1] for r in rec.of_type("kubernetes:helm.sh/v3:Release")}
    assert {"kueue", "aws-efa-k8s-device-plugin", "nvidia-device-plugin"} <= releases


def test_gke_l4_pool_is_time_shared_by_gke(recordings):
    rec = recordings["gke-l4-timeshare"]
    pool = rec.named("infer-l4-shared-pool").inputs
    accelerator = pool["nodeConfig"]["guestAccelerators"][0]
    assert accelerator["type"] == "nvidia-l4" and accelerator["count"] == 1
    assert accelerator["gpuSharingConfig"] == {"gpuSharingStrategy": "TIME_SHARING", "maxSharedClientsPerGpu": 4}
    assert accelerator["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "DEFAULT"}
    assert pool["nodeConfig"]["machineType"] == "g2-standard-8"
    assert pool["nodeConfig"]["taints"] == [GPU_TAINT_API]
    assert pool["autoscaling"] == {"totalMinNodeCount": 1, "totalMaxNodeCount": 3}


def test_gke_inference_service_takes_one_time_slice_per_pod(recordings):
    rec = recordings["gke-l4-timeshare"]
    deployment = rec.one("kubernetes:apps/v1:Deployment").inputs
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {labels.POOL_LABEL: "l4-shared"}
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert GPU_TAINT_K8S | {"operator": "Equal"} in pod["tolerations"]
    hpa = rec.one("kubernetes:autoscaling/v2:HorizontalPodAutoscaler").inputs["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 12)  # 4 slices x 3 nodes


def test_gke_replicas_follow_the_stack_config():
    rec = run_example("gke-l4-timeshare", overrides={"gke-l4-timeshare:replicasPerGpu": 2})
    accelerator = rec.named("infer-l4-shared-pool").inputs["nodeConfig"]["guestAccelerators"][0]
    assert accelerator["gpuSharingConfig"]["maxSharedClientsPerGpu"] == 2


def test_aks_infiniband_pool(recordings):
    rec = recordings["aks-infiniband"]
    pool = rec.one("azure-native:containerservice:AgentPool").inputs
    assert pool["vmSize"] == "Standard_ND96isr_H100_v5"
    assert pool["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert pool["nodeLabels"][labels.RDMA_LABEL] == "infiniband"
    assert pool["gpuProfile"] == {"driver": "None"}  # the GPU Operator owns the driver
    assert (pool["enableAutoScaling"], pool["minCount"], pool["maxCount"]) == (True, 0, 2)
    feature = rec.one("azure-native:features:SubscriptionFeatureRegistration").inputs
    assert feature == {"featureName": "AKSInfinibandSupport", "providerNamespace": "Microsoft.ContainerService"}
    policy = rec.one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy").inputs["spec"]
    assert policy["ofedDriver"]["image"] == "doca-driver"  # AKS nodes get the DOCA-OFED driver container
    assert json.loads(policy["rdmaSharedDevicePlugin"]["config"])["configList"][0]["resourceName"] == "ib"


def test_oke_rdma_pool_joins_a_compute_cluster(recordings):
    rec = recordings["oke-rdma-h100"]
    pool = rec.one("oci:ContainerEngine/nodePool:NodePool").inputs
    assert pool["nodeShape"] == "BM.GPU.H100.8"
    assert pool["nodeSourceDetails"]["imageId"] == "ocid1.image.oc1.iad.aaaaaaaaexamplerdmaimage"
    details = pool["nodeConfigDetails"]
    assert details["size"] == 2
    assert details["computeClusterId"].startswith("ocid1.computecluster.")
    assert len(details["placementConfigs"]) == 1  # one availability domain: the compute cluster's
    cloud_init = base64.b64decode(pool["nodeMetadata"]["user_data"]).decode()
    assert "--register-with-taints=nvidia.com/gpu=present:NoSchedule" in cloud_init
    assert {"key": labels.RDMA_LABEL, "value": "roce"} in pool["initialNodeLabels"]
    compute = rec.one("oci:Core/computeCluster:ComputeCluster").inputs
    assert compute["availabilityDomain"] == details["placementConfigs"][0]["availabilityDomain"]
    plugin = json.loads(rec.one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy").inputs["spec"][
        "rdmaSharedDevicePlugin"]["config"])["configList"][0]
    assert (plugin["resourceName"], plugin["selectors"]["linkTypes"]) == ("roce", ["ether"])


def test_oke_pool_publishes_roce_nccl_settings(recordings):
    env = recordings["oke-rdma-h100"].exports["ncclEnv"]
    assert env["NCCL_IB_GID_INDEX"] == "3"


def test_example_config_is_validated_like_a_stack_file():
    with pytest.raises(ConfigError, match=r"nodePools\[l4-shared\]\.sharing\.replicas: time-slicing needs at "
                                          r"least 2 replicas per GPU, got 1"):
        run_example("gke-l4-timeshare", overrides={"gke-l4-timeshare:replicasPerGpu": 1})
