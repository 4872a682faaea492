"""The LLM layer of `GpuPlatform`: the reference stack plans vLLM, the InferencePool v1 and its picker, KEDA scaling and
the LLM dashboard and alerts, all valid; with a Gateway (the gateway layer's contract, stood in for here) the
HTTPRoute to the pool; every ``llm`` key reaches the plan."""

from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import planned_stack

from gpu_platform import versions
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.plan import render_manifests
from gpu_platform.platform import GpuPlatform
from gpu_platform.schemas import validate_manifest
from gpu_platform.testing import run_program

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
ENVOY = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}},
         "podSelector": {"matchLabels": {"app.kubernetes.io/component": "proxy"}}}


@dataclass
class StandInGateway:
    """What the gateway layer publishes to the services it routes (its contract with the LLM layer)."""

    gateway_name: str = "platform"
    gateway_namespace: str = "gateway"
    http_listener: str = "http"
    https_listener: str = ""
    implementation: str = "envoy-gateway"
    supports_inference_pool: bool = True
    data_plane_peers: list = field(default_factory=lambda: [ENVOY])
    ready: list = field(default_factory=list)

    def route_args(self, hostname=None, request_timeout="10s", max_request_body_size=None,
                   rate_limit_per_minute=None) -> dict:
        """A service's `GatewayRouteArgs`, as `InferenceGateway.route_args` builds them."""
        return {"gateway_name": self.gateway_name, "gateway_namespace": self.gateway_namespace,
                "section_name": self.https_listener or self.http_listener, "implementation": self.implementation,
                "request_timeout": request_timeout, "data_plane_peers": list(self.data_plane_peers)}


@pytest.fixture
def gateway(monkeypatch):
    """Stands in for the gateway layer: `GpuPlatform` finds this object at ``layers["gateway"]``."""
    stand_in = StandInGateway()

    def build(platform: Any, name: str) -> None:
        platform.layers["gateway"] = stand_in

    monkeypatch.setattr("gpu_platform.serving.gateway.build_gateway_layer", build)
    return stand_in


def small_stack(llm: dict, **extra) -> dict:
    """An existing cluster with two NVIDIA pools, monitoring, and nothing else that is slow to plan."""
    return {"cloud": "existing", "networkPolicyEnforced": True, "inference": {"enabled": False},
            "training": {"enabled": False}, "optimizer": {"enabled": False}, "scheduling": {"kueue": False},
            "autoscaling": {"vpa": False},
            "nodePools": [{"name": "h100", "gpuModel": "h100", "gpusPerNode": 8, "minNodes": 1, "maxNodes": 2},
                          {"name": "a100", "gpuModel": "a100-80gb", "gpusPerNode": 4, "minNodes": 0, "maxNodes": 2}],
            "llm": llm, **extra}


def objects(raw: dict) -> dict[tuple[str, str], dict]:
    rec = run_program(lambda: GpuPlatform("s", parse_config(raw, "s")))
    manifests = render_manifests(rec)
    for obj in manifests:
        validate_manifest(obj, "1.34")
    return {(m["kind"], m["metadata"]["name"]): m for m in manifests}


def server(found: dict) -> dict:
    return found[("Deployment", "llm")]["spec"]["template"]["spec"]


# ---------------------------------------------------------------------------------------------------------
# The reference stack


@pytest.fixture(scope="module")
def aws_dev():
    result = planned_stack("aws-dev")
    assert result.errors == []
    return result


