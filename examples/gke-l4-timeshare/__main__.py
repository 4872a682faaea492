"""GKE with a time-shared L4 inference pool, composed from gpu-platform components.

- `GkeCluster`: a regional GKE Standard cluster (VPC-native, Dataplane V2, Workload Identity, a small system
  pool) and its Kubernetes provider.
- `GkeGpuNodePool`: g2-standard-8 nodes (one NVIDIA L4 each) with GKE's driver and GKE's GPU time-sharing
  (``gpu_sharing_config``: TIME_SHARING, N pods per GPU), the GPU taint and the platform's labels, scaling from
  one node up to ``maxNodes``.
- `InferenceService`: the sentiment app (examples/inference-app) on that pool: one ``nvidia.com/gpu`` per pod is
  one time-slice, so N pods share each L4; a CPU HPA scales it.
"""

import pulumi

from gpu_platform.clouds.gcp import GkeCluster, GkeGpuNodePool
from gpu_platform.kube.workloads import InferenceService
from gpu_platform.pool_builder import gpu_pool

config = pulumi.Config()
region = config.get("region") or "us-central1"
replicas = config.get_int("replicasPerGpu") or 4

l4 = gpu_pool("gcp", {
    "name": "l4-shared",
    "instanceType": "g2-standard-8",
    "minNodes": 1,
    "maxNodes": config.get_int("maxNodes") or 3,
    "role": "inference",
    "sharing": {"mode": "time-slicing", "replicas": replicas},
})

cluster = GkeCluster("infer", {"region": region, "kubernetes_version": "1.34"})
pool = GkeGpuNodePool("infer-l4", {
    "pool": l4.spec(),
    "cluster": cluster.cluster.id,
    "location": cluster.location,
    "project": cluster.project,
    "zone_count": 3,
    "gke_sharing": True,  # GKE's device plugin advertises `replicas` nvidia.com/gpu per L4
    "service_account": cluster.node_service_account,
})

InferenceService("sentiment", {
    "pool": l4.spec(),
    "min_replicas": 2,
    "max_replicas": replicas * l4.max_nodes,
    "autoscaler": "hpa",
}, opts=pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}, depends_on=[pool]))

pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("gpuSlices", l4.schedulable_gpus_per_node * l4.max_nodes)
