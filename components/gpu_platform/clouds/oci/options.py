"""Configuration keys of the OCI (OKE) cloud layer, parsed without the cloud SDK.

Cluster keys (top level of the ``gpu-platform`` namespace):

- ``vcnCidr``: CIDR of the VCN the platform creates (default ``10.0.0.0/16``; a /16 or larger).
- ``vcnId`` with ``endpointSubnetId``, ``workerSubnetId``, ``podSubnetId``, ``loadBalancerSubnetId``: use an
  existing VCN instead (all five together; the subnets, gateways and security rules are then the owner's job).
- ``apiAllowedCidrs`` (`gpu_platform.control_plane`): IPv4 CIDRs allowed to reach the Kubernetes API. Default empty:
  the endpoint gets no public IP and no internet ingress rule; it answers inside the VCN only (the worker and pod
  subnets, so also an OCI Bastion session into the worker subnet), and the kubeconfig the platform uses targets
  that private endpoint, so ``pulumi up`` must run from where it reaches it. A list: a public IP with TCP 6443 open
  from those CIDRs only (the created VCN's endpoint security list; with ``vcnId``, a network security group on the
  endpoint, beside the owner's own rules). ``0.0.0.0/0`` opens it to the internet and must be written out.
- ``secretsEncryption`` (`gpu_platform.control_plane`): envelope-encrypt Kubernetes Secrets in etcd with a Vault
  key the stack creates (default ``true``). ``publicEndpoint`` was replaced by ``apiAllowedCidrs``.
- ``availabilityDomains``: AD numbers (``1``..``3``) node pools are spread over (default: every AD of the region).
- ``kubernetesPatchVersion``: exact OKE version (``v1.34.1``); default: the newest patch of ``kubernetesVersion``.

Pool keys (per ``nodePools[]`` entry), each an `OkeGpuNodePool` argument (`pool_args`):

- ``imageId``: node image OCID; default: the newest OKE GPU image for the version. Required with ``rdma: true``
  (OKE's Oracle Linux GPU images carry no RDMA/OFED stack; oracle-quickstart/oci-hpc-oke only supports its
  custom Ubuntu DOCA-OFED images on RDMA pools), on AMD Instinct shapes (OKE's GPU images are NVIDIA's; the
  oci-hpc-oke ROCm image carries the amdgpu driver) and on arm64 shapes (BM.GPU.GB200.4, BM.GPU.GB300.4: OKE's
  GPU images are x86_64; oci-hpc-oke lists Ubuntu aarch64 DOCA-OFED GPU images for them).
- ``bootVolumeSizeGiB``: boot volume (default 512: GPU images plus multi-GB model/training container images).
- ``computeClusterId``: join an existing compute cluster instead of creating one (``rdma: true`` only). Required on
  shapes OCI sells as dedicated capacity only (catalog ``capacity: reservation``: BM.GPU.GB200.4, BM.GPU.GB300.4),
  whose hosts sit in a compute cluster with the GPU memory clusters of their NVLink racks ("GPU Memory Cluster and
  Memory Fabric": "You must be a Dedicated Capacity customer"; memory clusters are used "in conjunction with, not
  instead of, compute clusters"). The platform neither creates nor resizes GPU memory clusters.
- ``zones`` (shared key): AD numbers or AD names (``Uocm:US-ASHBURN-AD-2``) for this pool; one for RDMA pools.
- ``spot`` / ``provisioning: spot`` (shared keys) map to OCI preemptible capacity, which OCI offers on VM shapes only.
- ``provisioning: reservation`` with ``reservation: ocid1.capacityreservation...`` (shared keys): the nodes launch
  into that compute capacity reservation (OKE's "reserved capacity" type: every placement config of the pool names
  it). A reservation lives in one availability domain, so the pool names that one AD in ``zones``. On the
  dedicated-capacity rack shapes the compute cluster (``computeClusterId``) stays required; a reservation is optional
  there.
"""

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ... import catalog, control_plane, provisioning
from ...cidrs import CidrRule
from ...fields import ConfigError, join, read_int, read_list, read_str
from ..common_options import ManagedClusterOptions, entry_args
from . import upgrade as oci_upgrade
from .network import SERVICES_CIDR
from .storage_options import check_storage as check_storage  # the stack parser's OCI ``storage`` rules

