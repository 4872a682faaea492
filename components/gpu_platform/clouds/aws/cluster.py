"""AWS: an EKS cluster (VPC, IAM, managed add-ons, access entries, system nodes) and GPU/EFA managed node groups.

`EksCluster` and `EksGpuNodePool` are thin components; what they send to AWS comes from the pure modules
``aws_options`` (configuration), ``aws_nodes`` (node group, launch template, autoscaler tags), ``aws_efa``
(EFA interfaces, security-group rules), ``aws_vpc`` (zones and CIDRs), ``aws_iam``, ``aws_kubeconfig`` and
``security`` (add-on configuration, IMDS, the VPC CNI's identity, the API endpoint, Secrets encryption).
`cluster_from_config` wires them from a stack's configuration.
"""

import re
from collections.abc import Sequence
from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ...component_args import KeywordArgs
from ...config_model import PlatformConfig
from ...errors import ConfigError
from ...kubernetes_base.common import child_opts
from ...labels import DOMAIN
from ...pools import GpuPool, GpuPoolSpec
from ...provisioning import RESERVATION
from ...upgrades.pool_upgrade import PoolUpgradeArgs, upgrade_from_args
from .. import missing_extra
from ..handle import ClusterHandle
from . import contract, karpenter_objects, security
from . import iam as aws_iam
from . import nodes as aws_nodes
from . import upgrade as aws_upgrade
from .efa import efa_self_rules
from .kubeconfig import eks_kubeconfig
from .options import (
    CAPACITY_BLOCK,
    ON_DEMAND,
    SPOT,
    SYSTEM_AMI_TYPE,
    AwsPoolOptions,
    capacity_problem,
    default_ami_type,
    default_disk_size,
)
from .options import pool_args as options_pool_args
from .storage import storage_from_config
from .vpc import ELB_ROLE_TAG, INTERNAL_ELB_ROLE_TAG, subnet_cidrs, vpc_zones

try:
    import pulumi_aws as aws
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None

# Installed before any node joins (a node is NotReady without the CNI); CoreDNS waits for the system nodes.
COMPUTE_ADDONS, LATE_ADDONS = contract.COMPUTE_ADDONS, contract.LATE_ADDONS


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def region_zones(region: str, opts: Optional[pulumi.InvokeOptions] = None) -> list[str]:
    """The region's available zones, in the order AWS lists them."""
    return list(aws.get_availability_zones(state="available", region=region, opts=opts).names)


# ---------------------------------------------------------------------------------------------------------
# EksGpuNodePool


class EksGpuNodePoolArgs(TypedDict, total=False):
    """Arguments of `EksGpuNodePool`: the cloud-neutral pool, then where and how EKS runs it."""

    pool: Required[GpuPoolSpec]
    """The pool: instance type, GPUs, min/max nodes, sharing, RDMA (EFA), spot, user labels and taints."""
    cluster_name: pulumi.Input[str]
    """EKS cluster the node group joins (set by `EksCluster` for its own pools)."""
    node_role_arn: pulumi.Input[str]
    """IAM role of the nodes (set by `EksCluster` for its own pools)."""
    kubernetes_version: pulumi.Input[str]
    """Kubernetes minor of the node group. `EksCluster` sets its control plane's version, so a new
    ``kubernetes_version`` upgrades the control plane first and then, in the same ``pulumi up``, each node group
    (``UpdateNodegroupVersion``, at the pool's ``upgrade`` settings). Default: EKS's, the cluster's version when the
    node group is created, never changed after (the provider only tracks a version it is given)."""
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]]
    """Subnets of the node group; one zone's subnets for EFA pools and reserved capacity. Default (pools of an
    `EksCluster`): the private subnets of ``zones``."""
    zones: list[str]
    """Pools of an `EksCluster` with a new VPC: the zones whose private subnets the pool uses. Default: every
    zone, or the VPC's first zone for an EFA pool (EFA traffic stays inside one subnet)."""
    vpc_id: pulumi.Input[str]
    """VPC of the cluster, for the EFA security group (set by `EksCluster` for its own pools)."""
    cluster_security_group_id: pulumi.Input[str]
    """EKS cluster security group; EFA interfaces carry it explicitly because EKS adds none once a launch
    template names interfaces (set by `EksCluster` for its own pools)."""
    ami_type: str
    """``AL2023_x86_64_NVIDIA`` (NVIDIA default) or ``BOTTLEROCKET_x86_64_NVIDIA``; ``AL2023_ARM_64_NVIDIA`` (default
    and only choice) on arm64 shapes (``pool.architecture``, p6e-gb200); ``AL2023_x86_64_NEURON`` (default and only
    choice) on Neuron pools. An AMI of the other CPU architecture is refused."""
    capacity_block: bool
    """The pool's reservation (``pool.provisioning`` ``reservation``, ``pool.reservation`` ``cr-...``, which the
    launch template targets) is a Capacity Block for ML: capacity type ``CAPACITY_BLOCK``, market ``capacity-block``.
    Required on shapes EC2 sells as Capacity Blocks only (p6e-gb200.36xlarge). Default false."""
    disk_size_gib: int
    """Image volume size in GiB (root on AL2023, data volume on Bottlerocket). Default 200, 500 on 8-GPU shapes."""
    placement_group: bool
    """A ``cluster`` placement group (EFA pools). Default: True for EFA pools without a reservation."""
    desired_nodes: Optional[int]
    """Initial size (default minNodes); ignored after creation, the autoscaler owns it."""
    upgrade: PoolUpgradeArgs
    """How an upgrade (``UpdateNodegroupVersion``: a new AMI release, Kubernetes version or launch template, which
    only a ``pulumi up`` starts: EKS never upgrades a node group on its own) replaces the nodes: the node group's
    ``updateConfig``. ``max_unavailable`` (count or percentage; default 1 on training pools, else 0, which EKS
    spells 1 with the replacements launched first); ``max_surge`` only ``"0"`` (``updateStrategy`` ``MINIMAL``: no
    new node before an old one goes; the training default), else EKS's own surge (``DEFAULT``). ``automatic``,
    ``drain_timeout_minutes`` (EKS drains for 15 minutes), ``soak_minutes`` and ``blue-green`` are refused."""
    tags: dict[str, str]
    """Tags on every AWS resource (pools of an `EksCluster`: added to the cluster's)."""