def test_the_reference_stack_serves_an_llm(aws_dev):
    found = {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in aws_dev.manifests}
    assert {("Namespace", None, "llm"), ("Deployment", "llm", "llm"), ("Deployment", "llm", "llm-epp"),
            ("InferencePool", "llm", "llm"), ("Service", "llm", "llm-epp"), ("ScaledObject", "llm", "llm"),
            ("ServiceMonitor", "llm", "llm"), ("NetworkPolicy", "llm", "llm"), ("NetworkPolicy", "llm", "llm-epp"),
            ("ConfigMap", "monitoring", "llm-serving-dashboard")} <= found
    pool = next(m for m in aws_dev.manifests if m["kind"] == "InferencePool")
    assert pool["apiVersion"] == "inference.networking.k8s.io/v1"
    deployment = next(m for m in aws_dev.manifests if m["kind"] == "Deployment" and m["metadata"]["name"] == "llm")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-platform.io/pool": "l4-infer"}
    assert pod["containers"][0]["args"] == [
        "--model", MODEL, "--served-model-name", MODEL, "--port", "8000", "--tensor-parallel-size", "1", "--dtype",
        "auto", "--gpu-memory-utilization", "0.9", "--max-model-len", "16384"]
    alerts = next(m for m in aws_dev.manifests if m["kind"] == "PrometheusRule"
                  and m["metadata"]["name"] == "gpu-platform-alerts")
    assert alerts["spec"]["groups"][-1]["name"] == "gpu-platform.llm"
    # The route: /v1 on the stack's Gateway to the v1 pool.
    route = next(m for m in aws_dev.manifests if m["kind"] == "HTTPRoute" and m["metadata"]["name"] == "llm")
    assert route["spec"]["rules"][0]["backendRefs"] == [{"group": "inference.networking.k8s.io",
                                                         "kind": "InferencePool", "name": "llm"}]
    assert route["spec"]["parentRefs"][0]["name"] == "inference"
    # The gateway applies the InferencePool CRD (Envoy Gateway watches the kind from its start): once, not twice.
    crds = [r for r in aws_dev.recording.of_type("kubernetes:yaml/v2:ConfigFile")
            if r.inputs["file"] == versions.INFERENCE_POOL_CRDS_MANIFEST]
    assert [r.name for r in crds] == ["aws-dev-gateway-inference-pool-crds"]
    # The model servers and the picker wait for the inference-critical PriorityClass, KEDA's CRDs and the gateway.
    component = aws_dev.recording.one("gpuplatform:index:LlmService", "aws-dev-llm")
    keda = aws_dev.recording.one("kubernetes:helm.sh/v3:Release", "aws-dev-keda-release")
    priority = aws_dev.recording.one("kubernetes:scheduling.k8s.io/v1:PriorityClass", "aws-dev-scheduling-pc-"
                                                                                       "inference-critical")
    assert {keda.urn, priority.urn, crds[0].urn} <= set(component.dependencies)


# ---------------------------------------------------------------------------------------------------------
# With the gateway


