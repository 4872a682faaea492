"""Image pins: the digest lock `versions` reads, and scripts/refresh-image-digests.py against a fake OCI registry
on 127.0.0.1 (anonymous bearer-token challenge, manifest HEAD/GET), never the real ones."""

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpu_platform import versions

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "refresh-image-digests.py"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"


def load_script():
    spec = importlib.util.spec_from_file_location("refresh_image_digests", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


refresh = load_script()


# ---------------------------------------------------------------------------------------------------------
# The pins themselves


def test_the_health_layers_images_are_pinned_by_their_published_digests():
    # node-problem-detector: the digest the promotion to registry.k8s.io copied (kubernetes/k8s.io#9707); DCGM: the
    # UBI 10 build NVIDIA's GPU Operator v26.7.0 bundle pins (its ubuntu24.04 tag has no published digest).
    assert versions.NODE_PROBLEM_DETECTOR_IMAGE.reference == (
        "registry.k8s.io/node-problem-detector/node-problem-detector:v1.36.0"
        "@sha256:b4db5a168c5f6192c3fb3d650920d192d83776598fcdfcc092d16ca8dc9213ff")
    assert versions.DCGM_IMAGE.reference == (
        "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubi10"
        "@sha256:92080d86d04c265f7fc0b8e1cd95dff94d3ab57de6a6474c3c483e4c2ada5dea")
    assert versions.HEALTH_UNPINNED_IMAGES == {}


def test_lock_holds_one_well_formed_digest_per_pinned_third_party_image():
    lock = json.loads(versions.IMAGE_DIGESTS_FILE.read_text())
    project = {image.tagged for image in versions.PROJECT_BUILT_IMAGES}
    # A third-party pin still without a digest is named in UNPINNED_IMAGES with its reason (neuron-monitor: no
    # digest could be resolved offline); `make digests` resolves it like the others.
    unresolved = {image.tagged for image in versions.PINNED_IMAGES if image.repository in versions.UNPINNED_IMAGES}
    third_party = {image.tagged for image in versions.PINNED_IMAGES} - project
    assert third_party - unresolved <= set(lock) <= {image.tagged for image in versions.PINNED_IMAGES}
    assert unresolved - project == {"public.ecr.aws/neuron/neuron-monitor:1.3.0"} - set(lock)
    for key, entry in lock.items():
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", entry["digest"]), key
        assert entry["source"], key


def test_references_carry_tag_and_digest():
    assert versions.TRAINING_IMAGE.reference == (
        "nvcr.io/nvidia/pytorch:26.06-py3@sha256:43c018d6a12963f1a1bad85ef8574b5c2a978eec2be0ebcacfb87f69e0d210e1")
    assert versions.RDMA_SHARED_DEVICE_PLUGIN_IMAGE.reference == (
        "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin:network-operator-v26.1.2"
        "@sha256:a2ea9cb60f1ce50d109650daca7e074b38cb9ac6a88bed78e266ef99c012782e")
    # Built by this project: the tag alone until a release pushes the image and records its digest.
    assert versions.INFERENCE_IMAGE.reference == "ghcr.io/gpu-platform/sentiment-inference:0.1.0"
    assert versions.PLATFORM_IMAGE.reference == "ghcr.io/gpu-platform/gpu-platform:0.1.0"
    assert versions.Image("r/x", "1", "sha256:" + "a" * 64).reference == "r/x:1@sha256:" + "a" * 64


def test_nic_cluster_policy_pulls_the_plugin_by_digest_and_the_driver_by_tag():
    from gpu_platform.accelerators import rdma_specs

    assert rdma_specs.image_spec(versions.RDMA_SHARED_DEVICE_PLUGIN_IMAGE) == {
        "image": "k8s-rdma-shared-dev-plugin", "repository": "nvcr.io/nvidia/mellanox",
        "version": "sha256:a2ea9cb60f1ce50d109650daca7e074b38cb9ac6a88bed78e266ef99c012782e"}
    assert rdma_specs.image_spec(versions.DOCA_DRIVER_IMAGE) == {
        "image": "doca-driver", "repository": "nvcr.io/nvidia/mellanox", "version": "doca3.3.0-26.01-1.0.0.0-0"}


def test_the_new_vendor_images_are_pinned_in_the_lock():
    assert versions.ROCM_TRAINING_IMAGE.reference == (
        "docker.io/rocm/pytorch:rocm7.14_ubuntu24.04_py3.12_pytorch_release_2.11.0"
        "@sha256:a223aee17aef5d21c3b9f63436dd19d27d1c665ec8b2f40011c9546cabae2a80")
    assert versions.TPU_EXAMPLE_IMAGE.reference == (
        "docker.io/library/python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea")
    assert {versions.ROCM_TRAINING_IMAGE, versions.TPU_EXAMPLE_IMAGE, versions.NEURON_MONITOR_IMAGE} <= set(
        versions.PINNED_IMAGES)


def test_the_inference_stack_default_is_the_pinned_image_of_the_pool_vendor():
    from gpu_platform import catalog
    from gpu_platform.config_model import InferenceConfig

    # No image in the stack: the app's image for the inference pool's vendor.
    assert InferenceConfig().image is None
    assert versions.INFERENCE_IMAGES == {catalog.NVIDIA: versions.INFERENCE_IMAGE, catalog.AMD:
                                         versions.ROCM_INFERENCE_IMAGE, catalog.AWS_NEURON:
                                         versions.NEURON_INFERENCE_IMAGE}
    assert {versions.INFERENCE_IMAGE.reference, versions.ROCM_INFERENCE_IMAGE.reference,
            versions.NEURON_INFERENCE_IMAGE.reference} == {"ghcr.io/gpu-platform/sentiment-inference:0.1.0",
                                                           "ghcr.io/gpu-platform/sentiment-inference:0.1.0-rocm",
                                                           "ghcr.io/gpu-platform/sentiment-inference:0.1.0-neuron"}
    assert set(versions.INFERENCE_IMAGES.values()) <= set(versions.PINNED_IMAGES)


@pytest.mark.parametrize(("repository", "expected"), [
    ("nvcr.io/nvidia/pytorch", ("nvcr.io", "nvidia/pytorch")),
    ("ghcr.io/gpu-platform/gpu-platform", ("ghcr.io", "gpu-platform/gpu-platform")),
    ("python", ("docker.io", "library/python")),
    ("calico/node", ("docker.io", "calico/node")),
    ("localhost:5000/x", ("localhost:5000", "x")),
])
def test_repository_names_split_into_registry_and_path(repository, expected):
    assert refresh.split_repository(repository) == expected


def test_bearer_challenge_is_parsed():
    assert refresh.parse_challenge('Bearer realm="https://nvcr.io/proxy_auth",scope="repository:nvidia/pytorch:pull"') \
        == ("bearer", {"realm": "https://nvcr.io/proxy_auth", "scope": "repository:nvidia/pytorch:pull"})


# ---------------------------------------------------------------------------------------------------------
# A fake registry: token service plus manifests, bounded in time


class FakeRegistry:
    """Serves ``manifests[(path, tag)] = body`` behind an anonymous bearer-token challenge, like nvcr.io/ghcr.io."""

    TOKEN = "anonymous-pull-token"

    def __init__(self, manifests: dict, digest_on_head: bool = True):
        self.manifests = manifests
        self.digest_on_head = digest_on_head
        self.log: list[tuple[str, str, str]] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _manifest(self, send_body: bool):
                registry.log.append((self.command, self.path, self.headers.get("Authorization", "")))
                match = re.fullmatch(r"/v2/(.+)/manifests/([^/]+)", self.path)
                if not match:
                    return self._send(404, b"")
                if self.headers.get("Authorization") != f"Bearer {registry.TOKEN}":
                    challenge = (f'Bearer realm="{registry.url}/token",service="fake-registry",'
                                 f'scope="repository:{match[1]}:pull"')
                    return self._send(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                                      {"WWW-Authenticate": challenge})
                body = registry.manifests.get((match[1], match[2]))
                if body is None:
                    return self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
                assert INDEX_TYPE in self.headers.get("Accept", "")
                headers = {"Content-Type": INDEX_TYPE}
                if registry.digest_on_head or send_body:
                    headers["Docker-Content-Digest"] = "sha256:" + hashlib.sha256(body).hexdigest()
                self._send(200, body if send_body else b"", headers, length=len(body))

            def _send(self, code, body, headers=None, length=None):
                self.send_response(code)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def do_HEAD(self):  # noqa: N802
                self._manifest(send_body=False)

            def do_GET(self):  # noqa: N802
                if self.path.startswith("/token?"):
                    registry.log.append(("GET", self.path, ""))
                    return self._send(200, json.dumps({"token": registry.TOKEN}).encode(),
                                      {"Content-Type": "application/json"})
                self._manifest(send_body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.timeout = 5
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        # Stops by itself even if a test never reaches its cleanup.
        self.deadline = threading.Timer(120, self.server.shutdown)

    def __enter__(self):
        self.thread.start()
        self.deadline.start()
        return self

    def __exit__(self, *exc):
        self.deadline.cancel()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def index_body(name: str) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": [], "annotations": {"n": name}},
                      sort_keys=True).encode()


def sha(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


PYTORCH = versions.Image("nvcr.io/nvidia/pytorch", "26.06-py3")
PLUGIN = versions.Image("nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin", "network-operator-v26.1.2")


@pytest.mark.parametrize("digest_on_head", [True, False], ids=["head-header", "hash-of-get"])
def test_resolver_answers_the_token_challenge_and_reads_the_digest(digest_on_head):
    body = index_body("pytorch")
    with FakeRegistry({("nvidia/pytorch", "26.06-py3"): body}, digest_on_head) as fake:
        resolver = refresh.Resolver({"nvcr.io": fake.url}, timeout=5)
        assert resolver.digest("nvcr.io/nvidia/pytorch", "26.06-py3") == sha(body)
    # Anonymous first, then the token for exactly this repository's pull scope, then the authorised request.
    assert fake.log[0] == ("HEAD", "/v2/nvidia/pytorch/manifests/26.06-py3", "")
    assert fake.log[1] == ("GET", "/token?scope=repository%3Anvidia%2Fpytorch%3Apull&service=fake-registry", "")
    assert fake.log[2] == ("HEAD", "/v2/nvidia/pytorch/manifests/26.06-py3", "Bearer anonymous-pull-token")
    # Without the header on HEAD: one GET with the token already held, the digest is the hash of its body.
    assert fake.log[3:] == ([] if digest_on_head else [
        ("GET", "/v2/nvidia/pytorch/manifests/26.06-py3", "Bearer anonymous-pull-token")])


def test_unknown_tag_is_an_error_not_a_digest():
    with FakeRegistry({}) as fake:
        resolver = refresh.Resolver({"nvcr.io": fake.url}, timeout=5)
        with pytest.raises(refresh.RegistryError, match="HTTP 404"):
            resolver.digest("nvcr.io/nvidia/pytorch", "99.99-py3")


def test_refresh_updates_changed_pins_and_keeps_the_others():
    new = sha(b"new")
    lock = {PYTORCH.tagged: {"digest": sha(b"old"), "source": "x"}, PLUGIN.tagged: {"digest": sha(b"p"), "source": "y"},
            "other/image:1": {"digest": sha(b"o"), "source": "z"}}
    resolved = {PYTORCH.tagged: new, PLUGIN.tagged: sha(b"p")}
    updated, stale, errors = refresh.refresh([PYTORCH, PLUGIN], lock, lambda r, t: resolved[f"{r}:{t}"], "2026-01-02")
    assert stale == [f"nvcr.io/nvidia/pytorch:26.06-py3: {sha(b'old')} -> {new}"] and errors == []
    assert updated[PYTORCH.tagged] == {"digest": new, "source": "nvcr.io registry, resolved 2026-01-02"}
    assert updated[PLUGIN.tagged] == lock[PLUGIN.tagged] and updated["other/image:1"] == lock["other/image:1"]


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_command_line_writes_the_lock_then_check_passes_and_catches_a_moved_tag(tmp_path):
    """The real PINNED_IMAGES against the fake registry, on a copy of the lock."""
    lock = tmp_path / "image_digests.json"
    lock.write_text("{}\n")
    bodies = {("nvidia/pytorch", "26.06-py3"): index_body("pytorch"),
              ("nvidia/mellanox/k8s-rdma-shared-dev-plugin", "network-operator-v26.1.2"): index_body("plugin"),
              ("calico/node", "v3.31.3"): index_body("calico node"),
              ("calico/kube-controllers", "v3.31.3"): index_body("calico kube-controllers"),
              ("rocm/pytorch", versions.ROCM_TRAINING_IMAGE.tag): index_body("rocm pytorch"),
              ("neuron/neuron-monitor", "1.3.0"): index_body("neuron-monitor"),
              ("library/python", "3.12-slim"): index_body("python"),
              ("vllm/vllm-openai", "v0.31.0"): index_body("vllm"),
              ("gateway-api-inference-extension/epp", "v1.5.0"): index_body("epp"),
              ("nvidia/cloud-native/dcgm", versions.DCGM_IMAGE.tag): index_body("dcgm"),
              ("node-problem-detector/node-problem-detector", "v1.36.0"): index_body("npd")}
    with FakeRegistry(bodies) as fake:
        hosts = ("nvcr.io", "quay.io", "docker.io", "public.ecr.aws", "registry.k8s.io")
        registries = [arg for host in hosts for arg in ("--registry", f"{host}={fake.url}")]
        common = ["--lock", str(lock), "--timeout", "5", *registries]
        check = run_script("--check", *common)
        assert check.returncode == 1 and lock.read_text() == "{}\n"  # --check never writes
        assert "stale: nvcr.io/nvidia/pytorch:26.06-py3: no digest -> " in check.stdout

        written = run_script(*common)
        assert written.returncode == 0, written.stderr
        recorded = json.loads(lock.read_text())
        assert {key: entry["digest"] for key, entry in recorded.items()} == {
            "nvcr.io/nvidia/pytorch:26.06-py3": sha(bodies[("nvidia/pytorch", "26.06-py3")]),
            "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin:network-operator-v26.1.2":
                sha(bodies[("nvidia/mellanox/k8s-rdma-shared-dev-plugin", "network-operator-v26.1.2")]),
            "quay.io/calico/node:v3.31.3": sha(bodies[("calico/node", "v3.31.3")]),
            "docker.io/calico/kube-controllers:v3.31.3": sha(bodies[("calico/kube-controllers", "v3.31.3")]),
            versions.ROCM_TRAINING_IMAGE.tagged: sha(bodies[("rocm/pytorch", versions.ROCM_TRAINING_IMAGE.tag)]),
            "public.ecr.aws/neuron/neuron-monitor:1.3.0": sha(bodies[("neuron/neuron-monitor", "1.3.0")]),
            "docker.io/library/python:3.12-slim": sha(bodies[("library/python", "3.12-slim")]),
            "docker.io/vllm/vllm-openai:v0.31.0": sha(bodies[("vllm/vllm-openai", "v0.31.0")]),
            "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0":
                sha(bodies[("gateway-api-inference-extension/epp", "v1.5.0")]),
            versions.DCGM_IMAGE.tagged: sha(bodies[("nvidia/cloud-native/dcgm", versions.DCGM_IMAGE.tag)]),
            versions.NODE_PROBLEM_DETECTOR_IMAGE.tagged:
                sha(bodies[("node-problem-detector/node-problem-detector", "v1.36.0")]),
        }
        assert run_script("--check", *common).returncode == 0

        # The publisher moves the tag: the pin is stale and --check says which one.
        fake.manifests[("nvidia/pytorch", "26.06-py3")] = index_body("pytorch rebuilt")
        moved = run_script("--check", *common)
        assert moved.returncode == 1
        assert moved.stdout.startswith("stale: nvcr.io/nvidia/pytorch:26.06-py3: ")
        assert "k8s-rdma-shared-dev-plugin" not in moved.stdout

        # Project-built images are resolved only when asked (after the release pushed them): not pushed -> error.
        missing = run_script("--check", "--project-built", *common, "--registry", f"ghcr.io={fake.url}")
        assert missing.returncode == 2
        assert "ghcr.io/gpu-platform/gpu-platform:0.1.0: HTTP 404" in missing.stderr


def test_unreachable_registry_exits_2(tmp_path):
    lock = tmp_path / "image_digests.json"
    lock.write_text("{}\n")
    result = run_script("--check", "--lock", str(lock), "--registry", "nvcr.io=http://127.0.0.1:9", "--timeout", "2")
    assert result.returncode == 2 and "error: nvcr.io/nvidia/pytorch:26.06-py3" in result.stderr
