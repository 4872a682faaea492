"""`TrainingWorkload`: the reference Kueue-managed distributed training job, its retraining CronJob and checkpoints;
on DRA pools the ResourceClaimTemplate of the ranks' GPUs and, where NVLink spans nodes, a ComputeDomain per
workload (`training_objects` says why)."""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import catalog, versions
from ..component_args import CRON, DNS_LABEL, NON_EMPTY, STORAGE_QUANTITY, Args, KeywordArgs, at_least, choice
from ..errors import one_of
from ..kubernetes_base.common import DNS_SUBDOMAIN, child_opts
from ..kubernetes_base.custom_object import KubernetesObject
from ..pools import GpuPool, GpuPoolSpec
from ..scheduling import kueue_objects
from ..scheduling.priorities import HIGH, MEDIUM
from ..storage import storage_objects
from . import training_objects


class TrainingWorkloadArgs(TypedDict, total=False):
    """Arguments of `TrainingWorkload`."""

    pool: Required[GpuPoolSpec]
    """GPU pool the job runs on (usually `pools.training_pool`)."""
    namespace: Required[str]
    """Team namespace the job runs in."""
    gpu_quota: int
    """The team's quota of the pool's accelerator resource (``nvidia.com/gpu`` on NVIDIA pools): the job is sized to
    fit in it (at most two nodes)."""
    local_queue: Optional[str]
    """Kueue LocalQueue to submit to; none runs the Job directly (no gang admission)."""
    topology_level: Optional[str]
    """Node label of the topology level to pack the ranks into, when the pool's flavor is topology-aware (one of
    `kueue_objects.topology_levels`; the platform passes `kueue_objects.default_topology_level`)."""
    topology_policy: str
    """``preferred`` (Kueue packs the ranks into one domain of ``topology_level`` when they fit, else spreads them)
    or ``required`` (only into one domain). Default: ``preferred``."""
    image: str
    """Container image with PyTorch and ``torchrun``. Default: the pool's vendor's in `versions.TRAINING_IMAGES`
    (NGC PyTorch on NVIDIA pools, ROCm PyTorch on AMD pools)."""
    job_priority_class: str
    """PriorityClass / WorkloadPriorityClass of the one-off Job. Default: ``medium-priority``."""
    retrain_priority_class: str
    """PriorityClass / WorkloadPriorityClass of scheduled retraining. Default: ``high-priority``."""
    schedule: str
    """Cron schedule of the retraining CronJob. Default: ``0 3 * * 0``."""
    checkpoint_size: str
    """Size of the checkpoint volume. Default: ``100Gi``."""
    checkpoint_storage_class: Optional[str]
    """StorageClass of the checkpoint volume, one offering ReadWriteMany. Default: the cluster's default class."""
    checkpoint_claim: Optional[str]
    """An existing ReadWriteMany claim for the checkpoints (the team's on the shared file system) instead of the
    job's own volume. Default: none (the job makes its own, ``checkpoint_size`` of ``checkpoint_storage_class``)."""
    datasets_claim: Optional[str]
    """A claim with the team's datasets, mounted read-only at ``/data``. Default: none."""
    datasets_sub_path: str
    """The directory of ``datasets_claim``'s volume mounted at ``/data`` (``subPath``): the team's, where the file
    system's driver mounts only its root (GKE Managed Lustre). Default: the whole volume."""
    checkpoint_sub_path: str
    """The directory of ``checkpoint_claim``'s volume the checkpoints go to (``subPath``). Default: the whole
    volume."""
    bucket_claims: list[str]
    """Claims of buckets, each mounted at ``/buckets/<claim>``. Default: none."""
    service_account: Optional[str]
    """The ranks' ServiceAccount (the identity the buckets are granted to, ``storage-access``). Default: the
    namespace's ``default``."""
    pod_labels: dict[str, str]
    """Extra pod labels (what a bucket's driver needs, e.g. ``azure.workload.identity/use``). Default none."""
    pod_annotations: dict[str, str]
    """Extra pod annotations (what a bucket's driver needs, e.g. ``gke-gcsfuse/volumes``). Default none."""