CLUSTER_KEYS = {
    "vcnCidr", "vcnId", "endpointSubnetId", "workerSubnetId", "podSubnetId", "loadBalancerSubnetId",
    "availabilityDomains", "kubernetesPatchVersion", *control_plane.KEYS,
}
POOL_KEYS = {"imageId", "bootVolumeSizeGiB", "computeClusterId"}
AMD_IMAGE_PROBLEM = ("is required on an AMD Instinct shape: OKE's GPU images carry the NVIDIA driver; import the ROCm "
                     "image of oracle-quickstart/oci-hpc-oke docs/worker-node-images.md (BM.GPU.MI300X.8: Ubuntu with "
                     "ROCm and DOCA-OFED), which carries the amdgpu driver the AMD GPU Operator then uses")
"""Why an AMD pool names its image: the newest OKE GPU image the platform would pick is an NVIDIA one."""
SHAPE_RESERVATION = "reservation"
"""`catalog.MachineShape.capacity` of shapes OCI sells as dedicated capacity only (GB200/GB300 NVL72 racks)."""


def image_problem(gpu_model: str, architecture: str, shape_name: str) -> Optional[str]:
    """Why a pool must name its ``imageId`` whatever else it sets (the OKE GPU image the platform would pick, an
    NVIDIA x86_64 one (`images.pick_gpu_image`), cannot run it), or None."""
    if catalog.vendor_of(gpu_model).key == catalog.AMD:
        return AMD_IMAGE_PROBLEM
    if architecture != catalog.AMD64:
        return (f"is required on {shape_name}: its nodes are {architecture} (Grace) and OKE's GPU images are "
                "NVIDIA x86_64 ones; import an arm64 (aarch64) GPU image, such as the Canonical-Ubuntu-24.04-aarch64 "
                "DOCA-OFED GPU images of oracle-quickstart/oci-hpc-oke docs/worker-node-images.md")
    return None


def compute_cluster_problem(shape: Any, spell_rdma: str) -> Optional[str]:
    """Why a pool of ``shape`` must name an existing compute cluster, or None (``spell_rdma``: how the caller spells
    the RDMA switch, ``rdma: true`` or ``pool.rdma_fabric 'roce'``)."""
    if shape is None or shape.capacity != SHAPE_RESERVATION:
        return None
    return (f"is required on {shape.name}: OCI sells it as dedicated capacity only, its hosts in a compute cluster "
            "whose GPU memory clusters form the racks' NVLink domains; set that compute cluster's OCID (with "
            f"{spell_rdma})")

DEFAULT_VCN_CIDR = "10.0.0.0/16"
VCN_CIDR = CidrRule(example=DEFAULT_VCN_CIDR, max_prefix=16,
                    sizes="the API, worker, pod and load-balancer subnets need a /16 or larger")
"""``vcnCidr`` / ``vcn_cidr`` / ``OkeVcn.cidr``: the block of the VCN the platform creates (`vcn_cidr_problem` adds
what OKE asks of it beyond its size)."""
DEFAULT_BOOT_VOLUME_GIB = 512
# OCI block volume limits for boot volumes (pulumi_oci NodePoolNodeSourceDetails: "Minimum value is 50 GB").
MIN_BOOT_VOLUME_GIB = 50
MAX_BOOT_VOLUME_GIB = 32768
MAX_AVAILABILITY_DOMAINS = 3
SUBNET_KEYS = ("endpointSubnetId", "workerSubnetId", "podSubnetId", "loadBalancerSubnetId")
PATCH_VERSION = re.compile(r"^v(1\.\d+)\.\d+$")
AD_NAME = re.compile(r"^(?:[A-Za-z0-9]+:)?[A-Z0-9-]+-AD-([1-9])$")


