"""GPU optimizer: pure decisions, failure modes, and a real Prometheus scraping a DCGM-format exporter."""

import concurrent.futures
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes.client import (
    V1Deployment,
    V1DeploymentSpec,
    V1LabelSelector,
    V1ObjectMeta,
    V1OwnerReference,
    V1Pod,
    V1PodList,
    V1PodTemplateSpec,
    V1ReplicaSet,
    V1ReplicaSetList,
    V1ReplicaSetSpec,
    V2CrossVersionObjectReference,
    V2HorizontalPodAutoscaler,
    V2HorizontalPodAutoscalerList,
    V2HorizontalPodAutoscalerSpec,
)
from kubernetes.client import V1DeploymentList as DeploymentList

from gpu_platform import labels
from gpu_platform.optimizer import run as optimizer
from gpu_platform.optimizer.analysis import recommend
from gpu_platform.optimizer.local_prometheus import AmdGpuSeries, GpuSeries, LocalPrometheus, free_port
from gpu_platform.optimizer.policy import Policy, PolicyError, PoolOption, policy_from_mapping, policy_to_mapping
from gpu_platform.optimizer.prometheus import Sample
from gpu_platform.optimizer.queries import merge, pod_queries, signal_queries

OPT_IN = {labels.OPT_IN_LABEL: "true"}


# ---------------------------------------------------------------------------------------------------------
# A fake Kubernetes API at the client boundary (real client model objects, recorded patches)


def _deployment_pod(ns, pod, deployment, pod_labels=None):
    rs = f"{deployment}-5d9c7"
    return V1Pod(metadata=V1ObjectMeta(
        namespace=ns, name=pod, labels=pod_labels or {},
        owner_references=[V1OwnerReference(api_version="apps/v1", kind="ReplicaSet", name=rs, uid="u",
                                           controller=True)]))


class FakeCluster:
    """CoreV1Api / AppsV1Api / AutoscalingV2Api stand-ins that serve a fixed inventory and record patches."""

    def __init__(self, deployments, hpas=()):
        # deployments: {(ns, name): (labels, replicas, annotations, [pod names])}
        self.deployments = deployments
        self.hpas = hpas
        self.patches = []
        self.list_calls = 0

    def factory(self, kubeconfig):
        return self, self, self

    def list_pod_for_all_namespaces(self, field_selector):
        assert field_selector == "status.phase=Running"
        self.list_calls += 1
        pods = [_deployment_pod(ns, pod, name, labels_)
                for (ns, name), (labels_, _, _, pods_) in self.deployments.items() for pod in pods_]
        return V1PodList(items=pods)

    def list_replica_set_for_all_namespaces(self):
        self.list_calls += 1
        return V1ReplicaSetList(items=[
            V1ReplicaSet(metadata=V1ObjectMeta(namespace=ns, name=f"{name}-5d9c7", owner_references=[
                V1OwnerReference(api_version="apps/v1", kind="Deployment", name=name, uid="d", controller=True)]),
                spec=V1ReplicaSetSpec(selector=V1LabelSelector()))
            for (ns, name) in self.deployments])

    def list_deployment_for_all_namespaces(self):
        self.list_calls += 1
        return DeploymentList(items=[
            V1Deployment(metadata=V1ObjectMeta(namespace=ns, name=name, labels=labels_, annotations=annotations),
                         spec=V1DeploymentSpec(replicas=replicas, selector=V1LabelSelector(),
                                               template=V1PodTemplateSpec()))
            for (ns, name), (labels_, replicas, annotations, _) in self.deployments.items()])

    def list_horizontal_pod_autoscaler_for_all_namespaces(self):
        self.list_calls += 1
        return V2HorizontalPodAutoscalerList(items=[
            V2HorizontalPodAutoscaler(
                metadata=V1ObjectMeta(namespace=ns, name=name), spec=V2HorizontalPodAutoscalerSpec(
                min_replicas=minimum, max_replicas=10,
                scale_target_ref=V2CrossVersionObjectReference(kind="Deployment", name=name, api_version="apps/v1")))
            for ns, name, minimum in self.hpas])

    def patch_namespaced_deployment(self, name, namespace, body):
        self.patches.append((namespace, name, body))


