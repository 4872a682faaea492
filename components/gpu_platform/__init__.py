"""gpu-platform: Pulumi components for a GPU Kubernetes platform on EKS, AKS, GKE, OKE or any cluster.

Every component is importable from here: ``from gpu_platform import EksCluster, InferenceService, pool_args``.
The exports are lazy (PEP 562): a name's module is imported on first use, so importing one cloud's components
never imports another cloud's SDK, and ``import gpu_platform`` imports no Pulumi SDK at all. Submodules
(``gpu_platform.versions``, ``gpu_platform.testing``, ...) import as usual.
"""

from . import _moved
from ._lazy import lazy_exports

_moved.install()  # old module paths (gpu_platform.accelerators.nvidia...) answer with the moved modules

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
    "CalicoPolicyEngine": ".security.network_policy_engine",
    "CalicoPolicyEngineArgs": ".security.network_policy_engine",
    "NvidiaGpuStack": ".accelerators.nvidia",
    "NvidiaGpuStackArgs": ".accelerators.nvidia",
    "NeuronStack": ".accelerators.neuron",
    "NeuronStackArgs": ".accelerators.neuron",
    "AmdGpuStack": ".accelerators.amd",
    "AmdGpuStackArgs": ".accelerators.amd",
    "TpuJobSet": ".accelerators.tpu",
    "TpuJobSetArgs": ".accelerators.tpu",
    "TpuSliceJob": ".accelerators.tpu",
    "TpuSliceJobArgs": ".accelerators.tpu",
    "RdmaStack": ".accelerators.rdma",
    "RdmaStackArgs": ".accelerators.rdma",
    "SchedulingPolicy": ".kube.scheduling",
    "SchedulingPolicyArgs": ".kube.scheduling",
    "TeamNamespace": ".kube.tenancy",
    "TeamNamespaceArgs": ".kube.tenancy",
    "Team": ".scheduling.teams",
    "TeamSpec": ".scheduling.teams",
    "MultiKueueManager": ".scheduling.multikueue",
    "MultiKueueManagerArgs": ".scheduling.multikueue",
    "MultiKueueWorkerAccess": ".scheduling.multikueue",
    "MultiKueueWorkerAccessArgs": ".scheduling.multikueue",
    "GpuMonitoring": ".monitoring.gpu_monitoring",
    "GpuMonitoringArgs": ".monitoring.gpu_monitoring",
    "TrainingWorkload": ".training.workload",
    "TrainingWorkloadArgs": ".training.workload",
    "KedaOperator": ".serving.keda",
    "KedaOperatorArgs": ".serving.keda",
    "InferenceService": ".serving.workloads",
    "InferenceServiceArgs": ".serving.workloads",
    "InferenceGateway": ".serving.gateway",
    "InferenceGatewayArgs": ".serving.gateway",
    "CertManager": ".serving.cert_manager",
    "CertManagerArgs": ".serving.cert_manager",
    "LlmService": ".serving.llm",
    "LlmServiceArgs": ".serving.llm",
    "GpuOptimizer": ".optimizer.gpu_optimizer",
    "GpuOptimizerArgs": ".optimizer.gpu_optimizer",
    "GpuHealth": ".health.gpu_health",
    "GpuHealthArgs": ".health.gpu_health",
    "DataPlaneStorage": ".storage.data_plane",
    "DataPlaneStorageArgs": ".storage.data_plane",
    "EksSharedFileSystem": ".clouds.aws.storage_components",
    "EksSharedFileSystemArgs": ".clouds.aws.storage_components",
    "EksBucketAccess": ".clouds.aws.storage_components",
    "EksBucketAccessArgs": ".clouds.aws.storage_components",
    "AksSharedFileSystem": ".clouds.azure.storage_components",
    "AksSharedFileSystemArgs": ".clouds.azure.storage_components",
    "AksBucketAccess": ".clouds.azure.storage_components",
    "AksBucketAccessArgs": ".clouds.azure.storage_components",
    "GkeSharedFileSystem": ".clouds.gcp.storage_components",
    "GkeSharedFileSystemArgs": ".clouds.gcp.storage_components",
    "GkeBucketAccess": ".clouds.gcp.storage_components",
    "GkeBucketAccessArgs": ".clouds.gcp.storage_components",
    "OkeSharedFileSystem": ".clouds.oci.storage_components",
    "OkeSharedFileSystemArgs": ".clouds.oci.storage_components",
    "OkeBucketAccess": ".clouds.oci.storage_components",
    "OkeBucketAccessArgs": ".clouds.oci.storage_components",
    "WorkloadAutoscaling": ".autoscaling.workload_autoscaling",
    "WorkloadAutoscalingArgs": ".autoscaling.workload_autoscaling",
    # The whole platform from a parsed configuration (Python only)
    "GpuPlatform": ".platform",
}
_HELPERS = {
    "pool_args": ".pool_builder",
    "gpu_pool": ".pool_builder",
    "GpuPool": ".pools",
    "GpuPoolSpec": ".pools",
    "GatewayRouteArgs": ".serving.gateway_objects",
    "BucketArgs": ".storage.bucket_args",
    "ConfigError": ".errors",
    "PlatformConfig": ".config",
    "parse_config": ".config",
}
_EXPORTS = {**_COMPONENTS, **_HELPERS}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted([*_EXPORTS, "__version__"])
