"""AWS resources of a stack's ``storage``: FSx for Lustre with its CSI add-on, Mountpoint for S3 with its bucket role.

Decisions live in `storage_options` (pure); this module registers what they describe, as children of the stack's
`EksCluster` (so on its AWS provider), and returns the `StorageBackends` the Kubernetes storage layer mounts.
`storage_from_config` is called by `cluster.cluster_from_config` only when ``config.storage.enabled``.
"""

from collections.abc import Sequence
from typing import Any, Optional

import pulumi

from ...config_model import PlatformConfig
from ...security.pod_security import RUN_AS_ID
from ...storage.storage_backends import (
    STORAGE_SERVICE_ACCOUNT,
    BucketBackend,
    SharedFileSystemBackend,
    StorageBackends,
    bucket_namespaces,
)
from .. import missing_extra
from . import storage_options as so

try:
    import pulumi_aws as aws
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None


def file_system_placement(config: PlatformConfig, vpc_zones: Sequence[str],
                          private_subnet_ids: Sequence[Any]) -> tuple[Optional[str], Optional[Any], str]:
    """Where the file system goes: ``(zone, subnet, why)``, exactly one of zone (new VPC: its private subnet there)
    and subnet (existing VPC) set. The RDMA pool's place first (the training nodes that read and write most, in
    one zone: FSx for Lustre lives in one subnet and crossing zones costs latency and transfer), else the first
    GPU pool's, else the VPC's first zone or subnet."""
    pools = list(zip(config.node_pools, config.gpu_pools(), strict=True))
    chosen = next(((c, p) for c, p in pools if p.rdma_fabric), None)
    why = "the RDMA pool"
    if chosen is None and pools:
        chosen, why = pools[0], "no RDMA pool: the first GPU pool"
    pool_config = chosen[0] if chosen else None
    name = chosen[1].name if chosen else ""
    subnets = tuple(getattr(getattr(pool_config, "cloud_options", None), "subnet_ids", ()) or ())
    if vpc_zones:
        zone = pool_config.zones[0] if pool_config is not None and pool_config.zones else vpc_zones[0]
        return zone, None, f"{why} {name}".strip()
    subnet = subnets[0] if subnets else private_subnet_ids[0]
    return None, subnet, f"{why} {name}".strip()


def _addon(name: str, addon: str, config: PlatformConfig, cluster: Any, tags: dict,
           opts: pulumi.ResourceOptions) -> aws.eks.Addon:
    """A CSI driver add-on at the version EKS makes default for the cluster's Kubernetes version (resolved at deploy
    time: EKS publishes these builds per Kubernetes version, see `aws eks describe-addon-versions`)."""
    version = aws.eks.get_addon_version_output(addon_name=addon, kubernetes_version=config.kubernetes_version,
                                               opts=pulumi.InvokeOptions(parent=cluster))
    return aws.eks.Addon(
        f"{name}-{addon}", cluster_name=cluster.cluster.name, addon_name=addon, addon_version=version.version,
        resolve_conflicts_on_create="OVERWRITE", resolve_conflicts_on_update="OVERWRITE", tags=tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[cluster.system_node_group])))


