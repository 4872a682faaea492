"""The platform's priority tiers: one table every layer (PriorityClasses, Kueue, workloads) reads.

Values leave room above for Kubernetes' own system classes (2e9) and below for users' classes.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class PriorityTier:
    """One priority tier: a PriorityClass and a matching Kueue WorkloadPriorityClass."""

    name: str
    value: int
    preemption_policy: str
    """``PreemptLowerPriority`` or ``Never`` (a pod that waits rather than evicts others)."""
    description: str


INFERENCE_CRITICAL = PriorityTier(
    "inference-critical", 100000, "PreemptLowerPriority", "Online inference serving user traffic.")
HIGH = PriorityTier("high-priority", 10000, "PreemptLowerPriority", "Production training and scheduled retraining.")
MEDIUM = PriorityTier("medium-priority", 1000, "PreemptLowerPriority", "Interactive and development GPU work.")
LOW = PriorityTier("low-priority", 100, "Never", "Preemptible batch work that never evicts others.")

TIERS = (INFERENCE_CRITICAL, HIGH, MEDIUM, LOW)
PER_GPU_TIERS = (HIGH, MEDIUM)
"""Tiers that also get a per-GPU-model class (``high-priority-h100``) when configured."""


def per_gpu_class_name(tier: PriorityTier, gpu_model: str) -> str:
    """``high-priority-h100``: the per-GPU-model class name pattern."""
    return f"{tier.name}-{gpu_model}"
