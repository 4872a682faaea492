"""``storage``: the stack's data plane (shared file system, bucket mounts, image pulls), typed and validated.

STUB written by the lead: the storage helper (S1) completes the validation, the defaults and this docstring. The
types below are the contract the cloud layers (``clouds/<cloud>/storage.py``) build against: change them only
together with those.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

KEYS: set[str] = set()  # S1 fills: sharedFileSystem, buckets, imagePulls
BUCKET_PROFILES = ("training", "checkpoint", "serving")
"""How a bucket is read: GKE's documented Cloud Storage FUSE profiles, mapped on other clouds to their drivers'
documented mount options for the same access pattern."""


@dataclass(frozen=True)
class SharedFileSystemConfig:
    """``storage.sharedFileSystem``: the cloud's parallel file system, mounted ReadWriteMany."""

    size_gib: int
    """``sizeGiB``: capacity in GiB (each cloud's minimum and increment apply)."""
    throughput_per_tib: Optional[int] = None
    """``throughputPerTiB``: the throughput tier in MB/s per TiB of capacity (125, 250, 500, 1000 where the cloud
    offers them). Default: the cloud's entry tier."""
    storage_class: Optional[str] = None
    """``storageClass`` (``existing`` clusters only, required there): the ReadWriteMany StorageClass to use."""


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
    """``training``, ``checkpoint`` or ``serving``: the access pattern the mount is tuned for."""
    storage_account: Optional[str] = None
    """``storageAccount`` (Azure only, required there): the storage account holding the container."""


@dataclass(frozen=True)
class ImagePullsConfig:
    """``storage.imagePulls``: faster starts of the large training and serving images on GPU nodes."""

    streaming: bool = False
    """Turn on the cloud's image-pull acceleration on the GPU pools where it exists."""
    pre_pull: bool = False
    """``prePull``: a DaemonSet on the GPU pools that pulls the stack's training and serving images in advance."""
    images: tuple[str, ...] = ()
    """More images to pre-pull (with ``prePull``)."""


@dataclass(frozen=True)
class StorageConfig:
    """``storage``: shared file system, bucket mounts and image pulls. Off by default: nothing changes without it."""

    shared_file_system: Optional[SharedFileSystemConfig] = None
    """``sharedFileSystem``: the stack's ReadWriteMany file system (None: none)."""
    buckets: tuple[BucketConfig, ...] = ()
    """``buckets``: object storage mounted into the team, inference and LLM namespaces."""
    image_pulls: ImagePullsConfig = field(default_factory=ImagePullsConfig)
    """``imagePulls``: image streaming and pre-pulling on GPU pools."""

    @property
    def enabled(self) -> bool:
        """Whether the stack configures any storage at all."""
        return (self.shared_file_system is not None or bool(self.buckets) or self.image_pulls.streaming
                or self.image_pulls.pre_pull)


def parse_storage(raw: Mapping, cloud: str) -> StorageConfig:
    """The ``storage`` section of a stack's configuration (``raw`` is the whole stack configuration)."""
    from .config import _section, check_keys

    sec = _section(raw, "storage")
    check_keys(sec, KEYS, "storage")
    return StorageConfig()
