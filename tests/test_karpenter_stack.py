"""Karpenter on EKS under the mock engine: the aws-karpenter reference stack, and a pool split between a baseline
node group and Karpenter (EFA security group and placement group shared)."""

import json
from pathlib import Path

import pulumi
import pytest
from conftest import planned_stack

from gpu_platform.clouds import aws
from gpu_platform.clouds.aws.karpenter import karpenter_from_config
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.testing import run_program

STACKS = Path(__file__).resolve().parents[1] / "stacks"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def deps(reg):
    return {d.rsplit("::", 1)[-1] for d in reg.dependencies}


@pytest.fixture(scope="module")
def stack():
    result = planned_stack("aws-karpenter")
    assert result.errors == []
    return result


def test_karpenter_replaces_the_zero_minimum_pool_and_bursts_the_other(stack):
    rec = stack.recording
    groups = {r.name: r.inputs for r in rec.of_type(NODE_GROUP)}
    # h100-train (0-2) has no node group: Karpenter only. l4-infer (1-4) keeps its one node on a fixed group.
    assert sorted(groups) == ["aws-karpenter-l4-infer-nodes", "aws-karpenter-system"]
    assert groups["aws-karpenter-l4-infer-nodes"]["scalingConfig"] == {"minSize": 1, "maxSize": 1, "desiredSize": 1}
    pools = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.of_type(NODE_POOL)}
    assert pools["h100-train"]["limits"] == {"nvidia.com/gpu": "16"}  # 2 p5 x 8 H100
    assert pools["l4-infer"]["limits"] == {"nvidia.com/gpu": "3"}  # 4 - 1 baseline nodes x 1 L4
    # Training: drift never disrupts a node (automatic: never); empty nodes go one at a time.
    assert pools["h100-train"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "20m",
                                                 "budgets": [{"nodes": "1", "reasons": ["Empty", "Underutilized"]},
                                                             {"nodes": "0", "reasons": ["Drifted"]}]}
    assert pools["l4-infer"]["disruption"]["budgets"] == [
        {"nodes": "1", "reasons": ["Empty", "Underutilized"]}, {"nodes": "1", "reasons": ["Drifted"]},
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 12 * * 6", "duration": "156h"}]
    assert {p["template"]["spec"]["expireAfter"] for p in pools.values()} == {"Never"}
    # The baseline node group: inference defaults (EKS launches replacements first; 1 is its least).
    assert groups["aws-karpenter-l4-infer-nodes"]["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}
    # The Kubernetes layers still see both pools as configured (Kueue flavors, quotas, placement).
    assert [p.max_nodes for p in stack.config.gpu_pools()] == [4, 2]
    flavors = {m["metadata"]["name"] for m in stack.manifests if m["kind"] == "ResourceFlavor"}
    assert {"l4-infer", "h100-train"} <= flavors


def test_node_pools_carry_the_pool_labels_and_taints_the_workloads_select(stack):
    rec = stack.recording
    pools = {r.inputs["metadata"]["name"]: r.inputs["spec"]["template"] for r in rec.of_type(NODE_POOL)}
    node_group = rec.one(NODE_GROUP, "aws-karpenter-l4-infer-nodes").inputs
    l4 = pools["l4-infer"]
    # Same pool identity on the baseline group's nodes and on Karpenter's.
    for key, value in l4["metadata"]["labels"].items():
        assert node_group["labels"][key] == value
    assert l4["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert pools["h100-train"]["metadata"]["labels"]["gpu-platform.io/rdma"] == "efa"
    job = next(m for m in stack.manifests if m["kind"] == "Job" and m["metadata"]["name"] == "reference-training")
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"gpu-platform.io/pool": "h100-train"}
    tolerated = {(t["key"], t.get("value", ""), t["effect"]) for t in pod["tolerations"]}
    assert {(t["key"], t.get("value", ""), t["effect"]) for t in pools["h100-train"]["spec"]["taints"]} <= tolerated


def test_efa_node_class_in_one_zone_with_cluster_and_efa_security_groups(stack):
    rec = stack.recording
    spec = next(r for r in rec.of_type(NODE_CLASS) if r.inputs["metadata"]["name"] == "h100-train").inputs["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-aws-karpenter-private-us-west-2a"}]
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-aws-karpenter"},
                                                  {"id": "sg-aws-karpenter-karpenter-h100-train-efa"}]
    assert spec["placementGroupSelector"] == {"name": "aws-karpenter-karpenter-h100-train-pg"}
    assert len(spec["networkInterfaces"]) == 33  # primary ENA + 32 efa-only
    assert spec["instanceProfile"] == "aws-karpenter-karpenter-node-profile"
    assert spec["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "500Gi"
    efa = rec.one("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
                  "aws-karpenter-karpenter-h100-train-efa-ingress").inputs
    assert efa["referencedSecurityGroupId"] == efa["securityGroupId"] == "sg-aws-karpenter-karpenter-h100-train-efa"
    l4 = next(r for r in rec.of_type(NODE_CLASS) if r.inputs["metadata"]["name"] == "l4-infer").inputs["spec"]
    assert l4["subnetSelectorTerms"] == [{"id": f"subnet-aws-karpenter-private-us-west-2{z}"} for z in "abc"]
    assert "networkInterfaces" not in l4 and "placementGroupSelector" not in l4


def test_controller_runs_on_the_system_nodes_with_pod_identity_and_the_interruption_queue(stack):
    rec = stack.recording
    release = rec.one(RELEASE, "aws-karpenter-karpenter-controller")
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
        "oci://public.ecr.aws/karpenter/karpenter", "1.14.1", "kube-system")
    values = release.inputs["values"]
    assert values["nodeSelector"] == {"kubernetes.io/os": "linux",
                                      "eks.amazonaws.com/nodegroup": "aws-karpenter-system"}
    assert values["settings"] == {"clusterName": "aws-karpenter",
                                  "clusterEndpoint": "https://AWS-KARPENTER.gr7.us-east-1.eks.amazonaws.com",
                                  "interruptionQueue": "aws-karpenter-karpenter-interruptions"}
    assert values["replicas"] == 2
    identity = rec.one("aws:eks/podIdentityAssociation:PodIdentityAssociation", "aws-karpenter-karpenter-controller")
    assert (identity.inputs["namespace"], identity.inputs["serviceAccount"]) == ("kube-system", "karpenter")
    assert identity.inputs["roleArn"] == "arn:aws:iam::123456789012:role/aws-karpenter-karpenter-controller-role"
    role = rec.one("aws:iam/role:Role", "aws-karpenter-karpenter-controller-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"] == [{"Action": ["sts:AssumeRole", "sts:TagSession"], "Effect": "Allow",
                                   "Principal": {"Service": "pods.eks.amazonaws.com"}}]
    assert {"aws-karpenter-karpenter-controller", "aws-karpenter-karpenter-node-lifecycle",
            "aws-karpenter-karpenter-integration"} <= deps(release)
    queue = rec.one("aws:sqs/queue:Queue", "aws-karpenter-karpenter-interruptions").inputs
    assert (queue["messageRetentionSeconds"], queue["sqsManagedSseEnabled"]) == (300, True)
    targets = rec.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == 5 and {t.inputs["arn"] for t in targets} == {
        "arn:aws:sqs:us-east-1:123456789012:aws-karpenter-karpenter-interruptions"}
    assert {t.inputs["targetId"] for t in targets} == {"KarpenterInterruptionQueueTarget"}
    access = rec.one("aws:eks/accessEntry:AccessEntry", "aws-karpenter-karpenter-node-access").inputs
    assert (access["type"], access["principalArn"]) == (
        "EC2_LINUX", "arn:aws:iam::123456789012:role/aws-karpenter-karpenter-node-role")
    integration = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "aws-karpenter-karpenter-integration")
                             .inputs["policy"])
    passed = next(s for s in integration["Statement"] if s["Sid"] == "AllowPassingInstanceRole")
    assert passed["Resource"] == "arn:aws:iam::123456789012:role/aws-karpenter-karpenter-node-role"


