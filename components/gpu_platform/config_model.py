"""The typed stack configuration: what `config.parse_config` returns, as frozen dataclasses.

A leaf module (catalog, labels, pools and versions only): the Kubernetes layer reads these types without importing
the parser, which itself consults the Kubernetes layer's planning rules (no import cycle).
"""

from dataclasses import dataclass, field
from typing import Any, Optional

from . import catalog, labels
from .fields import Secret  # noqa: F401  (re-exported: a field of the model)
from .health.health_config import HealthConfig
from .labels import Taint
from .pools import GpuPool, Sharing
from .scheduling.multikueue_config import MultiKueueSettings
from .scheduling.queue_config import TeamQueue
from .serving.gateway_config import GatewayConfig
from .serving.llm_config import LlmConfig
from .storage.storage_config import StorageConfig
from .upgrades import kubernetes_versions
from .upgrades.maintenance import DEFAULT_WINDOW, MaintenanceWindow
from .upgrades.pool_upgrade import PoolUpgrade

DEFAULT_KUBERNETES_VERSION = kubernetes_versions.default_minor()
"""The newest minor every managed cloud offers in standard support, from the calendars in
`upgrades.kubernetes_versions`."""


# ---------------------------------------------------------------------------------------------------------
# Typed configuration


@dataclass(frozen=True)
class NodePoolConfig:
    """One entry of ``nodePools``."""

    name: str
    """DNS label, unique in the stack."""
    instance_type: str
    """Machine type / VM size / shape; must be in the catalog for the cloud."""
    min_nodes: int = 0
    """Minimum nodes (0 lets the autoscaler scale the pool to zero)."""
    max_nodes: int = 1
    """Maximum nodes (>= 1, >= minNodes). Default: the larger of 1 and minNodes."""
    desired_nodes: Optional[int] = None
    """Initial size; ignored after creation. Default: minNodes."""
    rdma: bool = False
    """Attach the shape's RDMA fabric (EFA, InfiniBand, RoCEv2, GPUDirect); only on RDMA-capable shapes."""
    spot: bool = False
    """Spot / preemptible capacity."""
    sharing: Sharing = field(default_factory=Sharing)
    """GPU sharing: ``{mode: exclusive|time-slicing|mps|mig, replicas, profile}``."""
    role: str = "general"
    """``inference``, ``training`` or ``general``: where the reference workloads are placed."""
    labels: tuple[tuple[str, str], ...] = ()
    """Extra node labels."""
    taints: tuple[Taint, ...] = ()
    """Extra taints (``key=value:Effect`` strings or ``{key, value, effect}``), on top of the GPU taint."""
    zones: tuple[str, ...] = ()
    """Zones / availability domains to place nodes in (default: the cloud layer's choice)."""
    gpu_model: str = ""
    """GPU model key; derived from the shape except for GCP N1 and existing clusters."""
    gpus_per_node: int = 0
    """GPUs per node; derived from the shape except for GCP N1 and existing clusters."""
    accelerator: str = ""
    """GCP N1 only: the accelerator type attached (``nvidia-tesla-t4``, ``nvidia-tesla-v100``); derived from the
    machine type on every other GCP shape."""
    provisioning: str = "on-demand"
    """``on-demand``, ``spot`` (``spot: true`` is the same), ``reservation`` (with ``reservation``), ``flex-start`` or
    ``queued`` (GKE's Dynamic Workload Scheduler). Default ``on-demand`` (``spot`` with ``spot: true``)."""
    reservation: str = ""
    """With ``provisioning: reservation``: the reservation's id or name (AWS ``cr-...``, GKE reservation name or
    ``name/reservationBlocks/block``, Azure capacity reservation group resource id, OCI capacity reservation OCID)."""
    fallback_pool: str = ""
    """``fallbackPool``: another pool of the same accelerator a job may run on when this pool's quota is used; Kueue
    orders flavors reserved and on-demand first, spot last."""
    gpu_allocation: str = "device-plugin"
    """``device-plugin`` or ``dra`` (NVIDIA DRA driver ResourceClaims). Default ``device-plugin``, except on shapes
    whose NVLink domain spans nodes (NVL72), which default to and require ``dra``."""
    upgrade: PoolUpgrade = field(default_factory=PoolUpgrade)
    """How the pool is upgraded (surge, unavailability, drain, soak) and whether the cloud may upgrade it on its own;
    defaults by ``role`` (keys below, docs/upgrades.md)."""
    cloud_options: Any = None
    """The cloud's own pool settings, parsed by ``clouds/<cloud>/options.py``."""


