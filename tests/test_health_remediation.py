"""Remediation: the pure decisions (cap, cool-down, storm brake, release), property-tested, and the controller's
loop driven against an in-memory fake of the CoreV1Api calls it makes."""

import copy
import io
import json
import random
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gpu_platform import labels
from gpu_platform.cli import main
from gpu_platform.health import controller as ctl
from gpu_platform.health import health_catalog
from gpu_platform.health.remediation import (
    DRAIN,
    QUARANTINE,
    RELEASE,
    SKIP,
    NodeState,
    PolicyError,
    RemediationPolicy,
    decide,
    load_policy,
    node_state,
    parse_policy,
    pods_to_evict,
    pool_cap,
    quarantine_patch,
    releasable,
    release_patch,
)

NOW = datetime(2026, 11, 25, 4, 0, 0, tzinfo=timezone.utc)
POOL = labels.POOL_LABEL
TAINT = labels.QUARANTINE_TAINT_KEY
AT = labels.QUARANTINED_AT_ANNOTATION
FATAL = ("GpuXidFatal", "GpuFellOffBus", "RdmaLinkDown", "GpuHealthCheckFailed")
CORDON = RemediationPolicy(mode="cordon", max_quarantined_per_pool=2, max_quarantined_percent=20, cooldown_minutes=0,
                           fatal_conditions=FATAL)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_node(name, pool="h100", fatal=(), unschedulable=False, taint=None, quarantined_at=None, check=None,
              checked_at=None, extra_taints=(), since=NOW - timedelta(minutes=5)):
    """A Node in the API's JSON form."""
    node_labels = {POOL: pool} if pool else {}
    annotations = {}
    if check:
        node_labels[labels.HEALTH_CHECK_LABEL] = check
    if checked_at:
        annotations[labels.HEALTH_CHECK_DETAIL_ANNOTATION] = f"{stamp(checked_at)} dcgm-diag: pass, 5 tests"
    if quarantined_at:
        annotations[AT] = stamp(quarantined_at)
    taints = [dict(t) for t in extra_taints]
    if taint:
        taints.append({"key": TAINT, "value": taint, "effect": "NoSchedule"})
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T00:00:00Z"}]
    conditions += [{"type": c, "status": "True", "lastTransitionTime": stamp(since), "reason": "Xid79"} for c in fatal]
    spec = {"taints": taints} if taints else {}
    if unschedulable:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "100", "labels": node_labels,
                         "annotations": annotations},
            "spec": spec, "status": {"conditions": conditions}}


def states(nodes, policy=CORDON):
    return [node_state(n, policy) for n in nodes]


# --- settings -------------------------------------------------------------------------------------------------------

def test_policy_defaults_are_dry_run_one_node_per_pool():
    policy = parse_policy({})
    assert policy == RemediationPolicy()
    assert (policy.mode, policy.dry_run, policy.max_quarantined_per_pool, policy.max_quarantined_percent,
            policy.cooldown_minutes, policy.interval_seconds, policy.pool_label) == (
        "dry-run", True, 1, 10, 60, 60, "gpu-platform.io/pool")
    # node-problem-detector's fatal XID conditions, then the active check's.
    assert policy.fatal_conditions == (*health_catalog.fatal_conditions(), "GpuHealthCheckFailed")
    assert {"GpuXidFatal", "GpuFellOffBus"} <= set(policy.fatal_conditions)


def test_policy_reads_every_key():
    policy = parse_policy({"mode": "drain", "maxQuarantinedPerPool": 3, "maxQuarantinedPercent": 25,
                           "cooldownMinutes": 0, "fatalConditions": ["GpuXidFatal", "GpuXidFatal", "Custom"],
                           "poolLabel": "example.com/pool", "intervalSeconds": 10,
                           "releaseAfterPassingCheck": False})
    assert policy == RemediationPolicy("drain", 3, 25, 0, ("GpuXidFatal", "Custom"), "example.com/pool", 10, False)


@pytest.mark.parametrize(("raw", "message"), [
    ({"mode": "apply"}, "mode: 'apply' is not one of dry-run, cordon, drain"),
    ({"maxQuarantinedPerPool": -1}, "maxQuarantinedPerPool: -1 is not an integer >= 0"),
    ({"maxQuarantinedPerPool": True}, "maxQuarantinedPerPool: True is not an integer >= 0"),
    ({"maxQuarantinedPercent": 101}, "maxQuarantinedPercent: 101 is not an integer from 0 to 100"),
    ({"cooldownMinutes": 1.5}, "cooldownMinutes: 1.5 is not an integer >= 0"),
    ({"intervalSeconds": 5}, "intervalSeconds: 5 is not an integer >= 10"),
    ({"fatalConditions": []}, "fatalConditions: must be a non-empty list of node condition types"),
    ({"fatalConditions": ["GpuXidFatal", 3]}, "fatalConditions: must be a non-empty list of node condition types"),
    ({"poolLabel": ""}, "poolLabel: must be a non-empty label key"),
    ({"releaseAfterPassingCheck": "yes"}, "releaseAfterPassingCheck: 'yes' is not true or false"),
    ({"maxQuarantined": 1}, "maxQuarantined: unknown key (known: cooldownMinutes, fatalConditions, intervalSeconds, "
                            "maxQuarantinedPerPool, maxQuarantinedPercent, mode, poolLabel, releaseAfterPassingCheck)"),
    ([], "the remediation config must be a JSON object"),
])
def test_policy_refuses_bad_values_in_one_line(raw, message):
    with pytest.raises(PolicyError) as err:
        parse_policy(raw)
    assert str(err.value) == message


