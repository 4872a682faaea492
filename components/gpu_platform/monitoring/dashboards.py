"""Grafana dashboards built in code: cluster GPU overview, team usage against quota, inference service.

Pure: each ``*_dashboard()`` returns the dashboard JSON model (a dict) built from small panel builders; queries
read the series our recording rules produce (`alerts`) or upstream metrics named in `metric_names`, so a
renamed metric breaks a test instead of a panel. `dashboard_expressions` lists every PromQL query of a
dashboard (panels and variables) with Grafana's variables substituted, for ``promtool`` to parse.
"""

import re
from collections.abc import Iterator, Sequence
from typing import Any, Optional

from . import alerts as a
from . import llm_monitoring, showback_dashboard
from . import metric_names as m
from .panels import (  # noqa: F401  (re-exported: the builders' home before panels)
    DATASOURCE,
    FOLDER,
    GRID_WIDTH,
    SCHEMA_VERSION,
    Size,
    bar_gauge,
    dashboard,
    gauge,
    layout,
    panel,
    query_variable,
    row,
    stat,
    table,
    target,
    timeseries,
)

DEFAULT_THRESHOLDS = a.AlertThresholds()


# ---------------------------------------------------------------------------------------------------------
# Dashboards


def cluster_overview_dashboard() -> dict[str, Any]:
    """GPUs per pool, node and GPU: capacity, allocation, utilisation, memory, temperature, XIDs."""
    pool = 'pool=~"$pool"'
    node = f'{pool}, node=~"$node"'
    panels = [
        row("Cluster"),
        stat("Allocatable GPUs", f"sum({a.POOL_GPU_ALLOCATABLE}{{{pool}}})",
             description="GPU devices the device plugins advertise (MIG and time-sliced devices count each)."),
        stat("Allocated GPUs", f"sum({a.POOL_GPU_ALLOCATED}{{{pool}}})",
             description="GPU devices held by scheduled pods that have not finished."),
        stat("Busy GPUs", f"sum({a.POOL_GPU_BUSY}{{{pool}}})",
             description="GPUs above the idle utilisation threshold."),
        stat("Allocated but idle", f"sum({a.POOL_GPU_ALLOCATED_IDLE}{{{pool}}})",
             thresholds=[(None, "green"), (1, "orange")],
             description="GPUs attributed to a pod yet under the idle threshold: waste."),
        gauge("Average GPU utilisation", f"avg({a.GPU_UTILIZATION}{{{pool}}})"),
        stat("GPUs with an XID (24h)", f"count(changes({a.GPU_XID_LAST}{{{pool}}}[24h]) > 0) or vector(0)",
             thresholds=[(None, "green"), (1, "red")]),
        row("Per pool"),
        timeseries("GPU utilisation by pool", [target(f"{a.POOL_GPU_UTILIZATION}{{{pool}}}", "{{pool}}")],
                   "percent"),
        timeseries("Allocated vs allocatable vs busy GPUs", [
            target(f"{a.POOL_GPU_ALLOCATABLE}{{{pool}}}", "{{pool}} allocatable"),
            target(f"{a.POOL_GPU_ALLOCATED}{{{pool}}}", "{{pool}} allocated"),
            target(f"{a.POOL_GPU_BUSY}{{{pool}}}", "{{pool}} busy"),
        ], "none"),
        timeseries("GPU memory used by pool", [target(f"{a.POOL_GPU_MEMORY_USED_RATIO}{{{pool}}}", "{{pool}}")],
                   "percentunit"),
        timeseries("Unhealthy GPU devices by pool", [
            target(f"{a.POOL_GPU_CAPACITY}{{{pool}}} - {a.POOL_GPU_ALLOCATABLE}{{{pool}}}", "{{pool}}")], "none"),
        row("Per node"),
        timeseries("GPU utilisation by node", [target(f"{a.NODE_GPU_UTILIZATION}{{{node}}}", "{{node}}")],
                   "percent"),
        timeseries("Hottest GPU by node", [target(f"max by (node) ({a.GPU_TEMPERATURE}{{{node}}})", "{{node}}")],
                   "celsius"),
        row("Per GPU"),
        timeseries("GPU utilisation", [target(f"{a.GPU_UTILIZATION}{{{node}}}",
                                              "{{node}} gpu{{gpu}} {{GPU_I_PROFILE}} {{namespace}}/{{pod}}")],
                   "percent"),
        timeseries("Graphics engine active", [target(f"{a.GPU_ENGINE_ACTIVE}{{{node}}}",
                                                     "{{node}} gpu{{gpu}} {{namespace}}/{{pod}}")], "percentunit",
                   description="DCGM_FI_PROF_GR_ENGINE_ACTIVE: a truer busy signal than utilisation (DCP GPUs)."),
        timeseries("GPU memory used", [target(f"{a.GPU_MEMORY_USED}{{{node}}}",
                                              "{{node}} gpu{{gpu}} {{namespace}}/{{pod}}")], "bytes"),
        timeseries("GPU temperature", [target(f"{a.GPU_TEMPERATURE}{{{node}}}", "{{node}} gpu{{gpu}}")], "celsius"),
        table("GPUs now", [
            target(f"{a.GPU_UTILIZATION}{{{node}}}"),
            target(f"{a.GPU_MEMORY_USED_RATIO}{{{node}}}"),
        ], description="Every GPU (or MIG instance) with the pod it serves, utilisation and memory used."),
    ]
    variables = [
        query_variable("pool", "Pool", a.NODE_POOL_INFO, "pool"),
        query_variable("node", "Node", f'{a.NODE_POOL_INFO}{{pool=~"$pool"}}', "node"),
    ]
    return dashboard("gpu-platform-cluster", "GPU cluster overview",
                     "GPU capacity, allocation and health per pool, node and GPU.", panels, variables)


