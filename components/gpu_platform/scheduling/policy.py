"""`SchedulingPolicy`: PriorityClasses, and Kueue with its flavors, topology, cohort and team queues.

What a platform user gets:

* PriorityClasses ``inference-critical``, ``high-priority``, ``medium-priority`` and ``low-priority`` (the last
  never preempts), optionally ``high-priority-<gpu>`` / ``medium-priority-<gpu>`` per GPU model, and a Kueue
  WorkloadPriorityClass of the same name and value for each. No class is the cluster default unless
  ``scheduling.defaultPriorityClass`` names one.
* Kueue (pinned chart) managing batch Jobs, JobSets, Kubeflow jobs, plain pods and Deployments that name a
  queue, in team namespaces only; gang admission (``waitForPodsReady``) and fair sharing on.
* One ResourceFlavor per GPU pool (the pool's label and GPU model, tolerations for every taint of the pool) and
  a CPU-only flavor; fixed-size RDMA pools are topology-aware (a ``Topology`` of the zone, the network-fabric labels
  the cloud puts on the pool's shape and the host: `kube.topology_labels`), unless their GPUs are DRA devices, which
  Kueue's topology-aware scheduling does not count, or they are queued-provisioning pools.
* Flavors in the platform's order (`flavor_order`: reserved and on-demand first, spot last, each pool's
  ``fallback_pool`` after it), or the order a team's ``flavor_order`` gives, so a team's work spills to the next
  flavor when its quota there is used; spot flavors tolerate the taints the cloud puts on spot nodes. GKE
  queued-provisioning pools get an AdmissionCheck with a ProvisioningRequestConfig, which every ClusterQueue applies
  on those pools' flavors.
* One ClusterQueue per team in one cohort, covering CPU, memory and every accelerator resource the pools advertise
  (``nvidia.com/gpu``, ``aws.amazon.com/neuron``...). A team's ``pool_quotas`` are its nominal quotas per pool or GPU
  model (`pool_quotas`); what its totals (``gpu_quota``, ``quotas``) leave beyond them, and a total given alone, is
  split as `quota_split` documents: each resource over the pools advertising it, proportional to their free
  capacity, adding up exactly. Borrowing and lending limits per flavor, preemption and the fair-sharing weight are
  the team's (`teams.TeamSpec`). Quotas beyond what the pools hold are refused unless ``overcommit``.
* DRA pools (``gpuAllocation: dra``): the GPUs (or MIG devices) pods claim through ResourceClaimTemplates count as
  ``nvidia.com/gpu`` in Kueue (its ``deviceClassMappings``), so ``gpuQuota`` covers them as it covers device-plugin
  GPUs. Where a DRA pool's NVLink domain spans nodes, queues also cover ``nvidia.com/imex-channel`` (the
  ComputeDomain channels jobs claim), with a team's quota on such a pool's flavor equal to its GPU quota there.
  Jobs submit to the LocalQueue ``gpu`` in their team namespace (`kube.tenancy`).

Ordering on a first ``pulumi up``: Kueue's CRDs and webhooks arrive with the Helm release. The release waits
for its resources to be ready (``skipAwait`` is not set, so the provider awaits them as ``helm --wait``
does), and Kueue's readiness probe only passes once its webhook certificates are in place and the webhook
server is serving (``cmd/kueue/main.go`` readyz check). Every Kueue object here depends on the release, and
team objects depend on this component, so no object reaches the API server before the webhook can answer.
"""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from .. import catalog, provisioning, versions
from ..component_args import Args, KeywordArgs, choice
from ..kubernetes_base.common import check_pool_set, child_opts, helm_release, pools_of
from ..kubernetes_base.custom_object import KubernetesObject
from ..pools import GpuPoolSpec
from ..security import namespace_security
from . import kueue_objects, pool_quotas, priorities, priority_objects, program_teams
from .teams import NAMESPACE_FIELDS, TeamSpec, check_team, team_of, team_rules, team_specs