def args(url, *extra):
    parser = optimizer.build_parser()
    return parser.parse_args(["--prometheus", url, "--output", "json", *extra])


def run_json(url, cluster, *extra):
    out, err = io.StringIO(), io.StringIO()
    code = optimizer.run(args(url, *extra), apis_factory=cluster.factory, out=out, err=err)
    return code, (json.loads(out.getvalue()) if out.getvalue() else None), err.getvalue()


# ---------------------------------------------------------------------------------------------------------
# Real Prometheus


SERIES = [
    GpuSeries("team-a", "chat-7f9-abc", 0, 2.0, 1200),          # idle, opted in (Deployment chat)
    GpuSeries("team-a", "chat-7f9-def", 0, 3.0, 1300),          # idle, opted in (same Deployment)
    GpuSeries("team-a", "embed-55c-xyz", 0, 85.0, 30000),       # busy, opted in
    GpuSeries("team-a", "batch-12a-qqq", 0, 1.0, 500),          # idle, NOT opted in
    GpuSeries("team-b", "llm-8c1-aaa", 0, 4.0, 9000),           # idle, opted in, 2 GPUs
    GpuSeries("team-b", "llm-8c1-aaa", 1, 6.0, 9000),
    GpuSeries("monitoring", "probe-1-zz", 0, 0.0, 100),         # idle, opted in, excluded namespace
]

DEPLOYMENTS = {
    ("team-a", "chat"): (OPT_IN, 3, {}, ["chat-7f9-abc", "chat-7f9-def"]),
    ("team-a", "embed"): (OPT_IN, 2, {}, ["embed-55c-xyz"]),
    ("team-a", "batch"): ({}, 1, {}, ["batch-12a-qqq"]),
    ("team-b", "llm"): (OPT_IN, 2, {}, ["llm-8c1-aaa"]),
    ("monitoring", "probe"): (OPT_IN, 1, {}, ["probe-1-zz"]),
}

POLICY_ARGS = ["--window", "1m"]


@pytest.fixture(scope="module")
def servers():
    """This file's two local Prometheus servers (NVIDIA series; two of them beside AMD series), started side by side:
    each waits about 5 s for its first scrape (Prometheus's scrape manager applies new targets at most every 5 s), so
    the file waits once instead of twice."""
    nvidia, amd = LocalPrometheus(SERIES), LocalPrometheus(SERIES[:2], amd_series=AMD_SERIES)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        started = [pool.submit(server.start, 60) for server in (nvidia, amd)]
    try:
        for future in started:
            future.result()
        yield nvidia, amd
    finally:
        for server, future in zip((nvidia, amd), started, strict=True):
            if future.exception() is None:
                server.stop()


@pytest.fixture(scope="module")
def prometheus(servers, tmp_path_factory):
    policy = tmp_path_factory.mktemp("policy") / "policy.yaml"
    policy.write_text("minObservation: 0s\nstep: 1s\n")
    return servers[0], str(policy)


def test_report_names_exactly_the_idle_opted_in_pods(prometheus):
    server, policy = prometheus
    cluster = FakeCluster(DEPLOYMENTS)
    code, report, _ = run_json(server.url, cluster, "--policy", policy, *POLICY_ARGS)
    assert code == 0
    idle = sorted((f["namespace"], f["pod"]) for f in report["findings"] if f["idle"] and f["opted_in"])
    assert idle == [("team-a", "chat-7f9-abc"), ("team-a", "chat-7f9-def"), ("team-b", "llm-8c1-aaa")]
    reasons = {f["pod"]: f["reason"] for f in report["findings"]}
    assert reasons["embed-55c-xyz"] == "busy"
    assert reasons["batch-12a-qqq"] == "idle, not opted in"
    assert reasons["probe-1-zz"] == "excluded namespace"
    llm = next(f for f in report["findings"] if f["pod"] == "llm-8c1-aaa")
    assert (llm["gpus"], llm["utilization"], llm["memory_used_mib"]) == (2, 5.0, 18000)
    assert llm["owner_kind"] == "Deployment" and llm["owner_name"] == "llm"
    assert report["queries"] == 4 and cluster.list_calls == 4
    assert report["actions"] == [] and cluster.patches == []


