"""Helm values and object bodies of the AWS Neuron stack (pure functions of the Neuron pools).

What runs (`NeuronStack`):

- The Neuron Helm chart (`versions.NEURON_HELM_CHART`): the Neuron device plugin, which advertises
  ``aws.amazon.com/neuron`` (devices) and ``aws.amazon.com/neuroncore`` (NeuronCores) on inf2/trn1/trn2 nodes;
  the Neuron scheduler extension; the Neuron node problem detector (monitor-only: it sets the ``NeuronHealth``
  node condition, its recovery agent stays off). The chart limits the device plugin to Neuron instance types itself
  (its ``neuronInstances`` affinity); the platform adds the pools' other taints to its tolerations. The chart's DRA
  driver and UltraServer operator stay off: the platform's quotas, Kueue flavors and Karpenter limits count the
  device plugin's extended resources, while a DRA driver hands devices out through ResourceClaims.
- neuron-monitor with its Prometheus exporter as a DaemonSet on the Neuron pools (the Neuron docs' manifest), a
  Service and ServiceMonitor for it, and a Grafana dashboard on its metrics.

Scheduler extension rule: on for a cluster with a Neuron pool of more than one device per node. There a pod asking
for part of a node (some devices, or NeuronCores) must get devices that are connected and cores that are contiguous,
which only the extension's filter and bind know; the default scheduler only counts them. On EKS it runs as the
chart's second scheduler (``my-scheduler``, the multiple-scheduler approach the Neuron docs require on EKS), which
such pods name in ``schedulerName``. Pools of one-device nodes (inf2.xlarge, inf2.8xlarge, trn1.2xlarge) never need
it. Every values key set here exists in the pinned chart's values (tests/data/chart_keys/neuron-helm-chart-
1.10.0.keys).
"""

from collections.abc import Sequence
from typing import Any, Optional

from .. import catalog, labels, versions
from ..kubernetes_base.common import all_pool_tolerations, metadata
from ..monitoring import dashboards as d
from ..monitoring.monitoring_policies import prometheus_peer
from ..pools import GpuPool
from ..security.namespace_security import PRIVILEGED, PodSecurity

DEFAULT_NAMESPACE = "aws-neuron"
"""Namespace of the platform's Neuron objects: the Helm release (whose device plugin and scheduler the chart puts
in kube-system), the node problem detector and neuron-monitor."""
RELEASE_NAME = "neuron"
NAMESPACE_SECURITY = PodSecurity(PRIVILEGED, (
    "the Neuron node problem detector reads /dev/kmsg and /var/log from the host (hostPath volumes) and "
    "neuron-monitor runs privileged to read the Neuron driver's counters (aws-neuron-sdk "
    "src/k8/k8s-neuron-monitor-daemonset.yml: securityContext.privileged)"))
"""The namespace's Pod Security level and why (the same decision as ``gpu-software``'s for NVIDIA's stack)."""

CHART_DEVICE_PLUGIN_TOLERATIONS = [
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "Equal", "value": "Unschedulable",
     "effect": "NoSchedule"},
]
"""The chart's own device-plugin tolerations (chart 1.10.0 devicePlugin.tolerations), kept when the list is
replaced: the second already covers the Neuron taint."""

MONITOR_NAME = "neuron-monitor"
MONITOR_PORT = 8000
"""neuron-monitor-prometheus.py's port in the Neuron docs' DaemonSet (``--port 8000``)."""
MONITOR_PORT_NAME = "metrics"
MONITOR_CONFIG = "/opt/aws/neuron/bin/neuron-monitor.conf"
MONITOR_LABELS = {labels.APP_NAME_LABEL: MONITOR_NAME}
DASHBOARD_SLUG = "neuron"

# neuron-monitor-prometheus.py metric names, as AWS's own Grafana dashboard for it queries them
# (aws-neuron/aws-neuron-sdk@v2.32.0 src/examples/neuron-monitor/neuron-monitor-grafana.json).
NEURONCORE_UTILIZATION = "neuroncore_utilization_ratio"
"""NeuronCore utilisation, 0-1, labels ``neuroncore``, ``instance_id``."""
RUNTIME_MEMORY_USED = "neuron_runtime_memory_used_bytes"
"""Memory the Neuron runtime uses, bytes, label ``memory_location`` (host / neuron_device)."""
EXECUTION_LATENCY = "execution_latency_seconds"
"""Model execution latency, seconds, label ``percentile``."""
EXECUTION_STATUS = "execution_status_total"
"""Executions by ``status_type`` (completed, errors...)."""
INSTANCE_INFO = "instance_info"
"""One series per monitored instance."""
NEURON_METRICS = (NEURONCORE_UTILIZATION, RUNTIME_MEMORY_USED, EXECUTION_LATENCY, EXECUTION_STATUS, INSTANCE_INFO)


