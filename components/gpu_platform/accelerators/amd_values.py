"""Helm values and object bodies of the AMD Instinct stack (pure functions): cert-manager, the AMD GPU Operator,
one ``DeviceConfig`` per AMD pool, the metrics exporter's ServiceMonitor and a Grafana dashboard.

Sources (ROCm/gpu-operator@v1.5.1 unless named): ``docs/installation/kubernetes-helm.md`` (cert-manager first, the
options to skip NFD/KMM and the default DeviceConfig), ``docs/drivers/installation.md`` (``spec.driver.enable:
false`` uses the node's driver; ``true`` lets KMM build and load the out-of-tree ``amdgpu`` into ``spec.driver
.image``, with ``blacklist: true`` for the inbox module), ``internal/metricsexporter/metricsexporter.go`` (the
exporter Service: label ``app.kubernetes.io/service: <DeviceConfig>-metrics-exporter``, port ``exporter-port``,
5000). Metric names: ROCm/device-metrics-exporter@v1.5.1 ``docs/configuration/metricslist.md`` (exported in lower
case without a prefix, as its ``grafana/dashboard_system.json`` queries them).

Driver per cloud (`DRIVER_PRESETS`): AKS installs no driver on AMD pools and requires ``gpuProfile.driver: None``
(AKS ``use-amd-gpus.md``: "AKS does not automate the installation of GPU drivers nor the AMD GPU device plugin"),
so the operator installs ``amdgpu`` there. On OKE the only documented MI300X node images are oracle-quickstart/
oci-hpc-oke's Ubuntu images with ROCm (``docs/worker-node-images.md``: "ROCm 7.2.4"), which carry the driver: the
operator uses it.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from .. import catalog
from ..kubernetes_base.common import all_pool_tolerations, metadata
from ..monitoring import dashboards as d
from ..pools import GpuPool
from ..security.namespace_security import PRIVILEGED, PodSecurity
from ..serving import cert_manager as cert_manager_install
from ..versions import AMD_API_VERSION, PROMETHEUS_OPERATOR_API_VERSION

DEFAULT_NAMESPACE = "kube-amd-gpu"
"""The namespace of AMD's install guide."""
OPERATOR_RELEASE = "amd-gpu-operator"

OPERATOR_POD_SECURITY = PodSecurity(PRIVILEGED, (
    "the AMD GPU Operator's operands (KMM driver loader, device plugin, node labeller, device metrics exporter) and "
    "its node-feature-discovery workers run privileged or with hostPath volumes (/dev, /sys, "
    "/var/lib/kubelet/device-plugins, /var/lib/kubelet/pod-resources)"))
# cert-manager, which the operator requires: the platform's shared install (`cert_manager`).
CERT_MANAGER_NAMESPACE = cert_manager_install.DEFAULT_NAMESPACE
CERT_MANAGER_RELEASE = cert_manager_install.RELEASE_NAME
CERT_MANAGER_POD_SECURITY = cert_manager_install.POD_SECURITY

METRICS_PORT = 5000
METRICS_PORT_NAME = "exporter-port"
METRICS_SERVICE_LABEL = "app.kubernetes.io/service"
SERVICE_MONITOR_NAME = "amd-device-metrics-exporter"
DASHBOARD_SLUG = "amd-gpu"
DEFAULT_DRIVER_VERSION = "30.20.1"
"""amdgpu driver the operator installs where it owns the driver: the chart's ``deviceConfig.spec.driver.version``
at v1.5.1 (ROCm 7.x versioning)."""

# The chart's own NFD worker tolerations (values.yaml node-feature-discovery.worker.tolerations): a list set in
# values replaces them, so they are kept beside the pools'.
NFD_DEFAULT_TOLERATIONS = (
    {"key": "amd-dcm", "operator": "Equal", "value": "up", "effect": "NoExecute"},
    {"key": "amd-gpu-unhealthy", "operator": "Exists", "effect": "NoSchedule"},
)

