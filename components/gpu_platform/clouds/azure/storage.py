"""Azure resources of an AKS stack's ``storage`` (`storage_from_config`), and what the Kubernetes layer mounts.

The decisions (SKUs, subnet sizes, roles, volume sources) are the pure functions of `storage_options`; this module
registers the resources they describe, after the `AksCluster` (whose resource group, VNet and OIDC issuer they use):

- an Azure Managed Lustre file system in a subnet of its own in the cluster's VNet;
- for blob containers, one user-assigned identity (``<stack>-storage-access``), a federated identity credential per
  namespace that mounts buckets (its ``storage-access`` ServiceAccount), and a role assignment per container scoped
  to that container.

`AksCluster` turns AKS's Blob CSI driver on (``blob_csi_driver``); the Lustre CSI driver is no add-on and has no
released chart, so the backend names its pinned upstream manifests for the Kubernetes layer to apply
(``SharedFileSystemBackend.csi_manifests``, `versions.CSI_DRIVER_MANIFESTS`).
"""

from typing import Any, Optional

import pulumi

from ...config_model import PlatformConfig
from ...kubernetes_base.common import child_opts
from ...storage.bucket_args import bucket_args
from ...storage.storage_backends import BucketBackend, StorageBackends, bucket_namespaces
from . import storage_options as so
from .options import AzureClusterOptions
from .storage_components import AksBucketAccess, AksBucketAccessArgs, AksSharedFileSystem, AksSharedFileSystemArgs


def storage_from_config(name: str, config: PlatformConfig, cluster: Any,
                        opts: Optional[pulumi.ResourceOptions] = None) -> StorageBackends:
    """The stack's `AksSharedFileSystem` and `AksBucketAccess` (children of ``cluster``, an `AksCluster`), and how to
    mount them. Call only with ``config.storage.enabled``."""
    options: AzureClusterOptions = config.cluster_options or AzureClusterOptions()
    shared = None
    if config.storage.shared_file_system:
        # After the node subnet: Azure refuses concurrent subnet writes in one VNet.
        after_nodes = [cluster.subnet] if cluster.subnet is not None else []
        shared = AksSharedFileSystem(name, file_system_args(config, cluster, options),
                                     child_opts(cluster, opts, after_nodes)).backend
    buckets: tuple[BucketBackend, ...] = ()
    annotations: dict[str, Any] = {}
    if config.storage.buckets:
        access = AksBucketAccess(name, bucket_access_args(config, cluster, options), child_opts(cluster, opts))
        buckets, annotations = access.buckets, dict(access.service_account_annotations)
    return StorageBackends(shared_file_system=shared, buckets=buckets, service_account_annotations=annotations)


def file_system_args(config: PlatformConfig, cluster: Any, options: AzureClusterOptions) -> AksSharedFileSystemArgs:
    """`AksSharedFileSystem`'s args for a stack on its `AksCluster`: the first free block after the node subnet, the
    zone of the pools that read most (`storage_options.lustre_zone`)."""
    fs = config.storage.shared_file_system
    assert fs is not None and cluster.virtual_network is not None  # azure options refused the stack otherwise
    args = AksSharedFileSystemArgs(
        resource_group_name=cluster.resource_group_name, location=config.region,
        virtual_network_name=cluster.virtual_network.name,
        subnet_address_prefix=so.amlfs_subnet(options.vnet_address_space, options.subnet_address_prefix, fs.size_gib),
        size_gib=fs.size_gib, tags={"gpu-platform-stack": config.stack})
    if fs.throughput_per_tib is not None:
        args["throughput_per_tib"] = fs.throughput_per_tib
    zone = so.lustre_zone(config.node_pools)
    if zone:
        args["zone"] = zone
    return args


def bucket_access_args(config: PlatformConfig, cluster: Any, options: AzureClusterOptions) -> AksBucketAccessArgs:
    """`AksBucketAccess`'s args for a stack on its `AksCluster`: its containers, for every namespace that mounts
    them (`bucket_namespaces`)."""
    args = AksBucketAccessArgs(
        resource_group_name=cluster.resource_group_name, location=config.region,
        oidc_issuer_url=cluster.oidc_issuer_url, namespaces=list(bucket_namespaces(config)),
        buckets=bucket_args(config.storage.buckets), tags={"gpu-platform-stack": config.stack})
    if options.storage_resource_group:
        args["storage_resource_group"] = options.storage_resource_group
    return args
