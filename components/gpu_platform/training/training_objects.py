"""The reference training workload as plain bodies: an indexed, gang-admitted Job, its retraining CronJob, the
headless Service its ranks meet on, the script ConfigMap and the checkpoint volume.

How it runs: the Job is created suspended with a ``kueue.x-k8s.io/queue-name`` label; Kueue admits all of its
pods at once (``completions == parallelism``, waitForPodsReady) when the team's queue has the GPUs. Pod ``i`` of
an Indexed Job is host ``<job>-<i>`` under the headless Service (``subdomain``), so every rank reaches rank 0
at ``<job>-0.<service>`` and ``torchrun`` uses the completion index as node rank. Checkpoints go to a shared
volume under the job's own name, so a Job that Kueue preempts and re-admits resumes where it stopped, and each
scheduled retraining run starts fresh.

On a DRA pool (`GpuPool.dra`) the nodes advertise no ``nvidia.com/gpu``: every rank claims its GPUs from the
ResourceClaimTemplate `GPU_CLAIM_TEMPLATE` instead (Kueue counts the claim as ``nvidia.com/gpu``, so the queue and
gang admission are unchanged). Where the pool's NVLink domain spans nodes (GB200/GB300 NVL72 racks) each workload,
the Job and the retraining runs, also has its own ComputeDomain and every rank claims that domain's IMEX channel.
Kueue's topology-aware scheduling ignores DRA devices, so the scheduler keeps one run's ranks inside one NVLink
clique itself: a required pod affinity among the run's pods on ``nvidia.com/gpu.clique``.
"""

from dataclasses import dataclass, field
from typing import Optional

from .. import catalog, labels
from ..accelerators import dra_objects
from ..health.health_placement import with_healthy_nodes
from ..kubernetes_base.common import metadata
from ..pools import GpuPool
from ..security import pod_security
from ..storage import storage_objects
from . import training_script

NAME = "reference-training"
RETRAIN_NAME = "reference-retraining"
SERVICE_NAME = NAME
SCRIPT_CONFIG_MAP = f"{NAME}-script"
CHECKPOINT_CLAIM = f"{NAME}-checkpoints"
GPU_CLAIM_TEMPLATE = f"{NAME}-gpus"
"""ResourceClaimTemplate of one rank's GPUs on DRA pools (each pod gets its own claim from it)."""
RENDEZVOUS_PORT = 29500
MAX_NODES = 2
"""Nodes (pods) of the reference job: two shows multi-node training without claiming a whole pool."""
CPU_PER_GPU = 2
MEMORY_GIB_PER_GPU = 8
TMP_SIZE = "8Gi"
"""``/tmp`` (also ``HOME``): torchrun's logs, PyTorch/Triton/CUDA kernel caches. Room for the compiled kernels of
a real model; the cap keeps a runaway cache from filling the node's disk."""
PREFERRED, REQUIRED = "preferred", "required"
TOPOLOGY_POLICIES = (PREFERRED, REQUIRED)
TOPOLOGY_ANNOTATIONS = {PREFERRED: labels.KUEUE_PREFERRED_TOPOLOGY_ANNOTATION,
                        REQUIRED: labels.KUEUE_REQUIRED_TOPOLOGY_ANNOTATION}
"""The pod-template annotation of each policy: Kueue admits a ``required`` pod set only within one domain of the
level, a ``preferred`` one there when it fits and across domains otherwise."""
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
"""The Job waits in Kueue's queue and its PVC may wait for a consumer: Pulumi must not block on either."""


