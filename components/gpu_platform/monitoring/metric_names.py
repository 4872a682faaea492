"""Every upstream metric the platform's rules and dashboards read, with where each one comes from.

Rules and dashboards name metrics through these constants only, and a test checks that every metric a rendered
expression selects is either listed here or recorded by our own rules. Sources (verified at these versions):

- DCGM exporter: ``NVIDIA/dcgm-exporter`` ``etc/default-counters.csv`` (4.5.3-4.8.2; the GPU Operator ships the
  same fields in ``dcp-metrics-included.csv``). Frame-buffer values are MiB. ``DCGM_FI_DEV_XID_ERRORS`` is a gauge
  holding the LAST XID seen, not a counter.
- kube-state-metrics v2.20.0 (subchart 8.4.0 of kube-prometheus-stack 88.5.3): ``docs/metrics/**``. Extended
  resources are sanitised in ``resource`` (``nvidia.com/gpu`` -> ``nvidia_com_gpu``) on pod and node metrics, but
  ``kube_resourcequota`` keeps the raw quota name (``requests.nvidia.com/gpu``).
- Kueue v0.16.2 / v0.19.2: ``pkg/metrics/metrics.go`` (``kueue_pending_workloads{cluster_queue,status}``,
  ``kueue_admitted_workloads_total{cluster_queue,priority_class}``).
- The reference inference app (issue 10): the names its ``/metrics`` endpoint serves.
- vLLM v0.31.0 (the LLM service's model server, V1 engine): ``vllm/v1/metrics/loggers.py`` and the release's metrics
  docs (docs.vllm.ai ``usage/metrics``). Labels ``model_name`` (the served model name) and ``engine``; counters end in
  ``_total``. ``vllm:kv_cache_usage_perc`` is a fraction (0-1) despite its name; ``vllm:gpu_cache_usage_perc`` and
  ``vllm:time_per_output_token_seconds`` are deprecated names vLLM has removed (the latter in 0.13).
"""

import re

# DCGM exporter (default counters).
DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
"""GPU utilisation, percent (0-100)."""
DCGM_GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
"""Ratio of time the graphics/compute engine is active (0-1; DCP metric, datacenter GPUs)."""
DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"
"""Frame-buffer memory used, MiB."""
DCGM_FB_FREE = "DCGM_FI_DEV_FB_FREE"
"""Frame-buffer memory free, MiB."""
DCGM_GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
"""GPU temperature, degrees C."""
DCGM_XID_ERRORS = "DCGM_FI_DEV_XID_ERRORS"
"""Value of the last XID error seen (a gauge)."""
DCGM_POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
"""Power draw, W."""

# kube-state-metrics.
KSM_POD_REQUESTS = "kube_pod_container_resource_requests"
KSM_POD_PHASE = "kube_pod_status_phase"
KSM_NODE_ALLOCATABLE = "kube_node_status_allocatable"
KSM_NODE_CAPACITY = "kube_node_status_capacity"
KSM_NODE_LABELS = "kube_node_labels"
KSM_NAMESPACE_LABELS = "kube_namespace_labels"
KSM_RESOURCE_QUOTA = "kube_resourcequota"

# Kueue.
KUEUE_PENDING_WORKLOADS = "kueue_pending_workloads"
KUEUE_ADMITTED_WORKLOADS_TOTAL = "kueue_admitted_workloads_total"
KUEUE_CLUSTER_QUEUE_RESOURCE_USAGE = "kueue_cluster_queue_resource_usage"
"""Quota admitted workloads use, labels ``cohort``, ``cluster_queue``, ``flavor``, ``resource`` (the Kubernetes name,
``nvidia.com/gpu``), ``replica_role``; reported with ``metrics.enableClusterQueueResources`` (the platform sets it)."""

# The reference inference app.
INFERENCE_REQUESTS_TOTAL = "inference_requests_total"
"""Counter of requests, label ``status``."""
INFERENCE_REQUEST_DURATION = "inference_request_duration_seconds"
"""Histogram of request latency in seconds."""
INFERENCE_BATCH_SIZE = "inference_batch_size"
"""Histogram of the batch sizes the server ran."""
INFERENCE_QUEUE_DEPTH = "inference_queue_depth"
"""Gauge of requests waiting for a batch."""
INFERENCE_ERRORS_TOTAL = "inference_errors_total"
"""Counter of failed requests, label ``reason``."""

