"""What makes an EKS cluster secure by default, as plain data: no SDK, every decision a function or a constant.

- Network policies are enforced: the ``vpc-cni`` add-on runs its network policy agent.
- Pods cannot take the node's AWS credentials: every node requires IMDSv2 with a PUT response hop limit of 1,
  and the node role no longer carries the VPC CNI's permissions; ``aws-node`` gets them from its own IAM role
  through EKS Pod Identity.
- The API endpoint is private unless ``api_allowed_cidrs`` names who may reach it publicly.
- Kubernetes Secrets are envelope-encrypted with a customer-managed KMS key the cluster owns.
"""

import json
from collections.abc import Sequence
from typing import Any, Optional

VPC_CNI, POD_IDENTITY_AGENT = "vpc-cni", "eks-pod-identity-agent"

ADDON_CONFIGURATION: dict[str, dict[str, Any]] = {
    # EKS user guide ``cni-network-policy-configure`` ("Enable the network policy parameter for the add-on"):
    # ``{"enableNetworkPolicy": "true"}``, a string as the chart's values.yaml declares it (``enableNetworkPolicy:
    # "false"`` in aws/amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml at v1.19.5, v1.20.4 and v1.21.1, the
    # pinned add-on versions). Without it NetworkPolicy objects are accepted and never enforced.
    VPC_CNI: {"enableNetworkPolicy": "true"},
}
"""The configuration values of each managed add-on that gets any (schema: ``aws eks describe-addon-configuration``)."""


def addon_configuration(addon: str) -> Optional[str]:
    """The add-on's ``configuration_values`` JSON, or None for an add-on that runs on EKS's defaults."""
    values = ADDON_CONFIGURATION.get(addon)
    return json.dumps(values, sort_keys=True) if values else None


# ---------------------------------------------------------------------------------------------------------
# Instance metadata (IMDS)

IMDS_HOP_LIMIT = 1
"""The IMDSv2 token's PUT response travels one hop: it reaches processes in the node's network namespace
(kubelet, and hostNetwork pods such as aws-node, kube-proxy, the pod identity agent and the EFA device plugin) but
not a pod in its own network namespace, whose veth adds a hop. AWS: "requests to IMDS from pods [are] rejected,
provided those pods do not use host networking" (whitepaper "Security Practices for Multi-Tenant SaaS
Applications using Amazon EKS", restrict-the-use-of-host-networking-and-block-access-to-instance-metadata-service).
Pods that need AWS get their own role through EKS Pod Identity instead of the node's."""

LAUNCH_TEMPLATE_METADATA_OPTIONS = {"http_endpoint": "enabled", "http_tokens": "required",
                                    "http_put_response_hop_limit": IMDS_HOP_LIMIT}
"""``aws.ec2.LaunchTemplate`` ``metadata_options`` of every node group: IMDSv2 only, one hop."""

NODE_CLASS_METADATA_OPTIONS = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                               "httpPutResponseHopLimit": IMDS_HOP_LIMIT, "httpTokens": "required"}
"""EC2NodeClass ``spec.metadataOptions`` of every Karpenter pool: the same as the node groups' launch templates."""


# ---------------------------------------------------------------------------------------------------------
# EKS Pod Identity

POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"
POD_IDENTITY_ACTIONS = ("sts:AssumeRole", "sts:TagSession")
"""EKS Pod Identity assumes roles with session tags (EKS user guide ``pod-id-role``)."""

VPC_CNI_SERVICE_ACCOUNT = "aws-node"
"""The service account the VPC CNI's ``aws-node`` DaemonSet runs as (EKS user guide ``cni-iam-role``); an
add-on's associations live in its own namespace, ``kube-system``."""
VPC_CNI_POLICIES = ("AmazonEKS_CNI_Policy",)
"""The VPC CNI's permissions on its own role, not the node role. EKS user guide ``cni-iam-role``: "You can attach
the policy to the Amazon EKS node IAM role, or to a separate IAM role [...] We recommend that you assign it to a
separate role", then "remove the CNI policy from the node IAM role"; ``add-ons-iam``: "The recommended way to
grant AWS permissions to cluster workloads is using [...] Pod Identities", with the association created by the
add-on itself (an add-on cannot adopt an association created apart from it)."""


# ---------------------------------------------------------------------------------------------------------
# Control plane: the API endpoint and Secrets encryption


def endpoint_access(api_allowed_cidrs: Sequence[str]) -> dict[str, Any]:
    """``vpc_config`` endpoint fields: always a private endpoint (nodes and anything in the VPC reach the API
    inside it); a public one only when someone is allowed to reach it, open to those CIDRs alone.

    ``public_access_cidrs`` is left out of a private-only cluster: EKS keeps its own ``0.0.0.0/0`` there, which
    grants nothing while the public endpoint is off."""
    access: dict[str, Any] = {"endpoint_private_access": True, "endpoint_public_access": bool(api_allowed_cidrs)}
    if api_allowed_cidrs:
        access["public_access_cidrs"] = list(api_allowed_cidrs)
    return access


SECRETS_KEY_DELETION_WINDOW_DAYS = 30
"""The longest KMS allows (7-30): a deleted key leaves the cluster unrecoverable (EKS user guide ``enable-kms``:
"If you delete the KMS key, you permanently put the cluster in a degraded state"), so a mistaken deletion gets
the most time to be cancelled."""


def secrets_key_description(cluster_name: str) -> str:
    """The KMS key's description, as the console shows it."""
    return f"Envelope encryption of the Kubernetes Secrets of EKS cluster {cluster_name}"


def encryption_config(key_arn: Any) -> dict[str, Any]:
    """The cluster's ``encryption_config``: Secrets (the one resource EKS encrypts) under ``key_arn``."""
    return {"provider": {"key_arn": key_arn}, "resources": ["secrets"]}


SECRETS_KEY_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey")
"""What the cluster role may do with the Secrets key. The EKS user guide (``cluster-iam-role``) requires only
AmazonEKSClusterPolicy (``kms:DescribeKey``); EKS also calls ``kms:ListGrants`` as the cluster role in its hourly
health check, denied and alarmed without it (terraform-aws-modules/terraform-aws-eks#1913, fixed in #1915 with
this action set, the model codebase's grant for a key it creates). Scoped to the one key."""


def secrets_key_policy(key_arn: str) -> str:
    """The cluster role's inline policy on its Secrets key (the key keeps KMS's default key policy, which lets
    IAM policies of the account grant its use)."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "SecretsEnvelopeEncryption", "Effect": "Allow", "Action": list(SECRETS_KEY_ACTIONS),
         "Resource": key_arn}]}, sort_keys=True)
