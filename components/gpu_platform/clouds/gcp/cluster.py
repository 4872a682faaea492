"""Google Cloud: a GKE Standard cluster (`GkeCluster`) and its GPU / GPUDirect node pools (`GkeGpuNodePool`).

Programs compose them the way `cluster_from_config` (the stack path) does: one `GkeCluster` with its pools in
``gpu_pools`` (entries from `gpu_platform.pool_args("gcp", entry)` or written by hand). The cluster plans the
GPUDirect NIC networks of the RDMA pools among them (extra VPCs, subnets, ``GKENetworkParamSet``/``Network``
objects, multi-networking) and gives each pool its extra NICs and its pods' interface annotations::

    from gpu_platform import GkeCluster, pool_args

    train = pool_args("gcp", {"name": "train", "instanceType": "a3-ultragpu-8g", "rdma": True, "maxNodes": 4,
                              "zones": ["us-central1-b"]})
    cluster = GkeCluster("ml", {"region": "us-central1", "gpu_pools": [train]})
    cluster.node_pools["train"], cluster.gpu_pools  # components, and the GpuPools the Kubernetes layer takes

Grace-Blackwell racks (``a4x-highgpu-4g``) are DRA pools: GKE installs no driver there and its device plugin stays
off (``gke-no-default-nvidia-gpu-device-plugin`` and ``nvidia.com/gpu.present`` labels, GKE's DRA page), the nodes
run COS without GKE's arm64 taint, and each pool forms one NVLink domain under a workload policy its
`GkeGpuNodePool` creates (``compute.ResourcePolicy``, ``HIGH_THROUGHPUT``, accelerator topology ``1x72``) unless
``placement_policy_name`` names one.

Both components check their args when constructed (`gpu_platform.component_args`): a wrong value fails with one
line naming the component, its name and the argument path before anything is registered. The decisions live in
pure modules (``gcp_options``, ``gcp_pools``, ``gcp_networks``) and are unit-tested there. Property names and
values are those of pulumi_gcp 10.2.0 (``container.Cluster``, ``container.NodePool``, ``compute.*``).
"""

from dataclasses import replace
from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ... import catalog, control_plane, provisioning
from ...component_args import (
    DNS_LABEL,
    Args,
    KeywordArgs,
    Rule,
    at_least,
    between,
    choice,
    cidr,
    matching,
    offered_kubernetes_version,
)
from ...config_model import PlatformConfig
from ...errors import ConfigError
from ...kubernetes_base.common import child_opts, metadata
from ...pools import GpuPool, GpuPoolSpec
from ...upgrades.maintenance import MaintenanceWindowArgs, parse_window, window_as_args
from ...upgrades.pool_upgrade import PoolUpgradeArgs, argument_path, upgrade_from_args
from .. import missing_extra
from ..autoscaler_profile import GKE_PROFILE, gke_cluster_autoscaling
from ..handle import ClusterHandle
from . import networks as gcp_networks
from . import options as gcp_options
from . import pools as gcp_pools
from . import upgrade as gcp_upgrade
from .storage import storage_from_config

try:
    import pulumi_gcp as gcp
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None

# ---------------------------------------------------------------------------------------------------------
# Arguments


class GpuSubnetSpec(TypedDict):
    """One GPU NIC subnet; its name is also the Kubernetes ``Network`` pods attach."""

    name: str
    """Kubernetes network name (``vpc1``, ``gvnic-1``, ``rdma-0``); the GCE subnet is ``<cluster>-<name>-sub``."""
    cidr: str
    """Primary range of the subnet."""
    device_mode: str
    """``GKENetworkParamSet`` deviceMode: ``NetDevice`` (gVNIC) or ``RDMA``."""


class GpuVpcSpec(TypedDict, total=False):
    """One extra VPC for GPU NICs (see ``gcp_networks.plan_networks``)."""

    key: Required[str]
    """Suffix of the VPC name (``vpc1``, ``gvnic-1``, ``rdma``); the network is ``<cluster>-<key>-net``."""
    mtu: Required[int]
    """MTU: 8244 for TCPX/TCPXO VPCs, 8896 for A3 Ultra's."""
    roce_zone: str
    """Zone of the RoCE network profile for an RDMA VPC; empty for a gVNIC VPC."""
    subnets: Required[list[GpuSubnetSpec]]
    """The VPC's subnets."""


class AdditionalNodeNetwork(TypedDict):
    """One extra NIC of a node: the VPC and subnet it attaches to."""

    network: pulumi.Input[str]
    """VPC name."""
    subnetwork: pulumi.Input[str]
    """Subnetwork name."""


class GkeGpuPoolArgs(TypedDict, total=False):
    """One GPU pool of `GkeCluster` ``gpu_pools``: the cloud-neutral pool, then how GKE runs it. The cluster fills
    in ``cluster``, ``location`` and ``project``, the node service account, and for GPUDirect pools the extra
    NICs. `gpu_platform.pool_args("gcp", entry)` builds one from a stack file's ``nodePools`` entry."""

    pool: Required[GpuPoolSpec]
    """The pool (name, machine type, GPUs, sharing, labels, taints, sizes, Spot)."""
    node_locations: list[str]
    """Zones of the nodes, in the cluster's region. Default: the zonal cluster's zone, else GKE's choice."""
    zone_count: int
    """Zones the pool spans when ``node_locations`` is empty (``initial_node_count`` is per zone). Default: 1 on a
    zonal location, 3 on a regional one. Refused with ``node_locations``, which say it."""
    desired_nodes: Optional[int]
    """Initial size of the whole pool, between the pool's min and max nodes. Default: ``min_nodes``."""
    accelerator_type: str
    """GCE accelerator type of an N1 machine type (``nvidia-tesla-t4``...). Default: the catalog's for the pool's
    GPU model. A2/A3/G2 machine types carry their own GPUs and refuse it."""
    gpu_driver_version: str
    """``DEFAULT``, ``LATEST`` or ``INSTALLATION_DISABLED`` (the GPU Operator installs it). Default: ``DEFAULT``;
    ``INSTALLATION_DISABLED`` on a DRA pool (``pool.gpu_allocation`` ``dra``), which refuses the others: "Automatic
    GPU driver installation isn't supported with DRA" (GKE, "Prepare GKE infrastructure for DRA workloads")."""
    gke_sharing: bool
    """GKE's device plugin shares GPUs (``gpu_sharing_config`` for time-slicing/MPS). Default: true unless
    ``disable_gke_device_plugin``."""
    gke_partitioning: bool
    """GKE creates the MIG partitions (``gpu_partition_size``). Default: true."""
    disable_gke_device_plugin: bool
    """Label the nodes so GKE's device plugin stays off (NVIDIA's runs instead). Default: false; true on a DRA pool,
    which refuses false (NVIDIA's DRA driver hands out its GPUs)."""
    image_type: str
    """``COS_CONTAINERD`` or ``UBUNTU_CONTAINERD``. Default: COS, Ubuntu with ``INSTALLATION_DISABLED`` (the GPU
    Operator's driver container needs Ubuntu) except on arm64 pools (A4X), which stay on COS (Google's COS driver
    installer then installs the driver)."""
    service_account: Optional[pulumi.Input[str]]
    """Node service account email. Default: the cluster's node account (standalone: Compute Engine's default)."""
    reservation_affinity: Optional[str]
    """On-demand pools: ``NO_RESERVATION``, ``ANY_RESERVATION`` or ``ANY_RESERVATION_THEN_FAIL``. Default: GCE's.
    Other pools' affinity follows ``pool.provisioning``: ``reservation`` consumes ``pool.reservation``
    (``SPECIFIC_RESERVATION``; ``name`` or ``name/reservationBlocks/block``, required on machine types sold through
    reservations only, ``a4x-highgpu-4g``), Spot, ``flex-start`` and ``queued`` consume none (``NO_RESERVATION``)."""
    compact_placement: bool
    """COMPACT placement policy; needs exactly one zone. Default: true for RDMA pools, multi-node NVLink pools (which
    refuse false) and with ``placement_policy_name``."""
    placement_policy_name: Optional[str]
    """An existing compact resource policy (so refused with ``compact_placement: false``). Default on a multi-node
    NVLink pool (A4X): a workload policy the pool creates, ``HIGH_THROUGHPUT`` with accelerator topology ``1x72``
    (one NVLink domain, so at most 18 nodes)."""
    additional_networks: list[AdditionalNodeNetwork]
    """Extra NICs, in interface order (eth1 first). GPUDirect pools in `GkeCluster` get theirs from the cluster;
    a standalone GPUDirect `GkeGpuNodePool` must be given every one."""
    disk_size_gb: int
    """Boot disk size (>= 10). Default: 200."""
    disk_type: Optional[str]
    """Boot disk type (``pd-balanced``, ``pd-ssd``, ``hyperdisk-balanced``...). Default: GKE's choice for the
    machine type."""
    image_streaming: bool
    """GKE image streaming on the pool's nodes (``node_config.gcfs_config``): containers start while their image's
    data streams in, for images in Artifact Registry (other registries pull as before). Default: false."""
    tpu_topology: str
    """TPU machine types only: the slice topology (``2x2``, ``4x4``, ``2x2x1``), one the catalog lists for the machine
    type. A multi-host slice (more chips than one VM) gets COMPACT placement with this ``tpu_topology``, one zone,
    and a fixed size of chips / chips-per-VM nodes. Default: the machine type's single-host topology."""
    upgrade: PoolUpgradeArgs
    """How GKE upgrades the pool (``upgrade_settings``) and whether it may do so on its own. Surge (default) takes
    node counts: training pools ``max_surge`` 0 / ``max_unavailable`` 1, others 1 / 0; ``strategy`` ``blue-green``
    drains the old nodes in batches of ``max_unavailable`` (a count or a percentage; default 1 node) and soaks each
    batch and the old pool for ``soak_minutes``. ``automatic``: ``never`` (training pools' default) adds the
    cluster's ``NO_MINOR_OR_NODE_UPGRADES`` exclusion, which holds every pool of the cluster, so it is given on a
    `GkeCluster` ``gpu_pools`` entry (a `GkeGpuNodePool` composed on its own refuses it). ``drain_timeout_minutes``
    is refused (docs/upgrades.md)."""


