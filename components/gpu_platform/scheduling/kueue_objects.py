"""Kueue's configuration and objects (``kueue.x-k8s.io/v1beta2``) as plain bodies, derived from pools and teams.

Facts relied on, checked in kubernetes-sigs/kueue at v0.19.2:

* Controller configuration (``apis/config/v1beta2/configuration_types.go``): ``waitForPodsReady`` and
  ``fairSharing`` are enabled by presence; ``managedJobsNamespaceSelector`` is required with the ``pod``
  integration and must not match ``kube-system`` or Kueue's own namespace (``pkg/config/validation.go``). The
  chart reads the whole Configuration from ``managerConfig.controllerManagerConfigYaml`` and also uses
  ``managedJobsNamespaceSelector`` as the namespaceSelector of its pod/job webhooks (``templates/webhook``), so
  only team namespaces ever see Kueue's webhooks.
* ResourceFlavor ``tolerations`` are injected into admitted pods; at most 8 (CRD ``maxItems``).
* DRA (``KueueDRAIntegration``, Beta and on by default, so no gate is set): ``resources.deviceClassMappings``
  (at most 16, 1-8 classes each, a class in one mapping only; ``pkg/config/validation.go``) names what the devices
  a pod claims through ResourceClaimTemplates count as, and ClusterQueues cover that name. Only ``exactly``
  requests of ``ExactCount`` are counted (``pkg/dra/claims.go``), and a claim of an unmapped DeviceClass makes
  the workload inadmissible, so the IMEX channel class of multi-node NVLink pools is mapped too
  (`dra_objects.kueue_device_class_mappings`). Topology-aware scheduling does not count DRA devices (docs,
  "Dynamic Resource Allocation", Limitations: TAS capacity ignores them), so DRA pools are never topology-aware.
* A flavor with ``topologyName`` only admits pod sets that ask for topology-aware scheduling, and such pod sets
  only take quota from topology flavors (``pkg/scheduler/flavorassigner/tas_flavorassigner.go``); the TAS
  capacity is that of Ready nodes carrying every level label (``pkg/util/tas/node.go``). So topology flavors
  are built only for RDMA pools of fixed size: on a pool that scales from zero, TAS would never see capacity
  and nothing would be admitted to trigger a scale-up.
* Topology ``levels`` are immutable, as are a topology flavor's ``nodeLabels``, ``tolerations`` and ``topologyName``
  (CRD rules): a pool whose levels change gets a new Topology (its name says which label set it lists,
  `topology_name`) and its flavor is replaced. The levels are the labels the pool's nodes carry
  (`kube.topology_labels`, with the sources per cloud), ``kubernetes.io/hostname`` last.
* Queued provisioning (GKE's Dynamic Workload Scheduler): an AdmissionCheck of the
  ``kueue.x-k8s.io/provisioning-request`` controller (GA since v0.14, no gate) whose ProvisioningRequestConfig asks
  for class ``queued-provisioning.gke.io``; Kueue reserves quota, creates a ProvisioningRequest for the workload's
  pods and admits it once GKE has created all of its nodes. ClusterQueues name the check in
  ``admissionChecksStrategy`` (``spec.admissionChecks`` was removed in v0.15) with ``onFlavors`` = the queued pools'
  flavors, so other flavors admit without it. Queued pools are not topology-aware: TAS and provisioning checks
  combine only with Kueue's newer node-provisioning flow, and each request's nodes are the job's alone anyway.
* Flavor order is `flavor_order.platform_order` (reserved and on-demand pools first, spot last, pool order within a
  rank, a ``fallbackPool`` always after the pools falling back to it), or the team's ``flavorOrder``
  (`flavor_order.team_order`): with ``flavorFungibility`` ``TryNextFlavor`` a workload that does not fit a flavor's
  quota without borrowing moves on to the next, so a pool's ``fallbackPool`` takes the overflow. Fallback is on quota,
  not on capacity: a reserved flavor whose nodes cannot be had keeps its pods Pending until ``waitForPodsReady``
  evicts them.
* ClusterQueue: ``cohortName``; a flavor appears in one resource group only, and a resource is covered by one
  group only; every flavor of a group lists exactly the group's ``coveredResources``, in that order;
  ``lendingLimit <= nominalQuota``; ``borrowingLimit``/``lendingLimit`` need a cohort
  (``pkg/webhooks/clusterqueue_webhook.go``, ``apis/kueue/v1beta2/clusterqueue_types.go``).

Pools of several accelerator vendors therefore share the one resource group: it covers CPU, memory and every
accelerator resource a pool advertises, and each flavor lists them all, with a nominal quota of 0 for the resources
its pool does not advertise (nothing can be admitted there, nor borrowed: no queue has any). Splitting the group per
vendor is not possible, as CPU and memory can only be in one group, and would also break topology-aware flavors,
which must supply every resource of a pod set.

DRA pools' GPUs (whole or MIG) count as ``nvidia.com/gpu``, exactly like the device plugin's, so ``gpuQuota`` and
the flavors need nothing new. Where a DRA pool's NVLink domain spans nodes, the group also covers IMEX channels
(``nvidia.com/imex-channel``, last): a team's channel quota on such a flavor equals its GPU quota there, since a pod
claims at most one channel and at least one GPU, so the channel never binds first (`imex_channel_quota`).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import yaml

from .. import catalog, labels, provisioning
from ..accelerators import dra_objects
from ..config_model import TeamConfig
from ..kubernetes_base.common import metadata
from ..pools import RDMA_RESOURCES, GpuPool
from ..versions import KUEUE_API_VERSION
from . import flavor_order, pool_quotas, quota_split, topology_labels
from .queue_config import weight_quantity

KUEUE_NAMESPACE = "kueue-system"
RELEASE_NAME = "kueue"
"""Helm release name; the chart's resources (``kueue-controller-manager``, ClusterRoles) are named after it."""
COHORT_NAME = "gpu-platform"
TOPOLOGY_NAME = "gpu-network"
"""The Topology of pools whose nodes carry no fabric label (zone and hostname); pools with fabric labels get
``gpu-network-<fabric>`` (`topology_name`)."""
QUEUED_PROVISIONING_CHECK = "queued-provisioning"
"""Name of the AdmissionCheck and of its ProvisioningRequestConfig for GKE queued-provisioning pools."""
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"
"""GKE's ProvisioningRequest class of Dynamic Workload Scheduler queued provisioning."""
PROVISIONING_REQUEST_CLASS_DETAIL = "ResizeRequestName"
"""The ProvisioningRequest class detail GKE sets to the name its nodes carry in
``autoscaling.gke.io/provisioning-request``: Kueue copies it into the admitted pods' nodeSelector, so the pods
land on the nodes created for them (xpk's GKE Kueue configuration does the same)."""
SPOT_TOLERATIONS: dict[str, tuple[dict, ...]] = {
    "oci": ({"key": labels.OKE_PREEMPTIBLE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},),
}
"""Per cloud, what a spot pool's flavor tolerates beyond the pool's own taints: the taints the cloud puts on
preemptible nodes itself without the platform declaring them (OKE; its value is undocumented, hence ``Exists``).
AKS's spot taint is one of the pool's taints already; EKS and GKE Standard add none."""
QUEUED_TOLERATIONS: tuple[dict, ...] = (
    {"key": labels.GKE_QUEUED_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
)
"""What a GKE queued-provisioning pool's flavor tolerates: GKE taints the nodes it creates for a ProvisioningRequest
``cloud.google.com/gke-queued=true:NoSchedule`` (GKE "Deploy GPUs with queued provisioning")."""
CPU_FLAVOR = "cpu.default"
"""The flavor of work without GPUs (no node labels: it runs on the CPU nodes). The dot keeps it apart from every
pool name (pool names are DNS labels)."""
LOCAL_QUEUE_NAME = "gpu"
"""Name of the LocalQueue in every team namespace: jobs carry ``kueue.x-k8s.io/queue-name: gpu``."""
GPU_RESOURCE = catalog.NVIDIA_GPU_RESOURCE
"""What ``gpuQuota`` counts, and the accelerator resource a queue covers when there are no pools yet."""
IMEX_CHANNEL_RESOURCE = dra_objects.KUEUE_IMEX_CHANNEL_RESOURCE
"""What Kueue counts the IMEX channels of multi-node NVLink DRA pools as (`channel_resources`)."""
BASE_RESOURCES = ("cpu", "memory")
"""Covered by every queue, in the same group as the accelerators: a topology-aware pod set must take every
resource it requests from its TAS flavor."""

FRAMEWORKS = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
    "trainer.kubeflow.org/trainjob",
    "pod",
    "deployment",
)
"""Integrations Kueue manages; one whose CRD is absent is set up once the CRD appears (jobframework.WaitForAPI)."""