# vLLM.
VLLM_REQUESTS_WAITING = "vllm:num_requests_waiting"
"""Gauge of requests waiting to be scheduled (the queue the autoscaler and the endpoint picker read)."""
VLLM_REQUESTS_RUNNING = "vllm:num_requests_running"
"""Gauge of requests in the running batch."""
VLLM_KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
"""Gauge of the KV cache in use, 0-1."""
VLLM_TIME_TO_FIRST_TOKEN = "vllm:time_to_first_token_seconds"
"""Histogram of time to first token (TTFT), seconds."""
VLLM_INTER_TOKEN_LATENCY = "vllm:inter_token_latency_seconds"
"""Histogram of the time between two output tokens (time per output token), seconds."""
VLLM_E2E_LATENCY = "vllm:e2e_request_latency_seconds"
"""Histogram of whole-request latency, seconds."""
VLLM_PREEMPTIONS_TOTAL = "vllm:num_preemptions_total"
"""Counter of requests preempted (their KV cache evicted, to be recomputed) for want of KV-cache space."""
VLLM_PROMPT_TOKENS_TOTAL = "vllm:prompt_tokens_total"
"""Counter of prompt (prefill) tokens processed."""
VLLM_GENERATION_TOKENS_TOTAL = "vllm:generation_tokens_total"
"""Counter of tokens generated."""
VLLM_REQUEST_SUCCESS_TOTAL = "vllm:request_success_total"
"""Counter of finished requests, label ``finished_reason`` (stop, length, abort...)."""


def histogram_series(name: str) -> tuple[str, str, str]:
    """The three series a Prometheus histogram exposes."""
    return f"{name}_bucket", f"{name}_sum", f"{name}_count"


UPSTREAM_METRICS: frozenset[str] = frozenset({
    DCGM_GPU_UTIL, DCGM_GR_ENGINE_ACTIVE, DCGM_FB_USED, DCGM_FB_FREE, DCGM_GPU_TEMP, DCGM_XID_ERRORS,
    DCGM_POWER_USAGE,
    KSM_POD_REQUESTS, KSM_POD_PHASE, KSM_NODE_ALLOCATABLE, KSM_NODE_CAPACITY, KSM_NODE_LABELS,
    KSM_NAMESPACE_LABELS, KSM_RESOURCE_QUOTA,
    KUEUE_PENDING_WORKLOADS, KUEUE_ADMITTED_WORKLOADS_TOTAL, KUEUE_CLUSTER_QUEUE_RESOURCE_USAGE,
    INFERENCE_REQUESTS_TOTAL, INFERENCE_QUEUE_DEPTH, INFERENCE_ERRORS_TOTAL,
    *histogram_series(INFERENCE_REQUEST_DURATION), *histogram_series(INFERENCE_BATCH_SIZE),
    VLLM_REQUESTS_WAITING, VLLM_REQUESTS_RUNNING, VLLM_KV_CACHE_USAGE, VLLM_PREEMPTIONS_TOTAL, VLLM_PROMPT_TOKENS_TOTAL,
    VLLM_GENERATION_TOKENS_TOTAL, VLLM_REQUEST_SUCCESS_TOTAL, *histogram_series(VLLM_TIME_TO_FIRST_TOKEN),
    *histogram_series(VLLM_INTER_TOKEN_LATENCY), *histogram_series(VLLM_E2E_LATENCY),
})
"""Every metric an exporter the platform deploys (or the reference app) really serves and our queries read."""


_CLAUSE = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.])[A-Za-z_:][\w:]*")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
             "group_right", "inf", "nan"}


def selected_metrics(expr: str) -> set[str]:
    """Metric names a PromQL expression selects: strings, matchers, ranges, label lists and calls are removed.

    A lexical reading, enough for the expressions the platform writes (tests check each against the catalog).
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = _CLAUSE.sub(" ", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        rest = text[match.end():].lstrip()
        if rest.startswith("(") or match.group(0).lower() in _KEYWORDS:
            continue
        names.add(match.group(0))
    return names
