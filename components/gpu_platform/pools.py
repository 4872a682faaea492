"""`GpuPool`: the cloud-neutral description a node pool publishes to the Kubernetes layer.

Every later decision (Kueue flavors, PriorityClasses per GPU model, device-plugin sharing configs, tolerations,
nodeSelectors, dashboards) is derived from a `GpuPool`, never re-typed. It holds plain values only, so it can be
built from configuration before any resource exists and tested without the engine.
"""

import marshal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional, TypedDict

from . import catalog, labels
from .labels import Taint

SHARING_MODES = catalog.VENDORS[catalog.NVIDIA].sharing_modes
"""Every sharing mode (NVIDIA's; other vendors support a subset, `catalog.VENDORS`). ``hami``: HAMi's device plugin
and scheduler share each GPU by memory (pods ask ``nvidia.com/gpumem``)."""

DEVICE_PLUGIN = "device-plugin"
DRA = "dra"
GPU_ALLOCATION_MODES = (DEVICE_PLUGIN, DRA)
"""``nodePools[].gpuAllocation``: how pods get a pool's GPUs (`GpuPool.gpu_allocation`)."""

# Extended resources a pod requests to get RDMA NICs, per fabric (how many: `GpuPool.rdma_limits`).
# GKE's GPUDirect fabrics (gpudirect-tcpx/-tcpxo/-rdma) have none on purpose: GKE advertises one resource per
# network (`networking.gke.io.networks/<network>`, 1 per node), and a pod gets every NIC from its
# `rdma_pod_annotations` (`networking.gke.io/interfaces`); GKE's own A3 NCCL examples (cluster-toolkit
# examples/gke-a3-*) request only `nvidia.com/gpu`.
RDMA_RESOURCES = {
    "efa": "vpc.amazonaws.com/efa",
    "infiniband": "rdma/ib",
    "roce": "rdma/roce",
}


@dataclass(frozen=True)
class Sharing:
    """How the GPUs of a pool are shared between pods."""

    mode: str = "exclusive"
    """``exclusive`` (one pod per GPU), ``time-slicing``, ``mps``, ``mig`` or ``hami``."""
    replicas: int = 1
    """Pods per physical GPU for time-slicing, MPS and HAMi (required there, >= 2); 1 otherwise."""
    mig_profile: Optional[str] = None
    """MIG profile (``1g.10gb``) applied to every GPU of the pool when ``mode == 'mig'`` (required there)."""

    @property
    def shared(self) -> bool:
        """Each GPU is advertised ``replicas`` times as ``nvidia.com/gpu`` (time-slicing, MPS, HAMi)."""
        return self.mode in ("time-slicing", "mps", "hami")


