"""What an AKS stack's ``storage`` becomes on Azure, as plain data: no SDK, each decision a function or constant.

- ``sharedFileSystem``: an Azure Managed Lustre file system (``storagecache.AmlFilesystem``, SKU
  ``AMLFS-Durable-Premium-<tier>``) in a subnet of its own in the cluster's VNet, mounted through the Azure Lustre CSI
  driver (``azurelustre.csi.azure.com``, kubernetes-sigs/azurelustre-csi-driver; no AKS add-on, so the Kubernetes
  layer installs it) as static PersistentVolumes, one per team claim, each on a subdirectory (``sub-dir``).
- ``buckets`` (blob containers): AKS's managed Blob CSI driver (``storage_profile.blob_csi_driver``) mounting with
  blobfuse2 under Azure Workload Identity: one user-assigned identity, a federated credential for the
  ``storage-access`` ServiceAccount of every namespace that mounts buckets, and ``Storage Blob Data Reader`` or
  ``Contributor`` on each container. The driver mounts with the workload's token only
  (``mountWithWorkloadIdentityToken``), so no account key is ever read.
- ``imagePulls.streaming`` is refused: AKS artifact streaming is an agent pool setting pulumi_azure_native 3.29.0 does
  not have (no ``artifact_streaming_profile``), so it cannot be verified (``prePull`` is the alternative).

Sources: Azure Managed Lustre "Create a file system in the Azure portal" (throughput configurations table) and "File
system prerequisites" (subnet sizes); the Lustre CSI driver at v0.4.0 (``docs/driver-parameters.md``,
``docs/examples/pv.yaml``, ``pkg/azurelustre/nodeserver.go`` ``newLustreVolume``, ``azurelustre.go``
``getLustreVolFromID``); the Blob CSI driver (kubernetes-sigs/blob-csi-driver
``docs/workload-identity-static-pv-mount.md``, ``pkg/blob/blob.go``) and blobfuse2's CLI options
(Azure/azure-storage-fuse README).
"""

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from ...errors import ConfigError
from ...storage.storage_backends import STORAGE_SERVICE_ACCOUNT

# ---------------------------------------------------------------------------------------------------------
# Azure Managed Lustre

GIB_PER_TIB = 1024


@dataclass(frozen=True)
class AmlfsTier:
    """One Azure Managed Lustre throughput configuration: its SKU and the capacities it takes (TiB)."""

    throughput: int
    min_tib: int
    max_tib: int
    increment_tib: int

    @property
    def sku(self) -> str:
        return f"AMLFS-Durable-Premium-{self.throughput}"


AMLFS_TIERS: Mapping[int, AmlfsTier] = {
    125: AmlfsTier(125, 16, 128, 16),
    250: AmlfsTier(250, 8, 128, 8),
    500: AmlfsTier(500, 4, 128, 4),
}
"""The "Throughput configurations" table (MB/s per TiB, minimum, maximum, increment). The 40 MB/s/TiB SKU (48 TiB
steps) is not among the stack's tiers (``storage.sharedFileSystem.throughputPerTiB``: 125-1000); larger capacities
than 128 TiB need a support request."""
AMLFS_DEFAULT_THROUGHPUT = 500
"""The tier of the smallest file system (4 TiB)."""
AMLFS_MAINTENANCE_WINDOW = {"day_of_week": "Sunday", "time_of_day_utc": "02:00"}
"""Required by the API: when Azure may apply updates (about every two months; workloads pause meanwhile)."""
AMLFS_SUBNET_PREFIXES = ((16, 27), (40, 26), (92, 25), (196, 24), (400, 23))
"""(largest TiB, CIDR prefix) of the "Network size requirements" table: 4-16 TiB /27, 20-40 /26, 44-92 /25,
96-196 /24, 200-400 /23."""
LUSTRE_CSI_DRIVER = "azurelustre.csi.azure.com"
LUSTRE_FS_NAME = "lustrefs"
"""Every Azure Managed Lustre file system is ``lustrefs`` (the driver's ``DefaultLustreFsName``)."""
LUSTRE_MOUNT_OPTIONS = ("noatime", "flock")
"""``mountOptions`` of the driver's static PersistentVolume example (``docs/examples/pv.yaml``)."""
LUSTRE_CSI_MANIFESTS = "azurelustre-csi-driver"
"""The driver the Kubernetes layer applies (`versions.CSI_DRIVER_MANIFESTS`, v0.4.0): no AKS add-on and no released
Helm chart exist for it."""
UBUNTU_OS_SKUS = ("Ubuntu", "Ubuntu2204")
"""The driver "currently works only with the Ubuntu Linux OS SKU for node pools of AKS": its node plugin is two
DaemonSets selecting ``kubernetes.azure.com/os-sku-effective`` Ubuntu2204/Ubuntu2004 (-jammy) and Ubuntu2404 (-noble),
which covers both (``Ubuntu`` is 22.04 before Kubernetes 1.35, 24.04 from 1.35; ``Ubuntu2204`` is 22.04)."""