def test_annotate_dry_run_changes_nothing_and_apply_patches_only_opted_in_owners(prometheus):
    server, policy = prometheus
    cluster = FakeCluster(DEPLOYMENTS)
    code, report, _ = run_json(server.url, cluster, "--policy", policy, "--action", "annotate", *POLICY_ARGS)
    assert code == 0 and cluster.patches == []
    assert [(a["name"], a["outcome"]) for a in report["actions"]] == [("chat", "dry-run"), ("llm", "dry-run")]
    code, report, _ = run_json(server.url, cluster, "--policy", policy, "--action", "annotate", "--apply", *POLICY_ARGS)
    assert code == 0
    assert [(ns, name) for ns, name, _ in cluster.patches] == [("team-a", "chat"), ("team-b", "llm")]
    body = json.loads(cluster.patches[0][2]["metadata"]["annotations"][labels.RECOMMENDATION_ANNOTATION])
    assert body["idlePods"] == ["chat-7f9-abc", "chat-7f9-def"]


def test_scale_down_respects_hpa_min_replicas_and_is_idempotent(prometheus):
    server, policy = prometheus
    cluster = FakeCluster(DEPLOYMENTS, hpas=[("team-b", "llm", 2)])
    code, report, _ = run_json(server.url, cluster, "--policy", policy, "--action", "scale-down", "--apply",
                               *POLICY_ARGS)
    assert code == 0
    assert cluster.patches == [("team-a", "chat", {
        "metadata": {"annotations": {labels.LAST_ACTION_ANNOTATION: cluster.patches[0][2]["metadata"]["annotations"][
            labels.LAST_ACTION_ANNOTATION]}}, "spec": {"replicas": 2}})]
    outcomes = {a["name"]: a["outcome"] for a in report["actions"]}
    assert outcomes["llm"] == "skipped: at 2 replicas, not above HPA minReplicas 2"
    # The owner now carries the last-action stamp: a second run inside the cooldown changes nothing.
    stamp = cluster.patches[0][2]["metadata"]["annotations"][labels.LAST_ACTION_ANNOTATION]
    later = FakeCluster({**DEPLOYMENTS, ("team-a", "chat"): (OPT_IN, 2, {labels.LAST_ACTION_ANNOTATION: stamp},
                                                              ["chat-7f9-abc", "chat-7f9-def"])},
                        hpas=[("team-b", "llm", 2)])
    code, report, _ = run_json(server.url, later, "--policy", policy, "--action", "scale-down", "--apply", *POLICY_ARGS)
    assert code == 0 and later.patches == []
    assert {a["name"]: a["outcome"] for a in report["actions"]}["chat"] == "skipped: in cooldown (6h)"


# ---------------------------------------------------------------------------------------------------------
# Failure modes: non-zero exit, clear message, no Kubernetes call


class _Bad(BaseHTTPRequestHandler):
    mode = "garbage"

    def do_POST(self):
        if self.server.mode == "slow":
            threading.Event().wait(3)
        status, body = {"garbage": (200, b"<html>not prometheus</html>"),
                        "error": (500, b"oops"),
                        "wrong-shape": (200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}'),
                        "slow": (200, b"{}")}[self.server.mode]
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *a):
        pass


