"""Every pod the platform renders, in every reference stack: hardened security contexts, writable paths on emptyDirs
only, no service-account token unless the pod calls the API, and every image pinned by digest.

A new pod template or a new image anywhere in a reference stack's manifests is checked here without touching this
file; the only ways past a check are the named exemptions below and `versions.UNPINNED_IMAGES`, each with its reason.
"""

import pytest

from gpu_platform import plan, versions

STACKS = sorted(plan.discover_stacks())

POD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
    "Pod": (),
}
"""Where each workload kind keeps the pod it runs."""
POD_SECURITY_CONTEXT = {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
                        "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SECURITY_CONTEXT = {
    "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
API_CLIENTS = {("CronJob", "gpu-optimizer"): "lists and patches workloads through the Kubernetes API"}
"""Pods that keep a service-account token, and why; every other platform pod has none."""
THIRD_PARTY_PODS: dict[tuple[str, str], str] = {
    ("DaemonSet", "calico-node"): "Calico's node agent as Oracle documents it for OKE: privileged, host network "
                                  "(it programs the node's iptables)",
    ("Deployment", "calico-kube-controllers"): "Calico's controllers as published in calico-policy-only.yaml "
                                               "(an API client: it keeps its token)",
}
"""(kind, name) of pods rendered from an upstream manifest and run as published (e.g. a privileged node agent),
with the reason; their images are still checked for digests."""
PLATFORM_PODS = {("Job", "reference-training"), ("CronJob", "reference-retraining"), ("Deployment", "sentiment"),
                 ("CronJob", "gpu-optimizer")}
"""The pods every reference stack ships."""


@pytest.fixture(scope="module")
def manifests():
    """Every Kubernetes object of every reference stack (each stack planned once)."""
    out = {}
    for stack in STACKS:
        result = plan.plan_stack(stack, plan.discover_stacks()[stack])
        assert result.errors == [], (stack, result.errors)
        out[stack] = result.manifests
    return out


def pod_templates(objects):
    """((kind, name), pod template) of every workload among ``objects``."""
    for obj in objects:
        path = POD_TEMPLATE_PATHS.get(obj["kind"])
        if path is None:
            continue
        template = obj
        for key in path:
            template = template[key]
        yield (obj["kind"], obj["metadata"]["name"]), template


def containers(pod_spec):
    return [*pod_spec.get("initContainers", []), *pod_spec["containers"]]


def image_references(node):
    """Every image an object names: pod ``image`` fields and the Network Operator's repository/image/version."""
    if isinstance(node, dict):
        if {"image", "repository", "version"} <= set(node) and isinstance(node["version"], str):
            # NicClusterPolicy ImageSpec: the operator pulls <repository>/<image>@<version> for a sha256 version,
            # <repository>/<image>:<version> otherwise (network-operator pkg/render/render.go imagePath).
            separator = "@" if node["version"].startswith("sha256:") else ":"
            yield f"{node['repository']}/{node['image']}{separator}{node['version']}"
        elif isinstance(node.get("image"), str):
            yield node["image"]
        for value in node.values():
            yield from image_references(value)
    elif isinstance(node, list):
        for value in node:
            yield from image_references(value)


def repository_of(reference: str) -> str:
    name = reference.split("@", 1)[0]
    head, _, last = name.rpartition("/")
    return f"{head}/{last.split(':', 1)[0]}" if head else last.split(":", 1)[0]


@pytest.mark.parametrize("stack", STACKS)
def test_every_reference_stack_ships_the_platform_pods(manifests, stack):
    found = {key for key, _ in pod_templates(manifests[stack])}
    assert found >= PLATFORM_PODS, sorted(found)


@pytest.mark.parametrize("stack", STACKS)
def test_platform_pods_run_hardened(manifests, stack):
    checked = 0
    for key, template in pod_templates(manifests[stack]):
        if key in THIRD_PARTY_PODS:
            continue
        spec = template["spec"]
        assert spec["securityContext"] == POD_SECURITY_CONTEXT, key
        for container in containers(spec):
            assert container["securityContext"] == CONTAINER_SECURITY_CONTEXT, (key, container["name"])
        checked += 1
    assert checked >= len(PLATFORM_PODS)


@pytest.mark.parametrize("stack", STACKS)
def test_only_api_clients_mount_a_service_account_token(manifests, stack):
    for key, template in pod_templates(manifests[stack]):
        if key in THIRD_PARTY_PODS:
            continue
        # Explicit either way: the pod's field wins over whatever its ServiceAccount says.
        assert template["spec"]["automountServiceAccountToken"] is (key in API_CLIENTS), key


@pytest.mark.parametrize("stack", STACKS)
def test_writes_go_to_empty_dirs_and_home_is_writable(manifests, stack):
    """A read-only root: /tmp is an emptyDir in every container and HOME points into a writable mount."""
    for key, template in pod_templates(manifests[stack]):
        if key in THIRD_PARTY_PODS:
            continue
        spec = template["spec"]
        empty_dirs = {v["name"] for v in spec.get("volumes", []) if "emptyDir" in v}
        for container in containers(spec):
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            assert mounts.get("/tmp") in empty_dirs, (key, container["name"], mounts)
            writable = [path for path, name in mounts.items() if name in empty_dirs]
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            home = env.get("HOME", "")
            assert any(home == path or home.startswith(path + "/") for path in writable), (key, home)
        if "dshm" in {v["name"] for v in spec["volumes"]}:
            # NCCL's shared memory stays in RAM, not on the node's disk.
            assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in spec["volumes"], key


@pytest.mark.parametrize("stack", STACKS)
def test_every_image_is_pinned_by_digest(manifests, stack):
    references = [ref for obj in manifests[stack] for ref in image_references(obj)]
    assert references, "the stack names images"
    for reference in references:
        if "@sha256:" in reference:
            digest = reference.split("@", 1)[1]
            assert len(digest) == len("sha256:") + 64 and digest[7:].isalnum(), reference
        else:
            assert repository_of(reference) in versions.UNPINNED_IMAGES, (
                f"{reference} has no digest: pin it in versions.py and run `make digests`, or list its "
                "repository in versions.UNPINNED_IMAGES with the reason")


def test_reference_stacks_pull_the_pinned_training_and_rdma_images(manifests):
    azure = manifests["azure-dev"]
    references = {ref for obj in azure for ref in image_references(obj)}
    assert {
        "nvcr.io/nvidia/pytorch:26.06-py3@sha256:43c018d6a12963f1a1bad85ef8574b5c2a978eec2be0ebcacfb87f69e0d210e1",
        "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin@sha256:"
        "a2ea9cb60f1ce50d109650daca7e074b38cb9ac6a88bed78e266ef99c012782e",
        # A tag prefix the operator completes per node pool (versions.UNPINNED_IMAGES).
        "nvcr.io/nvidia/mellanox/doca-driver:doca3.3.0-26.01-1.0.0.0-0",
        # Built by this project's release; no digest until it is pushed.
        "ghcr.io/gpu-platform/sentiment-inference:0.1.0",
        "ghcr.io/gpu-platform/gpu-platform:0.1.0",
    } == references


def test_every_exemption_has_a_reason():
    assert set(versions.UNPINNED_IMAGES) == {"ghcr.io/gpu-platform/sentiment-inference",
                                             "ghcr.io/gpu-platform/gpu-platform",
                                             "nvcr.io/nvidia/mellanox/doca-driver"}
    assert all(reason.strip() for reason in versions.UNPINNED_IMAGES.values())
    assert all(reason.strip() for reason in (*API_CLIENTS.values(), *THIRD_PARTY_PODS.values()))
