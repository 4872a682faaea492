"""The reference rack stacks, one per cloud: an NVL72 pool on DRA beside an H100 pool on the device plugin. Each plans
the DRA driver, keeps the device plugin off the rack and on the H100 pool, gives the reference training job a
ComputeDomain and claim templates, has Kueue count the claimed GPUs, and boots arm64 where the nodes are arm64."""

import base64
import binascii
import json

import pytest
import yaml
from conftest import planned_stack

from gpu_platform import plan

RACK_STACKS = {"aws-gb200": "aws:eks/nodeGroup:NodeGroup", "azure-gb200": "azure-native:containerservice:AgentPool",
               "gcp-a4x": "gcp:container/nodePool:NodePool", "oci-gb200": "oci:ContainerEngine/nodePool:NodePool"}
RELEASE = "kubernetes:helm.sh/v3:Release"
DEVICE_PLUGIN_OFF = '"nvidia.com/gpu.deploy.device-plugin": "false"'


@pytest.fixture(scope="module", params=sorted(RACK_STACKS))
def planned(request):
    result = planned_stack(request.param)
    assert result.errors == []
    return request.param, result


def texts(value) -> list[str]:
    """Every string in a resource's inputs, base64 user data decoded too (OKE labels live in cloud-init)."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v)]
    if not isinstance(value, str):
        return []
    try:
        return [value, base64.b64decode(value, validate=True).decode()]
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return [value]


def node_pool_inputs(stack: str, result, pool: str) -> str:
    """The rack's or the H100 pool's node pool resource inputs, flattened to one text."""
    doc = plan.plan_json(result)
    [resource] = [r for r in doc["resources"] if r["type"] == RACK_STACKS[stack] and pool in r["name"]]
    return "\n".join([json.dumps(resource["inputs"]), *texts(resource["inputs"])])


def releases(result) -> dict[str, dict]:
    return {r["inputs"]["name"]: r["inputs"] for r in plan.plan_json(result)["resources"] if r["type"] == RELEASE}


def test_the_dra_driver_serves_the_rack_with_compute_domains(planned):
    _, result = planned
    driver = releases(result)["dra-driver-nvidia-gpu"]
    assert (driver["chart"], driver["version"]) == (
        "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "0.4.1")
    assert driver["values"]["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}}
    assert driver["values"]["kubeletPlugin"]["nodeSelector"] == {"nvidia.com/dra-kubelet-plugin": "true"}
    # The H100 pool still needs the operator's device plugin: on in the cluster, off on the rack's nodes by label.
    assert releases(result)["gpu-operator"]["values"]["devicePlugin"]["enabled"] is True


def test_no_device_plugin_on_the_rack_and_the_device_plugin_on_the_h100_pool(planned):
    stack, result = planned
    config = result.config
    rack = next(p for p in config.gpu_pools() if p.dra)
    h100 = next(p for p in config.gpu_pools() if not p.dra)
    assert (rack.gpu_model, rack.gpus_per_node, rack.nvlink_domain_gpus, rack.architecture) == ("gb200", 4, 72, "arm64")
    assert (h100.gpu_model.startswith("h100"), h100.gpu_allocation) == (True, "device-plugin")
    rack_inputs = node_pool_inputs(stack, result, rack.name)
    assert "nvidia.com/gpu.deploy.device-plugin" in rack_inputs and "nvidia.com/dra-kubelet-plugin" in rack_inputs
    h100_inputs = node_pool_inputs(stack, result, h100.name)
    assert "nvidia.com/gpu.deploy.device-plugin" not in h100_inputs
    assert "nvidia.com/dra-kubelet-plugin" not in h100_inputs
    # The inference app on the H100 pool asks for the device plugin's resource; the training job claims.
    [deployment] = [m for m in result.manifests if m["kind"] == "Deployment" and m["metadata"]["name"] == "sentiment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_the_training_job_gets_a_compute_domain_and_claim_templates(planned):
    _, result = planned
    by_kind = {(m["kind"], m["metadata"]["name"]): m for m in result.manifests}
    domain = by_kind[("ComputeDomain", "reference-training-domain")]
    assert domain["spec"]["channel"]["resourceClaimTemplate"] == {"name": "reference-training-imex-channel"}
    template = by_kind[("ResourceClaimTemplate", "reference-training-gpus")]
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 4}
    pod = by_kind[("Job", "reference-training")]["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [
        {"name": "gpus", "resourceClaimTemplateName": "reference-training-gpus"},
        {"name": "imex-channel", "resourceClaimTemplateName": "reference-training-imex-channel"}]
    assert pod["nodeSelector"]["kubernetes.io/arch"] == "arm64"
    assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == \
        "nvidia.com/gpu.clique"


def test_kueue_counts_the_claimed_gpus_and_channels(planned):
    _, result = planned
    configuration = yaml.safe_load(releases(result)["kueue"]["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert configuration["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]},
        {"name": "nvidia.com/imex-channel", "deviceClassNames": ["compute-domain-default-channel.nvidia.com"]}]
    queues = {m["metadata"]["name"]: m for m in result.manifests if m["kind"] == "ClusterQueue"}
    rack = next(p for p in result.config.gpu_pools() if p.dra)
    on_rack = []
    for team in result.config.teams:
        [group] = queues[team.name]["spec"]["resourceGroups"]
        flavor = next(f for f in group["flavors"] if f["name"] == rack.name)
        quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
        assert quota["nvidia.com/imex-channel"] == quota["nvidia.com/gpu"]
        on_rack.append(quota["nvidia.com/gpu"])
    # A team with poolQuotas elsewhere (aws-gb200's product) has none of the rack; the training team has some.
    assert on_rack[0] > 0


@pytest.mark.parametrize("stack,boots_arm64", [
    ("aws-gb200", '"amiType": "AL2023_ARM_64_NVIDIA"'),
    ("gcp-a4x", '"imageType": "COS_CONTAINERD"'),
    ("azure-gb200", '"osSKU": "Ubuntu"'),
    ("oci-gb200", "aarch64"),
])
def test_the_rack_boots_an_arm64_image(stack, boots_arm64):
    result = planned_stack(stack)
    rack = next(p for p in result.config.gpu_pools() if p.dra)
    assert boots_arm64 in node_pool_inputs(stack, result, rack.name)
