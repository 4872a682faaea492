"""RDMA device stack decisions (pure): which fabric gets which plugin, its Helm values and the NicClusterPolicy.

- EFA (AWS): the ``aws-efa-k8s-device-plugin`` chart advertises ``vpc.amazonaws.com/efa``, on EFA pools only.
- InfiniBand / RoCEv2 (Azure, OCI, existing clusters): the NVIDIA Network Operator and a ``NicClusterPolicy``
  running the RDMA shared device plugin, which advertises ``rdma/ib`` / ``rdma/roce`` (`pools.RDMA_RESOURCES`).
  A pod asking for one unit gets every HCA of that link type on its node (the plugin shares all selected
  devices with up to ``rdmaHcaMax`` pods).
- GKE GPUDirect (TCPX/TCPXO/RDMA): the GKE layer creates the ``GKENetworkParamSet``/``Network`` objects pods attach
  to; nothing here touches those pools, so nothing conflicts with them.

Every values key exists in the pinned chart's ``values.yaml`` (``tests/data/chart_keys``); the NicClusterPolicy
matches the vendored CRD schema of the pinned Network Operator.
"""

import json
from collections.abc import Sequence

from .. import catalog, labels, versions
from ..kubernetes_base.common import all_pool_tolerations, metadata
from ..pools import RDMA_RESOURCES, GpuPool
from ..versions import Image

EFA_NAMESPACE = "kube-system"
"""Where EKS and ai-on-eks run the EFA device plugin (a system-node-critical DaemonSet)."""
NETWORK_OPERATOR_NAMESPACE = "nvidia-network-operator"
"""NVIDIA's documented namespace for the Network Operator."""
NIC_CLUSTER_POLICY_NAME = "nic-cluster-policy"
"""The operator reconciles only a NicClusterPolicy of this name."""
NIC_CLUSTER_POLICY_API_VERSION = "mellanox.com/v1alpha1"
NETWORK_OPERATOR_FABRICS = (catalog.INFINIBAND, catalog.ROCE)
MELLANOX_VENDOR_ID = "15b3"
LINK_TYPES = {catalog.INFINIBAND: "infiniband", catalog.ROCE: "ether"}
"""Link type of the RDMA netdevs per fabric (the plugin's ``linkTypes`` selector), so an InfiniBand node's
Ethernet (accelerated-networking) NIC of the same vendor is not shared as an IB device, and vice versa."""
RDMA_HCA_MAX = 63
"""Pods per node that may share the RDMA devices (the upstream example's value)."""
OFED_DRIVER_CLOUDS = ("azure",)
"""Clouds whose node image lacks the NVIDIA (DOCA-OFED) networking driver the InfiniBand stack needs: AKS
Ubuntu images (Azure/aks-rdma-infiniband deploys the driver container). OKE RDMA images and bare-metal HPC hosts
carry the host driver; the operator must not replace it there."""


def efa_pools(pools: Sequence[GpuPool]) -> list[GpuPool]:
    return [p for p in pools if p.rdma_fabric == catalog.EFA]


def network_operator_pools(pools: Sequence[GpuPool]) -> list[GpuPool]:
    """Pools whose RDMA NICs the Network Operator serves (InfiniBand and RoCEv2)."""
    return [p for p in pools if p.rdma_fabric in NETWORK_OPERATOR_FABRICS]


def efa_values(pools: Sequence[GpuPool]) -> dict:
    """Values of ``aws-efa-k8s-device-plugin``: only on EFA pools' nodes, tolerating their taints.

    The chart's own affinity (``supportedInstanceLabels``) still limits it to EFA instance types and keeps it off
    EKS Auto Mode nodes; the nodeSelector keeps it off EFA-capable types used without EFA interfaces, where it
    crash-loops with "No valid EFA devices found".
    """
    selected = efa_pools(pools)
    return {
        "nodeSelector": {labels.RDMA_LABEL: catalog.EFA},
        "tolerations": all_pool_tolerations(selected),
    }


