"""`NvidiaGpuStack`: the NVIDIA software that makes the GPU pools' GPUs schedulable, on any cloud.

The decisions (values per cloud and mode, sharing configs, quotas) live in `nvidia_values` and `sharing`; this
component only creates the namespace, the sharing ConfigMap, the Helm releases and the per-cloud extras in the
right order. See `nvidia_values` for what each ``gpu_software`` mode installs.
"""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import catalog, versions
from ..component_args import DNS_LABEL, KUBERNETES_VERSION, Args, KeywordArgs, choice
from ..config_model import DEFAULT_KUBERNETES_VERSION, NodePoolConfig
from ..errors import ConfigError
from ..kubernetes_base.common import check_pool_set, checked_cloud, child_opts, helm_release, pools_of, refuse_unless
from ..pools import GpuPoolSpec
from ..security import namespace_security
from . import dra_values, gpu_allocation, gpu_software, sharing
from . import nvidia_values as nv


class NvidiaGpuStackArgs(TypedDict, total=False):
    """Arguments of `NvidiaGpuStack`."""

    cloud: Required[str]
    """``aws``, ``azure``, ``gcp``, ``oci`` or ``existing``: picks the host preset (driver, toolkit, paths)."""
    gpu_software: str
    """``operator`` (GPU Operator), ``device-plugin`` (device plugin + GFD + dcgm-exporter charts) or
    ``cloud-managed`` (the cloud's own; only the dcgm-exporter chart, none on GKE). Default ``operator``."""
    pools: list[GpuPoolSpec]
    """The platform's GPU pools: tolerations, sharing configs, MIG and HAMi pools come from them."""
    monitoring: bool
    """Create the DCGM exporter's ServiceMonitor (needs the Prometheus Operator CRDs: make this component depend
    on the kube-prometheus-stack release). Default false."""
    service_monitor_labels: dict[str, str]
    """Extra labels on the DCGM ServiceMonitor, e.g. ``{"release": <kube-prometheus-stack release>}`` when
    Prometheus selects ServiceMonitors by label. Default none."""
    namespace: str
    """Namespace of the NVIDIA stack (and of the sharing ConfigMap, which the plugin reads from its own
    namespace). Default ``gpu-operator``."""
    mig_strategy: str
    """``single`` (MIG slices advertised as ``nvidia.com/gpu``, default) or ``mixed`` (one resource per
    profile, ``nvidia.com/mig-3g.40gb``)."""
    kubernetes_version: str
    """The cluster's Kubernetes minor (``1.34``): DRA pools need the minor the DRA driver serves
    (`gpu_allocation.kubernetes_problem`). Default the platform's default minor."""
    driver_preinstalled: Optional[bool]
    """GPU Operator only: the nodes get the NVIDIA driver from elsewhere. Default per cloud, matching what the
    cloud layers create: EKS NVIDIA AMIs and OKE GPU images yes; AKS no (operator-mode pools are created without
    AKS's driver); GKE no (Ubuntu pools; ``True`` selects Google's driver installer, for COS pools); existing
    clusters no."""
    kueue: bool
    """GPU Operator installing the driver only: the cluster runs Kueue. Driver upgrades then wait for the pods of
    every workload Kueue admitted (``kueue.x-k8s.io/podset``); without Kueue, for the pods labelled
    ``gpu-platform.io/driver-upgrade: wait-for-completion`` (`nvidia_values.driver_upgrade_wait_selector`). Default
    true."""


RULES = {
    "cloud": choice(*catalog.CLOUDS),
    "gpu_software": choice(*nv.GPU_SOFTWARE_MODES),
    "mig_strategy": choice(*nv.MIG_STRATEGIES),
    "namespace": DNS_LABEL,
    "kubernetes_version": KUBERNETES_VERSION,
}
# Clouds whose GPU images always carry the driver (`nv.host_preset` ignores ``driver_preinstalled`` there).
DRIVER_ALWAYS_PREINSTALLED = ("aws", "oci")


