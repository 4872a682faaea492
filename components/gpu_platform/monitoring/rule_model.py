"""The vocabulary of the platform's Prometheus rules: the rule data types, the recording rules' output names and
the runbook links.

Below `alerts`, `dashboards` and `llm_monitoring`, which all build on it (so none of them imports another to read
a rule type or a record name).
"""

from dataclasses import dataclass
from typing import Any

# Recording rules' outputs (`alerts.recording_groups`), read by the alerts, the dashboards and the optimizer.
NODE_POOL_INFO = "gpu_platform:node_pool:info"
NAMESPACE_TEAM_INFO = "gpu_platform:namespace_team:info"
POOL_EXPECTED_GPUS = "gpu_platform:pool_gpus_per_node:expected"
POD_GPU_ALLOCATED = "namespace_pod:gpu_allocated:sum"
GPU_UTILIZATION = "gpu:utilization:percent"
GPU_ENGINE_ACTIVE = "gpu:engine_active:ratio"
GPU_MEMORY_USED = "gpu:memory_used:bytes"
GPU_MEMORY_FREE = "gpu:memory_free:bytes"
GPU_MEMORY_USED_RATIO = "gpu:memory_used:ratio"
GPU_TEMPERATURE = "gpu:temperature:celsius"
GPU_XID_LAST = "gpu:xid_last:code"
POD_GPU_UTILIZATION = "namespace_pod:gpu_utilization:avg"
POD_GPU_MEMORY_USED = "namespace_pod:gpu_memory_used:bytes"
NAMESPACE_GPU_UTILIZATION = "namespace:gpu_utilization:avg"
NAMESPACE_GPU_MEMORY_USED = "namespace:gpu_memory_used:bytes"
NAMESPACE_GPU_ALLOCATED = "namespace:gpu_allocated:sum"
TEAM_GPU_UTILIZATION = "team:gpu_utilization:avg"
TEAM_GPU_MEMORY_USED = "team:gpu_memory_used:bytes"
TEAM_GPU_ALLOCATED = "team:gpu_allocated:sum"
TEAM_GPU_QUOTA = "team:gpu_quota:sum"
POOL_GPU_UTILIZATION = "pool:gpu_utilization:avg"
POOL_GPU_MEMORY_USED_RATIO = "pool:gpu_memory_used:ratio"
POOL_GPU_CAPACITY = "pool:gpu_capacity:sum"
POOL_GPU_ALLOCATABLE = "pool:gpu_allocatable:sum"
POOL_GPU_ALLOCATED = "pool:gpu_allocated:sum"
POOL_GPU_BUSY = "pool:gpu_busy:count"
POOL_GPU_ALLOCATED_IDLE = "pool:gpu_allocated_idle:count"
NODE_GPU_UTILIZATION = "node:gpu_utilization:avg"
CLUSTER_GPU_ALLOCATABLE = "cluster:gpu_allocatable:sum"
CLUSTER_GPU_ALLOCATED = "cluster:gpu_allocated:sum"
CLUSTER_GPU_BUSY = "cluster:gpu_busy:count"
CLUSTER_GPU_UTILIZATION = "cluster:gpu_utilization:avg"


@dataclass(frozen=True)
class RecordingRule:
    """A Prometheus recording rule."""

    record: str
    expr: str
    labels: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"record": self.record, "expr": self.expr}
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


@dataclass(frozen=True)
class AlertRule:
    """A Prometheus alerting rule with the platform's annotations (summary, description, runbook_url)."""

    alert: str
    expr: str
    severity: str
    summary: str
    description: str
    runbook_url: str
    for_: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alert": self.alert, "expr": self.expr}
        if self.for_:
            out["for"] = self.for_
        out["labels"] = {"severity": self.severity}
        out["annotations"] = {"summary": self.summary, "description": self.description,
                              "runbook_url": self.runbook_url}
        return out


@dataclass(frozen=True)
class RuleGroup:
    """A named group of rules, evaluated in order (later rules read earlier ones' results)."""

    name: str
    rules: tuple[Any, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rules": [r.as_dict() for r in self.rules]}


RUNBOOK_PATH = "docs/runbooks.md"


def runbook(base_url: str, alert: str) -> str:
    """``<base>/docs/runbooks.md#<alert lower-case>``: the GitHub anchor of the alert's heading."""
    return f"{base_url.rstrip('/')}/{RUNBOOK_PATH}#{alert.lower()}"