class GkeGpuNodePoolArgs(GkeGpuPoolArgs, total=False):
    """Arguments of `GkeGpuNodePool`: a `GkeGpuPoolArgs` plus the cluster it joins. GPUDirect pools are best built
    through `GkeCluster` ``gpu_pools``, which plans their NIC networks."""

    cluster: Required[pulumi.Input[str]]
    """Cluster ID or name."""
    location: Required[pulumi.Input[str]]
    """Cluster location (region or zone)."""
    project: Optional[pulumi.Input[str]]
    """Project ID. Default: the provider's project."""
    node_version: Optional[pulumi.Input[str]]
    """Kubernetes version of the pool's nodes. `GkeCluster` sets its control plane's current version
    (``master_version``), so a new ``kubernetes_version`` upgrades the control plane first and then, in the same
    ``pulumi up``, every pool to it (at the pool's ``upgrade`` settings). Default: GKE's version for a new pool."""


class GkeClusterArgs(TypedDict, total=False):
    """Arguments of `GkeCluster`. Only ``region`` is required."""

    region: Required[str]
    """Region of the cluster, its subnetwork and the GPU NIC subnets."""
    project: Optional[pulumi.Input[str]]
    """Project ID. Default: the provider's project."""
    zone: Optional[str]
    """Make a zonal cluster in this zone of ``region``. Default: a regional cluster (control plane replicated
    across zones)."""
    cluster_name: str
    """GKE cluster name. Default: derived from the component name."""
    kubernetes_version: str
    """Minimum control-plane version (a minor such as ``1.34``); the release channel upgrades from there."""
    release_channel: str
    """``RAPID``, ``REGULAR`` (default), ``STABLE`` or ``EXTENDED``."""
    network: Optional[pulumi.Input[str]]
    """Existing VPC (name or self link). Default: a new VPC, subnetwork and (with private nodes) Cloud NAT."""
    subnetwork: Optional[pulumi.Input[str]]
    """Existing subnetwork with the Pod and Service secondary ranges; required with ``network``."""
    pods_range_name: str
    """Secondary range name for Pods. Default: ``pods``."""
    services_range_name: str
    """Secondary range name for Services. Default: ``services``."""
    node_cidr: str
    """Primary range of a new subnetwork. Default: ``10.0.0.0/20``. Refused with ``network``."""
    pod_cidr: str
    """Pod secondary range of a new subnetwork. Default: ``10.4.0.0/14``. Refused with ``network``."""
    service_cidr: str
    """Service secondary range of a new subnetwork. Default: ``10.8.0.0/20``. Refused with ``network``."""
    private_nodes: bool
    """Nodes without external IPs. Default: true."""
    api_allowed_cidrs: list[str]
    """IPv4 CIDRs allowed to reach the Kubernetes API's public IP endpoint (GKE authorized networks, Google Cloud's
    own public IPs not included). Default: empty, the public endpoint is off and the API is reached on its internal
    IP from inside the VPC (nodes, a VPN, a CI runner in the network) only. ``0.0.0.0/0`` opens it to the
    internet."""
    secrets_encryption: bool
    """Application-layer encryption of Kubernetes Secrets with a Cloud KMS key the cluster creates (a key ring and
    key in ``region``, rotated every 90 days, usable by GKE's service agent). Default: true."""
    system_machine_type: str
    """Machine type of the system (CPU) pool. Default: ``e2-standard-4``."""
    system_min_nodes: int
    """Minimum system nodes (whole pool, >= 0). Default: 1."""
    system_max_nodes: int
    """Maximum system nodes (whole pool, >= 1 and >= the minimum). Default: 3."""
    system_disk_size_gb: int
    """Boot disk of the system nodes (>= 10). Default: 100."""
    node_service_account: Optional[pulumi.Input[str]]
    """Service account email of the nodes. Default: a new account with GKE's least-privilege node roles."""
    managed_dcgm: bool
    """Turn on GKE-managed DCGM GPU metrics (needs GKE's driver and device plugin on every pool). Default: false."""
    multi_networking: bool
    """GKE multi-networking (needed for extra GPU NICs). Default: true when there are GPU NIC networks."""
    gpu_pools: list[GkeGpuPoolArgs]
    """GPU pools, one `GkeGpuNodePool` each (``node_pools``). GPUDirect (RDMA) pools among them get their NIC
    networks planned by the cluster: extra VPCs and subnets, ``GKENetworkParamSet``/``Network`` objects,
    multi-networking, each pool's ``additional_networks`` and its pods' interface annotations."""
    gpu_networks: list[GpuVpcSpec]
    """Explicit GPU NIC VPCs (plus their ``GKENetworkParamSet``/``Network`` objects) for pools built outside the
    cluster (attach them with `GkeCluster.attachments`). Refused together with GPUDirect pools in ``gpu_pools``,
    whose networks the cluster plans itself."""
    gpu_network_cidr: str
    """Range the GPU NIC subnets come from (a /19 or larger; the gVNIC VPCs' internal firewall allows it).
    Default: ``192.168.0.0/16``. Only with GPU NIC networks."""
    deletion_protection: bool
    """GKE deletion protection. Default: true."""
    autoscaling_profile: str
    """Cluster autoscaler profile: ``BALANCED`` (default; spare GPU nodes are kept longer, which slow-starting
    GPU nodes need) or ``OPTIMIZE_UTILIZATION``. Node auto-provisioning stays off."""
    gateway_api: bool
    """Turn on GKE's managed Gateway API controller (``gateway_api_config`` channel ``CHANNEL_STANDARD``: GKE installs
    and upgrades the standard Gateway API CRDs and implements the ``gke-l7-*`` GatewayClasses) and, in a new VPC, give
    the region the proxy-only subnet its regional classes need. Default: false."""
    lustre_csi_driver: bool
    """Turn on GKE's Managed Lustre CSI driver (``addons_config.lustre_csi_driver_config``), with its multi-NIC mode
    off when the cluster has GPU NIC networks (multi-NIC needs every standard NIC in one VPC). Default: false."""
    gcs_fuse_csi_driver: bool
    """Turn on GKE's Cloud Storage FUSE CSI driver (``addons_config.gcs_fuse_csi_driver_config``). Default: false."""
    maintenance_window: MaintenanceWindowArgs
    """When GKE may upgrade the cluster on its own (``maintenance_policy.recurring_window``): ``days``, ``start``
    (``HH:MM`` UTC), ``hours``. Default: Saturdays 00:00 UTC for 12 hours. GKE needs at least 48 hours of it in any
    32 days. While a ``gpu_pools`` entry resolves to ``automatic: never`` (training pools by default), the cluster
    also carries a ``NO_MINOR_OR_NODE_UPGRADES`` exclusion until the end of support of its minor: GKE then upgrades
    no node on its own, in the window or out of it."""
    proxy_only_cidr: str
    """Range of the proxy-only subnet (purpose ``REGIONAL_MANAGED_PROXY``, role ``ACTIVE``) created in a new VPC with
    ``gateway_api``. Default: ``10.9.0.0/23``. Refused with ``network`` (a VPC has one per region: the given
    network's own serves)."""


# ---------------------------------------------------------------------------------------------------------
# Argument rules (the checks a stack file gets, for programs that build the args themselves)

REGION = matching(r"[a-z]+-[a-z]+[0-9]+", "a GCP region such as us-central1")
ZONE = matching(gcp_options.ZONE.pattern.strip("^$"), "a zone such as us-central1-a")
RESOURCE_NAME = matching(gcp_options.RESOURCE_NAME.pattern.strip("^$"),
                         "a GCE resource name (lower-case letters, digits and '-', starting with a letter)")
CLUSTER_NAME = matching(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?",
                        "a GKE cluster name (lower-case letters, digits and '-', starting with a letter, at most 40)")
DISK_TYPE = matching(r"(pd|hyperdisk)-[a-z]+", "a boot disk type such as pd-balanced or hyperdisk-balanced")
AUTOSCALING_PROFILES = ("BALANCED", "OPTIMIZE_UTILIZATION")
POOL_DRIVER_VERSIONS = (*gcp_options.DRIVER_VERSIONS, gcp_options.DRIVER_DISABLED)
DEVICE_MODES = (gcp_networks.NET_DEVICE, gcp_networks.RDMA_DEVICE)


def _email_problem(value: str) -> Optional[str]:
    return None if gcp_options.EMAIL.match(value) else f"'{value}' is not a service account email"


def _project_problem(value: str) -> Optional[str]:
    return None if gcp_options.PROJECT_ID.match(value) else (
        f"'{value}' is not a project ID (6-30 lower-case letters, digits, '-')")


EMAIL = Rule(check=_email_problem)

POOL_RULES: dict[str, Rule] = {
    "node_locations[]": ZONE,
    "zone_count": at_least(1),
    "desired_nodes": at_least(0),
    "gpu_driver_version": choice(*POOL_DRIVER_VERSIONS),
    "image_type": choice(*gcp_options.IMAGE_TYPES),
    "service_account": EMAIL,
    "reservation_affinity": choice(*gcp_options.RESERVATION_AFFINITIES),
    "placement_policy_name": RESOURCE_NAME,
    "disk_size_gb": at_least(10),
    "disk_type": DISK_TYPE,
    "tpu_topology": matching(r"[1-9][0-9]*(x[1-9][0-9]*){1,2}", "a TPU topology such as 2x4 or 2x2x1"),
}
NODE_POOL_RULES: dict[str, Rule] = {**POOL_RULES, "project": Rule(check=_project_problem)}
CLUSTER_RULES: dict[str, Rule] = {
    "region": REGION,
    "project": Rule(check=_project_problem),
    "zone": ZONE,
    "cluster_name": CLUSTER_NAME,
    "kubernetes_version": offered_kubernetes_version("gcp"),
    "release_channel": choice(*gcp_options.RELEASE_CHANNELS),
    "pods_range_name": RESOURCE_NAME,
    "services_range_name": RESOURCE_NAME,
    "node_cidr": cidr(gcp_options.NODE_CIDR),
    "pod_cidr": cidr(gcp_options.POD_CIDR),
    "service_cidr": cidr(gcp_options.SERVICE_CIDR),
    "gpu_network_cidr": cidr(gcp_options.GPU_NETWORK_CIDR),
    "proxy_only_cidr": cidr(gcp_options.PROXY_ONLY_CIDR),
    "system_min_nodes": at_least(0),
    "system_max_nodes": at_least(1),
    "system_disk_size_gb": at_least(10),
    "node_service_account": EMAIL,
    "autoscaling_profile": choice(*AUTOSCALING_PROFILES),
    "api_allowed_cidrs": control_plane.ALLOWED_CIDRS,
    "api_allowed_cidrs[]": control_plane.CIDR,
    "gpu_networks[].key": DNS_LABEL,
    "gpu_networks[].mtu": between(1300, 8896),
    "gpu_networks[].roce_zone": ZONE,
    "gpu_networks[].subnets[].name": DNS_LABEL,
    "gpu_networks[].subnets[].cidr": cidr(gcp_options.GPU_SUBNET_CIDR),
    "gpu_networks[].subnets[].device_mode": choice(*DEVICE_MODES),
    **{f"gpu_pools[].{key}": rule for key, rule in POOL_RULES.items()},
}