def team_usage_dashboard(thresholds: a.AlertThresholds = DEFAULT_THRESHOLDS) -> dict[str, Any]:
    """Per team: GPUs allocated against the ResourceQuota, utilisation, memory, idle pods, Kueue backlog."""
    team = 'team=~"$team"'
    team_pods = f"* on (namespace) group_left (team) {a.NAMESPACE_TEAM_INFO}{{{team}}}"
    panels = [
        row("Quota"),
        bar_gauge("GPUs allocated / quota", [
            target(f"{a.TEAM_GPU_ALLOCATED}{{{team}}} / {a.TEAM_GPU_QUOTA}{{{team}}}", "{{team}}")],
            "percentunit", description="Share of the team's requests.nvidia.com/gpu ResourceQuota in use."),
        timeseries("GPUs allocated vs quota", [
            target(f"{a.TEAM_GPU_ALLOCATED}{{{team}}}", "{{team}} allocated"),
            target(f"{a.TEAM_GPU_QUOTA}{{{team}}}", "{{team}} quota"),
        ], "none"),
        row("Usage"),
        timeseries("GPU utilisation by team", [target(f"{a.TEAM_GPU_UTILIZATION}{{{team}}}", "{{team}}")],
                   "percent"),
        timeseries("GPU memory used by team", [target(f"{a.TEAM_GPU_MEMORY_USED}{{{team}}}", "{{team}}")],
                   "bytes", stacked=True),
        timeseries("GPU utilisation by pod", [
            target(f"{a.POD_GPU_UTILIZATION} {team_pods}", "{{team}} {{namespace}}/{{pod}}")], "percent", Size(24)),
        table("Pods holding idle GPUs", [
            target(f"({a.POD_GPU_UTILIZATION} {team_pods}) < {thresholds.idle_utilization_percent:g}")],
            description="Pods whose GPUs are under the idle threshold right now."),
        row("Queues"),
        # Each team's ClusterQueue is named after the team (scheduling layer).
        timeseries("Kueue pending workloads by ClusterQueue", [
            target(f'sum by (cluster_queue, status) ({m.KUEUE_PENDING_WORKLOADS}{{cluster_queue=~"$team", '
                   f'{a.KUEUE_LEADER}}})',
                   "{{cluster_queue}} {{status}}")],
            "none", Size(24)),
    ]
    variables = [query_variable("team", "Team", a.NAMESPACE_TEAM_INFO, "team")]
    return dashboard("gpu-platform-teams", "GPU usage by team",
                     "GPU allocation against each team's quota, utilisation and queue backlog.", panels, variables)


