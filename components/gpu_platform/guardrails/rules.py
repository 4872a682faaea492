"""The GPU guardrails: one pure function per rule, and `RULES`, the table the policy pack and the plan check share.

A resource rule is ``check(resource_type, props, config) -> [message]``: the problems of one resource, from its
type and inputs alone. A stack rule is ``check(resources, config) -> [(resource, message)]``: problems that need
several resources (a flavor and the pools, a node group and its launch template). ``config`` is the rule's
configuration as Pulumi hands it to a policy (``pulumi up --policy-pack-config``), an empty mapping by default.
No rule imports pulumi-policy: ``policy/__main__.py`` wraps them in its policies, ``plan_check`` runs them over a
``plan.json``.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from .. import catalog, labels, versions
from . import allocation, engines, images, placement
from .pool_view import ACCELERATOR_TAINT_KEYS, POOL_TYPES, pool_view
from .props import Resource, get, items, string_map

MANDATORY = "mandatory"
ADVISORY = "advisory"

ResourceCheck = Callable[[str, Mapping[str, Any], Mapping[str, Any]], list[str]]
StackCheck = Callable[[Sequence[Resource], Mapping[str, Any]], list[tuple[Resource, str]]]


# ---------------------------------------------------------------------------------------------------------
# Resource rules


def gpu_pool_taint(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Applies to every node pool type (`pool_view.POOL_TYPES`). An accelerator pool carries a NoSchedule taint
    keyed by an accelerator resource (``nvidia.com/gpu=present:NoSchedule``), so pods that ask for no accelerator
    never take its nodes, and the vendors' charts, which tolerate that key, still run there."""
    pool = pool_view(resource_type, props)
    if pool is None or not pool.accelerated:
        return []
    if any(t.effect == "NoSchedule" and t.key in ACCELERATOR_TAINT_KEYS for t in pool.taints):
        return []
    have = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in pool.taints) or "none"
    taint = catalog.VENDORS[pool.vendor].taint
    return [f"{pool.vendor} accelerator pool ({', '.join(pool.machine_types) or 'machine type not given'}) has no "
            f"NoSchedule accelerator taint such as {taint.key}={taint.value}:{taint.effect} (taints: {have}): pods "
            "that ask for no accelerator can take its nodes"]


