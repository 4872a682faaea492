"""The LLM service's Kubernetes objects as plain bodies (wire form), decided from an `LlmSpec`.

Every decision lives here so it is tested without the engine; `llm.LlmService` only registers them. What is built
and why:

- Model server: vLLM's OpenAI-compatible server (``vllm serve``, the image's entrypoint, so the container passes
  arguments only) on the pool's nodes, one replica per ``tensor_parallel_size`` GPUs of one node (``nvidia.com/gpu``,
  or a ResourceClaimTemplate of that many devices on DRA pools). Priority ``inference-critical``, the pool's
  tolerations, spread over nodes then zones. ``/dev/shm`` is a memory-backed emptyDir: NCCL and PyTorch's workers
  share tensors through it, and the runtime's 64 MiB default breaks tensor parallelism.
- Probes: vLLM starts its HTTP server only once the weights are loaded, so a startup probe on ``/health`` (up to
  30 minutes: large checkpoints and the first CUDA graph capture) guards liveness and readiness, which read
  ``/health`` too. Shutdown: a 30 s ``preStop`` sleep lets the endpoint picker and the gateway drop the pod before vLLM
  stops accepting requests on SIGTERM; the grace period covers that plus the longest answer in flight (upstream's
  own manifest, gateway-api-inference-extension@v1.5.0 config/manifests/vllm/gpu-deployment.yaml, derives 130 s).
- Weights: ``huggingface``: an init container (the same image's Python and ``huggingface_hub``) downloads the
  checkpoint into the cache volume (its safetensors, else its PyTorch weights, with configs and tokenizer files;
  never Meta's ``original/`` copy), reading a gated model's token from a Secret mounted as a file; the server then
  runs with ``HF_HUB_OFFLINE=1`` and never needs the token. The cache is a generic ephemeral volume per replica
  (ReadWriteOnce: any block StorageClass) or one shared claim (ReadWriteMany: downloaded once). ``pvc``: an existing
  claim holding the weights, mounted read-only.
- Security: Pod Security ``restricted``: UID/GID 10001, read-only root filesystem, ``HOME`` and every cache on
  emptyDirs, no service-account token. vLLM's image has no user 10001, so ``USER`` is set: PyTorch's compile cache
  names its directory after ``getpass.getuser()``, which fails for a UID without a passwd entry.
- Routing: an ``InferencePool`` (``inference.networking.k8s.io/v1``) selects the server pods on port 8000 and names
  the endpoint picker (EPP, Gateway API Inference Extension v1.5.0) Service on its ext-proc port, 9002; the EPP
  scores replicas by their queue, KV-cache use and prefix-cache hits, scraping each pod's ``/metrics``. Its objects
  follow the release's ``inferencepool`` chart (config/charts/epplib templates): Deployment (one replica,
  ``Recreate``: the prefix-cache scorer is stateful), Service, ServiceAccount with a Role to watch pods and
  InferencePools (it is the one API client here), and the plugins ConfigMap. An ``HTTPRoute`` on the platform's
  Gateway sends ``/v1`` (the OpenAI API) to the pool: its backend is the pool by group, kind and name, never a
  Service, and never the retired ``inference.networking.x-k8s.io`` group (`backend_ref_problem`). On GKE the
  Gateway reads a HealthCheckPolicy (``/health``) and a GCPBackendPolicy (the request timeout; GKE's Gateway ignores
  HTTPRoute timeouts) for the pool, as the chart's ``provider.name: gke`` renders them.
- Autoscaling (KEDA): vLLM's own waiting requests (per replica) and average KV-cache usage, read from Prometheus
  with a fallback when it cannot be; GPU replicas take minutes to load, so it scales up one at a time and down
  slowly. The Deployment's ``replicas`` is the initial count only.
- Network: the server pods admit the endpoint picker, the gateway's data plane and Prometheus on 8000 only; the
  picker admits the gateway's data plane on 9002 only.
"""

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import yaml

from .. import labels
from ..accelerators import dra_objects
from ..health.health_placement import healthy_node_affinity
from ..kubernetes_base.common import claim_spec, metadata
from ..monitoring import metric_names, monitoring_policies
from ..pools import GpuPool
from ..scheduling.priorities import INFERENCE_CRITICAL
from ..security import namespace_security, pod_security
from ..storage import storage_objects
from ..versions import (
    ENDPOINT_PICKER_IMAGE,
    INFERENCE_POOL_API_VERSION,
    KEDA_API_VERSION,
    PROMETHEUS_OPERATOR_API_VERSION,
    VLLM_IMAGE,
)
from . import gateway_objects
from .gateway_config import seconds
from .gateway_objects import RouteTarget
from .llm_config import AUTOSCALERS, CACHE_ACCESS_MODES, MODEL_SOURCES, devices_per_node