def test_load_policy_errors(tmp_path):
    with pytest.raises(PolicyError, match=r"^cannot read .*missing.json: No such file or directory$"):
        load_policy(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{mode: cordon}")
    with pytest.raises(PolicyError, match=r"bad.json: not valid JSON: Expecting property name enclosed in double "
                                          r"quotes at line 1$"):
        load_policy(bad)


# --- the cap ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("size", "per_pool", "percent", "cap"), [
    (10, 1, 10, 1),
    (4, 3, 10, 1),     # floor(0.4) = 0: the floor of one still lets a small pool isolate a broken node
    (40, 3, 10, 3),    # per-pool bound
    (40, 5, 10, 4),    # percentage bound
    (100, 10, 5, 5),
    (1, 1, 100, 1),
    (0, 1, 10, 0),
    (10, 0, 10, 0),    # 0 turns quarantine off
    (10, 5, 0, 0),
])
def test_pool_cap(size, per_pool, percent, cap):
    policy = RemediationPolicy(max_quarantined_per_pool=per_pool, max_quarantined_percent=percent)
    assert pool_cap(size, policy) == cap


# --- decisions -------------------------------------------------------------------------------------------------------

def test_one_fatal_node_is_quarantined_with_its_condition():
    nodes = [make_node("gpu-a", fatal=("GpuXidFatal",))] + [make_node(f"gpu-{i}") for i in range(9)]
    plan = decide(states(nodes), CORDON, NOW)
    assert [(a.kind, a.node, a.pool, a.reason) for a in plan.actions] == [(QUARANTINE, "gpu-a", "h100", "GpuXidFatal")]
    assert plan.actions[0].message == ("fatal condition GpuXidFatal: cordoned and tainted "
                                       "gpu-platform.io/quarantined=GpuXidFatal:NoSchedule")
    summary = plan.pools[0]
    assert (summary.pool, summary.size, summary.cap, summary.quarantined, summary.out_of_service,
            summary.unhealthy, summary.storm) == ("h100", 10, 2, 0, 0, 1, False)


def test_nodes_cordoned_by_someone_else_count_against_the_cap():
    nodes = ([make_node("gpu-a", fatal=("RdmaLinkDown",)), make_node("gpu-b", unschedulable=True),
              make_node("gpu-c", unschedulable=True)] + [make_node(f"gpu-{i}") for i in range(7)])
    plan = decide(states(nodes), CORDON, NOW)
    assert [(a.kind, a.node, a.reason) for a in plan.actions] == [(SKIP, "gpu-a", "cap")]
    assert plan.actions[0].message == ("pool h100 already has 2 of 10 nodes out of service (cap 2); not quarantined "
                                       "for RdmaLinkDown")


def test_storm_brake_quarantines_up_to_the_cap_and_names_a_common_cause():
    nodes = [make_node(f"gpu-{i:02d}", fatal=("GpuXidFatal",), since=NOW - timedelta(minutes=10 - i))
             for i in range(6)] + [make_node(f"ok-{i}") for i in range(4)]
    plan = decide(states(nodes), CORDON, NOW)
    assert [(a.kind, a.node, a.reason) for a in plan.actions] == [
        (QUARANTINE, "gpu-00", "GpuXidFatal"), (QUARANTINE, "gpu-01", "GpuXidFatal"),
        (SKIP, "gpu-02", "storm"), (SKIP, "gpu-03", "storm"), (SKIP, "gpu-04", "storm"), (SKIP, "gpu-05", "storm")]
    assert plan.actions[2].message == ("too many unhealthy nodes: suspect a common cause (6 of 10 nodes in pool h100 "
                                       "show fatal conditions, cap 2); not quarantined for GpuXidFatal")
    assert plan.pools[0].storm is True


