"""``teams[]`` and ``scheduling``: the stack sections of scheduling and tenancy (parsed with `fields`).

`parse_team` reads one ``teams`` entry (its quotas checked against the resources the stack's node pools advertise),
`parse_scheduling` the ``scheduling`` section, and `check_scheduling` the limits the scheduling layer inherits from
Kueue's API once the whole configuration is parsed. The dataclasses (`TeamConfig`, `SchedulingConfig`) stay in
`config_model`; `config` composes these parsers and re-exports them.
"""

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, Optional

from .. import catalog
from ..component_args import camel_case
from ..config_model import PlatformConfig, SchedulingConfig, TeamConfig, accelerator_devices
from ..errors import ConfigError, check_keys, did_you_mean, join
from ..fields import as_mapping, read_bool, read_dns_label, read_enum, read_float, read_int, read_list, read_str
from ..fields import section as _section
from ..security.namespace_security import LEVELS as POD_SECURITY_LEVELS
from . import pool_quotas, priorities
from .kueue_objects import MAX_POOL_TAINTS, pool_capacity
from .queue_config import BORROW_WITHIN_COHORT, RECLAIM_WITHIN_COHORT, WITHIN_CLUSTER_QUEUE
from .teams import check_team, team_of

QUEUE_KEYS = ("poolQuotas", "poolBorrowingLimits", "poolLendingLimits", "flavorOrder", "preemption",
              "fairSharingWeight")
"""``teams[]`` keys that only the team's Kueue ClusterQueue takes (refused with ``scheduling.kueue: false``)."""


def parse_quotas(raw: Mapping, path: str, advertised: tuple[str, ...]) -> dict[str, int]:
    """``teams[].quotas``: ``{<resource>: <count>}``, each a resource a pool advertises, counts integers >= 0."""
    if raw.get("quotas") is None:
        return {}
    qpath = join(path, "quotas")
    quotas = {}
    for resource, _ in as_mapping(raw["quotas"], qpath).items():
        at = join(qpath, str(resource))
        if resource not in advertised:
            raise ConfigError(at, f"no node pool advertises '{resource}' (the pools advertise "
                                  f"{', '.join(advertised)}){did_you_mean(str(resource), advertised)}")
        if resource == catalog.NVIDIA_GPU_RESOURCE and raw.get("gpuQuota") is not None:
            raise ConfigError(at, f"duplicates gpuQuota, the team's {resource} quota; give one of them")
        quotas[str(resource)] = read_int(raw["quotas"], resource, qpath, minimum=0, required=True)
    return quotas


