"""`SchedulingPolicy` under the mock engine: what the provider receives, in which order."""

import yaml

from gpu_platform.plan import render_manifests
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.scheduling import kueue_objects as ko
from gpu_platform.scheduling.policy import SchedulingPolicy
from gpu_platform.schemas import validate_manifest
from gpu_platform.testing import run_program

RELEASE = "kubernetes:helm.sh/v3:Release"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"


def pools():
    return [
        GpuPool("l4-infer", "gcp", "g2-standard-8", "l4", 1, 24, 0, 4, sharing=Sharing("time-slicing", 4)).spec(),
        GpuPool("h100-train", "gcp", "a3-highgpu-8g", "h100", 8, 80, 2, 2, rdma_fabric="gpudirect-tcpx",
                rdma_interfaces=4).spec(),
    ]


TEAMS = [{"name": "research", "gpu_quota": 12, "borrowing_limit": 4}, {"name": "product", "gpu_quota": 4}]


def build(**extra):
    return run_program(lambda: SchedulingPolicy("sched", {"pools": pools(), "teams": TEAMS, **extra}))


def test_kueue_release_is_pinned_and_awaited():
    rec = build()
    release = rec.one(RELEASE)
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["name"], inputs["namespace"]) == (
        "oci://registry.k8s.io/kueue/charts/kueue", "0.19.2", "kueue", "kueue-system")
    assert inputs.get("skipAwait") in (None, False)  # the provider waits for the webhook to be ready
    assert inputs["createNamespace"] is False  # the platform creates kueue-system itself, with Pod Security labels
    config = yaml.safe_load(inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config == ko.controller_configuration()
    assert inputs["values"]["enablePrometheus"] is False


def test_every_kueue_object_waits_for_the_release():
    rec = build()
    release = rec.one(RELEASE)
    kueue_objects = [r for r in rec if r.type.startswith(KUEUE)]
    assert sorted({r.type.rsplit(":", 1)[1] for r in kueue_objects}) == [
        "ClusterQueue", "Cohort", "ResourceFlavor", "Topology", "WorkloadPriorityClass"]
    for obj in kueue_objects:
        assert release.urn in obj.dependencies, obj.name
    cohort = rec.one(KUEUE + "Cohort")
    flavors = rec.of_type(KUEUE + "ResourceFlavor")
    topology = rec.one(KUEUE + "Topology")
    for cq in rec.of_type(KUEUE + "ClusterQueue"):
        assert cohort.urn in cq.dependencies and all(f.urn in cq.dependencies for f in flavors)
    assert topology.urn in rec.one(KUEUE + "ResourceFlavor", "sched-flavor-h100-train").dependencies


def test_one_flavor_per_pool_and_a_queue_per_team():
    rec = build()
    flavors = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.of_type(KUEUE + "ResourceFlavor")}
    assert set(flavors) == {"cpu.default", "l4-infer", "h100-train"}
    # An a3-highgpu-8g pool: its nodes carry GKE's gce-topology labels, so its Topology lists them (issue 22).
    assert flavors["h100-train"]["topologyName"] == "gpu-network-gcp"
    assert "topologyName" not in flavors["l4-infer"]
    queues = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.of_type(KUEUE + "ClusterQueue")}
    assert set(queues) == {"research", "product"}
    gpus = {name: [f["resources"][2]["nominalQuota"] for f in spec["resourceGroups"][0]["flavors"]]
            for name, spec in queues.items()}
    # capacities: l4 time-sliced 1 x 4 x 4 nodes = 16, h100 8 x 2 = 16
    assert gpus == {"research": [0, 6, 6], "product": [0, 2, 2]}
    research_h100 = queues["research"]["resourceGroups"][0]["flavors"][2]["resources"][2]
    assert research_h100 == {"name": "nvidia.com/gpu", "nominalQuota": 6, "borrowingLimit": 4}


def test_priority_classes_and_children_are_parented():
    rec = build(per_gpu_priority_classes=True, default_priority_class="low-priority")
    component = rec.one("gpuplatform:index:SchedulingPolicy")
    classes = {r.inputs["metadata"]["name"]: r.inputs
               for r in rec.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")}
    assert set(classes) == {"inference-critical", "high-priority", "medium-priority", "low-priority",
                            "high-priority-h100", "high-priority-l4", "medium-priority-h100", "medium-priority-l4"}
    assert [n for n, c in classes.items() if c["globalDefault"]] == ["low-priority"]
    assert classes["low-priority"]["preemptionPolicy"] == "Never"
    wpcs = {r.inputs["metadata"]["name"]: r.inputs["value"] for r in rec.of_type(KUEUE + "WorkloadPriorityClass")}
    assert wpcs == {n: c["value"] for n, c in classes.items()}
    assert all(r.parent == component.urn for r in rec if r.custom)


def test_manifests_validate_against_the_vendored_crds():
    for obj in render_manifests(build()):
        validate_manifest(obj, "1.34")


def test_without_kueue_only_priority_classes():
    rec = build(kueue=False)
    assert rec.of_type(RELEASE) == []
    assert [r for r in rec if r.type.startswith(KUEUE)] == []
    assert len(rec.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")) == 4


def test_prometheus_service_monitor_only_when_asked():
    assert build(enable_prometheus=True).one(RELEASE).inputs["values"]["enablePrometheus"] is True
