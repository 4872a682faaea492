"""What an upgrade would disrupt: the comparison of two offline plans (``gpu-platform diff``).

Two plans of the same stack (``plan.json`` as ``gpu-platform plan`` writes it) are matched resource by resource on
their URN; a Kubernetes object whose type's API version changed while its kind, namespace and name did not is the
same object under a new version. Per resource: added (``+``), removed (``-``) or changed (``~``) with each changed
input as a dotted path and its old and new value; then one verdict:

- **disruptive** where the change replaces or rolls GPU nodes, upgrades the control plane, deletes or replaces state
  (file systems, buckets, KMS keys, volumes and claims), replaces a Kueue ResourceFlavor or Topology (admitted jobs
  are requeued) or moves a custom resource to another CRD version;
- **in-place** otherwise.

Which input replaces what is `replacements.RULES`. Changes are listed control plane first, node pools after, then
everything else, the order in which an upgrade applies them. Pure: the caller reads the files (`load_plans`).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import replacements as rp
from .version_skew import control_plane_step_problem

PLAN_FILE = "plan.json"
JSON_FORMAT = 1
"""Version of the ``--json`` document; it changes only when a key changes meaning or goes away."""

_MISSING = object()
"""An input absent on one side of a change."""

ADDED, REMOVED, CHANGED = "+", "-", "~"
ACTION_NAMES = {ADDED: "added", REMOVED: "removed", CHANGED: "changed"}
_ORDER = {rp.CONTROL_PLANE_KIND: 0, rp.POOL_KIND: 1}

# Kubernetes API groups served by the API server itself; any other group belongs to a CustomResourceDefinition.
BUILT_IN_GROUPS = frozenset({
    "core", "apps", "batch", "policy", "autoscaling", "networking.k8s.io", "rbac.authorization.k8s.io",
    "scheduling.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io",
    "resource.k8s.io", "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io", "certificates.k8s.io",
    "flowcontrol.apiserver.k8s.io", "apiregistration.k8s.io", "events.k8s.io"})


class PlanError(ValueError):
    """Bad input to a comparison: a missing file, a document that is not a plan, plans of different stacks, a refused
    Kubernetes minor step. The message is one line."""


@dataclass(frozen=True)
class Plan:
    """One stack's ``plan.json``, its resources by URN."""

    stack: str
    resources: dict[str, dict]
    cloud: Optional[str] = None
    kubernetes_version: Optional[str] = None
    """``None`` for a plan written before plan.json recorded it."""


@dataclass(frozen=True)
class InputChange:
    """One changed input: its dotted path and the old and new values (`missing` where absent)."""

    path: str
    old: Any
    new: Any


@dataclass(frozen=True)
class Verdict:
    """Disruptive or in place, with a one-line reason (the first of ``reasons``)."""

    disruptive: bool
    reasons: tuple[str, ...]

    @property
    def reason(self) -> str:
        return self.reasons[0]


@dataclass(frozen=True)
class ResourceChange:
    """One resource added, removed or changed, with its verdict."""

    action: str
    urn: str
    type: str
    name: str
    kind: str
    """`replacements.KINDS`' kind: control plane, node pool, stateful, kueue or other."""
    inputs: tuple[InputChange, ...]
    verdict: Verdict
    old_urn: Optional[str] = None
    """The URN in the old plan where it differs (an object whose API version changed)."""


@dataclass
class PlanDiff:
    """The comparison of one stack's old and new plan."""

    stack: str
    cloud: Optional[str]
    old_version: Optional[str]
    new_version: Optional[str]
    changes: list[ResourceChange] = field(default_factory=list)

    @property
    def disruptive(self) -> list[ResourceChange]:
        return [c for c in self.changes if c.verdict.disruptive]

    @property
    def in_place(self) -> list[ResourceChange]:
        return [c for c in self.changes if not c.verdict.disruptive]


