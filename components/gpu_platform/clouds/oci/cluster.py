"""Oracle Cloud: an enhanced OKE cluster with VCN-native pod networking, and GPU / RoCEv2 RDMA node pools.

`OkeCluster` builds (or reuses) the VCN, the cluster, its kubeconfig and a Kubernetes provider. Secure by default:
the API endpoint has no public IP unless ``api_allowed_cidrs`` names who may reach it (then TCP 6443 from those
CIDRs only), and Kubernetes Secrets are envelope-encrypted with a Vault key the component creates, which only OKE
clusters may use (``secrets_encryption``). OKE's CNIs enforce no NetworkPolicy: `cluster_from_config` hands the
Kubernetes layer the settings for Calico beside the VCN-native CNI (`kube.network_policy_engine`).
`OkeGpuNodePool` is one ``oci.containerengine.NodePool`` of a catalogued GPU shape: the OKE GPU image looked up
for the Kubernetes version (or a given image), taints through kubelet ``--register-with-taints`` in cloud-init
(OKE node pools have no taint field), labels through ``initial_node_labels``, and on ``rdma`` pools an
``oci.core.ComputeCluster`` in one availability domain that the nodes join for the RoCEv2 cluster network.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ... import catalog, labels
from ...component_args import Args, KeywordArgs
from ...config_model import PlatformConfig
from ...errors import ConfigError
from ...kubernetes_base.common import child_opts
from ...pools import GpuPool, GpuPoolSpec
from ...provisioning import RESERVATION
from ...upgrades.pool_upgrade import PoolUpgrade, PoolUpgradeArgs, argument_path, upgrade_from_args
from .. import missing_extra
from ..handle import ClusterHandle
from . import cloud_init as oci_cloud_init
from . import contract
from . import images as oci_images
from . import network as oci_network
from . import rdma as oci_rdma
from . import upgrade as oci_upgrade
from .iam import secrets_key_statement
from .options import DEFAULT_BOOT_VOLUME_GIB, PATCH_VERSION, OciClusterOptions, pool_args
from .storage import file_system_ad_number, storage_from_config
from .vcn import OkeVcn

try:
    import pulumi_oci as oci
except ModuleNotFoundError as err:  # the cloud's extra is not installed: name it
    raise missing_extra(err) from None

ENHANCED_CLUSTER = "ENHANCED_CLUSTER"
VCN_NATIVE_CNI = "OCI_VCN_IP_NATIVE"
KUBECONFIG_TOKEN_VERSION = "2.0.0"
PUBLIC_ENDPOINT, PRIVATE_ENDPOINT = "PUBLIC_ENDPOINT", "PRIVATE_ENDPOINT"
"""``get_cluster_kube_config`` endpoints: the kubeconfig can target one endpoint of the cluster at a time."""
VCN_NATIVE_INTERFACE_PREFIX = "oci"
"""Prefix of the host-side interfaces OKE's VCN-native CNI creates for pods: Felix's ``FELIX_INTERFACEPREFIX`` in
Oracle's "Installing Calico alongside the OCI VCN-Native Pod Networking CNI plugin" (contengsettingupcalico.htm)."""
# Secrets encryption (Oracle: "Encrypting Kubernetes Secrets at Rest in Etcd", contengencryptingdata.htm): a master
# encryption key in Vault of protection mode Software or HSM and shape AES 128/256 (or RSA, ECDSA). HSM (the Key
# default, pulumi_oci Key.protection_mode): the key persists in, and is only used inside, the hardware security
# module. AES-256: 32 bytes (pulumi_oci KeyKeyShape.length is in bytes: AES 16, 24 or 32). A DEFAULT vault, not a
# VIRTUAL_PRIVATE one (a dedicated partition, priced differently): the key, not the partition, is this cluster's.
VAULT_TYPE = "DEFAULT"
SECRETS_KEY_SHAPE = {"algorithm": "AES", "length": 32}
SECRETS_KEY_PROTECTION_MODE = "HSM"
IMAGE_SOURCE = "IMAGE"
PREEMPTION_ACTION = "TERMINATE"


# ---------------------------------------------------------------------------------------------------------
# Pure decisions


