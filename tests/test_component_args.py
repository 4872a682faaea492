"""The component argument contract (`component_args.Args`, `pool_spec.check_pool`) and the pool builders."""

import re
from typing import Optional, TypedDict

import pulumi
import pytest
from typing_extensions import Required

from gpu_platform.component_args import (
    CPU_QUANTITY,
    KUBERNETES_VERSION,
    PROMETHEUS_DURATION,
    Args,
    at_least,
    camel_case,
    choice,
    snake_case,
)
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool, pool_args
from gpu_platform.pool_spec import check_pool
from gpu_platform.pools import GpuPoolSpec


class Inner(TypedDict, total=False):
    size: Required[int]
    labels: dict[str, str]


class Sample(TypedDict, total=False):
    region: Required[str]
    kubernetes_version: str
    system_nodes: int
    ratio: float
    enabled: bool
    subnet_id: pulumi.Input[str]
    zones: list[str]
    inner: list[Inner]
    mode: Optional[str]
    retention: str
    cpu_request: str


RULES = {"system_nodes": at_least(1), "kubernetes_version": KUBERNETES_VERSION, "mode": choice("fast", "slow"),
         "inner[].size": at_least(0), "retention": PROMETHEUS_DURATION, "cpu_request": CPU_QUANTITY}


def check(**args):
    return Args("Sample", "dev").check(args, Sample, RULES)


def refused(line: str, **args) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
        check(**args)


def test_valid_args_come_back_normalised():
    out = check(region="us", system_nodes=2.0, ratio=1, inner=[{"size": 3.0, "labels": {"a": "b"}}], mode=None)
    assert out == {"region": "us", "system_nodes": 2, "ratio": 1.0, "inner": [{"size": 3, "labels": {"a": "b"}}]}
    assert type(out["system_nodes"]) is int


@pytest.mark.parametrize(("args", "line"), [
    ({}, "Sample dev: region: is required"),
    ({"region": "us", "system_nodes": -1}, "Sample dev: system_nodes: must be >= 1, got -1"),
    ({"region": "us", "kubernetes_version": "1.99"},
     "Sample dev: kubernetes_version: '1.99' is not a Kubernetes minor version from 1.25 to 1.39 such as 1.36"),
    ({"region": "us", "systemNodes": 2},
     "Sample dev: systemNodes: unknown argument; arguments are snake_case in Python: use 'system_nodes' "
     "(camelCase is the stack file's spelling)"),
    ({"region": "us", "sytem_nodes": 2}, "Sample dev: sytem_nodes: unknown argument; did you mean 'system_nodes'?"),
    ({"region": "us", "system_nodes": "big"}, "Sample dev: system_nodes: must be an integer, got 'big'"),
    ({"region": "us", "system_nodes": True}, "Sample dev: system_nodes: must be an integer, got True"),
    ({"region": "us", "enabled": "yes"}, "Sample dev: enabled: must be true or false, got 'yes'"),
    ({"region": 3}, "Sample dev: region: must be a string, got 3"),
    ({"region": "us", "zones": "us-a"}, "Sample dev: zones: must be a list, got 'us-a'"),
    ({"region": "us", "zones": ["a", 1]}, "Sample dev: zones[1]: must be a string, got 1"),
    ({"region": "us", "inner": [{"size": -2}]}, "Sample dev: inner[0].size: must be >= 0, got -2"),
    ({"region": "us", "inner": [{}]}, "Sample dev: inner[0].size: is required"),
    ({"region": "us", "inner": [{"size": 1, "labels": {"a": 1}}]}, "Sample dev: inner[0].labels.a: must be a string, "
                                                                   "got 1"),
    ({"region": "us", "mode": "fsat"}, "Sample dev: mode: 'fsat' is not one of fast, slow; did you mean 'fast'?"),
    ({"region": "us", "retention": "two weeks"},
     "Sample dev: retention: 'two weeks' is not a Prometheus duration such as 15d"),
    ({"region": "us", "cpu_request": "lots"},
     "Sample dev: cpu_request: 'lots' is not a CPU quantity such as 500m or 2"),
])
def test_misuse_is_one_line_naming_component_and_argument(args, line):
    refused(line, **args)


def test_args_that_are_not_a_mapping_are_refused():
    with pytest.raises(ConfigError, match=r"^Sample dev: args: must be a mapping of Sample keys, got list$"):
        Args("Sample", "dev").check([], Sample)


def test_outputs_only_where_the_argument_is_an_input():
    subnet = pulumi.Output.from_input("subnet-1")
    assert check(region="us", subnet_id=subnet)["subnet_id"] is subnet
    refused("Sample dev: region: must be a plain str, not an Output: the component reads it when it is constructed",
            region=pulumi.Output.from_input("us"))


def test_duplicate_names_name_both_positions():
    with pytest.raises(ConfigError, match=re.escape("Sample dev: teams[2]: duplicate team name 'ml' (also teams[0])")):
        Args("Sample", "dev").unique(["ml", "cv", "ml"], "teams", "team name")


