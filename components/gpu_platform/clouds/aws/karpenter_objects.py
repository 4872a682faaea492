"""Karpenter on EKS as plain data: pool split, NodePool and EC2NodeClass bodies, chart values, IAM, interruptions.

No SDK: every decision of `aws_karpenter.KarpenterAutoscaler` is a function here.

- Pool split: Karpenter provisions nodes for pending pods only; it keeps no minimum. A pool with ``minNodes > 0``
  keeps that baseline on a fixed-size managed node group and Karpenter adds up to ``maxNodes - minNodes`` on top,
  with the same labels and taints (one pool to the Kubernetes layer); a pool with ``minNodes == 0`` is Karpenter
  only, scaled from zero.
- One NodePool + EC2NodeClass per pool: the pool's instance type (catalog) and capacity type, its labels and
  taints, limits of its accelerator resource (``nvidia.com/gpu``), the EKS-optimized NVIDIA AMI by alias
  (``al2023@latest`` / ``bottlerocket@latest``: Karpenter picks the NVIDIA variant for GPU instance types; a new AMI
  release drifts the nodes, which the disruption budgets hold to the maintenance window or, on ``automatic: never``
  pools, forever: `upgrade.disruption_budgets`), and on
  EFA pools one ``efa-only`` interface per network card behind a primary ENA interface, in a cluster placement
  group.
- Controller IAM (pod identity) and the interruption queue follow Karpenter's own CloudFormation template at the
  pinned version (website/content/en/docs/getting-started/getting-started-with-karpenter/cloudformation.yaml),
  except that the node instance profile is created with the stack, so the controller needs no rights to create
  or delete instance profiles.
"""

import json
from dataclasses import dataclass, replace
from typing import Any, Optional

from ... import labels
from ...pools import GpuPool
from ...upgrades.maintenance import DEFAULT_WINDOW, MaintenanceWindow
from ...upgrades.pool_upgrade import PoolUpgrade
from ...versions import KARPENTER_API_VERSION, KARPENTER_AWS_API_VERSION
from .options import BOTTLEROCKET_NVIDIA, CAPACITY_BLOCK, SPOT
from .security import NODE_CLASS_METADATA_OPTIONS
from .upgrade import disruption_budgets, termination_grace_period

NAMESPACE = "kube-system"
"""Karpenter's getting-started namespace; its pod identity association names it."""
SERVICE_ACCOUNT = "karpenter"
NODE_CLASS_GROUP = "karpenter.k8s.aws"
INTERFACE, EFA_ONLY = "interface", "efa-only"
"""EC2NodeClass ``networkInterfaces[].interfaceType`` values (CRD enum)."""
AMI_ALIASES = {BOTTLEROCKET_NVIDIA: "bottlerocket@latest"}
DEFAULT_AMI_ALIAS = "al2023@latest"
"""AL2023 on NVIDIA and Neuron pools alike: the alias resolves the standard, nvidia and neuron x86_64 AMIs and gives
the neuron one to instance types with ``karpenter.k8s.aws/instance-accelerator-count`` (inf2, trn1, trn2), the
nvidia one to those with a GPU count (aws/karpenter-provider-aws@v1.14.1:pkg/providers/amifamily/al2023.go,
types.go ``Variant.Requirements``), so ``AL2023_x86_64_NEURON`` pools need no alias of their own."""
# Bottlerocket keeps the OS on /dev/xvda and images on /dev/xvdb; overriding the mappings replaces Karpenter's
# defaults, so the OS volume is restated at Karpenter's default size.
BOTTLEROCKET_OS_VOLUME = {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi", "volumeType": "gp3",
                                                             "encrypted": True, "deleteOnTermination": True}}
EXPIRE_AFTER = "Never"
"""Nodes do not expire. Karpenter v1 expiration is forceful: it consults no disruption budget (karpenter.sh
concepts/disruption, "Expiration"; aws/karpenter-provider-aws#6423), so an ``expireAfter`` would replace a training
node outside the maintenance window. Fresh AMIs come by drift instead (the ``@latest`` alias), which the budgets
hold to the window (`upgrade.disruption_budgets`)."""
TERMINATION_GRACE_PERIOD = "48h"
"""A training rank gets up to two days to checkpoint and finish before a disrupted node is forced down (default;
``nodePools[].upgrade.drainTimeoutMinutes`` sets it)."""
INTERRUPTION_EVENTS: dict[str, dict[str, list[str]]] = {
    "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "instance-state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "capacity-reservation-interruption": {
        "source": ["aws.ec2"], "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"]},
}
"""EventBridge rules feeding the interruption queue (cloudformation.yaml: ScheduledChangeRule, SpotInterruptionRule,
RebalanceRule, InstanceStateChangeRule, CapacityReservationInterruptionRule)."""
QUEUE_RETENTION_SECONDS = 300
INTERRUPTION_TARGET_ID = "KarpenterInterruptionQueueTarget"