def test_node_pools_wait_for_the_crds_and_the_node_identity(stack):
    rec = stack.recording
    for reg in [*rec.of_type(NODE_POOL), *rec.of_type(NODE_CLASS)]:
        assert {"aws-karpenter-karpenter-controller", "aws-karpenter-karpenter-node-access",
                "aws-karpenter-karpenter-node-profile"} <= deps(reg), reg.name
    node_pool = rec.one(NODE_POOL, "aws-karpenter-karpenter-h100-train-node-pool")
    assert "aws-karpenter-karpenter-h100-train-node-class" in deps(node_pool)
    # Karpenter replaces the cluster-autoscaler: never both.
    assert not [r for r in rec.of_type(RELEASE) if r.inputs["chart"] == "cluster-autoscaler"]


HYBRID_EFA = {
    "cloud": "aws", "region": "us-west-2", "availabilityZones": ["us-west-2a", "us-west-2b"],
    "autoscaling": {"autoscaler": "karpenter"},
    "nodePools": [{"name": "train", "instanceType": "p5.48xlarge", "rdma": True, "minNodes": 1, "maxNodes": 3}],
}


def test_efa_pool_with_a_baseline_shares_its_security_group_and_placement_group():
    config = parse_config(HYBRID_EFA, "k")

    def program():
        handle = aws.cluster_from_config("k", config, pulumi.ResourceOptions())
        karpenter_from_config("k", config, handle, pulumi.ResourceOptions(providers={"kubernetes": handle.provider}))

    rec = run_program(program, stack="k")
    assert rec.one(NODE_GROUP, "k-train-nodes").inputs["scalingConfig"] == {"minSize": 1, "maxSize": 1,
                                                                          "desiredSize": 1}
    spec = rec.one(NODE_CLASS).inputs["spec"]
    # EFA traffic between baseline and burst nodes needs one security group and one placement group.
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-k"}, {"id": "sg-k-train-efa"}]
    assert spec["placementGroupSelector"] == {"name": "k-train-pg"}
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-k-private-us-west-2a"}]
    assert [r.name for r in rec.of_type("aws:ec2/securityGroup:SecurityGroup")] == ["k-train-efa"]
    assert [r.name for r in rec.of_type("aws:ec2/placementGroup:PlacementGroup")] == ["k-train-pg"]
    assert rec.one(NODE_POOL).inputs["spec"]["limits"] == {"nvidia.com/gpu": "16"}  # 3 - 1 nodes x 8


