"""``gateway``: the Gateway API entry point in front of the stack's inference services (typed, validated).

Every stack that publishes a service (the sentiment app, the LLM service) gets one Gateway: GKE's managed Gateway
controller on ``gcp``, Envoy Gateway everywhere else (`kube.gateway_objects` says why). The section tunes it:

- ``enabled`` (default true): false publishes nothing; the services stay reachable inside the cluster only.
- ``className`` (GKE only): ``gke-l7-regional-external-managed`` (default, an internet-facing regional Application
  Load Balancer) or ``gke-l7-rilb`` (an internal one, reachable from the VPC only). Both are regional classes, the
  ones GKE's Inference Gateway (InferencePool backends) supports, and both use the region's proxy-only subnet.
- ``tls``: ``self-signed`` (default: a private CA the platform's cert-manager keeps, clients trust its ``ca.crt``),
  ``acme`` (a public certificate from an ACME CA such as Let's Encrypt, HTTP-01 through the Gateway; needs
  ``acmeEmail``) or ``none``. HTTPS needs a host name: it takes effect with ``inference.ingressHost``, and a ``tls``
  given without one is refused.
- ``maxRequestBodySize`` (default ``1Mi``, the app's own limit): larger bodies get 413 at the gateway. Envoy
  Gateway only: Google's load balancers have no body limit (the app refuses bodies over 1 MiB itself).
- ``requestTimeout`` (default ``10s``): the sentiment app's route answers 504 when the app takes longer (the app's
  deadline is 1 s; the rest covers a cold replica). The LLM service sets its own.
- ``rateLimitPerMinute`` (default none): requests per minute the sentiment app's route admits per Envoy replica
  (429 above). Envoy Gateway only: GKE's Gateway has no rate limit of its own (Cloud Armor is the tool there).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import ConfigError

TLS_MODES = ("self-signed", "acme", "none")
GKE_CLASSES = ("gke-l7-regional-external-managed", "gke-l7-rilb")
"""GKE GatewayClasses the platform offers: the regional ones (proxy-only subnet, InferencePool backends)."""
GKE_DEFAULT_CLASS = GKE_CLASSES[0]
LETS_ENCRYPT = "https://acme-v02.api.letsencrypt.org/directory"
DEFAULT_MAX_REQUEST_BODY_SIZE = "1Mi"
"""The app's own ``MAX_BODY_BYTES`` (1 MiB)."""
DEFAULT_REQUEST_TIMEOUT = "10s"
KEYS = {"enabled", "className", "tls", "acmeEmail", "acmeServer", "maxRequestBodySize", "requestTimeout",
        "rateLimitPerMinute"}
BODY_SIZE = re.compile(r"^[1-9][0-9]{0,5}(Ki|Mi)$")
TIMEOUT = re.compile(r"^[1-9][0-9]{0,3}(s|m)$")
"""Whole seconds or minutes: a Gateway API duration that GKE's GCPBackendPolicy (whole seconds) can take too."""
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
HTTPS_URL = re.compile(r"^https://[^\s/]+(/\S*)?$")


@dataclass(frozen=True)
class GatewayConfig:
    """``gateway``: the stack's Gateway (Gateway API), its controller and TLS."""

    enabled: bool = True
    """Publish the inference services through a Gateway (whenever the stack deploys one)."""
    class_name: Optional[str] = None
    """``className`` (GKE only): the GatewayClass, ``gke-l7-regional-external-managed`` (internet-facing, the default)
    or ``gke-l7-rilb`` (internal: reachable from the VPC only). Elsewhere the platform runs Envoy Gateway with its own
    class."""
    tls: str = "self-signed"
    """``self-signed`` (a private CA the platform's cert-manager keeps), ``acme`` (a public certificate through
    HTTP-01; not on GKE) or ``none``. HTTPS takes effect with ``inference.ingressHost``, its certificate's name."""
    acme_email: Optional[str] = None
    """``acmeEmail``: the ACME account's contact (required with ``tls: acme``)."""
    acme_server: str = LETS_ENCRYPT
    """``acmeServer``: the ACME directory URL. Default: Let's Encrypt production."""
    max_request_body_size: Optional[str] = None
    """``maxRequestBodySize``: largest request body the gateway forwards (``Ki``/``Mi``). Default ``1Mi`` with Envoy
    Gateway; refused on GKE."""
    request_timeout: str = DEFAULT_REQUEST_TIMEOUT
    """``requestTimeout``: longest the sentiment app's route waits for an answer (``<n>s`` or ``<n>m``)."""
    rate_limit_per_minute: Optional[int] = None
    """``rateLimitPerMinute``: requests per minute the sentiment app's route admits per Envoy replica (none: no
    limit); refused on GKE."""

    def class_for(self, cloud: str) -> Optional[str]:
        """The GKE GatewayClass (the configured one or the default); None off GKE (the platform names its own)."""
        return (self.class_name or GKE_DEFAULT_CLASS) if cloud == "gcp" else None

    def body_limit(self, cloud: str) -> Optional[str]:
        """The request body limit the gateway enforces: the configured one or the default with Envoy Gateway, None
        on GKE (no such setting)."""
        return None if cloud == "gcp" else self.max_request_body_size or DEFAULT_MAX_REQUEST_BODY_SIZE


def https_host(config: Any) -> Optional[str]:
    """The host name the Gateway serves HTTPS for (``inference.ingressHost``), or None: no HTTPS listener (no host, or
    ``tls: none``). ``config`` is a `PlatformConfig`."""
    if config.gateway.tls == "none":
        return None
    return config.inference.ingress_host