EXCLUDED_RESOURCE_PREFIXES = (
    "ephemeral-storage",
    "hugepages-",
    "networking.gke.io.networks/",
    "nvidia.com/gpucores",
    "nvidia.com/gpumem",
    *sorted(RDMA_RESOURCES.values()),
)
"""Resources Kueue leaves out of quota accounting. Kueue's default ``BlockUndeclared`` check rejects a workload
that requests a resource no ClusterQueue covers, so RDMA NICs (EFA, InfiniBand/RoCE shared devices, GKE network
resources), HAMi's per-GPU memory/core shares, scratch disk and hugepages would make a pod set inadmissible."""

WAIT_FOR_PODS_READY_TIMEOUT = "15m"
"""Gang admission: an admitted workload whose pods are not all Ready by then is evicted and requeued. Generous
because GPU nodes scale up from zero and training images are large."""

MAX_POOL_TAINTS = 8
"""Kueue's ResourceFlavor takes at most 8 tolerations (kueue.x-k8s.io/v1beta2 CRD, ``spec.tolerations`` maxItems): a
pool's taints, the GPU taint included, must fit."""


@dataclass(frozen=True)
class FlavorPlan:
    """A GPU pool as Kueue sees it: its flavor name, capacity and whether it is topology-aware."""

    pool: GpuPool
    capacity: int
    """Of the pool's primary resource (`gpu_capacity`)."""
    topology: bool

    @property
    def name(self) -> str:
        return self.pool.name

    def capacity_of(self, resource: str) -> int:
        """What the pool offers of ``resource`` at its maximum size (0 for a resource it does not advertise). IMEX
        channels are bounded by the GPUs (a pod claims at most one channel and at least one GPU)."""
        if resource == self.pool.resource or (resource == IMEX_CHANNEL_RESOURCE and claims_imex_channels(self.pool)):
            return self.capacity
        return self.pool.resources_per_node.get(resource, 0) * self.pool.max_nodes