def ocid_pattern(kind: str) -> re.Pattern:
    """``ocid1.<kind>.<realm>.[region][.future].<unique id>`` (Oracle's documented OCID syntax)."""
    return re.compile(rf"^ocid1\.{re.escape(kind)}\.oc\d+\.[a-z0-9-]*(\.[a-z0-9-]*)?\.[a-z0-9]+$")


def read_ocid(raw: Mapping, key: str, path: str, kind: str) -> Optional[str]:
    """An optional OCID of one resource kind, rejected with its path when malformed or of another kind."""
    value = read_str(raw, key, path, None)
    if value is None:
        return None
    problem = ocid_problem(value, kind)
    if problem:
        raise ConfigError(join(path, key), problem)
    return value


@dataclass(frozen=True)
class OciClusterOptions(ManagedClusterOptions):
    """Network and version settings of the OKE cluster."""

    vcn_cidr: str = DEFAULT_VCN_CIDR
    """CIDR of the VCN the platform creates."""
    vcn_id: Optional[str] = None
    """Existing VCN to use (then every subnet id below is set)."""
    endpoint_subnet_id: Optional[str] = None
    """Existing subnet of the Kubernetes API endpoint."""
    worker_subnet_id: Optional[str] = None
    """Existing subnet of the worker nodes."""
    pod_subnet_id: Optional[str] = None
    """Existing subnet pods take their VCN-native IPs from."""
    load_balancer_subnet_id: Optional[str] = None
    """Existing subnet of Service load balancers."""
    availability_domains: tuple[int, ...] = ()
    """AD numbers pools spread over; empty: every AD of the region."""
    kubernetes_patch_version: Optional[str] = None
    """Exact OKE version (``v1.34.1``); None: the newest patch of the configured minor version."""

    @property
    def existing_vcn(self) -> bool:
        return self.vcn_id is not None


@dataclass(frozen=True)
class OciPoolOptions:
    """OKE settings of one GPU node pool."""

    image_id: Optional[str] = None
    """Node image OCID; None: the newest OKE GPU image for the cluster's version."""
    boot_volume_size_gib: int = DEFAULT_BOOT_VOLUME_GIB
    """Boot volume size in GiB."""
    availability_domains: tuple[int, ...] = ()
    """AD numbers of this pool; empty: the cluster's (RDMA pools: the first of them)."""
    compute_cluster_id: Optional[str] = None
    """Existing compute cluster an RDMA pool joins; None: the pool creates its own."""
    preemptible: bool = False
    """Preemptible capacity (the pool's ``spot``)."""
    capacity_reservation_id: Optional[str] = None
    """The pool's ``reservation`` with ``provisioning: reservation``: the compute capacity reservation OCID every
    placement config names."""


RESERVATION_KIND = "capacityreservation"
"""The OCID kind of an OCI compute capacity reservation (``ocid1.capacityreservation.oc1...``)."""


def reservation_problem(reservation: str, zones: int) -> Optional[tuple[str, str]]:
    """``(key, problem)`` when a ``provisioning: reservation`` pool's reservation is not a capacity reservation OCID
    or the pool is not placed in one AD (``zones``: how many the pool names), or None. Keys: ``reservation``,
    ``zones``."""
    if ocid_problem(reservation, RESERVATION_KIND) is not None:
        return "reservation", ocid_problem(reservation, RESERVATION_KIND)
    if zones != 1:
        return "zones", ("name the one availability domain of the capacity reservation (a reservation lives in one "
                         f"AD), got {zones}")
    return None


