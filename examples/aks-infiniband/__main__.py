"""AKS with an InfiniBand H100 pool, composed from gpu-platform components.

- `AksCluster`: resource group, VNet, identity, the managed cluster with its System pool, and one
  `AksGpuNodePool` of Standard_ND96isr_H100_v5 (8 H100, 8 InfiniBand HCAs): autoscaled from zero, tainted
  ``nvidia.com/gpu=present:NoSchedule``, labelled ``gpu-platform.io/rdma=infiniband``, created with
  ``gpuProfile.driver: None`` so the GPU Operator owns the driver. AKS puts the pool's nodes on one InfiniBand
  network once the subscription feature ``AKSInfinibandSupport`` is registered (the component registers it).
- `NvidiaGpuStack`: the GPU Operator (driver, toolkit, device plugin, DCGM exporter).
- `RdmaStack`: the NVIDIA Network Operator with the DOCA-OFED driver container and the RDMA shared device plugin:
  pods request ``rdma/ib: 1`` to get the node's HCAs.
"""

import pulumi

from gpu_platform.accelerators.nvidia import NvidiaGpuStack
from gpu_platform.accelerators.rdma import RdmaStack
from gpu_platform.clouds.azure import AksCluster
from gpu_platform.clouds.azure.specs import gpu_driver
from gpu_platform.pool_builder import pool_args

config = pulumi.Config()
gpu_software = "operator"

# The cluster's gpu_pools entry for a stack-file style pool: the pool plus its AKS keys, validated like a stack.
h100 = pool_args("azure", {
    "name": "h100-ib",
    "instanceType": "Standard_ND96isr_H100_v5",
    "minNodes": 0,
    "maxNodes": config.get_int("maxNodes") or 2,
    "rdma": True,
    "role": "training",
})

register = config.get_bool("registerInfinibandFeature")
cluster = AksCluster("aks-ib", {
    "location": config.get("location") or "westeurope",
    "kubernetes_version": "1.34",
    "gpu_pools": [{**h100, "gpu_driver": gpu_driver(gpu_software)}],
    "register_infiniband_feature": True if register is None else register,
    "tags": {"example": "aks-infiniband"},
})

in_cluster = pulumi.ResourceOptions(providers={"kubernetes": cluster.provider},
                                    depends_on=list(cluster.node_pools.values()))
pools = [p.spec() for p in cluster.gpu_pools]
nvidia = NvidiaGpuStack("aks-ib-nvidia", {"cloud": "azure", "gpu_software": gpu_software, "pools": pools},
                        opts=in_cluster)
RdmaStack("aks-ib-rdma", {"cloud": "azure", "pools": pools, "nfd_installed": nvidia.runs_nfd},
          opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[nvidia])))

pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("clusterName", cluster.cluster_name)
