"""The reference inference service's Kubernetes objects as plain bodies (wire form), decided from an `InferenceSpec`.

Every decision lives here so it is tested without the engine; `workloads.InferenceService` only registers them.
Why each choice:

- GPU: ``nvidia.com/gpu: 1`` in limits (requests equal; integers only). On ``exclusive`` pools that is a whole
  GPU; on ``time-slicing``/``mps``/``hami`` pools the device plugin advertises each GPU ``replicas`` times, so one
  unit is a shared slice (time-slicing: no memory or fault isolation; MPS: memory limit per client; HAMi: the
  pod also asks ``nvidia.com/gpumem`` and carries the sharing label HAMi's webhook selects); on ``mig`` pools
  (NVIDIA's ``single`` strategy) one unit is one MIG instance of the pool's profile. On DRA pools (no device plugin,
  no ``nvidia.com/gpu`` on the nodes) the pod claims one device from the ResourceClaimTemplate `gpu_claim_template`
  (a whole GPU, or a MIG instance of the pool's profile) instead.
- CPU and memory requests follow the node's share per GPU slot (half of it, bounded), memory limit = request, no
  CPU limit (CFS throttling shows up as tail latency).
- Placement: nodeSelector = the pool's selector, the pool's tolerations, spread across nodes then zones
  (``ScheduleAnyway``: a spread constraint must never leave a GPU replica pending), priority class
  ``inference-critical`` (the platform's highest tier, preempts batch work).
- Probes: liveness on ``/healthz`` (the process, its batcher and model workers), readiness on ``/readyz`` (model
  loaded and warmed, not draining, no worker dead: the app fails it at once and exits 3 when a worker dies); the
  app answers /healthz while it loads, so no startup probe is needed.
- Latency: ``DEADLINE_MS`` bounds every request (503 with Retry-After at once when the backlog would not let it
  finish in time), so the queue is bounded in time, and ``MAX_WAIT_MS`` 0 starts a lone request's forward pass
  at once; the KEDA trigger still reads the queue depth, which rises with the load.
- Shutdown: ``SHUTDOWN_DELAY_S`` keeps serving while endpoints drop the pod, then in-flight requests drain; the
  grace period covers both.
- Security: `pod_security`'s contexts (UID/GID 10001, the image's user), read-only root filesystem (``/tmp`` and
  the model cache are the only writable paths), no privilege escalation, all capabilities dropped, RuntimeDefault
  seccomp, no service-account token: the namespace enforces ``restricted``.
- Autoscaling (KEDA ``ScaledObject``): the app's own ``inference_queue_depth`` through Prometheus, with CPU
  utilisation as a second trigger (KEDA scales to the larger of the two) and a fallback replica count when
  Prometheus cannot be read; without KEDA or Prometheus a plain ``autoscaling/v2`` HPA on CPU.
- Network: only the gateway's data plane (Envoy Gateway's Envoy pods, or GKE's proxy-only subnet and health-check
  ranges), Prometheus and same-namespace clients reach the pods; the HTTPRoute publishes ``/analyze`` only
  (``/metrics`` stays inside the cluster), with the route's timeout and the gateway's body and rate limits
  (`gateway_objects.route_policies`). On GKE the load balancer health-checks ``/readyz``.
"""

from dataclasses import dataclass, field
from typing import Any, Optional

from .. import catalog, labels
from ..accelerators import dra_objects
from ..health.health_placement import healthy_node_affinity
from ..kubernetes_base.common import claim_spec, metadata
from ..monitoring import monitoring_policies
from ..pools import GpuPool
from ..scheduling.priorities import INFERENCE_CRITICAL
from ..security import namespace_security, pod_security
from ..storage import storage_objects
from ..versions import INFERENCE_IMAGE, KEDA_API_VERSION, PROMETHEUS_OPERATOR_API_VERSION
from . import gateway_objects
from .gateway_objects import RouteTarget

