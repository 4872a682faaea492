"""A `GpuPoolSpec` argument re-checked at a component boundary, then turned into the `GpuPool` it describes.

Specs come from `GpuPool.spec()`, from `gpu_pool(...)`, or are written by hand (and by programs in other Pulumi
languages). Whatever their source they get the stack file's rules: the cloud the component runs on, the shape in
that cloud's catalog, what the catalog says of the shape (GPU model, GPUs, memory, RDMA fabric and NICs: left out,
they are filled in; given, they must agree), sizes, sharing, labels and taints.
"""

import marshal
from collections.abc import Callable
from typing import Any, NoReturn, Optional, Protocol

from . import catalog, labels
from .clouds import options_module
from .config_model import PlatformConfig, gpu_pool
from .errors import ConfigError, one_of
from .node_pools import POOL_ROLES, parse_node_pool
from .pools import RDMA_RESOURCES, SHARING_MODES, GpuPool, GpuPoolSpec

# Spec keys -> the nodePools key whose rules apply (errors from the shared parser are renamed back).
_STACK_KEYS = {
    "name": "name", "instanceType": "instance_type", "minNodes": "min_nodes", "maxNodes": "max_nodes",
    "rdma": "rdma_fabric", "spot": "spot", "role": "role", "labels": "labels", "taints": "taints",
    "gpuModel": "gpu_model", "gpusPerNode": "gpus_per_node", "sharing.mode": "sharing_mode",
    "sharing.replicas": "sharing_replicas", "sharing.profile": "mig_profile", "sharing": "sharing_mode",
    "accelerator": "gpu_model", "gpuAllocation": "gpu_allocation", "architecture": "architecture",
    "nvlinkDomainGpus": "nvlink_domain_gpus", "provisioning": "provisioning", "reservation": "reservation",
    "fallbackPool": "fallback_pool",
}


_CATALOG_FACTS = ("gpus_per_node", "gpu_memory_gib", "vcpus_per_node", "memory_gib_per_node", "rdma_interfaces",
                  "nvlink_domain_gpus")


# Specs already checked, by (canonical spec, cloud): one plan hands the same pools to many components (every
# TeamNamespace gets all of them), and re-running the parser for each made plans grow with teams x pools.
# Only successes are kept, so a bad spec fails every time with the message of the component that was given it.
_CHECKED: dict[tuple[bytes, str], GpuPool] = {}
_CHECKED_LIMIT = 4096
"""Entries kept at most (a bound for long-lived processes that check many distinct specs)."""


class SpecChecker(Protocol):
    """What `check_pool` needs of the component's argument checker: `component_args.Args`, which calls it for every
    `GpuPoolSpec` argument (so this module cannot import that one back)."""

    component: str

    def fail(self, path: str, problem: str) -> NoReturn: ...

    def _typed_dict(self, value: Any, tp: Any, path: str, rules: dict) -> dict[str, Any]: ...


def check_pool(args: SpecChecker, value: Any, path: str, cloud: str) -> GpuPool:
    """The `GpuPool` of the spec at ``path`` of a component that runs ``cloud`` pools; a `ConfigError` naming the
    component and ``path`` when the spec is wrong.

    A spec equal (value for value, type for type) to one already checked for ``cloud`` gets the same `GpuPool`
    without being parsed again: the result depends on nothing else (not on the component or ``path``, which
    only errors name). `forget_checked_pools` empties the memo."""
    if isinstance(value, GpuPool):
        value = value.spec()  # a GpuPool where a spec is expected: take its plain form
    key = _canonical(value)
    if key is not None:
        pool = _CHECKED.get((key, cloud))
        if pool is not None:
            return pool
    pool = _check_pool(args, value, path, cloud)
    if key is not None:
        if len(_CHECKED) >= _CHECKED_LIMIT:
            _CHECKED.clear()
        _CHECKED[(key, cloud)] = pool
    return pool


# Lists of specs already checked, by (canonical list, the component's cloud): the marshal bytes of the complete
# specs they became, so that each component gets fresh dicts of its own (`marshal.loads`) for the price of one
# lookup, instead of a check and a `GpuPool.spec()` per pool (a plan hands every TeamNamespace all its pools).
_CHECKED_LISTS: dict[tuple[bytes, Optional[str]], bytes] = {}


def checked_pool_list(values: Any, check: Callable[[], list]) -> Any:
    """``check()`` (the complete specs of a list of `GpuPoolSpec` arguments, each checked with `check_pool`), or the
    same result again, as fresh dicts, for a list equal (value for value, type for type) to one already checked for
    the same component cloud (``values``: ``(list, cloud)``). Errors are never remembered."""
    key = _canonical(values)
    if key is not None:
        known = _CHECKED_LISTS.get(key)
        if known is not None:
            return marshal.loads(known)
    specs = check()
    if key is not None:
        if len(_CHECKED_LISTS) >= _CHECKED_LIMIT:
            _CHECKED_LISTS.clear()
        # Version 4 (shared strings, back-references) loads faster; the copy has the same sharing as ``specs``.
        _CHECKED_LISTS[key] = marshal.dumps(specs, 4)
    return specs


