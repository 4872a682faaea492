"""The stack's Gateway and the routes services attach to it, as plain bodies (wire form): pure functions of a
`GatewaySpec` (the gateway side) or a `RouteTarget` (a service's side).

Which implementation, and why (details and sources in docs/inference.md):

- GKE: Google's managed Gateway controller (GatewayClass ``gke-l7-regional-external-managed``, or the internal
  ``gke-l7-rilb``): nothing to run in the cluster, Google's regional Application Load Balancer as the data plane,
  the standard Gateway API CRDs installed and upgraded by GKE, and InferencePool backends (GKE Inference Gateway).
  Its proxies sit in the region's proxy-only subnet and reach the pods directly (container-native NEGs), health
  checks come from Google's ranges: the services' NetworkPolicies admit those ``ipBlock``s. It has no HTTPRoute
  timeouts, body limit or rate limit: route timeouts and health checks go in ``GCPBackendPolicy`` and
  ``HealthCheckPolicy`` next to the Service.
- Everywhere else: Envoy Gateway v1.9.0 (CNCF Envoy project), the only implementation whose stable release was built
  on and passes the v1.6 conformance suite for Gateway API v1.6.1 in full, with limits as policies: body size
  (``BackendTrafficPolicy.requestBuffer``: 413 above it), route timeouts (HTTPRoute ``timeouts.request``), rate
  limits (``BackendTrafficPolicy.rateLimit.local``: 429), slow-client timeouts (``ClientTrafficPolicy``). Its Envoy
  pods run in ``envoy-gateway-system`` behind a LoadBalancer Service (an NLB on EKS, a flexible load balancer on
  OKE): the services' NetworkPolicies admit those pods only. With an LLM service, Envoy AI Gateway runs beside it as
  its extension server, which is what resolves InferencePool backends.

One Gateway per stack (namespace `GATEWAY_NAMESPACE`): an HTTP listener on 80 and, with a host name and a
ClusterIssuer, an HTTPS listener on 443 whose certificate cert-manager's gateway-shim issues (the Gateway's
``cert-manager.io/cluster-issuer`` annotation), with a redirect from HTTP to HTTPS for that host. Routes attach only
from namespaces labelled `labels.GATEWAY_ROUTES_LABEL` (the listeners' ``allowedRoutes``), so no team can publish a
path on the platform's host.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, TypedDict

from typing_extensions import Required

from .. import labels
from ..kubernetes_base.common import metadata
from ..monitoring.monitoring_policies import ingress_policy, namespace_peer
from ..security import namespace_security
from ..versions import ENVOY_GATEWAY_API_VERSION, GATEWAY_API_API_VERSION, GKE_NETWORKING_API_VERSION
from .gateway_config import seconds

ENVOY_GATEWAY = "envoy-gateway"
GKE = "gke"
IMPLEMENTATIONS = (ENVOY_GATEWAY, GKE)
GATEWAY_NAMESPACE = "gateway"
GATEWAY_NAME = "inference"
ENVOY_GATEWAY_NAMESPACE = "envoy-gateway-system"
"""Envoy Gateway's controller and, in its default deploy mode, every Envoy pod it runs (the data plane)."""
ENVOY_GATEWAY_RELEASE = "envoy-gateway"
ENVOY_GATEWAY_CLASS = "envoy-gateway"
"""The GatewayClass the platform creates for its Envoy Gateway (teams may use it for Gateways of their own)."""
ENVOY_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
ENVOY_PROXY_NAME = "platform"
"""The EnvoyProxy (Envoy Gateway's data plane settings) the platform's GatewayClass points at."""
AI_GATEWAY_NAMESPACE = "envoy-ai-gateway-system"
AI_GATEWAY_RELEASE = "ai-gateway"
AI_GATEWAY_CRDS_RELEASE = "ai-gateway-crds"
HTTP_LISTENER = "http"
HTTPS_LISTENER = "https"
HTTP_PORT = 80
HTTPS_PORT = 443
TLS_SECRET = "inference-gateway-tls"
"""The Secret cert-manager writes the HTTPS listener's certificate to (in the Gateway's namespace)."""
HTTPS_REDIRECT_ROUTE = "https-redirect"
CLIENT_POLICY_NAME = "inference-gateway"
ENVOY_PORT_SHIFT = 10000
"""Envoy Gateway runs Envoy without NET_BIND_SERVICE: a listener port below 1024 is served on port + 10000 inside the
pod (envoyproxy/gateway@v1.9.0 internal/gatewayapi/translator.go wellKnownPortShift)."""
ENVOY_POD_LABELS = {labels.APP_NAME_LABEL: "envoy", labels.APP_COMPONENT_LABEL: "proxy",
                    labels.MANAGED_BY_LABEL: "envoy-gateway"}
