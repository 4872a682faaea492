"""`AmdGpuStack`: the AMD software that makes AMD Instinct pools' GPUs schedulable as ``amd.com/gpu``.

cert-manager (which the AMD GPU Operator requires; `cert_manager`'s install, unless the cluster has one already:
``cert_manager_installed``), the operator, one ``DeviceConfig`` per AMD pool and, with monitoring, a ServiceMonitor
for the device metrics exporter and a Grafana dashboard. The decisions live in `amd_values`; this component creates
the objects in order.
"""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import catalog, versions
from ..component_args import DNS_LABEL, Args, KeywordArgs, choice
from ..kubernetes_base.common import check_pool_set, child_opts, helm_release, pools_of, refuse_unless
from ..kubernetes_base.custom_object import KubernetesObject
from ..monitoring.gpu_monitoring import dashboard_configmap_body
from ..pools import GpuPoolSpec
from ..security import namespace_security
from ..serving import cert_manager
from . import amd_values as av


class AmdGpuStackArgs(TypedDict, total=False):
    """Arguments of `AmdGpuStack`."""

    cloud: Required[str]
    """``azure`` or ``oci``: decides who provides the amdgpu driver (`amd_values.DRIVER_PRESETS`)."""
    pools: Required[list[GpuPoolSpec]]
    """The AMD pools (``gpu_model`` of vendor ``amd``); one DeviceConfig each."""
    driver_image: str
    """Registry repository (no tag) where the operator's KMM stores the amdgpu driver images it builds. Required
    where the operator installs the driver (Azure); refused elsewhere."""
    driver_version: str
    """amdgpu driver version the operator installs. Default ``30.20.1`` (the chart's)."""
    nfd_installed: bool
    """Another stack already runs node-feature-discovery: the operator's NFD subchart stays off. Default false."""
    monitoring: bool
    """Create the exporter's ServiceMonitor and the Grafana dashboard (needs the Prometheus Operator CRDs: make this
    component depend on the kube-prometheus-stack release). Default false."""
    service_monitor_labels: dict[str, str]
    """Extra labels on the ServiceMonitor (``{"release": <kube-prometheus-stack release>}``). Default none."""
    monitoring_namespace: str
    """Namespace of the Grafana dashboard ConfigMap (where the Grafana sidecar looks). Required with monitoring."""
    namespace: str
    """Namespace of the operator and the DeviceConfigs. Default ``kube-amd-gpu``."""
    cert_manager_installed: bool
    """cert-manager already runs in the cluster (the platform's shared `CertManager`: make this component depend on
    its release); the stack installs none. Default false: the stack installs cert-manager itself."""


RULES = {"cloud": choice(*sorted(av.DRIVER_PRESETS)), "namespace": DNS_LABEL, "monitoring_namespace": DNS_LABEL}


