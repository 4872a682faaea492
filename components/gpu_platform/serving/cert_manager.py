"""`CertManager`: the cluster's one cert-manager, shared by everything that needs certificates, and the platform's
ClusterIssuers.

Two users: the AMD GPU Operator (its webhooks and KMM create Certificates and Issuers) and the stack's Gateway
(its HTTPS listener's certificate, issued by cert-manager's gateway-shim from the Gateway's
``cert-manager.io/cluster-issuer`` annotation). The platform creates it once when either needs it.

- cert-manager v1.21.1 (`versions.CERT_MANAGER`) with its CRDs; with ``gateway_api`` its controller configuration
  turns the Gateway API integration on (``gatewayAPI.enabled``, the v1.21 ControllerConfiguration field that replaces
  the deprecated ``enableGatewayAPI``; cert-manager/cert-manager@v1.21.1 pkg/apis/config/controller/v1alpha1/types.go).
  Its informers watch Gateways from the start, so the Gateway API CRDs come first: make the component depend on
  them.
- ``private_ca``: a private CA for stacks without a public certificate: a self-signed ClusterIssuer signs a CA
  Certificate (ECDSA P-256, its Secret in cert-manager's namespace, the cluster resource namespace of ClusterIssuers),
  and the `PRIVATE_CA_ISSUER` ClusterIssuer issues from it. Clients trust the CA's ``ca.crt``.
- ``acme``: the `ACME_ISSUER` ClusterIssuer (Let's Encrypt by default) solving HTTP-01 challenges through the stack's
  Gateway: cert-manager attaches a temporary HTTPRoute for ``/.well-known/acme-challenge/<token>`` to its HTTP
  listener (``gatewayHTTPRoute.parentRefs`` with the listener's ``sectionName``, so the route never lands on 443).

Its namespace enforces Pod Security ``restricted`` (the chart's pods comply).
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import versions
from ..component_args import DNS_LABEL, NON_EMPTY, Args, KeywordArgs, matching
from ..kubernetes_base.common import child_opts, helm_release, metadata, refuse_unless
from ..kubernetes_base.custom_object import KubernetesObject
from ..security import namespace_security
from ..security.namespace_security import RESTRICTED, PodSecurity
from ..versions import CERT_MANAGER_API_VERSION, GATEWAY_API_API_VERSION
from .gateway_config import publishes_services

DEFAULT_NAMESPACE = "cert-manager"
RELEASE_NAME = "cert-manager"
POD_SECURITY = PodSecurity(RESTRICTED, (
    "the cert-manager v1.21.1 chart's controller, webhook, cainjector and startupapicheck meet restricted with its "
    "defaults (securityContext runAsNonRoot + RuntimeDefault seccomp, containerSecurityContext drop ALL)"))
SELF_SIGNED_ISSUER = "gpu-platform-self-signed"
PRIVATE_CA_ISSUER = "gpu-platform-ca"
"""The ClusterIssuer of the platform's private CA."""
PRIVATE_CA_CERTIFICATE = "gpu-platform-ca"
PRIVATE_CA_SECRET = "gpu-platform-ca"
"""The CA's key pair (``tls.crt``, ``tls.key``, ``ca.crt``) in cert-manager's namespace."""
ACME_ISSUER = "gpu-platform-acme"
ACME_ACCOUNT_SECRET = "gpu-platform-acme-account"
"""The ACME account's private key, which cert-manager creates on first use."""
CONTROLLER_CONFIG_API_VERSION = "controller.config.cert-manager.io/v1alpha1"
AMD_STACK_TYPE = "gpuplatform:index:AmdGpuStack"


def cert_manager_values(gateway_api: bool = False) -> dict[str, Any]:
    """cert-manager with its CRDs; with ``gateway_api`` the Gateway API integration (the gateway-shim that issues
    Gateways' listener certificates, and HTTP-01 solving through HTTPRoutes) on."""
    values: dict[str, Any] = {"crds": {"enabled": True}}
    if gateway_api:
        values["config"] = {"apiVersion": CONTROLLER_CONFIG_API_VERSION, "kind": "ControllerConfiguration",
                            "gatewayAPI": {"enabled": True}}
    return values


