"""The VCN layout and security rules of an OKE cluster with VCN-native pod networking, as pure data.

Subnets follow Oracle's "Example Network Resource Configurations" for OKE (regional subnets: a Kubernetes API
endpoint subnet, private worker and pod subnets, a public load-balancer subnet). The endpoint is public only when
``apiAllowedCidrs`` lists someone, and then only to them (see `api_client_rules`). Security list rules mirror
the OKE port requirements as terraform-oci-oke's ``modules/network/nsg-*.tf`` encode them: 6443 (Kubernetes
API), 12250 (OKE control plane), 10250 (kubelet), NodePorts 30000-32767 and 10256 (kube-proxy health checks)
from load balancers, ICMP type 3 code 4 (path MTU discovery), and OCI services through the service gateway.
"""

import ipaddress
from dataclasses import dataclass
from typing import Optional

# Kubernetes Service ClusterIPs; outside the VCN so it never collides with a subnet.
SERVICES_CIDR = "10.96.0.0/16"
ANYWHERE = "0.0.0.0/0"
OSN = "oracle-services-network"
"""Placeholder peer meaning "All <region> Services in Oracle Services Network" (a service CIDR label)."""

# OCI security rule protocol numbers.
ALL, ICMP, TCP, UDP = "all", "1", "6", "17"
APISERVER_PORT = 6443
OKE_CONTROL_PLANE_PORT = 12250
KUBELET_PORT = 10250
KUBE_PROXY_HEALTH_PORT = 10256
NODE_PORTS = (30000, 32767)
HTTP, HTTPS = 80, 443


@dataclass(frozen=True)
class SubnetLayout:
    """CIDRs of the four OKE subnets carved out of the VCN."""

    vcn: str
    endpoint: str
    load_balancers: str
    workers: str
    pods: str


def subnet_layout(vcn_cidr: str) -> SubnetLayout:
    """Subnets in the VCN's first /16: API endpoint /28, load balancers /24, workers /20, pods /18.

    Pods get the largest range: with VCN-native pod networking every pod takes a VCN IP (up to 110 per node).
    """
    vcn = ipaddress.IPv4Network(vcn_cidr)
    base = vcn if vcn.prefixlen == 16 else next(vcn.subnets(new_prefix=16))

    def nth(prefix: int, index: int) -> str:
        return str(next(n for i, n in enumerate(base.subnets(new_prefix=prefix)) if i == index))

    return SubnetLayout(vcn=str(vcn), endpoint=nth(28, 0), load_balancers=nth(24, 1), workers=nth(20, 1),
                        pods=nth(18, 1))


@dataclass(frozen=True)
class Rule:
    """One stateful security rule: traffic to/from ``peer`` (a CIDR or :data:`OSN`)."""

    peer: str
    protocol: str
    description: str
    ports: Optional[tuple[int, int]] = None
    """TCP/UDP destination port range; None: all ports."""
    icmp: Optional[tuple[int, int]] = None
    """ICMP (type, code)."""


def _tcp(peer: str, port: int, description: str, port_max: Optional[int] = None) -> Rule:
    return Rule(peer, TCP, description, (port, port_max or port))


def _path_discovery(peer: str) -> Rule:
    return Rule(peer, ICMP, "Path MTU discovery", icmp=(3, 4))


def api_client_rules(api_allowed_cidrs: tuple[str, ...]) -> list[Rule]:
    """Ingress to the Kubernetes API from outside the VCN: TCP 6443 from each allowed CIDR, nothing else (none
    without allowed CIDRs: the endpoint is then private)."""
    return [_tcp(c, APISERVER_PORT, "Clients (kubectl, Pulumi) to the Kubernetes API") for c in api_allowed_cidrs]


