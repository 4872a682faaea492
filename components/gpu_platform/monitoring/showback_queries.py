"""The PromQL of ``gpu-platform usage``: the showback gauges integrated into GPU-hours over a window, exactly.

Pure. Each gauge of `showback_rules` is summed at fixed steps over the window with a subquery,
``sum_over_time((<gauge>)[<window>:<step>])``, and the sum times the step is GPU-seconds: every step counts the
value sampled at its start for the whole step (a left Riemann sum). The query runs at ``end - 1 ms`` with ``end`` a
multiple of the step, so the subquery's steps are exactly ``start, start + step, ..., end - step``: Prometheus 2
(ranges closed at both ends) and 3 (open at the start) agree, and a series sampled on those instants integrates with
no rounding at all.

Two sources answer the same question. ``rules``: the recorded gauges (cheap). ``raw``: the same gauges'
expressions with every recorded series they read replaced by its own expression, down to the DCGM,
kube-state-metrics and Kueue series (`inline`), for a Prometheus without the platform's rules or a window that
starts before they were deployed.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .alerts import AlertThresholds, recording_groups
from .showback_rules import SHOWBACK_RECORDS, TEAM_POOL_GPU_ADMITTED, TEAM_POOL_GPU_KUEUE_ADMITTED

STEP_SECONDS = 300
"""The integration step: 5 minutes, a multiple of any sane scrape and rule evaluation interval."""
SOURCES = ("rules", "raw")


@dataclass(frozen=True)
class Window:
    """``[start, end)`` in Unix seconds, both multiples of ``step``."""

    start: int
    end: int
    step: int = STEP_SECONDS

    @property
    def steps(self) -> int:
        return (self.end - self.start) // self.step

    @property
    def query_time(self) -> float:
        """Where the integrals are evaluated: just before ``end``, so the window's last step is ``end - step``."""
        return self.end - 0.001


def window(until: float, seconds: int, step: int = STEP_SECONDS) -> Window:
    """The ``seconds`` long window ending at ``until`` rounded down to the step; ``seconds`` must be a positive
    multiple of the step (`ValueError` otherwise)."""
    if seconds <= 0 or seconds % step:
        raise ValueError(f"the window must be a positive multiple of {step // 60}m, got {seconds} s")
    end = int(until // step) * step
    return Window(end - seconds, end, step)


# ---------------------------------------------------------------------------------------------------------
# Inlining recorded series

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NAME = re.compile(r"(?<![\w:.])[A-Za-z_:][\w:]*")


def inline(expr: str, records: Mapping[str, str]) -> str:
    """``expr`` with every recorded series it selects replaced by ``(<its expression>)``, recursively.

    A record read with a matcher or a range (``name{...}``, ``name[5m]``) cannot be replaced by an expression:
    `ValueError`. Label values in quotes are left alone.
    """
    pieces, last = [], 0
    for string in _STRING.finditer(expr):
        pieces.append(_inline_names(expr[last:string.start()], records, expr))
        pieces.append(string.group(0))
        last = string.end()
    pieces.append(_inline_names(expr[last:], records, expr))
    return "".join(pieces)


def _inline_names(text: str, records: Mapping[str, str], whole: str) -> str:
    def replace(match: re.Match) -> str:
        name = match.group(0)
        if name not in records:
            return name
        rest = text[match.end():].lstrip()
        if rest[:1] in ("{", "["):
            raise ValueError(f"{name} is read with a matcher or range in {whole!r}: it cannot be inlined")
        return f"({inline(records[name], records)})"

    return _NAME.sub(replace, text)


def recorded_expressions(thresholds: AlertThresholds) -> dict[str, str]:
    """Every recording rule the showback gauges may read, and theirs, by record name (the pool expectations,
    which depend on the pools, are not among them)."""
    return {r.record: r.expr for group in recording_groups([], thresholds) for r in group.rules}


def gauges(source: str, thresholds: AlertThresholds) -> dict[str, str]:
    """Per showback record, the instant expression of its gauge from ``source`` (``rules`` or ``raw``)."""
    if source == "rules":
        return {record: record for record in SHOWBACK_RECORDS}
    if source != "raw":
        raise ValueError(f"unknown source {source!r} (known: {', '.join(SOURCES)})")
    records = recorded_expressions(thresholds)
    return {record: inline(records[record], records) for record in SHOWBACK_RECORDS}


def integral(expr: str, win: Window) -> str:
    """The sum of ``expr`` over the window's steps, per series (multiply by the step for GPU-seconds)."""
    return f"sum_over_time(({expr})[{win.end - win.start}s:{win.step}s])"


def rules_deployed_query() -> str:
    """Non-empty when the showback rules were recording: evaluated at the window's start, it says the recorded
    gauges cover the whole window (a team holding no GPU at that instant may still find them absent: the raw
    source then gives the same answer)."""
    return f"count({TEAM_POOL_GPU_ADMITTED} or {TEAM_POOL_GPU_KUEUE_ADMITTED})"
