"""Teams get the GPUs they were promised (issue 38 items 1 and 2): quotas per pool or GPU model, borrowing and
lending limits per flavor, flavor order, fallback pools, preemption and fair-sharing weights, from the stack file
and from a program that composes the components by hand, which plan the same Kueue objects."""

import copy

import pytest
from conftest import planned_stack

from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.plan import render_manifests
from gpu_platform.platform import GpuPlatform
from gpu_platform.pools import GpuPool
from gpu_platform.scheduling import flavor_order, kueue_objects, quota_split
from gpu_platform.scheduling.policy import SchedulingPolicy
from gpu_platform.scheduling.teams import Team, team_of
from gpu_platform.scheduling.tenancy import TeamNamespace
from gpu_platform.schemas import validate_manifest
from gpu_platform.testing import run_program

KUEUE_KINDS = ("ClusterQueue", "ResourceFlavor", "LocalQueue", "Cohort")

# Two H100 pools of 16 GPUs each and an L4 pool of 8, on an existing cluster (nothing slow to plan).
POOLS = [
    {"name": "h100-a", "gpuModel": "h100", "gpusPerNode": 8, "minNodes": 0, "maxNodes": 2},
    {"name": "h100-b", "gpuModel": "h100", "gpusPerNode": 8, "minNodes": 0, "maxNodes": 2},
    {"name": "l4-infer", "gpuModel": "l4", "gpusPerNode": 4, "minNodes": 1, "maxNodes": 2},
]
RESEARCH = {"name": "research", "poolQuotas": {"h100": 20}, "poolBorrowingLimits": {"h100-b": 4},
            "poolLendingLimits": {"h100": 6}, "flavorOrder": ["h100-b"],
            "preemption": {"withinClusterQueue": "LowerOrNewerEqualPriority", "reclaimWithinCohort": "LowerPriority",
                           "borrowWithinCohort": "LowerPriority", "borrowMaxPriorityThreshold": 1000},
            "fairSharingWeight": 2.5}
PRODUCT = {"name": "product", "gpuQuota": 8, "poolQuotas": {"l4": 6}}


def stack(**extra) -> dict:
    raw = {"cloud": "existing", "networkPolicyEnforced": True, "inference": {"enabled": False},
           "training": {"enabled": False}, "optimizer": {"enabled": False}, "monitoring": {"enabled": False},
           "autoscaling": {"vpa": False}, "nodePools": copy.deepcopy(POOLS),
           "teams": copy.deepcopy([RESEARCH, PRODUCT])}
    raw.update(extra)
    return raw


def kueue_objects_of(recording) -> dict[tuple[str, str], dict]:
    """The Kueue objects and team ResourceQuotas a program plans, by (kind, name or namespace)."""
    found = {}
    for obj in render_manifests(recording):
        if obj["kind"] in KUEUE_KINDS:
            found[(obj["kind"], obj["metadata"]["name"])] = obj
        elif obj["kind"] == "ResourceQuota":
            found[("ResourceQuota", obj["metadata"]["namespace"])] = obj
    return found


@pytest.fixture(scope="module")
def stack_objects():
    return kueue_objects_of(run_program(lambda: GpuPlatform("s", parse_config(stack(), "s"))))


def flavors(queue: dict) -> list[tuple[str, dict]]:
    """(flavor, its nvidia.com/gpu entry) of a ClusterQueue, in the queue's order."""
    return [(f["name"], next(r for r in f["resources"] if r["name"] == "nvidia.com/gpu"))
            for f in queue["spec"]["resourceGroups"][0]["flavors"]]


# ---------------------------------------------------------------------------------------------------------
# The stack file


def test_flavor_quotas_are_what_each_team_declared(stack_objects):
    research = stack_objects[("ClusterQueue", "research")]
    # poolQuotas {h100: 20}: split over the two H100 pools; nothing on L4, which research never asked for. Its own
    # order (h100-b first), borrowing limit on h100-b only, the lending limit of 6 split 3/3 over its H100 quota.
    assert flavors(research) == [
        ("cpu.default", {"name": "nvidia.com/gpu", "nominalQuota": 0}),
        ("h100-b", {"name": "nvidia.com/gpu", "nominalQuota": 10, "borrowingLimit": 4, "lendingLimit": 3}),
        ("h100-a", {"name": "nvidia.com/gpu", "nominalQuota": 10, "lendingLimit": 3}),
        ("l4-infer", {"name": "nvidia.com/gpu", "nominalQuota": 0}),
    ]
    # gpuQuota 8 with poolQuotas {l4: 6}: 6 on L4, the 2 left unsaid split over the pools it did not name.
    product = stack_objects[("ClusterQueue", "product")]
    assert flavors(product) == [
        ("cpu.default", {"name": "nvidia.com/gpu", "nominalQuota": 0}),
        ("h100-a", {"name": "nvidia.com/gpu", "nominalQuota": 1}),
        ("h100-b", {"name": "nvidia.com/gpu", "nominalQuota": 1}),
        ("l4-infer", {"name": "nvidia.com/gpu", "nominalQuota": 6}),
    ]


