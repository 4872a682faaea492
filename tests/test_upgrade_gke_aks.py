"""Pool upgrades and the maintenance window on GKE and AKS: the exact provider inputs of the reference stacks and of
composed components, that every ``upgrade`` key and the window change the plan, and one refusal per refused key."""

import pulumi
import pytest
from conftest import planned_stack

from gpu_platform import pool_args
from gpu_platform.clouds.azure import AksCluster, AksGpuNodePool
from gpu_platform.clouds.azure import upgrade as aks_upgrade
from gpu_platform.clouds.gcp import GkeCluster, GkeGpuNodePool
from gpu_platform.clouds.gcp import cluster_from_config as gke_from_config
from gpu_platform.clouds.gcp import upgrade as gke_upgrade
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.testing import run_program
from gpu_platform.upgrades.maintenance import MaintenanceWindow, parse_window
from gpu_platform.upgrades.pool_upgrade import parse_pool_upgrade

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
MAINTENANCE = "azure-native:containerservice:MaintenanceConfiguration"

TRAINING_SURGE = {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
INFERENCE_SURGE = {"strategy": "SURGE", "maxSurge": 1, "maxUnavailable": 0}
SATURDAY_WINDOW = {"startTime": "2025-01-11T00:00:00Z", "endTime": "2025-01-11T12:00:00Z",
                   "recurrence": "FREQ=WEEKLY;BYDAY=SA"}
HOLD = {"exclusionName": "gpu-platform-hold-node-upgrades", "startTime": "2025-01-06T00:00:00Z",
        "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES", "endTimeBehavior": "UNTIL_END_OF_SUPPORT"}}
AKS_SATURDAY = {"schedule": {"weekly": {"dayOfWeek": "Saturday", "intervalWeeks": 1}}, "durationHours": 12,
                "startTime": "00:00", "utcOffset": "+00:00"}
AKS_TRAINING = {"maxSurge": "0", "maxUnavailable": "1"}
AKS_INFERENCE = {"maxSurge": "1", "maxUnavailable": "0"}


# ---------------------------------------------------------------------------------------------------------
# Reference stacks


def _planned(stack):
    planned = planned_stack(stack)
    assert not planned.errors
    return planned.recording, planned.config


@pytest.mark.parametrize("stack", ["gcp-dev", "gcp-a4x", "gcp-tpu"])
def test_gke_reference_stacks_hold_training_nodes_and_surge_inference(stack):
    recording, config = _planned(stack)
    (cluster,) = recording.of_type(CLUSTER)
    assert cluster.inputs["maintenancePolicy"] == {"recurringWindow": SATURDAY_WINDOW, "maintenanceExclusions": [HOLD]}
    roles = {p.name: p.role for p in config.node_pools}
    assert "training" in roles.values()
    for pool in recording.of_type(NODE_POOL):
        name = pool.inputs["name"]
        if name == "system":
            assert "upgradeSettings" not in pool.inputs
            continue
        expected = TRAINING_SURGE if roles[name] == "training" else INFERENCE_SURGE
        assert pool.inputs["upgradeSettings"] == expected, name
        assert pool.inputs["management"]["autoUpgrade"] is (pool.inputs.get("queuedProvisioning") is None)


@pytest.mark.parametrize("stack", ["azure-dev", "azure-gb200", "azure-mi300x"])
def test_aks_reference_stacks_upgrade_only_in_the_window(stack):
    recording, config = _planned(stack)
    (cluster,) = recording.of_type(MANAGED_CLUSTER)
    assert cluster.inputs["autoUpgradeProfile"] == {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}
    schedules = {r.inputs["configName"]: r for r in recording.of_type(MAINTENANCE)}
    assert sorted(schedules) == ["aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule"]
    for schedule in schedules.values():
        assert schedule.inputs["maintenanceWindow"] == AKS_SATURDAY
        assert schedule.inputs["resourceName"] == f"{stack}-aks"  # the managed cluster (auto-named in mocks)
        assert schedule.inputs["resourceGroupName"] == f"{stack}-rg"
    roles = {p.cloud_options.agent_pool_name: p.role for p in config.node_pools}
    for pool in recording.of_type(AGENT_POOL):
        expected = AKS_TRAINING if roles[pool.inputs["agentPoolName"]] == "training" else AKS_INFERENCE
        assert pool.inputs["upgradeSettings"] == expected


# ---------------------------------------------------------------------------------------------------------
# GKE: the stack path, each key changes the plan


