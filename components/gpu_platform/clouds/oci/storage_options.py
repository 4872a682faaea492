"""What an OKE stack's ``storage`` becomes on OCI, as plain data: no SDK, every decision a function or a constant.

- ``sharedFileSystem``: an OCI File Storage (FSS) file system, capped at ``sizeGiB`` by a hard quota, exported
  through a mount target in the workers' subnet and mounted by OKE's built-in FSS CSI driver
  (``fss.csi.oraclecloud.com``) as static PersistentVolumes, one per team claim, each a directory of the file
  system. Not File Storage with Lustre: OKE's Lustre CSI driver needs the Lustre client package installed on every
  worker node that mounts a file system (OKE "Provisioning PVCs on the File Storage with Lustre Service", which also
  limits the driver to Oracle Linux 8 and Ubuntu 22.04 x86), which the platform's node images and cloud-init do not
  do; FSS is NFSv3, which OKE's own driver mounts.
- ``buckets``: mounted by the rclone CSI driver (SwissDataScienceCenter/csi-rclone, Helm chart ``csi-rclone``),
  whose rclone uses the ``oracleobjectstorage`` backend with ``provider = workload_identity_auth``: OKE workload
  identity, no keys anywhere (Object Storage's S3-compatible API would need Customer Secret Keys). OKE documents no
  Object Storage CSI driver of its own. rclone runs in the driver's node plugin, so the identity is the node
  plugin's ServiceAccount (driver-wide), not the mounting pod's: an IAM policy grants exactly that ServiceAccount
  of this cluster exactly the configured buckets (read-only unless ``readOnly: false``), and which namespace may
  mount a bucket is decided by the platform's static PersistentVolumes, each bound to one claim (docs/storage.md,
  OCI).
- ``imagePulls.streaming`` is refused: OKE has no image-streaming setting (``prePull`` is the alternative).
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ... import labels
from ...errors import ConfigError
from . import iam

FSS_CSI_DRIVER = "fss.csi.oraclecloud.com"
"""OKE's CSI driver for File Storage (OKE "Provisioning PVCs on the File Storage Service"), part of every cluster."""
EXPORT_PATH = "/gpu-platform"
"""The file system's export path on its mount target (one export: "Export paths ... must start with a slash", no
trailing slash; File Storage "Paths in File Systems")."""
EXPORT_ACCESS = "READ_WRITE"
EXPORT_IDENTITY_SQUASH = "NONE"
"""No squash: a new file system's root belongs to root, so the team directories must be created (and handed to the
workloads' non-root user) as root from a node; the export still admits only the workers' subnet."""
EXPORT_PRIVILEGED_PORT = True
"""Clients must connect from a privileged source port (the default of ``require_privileged_source_port``): the
node's kernel NFS client, which the CSI driver mounts with, does; an unprivileged process cannot."""
NFS_TCP_PORTS = ((111, 111), (2048, 2050))
NFS_UDP_PORTS = ((111, 111), (2048, 2048))
"""File Storage's security rules for NFS clients (File Storage "Configuring VCN Security Rules for File Storage"):
stateful ingress to the mount target on TCP 111 and 2048-2050 and UDP 111 and 2048 from the clients' subnet."""
TCP, UDP = "6", "17"

REFUSED = {
    "storage.sharedFileSystem.throughputPerTiB": (
        "cannot be honoured on OCI: File Storage sells no throughput tier per TiB (its throughput grows with the "
        "data stored); leave it out"),
    "storage.imagePulls.streaming": (
        "OKE has no image-streaming setting; use storage.imagePulls.prePull to pull the large images onto GPU nodes "
        "in advance"),
}
"""The ``storage`` keys OCI cannot honour, each with the one-line reason `check_storage` gives."""


def check_storage(storage: Any, raw_storage: Mapping) -> None:
    """OCI rules of the ``storage`` section (a `StorageConfig`): the keys in `REFUSED` are refused."""
    fs = storage.shared_file_system
    if fs is not None and fs.throughput_per_tib is not None:
        key = "storage.sharedFileSystem.throughputPerTiB"
        raise ConfigError(key, REFUSED[key])
    if storage.image_pulls.streaming:
        raise ConfigError("storage.imagePulls.streaming", REFUSED["storage.imagePulls.streaming"])


