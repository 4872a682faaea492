"""How components are wired together (issue 38): a misuse that spans two components is refused when the second one is
constructed, in one line naming both ends, before any resource is registered."""

import json

import pytest
from conftest import refused

from gpu_platform.errors import ConfigError
from gpu_platform.health.gpu_health import GpuHealth
from gpu_platform.pools import GpuPool
from gpu_platform.serving import gateway_objects
from gpu_platform.serving.gateway import InferenceGateway
from gpu_platform.serving.llm import LlmService
from gpu_platform.serving.workloads import InferenceService
from gpu_platform.testing import run_program

L4 = GpuPool("l4", "aws", "g6.2xlarge", "l4", 1, 24, 1, 4, vcpus_per_node=8, memory_gib_per_node=32)
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
HTTPROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"


def refusal(build) -> str:
    """The error line of ``build()`` under the mock engine; nothing of the refused component registered."""
    message, registered = refused(build)
    assert "\n" not in message
    return message + "|" + ",".join(sorted(registered))

def gateway_then(service, **gateway_args):
    """A program: an InferenceGateway on AWS, then ``service(gateway)``."""
    def build():
        gateway = InferenceGateway("edge", {"cloud": "aws", **gateway_args})
        service(gateway)
    return build


# ---------------------------------------------------------------------------------------------------------
# The gateway and the services routed to it agree


def test_the_gateways_route_args_carry_what_the_services_check():
    made = {}
    run_program(lambda: made.setdefault("gw", InferenceGateway("edge", {
        "cloud": "aws", "hostname": "chat.example.com", "cluster_issuer": "letsencrypt"})))
    assert made["gw"].route_args() == {
        "gateway_name": "inference", "gateway_namespace": "gateway", "section_name": "https",
        "implementation": "envoy-gateway", "request_timeout": "10s",
        "data_plane_peers": made["gw"].route_args()["data_plane_peers"],
        "listener_hostname": "chat.example.com", "inference_pool": False}
    made.clear()
    run_program(lambda: made.setdefault("gw", InferenceGateway("edge", {"cloud": "aws", "inference_pool": True})))
    args = made["gw"].route_args()
    assert (args["section_name"], args["inference_pool"], "listener_hostname" in args) == ("http", True, False)


def test_an_llm_routed_to_a_gateway_without_the_inference_pool_is_refused():
    line = refusal(gateway_then(lambda gw: LlmService("chat", {"pool": L4.spec(), "model": MODEL,
                                                               "route": gw.route_args()})))
    message, registered = line.split("|")
    assert message == (
        "LlmService chat: route.inference_pool: the InferenceGateway 'gateway/inference' has no inference pool to "
        "route the LlmService's InferencePool through: give it inference_pool: true")
    assert "chat-deployment" not in registered and "edge-gateway" in registered


def test_an_llm_routed_to_a_gateway_with_the_inference_pool_gets_its_route():
    rec = run_program(gateway_then(lambda gw: LlmService("chat", {"pool": L4.spec(), "model": MODEL,
                                                                  "route": gw.route_args()}), inference_pool=True))
    route = rec.one(HTTPROUTE, "chat-route").inputs["spec"]
    assert route["parentRefs"][0] == {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference",
                                      "namespace": "gateway", "sectionName": "http"}


@pytest.mark.parametrize("service", ["llm", "inference"])
def test_a_route_hostname_the_listener_does_not_serve_is_refused(service):
    def build(gw):
        route = gw.route_args(hostname="other.example.com")
        if service == "llm":
            LlmService("chat", {"pool": L4.spec(), "model": MODEL, "route": route})
        else:
            InferenceService("chat", {"pool": L4.spec(), "route": route})

    message = refusal(gateway_then(build, hostname="chat.example.com", cluster_issuer="letsencrypt",
                                   inference_pool=True)).split("|")[0]
    component = "LlmService" if service == "llm" else "InferenceService"
    assert message == (
        f"{component} chat: route.hostname: 'other.example.com' is not served by listener 'https' of the "
        "InferenceGateway 'gateway/inference' (its hostname is 'chat.example.com'): the route would never attach")


