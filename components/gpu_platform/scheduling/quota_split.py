"""How team quotas are divided among Kueue flavors: integer apportionment that always adds up.

The rule (documented for platform users in `scheduling/policy.py`):

* **Per pool.** What a team gives a pool by name (``poolQuotas``) is that pool's quota; what it gives a GPU model is
  split over the model's pools like a total (below); its total beyond them goes over the pools it did not name
  (`Demand`, built by `scheduling.pool_quotas`). Each takes from the capacity the earlier ones left.
* **GPUs.** A team's ``gpuQuota`` is distributed over the GPU pools in proportion to each pool's capacity that
  earlier teams have not yet taken (teams in configuration order). So every team gets a share of every pool,
  a team's flavor quotas add up to exactly its ``gpuQuota``, and, as long as the teams' quotas fit in the
  pools, no pool is promised more GPUs than it has. Quota beyond the pools' capacity (overcommitment) is
  spread in proportion to pool size. Borrowing inside the cohort lets a team use idle quota of other teams
  on a pool where its own share is small.
* **CPU and memory.** A quarter of a team's CPU and memory goes to the CPU-only flavor (work without GPUs);
  the rest follows the team's GPUs, in proportion to its GPU quota on each pool. A team without GPUs puts it
  all on the CPU-only flavor. Again the parts add up to the team's quota.
* **Lending limit.** The team-wide ``lendingLimit`` is split in proportion to the team's GPU quota per pool,
  never above that quota (Kueue requires ``lendingLimit <= nominalQuota``).

Rounding is the largest-remainder method with ties broken by position, so results are deterministic.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

CPU_ONLY_SHARE = Fraction(1, 4)
"""Part of a GPU team's CPU and memory quota kept for CPU-only work."""


def apportion(total: int, weights: Sequence[int]) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` that sum to ``total`` (largest remainder).

    Each part is at most the ceiling of its exact share, so a part never exceeds its weight when
    ``total <= sum(weights)``. All-zero weights split ``total`` evenly.
    """
    if total < 0 or any(w < 0 for w in weights):
        raise ValueError("apportion needs a non-negative total and weights")
    if not weights:
        if total:
            raise ValueError(f"cannot apportion {total} over nothing")
        return []
    # Exact shares total * w / weight_sum in integers: numerator // denominator is the floor and numerator %
    # denominator orders the remainders (one denominator for all). Fractions gave the same result, ten times
    # slower (5 us against 52 for 15 pools): a plan with hundreds of teams over tens of pools apportions
    # thousands of times.
    weight_sum = sum(weights)
    numerators, denominator = ([total * w for w in weights], weight_sum) if weight_sum else \
        ([total] * len(weights), len(weights))
    parts = [n // denominator for n in numerators]
    leftover = total - sum(parts)
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(numerators[i] % denominator), i))
    for i in by_remainder[:leftover]:
        parts[i] += 1
    return parts


MAX_GPU_FLAVORS_PER_QUEUE = 15
"""Kueue allows 16 flavors in a resource group and each resource in one group only (ClusterQueue CRD
``maxItems: 16``); one of them is the CPU-only flavor, so a team's GPUs can sit on at most 15 pools."""


def pools_for_team(remaining: Sequence[int], limit: int = MAX_GPU_FLAVORS_PER_QUEUE) -> list[int]:
    """Indexes of the pools a team's quota is spread over: all of them up to ``limit``, else the ``limit``
    pools with the most capacity left (ties by position), in pool order."""
    if len(remaining) <= limit:
        return list(range(len(remaining)))
    return sorted(sorted(range(len(remaining)), key=lambda i: (-remaining[i], i))[:limit])


@dataclass(frozen=True)
class Demand:
    """What one team asks of one resource's pools (indexes into the capacities): devices pinned to a pool, devices
    for a group of pools (a GPU model's) split among them, and the ``rest`` split over ``rest_pools`` (None: all)."""

    pinned: tuple[tuple[int, int], ...] = ()
    groups: tuple[tuple[tuple[int, ...], int], ...] = ()
    rest: int = 0
    rest_pools: Optional[tuple[int, ...]] = None


def allot(quota: int, indexes: Sequence[int], remaining: list[int], capacities: Sequence[int]) -> dict[int, int]:
    """``quota`` split over the pools ``indexes`` in proportion to their ``remaining`` capacity (what lies beyond it in
    proportion to their size), at most `MAX_GPU_FLAVORS_PER_QUEUE` of them; ``remaining`` is reduced by what fits."""
    chosen = [indexes[k] for k in pools_for_team([remaining[i] for i in indexes])]
    chosen_remaining = [remaining[i] for i in chosen]
    within = min(quota, sum(chosen_remaining))
    part = apportion(within, chosen_remaining)
    excess = apportion(quota - within, [capacities[i] for i in chosen])
    for i, p in zip(chosen, part, strict=True):
        remaining[i] -= p
    return {i: p + e for i, p, e in zip(chosen, part, excess, strict=True)}


def split_demands(demands: Sequence[Demand], capacities: Sequence[int]) -> list[list[int]]:
    """Per team (rows) and pool (columns): nominal quota. Teams in order; within a team its pinned pools first, then
    its groups, then the rest, each taking from the capacity the earlier ones left (`allot`)."""
    remaining = list(capacities)
    rows = []
    everything = tuple(range(len(capacities)))
    for demand in demands:
        row = [0] * len(capacities)
        for i, count in demand.pinned:
            row[i] += count
            remaining[i] -= min(count, remaining[i])
        for indexes, count in demand.groups:
            for i, part in allot(count, indexes, remaining, capacities).items():
                row[i] += part
        pools = everything if demand.rest_pools is None else demand.rest_pools
        if demand.rest or pools:
            for i, part in allot(demand.rest, pools, remaining, capacities).items():
                row[i] += part
        rows.append(row)
    return rows


def split_gpu_quotas(quotas: Sequence[int], capacities: Sequence[int]) -> list[list[int]]:
    """Per team (rows) and pool (columns): GPUs of nominal quota.

    Row ``i`` sums to ``quotas[i]`` and is non-zero on at most `MAX_GPU_FLAVORS_PER_QUEUE` pools; when
    ``sum(quotas) <= sum(capacities)`` and no more pools exist than that, column ``j`` sums to at most
    ``capacities[j]``.
    """
    return split_demands([Demand(rest=quota) for quota in quotas], capacities)


def split_with_gpus(total: int, gpu_quotas: Sequence[int]) -> tuple[int, list[int]]:
    """(CPU-only flavor part, part per GPU flavor) of a CPU or memory quota, per the module rule."""
    if sum(gpu_quotas) == 0:
        return total, [0] * len(gpu_quotas)
    cpu_only = int(total * CPU_ONLY_SHARE)
    return cpu_only, apportion(total - cpu_only, gpu_quotas)


def split_lending_limit(limit: int, gpu_quotas: Sequence[int]) -> list[int]:
    """A team-wide GPU lending limit per GPU flavor, each part at most that flavor's quota."""
    if limit > sum(gpu_quotas):
        raise ValueError(f"lending limit {limit} exceeds the quota {sum(gpu_quotas)}")
    return apportion(limit, gpu_quotas)
