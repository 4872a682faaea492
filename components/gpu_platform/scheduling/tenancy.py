"""`TeamNamespace`: a team's namespace with its quota, defaults, RBAC, network isolation, Kueue LocalQueue and the
ResourceClaimTemplates of DRA pools."""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import catalog
from ..component_args import DNS_LABEL, Args, KeywordArgs, choice
from ..kubernetes_base.common import DNS_SUBDOMAIN, check_pool_set, child_opts, pools_of
from ..kubernetes_base.custom_object import KubernetesObject
from ..pools import GpuPoolSpec
from ..security import namespace_security
from . import kueue_objects, pool_quotas, program_teams, tenancy_objects
from .teams import QUEUE_FIELDS, TeamSpec, check_team, team_of, team_rules, team_specs


class TeamNamespaceArgs(TypedDict, total=False):
    """Arguments of `TeamNamespace`."""

    team: Required[TeamSpec]
    """The team: its name is the namespace name, ``gpu_quota`` the namespace's ``requests.nvidia.com/gpu`` (and,
    with DRA pools, the devices of each of their DeviceClasses), each of ``quotas`` a ``requests.<resource>``
    (totals default to what ``pool_quotas`` add up to). A `teams.Team` (the object given to `SchedulingPolicy`
    too), or a `TeamSpec` without the ClusterQueue's settings (borrowing and lending limits, flavor order,
    preemption, fair-sharing weight), which a namespace makes no use of."""
    cluster_queue: Optional[str]
    """Kueue ClusterQueue the team's LocalQueue (``gpu``) feeds; none: no LocalQueue (Kueue off)."""
    pools: list[GpuPoolSpec]
    """The cluster's GPU pools, which the team's jobs may run on: a privileged namespace records what their RDMA
    fabrics need (`namespace_security.team_pod_security`), the team's ``quotas`` must name resources they
    advertise, and each DRA pool gets claim templates in the namespace (`tenancy_objects.claim_templates`). Default
    none."""
    pod_security: str
    """Pod Security level enforced: ``baseline`` (default), ``restricted``, or ``privileged`` (only for teams whose
    pods need IPC_LOCK or host paths, e.g. InfiniBand/RoCE examples or GKE GPUDirect sidecars: any member may then
    run privileged pods). ``audit`` and ``warn`` are ``restricted`` whatever is enforced."""
    monitoring_namespace: Optional[str]
    """Namespace whose pods (Prometheus) may reach the team's pods; none: no such allowance."""
    ingress_namespaces: list[str]
    """Namespaces of ingress proxies allowed to reach the team's pods. Default: ``["envoy-gateway-system"]`` (the
    Envoy pods of Gateways of the platform's Envoy Gateway class)."""
    overcommit: bool
    """Let the team's quota exceed what ``pools`` hold at their maximum size. Default: false (refused)."""


RULES = {
    **team_rules("team"),
    "cluster_queue": DNS_SUBDOMAIN,
    "pod_security": choice(*tenancy_objects.POD_SECURITY_LEVELS),
    "monitoring_namespace": DNS_LABEL,
    "ingress_namespaces[]": DNS_LABEL,
}