HAMI_MEMORY_RESOURCE = "nvidia.com/gpumem"
"""HAMi's per-pod GPU memory share, MiB."""
DEVICES = {catalog.NVIDIA: "cuda", catalog.AMD: "cuda", catalog.AWS_NEURON: "neuron"}
"""The app's ``DEVICE`` per accelerator vendor: PyTorch presents AMD GPUs (ROCm/HIP) as ``cuda`` devices; Neuron
devices take the app's compiled path (examples/inference-app/sentiment/neuron.py)."""
APP_NAME = "sentiment"
HTTP_PORT = 8080
SERVICE_PORT = 80
PORT_NAME = "http"
IMAGE_MODEL_PATH = "/models/sentiment"
"""Where the app's Dockerfile bakes the model into the image."""
MODEL_CACHE_PATH = "/model-cache"
TMP_PATH = pod_security.TMP_PATH
TMP_SIZE = "2Gi"
"""``/tmp``: HOME and, without a model cache claim, the Hugging Face cache (a downloaded model of a few hundred MB)."""
SHUTDOWN_DELAY_S = 5
DRAIN_TIMEOUT_S = 20
PUBLISHED_PATHS = ("/analyze",)
"""What the HTTPRoute publishes: the API, not ``/metrics``, ``/healthz`` or ``/readyz``."""
READINESS_PATH = "/readyz"
AUTOSCALERS = ("keda", "hpa", "none")
MODEL_CACHE_ACCESS_MODES = ("ReadWriteMany", "ReadWriteOnce", "ReadOnlyMany")


@dataclass(frozen=True)
class InferenceSpec:
    """Everything the objects are decided from (plain values; defaults are the platform's choices)."""

    pool: GpuPool
    namespace: str = "inference"
    name: str = APP_NAME
    image: str = INFERENCE_IMAGE.reference
    model_id: str = ""
    """A Hugging Face model id to download at start (needs egress and, ideally, a model cache); empty: the model
    baked into the image at `IMAGE_MODEL_PATH`."""
    min_replicas: int = 1
    max_replicas: int = 4
    max_batch_size: int = 32
    max_wait_ms: float = 0.0
    max_queue: int = 1024
    deadline_ms: float = 1000.0
    autoscaler: str = "keda"
    """``keda`` (queue depth + CPU), ``hpa`` (CPU only) or ``none`` (fixed ``min_replicas``)."""
    prometheus_url: Optional[str] = None
    """Prometheus the KEDA trigger queries; without it ``keda`` falls back to a CPU HPA."""
    target_queue_depth: int = 0
    """Texts waiting per replica above which KEDA adds replicas (0: one full batch, ``max_batch_size``)."""
    cpu_utilization: int = 70
    cpu_request: str = ""
    """CPU request (empty: derived from the pool's node shape)."""
    memory_request: str = ""
    """Memory request and limit (empty: derived from the pool's node shape)."""
    priority_class: str = INFERENCE_CRITICAL.name
    route: Optional[RouteTarget] = None
    """The HTTPRoute on the stack's Gateway (None: no route, the app is reachable inside the cluster only); its
    data-plane peers are admitted by the NetworkPolicy."""
    model_cache_size: Optional[str] = None
    """Size of a PersistentVolumeClaim mounted at `MODEL_CACHE_PATH` as the Hugging Face cache (None: no claim)."""
    model_cache_storage_class: Optional[str] = None
    model_cache_access_mode: str = "ReadWriteMany"
    model_cache_volume: Optional[str] = None
    """The PersistentVolume the cache claim binds to (a static volume of the shared file system); None: provisioned."""
    model_cache_sub_path: Optional[str] = None
    """The directory of the cache's volume mounted (``subPath``), where the file system's driver mounts only its root
    (GKE Managed Lustre); None: the whole volume."""
    monitoring_namespace: Optional[str] = None
    """Namespace of Prometheus (admitted by the NetworkPolicy); None: no ServiceMonitor either."""
    service_monitor_labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.autoscaler not in AUTOSCALERS:
            raise ValueError(f"autoscaler must be one of {AUTOSCALERS}, got {self.autoscaler!r}")
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ValueError(f"need 1 <= min_replicas ({self.min_replicas}) <= max_replicas ({self.max_replicas})")
        if self.model_cache_access_mode not in MODEL_CACHE_ACCESS_MODES:
            raise ValueError(f"model_cache_access_mode must be one of {MODEL_CACHE_ACCESS_MODES}")

    @property
    def uses_keda(self) -> bool:
        return self.autoscaler == "keda" and bool(self.prometheus_url)

    @property
    def queue_target(self) -> int:
        return self.target_queue_depth or self.max_batch_size