def pool_options(pool: GpuPool, args: EksGpuNodePoolArgs) -> AwsPoolOptions:
    """The component's arguments as `AwsPoolOptions`, with the rules the configuration enforces for stacks
    (a `ConfigError` ``pool <name>: <argument>: <problem>`` when one is broken)."""
    reservation = pool.reservation if pool.provisioning == RESERVATION else None
    capacity_block = bool(args.get("capacity_block", False))
    placement = bool(args.get("placement_group", bool(pool.rdma_fabric) and reservation is None))
    ami_type = args.get("ami_type", default_ami_type(pool.vendor, pool.architecture))
    problem = capacity_problem(mode=pool.provisioning, rdma=bool(pool.rdma_fabric), sharing_mode=pool.sharing.mode,
                               ami_type=ami_type, reservation=pool.reservation, capacity_block=capacity_block,
                               placement=placement, placement_given="placement_group" in args,
                               spell=contract.pool_key,
                               vendor=pool.vendor, architecture=pool.architecture,
                               instance_type=pool.instance_type, dra=pool.dra)
    if problem is not None:
        raise ConfigError(problem[0], problem[1], f"pool {pool.name}")
    return AwsPoolOptions(
        ami_type=ami_type,
        capacity_type=CAPACITY_BLOCK if capacity_block else SPOT if pool.spot else ON_DEMAND,
        capacity_reservation_id=reservation,
        disk_size_gib=args.get("disk_size_gib") or default_disk_size(pool.gpus_per_node),
        placement_group=placement,
    )


