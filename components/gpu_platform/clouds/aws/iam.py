"""IAM documents and managed policies of an EKS cluster and its nodes. Pure data, no SDK."""

import json

CLUSTER_SERVICE = "eks.amazonaws.com"
NODE_SERVICE = "ec2.amazonaws.com"

CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)
"""What the EKS control plane needs (EKS user guide ``cluster-iam-role``)."""
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)
"""Node role: join the cluster, pull images, and Session Manager instead of SSH. The VPC CNI's ENI permissions
(``AmazonEKS_CNI_Policy``) are on its own role, bound to ``aws-node`` by EKS Pod Identity (`security.VPC_CNI_POLICIES`):
whatever the node role holds, a process that reaches IMDS on the node holds too."""

CLUSTER_ADMIN_ACCESS_POLICY = "AmazonEKSClusterAdminPolicy"


def assume_role_policy(service: str, actions: tuple[str, ...] = ("sts:AssumeRole",)) -> str:
    """Trust policy letting an AWS service assume the role."""
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}],
    }, sort_keys=True)


def managed_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


def access_policy_arn(partition: str, name: str) -> str:
    """An EKS access policy (``AmazonEKSClusterAdminPolicy``) for access-entry associations."""
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"