def amlfs_tier(throughput_per_tib: Optional[int]) -> AmlfsTier:
    """The tier of ``throughputPerTiB`` (the smallest file system's when unset); assumes the checks passed."""
    return AMLFS_TIERS[throughput_per_tib or AMLFS_DEFAULT_THROUGHPUT]


def amlfs_capacity_problem(size_gib: int, throughput_per_tib: Optional[int]) -> Optional[tuple[str, str]]:
    """(key, why) when ``sizeGiB``/``throughputPerTiB`` is no Azure Managed Lustre file system, or None."""
    throughput = throughput_per_tib or AMLFS_DEFAULT_THROUGHPUT
    if throughput not in AMLFS_TIERS:
        return "throughputPerTiB", (f"Azure Managed Lustre sells {', '.join(str(t) for t in sorted(AMLFS_TIERS))} "
                                    f"MB/s per TiB here, not {throughput}")
    tier = AMLFS_TIERS[throughput]
    if size_gib % GIB_PER_TIB:
        return "sizeGiB", f"Azure Managed Lustre is sized in whole TiB (multiples of 1024 GiB), got {size_gib}"
    tib = size_gib // GIB_PER_TIB
    if not tier.min_tib <= tib <= tier.max_tib or tib % tier.increment_tib:
        return "sizeGiB", (f"{tier.sku} takes {tier.min_tib}-{tier.max_tib} TiB in steps of {tier.increment_tib} "
                           f"TiB ({tier.increment_tib * GIB_PER_TIB} GiB), got {tib} TiB")
    return None


def amlfs_subnet_prefix(size_gib: int) -> int:
    """The CIDR prefix of the file system's subnet for its capacity (the prerequisites' table)."""
    tib = size_gib / GIB_PER_TIB
    return next(prefix for largest, prefix in AMLFS_SUBNET_PREFIXES if tib <= largest)


def amlfs_subnet(vnet: str, node_subnet: str, size_gib: int) -> str:
    """The first block of the VNet after the node subnet that fits the file system (its own subnet: AKS nodes and
    the file system stay apart, Azure Managed Lustre "Network prerequisites")."""
    space, nodes = ipaddress.ip_network(vnet), ipaddress.ip_network(node_subnet)
    for block in space.subnets(new_prefix=amlfs_subnet_prefix(size_gib)):
        if block.network_address > nodes.broadcast_address:
            return str(block)
    prefix = amlfs_subnet_prefix(size_gib)
    raise ConfigError("storage.sharedFileSystem", f"vnetAddressSpace {vnet} has no room after the node subnet "
                                                  f"{node_subnet} for the file system's /{prefix} subnet")


def lustre_zone(pools: Sequence[Any]) -> Optional[str]:
    """The file system's availability zone (best its clients': "locate your AMLFS cluster in the same ... availability
    zone"): the first zone of the first RDMA pool, else training pool, else any pool with zones; None in a region or
    stack without zones."""
    for wanted in (lambda p: p.rdma, lambda p: p.role == "training", lambda p: True):
        for pool in pools:
            if pool.zones and wanted(pool):
                return pool.zones[0]
    return None


def lustre_volume_handle(volume_name: str, mgs_address: str, sub_directory: str) -> str:
    """``volumeHandle``: unique per PersistentVolume (the driver's static example asks for it) and in the driver's own
    ``<name>#lustrefs#<mgs ip>#<sub-dir>#<dynamic t/f>#<resource group>`` form, so it agrees with the volume context
    (``getVolume`` warns when they differ)."""
    return f"{volume_name}#{LUSTRE_FS_NAME}#{mgs_address}#{sub_directory.strip('/')}#f#"


def lustre_volume_attributes(mgs_address: Any, sub_directory: str) -> dict[str, Any]:
    """``volumeAttributes``: the MGS address and, below the root, ``sub-dir`` (which the driver creates on first
    mount; it refuses an empty one)."""
    attributes = {"mgs-ip-address": mgs_address}
    if sub_directory.strip("/"):
        attributes["sub-dir"] = sub_directory.strip("/")
    return attributes


# ---------------------------------------------------------------------------------------------------------
# Blob containers

BLOB_CSI_DRIVER = "blob.csi.azure.com"
BLOB_DATA_READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
"""Built-in role definition ids: Storage Blob Data Reader (read and list) and Storage Blob Data Contributor (read,
write, delete), the role the driver's token-only mode asks for."""
FEDERATION_AUDIENCE = "api://AzureADTokenExchange"
_BLOBFUSE_COMMON = ("-o allow_other", "--use-attr-cache=true", "--cancel-list-on-mount-seconds=10",
                    "-o attr_timeout=120", "-o entry_timeout=120", "-o negative_timeout=120",
                    "--log-level=LOG_WARNING")