def forget_checked_pools() -> None:
    """Empty the memos of checked specs and lists of specs (`gpu_platform.testing.run_program` does before each
    program, so no plan sees another's)."""
    _CHECKED.clear()
    _CHECKED_LISTS.clear()


def _canonical(value: Any) -> Optional[bytes]:
    """A key two specs share only when they are equal value for value and type for type, or None for a spec that
    holds anything else than plain built-in values (an Output, an object, a subclass), checked without the memo.

    `marshal` writes exact built-in types only and keeps apart what ``==`` mixes (``True`` and ``1``, ``2`` and
    ``2.0``, a list and a tuple, ``1`` and ``"1"`` as keys), which the checker treats differently; it writes bytes
    and bytearray alike, but no spec holding either passes the check, so no such key is ever stored. Version 2
    writes no back-references, so the bytes depend on the values only."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return None


def _check_pool(args: SpecChecker, value: Any, path: str, cloud: str) -> GpuPool:
    """`check_pool` without the memo: ``value`` parsed and checked with the stack file's rules."""
    spec: dict[str, Any] = args._typed_dict(value, GpuPoolSpec, path, {})
    for key in ("name", "cloud"):
        if not spec.get(key):
            args.fail(f"{path}.{key}", "is required")
    name, pool_cloud = spec["name"], spec["cloud"]
    if pool_cloud not in catalog.CLOUDS:
        args.fail(f"{path}.cloud", one_of(pool_cloud, catalog.CLOUDS))
    cloud = cloud or pool_cloud
    if cloud and pool_cloud != cloud:
        owner = catalog.CLOUD_NAMES[pool_cloud]
        article = "an" if owner[0] in "AEIOU" or owner.startswith(("existing", "OCI")) else "a"
        args.fail(f"{path}.cloud", f"pool '{name}' is {article} {owner} pool; {args.component} "
                                   f"takes {catalog.CLOUD_NAMES[cloud]} pools")
    for key in ("min_nodes", "max_nodes", "gpus_per_node", "gpu_memory_gib", "vcpus_per_node",
                "memory_gib_per_node", "rdma_interfaces", "nvlink_domain_gpus"):
        if spec.get(key, 0) < 0:
            args.fail(f"{path}.{key}", f"must be >= 0, got {spec[key]}")
    if spec.get("sharing_mode", "exclusive") not in SHARING_MODES:
        args.fail(f"{path}.sharing_mode", one_of(spec["sharing_mode"], SHARING_MODES))
    if spec.get("role", "general") not in POOL_ROLES:
        args.fail(f"{path}.role", one_of(spec["role"], POOL_ROLES))
    fabric = spec.get("rdma_fabric") or ""
    if fabric and fabric not in catalog.RDMA_FABRICS:
        args.fail(f"{path}.rdma_fabric", one_of(fabric, catalog.RDMA_FABRICS))

    if spec.get("architecture") and spec["architecture"] not in catalog.ARCHITECTURES:
        args.fail(f"{path}.architecture", one_of(spec["architecture"], catalog.ARCHITECTURES))
    entry = _stack_entry(spec)
    try:
        node_pool = parse_node_pool(entry, "", cloud, options_module("existing") if cloud == "existing" else None)
    except ConfigError as err:
        args.fail(_spec_path(path, err.path), err.problem)
    derived = gpu_pool(PlatformConfig(stack="", cloud=cloud, region="", node_pools=(node_pool,)), node_pool)
    _agrees(args, path, spec, derived, cloud)
    taints = [t.as_string() for t in node_pool.taints]
    if spec.get("spot") and cloud == "azure" and labels.AKS_SPOT_TAINT.as_string() not in taints:
        taints.append(labels.AKS_SPOT_TAINT.as_string())
    # A fact left out, empty or 0 is the catalog's (GpuPool.spec() of a pool built without it says 0).
    given = {k: v for k, v in spec.items() if v not in (None, "") and not (k in _CATALOG_FACTS and v == 0)}
    full = GpuPoolSpec(**{**derived.spec(), **given,
                          "taints": taints, "rdma_interfaces": derived.rdma_interfaces,
                          "rdma_fabric": derived.rdma_fabric or "" if cloud != "existing" else fabric})
    if cloud == "existing" and fabric:
        full["rdma_interfaces"] = spec.get("rdma_interfaces") or 1
    return GpuPool.from_spec(full)


