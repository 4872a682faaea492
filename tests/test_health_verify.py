"""``gpu-platform verify``: the pure checks over fetched objects (pass and fail per check), the objects a run creates,
the report and exit codes, the help text, and the orchestration against an in-memory cluster (creation, labels,
deletion when a check raises, on timeout, on Ctrl-C and SIGTERM)."""

import json
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpu_platform import cli, labels, verify, verify_live
from gpu_platform.verify import FAIL, PASS, SKIP

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data" / "health"
RUN = "0a1b2c3d"


def stack(name: str):
    return verify.load_stack(None, ROOT / "stacks" / f"Pulumi.{name}.yaml")[1]


def pools_of(name: str) -> dict:
    return {p.name: p for p in stack(name).gpu_pools()}


def fixture(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def node(name: str, pool: str, allocatable: dict, taints=(("nvidia.com/gpu", "present", "NoSchedule"),),
         ready: bool = True, extra_labels=None) -> dict:
    """A Node as the API returns it (the fields the checks read)."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {labels.POOL_LABEL: pool, "kubernetes.io/hostname": name,
                                              **(extra_labels or {})}},
        "spec": {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]},
        "status": {"allocatable": {"cpu": "191450m", "memory": "2058830732Ki", "pods": "100", **allocatable},
                   "conditions": [{"type": "MemoryPressure", "status": "False"},
                                  {"type": "Ready", "status": "True" if ready else "False"}]},
    }


P5 = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}


# --- nodes ----------------------------------------------------------------------------------------------------

def test_nodes_pass_with_allocatable_and_taints():
    pool = pools_of("aws-dev")["h100-train"]
    nodes = [node("ip-10-0-1-5", "h100-train", P5), node("ip-10-0-1-6", "h100-train", P5),
             node("ip-10-0-9-9", "l4-infer", {"nvidia.com/gpu": "1"})]
    result = verify.check_pool_nodes(pool, nodes)
    assert (result.name, result.target, result.status) == ("nodes", "h100-train", PASS)
    assert result.detail == ("2 Ready (minimum 2): nvidia.com/gpu 8, vpc.amazonaws.com/efa 32; "
                             "taints nvidia.com/gpu=present:NoSchedule")
    assert result.data == {"nodes": 2, "ready": 2}


@pytest.mark.parametrize("nodes,detail", [
    ([node("a", "h100-train", P5)], "1 Ready of minimum 2"),
    ([node("a", "h100-train", P5), node("b", "h100-train", P5, ready=False)], "1 Ready of minimum 2; b not Ready"),
    ([node("a", "h100-train", P5), node("b", "h100-train", {**P5, "vpc.amazonaws.com/efa": "16"})],
     "b allocatable vpc.amazonaws.com/efa 16, expected == 32"),
    ([node("a", "h100-train", P5), node("b", "h100-train", {"vpc.amazonaws.com/efa": "32"})],
     "b allocatable nvidia.com/gpu 0, expected == 8"),
    ([node("a", "h100-train", P5), node("b", "h100-train", P5, taints=())],
     "b lacks taint nvidia.com/gpu=present:NoSchedule"),
    ([], "no node with gpu-platform.io/pool=h100-train (minimum 2)"),
])
def test_nodes_fail(nodes, detail):
    result = verify.check_pool_nodes(pools_of("aws-dev")["h100-train"], nodes)
    assert (result.status, result.detail) == (FAIL, detail)


def test_scale_from_zero_pool_without_node_is_skipped():
    result = verify.check_pool_nodes(pools_of("aws-dev")["l4-spot"], [node("x", "l4-infer", {"nvidia.com/gpu": "1"})])
    assert (result.status, result.detail) == (SKIP, "no node now (scale-from-zero pool, minimum 0)")


def test_node_that_failed_its_health_check_is_named():
    failed = {labels.HEALTH_CHECK_LABEL: "failed"}
    nodes = [node("a", "h100-train", P5), node("b", "h100-train", P5, extra_labels=failed)]
    result = verify.check_pool_nodes(pools_of("aws-dev")["h100-train"], nodes)
    assert result.status == PASS and result.detail.endswith("; failed last health check: b")


def test_expected_allocatable_per_fabric_and_vendor():
    assert verify.expected_allocatable(pools_of("aws-dev")["h100-train"]) == {
        "nvidia.com/gpu": ("==", 8), "vpc.amazonaws.com/efa": ("==", 32)}
    assert verify.expected_allocatable(pools_of("oci-mi300x")["mi300x-train"]) == {
        "amd.com/gpu": ("==", 8), "rdma/roce": (">=", 1)}
    assert verify.expected_allocatable(pools_of("gcp-dev")["l4-infer"]) == {"nvidia.com/gpu": ("==", 4)}  # time-slicing
    assert verify.expected_allocatable(pools_of("aws-neuron")["inf2-infer"]) == {
        "aws.amazon.com/neuron": ("==", 1), "aws.amazon.com/neuroncore": ("==", 2)}


# --- accelerator software -------------------------------------------------------------------------------------

def daemonset(name: str, namespace: str, desired: int, ready: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace},
            "status": {"desiredNumberScheduled": desired, "numberReady": ready, "currentNumberScheduled": desired}}


def test_expected_software_per_stack():
    aws = stack("aws-dev")
    assert [(e.namespace, e.what, e.name_contains) for e in verify.expected_software(aws, aws.gpu_pools())] == [
        ("gpu-operator", "NVIDIA device plugin", ""), ("kube-system", "EFA device plugin", "efa")]
    oci = stack("oci-mi300x")
    assert [(e.namespace, e.what) for e in verify.expected_software(oci, oci.gpu_pools())] == [
        ("kube-amd-gpu", "AMD GPU Operator"), ("nvidia-network-operator", "NVIDIA network operator")]
    gcp = stack("gcp-dev")
    assert [(e.namespace, e.name_contains) for e in verify.expected_software(gcp, gcp.gpu_pools())] == [
        ("kube-system", "nvidia")]


def test_daemonsets_pass_and_fail():
    expectation = verify.SoftwareExpectation("kube-system", "EFA device plugin", "efa")
    sets = [daemonset("aws-efa-k8s-device-plugin", "kube-system", 2, 2), daemonset("kube-proxy", "kube-system", 5, 4)]
    ok = verify.check_daemonsets(expectation, sets)
    assert (ok.status, ok.detail) == (PASS, "EFA device plugin: 1 DaemonSets ready (aws-efa-k8s-device-plugin)")
    bad = verify.check_daemonsets(expectation, [daemonset("aws-efa-k8s-device-plugin", "kube-system", 2, 1)])
    assert (bad.status, bad.detail) == (FAIL, "EFA device plugin: aws-efa-k8s-device-plugin 1/2 ready")
    none = verify.check_daemonsets(verify.SoftwareExpectation("gpu-operator", "GPU Operator"), [])
    assert (none.status, none.detail) == (FAIL, "no DaemonSet (GPU Operator)")


# --- smoke ----------------------------------------------------------------------------------------------------

def test_smoke_pod_of_an_nvidia_pool():
    pool = pools_of("aws-dev")["h100-train"]
    (pod,) = verify.smoke_objects(pool, "gpu-platform-verify-0a1b2c3d", RUN)
    assert pod["metadata"] == {"name": "smoke-h100-train", "namespace": "gpu-platform-verify-0a1b2c3d",
                               "labels": {labels.VERIFY_RUN_LABEL: RUN}}
    spec = pod["spec"]
    assert spec["nodeSelector"] == {labels.POOL_LABEL: "h100-train"}
    assert spec["tolerations"] == pool.tolerations
    (container,) = spec["containers"]
    assert container["image"].startswith("nvcr.io/nvidia/pytorch:26.06-py3")
    assert container["command"] == ["nvidia-smi", "-L"]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 1}}


def test_smoke_pod_of_an_amd_pool_runs_rocm_smi():
    (pod,) = verify.smoke_objects(pools_of("oci-mi300x")["mi300x-train"], "ns", RUN)
    assert pod["spec"]["containers"][0]["command"] == ["rocm-smi"]
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"amd.com/gpu": 1}}


def test_smoke_results():
    pool = pools_of("aws-dev")["h100-train"]
    log = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f6a1c2e-9d1b-4c36-8a0e-2f0c3e4d5a6b)\n"
    assert verify.check_smoke(pool, "Succeeded", log).detail == "1 GPU listed: GPU 0: NVIDIA H100 80GB HBM3"
    assert verify.check_smoke(pool, "Succeeded", log).status == PASS
    failed = verify.check_smoke(pool, "Failed", "NVIDIA-SMI has failed because it couldn't communicate with the "
                                               "NVIDIA driver.\n")
    assert (failed.status, failed.detail) == (FAIL, "pod Failed: NVIDIA-SMI has failed because it couldn't "
                                                    "communicate with the NVIDIA driver.")
    assert verify.check_smoke(pool, "Succeeded", "No devices found.\n").status == FAIL


# --- all-reduce -----------------------------------------------------------------------------------------------

def test_all_reduce_objects_of_an_efa_pool():
    pool = pools_of("aws-dev")["h100-train"]
    service, job = verify.all_reduce_objects(pool, "ns", RUN)
    assert service["spec"] == {"clusterIP": "None", "selector": {labels.JOB_NAME_LABEL: "allreduce-h100-train"},
                               "ports": [{"name": "rendezvous", "port": 29500}]}
    assert job["metadata"]["labels"] == {labels.VERIFY_RUN_LABEL: RUN}
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 2, 2)
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == "allreduce-h100-train"
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    (container,) = pod["containers"]
    assert container["args"] == ["--nnodes=2", "--nproc-per-node=8", "--node-rank=$(JOB_COMPLETION_INDEX)",
                                 "--master-addr=allreduce-h100-train-0.allreduce-h100-train", "--master-port=29500",
                                 "/checks/allreduce.py", "-b", "1G", "-e", "8G"]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["NCCL_DEBUG"] == "INFO"
    assert {k: env[k] for k in dict(pool.nccl_env)} == dict(pool.nccl_env)
    assert pod["volumes"][0] == {"name": "checks", "configMap": {"name": "allreduce"}}


def test_all_reduce_of_an_amd_pool_uses_the_rocm_image_and_shared_rdma():
    (_, job) = verify.all_reduce_objects(pools_of("oci-mi300x")["mi300x-train"], "ns", RUN)
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].startswith("docker.io/rocm/pytorch:rocm7.14")
    assert container["resources"] == {"limits": {"amd.com/gpu": 8, "rdma/roce": 1}}


@pytest.mark.parametrize("stack_name,pool,ready,reason", [
    ("aws-dev", "l4-infer", 3, "no RDMA fabric"),
    ("aws-neuron", "trn2-train", 2, "aws-neuron has no NCCL/RCCL all-reduce"),
    ("aws-dev", "h100-train", 1, "1 Ready node(s): a two-node all-reduce needs 2"),
    ("aws-dev", "h100-train", 2, None),
])
def test_all_reduce_skip_reasons(stack_name, pool, ready, reason):
    assert verify.all_reduce_skip_reason(pools_of(stack_name)[pool], ready) == reason


EFA_LOG = fixture("awsome-p5-48xlarge-two-node.txt") + fixture("nccl-issue-1597-efa-ofi-excerpt.txt")


def test_all_reduce_passes_over_efa_above_the_threshold():
    result = verify.check_all_reduce(pools_of("aws-dev")["h100-train"], True, EFA_LOG)
    assert (result.status, result.detail) == (PASS, "487.3 GB/s bus bandwidth at 17179869184 B over OFI >= 389.8 GB/s")
    assert result.data["bus_bandwidth_gbps"] == 487.26 and result.data["threshold_gbps"] == 389.8


@pytest.mark.parametrize("succeeded,log,detail", [
    (True, fixture("awsome-p5-48xlarge-two-node.txt") + fixture("nccl-issue-398-socket-excerpt.txt"),
     "NCCL fell back to sockets, not the efa fabric (OFI)"),
    (True, fixture("awsome-p5-48xlarge-two-node.txt") + fixture("nccl-issue-392-roce-excerpt.txt"),
     "NCCL used IB, not the efa fabric (OFI)"),
    (True, fixture("awsome-p5-48xlarge-two-node.txt"),
     "no 'Using network'/'via NET/' line: cannot tell NCCL used the fabric"),
    (True, fixture("awsome-p4de-24xlarge-two-node.txt") + fixture("nccl-issue-1597-efa-ofi-excerpt.txt"),
     "78.3 GB/s bus bandwidth at 2147483648 B over OFI, below 389.8 GB/s (80 % of p5.48xlarge's published 487.3)"),
    (False, fixture("tcpx-plugin-issue-1-warn-excerpt.txt"), "the job failed: [0] tcpxResult_t tcpxCommProgress"),
    (True, EFA_LOG.replace("487.26      0", "487.26      5"), "5 wrong values at 17179869184 bytes (in-place)"),
])
def test_all_reduce_fails(succeeded, log, detail):
    result = verify.check_all_reduce(pools_of("aws-dev")["h100-train"], succeeded, log)
    assert result.status == FAIL
    assert result.detail.startswith(detail)


def test_all_reduce_without_a_published_figure_is_informational():
    log = fixture("oke-bm-gpu-b4-8-two-node.txt") + fixture("nccl-issue-392-roce-excerpt.txt")
    result = verify.check_all_reduce(pools_of("oci-dev")["h100-train"], True, log)
    assert (result.status, result.detail) == (PASS, "189.6 GB/s bus bandwidth at 8589934592 B over IB; no threshold "
                                                    "(informational): no published two-node figure for BM.GPU.H100.8")


# --- Kueue, DCGM, inference -----------------------------------------------------------------------------------

def workload(job: str, *conditions) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": f"job-{job}-5e1f2", "namespace": "research",
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job}]},
            "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": m}
                                      for t, s, r, m in conditions]}}


def test_kueue_job_goes_to_the_first_teams_local_queue():
    job = verify.kueue_job("research", RUN)
    assert job["metadata"] == {"name": f"verify-gang-{RUN}", "namespace": "research",
                               "labels": {labels.VERIFY_RUN_LABEL: RUN, labels.KUEUE_QUEUE_LABEL: "gpu"}}
    assert (job["spec"]["suspend"], job["spec"]["parallelism"], job["spec"]["completions"]) == (True, 2, 2)


def test_kueue_admitted_and_not():
    admitted = workload("verify-gang-x", ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue "
                                          "research"), ("Admitted", "True", "Admitted", "The workload is admitted"))
    assert verify.check_kueue("research", [admitted]).detail == "Workload job-verify-gang-x-5e1f2 Admitted"
    pending = workload("verify-gang-x", ("QuotaReserved", "False", "Pending",
                                         "couldn't assign flavors to pod set main: insufficient quota for cpu"))
    result = verify.check_kueue("research", [pending])
    assert (result.status, result.detail) == (FAIL, "not Admitted: QuotaReserved couldn't assign flavors to pod set "
                                                    "main: insufficient quota for cpu")
    assert verify.check_kueue("research", []).status == FAIL


PROMETHEUS_UP = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"__name__": "up", "instance": "10.0.1.5:9400", "job": "nvidia-dcgm-exporter"},
     "value": [1764041000.123, "1"]},
    {"metric": {"__name__": "up", "instance": "10.0.1.6:9400", "job": "nvidia-dcgm-exporter"},
     "value": [1764041000.123, "0"]}]}})


def test_dcgm_query_path_and_results():
    assert verify.dcgm_query_path() == ("/api/v1/namespaces/monitoring/services/http:kube-prometheus-stack-prometheus:"
                                        "9090/proxy/api/v1/query")
    assert verify.check_dcgm(200, PROMETHEUS_UP).detail == "1 of 2 DCGM targets up (10.0.1.5:9400)"
    empty = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})
    assert (verify.check_dcgm(200, empty).status, verify.check_dcgm(200, empty).detail) == (FAIL,
                                                                                          "no DCGM exporter target")
    down = PROMETHEUS_UP.replace('"1"]', '"0"]')
    assert verify.check_dcgm(200, down).detail == "2 DCGM targets, none up"
    assert verify.check_dcgm(503, "no endpoints available for service").status == FAIL


def test_inference_path_and_results():
    assert verify.inference_path(stack("aws-dev")) == \
        "/api/v1/namespaces/inference/services/http:sentiment:80/proxy/analyze"
    ok = verify.check_inference(200, '{"label": "positive", "score": 0.998712}')
    assert (ok.status, ok.detail) == (PASS, "POST /analyze: positive (0.998712)")
    loading = verify.check_inference(503, '{"error": {"reason": "not_ready", "message": "model is loading"}}')
    assert loading.status == FAIL and loading.detail.startswith("POST /analyze answered HTTP 503")


# --- report ---------------------------------------------------------------------------------------------------

def test_report_table_and_exit_code():
    results = [verify.CheckResult("nodes", "h100-train", PASS, "2 Ready", 0.1),
               verify.CheckResult("smoke", "l4-spot", SKIP, "no Ready node"),
               verify.CheckResult("dcgm", "prometheus", FAIL, "no DCGM exporter target", 1.25, {"targets_up": 0})]
    assert verify.exit_code(results) == 1 and verify.exit_code(results[:2]) == 0
    assert verify.render_table(results).splitlines() == [
        "CHECK  TARGET      STATUS  DETAIL", "nodes  h100-train  PASS    2 Ready",
        "smoke  l4-spot     SKIP    no Ready node",
        "dcgm   prometheus  FAIL    no DCGM exporter target", "1 passed, 1 failed, 1 skipped"]
    report = verify.report("aws-dev", RUN, results)
    assert report["passed"] is False
    assert report["checks"][2] == {"name": "dcgm", "target": "prometheus", "status": "fail",
                                   "detail": "no DCGM exporter target", "duration_s": 1.25, "data": {"targets_up": 0}}


def test_help_documents_every_check_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["verify", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, meaning in verify.CHECKS.items():
        assert f"{name}: {' '.join(meaning.split())}" in text
    assert "exit codes: 0 no check failed; 1 a check failed; 2 bad usage, configuration or kubeconfig" in text
    assert "--timeout-per-check S" in text and "--skip CHECK" in text and "--kubeconfig FILE" in text


# --- orchestration against an in-memory cluster -----------------------------------------------------------------

class FakeCluster:
    """An API server in a dict, with the controllers' effects a run waits for: pods finish, Jobs complete (making
    rank pods with their logs), Kueue admits. Records every create and delete."""

    def __init__(self, objects, *, pod_log="GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f6a1c2e)\n",
                 job_log=EFA_LOG, finish=True, proxy=None, on_list=None):
        self.store = {self.key(o): o for o in objects}
        self.created, self.deleted, self.logs = [], [], {}
        self.pod_log_text, self.job_log, self.finish = pod_log, job_log, finish
        self.proxy_answers = proxy or {}
        self.on_list = on_list

    @staticmethod
    def key(obj):
        meta = obj["metadata"]
        return obj["kind"], meta.get("namespace"), meta["name"]

    def list(self, api_version, kind, namespace=None):
        if self.on_list:
            self.on_list(kind)
        return [o for (k, ns, _), o in self.store.items() if k == kind and (namespace is None or ns == namespace)]

    def create(self, obj):
        assert obj["metadata"]["labels"][labels.VERIFY_RUN_LABEL]
        assert self.key(obj) not in self.store
        self.created.append(self.key(obj))
        self.store[self.key(obj)] = json.loads(json.dumps(obj))
        if not self.finish:
            return
        ns, name = obj["metadata"].get("namespace"), obj["metadata"]["name"]
        if obj["kind"] == "Pod":
            self.store[self.key(obj)]["status"] = {"phase": "Succeeded"}
            self.logs[name] = self.pod_log_text
        elif obj["kind"] == "Job" and obj["metadata"]["labels"].get(labels.KUEUE_QUEUE_LABEL):
            wl = workload(name, ("Admitted", "True", "Admitted", "The workload is admitted"))
            self.store[("Workload", ns, wl["metadata"]["name"])] = wl
        elif obj["kind"] == "Job":
            self.store[self.key(obj)]["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
            for index in range(2):
                pod = {"kind": "Pod", "metadata": {"name": f"{name}-{index}-x7k2p", "namespace": ns},
                       "spec": {"hostname": f"{name}-{index}"}, "status": {"phase": "Succeeded"}}
                self.store[self.key(pod)] = pod
                self.logs[pod["metadata"]["name"]] = self.job_log if index == 0 else ""

    def delete(self, obj):
        self.deleted.append(self.key(obj))
        self.store.pop(self.key(obj), None)
        if obj["kind"] == "Namespace":  # the namespace takes everything in it
            for key in [k for k in self.store if k[1] == obj["metadata"]["name"]]:
                self.store.pop(key)
        if obj["kind"] == "Job":
            job = obj["metadata"]["name"]
            for key in [k for k in self.store if k[0] == "Pod" and k[2].startswith(job)
                        or k[0] == "Workload" and job in k[2]]:
                self.store.pop(key)

    def pod_log(self, namespace, name):
        return self.logs.get(name, "")

    def proxy(self, method, path, body=None):
        for fragment, answer in self.proxy_answers.items():
            if fragment in path:
                if isinstance(answer, Exception):
                    raise answer
                return answer
        return 404, "not found"

    def leftovers(self):
        return [k for k, o in self.store.items() if labels.VERIFY_RUN_LABEL in (o["metadata"].get("labels") or {})]


def aws_cluster(**kwargs) -> FakeCluster:
    objects = [node("ip-10-0-1-5", "h100-train", P5), node("ip-10-0-1-6", "h100-train", P5),
               node("ip-10-0-9-9", "l4-infer", {"nvidia.com/gpu": "1"}),
               daemonset("nvidia-device-plugin", "gpu-operator", 3, 3),
               daemonset("aws-efa-k8s-device-plugin", "kube-system", 2, 2)]
    proxy = {"api/v1/query": (200, PROMETHEUS_UP), "/proxy/analyze": (200, '{"label": "positive", "score": 0.9}')}
    return FakeCluster(objects, proxy={**proxy, **kwargs.pop("proxy", {})}, **kwargs)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def run_aws(cluster, **kwargs):
    clock = Clock()
    return verify_live.run_checks(stack("aws-dev"), cluster, RUN, timeout=kwargs.pop("timeout", 30),
                                  sleep=clock.sleep, clock=clock, interval=1.0, **kwargs)


def test_full_run_creates_labelled_objects_and_deletes_them_all():
    cluster = aws_cluster()
    results = run_aws(cluster)
    assert [(r.name, r.target, r.status) for r in results] == [
        ("nodes", "l4-infer", PASS), ("nodes", "l4-spot", SKIP), ("nodes", "h100-train", PASS),
        ("gpu-software", "gpu-operator", PASS), ("gpu-software", "kube-system", PASS),
        ("smoke", "l4-infer", PASS), ("smoke", "l4-spot", SKIP), ("smoke", "h100-train", PASS),
        ("all-reduce", "l4-infer", SKIP), ("all-reduce", "l4-spot", SKIP), ("all-reduce", "h100-train", PASS),
        ("kueue", "research", PASS), ("dcgm", "prometheus", PASS), ("inference", "sentiment", PASS)]
    ns = "gpu-platform-verify-0a1b2c3d"
    assert cluster.created == [("Namespace", None, ns), ("Pod", ns, "smoke-l4-infer"), ("Pod", ns, "smoke-h100-train"),
                               ("ConfigMap", ns, "allreduce"), ("Service", ns, "allreduce-h100-train"),
                               ("Job", ns, "allreduce-h100-train"), ("Job", "research", "verify-gang-0a1b2c3d")]
    assert cluster.deleted == list(reversed(cluster.created))  # newest first, the namespace last
    assert cluster.leftovers() == []
    assert verify.exit_code(results) == 0


def test_a_check_that_raises_fails_alone_and_cleanup_still_runs():
    cluster = aws_cluster(proxy={"api/v1/query": RuntimeError("connection refused")})
    results = run_aws(cluster)
    dcgm = next(r for r in results if r.name == "dcgm")
    assert (dcgm.status, dcgm.detail) == (FAIL, "error: RuntimeError: connection refused")
    assert next(r for r in results if r.name == "inference").status == PASS
    assert cluster.leftovers() == [] and verify.exit_code(results) == 1


def test_waits_are_bounded_and_timeouts_fail():
    cluster = aws_cluster(finish=False)
    results = run_aws(cluster, timeout=5, skip=("kueue",))
    smoke = [r for r in results if r.name == "smoke" and r.status != SKIP]
    assert {r.detail for r in smoke} == {"timed out after 5 s (pod None)"}
    (reduce,) = [r for r in results if r.name == "all-reduce" and r.target == "h100-train"]
    assert (reduce.status, reduce.detail) == (FAIL, "timed out after 5 s (rank 0 pod not created)")
    assert cluster.leftovers() == []


def test_skip_reports_skipped_and_creates_nothing_for_them():
    cluster = aws_cluster()
    results = run_aws(cluster, skip=("all-reduce", "kueue", "nodes"))
    assert [(r.name, r.status, r.detail) for r in results if r.target == "-"] == [
        ("nodes", SKIP, "skipped by --skip"), ("all-reduce", SKIP, "skipped by --skip"),
        ("kueue", SKIP, "skipped by --skip")]
    assert [r.status for r in results if r.name == "smoke"] == [PASS, SKIP, PASS]  # node counts still read
    assert not any(kind == "Job" for kind, _, _ in cluster.created)


def test_ctrl_c_deletes_everything_then_propagates():
    def interrupt(kind):
        if kind == "Job":
            raise KeyboardInterrupt

    cluster = aws_cluster(on_list=interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_aws(cluster)
    assert ("Job", "gpu-platform-verify-0a1b2c3d", "allreduce-h100-train") in cluster.created
    assert cluster.leftovers() == []
    assert cluster.deleted[-1] == ("Namespace", None, "gpu-platform-verify-0a1b2c3d")


def test_sigterm_is_an_interruption_too():
    def terminate(kind):
        if kind == "Job":
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    cluster = aws_cluster(on_list=terminate)
    with pytest.raises(KeyboardInterrupt):
        run_aws(cluster)
    assert cluster.leftovers() == []
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is restored


def args(**overrides):
    base = {"stack": None, "config": str(ROOT / "stacks" / "Pulumi.aws-dev.yaml"), "kubeconfig": None,
            "context": None, "json": False, "timeout_per_check": 30.0, "skip": ["all-reduce", "smoke"]}
    return SimpleNamespace(**{**base, **overrides})


def test_cli_run_prints_the_table_or_json_and_exits_by_the_results(capsys, monkeypatch):
    # The checks wait on a virtual clock, as in run_aws: the fake cluster moves on per poll, not per second, so the
    # real 2 s poll interval only made this test sleep (30 s).
    real, clock = verify_live.run_checks, Clock()
    monkeypatch.setattr(verify_live, "run_checks", lambda *a, **kw: real(*a, sleep=clock.sleep, clock=clock, **kw))
    assert verify_live.run(args(), client=aws_cluster()) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("gpu-platform verify aws-dev (run ")
    assert out.splitlines()[-1] == "7 passed, 0 failed, 3 skipped"
    down = PROMETHEUS_UP.replace('"1"]', '"0"]')
    assert verify_live.run(args(json=True), client=aws_cluster(proxy={"api/v1/query": (200, down)})) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["stack"] == "aws-dev" and report["passed"] is False
    assert [c["status"] for c in report["checks"] if c["name"] == "dcgm"] == ["fail"]


def test_cli_bad_usage_exits_2_with_one_line(capsys):
    assert verify_live.run(args(config=str(ROOT / "stacks" / "Pulumi.nosuch.yaml")), client=aws_cluster()) == 2
    assert verify_live.run(args(timeout_per_check=0), client=aws_cluster()) == 2
    assert verify_live.run(args(kubeconfig="/nonexistent/kubeconfig"), client=None) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 3 and all(e.startswith("error: ") for e in errors)
    assert errors[1] == "error: --timeout-per-check: must be a positive number of seconds"


def test_kube_client_proxy_speaks_http_through_the_kubernetes_client():
    """`KubeClient.proxy` over the real ``kubernetes`` client against a local HTTP server standing in for the API
    server: path, query string, bearer token, JSON body, status and body both ways."""
    import http.server
    import threading

    from kubernetes import client as kube

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            seen.append(("GET", self.path, self.headers.get("Authorization")))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(PROMETHEUS_UP.encode())

        def do_POST(self):  # noqa: N802
            seen.append(("POST", self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b'{"error": {"reason": "not_ready"}}')

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        configuration = kube.Configuration(host=f"http://127.0.0.1:{server.server_port}")
        configuration.api_key = {"BearerToken": "token-1"}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        client = verify_live.KubeClient(kube.ApiClient(configuration))
        query = verify.dcgm_query_path() + "?query=up%7Bjob%3D~%22.%2Adcgm.%2A%22%7D"
        assert client.proxy("GET", query) == (200, PROMETHEUS_UP)
        assert client.proxy("POST", verify.inference_path(stack("aws-dev")), verify.INFERENCE_REQUEST) == \
            (503, '{"error": {"reason": "not_ready"}}')
    finally:
        server.shutdown()
    assert seen == [("GET", query, "Bearer token-1"),
                    ("POST", "/api/v1/namespaces/inference/services/http:sentiment:80/proxy/analyze",
                     b'{"text": "The platform passed its conformance run."}')]


def test_dra_pools_claim_their_gpus_and_keep_rdma_limits():
    pool = pools_of("aws-gb200")["gb200-train"]
    template, pod = verify.smoke_objects(pool, "ns", RUN)
    assert template["kind"] == "ResourceClaimTemplate"
    assert template["metadata"]["labels"][labels.VERIFY_RUN_LABEL] == RUN
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    assert pod["spec"]["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "smoke-gb200-train-gpu"}]
    assert pod["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpus"}]}
    template, _, job = verify.all_reduce_objects(pool, "ns", RUN)
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "claims": [{"name": "gpus"}], "limits": {"vpc.amazonaws.com/efa": 4}}
    assert verify.expected_allocatable(pool) == {"vpc.amazonaws.com/efa": ("==", 4)}
