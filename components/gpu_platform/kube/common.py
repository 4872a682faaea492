"""Small helpers every Kubernetes-layer component shares: child options, metadata, Helm releases, tolerations."""

from collections.abc import Sequence
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from .. import labels
from ..pools import GpuPool, GpuPoolSpec
from ..versions import Chart


def pools_of(specs: Sequence[GpuPoolSpec]) -> list[GpuPool]:
    """`GpuPool`s from the plain specs a component receives."""
    return [GpuPool.from_spec(s) for s in specs]


def child_opts(
    parent: pulumi.Resource,
    opts: Optional[pulumi.ResourceOptions] = None,
    depends_on: Optional[Sequence[Any]] = None,
    **extra: Any,
) -> pulumi.ResourceOptions:
    """Options for a child: ``parent``, the component's own ``depends_on`` carried down, plus ``depends_on``.

    Pulumi does not pass a component's ``depends_on`` to its children; we do, so that ordering the
    component (e.g. after the Prometheus CRDs) orders everything in it.
    """
    inherited = list(opts.depends_on) if opts is not None and isinstance(opts.depends_on, (list, tuple)) else (
        [opts.depends_on] if opts is not None and opts.depends_on is not None else []
    )
    return pulumi.ResourceOptions(parent=parent, depends_on=[*inherited, *(depends_on or [])], **extra)


def metadata(name: str, namespace: Optional[str] = None, extra_labels: Optional[dict] = None,
             annotations: Optional[dict] = None) -> dict:
    """ObjectMeta (wire form) with the platform's managed-by label."""
    meta: dict[str, Any] = {"name": name,
                            "labels": {labels.MANAGED_BY_LABEL: labels.MANAGED_BY_VALUE, **(extra_labels or {})}}
    if namespace:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = annotations
    return meta


def helm_release(
    resource_name: str,
    chart: Chart,
    release_name: str,
    namespace: str,
    values: dict,
    opts: pulumi.ResourceOptions,
    create_namespace: bool = True,
    timeout_seconds: int = 900,
) -> k8s.helm.v3.Release:
    """A pinned Helm release. Its chart, repository, version and values land in ``plan.json`` as inputs."""
    return k8s.helm.v3.Release(
        resource_name,
        name=release_name,
        namespace=namespace,
        create_namespace=create_namespace,
        values=values,
        timeout=timeout_seconds,
        atomic=False,
        cleanup_on_fail=True,
        **chart.release_args(),
        opts=opts,
    )


def all_pool_tolerations(pools: Sequence[GpuPool]) -> list[dict]:
    """Every distinct toleration any GPU pool needs (for DaemonSets that run on all GPU nodes)."""
    seen: dict[tuple, dict] = {}
    for pool in pools:
        for toleration in pool.tolerations:
            seen.setdefault(tuple(sorted(toleration.items())), toleration)
    return [seen[k] for k in sorted(seen)]
