"""An existing cluster (on-prem, bare metal, any distribution): reached by kubeconfig, pools by node patches."""

import os
from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ...component_args import Args, KeywordArgs, Rule
from ...config_model import PlatformConfig
from ...pools import GpuPool, GpuPoolSpec
from ...storage.storage_backends import SharedFileSystemBackend, StorageBackends
from ..handle import ClusterHandle
from .options import duplicate_node, node_name_problem, pool_args

RULES = {"nodes": Rule(check=lambda nodes: None if nodes else "must list at least one node"),
         "nodes[]": Rule(check=node_name_problem)}


class ExistingGpuNodesArgs(TypedDict, total=False):
    """Arguments of `ExistingGpuNodes`."""

    pool: Required[GpuPoolSpec]
    """The pool the nodes form."""
    nodes: Required[list[str]]
    """Names of the nodes to label and taint (at least one, each once; at least the pool's ``min_nodes``)."""


class ExistingGpuNodes(pulumi.ComponentResource, metaclass=KeywordArgs):
    """Labels and taints existing nodes as one GPU pool (server-side-apply node patches)."""

    node_names: pulumi.Output[list[str]]

    def __init__(self, name: str, args: ExistingGpuNodesArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = _checked(name, args)  # type: ignore[assignment]
        super().__init__("gpuplatform:index:ExistingGpuNodes", name, {}, opts)
        pool = GpuPool.from_spec(args["pool"])
        self.patches = [
            k8s.core.v1.NodePatch(
                f"{name}-{node}",
                metadata={"name": node, "labels": pool.labels,
                          "annotations": {"pulumi.com/patchForce": "true"}},
                spec={"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.taints]},
                opts=pulumi.ResourceOptions(parent=self),
            )
            for node in args["nodes"]
        ]
        self.node_names = pulumi.Output.from_input(list(args["nodes"]))
        self.register_outputs({"node_names": self.node_names})


def _checked(name: str, args: ExistingGpuNodesArgs) -> dict:
    checker = Args("ExistingGpuNodes", name, cloud="existing")
    checked = checker.check(args, ExistingGpuNodesArgs, RULES)
    nodes, pool = checked["nodes"], checked["pool"]
    twice = duplicate_node(nodes)
    if twice:
        checker.fail(f"nodes[{twice[1]}]", f"node '{nodes[twice[1]]}' is listed twice (also nodes[{twice[0]}])")
    if pool["min_nodes"] > len(nodes):
        checker.fail("nodes", f"lists {len(nodes)} nodes but pool.min_nodes is {pool['min_nodes']}")
    return checked


def _kubeconfig_text(value: Optional[str]) -> Optional[str]:
    """Kubeconfig content from a path or inline text; None means the ambient kubeconfig."""
    if value is None:
        return None
    if "\n" not in value and os.path.exists(os.path.expanduser(value)):
        with open(os.path.expanduser(value), encoding="utf-8") as fh:
            return fh.read()
    return value


def cluster_from_config(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> ClusterHandle:
    """Provider for the existing cluster plus node patches that turn its GPU nodes into pools."""
    options = config.cluster_options
    kubeconfig = _kubeconfig_text(options.kubeconfig)
    provider_args = {"kubeconfig": pulumi.Output.secret(kubeconfig) if kubeconfig else None, "context": options.context}
    provider = k8s.Provider(f"{name}-k8s", enable_server_side_apply=True, **provider_args, opts=opts)
    pools, ready = [], []
    for pool_config, pool in zip(config.node_pools, config.gpu_pools(), strict=True):
        pools.append(pool)
        # The same args a program gets from `pool_args("existing", entry)`; without nodes there is nothing to patch.
        args = pool_args(pool_config, pool)
        if args.get("nodes"):
            ready.append(ExistingGpuNodes(
                f"{name}-{pool.name}", args,  # type: ignore[arg-type]
                opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers={"kubernetes": provider})),
            ))
    return ClusterHandle(
        cloud="existing",
        cluster_name=options.context or name,
        kubeconfig=pulumi.Output.secret(kubeconfig or ""),
        provider=provider,
        pools=pools,
        ready=ready,
        provider_args=provider_args,
        **({"outputs": {"storage": storage_backends(config)}} if config.storage.enabled else {}),
    )


def storage_backends(config: PlatformConfig) -> StorageBackends:
    """An existing cluster's storage: its named ReadWriteMany StorageClass for the shared file system (the team and
    model-cache claims are provisioned from it). Buckets and image streaming are refused by the configuration: there
    is no cloud identity to grant bucket access to and no node configuration to change."""
    shared = config.storage.shared_file_system
    if shared is None:
        return StorageBackends()
    assert shared.storage_class is not None  # required on existing (storage_config)
    return StorageBackends(shared_file_system=SharedFileSystemBackend(
        kind="storage-class", capacity_gib=shared.size_gib, storage_class=shared.storage_class))
