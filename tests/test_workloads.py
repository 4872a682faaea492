"""InferenceService and KedaOperator: decided bodies per pool kind, schemas, component wiring, platform placement."""

from pathlib import Path

import pytest
import yaml
from conftest import planned_stack

from gpu_platform import labels
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.labels import AKS_SPOT_TAINT, Taint
from gpu_platform.plan import plan_stack
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.schemas import ManifestError, validate_manifest
from gpu_platform.serving import gateway_objects
from gpu_platform.serving import inference_objects as objects
from gpu_platform.serving.keda import KedaOperator, keda_values
from gpu_platform.serving.workloads import InferenceService, chosen_pool, inference_args, spec_from_args
from gpu_platform.testing import run_program
from gpu_platform.versions import KEDA

ROOT = Path(__file__).resolve().parents[1]
PROMETHEUS = "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"

# g6.12xlarge-like: 4 L4 GPUs, 48 vCPUs, 192 GiB.
L4 = GpuPool("l4-infer", "aws", "g6.12xlarge", "l4", 4, 24, 0, 3, vcpus_per_node=48, memory_gib_per_node=192,
             role="inference")
# g2-standard-8-like, time-sliced 4 ways: 1 GPU, 8 vCPUs, 32 GiB.
L4_SLICED = GpuPool("l4-shared", "gcp", "g2-standard-8", "l4", 1, 24, 0, 2, vcpus_per_node=8, memory_gib_per_node=32,
                    sharing=Sharing("time-slicing", 4))
A100_MIG = GpuPool("a100-mig", "existing", "", "a100-80gb", 4, 80, 2, 2, sharing=Sharing("mig", 1, "3g.40gb"))
A100_SPOT = GpuPool("a100-spot", "azure", "Standard_NC24ads_A100_v4", "a100-80gb", 1, 80, 0, 2, vcpus_per_node=24,
                    memory_gib_per_node=220, spot=True, user_taints=(Taint("dedicated", "inference"),),
                    extra_taints=(AKS_SPOT_TAINT,))
H100_HAMI = GpuPool("h100-hami", "existing", "", "h100", 8, 80, 1, 1, sharing=Sharing("hami", 4))


ENVOY_PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}},
              "podSelector": {"matchLabels": {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
                                              "app.kubernetes.io/managed-by": "envoy-gateway"}}}
ROUTE = gateway_objects.RouteTarget(gateway_name="inference", gateway_namespace="gateway", section_name="https",
                                    implementation="envoy-gateway", hostname="sentiment.example.com",
                                    request_timeout="10s", max_request_body_size="1Mi", rate_limit_per_minute=600,
                                    data_plane_peers=(ENVOY_PEER,))
GKE_ROUTE = gateway_objects.RouteTarget(gateway_name="inference", gateway_namespace="gateway", section_name="http",
                                        implementation="gke", request_timeout="2m",
                                        data_plane_peers=({"ipBlock": {"cidr": "10.9.0.0/23"}},))


def spec(pool=L4, **kw) -> objects.InferenceSpec:
    return objects.InferenceSpec(pool=pool, prometheus_url=PROMETHEUS, monitoring_namespace="monitoring", **kw)


def pod_spec(s: objects.InferenceSpec) -> dict:
    return objects.deployment(s)["spec"]["template"]["spec"]


# ---------------------------------------------------------------------------------------------------------
# Deployment per pool kind


@pytest.mark.parametrize(
    ("pool", "cpu", "memory", "share"),
    [
        (L4, "4000m", "16Gi", "one whole l4 GPU"),  # 48/4/2 = 6 CPUs -> 4; 192/4/2 = 24 GiB -> 16
        (L4_SLICED, "1000m", "4Gi", "a shared slice: 1/4 of a l4 GPU (time-slicing, no memory isolation)"),
        (A100_MIG, "1000m", "4Gi", "one 3g.40gb MIG instance of a a100-80gb"),  # no shape figures: minimums
        (A100_SPOT, "4000m", "16Gi", "one whole a100-80gb GPU"),
    ],
)
def test_one_gpu_unit_and_requests_follow_the_pool(pool, cpu, memory, share):
    container = pod_spec(spec(pool))["containers"][0]
    assert container["resources"] == {
        "requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": 1},
        "limits": {"memory": memory, "nvidia.com/gpu": 1},
    }
    assert objects.gpu_share(pool) == share


