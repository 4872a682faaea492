"""Kubernetes version skew between two plans: a control plane moves one minor at a time, never down.

Every managed cloud refuses a control-plane upgrade that skips a minor (EKS ``UpdateClusterVersion``, AKS, GKE and
OKE all upgrade to the next minor only) and none downgrades one; Kubernetes' own policy is the same
(https://kubernetes.io/releases/version-skew-policy/#supported-component-upgrade-order).
"""

import re
from typing import Optional

_MINOR = re.compile(r"^v?1\.(\d+)(?:\.\d+)?$")


def minor_of(version: str) -> int:
    """``1.35`` / ``v1.35.2`` -> 35. Raises ValueError for anything else."""
    match = _MINOR.match(str(version).strip())
    if not match:
        raise ValueError(f"'{version}' is not a Kubernetes version such as 1.35")
    return int(match.group(1))


def control_plane_step_problem(old_minor: str, new_minor: str) -> Optional[str]:
    """Why a control plane cannot go from ``old_minor`` to ``new_minor`` in one step, or None when it can (the same
    minor, or the next one)."""
    old, new = minor_of(old_minor), minor_of(new_minor)
    if new < old:
        return (f"Kubernetes control planes cannot be downgraded: {old_minor} -> {new_minor}; "
                f"keep kubernetesVersion at {old_minor} or later")
    if new > old + 1:
        skipped = ", ".join(f"1.{m}" for m in range(old + 1, new))
        return (f"Kubernetes control planes upgrade one minor at a time: {old_minor} -> {new_minor} skips {skipped}; "
                f"plan 1.{old + 1} first")
    return None
