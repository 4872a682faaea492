"""Actions on workload owners. Only opted-in owners are touched, never within the cooldown, and a repeated
run with the same findings changes nothing (the recommendation annotation is compared before patching)."""

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from .. import labels
from .analysis import Finding
from .inventory import Inventory, Owner
from .policy import Policy

PATCHABLE_KINDS = {"Deployment": "deployment", "StatefulSet": "stateful_set"}


@dataclass(frozen=True)
class ActionResult:
    """One decision about one owner."""

    action: str
    kind: str
    namespace: str
    name: str
    outcome: str
    """``applied``, ``dry-run``, or ``skipped: <reason>``."""
    detail: str = ""


def _timestamp(now: float) -> str:
    return datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _in_cooldown(owner: Owner, policy: Policy, now: float) -> bool:
    stamp = owner.annotations.get(labels.LAST_ACTION_ANNOTATION)
    if not stamp:
        return False
    try:
        last = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return False
    return now - last < policy.cooldown_seconds


def owners_to_act_on(findings: list[Finding], inventory: Inventory) -> list[tuple[Owner, list[Finding]]]:
    """Each opted-in owner with its idle pods, in a stable order."""
    grouped: dict[tuple[str, str, str], tuple[Owner, list[Finding]]] = {}
    for finding in findings:
        if not finding.actionable:
            continue
        pod = inventory.pods[(finding.namespace, finding.pod)]
        key = (pod.owner.namespace, pod.owner.kind, pod.owner.name)
        grouped.setdefault(key, (pod.owner, []))[1].append(finding)
    return [grouped[k] for k in sorted(grouped)]


def _recommendation(findings: list[Finding]) -> str:
    worst = min(findings, key=lambda f: f.utilization)
    body = {"idlePods": sorted(f.pod for f in findings), "utilization": worst.utilization,
            "recommendation": worst.recommendation}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def plan_actions(findings: list[Finding], inventory: Inventory, policy: Policy, now: float) -> list[dict]:
    """What each action would do, as patches; pure, so dry runs and tests see exactly what apply would send."""
    if policy.action == "report":
        return []
    planned = []
    for owner, idle in owners_to_act_on(findings, inventory):
        base = {"action": policy.action, "kind": owner.kind, "namespace": owner.namespace, "name": owner.name}
        if owner.kind not in PATCHABLE_KINDS:
            planned.append({**base, "skip": f"{owner.kind} owners are not changed"})
            continue
        if _in_cooldown(owner, policy, now):
            planned.append({**base, "skip": f"in cooldown ({policy.cooldown})"})
            continue
        if policy.action in ("annotate", "recommend"):
            value = _recommendation(idle)
            if owner.annotations.get(labels.RECOMMENDATION_ANNOTATION) == value:
                planned.append({**base, "skip": "recommendation already recorded"})
                continue
            patch = {"metadata": {"annotations": {labels.RECOMMENDATION_ANNOTATION: value,
                                                  labels.LAST_ACTION_ANNOTATION: _timestamp(now)}}}
            planned.append({**base, "patch": patch, "detail": value})
        elif policy.action == "scale-down":
            if owner.kind != "Deployment":
                planned.append({**base, "skip": "scale-down applies to Deployments only"})
                continue
            floor = max(policy.min_replicas, owner.hpa_min_replicas or 0)
            replicas = owner.replicas or 0
            if replicas <= floor:
                why = f"HPA minReplicas {owner.hpa_min_replicas}" if owner.hpa_min_replicas else f"minimum {floor}"
                planned.append({**base, "skip": f"at {replicas} replicas, not above {why}"})
                continue
            patch = {"metadata": {"annotations": {labels.LAST_ACTION_ANNOTATION: _timestamp(now)}},
                     "spec": {"replicas": replicas - 1}}
            planned.append({**base, "patch": patch, "detail": f"replicas {replicas} -> {replicas - 1}"})
    return planned


def apply_actions(planned: list[dict], apps: Optional[Any], dry_run: bool) -> list[ActionResult]:
    """Send the patches (unless ``dry_run``) through the official client's AppsV1Api."""
    results = []
    for item in planned:
        common = (item["action"], item["kind"], item["namespace"], item["name"])
        if "skip" in item:
            results.append(ActionResult(*common, outcome=f"skipped: {item['skip']}"))
            continue
        if dry_run or apps is None:
            results.append(ActionResult(*common, outcome="dry-run", detail=item["detail"]))
            continue
        patcher = getattr(apps, f"patch_namespaced_{PATCHABLE_KINDS[item['kind']]}")
        patcher(name=item["name"], namespace=item["namespace"], body=item["patch"])
        results.append(ActionResult(*common, outcome="applied", detail=item["detail"]))
    return results
