"""`KedaOperator`: KEDA (pinned chart), the autoscaler behind the inference service's queue-depth scaling.

Why KEDA rather than prometheus-adapter + HPA (research notes k8s_layer §4.4):

- Each workload brings its own PromQL in its ``ScaledObject`` (``inference_queue_depth`` of *this* Service in
  *this* namespace); prometheus-adapter needs every series mapped in one cluster-wide rules config, edited
  whenever a workload with a new metric arrives, and pod/namespace labels shaped the way it expects.
- One ScaledObject holds several triggers (queue depth and CPU; KEDA scales to the larger), a ``fallback`` for
  when Prometheus cannot be read, and the HPA ``behavior``; KEDA owns the HPA it generates.
- Scale to zero (``minReplicaCount: 0``) is there for the workloads that want it; prometheus-adapter cannot.

KEDA serves ``external.metrics.k8s.io``: a prometheus-adapter installed later must not register that API too
(its chart renders the external APIService only when ``rules.external`` is set). KEDA's own pods are CPU
workloads: no GPU tolerations, so they never hold a GPU node up.

Its namespace enforces Pod Security ``restricted`` (the chart's pods comply: `namespace_security`) and denies
ingress but for what KEDA needs (`network_policies`): the API server reaches the metrics API server (6443) and the
admission webhooks (9443), KEDA's pods reach each other (the metrics API server asks the operator over gRPC,
9666), and with monitoring Prometheus scrapes their metrics (8080). The chart's own NetworkPolicies
(``networkPolicy.enabled``) admit every namespace on the gRPC and metrics ports, so they stay off.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from .. import labels
from ..component_args import DNS_LABEL, Args, KeywordArgs
from ..kubernetes_base.common import child_opts, helm_release, metadata, refuse_unless
from ..monitoring.monitoring_policies import prometheus_peer
from ..security import namespace_security
from ..versions import KEDA

DEFAULT_NAMESPACE = "keda"
RELEASE_NAME = "keda"
DEFAULT_MONITORING_NAMESPACE = "monitoring"
# Names and ports of the chart's components at kedacore/charts@v2.20.2 (keda/values.yaml, keda/templates/*):
# pods carry app.kubernetes.io/name = operator.name / "<operator.name>-metrics-apiserver" / webhooks.name.
METRICS_API_SERVER = "keda-operator-metrics-apiserver"
METRICS_API_SERVER_PORT = 6443
"""``service.portHttpsTarget``: the metrics API server's ``--secure-port``, which the API server's aggregation
layer calls for ``external.metrics.k8s.io``."""
ADMISSION_WEBHOOKS = "keda-admission-webhooks"
ADMISSION_WEBHOOKS_PORT = 9443
"""``webhooks.port`` (empty: the deployment's default 9443), which the API server calls for admission."""
METRICS_PORT = 8080
"""``prometheus.operator.port``, ``prometheus.metricServer.port`` and ``prometheus.webhooks.port``."""


def keda_values(service_monitor_labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """Values of the ``keda`` chart. With monitoring, the operator and its metrics server are scraped too."""
    values: dict[str, Any] = {"crds": {"install": True}}
    if service_monitor_labels is not None:
        monitor = {"enabled": True, "serviceMonitor": {"enabled": True,
                                                       "additionalLabels": dict(service_monitor_labels)}}
        values["prometheus"] = {"operator": monitor, "metricServer": monitor}
    return values


def network_policies(namespace: str, monitoring_namespace: Optional[str]) -> list[dict[str, Any]]:
    """The NetworkPolicies of KEDA's namespace: ingress denied but from the API server to the metrics API server
    and the webhooks (from anywhere: the control plane is outside the pod network on managed clouds, at addresses
    no selector can name; only those two TLS ports), between KEDA's pods, and from Prometheus to the metrics
    ports (``monitoring_namespace``; none: no scraping)."""
    def policy(name: str, pods: Optional[str], ingress: Optional[list[dict]]) -> dict[str, Any]:
        spec: dict[str, Any] = {"podSelector": {"matchLabels": {labels.APP_NAME_LABEL: pods}} if pods else {},
                                "policyTypes": ["Ingress"]}
        if ingress is not None:
            spec["ingress"] = ingress
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": metadata(name, namespace), "spec": spec}

    policies = [
        policy("default-deny-ingress", None, None),
        policy("allow-same-namespace", None, [{"from": [{"podSelector": {}}]}]),
        policy("allow-api-server-to-metrics-api", METRICS_API_SERVER,
               [{"ports": [{"protocol": "TCP", "port": METRICS_API_SERVER_PORT}]}]),
        policy("allow-api-server-to-webhooks", ADMISSION_WEBHOOKS,
               [{"ports": [{"protocol": "TCP", "port": ADMISSION_WEBHOOKS_PORT}]}]),
    ]
    if monitoring_namespace:
        policies.append(policy("allow-prometheus", None, [{
            "from": [prometheus_peer(monitoring_namespace)], "ports": [{"protocol": "TCP", "port": METRICS_PORT}]}]))
    return policies


class KedaOperatorArgs(TypedDict, total=False):
    """Arguments of `KedaOperator`."""

    namespace: str
    """Namespace of KEDA. Default ``keda``."""
    monitoring: bool
    """Create ServiceMonitors for KEDA's operator and metrics server (needs the Prometheus Operator CRDs: make
    the component depend on the monitoring release). Default false."""
    service_monitor_labels: dict[str, str]
    """Labels on those ServiceMonitors (what the Prometheus selects on). Default none."""
    monitoring_namespace: str
    """Namespace of the Prometheus that scrapes KEDA (admitted by a NetworkPolicy; with ``monitoring`` only).
    Default ``monitoring``."""


def checked_args(name: str, args: KedaOperatorArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("KedaOperator", name)
    checked = checker.check({} if args is None else args, KedaOperatorArgs,
                            {"namespace": DNS_LABEL, "monitoring_namespace": DNS_LABEL})
    for key in ("service_monitor_labels", "monitoring_namespace"):
        refuse_unless(checker, checked, key, bool(checked.get("monitoring")), "with monitoring: true")
    return checked


class KedaOperator(pulumi.ComponentResource, metaclass=KeywordArgs):
    """KEDA's operator, metrics server and admission webhooks, with its CRDs (``keda.sh/v1alpha1``), in a
    ``restricted`` namespace whose ingress admits only the API server, KEDA itself and Prometheus.

    Attributes: ``release`` (depend on it before creating ScaledObjects), ``namespace``, ``network_policies``.
    """

    release: k8s.helm.v3.Release
    namespace: str

    # ``args`` is a plain TypedDict (pass ``{}`` for the defaults): Pulumi's schema analyzer, which serves the
    # component to other languages, cannot read an Optional args annotation.
    def __init__(self, name: str, args: KedaOperatorArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:KedaOperator", name, {}, opts)
        self.namespace = args.get("namespace") or DEFAULT_NAMESPACE
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", **namespace_security.namespace_body(
                self.namespace, namespace_security.namespace_pod_security("keda")), opts=child_opts(self, opts))
        monitored = bool(args.get("monitoring"))
        in_namespace = child_opts(self, opts, depends_on=[namespace])
        self.network_policies = [
            k8s.networking.v1.NetworkPolicy(f"{name}-{body['metadata']['name']}", metadata=body["metadata"],
                                            spec=body["spec"], opts=in_namespace)
            for body in network_policies(self.namespace, args.get("monitoring_namespace",
                                                                  DEFAULT_MONITORING_NAMESPACE) if monitored else None)
        ]
        monitor_labels = dict(args.get("service_monitor_labels") or {}) if monitored else None
        self.release = helm_release(f"{name}-release", KEDA, RELEASE_NAME, self.namespace, keda_values(monitor_labels),
                                    child_opts(self, opts, depends_on=[namespace, *self.network_policies]),
                                    create_namespace=False)
        self.register_outputs({"namespace": self.namespace})
