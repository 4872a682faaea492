"""OKE with RDMA H100 nodes, composed from gpu-platform components.

- `OkeCluster`: an enhanced OKE cluster with VCN-native pod networking (it creates the VCN and subnets), its
  kubeconfig and Kubernetes provider.
- `OkeGpuNodePool`: BM.GPU.H100.8 (8 H100, 16 RoCEv2 ports) nodes from an RDMA-ready GPU image (OKE's stock GPU
  images carry no OFED stack, so an RDMA pool names its image; the configuration refuses one without). With
  ``rdma: true`` the pool lives in one availability domain and its nodes join an ``oci.core.ComputeCluster``
  (the RDMA cluster network); taints go through kubelet ``--register-with-taints`` in cloud-init because OKE
  node pools have no taint field. `OkeGpuNodePool.gpu_pool` is the pool with the RoCE NCCL settings added.
- `NvidiaGpuStack` (OKE's GPU image has the driver; OKE's own device plugin) and `RdmaStack` (the NVIDIA Network
  Operator and the RDMA shared device plugin: pods request ``rdma/roce: 1``).
"""

import pulumi

from gpu_platform.accelerators.nvidia import NvidiaGpuStack
from gpu_platform.accelerators.rdma import RdmaStack
from gpu_platform.clouds.oci import OkeCluster, OkeGpuNodePool
from gpu_platform.pool_builder import pool_args

config = pulumi.Config()
compartment = config.require("compartmentId")
nodes = config.get_int("nodes") or 2
gpu_software = "cloud-managed"

# OkeGpuNodePool's args for a stack-file style pool (the pool, its image, its size), validated like a stack.
h100 = pool_args("oci", {
    "name": "h100-rdma",
    "instanceType": "BM.GPU.H100.8",
    "minNodes": nodes,
    "maxNodes": nodes,
    "rdma": True,
    "role": "training",
    "imageId": config.require("rdmaImageId"),
})

cluster = OkeCluster("oke", {"compartment_id": compartment, "kubernetes_version": "1.34"})
pool = OkeGpuNodePool("oke-h100-rdma", {
    **h100,
    "cluster_id": cluster.cluster_id,
    "compartment_id": compartment,
    "kubernetes_version": cluster.kubernetes_version,
    "worker_subnet_id": cluster.worker_subnet_id,
    "pod_subnet_id": cluster.pod_subnet_id,
    "availability_domains": cluster.availability_domains,
    "disable_oke_device_plugin": gpu_software != "cloud-managed",
})

in_cluster = pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}, depends_on=[pool])
pools = [pool.gpu_pool.spec()]  # carries the RoCE NCCL environment training pods need
nvidia = NvidiaGpuStack("oke-nvidia", {"cloud": "oci", "gpu_software": gpu_software, "pools": pools},
                        opts=in_cluster)
RdmaStack("oke-rdma", {"cloud": "oci", "pools": pools, "nfd_installed": nvidia.runs_nfd},
          opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[nvidia])))

pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("computeClusterId", pool.compute_cluster_id)
pulumi.export("ncclEnv", dict(pool.gpu_pool.nccl_env))