def volume_path(sub_directory: str) -> str:
    """The NFS path of a directory of the file system: the export path, then the directory (the driver mounts
    ``<mount target IP>:<path>``, the part of the volume handle after its last colon)."""
    sub = sub_directory.strip("/")
    return f"{EXPORT_PATH}/{sub}" if sub else EXPORT_PATH


def fss_volume_handle(file_system_id: str, mount_target_ip: str, sub_directory: str) -> str:
    """``volumeHandle`` of a static PersistentVolume: ``<FileSystemOCID>:<MountTargetIP>:<path>`` (OKE "Provisioning
    a PVC on an Existing File System"); distinct per directory, so the kubelet stages each claim apart."""
    return f"{file_system_id}:{mount_target_ip}:{volume_path(sub_directory)}"


def fss_csi_source(file_system_id: str, mount_target_ip: str, sub_directory: str) -> dict[str, Any]:
    """``spec.csi`` of a static PersistentVolume of the file system (values resolved)."""
    return {"driver": FSS_CSI_DRIVER, "volumeHandle": fss_volume_handle(file_system_id, mount_target_ip,
                                                                        sub_directory)}


def export_options(client_cidr: Any) -> list[dict[str, Any]]:
    """``oci.filestorage.Export`` ``export_options``: the workers' subnet alone may mount, read-write
    (``client_cidr`` a CIDR string or an Input of one)."""
    return [{"source": client_cidr, "access": EXPORT_ACCESS, "identity_squash": EXPORT_IDENTITY_SQUASH,
             "require_privileged_source_port": EXPORT_PRIVILEGED_PORT}]


def nfs_rules(client_cidr: Any) -> list[dict[str, Any]]:
    """``oci.core.NetworkSecurityGroupSecurityRule`` arguments admitting NFS from ``client_cidr`` to the mount
    target (stateful: the replies need no rule)."""
    rules = []
    for protocol, ranges, key in ((TCP, NFS_TCP_PORTS, "tcp_options"), (UDP, NFS_UDP_PORTS, "udp_options")):
        for low, high in ranges:
            rules.append({"direction": "INGRESS", "protocol": protocol, "source": client_cidr,
                          "source_type": "CIDR_BLOCK", "stateless": False,
                          "description": f"NFS from the worker nodes ({'TCP' if protocol == TCP else 'UDP'} "
                                         f"{low}{'' if low == high else f'-{high}'})",
                          key: {"destination_port_range": {"min": low, "max": high}}})
    return rules


QUOTA_PRINCIPAL = "FILE_SYSTEM_LEVEL"
"""A quota rule on the whole file system (File Storage ``CreateQuotaRuleDetails.principalType``: DEFAULT_GROUP,
DEFAULT_USER, FILE_SYSTEM_LEVEL, INDIVIDUAL_GROUP, INDIVIDUAL_USER)."""


def size_quota(size_gib: int) -> dict[str, Any]:
    """``oci.filestorage.FileSystemQuotaRule`` arguments capping the file system at ``sizeGiB``: a hard quota (writes
    beyond it are blocked) at file-system level. The API counts the limit in its gigabytes, which are given the
    configured number: a GB limit is never above the GiB size the PersistentVolumes declare."""
    return {"principal_type": QUOTA_PRINCIPAL, "is_hard_quota": True, "quota_limit_in_gigabytes": size_gib,
            "display_name": f"sizeGiB {size_gib}"}


def file_system_ad(rdma_zones: tuple[int, ...], first_pool_zones: tuple[int, ...],
                   default_ads: tuple[int, ...]) -> int:
    """The availability domain number of the file system and its mount target: the RDMA pool's, else the first
    pool's, else the stack's first default AD, else AD 1. A regional workers' subnet reaches the mount target from
    every AD; the training nodes in the same AD avoid the cross-AD hop."""
    for zones in (rdma_zones, first_pool_zones, default_ads):
        if zones:
            return zones[0]
    return 1