def test_cool_down_from_memory_and_from_the_annotation():
    policy = RemediationPolicy(mode="cordon", max_quarantined_per_pool=3, max_quarantined_percent=50,
                               cooldown_minutes=30)
    nodes = [make_node("gpu-a", fatal=("GpuXidFatal",))] + [make_node(f"ok-{i}") for i in range(5)]
    held = decide(states(nodes, policy), policy, NOW, {"h100": NOW - timedelta(minutes=29)})
    assert [(a.kind, a.reason) for a in held.actions] == [(SKIP, "cooldown")]
    assert held.actions[0].message == ("pool h100 quarantined a node at 2026-11-25T03:31:00Z (cool-down 30 min); "
                                       "not quarantined for GpuXidFatal")
    assert [a.kind for a in decide(states(nodes, policy), policy, NOW,
                                   {"h100": NOW - timedelta(minutes=30)}).actions] == [QUARANTINE]
    # The annotation of a node still quarantined starts the cool-down too (it survives a controller restart).
    nodes.append(make_node("gpu-q", taint="GpuXidFatal", unschedulable=True, fatal=("GpuXidFatal",),
                           quarantined_at=NOW - timedelta(minutes=10)))
    assert [(a.kind, a.node, a.reason) for a in decide(states(nodes, policy), policy, NOW).actions] == [
        (SKIP, "gpu-a", "cooldown")]
    # One quarantine per pool per window, even when several nodes fail at once under the cap.
    two = [make_node("gpu-a", fatal=("GpuXidFatal",)), make_node("gpu-b", fatal=("GpuFellOffBus",))] + [
        make_node(f"ok-{i}") for i in range(8)]
    assert [(a.kind, a.node) for a in decide(states(two, policy), policy, NOW).actions] == [
        (QUARANTINE, "gpu-a"), (SKIP, "gpu-b")]


def test_pools_are_guarded_separately_and_unpooled_nodes_ignored():
    nodes = [make_node("a-1", pool="a100", fatal=("GpuXidFatal",)), make_node("h-1", fatal=("GpuXidFatal",)),
             make_node("cpu-1", pool=None, fatal=("GpuXidFatal",))]
    policy = RemediationPolicy(mode="cordon", cooldown_minutes=30)
    plan = decide(states(nodes, policy), policy, NOW, {"a100": NOW - timedelta(minutes=1)})
    assert [(a.kind, a.node, a.pool, a.reason) for a in plan.actions] == [
        (SKIP, "a-1", "a100", "cooldown"), (QUARANTINE, "h-1", "h100", "GpuXidFatal")]


def test_release_needs_a_newer_passing_check_and_no_fatal_condition():
    quarantined = NOW - timedelta(hours=2)
    ours = dict(taint="GpuXidFatal", unschedulable=True, quarantined_at=quarantined)
    cases = {
        "released": make_node("released", check="passed", checked_at=NOW - timedelta(minutes=5), **ours),
        "older-check": make_node("older-check", check="passed", checked_at=quarantined - timedelta(minutes=1),
                                 **ours),
        "failed-check": make_node("failed-check", check="failed", checked_at=NOW, **ours),
        "still-fatal": make_node("still-fatal", check="passed", checked_at=NOW, fatal=("RdmaLinkDown",), **ours),
        "not-ours": make_node("not-ours", unschedulable=True, check="passed", checked_at=NOW),
        "no-check": make_node("no-check", **ours),
    }
    cases.update({f"ok-{i}": make_node(f"ok-{i}") for i in range(20)})
    policy = RemediationPolicy(mode="cordon", max_quarantined_per_pool=10, max_quarantined_percent=100,
                               fatal_conditions=FATAL)
    plan = decide(states(cases.values(), policy), policy, NOW)
    assert [(a.kind, a.node) for a in plan.actions] == [(RELEASE, "released")]
    assert plan.actions[0].message == ("active check passed at 2026-11-25T03:55:00Z after the quarantine "
                                       "(GpuXidFatal); no fatal condition left")
    off = RemediationPolicy(mode="cordon", release_after_passing_check=False)
    assert not releasable(node_state(cases["released"], off), off)


def test_drain_mode_drains_new_and_existing_quarantines():
    policy = RemediationPolicy(mode="drain", max_quarantined_per_pool=2, max_quarantined_percent=50,
                               cooldown_minutes=0)
    nodes = [make_node("gpu-a", fatal=("GpuFellOffBus",)),
             make_node("gpu-q", taint="GpuXidFatal", unschedulable=True, quarantined_at=NOW - timedelta(hours=1),
                       fatal=("GpuXidFatal",)), make_node("ok-1"), make_node("ok-2")]
    plan = decide(states(nodes, policy), policy, NOW)
    assert [(a.kind, a.node, a.reason) for a in plan.actions] == [
        (DRAIN, "gpu-q", "GpuXidFatal"), (QUARANTINE, "gpu-a", "GpuFellOffBus"), (DRAIN, "gpu-a", "GpuFellOffBus")]


def test_node_state_reads_the_check_time_from_the_annotation_and_the_condition():
    node = make_node("gpu-a", check="passed", checked_at=NOW - timedelta(minutes=30))
    assert node_state(node, CORDON).checked_at == NOW - timedelta(minutes=30)
    node["status"]["conditions"].append({"type": "GpuHealthCheckFailed", "status": "False",
                                         "lastTransitionTime": stamp(NOW - timedelta(hours=5)),
                                         "lastHeartbeatTime": stamp(NOW - timedelta(minutes=2))})
    state = node_state(node, CORDON)
    assert (state.checked_at, state.health_check, state.fatal, state.pool) == (
        NOW - timedelta(minutes=2), "passed", (), "h100")
    node["status"]["conditions"].append({"type": "NotFatal", "status": "True"})
    assert node_state(node, CORDON).fatal == ()


