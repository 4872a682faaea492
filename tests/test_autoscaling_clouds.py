"""GPU node autoscaling per cloud under the mock engine: the cluster-autoscaler chart on EKS, the AKS and GKE
autoscaler profiles, and OKE's Cluster Autoscaler add-on; with the exact inputs each cloud receives."""

import json
from pathlib import Path

import pulumi
import pytest
from test_nvidia_chart_keys import chart_keys, unknown_keys

from gpu_platform import versions
from gpu_platform.clouds import autoscaler_profile as profile
from gpu_platform.clouds import aws, azure, gcp, oci
from gpu_platform.clouds.aws.cluster_autoscaler import cluster_autoscaler_from_config, iam_policy, image_tag
from gpu_platform.clouds.oci.autoscaler import oke_autoscaler_from_config, policy_statements
from gpu_platform.config import parse_config, strip_namespace
from gpu_platform.plan import load_stack_file
from gpu_platform.testing import run_program

STACKS = Path(__file__).resolve().parents[1] / "stacks"
RELEASE = "kubernetes:helm.sh/v3:Release"
GPU_PROFILE = profile.GpuScalingProfile()


def stack_config(stack, **overrides):
    raw = strip_namespace(load_stack_file(STACKS / f"Pulumi.{stack}.yaml"))
    return parse_config({**raw, **overrides}, stack)


def run_with_autoscaler(module, config, node_autoscaler=None):
    def program():
        handle = module.cluster_from_config(config.stack, config, pulumi.ResourceOptions())
        if node_autoscaler is not None:
            node_autoscaler(config.stack, config, handle,
                            pulumi.ResourceOptions(providers={"kubernetes": handle.provider}))

    return run_program(program, stack=config.stack)


# ---------------------------------------------------------------------------------------------------------
# The profile


def test_gpu_profile_in_every_clouds_spelling():
    assert profile.cluster_autoscaler_flags(GPU_PROFILE) == {
        "expander": "least-waste", "balance-similar-node-groups": True, "skip-nodes-with-system-pods": False,
        "skip-nodes-with-local-storage": False, "max-node-provision-time": "25m", "scale-down-unneeded-time": "30m",
        "scale-down-delay-after-add": "25m"}
    assert profile.aks_auto_scaler_profile(profile.GpuScalingProfile(45, 20)) == {
        "expander": "least-waste", "balance_similar_node_groups": "true", "skip_nodes_with_system_pods": "false",
        "skip_nodes_with_local_storage": "false", "max_node_provision_time": "20m",
        "scale_down_unneeded_time": "45m", "scale_down_delay_after_add": "20m"}
    assert profile.gke_cluster_autoscaling() == {"enabled": False, "autoscaling_profile": "BALANCED"}
    with pytest.raises(ValueError, match="whole minutes"):
        profile.GpuScalingProfile(0, 25)


def test_gpu_total_is_not_set_on_aws_because_the_autoscaler_only_honours_it_on_gke():
    assert not any(flag.startswith("gpu-") for flag in profile.cluster_autoscaler_flags(GPU_PROFILE))


def test_aks_profile_fields_exist_in_the_installed_sdk():
    from pulumi_azure_native.containerservice import ManagedClusterPropertiesAutoScalerProfileArgs

    ManagedClusterPropertiesAutoScalerProfileArgs(**profile.aks_auto_scaler_profile(GPU_PROFILE))


def test_gke_autoscaling_fields_exist_in_the_installed_sdk():
    from pulumi_gcp.container import ClusterClusterAutoscalingArgs

    ClusterClusterAutoscalingArgs(**profile.gke_cluster_autoscaling())


# ---------------------------------------------------------------------------------------------------------
# EKS: the cluster-autoscaler chart


@pytest.fixture(scope="module")
def eks():
    return run_with_autoscaler(aws, stack_config("aws-dev"), cluster_autoscaler_from_config)


def test_cluster_autoscaler_chart_values_exact(eks):
    release = eks.one(RELEASE, "aws-dev-cluster-autoscaler-chart")
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
        "cluster-autoscaler", "9.43.1", "kube-system")
    assert release.inputs["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert release.inputs["values"] == {
        "cloudProvider": "aws", "awsRegion": "us-west-2", "autoDiscovery": {"clusterName": "aws-dev"},
        "rbac": {"serviceAccount": {"create": True, "name": "cluster-autoscaler"}},
        "image": {"tag": "v1.36.1"}, "replicaCount": 1, "priorityClassName": "system-cluster-critical",
        "nodeSelector": {"eks.amazonaws.com/nodegroup": "aws-dev-system"},
        "extraArgs": profile.cluster_autoscaler_flags(GPU_PROFILE),
    }
    assert unknown_keys(release.inputs["values"], chart_keys(versions.CLUSTER_AUTOSCALER)) == []


