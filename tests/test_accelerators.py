"""Issue 20, items 1, 5 and 6: pools of every accelerator vendor carry their own resource names and taints
into quotas, Kueue, the reference workloads and monitoring; team quotas per resource; the new config errors."""

import shutil
import subprocess

import pytest
import yaml
from conftest import aws_pool

from gpu_platform import catalog, labels, versions
from gpu_platform.config import parse_config, strip_namespace
from gpu_platform.errors import ConfigError
from gpu_platform.monitoring import alerts, dashboards
from gpu_platform.plan import discover_stacks, load_stack_file
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.scheduling import kueue_objects, tenancy_objects
from gpu_platform.serving import inference_objects
from gpu_platform.serving.workloads import spec_from_args

NEURON, NEURONCORE, AMD_GPU, TPU = "aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "amd.com/gpu", "google.com/tpu"


def aws(pools, teams=(), **extra):
    # Without a training pool of NVIDIA or AMD GPUs the reference training job must be turned off (tested below).
    extra.setdefault("training", {"enabled": False})
    return parse_config({"cloud": "aws", "region": "us-west-2", "nodePools": list(pools), "teams": list(teams),
                         **extra}, "t")


def inf2(**overrides):
    return aws_pool(name="inf2", instanceType="inf2.xlarge", role="inference", **overrides)


def l4(**overrides):
    return aws_pool(name="l4", instanceType="g6.xlarge", **overrides)


def pool(name, model, devices, max_nodes=2, cloud="aws"):
    return GpuPool(name, cloud, "x", model, devices, 32, 0, max_nodes)


def shaped(cloud, instance_type, name="p"):
    """A pool of one catalogued shape, with the catalog's facts (what the components re-check)."""
    shape = catalog.find_shape(cloud, instance_type)
    return GpuPool(name, cloud, instance_type, shape.gpu_model, shape.gpu_count, shape.gpu.memory_gib, 0, 2)


# --- item 1: a pool's vendor decides its resources and taint ---------------------------------------------------


@pytest.mark.parametrize(("model", "resources", "taint"), [
    ("h100", ("nvidia.com/gpu",), "nvidia.com/gpu=present:NoSchedule"),
    ("inferentia2", (NEURON, NEURONCORE), "aws.amazon.com/neuron=true:NoSchedule"),
    ("mi300x", (AMD_GPU,), "amd.com/gpu=present:NoSchedule"),
    ("tpu-v6e", (TPU,), "google.com/tpu=present:NoSchedule"),
])
def test_each_vendor_pool_advertises_its_resources_and_carries_its_taint(model, resources, taint):
    p = pool("p", model, 4)
    assert p.resources == resources and p.resource == resources[0]
    assert f"{p.taints[0].key}={p.taints[0].value}:{p.taints[0].effect}" == taint
    key, value = taint.split("=")[0], taint.split("=")[1].split(":")[0]
    assert {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"} in p.tolerations


def test_neuron_pools_count_devices_and_neuroncores_per_node():
    assert pool("inf", "inferentia2", 12).resources_per_node == {NEURON: 12, NEURONCORE: 24}
    assert pool("trn", "trainium2", 16).resources_per_node == {NEURON: 16, NEURONCORE: 64}


# --- item 1: team quotas per resource ------------------------------------------------------------------------


def test_team_quotas_reach_the_namespace_quota_and_scale_the_cpu_memory_and_pod_defaults():
    config = aws([inf2(maxNodes=4), l4()], [{"name": "research", "gpuQuota": 2, "quotas": {NEURON: 4, NEURONCORE: 8}}])
    team = config.teams[0]
    assert team.quotas == ((NEURON, 4), (NEURONCORE, 8)) and team.gpu_quota == 2
    assert (team.cpu_quota, team.memory_quota_gib) == (8 * 6, 64 * 6)  # 2 GPUs + 4 Neuron devices, not the cores
    hard = tenancy_objects.resource_quota(team)["spec"]["hard"]
    assert hard == {"requests.nvidia.com/gpu": "2", f"requests.{NEURON}": "4", f"requests.{NEURONCORE}": "8",
                    "requests.cpu": "48", "requests.memory": "384Gi", "pods": "160"}


def test_changing_a_quota_changes_the_cluster_queue_nominal_quota():
    def nominal(count):
        config = aws([inf2(maxNodes=4)], [{"name": "research", "quotas": {NEURON: count}}])
        pools = config.gpu_pools()
        plans = kueue_objects.flavor_plans(pools)
        queue = kueue_objects.cluster_queue(kueue_objects.team_quotas(config.teams, plans)[0], plans)
        flavor = next(f for f in queue["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "inf2")
        resources = flavor["resources"]
        return {r["name"]: r["nominalQuota"] for r in resources}

    assert nominal(3)[NEURON] == 3 and nominal(1)[NEURON] == 1
    assert set(nominal(1)) == {"cpu", "memory", NEURON, NEURONCORE}


def test_pools_of_two_vendors_share_one_resource_group_with_zero_quota_where_a_pool_has_none():
    pools = [pool("l4", "l4", 1, 4), pool("inf2", "inferentia2", 1, 4)]
    plans = kueue_objects.flavor_plans(pools)
    assert kueue_objects.covered_resources(plans) == ("cpu", "memory", "nvidia.com/gpu", NEURON, NEURONCORE)
    config = aws([l4(maxNodes=4), inf2(maxNodes=4)], [{"name": "research", "gpuQuota": 4, "quotas": {NEURON: 4}}])
    queue = kueue_objects.cluster_queue(kueue_objects.team_quotas(config.teams, plans)[0], plans)
    flavors = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]}
               for f in queue["spec"]["resourceGroups"][0]["flavors"]}
    assert flavors["l4"][NEURON] == 0 and flavors["inf2"]["nvidia.com/gpu"] == 0
    assert flavors["l4"]["nvidia.com/gpu"] == 4 and flavors["inf2"][NEURON] == 4


