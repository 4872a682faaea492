"""The remediation controller's decisions, as pure functions: which node to quarantine, release, drain or leave.

Remediation must never cascade (a fleet where one job crash flagged 77 nodes is the failure mode to avoid), so every
quarantine passes three guards, per pool:

- the cap: at most ``min(maxQuarantinedPerPool, max(1, floor(size * maxQuarantinedPercent / 100)))`` nodes of a pool
  out of service at once; settings whose cap reaches every node of a pool of two or more are refused before anything
  is deployed (`size_taken_down`); ``0`` in either setting turns quarantine off.
  The floor of one lets a pool of fewer than ``100 / percent`` nodes still isolate a broken node (a 10 % cap would
  otherwise never act on a 4-node pool). Nodes
  cordoned by someone else (an operator, a node upgrade, the autoscaler) count against the cap too: the cap protects
  the pool's capacity, and a rolling upgrade is exactly when a common cause (a driver mismatch) fails many nodes.
- the cool-down: no new quarantine in a pool within ``cooldownMinutes`` of the previous one there, so even a slow
  trickle of false alarms takes out one node per window, not the pool.
- the storm brake: when more of a pool's nodes show a fatal condition than the cap allows, the ones beyond the cap
  are left alone with a "suspect a common cause" skip; a human looks before anything else is taken out.

Dry-run (the default mode) computes the same decisions and the controller only records them.
"""

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional

from .. import labels
from . import health_catalog

MODES = ("dry-run", "cordon", "drain")
DEFAULT_FATAL_CONDITIONS = (*health_catalog.fatal_conditions(), labels.HEALTH_CHECK_CONDITION)
"""The node conditions that quarantine a node by default: those node-problem-detector sets for fatal XIDs
(`health_catalog.fatal_conditions`) and the active check's."""

QUARANTINE, RELEASE, DRAIN, SKIP = "quarantine", "release", "drain", "skip"
WHY_CAP, WHY_COOLDOWN, WHY_STORM = "cap", "cooldown", "storm"


class PolicyError(ValueError):
    """A remediation setting that cannot be used; the message names the field."""


@dataclass(frozen=True)
class RemediationPolicy:
    """The controller's settings (the JSON file ``gpu-platform remediate --config`` reads)."""

    mode: str = "dry-run"
    """``dry-run`` (record decisions only), ``cordon`` (cordon + taint) or ``drain`` (also evict the node's pods)."""
    max_quarantined_per_pool: int = 1
    """Most nodes of one pool out of service at once (``maxQuarantinedPerPool``; 0 turns quarantine off)."""
    max_quarantined_percent: int = 10
    """Most nodes of one pool out of service at once, as a percentage of the pool (``maxQuarantinedPercent``)."""
    cooldown_minutes: int = 60
    """No new quarantine in a pool within this many minutes of the previous one (``cooldownMinutes``)."""
    fatal_conditions: tuple[str, ...] = DEFAULT_FATAL_CONDITIONS
    """Node condition types that, when ``True``, call for quarantine (``fatalConditions``)."""
    pool_label: str = labels.POOL_LABEL
    """Node label naming the pool a node belongs to (``poolLabel``); nodes without it are never touched."""
    interval_seconds: int = 60
    """Seconds between passes (``intervalSeconds``, at least 10)."""
    release_after_passing_check: bool = True
    """Release a node this controller quarantined once a newer active check passed (``releaseAfterPassingCheck``)."""

    @property
    def dry_run(self) -> bool:
        """Whether decisions are only recorded."""
        return self.mode == "dry-run"


_KEYS = {
    "mode": "mode", "maxQuarantinedPerPool": "max_quarantined_per_pool",
    "maxQuarantinedPercent": "max_quarantined_percent", "cooldownMinutes": "cooldown_minutes",
    "fatalConditions": "fatal_conditions", "poolLabel": "pool_label", "intervalSeconds": "interval_seconds",
    "releaseAfterPassingCheck": "release_after_passing_check",
}


def _int(raw: Mapping, key: str, low: int, high: Optional[int] = None) -> int:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"
        raise PolicyError(f"{key}: {value!r} is not {bound}")
    return value


