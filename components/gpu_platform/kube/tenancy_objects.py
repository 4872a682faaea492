"""A team namespace's objects as plain bodies: namespace, quota, defaults, RBAC and network policies."""

from collections.abc import Sequence
from typing import Optional

from .. import labels
from ..config_model import TeamConfig
from .common import metadata

POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
DEFAULT_POD_SECURITY = "baseline"
"""Enforced on team namespaces: blocks host access and privilege escalation paths, still runs common GPU images.
``restricted`` is audited and warned about, so teams see what a stricter namespace would reject."""
EDIT_CLUSTER_ROLE = "edit"
"""Kubernetes' built-in aggregated role; Kueue's chart aggregates LocalQueue and Workload read access into it."""
DEFAULT_CONTAINER_REQUESTS = {"cpu": "250m", "memory": "512Mi"}
"""Requests a container without its own gets, so the namespace's CPU/memory quota can count it."""
DEFAULT_INGRESS_NAMESPACES = ("ingress-nginx",)


def pods_quota(team: TeamConfig) -> int:
    """Pod count cap: room for ten pods per GPU on top of a hundred for CPU-side work."""
    return 100 + 10 * team.gpu_quota


def namespace(team: TeamConfig, pod_security: str = DEFAULT_POD_SECURITY) -> dict:
    """The team namespace: team label (what Kueue's namespace selector matches) and Pod Security labels."""
    return {"metadata": metadata(team.name, extra_labels={
        labels.TEAM_LABEL: team.name,
        labels.POD_SECURITY_ENFORCE_LABEL: pod_security,
        labels.POD_SECURITY_AUDIT_LABEL: "restricted",
        labels.POD_SECURITY_WARN_LABEL: "restricted",
    })}


def resource_quota(team: TeamConfig) -> dict:
    """The hard cap of the namespace: GPUs (extended resources only take ``requests.``), CPU, memory, pods.

    Kueue's nominal quotas are per flavor and borrowing may exceed them; this quota caps the team's total.
    """
    return {
        "metadata": metadata("team-quota", team.name, extra_labels={labels.TEAM_LABEL: team.name}),
        "spec": {"hard": {
            "requests.nvidia.com/gpu": str(team.gpu_quota),
            "requests.cpu": str(team.cpu_quota),
            "requests.memory": f"{team.memory_quota_gib}Gi",
            "pods": str(pods_quota(team)),
        }},
    }


def limit_range(team: TeamConfig) -> dict:
    """Default container requests, so pods without requests are admitted under the CPU/memory quota."""
    return {
        "metadata": metadata("container-defaults", team.name, extra_labels={labels.TEAM_LABEL: team.name}),
        "spec": {"limits": [{"type": "Container", "defaultRequest": dict(DEFAULT_CONTAINER_REQUESTS)}]},
    }


def edit_role_binding(team: TeamConfig) -> dict:
    """The team's identity-provider group gets the built-in ``edit`` role in its namespace."""
    return {
        "metadata": metadata(f"{team.name}-edit", team.name, extra_labels={labels.TEAM_LABEL: team.name}),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EDIT_CLUSTER_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": team.group}],
    }


def _from_namespaces(names: Sequence[str]) -> list[dict]:
    return [{"namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: n}}} for n in names]


def network_policies(team: TeamConfig, monitoring_namespace: Optional[str],
                     ingress_namespaces: Sequence[str]) -> list[dict]:
    """Ingress isolation: deny by default, then allow the namespace itself, monitoring and the ingress controller.

    Namespaces are matched by ``kubernetes.io/metadata.name``, which the API server sets and nobody can forge.
    """
    def policy(name: str, ingress: Optional[list[dict]]) -> dict:
        spec: dict = {"podSelector": {}, "policyTypes": ["Ingress"]}
        if ingress is not None:
            spec["ingress"] = ingress
        return {"metadata": metadata(name, team.name, extra_labels={labels.TEAM_LABEL: team.name}), "spec": spec}

    policies = [
        policy("default-deny-ingress", None),
        policy("allow-same-namespace", [{"from": [{"podSelector": {}}]}]),
    ]
    if monitoring_namespace:
        policies.append(policy("allow-monitoring", [{"from": _from_namespaces([monitoring_namespace])}]))
    if ingress_namespaces:
        policies.append(policy("allow-ingress-controller", [{"from": _from_namespaces(ingress_namespaces)}]))
    return policies
