"""What an EKS stack's ``storage`` becomes on AWS, as plain data: no SDK, every decision a function or a constant.

- ``sharedFileSystem``: an FSx for Lustre ``PERSISTENT_2`` file system (SSD) in the subnet of the stack's RDMA pool
  (FSx for Lustre lives in one subnet, so one zone), mounted through the ``aws-fsx-csi-driver`` EKS add-on as static
  PersistentVolumes (one per team claim, each a subdirectory of the file system).
- ``buckets``: the ``aws-mountpoint-s3-csi-driver`` EKS add-on (Mountpoint for Amazon S3 CSI driver v2) with
  pod-level credentials: each namespace's ``storage-access`` ServiceAccount gets one IAM role through an EKS Pod
  Identity association, whose policy names exactly the configured buckets. No driver-wide role, no keys.
- ``imagePulls.streaming`` is refused: EKS managed node groups expose no image-streaming setting this platform can
  verify (``prePull`` is the alternative).
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from ...errors import ConfigError
from ...storage.storage_backends import STORAGE_SERVICE_ACCOUNT

# ---------------------------------------------------------------------------------------------------------
# FSx for Lustre

FSX_DEPLOYMENT_TYPE = "PERSISTENT_2"
"""Persistent (replicated inside its zone) SSD file system of the current generation; the only persistent type with
the 125-1000 MB/s/TiB tiers and Lustre 2.15."""
FSX_STORAGE_TYPE = "SSD"
FSX_THROUGHPUT_TIERS = (125, 250, 500, 1000)
"""``per_unit_storage_throughput`` of ``PERSISTENT_2`` SSD file systems in MB/s per TiB (FSx API
``LustreConfiguration.PerUnitStorageThroughput``; pulumi_aws ``fsx.LustreFileSystem`` docstring)."""
FSX_DEFAULT_THROUGHPUT = 125
"""The entry tier when ``throughputPerTiB`` is not given."""
FSX_MIN_GIB = 1200
FSX_INCREMENT_GIB = 2400
"""FSx API ``CreateFileSystem.StorageCapacity``: "For SCRATCH_2, PERSISTENT_2, and PERSISTENT_1 deployment types
using SSD storage type, the valid values are 1200 GiB, 2400 GiB, and increments of 2400 GiB"."""
FSX_LUSTRE_VERSION = "2.15"
"""``file_system_type_version``: 2.15, valid for every deployment type (pulumi_aws docstring); the EKS AL2023 AMIs
ship a 2.15 Lustre client."""
FSX_DATA_COMPRESSION = "LZ4"
"""LZ4 compression (``data_compression_type``, ``LZ4`` or ``NONE``): compressible checkpoints and datasets take less
of the capacity (FSx for Lustre guide, "Lustre data compression")."""
LUSTRE_TCP_PORTS = ((988, 988), (1018, 1023))
"""Lustre LNET traffic: TCP 988 and 1018-1023, between the file servers (the file system's security group with
itself) and between them and the clients, both ways (FSx for Lustre guide, "File system access control with Amazon
VPC", limit-access-security-groups.html)."""
FSX_CSI_DRIVER = "fsx.csi.aws.com"
FSX_CSI_ADDON = "aws-fsx-csi-driver"
"""The EKS add-on of the FSx for Lustre CSI driver (EKS user guide ``fsx-csi-create``). It needs no IAM role for
static PersistentVolumes: only its controller calls the FSx API, to create and delete file systems for dynamic
provisioning, which this platform does not use (the cloud layer creates the file system)."""
FSX_MOUNT_OPTIONS = ("flock",)
"""``mountOptions`` of the driver's static-provisioning example (kubernetes-sigs/aws-fsx-csi-driver
examples/kubernetes/static_provisioning/specs/pv.yaml): cluster-wide coherent file locks."""