DEFAULT_NAME = "llm"
HTTP_PORT = 8000
"""vLLM's ``--port`` (its default), the InferencePool's target port."""
PORT_NAME = "http"
PICKER_EXT_PROC_PORT = 9002
"""The EPP's ext-proc gRPC port (chart ``inferenceExtension.extProcPort``); the InferencePool's endpointPickerRef
port must be this one, not the model port (a wrong port answers ``ext_proc_error_gRPC_error_14``)."""
PICKER_HEALTH_PORT = 9003
PICKER_METRICS_PORT = 9090
PICKER_CONFIG_FILE = "default-plugins.yaml"
PICKER_CONFIG_PATH = "/config"
INFERENCE_POOL_GROUP = INFERENCE_POOL_API_VERSION.split("/")[0]
INFERENCE_POOL_KIND = "InferencePool"
RETIRED_POOL_GROUP = "inference.networking.x-k8s.io"
"""The v1alpha2 pool's group: GIE v1.5.0 no longer ships its CRD, so a route naming it never resolves (503s)."""
MODEL_CACHE_PATH = "/model-cache"
MODEL_CLAIM_PATH = "/models"
HF_TOKEN_DIR = "/var/run/secrets/huggingface"
HF_TOKEN_KEY = "token"
TMP_PATH = pod_security.TMP_PATH
TMP_SIZE = "8Gi"
"""``/tmp``: HOME, so vLLM's, Triton's, FlashInfer's and PyTorch's compile caches (a few GB at most)."""
PRE_STOP_SLEEP_S = 30
TERMINATION_GRACE_S = 130
STARTUP_PROBE_PERIOD_S = 10
STARTUP_PROBE_FAILURES = 180
PICKER_REPLICAS = 1
PICKER_RESOURCES = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}
"""The EPP's requests: the chart's (4 CPUs, 8Gi; scale-tested at high QPS) would not fit the small system nodes of a
development stack; one model's traffic needs far less. Memory limited, CPU free to burst."""
DOWNLOAD_RESOURCES = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}
DOWNLOAD_SCRIPT = """\
import os
from huggingface_hub import HfApi, snapshot_download
model = os.environ["MODEL_ID"]
files = HfApi().list_repo_files(model)
weights = ["*.safetensors"] if any(f.endswith(".safetensors") for f in files) else ["*.bin", "*.pt"]
snapshot_download(model, allow_patterns=[*weights, "*.json", "*.model", "*.tiktoken", "*.txt", "*.jinja"],
                  ignore_patterns=["original/*"])
"""
"""The download step: what vLLM loads (safetensors when the checkpoint has them, else its PyTorch weights; configs,
tokenizer and chat-template files) into ``HF_HOME``'s hub cache, which vLLM then reads offline. Files already there
are kept, so a restart or a second replica on a shared cache downloads nothing again."""
CACHED_DOWNLOAD_SCRIPT = """\
import os, pathlib
model = os.environ["MODEL_ID"]
done = pathlib.Path(os.environ["HF_HOME"], "complete", model.replace("/", "--"))
if done.exists():
    print(f"{model}: in the shared cache, nothing to download")
    raise SystemExit(0)
""" + DOWNLOAD_SCRIPT + """\
done.parent.mkdir(parents=True, exist_ok=True)
done.touch()
"""
"""The download step on a shared cache (the storage layer's model cache on the shared file system): the first
replica downloads and then marks the model complete (``$HF_HOME/complete/<org>--<name>``); every later replica finds
the mark and starts without reaching the Hub at all. The mark is written only after a complete download, so a replica
that died half-way leaves the next one to finish. The cache keeps the revision first downloaded: remove the mark to
fetch a newer one."""
SECURITY = namespace_security.namespace_pod_security("llm")