# --- item 6: config errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("pools", "team", "message"), [
    ([l4()], {"name": "r", "quotas": {NEURON: 2}},
     f"teams[0].quotas.{NEURON}: no node pool advertises '{NEURON}' (the pools advertise nvidia.com/gpu)"),
    ([inf2()], {"name": "r", "gpuQuota": 2},
     "teams[0].gpuQuota: counts nvidia.com/gpu, which no node pool advertises (the pools advertise "
     f"{NEURON}, {NEURONCORE}); give the team quotas of those"),
    ([inf2(), l4()], {"name": "r", "gpuQuota": 2, "quotas": {"nvidia.com/gpu": 2}},
     "teams[0].quotas.nvidia.com/gpu: duplicates gpuQuota"),
    ([inf2()], {"name": "r", "quotas": {NEURON: -1}}, f"teams[0].quotas.{NEURON}"),
])
def test_quota_errors_name_the_field(pools, team, message):
    with pytest.raises(ConfigError) as err:
        aws(pools, [team])
    assert message in str(err.value)


def test_a_sharing_mode_the_accelerator_does_not_support_is_refused():
    with pytest.raises(ConfigError, match=r"nodePools\[0\].sharing.mode: AWS Neuron accelerators \(AWS "
                                          r"Inferentia2 on 'inf2.xlarge'\) support sharing mode exclusive only, got "
                                          r"'time-slicing'"):
        aws([inf2(sharing={"mode": "time-slicing", "replicas": 2})])


def test_gpu_software_is_refused_without_nvidia_pools():
    with pytest.raises(ConfigError, match="gpuSoftware: chooses the NVIDIA GPU software, and no node pool has NVIDIA"):
        aws([inf2()], gpuSoftware="operator")


def test_training_on_a_neuron_pool_is_refused_until_disabled():
    trn = aws_pool(name="trn", instanceType="trn1.2xlarge", role="training")
    with pytest.raises(ConfigError, match="training.enabled: the reference training job runs PyTorch DDP on NVIDIA or "
                                          "AMD GPUs, and its pool 'trn' has AWS Neuron accelerators"):
        aws([trn], training={})
    assert aws([trn], training={"enabled": False}).training.enabled is False


# --- item 5: the reference app on the pool's accelerator -----------------------------------------------------


