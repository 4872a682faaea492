"""What the components of one Pulumi program have said about its teams and Kueue queues, so two of them cannot
disagree: a team given to `SchedulingPolicy` with quota 8 and to `TeamNamespace` with quota 32, or a LocalQueue
feeding a ClusterQueue no `SchedulingPolicy` of the program defines, is refused when the second is constructed.

One record per program. Against the engine (a `pulumi up`, or the provider process serving another language's
program, which the engine starts for one deployment and whose every construct call gets a fresh monitor client), a
program is its organization, project and stack; under mocks, where many programs run in one process, it is the mock
monitor the runtime holds (the harness installs a fresh one per program). So nothing carries over from one program
to the next. Components call `check_team` and `check_queue` while checking their arguments, and
`remember_team`/`remember_queues` once those are accepted (before any resource is registered). A program whose
ClusterQueues are made elsewhere (another stack, Kueue managed outside the platform) names them with
`remember_queues` before its `TeamNamespace`s.

`DataPlaneStorage` (storage) reads and writes the record too: a team's namespace is its name, and its
``storage_quota`` is the ``requests.storage`` quota the data plane's claims must fit. `DataPlaneStorage` takes the
quota of a team recorded here (`team_storage_quota`) and records what it assumed (`remember_storage`), so a later
`TeamNamespace` with another quota is refused too (`storage_conflict`). This module lives in scheduling, which the
storage package may import: it imports only the configuration model, so no module cycle closes.
"""

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

from pulumi.runtime import settings
from pulumi.runtime.proto import resource_pb2_grpc

from ..component_args import storage_bytes, storage_text
from ..config_model import TeamConfig

TOTALS = frozenset({"gpu_quota", "quotas", "cpu_quota", "memory_quota_gib"})
"""Team settings both the namespace (ResourceQuota) and the ClusterQueue (nominal quotas) take."""
QUEUE = frozenset({"borrowing_limit", "lending_limit", "queue"})
"""Team settings only the ClusterQueue takes (``queue``: `queue_config.TeamQueue`, pool quotas included)."""
NAMESPACE = frozenset({"group", "storage_quota"})
"""Team settings only the namespace takes."""
EVERYTHING = TOTALS | QUEUE | NAMESPACE
"""What a `teams.Team` carries: given to two components, all of it must agree."""
ORDER = ("gpu_quota", "quotas", "queue", "cpu_quota", "memory_quota_gib", "borrowing_limit", "lending_limit", "group",
         "storage_quota")
"""The order settings are compared in: the totals first (CPU and memory defaults follow from them)."""


@dataclass(frozen=True)
class TeamRecord:
    """A team as one component took it: where (``SchedulingPolicy sched teams[1]``), its settings, and which of
    them that component uses."""

    where: str
    team: TeamConfig
    fields: frozenset


@dataclass(frozen=True)
class StorageRecord:
    """What a `DataPlaneStorage` (``where``) assumed of one namespace: the quota its ``storage_quotas`` gave (None:
    none) and the bytes its claims there request."""

    where: str
    quota: Optional[str]
    claimed: int


@dataclass
class _Program:
    monitor: Any
    teams: dict[str, list[TeamRecord]] = field(default_factory=dict)
    queues: dict[str, str] = field(default_factory=dict)
    """ClusterQueue name -> the component that defines it."""
    storage: dict[str, list[StorageRecord]] = field(default_factory=dict)
    """Namespace -> what each `DataPlaneStorage` assumed of it."""


_current: Optional[_Program] = None


def _program() -> _Program:
    """The record of the program now running (a fresh one when the program changed: see the module docstring)."""
    global _current
    monitor = settings.get_monitor()
    key: Any = monitor
    if monitor is None or isinstance(monitor, resource_pb2_grpc.ResourceMonitorStub):
        key = (settings.get_organization(), settings.get_project(), settings.get_stack())
    if _current is None or not (_current.monitor is key or _current.monitor == key):
        _current = _Program(key)
    return _current


