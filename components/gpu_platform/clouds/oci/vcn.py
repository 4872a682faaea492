"""`OkeVcn`: the VCN an OKE cluster with VCN-native pod networking needs, built from `oci_network`'s pure data."""

import re
from typing import Optional, TypedDict

import pulumi
from typing_extensions import Required

from ...component_args import Args, KeywordArgs
from ...kubernetes_base.common import child_opts
from .. import missing_extra
from . import contract
from . import network as oci_network

try:
    import pulumi_oci as oci
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None


def vcn_dns_label(name: str) -> str:
    """A VCN DNS label from a name: letters and digits, starting with a letter, at most 15 characters."""
    label = re.sub(r"[^a-z0-9]", "", name.lower())
    if not label or not label[0].isalpha():
        label = "vcn" + label
    return label[:15]


class OkeVcnArgs(TypedDict, total=False):
    """Arguments of `OkeVcn`."""

    compartment_id: Required[pulumi.Input[str]]
    """Compartment OCID of every network resource."""
    cidr: str
    """VCN CIDR (a /16 or larger); the subnets are carved from its first /16. Default ``10.0.0.0/16``."""
    api_allowed_cidrs: list[str]
    """IPv4 CIDRs allowed to reach the Kubernetes API endpoint on TCP 6443 from outside the VCN. Default none: the
    endpoint subnet admits only the worker and pod subnets and routes through the NAT and service gateways."""


class OkeVcn(pulumi.ComponentResource, metaclass=KeywordArgs):
    """VCN, internet/NAT/service gateways, public and private route tables, a security list and a regional
    subnet each for the Kubernetes API endpoint, worker nodes, pods and Service load balancers."""

    vcn_id: pulumi.Output[str]
    endpoint_subnet_id: pulumi.Output[str]
    worker_subnet_id: pulumi.Output[str]
    pod_subnet_id: pulumi.Output[str]
    load_balancer_subnet_id: pulumi.Output[str]

    def __init__(self, name: str, args: OkeVcnArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("OkeVcn", name, cloud="oci")
        contract.refuse_renamed(checker, args)
        args = checker.check(args, OkeVcnArgs, contract.VCN_RULES)  # type: ignore[assignment]
        super().__init__("gpuplatform:index:OkeVcn", name, {}, opts)
        compartment = args["compartment_id"]
        allowed = tuple(args.get("api_allowed_cidrs", []))
        public_endpoint = bool(allowed)
        layout = oci_network.subnet_layout(args.get("cidr", "10.0.0.0/16"))
        self.layout = layout
        rules = oci_network.subnet_rules(layout, allowed)

        def opts_() -> pulumi.ResourceOptions:
            return child_opts(self, opts)

        self.vcn = oci.core.Vcn(f"{name}-vcn", compartment_id=compartment, cidr_blocks=[layout.vcn],
                                display_name=f"{name}-vcn", dns_label=vcn_dns_label(name), opts=opts_())
        vcn_id = self.vcn.id
        services = oci.core.get_services_output(opts=pulumi.InvokeOutputOptions(parent=self))
        osn = services.services.apply(oci_network.all_services)
        osn_id, osn_label = osn.apply(lambda s: s[0]), osn.apply(lambda s: s[1])

        self.internet_gateway = oci.core.InternetGateway(
            f"{name}-igw", compartment_id=compartment, vcn_id=vcn_id, enabled=True,
            display_name=f"{name}-igw", opts=opts_())
        self.nat_gateway = oci.core.NatGateway(
            f"{name}-nat", compartment_id=compartment, vcn_id=vcn_id, display_name=f"{name}-nat", opts=opts_())
        self.service_gateway = oci.core.ServiceGateway(
            f"{name}-sgw", compartment_id=compartment, vcn_id=vcn_id, display_name=f"{name}-sgw",
            services=[{"service_id": osn_id}], opts=opts_())
        self.public_routes = oci.core.RouteTable(
            f"{name}-public", compartment_id=compartment, vcn_id=vcn_id, display_name=f"{name}-public",
            route_rules=[{"network_entity_id": self.internet_gateway.id, "destination": oci_network.ANYWHERE,
                          "destination_type": "CIDR_BLOCK", "description": "Internet through the internet gateway"}],
            opts=opts_())
        self.private_routes = oci.core.RouteTable(
            f"{name}-private", compartment_id=compartment, vcn_id=vcn_id, display_name=f"{name}-private",
            route_rules=[
                {"network_entity_id": self.nat_gateway.id, "destination": oci_network.ANYWHERE,
                 "destination_type": "CIDR_BLOCK", "description": "Internet through the NAT gateway"},
                {"network_entity_id": self.service_gateway.id, "destination": osn_label,
                 "destination_type": "SERVICE_CIDR_BLOCK", "description": "OCI services through the service gateway"},
            ],
            opts=opts_())

        # (subnet key, CIDR, may hold public IPs, routes through the internet gateway, DNS label). The endpoint
        # subnet may always hold a public IP: whether the endpoint has one is `endpoint_config.is_public_ip_enabled`,
        # which OKE changes in place (UpdateClusterEndpointConfig takes isPublicIpEnabled and nsgIds; the subnet is
        # fixed at creation), whereas `prohibit_public_ip_on_vnic` cannot change without replacing the subnet and
        # the cluster in it. Its security list admits no one from outside the VCN unless
        # `api_allowed_cidrs` names them, and a private endpoint routes through the NAT and service gateways.
        subnets = [
            ("endpoint", layout.endpoint, True, public_endpoint, "api"),
            ("workers", layout.workers, False, False, "workers"),
            ("pods", layout.pods, False, False, "pods"),
            ("load_balancers", layout.load_balancers, True, True, "lb"),
        ]
        self.security_lists: dict[str, oci.core.SecurityList] = {}
        self.subnets: dict[str, oci.core.Subnet] = {}
        for key, cidr, public_ips, internet_routes, dns in subnets:
            short = key.replace("_", "-")
            rule_args = osn_label.apply(lambda label, k=key: oci_network.security_list_args(rules[k], label))
            self.security_lists[key] = oci.core.SecurityList(
                f"{name}-{short}-rules", compartment_id=compartment, vcn_id=vcn_id, display_name=f"{name}-{short}",
                ingress_security_rules=rule_args.apply(lambda r: r["ingress_security_rules"]),
                egress_security_rules=rule_args.apply(lambda r: r["egress_security_rules"]),
                opts=opts_())
            self.subnets[key] = oci.core.Subnet(
                f"{name}-{short}", compartment_id=compartment, vcn_id=vcn_id, cidr_block=cidr,
                display_name=f"{name}-{short}", dns_label=dns, prohibit_public_ip_on_vnic=not public_ips,
                route_table_id=(self.public_routes if internet_routes else self.private_routes).id,
                security_list_ids=[self.security_lists[key].id], opts=opts_())

        self.vcn_id = vcn_id
        self.endpoint_subnet_id = self.subnets["endpoint"].id
        self.worker_subnet_id = self.subnets["workers"].id
        self.pod_subnet_id = self.subnets["pods"].id
        self.load_balancer_subnet_id = self.subnets["load_balancers"].id
        self.register_outputs({
            "vcn_id": self.vcn_id, "endpoint_subnet_id": self.endpoint_subnet_id,
            "worker_subnet_id": self.worker_subnet_id, "pod_subnet_id": self.pod_subnet_id,
            "load_balancer_subnet_id": self.load_balancer_subnet_id,
        })
