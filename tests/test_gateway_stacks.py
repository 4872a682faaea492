"""The Gateway in whole platforms: every reference stack that publishes the sentiment app plans a Gateway, its
HTTPRoute and a conformant controller, all valid against the upstream schemas, and nothing of ingress-nginx; every
``gateway`` key (and ``inference.ingressHost``, ``proxyOnlyCidr``) changes what is planned; GKE's cluster turns the
Gateway API on and gets its proxy-only subnet."""

import json

import pytest
from conftest import planned_stack

from gpu_platform import plan
from gpu_platform.config import parse_config, strip_namespace
from gpu_platform.errors import ConfigError
from gpu_platform.plan import render_manifests
from gpu_platform.platform import GpuPlatform
from gpu_platform.schemas import validate_manifest
from gpu_platform.testing import run_program

STACKS = plan.discover_stacks()
RELEASE = "kubernetes:helm.sh/v3:Release"
PUBLISHING = sorted(s for s, path in STACKS.items()
                    if parse_config(strip_namespace(plan.load_stack_file(path)), s).inference.enabled)


@pytest.fixture(scope="module")
def planned():
    return {stack: planned_stack(stack) for stack in STACKS}


def test_the_reference_stacks_that_publish():
    # gcp-tpu runs no inference app (no TPU image), nor does the MultiKueue manager mk-manager: no Gateway either.
    assert set(STACKS) - set(PUBLISHING) == {"gcp-tpu", "mk-manager"}


