"""`LlmService`: vLLM's Deployment, the InferencePool with its endpoint picker, the HTTPRoute to it and KEDA scaling,
decided field by field (`llm_objects`) and registered under mocks, every object valid against its upstream schema."""

import copy

import pytest
import yaml
from network_policy_eval import Endpoint, admitted

from gpu_platform import versions
from gpu_platform.errors import ConfigError
from gpu_platform.plan import render_manifests
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.schemas import ManifestError, validate_manifest
from gpu_platform.serving import llm_objects as o
from gpu_platform.serving.llm import LlmService, spec_from_args
from gpu_platform.testing import run_program

L4 = GpuPool("l4-infer", "aws", "g6.2xlarge", "l4", 1, 24, 1, 4, vcpus_per_node=8, memory_gib_per_node=32,
             role="inference")
H100_DRA = GpuPool("h100", "existing", "", "h100", 8, 80, 2, 2, gpu_allocation="dra")
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
PROMETHEUS = "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"
VLLM = ("docker.io/vllm/vllm-openai:v0.31.0"
        "@sha256:c1c9f6fd5c109ba7f0546a59f5b2f15fb87f64c77782e90a27b648b42a8e67c3")
EPP = ("registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"
       "@sha256:86c679b057298e68c6e65ff5603e92066d432e77b11f1f81f0a06399694810bc")
ENVOY_PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}},
              "podSelector": {"matchLabels": {"app.kubernetes.io/component": "proxy"}}}
ROUTE = {"gateway_name": "platform", "gateway_namespace": "gateway", "section_name": "https",
         "implementation": "envoy-gateway", "request_timeout": "5m", "data_plane_peers": [ENVOY_PEER]}
