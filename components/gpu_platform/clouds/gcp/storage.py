"""Google Cloud resources of a GKE stack's ``storage`` (`storage_from_config`), and what the Kubernetes layer mounts.

The decisions (tiers, names, principals, mount options) are the pure functions of `storage_options`; this module
turns the stack's keys into the args of the components a program composes too (`storage_components`:
`GkeSharedFileSystem`, `GkeBucketAccess`) and builds them after the `GkeCluster` (whose VPC, project and add-ons they
use):

- a Managed Lustre instance (``lustre.Instance``) with, in the cluster's own VPC, private services access (a global
  ``VPC_PEERING`` address range and a ``servicenetworking.Connection``) and a firewall rule admitting Lustre's TCP
  port from that range. In an existing network (``network``) only the instance is created: the network's owner
  provides private services access and the firewall rule, as Managed Lustre "Configure a VPC network" describes.
- one ``storage.BucketIAMMember`` per bucket and namespace that mounts it, for the namespace's ``storage-access``
  ServiceAccount as a Workload Identity Federation principal.

`GkeCluster` turns the CSI driver add-ons and image streaming on (``lustre_csi_driver``, ``gcs_fuse_csi_driver``,
pools' ``image_streaming``); `cluster_from_config` passes them from the stack's ``storage``.
"""

from typing import Any, Optional

import pulumi

from ...config_model import PlatformConfig
from ...kubernetes_base.common import child_opts
from ...storage.bucket_args import bucket_args
from ...storage.storage_backends import StorageBackends, bucket_namespaces
from . import options as gcp_options
from . import storage_options as so
from .storage_components import (
    LUSTRE_PEERING_CIDR,
    GkeBucketAccess,
    GkeBucketAccessArgs,
    GkeSharedFileSystem,
    GkeSharedFileSystemArgs,
    network_path,
)

__all__ = ["LUSTRE_PEERING_CIDR", "bucket_access_args", "file_system_args", "network_path", "storage_from_config"]



def storage_from_config(name: str, config: PlatformConfig, cluster: Any,
                        opts: Optional[pulumi.ResourceOptions] = None) -> StorageBackends:
    """The stack's `GkeSharedFileSystem` and `GkeBucketAccess` (children of ``cluster``, a `GkeCluster`), and how to
    mount them. Call only with ``config.storage.enabled``."""
    storage = config.storage
    shared = None
    if storage.shared_file_system is not None:
        shared = GkeSharedFileSystem(name, file_system_args(config, cluster), child_opts(cluster, opts)).backend
    buckets = ()
    if storage.buckets:
        buckets = GkeBucketAccess(name, bucket_access_args(config, cluster), child_opts(cluster, opts)).buckets
    return StorageBackends(shared_file_system=shared, buckets=buckets,
                           image_streaming=storage.image_pulls.streaming)


def file_system_args(config: PlatformConfig, cluster: Any) -> GkeSharedFileSystemArgs:
    """`GkeSharedFileSystem`'s args for a stack on its `GkeCluster`: in the zone `storage_options.lustre_zone`
    chooses; private services access where the cluster made its VPC."""
    options: gcp_options.GcpClusterOptions = config.cluster_options or gcp_options.GcpClusterOptions()
    fs = config.storage.shared_file_system
    assert fs is not None
    zone = so.lustre_zone(options.zone, config.node_pools)
    assert zone is not None  # gcp_options.parse_cluster_options refused the stack otherwise
    args = GkeSharedFileSystemArgs(project=cluster.project, zone=zone, size_gib=fs.size_gib,
                                   network=cluster.network.name if cluster.network is not None else options.network)
    if cluster.network is not None:
        args["network_id"] = cluster.network.id
    if fs.throughput_per_tib is not None:
        args["throughput_per_tib"] = fs.throughput_per_tib
    return args


def bucket_access_args(config: PlatformConfig, cluster: Any) -> GkeBucketAccessArgs:
    """`GkeBucketAccess`'s args for a stack on its `GkeCluster`: its buckets, for every namespace that mounts them
    (`bucket_namespaces`)."""
    return GkeBucketAccessArgs(project=cluster.project, namespaces=list(bucket_namespaces(config)),
                               buckets=bucket_args(config.storage.buckets))
