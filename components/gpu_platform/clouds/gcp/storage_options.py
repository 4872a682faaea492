"""What a GKE stack's ``storage`` becomes on Google Cloud, as plain data: no SDK, each decision a function or constant.

- ``sharedFileSystem``: a Google Cloud Managed Lustre instance (``lustre.Instance``; Managed Lustre rather than
  Parallelstore or Filestore: it is in pulumi_gcp 10.2.0 and GKE has its CSI driver as an add-on) in one zone of the
  cluster's VPC, reached through private services access (an allocated ``VPC_PEERING`` range and a Service Networking
  connection) and a firewall rule admitting Lustre's TCP 988 from that range. GKE's Managed Lustre CSI driver
  (``addons_config.lustre_csi_driver_config``) mounts it through static PersistentVolumes.
- ``buckets``: GKE's Cloud Storage FUSE CSI driver (``addons_config.gcs_fuse_csi_driver_config``) with Workload Identity
  Federation for GKE: each bucket grants ``roles/storage.objectViewer`` (read-only) or ``roles/storage.objectUser``
  (read-write) to the ``storage-access`` ServiceAccount of every namespace that mounts it, named as an IAM principal.
  No Google service account, no key.
- ``imagePulls.streaming``: GKE image streaming (``node_config.gcfs_config.enabled``) on every GPU pool.

Sources: Managed Lustre "Performance tiers" (docs.cloud.google.com/managed-lustre/docs/performance-tiers) and
"Configure a VPC network" (managed-lustre/docs/vpc); GKE "Access existing Managed Lustre instances"
(kubernetes-engine/docs/how-to/persistent-volumes/lustre-csi-driver-existing-instance); the driver's source
(GoogleCloudPlatform/lustre-csi-driver ``pkg/util/util.go`` ``ParseVolumeID``, ``pkg/csi_driver/node.go``); the Cloud
Storage FUSE CSI driver (GoogleCloudPlatform/gcs-fuse-csi-driver ``examples/gcsfuse-profiles``,
``pkg/csi_driver/utils.go``) and Cloud Storage FUSE "Profile-based configurations for AI/ML workloads"
(docs.cloud.google.com/storage/docs/cloud-storage-fuse/profile-based-configurations).
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from ...errors import ConfigError
from ...storage.storage_backends import STORAGE_SERVICE_ACCOUNT

# ---------------------------------------------------------------------------------------------------------
# Managed Lustre


@dataclass(frozen=True)
class LustreTier:
    """One Managed Lustre performance tier (MB/s per TiB of capacity) and the capacities it accepts."""

    throughput: int
    min_gib: int
    step_gib: int
    """Capacities up to ``threshold_gib`` are multiples of this."""
    threshold_gib: int
    large_step_gib: int
    """Capacities above ``threshold_gib`` are multiples of this (an instance created at or below the threshold can
    never grow past it: Managed Lustre "Increase capacity")."""
    max_gib: int


LUSTRE_TIERS: Mapping[int, LustreTier] = {
    1000: LustreTier(1000, 9_000, 9_000, 1_530_000, 72_000, 10_008_000),
    500: LustreTier(500, 18_000, 18_000, 3_060_000, 144_000, 20_016_000),
    250: LustreTier(250, 36_000, 36_000, 6_120_000, 288_000, 40_032_000),
    125: LustreTier(125, 72_000, 72_000, 12_240_000, 72_000, 12_240_000),
}
"""Managed Lustre "Performance tiers" table (min capacity, max capacity, step sizes). The Dynamic tier (25 MB/s per
TiB, 472,000 GiB minimum) is not offered: its throughput depends on the access pattern."""
LUSTRE_DEFAULT_THROUGHPUT = 1000
"""The tier of the smallest instance (9,000 GiB): Google's entry point to Managed Lustre, and the tier the CSI driver
defaults to (``perUnitStorageThroughput``, "Managed Lustre CSI driver reference")."""
LUSTRE_CSI_DRIVER = "lustre.csi.storage.gke.io"
LUSTRE_PORT = 988
"""Lustre's LNet port. GKE nodes from 1.33.2-gke.4780000 use it (older ones needed ``enable_legacy_lustre_port``
and port 6988 against a clash with the GKE metadata server); instances are created without
``gke_support_enabled``, the flag that forces the legacy port ("Lustre communication ports")."""
LUSTRE_MIN_KUBERNETES = (1, 34)
"""The stack's minor must be one whose GKE nodes speak Lustre on port 988 (1.33.2-gke.4780000 and later): 1.34 is
the first minor where every patch does."""
LUSTRE_PEERING_PREFIX = 20
"""Private services access range: "Each Managed Lustre instance requires a contiguous CIDR block with a prefix
length of 24"; Google's example allocates a /20 so several instances fit (Managed Lustre "Configure a VPC network")."""
SERVICE_NETWORKING = "servicenetworking.googleapis.com"
FILESYSTEM_NAME_MAX = 8
"""``filesystem``: "eight characters or less and can only contain letters and numbers" (pulumi_gcp
``lustre.Instance``)."""