def test_quarantine_and_release_patches_keep_other_taints():
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    node = make_node("gpu-a", extra_taints=[gpu_taint])
    assert quarantine_patch(node, "GpuXidFatal", NOW) == {
        "metadata": {"annotations": {AT: "2026-11-25T04:00:00Z"}, "resourceVersion": "100"},
        "spec": {"unschedulable": True, "taints": [
            gpu_taint, {"key": "gpu-platform.io/quarantined", "value": "GpuXidFatal", "effect": "NoSchedule"}]}}
    quarantined = make_node("gpu-a", extra_taints=[gpu_taint], taint="GpuXidFatal", unschedulable=True,
                            quarantined_at=NOW)
    assert release_patch(quarantined) == {
        "metadata": {"annotations": {AT: None}, "resourceVersion": "100"},
        "spec": {"unschedulable": False, "taints": [gpu_taint]}}


@pytest.mark.parametrize(("reason", "value"), [
    ("GpuXidFatal", "GpuXidFatal"), ("example.com/GpuThing", "example.com-GpuThing"), ("x" * 70, "x" * 63),
    ("/", "fatal")])
def test_the_taint_value_is_always_a_label_value(reason, value):
    assert quarantine_patch(make_node("gpu-a"), reason, NOW)["spec"]["taints"][-1]["value"] == value


def test_pods_to_evict_leaves_daemonset_mirror_and_finished_pods():
    def pod(name, namespace="team-a", owner=None, annotations=None, phase="Running", deleting=False):
        meta = {"name": name, "namespace": namespace, "annotations": annotations or {}}
        if owner:
            meta["ownerReferences"] = [{"kind": owner, "name": "x", "apiVersion": "apps/v1", "uid": "u"}]
        if deleting:
            meta["deletionTimestamp"] = "2026-11-25T03:59:00Z"
        return {"metadata": meta, "status": {"phase": phase}}

    pods = [pod("train-1", owner="ReplicaSet"), pod("dcgm-exporter-x", "gpu-operator", owner="DaemonSet"),
            pod("kube-proxy-node", "kube-system", annotations={"kubernetes.io/config.mirror": "abc"}),
            pod("done", phase="Succeeded"), pod("crashed", phase="Failed"), pod("leaving", deleting=True),
            pod("bare", "default"), pod("job-0", "team-b", owner="Job")]
    assert pods_to_evict(pods) == [("default", "bare"), ("team-a", "train-1"), ("team-b", "job-0")]


# --- properties ------------------------------------------------------------------------------------------------------

@st.composite
def node_sets(draw):
    """Random pools of random nodes: fatal or not, cordoned by anyone, quarantined by us, checked or not."""
    count = draw(st.integers(0, 24))
    minutes = st.integers(0, 240)
    nodes = []
    for i in range(count):
        ours = draw(st.booleans())
        nodes.append(NodeState(
            name=f"node-{i:02d}",
            pool=draw(st.sampled_from(["a", "b", "c", None])),
            unschedulable=ours or draw(st.booleans()),
            quarantine_reason="GpuXidFatal" if ours else None,
            quarantined_at=(NOW - timedelta(minutes=draw(minutes))) if ours and draw(st.booleans()) else None,
            fatal=tuple(sorted(draw(st.sets(st.sampled_from(["GpuXidFatal", "RdmaLinkDown"]), max_size=2)))),
            fatal_since=NOW - timedelta(minutes=draw(minutes)),
            health_check=draw(st.sampled_from([None, "passed", "failed"])),
            checked_at=(NOW - timedelta(minutes=draw(minutes))) if draw(st.booleans()) else None,
        ))
    return nodes


policies = st.builds(
    RemediationPolicy,
    mode=st.sampled_from(["dry-run", "cordon", "drain"]),
    max_quarantined_per_pool=st.integers(0, 6),
    max_quarantined_percent=st.integers(0, 100),
    cooldown_minutes=st.integers(0, 120),
    release_after_passing_check=st.booleans(),
)
memories = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 240).map(
    lambda m: NOW - timedelta(minutes=m)), max_size=3)


