"""`TeamSpec`: a team as plain values, the form the scheduling and tenancy components take in their args; `Team`: the
same built once, frozen, for every component that takes a team."""

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Optional, TypedDict

from typing_extensions import Required, Unpack

from .. import catalog
from ..component_args import DNS_LABEL, STORAGE_QUANTITY, Args, Rule, at_least, choice
from ..config_model import TeamConfig, accelerator_devices
from . import flavor_order, pool_quotas
from .queue_config import (
    BORROW_WITHIN_COHORT,
    DEFAULT_RECLAIM_WITHIN_COHORT,
    DEFAULT_WITHIN_CLUSTER_QUEUE,
    RECLAIM_WITHIN_COHORT,
    WITHIN_CLUSTER_QUEUE,
    QueuePreemption,
    TeamQueue,
    preemption_problem,
)


class TeamPreemption(TypedDict, total=False):
    """What the team's pending jobs may evict (the ClusterQueue's ``spec.preemption``)."""

    within_cluster_queue: str
    """``Never``, ``LowerPriority`` (default) or ``LowerOrNewerEqualPriority``: which of the team's own running jobs a
    pending job of the team evicts when the team's quota is used."""
    reclaim_within_cohort: str
    """``Never``, ``LowerPriority`` or ``Any`` (default): which jobs of other teams borrowing the team's idle quota
    are evicted when the team needs it back."""
    borrow_within_cohort: str
    """``Never`` or ``LowerPriority``: whether a job that must borrow may evict lower-priority jobs other teams run
    on borrowed quota. Default: not set (Kueue's ``Never``)."""
    borrow_max_priority_threshold: int
    """With ``borrow_within_cohort: LowerPriority``: only jobs at or below this priority are evicted that way."""


class TeamSpec(TypedDict, total=False):
    """One team: a namespace with a GPU quota and a Kueue ClusterQueue."""

    name: Required[str]
    """DNS label; the namespace name and the ClusterQueue name."""
    gpu_quota: int
    """``nvidia.com/gpu`` the team may request in total."""
    quotas: dict[str, int]
    """Other accelerator resources the team may request in total, ``{<extended resource name>: <count>}``
    (``aws.amazon.com/neuron``, ``amd.com/gpu``, ``google.com/tpu``...); ``nvidia.com/gpu`` here stands for
    ``gpu_quota`` (give one of them). Default none."""
    cpu_quota: int
    """CPU cores the team may request in total. Default: 8 per accelerator device, at least 4."""
    memory_quota_gib: int
    """Memory (GiB) the team may request in total. Default: 64 per accelerator device, at least 16."""
    group: str
    """Identity-provider group bound to the ``edit`` ClusterRole in the namespace."""
    borrowing_limit: Optional[int]
    """GPUs the team may borrow from the cohort on each flavor (None: no limit)."""
    lending_limit: Optional[int]
    """GPUs of the team's quota the cohort may borrow, over all flavors (None: all of it)."""
    storage_quota: Optional[str]
    """Storage the namespace's claims may request in total (``requests.storage``), such as ``2Ti``. Default: no
    storage quota."""
    pool_quotas: dict[str, int]
    """Devices of a pool's primary accelerator resource per pool name or GPU model (``{"h100-train": 32, "l4": 8}``;
    a model's split over its pools); the team's totals default to what they add up to, and a total above them is
    split over the pools no key names. Default none: the totals split over every pool."""
    pool_borrowing_limits: dict[str, int]
    """Per pool name or GPU model: the borrowing limit of each of those flavors (over ``borrowing_limit``)."""
    pool_lending_limits: dict[str, int]
    """Per ``pool_quotas`` key: devices of that quota other teams may borrow (instead of ``lending_limit``)."""
    flavor_order: list[str]
    """Provisioning modes, pool names or GPU models in the order the team's jobs try the flavors
    (``["spot", "on-demand"]``); unnamed flavors follow in the platform's order. Default: the platform's order."""
    preemption: TeamPreemption
    """What the team's pending jobs may evict. Default: ``LowerPriority`` within the team, ``Any`` to reclaim."""
    fair_sharing_weight: float
    """The team's weight in fair sharing of idle quota (``>= 0``; 0: its borrowed work is evicted first). Default:
    Kueue's 1."""