class EksGpuNodePool(pulumi.ComponentResource, metaclass=KeywordArgs):
    """A GPU pool as an EKS managed node group: NVIDIA AMI, the GPU taint and pool labels, scaling from zero
    (cluster-autoscaler node-template tags on the node group and its Auto Scaling group), on-demand, spot,
    capacity reservations or Capacity Blocks; with EFA, a launch template with ``efa``/``efa-only`` interfaces on
    every network card, a ``cluster`` placement group and a security group open to itself. A DRA pool on a
    multi-node NVLink shape (p6e-gb200 UltraServers: arm64, ``AL2023_ARM_64_NVIDIA``, Capacity Blocks only) gets the
    shape's EFA layout and user data that turns the AMI's host IMEX service off (NVIDIA's DRA driver runs IMEX)."""

    launch_template: aws.ec2.LaunchTemplate
    node_group: aws.eks.NodeGroup
    placement_group: Optional[aws.ec2.PlacementGroup]
    """The ``cluster`` placement group (EFA pools without a reservation)."""
    efa_security_group: Optional[aws.ec2.SecurityGroup]
    """The EFA security group (EFA pools); `efa_rules` hold its self-referencing ingress and egress rules."""
    node_group_name: pulumi.Output[str]
    autoscaling_group_name: pulumi.Output[str]

    def __init__(self, name: str, args: EksGpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = contract.node_pool_args(name, args, EksGpuNodePoolArgs)  # refused before anything is registered
        super().__init__("gpuplatform:index:EksGpuNodePool", name, {}, opts)
        # The pool this node group runs (Python-only: a GpuPool has no schema form, so no class-level annotation).
        self.pool: GpuPool = GpuPool.from_spec(args["pool"])
        pool = self.pool
        options = pool_options(pool, args)
        tags = dict(args.get("tags", {}))
        labels = aws_nodes.node_labels(pool, options.ami_type)
        autoscaler_tags = aws_nodes.autoscaler_tags(pool, labels)

        self.efa_security_group: Optional[aws.ec2.SecurityGroup] = None
        self.efa_rules: list = []
        security_groups: list[pulumi.Input[str]] = []
        if pool.rdma_fabric:
            self.efa_security_group = aws.ec2.SecurityGroup(
                f"{name}-efa", vpc_id=args["vpc_id"], description=f"EFA traffic between the nodes of pool {pool.name}",
                tags={**tags, "Name": f"{name}-efa"}, opts=child_opts(self, opts))
            rules = efa_self_rules()
            sg_id = self.efa_security_group.id
            self.efa_rules = [
                aws.vpc.SecurityGroupIngressRule(f"{name}-efa-ingress", security_group_id=sg_id,
                                                 referenced_security_group_id=sg_id, **rules["ingress"],
                                                 opts=child_opts(self, opts)),
                aws.vpc.SecurityGroupEgressRule(f"{name}-efa-egress", security_group_id=sg_id,
                                                referenced_security_group_id=sg_id, **rules["egress"],
                                                opts=child_opts(self, opts)),
            ]
            security_groups = [args["cluster_security_group_id"], sg_id]

        self.placement_group: Optional[aws.ec2.PlacementGroup] = None
        if options.placement_group:
            self.placement_group = aws.ec2.PlacementGroup(f"{name}-pg", strategy="cluster", tags=tags,
                                                          opts=child_opts(self, opts))

        self.launch_template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            description=f"GPU pool {pool.name} ({pool.instance_type})",
            tags=tags,
            opts=child_opts(self, opts),
            **aws_nodes.launch_template_data(
                pool, options, security_groups,
                self.placement_group.name if self.placement_group is not None else None,
                {**tags, "Name": name}),
        )
        self.node_group = aws.eks.NodeGroup(
            f"{name}-nodes",
            cluster_name=args["cluster_name"],
            node_role_arn=args["node_role_arn"],
            version=args.get("kubernetes_version"),
            subnet_ids=args["subnet_ids"],
            ami_type=options.ami_type,
            capacity_type=options.capacity_type,
            # A Capacity Block's instance type lives in the launch template (EKS requires it there).
            instance_types=None if options.capacity_type == CAPACITY_BLOCK else [pool.instance_type],
            labels=labels,
            taints=aws_nodes.node_taints(pool),
            scaling_config=aws_nodes.scaling(pool, args.get("desired_nodes")),
            launch_template={"id": self.launch_template.id,
                             "version": self.launch_template.latest_version.apply(str)},
            update_config=aws_upgrade.node_group_update_config(
                upgrade_from_args(args.get("upgrade"), "upgrade").resolved(pool.role)),
            node_repair_config={"enabled": True},
            tags={**tags, **autoscaler_tags},
            opts=child_opts(self, opts, depends_on=self.efa_rules, ignore_changes=["scalingConfig.desiredSize"]),
        )
        self.node_group_name = self.node_group.node_group_name
        self.autoscaling_group_name = self.node_group.resources.apply(
            lambda r: r[0].autoscaling_groups[0].name if r and r[0].autoscaling_groups else "")
        # EKS does not copy node group tags to the Auto Scaling group, which is what the cluster autoscaler reads.
        self.autoscaling_group_tags = [
            aws.autoscaling.Tag(f"{name}-ca-{_slug(key.rsplit('node-template/', 1)[-1])}",
                                autoscaling_group_name=self.autoscaling_group_name,
                                tag={"key": key, "value": value, "propagate_at_launch": False},
                                opts=child_opts(self, opts))
            for key, value in autoscaler_tags.items()
        ]
        self.register_outputs({"node_group_name": self.node_group_name,
                               "autoscaling_group_name": self.autoscaling_group_name})


# ---------------------------------------------------------------------------------------------------------
# EksCluster


class EksClusterArgs(TypedDict, total=False):
    """Arguments of `EksCluster`."""

    cluster_name: str
    """EKS cluster name (also the kubeconfig context). Default: the component name."""
    region: Required[str]
    """AWS region (the kubeconfig's ``aws eks get-token --region``)."""
    kubernetes_version: Required[str]
    """Kubernetes minor version, such as ``1.34``."""
    addon_versions: Required[dict[str, str]]
    """EKS managed add-on versions by name (``vpc-cni``, ``coredns``, ``kube-proxy``, ``eks-pod-identity-agent``);
    see `gpu_platform.versions.EKS_ADDONS`. vpc-cni must be >= v1.18.5 for EFA pools."""
    vpc_id: Optional[str]
    """Existing VPC; None creates a new VPC."""
    private_subnet_ids: list[str]
    """Existing VPC: private subnets (two zones at least) for the control plane and nodes."""
    public_subnet_ids: list[str]
    """Existing VPC: public subnets for internet-facing load balancers."""
    vpc_cidr: str
    """New VPC: its CIDR. Default ``10.0.0.0/16``."""
    availability_zones: list[str]
    """New VPC: its zones (two or three; EKS needs two). Default: the zones the pools name, then the region's
    first, three in all."""
    single_nat_gateway: bool
    """New VPC: one NAT gateway for every zone (True, default) or one per zone."""
    admin_role_arns: list[str]
    """IAM roles/users granted ``AmazonEKSClusterAdminPolicy`` through EKS access entries."""
    system_node_instance_type: str
    """Instance type of the non-GPU system node group. Default ``m6i.xlarge``."""
    system_nodes: int
    """Size of the system node group. Default 2."""
    api_allowed_cidrs: list[str]
    """IPv4 CIDRs allowed to reach the API from outside the VPC, through a public endpoint open to them alone.
    Default empty: the endpoint is private (nodes, a VPN or a CI runner in the VPC reach it). ``0.0.0.0/0``
    opens it to the internet and must be written out."""
    secrets_encryption: bool
    """Envelope-encrypt Kubernetes Secrets with a KMS key the cluster creates (rotated yearly). Default True.
    EKS cannot turn it off again on a cluster that has it."""
    gpu_pools: list[EksGpuNodePoolArgs]
    """GPU pools; their cluster name, node role, VPC, cluster security group and subnets come from the cluster."""
    tags: dict[str, str]
    """Tags on every AWS resource."""


