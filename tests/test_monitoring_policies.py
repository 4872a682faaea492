"""The monitoring lockdown: Grafana without Secret access, and who may reach Prometheus, Alertmanager and Grafana."""

import pytest
from conftest import planned_stack
from network_policy_eval import Endpoint, admitted

from gpu_platform import plan
from gpu_platform.accelerators import neuron_values
from gpu_platform.monitoring import gpu_monitoring as monitoring
from gpu_platform.monitoring import monitoring_policies
from gpu_platform.monitoring.gpu_monitoring import GpuMonitoring, kube_prometheus_stack_values, monitoring_args
from gpu_platform.plan import render_manifests
from gpu_platform.pools import GpuPool
from gpu_platform.schemas import validate_manifest
from gpu_platform.serving import keda
from gpu_platform.testing import run_program

POOLS = [GpuPool("l4-infer", "existing", "", "l4", 4, 24, 0, 4).spec()]
STACKS = sorted(plan.discover_stacks())

PROMETHEUS = Endpoint("monitoring", {"app.kubernetes.io/name": "prometheus",
                                     "app.kubernetes.io/instance": "kube-prometheus-stack-prometheus"})
ALERTMANAGER = Endpoint("monitoring", {"app.kubernetes.io/name": "alertmanager",
                                       "app.kubernetes.io/instance": "kube-prometheus-stack-alertmanager"})
GRAFANA = Endpoint("monitoring", {"app.kubernetes.io/name": "grafana",
                                  "app.kubernetes.io/instance": "kube-prometheus-stack"})
OPERATOR = Endpoint("monitoring", {"app.kubernetes.io/name": "kube-prometheus-stack-prometheus-operator",
                                   "app.kubernetes.io/instance": "kube-prometheus-stack"})
KUBE_STATE_METRICS = Endpoint("monitoring", {"app.kubernetes.io/name": "kube-state-metrics"})
API_SERVER = Endpoint(ip="172.31.5.10")
"""The control plane calling a webhook: an address outside the pod network, in no namespace."""


# ---------------------------------------------------------------------------------------------------------
# Grafana


def test_grafana_reads_labelled_configmaps_of_its_namespace_and_no_secret():
    """No rule on Secrets can reach Grafana's service account.

    The Grafana chart 12.11.1 (kube-prometheus-stack 88.5.3's subchart, grafana-community/helm-charts) renders its
    sidecars' rule ``resources: ["configmaps", "secrets"], verbs: [get, watch, list]`` in
    ``templates/clusterrole.yaml`` when ``rbac.create and (not rbac.namespaced or rbac.extraClusterRoleRules) and not
    rbac.useExistingClusterRole``, and in ``templates/role.yaml`` when ``rbac.create and not rbac.useExistingRole
    and rbac.namespaced``; the bindings (``clusterrolebinding.yaml``, ``rolebinding.yaml``) are gated on
    ``rbac.create`` the same way. The rule lists secrets whenever a sidecar is enabled, whatever
    ``sidecar.*.resource`` says. With ``rbac.create: false`` none of the four renders; the only grant is the
    platform's Role below (configmaps), bound to the service account the values name. The sidecars list
    ConfigMaps only (``resource: configmap``) in the monitoring namespace only (``searchNamespace``), where the
    platform's dashboards and kube-prometheus-stack's dashboards and datasource (``templates/grafana/``) live.
    """
    grafana = kube_prometheus_stack_values("15d", "50Gi", namespace="obs")["grafana"]
    assert grafana["rbac"] == {"create": False}
    assert grafana["serviceAccount"] == {"name": "kube-prometheus-stack-grafana"}
    assert {k: grafana["sidecar"]["dashboards"][k] for k in ("resource", "searchNamespace", "label", "labelValue")} \
        == {"resource": "configmap", "searchNamespace": "obs", "label": "grafana_dashboard", "labelValue": "1"}
    assert grafana["sidecar"]["datasources"] == {"resource": "configmap", "searchNamespace": "obs"}
    # The other sidecars (alerts, plugins, notifiers) stay at the chart's default: disabled.
    assert set(grafana["sidecar"]) == {"dashboards", "datasources"}
    assert monitoring_policies.grafana_sidecar_role("obs") == {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "grafana-sidecar", "namespace": "obs",
                     "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}
    binding = monitoring_policies.grafana_sidecar_role_binding("obs")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "grafana-sidecar"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": grafana["serviceAccount"]["name"],
                                    "namespace": "obs"}]


