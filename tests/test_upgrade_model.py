"""The cloud-neutral upgrade model: ``nodePools[].upgrade`` (`PoolUpgrade`) and ``maintenance.window``
(`MaintenanceWindow`), parsed from stack files and component arguments, with their defaults and one-line errors."""

import pytest

from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.upgrades.maintenance import (
    DEFAULT_WINDOW,
    MaintenanceWindow,
    parse_maintenance,
    parse_window,
    window_as_args,
)
from gpu_platform.upgrades.pool_upgrade import (
    PoolUpgrade,
    parse_pool_upgrade,
    refuse_unsupported,
    upgrade_from_args,
)

GCP = {"cloud": "gcp", "region": "us-central1"}


def _pool(role: str, **upgrade) -> dict:
    entry = {"name": f"{role}-pool", "instanceType": "g2-standard-8", "role": role}
    if upgrade:
        entry["upgrade"] = upgrade
    return entry


def test_roles_get_their_defaults():
    training, inference, general = (PoolUpgrade().resolved(role) for role in ("training", "inference", "general"))
    assert (training.max_surge, training.max_unavailable, training.automatic) == ("0", "1", "never")
    assert (inference.max_surge, inference.max_unavailable, inference.automatic) == ("1", "0", "window")
    assert (general.max_surge, general.max_unavailable, general.automatic) == ("1", "0", "window")
    # A cloud that cannot hold a pool per pool gives its own default instead of the role's.
    assert PoolUpgrade().resolved("training", automatic_default="window").automatic == "window"


def test_a_written_value_wins_and_the_other_default_keeps_progress_possible():
    surge_zero = parse_pool_upgrade({"maxSurge": 0}, "u").resolved("inference")
    assert (surge_zero.max_surge, surge_zero.max_unavailable) == ("0", "1")  # inference's 0 unavailable would stall
    unavailable_zero = parse_pool_upgrade({"maxUnavailable": "0"}, "u").resolved("training")
    assert (unavailable_zero.max_surge, unavailable_zero.max_unavailable) == ("1", "0")
    assert parse_pool_upgrade({"maxSurge": "25%", "automatic": "window"}, "u").resolved("training").automatic == \
        "window"


def test_the_stack_key_reaches_the_pool_config():
    config = parse_config({**GCP, "nodePools": [_pool("training", maxSurge=2, maxUnavailable=0)],
                           "maintenance": {"window": {"days": ["Sunday", "Saturday"], "start": "22:30", "hours": 6}}},
                          "s")
    assert config.node_pools[0].upgrade == PoolUpgrade(max_surge="2", max_unavailable="0",
                                                       given=frozenset({"max_surge", "max_unavailable"}))
    assert config.maintenance == MaintenanceWindow(days=("Saturday", "Sunday"), start="22:30", hours=6, given=True)
    azure = parse_config({"cloud": "azure", "region": "westeurope", "nodePools": [{
        "name": "train", "instanceType": "Standard_NC24ads_A100_v4", "role": "training",
        "upgrade": {"drainTimeoutMinutes": 45, "soakMinutes": 5}}]}, "s")
    assert azure.node_pools[0].upgrade == PoolUpgrade(drain_timeout_minutes=45, soak_minutes=5,
                                                      given=frozenset({"drain_timeout_minutes", "soak_minutes"}))
    default = parse_config({**GCP, "nodePools": [_pool("inference")]}, "s")
    assert default.node_pools[0].upgrade == PoolUpgrade()
    assert default.maintenance == DEFAULT_WINDOW and not default.maintenance.given


@pytest.mark.parametrize(("upgrade", "message"), [
    ({"maxSurge": -1}, "s: nodePools[0].upgrade.maxSurge: must be a node count (2) or a percentage ('25%'), got -1"),
    ({"maxSurge": "150%"}, "s: nodePools[0].upgrade.maxSurge: a percentage must be at most 100%, got 150%"),
    ({"maxUnavailable": True}, "s: nodePools[0].upgrade.maxUnavailable: must be a node count (2) or a percentage "
                               "('25%'), got True"),
    ({"maxSurge": 0, "maxUnavailable": 0}, "s: nodePools[0].upgrade.maxUnavailable: maxSurge and maxUnavailable "
                                           "are both 0: an upgrade could never replace a node; raise one of them"),
    ({"strategy": "canary"}, "s: nodePools[0].upgrade.strategy: 'canary' is not one of surge, blue-green"),
    ({"automatic": "always"}, "s: nodePools[0].upgrade.automatic: 'always' is not one of window, never"),
    ({"drainTimeoutMinutes": 0}, "s: nodePools[0].upgrade.drainTimeoutMinutes: must be between 1 and 1440 minutes, "
                                 "got 0"),
    ({"soakMinutes": 31}, "s: nodePools[0].upgrade.soakMinutes: must be between 0 and 30 minutes, got 31"),
    ({"maxSurgee": 1}, "s: nodePools[0].upgrade.maxSurgee: unknown key; did you mean 'maxSurge'?"),
])
def test_bad_upgrade_settings_are_one_line_errors(upgrade, message):
    with pytest.raises(ConfigError) as err:
        parse_config({**GCP, "nodePools": [_pool("training", **upgrade)]}, "s")
    assert str(err.value) == message