# --- Buckets: rclone CSI driver with OKE workload identity ---

RCLONE_CHART = "csi-rclone"
"""The `versions.CSI_DRIVER_CHARTS` entry (SwissDataScienceCenter/csi-rclone's chart) and its Helm release name."""
RCLONE_CSI_DRIVER = "csi-rclone"
"""The driver's CSI name: the chart's ``storageClassName`` value, which its node plugin registers as (``DRIVER_NAME``
env and the kubelet registration path of ``templates/csi-nodeplugin-rclone.yaml``); the chart's default, set
explicitly in `rclone_chart_values` so the PersistentVolumes and the release cannot drift apart."""
RCLONE_NAMESPACE = "kube-system"
"""Where the storage layer installs CSI driver charts (`kube.storage_objects.CSI_DRIVER_NAMESPACE`)."""
RCLONE_SERVICE_ACCOUNT = "csi-rclone-nodeplugin"
"""The node plugin's ServiceAccount: ``<fullname>-nodeplugin``, the chart's fullname being the release name
``csi-rclone`` (it contains the chart name; ``templates/_helpers.tpl``). rclone runs in that pod, so this is the
workload identity OCI sees for every bucket mount."""
RCLONE_REMOTE = "oos"
"""The one section of each volume's rclone configuration (the driver requires exactly one)."""
WORKLOAD_IDENTITY_ENV = (("OCI_RESOURCE_PRINCIPAL_VERSION", "2.2"),)
"""What the OCI Go SDK's ``auth.OkeWorkloadIdentityConfigurationProvider`` (which rclone's
``workload_identity_auth`` calls) reads besides the pod's own ServiceAccount token and ``KUBERNETES_SERVICE_HOST``:
``OCI_RESOURCE_PRINCIPAL_VERSION`` (1.1 or 2.2; OKE documents 2.2) and ``OCI_RESOURCE_PRINCIPAL_REGION`` (the
cluster's region, added by `rclone_chart_values`)."""
BUCKET_READ = ("read buckets", "read objects")
"""Read-only access: GetBucket/HeadBucket, then ListObjects/HeadObject/GetObject (Oracle's "Details for Object
Storage" verb table: read covers BUCKET_INSPECT, BUCKET_READ, OBJECT_INSPECT, OBJECT_READ)."""
BUCKET_READ_WRITE = ("read buckets", "manage objects")
"""Read-write access: manage objects adds OBJECT_CREATE, OBJECT_OVERWRITE and OBJECT_DELETE (PutObject, multipart
uploads, DeleteObject: what rclone's writes and renames call); never a verb on the bucket itself."""
BUCKET_VFS_OPTIONS: dict[str, dict[str, str]] = {
    "training": {"CacheMode": "full", "CacheMaxSize": "20G", "DirCacheTime": "1h", "ReadAhead": "128M"},
    "serving": {"CacheMode": "full", "CacheMaxSize": "20G", "DirCacheTime": "1h", "ReadAhead": "128M"},
    "checkpoint": {"CacheMode": "writes", "CacheMaxSize": "20G", "DirCacheTime": "1m", "WriteBack": "5s"},
}
"""rclone VFS options per ``profile``, as the driver's ``vfsOpt`` volume attribute (JSON of its ``VfsOpt`` fields,
rclone's ``--vfs-cache-mode``, ``--vfs-cache-max-size``, ``--dir-cache-time``, ``--vfs-read-ahead`` and
``--vfs-write-back``): reads of datasets and weights go through rclone's full file cache on the node (repeated epochs
and replicas read local disk), checkpoints are written to the cache and uploaded 5 s after close. The driver ignores
a PersistentVolume's ``mountOptions`` and sets ``vfsOpt.ReadOnly`` itself from the mount's read-only flag (the
workloads mount read-only buckets' claims ``readOnly``)."""