def gpu_capacity(pool: GpuPool) -> int:
    """The pool's primary resource (``nvidia.com/gpu``, ``aws.amazon.com/neuron``...) at its maximum size.

    Time-slicing/MPS/HAMi advertise every GPU ``replicas`` times; MIG pools run NVIDIA's ``single`` strategy
    (one profile per pool), which advertises every MIG instance as ``nvidia.com/gpu``.
    """
    per_node = pool.schedulable_gpus_per_node
    if pool.sharing.mode == "mig" and pool.sharing.mig_profile:
        per_node *= catalog.mig_instances_per_gpu(catalog.GPU_MODELS[pool.gpu_model], pool.sharing.mig_profile)
    return per_node * pool.max_nodes


def pool_capacity(pool: GpuPool, resource: str) -> int:
    """What ``pool`` holds of ``resource`` at its maximum size, as its flavor counts it (`FlavorPlan.capacity_of`):
    what teams' quotas are checked against."""
    return FlavorPlan(pool, gpu_capacity(pool), False).capacity_of(resource)


def accelerator_resources(plans: Sequence[FlavorPlan]) -> tuple[str, ...]:
    """The accelerator resources the queues cover: every resource a pool advertises, in pool order (``nvidia.com/gpu``
    alone without pools, so GPU jobs queue rather than fail until a pool exists)."""
    return catalog.advertised_resources(plan.pool.gpu_model for plan in plans) or (GPU_RESOURCE,)


def claims_imex_channels(pool: GpuPool) -> bool:
    """Jobs on the pool claim IMEX channels (a ComputeDomain's): a DRA pool whose NVLink domain spans nodes."""
    return pool.dra and pool.multi_node_nvlink


