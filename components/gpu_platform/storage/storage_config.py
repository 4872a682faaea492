"""``storage``: the stack's data plane (shared file system, bucket mounts, image pulls), typed and validated.

Off by default: a stack without the section plans exactly what it planned before. With it:

- ``sharedFileSystem`` (``sizeGiB``, ``throughputPerTiB``; ``storageClass`` on ``existing``): the cloud's parallel
  file system, created by the cloud layer and mounted ReadWriteMany through static PersistentVolumes: each team gets
  ``<team>-datasets`` (its jobs mount it read-only) and ``<team>-checkpoints`` (read-write) claims, and the inference
  and LLM services a shared model cache, so a new replica reads weights from the file system instead of downloading
  them. On ``existing`` the named ReadWriteMany StorageClass provisions the same claims dynamically.
- ``buckets`` (``name``, ``bucket``, ``readOnly``, ``profile``, ``storageAccount`` on Azure): existing buckets
  mounted through the cloud's CSI driver as a claim ``<name>`` in every team, inference and LLM namespace, reached
  through workload identity (the ``storage-access`` ServiceAccount), never static keys.
- ``imagePulls`` (``streaming``, ``prePull``, ``images``): the cloud's image-pull acceleration on the GPU pools, and a
  DaemonSet that pulls the stack's training and serving images (and ``images``) onto every GPU node in advance.
- ``teams[].storageQuota`` (`parse_storage_quota`): the team namespace's ``requests.storage`` quota; with a shared
  file system the team's two claims split it evenly (`team_claim_gib`).

Each cloud narrows the generic rules here (sizes, tiers, what it cannot honour) in its ``options.check_storage``.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

KEYS = {"sharedFileSystem", "buckets", "imagePulls"}
SHARED_FILE_SYSTEM_KEYS = {"sizeGiB", "throughputPerTiB", "storageClass"}
BUCKET_KEYS = {"name", "bucket", "readOnly", "profile", "storageAccount"}
IMAGE_PULL_KEYS = {"streaming", "prePull", "images"}
THROUGHPUT_TIERS = (125, 250, 500, 1000)
"""MB/s per TiB the clouds' parallel file systems sell (each cloud's ``check_storage`` keeps the ones it offers)."""
BUCKET_PROFILES = ("training", "checkpoint", "serving")
"""How a bucket is read: GKE's documented Cloud Storage FUSE profiles, mapped on other clouds to their drivers'
documented mount options for the same access pattern."""


@dataclass(frozen=True)
class SharedFileSystemConfig:
    """``storage.sharedFileSystem``: the cloud's parallel file system, mounted ReadWriteMany."""

    size_gib: int
    """``sizeGiB``: capacity in GiB (each cloud's minimum and increment apply: docs/storage.md). On ``existing``, the
    total the team claims share when a team has no ``storageQuota``."""
    throughput_per_tib: Optional[int] = None
    """``throughputPerTiB``: the throughput tier in MB/s per TiB of capacity (125, 250, 500, 1000 where the cloud
    offers them). Default: the cloud's entry tier."""
    storage_class: Optional[str] = None
    """``storageClass`` (``existing`` clusters only, required there): the ReadWriteMany StorageClass the team and
    model-cache claims are provisioned from (CephFS, NFS, a CSI driver's file class). Default: none elsewhere."""


@dataclass(frozen=True)
class BucketConfig:
    """One ``storage.buckets`` entry: an existing bucket mounted into the workloads' namespaces."""

    name: str
    """A DNS label: the PersistentVolumeClaim's name in each namespace that mounts the bucket."""
    bucket: str
    """The cloud bucket (Azure: the blob container)."""
    read_only: bool = True
    """``readOnly``: mount read-only (default). Write access is granted only to read-write buckets."""
    profile: str = "training"
    """``training`` (default), ``checkpoint`` or ``serving``: the access pattern the mount is tuned for (each cloud's
    documented mount options for it: docs/storage.md)."""
    storage_account: Optional[str] = None
    """``storageAccount`` (Azure only, required there): the storage account holding the container. Default: none."""