@pytest.mark.parametrize(("mode", "message"), [
    ("unreachable", "is unreachable or too slow"),
    ("slow", "is unreachable or too slow: timed out"),
    ("garbage", "returned something that is not JSON"),
    ("error", "answered HTTP 500"),
    ("wrong-shape", "returned no instant vector"),
])
def test_prometheus_failures_exit_non_zero_without_touching_kubernetes(mode, message):
    cluster = FakeCluster(DEPLOYMENTS)
    server = None
    if mode == "unreachable":
        url = f"http://127.0.0.1:{free_port()}"
    else:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Bad)
        server.daemon_threads = True
        server.mode = mode
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        code, report, err = run_json(url, cluster, "--timeout", "1", "--action", "scale-down", "--apply")
    finally:
        if server:
            server.shutdown()
            server.server_close()
    assert code == optimizer.EXIT_PROMETHEUS
    assert message in err and err.strip().endswith("no action taken") and err.count("\n") == 1
    assert report is None and cluster.list_calls == 0 and cluster.patches == []


# An AMD node beside the NVIDIA one: the policy reads both vendors' signals, four queries each.
AMD_SERIES = (
    AmdGpuSeries("team-c", "mi-idle-7d4-aaa", 0, 1.0, 2048),      # idle, opted in, 2 GPUs
    AmdGpuSeries("team-c", "mi-idle-7d4-aaa", 1, 3.0, 2048),
    AmdGpuSeries("team-c", "mi-busy-3e1-bbb", 2, 92.0, 150000),   # busy
)
AMD_DEPLOYMENTS = {**DEPLOYMENTS, ("team-c", "mi-idle"): (OPT_IN, 1, {}, ["mi-idle-7d4-aaa"]),
                   ("team-c", "mi-busy"): (OPT_IN, 1, {}, ["mi-busy-3e1-bbb"])}


@pytest.fixture(scope="module")
def amd_prometheus(servers, tmp_path_factory):
    policy = tmp_path_factory.mktemp("policy") / "policy.yaml"
    policy.write_text("minObservation: 0s\nstep: 1s\nvendors: [nvidia, amd]\naction: recommend\n"
                      "pools:\n- {name: mi300x, gpuMemoryGiB: 192, vendor: amd}\n- {name: l4, gpuMemoryGiB: 24}\n")
    return servers[1], str(policy)


def test_an_idle_amd_pod_is_found_from_the_amd_exporters_series(amd_prometheus):
    server, policy = amd_prometheus
    code, report, _ = run_json(server.url, FakeCluster(AMD_DEPLOYMENTS), "--policy", policy, *POLICY_ARGS)
    assert code == 0
    found = {f["pod"]: f for f in report["findings"]}
    assert sorted(found) == ["chat-7f9-abc", "chat-7f9-def", "mi-busy-3e1-bbb", "mi-idle-7d4-aaa"]
    idle = found["mi-idle-7d4-aaa"]
    assert (idle["vendor"], idle["gpus"], idle["utilization"], idle["memory_used_mib"], idle["reason"]) == (
        "amd", 2, 2.0, 4096, "idle")
    assert (idle["owner_kind"], idle["owner_name"]) == ("Deployment", "mi-idle")
    # Fewer GPUs is the first answer; never a pool of the other vendor.
    assert idle["recommendation"] == {"action": "reduce-gpus", "from": 2, "to": 1}
    assert (found["mi-busy-3e1-bbb"]["vendor"], found["mi-busy-3e1-bbb"]["reason"]) == ("amd", "busy")
    assert (found["chat-7f9-abc"]["vendor"], found["chat-7f9-abc"]["reason"]) == ("nvidia", "idle")
    assert report["queries"] == 8  # four per signal, however many pods


# ---------------------------------------------------------------------------------------------------------
# Pure pieces