def node_labels(pool: GpuPool, disable_oke_device_plugin: bool) -> list[dict[str, str]]:
    """``initial_node_labels`` of a pool: the platform's labels, plus OKE's switch that stops its own NVIDIA
    device plugin when the GPU Operator or our device plugin owns the GPUs."""
    node = dict(pool.labels)
    if disable_oke_device_plugin:
        node[labels.OKE_DISABLE_GPU_DEVICE_PLUGIN_LABEL] = "true"
    return [{"key": k, "value": v} for k, v in sorted(node.items())]


def placement_configs(availability_domains: list[str], subnet_id: str, preemptible: bool,
                      capacity_reservation_id: Optional[str] = None) -> list[dict]:
    """One placement per availability domain, all in the (regional) worker subnet; preemptible ones on spot pools,
    each naming the pool's compute capacity reservation on reservation pools (OKE's "reserved capacity")."""
    placement = []
    for ad in availability_domains:
        config: dict = {"availability_domain": ad, "subnet_id": subnet_id}
        if capacity_reservation_id:
            config["capacity_reservation_id"] = capacity_reservation_id
        if preemptible:
            config["preemptible_node_config"] = {
                "preemption_action": {"type": PREEMPTION_ACTION, "is_preserve_boot_volume": False}}
        placement.append(config)
    return placement


def network_policy_engine_args() -> dict[str, str]:
    """What the Kubernetes layer's `CalicoPolicyEngine` needs on OKE with VCN-native pod networking (the CNI this
    layer always selects): the prefix of the CNI's pod interfaces."""
    return {"interface_prefix": VCN_NATIVE_INTERFACE_PREFIX}


def kubeconfig_endpoint(public_endpoint: bool) -> str:
    """The endpoint the platform's kubeconfig targets: the public one only when there is one."""
    return PUBLIC_ENDPOINT if public_endpoint else PRIVATE_ENDPOINT


def select_availability_domains(names: list[str], numbers: tuple[int, ...]) -> list[str]:
    """AD names (``Uocm:US-ASHBURN-AD-2``) for AD numbers; every AD of the region when ``numbers`` is empty."""
    by_number = {int(n.rsplit("-", 1)[-1]): n for n in names if n.rsplit("-", 1)[-1].isdigit()}
    if not numbers:
        return [by_number[k] for k in sorted(by_number)] or list(names)
    missing = [n for n in numbers if n not in by_number]
    if missing:
        raise ValueError(f"availability domain(s) {missing} do not exist in this region; it has {sorted(by_number)}")
    return [by_number[n] for n in numbers]


# ---------------------------------------------------------------------------------------------------------
# Cluster


class OkeClusterArgs(TypedDict, total=False):
    """Arguments of `OkeCluster`."""

    compartment_id: Required[pulumi.Input[str]]
    """Compartment OCID of the cluster and of the network it creates."""
    kubernetes_version: str
    """A minor version (``1.34``: the newest OKE patch of it) or an exact OKE version (``v1.34.1``)."""
    cluster_name: str
    """OKE cluster name. Default: the component name."""
    vcn_cidr: str
    """CIDR of the VCN to create (ignored with ``vcn_id``). Default ``10.0.0.0/16``."""
    vcn_id: pulumi.Input[str]
    """Existing VCN; then all four subnet ids below are required and no network resource is created."""
    endpoint_subnet_id: pulumi.Input[str]
    """Existing subnet of the Kubernetes API endpoint."""
    worker_subnet_id: pulumi.Input[str]
    """Existing subnet of the worker nodes."""
    pod_subnet_id: pulumi.Input[str]
    """Existing subnet pods take VCN-native IPs from."""
    load_balancer_subnet_id: pulumi.Input[str]
    """Existing subnet of Service load balancers."""
    api_allowed_cidrs: list[str]
    """IPv4 CIDRs allowed to reach the Kubernetes API endpoint from outside the VCN (at most 40). Default none: no
    public IP; the endpoint answers inside the VCN only and the kubeconfig targets the private endpoint, so the
    program must run where it reaches it. A list: a public IP with TCP 6443 open from those CIDRs only (the created
    VCN's endpoint security list; with ``vcn_id``, a network security group on the endpoint in addition to the
    owner's rules, and the endpoint subnet must allow public IPs). ``0.0.0.0/0`` opens it to the internet."""
    secrets_encryption: bool
    """Envelope-encrypt Kubernetes Secrets in etcd with a Vault key (AES-256, HSM) the component creates, with the
    IAM policy that lets OKE clusters use it. OKE takes the key only when it creates a cluster: changing this later
    replaces the cluster. Default true."""