def gke(pools, **top):
    config = parse_config({"cloud": "gcp", "region": "us-central1", "project": "gpu-dev-1", "nodePools": pools,
                           **top}, "dev")
    return run_program(lambda: gke_from_config("dev", config, pulumi.ResourceOptions()), stack="dev")


def l4(name="infer", role="inference", **extra):
    return {"name": name, "instanceType": "g2-standard-8", "maxNodes": 2, "role": role, **extra}


def gke_settings(recording, name="infer"):
    return recording.one(NODE_POOL, f"dev-{name}-pool").inputs["upgradeSettings"]


def gke_policy(recording):
    return recording.one(CLUSTER).inputs["maintenancePolicy"]


def test_gke_surge_counts_reach_the_pool():
    recording = gke([l4(upgrade={"maxSurge": 3, "maxUnavailable": "2"})])
    assert gke_settings(recording) == {"strategy": "SURGE", "maxSurge": 3, "maxUnavailable": 2}
    assert gke_policy(recording) == {"recurringWindow": SATURDAY_WINDOW}  # nothing says never: no exclusion


def test_gke_blue_green_batches_and_soak():
    recording = gke([l4(upgrade={"strategy": "blue-green", "maxUnavailable": "25%", "soakMinutes": 10})])
    assert gke_settings(recording) == {"strategy": "BLUE_GREEN", "blueGreenSettings": {
        "standardRolloutPolicy": {"batchPercentage": 0.25, "batchSoakDuration": "600s"},
        "nodePoolSoakDuration": "600s"}}
    recording = gke([l4(upgrade={"strategy": "blue-green", "maxUnavailable": 2})])
    assert gke_settings(recording) == {"strategy": "BLUE_GREEN", "blueGreenSettings": {
        "standardRolloutPolicy": {"batchNodeCount": 2}}}


def test_gke_automatic_and_window_reach_the_maintenance_policy():
    held = gke([l4(upgrade={"automatic": "never"})])
    assert gke_policy(held)["maintenanceExclusions"] == [HOLD]
    released = gke([l4(name="train", role="training", upgrade={"automatic": "window"})])
    assert gke_policy(released) == {"recurringWindow": SATURDAY_WINDOW}
    window = gke([l4()], maintenance={"window": {"days": ["Tuesday", "Sunday"], "start": "22:30", "hours": 6}})
    assert gke_policy(window) == {"recurringWindow": {"startTime": "2025-01-07T22:30:00Z",
                                                      "endTime": "2025-01-08T04:30:00Z",
                                                      "recurrence": "FREQ=WEEKLY;BYDAY=TU,SU"}}


@pytest.mark.parametrize(("upgrade", "path", "words"), [
    ({"drainTimeoutMinutes": 60}, "nodePools[0].upgrade.drainTimeoutMinutes", "GKE has no setting"),
    ({"maxSurge": "50%"}, "nodePools[0].upgrade.maxSurge", "node count, not a percentage"),
    ({"soakMinutes": 5}, "nodePools[0].upgrade.soakMinutes", "only blue-green"),
    ({"strategy": "blue-green", "maxSurge": 1}, "nodePools[0].upgrade.maxSurge", "whole new pool"),
])
def test_gke_refuses_what_it_cannot_honour(upgrade, path, words):
    with pytest.raises(ConfigError) as err:
        gke([l4(upgrade=upgrade)])
    assert err.value.path == path and words in err.value.problem


def test_gke_refuses_a_window_pool_beside_a_held_one():
    with pytest.raises(ConfigError) as err:
        gke([l4(name="train", role="training"), l4(upgrade={"automatic": "window"})])
    assert err.value.path == "nodePools[1].upgrade.automatic"
    assert "'train' resolves to automatic: never" in err.value.problem and "pool 'infer'" in err.value.problem


def test_gke_refuses_a_window_under_48_hours_in_32_days():
    with pytest.raises(ConfigError) as err:
        gke([l4()], maintenance={"window": {"days": ["Saturday"], "hours": 11}})
    assert err.value.path == "maintenance.window" and "44 hours" in err.value.problem


def test_gke_48_hour_rule():
    assert gke_upgrade.min_minutes_in_32_days(MaintenanceWindow()) == 48 * 60
    # Monday and Thursday: any 32 days hold 8 openings plus at least one more (the longest gap is 3 days 18 h).
    assert gke_upgrade.min_minutes_in_32_days(MaintenanceWindow(days=("Monday", "Thursday"), hours=6)) == 54 * 60
    assert gke_upgrade.window_problem(MaintenanceWindow(days=("Monday", "Thursday"), hours=6)) is None
    assert "45 hours" in gke_upgrade.window_problem(MaintenanceWindow(days=("Monday", "Thursday"), hours=5))