def test_mig_slots_count_instances_per_gpu():
    assert objects.gpu_slots_per_node(A100_MIG) == 8  # 4 GPUs x 2 instances of 3g.40gb
    assert objects.gpu_slots_per_node(L4_SLICED) == 4
    assert objects.gpu_slots_per_node(L4) == 4


def test_hami_pool_pods_ask_gpu_memory_and_carry_the_sharing_label():
    d = objects.deployment(spec(H100_HAMI))
    template = d["spec"]["template"]
    assert template["metadata"]["labels"][labels.SHARING_LABEL] == "hami"
    assert template["spec"]["containers"][0]["resources"]["limits"] == {
        "memory": "4Gi", "nvidia.com/gpu": 1, "nvidia.com/gpumem": 20480}  # 80 GiB / 4
    assert labels.SHARING_LABEL not in d["spec"]["selector"]["matchLabels"]
    assert labels.SHARING_LABEL not in objects.deployment(spec(L4))["spec"]["template"]["metadata"]["labels"]


def test_placement_priority_probes_security_and_shutdown():
    s = spec(A100_SPOT)
    p = pod_spec(s)
    assert p["nodeSelector"] == {"gpu-platform.io/pool": "a100-spot"}
    assert p["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"},
        {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
    ]
    assert p["priorityClassName"] == "inference-critical"
    assert [c["topologyKey"] for c in p["topologySpreadConstraints"]] == [
        "kubernetes.io/hostname", "topology.kubernetes.io/zone"]
    assert {c["whenUnsatisfiable"] for c in p["topologySpreadConstraints"]} == {"ScheduleAnyway"}
    c = p["containers"][0]
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert c["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
    assert p["securityContext"] == {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
                                    "seccompProfile": {"type": "RuntimeDefault"}}
    assert p["automountServiceAccountToken"] is False
    assert c["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}]
    assert p["volumes"] == [{"name": "tmp", "emptyDir": {"sizeLimit": "2Gi"}}]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["SHUTDOWN_DELAY_S"] == "5" and env["DRAIN_TIMEOUT_S"] == "20"
    assert p["terminationGracePeriodSeconds"] == 30  # delay + drain + margin
    assert env["DEVICE"] == "cuda" and env["MODEL_PATH"] == "/models/sentiment" and env["HF_HUB_OFFLINE"] == "1"
    assert (env["MAX_BATCH_SIZE"], env["MAX_WAIT_MS"], env["DEADLINE_MS"]) == ("32", "0", "1000")
    assert env["HF_HOME"] == "/tmp/hf"
    assert env["HOME"] == "/tmp"  # the read-only root: caches under HOME land in the /tmp emptyDir
    assert objects.deployment(s)["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


def test_model_id_and_model_cache_volume():
    s = spec(model_id="distilbert/distilbert-base-uncased-finetuned-sst-2-english", model_cache_size="20Gi",
             model_cache_storage_class="efs-sc")
    p = pod_spec(s)
    env = {e["name"]: e["value"] for e in p["containers"][0]["env"]}
    assert env["MODEL_ID"] == "distilbert/distilbert-base-uncased-finetuned-sst-2-english"
    assert env["MODEL_PATH"] == "" and env["HF_HUB_OFFLINE"] == "0"  # the image's baked-model settings undone
    assert env["HF_HOME"] == "/model-cache"
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "sentiment-model-cache"}} in p["volumes"]
    assert objects.model_cache_claim(s)["spec"] == {
        "accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "20Gi"}}, "storageClassName": "efs-sc"}


# ---------------------------------------------------------------------------------------------------------
# Autoscaling, network, ingress


def test_scaled_object_scales_on_queue_depth_and_cpu_with_a_fallback():
    so = objects.scaled_object(spec(min_replicas=2, max_replicas=6))["spec"]
    assert so["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sentiment"}
    assert (so["minReplicaCount"], so["maxReplicaCount"]) == (2, 6)
    assert so["fallback"] == {"failureThreshold": 3, "replicas": 2, "behavior": "currentReplicasIfHigher"}
    queue, cpu = so["triggers"]
    assert queue == {"type": "prometheus", "name": "queue-depth", "metadata": {
        "serverAddress": PROMETHEUS,
        "query": 'sum(avg_over_time(inference_queue_depth{namespace="inference",service="sentiment"}[1m]))',
        "threshold": "32"}}
    assert cpu == {"type": "cpu", "name": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}
    behavior = so["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 300
    assert objects.scaled_object(spec(target_queue_depth=8))["spec"]["triggers"][0]["metadata"]["threshold"] == "8"


def test_cpu_hpa_when_keda_has_no_prometheus_or_hpa_is_asked():
    assert objects.InferenceSpec(pool=L4).uses_keda is False
    assert spec(autoscaler="hpa").uses_keda is False and spec().uses_keda is True
    hpa = objects.horizontal_pod_autoscaler(spec(min_replicas=1, max_replicas=3))
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)


PROMETHEUS_PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus",
                                                   "app.kubernetes.io/instance": "kube-prometheus-stack-prometheus"}}}


