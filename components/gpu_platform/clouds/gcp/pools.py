"""Pure decisions behind a GKE GPU node pool: accelerators, driver, sharing, taints, labels, sizes, kubeconfig.

Every function returns plain values in the snake_case dict form ``pulumi_gcp.container`` input types accept
(``NodePoolNodeConfigGuestAcceleratorArgsDict`` etc., property names checked in pulumi_gcp 10.2.0), so the
component stays a thin wrapper and the rules are unit-tested without the engine.
"""

import json
import math
from dataclasses import replace
from typing import Any, Optional

from ... import catalog, labels, provisioning
from ...labels import Taint
from ...pools import GpuPool

# GKE's node pools take the API enum for taint effects, as EKS does.
SHARING_STRATEGIES = {"time-slicing": "TIME_SHARING", "mps": "MPS"}
GKE_DRIVER_INSTALL_DIR = "/home/kubernetes/bin/nvidia"
"""Where GKE's driver installer puts the driver on the host (what NVIDIA's toolkit/device plugin must use)."""
NODE_SERVICE_ACCOUNT_ROLES = (
    # GKE's least-privilege node service account (hardening guide): logs, metrics, metadata, image pulls.
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)
OAUTH_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
"""IAM (the node service account's roles) limits access; the cloud-platform scope is GKE's recommendation."""


def accelerator_type(pool: GpuPool, n1_accelerator: str = "") -> str:
    """The GCE accelerator type: fixed by A2/A3/G2 machine types, named in the pool for N1."""
    shape = catalog.SHAPES.get(("gcp", pool.instance_type))
    if shape is not None and shape.accelerator_type:
        return shape.accelerator_type
    if not n1_accelerator:
        raise ValueError(f"pool '{pool.name}': '{pool.instance_type}' needs an accelerator type (N1)")
    return n1_accelerator


def guest_accelerator(pool: GpuPool, accelerator: str, driver_version: str, gke_sharing: bool,
                      gke_partitioning: bool) -> dict:
    """``node_config.guest_accelerators[0]``: type, count, driver installation, sharing and MIG partitions."""
    out: dict = {
        "type": accelerator,
        "count": pool.gpus_per_node,
        "gpu_driver_installation_config": {"gpu_driver_version": driver_version},
    }
    if gke_sharing and pool.sharing.mode in SHARING_STRATEGIES:
        out["gpu_sharing_config"] = {
            "gpu_sharing_strategy": SHARING_STRATEGIES[pool.sharing.mode],
            "max_shared_clients_per_gpu": pool.sharing.replicas,
        }
    if gke_partitioning and pool.sharing.mode == "mig":
        out["gpu_partition_size"] = pool.sharing.mig_profile
    return out


GKE_QUEUED_TAINT = Taint(labels.GKE_QUEUED_TAINT_KEY, "true", "NoSchedule")
"""The taint GKE puts on queued-provisioning nodes; cluster-toolkit's ``gke-node-pool`` also labels the nodes with
its key (``true``) for node selectors, as GKE sets the taint, not the label."""
DWS_MODES = (provisioning.FLEX_START, provisioning.QUEUED)
"""Dynamic Workload Scheduler's modes: both are flex-start VMs (GKE's queued provisioning page: a queued pool takes
``--flex-start`` and ``--enable-queued-provisioning``)."""
FLEX_START_COMPACT_MACHINES = ("a3-ultragpu-", "a4-", "h4d-")
"""Machine type prefixes on which flex-start VMs may be placed COMPACT (cluster-toolkit ``gke-node-pool``
precondition: "Compact placement with DWS Flex start is only supported for A3 Ultra, A4, and H4D machine types")."""


def taints(pool: GpuPool) -> list[dict]:
    """Every taint of the pool, declared explicitly (GKE adds the GPU taint only in some cases, and an implicit
    one makes later updates want to recreate the pool: cluster-toolkit PR #1285), except GKE's queued-provisioning
    taint, which GKE applies itself (cluster-toolkit does not declare it either)."""
    return [{"key": t.key, "value": t.value, "effect": labels.EFFECT_TO_API_ENUM[t.effect]} for t in pool.taints
            if t != GKE_QUEUED_TAINT]


def with_cloud_taints(pool: GpuPool) -> GpuPool:
    """The pool the Kubernetes layer sees: a queued pool carries GKE's ``cloud.google.com/gke-queued=true:NoSchedule``
    among its cloud taints, so its Kueue flavor and workloads tolerate it."""
    if pool.provisioning != provisioning.QUEUED or GKE_QUEUED_TAINT in pool.taints:
        return pool
    return replace(pool, extra_taints=(*pool.extra_taints, GKE_QUEUED_TAINT))


