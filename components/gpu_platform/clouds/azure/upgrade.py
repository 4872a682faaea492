"""How AKS upgrades a GPU pool and when it may do so on its own (``nodePools[].upgrade``, ``maintenance.window``).

Pure: plain dicts in the snake_case form of pulumi-azure-native 3.29.0's input types (AKS API 2025-09-01:
``AgentPoolUpgradeSettingsArgs``, ``ManagedClusterAutoUpgradeProfileArgs``, ``MaintenanceWindowArgs``), so
`AksCluster` / `AksGpuNodePool` only pass them on.

- ``maxSurge`` / ``maxUnavailable`` -> ``upgrade_settings.max_surge`` / ``max_unavailable`` (strings: a count or a
  percentage of the pool, as AKS takes them); ``drainTimeoutMinutes`` -> ``drain_timeout_in_minutes`` (AKS: 1-1440,
  default 30; PodDisruptionBudgets honoured, the upgrade fails when it runs out); ``soakMinutes`` ->
  ``node_soak_duration_in_minutes`` (AKS: 0-30, the wait after draining a node before reimaging it).
- ``strategy: blue-green`` is refused: AKS's agent pool API has no blue-green upgrade (no such field in
  ``AgentPoolUpgradeSettings`` of API 2025-09-01).
- When the cloud may upgrade: the Kubernetes minor is the stack's ``kubernetesVersion`` (Pulumi owns it), so the
  cluster's ``auto_upgrade_profile`` keeps patches (``upgrade_channel: patch``: the newest patch of the same minor)
  and node images (``node_os_upgrade_channel: NodeImage``) current, and the two maintenance configurations AKS reads
  for those channels, ``aksManagedAutoUpgradeSchedule`` and ``aksManagedNodeOSUpgradeSchedule`` (AKS "Use planned
  maintenance"), open them only in ``maintenance.window``. So a training pool's nodes are never upgraded by AKS
  outside the window.
- ``automatic: never`` is refused: AKS has no per-pool opt-out of either channel, and turning the node OS channel off
  for the whole cluster would leave every pool without automatic security images. ``automatic: window`` is what
  every AKS pool does (and the default on AKS, training pools included).
"""

from typing import Any, Optional

from ...errors import ConfigError
from ...upgrades.maintenance import DAYS, MaintenanceWindow
from ...upgrades.pool_upgrade import NEVER, SURGE, WINDOW, PoolUpgrade, refuse_unsupported

CLOUD = "AKS"
SUPPORTED = {
    "max_surge": "upgrade_settings.max_surge",
    "max_unavailable": "upgrade_settings.max_unavailable",
    "strategy": "surge only (the agent pool's rolling surge upgrade)",
    "drain_timeout_minutes": "upgrade_settings.drain_timeout_in_minutes",
    "soak_minutes": "upgrade_settings.node_soak_duration_in_minutes",
    "automatic": "the cluster's maintenance configurations (window only)",
}
"""Each `PoolUpgrade` field AKS honours and the provider input it reaches (``strategy: blue-green`` is refused)."""
AUTOMATIC_DEFAULT = WINDOW
"""AKS's default for every pool: automatic patch and node image upgrades, in the window only."""

UPGRADE_CHANNEL = "patch"
"""``UpgradeChannel.PATCH``: the latest patch of the cluster's own minor, never a new minor (``stable`` and
``rapid`` would move the minor Pulumi owns)."""
NODE_OS_UPGRADE_CHANNEL = "NodeImage"
"""``NodeOSUpgradeChannel.NODE_IMAGE``: a fresh node image (OS security fixes, the GPU driver AKS installs) each
week AKS ships one, applied as a node reimage under the pool's ``upgrade_settings``."""
AUTO_UPGRADE_SCHEDULE = "aksManagedAutoUpgradeSchedule"
NODE_OS_UPGRADE_SCHEDULE = "aksManagedNodeOSUpgradeSchedule"
"""The ``config_name`` of the maintenance configurations AKS reads for the two channels (AKS "Use planned
maintenance to schedule and control upgrades": the ``default`` configuration governs neither)."""
UTC = "+00:00"


def check_pool_upgrade(upgrade: PoolUpgrade, path: str) -> None:
    """Refuse, with one line naming ``path.<key>``, what an AKS pool cannot honour (the stack and the components
    call it alike)."""
    refuse_unsupported(upgrade, path, SUPPORTED, CLOUD, (SURGE,))
    if upgrade.automatic == NEVER:
        raise ConfigError(f"{path}.automatic", "AKS has no per-pool opt-out of automatic upgrades; its pools are "
                                               "upgraded only inside maintenance.window (use window, or narrow "
                                               "the window)")


def upgrade_settings(upgrade: PoolUpgrade) -> dict[str, Any]:
    """``upgrade_settings`` of an agent pool from its resolved `PoolUpgrade`; drain timeout and soak only when
    given (AKS's defaults otherwise: 30 and 0 minutes)."""
    settings: dict[str, Any] = {"max_surge": upgrade.max_surge, "max_unavailable": upgrade.max_unavailable}
    if upgrade.drain_timeout_minutes is not None:
        settings["drain_timeout_in_minutes"] = upgrade.drain_timeout_minutes
    if upgrade.soak_minutes is not None:
        settings["node_soak_duration_in_minutes"] = upgrade.soak_minutes
    return settings


def auto_upgrade_profile() -> dict[str, str]:
    """The cluster's ``auto_upgrade_profile``."""
    return {"upgrade_channel": UPGRADE_CHANNEL, "node_os_upgrade_channel": NODE_OS_UPGRADE_CHANNEL}


def window_problem(window: MaintenanceWindow) -> Optional[tuple[str, str]]:
    """``(key, problem)`` when AKS's schedules cannot say the window, or None: a weekly schedule takes one
    ``day_of_week`` and a daily one every day, so a window on some days of the week but not one or all is
    refused."""
    if len(window.days) in (1, len(DAYS)):
        return None
    return "days", (f"AKS's auto-upgrade schedules open on one week day or every day, not {', '.join(window.days)}; "
                    "give one day (a longer hours) or all seven")


def maintenance_window(window: MaintenanceWindow) -> dict[str, Any]:
    """``maintenance_window`` of both maintenance configurations, in UTC. ``duration_hours`` is 4 to 24, as AKS
    takes it; ``start_time`` ``HH:MM``."""
    if len(window.days) == len(DAYS):
        schedule: dict[str, Any] = {"daily": {"interval_days": 1}}
    else:
        schedule = {"weekly": {"day_of_week": window.days[0], "interval_weeks": 1}}
    return {"schedule": schedule, "duration_hours": window.hours, "start_time": window.start, "utc_offset": UTC}