@dataclass(frozen=True)
class TrainingPlan:
    """Everything the workload's bodies are derived from."""

    namespace: str
    pool: GpuPool
    nodes: int
    gpus_per_pod: int
    image: str
    local_queue: Optional[str]
    """Kueue LocalQueue; None runs the Job without Kueue (not suspended)."""
    topology_level: Optional[str]
    """Topology level to pack the ranks into when the pool's flavor is topology-aware."""
    job_priority_class: str
    retrain_priority_class: str
    schedule: str
    checkpoint_size: str
    checkpoint_storage_class: Optional[str]
    topology_policy: str = "preferred"
    """``preferred`` or ``required``: how Kueue holds the ranks to one domain of `topology_level`."""
    datasets_claim: Optional[str] = None
    """The team's datasets claim (the storage layer's), mounted read-only at ``/data``; None: none."""
    shared_checkpoint_claim: Optional[str] = None
    """The team's checkpoints claim on the shared file system, used instead of the job's own `CHECKPOINT_CLAIM`."""
    datasets_sub_path: Optional[str] = None
    """The directory of the datasets claim's volume the ranks mount (``subPath``): where the file system's driver
    mounts only its root (GKE Managed Lustre), the team's directory. None: the volume as it is."""
    checkpoint_sub_path: Optional[str] = None
    """The same for the shared checkpoints claim."""
    bucket_claims: tuple[str, ...] = ()
    """Bucket claims mounted at ``/buckets/<claim>`` (read-only or not as their volumes are)."""
    service_account: Optional[str] = None
    """The ranks' ServiceAccount (the bucket-access identity); None: the namespace's default."""
    pod_labels: dict = field(default_factory=dict)
    """Labels the buckets' driver needs on the pods (Azure Workload Identity's ``use``)."""
    pod_annotations: dict = field(default_factory=dict)
    """Annotations the buckets' driver needs on the pods (GKE's Cloud Storage FUSE sidecar)."""

    @property
    def checkpoint_claim_name(self) -> str:
        """The claim the checkpoints go to: the team's shared one, else the job's own."""
        return self.shared_checkpoint_claim or CHECKPOINT_CLAIM


def size(pool: GpuPool, gpu_quota: int) -> Optional[tuple[int, int]]:
    """(pods, GPUs per pod) within the team's GPU quota, or None when the team has no GPUs.

    A pod takes a whole node's GPUs; on shared GPUs (the device plugin refuses more than one per pod) and MIG
    instances (NCCL does not run across MIG instances) a pod takes one.
    """
    if gpu_quota < 1:
        return None
    per_node = pool.gpus_per_node if pool.sharing.mode == "exclusive" else 1
    gpus_per_pod = min(per_node, gpu_quota)
    nodes = min(MAX_NODES, pool.max_nodes, gpu_quota // gpus_per_pod)
    if spans_nvlink_domain(pool):
        # The ranks must share one NVLink clique (`clique_affinity`: Kueue's TAS does not place DRA pods, so the
        # scheduler does): a job wider than one NVLink domain would never schedule.
        nodes = min(nodes, pool.nvlink_domain_nodes)
    return max(1, nodes), gpus_per_pod


def spans_nvlink_domain(pool: GpuPool) -> bool:
    """The ranks talk over multi-node NVLink: a DRA pool whose NVLink domain spans nodes (ComputeDomain)."""
    return pool.dra and pool.multi_node_nvlink


def compute_domain_name(workload: str) -> str:
    """The ComputeDomain of one workload (`NAME` or `RETRAIN_NAME`)."""
    return f"{workload}-domain"


def imex_channel_template(workload: str) -> str:
    """The ResourceClaimTemplate of a workload's IMEX channel, created by the DRA driver for its ComputeDomain."""
    return f"{workload}-imex-channel"


def rdma_resources(pool: GpuPool) -> dict[str, int]:
    """The pool's RDMA extended resource, one per NIC (`GpuPool.rdma_resource` contract); none without one."""
    resource = pool.rdma_resource
    return {resource: pool.rdma_interfaces} if resource and pool.rdma_interfaces else {}


def _resources(plan: TrainingPlan) -> dict:
    # A DRA pool's nodes advertise no GPU extended resource: the GPUs come from the pod's claims.
    gpus = {} if plan.pool.dra else {plan.pool.resource: str(plan.gpus_per_pod)}
    amounts = {
        "cpu": str(CPU_PER_GPU * plan.gpus_per_pod),
        "memory": f"{MEMORY_GIB_PER_GPU * plan.gpus_per_pod}Gi",
        **gpus,
        **{k: str(v) for k, v in rdma_resources(plan.pool).items()},
    }
    resources: dict = {"requests": dict(amounts), "limits": dict(amounts)}
    if plan.pool.dra:
        resources["claims"] = dra_objects.container_claims(with_channel=spans_nvlink_domain(plan.pool))
    return resources


def _pod_labels(plan: TrainingPlan) -> dict:
    return {labels.APP_NAME_LABEL: NAME, labels.TEAM_LABEL: plan.namespace}


def node_selector(pool: GpuPool) -> dict:
    """The pool's selector, plus the CPU architecture on arm64 pools (the NVIDIA image is a multi-arch index).

    A pool with a ``fallback_pool`` is selected by its GPU model instead: Kueue skips a flavor whose node labels
    contradict the pod's nodeSelector, and injects the pool label of the flavor it assigns, so the job can land on
    either pool."""
    selector = {labels.ACCELERATOR_LABEL: pool.gpu_model} if pool.fallback_pool else dict(pool.selector)
    if pool.architecture == catalog.ARM64:
        selector[labels.ARCH_LABEL] = catalog.ARM64
    return selector


def clique_affinity(plan: TrainingPlan) -> dict:
    """Nodes of a multi-node NVLink domain only, and every rank of one run in the same clique.

    The term selects the run's own pods: ``matchLabelKeys`` adds the pod's Job name (each retraining run is a new
    Job), so two runs never pull each other into a clique. The first rank matches its own term, so it may start in
    any clique; the others follow it.
    """
    in_a_clique = {"key": labels.NVLINK_CLIQUE_LABEL, "operator": "Exists"}
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [in_a_clique]}]}},
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": _pod_labels(plan)},
            "matchLabelKeys": [labels.JOB_NAME_LABEL],
            "topologyKey": labels.NVLINK_CLIQUE_LABEL,
        }]},
    }


