"""What a cloud layer hands the Kubernetes storage layer: how to mount the stack's shared file system and buckets.

The cloud layer (``clouds/<cloud>/storage.py``) creates the file system, the bucket access (workload identity, never
static keys) and the CSI drivers that are cluster add-ons, then describes them with these types in
``ClusterHandle.outputs["storage"]`` (a `StorageBackends`). The Kubernetes layer (`kube.storage`) turns them into
PersistentVolumes, claims and pod settings without knowing any cloud: each backend builds its own CSI volume source.

A leaf module (no cloud SDK, no Pulumi resource): values may be ``pulumi.Input``s (a file system's DNS name is known
only after it is created).
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

STORAGE_SERVICE_ACCOUNT = "storage-access"
"""The Kubernetes ServiceAccount, in every namespace whose workloads mount buckets, that the cloud layer grants
bucket access to through workload identity (IRSA / EKS Pod Identity, GKE Workload Identity Federation, Azure
Workload Identity, OKE workload identity). The storage layer creates it with the backend's annotations."""


@dataclass(frozen=True)
class CsiDriverChart:
    """A CSI driver the Kubernetes layer installs with Helm (where the cloud offers it as no add-on)."""

    name: str
    """Release name and the `versions.CSI_DRIVER_CHARTS` entry that pins the chart."""
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CsiDriverManifests:
    """A CSI driver the Kubernetes layer applies from pinned upstream manifests (one with neither a cloud add-on nor
    a released Helm chart, e.g. the Azure Lustre CSI driver)."""

    name: str
    """The `versions.CSI_DRIVER_MANIFESTS` entry whose URLs (pinned by release tag) are applied, in order."""


@dataclass(frozen=True)
class SharedFileSystemBackend:
    """The stack's shared (ReadWriteMany) file system as the Kubernetes layer mounts it."""

    kind: str
    """``fsx-lustre``, ``gcp-managed-lustre``, ``azure-managed-lustre``, ``oci-file-storage``, ``oci-lustre`` or
    ``storage-class`` (an existing cluster's named class)."""
    capacity_gib: int
    """Size of the file system (the PersistentVolumes' capacity; team claims are bounded by their quotas)."""
    driver: str = ""
    """CSI driver name (``fsx.csi.aws.com``, ``lustre.csi.storage.gke.io``, ...); empty for ``storage-class``."""
    csi_source: Optional[Callable[[str, str], Mapping[str, Any]]] = None
    """``csi_source(volume_name, sub_directory)``: the ``spec.csi`` of a static PersistentVolume named
    ``volume_name`` that mounts ``sub_directory`` of the file system (``""``: its root). Several PersistentVolumes
    of one file system (one per team claim) each get a distinct ``volumeHandle`` when the driver allows it."""
    mount_options: tuple[str, ...] = ()
    """The PersistentVolumes' ``mountOptions`` (the cloud's documented ones, e.g. ``flock`` for Lustre)."""
    storage_class: Optional[str] = None
    """``storage-class`` kind: the existing ReadWriteMany StorageClass team claims are provisioned from."""
    csi_chart: Optional[CsiDriverChart] = None
    """A CSI driver the Kubernetes layer must install with Helm (None: an add-on, or `csi_manifests`)."""
    csi_manifests: Optional[CsiDriverManifests] = None
    """A CSI driver the Kubernetes layer must apply from pinned manifests (None: an add-on, or `csi_chart`)."""
    sub_directory_mounts: bool = True
    """Whether ``csi_source`` honours ``sub_directory`` (each team claim mounts its own directory). False where the
    driver mounts only the file system's root (GKE Managed Lustre): every claim then exposes the whole file system,
    the platform's own workloads mount their directory with ``subPath``, and the claims are no isolation boundary
    between teams."""
    throughput_mbps_per_tib: Optional[int] = None
    """The tier bought (MB/s per TiB), for the plan's summary and docs."""


@dataclass(frozen=True)
class BucketBackend:
    """One ``storage.buckets`` entry as the Kubernetes layer mounts it (a static PersistentVolume per namespace)."""

    name: str
    """The entry's ``name``: the PersistentVolumeClaim's name in each namespace that mounts it."""
    bucket: str
    """The cloud bucket (container on Azure)."""
    driver: str
    """CSI driver name (``s3.csi.aws.com``, ``gcsfuse.csi.storage.gke.io``, ``blob.csi.azure.com``, ...)."""
    csi_source: Callable[[str], Mapping[str, Any]]
    """``csi_source(volume_name)``: the ``spec.csi`` of the PersistentVolume ``volume_name`` for this bucket."""
    read_only: bool = True
    mount_options: tuple[str, ...] = ()
    """The PersistentVolumes' ``mountOptions`` (the entry's profile as the cloud documents it)."""
    capacity: str = "1Ti"
    """Nominal capacity the PersistentVolume declares (object storage has none; the API requires one)."""
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    """Labels a pod that mounts the bucket needs (Azure Workload Identity's ``azure.workload.identity/use``)."""
    pod_annotations: Mapping[str, str] = field(default_factory=dict)
    """Annotations a pod that mounts the bucket needs (GKE's ``gke-gcsfuse/volumes: "true"`` sidecar injection)."""


@dataclass(frozen=True)
class StorageBackends:
    """Everything a cloud layer provides for ``storage``: ``ClusterHandle.outputs["storage"]``."""

    shared_file_system: Optional[SharedFileSystemBackend] = None
    buckets: tuple[BucketBackend, ...] = ()
    service_account_annotations: Mapping[str, Any] = field(default_factory=dict)
    """Annotations of every `STORAGE_SERVICE_ACCOUNT` (``eks.amazonaws.com/role-arn``,
    ``azure.workload.identity/client-id``); values may be Inputs."""
    csi_charts: tuple[CsiDriverChart, ...] = ()
    """CSI drivers for buckets the Kubernetes layer must install (None of the clouds' add-ons covers them)."""
    image_streaming: bool = False
    """Whether the cloud layer turned on the cloud's image-pull acceleration on the GPU pools (GKE image streaming,
    AKS artifact streaming, EKS SOCI parallel pull): the docs and the plan summary report it."""


def bucket_namespaces(config: Any) -> tuple[str, ...]:
    """The namespaces whose workloads mount the stack's buckets: every team's (training), the sentiment app's when it
    runs and the LLM service's when there is one. ``config`` is a `PlatformConfig`; the cloud layers grant bucket
    access to `STORAGE_SERVICE_ACCOUNT` in exactly these."""
    names = [team.name for team in config.teams]
    if config.inference.enabled:
        names.append(config.inference.namespace)
    if config.llm is not None:
        names.append(config.llm.namespace)
    return tuple(dict.fromkeys(names))
