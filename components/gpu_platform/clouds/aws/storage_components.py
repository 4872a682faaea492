"""AWS storage as components a program composes with `EksCluster`: `EksSharedFileSystem` (FSx for Lustre, its
security group and the FSx CSI add-on) and `EksBucketAccess` (the Mountpoint for S3 add-on, one IAM role for the
buckets and an EKS Pod Identity association per namespace). The stack path (`storage.storage_from_config`) builds
through these same components, so a stack file and a composed program plan the same resources.

The decisions are `storage_options`' (pure); each component registers what they describe and carries the backend
(`SharedFileSystemBackend`, `BucketBackend`s) `DataPlaneStorage` mounts (`volume`, `volumes`, `data_plane_args`).
"""

from typing import Any, Optional, TypedDict

import pulumi
from typing_extensions import Required

from ...component_args import KUBERNETES_VERSION, Args, KeywordArgs, Rule, choice
from ...kubernetes_base.common import child_opts
from ...security.pod_security import RUN_AS_ID
from ...storage.bucket_args import BucketArgs, bucket_configs, checked_bucket_access
from ...storage.composition import BucketClaims, FileSystemClaims, former_parent
from ...storage.storage_backends import STORAGE_SERVICE_ACCOUNT, BucketBackend, SharedFileSystemBackend
from .. import missing_extra
from . import storage_options as so

try:
    import pulumi_aws as aws
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None


def csi_addon(component: pulumi.ComponentResource, name: str, addon: str, cluster_name: pulumi.Input[str],
              kubernetes_version: str, tags: dict, opts: pulumi.ResourceOptions) -> aws.eks.Addon:
    """A CSI driver add-on at the version EKS makes default for the cluster's Kubernetes version (resolved at deploy
    time: EKS publishes these builds per Kubernetes version, see `aws eks describe-addon-versions`)."""
    version = aws.eks.get_addon_version_output(addon_name=addon, kubernetes_version=kubernetes_version,
                                               opts=pulumi.InvokeOptions(parent=component))
    return aws.eks.Addon(
        f"{name}-{addon}", cluster_name=cluster_name, addon_name=addon, addon_version=version.version,
        resolve_conflicts_on_create="OVERWRITE", resolve_conflicts_on_update="OVERWRITE", tags=tags, opts=opts)


class EksSharedFileSystemArgs(TypedDict, total=False):
    """Arguments of `EksSharedFileSystem`: where the file system goes (an `EksCluster`'s outputs) and its size."""

    cluster_name: Required[pulumi.Input[str]]
    """The EKS cluster the FSx CSI add-on is installed on. Pass ``EksCluster.system_node_group.cluster_name``: the
    add-on then waits for nodes to run on."""
    kubernetes_version: Required[str]
    """The cluster's Kubernetes minor (``EksCluster.kubernetes_version``): the add-on's version is EKS's default
    for it."""
    vpc_id: Required[pulumi.Input[str]]
    """The cluster's VPC (``EksCluster.vpc_id``): the file system's security group lives there."""
    subnet_id: Required[pulumi.Input[str]]
    """The one subnet the file system lives in (FSx for Lustre is zonal): the private subnet of the zone of the
    nodes that read most, e.g. ``EksCluster.private_subnets["us-west-2a"].id``."""
    node_security_group_id: Required[pulumi.Input[str]]
    """The security group every node carries (``EksCluster.cluster_security_group_id``): Lustre is opened both ways
    between it and the file servers."""
    size_gib: Required[int]
    """Capacity: 1200, 2400 or a multiple of 2400 GiB (``PERSISTENT_2`` SSD)."""
    throughput_per_tib: int
    """MB/s per TiB of capacity: 125 (default), 250, 500 or 1000."""
    description: str
    """The security group's description. Default ``FSx for Lustre of <name>``."""
    tags: dict[str, str]
    """Tags of every resource (the file system and security group also get ``Name``)."""


FILE_SYSTEM_RULES: dict[str, Rule] = {
    "kubernetes_version": KUBERNETES_VERSION,
    "size_gib": Rule(check=so.fsx_capacity_problem),
    "throughput_per_tib": choice(*so.FSX_THROUGHPUT_TIERS),
}