@dataclass(frozen=True)
class PoolSplit:
    """How a GPU pool's nodes are shared between a managed node group and Karpenter."""

    baseline_nodes: int
    """Nodes a fixed-size managed node group keeps (0: no node group)."""
    karpenter_nodes: int
    """Nodes Karpenter may add on top (0: no NodePool)."""


def split(pool: GpuPool) -> PoolSplit:
    """``minNodes`` stay on a managed node group (Karpenter keeps no minimum), the rest is Karpenter's."""
    return PoolSplit(baseline_nodes=pool.min_nodes, karpenter_nodes=pool.max_nodes - pool.min_nodes)


def baseline_pool(pool: GpuPool) -> GpuPool:
    """The pool as its fixed-size managed node group runs it: ``minNodes`` nodes, no more."""
    return replace(pool, max_nodes=pool.min_nodes)


@dataclass(frozen=True)
class KarpenterPool:
    """Everything one NodePool + EC2NodeClass pair is built from."""

    pool: GpuPool
    nodes: int
    """Nodes Karpenter may run for the pool (the NodePool's GPU limit is this many nodes' GPUs)."""
    ami_type: str
    """The pool's EKS AMI type (``AL2023_x86_64_NVIDIA`` / ``BOTTLEROCKET_x86_64_NVIDIA`` /
    ``AL2023_x86_64_NEURON``)."""
    capacity_type: str
    """The pool's EKS capacity type (``ON_DEMAND``, ``SPOT``, ``CAPACITY_BLOCK``)."""
    capacity_reservation_id: Optional[str]
    disk_size_gib: int
    consolidate_after_minutes: int
    """How long a node stays empty (or, on inference pools, underused) before Karpenter removes it."""
    upgrade: PoolUpgrade = PoolUpgrade()
    """The pool's upgrade settings as given; `node_pool` fills in its role's defaults (`PoolUpgrade.resolved`)."""
    window: MaintenanceWindow = DEFAULT_WINDOW
    """The stack's maintenance window: drift replaces ``automatic: window`` pools' nodes only inside it."""


def karpenter_capacity_type(capacity_type: str, reservation: Optional[str]) -> str:
    """``karpenter.sh/capacity-type`` for an EKS capacity type: reservations (and Capacity Blocks) are
    ``reserved`` (Karpenter's ReservedCapacity, on by default since v1.6)."""
    if reservation is not None or capacity_type == CAPACITY_BLOCK:
        return "reserved"
    return "spot" if capacity_type == SPOT else "on-demand"