def subnet_rules(layout: SubnetLayout, api_allowed_cidrs: tuple[str, ...]) -> dict[str, dict[str, list[Rule]]]:
    """``{subnet: {"ingress": [...], "egress": [...]}}`` for the endpoint, workers, pods and load balancers."""
    w, p, e, lb = layout.workers, layout.pods, layout.endpoint, layout.load_balancers
    external = api_client_rules(api_allowed_cidrs)
    return {
        "endpoint": {
            "ingress": [
                *external,
                _tcp(w, APISERVER_PORT, "Worker nodes to the Kubernetes API"),
                _tcp(w, OKE_CONTROL_PLANE_PORT, "Worker nodes to the OKE control plane"),
                _tcp(p, APISERVER_PORT, "Pods to the Kubernetes API"),
                _tcp(p, OKE_CONTROL_PLANE_PORT, "Pods to the OKE control plane"),
                _path_discovery(w),
            ],
            "egress": [
                _tcp(OSN, HTTPS, "Control plane to OCI services"),
                Rule(w, TCP, "Control plane to kubelets and webhooks on worker nodes"),
                Rule(p, ALL, "Control plane to webhooks served by pods"),
                _path_discovery(w),
            ],
        },
        "workers": {
            "ingress": [
                Rule(w, ALL, "Worker nodes to each other"),
                Rule(p, ALL, "Pods to worker nodes (NodePorts, hostNetwork pods)"),
                Rule(e, TCP, "Control plane to kubelets and webhooks"),
                _tcp(lb, NODE_PORTS[0], "Load balancers to NodePorts", NODE_PORTS[1]),
                _tcp(lb, KUBE_PROXY_HEALTH_PORT, "Load balancer health checks (kube-proxy)"),
                _path_discovery(ANYWHERE),
            ],
            "egress": [
                Rule(w, ALL, "Worker nodes to each other"),
                Rule(p, ALL, "Worker nodes to pods"),
                _tcp(e, APISERVER_PORT, "Worker nodes to the Kubernetes API"),
                _tcp(e, OKE_CONTROL_PLANE_PORT, "Worker nodes to the OKE control plane"),
                _tcp(e, KUBELET_PORT, "Worker nodes to the control plane for health checks"),
                Rule(OSN, TCP, "Worker nodes to OCI services (OCIR, Object Storage)"),
                _path_discovery(ANYWHERE),
                Rule(ANYWHERE, ALL, "Worker nodes to the internet through the NAT gateway (image pulls)"),
            ],
        },
        "pods": {
            "ingress": [
                Rule(p, ALL, "Pods to each other"),
                Rule(w, ALL, "Worker nodes to pods"),
                Rule(e, ALL, "Control plane to webhooks served by pods"),
                Rule(lb, ALL, "Load balancers to pods"),
                _path_discovery(ANYWHERE),
            ],
            "egress": [
                Rule(p, ALL, "Pods to each other"),
                Rule(w, ALL, "Pods to worker nodes"),
                _tcp(e, APISERVER_PORT, "Pods to the Kubernetes API"),
                _tcp(e, OKE_CONTROL_PLANE_PORT, "Pods to the OKE control plane"),
                Rule(OSN, TCP, "Pods to OCI services"),
                _path_discovery(ANYWHERE),
                Rule(ANYWHERE, ALL, "Pods to the internet through the NAT gateway"),
            ],
        },
        "load_balancers": {
            "ingress": [
                _tcp(ANYWHERE, HTTP, "Clients to public Service load balancers (HTTP)"),
                _tcp(ANYWHERE, HTTPS, "Clients to public Service load balancers (HTTPS)"),
            ],
            "egress": [
                _tcp(w, NODE_PORTS[0], "Load balancers to NodePorts", NODE_PORTS[1]),
                _tcp(w, KUBE_PROXY_HEALTH_PORT, "Load balancer health checks (kube-proxy)"),
                Rule(p, ALL, "Load balancers to pods"),
                _path_discovery(w),
            ],
        },
    }


def rule_args(rule: Rule, direction: str, osn_cidr_label: str) -> dict:
    """A `Rule` as ``SecurityList{Ingress,Egress}SecurityRuleArgs`` (snake_case dict) of pulumi_oci."""
    peer_key = "source" if direction == "ingress" else "destination"
    is_service = rule.peer == OSN
    args: dict = {
        "protocol": rule.protocol,
        peer_key: osn_cidr_label if is_service else rule.peer,
        f"{peer_key}_type": "SERVICE_CIDR_BLOCK" if is_service else "CIDR_BLOCK",
        "stateless": False,
        "description": rule.description,
    }
    if rule.ports is not None:
        args["tcp_options" if rule.protocol == TCP else "udp_options"] = {"min": rule.ports[0], "max": rule.ports[1]}
    if rule.icmp is not None:
        args["icmp_options"] = {"type": rule.icmp[0], "code": rule.icmp[1]}
    return args


def nsg_rule_args(rule: Rule) -> dict:
    """An ingress `Rule` from a CIDR as ``NetworkSecurityGroupSecurityRule`` arguments (snake_case) of pulumi_oci,
    for an endpoint in a VCN the platform does not own (its security lists are the owner's)."""
    args: dict = {"direction": "INGRESS", "protocol": rule.protocol, "source": rule.peer, "source_type": "CIDR_BLOCK",
                  "stateless": False, "description": rule.description}
    if rule.ports is not None:
        args["tcp_options"] = {"destination_port_range": {"min": rule.ports[0], "max": rule.ports[1]}}
    return args


def security_list_args(rules: dict[str, list[Rule]], osn_cidr_label: str) -> dict[str, list[dict]]:
    """``{"ingress_security_rules": [...], "egress_security_rules": [...]}`` of one subnet's security list."""
    return {f"{d}_security_rules": [rule_args(r, d, osn_cidr_label) for r in rules[d]] for d in ("ingress", "egress")}


def all_services(services: list) -> tuple[str, str]:
    """``(id, cidr_block)`` of the "All <region> Services in Oracle Services Network" entry of ``get_services``."""
    for service in services:
        name = service.get("name", "") if isinstance(service, dict) else getattr(service, "name", "")
        if name.startswith("All ") and name.endswith("Services In Oracle Services Network"):
            if isinstance(service, dict):
                return service["id"], service.get("cidr_block", service.get("cidrBlock", ""))
            return service.id, service.cidr_block
    raise ValueError("the region lists no 'All <region> Services In Oracle Services Network' service")