def private_ca_objects(namespace: str) -> list[dict[str, Any]]:
    """The self-signed issuer, the CA Certificate it signs (in ``namespace``, cert-manager's) and the CA issuer."""
    issuer_ref = {"group": CERT_MANAGER_API_VERSION.split("/")[0], "kind": "ClusterIssuer", "name": SELF_SIGNED_ISSUER}
    return [
        {"apiVersion": CERT_MANAGER_API_VERSION, "kind": "ClusterIssuer", "metadata": metadata(SELF_SIGNED_ISSUER),
         "spec": {"selfSigned": {}}},
        {"apiVersion": CERT_MANAGER_API_VERSION, "kind": "Certificate",
         "metadata": metadata(PRIVATE_CA_CERTIFICATE, namespace),
         "spec": {"isCA": True, "commonName": PRIVATE_CA_CERTIFICATE, "secretName": PRIVATE_CA_SECRET,
                  "privateKey": {"algorithm": "ECDSA", "size": 256}, "issuerRef": issuer_ref}},
        {"apiVersion": CERT_MANAGER_API_VERSION, "kind": "ClusterIssuer", "metadata": metadata(PRIVATE_CA_ISSUER),
         "spec": {"ca": {"secretName": PRIVATE_CA_SECRET}}},
    ]


class AcmeIssuerArgs(TypedDict, total=False):
    """The ACME ClusterIssuer: its account and the Gateway listener its HTTP-01 challenges are answered on."""

    email: Required[str]
    """Contact of the ACME account (expiry notices)."""
    server: str
    """ACME directory URL. Default: Let's Encrypt production."""
    gateway_name: Required[str]
    """Name of the Gateway whose HTTP listener answers the HTTP-01 challenges (`InferenceGateway.gateway_name`)."""
    gateway_namespace: Required[str]
    """Namespace of that Gateway (`InferenceGateway.gateway_namespace`)."""
    section_name: str
    """The Gateway's HTTP listener (port 80, where HTTP-01 is answered). Default ``http``."""


def acme_issuer(acme: AcmeIssuerArgs) -> dict[str, Any]:
    """The ACME ClusterIssuer solving HTTP-01 through the Gateway's HTTP listener."""
    from .gateway_config import LETS_ENCRYPT

    parent = {"group": GATEWAY_API_API_VERSION.split("/")[0], "kind": "Gateway", "name": acme["gateway_name"],
              "namespace": acme["gateway_namespace"], "sectionName": acme.get("section_name", "http")}
    return {"apiVersion": CERT_MANAGER_API_VERSION, "kind": "ClusterIssuer", "metadata": metadata(ACME_ISSUER),
            "spec": {"acme": {"server": acme.get("server", LETS_ENCRYPT), "email": acme["email"],
                              "privateKeySecretRef": {"name": ACME_ACCOUNT_SECRET},
                              "solvers": [{"http01": {"gatewayHTTPRoute": {"parentRefs": [parent]}}}]}}}


def issuer_for(tls: str) -> Optional[str]:
    """The ClusterIssuer a Gateway's HTTPS listener uses for a ``gateway.tls`` mode (None: ``none``)."""
    return {"self-signed": PRIVATE_CA_ISSUER, "acme": ACME_ISSUER}.get(tls)


class CertManagerArgs(TypedDict, total=False):
    """Arguments of `CertManager`. All optional: ``{}`` installs cert-manager alone."""

    namespace: str
    """Namespace of cert-manager (and of the private CA's Secret). Default ``cert-manager``."""
    gateway_api: bool
    """Turn cert-manager's Gateway API integration on (needs the Gateway API CRDs first). Default false."""
    private_ca: bool
    """Create the platform's private CA and its ClusterIssuer `PRIVATE_CA_ISSUER`. Default false."""
    acme: AcmeIssuerArgs
    """Create the ACME ClusterIssuer `ACME_ISSUER` (needs ``gateway_api``). Default none."""
    replaces_amd_stack: str
    """Name of the `AmdGpuStack` (a sibling of this component) that installed cert-manager itself before the
    platform shared one install: its namespace and release are adopted (aliases), not replaced. Default none."""


