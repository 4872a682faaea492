"""The LLM service's alerts and Grafana dashboard, from vLLM's own metrics (`metric_names`, ``vllm:*``).

Pure, like `alerts` and `dashboards`: `alert_group` is a `alerts.RuleGroup` (a Prometheus rule-file group and a
``PrometheusRule`` ``spec.groups`` item, tested with ``promtool``), `llm_dashboard` a dashboard JSON model. The
monitoring layer adds both only to stacks with an ``llm`` section (`alerts.rule_set`, `dashboards.all_dashboards`).

What is watched, per namespace and served model (vLLM labels every series ``model_name``):

- time to first token (TTFT), the wait before an answer starts: queueing and prefill;
- time per output token (vLLM's inter-token latency), the speed of the answer once it streams;
- KV-cache usage: a replica whose cache is full queues new requests and preempts running ones;
- preemptions: requests evicted from the KV cache mid-answer and recomputed later, the cost of a cache too small for
  the load (more replicas, a shorter ``maxModelLen`` or more GPU memory per replica).
"""

from dataclasses import dataclass
from typing import Any

from . import metric_names as m
from . import panels as d
from . import rule_model as a

GROUP_NAME = "gpu-platform.llm"
DASHBOARD_SLUG = "llm-serving"
DASHBOARD_UID = "gpu-platform-llm"
SERVICE = ("namespace", "model_name")
"""What identifies one LLM service in vLLM's series (the scrape adds ``namespace``)."""


@dataclass(frozen=True)
class LlmAlertThresholds:
    """The LLM alerts' thresholds. Conventional interactive-chat targets: an answer starts within 2 s and streams
    faster than a person reads (about 7 tokens a second, 150 ms a token)."""

    time_to_first_token_seconds: float = 2.0
    time_per_output_token_seconds: float = 0.15
    latency_quantile: float = 0.95
    latency_for: str = "10m"
    kv_cache_usage: float = 0.95
    """Average KV-cache usage of the service's replicas (0-1) that alerts."""
    kv_cache_for: str = "10m"
    preemptions_for: str = "15m"
    """How long preemptions must go on without a pause."""


DEFAULT_THRESHOLDS = LlmAlertThresholds()


def _quantile(q: float, metric: str, window: str, by: tuple[str, ...] = SERVICE, selector: str = "") -> str:
    bucket = m.histogram_series(metric)[0]
    matcher = f"{{{selector}}}" if selector else ""
    return f"histogram_quantile({q:g}, sum by ({', '.join((*by, 'le'))}) (rate({bucket}{matcher}[{window}])))"


def alert_group(runbook_base_url: str, thresholds: LlmAlertThresholds = DEFAULT_THRESHOLDS) -> a.RuleGroup:
    """TTFT, time per output token, KV-cache saturation and preemptions of every LLM service, each with severity
    and runbook."""
    t = thresholds
    q = t.latency_quantile
    percentile = f"p{q * 100:g}"
    service = "{{ $labels.model_name }} in {{ $labels.namespace }}"
    by = ", ".join(SERVICE)
    rules = (
        a.AlertRule(
            "LlmTimeToFirstTokenHigh",
            f"{_quantile(q, m.VLLM_TIME_TO_FIRST_TOKEN, '5m')} > {t.time_to_first_token_seconds:g}",
            "warning", f"LLM {percentile} time to first token {{{{ $value | humanizeDuration }}}} for {service}",
            f"The {q:g} quantile of the time to first token of {service} has been above "
            f"{t.time_to_first_token_seconds:g}s for {t.latency_for}: requests queue (waiting requests, KV cache "
            "full) or prompts are long for the GPUs.",
            a.runbook(runbook_base_url, "LlmTimeToFirstTokenHigh"), t.latency_for),
        a.AlertRule(
            "LlmTimePerOutputTokenHigh",
            f"{_quantile(q, m.VLLM_INTER_TOKEN_LATENCY, '5m')} > {t.time_per_output_token_seconds:g}",
            "warning", f"LLM {percentile} time per output token {{{{ $value | humanizeDuration }}}} for {service}",
            f"The {q:g} quantile of the time between output tokens of {service} has been above "
            f"{t.time_per_output_token_seconds:g}s for {t.latency_for}: the replicas run batches too large for "
            "their GPUs.",
            a.runbook(runbook_base_url, "LlmTimePerOutputTokenHigh"), t.latency_for),
        a.AlertRule(
            "LlmKvCacheNearlyFull",
            f"avg by ({by}) ({m.VLLM_KV_CACHE_USAGE}) > {t.kv_cache_usage:g}",
            "warning", f"LLM KV cache {{{{ $value | humanizePercentage }}}} used for {service}",
            f"The replicas of {service} have used more than {t.kv_cache_usage:.0%} of their KV cache on average for "
            f"{t.kv_cache_for}: new requests wait and running ones get preempted; the autoscaler is at its maximum "
            "or cannot add replicas.",
            a.runbook(runbook_base_url, "LlmKvCacheNearlyFull"), t.kv_cache_for),
        a.AlertRule(
            "LlmPreemptions",
            f"sum by ({by}) (rate({m.VLLM_PREEMPTIONS_TOTAL}[5m])) > 0",
            "warning", f"LLM requests preempted for {service}",
            f"{service} has preempted requests (evicted from the KV cache and recomputed) without a pause for "
            f"{t.preemptions_for}, {{{{ printf \"%.2f\" $value }}}} a second now: its KV cache is too small for the "
            "load.",
            a.runbook(runbook_base_url, "LlmPreemptions"), t.preemptions_for),
    )
    return a.RuleGroup(GROUP_NAME, rules)


