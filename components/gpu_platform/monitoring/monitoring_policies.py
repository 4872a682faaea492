"""The monitoring stack's lockdown as plain bodies: Grafana's RBAC and the NetworkPolicies of its namespace.

Grafana. The Grafana chart (12.11.1, the subchart of kube-prometheus-stack 88.5.3) renders one rule for its
sidecars, ``resources: ["configmaps", "secrets"]`` with ``get/watch/list``, whenever any sidecar is enabled, whatever
``sidecar.*.resource`` says: in a ClusterRole unless ``rbac.namespaced`` (``templates/clusterrole.yaml``), else in
a Role (``templates/role.yaml``). Both templates, and their bindings, render only with ``rbac.create``. So the
platform sets ``rbac.create: false`` and binds Grafana's service account to `grafana_sidecar_role`: configmaps only,
in the monitoring namespace only, which is where every dashboard and datasource ConfigMap lives (the platform's
dashboards and kube-prometheus-stack's own ``templates/grafana/``). The sidecars read ConfigMaps only
(``resource: configmap``) from that namespace only (``searchNamespace``).

Network. Own NetworkPolicy objects rather than the charts' (``prometheus.networkPolicy``,
``alertmanager.networkPolicy``, ``prometheusOperator.networkPolicy``, Grafana's ``networkPolicy``): those are off by
default, each shaped differently, none denies the namespace by default, kube-state-metrics has none, and they are
rendered by Helm at deploy time where no test can read them. These are planned objects, checked field by field:

- ``default-deny-ingress``: every pod of the namespace is isolated for ingress.
- ``allow-prometheus-scrape``: Prometheus reaches every pod of the namespace on any port (it scrapes Prometheus
  and Alertmanager and their config reloaders, Grafana, kube-state-metrics and the operator; each on its own port).
- ``allow-prometheus-api``: Prometheus' API (9090) from Grafana and from the namespaces that query it (the
  optimizer's, KEDA's); nothing else. Tenants can no longer read every metric.
- ``allow-alertmanager``: Alertmanager's API (9093) from Prometheus (alerts) and Grafana (its Alertmanager
  datasource); the cluster port (9094) between Alertmanager pods, used when it runs more than one replica.
  Tenants can no longer create silences.
- ``allow-grafana``: Grafana (3000) from pods of the monitoring namespace only. ``kubectl port-forward`` reaches
  the pod through the kubelet, which no NetworkPolicy filters: operators keep their access, governed by RBAC.
- ``allow-operator-webhook``: the Prometheus Operator's admission webhook (10250, ``prometheusOperator.tls
  .internalPort``) from anywhere. The API server calls it, and on EKS, AKS, GKE and OKE the control plane is
  outside the pod network at addresses no selector can name; only that port, which serves TLS only.

node-exporter runs with hostNetwork: NetworkPolicies do not apply to it. Kubelet probes come from the pod's node,
which NetworkPolicies always admit.
"""

from collections.abc import Sequence
from typing import Any, Optional

from .. import labels
from ..kubernetes_base.common import metadata

RELEASE_NAME = "kube-prometheus-stack"
"""The release name and ``fullnameOverride`` `monitoring` uses; the pod labels below derive from it."""
PROMETHEUS_PORT = 9090
ALERTMANAGER_PORT = 9093
ALERTMANAGER_CLUSTER_PORT = 9094
GRAFANA_PORT = 3000
OPERATOR_WEBHOOK_PORT = 10250

# Pod labels. The Prometheus Operator (v0.93) sets app.kubernetes.io/name to "prometheus" / "alertmanager" and
# app.kubernetes.io/instance to the object's name on the pods it creates; nobody can override them
# (monitoring.coreos.com/v1 Prometheus/Alertmanager podMetadata docs). kube-prometheus-stack names the objects
# "<fullname>-prometheus" and "<fullname>-alertmanager" (cleanPrometheusOperatorObjectNames: false).
PROMETHEUS_POD_LABELS = {labels.APP_NAME_LABEL: "prometheus", labels.APP_INSTANCE_LABEL: f"{RELEASE_NAME}-prometheus"}
ALERTMANAGER_POD_LABELS = {labels.APP_NAME_LABEL: "alertmanager",
                           labels.APP_INSTANCE_LABEL: f"{RELEASE_NAME}-alertmanager"}
GRAFANA_POD_LABELS = {labels.APP_NAME_LABEL: "grafana", labels.APP_INSTANCE_LABEL: RELEASE_NAME}
"""grafana.selectorLabels of the Grafana chart: the chart's name and the (parent) release's name."""
OPERATOR_POD_LABELS = {labels.APP_NAME_LABEL: f"{RELEASE_NAME}-prometheus-operator",
                       labels.APP_INSTANCE_LABEL: RELEASE_NAME}
