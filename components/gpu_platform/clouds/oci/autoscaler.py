"""`OkeClusterAutoscaler`: OKE's Cluster Autoscaler add-on for the GPU node pools.

The add-on (``oci.containerengine.Addon``, ``addon_name = "ClusterAutoscaler"``) runs the Kubernetes cluster
autoscaler managed by OKE. It scales the node pools its ``nodes`` configuration names (``min:max:<node pool
OCID>``, from `ClusterHandle.node_pool_ids`), with the GPU profile of `autoscaler_profile` and OKE workload
identity (enhanced clusters): an IAM policy lets exactly the add-on's service account in this cluster manage node
pools and the instances behind them. Pools whose ``minNodes`` equals ``maxNodes`` are left alone; pools with
``minNodes: 0`` scale from zero.
"""

from typing import Optional, TypedDict

import pulumi
from typing_extensions import Required

from ...component_args import Args, KeywordArgs
from ...config_model import PlatformConfig
from ...kubernetes_base.common import child_opts
from .. import missing_extra
from ..autoscaler_profile import GpuScalingProfile, OkeNodePoolRange, oke_addon_configurations
from ..handle import ClusterHandle
from . import contract, iam
from .iam import compartment_scope

try:
    import pulumi_oci as oci
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None

ADDON_NAME = "ClusterAutoscaler"
NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
PERMISSIONS = (
    "manage cluster-node-pools",
    "manage instance-family",
    "use subnets",
    "read virtual-network-family",
    "use vnics",
    "inspect compartments",
)
"""What the autoscaler does to resize node pools (the OKE cluster autoscaler's documented policy: node pools, the
instances and VNICs they create in the worker subnets)."""


def workload_principal(cluster_id: str) -> str:
    """The condition matching the add-on's service account in this cluster (OKE workload identity)."""
    return iam.workload_principal(cluster_id, NAMESPACE, SERVICE_ACCOUNT)


def policy_statements(compartment_id: str, cluster_id: str) -> list[str]:
    """IAM statements granting the add-on's workload identity (not the nodes: no instance principal, no dynamic
    group) its permissions in the compartment, exactly Oracle's list for workload identity principals
    (contengusingclusterautoscaler.htm, "Using workload identity principals to enable access to node pools")."""
    return [f"Allow any-user to {permission} in {compartment_scope(compartment_id)} where ALL "
            f"{{{workload_principal(cluster_id)}}}" for permission in PERMISSIONS]


class OkeAutoscaledPool(TypedDict):
    """One node pool the add-on scales."""

    node_pool_id: pulumi.Input[str]
    """OCID of the node pool."""
    min_nodes: int
    """Fewest nodes (0 scales the pool to zero)."""
    max_nodes: int
    """Most nodes."""


class OkeClusterAutoscalerArgs(TypedDict, total=False):
    """Arguments of `OkeClusterAutoscaler`."""

    cluster_id: Required[pulumi.Input[str]]
    """OCID of the (enhanced) OKE cluster."""
    compartment_id: Required[pulumi.Input[str]]
    """Compartment of the node pools; the IAM policy lives there."""
    node_pools: Required[list[OkeAutoscaledPool]]
    """The node pools to scale, with their bounds (at least one)."""
    scale_down_unneeded_minutes: int
    """How long a GPU node stays unneeded before it is removed. Default 30."""
    max_node_provision_minutes: int
    """How long a new GPU node may take to become ready. Default 25."""


class OkeClusterAutoscaler(pulumi.ComponentResource, metaclass=KeywordArgs):
    """OKE's Cluster Autoscaler add-on, tuned for GPU node pools, with the IAM policy its workload identity needs."""

    policy: oci.identity.Policy
    addon: oci.containerengine.Addon

    def __init__(self, name: str, args: OkeClusterAutoscalerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("OkeClusterAutoscaler", name, cloud="oci")
        args = checker.check(args, OkeClusterAutoscalerArgs, contract.AUTOSCALER_RULES)  # type: ignore[assignment]
        contract.check_autoscaler(checker, args)
        super().__init__("gpuplatform:index:OkeClusterAutoscaler", name, {}, opts)
        profile = GpuScalingProfile(args.get("scale_down_unneeded_minutes", 30),
                                    args.get("max_node_provision_minutes", 25))
        pools = list(args["node_pools"])
        self.policy = oci.identity.Policy(
            f"{name}-policy", compartment_id=args["compartment_id"],
            description="OKE Cluster Autoscaler add-on: resize the GPU node pools (workload identity)",
            statements=pulumi.Output.all(args["compartment_id"], args["cluster_id"]).apply(
                lambda ids: policy_statements(ids[0], ids[1])),
            opts=child_opts(self, opts))
        ranges = pulumi.Output.all(*[p["node_pool_id"] for p in pools]).apply(
            lambda ids: [OkeNodePoolRange(i, int(p["min_nodes"]), int(p["max_nodes"]))
                         for i, p in zip(ids, pools, strict=True)])
        self.addon = oci.containerengine.Addon(
            f"{name}-addon", addon_name=ADDON_NAME, cluster_id=args["cluster_id"],
            remove_addon_resources_on_delete=True,
            configurations=ranges.apply(lambda r: oke_addon_configurations(profile, r)),
            # Without its permissions the add-on starts and fails every resize.
            opts=child_opts(self, opts, depends_on=[self.policy]))
        self.register_outputs({"addon_name": ADDON_NAME})


def oke_autoscaler_from_config(name: str, config: PlatformConfig, handle: ClusterHandle,
                               opts: pulumi.ResourceOptions) -> Optional[OkeClusterAutoscaler]:
    """The add-on for every pool of the stack that may change size (None when none may)."""
    pools = [OkeAutoscaledPool(node_pool_id=handle.node_pool_ids[p.name], min_nodes=p.min_nodes,
                               max_nodes=p.max_nodes)
             for p in handle.pools if p.max_nodes > p.min_nodes]
    if not pools:
        return None
    return OkeClusterAutoscaler(f"{name}-cluster-autoscaler", OkeClusterAutoscalerArgs(
        cluster_id=handle.outputs["cluster_id"],
        compartment_id=config.compartment_id,
        node_pools=pools,
        scale_down_unneeded_minutes=config.autoscaling.scale_down_unneeded_minutes,
        max_node_provision_minutes=config.autoscaling.max_node_provision_minutes,
    ), opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
        providers={"oci": handle.outputs["oci_provider"]})))