def test_role_and_binding_exist_before_the_release():
    rec = run_program(lambda: GpuMonitoring("mon", {"pools": POOLS}))
    release = rec.one("kubernetes:helm.sh/v3:Release")
    role = rec.one("kubernetes:rbac.authorization.k8s.io/v1:Role")
    binding = rec.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
    assert role.inputs["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]
    assert role.urn in binding.dependencies and binding.urn in release.dependencies
    for policy in rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy"):
        assert policy.urn in release.dependencies
    for obj in render_manifests(rec):
        validate_manifest(obj, "1.34")


# ---------------------------------------------------------------------------------------------------------
# NetworkPolicies of the monitoring namespace


def test_policies_field_by_field():
    policies = {p["metadata"]["name"]: p for p in monitoring_policies.network_policies("monitoring",
                                                                                          ["keda", "gpu-optimizer"])}
    prometheus = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus",
                                                  "app.kubernetes.io/instance": "kube-prometheus-stack-prometheus"}}}
    grafana = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "grafana",
                                               "app.kubernetes.io/instance": "kube-prometheus-stack"}}}
    alertmanager = {"podSelector": {"matchLabels": {
        "app.kubernetes.io/name": "alertmanager", "app.kubernetes.io/instance": "kube-prometheus-stack-alertmanager"}}}
    assert {n: p["spec"] for n, p in policies.items()} == {
        "default-deny-ingress": {"podSelector": {}, "policyTypes": ["Ingress"]},
        "allow-prometheus-scrape": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [prometheus]}]},
        "allow-prometheus-api": {**prometheus, "policyTypes": ["Ingress"], "ingress": [{
            "from": [grafana,
                     {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gpu-optimizer"}}},
                     {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}}}],
            "ports": [{"protocol": "TCP", "port": 9090}]}]},
        "allow-alertmanager": {**alertmanager, "policyTypes": ["Ingress"], "ingress": [
            {"from": [prometheus, grafana], "ports": [{"protocol": "TCP", "port": 9093}]},
            {"from": [alertmanager], "ports": [{"protocol": "TCP", "port": 9094}, {"protocol": "UDP", "port": 9094}]}]},
        "allow-grafana": {**grafana, "policyTypes": ["Ingress"], "ingress": [
            {"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 3000}]}]},
        "allow-operator-webhook": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kube-prometheus-stack-prometheus-operator",
                                            "app.kubernetes.io/instance": "kube-prometheus-stack"}},
            "policyTypes": ["Ingress"], "ingress": [{"ports": [{"protocol": "TCP", "port": 10250}]}]},
    }
    assert {p["metadata"]["namespace"] for p in policies.values()} == {"monitoring"}


