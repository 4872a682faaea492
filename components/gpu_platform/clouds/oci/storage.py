"""OCI resources of a stack's ``storage``: a File Storage file system with a hard size quota, its mount target and
export, and the network security group admitting NFS from the workers; for ``buckets``, the IAM policy granting the
rclone CSI driver's workload identity exactly those buckets, and the driver's chart for the Kubernetes layer.

Decisions live in `storage_options` (pure); this module registers what they describe, as children of the stack's
`OkeCluster` (so on its OCI provider), and returns the `StorageBackends` the Kubernetes storage layer mounts.
`storage_from_config` is called by `cluster.cluster_from_config` only when ``config.storage.enabled``; image
streaming never reaches it (`storage_options.check_storage` refuses it).
"""

from typing import Any, Optional

import pulumi

from ...config_model import PlatformConfig
from ...kubernetes_base.common import all_pool_tolerations
from ...storage.storage_backends import BucketBackend, CsiDriverChart, SharedFileSystemBackend, StorageBackends
from .. import missing_extra
from . import storage_options as so
from .iam import compartment_scope

try:
    import pulumi_oci as oci
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None


def file_system_ad_number(config: PlatformConfig) -> int:
    """The AD number the file system goes to (`storage_options.file_system_ad`) for a stack's pools."""
    pools = list(zip(config.node_pools, config.gpu_pools(), strict=True))
    rdma = next((c for c, p in pools if p.rdma_fabric), None)
    options = config.cluster_options
    return so.file_system_ad(
        tuple(rdma.cloud_options.availability_domains) if rdma is not None else (),
        tuple(pools[0][0].cloud_options.availability_domains) if pools else (),
        tuple(getattr(options, "availability_domains", ()) or ()))


def _worker_cidr(cluster: Any) -> pulumi.Output[str]:
    """The workers' subnet CIDR: the platform's layout in a new VCN, the subnet's own in an existing one."""
    if cluster.network is not None:
        return pulumi.Output.from_input(cluster.network.layout.workers)
    subnet = oci.core.get_subnet_output(subnet_id=cluster.worker_subnet_id,
                                        opts=pulumi.InvokeOutputOptions(parent=cluster))
    return subnet.cidr_block


def storage_from_config(name: str, config: PlatformConfig, cluster: Any, availability_domain: pulumi.Input[str],
                        opts: Optional[pulumi.ResourceOptions] = None) -> tuple[StorageBackends, list]:
    """The stack's File Storage file system on an `OkeCluster` (``cluster``) in ``availability_domain`` and its
    buckets' access, and the resources the Kubernetes layer should wait for (the export, the size quota, the
    buckets' IAM policy)."""
    opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=cluster))
    shared, ready = _file_system(name, config, cluster, availability_domain, opts)
    buckets: tuple[BucketBackend, ...] = ()
    charts: tuple[CsiDriverChart, ...] = ()
    if config.storage.buckets:
        buckets, policy = _buckets(name, config, cluster, opts)
        pools = config.gpu_pools()
        tolerations = so.node_plugin_tolerations(all_pool_tolerations(pools), any(p.spot for p in pools))
        charts = (CsiDriverChart(name=so.RCLONE_CHART, values=so.rclone_chart_values(config.region, tolerations)),)
        ready.append(policy)
    return StorageBackends(shared_file_system=shared, buckets=buckets, csi_charts=charts), ready


