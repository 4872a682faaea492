"""GpuMonitoring: kube-prometheus-stack values, the objects it creates, their schemas, and its place in the platform."""

import re
from pathlib import Path

import pytest
import yaml

from gpu_platform import labels
from gpu_platform.config import Secret, parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.monitoring import gpu_monitoring as monitoring
from gpu_platform.monitoring.gpu_monitoring import GpuMonitoring, kube_prometheus_stack_values, monitoring_args
from gpu_platform.plan import load_stack_file, plan_stack, render_manifests
from gpu_platform.pools import GpuPool
from gpu_platform.schemas import ManifestError, validate_manifest
from gpu_platform.testing import REDACTED, run_program

ROOT = Path(__file__).resolve().parents[1]
CHART_KEYS = ROOT / "tests" / "data" / "chart_keys" / "kube-prometheus-stack-88.5.3.keys"
POOLS = [GpuPool("h100-train", "existing", "", "h100", 8, 80, 0, 4).spec(),
         GpuPool("l4-infer", "existing", "", "l4", 4, 24, 0, 4).spec()]
GKE_POOLS = [GpuPool("l4-infer", "gcp", "g2-standard-48", "l4", 4, 24, 0, 4).spec()]
PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
RELEASE = "kubernetes:helm.sh/v3:Release"
RANDOM_PASSWORD = "random:index/randomPassword:RandomPassword"


# ---------------------------------------------------------------------------------------------------------
# Helm values


def test_values_open_every_selector_and_set_retention_storage_grafana_and_ksm_labels():
    values = kube_prometheus_stack_values("30d", "200Gi", "premium-rwo")
    spec = values["prometheus"]["prometheusSpec"]
    assert {k: v for k, v in spec.items() if k.endswith("NilUsesHelmValues")} == {
        "serviceMonitorSelectorNilUsesHelmValues": False, "podMonitorSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False, "probeSelectorNilUsesHelmValues": False,
        "scrapeConfigSelectorNilUsesHelmValues": False}
    assert spec["retention"] == "30d"
    assert spec["storageSpec"] == {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "200Gi"}},
        "storageClassName": "premium-rwo"}}}
    assert values["grafana"]["admin"] == {"existingSecret": "grafana-admin", "userKey": "admin-user",
                                          "passwordKey": "admin-password"}
    assert values["grafana"]["sidecar"]["dashboards"] == {
        "enabled": True, "label": "grafana_dashboard", "labelValue": "1", "searchNamespace": "monitoring",
        "resource": "configmap", "folderAnnotation": "grafana_folder", "provider": {"foldersFromFilesStructure": True}}
    assert values["grafana"]["sidecar"]["datasources"] == {"resource": "configmap", "searchNamespace": "monitoring"}
    assert values["grafana"]["rbac"] == {"create": False}
    assert values["grafana"]["serviceAccount"] == {"name": "kube-prometheus-stack-grafana"}
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "nodes=[gpu-platform.io/pool,gpu-platform.io/accelerator]", "namespaces=[gpu-platform.io/team]"]
    assert values["alertmanager"] == {"enabled": True}
    assert values["grafana"]["enabled"] is True and values["crds"] == {"enabled": True}
    assert values["fullnameOverride"] == "kube-prometheus-stack"
    assert "storageClassName" not in kube_prometheus_stack_values("15d", "50Gi")["prometheus"]["prometheusSpec"][
        "storageSpec"]["volumeClaimTemplate"]["spec"]


def _chart_keys() -> dict[str, str]:
    keys = {}
    for line in CHART_KEYS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            path, kind = line.rsplit(" ", 1)
            keys[path] = kind
    return keys


def _leaf_paths(values: dict, prefix: str = ""):
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and value:
            yield from _leaf_paths(value, path)
        else:
            yield path