class EksCluster(pulumi.ComponentResource, metaclass=KeywordArgs):
    """An EKS cluster with GPU node pools: VPC (new or existing), cluster and node IAM roles, access entries for
    admins, managed add-ons (vpc-cni with efa-only support and network policy enforcement, kube-proxy, pod
    identity, CoreDNS), a small non-GPU system node group, one `EksGpuNodePool` per GPU pool, an IRSA OIDC
    provider, a kubeconfig and a Kubernetes provider.

    Secure by default (`security`): a private API endpoint unless ``api_allowed_cidrs`` names who may reach it,
    Secrets envelope-encrypted with the cluster's own KMS key, IMDSv2 with hop limit 1 on every node, and the VPC
    CNI's permissions on its own role (EKS Pod Identity), not on the node role pods could reach.

    Its ``region``, ``kubernetes_version``, ``system_node_group_name`` and ``autoscaling_group_names`` attributes
    are what `EksClusterAutoscaler` takes: a composed program installs the autoscaler its pools scale with
    (docs/autoscaling.md, "Composing (AWS)"). ``gpu_pools`` entries come from
    `gpu_platform.pool_args("aws", entry)`."""

    vpc: Optional[aws.ec2.Vpc]
    """The new VPC (None with an existing one); its subnets are `private_subnets` / `public_subnets` by zone."""
    cluster: aws.eks.Cluster
    cluster_role: aws.iam.Role
    node_role: aws.iam.Role
    vpc_cni_role: aws.iam.Role
    """The VPC CNI's role (``AmazonEKS_CNI_Policy``), bound to ``kube-system/aws-node`` by the add-on."""
    secrets_key: Optional[aws.kms.Key]
    """The KMS key Secrets are envelope-encrypted with (None with ``secrets_encryption: False``)."""
    addons: dict[str, aws.eks.Addon]
    system_launch_template: aws.ec2.LaunchTemplate
    system_node_group: aws.eks.NodeGroup
    oidc_provider: aws.iam.OpenIdConnectProvider
    provider: k8s.Provider
    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    vpc_id: pulumi.Output[str]

    def __init__(self, name: str, args: EksClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = contract.cluster_args(name, args, EksClusterArgs)  # refused before anything is registered
        super().__init__("gpuplatform:index:EksCluster", name, {}, opts)
        tags = dict(args.get("tags", {}))
        cluster_name = args.get("cluster_name", contract.eks_cluster_name(name))
        region = args["region"]
        self.region: str = region
        self.kubernetes_version: str = args["kubernetes_version"]
        partition = aws.get_partition(opts=pulumi.InvokeOptions(parent=self)).partition

        self.zones: list[str] = []
        self.private_subnets: dict[str, aws.ec2.Subnet] = {}
        self.public_subnets: dict[str, aws.ec2.Subnet] = {}
        self.vpc: Optional[aws.ec2.Vpc] = None
        if args.get("vpc_id"):
            vpc_id: pulumi.Input[str] = args["vpc_id"]
            private_ids: list[pulumi.Input[str]] = list(args.get("private_subnet_ids", []))
            public_ids: list[pulumi.Input[str]] = list(args.get("public_subnet_ids", []))
        else:
            zones = list(args.get("availability_zones") or [])
            if not zones:
                # The zones the pools name first, so a pool pinned to a zone always finds its subnet.
                pool_zones = [z for entry in args.get("gpu_pools", []) for z in entry.get("zones", [])]
                zones = vpc_zones([], pool_zones, region_zones(region, pulumi.InvokeOptions(parent=self)))
            self.zones = zones
            vpc_id = self._new_vpc(name, cluster_name, args.get("vpc_cidr", "10.0.0.0/16"), zones,
                                   args.get("single_nat_gateway", True), tags, opts)
            private_ids = [s.id for s in self.private_subnets.values()]
            public_ids = [s.id for s in self.public_subnets.values()]
        self.private_subnet_ids = private_ids

        self.cluster_role, cluster_attachments = self._role(
            f"{name}-cluster-role", aws_iam.CLUSTER_SERVICE, aws_iam.CLUSTER_POLICIES, partition, tags, opts,
            actions=("sts:AssumeRole", "sts:TagSession"))
        self.node_role, node_attachments = self._role(
            f"{name}-node-role", aws_iam.NODE_SERVICE, aws_iam.NODE_POLICIES, partition, tags, opts)
        self.vpc_cni_role, cni_attachments = self._role(
            f"{name}-vpc-cni-role", security.POD_IDENTITY_SERVICE, security.VPC_CNI_POLICIES, partition, tags, opts,
            actions=security.POD_IDENTITY_ACTIONS)

        self.secrets_key: Optional[aws.kms.Key] = None
        encryption: dict = {}
        if args.get("secrets_encryption", True):
            self.secrets_key = aws.kms.Key(
                f"{name}-secrets-key", description=security.secrets_key_description(cluster_name),
                enable_key_rotation=True, deletion_window_in_days=security.SECRETS_KEY_DELETION_WINDOW_DAYS,
                tags=tags, opts=child_opts(self, opts))
            cluster_attachments.append(aws.iam.RolePolicy(
                f"{name}-cluster-role-secrets-key", role=self.cluster_role.id,
                policy=self.secrets_key.arn.apply(security.secrets_key_policy), opts=child_opts(self, opts)))
            encryption = {"encryption_config": security.encryption_config(self.secrets_key.arn)}

        vpc_config: dict = {"subnet_ids": [*private_ids, *public_ids],
                            **security.endpoint_access(args.get("api_allowed_cidrs", []))}
        self.cluster = aws.eks.Cluster(
            f"{name}-eks",
            name=cluster_name,
            version=args["kubernetes_version"],
            role_arn=self.cluster_role.arn,
            vpc_config=vpc_config,
            # API-only authentication: admins are access entries; the deploying identity stays admin so the
            # Kubernetes provider below can act right after creation.
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            # The managed add-ons below replace the self-managed copies EKS would otherwise install.
            bootstrap_self_managed_addons=False,
            enabled_cluster_log_types=["api", "audit", "authenticator"],
            **encryption,
            tags=tags,
            opts=child_opts(self, opts, depends_on=cluster_attachments),
        )
        self.cluster_name = self.cluster.name
        self.endpoint = self.cluster.endpoint
        self.cluster_security_group_id = self.cluster.vpc_config.apply(lambda c: c.cluster_security_group_id)
        self.oidc_issuer = self.cluster.identities.apply(lambda ids: ids[0].oidcs[0].issuer)
        self.oidc_provider = aws.iam.OpenIdConnectProvider(
            f"{name}-oidc", url=self.oidc_issuer, client_id_lists=["sts.amazonaws.com"], tags=tags,
            opts=child_opts(self, opts))
        self.oidc_provider_arn = self.oidc_provider.arn
        self.node_role_arn = self.node_role.arn
        self.vpc_id = pulumi.Output.from_input(vpc_id)

        self.access_entries: list[aws.eks.AccessEntry] = []
        for i, principal in enumerate(args.get("admin_role_arns", [])):
            entry = aws.eks.AccessEntry(f"{name}-admin-{i}", cluster_name=self.cluster.name, principal_arn=principal,
                                        type="STANDARD", tags=tags, opts=child_opts(self, opts))
            aws.eks.AccessPolicyAssociation(
                f"{name}-admin-{i}-policy", cluster_name=self.cluster.name, principal_arn=principal,
                policy_arn=aws_iam.access_policy_arn(partition, aws_iam.CLUSTER_ADMIN_ACCESS_POLICY),
                access_scope={"type": "cluster"}, opts=child_opts(self, opts, depends_on=[entry]))
            self.access_entries.append(entry)

        versions = dict(args["addon_versions"])
        self.addons: dict[str, aws.eks.Addon] = {}
        # The pod identity agent first: aws-node gets its credentials from it and crash-loops where it is absent
        # (aws/amazon-vpc-cni-k8s#3840, terraform-aws-modules/terraform-aws-eks#3260). The vpc-cni add-on creates
        # its own association (EKS user guide add-ons-iam), so credentials exist before any node (and so any
        # aws-node pod) does: every node group waits for the add-ons below.
        for addon in sorted(COMPUTE_ADDONS, key=lambda a: a != security.POD_IDENTITY_AGENT):
            after: list = []
            associations = None
            if addon == security.VPC_CNI:
                after = [self.addons[security.POD_IDENTITY_AGENT], *cni_attachments]
                associations = [{"role_arn": self.vpc_cni_role.arn,
                                 "service_account": security.VPC_CNI_SERVICE_ACCOUNT}]
            self.addons[addon] = self._addon(name, addon, versions[addon], tags, opts, after, associations)
        self.compute_dependencies = [*node_attachments, *(self.addons[a] for a in COMPUTE_ADDONS)]

        system_nodes = args.get("system_nodes", 2)
        self.system_launch_template = aws.ec2.LaunchTemplate(
            f"{name}-system-lt", description=f"System nodes of EKS cluster {cluster_name}", tags=tags,
            opts=child_opts(self, opts), **aws_nodes.system_launch_template_data({**tags, "Name": f"{name}-system"}))
        self.system_node_group = aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=self.cluster.name,
            node_role_arn=self.node_role.arn,
            version=self.cluster.version,  # the system nodes follow the control plane too
            subnet_ids=private_ids,
            instance_types=[args.get("system_node_instance_type", "m6i.xlarge")],
            ami_type=SYSTEM_AMI_TYPE,
            capacity_type=ON_DEMAND,
            # The root volume is the launch template's (EKS refuses disk_size beside a launch template).
            launch_template={"id": self.system_launch_template.id,
                             "version": self.system_launch_template.latest_version.apply(str)},
            scaling_config={"min_size": system_nodes, "max_size": 2 * system_nodes, "desired_size": system_nodes},
            update_config={"max_unavailable": 1},
            tags=tags,
            opts=child_opts(self, opts, depends_on=self.compute_dependencies,
                            ignore_changes=["scalingConfig.desiredSize"]),
        )
        for addon in LATE_ADDONS:
            self.addons[addon] = self._addon(name, addon, versions[addon], tags, opts, [self.system_node_group])

        # GPU node pool components by pool name, and the pools they publish (Python-only attributes: component
        # references and GpuPools have no schema form, so they carry no class-level annotation).
        self.node_pools: dict[str, EksGpuNodePool] = {}
        for entry in args.get("gpu_pools", []):
            pool = GpuPool.from_spec(entry["pool"])
            zones = list(entry.get("zones") or [])
            if pool.rdma_fabric and not zones and self.zones:
                zones = self.zones[:1]  # EFA traffic stays inside one subnet: the VPC's first zone
            # The cluster maps zones to its subnets (the node group takes subnets); pool tags add to the cluster's.
            pool_args = {key: value for key, value in entry.items() if key != "zones"}
            self.node_pools[pool.name] = EksGpuNodePool(
                f"{name}-{pool.name}",
                {"subnet_ids": self.subnet_ids_for(zones), **pool_args, "tags": {**tags, **entry.get("tags", {})},
                 "cluster_name": self.cluster.name, "node_role_arn": self.node_role.arn,
                 "kubernetes_version": self.cluster.version,
                 "vpc_id": self.vpc_id, "cluster_security_group_id": self.cluster_security_group_id},
                opts=child_opts(self, opts, depends_on=self.compute_dependencies))
        self.gpu_pools: list[GpuPool] = [component.pool for component in self.node_pools.values()]
        self.system_node_group_name: pulumi.Output[str] = self.system_node_group.node_group_name
        self.autoscaling_group_names: dict[str, pulumi.Output[str]] = {
            pool_name: component.autoscaling_group_name for pool_name, component in self.node_pools.items()}

        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(
            self.cluster.name, self.cluster.endpoint, self.cluster.certificate_authority.apply(lambda c: c.data),
        ).apply(lambda a: eks_kubeconfig(a[0], a[1], a[2], region)))
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, enable_server_side_apply=True,
                                     opts=child_opts(self, opts))
        self.register_outputs({
            "cluster_name": self.cluster_name, "endpoint": self.endpoint, "kubeconfig": self.kubeconfig,
            "oidc_issuer": self.oidc_issuer, "oidc_provider_arn": self.oidc_provider_arn,
            "node_role_arn": self.node_role_arn, "cluster_security_group_id": self.cluster_security_group_id,
            "vpc_id": self.vpc_id, "gpu_pools": [p.name for p in self.gpu_pools],
            "node_group_names": {n: c.node_group_name for n, c in self.node_pools.items()},
        })

    def subnet_ids_for(self, zones: Sequence[str]) -> list[pulumi.Input[str]]:
        """Private subnets of the given zones (every private subnet when ``zones`` is empty)."""
        if not zones or not self.private_subnets:
            return list(self.private_subnet_ids)
        missing = [z for z in zones if z not in self.private_subnets]
        if missing:
            raise ValueError(f"zones {missing} are not zones of the VPC ({', '.join(self.private_subnets)})")
        return [self.private_subnets[z].id for z in zones]

    def _role(self, name: str, service: str, policies: Sequence[str], partition: str, tags: dict,
              opts: Optional[pulumi.ResourceOptions], actions: tuple[str, ...] = ("sts:AssumeRole",)):
        role = aws.iam.Role(name, assume_role_policy=aws_iam.assume_role_policy(service, actions), tags=tags,
                            opts=child_opts(self, opts))
        attachments = [
            aws.iam.RolePolicyAttachment(f"{name}-{_slug(policy)}", role=role.name,
                                         policy_arn=aws_iam.managed_policy_arn(partition, policy),
                                         opts=child_opts(self, opts))
            for policy in policies
        ]
        return role, attachments

    def _addon(self, name: str, addon: str, version: str, tags: dict, opts: Optional[pulumi.ResourceOptions],
               depends_on: list, pod_identity_associations: Optional[list] = None) -> aws.eks.Addon:
        return aws.eks.Addon(
            f"{name}-{addon}", cluster_name=self.cluster.name, addon_name=addon, addon_version=version,
            configuration_values=security.addon_configuration(addon),
            pod_identity_associations=pod_identity_associations,
            # The platform owns these add-ons' configuration; a hand edit is overwritten on the next update.
            resolve_conflicts_on_create="OVERWRITE", resolve_conflicts_on_update="OVERWRITE", tags=tags,
            opts=child_opts(self, opts, depends_on=depends_on))

    def _new_vpc(self, name: str, cluster_name: str, cidr: str, zones: list[str], single_nat: bool, tags: dict,
                 opts: Optional[pulumi.ResourceOptions]) -> pulumi.Output[str]:
        """Private subnets (nodes) and public subnets (load balancers, NAT) in every zone."""
        self.vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=cidr, enable_dns_hostnames=True, enable_dns_support=True,
                               tags={**tags, "Name": cluster_name}, opts=child_opts(self, opts))
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=self.vpc.id, tags={**tags, "Name": cluster_name},
                                      opts=child_opts(self, opts))
        public_rt = aws.ec2.RouteTable(f"{name}-public", vpc_id=self.vpc.id,
                                       routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}],
                                       tags={**tags, "Name": f"{cluster_name}-public"}, opts=child_opts(self, opts))
        self.nat_gateways: dict[str, aws.ec2.NatGateway] = {}
        for zone, (private_cidr, public_cidr) in zip(zones, subnet_cidrs(cidr, len(zones)), strict=True):
            public = aws.ec2.Subnet(
                f"{name}-public-{zone}", vpc_id=self.vpc.id, cidr_block=public_cidr, availability_zone=zone,
                map_public_ip_on_launch=True, tags={**tags, "Name": f"{cluster_name}-public-{zone}", ELB_ROLE_TAG: "1"},
                opts=child_opts(self, opts))
            aws.ec2.RouteTableAssociation(f"{name}-public-{zone}", subnet_id=public.id, route_table_id=public_rt.id,
                                          opts=child_opts(self, opts))
            self.public_subnets[zone] = public
            if not single_nat or not self.nat_gateways:
                eip = aws.ec2.Eip(f"{name}-nat-{zone}", domain="vpc",
                                  tags={**tags, "Name": f"{cluster_name}-nat-{zone}"}, opts=child_opts(self, opts))
                self.nat_gateways[zone] = aws.ec2.NatGateway(
                    f"{name}-nat-{zone}", allocation_id=eip.id, subnet_id=public.id,
                    tags={**tags, "Name": f"{cluster_name}-nat-{zone}"}, opts=child_opts(self, opts, depends_on=[igw]))
            nat = self.nat_gateways.get(zone) or next(iter(self.nat_gateways.values()))
            private = aws.ec2.Subnet(
                f"{name}-private-{zone}", vpc_id=self.vpc.id, cidr_block=private_cidr, availability_zone=zone,
                tags={**tags, "Name": f"{cluster_name}-private-{zone}", INTERNAL_ELB_ROLE_TAG: "1"},
                opts=child_opts(self, opts))
            private_rt = aws.ec2.RouteTable(f"{name}-private-{zone}", vpc_id=self.vpc.id,
                                            routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}],
                                            tags={**tags, "Name": f"{cluster_name}-private-{zone}"},
                                            opts=child_opts(self, opts))
            aws.ec2.RouteTableAssociation(f"{name}-private-{zone}", subnet_id=private.id,
                                          route_table_id=private_rt.id, opts=child_opts(self, opts))
            self.private_subnets[zone] = private
        return self.vpc.id


