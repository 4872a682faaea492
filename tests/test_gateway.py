"""The Gateway layer: pins, Helm values against the pinned charts' keys, every body it renders (exact and against the
vendored CRD schemas), who its NetworkPolicies admit, the `gateway` configuration section, and the components under
the mock engine."""

from pathlib import Path

import pytest
from chart_keys import load_keys, unknown_keys
from network_policy_eval import Endpoint, admitted

from gpu_platform import versions
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.plan import render_manifests
from gpu_platform.pools import GpuPool
from gpu_platform.schemas import validate_manifest
from gpu_platform.serving import cert_manager, gateway_values, inference_objects
from gpu_platform.serving import gateway_objects as objects
from gpu_platform.serving.cert_manager import CertManager
from gpu_platform.serving.gateway import InferenceGateway, gateway_args
from gpu_platform.serving.gateway_config import GatewayConfig, publishes_services
from gpu_platform.testing import run_program

KEYS = Path(__file__).parent / "data" / "chart_keys"
RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
ENVOY_LABELS = {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy",
                "app.kubernetes.io/managed-by": "envoy-gateway"}
ENVOY_PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}},
              "podSelector": {"matchLabels": ENVOY_LABELS}}
MANAGED = {"app.kubernetes.io/managed-by": "gpu-platform"}
EG = objects.GatewaySpec(cloud="aws", max_request_body_size="1Mi")
EG_TLS = objects.GatewaySpec(cloud="oci", hostname="sentiment.example.com", cluster_issuer="gpu-platform-acme",
                             acme=True, max_request_body_size="1Mi", inference_pool=True)
GKE = objects.GatewaySpec(cloud="gcp", class_name="gke-l7-regional-external-managed",
                          proxy_source_ranges=("10.9.0.0/23",), hostname="sentiment.example.com",
                          cluster_issuer="gpu-platform-ca")
L4 = GpuPool("l4-infer", "aws", "g6.xlarge", "l4", 1, 24, 0, 2, role="inference")


def chart_keys(chart: versions.Chart) -> dict[str, str]:
    return load_keys(KEYS / f"{chart.name.rsplit('/', 1)[-1]}-{chart.version}.keys")


# ---------------------------------------------------------------------------------------------------------
# Pins and chart values


def test_pins():
    assert versions.ENVOY_GATEWAY.release_args() == {"chart": "oci://docker.io/envoyproxy/gateway-helm",
                                                     "version": "v1.9.0"}
    assert versions.ENVOY_AI_GATEWAY.release_args() == {"chart": "oci://docker.io/envoyproxy/ai-gateway-helm",
                                                        "version": "v1.1.0"}
    assert versions.ENVOY_AI_GATEWAY_CRDS.release_args() == {
        "chart": "oci://docker.io/envoyproxy/ai-gateway-crds-helm", "version": "v1.1.0"}
    assert versions.GATEWAY_API_CRDS_MANIFEST == (
        "https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.1/standard-install.yaml")
    assert versions.ENVOY_GATEWAY_CRDS_MANIFEST == (
        "https://github.com/envoyproxy/gateway/releases/download/v1.9.0/envoy-gateway-crds.yaml")
    assert versions.INFERENCE_POOL_CRDS_MANIFEST == (
        "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/v1.5.0/"
        "v1-manifests.yaml")


def envoy_gateway_keys() -> dict[str, str]:
    """gateway-helm's values keys, with ``config.envoyGateway`` (rendered whole as the EnvoyGateway configuration)
    expanded into the fields of that type."""
    keys = {k: v for k, v in chart_keys(versions.ENVOY_GATEWAY).items() if not k.startswith("config.envoyGateway.")}
    config = load_keys(KEYS / f"gateway-helm-{versions.ENVOY_GATEWAY.version}.envoy-gateway-config.keys")
    return {**keys, **{f"config.envoyGateway.{k}": v for k, v in config.items()}}


@pytest.mark.parametrize("inference_pool", [False, True])
def test_every_values_key_exists_in_the_pinned_charts(inference_pool):
    assert unknown_keys(gateway_values.envoy_gateway_values(inference_pool), envoy_gateway_keys()) == []
    # The chart's own config.envoyGateway keys are fields of the type too (listed, or below an open-map field).
    expanded = envoy_gateway_keys()
    for key in (k for k in chart_keys(versions.ENVOY_GATEWAY) if k.startswith("config.envoyGateway.")):
        parts = key.split(".")
        assert any(".".join(parts[:i]) in expanded and (i == len(parts) or expanded[".".join(parts[:i])] ==
                                                       "open-map") for i in range(3, len(parts) + 1)), key
    assert unknown_keys(gateway_values.ai_gateway_values(), chart_keys(versions.ENVOY_AI_GATEWAY)) == []
    assert unknown_keys(gateway_values.ai_gateway_crds_values(), chart_keys(versions.ENVOY_AI_GATEWAY_CRDS)) == []
    assert unknown_keys(cert_manager.cert_manager_values(True), chart_keys(versions.CERT_MANAGER)) == []