def test_who_reaches_what():
    policies = monitoring_policies.network_policies("monitoring", ["gpu-optimizer", "keda"])
    tenant = Endpoint("research", {"app.kubernetes.io/name": "anything"})
    optimizer = Endpoint("gpu-optimizer", {})
    keda_operator = Endpoint("keda", {"app.kubernetes.io/name": "keda-operator"})
    # Tenants read no metrics, create no silences, reach no Grafana and no operator port.
    for target, port in ((PROMETHEUS, 9090), (ALERTMANAGER, 9093), (GRAFANA, 3000), (KUBE_STATE_METRICS, 8080)):
        assert not admitted(policies, tenant, target, port), (target, port)
    # The readers of Prometheus' API, and only its API port.
    for reader in (GRAFANA, optimizer, keda_operator):
        assert admitted(policies, reader, PROMETHEUS, 9090)
    assert not admitted(policies, optimizer, PROMETHEUS, 8080)
    assert not admitted(policies, API_SERVER, PROMETHEUS, 9090)
    # Alerts from Prometheus, silences through Grafana's datasource; gossip between Alertmanagers.
    assert admitted(policies, PROMETHEUS, ALERTMANAGER, 9093) and admitted(policies, GRAFANA, ALERTMANAGER, 9093)
    assert admitted(policies, ALERTMANAGER, ALERTMANAGER, 9094, "UDP")
    assert not admitted(policies, optimizer, ALERTMANAGER, 9093)
    # Grafana from its own namespace only.
    assert admitted(policies, KUBE_STATE_METRICS, GRAFANA, 3000) and not admitted(policies, optimizer, GRAFANA, 3000)
    # The API server reaches the admission webhook port, and nothing else there.
    assert admitted(policies, API_SERVER, OPERATOR, 10250) and not admitted(policies, API_SERVER, OPERATOR, 8080)
    # Prometheus scrapes every pod of its namespace, on their own ports (config reloaders on 8080).
    for target, port in ((PROMETHEUS, 9090), (PROMETHEUS, 8080), (ALERTMANAGER, 8080), (GRAFANA, 3000),
                         (KUBE_STATE_METRICS, 8080), (OPERATOR, 10250)):
        assert admitted(policies, PROMETHEUS, target, port), (target, port)


def test_pod_labels_are_the_charts():
    """Labels the Prometheus Operator v0.93 reserves on the pods it creates (``app.kubernetes.io/name`` prometheus /
    alertmanager, ``app.kubernetes.io/instance`` the object's name, which kube-prometheus-stack makes
    ``<fullname>-prometheus`` / ``-alertmanager``), Grafana's ``grafana.selectorLabels`` and the operator's
    ``kube-prometheus-stack.prometheus-operator.labels``, for the release named like the chart."""
    assert monitoring.RELEASE_NAME == monitoring_policies.RELEASE_NAME == "kube-prometheus-stack"
    assert kube_prometheus_stack_values("15d", "50Gi")["fullnameOverride"] == "kube-prometheus-stack"
    assert PROMETHEUS.labels == monitoring_policies.PROMETHEUS_POD_LABELS
    assert ALERTMANAGER.labels == monitoring_policies.ALERTMANAGER_POD_LABELS
    assert GRAFANA.labels == monitoring_policies.GRAFANA_POD_LABELS
    assert OPERATOR.labels == monitoring_policies.OPERATOR_POD_LABELS


def test_client_namespaces_are_checked():
    with pytest.raises(ValueError, match="prometheus_client_namespaces"):
        run_program(lambda: GpuMonitoring("mon", {"pools": POOLS, "prometheus_client_namespaces": ["Not_A_Label"]}))


# ---------------------------------------------------------------------------------------------------------
# Reference stacks: every reader of Prometheus admitted, every scrape target admits Prometheus


@pytest.fixture(scope="module")
def planned():
    return {stack: planned_stack(stack) for stack in plan.discover_stacks()}


def _objects(result, kind):
    return [m for m in result.manifests if m["kind"] == kind]


@pytest.mark.parametrize("stack", STACKS)
def test_every_prometheus_reader_of_the_stack_is_admitted(planned, stack):
    result = planned[stack]
    assert result.errors == []
    policies = _objects(result, "NetworkPolicy")
    readers = []
    for cron in _objects(result, "CronJob"):
        pod = cron["spec"]["jobTemplate"]["spec"]["template"]
        if "--prometheus" in pod["spec"]["containers"][0].get("args", []):
            readers.append(Endpoint(cron["metadata"]["namespace"], pod["metadata"]["labels"]))
    # A ScaledObject's prometheus trigger is evaluated by KEDA's operator, in KEDA's namespace.
    for scaled in _objects(result, "ScaledObject"):
        if any(t["type"] == "prometheus" for t in scaled["spec"]["triggers"]):
            readers.append(Endpoint(keda.DEFAULT_NAMESPACE, {"app.kubernetes.io/name": "keda-operator"}))
    config = result.config
    # The optimizer only with NVIDIA pools (`PlatformConfig.runs_optimizer`); KEDA's operator where the inference
    # app scales on Prometheus (gcp-tpu has neither: no NVIDIA pool, inference off).
    expected = {monitoring.OPTIMIZER_NAMESPACE} if config.runs_optimizer else set()
    if config.inference.enabled and config.inference.autoscaler == "keda" and config.monitoring.enabled:
        expected.add(keda.DEFAULT_NAMESPACE)
    assert {r.namespace for r in readers} == expected
    assert {r.namespace for r in readers} == set(monitoring_args(config, [
        p.spec() for p in config.gpu_pools()])["prometheus_client_namespaces"])
    for reader in readers:
        assert admitted(policies, reader, PROMETHEUS, 9090), reader