"""Labels Envoy Gateway puts on every Envoy pod (internal/infrastructure/kubernetes/proxy/resource.go EnvoyAppLabel
at v1.9.0)."""
ENVOY_GATEWAY_POD_LABELS = {labels.CONTROL_PLANE_LABEL: "envoy-gateway"}
"""The controller's pods (charts/gateway-helm/templates/envoy-gateway-deployment.yaml at v1.9.0)."""
ENVOY_GATEWAY_WEBHOOK_PORT = 9443
"""The controller's topology-injector webhook, which the API server calls for Envoy pods."""
AI_GATEWAY_EXTENSION_PORT = 1063
"""Envoy AI Gateway's extension server (gRPC), which Envoy Gateway's controller calls while it translates routes."""
AI_GATEWAY_WEBHOOK_PORT = 9443
"""Envoy AI Gateway's mutating webhook (it adds the external processor to Envoy pods), called by the API server."""
AI_GATEWAY_CONTROLLER_SERVICE = "ai-gateway-controller"
"""The ai-gateway-helm chart's ``controller.fullnameOverride`` default: its Service's name."""
ACME_SOLVER_PORT = 8089
"""cert-manager's HTTP-01 solver pods listen here (pkg/issuer/acme/http/pod.go acmeSolverListenPort)."""
GKE_HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")
"""Where Google Cloud's load balancer health checks come from (Cloud Load Balancing "Health checks overview")."""
REQUEST_RECEIVED_TIMEOUT = "30s"
"""Longest a client may take to send a whole request to Envoy: a slow client holds no connection longer."""
PROXY_REPLICAS = 2
"""Envoy replicas: one can go (a node drain, a rollout) while the other serves; a PodDisruptionBudget keeps one."""
SERVICE_ANNOTATIONS = {
    "aws": {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
    "oci": {"service.beta.kubernetes.io/oci-load-balancer-shape": "flexible",
            "service.beta.kubernetes.io/oci-load-balancer-shape-flex-min": "10",
            "service.beta.kubernetes.io/oci-load-balancer-shape-flex-max": "100"},
}
"""Annotations of the Envoy LoadBalancer Service per cloud: a Network Load Balancer on EKS (the cloud controller
manager's default is a Classic Load Balancer), a flexible-shape load balancer of 10-100 Mbps on OKE (Oracle's
"Specifying Flexible Load Balancer Shapes"); AKS' Standard Load Balancer and existing clusters take the defaults."""


def implementation_of(cloud: str) -> str:
    """The Gateway API implementation a cloud's stacks get: GKE's managed controller on GKE, Envoy Gateway elsewhere."""
    return GKE if cloud == "gcp" else ENVOY_GATEWAY


@dataclass(frozen=True)
class GatewaySpec:
    """Everything the gateway side is decided from (plain values)."""

    cloud: str
    class_name: str = ""
    """GKE: the GatewayClass (required there); elsewhere empty: the platform's own `ENVOY_GATEWAY_CLASS`."""
    hostname: Optional[str] = None
    """The HTTPS listener's host name; None: HTTP only."""
    cluster_issuer: Optional[str] = None
    """The ClusterIssuer of the HTTPS listener's certificate (with ``hostname``)."""
    acme: bool = False
    """The issuer solves ACME HTTP-01 challenges through this Gateway: its solver pods must be reachable."""
    max_request_body_size: Optional[str] = None
    """Envoy Gateway: the per-connection buffer of the ClientTrafficPolicy follows the largest body a route admits."""
    inference_pool: bool = False
    """Route to InferencePools: Envoy Gateway gets Envoy AI Gateway as its extension server."""
    proxy_source_ranges: tuple[str, ...] = ()
    """GKE: the proxy-only subnet(s) the load balancer's proxies connect from."""
    namespace: str = GATEWAY_NAMESPACE
    name: str = GATEWAY_NAME

    def __post_init__(self) -> None:
        if self.hostname and not self.cluster_issuer:
            raise ValueError("an HTTPS listener needs a cluster_issuer for its certificate")

    @property
    def implementation(self) -> str:
        """``gke`` or ``envoy-gateway`` (`implementation_of` the cloud)."""
        return implementation_of(self.cloud)

    @property
    def gateway_class(self) -> str:
        """The Gateway's class: GKE's chosen one, else the platform's Envoy Gateway class."""
        return self.class_name if self.implementation == GKE else ENVOY_GATEWAY_CLASS

    @property
    def https_listener(self) -> str:
        """The HTTPS listener's name, empty without one."""
        return HTTPS_LISTENER if self.hostname else ""


def _namespace(name: str, role: str, extra_labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    body = namespace_security.namespace_body(name, namespace_security.namespace_pod_security(role), extra_labels)
    return {"apiVersion": "v1", "kind": "Namespace", **body}


def gateway_namespace(spec: GatewaySpec) -> dict[str, Any]:
    """The Gateway's namespace: it may attach routes (the HTTPS redirect, cert-manager's ACME solver routes)."""
    return _namespace(spec.namespace, "gateway", {labels.GATEWAY_ROUTES_LABEL: "true"})


def envoy_gateway_namespace() -> dict[str, Any]:
    """Envoy Gateway's namespace: its controller and every Envoy pod it runs."""
    return _namespace(ENVOY_GATEWAY_NAMESPACE, "envoy-gateway")


def ai_gateway_namespace() -> dict[str, Any]:
    """Envoy AI Gateway's namespace: its controller (Envoy Gateway's extension server)."""
    return _namespace(AI_GATEWAY_NAMESPACE, "envoy-ai-gateway")


def route_namespace_labels() -> dict[str, str]:
    """Labels a namespace needs for its routes to attach to the stack's Gateway."""
    return {labels.GATEWAY_ROUTES_LABEL: "true"}


def envoy_proxy(spec: GatewaySpec) -> dict[str, Any]:
    """Envoy Gateway's data plane settings: two replicas with a PodDisruptionBudget, the cloud's load balancer."""
    service: dict[str, Any] = {"type": "LoadBalancer"}
    if spec.cloud in SERVICE_ANNOTATIONS:
        service["annotations"] = dict(SERVICE_ANNOTATIONS[spec.cloud])
    return {
        "apiVersion": ENVOY_GATEWAY_API_VERSION, "kind": "EnvoyProxy",
        "metadata": metadata(ENVOY_PROXY_NAME, ENVOY_GATEWAY_NAMESPACE),
        "spec": {"provider": {"type": "Kubernetes", "kubernetes": {
            "envoyDeployment": {"replicas": PROXY_REPLICAS},
            "envoyPDB": {"minAvailable": 1},
            "envoyService": service,
        }}},
    }


def gateway_class(spec: GatewaySpec) -> dict[str, Any]:
    """The platform's GatewayClass for Envoy Gateway, its data plane set by `envoy_proxy`."""
    return {
        "apiVersion": GATEWAY_API_API_VERSION, "kind": "GatewayClass",
        "metadata": metadata(ENVOY_GATEWAY_CLASS),
        "spec": {"controllerName": ENVOY_GATEWAY_CONTROLLER,
                 "parametersRef": {"group": ENVOY_GATEWAY_API_VERSION.split("/")[0], "kind": "EnvoyProxy",
                                   "name": ENVOY_PROXY_NAME, "namespace": ENVOY_GATEWAY_NAMESPACE}},
    }


def _allowed_routes() -> dict[str, Any]:
    return {"namespaces": {"from": "Selector", "selector": {"matchLabels": route_namespace_labels()}}}


def gateway(spec: GatewaySpec) -> dict[str, Any]:
    """The stack's Gateway: HTTP on 80 for every host; HTTPS on 443 for ``hostname`` with cert-manager's certificate."""
    listeners: list[dict[str, Any]] = [
        {"name": HTTP_LISTENER, "protocol": "HTTP", "port": HTTP_PORT, "allowedRoutes": _allowed_routes()}]
    annotations = None
    if spec.hostname:
        listeners.append({
            "name": HTTPS_LISTENER, "protocol": "HTTPS", "port": HTTPS_PORT, "hostname": spec.hostname,
            "tls": {"mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret", "name": TLS_SECRET}]},
            "allowedRoutes": _allowed_routes(),
        })
        annotations = {labels.CERT_MANAGER_CLUSTER_ISSUER_ANNOTATION: spec.cluster_issuer}
    return {
        "apiVersion": GATEWAY_API_API_VERSION, "kind": "Gateway",
        "metadata": metadata(spec.name, spec.namespace, annotations=annotations),
        "spec": {"gatewayClassName": spec.gateway_class, "listeners": listeners},
    }


