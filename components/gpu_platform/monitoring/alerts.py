"""GPU recording rules and alerts as data: the ``groups`` of the platform's PrometheusRules.

Pure: `recording_groups(pools)` and `alert_groups(thresholds, runbook_base_url)` return `RuleGroup`s whose
``as_dict()`` is both a Prometheus rule-file group (``promtool check rules`` / ``promtool test rules``) and a
``PrometheusRule`` ``spec.groups`` item.

How DCGM series are attributed to workloads (docs/monitoring.md has the long form):

1. ``gpu:<DCGM metric>:relabel`` normalises the exporter's labels, whatever the scrape config: ``exported_pod`` /
   ``exported_namespace`` / ``exported_container`` (a ServiceMonitor with ``honorLabels: false`` renames the
   workload labels to these) win over ``pod`` / ``namespace`` / ``container``; ``node`` is the first non-empty of
   ``node`` (a relabeling), ``Hostname`` (dcgm-exporter <= 4.5.x, the GPU Operator and GKE) and ``hostname``
   (dcgm-exporter after PR #655). Everything else the target adds (instance, job, service...) is dropped, so two
   scrapes of one exporter collapse into one series.
2. ``gpu:<quantity>:<unit>`` keeps ``namespace``/``pod``/``container`` only where kube-state-metrics shows a
   scheduled, live pod requesting a GPU there. A target's own ``pod`` label (the exporter pod, present on every
   unattributed series under either ``honorLabels`` setting) is stripped. Then the node's pool
   (``gpu-platform.io/pool``, exposed by kube-state-metrics' ``metricLabelsAllowlist``) is joined on.
3. Aggregates per pod, namespace, team (namespace label ``gpu-platform.io/team``), pool and cluster build on 2.
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Optional

from .. import catalog, labels
from ..pools import GpuPool
from . import llm_monitoring
from . import metric_names as m
from .rule_model import (  # noqa: F401  (re-exported: the names' home before rule_model)
    CLUSTER_GPU_ALLOCATABLE,
    CLUSTER_GPU_ALLOCATED,
    CLUSTER_GPU_BUSY,
    CLUSTER_GPU_UTILIZATION,
    GPU_ENGINE_ACTIVE,
    GPU_MEMORY_FREE,
    GPU_MEMORY_USED,
    GPU_MEMORY_USED_RATIO,
    GPU_TEMPERATURE,
    GPU_UTILIZATION,
    GPU_XID_LAST,
    NAMESPACE_GPU_ALLOCATED,
    NAMESPACE_GPU_MEMORY_USED,
    NAMESPACE_GPU_UTILIZATION,
    NAMESPACE_TEAM_INFO,
    NODE_GPU_UTILIZATION,
    NODE_POOL_INFO,
    POD_GPU_ALLOCATED,
    POD_GPU_MEMORY_USED,
    POD_GPU_UTILIZATION,
    POOL_EXPECTED_GPUS,
    POOL_GPU_ALLOCATABLE,
    POOL_GPU_ALLOCATED,
    POOL_GPU_ALLOCATED_IDLE,
    POOL_GPU_BUSY,
    POOL_GPU_CAPACITY,
    POOL_GPU_MEMORY_USED_RATIO,
    POOL_GPU_UTILIZATION,
    RUNBOOK_PATH,
    TEAM_GPU_ALLOCATED,
    TEAM_GPU_MEMORY_USED,
    TEAM_GPU_QUOTA,
    TEAM_GPU_UTILIZATION,
    AlertRule,
    RecordingRule,
    RuleGroup,
    runbook,
)
from .showback_rules import showback_group

# GPU extended resources as kube-state-metrics spells them: whole GPUs, time-sliced GPUs renamed by the device
# plugin (`nvidia.com/gpu.shared`) and MIG devices of the mixed strategy (`nvidia.com/mig-1g.10gb`).
GPU_RESOURCE_REGEX = "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"
TEAM_QUOTA_RESOURCE = "requests.nvidia.com/gpu"
"""The ResourceQuota key the tenancy layer sets per team namespace."""

KUEUE_LEADER = 'replica_role!="follower"'
"""Matcher for the Kueue replica whose metrics count (the leader, or a standalone replica)."""

# XIDs NVIDIA's device plugin treats as application errors (it keeps the GPU healthy on these).
APPLICATION_XIDS = (13, 31, 43, 45, 68, 109)

GPU_LABELS = ("node", "gpu", "UUID", "modelName", "GPU_I_PROFILE", "GPU_I_ID")
"""What identifies one GPU (or MIG instance) once relabelled."""
DEVICE_LABELS = ("node", "gpu", "UUID", "modelName")
"""What identifies one physical GPU."""
WORKLOAD_LABELS = ("namespace", "pod", "container")

MIB = 1048576

# Recorded series other rules, dashboards and the optimizer read: `rule_model`, with the rule types.


# ---------------------------------------------------------------------------------------------------------
# Rule data


@dataclass(frozen=True)
class AlertThresholds:
    """Alert thresholds; the defaults are conventional values (k8s_layer research notes §4.3)."""

    gpu_temperature_celsius: float = 85
    gpu_temperature_for: str = "5m"
    gpu_memory_used_ratio: float = 0.95
    gpu_memory_for: str = "15m"
    xid_window: str = "10m"
    """How long an XID keeps its alert firing after it is seen."""
    node_gpu_loss_for: str = "10m"
    gpu_metrics_missing_for: str = "15m"
    idle_utilization_percent: float = 5
    """A pod's GPUs under this average utilisation count as idle."""
    idle_for: str = "1h"
    kueue_pending_for: str = "30m"
    """A ClusterQueue with pending workloads and no admission for this long alerts."""
    inference_latency_seconds: float = 0.5
    inference_latency_quantile: float = 0.99
    inference_latency_for: str = "10m"

    @staticmethod
    def from_overrides(overrides: Optional[dict[str, Any]]) -> "AlertThresholds":
        """Defaults with ``overrides`` applied; unknown names or malformed values raise `ValueError`."""
        known = {f.name: f for f in fields(AlertThresholds)}
        values: dict[str, Any] = {}
        for key, value in (overrides or {}).items():
            if key not in known:
                raise ValueError(f"alert_thresholds.{key}: unknown threshold (known: {', '.join(sorted(known))})")
            if known[key].type is str:
                if not isinstance(value, str) or not DURATION.fullmatch(value):
                    raise ValueError(f"alert_thresholds.{key}: '{value}' is not a Prometheus duration such as 10m")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"alert_thresholds.{key}: must be a non-negative number, got {value!r}")
            values[key] = value
        return replace(AlertThresholds(), **values)