def _region_of(location: Any) -> Optional[str]:
    """The region of a plain location string (a region or a zone); None for an Output."""
    if not isinstance(location, str):
        return None
    return location.rsplit("-", 1)[0] if gcp_options.ZONE.match(location) else location


def pool_zones(args: dict, location: Any) -> list[str]:
    """The zones a pool's nodes go to, as far as known: ``node_locations``, else a zonal location's zone."""
    zones = list(args.get("node_locations") or [])
    if not zones and isinstance(location, str) and gcp_options.ZONE.match(location):
        zones = [location]
    return zones


def uses_compact_placement(args: dict, pool: GpuPool) -> bool:
    """COMPACT placement: asked for, implied by a named policy, else on for RDMA and multi-node NVLink pools."""
    if args.get("placement_policy_name"):
        return True
    compact = args.get("compact_placement")
    return bool(pool.rdma_fabric) or pool.multi_node_nvlink if compact is None else compact


def pool_driver_version(args: dict, pool: GpuPool) -> str:
    """``gpu_driver_version`` of a checked pool entry: given, else ``INSTALLATION_DISABLED`` on DRA pools (GKE's
    DRA page), else ``DEFAULT``."""
    default = gcp_options.DRIVER_DISABLED if pool.dra else gcp_options.DEFAULT_DRIVER_VERSION
    return _get(args, "gpu_driver_version", default)


def pool_image_type(args: dict, pool: GpuPool) -> str:
    """``image_type`` of a checked pool entry: given, else COS, except Ubuntu for the GPU Operator's driver container
    (``INSTALLATION_DISABLED``) on amd64 pools; arm64 (A4X) pools stay on COS, where Google's COS driver installer
    installs the driver (`gcp_options` module docstring)."""
    if args.get("image_type"):
        return args["image_type"]
    if pool_driver_version(args, pool) == gcp_options.DRIVER_DISABLED and pool.architecture != catalog.ARM64:
        return gcp_options.UBUNTU
    return gcp_options.COS


def creates_workload_policy(args: dict, pool: GpuPool) -> bool:
    """A multi-node NVLink pool without ``placement_policy_name`` creates the workload policy that forms its NVLink
    domain (`gcp_pools.workload_policy`)."""
    return pool.multi_node_nvlink and not args.get("placement_policy_name")


def gpu_nic_count(pool: GpuPool) -> int:
    """Extra NICs a GPUDirect pool's nodes need (0 for other pools): the GPU NICs, plus A3 Ultra's gVNIC."""
    profile = gcp_networks.PROFILES.get(pool.rdma_fabric or "")
    if profile is None:
        return 0
    return pool.rdma_interfaces + (profile.extra_gvnic_networks if profile.gpu_nics_are_rdma else 0)


def default_accelerator(pool: GpuPool) -> str:
    """The GCE accelerator type of a pool: the machine type's own, or (N1) the catalog's for its GPU model."""
    shape = catalog.SHAPES[("gcp", pool.instance_type)]
    if shape.accelerator_type:
        return shape.accelerator_type
    return next(a for a in shape.attachable_accelerators if catalog.GCP_ATTACHABLE[a][0] == pool.gpu_model)


# Who reaches the API. The Cluster API moved these settings to ``controlPlaneEndpointsConfig``; pulumi_gcp (the
# Terraform provider's google_container_cluster) keeps the older input names and sends
# ``private_cluster_config.enable_private_endpoint`` as ``ipEndpointsConfig.enablePublicEndpoint`` (negated),
# ``master_authorized_networks_config`` as ``ipEndpointsConfig.authorizedNetworksConfig`` and ``enable_private_nodes``
# as ``networkConfig.defaultEnablePrivateNodes`` (expandControlPlaneEndpointsConfig in
# hashicorp/terraform-provider-google google/services/container/resource_container_cluster.go, since v6.11.0).
# ``ip_endpoints_config`` only turns IP access off altogether, which would leave nothing inside the VPC to reach.


def private_cluster_config(private_nodes: bool, public_endpoint: bool) -> Optional[dict[str, bool]]:
    """``private_cluster_config``: private nodes, and the public IP endpoint off unless someone may reach it. A
    cluster with public nodes and a public endpoint leaves the block out, as the provider's docs advise
    (``ClusterPrivateClusterConfigArgs.public_endpoint``). Public nodes with a private endpoint is a Private Service
    Connect cluster; the provider sets the endpoint in an update right after creating it."""
    if not private_nodes and public_endpoint:
        return None
    return {"enable_private_nodes": private_nodes, "enable_private_endpoint": not public_endpoint}


def master_authorized_networks(cidrs: list[str]) -> Optional[dict[str, Any]]:
    """``master_authorized_networks_config`` of a public endpoint: exactly the allowed CIDRs. Authorized networks
    otherwise also admit every Google Cloud VM's public IP; ``gcp_public_cidrs_access_enabled: false`` (gcloud's
    ``--no-enable-google-cloud-access``) closes that (cloud.google.com/kubernetes-engine/docs/how-to/
    authorized-networks). None without a public endpoint: the VPC reaches the internal endpoint."""
    if not cidrs:
        return None
    return {
        "cidr_blocks": [{"cidr_block": cidr, "display_name": f"apiAllowedCidrs[{i}]"} for i, cidr in enumerate(cidrs)],
        "gcp_public_cidrs_access_enabled": False,
    }


CLOSED_DNS_ENDPOINT = {"dns_endpoint_config": {"allow_external_traffic": False}}
"""``control_plane_endpoints_config``: GKE's DNS-based endpoint answers from any network that reaches Google APIs
(IAM-checked, cloud.google.com/kubernetes-engine/docs/concepts/network-isolation); it stays closed to user traffic,
so ``api_allowed_cidrs`` is the one way in from outside."""

SECRETS_KEY_ROTATION = "7776000s"
"""90 days, the rotation the CIS Google Cloud benchmark (1.10) asks of KMS keys; GKE keeps older versions to
decrypt what they encrypted."""
KMS_ENCRYPTER_DECRYPTER = "roles/cloudkms.cryptoKeyEncrypterDecrypter"


def gke_service_agent(project_number: str) -> str:
    """The IAM member of a project's GKE service agent, which encrypts and decrypts Secrets with the cluster's key
    (cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets)."""
    return f"serviceAccount:service-{project_number}@container-engine-robot.iam.gserviceaccount.com"


def database_encryption(key_name: Optional[pulumi.Input[str]]) -> dict[str, Any]:
    """``database_encryption``: ENCRYPTED with the key, or DECRYPTED without one. The provider keeps the last state
    when the block is left out, so turning encryption off must say DECRYPTED."""
    return {"state": "ENCRYPTED", "key_name": key_name} if key_name is not None else {"state": "DECRYPTED"}


def storage_addons(lustre: bool, gcs_fuse: bool, multi_networking: bool) -> Optional[dict[str, Any]]:
    """``addons_config`` for the stack's storage: GKE's Managed Lustre and Cloud Storage FUSE CSI drivers (None when
    neither is wanted, so clusters without storage keep their plan). The Lustre driver's multi-NIC mode (on by default
    from GKE 1.35.2-gke.1842000) needs every standard NIC of a node in one VPC, which GPUDirect nodes' extra gVNIC
    NICs are not ("Access existing Managed Lustre instances", multi-NIC support): it is turned off with GPU NIC
    networks. No legacy Lustre port: the stack's instances are created without ``gke_support_enabled``."""
    addons: dict[str, Any] = {}
    if lustre:
        addons["lustre_csi_driver_config"] = {"enabled": True, **({"disable_multi_nic": True} if multi_networking
                                                                   else {})}
    if gcs_fuse:
        addons["gcs_fuse_csi_driver_config"] = {"enabled": True}
    return addons or None


def image_streaming(args: dict) -> Optional[dict[str, bool]]:
    """``node_config.gcfs_config`` of a pool with ``image_streaming`` (None otherwise: the pool keeps its plan)."""
    return {"enabled": True} if args.get("image_streaming") else None


