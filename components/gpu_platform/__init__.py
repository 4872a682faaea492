"""gpu-platform: Pulumi components for a GPU Kubernetes platform on EKS, AKS, GKE, OKE or any cluster."""

__version__ = "0.1.0"