# ---------------------------------------------------------------------------------------------------------
# Shared pieces


def selector_labels(spec: InferenceSpec) -> dict[str, str]:
    return {labels.APP_NAME_LABEL: spec.name}


def pod_labels(spec: InferenceSpec) -> dict[str, str]:
    extra = {labels.SHARING_LABEL: spec.pool.sharing.mode} if spec.pool.sharing.mode == "hami" else {}
    return {**selector_labels(spec), labels.MANAGED_BY_LABEL: labels.MANAGED_BY_VALUE, **extra}


def gpu_slots_per_node(pool: GpuPool) -> int:
    """Pods of one GPU each a node of the pool holds (MIG instances or shared slices count as one each)."""
    slots = pool.schedulable_gpus_per_node
    if pool.sharing.mode == "mig" and pool.sharing.mig_profile:
        slots *= catalog.mig_instances_per_gpu(catalog.GPU_MODELS[pool.gpu_model], pool.sharing.mig_profile)
    return max(1, slots)


def gpu_share(pool: GpuPool) -> str:
    """What ``nvidia.com/gpu: 1`` buys on this pool, in words (the component reports it)."""
    mode = pool.sharing.mode
    if mode == "exclusive":
        return f"one whole {pool.gpu_model} GPU"
    if mode == "mig":
        return f"one {pool.sharing.mig_profile} MIG instance of a {pool.gpu_model}"
    return (f"a shared slice: 1/{pool.sharing.replicas} of a {pool.gpu_model} GPU ({mode}"
            f"{', no memory isolation' if mode == 'time-slicing' else ''})")


def _bounded(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def default_requests(pool: GpuPool) -> tuple[str, str]:
    """(cpu, memory): half the node's CPU and memory per GPU slot, within [1, 4] CPUs and [4, 16] GiB.

    Half, so the node's DaemonSets (device plugin, DCGM exporter, CNI, logging) always fit beside a full node of
    replicas; the bounds keep a tokenizer-and-HTTP process fed on huge nodes and schedulable on small ones.
    """
    slots = gpu_slots_per_node(pool)
    cpus = _bounded(pool.vcpus_per_node / slots / 2, 1, 4) if pool.vcpus_per_node else 1
    memory = _bounded(pool.memory_gib_per_node / slots / 2, 4, 16) if pool.memory_gib_per_node else 4
    return f"{int(cpus * 1000)}m", f"{int(memory)}Gi"


def resources(spec: InferenceSpec) -> dict[str, Any]:
    cpu, memory = default_requests(spec.pool)
    cpu, memory = spec.cpu_request or cpu, spec.memory_request or memory
    # A DRA pool's nodes advertise no GPU extended resource: the GPU comes from the pod's claim.
    gpu: dict[str, Any] = {} if spec.pool.dra else {spec.pool.resource: 1}
    if spec.pool.sharing.mode == "hami":
        gpu[HAMI_MEMORY_RESOURCE] = spec.pool.gpu_memory_gib * 1024 // max(1, spec.pool.sharing.replicas)
    amounts: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory, **gpu}, "limits": {"memory": memory, **gpu}}
    if spec.pool.dra:
        amounts["claims"] = dra_objects.container_claims()
    return amounts