class OkeCluster(pulumi.ComponentResource, metaclass=KeywordArgs):
    """An enhanced OKE cluster with VCN-native pod networking, its kubeconfig and a Kubernetes provider; a private
    API endpoint unless ``api_allowed_cidrs`` is given, Secrets encrypted with its own Vault key by default."""

    cluster_id: pulumi.Output[str]
    cluster_name: pulumi.Output[str]
    kubernetes_version: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    availability_domains: pulumi.Output[list[str]]
    vcn_id: pulumi.Output[str]
    worker_subnet_id: pulumi.Output[str]
    pod_subnet_id: pulumi.Output[str]
    load_balancer_subnet_id: pulumi.Output[str]
    endpoint_subnet_id: pulumi.Output[str]
    secrets_key_id: pulumi.Output[Optional[str]]

    def __init__(self, name: str, args: OkeClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("OkeCluster", name, cloud="oci")
        contract.refuse_renamed(checker, args)
        args = checker.check(args, OkeClusterArgs, contract.CLUSTER_RULES)  # type: ignore[assignment]
        contract.check_cluster(checker, args)
        super().__init__("gpuplatform:index:OkeCluster", name, {}, opts)
        compartment = args["compartment_id"]
        allowed = list(args.get("api_allowed_cidrs", []))
        public = bool(allowed)
        invoke = pulumi.InvokeOutputOptions(parent=self)

        endpoint_config: dict = {"is_public_ip_enabled": public}
        endpoint_rules: list = []
        self.api_clients = None
        if args.get("vcn_id") is not None:
            self.network = None
            vcn_id = pulumi.Output.from_input(args["vcn_id"])
            subnets = {k: pulumi.Output.from_input(args[k]) for k in (
                "endpoint_subnet_id", "worker_subnet_id", "pod_subnet_id", "load_balancer_subnet_id")}
            if allowed:
                # The owner's security lists are not ours to change: the allowed CIDRs get a network security
                # group on the endpoint (a packet is admitted when either the subnet's lists or an NSG allows it).
                self.api_clients = oci.core.NetworkSecurityGroup(
                    f"{name}-api-clients", compartment_id=compartment, vcn_id=vcn_id,
                    display_name=f"{name}-api-clients", opts=child_opts(self, opts))
                endpoint_rules = [
                    oci.core.NetworkSecurityGroupSecurityRule(
                        f"{name}-api-client-{i}", network_security_group_id=self.api_clients.id,
                        **oci_network.nsg_rule_args(rule), opts=child_opts(self, opts))
                    for i, rule in enumerate(oci_network.api_client_rules(tuple(allowed)))]
                endpoint_config["nsg_ids"] = [self.api_clients.id]
        else:
            self.network = OkeVcn(f"{name}-network", {
                "compartment_id": compartment, "cidr": args.get("vcn_cidr", "10.0.0.0/16"),
                "api_allowed_cidrs": allowed,
            }, opts=child_opts(self, opts))
            vcn_id = self.network.vcn_id
            subnets = {"endpoint_subnet_id": self.network.endpoint_subnet_id,
                       "worker_subnet_id": self.network.worker_subnet_id,
                       "pod_subnet_id": self.network.pod_subnet_id,
                       "load_balancer_subnet_id": self.network.load_balancer_subnet_id}

        requested = args.get("kubernetes_version", "1.34")
        if PATCH_VERSION.match(requested):
            version: pulumi.Output[str] = pulumi.Output.from_input(requested)
        else:
            options = oci.containerengine.get_cluster_option_output(
                cluster_option_id="all", compartment_id=compartment, opts=invoke)
            version = options.kubernetes_versions.apply(lambda v: oci_images.latest_patch_version(v, requested))

        self.vault = self.secrets_key = self.secrets_key_policy = None
        kms_key_id: Optional[pulumi.Output[str]] = None
        if args.get("secrets_encryption", True):
            self.vault = oci.kms.Vault(f"{name}-vault", compartment_id=compartment, display_name=f"{name}-secrets",
                                       vault_type=VAULT_TYPE, opts=child_opts(self, opts))
            self.secrets_key = oci.kms.Key(
                f"{name}-secrets-key", compartment_id=compartment, display_name=f"{name}-secrets",
                key_shape=dict(SECRETS_KEY_SHAPE), protection_mode=SECRETS_KEY_PROTECTION_MODE,
                management_endpoint=self.vault.management_endpoint, opts=child_opts(self, opts))
            self.secrets_key_policy = oci.identity.Policy(
                f"{name}-secrets-key-policy", compartment_id=compartment,
                description=f"OKE cluster {name}: envelope encryption of Kubernetes Secrets with its Vault key",
                statements=pulumi.Output.all(compartment, self.secrets_key.id).apply(
                    lambda ids: [secrets_key_statement(ids[0], ids[1])]),
                opts=child_opts(self, opts))
            kms_key_id = self.secrets_key.id

        self.cluster = oci.containerengine.Cluster(
            f"{name}-oke",
            compartment_id=compartment,
            kubernetes_version=version,
            name=args.get("cluster_name", name),
            vcn_id=vcn_id,
            type=ENHANCED_CLUSTER,
            cluster_pod_network_options=[{"cni_type": VCN_NATIVE_CNI}],
            endpoint_config={"subnet_id": subnets["endpoint_subnet_id"], **endpoint_config},
            kms_key_id=kms_key_id,
            options={
                "service_lb_subnet_ids": [subnets["load_balancer_subnet_id"]],
                "kubernetes_network_config": {"services_cidr": oci_network.SERVICES_CIDR},
            },
            # OKE checks that the cluster may use the key when it creates it: the policy comes first.
            opts=child_opts(self, opts, depends_on=[*endpoint_rules, *filter(None, [self.secrets_key_policy])]),
        )
        # Without a public IP the kubeconfig must target the private endpoint (the public one does not exist).
        kubeconfig = oci.containerengine.get_cluster_kube_config_output(
            cluster_id=self.cluster.id, endpoint=kubeconfig_endpoint(public),
            token_version=KUBECONFIG_TOKEN_VERSION, opts=invoke)
        self.kubeconfig = pulumi.Output.secret(kubeconfig.content)
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, enable_server_side_apply=True,
                                     opts=child_opts(self, opts))
        ads = oci.identity.get_availability_domains_output(compartment_id=compartment, opts=invoke)
        self.availability_domains = ads.availability_domains.apply(lambda found: sorted(a["name"] for a in found))

        self.cluster_id = self.cluster.id
        self.cluster_name = self.cluster.name
        self.kubernetes_version = version
        self.vcn_id = vcn_id
        self.endpoint_subnet_id = subnets["endpoint_subnet_id"]
        self.worker_subnet_id = subnets["worker_subnet_id"]
        self.pod_subnet_id = subnets["pod_subnet_id"]
        self.load_balancer_subnet_id = subnets["load_balancer_subnet_id"]
        self.secrets_key_id = pulumi.Output.from_input(kms_key_id)
        self.register_outputs({
            "cluster_id": self.cluster_id, "cluster_name": self.cluster_name,
            "kubernetes_version": self.kubernetes_version, "kubeconfig": self.kubeconfig,
            "availability_domains": self.availability_domains, "vcn_id": self.vcn_id,
            "worker_subnet_id": self.worker_subnet_id, "pod_subnet_id": self.pod_subnet_id,
            "load_balancer_subnet_id": self.load_balancer_subnet_id, "endpoint_subnet_id": self.endpoint_subnet_id,
            "secrets_key_id": self.secrets_key_id,
        })