def _file_system(name: str, config: PlatformConfig, cluster: Any, tags: dict, opts: pulumi.ResourceOptions,
                 resources: list) -> SharedFileSystemBackend:
    fs_config = config.storage.shared_file_system
    zone, subnet, why = file_system_placement(config, cluster.zones, cluster.private_subnet_ids)
    subnet_id = cluster.private_subnets[zone].id if zone is not None else subnet
    group = aws.ec2.SecurityGroup(
        f"{name}-fsx", vpc_id=cluster.vpc_id, description=f"FSx for Lustre of {config.stack} (placed by {why})",
        tags={**tags, "Name": f"{name}-fsx"}, opts=opts)
    rules: list = []
    # Lustre both ways between the file servers, and between them and the nodes (the EKS cluster security group,
    # which every node group and Karpenter node carries).
    for i, ports in enumerate(so.lustre_rules()):
        for peer, peer_id in (("self", group.id), ("nodes", cluster.cluster_security_group_id)):
            rules.append(aws.vpc.SecurityGroupIngressRule(
                f"{name}-fsx-{peer}-in-{i}", security_group_id=group.id, referenced_security_group_id=peer_id,
                description=f"Lustre from {peer}", **ports, opts=opts))
            rules.append(aws.vpc.SecurityGroupEgressRule(
                f"{name}-fsx-{peer}-out-{i}", security_group_id=group.id, referenced_security_group_id=peer_id,
                description=f"Lustre to {peer}", **ports, opts=opts))
        rules.append(aws.vpc.SecurityGroupIngressRule(
            f"{name}-nodes-lustre-in-{i}", security_group_id=cluster.cluster_security_group_id,
            referenced_security_group_id=group.id, description="Lustre from the FSx file servers", **ports,
            opts=opts))
    fs = aws.fsx.LustreFileSystem(
        f"{name}-fsx",
        deployment_type=so.FSX_DEPLOYMENT_TYPE,
        storage_type=so.FSX_STORAGE_TYPE,
        storage_capacity=fs_config.size_gib,
        per_unit_storage_throughput=so.throughput(fs_config),
        file_system_type_version=so.FSX_LUSTRE_VERSION,
        data_compression_type=so.FSX_DATA_COMPRESSION,
        subnet_ids=subnet_id,  # one subnet (pulumi_aws types it a string: "support only one subnet")
        security_group_ids=[group.id],
        tags={**tags, "Name": f"{name}-fsx"},
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=rules)))
    resources.append(_addon(name, so.FSX_CSI_ADDON, config, cluster, tags, opts))
    resources.append(fs)

    def csi_source(volume_name: str, sub_directory: str) -> dict[str, Any]:
        return {"driver": so.FSX_CSI_DRIVER,
                "volumeHandle": fs.id.apply(lambda fid: so.fsx_volume_handle(fid, volume_name)),
                "volumeAttributes": {"dnsname": fs.dns_name,
                                     "mountname": fs.mount_name.apply(lambda m: so.fsx_mount_name(m, sub_directory))}}

    return SharedFileSystemBackend(kind="fsx-lustre", capacity_gib=fs_config.size_gib, driver=so.FSX_CSI_DRIVER,
                                   csi_source=csi_source, mount_options=so.FSX_MOUNT_OPTIONS,
                                   throughput_mbps_per_tib=so.throughput(fs_config))


def _buckets(name: str, config: PlatformConfig, cluster: Any, partition: str, tags: dict,
             opts: pulumi.ResourceOptions, resources: list) -> tuple[BucketBackend, ...]:
    buckets = config.storage.buckets
    namespaces = bucket_namespaces(config)
    role = aws.iam.Role(
        f"{name}-storage-access",
        description=f"Bucket access of the {STORAGE_SERVICE_ACCOUNT} ServiceAccounts of {config.stack}",
        assume_role_policy=cluster.cluster.name.apply(lambda c: so.bucket_trust_policy(c, namespaces)),
        tags=tags, opts=opts)
    policy = aws.iam.RolePolicy(f"{name}-storage-access-buckets", role=role.id,
                                policy=so.bucket_policy([(b.bucket, b.read_only) for b in buckets], partition),
                                opts=opts)
    associations = [
        aws.eks.PodIdentityAssociation(
            f"{name}-storage-access-{namespace}", cluster_name=cluster.cluster.name, namespace=namespace,
            service_account=STORAGE_SERVICE_ACCOUNT, role_arn=role.arn, tags=tags,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[policy])))
        for namespace in namespaces
    ]
    resources.extend([_addon(name, so.S3_CSI_ADDON, config, cluster, tags, opts), *associations])
    return tuple(
        BucketBackend(name=b.name, bucket=b.bucket, driver=so.S3_CSI_DRIVER,
                      csi_source=lambda volume, b=b: so.bucket_csi_source(b.bucket, b.profile, volume),
                      read_only=b.read_only,
                      mount_options=so.bucket_mount_options(b.profile, b.read_only, config.region, RUN_AS_ID))
        for b in buckets)


def storage_from_config(name: str, config: PlatformConfig, cluster: Any, tags: dict,
                        opts: Optional[pulumi.ResourceOptions] = None) -> tuple[StorageBackends, list]:
    """The stack's FSx for Lustre file system and bucket access on an `EksCluster` (``cluster``), and the resources
    the Kubernetes layer should wait for (the CSI add-ons, the file system, the Pod Identity associations)."""
    opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=cluster))
    storage = config.storage
    resources: list = []
    shared = _file_system(name, config, cluster, tags, opts, resources) if storage.shared_file_system else None
    buckets: tuple[BucketBackend, ...] = ()
    if storage.buckets:
        partition = aws.get_partition(opts=pulumi.InvokeOptions(parent=cluster)).partition
        buckets = _buckets(name, config, cluster, partition, tags, opts, resources)
    return StorageBackends(shared_file_system=shared, buckets=buckets), resources