def _buckets(name: str, config: PlatformConfig, cluster: Any,
             opts: pulumi.ResourceOptions) -> tuple[tuple[BucketBackend, ...], Any]:
    """The buckets' backends (rclone CSI volumes) and the IAM policy granting the driver's workload identity them."""
    compartment = config.compartment_id
    buckets = config.storage.buckets
    policy = oci.identity.Policy(
        f"{name}-buckets", compartment_id=compartment,
        description=f"rclone CSI driver of {config.stack}: the configured Object Storage buckets (workload identity)",
        statements=pulumi.Output.all(compartment, cluster.cluster_id).apply(
            lambda ids: so.bucket_policy_statements(compartment_scope(ids[0]), ids[1],
                                                    [(b.bucket, b.read_only) for b in buckets])),
        opts=opts)
    # The tenancy's Object Storage namespace (rclone's required ``namespace``), asked of the service itself.
    namespace = oci.objectstorage.get_namespace_output(compartment_id=compartment,
                                                       opts=pulumi.InvokeOutputOptions(parent=cluster)).namespace
    config_data = namespace.apply(lambda ns: so.rclone_config(ns, config.region))

    def backend(b: Any) -> BucketBackend:
        def csi_source(volume_name: str) -> dict[str, Any]:
            return so.rclone_csi_source(volume_name, b.bucket, b.profile, b.read_only, config_data)
        return BucketBackend(name=b.name, bucket=b.bucket, driver=so.RCLONE_CSI_DRIVER, csi_source=csi_source,
                             read_only=b.read_only)
    return tuple(backend(b) for b in buckets), policy


def _file_system(name: str, config: PlatformConfig, cluster: Any, availability_domain: pulumi.Input[str],
                 opts: pulumi.ResourceOptions) -> tuple[Optional[SharedFileSystemBackend], list]:
    """The File Storage file system (None without ``sharedFileSystem``) and what the Kubernetes layer waits for."""
    fs_config = config.storage.shared_file_system
    if fs_config is None:  # buckets or pre-pull only: no file system
        return None, []
    compartment = config.compartment_id
    cidr = _worker_cidr(cluster)
    nsg = oci.core.NetworkSecurityGroup(f"{name}-fss", compartment_id=compartment, vcn_id=cluster.vcn_id,
                                        display_name=f"{name}-fss", opts=opts)
    # The CIDR is an Output in an existing VCN; the rules only carry it as their source.
    nsg_rules = [oci.core.NetworkSecurityGroupSecurityRule(f"{name}-fss-nfs-{i}", network_security_group_id=nsg.id,
                                                           **rule, opts=opts)
                 for i, rule in enumerate(so.nfs_rules(cidr))]
    mount_target = oci.filestorage.MountTarget(
        f"{name}-fss", availability_domain=availability_domain, compartment_id=compartment,
        subnet_id=cluster.worker_subnet_id, nsg_ids=[nsg.id], display_name=f"{name}-fss",
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=nsg_rules)))
    file_system = oci.filestorage.FileSystem(
        f"{name}-fss", availability_domain=availability_domain, compartment_id=compartment,
        display_name=f"{name}-shared", are_quota_rules_enabled=True, opts=opts)
    # File Storage grows with what is stored: a hard file-system-level quota makes sizeGiB the ceiling it is on the
    # other clouds (the PersistentVolumes declare the same size).
    quota = oci.filestorage.FileSystemQuotaRule(
        f"{name}-fss-size", file_system_id=file_system.id, **so.size_quota(fs_config.size_gib), opts=opts)
    export = oci.filestorage.Export(
        f"{name}-fss", export_set_id=mount_target.export_set_id, file_system_id=file_system.id,
        path=so.EXPORT_PATH, export_options=so.export_options(cidr), opts=opts)

    def csi_source(volume_name: str, sub_directory: str) -> dict[str, Any]:
        # volume_name is not part of the handle: the directory already makes each PersistentVolume's handle unique.
        handle = pulumi.Output.all(file_system.id, mount_target.ip_address).apply(
            lambda a: so.fss_volume_handle(a[0], a[1], sub_directory))
        return {"driver": so.FSS_CSI_DRIVER, "volumeHandle": handle}

    backend = SharedFileSystemBackend(kind="oci-file-storage", capacity_gib=fs_config.size_gib,
                                      driver=so.FSS_CSI_DRIVER, csi_source=csi_source)
    return backend, [export, quota]