def parse_team(raw_value: Any, path: str,
               advertised: tuple[str, ...] = (catalog.NVIDIA_GPU_RESOURCE,), pools: Sequence = ()) -> TeamConfig:
    """One ``teams`` entry; ``advertised``: the accelerator resources the stack's node pools advertise; ``pools``: the
    stack's node pool entries, which ``poolQuotas`` and the other per-pool keys name."""
    raw = as_mapping(raw_value, path)
    check_keys(raw, {"name", "gpuQuota", "cpuQuota", "memoryQuotaGi", "group", "borrowingLimit", "lendingLimit",
                     "podSecurity", "quotas", "storageQuota", "poolQuotas", "poolBorrowingLimits", "poolLendingLimits",
                     "flavorOrder", "preemption", "fairSharingWeight"}, path)
    name = read_dns_label(raw, "name", path)
    quotas = parse_quotas(raw, path, advertised)
    queue_spec = _queue_spec(raw, path)
    # What the entry gives as totals, checked (poolQuotas are checked against them below).
    given: dict[str, Any] = {"quotas": dict(quotas)} if quotas else {}
    # `quotas: {nvidia.com/gpu: n}` is gpuQuota spelled the other way: one field holds it.
    gpu_quota = quotas.pop(catalog.NVIDIA_GPU_RESOURCE, None)
    if gpu_quota is None:
        # Without a total, the team's GPUs are what its poolQuotas give NVIDIA pools.
        pinned = pool_quotas.pinned_counts(list(queue_spec.get("pool_quotas", {}).items()), pools)
        gpu_quota = read_int(raw, "gpuQuota", path, pinned.get(catalog.NVIDIA_GPU_RESOURCE, 0), minimum=0)
    if gpu_quota and catalog.NVIDIA_GPU_RESOURCE not in advertised:
        raise ConfigError(join(path, "gpuQuota"), f"counts {catalog.NVIDIA_GPU_RESOURCE}, which no node pool "
                                                  f"advertises (the pools advertise {', '.join(advertised)}); "
                                                  "give the team quotas of those")
    lending = read_int(raw, "lendingLimit", path, None, minimum=0)
    if lending is not None and lending > gpu_quota:
        raise ConfigError(join(path, "lendingLimit"), f"cannot exceed gpuQuota ({gpu_quota}), got {lending}")
    if raw.get("gpuQuota") is not None:
        given["gpu_quota"] = gpu_quota
    check_team(_StackTeam(), {**given, **queue_spec, "name": name}, path, advertised, pools)
    queue = team_of({"name": name, **queue_spec}, pools).queue
    quotas = {**{r: n for r, n in pool_quotas.pinned_counts(queue.pool_quotas, pools).items()
                 if r != catalog.NVIDIA_GPU_RESOURCE}, **quotas}
    devices = accelerator_devices(gpu_quota, quotas)
    return dataclasses.replace(TeamConfig(
        name=name,
        gpu_quota=gpu_quota,
        cpu_quota=read_int(raw, "cpuQuota", path, max(4, 8 * devices), minimum=0),
        memory_quota_gib=read_int(raw, "memoryQuotaGi", path, max(16, 64 * devices), minimum=0),
        group=read_str(raw, "group", path, name),
        borrowing_limit=read_int(raw, "borrowingLimit", path, None, minimum=0),
        lending_limit=lending,
        pod_security=read_enum(raw, "podSecurity", path, POD_SECURITY_LEVELS, "baseline"),
        quotas=tuple(sorted(quotas.items())),
        storage_quota=_storage_quota(raw, path),
    ), queue=queue)


class _StackTeam:
    """What `teams.check_team` needs of a checker, for the stack file: errors name its camelCase keys."""

    def fail(self, path: str, problem: str) -> NoReturn:
        raise ConfigError(_camel(path), re.sub(r"\b[a-z]+(?:_[a-z]+)+\b", lambda m: camel_case(m.group()), problem))


def _camel(path: str) -> str:
    """An argument path as the stack file spells it (``teams[0].pool_quotas.h100`` -> ``teams[0].poolQuotas.h100``)."""
    return ".".join(camel_case(part) if "_" in part else part for part in path.split("."))


def _count_map(raw: Mapping, key: str, path: str) -> dict[str, int]:
    """A ``{<pool name or GPU model>: <count >= 0>}`` key of a team."""
    if raw.get(key) is None:
        return {}
    at = join(path, key)
    return {str(k): read_int(as_mapping(raw[key], at), k, at, minimum=0, required=True)
            for k in as_mapping(raw[key], at)}


def _parse_preemption(raw_value: Any, path: str) -> dict[str, Any]:
    """``teams[].preemption`` read into `teams.TeamPreemption` fields (only those given)."""
    sec = as_mapping(raw_value, path)
    check_keys(sec, {"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort", "borrowMaxPriorityThreshold"},
               path)
    preemption = {
        "within_cluster_queue": read_enum(sec, "withinClusterQueue", path, WITHIN_CLUSTER_QUEUE, None),
        "reclaim_within_cohort": read_enum(sec, "reclaimWithinCohort", path, RECLAIM_WITHIN_COHORT, None),
        "borrow_within_cohort": read_enum(sec, "borrowWithinCohort", path, BORROW_WITHIN_COHORT, None),
        "borrow_max_priority_threshold": read_int(sec, "borrowMaxPriorityThreshold", path, None),
    }
    return {k: v for k, v in preemption.items() if v is not None}