def test_preemption_and_fair_sharing_are_the_teams(stack_objects):
    research = stack_objects[("ClusterQueue", "research")]["spec"]
    assert research["preemption"] == {
        "withinClusterQueue": "LowerOrNewerEqualPriority", "reclaimWithinCohort": "LowerPriority",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 1000}}
    assert research["fairSharing"] == {"weight": "2.5"}
    product = stack_objects[("ClusterQueue", "product")]["spec"]
    # Unsaid: what every team got before.
    assert product["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert "fairSharing" not in product


def test_namespace_totals_follow_pool_quotas(stack_objects):
    assert stack_objects[("ResourceQuota", "research")]["spec"]["hard"]["requests.nvidia.com/gpu"] == "20"
    assert stack_objects[("ResourceQuota", "product")]["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"


def test_the_kueue_objects_validate(stack_objects):
    for obj in stack_objects.values():
        validate_manifest(obj, "1.34")


def test_a_gpu_quota_only_team_is_split_as_before():
    config = parse_config(stack(teams=[{"name": "research", "gpuQuota": 20}]), "s")
    plans = kueue_objects.flavor_plans(config.gpu_pools())
    quota = kueue_objects.team_quotas(list(config.teams), plans)[0]
    assert quota.gpus == tuple(quota_split.split_gpu_quotas([20], [16, 16, 8])[0]) == (8, 8, 4)


def test_the_reference_rack_stack_gives_each_team_the_pool_it_asked_for():
    result = planned_stack("aws-gb200")
    queues = {m["metadata"]["name"]: m for m in result.manifests if m["kind"] == "ClusterQueue"}
    # research: 64 rack GPUs (and their IMEX channels), no H100; product: 8 H100s first, no rack GPU.
    assert [(name, gpu["nominalQuota"]) for name, gpu in flavors(queues["research"])] == [
        ("cpu.default", 0), ("gb200-train", 64), ("h100-infer", 0)]
    assert queues["research"]["spec"]["fairSharing"] == {"weight": 2}
    assert [(name, gpu["nominalQuota"]) for name, gpu in flavors(queues["product"])] == [
        ("cpu.default", 0), ("h100-infer", 8), ("gb200-train", 0)]


# ---------------------------------------------------------------------------------------------------------
# The same program composed by hand


def hand_composed():
    """What a user's own Pulumi program writes: pools, one Team each, the policy, then the namespaces."""
    pools = [{"name": p["name"], "cloud": "existing", "gpu_model": p["gpuModel"], "gpus_per_node": p["gpusPerNode"],
              "min_nodes": p["minNodes"], "max_nodes": p["maxNodes"]} for p in POOLS]
    research = Team(name="research", pool_quotas={"h100": 20}, pool_borrowing_limits={"h100-b": 4},
                    pool_lending_limits={"h100": 6}, flavor_order=["h100-b"],
                    preemption={"within_cluster_queue": "LowerOrNewerEqualPriority",
                                "reclaim_within_cohort": "LowerPriority", "borrow_within_cohort": "LowerPriority",
                                "borrow_max_priority_threshold": 1000},
                    fair_sharing_weight=2.5)
    product = Team(name="product", gpu_quota=8, pool_quotas={"l4": 6})
    SchedulingPolicy("sched", {"pools": pools, "teams": [research, product]})
    for team in (research, product):
        TeamNamespace(f"team-{team.name}", {"team": team, "cluster_queue": team.name, "pools": pools})


def test_a_hand_composed_program_plans_the_same_queues(stack_objects):
    by_hand = kueue_objects_of(run_program(hand_composed))
    assert sorted(by_hand) == sorted(stack_objects)
    for key, body in stack_objects.items():
        assert by_hand[key]["spec"] == body["spec"], key
        assert by_hand[key]["metadata"] == body["metadata"], key


# ---------------------------------------------------------------------------------------------------------
# Each key changes the plan


def queue_of(raw: dict, team: str = "research") -> dict:
    config = parse_config(raw, "s")
    plans = kueue_objects.flavor_plans(config.gpu_pools())
    quotas = {q.team.name: q for q in kueue_objects.team_quotas(list(config.teams), plans)}
    return kueue_objects.cluster_queue(quotas[team], plans)


@pytest.mark.parametrize(("key", "value"), [
    ("poolQuotas", {"h100": 24}), ("poolBorrowingLimits", {"h100": 2}), ("poolLendingLimits", {"h100": 2}),
    ("flavorOrder", ["l4", "h100-a"]), ("fairSharingWeight", 0),
    ("preemption", {"withinClusterQueue": "Never"}),
])
def test_changing_a_team_key_changes_its_queue(key, value):
    changed = stack(teams=[{**RESEARCH, key: value}, PRODUCT])
    assert queue_of(changed) != queue_of(stack())


def test_flavor_order_by_provisioning_mode():
    pools = [GpuPool("l4-spot", "aws", "g6.2xlarge", "l4", 1, 24, 0, 4, provisioning="spot"),
             GpuPool("l4-od", "aws", "g6.2xlarge", "l4", 1, 24, 0, 4),
             GpuPool("h100-res", "aws", "p5.48xlarge", "h100", 8, 80, 2, 2, provisioning="reservation",
                     reservation="cr-1")]
    ordered = flavor_order.platform_order(pools)
    assert [p.name for p in ordered] == ["h100-res", "l4-od", "l4-spot"]
    assert [ordered[i].name for i in flavor_order.team_order(["spot", "on-demand"], ordered)] == [
        "l4-spot", "l4-od", "h100-res"]
    assert [ordered[i].name for i in flavor_order.team_order(["reservation", "on-demand", "spot"], ordered)] == [
        "h100-res", "l4-od", "l4-spot"]


def test_a_fallback_pool_comes_after_its_pool_whatever_its_provisioning():
    spot = GpuPool("l4-spot", "aws", "g6.2xlarge", "l4", 1, 24, 0, 4, provisioning="spot", fallback_pool="l4-od")
    on_demand = GpuPool("l4-od", "aws", "g6.2xlarge", "l4", 1, 24, 0, 4)
    plain = GpuPool("l4-spot", "aws", "g6.2xlarge", "l4", 1, 24, 0, 4, provisioning="spot")
    # Spot first, on-demand when spot's quota is used: the fallback moves after its pool.
    assert [p.name for p in flavor_order.platform_order([spot, on_demand])] == ["l4-spot", "l4-od"]
    assert [p.name for p in flavor_order.platform_order([plain, on_demand])] == ["l4-od", "l4-spot"]


def test_fallback_pool_reaches_a_composed_programs_queues():
    def order(fallback: str) -> list[str]:
        pools = [GpuPool("l4-spot", "aws", "g6.2xlarge", "l4", 1, 24, 0, 4, provisioning="spot",
                         fallback_pool=fallback).spec(),
                 GpuPool("l4-od", "aws", "g6.2xlarge", "l4", 1, 24, 0, 4).spec()]
        rec = run_program(lambda: SchedulingPolicy("sched", {"pools": pools, "teams": [{"name": "a", "gpu_quota": 4}]}))
        queue = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue").inputs
        return [f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"]]

    assert order("") == ["cpu.default", "l4-od", "l4-spot"]
    assert order("l4-od") == ["cpu.default", "l4-spot", "l4-od"]


# ---------------------------------------------------------------------------------------------------------
# Refused, one line naming the key


def refused(raw: dict) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    return str(err.value)


@pytest.mark.parametrize(("team", "line"), [
    ({"name": "r", "poolQuotas": {"a100": 4}},
     "s: teams[0].poolQuotas.a100: names no node pool or GPU model of a pool (pools: h100-a, h100-b, l4-infer, h100, "
     "l4)"),
    ({"name": "r", "poolQuotas": {"h100": 4, "h100-a": 2}},
     "s: teams[0].poolQuotas.h100: covers pool 'h100-a', which 'h100-a' names too; give each pool's devices once"),
    ({"name": "r", "gpuQuota": 4, "poolQuotas": {"h100": 8}},
     "s: teams[0].gpuQuota: is 4 but poolQuotas give nvidia.com/gpu pools 8; raise it or leave it out"),
    ({"name": "r", "gpuQuota": "4", "poolQuotas": {"h100": 8}},  # a number as a string, as the engine may pass it
     "s: teams[0].gpuQuota: is 4 but poolQuotas give nvidia.com/gpu pools 8; raise it or leave it out"),
    ({"name": "r", "quotas": {"nvidia.com/gpu": 4}, "poolQuotas": {"h100": 8}},
     "s: teams[0].quotas.nvidia.com/gpu: is 4 but poolQuotas give nvidia.com/gpu pools 8; raise it or leave it out"),
    ({"name": "r", "gpuQuota": 30, "poolQuotas": {"h100": 8, "l4": 4}},
     "s: teams[0].gpuQuota: is 30 but poolQuotas give nvidia.com/gpu pools 12 and name every pool offering it; "
     "lower it or leave it out"),
    ({"name": "r", "poolQuotas": {"h100": 8}, "poolLendingLimits": {"h100": 9}},
     "s: teams[0].poolLendingLimits.h100: cannot exceed poolQuotas.h100 (8), got 9"),
    ({"name": "r", "poolQuotas": {"h100": 8}, "poolLendingLimits": {"l4": 1}},
     "s: teams[0].poolLendingLimits.l4: lends from a poolQuotas entry: give the key's quota in poolQuotas"),
    ({"name": "r", "gpuQuota": 8, "flavorOrder": ["spot"]},
     "s: teams[0].flavorOrder[0]: no node pool is provisioned spot (entries: h100, h100-a, h100-b, l4, l4-infer, "
     "on-demand)"),
    ({"name": "r", "gpuQuota": 8, "flavorOrder": ["h100", "h100"]}, "s: teams[0].flavorOrder[1]: is given twice"),
    ({"name": "r", "gpuQuota": 8,
      "preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": "LowerPriority"}},
     "s: teams[0].preemption.borrowWithinCohort: needs reclaimWithinCohort other than Never (Kueue refuses "
     "borrowWithinCohort LowerPriority with reclaimWithinCohort Never)"),
    ({"name": "r", "gpuQuota": 8, "preemption": {"borrowMaxPriorityThreshold": 10}},
     "s: teams[0].preemption.borrowMaxPriorityThreshold: only bounds borrowWithinCohort: LowerPriority"),
    ({"name": "r", "gpuQuota": 8, "preemption": {"withinClusterQueue": "Always"}},
     "s: teams[0].preemption.withinClusterQueue: 'Always' is not one of Never, LowerPriority, "
     "LowerOrNewerEqualPriority"),
    ({"name": "r", "gpuQuota": 8, "fairSharingWeight": -1}, "s: teams[0].fairSharingWeight: must be >= 0, got -1"),
])
def test_bad_team_keys_are_refused(team, line):
    assert refused(stack(teams=[team])) == line


def test_quota_beyond_capacity_is_refused_unless_the_stack_overcommits():
    raw = stack(teams=[{"name": "research", "gpuQuota": 1000}])
    assert refused(raw) == ("s: teams[0].gpuQuota: 1000 nvidia.com/gpu is more than the 40 the node pools hold at "
                            "their maximum size; lower it, or set scheduling.overcommit: true")
    config = parse_config(stack(teams=[{"name": "research", "gpuQuota": 1000}], scheduling={"overcommit": True}), "s")
    assert config.teams[0].gpu_quota == 1000


def test_pool_quotas_beyond_a_pools_capacity_are_refused():
    raw = stack(teams=[{"name": "a", "poolQuotas": {"h100-a": 12}}, {"name": "b", "poolQuotas": {"h100-a": 8}}])
    assert refused(raw) == ("s: teams[1].poolQuotas.h100-a: puts the teams' nvidia.com/gpu quota on pool 'h100-a' at "
                            "20, more than its 16 at maximum size; lower it, or set scheduling.overcommit: true")


def test_kueue_keys_without_kueue_are_refused():
    raw = stack(teams=[{"name": "r", "poolQuotas": {"h100": 8}}], scheduling={"kueue": False})
    assert refused(raw) == ("s: teams[0].poolQuotas: is a Kueue setting and scheduling.kueue is false; remove it or "
                            "turn Kueue on")


def test_team_of_totals_come_from_pool_quotas():
    pools = parse_config(stack(), "s").gpu_pools()
    team = team_of({"name": "r", "pool_quotas": {"h100-a": 4, "l4": 2}}, pools)
    assert (team.gpu_quota, team.cpu_quota, team.memory_quota_gib) == (6, 48, 384)