@dataclass(frozen=True)
class TeamConfig:
    """One entry of ``teams``: a namespace with a GPU quota and a Kueue queue."""

    name: str
    """DNS label, unique; also the namespace name."""
    gpu_quota: int
    """GPUs (``nvidia.com/gpu``) the team may request, >= 0."""
    cpu_quota: int
    """CPU cores the team may request. Default: 8 per GPU or other accelerator device (``gpuQuota`` plus the
    ``quotas`` of each vendor's device resource), at least 4."""
    memory_quota_gib: int
    """Memory (GiB) the team may request. Default: 64 per GPU or other accelerator device, at least 16."""
    group: str
    """Identity-provider group bound to the team's edit role. Default: the team name."""
    borrowing_limit: Optional[int] = None
    """GPUs the team may borrow from the cohort (None: unlimited)."""
    lending_limit: Optional[int] = None
    """GPUs of the team's quota the cohort may borrow (None: all)."""
    pod_security: str = "baseline"
    """Pod Security level the namespace enforces: ``baseline`` (default: no privileged pods, host paths or host
    namespaces), ``restricted``, or ``privileged`` for teams whose RDMA pods need IPC_LOCK or host paths (then any
    member may run privileged pods on the shared GPU nodes). Audit and warn stay ``restricted``."""
    quotas: tuple[tuple[str, int], ...] = ()
    """Counts of other accelerator resources the team may request, ``{<extended resource name>: <count>}``
    (``aws.amazon.com/neuron: 16``, ``amd.com/gpu: 8``), each >= 0 and advertised by a node pool. They cap the
    namespace like ``gpuQuota`` and are split over the team's Kueue flavors the same way. ``nvidia.com/gpu`` here
    is ``gpuQuota`` under another name (give one of them)."""
    queue: TeamQueue = TeamQueue()
    """The team's own Kueue settings: quotas per pool or GPU model, limits per flavor, flavor order, preemption, fair
    sharing (`scheduling.queue_config`)."""
    storage_quota: Optional[str] = None
    """``storageQuota``: storage the team's claims may request in total (``requests.storage`` of its namespace's
    quota), whole ``Gi`` or ``Ti`` such as ``2Ti``. With ``storage.sharedFileSystem`` its datasets and checkpoints
    claims split it evenly (less 1Gi per bucket claim). Default: no storage quota."""

    def quota_of(self, resource: str) -> int:
        """The team's quota of one accelerator resource: ``gpu_quota`` for ``nvidia.com/gpu``, else its `quotas`
        entry (0 without one)."""
        if resource == catalog.NVIDIA_GPU_RESOURCE:
            return self.gpu_quota
        return dict(self.quotas).get(resource, 0)

    @property
    def accelerator_quota(self) -> int:
        """Accelerator devices the team may request over every vendor: ``gpu_quota`` plus the quotas of each vendor's
        primary resource (what the default CPU, memory and pod quotas scale with)."""
        return accelerator_devices(self.gpu_quota, dict(self.quotas))


def accelerator_devices(gpu_quota: int, quotas: dict[str, int]) -> int:
    """``gpuQuota`` plus the counts in ``quotas`` of a vendor's primary resource (devices, not NeuronCores)."""
    primary = {v.resource for v in catalog.VENDORS.values()}
    return gpu_quota + sum(count for resource, count in quotas.items()
                           if resource in primary and resource != catalog.NVIDIA_GPU_RESOURCE)


@dataclass(frozen=True)
class MonitoringConfig:
    """``monitoring``: kube-prometheus-stack, Grafana, DCGM dashboards and alerts."""

    enabled: bool = True
    """Install the monitoring stack (the optimizer and queue-depth autoscaling read its Prometheus)."""
    retention: str = "15d"
    """Prometheus retention."""
    storage_size: str = "50Gi"
    """Prometheus PVC size."""
    grafana_admin_password: Optional[Secret] = None
    """Grafana admin password (a secret); generated when absent."""


