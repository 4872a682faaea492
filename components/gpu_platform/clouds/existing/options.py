"""Configuration keys of an existing cluster (``cloud: existing``), parsed without any SDK."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ... import catalog
from ...config import ConfigError, join, read_enum, read_int, read_list, read_str

CLUSTER_KEYS = {"kubeconfig", "context"}
POOL_KEYS = {"nodes", "rdmaFabric", "rdmaInterfaces"}
EXISTING_FABRICS = (catalog.INFINIBAND, catalog.ROCE)


@dataclass(frozen=True)
class ExistingClusterOptions:
    """How to reach the cluster."""

    kubeconfig: Optional[str] = None
    """Kubeconfig text or a path to it (a secret). Default: the ambient kubeconfig (``KUBECONFIG``/``~/.kube``)."""
    context: Optional[str] = None
    """Kubeconfig context to use."""


@dataclass(frozen=True)
class ExistingPoolOptions:
    """An existing pool: the nodes the platform labels and taints."""

    nodes: tuple[str, ...] = ()
    """Names of the nodes of this pool; each gets the pool's labels and taints through a node patch."""
    rdma_fabric: str = catalog.INFINIBAND
    """``infiniband`` or ``roce`` when ``rdma: true``."""
    rdma_interfaces: int = 1
    """RDMA NICs per node."""


def parse_cluster_options(raw: Mapping, config: Any) -> ExistingClusterOptions:
    return ExistingClusterOptions(kubeconfig=read_str(raw, "kubeconfig", "", None),
                                  context=read_str(raw, "context", "", None))


def parse_pool_options(raw: Mapping, path: str, pool: Any, shape: Any) -> ExistingPoolOptions:
    nodes = tuple(str(n) for n in read_list(raw, "nodes", path))
    if pool.min_nodes > len(nodes) and nodes:
        raise ConfigError(join(path, "nodes"), f"lists {len(nodes)} nodes but minNodes is {pool.min_nodes}")
    fabric = read_enum(raw, "rdmaFabric", path, EXISTING_FABRICS, catalog.INFINIBAND)
    if "rdmaFabric" in raw and not pool.rdma:
        raise ConfigError(join(path, "rdmaFabric"), "only applies with rdma: true")
    return ExistingPoolOptions(nodes=nodes, rdma_fabric=fabric,
                               rdma_interfaces=read_int(raw, "rdmaInterfaces", path, 1, minimum=1))