def _ad_number(value: Any, path: str) -> int:
    """``2``, ``"2"`` or ``"Uocm:US-ASHBURN-AD-2"`` -> 2 (AD name prefixes differ per tenancy; the number does not)."""
    text = str(value).strip()
    match = AD_NAME.match(text)
    number = int(match.group(1)) if match else (int(text) if text.isdigit() else None)
    if number is None or not 1 <= number <= MAX_AVAILABILITY_DOMAINS:
        raise ConfigError(path, f"'{value}' is not an availability domain; use 1, 2 or 3 or a name ending in -AD-<n>")
    return number


def _ad_numbers(values: list, path: str) -> tuple[int, ...]:
    numbers = tuple(_ad_number(v, join(path, i)) for i, v in enumerate(values))
    if len(set(numbers)) != len(numbers):
        raise ConfigError(path, f"lists an availability domain twice: {list(numbers)}")
    return numbers


def vcn_cidr_problem(value: str) -> Optional[str]:
    """What is wrong with the CIDR of a VCN the platform creates, or None."""
    problem = VCN_CIDR.problem(value)
    if problem:
        return problem
    network = ipaddress.IPv4Network(value)
    if not network.is_private:
        return f"'{value}' is not a private (RFC 1918) range"
    if network.overlaps(ipaddress.IPv4Network(SERVICES_CIDR)):
        return f"'{value}' overlaps the Kubernetes Service CIDR {SERVICES_CIDR}"
    return None


def ocid_problem(value: str, kind: str) -> Optional[str]:
    """What is wrong with an OCID that must name a ``kind`` resource, or None."""
    if ocid_pattern(kind).match(value):
        return None
    found = value.split(".")[1] if value.startswith("ocid1.") and value.count(".") >= 2 else None
    reason = f"is a {found} OCID" if found and found != kind else "is not a valid OCID"
    return f"'{value}' {reason}; expected ocid1.{kind}.oc1..<unique id>"


def parse_cluster_options(raw: Mapping, config: Any) -> OciClusterOptions:
    if config.maintenance.given:
        raise ConfigError("maintenance.window", "OKE has no maintenance window: it never upgrades a cluster or cycles "
                                                "a node pool on its own (only a pulumi up does)")
    vcn_id = read_ocid(raw, "vcnId", "", "vcn")
    subnets = {key: read_ocid(raw, key, "", "subnet") for key in SUBNET_KEYS}
    if vcn_id is not None:
        missing = [key for key, value in subnets.items() if value is None]
        if missing:
            raise ConfigError(missing[0], "is required with vcnId (an existing VCN needs all of "
                                          f"{', '.join(SUBNET_KEYS)})")
        if "vcnCidr" in raw:
            raise ConfigError("vcnCidr", "applies to the VCN the platform creates; remove it or remove vcnId")
    else:
        given = [key for key, value in subnets.items() if value is not None]
        if given:
            raise ConfigError(given[0], "needs vcnId: subnets are only given together with an existing VCN")
    vcn_cidr = read_str(raw, "vcnCidr", "", DEFAULT_VCN_CIDR)
    problem = vcn_cidr_problem(vcn_cidr)
    if problem:
        raise ConfigError("vcnCidr", problem)
    network = ipaddress.IPv4Network(vcn_cidr)
    security = control_plane.parse_control_plane(raw)
    patch = read_str(raw, "kubernetesPatchVersion", "", None)
    if patch is not None:
        match = PATCH_VERSION.match(patch)
        if not match:
            raise ConfigError("kubernetesPatchVersion", f"'{patch}' is not an OKE version such as v1.34.1")
        if match.group(1) != config.kubernetes_version:
            raise ConfigError("kubernetesPatchVersion",
                              f"'{patch}' does not match kubernetesVersion '{config.kubernetes_version}'")
    return OciClusterOptions(
        vcn_cidr=str(network),
        vcn_id=vcn_id,
        endpoint_subnet_id=subnets["endpointSubnetId"],
        worker_subnet_id=subnets["workerSubnetId"],
        pod_subnet_id=subnets["podSubnetId"],
        load_balancer_subnet_id=subnets["loadBalancerSubnetId"],
        control_plane=security,
        availability_domains=_ad_numbers(read_list(raw, "availabilityDomains", ""), "availabilityDomains"),
        kubernetes_patch_version=patch,
    )


