"""Showback (issue 38 item 5): the recording rules, the query building, the arithmetic, the dashboard, and
``gpu-platform usage`` against a real Prometheus holding a synthetic week whose answer is known (`showback_week`).
"""

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from showback_week import END, EXPECTED, START, UNTIL, BackfilledPrometheus, openmetrics

from gpu_platform import cli
from gpu_platform.monitoring import alerts, dashboards, metric_names, showback_dashboard, showback_queries
from gpu_platform.monitoring import showback_rules as rules
from gpu_platform.monitoring.gpu_monitoring import DEFAULT_RUNBOOK_BASE_URL, RECORDING_RULES_NAME, GpuMonitoring
from gpu_platform.monitoring.showback_report import Report, Usage, gpu_hours, render_text, report, to_json
from gpu_platform.monitoring.usage import parse_since, parse_until
from gpu_platform.pools import GpuPool
from gpu_platform.testing import run_program

POOLS = [GpuPool("h100-train", "existing", "", "h100", 8, 80, 0, 4)]
WEEK = showback_queries.Window(START, END)


def usage(*args: str, capsys) -> tuple[int, str, str]:
    status = cli.main(["usage", *args])
    out, err = capsys.readouterr()
    return status, out, err


# ---------------------------------------------------------------------------------------------------------
# Recording rules


def test_showback_rules_follow_the_per_gpu_and_usage_groups_in_the_deployed_recording_rules():
    rec = run_program(lambda: GpuMonitoring("mon", {"pools": [p.spec() for p in POOLS],
                                                    "alert_thresholds": {"idle_utilization_percent": 12}}))
    [recording] = [r for r in rec.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")
                   if r.inputs["metadata"]["name"] == RECORDING_RULES_NAME]
    groups = recording.inputs["spec"]["groups"]
    assert [g["name"] for g in groups] == ["gpu-platform.gpu.rules", "gpu-platform.usage.rules",
                                           "gpu-platform.showback.rules"]
    assert groups[2]["rules"] == [
        {"record": "team_pool:gpu_admitted:sum", "expr": rules.admitted_expr()},
        {"record": "team_pool:gpu_busy:count", "expr": rules.busy_expr(12)},
        {"record": "team_pool:gpu_kueue_admitted:sum", "expr": rules.kueue_admitted_expr()},
    ]
    # The stack's idle threshold reaches the busy gauge.
    assert rules.busy_expr(12) == ("sum by (team, pool) ((gpu:utilization:percent >= bool 12) * on (namespace) "
                                   "group_left (team) gpu_platform:namespace_team:info)")


def test_showback_rules_read_real_metrics_only():
    assert rules.kueue_admitted_expr() == (
        'sum by (team, pool) (label_replace(label_replace(kueue_cluster_queue_resource_usage{resource="nvidia.com/gpu"'
        ', replica_role!="follower"}, "team", "$1", "cluster_queue", "(.+)"), "pool", "$1", "flavor", "(.+)"))')
    assert "kueue_cluster_queue_resource_usage" in metric_names.UPSTREAM_METRICS
    # Raw gauges: nothing recorded is left, every metric they select is an upstream one.
    for expr in showback_queries.gauges("raw", alerts.AlertThresholds()).values():
        assert metric_names.selected_metrics(expr) <= metric_names.UPSTREAM_METRICS
    raw = showback_queries.gauges("raw", alerts.AlertThresholds())
    assert metric_names.selected_metrics(raw[rules.TEAM_POOL_GPU_BUSY]) == {
        "DCGM_FI_DEV_GPU_UTIL", "kube_pod_container_resource_requests", "kube_pod_status_phase", "kube_node_labels",
        "kube_namespace_labels"}
    assert metric_names.selected_metrics(raw[rules.TEAM_POOL_GPU_KUEUE_ADMITTED]) == {
        "kueue_cluster_queue_resource_usage"}