def checked_args(name: str, args: NvidiaGpuStackArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("NvidiaGpuStack", name)
    checker = Args("NvidiaGpuStack", name, checked_cloud(checker, args))
    checked = checker.check(args, NvidiaGpuStackArgs, RULES)
    cloud, mode, pools = checked["cloud"], checked.get("gpu_software", "operator"), checked.get("pools", [])
    check_pool_set(checker, pools)
    _check_pool_software(checker, cloud, mode, pools)
    _check_dra(checker, checked, mode, pools)
    refuse_unless(checker, checked, "mig_strategy", mode != "cloud-managed",
                  "with gpu_software 'operator' or 'device-plugin' (the cloud partitions MIG GPUs itself)")
    refuse_unless(checker, checked, "mig_strategy", any(p.get("sharing_mode") == "mig" for p in pools),
                  "with a MIG pool (sharing_mode 'mig')")
    refuse_unless(checker, checked, "driver_preinstalled", mode == "operator", "with gpu_software 'operator'")
    if checked.get("driver_preinstalled") is False and cloud in DRIVER_ALWAYS_PREINSTALLED:
        checker.fail("driver_preinstalled", f"{catalog.CLOUD_NAMES[cloud]} GPU node images always carry the NVIDIA "
                                            "driver; the GPU Operator does not install one there")
    refuse_unless(checker, checked, "service_monitor_labels", bool(checked.get("monitoring")), "with monitoring: true")
    if gke_manages_everything(cloud, mode):
        why = "off GKE's cloud-managed GPU software (GKE runs the driver, device plugin and DCGM exporter itself: " \
              "the stack creates nothing there; GpuMonitoring's gke_managed_dcgm scrapes GKE's exporter)"
        for key in ("monitoring", "namespace"):
            if checked.get(key):
                checker.fail(key, f"takes effect only {why}")
    refuse_unless(checker, checked, "kueue", manages_driver(cloud, mode, checked.get("driver_preinstalled")),
                  "where the GPU Operator installs the driver (it picks the pods a driver upgrade waits for)")
    return checked


def gke_manages_everything(cloud: str, gpu_software: str) -> bool:
    """True on GKE with ``cloud-managed`` GPU software: GKE runs every NVIDIA component, the stack creates nothing
    (no namespace, no release), so its namespace and monitoring arguments are refused there."""
    return cloud == "gcp" and gpu_software == "cloud-managed"


def manages_driver(cloud: str, gpu_software: str, driver_preinstalled: Optional[bool] = None) -> bool:
    """True when the GPU Operator installs, and so upgrades, the NVIDIA driver (``driver.enabled``)."""
    return gpu_software == "operator" and nv.host_preset(cloud, driver_preinstalled).driver


def _check_dra(checker: Args, checked: dict, mode: str, pools: list[GpuPoolSpec]) -> None:
    """The stack file's rules for DRA pools: the Kubernetes minor the DRA driver serves, and the GPU Operator."""
    first = next((i for i, pool in enumerate(pools_of(pools)) if pool.dra), None)
    if first is None:
        return
    version = checked.get("kubernetes_version", DEFAULT_KUBERNETES_VERSION)
    problem = gpu_allocation.kubernetes_problem(version)
    if problem is not None:
        checker.fail("kubernetes_version", problem.replace("kubernetesVersion", "kubernetes_version"))
    problem = gpu_allocation.software_problem(mode)
    if problem is not None:
        checker.fail(f"pools[{first}].gpu_allocation", problem.replace("gpuSoftware", "gpu_software"))


def _check_pool_software(checker: Args, cloud: str, mode: str, pools: list[GpuPoolSpec]) -> None:
    """The stack file's rule: sharing modes the chosen GPU software can deliver on this cloud (errors renamed to
    this component's argument names)."""
    # The rule reads only each pool's sharing: a stand-in nodePools entry carries it.
    stand_ins = [NodePoolConfig(name=pool.name, instance_type=pool.instance_type, sharing=pool.sharing)
                 for pool in pools_of(pools)]
    try:
        gpu_software.check_pool_software(cloud, mode, stand_ins)
    except ConfigError as err:
        path = err.path.replace("nodePools", "pools").replace("gpuSoftware", "gpu_software")
        checker.fail(path.replace("sharing.mode", "sharing_mode").replace("sharing.replicas", "sharing_replicas"),
                     err.problem.replace("gpuSoftware", "gpu_software").replace("nodePools", "pools"))


class NvidiaGpuStack(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The GPU Operator or the device plugin with GFD and NFD, GPU sharing configs, DCGM exporter, HAMi, and NVIDIA's
    DRA driver for the pools whose GPUs are allocated through DRA."""

    namespace: pulumi.Output[str]
    """Namespace of the stack."""
    sharing_config: pulumi.Output[str]
    """Name of the sharing ConfigMap, empty without time-slicing/MPS pools."""

    def __init__(self, name: str, args: NvidiaGpuStackArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:NvidiaGpuStack", name, {}, opts)
        cloud = args["cloud"]
        mode = args.get("gpu_software", "operator")
        mig_strategy = args.get("mig_strategy", "single")
        pools = pools_of(args.get("pools", []))
        ns = args.get("namespace", nv.DEFAULT_NAMESPACE)
        monitoring = bool(args.get("monitoring", False))
        monitor_labels = dict(args.get("service_monitor_labels") or {})
        preinstalled = args.get("driver_preinstalled")

        self.runs_nfd = nv.runs_nfd(mode)
        """True when this stack deploys node-feature-discovery (the Network Operator's must then stay off)."""
        self.releases: list[k8s.helm.v3.Release] = []
        """Every Helm release, in creation order; RDMA and later layers depend on them."""
        self.release: Optional[k8s.helm.v3.Release] = None
        """The release that owns ``nvidia.com/gpu``: GPU Operator or device plugin (None when cloud-managed)."""
        self.hami_release: Optional[k8s.helm.v3.Release] = None
        self.dra_release: Optional[k8s.helm.v3.Release] = None
        """NVIDIA's DRA driver, when a pool's GPUs are allocated through DRA."""
        self.dcgm_release: Optional[k8s.helm.v3.Release] = None
        """The standalone dcgm-exporter release (device-plugin and cloud-managed modes)."""

        needs_namespace = not gke_manages_everything(cloud, mode)
        prerequisites: list[pulumi.Resource] = []
        if needs_namespace:
            # Pod Security privileged: the operands are privileged DaemonSets with host paths (`namespace_security`).
            self.namespace_resource = k8s.core.v1.Namespace(
                f"{name}-namespace", **namespace_security.namespace_body(
                    ns, namespace_security.namespace_pod_security("gpu-software")), opts=child_opts(self, opts))
            prerequisites.append(self.namespace_resource)
        in_ns = child_opts(self, opts, depends_on=list(prerequisites))

        data = sharing.configmap_data(pools) if mode != "cloud-managed" else {}
        checksum = sharing.config_checksum(data) if data else None
        if data:
            prerequisites.append(k8s.core.v1.ConfigMap(
                f"{name}-sharing", **nv.sharing_configmap_body(ns, data), opts=in_ns))

        if mode == "operator":
            preset = nv.host_preset(cloud, preinstalled)
            if preset.critical_pod_quota:
                prerequisites.append(k8s.core.v1.ResourceQuota(
                    f"{name}-critical-pods", **nv.gke_critical_pod_quota(ns, pools), opts=in_ns))
            if preset.driver_installer_manifest:
                # Google's own manifest (kube-system DaemonSet), fetched by the provider at deploy time.
                prerequisites.append(k8s.yaml.v2.ConfigFile(
                    f"{name}-gke-driver-installer", file=preset.driver_installer_manifest,
                    opts=child_opts(self, opts)))
            self.release = self._release(name, "gpu-operator", versions.GPU_OPERATOR, ns, nv.gpu_operator_values(
                cloud, pools, monitoring=monitoring, service_monitor_labels=monitor_labels,
                sharing_checksum=checksum, mig_strategy=mig_strategy, driver_preinstalled=preinstalled,
                kueue=bool(args.get("kueue", True)),
            ), opts, prerequisites)
        elif mode == "device-plugin":
            self.release = self._release(name, "nvidia-device-plugin", versions.DEVICE_PLUGIN, ns,
                                         nv.device_plugin_values(pools, sharing_checksum=checksum,
                                                                 mig_strategy=mig_strategy), opts, prerequisites)
        if mode == "device-plugin" or (mode == "cloud-managed" and cloud != "gcp"):
            self.dcgm_release = self._release(name, "dcgm-exporter", versions.DCGM_EXPORTER, ns,
                                              nv.dcgm_exporter_values(pools, monitoring=monitoring,
                                                                      service_monitor_labels=monitor_labels),
                                              opts, prerequisites)
        dra = dra_values.dra_driver_values(cloud, pools, preinstalled)
        if dra:
            # After the operator: the DRA driver's kubelet plugin needs its driver, toolkit (CDI) and NFD labels.
            after = [self.release] if self.release is not None else []
            self.dra_release = self._release(name, dra_values.RELEASE_NAME, versions.DRA_DRIVER, ns, dra, opts,
                                             [*prerequisites, *after])
        hami = nv.hami_values(cloud, pools, mode, preinstalled) if mode != "cloud-managed" else {}
        if hami:
            # After NVIDIA's stack: with the operator, HAMi's plugin waits for the operator's toolkit.
            after = [self.release] if self.release is not None else []
            self.hami_release = self._release(name, "hami", versions.HAMI, ns, hami, opts, [*prerequisites, *after])

        self.namespace = pulumi.Output.from_input(ns if needs_namespace else "")
        self.sharing_config = pulumi.Output.from_input(sharing.CONFIG_MAP_NAME if data else "")
        self.register_outputs({"namespace": self.namespace, "sharing_config": self.sharing_config})

    def _release(self, name: str, release_name: str, chart: versions.Chart, namespace: str, values: dict,
                 opts: Optional[pulumi.ResourceOptions], depends_on: list) -> k8s.helm.v3.Release:
        """A child Helm release named ``release_name`` in the cluster, ``<name>-<release_name>`` in Pulumi."""
        release = helm_release(f"{name}-{release_name}", chart, release_name, namespace, values,
                               child_opts(self, opts, depends_on=depends_on), create_namespace=False)
        self.releases.append(release)
        return release