# ---------------------------------------------------------------------------------------------------------
# GKE: composed components


def test_composed_gke_cluster_and_pool_match_the_stack_path():
    def program():
        train = pool_args("gcp", {"name": "train", "instanceType": "g2-standard-8", "maxNodes": 2,
                                  "role": "training"})
        infer = pool_args("gcp", {"name": "infer", "instanceType": "g2-standard-8", "maxNodes": 2,
                                  "role": "inference", "upgrade": {"maxSurge": 2}})
        assert infer["upgrade"] == {"max_surge": "2"}
        GkeCluster("ml", {"region": "us-central1", "project": "gpu-dev-1", "gpu_pools": [train, infer],
                          "maintenance_window": {"days": ["Sunday"], "start": "02:00", "hours": 12}})
        GkeGpuNodePool("solo", {"pool": infer["pool"], "cluster": "c", "location": "us-central1-a",
                                "upgrade": {"strategy": "blue-green", "soak_minutes": 30}})

    recording = run_program(program)
    assert recording.one(CLUSTER).inputs["maintenancePolicy"] == {
        "recurringWindow": {"startTime": "2025-01-12T02:00:00Z", "endTime": "2025-01-12T14:00:00Z",
                            "recurrence": "FREQ=WEEKLY;BYDAY=SU"},
        "maintenanceExclusions": [HOLD]}
    assert recording.one(NODE_POOL, "ml-train-pool").inputs["upgradeSettings"] == TRAINING_SURGE
    assert recording.one(NODE_POOL, "ml-infer-pool").inputs["upgradeSettings"] == {
        "strategy": "SURGE", "maxSurge": 2, "maxUnavailable": 0}
    assert recording.one(NODE_POOL, "solo-pool").inputs["upgradeSettings"] == {
        "strategy": "BLUE_GREEN", "blueGreenSettings": {
            "standardRolloutPolicy": {"batchNodeCount": 1, "batchSoakDuration": "1800s"},
            "nodePoolSoakDuration": "1800s"}}


def _gke_pool_spec():
    return pool_args("gcp", {"name": "infer", "instanceType": "g2-standard-8", "maxNodes": 2})["pool"]


@pytest.mark.parametrize(("upgrade", "path"), [
    ({"drain_timeout_minutes": 5}, "upgrade.drain_timeout_minutes"),
    ({"max_unavailable": "10%"}, "upgrade.max_unavailable"),
    ({"automatic": "never"}, "upgrade.automatic"),
])
def test_composed_gke_pool_refusals(upgrade, path):
    with pytest.raises(ConfigError) as err:
        GkeGpuNodePool("solo", {"pool": _gke_pool_spec(), "cluster": "c", "location": "us-central1-a",
                                "upgrade": upgrade})
    assert err.value.path == path


def test_composed_gke_cluster_refuses_a_short_window():
    with pytest.raises(ConfigError) as err:
        GkeCluster("ml", {"region": "us-central1", "maintenance_window": {"days": ["Monday"], "hours": 4}})
    assert err.value.path == "maintenance_window" and "GKE needs at least 48" in err.value.problem


# ---------------------------------------------------------------------------------------------------------
# AKS


def aks(pools, **top):
    from gpu_platform.clouds.azure import cluster_from_config

    config = parse_config({"cloud": "azure", "region": "westeurope", "nodePools": pools, **top}, "dev")
    return run_program(lambda: cluster_from_config("dev", config, pulumi.ResourceOptions()), stack="dev")