def gpu_claim_template(plan: TrainingPlan) -> Optional[dict]:
    """One rank's GPUs on a DRA pool (every GPU of its node, or one MIG instance); None on device-plugin pools."""
    if not plan.pool.dra:
        return None
    return dra_objects.gpu_claim_template(GPU_CLAIM_TEMPLATE, plan.namespace, plan.pool, plan.gpus_per_pod,
                                          {labels.APP_NAME_LABEL: NAME})


def compute_domain(plan: TrainingPlan, workload: str) -> Optional[dict]:
    """The ComputeDomain of one workload (the Job, or the retraining runs: one run at a time) on a multi-node
    NVLink pool; None elsewhere. Pulumi must not wait for it: it is NotReady until the workload's pods run."""
    if not spans_nvlink_domain(plan.pool):
        return None
    body = dra_objects.compute_domain(compute_domain_name(workload), plan.namespace, imex_channel_template(workload),
                                      {labels.APP_NAME_LABEL: NAME})
    body["metadata"]["annotations"] = dict(SKIP_AWAIT)
    return body


def _job_labels(plan: TrainingPlan, priority_class: str) -> dict:
    job_labels = {labels.APP_NAME_LABEL: NAME, labels.TEAM_LABEL: plan.namespace}
    if plan.local_queue:
        job_labels[labels.KUEUE_QUEUE_LABEL] = plan.local_queue
        job_labels[labels.KUEUE_PRIORITY_LABEL] = priority_class
    return job_labels