@dataclass(frozen=True)
class LlmSpec:
    """Everything the objects are decided from (plain values; defaults are the platform's choices)."""

    pool: GpuPool
    model: str
    """Hugging Face model id."""
    served_model_name: str = ""
    """The API's model name and the metrics' ``model_name`` (empty: ``model``)."""
    name: str = DEFAULT_NAME
    namespace: str = DEFAULT_NAME
    image: str = VLLM_IMAGE.reference
    picker_image: str = ENDPOINT_PICKER_IMAGE.reference
    replicas: int = 1
    max_replicas: int = 4
    tensor_parallel_size: int = 1
    max_model_len: Optional[int] = None
    dtype: str = "auto"
    quantization: Optional[str] = None
    gpu_memory_utilization: float = 0.9
    model_source: str = "huggingface"
    model_claim: Optional[str] = None
    model_path: str = ""
    cache_size: str = "100Gi"
    cache_storage_class: Optional[str] = None
    cache_access_mode: str = "ReadWriteOnce"
    cache_volume: Optional[str] = None
    """The PersistentVolume the shared cache claim binds to (a static volume of the shared file system)."""
    cache_sub_path: Optional[str] = None
    """The directory of the shared cache's volume mounted (``subPath``), where the file system's driver mounts only its
    root (GKE Managed Lustre); None: the whole volume."""
    skip_cached_model: bool = False
    """The download step skips a model a replica completed in the shared cache (`CACHED_DOWNLOAD_SCRIPT`)."""
    hf_token_secret: Optional[str] = None
    autoscaler: str = "keda"
    prometheus_url: Optional[str] = None
    """Prometheus the KEDA triggers query; without it there is no autoscaler."""
    target_waiting_requests: int = 5
    target_kv_cache_usage: float = 0.8
    priority_class: str = INFERENCE_CRITICAL.name
    monitoring_namespace: Optional[str] = None
    """Namespace of Prometheus (admitted to the server pods); None: nothing scrapes them."""
    service_monitor_labels: dict[str, str] = field(default_factory=dict)
    route: Optional[RouteTarget] = None
    """Where the HTTPRoute attaches on the stack's Gateway (listener, host, request timeout, the data plane's
    NetworkPolicy peers); None: no route (the service is reachable in-cluster only)."""

    def __post_init__(self) -> None:
        if self.autoscaler not in AUTOSCALERS:
            raise ValueError(f"autoscaler must be one of {AUTOSCALERS}, got {self.autoscaler!r}")
        if not 1 <= self.replicas <= self.max_replicas:
            raise ValueError(f"need 1 <= replicas ({self.replicas}) <= max_replicas ({self.max_replicas})")
        if self.model_source not in MODEL_SOURCES:
            raise ValueError(f"model_source must be one of {MODEL_SOURCES}, got {self.model_source!r}")
        if self.model_source == "pvc" and not self.model_claim:
            raise ValueError("model_source pvc needs model_claim")
        if self.cache_access_mode not in CACHE_ACCESS_MODES:
            raise ValueError(f"cache_access_mode must be one of {CACHE_ACCESS_MODES}, got {self.cache_access_mode!r}")

    @property
    def api_model_name(self) -> str:
        return self.served_model_name or self.model

    @property
    def picker_name(self) -> str:
        return f"{self.name}-epp"

    @property
    def uses_keda(self) -> bool:
        return self.autoscaler == "keda" and bool(self.prometheus_url)

    @property
    def gateway_peers(self) -> tuple[dict[str, Any], ...]:
        """NetworkPolicy ``from`` peers of the gateway's data plane (none without a route)."""
        return tuple(self.route.data_plane_peers) if self.route else ()

    @property
    def gke(self) -> bool:
        """GKE's Gateway: its backend and health-check policies instead of HTTPRoute timeouts."""
        return self.route is not None and self.route.implementation == gateway_objects.GKE

    @property
    def downloads(self) -> bool:
        """Whether an init step downloads the model from the Hub (``huggingface`` source)."""
        return self.model_source == "huggingface"


# ---------------------------------------------------------------------------------------------------------
# Shared pieces


def server_labels(spec: LlmSpec) -> dict[str, str]:
    """The model server pods' selector: what the InferencePool, the Service and the policies select."""
    return {labels.APP_NAME_LABEL: spec.name}


def picker_labels(spec: LlmSpec) -> dict[str, str]:
    """The endpoint picker's selector (distinct from the servers': the pool must never select the picker)."""
    return {labels.APP_NAME_LABEL: spec.picker_name}


def _pod_labels(selector: dict[str, str]) -> dict[str, str]:
    return {**selector, labels.MANAGED_BY_LABEL: labels.MANAGED_BY_VALUE}


def gpus_per_replica(spec: LlmSpec) -> int:
    return spec.tensor_parallel_size


def server_requests(pool: GpuPool, gpus: int) -> tuple[str, str]:
    """(cpu, memory) of one server: 70% of the node's CPUs and memory per GPU, times its GPUs (at least 2 CPUs and
    16 GiB: tokenizer, scheduler, weight loading and ``/dev/shm``, which counts as the pod's memory); 4 CPUs and 16 GiB
    per GPU where the pool's node shape is unknown (existing clusters). 70%, so the node's DaemonSets fit beside."""
    slots = max(1, devices_per_node(pool))
    share = gpus / slots
    cpus = max(2, math.floor(pool.vcpus_per_node * share * 0.7)) if pool.vcpus_per_node else 4 * gpus
    memory = max(16, math.floor(pool.memory_gib_per_node * share * 0.7)) if pool.memory_gib_per_node else 16 * gpus
    return str(cpus), f"{memory}Gi"


def server_resources(spec: LlmSpec) -> dict[str, Any]:
    cpu, memory = server_requests(spec.pool, gpus_per_replica(spec))
    # A DRA pool's nodes advertise no GPU extended resource: the GPUs come from the pod's claim.
    gpu: dict[str, Any] = {} if spec.pool.dra else {spec.pool.resource: gpus_per_replica(spec)}
    amounts: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory, **gpu}, "limits": {"memory": memory, **gpu}}
    if spec.pool.dra:
        amounts["claims"] = dra_objects.container_claims()
    return amounts


def model_reference(spec: LlmSpec) -> str:
    """``--model``: the Hub id (read from the offline cache) or the weights' directory on the claim."""
    if spec.downloads:
        return spec.model
    return f"{MODEL_CLAIM_PATH}/{spec.model_path}" if spec.model_path else MODEL_CLAIM_PATH


