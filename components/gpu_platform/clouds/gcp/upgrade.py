"""How GKE upgrades a GPU pool and when it may do so on its own (``nodePools[].upgrade``, ``maintenance.window``).

Pure: plain dicts in the snake_case form of pulumi_gcp 10.2.0's input types (``NodePoolUpgradeSettingsArgs``,
``ClusterMaintenancePolicyArgs``), so `GkeCluster` / `GkeGpuNodePool` only pass them on.

- ``strategy: surge`` -> ``upgrade_settings`` ``{strategy: SURGE, max_surge, max_unavailable}``: GKE takes node
  counts (integers), so a percentage is refused.
- ``strategy: blue-green`` -> ``{strategy: BLUE_GREEN, blue_green_settings}``: the green pool is created whole,
  then the blue nodes are drained in batches of ``maxUnavailable`` (``standard_rollout_policy.batch_node_count``, or
  ``batch_percentage`` as a fraction for a percentage; default one node); ``soakMinutes`` is both the soak after
  each batch (``batch_soak_duration``) and the time the drained blue pool is kept for a rollback
  (``node_pool_soak_duration``), durations in seconds (``"600s"``). ``maxSurge`` is refused there (blue-green
  surges the whole pool).
- ``drainTimeoutMinutes`` is refused: GKE's surge and blue-green upgrades honour PodDisruptionBudgets for up to an
  hour and then drain the node ("Node upgrade strategies", GKE docs); no pool input of the upgrade settings changes
  that.
- ``maintenance.window`` -> the cluster's ``maintenance_policy.recurring_window`` (RFC 3339 start/end of the first
  opening after a fixed anchor, RRULE ``FREQ=WEEKLY;BYDAY=..``). GKE wants at least 48 hours of maintenance time in
  any 32 days ("Maintenance windows and exclusions"), checked here.
- ``automatic: never`` (training pools' default) -> a ``maintenance_exclusions`` entry with scope
  ``NO_MINOR_OR_NODE_UPGRADES`` until the end of support of the cluster's minor (``UNTIL_END_OF_SUPPORT``), what
  Google's Cluster Toolkit GPU blueprints set. GKE exclusions apply to the whole cluster: `cluster_automatic` holds
  the rule for pools that say different things.

Node auto-upgrade stays as `gcp_pools.management` sets it (on, except queued-provisioning pools): GKE's
"Auto-upgrading nodes" page keeps node auto-upgrade on for clusters enrolled in a release channel and points to
maintenance exclusions to hold it, which is what this module uses.
"""

import datetime
from collections.abc import Sequence
from typing import Any, Optional

from ...errors import ConfigError
from ...upgrades.maintenance import DAYS, MINUTES_PER_WEEK, MaintenanceWindow
from ...upgrades.pool_upgrade import (
    BLUE_GREEN,
    NEVER,
    STRATEGIES,
    WINDOW,
    PoolUpgrade,
    count_of,
    refuse_unsupported,
    stack_key,
)

CLOUD = "GKE"
SUPPORTED = {
    "max_surge": "upgrade_settings.max_surge (surge)",
    "max_unavailable": "upgrade_settings.max_unavailable (surge) or "
                       "blue_green_settings.standard_rollout_policy.batch_node_count / batch_percentage",
    "strategy": "upgrade_settings.strategy (SURGE, BLUE_GREEN)",
    "soak_minutes": "blue_green_settings.batch_soak_duration and node_pool_soak_duration (blue-green)",
    "automatic": "maintenance_policy.maintenance_exclusions (NO_MINOR_OR_NODE_UPGRADES, cluster-wide)",
}
"""Each `PoolUpgrade` field GKE honours and the provider input it reaches (``drain_timeout_minutes`` is refused)."""

