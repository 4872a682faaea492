"""Which network-fabric labels each cloud puts on a pool's nodes, by shape: the levels of Kueue's Topology.

Kueue's topology-aware scheduling counts only nodes that carry every level of a Topology (``pkg/util/tas/node.go``),
so a level is listed for a shape only where the cloud labels every node of that shape. Sources (checked 2026-11):

* AWS: the cloud-controller-manager (kubernetes/cloud-provider-aws ``pkg/providers/v1/instances_v2.go``, v1.30.4+,
  the CCM EKS runs) writes ``topology.k8s.aws/network-node-layer-<n>`` from ``ec2:DescribeInstanceTopology``, layer 1
  the broadest. The instance types with a topology are EC2's list ("Prerequisites for Amazon EC2 instance
  topology"): three network nodes for most, four for ``p6-b200`` and ``p6-b300``; other types get no label.
* GKE: ``cloud.google.com/gce-topology-block|subblock|host`` (GKE 1.31+, from Compute Engine's ``physical_host``;
  GoogleCloudPlatform/container-engine-accelerators ``gke-topology-scheduler``), on the machine types whose topology
  Compute Engine exposes ("View instance topology": A4X, A4, A3 Ultra, A3 Mega, A3 High with 8 GPUs). Google's own
  Kueue Topology (cluster-toolkit ``kueue-configuration.yaml.tftpl``, xpk ``gke-default``) is these three levels.
* OKE: ``oci.oraclecloud.com/rdma.hpc_island_id|network_block_id|local_block_id`` on bare-metal RDMA nodes of a
  cluster network, from the instance metadata's RDMA topology (oracle-quickstart/oci-hpc-oke
  ``docs/using-rdma-network-locality-when-running-workloads-on-oke.md``; its Kueue Topology ``oci-rdma``). OKE adds
  them at bootstrap where the capacity has a capacity topology; the platform deploys no labeler of its own.
* AKS: no fabric label (the AKS label reference lists none; ``kubernetes.azure.com/ppg`` names a pool's proximity
  placement group, not a fabric level). An existing cluster's labels are unknown.

Every cloud's node controller sets ``topology.kubernetes.io/zone``, so it is the top level wherever the cloud is
known; ``kubernetes.io/hostname`` is always the last (Kueue's Topology allows it only there).
"""

from typing import Optional

from .. import labels
from ..pools import GpuPool

AWS_LAYERS = tuple(f"{labels.AWS_NETWORK_NODE_LAYER_PREFIX}{n}" for n in (1, 2, 3))
AWS_LAYERS_4 = (*AWS_LAYERS, f"{labels.AWS_NETWORK_NODE_LAYER_PREFIX}4")
GKE_LEVELS = (labels.GKE_TOPOLOGY_BLOCK_LABEL, labels.GKE_TOPOLOGY_SUBBLOCK_LABEL, labels.GKE_TOPOLOGY_HOST_LABEL)
OKE_LEVELS = (labels.OKE_RDMA_HPC_ISLAND_LABEL, labels.OKE_RDMA_NETWORK_BLOCK_LABEL, labels.OKE_RDMA_LOCAL_BLOCK_LABEL)

FABRICS: dict[str, tuple[str, ...]] = {
    "aws-3": AWS_LAYERS,
    "aws-4": AWS_LAYERS_4,
    "gcp": GKE_LEVELS,
    "oci": OKE_LEVELS,
}
"""Fabric label sets, coarsest first, by the suffix of the Topology that lists them (`kueue_objects.topology_name`)."""

AWS_3_LAYER_FAMILIES = ("g6e", "g7e", "hpc6a", "hpc6id", "hpc7a", "hpc7g", "hpc8a", "trn1")
"""EC2 families whose every size has a three-network-node topology."""
AWS_3_LAYER_TYPES = (
    "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
    "p6e-gb200.36xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2u.48xlarge",
)
AWS_4_LAYER_TYPES = ("p6-b200.48xlarge", "p6-b300.48xlarge")
GKE_TOPOLOGY_MACHINE_TYPES = (
    "a4x-highgpu-4g", "a4x-highgpu-4g-nolssd", "a4-highgpu-8g", "a3-ultragpu-8g", "a3-megagpu-8g", "a3-highgpu-8g",
)
"""GKE machine types whose nodes carry the ``gce-topology-*`` labels (xpk's GPU types with ``requires_topology``)."""


def fabric(pool: GpuPool) -> Optional[str]:
    """The key in `FABRICS` of the fabric labels ``pool``'s nodes carry, or None where its cloud labels none."""
    if pool.cloud == "aws":
        if pool.instance_type in AWS_4_LAYER_TYPES:
            return "aws-4"
        family = pool.instance_type.split(".")[0]
        if pool.instance_type in AWS_3_LAYER_TYPES or family in AWS_3_LAYER_FAMILIES:
            return "aws-3"
        return None
    if pool.cloud == "gcp":
        return "gcp" if pool.instance_type in GKE_TOPOLOGY_MACHINE_TYPES else None
    if pool.cloud == "oci":
        # Only bare-metal nodes in a cluster network (the platform's RDMA pools) have an RDMA locality.
        return "oci" if pool.rdma_fabric else None
    return None


def fabric_levels(pool: GpuPool) -> tuple[str, ...]:
    """The fabric labels ``pool``'s nodes carry, coarsest first (empty where its cloud labels none)."""
    key = fabric(pool)
    return FABRICS[key] if key is not None else ()


def levels(pool: GpuPool) -> tuple[str, ...]:
    """Every topology level of ``pool``'s nodes, coarsest first: the zone (every cloud's node controller sets it;
    an existing cluster may not), the fabric labels, then the hostname."""
    zone = () if pool.cloud == "existing" else (labels.ZONE_LABEL,)
    return (*zone, *fabric_levels(pool), labels.HOSTNAME_LABEL)