def test_the_route_attaches_to_the_gateway_and_the_gateway_reaches_the_pool(gateway):
    found = objects(small_stack({"model": MODEL}))
    route = found[("HTTPRoute", "llm")]
    assert route["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                            "name": "platform", "namespace": "gateway", "sectionName": "http"}]
    assert route["spec"]["rules"][0]["backendRefs"] == [{"group": "inference.networking.k8s.io",
                                                         "kind": "InferencePool", "name": "llm"}]
    assert ENVOY in found[("NetworkPolicy", "llm-epp")]["spec"]["ingress"][0]["from"]
    assert ENVOY in found[("NetworkPolicy", "llm")]["spec"]["ingress"][0]["from"]
    assert found[("Namespace", "llm")]["metadata"]["labels"]["gpu-platform.io/gateway-routes"] == "true"
    # HTTPS when the Gateway has an HTTPS listener.
    gateway.https_listener = "https"
    assert objects(small_stack({"model": MODEL}))[("HTTPRoute", "llm")]["spec"]["parentRefs"][0]["sectionName"] == (
        "https")


def test_a_gateway_without_inference_pools_is_refused(gateway):
    gateway.supports_inference_pool = False
    with pytest.raises(ConfigError, match="^llm: the stack's Gateway 'platform' cannot route to an InferencePool "
                                          r"\(inference.networking.k8s.io/v1\)"):
        run_program(lambda: GpuPlatform("s", parse_config(small_stack({"model": MODEL}), "s")))


def test_gke_installs_the_crd_itself_from_1_34():
    from gpu_platform.serving.llm import gke_installs_inference_pool

    def stack(cloud, version):
        where = ({"region": "us-central1", "project": "gpu-platform-dev",
                  "nodePools": [{"name": "a", "instanceType": "a2-highgpu-1g"}]} if cloud == "gcp" else
                 {"region": "us-west-2", "nodePools": [{"name": "a", "instanceType": "g6.2xlarge"}]})
        return parse_config({"cloud": cloud, "kubernetesVersion": version, **where, "llm": {"model": MODEL}}, "s")

    assert gke_installs_inference_pool(stack("gcp", "1.34")) is True
    assert gke_installs_inference_pool(stack("gcp", "1.33")) is False
    assert gke_installs_inference_pool(stack("aws", "1.34")) is False


def test_the_llm_layer_brings_keda_when_the_inference_app_does_not(gateway):
    rec = run_program(lambda: GpuPlatform("s", parse_config(small_stack({"model": MODEL}), "s")))
    keda = rec.one("kubernetes:helm.sh/v3:Release", "s-keda-release")
    assert keda.inputs["chart"] == "keda"
    component = rec.one("gpuplatform:index:LlmService", "s-llm")
    assert keda.urn in component.dependencies
    fixed = run_program(lambda: GpuPlatform("s", parse_config(small_stack({"model": MODEL, "autoscaler": "none"}),
                                                              "s")))
    assert fixed.of_type("kubernetes:helm.sh/v3:Release") == [r for r in fixed.of_type(
        "kubernetes:helm.sh/v3:Release") if r.inputs["chart"] != "keda"]
    # Without monitoring there is nothing for KEDA to read: a fixed count, no ServiceMonitor.
    blind = objects(small_stack({"model": MODEL}, monitoring={"enabled": False}))
    assert ("ScaledObject", "llm") not in blind and ("ServiceMonitor", "llm") not in blind


# ---------------------------------------------------------------------------------------------------------
# Every key reaches the plan


def _args(found):
    return server(found)["containers"][0]["args"]


def _trigger(found, name):
    triggers = found[("ScaledObject", "llm")]["spec"]["triggers"]
    return next(t for t in triggers if t["name"] == name)["metadata"]["threshold"]


def _cache(found):
    volume = next(v for v in server(found)["volumes"] if v["name"] == "model-cache")
    return volume["ephemeral"]["volumeClaimTemplate"]["spec"]


PVC = {"modelSource": "pvc", "modelClaim": "weights"}
KEYS = {
    # key: (base llm keys, changed value (a mapping: the keys that change together), what to read from the plan,
    # expected with the change)
    "model": ({}, "Qwen/Qwen3-8B", lambda f: _args(f)[1], "Qwen/Qwen3-8B"),
    "pool": ({}, "a100", lambda f: server(f)["nodeSelector"], {"gpu-platform.io/pool": "a100"}),
    "servedModelName": ({}, "chat", lambda f: _args(f)[3], "chat"),
    "namespace": ({}, "chat", lambda f: f[("Deployment", "llm")]["metadata"]["namespace"], "chat"),
    "image": ({}, "docker.io/vllm/vllm-openai:v0.31.0-cu129", lambda f: server(f)["containers"][0]["image"],
              "docker.io/vllm/vllm-openai:v0.31.0-cu129"),
    "replicas": ({}, 2, lambda f: (f[("Deployment", "llm")]["spec"]["replicas"],
                                   f[("ScaledObject", "llm")]["spec"]["minReplicaCount"]), (2, 2)),
    "maxReplicas": ({}, 1, lambda f: f[("ScaledObject", "llm")]["spec"]["maxReplicaCount"], 1),
    "tensorParallelSize": ({}, 4, lambda f: (_args(f)[7], server(f)["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"]), ("4", 4)),
    "maxModelLen": ({}, 4096, lambda f: _args(f)[-2:], ["--max-model-len", "4096"]),
    "dtype": ({}, "bfloat16", lambda f: _args(f)[9], "bfloat16"),
    "quantization": ({}, "fp8", lambda f: _args(f)[-2:], ["--quantization", "fp8"]),
    "gpuMemoryUtilization": ({}, 0.8, lambda f: _args(f)[11], "0.8"),
    "modelSource": ({}, PVC, lambda f: "initContainers" in server(f), False),
    "modelClaim": (PVC, "llama", lambda f: [v["persistentVolumeClaim"]["claimName"] for v in server(f)["volumes"]
                                            if v["name"] == "model"], ["llama"]),
    "modelPath": (PVC, "llama/8b", lambda f: _args(f)[1], "/models/llama/8b"),
    "cacheSize": ({}, "64Gi", lambda f: _cache(f)["resources"]["requests"]["storage"], "64Gi"),
    "cacheStorageClass": ({}, "fast-ssd", lambda f: _cache(f).get("storageClassName"), "fast-ssd"),
    "cacheAccessMode": ({}, "ReadWriteMany", lambda f: f.get(("PersistentVolumeClaim", "llm-model-cache"), {}).get(
        "spec", {}).get("accessModes"), ["ReadWriteMany"]),
    "hfTokenSecret": ({}, "hf-token", lambda f: [v["secret"]["secretName"] for v in server(f)["volumes"]
                                                 if "secret" in v], ["hf-token"]),
    "autoscaler": ({}, "none", lambda f: ("ScaledObject", "llm") in f, False),
    "targetWaitingRequests": ({}, 9, lambda f: _trigger(f, "waiting-requests"), "9"),
    "targetKvCacheUsage": ({}, 0.6, lambda f: _trigger(f, "kv-cache-usage"), "0.6"),
    "requestTimeout": ({}, "2m", lambda f: f[("HTTPRoute", "llm")]["spec"]["rules"][0]["timeouts"],
                       {"request": "2m"}),
}


def test_the_table_covers_every_key():
    from gpu_platform.serving import llm_config

    assert set(KEYS) == llm_config.KEYS


@pytest.mark.parametrize("key", sorted(KEYS))
def test_every_key_changes_the_plan(gateway, key):
    base, value, read, expected = KEYS[key]
    changed = value if isinstance(value, dict) else {key: value}
    before = read(objects(small_stack({"model": MODEL, **base})))
    after = read(objects(small_stack({"model": MODEL, **base, **changed})))
    assert after == expected
    assert before != after


def test_the_route_backend_is_the_kind_the_gateway_resolves(aws_dev):
    """The 503 guard across the two layers: Envoy Gateway hands InferencePool backends to Envoy AI Gateway by group,
    kind and version (``extensionManager.backendResources``); the route's backend and the planned pool must be
    exactly that (a v1alpha2 entry or route on one side only leaves the route unresolved)."""
    release = next(r for r in aws_dev.recording.of_type("kubernetes:helm.sh/v3:Release")
                   if r.inputs["chart"] == versions.ENVOY_GATEWAY.name)
    (resource,) = release.inputs["values"]["config"]["envoyGateway"]["extensionManager"]["backendResources"]
    route = next(m for m in aws_dev.manifests if m["kind"] == "HTTPRoute" and m["metadata"]["name"] == "llm")
    (backend,) = route["spec"]["rules"][0]["backendRefs"]
    pool = next(m for m in aws_dev.manifests if m["kind"] == "InferencePool")
    assert (backend["group"], backend["kind"]) == (resource["group"], resource["kind"])
    assert pool["apiVersion"] == f"{resource['group']}/{resource['version']}"
    assert (pool["kind"], pool["metadata"]["name"], pool["metadata"]["namespace"]) == (
        backend["kind"], backend["name"], route["metadata"]["namespace"])