"""kube-prometheus-stack.prometheus-operator.labels (templates/prometheus-operator/_prometheus-operator.tpl)."""

GRAFANA_SERVICE_ACCOUNT = f"{RELEASE_NAME}-grafana"
"""Grafana's service account: the chart's default (``grafana.fullname``), set explicitly so the binding holds."""
GRAFANA_SIDECAR_ROLE = "grafana-sidecar"


def _tcp(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": port} for port in ports]


def namespace_peer(namespace: str, pod_labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """A NetworkPolicy peer: pods (all, or those with ``pod_labels``) of ``namespace``, matched by
    ``kubernetes.io/metadata.name``, which the API server sets and nobody can forge."""
    peer: dict[str, Any] = {"namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: namespace}}}
    if pod_labels:
        peer["podSelector"] = {"matchLabels": dict(pod_labels)}
    return peer


def prometheus_peer(monitoring_namespace: str) -> dict[str, Any]:
    """The platform's Prometheus pods, as a peer for policies in other namespaces (what may scrape them)."""
    return namespace_peer(monitoring_namespace, PROMETHEUS_POD_LABELS)


def ingress_policy(name: str, namespace: str, pods: Optional[dict[str, str]], ingress: Optional[list[dict]]) -> dict:
    """A NetworkPolicy isolating ``pods`` (every pod of the namespace when None) for ingress, admitting ``ingress``
    (none when None: a default deny)."""
    spec: dict[str, Any] = {"podSelector": {"matchLabels": dict(pods)} if pods else {}, "policyTypes": ["Ingress"]}
    if ingress is not None:
        spec["ingress"] = ingress
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": metadata(name, namespace),
            "spec": spec}


def network_policies(namespace: str, prometheus_clients: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The NetworkPolicies of the monitoring namespace (see the module docstring for what each admits).

    ``prometheus_clients``: namespaces whose pods may query Prometheus' API. Whole namespaces: they hold only
    the platform's clients (the optimizer, KEDA), and no tenant can create pods there.
    """
    prometheus, grafana = {"podSelector": {"matchLabels": dict(PROMETHEUS_POD_LABELS)}}, {
        "podSelector": {"matchLabels": dict(GRAFANA_POD_LABELS)}}
    alertmanagers = {"podSelector": {"matchLabels": dict(ALERTMANAGER_POD_LABELS)}}
    cluster_ports = [{"protocol": protocol, "port": ALERTMANAGER_CLUSTER_PORT} for protocol in ("TCP", "UDP")]
    return [
        ingress_policy("default-deny-ingress", namespace, None, None),
        ingress_policy("allow-prometheus-scrape", namespace, None, [{"from": [prometheus]}]),
        ingress_policy("allow-prometheus-api", namespace, PROMETHEUS_POD_LABELS, [{
            "from": [grafana, *(namespace_peer(n) for n in sorted(set(prometheus_clients)))],
            "ports": _tcp(PROMETHEUS_PORT)}]),
        ingress_policy("allow-alertmanager", namespace, ALERTMANAGER_POD_LABELS, [
            {"from": [prometheus, grafana], "ports": _tcp(ALERTMANAGER_PORT)},
            {"from": [alertmanagers], "ports": cluster_ports},
        ]),
        ingress_policy("allow-grafana", namespace, GRAFANA_POD_LABELS, [{"from": [{"podSelector": {}}],
                                                                   "ports": _tcp(GRAFANA_PORT)}]),
        # No `from`: the API server's addresses are outside the pod network and differ per cloud.
        ingress_policy("allow-operator-webhook", namespace, OPERATOR_POD_LABELS,
                       [{"ports": _tcp(OPERATOR_WEBHOOK_PORT)}]),
    ]


def grafana_values(namespace: str) -> dict[str, Any]:
    """The ``grafana`` subchart values that take Secret access away from Grafana (keys of grafana 12.11.1)."""
    sidecar = {"resource": "configmap", "searchNamespace": namespace}
    return {
        "rbac": {"create": False},
        "serviceAccount": {"name": GRAFANA_SERVICE_ACCOUNT},
        "sidecar": {"dashboards": dict(sidecar), "datasources": dict(sidecar)},
    }


def grafana_sidecar_role(namespace: str) -> dict[str, Any]:
    """The Role Grafana's sidecars need: read ConfigMaps of the monitoring namespace, nothing else."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": metadata(GRAFANA_SIDECAR_ROLE, namespace),
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}


def grafana_sidecar_role_binding(namespace: str) -> dict[str, Any]:
    """Grafana's service account bound to `grafana_sidecar_role`."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": metadata(GRAFANA_SIDECAR_ROLE, namespace),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": GRAFANA_SIDECAR_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": GRAFANA_SERVICE_ACCOUNT, "namespace": namespace}]}
