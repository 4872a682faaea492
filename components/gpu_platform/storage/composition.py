"""What a cloud's storage components give `DataPlaneStorage` in a composed program: the claims and volumes of a
shared file system and of buckets, the root volume of the directories Job, the CSI drivers to install, the
``storage-access`` ServiceAccounts. The stack path builds its `DataPlaneStorage` args from the same backends
(`data_plane.storage_args`), so a composed program and a stack file plan the same objects.

Plain mixins (no annotations: they add nothing to a served component's schema): a cloud's file-system component sets
``self.backend`` (a `SharedFileSystemBackend`), its bucket-access component ``self.buckets`` (its `BucketBackend`s),
``self.service_account_annotations`` and ``self.csi_charts``.
"""

from typing import TYPE_CHECKING, Any, Optional

import pulumi

from ..component_args import Args
from . import data_plane
from .data_plane import DataPlaneStorageArgs, StorageVolumeArgs
from .storage_backends import BucketBackend, CsiDriverChart, SharedFileSystemBackend


def former_parent(opts: Optional[pulumi.ResourceOptions]) -> list[pulumi.Alias]:
    """The children's alias: before these components, a stack's storage resources were children of the component
    that is now their component's parent (the cluster), under the same names. The alias keeps a deployed file
    system from being replaced; in a program that never had them it names nothing."""
    return [pulumi.Alias(parent=opts.parent)] if opts is not None and opts.parent is not None else []


STACK_KEYS = {"sizeGiB": "size_gib", "throughputPerTiB": "throughput_per_tib"}
"""The component argument of each ``storage.sharedFileSystem`` key a cloud's capacity rule names."""


def check_capacity(checker: Args, problem: Optional[tuple[str, str]]) -> None:
    """Refuse a file system a cloud's capacity rule (``(stack key, why)`` or None) finds unsellable, naming the
    component's argument instead of the stack key."""
    if problem is not None:
        checker.fail(STACK_KEYS[problem[0]], problem[1])


class FileSystemClaims:
    """The `DataPlaneStorage` side of a shared file-system component."""

    if TYPE_CHECKING:  # set by the component; no runtime annotation (it would join the served schema)
        backend: SharedFileSystemBackend

    def volume(self, namespace: str, claim: str, size: str, directory: str, keep: bool = False,
               create_claim: bool = True) -> StorageVolumeArgs:
        """A ``volumes`` entry: the claim ``namespace/claim`` of ``size`` bound to a static volume of ``directory``
        (``create_claim`` false: the volume alone, pre-bound for a claim a workload creates, e.g. a model cache).
        ``keep``: the claim outlives the stack (volumes always do)."""
        return data_plane.file_system_volume(self.backend, namespace, claim, size, directory, keep, create_claim)

    def data_plane_args(self) -> DataPlaneStorageArgs:
        """``root_csi``/``root_mount_options`` (the directories Job creates every volume's directory through them)
        and the CSI driver the Kubernetes layer installs, if any: merge them into `DataPlaneStorage`'s args."""
        return DataPlaneStorageArgs(**data_plane.file_system_root(self.backend),
                                    **data_plane.csi_driver_args(self.backend))


class BucketClaims:
    """The `DataPlaneStorage` side of a bucket-access component."""

    if TYPE_CHECKING:  # set by the component; no runtime annotation (it would join the served schema)
        namespaces: Optional[list[str]]  # None: any namespace (a driver-wide identity)
        buckets: tuple[BucketBackend, ...]
        service_account_annotations: dict[str, Any]
        csi_charts: tuple[CsiDriverChart, ...]

    def volumes(self, namespaces: list[str]) -> list[StorageVolumeArgs]:
        """A ``volumes`` entry per bucket and namespace: the claim ``<name>`` bound to a static volume of the
        bucket. ``namespaces`` must be ones the component granted (its ``namespaces``, where the grant is per
        namespace)."""
        for i, namespace in enumerate(namespaces):
            if self.namespaces is not None and namespace not in self.namespaces:
                Args(type(self).__name__, str(getattr(self, "_name", ""))).fail(
                    f"volumes(namespaces[{i}])", f"'{namespace}' was not granted the buckets (the component's "
                                                 f"namespaces: {', '.join(self.namespaces)})")
        return [data_plane.bucket_volume(bucket, ns) for ns in namespaces for bucket in self.buckets]

    def data_plane_args(self, namespaces: list[str]) -> DataPlaneStorageArgs:
        """The buckets' ``volumes`` in ``namespaces``, their ``storage-access`` ServiceAccounts with the cloud
        identity's annotations, and the buckets' CSI driver chart where no add-on installs it."""
        args = DataPlaneStorageArgs(volumes=self.volumes(namespaces), service_account_namespaces=list(namespaces))
        if self.service_account_annotations:
            args["service_account_annotations"] = dict(self.service_account_annotations)
        args.update(data_plane.csi_driver_args(None, self.csi_charts))
        return args
