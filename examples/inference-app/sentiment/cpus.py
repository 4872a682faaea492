"""How many CPU threads each model worker gets: the CPUs this container may use, minus one for the HTTP server,
shared among the workers.

PyTorch's default is one thread per core of the node, which ignores the container's CPU limit (a pod limited to
2 CPUs on a 64-core node would run 64 threads and be throttled) and leaves no core for the event loop. With a
core to itself the event loop never preempts a forward pass, whose threads wait for each other at every
operator (measured on 2 cores, tiny model, 64 clients: 4100 texts/s with one forward thread, 3000-3300 with
two). On a GPU the threads only launch kernels, so the choice hardly matters there.
"""

import math
import os
from pathlib import Path
from typing import Optional

CGROUP_V2_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1_QUOTA = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
CGROUP_V1_PERIOD = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def cgroup_cpu_limit(v2: Path = CGROUP_V2_CPU_MAX, v1_quota: Path = CGROUP_V1_QUOTA,
                     v1_period: Path = CGROUP_V1_PERIOD) -> Optional[float]:
    """The container's CPU limit in CPUs (cgroup v2 ``cpu.max`` or v1 CFS quota), None when unlimited."""
    try:
        quota, period = v2.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int(v1_quota.read_text())
        return None if quota_us <= 0 else quota_us / int(v1_period.read_text())
    except (OSError, ValueError):
        return None


def available_cpus() -> float:
    """CPUs this process may use: its affinity mask, capped by the container's CPU limit."""
    cpus = float(len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else float(os.cpu_count() or 1)
    limit = cgroup_cpu_limit()
    return min(cpus, limit) if limit else cpus


def forward_threads(requested: int, workers: int = 1, cpus: Optional[float] = None) -> int:
    """Threads per model worker: ``TORCH_THREADS`` when set (> 0), else every whole CPU but one, shared among the
    ``workers`` (one at least)."""
    if requested > 0:
        return requested
    cpus = available_cpus() if cpus is None else cpus
    return max(1, (math.floor(cpus) - 1) // workers)
