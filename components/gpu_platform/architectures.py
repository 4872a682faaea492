"""What the platform runs on arm64 (Grace-Blackwell) GPU nodes, and why each piece can run there: data, and the rule
the reference workloads share (`reference_image_problem`: their image must be published for arm64).

A chart or image earns its place in `ARM64_ON_GPU_NODES` with the evidence that its GPU-node pods are published for
arm64; `SYSTEM_NODES_ONLY` holds the charts whose pods never land on GPU nodes (they tolerate none of the
accelerator taints), so their architecture does not matter there. ``tests/test_arm64.py`` plans every stack with an
arm64 pool and fails on a Helm release or a DaemonSet image in neither table.
"""

from typing import Any, Optional

from . import catalog, versions

ARM64_ON_GPU_NODES: dict[str, str] = {
    versions.GPU_OPERATOR.name: "NVIDIA/gpu-operator multi-arch.mk builds --platform=linux/amd64,linux/arm64 (operator "
                                "and operands: GFD, toolkit, validator, DCGM exporter, MIG manager; NVIDIA's platform "
                                "support lists Arm64 (Grace) with Ubuntu)",
    versions.DRA_DRIVER.name: "kubernetes-sigs/dra-driver-nvidia-gpu deployments/container/Makefile builds "
                              "--platform=linux/amd64,linux/arm64",
    versions.NETWORK_OPERATOR.name: "Mellanox/network-operator CI builds linux/amd64,linux/arm64; the DOCA driver "
                                    "container is tagged per architecture and the operator appends the node's",
    versions.KUBE_PROMETHEUS_STACK.name: "its GPU-node pod is node-exporter: prometheus/node_exporter Makefile "
                                         "DOCKER_ARCHS amd64 arm64 ...",
    versions.DCGM_EXPORTER.name: "NVIDIA/dcgm-exporter Makefile PLATFORMS linux/amd64,linux/arm64",
    versions.DEVICE_PLUGIN.name: "NVIDIA/k8s-device-plugin deployments/container/multi-arch.mk "
                                 "--platform=linux/amd64,linux/arm64",
    versions.EFA_DEVICE_PLUGIN.name: "aws/eks-charts aws-efa-k8s-device-plugin values list Graviton and "
                                     "p6e-gb200/p6e-gb300 instance types in the DaemonSet's node affinity",
    versions.CALICO_NODE_IMAGE.tagged: "image_digests.json: the multi-arch index, built for x86_64 and arm64",
    versions.NODE_PROBLEM_DETECTOR_IMAGE.tagged: "kubernetes/node-problem-detector Makefile DOCKER_PLATFORMS="
                                                 "linux/amd64,linux/arm64 (docker buildx build --platform)",
    versions.PLATFORM_IMAGE.tagged: "this repository's Dockerfile: a pure-Python install on "
                                    "python:3.11.7-slim-bookworm (published for amd64 and arm64v8), built with "
                                    "--platform linux/amd64,linux/arm64; it reports the active checks on GPU nodes",
}
"""Charts (by chart name) and images (by ``repository:tag``) whose pods run on GPU nodes, with the evidence that
they are published for arm64."""

SYSTEM_NODES_ONLY: frozenset[str] = frozenset({
    versions.KUEUE.name, versions.KEDA.name, versions.VPA.name, versions.CLUSTER_AUTOSCALER.name,
    versions.KARPENTER.name, versions.CERT_MANAGER.name, versions.JOBSET.name,
    # The gateway layer: Envoy Gateway's controller and its Envoy pods (the platform's EnvoyProxy sets no toleration),
    # Envoy AI Gateway's controller and CRDs.
    versions.ENVOY_GATEWAY.name, versions.ENVOY_AI_GATEWAY.name, versions.ENVOY_AI_GATEWAY_CRDS.name,
})
"""Charts whose pods tolerate no accelerator taint: they run on the (x86) system nodes only."""


def reference_image_problem(pool: Any, image: str) -> Optional[str]:
    """A reference workload on an arm64 pool (Grace-Blackwell) runs only an image published for arm64
    (`versions.ARM64_WORKLOAD_IMAGES`): the problem with running ``image`` on ``pool`` (a `GpuPool`), or None."""
    if pool.architecture == catalog.ARM64 and image not in versions.ARM64_WORKLOAD_IMAGES:
        return f"pool '{pool.name}' has arm64 nodes and the reference image {image} is built for amd64 only"
    return None
