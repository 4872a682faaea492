"""Every pinned Helm chart, repository and image tag the platform deploys.

No chart version literal may appear anywhere else. Each pin was checked against the chart's ``values.yaml``
at that version (every values key the platform sets exists there).
"""

from dataclasses import dataclass


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


NVIDIA_HELM_REPO = "https://helm.ngc.nvidia.com/nvidia"

# NVIDIA GPU and RDMA stack. GPU Operator 26.3.x pairs with Network Operator 26.1.x for GPUDirect RDMA
# (NVIDIA Cloud Native Stack 26.6.0 compatibility note); the device plugin chart is the plugin release the
# operator itself bundles (v26.3.3 values: devicePlugin.version v0.19.3), so both modes run the same plugin.
GPU_OPERATOR = Chart("gpu-operator", "v26.3.3", NVIDIA_HELM_REPO)
DEVICE_PLUGIN = Chart("nvidia-device-plugin", "0.19.3", "https://nvidia.github.io/k8s-device-plugin")
NETWORK_OPERATOR = Chart("network-operator", "v26.1.2", NVIDIA_HELM_REPO)
DCGM_EXPORTER = Chart("dcgm-exporter", "4.8.2", "https://nvidia.github.io/dcgm-exporter/helm-charts")
EFA_DEVICE_PLUGIN = Chart("aws-efa-k8s-device-plugin", "v0.5.30", "https://aws.github.io/eks-charts")
HAMI = Chart("hami", "2.10.0", "https://project-hami.github.io/HAMi/")
# Images the platform names itself (the charts' own images stay at their chart defaults).
RDMA_SHARED_DEVICE_PLUGIN_IMAGE = ("nvcr.io/nvidia/mellanox", "k8s-rdma-shared-dev-plugin", "network-operator-v26.1.2")
"""(repository, image, version) of the RDMA shared device plugin in the NicClusterPolicy (upstream example CR at
Mellanox/network-operator@v26.1.2:example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml)."""
DOCA_DRIVER_IMAGE = ("nvcr.io/nvidia/mellanox", "doca-driver", "doca3.3.0-26.01-1.0.0.0-0")
"""(repository, image, version) of the DOCA-OFED driver container the Network Operator builds on AKS nodes (same
upstream example CR)."""
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
CLUSTER_AUTOSCALER_IMAGE_TAGS = {"1.33": "v1.33.1", "1.34": "v1.34.0", "1.35": "v1.35.0"}
"""registry.k8s.io/autoscaling/cluster-autoscaler tag per Kubernetes minor of the EKS versions the platform pins."""
# Fairwinds vpa chart 5.0.0 = Vertical Pod Autoscaler 1.7.1 (FairwindsOps/charts@5f478fce:stable/vpa; its crds/
# directory installs autoscaling.k8s.io/v1). Values keys: tests/data/chart_keys/vpa-5.0.0.keys.
VPA = Chart("vpa", "5.0.0", "https://charts.fairwinds.com/stable")

# Kubernetes API versions of the custom resources the platform creates.
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
PROMETHEUS_OPERATOR_API_VERSION = "monitoring.coreos.com/v1"
KEDA_API_VERSION = "keda.sh/v1alpha1"
KARPENTER_API_VERSION = "karpenter.sh/v1"
KARPENTER_AWS_API_VERSION = "karpenter.k8s.aws/v1"
VPA_API_VERSION = "autoscaling.k8s.io/v1"

TRAINING_IMAGE = "nvcr.io/nvidia/pytorch:25.05-py3"
"""NGC PyTorch container (PyTorch, CUDA, NCCL) the reference training job runs; a tag NGC publishes (25.05)."""

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
}

INFERENCE_IMAGE = "ghcr.io/gpu-platform/sentiment-inference:0.1.0"
"""The reference inference app (examples/inference-app/Dockerfile, CUDA variant)."""

# Images the platform builds itself (Dockerfile at the repository root: the library with its optimizer).
PLATFORM_IMAGE = "ghcr.io/gpu-platform/gpu-platform:0.1.0"
