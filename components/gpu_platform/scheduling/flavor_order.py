"""The order a ClusterQueue lists its flavors in: Kueue tries them in that order and, with ``flavorFungibility``
``TryNextFlavor``, moves on to the next when a job does not fit one's quota without borrowing (pure rules).

* The platform's order (`platform_order`): `provisioning.FLAVOR_ORDER` (reserved, on-demand, flex-start, queued,
  spot), pool order within a rank; a pool's ``fallback_pool`` that this puts before the pool falling back to it moves
  right after that pool (the last of them), so a fallback is tried after its pool whatever either is provisioned
  with (``spot`` falling back to ``on-demand`` included).
* A team's ``flavorOrder`` (`team_order`): entries are provisioning modes, pool names or GPU models; each flavor
  goes by the first entry it matches, those matching none after them, the platform's order breaking ties.
"""

from collections.abc import Sequence
from typing import Optional

from .. import provisioning
from ..errors import did_you_mean
from ..pools import GpuPool


def platform_order(pools: Sequence[GpuPool]) -> list[GpuPool]:
    """``pools`` in the platform's flavor order (module docstring)."""
    ordered = sorted(pools, key=lambda p: provisioning.FLAVOR_ORDER[p.provisioning])
    targets = dict.fromkeys(p.fallback_pool for p in ordered if p.fallback_pool)
    for target in targets:
        pool = next((p for p in ordered if p.name == target), None)
        if pool is None:
            continue  # refused by the checks (`provisioning.fallback_problem`); nothing to order
        last_source = max(i for i, p in enumerate(ordered) if p.fallback_pool == target)
        if ordered.index(pool) < last_source:  # already after its pools: left where it is
            ordered.remove(pool)
            ordered.insert(last_source, pool)  # the sources moved up by one: right after the last
    return ordered


def matches(entry: str, pool: GpuPool) -> bool:
    """Whether a ``flavorOrder`` entry names the pool: its name, GPU model or provisioning mode."""
    return entry in (pool.name, pool.gpu_model, pool.provisioning)


def team_order(entries: Sequence[str], pools: Sequence[GpuPool]) -> list[int]:
    """Indexes of ``pools`` (in the platform's order) in the order a team's ``flavorOrder`` ``entries`` give."""
    def rank(i: int) -> int:
        return next((k for k, entry in enumerate(entries) if matches(entry, pools[i])), len(entries))

    return sorted(range(len(pools)), key=lambda i: (rank(i), i))


def entry_problem(entry: str, earlier: Sequence[str], pools: Sequence[GpuPool]) -> Optional[str]:
    """Why a ``flavorOrder`` entry is refused: given twice, or naming no pool, model or provisioning mode of a pool."""
    if entry in earlier:
        return "is given twice"
    if any(matches(entry, pool) for pool in pools):
        return None
    known = sorted({value for pool in pools for value in (pool.name, pool.gpu_model, pool.provisioning)})
    if entry in provisioning.PROVISIONING_MODES:
        return f"no node pool is provisioned {entry} (entries: {', '.join(known)})"
    return f"names no node pool, GPU model or provisioning mode of a pool (entries: {', '.join(known)})" \
           f"{did_you_mean(entry, known)}"
