"""GPU machine shapes of every cloud: GPU model, count, memory, MIG, RDMA fabric and NICs; accelerator vendors.

Pure data plus lookups. Sources (checked 2026-11): AWS EC2 accelerated-computing instance pages and Karpenter's
generated instance-type reference (EFA counts = ``vpc.amazonaws.com/efa``); Azure NC/ND-series size pages;
Google Cloud GPU machine types (accelerator-optimized A2/A3/G2, N1 with attached GPUs); OCI GPU compute shapes.
"""

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from . import labels
from .labels import Taint

CLOUDS = ("aws", "azure", "gcp", "oci", "existing")
CLOUD_NAMES = {"aws": "AWS", "azure": "Azure", "gcp": "GCP", "oci": "OCI", "existing": "existing-cluster"}

# Node CPU architectures, as the ``kubernetes.io/arch`` label spells them.
AMD64 = "amd64"
ARM64 = "arm64"
ARCHITECTURES = (AMD64, ARM64)

# RDMA fabrics a pool can carry.
EFA = "efa"
INFINIBAND = "infiniband"
ROCE = "roce"
GPUDIRECT_TCPX = "gpudirect-tcpx"
GPUDIRECT_TCPXO = "gpudirect-tcpxo"
GPUDIRECT_RDMA = "gpudirect-rdma"
RDMA_FABRICS = (EFA, INFINIBAND, ROCE, GPUDIRECT_TCPX, GPUDIRECT_TCPXO, GPUDIRECT_RDMA)


# Accelerator vendors: what a pool's accelerator model is made by decides the extended resources its nodes
# advertise, the taint the platform puts on them, and how its devices may be shared (`VENDORS`).
NVIDIA = "nvidia"
AWS_NEURON = "aws-neuron"
AMD = "amd"
GOOGLE_TPU = "google-tpu"

NVIDIA_GPU_RESOURCE = "nvidia.com/gpu"
"""NVIDIA's device plugin resource: what ``teams[].gpuQuota`` counts."""


@dataclass(frozen=True)
class AcceleratorVendor:
    """An accelerator vendor as Kubernetes sees its nodes: the extended resources its device plugin advertises, the
    taint of its pools and the sharing modes the platform can configure for it."""

    key: str
    """``nvidia``, ``aws-neuron``, ``amd`` or ``google-tpu``."""
    display_name: str
    resources: tuple[str, ...]
    """Extended resources its device plugin advertises, the primary one first: the one a pool's devices are counted
    in (``gpusPerNode``), Kueue flavors and reference workloads use, and a pod asks for to get a device."""
    taint: Taint
    """The taint on every node of its pools (`labels`), which the pools' tolerations carry."""
    sharing_modes: tuple[str, ...]
    """``nodePools[].sharing.mode`` values the platform can configure for it."""

    @property
    def resource(self) -> str:
        """The primary resource."""
        return self.resources[0]


VENDORS: dict[str, AcceleratorVendor] = {
    v.key: v
    for v in (
        AcceleratorVendor(NVIDIA, "NVIDIA", (NVIDIA_GPU_RESOURCE,), labels.GPU_TAINT,
                          ("exclusive", "time-slicing", "mps", "mig", "hami")),
        # The Neuron device plugin advertises whole devices and their NeuronCores (a pod asks for one or the
        # other); the NeuronCore count per device depends on the chip (`GpuModel.secondary_per_device`).
        AcceleratorVendor(AWS_NEURON, "AWS Neuron", ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore"),
                          labels.NEURON_TAINT, ("exclusive",)),
        AcceleratorVendor(AMD, "AMD", ("amd.com/gpu",), labels.AMD_GPU_TAINT, ("exclusive",)),
        AcceleratorVendor(GOOGLE_TPU, "Google Cloud TPU", ("google.com/tpu",), labels.TPU_TAINT, ("exclusive",)),
    )
}
"""Every vendor the platform knows. Only NVIDIA has models in `GPU_MODELS` so far; the others are here so adding
their shapes is all that is left. Their sharing is ``exclusive`` until the platform configures their partitioning."""


@dataclass(frozen=True)
class GpuModel:
    """An accelerator model (an NVIDIA GPU unless ``vendor`` says otherwise) as the platform labels and partitions
    it."""

    key: str
    """Short lower-case name used in labels and PriorityClass names (``h100``, ``a100-80gb``)."""
    display_name: str
    memory_gib: int
    mig_profiles: tuple[str, ...] = ()
    """MIG profiles NVIDIA publishes for the model (``1g.10gb``...); empty when the GPU has no MIG."""
    vendor: str = NVIDIA
    """Key of :data:`VENDORS`."""
    secondary_per_device: tuple[tuple[str, int], ...] = ()
    """Units of each secondary resource of the vendor one device advertises (Neuron: NeuronCores per device). A
    secondary resource left out counts 0 in capacities until the catalog states it."""
    cpu_architecture: str = ""
    """The node CPU architecture the accelerator always comes with (``arm64`` for a Grace-Blackwell superchip, whose
    GPUs sit on the same board as their Grace CPU); empty when the model is sold with either."""

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    @property
    def accelerator(self) -> AcceleratorVendor:
        """The model's vendor."""
        return VENDORS[self.vendor]