GATEWAY = {"route": ROUTE}
SECURITY_CONTEXT = {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"}}


def spec(**args) -> o.LlmSpec:
    return spec_from_args({"pool": L4.spec(), "model": MODEL, **args})


# ---------------------------------------------------------------------------------------------------------
# The model server


def test_the_pinned_images():
    assert versions.VLLM_IMAGE.reference == VLLM
    assert versions.ENDPOINT_PICKER_IMAGE.reference == EPP
    assert versions.INFERENCE_POOL_CRDS_MANIFEST == ("https://github.com/kubernetes-sigs/gateway-api-inference-"
                                                     "extension/releases/download/v1.5.0/v1-manifests.yaml")
    assert {versions.VLLM_IMAGE, versions.ENDPOINT_PICKER_IMAGE} <= set(versions.PINNED_IMAGES)


def test_vllm_serves_the_model_on_the_pool_as_configured():
    s = spec(max_model_len=16384, hf_token_secret="hf-token", prometheus_url=PROMETHEUS)
    pod = o.deployment(s)["spec"]["template"]["spec"]
    (server,) = pod["containers"]
    assert server["image"] == VLLM
    # The image's entrypoint is `vllm serve`: arguments only.
    assert "command" not in server
    assert server["args"] == ["--model", MODEL, "--served-model-name", MODEL, "--port", "8000",
                              "--tensor-parallel-size", "1", "--dtype", "auto", "--gpu-memory-utilization", "0.9",
                              "--max-model-len", "16384"]
    assert server["env"] == [{"name": "HOME", "value": "/tmp"}, {"name": "USER", "value": "vllm"},
                             {"name": "HF_HOME", "value": "/model-cache"}, {"name": "HF_HUB_OFFLINE", "value": "1"},
                             {"name": "VLLM_NO_USAGE_STATS", "value": "1"}, {"name": "DO_NOT_TRACK", "value": "1"}]
    assert server["resources"] == {"requests": {"cpu": "5", "memory": "22Gi", "nvidia.com/gpu": 1},
                                   "limits": {"memory": "22Gi", "nvidia.com/gpu": 1}}
    assert server["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    health = {"httpGet": {"path": "/health", "port": "http"}}
    assert server["startupProbe"] == {**health, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 180}
    assert server["readinessProbe"] == {**health, "periodSeconds": 5, "timeoutSeconds": 3, "failureThreshold": 3}
    assert server["livenessProbe"] == {**health, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 6}
    assert server["lifecycle"] == {"preStop": {"exec": {"command": ["sleep", "30"]}}}
    assert server["securityContext"] == SECURITY_CONTEXT
    assert server["volumeMounts"] == [{"name": "tmp", "mountPath": "/tmp"}, {"name": "dshm", "mountPath": "/dev/shm"},
                                      {"name": "model-cache", "mountPath": "/model-cache"}]
    assert pod["nodeSelector"] == {"gpu-platform.io/pool": "l4-infer"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                                   "effect": "NoSchedule"}]
    assert (pod["priorityClassName"], pod["terminationGracePeriodSeconds"], pod["automountServiceAccountToken"],
            pod["enableServiceLinks"]) == ("inference-critical", 130, False, False)


def test_the_download_step_fills_the_cache_and_reads_the_token_from_a_file():
    s = spec(hf_token_secret="hf-token")
    pod = o.deployment(s)["spec"]["template"]["spec"]
    (download,) = pod["initContainers"]
    assert download["image"] == VLLM
    assert download["command"] == ["python3", "-c", o.DOWNLOAD_SCRIPT]
    compile(o.DOWNLOAD_SCRIPT, "download", "exec")  # valid Python
    assert download["env"] == [{"name": "HOME", "value": "/tmp"}, {"name": "USER", "value": "vllm"},
                               {"name": "HF_HOME", "value": "/model-cache"}, {"name": "MODEL_ID", "value": MODEL},
                               {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
                               {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/huggingface/token"}]
    assert download["volumeMounts"] == [
        {"name": "tmp", "mountPath": "/tmp"}, {"name": "model-cache", "mountPath": "/model-cache"},
        {"name": "hf-token", "mountPath": "/var/run/secrets/huggingface", "readOnly": True}]
    # The token is never an environment variable, and only the download step mounts it.
    assert not any("secretKeyRef" in str(c.get("env")) for c in [download, *pod["containers"]])
    assert all(m["name"] != "hf-token" for m in pod["containers"][0]["volumeMounts"])
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["hf-token"] == {"name": "hf-token", "secret": {
        "secretName": "hf-token", "items": [{"key": "token", "path": "token"}], "defaultMode": 0o440}}
    assert volumes["dshm"] == {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    assert volumes["tmp"] == {"name": "tmp", "emptyDir": {"sizeLimit": "8Gi"}}
    # ReadWriteOnce: a volume per pod, sized from the model (30Gi for 15 GiB of weights).
    assert volumes["model-cache"] == {"name": "model-cache", "ephemeral": {"volumeClaimTemplate": {
        "metadata": {"labels": {"app.kubernetes.io/name": "llm", "app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "30Gi"}}}}}}
    assert o.model_cache_claim(s) is None
    # Without a token secret: no volume, no HF_TOKEN_PATH.
    plain = o.deployment(spec())["spec"]["template"]["spec"]
    assert "hf-token" not in {v["name"] for v in plain["volumes"]}
    assert "HF_TOKEN_PATH" not in {e["name"] for e in plain["initContainers"][0]["env"]}


def test_the_download_script_asks_the_hub_for_what_vllm_loads(monkeypatch):
    """The script run against a stand-in huggingface_hub: safetensors when the repository has them, else PyTorch
    weights; configs and tokenizer files; never Meta's original/ checkpoint."""
    import sys
    import types

    calls = {}
    for files, weights in ((["model-00001-of-00004.safetensors", "pytorch_model.bin"], ["*.safetensors"]),
                           (["pytorch_model.bin", "config.json"], ["*.bin", "*.pt"])):
        hub = types.ModuleType("huggingface_hub")
        hub.HfApi = lambda f=files: types.SimpleNamespace(list_repo_files=lambda model: f)
        hub.snapshot_download = lambda model, **kwargs: calls.update(model=model, **kwargs)
        monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
        monkeypatch.setenv("MODEL_ID", MODEL)
        exec(compile(o.DOWNLOAD_SCRIPT, "download", "exec"), {})
        assert calls == {"model": MODEL, "allow_patterns": [*weights, "*.json", "*.model", "*.tiktoken", "*.txt",
                                                            "*.jinja"], "ignore_patterns": ["original/*"]}


def test_a_shared_cache_is_one_claim():
    s = spec(cache_access_mode="ReadWriteMany", cache_storage_class="efs-sc", cache_size="64Gi")
    assert o.model_cache_claim(s) == {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "llm-model-cache", "namespace": "llm", "labels": {
            "app.kubernetes.io/managed-by": "gpu-platform", "app.kubernetes.io/name": "llm"}},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "64Gi"}},
                 "storageClassName": "efs-sc"}}
    volumes = {v["name"]: v for v in o.deployment(s)["spec"]["template"]["spec"]["volumes"]}
    assert volumes["model-cache"] == {"name": "model-cache", "persistentVolumeClaim": {"claimName": "llm-model-cache"}}


def test_weights_on_a_claim_are_served_read_only_without_a_download():
    s = spec(model_source="pvc", model_claim="llama-weights", model_path="llama-3.1-8b", served_model_name="llama")
    pod = o.deployment(s)["spec"]["template"]["spec"]
    assert "initContainers" not in pod
    (server,) = pod["containers"]
    assert server["args"][:4] == ["--model", "/models/llama-3.1-8b", "--served-model-name", "llama"]
    assert {"name": "HF_HOME", "value": "/tmp/hf"} in server["env"]
    assert server["volumeMounts"][-1] == {"name": "model", "mountPath": "/models", "readOnly": True}
    assert {"name": "model", "persistentVolumeClaim": {"claimName": "llama-weights", "readOnly": True}} in pod[
        "volumes"]
    assert o.server_args(spec(model_source="pvc", model_claim="w"))[1] == "/models"


def test_engine_arguments_follow_the_args():
    s = spec_from_args({"pool": GpuPool("h100", "aws", "p5.48xlarge", "h100", 8, 80, 0, 2).spec(), "model": MODEL,
                        "tensor_parallel_size": 4, "dtype": "bfloat16", "quantization": "fp8",
                        "gpu_memory_utilization": 0.85})
    assert o.server_args(s) == ["--model", MODEL, "--served-model-name", MODEL, "--port", "8000",
                                "--tensor-parallel-size", "4", "--dtype", "bfloat16", "--gpu-memory-utilization",
                                "0.85", "--quantization", "fp8"]
    resources = o.deployment(s)["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == 4


def test_dra_pools_claim_the_replicas_gpus():
    s = spec_from_args({"pool": H100_DRA.spec(), "model": MODEL, "tensor_parallel_size": 2})
    pod = o.deployment(s)["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "llm-gpus"}]
    resources = pod["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "8", "memory": "32Gi"}, "limits": {"memory": "32Gi"},
                         "claims": [{"name": "gpus"}]}
    template = o.gpu_claim_template(s)
    assert template["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}}]
    assert o.gpu_claim_template(spec()) is None


def test_service_budget_and_namespace():
    s = spec()
    assert o.service(s)["spec"] == {"type": "ClusterIP", "selector": {"app.kubernetes.io/name": "llm"}, "ports": [
        {"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]}
    assert o.pod_disruption_budget(s)["spec"] == {"maxUnavailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow",
                                                  "selector": {"matchLabels": {"app.kubernetes.io/name": "llm"}}}
    ns = o.namespace(s)["metadata"]
    assert ns["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert ns["annotations"]["gpu-platform.io/pod-security-reason"] == o.SECURITY.reason


# ---------------------------------------------------------------------------------------------------------
# The endpoint picker and the pool


def test_the_inference_pool_is_v1_and_names_the_picker_on_its_ext_proc_port():
    pool = o.inference_pool(spec())
    assert pool == {
        "apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
        "metadata": {"name": "llm", "namespace": "llm", "labels": {"app.kubernetes.io/managed-by": "gpu-platform",
                                                                   "app.kubernetes.io/name": "llm"}},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "llm"}}, "targetPorts": [{"number": 8000}],
                 "appProtocol": "http",
                 "endpointPickerRef": {"name": "llm-epp", "kind": "Service", "port": {"number": 9002},
                                       "failureMode": "FailOpen"}}}
    validate_manifest(pool, "1.34")
    # The pool selects the model servers only, never the picker.
    assert pool["spec"]["selector"]["matchLabels"] == o.deployment(spec())["spec"]["selector"]["matchLabels"]
    assert pool["spec"]["selector"]["matchLabels"] != o.picker_deployment(spec())["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p["spec"].update(targetPortNumber=8000), "targetPortNumber"),  # the v1alpha2 field
    (lambda p: p["spec"].pop("endpointPickerRef"), "endpointPickerRef"),  # required at v1.5.0
    (lambda p: p["spec"]["endpointPickerRef"].pop("name"), "'name' is a required property"),
    (lambda p: p["spec"].update(appProtocol="grpc"), "grpc"),
])
def test_the_vendored_schema_catches_wrong_pools(change, message):
    pool = copy.deepcopy(o.inference_pool(spec()))
    change(pool)
    with pytest.raises(ManifestError, match=message):
        validate_manifest(pool, "1.34")


def test_the_picker_follows_the_v1_5_0_chart():
    s = spec()
    deployment = o.picker_deployment(s)
    pod = deployment["spec"]["template"]["spec"]
    (epp,) = pod["containers"]
    assert epp["image"] == EPP
    assert epp["args"] == ["--pool-name", "llm", "--pool-namespace", "llm", "--pool-group",
                           "inference.networking.k8s.io", "--zap-encoder", "json", "--config-file",
                           "/config/default-plugins.yaml", "--v", "1", "--tracing=false"]
    assert epp["ports"] == [{"name": "grpc", "containerPort": 9002, "protocol": "TCP"},
                            {"name": "grpc-health", "containerPort": 9003, "protocol": "TCP"},
                            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]
    assert epp["livenessProbe"] == {"grpc": {"port": 9003, "service": "inference-extension"},
                                    "initialDelaySeconds": 5, "periodSeconds": 10}
    assert epp["readinessProbe"] == {"grpc": {"port": 9003, "service": "inference-extension"}, "periodSeconds": 2}
    assert epp["securityContext"] == SECURITY_CONTEXT
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    # The one API client of the service; amd64 nodes only (the release's only image); no GPU toleration.
    assert pod["automountServiceAccountToken"] is True
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "amd64"} and "tolerations" not in pod
    assert o.picker_role(s)["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]},
        {"apiGroups": ["inference.networking.k8s.io"], "resources": ["inferencepools"],
         "verbs": ["get", "watch", "list"]},
        {"apiGroups": ["inference.networking.x-k8s.io"], "resources": ["inferenceobjectives", "inferencemodelrewrites"],
         "verbs": ["get", "watch", "list"]}]
    assert o.picker_role_binding(s)["subjects"] == [{"kind": "ServiceAccount", "name": "llm-epp", "namespace": "llm"}]
    assert o.picker_service(s)["spec"]["ports"] == [{"name": "grpc-ext-proc", "port": 9002, "targetPort": "grpc",
                                                     "protocol": "TCP"}]
    plugins = yaml.safe_load(o.picker_config_map(s)["data"]["default-plugins.yaml"])
    assert plugins == o.picker_plugins()
    assert [p["type"] for p in plugins["plugins"]] == ["queue-scorer", "kv-cache-utilization-scorer",
                                                       "prefix-cache-scorer", "metrics-data-source",
                                                       "core-metrics-extractor"]
    assert plugins["schedulingProfiles"][0]["plugins"] == [
        {"pluginRef": "queue-scorer", "weight": 2}, {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
        {"pluginRef": "prefix-cache-scorer", "weight": 3}]


# ---------------------------------------------------------------------------------------------------------
# The route: the 503 guard


def test_the_route_sends_the_openai_api_to_the_v1_pool():
    s = spec(route={**ROUTE, "request_timeout": "600s"})
    route = o.http_route(s)
    assert route["spec"] == {
        "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "platform",
                        "namespace": "gateway", "sectionName": "https"}],
        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}],
                   "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llm"}],
                   "timeouts": {"request": "600s"}}]}
    validate_manifest(route, "1.34")
    # The listener's host, when the route names one.
    hosted = o.http_route(spec(route={**ROUTE, "hostname": "llm.example.com"}))
    assert hosted["spec"]["hostnames"] == ["llm.example.com"]
    validate_manifest(hosted, "1.34")
    assert o.http_route(spec()) is None  # no gateway: no route
    assert o.gke_health_check_policy(s) is None and o.gke_backend_policy(s) is None


@pytest.mark.parametrize(("ref", "problem"), [
    ({"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llm"}, None),
    ({"group": "inference.networking.x-k8s.io", "kind": "InferencePool", "name": "llm"},
     "group inference.networking.x-k8s.io is the retired v1alpha2 InferencePool, which the pinned inference extension "
     "no longer serves: the route would never resolve (503); use inference.networking.k8s.io"),
    ({"name": "llm", "port": 8000},
     "backend core/Service is not the inference.networking.k8s.io InferencePool: requests would bypass the endpoint "
     "picker"),
    ({"group": "inference.networking.k8s.io", "kind": "InferencePoolImport", "name": "llm"},
     "backend inference.networking.k8s.io/InferencePoolImport is not the inference.networking.k8s.io InferencePool: "
     "requests would bypass the endpoint picker"),
    ({"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llm", "port": 8000},
     "an InferencePool backend takes no port (the pool's targetPorts apply)"),
])
def test_backend_refs_other_than_the_v1_pool_are_refused(ref, problem):
    assert o.backend_ref_problem(ref) == problem


def test_the_route_guard_stops_a_wrong_group(monkeypatch):
    monkeypatch.setattr(o, "INFERENCE_POOL_GROUP", o.RETIRED_POOL_GROUP)
    with pytest.raises(ValueError, match="retired v1alpha2 InferencePool"):
        o.http_route(spec(**GATEWAY))


def test_gke_gets_its_policies_and_no_route_timeout():
    gke = {"gateway_name": "inference", "gateway_namespace": "gateway", "section_name": "http", "implementation": "gke",
           "request_timeout": "5m", "data_plane_peers": [{"ipBlock": {"cidr": "10.129.0.0/23"}}]}
    s = spec(route=gke)
    route = o.http_route(s)
    assert "timeouts" not in route["spec"]["rules"][0]
    target = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llm"}
    health = o.gke_health_check_policy(s)
    assert health["spec"] == {"targetRef": target, "default": {"timeoutSec": 2, "checkIntervalSec": 2, "config": {
        "type": "HTTP", "httpHealthCheck": {"requestPath": "/health", "port": 8000}}}}
    backend = o.gke_backend_policy(s)
    assert backend["spec"] == {"targetRef": target, "default": {"timeoutSec": 300}}
    for body in (route, health, backend):
        validate_manifest(body, "1.34")


# ---------------------------------------------------------------------------------------------------------
# Network


def test_who_reaches_the_servers_and_the_picker():
    s = spec(**GATEWAY, monitoring_namespace="monitoring")
    policies = [o.network_policy(s), o.picker_network_policy(s)]
    server = Endpoint("llm", o.deployment(s)["spec"]["template"]["metadata"]["labels"])
    picker = Endpoint("llm", o.picker_deployment(s)["spec"]["template"]["metadata"]["labels"])
    envoy = Endpoint("envoy-gateway-system", {"app.kubernetes.io/component": "proxy"})
    prometheus = Endpoint("monitoring", {"app.kubernetes.io/name": "prometheus",
                                         "app.kubernetes.io/instance": "kube-prometheus-stack-prometheus"})
    grafana = Endpoint("monitoring", {"app.kubernetes.io/name": "grafana"})
    tenant = Endpoint("research", {})
    neighbour = Endpoint("llm", {"app.kubernetes.io/name": "other"})
    assert admitted(policies, envoy, picker, 9002) and admitted(policies, envoy, server, 8000)
    assert admitted(policies, picker, server, 8000) and admitted(policies, prometheus, server, 8000)
    for source in (tenant, grafana, neighbour, prometheus):
        assert not admitted(policies, source, picker, 9002), source
    for source in (tenant, grafana, neighbour):
        assert not admitted(policies, source, server, 8000), source
    assert not admitted(policies, envoy, picker, 9090) and not admitted(policies, envoy, server, 9002)
    # Without a gateway nothing reaches the picker; the servers still admit the picker and Prometheus.
    alone = spec(monitoring_namespace="monitoring")
    assert o.picker_network_policy(alone)["spec"]["ingress"] == []
    assert not admitted([o.picker_network_policy(alone)], envoy, picker, 9002)


# ---------------------------------------------------------------------------------------------------------
# Autoscaling and scraping


def test_keda_scales_on_vllms_queue_and_kv_cache():
    s = spec(prometheus_url=PROMETHEUS, replicas=2, max_replicas=4, target_waiting_requests=8,
             target_kv_cache_usage=0.7, served_model_name="llama")
    scaled = o.scaled_object(s)
    assert scaled["spec"]["triggers"] == [
        {"type": "prometheus", "name": "waiting-requests", "metadata": {
            "serverAddress": PROMETHEUS, "ignoreNullValues": "false",
            "query": 'sum(avg_over_time(vllm:num_requests_waiting{namespace="llm", model_name="llama"}[1m]))',
            "threshold": "8"}},
        {"type": "prometheus", "name": "kv-cache-usage", "metricType": "Value", "metadata": {
            "serverAddress": PROMETHEUS, "ignoreNullValues": "false",
            "query": 'avg(avg_over_time(vllm:kv_cache_usage_perc{namespace="llm", model_name="llama"}[1m]))',
            "threshold": "0.7"}}]
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (2, 4)
    assert scaled["spec"]["fallback"] == {"failureThreshold": 3, "replicas": 2, "behavior": "currentReplicasIfHigher"}
    assert scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleUp"]["policies"] == [
        {"type": "Pods", "value": 1, "periodSeconds": 120}]
    validate_manifest(scaled, "1.34")
    assert o.scaled_object(spec()) is None  # no Prometheus: no autoscaler
    assert o.scaled_object(spec(prometheus_url=PROMETHEUS, autoscaler="none")) is None


