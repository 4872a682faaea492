"""Every reference stack (each ``stacks/Pulumi.*.yaml``, found at run time): PriorityClasses, one flavor per
accelerator pool tolerating its vendor's taint, one ClusterQueue + LocalQueue + ResourceQuota per team with the
configured quotas (``gpuQuota`` for ``nvidia.com/gpu`` and ``quotas`` for every other accelerator resource), the
reference training job on the training pool (NGC PyTorch on NVIDIA pools, ROCm PyTorch on AMD pools; none on Neuron
or TPU pools), and every object valid against its schema (Kueue's vendored CRDs included)."""

import functools

import pytest
from conftest import planned_stack

from gpu_platform import catalog, labels, plan, versions
from gpu_platform.autoscaling import autoscaling_plan
from gpu_platform.scheduling import kueue_objects as ko
from gpu_platform.scheduling.priorities import PER_GPU_TIERS, TIERS

STACKS = sorted(plan.discover_stacks())


@functools.cache
def planned(stack: str) -> plan.StackPlan:
    return planned_stack(stack)


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
    vendor_taint_keys = {v.taint.key for v in catalog.VENDORS.values()}
    for pool in pools:
        spec = flavors[pool.name]["spec"]
        assert spec["nodeLabels"][labels.POOL_LABEL] == pool.name
        assert catalog.VENDORS[pool.vendor].taint.toleration() in spec["tolerations"]
        # Another vendor's taint is not on this pool's nodes: tolerating it would only widen where pods may land.
        assert {t["key"] for t in spec["tolerations"]} & vendor_taint_keys == {pool.taint.key}
        assert ("topologyName" in spec) == ko.topology_aware(pool)


@pytest.mark.parametrize("stack", STACKS)
def test_queue_and_quota_per_team(stack):
    config = planned(stack).config
    queues = objects(stack, "ClusterQueue")
    assert set(queues) == ({t.name for t in config.teams} if config.scheduling.kueue else set())
    # Every accelerator resource any pool advertises, in the order of the pools (Kueue's one resource group).
    accelerator_resources = list(dict.fromkeys(r for p in config.gpu_pools() for r in p.resources))
    for team in config.teams:
        hard = objects(stack, "ResourceQuota", team.name)["team-quota"]["spec"]["hard"]
        assert hard["requests.nvidia.com/gpu"] == str(team.gpu_quota)
        for resource, count in team.quotas:
            assert hard[f"requests.{resource}"] == str(count), resource
        assert objects(stack, "Namespace")[team.name]["metadata"]["labels"][labels.TEAM_LABEL] == team.name
        if not config.scheduling.kueue:
            continue
        [group] = queues[team.name]["spec"]["resourceGroups"]
        # Racks' pods claim an IMEX channel each, which Kueue counts as its own resource (after the accelerators).
        channels = ["nvidia.com/imex-channel"] if any(p.dra and p.multi_node_nvlink for p in config.gpu_pools()) else []
        assert group["coveredResources"] == ["cpu", "memory", *accelerator_resources, *channels]
        for resource in accelerator_resources:
            nominal = [{r["name"]: r["nominalQuota"] for r in f["resources"]}[resource] for f in group["flavors"]]
            assert sum(nominal) == team.quota_of(resource), resource
        # No quota the team was given is left out of Kueue.
        given = {r for r, n in [("nvidia.com/gpu", team.gpu_quota), *team.quotas] if n > 0}
        assert given <= set(accelerator_resources)
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
    # PyTorch DDP over NCCL/RCCL: NVIDIA and AMD pools only (Neuron and TPU pools need other programs).
    planned_job = autoscaling_plan.reference_training(config, config.gpu_pools())
    if planned_job is None:
        assert "reference-training" not in jobs
        return
    pool, team = planned_job
    assert pool.vendor in ("nvidia", "amd")
    job = jobs["reference-training"]
    assert job["metadata"]["namespace"] == team.name
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    arch = {labels.ARCH_LABEL: "arm64"} if pool.architecture == "arm64" else {}
    assert spec["template"]["spec"]["nodeSelector"] == {labels.POOL_LABEL: pool.name, **arch}
    [container] = spec["template"]["spec"]["containers"]
    assert container["image"] == {"nvidia": versions.TRAINING_IMAGE, "amd": versions.ROCM_TRAINING_IMAGE}[
        pool.vendor].reference
    limits, requests = container["resources"]["limits"], container["resources"]["requests"]
    if pool.dra:
        # GPUs come from the job's claim template (one claim per pod), never from the device plugin's resource.
        assert not {"nvidia.com/gpu", "amd.com/gpu"} & {*limits, *requests}
        template = objects(stack, "ResourceClaimTemplate", team.name)["reference-training-gpus"]
        [request] = template["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"]["count"] * spec["parallelism"] <= team.quota_of(pool.resource)
        assert {c["name"] for c in container["resources"]["claims"]} == (
            {"gpus", "imex-channel"} if pool.multi_node_nvlink else {"gpus"})
    else:
        assert requests[pool.resource] == limits[pool.resource]
        assert int(limits[pool.resource]) * spec["parallelism"] <= team.quota_of(pool.resource)
        assert not ({"nvidia.com/gpu", "amd.com/gpu"} - {pool.resource}) & {*limits, *requests}
    if pool.rdma_resource:
        assert limits[pool.rdma_resource] == str(pool.rdma_interfaces)
    if config.scheduling.kueue:
        assert spec["suspend"] is True and job["metadata"]["labels"][labels.KUEUE_QUEUE_LABEL] == ko.LOCAL_QUEUE_NAME
    # Checkpoints outlive the stack: the job's own claim, or with a shared file system its team's (issue 23).
    checkpoints = (f"{team.name}-checkpoints" if config.storage.shared_file_system is not None
                   else "reference-training-checkpoints")
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    assert volumes["checkpoints"]["persistentVolumeClaim"]["claimName"] == checkpoints
    claims = [r for r in planned(stack).recording.of_type("kubernetes:core/v1:PersistentVolumeClaim")
              if r.inputs["metadata"]["name"] == checkpoints and r.inputs["metadata"]["namespace"] == team.name]
    assert [c.retain_on_delete for c in claims] == [True]
    assert "reference-retraining" in objects(stack, "CronJob", team.name)


def test_which_stacks_run_the_reference_training_job_and_where():
    """The reference training job's image and device requests per vendor, exactly: NVIDIA stacks pull NGC PyTorch and
    ask for nvidia.com/gpu, the MI300X stacks ROCm PyTorch and amd.com/gpu (a whole 8-GPU node per pod, two pods:
    `training_objects.MAX_NODES`, within the research team's 24), the Neuron and TPU stacks have no such Job."""
    def training_container(stack):
        job = objects(stack, "Job").get("reference-training")
        return None if job is None else (job["spec"]["parallelism"], job["spec"]["template"]["spec"]["containers"][0])

    for stack in ("aws-neuron", "gcp-tpu"):
        assert training_container(stack) is None
    for stack in ("azure-mi300x", "oci-mi300x"):
        pods, container = training_container(stack)
        assert container["image"] == versions.ROCM_TRAINING_IMAGE.reference
        assert container["image"].startswith("docker.io/rocm/pytorch:")
        assert container["resources"]["requests"]["amd.com/gpu"] == "8"
        assert container["resources"]["limits"]["amd.com/gpu"] == "8"
        assert "nvidia.com/gpu" not in container["resources"]["limits"]
        assert pods == 2
    _, container = training_container("aws-dev")
    assert container["image"] == versions.TRAINING_IMAGE.reference
    assert "nvidia.com/gpu" in container["resources"]["limits"]
