"""``storage``: the stack's data plane (shared file system, bucket mounts, image pulls), typed and validated.

STUB written by the lead: the storage helper completes the keys, the validation and this docstring.
"""

from collections.abc import Mapping
from dataclasses import dataclass

KEYS: set[str] = set()  # the helper fills: sharedFileSystem, buckets, imagePulls


@dataclass(frozen=True)
class StorageConfig:
    """``storage``: shared file system, bucket mounts and image pulls. Off by default: nothing changes without it."""


def parse_storage(raw: Mapping, cloud: str) -> StorageConfig:
    """The ``storage`` section of a stack's configuration (``raw`` is the whole stack configuration)."""
    from .config import _section, check_keys

    sec = _section(raw, "storage")
    check_keys(sec, KEYS, "storage")
    return StorageConfig()
