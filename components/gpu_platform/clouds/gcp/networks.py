"""GPUDirect NIC networks on GKE: which extra VPCs each A3 shape needs, and how pods attach to them.

Pure data and functions. An A3 node has, besides its primary NIC, GPU NICs that must each sit in their own
VPC (TCPX/TCPXO: one gVNIC VPC per NIC) or their own subnet of a RoCE VPC (A3 Ultra: one RoCE VPC with eight
subnets, plus a second gVNIC VPC for the other Titanium NIC). GKE multi-networking exposes each NIC to pods
through a cluster-scoped ``GKENetworkParamSet`` + ``Network`` pair (``networking.gke.io/v1``); a pod attaches
them with the ``networking.gke.io/interfaces`` annotation.

Facts (checked 2026-11): NIC counts from ``catalog`` (a3-highgpu-8g: 4 GPU NICs, a3-megagpu-8g: 8,
a3-ultragpu-8g: 8 RDMA NICs); MTU 8244 for TCPX/TCPXO VPCs and 8896 for A3 Ultra's, network names
``vpc1..`` (TCPX/TCPXO) and ``gvnic-1`` + ``rdma-0..7`` (A3 Ultra), deviceMode ``NetDevice`` / ``RDMA``, the RoCE
network profile ``<zone>-vpc-roce``: GoogleCloudPlatform/cluster-toolkit v1.95.0 (``examples/gke-a3-*``,
``modules/network/gpu-rdma-vpc``, ``modules/scheduler/gke-cluster/templates``); annotation keys and the
``default`` pod network: GoogleCloudPlatform/gke-networking-api v0.2.0 ``apis/network/v1``.
"""

import ipaddress
import json
from dataclasses import dataclass
from typing import Optional

from ... import catalog

API_VERSION = "networking.gke.io/v1"
DEFAULT_INTERFACE_ANNOTATION = "networking.gke.io/default-interface"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
DEFAULT_POD_NETWORK = "default"
PRIMARY_INTERFACE = "eth0"
NET_DEVICE = "NetDevice"
RDMA_DEVICE = "RDMA"
GPU_NIC_SLOTS = 32
"""The GPU network CIDR is split into this many equal subnets (a /16 gives /21s of 2046 nodes each)."""


@dataclass(frozen=True)
class GpuDirectProfile:
    """The extra networks one GPUDirect fabric needs per node."""

    fabric: str
    gvnic_prefix: str
    """Name of the gVNIC networks: ``vpc`` gives vpc1, vpc2...; ``gvnic-`` gives gvnic-1."""
    extra_gvnic_networks: int
    """gVNIC VPCs beyond the GPU NICs (A3 Ultra's second Titanium NIC)."""
    gpu_nics_are_rdma: bool
    """GPU NICs are subnets of one RoCE VPC (``rdma-0..``) instead of one gVNIC VPC each."""
    mtu: int
    gvnic_first_slot: int
    """First slot of the GPU network CIDR the gVNIC subnets take."""


PROFILES = {
    catalog.GPUDIRECT_TCPX: GpuDirectProfile(catalog.GPUDIRECT_TCPX, "vpc", 0, False, 8244, 0),
    catalog.GPUDIRECT_TCPXO: GpuDirectProfile(catalog.GPUDIRECT_TCPXO, "vpc", 0, False, 8244, 0),
    catalog.GPUDIRECT_RDMA: GpuDirectProfile(catalog.GPUDIRECT_RDMA, "gvnic-", 1, True, 8896, 8),
}
RDMA_FIRST_SLOT = 16
"""A3 Ultra's eight RDMA subnets take slots 16-23, clear of the gVNIC slots 0-8."""


@dataclass(frozen=True)
class GpuSubnet:
    """One subnet a GPU NIC attaches to; its name is also the Kubernetes ``Network`` name."""

    name: str
    cidr: str
    device_mode: str


@dataclass(frozen=True)
class GpuVpc:
    """One extra VPC network for GPU NICs."""

    key: str
    """Suffix of the VPC's name (``vpc1``, ``gvnic-1``, ``rdma``)."""
    mtu: int
    subnets: tuple[GpuSubnet, ...]
    roce_zone: Optional[str] = None
    """Zone of the RoCE network profile (A3 Ultra's RDMA VPC); None for gVNIC VPCs."""

    @property
    def firewalled(self) -> bool:
        """gVNIC VPCs get an allow-internal rule; RoCE VPCs take no firewall rules (cluster-toolkit adds none)."""
        return self.roce_zone is None


