"""``health``: GPU and RDMA node health, active checks and remediation, typed and validated.

On by default on every stack (`kube.health` deploys it, docs/health.md explains it):

- passive: node-problem-detector on the accelerator pools turns kernel messages (NVIDIA XIDs by class, RDMA link
  state) into node conditions and Events (`health_catalog`);
- ``activeChecks``: a CronJob per NVIDIA or AMD pool that runs on an idle node (it requests every accelerator of the
  node) DCGM diagnostics at ``dcgmDiagLevel`` (NVIDIA) and, with ``allReduce``, a single-node NCCL/RCCL all-reduce
  on multi-GPU nodes, then labels the node ``passed`` or ``failed``; the platform's workloads avoid failed nodes;
- ``remediation``: a controller that quarantines (cordons and taints; with ``drain`` also evicts) nodes with a fatal
  condition, never more than ``maxQuarantinedPerPool`` nodes and ``maxQuarantinedPercent`` % of a pool at once, at
  most one action per ``cooldownMinutes``, and releases them after a passing active check. ``dry-run`` (the default)
  only records what it would do, as Kubernetes Events and metrics.

A key that cannot take effect is refused (`check_health`): ``activeChecks`` settings while the checks are off or the
stack has no NVIDIA or AMD pool, ``dcgmDiagLevel`` without an NVIDIA pool, ``allReduce: true`` without a pool of
several NVIDIA or AMD GPUs per node, anything below a section that is off.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

REMEDIATION_MODES = ("dry-run", "cordon", "drain")
DCGM_DIAG_LEVELS = (1, 2, 3, 4)
KEYS = {"enabled", "activeChecks", "remediation"}
ACTIVE_CHECK_KEYS = {"enabled", "schedule", "dcgmDiagLevel", "allReduce"}
REMEDIATION_KEYS = {"mode", "maxQuarantinedPerPool", "maxQuarantinedPercent", "cooldownMinutes"}
CHECKED_VENDORS = ("nvidia", "amd")
"""Vendors whose pools get an active check: DCGM diagnostics (NVIDIA) and an all-reduce on NCCL or RCCL."""


@dataclass(frozen=True)
class ActiveChecksConfig:
    """``health.activeChecks``: the periodic checks on idle nodes of each NVIDIA or AMD pool."""

    enabled: bool = True
    """Run the checks (a CronJob per NVIDIA or AMD pool)."""
    schedule: str = "0 */6 * * *"
    """Cron schedule of each pool's check (default every 6 hours). A run lands only on an idle node: it requests
    every GPU of the node, at the lowest priority."""
    dcgm_diag_level: int = 2
    """``dcgmDiagLevel``: ``dcgmi diag -r`` level on NVIDIA pools, 1 (seconds) to 4 (hours); 2 takes a few
    minutes."""
    all_reduce: bool = True
    """``allReduce``: also run a single-node NCCL (NVIDIA) or RCCL (AMD) all-reduce on pools with several GPUs per
    node."""


@dataclass(frozen=True)
class RemediationConfig:
    """``health.remediation``: what the controller does about nodes with a fatal condition."""

    mode: str = "dry-run"
    """``dry-run`` (record what would be done, change nothing), ``cordon`` (cordon and taint the node) or ``drain``
    (also evict its pods, respecting PodDisruptionBudgets)."""
    max_quarantined_per_pool: int = 1
    """``maxQuarantinedPerPool``: most nodes of one pool quarantined at once."""
    max_quarantined_percent: int = 10
    """``maxQuarantinedPercent``: most nodes of one pool quarantined at once, in percent of its nodes (the smaller
    of the two caps wins; at least one node when the count cap allows it)."""
    cooldown_minutes: int = 60
    """``cooldownMinutes``: least time between two quarantines in one pool."""


@dataclass(frozen=True)
class HealthConfig:
    """``health``: passive conditions, active checks and remediation (dry-run by default)."""

    enabled: bool = True
    """Deploy the health checks and remediation (default true)."""
    active_checks: ActiveChecksConfig = field(default_factory=ActiveChecksConfig)
    """``activeChecks``: DCGM diagnostics and an all-reduce on idle nodes, reported as a node label."""
    remediation: RemediationConfig = field(default_factory=RemediationConfig)
    """Quarantine of nodes with fatal conditions: dry-run by default, capped per pool, with a cool-down."""


def parse_health(raw: Mapping, cloud: str) -> HealthConfig:
    """The ``health`` section of a stack's configuration (``raw`` is the whole stack configuration)."""
    from ..errors import ConfigError
    from ..fields import check_keys, join, read_bool
    from ..fields import section as _section

    sec = _section(raw, "health")
    check_keys(sec, KEYS, "health")
    enabled = read_bool(sec, "enabled", "health", True)
    for key in ("activeChecks", "remediation"):
        if not enabled and sec.get(key) is not None:
            raise ConfigError(join("health", key), "takes effect only with health.enabled: true")
    return HealthConfig(enabled=enabled, active_checks=parse_active_checks(sec),
                        remediation=parse_remediation(sec))


