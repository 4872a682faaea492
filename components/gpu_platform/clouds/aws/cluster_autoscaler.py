"""`EksClusterAutoscaler`: the Kubernetes cluster-autoscaler for EKS managed node groups
(``autoscaling.autoscaler: cluster-autoscaler``, the AWS default).

The pinned chart on the system node group, its AWS credentials by EKS pod identity, node groups found by
auto-discovery (the ``k8s.io/cluster-autoscaler/enabled`` and ``k8s.io/cluster-autoscaler/<cluster>`` tags, written
on every GPU pool's Auto Scaling group so discovery never depends on what EKS adds), the GPU profile's flags
(``autoscaler_profile``). Scale from zero works because the AWS layer tags each pool's Auto Scaling group with its
node template (labels, taints, ``nvidia.com/gpu`` and EFA resources) and labels the nodes with
``k8s.amazonaws.com/accelerator``, the label by which the autoscaler waits for a new node's GPUs instead of adding
another node.
"""

import json
import re
from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ... import labels
from ...component_args import KeywordArgs
from ...config_model import PlatformConfig
from ...kubernetes_base.common import child_opts, helm_release
from ...versions import CLUSTER_AUTOSCALER, CLUSTER_AUTOSCALER_IMAGE_TAGS
from .. import missing_extra
from ..autoscaler_profile import GpuScalingProfile, cluster_autoscaler_flags
from ..handle import ClusterHandle
from . import contract
from . import iam as aws_iam
from .security import POD_IDENTITY_ACTIONS, POD_IDENTITY_SERVICE

try:
    import pulumi_aws as aws
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"


def cluster_tag(cluster_name: str) -> str:
    """The per-cluster auto-discovery tag key (the chart's default ``autoDiscovery.tags``)."""
    return f"k8s.io/cluster-autoscaler/{cluster_name}"


def discovery_tags(cluster_name: str) -> dict[str, str]:
    """What auto-discovery matches (the key only) and what the IAM policy scopes scaling to (the values)."""
    return {ENABLED_TAG: "true", cluster_tag(cluster_name): "owned"}


def iam_policy(cluster_name: str) -> str:
    """The autoscaler's permissions (cloudprovider/aws README "IAM Policy", with DescribeTags for auto-discovery
    and DescribeLaunchTemplateVersions for node groups on launch templates); it may only resize and shrink the
    Auto Scaling groups tagged for this cluster."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "Describe", "Effect": "Allow", "Resource": "*", "Action": [
            "autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeAutoScalingInstances",
            "autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeScalingActivities",
            "autoscaling:DescribeTags", "ec2:DescribeImages", "ec2:DescribeInstanceTypes",
            "ec2:DescribeLaunchTemplateVersions", "ec2:GetInstanceTypesFromInstanceRequirements",
            "eks:DescribeNodegroup"]},
        {"Sid": "ScaleOwnNodeGroups", "Effect": "Allow", "Resource": "*",
         "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
         "Condition": {"StringEquals": {f"aws:ResourceTag/{k}": v for k, v in discovery_tags(cluster_name).items()}}},
    ]}, sort_keys=True)


def image_tag(kubernetes_version: str) -> str:
    """The autoscaler release for the cluster's Kubernetes minor (it simulates that minor's scheduler)."""
    try:
        return CLUSTER_AUTOSCALER_IMAGE_TAGS[kubernetes_version]
    except KeyError:
        pinned = ", ".join(sorted(CLUSTER_AUTOSCALER_IMAGE_TAGS))
        raise ValueError(f"no cluster-autoscaler pinned for Kubernetes {kubernetes_version} (pinned: {pinned})") \
            from None


def chart_values(cluster_name: Any, region: str, kubernetes_version: str, system_node_group: Any,
                 profile: GpuScalingProfile) -> dict[str, Any]:
    """Values of the cluster-autoscaler chart (keys: tests/data/chart_keys/cluster-autoscaler-9.43.1.keys)."""
    return {
        "cloudProvider": "aws",
        # The chart turns it into AWS_REGION (templates/deployment.yaml): the region never comes from IMDS, which a
        # pod cannot reach on nodes with hop limit 1; credentials come from EKS Pod Identity.
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "rbac": {"serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}},
        "image": {"tag": image_tag(kubernetes_version)},
        "replicaCount": 1,
        "priorityClassName": "system-cluster-critical",
        # On the system node group: never on a node it might remove.
        "nodeSelector": {labels.EKS_NODEGROUP_LABEL: system_node_group},
        "extraArgs": cluster_autoscaler_flags(profile),
    }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class EksClusterAutoscalerArgs(TypedDict, total=False):
    """Arguments of `EksClusterAutoscaler`."""

    cluster_name: Required[pulumi.Input[str]]
    """EKS cluster name (auto-discovery and the IAM scope)."""
    region: Required[str]
    """AWS region of the cluster."""
    kubernetes_version: Required[str]
    """Kubernetes minor of the cluster; picks the autoscaler image."""
    system_node_group_name: Required[pulumi.Input[str]]
    """The system node group the autoscaler runs on."""
    autoscaling_group_names: dict[str, pulumi.Input[str]]
    """Auto Scaling group of each GPU pool's node group, by pool name: tagged for auto-discovery."""
    scale_down_unneeded_minutes: int
    """How long a GPU node stays unneeded before it is removed. Default 30."""
    max_node_provision_minutes: int
    """How long a new GPU node may take to become ready. Default 25."""
    tags: dict[str, str]
    """Tags on the IAM role and pod identity association."""