def check_pool_entry(checker: Args, args: dict, path: str, location: Any, standalone: bool) -> None:
    """Rules across the keys of one checked pool entry (``path``: ``""`` or ``gpu_pools[2]``) that joins a cluster
    at ``location`` (a region or zone; an Output skips the zone rules)."""
    def at(key: str) -> str:
        return f"{path}.{key}" if path else key

    pool = GpuPool.from_spec(args["pool"])
    if pool.name == gcp_options.SYSTEM_POOL_NAME:
        checker.fail(at("pool.name"), f"'{pool.name}' is GkeCluster's own CPU pool; choose another name")
    if len(pool.name) > gcp_options.NODE_POOL_NAME_MAX:
        checker.fail(at("pool.name"), f"GKE node pool names have at most {gcp_options.NODE_POOL_NAME_MAX} "
                                      f"characters, '{pool.name}' has {len(pool.name)}")
    shape = catalog.SHAPES[("gcp", pool.instance_type)]
    accelerator = args.get("accelerator_type")
    # Even its own type: the argument would change nothing (a TPU machine type's own is refused by `_check_tpu`).
    own = accelerator == shape.accelerator_type and pool.vendor == catalog.GOOGLE_TPU
    if accelerator is not None and shape.accelerator_type and not own:
        checker.fail(at("accelerator_type"), f"'{pool.instance_type}' carries its own GPUs "
                                             f"({shape.accelerator_type}); leave accelerator_type out")
    if accelerator is not None and not shape.accelerator_type and accelerator != default_accelerator(pool):
        checker.fail(at("accelerator_type"), f"pool '{pool.name}' has {pool.gpu_model} GPUs, which attach as "
                                             f"'{default_accelerator(pool)}', not '{accelerator}'")
    region = _region_of(location)
    for i, zone in enumerate(args.get("node_locations") or []):
        if region is not None and not zone.startswith(region + "-"):
            checker.fail(at(f"node_locations[{i}]"), f"zone '{zone}' is not in region '{region}'")
    if args.get("node_locations") and args.get("zone_count") is not None:
        checker.fail(at("zone_count"), "applies only without node_locations, which give the zones")
    desired = args.get("desired_nodes")
    if desired is not None and not pool.min_nodes <= desired <= pool.max_nodes:
        checker.fail(at("desired_nodes"), f"must be between the pool's min_nodes ({pool.min_nodes}) and max_nodes "
                                          f"({pool.max_nodes}), got {desired}")
    _check_capacity(checker, args, at, pool)
    _check_upgrade(checker, args, at, standalone)
    _check_tpu(checker, args, at, pool, location)
    if args.get("placement_policy_name") and args.get("compact_placement") is False:
        checker.fail(at("compact_placement"), "placement_policy_name is a compact placement policy; remove one")
    zones = pool_zones(args, location)
    if uses_compact_placement(args, pool) and len(zones) != 1 and (zones or region is not None):
        checker.fail(at("node_locations"), f"compact placement needs exactly one zone, got "
                                           f"{len(zones) or 'GKE default'}; set node_locations: ['{region}-a'] (a "
                                           "zone offering the GPU) or compact_placement: false")
    disabled = args.get("disable_gke_device_plugin", pool.dra)
    if disabled and args.get("gke_sharing") is True and pool.sharing.mode in gcp_pools.SHARING_STRATEGIES:
        checker.fail(at("gke_sharing"), "GKE's device plugin is off (disable_gke_device_plugin), so GKE cannot "
                                        "share the GPUs; NVIDIA's device plugin shares them instead")
    _check_dra(checker, args, at, pool)
    _check_rack(checker, args, at, pool, location)
    if pool.rdma_fabric and pool_driver_version(args, pool) == gcp_options.DRIVER_DISABLED:
        if pool.rdma_fabric != catalog.GPUDIRECT_RDMA:
            checker.fail(at("gpu_driver_version"), "GPUDirect on GKE needs GKE's driver (its NCCL plugin installers "
                                                   "use /home/kubernetes/bin/nvidia); use DEFAULT or LATEST")
        elif pool_image_type(args, pool) != gcp_options.COS:
            checker.fail(at("image_type"), "GPUDirect-RDMA without GKE's driver needs COS_CONTAINERD nodes, where "
                                           "Google's COS driver installer puts the driver in /home/kubernetes/bin/"
                                           "nvidia (the NCCL plugin's path)")
    nics, networks = gpu_nic_count(pool), args.get("additional_networks") or []
    if standalone and nics and not networks:
        checker.fail(at("additional_networks"), f"GPUDirect pool '{pool.name}' ({pool.instance_type}) needs {nics} "
                                                "GPU NIC networks; build it with GkeCluster(gpu_pools=[...]), which "
                                                "plans them")
    if nics and networks and len(networks) != nics:
        checker.fail(at("additional_networks"), f"{pool.instance_type} nodes have {nics} GPU NICs, got "
                                                f"{len(networks)} networks")
    if not standalone and nics and networks:
        checker.fail(at("additional_networks"), f"the cluster plans GPUDirect pool '{pool.name}''s NIC networks; "
                                                "remove additional_networks")


def _check_upgrade(checker: Args, args: dict, at: Any, standalone: bool) -> None:
    """``upgrade``: the stack key's rules, then what GKE refuses (`gcp_upgrade.check_pool_upgrade`), with the
    argument's snake_case paths. A pool composed on its own cannot hold node upgrades: GKE's exclusion is the
    cluster's."""
    if args.get("upgrade") is None:
        return
    try:
        gcp_upgrade.check_pool_upgrade(upgrade_from_args(args["upgrade"], at("upgrade")), at("upgrade"))
    except ConfigError as err:
        checker.fail(argument_path(err.path), err.problem)
    if standalone and "automatic" in args["upgrade"]:
        checker.fail(at("upgrade.automatic"), "GKE holds node upgrades with the cluster's maintenance exclusion; give "
                                              "automatic on the GkeCluster gpu_pools entry")


def pool_upgrade(args: dict, pool: GpuPool) -> Any:
    """The resolved `PoolUpgrade` of a checked pool entry (the role's defaults filled in)."""
    return upgrade_from_args(args.get("upgrade"), "upgrade").resolved(pool.role)


def _check_dra(checker: Args, args: dict, at: Any, pool: GpuPool) -> None:
    """A DRA pool as GKE's DRA page sets it up: no GKE driver, no GKE device plugin, no time-sharing, MIG or MPS
    ("Prepare GKE infrastructure for DRA workloads", Limitations)."""
    if not pool.dra:
        return
    driver = args.get("gpu_driver_version")
    if driver is not None and driver != gcp_options.DRIVER_DISABLED:
        checker.fail(at("gpu_driver_version"), f"GKE installs no driver on a DRA pool ('Automatic GPU driver "
                                               f"installation isn't supported with DRA'); use "
                                               f"{gcp_options.DRIVER_DISABLED} or leave it out")
    if args.get("disable_gke_device_plugin") is False:
        checker.fail(at("disable_gke_device_plugin"), "a DRA pool's GPUs are NVIDIA's DRA driver's, so GKE's device "
                                                      "plugin must stay off; remove it")
    if pool.sharing.mode != "exclusive":
        checker.fail(at("pool.sharing_mode"), f"GKE's DRA setup cannot use {pool.sharing.mode} (time-sharing, MIG and "
                                              "MPS are excluded: 'Prepare GKE infrastructure for DRA workloads'); use "
                                              "exclusive")


def _check_rack(checker: Args, args: dict, at: Any, pool: GpuPool, location: Any) -> None:
    """A multi-node NVLink pool is one NVLink domain placed by a workload policy (created in the region of its one
    zone unless ``placement_policy_name`` names one)."""
    shape = catalog.SHAPES[("gcp", pool.instance_type)]
    if not shape.multi_node_nvlink:
        return
    if args.get("compact_placement") is False:
        checker.fail(at("compact_placement"), f"{shape.name} forms its {shape.nvlink_domain_gpus}-GPU NVLink domain "
                                              "only under a workload policy, which Compute Engine requires for it; "
                                              "remove compact_placement: false")
    domain_nodes = shape.nvlink_domain_gpus // shape.gpu_count
    if pool.max_nodes > domain_nodes:
        checker.fail(at("pool.max_nodes"), f"each {shape.name} node pool is one {shape.nvlink_domain_gpus}-GPU NVLink "
                                           f"domain (workload policy accelerator topology "
                                           f"{gcp_pools.nvlink_topology(shape)}: {domain_nodes} VMs), got "
                                           f"{pool.max_nodes}; add a pool per domain")
    if creates_workload_policy(args, pool) and not pool_zones(args, location) and _region_of(location) is None:
        checker.fail(at("node_locations"), f"the workload policy of {shape.name} pool '{pool.name}' is created in "
                                           "its zone's region; set node_locations to that one zone")


def _check_tpu(checker: Args, args: dict, at: Any, pool: GpuPool, location: Any) -> None:
    """A TPU pool's topology is one its machine type forms; a multi-host slice has chips / chips-per-VM nodes, fixed,
    in one zone; GPU-only keys are refused. Other pools refuse ``tpu_topology``."""
    shape = catalog.SHAPES[("gcp", pool.instance_type)]
    topology = args.get("tpu_topology")
    if not shape.tpu_topologies:
        if topology is not None:
            checker.fail(at("tpu_topology"), f"applies only to TPU machine types, not '{pool.instance_type}'")
        return
    for key in ("accelerator_type", "gpu_driver_version", "compact_placement", "placement_policy_name",
                "additional_networks"):
        if args.get(key) is not None:
            checker.fail(at(key), f"does not apply to TPU machine type '{pool.instance_type}'")
    chosen = topology or shape.tpu_topologies[0]
    if chosen not in shape.tpu_topologies:
        checker.fail(at("tpu_topology"), f"'{chosen}' is not a TPU topology of {shape.name} ({shape.gpu_count} chips "
                                         f"per VM); use one of {', '.join(shape.tpu_topologies[:8])}")
    hosts = catalog.tpu_hosts(shape, chosen)
    if hosts > 1 and (pool.min_nodes != hosts or pool.max_nodes != hosts):
        checker.fail(at("pool.max_nodes"), f"a {chosen} slice of {shape.name} is {hosts} nodes, created together: "
                                           f"set min_nodes and max_nodes to {hosts}, got "
                                           f"{pool.min_nodes}-{pool.max_nodes}")
    zones = pool_zones(args, location)
    if hosts > 1 and len(zones) != 1 and (zones or _region_of(location) is not None):
        checker.fail(at("node_locations"), f"a multi-host TPU slice lives in one zone, got "
                                           f"{len(zones) or 'GKE default'}; set node_locations to one zone")


_COMPONENT_KEYS = {"provisioning": "pool.provisioning", "reservation": "pool.reservation",
                   "min_nodes": "pool.min_nodes", "max_nodes": "pool.max_nodes", "spot": "pool.spot"}


def _check_capacity(checker: Args, args: dict, at: Any, pool: GpuPool) -> None:
    """How the pool's VMs are bought (``pool.provisioning``): a mode GKE has, a reservation exactly with
    ``reservation``, and the rules GKE imposes on each (`gcp_options.capacity_problem`)."""
    spec = args["pool"]
    shape = catalog.SHAPES[("gcp", pool.instance_type)]
    for problem in (provisioning.spot_alias_problem(spec.get("spot"), spec.get("provisioning")),
                    provisioning.mode_problem("gcp", pool.provisioning),
                    provisioning.reservation_problem(pool.provisioning, pool.reservation),
                    gcp_options.capacity_problem(
                        mode=pool.provisioning, instance_type=pool.instance_type, min_nodes=pool.min_nodes,
                        max_nodes=pool.max_nodes, desired_nodes=args.get("desired_nodes"),
                        affinity=args.get("reservation_affinity"),
                        compact=uses_compact_placement(args, pool) and not shape.tpu_topologies,
                        spell=lambda key: _COMPONENT_KEYS.get(key, key))):
        if problem is not None:
            checker.fail(at(_COMPONENT_KEYS.get(problem[0], problem[0])), problem[1])


