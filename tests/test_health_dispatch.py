"""Issue 36 item 6: routine GPU work never buys a node. The active checks are bound to existing idle nodes by
``gpu-platform health-dispatch`` (one Job per node, ``nodeName`` set): the dispatcher's pure decisions, its adapter
against a fake Kubernetes API, and the planned Karpenter reference stack (every health-check workload and how it is
bound, the dispatcher's RBAC)."""

import argparse
import copy
import hashlib
import io
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import planned_stack
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gpu_platform import labels
from gpu_platform.cli import build_parser
from gpu_platform.health import dispatch, health_objects
from gpu_platform.pools import GpuPool

STACKS = Path(__file__).resolve().parents[1] / "stacks"
NOW = datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc)
H100 = GpuPool("h100", "existing", "", "h100", 8, 80, 0, 20, rdma_fabric="infiniband")
SPEC = health_objects.HealthSpec(pools=(H100,), checked_pools=(H100,), dcgm_image="dcgm:1", platform_image="gp:1",
                                 training_images=(("nvidia", "train:1"),), all_reduce_program="print()")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
QUARANTINE_TAINT = {"key": labels.QUARANTINE_TAINT_KEY, "value": "GpuXidFatal", "effect": "NoSchedule"}
CORDON_TAINT = {"key": labels.UNSCHEDULABLE_TAINT_KEY, "effect": "NoSchedule"}


def api_form(body):
    """An object as the API server returns it: quantities as strings (what the fake API hands the dispatcher)."""
    body = copy.deepcopy(body)
    pod = body["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        for section in container.get("resources", {}).values():
            for key, value in section.items():
                section[key] = str(value)
    return body


TEMPLATE_BODY = api_form(health_objects.check_cron_job(SPEC, H100))
TEMPLATE = dispatch.template_from_cron_job(TEMPLATE_BODY)


def node(name, pool="h100", ready=True, gpus="8", taints=(GPU_TAINT,), unschedulable=False, checked=None,
         deleting=False):
    meta = {"name": name, "labels": {labels.POOL_LABEL: pool}}
    if checked:
        meta["annotations"] = {labels.HEALTH_CHECK_DETAIL_ANNOTATION: f"{checked} dcgm-diag passed"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T05:59:00Z"
    spec = {"taints": list(taints)}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": meta, "spec": spec,
            "status": {"allocatable": {"cpu": "192", "nvidia.com/gpu": gpus},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pod(name, on, gpus=0, phase="Running", namespace="team", pod_labels=None, init_gpus=0):
    container = {"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}}
    spec = {"nodeName": on, "containers": [container]}
    if init_gpus:
        spec["initContainers"] = [{"name": "init", "resources": {"limits": {"nvidia.com/gpu": str(init_gpus)}}}]
    return {"metadata": {"name": name, "namespace": namespace, "labels": pod_labels or {}}, "spec": spec,
            "status": {"phase": phase}}


def check_pod(name, on, phase="Pending", pool="h100"):
    return pod(name, on, gpus=8, phase=phase, namespace="gpu-health",
               pod_labels={labels.APP_COMPONENT_LABEL: "health-check", labels.POOL_LABEL: pool})


# ---------------------------------------------------------------------------------------------------------
# The template


def test_the_template_is_read_from_the_pools_suspended_cron_job():
    assert TEMPLATE_BODY["spec"]["suspend"] is True
    assert (TEMPLATE.name, TEMPLATE.namespace, TEMPLATE.pool) == ("gpu-health-check-h100", "gpu-health", "h100")
    assert TEMPLATE.node_selector == ((labels.POOL_LABEL, "h100"),)
    assert TEMPLATE.accelerators == (("nvidia.com/gpu", 8),)
    assert dict(TEMPLATE.labels) == {labels.APP_NAME_LABEL: "gpu-health", labels.APP_COMPONENT_LABEL: "health-check",
                                     labels.POOL_LABEL: "h100"}
    assert dispatch.CHECK_COMPONENT == health_objects.CHECK
    not_a_check = copy.deepcopy(TEMPLATE_BODY)
    not_a_check["metadata"]["labels"][labels.APP_COMPONENT_LABEL] = "remediation"
    with pytest.raises(dispatch.TemplateError, match="gpu-health-check-h100: not a health-check template"):
        dispatch.template_from_cron_job(not_a_check)
    no_gpu = copy.deepcopy(TEMPLATE_BODY)
    pod_spec = no_gpu["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    for container in [*pod_spec["initContainers"], *pod_spec["containers"]]:
        container["resources"]["limits"].pop("nvidia.com/gpu")
    with pytest.raises(dispatch.TemplateError, match="gpu-health-check-h100: its pod requests no accelerator"):
        dispatch.template_from_cron_job(no_gpu)


def test_effective_accelerator_requests():
    # Containers add up; an init container counts by itself (it runs before them); CPU and memory are not devices.
    spec = {"initContainers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": 2, "memory": "1Gi"}}},
                           {"resources": {"requests": {"nvidia.com/gpu": "3", "cpu": "1"}}}]}
    assert dispatch.pod_accelerators(spec) == {"nvidia.com/gpu": 8}
    spec["initContainers"] = [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]
    assert dispatch.pod_accelerators(spec) == {"nvidia.com/gpu": 5}
    assert dispatch.pod_accelerators({"containers": [{"resources": {"limits": {"amd.com/gpu": "0"}}}]}) == {}


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT, True),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}, GPU_TAINT, True),  # any effect
    ({"key": "nvidia.com/gpu", "value": "present"}, GPU_TAINT, True),  # Equal is the default operator
    ({"key": "nvidia.com/gpu", "value": "absent"}, GPU_TAINT, False),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False),
    ({"operator": "Exists"}, {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}, True),
    ({"key": "other", "operator": "Exists"}, GPU_TAINT, False),
])
def test_toleration_matching(toleration, taint, expected):
    assert dispatch.tolerates(toleration, taint) is expected