RULES = {
    "namespace": DNS_LABEL,
    "gpu_quota": at_least(1),
    "local_queue": DNS_SUBDOMAIN,
    "image": NON_EMPTY,
    "job_priority_class": DNS_SUBDOMAIN,
    "retrain_priority_class": DNS_SUBDOMAIN,
    "schedule": CRON,
    "checkpoint_size": STORAGE_QUANTITY,
    "checkpoint_storage_class": DNS_SUBDOMAIN,
    "checkpoint_claim": DNS_SUBDOMAIN,
    "datasets_claim": DNS_SUBDOMAIN,
    "datasets_sub_path": storage_objects.SUB_PATH,
    "checkpoint_sub_path": storage_objects.SUB_PATH,
    "bucket_claims[]": DNS_LABEL,
    "service_account": DNS_SUBDOMAIN,
    "topology_policy": choice(*training_objects.TOPOLOGY_POLICIES),
}


def checked_args(name: str, args: TrainingWorkloadArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("TrainingWorkload", name)
    checked = checker.check(args, TrainingWorkloadArgs, RULES)
    vendor = catalog.vendor_of(checked["pool"].get("gpu_model", ""))
    if vendor.key not in versions.TRAINING_IMAGES:
        # The program is PyTorch DDP over NCCL/RCCL: on Neuron or TPU devices it would run on the CPU, if at all.
        checker.fail("pool", f"the reference training job runs PyTorch DDP on NVIDIA or AMD GPUs; pool "
                             f"'{checked['pool'].get('name')}' has {vendor.display_name} accelerators")
    if "gpu_quota" not in checked:
        # The job is sized to the quota: without one there is nothing to size it to.
        checker.fail("gpu_quota", "is required (the job is sized to fit the team's GPU quota)")
    if checked.get("checkpoint_claim"):
        for key in ("checkpoint_size", "checkpoint_storage_class"):
            if key in checked:
                checker.fail(key, "sizes the job's own checkpoint volume; with checkpoint_claim there is none")
    for key, claim in (("datasets_sub_path", "datasets_claim"), ("checkpoint_sub_path", "checkpoint_claim")):
        if key in checked and not checked.get(claim):
            checker.fail(key, f"takes effect only with {claim} (the directory of its volume)")
    checker.unique(checked.get("bucket_claims", []), "bucket_claims", "claim")
    level = checked.get("topology_level")
    if level is not None:
        # Kueue packs the ranks only on a topology-aware flavor, into a level its Topology defines.
        pool = GpuPool.from_spec(checked["pool"])
        levels = kueue_objects.topology_levels(pool)
        if not checked.get("local_queue"):
            checker.fail("topology_level", "takes effect only with local_queue (Kueue places the ranks)")
        if not kueue_objects.topology_aware(pool):
            checker.fail("topology_level", f"pool '{pool.name}' has no topology-aware Kueue flavor (only fixed-size "
                                           "RDMA pools do)")
        if level not in levels:
            checker.fail("topology_level", one_of(level, levels))
    return checked


def _only(resource: Optional[pulumi.Resource]) -> list[pulumi.Resource]:
    return [resource] if resource is not None else []


class TrainingWorkload(pulumi.ComponentResource, metaclass=KeywordArgs):
    """An indexed, gang-admitted PyTorch DDP Job on a GPU pool (with RDMA NICs on RDMA pools), a CronJob that
    retrains on a schedule at high priority, and a checkpoint volume that outlives ``pulumi destroy``.

    Attributes beyond the outputs: ``script``, ``service``, ``gpu_claim_template`` (DRA pools, else None) and
    ``compute_domains`` (the Job's and the retraining's, on multi-node NVLink DRA pools; else empty)."""

    job: k8s.batch.v1.Job
    cron_job: k8s.batch.v1.CronJob
    checkpoint_claim: Optional[k8s.core.v1.PersistentVolumeClaim]
    """The job's own checkpoint volume; None when it uses a given ``checkpoint_claim``."""

    def __init__(self, name: str, args: TrainingWorkloadArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:TrainingWorkload", name, {}, opts)
        pool = GpuPool.from_spec(args["pool"])
        sizing = training_objects.size(pool, args["gpu_quota"])
        assert sizing is not None  # gpu_quota >= 1 was checked
        plan = training_objects.TrainingPlan(
            namespace=args["namespace"], pool=pool, nodes=sizing[0], gpus_per_pod=sizing[1],
            image=args.get("image", versions.TRAINING_IMAGES[pool.vendor].reference),
            local_queue=args.get("local_queue"),
            topology_level=args.get("topology_level"),
            topology_policy=args.get("topology_policy", training_objects.PREFERRED),
            job_priority_class=args.get("job_priority_class", MEDIUM.name),
            retrain_priority_class=args.get("retrain_priority_class", HIGH.name),
            schedule=args.get("schedule", "0 3 * * 0"), checkpoint_size=args.get("checkpoint_size", "100Gi"),
            checkpoint_storage_class=args.get("checkpoint_storage_class"),
            datasets_claim=args.get("datasets_claim"), shared_checkpoint_claim=args.get("checkpoint_claim"),
            datasets_sub_path=args.get("datasets_sub_path"), checkpoint_sub_path=args.get("checkpoint_sub_path"),
            bucket_claims=tuple(args.get("bucket_claims", ())), service_account=args.get("service_account"),
            pod_labels=dict(args.get("pod_labels", {})), pod_annotations=dict(args.get("pod_annotations", {})),
        )
        script = training_objects.script_config_map(plan)
        self.script = k8s.core.v1.ConfigMap(
            f"{name}-script", metadata=script["metadata"], data=script["data"], opts=child_opts(self, opts))
        self.checkpoint_claim = None
        if plan.shared_checkpoint_claim is None:
            claim = training_objects.checkpoint_claim(plan)
            # Checkpoints are the job's results: deleting the stack leaves the claim (and its volume) in place.
            self.checkpoint_claim = k8s.core.v1.PersistentVolumeClaim(
                f"{name}-checkpoints", metadata=claim["metadata"], spec=claim["spec"],
                opts=child_opts(self, opts, retain_on_delete=True))
        svc = training_objects.service(plan)
        self.service = k8s.core.v1.Service(
            f"{name}-ranks", metadata=svc["metadata"], spec=svc["spec"], opts=child_opts(self, opts))
        needs: list[pulumi.Resource] = [self.script, *_only(self.checkpoint_claim), self.service]
        # DRA: the pods name these templates; a pod created before its template exists gets no claim until it does.
        self.gpu_claim_template: Optional[KubernetesObject] = None
        gpu_claims = training_objects.gpu_claim_template(plan)
        if gpu_claims is not None:
            self.gpu_claim_template = KubernetesObject(f"{name}-gpu-claims", gpu_claims, opts=child_opts(self, opts))
            needs.append(self.gpu_claim_template)
        domains: dict[str, KubernetesObject] = {}
        for workload, suffix in ((training_objects.NAME, "job"), (training_objects.RETRAIN_NAME, "retrain")):
            domain = training_objects.compute_domain(plan, workload)
            if domain is not None:
                domains[workload] = KubernetesObject(f"{name}-{suffix}-compute-domain", domain,
                                                     opts=child_opts(self, opts))
        self.compute_domains = list(domains.values())
        job = training_objects.job(plan)
        self.job = k8s.batch.v1.Job(
            f"{name}-job", metadata=job["metadata"], spec=job["spec"],
            opts=child_opts(self, opts, depends_on=[*needs, *_only(domains.get(training_objects.NAME))]))
        cron = training_objects.cron_job(plan)
        self.cron_job = k8s.batch.v1.CronJob(
            f"{name}-retrain", metadata=cron["metadata"], spec=cron["spec"],
            opts=child_opts(self, opts, depends_on=[*needs, *_only(domains.get(training_objects.RETRAIN_NAME))]))
        self.nodes, self.gpus_per_pod = plan.nodes, plan.gpus_per_pod
        self.register_outputs({"job_name": training_objects.NAME, "cron_job_name": training_objects.RETRAIN_NAME,
                               "nodes": plan.nodes, "gpus_per_pod": plan.gpus_per_pod})
