"""The "GPU showback" Grafana dashboard: GPU-hours admitted, busy and admitted by Kueue, per team and per pool, over
the dashboard's time range, from the showback recording rules (`showback_rules`).

Pure. GPU-hours are integrated as ``gpu-platform usage`` does (`showback_queries`): the gauge summed at 5-minute
steps over ``$__range`` times the step, so the dashboard and the command agree.
"""

from typing import Any

from .panels import Size, bar_gauge, dashboard, query_variable, row, table, target, timeseries
from .showback_queries import STEP_SECONDS
from .showback_rules import TEAM_POOL_GPU_ADMITTED, TEAM_POOL_GPU_BUSY, TEAM_POOL_GPU_KUEUE_ADMITTED

UID = "gpu-platform-showback"
SLUG = "gpu-showback"
_SELECTOR = 'team=~"$team", pool=~"$pool"'


def gpu_hours(record: str, by: str) -> str:
    """GPU-hours of ``record`` over the dashboard's range, per ``by`` (``team``, ``pool`` or ``team, pool``)."""
    return (f"sum by ({by}) (sum_over_time({record}{{{_SELECTOR}}}[$__range:{STEP_SECONDS}s]))"
            f" * {STEP_SECONDS} / 3600")


def idle_share(by: str) -> str:
    """The share of admitted GPU-hours not busy; absent where nothing was admitted."""
    return f"1 - ({gpu_hours(TEAM_POOL_GPU_BUSY, by)}) / ({gpu_hours(TEAM_POOL_GPU_ADMITTED, by)} > 0)"


def _per(by: str, legend: str) -> list[dict[str, Any]]:
    return [
        bar_gauge(f"GPU-hours admitted by {by}", [target(gpu_hours(TEAM_POOL_GPU_ADMITTED, by), legend)], "none",
                  Size(8), description="GPU-hours held by pods bound to a node and not finished, over the range."),
        bar_gauge(f"GPU-hours busy by {by}", [target(gpu_hours(TEAM_POOL_GPU_BUSY, by), legend)], "none", Size(8),
                  description="GPU-hours of GPUs at or above the idle utilisation threshold, over the range."),
        bar_gauge(f"Idle share by {by}", [target(idle_share(by), legend)], "percentunit", Size(8),
                  description="1 - busy / admitted GPU-hours over the range."),
    ]


def showback_dashboard() -> dict[str, Any]:
    """Per team and per pool: GPU-hours over the range, GPUs held and busy over time, and a table of both."""
    selected = f"{{{_SELECTOR}}}"
    panels = [
        row("Per team"),
        *_per("team", "{{team}}"),
        timeseries("GPUs admitted and busy by team", [
            target(f"sum by (team) ({TEAM_POOL_GPU_ADMITTED}{selected})", "{{team}} admitted"),
            target(f"sum by (team) ({TEAM_POOL_GPU_BUSY}{selected})", "{{team}} busy"),
        ], "none"),
        timeseries("GPUs admitted by Kueue by team", [
            target(f"sum by (team) ({TEAM_POOL_GPU_KUEUE_ADMITTED}{selected})", "{{team}}")], "none",
            description="nvidia.com/gpu quota used by the workloads Kueue admitted to the team's ClusterQueue."),
        row("Per pool"),
        *_per("pool", "{{pool}}"),
        timeseries("GPUs admitted and busy by pool", [
            target(f"sum by (pool) ({TEAM_POOL_GPU_ADMITTED}{selected})", "{{pool}} admitted"),
            target(f"sum by (pool) ({TEAM_POOL_GPU_BUSY}{selected})", "{{pool}} busy"),
        ], "none", Size(24)),
        row("Per team and pool"),
        table("GPU-hours by team and pool", [
            target(gpu_hours(TEAM_POOL_GPU_ADMITTED, "team, pool")),
            target(gpu_hours(TEAM_POOL_GPU_BUSY, "team, pool")),
            target(gpu_hours(TEAM_POOL_GPU_KUEUE_ADMITTED, "team, pool")),
        ], description="Admitted, busy and Kueue-admitted GPU-hours over the range (gpu-platform usage prints the "
                       "same figures)."),
    ]
    variables = [query_variable("team", "Team", TEAM_POOL_GPU_ADMITTED, "team"),
                 query_variable("pool", "Pool", f'{TEAM_POOL_GPU_ADMITTED}{{team=~"$team"}}', "pool")]
    return dashboard(UID, "GPU showback", "GPU-hours admitted, busy and idle per team and pool over the time range "
                                          "(docs/showback.md).", panels, variables)
