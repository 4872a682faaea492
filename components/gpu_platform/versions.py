"""Every pinned Helm chart, repository and image tag the platform deploys.

No chart version literal may appear anywhere else. Each pin was checked against the chart's ``values.yaml``
at that version (every values key the platform sets exists there).

Images are pinned by tag and digest: the tags are here, the digests they resolved to in ``image_digests.json``
(written by ``scripts/refresh-image-digests.py``, ``make digests``), so a tag moved by its publisher never
changes what the platform runs.
"""

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Chart:
    """A Helm chart pinned to one released version."""

    name: str
    """Chart name, or the full ``oci://`` reference for OCI registries."""
    version: str
    repository: str = ""
    """Helm repository URL; empty for ``oci://`` charts."""

    def release_args(self) -> dict:
        """The chart/version/repository part of a ``kubernetes.helm.v3.Release``."""
        args = {"chart": self.name, "version": self.version}
        if self.repository:
            args["repository_opts"] = {"repo": self.repository}
        return args


@dataclass(frozen=True)
class Image:
    """A container image pinned to a tag and, once resolved, the digest the tag pointed to."""

    repository: str
    """Registry host and repository path, e.g. ``nvcr.io/nvidia/pytorch``."""
    tag: str
    digest: str = ""
    """``sha256:<hex>`` of the tag's manifest (the multi-arch index where there is one); empty while unresolved."""

    @property
    def tagged(self) -> str:
        """``repository:tag``: the key of the image in ``image_digests.json``."""
        return f"{self.repository}:{self.tag}"

    @property
    def reference(self) -> str:
        """What a pod's ``image`` field gets: ``repository:tag@digest`` (the runtime pulls by the digest; the tag
        stays for people), or ``repository:tag`` while no digest is known."""
        return f"{self.tagged}@{self.digest}" if self.digest else self.tagged


IMAGE_DIGESTS_FILE = Path(__file__).with_name("image_digests.json")
"""The digest each pinned tag resolved to: ``{"repository:tag": {"digest": ..., "source": ...}}``."""
_IMAGE_DIGESTS: dict = json.loads(IMAGE_DIGESTS_FILE.read_text(encoding="utf-8"))


def pinned(repository: str, tag: str) -> Image:
    """The image at ``tag`` with the digest ``image_digests.json`` records for it (none: not resolved yet)."""
    entry = _IMAGE_DIGESTS.get(f"{repository}:{tag}", {})
    return Image(repository, tag, entry.get("digest", ""))


NVIDIA_HELM_REPO = "https://helm.ngc.nvidia.com/nvidia"