# ---------------------------------------------------------------------------------------------------------
# GPU node pool


class OkeGpuNodePoolArgs(TypedDict, total=False):
    """Arguments of `OkeGpuNodePool`."""

    pool: Required[GpuPoolSpec]
    """The GPU pool: shape (``instance_type``), sizes, labels, taints, sharing, RDMA fabric (``roce``), spot. With
    ``provisioning`` ``reservation``, ``reservation`` is the compute capacity reservation OCID
    (``ocid1.capacityreservation...``) every placement config names; the pool then names its one AD in ``zones``."""
    cluster_id: Required[pulumi.Input[str]]
    """OCID of the OKE cluster."""
    compartment_id: Required[pulumi.Input[str]]
    """Compartment OCID of the node pool (and of its compute cluster)."""
    kubernetes_version: Required[pulumi.Input[str]]
    """Exact OKE version of the nodes (``v1.34.1``), normally the cluster's."""
    worker_subnet_id: Required[pulumi.Input[str]]
    """Regional subnet of the nodes."""
    pod_subnet_id: Required[pulumi.Input[str]]
    """Subnet pods take VCN-native IPs from."""
    availability_domains: Required[pulumi.Input[list[str]]]
    """AD names to place nodes in; an RDMA pool uses the first only (its compute cluster lives in one AD)."""
    image_id: pulumi.Input[str]
    """Node image OCID. Default: the newest OKE x86_64 GPU image for ``kubernetes_version``
    (``get_node_pool_option``). Required on RDMA pools (OKE's GPU images carry no RDMA (OFED) stack), AMD Instinct
    shapes and arm64 shapes (BM.GPU.GB200.4, BM.GPU.GB300.4: an aarch64 GPU image)."""
    zones: list[int]
    """Availability domain numbers (1-3) to place the nodes in, picked from ``availability_domains``. Default: all
    of them (an RDMA pool: the first)."""
    boot_volume_size_gib: int
    """Boot volume in GiB (the root filesystem is grown into it at boot). Default 512."""
    preemptible: bool
    """OCI preemptible capacity (VM shapes only, never RDMA pools). It must agree with the pool's ``spot``, which
    it follows by default."""
    size: int
    """Initial node count. Default: the pool's ``min_nodes``; later changes are left to the autoscaler
    when ``max_nodes > min_nodes``."""
    compute_cluster_id: pulumi.Input[str]
    """RDMA pools only: an existing compute cluster to join. Default: one is created in the pool's AD. Required on
    shapes sold as dedicated capacity only (BM.GPU.GB200.4, BM.GPU.GB300.4): the compute cluster of that capacity,
    whose GPU memory clusters (the racks' NVLink domains) are set up outside OKE."""
    disable_oke_device_plugin: bool
    """Label nodes so OKE's own NVIDIA device plugin stays off (the GPU Operator or our plugin runs). Default false."""
    upgrade: PoolUpgradeArgs
    """How a changed image or Kubernetes version (a ``pulumi up``: OKE never cycles a pool on its own) replaces the
    nodes: ``max_surge`` / ``max_unavailable`` (``nodePoolCyclingDetails``, cycling on; defaults by role: training
    ``"0"`` / ``"1"``, otherwise ``"1"`` / ``"0"``) and ``drain_timeout_minutes`` (``evictionGraceDuration``, at most
    60; OKE's default 60). Training pools never force-delete a node whose pods could not be evicted. ``automatic``,
    ``soak_minutes`` and ``blue-green`` are refused."""


