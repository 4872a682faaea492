"""Secure by default on EKS (issue 17): the exact inputs AWS receives for network policy enforcement, IMDS, the
VPC CNI's own identity, the API endpoint's reach and Secrets envelope encryption; the stack keys and component
arguments that change them, and the old ones refused."""

import json
import re

import pulumi
import pytest

from gpu_platform import testing, versions
from gpu_platform.clouds import aws
from gpu_platform.clouds.aws import options as aws_options
from gpu_platform.clouds.aws import security
from gpu_platform.clouds.aws.karpenter import karpenter_from_config
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import pool_args
from gpu_platform.testing import run_program

ADDON = "aws:eks/addon:Addon"
CLUSTER = "aws:eks/cluster:Cluster"
KEY = "aws:kms/key:Key"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
RELEASE = "kubernetes:helm.sh/v3:Release"
KEY_ARN = f"arn:aws:kms:{testing.DEFAULT_REGION}:{testing.ACCOUNT_ID}:key/dev-secrets-key"
IMDS = {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1}
L4 = {"name": "l4", "instanceType": "g6.xlarge", "maxNodes": 3}
H100 = {"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2, "rdma": True}


def cluster(**over):
    args = {"region": "us-west-2", "kubernetes_version": "1.34", "addon_versions": dict(versions.EKS_ADDONS["1.34"]),
            "availability_zones": ["us-west-2a", "us-west-2b", "us-west-2c"],
            "gpu_pools": [pool_args("aws", L4), pool_args("aws", H100)], **over}
    return run_program(lambda: aws.EksCluster("dev", args))


@pytest.fixture(scope="module")
def default():
    return cluster()


def names(deps):
    return {d.rsplit("::", 1)[-1] for d in deps}


# ---------------------------------------------------------------------------------------------------------
# Network policies


def test_vpc_cni_enforces_network_policies(default):
    addons = {r.inputs["addonName"]: r.inputs for r in default.of_type(ADDON)}
    assert addons["vpc-cni"]["configurationValues"] == '{"enableNetworkPolicy": "true"}'
    for other in ("kube-proxy", "eks-pod-identity-agent", "coredns"):
        assert "configurationValues" not in addons[other]


def test_network_policy_key_is_the_chart_value_of_every_pinned_vpc_cni():
    # aws/amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml declares enableNetworkPolicy (a string) from
    # v1.14; every pinned add-on version is newer.
    for pinned in versions.EKS_ADDONS.values():
        major, minor = (int(part) for part in pinned["vpc-cni"].lstrip("v").split(".")[:2])
        assert (major, minor) >= (1, 19)
    assert json.loads(security.addon_configuration("vpc-cni")) == {"enableNetworkPolicy": "true"}


# ---------------------------------------------------------------------------------------------------------
# IMDS: every node, one hop, tokens required


def test_every_node_group_has_imdsv2_with_hop_limit_one(default):
    groups = default.of_type(NODE_GROUP)
    assert sorted(g.name for g in groups) == ["dev-h100-nodes", "dev-l4-nodes", "dev-system"]
    templates = {f"{t.name}-id": t for t in default.of_type(LAUNCH_TEMPLATE)}  # the harness's ids
    for group in groups:
        template_id = group.inputs["launchTemplate"]["id"]
        template = templates[template_id].inputs
        assert template["metadataOptions"] == IMDS, group.name


def test_system_node_group_gets_its_disk_from_its_launch_template(default):
    system = default.one(NODE_GROUP, "dev-system")
    assert system.inputs["launchTemplate"] == {"id": "dev-system-lt-id", "version": "1"}
    assert "diskSize" not in system.inputs  # EKS refuses disk_size beside a launch template
    template = default.one(LAUNCH_TEMPLATE, "dev-system-lt").inputs
    assert template["blockDeviceMappings"] == [{"deviceName": "/dev/xvda", "ebs": {
        "volumeSize": 50, "volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"}}]
    assert template["tagSpecifications"] == [{"resourceType": "instance", "tags": {"Name": "dev-system"}}]
    assert "dev-system-lt" in names(system.dependencies)


KARPENTER = {
    "cloud": "aws", "region": "us-west-2", "availabilityZones": ["us-west-2a", "us-west-2b"],
    "autoscaling": {"autoscaler": "karpenter"},
    "nodePools": [{"name": "train", "instanceType": "p5.48xlarge", "rdma": True, "minNodes": 1, "maxNodes": 3},
                  {"name": "infer", "instanceType": "g6.xlarge", "maxNodes": 2}],
}


@pytest.fixture(scope="module")
def karpenter():
    """The AWS layer and Karpenter of a stack with a baseline node group and a Karpenter-only pool."""
    config = parse_config(KARPENTER, "k")

    def program():
        handle = aws.cluster_from_config("k", config, pulumi.ResourceOptions())
        karpenter_from_config("k", config, handle, pulumi.ResourceOptions(providers={"kubernetes": handle.provider}))

    return run_program(program, stack="k")


def test_karpenter_nodes_have_hop_limit_one_and_the_controller_its_region(karpenter):
    classes = karpenter.of_type(NODE_CLASS)
    assert sorted(c.inputs["metadata"]["name"] for c in classes) == ["infer", "train"]
    for node_class in classes:
        assert node_class.inputs["spec"]["metadataOptions"] == {
            "httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1,
            "httpTokens": "required"}
    assert sorted(t.name for t in karpenter.of_type(LAUNCH_TEMPLATE)) == ["k-system-lt", "k-train-lt"]
    for template in karpenter.of_type(LAUNCH_TEMPLATE):
        assert template.inputs["metadataOptions"] == IMDS
    controller = next(r for r in karpenter.of_type(RELEASE) if r.inputs["chart"].endswith("/karpenter"))
    assert controller.inputs["values"]["controller"]["env"] == [{"name": "AWS_REGION", "value": "us-west-2"}]
    assert controller.name == "k-karpenter-controller"


def test_karpenter_node_role_has_no_cni_policy(karpenter):
    arns = sorted(r.inputs["policyArn"].rsplit("/", 1)[-1] for r in karpenter.of_type(ATTACHMENT)
                  if "-node-role-" in r.name)
    assert arns == sorted(["AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly",
                           "AmazonSSMManagedInstanceCore"] * 2)  # the node groups' role and Karpenter's


# ---------------------------------------------------------------------------------------------------------
# The VPC CNI's own identity


def test_node_role_has_no_cni_policy_and_the_cni_role_has_it(default):
    by_role: dict[str, list[str]] = {}
    for attachment in default.of_type(ATTACHMENT):
        by_role.setdefault(attachment.inputs["role"], []).append(attachment.inputs["policyArn"])
    assert sorted(by_role["dev-node-role"]) == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"]
    assert by_role["dev-vpc-cni-role"] == ["arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"]


def test_cni_role_trusts_eks_pod_identity_and_binds_aws_node(default):
    role = default.one(ROLE, "dev-vpc-cni-role").inputs
    assert json.loads(role["assumeRolePolicy"]) == {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
         "Action": ["sts:AssumeRole", "sts:TagSession"]}]}
    cni = default.one(ADDON, "dev-vpc-cni")
    # The add-on's own association: the namespace is the add-on's (kube-system).
    assert cni.inputs["podIdentityAssociations"] == [
        {"roleArn": "arn:aws:iam::123456789012:role/dev-vpc-cni-role", "serviceAccount": "aws-node"}]
    assert default.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation") == []