def workload_principal(cluster_id: str) -> str:
    """The condition matching the rclone node plugin's ServiceAccount in this cluster (OKE workload identity)."""
    return iam.workload_principal(cluster_id, RCLONE_NAMESPACE, RCLONE_SERVICE_ACCOUNT)


def bucket_policy_statements(compartment_scope: str, cluster_id: str,
                             buckets: Sequence[tuple[str, bool]]) -> list[str]:
    """IAM statements granting the node plugin's workload identity each ``(bucket, read_only)`` and nothing else:
    every statement names one bucket (``target.bucket.name``); write verbs only for read-write buckets.
    ``compartment_scope`` is `iam.compartment_scope` of the buckets' compartment."""
    principal = workload_principal(cluster_id)
    return [f"Allow any-user to {verb} in {compartment_scope} where ALL {{{principal}, "
            f"target.bucket.name='{bucket}'}}"
            for bucket, read_only in buckets for verb in (BUCKET_READ if read_only else BUCKET_READ_WRITE)]


def rclone_config(object_storage_namespace: str, region: str) -> str:
    """The volume's rclone configuration (``configData``): the ``oracleobjectstorage`` backend with OKE workload
    identity, the tenancy's Object Storage namespace and the region; ``no_check_bucket`` so rclone never tries to
    create the bucket (the identity may not)."""
    return "\n".join([f"[{RCLONE_REMOTE}]", "type = oracleobjectstorage", "provider = workload_identity_auth",
                      f"namespace = {object_storage_namespace}", f"region = {region}", "no_check_bucket = true", ""])


def rclone_csi_source(volume_name: str, bucket: str, profile: str, read_only: bool, config_data: Any) -> dict[str, Any]:
    """``spec.csi`` of the static PersistentVolume ``volume_name`` mounting ``bucket``; ``config_data`` is
    `rclone_config` (or an Input of it: the namespace is known once asked of OCI).

    The driver reads ``remote``, ``remotePath``, ``configData`` and ``vfsOpt`` from the volume attributes
    (``pkg/rclone/nodeserver.go`` ``extractFlags``); it also requires ``secretName``/``secretNamespace`` and merges
    that Secret's data over the attributes when it exists, so they name a Secret that never exists, in the driver's
    own namespace, where no team can create one. ``volumeHandle`` is the volume's name: each volume's rclone remote
    is named after it."""
    return {"driver": RCLONE_CSI_DRIVER, "volumeHandle": volume_name, "readOnly": read_only,
            "volumeAttributes": {"remote": RCLONE_REMOTE, "remotePath": bucket,
                                 "configData": config_data,
                                 "vfsOpt": json.dumps(BUCKET_VFS_OPTIONS[profile], sort_keys=True),
                                 "secretName": volume_name, "secretNamespace": RCLONE_NAMESPACE}}


def rclone_chart_values(region: str, tolerations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Values of the csi-rclone chart: the node plugin's rclone gets OKE workload identity's environment and runs on
    every GPU pool (their taints tolerated); no StorageClass (the platform mounts buckets with static volumes only,
    so nothing provisions or purges a path)."""
    env = [{"name": k, "value": v} for k, v in (*WORKLOAD_IDENTITY_ENV, ("OCI_RESOURCE_PRINCIPAL_REGION", region))]
    return {"storageClassName": RCLONE_CSI_DRIVER, "storageClass": {"create": False},
            "csiNodepluginRclone": {"rclone": {"extraEnv": env}, "tolerations": [dict(t) for t in tolerations]}}


def node_plugin_tolerations(pool_tolerations: Sequence[Mapping[str, Any]], any_spot: bool) -> list[dict[str, Any]]:
    """What the rclone node plugin tolerates: every GPU pool's taints, and OKE's own taint of preemptible nodes when a
    pool is spot (OKE sets it without the platform declaring it; its value is undocumented, hence ``Exists``)."""
    out = [dict(t) for t in pool_tolerations]
    if any_spot:
        out.append({"key": labels.OKE_PREEMPTIBLE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"})
    return out
