"""Security contexts of the platform's own pods (inference, training, optimizer): Pod Security ``restricted``.

Every platform pod runs as UID/GID 10001 (the images' user), non-root, with RuntimeDefault seccomp, no privilege
escalation, every capability dropped and a read-only root filesystem; the paths a program must write are
emptyDirs (`writable_dir`). RDMA pools add no capability: IPC_LOCK would not reach a non-root process (Kubernetes
sets no ambient capabilities), and the locked-memory limit is the node runtime's.
"""

from typing import Any

RUN_AS_ID = 10001
"""UID and GID of every platform container."""
TMP_PATH = "/tmp"
"""The writable temporary directory (also ``HOME``) of every platform container."""


def pod_security_context() -> dict[str, Any]:
    """The pod-level securityContext: non-root user and group, volume group ownership, RuntimeDefault seccomp."""
    return {"runAsNonRoot": True, "runAsUser": RUN_AS_ID, "runAsGroup": RUN_AS_ID, "fsGroup": RUN_AS_ID,
            "seccompProfile": {"type": "RuntimeDefault"}}


def container_security_context() -> dict[str, Any]:
    """The container-level securityContext: restricted's requirements plus a read-only root filesystem."""
    return {"runAsNonRoot": True, "runAsUser": RUN_AS_ID, "runAsGroup": RUN_AS_ID, "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}}


def writable_dir(name: str, path: str, size: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(volume, volumeMount) of an emptyDir of at most ``size`` mounted at ``path``."""
    return {"name": name, "emptyDir": {"sizeLimit": size}}, {"name": name, "mountPath": path}