def neuron_pools(pools: Sequence[GpuPool]) -> list[GpuPool]:
    """The pools of AWS Neuron accelerators."""
    return [p for p in pools if p.vendor == catalog.AWS_NEURON]


def needs_scheduler_extension(pools: Sequence[GpuPool]) -> bool:
    """The module docstring's rule: a Neuron pool whose nodes hold more than one device."""
    return any(p.gpus_per_node > 1 for p in neuron_pools(pools))


KUBE_SCHEDULER_REPOSITORY = "registry.k8s.io/kube-scheduler"
"""The second scheduler's image: upstream kube-scheduler at the cluster's own minor. The chart's default
(eks-distro kube-scheduler v1.31.12) is three minors behind the EKS versions the platform pins, outside the
version-skew policy (kube-scheduler at most one minor older than the API server)."""


def second_scheduler_image(kubernetes_version: str) -> dict[str, str]:
    """``scheduler.customScheduler.image`` for a cluster of ``kubernetes_version`` (``1.34`` -> ``v1.34.0``, the
    minor's first release, which every patch of the API server accepts)."""
    return {"repository": KUBE_SCHEDULER_REPOSITORY, "tag": f"v{kubernetes_version}.0"}


def helm_values(pools: Sequence[GpuPool], namespace: str = DEFAULT_NAMESPACE,
                kubernetes_version: str | None = None) -> dict[str, Any]:
    """Values of the Neuron Helm chart for these pools (``kubernetes_version``: the cluster's minor, which the
    extension's second scheduler follows; none keeps the chart's image)."""
    selected = neuron_pools(pools)
    extra = [t for t in all_pool_tolerations(selected) if not _tolerated(t, CHART_DEVICE_PLUGIN_TOLERATIONS)]
    return {
        # Off by default in 1.10.0, off here on purpose (module docstring): a chart bump that turns them on must not
        # change what the platform runs.
        "draDriver": {"enabled": False},
        "ultraserverOperator": {"enabled": False},
        "devicePlugin": {"enabled": True, "tolerations": [*CHART_DEVICE_PLUGIN_TOLERATIONS, *extra]},
        # The extension and its second scheduler run on ordinary nodes (chart defaults: no tolerations).
        "scheduler": {"enabled": needs_scheduler_extension(selected), "customScheduler": {
            "enabled": True,
            **({"image": second_scheduler_image(kubernetes_version)} if kubernetes_version else {})}},
        # The NPD's chart default namespace (neuron-healthcheck-system) is not one the platform creates or labels:
        # the platform's Pod-Security-labelled namespace instead. Its default tolerations (every NoSchedule and
        # NoExecute taint) stay; the recovery agent (which replaces nodes through AWS APIs) stays off.
        "npd": {"enabled": True, "namespaceOverride": namespace, "nodeRecovery": {"enabled": False}},
    }


def _tolerated(toleration: dict[str, Any], by: Sequence[dict[str, Any]]) -> bool:
    """Whether a taint ``toleration`` tolerates is tolerated by one of ``by`` already (an ``Exists`` on its key, for
    its effect or every effect)."""
    return any(t.get("operator") == "Exists" and t.get("key") == toleration.get("key")
               and t.get("effect") in (None, toleration.get("effect")) for t in by)


def _pool_affinity(pools: Sequence[GpuPool]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": labels.POOL_LABEL, "operator": "In", "values": sorted(p.name for p in pools)}]}
    ]}}}


def monitor_daemonset(pools: Sequence[GpuPool], namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
    """neuron-monitor and its Prometheus exporter on every node of the Neuron pools (the Neuron docs' DaemonSet,
    with the pools' affinity and tolerations instead of its instance-type list)."""
    selected = neuron_pools(pools)
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": metadata(MONITOR_NAME, namespace, MONITOR_LABELS),
        "spec": {
            "selector": {"matchLabels": dict(MONITOR_LABELS)},
            "template": {
                "metadata": {"labels": dict(MONITOR_LABELS)},
                "spec": {
                    # Without --enable-k8s-info neuron-monitor never calls the API server: no token.
                    "automountServiceAccountToken": False,
                    "affinity": _pool_affinity(selected),
                    "tolerations": all_pool_tolerations(selected),
                    "containers": [{
                        "name": MONITOR_NAME,
                        "image": versions.NEURON_MONITOR_IMAGE.reference,
                        "command": ["/opt/bin/entrypoint.sh"],
                        "args": ["--port", str(MONITOR_PORT), "--neuron-monitor-config", MONITOR_CONFIG],
                        "ports": [{"name": MONITOR_PORT_NAME, "containerPort": MONITOR_PORT, "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": "500m", "memory": "256Mi"},
                                      "requests": {"cpu": "256m", "memory": "128Mi"}},
                        "env": [{"name": "GOMEMLIMIT", "value": "160MiB"}],
                        "securityContext": {"privileged": True},
                    }],
                },
            },
        },
    }