def test_the_key_check_catches_a_wrong_envoy_gateway_key():
    assert unknown_keys({"config": {"envoyGateway": {"extensionManager": {"backendResource": []}}}},
                        envoy_gateway_keys()) == ["config.envoyGateway.extensionManager.backendResource: not in "
                                                  "values.yaml"]


def test_envoy_gateway_values():
    # The chart's experimental Gateway API CRDs stay off: the standard bundle's policy would refuse them.
    assert gateway_values.envoy_gateway_values(False) == {"crds": {"enabled": False}}
    every = {"includeAll": True}
    assert gateway_values.envoy_gateway_values(True) == {"crds": {"enabled": False}, "config": {"envoyGateway": {
        "extensionApis": {"enableBackend": True},
        "extensionManager": {
            "hooks": {"xdsTranslator": {
                "translation": {"listener": every, "route": every, "cluster": every, "secret": every},
                "post": ["Translation", "Cluster", "Route"]}},
            "service": {"fqdn": {"hostname": "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local",
                                 "port": 1063}},
            "backendResources": [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                  "version": "v1"}],
        }}}}
    assert gateway_values.ai_gateway_values() == {"envoyGateway": {"namespace": "envoy-gateway-system"}}


def test_cert_manager_values_turn_the_gateway_api_on():
    assert cert_manager.cert_manager_values() == {"crds": {"enabled": True}}
    assert cert_manager.cert_manager_values(True) == {"crds": {"enabled": True}, "config": {
        "apiVersion": "controller.config.cert-manager.io/v1alpha1", "kind": "ControllerConfiguration",
        "gatewayAPI": {"enabled": True}}}


# ---------------------------------------------------------------------------------------------------------
# Bodies


def test_gateway_http_only():
    body = objects.gateway(EG)
    assert body == {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "inference", "namespace": "gateway", "labels": MANAGED},
        "spec": {"gatewayClassName": "envoy-gateway", "listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {
                "from": "Selector", "selector": {"matchLabels": {"gpu-platform.io/gateway-routes": "true"}}}}}]}}
    assert objects.https_redirect(EG) is None
    assert EG.https_listener == ""


def test_gateway_https_with_cert_manager_and_a_redirect():
    body = objects.gateway(GKE)
    assert body["metadata"]["annotations"] == {"cert-manager.io/cluster-issuer": "gpu-platform-ca"}
    assert body["spec"]["gatewayClassName"] == "gke-l7-regional-external-managed"
    assert body["spec"]["listeners"][1] == {
        "name": "https", "protocol": "HTTPS", "port": 443, "hostname": "sentiment.example.com",
        "tls": {"mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret",
                                                           "name": "inference-gateway-tls"}]},
        "allowedRoutes": {"namespaces": {"from": "Selector",
                                         "selector": {"matchLabels": {"gpu-platform.io/gateway-routes": "true"}}}}}
    assert objects.https_redirect(GKE)["spec"] == {
        "parentRefs": [{"name": "inference", "sectionName": "http"}], "hostnames": ["sentiment.example.com"],
        "rules": [{"filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "https",
                                                                              "statusCode": 301}}]}]}
    with pytest.raises(ValueError, match="cluster_issuer"):
        objects.GatewaySpec(cloud="aws", hostname="x.example.com")


