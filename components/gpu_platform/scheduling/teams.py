"""`TeamSpec`: a team as plain values, the form the scheduling and tenancy components take in their args."""

from collections.abc import Sequence
from typing import Any, Optional, TypedDict

from typing_extensions import Required

from .. import catalog
from ..component_args import DNS_LABEL, STORAGE_QUANTITY, Args, Rule, at_least
from ..config_model import TeamConfig, accelerator_devices


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


def team_rules(path: str) -> dict[str, Rule]:
    """The stack file's ``teams[]`` rules for a `TeamSpec` at ``path`` (``team``, ``teams[]``)."""
    return {f"{path}.name": DNS_LABEL, **{f"{path}.{key}": at_least(0) for key in (
        "gpu_quota", "cpu_quota", "memory_quota_gib", "borrowing_limit", "lending_limit")},
        f"{path}.storage_quota": STORAGE_QUANTITY}


def check_team(checker: Args, team: dict[str, Any], path: str, advertised: Optional[Sequence[str]] = None) -> None:
    """Cross-field rules of a checked `TeamSpec`: quotas are counts >= 0, of resources the pools advertise (when
    ``advertised`` is known), ``nvidia.com/gpu`` given once; the cohort cannot borrow more GPUs than the team has."""
    quotas = team.get("quotas", {})
    for resource, count in quotas.items():
        at = f"{path}.quotas.{resource}"
        if count < 0:
            checker.fail(at, f"must be >= 0, got {count}")
        if resource == catalog.NVIDIA_GPU_RESOURCE and "gpu_quota" in team:
            checker.fail(at, f"duplicates gpu_quota, the team's {resource} quota; give one of them")
        if advertised is not None and resource not in advertised:
            checker.fail(at, f"no pool advertises '{resource}' (the pools advertise {', '.join(advertised)})")
    lending = team.get("lending_limit")
    quota = team.get("gpu_quota", quotas.get(catalog.NVIDIA_GPU_RESOURCE, 0))
    if lending is not None and lending > quota:
        checker.fail(f"{path}.lending_limit", f"cannot exceed gpu_quota ({quota}), got {lending}")


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
    return spec


def team_of(spec: TeamSpec) -> TeamConfig:
    """The `TeamConfig` of a spec; ints are coerced because cross-language callers send floats."""
    def optional_int(value) -> Optional[int]:
        return None if value is None else int(value)

    quotas = {str(r): int(n) for r, n in (spec.get("quotas") or {}).items()}
    # `quotas["nvidia.com/gpu"]` is gpu_quota under another name (check_team refuses both).
    nvidia = quotas.pop(catalog.NVIDIA_GPU_RESOURCE, 0)
    gpu = int(spec.get("gpu_quota", nvidia))
    devices = accelerator_devices(gpu, quotas)
    return TeamConfig(
        name=spec["name"], gpu_quota=gpu, cpu_quota=int(spec.get("cpu_quota", max(4, 8 * devices))),
        memory_quota_gib=int(spec.get("memory_quota_gib", max(16, 64 * devices))),
        group=spec.get("group") or spec["name"],
        borrowing_limit=optional_int(spec.get("borrowing_limit")),
        lending_limit=optional_int(spec.get("lending_limit")),
        quotas=tuple(sorted(quotas.items())),
        storage_quota=spec.get("storage_quota"),
    )
