"""Small helpers every Kubernetes-layer component shares: child options, metadata, Helm releases, tolerations."""

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from .. import catalog, labels
from ..component_args import Args, matching
from ..errors import one_of
from ..pools import GpuPool, GpuPoolSpec, pools_from_specs
from ..versions import Chart

# Rules several components share (Kubernetes object names, URLs).
DNS_SUBDOMAIN = matching(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?",
                         "a Kubernetes object name (lower-case letters, digits, '-' and '.')")
HTTP_URL = matching(r"https?://[^\s/]+(/\S*)?", "an http(s) URL such as http://prometheus.monitoring:9090")


def pools_of(specs: Sequence[GpuPoolSpec]) -> list[GpuPool]:
    """`GpuPool`s from the plain specs a component receives (built once per distinct list: `pools_from_specs`)."""
    return pools_from_specs(specs)


def checked_cloud(checker: Args, args: Any) -> Optional[str]:
    """The ``cloud`` of a component's args, checked before the rest so that its pools are checked against it
    (None when absent: `Args.check` then reports it as required)."""
    cloud = args.get("cloud") if isinstance(args, Mapping) else None
    if cloud is not None and cloud not in catalog.CLOUDS:
        problem = one_of(cloud, catalog.CLOUDS)
        # Cloud names are short: a transposed letter ('aswd') is below the usual similarity cutoff.
        near = difflib.get_close_matches(str(cloud), catalog.CLOUDS, n=1, cutoff=0.5)
        checker.fail("cloud", problem if "did you mean" in problem or not near else f"{problem}; did you mean "
                                                                                      f"'{near[0]}'?")
    return cloud


def a_cloud(cloud: str) -> str:
    """``an AWS``, ``a GCP``: the cloud's name with its article, for errors."""
    name = catalog.CLOUD_NAMES[cloud]
    return f"{'an' if name[0] in 'AEIOU' or cloud == 'existing' else 'a'} {name}"


def check_pool_set(checker: Args, pools: Sequence[GpuPoolSpec], path: str = "pools") -> None:
    """Pools of one cluster: distinct names (each names a flavor, a priority class, a sharing config) and one
    cloud (a component without a ``cloud`` argument takes its pools' cloud, so mixed pools cannot be honoured)."""
    checker.unique([p["name"] for p in pools], path, "pool name")
    for i, pool in enumerate(pools):
        if pool["cloud"] != pools[0]["cloud"]:
            checker.fail(f"{path}[{i}].cloud", f"pool '{pool['name']}' is {a_cloud(pool['cloud'])} pool; {path}[0] "
                                               f"is {a_cloud(pools[0]['cloud'])} pool: one cluster's pools are on "
                                               "one cloud")


def refuse_unless(checker: Args, args: Mapping[str, Any], key: str, condition: bool, needs: str) -> None:
    """Refuse ``key`` when given (not empty) but ``condition`` does not hold: it would take no effect."""
    if args.get(key) not in (None, {}, []) and not condition:
        checker.fail(key, f"takes effect only {needs}")


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


def claim_spec(access_mode: str, size: str, storage_class: Optional[str] = None,
               volume: Optional[str] = None) -> dict[str, Any]:
    """A PersistentVolumeClaim's ``spec``: provisioned by ``storage_class`` (None: the cluster's default), or bound to
    the static ``volume`` by name (then no class may provision for it: ``storageClassName: ""``)."""
    claim: dict[str, Any] = {"accessModes": [access_mode], "resources": {"requests": {"storage": size}}}
    if storage_class:
        claim["storageClassName"] = storage_class
    if volume:
        claim.update(storageClassName="", volumeName=volume)
    return claim


def helm_release(
    resource_name: str,
    chart: Chart,
    release_name: str,
    namespace: str,
    values: dict,
    opts: pulumi.ResourceOptions,
    create_namespace: bool = True,
    timeout_seconds: int = 900,
    skip_crds: bool = False,
) -> k8s.helm.v3.Release:
    """A pinned Helm release. Its chart, repository, version and values land in ``plan.json`` as inputs.
    ``skip_crds``: leave the chart's ``crds/`` directory out (the CRDs are installed another way)."""
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
        **({"skip_crds": True} if skip_crds else {}),
        opts=opts,
    )


def all_pool_tolerations(pools: Sequence[GpuPool]) -> list[dict]:
    """Every distinct toleration any GPU pool needs (for DaemonSets that run on all GPU nodes)."""
    seen: dict[tuple, dict] = {}
    for pool in pools:
        for toleration in pool.tolerations:
            seen.setdefault(tuple(sorted(toleration.items())), toleration)
    return [seen[k] for k in sorted(seen)]


def snake_case(key: str) -> str:
    """A wire-form (camelCase) key as the Python SDK's keyword: ``podDisruptionBudget`` -> ``pod_disruption_budget``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def register_body(cls: Any, resource_name: str, body: dict[str, Any], opts: pulumi.ResourceOptions) -> Any:
    """A typed Kubernetes resource from a wire-form body (top-level keys become the class's keyword args)."""
    kwargs = {snake_case(k): v for k, v in body.items() if k not in ("apiVersion", "kind")}
    return cls(resource_name, **kwargs, opts=opts)