def env(spec: InferenceSpec) -> list[dict[str, str]]:
    """The app's settings (examples/inference-app/sentiment/settings.py) for a GPU pod."""
    if spec.model_id:
        # The image sets MODEL_PATH (which wins over MODEL_ID) and HF_HUB_OFFLINE for its baked model: unset both.
        model = [{"name": "MODEL_ID", "value": spec.model_id}, {"name": "MODEL_PATH", "value": ""},
                 {"name": "HF_HUB_OFFLINE", "value": "0"}]
    else:
        # The baked model only: never reach out to the Hub from a pod that has everything it needs.
        model = [{"name": "MODEL_PATH", "value": IMAGE_MODEL_PATH}, {"name": "HF_HUB_OFFLINE", "value": "1"}]
    cache = MODEL_CACHE_PATH if spec.model_cache_size else f"{TMP_PATH}/hf"
    values = {
        # cuda (or neuron), not auto: a GPU pod that silently served from CPU would look healthy and be 20x slower.
        # A user's own image on another vendor's pool (a TPU) picks its device itself.
        "DEVICE": DEVICES.get(spec.pool.vendor, "auto"),
        "PORT": str(HTTP_PORT),
        "MAX_BATCH_SIZE": str(spec.max_batch_size),
        "MAX_WAIT_MS": f"{spec.max_wait_ms:g}",
        "MAX_QUEUE": str(spec.max_queue),
        "DEADLINE_MS": f"{spec.deadline_ms:g}",
        "SHUTDOWN_DELAY_S": str(SHUTDOWN_DELAY_S),
        "DRAIN_TIMEOUT_S": str(DRAIN_TIMEOUT_S),
        # Read-only root filesystem: HOME (torch's and other libraries' caches) and the Hugging Face cache go to
        # writable volumes even when the image (a user's own, through `image`) sets neither.
        "HOME": TMP_PATH,
        "HF_HOME": cache,
    }
    return model + [{"name": k, "value": v} for k, v in values.items()]


def probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": PORT_NAME}, "periodSeconds": period, "timeoutSeconds": 2,
            "failureThreshold": failures}


def topology_spread(spec: InferenceSpec) -> list[dict[str, Any]]:
    return [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": selector_labels(spec)}}
        for key in (labels.HOSTNAME_LABEL, labels.ZONE_LABEL)
    ]


# ---------------------------------------------------------------------------------------------------------
# Objects


def namespace(spec: InferenceSpec) -> dict[str, Any]:
    """The namespace, labelled so its route may attach to the Gateway when there is one."""
    body = namespace_security.namespace_body(spec.namespace, namespace_security.namespace_pod_security("inference"),
                                             gateway_objects.route_namespace_labels() if spec.route else None)
    return {"apiVersion": "v1", "kind": "Namespace", **body}


def service_account(spec: InferenceSpec) -> dict[str, Any]:
    # The app never calls the Kubernetes API: no token is mounted.
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": metadata(spec.name, spec.namespace, selector_labels(spec)),
            "automountServiceAccountToken": False}


