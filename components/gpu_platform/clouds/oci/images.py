"""OKE version and GPU node image selection from the OKE option data sources, as pure functions.

``oci.containerengine.get_cluster_option`` lists the Kubernetes versions OKE offers (``v1.34.1``);
``oci.containerengine.get_node_pool_option`` lists node images as ``sources`` (``image_id``, ``source_name``,
``source_type``). The data source has no shape filter, so the GPU image is chosen by its name the way
terraform-oci-oke's ``data-images.tf`` parses it: OKE images carry ``OKE-<k8s version>-<build>``, GPU images
``GPU``, Arm images ``aarch64``, and a build date ``YYYY.MM.DD``, e.g.
``Oracle-Linux-8.10-Gen2-GPU-2026.10.01-0-OKE-1.34.1-1000``.
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any

_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
_OKE_BUILD = re.compile(r"-OKE-(?P<k8s>\d+\.\d+\.\d+)-(?P<build>\d+)$")
_DATE = re.compile(r"-(\d{4})\.(\d{2})\.(\d{2})-")
_OS_VERSION = re.compile(r"^[A-Za-z-]+?-(\d+)\.(\d+)")


class NoMatchingVersion(ValueError):
    """OKE offers no version or image that matches what the stack asks for."""


def latest_patch_version(available: Sequence[str], minor: str) -> str:
    """The newest OKE version (``v1.34.2``) of a minor version (``1.34``) among ``available``."""
    candidates = []
    for version in available:
        match = _VERSION.match(version)
        if match and f"{match.group(1)}.{match.group(2)}" == minor:
            candidates.append((int(match.group(3)), version))
    if not candidates:
        raise NoMatchingVersion(f"OKE offers no Kubernetes {minor} version here; available: {', '.join(available)}")
    return max(candidates)[1]


def _field(source: Any, snake: str, camel: str) -> str:
    if isinstance(source, Mapping):
        return str(source.get(snake, source.get(camel, "")))
    return str(getattr(source, snake, ""))


def gpu_image_candidates(sources: Sequence[Any], kubernetes_version: str) -> list[tuple[tuple, str, str]]:
    """``(sort key, image id, name)`` of every x86_64 OKE GPU image built for ``kubernetes_version``."""
    wanted = kubernetes_version.lstrip("v")
    found = []
    for source in sources:
        name = _field(source, "source_name", "sourceName")
        image_id = _field(source, "image_id", "imageId")
        build = _OKE_BUILD.search(name)
        if not build or build.group("k8s") != wanted or "GPU" not in name or "aarch64" in name:
            continue
        date = _DATE.search(name)
        os_version = _OS_VERSION.match(name)
        key = (
            tuple(int(g) for g in date.groups()) if date else (0, 0, 0),
            int(build.group("build")),
            tuple(int(g) for g in os_version.groups()) if os_version else (0, 0),
        )
        found.append((key, image_id, name))
    return found


def pick_gpu_image(sources: Sequence[Any], kubernetes_version: str) -> str:
    """The image id of the newest OKE GPU image (build date, then build, then OS version) for the version."""
    candidates = gpu_image_candidates(sources, kubernetes_version)
    if not candidates:
        raise NoMatchingVersion(f"OKE lists no x86_64 GPU node image for Kubernetes {kubernetes_version}; "
                                "set the pool's imageId")
    return max(candidates)[1]
