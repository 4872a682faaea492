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
class TeamQueue:
    """What a team's ClusterQueue says beyond its totals. Defaults plan exactly what a team without them got before:
    its quota split over every pool, flavors in the platform's order, ``LowerPriority``/``Any`` preemption, no
    ``borrowWithinCohort``, Kueue's default weight."""

    pool_quotas: tuple[tuple[str, int], ...] = ()
    """``poolQuotas``: devices of a pool's primary accelerator resource, by pool name or GPU model (a model's devices
    split over its pools in proportion to their free capacity)."""
    pool_borrowing_limits: tuple[tuple[str, int], ...] = ()
    """``poolBorrowingLimits``: per pool name or GPU model, the ``borrowingLimit`` of each of those flavors."""
    pool_lending_limits: tuple[tuple[str, int], ...] = ()
    """``poolLendingLimits``: per ``poolQuotas`` key, devices of that quota the cohort may borrow (a model's split
    over its flavors in proportion to the team's quota on each)."""
    flavor_order: tuple[str, ...] = ()
    """``flavorOrder``: provisioning modes, pool names or GPU models; the ClusterQueue lists flavors by the first
    entry each matches, the unmatched ones after them in the platform's order."""
    within_cluster_queue: str = DEFAULT_WITHIN_CLUSTER_QUEUE
    reclaim_within_cohort: str = DEFAULT_RECLAIM_WITHIN_COHORT
    borrow_within_cohort: Optional[str] = None
    """None: the field is left out (Kueue's default, ``Never``)."""
    borrow_max_priority_threshold: Optional[int] = None
    """``borrowWithinCohort.maxPriorityThreshold``: only jobs at or below this priority may be evicted that way."""
    fair_sharing_weight: Optional[float] = None
    """``spec.fairSharing.weight`` (None: Kueue's default, 1)."""


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
