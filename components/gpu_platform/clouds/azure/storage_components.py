"""Azure storage as components a program composes with `AksCluster`: `AksSharedFileSystem` (Azure Managed Lustre in
a subnet of its own in the cluster's VNet) and `AksBucketAccess` (one user-assigned identity the ``storage-access``
ServiceAccounts federate to, and its role on each blob container). The stack path (`storage.storage_from_config`)
builds through these same components, so a stack file and a composed program plan the same resources.

The decisions are `storage_options`' (pure). `AksCluster` turns AKS's Blob CSI driver on (``blob_csi_driver``); the
Lustre CSI driver has no add-on and no chart, so the file system's backend names its pinned upstream manifests for
`DataPlaneStorage` to apply (``data_plane_args()``).
"""

import ipaddress
from typing import Any, Optional, TypedDict

import pulumi
from typing_extensions import Required

from ...component_args import Args, KeywordArgs, choice
from ...kubernetes_base.common import child_opts
from ...labels import AZURE_WORKLOAD_IDENTITY_CLIENT_ID_ANNOTATION, AZURE_WORKLOAD_IDENTITY_USE_LABEL
from ...storage.bucket_args import BucketArgs, bucket_configs, checked_bucket_access
from ...storage.composition import BucketClaims, FileSystemClaims, check_capacity, former_parent
from ...storage.storage_backends import BucketBackend, CsiDriverManifests, SharedFileSystemBackend
from .. import missing_extra
from . import storage_options as so

try:
    from pulumi_azure_native import authorization, managedidentity, network, storagecache
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None


class AksSharedFileSystemArgs(TypedDict, total=False):
    """Arguments of `AksSharedFileSystem`: the cluster's network (an `AksCluster`'s outputs) and the file system."""

    resource_group_name: Required[pulumi.Input[str]]
    """The resource group of the cluster and its VNet (``AksCluster.resource_group_name``)."""
    location: Required[str]
    """The Azure region."""
    virtual_network_name: Required[pulumi.Input[str]]
    """The cluster's VNet (``AksCluster.virtual_network.name``): the file system gets a subnet of its own there."""
    subnet_address_prefix: Required[str]
    """The file system's subnet, a free block of the VNet at least as large as Microsoft's table asks for the
    capacity (4-16 TiB /27, 20-40 /26, 44-92 /25, 96-196 /24, 200-400 /23)."""
    size_gib: Required[int]
    """Capacity in whole TiB (multiples of 1024 GiB) within the tier's range and steps."""
    throughput_per_tib: int
    """MB/s per TiB: 125, 250 or 500 (default; the ``AMLFS-Durable-Premium-<n>`` SKU)."""
    zone: str
    """The availability zone (``1``, ``2``, ``3``) of the nodes that read most. Default: none."""
    tags: dict[str, str]
    """Tags of the file system."""


def _subnet_problem(cidr: str, size_gib: int) -> Optional[str]:
    try:
        block = ipaddress.ip_network(cidr)
    except ValueError:
        return f"'{cidr}' is not a CIDR block such as 10.225.0.0/27"
    needed = so.amlfs_subnet_prefix(size_gib)
    if block.prefixlen > needed:
        return (f"a {size_gib // so.GIB_PER_TIB} TiB file system needs a /{needed} subnet at least, got "
                f"/{block.prefixlen}")
    return None