def a100(name="infer", role="inference", **extra):
    return {"name": name, "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2, "role": role, **extra}


def test_aks_every_key_reaches_upgrade_settings():
    recording = aks([a100(upgrade={"maxSurge": "33%", "maxUnavailable": 1, "drainTimeoutMinutes": 90,
                                   "soakMinutes": 15})])
    assert recording.one(AGENT_POOL).inputs["upgradeSettings"] == {
        "maxSurge": "33%", "maxUnavailable": "1", "drainTimeoutInMinutes": 90, "nodeSoakDurationInMinutes": 15}
    default = aks([a100(), a100(name="train", role="training", upgrade={"automatic": "window"})])
    assert default.one(AGENT_POOL, "dev-train-pool").inputs["upgradeSettings"] == AKS_TRAINING


def test_aks_window_reaches_both_schedules():
    recording = aks([a100()], maintenance={"window": {"days": ["Wednesday"], "start": "03:15", "hours": 5}})
    for schedule in recording.of_type(MAINTENANCE):
        assert schedule.inputs["maintenanceWindow"] == {
            "schedule": {"weekly": {"dayOfWeek": "Wednesday", "intervalWeeks": 1}}, "durationHours": 5,
            "startTime": "03:15", "utcOffset": "+00:00"}
    every_day = aks([a100()], maintenance={"window": {"days": list(aks_upgrade.DAYS), "hours": 4}})
    assert {s.inputs["maintenanceWindow"]["schedule"]["daily"]["intervalDays"]
            for s in every_day.of_type(MAINTENANCE)} == {1}


@pytest.mark.parametrize(("upgrade", "top", "path", "words"), [
    ({"strategy": "blue-green"}, {}, "nodePools[0].upgrade.strategy", "surge only"),
    ({"automatic": "never"}, {}, "nodePools[0].upgrade.automatic", "no per-pool opt-out"),
    (None, {"maintenance": {"window": {"days": ["Saturday", "Sunday"]}}}, "maintenance.window.days",
     "one week day or every day"),
])
def test_aks_refusals(upgrade, top, path, words):
    pool = a100(**({"upgrade": upgrade} if upgrade else {}))
    with pytest.raises(ConfigError) as err:
        aks([pool], **top)
    assert err.value.path == path and words in err.value.problem


def test_composed_aks_cluster_and_pool():
    def program():
        train = pool_args("azure", {"name": "train", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2,
                                    "role": "training", "upgrade": {"drainTimeoutMinutes": 120}})
        AksCluster("ml", {"location": "westeurope", "gpu_pools": [train],
                          "maintenance_window": {"days": ["Friday"], "start": "20:00", "hours": 8}})
        AksGpuNodePool("solo", {"pool": train["pool"], "resource_group_name": "rg", "cluster_name": "c",
                                "upgrade": {"max_surge": "50%", "max_unavailable": "0", "soak_minutes": 3}})

    recording = run_program(program)
    assert recording.one(MANAGED_CLUSTER).inputs["autoUpgradeProfile"] == {
        "upgradeChannel": "patch", "nodeOSUpgradeChannel": "NodeImage"}
    assert {s.inputs["configName"]: s.inputs["maintenanceWindow"] for s in recording.of_type(MAINTENANCE)} == {
        name: {"schedule": {"weekly": {"dayOfWeek": "Friday", "intervalWeeks": 1}}, "durationHours": 8,
               "startTime": "20:00", "utcOffset": "+00:00"}
        for name in ("aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule")}
    assert recording.one(AGENT_POOL, "ml-train-pool").inputs["upgradeSettings"] == {
        "maxSurge": "0", "maxUnavailable": "1", "drainTimeoutInMinutes": 120}
    assert recording.one(AGENT_POOL, "solo-pool").inputs["upgradeSettings"] == {
        "maxSurge": "50%", "maxUnavailable": "0", "nodeSoakDurationInMinutes": 3}


def test_composed_aks_refusals():
    spec = pool_args("azure", {"name": "train", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2})["pool"]
    with pytest.raises(ConfigError) as err:
        AksGpuNodePool("solo", {"pool": spec, "resource_group_name": "rg", "cluster_name": "c",
                                "upgrade": {"strategy": "blue-green"}})
    assert err.value.path == "upgrade.strategy"
    with pytest.raises(ConfigError) as err:
        AksCluster("ml", {"location": "westeurope", "maintenance_window": {"days": ["Monday", "Friday"]}})
    assert err.value.path == "maintenance_window.days"


def test_pure_modules_agree_with_the_model():
    assert aks_upgrade.upgrade_settings(parse_pool_upgrade({}, "u").resolved("training", "window")) == {
        "max_surge": "0", "max_unavailable": "1"}
    assert gke_upgrade.upgrade_settings(parse_pool_upgrade({}, "u").resolved("inference")) == {
        "strategy": "SURGE", "max_surge": 1, "max_unavailable": 0}
    assert gke_upgrade.maintenance_policy(parse_window(None, "w"), "window") == {
        "recurring_window": {"start_time": "2025-01-11T00:00:00Z", "end_time": "2025-01-11T12:00:00Z",
                             "recurrence": "FREQ=WEEKLY;BYDAY=SA"}}
