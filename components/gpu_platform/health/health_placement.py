"""Keep the platform's GPU workloads off nodes that failed their last active health check.

The active check (`health_objects.check_cron_job`) labels a node `labels.HEALTH_CHECK_LABEL` ``passed`` or
``failed``. A required node affinity ``NotIn [failed]`` admits both unlabelled nodes (never checked yet: a new node
must take work before its first check) and passed ones. It is a scheduling-time rule only
(``IgnoredDuringExecution``): a running pod is not evicted by a failed check; remediation decides that (cordon,
drain), with its caps.

Nodes remediation quarantines carry a ``NoSchedule`` taint (`labels.QUARANTINE_TAINT_KEY`) and are cordoned: every
scheduler, Kueue's topology-aware scheduling included, keeps new pods off them without any affinity.
"""

from typing import Any

from .. import labels

FAILED = "failed"
PASSED = "passed"


def healthy_node_requirement() -> dict[str, Any]:
    """The node selector requirement: not labelled as having failed its last check."""
    return {"key": labels.HEALTH_CHECK_LABEL, "operator": "NotIn", "values": [FAILED]}


def healthy_node_affinity() -> dict[str, Any]:
    """A pod ``affinity`` with only the requirement (one node selector term)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [healthy_node_requirement()]}]}}}


def with_healthy_nodes(affinity: Any) -> dict[str, Any]:
    """``affinity`` (a pod's, wire form, or None) with the requirement added to every required node selector term
    (terms are ORed: each must exclude failed nodes), or a required node affinity of its own when it has none."""
    if not affinity:
        return healthy_node_affinity()
    merged = {**affinity}
    node = dict(merged.get("nodeAffinity") or {})
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required or not required.get("nodeSelectorTerms"):
        node["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": [healthy_node_requirement()]}]}
    else:
        terms = []
        for term in required["nodeSelectorTerms"]:
            expressions = list(term.get("matchExpressions") or [])
            if healthy_node_requirement() not in expressions:
                expressions.append(healthy_node_requirement())
            terms.append({**term, "matchExpressions": expressions})
        node["requiredDuringSchedulingIgnoredDuringExecution"] = {**required, "nodeSelectorTerms": terms}
    merged["nodeAffinity"] = node
    return merged
