"""`GpuMonitoring`: kube-prometheus-stack with Grafana and Alertmanager, GPU recording rules, alerts, dashboards.

What it deploys (pure functions below decide every body; the component only wires them):

- Namespace ``monitoring`` (Pod Security ``privileged``: node-exporter needs host namespaces and paths).
- The Grafana admin Secret: the configured password, or a generated one (``random.RandomPassword``), always a
  Pulumi secret; Grafana reads it through ``grafana.admin.existingSecret`` so it is not in the Helm values.
- kube-prometheus-stack (`versions.KUBE_PROMETHEUS_STACK`): Prometheus selects ServiceMonitors, PodMonitors,
  PrometheusRules, Probes and ScrapeConfigs from every namespace and release (``*NilUsesHelmValues: false``);
  Grafana's sidecar loads every ConfigMap labelled ``grafana_dashboard: "1"``; kube-state-metrics exports the
  node label ``gpu-platform.io/pool`` and the namespace label ``gpu-platform.io/team`` so rules can aggregate
  per pool and team.
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
from ..component_args import DNS_LABEL, NON_EMPTY, PROMETHEUS_DURATION, STORAGE_QUANTITY, Args
from ..config_model import PlatformConfig
from ..pools import GpuPool, GpuPoolSpec
from ..versions import KUBE_PROMETHEUS_STACK, PROMETHEUS_OPERATOR_API_VERSION
from . import alerts as rules
from . import dashboards
from .common import DNS_SUBDOMAIN, HTTP_URL, a_cloud, check_pool_set, child_opts, helm_release, metadata, pools_of

DEFAULT_NAMESPACE = "monitoring"
RELEASE_NAME = "kube-prometheus-stack"
"""Helm release name, also the chart's ``fullnameOverride``: services are ``<it>-prometheus`` and so on."""
PROMETHEUS_PORT = 9090
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
                                 grafana_admin_secret: str = GRAFANA_ADMIN_SECRET) -> dict[str, Any]:
    """Helm values for kube-prometheus-stack; every key exists in the pinned chart's (or subchart's) values.yaml."""
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
            "sidecar": {"dashboards": {
                "enabled": True, "label": labels.GRAFANA_DASHBOARD_LABEL, "labelValue": "1",
                "searchNamespace": "ALL", "folderAnnotation": labels.GRAFANA_FOLDER_ANNOTATION,
                "provider": {"foldersFromFilesStructure": True},
            }},
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
    return {"metadata": metadata(namespace, extra_labels={labels.POD_SECURITY_ENFORCE_LABEL: "privileged"})}


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


RULES = {
    "namespace": DNS_LABEL,
    "retention": PROMETHEUS_DURATION,
    "storage_size": STORAGE_QUANTITY,
    "storage_class": DNS_SUBDOMAIN,
    "grafana_admin_password": NON_EMPTY,
    "inference_namespace": DNS_LABEL,
    "runbook_base_url": HTTP_URL,
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


class GpuMonitoring(pulumi.ComponentResource):
    """Prometheus, Alertmanager and Grafana (kube-prometheus-stack) with the platform's GPU rules and dashboards.

    Attributes: ``release`` (the Helm release; depend on it before creating ServiceMonitors or PrometheusRules),
    ``namespace``, ``service_monitor_labels`` (``release: <release>``: not needed by this Prometheus, whose
    selectors take every monitor, but what a stricter one selects on), ``prometheus_url`` (in-cluster),
    ``alertmanager_url``, ``grafana_url``,
    ``grafana_admin_password`` (secret Output), ``rules`` and ``dashboards`` (the objects created).
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

        values = kube_prometheus_stack_values(args.get("retention") or "15d", args.get("storage_size") or "50Gi",
                                              args.get("storage_class"))
        self.release = helm_release(f"{name}-kube-prometheus-stack", KUBE_PROMETHEUS_STACK, RELEASE_NAME, ns,
                                    values, child_opts(self, opts, depends_on=[namespace, admin_secret]),
                                    create_namespace=False)

        # Custom resources need the CRDs the release installs.
        after_crds = child_opts(self, opts, depends_on=[self.release])
        rule_set = rules.rule_set(pools, thresholds, args.get("runbook_base_url") or DEFAULT_RUNBOOK_BASE_URL)
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
                                  opts=child_opts(self, opts, depends_on=[namespace]))
            for slug, body in dashboards.all_dashboards(args.get("inference_namespace") or "inference",
                                                        thresholds).items()
        ]
        self.register_outputs({
            "namespace": ns, "prometheus_url": self.prometheus_url, "alertmanager_url": self.alertmanager_url,
            "grafana_url": self.grafana_url, "grafana_admin_password": self.grafana_admin_password,
        })
