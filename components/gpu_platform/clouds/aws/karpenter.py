"""`KarpenterAutoscaler`: Karpenter on EKS for the GPU pools (``autoscaling.autoscaler: karpenter``).

The controller (pinned chart, on the system node group, AWS credentials by EKS pod identity), its interruption
queue with the EventBridge rules that feed it, the node IAM role, instance profile and EKS access entry, and one
NodePool + EC2NodeClass per GPU pool. What each resource receives is decided in ``aws_karpenter_objects``.

With Karpenter, a pool with ``minNodes: 0`` has no managed node group at all: Karpenter launches its nodes when
pods that need them are pending and removes them when empty. A pool with ``minNodes > 0`` keeps that baseline on
a fixed-size managed node group (Karpenter keeps no minimum) and Karpenter adds the rest up to ``maxNodes``; both
carry the pool's labels and taints, and on EFA pools the same EFA security group and placement group, so the
Kubernetes layer and NCCL see one pool. `karpenter_from_config` wires it from the stack and the EKS cluster.
"""

from collections.abc import Sequence
from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ...component_args import KeywordArgs
from ...config_model import PlatformConfig
from ...kubernetes_base.common import child_opts, helm_release
from ...kubernetes_base.custom_object import KubernetesObject
from ...pools import GpuPool, GpuPoolSpec
from ...provisioning import RESERVATION
from ...upgrades.maintenance import MaintenanceWindowArgs, parse_window, window_as_args
from ...upgrades.pool_upgrade import PoolUpgradeArgs, upgrade_from_args
from ...versions import KARPENTER
from .. import missing_extra
from ..handle import ClusterHandle
from . import contract
from . import iam as aws_iam
from . import karpenter_objects as objects
from .efa import efa_self_rules
from .options import default_ami_type
from .security import POD_IDENTITY_ACTIONS, POD_IDENTITY_SERVICE

try:
    import pulumi_aws as aws
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None


class KarpenterPoolArgs(TypedDict, total=False):
    """One GPU pool's share of Karpenter."""

    pool: Required[GpuPoolSpec]
    """The GPU pool: instance type, GPUs per node, labels, taints, RDMA (EFA), spot."""
    nodes: int
    """Nodes Karpenter may run for the pool (``maxNodes - minNodes`` when a node group keeps the minimum)."""
    ami_type: str
    """``AL2023_x86_64_NVIDIA`` (NVIDIA default) or ``BOTTLEROCKET_x86_64_NVIDIA``, ``AL2023_x86_64_NEURON``
    (Neuron default): picks the AMI alias."""
    capacity_type: str
    """EKS capacity type of the pool: ``ON_DEMAND`` (default), ``SPOT`` or ``CAPACITY_BLOCK`` (the pool's
    reservation is a Capacity Block). A pool with ``pool.provisioning`` ``reservation`` launches into
    ``pool.reservation`` (``cr-...``: capacity type ``reserved``, the EC2NodeClass's
    ``capacityReservationSelectorTerms``)."""
    disk_size_gib: int
    """Image volume size in GiB. Default 200, 500 on 8-GPU shapes."""
    subnet_ids: Sequence[pulumi.Input[str]]
    """Subnets the nodes launch in (one zone's for EFA pools)."""
    security_group_ids: Sequence[pulumi.Input[str]]
    """Security groups beside the cluster's; an EFA pool sharing a node group passes that group's EFA security
    group. An EFA pool without one gets its own."""
    placement_group: bool
    """A ``cluster`` placement group for the nodes (EFA pools). Default: True for EFA pools without a reservation."""
    placement_group_name: Optional[pulumi.Input[str]]
    """An existing placement group to launch into (the pool's node group's); created when absent."""
    upgrade: PoolUpgradeArgs
    """How Karpenter replaces the pool's drifted nodes (a new AMI, a changed NodePool or EC2NodeClass):
    ``automatic`` ``never`` (training default: drift never disrupts a node) or ``window`` (inference and general
    default: only inside ``maintenance_window``), ``max_unavailable`` nodes at once (default one), and
    ``drain_timeout_minutes``, the NodePool's ``terminationGracePeriod`` (default 48 hours). ``max_surge``,
    ``soak_minutes`` and ``blue-green`` are refused (docs/upgrades.md)."""