def test_cluster_autoscaler_identity_and_discovery_tags(eks):
    identity = eks.one("aws:eks/podIdentityAssociation:PodIdentityAssociation", "aws-dev-cluster-autoscaler-identity")
    assert (identity.inputs["namespace"], identity.inputs["serviceAccount"], identity.inputs["roleArn"]) == (
        "kube-system", "cluster-autoscaler", "arn:aws:iam::123456789012:role/aws-dev-cluster-autoscaler-role")
    policy = json.loads(eks.one("aws:iam/rolePolicy:RolePolicy", "aws-dev-cluster-autoscaler-scaling").inputs["policy"])
    assert policy == json.loads(iam_policy("aws-dev"))
    scale = policy["Statement"][1]
    assert scale["Action"] == ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    assert scale["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
                                                   "aws:ResourceTag/k8s.io/cluster-autoscaler/aws-dev": "owned"}}
    tags = {(r.inputs["autoscalingGroupName"], r.inputs["tag"]["key"], r.inputs["tag"]["value"])
            for r in eks.of_type("aws:autoscaling/tag:Tag") if r.name.startswith("aws-dev-cluster-autoscaler-")}
    assert tags == {(f"eks-aws-dev-{p}-nodes-asg", key, value) for p in ("l4-infer", "l4-spot", "h100-train")
                    for key, value in (("k8s.io/cluster-autoscaler/enabled", "true"),
                                       ("k8s.io/cluster-autoscaler/aws-dev", "owned"))}
    release = eks.one(RELEASE, "aws-dev-cluster-autoscaler-chart")
    deps = {d.rsplit("::", 1)[-1] for d in release.dependencies}
    assert {"aws-dev-cluster-autoscaler-identity", "aws-dev-cluster-autoscaler-scaling"} <= deps


