"""Grafana dashboards: valid JSON models, sane layout, every query parses (promtool) and reads real metrics."""

import json
import shutil
import subprocess
from itertools import combinations

import pytest
import yaml

from gpu_platform import labels
from gpu_platform.monitoring import alerts, dashboards, metric_names
from gpu_platform.monitoring.gpu_monitoring import dashboard_configmap_body

DASHBOARDS = dashboards.all_dashboards("serving")


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool not found on PATH: apt-get install -y --no-install-recommends prometheus"
    return path


def panels(dash: dict) -> list[dict]:
    return [p for p in dash["panels"] if p["type"] != "row"]


def test_three_dashboards_with_stable_uids():
    assert {slug: d["uid"] for slug, d in DASHBOARDS.items()} == {
        "gpu-cluster-overview": "gpu-platform-cluster",
        "gpu-team-usage": "gpu-platform-teams",
        "gpu-inference-service": "gpu-platform-inference",
        "gpu-showback": "gpu-platform-showback",
    }


@pytest.mark.parametrize("slug", sorted(DASHBOARDS))
def test_configmap_carries_valid_dashboard_json_for_the_sidecar(slug):
    body = dashboard_configmap_body(slug, "monitoring", DASHBOARDS[slug])
    assert body["metadata"]["labels"][labels.GRAFANA_DASHBOARD_LABEL] == "1"
    assert body["metadata"]["annotations"] == {labels.GRAFANA_FOLDER_ANNOTATION: "GPU Platform"}
    assert body["metadata"]["name"] == f"{slug}-dashboard"
    (filename, text), = body["data"].items()
    assert filename == f"{slug}.json"
    assert json.loads(text) == DASHBOARDS[slug]


@pytest.mark.parametrize("slug", sorted(DASHBOARDS))
def test_panels_are_well_formed_and_do_not_overlap(slug):
    dash = DASHBOARDS[slug]
    assert dash["schemaVersion"] == dashboards.SCHEMA_VERSION
    ids = [p["id"] for p in dash["panels"]]
    assert ids == list(range(1, len(ids) + 1))
    for p in dash["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= dashboards.GRID_WIDTH, p["title"]
    for p in panels(dash):
        assert p["datasource"] == {"type": "prometheus", "uid": "prometheus"}
        assert p["targets"], p["title"]
        assert [t["refId"] for t in p["targets"]] == [chr(ord("A") + i) for i in range(len(p["targets"]))]
        assert all(t["datasource"] == p["datasource"] and t["expr"] for t in p["targets"])
    for a, b in combinations(dash["panels"], 2):
        ga, gb = a["gridPos"], b["gridPos"]
        overlap = (ga["x"] < gb["x"] + gb["w"] and gb["x"] < ga["x"] + ga["w"]
                   and ga["y"] < gb["y"] + gb["h"] and gb["y"] < ga["y"] + ga["h"])
        assert not overlap, (a["title"], b["title"])


def test_layout_wraps_rows_at_24_columns():
    placed = dashboards.layout([dashboards.row("r"), dashboards.stat("a", "up", size=dashboards.Size(16, 4)),
                                dashboards.stat("b", "up", size=dashboards.Size(16, 6)),
                                dashboards.stat("c", "up", size=dashboards.Size(8, 4))])
    assert [p["gridPos"] for p in placed] == [
        {"x": 0, "y": 0, "w": 24, "h": 1}, {"x": 0, "y": 1, "w": 16, "h": 4},
        {"x": 0, "y": 5, "w": 16, "h": 6}, {"x": 16, "y": 5, "w": 8, "h": 4}]


def test_dashboard_variables():
    def variables(slug):
        return {v["name"]: v for v in DASHBOARDS[slug]["templating"]["list"]}

    cluster = variables("gpu-cluster-overview")
    assert cluster["pool"]["query"]["query"] == "label_values(gpu_platform:node_pool:info, pool)"
    assert cluster["node"]["query"]["query"] == 'label_values(gpu_platform:node_pool:info{pool=~"$pool"}, node)'
    assert variables("gpu-team-usage")["team"]["query"]["query"] == (
        "label_values(gpu_platform:namespace_team:info, team)")
    namespace = variables("gpu-inference-service")["namespace"]
    assert namespace["current"]["value"] == "serving" and namespace["multi"] is False


def _exprs() -> list[tuple[str, str]]:
    return [e for dash in DASHBOARDS.values() for e in dashboards.dashboard_expressions(dash)]


def test_every_panel_expression_parses(promtool, tmp_path):
    """promtool has no single-expression parser: each query becomes a recording rule of one checked file."""
    exprs = _exprs()
    assert len(exprs) >= 40
    rules = [{"record": f"dashboard:expr_{i}:check", "expr": expr} for i, (_, expr) in enumerate(exprs)]
    path = tmp_path / "dashboards.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard-expressions", "rules": rules}]}), encoding="utf-8")
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_variables_are_substituted_before_parsing():
    assert dashboards.substitute_variables(
        'sum(rate(x{namespace="$namespace", pool=~"$pool"}[$__rate_interval]))') == (
        'sum(rate(x{namespace="value", pool=~"value"}[5m]))')


def test_every_panel_reads_metrics_that_exist():
    recorded = {r.record for g in alerts.recording_groups([]) for r in g.rules}
    for where, expr in _exprs():
        unknown = metric_names.selected_metrics(expr) - recorded - metric_names.UPSTREAM_METRICS
        assert not unknown, f"{where}: {unknown}"


def test_inference_dashboard_reads_the_apps_metrics_and_shows_the_slo():
    exprs = [e for w, e in dashboards.dashboard_expressions(
        dashboards.inference_dashboard("inference", alerts.AlertThresholds(inference_latency_seconds=0.3)))]
    used = set().union(*(metric_names.selected_metrics(e) for e in exprs))
    assert {"inference_requests_total", "inference_request_duration_seconds_bucket", "inference_batch_size_bucket",
            "inference_batch_size_sum", "inference_batch_size_count", "inference_queue_depth",
            "inference_errors_total", alerts.POD_GPU_UTILIZATION} <= used
    assert "vector(0.3)" in exprs


def test_cluster_dashboard_covers_pool_node_and_gpu():
    titles = [p["title"] for p in DASHBOARDS["gpu-cluster-overview"]["panels"]]
    assert [t for t in titles if t.startswith(("Cluster", "Per "))] == ["Cluster", "Per pool", "Per node", "Per GPU"]
    exprs = " ".join(e for _, e in dashboards.dashboard_expressions(DASHBOARDS["gpu-cluster-overview"]))
    for series in (alerts.POOL_GPU_UTILIZATION, alerts.NODE_GPU_UTILIZATION, alerts.GPU_UTILIZATION,
                   alerts.POOL_GPU_ALLOCATED, alerts.POOL_GPU_ALLOCATABLE, alerts.POOL_GPU_BUSY, alerts.GPU_XID_LAST):
        assert series in exprs


def test_team_dashboard_compares_usage_with_quota():
    exprs = [e for _, e in dashboards.dashboard_expressions(DASHBOARDS["gpu-team-usage"])]
    assert 'team:gpu_allocated:sum{team=~"value"} / team:gpu_quota:sum{team=~"value"}' in exprs
    assert ('sum by (cluster_queue, status) (kueue_pending_workloads{cluster_queue=~"value", '
            'replica_role!="follower"})') in exprs
