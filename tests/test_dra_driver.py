"""NVIDIA's DRA driver: its Helm values, what the GPU Operator changes beside it, and `NvidiaGpuStack` installing it
for DRA pools only (mock engine), with the stack-level guards as one-line errors."""

import pytest
from chart_keys import load_keys, unknown_keys
from test_nvidia_chart_keys import KEYS_DIR

from gpu_platform import config
from gpu_platform.accelerators import dra_values
from gpu_platform.accelerators import nvidia_values as nv
from gpu_platform.accelerators.nvidia import NvidiaGpuStack
from gpu_platform.errors import ConfigError
from gpu_platform.labels import Taint
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.testing import run_program

RELEASE = "kubernetes:helm.sh/v3:Release"
DRA_KEYS = KEYS_DIR / "dra-driver-nvidia-gpu-0.4.1.keys"


def rack(cloud="aws", name="rack", taints=()):
    """A GB200 NVL72-like pool: 4 GPUs per node, a 72-GPU NVLink domain, arm64, DRA."""
    return GpuPool(name, cloud, "p6e-gb200.36xlarge", "gb200", 4, 186, 18, 18, gpu_allocation="dra",
                   architecture="arm64", nvlink_domain_gpus=72, user_taints=taints)


def h100(cloud="aws", allocation="device-plugin", mode="exclusive", profile=None):
    return GpuPool(f"h100-{allocation}", cloud, "p5.48xlarge", "h100", 8, 80, 2, 2, gpu_allocation=allocation,
                   sharing=Sharing(mode, 1, profile))