def test_cni_credentials_exist_before_any_node(default):
    cni = default.one(ADDON, "dev-vpc-cni")
    # The agent that serves the credentials, and the role's permissions, come first.
    assert {"dev-eks-pod-identity-agent", "dev-vpc-cni-role-amazoneks-cni-policy"} <= names(cni.dependencies)
    for group in default.of_type(NODE_GROUP):
        assert {"dev-vpc-cni", "dev-eks-pod-identity-agent"} <= names(group.dependencies), group.name


# ---------------------------------------------------------------------------------------------------------
# The API endpoint


def test_endpoint_is_private_by_default(default):
    vpc = default.one(CLUSTER, "dev-eks").inputs["vpcConfig"]
    assert (vpc["endpointPrivateAccess"], vpc["endpointPublicAccess"]) == (True, False)
    assert "publicAccessCidrs" not in vpc


def test_allowed_cidrs_open_a_public_endpoint_to_them_only():
    vpc = cluster(api_allowed_cidrs=["203.0.113.0/24"]).one(CLUSTER, "dev-eks").inputs["vpcConfig"]
    assert (vpc["endpointPrivateAccess"], vpc["endpointPublicAccess"], vpc["publicAccessCidrs"]) == (
        True, True, ["203.0.113.0/24"])


@pytest.mark.parametrize(("cidrs", "expected"), [
    ([], {"endpoint_private_access": True, "endpoint_public_access": False}),
    (["203.0.113.0/24", "198.51.100.7/32"], {"endpoint_private_access": True, "endpoint_public_access": True,
                                             "public_access_cidrs": ["203.0.113.0/24", "198.51.100.7/32"]}),
])
def test_endpoint_access(cidrs, expected):
    assert security.endpoint_access(cidrs) == expected


def test_bad_cidr_in_component_args_is_refused_before_anything_registers():
    with pytest.raises(ConfigError, match="^" + re.escape(
            "EksCluster dev: api_allowed_cidrs[0]: '203.0.113.1/24' is not an IPv4 CIDR block such as "
            "203.0.113.0/24 (203.0.113.1/24 has host bits set)") + "$"):
        aws.EksCluster("dev", {"region": "us-west-2", "kubernetes_version": "1.34",
                               "addon_versions": dict(versions.EKS_ADDONS["1.34"]),
                               "api_allowed_cidrs": ["203.0.113.1/24"]})


