"""Pods that need accelerators are what scales an accelerator pool up, from zero where the pool allows it: the
reference inference Deployment and training Job of every stack that plans them ask for their pool's resource
(``nvidia.com/gpu``, ``amd.com/gpu``, ``aws.amazon.com/neuron``, ...) in their limits, select their pool, and
tolerate every taint the pool's nodes carry (the taints each cloud layer and node template declares), so a node
autoscaler simulating the pool's node finds them schedulable there and nowhere else. The TPU example JobSet does the
same on its slice."""

from dataclasses import replace
from pathlib import Path

import pytest

from gpu_platform import catalog
from gpu_platform.accelerators import tpu_objects
from gpu_platform.autoscaling import autoscaling_plan
from gpu_platform.clouds.gcp import options as gcp_options
from gpu_platform.clouds.gcp import pools as gcp_pools
from gpu_platform.config import parse_config, strip_namespace
from gpu_platform.plan import load_stack_file
from gpu_platform.serving import inference_objects
from gpu_platform.serving.workloads import chosen_pool, inference_args, spec_from_args
from gpu_platform.training import training_objects

STACKS = Path(__file__).resolve().parents[1] / "stacks"
REFERENCE_STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))


def config_of(stack):
    return parse_config(strip_namespace(load_stack_file(STACKS / f"Pulumi.{stack}.yaml")), stack)


def planned_inference_pool(config):
    """The pool of the reference inference app, or None where the platform plans none (platform.py's workloads
    layer: inference enabled and a pool to run on)."""
    return chosen_pool(config, config.gpu_pools()) if config.inference.enabled else None


def planned_training(config):
    """(pool, team) of the reference training job, or None where the platform plans none."""
    return autoscaling_plan.reference_training(config, config.gpu_pools())


def tpu_slice_pools(config):
    """Training-role TPU pools as the Kubernetes layer sees them, with the TPU type and topology labels GKE sets on
    their nodes (which the GKE layer adds to the pool, clouds/gcp/cluster.py): the TPU layer's example JobSet runs
    on the first one."""
    return [replace(pool, user_labels=tuple(sorted({
                **dict(pool.user_labels),
                **gcp_pools.tpu_node_labels(gcp_options.tpu_shape(entry), gcp_options.tpu_topology(entry))}.items())))
            for entry, pool in zip(config.node_pools, config.gpu_pools(), strict=True)
            if pool.vendor == catalog.GOOGLE_TPU and pool.role == "training"]


INFERENCE_STACKS = [s for s in REFERENCE_STACKS if planned_inference_pool(config_of(s)) is not None]
TRAINING_STACKS = [s for s in REFERENCE_STACKS if planned_training(config_of(s)) is not None]
TPU_STACKS = [s for s in REFERENCE_STACKS if tpu_slice_pools(config_of(s))]


def tolerates(tolerations, taint):
    """Kubernetes' rule: same key and effect (or no effect), and Exists or an equal value."""
    for t in tolerations:
        if t.get("key") not in (None, taint.key) or t.get("effect") not in (None, "", taint.effect):
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.value:
            return True
    return False


def assert_asks_for_devices_and_tolerates(pod, pool):
    for taint in pool.taints:
        assert tolerates(pod["tolerations"], taint), (pool.name, taint)
    if pool.dra:
        # A DRA pool's GPUs come from the pod's claims; no container asks for an extended resource of any vendor
        # (the rack's nodes advertise none). Its pools have a fixed size: nothing to scale from zero.
        assert pod["resourceClaims"] and pool.min_nodes == pool.max_nodes
        [container] = [c for c in pod["containers"] if c["resources"].get("claims")]
        vendors = {r for v in catalog.VENDORS.values() for r in v.resources}
        assert not vendors & {*container["resources"].get("limits", {}), *container["resources"].get("requests", {})}
        return
    [container] = [c for c in pod["containers"] if pool.resource in c["resources"].get("limits", {})]
    limits, requests = container["resources"]["limits"], container["resources"].get("requests", {})
    devices = int(limits[pool.resource])  # whole devices only
    assert devices >= 1
    if pool.resource in requests:
        assert int(requests[pool.resource]) == devices
    # No other vendor's resource: the pool's nodes advertise none, so the pod would never fit there.
    foreign = {r for v in catalog.VENDORS.values() for r in v.resources} - set(pool.resources)
    assert not foreign & {*limits, *requests}, (pool.name, limits, requests)


def assert_schedulable_only_on(pod, pool):
    arch = {"kubernetes.io/arch": "arm64"} if pool.architecture == "arm64" else {}
    assert pod["nodeSelector"] == {**pool.selector, **arch}
    assert_asks_for_devices_and_tolerates(pod, pool)


def test_stacks_without_a_workload_are_the_ones_that_plan_none():
    """The per-stack checks below cover every stack that plans the workload: gcp-tpu turns inference off (no TPU
    image of the app), aws-neuron turns training off and gcp-tpu's training pool is a TPU slice (its job is the TPU
    example's JobSet); the MultiKueue manager mk-manager turns both off (its jobs run on the workers)."""
    assert sorted(set(REFERENCE_STACKS) - set(INFERENCE_STACKS)) == ["gcp-tpu", "mk-manager"]
    assert sorted(set(REFERENCE_STACKS) - set(TRAINING_STACKS)) == ["aws-neuron", "gcp-tpu", "mk-manager"]
    assert TPU_STACKS == ["gcp-tpu"]


@pytest.mark.parametrize("stack", INFERENCE_STACKS)
def test_inference_pods_ask_for_gpus_and_tolerate_their_pool(stack):
    config = config_of(stack)
    pool = planned_inference_pool(config)
    deployment = inference_objects.deployment(spec_from_args(inference_args(config, pool)))
    assert_schedulable_only_on(deployment["spec"]["template"]["spec"], pool)


@pytest.mark.parametrize("stack", TRAINING_STACKS)
def test_training_pods_ask_for_gpus_and_tolerate_their_pool(stack):
    config = config_of(stack)
    pool, team = planned_training(config)
    nodes, gpus_per_pod = training_objects.size(pool, team.quota_of(pool.resource))
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


def test_tpu_slice_pods_ask_for_chips_and_tolerate_their_pool():
    """GKE places TPU pods by the TPU type and topology labels its TPU nodes carry (not the pool label): gcp-tpu's
    JobSet pods select the 4x4 v6e slice, ask for each VM's four chips and tolerate the TPU taint."""
    pool = tpu_slice_pools(config_of("gcp-tpu"))[0]
    body = tpu_objects.multihost_jobset(pool, "research", "q", "x")
    pod = body["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                   "cloud.google.com/gke-tpu-topology": "4x4"}
    assert pod["nodeSelector"].items() <= pool.labels.items()
    assert_asks_for_devices_and_tolerates(pod, pool)
    assert pod["containers"][0]["resources"]["limits"] == {"google.com/tpu": 4}


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