# ---------------------------------------------------------------------------------------------------------
# From a stack's configuration


def cluster_from_config(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> ClusterHandle:
    """The EKS cluster of a stack with one `EksGpuNodePool` per configured pool, on an AWS provider for the
    stack's region."""
    options = config.cluster_options
    provider = aws.Provider(f"{name}-aws", region=config.region, opts=opts)
    tags = {f"{DOMAIN}/stack": config.stack}

    zones: list[str] = list(options.availability_zones)
    if options.new_vpc and not zones:
        pool_zones = [z for p in config.node_pools for z in p.zones]
        zones = vpc_zones([], pool_zones, region_zones(config.region, pulumi.InvokeOptions(provider=provider)))
    karpenter = config.autoscaling.autoscaler == "karpenter"
    pools: list[EksGpuNodePoolArgs] = []
    for pool_config, pool in zip(config.node_pools, config.gpu_pools(), strict=True):
        # The same entry `gpu_platform.pool_args("aws", ...)` gives a composed program, then what only a stack knows.
        entry = options_pool_args(pool_config, pool)
        if karpenter:
            # Karpenter keeps no minimum: a node group of exactly minNodes holds the baseline (none at 0).
            if karpenter_objects.split(pool).baseline_nodes == 0:
                continue
            entry.update(pool=karpenter_objects.baseline_pool(pool).spec(), desired_nodes=pool.min_nodes)
            # ``automatic`` is the Karpenter share's (EKS never upgrades the baseline node group on its own).
            upgrade = {k: v for k, v in entry.pop("upgrade", {}).items() if k != "automatic"}
            if upgrade:
                entry["upgrade"] = upgrade
        pools.append(entry)
    args = EksClusterArgs(
        cluster_name=contract.eks_cluster_name(name),
        region=config.region,
        kubernetes_version=config.kubernetes_version,
        addon_versions=dict(options.addon_versions),
        admin_role_arns=list(options.admin_role_arns),
        system_node_instance_type=options.system_node_instance_type,
        system_nodes=options.system_nodes,
        api_allowed_cidrs=list(options.control_plane.api_allowed_cidrs),
        secrets_encryption=options.control_plane.secrets_encryption,
        gpu_pools=pools,
        tags=tags,
    )
    # Only the arguments that apply: the component refuses a VPC key the other kind of VPC would ignore.
    if options.new_vpc:
        args.update(vpc_cidr=options.vpc_cidr, availability_zones=zones,
                    single_nat_gateway=options.single_nat_gateway)
    else:
        args.update(vpc_id=options.vpc_id, private_subnet_ids=list(options.private_subnet_ids))
        if options.public_subnet_ids:
            args["public_subnet_ids"] = list(options.public_subnet_ids)
    cluster = EksCluster(name, args, opts=pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(providers={"aws": provider})))
    storage_outputs: dict = {}
    storage_ready: list = []
    if config.storage.enabled:  # nothing at all changes without the keys
        backends, storage_ready = storage_from_config(name, config, cluster, tags)
        storage_outputs["storage"] = backends
    return ClusterHandle(
        cloud="aws",
        cluster_name=cluster.cluster_name,
        kubeconfig=cluster.kubeconfig,
        provider=cluster.provider,
        # With Karpenter a node group holds only a pool's baseline (or nothing): the pools as configured.
        pools=config.gpu_pools() if karpenter else cluster.gpu_pools,
        node_pool_ids={n: p.node_group_name for n, p in cluster.node_pools.items()},
        outputs={
            "endpoint": cluster.endpoint, "oidc_issuer": cluster.oidc_issuer,
            "oidc_provider_arn": cluster.oidc_provider_arn, "node_role_arn": cluster.node_role_arn,
            "cluster_security_group_id": cluster.cluster_security_group_id, "vpc_id": cluster.vpc_id,
            "region": config.region, "aws_provider": provider, "tags": tags,
            "system_node_group_name": cluster.system_node_group.node_group_name,
            "autoscaling_group_names": {n: p.autoscaling_group_name for n, p in cluster.node_pools.items()},
            "karpenter_pools": karpenter_pools(config, cluster) if karpenter else [],
            **storage_outputs,
        },
        ready=[cluster.system_node_group, *(cluster.addons[a] for a in LATE_ADDONS), *cluster.node_pools.values(),
               *storage_ready],
    )


