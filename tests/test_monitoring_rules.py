"""GPU recording rules and alerts: promtool check/test, coverage of the unit tests, runbooks, metric names.

``promtool`` (Debian package ``prometheus``) must be on PATH; the CI installs it.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpu_platform.monitoring import alerts, metric_names
from gpu_platform.monitoring.gpu_monitoring import (
    ALERT_RULES_NAME,
    DEFAULT_RUNBOOK_BASE_URL,
    RECORDING_RULES_NAME,
    GpuMonitoring,
)
from gpu_platform.pools import GpuPool
from gpu_platform.testing import run_program

ROOT = Path(__file__).resolve().parents[1]
PROMTOOL_TESTS = ROOT / "tests" / "promtool"
RUNBOOKS = ROOT / "docs" / "runbooks.md"
RULE_FILE = "gpu-platform-rules.yaml"
"""The name the files in tests/promtool load (``rule_files``)."""

# The pools the promtool unit tests are written against.
TEST_POOLS = [
    GpuPool("h100-train", "existing", "", "h100", 8, 80, 0, 4),
    GpuPool("l4-infer", "existing", "", "l4", 4, 24, 0, 4),
]

ALERTS = ["GpuXidError", "GpuApplicationXid", "GpuTemperatureHigh", "GpuMemoryNearlyFull", "GpuNodeUnhealthyGpus",
          "GpuNodeMissingGpus", "GpuMetricsMissing", "GpuAllocatedIdle", "KueueWorkloadsPendingTooLong",
          "InferenceLatencySloBreach"]


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool not found on PATH: apt-get install -y --no-install-recommends prometheus"
    return path


def default_rule_set() -> alerts.RuleSet:
    return alerts.rule_set(TEST_POOLS, alerts.AlertThresholds(), DEFAULT_RUNBOOK_BASE_URL)


def write_rule_file(path: Path, groups) -> Path:
    path.write_text(yaml.safe_dump(alerts.rule_file(groups), sort_keys=False, width=1000), encoding="utf-8")
    return path


def run(promtool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------------------------------------------------
# promtool check rules


def test_every_rendered_rule_group_passes_promtool_check(promtool, tmp_path):
    groups = default_rule_set().all_groups
    files = [write_rule_file(tmp_path / f"{g.name}.yaml", [g]) for g in groups]
    result = run(promtool, "check", "rules", *map(str, files), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for f, g in zip(files, groups, strict=True):
        assert f"Checking {f}\n  SUCCESS: {len(g.rules)} rules found" in result.stdout
    assert [g.name for g in groups] == ["gpu-platform.gpu.rules", "gpu-platform.usage.rules",
                                        "gpu-platform.showback.rules", "gpu-platform.gpu-health",
                                        "gpu-platform.gpu-efficiency", "gpu-platform.scheduling",
                                        "gpu-platform.inference"]


def test_promtool_check_rejects_a_broken_expression(promtool, tmp_path):
    """The check is not vacuous: a malformed expression fails it."""
    bad = alerts.RuleGroup("broken", (alerts.RecordingRule("x:broken:sum", "sum(rate(foo[5m])"),))
    result = run(promtool, "check", "rules", str(write_rule_file(tmp_path / "bad.yaml", [bad])), cwd=tmp_path)
    assert result.returncode != 0
    assert "x:broken:sum" in result.stdout + result.stderr or "parse error" in result.stdout + result.stderr


def test_prometheus_rules_the_component_deploys_pass_promtool_check(promtool, tmp_path):
    """The PrometheusRule objects' groups (what the cluster gets) are the tested groups, and pass the check."""
    thresholds = {"gpu_temperature_celsius": 80, "idle_for": "2h"}
    rec = run_program(lambda: GpuMonitoring("mon", {"pools": [p.spec() for p in TEST_POOLS],
                                                    "alert_thresholds": thresholds}))
    rules = {r.inputs["metadata"]["name"]: r for r in rec.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")}
    assert set(rules) == {RECORDING_RULES_NAME, ALERT_RULES_NAME}
    expected = alerts.rule_set(TEST_POOLS, alerts.AlertThresholds.from_overrides(thresholds), DEFAULT_RUNBOOK_BASE_URL)
    assert rules[RECORDING_RULES_NAME].inputs["spec"]["groups"] == [g.as_dict() for g in expected.recording]
    assert rules[ALERT_RULES_NAME].inputs["spec"]["groups"] == [g.as_dict() for g in expected.alerting]
    files = []
    for name, reg in sorted(rules.items()):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"groups": reg.inputs["spec"]["groups"]}), encoding="utf-8")
        files.append(str(path))
    result = run(promtool, "check", "rules", *files, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    temperature = next(r for g in expected.alerting for r in g.rules if r.alert == "GpuTemperatureHigh")
    assert temperature.expr.endswith("> 80")
    assert next(r for g in expected.alerting for r in g.rules if r.alert == "GpuAllocatedIdle").for_ == "2h"


# ---------------------------------------------------------------------------------------------------------
# promtool test rules


def test_promtool_unit_tests_pass(promtool, tmp_path):
    write_rule_file(tmp_path / RULE_FILE, default_rule_set().all_groups)
    tests = sorted(PROMTOOL_TESTS.glob("*.yaml"))
    assert [t.name for t in tests] == ["efficiency.yaml", "gpu_health.yaml", "inference.yaml", "kueue.yaml",
                                       "recording.yaml", "showback.yaml"]
    for t in tests:
        shutil.copy(t, tmp_path / t.name)
    result = run(promtool, "test", "rules", *(t.name for t in tests), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(tests)


def test_promtool_unit_tests_detect_a_wrong_threshold(promtool, tmp_path):
    """The unit tests bite: rules with the temperature threshold at 95 make the firing case fail."""
    wrong = alerts.rule_set(TEST_POOLS, alerts.AlertThresholds(gpu_temperature_celsius=95), DEFAULT_RUNBOOK_BASE_URL)
    write_rule_file(tmp_path / RULE_FILE, wrong.all_groups)
    shutil.copy(PROMTOOL_TESTS / "gpu_health.yaml", tmp_path / "gpu_health.yaml")
    result = run(promtool, "test", "rules", "gpu_health.yaml", cwd=tmp_path)
    assert result.returncode != 0
    assert "alertname: GpuTemperatureHigh, time: 12m" in result.stdout + result.stderr


def alert_cases(directory: Path = PROMTOOL_TESTS, rule_file: str = RULE_FILE) -> dict[str, dict[str, int]]:
    """Per alert, how many promtool cases of ``directory`` expect it to fire and to stay quiet."""
    cases: dict[str, dict[str, int]] = {}
    for path in directory.glob("*.yaml"):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert doc["rule_files"] == [rule_file]
        for test in doc["tests"]:
            for case in test.get("alert_rule_test", []):
                kind = "fires" if case.get("exp_alerts") else "quiet"
                counts = cases.setdefault(case["alertname"], {"fires": 0, "quiet": 0})
                counts[kind] += 1
    return cases


def test_every_alert_is_proven_to_fire_and_to_stay_quiet():
    names = alerts.alert_names(default_rule_set().alerting)
    assert names == ALERTS
    cases = alert_cases()
    assert set(cases) == set(names)
    for name in names:
        assert cases[name]["fires"] >= 1, f"{name}: no case where it fires"
        assert cases[name]["quiet"] >= 1, f"{name}: no case where it stays quiet"


def test_recording_rule_families_are_unit_tested():
    """Per pod, namespace, team and pool series, and the attribution steps, each have an expected-value test."""
    tested = set()
    for test in yaml.safe_load((PROMTOOL_TESTS / "recording.yaml").read_text(encoding="utf-8"))["tests"]:
        tested |= {re.match(r"[\w:]+", c["expr"]).group(0) for c in test.get("promql_expr_test", [])}
    assert {alerts.GPU_UTILIZATION, alerts.GPU_MEMORY_USED_RATIO, alerts.GPU_TEMPERATURE, alerts.POD_GPU_ALLOCATED,
            alerts.POD_GPU_UTILIZATION, alerts.POD_GPU_MEMORY_USED, alerts.NAMESPACE_GPU_ALLOCATED,
            alerts.TEAM_GPU_ALLOCATED, alerts.TEAM_GPU_QUOTA, alerts.TEAM_GPU_UTILIZATION, alerts.TEAM_GPU_MEMORY_USED,
            alerts.POOL_GPU_ALLOCATABLE, alerts.POOL_GPU_ALLOCATED, alerts.POOL_GPU_BUSY,
            alerts.POOL_GPU_ALLOCATED_IDLE, alerts.POOL_GPU_UTILIZATION, alerts.CLUSTER_GPU_ALLOCATED,
            alerts.CLUSTER_GPU_ALLOCATABLE, alerts.POOL_EXPECTED_GPUS} <= tested


# ---------------------------------------------------------------------------------------------------------
# Rule content


def test_every_alert_has_severity_summary_and_a_runbook_section():
    anchors = {re.sub(r"[^a-z0-9-]", "", h.strip().lower().replace(" ", "-"))
               for h in re.findall(r"^## (.+)$", RUNBOOKS.read_text(encoding="utf-8"), re.MULTILINE)}
    for group in default_rule_set().alerting:
        for rule in group.rules:
            body = rule.as_dict()
            assert body["labels"]["severity"] in ("critical", "warning", "info")
            assert body["annotations"]["summary"] and body["annotations"]["description"]
            url = body["annotations"]["runbook_url"]
            assert url == f"{DEFAULT_RUNBOOK_BASE_URL}/docs/runbooks.md#{rule.alert.lower()}"
            assert rule.alert.lower() in anchors, f"docs/runbooks.md has no section '## {rule.alert}'"
    severities = {r.alert: r.severity for g in default_rule_set().alerting for r in g.rules}
    assert severities == {
        "GpuXidError": "critical", "GpuApplicationXid": "info", "GpuTemperatureHigh": "warning",
        "GpuMemoryNearlyFull": "warning", "GpuNodeUnhealthyGpus": "warning", "GpuNodeMissingGpus": "critical",
        "GpuMetricsMissing": "warning", "GpuAllocatedIdle": "info", "KueueWorkloadsPendingTooLong": "warning",
        "InferenceLatencySloBreach": "critical"}


def test_runbook_base_url_is_configurable():
    groups = alerts.alert_groups(alerts.AlertThresholds(), "https://git.example.com/platform/")
    urls = {r.as_dict()["annotations"]["runbook_url"] for g in groups for r in g.rules}
    assert "https://git.example.com/platform/docs/runbooks.md#gpuxiderror" in urls


def test_selected_metrics_reads_promql():
    expr = ('sum by (namespace, pod) (rate(foo_total{a="x(y)"}[5m] offset 10m)) / on (pod) group_left (team) '
            'bar:info unless histogram_quantile(0.9, sum by (le) (baz_bucket)) > bool 5')
    assert metric_names.selected_metrics(expr) == {"foo_total", "bar:info", "baz_bucket"}


def test_rules_only_read_metrics_that_exist():
    rule_set = default_rule_set()
    recorded = {r.record for g in rule_set.recording for r in g.rules}
    used = set().union(*(metric_names.selected_metrics(r.expr) for g in rule_set.all_groups for r in g.rules))
    assert used - recorded <= metric_names.UPSTREAM_METRICS, used - recorded - metric_names.UPSTREAM_METRICS
    # The DCGM fields the issue names are all read.
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP",
            "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "kube_pod_container_resource_requests",
            "kube_node_status_allocatable", "kube_node_labels", "kube_namespace_labels", "kueue_pending_workloads",
            "inference_request_duration_seconds_bucket"} <= used


def test_dcgm_relabelling_falls_back_to_exported_labels_and_either_hostname_label():
    expr = alerts.relabelled("DCGM_FI_DEV_GPU_UTIL")
    assert 'label_replace(DCGM_FI_DEV_GPU_UTIL, "pod", "$1", "exported_pod", "(.+)")' in expr
    assert '"namespace", "$1", "exported_namespace", "(.+)"' in expr
    assert 'label_join(' in expr and '"node_candidates", ";", "node", "Hostname", "hostname")' in expr
    assert expr.startswith("max by (node, gpu, UUID, modelName, GPU_I_PROFILE, GPU_I_ID, namespace, pod, container)")


def test_pool_expectations_come_from_the_pool_shapes():
    groups = alerts.recording_groups([GpuPool("b", "aws", "p5.48xlarge", "h100", 8, 80, 0, 2),
                                      GpuPool("a", "aws", "g6.xlarge", "l4", 1, 24, 0, 2)])
    expected = [r.as_dict() for r in groups[1].rules if r.record == alerts.POOL_EXPECTED_GPUS]
    assert expected == [
        {"record": "gpu_platform:pool_gpus_per_node:expected", "expr": "vector(1)", "labels": {"pool": "a"}},
        {"record": "gpu_platform:pool_gpus_per_node:expected", "expr": "vector(8)", "labels": {"pool": "b"}},
    ]


def test_kube_state_metrics_label_names():
    assert alerts.ksm_label("gpu-platform.io/pool") == "label_gpu_platform_io_pool"
    assert alerts.ksm_label("gpu-platform.io/team") == "label_gpu_platform_io_team"


@pytest.mark.parametrize(("overrides", "message"), [
    ({"gpu_temprature_celsius": 80}, "alert_thresholds.gpu_temprature_celsius: unknown threshold"),
    ({"idle_for": "1 hour"}, "alert_thresholds.idle_for: '1 hour' is not a Prometheus duration"),
    ({"gpu_memory_used_ratio": -0.1}, "alert_thresholds.gpu_memory_used_ratio: must be a non-negative number"),
    ({"inference_latency_seconds": "fast"}, "alert_thresholds.inference_latency_seconds: must be a non-negative"),
])
def test_bad_threshold_overrides_are_rejected(overrides, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        alerts.AlertThresholds.from_overrides(overrides)


def test_threshold_overrides_reach_the_expressions():
    t = alerts.AlertThresholds.from_overrides({"inference_latency_seconds": 0.25, "kueue_pending_for": "1h",
                                               "gpu_memory_used_ratio": 0.9})
    rules = {r.alert: r for g in alerts.alert_groups(t, DEFAULT_RUNBOOK_BASE_URL) for r in g.rules}
    assert rules["InferenceLatencySloBreach"].expr.endswith("> 0.25")
    assert 'increase(kueue_admitted_workloads_total{replica_role!="follower"}[1h])' in rules[
        "KueueWorkloadsPendingTooLong"].expr
    assert rules["KueueWorkloadsPendingTooLong"].for_ == "1h"
    assert rules["GpuMemoryNearlyFull"].expr.endswith("> 0.9")
