"""`InferenceGateway`: the stack's Gateway API entry point, which every published inference service attaches its
HTTPRoute to (bodies and the reasons for each choice in `gateway_objects`; Helm values in `gateway_values`).

What it deploys:

- GKE: the Gateway (GatewayClass ``gke-l7-regional-external-managed`` or ``gke-l7-rilb``) in a ``restricted``
  namespace. GKE's own controller, CRDs and load balancer do the rest (the GKE layer turns the Gateway API on and
  gives the region a proxy-only subnet).
- Elsewhere: the Gateway API v1.6.1 standard CRDs and Envoy Gateway's CRDs (applied server-side from their release
  manifests), Envoy Gateway v1.9.0 in ``envoy-gateway-system`` (its chart's own, experimental, Gateway API CRDs off),
  the platform's GatewayClass with its EnvoyProxy (two Envoy replicas behind the cloud's load balancer), the
  Gateway, and a ClientTrafficPolicy; with ``inference_pool``, the InferencePool CRD and Envoy AI Gateway v1.1.0 in
  ``envoy-ai-gateway-system`` as Envoy Gateway's extension server.
- Both: with a host name, an HTTPS listener whose certificate cert-manager issues from ``cluster_issuer`` (the
  platform's `CertManager`), and an HTTP-to-HTTPS redirect for that host; NetworkPolicies in every namespace it
  creates.

Ordering: a route needs `ready` (the CRDs, the controller and the Gateway). cert-manager with its Gateway API
integration needs the Gateway API CRDs first (`crds`).
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import catalog, versions
from ..cidrs import CidrRule
from ..component_args import DNS_LABEL, Args, KeywordArgs, Rule, at_least, choice, cidr, matching
from ..fields import HOST_NAME
from ..kubernetes_base.common import checked_cloud, child_opts, helm_release, refuse_unless
from ..kubernetes_base.custom_object import KubernetesObject
from . import cert_manager
from . import gateway_objects as objects
from . import gateway_values as values
from .gateway_config import BODY_SIZE, GKE_CLASSES, TIMEOUT, https_host, publishes_services


class InferenceGatewayArgs(TypedDict, total=False):
    """Arguments of `InferenceGateway`. Only ``cloud`` is required (and ``class_name`` and ``proxy_source_ranges``
    on GKE)."""

    cloud: Required[str]
    """The cluster's cloud: ``gcp`` uses GKE's managed Gateway controller, every other cloud Envoy Gateway."""
    class_name: str
    """GKE only, required there: the GatewayClass, ``gke-l7-regional-external-managed`` (internet-facing) or
    ``gke-l7-rilb`` (internal)."""
    proxy_source_ranges: list[str]
    """GKE only, required there: the CIDRs of the region's proxy-only subnet, which the load balancer's proxies
    connect to the pods from (admitted by the services' NetworkPolicies)."""
    hostname: str
    """Host name of the HTTPS listener (443). Default: HTTP only."""
    cluster_issuer: str
    """cert-manager ClusterIssuer of the HTTPS listener's certificate (`CertManager.cluster_issuer`); required with
    ``hostname``."""
    acme: bool
    """The issuer answers ACME HTTP-01 challenges through this Gateway (its solver pods must be reachable). Default
    false."""
    max_request_body_size: str
    """Envoy Gateway only: the largest request body a route admits (``1Mi``); the connection buffer follows it.
    Default: Envoy's own buffer (32 KiB)."""
    inference_pool: bool
    """Route to InferencePool backends (an LLM service): on Envoy Gateway, install the InferencePool CRD and Envoy AI
    Gateway. GKE's controller supports them itself. Default false."""
    namespace: str
    """Namespace of the Gateway. Default ``gateway``."""
    name: str
    """Name of the Gateway. Default ``inference``."""


CIDR = cidr(CidrRule(example="10.9.0.0/23"))
HOST = matching(HOST_NAME.pattern.strip("^$"), "a DNS host name")
BODY = matching(BODY_SIZE.pattern.strip("^$"), "a size such as 512Ki or 1Mi")


def route_rules(prefix: str) -> dict[str, Rule]:
    """The rules of a `gateway_objects.GatewayRouteArgs` argument named ``prefix`` (a component's ``route``)."""
    return {f"{prefix}.{key}": rule for key, rule in {
        "gateway_name": DNS_LABEL, "gateway_namespace": DNS_LABEL, "section_name": DNS_LABEL,
        "implementation": choice(*objects.IMPLEMENTATIONS), "hostname": HOST,
        "request_timeout": matching(TIMEOUT.pattern.strip("^$"), "a duration such as 10s or 2m"),
        "max_request_body_size": BODY, "rate_limit_per_minute": at_least(1), "listener_hostname": HOST,
    }.items()}


def check_route(checker: Args, route: dict[str, Any], prefix: str = "route") -> None:
    """Refuse a (checked) route its Gateway would never attach: a ``hostname`` the listener does not serve (one line
    naming both ends)."""
    listener, host = route.get("listener_hostname"), route.get("hostname")
    if listener and host and not objects.hostnames_intersect(listener, host):
        checker.fail(f"{prefix}.hostname", f"'{host}' is not served by listener '{route['section_name']}' of the "
                                           f"InferenceGateway '{route['gateway_namespace']}/{route['gateway_name']}' "
                                           f"(its hostname is '{listener}'): the route would never attach")


RULES = {
    "cloud": choice(*catalog.CLOUDS),
    "class_name": choice(*GKE_CLASSES),
    "proxy_source_ranges[]": CIDR,
    "hostname": HOST,
    "cluster_issuer": DNS_LABEL,
    "max_request_body_size": BODY,
    "namespace": DNS_LABEL,
    "name": DNS_LABEL,
}


def checked_args(name: str, args: InferenceGatewayArgs) -> dict[str, Any]:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("InferenceGateway", name)
    checked_cloud(checker, args)
    checked = checker.check(args, InferenceGatewayArgs, RULES)
    gke = objects.implementation_of(checked["cloud"]) == objects.GKE
    for key, what in (("class_name", f"the GatewayClass, one of {', '.join(GKE_CLASSES)}"),
                      ("proxy_source_ranges", "the region's proxy-only subnet, which GKE's proxies connect from")):
        if gke and not checked.get(key):
            checker.fail(key, f"is required on GKE: {what}")
        refuse_unless(checker, checked, key, gke, "on GKE (elsewhere the platform runs Envoy Gateway)")
    refuse_unless(checker, checked, "max_request_body_size", not gke, "with Envoy Gateway (GKE's load balancers have "
                                                                      "no body limit)")
    if checked.get("hostname") and not checked.get("cluster_issuer"):
        checker.fail("cluster_issuer", "is required with hostname (the HTTPS listener's certificate)")
    refuse_unless(checker, checked, "cluster_issuer", bool(checked.get("hostname")), "with hostname (the HTTPS "
                                                                                     "listener)")
    refuse_unless(checker, checked, "acme", bool(checked.get("cluster_issuer")), "with cluster_issuer")
    return checked


def spec_from_args(args: dict[str, Any]) -> objects.GatewaySpec:
    """The `GatewaySpec` of checked args."""
    return objects.GatewaySpec(
        cloud=args["cloud"], class_name=args.get("class_name", ""), hostname=args.get("hostname"),
        cluster_issuer=args.get("cluster_issuer"), acme=bool(args.get("acme")),
        max_request_body_size=args.get("max_request_body_size"), inference_pool=bool(args.get("inference_pool")),
        proxy_source_ranges=tuple(args.get("proxy_source_ranges", ())),
        namespace=args.get("namespace", objects.GATEWAY_NAMESPACE), name=args.get("name", objects.GATEWAY_NAME))


def gateway_args(config: Any, cluster_outputs: dict[str, Any]) -> InferenceGatewayArgs:
    """`InferenceGateway` args from a stack's configuration (a `PlatformConfig`) and its cluster layer's outputs (on
    GKE the proxy-only subnet's range, ``gateway_proxy_cidr``)."""
    cloud = config.cloud
    args = InferenceGatewayArgs(cloud=cloud, inference_pool=getattr(config, "llm", None) is not None)
    host = https_host(config)
    if host is not None:
        args.update(hostname=host, cluster_issuer=cert_manager.issuer_for(config.gateway.tls),
                    acme=config.gateway.tls == "acme")
    if objects.implementation_of(cloud) == objects.GKE:
        args.update(class_name=config.gateway.class_for(cloud),
                    proxy_source_ranges=[cluster_outputs["gateway_proxy_cidr"]])
    else:
        args["max_request_body_size"] = config.gateway.body_limit(cloud)
    return args


class InferenceGateway(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The stack's Gateway and, off GKE, the Envoy Gateway that implements it (see the module docstring).

    Attributes (plain values a service's route is built from): ``gateway_name``, ``gateway_namespace``,
    ``http_listener`` and ``https_listener`` (sectionNames; the HTTPS one empty without TLS), ``implementation``
    (``gke`` or ``envoy-gateway``), ``supports_inference_pool``, ``data_plane_peers`` (NetworkPolicy ``from`` peers
    that admit the gateway's data plane), ``route_namespace_labels`` (labels a namespace needs for its routes to
    attach). Resources: ``ready`` (what routes must depend on), ``crds`` (the CRD manifests it applies),
    ``inference_pool_crds`` (or None), ``gateway``, ``release`` (Envoy Gateway's, None on GKE),
    ``ai_gateway_release`` (or None).
    """

    gateway_name: str
    gateway_namespace: str
    http_listener: str
    https_listener: str
    implementation: str
    supports_inference_pool: bool

    def __init__(self, name: str, args: InferenceGatewayArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checked = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:InferenceGateway", name, {}, opts)
        spec = spec_from_args(checked)
        self.spec = spec
        self.gateway_name = spec.name
        self.gateway_namespace = spec.namespace
        self.http_listener = objects.HTTP_LISTENER
        self.https_listener = spec.https_listener
        self.implementation = spec.implementation
        self.supports_inference_pool = spec.implementation == objects.GKE or spec.inference_pool
        self.data_plane_peers: list[dict[str, Any]] = objects.data_plane_peers(spec)
        self.route_namespace_labels: dict[str, str] = objects.route_namespace_labels()
        self.crds: list[pulumi.Resource] = []
        self.inference_pool_crds: Optional[pulumi.Resource] = None
        """The InferencePool CRD manifest it applies (Envoy Gateway with ``inference_pool``: Envoy Gateway watches the
        kind from its start); None elsewhere (GKE installs its own)."""
        self.release: Optional[k8s.helm.v3.Release] = None
        self.ai_gateway_release: Optional[k8s.helm.v3.Release] = None
        before_gateway: list[pulumi.Resource] = []
        if spec.implementation == objects.ENVOY_GATEWAY:
            before_gateway = self._envoy_gateway(name, spec, opts)
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", **_without_type(objects.gateway_namespace(spec)),
                                          opts=child_opts(self, opts))
        in_namespace = child_opts(self, opts, depends_on=[namespace])
        for body in objects.gateway_network_policies(spec):
            _network_policy(f"{name}-{body['metadata']['name']}", body, in_namespace)
        self.gateway = KubernetesObject(f"{name}-gateway", objects.gateway(spec),
                                        child_opts(self, opts, depends_on=[namespace, *self.crds, *before_gateway]))
        after_gateway = child_opts(self, opts, depends_on=[self.gateway])
        for key, body in (("https-redirect", objects.https_redirect(spec)),
                          ("client-traffic-policy", objects.client_traffic_policy(spec))):
            if body is not None:
                KubernetesObject(f"{name}-{key}", body, after_gateway)
        self.ready: list[pulumi.Resource] = [*self.crds, *before_gateway, self.gateway]
        self.register_outputs({"gateway_name": self.gateway_name, "gateway_namespace": self.gateway_namespace,
                               "http_listener": self.http_listener, "https_listener": self.https_listener,
                               "supports_inference_pool": self.supports_inference_pool})

    def route_args(self, hostname: Optional[str] = None, request_timeout: str = "10s",
                   max_request_body_size: Optional[str] = None,
                   rate_limit_per_minute: Optional[int] = None) -> objects.GatewayRouteArgs:
        """`GatewayRouteArgs` of a service's route on this Gateway: the HTTPS listener when there is one (give the
        listener's host, or none), else the HTTP listener; the body and rate limits only where the implementation
        has them (Envoy Gateway), dropped on GKE."""
        return objects.route_target(self.spec, hostname=hostname, request_timeout=request_timeout,
                                    max_request_body_size=max_request_body_size,
                                    rate_limit_per_minute=rate_limit_per_minute).args()

    def _envoy_gateway(self, name: str, spec: objects.GatewaySpec,
                       opts: Optional[pulumi.ResourceOptions]) -> list[pulumi.Resource]:
        """The CRDs, Envoy Gateway (and Envoy AI Gateway), the EnvoyProxy and the GatewayClass; returns what the
        Gateway waits for."""
        manifests = [("gateway-api-crds", versions.GATEWAY_API_CRDS_MANIFEST),
                     ("envoy-gateway-crds", versions.ENVOY_GATEWAY_CRDS_MANIFEST)]
        if spec.inference_pool:
            manifests.append(("inference-pool-crds", versions.INFERENCE_POOL_CRDS_MANIFEST))
        self.crds = [k8s.yaml.v2.ConfigFile(f"{name}-{key}", file=url, opts=child_opts(self, opts))
                     for key, url in manifests]
        if spec.inference_pool:
            self.inference_pool_crds = self.crds[-1]
        namespace = k8s.core.v1.Namespace(f"{name}-envoy-gateway-namespace",
                                          **_without_type(objects.envoy_gateway_namespace()),
                                          opts=child_opts(self, opts))
        in_namespace = child_opts(self, opts, depends_on=[namespace])
        policies = [_network_policy(f"{name}-envoy-gateway-{body['metadata']['name']}", body, in_namespace)
                    for body in objects.envoy_gateway_network_policies()]
        self.release = helm_release(
            f"{name}-envoy-gateway", versions.ENVOY_GATEWAY, objects.ENVOY_GATEWAY_RELEASE,
            objects.ENVOY_GATEWAY_NAMESPACE, values.envoy_gateway_values(spec.inference_pool),
            child_opts(self, opts, depends_on=[namespace, *policies, *self.crds]), create_namespace=False,
            skip_crds=True)
        controllers: list[pulumi.Resource] = [self.release]
        if spec.inference_pool:
            ai_namespace = k8s.core.v1.Namespace(f"{name}-ai-gateway-namespace",
                                                 **_without_type(objects.ai_gateway_namespace()),
                                                 opts=child_opts(self, opts))
            in_ai_namespace = child_opts(self, opts, depends_on=[ai_namespace])
            ai_policies = [_network_policy(f"{name}-ai-gateway-{body['metadata']['name']}", body, in_ai_namespace)
                           for body in objects.ai_gateway_network_policies()]
            ai_crds = helm_release(
                f"{name}-ai-gateway-crds", versions.ENVOY_AI_GATEWAY_CRDS, objects.AI_GATEWAY_CRDS_RELEASE,
                objects.AI_GATEWAY_NAMESPACE, values.ai_gateway_crds_values(), in_ai_namespace,
                create_namespace=False)
            # After Envoy Gateway, as upstream installs it: the controller registers with Envoy Gateway's namespace.
            self.ai_gateway_release = helm_release(
                f"{name}-ai-gateway", versions.ENVOY_AI_GATEWAY, objects.AI_GATEWAY_RELEASE,
                objects.AI_GATEWAY_NAMESPACE, values.ai_gateway_values(),
                child_opts(self, opts, depends_on=[ai_namespace, *ai_policies, ai_crds, self.release]),
                create_namespace=False)
            controllers.append(self.ai_gateway_release)
        proxy = KubernetesObject(f"{name}-envoy-proxy", objects.envoy_proxy(spec),
                                 child_opts(self, opts, depends_on=[namespace, *self.crds]))
        gateway_class = KubernetesObject(f"{name}-gateway-class", objects.gateway_class(spec),
                                         child_opts(self, opts, depends_on=[proxy, *controllers]))
        return [*controllers, gateway_class]


def _without_type(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}


def _network_policy(resource_name: str, body: dict[str, Any], opts: pulumi.ResourceOptions) -> Any:
    return k8s.networking.v1.NetworkPolicy(resource_name, metadata=body["metadata"], spec=body["spec"], opts=opts)


def build_gateway_layer(platform: Any, name: str) -> Optional[InferenceGateway]:
    """Add the `InferenceGateway` to ``platform.layers["gateway"]`` when the stack publishes a service (the sentiment
    app or an LLM service) and ``gateway.enabled``; returns it (None otherwise)."""
    config = platform.config
    if not publishes_services(config):
        return None
    gateway = InferenceGateway(f"{name}-gateway", gateway_args(config, platform.cluster.outputs),
                               opts=platform._k8s_opts())
    platform.layers["gateway"] = gateway
    return gateway