QUEUE_FIELDS = ("borrowing_limit", "lending_limit", "pool_borrowing_limits", "pool_lending_limits", "flavor_order",
                "preemption", "fair_sharing_weight")
"""`TeamSpec` fields only the team's ClusterQueue takes (`SchedulingPolicy`), never a namespace (`TeamNamespace`)."""
NAMESPACE_FIELDS = ("group", "storage_quota")
"""`TeamSpec` fields only the team's namespace takes (`TeamNamespace`), never its ClusterQueue."""


class Team:
    """One team, built once and given to every component that takes a team (`SchedulingPolicy`'s ``teams``,
    `TeamNamespace`'s ``team``), so they cannot disagree:
    ``research = Team(name="research", pool_quotas={"h100": 32})``.

    Frozen: its settings are checked when it is built (a `ConfigError` naming the field) and never change. Each
    component uses its part (the ClusterQueue the quotas, limits, order and preemption; the namespace the totals,
    group and storage quota); a program that gives two components different teams of one name is refused."""

    __slots__ = ("_spec",)

    def __init__(self, **spec: Unpack[TeamSpec]):
        checker = Args("Team", str(spec.get("name", "")))
        checked = checker.check(spec, TeamSpec, team_rules(""))
        check_team(checker, checked, "")
        object.__setattr__(self, "_spec", _frozen(checked))

    def spec(self) -> TeamSpec:
        """The team's `TeamSpec` (a fresh copy)."""
        return _thawed(self._spec)  # type: ignore[return-value]

    @property
    def name(self) -> str:
        return dict(self._spec)["name"]

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("a Team is frozen: build another")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Team) and self._spec == other._spec

    def __hash__(self) -> int:
        return hash(self._spec)

    def __repr__(self) -> str:
        return f"Team({', '.join(f'{k}={_thawed(v)!r}' for k, v in self._spec)})"


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("__list__", tuple(_frozen(v) for v in value))
    return value


def _thawed(value: Any) -> Any:
    if isinstance(value, tuple) and value[:1] == ("__list__",):
        return [_thawed(v) for v in value[1]]
    if isinstance(value, tuple):
        return {k: _thawed(v) for k, v in value}
    return value


def team_specs(value: Any) -> tuple[Any, bool]:
    """``(spec, built)``: a `Team`'s spec and True, or the value itself (a spec to check) and False."""
    return (value.spec(), True) if isinstance(value, Team) else (value, False)


def team_rules(path: str) -> dict[str, Rule]:
    """The stack file's ``teams[]`` rules for a `TeamSpec` at ``path`` (``team``, ``teams[]``; "" at the top)."""
    at = f"{path}." if path else ""
    return {f"{at}name": DNS_LABEL, **{f"{at}{key}": at_least(0) for key in (
        "gpu_quota", "cpu_quota", "memory_quota_gib", "borrowing_limit", "lending_limit", "fair_sharing_weight")},
        f"{at}storage_quota": STORAGE_QUANTITY,
        f"{at}preemption.within_cluster_queue": choice(*WITHIN_CLUSTER_QUEUE),
        f"{at}preemption.reclaim_within_cohort": choice(*RECLAIM_WITHIN_COHORT),
        f"{at}preemption.borrow_within_cohort": choice(*BORROW_WITHIN_COHORT)}


