"""The storage layer's objects as plain bodies: static PersistentVolumes and their claims, dynamic claims of a
StorageClass, the bucket-access ServiceAccounts, the directories a shared file system's volumes mount, and the
image pre-pull DaemonSets.

Why static PersistentVolumes: the clouds' parallel file systems are created by the cloud layer (their size,
throughput tier and network are the stack's), not by a CSI provisioner per claim. Each claim gets a volume that mounts
one directory of the file system (``teams/<team>/datasets``, ``teams/<team>/checkpoints``, ``models``), pre-bound to
its claim (``claimRef``) so that no other claim can take it, and kept when the claim goes (``Retain``): the data
outlives ``pulumi destroy``. A claim's size is what it counts against its namespace's ``requests.storage`` quota;
a parallel file system does not enforce it per directory.

Why a pre-pull DaemonSet: a training or serving image of 10-20 GB takes minutes to pull, on every new GPU node,
while the node's GPUs sit idle. A DaemonSet on each GPU pool whose init containers are those images makes each node
pull them once, when it joins. Each init container runs ``true`` (no shell needed: every image with a shell has a
``true`` executable; a distroless image has neither and cannot be pre-pulled this way); the pod's one long-running
container sleeps in the platform's own small image. Like every platform pod, it runs as UID 10001 with a read-only
root filesystem and a ``/tmp`` emptyDir (`pod_security`).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from .. import catalog, labels, versions
from ..component_args import Rule
from ..kubernetes_base.common import all_pool_tolerations, metadata
from ..pools import GpuPool
from ..security import namespace_security, pod_security
from .storage_backends import STORAGE_SERVICE_ACCOUNT

DEFAULT_NAMESPACE = "gpu-storage"
"""The storage layer's own namespace: the pre-pull DaemonSets and the Job that creates the file system's
directories."""
APP_LABELS = {"app.kubernetes.io/name": "gpu-storage", "app.kubernetes.io/part-of": "gpu-platform"}
CSI_DRIVER_NAMESPACE = "kube-system"
"""Where CSI driver charts go: node plugins of every driver run there (the clouds' add-ons put theirs there too)."""
ACCESS_MODES = ("ReadWriteMany", "ReadOnlyMany")
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
DATA_PATH = "/data"
"""Where the reference training job mounts its team's datasets claim (read-only)."""
CHECKPOINT_PATH = "/checkpoints"
BUCKETS_PATH = "/buckets"
"""Buckets mount at ``/buckets/<name>``."""
TEAM_DIRECTORY = "teams/{team}/{claim}"
"""The directory of a team claim on the shared file system."""
MODELS_DIRECTORY = "models"
"""The model cache's directory on the shared file system (the inference and LLM services share it)."""
PRE_PULL_RESOURCES = {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"cpu": "10m", "memory": "32Mi"}}
"""``true`` and ``sleep``: nothing to run, only an image to pull (a pull is the kubelet's work, not the pod's)."""
PRE_PULL_TMP = "1Mi"
"""The ``/tmp`` emptyDir every platform container gets (``true`` and ``sleep`` write nothing)."""
DIRECTORY_MODE = "1777"
"""Mode of the claims' directories: anyone may write (each team's pods run as users of its choosing), only an entry's
owner may remove it (the sticky bit), as ``/tmp``. Each volume mounts only its own directory."""
STORAGE_SECURITY = namespace_security.PodSecurity(namespace_security.BASELINE, (
    "the directories Job creates the shared file system's claim directories as root (a new file system's root "
    "belongs to root); the pre-pull DaemonSets' pods meet restricted"))


@dataclass(frozen=True)
class StorageVolume:
    """One claim of the data plane and, for a static one, its PersistentVolume."""

    name: str
    """The claim's name."""
    namespace: str
    size: str
    """The claim's request (and the static volume's capacity unless ``capacity``)."""
    access_mode: str = "ReadWriteMany"
    csi: Optional[Mapping[str, Any]] = None
    """The static PersistentVolume's ``spec.csi``; None: a dynamic claim of ``storage_class``."""
    capacity: Optional[str] = None
    mount_options: tuple[str, ...] = ()
    storage_class: Optional[str] = None
    claim: bool = True
    """Create the claim too; False: only the volume, pre-bound for a claim the workload creates (the model cache)."""
    keep: bool = False
    """Keep the claim when the stack is deleted (team data: datasets and checkpoints)."""
    directory: Optional[str] = None
    """The file-system directory the volume mounts (the directories Job creates it); None: nothing to create."""

    def __post_init__(self) -> None:
        if self.access_mode not in ACCESS_MODES:
            raise ValueError(f"access_mode must be one of {ACCESS_MODES}, got {self.access_mode!r}")
        if self.csi is None and not self.storage_class:
            raise ValueError(f"claim {self.namespace}/{self.name} needs a csi source or a storage_class")

    @property
    def volume_name(self) -> str:
        return volume_name(self.namespace, self.name)


