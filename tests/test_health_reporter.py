"""The active-check reporter: the DCGM diag parser (DCGM 3.x and 4.x documents), the pass/fail verdict and what
``gpu-platform health-report`` writes on the Node."""

import copy
import io
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException
from test_health_remediation import FakeCoreV1, make_node

from gpu_platform import labels
from gpu_platform.cli import main
from gpu_platform.health import controller as ctl
from gpu_platform.health import reporter
from gpu_platform.health.dcgm import DcgmParseError, parse_diag, parse_test
from gpu_platform.health.reporter import CheckFiles, Verdict, condition_patch, evaluate, metadata_patch

DATA = Path(__file__).parent / "data" / "health"
NOW = datetime(2026, 11, 25, 4, 0, 0, tzinfo=timezone.utc)
REAL_V4_TEST = json.loads((DATA / "dcgm4-diag-r3-8gpu-diagnostic-test.json").read_text())
"""A test object of real DCGM 4 output (NVIDIA/DCGM issue 215): 8 GPUs, ``diagnostic``, all Pass."""
SINGLE_NODE_LOG = (DATA / "nccl-issue-1706-single-node-tail.txt").read_text()  # 25.88 GB/s, # Out of bounds 0 OK
WARN_LOG = (DATA / "tcpx-plugin-issue-1-warn-excerpt.txt").read_text()


def v4_document(*tests, version="4.2.3"):
    """The DCGM 4.x envelope (testing/python3/dcgm_diag_schema.json in NVIDIA/DCGM) around test objects."""
    return json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": list(tests)}]},
                       "entity_groups": [], "metadata": {"version": version,
                                                         "Driver Version Detected": "580.82.09"}}, indent=2)


def v3_document(*tests):
    """The DCGM 3.x shape (nvvs JsonOutput.h in NVIDIA/DCGM): ``DCGM GPU Diagnostic``, ``gpu_ids`` per result; dcgmi
    prints a line before it."""
    body = {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", "tests": list(tests)}],
                                    "version": "3.3.9"}}
    return "Successfully ran diagnostic for group.\n" + json.dumps(body, indent="\t")


def failing_v4_test():
    test = copy.deepcopy(REAL_V4_TEST)
    test["results"][5]["status"] = "Fail"
    test["results"][5]["warnings"] = [{"error_category": 2, "error_id": 95, "error_severity": 2,
                                       "warning": "GPU 5 had uncorrectable memory errors"}]
    test["test_summary"]["status"] = "Fail"
    return test


# --- the DCGM parser -------------------------------------------------------------------------------------------------

def test_real_dcgm4_test_object_passes_on_eight_gpus():
    outcome = parse_test(REAL_V4_TEST)
    assert (outcome.name, outcome.status, outcome.failed, outcome.failed_entities, outcome.messages) == (
        "diagnostic", "pass", False, (), ())
    report = parse_diag(v4_document(REAL_V4_TEST))
    assert (report.passed, report.version, report.runtime_error, len(report.tests)) == (True, "4.2.3", None, 1)


def test_dcgm4_failure_names_the_gpu_and_dcgms_reason():
    report = parse_diag(v4_document(REAL_V4_TEST, failing_v4_test()))
    assert report.passed is False
    [failure] = report.failures
    assert (failure.name, failure.status, failure.failed_entities, failure.messages) == (
        "diagnostic", "fail", ("GPU 5",), ("GPU 5 had uncorrectable memory errors",))


