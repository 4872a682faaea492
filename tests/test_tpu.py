"""Google Cloud TPU on GKE: catalog facts, TPU node pools (machine type, placement, taint, labels), Kueue flavors,
the JobSet chart and the example multi-host JobSet, and the configuration errors of TPU pools."""

from pathlib import Path

import pulumi
import pytest
import yaml
from chart_keys import load_keys, unknown_keys

from gpu_platform import catalog, schemas, testing, versions
from gpu_platform.accelerators import tpu_objects
from gpu_platform.accelerators.tpu import TpuJobSet, TpuSliceJob
from gpu_platform.clouds import gcp
from gpu_platform.clouds.gcp import options as gcp_options
from gpu_platform.config import ConfigError, parse_config
from gpu_platform.errors import ConfigError as ComponentConfigError
from gpu_platform.pools import GpuPool
from gpu_platform.scheduling import kueue_objects

REGION = "us-east5"
ZONE = "us-east5-b"
NODE_POOL = "gcp:container/nodePool:NodePool"
TPU_TAINT = [{"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"}]
KEYS = Path(__file__).parent / "data" / "chart_keys" / "jobset-0.12.0.keys"
STACK = Path(__file__).parent.parent / "stacks" / "Pulumi.gcp-tpu.yaml"


def gke(*pools, **top):
    # The reference inference app has no TPU image: off, so the TPU pools are what is checked.
    return {"cloud": "gcp", "region": REGION, "nodePools": list(pools), "inference": {"enabled": False}, **top}


def v6e_slice(**fields):
    return {"name": "train", "instanceType": "ct6e-standard-4t", "tpuTopology": "4x4", "minNodes": 4,
            "maxNodes": 4, "zones": [ZONE], "role": "training", **fields}


def v6e_host(**fields):
    return {"name": "infer", "instanceType": "ct6e-standard-4t", "maxNodes": 2, "zones": [ZONE], **fields}


def error_of(raw) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(raw, "dev")
    return str(info.value)


def build(*pools):
    config = parse_config(gke(*pools, project="gpu-dev-1"), "dev")
    captured: dict = {}

    def program():
        captured["handle"] = gcp.cluster_from_config("dev", config, pulumi.ResourceOptions())

    return testing.run_program(program, stack="dev"), captured["handle"]


@pytest.fixture(scope="module")
def tpu_cluster():
    return build(v6e_slice(), v6e_host())


# --- catalog ------------------------------------------------------------------------------------------------


def test_tpu_models_are_google_tpu_with_their_hbm():
    assert {k: (m.memory_gib, m.vendor) for k, m in catalog.GPU_MODELS.items() if m.vendor == "google-tpu"} == {
        "tpu-v5e": (16, "google-tpu"), "tpu-v5p": (95, "google-tpu"), "tpu-v6e": (32, "google-tpu"),
        "tpu7x": (192, "google-tpu")}
    assert catalog.vendor_of("tpu-v6e").resources == ("google.com/tpu",)


@pytest.mark.parametrize("name, model, chips, vcpus, memory, label, single_host", [
    ("ct5lp-hightpu-1t", "tpu-v5e", 1, 24, 48, "tpu-v5-lite-podslice", "1x1"),
    ("ct5lp-hightpu-4t", "tpu-v5e", 4, 112, 192, "tpu-v5-lite-podslice", "2x2"),
    ("ct5lp-hightpu-8t", "tpu-v5e", 8, 224, 384, "tpu-v5-lite-podslice", "2x4"),
    ("ct5p-hightpu-4t", "tpu-v5p", 4, 208, 448, "tpu-v5p-slice", "2x2x1"),
    ("ct6e-standard-1t", "tpu-v6e", 1, 44, 176, "tpu-v6e-slice", "1x1"),
    ("ct6e-standard-4t", "tpu-v6e", 4, 180, 720, "tpu-v6e-slice", "2x2"),
    ("ct6e-standard-8t", "tpu-v6e", 8, 180, 1440, "tpu-v6e-slice", "2x4"),
    ("tpu7x-standard-4t", "tpu7x", 4, 224, 960, "tpu7x", "2x2x1"),
])
def test_tpu_machine_types(name, model, chips, vcpus, memory, label, single_host):
    shape = catalog.SHAPES[("gcp", name)]
    assert (shape.gpu_model, shape.gpu_count, shape.vcpus, shape.memory_gib, shape.accelerator_type) == (
        model, chips, vcpus, memory, label)
    assert shape.tpu_topologies[0] == single_host
    assert catalog.tpu_hosts(shape, single_host) == 1
    assert shape.rdma_fabric is None