def volume_name(namespace: str, claim: str) -> str:
    """The PersistentVolume of the static claim ``namespace/claim`` (volumes are cluster-wide: both name it)."""
    return f"{namespace}-{claim}"


SUB_PATH = Rule(check=lambda d: None if d and not d.startswith("/") and ".." not in d.split("/")
                else "must be a relative path inside the file system, without '..'")
"""A directory of the shared file system (a volume's ``directory``, a mount's ``subPath``)."""


def sub_path_mount(mount: dict[str, Any], sub_path: Optional[str]) -> dict[str, Any]:
    """``mount`` (a ``volumeMounts`` entry) kept to ``sub_path`` of its volume: how the platform's own workloads stay
    in their directory of a file system whose driver mounts only the root (`SharedFileSystemBackend.
    sub_directory_mounts` false). Unchanged without one."""
    return {**mount, "subPath": sub_path} if sub_path else mount


def manifest_name(url: str) -> str:
    """A pinned manifest's resource name: its file name without ``.yaml`` (``csi-azurelustre-node-jammy``)."""
    return url.rsplit("/", 1)[-1].removesuffix(".yaml").removesuffix(".yml")


def team_claim(team: str, claim: str) -> str:
    """``<team>-datasets``, ``<team>-checkpoints``."""
    return f"{team}-{claim}"


def persistent_volume(volume: StorageVolume) -> Optional[dict[str, Any]]:
    """The static PersistentVolume of ``volume`` (None for a dynamic claim), pre-bound to its claim and retained."""
    if volume.csi is None:
        return None
    spec: dict[str, Any] = {
        "capacity": {"storage": volume.capacity or volume.size},
        "accessModes": [volume.access_mode],
        "persistentVolumeReclaimPolicy": "Retain",
        # Empty: no StorageClass may provision for or bind this volume; only its claimRef's claim takes it.
        "storageClassName": "",
        "claimRef": {"namespace": volume.namespace, "name": volume.name},
        "csi": dict(volume.csi),
    }
    if volume.mount_options:
        spec["mountOptions"] = list(volume.mount_options)
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": metadata(volume.volume_name, extra_labels=APP_LABELS), "spec": spec}


def claim_spec(volume: StorageVolume) -> dict[str, Any]:
    """A claim's spec: bound to its static volume by name, or provisioned by its StorageClass."""
    spec: dict[str, Any] = {"accessModes": [volume.access_mode], "resources": {"requests": {"storage": volume.size}}}
    if volume.csi is not None:
        spec.update(storageClassName="", volumeName=volume.volume_name)
    else:
        spec["storageClassName"] = volume.storage_class
    return spec


def persistent_volume_claim(volume: StorageVolume) -> Optional[dict[str, Any]]:
    """The claim of ``volume`` (None when its workload creates the claim)."""
    if not volume.claim:
        return None
    # A claim of a WaitForFirstConsumer class binds only when a pod uses it: the deployment does not wait for that.
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": metadata(volume.name, volume.namespace, APP_LABELS, dict(SKIP_AWAIT)),
            "spec": claim_spec(volume)}


def service_account(namespace: str, annotations: Mapping[str, Any]) -> dict[str, Any]:
    """`STORAGE_SERVICE_ACCOUNT` in ``namespace``: the identity the cloud grants bucket access to (its annotations
    name the cloud role or identity: IRSA's role ARN, Azure Workload Identity's client id)."""
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": metadata(STORAGE_SERVICE_ACCOUNT, namespace, APP_LABELS, dict(annotations) or None)}


