"""ExistingGpuNodes as a library: arguments refused with one `ConfigError` line, and `pool_args("existing", entry)`
giving the node patches the same stack-file entry gives."""

import re

import pulumi
import pytest

from gpu_platform.clouds.existing import ExistingGpuNodes, cluster_from_config
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool, pool_args
from gpu_platform.testing import run_program

PATCH = "kubernetes:core/v1:NodePatch"
H100 = {"name": "h100", "gpuModel": "h100", "gpusPerNode": 8, "maxNodes": 2, "rdma": True, "rdmaFabric": "roce",
        "rdmaInterfaces": 8, "nodes": ["dgx-01", "dgx-02"]}
SPEC = pool_args("existing", {k: v for k, v in H100.items() if k != "nodes"})["pool"]

MISUSE = {
    "duplicate node": ({"pool": SPEC, "nodes": ["dgx-01", "dgx-01"]},
                       "ExistingGpuNodes n: nodes[1]: node 'dgx-01' is listed twice (also nodes[0])"),
    "empty node name": ({"pool": SPEC, "nodes": [""]}, "ExistingGpuNodes n: nodes[0]: must not be empty"),
    "node name not a DNS subdomain": (
        {"pool": SPEC, "nodes": ["DGX_01"]},
        "ExistingGpuNodes n: nodes[0]: 'DGX_01' is not a Kubernetes node name (a DNS subdomain: lower-case letters, "
        "digits, '-', '.')"),
    "no nodes": ({"pool": SPEC, "nodes": []}, "ExistingGpuNodes n: nodes: must list at least one node"),
    "nodes missing": ({"pool": SPEC}, "ExistingGpuNodes n: nodes: is required"),
    "fewer nodes than min_nodes": ({"pool": {**SPEC, "min_nodes": 2}, "nodes": ["dgx-01"]},
                                   "ExistingGpuNodes n: nodes: lists 1 nodes but pool.min_nodes is 2"),
    "pool of another cloud": (
        {"pool": gpu_pool("oci", {"name": "a10", "instanceType": "VM.GPU.A10.1"}).spec(), "nodes": ["n1"]},
        "ExistingGpuNodes n: pool.cloud: pool 'a10' is an OCI pool; ExistingGpuNodes takes existing-cluster pools"),
    "unknown key": ({"pool": SPEC, "node": ["n1"]},
                    "ExistingGpuNodes n: node: unknown argument; did you mean 'nodes'?"),
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_misuse_is_refused(case):
    args, line = MISUSE[case]
    with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
        run_program(lambda: ExistingGpuNodes("n", args))


def test_pool_args_gives_the_stack_node_patches():
    config = parse_config({"cloud": "existing", "networkPolicyEnforced": True, "nodePools": [H100]}, "lab")
    stack = run_program(lambda: cluster_from_config("lab", config, pulumi.ResourceOptions()))
    args = pool_args("existing", H100)
    assert args["nodes"] == ["dgx-01", "dgx-02"]
    assert (args["pool"]["rdma_fabric"], args["pool"]["rdma_interfaces"]) == ("roce", 8)
    hand = run_program(lambda: ExistingGpuNodes("lab-h100", args))
    assert [p.inputs for p in hand.of_type(PATCH)] == [p.inputs for p in stack.of_type(PATCH)]
    assert hand.one(PATCH, "lab-h100-dgx-02").inputs["metadata"]["labels"]["gpu-platform.io/rdma"] == "roce"


def test_stack_refuses_a_node_listed_twice():
    with pytest.raises(ConfigError, match=re.escape("nodePools[0].nodes[1]: node 'dgx-01' is listed twice "
                                                    "(also nodes[0])")):
        parse_config({"cloud": "existing", "nodePools": [{**H100, "nodes": ["dgx-01", "dgx-01"]}]}, "lab")
