"""Pure decisions: which GPU allocations are idle, which may be acted on, and what to recommend."""

import math
from dataclasses import dataclass
from typing import Optional

from .. import catalog
from .inventory import Inventory, Pod
from .policy import Policy, PoolOption
from .prometheus import Sample

HEADROOM = 1.25
"""Peak GPU memory is multiplied by this before a smaller GPU is judged big enough."""
TARGET_UTILIZATION = 60.0
"""Utilisation (%) a right-sized allocation should reach."""


@dataclass(frozen=True)
class Finding:
    """What the optimizer concluded about one pod that holds GPUs."""

    namespace: str
    pod: str
    gpus: int
    utilization: float
    memory_used_mib: float
    observed_seconds: float
    owner_kind: str
    owner_name: str
    idle: bool
    opted_in: bool
    reason: str
    """Why the pod is or is not actionable (``idle``, ``busy``, ``not opted in``, ``excluded namespace``...)."""
    recommendation: Optional[dict] = None
    vendor: str = catalog.NVIDIA
    """Vendor whose idleness signal saw the pod (`signals`)."""

    @property
    def actionable(self) -> bool:
        return self.idle and self.opted_in


def _by_pod(samples: list[Sample], policy: Policy) -> dict[tuple[str, str], float]:
    return {(s.labels.get(policy.namespace_label, ""), s.labels.get(policy.pod_label, "")): s.value for s in samples}


def recommend(gpus: int, utilization: float, memory_used_mib: float, pools: tuple[PoolOption, ...],
              vendor: str = catalog.NVIDIA) -> dict:
    """A smaller allocation for an idle pod: fewer GPUs, else a shared GPU pool, else the smallest GPU that fits,
    among the pools of the pod's own ``vendor`` (its image and device resource only fit those)."""
    pools = tuple(p for p in pools if p.vendor == vendor)
    needed = max(1, math.ceil(gpus * utilization / TARGET_UTILIZATION))
    if needed < gpus:
        return {"action": "reduce-gpus", "from": gpus, "to": needed}
    need_gib = memory_used_mib * HEADROOM / 1024
    fitting = sorted((p for p in pools if p.gpu_memory_gib >= need_gib), key=lambda p: (not p.shared, p.gpu_memory_gib))
    if fitting:
        pool = fitting[0]
        return {"action": "move-to-shared-pool" if pool.shared else "move-to-smaller-gpu", "pool": pool.name,
                "gpuMemoryGiB": pool.gpu_memory_gib}
    return {"action": "review", "detail": "no catalogued pool is smaller than the current GPU"}


def _exclusion(pod: Optional[Pod], namespace: str, policy: Policy) -> Optional[str]:
    if namespace in policy.excluded_namespaces:
        return "excluded namespace"
    if pod is not None:
        for item in policy.excluded_labels:
            key, _, value = item.partition("=")
            if pod.labels.get(key) == value:
                return f"excluded label {item}"
    return None


def analyse(utilization: list[Sample], memory: list[Sample], first_seen: list[Sample], gpus: list[Sample],
            inventory: Inventory, policy: Policy, now: float,
            vendors: Optional[dict[tuple[str, str], str]] = None) -> list[Finding]:
    """Join the per-pod query results with the inventory and judge each pod; sorted by namespace and pod.
    ``vendors`` names the vendor whose signal saw each pod (default NVIDIA)."""
    util, mem, seen, count = (_by_pod(x, policy) for x in (utilization, memory, first_seen, gpus))
    findings = []
    for key in sorted(util):
        namespace, name = key
        pod = inventory.pods.get(key)
        observed = now - seen[key] if key in seen else 0.0
        value = util[key]
        owner_kind, owner_name = (pod.owner.kind, pod.owner.name) if pod else ("unknown", "")
        opted_in = pod is not None and "true" in (
            pod.labels.get(policy.opt_in_label), pod.owner.labels.get(policy.opt_in_label))
        excluded = _exclusion(pod, namespace, policy)
        idle = False
        if pod is None:
            reason = "pod not running"
        elif excluded:
            reason = excluded
        elif observed < policy.min_observation_seconds:
            reason = f"observed for {int(observed // 60)}m < {policy.min_observation}"
        elif value >= policy.utilization_threshold:
            reason = "busy"
        else:
            idle = True
            reason = "idle" if opted_in else "idle, not opted in"
        n_gpus = int(count.get(key, 1))
        vendor = (vendors or {}).get(key, catalog.NVIDIA)
        findings.append(Finding(
            namespace=namespace, pod=name, gpus=n_gpus, utilization=round(value, 2),
            memory_used_mib=round(mem.get(key, 0.0), 1), observed_seconds=round(observed, 1),
            owner_kind=owner_kind, owner_name=owner_name, idle=idle, opted_in=opted_in, reason=reason,
            recommendation=recommend(n_gpus, value, mem.get(key, 0.0), policy.pools, vendor) if idle else None,
            vendor=vendor,
        ))
    return findings