@settings(max_examples=300, deadline=None)
@given(node_sets(), policies, memories)
def test_property_guards_hold_for_any_input(nodes, policy, memory):
    plan = decide(nodes, policy, NOW, memory)
    by_name = {n.name: n for n in nodes}
    for pool in {n.pool for n in nodes if n.pool}:
        members = [n for n in nodes if n.pool == pool]
        new = [a for a in plan.of(QUARANTINE) if a.pool == pool]
        out_of_service = sum(1 for n in members if n.unschedulable or n.quarantined)
        # The cap is never exceeded by a quarantine, counting nodes already out of service.
        if new:
            assert out_of_service + len(new) <= pool_cap(len(members), policy)
        # Cool-down: with one configured, at most one new quarantine per pool per pass, none within the window.
        if policy.cooldown_minutes and new:
            assert len(new) == 1
            starts = [memory.get(pool)] + [n.quarantined_at for n in members if n.quarantined]
            assert all(NOW - t >= timedelta(minutes=policy.cooldown_minutes) for t in starts if t is not None)
    for action in plan.actions:
        node = by_name[action.node]
        assert node.pool is not None
        if action.kind == QUARANTINE:
            assert node.fatal and not node.unschedulable and not node.quarantined
        if action.kind == RELEASE:
            # Never a node someone else cordoned; only with a passing check newer than the quarantine.
            assert node.quarantined and releasable(node, policy)
        if action.kind == DRAIN:
            assert policy.mode == "drain"
    assert len({(a.kind, a.node) for a in plan.actions}) == len(plan.actions)


@settings(max_examples=200, deadline=None)
@given(node_sets(), policies, memories, st.randoms(use_true_random=False))
def test_property_decisions_are_deterministic(nodes, policy, memory, rnd):
    shuffled = list(nodes)
    rnd.shuffle(shuffled)
    assert decide(shuffled, policy, NOW, memory) == decide(nodes, policy, NOW, memory)


# --- the controller against a fake API -------------------------------------------------------------------------------

def _plain(body):
    return body if isinstance(body, dict) else ApiClient().sanitize_for_serialization(body)


class FakeCoreV1:
    """In-memory stand-in for the CoreV1Api methods remediation and the reporter call; records every call."""

    MUTATING = ("patch_node", "patch_node_status", "create_namespaced_pod_eviction")

    def __init__(self, nodes=(), pods=None, refuse_evictions=(), fail_patch=None):
        self.nodes = {n["metadata"]["name"]: copy.deepcopy(n) for n in nodes}
        self.pods = copy.deepcopy(pods or {})
        self.refuse = set(refuse_evictions)
        self.fail_patch = fail_patch
        self.calls = []

    def list_node(self):
        self.calls.append(("list_node",))
        return {"items": [copy.deepcopy(n) for _, n in sorted(self.nodes.items())]}

    def read_node(self, name):
        self.calls.append(("read_node", name))
        if name not in self.nodes:
            raise ApiException(status=404, reason="Not Found")
        return copy.deepcopy(self.nodes[name])

    def list_pod_for_all_namespaces(self, field_selector):
        self.calls.append(("list_pod_for_all_namespaces", field_selector))
        node = field_selector.removeprefix("spec.nodeName=")
        return {"items": copy.deepcopy(self.pods.get(node, []))}

    def patch_node(self, name, body, _content_type=None):
        self.calls.append(("patch_node", name, copy.deepcopy(body), _content_type))
        if self.fail_patch:
            raise self.fail_patch
        node = self.nodes[name]
        for key in ("labels", "annotations"):
            for k, v in (body.get("metadata") or {}).get(key, {}).items():
                if v is None:
                    node["metadata"].setdefault(key, {}).pop(k, None)
                else:
                    node["metadata"].setdefault(key, {})[k] = v
        node.setdefault("spec", {}).update(body.get("spec") or {})

    def patch_node_status(self, name, body, _content_type=None):
        self.calls.append(("patch_node_status", name, copy.deepcopy(body), _content_type))
        conditions = self.nodes[name].setdefault("status", {}).setdefault("conditions", [])
        for new in body["status"]["conditions"]:
            conditions[:] = [c for c in conditions if c["type"] != new["type"]] + [new]

    def create_namespaced_pod_eviction(self, name, namespace, body):
        self.calls.append(("create_namespaced_pod_eviction", namespace, name, _plain(body)))
        if (namespace, name) in self.refuse:
            raise ApiException(status=429, reason="Too Many Requests")
        for pods in self.pods.values():
            pods[:] = [p for p in pods if (p["metadata"]["namespace"], p["metadata"]["name"]) != (namespace, name)]

    def create_namespaced_event(self, namespace, body):
        self.calls.append(("create_namespaced_event", namespace, _plain(body)))

    def mutations(self):
        return [c for c in self.calls if c[0] in self.MUTATING]

    def events(self):
        return [c[2] for c in self.calls if c[0] == "create_namespaced_event"]


def controller(fake, policy):
    lines = []
    return ctl.Controller(ctl.ClusterApi(fake), policy, log=lines.append), lines


