"""``docs/support-matrix.md``: what runs where, generated from the catalog and the configuration rules.

- GPU shapes, GPU models, MIG profiles and RDMA fabrics come from `catalog`;
- which sharing mode works with which ``gpuSoftware`` on which cloud is found by asking the configuration
  parser (`config.parse_config`) about every combination, so the page can never promise what a stack file
  would be refused;
- who installs the NVIDIA driver comes from the decisions the layers make (`nvidia_values.host_preset`,
  `azure_specs.gpu_driver`, `gcp_options.driver_version`);
- RDMA device resources come from `pools.RDMA_RESOURCES`, the RDMA installer from `kube.rdma_specs`;
- node autoscaler choices come from `config.AUTOSCALERS`.

The few sentences that name cloud mechanisms (resource types, node images) are data below.
"""

from typing import Optional

from .. import catalog, config, pools
from ..accelerators import nvidia_values, rdma_specs
from ..clouds.aws import options as aws_options
from ..clouds.azure import specs as azure_specs
from ..clouds.gcp import options as gcp_options
from ..errors import ConfigError
from .config_reference import minimal_raw

CLOUDS = ("aws", "azure", "gcp", "oci", "existing")

NODE_POOL_RESOURCE = {
    "aws": "EKS managed node group (`aws.eks.NodeGroup` + launch template), or Karpenter `NodePool`",
    "azure": "AKS agent pool (`azure-native.containerservice.AgentPool`)",
    "gcp": "GKE node pool (`gcp.container.NodePool`)",
    "oci": "OKE node pool (`oci.containerengine.NodePool`)",
    "existing": "node patches (labels, taints) on nodes that already run",
}
NODE_IMAGE_DRIVER = {
    "aws": "EKS NVIDIA AMI (" + ", ".join(f"`{t}`" for t in aws_options.GPU_AMI_TYPES) + "; arm64: "
           + ", ".join(f"`{t}`" for t in aws_options.ARM_GPU_AMI_TYPES) + ")",
    "azure": "AKS (`gpuProfile.driver: Install`)",
    "gcp": "GKE (`gpu_driver_version: DEFAULT`/`LATEST`, COS image)",
    "oci": "OKE GPU image",
    "existing": "the hosts (pre-installed)",
}
NODE_AUTOSCALER = {
    "aws": "Cluster Autoscaler (node groups scale from zero with node-template tags) or Karpenter (a NodePool and "
           "EC2NodeClass per GPU pool)",
    "azure": "AKS cluster autoscaler on every GPU agent pool, GPU autoscaler profile",
    "gcp": "GKE cluster autoscaler on every GPU node pool",
    "oci": "OKE `ClusterAutoscaler` add-on with each pool's id and min/max",
    "existing": "none from the platform (the cluster's own, if any)",
}
RDMA_INSTALLER = {
    catalog.EFA: "AWS EFA device plugin chart",
    catalog.INFINIBAND: "NVIDIA Network Operator + RDMA shared device plugin (`NicClusterPolicy`)",
    catalog.ROCE: "NVIDIA Network Operator + RDMA shared device plugin (`NicClusterPolicy`)",
    catalog.GPUDIRECT_TCPX: "GKE multi-networking (`GKENetworkParamSet`/`Network` per NIC)",
    catalog.GPUDIRECT_TCPXO: "GKE multi-networking (`GKENetworkParamSet`/`Network` per NIC)",
    catalog.GPUDIRECT_RDMA: "GKE multi-networking (`GKENetworkParamSet`/`Network` per NIC)",
}


def _code(values) -> str:
    return ", ".join(f"`{v}`" for v in values)


# ---------------------------------------------------------------------------------------------------------
# Facts derived from the code


def shapes(cloud: str) -> list[catalog.MachineShape]:
    return catalog.shapes_of(cloud)


def gpu_models(cloud: str) -> list[str]:
    """GPU models a cloud's catalogued shapes carry (plus GCP's attachable N1 GPUs), catalog order."""
    keys = {s.gpu_model for s in shapes(cloud) if s.gpu_model}
    if cloud == "gcp":
        keys |= {model for model, _ in catalog.GCP_ATTACHABLE.values()}
    if cloud == "existing":
        keys = set(catalog.GPU_MODELS)
    return [k for k in catalog.GPU_MODELS if k in keys]


def fabrics(cloud: str) -> list[str]:
    if cloud == "existing":
        return list(rdma_specs.NETWORK_OPERATOR_FABRICS)
    return [f for f in catalog.RDMA_FABRICS if any(s.rdma_fabric == f for s in shapes(cloud))]