@dataclass(frozen=True)
class SchedulingConfig:
    """``scheduling``: PriorityClasses and Kueue."""

    kueue: bool = True
    """Install Kueue and build flavors, cohort and queues."""
    per_gpu_priority_classes: bool = False
    """Also create ``high-priority-<gpu>`` / ``medium-priority-<gpu>`` classes per GPU model."""
    default_priority_class: Optional[str] = None
    """Tier made the cluster's global default (None: no global default)."""
    overcommit: bool = False
    """``scheduling.overcommit``: teams' quotas may add up to more than the pools hold (else refused)."""


@dataclass(frozen=True)
class InferenceConfig:
    """``inference``: the reference sentiment-analysis service."""

    enabled: bool = True
    """Deploy the reference inference service."""
    pool: Optional[str] = None
    """Pool to run on (default: the first ``role: inference`` pool, else the first non-RDMA pool)."""
    replicas: int = 1
    """Minimum replicas."""
    max_replicas: int = 4
    """Maximum replicas for the autoscaler. Default: the larger of 4 and replicas."""
    image: Optional[str] = None
    """Container image of the app; give a digest (``repository:tag@sha256:...``) so the tag cannot move. Default:
    the app's image for the pool's accelerator vendor (`versions.INFERENCE_IMAGES`: CUDA, ROCm or Neuron)."""
    namespace: str = "inference"
    """Namespace of the inference service."""
    model_id: str = ""
    """``modelId``: Hugging Face model id downloaded at start (default: the model baked into the image)."""
    autoscaler: str = "keda"
    """``keda`` (queue depth from Prometheus, plus CPU), ``hpa`` (CPU only) or ``none``."""
    target_queue_depth: Optional[int] = None
    """Queued texts per replica above which KEDA adds replicas (default: one full batch)."""
    ingress_host: Optional[str] = None
    """``ingressHost``: the host name ``/analyze`` is published on through the stack's Gateway: its HTTPRoute's and,
    with ``gateway.tls``, the HTTPS listener's (default: any host, HTTP only)."""
    model_cache_size: Optional[str] = None
    """``modelCacheSize``: a PersistentVolumeClaim of this size as the model cache (default: none)."""
    model_cache_storage_class: Optional[str] = None
    """``modelCacheStorageClass``: its StorageClass, ReadWriteMany when replicas > 1 (default: the cluster's)."""


OPTIMIZER_ACTIONS = ("report", "annotate", "scale-down", "recommend")
"""What ``optimizer.action`` may be (`OptimizerConfig.action`)."""


@dataclass(frozen=True)
class OptimizerConfig:
    """``optimizer``: the GPU utilisation optimizer CronJob."""

    enabled: bool = True
    """Run the optimizer (only with ``monitoring``: it reads the platform's Prometheus)."""
    action: str = "report"
    """``report``, ``annotate``, ``scale-down`` or ``recommend``."""
    schedule: str = "*/30 * * * *"
    """Cron schedule of the optimizer CronJob."""
    utilization_threshold: float = 10.0
    """GPU utilisation (%) under which an allocation counts as idle."""
    dry_run: bool = True
    """Report what the action would change without changing it."""


VPA_MODES = ("Off", "Initial")
VPA_WORKLOADS = ("training", "inference")
VPA_RESOURCES = ("cpu", "memory")
"""What ``autoscaling.vpaMode``, ``vpaWorkloads`` and ``vpaResources`` may hold."""