def test_dcgm3_document_with_banner_and_upper_case_statuses():
    report = parse_diag(v3_document(
        {"name": "Denylist", "results": [{"gpu_ids": "0,1,2,3", "status": "PASS"}]},
        {"name": "Persistence Mode", "results": [{"gpu_ids": "0,1,2,3", "status": "Warn",
                                                  "warnings": ["Persistence mode for GPU 0 is disabled."]}]},
        {"name": "PCIe", "results": [{"gpu_id": "0", "status": "Skip"}, {"gpu_id": "1", "status": "Skip"}]},
        None))
    assert [(t.name, t.status) for t in report.tests] == [("Denylist", "pass"), ("Persistence Mode", "warn"),
                                                          ("PCIe", "skip")]
    assert (report.passed, report.version) == (True, "3.3.9")
    failed = parse_diag(v3_document({"name": "GPU Memory", "results": [
        {"gpu_id": "0", "status": "Pass"}, {"gpu_id": "1", "status": "Fail", "warnings": ["DBE errors on GPU 1"]}]}))
    assert [(t.name, t.failed_entities, t.messages) for t in failed.failures] == [
        ("GPU Memory", ("GPU 1",), ("DBE errors on GPU 1",))]


def test_unknown_status_word_is_never_a_pass():
    report = parse_diag(v4_document({"name": "memory", "results": [{"entity_group": "GPU", "entity_id": 0,
                                                                     "status": "Inconclusive"}]}))
    assert [(t.name, t.status, t.failed) for t in report.tests] == [("memory", "inconclusive", True)]
    assert parse_test({"name": "pcie", "results": []}).status == "missing"


def test_runtime_error_and_garbage():
    report = parse_diag(json.dumps({"DCGM Diagnostic": {"runtime_error": "Unable to complete diagnostic for group 2. "
                                                                         "Error: requested test(s) were not found"}}))
    assert (report.passed, report.runtime_error) == (
        False, "Unable to complete diagnostic for group 2. Error: requested test(s) were not found")
    for text, message in (("Error: unable to connect to host engine", "no JSON document in the dcgmi output"),
                          ('{"DCGM Diagnostic": ', "dcgmi output is not valid JSON: Expecting value at line 1"),
                          ('{"tests": []}', "dcgmi output has none of 'DCGM Diagnostic', 'DCGM GPU Diagnostic'")):
        with pytest.raises(DcgmParseError) as err:
            parse_diag(text)
        assert str(err.value) == message


# --- the verdict -----------------------------------------------------------------------------------------------------

def files(dcgm=None, dcgm_rc="0\n", log=None, log_rc=None):
    return CheckFiles(v4_document(REAL_V4_TEST) if dcgm is None else dcgm, dcgm_rc, log, log_rc)


def test_pass_with_dcgm_and_all_reduce():
    assert evaluate(files(log=SINGLE_NODE_LOG, log_rc="0\n"), 20.0) == Verdict(
        True, "ActiveCheckPassed", "dcgm-diag: pass, 1 tests (DCGM 4.2.3); all-reduce: 25.9 GB/s bus bandwidth")
    assert evaluate(files()) == Verdict(True, "ActiveCheckPassed", "dcgm-diag: pass, 1 tests (DCGM 4.2.3)")


@pytest.mark.parametrize(("check", "min_bw", "reason", "message"), [
    (CheckFiles(None, None), None, "NoCheckResults",
     "no check result: none of dcgm-diag.json, dcgm-diag.rc, all-reduce.log, all-reduce.rc"),
    (files(dcgm_rc=None), None, "DcgmDiagMissing", "dcgm-diag: dcgm-diag.rc missing: the diagnostic did not run"),
    (files(dcgm="Error: unable to connect", dcgm_rc="255"), None, "DcgmDiagUnreadable",
     "dcgm-diag: exit 255: no JSON document in the dcgmi output"),
    (files(dcgm=v4_document(failing_v4_test()), dcgm_rc="226"), None, "DcgmDiagFailed",
     "dcgm-diag: diagnostic fail on GPU 5 (GPU 5 had uncorrectable memory errors)"),
    (files(dcgm_rc="1"), None, "DcgmDiagFailed", "dcgm-diag: dcgmi exited 1 although no test failed"),
    (files(dcgm=v4_document()), None, "DcgmDiagFailed", "dcgm-diag: the document reports no test"),
    (files(log=SINGLE_NODE_LOG), None, "AllReduceMissing", "all-reduce: all-reduce.rc missing; "
                                                           "dcgm-diag: pass, 1 tests (DCGM 4.2.3)"),
    (files(), 100.0, "AllReduceMissing", "all-reduce: all-reduce.log and all-reduce.rc missing; "
                                         "dcgm-diag: pass, 1 tests (DCGM 4.2.3)"),
    (files(log=SINGLE_NODE_LOG, log_rc="0"), 100.0, "BusBandwidthLow",
     "all-reduce: 25.9 GB/s bus bandwidth, below the minimum 100 GB/s; dcgm-diag: pass, 1 tests (DCGM 4.2.3)"),
    (files(log=SINGLE_NODE_LOG, log_rc="1"), None, "AllReduceFailed",
     "all-reduce: exited 1; dcgm-diag: pass, 1 tests (DCGM 4.2.3)"),
    (files(log="# nothing ran\n", log_rc="0"), None, "AllReduceFailed",
     "all-reduce: no result table in the log; dcgm-diag: pass, 1 tests (DCGM 4.2.3)"),
])
def test_failures_fail_with_one_line(check, min_bw, reason, message):
    verdict = evaluate(check, min_bw)
    assert (verdict.passed, verdict.reason, verdict.message) == (False, reason, message)