def channel_resources(plans: Sequence[FlavorPlan]) -> tuple[str, ...]:
    """``nvidia.com/imex-channel`` where some pool's jobs claim IMEX channels (Kueue's mapping names it, and a
    workload claiming an uncovered resource is never admitted); empty otherwise."""
    return (IMEX_CHANNEL_RESOURCE,) if any(claims_imex_channels(plan.pool) for plan in plans) else ()


def covered_resources(plans: Sequence[FlavorPlan]) -> tuple[str, ...]:
    """``coveredResources`` of the queues' one resource group (see the module docstring for why one): CPU, memory,
    the accelerator resources, then IMEX channels where pools need them."""
    return (*BASE_RESOURCES, *accelerator_resources(plans), *channel_resources(plans))


def imex_channel_quota(plans: Sequence[FlavorPlan], nvidia_gpus: Sequence[int]) -> tuple[int, ...]:
    """Per GPU flavor, a team's IMEX channel quota: its ``nvidia.com/gpu`` quota (``nvidia_gpus``) on the flavors of
    pools whose jobs claim channels, 0 elsewhere. A pod claims at most one channel and at least one GPU, so the
    channels never bind before the GPUs do."""
    return tuple(gpus if claims_imex_channels(plan.pool) else 0
                 for plan, gpus in zip(plans, nvidia_gpus, strict=True))


def topology_aware(pool: GpuPool) -> bool:
    """RDMA pools of fixed size get topology-aware placement (see the module docstring for why fixed), unless their
    GPUs are DRA devices: Kueue 0.19.2's TAS does not count DRA devices in its capacity (it places pods by their
    CPU and memory only), so it would assign topology blind to where the GPUs are. Queued-provisioning pools scale
    from zero, and each ProvisioningRequest's nodes are its job's alone."""
    return (bool(pool.rdma_fabric) and pool.min_nodes == pool.max_nodes and not pool.dra
            and pool.provisioning != provisioning.QUEUED)


def flavor_plans(pools: Sequence[GpuPool]) -> list[FlavorPlan]:
    """One plan per GPU pool, in the platform's flavor order (`flavor_order.platform_order`:
    `provisioning.FLAVOR_ORDER`, reserved and on-demand first, spot last, pool order within a rank, each
    ``fallback_pool`` after the pools falling back to it)."""
    ordered = flavor_order.platform_order(pools)
    return [FlavorPlan(p, gpu_capacity(p), topology_aware(p)) for p in ordered]


def topology_levels(pool: GpuPool) -> list[str]:
    """Node labels of ``pool``'s topology, coarsest first: those its nodes carry (`topology_labels.levels`: the zone,
    the cloud's fabric labels for the shape, the hostname)."""
    return list(topology_labels.levels(pool))


def topology_name(pool: GpuPool) -> str:
    """The Topology ``pool``'s flavor names: one per distinct level list (levels are immutable), ``gpu-network`` for
    zone and hostname alone, ``gpu-network-<fabric>`` (``aws-3``, ``aws-4``, ``gcp``, ``oci``) with fabric labels."""
    fabric = topology_labels.fabric(pool)
    return TOPOLOGY_NAME if fabric is None else f"{TOPOLOGY_NAME}-{fabric}"


def default_topology_level(pool: GpuPool) -> Optional[str]:
    """The level a multi-node job on ``pool`` asks to be packed into unless told otherwise: the coarsest fabric
    level, else the coarsest level; None without TAS.

    A job on a topology-aware flavor must ask for topology-aware scheduling, or that flavor never admits it.
    """
    if not topology_aware(pool):
        return None
    fabric = topology_labels.fabric_levels(pool)
    return fabric[0] if fabric else topology_levels(pool)[0]


def topology(pool: GpuPool) -> dict:
    """The Topology ``pool``'s topology-aware flavor refers to."""
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "Topology",
        "metadata": metadata(topology_name(pool)),
        "spec": {"levels": [{"nodeLabel": level} for level in topology_levels(pool)]},
    }


