"""The container images a Kubernetes resource runs, and whether each is pinned by digest.

A tag can be moved to other content at any time; ``repository[:tag]@sha256:<digest>`` cannot. Images are found in
every pod spec of a resource, whatever its kind (Deployment, CronJob, JobSet, LeaderWorkerSet...): each
``containers``, ``initContainers`` and ``ephemeralContainers`` entry with an ``image``. Helm releases are not
read: their images are fixed by the pinned chart version (docs/security.md, "Image pinning").
"""

from collections.abc import Iterator, Mapping
from typing import Any

from .props import get, items

CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
NOT_WORKLOADS = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:core/v1:ConfigMap",
                 "kubernetes:core/v1:Secret", "kubernetes:apiextensions.k8s.io/")


def runs_pods(resource_type: str) -> bool:
    """A Kubernetes object that may hold pod specs (not a Helm release, a manifest file, a ConfigMap or a CRD)."""
    return resource_type.startswith("kubernetes:") and not resource_type.startswith(NOT_WORKLOADS)


def images(props: Any) -> Iterator[str]:
    """Every container image anywhere in ``props``, in document order."""
    if isinstance(props, Mapping):
        for key, value in props.items():
            if key in CONTAINER_LISTS:
                yield from (str(get(c, "image")) for c in items(value) if get(c, "image"))
            else:
                yield from images(value)
    else:
        for value in items(props):
            yield from images(value)


def pinned(image: str) -> bool:
    return "@sha256:" in image


def repository(image: str) -> str:
    """``registry/path/name`` of an image reference, without tag or digest."""
    name = image.split("@", 1)[0]
    head, _, tail = name.rpartition(":")
    return head if head and "/" not in tail else name