class KarpenterAutoscalerArgs(TypedDict, total=False):
    """Arguments of `KarpenterAutoscaler`."""

    cluster_name: Required[pulumi.Input[str]]
    """EKS cluster name."""
    cluster_endpoint: Required[pulumi.Input[str]]
    """EKS API endpoint (saves the controller a DescribeCluster at start)."""
    region: Required[str]
    """AWS region of the cluster."""
    vpc_id: pulumi.Input[str]
    """VPC of the cluster (EFA security groups)."""
    cluster_security_group_id: pulumi.Input[str]
    """EKS cluster security group: every Karpenter node joins it, as managed node group nodes do."""
    system_node_group_name: Required[pulumi.Input[str]]
    """The system node group the controller runs on."""
    system_nodes: int
    """Nodes of that group: the controller runs two replicas, at most one per node. Default 2."""
    node_pools: list[KarpenterPoolArgs]
    """The GPU pools Karpenter scales."""
    consolidate_after_minutes: int
    """How long a node stays empty (inference pools: or underused) before Karpenter removes it. Default 30."""
    maintenance_window: MaintenanceWindowArgs
    """The weekly UTC window in which Karpenter may replace drifted nodes of pools with ``automatic: window``.
    Default Saturdays 00:00 UTC for 12 hours. Refused when no pool uses it."""
    tags: dict[str, str]
    """Tags on every AWS resource, and on the instances Karpenter launches."""