# ---------------------------------------------------------------------------------------------------------
# Which nodes


def test_only_idle_ready_schedulable_nodes_of_the_pool_are_chosen():
    nodes = [
        node("idle"),
        node("busy"),
        node("busy-init"),
        node("finished-work"),
        node("cpu-only-pod"),
        node("cordoned", unschedulable=True, taints=(GPU_TAINT, CORDON_TAINT)),
        node("not-ready", ready=False),
        node("deleting", deleting=True),
        node("under-check"),
        node("no-plugin", gpus="0"),
        node("disrupted", taints=(GPU_TAINT, {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"})),
        node("other-pool", pool="l4"),
    ]
    pods = [pod("train-0", "busy", gpus=1), pod("setup", "busy-init", init_gpus=8),
            pod("done", "finished-work", gpus=8, phase="Succeeded"), pod("failed", "finished-work", gpus=8,
                                                                          phase="Failed"),
            pod("sidecar", "cpu-only-pod"),
            check_pod("gpu-health-check-h100-1", "under-check", phase="Running")]
    decision = dispatch.decide(TEMPLATE, nodes, pods, cap=5)
    assert decision.chosen == ("cpu-only-pod", "finished-work", "idle")
    assert decision.in_flight == 1
    assert decision.skipped == (
        ("busy", "busy: 1 nvidia.com/gpu requested"),
        ("busy-init", "busy: 8 nvidia.com/gpu requested"),
        ("cordoned", "cordoned"),
        ("deleting", "being deleted"),
        ("disrupted", "taint karpenter.sh/disrupted:NoSchedule"),
        ("no-plugin", "0 of 8 nvidia.com/gpu allocatable"),
        ("not-ready", "not Ready"),
        ("under-check", "under check"),
    )  # other-pool is not the template's pool: not even listed


def test_quarantined_nodes_first_then_never_checked_then_the_longest_unchecked_within_the_cap():
    nodes = [node("recent", checked="2026-11-29T00:00:00Z"), node("old", checked="2026-11-20T00:00:00Z"),
             node("never-b"), node("never-a"),
             node("quarantined", unschedulable=True, checked="2026-11-29T05:00:00Z",
                  taints=(GPU_TAINT, QUARANTINE_TAINT, CORDON_TAINT))]
    assert dispatch.decide(TEMPLATE, nodes, [], cap=4).chosen == ("quarantined", "never-a", "never-b", "old")
    # Checks of the pool already pending or running count against the cap (terminal ones do not).
    pods = [check_pod("c1", "elsewhere"), check_pod("c2", "elsewhere-2", phase="Running"),
            check_pod("c3", "elsewhere-3", phase="Failed"), check_pod("other-pool", "x", pool="l4")]
    decision = dispatch.decide(TEMPLATE, nodes, pods, cap=3)
    assert (decision.chosen, decision.in_flight) == (("quarantined",), 2)
    assert decision.skipped == (("never-a", "cap"), ("never-b", "cap"), ("old", "cap"), ("recent", "cap"))
    assert dispatch.decide(TEMPLATE, nodes, pods, cap=2).chosen == ()
    assert dispatch.decide(TEMPLATE, [], [], cap=1) == dispatch.Decision("gpu-health-check-h100", (), 0, 1, ())


def test_the_check_job_is_the_template_bound_to_the_node():
    job = dispatch.check_job(TEMPLATE, "ip-10-0-1-23.us-west-2.compute.internal", NOW)
    name = dispatch.job_name("gpu-health-check-h100", "ip-10-0-1-23.us-west-2.compute.internal", NOW)
    assert name == "gpu-health-check-h100-" + hashlib.sha256(
        b"ip-10-0-1-23.us-west-2.compute.internal/2026-11-29T06:00:00Z").hexdigest()[:10]
    assert job["metadata"] == {"name": name, "namespace": "gpu-health", "labels": dict(TEMPLATE.labels)}
    expected_spec = copy.deepcopy(TEMPLATE_BODY["spec"]["jobTemplate"]["spec"])
    expected_spec["template"]["spec"]["nodeName"] = "ip-10-0-1-23.us-west-2.compute.internal"
    assert job["spec"] == expected_spec
    assert (job["spec"]["backoffLimit"], job["spec"]["activeDeadlineSeconds"], job["spec"]["ttlSecondsAfterFinished"]
            ) == (0, 3600, 86400)
    # Quantities leave as strings even from a template with integers (the client's models refuse integers).
    planned = dispatch.template_from_cron_job(health_objects.check_cron_job(SPEC, H100))
    limits = dispatch.check_job(planned, "n", NOW)["spec"]["template"]["spec"]["initContainers"][0]["resources"]
    assert limits["limits"] == {"nvidia.com/gpu": "8", "memory": "4Gi"}
    # A long template name is cut so that the name stays a label value (63), and a name is per node and per run.
    long = dispatch.job_name("gpu-health-check-" + "p" * 60, "n", NOW)
    assert len(long) == 51 and long.startswith("gpu-health-check-" + "p" * 23 + "-")
    assert dispatch.job_name("t", "n", NOW) != dispatch.job_name("t", "m", NOW)
    assert dispatch.job_name("t", "n", NOW) != dispatch.job_name("t", "n", datetime(2026, 11, 29, 12, 0,
                                                                                      tzinfo=timezone.utc))


def test_at_most_ten_percent_of_a_pool_under_check_at_once_and_at_least_one():
    assert [health_objects.max_checks_at_once(GpuPool("p", "existing", "", "h100", 8, 80, 0, n))
            for n in (1, 9, 10, 19, 20, 64)] == [1, 1, 1, 1, 2, 6]


# ---------------------------------------------------------------------------------------------------------
# The adapter against a fake API


def _plain(body):
    return body if isinstance(body, dict) else ApiClient().sanitize_for_serialization(body)


class FakeCore:
    def __init__(self, nodes, pods, fail=None):
        self.nodes, self.pods, self.fail, self.calls = nodes, pods, fail, []

    def list_node(self):
        self.calls.append(("list_node",))
        if self.fail:
            raise self.fail
        return {"items": copy.deepcopy(self.nodes)}

    def list_pod_for_all_namespaces(self, field_selector):
        self.calls.append(("list_pod_for_all_namespaces", field_selector))
        return {"items": [copy.deepcopy(p) for p in self.pods if p["status"]["phase"] not in ("Succeeded", "Failed")]}


class FakeBatch:
    def __init__(self, cron_jobs, refuse=()):
        self.cron_jobs, self.refuse, self.calls, self.created = cron_jobs, set(refuse), [], []

    def read_namespaced_cron_job(self, name, namespace):
        self.calls.append(("read_namespaced_cron_job", name, namespace))
        if (namespace, name) not in self.cron_jobs:
            raise ApiException(status=404, reason="Not Found")
        return copy.deepcopy(self.cron_jobs[(namespace, name)])

    def create_namespaced_job(self, namespace, body):
        body = _plain(body)
        self.calls.append(("create_namespaced_job", namespace, body["metadata"]["name"]))
        if body["spec"]["template"]["spec"]["nodeName"] in self.refuse:
            raise ApiException(status=403, reason="Forbidden")
        self.created.append(body)


def run_dispatch(core, batch, *templates):
    args = build_parser().parse_args(["health-dispatch", "--namespace", "gpu-health",
                                      *[a for t in templates for a in ("--template", t)]])
    out, err = io.StringIO(), io.StringIO()
    status = dispatch.run(args, api_factory=lambda kubeconfig: (core, batch), now=NOW, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_the_dispatcher_creates_one_bound_job_per_idle_node():
    core = FakeCore([node("a"), node("b"), node("c")], [pod("w", "b", gpus=8), check_pod("old", "c", "Succeeded")])
    batch = FakeBatch({("gpu-health", "gpu-health-check-h100"): TEMPLATE_BODY})
    status, out, err = run_dispatch(core, batch, "gpu-health-check-h100=2")
    assert (status, err) == (0, "")
    assert core.calls == [("list_node",),
                          ("list_pod_for_all_namespaces", "status.phase!=Succeeded,status.phase!=Failed")]
    names = [dispatch.job_name("gpu-health-check-h100", n, NOW) for n in ("a", "c")]
    assert batch.calls == [("read_namespaced_cron_job", "gpu-health-check-h100", "gpu-health"),
                           ("create_namespaced_job", "gpu-health", names[0]),
                           ("create_namespaced_job", "gpu-health", names[1])]
    assert batch.created == [dispatch.check_job(TEMPLATE, "a", NOW), dispatch.check_job(TEMPLATE, "c", NOW)]
    assert out.splitlines() == ["gpu-health-check-h100: b: skipped (busy: 8 nvidia.com/gpu requested)",
                                f"gpu-health-check-h100: a: Job {names[0]}",
                                f"gpu-health-check-h100: c: Job {names[1]}",
                                "gpu-health-check-h100: 2 started, 0 in flight, at most 2 at once"]


def test_no_idle_node_no_job():
    core = FakeCore([node("a")], [pod("w", "a", gpus=1)])
    batch = FakeBatch({("gpu-health", "gpu-health-check-h100"): TEMPLATE_BODY})
    status, out, _ = run_dispatch(core, batch, "gpu-health-check-h100=1")
    assert (status, batch.created) == (0, [])
    assert out.splitlines()[-1] == "gpu-health-check-h100: 0 started, 0 in flight, at most 1 at once"


def test_api_failures_are_one_line_and_exit_1_without_stopping_the_other_templates():
    status, out, err = run_dispatch(FakeCore([], [], fail=ApiException(status=403, reason="Forbidden")),
                                    FakeBatch({}), "gpu-health-check-h100=1")
    assert (status, out, err) == (1, "", "error: Kubernetes API: 403 Forbidden\n")
    core = FakeCore([node("a"), node("b")], [])
    batch = FakeBatch({("gpu-health", "gpu-health-check-h100"): TEMPLATE_BODY}, refuse={"a"})
    status, out, err = run_dispatch(core, batch, "gpu-health-check-missing=1", "gpu-health-check-h100=2")
    assert status == 1
    assert err.splitlines() == [
        "error: Kubernetes API: cannot read gpu-health/gpu-health-check-missing: 404 Not Found",
        f"error: Kubernetes API: cannot create Job {dispatch.job_name('gpu-health-check-h100', 'a', NOW)} for a: "
        "403 Forbidden"]
    assert [j["spec"]["template"]["spec"]["nodeName"] for j in batch.created] == ["b"]


@pytest.mark.parametrize("value", ["gpu-health-check-h100", "=1", "x=0", "x=-1", "x=one"])
def test_a_template_argument_names_its_cap(value):
    with pytest.raises(argparse.ArgumentTypeError, match="is not NAME=MAX_CONCURRENT with MAX_CONCURRENT >= 1"):
        dispatch.parse_template_arg(value)
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["health-dispatch", "--namespace", "gpu-health", "--template", value])
    assert exit_.value.code == 2


# ---------------------------------------------------------------------------------------------------------
# The Karpenter reference stack


@pytest.fixture(scope="module")
def karpenter():
    result = planned_stack("aws-karpenter")
    assert result.errors == []
    return result.manifests


def _pod_specs(obj):
    kind = obj["kind"]
    if kind == "CronJob":
        return [obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]]
    if kind in ("Job", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet"):
        return [obj["spec"]["template"]["spec"]]
    if kind == "Pod":
        return [obj["spec"]]
    return []


def test_every_health_check_workload_is_bound_to_an_existing_node(karpenter):
    health = [m for m in karpenter if m["metadata"].get("namespace") == "gpu-health" and _pod_specs(m)]
    bound = {(m["kind"], m["metadata"]["name"]): m for m in health}
    assert sorted(bound) == [("CronJob", "gpu-health-check-h100-train"), ("CronJob", "gpu-health-check-l4-infer"),
                             ("CronJob", "gpu-health-dispatch"), ("DaemonSet", "gpu-node-problem-detector"),
                             ("Deployment", "gpu-remediation")]
    # The checks: templates only. Suspended, the CronJob controller never creates their pods; the dispatcher does,
    # each bound by nodeName to a node that exists and is idle.
    for pool, gpus in (("h100-train", 8), ("l4-infer", 1)):
        cron = bound[("CronJob", f"gpu-health-check-{pool}")]
        assert cron["spec"]["suspend"] is True
        template = dispatch.template_from_cron_job(api_form(cron))
        assert (template.pool, template.accelerators) == (pool, (("nvidia.com/gpu", gpus),))
        assert "nodeName" not in _pod_specs(cron)[0]  # the dispatcher sets it per node
    dispatcher = _pod_specs(bound[("CronJob", "gpu-health-dispatch")])[0]
    assert dispatcher["containers"][0]["args"] == [
        "health-dispatch", "--namespace", "gpu-health", "--template", "gpu-health-check-l4-infer=1",
        "--template", "gpu-health-check-h100-train=1"]
    # Nothing else in the namespace asks for a GPU: the dispatcher, node-problem-detector (a DaemonSet: its pods are
    # bound to their nodes, and Karpenter ignores DaemonSet pods, pkg/utils/pod/scheduling.go:106) and the controller.
    for key in (("CronJob", "gpu-health-dispatch"), ("DaemonSet", "gpu-node-problem-detector"),
                ("Deployment", "gpu-remediation")):
        assert dispatch.pod_accelerators(_pod_specs(bound[key])[0]) == {}, key
    # The dispatcher tolerates no GPU taint, and every Karpenter NodePool carries it: Karpenter can place the
    # dispatcher on no GPU NodePool, so even a dispatcher pending for CPU cannot buy a GPU node.
    assert "tolerations" not in dispatcher
    node_pools = [m for m in karpenter if m["kind"] == "NodePool"]
    assert sorted(p["metadata"]["name"] for p in node_pools) == ["h100-train", "l4-infer"]
    assert all(GPU_TAINT in p["spec"]["template"]["spec"]["taints"] for p in node_pools)


def test_on_the_karpenter_stack_a_check_lands_only_on_an_existing_idle_node(karpenter):
    """The planned template through the dispatcher: with no idle node no pod exists at all (nothing pending for
    Karpenter to provision for); otherwise each pod names an existing node."""
    cron = next(m for m in karpenter
                if m["kind"] == "CronJob" and m["metadata"]["name"] == "gpu-health-check-h100-train")
    nodes = [node("p5-a", pool="h100-train"), node("p5-b", pool="h100-train")]
    core = FakeCore(nodes, [pod("trainer-0", "p5-a", gpus=8), pod("trainer-1", "p5-b", gpus=8)])
    batch = FakeBatch({("gpu-health", "gpu-health-check-h100-train"): api_form(cron)})
    assert run_dispatch(core, batch, "gpu-health-check-h100-train=1")[0] == 0
    assert batch.created == []
    core = FakeCore(nodes, [pod("trainer-0", "p5-a", gpus=8)])
    assert run_dispatch(core, batch, "gpu-health-check-h100-train=1")[0] == 0
    assert [j["spec"]["template"]["spec"]["nodeName"] for j in batch.created] == ["p5-b"]
    assert batch.created[0]["spec"]["template"]["spec"]["priorityClassName"] == "gpu-health-check"


def test_the_dispatchers_rbac_is_exactly_what_it_calls(karpenter):
    def one(kind, name):
        return next(m for m in karpenter if m["kind"] == kind and m["metadata"]["name"] == name)

    assert one("ClusterRole", "gpu-health-dispatch")["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    role = one("Role", "gpu-health-dispatch")
    assert role["metadata"]["namespace"] == "gpu-health"
    assert role["rules"] == [
        {"apiGroups": ["batch"], "resources": ["cronjobs"], "verbs": ["get"],
         "resourceNames": ["gpu-health-check-h100-train", "gpu-health-check-l4-infer"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}]
    subjects = [{"kind": "ServiceAccount", "name": "gpu-health-dispatch", "namespace": "gpu-health"}]
    binding = one("RoleBinding", "gpu-health-dispatch")
    assert (binding["roleRef"], binding["subjects"]) == (
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gpu-health-dispatch"}, subjects)
    cluster_binding = one("ClusterRoleBinding", "gpu-health-dispatch")
    assert (cluster_binding["roleRef"], cluster_binding["subjects"]) == (
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpu-health-dispatch"}, subjects)
    dispatcher = _pod_specs(one("CronJob", "gpu-health-dispatch"))[0]
    assert (dispatcher["serviceAccountName"], dispatcher["automountServiceAccountToken"]) == (
        "gpu-health-dispatch", True)
    # Its egress to the API server (the namespace denies everything else).
    api = one("NetworkPolicy", "allow-api-server")["spec"]["podSelector"]["matchExpressions"]
    assert api == [{"key": labels.APP_COMPONENT_LABEL, "operator": "In",
                    "values": ["health-check", "health-dispatch", "node-problem-detector", "remediation"]}]