def is_missing(value: Any) -> bool:
    """Whether an `InputChange` side is absent."""
    return value is _MISSING


# ---------------------------------------------------------------------------------------------------- loading


def read_plan(document: Any, source: str) -> Plan:
    """A `Plan` from a parsed ``plan.json``; `PlanError` naming ``source`` when it is not one."""
    if not isinstance(document, dict) or not isinstance(document.get("stack"), str) \
            or not isinstance(document.get("resources"), list):
        raise PlanError(f"{source}: not a gpu-platform plan (a plan.json with 'stack' and 'resources')")
    resources = {}
    for index, resource in enumerate(document["resources"]):
        if not isinstance(resource, dict) or not isinstance(resource.get("urn"), str) \
                or not isinstance(resource.get("type"), str):
            raise PlanError(f"{source}: resources[{index}] is not a plan resource (urn, type, name, inputs)")
        resources[resource["urn"]] = resource
    version = document.get("kubernetesVersion")
    return Plan(document["stack"], resources, document.get("cloud"), str(version) if version is not None else None)


def _read_file(path: Path) -> Plan:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise PlanError(f"cannot read {path}: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise PlanError(f"{path}: not a gpu-platform plan (invalid JSON: {err.msg} at line {err.lineno})") from None
    return read_plan(document, str(path))


def load_plans(path: Path) -> dict[str, Plan]:
    """The plans at ``path`` by stack: a ``plan.json`` file, a plan folder holding one (``build/plan/<stack>``), or a
    plan root holding a folder per stack (``build/plan``)."""
    if path.is_file():
        plan = _read_file(path)
        return {plan.stack: plan}
    if not path.is_dir():
        raise PlanError(f"{path}: no such plan file or folder")
    if (path / PLAN_FILE).is_file():
        plan = _read_file(path / PLAN_FILE)
        return {plan.stack: plan}
    plans = {}
    for child in sorted(p for p in path.iterdir() if (p / PLAN_FILE).is_file()):
        plan = _read_file(child / PLAN_FILE)
        plans[plan.stack] = plan
    if not plans:
        raise PlanError(f"{path}: no plan.json in it or in any folder below it (run gpu-platform plan first)")
    return plans


# ---------------------------------------------------------------------------------------------------- diffing


def diff_inputs(old: Any, new: Any, prefix: str = "") -> list[InputChange]:
    """Every leaf that differs between two input trees, as dotted paths (``nodeConfig.taints[0].effect``)."""
    if isinstance(old, dict) and isinstance(new, dict):
        changes = []
        for key in sorted(set(old) | set(new)):
            path = f"{prefix}.{key}" if prefix else str(key)
            changes += diff_inputs(old.get(key, _MISSING), new.get(key, _MISSING), path)
        return changes
    if isinstance(old, list) and isinstance(new, list):
        changes = []
        for index in range(max(len(old), len(new))):
            changes += diff_inputs(old[index] if index < len(old) else _MISSING,
                                   new[index] if index < len(new) else _MISSING, f"{prefix}[{index}]")
        return changes
    if old is _MISSING and isinstance(new, (dict, list)) and new:
        return diff_inputs({} if isinstance(new, dict) else [], new, prefix)
    if new is _MISSING and isinstance(old, (dict, list)) and old:
        return diff_inputs(old, {} if isinstance(old, dict) else [], prefix)
    if old == new and type(old) is type(new):
        return []
    return [InputChange(prefix, old, new)]


def short_type(type_token: str) -> str:
    """``aws:eks/nodeGroup:NodeGroup`` -> ``NodeGroup``."""
    return type_token.rsplit(":", 1)[-1]


def _what(type_token: str, kind: str) -> str:
    if kind == rp.POOL_KIND:
        return {"NodeGroup": "node group", "LaunchTemplate": "launch template", "EC2NodeClass": "EC2NodeClass",
                }.get(short_type(type_token), "node pool")
    if kind == rp.CONTROL_PLANE_KIND:
        return "cluster"
    return short_type(type_token)


def _number(value: Any) -> Optional[float]:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _change_verdict(type_token: str, kind: str, change: InputChange) -> tuple[int, bool, str]:
    """(severity for ordering reasons, disruptive, reason) of one changed input."""
    rule = rp.rule_for(type_token, change.path)
    effect = rule.effect if rule else rp.IN_PLACE
    what, short = _what(type_token, kind), short_type(type_token)
    if effect == rp.CONTROL_PLANE:
        return 0, True, (f"upgrades the control plane: {change.path} {_show(change.old)} -> {_show(change.new)} "
                         "(one way: a control plane is never downgraded; node pools follow)")
    if effect == rp.REPLACE:
        reason = f"{change.path} changes force a new {short}"
        if kind == rp.OTHER_KIND:
            return 9, False, f"replaced, nothing stateful: {reason}"
        consequence = {rp.STATEFUL_KIND: " (its data goes with it)",
                       rp.KUEUE_KIND: " (jobs admitted to it are requeued)"}.get(kind, "")
        return 1, True, f"replaces {what}: {reason}{consequence}"
    if effect == rp.ROLL:
        return 2, True, f"rolls the nodes of {what}: {change.path} changes replace or reimage every node"
    if effect == rp.SHRINK_REPLACES:
        old, new = _number(change.old), _number(change.new)
        if old is not None and new is not None and new < old:
            return 1, True, (f"replaces {what}: {change.path} shrinks {_show(change.old)} -> {_show(change.new)} "
                             "(it only grows; a smaller one is a new, empty one)")
        return 9, False, f"grows in place: {change.path} {_show(change.old)} -> {_show(change.new)}"
    return 9, False, "updates in place"


def judge(change_action: str, type_token: str, inputs: list[InputChange], old_type: Optional[str] = None) -> Verdict:
    """The verdict on one resource change (pure: the type, the action and the changed inputs decide it)."""
    kind = rp.kind_of(type_token)
    what = _what(type_token, kind)
    if change_action == ADDED:
        return Verdict(False, (f"creates {short_type(type_token)}",))
    if change_action == REMOVED:
        consequence = {rp.CONTROL_PLANE_KIND: "the cluster and everything in it go",
                       rp.POOL_KIND: "its nodes and the pods on them go",
                       rp.STATEFUL_KIND: "its data goes with it",
                       rp.KUEUE_KIND: "jobs admitted to it are requeued"}.get(kind)
        if consequence:
            return Verdict(True, (f"deletes {what}: {consequence}",))
        return Verdict(False, (f"deletes {short_type(type_token)}, nothing stateful",))
    reasons: list[tuple[int, bool, str]] = []
    if old_type == type_token:  # paired by an alias: another parent or name, the same cloud resource
        reasons.append((9, False, "moves to a new URN its alias adopts: nothing is replaced"))
    if old_type is not None and old_type != type_token:
        old_version, new_version = _api_version(old_type), _api_version(type_token)
        group = _api_group(type_token)
        if group in BUILT_IN_GROUPS:
            reasons.append((8, False, f"moves to API version {new_version} (was {old_version}), same object"))
        else:
            reasons.append((0, True, f"changes a CRD version: {short_type(type_token)} {old_version} -> "
                                     f"{new_version} (the object is recreated under the new version)"))
    reasons += [_change_verdict(type_token, kind, c) for c in inputs]
    disruptive = sorted({(s, r) for s, d, r in reasons if d})
    if disruptive:
        return Verdict(True, tuple(dict.fromkeys(r for _, r in disruptive)))
    quiet = sorted({(s, r) for s, _, r in reasons})
    return Verdict(False, tuple(dict.fromkeys(r for _, r in quiet)) or ("updates in place",))


def _api_group(type_token: str) -> str:
    """``kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor`` -> ``kueue.x-k8s.io``."""
    return type_token.split(":")[1].rsplit("/", 1)[0]


def _api_version(type_token: str) -> str:
    return type_token.split(":")[1]


def _object_key(resource: dict) -> Optional[tuple[str, str, str]]:
    """(kind, namespace, name) of a Kubernetes object resource; None for anything else."""
    type_token = resource["type"]
    if not type_token.startswith("kubernetes:") or type_token.count(":") != 2 or "/" not in type_token.split(":")[1]:
        return None
    metadata = (resource.get("inputs") or {}).get("metadata") or {}
    return (short_type(type_token), str(metadata.get("namespace") or ""),
            str(metadata.get("name") or resource.get("name") or ""))


def _relevant(resource: dict) -> bool:
    # Components register nothing with a cloud; only custom resources can be disrupted.
    return bool(resource.get("custom", True))


def diff_plans(old: Plan, new: Plan) -> PlanDiff:
    """The comparison of two plans of one stack: every added, removed and changed resource with its verdict,
    control plane first, node pools after, then everything else."""
    if old.stack != new.stack:
        raise PlanError(f"different stacks compared: {old.stack} (old) and {new.stack} (new)")
    old_res = {u: r for u, r in old.resources.items() if _relevant(r)}
    new_res = {u: r for u, r in new.resources.items() if _relevant(r)}
    removed = {u: r for u, r in old_res.items() if u not in new_res}
    added = {u: r for u, r in new_res.items() if u not in old_res}
    # An object whose apiVersion changed has a new URN (the type token carries the version): pair it up again.
    removed_by_key = {k: u for u, r in removed.items() if (k := _object_key(r)) is not None}
    moved: dict[str, str] = {}
    for urn, resource in added.items():
        key = _object_key(resource)
        if key is not None and key in removed_by_key:
            moved[urn] = removed_by_key.pop(key)
    # A resource with an alias naming an old URN is adopted by the engine, not replaced (a child moved under a new
    # component keeps its cloud resource).
    for urn, resource in added.items():
        former = next((a for a in resource.get("aliases") or () if a in removed and a not in moved.values()), None)
        if urn not in moved and former is not None:
            moved[urn] = former
    changes: list[ResourceChange] = []
    for urn in sorted(set(old_res) & set(new_res)):
        before, after = old_res[urn], new_res[urn]
        inputs = diff_inputs(before.get("inputs") or {}, after.get("inputs") or {})
        if inputs:
            changes.append(_change(CHANGED, after, inputs))
    for urn, old_urn in moved.items():
        before, after = old_res[old_urn], new_res[urn]
        inputs = diff_inputs(before.get("inputs") or {}, after.get("inputs") or {})
        changes.append(_change(CHANGED, after, inputs, old=before))
    for urn in sorted(set(removed) - set(moved.values())):
        changes.append(_change(REMOVED, removed[urn], []))
    for urn in sorted(set(added) - set(moved)):
        changes.append(_change(ADDED, added[urn], []))
    changes.sort(key=lambda c: (_ORDER.get(c.kind, 2), c.urn))
    return PlanDiff(new.stack, new.cloud or old.cloud, old.kubernetes_version, new.kubernetes_version, changes)


def _change(action: str, resource: dict, inputs: list[InputChange], old: Optional[dict] = None) -> ResourceChange:
    type_token = resource["type"]
    verdict = judge(action, type_token, inputs, old["type"] if old is not None else None)
    return ResourceChange(action, resource["urn"], type_token, str(resource.get("name") or ""),
                          rp.kind_of(type_token), tuple(inputs), verdict,
                          old["urn"] if old is not None else None)


def version_problem(diff: PlanDiff) -> Optional[str]:
    """Why the new plan's Kubernetes minor cannot follow the old one's, or None (also when either is unknown)."""
    if diff.old_version is None or diff.new_version is None:
        return None
    problem = control_plane_step_problem(diff.old_version, diff.new_version)
    return f"{diff.stack}: {problem}" if problem else None


def compare(old: dict[str, Plan], new: dict[str, Plan]) -> list[PlanDiff]:
    """One `PlanDiff` per stack of two sets of plans (`load_plans`); `PlanError` when they are not the same stacks
    or a stack's Kubernetes minor would skip one or go down."""
    if set(old) != set(new):
        if len(old) == 1 and len(new) == 1:
            raise PlanError(f"different stacks compared: {next(iter(old))} (old) and {next(iter(new))} (new)")
        only_old, only_new = sorted(set(old) - set(new)), sorted(set(new) - set(old))
        detail = "; ".join(part for part in (f"only in OLD: {', '.join(only_old)}" if only_old else "",
                                             f"only in NEW: {', '.join(only_new)}" if only_new else "") if part)
        raise PlanError(f"different stacks compared: {detail}")
    diffs = [diff_plans(old[stack], new[stack]) for stack in sorted(new)]
    for diff in diffs:
        problem = version_problem(diff)
        if problem:
            raise PlanError(problem)
    return diffs


# ---------------------------------------------------------------------------------------------------- output

MAX_VALUE = 60
"""Characters of a value the text report shows before it truncates."""


def _show(value: Any, limit: int = MAX_VALUE) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit - 3] + "..."