def is_bare_metal(shape_name: str) -> bool:
    """OCI shape names start with ``BM.`` for bare metal and ``VM.`` for virtual machines."""
    return shape_name.startswith("BM.")


def parse_pool_options(raw: Mapping, path: str, pool: Any, shape: Any) -> OciPoolOptions:
    oci_upgrade.refuse(pool.upgrade, join(path, "upgrade"))
    image_id = read_ocid(raw, "imageId", path, "image")
    architecture = shape.architecture if shape is not None else catalog.AMD64
    missing_image = image_problem(pool.gpu_model, architecture, pool.instance_type)
    if image_id is None and missing_image is not None:
        raise ConfigError(join(path, "imageId"), missing_image)
    if pool.rdma and image_id is None:
        raise ConfigError(join(path, "imageId"),
                          "is required with rdma: true; OKE's Oracle Linux GPU images have no RDMA (OFED) stack, "
                          "import an RDMA-ready image (oracle-quickstart/oci-hpc-oke docs/worker-node-images.md)")
    compute_cluster_id = read_ocid(raw, "computeClusterId", path, "computecluster")
    if compute_cluster_id is None and compute_cluster_problem(shape, "rdma: true") is not None:
        raise ConfigError(join(path, "computeClusterId"), compute_cluster_problem(shape, "rdma: true"))
    if compute_cluster_id is not None and not pool.rdma:
        raise ConfigError(join(path, "computeClusterId"), "only applies with rdma: true")
    if pool.spot and is_bare_metal(pool.instance_type):
        raise ConfigError(join(path, "spot"), f"OCI preemptible capacity does not support bare metal shapes "
                                              f"such as '{pool.instance_type}'; use a VM.GPU shape or spot: false")
    zones = _ad_numbers(list(pool.zones), join(path, "zones"))
    if pool.rdma and len(zones) > 1:
        raise ConfigError(join(path, "zones"), f"an RDMA pool's compute cluster lives in one availability domain, "
                                               f"got {len(zones)}")
    reserved = pool.provisioning == provisioning.RESERVATION
    if reserved:
        problem = reservation_problem(pool.reservation, len(zones))
        if problem is not None:
            raise ConfigError(join(path, problem[0]), problem[1])
    boot = read_int(raw, "bootVolumeSizeGiB", path, DEFAULT_BOOT_VOLUME_GIB, minimum=MIN_BOOT_VOLUME_GIB)
    if boot > MAX_BOOT_VOLUME_GIB:
        raise ConfigError(join(path, "bootVolumeSizeGiB"), f"must be <= {MAX_BOOT_VOLUME_GIB} (32 TB), got {boot}")
    return OciPoolOptions(
        image_id=image_id,
        boot_volume_size_gib=boot,
        availability_domains=zones,
        compute_cluster_id=compute_cluster_id,
        preemptible=pool.spot,
        capacity_reservation_id=pool.reservation if reserved else None,
    )


def pool_args(pool_config: Any, pool: Any) -> dict[str, Any]:
    """The `OkeGpuNodePool` args a validated ``nodePools`` entry decides: the pool and every OKE key the entry sets
    (``zones`` -> ``zones`` as AD numbers, ``desiredNodes`` -> ``size``); the cluster's ids, version, subnets and
    ADs come from `OkeCluster`. ``spot`` stays in the pool (``preemptible`` follows it)."""
    options: OciPoolOptions = pool_config.cloud_options or OciPoolOptions()
    return entry_args(pool, {
        "boot_volume_size_gib": options.boot_volume_size_gib,
        "image_id": options.image_id,
        "compute_cluster_id": options.compute_cluster_id,
        "size": pool_config.desired_nodes,
        "zones": list(options.availability_domains) or None,
        "upgrade": pool_config.upgrade.as_args() if pool_config.upgrade.given else None,
    })