def test_capacity_block_pool_goes_to_reserved_capacity():
    raw = {**HYBRID_EFA, "nodePools": [{"name": "cb", "instanceType": "p5.48xlarge", "minNodes": 0, "maxNodes": 2,
                                        "zones": ["us-west-2a"], "provisioning": "reservation",
                                        "reservation": "cr-0123456789abcdef0",
                                        "capacityBlock": True}]}
    config = parse_config(raw, "k")

    def program():
        handle = aws.cluster_from_config("k", config, pulumi.ResourceOptions())
        karpenter_from_config("k", config, handle, pulumi.ResourceOptions(providers={"kubernetes": handle.provider}))

    rec = run_program(program, stack="k")
    assert [r.name for r in rec.of_type(NODE_GROUP)] == ["k-system"]
    assert rec.one(NODE_POOL).inputs["spec"]["template"]["spec"]["requirements"][1]["values"] == ["reserved"]
    spec = rec.one(NODE_CLASS).inputs["spec"]
    assert spec["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    assert "placementGroupSelector" not in spec  # reserved instances cannot move into a new placement group


def test_shared_gpus_cannot_be_karpenter_pools():
    raw = {**HYBRID_EFA, "nodePools": [{"name": "ts", "instanceType": "g6.2xlarge", "maxNodes": 2,
                                        "sharing": {"mode": "time-slicing", "replicas": 4}}]}
    with pytest.raises(ConfigError, match=r"^k: nodePools\[0\]\.sharing\.mode: time-slicing advertises 4 GPUs per "
                                          r"physical GPU.*autoscaling\.autoscaler cluster-autoscaler"):
        parse_config(raw, "k")
    # The same pool is fine with the cluster-autoscaler, which reads the shared count from the group's tags.
    parse_config({**raw, "autoscaling": {"autoscaler": "cluster-autoscaler"}}, "k")


def test_the_autoscaling_layer_adds_the_training_vpas_in_recommendation_mode(stack):
    vpas = {m["spec"]["targetRef"]["kind"]: m for m in stack.manifests if m["kind"] == "VerticalPodAutoscaler"}
    assert sorted(vpas) == ["CronJob", "Job"]
    assert {v["metadata"]["namespace"] for v in vpas.values()} == {"research"}
    assert {v["spec"]["updatePolicy"]["updateMode"] for v in vpas.values()} == {"Off"}
    release = stack.recording.one(RELEASE, "aws-karpenter-autoscaling-vpa")
    assert release.inputs["values"]["metrics-server"] == {"enabled": True}  # EKS ships no metrics-server