# ---------------------------------------------------------------------------------------------------------
# Secrets encryption


def test_secrets_are_envelope_encrypted_with_the_clusters_own_key(default):
    key = default.one(KEY, "dev-secrets-key")
    assert key.inputs == {"description": "Envelope encryption of the Kubernetes Secrets of EKS cluster dev",
                          "enableKeyRotation": True, "deletionWindowInDays": 30, "tags": {}}
    component = default.one("gpuplatform:index:EksCluster", "dev")
    assert key.parent == component.urn
    eks = default.one(CLUSTER, "dev-eks")
    assert eks.inputs["encryptionConfig"] == {"provider": {"keyArn": KEY_ARN}, "resources": ["secrets"]}
    policy = default.one(ROLE_POLICY, "dev-cluster-role-secrets-key")
    assert policy.inputs["role"] == "dev-cluster-role-id"
    assert json.loads(policy.inputs["policy"]) == {"Version": "2012-10-17", "Statement": [
        {"Sid": "SecretsEnvelopeEncryption", "Effect": "Allow", "Resource": KEY_ARN,
         "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey"]}]}
    assert "dev-cluster-role-secrets-key" in names(eks.dependencies)


def test_secrets_encryption_off_creates_no_key():
    rec = cluster(secrets_encryption=False)
    assert rec.of_type(KEY) == [] and rec.of_type(ROLE_POLICY) == []
    assert "encryptionConfig" not in rec.one(CLUSTER, "dev-eks").inputs


# ---------------------------------------------------------------------------------------------------------
# The stack keys reach the cluster; the old ones are refused


def stack(**cluster_keys):
    return {"cloud": "aws", "region": "us-west-2", "nodePools": [dict(L4)], **cluster_keys}


def plan(raw):
    config = parse_config(raw, "s")
    return run_program(lambda: aws.cluster_from_config("s", config, pulumi.ResourceOptions()), stack="s")


@pytest.mark.parametrize(("keys", "vpc", "encrypted"), [
    ({}, {"endpointPrivateAccess": True, "endpointPublicAccess": False}, True),
    ({"apiAllowedCidrs": ["203.0.113.0/24"]},
     {"endpointPrivateAccess": True, "endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}, True),
    ({"secretsEncryption": False}, {"endpointPrivateAccess": True, "endpointPublicAccess": False}, False),
], ids=["defaults", "apiAllowedCidrs", "secretsEncryption"])
def test_stack_keys_take_effect(keys, vpc, encrypted):
    rec = plan(stack(**keys))
    inputs = rec.one(CLUSTER, "s-eks").inputs
    assert {k: v for k, v in inputs["vpcConfig"].items() if k != "subnetIds"} == vpc
    assert ("encryptionConfig" in inputs) == encrypted
    assert len(rec.of_type(KEY)) == int(encrypted)
    if encrypted:
        assert inputs["encryptionConfig"]["provider"] == {
            "keyArn": f"arn:aws:kms:{testing.DEFAULT_REGION}:{testing.ACCOUNT_ID}:key/s-secrets-key"}


def test_stack_options_carry_the_control_plane_settings():
    options = parse_config(stack(apiAllowedCidrs=["203.0.113.0/24"], secretsEncryption=False), "s").cluster_options
    assert (options.control_plane.api_allowed_cidrs, options.control_plane.secrets_encryption) == (
        ("203.0.113.0/24",), False)
    assert {"apiAllowedCidrs", "secretsEncryption"} <= aws_options.CLUSTER_KEYS
    assert not {"endpointPublicAccess", "publicAccessCidrs"} & aws_options.CLUSTER_KEYS


@pytest.mark.parametrize(("raw", "message"), [
    (stack(apiAllowedCidrs=["203.0.113.1/24"]),
     "s: apiAllowedCidrs[0]: '203.0.113.1/24' is not an IPv4 CIDR block such as 203.0.113.0/24 (203.0.113.1/24 has "
     "host bits set)"),
    (stack(apiAllowedCidrs="203.0.113.0/24"), None),
    (stack(secretsEncryption="yes"), None),
], ids=["host bits", "not a list", "not a bool"])
def test_bad_stack_values_fail_with_one_line(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    text = str(err.value)
    assert "\n" not in text
    if message is None:
        assert text.startswith(("s: apiAllowedCidrs: ", "s: secretsEncryption: ")), text
    else:
        assert text == message


@pytest.mark.parametrize("old", ["endpointPublicAccess", "publicAccessCidrs"])
def test_old_endpoint_keys_are_refused_in_one_line(old):
    raw = stack(**{old: ["0.0.0.0/0"] if old == "publicAccessCidrs" else True})
    with pytest.raises(ConfigError, match="^" + re.escape(
            f"s: {old}: was replaced by apiAllowedCidrs (empty: private endpoint only; a list of CIDRs: a public "
            "endpoint open to those CIDRs only)") + "$"):
        parse_config(raw, "s")