def lustre_tier(throughput_per_tib: Optional[int]) -> LustreTier:
    """The tier of ``throughputPerTiB`` (the entry tier when unset); assumes `lustre_capacity_problem` passed."""
    return LUSTRE_TIERS[throughput_per_tib or LUSTRE_DEFAULT_THROUGHPUT]


def lustre_capacity_problem(size_gib: int, throughput_per_tib: Optional[int]) -> Optional[tuple[str, str]]:
    """(key, why) when ``sizeGiB``/``throughputPerTiB`` is no Managed Lustre instance, or None."""
    throughput = throughput_per_tib or LUSTRE_DEFAULT_THROUGHPUT
    if throughput not in LUSTRE_TIERS:
        return "throughputPerTiB", (f"Managed Lustre tiers are {', '.join(str(t) for t in sorted(LUSTRE_TIERS))} "
                                    f"MB/s per TiB, not {throughput}")
    tier = LUSTRE_TIERS[throughput]
    if size_gib < tier.min_gib or size_gib > tier.max_gib:
        return "sizeGiB", (f"the {throughput} MB/s/TiB tier of Managed Lustre takes {tier.min_gib}-{tier.max_gib} "
                           f"GiB, got {size_gib}")
    step = tier.step_gib if size_gib <= tier.threshold_gib else tier.large_step_gib
    if size_gib % step:
        below, above = size_gib // step * step, (size_gib // step + 1) * step
        return "sizeGiB", (f"the {throughput} MB/s/TiB tier of Managed Lustre grows in steps of {step} GiB at this "
                           f"size; use {max(below, tier.min_gib)} or {above}")
    return None


def lustre_filesystem_name(stack_name: str) -> str:
    """``filesystem`` (the name clients mount): the stack's letters and digits, at most 8, starting with a letter."""
    letters = re.sub(r"[^a-z0-9]", "", stack_name.lower()).lstrip("0123456789")
    return (letters or "gpu")[:FILESYSTEM_NAME_MAX]


def lustre_zone(cluster_zone: Optional[str], pools: Sequence[Any]) -> Optional[str]:
    """The zone of the instance (a zonal resource, best in the zone of its clients: Managed Lustre "Create an
    instance"): a zonal cluster's zone, else the zone of the first RDMA pool, else of the first training pool, else
    of the first pool with zones. None when no pool names a zone."""
    if cluster_zone:
        return cluster_zone
    for wanted in (lambda p: p.rdma, lambda p: p.role == "training", lambda p: True):
        for pool in pools:
            if pool.zones and wanted(pool):
                return pool.zones[0]
    return None


def lustre_volume_handle(project: str, zone: str, instance: str, volume_name: str) -> str:
    """``volumeHandle`` of one static PersistentVolume: ``PROJECT_ID/LOCATION/INSTANCE_NAME:SUFFIX``, the format the
    driver accepts "for static provisioning, enabling multiple PVs in the same pod to mount the same lustre instance"
    (``ParseVolumeID``); without a distinct suffix the kubelet skips the second of two such volumes in one pod."""
    return f"{project}/{zone}/{instance}:{volume_name}"


def kubernetes_problem(version: str) -> Optional[str]:
    """Why the stack's Kubernetes minor cannot mount Managed Lustre on port 988, or None."""
    major, minor = (int(part) for part in version.split(".")[:2])
    if (major, minor) < LUSTRE_MIN_KUBERNETES:
        return (f"GKE nodes mount Managed Lustre on port 988 from 1.33.2-gke.4780000; use kubernetesVersion "
                f"{LUSTRE_MIN_KUBERNETES[0]}.{LUSTRE_MIN_KUBERNETES[1]} or later, not {version}")
    return None


# ---------------------------------------------------------------------------------------------------------
# Cloud Storage FUSE

