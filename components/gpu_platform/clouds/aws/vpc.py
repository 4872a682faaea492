"""Layout of a new EKS VPC: which zones, which CIDR per subnet. Pure functions, no SDK."""

import ipaddress
from collections.abc import Sequence

from .options import MAX_VPC_ZONES

ELB_ROLE_TAG = "kubernetes.io/role/elb"
"""Subnet tag the AWS Load Balancer Controller looks for when placing internet-facing load balancers."""
INTERNAL_ELB_ROLE_TAG = "kubernetes.io/role/internal-elb"
"""Subnet tag for internal load balancers."""
MAX_ZONES = MAX_VPC_ZONES
"""A new VPC spans up to three zones: private subnets in three quarters of the CIDR, public ones in the fourth."""


def vpc_zones(configured: Sequence[str], pool_zones: Sequence[str], region_zones: Sequence[str]) -> list[str]:
    """The new VPC's zones: the configured ones, else the zones pools name first, then the region's own,
    three in all (at least every zone a pool names, so a pinned pool always finds its subnet)."""
    if configured:
        return list(configured)
    ordered = list(dict.fromkeys([*pool_zones, *region_zones]))
    return ordered[:max(MAX_ZONES, len(dict.fromkeys(pool_zones)))]


def subnet_cidrs(vpc_cidr: str, zones: int) -> list[tuple[str, str]]:
    """``(private, public)`` CIDRs per zone.

    Nodes and pods (the VPC CNI gives every pod a VPC address) live in the private subnets, so each gets a
    quarter of the VPC; the public subnets only hold load balancers and NAT gateways and share the last quarter.
    """
    if not 1 <= zones <= MAX_ZONES:
        raise ValueError(f"a new VPC spans 1 to {MAX_ZONES} zones, got {zones}")
    network = ipaddress.IPv4Network(vpc_cidr)
    quarters = list(network.subnets(prefixlen_diff=2))
    public = list(quarters[3].subnets(prefixlen_diff=2))
    return [(str(quarters[i]), str(public[i])) for i in range(zones)]
