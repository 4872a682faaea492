"""`RdmaStack`: the device plugins that make the RDMA pools' NICs schedulable (EFA, InfiniBand, RoCEv2).

Decisions live in `rdma_specs`; this component creates the releases and the NicClusterPolicy in order. Install
order: the platform makes this component depend on the NVIDIA stack, so its NFD (and the NodeFeatureRule CRD)
exists before the Network Operator, and the NicClusterPolicy waits for the operator's CRD.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import catalog, versions
from ..component_args import DNS_LABEL, Args, KeywordArgs, choice
from ..kubernetes_base.common import check_pool_set, checked_cloud, child_opts, helm_release, pools_of
from ..pools import GpuPoolSpec
from ..security import namespace_security
from . import rdma_specs as specs


class RdmaStackArgs(TypedDict, total=False):
    """Arguments of `RdmaStack`."""

    cloud: Required[str]
    """``aws``, ``azure``, ``gcp``, ``oci`` or ``existing`` (AKS nodes also get the DOCA-OFED driver container)."""
    pools: list[GpuPoolSpec]
    """The platform's GPU pools; only RDMA pools matter (EFA, InfiniBand, RoCEv2; GKE GPUDirect is the GKE
    layer's)."""
    namespace: str
    """Namespace of the Network Operator. Default ``nvidia-network-operator``. The EFA plugin runs in
    ``kube-system``."""
    nfd_installed: bool
    """node-feature-discovery already runs (the NVIDIA stack's): the Network Operator's own stays off. Default
    false."""


RULES = {"cloud": choice(*catalog.CLOUDS), "namespace": DNS_LABEL}


def checked_args(name: str, args: RdmaStackArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("RdmaStack", name)
    checker = Args("RdmaStack", name, checked_cloud(checker, args))
    checked = checker.check(args, RdmaStackArgs, RULES)
    check_pool_set(checker, checked.get("pools", []))
    return checked


class RdmaStack(pulumi.ComponentResource, metaclass=KeywordArgs):
    """EFA device plugin on EFA pools; NVIDIA Network Operator + RDMA shared device plugin on IB/RoCE pools."""

    pod_requirements: pulumi.Output[dict[str, Any]]
    """Per RDMA pool: the extended-resource limits and pod annotations a training pod adds."""

    def __init__(self, name: str, args: RdmaStackArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:RdmaStack", name, {}, opts)
        cloud = args["cloud"]
        pools = pools_of(args.get("pools", []))
        ns = args.get("namespace", specs.NETWORK_OPERATOR_NAMESPACE)

        self.efa_release: Optional[k8s.helm.v3.Release] = None
        self.network_operator: Optional[k8s.helm.v3.Release] = None
        self.nic_cluster_policy: Optional[k8s.apiextensions.CustomResource] = None

        if specs.efa_pools(pools):
            self.efa_release = helm_release(
                f"{name}-efa-device-plugin", versions.EFA_DEVICE_PLUGIN, "aws-efa-k8s-device-plugin",
                specs.EFA_NAMESPACE, specs.efa_values(pools), child_opts(self, opts), create_namespace=False)

        if specs.network_operator_pools(pools):
            # Pod Security privileged: the OFED driver, RDMA device plugin and CNI installers (`namespace_security`).
            namespace = k8s.core.v1.Namespace(
                f"{name}-namespace", **namespace_security.namespace_body(
                    ns, namespace_security.namespace_pod_security("network-operator")), opts=child_opts(self, opts))
            self.network_operator = helm_release(
                f"{name}-network-operator", versions.NETWORK_OPERATOR, "network-operator", ns,
                specs.network_operator_values(pools, bool(args.get("nfd_installed", False))),
                child_opts(self, opts, depends_on=[namespace]), create_namespace=False)
            policy = specs.nic_cluster_policy(cloud, pools)
            self.nic_cluster_policy = k8s.apiextensions.CustomResource(
                f"{name}-nic-cluster-policy", api_version=policy["apiVersion"], kind=policy["kind"],
                metadata=policy["metadata"], spec=policy["spec"],
                opts=child_opts(self, opts, depends_on=[self.network_operator]))

        self.pod_requirements = pulumi.Output.from_input(
            {p.name: specs.pod_requirements(p) for p in pools if p.rdma_fabric})
        self.register_outputs({"pod_requirements": self.pod_requirements})