def inference_dashboard(default_namespace: str = "inference",
                        thresholds: a.AlertThresholds = DEFAULT_THRESHOLDS) -> dict[str, Any]:
    """The inference service: throughput, latency quantiles against the SLO, batch sizes, queue, errors, GPUs."""
    ns = 'namespace="$namespace"'
    bucket, _, _ = m.histogram_series(m.INFERENCE_REQUEST_DURATION)
    batch_bucket, batch_sum, batch_count = m.histogram_series(m.INFERENCE_BATCH_SIZE)
    slo = thresholds.inference_latency_seconds

    def quantile(q: float, series: str) -> str:
        return f"histogram_quantile({q:g}, sum by (le) (rate({series}{{{ns}}}[$__rate_interval])))"

    panels = [
        row("Traffic"),
        stat("Requests per second", f"sum(rate({m.INFERENCE_REQUESTS_TOTAL}{{{ns}}}[$__rate_interval]))", "reqps"),
        stat("p99 latency", quantile(0.99, bucket), "s", thresholds=[(None, "green"), (slo, "red")]),
        stat("Failed request ratio", f"sum(rate({m.INFERENCE_ERRORS_TOTAL}{{{ns}}}[$__rate_interval])) / "
                            f"sum(rate({m.INFERENCE_REQUESTS_TOTAL}{{{ns}}}[$__rate_interval]))", "percentunit",
             thresholds=[(None, "green"), (0.01, "red")]),
        stat("Queue depth", f"sum({m.INFERENCE_QUEUE_DEPTH}{{{ns}}})"),
        stat("Mean batch size", f"sum(rate({batch_sum}{{{ns}}}[$__rate_interval])) / "
                                f"sum(rate({batch_count}{{{ns}}}[$__rate_interval]))"),
        stat("Replicas on GPUs", f"count({a.POD_GPU_UTILIZATION}{{{ns}}})"),
        timeseries("Throughput by status", [
            target(f"sum by (status) (rate({m.INFERENCE_REQUESTS_TOTAL}{{{ns}}}[$__rate_interval]))", "{{status}}")],
            "reqps", stacked=True),
        timeseries("Latency", [
            target(quantile(0.5, bucket), "p50"), target(quantile(0.95, bucket), "p95"),
            target(quantile(0.99, bucket), "p99"), target(f"vector({slo:g})", "SLO"),
        ], "s"),
        row("Batching"),
        timeseries("Batch size", [
            target(f"sum(rate({batch_sum}{{{ns}}}[$__rate_interval])) / "
                   f"sum(rate({batch_count}{{{ns}}}[$__rate_interval]))", "mean"),
            target(quantile(0.5, batch_bucket), "p50"), target(quantile(0.95, batch_bucket), "p95"),
        ], "none"),
        timeseries("Queue depth by pod", [target(f"sum by (pod) ({m.INFERENCE_QUEUE_DEPTH}{{{ns}}})", "{{pod}}")],
                   "none"),
        row("Errors and GPUs"),
        timeseries("Errors by reason", [
            target(f"sum by (reason) (rate({m.INFERENCE_ERRORS_TOTAL}{{{ns}}}[$__rate_interval]))", "{{reason}}")],
            "reqps", stacked=True),
        timeseries("GPU utilisation by replica", [target(f"{a.POD_GPU_UTILIZATION}{{{ns}}}", "{{pod}}")],
                   "percent"),
        timeseries("GPU memory by replica", [target(f"{a.POD_GPU_MEMORY_USED}{{{ns}}}", "{{pod}}")], "bytes"),
    ]
    variables = [query_variable("namespace", "Namespace", m.INFERENCE_REQUESTS_TOTAL, "namespace", multi=False,
                                default=default_namespace)]
    return dashboard("gpu-platform-inference", "Inference service",
                     "Throughput, latency against the SLO, batching and GPU use of the inference service.",
                     panels, variables)


