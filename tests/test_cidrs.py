"""`gpu_platform.cidrs`: the one CIDR rule of every stack key and component argument, and that the stack readers and
the component contracts of every cloud use it (the same words whichever way a value came in)."""

import ast
import inspect

import pytest

from gpu_platform import cidrs, component_args, control_plane
from gpu_platform.cidrs import CidrRule
from gpu_platform.clouds.aws import contract as aws_contract
from gpu_platform.clouds.aws import options as aws_options
from gpu_platform.clouds.gcp import cluster as gcp_cluster
from gpu_platform.clouds.gcp import options as gcp_options
from gpu_platform.clouds.oci import contract as oci_contract
from gpu_platform.clouds.oci import options as oci_options
from gpu_platform.errors import ConfigError
from gpu_platform.serving import gateway

ANY = CidrRule(example="10.0.0.0/16")
VPC = CidrRule(example="10.0.0.0/16", min_prefix=16, max_prefix=20, sizes="a VPC is a /16 to a /20")


@pytest.mark.parametrize("value", ["10.0.0.0/16", "203.0.113.7/32", "192.168.0.0/24", "0.0.0.0/0", "10.0.0.0"])
def test_ipv4_blocks_pass(value):
    assert ANY.problem(value) is None


@pytest.mark.parametrize(("value", "problem"), [
    ("10.0.0.1/16", "'10.0.0.1/16' is not an IPv4 CIDR block such as 10.0.0.0/16 (10.0.0.1/16 has host bits set)"),
    ("10.0.0.0/33", "'10.0.0.0/33' is not an IPv4 CIDR block such as 10.0.0.0/16 ('33' is not a valid netmask)"),
    ("office", "'office' is not an IPv4 CIDR block such as 10.0.0.0/16 (Expected 4 octets in 'office')"),
    ("fd00::/64", "'fd00::/64' is not an IPv4 CIDR block such as 10.0.0.0/16 (Expected 4 octets in 'fd00::')"),
    ("", "'' is not an IPv4 CIDR block such as 10.0.0.0/16 (Address cannot be empty)"),
    (16, "16 is not an IPv4 CIDR block such as 10.0.0.0/16"),
    (None, "None is not an IPv4 CIDR block such as 10.0.0.0/16"),
])
def test_what_is_not_an_ipv4_block_is_refused_saying_why(value, problem):
    assert ANY.problem(value) == problem


@pytest.mark.parametrize("shorthand", ["*", "any", "0/0", "internet"])
def test_the_whole_internet_has_no_shorthand(shorthand):
    assert ANY.problem("0.0.0.0/0") is None
    assert ANY.problem(shorthand) is not None


def test_an_empty_api_allowed_list_is_private_and_the_internet_is_written_out():
    assert control_plane.parse_control_plane({}).public_endpoint is False
    assert control_plane.parse_control_plane({"apiAllowedCidrs": ["0.0.0.0/0"]}).api_allowed_cidrs == ("0.0.0.0/0",)
    with pytest.raises(ConfigError, match=r"^apiAllowedCidrs\[0\]: 'any' is not an IPv4 CIDR block such as "):
        control_plane.parse_control_plane({"apiAllowedCidrs": ["any"]})


@pytest.mark.parametrize(("value", "problem"), [
    ("10.0.0.0/16", None),
    ("10.0.0.0/20", None),
    ("10.0.0.0/21", "'10.0.0.0/21' is too small: a VPC is a /16 to a /20"),
    ("10.0.0.0/15", "'10.0.0.0/15' is too large: a VPC is a /16 to a /20"),
    ("0.0.0.0/0", "'0.0.0.0/0' is too large: a VPC is a /16 to a /20"),
])
def test_prefix_bounds(value, problem):
    assert VPC.problem(value) == problem


def test_checked_gives_the_canonical_spelling_and_network_the_block():
    assert ANY.checked("10.0.0.0/255.255.0.0", "k") == "10.0.0.0/16"
    assert ANY.network("10.4.0.0/14", "k").num_addresses == 2 ** 18
    with pytest.raises(ConfigError) as err:
        VPC.checked("10.0.0.0/24", "nodePools[0].cidr")
    assert str(err.value) == "nodePools[0].cidr: '10.0.0.0/24' is too small: a VPC is a /16 to a /20"


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"example": "10.0.0.0/16", "max_prefix": 20}, "says why in sizes"),
    ({"example": "10.0.0.0/16", "min_prefix": 24, "max_prefix": 20, "sizes": "x"}, "not within"),
    ({"example": "10.0.0.1/16"}, "breaks its own rule"),
    ({"example": "10.0.0.0/24", "max_prefix": 20, "sizes": "x"}, "breaks its own rule"),
])
def test_a_rule_that_contradicts_itself_is_a_programming_error(kwargs, error):
    with pytest.raises(ValueError, match=error):
        CidrRule(**kwargs)


def test_component_rule_is_the_same_check():
    rule = component_args.cidr(VPC)
    assert rule.check("10.0.0.0/24") == VPC.problem("10.0.0.0/24")


@pytest.mark.parametrize(("component_rule", "stack_rule"), [
    (control_plane.CIDR, control_plane.API_CIDR),
    (aws_contract.CLUSTER_RULES["vpc_cidr"], aws_options.VPC_CIDR),
    (gcp_cluster.CLUSTER_RULES["node_cidr"], gcp_options.NODE_CIDR),
    (gcp_cluster.CLUSTER_RULES["pod_cidr"], gcp_options.POD_CIDR),
    (gcp_cluster.CLUSTER_RULES["service_cidr"], gcp_options.SERVICE_CIDR),
    (gcp_cluster.CLUSTER_RULES["gpu_network_cidr"], gcp_options.GPU_NETWORK_CIDR),
    (gcp_cluster.CLUSTER_RULES["proxy_only_cidr"], gcp_options.PROXY_ONLY_CIDR),
])
def test_each_component_argument_checks_its_stack_keys_rule(component_rule, stack_rule):
    assert component_rule.check == stack_rule.problem


def test_every_cidr_rule_of_the_contracts_is_a_cidr_rule():
    """No contract checks a CIDR with its own regular expression or `ipaddress` call any more."""
    rules = {**aws_contract.CLUSTER_RULES, **gcp_cluster.CLUSTER_RULES, **oci_contract.CLUSTER_RULES,
             **oci_contract.VCN_RULES, **gateway.RULES}
    for key, rule in rules.items():
        if key.endswith(("cidr", "cidrs[]", "ranges[]")) or key == "cidr":
            owner = getattr(rule.check, "__self__", None)
            assert isinstance(owner, CidrRule) or rule.check is oci_options.vcn_cidr_problem, key
            assert rule.pattern is None, key


def test_gke_component_refuses_the_proxy_only_subnet_the_stack_refuses():
    # GkeCluster accepted a /27 that the stack key (test_gateway_stacks.test_proxy_only_cidr_guards) and GKE refuse.
    from gpu_platform.clouds.gcp.cluster import check_cluster_args

    with pytest.raises(ConfigError) as err:
        check_cluster_args("c", {"region": "us-central1", "gateway_api": True, "proxy_only_cidr": "10.9.0.0/27"})
    assert str(err.value) == ("GkeCluster c: proxy_only_cidr: '10.9.0.0/27' is too small: a proxy-only subnet is a "
                              "/26 or larger (a /23 is recommended)")


def test_cidrs_is_below_the_parser():
    """The rule imports nothing of the platform but `errors`: any layer may use it."""
    tree = ast.parse(inspect.getsource(cidrs))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert imported <= {"ipaddress", "dataclasses", "typing", "errors"}