class EksClusterAutoscaler(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The cluster-autoscaler (pinned chart) for an EKS cluster's managed node groups, with its IAM role bound by
    pod identity and the GPU pools' Auto Scaling groups tagged for auto-discovery.

    Composed with an `EksCluster` (whose ``min_nodes: 0`` pools need it to get a node), every argument comes from
    the cluster: ``cluster_name``, ``region``, ``kubernetes_version``, ``system_node_group_name`` and
    ``autoscaling_group_names`` are its attributes of those names; pass ``providers={"kubernetes":
    cluster.provider}``. See docs/autoscaling.md, "Composing (AWS)"."""

    role: aws.iam.Role
    pod_identity: aws.eks.PodIdentityAssociation
    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: EksClusterAutoscalerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = contract.autoscaler_args(name, args, EksClusterAutoscalerArgs)  # refused before anything registers
        super().__init__("gpuplatform:index:EksClusterAutoscaler", name, {}, opts)
        tags = dict(args.get("tags", {}))
        cluster = pulumi.Output.from_input(args["cluster_name"])
        profile = GpuScalingProfile(int(args.get("scale_down_unneeded_minutes", 30)),
                                    int(args.get("max_node_provision_minutes", 25)))
        values = chart_values(cluster, args["region"], args["kubernetes_version"], args["system_node_group_name"],
                              profile)

        self.role = aws.iam.Role(
            f"{name}-role", assume_role_policy=aws_iam.assume_role_policy(POD_IDENTITY_SERVICE, POD_IDENTITY_ACTIONS),
            tags=tags, opts=child_opts(self, opts))
        self.policy = aws.iam.RolePolicy(f"{name}-scaling", role=self.role.id, policy=cluster.apply(iam_policy),
                                         opts=child_opts(self, opts))
        self.pod_identity = aws.eks.PodIdentityAssociation(
            f"{name}-identity", cluster_name=cluster, namespace=NAMESPACE, service_account=SERVICE_ACCOUNT,
            role_arn=self.role.arn, tags=tags, opts=child_opts(self, opts))
        self.discovery_tags = [
            aws.autoscaling.Tag(f"{name}-{_slug(pool)}-{suffix}", autoscaling_group_name=group,
                                tag={"key": key, "value": value, "propagate_at_launch": False},
                                opts=child_opts(self, opts))
            for pool, group in sorted(args.get("autoscaling_group_names", {}).items())
            for suffix, key, value in _discovery(cluster)
        ]
        self.release = helm_release(
            f"{name}-chart", CLUSTER_AUTOSCALER, "cluster-autoscaler", NAMESPACE, values,
            child_opts(self, opts, depends_on=[self.pod_identity, self.policy, *self.discovery_tags]),
            create_namespace=False)
        self.register_outputs({"role_arn": self.role.arn})


def _discovery(cluster: pulumi.Output[str]) -> list[tuple[str, pulumi.Input[str], str]]:
    """(name suffix, key, value) of both discovery tags; the per-cluster key is known once the cluster name is."""
    return [("enabled", ENABLED_TAG, "true"), ("cluster", cluster.apply(cluster_tag), "owned")]


def cluster_autoscaler_from_config(name: str, config: PlatformConfig, handle: ClusterHandle,
                                   opts: pulumi.ResourceOptions) -> EksClusterAutoscaler:
    """The cluster-autoscaler of an EKS stack, on the stack's AWS provider."""
    out = handle.outputs
    return EksClusterAutoscaler(f"{name}-cluster-autoscaler", EksClusterAutoscalerArgs(
        cluster_name=handle.cluster_name,
        region=config.region,
        kubernetes_version=config.kubernetes_version,
        system_node_group_name=out["system_node_group_name"],
        autoscaling_group_names=dict(out["autoscaling_group_names"]),
        scale_down_unneeded_minutes=config.autoscaling.scale_down_unneeded_minutes,
        max_node_provision_minutes=config.autoscaling.max_node_provision_minutes,
        tags=dict(out.get("tags", {})),
    ), opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers={"aws": out["aws_provider"]})))