class SchedulingPolicyArgs(TypedDict, total=False):
    """Arguments of `SchedulingPolicy`."""

    pools: list[GpuPoolSpec]
    """The cluster's GPU pools."""
    teams: list[TeamSpec]
    """Teams, each with a ClusterQueue (their namespaces come from `TeamNamespace`): a `teams.Team` each (the same
    object given to the team's `TeamNamespace`), or a `TeamSpec` without the namespace's ``group`` and
    ``storage_quota``."""
    kueue: bool
    """Install Kueue and build flavors, topology, cohort and queues. Default: true."""
    per_gpu_priority_classes: bool
    """Also create ``high-priority-<gpu>`` / ``medium-priority-<gpu>`` classes. Default: false."""
    default_priority_class: Optional[str]
    """Tier made the cluster's global default PriorityClass. Default: none."""
    enable_prometheus: bool
    """Let the Kueue chart create its ServiceMonitor (needs the Prometheus Operator CRDs). Default: false."""
    overcommit: bool
    """Let the teams' quotas add up to more than the pools hold at their maximum size (per resource and per pool);
    the part beyond a pool's capacity is spread in proportion to pool size. Default: false (refused)."""
    admission_checks: list[str]
    """AdmissionChecks every team ClusterQueue passes on all its flavors (a MultiKueue manager's,
    `multikueue.MultiKueueManager`). Default: none."""
    multikueue: dict[str, str]
    """The Kueue configuration's ``multiKueue`` section of a MultiKueue manager
    (`multikueue_objects.controller_section`). Default: none."""


RULES = {
    **team_rules("teams[]"),
    "default_priority_class": choice(*(t.name for t in priorities.TIERS)),
}