def check_team(checker: Args, team: dict[str, Any], path: str, advertised: Optional[Sequence[str]] = None,
               pools: Optional[Sequence] = None) -> None:
    """Cross-field rules of a checked `TeamSpec`: quotas are counts >= 0, of resources the pools advertise (when
    ``advertised`` is known), ``nvidia.com/gpu`` given once; the cohort cannot borrow more GPUs than the team has;
    per-pool keys name ``pools`` (GPU models alone without them), totals agree with them, flavor order entries name
    pools, and preemption is a combination Kueue takes."""
    quotas = team.get("quotas", {})
    for resource, count in quotas.items():
        at = _at(path, f"quotas.{resource}")
        if count < 0:
            checker.fail(at, f"must be >= 0, got {count}")
        if resource == catalog.NVIDIA_GPU_RESOURCE and "gpu_quota" in team:
            checker.fail(at, f"duplicates gpu_quota, the team's {resource} quota; give one of them")
        if advertised is not None and resource not in advertised:
            checker.fail(at, f"no pool advertises '{resource}' (the pools advertise {', '.join(advertised)})")
    _check_pool_keys(checker, team, path, pools)
    lending = team.get("lending_limit")
    quota = team_of(team, pools or ()).gpu_quota
    if lending is not None and lending > quota:
        checker.fail(_at(path, "lending_limit"), f"cannot exceed gpu_quota ({quota}), got {lending}")
    preemption = team.get("preemption", {})
    problem = preemption_problem(preemption.get("reclaim_within_cohort", DEFAULT_RECLAIM_WITHIN_COHORT),
                                 preemption.get("borrow_within_cohort"),
                                 preemption.get("borrow_max_priority_threshold"))
    if problem is not None:
        field = "borrow_within_cohort" if problem[0] == "borrowWithinCohort" else "borrow_max_priority_threshold"
        checker.fail(_at(path, f"preemption.{field}"), problem[1])


def _check_pool_keys(checker: Args, team: dict[str, Any], path: str, pools: Optional[Sequence]) -> None:
    """The per-pool rules of `check_team`; ``pools`` None: not known yet (a `Team` is checked again by each
    component it is given to), so keys are not resolved."""
    given = team.get("pool_quotas", {})
    for field in ("pool_quotas", "pool_borrowing_limits", "pool_lending_limits"):
        for key, count in team.get(field, {}).items():
            at = _at(path, f"{field}.{key}")
            if count < 0:
                checker.fail(at, f"must be >= 0, got {count}")
            if pools:
                problem = pool_quotas.key_problem(key, pools, list(team.get(field, {})))
                if problem:
                    checker.fail(at, problem)
            elif pools is not None and pool_quotas.key_resource(key, ()) is None:
                checker.fail(at, "names no GPU model, and no pools are given to name a pool: pass pools")
    for key, limit in team.get("pool_lending_limits", {}).items():
        at = _at(path, f"pool_lending_limits.{key}")
        if key not in given:
            checker.fail(at, "lends from a pool_quotas entry: give the key's quota in pool_quotas")
        if limit > given[key]:
            checker.fail(at, f"cannot exceed pool_quotas.{key} ({given[key]}), got {limit}")
    if team.get("pool_lending_limits") and team.get("lending_limit") is not None:
        checker.fail(_at(path, "lending_limit"), "and pool_lending_limits both limit lending; give one of them")
    pinned = pool_quotas.pinned_counts(list(given.items()), pools or ())
    explicit = {catalog.NVIDIA_GPU_RESOURCE: team["gpu_quota"]} if "gpu_quota" in team else {}
    explicit.update(team.get("quotas", {}))
    for resource, devices in pinned.items():
        field = "gpu_quota" if resource == catalog.NVIDIA_GPU_RESOURCE and "gpu_quota" in team else \
            f"quotas.{resource}"
        total = explicit.get(resource)
        if total is not None and total < devices:
            checker.fail(_at(path, field), f"is {total} but pool_quotas give {resource} pools {devices}; raise it "
                                            "or leave it out")
        if pools and total is not None and total > devices and all(
                i in {j for key in given for j in pool_quotas.key_pools(key, pools)}
                for i, pool in enumerate(pools) if pool_quotas.key_resource(pool.name, pools) == resource):
            checker.fail(_at(path, field), f"is {total} but pool_quotas give {resource} pools {devices} and name "
                                            "every pool offering it; lower it or leave it out")
    entries = team.get("flavor_order", [])
    for i, entry in enumerate(entries):
        problem = flavor_order.entry_problem(entry, entries[:i], pools) if pools else None
        if problem:
            checker.fail(_at(path, f"flavor_order[{i}]"), problem)


