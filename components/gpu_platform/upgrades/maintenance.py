"""The stack's maintenance window: when a cloud may upgrade or repair nodes on its own (``maintenance.window``).

One weekly window in UTC: the days it opens, the time it opens and how many hours it stays open. The clouds turn it
into their own schedules (AKS ``MaintenanceConfiguration``s, GKE ``maintenancePolicy.recurringWindow``, Karpenter
disruption budgets that close drift outside it); the pure helpers here give each the form it needs.

Default: Saturdays from 00:00 UTC for 12 hours. Twelve hours because GKE wants a window to leave at least 48 hours of
maintenance time in any 32 days (a 32-day span holds at least four Saturdays: 4 x 12 = 48), and AKS wants at least
4 hours per window.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from ..errors import ConfigError, check_keys, one_of

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
"""Week days as AKS spells them (``dayOfWeek``); RFC 5545 ``BYDAY`` codes are their first two letters."""
MIN_HOURS = 4
"""AKS: ``durationHours`` of a maintenance window is 4 to 24; GKE: a window must be at least 4 hours long."""
MAX_HOURS = 24
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
KEYS = ("days", "start", "hours")
"""The keys of ``maintenance.window``."""
MAINTENANCE_KEYS = ("window",)
"""The keys of ``maintenance``."""
MINUTES_PER_WEEK = 7 * 24 * 60


class MaintenanceWindowArgs(TypedDict, total=False):
    """``maintenance_window`` argument of the cluster components (stack key ``maintenance.window``)."""

    days: list[str]
    """Week days the window opens (``Saturday``), in UTC. Default ``["Saturday"]``."""
    start: str
    """When it opens, ``HH:MM`` UTC. Default ``00:00``."""
    hours: int
    """How long it stays open, 4 to 24 hours. Default 12."""


@dataclass(frozen=True)
class MaintenanceWindow:
    """A weekly maintenance window in UTC."""

    days: tuple[str, ...] = ("Saturday",)
    """Week days the window opens, UTC (``[Saturday, Sunday]``)."""
    start: str = "00:00"
    """When it opens, ``HH:MM`` UTC."""
    hours: int = 12
    """How long it stays open, 4 to 24 hours (GKE wants 48 hours of window in any 32 days: one day a week needs 12)."""
    given: bool = False
    """The stack or the component named the window (clouds without a maintenance API refuse a given one)."""

    @property
    def start_minute(self) -> int:
        """Minutes after midnight UTC the window opens."""
        hour, minute = self.start.split(":")
        return int(hour) * 60 + int(minute)

    def weekly_minutes(self) -> int:
        """Minutes of maintenance time per week."""
        return len(self.days) * self.hours * 60

    def open_intervals(self) -> list[tuple[int, int]]:
        """``(start, length)`` in minutes from Monday 00:00 UTC of each opening, merged where they touch, sorted."""
        spans = sorted((DAYS.index(day) * 1440 + self.start_minute, self.hours * 60) for day in self.days)
        merged: list[list[int]] = []
        for start, length in spans:
            if merged and start <= merged[-1][0] + merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], start + length - merged[-1][0])
            else:
                merged.append([start, length])
        # A window that runs past Sunday midnight may reach Monday's.
        if len(merged) > 1 and merged[-1][0] + merged[-1][1] >= MINUTES_PER_WEEK + merged[0][0]:
            last = merged.pop()
            first = merged.pop(0)
            merged.append([last[0], max(last[1], first[0] + first[1] + MINUTES_PER_WEEK - last[0])])
        return sorted((s, min(length, MINUTES_PER_WEEK)) for s, length in merged)

    def closed_intervals(self) -> list[tuple[int, int]]:
        """``(start, length)`` in minutes from Monday 00:00 UTC of each span outside the window (the complement of
        `open_intervals` over the week), for schedulers that can only say when something is blocked."""
        opened = self.open_intervals()
        if sum(length for _, length in opened) >= MINUTES_PER_WEEK:
            return []
        closed = []
        following = opened[1:] + [(opened[0][0] + MINUTES_PER_WEEK, 0)]
        for (start, length), (next_start, _) in zip(opened, following, strict=True):
            end = start + length
            closed.append((end % MINUTES_PER_WEEK, next_start - end))
        return sorted(closed)

    def rrule_days(self) -> str:
        """RFC 5545 ``BYDAY`` list (``SA,SU``) in week order."""
        return ",".join(day[:2].upper() for day in DAYS if day in self.days)


DEFAULT_WINDOW = MaintenanceWindow()


def parse_maintenance(raw: Any, path: str = "maintenance") -> MaintenanceWindow:
    """The stack key ``maintenance`` (``{window: {days, start, hours}}``) as a `MaintenanceWindow`."""
    if raw is None:
        return DEFAULT_WINDOW
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"must be a mapping with window, got {type(raw).__name__}")
    check_keys(raw, MAINTENANCE_KEYS, path)
    return parse_window(raw.get("window"), f"{path}.window")


def parse_window(raw: Any, path: str) -> MaintenanceWindow:
    """``{days, start, hours}`` as a `MaintenanceWindow` (the component argument uses the same keys)."""
    if raw is None:
        return DEFAULT_WINDOW
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"must be a mapping of days, start, hours, got {type(raw).__name__}")
    check_keys(raw, KEYS, path)
    days = raw.get("days", list(DEFAULT_WINDOW.days))
    if isinstance(days, str):
        days = [days]
    if not isinstance(days, list) or not days:
        raise ConfigError(f"{path}.days", "must be a list of week days such as [Saturday, Sunday]")
    for i, day in enumerate(days):
        if day not in DAYS:
            raise ConfigError(f"{path}.days[{i}]", one_of(day, DAYS))
    if len(set(days)) != len(days):
        raise ConfigError(f"{path}.days", "names a day twice")
    start = raw.get("start", DEFAULT_WINDOW.start)
    if not isinstance(start, str) or not _TIME.match(start):
        raise ConfigError(f"{path}.start", f"must be a UTC time HH:MM such as 02:00, got {start!r}")
    hours = raw.get("hours", DEFAULT_WINDOW.hours)
    if isinstance(hours, bool) or not isinstance(hours, int) or not MIN_HOURS <= hours <= MAX_HOURS:
        raise ConfigError(f"{path}.hours", f"must be a whole number of hours from {MIN_HOURS} to {MAX_HOURS} "
                                           f"(AKS and GKE need at least {MIN_HOURS}), got {hours!r}")
    ordered = tuple(day for day in DAYS if day in days)
    return MaintenanceWindow(days=ordered, start=start, hours=hours, given=True)


def window_as_args(window: MaintenanceWindow) -> MaintenanceWindowArgs:
    """The cluster component argument that says the same window."""
    return {"days": list(window.days), "start": window.start, "hours": window.hours}