def test_tpu_topologies_and_hosts():
    v6e = catalog.SHAPES[("gcp", "ct6e-standard-4t")]
    assert v6e.tpu_topologies == ("2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")
    assert [catalog.tpu_hosts(v6e, t) for t in v6e.tpu_topologies] == [1, 2, 4, 8, 16, 32, 64]
    v5p = catalog.SHAPES[("gcp", "ct5p-hightpu-4t")].tpu_topologies
    assert v5p[:5] == ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4")
    assert "4x4x8" in v5p and "4x8x4" not in v5p and "16x16x24" in v5p  # sides ascending, <= 140 cubes
    assert max(catalog.tpu_chips(t) for t in v5p) <= 8960
    assert catalog.SHAPES[("gcp", "tpu7x-standard-4t")].tpu_topologies == ("2x2x1",)
    assert catalog.SHAPES[("gcp", "a3-highgpu-8g")].tpu_topologies == ()


# --- GKE node pools ------------------------------------------------------------------------------------------


def test_multi_host_pool_machine_type_placement_taint_and_labels(tpu_cluster):
    recording, _ = tpu_cluster
    pool = recording.one(NODE_POOL, "dev-train-pool").inputs
    config = pool["nodeConfig"]
    assert config["machineType"] == "ct6e-standard-4t"
    assert "guestAccelerators" not in config
    assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
    assert config["taints"] == TPU_TAINT
    assert config["labels"] == {"gpu-platform.io/accelerator": "tpu-v6e", "gpu-platform.io/gpu-sharing": "exclusive",
                                "gpu-platform.io/pool": "train"}
    assert pool["autoscaling"] == {"totalMinNodeCount": 4, "totalMaxNodeCount": 4}
    assert pool["initialNodeCount"] == 4
    assert pool["nodeLocations"] == [ZONE]
    assert config["imageType"] == "COS_CONTAINERD"


def test_single_host_pool_has_no_placement_policy(tpu_cluster):
    recording, _ = tpu_cluster
    pool = recording.one(NODE_POOL, "dev-infer-pool").inputs
    assert "placementPolicy" not in pool
    assert pool["nodeConfig"]["taints"] == TPU_TAINT
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 2}


def test_pools_the_kubernetes_layer_sees_carry_the_labels_gke_sets(tpu_cluster):
    _, handle = tpu_cluster
    pools = {p.name: p for p in handle.pools}
    assert pools["train"].resource == "google.com/tpu"
    assert pools["train"].gpus_per_node == 4
    assert pools["train"].taints == (catalog.VENDORS["google-tpu"].taint,)
    assert pools["train"].tolerations == [{"key": "google.com/tpu", "operator": "Equal", "value": "present",
                                           "effect": "NoSchedule"}]
    assert {k: v for k, v in pools["train"].labels.items() if k.startswith("cloud.google.com/")} == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"}
    assert pools["infer"].labels["cloud.google.com/gke-tpu-topology"] == "2x2"


def test_tpu_topology_key_changes_the_plan():
    recording, _ = build(v6e_slice(tpuTopology="4x8", minNodes=8, maxNodes=8))
    pool = recording.one(NODE_POOL, "dev-train-pool").inputs
    assert pool["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x8"}
    assert pool["autoscaling"] == {"totalMinNodeCount": 8, "totalMaxNodeCount": 8}
    recording, _ = build(v6e_host(tpuTopology="2x2"))
    assert "placementPolicy" not in recording.one(NODE_POOL, "dev-infer-pool").inputs


def test_pool_args_carry_the_topology():
    config = parse_config(gke(v6e_slice(), v6e_host(), {"name": "l4", "instanceType": "g2-standard-8"}), "dev")
    entries = [gcp_options.pool_args(c, p) for c, p in zip(config.node_pools, config.gpu_pools(), strict=True)]
    assert [e.get("tpu_topology") for e in entries] == ["4x4", "2x2", None]


# --- Kueue ----------------------------------------------------------------------------------------------------