def test_each_vendors_signal_is_four_queries_of_its_own_metrics():
    amd = pod_queries(Policy(window="2h", step="30s"), "amd")
    assert amd.all() == [
        'avg by (namespace, pod) (avg_over_time(gpu_gfx_activity{pod!=""}[2h]))',
        'sum by (namespace, pod) (max_over_time(gpu_used_vram{pod!=""}[2h]))',
        'min by (namespace, pod) (min_over_time(timestamp(gpu_gfx_activity{pod!=""})[2h:30s]))',
        'count by (namespace, pod) (gpu_gfx_activity{pod!=""})',
    ]
    assert pod_queries(Policy(window="2h", step="30s")).all() == [
        'avg by (namespace, pod) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[2h]))',
        'sum by (namespace, pod) (max_over_time(DCGM_FI_DEV_FB_USED{pod!=""}[2h]))',
        'min by (namespace, pod) (min_over_time(timestamp(DCGM_FI_DEV_GPU_UTIL{pod!=""})[2h:30s]))',
        'count by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{pod!=""})',
    ]
    both = signal_queries(Policy(vendors=("nvidia", "amd")))
    assert [q.gpus for q in both] == ['count by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{pod!=""})',
                                      'count by (namespace, pod) (gpu_gfx_activity{pod!=""})']
    assert signal_queries(Policy()) == [pod_queries(Policy())]


def _s(ns, pod, value):
    return Sample({"namespace": ns, "pod": pod}, value)


def test_merge_joins_the_vendors_answers_per_pod():
    nvidia = [[_s("a", "p", 10.0), _s("a", "both", 40.0)], [_s("a", "p", 100.0), _s("a", "both", 1000.0)],
              [_s("a", "p", 50.0), _s("a", "both", 70.0)], [_s("a", "p", 1.0), _s("a", "both", 1.0)]]
    amd = [[_s("b", "q", 5.0), _s("a", "both", 10.0)], [_s("b", "q", 7.0), _s("a", "both", 3000.0)],
           [_s("b", "q", 60.0), _s("a", "both", 20.0)], [_s("b", "q", 2.0), _s("a", "both", 3.0)]]
    facts = merge([("nvidia", nvidia), ("amd", amd)], Policy())

    def by_pod(samples):
        return {(x.labels["namespace"], x.labels["pod"]): x.value for x in samples}

    assert by_pod(facts.utilization) == {("a", "p"): 10.0, ("a", "both"): 17.5, ("b", "q"): 5.0}  # (40+3*10)/4
    assert by_pod(facts.memory_used_mib) == {("a", "p"): 100.0, ("a", "both"): 4000.0, ("b", "q"): 7.0}
    assert by_pod(facts.first_seen) == {("a", "p"): 50.0, ("a", "both"): 20.0, ("b", "q"): 60.0}
    assert by_pod(facts.gpus) == {("a", "p"): 1.0, ("a", "both"): 4.0, ("b", "q"): 2.0}
    assert facts.vendor == {("a", "p"): "nvidia", ("a", "both"): "nvidia", ("b", "q"): "amd"}


def test_policy_round_trip_keeps_nvidia_implicit():
    mixed = Policy(vendors=("nvidia", "amd"), pools=(PoolOption("mi", 192, vendor="amd"), PoolOption("l4", 24)))
    raw = policy_to_mapping(mixed)
    assert raw["vendors"] == ["nvidia", "amd"]
    assert raw["pools"] == [{"name": "mi", "gpuMemoryGiB": 192, "shared": False, "vendor": "amd"},
                            {"name": "l4", "gpuMemoryGiB": 24, "shared": False}]
    assert policy_from_mapping(raw) == mixed
    assert "vendors" not in policy_to_mapping(Policy())
    assert policy_from_mapping(policy_to_mapping(Policy())) == Policy()


def test_recommendations_stay_within_the_pods_vendor():
    pools = (PoolOption("l4", 24), PoolOption("mi300x", 192, vendor="amd"))
    assert recommend(1, 5.0, 10000, pools) == {"action": "move-to-smaller-gpu", "pool": "l4", "gpuMemoryGiB": 24}
    assert recommend(1, 5.0, 10000, pools, "amd") == {"action": "move-to-smaller-gpu", "pool": "mi300x",
                                                      "gpuMemoryGiB": 192}
    assert recommend(1, 5.0, 10000, (PoolOption("l4", 24),), "amd")["action"] == "review"