def test_envoy_gateway_class_proxy_and_client_policy():
    assert objects.gateway_class(EG)["spec"] == {
        "controllerName": "gateway.envoyproxy.io/gatewayclass-controller",
        "parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": "platform",
                          "namespace": "envoy-gateway-system"}}
    service = {c: objects.envoy_proxy(objects.GatewaySpec(cloud=c))["spec"]["provider"]["kubernetes"]["envoyService"]
               for c in ("aws", "azure", "oci", "existing")}
    assert service == {
        "aws": {"type": "LoadBalancer", "annotations": {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}},
        "azure": {"type": "LoadBalancer"},
        "oci": {"type": "LoadBalancer", "annotations": {
            "service.beta.kubernetes.io/oci-load-balancer-shape": "flexible",
            "service.beta.kubernetes.io/oci-load-balancer-shape-flex-min": "10",
            "service.beta.kubernetes.io/oci-load-balancer-shape-flex-max": "100"}},
        "existing": {"type": "LoadBalancer"}}
    kubernetes = objects.envoy_proxy(EG)["spec"]["provider"]["kubernetes"]
    assert (kubernetes["envoyDeployment"], kubernetes["envoyPDB"]) == ({"replicas": 2}, {"minAvailable": 1})
    assert objects.client_traffic_policy(EG)["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference"}],
        "timeout": {"http": {"requestReceivedTimeout": "30s"}}, "connection": {"bufferLimit": "1Mi"}}
    assert objects.client_traffic_policy(GKE) is None


def test_data_plane_peers():
    assert objects.data_plane_peers(EG) == [ENVOY_PEER]
    assert objects.data_plane_peers(GKE) == [{"ipBlock": {"cidr": "10.9.0.0/23"}},
                                             {"ipBlock": {"cidr": "35.191.0.0/16"}},
                                             {"ipBlock": {"cidr": "130.211.0.0/22"}}]


def test_route_target_follows_the_listener_and_the_implementation():
    https = objects.route_target(EG_TLS, hostname="sentiment.example.com", request_timeout="10s",
                                 max_request_body_size="1Mi", rate_limit_per_minute=60)
    assert (https.section_name, https.max_request_body_size, https.rate_limit_per_minute) == ("https", "1Mi", 60)
    gke = objects.route_target(GKE, hostname=None, request_timeout="10s", max_request_body_size="1Mi",
                               rate_limit_per_minute=60)
    # GKE has neither limit: dropped, not passed to a policy that does not exist.
    assert (gke.section_name, gke.max_request_body_size, gke.rate_limit_per_minute) == ("https", None, None)
    assert objects.RouteTarget.from_args(https.args()) == https
    with pytest.raises(ValueError, match="no request body limit"):
        objects.RouteTarget("g", "gateway", "http", "gke", rate_limit_per_minute=5)


def every_body() -> list[dict]:
    bodies = [objects.gateway_namespace(EG), objects.envoy_gateway_namespace(), objects.ai_gateway_namespace(),
              *objects.envoy_gateway_network_policies(), *objects.ai_gateway_network_policies()]
    for spec in (EG, EG_TLS, GKE):
        bodies += [objects.gateway(spec), *objects.gateway_network_policies(spec)]
        bodies += [b for b in (objects.https_redirect(spec), objects.client_traffic_policy(spec)) if b]
    bodies += [objects.gateway_class(EG), objects.envoy_proxy(EG), objects.envoy_proxy(objects.GatewaySpec("oci"))]
    for spec in (EG_TLS, GKE):
        target = objects.route_target(spec, hostname="sentiment.example.com", request_timeout="2m",
                                      max_request_body_size="512Ki", rate_limit_per_minute=120)
        bodies.append(objects.http_route(target, "r", "inference", ["/analyze"], "svc", 80))
        bodies += objects.route_policies(target, "r", "inference", "svc", "/readyz", 8080)
    bodies += cert_manager.private_ca_objects("cert-manager")
    bodies.append(cert_manager.acme_issuer({"email": "ops@example.com", "gateway_name": "inference",
                                            "gateway_namespace": "gateway"}))
    return bodies


def test_every_body_matches_its_schema():
    kinds = set()
    for body in every_body():
        validate_manifest(body, "1.34")
        kinds.add(body["kind"])
    assert {"Gateway", "GatewayClass", "HTTPRoute", "EnvoyProxy", "ClientTrafficPolicy", "BackendTrafficPolicy",
            "GCPBackendPolicy", "HealthCheckPolicy", "ClusterIssuer", "Certificate"} <= kinds


def test_the_schemas_refuse_what_upstream_refuses():
    route = objects.http_route(objects.route_target(EG, hostname=None, request_timeout="10s",
                                                    max_request_body_size=None, rate_limit_per_minute=None),
                               "r", "inference", ["/analyze"], "svc", 80)
    route["spec"]["rules"][0]["timeouts"]["request"] = "ten seconds"
    with pytest.raises(Exception, match="timeouts.request"):
        validate_manifest(route, "1.34")
    gateway = objects.gateway(EG)
    gateway["spec"]["listeners"][0]["port"] = 70000
    with pytest.raises(Exception, match="listeners.0.port"):
        validate_manifest(gateway, "1.34")