def parse_policy(raw: Any) -> RemediationPolicy:
    """Validate the settings mapping (camelCase keys, all optional); one-line `PolicyError` on anything wrong."""
    if not isinstance(raw, Mapping):
        raise PolicyError("the remediation config must be a JSON object")
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise PolicyError(f"{unknown[0]}: unknown key (known: {', '.join(sorted(_KEYS))})")
    values: dict[str, Any] = {}
    if "mode" in raw:
        if raw["mode"] not in MODES:
            raise PolicyError(f"mode: {raw['mode']!r} is not one of {', '.join(MODES)}")
        values["mode"] = raw["mode"]
    for key, low, high in (("maxQuarantinedPerPool", 0, None), ("maxQuarantinedPercent", 0, 100),
                           ("cooldownMinutes", 0, None), ("intervalSeconds", 10, None)):
        if key in raw:
            values[_KEYS[key]] = _int(raw, key, low, high)
    if "fatalConditions" in raw:
        conditions = raw["fatalConditions"]
        if (not isinstance(conditions, list) or not conditions
                or not all(isinstance(c, str) and c.strip() == c and c for c in conditions)):
            raise PolicyError("fatalConditions: must be a non-empty list of node condition types")
        values["fatal_conditions"] = tuple(dict.fromkeys(conditions))
    if "poolLabel" in raw:
        if not isinstance(raw["poolLabel"], str) or not raw["poolLabel"]:
            raise PolicyError("poolLabel: must be a non-empty label key")
        values["pool_label"] = raw["poolLabel"]
    if "releaseAfterPassingCheck" in raw:
        if not isinstance(raw["releaseAfterPassingCheck"], bool):
            raise PolicyError(f"releaseAfterPassingCheck: {raw['releaseAfterPassingCheck']!r} is not true or false")
        values["release_after_passing_check"] = raw["releaseAfterPassingCheck"]
    return RemediationPolicy(**values)