def server_args(spec: LlmSpec) -> list[str]:
    """``vllm serve`` arguments (the image's entrypoint is ``vllm serve``: no ``serve`` here)."""
    args = ["--model", model_reference(spec), "--served-model-name", spec.api_model_name, "--port", str(HTTP_PORT),
            "--tensor-parallel-size", str(spec.tensor_parallel_size), "--dtype", spec.dtype,
            "--gpu-memory-utilization", f"{spec.gpu_memory_utilization:g}"]
    if spec.max_model_len is not None:
        args += ["--max-model-len", str(spec.max_model_len)]
    if spec.quantization:
        args += ["--quantization", spec.quantization]
    return args


def _hf_home(spec: LlmSpec) -> str:
    return MODEL_CACHE_PATH if spec.downloads else f"{TMP_PATH}/hf"


def _common_env(spec: LlmSpec) -> list[dict[str, Any]]:
    return [
        {"name": "HOME", "value": TMP_PATH},
        # getpass.getuser() (PyTorch's compile cache directory) needs a name for a UID the image does not know.
        {"name": "USER", "value": "vllm"},
        {"name": "HF_HOME", "value": _hf_home(spec)},
    ]


def server_env(spec: LlmSpec) -> list[dict[str, Any]]:
    return [
        *_common_env(spec),
        # The download step fetched everything; the server never reaches out to the Hub (nor needs the token).
        {"name": "HF_HUB_OFFLINE", "value": "1"},
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
        {"name": "DO_NOT_TRACK", "value": "1"},
    ]