def test_a_check_is_judged_when_its_files_exist_or_it_is_expected():
    # An AMD node: no DCGM in the pod, only the all-reduce.
    amd = CheckFiles(None, None, SINGLE_NODE_LOG, "0")
    assert evaluate(amd, 0.0) == Verdict(True, "ActiveCheckPassed", "all-reduce: 25.9 GB/s bus bandwidth")
    assert evaluate(amd, None, ("dcgm-diag",)) == Verdict(
        False, "DcgmDiagMissing", "dcgm-diag: dcgm-diag.json and dcgm-diag.rc missing: the diagnostic did not run")
    # A one-GPU NVIDIA node: DCGM only; a floor of 0 (no floor) does not ask for an all-reduce.
    assert evaluate(files(), 0.0).passed is True
    assert evaluate(files(), 0.0, ("all-reduce",)) == Verdict(
        False, "AllReduceMissing", "all-reduce: all-reduce.log and all-reduce.rc missing; "
                                   "dcgm-diag: pass, 1 tests (DCGM 4.2.3)")


def test_all_reduce_warnings_fail_and_messages_stay_one_short_line():
    verdict = evaluate(files(log=WARN_LOG + SINGLE_NODE_LOG, log_rc="0"))
    assert verdict.reason == "AllReduceFailed"
    assert verdict.message.startswith("all-reduce: [0] tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN ")
    many = [{"name": f"test-{i}", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Fail",
                                               "warnings": [{"warning": "x" * 80}]}]} for i in range(20)]
    long = evaluate(files(dcgm=v4_document(*many), dcgm_rc="226"))
    assert len(long.message) == 512 and long.message.endswith("...") and "\n" not in long.message


# --- what is written on the Node -------------------------------------------------------------------------------------

def test_condition_keeps_its_transition_time_while_the_status_holds():
    node = make_node("gpu-a")
    node["status"]["conditions"].append({"type": "GpuHealthCheckFailed", "status": "False",
                                         "lastTransitionTime": "2026-11-20T00:00:00Z"})
    passed = Verdict(True, "ActiveCheckPassed", "dcgm-diag: pass, 5 tests")
    assert condition_patch(node, passed, NOW) == {"status": {"conditions": [{
        "type": "GpuHealthCheckFailed", "status": "False", "reason": "ActiveCheckPassed",
        "message": "dcgm-diag: pass, 5 tests", "lastHeartbeatTime": "2026-11-25T04:00:00Z",
        "lastTransitionTime": "2026-11-20T00:00:00Z"}]}}
    failed = Verdict(False, "DcgmDiagFailed", "dcgm-diag: memory fail on GPU 1")
    patch = condition_patch(node, failed, NOW)["status"]["conditions"][0]
    assert (patch["status"], patch["lastTransitionTime"]) == ("True", "2026-11-25T04:00:00Z")
    assert metadata_patch(failed, NOW) == {"metadata": {
        "labels": {"gpu-platform.io/health-check": "failed"},
        "annotations": {"gpu-platform.io/health-check-detail":
                        "2026-11-25T04:00:00Z dcgm-diag: memory fail on GPU 1"}}}