def test_network_policy_admits_the_gateway_data_plane_monitoring_and_same_namespace_only():
    np = objects.network_policy(spec(route=ROUTE))["spec"]
    assert np["policyTypes"] == ["Ingress"]
    # Envoy Gateway's Envoy pods, and Prometheus' pods only (not Grafana or Alertmanager beside them).
    assert np["ingress"] == [{"from": [{"podSelector": {}}, ENVOY_PEER, PROMETHEUS_PEER],
                              "ports": [{"protocol": "TCP", "port": 8080}]}]
    gke = objects.network_policy(spec(route=GKE_ROUTE))["spec"]["ingress"][0]["from"]
    assert gke == [{"podSelector": {}}, {"ipBlock": {"cidr": "10.9.0.0/23"}}, PROMETHEUS_PEER]
    # No route: nothing from outside the namespace but Prometheus; neither: the namespace alone.
    assert objects.network_policy(spec())["spec"]["ingress"][0]["from"] == [{"podSelector": {}}, PROMETHEUS_PEER]
    assert objects.network_policy(objects.InferenceSpec(pool=L4))["spec"]["ingress"][0]["from"] == [
        {"podSelector": {}}]


def test_http_route_publishes_only_analyze_on_the_gateway():
    assert objects.http_route(spec()) is None and objects.route_policies(spec()) == []
    route = objects.http_route(spec(route=ROUTE))
    assert route["metadata"] == {"name": "sentiment", "namespace": "inference", "labels": {
        "app.kubernetes.io/managed-by": "gpu-platform", "app.kubernetes.io/name": "sentiment"}}
    assert route["spec"] == {
        "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference",
                        "namespace": "gateway", "sectionName": "https"}],
        "hostnames": ["sentiment.example.com"],
        "rules": [{"matches": [{"path": {"type": "Exact", "value": "/analyze"}}],
                   "backendRefs": [{"name": "sentiment", "port": 80}], "timeouts": {"request": "10s"}}]}
    (policy,) = objects.route_policies(spec(route=ROUTE))
    assert (policy["kind"], policy["metadata"]["name"], policy["metadata"]["namespace"]) == (
        "BackendTrafficPolicy", "sentiment", "inference")
    assert policy["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "sentiment"}],
        "requestBuffer": {"limit": "1Mi"},
        "rateLimit": {"local": {"rules": [{"limit": {"requests": 600, "unit": "Minute"}}]}}}
    # The route's namespace may attach routes to the Gateway.
    assert objects.namespace(spec(route=ROUTE))["metadata"]["labels"]["gpu-platform.io/gateway-routes"] == "true"
    assert "gpu-platform.io/gateway-routes" not in objects.namespace(spec())["metadata"]["labels"]


def test_gke_route_has_its_timeout_and_health_check_on_the_service():
    route = objects.http_route(spec(route=GKE_ROUTE))
    assert "hostnames" not in route["spec"] and "timeouts" not in route["spec"]["rules"][0]
    assert route["spec"]["parentRefs"][0]["sectionName"] == "http"
    backend, health = objects.route_policies(spec(route=GKE_ROUTE))
    service = {"group": "", "kind": "Service", "name": "sentiment"}
    assert (backend["kind"], backend["spec"]) == ("GCPBackendPolicy", {"targetRef": service,
                                                                       "default": {"timeoutSec": 120}})
    assert (health["kind"], health["spec"]) == ("HealthCheckPolicy", {"targetRef": service, "default": {"config": {
        "type": "HTTP", "httpHealthCheck": {"portSpecification": "USE_FIXED_PORT", "port": 8080,
                                            "requestPath": "/readyz"}}}})