@pytest.mark.parametrize("stack", PUBLISHING)
def test_stack_plans_a_gateway_a_route_and_a_controller(planned, stack):
    result = planned[stack]
    assert result.errors == []
    gateways = [m for m in result.manifests if m["kind"] == "Gateway"]
    assert [(g["metadata"]["namespace"], g["metadata"]["name"]) for g in gateways] == [("gateway", "inference")]
    (route,) = [m for m in result.manifests if m["kind"] == "HTTPRoute" and m["metadata"]["name"] == "sentiment"]
    assert route["metadata"]["namespace"] == "inference"
    assert [(p["name"], p["namespace"]) for p in route["spec"]["parentRefs"]] == [("inference", "gateway")]
    assert route["spec"]["rules"][0]["backendRefs"] == [{"name": "sentiment", "port": 80}]
    releases = {r.inputs["chart"]: r.inputs for r in result.recording.of_type(RELEASE)}
    if result.config.cloud == "gcp":
        # GKE's managed controller: on in the cluster, the class its conformance report was run with.
        cluster = result.recording.one("gcp:container/cluster:Cluster").inputs
        assert cluster["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
        assert gateways[0]["spec"]["gatewayClassName"] == "gke-l7-regional-external-managed"
        assert "oci://docker.io/envoyproxy/gateway-helm" not in releases
        kinds = {m["kind"] for m in result.manifests if m["metadata"].get("namespace") == "inference"}
        assert {"GCPBackendPolicy", "HealthCheckPolicy"} <= kinds
    else:
        envoy_gateway = releases["oci://docker.io/envoyproxy/gateway-helm"]
        assert (envoy_gateway["version"], envoy_gateway["skipCrds"]) == ("v1.9.0", True)
        (gateway_class,) = [m for m in result.manifests if m["kind"] == "GatewayClass"]
        assert gateway_class["spec"]["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
        assert gateways[0]["spec"]["gatewayClassName"] == gateway_class["metadata"]["name"]
        crds = {r.inputs["file"] for r in result.recording.of_type("kubernetes:yaml/v2:ConfigFile")}
        assert "https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.1/standard-install.yaml" in crds
    for obj in result.manifests:
        if obj["apiVersion"].startswith(("gateway.", "networking.gke.io", "cert-manager.io")):
            validate_manifest(obj, result.config.kubernetes_version)


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_nothing_of_ingress_nginx_anywhere(planned, stack):
    result = planned[stack]
    assert not [m for m in result.manifests if m["kind"] in ("Ingress", "IngressClass")]
    text = json.dumps(plan.plan_json(result)) + json.dumps(result.manifests)
    assert "ingress-nginx" not in text and "nginx.ingress.kubernetes.io" not in text


# ---------------------------------------------------------------------------------------------------------
# Every key reaches a resource


def aws(**top):
    return {"cloud": "aws", "region": "us-west-2", "nodePools": [{"name": "infer", "instanceType": "g6.xlarge"}],
            "monitoring": {"enabled": False}, "optimizer": {"enabled": False}, "training": {"enabled": False},
            "autoscaling": {"vpa": False}, "scheduling": {"kueue": False}, **top}


def gcp(**top):
    return {**aws(**top), "cloud": "gcp", "region": "us-central1",
            "nodePools": [{"name": "infer", "instanceType": "g2-standard-8"}]}


def build(raw):
    """(manifests, Helm release inputs by release name, recording) of a whole platform."""
    config = parse_config(raw, "s")
    rec = run_program(lambda: GpuPlatform("s", config), stack="s")
    return render_manifests(rec), {r.inputs["name"]: r.inputs for r in rec.of_type(RELEASE)}, rec


def find(manifests, kind, name=None):
    found = [m for m in manifests if m["kind"] == kind and (name is None or m["metadata"]["name"] == name)]
    return found[0] if len(found) == 1 else found


HOST = {"inference": {"ingressHost": "sentiment.example.com"}}


def test_defaults_publish_over_http_with_envoy_gateway():
    manifests, releases, _ = build(aws())
    assert "cert-manager" not in releases  # no host: no HTTPS, no certificates
    gateway = find(manifests, "Gateway")
    assert [listener["name"] for listener in gateway["spec"]["listeners"]] == ["http"]
    route = find(manifests, "HTTPRoute", "sentiment")
    assert route["spec"]["rules"][0]["timeouts"] == {"request": "10s"}
    assert find(manifests, "BackendTrafficPolicy")["spec"]["requestBuffer"] == {"limit": "1Mi"}


def test_ingress_host_turns_https_on_with_the_private_ca():
    manifests, releases, rec = build(aws(**HOST))
    gateway = find(manifests, "Gateway")
    assert [listener["name"] for listener in gateway["spec"]["listeners"]] == ["http", "https"]
    assert gateway["metadata"]["annotations"] == {"cert-manager.io/cluster-issuer": "gpu-platform-ca"}
    assert releases["cert-manager"]["values"]["config"]["gatewayAPI"] == {"enabled": True}
    assert {m["metadata"]["name"] for m in manifests if m["kind"] == "ClusterIssuer"} == {
        "gpu-platform-self-signed", "gpu-platform-ca"}
    route = find(manifests, "HTTPRoute", "sentiment")
    assert (route["spec"]["hostnames"], route["spec"]["parentRefs"][0]["sectionName"]) == (
        ["sentiment.example.com"], "https")
    assert find(manifests, "HTTPRoute", "https-redirect")["spec"]["hostnames"] == ["sentiment.example.com"]
    # cert-manager watches Gateways from its start: it comes after the Gateway API CRDs.
    crds = rec.one("kubernetes:yaml/v2:ConfigFile", "s-gateway-gateway-api-crds")
    assert crds.urn in rec.one(RELEASE, "s-cert-manager-release").dependencies


@pytest.mark.parametrize(("gateway", "check"), [
    ({"tls": "none"}, lambda m, r: [x["name"] for x in find(m, "Gateway")["spec"]["listeners"]] == ["http"]
     and "cert-manager" not in r),
    ({"tls": "acme", "acmeEmail": "ops@example.com", "acmeServer": "https://acme.example.com/directory"},
     lambda m, r: find(m, "ClusterIssuer", "gpu-platform-acme")["spec"]["acme"]["server"] ==
     "https://acme.example.com/directory" and find(m, "ClusterIssuer", "gpu-platform-acme")["spec"]["acme"]["email"]
     == "ops@example.com" and find(m, "NetworkPolicy", "allow-gateway-to-acme-solver") != []),
    ({"maxRequestBodySize": "256Ki"}, lambda m, r: find(m, "BackendTrafficPolicy")["spec"]["requestBuffer"] ==
     {"limit": "256Ki"} and find(m, "ClientTrafficPolicy")["spec"]["connection"] == {"bufferLimit": "256Ki"}),
    ({"requestTimeout": "45s"}, lambda m, r: find(m, "HTTPRoute", "sentiment")["spec"]["rules"][0]["timeouts"] ==
     {"request": "45s"}),
    ({"rateLimitPerMinute": 120}, lambda m, r: find(m, "BackendTrafficPolicy")["spec"]["rateLimit"] ==
     {"local": {"rules": [{"limit": {"requests": 120, "unit": "Minute"}}]}}),
    ({"enabled": False}, lambda m, r: find(m, "Gateway") == [] and find(m, "HTTPRoute") == []
     and "envoy-gateway" not in r),
])
def test_each_gateway_key_changes_the_plan(gateway, check):
    manifests, releases, _ = build(aws(gateway=gateway, **HOST))
    assert check(manifests, releases)


def test_gke_keys_reach_the_gateway_the_cluster_and_the_policies():
    manifests, releases, rec = build(gcp(gateway={"className": "gke-l7-rilb", "requestTimeout": "2m"}))
    assert find(manifests, "Gateway")["spec"]["gatewayClassName"] == "gke-l7-rilb"
    assert find(manifests, "GCPBackendPolicy")["spec"]["default"] == {"timeoutSec": 120}
    assert "envoy-gateway" not in releases
    subnet = next(r.inputs for r in rec.of_type("gcp:compute/subnetwork:Subnetwork") if r.name == "s-proxy-only")
    assert (subnet["ipCidrRange"], subnet["purpose"], subnet["role"]) == ("10.9.0.0/23", "REGIONAL_MANAGED_PROXY",
                                                                          "ACTIVE")
    peers = find(manifests, "NetworkPolicy", "sentiment")["spec"]["ingress"][0]["from"]
    assert {"ipBlock": {"cidr": "10.9.0.0/23"}} in peers
    manifests, _, rec = build(gcp(proxyOnlyCidr="10.200.0.0/24"))
    subnet = next(r.inputs for r in rec.of_type("gcp:compute/subnetwork:Subnetwork") if r.name == "s-proxy-only")
    assert subnet["ipCidrRange"] == "10.200.0.0/24"
    assert {"ipBlock": {"cidr": "10.200.0.0/24"}} in find(manifests, "NetworkPolicy", "sentiment")["spec"][
        "ingress"][0]["from"]


def test_gke_without_a_gateway_has_no_gateway_api_and_no_proxy_subnet():
    _, _, rec = build(gcp(gateway={"enabled": False}))
    assert rec.one("gcp:container/cluster:Cluster").inputs.get("gatewayApiConfig") is None
    assert [r.name for r in rec.of_type("gcp:compute/subnetwork:Subnetwork") if "proxy" in r.name] == []


@pytest.mark.parametrize(("raw", "message"), [
    (gcp(proxyOnlyCidr="10.9.0.0/27"), "s: proxyOnlyCidr: '10.9.0.0/27' is too small: a proxy-only subnet is a /26 "
                                       "or larger (a /23 is recommended)"),
    (gcp(proxyOnlyCidr="10.8.0.0/23"), "s: proxyOnlyCidr: '10.8.0.0/23' overlaps serviceCidr (10.8.0.0/20)"),
    (gcp(proxyOnlyCidr="10.9.0.0/23", gateway={"enabled": False}),
     "s: proxyOnlyCidr: takes effect only with a Gateway (the stack publishes no service, or gateway.enabled is "
     "false)"),
    (gcp(network="shared", subnetwork="nodes"),
     "s: proxyOnlyCidr: is required with an existing network: the range of its proxy-only subnet (purpose "
     "REGIONAL_MANAGED_PROXY) in us-central1, which the Gateway's proxies connect from"),
])
def test_proxy_only_cidr_guards(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    assert str(err.value) == message


@pytest.mark.parametrize(("args", "message"), [
    ({"proxy_only_cidr": "10.9.0.0/23"},
     "proxy_only_cidr: takes effect only with gateway_api: true (the regional Gateway's proxies)"),
    ({"gateway_api": True, "network": "shared", "subnetwork": "nodes", "proxy_only_cidr": "10.9.0.0/23"},
     "proxy_only_cidr: applies only to a new VPC; the given subnetwork has its own ranges"),
])
def test_gke_cluster_proxy_only_args(args, message):
    from gpu_platform.clouds.gcp.cluster import check_cluster_args

    with pytest.raises(ConfigError) as err:
        check_cluster_args("c", {"region": "us-central1", **args})
    assert str(err.value) == f"GkeCluster c: {message}"
