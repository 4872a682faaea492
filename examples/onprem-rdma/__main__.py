"""An existing (on-prem) cluster with InfiniBand GPU nodes, composed from gpu-platform components.

- `ExistingGpuNodes`: server-side-apply node patches put the pool's labels (``gpu-platform.io/pool``,
  ``.../accelerator``, ``.../rdma=infiniband``) and taints (``nvidia.com/gpu=present:NoSchedule`` plus a
  ``dedicated`` taint) on nodes that already run. Nothing else on the nodes changes; ``pulumi destroy`` removes
  only what the patches added.
- `NvidiaGpuStack`: the GPU Operator with its driver (bare hosts), device plugin, GFD, DCGM exporter.
- `RdmaStack`: the NVIDIA Network Operator and a ``NicClusterPolicy`` whose RDMA shared device plugin advertises
  ``rdma/ib`` on the pool's nodes.
- `SchedulingPolicy`: the platform's PriorityClasses (``inference-critical``, ``high-priority``,
  ``medium-priority``, ``low-priority``) plus ``high-priority-h100``/``medium-priority-h100``; medium is the
  cluster default. No Kueue here (``kueue: False``).
"""

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.accelerators.nvidia import NvidiaGpuStack
from gpu_platform.accelerators.rdma import RdmaStack
from gpu_platform.clouds.existing import ExistingGpuNodes
from gpu_platform.pool_builder import pool_args
from gpu_platform.scheduling.policy import SchedulingPolicy

config = pulumi.Config()
nodes = config.get_object("gpuNodes") or []
dedicated = config.get("dedicatedTo") or "ml-platform"

# The cluster as the kubeconfig reaches it (server-side apply: node patches need it).
provider = k8s.Provider("cluster", context=config.get("context"), enable_server_side_apply=True)
in_cluster = pulumi.ResourceOptions(providers={"kubernetes": provider})

# An existing pool has no catalog shape: the GPU model and count are given, the fabric is InfiniBand.
# ExistingGpuNodes' args (the pool and its nodes) for a stack-file style pool, validated like a stack.
h100_nodes = pool_args("existing", {
    "name": "h100-ib",
    "gpuModel": "h100",
    "gpusPerNode": 8,
    "nodes": nodes,
    "minNodes": len(nodes),
    "maxNodes": max(1, len(nodes)),
    "rdma": True,
    "rdmaFabric": "infiniband",
    "rdmaInterfaces": 8,
    "role": "training",
    "taints": [f"dedicated={dedicated}:NoSchedule"],
})
pools = [h100_nodes["pool"]]

gpu_nodes = ExistingGpuNodes("h100-ib", h100_nodes, opts=in_cluster)
after_nodes = pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[gpu_nodes]))

nvidia = NvidiaGpuStack("nvidia", {"cloud": "existing", "gpu_software": "operator", "pools": pools},
                        opts=after_nodes)
RdmaStack("rdma", {"cloud": "existing", "pools": pools, "nfd_installed": nvidia.runs_nfd},
          opts=pulumi.ResourceOptions.merge(after_nodes, pulumi.ResourceOptions(depends_on=[nvidia])))
scheduling = SchedulingPolicy("scheduling", {
    "pools": pools,
    "kueue": False,
    "per_gpu_priority_classes": True,
    "default_priority_class": "medium-priority",
}, opts=in_cluster)

pulumi.export("gpuNodes", gpu_nodes.node_names)
pulumi.export("priorityClasses", sorted(scheduling.priority_classes))
