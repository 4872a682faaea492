"""Kueue's limit of 16 flavors per ClusterQueue resource group holds however many GPU pools a stack has."""

from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_platform.config import TeamConfig
from gpu_platform.pools import GpuPool
from gpu_platform.scheduling import kueue_objects, quota_split
from gpu_platform.schemas import validate_manifest


def pools(n):
    return [GpuPool(f"pool-{i:02d}", "aws", "p5.48xlarge", "h100", 8, 80, 0, 1 + i % 3) for i in range(n)]


def test_pools_for_team_picks_the_roomiest_when_there_are_too_many():
    assert quota_split.pools_for_team([8] * 10) == list(range(10))
    remaining = [1] * 20
    remaining[17] = remaining[3] = 9
    chosen = quota_split.pools_for_team(remaining)
    assert len(chosen) == 15 and chosen == sorted(chosen) and {3, 17} <= set(chosen)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=30), st.lists(st.integers(0, 64), min_size=16, max_size=70))
def test_each_team_uses_at_most_15_pools_and_its_quota_adds_up(quotas, capacities):
    for quota, row in zip(quotas, quota_split.split_gpu_quotas(quotas, capacities), strict=True):
        assert sum(row) == quota
        assert sum(1 for x in row if x) <= quota_split.MAX_GPU_FLAVORS_PER_QUEUE


def test_cluster_queue_of_a_64_pool_stack_is_valid_and_lists_16_flavors():
    plans = kueue_objects.flavor_plans(pools(64))
    teams = [TeamConfig(f"team-{i}", 2 + i, 16, 64, f"team-{i}") for i in range(4)]
    for quota in kueue_objects.team_quotas(teams, plans):
        body = kueue_objects.cluster_queue(quota, plans)
        flavors = body["spec"]["resourceGroups"][0]["flavors"]
        assert len(flavors) == 16 and flavors[0]["name"] == kueue_objects.CPU_FLAVOR
        gpus = sum(r["nominalQuota"] for f in flavors for r in f["resources"] if r["name"] == "nvidia.com/gpu")
        assert gpus == quota.team.gpu_quota
        validate_manifest(body, "1.34")