def load_policy(path: Path) -> RemediationPolicy:
    """Read and validate the JSON settings file."""
    try:
        raw = json.loads(path.read_text())
    except OSError as err:
        raise PolicyError(f"cannot read {path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise PolicyError(f"{path}: not valid JSON: {err.msg} at line {err.lineno}") from None
    return parse_policy(raw)


def parse_time(value: Any) -> Optional[datetime]:
    """An RFC 3339 timestamp (``2026-11-25T03:00:00Z``) as an aware datetime; None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def rfc3339(moment: datetime) -> str:
    """``2026-11-25T03:00:00Z``: the format Kubernetes writes (seconds, UTC)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class NodeState:
    """What the decisions need to know about one node (read from the Node object by `node_state`)."""

    name: str
    pool: Optional[str]
    """The node's pool (the policy's pool label); None: not a platform pool node, never touched."""
    unschedulable: bool = False
    """Cordoned (``spec.unschedulable``), by this controller or anyone else."""
    quarantine_reason: Optional[str] = None
    """The value of this controller's quarantine taint; None when the node does not carry it."""
    quarantined_at: Optional[datetime] = None
    """When this controller quarantined the node (its annotation)."""
    fatal: tuple[str, ...] = ()
    """Fatal condition types currently True, sorted."""
    fatal_since: Optional[datetime] = None
    """Earliest ``lastTransitionTime`` among the True fatal conditions."""
    health_check: Optional[str] = None
    """The active check's label: ``passed``, ``failed`` or None."""
    checked_at: Optional[datetime] = None
    """When the last active check ran (detail annotation, or the check condition's times)."""

    @property
    def quarantined(self) -> bool:
        """Quarantined by this controller (its taint is on the node)."""
        return self.quarantine_reason is not None


def node_state(node: Mapping, policy: RemediationPolicy) -> NodeState:
    """Read a Node (the API's JSON form, camelCase) into a `NodeState`."""
    meta = node.get("metadata") or {}
    node_labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    spec = node.get("spec") or {}
    ours = [t for t in spec.get("taints") or [] if t.get("key") == labels.QUARANTINE_TAINT_KEY]
    fatal, since, check_times = [], [], []
    for condition in (node.get("status") or {}).get("conditions") or []:
        kind = condition.get("type")
        if kind in policy.fatal_conditions and condition.get("status") == "True":
            fatal.append(kind)
            if parse_time(condition.get("lastTransitionTime")):
                since.append(parse_time(condition.get("lastTransitionTime")))
        if kind == labels.HEALTH_CHECK_CONDITION:
            check_times += [parse_time(condition.get(k)) for k in ("lastTransitionTime", "lastHeartbeatTime")]
    detail = str(annotations.get(labels.HEALTH_CHECK_DETAIL_ANNOTATION, ""))
    check_times.append(parse_time(detail.split(" ", 1)[0]) if detail else None)
    known_checks = [t for t in check_times if t is not None]
    return NodeState(
        name=meta.get("name", ""),
        pool=node_labels.get(policy.pool_label) or None,
        unschedulable=bool(spec.get("unschedulable")),
        quarantine_reason=(ours[0].get("value") or "unknown") if ours else None,
        quarantined_at=parse_time(annotations.get(labels.QUARANTINED_AT_ANNOTATION)),
        fatal=tuple(sorted(set(fatal))),
        fatal_since=min(since) if since else None,
        health_check=node_labels.get(labels.HEALTH_CHECK_LABEL),
        checked_at=max(known_checks) if known_checks else None,
    )


@dataclass(frozen=True)
class Action:
    """One decision about one node."""

    kind: str
    """``quarantine``, ``release``, ``drain`` (evict the pods of a quarantined node) or ``skip``."""
    node: str
    pool: str
    reason: str
    """Quarantine: the condition type (the taint's value); release: ``passed-check``; drain: the taint's value;
    skip: why (``cap``, ``cooldown``, ``storm``)."""
    message: str
    """One line for the Event."""


@dataclass(frozen=True)
class PoolSummary:
    """The guards' view of one pool in one pass (for metrics)."""

    pool: str
    size: int
    cap: int
    quarantined: int
    """Nodes carrying this controller's taint."""
    out_of_service: int
    """Quarantined plus cordoned by someone else."""
    unhealthy: int
    """Nodes with a fatal condition True."""
    storm: bool


@dataclass(frozen=True)
class Plan:
    """Every decision of a pass, pools and nodes in sorted order (deterministic for the same input)."""

    actions: tuple[Action, ...]
    pools: tuple[PoolSummary, ...] = field(default=())

    def of(self, kind: str) -> tuple[Action, ...]:
        """The actions of one kind."""
        return tuple(a for a in self.actions if a.kind == kind)


def pool_cap(size: int, policy: RemediationPolicy) -> int:
    """Most nodes of a pool of ``size`` that may be out of service at once (see the module docstring)."""
    return configured_cap(size, policy.max_quarantined_per_pool, policy.max_quarantined_percent)


def configured_cap(size: int, per_pool: int, percent: int) -> int:
    """The cap of a pool of ``size`` under the two settings (`pool_cap`)."""
    if size <= 0 or per_pool == 0 or percent == 0:
        return 0
    return min(per_pool, max(1, math.floor(size * percent / 100)))


def size_taken_down(min_nodes: int, max_nodes: int, per_pool: int, percent: int) -> Optional[int]:
    """The smallest size of a pool of ``min_nodes`` to ``max_nodes`` nodes, two at least, whose cap reaches every node
    (the settings could quarantine the whole pool), or None. One node is left out: the floor of one lets a single-node
    pool isolate its broken node, by design."""
    for size in range(max(2, min_nodes), min(max_nodes, per_pool) + 1):
        if configured_cap(size, per_pool, percent) >= size:
            return size
    return None


def releasable(node: NodeState, policy: RemediationPolicy) -> bool:
    """This controller's quarantine may end: a check newer than the quarantine passed and no fatal condition is
    True. A node without this controller's taint is never released (someone else cordoned it)."""
    return (policy.release_after_passing_check and node.quarantined and not node.fatal
            and node.health_check == "passed" and node.checked_at is not None
            and node.quarantined_at is not None and node.checked_at > node.quarantined_at)


def decide(nodes: Iterable[NodeState], policy: RemediationPolicy, now: datetime,
           last_quarantine: Optional[Mapping[str, datetime]] = None) -> Plan:
    """Every decision of one pass. ``last_quarantine``: the controller's memory of the latest quarantine per pool
    (the cool-down also reads the quarantine annotations, so it survives restarts)."""
    last_quarantine = last_quarantine or {}
    by_pool: dict[str, list[NodeState]] = {}
    for node in nodes:
        if node.pool:
            by_pool.setdefault(node.pool, []).append(node)
    actions: list[Action] = []
    summaries: list[PoolSummary] = []
    cooldown = timedelta(minutes=policy.cooldown_minutes)
    for pool in sorted(by_pool):
        members = sorted(by_pool[pool], key=lambda n: n.name)
        cap = pool_cap(len(members), policy)
        ours = [n for n in members if n.quarantined]
        others = [n for n in members if n.unschedulable and not n.quarantined]
        unhealthy = [n for n in members if n.fatal]
        for node in ours:
            if releasable(node, policy):
                actions.append(Action(RELEASE, node.name, pool, "passed-check",
                                      f"active check passed at {rfc3339(node.checked_at)} after the quarantine "
                                      f"({node.quarantine_reason}); no fatal condition left"))
            elif policy.mode == "drain":
                actions.append(Action(DRAIN, node.name, pool, node.quarantine_reason or "unknown",
                                      f"evicting the pods of quarantined node ({node.quarantine_reason})"))
        # Released nodes still count in this pass: if a release fails, the cap still holds.
        out_of_service = len(ours) + len(others)
        storm = len(unhealthy) > cap
        slots = max(0, cap - out_of_service)
        times = [t for t in [last_quarantine.get(pool)] + [n.quarantined_at for n in ours] if t is not None]
        last = max(times) if times else None
        candidates = sorted((n for n in unhealthy if not n.quarantined and not n.unschedulable),
                            key=lambda n: (n.fatal_since or now, n.name))
        for node in candidates:
            reason = node.fatal[0]
            conditions = ", ".join(node.fatal)
            if slots == 0 and storm:
                actions.append(Action(SKIP, node.name, pool, WHY_STORM,
                                      f"too many unhealthy nodes: suspect a common cause ({len(unhealthy)} of "
                                      f"{len(members)} nodes in pool {pool} show fatal conditions, cap {cap}); "
                                      f"not quarantined for {conditions}"))
            elif slots == 0:
                actions.append(Action(SKIP, node.name, pool, WHY_CAP,
                                      f"pool {pool} already has {out_of_service} of {len(members)} nodes out of "
                                      f"service (cap {cap}); not quarantined for {conditions}"))
            elif last is not None and now - last < cooldown:
                actions.append(Action(SKIP, node.name, pool, WHY_COOLDOWN,
                                      f"pool {pool} quarantined a node at {rfc3339(last)} (cool-down "
                                      f"{policy.cooldown_minutes} min); not quarantined for {conditions}"))
            else:
                actions.append(Action(QUARANTINE, node.name, pool, reason,
                                      f"fatal condition {conditions}: cordoned and tainted "
                                      f"{labels.QUARANTINE_TAINT_KEY}={taint_value(reason)}:NoSchedule"))
                if policy.mode == "drain":
                    actions.append(Action(DRAIN, node.name, pool, reason,
                                          f"evicting the pods of quarantined node ({reason})"))
                slots -= 1
                last = now
        summaries.append(PoolSummary(pool, len(members), cap, len(ours), out_of_service, len(unhealthy), storm))
    return Plan(tuple(actions), tuple(summaries))


def taint_value(reason: str) -> str:
    """``reason`` as a taint value (a label value: 63 characters of ``[A-Za-z0-9._-]``, alphanumeric at both ends);
    condition types normally are one already."""
    value = re.sub(r"[^A-Za-z0-9._-]", "-", reason)[:63].strip("-._")
    return value or "fatal"


def quarantine_patch(node: Mapping, reason: str, now: datetime) -> dict:
    """Strategic-merge patch that cordons the node, adds the quarantine taint and records when.

    ``spec.taints`` has no merge strategy on Node, so the patch carries the whole list; the resourceVersion makes the
    API server refuse it (409) if the node changed since it was read, and the next pass retries."""
    meta = node.get("metadata") or {}
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != labels.QUARANTINE_TAINT_KEY]
    taints.append({"key": labels.QUARANTINE_TAINT_KEY, "value": taint_value(reason), "effect": "NoSchedule"})
    patch: dict[str, Any] = {"metadata": {"annotations": {labels.QUARANTINED_AT_ANNOTATION: rfc3339(now)}},
                             "spec": {"unschedulable": True, "taints": taints}}
    if meta.get("resourceVersion"):
        patch["metadata"]["resourceVersion"] = meta["resourceVersion"]
    return patch


