"""MultiKueue's objects as plain bodies: the manager's (``kueue.x-k8s.io/v1beta2``) and a worker's RBAC.

Facts relied on, checked in kubernetes-sigs/kueue at v0.19.2:

* AdmissionCheck ``spec.controllerName: kueue.x-k8s.io/multikueue`` with ``parameters`` naming a MultiKueueConfig
  (``apiGroup: kueue.x-k8s.io``); a ClusterQueue names it in ``admissionChecksStrategy`` without ``onFlavors``
  (per-flavor MultiKueue checks deactivate the queue: ``pkg/cache/scheduler/clusterqueue.go``).
* MultiKueueConfig ``spec.clusters``: the MultiKueueCluster names, 1 to 20, in the order the incremental dispatcher
  nominates them; MultiKueueCluster ``spec.clusterSource.kubeConfig {locationType: Secret, location: <Secret>}``
  (CRDs, ``config/components/crd/bases``). The Secret is in Kueue's namespace and holds the kubeconfig under the key
  ``kubeconfig`` (``site/static/examples/multikueue/multikueue-setup.yaml``).
* Kueue rejects kubeconfigs that could run code (docs ``tasks/manage/setup_multikueue.md``, "Security Notice"), so
  the worker's kubeconfig carries only the API server, its CA data and a ServiceAccount token (`worker_kubeconfig`).
* What the manager may do on a worker: the ClusterRole of ``site/static/examples/multikueue/
  create-multikueue-kubeconfig.sh``, rule for rule, kept to the API groups of the integrations the platform enables
  (`kueue_objects.FRAMEWORKS`: `WORKER_RULES`); the token is that of a ``kubernetes.io/service-account-token`` Secret
  of the ServiceAccount ``multikueue-sa`` in ``kueue-system``, as the script makes it.
"""

import base64
from collections.abc import Sequence
from typing import Optional

import yaml

from .. import labels
from ..kubernetes_base.common import metadata
from ..versions import KUEUE_API_VERSION
from .kueue_objects import FRAMEWORKS, KUEUE_NAMESPACE
from .multikueue_config import DISPATCHERS, MultiKueueSettings, MultiKueueWorker

CONTROLLER_NAME = labels.KUEUE_MULTIKUEUE_CONTROLLER
"""The AdmissionCheck controller of MultiKueue."""
ADMISSION_CHECK = "multikueue"
"""Name of the manager's AdmissionCheck and of its MultiKueueConfig."""
KUBECONFIG_KEY = "kubeconfig"
"""The Secret key Kueue reads a worker's kubeconfig from."""
SECRET_PREFIX = "multikueue-"
"""A worker's kubeconfig Secret is ``multikueue-<worker name>`` in Kueue's namespace."""
SERVICE_ACCOUNT = "multikueue-sa"
"""The worker's ServiceAccount the manager acts as (the upstream script's name); its ClusterRole and binding are
``multikueue-sa-role`` and ``multikueue-sa-crb``, its token Secret ``multikueue-sa``."""
TOKEN_SECRET_TYPE = "kubernetes.io/service-account-token"
KUBECONFIG_OUTPUT = "multikueueKubeconfig"
"""The worker stack's output (secret) the manager reads through a StackReference."""

_MANAGE = ["create", "delete", "get", "list", "watch"]
_UPSTREAM_RULES: tuple[tuple[str, tuple[dict, ...]], ...] = (
    # (integration as in FRAMEWORKS, its rules): create-multikueue-kubeconfig.sh@v0.19.2, in the script's order.
    ("batch/job", ({"apiGroups": ["batch"], "resources": ["jobs"], "verbs": _MANAGE},
                            {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]})),
    ("pod", ({"apiGroups": [""], "resources": ["pods"], "verbs": _MANAGE},)),
    ("jobset.x-k8s.io/jobset", (
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": _MANAGE},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]})),
    ("kueue", (
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_MANAGE, "update", "patch"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]})),
    *((f"kubeflow.org/{kind}", (
        {"apiGroups": ["kubeflow.org"], "resources": [f"{kind}s"], "verbs": _MANAGE},
        {"apiGroups": ["kubeflow.org"], "resources": [f"{kind}s/status"], "verbs": ["get"]}))
      for kind in ("tfjob", "pytorchjob", "xgboostjob", "mpijob")),
)


def worker_rules(frameworks: Sequence[str] = FRAMEWORKS) -> list[dict]:
    """The worker ClusterRole's rules: the upstream script's for Kueue's own objects and for each integration the
    platform enables (``deployment`` pods are dispatched as pods); its rules for integrations the platform does
    not enable (StatefulSets, LeaderWorkerSets, PaddleJobs, Ray, AppWrappers) are left out. The script has none for
    ``kubeflow.org/jaxjob`` and ``trainer.kubeflow.org/trainjob``, so none are granted: such jobs run where they are
    submitted, not on a worker (docs/multikueue.md)."""
    enabled = set(frameworks) | {"kueue"} | ({"pod"} if "deployment" in frameworks else set())
    return [dict(rule) for integration, rules in _UPSTREAM_RULES if integration in enabled for rule in rules]


WORKER_RULES = worker_rules()


def service_account() -> dict:
    """The worker's ServiceAccount the manager acts as."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(SERVICE_ACCOUNT, KUEUE_NAMESPACE),
            "automountServiceAccountToken": False}


def cluster_role() -> dict:
    """What the manager may do on the worker (`worker_rules`)."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": metadata(f"{SERVICE_ACCOUNT}-role"), "rules": [dict(r) for r in WORKER_RULES]}