def llm_dashboard(default_namespace: str = "llm", thresholds: LlmAlertThresholds = DEFAULT_THRESHOLDS
                  ) -> dict[str, Any]:
    """One LLM service: throughput, TTFT and time per output token against their alert thresholds, queue, KV cache,
    preemptions, tokens per second and the replicas' GPUs."""
    sel = 'namespace="$namespace", model_name=~"$model"'
    window = "$__rate_interval"

    def quantile(q: float, metric: str) -> str:
        return _quantile(q, metric, window, by=(), selector=sel)

    def rate(metric: str, by: str = "") -> str:
        grouping = f" by ({by})" if by else ""
        return f"sum{grouping} (rate({metric}{{{sel}}}[{window}]))"

    ttft, tpot = thresholds.time_to_first_token_seconds, thresholds.time_per_output_token_seconds
    panels = [
        d.row("Serving"),
        d.stat("Requests per second", rate(m.VLLM_REQUEST_SUCCESS_TOTAL), "reqps",
               description="Finished requests (any finish reason) per second."),
        d.stat("TTFT p95", quantile(0.95, m.VLLM_TIME_TO_FIRST_TOKEN), "s",
               thresholds=[(None, "green"), (ttft, "red")]),
        d.stat("Time per output token p95", quantile(0.95, m.VLLM_INTER_TOKEN_LATENCY), "s",
               thresholds=[(None, "green"), (tpot, "red")]),
        d.stat("KV-cache usage", f"avg({m.VLLM_KV_CACHE_USAGE}{{{sel}}})", "percentunit",
               thresholds=[(None, "green"), (0.8, "orange"), (thresholds.kv_cache_usage, "red")],
               description="Average over the replicas; the autoscaler's target is 0.8 unless the stack sets another."),
        d.stat("Waiting requests", f"sum({m.VLLM_REQUESTS_WAITING}{{{sel}}})",
               thresholds=[(None, "green"), (1, "orange")]),
        d.stat("Replicas serving", f"count(count by (pod) ({m.VLLM_REQUESTS_RUNNING}{{{sel}}}))"),
        d.row("Latency"),
        d.timeseries("Time to first token", [
            d.target(quantile(0.5, m.VLLM_TIME_TO_FIRST_TOKEN), "p50"),
            d.target(quantile(0.95, m.VLLM_TIME_TO_FIRST_TOKEN), "p95"),
            d.target(quantile(0.99, m.VLLM_TIME_TO_FIRST_TOKEN), "p99"),
            d.target(f"vector({ttft:g})", "alert threshold"),
        ], "s"),
        d.timeseries("Time per output token", [
            d.target(quantile(0.5, m.VLLM_INTER_TOKEN_LATENCY), "p50"),
            d.target(quantile(0.95, m.VLLM_INTER_TOKEN_LATENCY), "p95"),
            d.target(f"vector({tpot:g})", "alert threshold"),
        ], "s"),
        d.timeseries("End-to-end request latency", [
            d.target(quantile(0.5, m.VLLM_E2E_LATENCY), "p50"),
            d.target(quantile(0.95, m.VLLM_E2E_LATENCY), "p95"),
        ], "s", d.Size(24)),
        d.row("Load"),
        d.timeseries("Running and waiting requests by replica", [
            d.target(f"sum by (pod) ({m.VLLM_REQUESTS_RUNNING}{{{sel}}})", "{{pod}} running"),
            d.target(f"sum by (pod) ({m.VLLM_REQUESTS_WAITING}{{{sel}}})", "{{pod}} waiting"),
        ], "none"),
        d.timeseries("KV-cache usage by replica", [
            d.target(f"max by (pod) ({m.VLLM_KV_CACHE_USAGE}{{{sel}}})", "{{pod}}")], "percentunit"),
        d.timeseries("Preemptions per second", [d.target(rate(m.VLLM_PREEMPTIONS_TOTAL, "pod"), "{{pod}}")], "none",
                     description="Requests evicted from the KV cache to be recomputed: the cache is too small."),
        d.timeseries("Tokens per second", [
            d.target(rate(m.VLLM_PROMPT_TOKENS_TOTAL), "prompt"),
            d.target(rate(m.VLLM_GENERATION_TOKENS_TOTAL), "generated"),
        ], "none", stacked=True),
        d.row("GPUs"),
        d.timeseries("GPU utilisation by replica", [d.target(f'{a.POD_GPU_UTILIZATION}{{namespace="$namespace"}}',
                                                             "{{pod}}")], "percent"),
        d.timeseries("GPU memory by replica", [d.target(f'{a.POD_GPU_MEMORY_USED}{{namespace="$namespace"}}',
                                                        "{{pod}}")], "bytes"),
    ]
    variables = [
        d.query_variable("namespace", "Namespace", m.VLLM_REQUESTS_RUNNING, "namespace", multi=False,
                         default=default_namespace),
        d.query_variable("model", "Model", f'{m.VLLM_REQUESTS_RUNNING}{{namespace="$namespace"}}', "model_name"),
    ]
    return d.dashboard(DASHBOARD_UID, "LLM serving",
                       "vLLM behind the inference gateway: time to first token, time per output token, KV cache, "
                       "preemptions, throughput and GPUs.", panels, variables)