def topologies(plans: Sequence[FlavorPlan]) -> list[dict]:
    """The Topologies the topology-aware flavors name, one per name, in flavor order."""
    bodies: dict[str, dict] = {}
    for plan in plans:
        if plan.topology:
            bodies.setdefault(topology_name(plan.pool), topology(plan.pool))
    return list(bodies.values())


def flavor_node_labels(pool: GpuPool) -> dict[str, str]:
    """Labels that select exactly this pool's nodes (the pool label) plus the GPU model; a TPU pool's also carry the
    TPU type and slice topology GKE labels its nodes with (`tpu_flavor_labels`)."""
    return {**pool.selector, labels.ACCELERATOR_LABEL: pool.gpu_model, **tpu_flavor_labels(pool)}


def tpu_flavor_labels(pool: GpuPool) -> dict[str, str]:
    """``cloud.google.com/gke-tpu-accelerator`` and ``-topology`` of a GKE TPU pool (the pool carries the values GKE
    sets on its nodes): Kueue injects them as nodeSelectors, so an admitted pod lands on a slice of the TPU type and
    topology it was sized for, as GKE's TPU workloads select (GKE "Plan TPUs in GKE"). Empty for other pools."""
    if pool.vendor != catalog.GOOGLE_TPU:
        return {}
    keys = (catalog.GKE_TPU_ACCELERATOR_LABEL, catalog.GKE_TPU_TOPOLOGY_LABEL)
    return {key: value for key, value in pool.labels.items() if key in keys}


def flavor_tolerations(pool: GpuPool) -> list[dict]:
    """Every taint of the pool's nodes tolerated: the pool's own (`GpuPool.tolerations`), then those the cloud adds
    by itself to spot nodes (`SPOT_TOLERATIONS`) and to queued-provisioning nodes (`QUEUED_TOLERATIONS`), unless the
    pool declares that key already."""
    own = pool.tolerations
    extra = [*(SPOT_TOLERATIONS.get(pool.cloud, ()) if pool.provisioning == provisioning.SPOT else ()),
             *(QUEUED_TOLERATIONS if pool.provisioning == provisioning.QUEUED else ())]
    keys = {t["key"] for t in own}
    return [*own, *(dict(t) for t in extra if t["key"] not in keys)]


def resource_flavor(plan: FlavorPlan) -> dict:
    """A ResourceFlavor whose labels and tolerations Kueue injects into the pods it admits on the pool."""
    spec: dict = {"nodeLabels": flavor_node_labels(plan.pool), "tolerations": flavor_tolerations(plan.pool)}
    if plan.topology:
        spec["topologyName"] = topology_name(plan.pool)
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": metadata(plan.name, extra_labels={labels.POOL_LABEL: plan.name}),
        "spec": spec,
    }


def queued_flavors(plans: Sequence[FlavorPlan]) -> list[str]:
    """The flavors of queued-provisioning pools, in flavor order."""
    return [plan.name for plan in plans if plan.pool.provisioning == provisioning.QUEUED]


def provisioning_request_config(plans: Sequence[FlavorPlan]) -> Optional[dict]:
    """What Kueue's ProvisioningRequests for queued pools ask GKE for (None without queued pools): class
    ``queued-provisioning.gke.io``, for the queued pools' accelerator resources (a pod set requesting none of them
    needs no request), the pods pinned to the nodes created for them."""
    queued = [plan.pool for plan in plans if plan.pool.provisioning == provisioning.QUEUED]
    if not queued:
        return None
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ProvisioningRequestConfig",
        "metadata": metadata(QUEUED_PROVISIONING_CHECK),
        "spec": {
            "provisioningClassName": QUEUED_PROVISIONING_CLASS,
            "managedResources": sorted({pool.resource for pool in queued}),
            "podSetUpdates": {"nodeSelector": [{
                "key": labels.GKE_PROVISIONING_REQUEST_LABEL,
                "valueFromProvisioningClassDetail": PROVISIONING_REQUEST_CLASS_DETAIL}]},
        },
    }


