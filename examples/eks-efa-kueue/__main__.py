"""EKS with an EFA training pool and Kueue, composed from gpu-platform components.

- `EksCluster`: VPC, EKS, system node group, and one `EksGpuNodePool` on p5.48xlarge with EFA (a launch template
  with an ``efa`` interface on card 0 and ``efa-only`` on the other cards, a cluster placement group, a
  self-referencing security group), scaling from zero.
- `EksClusterAutoscaler`: the cluster-autoscaler that scales the pool from zero (a composed program installs it
  itself; without it a ``minNodes: 0`` pool never gets a node).
- `NvidiaGpuStack` (NVIDIA device plugin + GFD + DCGM exporter; the EKS AMI brings the driver) and `RdmaStack`
  (the EFA device plugin: ``vpc.amazonaws.com/efa`` on the pool's nodes).
- `SchedulingPolicy`: PriorityClasses and Kueue (a ResourceFlavor per pool, a Topology for the EFA pool, a
  cohort and one ClusterQueue per team); `TeamNamespace`: the team's namespace, quota and LocalQueue ``gpu``.
"""

import pulumi
import pulumi_aws as aws

from gpu_platform import Team, versions
from gpu_platform.accelerators.nvidia import NvidiaGpuStack
from gpu_platform.accelerators.rdma import RdmaStack
from gpu_platform.clouds.aws import EksCluster, EksClusterAutoscaler
from gpu_platform.pool_builder import pool_args
from gpu_platform.scheduling.policy import SchedulingPolicy
from gpu_platform.scheduling.tenancy import TeamNamespace

config = pulumi.Config()
name = config.get("clusterName") or "train"
kubernetes_version = config.get("kubernetesVersion") or "1.34"
region = aws.config.region or "us-west-2"

# The pool, validated like a stack file's nodePools entry (p5.48xlarge: 8 H100s, 32 EFA interfaces). pool_args keeps
# the entry's AWS keys for the node group: with a Capacity Reservation add "capacityReservationId": "cr-..." and
# "zones": ["<its zone>"] (and "capacityBlock": True for a Capacity Block).
train_pool = pool_args("aws", {
    "name": "h100-efa",
    "instanceType": "p5.48xlarge",
    "minNodes": 0,
    "maxNodes": config.get_int("trainNodes") or 2,
    "rdma": True,
    "role": "training",
})

cluster = EksCluster(name, {
    "region": region,
    "kubernetes_version": kubernetes_version,
    "addon_versions": versions.EKS_ADDONS[kubernetes_version],
    "gpu_pools": [train_pool],
    "tags": {"example": "eks-efa-kueue"},
})
train = cluster.node_pools["h100-efa"].pool

# Everything in the cluster goes through its Kubernetes provider, after the nodes and add-ons exist.
in_cluster = pulumi.ResourceOptions(
    providers={"kubernetes": cluster.provider},
    depends_on=[cluster.system_node_group, *cluster.node_pools.values()],
)

# The pool starts at zero nodes: the cluster-autoscaler adds p5 nodes when pods need them, reading the node-template
# tags EksGpuNodePool puts on the pool's Auto Scaling group.
EksClusterAutoscaler(f"{name}-cluster-autoscaler", {
    "cluster_name": cluster.cluster_name,
    "region": cluster.region,
    "kubernetes_version": cluster.kubernetes_version,
    "system_node_group_name": cluster.system_node_group_name,
    "autoscaling_group_names": cluster.autoscaling_group_names,
    "tags": {"example": "eks-efa-kueue"},
}, opts=in_cluster)
pools = [p.spec() for p in cluster.gpu_pools]

nvidia = NvidiaGpuStack(f"{name}-nvidia", {"cloud": "aws", "gpu_software": "device-plugin", "pools": pools},
                        opts=in_cluster)
RdmaStack(f"{name}-rdma", {"cloud": "aws", "pools": pools, "nfd_installed": True},
          opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[nvidia])))

team_name = config.get("team") or "research"
# One Team, given to the scheduling policy (its ClusterQueue) and to its namespace alike, so they cannot disagree.
team = Team(name=team_name, gpu_quota=config.get_int("teamGpus") or 16, group=team_name)
scheduling = SchedulingPolicy(f"{name}-scheduling", {"pools": pools, "teams": [team], "kueue": True},
                              opts=in_cluster)
TeamNamespace(f"{name}-team-{team_name}", {"team": team, "cluster_queue": team_name},
              opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[scheduling])))

pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("clusterName", cluster.cluster_name)
pulumi.export("trainingPool", {"name": train.name, "gpus": train.max_gpus, "efaInterfaces": train.rdma_interfaces})