def monitor_service(namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
    """The Service the ServiceMonitor selects: every neuron-monitor pod's metrics port."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": metadata(MONITOR_NAME, namespace, MONITOR_LABELS),
        "spec": {"selector": dict(MONITOR_LABELS), "clusterIP": "None",
                 "ports": [{"name": MONITOR_PORT_NAME, "port": MONITOR_PORT, "targetPort": MONITOR_PORT_NAME,
                            "protocol": "TCP"}]},
    }


def service_monitor(namespace: str = DEFAULT_NAMESPACE,
                    service_monitor_labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """ServiceMonitor of neuron-monitor; ``node`` from the pod's node, as the DCGM exporter's series carry."""
    return {
        "apiVersion": versions.PROMETHEUS_OPERATOR_API_VERSION, "kind": "ServiceMonitor",
        "metadata": metadata(MONITOR_NAME, namespace, {**MONITOR_LABELS, **(service_monitor_labels or {})}),
        "spec": {
            "selector": {"matchLabels": dict(MONITOR_LABELS)},
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [{"port": MONITOR_PORT_NAME, "path": "/", "interval": "30s",
                           "relabelings": [{"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                                            "targetLabel": "node"}]}],
        },
    }


def network_policies(namespace: str, monitoring_namespace: Optional[str]) -> list[dict[str, Any]]:
    """Ingress to the Neuron namespace denied, but from Prometheus to neuron-monitor's port (with monitoring)."""
    def policy(name: str, pods: Optional[dict[str, str]], ingress: Optional[list[dict]]) -> dict[str, Any]:
        spec: dict[str, Any] = {"podSelector": {"matchLabels": dict(pods)} if pods else {}, "policyTypes": ["Ingress"]}
        if ingress is not None:
            spec["ingress"] = ingress
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": metadata(name, namespace), "spec": spec}

    policies = [policy("default-deny-ingress", None, None)]
    if monitoring_namespace:
        policies.append(policy("allow-prometheus", MONITOR_LABELS, [{
            "from": [prometheus_peer(monitoring_namespace)],
            "ports": [{"protocol": "TCP", "port": MONITOR_PORT}]}]))
    return policies


def dashboard() -> dict[str, Any]:
    """The Grafana dashboard of the Neuron pools, on neuron-monitor's metrics."""
    panels = [
        d.stat("Neuron instances", f"count({INSTANCE_INFO})", description="Nodes whose neuron-monitor reports."),
        d.stat("Busy NeuronCores", f"count({NEURONCORE_UTILIZATION} > 0)"),
        d.gauge("Mean NeuronCore utilisation", f"100 * avg({NEURONCORE_UTILIZATION})"),
        d.row("NeuronCores"),
        d.timeseries("NeuronCore utilisation by node",
                     [d.target(f"100 * avg by (node) ({NEURONCORE_UTILIZATION})", "{{node}}")], unit="percent"),
        d.timeseries("Neuron runtime memory used",
                     [d.target(f"sum by (node, memory_location) ({RUNTIME_MEMORY_USED})",
                               "{{node}} {{memory_location}}")], unit="bytes"),
        d.row("Executions"),
        d.timeseries("Execution latency", [d.target(f"avg by (percentile) ({EXECUTION_LATENCY})",
                                                    "{{percentile}}")], unit="s"),
        d.timeseries("Execution errors", [d.target(
            f'sum by (status_type) (rate({EXECUTION_STATUS}{{status_type!="completed"}}[$__rate_interval]))',
            "{{status_type}}")], unit="ops"),
    ]
    return d.dashboard("gpu-platform-neuron", "AWS Neuron", "Inferentia and Trainium pools: NeuronCore utilisation, "
                       "runtime memory and executions from neuron-monitor.", panels, [])
