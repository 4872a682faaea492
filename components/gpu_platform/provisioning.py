"""How a pool's nodes are bought: on demand, spot, from a reservation, or through GKE's Dynamic Workload Scheduler; and
which pool a team's quota spills to when a pool's runs out (pure rules).

``nodePools[].provisioning`` (``GpuPoolSpec.provisioning``):

- ``on-demand`` (default): the cloud's regular capacity.
- ``spot``: preemptible capacity (``spot: true`` is the same, kept as an alias).
- ``reservation``: capacity reserved beforehand, named by ``nodePools[].reservation`` (AWS ODCR or Capacity Block
  ``cr-...`` id, GKE reservation name, Azure capacity reservation group id, OCI capacity reservation OCID).
- ``flex-start`` (GKE): Dynamic Workload Scheduler's flex-start VMs, obtained when available, for at most a week.
- ``queued`` (GKE): Dynamic Workload Scheduler's queued provisioning: Kueue asks GKE for all of a job's nodes at once
  through a ProvisioningRequest and admits the job when they exist.

``nodePools[].fallbackPool`` names the pool a job may run on when this pool's quota is used: Kueue orders the flavors
reserved and on-demand first, then flex-start and queued, spot last, and a job on a pool with a fallback selects the
pools' shared accelerator label instead of one pool.

Every rule returns ``(field, problem)`` or None, so the stack parser and the component checks refuse alike.
"""

from typing import Optional

ON_DEMAND = "on-demand"
SPOT = "spot"
RESERVATION = "reservation"
FLEX_START = "flex-start"
QUEUED = "queued"
PROVISIONING_MODES = (ON_DEMAND, SPOT, RESERVATION, FLEX_START, QUEUED)

CLOUD_MODES: dict[str, tuple[str, ...]] = {
    "aws": (ON_DEMAND, SPOT, RESERVATION),
    "azure": (ON_DEMAND, SPOT, RESERVATION),
    "gcp": PROVISIONING_MODES,
    "oci": (ON_DEMAND, SPOT, RESERVATION),
    "existing": (ON_DEMAND,),
}
"""The modes each cloud layer provisions (Dynamic Workload Scheduler is GKE's; an existing cluster's nodes are bought
outside the platform)."""

FLAVOR_ORDER = {RESERVATION: 0, ON_DEMAND: 1, FLEX_START: 2, QUEUED: 3, SPOT: 4}
"""Where a pool's Kueue flavor goes in every ClusterQueue: capacity already paid for first, spot (which may vanish)
last. Kueue tries flavors in this order and moves on when one's quota is used (flavorFungibility TryNextFlavor)."""

Problem = Optional[tuple[str, str]]


def mode_problem(cloud: str, mode: str) -> Problem:
    """Why ``cloud`` cannot provision a pool this way, or None."""
    allowed = CLOUD_MODES.get(cloud, (ON_DEMAND,))
    if mode in allowed:
        return None
    if cloud == "existing":
        return ("provisioning", "an existing cluster's nodes are bought outside the platform; leave provisioning out")
    if mode in (FLEX_START, QUEUED):
        return ("provisioning", f"{mode} is GKE's Dynamic Workload Scheduler; on this cloud use one of "
                                f"{', '.join(allowed)}")
    return ("provisioning", f"'{mode}' is not one of {', '.join(allowed)}")


def reservation_problem(mode: str, reservation: str) -> Problem:
    """A reservation is named exactly when the pool is provisioned from one."""
    if mode == RESERVATION and not reservation:
        return ("reservation", "is required with provisioning: reservation (the reservation's id or name)")
    if reservation and mode != RESERVATION:
        return ("reservation", f"only applies with provisioning: reservation (provisioning is {mode})")
    return None


def spot_alias_problem(spot: Optional[bool], mode: Optional[str]) -> Problem:
    """``spot: true`` is ``provisioning: spot``; both given, they must agree."""
    if spot is None or mode is None:
        return None
    if spot and mode != SPOT:
        return ("spot", f"spot: true is provisioning: spot, and provisioning is {mode}; give one of them")
    if not spot and mode == SPOT:
        return ("spot", "spot: false contradicts provisioning: spot; give one of them")
    return None


def fallback_problem(pool: str, fallback: str, pools: dict[str, tuple[str, str]]) -> Problem:
    """Why ``pool`` cannot spill to ``fallback``, or None. ``pools`` maps each pool name to (primary accelerator
    resource, its own fallback)."""
    if not fallback:
        return None
    if fallback == pool:
        return ("fallbackPool", "names the pool itself")
    if fallback not in pools:
        return ("fallbackPool", f"no node pool named '{fallback}'")
    resource, chained = pools[fallback]
    if resource != pools[pool][0]:
        return ("fallbackPool", f"pool '{fallback}' offers {resource}, not {pools[pool][0]}: a job could not run on "
                                "both")
    if chained:
        return ("fallbackPool", f"pool '{fallback}' falls back to '{chained}' itself; name the last pool of the chain "
                                "directly (one fallback per pool)")
    return None
