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
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..component_args import DNS_LABEL, Args
from ..versions import KEDA
from .common import child_opts, helm_release, metadata, refuse_unless

DEFAULT_NAMESPACE = "keda"
RELEASE_NAME = "keda"


def keda_values(service_monitor_labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """Values of the ``keda`` chart. With monitoring, the operator and its metrics server are scraped too."""
    values: dict[str, Any] = {"crds": {"install": True}}
    if service_monitor_labels is not None:
        monitor = {"enabled": True, "serviceMonitor": {"enabled": True,
                                                       "additionalLabels": dict(service_monitor_labels)}}
        values["prometheus"] = {"operator": monitor, "metricServer": monitor}
    return values


class KedaOperatorArgs(TypedDict, total=False):
    """Arguments of `KedaOperator`."""

    namespace: str
    """Namespace of KEDA. Default ``keda``."""
    monitoring: bool
    """Create ServiceMonitors for KEDA's operator and metrics server (needs the Prometheus Operator CRDs: make
    the component depend on the monitoring release). Default false."""
    service_monitor_labels: dict[str, str]
    """Labels on those ServiceMonitors (what the Prometheus selects on). Default none."""


def checked_args(name: str, args: KedaOperatorArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("KedaOperator", name)
    checked = checker.check({} if args is None else args, KedaOperatorArgs, {"namespace": DNS_LABEL})
    refuse_unless(checker, checked, "service_monitor_labels", bool(checked.get("monitoring")), "with monitoring: true")
    return checked


class KedaOperator(pulumi.ComponentResource):
    """KEDA's operator, metrics server and admission webhooks, with its CRDs (``keda.sh/v1alpha1``).

    Attributes: ``release`` (depend on it before creating ScaledObjects), ``namespace``.
    """

    release: k8s.helm.v3.Release
    namespace: str

    # ``args`` is a plain TypedDict (pass ``{}`` for the defaults): Pulumi's schema analyzer, which serves the
    # component to other languages, cannot read an Optional args annotation.
    def __init__(self, name: str, args: KedaOperatorArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:KedaOperator", name, {}, opts)
        self.namespace = args.get("namespace") or DEFAULT_NAMESPACE
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata=metadata(self.namespace),
                                          opts=child_opts(self, opts))
        labels = dict(args.get("service_monitor_labels") or {}) if args.get("monitoring") else None
        self.release = helm_release(f"{name}-release", KEDA, RELEASE_NAME, self.namespace, keda_values(labels),
                                    child_opts(self, opts, depends_on=[namespace]), create_namespace=False)
        self.register_outputs({"namespace": self.namespace})
