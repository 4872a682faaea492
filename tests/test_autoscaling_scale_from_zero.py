"""Pods that need GPUs are what scales a GPU pool up, from zero where the pool allows it: the reference inference
Deployment and training Job of every stack ask for ``nvidia.com/gpu`` in their limits, select their pool, and
tolerate every taint the pool's nodes carry (the taints each cloud layer and node template declares), so a node
autoscaler simulating the pool's node finds them schedulable there and nowhere else."""

from pathlib import Path

import pytest

from gpu_platform.config import parse_config, strip_namespace
from gpu_platform.kube import inference_objects, training_objects
from gpu_platform.kube.workloads import chosen_pool, inference_args, spec_from_args
from gpu_platform.plan import load_stack_file
from gpu_platform.pools import training_pool

STACKS = Path(__file__).resolve().parents[1] / "stacks"
REFERENCE_STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))


def config_of(stack):
    return parse_config(strip_namespace(load_stack_file(STACKS / f"Pulumi.{stack}.yaml")), stack)


def tolerates(tolerations, taint):
    """Kubernetes' rule: same key and effect (or no effect), and Exists or an equal value."""
    for t in tolerations:
        if t.get("key") not in (None, taint.key) or t.get("effect") not in (None, "", taint.effect):
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.value:
            return True
    return False


def assert_schedulable_only_on(pod, pool):
    assert pod["nodeSelector"] == pool.selector
    for taint in pool.taints:
        assert tolerates(pod["tolerations"], taint), (pool.name, taint)
    [container] = [c for c in pod["containers"] if "nvidia.com/gpu" in c["resources"].get("limits", {})]
    limits, requests = container["resources"]["limits"], container["resources"].get("requests", {})
    gpus = int(limits["nvidia.com/gpu"])  # whole GPUs only
    assert gpus >= 1
    if "nvidia.com/gpu" in requests:
        assert int(requests["nvidia.com/gpu"]) == gpus


@pytest.mark.parametrize("stack", REFERENCE_STACKS)
def test_inference_pods_ask_for_gpus_and_tolerate_their_pool(stack):
    config = config_of(stack)
    pool = chosen_pool(config, config.gpu_pools())
    deployment = inference_objects.deployment(spec_from_args(inference_args(config, pool)))
    assert_schedulable_only_on(deployment["spec"]["template"]["spec"], pool)


@pytest.mark.parametrize("stack", REFERENCE_STACKS)
def test_training_pods_ask_for_gpus_and_tolerate_their_pool(stack):
    config = config_of(stack)
    pool = training_pool(config.gpu_pools())
    team = config.teams[0]
    nodes, gpus_per_pod = training_objects.size(pool, team.gpu_quota)
    plan = training_objects.TrainingPlan(
        namespace=team.name, pool=pool, nodes=nodes, gpus_per_pod=gpus_per_pod, image="x", local_queue="q",
        topology_level=None, job_priority_class="medium-priority", retrain_priority_class="high-priority",
        schedule="0 3 * * 0", checkpoint_size="100Gi", checkpoint_storage_class=None)
    for body in (training_objects.job(plan)["spec"]["template"],
                 training_objects.cron_job(plan)["spec"]["jobTemplate"]["spec"]["template"]):
        assert_schedulable_only_on(body["spec"], pool)
        limits = body["spec"]["containers"][0]["resources"]["limits"]
        if pool.rdma_resource:
            assert int(limits[pool.rdma_resource]) >= 1  # EFA/RDMA NICs are node-template resources too


@pytest.mark.parametrize("stack", ["aws-dev", "aws-karpenter", "azure-dev", "gcp-dev"])
def test_reference_stacks_have_a_gpu_pool_that_scales_from_zero(stack):
    """Every cloud that can keep an idle GPU pool at zero nodes does so in its reference stack (OKE's stack keeps
    its RDMA nodes up; the add-on accepts a 0 minimum, see test_autoscaling_clouds)."""
    assert any(p.min_nodes == 0 and p.max_nodes >= 1 for p in config_of(stack).gpu_pools())


def test_tolerance_rule_itself():
    from gpu_platform.labels import GPU_TAINT, Taint

    assert tolerates([GPU_TAINT.toleration()], GPU_TAINT)
    assert tolerates([{"key": "nvidia.com/gpu", "operator": "Exists"}], GPU_TAINT)
    assert not tolerates([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
                         GPU_TAINT)
    assert not tolerates([GPU_TAINT.toleration()], Taint("dedicated", "ml"))
