"""OCI storage as components a program composes with `OkeCluster`: `OkeSharedFileSystem` (a File Storage file system
with a hard size quota, its mount target, export and network security group) and `OkeBucketAccess` (the IAM policy
granting the rclone CSI driver's workload identity exactly the buckets, and the driver's chart). The stack path
(`storage.storage_from_config`) builds through these same components, so a stack file and a composed program plan
the same resources.

The decisions are `storage_options`' (pure). OKE's File Storage CSI driver is built in; the rclone driver is
installed by `DataPlaneStorage` from the chart the bucket access names (``data_plane_args``).
"""

from typing import Any, Optional, TypedDict

import pulumi
from typing_extensions import Required

from ...component_args import Args, KeywordArgs, at_least
from ...kubernetes_base.common import all_pool_tolerations, check_pool_set, child_opts, pools_of
from ...pools import GpuPoolSpec
from ...storage.bucket_args import BucketArgs, bucket_configs, checked_bucket_access
from ...storage.composition import BucketClaims, FileSystemClaims, former_parent
from ...storage.storage_backends import BucketBackend, CsiDriverChart, SharedFileSystemBackend
from .. import missing_extra
from . import storage_options as so
from .iam import compartment_scope

try:
    import pulumi_oci as oci
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None


class OkeSharedFileSystemArgs(TypedDict, total=False):
    """Arguments of `OkeSharedFileSystem`: the cluster's network (an `OkeCluster`'s outputs) and the size cap."""

    compartment_id: Required[pulumi.Input[str]]
    """The compartment of the file system, mount target and security group."""
    availability_domain: Required[pulumi.Input[str]]
    """The availability domain (name) of the file system and mount target: that of the nodes that read most."""
    vcn_id: Required[pulumi.Input[str]]
    """The cluster's VCN (``OkeCluster.vcn_id``): the mount target's network security group lives there."""
    subnet_id: Required[pulumi.Input[str]]
    """The workers' subnet (``OkeCluster.worker_subnet_id``): the mount target's, reached from every AD."""
    client_cidr: Required[pulumi.Input[str]]
    """The workers' CIDR: the security group admits NFS from it and the export serves it."""
    size_gib: Required[int]
    """The file system's hard size quota in GiB (File Storage grows with what is stored; this is its ceiling)."""