def parse_active_checks(sec: Mapping) -> ActiveChecksConfig:
    """``health.activeChecks`` (``sec``: the ``health`` section)."""
    from ..errors import ConfigError
    from ..fields import as_mapping, check_keys, join, read_bool, read_int, read_str

    path = "health.activeChecks"
    checks = as_mapping(sec["activeChecks"], path) if sec.get("activeChecks") is not None else {}
    check_keys(checks, ACTIVE_CHECK_KEYS, path)
    enabled = read_bool(checks, "enabled", path, True)
    for key in sorted(ACTIVE_CHECK_KEYS - {"enabled"}):
        if not enabled and checks.get(key) is not None:
            raise ConfigError(join(path, key), "takes effect only with health.activeChecks.enabled: true")
    schedule = read_str(checks, "schedule", path, ActiveChecksConfig.schedule)
    if len(str(schedule).split()) != 5:
        raise ConfigError(join(path, "schedule"), f"'{schedule}' is not a five-field cron schedule")
    level = read_int(checks, "dcgmDiagLevel", path, ActiveChecksConfig.dcgm_diag_level)
    if level not in DCGM_DIAG_LEVELS:
        raise ConfigError(join(path, "dcgmDiagLevel"), f"must be 1, 2, 3 or 4 (dcgmi diag -r), got {level}")
    return ActiveChecksConfig(enabled=enabled, schedule=schedule, dcgm_diag_level=level,
                              all_reduce=read_bool(checks, "allReduce", path, True))


def parse_remediation(sec: Mapping) -> RemediationConfig:
    """``health.remediation`` (``sec``: the ``health`` section)."""
    from ..errors import ConfigError
    from ..fields import as_mapping, check_keys, join, read_enum, read_int

    path = "health.remediation"
    rem = as_mapping(sec["remediation"], path) if sec.get("remediation") is not None else {}
    check_keys(rem, REMEDIATION_KEYS, path)
    percent = read_int(rem, "maxQuarantinedPercent", path, RemediationConfig.max_quarantined_percent, minimum=1)
    if percent > 100:
        raise ConfigError(join(path, "maxQuarantinedPercent"), f"must be <= 100, got {percent}")
    return RemediationConfig(
        mode=read_enum(rem, "mode", path, REMEDIATION_MODES, RemediationConfig.mode),
        max_quarantined_per_pool=read_int(rem, "maxQuarantinedPerPool", path,
                                          RemediationConfig.max_quarantined_per_pool, minimum=1),
        max_quarantined_percent=percent,
        cooldown_minutes=read_int(rem, "cooldownMinutes", path, RemediationConfig.cooldown_minutes, minimum=0),
    )


UNCHECKED_SHARING = ("mig", "hami")
"""Sharing modes whose nodes one pod cannot take whole through the device plugin's ``nvidia.com/gpu``: MIG devices
are other resources (and DCGM diagnostics do not run on MIG instances); HAMi's plugin owns the resource."""


def checkable(pool: Any) -> bool:
    """Whether a pool (`GpuPool`) gets an active check: NVIDIA or AMD GPUs a pod can take whole through the device
    plugin (not MIG, DRA or HAMi pools). Neuron and TPU pools have their vendors' own health tooling
    (docs/health.md)."""
    return pool.vendor in CHECKED_VENDORS and not pool.dra and pool.sharing.mode not in UNCHECKED_SHARING


def checked_pools(pools: list) -> list:
    """The pools that get an active check (`checkable`)."""
    return [p for p in pools if checkable(p)]


def all_reduce_pools(pools: list) -> list:
    """The checked pools whose nodes hold several GPUs: a single-node all-reduce needs two ranks at least."""
    return [p for p in checked_pools(pools) if p.gpus_per_node > 1]


def check_health(config: Any, raw: Mapping) -> None:
    """Refuse ``health`` keys that the stack's pools cannot honour (``raw``: the whole stack configuration, to tell
    a key given from its default)."""
    from ..errors import ConfigError
    from ..fields import join

    health: HealthConfig = config.health
    if not health.enabled:
        return
    check_remediation_cap(config, raw)
    checks = (raw.get("health") or {}).get("activeChecks") or {}
    pools = config.gpu_pools()
    path = "health.activeChecks"
    if health.active_checks.enabled and not checked_pools(pools):
        for key in sorted(ACTIVE_CHECK_KEYS - {"enabled"}):
            if checks.get(key) is not None:
                raise ConfigError(join(path, key), "takes effect only on a stack with an NVIDIA or AMD GPU pool "
                                                   "that a pod can take whole (not MIG, DRA or HAMi)")
    if checks.get("dcgmDiagLevel") is not None and not any(p.vendor == "nvidia" for p in checked_pools(pools)):
        raise ConfigError(join(path, "dcgmDiagLevel"), "takes effect only on a stack with an NVIDIA GPU pool that "
                                                       "a pod can take whole (DCGM diagnostics are NVIDIA's)")
    if checks.get("allReduce") is True and not all_reduce_pools(pools):
        raise ConfigError(join(path, "allReduce"), "takes effect only on a pool with several NVIDIA or AMD GPUs "
                                                   "per node (a single-node all-reduce needs two ranks)")


def check_remediation_cap(config: Any, raw: Mapping) -> None:
    """Refuse ``health.remediation`` caps that could quarantine every node of a pool of two or more (docs/health.md:
    remediation never takes a pool down), naming the setting and the pool."""
    from ..errors import ConfigError
    from . import health_catalog, remediation

    rem = config.health.remediation
    names = [p.get("name") for p in raw.get("nodePools") or [] if isinstance(p, Mapping)]
    for pool in config.gpu_pools():
        if pool.vendor not in health_catalog.WATCHED_VENDORS:
            continue
        size = remediation.size_taken_down(pool.min_nodes, pool.max_nodes, rem.max_quarantined_per_pool,
                                           rem.max_quarantined_percent)
        if size is not None:
            where = f"nodePools[{names.index(pool.name)}]" if pool.name in names else "node pool"
            raise ConfigError("health.remediation.maxQuarantinedPerPool",
                              f"{rem.max_quarantined_per_pool} with maxQuarantinedPercent "
                              f"{rem.max_quarantined_percent} could quarantine every node of {where} '{pool.name}' at "
                              f"{size} nodes: remediation must never take a pool down; lower either")