def namespace(name: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
    """The storage layer's namespace (baseline: the directories Job runs as root)."""
    return {"apiVersion": "v1", "kind": "Namespace", **namespace_security.namespace_body(name, STORAGE_SECURITY)}


def directories(volumes: Sequence[StorageVolume]) -> tuple[str, ...]:
    """The file-system directories the static volumes mount, each once, in order."""
    return tuple(dict.fromkeys(v.directory for v in volumes if v.directory))


ROOT_CLAIM = "shared-file-system-root"
"""The claim, in the storage namespace, on the whole shared file system (the directories Job mounts it)."""
ROOT_PATH = "/fs"


def directories_job(ns: str, paths: Sequence[str], image: str) -> dict[str, Any]:
    """The Job that creates ``paths`` on the shared file system (a static volume of a directory that does not exist
    fails to mount; the CSI drivers mount directories, they do not create them). Idempotent: ``mkdir -p``."""
    targets = " ".join(f"'{ROOT_PATH}/{p}'" for p in paths)
    script = f"mkdir -p {targets} && chmod {DIRECTORY_MODE} {targets}"
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": metadata("shared-file-system-directories", ns, APP_LABELS),
        "spec": {
            "backoffLimit": 6,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": APP_LABELS},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "automountServiceAccountToken": False,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "mkdir", "image": image, "command": ["sh", "-c", script],
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                      "limits": {"cpu": "100m", "memory": "64Mi"}},
                        # Root (the owner of a new file system's root) without any capability: owning the root is
                        # all mkdir and chmod need.
                        "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": False,
                                            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": [{"name": "fs", "mountPath": ROOT_PATH}],
                    }],
                    "volumes": [{"name": "fs", "persistentVolumeClaim": {"claimName": ROOT_CLAIM}}],
                },
            },
        },
    }


@dataclass(frozen=True)
class PrePull:
    """One GPU pool's pre-pull DaemonSet: the images its nodes pull when they join."""

    pool: GpuPool
    images: tuple[str, ...] = field(default_factory=tuple)


def pre_pull_name(pool: GpuPool) -> str:
    return f"pre-pull-{pool.name}"


def holder_image(pool: GpuPool) -> str:
    """The image of the pre-pull pod's sleeping container: the platform's own (amd64), or on arm64 pools
    (Grace-Blackwell) the NGC PyTorch image, a multi-arch index (`versions.ARM64_WORKLOAD_IMAGES`)."""
    if pool.architecture == catalog.ARM64:
        return versions.TRAINING_IMAGE.reference
    return versions.PRE_PULL_HOLDER_IMAGE.reference


def pre_pull_daemon_set(pre_pull: PrePull, ns: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
    """The DaemonSet that pulls ``pre_pull.images`` onto every node of its pool (Pod Security restricted)."""
    pool = pre_pull.pool
    selector = {**APP_LABELS, labels.POOL_LABEL: pool.name}
    tmp_volume, tmp_mount = pod_security.writable_dir("tmp", pod_security.TMP_PATH, PRE_PULL_TMP)
    common = {"resources": PRE_PULL_RESOURCES, "securityContext": pod_security.container_security_context(),
              "env": [{"name": "HOME", "value": pod_security.TMP_PATH}], "volumeMounts": [tmp_mount]}
    steps = [{"name": f"pull-{i}", "image": image, "command": ["true"], "imagePullPolicy": "IfNotPresent", **common}
             for i, image in enumerate(pre_pull.images)]
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": metadata(pre_pull_name(pool), ns, selector),
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {
                    "automountServiceAccountToken": False,
                    "nodeSelector": dict(pool.selector),
                    "tolerations": all_pool_tolerations([pool]),
                    "securityContext": pod_security.pod_security_context(),
                    "terminationGracePeriodSeconds": 1,
                    "initContainers": steps,
                    "containers": [{"name": "hold", "image": holder_image(pool),
                                    "command": ["sleep", "infinity"], **common}],
                    "volumes": [tmp_volume],
                },
            },
        },
    }


def pod_volumes(claims: Sequence[tuple[str, str, str, bool]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, volumeMounts) of a pod that mounts claims, each ``(volume name, claim, mount path, read-only)``."""
    volumes = [{"name": name, "persistentVolumeClaim": {"claimName": claim, **({"readOnly": True} if ro else {})}}
               for name, claim, _, ro in claims]
    mounts = [{"name": name, "mountPath": path, **({"readOnly": True} if ro else {})} for name, _, path, ro in claims]
    return volumes, mounts