@dataclass(frozen=True)
class ImagePullsConfig:
    """``storage.imagePulls``: faster starts of the large training and serving images on GPU nodes."""

    streaming: bool = False
    """Turn on the cloud's image-pull acceleration on the GPU pools where it exists (refused on ``existing``).
    Default false."""
    pre_pull: bool = False
    """``prePull``: a DaemonSet per GPU pool that pulls the stack's training and serving images onto each node when
    it joins (init steps running ``true``: images need that executable). Default false."""
    images: tuple[str, ...] = ()
    """More image references to pre-pull on every GPU pool (with ``prePull``). Default none."""


@dataclass(frozen=True)
class StorageConfig:
    """``storage``: shared file system, bucket mounts and image pulls. Off by default: nothing changes without it."""

    shared_file_system: Optional[SharedFileSystemConfig] = None
    """``sharedFileSystem``: the stack's ReadWriteMany file system, holding each team's datasets and checkpoints
    claims and the services' model cache. Default: none."""
    buckets: tuple[BucketConfig, ...] = ()
    """``buckets``: existing buckets mounted as claims ``<name>`` in the team, inference and LLM namespaces (the
    reference training job mounts them at ``/buckets/<name>``), reached through workload identity (the
    ``storage-access`` ServiceAccount). Not on ``existing``. Default: none."""
    image_pulls: ImagePullsConfig = field(default_factory=ImagePullsConfig)
    """``imagePulls``: image streaming and pre-pulling on GPU pools. Default: neither."""

    @property
    def enabled(self) -> bool:
        """Whether the stack configures any storage at all."""
        return (self.shared_file_system is not None or bool(self.buckets) or self.image_pulls.streaming
                or self.image_pulls.pre_pull)


BUCKET_NAMES: dict[str, tuple[re.Pattern, str]] = {
    "aws": (re.compile(r"^(?!xn--|sthree-|amzn-s3-demo-)(?!.*\.\.)(?!\d+\.\d+\.\d+\.\d+$)[a-z0-9][a-z0-9.-]{1,61}"
                       r"[a-z0-9]$(?<!-s3alias)(?<!--ol-s3)"),
            "an S3 bucket name (3-63 lower-case letters, digits, '.' and '-', starting and ending with a letter or "
            "digit, no '..', not an IP address; docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html)"),
    "gcp": (re.compile(r"^(?=.{3,222}$)(?!goog)[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]{0,61}"
                       r"[a-z0-9])?)*$"),
            "a Cloud Storage bucket name (lower-case letters, digits, '-', '_' and '.', 3-63 characters per "
            "dot-separated part, starting and ending with a letter or digit; cloud.google.com/storage/docs/"
            "buckets#naming)"),
    "azure": (re.compile(r"^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$"),
              "a blob container name (3-63 lower-case letters, digits and '-', starting and ending with a letter or "
              "digit, no '--'; learn.microsoft.com/rest/api/storageservices/naming-and-referencing-containers--blobs"
              "--and-metadata)"),
    "oci": (re.compile(r"^[A-Za-z0-9._-]{1,256}$"),
            "an Object Storage bucket name (letters, digits, '-', '_' and '.', at most 256 characters; "
            "docs.oracle.com/iaas/Content/Object/Tasks/managingbuckets.htm)"),
}
"""Each cloud's bucket (Azure: container) naming rule and its description, from the cloud's documentation."""
STORAGE_ACCOUNT = re.compile(r"^[a-z0-9]{3,24}$")
"""Azure storage account names: 3-24 lower-case letters and digits."""
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_IMAGE_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REFERENCE = re.compile(rf"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]+)?/)?{_IMAGE_PART}"
                             rf"(?:/{_IMAGE_PART})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
                             r"(?:@sha256:[a-f0-9]{64})?$")
"""An OCI image reference (distribution/reference's grammar): ``[registry[:port]/]path[:tag][@sha256:digest]``."""
STORAGE_QUOTA = re.compile(r"^([1-9]\d*)(Gi|Ti)$")
"""``teams[].storageQuota``: whole GiB or TiB."""
TEAM_CLAIMS = ("datasets", "checkpoints")
"""The claims every team gets on the shared file system: ``<team>-datasets``, ``<team>-checkpoints``."""


