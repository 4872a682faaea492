"""`GpuMonitoring`: kube-prometheus-stack with Grafana and Alertmanager, GPU recording rules, alerts, dashboards.

What it deploys (pure functions below decide every body; the component only wires them):

- Namespace ``monitoring`` (Pod Security ``privileged``: node-exporter needs host namespaces and paths; audit and
  warn ``restricted``; `namespace_security`).
- NetworkPolicies (`monitoring_policies`): ingress denied by default; Prometheus' API from Grafana and the
  namespaces that query it (``prometheus_client_namespaces``), Alertmanager from Prometheus and Grafana, Grafana from
  its own namespace, the operator's webhook port from the API server, everything from Prometheus (scrapes).
- Grafana without Secret access: the chart's RBAC off, a Role reading ConfigMaps of this namespace bound to its
  service account; the dashboard and datasource sidecars read labelled ConfigMaps of this namespace only.
- The Grafana admin Secret: the configured password, or a generated one (``random.RandomPassword``), always a
  Pulumi secret; Grafana reads it through ``grafana.admin.existingSecret`` so it is not in the Helm values.
- kube-prometheus-stack (`versions.KUBE_PROMETHEUS_STACK`): Prometheus selects ServiceMonitors, PodMonitors,
  PrometheusRules, Probes and ScrapeConfigs from every namespace and release (``*NilUsesHelmValues: false``);
  Grafana's sidecar loads the ConfigMaps of this namespace labelled ``grafana_dashboard: "1"``; kube-state-metrics
  exports the node label ``gpu-platform.io/pool`` and the namespace label ``gpu-platform.io/team`` so rules can
  aggregate per pool and team.
- PrometheusRules with the GPU recording rules and alerts (`alerts`), dashboards as ConfigMaps (`dashboards`).
- On GKE with cloud-managed GPUs, a PodMonitor that scrapes GKE's managed DCGM exporter
  (``gke-managed-system``, pods ``app.kubernetes.io/name: gke-managed-dcgm-exporter``, port ``metrics``).
  Elsewhere the NVIDIA layer deploys the DCGM exporter with its own ServiceMonitor (``honorLabels: true``).

Everything that needs the ``monitoring.coreos.com`` CRDs depends on `GpuMonitoring.release`; other layers do the
same for their ServiceMonitors.
"""

import json
from collections.abc import Sequence
from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random
from typing_extensions import Required

from .. import labels
from ..component_args import DNS_LABEL, NON_EMPTY, PROMETHEUS_DURATION, STORAGE_QUANTITY, Args, KeywordArgs
from ..config_model import PlatformConfig
from ..kubernetes_base.common import (
    DNS_SUBDOMAIN,
    HTTP_URL,
    a_cloud,
    check_pool_set,
    child_opts,
    helm_release,
    metadata,
    pools_of,
)
from ..pools import GpuPool, GpuPoolSpec
from ..security import namespace_security
from ..versions import KUBE_PROMETHEUS_STACK, PROMETHEUS_OPERATOR_API_VERSION
from . import alerts as rules
from . import dashboards, monitoring_policies

DEFAULT_NAMESPACE = "monitoring"
RELEASE_NAME = monitoring_policies.RELEASE_NAME
"""Helm release name, also the chart's ``fullnameOverride``: services are ``<it>-prometheus`` and so on."""
PROMETHEUS_PORT = monitoring_policies.PROMETHEUS_PORT
OPTIMIZER_NAMESPACE = "gpu-optimizer"
"""`GpuOptimizer`'s namespace (its default; the platform passes none): it queries Prometheus."""
GRAFANA_ADMIN_SECRET = "grafana-admin"
GRAFANA_ADMIN_USER = "admin"
GRAFANA_USER_KEY = "admin-user"
GRAFANA_PASSWORD_KEY = "admin-password"
DEFAULT_RUNBOOK_BASE_URL = "https://github.com/gpu-platform/gpu-platform/blob/main"
RECORDING_RULES_NAME = "gpu-platform-recording-rules"
ALERT_RULES_NAME = "gpu-platform-alerts"

