"""`InferenceService`: the reference sentiment-analysis app (examples/inference-app) served on a GPU pool.

What it deploys (bodies decided in `inference_objects`, whose docstring gives the reasons):
Namespace (Pod Security ``restricted``), ServiceAccount without a token, Deployment on the pool (one
``nvidia.com/gpu``: a whole GPU, a MIG instance or a time-sliced/MPS/HAMi slice depending on the pool; on DRA pools
one device claimed through a ResourceClaimTemplate instead), ClusterIP Service, PodDisruptionBudget, NetworkPolicy,
the autoscaler, and optionally an HTTPRoute on the stack's Gateway (with the gateway's limits for it), a model-cache
PersistentVolumeClaim and a ServiceMonitor.

Autoscaling: KEDA (`keda.KedaOperator`), not prometheus-adapter + HPA, because the ScaledObject carries its own
PromQL for this Service (no cluster-wide adapter rules to keep in step), several triggers with a fallback, and
the HPA behaviour in one object (details in that module's docstring). The
``ScaledObject`` scales on the app's ``inference_queue_depth`` read from Prometheus (target: one full batch
waiting per replica) and on CPU utilisation, with a fallback replica count when Prometheus cannot be read. With
``autoscaler: hpa``, or without a Prometheus URL, a plain ``autoscaling/v2`` HPA scales on CPU alone. Either way
the Deployment's ``replicas`` is only the initial count: Pulumi ignores later changes the autoscaler makes.

Ordering: make the component depend on KEDA's release (ScaledObject CRD), on the monitoring release
(ServiceMonitor CRD) and on the gateway's `InferenceGateway.ready` (Gateway API CRDs, controller, Gateway) when it
creates those objects; `GpuPlatform` does.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import catalog, fields, versions
from ..component_args import (
    CPU_QUANTITY,
    DNS_LABEL,
    MEMORY_QUANTITY,
    NON_EMPTY,
    STORAGE_QUANTITY,
    Args,
    KeywordArgs,
    at_least,
    choice,
    matching,
)
from ..config_model import PlatformConfig
from ..kubernetes_base.common import DNS_SUBDOMAIN, HTTP_URL, child_opts, refuse_unless, register_body
from ..kubernetes_base.custom_object import KubernetesObject
from ..pools import GpuPool, GpuPoolSpec, inference_pool
from ..storage import storage_objects
from . import inference_objects as objects
from .gateway import check_route, route_rules
from .gateway_objects import GatewayRouteArgs, RouteTarget


class InferenceServiceArgs(TypedDict, total=False):
    """Arguments of `InferenceService`. Only ``pool`` is required."""

    pool: Required[GpuPoolSpec]
    """GPU pool to run on (usually `pools.inference_pool`)."""
    namespace: str
    """Namespace of the service. Default ``inference``."""
    create_namespace: bool
    """Create the namespace (Pod Security ``restricted``). Default true."""
    name: str
    """Name of the Deployment, Service and every other object. Default ``sentiment``."""
    image: str
    """Container image of the app. Default: the app's image for the pool's accelerator vendor
    (`versions.INFERENCE_IMAGES`: CUDA on NVIDIA pools, ROCm on AMD pools, Neuron on Inferentia/Trainium pools)."""
    model_id: str
    """Hugging Face model id to download at start. Default: the model baked into the image (offline)."""
    min_replicas: int
    """Minimum (and initial) replicas. Default 1."""
    max_replicas: int
    """Maximum replicas the autoscaler may reach. Default 4."""
    max_batch_size: int
    """Texts per forward pass (the app's ``MAX_BATCH_SIZE``). Default 32."""
    max_wait_ms: float
    """How long a text that finds the model idle waits for others to share its forward pass (``MAX_WAIT_MS``;
    texts arriving during a pass never wait for it). Default 0: at once. Below ``deadline_ms``."""
    max_queue: int
    """Texts queued per replica before it answers 503 (``MAX_QUEUE``; a memory bound, the deadline usually
    refuses first). Default 1024."""
    deadline_ms: float
    """Longest a request may take, receipt to answer (``DEADLINE_MS``): requests that would wait longer behind
    the backlog get 503 with Retry-After at once; clients may ask for less with ``X-Request-Timeout-Ms`` (Envoy's
    ``x-envoy-expected-rq-timeout-ms`` counts too). Default 1000."""
    autoscaler: str
    """``keda`` (queue depth + CPU; needs ``prometheus_url``, else CPU HPA), ``hpa`` (CPU) or ``none``. Default
    ``keda``."""
    prometheus_url: Optional[str]
    """In-cluster Prometheus URL the KEDA trigger queries (`GpuMonitoring.prometheus_url`). Default none."""
    target_queue_depth: int
    """Queued texts per replica above which KEDA adds replicas. Default: ``max_batch_size``."""
    cpu_utilization: int
    """Target CPU utilisation (percent of the request). Default 70."""
    cpu_request: str
    """CPU request. Default: half the node's CPUs per GPU slot, 1 to 4 CPUs."""
    memory_request: str
    """Memory request and limit. Default: half the node's memory per GPU slot, 4 to 16 GiB."""
    route: GatewayRouteArgs
    """Publish ``/analyze`` through an HTTPRoute on the stack's Gateway (`InferenceGateway.route_args`), with the
    gateway's limits for it; the NetworkPolicy admits the gateway's data plane. Needs the Gateway API CRDs (make the
    component depend on `InferenceGateway.ready`). Default: no route, reachable inside the cluster only."""
    model_cache_size: Optional[str]
    """Size of a model-cache PersistentVolumeClaim mounted as the Hugging Face cache. Default: none."""
    model_cache_storage_class: Optional[str]
    """StorageClass of the model cache. Default: the cluster's default class."""
    model_cache_access_mode: str
    """``ReadWriteMany`` (default; replicas on several nodes share it), ``ReadWriteOnce`` or ``ReadOnlyMany``."""
    model_cache_volume: Optional[str]
    """A PersistentVolume the model-cache claim binds to (the storage layer's static volume on the shared file
    system, pre-bound to the claim). Default: none (``model_cache_storage_class`` provisions one)."""
    model_cache_sub_path: str
    """The directory of the model cache's volume mounted (``subPath``): ``models``, where the file system's driver
    mounts only its root (GKE Managed Lustre). Default: the whole volume."""
    monitoring_namespace: Optional[str]
    """Namespace of Prometheus: admitted by the NetworkPolicy. Default none."""
    service_monitor: bool
    """Create a ServiceMonitor (needs the Prometheus Operator CRDs). Default false."""
    service_monitor_labels: dict[str, str]
    """Labels on the ServiceMonitor (what the Prometheus selects on). Default none."""


REPLACED_ARGS = ("ingress_host", "ingress_class", "ingress_namespace")
"""Arguments of the Ingress the app had before the Gateway (issue 19), refused with the one that replaced them."""
RULES = {
    "namespace": DNS_LABEL,
    "name": DNS_LABEL,
    "image": NON_EMPTY,
    # Empty: the model baked into the image (what the stack file's default passes).
    "model_id": matching(f"({fields.MODEL_ID.pattern.strip('^$')})?", "a Hugging Face model id such as org/name"),
    "min_replicas": at_least(1),
    "max_replicas": at_least(1),
    "max_batch_size": at_least(1),
    "max_wait_ms": at_least(0),
    "max_queue": at_least(1),
    "deadline_ms": at_least(1),
    "autoscaler": choice(*objects.AUTOSCALERS),
    "prometheus_url": HTTP_URL,
    "target_queue_depth": at_least(1),
    "cpu_utilization": at_least(1),
    "cpu_request": CPU_QUANTITY,
    "memory_request": MEMORY_QUANTITY,
    **route_rules("route"),
    "model_cache_size": STORAGE_QUANTITY,
    "model_cache_storage_class": DNS_SUBDOMAIN,
    "model_cache_access_mode": choice(*objects.MODEL_CACHE_ACCESS_MODES),
    "model_cache_volume": DNS_SUBDOMAIN,
    "model_cache_sub_path": storage_objects.SUB_PATH,
    "monitoring_namespace": DNS_LABEL,
}


def checked_args(name: str, args: InferenceServiceArgs) -> dict[str, Any]:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("InferenceService", name)
    for old in REPLACED_ARGS:
        if isinstance(args, dict) and old in args:
            checker.fail(old, "was replaced by route: the app is published through an HTTPRoute on the stack's "
                              "Gateway (route.hostname is the host name; InferenceGateway.route_args builds route)")
    checked = checker.check(args, InferenceServiceArgs, RULES)
    low, high = checked.get("min_replicas", 1), checked.get("max_replicas", max(4, checked.get("min_replicas", 1)))
    if high < low:
        checker.fail("max_replicas", f"must be >= min_replicas ({low}), got {high}")
    deadline = checked.get("deadline_ms", objects.InferenceSpec.deadline_ms)
    if checked.get("max_wait_ms", 0) >= deadline:  # the app would refuse to start (exit 2)
        checker.fail("max_wait_ms", f"must be < deadline_ms ({deadline:g}), got {checked['max_wait_ms']:g}")
    # Arguments that would configure an object this service does not create.
    cache = bool(checked.get("model_cache_size"))
    refuse_unless(checker, checked, "model_cache_storage_class", cache, "with model_cache_size (the cache volume)")
    refuse_unless(checker, checked, "model_cache_access_mode", cache, "with model_cache_size (the cache volume)")
    refuse_unless(checker, checked, "model_cache_volume", cache, "with model_cache_size (the cache volume)")
    refuse_unless(checker, checked, "model_cache_sub_path", cache, "with model_cache_size (the cache volume)")
    if checked.get("model_cache_volume") and checked.get("model_cache_storage_class"):
        checker.fail("model_cache_volume", "binds the claim to an existing volume; model_cache_storage_class would "
                                           "provision another: give one of them")
    refuse_unless(checker, checked, "cpu_utilization", checked.get("autoscaler") != "none", "with an autoscaler")
    route = checked.get("route") or {}
    for key in ("max_request_body_size", "rate_limit_per_minute"):
        if route.get(key) is not None and route.get("implementation") != "envoy-gateway":
            checker.fail(f"route.{key}", "takes effect only with Envoy Gateway (GKE's Gateway has no such limit)")
    if route:
        check_route(checker, route)
    refuse_unless(checker, checked, "service_monitor_labels", bool(checked.get("service_monitor")),
                  "with service_monitor: true")
    vendor = catalog.vendor_of(checked["pool"].get("gpu_model", ""))
    if vendor.key not in versions.INFERENCE_IMAGES and "image" not in checked:
        checker.fail("pool", f"the app has no image for {vendor.display_name} accelerators (pool "
                             f"'{checked['pool'].get('name')}'); give image, one built for them")
    return checked


def spec_from_args(args: InferenceServiceArgs, name: str = "inference") -> objects.InferenceSpec:
    """The `InferenceSpec` the component's objects are decided from (``args`` checked, as component ``name``)."""
    checked = checked_args(name, args)
    given = {k: v for k, v in checked.items() if k not in ("pool", "create_namespace", "service_monitor", "route")}
    if "route" in checked:
        given["route"] = RouteTarget.from_args(checked["route"])
    if "max_replicas" not in given:
        # The default maximum never falls below the minimum.
        given["max_replicas"] = max(objects.InferenceSpec.max_replicas, given.get("min_replicas", 1))
    pool = GpuPool.from_spec(checked["pool"])
    given.setdefault("image", versions.INFERENCE_IMAGES[pool.vendor].reference)
    return objects.InferenceSpec(pool=pool, **given)


def chosen_pool(config: PlatformConfig, pools: list[GpuPool]) -> Optional[GpuPool]:
    """``inference.pool`` when set, else `pools.inference_pool` (first ``role: inference`` pool...)."""
    named = next((p for p in pools if p.name == config.inference.pool), None)
    return named or inference_pool(pools)


def inference_args(config: PlatformConfig, pool: GpuPool, prometheus_url: Optional[str] = None,
                   monitoring_namespace: Optional[str] = None,
                   service_monitor_labels: Optional[dict[str, str]] = None,
                   route: Optional[GatewayRouteArgs] = None,
                   model_cache: Optional[dict[str, Any]] = None) -> InferenceServiceArgs:
    """`InferenceService` args from a stack's configuration, the monitoring layer (None when disabled), the
    gateway layer (``route``: the app's `GatewayRouteArgs`, None without a Gateway) and the storage layer
    (``model_cache``: the model-cache args on the shared file system, `kube.storage.inference_cache`).

    Without the platform's Prometheus there is nothing for KEDA to read: ``keda`` becomes a CPU HPA.
    """
    inference = config.inference
    monitored = prometheus_url is not None
    args = InferenceServiceArgs(
        pool=pool.spec(), namespace=inference.namespace, model_id=inference.model_id,
        min_replicas=inference.replicas, max_replicas=inference.max_replicas,
        autoscaler="hpa" if inference.autoscaler == "keda" and not monitored else inference.autoscaler,
        prometheus_url=prometheus_url,
        model_cache_size=inference.model_cache_size, model_cache_storage_class=inference.model_cache_storage_class,
        monitoring_namespace=monitoring_namespace, service_monitor=monitored,
        service_monitor_labels=dict(service_monitor_labels or {}),
    )
    if inference.image is not None:
        args["image"] = inference.image
    if inference.target_queue_depth is not None:
        args["target_queue_depth"] = inference.target_queue_depth
    if route is not None:
        args["route"] = route
    if model_cache:
        args.update(model_cache)  # type: ignore[typeddict-item]
    return args




def _custom(resource_name: str, body: dict[str, Any], opts: pulumi.ResourceOptions) -> Any:
    return k8s.apiextensions.CustomResource(resource_name, api_version=body["apiVersion"], kind=body["kind"],
                                            metadata=body["metadata"], spec=body["spec"], opts=opts)


class InferenceService(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The sentiment-analysis service on a GPU pool, autoscaled on its queue depth (see the module docstring).

    Attributes: ``spec`` (the decided `InferenceSpec`), ``deployment``, ``service``, ``autoscaler`` (ScaledObject,
    HPA or None), ``service_monitor``, ``http_route`` (or None), ``model_cache`` (or None), ``gpu_claim_template`` (DRA
    pools, else None), ``namespace``, ``url`` (in-cluster base URL), ``gpu_share`` (what one ``nvidia.com/gpu`` is on
    the pool, in words).
    """

    namespace: str
    url: str
    gpu_share: str

    def __init__(self, name: str, args: InferenceServiceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        spec = spec_from_args(args, name)  # checked before anything is registered
        super().__init__("gpuplatform:index:InferenceService", name, {}, opts)
        self.spec = spec
        self.namespace = spec.namespace
        self.url = f"http://{spec.name}.{spec.namespace}.svc.cluster.local"
        self.gpu_share = objects.gpu_share(spec.pool)

        first: list[Any] = []
        if args.get("create_namespace", True):
            first.append(register_body(k8s.core.v1.Namespace, f"{name}-namespace", objects.namespace(spec),
                                       child_opts(self, opts)))
        in_ns = child_opts(self, opts, depends_on=first)
        account = register_body(k8s.core.v1.ServiceAccount, f"{name}-sa", objects.service_account(spec), in_ns)
        before_pods = [account]
        self.model_cache = None
        if spec.model_cache_size:
            self.model_cache = register_body(k8s.core.v1.PersistentVolumeClaim, f"{name}-model-cache",
                                             objects.model_cache_claim(spec), in_ns)
            before_pods.append(self.model_cache)
        self.gpu_claim_template = None
        gpu_claims = objects.gpu_claim_template(spec)
        if gpu_claims is not None:
            self.gpu_claim_template = KubernetesObject(f"{name}-gpu-claims", gpu_claims, in_ns)
            before_pods.append(self.gpu_claim_template)
        # The autoscaler owns the replica count after creation; a later `pulumi up` must not reset it.
        scaled = spec.autoscaler != "none"
        self.deployment = register_body(
            k8s.apps.v1.Deployment, f"{name}-deployment", objects.deployment(spec),
            child_opts(self, opts, depends_on=[*first, *before_pods],
                       ignore_changes=["spec.replicas"] if scaled else None))
        self.service = register_body(k8s.core.v1.Service, f"{name}-service", objects.service(spec), in_ns)
        register_body(k8s.policy.v1.PodDisruptionBudget, f"{name}-pdb", objects.pod_disruption_budget(spec), in_ns)
        register_body(k8s.networking.v1.NetworkPolicy, f"{name}-network-policy", objects.network_policy(spec), in_ns)
        self.http_route = None
        route = objects.http_route(spec)
        if route is not None:
            self.http_route = KubernetesObject(f"{name}-http-route", route, in_ns)
            after_route = child_opts(self, opts, depends_on=[*first, self.http_route, self.service])
            for body in objects.route_policies(spec):
                KubernetesObject(f"{name}-{body['kind'].lower()}", body, after_route)

        after_target = child_opts(self, opts, depends_on=[*first, self.deployment])
        self.autoscaler: Any = None
        if spec.uses_keda:
            self.autoscaler = _custom(f"{name}-scaled-object", objects.scaled_object(spec), after_target)
        elif scaled:
            self.autoscaler = register_body(k8s.autoscaling.v2.HorizontalPodAutoscaler, f"{name}-hpa",
                                            objects.horizontal_pod_autoscaler(spec), after_target)
        self.service_monitor = None
        if args.get("service_monitor"):
            self.service_monitor = _custom(f"{name}-service-monitor", objects.service_monitor(spec),
                                           child_opts(self, opts, depends_on=[*first, self.service]))
        self.register_outputs({"namespace": self.namespace, "url": self.url, "gpu_share": self.gpu_share})