def download_env(spec: LlmSpec) -> list[dict[str, Any]]:
    env = [*_common_env(spec), {"name": "MODEL_ID", "value": spec.model},
           {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"}]
    if spec.hf_token_secret:
        # huggingface_hub reads the token from this file: the token never appears in the pod's environment.
        env.append({"name": "HF_TOKEN_PATH", "value": f"{HF_TOKEN_DIR}/{HF_TOKEN_KEY}"})
    return env


def _probe(path: str, period: int, timeout: int, failures: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": PORT_NAME}, "periodSeconds": period, "timeoutSeconds": timeout,
            "failureThreshold": failures}


def topology_spread(selector: dict[str, str]) -> list[dict[str, Any]]:
    return [{"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": dict(selector)}}
            for key in (labels.HOSTNAME_LABEL, labels.ZONE_LABEL)]


def model_cache_name(spec: LlmSpec) -> str:
    return f"{spec.name}-model-cache"


def gpu_claim_template_name(spec: LlmSpec) -> str:
    return f"{spec.name}-gpus"


def _cache_claim_spec(spec: LlmSpec) -> dict[str, Any]:
    return claim_spec(spec.cache_access_mode, spec.cache_size, spec.cache_storage_class, spec.cache_volume)


def _volumes(spec: LlmSpec) -> list[dict[str, Any]]:
    tmp_volume, _ = pod_security.writable_dir("tmp", TMP_PATH, TMP_SIZE)
    volumes = [tmp_volume, {"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    if not spec.downloads:
        volumes.append({"name": "model", "persistentVolumeClaim": {"claimName": spec.model_claim, "readOnly": True}})
    elif spec.cache_access_mode == "ReadWriteMany":
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": model_cache_name(spec)}})
    else:
        # One volume per pod, created and deleted with it: block storage (ReadWriteOnce) cannot be shared by replicas
        # on several nodes, and a Deployment has no per-replica claims.
        volumes.append({"name": "model-cache", "ephemeral": {"volumeClaimTemplate": {
            "metadata": {"labels": _pod_labels(server_labels(spec))}, "spec": _cache_claim_spec(spec)}}})
    if spec.downloads and spec.hf_token_secret:
        volumes.append({"name": "hf-token", "secret": {
            "secretName": spec.hf_token_secret, "items": [{"key": HF_TOKEN_KEY, "path": HF_TOKEN_KEY}],
            "defaultMode": 0o440}})
    return volumes


def _cache_mount(spec: LlmSpec) -> dict[str, Any]:
    """The model cache's mount (in the download step and the server), in its directory with ``cache_sub_path``."""
    mount = {"name": "model-cache", "mountPath": MODEL_CACHE_PATH}
    return storage_objects.sub_path_mount(mount, spec.cache_sub_path if spec.cache_access_mode == "ReadWriteMany"
                                          else None)


def _server_mounts(spec: LlmSpec) -> list[dict[str, Any]]:
    mounts = [{"name": "tmp", "mountPath": TMP_PATH}, {"name": "dshm", "mountPath": "/dev/shm"}]
    if spec.downloads:
        mounts.append(_cache_mount(spec))
    else:
        mounts.append({"name": "model", "mountPath": MODEL_CLAIM_PATH, "readOnly": True})
    return mounts


def download_container(spec: LlmSpec) -> dict[str, Any]:
    """The init step that fills the cache from the Hub (``huggingface`` source only)."""
    mounts = [{"name": "tmp", "mountPath": TMP_PATH}, _cache_mount(spec)]
    if spec.hf_token_secret:
        mounts.append({"name": "hf-token", "mountPath": HF_TOKEN_DIR, "readOnly": True})
    return {
        "name": "download",
        "image": spec.image,
        "command": ["python3", "-c", CACHED_DOWNLOAD_SCRIPT if spec.skip_cached_model else DOWNLOAD_SCRIPT],
        "env": download_env(spec),
        "resources": DOWNLOAD_RESOURCES,
        "securityContext": pod_security.container_security_context(),
        "volumeMounts": mounts,
    }


def server_container(spec: LlmSpec) -> dict[str, Any]:
    return {
        "name": "vllm",
        "image": spec.image,
        "args": server_args(spec),
        "ports": [{"name": PORT_NAME, "containerPort": HTTP_PORT, "protocol": "TCP"}],
        "env": server_env(spec),
        "resources": server_resources(spec),
        "startupProbe": _probe("/health", STARTUP_PROBE_PERIOD_S, 5, STARTUP_PROBE_FAILURES),
        "readinessProbe": _probe("/health", 5, 3, 3),
        "livenessProbe": _probe("/health", 10, 5, 6),
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", str(PRE_STOP_SLEEP_S)]}}},
        "securityContext": pod_security.container_security_context(),
        "volumeMounts": _server_mounts(spec),
    }


# ---------------------------------------------------------------------------------------------------------
# Objects: the namespace and the model server


def namespace(spec: LlmSpec) -> dict[str, Any]:
    """The namespace; with a route, labelled so that the Gateway's listeners admit it."""
    extra = gateway_objects.route_namespace_labels() if spec.route else None
    return {"apiVersion": "v1", "kind": "Namespace",
            **namespace_security.namespace_body(spec.namespace, SECURITY, extra)}


def service_account(spec: LlmSpec) -> dict[str, Any]:
    # vLLM never calls the Kubernetes API: no token is mounted.
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": metadata(spec.name, spec.namespace, server_labels(spec)), "automountServiceAccountToken": False}


def model_cache_claim(spec: LlmSpec) -> Optional[dict[str, Any]]:
    """The cache the replicas share (``ReadWriteMany``); None when each replica has its own or weights are on a
    claim already."""
    if not spec.downloads or spec.cache_access_mode != "ReadWriteMany":
        return None
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": metadata(model_cache_name(spec), spec.namespace, server_labels(spec)),
            "spec": _cache_claim_spec(spec)}


def gpu_claim_template(spec: LlmSpec) -> Optional[dict[str, Any]]:
    """A replica's GPUs on a DRA pool (each pod gets its own claim); None on device-plugin pools."""
    if not spec.pool.dra:
        return None
    return dra_objects.gpu_claim_template(gpu_claim_template_name(spec), spec.namespace, spec.pool,
                                          gpus_per_replica(spec), server_labels(spec))


def deployment(spec: LlmSpec) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "serviceAccountName": spec.name,
        "automountServiceAccountToken": False,
        # A Service in the namespace would otherwise inject <NAME>_PORT=tcp://...; vLLM reads VLLM_PORT and fails to
        # start on such a value if a Service is ever named vllm.
        "enableServiceLinks": False,
        "priorityClassName": spec.priority_class,
        "nodeSelector": dict(spec.pool.selector),
        "tolerations": spec.pool.tolerations,
        "affinity": healthy_node_affinity(),  # off nodes that failed their last health check
        "topologySpreadConstraints": topology_spread(server_labels(spec)),
        "terminationGracePeriodSeconds": TERMINATION_GRACE_S,
        "securityContext": pod_security.pod_security_context(),
        "containers": [server_container(spec)],
        "volumes": _volumes(spec),
    }
    if spec.downloads:
        pod_spec["initContainers"] = [download_container(spec)]
    if spec.pool.dra:
        pod_spec["resourceClaims"] = dra_objects.pod_resource_claims(gpu_claim_template_name(spec))
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
        "spec": {
            "replicas": spec.replicas,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": server_labels(spec)},
            # One GPU replica at a time, the new one ready before an old one goes: capacity never dips, and a rollout
            # needs one replica's GPUs spare, not twice the service's.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {"metadata": {"labels": _pod_labels(server_labels(spec))}, "spec": pod_spec},
        },
    }