@pytest.mark.parametrize(("cloud", "shape", "image", "device", "resource"), [
    ("aws", "g6.xlarge", versions.INFERENCE_IMAGE, "cuda", "nvidia.com/gpu"),
    ("aws", "inf2.xlarge", versions.NEURON_INFERENCE_IMAGE, "neuron", NEURON),
    ("azure", "Standard_ND96isr_MI300X_v5", versions.ROCM_INFERENCE_IMAGE, "cuda", AMD_GPU),
])
def test_inference_service_runs_the_vendors_image_device_and_resource(cloud, shape, image, device, resource):
    spec = spec_from_args({"pool": shaped(cloud, shape).spec()})
    container = inference_objects.deployment(spec)["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == image.reference and image.tag.startswith("0.1.0")
    assert {"name": "DEVICE", "value": device} in container["env"]
    assert container["resources"]["limits"][resource] == 1
    assert [k for k in container["resources"]["limits"] if k != "memory"] == [resource]


def test_inference_on_a_tpu_pool_needs_an_image_of_ones_own():
    with pytest.raises(ConfigError, match="InferenceService inference: pool: the app has no image for Google Cloud "
                                          "TPU"):
        spec_from_args({"pool": shaped("gcp", "ct6e-standard-4t").spec()})


# --- item 1: monitoring of other vendors' accelerators --------------------------------------------------------


def test_accelerator_rules_and_dashboard_exist_only_with_other_vendors_pools():
    nvidia_only = alerts.rule_set([pool("l4", "l4", 1)], alerts.AlertThresholds(), "https://x")
    assert "gpu-platform.accelerators.rules" not in [g.name for g in nvidia_only.recording]
    assert "accelerator-usage" not in dashboards.all_dashboards()

    mixed = [pool("l4", "l4", 1), pool("inf2", "inferentia2", 1), pool("mi", "mi300x", 8, cloud="azure")]
    group = alerts.accelerator_recording_group(mixed)
    quota = [r for r in group.rules if r.record == alerts.TEAM_ACCELERATOR_QUOTA]
    assert [dict(r.labels)["resource"] for r in quota] == [NEURON, NEURONCORE, AMD_GPU]
    assert 'kube_resourcequota{resource="requests.amd.com/gpu", type="hard"}' in quota[2].expr
    allocatable = [r for r in group.rules if r.record == alerts.POOL_ACCELERATOR_ALLOCATABLE]
    assert 'kube_node_status_allocatable{resource="aws_amazon_com_neuron"}' in allocatable[0].expr
    dash = dashboards.all_dashboards(accelerator_resources=alerts.other_accelerator_resources(mixed))
    titles = [p["title"] for p in dash["accelerator-usage"]["panels"]]
    assert f"{AMD_GPU}: allocated / quota per team" in titles and NEURONCORE in titles


def test_accelerator_rules_pass_promtool(tmp_path):
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found on PATH: apt-get install -y --no-install-recommends prometheus"
    rules = alerts.rule_set([pool("inf2", "inferentia2", 1), pool("tpu", "tpu-v6e", 4, cloud="gcp")],
                            alerts.AlertThresholds(), "https://x")
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(alerts.rule_file(rules.all_groups)))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_vendor_taints_are_the_labels_module_constants():
    assert catalog.VENDORS["aws-neuron"].taint == labels.NEURON_TAINT
    assert catalog.VENDORS["amd"].taint == labels.AMD_GPU_TAINT
    assert catalog.VENDORS["google-tpu"].taint == labels.TPU_TAINT
    assert Sharing().mode == "exclusive"


def test_the_optimizer_looks_after_pools_of_vendors_with_a_per_pod_signal():
    # NVIDIA (DCGM) and AMD (device metrics exporter) label device series with the pod; neuron-monitor as the
    # platform runs it does not, and TPU metrics live in Cloud Monitoring.
    assert aws([inf2()]).runs_optimizer is False  # by default simply not deployed without NVIDIA or AMD pools
    assert aws([inf2(), l4()]).runs_optimizer is True
    amd = parse_config(strip_namespace(load_stack_file(discover_stacks()["azure-mi300x"])), "azure-mi300x")
    assert {p.vendor for p in amd.gpu_pools()} == {catalog.AMD} and amd.runs_optimizer is True
    with pytest.raises(ConfigError, match="optimizer.enabled: the optimizer reads per-pod utilisation of NVIDIA and "
                                          "AMD GPUs only, and no node pool has them; set optimizer.enabled: false"):
        aws([inf2()], optimizer={"enabled": True})


def test_rdma_on_an_accelerator_shape_without_a_fabric_is_refused():
    with pytest.raises(ConfigError, match=r"nodePools\[0\].rdma: 'inf2.xlarge' has no RDMA fabric; RDMA-capable AWS "
                                          r"shapes: .*trn1.32xlarge, trn1n.32xlarge, trn2.48xlarge"):
        aws([inf2(rdma=True)])


def test_per_model_priority_classes_name_the_accelerator_model():
    from gpu_platform.scheduling import priority_objects

    config = aws([inf2()], scheduling={"perGpuPriorityClasses": True})
    names = [s.name for s in priority_objects.class_specs(config.gpu_pools(), per_gpu=True)]
    assert names[-2:] == ["high-priority-inferentia2", "medium-priority-inferentia2"]


def test_a_tpu_team_quota_smaller_than_the_example_slice_is_refused_before_anything_is_planned():
    from gpu_platform import plan
    from gpu_platform.config import strip_namespace

    raw = strip_namespace(plan.load_stack_file(plan.discover_stacks()["gcp-tpu"]))
    raw["teams"] = [{"name": "research", "quotas": {TPU: 8}}]
    with pytest.raises(ConfigError, match=r"teams\[0\].quotas.google.com/tpu: the example JobSet takes a whole 4x4 "
                                          r"slice of pool 'v6e-train' \(16 chips\); a quota of 8 would never admit it"):
        parse_config(raw, "gcp-tpu")
    raw["training"] = {"enabled": False}
    assert parse_config(raw, "gcp-tpu").teams[0].quota_of(TPU) == 8