def release_patch(node: Mapping) -> dict:
    """Strategic-merge patch that removes the quarantine taint and annotation and uncordons the node."""
    meta = node.get("metadata") or {}
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != labels.QUARANTINE_TAINT_KEY]
    patch: dict[str, Any] = {"metadata": {"annotations": {labels.QUARANTINED_AT_ANNOTATION: None}},
                             "spec": {"unschedulable": False, "taints": taints}}
    if meta.get("resourceVersion"):
        patch["metadata"]["resourceVersion"] = meta["resourceVersion"]
    return patch


def pods_to_evict(pods: Sequence[Mapping]) -> list[tuple[str, str]]:
    """(namespace, name) of the pods a drain evicts, sorted: not DaemonSet pods (their controller puts them back and
    tolerates cordons), not mirror pods (the kubelet owns static pods), not pods already finished or terminating."""
    chosen = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if any(ref.get("kind") == "DaemonSet" for ref in meta.get("ownerReferences") or []):
            continue
        if labels.MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}):
            continue
        if meta.get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        chosen.append((meta.get("namespace", ""), meta.get("name", "")))
    return sorted(chosen)


def eviction_body(namespace: str, name: str) -> dict:
    """The policy/v1 Eviction for one pod: the API server honours the pod's PodDisruptionBudgets (429 when one
    forbids it)."""
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