def test_promtool_unit_test_of_the_showback_rules_bites(tmp_path):
    """tests/promtool/showback.yaml (run with the others by test_monitoring_rules) fails with a wrong threshold:
    train-0's GPU 0 sits exactly at 5%."""
    wrong = alerts.rule_set(POOLS, alerts.AlertThresholds(idle_utilization_percent=6), DEFAULT_RUNBOOK_BASE_URL)
    (tmp_path / "gpu-platform-rules.yaml").write_text(yaml.safe_dump(alerts.rule_file(wrong.all_groups)))
    shutil.copy(Path(__file__).parent / "promtool" / "showback.yaml", tmp_path / "showback.yaml")
    result = subprocess.run([shutil.which("promtool"), "test", "rules", "showback.yaml"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "team_pool:gpu_busy:count" in result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------------------
# Queries


def test_window_rounds_down_to_the_step_and_runs_just_before_its_end():
    win = showback_queries.window(END + 299.9, 7 * 86400)
    assert win == WEEK and win.steps == 2016 and win.query_time == END - 0.001
    with pytest.raises(ValueError, match="multiple of 5m"):
        showback_queries.window(END, 100)


def test_integral_is_a_subquery_over_the_window_at_the_step():
    assert showback_queries.integral("team_pool:gpu_admitted:sum", WEEK) == (
        "sum_over_time((team_pool:gpu_admitted:sum)[604800s:300s])")
    assert showback_queries.gauges("rules", alerts.AlertThresholds()) == {r: r for r in rules.SHOWBACK_RECORDS}
    with pytest.raises(ValueError, match="unknown source 'cached'"):
        showback_queries.gauges("cached", alerts.AlertThresholds())


def test_inline_replaces_recorded_series_recursively_and_leaves_strings_alone():
    records = {"a:x:sum": "sum(b:y:max) * 2", "b:y:max": 'max(label_replace(m, "a:x:sum", "$1", "l", "(.+)"))'}
    assert showback_queries.inline("a:x:sum + c", records) == (
        '(sum((max(label_replace(m, "a:x:sum", "$1", "l", "(.+)")))) * 2) + c')
    with pytest.raises(ValueError, match=re.escape("b:y:max is read with a matcher or range")):
        showback_queries.inline('b:y:max{l="v"}', records)


# ---------------------------------------------------------------------------------------------------------
# Arithmetic and rendering


def test_gpu_hours_and_idle_share():
    assert gpu_hours(2016 * 8, 300) == 1344.0
    assert Usage(100, 25).idle_share == 0.75
    assert Usage(0, 0).idle_share is None
    assert Usage(10, 12).idle_share == 0.0  # more busy than held (a time-sliced GPU counted by two pods)


def test_report_totals_per_team_and_pool():
    integrals = {rules.TEAM_POOL_GPU_ADMITTED: {("a", "p"): 120, ("a", "q"): 24, ("b", "p"): 12},
                 rules.TEAM_POOL_GPU_BUSY: {("a", "p"): 60, ("a", "q"): 0, ("b", "p"): 12, ("c", "p"): 0},
                 rules.TEAM_POOL_GPU_KUEUE_ADMITTED: {("a", "p"): 96}}
    rep = report(integrals, WEEK, "raw")
    assert rep.by_team_pool == {("a", "p"): Usage(10, 5, 8), ("a", "q"): Usage(2, 0, 0), ("b", "p"): Usage(1, 1, 0)}
    assert rep.teams() == {"a": Usage(12, 5, 8), "b": Usage(1, 1, 0)}
    assert rep.pools() == {"p": Usage(11, 6, 8), "q": Usage(2, 0, 0)}
    assert rep.total == Usage(13, 6, 8)


def test_text_of_an_empty_window():
    text = render_text(Report(WEEK, "rules"))
    assert text.splitlines()[0] == ("GPU showback 2026-01-05T00:00:00Z .. 2026-01-12T00:00:00Z (7d in 5m steps), "
                                    "from the recording rules")
    assert "(no team held a GPU in this window)" in text
    assert to_json(Report(WEEK, "rules"))["total"] == {"admitted_gpu_hours": 0.0, "busy_gpu_hours": 0.0,
                                                       "idle_share": None, "kueue_gpu_hours": 0.0}


# ---------------------------------------------------------------------------------------------------------
# The dashboard


def test_showback_dashboard_integrates_like_the_command():
    dash = dashboards.all_dashboards()["gpu-showback"]
    assert dash == showback_dashboard.showback_dashboard()
    assert dash["uid"] == "gpu-platform-showback" and dash["title"] == "GPU showback"
    titles = [p["title"] for p in dash["panels"]]
    assert {"GPU-hours admitted by team", "GPU-hours busy by team", "Idle share by team", "GPU-hours admitted by pool",
            "GPU-hours busy by pool", "Idle share by pool", "GPU-hours by team and pool"} <= set(titles)
    admitted = next(p for p in dash["panels"] if p["title"] == "GPU-hours admitted by team")
    assert admitted["targets"][0]["expr"] == (
        'sum by (team) (sum_over_time(team_pool:gpu_admitted:sum{team=~"$team", pool=~"$pool"}[$__range:300s]))'
        ' * 300 / 3600')
    read = set().union(*(metric_names.selected_metrics(e) for _, e in dashboards.dashboard_expressions(dash)))
    assert read == set(rules.SHOWBACK_RECORDS)


# ---------------------------------------------------------------------------------------------------------
# Flags


@pytest.mark.parametrize(("args", "message"), [
    (["--since", "7x"], "error: --since: '7x' is not a duration such as 7d, 36h or 90m"),
    (["--since", "7m"], "error: --since: '7m' must be a positive whole number of 5m steps"),
    (["--until", "last monday"], "error: --until: 'last monday' is not an RFC 3339 time"),
    (["--until", "2026-01-12T00:00:00"], "error: --until: '2026-01-12T00:00:00' has no time zone"),
    (["--until", "nan"], "error: --until: 'nan' is not a time"),
    (["--idle-threshold", "high"], "error: --idle-threshold: 'high' is not a number"),
    (["--idle-threshold", "120"], "error: --idle-threshold: '120' is not a utilisation percentage (0-100)"),
])
def test_bad_flags_are_one_line_and_exit_2(args, message, capsys):
    status, out, err = usage("--prometheus", "http://127.0.0.1:9", *args, capsys=capsys)
    assert status == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


def test_parse_since_and_until():
    assert parse_since("7d") == 604800 and parse_since("1w2d") == 777600 and parse_since("90m") == 5400
    assert parse_until(None, 123.0) == 123.0
    assert parse_until(UNTIL, 0) == END and parse_until(str(END), 0) == END


def test_a_prometheus_url_that_is_not_http_is_refused(capsys):
    status, _, err = usage("--prometheus", "127.0.0.1:9090", capsys=capsys)
    assert (status, err) == (2, "error: --prometheus: '127.0.0.1:9090' is not an http(s) URL\n")


def test_an_unreachable_prometheus_is_one_line_and_exit_2(capsys):
    import socket

    with socket.socket() as sock:  # a port bound and not listening refuses connections
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        status, out, err = usage("--prometheus", url, capsys=capsys)
    assert status == 2 and out == ""
    assert err.startswith(f"error: --prometheus: Prometheus at {url} is unreachable or too slow: ")
    assert err.count("\n") == 1


def serve(status: int):
    """An HTTP server on 127.0.0.1 that answers every query with an HTML page and ``status``."""
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            body = b"<html>a login page</html>"
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def served_url(status: int) -> Iterator[str]:
    """The URL of a `serve` server answering ``status``, shut down after the test."""
    server = serve(status)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def not_prometheus():
    yield from served_url(200)


@pytest.fixture
def failing_prometheus():
    yield from served_url(503)


def test_an_answer_that_is_not_json_is_one_line_and_exit_2(not_prometheus, capsys):
    status, out, err = usage("--prometheus", not_prometheus, "--source", "raw", capsys=capsys)
    assert status == 2 and out == ""
    assert err == ("error: --prometheus: Prometheus returned something that is not JSON for "
                   "team_pool:gpu_admitted:sum\n")


def test_an_http_error_is_one_line_and_exit_2(failing_prometheus, capsys):
    status, out, err = usage("--prometheus", failing_prometheus, capsys=capsys)
    assert status == 2 and out == ""
    assert err == (f"error: --prometheus: Prometheus at {failing_prometheus} answered HTTP 503 to "
                   f"'{showback_queries.rules_deployed_query()}'\n")


# ---------------------------------------------------------------------------------------------------------
# A synthetic week in a real Prometheus


@pytest.fixture(scope="module")
def week():
    prometheus = BackfilledPrometheus()
    try:
        prometheus.backfill_openmetrics(openmetrics())
        prometheus.start()
        yield prometheus
    finally:
        prometheus.close()


WEEK_TEXT = """\
GPU showback 2026-01-05T00:00:00Z .. 2026-01-12T00:00:00Z (7d in 5m steps), from raw series

TEAM / POOL   ADMITTED GPU-H  BUSY GPU-H  IDLE SHARE  KUEUE GPU-H
product               168.00       84.00       50.0%         0.00
  l4-infer            168.00       84.00       50.0%         0.00
research              936.00      684.00       26.9%       936.00
  h100-train          768.00      516.00       32.8%       768.00
  l4-infer            168.00      168.00        0.0%       168.00
TOTAL                1104.00      768.00       30.4%       936.00

POOL          ADMITTED GPU-H  BUSY GPU-H  IDLE SHARE  KUEUE GPU-H
h100-train            768.00      516.00       32.8%       768.00
l4-infer              336.00      252.00       25.0%       168.00
"""


def test_usage_prints_the_exact_gpu_hours_of_the_synthetic_week(week, capsys):
    """Done-when of issue 38 item 5: the rules are not deployed in this Prometheus, so ``auto`` reads raw series."""
    status, out, err = usage("--prometheus", week.url, "--since", "7d", "--until", UNTIL, capsys=capsys)
    assert (status, err) == (0, "")
    assert out == WEEK_TEXT


def figures(document: dict) -> dict[tuple[str, str], tuple[float, float, float]]:
    return {(t["team"], p["pool"]): (p["admitted_gpu_hours"], p["busy_gpu_hours"], p["kueue_gpu_hours"])
            for t in document["teams"] for p in t["pools"]}


def test_usage_json_of_the_synthetic_week(week, capsys):
    status, out, _ = usage("--prometheus", week.url, "--until", str(END + 120), "--json", capsys=capsys)
    assert status == 0
    document = json.loads(out)
    assert document["window"] == {"start": "2026-01-05T00:00:00Z", "end": "2026-01-12T00:00:00Z",
                                  "step_seconds": 300}
    assert document["source"] == "raw"
    assert figures(document) == EXPECTED
    teams = {t["team"]: t for t in document["teams"]}
    assert {k: teams["research"][k] for k in ("admitted_gpu_hours", "busy_gpu_hours", "idle_share",
                                              "kueue_gpu_hours")} == {
        "admitted_gpu_hours": 936.0, "busy_gpu_hours": 684.0, "idle_share": 0.269231, "kueue_gpu_hours": 936.0}
    assert document["pools"] == [
        {"pool": "h100-train", "admitted_gpu_hours": 768.0, "busy_gpu_hours": 516.0, "idle_share": 0.328125,
         "kueue_gpu_hours": 768.0},
        {"pool": "l4-infer", "admitted_gpu_hours": 336.0, "busy_gpu_hours": 252.0, "idle_share": 0.25,
         "kueue_gpu_hours": 168.0}]
    assert document["total"] == {"admitted_gpu_hours": 1104.0, "busy_gpu_hours": 768.0, "idle_share": 0.304348,
                                 "kueue_gpu_hours": 936.0}


def test_since_shortens_the_window(week, capsys):
    """The last two days: train-1 had finished and train-0's GPU 2 gone idle; Kueue held 4 GPUs."""
    status, out, _ = usage("--prometheus", week.url, "--since", "2d", "--until", UNTIL, "--json", capsys=capsys)
    assert status == 0
    document = json.loads(out)
    assert document["window"]["start"] == "2026-01-10T00:00:00Z"
    assert figures(document) == TWO_DAYS


TWO_DAYS = {("research", "h100-train"): (192.0, 96.0, 192.0), ("research", "l4-infer"): (48.0, 48.0, 48.0),
            ("product", "l4-infer"): (48.0, 24.0, 0.0)}


def test_idle_threshold_reaches_the_raw_busy_gauge(week, capsys):
    """At 20%, eval-0's GPU (10%) is idle all week and serve-0's (40% every other hour) still busy half the time."""
    status, out, _ = usage("--prometheus", week.url, "--until", UNTIL, "--idle-threshold", "20", "--json",
                           capsys=capsys)
    assert status == 0
    assert figures(json.loads(out)) == {("research", "h100-train"): (768.0, 516.0, 768.0),
                                        ("research", "l4-infer"): (168.0, 0.0, 168.0),
                                        ("product", "l4-infer"): (168.0, 84.0, 0.0)}


def test_source_rules_reads_only_the_recorded_gauges(week, capsys):
    """This Prometheus has no showback rules: the rules source finds nothing."""
    status, out, _ = usage("--prometheus", week.url, "--until", UNTIL, "--source", "rules", capsys=capsys)
    assert status == 0
    assert "from the recording rules" in out and "(no team held a GPU in this window)" in out


def test_recorded_gauges_are_preferred_and_agree_with_the_raw_series(tmp_path, capsys):
    """promtool evaluates the showback gauges over the last day and an hour as a Prometheus running the rules would,
    then ``auto`` finds them at the window's start and reads them: the same figures as from raw series.

    (A rule group evaluates at an offset within its interval, so a change reaches the record up to one evaluation
    late; the last day of the week holds no change but serve-0's hourly one, which balances out.)"""
    prometheus = BackfilledPrometheus()
    try:
        prometheus.backfill_openmetrics(openmetrics())
        prometheus.start()
        gauges = showback_queries.gauges("raw", alerts.AlertThresholds())
        rule_file = tmp_path / "showback.yaml"
        rule_file.write_text(yaml.safe_dump({"groups": [
            {"name": rules.GROUP_NAME, "rules": [{"record": r, "expr": e} for r, e in gauges.items()]}]}))
        prometheus.backfill_rules(rule_file, END - 86400 - 3600, END)
        status, out, _ = usage("--prometheus", prometheus.url, "--since", "1d", "--until", UNTIL, "--json",
                               capsys=capsys)
    finally:
        prometheus.close()
    assert status == 0
    document = json.loads(out)
    assert document["source"] == "rules"
    assert figures(document) == {("research", "h100-train"): (96.0, 48.0, 96.0),
                                 ("research", "l4-infer"): (24.0, 24.0, 24.0),
                                 ("product", "l4-infer"): (24.0, 12.0, 0.0)}