# Exported metric names (device-metrics-exporter v1.5.1 metricslist.md; MI3xx).
GPU_UTIL = "gpu_gfx_activity"
"""Graphics engine usage, percent."""
MEMORY_ACTIVITY = "gpu_umc_activity"
"""Memory controller usage, percent."""
USED_VRAM = "gpu_used_vram"
TOTAL_VRAM = "gpu_total_vram"
"""VRAM used / total, MB."""
PACKAGE_POWER = "gpu_package_power"
"""Socket power, W."""
JUNCTION_TEMPERATURE = "gpu_junction_temperature"
"""Hotspot temperature, Celsius."""
DASHBOARD_METRICS = (GPU_UTIL, MEMORY_ACTIVITY, USED_VRAM, TOTAL_VRAM, PACKAGE_POWER, JUNCTION_TEMPERATURE)


@dataclass(frozen=True)
class DriverPreset:
    """Who provides the ``amdgpu`` kernel driver on a cloud's AMD nodes."""

    operator_installs: bool
    """``spec.driver.enable`` of the DeviceConfigs (KMM builds and loads the out-of-tree driver)."""
    reason: str


DRIVER_PRESETS: dict[str, DriverPreset] = {
    "azure": DriverPreset(True, "AKS AMD pools get no GPU driver (gpuProfile.driver None is enforced)"),
    "oci": DriverPreset(False, "the oci-hpc-oke ROCm node images carry the amdgpu driver"),
}
"""The clouds that sell an AMD Instinct shape the catalog holds."""


def amd_pools(pools: Sequence[GpuPool]) -> list[GpuPool]:
    """The pools whose accelerators are AMD's."""
    return [p for p in pools if p.vendor == catalog.AMD]


def cert_manager_values() -> dict[str, Any]:
    """cert-manager with its CRDs (the operator's webhooks and KMM need its Certificate/Issuer kinds)."""
    return cert_manager_install.cert_manager_values()


def operator_values(pools: Sequence[GpuPool], *, driver_managed: bool, nfd_installed: bool) -> dict[str, Any]:
    """The operator chart: no default DeviceConfig (the platform writes one per pool), its NFD only when no other
    stack runs one, KMM only when it installs the driver, and no auto-remediation (Argo), which the platform does
    not wire."""
    values: dict[str, Any] = {
        "crds": {"defaultCR": {"install": False}},
        "kmm": {"enabled": driver_managed, "watch": driver_managed},
        "remediation": {"enabled": False, "installCRDs": False},
    }
    if nfd_installed:
        values["node-feature-discovery"] = {"enabled": False}
    else:
        values["node-feature-discovery"] = {"enabled": True, "worker": {
            "tolerations": [*NFD_DEFAULT_TOLERATIONS, *all_pool_tolerations(pools)]}}
    return values


DRIVER_DRAIN_TIMEOUT_SECONDS = 0
"""``nodeDrainPolicy.timeoutSeconds``: 0 waits for ever (DeviceConfig CRD: "zero means infinite"). The AMD operator
has no wait-for-jobs step, so the drain itself is the wait: evictions a PodDisruptionBudget refuses are retried until
it allows them, and a pod is never cut short by a timeout."""


def driver_upgrade_policy() -> dict[str, Any]:
    """``spec.driver.upgradePolicy`` of a DeviceConfig (the CRD at ROCm/gpu-operator@v1.5.1): automatic, one node at a
    time, stop after one failed node, and a drain through the Eviction API that never forces.

    How the operator upgrades (internal/controllers/upgrademgr.go@v1.5.1 ``handleNodeUpgrade``/``deleteOrDrainPods``):
    it cordons the node, then removes the pods using ``amd.com/gpu`` or ``/dev/dri`` with drain.Helper, through the
    Eviction API (PodDisruptionBudgets hold) when ``nodeDrainPolicy`` is set, by plain deletion (``DisableEviction``,
    no budget honoured) when only ``podDeletionPolicy`` is: so only ``nodeDrainPolicy`` is set. ``gracePeriodSeconds:
    -1`` gives each pod its own termination grace period. A pod no controller owns stops the drain (``force: false``)
    and the node is marked drain-failed rather than losing it. A training job's pods are evicted unless a
    PodDisruptionBudget protects them (docs/nvidia.md "Driver upgrades that wait for jobs").
    """
    return {
        "enable": True,
        "maxParallelUpgrades": 1,
        "maxUnavailableNodes": 1,
        "nodeDrainPolicy": {"force": False, "timeoutSeconds": DRIVER_DRAIN_TIMEOUT_SECONDS, "gracePeriodSeconds": -1},
    }


def device_config_name(pool: GpuPool) -> str:
    return f"amd-{pool.name}"