def network_operator_values(pools: Sequence[GpuPool], nfd_installed: bool) -> dict:
    """Values of ``network-operator``: its NFD only when none runs yet (one NFD per cluster).

    With its NFD off, the chart still deploys its NodeFeatureRules (Mellanox NIC labels) for the existing NFD,
    whose CRD that NFD installed: hence the operator is installed after the NVIDIA stack.
    """
    if nfd_installed:
        return {"nfd": {"enabled": False}}
    return {
        "nfd": {"enabled": True},
        "node-feature-discovery": {"worker": {"tolerations": all_pool_tolerations(pools)}},
    }


def shared_device_plugin_config(pools: Sequence[GpuPool]) -> dict:
    """The RDMA shared device plugin's config: one resource per fabric present (``rdma/ib``, ``rdma/roce``)."""
    fabrics = sorted({p.rdma_fabric for p in network_operator_pools(pools)})
    config_list = []
    for fabric in fabrics:
        prefix, name = RDMA_RESOURCES[fabric].split("/")
        config_list.append({
            "resourceName": name,
            "resourcePrefix": prefix,
            "rdmaHcaMax": RDMA_HCA_MAX,
            "selectors": {"vendors": [MELLANOX_VENDOR_ID], "linkTypes": [LINK_TYPES[fabric]]},
        })
    return {"configList": config_list}


def image_spec(image: Image) -> dict[str, str]:
    """An image as the NicClusterPolicy's ``repository``/``image``/``version`` fields.

    With a digest, ``version`` is the digest: the operator then renders ``<repository>/<image>@<digest>``
    (Mellanox/network-operator@v26.1.2 pkg/render/render.go ``imagePath``), so the pods pull exactly the pinned
    manifest; the tag stays in `versions`.
    """
    registry_path, name = image.repository.rsplit("/", 1)
    return {"image": name, "repository": registry_path, "version": image.digest or image.tag}


def nic_cluster_policy(cloud: str, pools: Sequence[GpuPool]) -> dict:
    """Body (apiVersion/kind/metadata/spec) of the ``NicClusterPolicy`` for the InfiniBand/RoCE pools.

    Its DaemonSets run only on those pools' nodes (RDMA label) and tolerate their taints.
    """
    selected = network_operator_pools(pools)
    fabrics = sorted({p.rdma_fabric for p in selected})
    spec: dict = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": labels.RDMA_LABEL, "operator": "In", "values": fabrics}]}]}},
        "tolerations": all_pool_tolerations(selected),
        "rdmaSharedDevicePlugin": {
            **image_spec(versions.RDMA_SHARED_DEVICE_PLUGIN_IMAGE),
            "config": json.dumps(shared_device_plugin_config(selected), indent=2, sort_keys=True),
        },
    }
    if cloud in OFED_DRIVER_CLOUDS:
        spec["ofedDriver"] = {
            # By tag: the operator appends each node pool's OS and architecture to it (versions.UNPINNED_IMAGES).
            **image_spec(versions.DOCA_DRIVER_IMAGE),
            # Upgrades drain one node at a time, like the upstream example.
            "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1,
                              "drain": {"enable": True, "force": True, "deleteEmptyDir": True,
                                        "timeoutSeconds": 300}},
        }
    return {
        "apiVersion": NIC_CLUSTER_POLICY_API_VERSION,
        "kind": "NicClusterPolicy",
        "metadata": metadata(NIC_CLUSTER_POLICY_NAME),
        "spec": spec,
    }


def pod_requirements(pool: GpuPool) -> dict:
    """What a training pod on an RDMA pool adds: the RDMA resource (limits) and the pool's pod annotations.

    EFA: one ``vpc.amazonaws.com/efa`` per interface of the node (all of them for full bandwidth). Shared RDMA
    (``rdma/ib``, ``rdma/roce``): one unit gives the pod every HCA of the node. GKE GPUDirect pools publish
    annotations (multi-network interfaces) and no extended resource. Empty for pools without RDMA.
    """
    return {"resources": pool.rdma_limits, "annotations": dict(pool.rdma_pod_annotations)}