def _value(team: TeamConfig, name: str) -> Any:
    return getattr(team, name)


def _shown(value: Any) -> str:
    """A setting as the error shows it: pairs as a mapping, other tuples as a list, nothing as ``none``."""
    if value is None or value == ():
        return "none"
    if isinstance(value, tuple) and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def team_conflict(team: TeamConfig, fields: Collection[str]) -> Optional[str]:
    """Why ``team`` (using ``fields``) disagrees with the team of that name another component of the program took,
    naming that component; None where they agree on every setting both use, or no other took it."""
    for earlier in _program().teams.get(team.name, []):
        for name in (n for n in ORDER if n in fields and n in earlier.fields):
            mine, theirs = _value(team, name), _value(earlier.team, name)
            if mine != theirs:
                if name == "queue":
                    diff = next(k for k in type(mine).__dataclass_fields__ if getattr(mine, k) != getattr(theirs, k))
                    name, mine, theirs = diff, getattr(mine, diff), getattr(theirs, diff)
                return (f"team '{team.name}' has {name} {_shown(mine)} here but {_shown(theirs)} in {earlier.where}; "
                        "build one Team and give it to both")
    return None


def remember_team(where: str, team: TeamConfig, fields: Collection[str]) -> None:
    """Record that the component ``where`` took ``team`` and uses ``fields`` of it."""
    _program().teams.setdefault(team.name, []).append(TeamRecord(where, team, frozenset(fields)))


def remember_queues(where: str, names: Iterable[str]) -> None:
    """Record the ClusterQueues the component ``where`` defines."""
    program = _program()
    for name in names:
        program.queues.setdefault(name, where)


def queue_problem(queue: str, team: str) -> Optional[str]:
    """Why a LocalQueue of team ``team``'s namespace cannot feed ClusterQueue ``queue``: no component of the program
    defines it, or it admits another team's namespace only; None where it can."""
    defined = _program().queues
    if queue not in defined:
        known = ", ".join(sorted(defined)) or "none"
        return (f"no SchedulingPolicy of this program defines ClusterQueue '{queue}' (defined: {known}); build the "
                "SchedulingPolicy with that team first")
    if queue != team:
        return (f"ClusterQueue '{queue}' ({defined[queue]}) admits namespace '{queue}' only (its namespaceSelector); "
                f"team '{team}' feeds ClusterQueue '{team}'")
    return None


def team_storage_quota(namespace: str) -> Optional[tuple[str, Optional[str]]]:
    """The component that took the team owning ``namespace`` (a team's namespace is its name) with its
    ``storage_quota`` (None: no quota), and that quota; None where no component of the program took such a team
    with its storage quota (a `SchedulingPolicy` given a `TeamSpec` does not)."""
    for record in _program().teams.get(namespace, []):
        if "storage_quota" in record.fields:
            return record.where, record.team.storage_quota
    return None


def remember_storage(where: str, namespace: str, quota: Optional[str], claimed: int) -> None:
    """Record that the `DataPlaneStorage` ``where`` assumed ``quota`` (None: none given) for ``namespace`` and
    claims ``claimed`` bytes there."""
    _program().storage.setdefault(namespace, []).append(StorageRecord(where, quota, claimed))


def storage_conflict(team: TeamConfig) -> Optional[str]:
    """Why ``team``'s ``storage_quota`` disagrees with what a `DataPlaneStorage` of the program assumed of its
    namespace (another quota, or claims that need more), naming it; None where it agrees or none assumed any."""
    mine = team.storage_quota
    for record in _program().storage.get(team.name, []):
        if record.quota is not None and (mine is None or storage_bytes(mine) != storage_bytes(record.quota)):
            return (f"{_shown(mine)}, but {record.where} says storage_quotas.{team.name}: {record.quota}; "
                    "give one quota (the Team's)")
        if mine is not None and record.claimed > storage_bytes(mine):
            return (f"{mine} is less than the {storage_text(record.claimed)} the claims of {record.where} request "
                    f"in namespace '{team.name}'")
    return None