def test_service_monitor_scrapes_metrics_and_carries_the_release_label():
    sm = objects.service_monitor(spec(service_monitor_labels={"release": "kube-prometheus-stack"}))
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert sm["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "15s", "scrapeTimeout": "5s"}]
    assert sm["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/name": "sentiment"}}


def test_pdb_allows_one_disruption():
    assert objects.pod_disruption_budget(spec())["spec"] == {
        "maxUnavailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow",
        "selector": {"matchLabels": {"app.kubernetes.io/name": "sentiment"}}}


@pytest.mark.parametrize("variant", ["keda", "hpa"])
def test_every_object_matches_its_schema(variant):
    s = spec(L4_SLICED, autoscaler=variant, route=ROUTE, model_cache_size="20Gi",
             service_monitor_labels={"release": "kube-prometheus-stack"})
    bodies = [objects.namespace(s), objects.service_account(s), objects.deployment(s), objects.service(s),
              objects.pod_disruption_budget(s), objects.network_policy(s), objects.http_route(s),
              *objects.route_policies(s), *objects.route_policies(spec(route=GKE_ROUTE)),
              objects.model_cache_claim(s), objects.service_monitor(s),
              objects.scaled_object(s) if variant == "keda" else objects.horizontal_pod_autoscaler(s)]
    for body in bodies:
        validate_manifest(body, "1.33")


def test_the_scaled_object_schema_is_enforced():
    body = objects.scaled_object(spec())
    body["spec"]["triggers"][0]["metadata"]["threshold"] = 32  # metadata values are strings in the CRD
    with pytest.raises(ManifestError, match="triggers.0.metadata.threshold"):
        validate_manifest(body, "1.33")
    body = objects.scaled_object(spec())
    body["spec"]["fallback"]["behavior"] = "sometimes"
    with pytest.raises(ManifestError, match="fallback.behavior"):
        validate_manifest(body, "1.33")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "pool: is required"),
        ({"pool": L4.spec(), "autoscaler": "vpa"},
         "autoscaler: 'vpa' is not one of keda, hpa, none; did you mean 'hpa'?"),
        ({"pool": L4.spec(), "min_replicas": 3, "max_replicas": 2}, "max_replicas: must be >= min_replicas (3), got 2"),
        # The app would refuse to start (exit 2): refused here, before anything is registered.
        ({"pool": L4.spec(), "max_wait_ms": 500, "deadline_ms": 400}, "max_wait_ms: must be < deadline_ms (400), got "
                                                                     "500"),
        ({"pool": L4.spec(), "max_wait_ms": 1000}, "max_wait_ms: must be < deadline_ms (1000), got 1000"),
        ({"pool": L4.spec(), "deadline_ms": 0}, "deadline_ms: must be >= 1, got 0"),
        ({"pool": L4.spec(), "model_cache_size": "20GB"}, "model_cache_size: '20GB' is not a storage quantity such as "
                                                          "50Gi"),
        ({"pool": L4.spec(), "model_cache_size": "20Gi", "model_cache_access_mode": "ReadWriteSome"},
         "model_cache_access_mode: 'ReadWriteSome' is not one of ReadWriteMany, ReadWriteOnce, ReadOnlyMany; did you "
         "mean 'ReadWriteOnce'?"),
        # The Ingress's arguments name what replaced them.
        ({"pool": L4.spec(), "ingress_host": "infer.example.com"},
         "ingress_host: was replaced by route: the app is published through an HTTPRoute on the stack's Gateway "
         "(route.hostname is the host name; InferenceGateway.route_args builds route)"),
        ({"pool": L4.spec(), "route": {**ROUTE.args(), "request_timeout": "10 seconds"}},
         "route.request_timeout: '10 seconds' is not a duration such as 10s or 2m"),
        ({"pool": L4.spec(), "route": {**ROUTE.args(), "implementation": "nginx"}},
         "route.implementation: 'nginx' is not one of envoy-gateway, gke"),
        ({"pool": L4.spec(), "route": {"gateway_name": "inference"}}, "route.gateway_namespace: is required"),
        ({"pool": L4.spec(), "route": {**GKE_ROUTE.args(), "rate_limit_per_minute": 60}},
         "route.rate_limit_per_minute: takes effect only with Envoy Gateway (GKE's Gateway has no such limit)"),
    ],
)
def test_bad_args_are_rejected(args, message):
    with pytest.raises(ConfigError) as err:
        spec_from_args(args)
    assert str(err.value) == f"InferenceService inference: {message}"


