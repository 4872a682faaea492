"""EFA (Elastic Fabric Adapter) layout of an RDMA pool's launch template: pure data, no SDK.

EKS user guide (``ml/node-efa``): network card 0 carries the primary interface and may not be ``efa-only``;
``efa-only`` interfaces (an EFA device without an IP address, so a 32-card p5 does not burn 32 VPC IPs) need
VPC CNI v1.18.5 or later. The platform puts an ``efa`` interface (EFA + ENA) on card 0 and an ``efa-only``
interface on every other card, one card per EFA device the shape has (32 on p5.48xlarge, 16 on p5en.48xlarge,
4 on p4d.24xlarge), like terraform-aws-eks's ``enable_efa_only`` and pulumi-eks's ``enableEfaSupport``.
"""

import re
from collections.abc import Sequence
from typing import Any

EFA = "efa"
EFA_ONLY = "efa-only"
MIN_VPC_CNI_FOR_EFA_ONLY = (1, 18, 5)
ALL_TRAFFIC = "-1"
"""``ip_protocol`` of a security-group rule that allows every protocol and port."""


def efa_network_interfaces(interfaces: int, security_group_ids: Sequence[Any]) -> list[dict]:
    """Launch-template ``network_interfaces`` for a shape with ``interfaces`` EFA devices.

    Card 0 is the node's primary interface (device index 0); the ``efa-only`` interfaces go on device index 1
    of their card. Every interface carries the same security groups: EKS adds none of its own once a launch
    template names them.
    """
    if interfaces < 1:
        raise ValueError(f"an EFA pool needs at least one EFA interface, got {interfaces}")
    return [
        {
            "network_card_index": card,
            "device_index": 0 if card == 0 else 1,
            "interface_type": EFA if card == 0 else EFA_ONLY,
            "security_groups": list(security_group_ids),
            "delete_on_termination": "true",
        }
        for card in range(interfaces)
    ]


def efa_self_rules() -> dict[str, dict]:
    """The EFA security group's rules: all traffic from and to itself (EC2 user guide: "The EFA must be a
    member of a security group that allows all inbound and outbound traffic to and from the security group
    itself")."""
    rule = {"ip_protocol": ALL_TRAFFIC, "description": "EFA: all traffic between the pool's nodes"}
    return {"ingress": dict(rule), "egress": dict(rule)}


def parse_addon_version(version: str) -> tuple[int, int, int]:
    """``v1.20.4-eksbuild.2`` -> ``(1, 20, 4)``."""
    match = re.match(r"^v(\d+)\.(\d+)\.(\d+)", version)
    if not match:
        raise ValueError(f"'{version}' is not an EKS add-on version such as v1.20.4-eksbuild.2")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def vpc_cni_supports_efa_only(version: str) -> bool:
    """Whether a vpc-cni add-on version leaves ``efa-only`` interfaces alone (>= v1.18.5)."""
    return parse_addon_version(version) >= MIN_VPC_CNI_FOR_EFA_ONLY