def test_controller_quarantines_with_exact_patch_event_and_metrics():
    fake = FakeCoreV1([make_node("gpu-a", fatal=("GpuXidFatal",))] + [make_node(f"ok-{i}") for i in range(4)])
    control, lines = controller(fake, CORDON)
    control.run_pass(NOW)
    assert fake.mutations() == [("patch_node", "gpu-a", {
        "metadata": {"annotations": {AT: "2026-11-25T04:00:00Z"}, "resourceVersion": "100"},
        "spec": {"unschedulable": True, "taints": [
            {"key": "gpu-platform.io/quarantined", "value": "GpuXidFatal", "effect": "NoSchedule"}]}},
        "application/strategic-merge-patch+json")]
    assert fake.events() == [{
        "apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "gpu-a.", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "gpu-a", "uid": "uid-gpu-a"},
        "reason": "GpuPlatformQuarantine",
        "message": "fatal condition GpuXidFatal: cordoned and tainted "
                   "gpu-platform.io/quarantined=GpuXidFatal:NoSchedule",
        "type": "Warning", "source": {"component": "gpu-platform-remediation"},
        "firstTimestamp": "2026-11-25T04:00:00+00:00", "lastTimestamp": "2026-11-25T04:00:00+00:00", "count": 1}]
    m = control.metrics
    assert m.value("gpu_platform_remediation_actions_total", action="quarantine", pool="h100", reason="GpuXidFatal",
                   dry_run="false") == 1
    assert m.value("gpu_platform_remediation_cap", pool="h100") == 1
    assert m.value("gpu_platform_unhealthy_nodes", pool="h100") == 1
    assert m.value("gpu_platform_remediation_last_pass_timestamp_seconds") == NOW.timestamp()
    # The next pass sees the taint: the gauge counts it and nothing is done twice.
    fake.calls.clear()
    control.run_pass(NOW + timedelta(minutes=1))
    assert fake.mutations() == [] and fake.events() == []
    assert m.value("gpu_platform_quarantined_nodes", pool="h100") == 1
    assert lines == ["quarantine gpu-a pool=h100: fatal condition GpuXidFatal: cordoned and tainted "
                     "gpu-platform.io/quarantined=GpuXidFatal:NoSchedule"]


def test_dry_run_records_decisions_and_changes_nothing():
    policy = RemediationPolicy(cooldown_minutes=0)  # dry-run, cap 1 per pool
    fake = FakeCoreV1([make_node("gpu-a", fatal=("GpuXidFatal",)), make_node("gpu-b")]
                      + [make_node(f"ok-{i}") for i in range(8)])
    control, _ = controller(fake, policy)
    control.run_pass(NOW)
    assert fake.mutations() == []
    assert [(e["reason"], e["involvedObject"]["name"], e["message"]) for e in fake.events()] == [
        ("GpuPlatformQuarantineDryRun", "gpu-a", "dry-run, not applied: fatal condition GpuXidFatal: cordoned and "
                                                 "tainted gpu-platform.io/quarantined=GpuXidFatal:NoSchedule")]
    assert control.metrics.value("gpu_platform_remediation_actions_total", action="quarantine", pool="h100",
                                 reason="GpuXidFatal", dry_run="true") == 1
    # Later passes decide as if gpu-a were quarantined: a second failure is beyond the cap of 1 (a storm), recorded
    # once however many passes see it.
    fake.nodes["gpu-b"]["status"]["conditions"].append(
        {"type": "GpuFellOffBus", "status": "True", "lastTransitionTime": stamp(NOW)})
    fake.calls.clear()
    control.run_pass(NOW + timedelta(minutes=1))
    control.run_pass(NOW + timedelta(minutes=2))
    assert fake.mutations() == []
    assert [(e["reason"], e["involvedObject"]["name"]) for e in fake.events()] == [
        ("GpuPlatformQuarantineSkippedDryRun", "gpu-b")]
    assert control.metrics.value("gpu_platform_remediation_skipped_total", pool="h100", why="storm") == 1
    assert control.metrics.value("gpu_platform_remediation_storm", pool="h100") == 1
    assert control.metrics.value("gpu_platform_quarantined_nodes", pool="h100") == 0


def test_drain_evicts_through_the_eviction_api_and_retries_a_refusal_next_pass():
    policy = RemediationPolicy(mode="drain", max_quarantined_per_pool=1, max_quarantined_percent=100,
                               cooldown_minutes=0)
    pods = {"gpu-a": [
        {"metadata": {"name": "train-0", "namespace": "team-a"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "serve-0", "namespace": "team-b"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "nvidia-dcgm-x", "namespace": "gpu-operator",
                      "ownerReferences": [{"kind": "DaemonSet", "name": "d", "apiVersion": "apps/v1", "uid": "u"}]},
         "status": {"phase": "Running"}}]}
    fake = FakeCoreV1([make_node("gpu-a", fatal=("GpuXidFatal",))], pods, refuse_evictions={("team-b", "serve-0")})
    control, lines = controller(fake, policy)
    control.run_pass(NOW)
    evictions = [c for c in fake.calls if c[0] == "create_namespaced_pod_eviction"]
    assert evictions == [
        ("create_namespaced_pod_eviction", "team-a", "train-0",
         {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "train-0", "namespace": "team-a"}}),
        ("create_namespaced_pod_eviction", "team-b", "serve-0",
         {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "serve-0", "namespace": "team-b"}})]
    assert [e["message"] for e in fake.events()][1:] == ["drain: evicted pod team-a/train-0 (GpuXidFatal)"]
    assert "evict team-b/serve-0 on gpu-a: refused by a disruption budget; next pass" in lines
    fake.refuse.clear()
    fake.calls.clear()
    control.run_pass(NOW + timedelta(minutes=1))
    assert [(c[1], c[2]) for c in fake.calls if c[0] == "create_namespaced_pod_eviction"] == [("team-b", "serve-0")]
    assert control.metrics.value("gpu_platform_remediation_actions_total", action="evict", pool="h100",
                                 reason="GpuXidFatal", dry_run="false") == 2


