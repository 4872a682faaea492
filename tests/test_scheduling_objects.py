"""Pure scheduling decisions: priority classes, Kueue flavors, queues, quota splits and the controller config."""

from pathlib import Path

import pytest
import yaml
from chart_keys import load_keys, unknown_keys

from gpu_platform import labels, versions
from gpu_platform.config import TeamConfig
from gpu_platform.labels import AKS_SPOT_TAINT, Taint
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.scheduling import kueue_objects as ko
from gpu_platform.scheduling import priority_objects as po
from gpu_platform.scheduling import quota_split
from gpu_platform.scheduling.priorities import HIGH, LOW, MEDIUM
from gpu_platform.schemas import validate_manifest

DATA = Path(__file__).parent / "data"


EXCLUSIVE = Sharing()


def pool(name="train", gpu="h100", gpus=8, min_nodes=0, max_nodes=4, sharing=EXCLUSIVE, fabric=None, cloud="aws",
         taints=(), extra=(), instance_type="x"):
    return GpuPool(name, cloud, instance_type, gpu, gpus, 80, min_nodes, max_nodes, sharing=sharing, rdma_fabric=fabric,
                   rdma_interfaces=8 if fabric else 0, user_taints=taints, extra_taints=extra)


def team(name="research", gpus=24, cpu=None, mem=None, borrow=None, lend=None):
    return TeamConfig(name, gpus, cpu if cpu is not None else max(4, 8 * gpus),
                      mem if mem is not None else max(16, 64 * gpus), name, borrow, lend)


# --- priority classes -----------------------------------------------------------------------------------


def test_tiers_become_priority_classes_without_a_global_default():
    bodies = {s.name: po.priority_class(s, None) for s in po.class_specs([pool()], per_gpu=False)}
    assert {n: (b["value"], b["preemptionPolicy"]) for n, b in bodies.items()} == {
        "inference-critical": (100000, "PreemptLowerPriority"),
        "high-priority": (10000, "PreemptLowerPriority"),
        "medium-priority": (1000, "PreemptLowerPriority"),
        "low-priority": (100, "Never"),
    }
    assert not any(b["globalDefault"] for b in bodies.values())


def test_configured_default_tier_is_the_only_global_default():
    specs = po.class_specs([pool(), pool("infer", gpu="l4")], per_gpu=True)
    defaults = [s.name for s in specs if po.priority_class(s, "medium-priority")["globalDefault"]]
    assert defaults == ["medium-priority"]


def test_per_gpu_classes_follow_the_pattern_for_each_model():
    specs = po.class_specs([pool(), pool("infer", gpu="l4"), pool("more", gpu="h100")], per_gpu=True)
    per_gpu = {s.name: (s.tier, s.gpu_model) for s in specs if s.gpu_model}
    assert per_gpu == {
        "high-priority-h100": (HIGH, "h100"), "high-priority-l4": (HIGH, "l4"),
        "medium-priority-h100": (MEDIUM, "h100"), "medium-priority-l4": (MEDIUM, "l4"),
    }
    body = po.priority_class(next(s for s in specs if s.name == "high-priority-l4"), None)
    assert body["value"] == HIGH.value and body["description"].endswith("On NVIDIA L4 GPUs.")


def test_workload_priority_classes_match_names_and_values():
    specs = po.class_specs([pool()], per_gpu=True)
    for spec in specs:
        wpc = po.workload_priority_class(spec)
        pc = po.priority_class(spec, None)
        assert (wpc["metadata"]["name"], wpc["value"]) == (pc["metadata"]["name"], pc["value"])
        assert wpc["apiVersion"] == "kueue.x-k8s.io/v1beta2" and "spec" not in wpc
        validate_manifest(wpc, "1.34")


def test_workload_class_name_uses_per_gpu_class_only_where_one_exists():
    assert po.workload_class_name(HIGH, pool(), per_gpu=True) == "high-priority-h100"
    assert po.workload_class_name(HIGH, pool(), per_gpu=False) == "high-priority"
    assert po.workload_class_name(LOW, pool(), per_gpu=True) == "low-priority"


# --- capacity, flavors and topology ---------------------------------------------------------------------