class OkeSharedFileSystem(FileSystemClaims, pulumi.ComponentResource, metaclass=KeywordArgs):
    """An OCI File Storage file system with a hard file-system-level quota, a mount target in the workers' subnet
    with a network security group admitting NFS from the workers, and an export at ``/gpu-platform``.

    ``backend`` is the `SharedFileSystemBackend` `DataPlaneStorage` mounts (OKE's built-in
    ``fss.csi.oraclecloud.com``; a volume per directory below the export)."""

    network_security_group: oci.core.NetworkSecurityGroup
    mount_target: oci.filestorage.MountTarget
    file_system: oci.filestorage.FileSystem
    size_quota: oci.filestorage.FileSystemQuotaRule
    export: oci.filestorage.Export
    file_system_id: pulumi.Output[str]
    mount_target_ip: pulumi.Output[str]

    def __init__(self, name: str, args: OkeSharedFileSystemArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = Args("OkeSharedFileSystem", name, cloud="oci").check(  # type: ignore[assignment]
            args, OkeSharedFileSystemArgs, {"size_gib": at_least(1)})  # before anything is registered
        super().__init__("gpuplatform:index:OkeSharedFileSystem", name, {}, opts)
        child = child_opts(self, opts, aliases=former_parent(opts))
        compartment, domain, cidr = args["compartment_id"], args["availability_domain"], args["client_cidr"]
        self.network_security_group = oci.core.NetworkSecurityGroup(
            f"{name}-fss", compartment_id=compartment, vcn_id=args["vcn_id"], display_name=f"{name}-fss", opts=child)
        nsg = self.network_security_group
        rules = [oci.core.NetworkSecurityGroupSecurityRule(f"{name}-fss-nfs-{i}", network_security_group_id=nsg.id,
                                                           **rule, opts=child)
                 for i, rule in enumerate(so.nfs_rules(cidr))]
        self.mount_target = oci.filestorage.MountTarget(
            f"{name}-fss", availability_domain=domain, compartment_id=compartment, subnet_id=args["subnet_id"],
            nsg_ids=[nsg.id], display_name=f"{name}-fss",
            opts=child_opts(self, opts, depends_on=rules, aliases=former_parent(opts)))
        self.file_system = oci.filestorage.FileSystem(
            f"{name}-fss", availability_domain=domain, compartment_id=compartment, display_name=f"{name}-shared",
            are_quota_rules_enabled=True, opts=child)
        # File Storage grows with what is stored: a hard file-system-level quota makes size_gib the ceiling it is on
        # the other clouds (the PersistentVolumes declare the same size).
        self.size_quota = oci.filestorage.FileSystemQuotaRule(
            f"{name}-fss-size", file_system_id=self.file_system.id, **so.size_quota(args["size_gib"]), opts=child)
        self.export = oci.filestorage.Export(
            f"{name}-fss", export_set_id=self.mount_target.export_set_id, file_system_id=self.file_system.id,
            path=so.EXPORT_PATH, export_options=so.export_options(cidr), opts=child)
        self.file_system_id, self.mount_target_ip = self.file_system.id, self.mount_target.ip_address
        file_system_id, mount_target_ip = self.file_system_id, self.mount_target_ip

        def csi_source(volume_name: str, sub_directory: str) -> dict[str, Any]:
            # volume_name is not part of the handle: the directory already makes each PersistentVolume's handle
            # unique.
            handle = pulumi.Output.all(file_system_id, mount_target_ip).apply(
                lambda a: so.fss_volume_handle(a[0], a[1], sub_directory))
            return {"driver": so.FSS_CSI_DRIVER, "volumeHandle": handle}

        self.backend = SharedFileSystemBackend(kind="oci-file-storage", capacity_gib=args["size_gib"],
                                               driver=so.FSS_CSI_DRIVER, csi_source=csi_source)
        """How `DataPlaneStorage` mounts the file system (Python only)."""
        self.ready: list[Any] = [self.export, self.size_quota]
        """What a pod mounting the file system waits for: the export and the size quota."""
        self.register_outputs({"file_system_id": self.file_system_id, "mount_target_ip": self.mount_target_ip})


class OkeBucketAccessArgs(TypedDict, total=False):
    """Arguments of `OkeBucketAccess`: the cluster (an `OkeCluster`'s outputs), the buckets and the GPU pools."""

    compartment_id: Required[pulumi.Input[str]]
    """The compartment of the policy, where the buckets must be."""
    cluster_id: Required[pulumi.Input[str]]
    """The cluster (``OkeCluster.cluster_id``): only its rclone node plugin's workload identity is granted."""
    region: Required[str]
    """The region of the buckets (rclone's ``region``; the node plugin's workload identity region)."""
    buckets: Required[list[BucketArgs]]
    """The Object Storage buckets: ``read buckets`` and ``read objects`` on read-only ones, ``manage objects`` on
    read-write ones."""
    pools: list[GpuPoolSpec]
    """The cluster's GPU pools: the driver's node plugin tolerates their taints (and OKE's preemptible taint when a
    pool is spot), so pods on GPU nodes mount buckets. Default none."""
    description: str
    """The policy's description. Default ``rclone CSI driver of <name>: ...``."""


class OkeBucketAccess(BucketClaims, pulumi.ComponentResource, metaclass=KeywordArgs):
    """Object Storage through the rclone CSI driver with OKE workload identity: one IAM policy granting the driver's
    node plugin (``kube-system/csi-rclone-nodeplugin`` of this cluster) exactly the buckets, and the driver's chart
    for `DataPlaneStorage` to install. The identity is driver-wide (rclone runs in the node plugin): the
    ``storage-access`` ServiceAccounts get no cloud role here, and any namespace's claims may mount the buckets.

    ``buckets`` are the `BucketBackend`s `DataPlaneStorage` mounts; ``data_plane_args(namespaces)`` gives their
    ``volumes``, the ServiceAccounts and the chart."""

    policy: oci.identity.Policy

    def __init__(self, name: str, args: OkeBucketAccessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_bucket_access("OkeBucketAccess", name, "oci", args, OkeBucketAccessArgs)  # type: ignore
        check_pool_set(Args("OkeBucketAccess", name, cloud="oci"), args.get("pools", []))
        super().__init__("gpuplatform:index:OkeBucketAccess", name, {}, opts)
        buckets = bucket_configs(args["buckets"])  # type: ignore[arg-type]
        compartment, region = args["compartment_id"], args["region"]
        self.policy = oci.identity.Policy(
            f"{name}-buckets", compartment_id=compartment,
            description=args.get("description", f"rclone CSI driver of {name}: the configured Object Storage "
                                                "buckets (workload identity)"),
            statements=pulumi.Output.all(compartment, args["cluster_id"]).apply(
                lambda ids: so.bucket_policy_statements(compartment_scope(ids[0]), ids[1],
                                                        [(b.bucket, b.read_only) for b in buckets])),
            opts=child_opts(self, opts, aliases=former_parent(opts)))
        # The tenancy's Object Storage namespace (rclone's required ``namespace``), asked of the service itself.
        namespace = oci.objectstorage.get_namespace_output(compartment_id=compartment,
                                                           opts=pulumi.InvokeOutputOptions(parent=self)).namespace
        config_data = namespace.apply(lambda ns: so.rclone_config(ns, region))

        def backend(b: Any) -> BucketBackend:
            def csi_source(volume_name: str) -> dict[str, Any]:
                return so.rclone_csi_source(volume_name, b.bucket, b.profile, b.read_only, config_data)
            return BucketBackend(name=b.name, bucket=b.bucket, driver=so.RCLONE_CSI_DRIVER, csi_source=csi_source,
                                 read_only=b.read_only)

        self.buckets: tuple[BucketBackend, ...] = tuple(backend(b) for b in buckets)
        """How `DataPlaneStorage` mounts each bucket (Python only)."""
        self.namespaces: Optional[list[str]] = None  # driver-wide identity: claims in any namespace mount them
        pools = pools_of(args.get("pools", []))
        tolerations = so.node_plugin_tolerations(all_pool_tolerations(pools), any(p.spot for p in pools))
        self.csi_charts: tuple[CsiDriverChart, ...] = (
            CsiDriverChart(name=so.RCLONE_CHART, values=so.rclone_chart_values(region, tolerations)),)
        self.service_account_annotations: dict[str, Any] = {}
        self.ready: list[Any] = [self.policy]
        """What a pod mounting the buckets waits for: the policy."""
        self.register_outputs({})