def admission_check(plans: Sequence[FlavorPlan]) -> Optional[dict]:
    """The AdmissionCheck of queued pools (None without any): Kueue's ProvisioningRequest controller with
    `provisioning_request_config`."""
    if not queued_flavors(plans):
        return None
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": metadata(QUEUED_PROVISIONING_CHECK),
        "spec": {
            "controllerName": labels.KUEUE_PROVISIONING_CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                           "name": QUEUED_PROVISIONING_CHECK},
        },
    }


def cpu_flavor() -> dict:
    """The flavor of CPU-only work: nothing injected, so its pods stay off the tainted GPU nodes."""
    return {"apiVersion": KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": metadata(CPU_FLAVOR), "spec": {}}


def cohort() -> dict:
    """The cohort every team's ClusterQueue joins, so idle quota is borrowed and reclaimed."""
    return {"apiVersion": KUEUE_API_VERSION, "kind": "Cohort", "metadata": metadata(COHORT_NAME), "spec": {}}


@dataclass(frozen=True)
class TeamQuota:
    """A team's quota per GPU flavor: accelerator resources, CPU cores, memory GiB and GPU lending limit."""

    team: TeamConfig
    accelerators: tuple[tuple[str, tuple[int, ...]], ...]
    """Per covered accelerator resource, in `accelerator_resources` order: the nominal quota on each GPU flavor (0 on
    the pools that do not advertise the resource)."""
    gpus: tuple[int, ...]
    """Per GPU flavor: the quota of the pool's primary resource, which the CPU and memory quotas follow."""
    cpu_only_cpu: int
    cpu: tuple[int, ...]
    cpu_only_memory_gib: int
    memory_gib: tuple[int, ...]
    lending: Optional[tuple[Optional[int], ...]]
    """Per GPU flavor: the lending limit of the pool's primary resource, None where it has none: the team-wide
    ``lendingLimit`` (which counts NVIDIA GPUs, like ``gpuQuota``) split over the NVIDIA flavors, or the team's
    ``poolLendingLimits``; None without either."""
    imex_channels: tuple[int, ...]
    """Per GPU flavor: the ``nvidia.com/imex-channel`` quota (`imex_channel_quota`); covered only where
    `channel_resources` says so."""

    borrowing: tuple[Optional[int], ...] = ()
    """Per GPU flavor: the borrowing limit of the pool's primary resource (`pool_quotas.borrowing_limits`)."""

    def quota_of(self, resource: str) -> tuple[int, ...]:
        """The per-flavor quota of one accelerator resource or of IMEX channels (zeros for a resource the queues do
        not cover)."""
        if resource == IMEX_CHANNEL_RESOURCE:
            return self.imex_channels
        return dict(self.accelerators).get(resource, (0,) * len(self.gpus))


def _split_resource(resource: str, teams: Sequence[TeamConfig], plans: Sequence[FlavorPlan]) -> list[list[int]]:
    """Per team, one resource's quota on each flavor: split over the pools advertising it by `kube.quota_split`."""
    offering = [i for i, plan in enumerate(plans) if resource in plan.pool.resources]
    pools = [plans[i].pool for i in offering]
    rows = quota_split.split_demands([pool_quotas.demand(t, resource, pools) for t in teams],
                                     [plans[i].capacity_of(resource) for i in offering])
    full = []
    for row in rows:
        spread = [0] * len(plans)
        for i, part in zip(offering, row, strict=True):
            spread[i] = part
        full.append(spread)
    return full


def team_quotas(teams: Sequence[TeamConfig], plans: Sequence[FlavorPlan]) -> list[TeamQuota]:
    """Every team's quota split over the flavors by the rule in `kube.quota_split`, each accelerator resource over
    the pools that advertise it."""
    resources = accelerator_resources(plans)
    split = {r: _split_resource(r, teams, plans) for r in resources}
    quotas = []
    for t, team in enumerate(teams):
        accelerators = tuple((r, tuple(split[r][t])) for r in resources)
        gpus = [split[plan.pool.resource][t][i] for i, plan in enumerate(plans)]
        cpu_only_cpu, cpu = quota_split.split_with_gpus(team.cpu_quota, gpus)
        cpu_only_mem, mem = quota_split.split_with_gpus(team.memory_quota_gib, gpus)
        nvidia = split[GPU_RESOURCE][t] if GPU_RESOURCE in split else [0] * len(plans)
        pools = [plan.pool for plan in plans]
        lending = pool_quotas.lending_limits(team, pools, gpus)
        if team.lending_limit is not None:
            shares = quota_split.split_lending_limit(team.lending_limit, nvidia)
            lending = tuple(part if plan.pool.resource == GPU_RESOURCE else None
                            for plan, part in zip(plans, shares, strict=True))
        quotas.append(TeamQuota(team, accelerators, tuple(gpus), cpu_only_cpu, tuple(cpu), cpu_only_mem, tuple(mem),
                                lending, imex_channel_quota(plans, nvidia), pool_quotas.borrowing_limits(team, pools)))
    return quotas


def _resource(name: str, nominal: int | str, borrowing: Optional[int] = None, lending: Optional[int] = None) -> dict:
    body: dict = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        body["borrowingLimit"] = borrowing
    if lending is not None:
        body["lendingLimit"] = lending
    return body


def queue_flavor_indexes(quota: TeamQuota, pool_count: int) -> set[int]:
    """The GPU flavors a team's ClusterQueue lists: every pool where it has quota, then the others in pool order
    (for borrowing) until Kueue's limit of flavors per resource group is reached."""
    with_quota = [i for i in range(pool_count)
                  if any(row[i] for _, row in quota.accelerators) or quota.cpu[i] or quota.memory_gib[i]]
    others = [i for i in range(pool_count) if i not in with_quota]
    return set((with_quota + others)[:quota_split.MAX_GPU_FLAVORS_PER_QUEUE])


def cluster_queue(quota: TeamQuota, plans: Sequence[FlavorPlan], checks: Sequence[str] = ()) -> dict:
    """The team's ClusterQueue: its namespace only, CPU-only flavor first, then one flavor per GPU pool in flavor
    order (`flavor_plans`), the queued-provisioning check on the queued pools' flavors, and ``checks`` (a MultiKueue
    manager's AdmissionCheck) on every flavor.

    Every flavor lists CPU, memory, each accelerator resource and IMEX channels where covered
    (`covered_resources`). A pool flavor's own primary resource takes the team's ``borrowingLimit``;
    ``nvidia.com/gpu`` takes its share of the ``lendingLimit``. A secondary resource (NeuronCores) and IMEX channels
    are borrowed and lent without a limit: the limits are counted in devices, and channels follow the GPUs.

    Flavors in the team's order (`flavor_order.team_order`); borrowing and lending limits per flavor from
    `pool_quotas`. Preemption (`preemption`): by default a team reclaims its lent quota from any borrower
    (``reclaimWithinCohort: Any``) and, inside its own queue, higher priority evicts lower (``withinClusterQueue:
    LowerPriority``); a team's ``preemption`` and ``fairSharingWeight`` replace these. Flavor search goes on to the
    next flavor rather than borrowing or preempting on the first (``TryNextFlavor``).
    """
    team = quota.team
    chosen = queue_flavor_indexes(quota, len(plans))
    order = flavor_order.team_order(team.queue.flavor_order, [plan.pool for plan in plans])
    channels = channel_resources(plans)
    flavors = [{"name": CPU_FLAVOR, "resources": [
        _resource("cpu", quota.cpu_only_cpu), _resource("memory", f"{quota.cpu_only_memory_gib}Gi"),
        *(_resource(r, 0) for r, _ in quota.accelerators), *(_resource(r, 0) for r in channels)]}]
    for i in order:
        plan = plans[i]
        if i not in chosen:
            continue
        accelerators = []
        for resource, row in quota.accelerators:
            if resource not in plan.pool.resources:
                accelerators.append(_resource(resource, 0))
                continue
            primary = resource == plan.pool.resource
            lending = quota.lending[i] if primary and quota.lending is not None else None
            accelerators.append(_resource(
                resource, row[i], borrowing=quota.borrowing[i] if primary else None, lending=lending))
        flavors.append({"name": plan.name, "resources": [
            _resource("cpu", quota.cpu[i]),
            _resource("memory", f"{quota.memory_gib[i]}Gi"),
            *accelerators,
            *(_resource(r, quota.quota_of(r)[i]) for r in channels),
        ]})
    spec: dict = {
        "cohortName": COHORT_NAME,
        "namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: team.name}},
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"},
        "preemption": preemption(team),
        "resourceGroups": [{"coveredResources": list(covered_resources(plans)), "flavors": flavors}],
    }
    if team.queue.fair_sharing_weight is not None:
        spec["fairSharing"] = {"weight": weight_quantity(team.queue.fair_sharing_weight)}
    listed = {f["name"] for f in flavors}
    queued = [f for f in queued_flavors(plans) if f in listed]
    strategy = [{"name": QUEUED_PROVISIONING_CHECK, "onFlavors": queued}] if queued else []
    # Only on the queued flavors: an empty onFlavors would mean every flavor, which is what ``checks`` want (Kueue
    # deactivates a queue whose MultiKueue check is per flavor).
    strategy += [{"name": check} for check in checks]
    if strategy:
        spec["admissionChecksStrategy"] = {"admissionChecks": strategy}
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": metadata(team.name, extra_labels={labels.TEAM_LABEL: team.name}),
        "spec": spec,
    }


