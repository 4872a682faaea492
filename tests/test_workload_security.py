"""Every pod the platform renders, in every reference stack: hardened security contexts, writable paths on emptyDirs
only, no service-account token unless the pod calls the API, and every image pinned by digest.

A new pod template or a new image anywhere in a reference stack's manifests is checked here without touching this
file; the only ways past a check are the named exemptions below and `versions.UNPINNED_IMAGES`, each with its reason.
"""

import copy

import pytest
from conftest import planned_stack

from gpu_platform import catalog, config, plan, versions
from gpu_platform.accelerators import tpu_objects
from gpu_platform.autoscaling import autoscaling_plan
from gpu_platform.serving import workloads

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
"""Where each workload kind keeps the pod it runs (JobSets: every replicated Job's pod, `pod_templates`)."""
POD_SECURITY_CONTEXT = {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
                        "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SECURITY_CONTEXT = {
    "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
API_CLIENTS = {("CronJob", "gpu-optimizer"): "lists and patches workloads through the Kubernetes API",
               ("Deployment", "llm-epp"): "the LLM service's endpoint picker watches its InferencePool and the pool's "
                                          "pods through the Kubernetes API (a Role in its namespace)",
               ("Deployment", "gpu-remediation"): "the health layer's remediation controller lists, and unless in "
                                                  "dry-run patches, nodes and records Events",
               ("CronJob", "gpu-health-dispatch"): "the health checks' dispatcher lists nodes and pods and creates "
                                                   "each check's Job bound to an idle node"}
"""Pods that keep a service-account token, and why; every other platform pod has none."""
THIRD_PARTY_PODS: dict[tuple[str, str], str] = {
    ("DaemonSet", "calico-node"): "Calico's node agent as Oracle documents it for OKE: privileged, host network "
                                  "(it programs the node's iptables)",
    ("Deployment", "calico-kube-controllers"): "Calico's controllers as published in calico-policy-only.yaml "
                                               "(an API client: it keeps its token)",
    ("DaemonSet", "neuron-monitor"): "AWS's neuron-monitor DaemonSet as published (aws-neuron-sdk "
                                     "src/k8/k8s-neuron-monitor-daemonset.yml): privileged, to read the Neuron "
                                     "driver's counters on the node",
    ("DaemonSet", "gpu-node-problem-detector"): "node-problem-detector as its upstream manifest runs it "
                                                "(deployment/node-problem-detector.yaml@v1.36.0): privileged, to read "
                                                "the host's /dev/kmsg; it keeps its token to patch its node's status",
}
"""(kind, name) of pods rendered from an upstream manifest and run as published (e.g. a privileged node agent),
with the reason; their images are still checked for digests."""
UNHARDENED_EXAMPLES: dict[tuple[str, str], str] = {
    ("JobSet", tpu_objects.EXAMPLE_NAME): "the TPU slice example (accelerators/tpu_objects.py) pip-installs jax[tpu] "
                                          "into the python image's own site-packages when it starts, as the image's "
                                          "root user with a writable root filesystem and a service-account token; "
                                          "it drops every "
                                          "capability and privilege escalation, but not root (a component change, "
                                          "not made yet)",
}
"""(kind, name) of platform pods that do not meet the hardened security contexts yet, with the reason; their images
are still checked for digests."""
ROOT_SETUP_PODS: dict[tuple[str, str], str] = {
    ("Job", "shared-file-system-directories"): "the storage layer's one-off Job (storage/storage_objects.py) creates "
                                               "the claims' directories in a new file system, whose root belongs to "
                                               "root: it runs as root, without any capability or privilege escalation, "
                                               "with "
                                               "a read-only root filesystem and no token",
}
"""(kind, name) of platform pods that must run as root, with the reason; their images are still checked."""
EXEMPT_PODS = {**THIRD_PARTY_PODS, **UNHARDENED_EXAMPLES, **ROOT_SETUP_PODS}
HEALTH_CHECK_PODS = ("CronJob", "gpu-health-check-")
HEALTH_CHECK_REASON = (
    "the active health check (one CronJob per pool, health/health_objects.py): its DCGM diagnostic runs as root with "
    "SYS_ADMIN (DCGM's host engine and profiling counters), so the pod cannot be non-root; its all-reduce and "
    "reporter containers are hardened, and the reporter keeps the token to label its node")


def exempt(key: tuple[str, str]) -> bool:
    """Whether a pod is exempt from the hardened contexts (`EXEMPT_PODS`, the health checks of every pool)."""
    return key in EXEMPT_PODS or (key[0] == HEALTH_CHECK_PODS[0] and key[1].startswith(HEALTH_CHECK_PODS[1]))
TRAINING_PODS = {("Job", "reference-training"), ("CronJob", "reference-retraining")}
INFERENCE_PODS = {("Deployment", "sentiment")}
OPTIMIZER_PODS = {("CronJob", "gpu-optimizer")}
NEURON_PODS = {("DaemonSet", "neuron-monitor")}
TPU_EXAMPLE_PODS = {("JobSet", tpu_objects.EXAMPLE_NAME)}
LLM_PODS = {("Deployment", "llm"), ("Deployment", "llm-epp")}


def stack_config(stack: str) -> config.PlatformConfig:
    """The parsed configuration of a reference stack."""
    return config.parse_config(config.strip_namespace(plan.load_stack_file(plan.discover_stacks()[stack])), stack)


def platform_pods(stack: str) -> set[tuple[str, str]]:
    """The pods a reference stack ships, from its configuration: the reference training job where the training
    layer builds one, the inference app where inference is on and has a pool, the optimizer where it runs (NVIDIA
    or AMD pools with monitoring), neuron-monitor on Neuron pools, the TPU slice example on a TPU training pool."""
    cfg = stack_config(stack)
    pools = cfg.gpu_pools()
    pods = set()
    if autoscaling_plan.training_namespace(cfg, pools) is not None:
        pods |= TRAINING_PODS
    if cfg.inference.enabled and workloads.chosen_pool(cfg, pools) is not None:
        pods |= INFERENCE_PODS
    if cfg.runs_optimizer:
        pods |= OPTIMIZER_PODS
    if any(p.vendor == catalog.AWS_NEURON for p in pools):
        pods |= NEURON_PODS
    if autoscaling_plan.reference_tpu_slice(cfg, pools) is not None:
        pods |= TPU_EXAMPLE_PODS
    if cfg.llm is not None:
        pods |= LLM_PODS
    return pods


EXPECTED_PODS = {
    # aws-dev also serves an LLM (vLLM and its endpoint picker) on its L4 pool.
    "aws-dev": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS | LLM_PODS,
    "aws-karpenter": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "azure-dev": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "existing": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "gcp-dev": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "oci-dev": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    # Neuron: training off (no Neuron variant of the reference job), no NVIDIA pool for the optimizer.
    "aws-neuron": INFERENCE_PODS | NEURON_PODS,
    # AMD: the ROCm training image and inference app; the optimizer (AMD exporter's per-pod signal).
    "azure-mi300x": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "oci-mi300x": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    # TPU: inference off, the JobSet example instead of the reference job.
    "gcp-tpu": TPU_EXAMPLE_PODS,
    # Racks: the training job on the DRA rack pool (claims, ComputeDomain), the app on the H100 device-plugin pool.
    "aws-gb200": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "azure-gb200": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "gcp-a4x": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "oci-gb200": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    # MultiKueue: the manager's reference workloads are off (they would be dispatched), its workers run them.
    "mk-manager": OPTIMIZER_PODS,
    "mk-worker-us": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
    "mk-worker-eu": TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS,
}
"""What `platform_pods` must derive for each reference stack (checks the derivation itself)."""


@pytest.fixture(scope="module")
def manifests():
    """Every Kubernetes object of every reference stack (each stack planned once)."""
    out = {}
    for stack in STACKS:
        result = planned_stack(stack)
        assert result.errors == [], (stack, result.errors)
        out[stack] = result.manifests
    return out


def pod_templates(objects):
    """((kind, name), pod template) of every workload among ``objects``."""
    for obj in objects:
        key = (obj["kind"], obj["metadata"]["name"])
        if obj["kind"] == "JobSet":
            # jobset.x-k8s.io: spec.replicatedJobs[].template is a JobTemplateSpec.
            for replicated in obj["spec"]["replicatedJobs"]:
                yield key, replicated["template"]["spec"]["template"]
            continue
        path = POD_TEMPLATE_PATHS.get(obj["kind"])
        if path is None:
            continue
        template = obj
        for key_ in path:
            template = template[key_]
        yield key, template


def containers(pod_spec):
    return [*pod_spec.get("initContainers", []), *pod_spec["containers"]]


UNWALKED_IMAGE_FIELDS = {
    ("amd.com/v1alpha1", "DeviceConfig", ("spec", "driver", "image")):
        "the repository the AMD GPU Operator pushes the driver image it builds on the node to and pulls it from "
        "(stack key amdDriverImage); the operator appends a tag per node kernel, so it cannot carry a digest",
}
"""(apiVersion, kind, field path) of image fields that name no pullable image of their own, with the reason: the
walker skips that one field of that kind of object, and nothing else of it."""


def _without_unwalked_fields(obj: dict) -> dict:
    for (api_version, kind, path), _ in UNWALKED_IMAGE_FIELDS.items():
        if obj.get("apiVersion") == api_version and obj.get("kind") == kind:
            parent = obj
            for key in path[:-1]:
                parent = parent.get(key) if isinstance(parent, dict) else None
            if isinstance(parent, dict) and path[-1] in parent:
                obj = copy.deepcopy(obj)
                parent = obj
                for key in path[:-1]:
                    parent = parent[key]
                del parent[path[-1]]
    return obj


def image_references(node):
    """Every image an object names: pod ``image`` fields and the Network Operator's repository/image/version (not
    the fields of `UNWALKED_IMAGE_FIELDS`)."""
    if isinstance(node, dict) and "kind" in node and "apiVersion" in node:
        node = _without_unwalked_fields(node)
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


def test_each_stack_expects_the_pods_its_configuration_builds():
    assert {stack: platform_pods(stack) for stack in STACKS} == EXPECTED_PODS


@pytest.mark.parametrize("stack", STACKS)
def test_every_reference_stack_ships_the_platform_pods(manifests, stack):
    found = {key for key, _ in pod_templates(manifests[stack])}
    expected = platform_pods(stack)
    assert found >= expected, sorted(found)
    # Nothing of a layer the configuration leaves out.
    layers = TRAINING_PODS | INFERENCE_PODS | OPTIMIZER_PODS | NEURON_PODS | TPU_EXAMPLE_PODS | LLM_PODS
    assert not (found & layers) - expected, sorted(found)


@pytest.mark.parametrize("stack", STACKS)
def test_platform_pods_run_hardened(manifests, stack):
    checked = set()
    for key, template in pod_templates(manifests[stack]):
        if exempt(key):
            continue
        spec = template["spec"]
        assert spec["securityContext"] == POD_SECURITY_CONTEXT, key
        for container in containers(spec):
            assert container["securityContext"] == CONTAINER_SECURITY_CONTEXT, (key, container["name"])
        checked.add(key)
    assert platform_pods(stack) - set(EXEMPT_PODS) <= checked


@pytest.mark.parametrize("stack", STACKS)
def test_only_api_clients_mount_a_service_account_token(manifests, stack):
    for key, template in pod_templates(manifests[stack]):
        if exempt(key):
            continue
        # Explicit either way: the pod's field wins over whatever its ServiceAccount says.
        assert template["spec"]["automountServiceAccountToken"] is (key in API_CLIENTS), key


@pytest.mark.parametrize("stack", STACKS)
def test_writes_go_to_empty_dirs_and_home_is_writable(manifests, stack):
    """A read-only root: /tmp is an emptyDir in every container and HOME points into a writable mount."""
    for key, template in pod_templates(manifests[stack]):
        if exempt(key):
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
        # The health layer's node-problem-detector and DCGM diagnostic, by digest (image_digests.json).
        versions.NODE_PROBLEM_DETECTOR_IMAGE.reference, versions.DCGM_IMAGE.reference,
    } == references