def _queue_spec(raw: Mapping, path: str) -> dict[str, Any]:
    """The team's Kueue keys (`QUEUE_KEYS`) read into `teams.TeamSpec` fields (only those given)."""
    spec: dict[str, Any] = {}
    for key, field in (("poolQuotas", "pool_quotas"), ("poolBorrowingLimits", "pool_borrowing_limits"),
                       ("poolLendingLimits", "pool_lending_limits")):
        if raw.get(key) is not None:
            spec[field] = _count_map(raw, key, path)
    if raw.get("flavorOrder") is not None:
        entries = read_list(raw, "flavorOrder", path)
        for i, entry in enumerate(entries):
            if not isinstance(entry, str):
                raise ConfigError(join(join(path, "flavorOrder"), i), f"must be a pool name, GPU model or "
                                                                      f"provisioning mode, got {entry!r}")
        spec["flavor_order"] = list(entries)
    if raw.get("preemption") is not None:
        spec["preemption"] = _parse_preemption(raw["preemption"], join(path, "preemption"))
    if raw.get("fairSharingWeight") is not None:
        spec["fair_sharing_weight"] = read_float(raw, "fairSharingWeight", path, 1.0, minimum=0.0)
    return spec


def _storage_quota(raw: Mapping, path: str) -> Optional[str]:
    """``teams[].storageQuota`` checked (`storage_config.parse_storage_quota`), as given."""
    from ..storage.storage_config import parse_storage_quota

    value = read_str(raw, "storageQuota", path, None)
    parse_storage_quota(value, join(path, "storageQuota"))
    return value


def parse_scheduling(raw: Mapping) -> SchedulingConfig:
    sec, path = _section(raw, "scheduling"), "scheduling"
    check_keys(sec, {"kueue", "perGpuPriorityClasses", "defaultPriorityClass", "overcommit"}, path)
    return SchedulingConfig(
        kueue=read_bool(sec, "kueue", path, True),
        per_gpu_priority_classes=read_bool(sec, "perGpuPriorityClasses", path, False),
        default_priority_class=read_enum(sec, "defaultPriorityClass", path, tuple(t.name for t in priorities.TIERS)),
        overcommit=read_bool(sec, "overcommit", path, False),
    )


def check_scheduling(config: PlatformConfig) -> None:
    """Limits the scheduling layer inherits from Kueue's API; teams' Kueue keys need Kueue; flavor order entries name
    pools; the teams' quotas fit the pools unless ``scheduling.overcommit``."""
    check_capacity(config)
    if not config.scheduling.kueue:
        for i, team in enumerate(config.teams):
            if team.queue != type(team.queue)():
                raise ConfigError(join(join("teams", i), _queue_key(team)),
                                  "is a Kueue setting and scheduling.kueue is false; remove it or turn Kueue on")
        return
    for i, pool in enumerate(config.gpu_pools()):
        if len(pool.taints) > MAX_POOL_TAINTS:
            raise ConfigError(join(join("nodePools", i), "taints"),
                              f"the pool's nodes would carry {len(pool.taints)} taints (the GPU taint included); "
                              f"a Kueue flavor tolerates at most {MAX_POOL_TAINTS}")


def _queue_key(team: TeamConfig) -> str:
    """The first Kueue key a team gives (for `check_scheduling`'s refusal without Kueue)."""
    queue = team.queue
    given = {"poolQuotas": queue.pool_quotas, "poolBorrowingLimits": queue.pool_borrowing_limits,
             "poolLendingLimits": queue.pool_lending_limits, "flavorOrder": queue.flavor_order,
             "fairSharingWeight": queue.fair_sharing_weight is not None}
    return next((key for key, value in given.items() if value), "preemption")


def check_capacity(config: PlatformConfig) -> None:
    """The teams' quotas fit what the pools hold at their maximum size, per resource and per pool, unless the stack
    says it overcommits (``scheduling.overcommit: true``) or is a MultiKueue manager (its jobs run on the workers)."""
    if config.scheduling.overcommit or not config.teams:
        return
    if config.multikueue is not None and config.multikueue.manager:
        return  # a MultiKueue manager's quotas bound what it dispatches to its workers' clusters, not its own pools
    pools = config.gpu_pools()
    problem = pool_quotas.capacity_problem(config.teams, pools, pool_capacity)
    if problem is not None:
        t, field, message = problem
        raise ConfigError(join(join("teams", t), _camel(field)), message.replace("declare overcommit",
                                                                        "set scheduling.overcommit: true"))