def parse_storage_quota(value: Optional[str], path: str) -> Optional[int]:
    """``teams[].storageQuota`` (``2Ti``, ``500Gi``) in GiB; None when not given."""
    from ..errors import ConfigError

    if value is None:
        return None
    match = STORAGE_QUOTA.match(str(value))
    if not match:
        raise ConfigError(path, f"'{value}' is not a storage quantity in whole Gi or Ti such as 500Gi or 2Ti")
    return int(match.group(1)) * (1024 if match.group(2) == "Ti" else 1)


def team_claim_gib(storage: StorageConfig, quota_gib: Optional[int], team_count: int) -> int:
    """The size of each of a team's two claims on the shared file system: half its ``storageQuota`` less the bucket
    claims it holds, else (no quota) an even share of the file system over every team's two claims, at least 1."""
    assert storage.shared_file_system is not None
    if quota_gib is not None:
        return max(1, (quota_gib - BUCKET_CLAIM_GIB * len(storage.buckets)) // len(TEAM_CLAIMS))
    return max(1, storage.shared_file_system.size_gib // (len(TEAM_CLAIMS) * max(1, team_count)))


BUCKET_CLAIM_GIB = 1
"""What each bucket claim requests (object storage has no size; the API needs one): it counts 1Gi against a team's
``requests.storage`` quota."""


def _parse_shared_file_system(sec: Mapping, cloud: str) -> Optional[SharedFileSystemConfig]:
    from ..errors import ConfigError, one_of
    from ..fields import as_mapping, check_keys, join, read_int, read_str

    if sec.get("sharedFileSystem") is None:
        return None
    path = "storage.sharedFileSystem"
    raw = as_mapping(sec["sharedFileSystem"], path)
    check_keys(raw, SHARED_FILE_SYSTEM_KEYS, path)
    size = read_int(raw, "sizeGiB", path, minimum=1, required=True)
    tier = read_int(raw, "throughputPerTiB", path, None)
    if tier is not None and tier not in THROUGHPUT_TIERS:
        raise ConfigError(join(path, "throughputPerTiB"), one_of(str(tier), tuple(str(t) for t in THROUGHPUT_TIERS)))
    storage_class = read_str(raw, "storageClass", path, None)
    if cloud == "existing":
        if storage_class is None:
            raise ConfigError(join(path, "storageClass"), "is required on an existing cluster: the ReadWriteMany "
                                                          "StorageClass the team and model-cache claims use")
        if not OBJECT_NAME.match(storage_class):
            raise ConfigError(join(path, "storageClass"), f"'{storage_class}' is not a StorageClass name")
        if tier is not None:
            raise ConfigError(join(path, "throughputPerTiB"), "cannot be honoured on an existing cluster: the "
                                                              "StorageClass decides the throughput")
    elif storage_class is not None:
        raise ConfigError(join(path, "storageClass"), f"is for existing clusters; on {cloud} the platform creates "
                                                      "the cloud's parallel file system")
    return SharedFileSystemConfig(size_gib=size, throughput_per_tib=tier, storage_class=storage_class)


def _parse_bucket(value: object, path: str, cloud: str) -> BucketConfig:
    from ..errors import ConfigError
    from ..fields import as_mapping, check_keys, join, read_bool, read_enum, read_str

    raw = as_mapping(value, path)
    check_keys(raw, BUCKET_KEYS, path)
    name = read_str(raw, "name", path, required=True)
    if not DNS_LABEL.match(name):
        raise ConfigError(join(path, "name"), f"'{name}' is not a DNS label (the claim's name in each namespace)")
    bucket = read_str(raw, "bucket", path, required=True)
    rule = BUCKET_NAMES.get(cloud)
    if rule is not None and not rule[0].match(bucket):
        raise ConfigError(join(path, "bucket"), f"'{bucket}' is not {rule[1]}")
    account = read_str(raw, "storageAccount", path, None)
    if account is not None:
        if cloud != "azure":
            raise ConfigError(join(path, "storageAccount"), "names an Azure storage account; only azure stacks "
                                                            "take it")
        if not STORAGE_ACCOUNT.match(account):
            raise ConfigError(join(path, "storageAccount"), f"'{account}' is not a storage account name (3-24 "
                                                            "lower-case letters and digits)")
    return BucketConfig(name=name, bucket=bucket, read_only=read_bool(raw, "readOnly", path, True),
                        profile=read_enum(raw, "profile", path, BUCKET_PROFILES, "training"), storage_account=account)


def _parse_image_pulls(sec: Mapping, cloud: str) -> ImagePullsConfig:
    from ..errors import ConfigError
    from ..fields import as_mapping, check_keys, join, read_bool, read_list

    path = "storage.imagePulls"
    raw = as_mapping(sec.get("imagePulls") or {}, path)
    check_keys(raw, IMAGE_PULL_KEYS, path)
    streaming = read_bool(raw, "streaming", path, False)
    if streaming and cloud == "existing":
        raise ConfigError(join(path, "streaming"), "turns on a cloud's image-pull acceleration; an existing "
                                                   "cluster's nodes are configured outside the platform (use prePull)")
    pre_pull = read_bool(raw, "prePull", path, False)
    images = read_list(raw, "images", path)
    if images and not pre_pull:
        raise ConfigError(join(path, "images"), "takes effect only with prePull: true")
    for i, image in enumerate(images):
        if not isinstance(image, str) or not IMAGE_REFERENCE.match(image):
            raise ConfigError(join(join(path, "images"), i), f"{image!r} is not an image reference such as "
                                                             "nvcr.io/nvidia/pytorch:26.06-py3")
    if len(set(images)) != len(images):
        raise ConfigError(join(path, "images"), "lists an image twice")
    return ImagePullsConfig(streaming=streaming, pre_pull=pre_pull, images=tuple(images))


def _reserved_claims(raw: Mapping) -> dict[str, str]:
    """Claim names the platform gives team namespaces (``<team>-datasets``...), which a bucket's claim cannot take."""
    reserved = {}
    for team in raw.get("teams") or []:
        if isinstance(team, Mapping) and isinstance(team.get("name"), str):
            for claim in TEAM_CLAIMS:
                reserved[f"{team['name']}-{claim}"] = f"team '{team['name']}''s {claim} claim"
    return reserved


def parse_storage(raw: Mapping, cloud: str) -> StorageConfig:
    """The ``storage`` section of a stack's configuration (``raw`` is the whole stack configuration): the generic
    rules here, then the cloud's own (``clouds/<cloud>/options.check_storage``) when it has any."""
    from ..clouds import options_module
    from ..errors import ConfigError
    from ..fields import check_keys, join, read_list
    from ..fields import section as _section

    sec = _section(raw, "storage")
    check_keys(sec, KEYS, "storage")
    shared = _parse_shared_file_system(sec, cloud)
    raw_buckets = read_list(sec, "buckets", "storage")
    if raw_buckets and cloud == "existing":
        raise ConfigError("storage.buckets", "cannot be honoured on an existing cluster: the platform grants bucket "
                                             "access through a cloud's workload identity, which it has none of here "
                                             "(mount buckets with your own CSI driver and claims)")
    buckets = tuple(_parse_bucket(b, join("storage.buckets", i), cloud) for i, b in enumerate(raw_buckets))
    seen: dict[str, int] = {}
    reserved = _reserved_claims(raw)
    for i, bucket in enumerate(buckets):
        if bucket.name in seen:
            raise ConfigError(join(join("storage.buckets", i), "name"), f"duplicate bucket name '{bucket.name}' "
                                                                        f"(also storage.buckets[{seen[bucket.name]}])")
        if bucket.name in reserved:
            raise ConfigError(join(join("storage.buckets", i), "name"), f"'{bucket.name}' is {reserved[bucket.name]}")
        seen[bucket.name] = i
    storage = StorageConfig(shared_file_system=shared, buckets=buckets, image_pulls=_parse_image_pulls(sec, cloud))
    check = getattr(options_module(cloud), "check_storage", None)
    if check is not None and storage.enabled:
        check(storage, sec)
    return storage


def parse_size_gib(quantity: str) -> int:
    """A ``Mi``/``Gi``/``Ti`` quantity in whole GiB, rounded up."""
    match = re.fullmatch(r"([1-9]\d*)(Mi|Gi|Ti)", quantity)
    if not match:
        raise ValueError(f"'{quantity}' is not a Mi, Gi or Ti quantity")
    number, unit = int(match.group(1)), match.group(2)
    return -(-number // 1024) if unit == "Mi" else number * (1024 if unit == "Ti" else 1)