def https_redirect(spec: GatewaySpec) -> Optional[dict[str, Any]]:
    """HTTP requests for the HTTPS host answered with a 301 to HTTPS (None without HTTPS). cert-manager's ACME
    solver routes match ``/.well-known/acme-challenge/<token>`` exactly, which wins over this route's ``/``."""
    if not spec.hostname:
        return None
    return {
        "apiVersion": GATEWAY_API_API_VERSION, "kind": "HTTPRoute",
        "metadata": metadata(HTTPS_REDIRECT_ROUTE, spec.namespace),
        "spec": {
            "parentRefs": [{"name": spec.name, "sectionName": HTTP_LISTENER}],
            "hostnames": [spec.hostname],
            "rules": [{"filters": [{"type": "RequestRedirect",
                                    "requestRedirect": {"scheme": "https", "statusCode": 301}}]}],
        },
    }


def client_traffic_policy(spec: GatewaySpec) -> Optional[dict[str, Any]]:
    """Envoy Gateway's client-side limits on the Gateway: a whole request within `REQUEST_RECEIVED_TIMEOUT`, and a
    connection buffer as large as the largest body a route admits (the request buffer needs it: Envoy Gateway's
    request-buffering task). None on GKE."""
    if spec.implementation != ENVOY_GATEWAY:
        return None
    body: dict[str, Any] = {
        "targetRefs": [{"group": GATEWAY_API_API_VERSION.split("/")[0], "kind": "Gateway", "name": spec.name}],
        "timeout": {"http": {"requestReceivedTimeout": REQUEST_RECEIVED_TIMEOUT}},
    }
    if spec.max_request_body_size:
        body["connection"] = {"bufferLimit": spec.max_request_body_size}
    return {"apiVersion": ENVOY_GATEWAY_API_VERSION, "kind": "ClientTrafficPolicy",
            "metadata": metadata(CLIENT_POLICY_NAME, spec.namespace), "spec": body}