def test_every_values_key_exists_in_the_pinned_chart():
    """Each key path exists in kube-prometheus-stack 88.5.3's values.yaml (or its subcharts'), or lies below a
    map that is empty upstream (``prometheusSpec.storageSpec`` is passed through to the Prometheus CR)."""
    keys = _chart_keys()
    assert monitoring.KUBE_PROMETHEUS_STACK.version == "88.5.3"
    for path in _leaf_paths(kube_prometheus_stack_values("15d", "50Gi", "standard")):
        parts = path.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            assert prefix in keys, f"{path}: '{prefix}' is not a key of the chart's values"
            if keys[prefix] == "open-map":
                break


def test_service_urls():
    assert monitoring.prometheus_url() == "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"
    assert monitoring.alertmanager_url("obs") == "http://kube-prometheus-stack-alertmanager.obs.svc.cluster.local:9093"
    assert monitoring.grafana_url() == "http://kube-prometheus-stack-grafana.monitoring.svc.cluster.local"


# ---------------------------------------------------------------------------------------------------------
# The component


@pytest.fixture(scope="module")
def default_run():
    return run_program(lambda: GpuMonitoring("mon", {"pools": POOLS}))


def test_component_children_and_release(default_run):
    rec = default_run
    component = rec.one("gpuplatform:index:GpuMonitoring", "mon")
    children = sorted((r.type, r.name) for r in rec.children_of(component))
    assert children == [
        ("kubernetes:core/v1:ConfigMap", "mon-gpu-cluster-overview-dashboard"),
        ("kubernetes:core/v1:ConfigMap", "mon-gpu-inference-service-dashboard"),
        ("kubernetes:core/v1:ConfigMap", "mon-gpu-showback-dashboard"),
        ("kubernetes:core/v1:ConfigMap", "mon-gpu-team-usage-dashboard"),
        ("kubernetes:core/v1:Namespace", "mon-namespace"),
        ("kubernetes:core/v1:Secret", "mon-grafana-admin"),
        (RELEASE, "mon-kube-prometheus-stack"),
        (PROMETHEUS_RULE, "mon-gpu-platform-alerts"),
        (PROMETHEUS_RULE, "mon-gpu-platform-recording-rules"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "mon-allow-alertmanager"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "mon-allow-grafana"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "mon-allow-operator-webhook"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "mon-allow-prometheus-api"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "mon-allow-prometheus-scrape"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "mon-default-deny-ingress"),
        ("kubernetes:rbac.authorization.k8s.io/v1:Role", "mon-grafana-sidecar"),
        ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "mon-grafana-sidecar"),
        (RANDOM_PASSWORD, "mon-grafana-admin-password"),
    ]
    release = rec.one(RELEASE)
    assert release.inputs["chart"] == "kube-prometheus-stack"
    assert release.inputs["version"] == "88.5.3"
    assert release.inputs["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
    assert release.inputs["name"] == "kube-prometheus-stack" and release.inputs["namespace"] == "monitoring"
    assert release.inputs["createNamespace"] is False
    assert release.inputs["values"] == kube_prometheus_stack_values("15d", "50Gi")
    assert rec.one("kubernetes:core/v1:Namespace").inputs["metadata"]["labels"] == {
        labels.MANAGED_BY_LABEL: labels.MANAGED_BY_VALUE, labels.POD_SECURITY_ENFORCE_LABEL: "privileged",
        labels.POD_SECURITY_AUDIT_LABEL: "restricted", labels.POD_SECURITY_WARN_LABEL: "restricted"}


def test_ordering_namespace_secret_release_then_custom_resources(default_run):
    rec = default_run
    namespace, secret, release = (rec.one("kubernetes:core/v1:Namespace"), rec.one("kubernetes:core/v1:Secret"),
                                  rec.one(RELEASE))
    assert namespace.urn in secret.dependencies
    assert {namespace.urn, secret.urn} <= set(release.dependencies)
    for rule in rec.of_type(PROMETHEUS_RULE):
        assert release.urn in rule.dependencies
        assert rule.inputs["metadata"]["namespace"] == "monitoring"
        assert rule.inputs["metadata"]["labels"][labels.HELM_RELEASE_LABEL] == "kube-prometheus-stack"
    for cm in rec.of_type("kubernetes:core/v1:ConfigMap"):
        assert namespace.urn in cm.dependencies
        assert cm.inputs["metadata"]["labels"][labels.GRAFANA_DASHBOARD_LABEL] == "1"


def test_generated_grafana_password_is_a_secret(default_run):
    rec = default_run
    generated = rec.one(RANDOM_PASSWORD)
    assert generated.inputs == {"length": 24, "special": False}
    secret = rec.one("kubernetes:core/v1:Secret")
    assert secret.inputs["metadata"]["name"] == "grafana-admin"
    assert secret.inputs["stringData"]["admin-password"] == REDACTED
    assert generated.urn in secret.dependencies
    # Grafana reads the Secret: no password in the Helm values (they are stored in the cluster in clear).
    assert "adminPassword" not in rec.one(RELEASE).inputs["values"]["grafana"]


def test_configured_grafana_password_is_used_and_nothing_is_generated():
    captured = {}

    def program():
        m = GpuMonitoring("mon", {"pools": POOLS, "grafana_admin_password": "s3cret-from-config"})
        m.grafana_admin_password.apply(lambda v: captured.setdefault("password", v))
        captured["secret"] = m.grafana_admin_password

    rec = run_program(program)
    assert rec.of_type(RANDOM_PASSWORD) == []
    assert rec.one("kubernetes:core/v1:Secret").inputs["stringData"]["admin-password"] == REDACTED
    assert captured["password"] == "s3cret-from-config"


def test_gke_managed_dcgm_pod_monitor_only_when_asked(default_run):
    assert default_run.of_type(POD_MONITOR) == []
    rec = run_program(lambda: GpuMonitoring("mon", {"pools": GKE_POOLS, "gke_managed_dcgm": True, "namespace": "obs"}))
    monitor = rec.one(POD_MONITOR)
    assert monitor.inputs["metadata"]["name"] == "gke-managed-dcgm-exporter"
    assert monitor.inputs["metadata"]["namespace"] == "obs"
    assert monitor.inputs["spec"] == {
        "namespaceSelector": {"matchNames": ["gke-managed-system"]},
        "selector": {"matchLabels": {"app.kubernetes.io/name": "gke-managed-dcgm-exporter"}},
        "podMetricsEndpoints": [{
            "port": "metrics", "path": "/metrics", "interval": "30s", "honorLabels": True,
            "relabelings": [{"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                             "targetLabel": "node"}]}],
    }
    assert rec.one(RELEASE).urn in monitor.dependencies


def test_every_object_matches_its_schema():
    rec = run_program(lambda: GpuMonitoring("mon", {"pools": GKE_POOLS, "gke_managed_dcgm": True}))
    manifests = render_manifests(rec)
    kinds = sorted(m["kind"] for m in manifests)
    assert kinds == [*["ConfigMap"] * 4, "Namespace", *["NetworkPolicy"] * 6, "PodMonitor",
                     "PrometheusRule", "PrometheusRule", "Role", "RoleBinding", "Secret"]
    for obj in manifests:
        validate_manifest(obj, "1.34")


def test_the_crd_schema_is_enforced():
    body = monitoring.prometheus_rule_body("bad", "monitoring", [])
    body["spec"]["groups"] = [{"name": "g", "rules": [{"alert": "A", "expr": "up == 0", "for": "5 minutes"}]}]
    with pytest.raises(ManifestError, match="PrometheusRule/bad: spec.groups.0.rules.0.for"):
        validate_manifest(body, "1.34")
    monitor = monitoring.gke_managed_dcgm_pod_monitor_body("monitoring")
    monitor["spec"]["podMetricsEndpoints"][0]["honourLabels"] = True
    with pytest.raises(ManifestError, match="PodMonitor/gke-managed-dcgm-exporter"):
        validate_manifest(monitor, "1.34")


def test_exposed_attributes_for_other_layers():
    seen = {}

    def program():
        m = GpuMonitoring("mon", {"pools": POOLS, "namespace": "obs"})
        seen.update(namespace=m.namespace, url=m.prometheus_url, labels=m.service_monitor_labels,
                    release=m.release)

    run_program(program)
    assert seen["namespace"] == "obs"
    assert seen["url"] == "http://kube-prometheus-stack-prometheus.obs.svc.cluster.local:9090"
    assert seen["labels"] == {"release": "kube-prometheus-stack"}
    assert type(seen["release"]).__name__ == "Release"


def test_pools_are_required_and_thresholds_checked():
    with pytest.raises(ConfigError, match=re.escape("GpuMonitoring mon: pools: is required")):
        run_program(lambda: GpuMonitoring("mon", {}))
    with pytest.raises(ConfigError, match=re.escape("GpuMonitoring mon: alert_thresholds.nope: unknown threshold")):
        run_program(lambda: GpuMonitoring("mon", {"pools": POOLS, "alert_thresholds": {"nope": 1}}))


# ---------------------------------------------------------------------------------------------------------
# From the stack configuration


def _gcp(**extra):
    return {"cloud": "gcp", "region": "us-central1", "project": "gpu-platform-test", "gpuSoftware": "cloud-managed",
            "nodePools": [{"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 1}], **extra}


def test_monitoring_args_from_config(aws_config):
    config = parse_config({**aws_config, "monitoring": {"retention": "30d", "storageSize": "100Gi",
                                                        "grafanaAdminPassword": "pw"},
                           "inference": {"namespace": "serving"}}, "dev")
    args = monitoring_args(config, [])
    # No pool for the inference service: no KEDA; the optimizer (on by default) still queries Prometheus.
    assert args == {"pools": [], "retention": "30d", "storage_size": "100Gi", "grafana_admin_password": Secret("pw"),
                    "gke_managed_dcgm": False, "inference_namespace": "serving",
                    "prometheus_client_namespaces": ["gpu-optimizer"]}


def test_gke_managed_dcgm_follows_the_gke_option():
    assert monitoring_args(parse_config(_gcp(), "dev"), [])["gke_managed_dcgm"] is True
    assert monitoring_args(parse_config(_gcp(managedDcgm=False), "dev"), [])["gke_managed_dcgm"] is False


def test_platform_builds_monitoring_first_and_skips_it_when_disabled(tmp_path):
    stack_file = ROOT / "stacks" / "Pulumi.existing.yaml"
    plan = plan_stack("existing", stack_file)
    assert plan.errors == []
    component = plan.recording.one("gpuplatform:index:GpuMonitoring", "existing-monitoring")
    assert component.parent_name == "existing"
    secret = plan.recording.one("kubernetes:core/v1:Secret", "existing-monitoring-grafana-admin")
    assert secret.inputs["stringData"]["admin-password"] == REDACTED
    assert plan.recording.of_type(RANDOM_PASSWORD) == []  # the stack configures a (secure) password
    expected = {"h100-train": 8, "a100-infer": 4}
    rules = next(r for r in plan.recording.of_type(PROMETHEUS_RULE) if r.name.endswith("recording-rules"))
    got = {r["labels"]["pool"]: r["expr"] for g in rules.inputs["spec"]["groups"] for r in g["rules"]
           if r["record"] == "gpu_platform:pool_gpus_per_node:expected"}
    assert got == {pool: f"vector({n})" for pool, n in expected.items()}

    document = yaml.safe_load(stack_file.read_text(encoding="utf-8"))
    document["config"]["gpu-platform:monitoring"] = {"enabled": False}
    disabled = tmp_path / "Pulumi.existing.yaml"
    disabled.write_text(yaml.safe_dump(document), encoding="utf-8")
    assert load_stack_file(disabled)["gpu-platform:monitoring"] == {"enabled": False}
    plan = plan_stack("existing", disabled)
    assert plan.recording.of_type("gpuplatform:index:GpuMonitoring") == []
    assert plan.recording.of_type(PROMETHEUS_RULE) == []
