"""`LlmService`: an OpenAI-compatible LLM (vLLM) on a GPU pool, behind an InferencePool and its endpoint picker,
published on the platform's Gateway, autoscaled by KEDA on vLLM's own metrics.

What it deploys (bodies decided in `llm_objects`, whose docstring gives the reasons): the InferencePool CRD (the
Gateway API Inference Extension release's ``v1-manifests.yaml``, unless ``install_crds`` is false: the platform's
gateway applies it, GKE 1.34+ installs it itself), a Namespace (Pod
Security ``restricted``), the vLLM Deployment (a download init step or a claim with the weights), its Service,
PodDisruptionBudget and NetworkPolicy, the endpoint picker (Deployment, Service, ServiceAccount, Role, plugins
ConfigMap, NetworkPolicy), the InferencePool, an HTTPRoute from the Gateway to it (GKE: its health-check and backend
policies), a KEDA ScaledObject and a ServiceMonitor.

Ordering: make the component depend on KEDA's release (ScaledObject CRD), the monitoring release (ServiceMonitor
CRD), the ``inference-critical`` PriorityClass, the DRA driver on DRA pools and the gateway's readiness (the Gateway
API CRDs); `build_llm_layer` does.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import fields, versions
from ..component_args import (
    DNS_LABEL,
    NON_EMPTY,
    STORAGE_QUANTITY,
    Args,
    KeywordArgs,
    at_least,
    between,
    choice,
    matching,
    snake_case,
)
from ..config_model import PlatformConfig
from ..errors import ConfigError
from ..kubernetes_base.common import DNS_SUBDOMAIN, HTTP_URL, child_opts, refuse_unless, register_body
from ..kubernetes_base.custom_object import KubernetesObject
from ..pools import GpuPool, GpuPoolSpec
from ..storage import storage_objects
from . import llm_config, llm_models
from . import llm_objects as objects
from .gateway import check_route, route_rules
from .gateway_objects import GatewayRouteArgs, RouteTarget


class LlmServiceArgs(TypedDict, total=False):
    """Arguments of `LlmService`. ``pool`` and ``model`` are required."""

    pool: Required[GpuPoolSpec]
    """GPU pool the model server runs on: NVIDIA GPUs, exclusive or MIG."""
    model: Required[str]
    """Hugging Face model id (``meta-llama/Llama-3.1-8B-Instruct``)."""
    served_model_name: str
    """Name clients request and metrics carry. Default: ``model``."""
    name: str
    """Name of the Deployment, InferencePool, route and every other object (the picker's get ``-epp``). Default
    ``llm``."""
    namespace: str
    """Namespace of the service. Default ``llm``."""
    create_namespace: bool
    """Create the namespace (Pod Security ``restricted``). Default true."""
    install_crds: bool
    """Install the InferencePool CRD (Gateway API Inference Extension v1.5.0 ``v1-manifests.yaml``). Default true;
    false where something else does: the platform's gateway (Envoy Gateway applies it before its controller starts,
    GKE 1.34 and later installs it itself)."""
    image: str
    """vLLM image. Default: the pinned ``vllm/vllm-openai`` (`versions.VLLM_IMAGE`)."""
    replicas: int
    """Model server replicas (the autoscaler's minimum). Default 1."""
    max_replicas: int
    """Most replicas KEDA may reach. Default: 4, or what the pool holds, never below ``replicas``."""
    tensor_parallel_size: int
    """GPUs per replica (``--tensor-parallel-size``), dividing the pool's GPUs per node. Default: all of a node's
    (1 on MIG pools)."""
    max_model_len: Optional[int]
    """``--max-model-len``. Default: the model's own."""
    dtype: str
    """``--dtype`` (`llm_models.DTYPES`). Default ``auto``."""
    quantization: Optional[str]
    """``--quantization`` (`llm_models.QUANTIZATIONS`). Default: none."""
    gpu_memory_utilization: float
    """``--gpu-memory-utilization``, 0.1 to 1. Default 0.9."""
    model_source: str
    """``huggingface`` (download into the cache, then serve offline) or ``pvc`` (``model_claim``). Default
    ``huggingface``."""
    model_claim: Optional[str]
    """PersistentVolumeClaim holding the weights (``model_source: pvc``)."""
    model_path: str
    """Directory of the weights in ``model_claim``. Default: its root."""
    cache_size: str
    """Size of the cache volume (``huggingface``). Default: from the model's size when known, else 100Gi."""
    cache_storage_class: Optional[str]
    """StorageClass of the cache. Default: the cluster's default class."""
    cache_access_mode: str
    """``ReadWriteOnce`` (a volume per replica) or ``ReadWriteMany`` (one shared claim). Default ``ReadWriteOnce``."""
    cache_volume: Optional[str]
    """A PersistentVolume the shared cache claim binds to (``ReadWriteMany``; the storage layer's static volume on
    the shared file system, pre-bound to the claim). Default: none (``cache_storage_class`` provisions one)."""
    cache_sub_path: str
    """The directory of the shared cache's volume mounted (``subPath``; ``ReadWriteMany``): ``models``, where the
    file system's driver mounts only its root (GKE Managed Lustre). Default: the whole volume."""
    skip_cached_model: bool
    """The download step skips a model a previous replica completed in the shared cache (``ReadWriteMany``), so a
    new replica starts without reaching the Hub at all. Default false (it checks the Hub for missing files)."""
    hf_token_secret: Optional[str]
    """Secret (key ``token``) with a Hugging Face token for gated models, read by the download step only."""
    autoscaler: str
    """``keda`` (needs ``prometheus_url``; without it the replicas stay fixed) or ``none``. Default ``keda``."""
    prometheus_url: Optional[str]
    """In-cluster Prometheus the KEDA triggers query (`GpuMonitoring.prometheus_url`). Default none."""
    target_waiting_requests: int
    """Waiting requests per replica above which KEDA adds one. Default 5."""
    target_kv_cache_usage: float
    """Average KV-cache usage (0-1) above which KEDA adds a replica. Default 0.8."""
    monitoring_namespace: Optional[str]
    """Namespace of Prometheus: admitted to the model servers. Default none."""
    service_monitor: bool
    """Create a ServiceMonitor for vLLM's metrics (needs the Prometheus Operator CRDs). Default false."""
    service_monitor_labels: dict[str, str]
    """Labels on the ServiceMonitor. Default none."""
    route: GatewayRouteArgs
    """Publish ``/v1`` through an HTTPRoute to the InferencePool on the stack's Gateway
    (`InferenceGateway.route_args`, whose ``request_timeout`` bounds a request; no body or rate limit); the
    namespace gets the labels the Gateway admits routes from and the NetworkPolicies admit its data plane. Needs the
    Gateway API and InferencePool CRDs (make the component depend on `InferenceGateway.ready`). Default: no route,
    reachable inside the cluster only."""


RULES = {
    "model": matching(fields.MODEL_ID.pattern.strip("^$"), "a Hugging Face model id such as org/name"),
    "served_model_name": matching(fields.MODEL_ID.pattern.strip("^$"), "a model name such as org/name"),
    "name": DNS_LABEL,
    "namespace": DNS_LABEL,
    "image": NON_EMPTY,
    "replicas": at_least(1),
    "max_replicas": at_least(1),
    "tensor_parallel_size": at_least(1),
    "max_model_len": at_least(1),
    "dtype": choice(*llm_models.DTYPES),
    "quantization": choice(*llm_models.QUANTIZATIONS),
    "gpu_memory_utilization": between(0.1, 1.0),
    "model_source": choice(*llm_config.MODEL_SOURCES),
    "model_claim": DNS_SUBDOMAIN,
    "model_path": matching(llm_config.MODEL_PATH.pattern.strip("^$"), "a relative path inside the claim"),
    "cache_size": STORAGE_QUANTITY,
    "cache_storage_class": DNS_SUBDOMAIN,
    "cache_access_mode": choice(*llm_config.CACHE_ACCESS_MODES),
    "cache_volume": DNS_SUBDOMAIN,
    "cache_sub_path": storage_objects.SUB_PATH,
    "hf_token_secret": DNS_SUBDOMAIN,
    "autoscaler": choice(*llm_config.AUTOSCALERS),
    "prometheus_url": HTTP_URL,
    "target_waiting_requests": at_least(1),
    "target_kv_cache_usage": between(0.1, 1.0),
    "monitoring_namespace": DNS_LABEL,
    **route_rules("route"),
}


def _as_config(checked: dict[str, Any]) -> llm_config.LlmConfig:
    """The args as the stack section they mirror, so the stack's checks and defaults apply unchanged."""
    keys = ("model", "served_model_name", "replicas", "max_replicas", "tensor_parallel_size", "max_model_len", "dtype",
            "quantization", "gpu_memory_utilization", "model_source", "model_claim", "model_path", "cache_size",
            "cache_storage_class", "cache_access_mode", "hf_token_secret", "autoscaler", "target_waiting_requests",
            "target_kv_cache_usage")
    return llm_config.LlmConfig(**{k: checked[k] for k in keys if k in checked})


def checked_args(name: str, args: LlmServiceArgs) -> dict[str, Any]:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("LlmService", name)
    checked = checker.check(args, LlmServiceArgs, RULES)
    if checked.get("max_replicas", checked.get("replicas", 1)) < checked.get("replicas", 1):
        checker.fail("max_replicas", f"must be >= replicas ({checked['replicas']}), got {checked['max_replicas']}")
    source = checked.get("model_source", "huggingface")
    refuse_unless(checker, checked, "model_claim", source == "pvc", "with model_source pvc")
    refuse_unless(checker, checked, "model_path", source == "pvc", "with model_source pvc")
    if source == "pvc" and not checked.get("model_claim"):
        checker.fail("model_claim", "is required with model_source pvc (the claim holding the weights)")
    for key in ("cache_size", "cache_storage_class", "cache_access_mode", "hf_token_secret", "cache_volume"):
        refuse_unless(checker, checked, key, source == "huggingface", "with model_source huggingface")
    shared = checked.get("cache_access_mode") == "ReadWriteMany"
    refuse_unless(checker, checked, "cache_volume", shared, "with cache_access_mode ReadWriteMany (one shared claim)")
    refuse_unless(checker, checked, "cache_sub_path", shared,
                  "with cache_access_mode ReadWriteMany (one shared claim)")
    if checked.get("skip_cached_model") and not shared:
        checker.fail("skip_cached_model", "takes effect only with cache_access_mode ReadWriteMany (one shared claim)")
    if checked.get("cache_volume") and checked.get("cache_storage_class"):
        checker.fail("cache_volume", "binds the claim to an existing volume; cache_storage_class would provision "
                                     "another: give one of them")
    keda = checked.get("autoscaler", "keda") == "keda"
    for key in ("max_replicas", "target_waiting_requests", "target_kv_cache_usage"):
        refuse_unless(checker, checked, key, keda, "with autoscaler keda")
        # Without Prometheus there is no ScaledObject: the replicas stay fixed.
        refuse_unless(checker, checked, key, bool(checked.get("prometheus_url")),
                      "with prometheus_url (KEDA's triggers query it; without it the replicas stay fixed)")
    refuse_unless(checker, checked, "service_monitor_labels", bool(checked.get("service_monitor")),
                  "with service_monitor: true")
    for key in ("max_request_body_size", "rate_limit_per_minute"):
        if key in checked.get("route", {}):
            checker.fail(f"route.{key}", "the LLM route takes none: requests are small, answers stream (bound them "
                                         "with route.request_timeout)")
    if "route" in checked:
        route = checked["route"]
        if route.get("inference_pool") is False:
            checker.fail("route.inference_pool", f"the InferenceGateway '{route['gateway_namespace']}/"
                                                 f"{route['gateway_name']}' has no inference pool to route the "
                                                 "LlmService's InferencePool through: give it inference_pool: true")
        check_route(checker, route)
    pool = GpuPool.from_spec(checked["pool"])
    problem = llm_config.pool_problem(_as_config(checked), pool)
    if problem is not None:
        key, text = problem
        checker.fail(snake_case(key) if key else "pool", text)
    return checked


def spec_from_args(args: LlmServiceArgs, name: str = "llm") -> objects.LlmSpec:
    """The `LlmSpec` the component's objects are decided from (``args`` checked, as component ``name``)."""
    checked = checked_args(name, args)
    pool = GpuPool.from_spec(checked["pool"])
    llm = _as_config(checked)
    passed = {k: v for k, v in checked.items() if k in (
        "name", "namespace", "image", "replicas", "max_model_len", "dtype", "quantization", "gpu_memory_utilization",
        "model_source", "model_claim", "model_path", "cache_storage_class", "cache_access_mode", "hf_token_secret",
        "cache_volume", "cache_sub_path", "skip_cached_model", "autoscaler", "prometheus_url",
        "target_waiting_requests", "target_kv_cache_usage", "monitoring_namespace", "service_monitor_labels")}
    return objects.LlmSpec(
        pool=pool, model=llm.model, served_model_name=llm.api_model_name,
        tensor_parallel_size=llm_config.tensor_parallel_size(llm, pool),
        max_replicas=llm_config.max_replicas(llm, pool), cache_size=llm_config.cache_size(llm),
        route=RouteTarget.from_args(checked["route"]) if "route" in checked else None, **passed)


def llm_args(config: PlatformConfig, pool: GpuPool, prometheus_url: Optional[str] = None,
             monitoring_namespace: Optional[str] = None, service_monitor_labels: Optional[dict[str, str]] = None,
             gateway: Any = None, cache: Optional[dict[str, Any]] = None) -> LlmServiceArgs:
    """`LlmService` args from a stack's configuration, the monitoring layer and the gateway layer (None when absent).

    Without the platform's Prometheus there is nothing for KEDA to read: ``keda`` becomes a fixed replica count.
    Without a gateway there is no route, and the service installs the InferencePool CRD itself; with one, the gateway
    has it (Envoy Gateway applies it before its controller starts, which watches the kind from then on; GKE 1.34+
    installs it). ``cache``: the shared model cache the storage layer offers (`kube.storage.llm_cache`), which
    replaces the configured cache.
    """
    llm = config.llm
    if llm is None:
        raise ValueError("the stack configures no llm section")
    monitored = prometheus_url is not None
    keda = llm.autoscaler == "keda" and monitored
    args = LlmServiceArgs(
        pool=pool.spec(), model=llm.model, namespace=llm.namespace, replicas=llm.replicas,
        install_crds=gateway is None and not gke_installs_inference_pool(config),
        dtype=llm.dtype, gpu_memory_utilization=llm.gpu_memory_utilization, model_source=llm.model_source,
        autoscaler="keda" if keda else "none", monitoring_namespace=monitoring_namespace, service_monitor=monitored,
        service_monitor_labels=dict(service_monitor_labels or {}),
    )
    optional = {
        "served_model_name": llm.served_model_name or None, "image": llm.image,
        "tensor_parallel_size": llm.tensor_parallel_size, "max_model_len": llm.max_model_len,
        "quantization": llm.quantization, "model_claim": llm.model_claim, "model_path": llm.model_path or None,
        "hf_token_secret": llm.hf_token_secret, "prometheus_url": prometheus_url,
    }
    if llm.model_source == "huggingface":
        optional.update(cache_size=llm_config.cache_size(llm), cache_storage_class=llm.cache_storage_class,
                        cache_access_mode=llm.cache_access_mode)
        optional.update(cache or {})
    if keda:
        optional.update(max_replicas=llm_config.max_replicas(llm, pool),
                        target_waiting_requests=llm.target_waiting_requests,
                        target_kv_cache_usage=llm.target_kv_cache_usage)
    if gateway is not None:
        optional["route"] = gateway.route_args(request_timeout=llm.request_timeout)
    args.update({k: v for k, v in optional.items() if v is not None})  # type: ignore[typeddict-item]
    return args


def gke_installs_inference_pool(config: PlatformConfig) -> bool:
    """GKE installs the GA Gateway API and InferencePool CRDs itself from 1.34 (1.34.0-gke.1626000; llm-d's
    install guide), and owns them: the platform must not apply its own copy there."""
    minor = int(config.kubernetes_version.split(".")[1])
    return config.cloud == "gcp" and minor >= 34




class LlmService(pulumi.ComponentResource, metaclass=KeywordArgs):
    """vLLM on a GPU pool behind an InferencePool, its endpoint picker and an HTTPRoute (see the module docstring).

    Attributes: ``spec`` (the decided `LlmSpec`), ``deployment``, ``service``, ``inference_pool``, ``picker``
    (the endpoint picker's Deployment), ``route`` (HTTPRoute or None), ``autoscaler`` (ScaledObject or None),
    ``service_monitor`` (or None), ``crds`` (the InferencePool CRD manifest or None), ``namespace``, ``url``
    (in-cluster base URL of the OpenAI API, bypassing the picker), ``model`` (the name clients request).
    """

    namespace: str
    url: str
    model: str

    def __init__(self, name: str, args: LlmServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        spec = spec_from_args(args, name)  # checked before anything is registered
        super().__init__("gpuplatform:index:LlmService", name, {}, opts)
        self.spec = spec
        self.namespace = spec.namespace
        self.url = f"http://{spec.name}.{spec.namespace}.svc.cluster.local:{objects.HTTP_PORT}/v1"
        self.model = spec.api_model_name

        self.crds = None
        if args.get("install_crds", True):
            # The release's CRD manifest as published, fetched by the provider at deploy time.
            self.crds = k8s.yaml.v2.ConfigFile(f"{name}-inference-pool-crd", file=versions.INFERENCE_POOL_CRDS_MANIFEST,
                                               opts=child_opts(self, opts))
        first: list[Any] = []
        if args.get("create_namespace", True):
            first.append(register_body(k8s.core.v1.Namespace, f"{name}-namespace", objects.namespace(spec),
                                       child_opts(self, opts)))
        in_ns = child_opts(self, opts, depends_on=first)

        account = register_body(k8s.core.v1.ServiceAccount, f"{name}-sa", objects.service_account(spec), in_ns)
        before_pods: list[Any] = [account]
        cache = objects.model_cache_claim(spec)
        if cache is not None:
            before_pods.append(register_body(k8s.core.v1.PersistentVolumeClaim, f"{name}-model-cache", cache, in_ns))
        claims = objects.gpu_claim_template(spec)
        if claims is not None:
            before_pods.append(KubernetesObject(f"{name}-gpu-claims", claims, in_ns))
        # The autoscaler owns the replica count after creation; a later `pulumi up` must not reset it.
        self.deployment = register_body(
            k8s.apps.v1.Deployment, f"{name}-deployment", objects.deployment(spec),
            child_opts(self, opts, depends_on=[*first, *before_pods],
                       ignore_changes=["spec.replicas"] if spec.uses_keda else None))
        self.service = register_body(k8s.core.v1.Service, f"{name}-service", objects.service(spec), in_ns)
        register_body(k8s.policy.v1.PodDisruptionBudget, f"{name}-pdb", objects.pod_disruption_budget(spec), in_ns)
        register_body(k8s.networking.v1.NetworkPolicy, f"{name}-network-policy", objects.network_policy(spec), in_ns)

        picker_account = register_body(k8s.core.v1.ServiceAccount, f"{name}-epp-sa",
                                       objects.picker_service_account(spec), in_ns)
        role = register_body(k8s.rbac.v1.Role, f"{name}-epp-role", objects.picker_role(spec), in_ns)
        binding = register_body(k8s.rbac.v1.RoleBinding, f"{name}-epp-role-binding", objects.picker_role_binding(spec),
                                child_opts(self, opts, depends_on=[*first, role, picker_account]))
        plugins = register_body(k8s.core.v1.ConfigMap, f"{name}-epp-config", objects.picker_config_map(spec), in_ns)
        self.picker = register_body(k8s.apps.v1.Deployment, f"{name}-epp-deployment", objects.picker_deployment(spec),
                                    child_opts(self, opts, depends_on=[*first, binding, plugins]))
        picker_service = register_body(k8s.core.v1.Service, f"{name}-epp-service", objects.picker_service(spec), in_ns)
        register_body(k8s.networking.v1.NetworkPolicy, f"{name}-epp-network-policy",
                      objects.picker_network_policy(spec), in_ns)

        self.inference_pool = KubernetesObject(
            f"{name}-inference-pool", objects.inference_pool(spec),
            child_opts(self, opts, depends_on=[*first, *([self.crds] if self.crds else []), picker_service]))
        after_pool = child_opts(self, opts, depends_on=[*first, self.inference_pool])
        self.route = None
        route = objects.http_route(spec)
        if route is not None:
            self.route = KubernetesObject(f"{name}-route", route, after_pool)
        for suffix, body in (("health-check-policy", objects.gke_health_check_policy(spec)),
                             ("backend-policy", objects.gke_backend_policy(spec))):
            if body is not None:
                KubernetesObject(f"{name}-{suffix}", body, after_pool)

        self.autoscaler = None
        scaled = objects.scaled_object(spec)
        if scaled is not None:
            self.autoscaler = KubernetesObject(f"{name}-scaled-object", scaled,
                                               child_opts(self, opts, depends_on=[*first, self.deployment]))
        self.service_monitor = None
        if args.get("service_monitor"):
            self.service_monitor = KubernetesObject(f"{name}-service-monitor", objects.service_monitor(spec),
                                                    child_opts(self, opts, depends_on=[*first, self.service]))
        self.register_outputs({"namespace": self.namespace, "url": self.url, "model": self.model})


def build_llm_layer(platform: Any, name: str) -> Optional[LlmService]:
    """Add the LLM service to ``platform.layers["llm"]`` when the stack configures ``llm``: after the
    inference-critical PriorityClass (and the DRA driver on DRA pools), the monitoring release and KEDA (whose
    operator it adds when the inference layer has not), and the gateway."""
    from ..scheduling.priorities import INFERENCE_CRITICAL
    from ..storage.data_plane import backends_of, llm_cache
    from .keda import KedaOperator

    config: PlatformConfig = platform.config
    llm = config.llm
    if llm is None:
        return None
    pool = llm_config.llm_pool(llm, platform.pools)
    if pool is None:  # the configuration refuses this already
        raise ConfigError("llm", "the stack has no node pool to run the model server on")
    gateway = platform.layers.get("gateway")
    if gateway is not None and not gateway.supports_inference_pool:
        raise ConfigError("llm", f"the stack's Gateway '{gateway.gateway_name}' cannot route to an InferencePool "
                                 f"({objects.INFERENCE_POOL_GROUP}/v1); choose a gateway that implements the "
                                 "Gateway API Inference Extension")
    monitoring = platform.layers.get("monitoring")
    after = [*platform._priority_objects(INFERENCE_CRITICAL.name), *platform._dra_driver(pool)]
    if monitoring is not None:
        after.append(monitoring.release)
        if llm.autoscaler == "keda":
            if platform.layers.get("keda") is None:
                platform.layers["keda"] = KedaOperator(f"{name}-keda", {
                    "monitoring": True, "service_monitor_labels": dict(monitoring.service_monitor_labels),
                    "monitoring_namespace": monitoring.namespace,
                }, opts=platform._k8s_opts(depends_on=[monitoring.release]))
            after.append(platform.layers["keda"].release)
    if gateway is not None:
        after += list(gateway.ready)
    storage = platform.layers.get("storage")
    if storage is not None:
        after += list(storage.volumes.values())  # the shared model cache's volume its claim binds to
    platform.layers["llm"] = LlmService(f"{name}-llm", llm_args(
        config, pool,
        prometheus_url=monitoring.prometheus_url if monitoring is not None else None,
        monitoring_namespace=monitoring.namespace if monitoring is not None else None,
        service_monitor_labels=dict(monitoring.service_monitor_labels) if monitoring is not None else None,
        gateway=gateway, cache=llm_cache(config, backends_of(platform)),
    ), opts=platform._k8s_opts(depends_on=after))
    return platform.layers["llm"]