def accelerator_usage_dashboard(resources: list[str]) -> dict[str, Any]:
    """Allocation of other vendors' accelerators (Neuron devices and cores, AMD GPUs, TPU chips) against team quotas
    and pool capacity, one row per extended resource (`alerts.accelerator_recording_group`)."""
    panels: list[dict] = []
    for resource in resources:
        only = f'resource="{resource}"'
        panels += [
            row(resource),
            bar_gauge(f"{resource}: allocated / quota per team", [
                target(f"{a.TEAM_ACCELERATOR_ALLOCATED}{{{only}}} / {a.TEAM_ACCELERATOR_QUOTA}{{{only}}}",
                       "{{team}}")], unit="percentunit",
                description=f"Share of each team's requests.{resource} ResourceQuota held by live pods."),
            timeseries(f"{resource}: allocated vs allocatable per pool", [
                target(f"{a.POOL_ACCELERATOR_ALLOCATED}{{{only}}}", "{{pool}} allocated"),
                target(f"{a.POOL_ACCELERATOR_ALLOCATABLE}{{{only}}}", "{{pool}} allocatable")]),
        ]
    return dashboard("gpu-platform-accelerators", "Accelerator allocation",
                     "Non-NVIDIA accelerators (AWS Neuron, AMD, Google TPU) requested against team quotas and pool "
                     "capacity; their device metrics are on each vendor's dashboard.", panels, [])


def all_dashboards(inference_namespace: str = "inference",
                   thresholds: a.AlertThresholds = DEFAULT_THRESHOLDS,
                   accelerator_resources: Sequence[str] = (),
                   llm_namespace: Optional[str] = None) -> dict[str, dict[str, Any]]:
    """Every dashboard by its short name (the ConfigMap suffix and JSON file name); the accelerator allocation
    dashboard only where pools advertise ``accelerator_resources`` (non-NVIDIA extended resources), the LLM serving
    dashboard only with an LLM service (opening on ``llm_namespace``)."""
    result = {
        "gpu-cluster-overview": cluster_overview_dashboard(),
        "gpu-team-usage": team_usage_dashboard(thresholds),
        "gpu-inference-service": inference_dashboard(inference_namespace, thresholds),
        showback_dashboard.SLUG: showback_dashboard.showback_dashboard(),
    }
    if accelerator_resources:
        result["accelerator-usage"] = accelerator_usage_dashboard(list(accelerator_resources))
    if llm_namespace:
        result[llm_monitoring.DASHBOARD_SLUG] = llm_monitoring.llm_dashboard(llm_namespace)
    return result


# ---------------------------------------------------------------------------------------------------------
# Expressions, for checking

# Grafana's built-in and dashboard variables as they appear in our queries, with a representative value.
_BUILTINS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}
_VARIABLE = re.compile(r"\$(\w+)")
_LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.+),\s*\w+\)$")


def substitute_variables(expr: str) -> str:
    """``expr`` with Grafana variables replaced by plain values so that it is valid PromQL."""
    for name, value in _BUILTINS.items():
        expr = expr.replace(name, value)
    return _VARIABLE.sub("value", expr)


def dashboard_expressions(dash: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and query variable, variables substituted."""
    for p in dash["panels"]:
        for t in p.get("targets", []):
            yield f"{dash['uid']}/{p['title']}/{t['refId']}", substitute_variables(t["expr"])
    for v in dash["templating"]["list"]:
        match = _LABEL_VALUES.match(v["query"]["query"])
        if match is None:
            raise ValueError(f"{dash['uid']}: variable {v['name']}: not a label_values() query")
        yield f"{dash['uid']}/${v['name']}", substitute_variables(match.group("selector"))