def device_config(pool: GpuPool, namespace: str, *, driver_managed: bool, driver_image: Optional[str] = None,
                  driver_version: str = DEFAULT_DRIVER_VERSION) -> dict[str, Any]:
    """The DeviceConfig of one AMD pool: its nodes (pool label), driver per cloud, device plugin and node labeller,
    metrics exporter on ClusterIP; every operand tolerates the pool's taints. Images stay the operator's defaults."""
    tolerations = pool.tolerations
    driver: dict[str, Any] = {"enable": driver_managed}
    if driver_managed:
        if not driver_image:
            raise ValueError(f"pool {pool.name}: the operator installs the driver here and needs a driver image "
                             "repository")
        driver.update(blacklist=True, image=driver_image, version=driver_version, tolerations=tolerations,
                      upgradePolicy=driver_upgrade_policy())
    return {
        "apiVersion": AMD_API_VERSION, "kind": "DeviceConfig",
        "metadata": metadata(device_config_name(pool), namespace),
        "spec": {
            "selector": dict(pool.selector),
            "driver": driver,
            "devicePlugin": {"enableDevicePlugin": True, "enableNodeLabeller": True,
                             "devicePluginTolerations": tolerations, "nodeLabellerTolerations": tolerations},
            "metricsExporter": {"enable": True, "serviceType": "ClusterIP", "port": METRICS_PORT,
                                "tolerations": tolerations},
        },
    }


def service_monitor(pools: Sequence[GpuPool], namespace: str, extra_labels: dict[str, str]) -> dict[str, Any]:
    """Scrapes every DeviceConfig's exporter Service (the operator labels each ``<DeviceConfig>-metrics-exporter``).
    ``node`` comes from the endpoint's node, as the DCGM exporter's scrape does."""
    return {
        "apiVersion": PROMETHEUS_OPERATOR_API_VERSION, "kind": "ServiceMonitor",
        "metadata": metadata(SERVICE_MONITOR_NAME, namespace, dict(extra_labels)),
        "spec": {
            "selector": {"matchExpressions": [{
                "key": METRICS_SERVICE_LABEL, "operator": "In",
                "values": sorted(f"{device_config_name(p)}-metrics-exporter" for p in pools)}]},
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [{
                "port": METRICS_PORT_NAME, "path": "/metrics", "interval": "30s", "honorLabels": True,
                "relabelings": [{"action": "replace", "sourceLabels": ["__meta_kubernetes_endpoint_node_name"],
                                 "targetLabel": "node"}],
            }],
        },
    }


def dashboard() -> dict[str, Any]:
    """AMD GPU utilisation, memory, power and temperature per node and GPU."""
    by_gpu = "hostname, gpu_id"
    node = '{hostname=~"$hostname"}'
    panels = [
        d.gauge("Cluster GPU utilisation", f"avg({GPU_UTIL})", description="Mean graphics activity, all GPUs"),
        d.stat("AMD GPUs reporting", f"count({GPU_UTIL})"),
        d.timeseries("GPU utilisation", [d.target(f"avg by ({by_gpu}) ({GPU_UTIL}{node})", "{{hostname}} {{gpu_id}}")],
                     unit="percent"),
        d.timeseries("Memory controller activity", [d.target(
            f"avg by ({by_gpu}) ({MEMORY_ACTIVITY}{node})", "{{hostname}} {{gpu_id}}")], unit="percent"),
        d.timeseries("VRAM used", [d.target(
            f"100 * sum by ({by_gpu}) ({USED_VRAM}{node}) / sum by ({by_gpu}) ({TOTAL_VRAM}{node})",
            "{{hostname}} {{gpu_id}}")], unit="percent"),
        d.timeseries("Package power", [d.target(f"sum by ({by_gpu}) ({PACKAGE_POWER}{node})",
                                                "{{hostname}} {{gpu_id}}")], unit="watt"),
        d.timeseries("Junction temperature", [d.target(f"max by ({by_gpu}) ({JUNCTION_TEMPERATURE}{node})",
                                                       "{{hostname}} {{gpu_id}}")], unit="celsius"),
    ]
    return d.dashboard("amd-gpu", "AMD GPUs", "AMD Instinct GPUs from the AMD device metrics exporter", panels,
                       [d.query_variable("hostname", "Node", GPU_UTIL, "hostname")])