def checked_args(name: str, args: CertManagerArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument)."""
    checker = Args("CertManager", name)
    checked = checker.check({} if args is None else args, CertManagerArgs, {
        # A component's resource name (part of URNs, not a Kubernetes name): whatever Pulumi takes, the stack's
        # name included (``Team.Azure-amd``).
        "namespace": DNS_LABEL, "replaces_amd_stack": NON_EMPTY,
        "acme.email": matching(r"[^@\s]+@[^@\s]+\.[^@\s]+", "an email address"),
        "acme.server": matching(r"https://[^\s/]+(/\S*)?", "an https URL of an ACME directory"),
        "acme.gateway_namespace": DNS_LABEL, "acme.section_name": DNS_LABEL,
    })
    refuse_unless(checker, checked, "acme", bool(checked.get("gateway_api")), "with gateway_api: true (HTTP-01 "
                                                                             "through the Gateway)")
    return checked


def cert_manager_args(config: Any, amd: bool, amd_stack: str, gateway_name: str, gateway_namespace: str,
                      http_listener: str) -> Optional[CertManagerArgs]:
    """`CertManager` args for a stack (``config`` a `PlatformConfig`), or None when nothing needs certificates: the
    AMD GPU Operator (``amd``: the stack has AMD pools, whose stack ``amd_stack`` installed cert-manager before) and
    the Gateway's HTTPS listener (``gateway.tls`` with ``inference.ingressHost``)."""
    from .gateway_config import https_host

    tls = publishes_services(config) and https_host(config) is not None
    if not (amd or tls):
        return None
    args = CertManagerArgs()
    if tls:
        args["gateway_api"] = True
        if config.gateway.tls == "acme":
            args["acme"] = AcmeIssuerArgs(email=config.gateway.acme_email, server=config.gateway.acme_server,
                                          gateway_name=gateway_name, gateway_namespace=gateway_namespace,
                                          section_name=http_listener)
        else:
            args["private_ca"] = True
    if amd:
        args["replaces_amd_stack"] = amd_stack
    return args


class CertManager(pulumi.ComponentResource, metaclass=KeywordArgs):
    """cert-manager (pinned chart, CRDs included) in a ``restricted`` namespace, with the platform's ClusterIssuers.

    Attributes: ``release`` (depend on it before creating cert-manager objects), ``namespace``, ``cluster_issuer``
    (the ClusterIssuer a Gateway's HTTPS listener should name: the ACME one, else the private CA's; None without
    either), ``issuers`` (the issuer objects).
    """

    release: k8s.helm.v3.Release
    namespace: str

    def __init__(self, name: str, args: CertManagerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:CertManager", name, {}, opts)
        self.namespace = args.get("namespace", DEFAULT_NAMESPACE)
        former = args.get("replaces_amd_stack")
        former_parent = pulumi.create_urn(former, AMD_STACK_TYPE, parent=opts.parent if opts else None) if former \
            else None

        def adopted(old_name: str) -> list[pulumi.Alias]:
            return [pulumi.Alias(name=old_name, parent=former_parent)] if former else []

        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", **namespace_security.namespace_body(self.namespace, POD_SECURITY),
            opts=child_opts(self, opts, aliases=adopted(f"{former}-cert-manager-namespace")))
        self.release = helm_release(
            f"{name}-release", versions.CERT_MANAGER, RELEASE_NAME, self.namespace,
            cert_manager_values(bool(args.get("gateway_api"))),
            child_opts(self, opts, depends_on=[namespace], aliases=adopted(f"{former}-cert-manager")),
            create_namespace=False)
        bodies: list[dict[str, Any]] = []
        self.cluster_issuer: Optional[str] = None
        if args.get("private_ca"):
            bodies += private_ca_objects(self.namespace)
            self.cluster_issuer = PRIVATE_CA_ISSUER
        if args.get("acme"):
            bodies.append(acme_issuer(args["acme"]))
            self.cluster_issuer = ACME_ISSUER
        after_release = child_opts(self, opts, depends_on=[self.release])
        self.issuers = [KubernetesObject(f"{name}-{body['kind'].lower()}-{body['metadata']['name']}", body,
                                         after_release) for body in bodies]
        self.register_outputs({"namespace": self.namespace})
