"""The consumer's program under test, both ways in one pytest session: gpu-platform's harness, and plain
``pulumi.runtime.set_mocks`` with the library's ready mocks (`gpu_platform.testing.PlatformMocks`)."""

import runpy
from pathlib import Path

import pulumi

from gpu_platform.testing import PlatformMocks, run_program

MAIN = str(Path(__file__).resolve().parents[1] / "__main__.py")


def program():
    runpy.run_path(MAIN, run_name="__main__")


def test_harness_records_both_clusters_and_their_rdma_pools():
    rec = run_program(program, stack="dev", project="consumer-project",
                      config={"consumer-project:awsRegion": "us-west-2"})
    group = rec.one("aws:eks/nodeGroup:NodeGroup", "train-eks-h100-nodes")
    assert group.inputs["instanceTypes"] == ["p5.48xlarge"]
    assert rec.of_type("aws:ec2/placementGroup:PlacementGroup"), "EFA pools are placed in a cluster placement group"
    pool = rec.one("gcp:container/nodePool:NodePool", "train-gke-a3-pool")
    assert pool.inputs["nodeConfig"]["machineType"] == "a3-megagpu-8g"
    assert pool.inputs["autoscaling"]["totalMaxNodeCount"] == 2
    assert rec.exports == {"eksClusterName": "train-eks", "gkeClusterName": "train-gke"}


class ConsumerMocks(PlatformMocks):
    """The project's own mocks: the library's answers, and a record of every resource type created."""

    def __init__(self):
        super().__init__()
        self.types: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.types.append(args.typ)
        return super().new_resource(args)


@pulumi.runtime.test
def test_plain_set_mocks_resolves_the_clusters():
    mocks = ConsumerMocks()
    pulumi.runtime.set_mocks(mocks, project="consumer-project", stack="dev", preview=False)
    namespace = runpy.run_path(MAIN, run_name="__main__")
    eks, gke = namespace["eks"], namespace["gke"]

    def check(names):
        eks_name, gke_name = names
        assert eks_name == "train-eks" and gke_name == "train-gke"
        assert "aws:eks/cluster:Cluster" in mocks.types and "gcp:container/cluster:Cluster" in mocks.types

    return pulumi.Output.all(eks.cluster_name, gke.cluster_name).apply(check)