def test_case_helpers_round_trip():
    assert snake_case("systemNodeInstanceType") == "system_node_instance_type"
    assert camel_case("system_node_instance_type") == "systemNodeInstanceType"


# ---------------------------------------------------------------------------------------------------------
# Pool specs at a component boundary


def _spec(**over) -> dict:
    return {"name": "h100", "cloud": "aws", "instance_type": "p5.48xlarge", "max_nodes": 2, **over}


def test_a_hand_written_spec_gets_the_catalog_facts():
    pool = check_pool(Args("EksCluster", "dev"), _spec(rdma_fabric="efa"), "gpu_pools[0].pool", "aws")
    assert (pool.gpu_model, pool.gpus_per_node, pool.gpu_memory_gib, pool.rdma_fabric, pool.rdma_interfaces) == (
        "h100", 8, 80, "efa", 32)


def test_a_gpu_pool_object_is_taken_where_a_spec_is_expected():
    pool = gpu_pool("aws", {"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2})
    assert check_pool(Args("EksCluster", "dev"), pool, "gpu_pools[0].pool", "aws") == pool


@pytest.mark.parametrize(("spec", "line"), [
    (_spec(cloud="gcp", instance_type="g2-standard-8"),
     "EksCluster dev: gpu_pools[0].pool.cloud: pool 'h100' is a GCP pool; EksCluster takes AWS pools"),
    (_spec(instance_type="p5.48xlage"), "EksCluster dev: gpu_pools[0].pool.instance_type: unknown AWS GPU instance "
                                        "type 'p5.48xlage'; did you mean 'p5.48xlarge'?"),
    (_spec(min_nodes=3, max_nodes=2),
     "EksCluster dev: gpu_pools[0].pool.min_nodes: minNodes (3) is greater than maxNodes (2)"),
    (_spec(max_nodes=-1), "EksCluster dev: gpu_pools[0].pool.max_nodes: must be >= 0, got -1"),
    (_spec(gpus_per_node=4), "EksCluster dev: gpu_pools[0].pool.gpus_per_node: p5.48xlarge has 8 in the catalog, "
                             "got 4 (leave it out to take the catalog's)"),
    (_spec(sharing_mode="slices"), "EksCluster dev: gpu_pools[0].pool.sharing_mode: 'slices' is not one of exclusive, "
                                   "time-slicing, mps, mig, hami"),
    (_spec(cloud="aswd"), "EksCluster dev: gpu_pools[0].pool.cloud: 'aswd' is not one of aws, azure, gcp, oci, "
                          "existing"),
    ({"cloud": "aws", "instance_type": "p5.48xlarge"}, "EksCluster dev: gpu_pools[0].pool.name: is required"),
])
def test_bad_pool_specs_are_refused(spec, line):
    with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
        check_pool(Args("EksCluster", "dev"), spec, "gpu_pools[0].pool", "aws")


def test_specs_inside_args_are_checked_against_the_component_cloud():
    class PoolArgs(TypedDict, total=False):
        pool: Required[GpuPoolSpec]

    gcp = gpu_pool("gcp", {"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 2}).spec()
    with pytest.raises(ConfigError, match=re.escape("EksGpuNodePool p: pool.cloud: pool 'l4' is a GCP pool; "
                                                    "EksGpuNodePool takes AWS pools")):
        Args("EksGpuNodePool", "p", cloud="aws").check({"pool": gcp}, PoolArgs)
    assert Args("NvidiaGpuStack", "p").check({"pool": gcp}, PoolArgs)["pool"] == gcp


# ---------------------------------------------------------------------------------------------------------
# gpu_pool() and pool_args()


def test_gpu_pool_refuses_cloud_keys_and_names_pool_args():
    with pytest.raises(ConfigError, match=re.escape(
            "nodePools[h100].diskSizeGiB: gpu_pool() returns a cloud-neutral GpuPool with no place for "
            "'diskSizeGiB'; use pool_args('aws', entry), which keeps it for the cluster's gpu_pools")):
        gpu_pool("aws", {"name": "h100", "instanceType": "p5.48xlarge",
                         "diskSizeGiB": 500})
    with pytest.raises(ConfigError, match=re.escape("nodePools[l4].zones: gpu_pool() returns")):
        gpu_pool("gcp", {"name": "l4", "instanceType": "g2-standard-8", "zones": ["us-central1-a"]})


def test_builders_refuse_unknown_clouds_and_non_mappings():
    with pytest.raises(ConfigError, match=re.escape("cloud: 'aswd' is not one of")):
        pool_args("aswd", {"name": "x"})
    with pytest.raises(ConfigError, match=re.escape("nodePools[?]: must be a mapping of nodePools keys, got str")):
        gpu_pool("aws", "p5.48xlarge")