def test_args_from_other_languages_coerce_floats():
    s = spec_from_args({"pool": L4.spec(), "min_replicas": 2.0, "max_replicas": 5.0, "max_batch_size": 16.0})
    assert (s.min_replicas, s.max_replicas, s.max_batch_size) == (2, 5, 16)
    assert isinstance(s.min_replicas, int)


# ---------------------------------------------------------------------------------------------------------
# Components under the mock engine


def test_component_registers_every_object_with_the_right_wiring():
    rec = run_program(lambda: InferenceService("inf", {
        "pool": L4.spec(), "prometheus_url": PROMETHEUS, "monitoring_namespace": "monitoring",
        "service_monitor": True, "service_monitor_labels": {"release": "kube-prometheus-stack"},
        "route": ROUTE.args(), "model_cache_size": "20Gi", "min_replicas": 2, "max_replicas": 5,
    }))
    component = rec.one("gpuplatform:index:InferenceService", "inf")
    children = {(r.type, r.name) for r in rec.children_of(component)}
    assert children == {
        ("kubernetes:core/v1:Namespace", "inf-namespace"),
        ("kubernetes:core/v1:ServiceAccount", "inf-sa"),
        ("kubernetes:core/v1:PersistentVolumeClaim", "inf-model-cache"),
        (DEPLOYMENT, "inf-deployment"),
        ("kubernetes:core/v1:Service", "inf-service"),
        ("kubernetes:policy/v1:PodDisruptionBudget", "inf-pdb"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "inf-network-policy"),
        ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "inf-http-route"),
        ("kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy", "inf-backendtrafficpolicy"),
        (SCALED_OBJECT, "inf-scaled-object"),
        (SERVICE_MONITOR, "inf-service-monitor"),
    }
    deployment = rec.one(DEPLOYMENT, "inf-deployment")
    assert deployment.inputs["spec"]["replicas"] == 2
    assert deployment.ignore_changes == ["spec.replicas"]  # the ScaledObject owns the count after creation
    assert deployment.inputs["spec"]["template"]["spec"]["nodeSelector"] == {"gpu-platform.io/pool": "l4-infer"}
    assert deployment.inputs["metadata"]["namespace"] == "inference"
    ns = rec.one("kubernetes:core/v1:Namespace", "inf-namespace")
    claim = rec.one("kubernetes:core/v1:PersistentVolumeClaim", "inf-model-cache")
    assert {ns.urn, claim.urn} <= set(deployment.dependencies)
    assert deployment.urn in rec.one(SCALED_OBJECT, "inf-scaled-object").dependencies
    scaled = rec.one(SCALED_OBJECT, "inf-scaled-object").inputs
    assert scaled["spec"]["triggers"][0]["metadata"]["serverAddress"] == PROMETHEUS
    assert rec.one("kubernetes:core/v1:ServiceAccount", "inf-sa").inputs["automountServiceAccountToken"] is False
    route = rec.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "inf-http-route")
    assert route.inputs["spec"]["hostnames"] == ["sentiment.example.com"]
    assert route.urn in rec.one("kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy",
                                "inf-backendtrafficpolicy").dependencies