class KarpenterAutoscaler(pulumi.ComponentResource, metaclass=KeywordArgs):
    """Karpenter for the GPU pools of an EKS cluster: controller, interruption handling, node identity, and a
    NodePool + EC2NodeClass per pool (NVIDIA AMI, taints, labels, GPU limits, EFA interfaces, placement group)."""

    node_role: aws.iam.Role
    instance_profile: aws.iam.InstanceProfile
    controller_role: aws.iam.Role
    queue: aws.sqs.Queue
    """The interruption queue (spot interruptions, rebalance, scheduled changes, state changes)."""
    release: k8s.helm.v3.Release
    """The karpenter Helm release (its chart installs the NodePool/EC2NodeClass CRDs)."""
    interruption_queue_name: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: KarpenterAutoscalerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = contract.karpenter_args(name, args, KarpenterAutoscalerArgs)  # refused before anything registers
        super().__init__("gpuplatform:index:KarpenterAutoscaler", name, {}, opts)
        tags = dict(args.get("tags", {}))
        region = args["region"]
        cluster = pulumi.Output.from_input(args["cluster_name"])
        invoke = pulumi.InvokeOptions(parent=self)
        partition = aws.get_partition(opts=invoke).partition
        account_id = aws.get_caller_identity(opts=invoke).account_id

        # Node identity: its own role (EKS already holds an access entry for the node groups' role), joined to
        # the cluster by an EC2_LINUX access entry, behind an instance profile the stack owns.
        self.node_role = aws.iam.Role(
            f"{name}-node-role", assume_role_policy=aws_iam.assume_role_policy(aws_iam.NODE_SERVICE), tags=tags,
            opts=child_opts(self, opts))
        attachments = [
            aws.iam.RolePolicyAttachment(f"{name}-node-role-{policy.lower().replace('_', '-')}",
                                         role=self.node_role.name,
                                         policy_arn=aws_iam.managed_policy_arn(partition, policy),
                                         opts=child_opts(self, opts))
            for policy in aws_iam.NODE_POLICIES
        ]
        self.instance_profile = aws.iam.InstanceProfile(
            f"{name}-node-profile", role=self.node_role.name, tags=tags, opts=child_opts(self, opts))
        self.access_entry = aws.eks.AccessEntry(
            f"{name}-node-access", cluster_name=cluster, principal_arn=self.node_role.arn, type="EC2_LINUX",
            tags=tags, opts=child_opts(self, opts))

        # Interruptions: EventBridge -> SQS -> the controller, which drains a node before EC2 takes it.
        self.queue = aws.sqs.Queue(
            f"{name}-interruptions", message_retention_seconds=objects.QUEUE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True, tags=tags, opts=child_opts(self, opts))
        self.queue_policy = aws.sqs.QueuePolicy(
            f"{name}-interruptions", queue_url=self.queue.url, policy=self.queue.arn.apply(objects.queue_policy),
            opts=child_opts(self, opts))
        self.event_rules = {}
        for event in objects.INTERRUPTION_EVENTS:
            rule = aws.cloudwatch.EventRule(
                f"{name}-{event}", description=f"Karpenter interruption handling: {event}",
                event_pattern=objects.event_pattern(event), tags=tags, opts=child_opts(self, opts))
            aws.cloudwatch.EventTarget(
                f"{name}-{event}", rule=rule.name, arn=self.queue.arn, target_id=objects.INTERRUPTION_TARGET_ID,
                opts=child_opts(self, opts))
            self.event_rules[event] = rule

        # Controller identity: an IAM role bound to its service account by EKS pod identity.
        self.controller_role = aws.iam.Role(
            f"{name}-controller-role",
            assume_role_policy=aws_iam.assume_role_policy(POD_IDENTITY_SERVICE, POD_IDENTITY_ACTIONS), tags=tags,
            opts=child_opts(self, opts))
        policies = [
            aws.iam.RolePolicy(
                f"{name}-node-lifecycle", role=self.controller_role.id,
                policy=cluster.apply(lambda c: objects.node_lifecycle_policy(partition, region, c)),
                opts=child_opts(self, opts)),
            aws.iam.RolePolicy(
                f"{name}-integration", role=self.controller_role.id,
                policy=pulumi.Output.all(cluster, self.node_role.arn, self.queue.arn).apply(
                    lambda a: objects.integration_policy(partition, region, account_id, a[0], a[1], a[2])),
                opts=child_opts(self, opts)),
        ]
        self.pod_identity = aws.eks.PodIdentityAssociation(
            f"{name}-controller", cluster_name=cluster, namespace=objects.NAMESPACE,
            service_account=objects.SERVICE_ACCOUNT, role_arn=self.controller_role.arn, tags=tags,
            opts=child_opts(self, opts))

        self.interruption_queue_name = self.queue.name
        self.release = helm_release(
            f"{name}-controller", KARPENTER, "karpenter", objects.NAMESPACE,
            objects.chart_values(cluster, args["cluster_endpoint"], self.queue.name,
                                 args["system_node_group_name"],
                                 objects.controller_replicas(int(args.get("system_nodes", 2))), region),
            child_opts(self, opts, depends_on=[self.pod_identity, *policies, self.queue_policy]),
            create_namespace=False)

        consolidate = int(args.get("consolidate_after_minutes", 30))
        self.window = parse_window(args.get("maintenance_window"), "maintenance_window")
        ready = [self.release, self.access_entry, self.instance_profile, *attachments]
        self.node_classes: dict[str, Any] = {}
        self.node_pools: dict[str, Any] = {}
        for pool_args in args.get("node_pools", []):
            self._pool(name, pool_args, args, consolidate, tags, ready, opts)
        self.node_role_arn = self.node_role.arn
        self.register_outputs({"interruption_queue_name": self.interruption_queue_name,
                               "node_role_arn": self.node_role_arn, "node_pools": sorted(self.node_pools)})

    def _pool(self, name: str, pool_args: KarpenterPoolArgs, args: KarpenterAutoscalerArgs, consolidate: int,
              tags: dict[str, str], ready: list, opts: Optional[pulumi.ResourceOptions]) -> None:
        """EFA security group and placement group when the pool needs and lacks them, then its EC2NodeClass and
        NodePool (after the chart's CRDs, the node identity and the access entry)."""
        pool = GpuPool.from_spec(pool_args["pool"])
        kp = objects.KarpenterPool(
            pool=pool, nodes=int(pool_args.get("nodes", pool.max_nodes)),
            ami_type=pool_args.get("ami_type", default_ami_type(pool.vendor, pool.architecture)),
            capacity_type=pool_args.get("capacity_type", "ON_DEMAND"),
            capacity_reservation_id=pool.reservation if pool.provisioning == RESERVATION else None,
            disk_size_gib=int(pool_args.get("disk_size_gib") or (500 if pool.gpus_per_node >= 8 else 200)),
            consolidate_after_minutes=consolidate, upgrade=upgrade_from_args(pool_args.get("upgrade"), "upgrade"),
            window=self.window)
        prefix = f"{name}-{pool.name}"
        groups: list[pulumi.Input[str]] = [args["cluster_security_group_id"], *pool_args.get("security_group_ids", [])]
        if pool.rdma_fabric and not pool_args.get("security_group_ids"):
            efa = aws.ec2.SecurityGroup(
                f"{prefix}-efa", vpc_id=args["vpc_id"],
                description=f"EFA traffic between the nodes of pool {pool.name}",
                tags={**tags, "Name": f"{prefix}-efa"}, opts=child_opts(self, opts))
            rules = efa_self_rules()
            aws.vpc.SecurityGroupIngressRule(f"{prefix}-efa-ingress", security_group_id=efa.id,
                                             referenced_security_group_id=efa.id, **rules["ingress"],
                                             opts=child_opts(self, opts))
            aws.vpc.SecurityGroupEgressRule(f"{prefix}-efa-egress", security_group_id=efa.id,
                                            referenced_security_group_id=efa.id, **rules["egress"],
                                            opts=child_opts(self, opts))
            groups.append(efa.id)
        placement: Optional[pulumi.Input[str]] = pool_args.get("placement_group_name")
        wants_placement = pool_args.get("placement_group",
                                        bool(pool.rdma_fabric) and kp.capacity_reservation_id is None)
        if placement is None and wants_placement:
            placement = aws.ec2.PlacementGroup(f"{prefix}-pg", strategy="cluster", tags=tags,
                                               opts=child_opts(self, opts)).name
        body = objects.ec2_node_class(kp, self.instance_profile.name, list(pool_args.get("subnet_ids", [])), groups,
                                      placement, tags)
        self.node_classes[pool.name] = KubernetesObject(f"{prefix}-node-class", body,
                                                        child_opts(self, opts, depends_on=ready))
        self.node_pools[pool.name] = KubernetesObject(
            f"{prefix}-node-pool", objects.node_pool(kp),
            child_opts(self, opts, depends_on=[*ready, self.node_classes[pool.name]]))