def test_the_new_vendor_stacks_pull_their_images(manifests):
    def references(stack):
        return {ref for obj in manifests[stack] for ref in image_references(obj)}

    rocm = versions.ROCM_TRAINING_IMAGE.reference
    assert rocm == ("docker.io/rocm/pytorch:rocm7.14_ubuntu24.04_py3.12_pytorch_release_2.11.0"
                    "@sha256:a223aee17aef5d21c3b9f63436dd19d27d1c665ec8b2f40011c9546cabae2a80")
    assert references("aws-neuron") == {"public.ecr.aws/neuron/neuron-monitor:1.3.0",
                                        "ghcr.io/gpu-platform/sentiment-inference:0.1.0-neuron",
                                        # The health layer's remediation controller (NeuronHealth).
                                        "ghcr.io/gpu-platform/gpu-platform:0.1.0"}
    assert references("azure-mi300x") == {
        rocm, "ghcr.io/gpu-platform/sentiment-inference:0.1.0-rocm", "ghcr.io/gpu-platform/gpu-platform:0.1.0",
        "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin@sha256:"
        "a2ea9cb60f1ce50d109650daca7e074b38cb9ac6a88bed78e266ef99c012782e",
        "nvcr.io/nvidia/mellanox/doca-driver:doca3.3.0-26.01-1.0.0.0-0",
        versions.NODE_PROBLEM_DETECTOR_IMAGE.reference}
    assert references("oci-mi300x") == {
        rocm, "ghcr.io/gpu-platform/sentiment-inference:0.1.0-rocm", "ghcr.io/gpu-platform/gpu-platform:0.1.0",
        "nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin@sha256:"
        "a2ea9cb60f1ce50d109650daca7e074b38cb9ac6a88bed78e266ef99c012782e",
        versions.CALICO_NODE_IMAGE.reference, versions.CALICO_KUBE_CONTROLLERS_IMAGE.reference,
        versions.NODE_PROBLEM_DETECTOR_IMAGE.reference}
    assert references("gcp-tpu") == {
        "docker.io/library/python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea",
        # The health layer's remediation controller (GKE's KernelDeadlock and ReadonlyFilesystem on TPU nodes).
        "ghcr.io/gpu-platform/gpu-platform:0.1.0"}


