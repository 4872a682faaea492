"""The LLM service's alerts and dashboard: promtool check and unit tests (tests/promtool/llm), real vLLM metric names,
runbooks, and the monitoring layer adding them only to stacks with an LLM.

``promtool`` (Debian package ``prometheus``) must be on PATH; the CI installs it.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from test_monitoring_dashboards import panels
from test_monitoring_rules import alert_cases

from gpu_platform import config
from gpu_platform.monitoring import alerts, dashboards, llm_monitoring, metric_names
from gpu_platform.monitoring.gpu_monitoring import (
    ALERT_RULES_NAME,
    DEFAULT_RUNBOOK_BASE_URL,
    GpuMonitoring,
    monitoring_args,
    prometheus_clients,
)
from gpu_platform.pools import GpuPool
from gpu_platform.testing import run_program

ROOT = Path(__file__).resolve().parents[1]
PROMTOOL_TESTS = ROOT / "tests" / "promtool" / "llm"
RULE_FILE = "gpu-platform-llm-rules.yaml"
RUNBOOKS = (ROOT / "docs" / "runbooks.md").read_text(encoding="utf-8")
ALERTS = ["LlmTimeToFirstTokenHigh", "LlmTimePerOutputTokenHigh", "LlmKvCacheNearlyFull", "LlmPreemptions"]
POOLS = [GpuPool("l4-infer", "existing", "", "l4", 4, 24, 0, 4)]


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool not found on PATH: apt-get install -y --no-install-recommends prometheus"
    return path


def group(thresholds=llm_monitoring.DEFAULT_THRESHOLDS) -> alerts.RuleGroup:
    return llm_monitoring.alert_group(DEFAULT_RUNBOOK_BASE_URL, thresholds)


def run(promtool, *args, cwd):
    return subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def write_rules(path: Path, rule_group: alerts.RuleGroup) -> None:
    path.write_text(yaml.safe_dump(alerts.rule_file([rule_group]), sort_keys=False, width=1000), encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------
# Alerts


def test_the_alerts_pass_promtool_check(promtool, tmp_path):
    write_rules(tmp_path / RULE_FILE, group())
    result = run(promtool, "check", "rules", RULE_FILE, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


def test_promtool_unit_tests_pass(promtool, tmp_path):
    write_rules(tmp_path / RULE_FILE, group())
    tests = sorted(PROMTOOL_TESTS.glob("*.yaml"))
    assert [t.name for t in tests] == ["llm.yaml"]
    for t in tests:
        shutil.copy(t, tmp_path / t.name)
    result = run(promtool, "test", "rules", *(t.name for t in tests), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("change", "failing"), [
    ({"time_to_first_token_seconds": 5}, "alertname: LlmTimeToFirstTokenHigh, time: 45m"),
    ({"time_per_output_token_seconds": 0.5}, "alertname: LlmTimePerOutputTokenHigh, time: 45m"),
    ({"kv_cache_usage": 0.99}, "alertname: LlmKvCacheNearlyFull, time: 15m"),
    ({"preemptions_for": "5m"}, "alertname: LlmPreemptions, time: 10m"),
])
def test_promtool_unit_tests_bite(promtool, tmp_path, change, failing):
    """A rule with another threshold fails the case written against the real one."""
    from dataclasses import replace

    write_rules(tmp_path / RULE_FILE, group(replace(llm_monitoring.DEFAULT_THRESHOLDS, **change)))
    shutil.copy(PROMTOOL_TESTS / "llm.yaml", tmp_path / "llm.yaml")
    result = run(promtool, "test", "rules", "llm.yaml", cwd=tmp_path)
    assert result.returncode != 0
    assert failing in result.stdout + result.stderr


def test_every_alert_is_proven_to_fire_and_to_stay_quiet():
    assert [r.alert for r in group().rules] == ALERTS
    cases = alert_cases(PROMTOOL_TESTS, RULE_FILE)
    assert set(cases) == set(ALERTS)
    assert all(c["fires"] >= 1 and c["quiet"] >= 1 for c in cases.values()), cases


def test_alerts_read_vllm_metrics_and_link_their_runbooks():
    anchors = {h.strip().lower() for h in re.findall(r"^## (.+)$", RUNBOOKS, re.MULTILINE)}
    used = set()
    for rule in group().rules:
        body = rule.as_dict()
        assert body["labels"] == {"severity": "warning"}
        assert body["annotations"]["runbook_url"] == f"{DEFAULT_RUNBOOK_BASE_URL}/docs/runbooks.md#{rule.alert.lower()}"
        assert rule.alert.lower() in anchors, f"docs/runbooks.md has no section '## {rule.alert}'"
        used |= metric_names.selected_metrics(rule.expr)
    assert used == {"vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
                    "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total"}
    assert used <= metric_names.UPSTREAM_METRICS
    exprs = {r.alert: r.expr for r in group().rules}
    assert exprs == {
        "LlmTimeToFirstTokenHigh": "histogram_quantile(0.95, sum by (namespace, model_name, le) "
                                   "(rate(vllm:time_to_first_token_seconds_bucket[5m]))) > 2",
        "LlmTimePerOutputTokenHigh": "histogram_quantile(0.95, sum by (namespace, model_name, le) "
                                     "(rate(vllm:inter_token_latency_seconds_bucket[5m]))) > 0.15",
        "LlmKvCacheNearlyFull": "avg by (namespace, model_name) (vllm:kv_cache_usage_perc) > 0.95",
        "LlmPreemptions": "sum by (namespace, model_name) (rate(vllm:num_preemptions_total[5m])) > 0",
    }


def test_the_vllm_metric_names():
    """The names the rules, the dashboard and the autoscaler read (vLLM v0.31 V1 engine,
    monitoring/metric_names.py); the retired ``vllm:gpu_cache_usage_perc`` and
    ``vllm:time_per_output_token_seconds`` are not among them."""
    names = {metric_names.VLLM_REQUESTS_WAITING, metric_names.VLLM_REQUESTS_RUNNING, metric_names.VLLM_KV_CACHE_USAGE,
             metric_names.VLLM_TIME_TO_FIRST_TOKEN, metric_names.VLLM_INTER_TOKEN_LATENCY,
             metric_names.VLLM_E2E_LATENCY, metric_names.VLLM_PREEMPTIONS_TOTAL,
             metric_names.VLLM_PROMPT_TOKENS_TOTAL, metric_names.VLLM_GENERATION_TOKENS_TOTAL,
             metric_names.VLLM_REQUEST_SUCCESS_TOTAL}
    assert names == {"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
                     "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                     "vllm:e2e_request_latency_seconds", "vllm:num_preemptions_total", "vllm:prompt_tokens_total",
                     "vllm:generation_tokens_total", "vllm:request_success_total"}


# ---------------------------------------------------------------------------------------------------------
# Dashboard


DASHBOARD = llm_monitoring.llm_dashboard("chat")


def _exprs():
    return list(dashboards.dashboard_expressions(DASHBOARD))


def test_the_dashboard_parses_and_reads_real_series(promtool, tmp_path):
    exprs = _exprs()
    rules = [{"record": f"dashboard:expr_{i}:check", "expr": expr} for i, (_, expr) in enumerate(exprs)]
    (tmp_path / "d.yaml").write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]}), encoding="utf-8")
    result = run(promtool, "check", "rules", "d.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    recorded = {r.record for g in alerts.recording_groups([]) for r in g.rules}
    for where, expr in exprs:
        unknown = metric_names.selected_metrics(expr) - recorded - metric_names.UPSTREAM_METRICS
        assert not unknown, f"{where}: {unknown}"


def test_the_dashboard_shows_ttft_tpot_kv_cache_and_preemptions():
    titles = [p["title"] for p in panels(DASHBOARD)]
    assert titles == ["Requests per second", "TTFT p95", "Time per output token p95", "KV-cache usage",
                      "Waiting requests", "Replicas serving", "Time to first token", "Time per output token",
                      "End-to-end request latency", "Running and waiting requests by replica",
                      "KV-cache usage by replica", "Preemptions per second", "Tokens per second",
                      "GPU utilisation by replica", "GPU memory by replica"]
    by_title = {p["title"]: p for p in panels(DASHBOARD)}
    assert [t["expr"] for t in by_title["Time to first token"]["targets"]] == [
        f'histogram_quantile({q}, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{namespace="$namespace", '
        f'model_name=~"$model"}}[$__rate_interval])))' for q in ("0.5", "0.95", "0.99")] + ["vector(2)"]
    assert by_title["Preemptions per second"]["targets"][0]["expr"] == (
        'sum by (pod) (rate(vllm:num_preemptions_total{namespace="$namespace", model_name=~"$model"}'
        '[$__rate_interval]))')
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["namespace"]["current"]["value"] == "chat"
    assert variables["model"]["query"]["query"] == ('label_values(vllm:num_requests_running{namespace="$namespace"}, '
                                                    'model_name)')
    assert DASHBOARD["uid"] == "gpu-platform-llm"


def test_only_stacks_with_an_llm_get_the_dashboard_and_alerts():
    assert llm_monitoring.DASHBOARD_SLUG not in dashboards.all_dashboards()
    assert dashboards.all_dashboards(llm_namespace="chat")[llm_monitoring.DASHBOARD_SLUG] == DASHBOARD
    plain = alerts.rule_set(POOLS, alerts.AlertThresholds(), DEFAULT_RUNBOOK_BASE_URL)
    with_llm = alerts.rule_set(POOLS, alerts.AlertThresholds(), DEFAULT_RUNBOOK_BASE_URL, llm=True)
    assert with_llm.alerting == [*plain.alerting, group()]
    assert with_llm.recording == plain.recording


def test_the_monitoring_component_adds_them_for_an_llm_namespace():
    def deployed(**extra):
        rec = run_program(lambda: GpuMonitoring("mon", {"pools": [p.spec() for p in POOLS], **extra}))
        rules = rec.one("kubernetes:monitoring.coreos.com/v1:PrometheusRule", f"mon-{ALERT_RULES_NAME}")
        groups = [g["name"] for g in rules.inputs["spec"]["groups"]]
        maps = {r.inputs["metadata"]["name"] for r in rec.of_type("kubernetes:core/v1:ConfigMap")}
        return groups, maps

    groups, maps = deployed()
    assert "gpu-platform.llm" not in groups and "llm-serving-dashboard" not in maps
    groups, maps = deployed(llm_namespace="chat")
    assert groups[-1] == "gpu-platform.llm" and "llm-serving-dashboard" in maps


def test_a_stack_with_an_llm_passes_it_to_monitoring_and_lets_keda_read_prometheus():
    base = {"cloud": "aws", "region": "us-west-2", "inference": {"enabled": False},
            "nodePools": [{"name": "l4", "instanceType": "g6.2xlarge", "maxNodes": 2}]}
    plain = config.parse_config(base, "s")
    with_llm = config.parse_config({**base, "llm": {"model": "Qwen/Qwen3-8B", "namespace": "chat"}}, "s")
    fixed = config.parse_config({**base, "llm": {"model": "Qwen/Qwen3-8B", "autoscaler": "none"}}, "s")
    specs = [p.spec() for p in plain.gpu_pools()]
    assert "llm_namespace" not in monitoring_args(plain, specs)
    assert monitoring_args(with_llm, specs)["llm_namespace"] == "chat"
    # The inference app is off: KEDA reads Prometheus for the LLM alone, and only when it scales it.
    assert prometheus_clients(plain, specs) == ["gpu-optimizer"]
    assert prometheus_clients(with_llm, specs) == ["gpu-optimizer", "keda"]
    assert prometheus_clients(fixed, specs) == ["gpu-optimizer"]