# GKE's managed DCGM exporter (GKE "DCGM" metrics package): a DaemonSet in gke-managed-system whose pods carry
# app.kubernetes.io/name=gke-managed-dcgm-exporter and expose a container port named `metrics` (9400).
GKE_MANAGED_DCGM_NAMESPACE = "gke-managed-system"
GKE_MANAGED_DCGM_APP = "gke-managed-dcgm-exporter"
GKE_MANAGED_DCGM_PORT = "metrics"
GKE_MANAGED_DCGM_POD_MONITOR = "gke-managed-dcgm-exporter"


# ---------------------------------------------------------------------------------------------------------
# Pure decisions


def ksm_label_allowlist() -> list[str]:
    """kube-state-metrics ``metricLabelsAllowlist``: the labels our rules join on (pool per node, team per ns)."""
    return [f"nodes=[{labels.POOL_LABEL},{labels.ACCELERATOR_LABEL}]", f"namespaces=[{labels.TEAM_LABEL}]"]


def kube_prometheus_stack_values(retention: str, storage_size: str, storage_class: Optional[str] = None,
                                 grafana_admin_secret: str = GRAFANA_ADMIN_SECRET,
                                 namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
    """Helm values for kube-prometheus-stack; every key exists in the pinned chart's (or subchart's) values.yaml.

    Grafana's part comes with `monitoring_policies.grafana_values` (no Secret access, this namespace only).
    """
    grafana = monitoring_policies.grafana_values(namespace)
    claim: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage_size}}}
    if storage_class:
        claim["storageClassName"] = storage_class
    return {
        "fullnameOverride": RELEASE_NAME,
        "crds": {"enabled": True},
        "alertmanager": {"enabled": True},
        "prometheus": {
            "prometheusSpec": {
                # Select monitors and rules of every release, not only those labelled `release: <us>`.
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "probeSelectorNilUsesHelmValues": False,
                "scrapeConfigSelectorNilUsesHelmValues": False,
                "retention": retention,
                "storageSpec": {"volumeClaimTemplate": {"spec": claim}},
            },
        },
        "grafana": {
            "enabled": True,
            "admin": {"existingSecret": grafana_admin_secret, "userKey": GRAFANA_USER_KEY,
                      "passwordKey": GRAFANA_PASSWORD_KEY},
            "rbac": grafana["rbac"],
            "serviceAccount": grafana["serviceAccount"],
            "sidecar": {
                "dashboards": {
                    "enabled": True, "label": labels.GRAFANA_DASHBOARD_LABEL, "labelValue": "1",
                    "folderAnnotation": labels.GRAFANA_FOLDER_ANNOTATION,
                    "provider": {"foldersFromFilesStructure": True},
                    **grafana["sidecar"]["dashboards"],
                },
                "datasources": grafana["sidecar"]["datasources"],
            },
        },
        "kube-state-metrics": {"metricLabelsAllowlist": ksm_label_allowlist()},
    }


def prometheus_url(namespace: str = DEFAULT_NAMESPACE) -> str:
    """In-cluster URL of Prometheus (the chart's ``<fullname>-prometheus`` Service)."""
    return f"http://{RELEASE_NAME}-prometheus.{namespace}.svc.cluster.local:{PROMETHEUS_PORT}"


def alertmanager_url(namespace: str = DEFAULT_NAMESPACE) -> str:
    return f"http://{RELEASE_NAME}-alertmanager.{namespace}.svc.cluster.local:9093"


def grafana_url(namespace: str = DEFAULT_NAMESPACE) -> str:
    """The Grafana subchart's Service is ``<release>-grafana`` on port 80."""
    return f"http://{RELEASE_NAME}-grafana.{namespace}.svc.cluster.local"


def namespace_body(namespace: str) -> dict[str, Any]:
    """The monitoring namespace with its Pod Security labels (`namespace_security`: ``privileged``)."""
    return namespace_security.namespace_body(namespace, namespace_security.namespace_pod_security("monitoring"))


def prometheus_clients(config: PlatformConfig, pools: list[GpuPoolSpec]) -> list[str]:
    """Namespaces whose pods query Prometheus' API in a stack: the optimizer's, and KEDA's when the inference
    service scales on queue depth (the same conditions under which `GpuPlatform` builds them)."""
    from ..autoscaling.autoscaling_plan import inference_pool_of
    from ..serving import keda

    clients = []
    if config.runs_optimizer:
        clients.append(OPTIMIZER_NAMESPACE)
    inference_keda = config.inference.autoscaler == "keda" and inference_pool_of(config, pools_of(pools)) is not None
    llm_keda = config.llm is not None and config.llm.autoscaler == "keda"
    if inference_keda or llm_keda:
        # KEDA's operator evaluates the ScaledObjects' prometheus triggers against this Prometheus.
        clients.append(keda.DEFAULT_NAMESPACE)
    return clients