def test_the_readers_per_stack(planned):
    """Which reference stacks have which Prometheus readers, spelt out: the optimizer on the NVIDIA and AMD stacks
    (not Neuron's nor TPU's: no per-pod signal), KEDA wherever the inference app runs."""
    readers = {stack: set(monitoring_args(result.config, [p.spec() for p in result.config.gpu_pools()])[
        "prometheus_client_namespaces"]) for stack, result in planned.items()}
    both = {monitoring.OPTIMIZER_NAMESPACE, keda.DEFAULT_NAMESPACE}
    assert readers == {"aws-dev": both, "aws-karpenter": both, "azure-dev": both, "existing": both, "gcp-dev": both,
                       "oci-dev": both, "aws-neuron": {"keda"}, "azure-mi300x": both, "oci-mi300x": both,
                       "gcp-tpu": set(), "aws-gb200": both, "azure-gb200": both, "gcp-a4x": both, "oci-gb200": both,
                       # MultiKueue: the manager runs no inference app (no KEDA), its workers do.
                       "mk-manager": {monitoring.OPTIMIZER_NAMESPACE}, "mk-worker-us": both, "mk-worker-eu": both}


def _selects(selector: dict, labels: dict) -> bool:
    """metav1.LabelSelector semantics: every ``matchLabels`` pair and every ``matchExpressions`` requirement
    (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``; ``NotIn`` also matches an absent key)."""
    assert set(selector) <= {"matchLabels", "matchExpressions"}, f"unsupported selector {selector}"
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for requirement in selector.get("matchExpressions", []):
        key, operator = requirement["key"], requirement["operator"]
        present, value_in = key in labels, labels.get(key) in requirement.get("values", [])
        met = {"In": present and value_in, "NotIn": not (present and value_in), "Exists": present,
               "DoesNotExist": not present}[operator]
        if not met:
            return False
    return True


