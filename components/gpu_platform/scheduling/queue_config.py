"""A team's own Kueue settings (`TeamQueue`): quotas per pool or GPU model, borrowing and lending limits per flavor,
the order its ClusterQueue tries the flavors in, preemption and its fair-sharing weight.

A leaf (no import from the package or above): `config_model.TeamConfig` holds a `TeamQueue`, the stack parser
(`scheduling_config`) and the component arguments (`teams`) fill it, `kueue_objects` reads it. The values are the
ClusterQueue API's (``kueue.x-k8s.io/v1beta2`` at Kueue v0.19.2, `crd_schemas`): ``spec.preemption`` and
``spec.fairSharing.weight``.
"""

from dataclasses import dataclass
from typing import Optional

WITHIN_CLUSTER_QUEUE = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
"""``spec.preemption.withinClusterQueue``: which of the team's own admitted jobs a pending job may evict."""
RECLAIM_WITHIN_COHORT = ("Never", "LowerPriority", "Any")
"""``spec.preemption.reclaimWithinCohort``: which jobs of teams borrowing the team's quota it may evict."""
BORROW_WITHIN_COHORT = ("Never", "LowerPriority")
"""``spec.preemption.borrowWithinCohort.policy``: whether a job that must borrow may evict other teams' borrowing
jobs of lower priority."""
DEFAULT_WITHIN_CLUSTER_QUEUE = "LowerPriority"
DEFAULT_RECLAIM_WITHIN_COHORT = "Any"


@dataclass(frozen=True)
class QueuePreemption:
    """``teams[].preemption``: what the team's pending jobs may evict (the ClusterQueue's ``spec.preemption``)."""

    within_cluster_queue: str = DEFAULT_WITHIN_CLUSTER_QUEUE
    """``Never``, ``LowerPriority`` or ``LowerOrNewerEqualPriority``: which of the team's own running jobs a pending
    job of the team evicts once the team's quota is used (``LowerOrNewerEqualPriority`` also evicts jobs of equal
    priority that started later)."""
    reclaim_within_cohort: str = DEFAULT_RECLAIM_WITHIN_COHORT
    """``Never``, ``LowerPriority`` or ``Any``: which jobs other teams run on the team's idle quota are evicted when
    the team needs that quota back (``Never``: the team waits until they finish)."""
    borrow_within_cohort: Optional[str] = None
    """``Never`` or ``LowerPriority``: whether a job that must borrow may evict lower-priority jobs other teams run
    on borrowed quota. Default: left out (Kueue's ``Never``); needs ``reclaimWithinCohort`` other than ``Never``."""
    borrow_max_priority_threshold: Optional[int] = None
    """With ``borrowWithinCohort: LowerPriority``: only jobs at or below this priority are evicted that way."""


@dataclass(frozen=True)
class TeamQueue:
    """What a team's ClusterQueue says beyond its totals. Defaults plan exactly what a team without them got before:
    its quota split over every pool, flavors in the platform's order, ``LowerPriority``/``Any`` preemption, no
    ``borrowWithinCohort``, Kueue's default weight."""

    pool_quotas: tuple[tuple[str, int], ...] = ()
    """Devices of a pool's primary accelerator resource by pool name or GPU model, ``{h100-train: 32, l4: 8}`` (a
    model's devices split over its pools in proportion to their free capacity). ``gpuQuota`` and ``quotas`` default
    to what they add up to; a total above them is split over the pools the team does not name. Default: none (the
    totals split over every pool)."""
    pool_borrowing_limits: tuple[tuple[str, int], ...] = ()
    """Per pool name or GPU model: how many devices beyond its quota the team may borrow on each of those flavors
    (overrides ``borrowingLimit`` there)."""
    pool_lending_limits: tuple[tuple[str, int], ...] = ()
    """Per ``poolQuotas`` key: how many devices of that quota other teams may borrow while the team does not use them
    (a model's split over its flavors in proportion to the team's quota on each); instead of ``lendingLimit``."""
    flavor_order: tuple[str, ...] = ()
    """Provisioning modes, pool names or GPU models in the order the team's jobs try the flavors, such as
    ``[spot, on-demand]``; flavors matching no entry follow in the platform's order (reserved, on-demand,
    flex-start, queued, spot; a ``fallbackPool`` after its pool)."""
    preemption: QueuePreemption = QueuePreemption()
    """What the team's pending jobs may evict (keys below)."""
    fair_sharing_weight: Optional[float] = None
    """The team's weight when idle quota is shared (``spec.fairSharing.weight``, >= 0): a team of weight 2 may hold
    twice the borrowed share of a team of weight 1 before its borrowed jobs are the first evicted; 0 makes its
    borrowed jobs always the first evicted. Default: Kueue's 1."""


def preemption_problem(reclaim: str, borrow: Optional[str], threshold: Optional[int]) -> Optional[tuple[str, str]]:
    """``(field, problem)`` where Kueue's API refuses the combination, else None. The CRD rejects
    ``reclaimWithinCohort: Never`` with a ``borrowWithinCohort`` policy other than ``Never``, and a threshold only
    bounds the ``LowerPriority`` policy."""
    if reclaim == "Never" and borrow not in (None, "Never"):
        return ("borrowWithinCohort", "needs reclaimWithinCohort other than Never (Kueue refuses borrowWithinCohort "
                                      f"{borrow} with reclaimWithinCohort Never)")
    if threshold is not None and borrow != "LowerPriority":
        return ("borrowMaxPriorityThreshold", "only bounds borrowWithinCohort: LowerPriority")
    return None


def weight_quantity(weight: float) -> "int | str":
    """A fair-sharing weight as the ClusterQueue's quantity: an integer where whole, else its decimal string."""
    return int(weight) if float(weight).is_integer() else f"{weight:g}"
