"""The optimizer's PromQL: a constant number of queries, however many pods there are.

Each query aggregates ``by (namespace, pod)`` so one round trip answers for every pod: four per vendor signal
(`signals`), whatever the number of pods; `merge` joins the vendors' answers.
"""

from dataclasses import dataclass

from .. import catalog
from .policy import Policy
from .prometheus import Sample
from .signals import signal_for


@dataclass(frozen=True)
class PodQueries:
    """The queries one evaluation runs."""

    utilization: str
    """Average GPU utilisation (%) per pod over the window, averaged across the pod's GPUs."""
    memory_used_mib: str
    """Peak framebuffer memory used (MiB) per pod over the window, summed across its GPUs."""
    first_seen: str
    """Earliest timestamp a pod's GPU series were seen inside the window."""
    gpus: str
    """GPUs each pod holds now."""

    def all(self) -> list[str]:
        return [self.utilization, self.memory_used_mib, self.first_seen, self.gpus]


def pod_queries(policy: Policy, vendor: str = catalog.NVIDIA) -> PodQueries:
    """The four queries of ``vendor``'s signal for ``policy``'s labels and window (NVIDIA: the policy's metric)."""
    signal = signal_for(vendor, policy.metric)
    pod, ns = policy.pod_label, policy.namespace_label
    selector = f'{{{pod}!=""}}'
    util, scale = signal.utilization_metric, signal.percent_scale
    by = f"by ({ns}, {pod})"
    return PodQueries(
        utilization=f"avg {by} (avg_over_time({util}{selector}[{policy.window}])){scale}",
        memory_used_mib=f"sum {by} (max_over_time({signal.memory_metric}{selector}[{policy.window}]))",
        first_seen=f"min {by} (min_over_time(timestamp({util}{selector})[{policy.window}:{policy.step}]))",
        gpus=f"count {by} ({util}{selector})",
    )


def signal_queries(policy: Policy) -> list[PodQueries]:
    """One `PodQueries` per vendor the policy reads, in the policy's order."""
    return [pod_queries(policy, vendor) for vendor in policy.vendors]


@dataclass(frozen=True)
class PodFacts:
    """The four answers, per fact, for all pods of all vendors read."""

    utilization: list[Sample]
    memory_used_mib: list[Sample]
    first_seen: list[Sample]
    gpus: list[Sample]
    vendor: dict[tuple[str, str], str]
    """(namespace, pod) -> the vendor whose signal saw the pod."""


def merge(answers: list[tuple[str, list[list[Sample]]]], policy: Policy) -> PodFacts:
    """Join per-vendor answers (``(vendor, [utilization, memory, first_seen, gpus])``) into one set of facts.

    A pod seen by two vendors' signals (it holds devices of both) gets its devices summed, its utilisation
    averaged over all its devices, its memory summed and its earliest first sighting.
    """
    util: dict[tuple[str, str], tuple[dict, float, float]] = {}  # key -> (labels, weighted sum, devices)
    memory: dict[tuple[str, str], tuple[dict, float]] = {}
    seen: dict[tuple[str, str], tuple[dict, float]] = {}
    count: dict[tuple[str, str], tuple[dict, float]] = {}
    vendor_of: dict[tuple[str, str], str] = {}

    def key(sample: Sample) -> tuple[str, str]:
        return sample.labels.get(policy.namespace_label, ""), sample.labels.get(policy.pod_label, "")

    for vendor, (utilization, mem, first_seen, gpus) in answers:
        devices = {key(s): s.value for s in gpus}
        for s in utilization:
            n = devices.get(key(s), 1.0)
            labels, total, weight = util.get(key(s), (s.labels, 0.0, 0.0))
            util[key(s)] = (labels, total + s.value * n, weight + n)
            vendor_of.setdefault(key(s), vendor)
        for s in mem:
            labels, total = memory.get(key(s), (s.labels, 0.0))
            memory[key(s)] = (labels, total + s.value)
        for s in first_seen:
            labels, first = seen.get(key(s), (s.labels, s.value))
            seen[key(s)] = (labels, min(first, s.value))
        for s in gpus:
            labels, total = count.get(key(s), (s.labels, 0.0))
            count[key(s)] = (labels, total + s.value)
    return PodFacts(
        utilization=[Sample(labels, total / weight) for labels, total, weight in util.values()],
        memory_used_mib=[Sample(labels, value) for labels, value in memory.values()],
        first_seen=[Sample(labels, value) for labels, value in seen.values()],
        gpus=[Sample(labels, value) for labels, value in count.values()],
        vendor=vendor_of,
    )


def per_pod_queries(policy: Policy, namespace: str, pod_name: str) -> list[str]:
    """The naive approach the benchmark compares against: the same facts, one pod at a time."""
    selector = f'{{{policy.namespace_label}="{namespace}",{policy.pod_label}="{pod_name}"}}'
    return [
        f"avg(avg_over_time({policy.metric}{selector}[{policy.window}]))",
        f"sum(max_over_time(DCGM_FI_DEV_FB_USED{selector}[{policy.window}]))",
        f"min(min_over_time(timestamp({policy.metric}{selector})[{policy.window}:{policy.step}]))",
        f"count({policy.metric}{selector})",
    ]