def test_eks_gpu_pools_scale_from_zero_with_node_template_tags_and_the_gpu_label(eks):
    """The l4-spot pool starts at 0 nodes: the autoscaler builds its node from the group's tags. The fixed h100-train
    pool (its reservation's two nodes) carries the same template, EFA interfaces included."""
    group = eks.one("aws:eks/nodeGroup:NodeGroup", "aws-dev-l4-spot-nodes").inputs
    assert group["scalingConfig"] == {"minSize": 0, "maxSize": 4, "desiredSize": 0}
    assert group["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-l4"
    template = "k8s.io/cluster-autoscaler/node-template"

    def asg(pool):
        return {r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in eks.of_type("aws:autoscaling/tag:Tag")
                if r.inputs["autoscalingGroupName"] == f"eks-aws-dev-{pool}-nodes-asg"}

    spot = asg("l4-spot")
    assert spot[f"{template}/resources/nvidia.com/gpu"] == "1"
    assert spot[f"{template}/taint/nvidia.com/gpu"] == "present:NoSchedule"
    assert spot[f"{template}/label/gpu-platform.io/pool"] == "l4-spot"
    assert spot[f"{template}/label/k8s.amazonaws.com/accelerator"] == "nvidia-l4"
    train = asg("h100-train")
    assert (train[f"{template}/resources/nvidia.com/gpu"], train[f"{template}/resources/vpc.amazonaws.com/efa"]) == (
        "8", "32")


def test_autoscaler_image_follows_the_kubernetes_minor():
    assert {v: image_tag(v) for v in versions.EKS_ADDONS} == {"1.33": "v1.33.1", "1.34": "v1.34.0",
                                                              "1.35": "v1.35.0", "1.36": "v1.36.1"}
    with pytest.raises(ValueError, match="no cluster-autoscaler pinned for Kubernetes 1.30"):
        image_tag("1.30")


def test_cluster_autoscaler_key_list_names_its_source():
    text = (Path(__file__).parent / "data" / "chart_keys" / "cluster-autoscaler-9.43.1.keys").read_text()
    assert "kubernetes/autoscaler@058219f64d06b1106db096f6e58d40731c438384" in text


# ---------------------------------------------------------------------------------------------------------
# AKS and GKE: the managed autoscaler, tuned


def test_aks_cluster_carries_the_gpu_autoscaler_profile_and_pools_scale_from_zero():
    config = stack_config("azure-dev", autoscaling={"scaleDownUnneededMinutes": 40, "maxNodeProvisionMinutes": 30})
    rec = run_with_autoscaler(azure, config)
    cluster = rec.one("azure-native:containerservice:ManagedCluster").inputs
    assert cluster["autoScalerProfile"] == {
        "expander": "least-waste", "balanceSimilarNodeGroups": "true", "skipNodesWithSystemPods": "false",
        "skipNodesWithLocalStorage": "false", "maxNodeProvisionTime": "30m", "scaleDownUnneededTime": "40m",
        "scaleDownDelayAfterAdd": "30m"}
    # AKS user pools scale to zero; the autoscaler reads the pool's labels and taints from the scale set (the spot
    # pool here: h100-train is fixed at its reservation's 2 nodes).
    spot = rec.one("azure-native:containerservice:AgentPool", "azure-dev-a100-spot-pool").inputs
    assert (spot["enableAutoScaling"], spot["minCount"], spot["maxCount"]) == (True, 0, 4)
    assert "nvidia.com/gpu=present:NoSchedule" in spot["nodeTaints"]


def test_gke_cluster_uses_the_balanced_profile_without_auto_provisioning():
    rec = run_with_autoscaler(gcp, stack_config("gcp-dev"))
    cluster = rec.one("gcp:container/cluster:Cluster").inputs
    assert cluster["clusterAutoscaling"] == {"enabled": False, "autoscalingProfile": "BALANCED"}
    # GKE scales a GPU pool from zero by itself (the spot pool; h100-train is fixed for topology-aware placement).
    spot = rec.one("gcp:container/nodePool:NodePool", "gcp-dev-l4-spot-pool").inputs
    assert spot["autoscaling"]["totalMinNodeCount"] == 0


# ---------------------------------------------------------------------------------------------------------
# OKE: the Cluster Autoscaler add-on


@pytest.fixture(scope="module")
def oke():
    return run_with_autoscaler(oci, stack_config("oci-dev"), oke_autoscaler_from_config)


def test_oke_addon_scales_every_pool_with_its_bounds(oke):
    addon = oke.one("oci:ContainerEngine/addon:Addon").inputs
    assert (addon["addonName"], addon["clusterId"], addon["removeAddonResourcesOnDelete"]) == (
        "ClusterAutoscaler", "ocid1.cluster.oc1.iad.oci-dev-oke", True)
    assert addon["configurations"] == [
        {"key": "authType", "value": "workload"},
        # The a10-spot pool (the a10 pool's preemptible fallback) scales like any other.
        # h100-train is fixed at 2 nodes (its reservation), so the add-on leaves it out.
        {"key": "nodes", "value": "1:4:ocid1.nodepool.oc1.iad.oci-dev-a10-infer-nodes,"
                                  "0:4:ocid1.nodepool.oc1.iad.oci-dev-a10-spot-nodes"},
        {"key": "expander", "value": "least-waste"},
        {"key": "balanceSimilarNodeGroups", "value": "true"},
        {"key": "skipNodesWithSystemPods", "value": "false"},
        {"key": "skipNodesWithLocalStorage", "value": "false"},
        {"key": "maxNodeProvisionTime", "value": "25m"},
        {"key": "scaleDownUnneededTime", "value": "30m"},
        {"key": "scaleDownDelayAfterAdd", "value": "25m"},
    ]


def test_oke_addon_workload_identity_policy(oke):
    policy = oke.one("oci:Identity/policy:Policy", "oci-dev-cluster-autoscaler-policy").inputs
    compartment = "ocid1.compartment.oc1..aaaaaaaagpuplatformexamplecompartment0000000000000000"
    assert policy["compartmentId"] == compartment
    assert policy["statements"] == policy_statements(compartment, "ocid1.cluster.oc1.iad.oci-dev-oke")
    assert policy["statements"][0] == (
        f"Allow any-user to manage cluster-node-pools in compartment id {compartment} where ALL "
        "{request.principal.type='workload', request.principal.namespace='kube-system', "
        "request.principal.service_account='cluster-autoscaler', "
        "request.principal.cluster_id='ocid1.cluster.oc1.iad.oci-dev-oke'}")
    addon = oke.one("oci:ContainerEngine/addon:Addon")
    assert any(d.endswith("::oci-dev-cluster-autoscaler-policy") for d in addon.dependencies)


def test_oke_fixed_size_pools_are_left_alone_and_zero_minimum_pools_scale_from_zero():
    raw = strip_namespace(load_stack_file(STACKS / "Pulumi.oci-dev.yaml"))
    by_name = {p["name"]: p for p in raw["nodePools"]}
    # The a10 pool without its spot fallback, and the RDMA pool fixed at its minimum.
    a10 = {k: v for k, v in by_name["a10-infer"].items() if k != "fallbackPool"}
    pools = [{**a10, "minNodes": 0, "maxNodes": 3}, {**by_name["h100-train"], "maxNodes": 2}]
    # The smaller pools hold fewer GPUs than the stack's teams are promised: this test is about the autoscaler.
    scheduling = {**raw.get("scheduling", {}), "overcommit": True}
    config = parse_config({**raw, "nodePools": pools, "scheduling": scheduling}, "oci-dev")
    rec = run_with_autoscaler(oci, config, oke_autoscaler_from_config)
    nodes = next(c for c in rec.one("oci:ContainerEngine/addon:Addon").inputs["configurations"]
                 if c["key"] == "nodes")
    assert nodes["value"] == "0:3:ocid1.nodepool.oc1.iad.oci-dev-a10-infer-nodes"


def test_oke_needs_a_pool_to_scale():
    with pytest.raises(ValueError, match="at least one node pool"):
        profile.oke_addon_configurations(GPU_PROFILE, [])


@pytest.mark.parametrize("stack", ["azure-dev", "gcp-dev", "existing"])
def test_clouds_that_scale_their_own_pools_get_no_node_autoscaler_component(stack):
    from gpu_platform.clouds.autoscalers import node_autoscaler_from_config

    assert node_autoscaler_from_config(stack, stack_config(stack), None, pulumi.ResourceOptions()) is None