def test_queries_are_constant_and_aggregate_by_pod():
    queries = pod_queries(Policy(window="2h"))
    assert queries.utilization == 'avg by (namespace, pod) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{pod!=""}[2h]))'
    prof = pod_queries(Policy(metric="DCGM_FI_PROF_GR_ENGINE_ACTIVE", pod_label="exported_pod",
                              namespace_label="exported_namespace"))
    assert prof.utilization.endswith(") * 100")
    assert "by (exported_namespace, exported_pod)" in prof.gpus
    assert len(queries.all()) == 4


def test_recommendations():
    pools = (PoolOption("l4-shared", 24, shared=True), PoolOption("l40s", 48), PoolOption("h100", 80))
    assert recommend(8, 10.0, 20000, pools) == {"action": "reduce-gpus", "from": 8, "to": 2}
    assert recommend(1, 5.0, 10000, pools) == {"action": "move-to-shared-pool", "pool": "l4-shared", "gpuMemoryGiB": 24}
    assert recommend(1, 5.0, 30000, pools) == {"action": "move-to-smaller-gpu", "pool": "l40s", "gpuMemoryGiB": 48}
    assert recommend(1, 5.0, 90000, pools)["action"] == "review"


@pytest.mark.parametrize(("raw", "message"), [
    ({"action": "delete"}, "action: 'delete' is not one of report, annotate, scale-down, recommend"),
    ({"utilizationThreshold": 150}, "utilizationThreshold: must be between 0 and 100, got 150.0"),
    ({"window": "an hour"}, "window: 'an hour' is not a duration such as 30m, 6h or 1d"),
    ({"colour": "red"}, "colour: unknown policy key"),
    ({"excludedLabels": ["batch"]}, "excludedLabels: 'batch' is not key=value"),
    ({"vendors": ["aws-neuron"]}, "vendors: ['aws-neuron'] must be one or more of nvidia, amd (the vendors with a "
                                  "per-pod utilisation metric)"),
    ({"vendors": []}, "vendors: [] must be one or more of nvidia, amd (the vendors with a per-pod utilisation "
                      "metric)"),
    ({"pools": [{"name": "x", "gpuMemoryGiB": 8, "vendor": "intel"}]}, "pools: 'x' has unknown vendor 'intel'"),
])
def test_bad_policy_values_are_named(raw, message):
    with pytest.raises(PolicyError) as err:
        policy_from_mapping(raw)
    assert str(err.value) == message


def test_bad_policy_file_exits_2(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("action: delete\n")
    err = io.StringIO()
    code = optimizer.run(args("http://127.0.0.1:1", "--policy", str(path)), apis_factory=None, out=io.StringIO(),
                         err=err)
    assert code == optimizer.EXIT_USAGE
    assert err.getvalue() == "error: policy: action: 'delete' is not one of report, annotate, scale-down, recommend\n"


def test_metrics_file_is_written(prometheus, tmp_path):
    server, policy = prometheus
    metrics = tmp_path / "metrics.prom"
    code, _, _ = run_json(server.url, FakeCluster(DEPLOYMENTS), "--policy", policy, "--metrics-file", str(metrics),
                          *POLICY_ARGS)
    text = metrics.read_text()
    assert code == 0
    assert "gpu_optimizer_idle_pods 3.0" in text and "gpu_optimizer_queries 4.0" in text
    assert "gpu_optimizer_idle_gpus 5.0" in text  # chat x2, llm x2, batch x1 (not opted in but still wasted)


def test_console_script_has_the_optimize_command():
    from gpu_platform import cli

    parsed = cli.build_parser().parse_args(["optimize", "--prometheus", "http://p:9090", "--action", "recommend"])
    assert parsed.func is optimizer.run and parsed.action == "recommend"