def publishes_services(config: Any) -> bool:
    """Whether the stack gets a Gateway: the gateway is on and the stack deploys the sentiment app or an LLM service.
    ``config`` is a `PlatformConfig` (the cloud layer asks too: GKE's Gateway API and proxy-only subnet follow it)."""
    return config.gateway.enabled and (config.inference.enabled or getattr(config, "llm", None) is not None)


def _gke_refuses(sec: Mapping, cloud: str, key: str, why: str) -> None:
    if cloud == "gcp" and sec.get(key) is not None:
        raise ConfigError(f"gateway.{key}", f"is not available with GKE's Gateway: {why}")


def parse_gateway(raw: Mapping, cloud: str) -> GatewayConfig:
    """The ``gateway`` section of a stack's configuration (``raw`` is the whole stack configuration: the TLS keys
    are checked against ``inference.ingressHost`` and the Kubernetes version against Envoy Gateway's)."""
    from ..fields import as_mapping, check_keys, join, read_bool, read_enum, read_int, read_str
    from ..fields import section as _section

    sec, path = _section(raw, "gateway"), "gateway"
    check_keys(sec, KEYS, path)
    enabled = read_bool(sec, "enabled", path, True)
    class_name = read_enum(sec, "className", path, GKE_CLASSES, None)
    if class_name is not None and cloud != "gcp":
        raise ConfigError(join(path, "className"), "chooses a GKE GatewayClass; on other clouds the platform runs "
                                                   "Envoy Gateway with its own class")
    tls = read_enum(sec, "tls", path, TLS_MODES, "self-signed")
    host = as_mapping(raw.get("inference") or {}, "inference").get("ingressHost")  # checked by parse_inference
    if sec.get("tls") is not None and tls != "none" and not host:
        raise ConfigError(join(path, "tls"), "HTTPS needs a host name for its certificate: set inference.ingressHost, "
                                             "or tls: none")
    email = read_str(sec, "acmeEmail", path, None)
    server = read_str(sec, "acmeServer", path, LETS_ENCRYPT)
    for key in ("acmeEmail", "acmeServer"):
        if sec.get(key) is not None and tls != "acme":
            raise ConfigError(join(path, key), "takes effect only with tls: acme")
    if tls == "acme":
        if cloud == "gcp":
            raise ConfigError(join(path, "tls"), "acme is not available on GKE: cert-manager's HTTP-01 solver route "
                                                 "does not attach to a GKE Gateway (cert-manager/cert-manager#8591); "
                                                 "use self-signed")
        if email is None:
            raise ConfigError(join(path, "acmeEmail"), "is required with tls: acme (the ACME account's contact)")
        if not EMAIL.match(email):
            raise ConfigError(join(path, "acmeEmail"), f"'{email}' is not an email address")
        if not HTTPS_URL.match(server):
            raise ConfigError(join(path, "acmeServer"), f"'{server}' is not an https URL of an ACME directory")
        if str(host).startswith("*."):
            raise ConfigError(join(path, "tls"), f"acme issues through HTTP-01, which cannot prove a wildcard "
                                                 f"host ('{host}'); use self-signed or a host without '*.'")
    _gke_refuses(sec, cloud, "maxRequestBodySize", "Google's load balancers have no request body limit (the app "
                                                   "refuses bodies over 1 MiB itself)")
    _gke_refuses(sec, cloud, "rateLimitPerMinute", "it has no rate limit of its own (attach a Cloud Armor policy)")
    body = read_str(sec, "maxRequestBodySize", path, None)
    if body is not None and not BODY_SIZE.match(body):
        raise ConfigError(join(path, "maxRequestBodySize"), f"'{body}' is not a size such as 512Ki or 1Mi")
    timeout = read_str(sec, "requestTimeout", path, DEFAULT_REQUEST_TIMEOUT)
    if not TIMEOUT.match(timeout):
        raise ConfigError(join(path, "requestTimeout"), f"'{timeout}' is not a duration such as 10s or 2m (whole "
                                                        "seconds or minutes)")
    rate = read_int(sec, "rateLimitPerMinute", path, None, minimum=1)
    inference = as_mapping(raw.get("inference") or {}, "inference")
    if enabled and cloud != "gcp" and (inference.get("enabled", True) is not False or raw.get("llm") is not None):
        _check_kubernetes(raw)
    given = [k for k in sorted(KEYS - {"enabled"}) if sec.get(k) is not None]
    if not enabled and given:
        raise ConfigError(join(path, given[0]), "takes effect only with a Gateway (gateway.enabled is false)")
    return GatewayConfig(enabled=enabled, class_name=class_name, tls=tls, acme_email=email, acme_server=server,
                         max_request_body_size=body, request_timeout=timeout, rate_limit_per_minute=rate)


def _check_kubernetes(raw: Mapping) -> None:
    """Envoy Gateway's Kubernetes floor. A version the EKS layer has no add-on pins for is left to it: its error names
    the versions it supports."""
    from ..upgrades.kubernetes_versions import default_minor
    from ..versions import EKS_ADDONS, ENVOY_GATEWAY, ENVOY_GATEWAY_MIN_KUBERNETES

    version = str(raw.get("kubernetesVersion") or default_minor())
    if raw.get("cloud") == "aws" and version not in EKS_ADDONS:
        return
    minor = version.split(".")[-1]
    if minor.isdigit() and int(minor) < int(ENVOY_GATEWAY_MIN_KUBERNETES.split(".")[1]):
        raise ConfigError("gateway", f"Envoy Gateway {ENVOY_GATEWAY.version} runs on Kubernetes "
                                     f"{ENVOY_GATEWAY_MIN_KUBERNETES} or later, not {version}; raise "
                                     "kubernetesVersion, or set gateway.enabled: false")


def seconds(duration: str) -> int:
    """A ``requestTimeout`` (``<n>s`` or ``<n>m``) in seconds."""
    return int(duration[:-1]) * (60 if duration.endswith("m") else 1)
