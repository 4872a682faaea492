"""Workload autoscaling: the VPA chart and objects, the VPA/HPA conflict rule (pure, component, configuration),
and the ``autoscaling`` configuration keys."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_nvidia_chart_keys import chart_keys, unknown_keys

from gpu_platform import versions
from gpu_platform.autoscaling import vpa_objects
from gpu_platform.autoscaling.autoscaler_conflicts import (
    AutoscalerConflict,
    autoscaler_conflicts,
    check_autoscaler_conflicts,
    horizontal_resources,
    vpa_resources,
)
from gpu_platform.autoscaling.autoscaling_plan import planned_horizontal_autoscalers, planned_vpa_targets
from gpu_platform.autoscaling.workload_autoscaling import WorkloadAutoscaling
from gpu_platform.config import parse_config, strip_namespace
from gpu_platform.errors import ConfigError
from gpu_platform.plan import load_stack_file
from gpu_platform.schemas import validate_manifest
from gpu_platform.serving import inference_objects
from gpu_platform.testing import run_program

STACKS = Path(__file__).resolve().parents[1] / "stacks"
VPA_KIND = "kubernetes:autoscaling.k8s.io/v1:VerticalPodAutoscaler"
JOB = vpa_objects.VpaTarget("research", "Job", "reference-training", "batch/v1")
DEPLOYMENT = vpa_objects.VpaTarget("inference", "Deployment", "sentiment", "apps/v1")


def raw(stack="aws-dev", **keys):
    return {**strip_namespace(load_stack_file(STACKS / f"Pulumi.{stack}.yaml")), **keys}


def hpa(metrics, name="sentiment", namespace="inference", kind="Deployment"):
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": name},
                     "minReplicas": 1, "maxReplicas": 4, "metrics": metrics}}


def resource_metric(name):
    return {"type": "Resource", "resource": {"name": name, "target": {"type": "Utilization", "averageUtilization": 70}}}


QUEUE_METRIC = {"type": "External", "external": {"metric": {"name": "queue"},
                                                 "target": {"type": "AverageValue", "averageValue": "8"}}}


# ---------------------------------------------------------------------------------------------------------
# VPA objects and chart


def test_training_vpa_exact_body_and_schema():
    body = vpa_objects.vertical_pod_autoscaler(JOB, "Off", ("cpu", "memory"))
    assert body == {
        "apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "reference-training", "namespace": "research",
                     "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {
            "targetRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "reference-training"},
            "updatePolicy": {"updateMode": "Off"},
            "resourcePolicy": {"containerPolicies": [{"containerName": "*", "controlledResources": ["cpu", "memory"],
                                                      "controlledValues": "RequestsAndLimits"}]},
        },
    }
    validate_manifest(body, "1.34")
    validate_manifest(vpa_objects.vertical_pod_autoscaler(JOB, "Initial", ("memory",)), "1.34")


@pytest.mark.parametrize(("mode", "resources"), [("Auto", ("cpu",)), ("Recreate", ("cpu",)), ("Off", ()),
                                                 ("Off", ("nvidia.com/gpu",))])
def test_vpas_never_evict_and_never_touch_gpus(mode, resources):
    with pytest.raises(ValueError, match="VPA"):
        vpa_objects.vertical_pod_autoscaler(JOB, mode, resources)


@pytest.mark.parametrize(("mode", "metrics_server", "admission"), [("Off", True, False), ("Initial", False, True)])
def test_chart_values_run_what_the_mode_needs(mode, metrics_server, admission):
    values = vpa_objects.chart_values(mode, metrics_server)
    assert values == {"recommender": {"enabled": True}, "updater": {"enabled": False},
                      "admissionController": {"enabled": admission}, "metrics-server": {"enabled": metrics_server}}
    assert unknown_keys(values, chart_keys(versions.VPA)) == []


def test_vendored_vpa_schema_and_key_list_name_the_pinned_chart():
    root = Path(__file__).resolve().parents[1] / "components" / "gpu_platform" / "crd_schemas"
    source = json.loads((root / "autoscaling.k8s.io/v1/VerticalPodAutoscaler.json").read_text())["source"]
    assert source.startswith("FairwindsOps/charts@5f478fcec32f69a0818a7f78f4be5cbe7a1719c4:stable/vpa/crds/")
    text = (Path(__file__).parent / "data" / "chart_keys" / "vpa-5.0.0.keys").read_text()
    assert "# source: FairwindsOps/charts@5f478fcec32f69a0818a7f78f4be5cbe7a1719c4:stable/vpa/values.yaml" in text


# ---------------------------------------------------------------------------------------------------------
# The conflict rule


def test_vpa_on_the_cpu_an_hpa_scales_on_is_rejected():
    vpa = vpa_objects.vertical_pod_autoscaler(DEPLOYMENT, "Initial", ("cpu", "memory"))
    with pytest.raises(AutoscalerConflict) as err:
        check_autoscaler_conflicts([hpa([resource_metric("cpu")])], [vpa])
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("VerticalPodAutoscaler inference/sentiment and HorizontalPodAutoscaler "
                              "inference/sentiment both act on cpu of Deployment inference/sentiment")


def test_what_does_not_conflict():
    cpu_hpa = hpa([resource_metric("cpu")])
    # A different resource, a recommendation-only VPA, another workload, metrics that are not pod resources.
    assert autoscaler_conflicts([cpu_hpa], [vpa_objects.vertical_pod_autoscaler(DEPLOYMENT, "Initial", ("memory",))]) \
        == []
    assert autoscaler_conflicts([cpu_hpa], [vpa_objects.vertical_pod_autoscaler(DEPLOYMENT, "Off", ("cpu",))]) == []
    assert autoscaler_conflicts([cpu_hpa], [vpa_objects.vertical_pod_autoscaler(JOB, "Initial", ("cpu",))]) == []
    assert autoscaler_conflicts([hpa([QUEUE_METRIC])],
                                [vpa_objects.vertical_pod_autoscaler(DEPLOYMENT, "Initial", ("cpu", "memory"))]) == []


def test_keda_cpu_trigger_and_container_resource_metrics_count():
    spec = inference_objects.InferenceSpec(pool=_pool(), prometheus_url="http://prometheus:9090")
    scaled = inference_objects.scaled_object(spec)
    assert horizontal_resources(scaled) == (("inference", "Deployment", "sentiment"), {"cpu"})
    container = hpa([{"type": "ContainerResource", "containerResource": {
        "name": "memory", "container": "app", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    assert horizontal_resources(container)[1] == {"memory"}
    vpa = vpa_objects.vertical_pod_autoscaler(DEPLOYMENT, "Initial", ("memory",))
    assert len(autoscaler_conflicts([scaled, container], [vpa])) == 1


def test_vpa_defaults_follow_the_crd():
    bare = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
            "metadata": {"name": "x", "namespace": "ns"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}}}
    # No updateMode: Recreate; no controlledResources: cpu and memory.
    assert vpa_resources(bare) == (("ns", "Deployment", "x"), {"cpu", "memory"})
    bare["spec"]["resourcePolicy"] = {"containerPolicies": [{"containerName": "*", "mode": "Off"}]}
    assert vpa_resources(bare)[1] == set()
    with pytest.raises(ValueError, match="not a VerticalPodAutoscaler"):
        vpa_resources(hpa([]))
    with pytest.raises(ValueError, match="not a HorizontalPodAutoscaler or a KEDA ScaledObject"):
        horizontal_resources(bare)


@given(st.sets(st.sampled_from(["cpu", "memory"])), st.sets(st.sampled_from(["cpu", "memory"]), min_size=1),
       st.sampled_from(["Off", "Initial"]))
def test_a_conflict_is_exactly_a_shared_resource_in_an_acting_mode(scaled_on, controlled, mode):
    metrics = [resource_metric(r) for r in sorted(scaled_on)] + [QUEUE_METRIC]
    vpa = vpa_objects.vertical_pod_autoscaler(DEPLOYMENT, mode, tuple(sorted(controlled)))
    found = autoscaler_conflicts([hpa(metrics)], [vpa])
    expected = sorted(scaled_on & controlled) if mode == "Initial" else []
    assert [line.split(" both act on ")[1].split(" ")[0] for line in found] == expected


def test_component_rejects_a_conflicting_set_before_registering_anything():
    args = {"vpa_targets": [{"namespace": "inference", "kind": "Deployment", "name": "sentiment",
                             "api_version": "apps/v1"}],
            "vpa_mode": "Initial", "horizontal_autoscalers": [hpa([resource_metric("cpu")])]}
    with pytest.raises(ConfigError, match=re.escape("WorkloadAutoscaling auto: horizontal_autoscalers: ")) as err:
        run_program(lambda: WorkloadAutoscaling("auto", args))
    assert "both act on cpu of Deployment inference/sentiment" in str(err.value)
    rec = run_program(lambda: WorkloadAutoscaling("auto", {**args, "vpa_resources": ["memory"]}))
    vpa = rec.one(VPA_KIND)
    assert vpa.inputs["spec"]["updatePolicy"] == {"updateMode": "Initial"}
    assert vpa.inputs["spec"]["resourcePolicy"]["containerPolicies"][0]["controlledResources"] == ["memory"]
    release = rec.one("kubernetes:helm.sh/v3:Release", "auto-vpa")
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == ("vpa", "5.0.0", "vpa")
    assert release.inputs["repositoryOpts"] == {"repo": "https://charts.fairwinds.com/stable"}
    assert release.inputs["values"]["admissionController"] == {"enabled": True}
    assert release.urn in vpa.dependencies  # the chart installs the CRD


# ---------------------------------------------------------------------------------------------------------
# Configuration


def test_defaults_and_per_cloud_metrics_server():
    config = parse_config(raw(), "aws-dev").autoscaling
    assert (config.autoscaler, config.vpa, config.vpa_mode, config.vpa_workloads, config.vpa_resources) == (
        "cluster-autoscaler", True, "Off", ("training",), ("cpu", "memory"))
    assert (config.scale_down_unneeded_minutes, config.max_node_provision_minutes) == (30, 25)
    assert {stack: parse_config(raw(stack), stack).autoscaling.metrics_server
            for stack in ("aws-dev", "azure-dev", "gcp-dev", "oci-dev", "existing")} == {
        "aws-dev": True, "azure-dev": False, "gcp-dev": False, "oci-dev": True, "existing": False}


def test_the_platform_builds_vpas_for_the_training_job_and_cronjob():
    config = parse_config(raw(), "aws-dev")
    targets = [t for _, t in planned_vpa_targets(config, config.gpu_pools())]
    assert targets == [vpa_objects.VpaTarget("research", "Job", "reference-training", "batch/v1"),
                       vpa_objects.VpaTarget("research", "CronJob", "reference-retraining", "batch/v1")]
    [scaled] = planned_horizontal_autoscalers(config, config.gpu_pools())
    assert (scaled["kind"], scaled["metadata"]["name"]) == ("ScaledObject", "sentiment")


@pytest.mark.parametrize(("autoscaling", "path", "problem"), [
    ({"vpaMode": "Auto"}, "autoscaling.vpaMode", "'Auto' is not one of Off, Initial"),
    ({"vpaWorkloads": ["training", "batch"]}, "autoscaling.vpaWorkloads[1]",
     "'batch' is not one of training, inference"),
    ({"vpaWorkloads": ["training", "training"]}, "autoscaling.vpaWorkloads[1]", "'training' is listed twice"),
    ({"vpaWorkloads": []}, "autoscaling.vpaWorkloads", "must have at least one entry"),
    ({"vpaResources": ["cpu", "nvidia.com/gpu"]}, "autoscaling.vpaResources[1]",
     "'nvidia.com/gpu' is not one of cpu, memory"),
    ({"vpaResources": "cpu"}, "autoscaling.vpaResources", "must be a list, got str"),
    ({"scaleDownUnneededMinutes": 0}, "autoscaling.scaleDownUnneededMinutes", "must be >= 1, got 0"),
    ({"maxNodeProvisionMinutes": "soon"}, "autoscaling.maxNodeProvisionMinutes", "must be an integer, got 'soon'"),
    ({"metricsServer": "maybe"}, "autoscaling.metricsServer", "must be true or false, got 'maybe'"),
    ({"autoscaler": "karpentr"}, "autoscaling.autoscaler", "did you mean 'karpenter'?"),
    ({"vpaMod": "Off"}, "autoscaling.vpaMod", "unknown key; did you mean 'vpaMode'?"),
])
def test_every_autoscaling_error_names_its_field(autoscaling, path, problem):
    with pytest.raises(ConfigError) as err:
        parse_config(raw(autoscaling=autoscaling), "aws-dev")
    assert str(err.value).startswith(f"aws-dev: {path}: ")
    assert problem in str(err.value)


def test_karpenter_is_an_aws_choice_only():
    with pytest.raises(ConfigError, match=r"^azure-dev: autoscaling\.autoscaler: 'karpenter' is not one of built-in"):
        parse_config(raw("azure-dev", autoscaling={"autoscaler": "karpenter"}), "azure-dev")


def test_a_stack_asking_for_a_vpa_that_fights_the_inference_autoscaler_is_rejected():
    conflicting = {"vpaWorkloads": ["training", "inference"], "vpaMode": "Initial"}
    with pytest.raises(ConfigError) as err:
        parse_config(raw(autoscaling=conflicting), "aws-dev")
    assert str(err.value) == (
        "aws-dev: autoscaling.vpaWorkloads[1]: VerticalPodAutoscaler inference/sentiment and ScaledObject "
        "inference/sentiment both act on cpu of Deployment inference/sentiment: the VPA rewrites the requests the "
        "autoscaler's cpu utilisation is measured against; drop cpu from the VPA's controlled resources, set its "
        "mode to Off, or scale the workload on other metrics")
    # The same VPAs on memory only, or recommending only, or with the CPU-only HPA off: accepted.
    parse_config(raw(autoscaling={**conflicting, "vpaResources": ["memory"]}), "aws-dev")
    parse_config(raw(autoscaling={**conflicting, "vpaMode": "Off"}), "aws-dev")
    parse_config(raw(autoscaling=conflicting, inference={"autoscaler": "none"}), "aws-dev")
    # The CPU HPA (no KEDA) conflicts the same way.
    with pytest.raises(ConfigError, match="HorizontalPodAutoscaler inference/sentiment both act on cpu"):
        parse_config(raw(autoscaling=conflicting, inference={"autoscaler": "hpa"}), "aws-dev")


def _pool():
    config = parse_config(raw(), "aws-dev")
    return config.gpu_pools()[0]