# NVIDIA GPU and RDMA stack. GPU Operator v26.7.0 (tag of 2026-08-20, the newest v26.7.x tag of NVIDIA/gpu-operator
# whose values.yaml could be read; keys: tests/data/chart_keys/gpu-operator-v26.7.0.keys). The device plugin chart
# is the plugin release the operator itself bundles (v26.7.0 values: devicePlugin.version v0.20.0; chart 0.20.0,
# NVIDIA/k8s-device-plugin tag of 2026-08-19), so both modes run the same plugin. Network Operator: NVIDIA paired
# 26.3.x with Network Operator 26.1.x (Cloud Native Stack 26.6.0); no pairing for GPU Operator 26.7 was found, and
# the Network Operator docs (v26.4.0 "Platform Support") list 26.1.x as deprecated, still patched: the pin stays
# at v26.1.2 (its NicClusterPolicy, image digest and keys were checked at that tag) until a pairing is published.
GPU_OPERATOR = Chart("gpu-operator", "v26.7.0", NVIDIA_HELM_REPO)
DEVICE_PLUGIN = Chart("nvidia-device-plugin", "0.20.0", "https://nvidia.github.io/k8s-device-plugin")
NETWORK_OPERATOR = Chart("network-operator", "v26.1.2", NVIDIA_HELM_REPO)
DCGM_EXPORTER = Chart("dcgm-exporter", "4.8.2", "https://nvidia.github.io/dcgm-exporter/helm-charts")
EFA_DEVICE_PLUGIN = Chart("aws-efa-k8s-device-plugin", "v0.5.30", "https://aws.github.io/eks-charts")
HAMI = Chart("hami", "2.10.0", "https://project-hami.github.io/HAMi/")
# NVIDIA's DRA driver for GPUs, v0.4.1 (2026-06-30): the project moved from NVIDIA/k8s-dra-driver-gpu to
# kubernetes-sigs/dra-driver-nvidia-gpu, switched to SemVer (v25.12 -> 0.3, v26.4 -> 0.4) and renamed the chart
# dra-driver-nvidia-gpu, published on registry.k8s.io (docs/upgrade.md@v0.4.1). v0.4.1 is the newest release whose
# tag could be checked: v0.5.0 was released on 2026-08-19 (kubernetes-sigs/dra-driver-nvidia-gpu#1365, #1367) and
# GPU Operator v26.7.0 names its image, but the repository snapshot readable here stops at 2026-08-08 (main at
# 0.5.0-dev, no v0.5.0 tag), and a values.yaml found at an untagged commit cannot be tied to the release (it adds a
# ComputeDomain v1beta1/v1beta2 conversion webhook needing cert-manager, a change to check at the tag). Values keys:
# tests/data/chart_keys/dra-driver-nvidia-gpu-0.4.1.keys; ComputeDomain schema in crd_schemas/resource.nvidia.com.
DRA_DRIVER = Chart("oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "0.4.1")
DRA_MIN_KUBERNETES = "1.34"
"""The oldest Kubernetes minor the pinned DRA driver runs on as the platform installs it: resource.k8s.io/v1 is served
from 1.34, where DRA is GA (the driver's docs ask for 1.34.2 or later, kubernetes/kubernetes#133920; the managed
clouds' 1.34 clusters are past that patch)."""
# Images the platform names itself (the charts' own images stay at their chart defaults).
RDMA_SHARED_DEVICE_PLUGIN_IMAGE = pinned("nvcr.io/nvidia/mellanox/k8s-rdma-shared-dev-plugin",
                                         "network-operator-v26.1.2")
"""The RDMA shared device plugin in the NicClusterPolicy (upstream example CR at
Mellanox/network-operator@v26.1.2:example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml). Its digest is the one
NVIDIA lists for this tag (Mellanox/network-operator-docs docs/advanced/images-sha256.rst, release v26.1.2)."""
DOCA_DRIVER_IMAGE = Image("nvcr.io/nvidia/mellanox/doca-driver", "doca3.3.0-26.01-1.0.0.0-0")
"""The DOCA-OFED driver container the Network Operator builds on AKS nodes (same upstream example CR). The tag is
a prefix: the operator appends each node pool's OS and architecture, so it has no digest of its own
(`UNPINNED_IMAGES`)."""
HAMI_KUBE_SCHEDULER_REGISTRY = ("registry.k8s.io", "kube-scheduler")
"""Registry and repository of the kube-scheduler HAMi runs next to its extender; the tag follows the cluster's own
Kubernetes version (chart default), the upstream registry replaces the chart's mirror in Hangzhou."""
GKE_COS_DRIVER_INSTALLER = (
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "f2cf4197a5c3f0f20133be15d5fad8b7453beed5/nvidia-driver-installer/cos/daemonset-preloaded.yaml"
)
"""Google's COS driver-installer DaemonSet pinned to a commit: with the GPU Operator on GKE the node pools disable
GKE's automatic driver install, and NVIDIA's GKE guide installs the driver with this DaemonSet."""
# Kueue 0.19.2 (2026-08-20): chart version = git tag without the "v" (hack/helm-chart-package.sh); stores
# kueue.x-k8s.io/v1beta2 (storage version since 0.16). Values keys checked in charts/kueue/values.yaml@v0.19.2.
KUEUE = Chart("oci://registry.k8s.io/kueue/charts/kueue", "0.19.2")
# kube-prometheus-stack 88.5.3 (prometheus-operator v0.93.1; subcharts grafana 12.11.1 from grafana-community,
# kube-state-metrics 8.4.0 = v2.20.0). Keys we set: tests/data/chart_keys/kube-prometheus-stack-88.5.3.keys.
KUBE_PROMETHEUS_STACK = Chart("kube-prometheus-stack", "88.5.3", "https://prometheus-community.github.io/helm-charts")
# KEDA 2.20.2 (chart version = app version): autoscales the reference inference app on its queue depth through a
# ScaledObject (keda.sh/v1alpha1, CRD installed by the chart: crds.install). Values keys we set checked in
# kedacore/charts@v2.20.2:keda/values.yaml (tests/data/chart_keys/keda-2.20.2.keys).
KEDA = Chart("keda", "2.20.2", "https://kedacore.github.io/charts")
# Node and workload autoscalers.
# Karpenter 1.14.1 (OCI chart public.ecr.aws/karpenter/karpenter, chart version = release tag; supports Kubernetes
# 1.30-1.36 per its compatibility matrix). Values keys checked in aws/karpenter-provider-aws@v1.14.1:
# charts/karpenter/values.yaml (tests/data/chart_keys/karpenter-1.14.1.keys); NodePool/EC2NodeClass schemas from
# the same tag's pkg/apis/crds.
KARPENTER = Chart("oci://public.ecr.aws/karpenter/karpenter", "1.14.1")
# cluster-autoscaler chart 9.43.1 (kubernetes/autoscaler charts/cluster-autoscaler/Chart.yaml, appVersion 1.31.0).
# Its image follows the cluster's Kubernetes minor (the autoscaler simulates that minor's scheduler):
# CLUSTER_AUTOSCALER_IMAGE_TAGS. Values keys: tests/data/chart_keys/cluster-autoscaler-9.43.1.keys.
CLUSTER_AUTOSCALER = Chart("cluster-autoscaler", "9.43.1", "https://kubernetes.github.io/autoscaler")
CLUSTER_AUTOSCALER_IMAGE_TAGS = {"1.33": "v1.33.1", "1.34": "v1.34.0", "1.35": "v1.35.0", "1.36": "v1.36.1"}
"""registry.k8s.io/autoscaling/cluster-autoscaler tag per Kubernetes minor of the EKS versions the platform pins
(1.36: kubernetes/autoscaler tag cluster-autoscaler-1.36.1; the chart's ``image.tag`` overrides its appVersion, so
the 9.43.1 chart runs it unchanged)."""
# Fairwinds vpa chart 5.0.0 = Vertical Pod Autoscaler 1.7.1 (FairwindsOps/charts@5f478fce:stable/vpa; its crds/
# directory installs autoscaling.k8s.io/v1). Values keys: tests/data/chart_keys/vpa-5.0.0.keys.
VPA = Chart("vpa", "5.0.0", "https://charts.fairwinds.com/stable")
# Network policy engine beside a cloud CNI that enforces no NetworkPolicy (OKE's VCN-native CNI): open source
# Calico in policy-only mode, installed from its manifest (no Helm chart: the tigera-operator chart only knows the
# eni/azv/gke/cali interface prefixes, tigera/operator pkg/render/node.go, and OKE's pods use "oci"). Calico
# v3.31.3 (2025-12-18), the newest v3.31 patch for which a published digest of both images could be found (none
# for v3.31.4-7): Calico's e2e runs v3.31 on Kubernetes stable, stable-1 and stable-2 (1.33-1.35, projectcalico
# discussion #11717); Oracle's own tested list (contengsettingupcalico.htm, 2025-01) stops at 3.28.2 on
# Kubernetes 1.31. The platform's default Kubernetes is 1.36 (config_model.DEFAULT_KUBERNETES_VERSION), one minor
# past the range Calico's v3.31 e2e covers: moving to a Calico release tested on 1.36 is still to do. Objects are
# rendered by security/network_policy_engine.py from projectcalico/calico@v3.31.3:manifests/calico-policy-only.yaml;
# the CRDs are that tag's manifests/crds.yaml (identical to the CRDs in the policy-only manifest), pinned by commit.
CALICO_NODE_IMAGE = pinned("quay.io/calico/node", "v3.31.3")
"""calico-node (Felix). Digest: the one two unrelated public repositories pin for this tag on quay.io."""
CALICO_KUBE_CONTROLLERS_IMAGE = pinned("docker.io/calico/kube-controllers", "v3.31.3")
"""calico-kube-controllers, from Docker Hub (Calico publishes the same images there and on quay.io): the registry
whose digest for this tag was found. That digest is the linux/amd64 image (the public script that pins it pins
another for arm64), not the multi-arch index; ``scripts/refresh-image-digests.py`` replaces it with the index."""
CALICO_CRDS_MANIFEST = ("https://raw.githubusercontent.com/projectcalico/calico/"
                        "2e3c880bcabff580ddd7a08340878ede207f37be/manifests/crds.yaml")
"""Calico v3.31.3's CustomResourceDefinitions (crd.projectcalico.org/v1, AdminNetworkPolicy) at the tag's commit."""

# Kubernetes API versions of the custom resources the platform creates.
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
PROMETHEUS_OPERATOR_API_VERSION = "monitoring.coreos.com/v1"
KEDA_API_VERSION = "keda.sh/v1alpha1"
KARPENTER_API_VERSION = "karpenter.sh/v1"
KARPENTER_AWS_API_VERSION = "karpenter.k8s.aws/v1"
VPA_API_VERSION = "autoscaling.k8s.io/v1"

TRAINING_IMAGE = pinned("nvcr.io/nvidia/pytorch", "26.06-py3")
"""NGC PyTorch container (PyTorch 2.13, CUDA, NCCL) the reference training job runs; the digest is the tag's
multi-arch index (amd64 and arm64 nodes pull the same reference)."""
ROCM_TRAINING_IMAGE = pinned("docker.io/rocm/pytorch", "rocm7.14_ubuntu24.04_py3.12_pytorch_release_2.11.0")
"""AMD's ROCm PyTorch container (PyTorch 2.11, HIP, RCCL), what the reference training job runs on AMD Instinct
pools: ``torch.cuda`` is HIP there and the ``nccl`` process-group backend is RCCL, so the same script runs. amd64 only
(every Instinct shape the catalog holds is x86)."""
TRAINING_IMAGES = {"nvidia": TRAINING_IMAGE, "amd": ROCM_TRAINING_IMAGE}
"""The reference training job's image per accelerator vendor (`catalog.VENDORS` keys): PyTorch DDP over NCCL or
RCCL. AWS Neuron (torch-neuronx over XLA) and Google TPUs (JAX/PyTorch-XLA slices) need other programs."""

# EKS managed add-ons per Kubernetes minor (EKS add-on versions, `aws eks describe-addon-versions`).
# kube-proxy and CoreDNS follow the Kubernetes minor, so every supported minor has its own row. vpc-cni must be
# >= v1.18.5 for `efa-only` network interfaces (EKS user guide latest/ug/ml/node-efa.adoc).
# Sources: EKS user guide add-on tables (CoreDNS v1.12.3-eksbuild.1 for 1.33) and public EKS stacks pinning
# these exact builds for each minor; EKS rejects a version it does not publish, so a typo fails the deploy.
EKS_ADDONS: dict[str, dict[str, str]] = {
    "1.33": {"vpc-cni": "v1.19.5-eksbuild.3", "coredns": "v1.12.1-eksbuild.2", "kube-proxy": "v1.33.0-eksbuild.2",
             "eks-pod-identity-agent": "v1.3.7-eksbuild.2"},
    "1.34": {"vpc-cni": "v1.20.4-eksbuild.2", "coredns": "v1.12.3-eksbuild.1", "kube-proxy": "v1.34.0-eksbuild.2",
             "eks-pod-identity-agent": "v1.3.10-eksbuild.2"},
    "1.35": {"vpc-cni": "v1.21.1-eksbuild.7", "coredns": "v1.13.2-eksbuild.4", "kube-proxy": "v1.35.3-eksbuild.2",
             "eks-pod-identity-agent": "v1.3.10-eksbuild.3"},
    # 1.36: the builds a public EKS 1.36 cluster resolved to in August 2026 (its deployment record; a second
    # public 1.36 stack pins older builds of the same versions: coredns v1.14.3, kube-proxy v1.36.0, pod identity
    # v1.3.10-eksbuild.3).
    "1.36": {"vpc-cni": "v1.22.4-eksbuild.3", "coredns": "v1.14.3-eksbuild.16", "kube-proxy": "v1.36.0-eksbuild.21",
             "eks-pod-identity-agent": "v1.3.10-eksbuild.3"},
}

# --- AWS Neuron charts and images ---
# Neuron Helm chart 1.10.0 (OCI chart public.ecr.aws/neuron/neuron-helm-chart, the install path of the Neuron docs
# aws-neuron/aws-neuron-sdk@v2.32.0 deploy/eks/helm-chart.rst; chart digest
# sha256:ed5d8f73b7a05d3a1edf17b2bfaf277ea995ad1c65b115fa8ba2c7b4dc649346): device plugin, scheduler extension
# (neuron-scheduler) and node problem detector, Neuron images 2.32.0.0; also a DRA driver and an UltraServer operator,
# both off by default. Values keys checked against the full `helm show values ... --version 1.10.0` output printed in
# a public write-up (2026-09-11), not against the chart's source repository (aws-neuron/neuron-helm-charts: the
# snapshots available here stop at 1.1.2) (tests/data/chart_keys/neuron-helm-chart-1.10.0.keys; its
# neuronInstances list in neuron-helm-chart-1.10.0.instance-types).
NEURON_HELM_CHART = Chart("oci://public.ecr.aws/neuron/neuron-helm-chart", "1.10.0")
NEURON_MONITOR_IMAGE = pinned("public.ecr.aws/neuron/neuron-monitor", "1.3.0")
"""neuron-monitor with its Prometheus exporter (port 8000), the DaemonSet of the Neuron docs (aws-neuron/aws-neuron-sdk
@v2.32.0 src/k8/k8s-neuron-monitor-daemonset.yml; chart 1.10.0 has no monitor). No digest could be resolved offline
(`NEURON_UNPINNED_IMAGES`)."""
NEURON_UNPINNED_IMAGES: dict[str, str] = {} if NEURON_MONITOR_IMAGE.digest else {
    NEURON_MONITOR_IMAGE.repository: "public ECR digest not resolved yet; scripts/refresh-image-digests.py resolves it"}
"""Neuron images named without a digest, with the reason (to fold into `UNPINNED_IMAGES`)."""

# --- AMD charts and images ---
# AMD GPU Operator v1.5.1 (2026-07-22, newest release tag of ROCm/gpu-operator; chart name gpu-operator-charts,
# chart version = tag, Helm repository https://rocm.github.io/gpu-operator per docs/installation/kubernetes-helm.md).
# Values keys checked in ROCm/gpu-operator@v1.5.1:helm-charts-k8s/values.yaml
# (tests/data/chart_keys/gpu-operator-charts-v1.5.1.keys); the DeviceConfig schema is that tag's
# helm-charts-k8s/crds/deviceconfig-crd.yaml. The operator requires cert-manager (same install guide).
AMD_GPU_OPERATOR = Chart("gpu-operator-charts", "v1.5.1", "https://rocm.github.io/gpu-operator")
# cert-manager v1.21.1 (2026-07-29, newest stable tag of cert-manager/cert-manager; the jetstack chart's version is
# the tag). Values keys checked in cert-manager/cert-manager@v1.21.1:deploy/charts/cert-manager/values.yaml
# (tests/data/chart_keys/cert-manager-v1.21.1.keys).
CERT_MANAGER = Chart("cert-manager", "v1.21.1", "https://charts.jetstack.io")
AMD_API_VERSION = "amd.com/v1alpha1"
"""API version of the AMD GPU Operator's DeviceConfig (the CRD's only served version at v1.5.1)."""

# --- Gateway API: the entry point of the inference services (serving/gateway.py) ---
# Gateway API v1.6.1 (2026-07-16, newest stable tag of kubernetes-sigs/gateway-api; 1.6-CHANGELOG.md), standard
# channel: the release asset standard-install.yaml (hack/build-install-yaml.sh@v1.6.1 concatenates
# config/crd/standard/*.yaml) holds GatewayClass, Gateway, HTTPRoute, GRPCRoute, ReferenceGrant, BackendTLSPolicy,
# ListenerSet, TLSRoute, TCPRoute and UDPRoute v1, plus the safe-upgrades ValidatingAdmissionPolicy
# (admissionregistration.k8s.io/v1: Kubernetes >= 1.30) that refuses experimental CRDs over standard ones. Applied
# server-side like upstream's `kubectl apply --server-side`. Not on GKE, whose Gateway controller installs and owns
# the CRDs. Schemas of the kinds the platform renders: crd_schemas/gateway.networking.k8s.io (same tag).
GATEWAY_API_CRDS_MANIFEST = ("https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.1/"
                             "standard-install.yaml")
GATEWAY_API_API_VERSION = "gateway.networking.k8s.io/v1"
# Envoy Gateway v1.9.0 (2026-08-15; built on Gateway API v1.6.1, whose v1.6 conformance report it passes in full for
# GATEWAY-HTTP core and extended, conformance/reports/v1.6/envoy-gateway): the implementation on EKS, AKS, OKE and
# existing clusters. OCI chart oci://docker.io/envoyproxy/gateway-helm, chart version = the tag with its "v"
# (tools/make/helm.mk CHART_VERSION = VERSION); images left at the chart's defaults (docker.io/envoyproxy/gateway
# :v1.9.0, data plane envoyproxy/envoy:distroless-v1.39.0). Its chart installs the *experimental* Gateway API CRDs,
# which the standard bundle's admission policy refuses, so the chart's CRDs stay off (crds.enabled: false, skip_crds)
# and Envoy Gateway's own CRDs come from the release asset envoy-gateway-crds.yaml (`helm template
# charts/gateway-crds-helm --set crds.envoyGateway.enabled=true`: Envoy Gateway's kinds only, tools/make/kube.mk,
# uploaded by .github/workflows/release.yaml). Supported on Kubernetes 1.33-1.36 (site/.../releases/matrix.md).
# Values keys: tests/data/chart_keys/gateway-helm-v1.9.0.keys (+ .envoy-gateway-config.keys for config.envoyGateway).
ENVOY_GATEWAY = Chart("oci://docker.io/envoyproxy/gateway-helm", "v1.9.0")
ENVOY_GATEWAY_CRDS_MANIFEST = "https://github.com/envoyproxy/gateway/releases/download/v1.9.0/envoy-gateway-crds.yaml"
ENVOY_GATEWAY_API_VERSION = "gateway.envoyproxy.io/v1alpha1"
ENVOY_GATEWAY_MIN_KUBERNETES = "1.33"
"""The oldest Kubernetes minor Envoy Gateway v1.9 supports (its compatibility matrix: 1.33-1.36)."""
# Envoy AI Gateway v1.1.0 (2026-08-21, newest release of envoyproxy/ai-gateway): Envoy Gateway's extension server that
# resolves HTTPRoute backendRefs to InferencePools (inference.networking.k8s.io/v1), installed only where a stack
# serves an LLM. OCI charts oci://docker.io/envoyproxy/ai-gateway-crds-helm and ai-gateway-helm, chart version = the
# tag (Makefile helm-package, .github/workflows/release.yaml HELM_CHART_VERSION=${TAG}). Built on Envoy Gateway v1.8.1
# and Gateway API v1.5.1 (go.mod, release-notes/v1.1.0.md); its compatibility matrix asks for Envoy Gateway v1.8.1 or
# later. The Envoy Gateway values it needs are manifests/envoy-gateway-values.yaml plus
# examples/inference-pool/envoy-gateway-values-addon.yaml at the tag. Values keys:
# tests/data/chart_keys/ai-gateway-helm-v1.1.0.keys (the CRD chart takes none).
ENVOY_AI_GATEWAY = Chart("oci://docker.io/envoyproxy/ai-gateway-helm", "v1.1.0")
ENVOY_AI_GATEWAY_CRDS = Chart("oci://docker.io/envoyproxy/ai-gateway-crds-helm", "v1.1.0")
# With Envoy AI Gateway, Envoy Gateway watches InferencePools (`INFERENCE_POOL_CRDS_MANIFEST`, below with the LLM
# service's pins) as an extension backend from its start: the gateway layer applies that CRD before it.
GKE_NETWORKING_API_VERSION = "networking.gke.io/v1"
"""GCPBackendPolicy and HealthCheckPolicy (schemas from GoogleCloudPlatform/gke-gateway-api@fc40d606, 2026-04-29)."""
CERT_MANAGER_API_VERSION = "cert-manager.io/v1"
"""ClusterIssuer and Certificate (schemas from the cert-manager v1.21.1 chart's CRDs)."""

# --- Google TPU charts and images ---
# JobSet 0.12.0 (kubernetes-sigs/jobset tag v0.12.0, 2026-05-08; the newest release, v0.13.0-devel is a development
# tag): the controller behind multi-host TPU workloads (one Job per slice, a pod per VM with stable hostnames; GKE's
# TPU multi-host examples use it). OCI chart oci://registry.k8s.io/jobset/charts/jobset, chart version = tag without
# the "v" (hack/helm-chart-package.sh, charts/jobset/README.md `helm install ... --version 0.12.0`); the packaged
# chart's image is registry.k8s.io/jobset/jobset:v0.12.0 (left at the chart's default). It installs the
# jobset.x-k8s.io/v1alpha2 CRD from its crds/ directory. Values keys checked in charts/jobset/values.yaml@v0.12.0
# (tests/data/chart_keys/jobset-0.12.0.keys).
JOBSET = Chart("oci://registry.k8s.io/jobset/charts/jobset", "0.12.0")
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
TPU_EXAMPLE_IMAGE = pinned("docker.io/library/python", "3.12-slim")
"""The example multi-host TPU JobSet's image: a plain Python that installs ``jax[tpu]`` when it starts, as GKE's
own TPU JobSet examples do (no JAX TPU image with a published digest could be found offline)."""

INFERENCE_IMAGE = pinned("ghcr.io/gpu-platform/sentiment-inference", "0.1.0")
"""The reference inference app (examples/inference-app/Dockerfile, CUDA variant), built by this project."""
ROCM_INFERENCE_IMAGE = pinned("ghcr.io/gpu-platform/sentiment-inference", "0.1.0-rocm")
"""The same app, ROCm variant (examples/inference-app/Dockerfile with a ROCm wheel index): AMD Instinct pools."""
NEURON_INFERENCE_IMAGE = pinned("ghcr.io/gpu-platform/sentiment-inference", "0.1.0-neuron")
"""The same app on AWS's Neuron inference container (examples/inference-app/Dockerfile.neuron, ``DEVICE=neuron``):
Inferentia2/Trainium pools."""
INFERENCE_IMAGES = {"nvidia": INFERENCE_IMAGE, "amd": ROCM_INFERENCE_IMAGE, "aws-neuron": NEURON_INFERENCE_IMAGE}
"""The reference inference app's image per accelerator vendor (`catalog.VENDORS` keys); there is no TPU variant."""
ARM64_WORKLOAD_IMAGES = frozenset({TRAINING_IMAGE.tagged})
"""Reference workload images published for arm64 (Grace-Blackwell pools): the NGC PyTorch index has a linux/arm64
manifest (``image_digests.json``). The inference app's images are built for amd64 only (examples/inference-app), the
ROCm one too."""

# --- The LLM service (serving/llm.py) ---
# vLLM v0.31.0 (2026-10-04), the newest release whose image digest could be read here (v0.32.0's docs exist, no
# published digest was found). The default tag is a multi-arch index (amd64 and arm64) built on CUDA 13.0, so its
# nodes need NVIDIA driver R580 or newer (llm.image takes the "-cu129" tag for older drivers). Its entrypoint is
# `vllm serve`: the Deployment passes arguments only. Server arguments, /health, /metrics and the metric names
# (monitoring/metric_names.py) are those of the vLLM docs at this release.
VLLM_IMAGE = pinned("docker.io/vllm/vllm-openai", "v0.31.0")
"""vLLM's OpenAI-compatible server (the LLM service's model server and its download step)."""
# Gateway API Inference Extension v1.5.0 (2026-04-18): the InferencePool API (inference.networking.k8s.io/v1, the
# only version of the CRD at this release; v1.5.0 dropped the v1alpha2 inference.networking.x-k8s.io pool) and the
# last release that ships the endpoint picker (EPP) itself: v1.6.0 (2026-08-10) moved the EPP to llm-d/llm-d-router,
# whose v0.10.0 is built against this same v1.5.0 API and installs the same CRD manifest. The upgrade path is the
# llm-d router's picker (ghcr.io/llm-d/llm-d-router-endpoint-picker) behind the same InferencePool: only the EPP's
# Deployment changes. The platform renders the EPP's objects itself (serving/llm_objects.py), from the v1.5.0
# `inferencepool` chart's templates (config/charts/inferencepool, config/charts/epplib), so every object is
# schema-checked in the plan and runs under Pod Security restricted.
INFERENCE_POOL_API_VERSION = "inference.networking.k8s.io/v1"
INFERENCE_POOL_CRDS_MANIFEST = ("https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/"
                                "v1.5.0/v1-manifests.yaml")
"""The release's CRD manifest holding only the v1 InferencePool (``manifests.yaml`` adds the x-k8s.io alpha APIs the
service does not use); the schema the plan validates against is crd_schemas/inference.networking.k8s.io/v1."""
ENDPOINT_PICKER_IMAGE = pinned("registry.k8s.io/gateway-api-inference-extension/epp", "v1.5.0")
"""The endpoint picker (ext-proc gRPC server the gateway asks which model server takes a request). linux/amd64 only:
the release builds it with GOARCH=amd64 (Dockerfile@v1.5.0)."""

# Images the platform builds itself (Dockerfile at the repository root: the library with its optimizer).
PLATFORM_IMAGE = pinned("ghcr.io/gpu-platform/gpu-platform", "0.1.0")
"""The library with ``gpu-platform optimize`` (the optimizer CronJob), built by this project."""

# --- The storage layer (storage/data_plane.py) ---
# csi-rclone 0.6.0 (SwissDataScienceCenter/csi-rclone, tag v0.6.0 of 2026-02-05, the newest release; commits to
# 2026-04-10, the Renku platform's driver). Its publish-chart.yaml runs chartpress on every tag, which publishes the
# chart to SwissDataScienceCenter/helm-charts (chartpress.yaml: published https://swissdatasciencecenter.github.io/
# helm-charts; README: `helm repo add renku ...`, `helm install csi-rclone renku/csi-rclone`) at the tag without its
# leading v, with the image renku/csi-rclone at the tag (rclone fork v1.71.2+renku-1: the Dockerfile's
# ghcr.io/swissdatasciencecenter/rclone, commit e7b6a64). OCI buckets (clouds/oci/storage_options.py).
CSI_RCLONE = Chart("csi-rclone", "0.6.0", "https://swissdatasciencecenter.github.io/helm-charts")
CSI_DRIVER_CHARTS: dict[str, Chart] = {"csi-rclone": CSI_RCLONE}
"""CSI drivers the storage layer installs with Helm (a cloud's `storage_backends.CsiDriverChart` names its entry):
those no cloud add-on covers. The cloud layers' storage modules add their pins here."""
# Azure Lustre CSI driver v0.4.0 (kubernetes-sigs/azurelustre-csi-driver, tag of 2026-04-01, commit 9011a5f, the newest
# tag; the repository is maintained). No AKS add-on installs it and upstream releases no Helm chart (the tag's
# charts/ holds only a README: Helm "is currently unsupported"), so the storage layer applies the six
# manifests of the tag's deploy/install-driver.sh, in its order, each pinned by the tag in its URL. The node plugin
# comes in two DaemonSets selected by `kubernetes.azure.com/os-sku-effective`: -jammy (Ubuntu2204, Ubuntu2004) and
# -noble (Ubuntu2404); AKS's `Ubuntu` OS SKU is 22.04 before Kubernetes 1.35 and 24.04 from 1.35.
AZURELUSTRE_CSI_DRIVER_VERSION = "v0.4.0"
_AZURELUSTRE_DEPLOY = ("https://raw.githubusercontent.com/kubernetes-sigs/azurelustre-csi-driver/"
                       f"{AZURELUSTRE_CSI_DRIVER_VERSION}/deploy/")
CSI_DRIVER_MANIFESTS: dict[str, tuple[str, ...]] = {
    "azurelustre-csi-driver": tuple(_AZURELUSTRE_DEPLOY + f for f in (
        "rbac-csi-azurelustre-controller.yaml", "rbac-csi-azurelustre-node.yaml", "csi-azurelustre-driver.yaml",
        "csi-azurelustre-controller.yaml", "csi-azurelustre-node-jammy.yaml", "csi-azurelustre-node-noble.yaml")),
}
"""CSI drivers the storage layer applies from pinned upstream manifests (a cloud's `storage_backends.CsiDriverManifests`
names its entry), in order: those with neither a cloud add-on nor a released chart. The provider reads each URL when
the stack is deployed; the offline plan records the ``ConfigFile``."""
PRE_PULL_HOLDER_IMAGE = PLATFORM_IMAGE
"""The image of the pre-pull DaemonSet's one long-running container (``sleep infinity``, a few MB of memory): the
platform's own image, which every stack already trusts (amd64; arm64 pools use the multi-arch `TRAINING_IMAGE`); the
images it pre-pulls run only ``true`` as init steps."""

# --- Node health (health/gpu_health.py, docs/health.md) ---
NODE_PROBLEM_DETECTOR_IMAGE = pinned("registry.k8s.io/node-problem-detector/node-problem-detector", "v1.36.0")
"""node-problem-detector v1.36.0 (kubernetes/node-problem-detector, tag of 2026-07-11, the newest stable release:
v1.37.0-alpha.1 is a pre-release). Its ENTRYPOINT bakes in the stock kernel monitors (Dockerfile@v1.36.0), so the
DaemonSet sets ``command`` to run only the platform's GPU/RDMA monitor (`health_catalog.npd_config`). Digest: the
one the image promotion to registry.k8s.io copied (kubernetes/k8s.io#9707)."""
DCGM_IMAGE = pinned("nvcr.io/nvidia/cloud-native/dcgm", "4.6.0-1-ubi10")
"""NVIDIA DCGM 4.6.0 with ``dcgmi`` and the diagnostic plugins, the DCGM release GPU Operator v26.7.0 runs for its
host engine (deployments/gpu-operator/values.yaml ``dcgm.version`` 4.6.0-1-ubuntu24.04). The UBI 10 build of the
same release, because its digest is published: the operator's own OLM bundle pins it
(bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml@v26.7.0, relatedImages ``dcgm-image``); no
published digest of the ubuntu24.04 tag was found. The dcgm-exporter image is not used for ``dcgmi diag``: it
installs only datacenter-gpu-manager-4-core and -proprietary (docker/Dockerfile@4.5.3-4.8.2), without the CUDA
diagnostic packages."""
HEALTH_UNPINNED_IMAGES: dict[str, str] = {
    image.repository: "digest not resolved yet (no registry reachable where this pin was made); "
                      "scripts/refresh-image-digests.py resolves it"
    for image in (NODE_PROBLEM_DETECTOR_IMAGE, DCGM_IMAGE) if not image.digest}
"""The health layer's images without a digest yet, with the reason."""

PINNED_IMAGES = (TRAINING_IMAGE, ROCM_TRAINING_IMAGE, RDMA_SHARED_DEVICE_PLUGIN_IMAGE, CALICO_NODE_IMAGE,
                 CALICO_KUBE_CONTROLLERS_IMAGE, NEURON_MONITOR_IMAGE, TPU_EXAMPLE_IMAGE, INFERENCE_IMAGE,
                 ROCM_INFERENCE_IMAGE, NEURON_INFERENCE_IMAGE, PLATFORM_IMAGE, VLLM_IMAGE, ENDPOINT_PICKER_IMAGE,
                 NODE_PROBLEM_DETECTOR_IMAGE, DCGM_IMAGE)
"""Every image whose tag names one manifest: ``scripts/refresh-image-digests.py`` resolves these."""
PROJECT_BUILT_IMAGES = (INFERENCE_IMAGE, ROCM_INFERENCE_IMAGE, NEURON_INFERENCE_IMAGE, PLATFORM_IMAGE)
"""Images this repository builds: their digest exists only once a release has pushed them (the release then runs
``scripts/refresh-image-digests.py --project-built`` and commits the digests)."""
UNPINNED_IMAGES: dict[str, str] = {
    **{image.repository: "built by this project's release, which writes its digest once it has pushed the image"
       for image in PROJECT_BUILT_IMAGES if not image.digest},
    DOCA_DRIVER_IMAGE.repository: "the Network Operator completes the tag per node pool (-<os><version>-<arch>, or "
                                  "the node's kernel for precompiled drivers); a digest would force one OS and "
                                  "architecture on every pool and turn the precompiled lookup off",
    **NEURON_UNPINNED_IMAGES,
    **HEALTH_UNPINNED_IMAGES,
}
"""Repositories the platform may name without a digest, with the reason. Every other image carries one (the test
suite checks every reference stack's manifests)."""