def test_release_after_a_passing_check_uncordons_only_our_nodes():
    quarantined = NOW - timedelta(hours=1)
    fake = FakeCoreV1([
        make_node("gpu-a", taint="GpuXidFatal", unschedulable=True, quarantined_at=quarantined, check="passed",
                  checked_at=NOW - timedelta(minutes=3)),
        make_node("gpu-b", unschedulable=True, check="passed", checked_at=NOW)])
    control, _ = controller(fake, CORDON)
    control.run_pass(NOW)
    assert fake.mutations() == [("patch_node", "gpu-a", {
        "metadata": {"annotations": {AT: None}, "resourceVersion": "100"},
        "spec": {"unschedulable": False, "taints": []}}, "application/strategic-merge-patch+json")]
    assert [(e["reason"], e["type"]) for e in fake.events()] == [("GpuPlatformRelease", "Normal")]
    assert fake.nodes["gpu-a"]["spec"] == {"unschedulable": False, "taints": []}
    assert AT not in fake.nodes["gpu-a"]["metadata"]["annotations"]


def test_a_refused_patch_is_counted_and_retried_without_an_event():
    fake = FakeCoreV1([make_node("gpu-a", fatal=("GpuXidFatal",))],
                      fail_patch=ApiException(status=409, reason="Conflict"))
    control, lines = controller(fake, CORDON)
    control.run_pass(NOW)
    assert fake.events() == []
    assert control.metrics.value("gpu_platform_remediation_errors_total", operation="quarantine") == 1
    assert lines == ["error: quarantine gpu-a: 409 Conflict"]
    fake.fail_patch = None
    control.run_pass(NOW + timedelta(minutes=1))
    assert [c[1] for c in fake.mutations()] == ["gpu-a", "gpu-a"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(node_sets(), st.integers(0, 4), st.integers(1, 100), st.integers(0, 60), st.integers(1, 4))
def test_property_dry_run_never_mutates_and_cordon_never_exceeds_the_cap_over_passes(nodes, per_pool, percent,
                                                                                     cooldown, passes):
    objects = []
    for n in nodes:
        obj = make_node(n.name, pool=n.pool, fatal=n.fatal, check=n.health_check, checked_at=n.checked_at)
        objects.append(obj)
    for mode in ("dry-run", "cordon"):
        policy = RemediationPolicy(mode=mode, max_quarantined_per_pool=per_pool, max_quarantined_percent=percent,
                                   cooldown_minutes=cooldown)
        fake = FakeCoreV1(objects)
        control, _ = controller(fake, policy)
        for step in range(passes):
            control.run_pass(NOW + timedelta(minutes=45 * step))
            for pool in {n.pool for n in nodes if n.pool}:
                members = [o for o in fake.nodes.values() if o["metadata"]["labels"].get(POOL) == pool]
                tainted = sum(1 for o in members if any(t["key"] == TAINT for t in o["spec"].get("taints", [])))
                simulated = sum(1 for name in control.simulated if fake.nodes[name]["metadata"]["labels"].get(POOL)
                                == pool)
                assert tainted + simulated <= pool_cap(len(members), policy)
        if mode == "dry-run":
            assert fake.mutations() == []


def test_cli_remediate_once(tmp_path, monkeypatch, capsys):
    config = tmp_path / "remediation.json"
    config.write_text(json.dumps({"mode": "cordon", "maxQuarantinedPerPool": 1, "maxQuarantinedPercent": 50,
                                  "cooldownMinutes": 0}))
    fake = FakeCoreV1([make_node("gpu-a", fatal=("GpuFellOffBus",)), make_node("gpu-b")])
    monkeypatch.setattr(ctl, "core_v1_api", lambda kubeconfig: fake)
    assert main(["remediate", "--config", str(config), "--once", "--metrics-port", "0"]) == 0
    assert [c[1] for c in fake.mutations()] == ["gpu-a"]
    assert fake.nodes["gpu-a"]["spec"]["unschedulable"] is True
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "remediation: mode=cordon cap=1/pool, 50% cool-down=0m interval=60s"


def test_cli_remediate_bad_config_and_api_failure(tmp_path, capsys):
    config = tmp_path / "remediation.json"
    config.write_text(json.dumps({"mode": "cordon", "cooldown": 5}))
    args = ctl.build_parser().parse_args(["--config", str(config), "--once", "--metrics-port", "0"])
    assert ctl.run(args, api_factory=lambda k: FakeCoreV1()) == 2
    assert capsys.readouterr().err.strip() == (
        "error: remediation config: cooldown: unknown key (known: cooldownMinutes, fatalConditions, "
        "intervalSeconds, maxQuarantinedPerPool, maxQuarantinedPercent, mode, poolLabel, releaseAfterPassingCheck)")
    config.write_text("{}")

    class Down(FakeCoreV1):
        def list_node(self):
            raise ApiException(status=503, reason="Service Unavailable")

    assert ctl.run(args, api_factory=lambda k: Down()) == 1
    assert capsys.readouterr().err.splitlines()[-1] == "error: Kubernetes API: 503 Service Unavailable"


def test_the_loop_sleeps_the_interval_between_passes(tmp_path):
    config = tmp_path / "remediation.json"
    config.write_text(json.dumps({"intervalSeconds": 15}))
    args = ctl.build_parser().parse_args(["--config", str(config), "--metrics-port", "0"])
    slept = []

    class Stop(Exception):
        pass

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) == 3:
            raise Stop

    fake = FakeCoreV1([make_node("gpu-a")])
    with pytest.raises(Stop):
        ctl.run(args, api_factory=lambda k: fake, sleep=sleep, err=io.StringIO())
    assert slept == [15, 15, 15]
    assert [c[0] for c in fake.calls] == ["list_node"] * 3