def service(spec: LlmSpec) -> dict[str, Any]:
    """The servers' ClusterIP Service: what Prometheus scrapes through and in-cluster clients may call directly
    (the gateway does not use it: it sends each request to the pod the picker chose)."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
        "spec": {"type": "ClusterIP", "selector": server_labels(spec),
                 "ports": [{"name": PORT_NAME, "port": HTTP_PORT, "targetPort": PORT_NAME, "protocol": "TCP"}]},
    }


def pod_disruption_budget(spec: LlmSpec) -> dict[str, Any]:
    # maxUnavailable, not minAvailable: with one replica minAvailable: 1 would block every node drain forever.
    # AlwaysAllow: a replica that is not Ready (crash-looping, a model that will not load) serves nothing, so
    # evicting it costs nothing; with the default (IfHealthyBudget) it would count against the budget and could
    # hold a driver upgrade or node drain while the healthy ones are already at the limit.
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
            "spec": {"maxUnavailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow",
                     "selector": {"matchLabels": server_labels(spec)}}}


def network_policy(spec: LlmSpec) -> dict[str, Any]:
    """The servers admit the endpoint picker (it scrapes their metrics), the gateway's data plane (it forwards each
    request to the pod the picker chose) and Prometheus, on the model port only."""
    peers: list[dict[str, Any]] = [{"podSelector": {"matchLabels": picker_labels(spec)}}, *spec.gateway_peers]
    if spec.monitoring_namespace:
        peers.append(monitoring_policies.prometheus_peer(spec.monitoring_namespace))
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
        "spec": {"podSelector": {"matchLabels": server_labels(spec)}, "policyTypes": ["Ingress"],
                 "ingress": [{"from": peers, "ports": [{"protocol": "TCP", "port": HTTP_PORT}]}]},
    }


# ---------------------------------------------------------------------------------------------------------
# Objects: the endpoint picker


def picker_service_account(spec: LlmSpec) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": metadata(spec.picker_name, spec.namespace, picker_labels(spec))}


def picker_role(spec: LlmSpec) -> dict[str, Any]:
    """What the EPP watches (the chart's ``-sa`` and ``-non-sa`` Roles in one): the pool's pods, the pool, and the
    optional alpha objectives and model rewrites (it checks whether their CRDs exist and runs without them)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": metadata(spec.picker_name, spec.namespace, picker_labels(spec)),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]},
            {"apiGroups": [INFERENCE_POOL_GROUP], "resources": ["inferencepools"], "verbs": ["get", "watch", "list"]},
            {"apiGroups": [RETIRED_POOL_GROUP], "resources": ["inferenceobjectives", "inferencemodelrewrites"],
             "verbs": ["get", "watch", "list"]},
        ],
    }


def picker_role_binding(spec: LlmSpec) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": metadata(spec.picker_name, spec.namespace, picker_labels(spec)),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": spec.picker_name},
        "subjects": [{"kind": "ServiceAccount", "name": spec.picker_name, "namespace": spec.namespace}],
    }


def picker_plugins() -> dict[str, Any]:
    """The EPP's ``EndpointPickerConfig``: the v1.5.0 chart's default for a vLLM pool over HTTP (epplib
    ``_config.yaml``): queue, KV-cache and prefix-cache scorers over metrics scraped from each pod's ``/metrics``."""
    return {
        "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {"type": "prefix-cache-scorer"},
            {"type": "metrics-data-source", "parameters": {"scheme": "http", "path": "/metrics",
                                                           "insecureSkipVerify": True}},
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [{"name": "default", "plugins": [
            {"pluginRef": "queue-scorer", "weight": 2},
            {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
            {"pluginRef": "prefix-cache-scorer", "weight": 3},
        ]}],
    }


def picker_config_map(spec: LlmSpec) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": metadata(spec.picker_name, spec.namespace, picker_labels(spec)),
            "data": {PICKER_CONFIG_FILE: yaml.safe_dump(picker_plugins(), sort_keys=False)}}


def picker_args(spec: LlmSpec) -> list[str]:
    """The chart's EPP arguments for one replica of an InferencePool-mode picker (epplib ``_deployment.yaml``): the
    pool by name, namespace and group (a picker watching another group sees no endpoints and fails every request)."""
    return ["--pool-name", spec.name, "--pool-namespace", spec.namespace, "--pool-group", INFERENCE_POOL_GROUP,
            "--zap-encoder", "json", "--config-file", f"{PICKER_CONFIG_PATH}/{PICKER_CONFIG_FILE}", "--v", "1",
            "--tracing=false"]


