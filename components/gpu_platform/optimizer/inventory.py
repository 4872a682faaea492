"""Pods, their owners and HPAs, read from the Kubernetes API in a constant number of list calls."""

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Owner:
    """The workload a pod belongs to (Deployment, StatefulSet, Job... or the pod itself)."""

    kind: str
    namespace: str
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    replicas: Optional[int] = None
    hpa_min_replicas: Optional[int] = None
    """minReplicas of the HorizontalPodAutoscaler targeting this owner, if any."""


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    labels: dict[str, str]
    owner: Owner


@dataclass
class Inventory:
    """Every running pod by (namespace, name), each with its top-level owner."""

    pods: dict[tuple[str, str], Pod]
    api_calls: int = 0


def _controller(meta: Any) -> Optional[Any]:
    return next((ref for ref in (meta.owner_references or []) if ref.controller), None)


def load_inventory(core: Any, apps: Any, autoscaling: Any) -> Inventory:
    """Four list calls: running pods, ReplicaSets, Deployments, HPAs (official `kubernetes` client APIs)."""
    pods = core.list_pod_for_all_namespaces(field_selector="status.phase=Running").items
    replica_sets = apps.list_replica_set_for_all_namespaces().items
    deployments = apps.list_deployment_for_all_namespaces().items
    hpas = autoscaling.list_horizontal_pod_autoscaler_for_all_namespaces().items

    hpa_min = {
        (h.metadata.namespace, h.spec.scale_target_ref.kind, h.spec.scale_target_ref.name): h.spec.min_replicas or 1
        for h in hpas
    }
    rs_owner = {}
    for rs in replica_sets:
        ref = _controller(rs.metadata)
        if ref is not None:
            rs_owner[(rs.metadata.namespace, rs.metadata.name)] = (ref.kind, ref.name)
    deployment_by_name = {(d.metadata.namespace, d.metadata.name): d for d in deployments}

    result: dict[tuple[str, str], Pod] = {}
    for pod in pods:
        meta = pod.metadata
        ns = meta.namespace
        kind, name = "Pod", meta.name
        ref = _controller(meta)
        if ref is not None:
            kind, name = ref.kind, ref.name
            if kind == "ReplicaSet" and (ns, name) in rs_owner:
                kind, name = rs_owner[(ns, name)]
        owner_labels, owner_annotations, replicas = dict(meta.labels or {}), {}, None
        if kind == "Deployment" and (ns, name) in deployment_by_name:
            dep = deployment_by_name[(ns, name)]
            owner_labels = dict(dep.metadata.labels or {})
            owner_annotations = dict(dep.metadata.annotations or {})
            replicas = dep.spec.replicas
        owner = Owner(kind, ns, name, owner_labels, owner_annotations, replicas, hpa_min.get((ns, kind, name)))
        result[(ns, meta.name)] = Pod(ns, meta.name, dict(meta.labels or {}), owner)
    return Inventory(result, api_calls=4)