def data_plane_peers(spec: GatewaySpec) -> list[dict[str, Any]]:
    """NetworkPolicy ``from`` peers that admit the gateway's data plane and nothing else from outside a service's
    namespace: Envoy Gateway's Envoy pods, or on GKE the proxy-only subnet and Google's health-check ranges."""
    if spec.implementation == GKE:
        return [{"ipBlock": {"cidr": cidr}} for cidr in (*spec.proxy_source_ranges, *GKE_HEALTH_CHECK_RANGES)]
    return [namespace_peer(ENVOY_GATEWAY_NAMESPACE, ENVOY_POD_LABELS)]


def _tcp(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": port} for port in ports]


def gateway_network_policies(spec: GatewaySpec) -> list[dict[str, Any]]:
    """The Gateway's namespace runs no pod of its own; with an ACME issuer, cert-manager's HTTP-01 solver pods run
    there while a challenge is open, and the data plane must reach them."""
    policies = [ingress_policy("default-deny-ingress", spec.namespace, None, None)]
    if spec.acme:
        policies.append(ingress_policy("allow-gateway-to-acme-solver", spec.namespace, None,
                                [{"from": data_plane_peers(spec), "ports": _tcp(ACME_SOLVER_PORT)}]))
    return policies


def envoy_gateway_network_policies() -> list[dict[str, Any]]:
    """``envoy-gateway-system``: ingress denied but to the Envoy pods' listener ports from anywhere (the load
    balancer: clients' or nodes' addresses no selector can name), between the namespace's pods (Envoy fetches its
    configuration from the controller, xDS on 18000), and to the controller's webhook from the API server."""
    ns = ENVOY_GATEWAY_NAMESPACE
    return [
        ingress_policy("default-deny-ingress", ns, None, None),
        ingress_policy("allow-same-namespace", ns, None, [{"from": [{"podSelector": {}}]}]),
        ingress_policy("allow-clients-to-envoy", ns, ENVOY_POD_LABELS,
                [{"ports": _tcp(HTTP_PORT + ENVOY_PORT_SHIFT, HTTPS_PORT + ENVOY_PORT_SHIFT)}]),
        ingress_policy("allow-api-server-to-webhook", ns, ENVOY_GATEWAY_POD_LABELS,
                [{"ports": _tcp(ENVOY_GATEWAY_WEBHOOK_PORT)}]),
    ]


def ai_gateway_network_policies() -> list[dict[str, Any]]:
    """``envoy-ai-gateway-system``: ingress denied but from Envoy Gateway's namespace (the controller calls the
    extension server; Envoy's external processors read rate-limit configuration) and to the mutating webhook from
    the API server."""
    ns = AI_GATEWAY_NAMESPACE
    return [
        ingress_policy("default-deny-ingress", ns, None, None),
        ingress_policy("allow-envoy-gateway", ns, None, [{"from": [namespace_peer(ENVOY_GATEWAY_NAMESPACE)]}]),
        ingress_policy("allow-api-server-to-webhook", ns, None, [{"ports": _tcp(AI_GATEWAY_WEBHOOK_PORT)}]),
    ]


# ---------------------------------------------------------------------------------------------------------
# A service's side: its HTTPRoute and the gateway's limits for it


class GatewayRouteArgs(TypedDict, total=False):
    """Where a service publishes its HTTPRoute on the stack's Gateway and the gateway's limits for it: the plain
    values a component takes (`InferenceGateway.route_args` builds them)."""

    gateway_name: Required[str]
    """Name of the Gateway."""
    gateway_namespace: Required[str]
    """Namespace of the Gateway."""
    section_name: Required[str]
    """The listener the route attaches to (``https`` with TLS, else ``http``)."""
    implementation: Required[str]
    """``envoy-gateway`` or ``gke``: which policies carry the limits."""
    hostname: str
    """Host name of the route. Default: every host the listener serves."""
    request_timeout: str
    """Longest the route waits for the service (``10s``; GKE: whole seconds). Default ``10s``."""
    max_request_body_size: str
    """Envoy Gateway only: larger request bodies get 413. Default: no limit."""
    rate_limit_per_minute: int
    """Envoy Gateway only: requests per minute per Envoy replica (429 above). Default: no limit."""
    data_plane_peers: list[dict[str, Any]]
    """NetworkPolicy ``from`` peers that admit the gateway's data plane (`InferenceGateway.data_plane_peers`)."""
    listener_hostname: str
    """The host name the listener ``section_name`` serves (`InferenceGateway.route_args` sets it for the HTTPS
    listener): the component refuses a ``hostname`` the listener does not serve, whose route would never attach.
    Default: not known (the listener is taken to serve every host)."""
    inference_pool: bool
    """Whether the Gateway routes to InferencePool backends (`InferenceGateway.supports_inference_pool`; ``route_args``
    sets it): an `LlmService` refuses a route on a Gateway that does not. Default: not known (not checked)."""


@dataclass(frozen=True)
class RouteTarget:
    """Where a service's HTTPRoute attaches and the gateway's limits for it (plain values; `route_target`)."""

    gateway_name: str
    gateway_namespace: str
    section_name: str
    """The listener: ``https`` with TLS, else ``http``."""
    implementation: str
    hostname: Optional[str] = None
    """The route's host name; None: every host the listener serves."""
    request_timeout: str = "10s"
    max_request_body_size: Optional[str] = None
    """Envoy Gateway: larger bodies get 413 (None: no limit)."""
    rate_limit_per_minute: Optional[int] = None
    """Envoy Gateway: requests per minute per Envoy replica (None: no limit)."""
    data_plane_peers: tuple[Any, ...] = ()
    """NetworkPolicy peers that admit the gateway's data plane (`data_plane_peers`)."""
    listener_hostname: Optional[str] = None
    """The host the listener serves (None: not known, every host)."""
    inference_pool: Optional[bool] = None
    """Whether the Gateway routes to InferencePool backends (None: not known)."""

    def __post_init__(self) -> None:
        if self.implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {self.implementation!r}")
        if self.implementation == GKE and (self.max_request_body_size or self.rate_limit_per_minute):
            raise ValueError("GKE's Gateway has no request body limit or rate limit")

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> "RouteTarget":
        """The target of (checked) `GatewayRouteArgs`."""
        return cls(gateway_name=args["gateway_name"], gateway_namespace=args["gateway_namespace"],
                   section_name=args["section_name"], implementation=args["implementation"],
                   hostname=args.get("hostname"), request_timeout=args.get("request_timeout", cls.request_timeout),
                   max_request_body_size=args.get("max_request_body_size"),
                   rate_limit_per_minute=args.get("rate_limit_per_minute"),
                   data_plane_peers=tuple(args.get("data_plane_peers", ())),
                   listener_hostname=args.get("listener_hostname"), inference_pool=args.get("inference_pool"))

    def args(self) -> GatewayRouteArgs:
        """The `GatewayRouteArgs` of this target (the inverse of `from_args`)."""
        args = GatewayRouteArgs(gateway_name=self.gateway_name, gateway_namespace=self.gateway_namespace,
                                section_name=self.section_name, implementation=self.implementation,
                                request_timeout=self.request_timeout,
                                data_plane_peers=[dict(p) for p in self.data_plane_peers])
        for key in ("hostname", "max_request_body_size", "rate_limit_per_minute", "listener_hostname",
                    "inference_pool"):
            if getattr(self, key) is not None:
                args[key] = getattr(self, key)  # type: ignore[literal-required]
        return args


def route_target(spec: GatewaySpec, *, hostname: Optional[str], request_timeout: str,
                 max_request_body_size: Optional[str], rate_limit_per_minute: Optional[int]) -> RouteTarget:
    """A service's `RouteTarget` on the Gateway of ``spec``: the HTTPS listener when there is one (and the route's host
    is the listener's), else the HTTP listener."""
    return RouteTarget(
        gateway_name=spec.name, gateway_namespace=spec.namespace,
        section_name=spec.https_listener or HTTP_LISTENER, implementation=spec.implementation,
        hostname=hostname, request_timeout=request_timeout,
        max_request_body_size=max_request_body_size if spec.implementation == ENVOY_GATEWAY else None,
        rate_limit_per_minute=rate_limit_per_minute if spec.implementation == ENVOY_GATEWAY else None,
        data_plane_peers=tuple(data_plane_peers(spec)), listener_hostname=spec.hostname or None,
        inference_pool=spec.implementation == GKE or spec.inference_pool)


def hostnames_intersect(listener: str, route: str) -> bool:
    """Whether a route's host name matches a listener's (Gateway API: equal, or one a ``*.`` wildcard covering the
    other's subdomain); a route whose hosts match none of its listener's is never attached."""
    if listener == route:
        return True
    for wildcard, host in ((listener, route), (route, listener)):
        if wildcard.startswith("*.") and host.endswith(wildcard[1:]) and len(host) > len(wildcard) - 1:
            return True
    return False


def http_route(target: RouteTarget, name: str, namespace: str, paths: Sequence[str], service: str, port: int,
               extra_labels: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """An HTTPRoute publishing exact ``paths`` of ``service``:``port`` on the target's listener. The request timeout
    is the route's own on Envoy Gateway; GKE has none on routes (`route_policies` sets the backend's instead)."""
    rule: dict[str, Any] = {
        "matches": [{"path": {"type": "Exact", "value": path}} for path in paths],
        "backendRefs": [{"name": service, "port": port}],
    }
    if target.implementation == ENVOY_GATEWAY:
        rule["timeouts"] = {"request": target.request_timeout}
    spec: dict[str, Any] = {"parentRefs": [{"group": GATEWAY_API_API_VERSION.split("/")[0], "kind": "Gateway",
                                            "name": target.gateway_name, "namespace": target.gateway_namespace,
                                            "sectionName": target.section_name}],
                            "rules": [rule]}
    if target.hostname:
        spec["hostnames"] = [target.hostname]
    return {"apiVersion": GATEWAY_API_API_VERSION, "kind": "HTTPRoute",
            "metadata": metadata(name, namespace, extra_labels), "spec": spec}


def route_policies(target: RouteTarget, route_name: str, namespace: str, service: str, health_path: str,
                   health_port: int, extra_labels: Optional[dict[str, str]] = None) -> list[dict[str, Any]]:
    """The gateway's limits for one route. Envoy Gateway: a BackendTrafficPolicy on the HTTPRoute with the request
    buffer (413 above the body limit) and the local rate limit (429), where either is set. GKE: a GCPBackendPolicy
    with the request timeout and a HealthCheckPolicy probing ``health_path`` on the pods' ``health_port`` (GKE
    probes ``/`` otherwise), both on the Service."""
    if target.implementation == GKE:
        service_ref = {"group": "", "kind": "Service", "name": service}
        return [
            {"apiVersion": GKE_NETWORKING_API_VERSION, "kind": "GCPBackendPolicy",
             "metadata": metadata(service, namespace, extra_labels),
             "spec": {"targetRef": dict(service_ref), "default": {"timeoutSec": seconds(target.request_timeout)}}},
            {"apiVersion": GKE_NETWORKING_API_VERSION, "kind": "HealthCheckPolicy",
             "metadata": metadata(service, namespace, extra_labels),
             "spec": {"targetRef": dict(service_ref), "default": {"config": {
                 "type": "HTTP", "httpHealthCheck": {"portSpecification": "USE_FIXED_PORT", "port": health_port,
                                                     "requestPath": health_path}}}}},
        ]
    body: dict[str, Any] = {}
    if target.max_request_body_size:
        body["requestBuffer"] = {"limit": target.max_request_body_size}
    if target.rate_limit_per_minute:
        body["rateLimit"] = {"local": {"rules": [{"limit": {"requests": target.rate_limit_per_minute,
                                                            "unit": "Minute"}}]}}
    if not body:
        return []
    return [{"apiVersion": ENVOY_GATEWAY_API_VERSION, "kind": "BackendTrafficPolicy",
             "metadata": metadata(route_name, namespace, extra_labels),
             "spec": {"targetRefs": [{"group": GATEWAY_API_API_VERSION.split("/")[0], "kind": "HTTPRoute",
                                      "name": route_name}], **body}}]