def karpenter_pools(config: PlatformConfig, cluster: EksCluster) -> list[dict]:
    """Karpenter's share of each pool (`aws_karpenter.KarpenterPoolArgs`): the nodes above the baseline, in the
    pool's subnets, sharing the baseline node group's EFA security group and placement group."""
    shares: list[dict] = []
    for pool_config, pool in zip(config.node_pools, config.gpu_pools(), strict=True):
        nodes = karpenter_objects.split(pool).karpenter_nodes
        if nodes == 0:
            continue
        options: AwsPoolOptions = pool_config.cloud_options
        zones = list(pool_config.zones)
        if pool.rdma_fabric and not zones and cluster.zones:
            zones = cluster.zones[:1]  # as EksCluster places an EFA node group: the VPC's first zone
        share = {
            "pool": pool.spec(), "nodes": nodes, "ami_type": options.ami_type,
            "capacity_type": options.capacity_type,
            "disk_size_gib": options.disk_size_gib, "placement_group": options.placement_group,
            "subnet_ids": list(options.subnet_ids) or cluster.subnet_ids_for(zones),
        }
        if pool_config.upgrade.given:
            share["upgrade"] = pool_config.upgrade.as_args()
        baseline = cluster.node_pools.get(pool.name)
        if baseline is not None and baseline.efa_security_group is not None:
            share["security_group_ids"] = [baseline.efa_security_group.id]
        if baseline is not None and baseline.placement_group is not None:
            share["placement_group_name"] = baseline.placement_group.name
        shares.append(share)
    return shares