def test_flavors_select_tpu_type_and_topology(tpu_cluster):
    _, handle = tpu_cluster
    flavors = {p.name: kueue_objects.resource_flavor(p) for p in kueue_objects.flavor_plans(handle.pools)}
    assert flavors["train"]["spec"]["nodeLabels"] == {
        "gpu-platform.io/pool": "train", "gpu-platform.io/accelerator": "tpu-v6e",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"}
    assert flavors["infer"]["spec"]["nodeLabels"]["cloud.google.com/gke-tpu-topology"] == "2x2"
    assert flavors["train"]["spec"]["tolerations"] == [
        {"key": "google.com/tpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    nvidia = GpuPool("h100", "gcp", "a3-highgpu-8g", "h100", 8, 80, 0, 2)
    assert kueue_objects.flavor_node_labels(nvidia) == {"gpu-platform.io/pool": "h100",
                                                        "gpu-platform.io/accelerator": "h100"}


def test_cluster_queue_counts_tpu_chips(tpu_cluster):
    _, handle = tpu_cluster
    plans = kueue_objects.flavor_plans(handle.pools)
    assert kueue_objects.covered_resources(plans) == ("cpu", "memory", "google.com/tpu")
    assert [(p.name, p.capacity) for p in plans] == [("train", 16), ("infer", 8)]


# --- JobSet ---------------------------------------------------------------------------------------------------


def test_jobset_chart_pin_and_values_keys():
    assert (versions.JOBSET.name, versions.JOBSET.version, versions.JOBSET.repository) == (
        "oci://registry.k8s.io/jobset/charts/jobset", "0.12.0", "")
    assert versions.JOBSET.release_args() == {"chart": "oci://registry.k8s.io/jobset/charts/jobset",
                                              "version": "0.12.0"}
    values = tpu_objects.jobset_values()
    assert values == {"prometheus": {"enable": False}, "certManager": {"enable": False}}
    assert unknown_keys(values, load_keys(KEYS)) == []
    assert unknown_keys({"prometheus": {"enabled": False}}, load_keys(KEYS)) == [
        "prometheus.enabled: not in values.yaml"]


def test_multihost_jobset_object(tpu_cluster):
    _, handle = tpu_cluster
    train = next(p for p in handle.pools if p.name == "train")
    body = tpu_objects.multihost_jobset(train, "research", "gpu", "img@sha256:" + "0" * 64)
    schemas.validate_manifest(body, "1.34")
    assert body["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert body["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu"
    assert body["metadata"]["annotations"] == {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}
    assert body["spec"]["network"] == {"enableDNSHostnames": True}
    (job,) = body["spec"]["replicatedJobs"]
    assert (job["replicas"], job["template"]["spec"]["parallelism"], job["template"]["spec"]["completions"]) == (
        1, 4, 4)
    pod = job["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                   "cloud.google.com/gke-tpu-topology": "4x4"}
    (container,) = pod["containers"]
    assert container["resources"] == {"requests": {"google.com/tpu": 4}, "limits": {"google.com/tpu": 4}}
    assert "assert n == 16" in container["command"][2]
    assert "hostNetwork" not in pod and "privileged" not in container["securityContext"]


def test_jobset_schema_refuses_a_wrong_field(tpu_cluster):
    _, handle = tpu_cluster
    train = next(p for p in handle.pools if p.name == "train")
    body = tpu_objects.multihost_jobset(train, "research", "gpu", "img")
    body["spec"]["replicatedJobs"][0]["replica"] = 1
    with pytest.raises(schemas.ManifestError):
        schemas.validate_manifest(body, "1.34")


def test_components_install_jobset_and_the_example(tpu_cluster):
    _, handle = tpu_cluster
    specs = [p.spec() for p in handle.pools]

    def program():
        stack = TpuJobSet("tpu", {"pools": specs})
        TpuSliceJob("example", {"pool": specs[0], "namespace": "research", "local_queue": "gpu", "tpu_quota": 16},
                    opts=pulumi.ResourceOptions(depends_on=[stack.release]))

    recording = testing.run_program(program, stack="dev")
    release = recording.one("kubernetes:helm.sh/v3:Release").inputs
    assert (release["chart"], release["version"], release["namespace"]) == (
        "oci://registry.k8s.io/jobset/charts/jobset", "0.12.0", "jobset-system")
    namespace = recording.one("kubernetes:core/v1:Namespace").inputs
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    policies = {r.inputs["metadata"]["name"]: r.inputs["spec"]
                for r in recording.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")}
    assert policies["allow-api-server-to-webhook"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": 9443}]}]
    jobset = recording.one("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet").inputs
    image = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == versions.TPU_EXAMPLE_IMAGE.reference
    assert image.startswith("docker.io/library/python:3.12-slim@sha256:")


def test_component_errors(tpu_cluster):
    _, handle = tpu_cluster
    specs = [p.spec() for p in handle.pools]
    nvidia = GpuPool("l4", "gcp", "g2-standard-8", "l4", 1, 24, 0, 2).spec()
    with pytest.raises(ComponentConfigError, match="pools: no TPU pool"):
        TpuJobSet("tpu", {"pools": [nvidia]})
    with pytest.raises(ComponentConfigError, match="tpu_quota: a slice of pool 'train' is 16 chips"):
        TpuSliceJob("x", {"pool": specs[0], "namespace": "research", "local_queue": "gpu", "tpu_quota": 8})


# --- configuration errors -------------------------------------------------------------------------------------

ERRORS = [
    ("time-slicing on TPU", gke(v6e_host(sharing={"mode": "time-slicing", "replicas": 2})),
     "dev: nodePools[0].sharing.mode: Google Cloud TPU accelerators (Google Cloud TPU v6e (Trillium) on "
     "'ct6e-standard-4t') support sharing mode exclusive only, got 'time-slicing'"),
    ("rdma on a TPU shape", gke(v6e_host(rdma=True)),
     "dev: nodePools[0].rdma: 'ct6e-standard-4t' has no RDMA fabric"),
    ("a 2x4 slice on the 8-chip VM's other size", gke(v6e_host(instanceType="ct6e-standard-8t", tpuTopology="4x4")),
     "dev: nodePools[0].tpuTopology: '4x4' is not a TPU topology of ct6e-standard-8t (8 chips per VM); use one of "
     "2x4"),
    ("v6e 2x4 on ct6e-standard-1t", gke(v6e_host(instanceType="ct6e-standard-1t", tpuTopology="2x4")),
     "dev: nodePools[0].tpuTopology: '2x4' is not a TPU topology of ct6e-standard-1t (1 chips per VM); use one of "
     "1x1"),
    ("multi-host slice with the wrong node count", gke(v6e_slice(minNodes=2, maxNodes=2)),
     "dev: nodePools[0].maxNodes: a 4x4 slice of ct6e-standard-4t is 16 chips / 4 per VM = 4 nodes, created "
     "together: set minNodes and maxNodes to 4, got 2-2"),
    ("multi-host slice that scales", gke(v6e_slice(minNodes=0)),
     "dev: nodePools[0].minNodes: a 4x4 slice of ct6e-standard-4t is 16 chips / 4 per VM = 4 nodes"),
    ("multi-host slice across zones", gke(v6e_slice(zones=[ZONE, "us-east5-a"])),
     "dev: nodePools[0].zones: a multi-host TPU slice (4x4 on ct6e-standard-4t) lives in one zone, got 2"),
    ("tpuTopology on a GPU", gke({"name": "l4", "instanceType": "g2-standard-8", "tpuTopology": "2x2"}),
     "dev: nodePools[0].tpuTopology: applies only to TPU machine types, not 'g2-standard-8'"),
    ("a GPU driver on TPU", gke(v6e_host(gpuDriverVersion="LATEST")),
     "dev: nodePools[0].gpuDriverVersion: does not apply to TPU machine type 'ct6e-standard-4t'"),
    ("multi-host Ironwood", gke(v6e_host(instanceType="tpu7x-standard-4t", tpuTopology="2x2x2", minNodes=2,
                                         maxNodes=2)),
     "dev: nodePools[0].tpuTopology: '2x2x2' is not a TPU topology of tpu7x-standard-4t"),
    ("a TPU quota no pool advertises", gke({"name": "l4", "instanceType": "g2-standard-8"},
                                           teams=[{"name": "a", "quotas": {"google.com/tpu": 4}}]),
     "dev: teams[0].quotas.google.com/tpu: no node pool advertises 'google.com/tpu'"),
]


@pytest.mark.parametrize("raw, message", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_config_errors(raw, message):
    error = error_of(raw)
    assert error.startswith(message), error
    assert "\n" not in error


def test_gke_component_refuses_a_mismatched_topology():
    config = parse_config(gke(v6e_slice()), "dev")
    entry = gcp_options.pool_args(config.node_pools[0], config.gpu_pools()[0])
    with pytest.raises(ComponentConfigError, match=r"gpu_pools\[0\]\.pool\.max_nodes: a 8x8 slice of "
                                                   r"ct6e-standard-4t is 16 nodes"):
        gcp.GkeCluster("c", {"region": REGION, "gpu_pools": [{**entry, "tpu_topology": "8x8"}]})
    with pytest.raises(ComponentConfigError, match=r"gpu_pools\[0\]\.accelerator_type: does not apply to TPU"):
        gcp.GkeCluster("c", {"region": REGION, "gpu_pools": [{**entry, "accelerator_type": "tpu-v6e-slice"}]})


# --- the reference stack --------------------------------------------------------------------------------------


def test_reference_stack_has_a_multi_host_v6e_slice_and_tpu_quotas():
    config = yaml.safe_load(STACK.read_text())["config"]
    parsed = parse_config({k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("gpu-platform:")},
                          "gcp-tpu")
    train = next(p for p in parsed.node_pools if p.role == "training")
    assert (train.instance_type, train.cloud_options.tpu_topology, train.min_nodes, train.max_nodes) == (
        "ct6e-standard-4t", "4x4", 4, 4)
    assert [t.quota_of("google.com/tpu") for t in parsed.teams] == [24, 8]
    assert parsed.monitoring.enabled
