"""`TeamSpec`: a team as plain values, the form the scheduling and tenancy components take in their args."""

from typing import Any, Optional, TypedDict

from typing_extensions import Required

from ..component_args import DNS_LABEL, Args, Rule, at_least
from ..config_model import TeamConfig


class TeamSpec(TypedDict, total=False):
    """One team: a namespace with a GPU quota and a Kueue ClusterQueue."""

    name: Required[str]
    """DNS label; the namespace name and the ClusterQueue name."""
    gpu_quota: int
    """``nvidia.com/gpu`` the team may request in total."""
    cpu_quota: int
    """CPU cores the team may request in total."""
    memory_quota_gib: int
    """Memory (GiB) the team may request in total."""
    group: str
    """Identity-provider group bound to the ``edit`` ClusterRole in the namespace."""
    borrowing_limit: Optional[int]
    """GPUs the team may borrow from the cohort on each flavor (None: no limit)."""
    lending_limit: Optional[int]
    """GPUs of the team's quota the cohort may borrow, over all flavors (None: all of it)."""


def team_rules(path: str) -> dict[str, Rule]:
    """The stack file's ``teams[]`` rules for a `TeamSpec` at ``path`` (``team``, ``teams[]``)."""
    return {f"{path}.name": DNS_LABEL, **{f"{path}.{key}": at_least(0) for key in (
        "gpu_quota", "cpu_quota", "memory_quota_gib", "borrowing_limit", "lending_limit")}}


def check_team(checker: Args, team: dict[str, Any], path: str) -> None:
    """Cross-field rule of a checked `TeamSpec`: the cohort cannot borrow more GPUs than the team has."""
    lending, quota = team.get("lending_limit"), team.get("gpu_quota", 0)
    if lending is not None and lending > quota:
        checker.fail(f"{path}.lending_limit", f"cannot exceed gpu_quota ({quota}), got {lending}")


def team_spec(team: TeamConfig) -> TeamSpec:
    """The plain form of a configured team."""
    return TeamSpec(
        name=team.name, gpu_quota=team.gpu_quota, cpu_quota=team.cpu_quota,
        memory_quota_gib=team.memory_quota_gib, group=team.group,
        borrowing_limit=team.borrowing_limit, lending_limit=team.lending_limit,
    )


def team_of(spec: TeamSpec) -> TeamConfig:
    """The `TeamConfig` of a spec; ints are coerced because cross-language callers send floats."""
    def optional_int(value) -> Optional[int]:
        return None if value is None else int(value)

    gpu = int(spec.get("gpu_quota", 0))
    return TeamConfig(
        name=spec["name"], gpu_quota=gpu, cpu_quota=int(spec.get("cpu_quota", max(4, 8 * gpu))),
        memory_quota_gib=int(spec.get("memory_quota_gib", max(16, 64 * gpu))),
        group=spec.get("group") or spec["name"],
        borrowing_limit=optional_int(spec.get("borrowing_limit")),
        lending_limit=optional_int(spec.get("lending_limit")),
    )