def checked_args(name: str, args: SchedulingPolicyArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("SchedulingPolicy", name)
    built: list[bool] = []
    if isinstance(args, dict) and isinstance(args.get("teams"), list):
        specs = [team_specs(t) for t in args["teams"]]
        built = [b for _, b in specs]
        args = {**args, "teams": [spec for spec, _ in specs]}
    checked = checker.check(args, SchedulingPolicyArgs, RULES)
    pools, teams = checked.get("pools", []), checked.get("teams", [])
    check_pool_set(checker, pools)
    checker.unique([t["name"] for t in teams], "teams", "team name")
    gpu_pools = pools_of(pools) if pools else []
    advertised = catalog.advertised_resources(p.gpu_model for p in gpu_pools) if pools else None
    for i, team in enumerate(teams):
        for field in NAMESPACE_FIELDS:
            if field in team and not built[i]:
                checker.fail(f"teams[{i}].{field}", "is the team namespace's (TeamNamespace); a ClusterQueue makes no "
                                                    "use of it: give it there, or one Team to both")
        check_team(checker, team, f"teams[{i}]", advertised, gpu_pools)
    configs = [team_of(t, gpu_pools) for t in teams]
    # A MultiKueue manager's quotas bound what it dispatches to its workers, not what its own pools hold.
    if not checked.get("overcommit", False) and pools and not checked.get("multikueue"):
        problem = pool_quotas.capacity_problem(configs, gpu_pools, kueue_objects.pool_capacity)
        if problem is not None:
            checker.fail(f"teams[{problem[0]}].{problem[1]}",
                         problem[2].replace("declare overcommit", "pass overcommit=True"))
    if checked.get("kueue", True) is False:
        for i, team in enumerate(teams):
            for field in ("pool_quotas", "pool_borrowing_limits", "pool_lending_limits", "flavor_order",
                          "preemption", "fair_sharing_weight"):
                if field in team:
                    checker.fail(f"teams[{i}].{field}", "is a Kueue setting and kueue is false; remove it or "
                                                        "install Kueue")
    if checked.get("kueue", True):
        for i, pool in enumerate(gpu_pools):
            # Kueue's ResourceFlavor takes at most this many tolerations (the stack file's rule too).
            tolerations = kueue_objects.flavor_tolerations(pool)
            if len(tolerations) > kueue_objects.MAX_POOL_TAINTS:
                checker.fail(f"pools[{i}].taints", f"the pool's nodes would carry {len(tolerations)} taints "
                                                   f"(the GPU taint included); a Kueue flavor tolerates at most "
                                                   f"{kueue_objects.MAX_POOL_TAINTS}")
    by_name = {p.name: (p.resource, p.fallback_pool) for p in gpu_pools}
    for i, pool in enumerate(gpu_pools):
        problem = provisioning.fallback_problem(pool.name, pool.fallback_pool, by_name)
        if problem is not None:
            checker.fail(f"pools[{i}].fallback_pool", problem[1])
    uses = [program_teams.EVERYTHING if b else program_teams.TOTALS | program_teams.QUEUE for b in built]
    for i, config in enumerate(configs):
        conflict = program_teams.team_conflict(config, uses[i])
        if conflict:
            checker.fail(f"teams[{i}]", conflict)
        # Only a Team carries the namespace's storage_quota here; a DataPlaneStorage constructed first assumed one.
        conflict = program_teams.storage_conflict(config) if "storage_quota" in uses[i] else None
        if conflict:
            checker.fail(f"teams[{i}].storage_quota", conflict)
    for i, config in enumerate(configs):
        program_teams.remember_team(f"{checker.where} teams[{i}]", config, uses[i])
    if checked.get("kueue", True):
        program_teams.remember_queues(checker.where, [t.name for t in configs])
    return checked


class SchedulingPolicy(pulumi.ComponentResource, metaclass=KeywordArgs):
    """Priority classes and Kueue queues derived from the GPU pools and the teams."""

    priority_classes: dict[str, k8s.scheduling.v1.PriorityClass]
    release: Optional[k8s.helm.v3.Release]

    def __init__(self, name: str, args: SchedulingPolicyArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:SchedulingPolicy", name, {}, opts)
        pools = pools_of(args.get("pools", []))
        teams = [team_of(t, pools) for t in args.get("teams", [])]
        per_gpu = bool(args.get("per_gpu_priority_classes", False))
        specs = priority_objects.class_specs(pools, per_gpu)

        self.priority_classes = {}
        for spec in specs:
            body = priority_objects.priority_class(spec, args.get("default_priority_class"))
            self.priority_classes[spec.name] = k8s.scheduling.v1.PriorityClass(
                f"{name}-pc-{spec.name}", metadata=body["metadata"], value=body["value"],
                preemption_policy=body["preemptionPolicy"], global_default=body["globalDefault"],
                description=body["description"], opts=child_opts(self, opts))
        # Kueue objects are KubernetesObjects, which have no cross-language schema form: annotated here rather
        # than at class level, so they stay Python-only attributes.
        self.workload_priority_classes: dict[str, KubernetesObject] = {}
        self.flavors: dict[str, KubernetesObject] = {}
        self.cluster_queues: dict[str, KubernetesObject] = {}
        self.topologies: dict[str, KubernetesObject] = {}
        """Kueue Topologies by name (one per level list the topology-aware pools' nodes carry)."""
        self.admission_check: Optional[KubernetesObject] = None
        """The queued-provisioning AdmissionCheck (GKE queued pools only)."""
        self.provisioning_request_config: Optional[KubernetesObject] = None
        self.cohort: Optional[KubernetesObject] = None
        self.release = None
        self.kueue_namespace: Optional[k8s.core.v1.Namespace] = None
        """Kueue's namespace (Pod Security restricted), when Kueue is installed."""
        if args.get("kueue", True):
            self._build_kueue(name, opts, pools, teams, specs, bool(args.get("enable_prometheus", False)),
                              list(args.get("admission_checks") or []), args.get("multikueue"))

        self.local_queue_name = kueue_objects.LOCAL_QUEUE_NAME if self.release is not None else None
        self.register_outputs({
            "priority_class_names": list(self.priority_classes),
            "flavor_names": list(self.flavors),
            "cluster_queue_names": list(self.cluster_queues),
        })

    def _build_kueue(self, name, opts, pools, teams, specs, enable_prometheus: bool, extra_checks: list[str],
                     multikueue: Optional[dict]) -> None:
        # The namespace is ours, not Helm's (create_namespace would leave it unlabelled): Pod Security restricted.
        self.kueue_namespace = k8s.core.v1.Namespace(
            f"{name}-kueue-namespace", **namespace_security.namespace_body(
                kueue_objects.KUEUE_NAMESPACE, namespace_security.namespace_pod_security("kueue")),
            opts=child_opts(self, opts))
        self.release = helm_release(
            f"{name}-kueue", versions.KUEUE, kueue_objects.RELEASE_NAME, kueue_objects.KUEUE_NAMESPACE,
            kueue_objects.helm_values(enable_prometheus, pools, multikueue),
            child_opts(self, opts, depends_on=[self.kueue_namespace]), create_namespace=False)

        def after_release(extra: Optional[list] = None) -> pulumi.ResourceOptions:
            return child_opts(self, opts, depends_on=[self.release, *(extra or [])])

        self.workload_priority_classes = {
            s.name: KubernetesObject(f"{name}-wpc-{s.name}", priority_objects.workload_priority_class(s),
                                     after_release())
            for s in specs
        }
        plans = kueue_objects.flavor_plans(pools)
        for body in kueue_objects.topologies(plans):
            topology_name = body["metadata"]["name"]
            # The one Topology of earlier versions keeps its child name (no replacement where levels are the same).
            child = f"{name}-topology" if topology_name == kueue_objects.TOPOLOGY_NAME else \
                f"{name}-topology-{topology_name}"
            self.topologies[topology_name] = KubernetesObject(child, body, after_release())
        self.flavors[kueue_objects.CPU_FLAVOR] = KubernetesObject(
            f"{name}-flavor-cpu", kueue_objects.cpu_flavor(), after_release())
        for plan in plans:
            topology = [self.topologies[kueue_objects.topology_name(plan.pool)]] if plan.topology else []
            self.flavors[plan.name] = KubernetesObject(
                f"{name}-flavor-{plan.name}", kueue_objects.resource_flavor(plan), after_release(topology))
        checks: list[KubernetesObject] = []
        config_body, check_body = kueue_objects.provisioning_request_config(plans), kueue_objects.admission_check(plans)
        if config_body is not None and check_body is not None:
            self.provisioning_request_config = KubernetesObject(
                f"{name}-provisioning-request-config", config_body, after_release())
            self.admission_check = KubernetesObject(
                f"{name}-admission-check", check_body, after_release([self.provisioning_request_config]))
            checks.append(self.admission_check)
        self.cohort = KubernetesObject(f"{name}-cohort", kueue_objects.cohort(), after_release())
        for quota in kueue_objects.team_quotas(teams, plans):
            body = kueue_objects.cluster_queue(quota, plans, extra_checks)
            listed = [f["name"] for group in body["spec"]["resourceGroups"] for f in group["flavors"]]
            # The queued-provisioning check where the queue names it; extra checks are their owner's to order.
            named = {c["name"] for c in body["spec"].get("admissionChecksStrategy", {}).get("admissionChecks", [])}
            queue_checks = [c for c in checks if kueue_objects.QUEUED_PROVISIONING_CHECK in named]
            # Only the flavors the queue lists: each dependency edge costs the SDK a walk of its closure.
            self.cluster_queues[quota.team.name] = KubernetesObject(
                f"{name}-cq-{quota.team.name}", body,
                after_release([self.cohort, *queue_checks, *(self.flavors[n] for n in listed)]))