def image_digest(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Applies to every Kubernetes object that holds pod specs (`images.runs_pods`). Each container image is pinned
    by digest (``@sha256:``), unless its repository is one of the platform's reviewed exceptions
    (``versions.UNPINNED_IMAGES``, each with its reason) or of the configuration's ``exemptRepositories``."""
    if not images.runs_pods(resource_type):
        return []
    exempt = set(versions.UNPINNED_IMAGES) | {str(r) for r in items(config.get("exemptRepositories"))}
    return [f"image {image} is not pinned by digest (repository@sha256:...): its tag can be moved to other content"
            for image in dict.fromkeys(images.images(props))
            if not images.pinned(image) and images.repository(image) not in exempt]


TEAM_POD_SECURITY_LEVELS = ("baseline", "restricted")


def team_pod_security(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Applies to ``kubernetes:core/v1:Namespace``. A team namespace (labelled ``gpu-platform.io/team``) enforces
    Pod Security at ``baseline`` or ``restricted`` (label ``pod-security.kubernetes.io/enforce``): teams' pods get
    no host access on shared GPU nodes."""
    if resource_type != "kubernetes:core/v1:Namespace":
        return []
    ns_labels = string_map(get(props, "metadata", "labels"))
    if labels.TEAM_LABEL not in ns_labels:
        return []
    level = ns_labels.get(labels.POD_SECURITY_ENFORCE_LABEL)
    if level in TEAM_POD_SECURITY_LEVELS:
        return []
    found = f"is {level}" if level else "is not set"
    return [f"team namespace of {ns_labels[labels.TEAM_LABEL]}: {labels.POD_SECURITY_ENFORCE_LABEL} {found}; a team "
            f"namespace enforces {' or '.join(TEAM_POD_SECURITY_LEVELS)}"]


# ---------------------------------------------------------------------------------------------------------
# Stack rules


def _pools(resources: Sequence[Resource]) -> list[tuple[Resource, Any]]:
    return [(r, view) for r in resources if r.type in POOL_TYPES and (view := pool_view(r.type, r.props))]


def single_gpu_allocator(resources: Sequence[Resource], config: Mapping[str, Any]) -> list[tuple[Resource, str]]:
    """Applies to NVIDIA pools with the stack's Helm releases (`allocation`). No pool is served by both a device
    plugin and NVIDIA's DRA driver: its GPUs would be counted twice and handed to two pods."""
    releases = [r for r in resources if r.type == allocation.HELM_RELEASE]
    found = []
    for resource, pool in _pools(resources):
        if pool.vendor != catalog.NVIDIA:
            continue
        dra = allocation.dra_drivers(pool.labels, releases)
        plugins = allocation.device_plugins(resource, pool.labels, releases)
        if dra and plugins:
            found.append((resource, f"served by the DRA driver ({', '.join(dra)}) and by a device plugin "
                                    f"({', '.join(plugins)}): label the pool "
                                    f"{labels.DEVICE_PLUGIN_DEPLOY_LABEL}=false (and the cloud's opt-out) or take "
                                    "it out of the DRA driver's kubeletPlugin.nodeSelector"))
    return found


def rdma_pool_placement(resources: Sequence[Resource], config: Mapping[str, Any]) -> list[tuple[Resource, str]]:
    """Applies to RDMA pools (`placement.PLACEMENT_TYPES`): EFA, InfiniBand, RoCE and GPUDirect pools are in one
    zone, with a placement group or the cloud's equivalent (`placement`)."""
    by_id = {str(get(r.props, "id")): r for r in resources if get(r.props, "id")}
    return [(r, problem) for r in resources if r.type in placement.PLACEMENT_TYPES
            for problem in placement.placement_problems(r, by_id)]


def network_policies_enforced(resources: Sequence[Resource],
                              config: Mapping[str, Any]) -> list[tuple[Resource, str]]:
    """Applies to ``networking.k8s.io/v1`` NetworkPolicies: a stack that declares any also shows an engine that
    enforces them (`engines`), or its configuration says the engine is managed outside it
    (``engineOutsideStack: true``, e.g. an existing cluster's own Calico)."""
    policies = [r for r in resources if r.type == engines.NETWORK_POLICY]
    if not policies or config.get("engineOutsideStack") is True or engines.engines(resources):
        return []
    target = next((r for r in resources if r.type in engines.CLUSTER_TYPES), policies[0])
    return [(target, f"{len(policies)} NetworkPolicies (first: {policies[0].name}) but nothing in the stack "
                     "enforces them (vpc-cni enableNetworkPolicy, AKS networkPolicy, GKE Dataplane V2, Calico or "
                     "Cilium); set engineOutsideStack if the cluster runs its own engine")]


def _checked_keys(flavor_labels: Mapping[str, str], pool_label_keys: set[str]) -> dict[str, str]:
    """The flavor's labels a pool resource would set: the platform's own, and any key some pool of the stack sets.
    Other keys (``cloud.google.com/gke-tpu-topology``...) are put on nodes by the cloud, not by the pool's inputs."""
    return {k: v for k, v in flavor_labels.items()
            if k.startswith(labels.DOMAIN + "/") or k in pool_label_keys}


def kueue_flavor_pools(resources: Sequence[Resource], config: Mapping[str, Any]) -> list[tuple[Resource, str]]:
    """Applies to Kueue ``ResourceFlavor`` objects with the stack's node pools: the ``spec.nodeLabels`` of a flavor
    are the labels of a pool that exists, so workloads it admits can be scheduled. Not applicable to a stack that
    declares no node pool (its pools live in another stack)."""
    pools = _pools(resources)
    if not pools:
        return []
    pool_label_keys = {k for _, pool in pools for k in pool.labels}
    found = []
    for flavor in resources:
        if not (flavor.type.startswith("kubernetes:kueue.x-k8s.io/") and flavor.type.endswith(":ResourceFlavor")):
            continue
        wanted = _checked_keys(string_map(get(flavor.props, "spec", "nodeLabels")), pool_label_keys)
        if not wanted or any(all(pool.labels.get(k) == v for k, v in wanted.items()) for _, pool in pools):
            continue
        named = wanted.get(labels.POOL_LABEL)
        same_name = [r.name for r, pool in pools if named and pool.labels.get(labels.POOL_LABEL) == named]
        detail = (f"pool {named} ({', '.join(same_name)}) has other labels" if same_name
                  else f"no pool carries {', '.join(f'{k}={v}' for k, v in sorted(wanted.items()))}")
        found.append((flavor, f"spec.nodeLabels match no node pool of the stack: {detail}; workloads admitted to "
                              "this flavor would stay pending"))
    return found


# ---------------------------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True)
class Rule:
    """One guardrail as both the policy pack and the plan check run it."""

    name: str
    """The policy's name (unique in the pack)."""
    description: str
    enforcement_level: str
    check_resource: Optional[ResourceCheck] = None
    check_stack: Optional[StackCheck] = None
    config_properties: Mapping[str, Any] = field(default_factory=dict)
    """JSON schema of each configuration property (the pack's ``PolicyConfigSchema``)."""


RULES: tuple[Rule, ...] = (
    Rule("gpu-pool-taint", "GPU and accelerator node pools carry a NoSchedule taint keyed by the accelerator's "
         "resource (nvidia.com/gpu=present:NoSchedule).", MANDATORY, check_resource=gpu_pool_taint),
    Rule("single-gpu-allocator", "No node pool is served by both a GPU device plugin and NVIDIA's DRA driver.",
         MANDATORY, check_stack=single_gpu_allocator),
    Rule("rdma-pool-placement", "EFA, InfiniBand and RoCE pools are in one zone, with a placement group or the "
         "cloud's equivalent.", MANDATORY, check_stack=rdma_pool_placement),
    Rule("image-digest", "Every workload image is pinned by digest.", MANDATORY, check_resource=image_digest,
         config_properties={"exemptRepositories": {"type": "array", "items": {"type": "string"}}}),
    Rule("network-policies-enforced", "NetworkPolicies only where an engine enforces them.", MANDATORY,
         check_stack=network_policies_enforced, config_properties={"engineOutsideStack": {"type": "boolean"}}),
    Rule("team-pod-security", "Team namespaces enforce Pod Security (baseline or restricted).", MANDATORY,
         check_resource=team_pod_security),
    Rule("kueue-flavor-pools", "Kueue ResourceFlavors match the labels of a node pool that exists.", MANDATORY,
         check_stack=kueue_flavor_pools),
)
"""Every guardrail, in the order they are reported."""