DURATION = re.compile(r"(\d+(ms|s|m|h|d|w|y))+")


# ---------------------------------------------------------------------------------------------------------
# PromQL helpers


def by(label_names: Iterable[str]) -> str:
    return f"by ({', '.join(label_names)})"


def ksm_label(key: str) -> str:
    """The label kube-state-metrics gives a Kubernetes label key in ``kube_*_labels`` (``label_`` + sanitised)."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def regex_alternatives(values: Iterable[Any]) -> str:
    return "|".join(str(v) for v in values)


def label_info(metric: str, owner: str, key: str, target: str) -> str:
    """``{<owner>, <target>} 1`` from a kube-state-metrics ``kube_*_labels`` metric and a Kubernetes label key.

    ``topk`` keeps one value per owner while a relabelled object's old series is still fresh, so joins on it
    never see duplicates.
    """
    source = ksm_label(key)
    return (f'topk by ({owner}) (1, max by ({owner}, {target}) (label_replace('
            f'{metric}{{{source}!=""}}, "{target}", "$1", "{source}", "(.+)")))')


def relabel_record(metric: str) -> str:
    """Name of the step-1 series of a DCGM metric."""
    return f"gpu:{metric}:relabel"


def relabelled(metric: str) -> str:
    """Step 1: workload labels from ``exported_*`` when present, ``node`` from node/Hostname/hostname."""
    expr = metric
    for target, source in (("pod", "exported_pod"), ("namespace", "exported_namespace"),
                           ("container", "exported_container")):
        expr = f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'
    # label_join puts the candidates in one label; the first non-empty one becomes `node`.
    expr = f'label_join({expr}, "node_candidates", ";", "node", "Hostname", "hostname")'
    expr = f'label_replace({expr}, "node", "$1", "node_candidates", ";*([^;]+).*")'
    return f"max {by(GPU_LABELS + WORKLOAD_LABELS)} ({expr})"


def with_pool(expr: str) -> str:
    """``expr`` with the ``pool`` label of its node joined on; series on nodes of no pool pass unchanged."""
    return (f"(({expr}) * on (node) group_left (pool) {NODE_POOL_INFO})"
            f" or (({expr}) unless on (node) {NODE_POOL_INFO})")


def attributed(series: str) -> str:
    """Step 2: keep workload labels only for live GPU pods; strip them (the exporter's own pod) elsewhere."""
    kept = f"({series} and on (namespace, pod) {POD_GPU_ALLOCATED})"
    stripped = f"max {by(GPU_LABELS)} ({series} unless on (namespace, pod) {POD_GPU_ALLOCATED})"
    return with_pool(f"{kept} or {stripped}")


def per_device(series: str) -> str:
    """Step 2 for device-level metrics (temperature, XID): one series per physical GPU, whoever runs on it."""
    return with_pool(f"max {by(DEVICE_LABELS)} ({series})")


# ---------------------------------------------------------------------------------------------------------
# Recording rules


def _pool_expectations(pools: Sequence[GpuPool]) -> list[RecordingRule]:
    """The physical GPUs each pool's nodes should show (from the catalog shape), for the lost-GPU alert."""
    return [RecordingRule(POOL_EXPECTED_GPUS, f"vector({p.gpus_per_node})", (("pool", p.name),))
            for p in sorted(pools, key=lambda p: p.name)]


def recording_groups(pools: Sequence[GpuPool], thresholds: Optional["AlertThresholds"] = None) -> list[RuleGroup]:
    """The per-GPU normalisation group, the usage aggregates (pod, namespace, team, pool, cluster), then the
    showback gauges per team and pool (`showback_rules`).

    ``thresholds.idle_utilization_percent`` decides which GPUs count as busy in the ``*:gpu_busy:count`` series.
    """
    gpu_resource = f'resource=~"{GPU_RESOURCE_REGEX}"'
    per_gpu = [
        RecordingRule(NODE_POOL_INFO, label_info(m.KSM_NODE_LABELS, "node", labels.POOL_LABEL, "pool")),
        RecordingRule(NAMESPACE_TEAM_INFO, label_info(m.KSM_NAMESPACE_LABELS, "namespace", labels.TEAM_LABEL, "team")),
        # GPUs held by scheduled pods that have not finished (a Pending pod on a node already holds its device).
        RecordingRule(POD_GPU_ALLOCATED, f'sum by (namespace, pod, node) ({m.KSM_POD_REQUESTS}{{{gpu_resource}, '
                                         f'node!=""}} * on (namespace, pod) group_left () max by (namespace, pod) '
                                         f'({m.KSM_POD_PHASE}{{phase=~"Pending|Running"}} == 1))'),
    ]
    for metric in (m.DCGM_GPU_UTIL, m.DCGM_GR_ENGINE_ACTIVE, m.DCGM_FB_USED, m.DCGM_FB_FREE, m.DCGM_GPU_TEMP,
                   m.DCGM_XID_ERRORS):
        per_gpu.append(RecordingRule(relabel_record(metric), relabelled(metric)))
    per_gpu += [
        RecordingRule(GPU_UTILIZATION, attributed(relabel_record(m.DCGM_GPU_UTIL))),
        RecordingRule(GPU_ENGINE_ACTIVE, attributed(relabel_record(m.DCGM_GR_ENGINE_ACTIVE))),
        RecordingRule(GPU_MEMORY_USED, f"({attributed(relabel_record(m.DCGM_FB_USED))}) * {MIB}"),
        RecordingRule(GPU_MEMORY_FREE, f"({attributed(relabel_record(m.DCGM_FB_FREE))}) * {MIB}"),
        RecordingRule(GPU_MEMORY_USED_RATIO, f"{GPU_MEMORY_USED} / ({GPU_MEMORY_USED} + {GPU_MEMORY_FREE})"),
        RecordingRule(GPU_TEMPERATURE, per_device(relabel_record(m.DCGM_GPU_TEMP))),
        RecordingRule(GPU_XID_LAST, per_device(relabel_record(m.DCGM_XID_ERRORS))),
    ]

    idle = (thresholds or AlertThresholds()).idle_utilization_percent
    team_join = f"* on (namespace) group_left (team) {NAMESPACE_TEAM_INFO}"
    pool_join = f"* on (node) group_left (pool) {NODE_POOL_INFO}"
    usage = [
        RecordingRule(POD_GPU_UTILIZATION, f'avg by (namespace, pod) ({GPU_UTILIZATION}{{pod!=""}})'),
        RecordingRule(POD_GPU_MEMORY_USED, f'sum by (namespace, pod) ({GPU_MEMORY_USED}{{pod!=""}})'),
        RecordingRule(NAMESPACE_GPU_UTILIZATION, f'avg by (namespace) ({GPU_UTILIZATION}{{pod!=""}})'),
        RecordingRule(NAMESPACE_GPU_MEMORY_USED, f'sum by (namespace) ({GPU_MEMORY_USED}{{pod!=""}})'),
        RecordingRule(NAMESPACE_GPU_ALLOCATED, f"sum by (namespace) ({POD_GPU_ALLOCATED})"),
        RecordingRule(TEAM_GPU_UTILIZATION, f'avg by (team) ({GPU_UTILIZATION}{{pod!=""}} {team_join})'),
        RecordingRule(TEAM_GPU_MEMORY_USED, f'sum by (team) ({GPU_MEMORY_USED}{{pod!=""}} {team_join})'),
        RecordingRule(TEAM_GPU_ALLOCATED, f"sum by (team) ({NAMESPACE_GPU_ALLOCATED} {team_join})"),
        RecordingRule(TEAM_GPU_QUOTA, f'sum by (team) ({m.KSM_RESOURCE_QUOTA}{{resource="{TEAM_QUOTA_RESOURCE}", '
                                      f'type="hard"}} {team_join})'),
        RecordingRule(NODE_GPU_UTILIZATION, f"avg by (node, pool) ({GPU_UTILIZATION})"),
        RecordingRule(POOL_GPU_UTILIZATION, f'avg by (pool) ({GPU_UTILIZATION}{{pool!=""}})'),
        RecordingRule(POOL_GPU_MEMORY_USED_RATIO, f'sum by (pool) ({GPU_MEMORY_USED}{{pool!=""}}) / sum by (pool) '
                                                  f'({GPU_MEMORY_USED}{{pool!=""}} + {GPU_MEMORY_FREE}{{pool!=""}})'),
        RecordingRule(POOL_GPU_CAPACITY, f"sum by (pool) ({m.KSM_NODE_CAPACITY}{{{gpu_resource}}} {pool_join})"),
        RecordingRule(POOL_GPU_ALLOCATABLE,
                      f"sum by (pool) ({m.KSM_NODE_ALLOCATABLE}{{{gpu_resource}}} {pool_join})"),
        RecordingRule(POOL_GPU_ALLOCATED, f"sum by (pool) ({POD_GPU_ALLOCATED} {pool_join})"),
        # `>= bool` keeps pools with no busy GPU at 0 instead of dropping them.
        RecordingRule(POOL_GPU_BUSY, f'sum by (pool) ({GPU_UTILIZATION}{{pool!=""}} >= bool {idle:g})'),
        RecordingRule(POOL_GPU_ALLOCATED_IDLE,
                      f'sum by (pool) ({GPU_UTILIZATION}{{pool!="", pod!=""}} < bool {idle:g})'),
        RecordingRule(CLUSTER_GPU_ALLOCATABLE, f"sum ({m.KSM_NODE_ALLOCATABLE}{{{gpu_resource}}})"),
        RecordingRule(CLUSTER_GPU_ALLOCATED, f"sum ({POD_GPU_ALLOCATED})"),
        RecordingRule(CLUSTER_GPU_BUSY, f"sum ({GPU_UTILIZATION} >= bool {idle:g})"),
        RecordingRule(CLUSTER_GPU_UTILIZATION, f"avg ({GPU_UTILIZATION})"),
        *_pool_expectations(pools),
    ]
    return [RuleGroup("gpu-platform.gpu.rules", tuple(per_gpu)), RuleGroup("gpu-platform.usage.rules", tuple(usage)),
            showback_group(idle)]


# ---------------------------------------------------------------------------------------------------------
# Other vendors' accelerators: allocation against quota and capacity per extended resource. (Their device metrics
# come from each vendor's exporter and dashboard: Neuron monitor, AMD's metrics exporter; the rules above read DCGM.)

TEAM_ACCELERATOR_ALLOCATED = "team:accelerator_allocated:sum"
TEAM_ACCELERATOR_QUOTA = "team:accelerator_quota:sum"
POOL_ACCELERATOR_ALLOCATABLE = "pool:accelerator_allocatable:sum"
POOL_ACCELERATOR_ALLOCATED = "pool:accelerator_allocated:sum"
ACCELERATOR_RECORDS = (TEAM_ACCELERATOR_ALLOCATED, TEAM_ACCELERATOR_QUOTA, POOL_ACCELERATOR_ALLOCATABLE,
                       POOL_ACCELERATOR_ALLOCATED)
"""Each recorded once per resource, with a ``resource`` label holding the Kubernetes name
(``aws.amazon.com/neuron``)."""


def other_accelerator_resources(pools: Sequence[GpuPool]) -> list[str]:
    """The extended resources of the pools' non-NVIDIA accelerators, in pool order (NVIDIA's have the GPU rules)."""
    return [r for r in catalog.advertised_resources(p.gpu_model for p in pools) if r != catalog.NVIDIA_GPU_RESOURCE]


def ksm_resource(resource: str) -> str:
    """A resource name as kube-state-metrics labels pod and node series (``aws.amazon.com/neuron`` ->
    ``aws_amazon_com_neuron``); ``kube_resourcequota`` keeps the raw name."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


def accelerator_recording_group(pools: Sequence[GpuPool]) -> RuleGroup:
    """Per team and pool, the devices of each non-NVIDIA accelerator resource requested by live pods, the team's
    quota of it and the pools' allocatable count: what the accelerator dashboard shows."""
    team_join = f"* on (namespace) group_left (team) {NAMESPACE_TEAM_INFO}"
    pool_join = f"* on (node) group_left (pool) {NODE_POOL_INFO}"
    live = (f'* on (namespace, pod) group_left () max by (namespace, pod) '
            f'({m.KSM_POD_PHASE}{{phase=~"Pending|Running"}} == 1)')
    rules = []
    for resource in other_accelerator_resources(pools):
        ksm, tag = ksm_resource(resource), (("resource", resource),)
        requested = f'{m.KSM_POD_REQUESTS}{{resource="{ksm}", node!=""}} {live}'
        rules += [
            RecordingRule(TEAM_ACCELERATOR_ALLOCATED, f"sum by (team) ({requested} {team_join})", tag),
            RecordingRule(TEAM_ACCELERATOR_QUOTA, f'sum by (team) ({m.KSM_RESOURCE_QUOTA}{{resource="requests.'
                                                  f'{resource}", type="hard"}} {team_join})', tag),
            RecordingRule(POOL_ACCELERATOR_ALLOCATABLE,
                          f'sum by (pool) ({m.KSM_NODE_ALLOCATABLE}{{resource="{ksm}"}} {pool_join})', tag),
            RecordingRule(POOL_ACCELERATOR_ALLOCATED, f"sum by (pool) ({requested} {pool_join})", tag),
        ]
    return RuleGroup("gpu-platform.accelerators.rules", tuple(rules))


# ---------------------------------------------------------------------------------------------------------
# Alerts


def alert_groups(thresholds: AlertThresholds, runbook_base_url: str) -> list[RuleGroup]:
    """GPU health, GPU efficiency, scheduling and inference SLO alerts, each with severity and runbook."""
    t = thresholds
    rb = lambda name: runbook(runbook_base_url, name)  # noqa: E731
    app_xids = f" unless ({' or '.join(f'{GPU_XID_LAST} == {x}' for x in APPLICATION_XIDS)})"
    # An XID is "new" while the last-XID gauge changed within the window, or when its GPU series appeared
    # within the window already holding an XID (exporter restarted, GPU re-attached).
    xid_new = (f"and on (node, gpu, UUID) (changes({GPU_XID_LAST}[{t.xid_window}]) > 0 "
               f"or ({GPU_XID_LAST} unless on (node, gpu, UUID) {GPU_XID_LAST} offset {t.xid_window}))")
    device = ", ".join(DEVICE_LABELS) + ", pool"
    health = (
        AlertRule(
            "GpuXidError",
            f"(({GPU_XID_LAST} > 0){app_xids}) {xid_new}",
            "critical", "GPU {{ $labels.gpu }} on {{ $labels.node }} reported XID {{ $value }}",
            "GPU {{ $labels.gpu }} ({{ $labels.UUID }}, {{ $labels.modelName }}) on node {{ $labels.node }} "
            "reported XID {{ $value }}, a driver or hardware fault. Drain the node if it repeats.",
            rb("GpuXidError")),
        AlertRule(
            "GpuApplicationXid",
            f"(({GPU_XID_LAST} > 0) and ({' or '.join(f'{GPU_XID_LAST} == {x}' for x in APPLICATION_XIDS)})) "
            f"{xid_new}",
            "info", "Application XID {{ $value }} on GPU {{ $labels.gpu }} of {{ $labels.node }}",
            "XID {{ $value }} on GPU {{ $labels.gpu }} of node {{ $labels.node }} is usually caused by the "
            "application (illegal memory access, timeout); the GPU stays schedulable.",
            rb("GpuApplicationXid")),
        AlertRule(
            "GpuTemperatureHigh",
            f"max by ({device}) ({GPU_TEMPERATURE}) > {t.gpu_temperature_celsius:g}",
            "warning", "GPU {{ $labels.gpu }} on {{ $labels.node }} is at {{ $value }} C",
            f"GPU {{{{ $labels.gpu }}}} ({{{{ $labels.modelName }}}}) on node {{{{ $labels.node }}}} has been above "
            f"{t.gpu_temperature_celsius:g} C for {t.gpu_temperature_for}; it will throttle.",
            rb("GpuTemperatureHigh"), t.gpu_temperature_for),
        AlertRule(
            "GpuMemoryNearlyFull",
            f"max by ({device}, GPU_I_ID, namespace, pod) ({GPU_MEMORY_USED_RATIO}) > {t.gpu_memory_used_ratio:g}",
            "warning", "GPU memory {{ $value | humanizePercentage }} used on {{ $labels.node }} GPU {{ $labels.gpu }}",
            "GPU {{ $labels.gpu }} on node {{ $labels.node }} (pod {{ $labels.namespace }}/{{ $labels.pod }}) "
            f"has used more than {t.gpu_memory_used_ratio:.0%} of its memory for {t.gpu_memory_for}; "
            "the next allocation may fail with CUDA out-of-memory.",
            rb("GpuMemoryNearlyFull"), t.gpu_memory_for),
        AlertRule(
            "GpuNodeUnhealthyGpus",
            with_pool(f'sum by (node) ({m.KSM_NODE_CAPACITY}{{resource=~"{GPU_RESOURCE_REGEX}"}}) - sum by (node) '
                      f'({m.KSM_NODE_ALLOCATABLE}{{resource=~"{GPU_RESOURCE_REGEX}"}}) > 0'),
            "warning", "{{ $value }} GPU devices on {{ $labels.node }} are unhealthy",
            "The device plugin on node {{ $labels.node }} reports {{ $value }} GPU devices unhealthy "
            f"(capacity above allocatable) for {t.node_gpu_loss_for}; pods cannot use them.",
            rb("GpuNodeUnhealthyGpus"), t.node_gpu_loss_for),
        AlertRule(
            "GpuNodeMissingGpus",
            f"count by (node, pool) ({GPU_TEMPERATURE}) < on (pool) group_left () {POOL_EXPECTED_GPUS}",
            "critical", "Node {{ $labels.node }} shows only {{ $value }} GPUs",
            "DCGM sees {{ $value }} GPUs on node {{ $labels.node }}, fewer than every node of pool "
            f"{{{{ $labels.pool }}}} has; a GPU has fallen off the bus or failed (for {t.node_gpu_loss_for}).",
            rb("GpuNodeMissingGpus"), t.node_gpu_loss_for),
        AlertRule(
            "GpuMetricsMissing",
            f"{NODE_POOL_INFO} unless on (node) count by (node) ({GPU_TEMPERATURE})",
            "warning", "No GPU metrics from node {{ $labels.node }}",
            "Node {{ $labels.node }} of GPU pool {{ $labels.pool }} has exported no DCGM metrics for "
            f"{t.gpu_metrics_missing_for}: the DCGM exporter is not running there or not scraped.",
            rb("GpuMetricsMissing"), t.gpu_metrics_missing_for),
    )
    efficiency = (
        AlertRule(
            "GpuAllocatedIdle",
            f"{POD_GPU_UTILIZATION} < {t.idle_utilization_percent:g}",
            "info", "Pod {{ $labels.namespace }}/{{ $labels.pod }} holds idle GPUs",
            "The GPUs of pod {{ $labels.namespace }}/{{ $labels.pod }} have stayed under "
            f"{t.idle_utilization_percent:g}% utilisation for {t.idle_for} (now {{{{ $value }}}}%); "
            "release them or let the optimizer right-size the workload.",
            rb("GpuAllocatedIdle"), t.idle_for),
    )
    # Kueue replicas that are not the leader report too (label replica_role): count the leader's view only.
    pending, admitted = (f'{m.KUEUE_PENDING_WORKLOADS}{{{KUEUE_LEADER}}}',
                         f'{m.KUEUE_ADMITTED_WORKLOADS_TOTAL}{{{KUEUE_LEADER}}}')
    admitted_recently = (
        f"(sum by (cluster_queue) (increase({admitted}[{t.kueue_pending_for}])) > 0) "
        f"or count by (cluster_queue) ({admitted} unless {admitted} offset {t.kueue_pending_for})")
    scheduling = (
        AlertRule(
            "KueueWorkloadsPendingTooLong",
            f"(sum by (cluster_queue) ({pending}) > 0) unless on (cluster_queue) ({admitted_recently})",
            "warning", "{{ $value }} workloads stuck in ClusterQueue {{ $labels.cluster_queue }}",
            "ClusterQueue {{ $labels.cluster_queue }} has had {{ $value }} pending workloads and admitted none "
            f"for {t.kueue_pending_for}: its quota is exhausted or no flavor fits.",
            rb("KueueWorkloadsPendingTooLong"), t.kueue_pending_for),
    )
    bucket = m.histogram_series(m.INFERENCE_REQUEST_DURATION)[0]
    inference = (
        AlertRule(
            "InferenceLatencySloBreach",
            f"histogram_quantile({t.inference_latency_quantile:g}, sum by (namespace, job, le) "
            f"(rate({bucket}[5m]))) > {t.inference_latency_seconds:g}",
            "critical", f"Inference p{t.inference_latency_quantile * 100:g} latency "
                        "{{ $value | humanizeDuration }} in {{ $labels.namespace }}",
            f"The {t.inference_latency_quantile:g} quantile of request latency of {{{{ $labels.job }}}} in "
            f"{{{{ $labels.namespace }}}} has been above the {t.inference_latency_seconds:g}s SLO for "
            f"{t.inference_latency_for}.",
            rb("InferenceLatencySloBreach"), t.inference_latency_for),
    )
    return [RuleGroup("gpu-platform.gpu-health", health), RuleGroup("gpu-platform.gpu-efficiency", efficiency),
            RuleGroup("gpu-platform.scheduling", scheduling), RuleGroup("gpu-platform.inference", inference)]


def alert_names(groups: Sequence[RuleGroup]) -> list[str]:
    return [r.alert for g in groups for r in g.rules if isinstance(r, AlertRule)]


def rule_file(groups: Sequence[RuleGroup]) -> dict[str, Any]:
    """A Prometheus rule file (``groups:``) for promtool."""
    return {"groups": [g.as_dict() for g in groups]}


@dataclass(frozen=True)
class RuleSet:
    """Everything the monitoring layer deploys as PrometheusRules."""

    recording: list[RuleGroup] = field(default_factory=list)
    alerting: list[RuleGroup] = field(default_factory=list)

    @property
    def all_groups(self) -> list[RuleGroup]:
        return [*self.recording, *self.alerting]


def rule_set(pools: Sequence[GpuPool], thresholds: AlertThresholds, runbook_base_url: str,
             llm: bool = False) -> RuleSet:
    """The stack's rules; ``llm``: with the LLM service's alerts (`llm_monitoring`)."""
    recording = recording_groups(pools, thresholds)
    if other_accelerator_resources(pools):
        recording.append(accelerator_recording_group(pools))
    alerting = alert_groups(thresholds, runbook_base_url)
    if llm:
        alerting.append(llm_monitoring.alert_group(runbook_base_url))
    return RuleSet(recording, alerting)
