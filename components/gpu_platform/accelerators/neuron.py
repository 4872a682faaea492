"""`NeuronStack`: the AWS Neuron software that makes Inferentia and Trainium pools' devices schedulable and watched.

The decisions (chart values, scheduler-extension rule, monitor DaemonSet, dashboard) live in `neuron_values`; this
component creates the namespace, the Helm release, neuron-monitor and, with monitoring, its ServiceMonitor and
Grafana dashboard, in the right order.
"""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from .. import versions
from ..component_args import DNS_LABEL, KUBERNETES_VERSION, Args, KeywordArgs
from ..kubernetes_base.common import check_pool_set, child_opts, helm_release, pools_of, refuse_unless
from ..kubernetes_base.custom_object import KubernetesObject
from ..pools import GpuPoolSpec
from ..security import namespace_security
from . import neuron_values as nv


class NeuronStackArgs(TypedDict, total=False):
    """Arguments of `NeuronStack`."""

    pools: list[GpuPoolSpec]
    """The platform's pools; only the Neuron ones (inf2, trn1, trn2) are used: tolerations, the pools neuron-monitor
    runs on, and whether the scheduler extension is needed."""
    namespace: str
    """Namespace of the release, the node problem detector and neuron-monitor. Default ``aws-neuron``."""
    monitoring: bool
    """Create neuron-monitor's ServiceMonitor and the Neuron dashboard (needs the Prometheus Operator CRDs: make this
    component depend on the kube-prometheus-stack release). Default false."""
    service_monitor_labels: dict[str, str]
    """Extra labels on the ServiceMonitor (what Prometheus selects on). Default none."""
    monitoring_namespace: str
    """Namespace of Prometheus and Grafana: the dashboard ConfigMap goes there and Prometheus is let in to
    neuron-monitor's port. Default ``monitoring``."""
    kubernetes_version: str
    """The cluster's Kubernetes minor (``1.34``): the scheduler extension's second kube-scheduler runs that minor
    (`neuron_values.second_scheduler_image`). Default: the chart's image (eks-distro v1.31), outside the version-skew
    policy on newer clusters."""


RULES = {"namespace": DNS_LABEL, "monitoring_namespace": DNS_LABEL, "kubernetes_version": KUBERNETES_VERSION}


def checked_args(name: str, args: NeuronStackArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument)."""
    checker = Args("NeuronStack", name)
    checked = checker.check(args, NeuronStackArgs, RULES)
    check_pool_set(checker, checked.get("pools", []))
    if not nv.neuron_pools(pools_of(checked.get("pools", []))):
        checker.fail("pools", "has no AWS Neuron pool (inf2, trn1 or trn2 instance types)")
    refuse_unless(checker, checked, "service_monitor_labels", bool(checked.get("monitoring")), "with monitoring: true")
    refuse_unless(checker, checked, "monitoring_namespace", bool(checked.get("monitoring")), "with monitoring: true")
    return checked


class NeuronStack(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The Neuron Helm chart (device plugin, scheduler extension, node problem detector) and neuron-monitor."""

    namespace: pulumi.Output[str]
    release: k8s.helm.v3.Release
    """The Neuron chart's release: owner of ``aws.amazon.com/neuron`` and ``aws.amazon.com/neuroncore``."""

    def __init__(self, name: str, args: NeuronStackArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:NeuronStack", name, {}, opts)
        pools = nv.neuron_pools(pools_of(args["pools"]))
        ns = args.get("namespace", nv.DEFAULT_NAMESPACE)
        monitoring = bool(args.get("monitoring", False))
        monitoring_ns = args.get("monitoring_namespace", "monitoring") if monitoring else None

        namespace = k8s.core.v1.Namespace(f"{name}-namespace", **namespace_security.namespace_body(
            ns, nv.NAMESPACE_SECURITY), opts=child_opts(self, opts))
        in_ns = child_opts(self, opts, depends_on=[namespace])
        for policy in nv.network_policies(ns, monitoring_ns):
            KubernetesObject(f"{name}-{policy['metadata']['name']}", policy, opts=in_ns)
        self.release = helm_release(f"{name}-chart", versions.NEURON_HELM_CHART, nv.RELEASE_NAME, ns,
                                    nv.helm_values(pools, ns, args.get("kubernetes_version")), in_ns,
                                    create_namespace=False)
        KubernetesObject(f"{name}-monitor", nv.monitor_daemonset(pools, ns), opts=in_ns)
        if monitoring:
            service = nv.monitor_service(ns)
            k8s.core.v1.Service(f"{name}-monitor-service", metadata=service["metadata"], spec=service["spec"],
                                opts=in_ns)
            KubernetesObject(f"{name}-service-monitor",
                             nv.service_monitor(ns, dict(args.get("service_monitor_labels") or {})), opts=in_ns)
            from ..monitoring.gpu_monitoring import dashboard_configmap_body

            k8s.core.v1.ConfigMap(f"{name}-dashboard", **dashboard_configmap_body(
                nv.DASHBOARD_SLUG, monitoring_ns, nv.dashboard()), opts=child_opts(self, opts))
        self.namespace = pulumi.Output.from_input(ns)
        self.register_outputs({"namespace": self.namespace})