class OkeGpuNodePool(pulumi.ComponentResource, metaclass=KeywordArgs):
    """An OKE managed node pool of one GPU shape, tainted and labelled for the platform; on RoCE shapes with
    ``rdma_fabric`` set, its nodes join a compute cluster for the RDMA cluster network. On a DRA pool of a
    multi-node NVLink shape (GB200/GB300 NVL72) the nodes' cloud-init turns the host's ``nvidia-imex.service`` off."""

    node_pool_id: pulumi.Output[str]
    image_id: pulumi.Output[str]
    compute_cluster_id: pulumi.Output[Optional[str]]

    def __init__(self, name: str, args: OkeGpuNodePoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("OkeGpuNodePool", name, cloud="oci")
        args = checker.check(args, OkeGpuNodePoolArgs, contract.POOL_RULES)  # type: ignore[assignment]
        contract.check_pool(checker, args)
        upgrade = _checked_upgrade(checker, args.get("upgrade"))
        super().__init__("gpuplatform:index:OkeGpuNodePool", name, {}, opts)
        pool = GpuPool.from_spec(args["pool"])
        upgrade = upgrade.resolved(pool.role)
        rdma = pool.rdma_fabric == catalog.ROCE
        preemptible = pool.spot
        reservation = pool.reservation if pool.provisioning == RESERVATION else None
        # The pool as published to the Kubernetes layer (RoCE pools carry their NCCL settings). Python-only: a
        # GpuPool has no schema form, so it carries no class-level annotation.
        self.gpu_pool: GpuPool = oci_rdma.with_roce_nccl_env(pool)
        compartment = args["compartment_id"]
        version = pulumi.Output.from_input(args["kubernetes_version"])

        ads = pulumi.Output.from_input(args["availability_domains"])
        zones = tuple(args.get("zones", ()))
        if zones:
            ads = ads.apply(lambda names: select_availability_domains(list(names), zones))
        if rdma:
            ads = ads.apply(lambda names: list(names)[:1])
        self.compute_cluster = None
        compute_cluster_id: Optional[pulumi.Input[str]] = None
        if rdma:
            compute_cluster_id = args.get("compute_cluster_id")
            if compute_cluster_id is None:
                self.compute_cluster = oci.core.ComputeCluster(
                    f"{name}-compute-cluster", availability_domain=ads.apply(lambda names: names[0]),
                    compartment_id=compartment, display_name=f"{name}-rdma", opts=child_opts(self, opts))
                compute_cluster_id = self.compute_cluster.id

        if args.get("image_id") is not None:
            image_id = pulumi.Output.from_input(args["image_id"])
        else:
            options = oci.containerengine.get_node_pool_option_output(
                node_pool_option_id="all", compartment_id=compartment, opts=pulumi.InvokeOutputOptions(parent=self))
            image_id = pulumi.Output.all(options.sources, version).apply(
                lambda found: oci_images.pick_gpu_image(found[0], found[1]))

        placement = pulumi.Output.all(ads, args["worker_subnet_id"]).apply(
            lambda found: placement_configs(list(found[0]), found[1], preemptible, reservation))
        node_config: dict = {
            "size": args.get("size", pool.min_nodes),
            "placement_configs": placement,
            "node_pool_pod_network_option_details": {"cni_type": VCN_NATIVE_CNI,
                                                     "pod_subnet_ids": [args["pod_subnet_id"]]},
        }
        if compute_cluster_id is not None:
            node_config["compute_cluster_id"] = compute_cluster_id
        script = oci_cloud_init.render_cloud_init(pool.name, pool.taints, rdma=rdma,
                                                  host_imex_off=pool.dra and pool.multi_node_nvlink)
        # The cluster autoscaler owns the size of a pool that may scale; Pulumi only sets the initial size.
        ignore = ["nodeConfigDetails.size"] if pool.max_nodes > pool.min_nodes else []

        self.node_pool = oci.containerengine.NodePool(
            f"{name}-nodes",
            cluster_id=args["cluster_id"],
            compartment_id=compartment,
            name=pool.name,
            kubernetes_version=version,
            node_shape=pool.instance_type,
            node_source_details={
                "source_type": IMAGE_SOURCE,
                "image_id": image_id,
                "boot_volume_size_in_gbs": str(args.get("boot_volume_size_gib", DEFAULT_BOOT_VOLUME_GIB)),
            },
            node_config_details=node_config,
            initial_node_labels=node_labels(pool, args.get("disable_oke_device_plugin", False)),
            node_metadata={"user_data": oci_cloud_init.user_data(script)},
            node_pool_cycling_details=oci_upgrade.cycling_details(upgrade),
            node_eviction_node_pool_settings=oci_upgrade.eviction_settings(upgrade, pool.role),
            opts=child_opts(self, opts, ignore_changes=ignore),
        )
        self.node_pool_id = self.node_pool.id
        self.image_id = image_id
        self.compute_cluster_id = pulumi.Output.from_input(compute_cluster_id)
        self.register_outputs({"node_pool_id": self.node_pool_id, "image_id": self.image_id,
                               "compute_cluster_id": self.compute_cluster_id})


def _checked_upgrade(checker: Args, value: Any) -> PoolUpgrade:
    """The ``upgrade`` argument parsed and checked against what OKE honours (`oci_upgrade.refuse`), its errors
    naming the argument (``upgrade.max_surge``)."""
    try:
        upgrade = upgrade_from_args(value, "upgrade")
        oci_upgrade.refuse(upgrade, "upgrade")
    except ConfigError as err:
        checker.fail(argument_path(err.path), err.problem)
    return upgrade


# ---------------------------------------------------------------------------------------------------------
# From the stack configuration


def cluster_from_config(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> ClusterHandle:
    """The OKE cluster and one `OkeGpuNodePool` per configured pool, in ``config.region``."""
    options: OciClusterOptions = config.cluster_options or OciClusterOptions()
    # An explicit provider makes the stack's own `region` (not ambient `oci:region`) decide where things go.
    provider = oci.Provider(f"{name}-oci", region=config.region, opts=opts)
    cloud_opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers={"oci": provider}))
    cluster_args: OkeClusterArgs = {
        "compartment_id": config.compartment_id,
        "kubernetes_version": options.kubernetes_patch_version or config.kubernetes_version,
        "cluster_name": name,
        "api_allowed_cidrs": list(options.control_plane.api_allowed_cidrs),
        "secrets_encryption": options.control_plane.secrets_encryption,
    }
    if options.existing_vcn:
        cluster_args.update(vcn_id=options.vcn_id, endpoint_subnet_id=options.endpoint_subnet_id,
                            worker_subnet_id=options.worker_subnet_id, pod_subnet_id=options.pod_subnet_id,
                            load_balancer_subnet_id=options.load_balancer_subnet_id)
    else:
        cluster_args.update(vcn_cidr=options.vcn_cidr)
    cluster = OkeCluster(name, cluster_args, opts=cloud_opts)

    disable_plugin = config.gpu_software != "cloud-managed"
    pools: list[GpuPool] = []
    components: list[OkeGpuNodePool] = []
    for pool_config, pool in zip(config.node_pools, config.gpu_pools(), strict=True):
        # The same args a program gets from `pool_args("oci", entry)`, plus what only the cluster and stack know.
        args: OkeGpuNodePoolArgs = {
            "zones": list(options.availability_domains),  # the stack's default ADs, when the pool names none
            **pool_args(pool_config, pool),  # type: ignore[typeddict-item]
            "cluster_id": cluster.cluster_id,
            "compartment_id": config.compartment_id,
            "kubernetes_version": cluster.kubernetes_version,
            "worker_subnet_id": cluster.worker_subnet_id,
            "pod_subnet_id": cluster.pod_subnet_id,
            "availability_domains": cluster.availability_domains,
            # AMD pools always: the AMD GPU Operator runs the device plugin, not OKE's AMD one.
            "disable_oke_device_plugin": disable_plugin or pool.vendor == catalog.AMD,
        }
        if not args["zones"]:
            del args["zones"]
        component = OkeGpuNodePool(f"{name}-{pool.name}", args, opts=cloud_opts)
        components.append(component)
        pools.append(component.gpu_pool)

    storage_outputs: dict = {}
    storage_ready: list = []
    if config.storage.enabled:  # nothing at all changes without the keys
        ad_number = file_system_ad_number(config)
        ad_name = cluster.availability_domains.apply(lambda names: select_availability_domains(names, (ad_number,))[0])
        backends, storage_ready = storage_from_config(name, config, cluster, ad_name)
        storage_outputs["storage"] = backends

    return ClusterHandle(
        cloud="oci",
        cluster_name=cluster.cluster_name,
        kubeconfig=cluster.kubeconfig,
        provider=cluster.provider,
        pools=pools,
        node_pool_ids={c.gpu_pool.name: c.node_pool_id for c in components},
        outputs={
            "cluster_id": cluster.cluster_id,
            "compartment_id": config.compartment_id,
            "region": config.region,
            "kubernetes_version": cluster.kubernetes_version,
            "vcn_id": cluster.vcn_id,
            "worker_subnet_id": cluster.worker_subnet_id,
            "pod_subnet_id": cluster.pod_subnet_id,
            "load_balancer_subnet_id": cluster.load_balancer_subnet_id,
            "compute_cluster_ids": {c.gpu_pool.name: c.compute_cluster_id for c in components
                                    if c.gpu_pool.rdma_fabric},
            "secrets_key_id": cluster.secrets_key_id,
            "oci_provider": provider,
            # `kube.network_policy_engine.CalicoPolicyEngine` arguments: OKE's CNI enforces no NetworkPolicy.
            "network_policy_engine": network_policy_engine_args(),
            **storage_outputs,
        },
        ready=[*components, *storage_ready],
    )