class EksSharedFileSystem(FileSystemClaims, pulumi.ComponentResource, metaclass=KeywordArgs):
    """An FSx for Lustre file system (``PERSISTENT_2``, SSD, Lustre 2.15, LZ4) in one subnet of an EKS cluster's VPC,
    its security group (Lustre TCP 988 and 1018-1023 both ways with itself and the nodes), and the
    ``aws-fsx-csi-driver`` add-on.

    ``backend`` is the `SharedFileSystemBackend` `DataPlaneStorage` mounts: ``volume(...)`` gives a claim's
    ``volumes`` entry, ``data_plane_args()`` the root volume of its directories Job."""

    file_system: aws.fsx.LustreFileSystem
    security_group: aws.ec2.SecurityGroup
    csi_addon: aws.eks.Addon
    file_system_id: pulumi.Output[str]
    dns_name: pulumi.Output[str]
    mount_name: pulumi.Output[str]

    def __init__(self, name: str, args: EksSharedFileSystemArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = Args("EksSharedFileSystem", name, cloud="aws").check(  # type: ignore[assignment]
            args, EksSharedFileSystemArgs, FILE_SYSTEM_RULES)  # before anything is registered
        super().__init__("gpuplatform:index:EksSharedFileSystem", name, {}, opts)
        child = child_opts(self, opts, aliases=former_parent(opts))
        tags = dict(args.get("tags", {}))
        throughput = args.get("throughput_per_tib", so.FSX_DEFAULT_THROUGHPUT)
        nodes = args["node_security_group_id"]
        self.security_group = aws.ec2.SecurityGroup(
            f"{name}-fsx", vpc_id=args["vpc_id"], description=args.get("description", f"FSx for Lustre of {name}"),
            tags={**tags, "Name": f"{name}-fsx"}, opts=child)
        group = self.security_group.id
        rules: list[Any] = []
        # Lustre both ways between the file servers, and between them and the nodes (the EKS cluster security group,
        # which every node group and Karpenter node carries).
        for i, ports in enumerate(so.lustre_rules()):
            for peer, peer_id in (("self", group), ("nodes", nodes)):
                rules.append(aws.vpc.SecurityGroupIngressRule(
                    f"{name}-fsx-{peer}-in-{i}", security_group_id=group, referenced_security_group_id=peer_id,
                    description=f"Lustre from {peer}", **ports, opts=child))
                rules.append(aws.vpc.SecurityGroupEgressRule(
                    f"{name}-fsx-{peer}-out-{i}", security_group_id=group, referenced_security_group_id=peer_id,
                    description=f"Lustre to {peer}", **ports, opts=child))
            rules.append(aws.vpc.SecurityGroupIngressRule(
                f"{name}-nodes-lustre-in-{i}", security_group_id=nodes, referenced_security_group_id=group,
                description="Lustre from the FSx file servers", **ports, opts=child))
        self.file_system = aws.fsx.LustreFileSystem(
            f"{name}-fsx",
            deployment_type=so.FSX_DEPLOYMENT_TYPE,
            storage_type=so.FSX_STORAGE_TYPE,
            storage_capacity=args["size_gib"],
            per_unit_storage_throughput=throughput,
            file_system_type_version=so.FSX_LUSTRE_VERSION,
            data_compression_type=so.FSX_DATA_COMPRESSION,
            subnet_ids=args["subnet_id"],  # one subnet (pulumi_aws types it a string: "support only one subnet")
            security_group_ids=[group],
            tags={**tags, "Name": f"{name}-fsx"},
            opts=child_opts(self, opts, depends_on=rules, aliases=former_parent(opts)))
        self.csi_addon = csi_addon(self, name, so.FSX_CSI_ADDON, args["cluster_name"], args["kubernetes_version"],
                                   tags, child)
        fs = self.file_system
        self.file_system_id, self.dns_name, self.mount_name = fs.id, fs.dns_name, fs.mount_name

        def csi_source(volume_name: str, sub_directory: str) -> dict[str, Any]:
            return {"driver": so.FSX_CSI_DRIVER,
                    "volumeHandle": fs.id.apply(lambda fid: so.fsx_volume_handle(fid, volume_name)),
                    "volumeAttributes": {"dnsname": fs.dns_name,
                                         "mountname": fs.mount_name.apply(lambda m: so.fsx_mount_name(m,
                                                                                                   sub_directory))}}

        self.backend = SharedFileSystemBackend(
            kind="fsx-lustre", capacity_gib=args["size_gib"], driver=so.FSX_CSI_DRIVER, csi_source=csi_source,
            mount_options=so.FSX_MOUNT_OPTIONS, throughput_mbps_per_tib=throughput)
        """How `DataPlaneStorage` mounts the file system (Python only)."""
        self.ready: list[Any] = [self.csi_addon, self.file_system]
        """What a pod mounting the file system waits for: the CSI add-on and the file system."""
        self.register_outputs({"file_system_id": self.file_system_id, "dns_name": self.dns_name,
                               "mount_name": self.mount_name})


class EksBucketAccessArgs(TypedDict, total=False):
    """Arguments of `EksBucketAccess`: the cluster (an `EksCluster`'s outputs), the buckets and who mounts them."""

    cluster_name: Required[pulumi.Input[str]]
    """The EKS cluster (its Pod Identity associations and the Mountpoint for S3 add-on). Pass
    ``EksCluster.system_node_group.cluster_name``: the add-on then waits for nodes to run on."""
    kubernetes_version: Required[str]
    """The cluster's Kubernetes minor: the add-on's version is EKS's default for it."""
    region: Required[str]
    """The buckets' region (Mountpoint's ``region`` mount option)."""
    namespaces: Required[list[str]]
    """The namespaces whose ``storage-access`` ServiceAccount may mount the buckets (`DataPlaneStorage` creates
    them)."""
    buckets: Required[list[BucketArgs]]
    """The S3 buckets: read-only ones get list and read, read-write ones write and delete too."""
    description: str
    """The IAM role's description. Default ``Bucket access of the storage-access ServiceAccounts of <name>``."""
    tags: dict[str, str]
    """Tags of every resource."""


class EksBucketAccess(BucketClaims, pulumi.ComponentResource, metaclass=KeywordArgs):
    """Mountpoint for S3 with pod-level credentials: the ``aws-mountpoint-s3-csi-driver`` add-on, one IAM role whose
    policy names exactly the buckets, trusted by EKS Pod Identity for ``storage-access`` in ``namespaces`` only,
    and one Pod Identity association per namespace. No driver-wide role, no keys.

    ``buckets`` are the `BucketBackend`s `DataPlaneStorage` mounts: ``volumes(namespaces)`` gives their
    ``volumes`` entries, ``data_plane_args(namespaces)`` those and the ServiceAccounts."""

    role: aws.iam.Role
    role_policy: aws.iam.RolePolicy
    csi_addon: aws.eks.Addon
    role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: EksBucketAccessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_bucket_access("EksBucketAccess", name, "aws", args, EksBucketAccessArgs)  # type: ignore
        super().__init__("gpuplatform:index:EksBucketAccess", name, {}, opts)
        child = child_opts(self, opts, aliases=former_parent(opts))
        tags = dict(args.get("tags", {}))
        buckets = bucket_configs(args["buckets"])  # type: ignore[arg-type]
        self.namespaces: list[str] = list(args["namespaces"])
        cluster_name = pulumi.Output.from_input(args["cluster_name"])
        partition = aws.get_partition(opts=pulumi.InvokeOptions(parent=self)).partition
        self.role = aws.iam.Role(
            f"{name}-storage-access",
            description=args.get("description",
                                 f"Bucket access of the {STORAGE_SERVICE_ACCOUNT} ServiceAccounts of {name}"),
            assume_role_policy=cluster_name.apply(lambda c: so.bucket_trust_policy(c, self.namespaces)),
            tags=tags, opts=child)
        self.role_policy = aws.iam.RolePolicy(
            f"{name}-storage-access-buckets", role=self.role.id,
            policy=so.bucket_policy([(b.bucket, b.read_only) for b in buckets], partition), opts=child)
        self.csi_addon = csi_addon(self, name, so.S3_CSI_ADDON, args["cluster_name"], args["kubernetes_version"],
                                   tags, child)
        self.associations: dict[str, aws.eks.PodIdentityAssociation] = {
            namespace: aws.eks.PodIdentityAssociation(
                f"{name}-storage-access-{namespace}", cluster_name=cluster_name, namespace=namespace,
                service_account=STORAGE_SERVICE_ACCOUNT, role_arn=self.role.arn, tags=tags,
                opts=child_opts(self, opts, depends_on=[self.role_policy], aliases=former_parent(opts)))
            for namespace in self.namespaces}
        """The Pod Identity association of each namespace's ``storage-access`` ServiceAccount."""
        self.role_arn = self.role.arn
        region = args["region"]
        self.buckets: tuple[BucketBackend, ...] = tuple(
            BucketBackend(name=b.name, bucket=b.bucket, driver=so.S3_CSI_DRIVER,
                          csi_source=lambda volume, b=b: so.bucket_csi_source(b.bucket, b.profile, volume),
                          read_only=b.read_only,
                          mount_options=so.bucket_mount_options(b.profile, b.read_only, region, RUN_AS_ID))
            for b in buckets)
        """How `DataPlaneStorage` mounts each bucket (Python only)."""
        self.service_account_annotations: dict[str, Any] = {}  # EKS Pod Identity: the association binds it
        self.csi_charts: tuple = ()  # the add-on is the driver
        self.ready: list[Any] = [self.csi_addon, *self.associations.values()]
        """What a pod mounting the buckets waits for: the add-on and the associations."""
        self.register_outputs({"role_arn": self.role_arn})
