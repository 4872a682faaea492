"""The health layer's alerts and Grafana dashboard (pure, like `alerts` and `dashboards`).

What is alerted on, each with a runbook section in docs/health.md:

- ``GpuNodeFatalCondition``: a node condition of `health_catalog.fatal_conditions` (node-problem-detector, from the
  kernel's XIDs) is True, read from kube-state-metrics' ``kube_node_status_condition`` (it exports every condition
  type a node has);
- ``GpuNodeHealthCheckFailed``: the node's last active check failed (`labels.HEALTH_CHECK_CONDITION`);
- ``GpuNodeQuarantined``: remediation quarantined the node (its taint, ``kube_node_spec_taint``);
- ``GpuRowRemapFailure`` and ``GpuUncorrectableRemappedRows``: DCGM's row-remapping fields, which dcgm-exporter's
  default counters export (``etc/default-counters.csv`` at 4.5.3-4.8.2: ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` gauge,
  ``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` counter). The ECC (``DCGM_FI_DEV_ECC_DBE_*``) and NVLink error
  counters are commented out in that file: XID 48 and XID 74 cover them through node-problem-detector instead;
- ``RdmaLinkDown``: node-problem-detector counted an mlx5 link-down or cable event (``problem_counter``).

XIDs themselves already alert through the monitoring layer (`alerts`: ``GpuXidError`` from DCGM's last-XID gauge).
"""

from typing import Any

from .. import labels
from ..monitoring import alerts as a
from ..monitoring import dashboards as d
from . import health_catalog

GROUP_NAME = "gpu-platform.node-health"
RUNBOOK_PATH = "docs/health.md"
DASHBOARD_SLUG = "gpu-node-health"
DASHBOARD_UID = "gpu-platform-node-health"
RULE_NAME = "gpu-platform-node-health"
KSM_CONDITION = "kube_node_status_condition"
KSM_TAINT = "kube_node_spec_taint"
NPD_PROBLEMS = "problem_counter"
ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
UNCORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
DCGM_GPU = "gpu, UUID, modelName, Hostname, hostname"
"""What identifies one GPU in dcgm-exporter's series (the host label is ``Hostname`` up to 4.5.x, ``hostname``
after; whichever the exporter sets, the other is empty)."""


def runbook(base_url: str, alert: str) -> str:
    return f"{base_url.rstrip('/')}/{RUNBOOK_PATH}#{alert.lower()}"


def fatal_conditions_regex() -> str:
    return a.regex_alternatives(health_catalog.fatal_conditions())


def alert_group(runbook_base_url: str) -> a.RuleGroup:
    """The node-health alerts (see the module docstring)."""
    rb = lambda name: runbook(runbook_base_url, name)  # noqa: E731
    fatal = f'{KSM_CONDITION}{{condition=~"{fatal_conditions_regex()}", status="true"}}'
    check = f'{KSM_CONDITION}{{condition="{labels.HEALTH_CHECK_CONDITION}", status="true"}}'
    taint = f'{KSM_TAINT}{{key="{labels.QUARANTINE_TAINT_KEY}"}}'
    rdma = (f'{NPD_PROBLEMS}{{reason=~"{health_catalog.RDMA_LINK_DOWN}|{health_catalog.RDMA_CABLE_EVENT}"}}')
    return a.RuleGroup(GROUP_NAME, (
        a.AlertRule(
            "GpuNodeFatalCondition", f"max by (node, condition) ({fatal}) == 1",
            "critical", "Node {{ $labels.node }} has {{ $labels.condition }}",
            "node-problem-detector set {{ $labels.condition }} on node {{ $labels.node }} from a fatal XID in the "
            "kernel log; remediation quarantines the node unless it runs in dry-run or its caps are reached.",
            rb("GpuNodeFatalCondition"), "1m"),
        a.AlertRule(
            "GpuNodeHealthCheckFailed", f"max by (node) ({check}) == 1",
            "warning", "Node {{ $labels.node }} failed its GPU health check",
            "The last active health check (DCGM diagnostics, single-node all-reduce) of node {{ $labels.node }} "
            "failed; the platform's workloads avoid the node until a check passes.",
            rb("GpuNodeHealthCheckFailed")),
        a.AlertRule(
            "GpuNodeQuarantined", f"max by (node, value) ({taint}) == 1",
            "warning", "Node {{ $labels.node }} is quarantined ({{ $labels.value }})",
            "Remediation cordoned and tainted node {{ $labels.node }} for {{ $labels.value }}; it is released after "
            "a passing health check. Repair or replace the node if it stays quarantined.",
            rb("GpuNodeQuarantined"), "30m"),
        a.AlertRule(
            "GpuRowRemapFailure", f"max by ({DCGM_GPU}) ({ROW_REMAP_FAILURE}) > 0",
            "critical", "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) failed to remap a memory row",
            "DCGM reports a row-remapping failure on GPU {{ $labels.gpu }} ({{ $labels.UUID }}, "
            "{{ $labels.modelName }}): its memory can no longer repair itself. Replace the GPU.",
            rb("GpuRowRemapFailure")),
        a.AlertRule(
            "GpuUncorrectableRemappedRows",
            f"max by ({DCGM_GPU}) (increase({UNCORRECTABLE_REMAPPED_ROWS}[1h])) > 0",
            "warning", "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) remapped rows for uncorrectable errors",
            "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) remapped memory rows after uncorrectable ECC errors in the "
            "last hour; the remapping takes effect at the next GPU reset. Reset it when idle; replace it if it "
            "keeps happening.", rb("GpuUncorrectableRemappedRows")),
        a.AlertRule(
            "RdmaLinkDown", f"sum by (node, reason) (increase({rdma}[15m])) > 0",
            "warning", "RDMA link event {{ $labels.reason }} on {{ $labels.node }}",
            "The kernel of node {{ $labels.node }} logged {{ $labels.reason }} for an mlx5 NIC in the last 15 "
            "minutes: multi-node jobs there may fall back to TCP or fail. Check the port and its cable.",
            rb("RdmaLinkDown")),
    ))


def health_dashboard() -> dict[str, Any]:
    """Unhealthy and quarantined nodes, and the health events over time."""
    fatal = f'{KSM_CONDITION}{{condition=~"{fatal_conditions_regex()}|{labels.HEALTH_CHECK_CONDITION}", ' \
            f'status="true"}}'
    taint = f'{KSM_TAINT}{{key="{labels.QUARANTINE_TAINT_KEY}"}}'
    panels = [
        d.stat("Unhealthy nodes", f"count(count by (node) ({fatal} == 1)) or vector(0)",
               description="Nodes with a fatal GPU condition or a failed active check."),
        d.stat("Quarantined nodes", f"count(count by (node) ({taint})) or vector(0)",
               description="Nodes remediation cordoned and tainted."),
        d.table("Unhealthy nodes and their conditions",
                [d.target(f"max by (node, condition) ({fatal}) == 1", "condition")],
                description="One row per node and True condition (kube-state-metrics)."),
        d.table("Quarantined nodes", [d.target(f"max by (node, value) ({taint})", "reason")],
                description="The quarantine taint's value is the condition that caused it."),
        d.timeseries("Node health events (node-problem-detector)",
                     [d.target(f"sum by (node, reason) (increase({NPD_PROBLEMS}[15m]))", "{{node}} {{reason}}")],
                     unit="none", size=d.Size(24)),
    ]
    return d.dashboard(DASHBOARD_UID, "GPU node health", "Fatal GPU conditions, failed health checks and quarantined "
                                                         "nodes (docs/health.md).", panels, [])