def test_component_without_prometheus_uses_a_cpu_hpa_and_no_monitor():
    rec = run_program(lambda: InferenceService("inf", {"pool": L4_SLICED.spec(), "create_namespace": False}))
    assert rec.of_type(SCALED_OBJECT) == [] and rec.of_type(SERVICE_MONITOR) == []
    assert rec.of_type("kubernetes:core/v1:Namespace") == []
    hpa = rec.one("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "inf-hpa")
    assert hpa.inputs["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    fixed = run_program(lambda: InferenceService("inf", {"pool": L4.spec(), "autoscaler": "none"}))
    assert fixed.of_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler") == []
    assert fixed.one(DEPLOYMENT, "inf-deployment").ignore_changes == []


def test_keda_release_is_pinned_with_crds_and_service_monitors():
    rec = run_program(lambda: KedaOperator("keda", {"monitoring": True,
                                                    "service_monitor_labels": {"release": "kube-prometheus-stack"}}))
    release = rec.one("kubernetes:helm.sh/v3:Release", "keda-release")
    assert (release.inputs["chart"], release.inputs["version"]) == ("keda", "2.20.2")
    assert release.inputs["repositoryOpts"] == {"repo": "https://kedacore.github.io/charts"}
    assert release.inputs["namespace"] == "keda"
    monitor = {"enabled": True, "serviceMonitor": {"enabled": True,
                                                   "additionalLabels": {"release": "kube-prometheus-stack"}}}
    assert release.inputs["values"] == {"crds": {"install": True},
                                        "prometheus": {"operator": monitor, "metricServer": monitor}}
    assert keda_values() == {"crds": {"install": True}}


def _chart_keys(chart) -> dict[str, str]:
    path = ROOT / "tests" / "data" / "chart_keys" / f"{chart.name}-{chart.version}.keys"
    return dict(line.split()[:2] for line in path.read_text().splitlines() if line and not line.startswith("#"))


def _leaves(values: dict, keys: dict[str, str], prefix: str = ""):
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else key
        yield path
        if isinstance(value, dict) and keys.get(path) == "map":
            yield from _leaves(value, keys, path)


def test_every_keda_values_key_exists_in_the_pinned_chart():
    keys = _chart_keys(KEDA)
    values = keda_values({"release": "kube-prometheus-stack"})
    assert [p for p in _leaves(values, keys) if p not in keys] == []


# ---------------------------------------------------------------------------------------------------------
# Platform: every reference stack serves the app on its inference pool


def test_every_reference_stack_deploys_the_app_on_its_inference_pool(tmp_path):
    expected = {"aws-dev": "l4-infer", "azure-dev": "a100-infer", "existing": "a100-infer", "gcp-dev": "l4-infer",
                "oci-dev": "a10-infer"}
    for stack, pool in expected.items():
        plan = planned_stack(stack)
        assert plan.errors == []
        service = plan.recording.one("gpuplatform:index:InferenceService", f"{stack}-inference")
        keda = plan.recording.one("gpuplatform:index:KedaOperator", f"{stack}-keda")
        deployment = plan.recording.one(DEPLOYMENT, f"{stack}-inference-deployment")
        assert deployment.inputs["spec"]["template"]["spec"]["nodeSelector"] == {"gpu-platform.io/pool": pool}
        release = {r.name: r for r in plan.recording.of_type("kubernetes:helm.sh/v3:Release")}
        # After KEDA (ScaledObject CRD), Prometheus (ServiceMonitor CRD), the PriorityClasses and the Gateway.
        assert {release[f"{stack}-keda-release"].urn,
                release[f"{stack}-monitoring-kube-prometheus-stack"].urn} <= set(service.dependencies)
        gateway = plan.recording.one("kubernetes:gateway.networking.k8s.io/v1:Gateway", f"{stack}-gateway-gateway")
        assert gateway.urn in service.dependencies
        critical = next(r for r in plan.recording.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
                        if r.inputs["metadata"]["name"] == "inference-critical")
        assert critical.urn in service.dependencies
        assert deployment.inputs["spec"]["template"]["spec"]["priorityClassName"] == "inference-critical"
        assert keda.parent_name == stack == service.parent_name


def _stack_file(tmp_path, stack: str, **inference) -> Path:
    document = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    for key, value in inference.items():
        document["config"][f"gpu-platform:{key}"] = value
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_without_monitoring_the_app_scales_on_cpu_and_keda_is_not_installed(tmp_path):
    plan = plan_stack("existing", _stack_file(tmp_path, "existing", monitoring={"enabled": False}))
    assert plan.errors == []
    assert plan.recording.of_type("gpuplatform:index:KedaOperator") == []
    assert plan.recording.of_type(SCALED_OBJECT) == [] and plan.recording.of_type(SERVICE_MONITOR) == []
    plan.recording.one("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "existing-inference-hpa")


def test_disabled_inference_deploys_nothing_and_a_named_pool_wins(tmp_path):
    plan = plan_stack("existing", _stack_file(tmp_path, "existing", inference={"enabled": False}))
    assert plan.recording.of_type("gpuplatform:index:InferenceService") == []
    assert plan.recording.of_type("gpuplatform:index:KedaOperator") == []
    plan = plan_stack("existing", _stack_file(tmp_path, "existing", inference={
        "pool": "h100-train", "ingressHost": "sentiment.example.com", "modelCacheSize": "20Gi",
        "targetQueueDepth": 16}))
    assert plan.errors == []
    deployment = plan.recording.one(DEPLOYMENT, "existing-inference-deployment")
    assert deployment.inputs["spec"]["template"]["spec"]["nodeSelector"] == {"gpu-platform.io/pool": "h100-train"}
    route = plan.recording.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "existing-inference-http-route")
    # ingressHost is the host name: of the route and of the Gateway's HTTPS listener (self-signed by default).
    assert route.inputs["spec"]["hostnames"] == ["sentiment.example.com"]
    assert route.inputs["spec"]["parentRefs"][0]["sectionName"] == "https"
    assert plan.recording.one("kubernetes:core/v1:PersistentVolumeClaim", "existing-inference-model-cache")
    scaled = plan.recording.one(SCALED_OBJECT, "existing-inference-scaled-object")
    assert scaled.inputs["spec"]["triggers"][0]["metadata"]["threshold"] == "16"


def test_inference_args_from_config(aws_config):
    config = parse_config({**aws_config, "inference": {"replicas": 2, "maxReplicas": 8, "autoscaler": "keda"}}, "dev")
    pool = chosen_pool(config, config.gpu_pools())
    args = inference_args(config, pool, PROMETHEUS, "monitoring", {"release": "kube-prometheus-stack"})
    assert (args["min_replicas"], args["max_replicas"], args["autoscaler"]) == (2, 8, "keda")
    assert args["service_monitor"] is True and args["prometheus_url"] == PROMETHEUS
    assert "target_queue_depth" not in args
    blind = inference_args(config, pool)
    assert (blind["autoscaler"], blind["service_monitor"]) == ("hpa", False)


# ---------------------------------------------------------------------------------------------------------
# Configuration errors of the inference section


@pytest.mark.parametrize(
    ("inference", "path", "problem"),
    [
        ({"autoscaler": "vpa"}, "inference.autoscaler", "'vpa'"),
        ({"modelId": "not a model"}, "inference.modelId", "is not a Hugging Face model id"),
        ({"ingressHost": "Sentiment_Example"}, "inference.ingressHost", "is not a DNS host name"),
        ({"modelCacheSize": "20GB"}, "inference.modelCacheSize", "is not a storage quantity"),
        ({"modelCacheSize": "20Gi", "modelCacheStorageClass": "Fast_SSD"}, "inference.modelCacheStorageClass",
         "is not a StorageClass name"),
        ({"modelCacheStorageClass": "efs-sc"}, "inference.modelCacheStorageClass", "needs modelCacheSize"),
        ({"targetQueueDepth": 0}, "inference.targetQueueDepth", "must be >= 1"),
        ({"targetQueueDepth": "lots"}, "inference.targetQueueDepth", "must be an integer"),
        ({"ingressHosts": "x"}, "inference.ingressHosts", ""),
    ],
)
def test_inference_config_errors(aws_config, inference, path, problem):
    with pytest.raises(ConfigError) as info:
        parse_config({**aws_config, "inference": inference}, "dev")
    assert path in str(info.value) and problem in str(info.value)


def test_inference_config_accepts_the_new_keys(aws_config):
    config = parse_config({**aws_config, "inference": {
        "modelId": "distilbert/distilbert-base-uncased-finetuned-sst-2-english", "autoscaler": "hpa",
        "targetQueueDepth": 8, "ingressHost": "*.infer.example.com", "modelCacheSize": "20Gi",
        "modelCacheStorageClass": "efs-sc"}}, "dev").inference
    assert (config.model_id, config.autoscaler, config.target_queue_depth, config.ingress_host,
            config.model_cache_size, config.model_cache_storage_class) == (
        "distilbert/distilbert-base-uncased-finetuned-sst-2-english", "hpa", 8, "*.infer.example.com", "20Gi",
        "efs-sc")