@pytest.mark.parametrize("gpu_pool, capacity", [
    (pool(gpus=8, max_nodes=4), 32),
    (pool(gpu="l4", gpus=1, max_nodes=3, sharing=Sharing("time-slicing", 4)), 12),
    (pool(gpu="a100-80gb", gpus=4, max_nodes=2, sharing=Sharing("mig", 1, "3g.40gb")), 16),
    (pool(gpus=8, max_nodes=1, sharing=Sharing("mig", 1, "1g.10gb")), 56),
])
def test_gpu_capacity_counts_advertised_nvidia_gpus(gpu_pool, capacity):
    assert ko.gpu_capacity(gpu_pool) == capacity


def test_only_fixed_size_rdma_pools_are_topology_aware():
    assert ko.topology_aware(pool(fabric="infiniband", min_nodes=4, max_nodes=4))
    assert not ko.topology_aware(pool(fabric="efa", min_nodes=0, max_nodes=4))  # scales from zero: TAS sees nothing
    assert not ko.topology_aware(pool(min_nodes=2, max_nodes=2))


def test_flavor_selects_the_pool_and_tolerates_every_taint():
    spot = pool("spot", cloud="azure", taints=(Taint("dedicated", "ml", "NoExecute"),), extra=(AKS_SPOT_TAINT,))
    flavor = ko.resource_flavor(ko.flavor_plans([spot])[0])
    assert flavor["metadata"]["name"] == "spot"
    assert flavor["spec"] == {
        "nodeLabels": {labels.POOL_LABEL: "spot", labels.ACCELERATOR_LABEL: "h100"},
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"},
            {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
             "effect": "NoSchedule"},
        ],
    }
    validate_manifest(flavor, "1.34")


def test_topology_aware_flavor_names_the_topology():
    plan = ko.flavor_plans([pool(fabric="infiniband", min_nodes=4, max_nodes=4, cloud="azure")])[0]
    flavor = ko.resource_flavor(plan)
    assert flavor["spec"]["topologyName"] == ko.TOPOLOGY_NAME
    validate_manifest(flavor, "1.34")


@pytest.mark.parametrize("cloud, instance_type, levels", [
    # Shapes without fabric labels keep zone and host (issue 22: fabric levels per shape in test_capacity_scheduling).
    ("aws", "g5.48xlarge", ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
    ("azure", "Standard_ND96isr_H100_v5", ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]),
    ("existing", "unknown", ["kubernetes.io/hostname"]),
])
def test_topology_levels_end_with_the_hostname(cloud, instance_type, levels):
    body = ko.topology(pool(fabric="infiniband", min_nodes=2, max_nodes=2, cloud=cloud, instance_type=instance_type))
    assert [level["nodeLabel"] for level in body["spec"]["levels"]] == levels
    assert body["metadata"]["name"] == ko.TOPOLOGY_NAME
    validate_manifest(body, "1.34")


def test_preferred_topology_level_is_the_coarsest_level_of_tas_pools_only():
    assert ko.default_topology_level(pool(fabric="efa", min_nodes=2, max_nodes=2)) == labels.ZONE_LABEL
    assert ko.default_topology_level(pool(fabric="efa", min_nodes=0, max_nodes=2)) is None


def test_cpu_flavor_injects_nothing_and_cannot_collide_with_a_pool():
    assert ko.cpu_flavor()["spec"] == {}
    assert "." in ko.CPU_FLAVOR  # pool names are DNS labels, without dots


# --- quota split ----------------------------------------------------------------------------------------


def test_apportion_adds_up_with_largest_remainders():
    assert quota_split.apportion(8, [16, 32]) == [3, 5]
    assert quota_split.apportion(10, [1, 1, 1]) == [4, 3, 3]
    assert quota_split.apportion(5, [0, 0]) == [3, 2]
    assert quota_split.apportion(0, [4, 4]) == [0, 0]


def test_gpu_quota_is_split_by_remaining_capacity():
    # The existing stack: a100 MIG pool 16, h100 pool 32; research 24, product 8.
    assert quota_split.split_gpu_quotas([24, 8], [16, 32]) == [[8, 16], [3, 5]]


def test_overcommitted_quota_still_adds_up_per_team():
    rows = quota_split.split_gpu_quotas([10, 10], [8, 4])
    assert [sum(r) for r in rows] == [10, 10]
    assert rows[0] == [7, 3]  # fits: 10 of 12, by capacity
    assert rows[1] == [1 + 5, 1 + 3]  # the last 2 GPUs, then 8 beyond capacity spread by pool size