def test_the_walker_skips_only_the_amd_driver_build_target(manifests):
    (device_config,) = [m for m in manifests["azure-mi300x"] if m["kind"] == "DeviceConfig"]
    # The stack's amdDriverImage, a repository without a tag: the operator tags each build per kernel.
    assert device_config["spec"]["driver"]["image"] == "gpuplatformexample.azurecr.io/amdgpu-driver"
    assert list(image_references(device_config)) == []
    # Any other image in the same object, or the same field in another kind, is still walked.
    other = copy.deepcopy(device_config)
    other["spec"]["metricsExporter"]["image"] = "docker.io/rocm/device-metrics-exporter:v1.5.1"
    assert list(image_references(other)) == ["docker.io/rocm/device-metrics-exporter:v1.5.1"]
    assert list(image_references({**device_config, "kind": "Other"})) == [
        "gpuplatformexample.azurecr.io/amdgpu-driver"]
    assert device_config["spec"]["driver"]["image"] == "gpuplatformexample.azurecr.io/amdgpu-driver"  # not mutated


def test_every_exemption_has_a_reason():
    assert set(versions.UNPINNED_IMAGES) == {"ghcr.io/gpu-platform/sentiment-inference",
                                             "ghcr.io/gpu-platform/gpu-platform",
                                             "nvcr.io/nvidia/mellanox/doca-driver",
                                             "public.ecr.aws/neuron/neuron-monitor"}
    assert set(THIRD_PARTY_PODS) == {("DaemonSet", "calico-node"), ("Deployment", "calico-kube-controllers"),
                                     ("DaemonSet", "neuron-monitor"), ("DaemonSet", "gpu-node-problem-detector")}
    assert set(UNHARDENED_EXAMPLES) == {("JobSet", "tpu-slice-check")}
    assert set(UNWALKED_IMAGE_FIELDS) == {("amd.com/v1alpha1", "DeviceConfig", ("spec", "driver", "image"))}
    assert all(reason.strip() for reason in versions.UNPINNED_IMAGES.values())
    assert all(reason.strip() for reason in (*API_CLIENTS.values(), *THIRD_PARTY_PODS.values(),
                                             *UNHARDENED_EXAMPLES.values(), *UNWALKED_IMAGE_FIELDS.values(),
                                             HEALTH_CHECK_REASON))