def picker_deployment(spec: LlmSpec) -> dict[str, Any]:
    tmp_volume, tmp_mount = pod_security.writable_dir("tmp", TMP_PATH, "64Mi")
    grpc_probe = {"grpc": {"port": PICKER_HEALTH_PORT, "service": "inference-extension"}}
    container = {
        "name": "epp",
        "image": spec.picker_image,
        "args": picker_args(spec),
        "ports": [{"name": "grpc", "containerPort": PICKER_EXT_PROC_PORT, "protocol": "TCP"},
                  {"name": "grpc-health", "containerPort": PICKER_HEALTH_PORT, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": PICKER_METRICS_PORT, "protocol": "TCP"}],
        "env": [{"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "HOME", "value": TMP_PATH}],
        "resources": PICKER_RESOURCES,
        "livenessProbe": {**grpc_probe, "initialDelaySeconds": 5, "periodSeconds": 10},
        "readinessProbe": {**grpc_probe, "periodSeconds": 2},
        "securityContext": pod_security.container_security_context(),
        "volumeMounts": [tmp_mount, {"name": "plugins-config", "mountPath": PICKER_CONFIG_PATH, "readOnly": True}],
    }
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": metadata(spec.picker_name, spec.namespace, picker_labels(spec)),
        "spec": {
            "replicas": PICKER_REPLICAS,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": picker_labels(spec)},
            # The chart's choice: one active picker (its prefix-cache scorer is stateful); the old one goes first.
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"labels": _pod_labels(picker_labels(spec))}, "spec": {
                "serviceAccountName": spec.picker_name,
                # It watches pods and InferencePools: the one pod of the service that calls the API.
                "automountServiceAccountToken": True,
                "priorityClassName": spec.priority_class,
                # The release publishes a linux/amd64 image only; no GPU toleration: it runs on the CPU nodes.
                "nodeSelector": {labels.ARCH_LABEL: "amd64"},
                "terminationGracePeriodSeconds": TERMINATION_GRACE_S,
                "securityContext": pod_security.pod_security_context(),
                "containers": [container],
                "volumes": [tmp_volume, {"name": "plugins-config", "configMap": {"name": spec.picker_name}}],
            }},
        },
    }


def picker_service(spec: LlmSpec) -> dict[str, Any]:
    """The ext-proc port the InferencePool's endpointPickerRef names (the metrics port stays unpublished: nothing
    scrapes the picker, whose ``/metrics`` also needs a token)."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": metadata(spec.picker_name, spec.namespace, picker_labels(spec)),
        "spec": {"type": "ClusterIP", "selector": picker_labels(spec),
                 "ports": [{"name": "grpc-ext-proc", "port": PICKER_EXT_PROC_PORT, "targetPort": "grpc",
                            "protocol": "TCP"}]},
    }


def picker_network_policy(spec: LlmSpec) -> dict[str, Any]:
    """The picker admits the gateway's data plane on its ext-proc port; nothing else (none without a gateway)."""
    ingress = [{"from": list(spec.gateway_peers), "ports": [{"protocol": "TCP", "port": PICKER_EXT_PROC_PORT}]}] \
        if spec.gateway_peers else []
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": metadata(spec.picker_name, spec.namespace, picker_labels(spec)),
        "spec": {"podSelector": {"matchLabels": picker_labels(spec)}, "policyTypes": ["Ingress"], "ingress": ingress},
    }


# ---------------------------------------------------------------------------------------------------------
# Objects: routing


def inference_pool(spec: LlmSpec) -> dict[str, Any]:
    return {
        "apiVersion": INFERENCE_POOL_API_VERSION, "kind": INFERENCE_POOL_KIND,
        "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
        "spec": {
            "selector": {"matchLabels": server_labels(spec)},
            "targetPorts": [{"number": HTTP_PORT}],
            "appProtocol": "http",
            "endpointPickerRef": {"name": spec.picker_name, "kind": "Service",
                                  "port": {"number": PICKER_EXT_PROC_PORT},
                                  # The chart's default: with the picker down the gateway still serves, unscored.
                                  "failureMode": "FailOpen"},
        },
    }


def pool_backend_ref(spec: LlmSpec) -> dict[str, Any]:
    """The HTTPRoute backend naming the pool: v1 group, kind and name; no port (the pool's targetPorts apply)."""
    return {"group": INFERENCE_POOL_GROUP, "kind": INFERENCE_POOL_KIND, "name": spec.name}


def backend_ref_problem(ref: dict[str, Any]) -> Optional[str]:
    """Why an HTTPRoute backendRef would not reach the InferencePool (the route would answer 500/503), or None.

    The v1 pool is ``inference.networking.k8s.io``/``InferencePool``; older guides write the v1alpha2 group
    ``inference.networking.x-k8s.io``, whose CRD the pinned release no longer ships, or a Service (bypassing the
    picker); a port would be refused by gateways for a pool, whose target ports already say it.
    """
    group, kind = ref.get("group", ""), ref.get("kind", "Service")
    if group == RETIRED_POOL_GROUP:
        return (f"group {RETIRED_POOL_GROUP} is the retired v1alpha2 InferencePool, which the pinned inference "
                f"extension no longer serves: the route would never resolve (503); use {INFERENCE_POOL_GROUP}")
    if (group, kind) != (INFERENCE_POOL_GROUP, INFERENCE_POOL_KIND):
        return (f"backend {group or 'core'}/{kind} is not the {INFERENCE_POOL_GROUP} {INFERENCE_POOL_KIND}: requests "
                "would bypass the endpoint picker")
    if "port" in ref:
        return "an InferencePool backend takes no port (the pool's targetPorts apply)"
    return None