def checked_args(name: str, args: AmdGpuStackArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument)."""
    checker = Args("AmdGpuStack", name)
    checked = checker.check(args, AmdGpuStackArgs, RULES)
    pools = checked["pools"]
    check_pool_set(checker, pools)
    if not pools:
        checker.fail("pools", "must list at least one AMD pool")
    for i, pool in enumerate(pools):
        if catalog.vendor_of(pool.get("gpu_model", "")).key != catalog.AMD:
            checker.fail(f"pools[{i}].gpu_model", f"'{pool.get('gpu_model')}' is not an AMD accelerator")
    managed = av.DRIVER_PRESETS[checked["cloud"]].operator_installs
    if managed and not checked.get("driver_image"):
        checker.fail("driver_image", f"is required on {catalog.CLOUD_NAMES[checked['cloud']]}: "
                                     f"{av.DRIVER_PRESETS[checked['cloud']].reason}, so the operator builds the "
                                     "amdgpu driver image and pushes it there")
    refuse_unless(checker, checked, "driver_image", managed, "where the operator installs the driver (Azure)")
    refuse_unless(checker, checked, "driver_version", managed, "where the operator installs the driver (Azure)")
    refuse_unless(checker, checked, "service_monitor_labels", bool(checked.get("monitoring")), "with monitoring: true")
    refuse_unless(checker, checked, "monitoring_namespace", bool(checked.get("monitoring")), "with monitoring: true")
    if checked.get("monitoring") and not checked.get("monitoring_namespace"):
        checker.fail("monitoring_namespace", "is required with monitoring: true (the dashboard ConfigMap goes there)")
    return checked


class AmdGpuStack(pulumi.ComponentResource, metaclass=KeywordArgs):
    """cert-manager, the AMD GPU Operator, a DeviceConfig per AMD pool, and the exporter's monitoring objects."""

    namespace: pulumi.Output[str]
    """Namespace of the operator and its DeviceConfigs."""

    def __init__(self, name: str, args: AmdGpuStackArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:AmdGpuStack", name, {}, opts)
        pools = pools_of(args["pools"])
        ns = args.get("namespace", av.DEFAULT_NAMESPACE)
        managed = av.DRIVER_PRESETS[args["cloud"]].operator_installs
        nfd_installed = bool(args.get("nfd_installed", False))

        self.runs_nfd = not nfd_installed
        """True when the operator's node-feature-discovery subchart runs (the cluster's only NFD)."""
        self.cert_manager: Optional[k8s.helm.v3.Release] = None
        """The cert-manager release the stack installed (None with ``cert_manager_installed``)."""
        if not args.get("cert_manager_installed"):
            cm_namespace = k8s.core.v1.Namespace(f"{name}-cert-manager-namespace", **namespace_security.namespace_body(
                av.CERT_MANAGER_NAMESPACE, av.CERT_MANAGER_POD_SECURITY), opts=child_opts(self, opts))
            self.cert_manager = helm_release(
                f"{name}-cert-manager", versions.CERT_MANAGER, av.CERT_MANAGER_RELEASE, av.CERT_MANAGER_NAMESPACE,
                cert_manager.cert_manager_values(), child_opts(self, opts, depends_on=[cm_namespace]),
                create_namespace=False)
        operator_namespace = k8s.core.v1.Namespace(f"{name}-namespace", **namespace_security.namespace_body(
            ns, av.OPERATOR_POD_SECURITY), opts=child_opts(self, opts))
        # After cert-manager: the operator's chart creates Certificates and Issuers for its webhooks (a shared
        # install comes first through this component's own dependencies).
        own_cert_manager = [self.cert_manager] if self.cert_manager is not None else []
        self.release = helm_release(
            f"{name}-operator", versions.AMD_GPU_OPERATOR, av.OPERATOR_RELEASE, ns,
            av.operator_values(pools, driver_managed=managed, nfd_installed=nfd_installed),
            child_opts(self, opts, depends_on=[operator_namespace, *own_cert_manager]), create_namespace=False)
        """The operator release (its chart installs the DeviceConfig CRD)."""
        after_operator = child_opts(self, opts, depends_on=[self.release])
        self.device_configs = [
            KubernetesObject(f"{name}-{av.device_config_name(pool)}", av.device_config(
                pool, ns, driver_managed=managed, driver_image=args.get("driver_image"),
                driver_version=args.get("driver_version", av.DEFAULT_DRIVER_VERSION)), opts=after_operator)
            for pool in pools
        ]
        if args.get("monitoring"):
            labels = dict(args.get("service_monitor_labels") or {})
            KubernetesObject(f"{name}-service-monitor", av.service_monitor(pools, ns, labels), opts=after_operator)
            k8s.core.v1.ConfigMap(f"{name}-dashboard", **dashboard_configmap_body(
                av.DASHBOARD_SLUG, args["monitoring_namespace"], av.dashboard()), opts=child_opts(self, opts))
        self.namespace = pulumi.Output.from_input(ns)
        self.register_outputs({"namespace": self.namespace})