def preemption(team: TeamConfig) -> dict:
    """The ClusterQueue's ``preemption``: the team's ``withinClusterQueue`` and ``reclaimWithinCohort`` (defaults
    ``LowerPriority`` and ``Any``), and ``borrowWithinCohort`` only where the team sets it."""
    policy = team.queue.preemption
    body: dict = {"reclaimWithinCohort": policy.reclaim_within_cohort,
                  "withinClusterQueue": policy.within_cluster_queue}
    if policy.borrow_within_cohort is not None:
        body["borrowWithinCohort"] = {"policy": policy.borrow_within_cohort}
        if policy.borrow_max_priority_threshold is not None:
            body["borrowWithinCohort"]["maxPriorityThreshold"] = policy.borrow_max_priority_threshold
    return body


def local_queue(team: str, cluster_queue_name: str) -> dict:
    """The LocalQueue in a team namespace that feeds the team's ClusterQueue."""
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": metadata(LOCAL_QUEUE_NAME, team, extra_labels={labels.TEAM_LABEL: team}),
        "spec": {"clusterQueue": cluster_queue_name},
    }


def resource_configuration(pools: Sequence[GpuPool]) -> dict:
    """The Configuration's ``resources``: the excluded prefixes, and the device class mappings of DRA pools (absent
    without any, as before DRA)."""
    resources: dict = {"excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES)}
    mappings = dra_objects.kueue_device_class_mappings(pools)
    if mappings:
        resources["deviceClassMappings"] = mappings
    return resources


def controller_configuration(pools: Sequence[GpuPool] = (), multikueue: Optional[dict] = None) -> dict:
    """Kueue's Configuration (``config.kueue.x-k8s.io/v1beta2``): the chart's defaults plus the platform's policy,
    what the claims of the DRA ``pools`` count as (`resource_configuration`), and a MultiKueue manager's
    ``multiKueue`` section (`multikueue_objects.controller_section`; absent otherwise)."""
    configuration = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        # The chart's default ports, leader election and client settings (values.yaml@v0.19.2), kept because
        # this document replaces the chart's default one as a whole.
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {
            "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
        "clientConnection": {"qps": 300, "burst": 500},
        # Only workloads that name a queue are managed, and only in team namespaces.
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchExpressions": [{"key": labels.TEAM_LABEL, "operator": "Exists"}]},
        "waitForPodsReady": {
            "timeout": WAIT_FOR_PODS_READY_TIMEOUT,
            "recoveryTimeout": "5m",
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
        },
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "resources": resource_configuration(pools),
    }
    if multikueue:
        configuration["multiKueue"] = dict(multikueue)
    return configuration


def helm_values(enable_prometheus: bool, pools: Sequence[GpuPool] = (), multikueue: Optional[dict] = None) -> dict:
    """Values of the Kueue chart (keys of charts/kueue/values.yaml@v0.19.2) for a cluster of ``pools``."""
    return {
        "enablePrometheus": enable_prometheus,
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(controller_configuration(pools, multikueue),
                                                          sort_keys=True),
        },
    }
