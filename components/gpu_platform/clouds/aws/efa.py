"""EFA (Elastic Fabric Adapter) layout of an RDMA pool's launch template: pure data, no SDK.

EKS user guide (``ml/node-efa``): network card 0 carries the primary interface and may not be ``efa-only``;
``efa-only`` interfaces (an EFA device without an IP address, so a 32-card p5 does not burn 32 VPC IPs) need
VPC CNI v1.18.5 or later. The platform puts an ``efa`` interface (EFA + ENA) on card 0 and an ``efa-only``
interface on every other card, one card per EFA device the shape has (32 on p5.48xlarge, 16 on p5en.48xlarge,
4 on p4d.24xlarge), like terraform-aws-eks's ``enable_efa_only`` and pulumi-eks's ``enableEfaSupport``.

Shapes whose cards do not follow that pattern have their own layout (`EFA_LAYOUTS`). p6e-gb200.36xlarge has 17
network cards, of which card 0 "must be of type ``interface``" (ENA only, EKS user guide "Use P6e-GB200
UltraServers with Amazon EKS"), and its 4 EFA devices come from one ``efa-only`` interface per network-card group:
cards 1, 5, 9 and 13 (the guide expects ``vpc.amazonaws.com/efa: 4`` then; the card numbers are ai-on-eks's
``efa-networkinterfaces-generator``, IP-optimised use case, ``p6e_gb200_36xlarge_use_case_1``).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

EFA = "efa"
EFA_ONLY = "efa-only"
INTERFACE = "interface"
"""``interface_type`` of a plain ENA interface (EC2 ``InterfaceType`` ``interface``)."""
MIN_VPC_CNI_FOR_EFA_ONLY = (1, 18, 5)
ALL_TRAFFIC = "-1"
"""``ip_protocol`` of a security-group rule that allows every protocol and port."""


@dataclass(frozen=True)
class EfaLayout:
    """Where a shape's EFA devices go in its launch template."""

    primary_interface_type: str
    """``efa`` (EFA + ENA) or ``interface`` (ENA only) on network card 0, device index 0."""
    efa_only_cards: tuple[int, ...]
    """Network cards that carry one ``efa-only`` interface each (device index 1)."""

    @property
    def efa_devices(self) -> int:
        """EFA devices a node of this layout advertises (``vpc.amazonaws.com/efa``)."""
        return len(self.efa_only_cards) + (1 if self.primary_interface_type == EFA else 0)


EFA_LAYOUTS: dict[str, EfaLayout] = {
    "p6e-gb200.36xlarge": EfaLayout(INTERFACE, (1, 5, 9, 13)),
}
"""Shapes whose EFA interfaces are not ``efa`` on card 0 plus ``efa-only`` on cards 1..n-1 (module docstring)."""


def efa_layout(instance_type: str, interfaces: int) -> EfaLayout:
    """The layout of ``instance_type``: its own (`EFA_LAYOUTS`) or ``efa`` on card 0 and ``efa-only`` on the next
    ``interfaces - 1`` cards."""
    return EFA_LAYOUTS.get(instance_type) or EfaLayout(EFA, tuple(range(1, interfaces)))


def efa_network_interfaces(interfaces: int, security_group_ids: Sequence[Any], instance_type: str = "") -> list[dict]:
    """Launch-template ``network_interfaces`` for a shape with ``interfaces`` EFA devices (`efa_layout`).

    Card 0 is the node's primary interface (device index 0); the ``efa-only`` interfaces go on device index 1
    of their card. Every interface carries the same security groups: EKS adds none of its own once a launch
    template names them.
    """
    if interfaces < 1:
        raise ValueError(f"an EFA pool needs at least one EFA interface, got {interfaces}")
    layout = efa_layout(instance_type, interfaces)
    if layout.efa_devices != interfaces:
        raise ValueError(f"the EFA layout of {instance_type} gives {layout.efa_devices} EFA devices, the catalog "
                         f"says {interfaces}")
    cards = [(0, 0, layout.primary_interface_type), *((card, 1, EFA_ONLY) for card in layout.efa_only_cards)]
    return [
        {
            "network_card_index": card,
            "device_index": device,
            "interface_type": kind,
            "security_groups": list(security_group_ids),
            "delete_on_termination": "true",
        }
        for card, device, kind in cards
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