def http_route(spec: LlmSpec) -> Optional[dict[str, Any]]:
    """``/v1`` (the OpenAI API) on the platform's Gateway to the InferencePool; None without a route."""
    route = spec.route
    if route is None:
        return None
    backend = pool_backend_ref(spec)
    problem = backend_ref_problem(backend)
    if problem is not None:  # a guard on this module's own constants: never reached unless they are edited
        raise ValueError(problem)
    parent = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": route.gateway_name,
              "namespace": route.gateway_namespace, "sectionName": route.section_name}
    rule: dict[str, Any] = {"matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}], "backendRefs": [backend]}
    if not spec.gke:
        # GKE's Gateway ignores HTTPRoute timeouts (the pool's GCPBackendPolicy carries the timeout instead).
        rule["timeouts"] = {"request": route.request_timeout}
    body: dict[str, Any] = {"parentRefs": [parent], "rules": [rule]}
    if route.hostname:
        body["hostnames"] = [route.hostname]
    return {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
        "spec": body,
    }


def _pool_target(spec: LlmSpec) -> dict[str, Any]:
    return {"group": INFERENCE_POOL_GROUP, "kind": INFERENCE_POOL_KIND, "name": spec.name}


def gke_health_check_policy(spec: LlmSpec) -> Optional[dict[str, Any]]:
    """GKE's load balancer health check of the pool's pods: vLLM's ``/health`` on the model port, every 2 s (the
    chart's ``provider.name: gke`` values); None off GKE."""
    if not spec.gke:
        return None
    return {
        "apiVersion": "networking.gke.io/v1", "kind": "HealthCheckPolicy",
        "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
        "spec": {"targetRef": _pool_target(spec), "default": {
            "timeoutSec": 2, "checkIntervalSec": 2,
            "config": {"type": "HTTP", "httpHealthCheck": {"requestPath": "/health", "port": HTTP_PORT}}}},
    }


def gke_backend_policy(spec: LlmSpec) -> Optional[dict[str, Any]]:
    """GKE's backend timeout for the pool (its default, 30 s, cuts long answers); None off GKE."""
    if not spec.gke or spec.route is None:
        return None
    return {
        "apiVersion": "networking.gke.io/v1", "kind": "GCPBackendPolicy",
        "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
        "spec": {"targetRef": _pool_target(spec), "default": {"timeoutSec": seconds(spec.route.request_timeout)}},
    }


# ---------------------------------------------------------------------------------------------------------
# Objects: autoscaling and monitoring


def _series(spec: LlmSpec, metric: str) -> str:
    return f'{metric}{{namespace="{spec.namespace}", model_name="{spec.api_model_name}"}}'


def waiting_requests_query(spec: LlmSpec) -> str:
    """Requests waiting in all replicas, averaged over a minute (KEDA divides by the replicas: AverageValue)."""
    return f"sum(avg_over_time({_series(spec, metric_names.VLLM_REQUESTS_WAITING)}[1m]))"


def kv_cache_usage_query(spec: LlmSpec) -> str:
    """The replicas' average KV-cache usage over a minute (a utilisation: compared as a Value, not per replica)."""
    return f"avg(avg_over_time({_series(spec, metric_names.VLLM_KV_CACHE_USAGE)}[1m]))"


def scaling_behavior() -> dict[str, Any]:
    """One replica at a time each way: a new one takes minutes to load its weights (scaling up faster only stacks
    replicas the queue no longer needs once they are up), and one replica down every five minutes at most."""
    return {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}]},
        "scaleDown": {"stabilizationWindowSeconds": 600, "selectPolicy": "Min",
                      "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]},
    }


def scaled_object(spec: LlmSpec) -> Optional[dict[str, Any]]:
    """KEDA ScaledObject on vLLM's waiting requests and KV-cache usage (the larger wins); None without KEDA."""
    if not spec.uses_keda:
        return None
    # Missing series are an error, not 0: a Prometheus that lost the servers must trip the fallback, not scale down.
    prometheus = {"serverAddress": spec.prometheus_url or "", "ignoreNullValues": "false"}
    return {
        "apiVersion": KEDA_API_VERSION, "kind": "ScaledObject",
        "metadata": metadata(spec.name, spec.namespace, server_labels(spec)),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.name},
            "minReplicaCount": spec.replicas,
            "maxReplicaCount": spec.max_replicas,
            "pollingInterval": 15,
            "fallback": {"failureThreshold": 3, "replicas": spec.replicas, "behavior": "currentReplicasIfHigher"},
            "advanced": {"horizontalPodAutoscalerConfig": {"name": spec.name, "behavior": scaling_behavior()}},
            "triggers": [
                {"type": "prometheus", "name": "waiting-requests", "metadata": {
                    **prometheus, "query": waiting_requests_query(spec),
                    "threshold": str(spec.target_waiting_requests)}},
                {"type": "prometheus", "name": "kv-cache-usage", "metricType": "Value", "metadata": {
                    **prometheus, "query": kv_cache_usage_query(spec),
                    "threshold": f"{spec.target_kv_cache_usage:g}"}},
            ],
        },
    }


def service_monitor(spec: LlmSpec) -> dict[str, Any]:
    return {
        "apiVersion": PROMETHEUS_OPERATOR_API_VERSION, "kind": "ServiceMonitor",
        "metadata": metadata(spec.name, spec.namespace, {**server_labels(spec), **spec.service_monitor_labels}),
        "spec": {
            "selector": {"matchLabels": server_labels(spec)},
            "namespaceSelector": {"matchNames": [spec.namespace]},
            "endpoints": [{"port": PORT_NAME, "path": "/metrics", "interval": "15s", "scrapeTimeout": "10s"}],
        },
    }
