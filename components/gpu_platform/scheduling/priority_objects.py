"""PriorityClasses and Kueue WorkloadPriorityClasses built from the platform's priority tiers.

Both are needed: a pod's PriorityClass orders kube-scheduler's queue and drives its preemption, while Kueue
orders and preempts whole workloads by the WorkloadPriorityClass named in the ``kueue.x-k8s.io/priority-class``
label. Each tier gets one of each, with the same name and value, so a workload carries one name for both.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from .. import catalog
from ..kubernetes_base.common import metadata
from ..pools import GpuPool
from ..versions import KUEUE_API_VERSION
from .priorities import PER_GPU_TIERS, TIERS, PriorityTier, per_gpu_class_name


@dataclass(frozen=True)
class PriorityClassSpec:
    """One class: its name, the tier it belongs to, and the GPU model for per-GPU classes."""

    name: str
    tier: PriorityTier
    gpu_model: Optional[str] = None

    @property
    def description(self) -> str:
        if self.gpu_model is None:
            return self.tier.description
        return f"{self.tier.description} On {catalog.GPU_MODELS[self.gpu_model].display_name} GPUs."


def class_specs(pools: Sequence[GpuPool], per_gpu: bool) -> list[PriorityClassSpec]:
    """Every tier, then ``high-priority-<gpu>`` / ``medium-priority-<gpu>`` per GPU model when asked for."""
    specs = [PriorityClassSpec(t.name, t) for t in TIERS]
    if per_gpu:
        models = sorted({p.gpu_model for p in pools})
        specs += [PriorityClassSpec(per_gpu_class_name(t, m), t, m) for t in PER_GPU_TIERS for m in models]
    return specs


def priority_class(spec: PriorityClassSpec, default_tier: Optional[str]) -> dict:
    """A ``scheduling.k8s.io/v1`` PriorityClass; ``globalDefault`` only on the configured default tier."""
    return {
        "metadata": metadata(spec.name),
        "value": spec.tier.value,
        "preemptionPolicy": spec.tier.preemption_policy,
        "globalDefault": spec.gpu_model is None and spec.name == default_tier,
        "description": spec.description,
    }


def workload_priority_class(spec: PriorityClassSpec) -> dict:
    """The matching Kueue WorkloadPriorityClass (``value`` and ``description`` are top-level fields)."""
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": metadata(spec.name),
        "value": spec.tier.value,
        "description": spec.description,
    }


def workload_class_name(tier: PriorityTier, pool: GpuPool, per_gpu: bool) -> str:
    """The class a workload of ``tier`` on ``pool`` names: the per-GPU class where one exists."""
    if per_gpu and tier in PER_GPU_TIERS:
        return per_gpu_class_name(tier, pool.gpu_model)
    return tier.name