def totals_line(diffs: list[PlanDiff]) -> str:
    """``3 disruptive, 12 in-place``."""
    disruptive = sum(len(d.disruptive) for d in diffs)
    in_place = sum(len(d.in_place) for d in diffs)
    return f"{disruptive} disruptive, {in_place} in-place"


def render_text(diffs: list[PlanDiff]) -> str:
    """The readable report: per stack, each resource with its changed inputs, then the verdicts, then the total."""
    lines = []
    for diff in diffs:
        versions = (f", Kubernetes {diff.old_version} -> {diff.new_version}"
                    if diff.old_version and diff.new_version and diff.old_version != diff.new_version else "")
        lines.append(f"stack {diff.stack}{f' ({diff.cloud})' if diff.cloud else ''}{versions}: "
                     f"{len(diff.changes)} resources change")
        for change in diff.changes:
            lines.append(f"  {change.action} {change.type} {change.name}")
            for item in change.inputs:
                lines.append(f"      {item.path}: {_show(item.old)} -> {_show(item.new)}")
        if diff.changes:
            lines.append("  verdicts:")
        for change in diff.changes:
            label = "disruptive" if change.verdict.disruptive else "in-place  "
            lines.append(f"    {label} {change.name}: {change.verdict.reason}")
    lines.append(totals_line(diffs))
    return "\n".join(lines)


def _json_value(value: Any) -> dict:
    return {} if value is _MISSING else {"value": value}


def to_json(diffs: list[PlanDiff]) -> dict:
    """The ``--json`` document (keys documented in README § Comparing plans)."""
    return {
        "format": JSON_FORMAT,
        "stacks": [{
            "stack": d.stack,
            "cloud": d.cloud,
            "kubernetesVersion": {"old": d.old_version, "new": d.new_version},
            "changes": [{
                "action": ACTION_NAMES[c.action],
                "urn": c.urn,
                "oldUrn": c.old_urn,
                "type": c.type,
                "name": c.name,
                "kind": c.kind,
                "disruptive": c.verdict.disruptive,
                "reason": c.verdict.reason,
                "reasons": list(c.verdict.reasons),
                "inputs": [{"path": i.path, "old": _json_value(i.old), "new": _json_value(i.new)} for i in c.inputs],
            } for c in d.changes],
            "totals": {"disruptive": len(d.disruptive), "inPlace": len(d.in_place)},
        } for d in diffs],
        "totals": {"disruptive": sum(len(d.disruptive) for d in diffs),
                   "inPlace": sum(len(d.in_place) for d in diffs)},
    }
