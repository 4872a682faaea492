"""Quotas per pool or GPU model (``teams[].poolQuotas``): which pools a key names, what a team asks of each
resource's pools (`quota_split.Demand`), its borrowing and lending limits per flavor, and whether the teams' quotas
fit the pools (pure rules).

* A key is a pool name or a GPU model (``h100``: every pool of that model; a pool name wins where both match). Its
  count is devices of those pools' primary resource (``nvidia.com/gpu``, ``aws.amazon.com/neuron``...).
* A team's total of a resource (``gpuQuota``, ``quotas.<resource>``) defaults to what its keys add up to. A total
  above that is the rest: split, as a total alone always was, over the pools offering the resource that no key of
  the team names. So a team that names every pool it wants gets nothing anywhere else.
* A model's devices are split over its pools in proportion to the capacity earlier teams left them
  (`quota_split.allot`), like a total.
"""

from collections.abc import Callable, Sequence
from typing import Optional

from .. import catalog
from ..config_model import TeamConfig
from ..pools import GpuPool
from . import quota_split


def key_pools(key: str, pools: Sequence) -> list[int]:
    """Indexes of the pools ``key`` names: the pool of that name, else every pool of that GPU model (empty: none).
    ``pools``: `GpuPool`s or the stack's node pool entries (anything with ``name`` and ``gpu_model``)."""
    named = [i for i, pool in enumerate(pools) if pool.name == key]
    return named or [i for i, pool in enumerate(pools) if pool.gpu_model == key]


def key_problem(key: str, pools: Sequence, keys: Sequence[str]) -> Optional[str]:
    """Why ``key`` of a team's ``poolQuotas`` (whose keys are ``keys``) names no pool or one another key names too."""
    indexes = key_pools(key, pools)
    if not indexes:
        names = [p.name for p in pools] + sorted({p.gpu_model for p in pools})
        return f"names no node pool or GPU model of a pool (pools: {', '.join(names) or 'none'})"
    for other in keys:
        if other != key and set(key_pools(other, pools)) & set(indexes):
            shared = pools[sorted(set(key_pools(other, pools)) & set(indexes))[0]].name
            return f"covers pool '{shared}', which '{other}' names too; give each pool's devices once"
    return None


def key_resource(key: str, pools: Sequence) -> Optional[str]:
    """The primary accelerator resource of the pools ``key`` names (``pools``: anything with ``name`` and
    ``gpu_model``), or of the catalog's GPU model ``key`` where no pool is given; None for neither."""
    indexes = key_pools(key, pools)
    model = pools[indexes[0]].gpu_model if indexes else key
    return catalog.vendor_of(model).resources[0] if model in catalog.GPU_MODELS else None


def pinned_counts(pool_quotas: Sequence[tuple[str, int]], pools: Sequence) -> dict[str, int]:
    """Per primary resource, the devices ``poolQuotas`` entries give it (keys naming nothing count nothing)."""
    totals: dict[str, int] = {}
    for key, count in pool_quotas:
        resource = key_resource(key, pools)
        if resource is not None:
            totals[resource] = totals.get(resource, 0) + count
    return totals


def pinned_totals(team: TeamConfig, pools: Sequence[GpuPool]) -> dict[str, int]:
    """Per primary resource, the devices the team's ``poolQuotas`` give it."""
    return pinned_counts(team.queue.pool_quotas, pools)


def demand(team: TeamConfig, resource: str, pools: Sequence[GpuPool]) -> quota_split.Demand:
    """What ``team`` asks of ``resource`` on ``pools`` (those offering it): its keys on pools whose primary resource
    it is, and the rest of its total over the pools none of its keys names."""
    pinned, groups, named = [], [], set()
    for key, count in team.queue.pool_quotas:
        indexes = [i for i in key_pools(key, pools) if pools[i].resource == resource]
        named.update(indexes)
        if len(indexes) == 1 and pools[indexes[0]].name == key:
            pinned.append((indexes[0], count))
        elif indexes:
            groups.append((tuple(indexes), count))
    if not team.queue.pool_quotas:
        return quota_split.Demand(rest=team.quota_of(resource))
    given = sum(count for _, count in pinned) + sum(count for _, count in groups)
    rest_pools = tuple(i for i in range(len(pools)) if i not in named)
    return quota_split.Demand(tuple(pinned), tuple(groups), max(0, team.quota_of(resource) - given), rest_pools)