def driver_installer(cloud: str, gpu_software: str) -> str:
    """Who installs the NVIDIA driver on a cloud's GPU nodes with this ``gpuSoftware``."""
    if gpu_software == "operator":
        if cloud == "azure":
            assert azure_specs.gpu_driver(gpu_software) == azure_specs.GPU_DRIVER_NONE
        if cloud == "gcp":
            assert gcp_options.driver_version(gcp_options.GcpPoolOptions(), gpu_software) == gcp_options.DRIVER_DISABLED
        if nvidia_values.host_preset(cloud).driver:
            extra = {"azure": " (`gpuProfile.driver: None`)", "gcp": " (Ubuntu image, GKE's install disabled)"}
            return "GPU Operator" + extra.get(cloud, "")
        return NODE_IMAGE_DRIVER[cloud]
    return NODE_IMAGE_DRIVER[cloud]


def device_plugin(cloud: str, gpu_software: str) -> str:
    return {"operator": "GPU Operator's", "device-plugin": "NVIDIA device plugin chart (+ GFD)",
            "cloud-managed": {"gcp": "GKE's", "oci": "OKE's", "azure": "none from the platform",
                              "aws": "none from the platform (Bottlerocket AMIs run their own)",
                              "existing": "the cluster's own"}[cloud]}[gpu_software]


def mig_shape(cloud: str) -> Optional[catalog.MachineShape]:
    """A MIG-capable shape of the cloud (the first one catalogued)."""
    return next((s for s in shapes(cloud) if s.mig_capable), None)


def sharing_probe(cloud: str, gpu_software: str, mode: str) -> Optional[str]:
    """None when a pool with this sharing mode is a valid stack with this ``gpuSoftware``, else the reason."""
    raw = minimal_raw(cloud)
    pool = raw["nodePools"][0]
    sharing: dict = {"mode": mode}
    if mode == "mig":
        shape = mig_shape(cloud)
        if cloud != "existing":
            if shape is None:
                return "no MIG-capable shape"
            pool["instanceType"] = shape.name
            profile = shape.gpu.mig_profiles[0] if shape.gpu else ""
        else:
            profile = catalog.GPU_MODELS[pool["gpuModel"]].mig_profiles[0]
        sharing["profile"] = profile
    elif mode != "exclusive":
        sharing["replicas"] = 4
    pool["sharing"] = sharing
    raw["gpuSoftware"] = gpu_software
    try:
        config.parse_config(raw, "matrix")
    except ConfigError as err:
        return str(err).split(": ", 2)[-1]
    return None


# ---------------------------------------------------------------------------------------------------------
# The page

HEADER = """<!-- Generated by `python -m gpu_platform.generate` from components/gpu_platform/catalog.py and the
configuration rules. Do not edit: change the code and regenerate. -->

# Support matrix

What the platform supports on each cloud, generated from the catalog (`catalog.py`) and from the configuration
rules themselves: every "yes" below is a stack file the parser accepts, every "no" one it refuses, with its
reason. Shapes not listed are refused by `gpu-platform plan` with the nearest catalogued names.
"""


def overview() -> str:
    return "## Clouds at a glance\n\n" + overview_table()


def overview_table() -> str:
    """One row per cloud: pools, shapes, GPU models, RDMA, default GPU software, node autoscaler."""
    rows = ["| | GPU node pools | shapes | GPU models | RDMA fabric (pod resource) | default `gpuSoftware` | "
            "node autoscaler (`autoscaling.autoscaler`) |", "|---|---|---|---|---|---|---|"]
    for cloud in CLOUDS:
        fabric = ", ".join(f"{f} (`{pools.RDMA_RESOURCES[f]}`)" if f in pools.RDMA_RESOURCES else f
                           for f in fabrics(cloud)) or "none"
        count = str(len(shapes(cloud))) if cloud != "existing" else "any (`gpuModel`, `gpusPerNode`)"
        choices = _code(config.AUTOSCALERS.get(cloud, ("built-in",)))
        rows.append(f"| **{catalog.CLOUD_NAMES[cloud]}** | {NODE_POOL_RESOURCE[cloud]} | {count} | "
                    f"{', '.join(gpu_models(cloud))} | {fabric} | `{config.DEFAULT_GPU_SOFTWARE[cloud]}` | "
                    f"{NODE_AUTOSCALER[cloud]}; values: {choices} |")
    return "\n".join(rows) + "\n"


def software() -> str:
    rows = ["| | `gpuSoftware` | NVIDIA driver installed by | device plugin |", "|---|---|---|---|"]
    for cloud in CLOUDS:
        for mode in config.GPU_SOFTWARE:
            if sharing_probe(cloud, mode, "exclusive") is not None:
                continue
            rows.append(f"| {catalog.CLOUD_NAMES[cloud]} | `{mode}` | {driver_installer(cloud, mode)} | "
                        f"{device_plugin(cloud, mode)} |")
    refused = [f"{catalog.CLOUD_NAMES[c]} `{m}` ({sharing_probe(c, m, 'exclusive')})"
               for c in CLOUDS for m in config.GPU_SOFTWARE if sharing_probe(c, m, "exclusive") is not None]
    note = ("\nRefused: " + "; ".join(refused) + ".\n") if refused else ""
    return ("## GPU software and drivers\n\n`gpuSoftware` picks what installs the NVIDIA stack; left out, the "
            "cloud's default above (or `operator` when a pool's sharing mode needs it).\n\n"
            + "\n".join(rows) + "\n" + note)