SURGE_STRATEGY = "SURGE"
BLUE_GREEN_STRATEGY = "BLUE_GREEN"
EXCLUSION_NAME = "gpu-platform-hold-node-upgrades"
EXCLUSION_SCOPE = "NO_MINOR_OR_NODE_UPGRADES"
"""``ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs.scope`` (pulumi_gcp 10.2.0: NO_UPGRADES,
NO_MINOR_UPGRADES, NO_MINOR_OR_NODE_UPGRADES): the control plane still gets patches, nodes get nothing automatic."""
UNTIL_END_OF_SUPPORT = "UNTIL_END_OF_SUPPORT"
"""``exclusion_options.end_time_behavior``: the exclusion ends with the support of the cluster's current minor and
follows the minor when Pulumi upgrades it, so it never lapses in the middle of a job."""
ANCHOR = datetime.datetime(2025, 1, 6, tzinfo=datetime.timezone.utc)
"""A fixed Monday 00:00 UTC: the recurring window's first opening is dated from it, never from today, so two plans
of the same stack are identical and the cluster sees no diff on every ``pulumi up``. GKE reads the date only as the
recurrence's first day ("The start time's date is the initial date that the window starts", pulumi_gcp
``recurring_window``); a past date is what Google's own samples use."""
EXCLUSION_START = "2025-01-06T00:00:00Z"
"""``start_time`` of the exclusion (required by the API): the same fixed past instant, so the plan is deterministic
and no ``ignore_changes`` is needed. GKE accepts a start in the past: Google's Terraform sample for this exclusion
(terraform-google-modules/terraform-docs-samples ``gke/standard/zonal/no-channel-to-release-channel/
no_minor_or_node_upgrade/main.tf``, run by its CI long after) gives the fixed ``2025-02-11T23:16:39Z`` and only asks
for an end in the future, which ``UNTIL_END_OF_SUPPORT`` computes."""
MIN_MINUTES_IN_32_DAYS = 48 * 60
"""GKE: "you must allow at least 48 hours of maintenance availability in a 32-day rolling window"."""
_SPAN = 32 * 1440


def check_pool_upgrade(upgrade: PoolUpgrade, path: str) -> None:
    """Refuse, with one line naming ``path.<key>``, what a GKE pool cannot honour (the stack and the components
    call it alike)."""
    refuse_unsupported(upgrade, path, SUPPORTED, CLOUD, STRATEGIES)
    given = upgrade.given
    if upgrade.strategy == BLUE_GREEN:
        if "max_surge" in given:
            raise ConfigError(f"{path}.maxSurge", "a GKE blue-green upgrade creates the whole new pool first; "
                                                  "remove maxSurge (maxUnavailable is the drain batch)")
        if "max_unavailable" in given and count_of(upgrade.max_unavailable) == 0:
            raise ConfigError(f"{path}.maxUnavailable", "a GKE blue-green upgrade drains at least one node per "
                                                        "batch; give a count or percentage above 0")
        return
    for field in ("max_surge", "max_unavailable"):
        if field in given and upgrade.is_percentage(field):
            raise ConfigError(f"{path}.{stack_key(field)}", f"GKE takes a node count, not a percentage "
                                                            f"({getattr(upgrade, field)})")
    if "soak_minutes" in given:
        raise ConfigError(f"{path}.soakMinutes", "GKE soaks only blue-green upgrades; set strategy: blue-green or "
                                                 "remove soakMinutes")


def upgrade_settings(upgrade: PoolUpgrade) -> dict[str, Any]:
    """``upgrade_settings`` of a node pool from its resolved `PoolUpgrade` (`PoolUpgrade.resolved`)."""
    if upgrade.strategy != BLUE_GREEN:
        return {"strategy": SURGE_STRATEGY, "max_surge": count_of(upgrade.max_surge),
                "max_unavailable": count_of(upgrade.max_unavailable)}
    batch: dict[str, Any] = {"batch_node_count": 1}
    if "max_unavailable" in upgrade.given:
        batch = ({"batch_percentage": count_of(upgrade.max_unavailable) / 100}
                 if upgrade.is_percentage("max_unavailable") else
                 {"batch_node_count": count_of(upgrade.max_unavailable)})
    settings: dict[str, Any] = {"standard_rollout_policy": batch}
    if upgrade.soak_minutes is not None:
        soak = f"{upgrade.soak_minutes * 60}s"
        batch["batch_soak_duration"] = soak
        settings["node_pool_soak_duration"] = soak
    return {"strategy": BLUE_GREEN_STRATEGY, "blue_green_settings": settings}