def test_cpu_and_memory_follow_the_gpus_with_a_quarter_for_cpu_only_work():
    assert quota_split.split_with_gpus(192, [8, 16]) == (48, [48, 96])
    assert quota_split.split_with_gpus(16, [0, 0]) == (16, [0, 0])


def test_lending_limit_never_exceeds_a_flavors_quota():
    assert quota_split.split_lending_limit(5, [8, 16]) == [2, 3]
    with pytest.raises(ValueError):
        quota_split.split_lending_limit(25, [8, 16])


# --- queues ---------------------------------------------------------------------------------------------


def existing_plans():
    return ko.flavor_plans([
        pool("a100-infer", gpu="a100-80gb", gpus=4, min_nodes=2, max_nodes=2, sharing=Sharing("mig", 1, "3g.40gb"),
             cloud="existing"),
        pool("h100-train", min_nodes=4, max_nodes=4, fabric="infiniband", cloud="existing"),
    ])


def test_cluster_queue_of_a_team():
    plans = existing_plans()
    quotas = ko.team_quotas([team("research", 24, borrow=8, lend=6), team("product", 8)], plans)
    cq = ko.cluster_queue(quotas[0], plans)
    assert cq["metadata"]["name"] == "research"
    spec = cq["spec"]
    assert spec["cohortName"] == ko.COHORT_NAME
    assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "research"}}
    assert spec["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    [group] = spec["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert group["flavors"] == [
        {"name": "cpu.default", "resources": [
            {"name": "cpu", "nominalQuota": 48}, {"name": "memory", "nominalQuota": "384Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": 0}]},
        {"name": "a100-infer", "resources": [
            {"name": "cpu", "nominalQuota": 48}, {"name": "memory", "nominalQuota": "384Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 8, "lendingLimit": 2}]},
        {"name": "h100-train", "resources": [
            {"name": "cpu", "nominalQuota": 96}, {"name": "memory", "nominalQuota": "768Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 8, "lendingLimit": 4}]},
    ]
    validate_manifest(cq, "1.34")
    product = ko.cluster_queue(quotas[1], plans)
    gpu = [f["resources"][2] for f in product["spec"]["resourceGroups"][0]["flavors"]]
    assert gpu == [{"name": "nvidia.com/gpu", "nominalQuota": n} for n in (0, 3, 5)]


def test_local_queue_feeds_the_teams_cluster_queue():
    lq = ko.local_queue("research", "research")
    assert (lq["metadata"]["name"], lq["metadata"]["namespace"], lq["spec"]) == (
        "gpu", "research", {"clusterQueue": "research"})
    validate_manifest(lq, "1.34")
    validate_manifest(ko.cohort(), "1.34")


# --- controller configuration and chart values ----------------------------------------------------------


def key_list(name: str) -> dict[str, str]:
    return load_keys(DATA / name)


def unknown(values: dict, keys: dict[str, str]) -> list[str]:
    return unknown_keys(values, keys)


def test_chart_values_exist_in_the_pinned_chart():
    assert versions.KUEUE.name == "oci://registry.k8s.io/kueue/charts/kueue"
    assert unknown(ko.helm_values(True), key_list(f"chart_keys/kueue-{versions.KUEUE.version}.keys")) == []


def test_controller_configuration_fields_exist_in_the_pinned_api():
    config = ko.controller_configuration()
    assert unknown(config, key_list(f"kueue-configuration-v{versions.KUEUE.version}.keys")) == []
    assert yaml.safe_load(ko.helm_values(False)["managerConfig"]["controllerManagerConfigYaml"]) == config


def test_controller_configuration_policy():
    config = ko.controller_configuration()
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["waitForPodsReady"]["timeout"] == "15m"
    assert config["fairSharing"] == {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}
    assert {"batch/job", "jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "pod", "deployment"} <= set(
        config["integrations"]["frameworks"])
    assert config["manageJobsWithoutQueueName"] is False
    # Team namespaces only: kube-system and kueue-system carry no team label, so Kueue validation passes.
    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [{"key": "gpu-platform.io/team", "operator": "Exists"}]}
    excluded = config["resources"]["excludeResourcePrefixes"]
    for resource in ("vpc.amazonaws.com/efa", "rdma/ib", "rdma/roce", "networking.gke.io.networks/rdma-0"):
        assert any(resource.startswith(prefix) for prefix in excluded), resource
    assert not any("nvidia.com/gpu".startswith(prefix) for prefix in excluded)
