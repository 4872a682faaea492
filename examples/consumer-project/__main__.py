"""A separate Pulumi project composing gpu-platform's components through the public API only: an EKS cluster and a
GKE cluster, each with one RDMA GPU pool (EFA on AWS, GPUDirect-TCPXO on Google Cloud)."""

import pulumi

from gpu_platform import EksCluster, GkeCluster, pool_args, versions

config = pulumi.Config()
aws_region = config.get("awsRegion") or "us-west-2"
gcp_region = config.get("gcpRegion") or "us-central1"

h100 = pool_args("aws", {"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2, "rdma": True})
eks = EksCluster("train-eks", {
    "region": aws_region,
    "kubernetes_version": "1.34",
    "addon_versions": dict(versions.EKS_ADDONS["1.34"]),
    "gpu_pools": [h100],
})

a3 = pool_args("gcp", {"name": "a3", "instanceType": "a3-megagpu-8g", "maxNodes": 2, "rdma": True,
                       "zones": [f"{gcp_region}-a"]})
gke = GkeCluster("train-gke", {"region": gcp_region, "gpu_pools": [a3]})

pulumi.export("eksClusterName", eks.cluster_name)
pulumi.export("gkeClusterName", gke.cluster_name)