@dataclass(frozen=True)
class AutoscalingConfig:
    """``autoscaling``: node autoscaler and workload autoscalers."""

    autoscaler: str = ""
    """AWS: ``karpenter`` or ``cluster-autoscaler`` (default). Other clouds use their built-in autoscaler."""
    vpa: bool = True
    """Install the Vertical Pod Autoscaler (recommendation mode for training workloads)."""
    vpa_mode: str = "Off"
    """``vpaMode``: ``Off`` (recommendations only) or ``Initial`` (applied when a pod is created, never evicts)."""
    vpa_workloads: tuple[str, ...] = ("training",)
    """``vpaWorkloads``: the platform's workloads that get a VPA: ``training`` (Job + retraining CronJob),
    ``inference`` (the inference Deployment)."""
    vpa_resources: tuple[str, ...] = ("cpu", "memory")
    """``vpaResources``: what the VPAs control, a subset of ``cpu``, ``memory`` (never GPUs)."""
    scale_down_unneeded_minutes: int = 30
    """``scaleDownUnneededMinutes``: how long a GPU node stays idle before the node autoscaler removes it
    (cluster-autoscaler/AKS/OKE scale-down-unneeded-time, Karpenter consolidateAfter)."""
    max_node_provision_minutes: int = 25
    """``maxNodeProvisionMinutes``: how long a new GPU node may take to become ready (boot, driver, device plugin)
    before the cluster autoscaler gives up on it (cluster-autoscaler, AKS and OKE max-node-provision-time)."""
    metrics_server: bool = False
    """``metricsServer``: install metrics-server with the VPA (its recommender reads ``metrics.k8s.io``).
    Default: true on AWS and OCI, whose clusters have none; AKS and GKE run their own."""


@dataclass(frozen=True)
class TrainingConfig:
    """``training``: the reference Kueue-managed training job in the first team's namespace."""

    enabled: bool = True
    """Deploy the reference training job (needs a training pool and a first team with a GPU quota)."""
    schedule: str = "0 3 * * 0"
    """Cron schedule of the retraining CronJob (default: Sundays 03:00)."""
    checkpoint_storage_class: Optional[str] = None
    """StorageClass of the checkpoint volume; it must offer ReadWriteMany (None: the cluster's default class)."""
    checkpoint_size: str = "100Gi"
    """Size of the checkpoint volume."""
    topology_policy: str = "preferred"
    """``preferred`` or ``required``: whether Kueue may spread the job's ranks beyond one domain of
    `topology_level` when they do not fit in one (topology-aware training pools only: fixed-size RDMA pools)."""
    topology_level: Optional[str] = None
    """Node label of the topology level the ranks are packed into, one of the levels the training pool's nodes
    carry (docs/capacity.md). None: the pool's coarsest network-fabric level, else its coarsest level."""


@dataclass(frozen=True)
class PlatformConfig:
    """A whole environment: the parsed ``gpu-platform`` configuration of one stack."""

    stack: str
    """Stack name (from the engine, not a key)."""
    cloud: str
    """``aws``, ``azure``, ``gcp``, ``oci``, or ``existing`` (a running cluster reached by kubeconfig)."""
    region: str
    """Region of the cluster (``us-west-2``, ``westeurope``, ``us-central1``, ``us-ashburn-1``); unused on
    ``existing``."""
    node_pools: tuple[NodePoolConfig, ...]
    """The GPU node pools, at least one (keys below)."""
    compartment_id: str = ""
    """OCI only: OCID of the compartment the cluster and its network go into."""
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    """Kubernetes minor version (``1.25`` to ``1.39``); each cloud picks its newest patch of it."""
    gpu_software: str = "operator"
    """``operator`` (NVIDIA GPU Operator), ``device-plugin`` (NVIDIA's device plugin, GFD and DCGM exporter
    charts) or ``cloud-managed`` (the cloud's own driver and plugin). Left out: the cloud's recommendation shown
    here, or ``operator`` when a pool's sharing mode needs it."""
    teams: tuple[TeamConfig, ...] = ()
    """Teams: each gets a namespace with quotas, RBAC and a Kueue ClusterQueue (keys below)."""
    monitoring: MonitoringConfig = field(default_factory=MonitoringConfig)
    """Prometheus, Grafana, the DCGM exporter's dashboards and GPU alerts."""
    scheduling: SchedulingConfig = field(default_factory=SchedulingConfig)
    """PriorityClasses and Kueue."""
    inference: InferenceConfig = field(default_factory=InferenceConfig)
    """The reference inference service."""
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    """The GPU utilisation optimizer."""
    autoscaling: AutoscalingConfig = field(default_factory=AutoscalingConfig)
    """Node and workload autoscalers."""
    training: TrainingConfig = field(default_factory=TrainingConfig)
    """The reference training job."""
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    """The Gateway API entry point of the inference services."""
    llm: Optional[LlmConfig] = None
    """The LLM service (vLLM behind an InferencePool); None: no LLM."""
    health: HealthConfig = field(default_factory=HealthConfig)
    """GPU and RDMA node health: passive conditions, active checks, remediation (dry-run by default)."""
    storage: StorageConfig = field(default_factory=StorageConfig)
    """The data plane: shared file system, bucket mounts, image pulls (off by default)."""
    maintenance: MaintenanceWindow = DEFAULT_WINDOW
    """``{window: {days, start, hours}}``: the weekly UTC window in which the cloud may upgrade nodes on its own
    (keys below). Default: Saturdays 00:00-12:00 UTC."""
    cluster_options: Any = None
    """The cloud's own cluster settings, parsed by ``clouds/<cloud>/options.py``."""
    multikueue: Optional[MultiKueueSettings] = None
    """``multikueue``: this stack as a MultiKueue manager (its team queues dispatch to worker stacks' clusters) or
    worker (keys in docs/multikueue.md). Default: neither."""

    def gpu_pools(self) -> list[GpuPool]:
        """The `GpuPool` each node pool publishes (cloud layers may add cloud facts on top)."""
        return [gpu_pool(self, p) for p in self.node_pools]

    @property
    def runs_optimizer(self) -> bool:
        """Whether the platform deploys the optimizer: enabled, with the platform's Prometheus to read from, and
        pools of a vendor whose exporter gives a per-pod idleness signal to look after (`optimizer.signals`)."""
        from .optimizer.signals import VENDORS_WITH_SIGNAL

        return (self.optimizer.enabled and self.monitoring.enabled
                and any(catalog.vendor_of(p.gpu_model).key in VENDORS_WITH_SIGNAL for p in self.node_pools))


