"""The optimizer's PromQL: a constant number of queries, however many pods there are.

Each query aggregates ``by (namespace, pod)`` so one round trip answers for every pod.
"""

from dataclasses import dataclass

from .policy import Policy


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


def pod_queries(policy: Policy) -> PodQueries:
    """The four queries for ``policy``'s metric, labels and window."""
    pod, ns = policy.pod_label, policy.namespace_label
    selector = f'{{{pod}!=""}}'
    scale = " * 100" if policy.metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" else ""
    by = f"by ({ns}, {pod})"
    return PodQueries(
        utilization=f"avg {by} (avg_over_time({policy.metric}{selector}[{policy.window}])){scale}",
        memory_used_mib=f"sum {by} (max_over_time(DCGM_FI_DEV_FB_USED{selector}[{policy.window}]))",
        first_seen=f"min {by} (min_over_time(timestamp({policy.metric}{selector})[{policy.window}:{policy.step}]))",
        gpus=f"count {by} ({policy.metric}{selector})",
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