def checked_args(name: str, args: TeamNamespaceArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("TeamNamespace", name)
    built = False
    if isinstance(args, dict) and "team" in args:
        spec, built = team_specs(args["team"])
        args = {**args, "team": spec}
    checked = checker.check(args, TeamNamespaceArgs, RULES)
    pools = checked.get("pools", [])
    advertised = catalog.advertised_resources(p["gpu_model"] for p in pools) if pools else None  # checked: complete
    if not built:
        for field in QUEUE_FIELDS:
            if field in checked["team"]:
                checker.fail(f"team.{field}", "is the team's ClusterQueue's (SchedulingPolicy); a namespace makes no "
                                              "use of it: give it there, or one Team to both")
    gpu_pools = pools_of(pools)
    check_team(checker, checked["team"], "team", advertised, gpu_pools)
    check_pool_set(checker, pools)
    team = team_of(checked["team"], gpu_pools)
    if pools and not checked.get("overcommit", False):
        problem = pool_quotas.capacity_problem([team], gpu_pools, kueue_objects.pool_capacity)
        if problem is not None:
            checker.fail(f"team.{problem[1]}", problem[2].replace("declare overcommit", "pass overcommit=True"))
    if checked.get("cluster_queue"):
        problem = program_teams.queue_problem(checked["cluster_queue"], team.name)
        if problem:
            checker.fail("cluster_queue", problem)
    fields = program_teams.EVERYTHING if built else program_teams.TOTALS | program_teams.NAMESPACE
    conflict = program_teams.team_conflict(team, fields)
    if conflict:
        checker.fail("team", conflict)
    conflict = program_teams.storage_conflict(team)  # a DataPlaneStorage constructed first assumed a quota
    if conflict:
        checker.fail("team.storage_quota", conflict)
    program_teams.remember_team(checker.where, team, fields)
    return checked


class TeamNamespace(pulumi.ComponentResource, metaclass=KeywordArgs):
    """A team's namespace: Pod Security labels, GPU/CPU/memory quota, default requests, edit RBAC for the team's
    group, ingress isolation, egress limited to the namespace, DNS and the internet, the LocalQueue its jobs
    submit to, and ResourceClaimTemplates for the GPUs of DRA pools (``<pool>-gpu``, ``<pool>-node``)."""

    namespace: k8s.core.v1.Namespace
    resource_quota: k8s.core.v1.ResourceQuota
    namespace_name: pulumi.Output[str]

    def __init__(self, name: str, args: TeamNamespaceArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:TeamNamespace", name, {}, opts)
        pools = pools_of(args.get("pools", []))
        team = team_of(args["team"], pools)
        security = namespace_security.team_pod_security(pools, args.get("pod_security", namespace_security.BASELINE))

        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns", metadata=tenancy_objects.namespace(team, security)["metadata"], opts=child_opts(self, opts))
        in_namespace = child_opts(self, opts, depends_on=[self.namespace])

        quota = tenancy_objects.resource_quota(team, pools)
        self.resource_quota = k8s.core.v1.ResourceQuota(
            f"{name}-quota", metadata=quota["metadata"], spec=quota["spec"], opts=in_namespace)
        defaults = tenancy_objects.limit_range(team)
        self.limit_range = k8s.core.v1.LimitRange(
            f"{name}-limits", metadata=defaults["metadata"], spec=defaults["spec"], opts=in_namespace)
        binding = tenancy_objects.edit_role_binding(team)
        self.role_binding = k8s.rbac.v1.RoleBinding(
            f"{name}-edit", metadata=binding["metadata"], role_ref=binding["roleRef"], subjects=binding["subjects"],
            opts=in_namespace)
        policies = tenancy_objects.network_policies(
            team, args.get("monitoring_namespace"),
            args.get("ingress_namespaces", list(tenancy_objects.DEFAULT_INGRESS_NAMESPACES)))
        self.network_policies = [
            k8s.networking.v1.NetworkPolicy(
                f"{name}-{p['metadata']['name']}", metadata=p["metadata"], spec=p["spec"], opts=in_namespace)
            for p in policies
        ]

        # A KubernetesObject has no cross-language schema form: annotated here, not at class level (Python-only).
        self.local_queue: Optional[KubernetesObject] = None
        if args.get("cluster_queue"):
            self.local_queue = KubernetesObject(
                f"{name}-queue", kueue_objects.local_queue(team.name, args["cluster_queue"]), in_namespace)
        self.claim_templates: dict[str, KubernetesObject] = {
            body["metadata"]["name"]: KubernetesObject(f"{name}-claim-{body['metadata']['name']}", body, in_namespace)
            for body in tenancy_objects.claim_templates(team, pools)
        }
        """The ResourceClaimTemplates of the DRA pools' GPUs, by name."""
        self.claim_template_names = list(self.claim_templates)
        self.namespace_name = self.namespace.metadata.name
        self.local_queue_name = kueue_objects.LOCAL_QUEUE_NAME if self.local_queue is not None else None
        self.register_outputs({"namespace_name": self.namespace_name, "local_queue_name": self.local_queue_name,
                               "claim_template_names": self.claim_template_names})