def consumed_reservation(pool: GpuPool, affinity: Optional[str]) -> tuple[Optional[str], tuple[str, ...]]:
    """``(consume_reservation_type, reservation names)`` of a pool: ``provisioning: reservation`` consumes its named
    reservation (``SPECIFIC_RESERVATION``); Spot and Dynamic Workload Scheduler VMs consume none (``NO_RESERVATION``,
    what GKE's flex-start and queued pages and cluster-toolkit require); an on-demand pool takes ``affinity`` (None:
    GCE's default)."""
    if pool.provisioning == provisioning.RESERVATION:
        return "SPECIFIC_RESERVATION", (pool.reservation,)
    if pool.provisioning == provisioning.ON_DEMAND:
        return affinity, ()
    return "NO_RESERVATION", ()


def dws_node_config(pool: GpuPool) -> dict:
    """``node_config`` settings of a Dynamic Workload Scheduler pool: ``flex_start`` on flex-start and queued pools
    (GKE's queued-provisioning page: "you have to add the --flex-start and --enable-queued-provisioning flags")."""
    return {"flex_start": True} if pool.provisioning in DWS_MODES else {}


def queued_provisioning(pool: GpuPool) -> Optional[dict]:
    """``queued_provisioning``: nodes only through ProvisioningRequests (Kueue's ``queued-provisioning.gke.io``)."""
    return {"enabled": True} if pool.provisioning == provisioning.QUEUED else None


def management(pool: GpuPool) -> dict:
    """``management``: auto-repair and auto-upgrade, except that flex-start VMs are not repaired (cluster-toolkit
    ``gke-node-pool``: "enable_flex_start needs node auto_repair set to false"; GKE's pages pass
    ``--no-enable-autorepair``) and queued nodes are not upgraded under a running job (cluster-toolkit's
    ``dws-flex-start-queued-provisioning`` blueprint: ``auto_upgrade: false # queued provisioning requirement``)."""
    return {"auto_repair": pool.provisioning not in DWS_MODES, "auto_upgrade": pool.provisioning != provisioning.QUEUED}


def node_labels(pool: GpuPool, disable_gke_device_plugin: bool) -> dict[str, str]:
    """Kubernetes labels of the pool's nodes: the platform's scheme plus GKE's device-plugin switch, and on DRA pools
    the GPU presence label GKE's DRA page sets at pool creation ("Prepare GKE infrastructure for DRA workloads":
    ``gke-no-default-nvidia-gpu-device-plugin=true`` and ``nvidia.com/gpu.present=true``), which NVIDIA's DRA
    kubelet plugin selects before any NFD label exists."""
    out = dict(pool.labels)
    if pool.provisioning == provisioning.QUEUED:
        out[labels.GKE_QUEUED_TAINT_KEY] = "true"  # GKE taints, not labels, these nodes (cluster-toolkit gke-node-pool)
    if disable_gke_device_plugin:
        out[labels.GKE_NO_DEFAULT_DEVICE_PLUGIN_LABEL] = "true"
    if pool.dra:
        out[labels.GPU_PRESENT_LABEL] = "true"
    return out


ARCHITECTURE_TAINT_NONE = "NONE"
"""``TaintConfig.ArchitectureTaintBehavior`` ``NONE`` (GKE API v1; pulumi_gcp 10.2.0
``NodePoolNodeConfigTaintConfigArgs.architecture_taint_behavior``: ``NONE``, ``ARM``, unspecified = ``ARM``)."""


def taint_config(pool: GpuPool) -> Optional[dict]:
    """``node_config.taint_config`` of an arm64 pool: no architecture taint. GKE otherwise taints every Arm node
    ``kubernetes.io/arch=arm64:NoSchedule`` ("Prepare to deploy an Arm workload in a Standard cluster"), a taint the
    pool does not declare (`taints`), so neither the platform's DaemonSets nor its workloads would tolerate it; the
    GPU taint keeps other pods off these nodes already, and workloads select arm64 by ``kubernetes.io/arch``.
    None for amd64 pools (GKE adds no taint there)."""
    if pool.architecture != catalog.ARM64:
        return None
    return {"architecture_taint_behavior": ARCHITECTURE_TAINT_NONE}


HIGH_THROUGHPUT = "HIGH_THROUGHPUT"