def prometheus_rule_body(name: str, namespace: str, groups: Sequence[rules.RuleGroup]) -> dict[str, Any]:
    """A ``PrometheusRule`` (wire form) holding ``groups``; labelled ``release`` for selectors that want it."""
    return {
        "apiVersion": PROMETHEUS_OPERATOR_API_VERSION, "kind": "PrometheusRule",
        "metadata": metadata(name, namespace, {labels.HELM_RELEASE_LABEL: RELEASE_NAME}),
        "spec": {"groups": [g.as_dict() for g in groups]},
    }


def dashboard_configmap_body(slug: str, namespace: str, dashboard: dict[str, Any]) -> dict[str, Any]:
    """A ConfigMap the Grafana sidecar loads: label ``grafana_dashboard: "1"``, folder annotation, one JSON file."""
    return {
        "metadata": metadata(f"{slug}-dashboard", namespace, {labels.GRAFANA_DASHBOARD_LABEL: "1"},
                             {labels.GRAFANA_FOLDER_ANNOTATION: dashboards.FOLDER}),
        "data": {f"{slug}.json": json.dumps(dashboard, indent=1, sort_keys=True)},
    }


def gke_managed_dcgm_pod_monitor_body(namespace: str) -> dict[str, Any]:
    """PodMonitor for GKE's managed DCGM exporter.

    ``honorLabels`` keeps the exporter's ``pod``/``namespace``/``container`` (the workload on the GPU); the
    relabeling adds ``node`` from the pod's node, which the recording rules prefer over ``Hostname``.
    """
    return {
        "apiVersion": PROMETHEUS_OPERATOR_API_VERSION, "kind": "PodMonitor",
        "metadata": metadata(GKE_MANAGED_DCGM_POD_MONITOR, namespace, {labels.HELM_RELEASE_LABEL: RELEASE_NAME}),
        "spec": {
            "namespaceSelector": {"matchNames": [GKE_MANAGED_DCGM_NAMESPACE]},
            "selector": {"matchLabels": {labels.APP_NAME_LABEL: GKE_MANAGED_DCGM_APP}},
            "podMetricsEndpoints": [{
                "port": GKE_MANAGED_DCGM_PORT, "path": "/metrics", "interval": "30s", "honorLabels": True,
                "relabelings": [{"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                                 "targetLabel": "node"}],
            }],
        },
    }


def monitoring_args(config: PlatformConfig, pools: list[GpuPoolSpec]) -> "GpuMonitoringArgs":
    """`GpuMonitoring` args from a stack's configuration (what `GpuPlatform` passes)."""
    return GpuMonitoringArgs(
        pools=pools,
        retention=config.monitoring.retention,
        storage_size=config.monitoring.storage_size,
        grafana_admin_password=config.monitoring.grafana_admin_password,
        # GKE's managed DCGM exporter: the GKE layer turns it on (cluster option managedDcgm, on by default with
        # cloud-managed GPUs); the NVIDIA layer then deploys no exporter of its own there.
        gke_managed_dcgm=config.cloud == "gcp" and bool(getattr(config.cluster_options, "managed_dcgm", False)),
        inference_namespace=config.inference.namespace,
        prometheus_client_namespaces=prometheus_clients(config, pools),
        **({"llm_namespace": config.llm.namespace} if config.llm is not None else {}),
    )


# ---------------------------------------------------------------------------------------------------------
# Component


def custom_resource(resource_name: str, body: dict[str, Any],
                    opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(resource_name, api_version=body["apiVersion"], kind=body["kind"],
                                            metadata=body["metadata"], spec=body["spec"], opts=opts)


class GpuMonitoringArgs(TypedDict, total=False):
    """Arguments of `GpuMonitoring`."""

    pools: Required[list[GpuPoolSpec]]
    """GPU pools (required): the physical GPUs per node the lost-GPU alert expects come from their shapes."""
    namespace: str
    """Namespace of the monitoring stack. Default ``monitoring``."""
    retention: str
    """Prometheus retention (a Prometheus duration). Default ``15d``."""
    storage_size: str
    """Size of Prometheus' PersistentVolumeClaim. Default ``50Gi``."""
    storage_class: Optional[str]
    """StorageClass of that claim. Default: the cluster's default class."""
    grafana_admin_password: Optional[pulumi.Input[str]]
    """Grafana admin password (kept a secret). Default: a generated 24-character password."""
    gke_managed_dcgm: bool
    """Scrape GKE's managed DCGM exporter (GKE with cloud-managed GPUs). Default false."""
    inference_namespace: str
    """Namespace the inference dashboard opens on. Default ``inference``."""
    runbook_base_url: str
    """Base URL of the repository holding ``docs/runbooks.md`` (each alert links its section)."""
    alert_thresholds: Optional[dict[str, Any]]
    """Overrides of `alerts.AlertThresholds` fields (``{"gpu_temperature_celsius": 80}``)."""
    prometheus_client_namespaces: list[str]
    """Namespaces whose pods may query Prometheus' API (port 9090) besides Grafana, e.g. the optimizer's and
    KEDA's. Default none: every other pod of the cluster is refused by a NetworkPolicy."""
    llm_namespace: Optional[str]
    """Namespace of an `LlmService`: adds the LLM alerts and the LLM serving dashboard (opening on it). Default none."""


RULES = {
    "namespace": DNS_LABEL,
    "retention": PROMETHEUS_DURATION,
    "storage_size": STORAGE_QUANTITY,
    "storage_class": DNS_SUBDOMAIN,
    "grafana_admin_password": NON_EMPTY,
    "inference_namespace": DNS_LABEL,
    "runbook_base_url": HTTP_URL,
    "prometheus_client_namespaces[]": DNS_LABEL,
    "llm_namespace": DNS_LABEL,
}


def checked_args(name: str, args: GpuMonitoringArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("GpuMonitoring", name)
    checked = checker.check(args, GpuMonitoringArgs, RULES)
    pools = checked["pools"]
    check_pool_set(checker, pools)
    for key, value in (checked.get("alert_thresholds") or {}).items():
        try:
            rules.AlertThresholds.from_overrides({key: value})
        except ValueError as err:  # "alert_thresholds.<key>: <problem>"
            checker.fail(f"alert_thresholds.{key}", str(err).split(": ", 1)[-1])
    if checked.get("gke_managed_dcgm") and any(p["cloud"] != "gcp" for p in pools):
        other = next(p for p in pools if p["cloud"] != "gcp")
        checker.fail("gke_managed_dcgm", f"GKE's managed DCGM exporter runs on GKE only; pool '{other['name']}' is "
                                         f"{a_cloud(other['cloud'])} pool")
    return checked


class GpuMonitoring(pulumi.ComponentResource, metaclass=KeywordArgs):
    """Prometheus, Alertmanager and Grafana (kube-prometheus-stack) with the platform's GPU rules and dashboards.

    Attributes: ``release`` (the Helm release; depend on it before creating ServiceMonitors or PrometheusRules),
    ``namespace``, ``service_monitor_labels`` (``release: <release>``: not needed by this Prometheus, whose
    selectors take every monitor, but what a stricter one selects on), ``prometheus_url`` (in-cluster),
    ``alertmanager_url``, ``grafana_url``,
    ``grafana_admin_password`` (secret Output), ``rules``, ``dashboards`` and ``network_policies`` (the objects
    created).
    """

    release: k8s.helm.v3.Release
    namespace: str
    prometheus_url: str
    alertmanager_url: str
    grafana_url: str
    grafana_admin_password: pulumi.Output[str]

    def __init__(self, name: str, args: GpuMonitoringArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:GpuMonitoring", name, {}, opts)
        pools: list[GpuPool] = pools_of(args["pools"])
        thresholds = rules.AlertThresholds.from_overrides(args.get("alert_thresholds"))
        ns = args.get("namespace") or DEFAULT_NAMESPACE
        self.namespace = ns
        self.service_monitor_labels = {labels.HELM_RELEASE_LABEL: RELEASE_NAME}
        self.prometheus_url = prometheus_url(ns)
        self.alertmanager_url = alertmanager_url(ns)
        self.grafana_url = grafana_url(ns)

        namespace = k8s.core.v1.Namespace(f"{name}-namespace", **namespace_body(ns), opts=child_opts(self, opts))

        given = args.get("grafana_admin_password")
        if given is None:
            generated = random.RandomPassword(f"{name}-grafana-admin-password", length=24, special=False,
                                              opts=child_opts(self, opts))
            password = pulumi.Output.secret(generated.result)
        else:
            password = pulumi.Output.secret(given)
        self.grafana_admin_password = password
        admin_secret = k8s.core.v1.Secret(
            f"{name}-grafana-admin", metadata=metadata(GRAFANA_ADMIN_SECRET, ns), type="Opaque",
            string_data={GRAFANA_USER_KEY: GRAFANA_ADMIN_USER, GRAFANA_PASSWORD_KEY: password},
            opts=child_opts(self, opts, depends_on=[namespace]))

        in_namespace = child_opts(self, opts, depends_on=[namespace])
        role_body, binding_body = (monitoring_policies.grafana_sidecar_role(ns),
                                   monitoring_policies.grafana_sidecar_role_binding(ns))
        sidecar_role = k8s.rbac.v1.Role(f"{name}-grafana-sidecar", metadata=role_body["metadata"],
                                        rules=role_body["rules"], opts=in_namespace)
        sidecar_binding = k8s.rbac.v1.RoleBinding(
            f"{name}-grafana-sidecar", metadata=binding_body["metadata"], role_ref=binding_body["roleRef"],
            subjects=binding_body["subjects"], opts=child_opts(self, opts, depends_on=[namespace, sidecar_role]))
        # Before the release: its pods start behind them, and Grafana's sidecars can read their ConfigMaps at once.
        self.network_policies = [
            k8s.networking.v1.NetworkPolicy(f"{name}-{body['metadata']['name']}", metadata=body["metadata"],
                                            spec=body["spec"], opts=in_namespace)
            for body in monitoring_policies.network_policies(ns, args.get("prometheus_client_namespaces", []))
        ]

        values = kube_prometheus_stack_values(args.get("retention") or "15d", args.get("storage_size") or "50Gi",
                                              args.get("storage_class"), namespace=ns)
        self.release = helm_release(f"{name}-kube-prometheus-stack", KUBE_PROMETHEUS_STACK, RELEASE_NAME, ns,
                                    values, child_opts(self, opts, depends_on=[
                                        namespace, admin_secret, sidecar_binding, *self.network_policies]),
                                    create_namespace=False)

        # Custom resources need the CRDs the release installs.
        after_crds = child_opts(self, opts, depends_on=[self.release])
        rule_set = rules.rule_set(pools, thresholds, args.get("runbook_base_url") or DEFAULT_RUNBOOK_BASE_URL,
                                  llm=bool(args.get("llm_namespace")))
        self.rules = [
            custom_resource(f"{name}-{rule_name}", prometheus_rule_body(rule_name, ns, groups), after_crds)
            for rule_name, groups in ((RECORDING_RULES_NAME, rule_set.recording),
                                      (ALERT_RULES_NAME, rule_set.alerting))
        ]
        self.gke_pod_monitor: Optional[k8s.apiextensions.CustomResource] = None
        if args.get("gke_managed_dcgm"):
            self.gke_pod_monitor = custom_resource(f"{name}-gke-managed-dcgm",
                                                   gke_managed_dcgm_pod_monitor_body(ns), after_crds)

        self.dashboards = [
            k8s.core.v1.ConfigMap(f"{name}-{slug}-dashboard", **dashboard_configmap_body(slug, ns, body),
                                  opts=in_namespace)
            for slug, body in dashboards.all_dashboards(args.get("inference_namespace") or "inference", thresholds,
                                                        rules.other_accelerator_resources(pools),
                                                        args.get("llm_namespace")).items()
        ]
        self.register_outputs({
            "namespace": ns, "prometheus_url": self.prometheus_url, "alertmanager_url": self.alertmanager_url,
            "grafana_url": self.grafana_url, "grafana_admin_password": self.grafana_admin_password,
        })