def pod_template(plan: TrainingPlan, priority_class: str, workload: str = NAME) -> dict:
    """The pod of every rank of ``workload``: the pool's selector and tolerations, GPUs (+ RDMA NICs), torchrun;
    on DRA pools the GPUs (and IMEX channel) as claims."""
    pool = plan.pool
    annotations = {**plan.pod_annotations, **dict(pool.rdma_pod_annotations)}
    if plan.topology_level:
        annotations[TOPOLOGY_ANNOTATIONS[plan.topology_policy]] = plan.topology_level
    # The pool's NCCL settings (fabric-specific) win over the defaults; each variable appears once.
    settings = {"NCCL_DEBUG": "WARN", **dict(pool.nccl_env)}
    env = [
        {"name": "JOB_NAME", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{labels.JOB_NAME_LABEL}']"}}},
        {"name": "CHECKPOINT_DIR", "value": "/checkpoints/$(JOB_NAME)"},
        # The root filesystem is read-only: the caches under HOME (PyTorch hub, Triton, CUDA's JIT cache,
        # matplotlib) and TorchInductor's under the temp directory all land in the /tmp emptyDir.
        {"name": "HOME", "value": pod_security.TMP_PATH},
        *({"name": k, "value": v} for k, v in sorted(settings.items())),
    ]
    args = [
        f"--nnodes={plan.nodes}",
        f"--nproc-per-node={plan.gpus_per_pod}",
        "--node-rank=$(JOB_COMPLETION_INDEX)",  # set by the Job controller on Indexed Jobs
        f"--master-addr=$(JOB_NAME)-0.{SERVICE_NAME}",
        f"--master-port={RENDEZVOUS_PORT}",
        f"/scripts/{training_script.FILE_NAME}",
    ]
    tmp_volume, tmp_mount = pod_security.writable_dir("tmp", pod_security.TMP_PATH, TMP_SIZE)
    # The driver-upgrade label: on a cluster without Kueue, the GPU Operator waits for the ranks to finish before it
    # upgrades their nodes' driver (`nvidia_values.driver_upgrade_wait_selector`); with Kueue, Kueue's own label does.
    template_metadata: dict = {"labels": {**plan.pod_labels, **_pod_labels(plan),
                                          labels.DRIVER_UPGRADE_LABEL: labels.DRIVER_UPGRADE_WAIT}}
    if annotations:
        template_metadata["annotations"] = annotations
    # Off nodes that failed their last active health check (`health_placement`), within one clique if need be.
    placement: dict = {"affinity": with_healthy_nodes(clique_affinity(plan) if spans_nvlink_domain(pool) else None)}
    if pool.dra:
        channel = imex_channel_template(workload) if spans_nvlink_domain(pool) else None
        placement["resourceClaims"] = dra_objects.pod_resource_claims(GPU_CLAIM_TEMPLATE, channel)
    return {
        "metadata": template_metadata,
        "spec": {
            "restartPolicy": "Never",
            "subdomain": SERVICE_NAME,
            "priorityClassName": priority_class,
            "nodeSelector": node_selector(pool),
            "tolerations": pool.tolerations,
            **placement,
            # The ranks never call the Kubernetes API (the rendezvous is torchrun's own TCP store); bucket drivers get
            # the ServiceAccount's token through their CSIDriver's token requests, not through this mount.
            "automountServiceAccountToken": False,
            **({"serviceAccountName": plan.service_account} if plan.service_account else {}),
            # Pod Security "restricted"-compliant, so the job runs under any team namespace level. RDMA pools add
            # no capability: see `pod_security` (IPC_LOCK would not reach a non-root process; memlock is the
            # node runtime's).
            "securityContext": pod_security.pod_security_context(),
            "containers": [{
                "name": "trainer",
                "image": plan.image,
                "command": ["torchrun"],
                "args": args,
                "env": env,
                "ports": [{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT}],
                "resources": _resources(plan),
                "securityContext": pod_security.container_security_context(),
                "volumeMounts": [
                    {"name": "scripts", "mountPath": "/scripts", "readOnly": True},
                    storage_objects.sub_path_mount({"name": "checkpoints", "mountPath": "/checkpoints"},
                                                   plan.checkpoint_sub_path),
                    {"name": "dshm", "mountPath": "/dev/shm"},  # NCCL's shared-memory transport
                    tmp_mount,
                    *_data_mounts(plan)[1],
                ],
            }],
            "volumes": [
                {"name": "scripts", "configMap": {"name": SCRIPT_CONFIG_MAP}},
                {"name": "checkpoints", "persistentVolumeClaim": {"claimName": plan.checkpoint_claim_name}},
                {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                tmp_volume,
                *_data_mounts(plan)[0],
            ],
        },
    }


DATA_PATH = "/data"
"""Where the ranks read the team's datasets (read-only)."""
BUCKETS_PATH = "/buckets"


def _data_mounts(plan: TrainingPlan) -> tuple[list[dict], list[dict]]:
    """(volumes, volumeMounts) of the team's datasets (read-only: a job never changes its inputs) and buckets."""
    volumes, mounts = [], []
    if plan.datasets_claim:
        volumes.append({"name": "datasets", "persistentVolumeClaim": {"claimName": plan.datasets_claim,
                                                                      "readOnly": True}})
        mounts.append(storage_objects.sub_path_mount({"name": "datasets", "mountPath": DATA_PATH, "readOnly": True},
                                                     plan.datasets_sub_path))
    for claim in plan.bucket_claims:
        volumes.append({"name": f"bucket-{claim}", "persistentVolumeClaim": {"claimName": claim}})
        mounts.append({"name": f"bucket-{claim}", "mountPath": f"{BUCKETS_PATH}/{claim}"})
    return volumes, mounts


def job_spec(plan: TrainingPlan, priority_class: str, workload: str = NAME) -> dict:
    """Indexed and gang-sized: every rank is one completion, all run at once; suspended for Kueue to admit."""
    return {
        "suspend": plan.local_queue is not None,
        "completionMode": "Indexed",
        "completions": plan.nodes,
        "parallelism": plan.nodes,
        "backoffLimit": 3,
        "template": pod_template(plan, priority_class, workload),
    }


def job(plan: TrainingPlan) -> dict:
    """The one-off reference training Job."""
    return {
        "metadata": metadata(NAME, plan.namespace, extra_labels=_job_labels(plan, plan.job_priority_class),
                             annotations=dict(SKIP_AWAIT)),
        "spec": job_spec(plan, plan.job_priority_class, NAME),
    }


def cron_job(plan: TrainingPlan) -> dict:
    """Scheduled retraining at high priority; one run at a time."""
    return {
        "metadata": metadata(RETRAIN_NAME, plan.namespace, extra_labels={labels.APP_NAME_LABEL: NAME,
                                                                          labels.TEAM_LABEL: plan.namespace}),
        "spec": {
            "schedule": plan.schedule,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 2,
            "jobTemplate": {
                "metadata": {"labels": _job_labels(plan, plan.retrain_priority_class)},
                "spec": job_spec(plan, plan.retrain_priority_class, RETRAIN_NAME),
            },
        },
    }


def service(plan: TrainingPlan) -> dict:
    """Headless Service giving every rank a DNS name; not-ready pods resolve too, for the rendezvous."""
    return {
        "metadata": metadata(SERVICE_NAME, plan.namespace, extra_labels={labels.APP_NAME_LABEL: NAME},
                             annotations=dict(SKIP_AWAIT)),
        "spec": {
            "clusterIP": "None",
            "selector": {labels.APP_NAME_LABEL: NAME},
            "publishNotReadyAddresses": True,
            "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT}],
        },
    }


def script_config_map(plan: TrainingPlan) -> dict:
    """The training program."""
    return {
        "metadata": metadata(SCRIPT_CONFIG_MAP, plan.namespace, extra_labels={labels.APP_NAME_LABEL: NAME}),
        "data": {training_script.FILE_NAME: training_script.SCRIPT},
    }


def checkpoint_claim(plan: TrainingPlan) -> dict:
    """Checkpoint volume shared by all ranks (ReadWriteMany: the pods run on different nodes)."""
    spec: dict = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": plan.checkpoint_size}}}
    if plan.checkpoint_storage_class:
        spec["storageClassName"] = plan.checkpoint_storage_class
    return {
        "metadata": metadata(CHECKPOINT_CLAIM, plan.namespace, extra_labels={labels.APP_NAME_LABEL: NAME},
                             annotations=dict(SKIP_AWAIT)),
        "spec": spec,
    }