class AksSharedFileSystem(FileSystemClaims, pulumi.ComponentResource, metaclass=KeywordArgs):
    """An Azure Managed Lustre file system (``AMLFS-Durable-Premium-<tier>``, maintenance Sunday 02:00 UTC) in a
    subnet of its own in an AKS cluster's VNet.

    ``backend`` is the `SharedFileSystemBackend` `DataPlaneStorage` mounts (driver ``azurelustre.csi.azure.com``,
    applied from its pinned manifests): ``volume(...)`` gives a claim's ``volumes`` entry, ``data_plane_args()`` the
    root volume and the driver's manifests."""

    subnet: network.Subnet
    file_system: storagecache.AmlFilesystem
    mgs_address: pulumi.Output[str]

    def __init__(self, name: str, args: AksSharedFileSystemArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("AksSharedFileSystem", name, cloud="azure")
        args = checker.check(args, AksSharedFileSystemArgs, {"zone": choice("1", "2", "3")})  # type: ignore
        check_capacity(checker, so.amlfs_capacity_problem(args["size_gib"], args.get("throughput_per_tib")))
        subnet_problem = _subnet_problem(args["subnet_address_prefix"], args["size_gib"])
        if subnet_problem is not None:
            checker.fail("subnet_address_prefix", subnet_problem)
        super().__init__("gpuplatform:index:AksSharedFileSystem", name, {}, opts)
        child = child_opts(self, opts, aliases=former_parent(opts))
        tier = so.amlfs_tier(args.get("throughput_per_tib"))
        self.subnet = network.Subnet(
            f"{name}-lustre", resource_group_name=args["resource_group_name"],
            virtual_network_name=args["virtual_network_name"], address_prefix=args["subnet_address_prefix"],
            opts=child)
        zone = args.get("zone")
        self.file_system = storagecache.AmlFilesystem(
            f"{name}-amlfs", resource_group_name=args["resource_group_name"], location=args["location"],
            sku={"name": tier.sku}, storage_capacity_ti_b=float(args["size_gib"] // so.GIB_PER_TIB),
            filesystem_subnet=self.subnet.id, maintenance_window=so.AMLFS_MAINTENANCE_WINDOW,
            zones=[zone] if zone else None, tags=dict(args.get("tags", {})), opts=child)
        mgs_address = self.file_system.client_info.apply(lambda info: info.mgs_address if info else None)
        self.mgs_address = mgs_address

        def csi_source(volume_name: str, sub_directory: str) -> dict[str, Any]:
            return {
                "driver": so.LUSTRE_CSI_DRIVER,
                "volumeHandle": mgs_address.apply(lambda ip: so.lustre_volume_handle(volume_name, ip, sub_directory)),
                "volumeAttributes": so.lustre_volume_attributes(mgs_address, sub_directory),
            }

        self.backend = SharedFileSystemBackend(
            kind="azure-managed-lustre", capacity_gib=args["size_gib"], driver=so.LUSTRE_CSI_DRIVER,
            csi_source=csi_source, mount_options=so.LUSTRE_MOUNT_OPTIONS,
            csi_manifests=CsiDriverManifests(so.LUSTRE_CSI_MANIFESTS), throughput_mbps_per_tib=tier.throughput)
        """How `DataPlaneStorage` mounts the file system (Python only)."""
        self.register_outputs({"mgs_address": self.mgs_address})


class AksBucketAccessArgs(TypedDict, total=False):
    """Arguments of `AksBucketAccess`: the cluster's identity issuer (an `AksCluster`'s outputs) and the containers."""

    resource_group_name: Required[pulumi.Input[str]]
    """The resource group of the identity (``AksCluster.resource_group_name``)."""
    location: Required[str]
    """The Azure region of the identity."""
    oidc_issuer_url: Required[pulumi.Input[str]]
    """The cluster's OIDC issuer (``AksCluster.oidc_issuer_url``; workload identity on)."""
    namespaces: Required[list[str]]
    """The namespaces whose ``storage-access`` ServiceAccount may mount the containers (`DataPlaneStorage` creates
    them)."""
    buckets: Required[list[BucketArgs]]
    """The blob containers, each with its ``storage_account``: Storage Blob Data Reader on read-only ones,
    Contributor on read-write ones, scoped to the container."""
    storage_resource_group: pulumi.Input[str]
    """The resource group of the storage accounts. Default: ``resource_group_name``."""
    tags: dict[str, str]
    """Tags of the identity."""


class AksBucketAccess(BucketClaims, pulumi.ComponentResource, metaclass=KeywordArgs):
    """Blob containers through AKS's Blob CSI driver with Azure Workload Identity: one user-assigned identity, a
    federated credential for ``storage-access`` in each of ``namespaces`` (one after another: Azure refuses
    concurrent writes on one identity), and a role assignment per container scoped to that container. No keys.

    ``buckets`` are the `BucketBackend`s `DataPlaneStorage` mounts; ``data_plane_args(namespaces)`` gives their
    ``volumes`` and the ServiceAccounts annotated with the identity's client id."""

    identity: managedidentity.UserAssignedIdentity
    client_id: pulumi.Output[str]

    def __init__(self, name: str, args: AksBucketAccessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_bucket_access("AksBucketAccess", name, "azure", args, AksBucketAccessArgs)  # type: ignore
        super().__init__("gpuplatform:index:AksBucketAccess", name, {}, opts)
        aliases = former_parent(opts)
        group = args["resource_group_name"]
        self.namespaces: list[str] = list(args["namespaces"])
        self.identity = managedidentity.UserAssignedIdentity(
            f"{name}-storage-access", resource_group_name=group, location=args["location"],
            tags=dict(args.get("tags", {})), opts=child_opts(self, opts, aliases=aliases))
        previous: list[Any] = []
        self.credentials: dict[str, managedidentity.FederatedIdentityCredential] = {}
        """The federated credential of each namespace's ``storage-access`` ServiceAccount."""
        for namespace in self.namespaces:
            # One after another: Azure refuses concurrent writes of federated credentials on one identity.
            credential = managedidentity.FederatedIdentityCredential(
                f"{name}-storage-access-{namespace}", resource_group_name=group, resource_name_=self.identity.name,
                issuer=args["oidc_issuer_url"], subject=so.federated_subject(namespace),
                audiences=[so.FEDERATION_AUDIENCE], opts=child_opts(self, opts, previous, aliases=aliases))
            self.credentials[namespace] = credential
            previous = [credential]
        client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        storage_group = pulumi.Output.from_input(args.get("storage_resource_group") or group)
        identity = self.identity
        self.role_assignments: dict[str, authorization.RoleAssignment] = {}
        """Each container's role assignment, by bucket name."""
        backends = []
        for bucket in bucket_configs(args["buckets"]):  # type: ignore[arg-type]
            account = bucket.storage_account or ""
            role = so.blob_role(bucket.read_only)
            self.role_assignments[bucket.name] = authorization.RoleAssignment(
                f"{name}-{bucket.name}-blob", principal_id=identity.principal_id, principal_type="ServicePrincipal",
                role_definition_id=client.subscription_id.apply(
                    lambda sub, r=role: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{r}"),
                scope=pulumi.Output.all(client.subscription_id, storage_group).apply(
                    lambda a, acct=account, c=bucket.bucket: so.container_scope(a[0], a[1], acct, c)),
                opts=child_opts(self, opts, aliases=aliases))

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
        self.buckets: tuple[BucketBackend, ...] = tuple(backends)
        """How `DataPlaneStorage` mounts each container (Python only)."""
        self.client_id = identity.client_id
        self.service_account_annotations: dict[str, Any] = {AZURE_WORKLOAD_IDENTITY_CLIENT_ID_ANNOTATION:
                                                            identity.client_id}
        self.csi_charts: tuple = ()  # AKS's managed Blob CSI driver (AksCluster's blob_csi_driver)
        self.register_outputs({"client_id": self.client_id})