def sharing() -> str:
    modes = pools.SHARING_MODES
    header = "| | `gpuSoftware` | " + " | ".join(f"`{m}`" for m in modes) + " |"
    rows = [header, "|---|---|" + "---|" * len(modes)]
    reasons: dict[str, int] = {}
    for cloud in CLOUDS:
        for gpu_software in config.GPU_SOFTWARE:
            if sharing_probe(cloud, gpu_software, "exclusive") is not None:
                continue
            cells = []
            for mode in modes:
                reason = sharing_probe(cloud, gpu_software, mode)
                if reason is None:
                    cells.append("yes")
                else:
                    number = reasons.setdefault(reason, len(reasons) + 1)
                    cells.append(f"no [{number}]")
            rows.append(f"| {catalog.CLOUD_NAMES[cloud]} | `{gpu_software}` | " + " | ".join(cells) + " |")
    notes = "\n".join(f"{n}. {reason}" for reason, n in reasons.items())
    return ("## GPU sharing\n\n`nodePools[].sharing.mode` per cloud and `gpuSoftware` (MIG checked on the first "
            "MIG-capable shape of each cloud; time-slicing, MPS and HAMi with 4 replicas):\n\n"
            + "\n".join(rows) + "\n\n" + notes + "\n")


def rdma() -> str:
    rows = ["| | fabric | RDMA shapes (NICs per node) | pod resource | installed by |", "|---|---|---|---|---|"]
    for cloud in CLOUDS:
        for fabric in fabrics(cloud):
            shaped = [f"`{s.name}` ({s.rdma_interfaces})" for s in shapes(cloud) if s.rdma_fabric == fabric]
            listed = ", ".join(shaped) if cloud != "existing" else "any (`rdma: true`, `rdmaFabric`)"
            resource = f"`{pools.RDMA_RESOURCES[fabric]}`" if fabric in pools.RDMA_RESOURCES else \
                "none (pods attach GKE networks by annotation)"
            rows.append(f"| {catalog.CLOUD_NAMES[cloud]} | {fabric} | {listed} | {resource} | "
                        f"{RDMA_INSTALLER[fabric]} |")
    return ("## RDMA\n\n`nodePools[].rdma: true` attaches the shape's fabric; training pods on the pool get the "
            "resource and the NCCL settings from the platform.\n\n" + "\n".join(rows) + "\n")


SOLD = {"": "on demand", "capacity-block": "EC2 Capacity Blocks only", "reservation": "reservations only"}
"""How `catalog.MachineShape.capacity` reads in the table."""


def shape_tables() -> str:
    parts = ["## GPU shapes\n"]
    for cloud in CLOUDS[:-1]:
        rows = ["| shape | GPU | GPUs | GPU memory (GiB) | vCPUs | memory (GiB) | MIG profiles | RDMA (NICs) | CPU | "
                "NVLink domain | sold |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for s in shapes(cloud):
            gpu = s.gpu
            if gpu is None:
                attach = ", ".join(f"`{a}` x{'/'.join(map(str, catalog.GCP_ATTACHABLE[a][1]))}"
                                   for a in s.attachable_accelerators)
                rows.append(f"| `{s.name}` | attached: {attach} | | | {s.vcpus} | {s.memory_gib} | | | "
                            f"{s.architecture} | node | on demand |")
                continue
            mig = ", ".join(gpu.mig_profiles) if gpu.mig_profiles else "none"
            fabric = f"{s.rdma_fabric} ({s.rdma_interfaces})" if s.rdma_fabric else "none"
            domain = f"{s.nvlink_domain_gpus} GPUs (DRA only)" if s.multi_node_nvlink else "node"
            rows.append(f"| `{s.name}` | {gpu.display_name} | {s.gpu_count} | {gpu.memory_gib} | {s.vcpus} | "
                        f"{s.memory_gib} | {mig} | {fabric} | {s.architecture} | {domain} | "
                        f"{SOLD.get(s.capacity, s.capacity)} |")
        parts.append(f"### {catalog.CLOUD_NAMES[cloud]}\n\n" + "\n".join(rows) + "\n")
    models = ", ".join(f"`{k}` ({m.display_name})" for k, m in catalog.GPU_MODELS.items())
    parts.append(f"### Existing clusters\n\nAny node: give `gpuModel` (one of {models}) and `gpusPerNode`.\n")
    return "\n".join(parts)


def page() -> str:
    """The whole ``docs/support-matrix.md``."""
    return "\n".join([HEADER, overview(), software(), sharing(), rdma(), shape_tables()]).rstrip() + "\n"