def test_values_serve_only_dra_pools_with_compute_domains_only_for_multi_node_nvlink():
    dedicated = Taint("dedicated", "training")
    values = dra_values.dra_driver_values("aws", [rack(taints=(dedicated,)), h100()])
    assert values == {
        "nvidiaDriverRoot": "/",
        "resourceApiVersion": "resource.k8s.io/v1",
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
        "kubeletPlugin": {
            "nodeSelector": {"nvidia.com/dra-kubelet-plugin": "true"},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}],
        },
    }
    # An ordinary DRA pool (NVLink inside the node) needs no ComputeDomain controller or IMEX daemons.
    assert dra_values.dra_driver_values("aws", [h100(allocation="dra")])["resources"] == {
        "gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert dra_values.dra_driver_values("aws", [h100()]) == {}


@pytest.mark.parametrize("cloud,preinstalled,root", [
    ("aws", None, "/"),  # EKS NVIDIA AMIs carry the driver
    ("oci", None, "/"),  # OKE GPU images too
    ("azure", None, "/run/nvidia/driver"),  # operator-mode AKS pools: the operator's driver container
    ("azure", True, "/"),
    ("gcp", None, "/run/nvidia/driver"),  # GKE Ubuntu pools: the operator's driver
    ("gcp", True, "/home/kubernetes/bin/nvidia"),  # GKE COS with Google's installer
    ("existing", None, "/run/nvidia/driver"),
    ("existing", True, "/"),
])
def test_driver_root_follows_where_the_driver_is(cloud, preinstalled, root):
    assert dra_values.dra_driver_values(cloud, [rack(cloud)], preinstalled)["nvidiaDriverRoot"] == root


def test_dra_values_keys_exist_in_the_pinned_chart():
    keys = load_keys(DRA_KEYS)
    assert "# source: kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1:deployments/helm/dra-driver-nvidia-gpu/" \
           "values.yaml\n" in DRA_KEYS.read_text()
    for cloud in ("aws", "azure", "gcp", "oci", "existing"):
        for preinstalled in (None, True):
            assert unknown_keys(dra_values.dra_driver_values(cloud, [rack(cloud), h100(cloud, "dra")],
                                                             preinstalled), keys) == []
    assert unknown_keys({"kubeletPlugin": {"nodeSelectr": {}}}, keys) == [
        "kubeletPlugin.nodeSelectr: not in values.yaml"]


def test_operator_keeps_the_device_plugin_off_dra_nodes():
    mixed = nv.gpu_operator_values("existing", [rack("existing"), h100("existing")], monitoring=False)
    # Mixed: the operand runs, but never on DRA nodes (their label), and the driver manager evicts the DRA plugin.
    assert mixed["devicePlugin"] == {"enabled": True}
    assert mixed["driver"] == {"enabled": True, "upgradePolicy": nv.driver_upgrade_policy(True), "manager": {"env": [
        {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "nvidia.com/dra-kubelet-plugin"}]}}
    assert rack().labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert "nvidia.com/gpu.deploy.device-plugin" not in h100().labels
    # Every NVIDIA pool on DRA: the operand is off cluster-wide (its validator would wait for nvidia.com/gpu).
    only_dra = nv.gpu_operator_values("aws", [rack()], monitoring=False)
    assert only_dra["devicePlugin"] == {"enabled": False}
    # EKS: the AMI's driver, no driver manager to tell. GFD stays on: it labels the NVLink clique.
    assert only_dra["driver"] == {"enabled": False}
    assert only_dra["gfd"] == {"enabled": True}
    assert nv.gpu_operator_values("aws", [h100()], monitoring=False)["devicePlugin"] == {"enabled": True}


def stack(pools, **extra):
    return run_program(lambda: NvidiaGpuStack("nv", {"cloud": "aws", "gpu_software": "operator",
                                                      "pools": [p.spec() for p in pools], **extra}))


def test_stack_installs_the_dra_driver_after_the_operator_for_dra_pools_only():
    rec = stack([rack(), h100()])
    release = rec.one(RELEASE, "nv-dra-driver-nvidia-gpu")
    assert {k: release.inputs[k] for k in ("chart", "version", "name", "namespace")} == {
        "chart": "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "version": "0.4.1",
        "name": "dra-driver-nvidia-gpu", "namespace": "gpu-operator"}
    assert release.inputs["values"]["resources"]["computeDomains"] == {"enabled": True}
    assert sorted(d.rsplit("::", 1)[-1] for d in release.dependencies) == ["nv-gpu-operator", "nv-namespace"]
    assert not stack([h100()]).of_type(RELEASE) or not [
        r for r in stack([h100()]).of_type(RELEASE) if r.name == "nv-dra-driver-nvidia-gpu"]


def test_stack_refuses_dra_below_the_drivers_kubernetes_and_without_the_operator():
    with pytest.raises(ConfigError) as err:
        stack([rack()], kubernetes_version="1.33")
    assert str(err.value) == ("NvidiaGpuStack nv: kubernetes_version: DRA needs Kubernetes >= 1.34 "
                              "(resource.k8s.io/v1, which NVIDIA's DRA driver 0.4.1 serves); "
                              "kubernetes_version is 1.33")
    with pytest.raises(ConfigError) as err:
        run_program(lambda: NvidiaGpuStack("nv", {"cloud": "aws", "gpu_software": "device-plugin",
                                                  "pools": [rack().spec()]}))
    assert str(err.value).startswith("NvidiaGpuStack nv: pools[0].gpu_allocation: DRA pools need gpu_software "
                                     "'operator' (got 'device-plugin')")


def test_stack_file_guards_name_the_field():
    def refused(raw):
        with pytest.raises(ConfigError) as err:
            config.parse_config(raw, "s")
        return str(err.value)

    base = {"cloud": "aws", "region": "us-east-1"}
    assert refused({**base, "kubernetesVersion": "1.33", "nodePools": [
        {"name": "a", "instanceType": "p5.48xlarge", "gpuAllocation": "dra", "maxNodes": 2}]}) == (
        "s: nodePools[0].gpuAllocation: DRA needs Kubernetes >= 1.34 (resource.k8s.io/v1, which NVIDIA's DRA "
        "driver 0.4.1 serves); kubernetesVersion is 1.33")
    assert refused({**base, "gpuSoftware": "device-plugin", "nodePools": [
        {"name": "a", "instanceType": "p5.48xlarge", "gpuAllocation": "dra"}]}).startswith(
        "s: nodePools[0].gpuAllocation: DRA pools need gpuSoftware 'operator' (got 'device-plugin'): its GPU "
        "Feature Discovery labels their nodes (nvidia.com/gpu.clique)")
    assert refused({**base, "autoscaling": {"autoscaler": "karpenter"}, "nodePools": [
        {"name": "a", "instanceType": "p5.48xlarge", "gpuAllocation": "dra"}]}) == (
        "s: nodePools[0].gpuAllocation: Karpenter 1.14.1 does not provision nodes for DRA ResourceClaims; use "
        "autoscaling.autoscaler cluster-autoscaler (managed node groups)")
    assert refused({**base, "nodePools": [
        {"name": "a", "instanceType": "p5.48xlarge", "gpuAllocation": "dra", "minNodes": 0, "maxNodes": 2}]}) == (
        "s: nodePools[0].minNodes: a DRA pool has a fixed size (minNodes = maxNodes, got 0 and 2): the node "
        "autoscalers do not add nodes for pending ResourceClaims")
    assert refused({**base, "nodePools": [{"name": "a", "instanceType": "p5.48xlarge", "gpuAllocation": "dra",
                                           "sharing": {"mode": "time-slicing", "replicas": 4}}]}) == (
        "s: nodePools[0].sharing.mode: time-slicing is a device-plugin sharing config, and a DRA pool "
        "(gpuAllocation: dra) runs no device plugin; use exclusive or mig, or gpuAllocation: device-plugin")
    assert refused({**base, "nodePools": [{"name": "a", "instanceType": "p5.48xlarge", "gpuAllocation": "both"}]}) == (
        "s: nodePools[0].gpuAllocation: 'both' is not one of device-plugin, dra")
    assert refused({**base, "nodePools": [{"name": "a", "instanceType": "inf2.xlarge", "gpuAllocation": "dra"}]}) == (
        "s: nodePools[0].gpuAllocation: dra is served by NVIDIA's DRA driver; AWS Neuron accelerators "
        "('inf2.xlarge') are allocated by their device plugin")


def test_dra_pool_defaults_to_a_fixed_size_and_the_operator():
    parsed = config.parse_config({"cloud": "aws", "region": "us-east-1", "nodePools": [
        {"name": "a", "instanceType": "p5.48xlarge", "gpuAllocation": "dra", "maxNodes": 3},
        {"name": "b", "instanceType": "g6.xlarge"}]}, "s")
    assert [(p.gpu_allocation, p.min_nodes, p.max_nodes) for p in parsed.node_pools] == [
        ("dra", 3, 3), ("device-plugin", 0, 1)]
    assert parsed.gpu_software == "operator"
    device_plugin_only = config.parse_config({"cloud": "aws", "region": "us-east-1", "nodePools": [
        {"name": "b", "instanceType": "g6.xlarge"}]}, "s")
    assert device_plugin_only.gpu_software == "device-plugin"


def test_rack_shapes_default_to_dra_and_arm64_and_refuse_the_device_plugin():
    parsed = config.parse_config({"cloud": "gcp", "region": "us-central1", "nodePools": [
        {"name": "rack", "instanceType": "a4x-highgpu-4g", "maxNodes": 18, "role": "training",
         "provisioning": "reservation", "reservation": "a4x-reservation", "zones": ["us-central1-a"]},
        {"name": "infer", "instanceType": "g2-standard-8", "role": "inference"}]}, "s")
    rack_pool = parsed.gpu_pools()[0]
    assert (rack_pool.gpu_allocation, rack_pool.architecture, rack_pool.nvlink_domain_gpus, rack_pool.min_nodes,
            rack_pool.gpu_model, rack_pool.nvlink_domain_nodes) == ("dra", "arm64", 72, 18, "gb200", 18)
    with pytest.raises(ConfigError) as err:
        config.parse_config({"cloud": "azure", "region": "eastus", "nodePools": [
            {"name": "rack", "instanceType": "Standard_ND128isr_NDR_GB200_v6", "gpuAllocation": "device-plugin"}]},
            "s")
    assert str(err.value) == (
        "s: nodePools[0].gpuAllocation: 'Standard_ND128isr_NDR_GB200_v6' joins the GPUs of 18 nodes in one 72-GPU "
        "NVLink domain, which a job reaches only through DRA ComputeDomains; gpuAllocation must be dra")


def test_reference_workloads_on_arm64_pools_need_arm64_images():
    def refused(raw):
        with pytest.raises(ConfigError) as err:
            config.parse_config(raw, "s")
        return str(err.value)

    base = {"cloud": "existing", "networkPolicyEnforced": True}
    grace = {"name": "rack", "gpuModel": "gb200", "gpusPerNode": 4, "nvlinkDomainGpus": 72, "maxNodes": 18}
    assert refused({**base, "nodePools": [grace]}) == (
        "s: inference.enabled: pool 'rack' has arm64 nodes and the reference image "
        "ghcr.io/gpu-platform/sentiment-inference:0.1.0 is built for amd64 only; set inference.image (an arm64 "
        "build), an amd64 inference pool or inference.enabled: false")
    # The NGC PyTorch image trains there (a multi-arch index); an image of one's own serves there.
    parsed = config.parse_config({**base, "inference": {"image": "registry.example/sentiment:arm64"},
                                  "nodePools": [grace]}, "s")
    assert parsed.gpu_pools()[0].architecture == "arm64"
    assert refused({**base, "nodePools": [{"name": "mi", "gpuModel": "mi300x", "gpusPerNode": 8,
                                           "architecture": "arm64"}], "inference": {"enabled": False}}) == (
        "s: training.enabled: pool 'mi' has arm64 nodes and the reference image "
        "docker.io/rocm/pytorch:rocm7.14_ubuntu24.04_py3.12_pytorch_release_2.11.0 is built for amd64 only; set "
        "training.enabled: false")


def test_names_derived_from_the_longest_pool_name_stay_within_the_apis_limits():
    """Pool names are DNS labels (<= 63); the claim templates named after them are DNS subdomains (<= 253) and the pod
    claim and request names are the platform's own short constants, so every DRA object the platform derives from a
    pool stays valid. The schema check below is Kubernetes' own."""
    from gpu_platform import schemas
    from gpu_platform.accelerators import dra_objects

    longest = "p" * 63
    pool = GpuPool(longest, "existing", "", "h100", 8, 80, 2, 2, gpu_allocation="dra")
    templates = dra_objects.pool_claim_templates(pool, "research")
    assert [t["metadata"]["name"] for t in templates] == [f"{longest}-gpu", f"{longest}-node"]
    for body in templates:
        schemas.validate_manifest(body, "1.34")
    with pytest.raises(ConfigError) as err:
        config.parse_config({"cloud": "existing", "networkPolicyEnforced": True, "nodePools": [
            {"name": "p" * 64, "gpuModel": "h100", "gpusPerNode": 8, "gpuAllocation": "dra"}]}, "s")
    assert str(err.value).startswith("s: nodePools[0].name: '" + "p" * 64 + "' is not a DNS label")