@dataclass(frozen=True)
class GpuNetworkPlan:
    """Every extra VPC of a cluster and which subnets each RDMA pool attaches, in NIC order."""

    vpcs: tuple[GpuVpc, ...]
    attachments: dict[str, tuple[tuple[str, str], ...]]
    """Pool name -> ((VPC key, subnet name), ...): the node pool's additional node networks, eth1 first."""

    @property
    def multi_networking(self) -> bool:
        return bool(self.vpcs)

    def subnet(self, name: str) -> GpuSubnet:
        return next(s for v in self.vpcs for s in v.subnets if s.name == name)


def _slot(cidr: str, index: int) -> str:
    base = ipaddress.ip_network(cidr)
    return str(list(base.subnets(new_prefix=base.prefixlen + 5))[index])


def _gvnic_name(profile: GpuDirectProfile, index: int) -> str:
    return f"{profile.gvnic_prefix}{index}"


def plan_networks(pools: list[tuple[str, str, int, Optional[str]]], gpu_cidr: str) -> GpuNetworkPlan:
    """The extra VPCs for ``pools`` = [(pool name, fabric, GPU NICs, zone)] (RDMA pools only).

    TCPX and TCPXO pools share gVNIC VPCs ``vpc1..vpcN`` (N = the most NICs any pool needs); A3 Ultra pools share
    ``gvnic-1`` and one RoCE VPC in their zone (the configuration guarantees a single zone).
    """
    gvnic: dict[str, tuple[GpuDirectProfile, int]] = {}
    rdma: Optional[tuple[str, int]] = None
    attachments: dict[str, tuple[tuple[str, str], ...]] = {}
    for name, fabric, nics, zone in pools:
        profile = PROFILES[fabric]
        attach: list[tuple[str, str]] = []
        gvnic_count = profile.extra_gvnic_networks if profile.gpu_nics_are_rdma else nics
        for k in range(1, gvnic_count + 1):
            net = _gvnic_name(profile, k)
            gvnic.setdefault(net, (profile, k))
            attach.append((net, net))
        if profile.gpu_nics_are_rdma:
            rdma = (zone or "", max(nics, rdma[1] if rdma else 0))
            attach += [("rdma", f"rdma-{j}") for j in range(nics)]
        attachments[name] = tuple(attach)
    vpcs = [
        GpuVpc(net, profile.mtu, (GpuSubnet(net, _slot(gpu_cidr, profile.gvnic_first_slot + k - 1), NET_DEVICE),))
        for net, (profile, k) in sorted(gvnic.items(), key=lambda item: (item[1][1], item[0]))
    ]
    if rdma is not None:
        subnets = tuple(GpuSubnet(f"rdma-{j}", _slot(gpu_cidr, RDMA_FIRST_SLOT + j), RDMA_DEVICE)
                        for j in range(rdma[1]))
        vpcs.append(GpuVpc("rdma", PROFILES[catalog.GPUDIRECT_RDMA].mtu, subnets, roce_zone=rdma[0]))
    return GpuNetworkPlan(tuple(vpcs), attachments)


def roce_network_profile(project: str, zone: str) -> str:
    """Partial URL of the RoCE network profile an A3 Ultra RDMA VPC is created with."""
    return f"projects/{project}/global/networkProfiles/{zone}-vpc-roce"


def network_param_set(subnet: GpuSubnet, vpc_name: str, subnet_name: str) -> dict:
    """``GKENetworkParamSet`` body (wire form, no metadata): which VPC/subnet a Kubernetes network maps to."""
    return {"vpc": vpc_name, "vpcSubnet": subnet_name, "deviceMode": subnet.device_mode}


def network_spec(subnet: GpuSubnet) -> dict:
    """``Network`` spec: a Device network whose parameters are the same-named ``GKENetworkParamSet``."""
    return {
        "type": "Device",
        "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": subnet.name},
    }


def pod_annotations(attachments: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Annotations a pod needs to get every GPU NIC of its node, ``eth1`` onwards in node-pool order."""
    interfaces = [{"interfaceName": PRIMARY_INTERFACE, "network": DEFAULT_POD_NETWORK}]
    interfaces += [{"interfaceName": f"eth{i}", "network": subnet}
                   for i, (_, subnet) in enumerate(attachments, start=1)]
    return {DEFAULT_INTERFACE_ANNOTATION: PRIMARY_INTERFACE, INTERFACES_ANNOTATION: json.dumps(interfaces)}
