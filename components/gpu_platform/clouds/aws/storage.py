"""AWS resources of a stack's ``storage``: FSx for Lustre with its CSI add-on, Mountpoint for S3 with its bucket role.

Decisions live in `storage_options` (pure); this module turns the stack's keys into the args of the components a
program composes too (`storage_components`: `EksSharedFileSystem`, `EksBucketAccess`), builds them as children of
the stack's `EksCluster` (so on its AWS provider), and returns the `StorageBackends` the Kubernetes storage layer
mounts.
`storage_from_config` is called by `cluster.cluster_from_config` only when ``config.storage.enabled``.
"""

from collections.abc import Sequence
from typing import Any, Optional

import pulumi

from ...config_model import PlatformConfig
from ...storage.bucket_args import bucket_args
from ...storage.storage_backends import STORAGE_SERVICE_ACCOUNT, BucketBackend, StorageBackends, bucket_namespaces
from . import storage_options as so
from .storage_components import EksBucketAccess, EksBucketAccessArgs, EksSharedFileSystem, EksSharedFileSystemArgs


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


def file_system_args(config: PlatformConfig, cluster: Any, tags: dict) -> EksSharedFileSystemArgs:
    """`EksSharedFileSystem`'s args for a stack on its `EksCluster`: the stack's size and tier, in the subnet
    `file_system_placement` chooses."""
    fs_config = config.storage.shared_file_system
    assert fs_config is not None
    zone, subnet, why = file_system_placement(config, cluster.zones, cluster.private_subnet_ids)
    return EksSharedFileSystemArgs(
        cluster_name=cluster.system_node_group.cluster_name, kubernetes_version=config.kubernetes_version,
        vpc_id=cluster.vpc_id, subnet_id=cluster.private_subnets[zone].id if zone is not None else subnet,
        node_security_group_id=cluster.cluster_security_group_id, size_gib=fs_config.size_gib,
        throughput_per_tib=so.throughput(fs_config), description=f"FSx for Lustre of {config.stack} (placed by {why})",
        tags=tags)


def bucket_access_args(config: PlatformConfig, cluster: Any, tags: dict) -> EksBucketAccessArgs:
    """`EksBucketAccess`'s args for a stack on its `EksCluster`: its buckets, for every namespace that mounts them
    (`bucket_namespaces`)."""
    return EksBucketAccessArgs(
        cluster_name=cluster.system_node_group.cluster_name, kubernetes_version=config.kubernetes_version,
        region=config.region, namespaces=list(bucket_namespaces(config)),
        buckets=bucket_args(config.storage.buckets),
        description=f"Bucket access of the {STORAGE_SERVICE_ACCOUNT} ServiceAccounts of {config.stack}", tags=tags)


def storage_from_config(name: str, config: PlatformConfig, cluster: Any, tags: dict,
                        opts: Optional[pulumi.ResourceOptions] = None) -> tuple[StorageBackends, list]:
    """The stack's `EksSharedFileSystem` and `EksBucketAccess` on an `EksCluster` (``cluster``, their parent), and
    the resources the Kubernetes layer should wait for (the CSI add-ons, the file system, the Pod Identity
    associations)."""
    opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=cluster))
    storage = config.storage
    ready: list = []
    shared = None
    if storage.shared_file_system:
        file_system = EksSharedFileSystem(name, file_system_args(config, cluster, tags), opts)
        shared, ready = file_system.backend, [*ready, *file_system.ready]
    buckets: tuple[BucketBackend, ...] = ()
    if storage.buckets:
        access = EksBucketAccess(name, bucket_access_args(config, cluster, tags), opts)
        buckets, ready = access.buckets, [*ready, *access.ready]
    return StorageBackends(shared_file_system=shared, buckets=buckets), ready