def node_labels(kp: KarpenterPool) -> dict[str, str]:
    """The pool's node labels; on Bottlerocket also the switch that keeps the operator's device plugin off."""
    out = dict(kp.pool.labels)
    if kp.ami_type == BOTTLEROCKET_NVIDIA:
        out[labels.DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
    return dict(sorted(out.items()))


def consolidation_policy(pool: GpuPool) -> str:
    """Training and RDMA pools are only consolidated when empty (moving a rank restarts the whole job);
    inference pools may also be repacked when underused."""
    if pool.role == "training" or pool.rdma_fabric:
        return "WhenEmpty"
    return "WhenEmptyOrUnderutilized"


def node_pool(kp: KarpenterPool) -> dict[str, Any]:
    """The NodePool (karpenter.sh/v1) of a GPU pool."""
    pool = kp.pool
    capacity = karpenter_capacity_type(kp.capacity_type, kp.capacity_reservation_id)
    return {
        "apiVersion": KARPENTER_API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": pool.name, "labels": {labels.MANAGED_BY_LABEL: labels.MANAGED_BY_VALUE}},
        "spec": {
            "template": {
                "metadata": {"labels": node_labels(kp)},
                "spec": {
                    "nodeClassRef": {"group": NODE_CLASS_GROUP, "kind": "EC2NodeClass", "name": pool.name},
                    "requirements": [
                        {"key": labels.INSTANCE_TYPE_LABEL, "operator": "In", "values": [pool.instance_type]},
                        {"key": labels.KARPENTER_CAPACITY_TYPE_LABEL, "operator": "In", "values": [capacity]},
                    ],
                    "taints": [{"key": t.key, "value": t.value, "effect": t.effect} if t.value
                               else {"key": t.key, "effect": t.effect} for t in pool.taints],
                    "expireAfter": EXPIRE_AFTER,
                    "terminationGracePeriod": termination_grace_period(kp.upgrade, TERMINATION_GRACE_PERIOD),
                },
            },
            # Karpenter counts a node's physical devices: the pool's share of nodes times devices per node.
            "limits": {pool.resource: str(kp.nodes * pool.gpus_per_node)},
            "disruption": {
                "consolidationPolicy": consolidation_policy(pool),
                "consolidateAfter": f"{kp.consolidate_after_minutes}m",
                "budgets": disruption_budgets(kp.upgrade.resolved(pool.role), kp.window),
            },
        },
    }


def efa_network_interfaces(interfaces: int) -> list[dict[str, Any]]:
    """The primary ENA interface on card 0 and one ``efa-only`` interface (device index 1) on each of the
    shape's EFA network cards, so the node has every EFA device without spending an IP on each."""
    if interfaces < 1:
        raise ValueError(f"an EFA pool needs at least one EFA interface, got {interfaces}")
    return [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": INTERFACE},
            *({"networkCardIndex": card, "deviceIndex": 1, "interfaceType": EFA_ONLY} for card in range(interfaces))]


def block_device_mappings(ami_type: str, disk_size_gib: int) -> list[dict[str, Any]]:
    """The image volume at the pool's disk size (root on AL2023, the data volume on Bottlerocket)."""
    image = {"volumeSize": f"{disk_size_gib}Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
    if ami_type == BOTTLEROCKET_NVIDIA:
        return [dict(BOTTLEROCKET_OS_VOLUME), {"deviceName": "/dev/xvdb", "ebs": image}]
    return [{"deviceName": "/dev/xvda", "ebs": image}]


def ec2_node_class(kp: KarpenterPool, instance_profile: str, subnet_ids: list[str], security_group_ids: list[str],
                   placement_group: Optional[str], tags: dict[str, str]) -> dict[str, Any]:
    """The EC2NodeClass (karpenter.k8s.aws/v1) of a GPU pool."""
    pool = kp.pool
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": AMI_ALIASES.get(kp.ami_type, DEFAULT_AMI_ALIAS)}],
        "instanceProfile": instance_profile,
        "subnetSelectorTerms": [{"id": s} for s in subnet_ids],
        "securityGroupSelectorTerms": [{"id": g} for g in security_group_ids],
        "blockDeviceMappings": block_device_mappings(kp.ami_type, kp.disk_size_gib),
        # IMDSv2 only, one hop: hostNetwork pods (aws-node, the EFA device plugin) still reach it, pods in their
        # own network namespace cannot take the node's credentials (`security.IMDS_HOP_LIMIT`).
        "metadataOptions": dict(NODE_CLASS_METADATA_OPTIONS),
        "tags": dict(sorted(tags.items())),
    }
    if pool.rdma_fabric:
        spec["networkInterfaces"] = efa_network_interfaces(pool.rdma_interfaces)
        # EC2 refuses a public address on an instance launched with several interfaces.
        spec["associatePublicIPAddress"] = False
    if placement_group is not None:
        spec["placementGroupSelector"] = {"name": placement_group}
    if kp.capacity_reservation_id is not None:
        spec["capacityReservationSelectorTerms"] = [{"id": kp.capacity_reservation_id}]
    return {
        "apiVersion": KARPENTER_AWS_API_VERSION,
        "kind": "EC2NodeClass",
        "metadata": {"name": pool.name, "labels": {labels.MANAGED_BY_LABEL: labels.MANAGED_BY_VALUE}},
        "spec": spec,
    }


def chart_values(cluster_name: str, cluster_endpoint: str, interruption_queue: str, system_node_group: str,
                 replicas: int, region: str) -> dict[str, Any]:
    """Values of the karpenter chart (keys: tests/data/chart_keys/karpenter-1.14.1.keys). The controller runs on
    the system node group (never on nodes it manages: the chart's default affinity) with its service account
    bound to its IAM role by EKS pod identity."""
    return {
        "settings": {"clusterName": cluster_name, "clusterEndpoint": cluster_endpoint,
                     "interruptionQueue": interruption_queue},
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "replicas": replicas,
        "nodeSelector": {labels.OS_LABEL: "linux", labels.EKS_NODEGROUP_LABEL: system_node_group},
        "controller": {
            # The getting-started sizing; requests == limits keeps the controller Guaranteed on busy system nodes.
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            # Without AWS_REGION the controller asks IMDS for its region (pkg/operator/operator.go at v1.14.1),
            # which a pod cannot reach on nodes with hop limit 1; EKS Pod Identity injects credentials only
            # (AWS_CONTAINER_CREDENTIALS_FULL_URI, AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE), no region.
            "env": [{"name": "AWS_REGION", "value": region}],
        },
    }


def controller_replicas(system_nodes: int) -> int:
    """Two replicas (leader election), at most one per system node (the chart's hostname anti-affinity)."""
    return max(1, min(2, system_nodes))


# ---------------------------------------------------------------------------------------------------------
# IAM and the interruption queue (Karpenter's cloudformation.yaml at the pinned version)


def _document(statements: list[dict[str, Any]]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def node_lifecycle_policy(partition: str, region: str, cluster: str) -> str:
    """KarpenterControllerNodeLifecyclePolicy: launch, tag and terminate only the cluster's Karpenter nodes."""
    ec2 = f"arn:{partition}:ec2:{region}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"}
    nodepool_resource = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
    nodepool_request = {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    request_tags = {f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": cluster}
    created = [f"{ec2}:*:{kind}/*" for kind in ("fleet", "instance", "volume", "network-interface",
                                                "launch-template", "spot-instances-request")]
    return _document([
        {"Sid": "AllowScopedEC2InstanceAccessActions", "Effect": "Allow",
         "Resource": [f"{ec2}::image/*", f"{ec2}::snapshot/*", f"{ec2}:*:security-group/*", f"{ec2}:*:subnet/*",
                      f"{ec2}:*:capacity-reservation/*", f"{ec2}:*:placement-group/*"],
         "Action": ["ec2:RunInstances", "ec2:CreateFleet"]},
        {"Sid": "AllowScopedEC2LaunchTemplateAccessActions", "Effect": "Allow",
         "Resource": f"{ec2}:*:launch-template/*", "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
         "Condition": {"StringEquals": owned, "StringLike": nodepool_resource}},
        {"Sid": "AllowScopedEC2InstanceActionsWithTags", "Effect": "Allow", "Resource": created,
         "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
         "Condition": {"StringEquals": request_tags, "StringLike": nodepool_request}},
        {"Sid": "AllowScopedResourceCreationTagging", "Effect": "Allow", "Resource": created,
         "Action": "ec2:CreateTags",
         "Condition": {"StringEquals": {**request_tags,
                                        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
                       "StringLike": nodepool_request}},
        {"Sid": "AllowScopedResourceTagging", "Effect": "Allow", "Resource": f"{ec2}:*:instance/*",
         "Action": "ec2:CreateTags",
         "Condition": {"StringEquals": owned, "StringLike": nodepool_resource,
                       "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster},
                       "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim",
                                                                    "Name"]}}},
        {"Sid": "AllowScopedDeletion", "Effect": "Allow",
         "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
         "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
         "Condition": {"StringEquals": owned, "StringLike": nodepool_resource}},
    ])


def integration_policy(partition: str, region: str, account_id: str, cluster: str, node_role_arn: str,
                       queue_arn: str) -> str:
    """Pass the node role to EC2, read the cluster endpoint, drain the interruption queue, discover resources
    (KarpenterController IAMIntegration (PassRole part), EKSIntegration, Interruption and ResourceDiscovery
    policies)."""
    return _document([
        {"Sid": "AllowPassingInstanceRole", "Effect": "Allow", "Resource": node_role_arn, "Action": "iam:PassRole",
         "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}}},
        {"Sid": "AllowAPIServerEndpointDiscovery", "Effect": "Allow",
         "Resource": f"arn:{partition}:eks:{region}:{account_id}:cluster/{cluster}", "Action": "eks:DescribeCluster"},
        {"Sid": "AllowInterruptionQueueActions", "Effect": "Allow", "Resource": queue_arn,
         "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]},
        {"Sid": "AllowRegionalReadActions", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances",
                    "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets"],
         "Condition": {"StringEquals": {"aws:RequestedRegion": region}}},
        {"Sid": "AllowSSMReadActions", "Effect": "Allow",
         "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*", "Action": "ssm:GetParameter"},
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        {"Sid": "AllowUnscopedInstanceProfileListAction", "Effect": "Allow", "Resource": "*",
         "Action": "iam:ListInstanceProfiles"},
        {"Sid": "AllowInstanceProfileReadActions", "Effect": "Allow",
         "Resource": f"arn:{partition}:iam::{account_id}:instance-profile/*", "Action": "iam:GetInstanceProfile"},
    ])


def queue_policy(queue_arn: str) -> str:
    """EventBridge (and SQS) may send to the queue; nothing over plain HTTP."""
    return json.dumps({"Version": "2012-10-17", "Id": "EC2InterruptionPolicy", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
         "Action": "sqs:SendMessage", "Resource": queue_arn},
        {"Sid": "DenyHTTP", "Effect": "Deny", "Action": "sqs:*", "Resource": queue_arn,
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}, "Principal": "*"},
    ]}, sort_keys=True)


def event_pattern(event: str) -> str:
    """The EventBridge pattern of one interruption event kind."""
    return json.dumps(INTERRUPTION_EVENTS[event], sort_keys=True)