_NVIDIA_MODELS = (
    GpuModel("t4", "NVIDIA T4", 16),
    GpuModel("v100", "NVIDIA V100 16GB", 16),
    GpuModel("v100-32gb", "NVIDIA V100 32GB", 32),
    GpuModel("a10", "NVIDIA A10", 24),
    GpuModel("a10g", "NVIDIA A10G", 24),
    GpuModel("l4", "NVIDIA L4", 24),
    GpuModel("l40s", "NVIDIA L40S", 48),
    GpuModel("a100-40gb", "NVIDIA A100 40GB", 40, ("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")),
    GpuModel("a100-80gb", "NVIDIA A100 80GB", 80, ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")),
    GpuModel(
        "h100", "NVIDIA H100 80GB", 80, ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
    ),
    GpuModel(
        "h100-nvl", "NVIDIA H100 NVL 94GB", 94, ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb")
    ),
    GpuModel(
        "h200", "NVIDIA H200 141GB", 141, ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")
    ),
    GpuModel(
        "b200", "NVIDIA B200 180GB", 180, ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb")
    ),
    # Grace-Blackwell superchips: the GPUs share a board with an arm64 Grace CPU. Memory: NVIDIA's NVL72 rack totals
    # (GB200 13.4 TB / 72 = 186 GB, GCP's A4X page says 186; GB300 20.1 TB / 72 = 279 GB, GCP A4X Max 279); Azure and
    # OCI print the raw HBM (192 / 288 GB), AWS 185. No MIG profiles: the rack images run the driver with coherent
    # driver-based memory management, which AWS (EKS UltraServer guide) and GCP (A4X Max) say excludes MIG.
    GpuModel("gb200", "NVIDIA GB200", 186, cpu_architecture=ARM64),
    GpuModel("gb300", "NVIDIA GB300", 279, cpu_architecture=ARM64),
)

# --- AWS Neuron models ---
# Device memory: Neuron architecture pages (aws-neuron/aws-neuron-sdk@v2.32.0 about-neuron/arch/neuron-hardware/
# inferentia2.rst 32 GiB, trainium.rst 32 GiB, trainium2.rst 96 GiB). NeuronCores per device = what the Neuron device
# plugin advertises as aws.amazon.com/neuroncore: two NeuronCore-v2 per Inferentia2/Trainium chip; a Trainium2 chip
# has eight physical NeuronCore-v3 that the default Logical NeuronCore Configuration (LNC=2, read by the plugin from
# /opt/aws/neuron/logical_nc_config) groups into four (logical-neuroncore-config.rst; deploy/eks/prerequisites.rst).
# Karpenter's instance-type reference counts trn2's physical cores (128 per trn2.48xlarge), not the plugin's 64.
_NEURON_MODELS: tuple[GpuModel, ...] = (
    GpuModel("inferentia2", "AWS Inferentia2", 32, vendor=AWS_NEURON,
             secondary_per_device=(("aws.amazon.com/neuroncore", 2),)),
    GpuModel("trainium1", "AWS Trainium", 32, vendor=AWS_NEURON,
             secondary_per_device=(("aws.amazon.com/neuroncore", 2),)),
    GpuModel("trainium2", "AWS Trainium2", 96, vendor=AWS_NEURON,
             secondary_per_device=(("aws.amazon.com/neuroncore", 4),)),
)
# --- AMD Instinct models ---
# MI300X: 192 GB HBM3 per GPU (AMD Instinct MI300X data sheet; Azure ND-MI300X-v5 size page "GPU Memory GiB 192").
# Exclusive only (`VENDORS`): the AMD GPU Operator's compute/memory partitioning (CPX/NPS through its Device
# Config Manager) is not wired by the platform. The MI355X (BM.GPU.MI355X.8 on OCI) is left out: its RDMA NICs are
# AMD Pollara ("ionic_*", oci-hpc-oke recommended RCCL parameters), which the platform's RDMA layer does not drive.
_AMD_MODELS: tuple[GpuModel, ...] = (GpuModel("mi300x", "AMD Instinct MI300X", 192, vendor=AMD),)
# --- Google TPU models ---
# HBM per chip: Cloud TPU system architecture pages (cloud.google.com/tpu/docs/v5e "HBM2 capacity 16 GB",
# /tpu/docs/v5p and /tpu/docs/tpu7x "HBM capacity per chip (GiB)": v5p 95, v6e 32, TPU7x 192; /tpu/docs/v6e "HBM
# capacity per chip 32 GB"). A pool's devices are its TPU chips (``google.com/tpu`` counts chips).
_TPU_MODELS: tuple[GpuModel, ...] = (
    GpuModel("tpu-v5e", "Google Cloud TPU v5e", 16, vendor=GOOGLE_TPU),
    GpuModel("tpu-v5p", "Google Cloud TPU v5p", 95, vendor=GOOGLE_TPU),
    GpuModel("tpu-v6e", "Google Cloud TPU v6e (Trillium)", 32, vendor=GOOGLE_TPU),
    GpuModel("tpu7x", "Google Cloud TPU7x (Ironwood)", 192, vendor=GOOGLE_TPU),
)

GPU_MODELS: dict[str, GpuModel] = {m.key: m for m in (*_NVIDIA_MODELS, *_NEURON_MODELS, *_AMD_MODELS, *_TPU_MODELS)}
"""Every accelerator model, by key."""


def vendor_of(gpu_model: str) -> AcceleratorVendor:
    """The vendor of a model key; NVIDIA for a key the catalog does not hold (the catalog's models were NVIDIA's
    alone before vendors existed, and a pool built by hand may name a model loosely)."""
    model = GPU_MODELS.get(gpu_model)
    return model.accelerator if model is not None else VENDORS[NVIDIA]


def advertised_resources(gpu_models: Iterable[str]) -> tuple[str, ...]:
    """Every extended resource pools of these models advertise, in order, each once (what team quotas may name and
    Kueue queues cover)."""
    return tuple(dict.fromkeys(r for model in gpu_models for r in vendor_of(model).resources))


def mig_instances_per_gpu(model: GpuModel, profile: str) -> int:
    """How many instances of one MIG profile a GPU holds when partitioned ``all-<profile>``.

    NVIDIA MIG user guide, "Supported MIG Profiles" (A100/H100/H200/B200 tables, 8 memory slices, 7 compute
    slices): 1g with the smallest memory x7, the double-memory 1g x4, 2g x3, 3g x2, 4g x1, 7g x1.
    """
    if profile not in model.mig_profiles:
        raise ValueError(f"{model.display_name} has no MIG profile {profile}")
    compute = int(profile.split("g.", 1)[0])
    if compute == 1:
        smallest_1g = next(p for p in model.mig_profiles if p.startswith("1g."))
        return 7 if profile == smallest_1g else 4
    return {2: 3, 3: 2, 4: 1, 7: 1}[compute]


@dataclass(frozen=True)
class MachineShape:
    """One GPU machine type / VM size / shape of a cloud."""

    cloud: str
    name: str
    gpu_model: str
    """Key into :data:`GPU_MODELS`; empty for a GCP N1 type, whose GPUs are attached per pool."""
    gpu_count: int
    vcpus: int
    memory_gib: int
    rdma_fabric: str | None = None
    """RDMA fabric the shape supports (None: no RDMA)."""
    rdma_interfaces: int = 0
    """RDMA NICs: EFA interfaces, InfiniBand HCAs, RoCE ports, or extra GPUDirect NICs on GCP."""
    accelerator_type: str | None = None
    """GCP accelerator type string (``nvidia-h100-80gb``) the machine type carries."""
    attachable_accelerators: tuple[str, ...] = field(default=())
    """GCP N1: accelerator types that may be attached; the pool names one and a count."""
    architecture: str = AMD64
    """The nodes' CPU architecture as Kubernetes labels it (``kubernetes.io/arch``): ``amd64`` or ``arm64``."""
    nvlink_domain_gpus: int = 0
    """GPUs one NVLink domain spans when it reaches beyond the node (72 for a GB200/GB300 NVL72 rack); 0 when NVLink
    stays inside the node. A job gets such a domain only through DRA ComputeDomains (IMEX channels)."""
    capacity: str = ""
    """How the shape is bought when it is not on demand: ``capacity-block`` (AWS EC2 Capacity Blocks for ML only),
    ``reservation`` (the cloud sells it through reservations / committed capacity only); empty: on demand too."""
    tpu_topologies: tuple[str, ...] = ()
    """GKE TPU machine types: the TPU slice topologies (``2x2``, ``4x4``, ``2x2x1``) a node pool of this machine type
    may form, its single-host topology first (the default); empty for every other shape. A topology of more chips
    than one VM has is a multi-host slice of ``chips / gpu_count`` nodes."""
    all_reduce_bus_bandwidth_gbps: float | None = None
    """Published two-node all-reduce bus bandwidth in GB/s (nccl-tests/rccl-tests ``all_reduce_perf`` over every GPU
    of two nodes: the better of out-of-place and in-place busbw at the run's largest message size), from
    `ALL_REDUCE_FIGURES`; None where no figure is published. ``gpu-platform verify`` holds a pool to
    `min_all_reduce_bus_bandwidth_gbps`, a fraction of it."""
    bus_bandwidth_source: str = ""
    """Where `all_reduce_bus_bandwidth_gbps` is published (URL at a commit, and the run's message size)."""

    @property
    def gpu(self) -> GpuModel | None:
        return GPU_MODELS.get(self.gpu_model)

    @property
    def mig_capable(self) -> bool:
        return bool(self.gpu and self.gpu.mig_capable)

    @property
    def rdma_capable(self) -> bool:
        return self.rdma_fabric is not None

    @property
    def min_all_reduce_bus_bandwidth_gbps(self) -> float | None:
        """The least two-node all-reduce bus bandwidth (GB/s) ``verify`` accepts: `ALL_REDUCE_THRESHOLD_FRACTION` of
        the published figure, rounded to 0.1; None (informational only) where no figure is published."""
        if self.all_reduce_bus_bandwidth_gbps is None:
            return None
        return round(self.all_reduce_bus_bandwidth_gbps * ALL_REDUCE_THRESHOLD_FRACTION, 1)

    @property
    def multi_node_nvlink(self) -> bool:
        """The shape's NVLink domain spans several nodes (an NVL72 rack): its GPUs need DRA."""
        return self.nvlink_domain_gpus > self.gpu_count > 0


def _rows(cloud: str, gpu: str, rows, **extra) -> list[MachineShape]:
    shapes = []
    for row in rows:
        name, count, vcpus, mem, *rest = row
        fabric, nics = (rest + [None, 0])[:2] if rest else (None, 0)
        shapes.append(MachineShape(cloud, name, gpu, count, vcpus, mem, fabric, nics, **extra))
    return shapes


_AWS = [
    # (name, gpus, vCPUs, memory GiB, rdma fabric, EFA interfaces)
    *_rows("aws", "t4", [
        ("g4dn.xlarge", 1, 4, 16), ("g4dn.2xlarge", 1, 8, 32), ("g4dn.4xlarge", 1, 16, 64),
        ("g4dn.8xlarge", 1, 32, 128, EFA, 1), ("g4dn.12xlarge", 4, 48, 192, EFA, 1),
        ("g4dn.16xlarge", 1, 64, 256, EFA, 1), ("g4dn.metal", 8, 96, 384, EFA, 1),
    ]),
    *_rows("aws", "a10g", [
        ("g5.xlarge", 1, 4, 16), ("g5.2xlarge", 1, 8, 32), ("g5.4xlarge", 1, 16, 64),
        ("g5.8xlarge", 1, 32, 128, EFA, 1), ("g5.12xlarge", 4, 48, 192, EFA, 1),
        ("g5.16xlarge", 1, 64, 256, EFA, 1), ("g5.24xlarge", 4, 96, 384, EFA, 1),
        ("g5.48xlarge", 8, 192, 768, EFA, 1),
    ]),
    *_rows("aws", "l4", [
        ("g6.xlarge", 1, 4, 16), ("g6.2xlarge", 1, 8, 32), ("g6.4xlarge", 1, 16, 64),
        ("g6.8xlarge", 1, 32, 128, EFA, 1), ("g6.12xlarge", 4, 48, 192, EFA, 1),
        ("g6.16xlarge", 1, 64, 256, EFA, 1), ("g6.24xlarge", 4, 96, 384, EFA, 1),
        ("g6.48xlarge", 8, 192, 768, EFA, 1),
    ]),
    *_rows("aws", "l40s", [
        ("g6e.xlarge", 1, 4, 32), ("g6e.2xlarge", 1, 8, 64), ("g6e.4xlarge", 1, 16, 128),
        ("g6e.8xlarge", 1, 32, 256, EFA, 1), ("g6e.12xlarge", 4, 48, 384, EFA, 1),
        ("g6e.16xlarge", 1, 64, 512, EFA, 1), ("g6e.24xlarge", 4, 96, 768, EFA, 2),
        ("g6e.48xlarge", 8, 192, 1536, EFA, 4),
    ]),
    *_rows("aws", "a100-40gb", [("p4d.24xlarge", 8, 96, 1152, EFA, 4)]),
    *_rows("aws", "a100-80gb", [("p4de.24xlarge", 8, 96, 1152, EFA, 4)]),
    *_rows("aws", "h100", [("p5.4xlarge", 1, 16, 256, EFA, 1), ("p5.48xlarge", 8, 192, 2048, EFA, 32)]),
    *_rows("aws", "h200", [("p5e.48xlarge", 8, 192, 2048, EFA, 32), ("p5en.48xlarge", 8, 192, 2048, EFA, 16)]),
    *_rows("aws", "b200", [("p6-b200.48xlarge", 8, 192, 2048, EFA, 8)]),
]

# --- Grace-Blackwell rack shapes (multi-node NVLink; arm64; DRA only) ---
# AWS p6e-gb200.36xlarge (EKS "NVIDIA UltraServers" guide, awsdocs/amazon-eks-user-guide ml-eks-nvidia-ultraserver):
# 4 GB200 per instance, EC2 Capacity Blocks only, 9 (u-p6e-gb200x36) or 18 (u-p6e-gb200x72) instances per NVLink
# domain, AL2023 ARM NVIDIA AMI; 4 EFA devices with one efa-only interface per network-card group. 144 vCPUs and
# 960 GiB are the UltraServer totals / 18 (2592 vCPUs, 17280 GiB). p6e-gb300.36xlarge is left out: no AWS source
# states its vCPUs, memory or EFA count.
# GCP a4x-highgpu-4g (Compute Engine "GPU machine types", A4X): 4 GB200, 140 vCPUs, 884 GB, 4 ConnectX-7 RDMA NICs
# (GPUDirect RDMA), 18 VMs per 72-GPU NVLink domain, reservations only. a4x-maxgpu-4g-metal (GB300) is left out: COS
# only and RDMA only through GKE's managed DRANET, neither of which the platform's GKE layer drives.
# Azure ND GB200 v6 / ND GB300 v6 size pages (MicrosoftDocs/azure-compute-docs nd-gb200-v6-series, nd-gb300-v6-series):
# 4 GPUs, 128 vCPUs, 900 / 864 GiB, 4 InfiniBand NICs (400 / 800 Gb/s), 72-GPU NVLink domain of 18 VMs.
# OCI BM.GPU.GB200.4 / BM.GPU.GB300.4 (compute shapes page): 4 GPUs, 144 cores, 960 GB, 4 RoCE NICs (400 / 800 Gb/s),
# 18 hosts per GPU memory fabric, through dedicated capacity and a compute cluster. BM.GPU.GB200-v3.4 is left out:
# its cores and memory are not published.
_RACKS: list[MachineShape] = [
    MachineShape("aws", "p6e-gb200.36xlarge", "gb200", 4, 144, 960, EFA, 4, architecture=ARM64,
                 nvlink_domain_gpus=72, capacity="capacity-block"),
    MachineShape("gcp", "a4x-highgpu-4g", "gb200", 4, 140, 884, GPUDIRECT_RDMA, 4, accelerator_type="nvidia-gb200",
                 architecture=ARM64, nvlink_domain_gpus=72, capacity="reservation"),
    MachineShape("azure", "Standard_ND128isr_NDR_GB200_v6", "gb200", 4, 128, 900, INFINIBAND, 4, architecture=ARM64,
                 nvlink_domain_gpus=72),
    MachineShape("azure", "Standard_ND128isr_GB300_v6", "gb300", 4, 128, 864, INFINIBAND, 4, architecture=ARM64,
                 nvlink_domain_gpus=72),
    MachineShape("oci", "BM.GPU.GB200.4", "gb200", 4, 144, 960, ROCE, 4, architecture=ARM64, nvlink_domain_gpus=72,
                 capacity="reservation"),
    MachineShape("oci", "BM.GPU.GB300.4", "gb300", 4, 144, 960, ROCE, 4, architecture=ARM64, nvlink_domain_gpus=72,
                 capacity="reservation"),
]

_AZURE = [
    *_rows("azure", "t4", [
        ("Standard_NC4as_T4_v3", 1, 4, 28), ("Standard_NC8as_T4_v3", 1, 8, 56),
        ("Standard_NC16as_T4_v3", 1, 16, 110), ("Standard_NC64as_T4_v3", 4, 64, 440),
    ]),
    *_rows("azure", "a100-80gb", [
        ("Standard_NC24ads_A100_v4", 1, 24, 220), ("Standard_NC48ads_A100_v4", 2, 48, 440),
        ("Standard_NC96ads_A100_v4", 4, 96, 880),
        ("Standard_ND96amsr_A100_v4", 8, 96, 1900, INFINIBAND, 8),
    ]),
    *_rows("azure", "a100-40gb", [("Standard_ND96asr_v4", 8, 96, 900, INFINIBAND, 8)]),
    *_rows("azure", "h100-nvl", [("Standard_NC40ads_H100_v5", 1, 40, 320), ("Standard_NC80adis_H100_v5", 2, 80, 640)]),
    *_rows("azure", "h100", [("Standard_ND96isr_H100_v5", 8, 96, 1900, INFINIBAND, 8)]),
    *_rows("azure", "h200", [("Standard_ND96isr_H200_v5", 8, 96, 1850, INFINIBAND, 8)]),
]

_GCP = [
    *_rows("gcp", "l4", [
        ("g2-standard-4", 1, 4, 16), ("g2-standard-8", 1, 8, 32), ("g2-standard-12", 1, 12, 48),
        ("g2-standard-16", 1, 16, 64), ("g2-standard-24", 2, 24, 96), ("g2-standard-32", 1, 32, 128),
        ("g2-standard-48", 4, 48, 192), ("g2-standard-96", 8, 96, 384),
    ], accelerator_type="nvidia-l4"),
    *_rows("gcp", "a100-40gb", [
        ("a2-highgpu-1g", 1, 12, 85), ("a2-highgpu-2g", 2, 24, 170), ("a2-highgpu-4g", 4, 48, 340),
        ("a2-highgpu-8g", 8, 96, 680), ("a2-megagpu-16g", 16, 96, 1360),
    ], accelerator_type="nvidia-tesla-a100"),
    *_rows("gcp", "a100-80gb", [
        ("a2-ultragpu-1g", 1, 12, 170), ("a2-ultragpu-2g", 2, 24, 340), ("a2-ultragpu-4g", 4, 48, 680),
        ("a2-ultragpu-8g", 8, 96, 1360),
    ], accelerator_type="nvidia-a100-80gb"),
    *_rows("gcp", "h100", [
        ("a3-highgpu-1g", 1, 26, 234), ("a3-highgpu-2g", 2, 52, 468), ("a3-highgpu-4g", 4, 104, 936),
        ("a3-highgpu-8g", 8, 208, 1872, GPUDIRECT_TCPX, 4),
    ], accelerator_type="nvidia-h100-80gb"),
    *_rows("gcp", "h100", [("a3-megagpu-8g", 8, 208, 1872, GPUDIRECT_TCPXO, 8)],
           accelerator_type="nvidia-h100-mega-80gb"),
    *_rows("gcp", "h200", [("a3-ultragpu-8g", 8, 224, 2952, GPUDIRECT_RDMA, 8)], accelerator_type="nvidia-h200-141gb"),
    *_rows("gcp", "", [
        ("n1-standard-4", 0, 4, 15), ("n1-standard-8", 0, 8, 30), ("n1-standard-16", 0, 16, 60),
        ("n1-standard-32", 0, 32, 120), ("n1-highmem-8", 0, 8, 52), ("n1-highmem-16", 0, 16, 104),
    ], attachable_accelerators=("nvidia-tesla-t4", "nvidia-tesla-v100")),
]

_OCI = [
    *_rows("oci", "a10", [
        ("VM.GPU.A10.1", 1, 30, 240), ("VM.GPU.A10.2", 2, 60, 480), ("BM.GPU.A10.4", 4, 128, 1024),
    ]),
    *_rows("oci", "a100-40gb", [("BM.GPU4.8", 8, 128, 2048, ROCE, 16)]),
    *_rows("oci", "a100-80gb", [("BM.GPU.A100-v2.8", 8, 256, 2048, ROCE, 16)]),
    *_rows("oci", "h100", [("BM.GPU.H100.8", 8, 224, 2048, ROCE, 16)]),
    *_rows("oci", "h200", [("BM.GPU.H200.8", 8, 224, 3072, ROCE, 8)]),
    *_rows("oci", "l40s", [("BM.GPU.L40S.4", 4, 224, 1024, ROCE, 4)]),
    *_rows("oci", "b200", [("BM.GPU.B200.8", 8, 256, 4096, ROCE, 8)]),
]

# --- AWS Neuron shapes ---
# (name, Neuron devices, vCPUs, memory GiB, fabric, EFA interfaces): Karpenter's generated instance-type reference
# (aws/karpenter-provider-aws@v1.14.1:website/content/en/docs/reference/instance-types.md: instance-accelerator-count
# = aws.amazon.com/neuron, instance-cpu, instance-memory, vpc.amazonaws.com/efa), matching the EC2 accelerated-computing
# specifications page; trn1 8 EFA / trn1n 16 EFA also in the Neuron guide "How to prepare trn1.32xlarge for multi-node
# execution". The Neuron Helm chart's device plugin targets these types (neuronInstances in its values.yaml).
# trn2u.48xlarge (the UltraServer member) is left out: Karpenter's reference does not list it, so no EFA count.
_AWS_NEURON: list[MachineShape] = [
    *_rows("aws", "inferentia2", [
        ("inf2.xlarge", 1, 4, 16), ("inf2.8xlarge", 1, 32, 128), ("inf2.24xlarge", 6, 96, 384),
        ("inf2.48xlarge", 12, 192, 768),
    ]),
    *_rows("aws", "trainium1", [
        ("trn1.2xlarge", 1, 8, 32), ("trn1.32xlarge", 16, 128, 512, EFA, 8), ("trn1n.32xlarge", 16, 128, 512, EFA, 16),
    ]),
    *_rows("aws", "trainium2", [("trn2.48xlarge", 16, 192, 2048, EFA, 16)]),
]
# --- Azure AMD shapes ---
# ND MI300X v5 (learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-mi300x-v5-series): 96 vCPUs,
# 1850 GiB, 8 MI300X, InfiniBand "8x400 Gigabit NDR" with GPUDirect RDMA. AKS supports this size only among AMD
# GPUs (AKS use-amd-gpus.md, "Limitations").
_AZURE_AMD: list[MachineShape] = _rows("azure", "mi300x", [("Standard_ND96isr_MI300X_v5", 8, 96, 1850, INFINIBAND, 8)])
# --- OCI AMD shapes ---
# BM.GPU.MI300X.8 (docs.oracle.com/iaas/Content/Compute/References/computeshapes.htm, bare metal GPU shapes):
# 112 OCPUs (2x Xeon 8480+) = 224 vCPUs as the other OCI rows count them, 2048 GB, 8 MI300X, 1x100 Gbps front-end
# plus 8x400 Gbps RoCEv2 cluster network NICs (the 8 HCAs of NCCL_IB_HCA in oci-hpc-oke
# docs/recommended-nccl-rccl-parameters-by-shape.md).
_OCI_AMD: list[MachineShape] = _rows("oci", "mi300x", [("BM.GPU.MI300X.8", 8, 224, 2048, ROCE, 8)])
# --- GCP TPU shapes ---
GKE_TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
"""Node label GKE sets on TPU slice nodes to the pool's TPU type (``MachineShape.accelerator_type``)."""
GKE_TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
"""Node label GKE sets on TPU slice nodes to the slice's topology; workloads select both (GKE "Plan TPUs in GKE")."""
_TPU_2D_MULTI_HOST = ("2x4", "4x4", "4x8", "8x8", "8x16", "16x16")
"""v5e/v6e slices of 4-chip VMs beyond one host (GKE "Plan TPUs in GKE" v5e/v6e tables; /tpu/docs/v6e "Supported
configurations": 2x4 on two ct6e-standard-4t VMs up to 16x16 on 64)."""


def _v5p_topologies() -> tuple[str, ...]:
    """v5p slice shapes (/tpu/docs/v5p, /tpu/docs/types-topologies): 2x2x1 (one VM), 2x2x2, 2x2x4, 2x4x4, then AxBxC
    with each side a multiple of 4, A <= B <= C, at most 140 4x4x4 cubes (8960 chips, the v5p Pod). The same list
    AI-Hypercomputer/xpk@v1.13.1 src/xpk/core/system_characteristics.py generates (max_cubes=140)."""
    shapes = ["2x2x1", "2x2x2", "2x2x4", "2x4x4"]
    sides = range(4, 257, 4)
    shapes += [f"{a}x{b}x{c}" for a in sides for b in sides if b >= a for c in sides
               if c >= b and (a // 4) * (b // 4) * (c // 4) <= 140]
    return tuple(shapes)


def _tpu(name: str, model: str, chips: int, vcpus: int, memory: int, accelerator: str,
         topologies: tuple[str, ...]) -> MachineShape:
    return MachineShape("gcp", name, model, chips, vcpus, memory, accelerator_type=accelerator,
                        tpu_topologies=topologies)


# GKE TPU machine types: chips per VM, vCPUs and memory from Compute Engine "TPU machines in the accelerator-optimized
# machine family" and the Cloud TPU version pages (4-chip VMs: v5p 208 vCPUs / 448 GB, v6e 180 / 720, TPU7x 224 /
# 960, /tpu/docs/tpu7x); the GKE accelerator label value and the machine type / topology pairs from GKE "Plan TPUs in
# GKE" (cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus) and /tpu/docs/v6e "Supported configurations".
# TPU7x multi-host slices are placed by a workload policy instead of a topology (GKE "About Ironwood (TPU7x) in
# GKE"), which the platform does not create yet: only its single-host 2x2x1 is offered.
# v5e VMs (24/48, 112/192, 224/384) are in /tpu/docs/v5e "VM types". Not found on Google's pages from here: the
# vCPUs of ct6e-standard-1t (44) and -8t (180) and their memory (176 and 1440 GB), taken from public repositories
# that size pods by them; the platform reads vCPUs and memory only for default requests and the support matrix.
_GCP_TPU: list[MachineShape] = [
    _tpu("ct5lp-hightpu-1t", "tpu-v5e", 1, 24, 48, "tpu-v5-lite-podslice", ("1x1",)),
    _tpu("ct5lp-hightpu-4t", "tpu-v5e", 4, 112, 192, "tpu-v5-lite-podslice", ("2x2", *_TPU_2D_MULTI_HOST)),
    _tpu("ct5lp-hightpu-8t", "tpu-v5e", 8, 224, 384, "tpu-v5-lite-podslice", ("2x4",)),
    _tpu("ct5p-hightpu-4t", "tpu-v5p", 4, 208, 448, "tpu-v5p-slice", _v5p_topologies()),
    _tpu("ct6e-standard-1t", "tpu-v6e", 1, 44, 176, "tpu-v6e-slice", ("1x1",)),
    _tpu("ct6e-standard-4t", "tpu-v6e", 4, 180, 720, "tpu-v6e-slice", ("2x2", *_TPU_2D_MULTI_HOST)),
    _tpu("ct6e-standard-8t", "tpu-v6e", 8, 180, 1440, "tpu-v6e-slice", ("2x4",)),
    _tpu("tpu7x-standard-4t", "tpu7x", 4, 224, 960, "tpu7x", ("2x2x1",)),
]


def tpu_chips(topology: str) -> int:
    """Chips in a TPU slice topology (``4x4`` -> 16, ``2x2x1`` -> 4)."""
    chips = 1
    for side in topology.split("x"):
        chips *= int(side)
    return chips


def tpu_hosts(shape: MachineShape, topology: str) -> int:
    """VMs (nodes) of a slice of ``topology`` on ``shape``: 1 for a single-host slice."""
    return max(1, tpu_chips(topology) // shape.gpu_count)

SHAPES: dict[tuple[str, str], MachineShape] = {
    (s.cloud, s.name): s
    for s in (*_AWS, *_AWS_NEURON, *_AZURE, *_AZURE_AMD, *_GCP, *_GCP_TPU, *_OCI, *_OCI_AMD, *_RACKS)
}

ALL_REDUCE_THRESHOLD_FRACTION = 0.8
"""Share of a shape's published two-node all-reduce bus bandwidth a pool must reach in ``verify``: published runs are
tuned, pinned and on quiet fabric; 80 % leaves room for a different NCCL, topology placement and neighbours while
still catching a missing rail, a disabled GPUDirect RDMA or a TCP fallback (each costs far more than 20 %)."""

ALL_REDUCE_FIGURES: dict[tuple[str, str], tuple[float, str]] = {
    ("aws", "p4de.24xlarge"): (78.33, "https://github.com/aws-samples/awsome-distributed-training/blob/"
                               "7217859f67bc693c52ff175ccc6082c41dbd7a1b/micro-benchmarks/nccl-tests/README.md "
                               "(Results: 2 x p4de.24xlarge, 2 GiB)"),
    ("aws", "p5.48xlarge"): (487.26, "https://github.com/aws-samples/awsome-distributed-training/blob/"
                             "7217859f67bc693c52ff175ccc6082c41dbd7a1b/micro-benchmarks/nccl-tests/README.md "
                             "(Results: 2 x p5.48xlarge, 16 GiB)"),
    ("azure", "Standard_ND96asr_v4"): (187.22, "https://github.com/Azure/aks-rdma-infiniband/blob/"
                                       "700dabb4fe0451d482ae09a373617ed68658b021/tests/expected-output.md "
                                       "(1.1 mpijob, 2 workers, 8 GiB)"),
    ("gcp", "a3-highgpu-8g"): (90.05, "https://github.com/GoogleCloudPlatform/ai-infra-cluster-provisioning/blob/"
                               "d5cdbd194ccfeb9770990f2e36fde38a4a862c00/sample_workloads/nccltest/a3/README.md "
                               "(2-node GPUDirect-TCPX, 8 GiB)"),
    ("oci", "BM.GPU.MI300X.8"): (358.37, "https://github.com/oracle-quickstart/oci-hpc-oke/blob/"
                                 "61d210acc37f1990f27012aa4f108c5db4e52ab2/docs/running-nccl-rccl-tests-from-slurm-"
                                 "operator.md (RCCL example output: two nodes, 16 GiB)"),
}
"""Published two-node all-reduce bus bandwidths (GB/s) and their sources; each run's output is kept verbatim in
tests/data/health/ with a ``.source`` file. A shape missing here has no published two-node figure that could be
found (p5e/p5en/p6, ND H100/H200 v5, A3 Mega/Ultra, A4, OCI H100/H200/B200 ...): ``verify`` reports its measurement
as informational. Not used: the awsome-distributed-training health check's ``get_min_bus_bw`` (p5.48xlarge 800 GB/s
over 8 B-128 MB), which its own README's two-node p5 run (487 GB/s at 16 GiB) does not reach."""
for _key, (_figure, _source) in ALL_REDUCE_FIGURES.items():
    SHAPES[_key] = replace(SHAPES[_key], all_reduce_bus_bandwidth_gbps=_figure, bus_bandwidth_source=_source)

# GCP attachable accelerators (N1): GPU model and the counts GCP allows per VM.
GCP_ATTACHABLE = {
    "nvidia-tesla-t4": ("t4", (1, 2, 4)),
    "nvidia-tesla-v100": ("v100", (1, 2, 4, 8)),
}


class UnknownShapeError(ValueError):
    """An instance type that is not in the catalog; the message suggests the nearest names."""


def shapes_of(cloud: str) -> list[MachineShape]:
    """Every catalogued shape of one cloud, in catalog order."""
    return [s for (c, _), s in SHAPES.items() if c == cloud]


def nearest_names(cloud: str, name: str, limit: int = 3) -> list[str]:
    """Catalogued names of ``cloud`` closest to ``name`` (for "did you mean" messages)."""
    names = [s.name for s in shapes_of(cloud)]
    by_case = {n.lower(): n for n in names}
    return [by_case[m] for m in difflib.get_close_matches(name.lower(), list(by_case), n=limit, cutoff=0.6)]


def cloud_of_shape(name: str) -> str | None:
    """The cloud that catalogues ``name``, if any."""
    return next((c for (c, n) in SHAPES if n == name), None)


def find_shape(cloud: str, name: str) -> MachineShape:
    """Look a shape up, raising :class:`UnknownShapeError` with suggestions when it is not catalogued."""
    shape = SHAPES.get((cloud, name))
    if shape is not None:
        return shape
    label = CLOUD_NAMES.get(cloud, cloud)
    other = cloud_of_shape(name)
    if other is not None:
        raise UnknownShapeError(f"'{name}' is an instance type of {CLOUD_NAMES[other]}, not of {label}")
    near = nearest_names(cloud, name)
    hint = f"; did you mean '{near[0]}'?" if near else ""
    raise UnknownShapeError(f"unknown {label} GPU instance type '{name}'{hint}")