def deployment(spec: InferenceSpec) -> dict[str, Any]:
    tmp_volume, tmp_mount = pod_security.writable_dir("tmp", TMP_PATH, TMP_SIZE)
    volumes: list[dict[str, Any]] = [tmp_volume]
    mounts: list[dict[str, Any]] = [tmp_mount]
    if spec.model_cache_size:
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": model_cache_name(spec)}})
        mounts.append(storage_objects.sub_path_mount({"name": "model-cache", "mountPath": MODEL_CACHE_PATH},
                                                     spec.model_cache_sub_path))
    container = {
        "name": "server",
        "image": spec.image,
        "ports": [{"name": PORT_NAME, "containerPort": HTTP_PORT, "protocol": "TCP"}],
        "env": env(spec),
        "resources": resources(spec),
        "readinessProbe": probe(READINESS_PATH, 5, 3),
        "livenessProbe": probe("/healthz", 10, 6),
        "securityContext": pod_security.container_security_context(),
        "volumeMounts": mounts,
    }
    pod_spec: dict[str, Any] = {
        "serviceAccountName": spec.name,
        "automountServiceAccountToken": False,
        "priorityClassName": spec.priority_class,
        "nodeSelector": dict(spec.pool.selector),
        "tolerations": spec.pool.tolerations,
        "affinity": healthy_node_affinity(),  # off nodes that failed their last health check
        "topologySpreadConstraints": topology_spread(spec),
        # Endpoints removal delay + drain + margin: SIGKILL must never cut a request the app is finishing.
        "terminationGracePeriodSeconds": SHUTDOWN_DELAY_S + DRAIN_TIMEOUT_S + 5,
        "securityContext": pod_security.pod_security_context(),
        "containers": [container],
        "volumes": volumes,
    }
    if spec.pool.dra:
        pod_spec["resourceClaims"] = dra_objects.pod_resource_claims(gpu_claim_template_name(spec))
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": metadata(spec.name, spec.namespace, selector_labels(spec)),
        "spec": {
            "replicas": spec.min_replicas,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": selector_labels(spec)},
            # A new replica must be ready before an old one goes: capacity never dips during a rollout.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {"metadata": {"labels": pod_labels(spec)}, "spec": pod_spec},
        },
    }


def gpu_claim_template_name(spec: InferenceSpec) -> str:
    return f"{spec.name}-gpu"


def gpu_claim_template(spec: InferenceSpec) -> Optional[dict[str, Any]]:
    """One GPU (or MIG instance) per replica on a DRA pool: each pod gets its own claim. None on other pools."""
    if not spec.pool.dra:
        return None
    return dra_objects.gpu_claim_template(gpu_claim_template_name(spec), spec.namespace, spec.pool, 1,
                                          selector_labels(spec))


def service(spec: InferenceSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": metadata(spec.name, spec.namespace, selector_labels(spec)),
        "spec": {"type": "ClusterIP", "selector": selector_labels(spec),
                 "ports": [{"name": PORT_NAME, "port": SERVICE_PORT, "targetPort": PORT_NAME, "protocol": "TCP"}]},
    }


def pod_disruption_budget(spec: InferenceSpec) -> dict[str, Any]:
    # maxUnavailable, not minAvailable: with one replica minAvailable: 1 would block every node drain forever.
    # AlwaysAllow: a replica that is not Ready (crash-looping, a model that will not load) serves nothing, so
    # evicting it costs nothing; with the default (IfHealthyBudget) it would count against the budget and could
    # hold a driver upgrade or node drain while the healthy ones are already at the limit.
    return {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": metadata(spec.name, spec.namespace, selector_labels(spec)),
        "spec": {"maxUnavailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow",
                     "selector": {"matchLabels": selector_labels(spec)}},
    }


def queue_depth_query(spec: InferenceSpec) -> str:
    """Texts waiting in all replicas, averaged over a minute (one scrape is a noisy sample of a fast gauge)."""
    return (f'sum(avg_over_time(inference_queue_depth{{namespace="{spec.namespace}",'
            f'service="{spec.name}"}}[1m]))')


def scaling_behavior() -> dict[str, Any]:
    """Up fast (GPU nodes take minutes to arrive anyway), down slowly (a replica costs a model load)."""
    return {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60},
                                 {"type": "Percent", "value": 100, "periodSeconds": 60}]},
        "scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Min",
                      "policies": [{"type": "Pods", "value": 1, "periodSeconds": 120}]},
    }