def _stack_entry(spec: dict[str, Any]) -> dict[str, Any]:
    """The ``nodePools`` entry a spec stands for (the parser's rules then apply to it unchanged)."""
    entry: dict[str, Any] = {"name": spec["name"]}
    if spec.get("instance_type"):
        entry["instanceType"] = spec["instance_type"]
    for key, stack_key in (("min_nodes", "minNodes"), ("max_nodes", "maxNodes"), ("spot", "spot"),
                           ("role", "role"), ("labels", "labels"), ("taints", "taints")):
        if key in spec:
            entry[stack_key] = spec[key]
    if "taints" in entry:  # the AKS spot taint is the cloud's own, not a user taint
        entry["taints"] = [t for t in entry["taints"] if t != labels.AKS_SPOT_TAINT.as_string()]
    if spec.get("rdma_fabric"):
        entry["rdma"] = True
    mode = spec.get("sharing_mode", "exclusive")
    if mode != "exclusive" or spec.get("mig_profile") or spec.get("sharing_replicas", 1) not in (0, 1):
        sharing: dict[str, Any] = {"mode": mode}
        if mode in ("time-slicing", "mps", "hami") or spec.get("sharing_replicas", 1) not in (0, 1):
            sharing["replicas"] = spec.get("sharing_replicas", 1)
        if spec.get("mig_profile"):
            sharing["profile"] = spec["mig_profile"]
        entry["sharing"] = sharing
    if spec.get("gpu_allocation"):
        entry["gpuAllocation"] = spec["gpu_allocation"]
    for key, stack_key in (("provisioning", "provisioning"), ("reservation", "reservation"),
                           ("fallback_pool", "fallbackPool")):
        if spec.get(key):
            entry[stack_key] = spec[key]
    # GpuPool.spec() writes both `spot` and `provisioning`; a spec edited to say `spot: true` beside the default
    # `on-demand` means spot (the older way to say it), and `spot: false` beside any other mode says nothing.
    if entry.get("provisioning") == "on-demand" and entry.get("spot"):
        del entry["provisioning"]
    elif entry.get("provisioning") and "spot" in entry and not entry["spot"]:
        del entry["spot"]
    if spec["cloud"] == "existing":
        entry["gpuModel"] = spec.get("gpu_model")
        entry["gpusPerNode"] = spec.get("gpus_per_node")
        for key, stack_key in (("architecture", "architecture"), ("nvlink_domain_gpus", "nvlinkDomainGpus")):
            if spec.get(key):
                entry[stack_key] = spec[key]
    elif spec["cloud"] == "gcp":
        shape = catalog.SHAPES.get(("gcp", spec.get("instance_type", "")))
        if shape is not None and shape.attachable_accelerators:
            # N1: the accelerator is given by the GPU model; the parser wants the GCE accelerator type.
            accelerators = [a for a in shape.attachable_accelerators
                            if catalog.GCP_ATTACHABLE[a][0] == spec.get("gpu_model")]
            entry["accelerator"] = accelerators[0] if accelerators else spec.get("gpu_model", "")
            if spec.get("gpus_per_node"):
                entry["gpuCount"] = spec["gpus_per_node"]
    if "maxNodes" not in entry:
        entry["maxNodes"] = max(1, entry.get("minNodes", 0))
    return entry


def _spec_path(path: str, stack_path: str) -> str:
    key = stack_path.lstrip(".")
    key = key.split("[")[0] if key.startswith(("labels", "taints")) is False else key
    for stack_key, spec_key in _STACK_KEYS.items():
        if key == stack_key or key.startswith(stack_key + "[") or key.startswith(stack_key + "."):
            return f"{path}.{spec_key}{key[len(stack_key):] if spec_key in ('labels', 'taints') else ''}"
    return f"{path}.{key}" if key else path


def _agrees(args: SpecChecker, path: str, spec: dict[str, Any], derived: GpuPool, cloud: str) -> None:
    """Catalog facts a spec repeats must be the catalog's (a hand-written 4 GPUs on an 8-GPU shape is refused)."""
    if cloud == "existing":
        return
    facts = {"gpu_model": derived.gpu_model, "gpus_per_node": derived.gpus_per_node,
             "gpu_memory_gib": derived.gpu_memory_gib, "vcpus_per_node": derived.vcpus_per_node,
             "memory_gib_per_node": derived.memory_gib_per_node, "architecture": derived.architecture,
             "nvlink_domain_gpus": derived.nvlink_domain_gpus}
    if derived.rdma_fabric:
        facts["rdma_interfaces"] = derived.rdma_interfaces
        facts["rdma_fabric"] = derived.rdma_fabric
    for key, fact in facts.items():
        given = spec.get(key)
        if given not in (None, "", 0) and given != fact:
            args.fail(f"{path}.{key}", f"{derived.instance_type} has {fact!r} in the catalog, got {given!r} "
                                       "(leave it out to take the catalog's)")
    if spec.get("rdma_fabric") and derived.rdma_fabric and RDMA_RESOURCES.get(derived.rdma_fabric) is None:
        return