def cluster_automatic(pools: Sequence[tuple[str, PoolUpgrade, str]], path_of: Any) -> str:
    """Whether GKE may upgrade the cluster's nodes in the window (``window``) or never on its own (``never``), from
    ``(pool name, PoolUpgrade, role)`` of every pool. An exclusion holds every pool of the cluster, so the most
    restrictive pool decides, and pools that did not write ``automatic`` follow it; a pool that wrote ``window``
    beside one that resolves to ``never`` is refused (``path_of(i)`` is the ``automatic`` path of pool ``i``)."""
    resolved = [upgrade.resolved(role).automatic for _, upgrade, role in pools]
    if NEVER not in resolved:
        return WINDOW
    holding = resolved.index(NEVER)
    for i, (name, upgrade, _) in enumerate(pools):
        if "automatic" in upgrade.given and upgrade.automatic == WINDOW:
            raise ConfigError(path_of(i), f"GKE holds node upgrades for the whole cluster and pool "
                                          f"'{pools[holding][0]}' resolves to automatic: never; set automatic: "
                                          f"window there too or remove it from pool '{name}'")
    return NEVER


def window_problem(window: MaintenanceWindow) -> Optional[str]:
    """Why GKE would refuse the window (less than 48 hours of maintenance time in some 32 days), or None."""
    least = min_minutes_in_32_days(window)
    if least >= MIN_MINUTES_IN_32_DAYS:
        return None
    return (f"gives GKE {least / 60:g} hours of maintenance in some 32 days; GKE needs at least 48 (e.g. 12 hours "
            "once a week or 7 hours twice a week)")


def min_minutes_in_32_days(window: MaintenanceWindow) -> int:
    """The least maintenance time, in minutes, of any 32-day span. The open time of a span is piecewise linear in
    its start, so its minimum is at a start where the span begins or ends at an opening's boundary."""
    opened = window.open_intervals()
    candidates = {(edge - offset) % MINUTES_PER_WEEK for start, length in opened for edge in (start, start + length)
                  for offset in (0, _SPAN)}
    return min(_open_minutes(opened, t, t + _SPAN) for t in candidates)


def _open_minutes(opened: list[tuple[int, int]], begin: int, end: int) -> int:
    total = 0
    for week in range(begin // MINUTES_PER_WEEK - 1, end // MINUTES_PER_WEEK + 1):
        for start, length in opened:
            s = week * MINUTES_PER_WEEK + start
            total += max(0, min(end, s + length) - max(begin, s))
    return total


def recurring_window(window: MaintenanceWindow) -> dict[str, str]:
    """``maintenance_policy.recurring_window``: the first opening after `ANCHOR` (its date starts the recurrence,
    its length is the window's) recurring weekly on the window's days."""
    first = ANCHOR + datetime.timedelta(days=DAYS.index(window.days[0]), minutes=window.start_minute)
    end = first + datetime.timedelta(hours=window.hours)
    return {"start_time": _rfc3339(first), "end_time": _rfc3339(end),
            "recurrence": f"FREQ=WEEKLY;BYDAY={window.rrule_days()}"}


def maintenance_policy(window: MaintenanceWindow, automatic: str) -> dict[str, Any]:
    """The cluster's ``maintenance_policy``: the window, and with ``automatic`` ``never`` the exclusion that keeps
    GKE from upgrading any node on its own (only a ``pulumi up`` that changes a pool's version does)."""
    policy: dict[str, Any] = {"recurring_window": recurring_window(window)}
    if automatic == NEVER:
        policy["maintenance_exclusions"] = [{
            "exclusion_name": EXCLUSION_NAME,
            "start_time": EXCLUSION_START,
            "exclusion_options": {"scope": EXCLUSION_SCOPE, "end_time_behavior": UNTIL_END_OF_SUPPORT},
        }]
    return policy


def _rfc3339(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