def _refuse_reservations(checker: Args, raw: Any, path: str) -> None:
    """``reservations`` (a list) became ``pool.provisioning`` ``reservation`` with ``pool.reservation``."""
    if isinstance(raw, dict) and "reservations" in raw:
        checker.fail(f"{path}.reservations" if path else "reservations",
                     "replaced by pool.provisioning 'reservation' with pool.reservation '<name>' (or "
                     "'<name>/reservationBlocks/<block>')")


def check_node_pool_args(name: str, raw: Any) -> dict[str, Any]:
    """`GkeGpuNodePool`'s args, checked and normalised (`ConfigError` naming the argument otherwise)."""
    checker = Args("GkeGpuNodePool", name, cloud="gcp")
    _refuse_reservations(checker, raw, "")
    args = checker.check(raw, GkeGpuNodePoolArgs, NODE_POOL_RULES)
    check_pool_entry(checker, args, "", args["location"], standalone=True)
    return args


def check_cluster_args(name: str, raw: Any) -> dict[str, Any]:
    """`GkeCluster`'s args, checked and normalised, every ``gpu_pools`` entry included."""
    checker = Args("GkeCluster", name, cloud="gcp")
    for i, entry in enumerate(raw.get("gpu_pools") or [] if isinstance(raw, dict) else []):
        _refuse_reservations(checker, entry, f"gpu_pools[{i}]")
    args = checker.check(raw, GkeClusterArgs, CLUSTER_RULES)
    region = args["region"]
    zone = args.get("zone")
    if zone and not zone.startswith(region + "-"):
        checker.fail("zone", f"zone '{zone}' is not in region '{region}'")
    if bool(args.get("network")) != bool(args.get("subnetwork")):
        missing = "subnetwork" if args.get("network") else "network"
        checker.fail(missing, "an existing VPC needs both network and subnetwork")
    for key in ("node_cidr", "pod_cidr", "service_cidr", "proxy_only_cidr"):
        if args.get("network") and key in args:
            checker.fail(key, "applies only to a new VPC; the given subnetwork has its own ranges")
    if "proxy_only_cidr" in args and not args.get("gateway_api"):
        checker.fail("proxy_only_cidr", "takes effect only with gateway_api: true (the regional Gateway's proxies)")
    minimum, maximum = args.get("system_min_nodes", 1), args.get("system_max_nodes", 3)
    if minimum > maximum:
        checker.fail("system_min_nodes", f"must be <= system_max_nodes ({maximum}), got {minimum}")
    pools = args.get("gpu_pools") or []
    checker.unique([p["pool"]["name"] for p in pools], "gpu_pools", "pool name")
    for i, entry in enumerate(pools):
        check_pool_entry(checker, entry, f"gpu_pools[{i}]", zone or region, standalone=False)
    planned = [(i, e) for i, e in enumerate(pools) if gpu_nic_count(GpuPool.from_spec(e["pool"]))]
    if planned and args.get("gpu_networks"):
        checker.fail("gpu_networks", f"the cluster plans the NIC networks of GPUDirect pool "
                                     f"'{planned[0][1]['pool']['name']}' (gpu_pools[{planned[0][0]}]); give "
                                     "gpu_networks only for pools built outside the cluster")
    has_networks = bool(planned or args.get("gpu_networks"))
    if has_networks and args.get("multi_networking") is False:
        checker.fail("multi_networking", "GPU NIC networks need GKE multi-networking; remove multi_networking: false")
    if "gpu_network_cidr" in args and not has_networks:
        checker.fail("gpu_network_cidr", "no GPUDirect pool or gpu_networks takes GPU NIC subnets from it")
    _check_rdma_zone(checker, pools, zone or region)
    _check_maintenance(checker, args, pools)
    if args.get("managed_dcgm"):
        for i, entry in enumerate(pools):
            if entry.get("disable_gke_device_plugin") or entry.get("gpu_driver_version") == gcp_options.DRIVER_DISABLED:
                checker.fail("managed_dcgm", f"GKE's managed DCGM metrics need GKE's driver and device plugin; "
                                             f"gpu_pools[{i}] turns them off")
    return args


def _check_maintenance(checker: Args, args: dict, pools: list[dict]) -> None:
    """A ``maintenance_window`` GKE accepts and one ``automatic`` for the cluster's nodes
    (`gcp_upgrade.cluster_automatic`)."""
    try:
        window = parse_window(args.get("maintenance_window"), "maintenance_window")
        problem = gcp_upgrade.window_problem(window)
        if problem is not None:
            raise ConfigError("maintenance_window", problem)
        cluster_automatic(pools)
    except ConfigError as err:
        checker.fail(err.path, err.problem)


def cluster_automatic(pools: list[dict]) -> str:
    """``window`` or ``never`` for the whole cluster, from its checked ``gpu_pools`` entries."""
    return gcp_upgrade.cluster_automatic(
        [(p["pool"]["name"], upgrade_from_args(p.get("upgrade"), "upgrade"), p["pool"].get("role", "general"))
         for p in pools], lambda i: f"gpu_pools[{i}].upgrade.automatic")


def _check_rdma_zone(checker: Args, pools: list[dict], location: str) -> None:
    """A3 Ultra pools share one zonal RoCE VPC: one zone each, the same for all."""
    first: Optional[tuple[str, int]] = None
    for i, entry in enumerate(pools):
        pool = GpuPool.from_spec(entry["pool"])
        if pool.rdma_fabric != catalog.GPUDIRECT_RDMA:
            continue
        zones = pool_zones(entry, location)
        if len(zones) != 1:
            checker.fail(f"gpu_pools[{i}].node_locations", "GPUDirect-RDMA uses a zonal RoCE network; set exactly "
                                                           "one zone")
        if first is None:
            first = (zones[0], i)
        elif zones[0] != first[0]:
            checker.fail(f"gpu_pools[{i}].node_locations", "every GPUDirect-RDMA pool shares one RoCE network; use "
                                                           f"the zone of gpu_pools[{first[1]}] ({first[0]})")


def _get(args: dict, key: str, default: Any = None) -> Any:
    value = args.get(key)
    return default if value is None else value


# ---------------------------------------------------------------------------------------------------------
# GkeCluster