def gpu_pool(config: PlatformConfig, pool: NodePoolConfig) -> GpuPool:
    """The `GpuPool` a configured node pool publishes."""
    shape = catalog.SHAPES.get((config.cloud, pool.instance_type))
    gpu = catalog.GPU_MODELS[pool.gpu_model]
    fabric = None
    if pool.rdma:
        fabric = shape.rdma_fabric if shape else getattr(pool.cloud_options, "rdma_fabric", catalog.INFINIBAND)
    extra = (labels.AKS_SPOT_TAINT,) if pool.spot and config.cloud == "azure" else ()
    return GpuPool(
        name=pool.name,
        cloud=config.cloud,
        instance_type=pool.instance_type,
        gpu_model=pool.gpu_model,
        gpus_per_node=pool.gpus_per_node,
        gpu_memory_gib=gpu.memory_gib,
        min_nodes=pool.min_nodes,
        max_nodes=pool.max_nodes,
        vcpus_per_node=shape.vcpus if shape else 0,
        memory_gib_per_node=shape.memory_gib if shape else 0,
        sharing=pool.sharing,
        rdma_fabric=fabric,
        rdma_interfaces=(shape.rdma_interfaces if shape else getattr(pool.cloud_options, "rdma_interfaces", 1))
        if fabric else 0,
        spot=pool.spot,
        user_labels=pool.labels,
        user_taints=pool.taints,
        extra_taints=extra,
        role=pool.role,
        gpu_allocation=pool.gpu_allocation,
        provisioning=pool.provisioning,
        reservation=pool.reservation,
        fallback_pool=pool.fallback_pool,
        architecture=pool_architecture(shape, pool),
        nvlink_domain_gpus=shape.nvlink_domain_gpus if shape else getattr(pool.cloud_options, "nvlink_domain_gpus", 0),
    )


def pool_architecture(shape: Optional[catalog.MachineShape], pool: NodePoolConfig) -> str:
    """The nodes' CPU architecture: the catalog's for a cloud shape; on an existing cluster the pool's own
    ``architecture`` key, else the one the GPU model always comes with (Grace: arm64), else amd64."""
    if shape is not None:
        return shape.architecture
    given = getattr(pool.cloud_options, "architecture", "")
    model = catalog.GPU_MODELS.get(pool.gpu_model)
    return given or (model.cpu_architecture if model is not None else "") or catalog.AMD64