def test_shuffled_node_lists_give_the_same_patches():
    nodes = [make_node(f"gpu-{i}", fatal=("GpuXidFatal",) if i % 3 == 0 else ()) for i in range(12)]
    results = []
    for seed in range(3):
        shuffled = list(nodes)
        random.Random(seed).shuffle(shuffled)
        fake = FakeCoreV1(shuffled)
        control, _ = controller(fake, CORDON)
        control.run_pass(NOW)
        results.append(fake.mutations())
    assert results[0] == results[1] == results[2]
    assert [c[1] for c in results[0]] == ["gpu-0", "gpu-3"]


def test_the_real_client_sends_strategic_merge_patches_and_typed_bodies(monkeypatch):
    """Through the installed kubernetes client down to the HTTP call: content type, path and serialised bodies."""
    from kubernetes import client

    sent = []

    class Sent(Exception):
        pass

    def call_api(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        sent.append((method, url.removeprefix("https://k8s.example"), (header_params or {}).get("Content-Type"),
                     body))
        raise Sent

    monkeypatch.setattr(client.ApiClient, "call_api", call_api)
    api = ctl.ClusterApi(client.CoreV1Api(client.ApiClient(client.Configuration(host="https://k8s.example"))))
    node = make_node("gpu-a")
    calls = (lambda: api.patch_node("gpu-a", quarantine_patch(node, "GpuXidFatal", NOW)),
             lambda: api.patch_node_status("gpu-a", {"status": {"conditions": []}}),
             lambda: api.evict("team-a", "train-0"),
             lambda: api.record_event(ctl.event_body(node, "GpuPlatformQuarantine", "m", True, NOW)))
    for call in calls:
        with pytest.raises(Sent):
            call()
    assert [(m, u, c) for m, u, c, _ in sent] == [
        ("PATCH", "/api/v1/nodes/gpu-a", "application/strategic-merge-patch+json"),
        ("PATCH", "/api/v1/nodes/gpu-a/status", "application/strategic-merge-patch+json"),
        # POSTs name no content type here: the client's REST layer sends JSON.
        ("POST", "/api/v1/namespaces/team-a/pods/train-0/eviction", None),
        ("POST", "/api/v1/namespaces/default/events", None)]
    assert sent[0][3] == quarantine_patch(node, "GpuXidFatal", NOW)
    assert sent[2][3] == {"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": "train-0", "namespace": "team-a"}}
    assert sent[3][3]["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "gpu-a", "uid": "uid-gpu-a"}
    assert (sent[3][3]["reason"], sent[3][3]["source"]) == ("GpuPlatformQuarantine",
                                                           {"component": "gpu-platform-remediation"})


def test_the_health_components_config_is_what_the_controller_reads(tmp_path):
    """The contract with the health layer: the JSON its ConfigMap carries parses to the policy it describes."""
    from gpu_platform.health import health_objects

    spec = health_objects.HealthSpec(pools=(), mode="drain", max_quarantined_per_pool=2, max_quarantined_percent=25,
                                     cooldown_minutes=15)
    config = tmp_path / "remediation.json"
    config.write_text(health_objects.remediation_config_map(spec)["data"]["remediation.json"])
    assert load_policy(config) == RemediationPolicy(
        mode="drain", max_quarantined_per_pool=2, max_quarantined_percent=25, cooldown_minutes=15,
        fatal_conditions=(*health_catalog.fatal_conditions(), "GpuHealthCheckFailed"),
        pool_label="gpu-platform.io/pool", interval_seconds=60, release_after_passing_check=True)
