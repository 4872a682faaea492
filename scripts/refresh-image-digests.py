#!/usr/bin/env python3
"""Resolve each pinned image tag to the digest its registry serves and record it in ``image_digests.json``.

    scripts/refresh-image-digests.py                  # resolve every third-party pin, rewrite the lock
    scripts/refresh-image-digests.py --check          # exit 1 if a recorded digest is stale or missing
    scripts/refresh-image-digests.py --project-built  # also this project's images (after the release pushed them)

The images are `gpu_platform.versions.PINNED_IMAGES`; the lock is ``components/gpu_platform/image_digests.json``,
which `versions` reads, so a new digest reaches every manifest without touching Python. Only the standard library:
the OCI distribution API (``HEAD /v2/<name>/manifests/<tag>``) with the anonymous bearer-token flow the registry
asks for in its ``WWW-Authenticate`` challenge (nvcr.io, ghcr.io, quay.io, Docker Hub all use it for public
images). The digest is the registry's ``Docker-Content-Digest`` of what the tag names: for a multi-arch image the
index, so every architecture pulls the same reference.

Exit status: 0 all pins current (or rewritten), 1 stale or missing pins (``--check``), 2 a registry could not
answer.
"""

import argparse
import datetime
import hashlib
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "components"))

from gpu_platform import versions  # noqa: E402

MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
"""Accept header: index and manifest-list types first, so a multi-arch tag answers with its index."""
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
DOCKER_HUB = "docker.io"
EXIT_OK, EXIT_STALE, EXIT_ERROR = 0, 1, 2


class RegistryError(Exception):
    """The registry did not answer with a digest for the tag."""


def split_repository(repository: str) -> tuple[str, str]:
    """(registry host, repository path) of ``repository``; Docker Hub's short names get their implicit parts."""
    first, _, rest = repository.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host, path = first, rest
    else:
        host, path = DOCKER_HUB, repository
    if host == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    return host, path


def registry_url(host: str, overrides: Mapping[str, str]) -> str:
    """Base URL of the registry API for ``host`` (``overrides`` map hosts to other URLs, e.g. a mirror)."""
    if host in overrides:
        return overrides[host].rstrip("/")
    return "https://registry-1.docker.io" if host == DOCKER_HUB else f"https://{host}"


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """(scheme, parameters) of a ``WWW-Authenticate`` header such as ``Bearer realm="...",service="..."``."""
    scheme, _, rest = header.strip().partition(" ")
    params = dict(re.findall(r'(\w+)="([^"]*)"', rest))
    return scheme.lower(), params


