"""`ClusterHandle`: what every cloud layer hands to the Kubernetes layer."""

from dataclasses import dataclass, field
from typing import Any

import pulumi

from ..pools import GpuPool


@dataclass
class ClusterHandle:
    """A cluster ready for the Kubernetes layer: how to reach it and the GPU pools it has."""

    cloud: str
    cluster_name: pulumi.Input[str]
    kubeconfig: pulumi.Output[str]
    """Kubeconfig (a secret Output)."""
    provider: Any
    """The `pulumi_kubernetes.Provider` every Kubernetes object of the stack uses."""
    pools: list[GpuPool]
    node_pool_ids: dict[str, pulumi.Input[str]] = field(default_factory=dict)
    """Cloud id of each GPU pool's node pool (for autoscaler wiring), by pool name."""
    outputs: dict[str, Any] = field(default_factory=dict)
    """Cloud-specific outputs (OIDC issuer, node role, VPC id...) for later layers and stack exports."""
    ready: list[Any] = field(default_factory=list)
    """Resources the Kubernetes layer should wait for (node pools, node patches)."""
    provider_args: dict[str, Any] = field(default_factory=dict)
    """How to reach the cluster as `pulumi_kubernetes.Provider` arguments (default: ``kubeconfig``); the
    platform builds the provider its Kubernetes layers use from them."""