def test_cluster_issuers():
    selfsigned, ca_certificate, ca = cert_manager.private_ca_objects("cert-manager")
    assert (selfsigned["metadata"]["name"], selfsigned["spec"]) == ("gpu-platform-self-signed", {"selfSigned": {}})
    assert ca_certificate["metadata"]["namespace"] == "cert-manager"
    assert ca_certificate["spec"] == {
        "isCA": True, "commonName": "gpu-platform-ca", "secretName": "gpu-platform-ca",
        "privateKey": {"algorithm": "ECDSA", "size": 256},
        "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "gpu-platform-self-signed"}}
    assert (ca["metadata"]["name"], ca["spec"]) == ("gpu-platform-ca", {"ca": {"secretName": "gpu-platform-ca"}})
    acme = cert_manager.acme_issuer({"email": "ops@example.com", "server": "https://acme.example.com/dir",
                                     "gateway_name": "inference", "gateway_namespace": "gateway",
                                     "section_name": "http"})
    assert acme["spec"] == {"acme": {
        "server": "https://acme.example.com/dir", "email": "ops@example.com",
        "privateKeySecretRef": {"name": "gpu-platform-acme-account"},
        "solvers": [{"http01": {"gatewayHTTPRoute": {"parentRefs": [{
            "group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference", "namespace": "gateway",
            "sectionName": "http"}]}}}]}}
    assert (cert_manager.issuer_for("self-signed"), cert_manager.issuer_for("acme"),
            cert_manager.issuer_for("none")) == ("gpu-platform-ca", "gpu-platform-acme", None)


# ---------------------------------------------------------------------------------------------------------
# Who the policies admit


CLIENT = Endpoint(ip="198.51.100.7")
"""A client on the internet (or the load balancer's node address): outside the pod network."""
ENVOY = Endpoint("envoy-gateway-system", ENVOY_LABELS)
CONTROLLER = Endpoint("envoy-gateway-system", {"control-plane": "envoy-gateway",
                                               "app.kubernetes.io/name": "gateway-helm"})
TENANT = Endpoint("research", {"app.kubernetes.io/name": "notebook"})
SENTIMENT = Endpoint("inference", {"app.kubernetes.io/name": "sentiment"})
ACME_SOLVER = Endpoint("gateway", {"acme.cert-manager.io/http01-solver": "true"})


def inference_policy(spec: objects.GatewaySpec) -> dict:
    target = objects.route_target(spec, hostname=None, request_timeout="10s", max_request_body_size=None,
                                  rate_limit_per_minute=None)
    return inference_objects.network_policy(inference_objects.InferenceSpec(
        pool=L4, route=target, monitoring_namespace="monitoring"))


def test_envoy_gateway_data_plane_and_nothing_else_reaches_the_app():
    policies = [*objects.envoy_gateway_network_policies(), *objects.gateway_network_policies(EG_TLS),
                inference_policy(EG)]
    # Clients reach Envoy's listeners (80 and 443, served on 10080 and 10443), nothing else of the namespace.
    assert admitted(policies, CLIENT, ENVOY, 10080) and admitted(policies, CLIENT, ENVOY, 10443)
    assert not admitted(policies, CLIENT, ENVOY, 19000)
    assert not admitted(policies, CLIENT, CONTROLLER, 18000)
    # Envoy fetches its configuration from the controller; tenants cannot; the API server calls its webhook.
    assert admitted(policies, ENVOY, CONTROLLER, 18000) and not admitted(policies, TENANT, CONTROLLER, 18000)
    assert admitted(policies, Endpoint(ip="172.31.5.10"), CONTROLLER, 9443)
    # Envoy reaches the app and the ACME solver; a tenant or the internet reaches neither.
    assert admitted(policies, ENVOY, SENTIMENT, 8080) and admitted(policies, ENVOY, ACME_SOLVER, 8089)
    for source in (TENANT, CLIENT, CONTROLLER):
        assert not admitted(policies, source, SENTIMENT, 8080), source
        assert not admitted(policies, source, ACME_SOLVER, 8089), source


def test_gke_proxies_and_health_checks_reach_the_app():
    policies = [*objects.gateway_network_policies(GKE), inference_policy(GKE)]
    for proxy in ("10.9.0.17", "35.191.3.4", "130.211.1.2"):
        assert admitted(policies, Endpoint(ip=proxy), SENTIMENT, 8080), proxy
    assert not admitted(policies, CLIENT, SENTIMENT, 8080)
    assert not admitted(policies, ENVOY, SENTIMENT, 8080)


def test_ai_gateway_admits_envoy_gateway_and_the_api_server_only():
    policies = objects.ai_gateway_network_policies()
    ai = Endpoint("envoy-ai-gateway-system", {"app.kubernetes.io/name": "ai-gateway-helm"})
    assert admitted(policies, CONTROLLER, ai, 1063) and admitted(policies, Endpoint(ip="172.31.5.10"), ai, 9443)
    assert not admitted(policies, TENANT, ai, 1063) and not admitted(policies, Endpoint(ip="172.31.5.10"), ai, 1063)


# ---------------------------------------------------------------------------------------------------------
# The `gateway` configuration section


def aws(**top):
    return {"cloud": "aws", "region": "us-west-2", "nodePools": [{"name": "infer", "instanceType": "g6.xlarge"}],
            **top}


def gcp(**top):
    return {"cloud": "gcp", "region": "us-central1", "nodePools": [{"name": "infer", "instanceType": "g2-standard-8"}],
            **top}


def existing(**top):
    return {"cloud": "existing", "networkPolicyEnforced": True,
            "nodePools": [{"name": "infer", "gpuModel": "l4", "gpusPerNode": 1, "minNodes": 1, "maxNodes": 2}], **top}


HOST = {"inference": {"ingressHost": "sentiment.example.com"}}


def test_defaults():
    config = parse_config(aws(), "s")
    assert config.gateway == GatewayConfig()
    assert (config.gateway.tls, config.gateway.request_timeout, config.gateway.body_limit("aws"),
            config.gateway.class_for("aws")) == ("self-signed", "10s", "1Mi", None)
    assert (config.gateway.body_limit("gcp"), config.gateway.class_for("gcp")) == (
        None, "gke-l7-regional-external-managed")
    assert publishes_services(config)
    assert not publishes_services(parse_config(aws(inference={"enabled": False}), "s"))
    assert not publishes_services(parse_config(aws(gateway={"enabled": False}), "s"))


def test_every_key_is_read():
    config = parse_config(aws(gateway={"tls": "acme", "acmeEmail": "ops@example.com",
                                       "acmeServer": "https://acme-staging-v02.api.letsencrypt.org/directory",
                                       "maxRequestBodySize": "512Ki", "requestTimeout": "2m",
                                       "rateLimitPerMinute": 600}, **HOST), "s")
    assert config.gateway == GatewayConfig(
        tls="acme", acme_email="ops@example.com",
        acme_server="https://acme-staging-v02.api.letsencrypt.org/directory", max_request_body_size="512Ki",
        request_timeout="2m", rate_limit_per_minute=600)
    assert parse_config(gcp(gateway={"className": "gke-l7-rilb"}), "s").gateway.class_for("gcp") == "gke-l7-rilb"


@pytest.mark.parametrize(("raw", "message"), [
    (aws(gateway={"tls": "self-signed"}),
     "s: gateway.tls: HTTPS needs a host name for its certificate: set inference.ingressHost, or tls: none"),
    (aws(gateway={"tls": "letsencrypt"}, **HOST),
     "s: gateway.tls: 'letsencrypt' is not one of self-signed, acme, none"),
    (aws(gateway={"tls": "acme"}, **HOST), "s: gateway.acmeEmail: is required with tls: acme (the ACME account's "
                                           "contact)"),
    (aws(gateway={"tls": "acme", "acmeEmail": "ops"}, **HOST), "s: gateway.acmeEmail: 'ops' is not an email address"),
    (aws(gateway={"tls": "acme", "acmeEmail": "ops@example.com", "acmeServer": "http://acme.example.com"}, **HOST),
     "s: gateway.acmeServer: 'http://acme.example.com' is not an https URL of an ACME directory"),
    (aws(gateway={"acmeEmail": "ops@example.com"}, **HOST), "s: gateway.acmeEmail: takes effect only with tls: acme"),
    (aws(gateway={"tls": "acme", "acmeEmail": "ops@example.com"}, inference={"ingressHost": "*.example.com"}),
     "s: gateway.tls: acme issues through HTTP-01, which cannot prove a wildcard host ('*.example.com'); use "
     "self-signed or a host without '*.'"),
    (gcp(gateway={"tls": "acme", "acmeEmail": "ops@example.com"}, **HOST),
     "s: gateway.tls: acme is not available on GKE: cert-manager's HTTP-01 solver route does not attach to a GKE "
     "Gateway (cert-manager/cert-manager#8591); use self-signed"),
    (aws(gateway={"className": "gke-l7-rilb"}),
     "s: gateway.className: chooses a GKE GatewayClass; on other clouds the platform runs Envoy Gateway with its own "
     "class"),
    (gcp(gateway={"className": "gke-l7-global-external-managed"}),
     "s: gateway.className: 'gke-l7-global-external-managed' is not one of gke-l7-regional-external-managed, "
     "gke-l7-rilb; did you mean 'gke-l7-regional-external-managed'?"),
    (gcp(gateway={"maxRequestBodySize": "1Mi"}),
     "s: gateway.maxRequestBodySize: is not available with GKE's Gateway: Google's load balancers have no request "
     "body limit (the app refuses bodies over 1 MiB itself)"),
    (gcp(gateway={"rateLimitPerMinute": 60}),
     "s: gateway.rateLimitPerMinute: is not available with GKE's Gateway: it has no rate limit of its own (attach a "
     "Cloud Armor policy)"),
    (aws(gateway={"maxRequestBodySize": "1MB"}), "s: gateway.maxRequestBodySize: '1MB' is not a size such as 512Ki "
                                                 "or 1Mi"),
    (aws(gateway={"requestTimeout": "1500ms"}), "s: gateway.requestTimeout: '1500ms' is not a duration such as 10s "
                                                "or 2m (whole seconds or minutes)"),
    (aws(gateway={"rateLimitPerMinute": 0}), "s: gateway.rateLimitPerMinute: must be >= 1, got 0"),
    (aws(gateway={"enabled": False, "requestTimeout": "30s"}),
     "s: gateway.requestTimeout: takes effect only with a Gateway (gateway.enabled is false)"),
    (aws(gateway={"hosts": ["a"]}), "s: gateway.hosts: unknown key"),
    (existing(kubernetesVersion="1.32"), "s: gateway: Envoy Gateway v1.9.0 runs on Kubernetes 1.33 or later, not "
                                         "1.32; raise kubernetesVersion, or set gateway.enabled: false"),
])
def test_bad_gateway_configuration_is_one_line(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    assert str(err.value).startswith(message)


def test_old_kubernetes_is_fine_without_a_gateway():
    assert parse_config(existing(kubernetesVersion="1.32", gateway={"enabled": False}), "s").gateway.enabled is False
    assert parse_config(existing(kubernetesVersion="1.32", inference={"enabled": False}),
                        "s").kubernetes_version == "1.32"


def test_gateway_args_from_the_configuration():
    config = parse_config(aws(gateway={"tls": "acme", "acmeEmail": "ops@example.com"}, **HOST), "s")
    assert gateway_args(config, {}) == {"cloud": "aws", "inference_pool": False, "hostname": "sentiment.example.com",
                                        "cluster_issuer": "gpu-platform-acme", "acme": True,
                                        "max_request_body_size": "1Mi"}
    config = parse_config(gcp(**HOST), "s")
    assert gateway_args(config, {"gateway_proxy_cidr": "10.9.0.0/23"}) == {
        "cloud": "gcp", "inference_pool": False, "hostname": "sentiment.example.com",
        "cluster_issuer": "gpu-platform-ca", "acme": False, "class_name": "gke-l7-regional-external-managed",
        "proxy_source_ranges": ["10.9.0.0/23"]}
    assert gateway_args(parse_config(aws(gateway={"tls": "none"}, **HOST), "s"), {}) == {
        "cloud": "aws", "inference_pool": False, "max_request_body_size": "1Mi"}


def test_cert_manager_args_from_the_configuration():
    def args(raw, amd=False):
        return cert_manager.cert_manager_args(parse_config(raw, "s"), amd=amd, amd_stack="s-amd",
                                              gateway_name="inference", gateway_namespace="gateway",
                                              http_listener="http")

    assert args(aws()) is None  # no host: no HTTPS, nothing needs certificates
    assert args(aws(), amd=True) == {"replaces_amd_stack": "s-amd"}
    assert args(aws(**HOST)) == {"gateway_api": True, "private_ca": True}
    assert args(aws(gateway={"tls": "acme", "acmeEmail": "ops@example.com"}, **HOST), amd=True) == {
        "gateway_api": True, "replaces_amd_stack": "s-amd", "acme": {
            "email": "ops@example.com", "server": "https://acme-v02.api.letsencrypt.org/directory",
            "gateway_name": "inference", "gateway_namespace": "gateway", "section_name": "http"}}
    assert args(aws(gateway={"tls": "none"}, **HOST)) is None


# ---------------------------------------------------------------------------------------------------------
# Components under the mock engine


def test_envoy_gateway_component_wiring():
    rec = run_program(lambda: InferenceGateway("gw", {
        "cloud": "oci", "hostname": "sentiment.example.com", "cluster_issuer": "gpu-platform-acme", "acme": True,
        "max_request_body_size": "1Mi", "inference_pool": True}))
    files = {r.name: r.inputs["file"] for r in rec.of_type(CONFIG_FILE)}
    assert files == {"gw-gateway-api-crds": versions.GATEWAY_API_CRDS_MANIFEST,
                     "gw-envoy-gateway-crds": versions.ENVOY_GATEWAY_CRDS_MANIFEST,
                     "gw-inference-pool-crds": versions.INFERENCE_POOL_CRDS_MANIFEST}
    releases = {r.name: r for r in rec.of_type(RELEASE)}
    assert set(releases) == {"gw-envoy-gateway", "gw-ai-gateway-crds", "gw-ai-gateway"}
    envoy_gateway = releases["gw-envoy-gateway"]
    assert (envoy_gateway.inputs["chart"], envoy_gateway.inputs["version"], envoy_gateway.inputs["namespace"],
            envoy_gateway.inputs["skipCrds"], envoy_gateway.inputs["createNamespace"]) == (
        "oci://docker.io/envoyproxy/gateway-helm", "v1.9.0", "envoy-gateway-system", True, False)
    assert envoy_gateway.inputs["values"] == gateway_values.envoy_gateway_values(True)
    # CRDs first; the AI Gateway after Envoy Gateway; the Gateway after its class, CRDs and controllers.
    crds = {r.urn for r in rec.of_type(CONFIG_FILE)}
    assert crds <= set(envoy_gateway.dependencies)
    assert envoy_gateway.urn in releases["gw-ai-gateway"].dependencies
    gateway = rec.one(GATEWAY, "gw-gateway")
    gateway_class = rec.one("kubernetes:gateway.networking.k8s.io/v1:GatewayClass", "gw-gateway-class")
    assert {gateway_class.urn, *crds, envoy_gateway.urn, releases["gw-ai-gateway"].urn} <= set(gateway.dependencies)
    assert gateway.inputs["metadata"]["annotations"] == {"cert-manager.io/cluster-issuer": "gpu-platform-acme"}
    namespaces = {r.inputs["metadata"]["name"] for r in rec.of_type("kubernetes:core/v1:Namespace")}
    assert namespaces == {"gateway", "envoy-gateway-system", "envoy-ai-gateway-system"}
    policies = {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
                for r in rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")}
    assert ("gateway", "allow-gateway-to-acme-solver") in policies
    for obj in render_manifests(rec):
        validate_manifest(obj, "1.34")


def test_component_attributes_are_the_route_contract():
    seen = {}

    def program():
        gw = InferenceGateway("gw", {"cloud": "aws", "max_request_body_size": "1Mi"})
        seen.update(gateway_name=gw.gateway_name, gateway_namespace=gw.gateway_namespace,
                    http_listener=gw.http_listener, https_listener=gw.https_listener,
                    supports_inference_pool=gw.supports_inference_pool, peers=gw.data_plane_peers,
                    ready=len(gw.ready), route=gw.route_args(hostname=None, request_timeout="30s",
                                                             max_request_body_size="1Mi", rate_limit_per_minute=5))
    run_program(program)
    assert seen == {
        "gateway_name": "inference", "gateway_namespace": "gateway", "http_listener": "http", "https_listener": "",
        "supports_inference_pool": False, "peers": [ENVOY_PEER],
        # Gateway API and Envoy Gateway CRDs, Envoy Gateway's release, the GatewayClass, the Gateway.
        "ready": 5,
        "route": {"gateway_name": "inference", "gateway_namespace": "gateway", "section_name": "http",
                  "implementation": "envoy-gateway", "request_timeout": "30s", "data_plane_peers": [ENVOY_PEER],
                  "max_request_body_size": "1Mi", "rate_limit_per_minute": 5, "inference_pool": False}}


def test_gke_component_is_the_gateway_alone():
    rec = run_program(lambda: InferenceGateway("gw", {
        "cloud": "gcp", "class_name": "gke-l7-rilb", "proxy_source_ranges": ["10.9.0.0/23"]}))
    assert rec.of_type(RELEASE) == [] and rec.of_type(CONFIG_FILE) == []
    kinds = sorted(o["kind"] for o in render_manifests(rec))
    assert kinds == ["Gateway", "Namespace", "NetworkPolicy"]
    assert rec.one(GATEWAY).inputs["spec"]["gatewayClassName"] == "gke-l7-rilb"


@pytest.mark.parametrize(("args", "message"), [
    ({"cloud": "gcp", "proxy_source_ranges": ["10.9.0.0/23"]},
     "class_name: is required on GKE: the GatewayClass, one of gke-l7-regional-external-managed, gke-l7-rilb"),
    ({"cloud": "gcp", "class_name": "gke-l7-rilb"},
     "proxy_source_ranges: is required on GKE: the region's proxy-only subnet, which GKE's proxies connect from"),
    ({"cloud": "aws", "class_name": "gke-l7-rilb"},
     "class_name: takes effect only on GKE (elsewhere the platform runs Envoy Gateway)"),
    ({"cloud": "gcp", "class_name": "gke-l7-rilb", "proxy_source_ranges": ["10.9.0.0/23"],
      "max_request_body_size": "1Mi"},
     "max_request_body_size: takes effect only with Envoy Gateway (GKE's load balancers have no body limit)"),
    ({"cloud": "aws", "hostname": "sentiment.example.com"},
     "cluster_issuer: is required with hostname (the HTTPS listener's certificate)"),
    ({"cloud": "aws", "cluster_issuer": "gpu-platform-ca"},
     "cluster_issuer: takes effect only with hostname (the HTTPS listener)"),
    ({"cloud": "aws", "max_request_body_size": "2 MB"}, "max_request_body_size: '2 MB' is not a size such as 512Ki "
                                                        "or 1Mi"),
    ({"cloud": "azrue"}, "cloud: 'azrue' is not one of aws, azure, gcp, oci, existing; did you mean 'azure'?"),
])
def test_bad_gateway_args_are_one_line_before_anything_is_registered(args, message):
    with pytest.raises(ConfigError) as err:
        run_program(lambda: InferenceGateway("gw", args))
    assert str(err.value) == f"InferenceGateway gw: {message}"


def test_cert_manager_component_issuers_and_adoption(monkeypatch):
    aliases, urns = [], []
    real_alias, real_urn = cert_manager.pulumi.Alias, cert_manager.pulumi.create_urn
    monkeypatch.setattr(cert_manager.pulumi, "Alias", lambda **kw: aliases.append(kw) or real_alias(**kw))
    monkeypatch.setattr(cert_manager.pulumi, "create_urn",
                        lambda name, type_, parent=None: urns.append((name, type_)) or real_urn(name, type_, parent))
    rec = run_program(lambda: CertManager("cm", {"gateway_api": True, "private_ca": True,
                                                 "replaces_amd_stack": "s-amd"}))
    release = rec.one(RELEASE, "cm-release")
    assert release.inputs["values"] == cert_manager.cert_manager_values(True)
    issuers = {(r.type.rsplit(":", 1)[-1], r.inputs["metadata"]["name"]) for r in rec.children_of(
        rec.one("gpuplatform:index:CertManager", "cm")) if "cert-manager.io" in r.type}
    assert issuers == {("ClusterIssuer", "gpu-platform-self-signed"), ("Certificate", "gpu-platform-ca"),
                       ("ClusterIssuer", "gpu-platform-ca")}
    for issuer in rec.of_type("kubernetes:cert-manager.io/v1:ClusterIssuer"):
        assert release.urn in issuer.dependencies
    # The namespace and release the AMD stack made before are adopted, not replaced.
    assert urns == [("s-amd", "gpuplatform:index:AmdGpuStack")]
    assert [a["name"] for a in aliases] == ["s-amd-cert-manager-namespace", "s-amd-cert-manager"]
    for obj in render_manifests(rec):
        validate_manifest(obj, "1.34")


def test_acme_issuer_needs_the_gateway_api():
    with pytest.raises(ConfigError) as err:
        run_program(lambda: CertManager("cm", {"acme": {"email": "ops@example.com", "gateway_name": "inference",
                                                        "gateway_namespace": "gateway"}}))
    assert str(err.value) == ("CertManager cm: acme: takes effect only with gateway_api: true (HTTP-01 through the "
                              "Gateway)")