def test_the_service_monitor_scrapes_vllm():
    monitor = o.service_monitor(spec(service_monitor=True, service_monitor_labels={"release": "kps"}))
    assert monitor["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gpu-platform",
                                             "app.kubernetes.io/name": "llm", "release": "kps"}
    assert monitor["spec"] == {"selector": {"matchLabels": {"app.kubernetes.io/name": "llm"}},
                               "namespaceSelector": {"matchNames": ["llm"]},
                               "endpoints": [{"port": "http", "path": "/metrics", "interval": "15s",
                                              "scrapeTimeout": "10s"}]}
    validate_manifest(monitor, "1.34")


# ---------------------------------------------------------------------------------------------------------
# The component


def full_args(**extra):
    return {"pool": L4.spec(), "model": MODEL, "hf_token_secret": "hf-token", "prometheus_url": PROMETHEUS,
            "monitoring_namespace": "monitoring", "service_monitor": True, **GATEWAY, **extra}


def test_the_component_registers_every_object_valid_and_in_order():
    rec = run_program(lambda: LlmService("chat", full_args()))
    component = rec.one("gpuplatform:index:LlmService", "chat")
    children = [r for r in rec if r.parent == component.urn]
    assert sorted((r.type, r.name) for r in children) == sorted([
        ("kubernetes:yaml/v2:ConfigFile", "chat-inference-pool-crd"),
        ("kubernetes:core/v1:Namespace", "chat-namespace"),
        ("kubernetes:core/v1:ServiceAccount", "chat-sa"),
        ("kubernetes:apps/v1:Deployment", "chat-deployment"),
        ("kubernetes:core/v1:Service", "chat-service"),
        ("kubernetes:policy/v1:PodDisruptionBudget", "chat-pdb"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "chat-network-policy"),
        ("kubernetes:core/v1:ServiceAccount", "chat-epp-sa"),
        ("kubernetes:rbac.authorization.k8s.io/v1:Role", "chat-epp-role"),
        ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "chat-epp-role-binding"),
        ("kubernetes:core/v1:ConfigMap", "chat-epp-config"),
        ("kubernetes:apps/v1:Deployment", "chat-epp-deployment"),
        ("kubernetes:core/v1:Service", "chat-epp-service"),
        ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "chat-epp-network-policy"),
        ("kubernetes:inference.networking.k8s.io/v1:InferencePool", "chat-inference-pool"),
        ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "chat-route"),
        ("kubernetes:keda.sh/v1alpha1:ScaledObject", "chat-scaled-object"),
        ("kubernetes:monitoring.coreos.com/v1:ServiceMonitor", "chat-service-monitor"),
    ])
    crd = rec.one("kubernetes:yaml/v2:ConfigFile")
    assert crd.inputs["file"] == versions.INFERENCE_POOL_CRDS_MANIFEST
    pool = rec.one("kubernetes:inference.networking.k8s.io/v1:InferencePool")
    picker_service = rec.one("kubernetes:core/v1:Service", "chat-epp-service")
    assert {crd.urn, picker_service.urn} <= set(pool.dependencies)
    assert pool.urn in rec.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute").dependencies
    server = rec.one("kubernetes:apps/v1:Deployment", "chat-deployment")
    assert server.ignore_changes == ["spec.replicas"]  # KEDA owns the count
    assert server.urn in rec.one("kubernetes:keda.sh/v1alpha1:ScaledObject").dependencies
    namespace = rec.one("kubernetes:core/v1:Namespace")
    # The Gateway's listeners admit routes from namespaces with this label.
    assert namespace.inputs["metadata"]["labels"]["gpu-platform.io/gateway-routes"] == "true"
    for obj in render_manifests(rec):
        validate_manifest(obj, "1.34")


