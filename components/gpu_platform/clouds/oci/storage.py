"""OCI resources of a stack's ``storage``: a File Storage file system with a hard size quota, its mount target and
export, and the network security group admitting NFS from the workers; for ``buckets``, the IAM policy granting the
rclone CSI driver's workload identity exactly those buckets, and the driver's chart for the Kubernetes layer.

Decisions live in `storage_options` (pure); this module turns the stack's keys into the args of the components a
program composes too (`storage_components`: `OkeSharedFileSystem`, `OkeBucketAccess`), builds them as children of
the stack's `OkeCluster` (so on its OCI provider), and returns the `StorageBackends` the Kubernetes storage layer
mounts.
`storage_from_config` is called by `cluster.cluster_from_config` only when ``config.storage.enabled``; image
streaming never reaches it (`storage_options.check_storage` refuses it).
"""

from typing import Any, Optional

import pulumi

from ...config_model import PlatformConfig
from ...storage.bucket_args import bucket_args
from ...storage.storage_backends import BucketBackend, CsiDriverChart, StorageBackends
from .. import missing_extra
from . import storage_options as so
from .storage_components import OkeBucketAccess, OkeBucketAccessArgs, OkeSharedFileSystem, OkeSharedFileSystemArgs

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
    """The stack's `OkeSharedFileSystem` on an `OkeCluster` (``cluster``, their parent) in ``availability_domain``
    and its `OkeBucketAccess`, and the resources the Kubernetes layer should wait for (the export, the size quota,
    the buckets' IAM policy)."""
    opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=cluster))
    shared, ready = None, []
    if config.storage.shared_file_system is not None:  # not with buckets or pre-pull only
        file_system = OkeSharedFileSystem(name, file_system_args(config, cluster, availability_domain), opts)
        shared, ready = file_system.backend, list(file_system.ready)
    buckets: tuple[BucketBackend, ...] = ()
    charts: tuple[CsiDriverChart, ...] = ()
    if config.storage.buckets:
        access = OkeBucketAccess(name, bucket_access_args(config, cluster), opts)
        buckets, charts = access.buckets, access.csi_charts
        ready += access.ready
    return StorageBackends(shared_file_system=shared, buckets=buckets, csi_charts=charts), ready


def file_system_args(config: PlatformConfig, cluster: Any,
                     availability_domain: pulumi.Input[str]) -> OkeSharedFileSystemArgs:
    """`OkeSharedFileSystem`'s args for a stack on its `OkeCluster`: its mount target in the workers' subnet."""
    fs_config = config.storage.shared_file_system
    assert fs_config is not None
    return OkeSharedFileSystemArgs(
        compartment_id=config.compartment_id, availability_domain=availability_domain, vcn_id=cluster.vcn_id,
        subnet_id=cluster.worker_subnet_id, client_cidr=_worker_cidr(cluster), size_gib=fs_config.size_gib)


def bucket_access_args(config: PlatformConfig, cluster: Any) -> OkeBucketAccessArgs:
    """`OkeBucketAccess`'s args for a stack on its `OkeCluster`: its buckets, and its GPU pools' taints for the
    driver's node plugin."""
    return OkeBucketAccessArgs(
        compartment_id=config.compartment_id, cluster_id=cluster.cluster_id, region=config.region,
        buckets=bucket_args(config.storage.buckets), pools=[p.spec() for p in config.gpu_pools()],
        description=f"rclone CSI driver of {config.stack}: the configured Object Storage buckets (workload "
                    "identity)")