def workload_policy(shape: catalog.MachineShape) -> dict:
    """``compute.ResourcePolicy`` ``workload_policy`` that forms one NVLink domain of a multi-node NVLink machine
    type: ``HIGH_THROUGHPUT`` with the domain's accelerator topology (A4X: ``1x72``). Compute Engine requires a
    workload policy for A4X node groups ("About workload policies in MIGs"); cluster-toolkit's ``examples/gke-a4x``
    creates this one and passes it to the node pool as a COMPACT placement policy."""
    return {"type": HIGH_THROUGHPUT, "accelerator_topology": nvlink_topology(shape)}


def nvlink_topology(shape: catalog.MachineShape) -> str:
    """The accelerator topology of one whole NVLink domain (A4X: ``1x72``, the value Compute Engine's "Create
    workload policies for MIGs" gives for A4X)."""
    return f"1x{shape.nvlink_domain_gpus}"


def initial_node_count(pool: GpuPool, desired: Optional[int], zones: int) -> int:
    """GKE's ``initial_node_count`` is per zone: spread the wanted total over the pool's zones, rounding up."""
    total = pool.min_nodes if desired is None else desired
    return math.ceil(total / max(zones, 1))


def autoscaling(pool: GpuPool) -> dict:
    """Total (not per-zone) limits, so ``minNodes``/``maxNodes`` mean the whole pool; Spot, flex-start and queued
    pools scale in any zone with capacity (``ANY``: GKE's recommendation for Spot, ``--location-policy=ANY`` on its
    flex-start and queued-provisioning pages)."""
    out: dict = {"total_min_node_count": pool.min_nodes, "total_max_node_count": pool.max_nodes}
    if pool.spot or pool.provisioning in DWS_MODES:
        out["location_policy"] = "ANY"
    return out


def reservation_affinity(affinity: Optional[str], reservations: tuple[str, ...]) -> Optional[dict]:
    """``node_config.reservation_affinity``; reservations are matched by name."""
    if affinity is None:
        return None
    out: dict = {"consume_reservation_type": affinity}
    if reservations:
        out["key"] = "compute.googleapis.com/reservation-name"
        out["values"] = list(reservations)
    return out


def placement_policy(compact: bool, policy_name: Any = None) -> Optional[dict]:
    """``placement_policy``: COMPACT (the only type GKE has) keeps RDMA nodes close on the network; ``policy_name``
    (a string or an Output) names the resource policy, a compact placement or a workload policy (A4X)."""
    if not compact:
        return None
    out: dict = {"type": "COMPACT"}
    if policy_name is not None and not (isinstance(policy_name, str) and not policy_name):
        out["policy_name"] = policy_name
    return out


def tpu_placement_policy(shape: catalog.MachineShape, topology: str) -> Optional[dict]:
    """``placement_policy`` of a TPU pool: a multi-host slice is COMPACT with its ``tpu_topology`` (GKE's Terraform
    example for multi-host TPU slice node pools, "Deploy TPU workloads in GKE Standard"); a single-host slice needs
    none (the machine type is the slice)."""
    if catalog.tpu_hosts(shape, topology) <= 1:
        return None
    return {"type": "COMPACT", "tpu_topology": topology}


def tpu_node_labels(shape: catalog.MachineShape, topology: str) -> dict[str, str]:
    """The labels GKE itself sets on the nodes of a TPU slice (its TPU type and topology): what workloads and
    Kueue flavors select. GKE derives them from the machine type and placement, so node pools do not set them."""
    return {catalog.GKE_TPU_ACCELERATOR_LABEL: shape.accelerator_type or "",
            catalog.GKE_TPU_TOPOLOGY_LABEL: topology}


def kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig that authenticates with ``gke-gcloud-auth-plugin`` (short-lived tokens, no static secret)."""
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": cluster_name,
        "clusters": [{"name": cluster_name,
                      "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": ca_certificate}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "users": [{"name": cluster_name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "installHint": "Install gke-gcloud-auth-plugin for use with kubectl by following "
                           "https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl"
                           "#install_plugin",
            "provideClusterInfo": True,
        }}}],
    }, indent=2)


def resource_name(name: str, limit: int = 40) -> str:
    """A GCE/GKE resource name from a stack or pool name: lower-case, ``[a-z][-a-z0-9]*``, at most ``limit``."""
    cleaned = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    cleaned = "-".join(part for part in cleaned.split("-") if part)
    if not cleaned or not cleaned[0].isalpha():
        cleaned = f"gpu-{cleaned}".rstrip("-")
    return cleaned[:limit].rstrip("-")
