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
from ...labels import AZURE_WORKLOAD_IDENTITY_CLIENT_ID_ANNOTATION, AZURE_WORKLOAD_IDENTITY_USE_LABEL
from ...storage.storage_backends import (
    BucketBackend,
    CsiDriverManifests,
    SharedFileSystemBackend,
    StorageBackends,
    bucket_namespaces,
)
from .. import missing_extra
from . import storage_options as so
from .options import AzureClusterOptions

try:
    from pulumi_azure_native import authorization, managedidentity, network, storagecache
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None


def storage_from_config(name: str, config: PlatformConfig, cluster: Any,
                        opts: Optional[pulumi.ResourceOptions] = None) -> StorageBackends:
    """The stack's Azure Managed Lustre file system and blob access (children of ``cluster``, an `AksCluster`), and
    how to mount them. Call only with ``config.storage.enabled``."""
    options: AzureClusterOptions = config.cluster_options or AzureClusterOptions()
    shared = _managed_lustre(name, config, cluster, options, opts) if config.storage.shared_file_system else None
    buckets: tuple[BucketBackend, ...] = ()
    annotations: dict[str, Any] = {}
    if config.storage.buckets:
        buckets, client_id = _blob_access(name, config, cluster, options, opts)
        annotations[AZURE_WORKLOAD_IDENTITY_CLIENT_ID_ANNOTATION] = client_id
    return StorageBackends(shared_file_system=shared, buckets=buckets, service_account_annotations=annotations)


def _managed_lustre(name: str, config: PlatformConfig, cluster: Any, options: AzureClusterOptions,
                    opts: Optional[pulumi.ResourceOptions]) -> SharedFileSystemBackend:
    fs = config.storage.shared_file_system
    assert fs is not None and cluster.virtual_network is not None  # azure options refused the stack otherwise
    tier = so.amlfs_tier(fs.throughput_per_tib)
    subnet = network.Subnet(
        f"{name}-lustre", resource_group_name=cluster.resource_group_name,
        virtual_network_name=cluster.virtual_network.name,
        address_prefix=so.amlfs_subnet(options.vnet_address_space, options.subnet_address_prefix, fs.size_gib),
        opts=child_opts(cluster, opts, [cluster.subnet] if cluster.subnet is not None else []))
    zone = so.lustre_zone(config.node_pools)
    filesystem = storagecache.AmlFilesystem(
        f"{name}-amlfs", resource_group_name=cluster.resource_group_name, location=config.region,
        sku={"name": tier.sku}, storage_capacity_ti_b=float(fs.size_gib // so.GIB_PER_TIB),
        filesystem_subnet=subnet.id, maintenance_window=so.AMLFS_MAINTENANCE_WINDOW,
        zones=[zone] if zone else None, tags={"gpu-platform-stack": config.stack},
        opts=child_opts(cluster, opts))
    mgs_address = filesystem.client_info.apply(lambda info: info.mgs_address if info else None)

    def csi_source(volume_name: str, sub_directory: str) -> dict[str, Any]:
        return {
            "driver": so.LUSTRE_CSI_DRIVER,
            "volumeHandle": mgs_address.apply(lambda ip: so.lustre_volume_handle(volume_name, ip, sub_directory)),
            "volumeAttributes": so.lustre_volume_attributes(mgs_address, sub_directory),
        }

    return SharedFileSystemBackend(
        kind="azure-managed-lustre", capacity_gib=fs.size_gib, driver=so.LUSTRE_CSI_DRIVER, csi_source=csi_source,
        mount_options=so.LUSTRE_MOUNT_OPTIONS, csi_manifests=CsiDriverManifests(so.LUSTRE_CSI_MANIFESTS),
        throughput_mbps_per_tib=tier.throughput)


def _blob_access(name: str, config: PlatformConfig, cluster: Any, options: AzureClusterOptions,
                 opts: Optional[pulumi.ResourceOptions]) -> tuple[tuple[BucketBackend, ...], pulumi.Output[str]]:
    """The identity the ``storage-access`` ServiceAccounts federate to, its roles on the containers, and the
    buckets' backends."""
    group = cluster.resource_group_name
    identity = managedidentity.UserAssignedIdentity(
        f"{name}-storage-access", resource_group_name=group, location=config.region,
        tags={"gpu-platform-stack": config.stack}, opts=child_opts(cluster, opts))
    previous: list[Any] = []
    for namespace in bucket_namespaces(config):
        # One after another: Azure refuses concurrent writes of federated credentials on one identity.
        credential = managedidentity.FederatedIdentityCredential(
            f"{name}-storage-access-{namespace}", resource_group_name=group, resource_name_=identity.name,
            issuer=cluster.oidc_issuer_url, subject=so.federated_subject(namespace),
            audiences=[so.FEDERATION_AUDIENCE], opts=child_opts(cluster, opts, previous))
        previous = [credential]
    client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=cluster))
    storage_group = pulumi.Output.from_input(options.storage_resource_group or group)
    backends = []
    for bucket in config.storage.buckets:
        account = bucket.storage_account or ""
        role = so.blob_role(bucket.read_only)
        authorization.RoleAssignment(
            f"{name}-{bucket.name}-blob", principal_id=identity.principal_id, principal_type="ServicePrincipal",
            role_definition_id=client.subscription_id.apply(
                lambda sub, r=role: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{r}"),
            scope=pulumi.Output.all(client.subscription_id, storage_group).apply(
                lambda a, acct=account, c=bucket.bucket: so.container_scope(a[0], a[1], acct, c)),
            opts=child_opts(cluster, opts))

        def csi_source(volume_name: str, acct: str = account, container: str = bucket.bucket,
                       read_only: bool = bucket.read_only) -> dict[str, Any]:
            source: dict[str, Any] = {
                "driver": so.BLOB_CSI_DRIVER,
                "volumeHandle": storage_group.apply(
                    lambda rg: so.blob_volume_handle(rg, acct, container, volume_name)),
                "volumeAttributes": so.blob_volume_attributes(acct, container, storage_group, identity.client_id),
            }
            if read_only:
                source["readOnly"] = True
            return source

        backends.append(BucketBackend(
            name=bucket.name, bucket=bucket.bucket, driver=so.BLOB_CSI_DRIVER, csi_source=csi_source,
            read_only=bucket.read_only, mount_options=so.BLOBFUSE_MOUNT_OPTIONS[bucket.profile],
            pod_labels={AZURE_WORKLOAD_IDENTITY_USE_LABEL: "true"}))
    return tuple(backends), identity.client_id