def fsx_capacity_problem(size_gib: int) -> Optional[str]:
    """Why ``size_gib`` is no valid ``PERSISTENT_2`` SSD capacity, or None."""
    if size_gib in (FSX_MIN_GIB, FSX_INCREMENT_GIB) or (size_gib > 0 and size_gib % FSX_INCREMENT_GIB == 0):
        return None
    below = max(FSX_MIN_GIB, size_gib // FSX_INCREMENT_GIB * FSX_INCREMENT_GIB)
    above = (size_gib // FSX_INCREMENT_GIB + 1) * FSX_INCREMENT_GIB
    return (f"{size_gib} is no FSx for Lustre {FSX_DEPLOYMENT_TYPE} capacity: 1200, 2400 or a multiple of 2400 GiB "
            f"(nearest: {below} or {above})")


def fsx_volume_handle(file_system_id: str, volume_name: str) -> str:
    """A distinct ``volumeHandle`` per PersistentVolume of one file system.

    The driver has no node staging and reads the volume id only to serialise calls (``NodePublishVolume`` mounts
    ``dnsname@tcp:/mountname``); the kubelet, however, keys a pod's volumes on driver + handle, so two PersistentVolumes
    of one file system with the same handle in one pod (a team's datasets and checkpoints) never both mount
    (kubernetes-sigs/aws-fsx-csi-driver#328). The file system id stays in front for whoever reads the PV."""
    return f"{file_system_id}::{volume_name}"


def fsx_mount_name(mount_name: str, sub_directory: str) -> str:
    """``volumeAttributes.mountname`` mounting ``sub_directory`` of the file system: Lustre mounts a subdirectory as
    ``<dnsname>@tcp:/<mountname>/<dir>`` (the driver builds ``dnsname@tcp:/mountname``; a fileset mount, FSx guide
    "Mounting specific filesets"). The directory must exist before the first mount (aws-fsx-csi-driver#247)."""
    sub = sub_directory.strip("/")
    return f"{mount_name}/{sub}" if sub else mount_name


def fsx_csi_source(file_system_id: str, dns_name: str, mount_name: str, volume_name: str,
                   sub_directory: str) -> dict[str, Any]:
    """``spec.csi`` of a static PersistentVolume of the file system (values resolved)."""
    return {"driver": FSX_CSI_DRIVER, "volumeHandle": fsx_volume_handle(file_system_id, volume_name),
            "volumeAttributes": {"dnsname": dns_name, "mountname": fsx_mount_name(mount_name, sub_directory)}}


def lustre_rules() -> list[dict[str, Any]]:
    """The ``from_port``/``to_port``/``ip_protocol`` of each Lustre rule (`LUSTRE_TCP_PORTS`)."""
    return [{"from_port": low, "to_port": high, "ip_protocol": "tcp"} for low, high in LUSTRE_TCP_PORTS]


# ---------------------------------------------------------------------------------------------------------
# Mountpoint for Amazon S3

S3_CSI_DRIVER = "s3.csi.aws.com"
S3_CSI_ADDON = "aws-mountpoint-s3-csi-driver"
"""The EKS add-on of the Mountpoint for Amazon S3 CSI driver (EKS user guide ``mountpoint-for-s3-add-on``)."""
S3_AUTHENTICATION_SOURCE = "pod"
"""``volumeAttributes.authenticationSource: pod``: Mountpoint uses the credentials of the mounting pod's
ServiceAccount through EKS Pod Identity or IRSA (awslabs/mountpoint-s3-csi-driver v2.7.0 docs/CONFIGURATION.md,
"Pod-Level Credentials"), so each namespace's ``storage-access`` ServiceAccount holds the bucket role and nothing
else in the cluster does; the driver's own ServiceAccount gets no role."""
S3_CACHE_SIZE = {"training": "100Gi", "serving": "50Gi"}
"""The local data cache (``cache: emptyDir`` with ``cacheEmptyDirSizeLimit``, docs/CACHING.md) of the read-heavy
profiles: training epochs re-read the same dataset objects; serving replicas on one node read the same weights.
Checkpoints are written once and read rarely: no cache."""
S3_METADATA_TTL = {"training": "indefinite", "serving": "indefinite", "checkpoint": "minimal"}
"""``metadata-ttl`` (docs/CACHING.md "Metadata Cache"): datasets and weights do not change under a mount; checkpoint
directories do (another job's writes must be seen)."""
S3_READ_WRITE_OPTIONS = ("allow-delete", "allow-overwrite")
"""Mountpoint's write flags (mountpoint-s3 doc/CONFIGURATION.md): delete and replace objects, so a job can rotate and
rewrite checkpoints. Read-only buckets get ``read-only`` instead."""
S3_POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"
S3_POD_IDENTITY_ACTIONS = ("sts:AssumeRole", "sts:TagSession")


def bucket_mount_options(profile: str, read_only: bool, region: str, run_as_id: int) -> tuple[str, ...]:
    """The PersistentVolume ``mountOptions`` of a bucket: the region (the driver also derives the STS region from it),
    the profile's metadata TTL, read-only or the write flags, and the workloads' non-root uid/gid with
    ``allow-other`` (the driver's non_root.yaml example) since Mountpoint itself runs in its own pod."""
    access = ("read-only",) if read_only else S3_READ_WRITE_OPTIONS
    return (f"region {region}", f"metadata-ttl {S3_METADATA_TTL[profile]}", *access,
            f"uid={run_as_id}", f"gid={run_as_id}", "allow-other")


def bucket_csi_source(bucket: str, profile: str, volume_name: str) -> dict[str, Any]:
    """``spec.csi`` of a bucket's static PersistentVolume: the bucket, pod-level credentials, the profile's cache.
    ``volumeHandle`` is the PV name: unique, as the driver requires ("Ensure that your volumeHandle is unique")."""
    attributes: dict[str, str] = {"bucketName": bucket, "authenticationSource": S3_AUTHENTICATION_SOURCE}
    if profile in S3_CACHE_SIZE:
        attributes.update(cache="emptyDir", cacheEmptyDirSizeLimit=S3_CACHE_SIZE[profile])
    return {"driver": S3_CSI_DRIVER, "volumeHandle": volume_name, "volumeAttributes": attributes}


def bucket_policy(buckets: Sequence[tuple[str, bool]], partition: str = "aws") -> str:
    """The bucket role's policy: Mountpoint's documented permissions (mountpoint-s3 doc/CONFIGURATION.md "IAM
    permissions") on exactly the configured buckets; write actions only on the read-write ones.
    ``buckets``: ``(bucket, read_only)`` pairs."""
    names = sorted({b for b, _ in buckets})
    writable = sorted({b for b, ro in buckets if not ro})
    statements: list[dict[str, Any]] = [
        {"Sid": "ListBuckets", "Effect": "Allow", "Action": ["s3:ListBucket"],
         "Resource": [f"arn:{partition}:s3:::{b}" for b in names]},
        {"Sid": "ReadObjects", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": [f"arn:{partition}:s3:::{b}/*" for b in names]},
    ]
    if writable:
        statements.append({"Sid": "WriteObjects", "Effect": "Allow",
                           "Action": ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:PutObject"],
                           "Resource": [f"arn:{partition}:s3:::{b}/*" for b in writable]})
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def bucket_trust_policy(cluster_name: str, namespaces: Sequence[str]) -> str:
    """Trust of the bucket role: EKS Pod Identity, and only for ``storage-access`` in the given namespaces of this
    cluster (the session tags EKS Pod Identity sets; EKS user guide ``pod-id-role``, "Setting Conditions")."""
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": S3_POD_IDENTITY_SERVICE},
        "Action": list(S3_POD_IDENTITY_ACTIONS),
        "Condition": {"StringEquals": {
            "aws:RequestTag/eks-cluster-name": cluster_name,
            "aws:RequestTag/kubernetes-namespace": sorted(namespaces),
            "aws:RequestTag/kubernetes-service-account": STORAGE_SERVICE_ACCOUNT,
        }},
    }]}, sort_keys=True)


# ---------------------------------------------------------------------------------------------------------
# Validation (`options.check_storage`)

STREAMING_REFUSED = ("EKS node groups have no image-streaming setting this platform can verify; use "
                     "storage.imagePulls.prePull to pull the large images onto GPU nodes in advance")


def check_storage(storage: Any, raw_storage: Mapping) -> None:
    """AWS rules of the ``storage`` section (a `StorageConfig`): the FSx capacity rule and no image streaming. The
    tiers are the generic parser's (`FSX_THROUGHPUT_TIERS` are exactly ``storage_config.THROUGHPUT_TIERS``);
    ``storageClass`` and ``storageAccount`` are refused there for every cloud they do not belong to."""
    fs = storage.shared_file_system
    if fs is not None:
        problem = fsx_capacity_problem(fs.size_gib)
        if problem:
            raise ConfigError("storage.sharedFileSystem.sizeGiB", problem)
    if storage.image_pulls.streaming:
        raise ConfigError("storage.imagePulls.streaming", STREAMING_REFUSED)


def throughput(storage_config: Any) -> int:
    """The tier bought: the configured one or `FSX_DEFAULT_THROUGHPUT`."""
    return storage_config.throughput_per_tib or FSX_DEFAULT_THROUGHPUT