def scaled_object(spec: InferenceSpec) -> dict[str, Any]:
    """KEDA ScaledObject: queue depth (Prometheus, AverageValue per replica) and CPU, fallback when blind."""
    return {
        "apiVersion": KEDA_API_VERSION, "kind": "ScaledObject",
        "metadata": metadata(spec.name, spec.namespace, selector_labels(spec)),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.name},
            "minReplicaCount": spec.min_replicas,
            "maxReplicaCount": spec.max_replicas,
            "pollingInterval": 15,
            # Prometheus unreachable 3 polls in a row: never shrink below what runs now.
            "fallback": {"failureThreshold": 3, "replicas": spec.min_replicas,
                         "behavior": "currentReplicasIfHigher"},
            "advanced": {"horizontalPodAutoscalerConfig": {"name": spec.name, "behavior": scaling_behavior()}},
            "triggers": [
                {"type": "prometheus", "name": "queue-depth", "metadata": {
                    "serverAddress": spec.prometheus_url or "",
                    "query": queue_depth_query(spec),
                    "threshold": str(spec.queue_target),
                }},
                {"type": "cpu", "name": "cpu", "metricType": "Utilization",
                 "metadata": {"value": str(spec.cpu_utilization)}},
            ],
        },
    }


def horizontal_pod_autoscaler(spec: InferenceSpec) -> dict[str, Any]:
    """CPU-only HPA: the fallback when KEDA or Prometheus is not there."""
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": metadata(spec.name, spec.namespace, selector_labels(spec)),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.name},
            "minReplicas": spec.min_replicas,
            "maxReplicas": spec.max_replicas,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": spec.cpu_utilization}}}],
            "behavior": scaling_behavior(),
        },
    }


def service_monitor(spec: InferenceSpec) -> dict[str, Any]:
    return {
        "apiVersion": PROMETHEUS_OPERATOR_API_VERSION, "kind": "ServiceMonitor",
        "metadata": metadata(spec.name, spec.namespace, {**selector_labels(spec), **spec.service_monitor_labels}),
        "spec": {
            "selector": {"matchLabels": selector_labels(spec)},
            "namespaceSelector": {"matchNames": [spec.namespace]},
            "endpoints": [{"port": PORT_NAME, "path": "/metrics", "interval": "15s", "scrapeTimeout": "5s"}],
        },
    }


def network_policy(spec: InferenceSpec) -> dict[str, Any]:
    """Ingress to the pods from the same namespace, the gateway's data plane (with a route) and Prometheus only."""
    peers: list[dict[str, Any]] = [{"podSelector": {}}]
    if spec.route is not None:
        peers += [dict(peer) for peer in spec.route.data_plane_peers]
    if spec.monitoring_namespace:
        # Prometheus' pods only: Grafana and Alertmanager share its namespace and have no business here.
        peers.append(monitoring_policies.prometheus_peer(spec.monitoring_namespace))
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": metadata(spec.name, spec.namespace, selector_labels(spec)),
        "spec": {
            "podSelector": {"matchLabels": selector_labels(spec)},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": peers, "ports": [{"protocol": "TCP", "port": HTTP_PORT}]}],
        },
    }


def http_route(spec: InferenceSpec) -> Optional[dict[str, Any]]:
    """The HTTPRoute publishing `PUBLISHED_PATHS` on the Gateway (None without a route)."""
    if spec.route is None:
        return None
    return gateway_objects.http_route(spec.route, spec.name, spec.namespace, PUBLISHED_PATHS, spec.name,
                                      SERVICE_PORT, selector_labels(spec))


def route_policies(spec: InferenceSpec) -> list[dict[str, Any]]:
    """The gateway's limits for the route and, on GKE, the load balancer's health check of ``/readyz``."""
    if spec.route is None:
        return []
    return gateway_objects.route_policies(spec.route, spec.name, spec.namespace, spec.name, READINESS_PATH,
                                          HTTP_PORT, selector_labels(spec))


def model_cache_name(spec: InferenceSpec) -> str:
    return f"{spec.name}-model-cache"


def model_cache_claim(spec: InferenceSpec) -> dict[str, Any]:
    claim = claim_spec(spec.model_cache_access_mode, spec.model_cache_size, spec.model_cache_storage_class,
                       spec.model_cache_volume)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": metadata(model_cache_name(spec), spec.namespace, selector_labels(spec)), "spec": claim}