def borrowing_limits(team: TeamConfig, pools: Sequence[GpuPool]) -> tuple[Optional[int], ...]:
    """Per pool, the ``borrowingLimit`` of its primary resource in the team's queue: the pool's own (by name, else by
    model) from ``poolBorrowingLimits``, else the team-wide ``borrowingLimit`` (None: no limit)."""
    limits = dict(team.queue.pool_borrowing_limits)
    by_pool: dict[int, int] = {}
    for key in sorted(limits, key=lambda k: any(p.name == k for p in pools)):  # pool names last: they win
        for i in key_pools(key, pools):
            by_pool[i] = limits[key]
    return tuple(by_pool.get(i, team.borrowing_limit) for i in range(len(pools)))


def lending_limits(team: TeamConfig, pools: Sequence[GpuPool], nominal: Sequence[int]) -> Optional[tuple]:
    """Per pool, the ``lendingLimit`` of its primary resource from ``poolLendingLimits`` (a model's split over its
    flavors in proportion to ``nominal``, the team's quota of the pool's primary resource on each), None where
    none is given; None for a team without per-flavor lending limits."""
    if not team.queue.pool_lending_limits:
        return None
    limits: list[Optional[int]] = [None] * len(pools)
    for key, limit in team.queue.pool_lending_limits:
        indexes = key_pools(key, pools)
        for i, part in zip(indexes, quota_split.split_lending_limit(limit, [nominal[i] for i in indexes]),
                           strict=True):
            limits[i] = part
    return tuple(limits)


def capacity_problem(teams: Sequence[TeamConfig], pools: Sequence[GpuPool],
                     capacity: Callable[[GpuPool, str], int]) -> Optional[tuple[int, str, str]]:
    """``(team index, field, problem)`` for the first team whose quota takes the teams past what the pools hold;
    ``capacity(pool, resource)`` is a pool's capacity of a resource at its maximum size. The field is ``gpu_quota``,
    ``quotas.<resource>`` or ``pool_quotas.<key>``. Checked per resource over its pools, then per pool."""
    for resource in dict.fromkeys(r for pool in pools for r in pool.resources):
        offering = [pool for pool in pools if resource in pool.resources]
        held = sum(capacity(pool, resource) for pool in offering)
        asked = 0
        for t, team in enumerate(teams):
            asked += team.quota_of(resource)
            if asked > held:
                earlier = f" with the {asked - team.quota_of(resource)} of the teams before it" if t else ""
                return (t, total_field(team, resource, pools), f"{team.quota_of(resource)} {resource}{earlier} is "
                        f"more than the {held} the node pools hold at their maximum size; lower it, or declare "
                        "overcommit")
        rows = quota_split.split_demands([demand(team, resource, offering) for team in teams],
                                         [capacity(pool, resource) for pool in offering])
        for j, pool in enumerate(offering):
            total = 0
            for t, team in enumerate(teams):
                total += rows[t][j]
                if total > capacity(pool, resource):
                    key = next((k for k, _ in team.queue.pool_quotas if j in key_pools(k, offering)), None)
                    field = f"pool_quotas.{key}" if key is not None else total_field(team, resource, pools)
                    return (t, field, f"puts the teams' {resource} quota on pool '{pool.name}' at {total}, more than "
                                      f"its {capacity(pool, resource)} at maximum size; lower it, or declare "
                                      "overcommit")
    return None


def total_field(team: TeamConfig, resource: str, pools: Sequence[GpuPool]) -> str:
    """The argument a team's total of ``resource`` comes from: ``pool_quotas`` where its keys give all of it, else
    ``gpu_quota`` (``nvidia.com/gpu``) or ``quotas.<resource>``."""
    if team.queue.pool_quotas and pinned_totals(team, pools).get(resource) == team.quota_of(resource):
        return "pool_quotas"
    return "gpu_quota" if resource == catalog.NVIDIA_GPU_RESOURCE else f"quotas.{resource}"