@dataclass(frozen=True)
class GpuPool:
    """A GPU node pool as the Kubernetes layer sees it."""

    name: str
    cloud: str
    instance_type: str
    gpu_model: str
    """Key of :data:`gpu_platform.catalog.GPU_MODELS` (``h100``, ``l4``); the model's vendor decides the pool's
    `resources` and `taint`."""
    gpus_per_node: int
    """Accelerator devices per node (GPUs, Neuron devices, TPU chips), counted in the primary `resource`."""
    gpu_memory_gib: int
    min_nodes: int
    max_nodes: int
    vcpus_per_node: int = 0
    memory_gib_per_node: int = 0
    sharing: Sharing = field(default_factory=Sharing)
    rdma_fabric: Optional[str] = None
    rdma_interfaces: int = 0
    spot: bool = False
    user_labels: tuple[tuple[str, str], ...] = ()
    user_taints: tuple[Taint, ...] = ()
    extra_taints: tuple[Taint, ...] = ()
    """Taints the cloud itself adds (AKS spot) that workloads must tolerate too."""
    rdma_pod_annotations: tuple[tuple[str, str], ...] = ()
    """Annotations an RDMA training pod needs (GKE multi-network interfaces, SR-IOV networks)."""
    nccl_env: tuple[tuple[str, str], ...] = ()
    """NCCL environment a training pod on this pool should set (RoCEv2 GID index, traffic class...)."""
    role: str = "general"
    """``inference``, ``training`` or ``general``: where the reference workloads go."""
    gpu_allocation: str = DEVICE_PLUGIN
    """How pods get the pool's GPUs: ``device-plugin`` (the ``nvidia.com/gpu`` extended resource) or ``dra``
    (ResourceClaims served by NVIDIA's DRA driver; the device plugin never runs on the pool's nodes)."""
    architecture: str = catalog.AMD64
    """The nodes' CPU architecture (``kubernetes.io/arch``): ``amd64`` or ``arm64`` (Grace-Blackwell)."""
    nvlink_domain_gpus: int = 0
    """GPUs of one multi-node NVLink domain (72 on an NVL72 rack); 0 when NVLink stays inside the node."""
    provisioning: str = "on-demand"
    """How the nodes are bought: ``on-demand``, ``spot``, ``reservation``, ``flex-start`` or ``queued`` (GKE's Dynamic
    Workload Scheduler); see `gpu_platform.provisioning`. ``spot`` is the same as `spot`."""
    reservation: str = ""
    """The reservation's id or name with ``provisioning: reservation``; empty otherwise."""
    fallback_pool: str = ""
    """The pool a job may run on when this pool's quota is used (same accelerator resource); empty: none."""

    def __post_init__(self) -> None:
        # `spot` and `provisioning: spot` are one fact said two ways (a pool built with spot=True, as before
        # provisioning existed, is a spot pool): keep them in step.
        if self.spot and self.provisioning == "on-demand":
            object.__setattr__(self, "provisioning", "spot")
        elif self.provisioning == "spot" and not self.spot:
            object.__setattr__(self, "spot", True)

    @property
    def dra(self) -> bool:
        """The pool's GPUs are allocated through DRA ResourceClaims, not the device plugin."""
        return self.gpu_allocation == DRA

    @property
    def multi_node_nvlink(self) -> bool:
        """The pool's NVLink domain spans several nodes: jobs across them need a ComputeDomain."""
        return self.nvlink_domain_gpus > self.gpus_per_node > 0

    @property
    def nvlink_domain_nodes(self) -> int:
        """Nodes of one NVLink domain (1 when NVLink stays inside the node)."""
        return max(1, self.nvlink_domain_gpus // self.gpus_per_node) if self.multi_node_nvlink else 1

    @property
    def labels(self) -> dict[str, str]:
        """Every node label of the pool: the platform's scheme plus the user's labels."""
        mig_config = f"all-{self.sharing.mig_profile}" if self.sharing.mode == "mig" else None
        base = labels.pool_node_labels(self.name, self.gpu_model, self.sharing.mode, self.rdma_fabric,
                                       self.gpu_allocation)
        if mig_config:
            base[labels.MIG_CONFIG_LABEL] = mig_config
        return {**dict(self.user_labels), **base}

    @property
    def selector(self) -> dict[str, str]:
        """The nodeSelector that picks exactly this pool's nodes."""
        return {labels.POOL_LABEL: self.name}

    @property
    def vendor(self) -> str:
        """Key of the accelerator's vendor in `catalog.VENDORS` (``nvidia``...), from the GPU model."""
        return catalog.vendor_of(self.gpu_model).key

    @property
    def resources(self) -> tuple[str, ...]:
        """The extended resources the pool's nodes advertise for their accelerators, the primary one first."""
        return catalog.vendor_of(self.gpu_model).resources

    @property
    def resource(self) -> str:
        """The primary accelerator resource (``nvidia.com/gpu``, ``aws.amazon.com/neuron``...): what the pool's
        devices are counted in, and what quotas, Kueue flavors and the reference workloads use."""
        return self.resources[0]

    @property
    def taint(self) -> Taint:
        """The accelerator taint of the pool's nodes: the vendor's (``nvidia.com/gpu=present:NoSchedule``...)."""
        return catalog.vendor_of(self.gpu_model).taint

    @property
    def resources_per_node(self) -> dict[str, int]:
        """What one node advertises of each of `resources`: the primary resource as `schedulable_gpus_per_node`, a
        secondary one (NeuronCores) as the catalog's units per device, 0 where the catalog does not say yet."""
        model = catalog.GPU_MODELS.get(self.gpu_model)
        per_device = dict(model.secondary_per_device) if model is not None else {}
        return {r: self.schedulable_gpus_per_node if i == 0 else self.gpus_per_node * per_device.get(r, 0)
                for i, r in enumerate(self.resources)}

    @property
    def taints(self) -> tuple[Taint, ...]:
        """Every taint on the pool's nodes: the accelerator taint, then the user's, then the cloud's own."""
        return (self.taint, *self.user_taints, *self.extra_taints)

    @property
    def tolerations(self) -> list[dict]:
        """Tolerations (wire form) a pod needs to run on this pool."""
        return [t.toleration() for t in self.taints]

    @property
    def rdma_resource(self) -> Optional[str]:
        """The extended resource a pod requests for RDMA NICs on this pool (None without RDMA)."""
        return RDMA_RESOURCES.get(self.rdma_fabric or "")

    @property
    def rdma_limits(self) -> dict[str, int]:
        """Container limits a training pod adds for RDMA NICs: every EFA interface of the node
        (``vpc.amazonaws.com/efa``), or one unit of the RDMA shared device plugin's resource (``rdma/ib``,
        ``rdma/roce``), which gives the pod all of the node's HCAs. Empty without an extended resource."""
        resource = self.rdma_resource
        if not resource:
            return {}
        return {resource: self.rdma_interfaces if self.rdma_fabric == "efa" else 1}

    @property
    def schedulable_gpus_per_node(self) -> int:
        """The primary resource (`resource`) allocatable per node once sharing is applied (time-slicing/MPS
        multiply it)."""
        return self.gpus_per_node * (self.sharing.replicas if self.sharing.shared else 1)

    @property
    def max_gpus(self) -> int:
        """Physical GPUs at the pool's maximum size."""
        return self.gpus_per_node * self.max_nodes

    def spec(self) -> "GpuPoolSpec":
        """This pool as a plain dict (for component args that other Pulumi languages can express)."""
        return GpuPoolSpec(
            name=self.name, cloud=self.cloud, instance_type=self.instance_type, gpu_model=self.gpu_model,
            gpus_per_node=self.gpus_per_node, gpu_memory_gib=self.gpu_memory_gib, min_nodes=self.min_nodes,
            max_nodes=self.max_nodes, vcpus_per_node=self.vcpus_per_node,
            memory_gib_per_node=self.memory_gib_per_node, sharing_mode=self.sharing.mode,
            sharing_replicas=self.sharing.replicas, mig_profile=self.sharing.mig_profile or "",
            rdma_fabric=self.rdma_fabric or "", rdma_interfaces=self.rdma_interfaces, spot=self.spot,
            labels=dict(self.user_labels), taints=[t.as_string() for t in (*self.user_taints, *self.extra_taints)],
            rdma_pod_annotations=dict(self.rdma_pod_annotations), nccl_env=dict(self.nccl_env), role=self.role,
            gpu_allocation=self.gpu_allocation, architecture=self.architecture,
            nvlink_domain_gpus=self.nvlink_domain_gpus, provisioning=self.provisioning,
            reservation=self.reservation, fallback_pool=self.fallback_pool,
        )

    @staticmethod
    def from_spec(spec: "GpuPoolSpec") -> "GpuPool":
        """Inverse of :meth:`spec`; ints are coerced because cross-language callers send floats."""
        def taint(s: str) -> Taint:
            kv, effect = s.rsplit(":", 1)
            key, _, value = kv.partition("=")
            return Taint(key, value, effect)

        user_taints, extra = [], []
        for t in map(taint, spec.get("taints", [])):
            (extra if t == labels.AKS_SPOT_TAINT else user_taints).append(t)
        return GpuPool(
            name=spec["name"], cloud=spec["cloud"], instance_type=spec["instance_type"],
            gpu_model=spec["gpu_model"], gpus_per_node=int(spec["gpus_per_node"]),
            gpu_memory_gib=int(spec.get("gpu_memory_gib", 0)), min_nodes=int(spec.get("min_nodes", 0)),
            max_nodes=int(spec.get("max_nodes", 1)), vcpus_per_node=int(spec.get("vcpus_per_node", 0)),
            memory_gib_per_node=int(spec.get("memory_gib_per_node", 0)),
            sharing=Sharing(spec.get("sharing_mode", "exclusive"), int(spec.get("sharing_replicas", 1)),
                            spec.get("mig_profile") or None),
            rdma_fabric=spec.get("rdma_fabric") or None, rdma_interfaces=int(spec.get("rdma_interfaces", 0)),
            spot=bool(spec.get("spot", False)), user_labels=tuple(sorted(spec.get("labels", {}).items())),
            user_taints=tuple(user_taints), extra_taints=tuple(extra),
            rdma_pod_annotations=tuple(sorted(spec.get("rdma_pod_annotations", {}).items())),
            nccl_env=tuple(sorted(spec.get("nccl_env", {}).items())), role=spec.get("role", "general"),
            gpu_allocation=spec.get("gpu_allocation") or DEVICE_PLUGIN,
            architecture=spec.get("architecture") or catalog.AMD64,
            nvlink_domain_gpus=int(spec.get("nvlink_domain_gpus", 0)),
            provisioning=spec.get("provisioning") or ("spot" if spec.get("spot") else "on-demand"),
            reservation=spec.get("reservation") or "", fallback_pool=spec.get("fallback_pool") or "",
        )


# Lists of specs already turned into pools, by their marshal bytes: every TeamNamespace of a plan gets the same
# pools, and building them again for each made plans grow with teams x pools. A `GpuPool` is immutable, so the
# components that get equal lists can share the pools.
_POOLS_OF: dict[bytes, tuple["GpuPool", ...]] = {}
_POOLS_OF_LIMIT = 1024
"""Entries kept at most (a bound for long-lived processes)."""


def pools_from_specs(specs: Sequence["GpuPoolSpec"]) -> list["GpuPool"]:
    """``[GpuPool.from_spec(s) for s in specs]``, built once per distinct list.

    The memo's key is the list's `marshal` bytes, which keep apart what ``==`` mixes (``2`` and ``2.0``, ``True``
    and ``1``) and exist for built-in values only; a list holding anything else is built without it."""
    try:
        key = marshal.dumps(list(specs), 2)
    except ValueError:
        return [GpuPool.from_spec(s) for s in specs]
    pools = _POOLS_OF.get(key)
    if pools is None:
        pools = tuple(GpuPool.from_spec(s) for s in specs)
        if len(_POOLS_OF) >= _POOLS_OF_LIMIT:
            _POOLS_OF.clear()
        _POOLS_OF[key] = pools
    return list(pools)


class GpuPoolSpec(TypedDict, total=False):
    """A `GpuPool` as plain values: the form component args take so every Pulumi language can pass it."""

    name: str
    """Pool name (a DNS label)."""
    cloud: str
    """``aws``, ``azure``, ``gcp``, ``oci`` or ``existing``."""
    instance_type: str
    """Machine type / VM size / shape."""
    gpu_model: str
    """GPU model key (``h100``, ``l4``...); its catalog entry names the accelerator vendor, hence the pool's
    extended resources and taint."""
    gpus_per_node: int
    """Physical GPUs per node."""
    gpu_memory_gib: int
    """Memory of one GPU in GiB."""
    min_nodes: int
    """Minimum nodes."""
    max_nodes: int
    """Maximum nodes."""
    vcpus_per_node: int
    """vCPUs per node."""
    memory_gib_per_node: int
    """Node memory in GiB."""
    sharing_mode: str
    """``exclusive``, ``time-slicing``, ``mps``, ``mig`` or ``hami``."""
    sharing_replicas: int
    """Pods per GPU for time-slicing / MPS / HAMi."""
    mig_profile: str
    """MIG profile for ``mig`` pools (``1g.10gb``)."""
    rdma_fabric: str
    """RDMA fabric, empty without RDMA."""
    rdma_interfaces: int
    """RDMA NICs per node."""
    spot: bool
    """Spot / preemptible capacity."""
    labels: dict[str, str]
    """User node labels."""
    taints: list[str]
    """User and cloud taints as ``key=value:Effect`` (the accelerator vendor's taint is implied)."""
    rdma_pod_annotations: dict[str, str]
    """Annotations RDMA pods need."""
    nccl_env: dict[str, str]
    """NCCL environment for training pods."""
    role: str
    """``inference``, ``training`` or ``general``."""
    gpu_allocation: str
    """``device-plugin`` (default; ``dra`` on shapes whose NVLink domain spans nodes) or ``dra``."""
    architecture: str
    """Node CPU architecture, ``amd64`` or ``arm64``; from the catalog (existing clusters: from the GPU model,
    else ``amd64``)."""
    nvlink_domain_gpus: int
    """GPUs of one multi-node NVLink domain; from the catalog (existing clusters: 0 unless given)."""
    provisioning: str
    """``on-demand`` (default), ``spot`` (as ``spot: true``), ``reservation``, ``flex-start`` or ``queued`` (GKE)."""
    reservation: str
    """The reservation's id or name, with ``provisioning: reservation`` only."""
    fallback_pool: str
    """Name of the pool a job may spill to when this pool's quota is used."""


def inference_pool(pools: list[GpuPool]) -> Optional[GpuPool]:
    """The pool the reference inference app runs on: the first ``inference`` pool, else the first non-RDMA one."""
    return next((p for p in pools if p.role == "inference"), None) or next(
        (p for p in pools if not p.rdma_fabric), pools[0] if pools else None
    )


def training_pool(pools: list[GpuPool]) -> Optional[GpuPool]:
    """The pool the reference training job runs on: the first ``training`` pool, else the first RDMA one."""
    return next((p for p in pools if p.role == "training"), None) or next(
        (p for p in pools if p.rdma_fabric), pools[-1] if pools else None
    )