def karpenter_from_config(name: str, config: PlatformConfig, handle: ClusterHandle,
                          opts: pulumi.ResourceOptions) -> KarpenterAutoscaler:
    """Karpenter for a stack: the pools' Karpenter shares that the EKS layer set aside (``karpenter_pools`` in
    the handle's outputs), on the stack's AWS provider."""
    out = handle.outputs
    # Only a window the stack names (the component's default is the same DEFAULT_WINDOW; it refuses a window no
    # pool uses, as the stack parser does).
    window = {"maintenance_window": window_as_args(config.maintenance)} if config.maintenance.given else {}
    return KarpenterAutoscaler(f"{name}-karpenter", KarpenterAutoscalerArgs(
        cluster_name=handle.cluster_name,
        cluster_endpoint=out["endpoint"],
        region=config.region,
        vpc_id=out["vpc_id"],
        cluster_security_group_id=out["cluster_security_group_id"],
        system_node_group_name=out["system_node_group_name"],
        system_nodes=config.cluster_options.system_nodes,
        node_pools=list(out["karpenter_pools"]),
        consolidate_after_minutes=config.autoscaling.scale_down_unneeded_minutes,
        tags=dict(out.get("tags", {})),
        **window,  # type: ignore[typeddict-item]
    ), opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers={"aws": out["aws_provider"]})))