class Resolver:
    """Tag-to-digest lookups against registries, with the anonymous token each one hands out."""

    def __init__(self, overrides: Mapping[str, str] | None = None, timeout: float = 20.0,
                 opener: Callable[..., object] = urllib.request.urlopen):
        self.overrides = dict(overrides or {})
        self.timeout = timeout
        self.opener = opener
        self._tokens: dict[str, str] = {}
        """Token per repository path, fetched on its first challenge."""

    def _request(self, url: str, method: str, token: str | None):
        headers = {"Accept": ", ".join(MANIFEST_TYPES)}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return self.opener(urllib.request.Request(url, method=method, headers=headers), timeout=self.timeout)

    def _token(self, challenge: str, path: str) -> str:
        """An anonymous pull token from the realm the challenge names (scope: pull of this repository)."""
        scheme, params = parse_challenge(challenge)
        if scheme != "bearer" or "realm" not in params:
            raise RegistryError(f"unsupported authentication challenge: {challenge!r}")
        query = {"scope": params.get("scope") or f"repository:{path}:pull"}
        if "service" in params:
            query["service"] = params["service"]
        url = f"{params['realm']}?{urllib.parse.urlencode(query)}"
        with self.opener(urllib.request.Request(url), timeout=self.timeout) as response:
            body = json.loads(response.read())
        token = body.get("token") or body.get("access_token")
        if not token:
            raise RegistryError(f"the token service at {params['realm']} returned no token")
        return token

    def _fetch(self, url: str, path: str, method: str):
        """The response to ``method url``; on a 401 challenge, once more with a token."""
        try:
            return self._request(url, method, self._tokens.get(path))
        except urllib.error.HTTPError as err:
            if err.code != 401 or not err.headers.get("WWW-Authenticate"):
                raise
            challenge = err.headers["WWW-Authenticate"]
        self._tokens[path] = self._token(challenge, path)
        return self._request(url, method, self._tokens[path])

    def digest(self, repository: str, tag: str) -> str:
        """The digest ``repository:tag`` resolves to now."""
        host, path = split_repository(repository)
        url = f"{registry_url(host, self.overrides)}/v2/{path}/manifests/{urllib.parse.quote(tag, safe='')}"
        try:
            with self._fetch(url, path, "HEAD") as response:
                digest = response.headers.get("Docker-Content-Digest", "")
            if not digest:
                # Not every registry sends the header on HEAD: the digest is the hash of the manifest's bytes.
                with self._fetch(url, path, "GET") as response:
                    body = response.read()
                    digest = response.headers.get("Docker-Content-Digest", "")
                computed = "sha256:" + hashlib.sha256(body).hexdigest()
                if digest and digest != computed:
                    raise RegistryError(f"{repository}:{tag}: the registry's digest {digest} is not its manifest's "
                                        f"hash {computed}")
                digest = computed
        except urllib.error.HTTPError as err:
            raise RegistryError(f"{repository}:{tag}: HTTP {err.code} from {url}") from None
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise RegistryError(f"{repository}:{tag}: {err}") from None
        if not DIGEST.match(digest):
            raise RegistryError(f"{repository}:{tag}: unexpected digest {digest!r}")
        return digest


def read_lock(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def write_lock(path: Path, lock: Mapping) -> None:
    path.write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def refresh(images: Iterable[versions.Image], lock: Mapping, resolve: Callable[[str, str], str],
            today: str) -> tuple[dict, list[str], list[str]]:
    """(new lock, stale lines, error lines): every image resolved; entries of other images are kept."""
    updated = {key: dict(value) for key, value in lock.items()}
    stale, errors = [], []
    for image in images:
        try:
            digest = resolve(image.repository, image.tag)
        except RegistryError as err:
            errors.append(str(err))
            continue
        recorded = lock.get(image.tagged, {}).get("digest", "")
        if digest != recorded:
            stale.append(f"{image.tagged}: {recorded or 'no digest'} -> {digest}")
            host, _ = split_repository(image.repository)
            updated[image.tagged] = {"digest": digest, "source": f"{host} registry, resolved {today}"}
    return updated, stale, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report stale pins and exit 1; change nothing")
    parser.add_argument("--project-built", action="store_true",
                        help="also resolve this project's own images (once a release has pushed them)")
    parser.add_argument("--lock", type=Path, default=versions.IMAGE_DIGESTS_FILE, help="the digest file")
    parser.add_argument("--registry", action="append", default=[], metavar="HOST=URL",
                        help="reach registry HOST at URL instead (a mirror; the tests' fake registry)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per HTTP request")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.registry)
    project = {image.tagged for image in versions.PROJECT_BUILT_IMAGES}
    images = [image for image in versions.PINNED_IMAGES if args.project_built or image.tagged not in project]

    lock = read_lock(args.lock)
    today = datetime.date.today().isoformat()
    updated, stale, errors = refresh(images, lock, Resolver(overrides, args.timeout).digest, today)
    for line in stale:
        print(("stale: " if args.check else "updated: ") + line)
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    if not args.check and stale:
        write_lock(args.lock, updated)
    if errors:
        return EXIT_ERROR
    if args.check and stale:
        return EXIT_STALE
    print(f"{len(images)} image pins current" if not stale else f"{len(stale)} digests written to {args.lock}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
