"""gpu-platform: Pulumi components for a GPU Kubernetes platform on EKS, AKS, GKE, OKE or any cluster.

Every component is importable from here: ``from gpu_platform import EksCluster, InferenceService, pool_args``.
The exports are lazy (PEP 562): a name's module is imported on first use, so importing one cloud's components
never imports another cloud's SDK, and ``import gpu_platform`` imports no Pulumi SDK at all. Submodules
(``gpu_platform.versions``, ``gpu_platform.testing``, ...) import as usual.
"""

from ._lazy import lazy_exports

__version__ = "0.1.0"

_COMPONENTS = {
    # AWS
    "EksCluster": ".clouds.aws.cluster",
    "EksClusterArgs": ".clouds.aws.cluster",
    "EksGpuNodePool": ".clouds.aws.cluster",
    "EksGpuNodePoolArgs": ".clouds.aws.cluster",
    "EksClusterAutoscaler": ".clouds.aws.cluster_autoscaler",
    "EksClusterAutoscalerArgs": ".clouds.aws.cluster_autoscaler",
    "KarpenterAutoscaler": ".clouds.aws.karpenter",
    "KarpenterAutoscalerArgs": ".clouds.aws.karpenter",
    # Azure
    "AksCluster": ".clouds.azure.cluster",
    "AksClusterArgs": ".clouds.azure.cluster",
    "AksGpuNodePool": ".clouds.azure.cluster",
    "AksGpuNodePoolArgs": ".clouds.azure.cluster",
    # Google Cloud
    "GkeCluster": ".clouds.gcp.cluster",
    "GkeClusterArgs": ".clouds.gcp.cluster",
    "GkeGpuNodePool": ".clouds.gcp.cluster",
    "GkeGpuNodePoolArgs": ".clouds.gcp.cluster",
    # Oracle Cloud
    "OkeCluster": ".clouds.oci.cluster",
    "OkeClusterArgs": ".clouds.oci.cluster",
    "OkeGpuNodePool": ".clouds.oci.cluster",
    "OkeGpuNodePoolArgs": ".clouds.oci.cluster",
    "OkeVcn": ".clouds.oci.vcn",
    "OkeVcnArgs": ".clouds.oci.vcn",
    "OkeClusterAutoscaler": ".clouds.oci.autoscaler",
    "OkeClusterAutoscalerArgs": ".clouds.oci.autoscaler",
    # An existing cluster
    "ExistingGpuNodes": ".clouds.existing.cluster",
    "ExistingGpuNodesArgs": ".clouds.existing.cluster",
    # The Kubernetes layer (no cloud SDK)
    "CalicoPolicyEngine": ".kube.network_policy_engine",
    "CalicoPolicyEngineArgs": ".kube.network_policy_engine",
    "NvidiaGpuStack": ".kube.nvidia",
    "NvidiaGpuStackArgs": ".kube.nvidia",
    "NeuronStack": ".kube.neuron",
    "NeuronStackArgs": ".kube.neuron",
    "AmdGpuStack": ".kube.amd",
    "AmdGpuStackArgs": ".kube.amd",
    "TpuJobSet": ".kube.tpu",
    "TpuJobSetArgs": ".kube.tpu",
    "TpuSliceJob": ".kube.tpu",
    "TpuSliceJobArgs": ".kube.tpu",
    "RdmaStack": ".kube.rdma",
    "RdmaStackArgs": ".kube.rdma",
    "SchedulingPolicy": ".kube.scheduling",
    "SchedulingPolicyArgs": ".kube.scheduling",
    "TeamNamespace": ".kube.tenancy",
    "TeamNamespaceArgs": ".kube.tenancy",
    "GpuMonitoring": ".kube.monitoring",
    "GpuMonitoringArgs": ".kube.monitoring",
    "TrainingWorkload": ".kube.training",
    "TrainingWorkloadArgs": ".kube.training",
    "KedaOperator": ".kube.keda",
    "KedaOperatorArgs": ".kube.keda",
    "InferenceService": ".kube.workloads",
    "InferenceServiceArgs": ".kube.workloads",
    "InferenceGateway": ".kube.gateway",
    "InferenceGatewayArgs": ".kube.gateway",
    "CertManager": ".kube.cert_manager",
    "CertManagerArgs": ".kube.cert_manager",
    "LlmService": ".kube.llm",
    "LlmServiceArgs": ".kube.llm",
    "GpuOptimizer": ".kube.optimizer",
    "GpuOptimizerArgs": ".kube.optimizer",
    "GpuHealth": ".kube.health",
    "GpuHealthArgs": ".kube.health",
    "DataPlaneStorage": ".kube.storage",
    "DataPlaneStorageArgs": ".kube.storage",
    "WorkloadAutoscaling": ".kube.autoscaling",
    "WorkloadAutoscalingArgs": ".kube.autoscaling",
    # The whole platform from a parsed configuration (Python only)
    "GpuPlatform": ".platform",
}
_HELPERS = {
    "pool_args": ".pool_builder",
    "gpu_pool": ".pool_builder",
    "GpuPool": ".pools",
    "GpuPoolSpec": ".pools",
    "GatewayRouteArgs": ".kube.gateway_objects",
    "ConfigError": ".errors",
    "PlatformConfig": ".config",
    "parse_config": ".config",
}
_EXPORTS = {**_COMPONENTS, **_HELPERS}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted([*_EXPORTS, "__version__"])