def test_the_component_outputs():
    made = {}
    run_program(lambda: made.setdefault("llm", LlmService("chat", full_args(served_model_name="llama"))))
    llm = made["llm"]
    assert (llm.namespace, llm.url, llm.model) == ("llm", "http://llm.llm.svc.cluster.local:8000/v1", "llama")


def test_what_is_left_out_without_its_prerequisites():
    rec = run_program(lambda: LlmService("chat", {"pool": L4.spec(), "model": MODEL, "install_crds": False,
                                                  "create_namespace": False}))
    types = {r.type for r in rec}
    assert not types & {"kubernetes:yaml/v2:ConfigFile", "kubernetes:core/v1:Namespace",
                        "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "kubernetes:keda.sh/v1alpha1:ScaledObject",
                        "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"}
    assert rec.one("kubernetes:apps/v1:Deployment", "chat-deployment").ignore_changes == []
    gke = run_program(lambda: LlmService("chat", full_args(route={**ROUTE, "implementation": "gke"})))
    assert {r.type for r in gke} >= {"kubernetes:networking.gke.io/v1:HealthCheckPolicy",
                                     "kubernetes:networking.gke.io/v1:GCPBackendPolicy"}
    for obj in render_manifests(gke):
        validate_manifest(obj, "1.34")