"""The Blob CSI driver's workload identity example: kernel attribute caching and no listing at mount (which bills)."""
BLOBFUSE_MOUNT_OPTIONS: Mapping[str, tuple[str, ...]] = {
    # Large sequential reads: blobfuse2's block cache streams blocks in parallel instead of whole files to disk.
    "training": (*_BLOBFUSE_COMMON, "--block-cache", "--block-cache-block-size=32", "--block-cache-parallelism=80"),
    # Model weights: the same, prefetching from the first read of each file.
    "serving": (*_BLOBFUSE_COMMON, "--block-cache", "--block-cache-block-size=32", "--block-cache-parallelism=80",
                "--block-cache-prefetch-on-open=true"),
    # Checkpoints: the file cache, which uploads whole files on close (what a checkpoint writer expects).
    "checkpoint": (*_BLOBFUSE_COMMON, "--file-cache-timeout-in-seconds=120"),
}
"""The PersistentVolumes' ``mountOptions`` per ``profile``, in blobfuse2's options."""


def blob_role(read_only: bool) -> str:
    """The built-in role a container grants the identity."""
    return BLOB_DATA_READER if read_only else BLOB_DATA_CONTRIBUTOR


def container_scope(subscription: str, resource_group: str, account: str, container: str) -> str:
    """The resource id of a blob container: the role assignments' scope (nothing wider than the container)."""
    return (f"/subscriptions/{subscription}/resourceGroups/{resource_group}/providers/Microsoft.Storage/"
            f"storageAccounts/{account}/blobServices/default/containers/{container}")


def federated_subject(namespace: str, service_account: str = STORAGE_SERVICE_ACCOUNT) -> str:
    """The ``subject`` of a federated identity credential: the namespace's ServiceAccount."""
    return f"system:serviceaccount:{namespace}:{service_account}"


def blob_volume_handle(resource_group: str, account: str, container: str, volume_name: str) -> str:
    """``volumeHandle``: ``{resource-group}#{account}#{container}`` as the driver parses it (``GetContainerInfo``),
    and the volume's name in the fourth field (which the driver ignores for static volumes) so that each namespace's
    PersistentVolume of one container has its own ("make sure volumeHandle is unique")."""
    return f"{resource_group}#{account}#{container}#{volume_name}"


def blob_volume_attributes(account: str, container: str, resource_group: Any, client_id: Any) -> dict[str, Any]:
    """``volumeAttributes`` of a blobfuse2 mount with the workload's token only."""
    return {
        "storageaccount": account,
        "containerName": container,
        "resourcegroup": resource_group,
        "clientID": client_id,
        "protocol": "fuse2",
        "mountWithWorkloadIdentityToken": "true",
    }


# ---------------------------------------------------------------------------------------------------------
# Validation


def check_storage(storage: Any, raw_storage: Mapping) -> None:
    """What AKS can honour of a parsed ``storage`` section (`ConfigError` naming the key otherwise)."""
    del raw_storage  # every rule reads the parsed section
    fs = storage.shared_file_system
    if fs is not None:
        problem = amlfs_capacity_problem(fs.size_gib, fs.throughput_per_tib)
        if problem is not None:
            raise ConfigError(f"storage.sharedFileSystem.{problem[0]}", problem[1])
    for i, bucket in enumerate(storage.buckets):
        if bucket.storage_account is None:
            raise ConfigError(f"storage.buckets[{i}].storageAccount", "is required on Azure: the storage account "
                                                                      f"holding container '{bucket.bucket}'")
    if storage.image_pulls.streaming:
        raise ConfigError("storage.imagePulls.streaming", "AKS artifact streaming cannot be set through "
                                                          "pulumi_azure_native 3.29.0 (no artifact_streaming_profile); "
                                                          "use prePull")


def check_stack_storage(config: Any, options: Any) -> None:
    """Rules of ``storage`` that need the cluster's options (`parse_cluster_options` runs them): the file system's
    subnet in a VNet the platform creates, and Ubuntu nodes for the Lustre driver."""
    if config.storage.shared_file_system is None:
        return
    if options.vnet_subnet_id is not None:
        raise ConfigError("storage.sharedFileSystem", "the file system gets a subnet of the VNet the platform "
                                                      "creates; with vnetSubnetId give none, or mount your own file "
                                                      "system")
    amlfs_subnet(options.vnet_address_space, options.subnet_address_prefix, config.storage.shared_file_system.size_gib)
    if options.os_sku not in UBUNTU_OS_SKUS:
        raise ConfigError("osSku", f"the Azure Lustre CSI driver runs on Ubuntu nodes only, not '{options.os_sku}'")
    for i, pool in enumerate(config.node_pools):
        sku = pool.cloud_options.os_sku if pool.cloud_options is not None else None
        if sku is not None and sku not in UBUNTU_OS_SKUS:
            raise ConfigError(f"nodePools[{i}].osSku", f"the Azure Lustre CSI driver runs on Ubuntu nodes only, not "
                                                       f"'{sku}'")