def cluster_role_binding() -> dict:
    """The ClusterRole bound to the ServiceAccount."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": metadata(f"{SERVICE_ACCOUNT}-crb"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": f"{SERVICE_ACCOUNT}-role"},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": KUEUE_NAMESPACE}]}


def token_secret() -> dict:
    """The ServiceAccount's long-lived token Secret (the token controller fills ``data.token`` and ``ca.crt``)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": TOKEN_SECRET_TYPE,
            "metadata": metadata(SERVICE_ACCOUNT, KUEUE_NAMESPACE,
                                 annotations={"kubernetes.io/service-account.name": SERVICE_ACCOUNT})}


def _named(entries: list, name: Optional[str]) -> Optional[dict]:
    for entry in entries or []:
        if isinstance(entry, dict) and (name is None or entry.get("name") == name):
            return entry
    return None


def missing_context(cluster_kubeconfig: str, context: str) -> Optional[str]:
    """Why ``context`` is no context of ``cluster_kubeconfig``, or None: a context given by name is never swapped for
    another (the manager would dispatch to the wrong cluster)."""
    document = yaml.safe_load(cluster_kubeconfig or "") or {}
    entries = document.get("contexts") if isinstance(document, dict) else None
    names = [e.get("name") for e in entries or [] if isinstance(e, dict)]
    if context in names:
        return None
    listed = ", ".join(map(str, names)) or "none"
    return f"'{context}' is not a context of the cluster's kubeconfig (its contexts: {listed})"


def worker_kubeconfig(cluster_kubeconfig: str, token_base64: Optional[str], context: Optional[str] = None) -> str:
    """The kubeconfig the manager uses on the worker: the server and CA data of ``cluster_kubeconfig``'s context
    (``context``, else its current one), the ServiceAccount's token (``token_base64``: as the Secret's ``data`` holds
    it) as the only credential. Raises ValueError when ``context`` is not one of its contexts, when the cluster's
    kubeconfig names no server or CA data, or when there is no token yet."""
    if not token_base64:
        raise ValueError(f"the Secret {SERVICE_ACCOUNT} in {KUEUE_NAMESPACE} has no token yet (the token controller "
                         "fills it)")
    document = yaml.safe_load(cluster_kubeconfig or "") or {}
    if not isinstance(document, dict):
        raise ValueError("the cluster's kubeconfig is not a kubeconfig document")
    problem = missing_context(cluster_kubeconfig, context) if context is not None else None
    if problem is not None:
        raise ValueError(problem)
    wanted = context or document.get("current-context")
    found = _named(document.get("contexts", []), wanted) or _named(document.get("contexts", []), None)
    cluster_name = (found or {}).get("context", {}).get("cluster")
    cluster = (_named(document.get("clusters", []), cluster_name) or {}).get("cluster", {})
    if not cluster.get("server") or not cluster.get("certificate-authority-data"):
        raise ValueError(f"the cluster's kubeconfig has no server and certificate-authority-data for context "
                         f"{wanted!r}: MultiKueue needs both")
    name = cluster_name or "worker"
    user = f"{name}-{SERVICE_ACCOUNT}"
    token = base64.b64decode(token_base64).decode()
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": name, "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": cluster["server"],
                                                "certificate-authority-data": cluster["certificate-authority-data"]}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "users": [{"name": user, "user": {"token": token}}],
    }, sort_keys=True)


def secret_name(worker: MultiKueueWorker) -> str:
    """The manager's Secret holding ``worker``'s kubeconfig."""
    return f"{SECRET_PREFIX}{worker.name}"


def kubeconfig_secret_metadata(worker: MultiKueueWorker) -> dict:
    """Metadata of the manager's kubeconfig Secret of ``worker`` (its data comes from the worker stack's output)."""
    return metadata(secret_name(worker), KUEUE_NAMESPACE, extra_labels={labels.MULTIKUEUE_WORKER_LABEL: worker.name})


def multikueue_cluster(worker: MultiKueueWorker) -> dict:
    """The MultiKueueCluster of ``worker``: its kubeconfig from the Secret `secret_name`."""
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "MultiKueueCluster",
        "metadata": metadata(worker.name, extra_labels={labels.MULTIKUEUE_WORKER_LABEL: worker.name}),
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name(worker)}}},
    }


def multikueue_config(settings: MultiKueueSettings) -> dict:
    """The MultiKueueConfig: the workers in ``workers`` order (the incremental dispatcher nominates them so)."""
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "MultiKueueConfig",
        "metadata": metadata(ADMISSION_CHECK),
        "spec": {"clusters": [w.name for w in settings.workers]},
    }


def admission_check() -> dict:
    """The AdmissionCheck every team ClusterQueue of the manager passes: MultiKueue with `multikueue_config`."""
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": metadata(ADMISSION_CHECK),
        "spec": {"controllerName": CONTROLLER_NAME,
                 "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": ADMISSION_CHECK}},
    }


def controller_section(settings: MultiKueueSettings) -> dict:
    """The Kueue Configuration's ``multiKueue`` section of a manager: the dispatcher and ``workerLostTimeout``."""
    return {"dispatcherName": DISPATCHERS[settings.dispatcher], "workerLostTimeout": settings.worker_lost_timeout}
