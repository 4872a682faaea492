"""Configuration keys of an existing cluster (``cloud: existing``), parsed without any SDK.

Cluster keys: ``kubeconfig``, ``context``, ``networkPolicyEnforced`` (whether the cluster enforces NetworkPolicies;
default false, and then a stack isolated by NetworkPolicies is refused).

Pool keys: ``nodes`` (the `ExistingGpuNodes` argument, `pool_args`), ``rdmaFabric`` and ``rdmaInterfaces`` (they
become the pool's ``rdma_fabric`` and ``rdma_interfaces``), ``architecture`` and ``nvlinkDomainGpus`` (the pool's
``architecture`` and ``nvlink_domain_gpus``: the catalog's facts of a cloud shape, stated here for nodes the
catalog does not know).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ... import catalog
from ...fields import ConfigError, join, read_bool, read_enum, read_int, read_list, read_str
from ...security.isolation import unenforced_problem

CLUSTER_KEYS = {"kubeconfig", "context", "networkPolicyEnforced"}
POOL_KEYS = {"nodes", "rdmaFabric", "rdmaInterfaces", "architecture", "nvlinkDomainGpus"}
EXISTING_FABRICS = (catalog.INFINIBAND, catalog.ROCE)
NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
"""A Kubernetes node name: a DNS subdomain (RFC 1123), at most 253 characters."""


def node_name_problem(name: str) -> Optional[str]:
    """What is wrong with a node name, or None."""
    if not name:
        return "must not be empty"
    if len(name) > 253 or not NODE_NAME.match(name):
        return f"'{name}' is not a Kubernetes node name (a DNS subdomain: lower-case letters, digits, '-', '.')"
    return None


def duplicate_node(nodes: "list[str] | tuple[str, ...]") -> Optional[tuple[int, int]]:
    """(first index, repeated index) of the first node listed twice, or None."""
    seen: dict[str, int] = {}
    for i, node in enumerate(nodes):
        if node in seen:
            return seen[node], i
        seen[node] = i
    return None


@dataclass(frozen=True)
class ExistingClusterOptions:
    """How to reach the cluster."""

    kubeconfig: Optional[str] = None
    """Kubeconfig text or a path to it (a secret). Default: the ambient kubeconfig (``KUBECONFIG``/``~/.kube``)."""
    context: Optional[str] = None
    """Kubeconfig context to use."""
    network_policy_enforced: bool = False
    """The cluster runs a NetworkPolicy engine (Calico, Cilium, ...); default false. The platform cannot see that
    offline, so the stack states it; while false, a stack whose teams, monitoring, inference or optimizer are
    isolated by NetworkPolicies is refused (see `isolation.unenforced_problem`)."""


@dataclass(frozen=True)
class ExistingPoolOptions:
    """An existing pool: the nodes the platform labels and taints."""

    nodes: tuple[str, ...] = ()
    """Names of the nodes of this pool; each gets the pool's labels and taints through a node patch."""
    rdma_fabric: str = catalog.INFINIBAND
    """``infiniband`` or ``roce`` when ``rdma: true``."""
    rdma_interfaces: int = 1
    """RDMA NICs per node."""
    architecture: str = ""
    """``amd64`` or ``arm64``; default: the GPU model's (Grace-Blackwell: arm64), else amd64."""
    nvlink_domain_gpus: int = 0
    """GPUs of one multi-node NVLink domain (72 for GB200/GB300 NVL72 racks); 0: NVLink stays inside the node."""


def parse_cluster_options(raw: Mapping, config: Any) -> ExistingClusterOptions:
    if config.maintenance.given:
        raise ConfigError("maintenance", "the platform does not manage an existing cluster's nodes or control plane; "
                                         "set its maintenance window where the cluster is managed")
    enforced = read_bool(raw, "networkPolicyEnforced", "", False)
    problem = unenforced_problem(config, enforced)
    if problem:
        raise ConfigError("networkPolicyEnforced", problem)
    return ExistingClusterOptions(kubeconfig=read_str(raw, "kubeconfig", "", None),
                                  context=read_str(raw, "context", "", None), network_policy_enforced=enforced)


def parse_pool_options(raw: Mapping, path: str, pool: Any, shape: Any) -> ExistingPoolOptions:
    if pool.upgrade.given:
        raise ConfigError(join(path, "upgrade"), "the platform does not create or upgrade an existing cluster's nodes; "
                                                 "set upgrade behaviour where the node pools are managed")
    nodes = tuple(str(n) for n in read_list(raw, "nodes", path))
    for i, node in enumerate(nodes):
        problem = node_name_problem(node)
        if problem:
            raise ConfigError(join(join(path, "nodes"), i), problem)
    twice = duplicate_node(nodes)
    if twice:
        raise ConfigError(join(join(path, "nodes"), twice[1]), f"node '{nodes[twice[1]]}' is listed twice "
                                                               f"(also nodes[{twice[0]}])")
    if pool.min_nodes > len(nodes) and nodes:
        raise ConfigError(join(path, "nodes"), f"lists {len(nodes)} nodes but minNodes is {pool.min_nodes}")
    fabric = read_enum(raw, "rdmaFabric", path, EXISTING_FABRICS, catalog.INFINIBAND)
    if "rdmaFabric" in raw and not pool.rdma:
        raise ConfigError(join(path, "rdmaFabric"), "only applies with rdma: true")
    nvlink = read_int(raw, "nvlinkDomainGpus", path, 0, minimum=0)
    if 0 < nvlink < pool.gpus_per_node or (nvlink and nvlink % pool.gpus_per_node):
        raise ConfigError(join(path, "nvlinkDomainGpus"), f"must be a multiple of gpusPerNode ({pool.gpus_per_node}), "
                                                          f"got {nvlink}")
    return ExistingPoolOptions(nodes=nodes, rdma_fabric=fabric,
                               rdma_interfaces=read_int(raw, "rdmaInterfaces", path, 1, minimum=1),
                               architecture=read_enum(raw, "architecture", path, catalog.ARCHITECTURES) or "",
                               nvlink_domain_gpus=nvlink)


def pool_args(pool_config: Any, pool: Any) -> dict[str, Any]:
    """The `ExistingGpuNodes` args of a validated ``nodePools`` entry: the pool (with its RDMA fabric and NICs) and
    the nodes to label and taint. An entry without ``nodes`` gives ``{"pool": ...}`` alone: its nodes carry the
    labels already, and no `ExistingGpuNodes` is needed."""
    options: ExistingPoolOptions = pool_config.cloud_options or ExistingPoolOptions()
    args: dict[str, Any] = {"pool": pool.spec()}
    if options.nodes:
        args["nodes"] = list(options.nodes)
    return args
