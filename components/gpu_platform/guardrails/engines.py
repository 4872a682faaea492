"""Whether something in the stack enforces NetworkPolicies.

A NetworkPolicy does nothing unless an engine on the nodes enforces it, and a policy nothing enforces is worse than
none: people believe it (``security.isolation``). The engines a stack can show, by the inputs that turn them on:

- EKS: the ``vpc-cni`` add-on (``aws:eks/addon:Addon``) with ``enableNetworkPolicy`` in its
  ``configurationValues``;
- AKS: the managed cluster's ``networkProfile.networkPolicy`` (``azure``, ``calico`` or ``cilium``);
- GKE: Dataplane V2 (``datapathProvider: ADVANCED_DATAPATH``) or ``networkPolicy.enabled``;
- any cluster: a Calico or Cilium node agent (a ``calico-node``/``cilium`` DaemonSet, or a ``cilium``,
  ``tigera-operator`` or ``calico`` Helm release), as the platform installs on OKE (``CalicoPolicyEngine``).

A cluster whose engine is managed outside the stack (an existing cluster running its own) says so through the
rule's configuration (``engineOutsideStack``).
"""

import json
from collections.abc import Sequence
from typing import Any, Optional

from .props import Resource, get

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
ENGINE_AGENTS = ("calico-node", "cilium")
ENGINE_CHARTS = ("cilium", "tigera-operator", "calico")
AKS_POLICY_ENGINES = ("azure", "calico", "cilium")
CLUSTER_TYPES = ("aws:eks/cluster:Cluster", "azure-native:containerservice:ManagedCluster",
                 "gcp:container/cluster:Cluster", "oci:ContainerEngine/cluster:Cluster")


def _vpc_cni_enforces(configuration: Any) -> bool:
    if not isinstance(configuration, str):
        return False
    try:
        values = json.loads(configuration)
    except ValueError:
        return False
    return str(get(values, "enableNetworkPolicy")).lower() == "true"


def engine_of(resource: Resource) -> Optional[str]:
    """What this resource enforces NetworkPolicies with, or None."""
    props = resource.props
    if resource.type == "aws:eks/addon:Addon":
        if get(props, "addonName") == "vpc-cni" and _vpc_cni_enforces(get(props, "configurationValues")):
            return "the vpc-cni add-on's network policy agent"
    elif resource.type == "azure-native:containerservice:ManagedCluster":
        engine = get(props, "networkProfile", "networkPolicy")
        if engine in AKS_POLICY_ENGINES:
            return f"AKS network policy {engine}"
    elif resource.type == "gcp:container/cluster:Cluster":
        if get(props, "datapathProvider") == "ADVANCED_DATAPATH" or get(props, "networkPolicy", "enabled") is True:
            return "GKE Dataplane V2 / network policy"
    elif resource.type == "kubernetes:apps/v1:DaemonSet":
        if get(props, "metadata", "name") in ENGINE_AGENTS:
            return f"the {get(props, 'metadata', 'name')} DaemonSet"
    elif resource.type == "kubernetes:helm.sh/v3:Release":
        chart = str(get(props, "chart") or "").rsplit("/", 1)[-1]
        if chart in ENGINE_CHARTS:
            return f"the {chart} chart"
    return None


def engines(resources: Sequence[Resource]) -> list[str]:
    """Every NetworkPolicy engine the stack shows."""
    return [e for e in map(engine_of, resources) if e]