def _at(path: str, key: str) -> str:
    """``key`` under ``path`` ("" at the top: a `Team`'s own fields)."""
    return f"{path}.{key}" if path else key


def team_spec(team: TeamConfig) -> TeamSpec:
    """The plain form of a configured team."""
    spec = TeamSpec(
        name=team.name, gpu_quota=team.gpu_quota, cpu_quota=team.cpu_quota,
        memory_quota_gib=team.memory_quota_gib, group=team.group,
        borrowing_limit=team.borrowing_limit, lending_limit=team.lending_limit,
    )
    if team.quotas:
        spec["quotas"] = dict(team.quotas)
    if team.storage_quota is not None:
        spec["storage_quota"] = team.storage_quota
    queue = team.queue
    for field in ("pool_quotas", "pool_borrowing_limits", "pool_lending_limits"):
        if getattr(queue, field):
            spec[field] = dict(getattr(queue, field))  # type: ignore[literal-required]
    if queue.flavor_order:
        spec["flavor_order"] = list(queue.flavor_order)
    if queue.preemption != QueuePreemption():
        spec["preemption"] = TeamPreemption(**{  # type: ignore[typeddict-item]
            key: value for key, value in dataclasses.asdict(queue.preemption).items() if value is not None})
    if queue.fair_sharing_weight is not None:
        spec["fair_sharing_weight"] = queue.fair_sharing_weight
    return spec


def team_of(spec: TeamSpec, pools: Sequence = ()) -> TeamConfig:
    """The `TeamConfig` of a spec; ints are coerced because cross-language callers send floats. ``pools`` name the
    pools of ``pool_quotas`` keys, whose devices are the team's totals where it gives none."""
    def optional_int(value) -> Optional[int]:
        return None if value is None else int(value)

    def pairs(field: str) -> tuple[tuple[str, int], ...]:
        return tuple((str(k), int(n)) for k, n in (spec.get(field) or {}).items())  # type: ignore[attr-defined]

    quotas = {str(r): int(n) for r, n in (spec.get("quotas") or {}).items()}
    # `quotas["nvidia.com/gpu"]` is gpu_quota under another name (check_team refuses both).
    nvidia = quotas.pop(catalog.NVIDIA_GPU_RESOURCE, None)
    pinned = pool_quotas.pinned_counts(pairs("pool_quotas"), pools)
    gpu = int(spec.get("gpu_quota", nvidia if nvidia is not None else pinned.pop(catalog.NVIDIA_GPU_RESOURCE, 0)))
    pinned.pop(catalog.NVIDIA_GPU_RESOURCE, None)
    quotas = {**pinned, **quotas}
    devices = accelerator_devices(gpu, quotas)
    preemption = spec.get("preemption") or {}
    weight = spec.get("fair_sharing_weight")
    queue = TeamQueue(
        pool_quotas=pairs("pool_quotas"), pool_borrowing_limits=pairs("pool_borrowing_limits"),
        pool_lending_limits=pairs("pool_lending_limits"),
        flavor_order=tuple(spec.get("flavor_order") or ()),
        preemption=QueuePreemption(
            within_cluster_queue=preemption.get("within_cluster_queue", DEFAULT_WITHIN_CLUSTER_QUEUE),
            reclaim_within_cohort=preemption.get("reclaim_within_cohort", DEFAULT_RECLAIM_WITHIN_COHORT),
            borrow_within_cohort=preemption.get("borrow_within_cohort"),
            borrow_max_priority_threshold=optional_int(preemption.get("borrow_max_priority_threshold"))),
        fair_sharing_weight=None if weight is None else float(weight),
    )
    return TeamConfig(
        name=spec["name"], gpu_quota=gpu, cpu_quota=int(spec.get("cpu_quota", max(4, 8 * devices))),
        memory_quota_gib=int(spec.get("memory_quota_gib", max(16, 64 * devices))),
        group=spec.get("group") or spec["name"],
        borrowing_limit=optional_int(spec.get("borrowing_limit")),
        lending_limit=optional_int(spec.get("lending_limit")),
        quotas=tuple(sorted(quotas.items())),
        storage_quota=spec.get("storage_quota"),
        queue=queue,
    )