class GkeCluster(pulumi.ComponentResource, metaclass=KeywordArgs):
    """A GKE Standard cluster for GPU work: VPC-native with Dataplane V2 (which enforces NetworkPolicies) and
    Workload Identity (the GKE metadata server on every pool), the API's public endpoint off unless
    ``api_allowed_cidrs`` names who may reach it, Secrets envelope-encrypted with a Cloud KMS key it creates, the
    default pool replaced by a small system pool, and (for GPUDirect) the extra NIC VPCs with multi-networking and
    the in-cluster ``GKENetworkParamSet``/``Network`` objects pods attach them by."""

    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, args: GkeClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = check_cluster_args(name, args)  # type: ignore[assignment]  # before anything is registered
        super().__init__("gpuplatform:index:GkeCluster", name, {}, opts)
        self._opts = opts
        region = args["region"]
        zone = args.get("zone")
        self.location = zone or region
        self.project: pulumi.Output[str] = pulumi.Output.from_input(args["project"]) if args.get("project") else (
            gcp.organizations.get_client_config_output(opts=pulumi.InvokeOptions(parent=self)).project)
        cluster_name = _get(args, "cluster_name", gcp_pools.resource_name(name))
        prefix = gcp_pools.resource_name(cluster_name, 30)
        pool_entries = [self._located(entry, zone) for entry in args.get("gpu_pools") or []]
        gpu_cidr = _get(args, "gpu_network_cidr", gcp_options.GcpClusterOptions.gpu_network_cidr)
        self.network_plan = gcp_networks.plan_networks(_rdma_pools(pool_entries, self.location), gpu_cidr)
        gpu_networks = list(_get(args, "gpu_networks", [])) or [_vpc_spec(v) for v in self.network_plan.vpcs]
        pods_range = _get(args, "pods_range_name", "pods")
        services_range = _get(args, "services_range_name", "services")

        network_ref, subnetwork_ref = self._node_network(name, prefix, region, args, pods_range, services_range)
        gateway_api = _get(args, "gateway_api", False)
        self.proxy_only_subnetwork: Optional[gcp.compute.Subnetwork] = None
        if gateway_api and self.network is not None:
            # GKE's regional Gateway classes run their Envoy proxies in this subnet (one active per region and VPC).
            self.proxy_only_subnetwork = gcp.compute.Subnetwork(
                f"{name}-proxy-only", name=f"{prefix}-proxy-only", project=self.project, region=region,
                network=self.network.id,
                ip_cidr_range=_get(args, "proxy_only_cidr", gcp_options.DEFAULT_PROXY_ONLY_CIDR),
                purpose="REGIONAL_MANAGED_PROXY", role="ACTIVE", opts=self._child())
        self._node_identity(name, prefix, cluster_name, args)
        self._gpu_vpcs(name, prefix, region, gpu_networks, gpu_cidr)
        self._secrets_key(name, region, _get(args, "secrets_encryption", True))
        self.api_allowed_cidrs: list[str] = list(_get(args, "api_allowed_cidrs", []))
        private_nodes = _get(args, "private_nodes", True)

        managed_dcgm = _get(args, "managed_dcgm", False)
        self.multi_networking: bool = _get(args, "multi_networking", bool(gpu_networks))
        multi_networking = self.multi_networking
        self.cluster = gcp.container.Cluster(
            f"{name}-cluster",
            name=cluster_name,
            project=self.project,
            location=self.location,
            network=network_ref,
            subnetwork=subnetwork_ref,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy={"cluster_secondary_range_name": pods_range,
                                  "services_secondary_range_name": services_range},
            # Dataplane V2: network policy enforcement, and a precondition of multi-networking.
            datapath_provider="ADVANCED_DATAPATH",
            gateway_api_config={"channel": "CHANNEL_STANDARD"} if gateway_api else None,
            addons_config=storage_addons(_get(args, "lustre_csi_driver", False),
                                         _get(args, "gcs_fuse_csi_driver", False), multi_networking),
            enable_multi_networking=True if multi_networking else None,
            release_channel={"channel": _get(args, "release_channel", "REGULAR")},
            min_master_version=args.get("kubernetes_version"),
            # Workload Identity: pods get Google credentials through the GKE metadata server (every pool sets
            # GKE_METADATA), never the node's service account.
            workload_identity_config={"workload_pool": self.project.apply(lambda p: f"{p}.svc.id.goog")},
            private_cluster_config=private_cluster_config(private_nodes, bool(self.api_allowed_cidrs)),
            master_authorized_networks_config=master_authorized_networks(self.api_allowed_cidrs),
            control_plane_endpoints_config=CLOSED_DNS_ENDPOINT,
            database_encryption=database_encryption(self.secrets_key.id if self.secrets_key else None),
            monitoring_config={"enable_components": ["SYSTEM_COMPONENTS", "DCGM"],
                               "managed_prometheus": {"enabled": True}} if managed_dcgm else None,
            # The default pool is replaced by the system pool below; it still boots once, with our identity.
            remove_default_node_pool=True,
            initial_node_count=1,
            node_config={"service_account": self.node_service_account, "oauth_scopes": gcp_pools.OAUTH_SCOPES},
            deletion_protection=_get(args, "deletion_protection", True),
            # When GKE may upgrade on its own; the exclusion holds every node while a pool says never.
            maintenance_policy=gcp_upgrade.maintenance_policy(
                parse_window(args.get("maintenance_window"), "maintenance_window"),
                cluster_automatic(list(args.get("gpu_pools") or []))),
            cluster_autoscaling={**gke_cluster_autoscaling(),
                                 "autoscaling_profile": _get(args, "autoscaling_profile", GKE_PROFILE)},
            # GKE's service agent must be able to use the key before a cluster is created with it
            # (encrypting-secrets: grant the role, then create the cluster).
            opts=self._child(*self.service_account_roles, *([self.nat] if self.nat else []),
                             *([self.secrets_key_access] if self.secrets_key_access else [])),
        )
        system_zones = 1 if zone else gcp_options.REGIONAL_DEFAULT_ZONES
        system_min = _get(args, "system_min_nodes", 1)
        self.system_pool = gcp.container.NodePool(
            f"{name}-system",
            name=gcp_options.SYSTEM_POOL_NAME,
            project=self.project,
            cluster=self.cluster.id,
            location=self.location,
            version=self.cluster.master_version,
            initial_node_count=max(1, -(-system_min // system_zones)),
            autoscaling={"total_min_node_count": system_min,
                         "total_max_node_count": _get(args, "system_max_nodes", 3)},
            management={"auto_repair": True, "auto_upgrade": True},
            node_config={
                "machine_type": _get(args, "system_machine_type", "e2-standard-4"),
                "disk_size_gb": _get(args, "system_disk_size_gb", 100),
                "image_type": "COS_CONTAINERD",
                "service_account": self.node_service_account,
                "oauth_scopes": gcp_pools.OAUTH_SCOPES,
                "workload_metadata_config": {"mode": "GKE_METADATA"},
                "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
            },
            opts=self._child(),
        )

        self.cluster_name = self.cluster.name
        # Without a public endpoint "the cluster's private endpoint is used as the cluster endpoint" (pulumi_gcp,
        # enable_private_endpoint): the program that deploys the Kubernetes layer must run inside the VPC or a
        # network connected to it.
        self.endpoint = self.cluster.endpoint
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(
            self.cluster.name, self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate,
        ).apply(lambda a: gcp_pools.kubeconfig(a[0], a[1], a[2])))
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, enable_server_side_apply=True,
                                     opts=self._child())
        self._network_objects(name, gpu_networks)
        self._gpu_node_pools(name, pool_entries)
        self.register_outputs({
            "cluster_name": self.cluster_name,
            "endpoint": self.endpoint,
            "kubeconfig": self.kubeconfig,
            "location": self.location,
            "gpu_pools": [p.name for p in self.gpu_pools],
            "node_pool_names": {n: c.node_pool_name for n, c in self.node_pools.items()},
        })

    @staticmethod
    def _located(entry: dict, zone: Optional[str]) -> dict:
        """A pool entry with the zones the cluster decides: a zonal cluster's zone, else the three GKE spreads a
        regional cluster's pools over (``initial_node_count`` is per zone)."""
        if entry.get("node_locations"):
            return entry
        if zone:
            return {**entry, "node_locations": [zone]}
        return {**entry, "zone_count": _get(entry, "zone_count", gcp_options.REGIONAL_DEFAULT_ZONES)}

    def _gpu_node_pools(self, name: str, entries: list[dict]) -> None:
        """One `GkeGpuNodePool` per entry; GPUDirect pools get the planned NICs and their pods' annotations."""
        # Python-only attributes (components and GpuPools have no schema form), as on EksCluster.
        self.node_pools: dict[str, GkeGpuNodePool] = {}
        for entry in entries:
            pool = GpuPool.from_spec(entry["pool"])
            attach = self.network_plan.attachments.get(pool.name, ())
            extra: dict[str, Any] = {}
            if attach:
                pool = replace(pool, rdma_pod_annotations=tuple(sorted(gcp_networks.pod_annotations(attach).items())))
                extra["additional_networks"] = self.attachments(attach)
            if entry.get("upgrade") and "automatic" in entry["upgrade"]:
                # The cluster's maintenance policy carries it (`cluster_automatic`); the pool has no such input.
                extra["upgrade"] = {k: v for k, v in entry["upgrade"].items() if k != "automatic"}
            self.node_pools[pool.name] = GkeGpuNodePool(f"{name}-{pool.name}", GkeGpuNodePoolArgs(**{
                "service_account": self.node_service_account,
                **entry,
                **extra,
                "pool": pool.spec(),
                "cluster": self.cluster.id,
                "location": self.location,
                "project": self.project,
                "node_version": self.cluster.master_version,
            }), opts=self._child(aliases=[_former_parent(self._opts)]))
        self.gpu_pools: list[GpuPool] = [component.pool for component in self.node_pools.values()]

    def _child(self, *depends_on: Any, **extra: Any) -> pulumi.ResourceOptions:
        return child_opts(self, self._opts, list(depends_on), **extra)

    def _node_network(self, name: str, prefix: str, region: str, args: GkeClusterArgs, pods_range: str,
                      services_range: str) -> tuple[pulumi.Input[str], pulumi.Input[str]]:
        """The given network, or a new VPC-native subnetwork with Pod/Service ranges (+ Cloud NAT for private
        nodes, which have no external IPs but must pull images)."""
        self.network: Optional[gcp.compute.Network] = None
        self.subnetwork: Optional[gcp.compute.Subnetwork] = None
        self.router: Optional[gcp.compute.Router] = None
        self.nat: Optional[gcp.compute.RouterNat] = None
        if args.get("network"):
            return args["network"], args["subnetwork"]
        self.network = gcp.compute.Network(
            f"{name}-vpc", name=f"{prefix}-vpc", project=self.project, auto_create_subnetworks=False,
            routing_mode="REGIONAL", opts=self._child())
        self.subnetwork = gcp.compute.Subnetwork(
            f"{name}-subnet", name=f"{prefix}-nodes", project=self.project, region=region,
            network=self.network.id, ip_cidr_range=_get(args, "node_cidr", "10.0.0.0/20"),
            private_ip_google_access=True,
            secondary_ip_ranges=[
                {"range_name": pods_range, "ip_cidr_range": _get(args, "pod_cidr", "10.4.0.0/14")},
                {"range_name": services_range, "ip_cidr_range": _get(args, "service_cidr", "10.8.0.0/20")},
            ],
            opts=self._child())
        if _get(args, "private_nodes", True):
            self.router = gcp.compute.Router(
                f"{name}-router", name=f"{prefix}-router", project=self.project, region=region,
                network=self.network.id, opts=self._child())
            self.nat = gcp.compute.RouterNat(
                f"{name}-nat", name=f"{prefix}-nat", project=self.project, region=region,
                router=self.router.name, nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES", opts=self._child())
        return self.network.self_link, self.subnetwork.self_link

    def _secrets_key(self, name: str, region: str, enabled: bool) -> None:
        """The Cloud KMS key ring and key that envelope-encrypt the cluster's Secrets, and GKE's use of the key.

        GKE wants the key in the cluster's location (cloud.google.com/kubernetes-engine/docs/how-to/
        encrypting-secrets); KMS has regions, not zones, so a zonal cluster's key is in its region. Key rings and
        keys cannot be deleted from a project: destroying them only drops them from the stack and schedules the
        key's versions for destruction (30 days by default, ``destroy_scheduled_duration``), after which anything
        they encrypted is lost. A fixed name would therefore collide when a stack is created again, so the names are
        Pulumi's auto-names (a random suffix kept in the stack's state: stable for the life of the stack). The
        logical names must never change without an alias, or the key is replaced."""
        self.secrets_key_ring: Optional[gcp.kms.KeyRing] = None
        self.secrets_key: Optional[gcp.kms.CryptoKey] = None
        self.secrets_key_access: Optional[gcp.kms.CryptoKeyIAMMember] = None
        if not enabled:
            return
        self.secrets_key_ring = gcp.kms.KeyRing(
            f"{name}-secrets", project=self.project, location=region, opts=self._child())
        self.secrets_key = gcp.kms.CryptoKey(
            f"{name}-secrets-key", key_ring=self.secrets_key_ring.id, purpose="ENCRYPT_DECRYPT",
            rotation_period=SECRETS_KEY_ROTATION, opts=self._child())
        project_number = gcp.organizations.get_project_output(
            project_id=self.project, opts=pulumi.InvokeOptions(parent=self)).number
        self.secrets_key_access = gcp.kms.CryptoKeyIAMMember(
            f"{name}-secrets-key-gke", crypto_key_id=self.secrets_key.id, role=KMS_ENCRYPTER_DECRYPTER,
            member=project_number.apply(gke_service_agent), opts=self._child())

    def _node_identity(self, name: str, prefix: str, cluster_name: str, args: GkeClusterArgs) -> None:
        """The nodes' service account: the given one, or a new one with GKE's least-privilege node roles."""
        self.service_account: Optional[gcp.serviceaccount.Account] = None
        self.service_account_roles: list[gcp.projects.IAMMember] = []
        if args.get("node_service_account"):
            self.node_service_account: pulumi.Output[str] = pulumi.Output.from_input(args["node_service_account"])
            return
        self.service_account = gcp.serviceaccount.Account(
            f"{name}-nodes", account_id=gcp_pools.resource_name(f"{prefix}-nodes", 30), project=self.project,
            display_name=f"GKE nodes of {cluster_name}", opts=self._child())
        self.node_service_account = self.service_account.email
        member = self.service_account.email.apply(lambda email: f"serviceAccount:{email}")
        self.service_account_roles = [
            gcp.projects.IAMMember(f"{name}-nodes-{role.split('/')[-1].replace('.', '-')}", project=self.project,
                                   role=role, member=member, opts=self._child())
            for role in gcp_pools.NODE_SERVICE_ACCOUNT_ROLES
        ]

    def _gpu_vpcs(self, name: str, prefix: str, region: str, gpu_networks: list[GpuVpcSpec], gpu_cidr: str) -> None:
        """GPUDirect NIC VPCs: a subnet per GPU NIC network; gVNIC VPCs allow traffic among the GPU subnets."""
        self.gpu_networks: dict[str, gcp.compute.Network] = {}
        self.gpu_subnetworks: dict[str, gcp.compute.Subnetwork] = {}
        self.gpu_firewalls: list[gcp.compute.Firewall] = []
        for vpc in gpu_networks:
            roce_zone = vpc.get("roce_zone") or ""
            profile = self.project.apply(lambda p, z=roce_zone: gcp_networks.roce_network_profile(p, z))
            network = gcp.compute.Network(
                f"{name}-{vpc['key']}-net", name=f"{prefix}-{vpc['key']}-net", project=self.project,
                auto_create_subnetworks=False, mtu=vpc["mtu"], routing_mode="REGIONAL",
                network_profile=profile if roce_zone else None, opts=self._child())
            self.gpu_networks[vpc["key"]] = network
            for subnet in vpc["subnets"]:
                self.gpu_subnetworks[subnet["name"]] = gcp.compute.Subnetwork(
                    f"{name}-{subnet['name']}-sub", name=f"{prefix}-{subnet['name']}-sub", project=self.project,
                    region=region, network=network.id, ip_cidr_range=subnet["cidr"], opts=self._child())
            if not roce_zone:
                self.gpu_firewalls.append(gcp.compute.Firewall(
                    f"{name}-{vpc['key']}-internal", name=f"{prefix}-{vpc['key']}-internal", project=self.project,
                    network=network.id, direction="INGRESS", source_ranges=[gpu_cidr],
                    allows=[{"protocol": "tcp", "ports": ["0-65535"]}, {"protocol": "udp", "ports": ["0-65535"]},
                            {"protocol": "icmp"}],
                    opts=self._child()))

    def _network_objects(self, name: str, gpu_networks: list[GpuVpcSpec]) -> None:
        """A ``GKENetworkParamSet`` + ``Network`` per GPU NIC subnet (CRDs GKE installs with multi-networking)."""
        self.network_objects: list[k8s.apiextensions.CustomResource] = []
        for vpc in gpu_networks:
            for spec in vpc["subnets"]:
                subnet = gcp_networks.GpuSubnet(spec["name"], spec["cidr"], spec["device_mode"])
                params = k8s.apiextensions.CustomResource(
                    f"{name}-{subnet.name}-params",
                    api_version=gcp_networks.API_VERSION,
                    kind="GKENetworkParamSet",
                    metadata=metadata(subnet.name),
                    spec=gcp_networks.network_param_set(
                        subnet, self.gpu_networks[vpc["key"]].name, self.gpu_subnetworks[subnet.name].name),
                    opts=self._child(self.cluster, provider=self.provider),
                )
                network_object = k8s.apiextensions.CustomResource(
                    f"{name}-{subnet.name}-network",
                    api_version=gcp_networks.API_VERSION,
                    kind="Network",
                    metadata=metadata(subnet.name),
                    spec=gcp_networks.network_spec(subnet),
                    opts=self._child(params, provider=self.provider),
                )
                self.network_objects += [params, network_object]

    def attachments(self, subnets: tuple[tuple[str, str], ...]) -> list[AdditionalNodeNetwork]:
        """``additional_networks`` for a pool attaching ``subnets`` = ((VPC key, subnet name), ...)."""
        return [AdditionalNodeNetwork(network=self.gpu_networks[vpc].name, subnetwork=self.gpu_subnetworks[sub].name)
                for vpc, sub in subnets]


# ---------------------------------------------------------------------------------------------------------
# GkeGpuNodePool


class GkeGpuNodePool(pulumi.ComponentResource, metaclass=KeywordArgs):
    """One GPU node pool: accelerators and driver from the catalog, the GPU taint and the platform's labels set
    explicitly, GKE sharing/MIG when GKE runs the device plugin, autoscaling, how the VMs are bought
    (``pool.provisioning``: Spot, a named reservation, or Dynamic Workload Scheduler's flex-start and queued
    provisioning, `gcp_options.capacity_problem`), and COMPACT placement plus the extra GPU NICs for GPUDirect
    pools. ``pool`` is the `GpuPool` the Kubernetes layer takes: a queued pool's carries GKE's
    ``cloud.google.com/gke-queued`` taint."""

    node_pool_id: pulumi.Output[str]
    node_pool_name: pulumi.Output[str]

    def __init__(self, name: str, args: GkeGpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = check_node_pool_args(name, args)  # type: ignore[assignment]  # before anything is registered
        super().__init__("gpuplatform:index:GkeGpuNodePool", name, {}, opts)
        self.pool = GpuPool.from_spec(args["pool"])
        pool = self.pool
        zones = list(_get(args, "node_locations", []))
        driver = pool_driver_version(args, pool)
        disabled_plugin = _get(args, "disable_gke_device_plugin", pool.dra)
        affinity, reservations = gcp_pools.consumed_reservation(pool, args.get("reservation_affinity"))
        shape = catalog.SHAPES[("gcp", pool.instance_type)]
        if shape.tpu_topologies:
            self._tpu_pool(name, args, pool, shape, zones, affinity, reservations, opts)
            return
        node_config: dict[str, Any] = {
            "machine_type": pool.instance_type,
            "image_type": pool_image_type(args, pool),
            "disk_size_gb": _get(args, "disk_size_gb", 200),
            "disk_type": args.get("disk_type"),
            "guest_accelerators": [gcp_pools.guest_accelerator(
                pool, _get(args, "accelerator_type", default_accelerator(pool)), driver,
                _get(args, "gke_sharing", not disabled_plugin), _get(args, "gke_partitioning", True))],
            "taints": gcp_pools.taints(pool),
            "taint_config": gcp_pools.taint_config(pool),
            "labels": gcp_pools.node_labels(pool, disabled_plugin),
            "spot": pool.spot or None,
            **gcp_pools.dws_node_config(pool),
            "reservation_affinity": gcp_pools.reservation_affinity(affinity, reservations),
            "service_account": args.get("service_account"),
            "oauth_scopes": gcp_pools.OAUTH_SCOPES,
            # gVNIC: required for the extra GPU NICs, and the faster virtual NIC on every GPU machine.
            "gvnic": {"enabled": True},
            "workload_metadata_config": {"mode": "GKE_METADATA"},
            "gcfs_config": image_streaming(args),
        }
        networks = list(_get(args, "additional_networks", []))
        self.workload_policy: Optional[gcp.compute.ResourcePolicy] = None
        policy_name: Optional[pulumi.Input[str]] = args.get("placement_policy_name")
        if creates_workload_policy(args, pool):
            # Named after the component, as the pool is after its pool; a new policy replaces the old one in place
            # of it (the name is fixed), which replaces the pool too.
            self.workload_policy = gcp.compute.ResourcePolicy(
                f"{name}-nvlink", name=gcp_pools.resource_name(f"{name}-nvlink", 63), project=args.get("project"),
                region=_region_of((zones or [args["location"]])[0]),
                workload_policy=gcp_pools.workload_policy(shape),
                opts=child_opts(self, opts, delete_before_replace=True))
            policy_name = self.workload_policy.name
        self._node_pool(
            name, args, pool, zones, node_config,
            gcp_pools.placement_policy(uses_compact_placement(args, pool), policy_name),
            {"additional_node_network_configs": [
                {"network": n["network"], "subnetwork": n["subnetwork"]} for n in networks]} if networks else None,
            opts)

    def _node_pool(self, name: str, args: dict, pool: GpuPool, zones: list[str], node_config: dict[str, Any],
                   placement_policy: Optional[dict], network_config: Optional[dict],
                   opts: Optional[pulumi.ResourceOptions]) -> None:
        """The GKE node pool of a GPU or TPU pool (what both share: size, autoscaling, repair, replacement) and the
        component's outputs."""
        self.node_pool = gcp.container.NodePool(
            f"{name}-pool",
            name=pool.name,  # a DNS label of at most 40 characters (checked in gcp_options)
            project=args.get("project"),
            cluster=args["cluster"],
            location=args["location"],
            # The control plane's version: GKE's node auto-upgrades move pools to it in the maintenance window
            # too, so this input and auto-upgrade agree once a window has passed (the provider warns that a pinned
            # version other than the control plane's would fight auto-upgrade).
            version=args.get("node_version"),
            node_locations=zones or None,
            initial_node_count=gcp_pools.initial_node_count(
                pool, args.get("desired_nodes"), len(zones) or _get(args, "zone_count", _default_zone_count(args))),
            autoscaling=gcp_pools.autoscaling(pool),
            management=gcp_pools.management(pool),
            upgrade_settings=gcp_upgrade.upgrade_settings(pool_upgrade(args, pool)),
            queued_provisioning=gcp_pools.queued_provisioning(pool),
            placement_policy=placement_policy,
            network_config=network_config,
            node_config={k: v for k, v in node_config.items() if v is not None},
            # Accelerator quota and reservations rarely hold two copies of a pool: replace by deleting first.
            opts=child_opts(self, opts, delete_before_replace=True),
        )
        # What the Kubernetes layer sees: a queued pool's workloads tolerate the taint GKE puts on its nodes.
        self.pool = gcp_pools.with_cloud_taints(self.pool)
        self.node_pool_id = self.node_pool.id
        self.node_pool_name = self.node_pool.name
        self.register_outputs({"node_pool_id": self.node_pool_id, "node_pool_name": self.node_pool_name})

    def _tpu_pool(self, name: str, args: dict, pool: GpuPool, shape: catalog.MachineShape, zones: list[str],
                  affinity: Optional[str], reservations: tuple[str, ...],
                  opts: Optional[pulumi.ResourceOptions]) -> None:
        """A TPU slice node pool: the TPU machine type carries its chips (no guest accelerator, no GPU driver), a
        multi-host slice gets its topology through ``placement_policy``, and the pool the Kubernetes layer sees
        carries the TPU type and topology labels GKE puts on the nodes (Kueue flavors and JobSets select them)."""
        topology = _get(args, "tpu_topology", shape.tpu_topologies[0])
        node_config: dict[str, Any] = {
            "machine_type": pool.instance_type,
            "image_type": _get(args, "image_type", "COS_CONTAINERD"),
            "disk_size_gb": _get(args, "disk_size_gb", 200),
            "disk_type": args.get("disk_type"),
            # GKE taints TPU nodes google.com/tpu=present:NoSchedule itself; declared here as for GPUs (the one
            # accelerator taint of the pool, `GpuPool.taints`), so updates do not see a drift.
            "taints": gcp_pools.taints(pool),
            "labels": gcp_pools.node_labels(pool, False),
            "spot": pool.spot or None,
            **gcp_pools.dws_node_config(pool),
            "reservation_affinity": gcp_pools.reservation_affinity(affinity, reservations),
            "service_account": args.get("service_account"),
            "oauth_scopes": gcp_pools.OAUTH_SCOPES,
            "workload_metadata_config": {"mode": "GKE_METADATA"},
            "gcfs_config": image_streaming(args),
        }
        self.pool = replace(pool, user_labels=tuple(sorted(
            {**dict(pool.user_labels), **gcp_pools.tpu_node_labels(shape, topology)}.items())))
        self._node_pool(name, args, pool, zones, node_config, gcp_pools.tpu_placement_policy(shape, topology), None,
                        opts)


# ---------------------------------------------------------------------------------------------------------
# Helpers and the stack path


def _default_zone_count(args: dict) -> int:
    """Zones of a pool without ``node_locations``: one on a zonal location, GKE's three on a regional one (an
    Output location is taken as zonal, the cautious choice for ``initial_node_count``)."""
    location = args.get("location")
    if isinstance(location, str) and not gcp_options.ZONE.match(location):
        return gcp_options.REGIONAL_DEFAULT_ZONES
    return 1


def _former_parent(opts: Optional[pulumi.ResourceOptions]) -> pulumi.Alias:
    """GKE pools made by `cluster_from_config` were siblings of the cluster (children of its parent) before the
    cluster owned them; the alias keeps deployed pools from being replaced."""
    parent = opts.parent if opts is not None and opts.parent is not None else pulumi.ROOT_STACK_RESOURCE
    return pulumi.Alias(parent=parent)


def _rdma_pools(entries: list[dict], location: str) -> list[tuple[str, str, int, Optional[str]]]:
    """(name, fabric, GPU NICs, zone) of the GPUDirect pools among checked ``gpu_pools`` entries."""
    out = []
    for entry in entries:
        pool = GpuPool.from_spec(entry["pool"])
        if pool.rdma_fabric in gcp_networks.PROFILES:
            zones = pool_zones(entry, location)
            out.append((pool.name, pool.rdma_fabric, pool.rdma_interfaces, zones[0] if zones else None))
    return out


def _vpc_spec(vpc: gcp_networks.GpuVpc) -> GpuVpcSpec:
    return GpuVpcSpec(key=vpc.key, mtu=vpc.mtu, roce_zone=vpc.roce_zone or "",
                      subnets=[GpuSubnetSpec(name=s.name, cidr=s.cidr, device_mode=s.device_mode) for s in vpc.subnets])


def stack_pool_args(pool_config: Any, pool: GpuPool, software: str, google_installer: bool = False) -> GkeGpuPoolArgs:
    """The ``gpu_pools`` entry of a stack's pool: `gcp_options.pool_args` (what `pool_args("gcp", entry)` gives a
    program) plus what only the stack knows, the GPU software mode (driver, image, which device plugin) and whether
    Google's COS driver installer serves the stack's GPU Operator (`gcp_options.google_driver_installer`)."""
    pool_options: gcp_options.GcpPoolOptions = pool_config.cloud_options or gcp_options.GcpPoolOptions()
    entry = gcp_options.pool_args(pool_config, pool)
    if gcp_options.tpu_shape(pool_config) is not None:
        return GkeGpuPoolArgs(**entry)  # type: ignore[typeddict-item]  # TPUs: no GPU driver or device plugin
    entry.update(
        gpu_driver_version=gcp_options.driver_version(pool_options, software),
        image_type=gcp_options.image_type(pool_options, software, google_installer),
        gke_sharing=gcp_options.managed_sharing(software),
        gke_partitioning=gcp_options.managed_partitioning(software),
        disable_gke_device_plugin=gcp_options.disables_gke_device_plugin(software),
    )
    return GkeGpuPoolArgs(**entry)  # type: ignore[typeddict-item]


def network_plan(config: PlatformConfig) -> gcp_networks.GpuNetworkPlan:
    """The extra GPU NIC networks a configuration needs (empty without GPUDirect pools); what `GkeCluster` plans
    from the same pools."""
    options = config.cluster_options or gcp_options.GcpClusterOptions()
    entries = [{**gcp_options.pool_args(c, p), **({"node_locations": [options.zone]} if options.zone else {})}
               for c, p in zip(config.node_pools, config.gpu_pools(), strict=True)]
    return gcp_networks.plan_networks(_rdma_pools(entries, options.zone or config.region), options.gpu_network_cidr)


def cluster_from_config(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> ClusterHandle:
    """A GKE cluster, its GPU pools and GPUDirect networks from the stack configuration: the same `GkeCluster`
    call a program makes, with ``gpu_pools`` built by `stack_pool_args`."""
    options: gcp_options.GcpClusterOptions = config.cluster_options or gcp_options.GcpClusterOptions()
    system = options.system_pool
    google_installer = gcp_options.google_driver_installer(config.gpu_software, config.node_pools)
    gpu_pools = [stack_pool_args(c, p, config.gpu_software, google_installer)
                 for c, p in zip(config.node_pools, config.gpu_pools(), strict=True)]
    storage = config.storage
    if storage.image_pulls.streaming:
        for entry in gpu_pools:
            entry["image_streaming"] = True
    args = GkeClusterArgs(
        region=config.region,
        project=options.project,
        zone=options.zone,
        cluster_name=gcp_pools.resource_name(name),
        kubernetes_version=config.kubernetes_version,
        release_channel=options.release_channel,
        network=options.network,
        subnetwork=options.subnetwork,
        pods_range_name=options.pods_range_name,
        services_range_name=options.services_range_name,
        private_nodes=options.private_nodes,
        api_allowed_cidrs=list(options.control_plane.api_allowed_cidrs),
        secrets_encryption=options.control_plane.secrets_encryption,
        system_machine_type=system.machine_type,
        system_min_nodes=system.min_nodes,
        system_max_nodes=system.max_nodes,
        system_disk_size_gb=system.disk_size_gb,
        node_service_account=options.node_service_account,
        managed_dcgm=options.managed_dcgm,
        gpu_pools=gpu_pools,
        deletion_protection=options.deletion_protection,
        maintenance_window=window_as_args(config.maintenance),
    )
    if options.network is None:  # a given subnetwork has its own ranges
        args.update(node_cidr=options.node_cidr, pod_cidr=options.pod_cidr, service_cidr=options.service_cidr)
    if any(p.rdma_fabric in gcp_networks.PROFILES for p in config.gpu_pools()):
        args["gpu_network_cidr"] = options.gpu_network_cidr
    if storage.shared_file_system is not None:
        args["lustre_csi_driver"] = True
    if storage.buckets:
        args["gcs_fuse_csi_driver"] = True
    if options.proxy_only_cidr is not None:  # the stack publishes services through a GKE Gateway
        args["gateway_api"] = True
        if options.network is None:
            args["proxy_only_cidr"] = options.proxy_only_cidr
    cluster = GkeCluster(name, args, opts)

    outputs: dict[str, Any] = {
        "project": cluster.project,
        "location": cluster.location,
        "endpoint": cluster.endpoint,
        "network": cluster.network.name if cluster.network else options.network,
        "subnetwork": cluster.subnetwork.name if cluster.subnetwork else options.subnetwork,
        "node_service_account": cluster.node_service_account,
        "multi_networking": cluster.multi_networking,
        "gpu_networks": list(cluster.gpu_subnetworks),
        "managed_dcgm": options.managed_dcgm,
    }
    if options.proxy_only_cidr is not None:
        # The kube layer's Gateway: its services' NetworkPolicies admit the proxies from this range.
        outputs["gateway_proxy_cidr"] = options.proxy_only_cidr
    if gcp_options.software_installs_driver(config.gpu_software) or google_installer:
        outputs["driver_install_dir"] = gcp_pools.GKE_DRIVER_INSTALL_DIR
    if google_installer:
        # The GPU Operator's `driver_preinstalled` (kube.nvidia.NvidiaGpuStack): Google's COS installer puts the
        # driver in driver_install_dir, on every GPU pool of the stack.
        outputs["driver_preinstalled"] = True
    if storage.enabled:
        outputs["storage"] = storage_from_config(name, config, cluster, opts)
    return ClusterHandle(
        cloud="gcp",
        cluster_name=cluster.cluster_name,
        kubeconfig=cluster.kubeconfig,
        provider=cluster.provider,
        pools=cluster.gpu_pools,
        node_pool_ids={n: c.node_pool_id for n, c in cluster.node_pools.items()},
        outputs=outputs,
        ready=[cluster.system_pool, *(c.node_pool for c in cluster.node_pools.values()), *cluster.network_objects,
               *([cluster.proxy_only_subnetwork] if cluster.proxy_only_subnetwork else [])],
    )
