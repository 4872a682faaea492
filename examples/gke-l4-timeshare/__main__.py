"""GKE with a time-shared L4 inference pool, composed from gpu-platform components.

- `pool_args`: the pool as a stack file's ``nodePools`` entry would write it, checked by the same rules, and
  turned into a `GkeCluster` ``gpu_pools`` entry (the pool plus its GKE keys: here ``zones``).
- `GkeCluster`: a regional GKE Standard cluster (VPC-native, Dataplane V2, Workload Identity, a small system
  pool), its Kubernetes provider, and one `GkeGpuNodePool` per ``gpu_pools`` entry: g2-standard-8 nodes (one
  NVIDIA L4 each) with GKE's driver and GKE's GPU time-sharing (``gpu_sharing_config``: TIME_SHARING, N pods per
  GPU), the GPU taint and the platform's labels, scaling from one node up to ``maxNodes``.
- `InferenceService`: the sentiment app (examples/inference-app) on that pool: one ``nvidia.com/gpu`` per pod is
  one time-slice, so N pods share each L4; a CPU HPA scales it.
"""

import pulumi

from gpu_platform import GkeCluster, InferenceService, pool_args

config = pulumi.Config()
region = config.get("region") or "us-central1"
replicas = config.get_int("replicasPerGpu") or 4

cluster = GkeCluster("infer", {
    "region": region,
    "kubernetes_version": "1.34",
    "gpu_pools": [pool_args("gcp", {
        "name": "l4-shared",
        "instanceType": "g2-standard-8",
        "minNodes": 1,
        "maxNodes": config.get_int("maxNodes") or 3,
        "zones": [f"{region}-a", f"{region}-b", f"{region}-c"],
        "role": "inference",
        "sharing": {"mode": "time-slicing", "replicas": replicas},
    })],
})
l4 = cluster.node_pools["l4-shared"]  # GKE's device plugin advertises `replicas` nvidia.com/gpu per L4

InferenceService("sentiment", {
    "pool": l4.pool.spec(),
    "min_replicas": 2,
    "max_replicas": replicas * l4.pool.max_nodes,
    "autoscaler": "hpa",
}, opts=pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}, depends_on=[l4]))

pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("gpuSlices", l4.pool.schedulable_gpus_per_node * l4.pool.max_nodes)