def test_every_reference_stack_plans_health_and_dry_run_remediation(manifests):
    """Issue 21: every stack watches its accelerator nodes and remediates in dry-run by default: NVIDIA and AMD stacks
    with node-problem-detector and active checks, Neuron on its own detector's condition, TPU on GKE's."""
    import json

    from gpu_platform.health import health_objects

    for stack, objects in manifests.items():
        kinds = {(o["kind"], o["metadata"]["name"]) for o in objects
                 if o["metadata"].get("namespace") == health_objects.NAMESPACE}
        assert ("Deployment", health_objects.REMEDIATION_NAME) in kinds, stack
        config = next(o for o in objects if o["kind"] == "ConfigMap"
                      and o["metadata"]["name"] == health_objects.REMEDIATION_NAME)
        policy = json.loads(config["data"][health_objects.REMEDIATION_CONFIG_FILE])
        assert policy["mode"] == "dry-run", stack
        has_gpus = stack not in ("aws-neuron", "gcp-tpu")
        assert any(kind == "DaemonSet" for kind, _ in kinds) == has_gpus, stack  # node-problem-detector
        assert any(kind == "CronJob" for kind, _ in kinds) == has_gpus, stack  # active checks
        expected = {"aws-neuron": ["NeuronHealth"], "gcp-tpu": ["KernelDeadlock", "ReadonlyFilesystem"]}.get(stack)
        if expected is not None:
            assert policy["fatalConditions"] == expected
        else:
            assert {"GpuXidFatal", "GpuFellOffBus", "GpuHealthCheckFailed"} <= set(policy["fatalConditions"]), stack
