"""Every reference stack (each ``stacks/Pulumi.*.yaml``, found at run time): PriorityClasses, one flavor per GPU
pool, one ClusterQueue + LocalQueue + ResourceQuota per team with the configured GPU quota, the reference training
job on the training pool, and every object valid against its schema (Kueue's vendored CRDs included)."""

import functools

import pytest

from gpu_platform import labels, plan
from gpu_platform.kube import kueue_objects as ko
from gpu_platform.pools import training_pool
from gpu_platform.priorities import PER_GPU_TIERS, TIERS

STACKS = sorted(plan.discover_stacks())


@functools.cache
def planned(stack: str) -> plan.StackPlan:
    return plan.plan_stack(stack, plan.discover_stacks()[stack])


def objects(stack: str, kind: str, namespace=None) -> dict[str, dict]:
    return {m["metadata"]["name"]: m for m in planned(stack).manifests
            if m["kind"] == kind and (namespace is None or m["metadata"].get("namespace") == namespace)}


@pytest.mark.parametrize("stack", STACKS)
def test_manifests_are_valid(stack):
    assert planned(stack).errors == []


@pytest.mark.parametrize("stack", STACKS)
def test_priority_classes(stack):
    config = planned(stack).config
    classes = objects(stack, "PriorityClass")
    expected = {t.name for t in TIERS}
    if config.scheduling.per_gpu_priority_classes:
        expected |= {f"{t.name}-{p.gpu_model}" for t in PER_GPU_TIERS for p in config.gpu_pools()}
    assert expected <= set(classes)
    defaults = [n for n, c in classes.items() if c.get("globalDefault")]
    assert defaults == ([config.scheduling.default_priority_class] if config.scheduling.default_priority_class else [])
    assert classes["low-priority"]["preemptionPolicy"] == "Never"
    if config.scheduling.kueue:
        assert expected <= set(objects(stack, "WorkloadPriorityClass"))


@pytest.mark.parametrize("stack", STACKS)
def test_one_flavor_per_gpu_pool(stack):
    config = planned(stack).config
    flavors = objects(stack, "ResourceFlavor")
    if not config.scheduling.kueue:
        assert flavors == {}
        return
    pools = planned(stack).config.gpu_pools()
    assert set(flavors) == {ko.CPU_FLAVOR} | {p.name for p in pools}
    for pool in pools:
        spec = flavors[pool.name]["spec"]
        assert spec["nodeLabels"][labels.POOL_LABEL] == pool.name
        assert labels.GPU_TAINT.toleration() in spec["tolerations"]
        assert ("topologyName" in spec) == ko.topology_aware(pool)


@pytest.mark.parametrize("stack", STACKS)
def test_queue_and_quota_per_team(stack):
    config = planned(stack).config
    queues = objects(stack, "ClusterQueue")
    assert set(queues) == ({t.name for t in config.teams} if config.scheduling.kueue else set())
    for team in config.teams:
        quota = objects(stack, "ResourceQuota", team.name)["team-quota"]
        assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == str(team.gpu_quota)
        assert objects(stack, "Namespace")[team.name]["metadata"]["labels"][labels.TEAM_LABEL] == team.name
        if not config.scheduling.kueue:
            continue
        flavors = queues[team.name]["spec"]["resourceGroups"][0]["flavors"]
        assert sum(f["resources"][2]["nominalQuota"] for f in flavors) == team.gpu_quota
        assert queues[team.name]["spec"]["cohortName"] == ko.COHORT_NAME
        local = objects(stack, "LocalQueue", team.name)[ko.LOCAL_QUEUE_NAME]
        assert local["spec"] == {"clusterQueue": team.name}


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_release_is_pinned(stack):
    config = planned(stack).config
    releases = [r for r in planned(stack).recording.of_type("kubernetes:helm.sh/v3:Release")
                if r.inputs.get("name") == ko.RELEASE_NAME]
    if not config.scheduling.kueue:
        assert releases == []
        return
    [release] = releases
    assert (release.inputs["chart"], release.inputs["version"]) == ("oci://registry.k8s.io/kueue/charts/kueue",
                                                                   "0.19.2")
    for reg in planned(stack).recording:
        if reg.type.startswith("kubernetes:kueue.x-k8s.io/"):
            assert release.urn in reg.dependencies or reg.type.endswith(":LocalQueue"), reg.name


@pytest.mark.parametrize("stack", STACKS)
def test_reference_training_job(stack):
    config = planned(stack).config
    jobs = objects(stack, "Job")
    team = config.teams[0] if config.teams else None
    if not (config.training.enabled and team and team.gpu_quota):
        assert "reference-training" not in jobs
        return
    job = jobs["reference-training"]
    pool = training_pool(config.gpu_pools())
    assert job["metadata"]["namespace"] == team.name
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    assert spec["template"]["spec"]["nodeSelector"] == {labels.POOL_LABEL: pool.name}
    limits = spec["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert int(limits["nvidia.com/gpu"]) * spec["parallelism"] <= team.gpu_quota
    if pool.rdma_resource:
        assert limits[pool.rdma_resource] == str(pool.rdma_interfaces)
    if config.scheduling.kueue:
        assert spec["suspend"] is True and job["metadata"]["labels"][labels.KUEUE_QUEUE_LABEL] == ko.LOCAL_QUEUE_NAME
    claims = [r for r in planned(stack).recording.of_type("kubernetes:core/v1:PersistentVolumeClaim")
              if r.inputs["metadata"]["name"] == "reference-training-checkpoints"]
    assert [c.retain_on_delete for c in claims] == [True]
    assert "reference-retraining" in objects(stack, "CronJob", team.name)