@pytest.mark.parametrize(("args", "message"), [
    ({"model": MODEL}, "LlmService chat: pool: is required"),
    ({"pool": L4.spec()}, "LlmService chat: model: is required"),
    ({"pool": L4.spec(), "model": MODEL, "tensorParallelSize": 1},
     "LlmService chat: tensorParallelSize: unknown argument; arguments are snake_case in Python: use "
     "'tensor_parallel_size' (camelCase is the stack file's spelling)"),
    ({"pool": L4.spec(), "model": MODEL, "tensor_parallel_size": 2},
     "LlmService chat: tensor_parallel_size: 2 GPUs per replica, but the nodes of pool 'l4-infer' have 1 (a replica "
     "runs on one node)"),
    ({"pool": L4.spec(), "model": "meta-llama/Llama-3.3-70B-Instruct"},
     "LlmService chat: model: meta-llama/Llama-3.3-70B-Instruct has 70.6B parameters: 131.5 GiB of weights in "
     "bfloat16 (dtype auto), more than one replica holds on pool 'l4-infer' (1 x 24 GiB NVIDIA L4 x "
     "gpuMemoryUtilization 0.9 = 21.6 GiB); choose a pool with more GPU memory, a larger tensorParallelSize or a "
     "quantization"),
    ({"pool": GpuPool("ts", "aws", "g6.2xlarge", "l4", 1, 24, 0, 2, sharing=Sharing("time-slicing", 4)).spec(),
      "model": MODEL},
     "LlmService chat: pool: pool 'ts' shares each GPU (time-slicing, 4 per GPU); vLLM takes gpuMemoryUtilization of "
     "the whole GPU's memory, so two replicas on one GPU run out of memory: use a pool with exclusive or MIG GPUs"),
    ({"pool": L4.spec(), "model": MODEL, "model_source": "pvc"},
     "LlmService chat: model_claim: is required with model_source pvc (the claim holding the weights)"),
    ({"pool": L4.spec(), "model": MODEL, "model_claim": "w"},
     "LlmService chat: model_claim: takes effect only with model_source pvc"),
    ({"pool": L4.spec(), "model": MODEL, "autoscaler": "none", "max_replicas": 3},
     "LlmService chat: max_replicas: takes effect only with autoscaler keda"),
    ({"pool": L4.spec(), "model": MODEL, "replicas": 3, "max_replicas": 2},
     "LlmService chat: max_replicas: must be >= replicas (3), got 2"),
    ({"pool": L4.spec(), "model": MODEL, "route": {"gateway_name": "platform"}},
     "LlmService chat: route.gateway_namespace: is required"),
    ({"pool": L4.spec(), "model": MODEL, "route": {**ROUTE, "rate_limit_per_minute": 60}},
     "LlmService chat: route.rate_limit_per_minute: the LLM route takes none: requests are small, answers stream "
     "(bound them with route.request_timeout)"),
    ({"pool": L4.spec(), "model": MODEL, "route": {**ROUTE, "request_timeout": "300"}},
     "LlmService chat: route.request_timeout: '300' is not a duration such as 10s or 2m"),
    ({"pool": L4.spec(), "model": MODEL, "quantization": "int4"},
     "LlmService chat: quantization: 'int4' is not one of fp8, modelopt, awq, awq_marlin, gptq, gptq_marlin, "
     "bitsandbytes, mxfp4, modelopt_fp4, compressed-tensors"),
    ({"pool": L4.spec(), "model": MODEL, "hf_token_secret": "Not_A_Name"},
     "LlmService chat: hf_token_secret: 'Not_A_Name' is not a Kubernetes object name (lower-case letters, digits, "
     "'-' and '.')"),
])
def test_bad_args_are_refused_before_anything_is_registered(args, message):
    registered = []

    def program():
        registered.append(1)
        LlmService("chat", args)

    with pytest.raises(ConfigError) as err:
        run_program(program)
    assert str(err.value) == message