def write_results(directory: Path, dcgm: str, dcgm_rc: str, log=None, log_rc=None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dcgm-diag.json").write_text(dcgm)
    (directory / "dcgm-diag.rc").write_text(dcgm_rc)
    if log is not None:
        (directory / "all-reduce.log").write_text(log)
    if log_rc is not None:
        (directory / "all-reduce.rc").write_text(log_rc)
    return directory


def test_health_report_records_and_a_passing_check_lets_remediation_release(tmp_path, monkeypatch, capsys):
    quarantined = "2026-11-25T02:00:00Z"
    node = make_node("gpu-a", check="failed")
    node["metadata"]["annotations"][labels.QUARANTINED_AT_ANNOTATION] = quarantined
    node["spec"] = {"unschedulable": True, "taints": [{"key": labels.QUARANTINE_TAINT_KEY, "value":
                                                       "GpuHealthCheckFailed", "effect": "NoSchedule"}]}
    node["status"]["conditions"].append({"type": "GpuHealthCheckFailed", "status": "True",
                                         "lastTransitionTime": "2026-11-25T01:50:00Z"})
    fake = FakeCoreV1([node])
    monkeypatch.setattr(ctl, "core_v1_api", lambda kubeconfig: fake)
    results = write_results(tmp_path / "results", v4_document(REAL_V4_TEST), "0\n", SINGLE_NODE_LOG, "0\n")
    assert main(["health-report", "--node", "gpu-a", "--results", str(results), "--min-bus-bandwidth", "20"]) == 0
    assert capsys.readouterr().out == ("gpu-a: passed (ActiveCheckPassed): dcgm-diag: pass, 1 tests (DCGM 4.2.3); "
                                       "all-reduce: 25.9 GB/s bus bandwidth\n")
    [status_patch, meta_patch] = fake.mutations()
    assert status_patch[0:2] == ("patch_node_status", "gpu-a")
    assert status_patch[3] == meta_patch[3] == "application/strategic-merge-patch+json"
    condition = status_patch[2]["status"]["conditions"][0]
    assert (condition["status"], condition["reason"], condition["lastTransitionTime"]) == (
        "False", "ActiveCheckPassed", condition["lastHeartbeatTime"])
    assert meta_patch[2]["metadata"]["labels"] == {"gpu-platform.io/health-check": "passed"}
    # The remediation controller now releases the node: its check is newer than the quarantine.
    from gpu_platform.health.remediation import RemediationPolicy

    control = ctl.Controller(ctl.ClusterApi(fake), RemediationPolicy(mode="cordon"), log=lambda line: None)
    control.run_pass()
    assert fake.nodes["gpu-a"]["spec"] == {"unschedulable": False, "taints": []}


def test_health_report_failure_and_exit_codes(tmp_path, capsys):
    fake = FakeCoreV1([make_node("gpu-a")])
    results = write_results(tmp_path / "r", v4_document(failing_v4_test()), "226")
    args = reporter.build_parser().parse_args(["--node", "gpu-a", "--results", str(results)])
    assert reporter.run(args, api_factory=lambda k: fake, now=NOW) == 0
    assert fake.nodes["gpu-a"]["metadata"]["labels"][labels.HEALTH_CHECK_LABEL] == "failed"
    assert fake.nodes["gpu-a"]["metadata"]["annotations"][labels.HEALTH_CHECK_DETAIL_ANNOTATION] == (
        "2026-11-25T04:00:00Z dcgm-diag: diagnostic fail on GPU 5 (GPU 5 had uncorrectable memory errors)")
    assert [c for c in fake.nodes["gpu-a"]["status"]["conditions"] if c["type"] == "GpuHealthCheckFailed"] == [{
        "type": "GpuHealthCheckFailed", "status": "True", "reason": "DcgmDiagFailed",
        "message": "dcgm-diag: diagnostic fail on GPU 5 (GPU 5 had uncorrectable memory errors)",
        "lastHeartbeatTime": "2026-11-25T04:00:00Z", "lastTransitionTime": "2026-11-25T04:00:00Z"}]
    capsys.readouterr()
    # --expect makes a check mandatory: its files are missing here.
    healthy = write_results(tmp_path / "h", v4_document(REAL_V4_TEST), "0")
    expect = reporter.build_parser().parse_args(["--node", "gpu-a", "--results", str(healthy), "--expect",
                                                 "all-reduce", "--expect", "dcgm-diag"])
    assert reporter.run(expect, api_factory=lambda k: fake, now=NOW) == 0
    assert capsys.readouterr().out == ("gpu-a: failed (AllReduceMissing): all-reduce: all-reduce.log and "
                                       "all-reduce.rc missing; dcgm-diag: pass, 1 tests (DCGM 4.2.3)\n")
    # The API refuses: exit 1, one line.
    missing = reporter.build_parser().parse_args(["--node", "gpu-x", "--results", str(results)])
    assert reporter.run(missing, api_factory=lambda k: fake, now=NOW) == 1
    assert capsys.readouterr().err == "error: Kubernetes API: cannot record the check on gpu-x: 404 Not Found\n"
    # Bad usage: exit 2 before any API call.
    calls = len(fake.calls)
    for argv, message in (
            (["--node", "gpu-a", "--results", str(tmp_path / "nope")], f"--results: {tmp_path / 'nope'} is not a "
                                                                      f"directory"),
            (["--node", "gpu-a", "--results", str(results), "--min-bus-bandwidth", "-1"],
             "--min-bus-bandwidth: -1 is not a GB/s figure >= 0"),
            (["--node", "gpu-a", "--results", str(results), "--min-bus-bandwidth", "nan"],
             "--min-bus-bandwidth: nan is not a GB/s figure >= 0")):
        assert reporter.run(reporter.build_parser().parse_args(argv), api_factory=lambda k: fake) == 2
        assert capsys.readouterr().err == f"error: {message}\n"
    assert len(fake.calls) == calls


def test_patch_status_failure_leaves_the_label_alone(tmp_path):
    class Refusing(FakeCoreV1):
        def patch_node_status(self, name, body, _content_type=None):
            raise ApiException(status=403, reason="Forbidden")

    fake = Refusing([make_node("gpu-a")])
    results = write_results(tmp_path / "r", v4_document(REAL_V4_TEST), "0")
    args = reporter.build_parser().parse_args(["--node", "gpu-a", "--results", str(results)])
    out, err = io.StringIO(), io.StringIO()
    assert reporter.run(args, api_factory=lambda k: fake, now=NOW, out=out, err=err) == 1
    assert fake.mutations() == []
    assert err.getvalue() == "error: Kubernetes API: cannot record the check on gpu-a: 403 Forbidden\n"


def test_the_check_pods_arguments_are_what_the_reporter_reads(tmp_path, monkeypatch, capsys):
    """The contract with the health layer's CronJob: its reporter arguments, on a one-GPU NVIDIA node (DCGM only)."""
    from gpu_platform.health import health_objects

    results = write_results(tmp_path / "results", v4_document(REAL_V4_TEST), "0\n")
    argv = [{"$(NODE_NAME)": "gpu-a", health_objects.RESULTS_DIR: str(results)}.get(a, a)
            for a in health_objects.reporter_args(("dcgm-diag",))]
    fake = FakeCoreV1([make_node("gpu-a")])
    monkeypatch.setattr(ctl, "core_v1_api", lambda kubeconfig: fake)
    assert main(argv) == 0
    assert capsys.readouterr().out == "gpu-a: passed (ActiveCheckPassed): dcgm-diag: pass, 1 tests (DCGM 4.2.3)\n"
    assert fake.nodes["gpu-a"]["metadata"]["labels"][labels.HEALTH_CHECK_LABEL] == "passed"