def test_label_selector_semantics():
    labels = {"app": "x", "tier": "metrics"}
    assert _selects({"matchLabels": {"app": "x"}}, labels)
    assert not _selects({"matchLabels": {"app": "y"}}, labels)
    assert _selects({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["metrics", "web"]}]}, labels)
    assert not _selects({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}, labels)
    assert _selects({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, labels)
    assert not _selects({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}, labels)
    assert _selects({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, labels)
    assert not _selects({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, labels)
    assert not _selects({"matchLabels": {"app": "x"},
                         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}, labels)


POD_OWNERS = ("Deployment", "DaemonSet", "StatefulSet")
"""Planned workloads whose pod templates a Service can select."""


def _operator_services(result, namespace) -> list[dict]:
    """The exporter Services an operator creates at run time from a planned custom resource, as the vendor component
    documents them: the AMD GPU Operator makes one per DeviceConfig with ``metricsExporter.enable``, labelled
    ``app.kubernetes.io/service: <DeviceConfig>-metrics-exporter``, port ``exporter-port`` on
    ``metricsExporter.port`` (accelerators/amd_values.py, checked there against ROCm/gpu-operator)."""
    services = []
    for config in _objects(result, "DeviceConfig"):
        exporter = config["spec"].get("metricsExporter", {})
        if config["metadata"]["namespace"] == namespace and exporter.get("enable"):
            services.append({"labels": {"app.kubernetes.io/service": f"{config['metadata']['name']}-metrics-exporter"},
                             "port": {"name": "exporter-port", "number": exporter["port"]}})
    return services


def _service_monitor_targets(result, monitor) -> list[tuple[Endpoint, int]]:
    """(pod, port number) of every pod a planned ServiceMonitor scrapes: its planned Services' planned pods
    (Deployments, DaemonSets, StatefulSets), or, where the monitor selects Services an operator creates at run time,
    the operator's pods, whose labels the plan cannot know (an unlabelled endpoint in that namespace)."""
    selector, port_name = monitor["spec"]["selector"], monitor["spec"]["endpoints"][0]["port"]
    targets = []
    for namespace in monitor["spec"]["namespaceSelector"]["matchNames"]:
        for service in _objects(result, "Service"):
            if service["metadata"]["namespace"] != namespace or not _selects(selector,
                                                                               service["metadata"].get("labels", {})):
                continue
            target_port = next(p["targetPort"] for p in service["spec"]["ports"] if p["name"] == port_name)
            for owner in (m for kind in POD_OWNERS for m in _objects(result, kind)):
                pod = owner["spec"]["template"]
                if owner["metadata"]["namespace"] != namespace or any(
                        pod["metadata"]["labels"].get(k) != v for k, v in service["spec"]["selector"].items()):
                    continue
                number = target_port if isinstance(target_port, int) else next(
                    p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])
                    if p.get("name") == target_port)
                targets.append((Endpoint(namespace, pod["metadata"]["labels"]), number))
        for service in _operator_services(result, namespace):
            if _selects(selector, service["labels"]) and service["port"]["name"] == port_name:
                targets.append((Endpoint(namespace, {}), service["port"]["number"]))
    assert targets, f"ServiceMonitor {monitor['metadata']['name']} selects no planned pod"
    return targets


@pytest.mark.parametrize("stack", STACKS)
def test_every_scrape_target_outside_monitoring_admits_prometheus(planned, stack):
    result = planned[stack]
    policies = _objects(result, "NetworkPolicy")
    targets = []
    for monitor in _objects(result, "ServiceMonitor"):
        targets += _service_monitor_targets(result, monitor)
    # Pods an operator creates at run time carry labels the plan does not know: their namespace must not be
    # isolated at all (no policy of the plan selects anything there), or Prometheus might be shut out.
    for target, _ in targets:
        if not target.labels:
            assert [p["metadata"]["name"] for p in policies if p["metadata"]["namespace"] == target.namespace] == []
    # Charts' monitors the plan cannot read: KEDA's ServiceMonitors (metrics port 8080 of its three components);
    # team namespaces (a team's own PodMonitors).
    if any(m["metadata"]["name"] == keda.DEFAULT_NAMESPACE for m in _objects(result, "Namespace")):
        targets += [(Endpoint("keda", {"app.kubernetes.io/name": name}), keda.METRICS_PORT)
                    for name in ("keda-operator", keda.METRICS_API_SERVER, keda.ADMISSION_WEBHOOKS)]
    targets += [(Endpoint(team.name, {}), 8000) for team in result.config.teams]
    # The GPU Operator's or the dcgm-exporter chart's DCGM exporter (port 9400): no policy isolates its namespace.
    if any(m["metadata"]["name"] == "gpu-operator" for m in _objects(result, "Namespace")):
        targets.append((Endpoint("gpu-operator", {"app": "nvidia-dcgm-exporter"}), 9400))
    assert targets
    for target, port in targets:
        assert admitted(policies, PROMETHEUS, target, port), (target, port)
    # In the namespaces this package isolates, only Prometheus, not Grafana, comes in from monitoring.
    isolated = {keda.DEFAULT_NAMESPACE, *(team.name for team in result.config.teams)}
    # The Neuron layer's namespace denies ingress by default and admits Prometheus to neuron-monitor only.
    isolated |= {m["metadata"]["name"] for m in _objects(result, "Namespace")} & {neuron_values.DEFAULT_NAMESPACE}
    for target, port in targets:
        if target.namespace in isolated:
            assert not admitted(policies, GRAFANA, target, port), (target, port)