@pytest.mark.parametrize(("window", "message"), [
    ({"days": ["Caturday"]}, "maintenance.window.days[0]: 'Caturday' is not one of Monday, Tuesday, Wednesday, "
                             "Thursday, Friday, Saturday, Sunday; did you mean 'Saturday'?"),
    ({"days": []}, "maintenance.window.days: must be a list of week days such as [Saturday, Sunday]"),
    ({"days": ["Sunday", "Sunday"]}, "maintenance.window.days: names a day twice"),
    ({"start": "25:00"}, "maintenance.window.start: must be a UTC time HH:MM such as 02:00, got '25:00'"),
    ({"hours": 3}, "maintenance.window.hours: must be a whole number of hours from 4 to 24 (AKS and GKE need at "
                   "least 4), got 3"),
    ({"length": 3}, "maintenance.window.length: unknown key"),
])
def test_bad_windows_are_one_line_errors(window, message):
    with pytest.raises(ConfigError) as err:
        parse_maintenance({"window": window})
    assert str(err.value) == message
    with pytest.raises(ConfigError, match=r"^maintenance.windows: unknown key; did you mean 'window'\?$"):
        parse_maintenance({"windows": {}})


def test_component_arguments_take_the_same_rules_under_their_own_names():
    assert upgrade_from_args({"max_surge": "25%", "automatic": "never"}, "upgrade") == PoolUpgrade(
        max_surge="25%", automatic="never", given=frozenset({"max_surge", "automatic"}))
    with pytest.raises(ConfigError) as err:
        upgrade_from_args({"soak_minutes": 99}, "upgrade")
    assert str(err.value) == "upgrade.soak_minutes: must be between 0 and 30 minutes, got 99"
    with pytest.raises(ConfigError, match=r"^upgrade.maxSurge: unknown key; did you mean 'max_surge'\?$"):
        upgrade_from_args({"maxSurge": 1}, "upgrade")
    parsed = parse_pool_upgrade({"maxSurge": 2, "automatic": "never"}, "u")
    assert parsed.as_args() == {"max_surge": "2", "automatic": "never"}
    assert upgrade_from_args(parsed.as_args(), "upgrade") == parsed
    window = parse_window({"days": ["Tuesday"], "hours": 8}, "w")
    assert parse_window(window_as_args(window), "w") == window


def test_a_cloud_refuses_what_it_cannot_honour():
    upgrade = parse_pool_upgrade({"maxSurge": 1, "soakMinutes": 5}, "nodePools[0].upgrade")
    refuse_unsupported(upgrade, "nodePools[0].upgrade", {"max_surge": "x", "soak_minutes": "y"}, "AKS")
    with pytest.raises(ConfigError) as err:
        refuse_unsupported(upgrade, "nodePools[0].upgrade", {"max_surge": "x", "max_unavailable": "y"}, "EKS")
    assert str(err.value) == "nodePools[0].upgrade.soakMinutes: EKS has no setting for it (its pools take maxSurge, " \
                             "maxUnavailable)"
    blue_green = parse_pool_upgrade({"strategy": "blue-green"}, "nodePools[0].upgrade")
    with pytest.raises(ConfigError, match=r"strategy: OKE upgrades pools by surge only, not blue-green$"):
        refuse_unsupported(blue_green, "nodePools[0].upgrade", {"strategy": "x"}, "OKE")


def test_window_intervals_over_the_week():
    # Saturday 00:00 for 12 h: open from minute 7200 of the week (Monday 00:00 = 0), closed the other 156 h.
    assert DEFAULT_WINDOW.open_intervals() == [(7200, 720)]
    assert DEFAULT_WINDOW.closed_intervals() == [(7920, 9360)]
    assert DEFAULT_WINDOW.rrule_days() == "SA"
    weekend = parse_window({"days": ["Sunday", "Saturday"], "start": "20:00", "hours": 8}, "w")
    assert weekend.rrule_days() == "SA,SU"
    assert weekend.open_intervals() == [(8400, 480), (9840, 480)]
    # Closed from Monday 04:00 (Sunday's window runs past midnight) to Saturday 20:00, and Sunday 04:00 to 20:00.
    assert weekend.closed_intervals() == [(240, 8160), (8880, 960)]
    # Windows that touch merge; a window open every hour of the week leaves nothing closed.
    assert parse_window({"days": ["Monday", "Tuesday"], "hours": 24}, "w").open_intervals() == [(0, 2880)]
    every_day = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    assert parse_window({"days": every_day, "hours": 24}, "w").closed_intervals() == []
    # Sunday 22:00 for 8 h runs into Monday 06:00: the week wraps.
    wrapped = parse_window({"days": ["Sunday", "Monday"], "start": "22:00", "hours": 8}, "w")
    assert wrapped.open_intervals() == [(1320, 480), (9960, 480)]
    assert wrapped.closed_intervals() == [(360, 960), (1800, 8160)]