def test_a_route_hostname_the_listener_serves_is_taken():
    rec = run_program(gateway_then(lambda gw: InferenceService("chat", {
        "pool": L4.spec(), "route": gw.route_args(hostname="chat.example.com")}),
        hostname="chat.example.com", cluster_issuer="letsencrypt"))
    assert rec.one(HTTPROUTE, "chat-http-route").inputs["spec"]["hostnames"] == ["chat.example.com"]


@pytest.mark.parametrize(("listener", "route", "attaches"), [
    ("chat.example.com", "chat.example.com", True),
    ("chat.example.com", "other.example.com", False),
    ("*.example.com", "chat.example.com", True),
    ("*.example.com", "a.b.example.com", True),     # Gateway API: a wildcard is a suffix match
    ("*.example.com", "example.com", False),
    ("chat.example.com", "*.example.com", True),
    ("chat.example.com", "*.example.org", False),
])
def test_hostnames_intersect(listener, route, attaches):
    assert gateway_objects.hostnames_intersect(listener, route) is attaches


# ---------------------------------------------------------------------------------------------------------
# Remediation can never take a pool down (docs/health.md)

TWO_NODES = GpuPool("a100", "aws", "p4d.24xlarge", "a100-40gb", 8, 40, 2, 2)


def test_a_cap_that_could_quarantine_a_whole_pool_is_refused():
    line = refusal(lambda: GpuHealth("health", {"pools": [L4.spec(), TWO_NODES.spec()],
                                                "max_quarantined_per_pool": 2, "max_quarantined_percent": 100}))
    assert line == ("GpuHealth health: max_quarantined_per_pool: 2 with max_quarantined_percent 100 could quarantine "
                    "every node of pools[0] 'l4' at 2 nodes: remediation must never take a pool down; lower either|")


@pytest.mark.parametrize(("per_pool", "percent", "min_nodes", "max_nodes", "size"), [
    (2, 100, 2, 2, 2),
    (2, 50, 2, 2, None),     # floor(2 x 50 %) = 1 of 2
    (1, 100, 1, 4, None),    # one at a time leaves the other nodes of any pool of two or more
    (3, 100, 4, 8, None),    # never fewer than 4 nodes: 3 of them at most
    (8, 100, 0, 4, 2),       # an autoscaled pool passes through 2 nodes
    (8, 60, 2, 4, None),     # 1 of 2, 1 of 3, 2 of 4
    (8, 67, 2, 4, None),     # 1 of 2, 2 of 3, 2 of 4
    (3, 100, 3, 3, 3),
])
def test_size_taken_down(per_pool, percent, min_nodes, max_nodes, size):
    from gpu_platform.health.remediation import size_taken_down

    assert size_taken_down(min_nodes, max_nodes, per_pool, percent) == size


def test_caps_that_leave_a_node_in_every_pool_reach_the_controller_policy():
    rec = run_program(lambda: GpuHealth("health", {"pools": [TWO_NODES.spec()], "max_quarantined_per_pool": 2,
                                                   "max_quarantined_percent": 50}))
    policy = json.loads(rec.one("kubernetes:core/v1:ConfigMap", "health-remediation-config").inputs["data"][
        "remediation.json"])
    assert (policy["maxQuarantinedPerPool"], policy["maxQuarantinedPercent"]) == (2, 50)


def test_a_stack_whose_cap_could_quarantine_a_whole_pool_is_refused_naming_its_keys():
    from gpu_platform.config import parse_config

    with pytest.raises(ConfigError) as err:
        parse_config({"cloud": "aws", "region": "us-east-1", "nodePools": [
            {"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 4},
            {"name": "train", "instanceType": "p4d.24xlarge", "minNodes": 3, "maxNodes": 3}],
            "health": {"remediation": {"maxQuarantinedPerPool": 3, "maxQuarantinedPercent": 100}}}, "dev")
    assert str(err.value) == (
        "dev: health.remediation.maxQuarantinedPerPool: 3 with maxQuarantinedPercent 100 could quarantine "
        "every node of nodePools[0] 'infer' at 2 nodes: remediation must never take a pool down; lower either")
