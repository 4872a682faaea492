"""The arithmetic and the rendering of ``gpu-platform usage``: GPU-hours per team and pool, idle share, totals.

Pure: `report` turns the integrals Prometheus returned (per record, per ``(team, pool)``, the sum of the gauge over
the window's steps) into `Usage` figures; `render_text` and `to_json` print them.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional

from .showback_queries import Window
from .showback_rules import TEAM_POOL_GPU_ADMITTED, TEAM_POOL_GPU_BUSY, TEAM_POOL_GPU_KUEUE_ADMITTED

Key = tuple[str, str]
"""``(team, pool)``."""

SOURCE_NAMES = {"rules": "the recording rules", "raw": "raw series"}


@dataclass(frozen=True)
class Usage:
    """GPU-hours over the window."""

    admitted: float = 0.0
    """Held by the team's pods bound to a node and not finished."""
    busy: float = 0.0
    """Of the team's GPUs at or above the idle utilisation threshold."""
    kueue: float = 0.0
    """Admitted by Kueue against the team's ClusterQueue."""

    @property
    def idle_share(self) -> Optional[float]:
        """The share of admitted GPU-hours not busy, in [0, 1]; None with nothing admitted."""
        if self.admitted <= 0:
            return None
        return min(1.0, max(0.0, 1 - self.busy / self.admitted))

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.admitted + other.admitted, self.busy + other.busy, self.kueue + other.kueue)


def total(usages: Iterable[Usage]) -> Usage:
    return sum(usages, Usage())


@dataclass(frozen=True)
class Report:
    """Figures per ``(team, pool)``, and the window and source they come from."""

    window: Window
    source: str
    by_team_pool: dict[Key, Usage] = field(default_factory=dict)

    def teams(self) -> dict[str, Usage]:
        return {team: total(u for (t, _), u in self.by_team_pool.items() if t == team)
                for team in sorted({t for t, _ in self.by_team_pool})}

    def pools(self) -> dict[str, Usage]:
        return {pool: total(u for (_, p), u in self.by_team_pool.items() if p == pool)
                for pool in sorted({p for _, p in self.by_team_pool})}

    def pools_of(self, team: str) -> dict[str, Usage]:
        return {p: u for (t, p), u in sorted(self.by_team_pool.items()) if t == team}

    @property
    def total(self) -> Usage:
        return total(self.by_team_pool.values())


def gpu_hours(step_sum: float, step_seconds: int) -> float:
    """A gauge's sum over steps of ``step_seconds`` as hours of that gauge (GPUs -> GPU-hours)."""
    return step_sum * step_seconds / 3600


def report(integrals: Mapping[str, Mapping[Key, float]], win: Window, source: str) -> Report:
    """``integrals``: per showback record, per ``(team, pool)``, the gauge summed over the window's steps."""
    def hours(record: str, key: Key) -> float:
        return gpu_hours(integrals.get(record, {}).get(key, 0.0), win.step)

    keys = sorted({k for per_key in integrals.values() for k in per_key})
    figures = {k: Usage(hours(TEAM_POOL_GPU_ADMITTED, k), hours(TEAM_POOL_GPU_BUSY, k),
                        hours(TEAM_POOL_GPU_KUEUE_ADMITTED, k)) for k in keys}
    # A (team, pool) with nothing in any column (a busy count that stayed 0 all along) says nothing.
    return Report(win, source, {k: u for k, u in figures.items() if u.admitted or u.busy or u.kueue})


# ---------------------------------------------------------------------------------------------------------
# Rendering

def _time(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _share(share: Optional[float]) -> str:
    return "-" if share is None else f"{share * 100:.1f}%"


def _duration(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


_COLUMNS = ("ADMITTED GPU-H", "BUSY GPU-H", "IDLE SHARE", "KUEUE GPU-H")


def _line(name: str, usage: Usage, width: int) -> str:
    cells = (f"{usage.admitted:.2f}", f"{usage.busy:.2f}", _share(usage.idle_share), f"{usage.kueue:.2f}")
    return f"{name:<{width}}" + "".join(f"  {c:>{len(h)}}" for c, h in zip(cells, _COLUMNS, strict=True))


def render_text(rep: Report) -> str:
    """Per team (its pools indented below it), the total, then per pool."""
    win = rep.window
    teams, pools = rep.teams(), rep.pools()
    names = [*teams, *(f"  {p or '(no pool)'}" for _, p in rep.by_team_pool), *pools, "TEAM / POOL", "TOTAL"]
    width = max(len(n) for n in names)
    header = lambda first: f"{first:<{width}}" + "".join(f"  {h}" for h in _COLUMNS)  # noqa: E731
    lines = [f"GPU showback {_time(win.start)} .. {_time(win.end)} ({_duration(win.end - win.start)} in "
             f"{_duration(win.step)} steps), from {SOURCE_NAMES[rep.source]}", "", header("TEAM / POOL")]
    if not teams:
        lines.append("(no team held a GPU in this window)")
    for team, usage in teams.items():
        lines.append(_line(team, usage, width))
        lines += [_line(f"  {pool or '(no pool)'}", u, width) for pool, u in rep.pools_of(team).items()]
    lines += [_line("TOTAL", rep.total, width), "", header("POOL")]
    lines += [_line(pool or "(no pool)", usage, width) for pool, usage in pools.items()]
    return "\n".join(lines)


def _figures(usage: Usage) -> dict[str, Any]:
    share = usage.idle_share
    return {"admitted_gpu_hours": round(usage.admitted, 6), "busy_gpu_hours": round(usage.busy, 6),
            "idle_share": None if share is None else round(share, 6), "kueue_gpu_hours": round(usage.kueue, 6)}


def to_json(rep: Report) -> dict[str, Any]:
    """The same figures as a document (GPU-hours and shares rounded to 6 decimals)."""
    win = rep.window
    return {
        "window": {"start": _time(win.start), "end": _time(win.end), "step_seconds": win.step},
        "source": rep.source,
        "teams": [{"team": team, **_figures(usage),
                   "pools": [{"pool": pool, **_figures(u)} for pool, u in rep.pools_of(team).items()]}
                  for team, usage in rep.teams().items()],
        "pools": [{"pool": pool, **_figures(usage)} for pool, usage in rep.pools().items()],
        "total": _figures(rep.total),
    }