GCSFUSE_CSI_DRIVER = "gcsfuse.csi.storage.gke.io"
READ_ONLY_ROLE = "roles/storage.objectViewer"
READ_WRITE_ROLE = "roles/storage.objectUser"
"""The roles GKE's Cloud Storage FUSE setup grants the workload's principal on the bucket (objectUser in the
driver's ``examples/gcsfuse-profiles``; objectViewer for read-only access)."""
_UNLIMITED_METADATA = (
    "implicit-dirs",
    "metadata-cache:ttl-secs:-1",
    "metadata-cache:stat-cache-max-size-mb:-1",
    "metadata-cache:type-cache-max-size-mb:-1",
)
GCSFUSE_MOUNT_OPTIONS: Mapping[str, tuple[str, ...]] = {
    # aiml-training: unlimited metadata caches and kernel list cache for read-mostly datasets.
    "training": (*_UNLIMITED_METADATA, "file-system:kernel-list-cache-ttl-secs:-1"),
    # aiml-serving: unlimited metadata caches (weights do not change under a running server).
    "serving": _UNLIMITED_METADATA,
    # aiml-checkpointing: no negative cache (a checkpoint written elsewhere shows at once), directory renames allowed
    # on flat buckets, kernel list cache left off for write safety.
    "checkpoint": (*_UNLIMITED_METADATA, "metadata-cache:negative-ttl-secs:0", "rename-dir-limit=200000"),
}
"""The PersistentVolumes' ``mountOptions`` per ``profile``: the metadata settings of Cloud Storage FUSE's
``aiml-training``, ``aiml-serving`` and ``aiml-checkpointing`` profiles written out. GKE does not take the
``profile`` option on a volume; its own profiles are the ``gcsfusecsi-*`` StorageClasses of GKE 1.35.1-gke.1616000
and later, whose bucket scanner needs a custom role on every bucket, so the settings are given explicitly. The file
cache stays off: it fills the sidecar's ephemeral storage, which the pods do not size."""


def bucket_role(read_only: bool) -> str:
    """The role a bucket grants: read-only buckets can be read, read-write ones also written and deleted in."""
    return READ_ONLY_ROLE if read_only else READ_WRITE_ROLE


def workload_principal(project_number: str, project: str, namespace: str,
                       service_account: str = STORAGE_SERVICE_ACCOUNT) -> str:
    """The IAM principal of a Kubernetes ServiceAccount under Workload Identity Federation for GKE (the project's
    ``<project>.svc.id.goog`` pool): what the bucket grants its role to."""
    return (f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
            f"{project}.svc.id.goog/subject/ns/{namespace}/sa/{service_account}")


def gcsfuse_csi_source(bucket: str, read_only: bool) -> dict[str, Any]:
    """``spec.csi`` of a static PersistentVolume on a bucket: the bucket name is the ``volumeHandle`` (the driver's
    static provisioning), mounted read-only when the entry is."""
    source: dict[str, Any] = {"driver": GCSFUSE_CSI_DRIVER, "volumeHandle": bucket}
    if read_only:
        source["readOnly"] = True
    return source


# ---------------------------------------------------------------------------------------------------------
# Validation


def check_storage(storage: Any, raw_storage: Mapping) -> None:
    """What GKE can honour of a parsed ``storage`` section: a Managed Lustre capacity and tier (`ConfigError` naming
    the key otherwise). The generic parser has already refused ``storageClass`` and ``storageAccount`` here."""
    del raw_storage  # every rule reads the parsed section
    fs = storage.shared_file_system
    if fs is not None:
        problem = lustre_capacity_problem(fs.size_gib, fs.throughput_per_tib)
        if problem is not None:
            raise ConfigError(f"storage.sharedFileSystem.{problem[0]}", problem[1])


def check_stack_storage(config: Any, cluster_zone: Optional[str]) -> None:
    """Rules of ``storage`` that need the whole stack (`parse_cluster_options` runs them): a zone for the instance
    and a Kubernetes minor whose nodes mount it. ``config`` is a `PlatformConfig`."""
    if config.storage.shared_file_system is None:
        return
    if lustre_zone(cluster_zone, config.node_pools) is None:
        raise ConfigError("storage.sharedFileSystem", "a Managed Lustre instance lives in one zone, best its "
                                                      "clients': set zone (a zonal cluster) or zones on a GPU pool")
    problem = kubernetes_problem(config.kubernetes_version)
    if problem is not None:
        raise ConfigError("storage.sharedFileSystem", problem)
