"""Helm values and object bodies of the NVIDIA GPU stack, per cloud and GPU-software mode (pure functions).

Every values key set here exists in the pinned chart's ``values.yaml`` (``tests/data/chart_keys`` holds the key
lists extracted from upstream; ``tests/test_nvidia_chart_keys.py`` checks every key against them).

Modes (``gpuSoftware``):

- ``operator``: the NVIDIA GPU Operator, with the per-cloud host preset below, its own NFD (the cluster's only
  one), GPU Feature Discovery, device plugin, MIG manager and DCGM exporter.
- ``device-plugin``: the standalone NVIDIA device plugin chart with GPU Feature Discovery (which brings NFD as a
  subchart), plus the dcgm-exporter chart.
- ``cloud-managed``: the cloud's own driver and device plugin. Only the dcgm-exporter chart is added, except on
  GKE, whose managed DCGM exporter (cluster ``monitoring_config``, set by the GKE layer) already covers it; AKS
  and OKE offer none, and the issue asks for DCGM metrics on every GPU node.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from .. import labels
from ..kubernetes_base.common import all_pool_tolerations, metadata
from ..pools import GpuPool
from ..versions import GKE_COS_DRIVER_INSTALLER, HAMI_KUBE_SCHEDULER_REGISTRY
from . import sharing

GPU_SOFTWARE_MODES = ("operator", "device-plugin", "cloud-managed")
MIG_STRATEGIES = ("single", "mixed")
DEFAULT_NAMESPACE = "gpu-operator"
HAMI_MODE = "hami"

# GKE: NVIDIA's guide (cloud-native-docs gpu-operator/google-gke.rst) puts driver and toolkit under this
# writable, stateful directory of the GKE node images.
GKE_NVIDIA_DIR = "/home/kubernetes/bin/nvidia"
# GKE: a ResourceQuota admission limits system-*-critical pods to kube-system unless a quota with a PriorityClass
# scope exists in the namespace (gpu-operator/manifests/input/google-gke-gpu-operator-quota.yaml).
CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
GKE_QUOTA_NAME = "gpu-operator-quota"
GKE_QUOTA_MIN_PODS = 100
"""NVIDIA's example value; raised with the pool sizes by `gke_quota_pods`."""
GKE_QUOTA_PODS_PER_NODE = 12
"""Operand pods one GPU node may run at once: driver validation, toolkit, device plugin, MPS daemon, GFD, DCGM
exporter, MIG manager, validator, NFD worker, plus rolling-update surge."""


@dataclass(frozen=True)
class HostPreset:
    """What the GPU Operator must install on a cloud's GPU nodes, and where the node image keeps it."""

    driver: bool
    """The operator installs the driver (``driver.enabled``)."""
    toolkit: bool
    """The operator installs the container toolkit (``toolkit.enabled``)."""
    runtime_class: Optional[str] = None
    """``operator.runtimeClass``: the RuntimeClass (handler) of the NVIDIA runtime the node image configures."""
    driver_install_dir: Optional[str] = None
    """``hostPaths.driverInstallDir``: where a driver installed outside the operator lives."""
    toolkit_install_dir: Optional[str] = None
    """``toolkit.installDir``."""
    cdi: Optional[bool] = None
    """``cdi.enabled`` where the cloud's guide sets it."""
    toolkit_env: tuple[tuple[str, str], ...] = ()
    mig_manager_env: tuple[tuple[str, str], ...] = ()
    critical_pod_quota: bool = False
    """A ResourceQuota admitting system-*-critical pods in the operator namespace (GKE)."""
    driver_installer_manifest: Optional[str] = None
    """A cloud driver-installer manifest to apply (GKE with automatic driver installation disabled)."""


def host_preset(cloud: str, driver_preinstalled: Optional[bool] = None) -> HostPreset:
    """The GPU Operator host preset of a cloud.

    ``driver_preinstalled`` overrides the platform's default for clouds where both exist (AKS: the default image
    carries driver and toolkit, but the AKS layer creates operator-mode pools with ``gpuProfile.driver: None``,
    so by default the operator installs both there; GKE: Google's driver installer on COS pools instead of the
    operator's driver on Ubuntu pools; existing clusters: hosts with a driver already).
    """
    if cloud == "aws":
        # EKS NVIDIA AMIs (AL2023 / Bottlerocket) carry driver and toolkit; the operator has no AL2023 driver
        # container (gpu-operator#686) and its toolkit breaks the containerd v3 config of the 1.33 AMIs (#2060).
        return HostPreset(driver=False, toolkit=False)
    if cloud == "azure":
        if driver_preinstalled:
            # cloud-native-docs gpu-operator/microsoft-aks.rst: AKS images with driver and toolkit.
            return HostPreset(driver=False, toolkit=False, runtime_class="nvidia-container-runtime")
        return HostPreset(driver=True, toolkit=True)
    if cloud == "gcp":
        # google-gke.rst: GKE's own driver install and device plugin off on the pools (the GKE layer sets
        # gpu_driver_version INSTALLATION_DISABLED and gke-no-default-nvidia-gpu-device-plugin in operator mode);
        # the critical-pod quota either way; GKE >= 1.33 needs RUNTIME_CONFIG_SOURCE=file for the toolkit, and
        # MIG reconfiguration a reboot on GKE VMs (WITH_REBOOT).
        common = dict(toolkit=True, toolkit_env=(("RUNTIME_CONFIG_SOURCE", "file"),),
                      mig_manager_env=(("WITH_REBOOT", "true"),), critical_pod_quota=True)
        if driver_preinstalled:
            # "Using the Google Driver Installer" (COS pools): Google's installer DaemonSet puts the driver in
            # /home/kubernetes/bin/nvidia, where the toolkit goes too.
            return HostPreset(driver=False, driver_install_dir=GKE_NVIDIA_DIR, toolkit_install_dir=GKE_NVIDIA_DIR,
                              cdi=True, driver_installer_manifest=GKE_COS_DRIVER_INSTALLER, **common)
        # "Using NVIDIA Driver Manager": Ubuntu pools (the GKE layer's default image in operator mode), where the
        # operator's driver container installs the driver.
        return HostPreset(driver=True, **common)
    if cloud == "oci":
        # OKE GPU images carry the driver; the toolkit configures OKE's CRI-O (as oracle-quickstart/oci-hpc-oke
        # does with the OKE GPU Operator add-on, toolkit.enabled default true).
        return HostPreset(driver=False, toolkit=True)
    # An existing / bare-metal cluster: the full operator.
    if driver_preinstalled:
        return HostPreset(driver=False, toolkit=True)
    return HostPreset(driver=True, toolkit=True)


def runs_nfd(gpu_software: str) -> bool:
    """Whether the NVIDIA stack deploys node-feature-discovery (operator: its NFD; device plugin: GFD's NFD)."""
    return gpu_software in ("operator", "device-plugin")


def hami_pools(pools: Sequence[GpuPool]) -> list[GpuPool]:
    """Pools whose GPUs HAMi shares by memory, in name order."""
    return sorted((p for p in pools if p.sharing.mode == HAMI_MODE), key=lambda p: p.name)


def mig_pools(pools: Sequence[GpuPool]) -> list[GpuPool]:
    return sorted((p for p in pools if p.sharing.mode == "mig"), key=lambda p: p.name)


def gpu_node_affinity(without_nvidia_plugin: bool = False) -> dict:
    """Required node affinity for the platform's GPU nodes (every GPU pool carries the pool label).

    With ``without_nvidia_plugin`` it also skips nodes labelled ``nvidia.com/gpu.deploy.device-plugin=false``:
    HAMi pools and EKS Bottlerocket pools, whose own device plugin owns ``nvidia.com/gpu``.
    """
    expressions = [{"key": labels.POOL_LABEL, "operator": "Exists"}]
    if without_nvidia_plugin:
        expressions.append({"key": labels.DEVICE_PLUGIN_DEPLOY_LABEL, "operator": "NotIn", "values": ["false"]})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}


def service_monitor(monitoring: bool, service_monitor_labels: Optional[dict] = None) -> dict:
    """ServiceMonitor settings shared by the operator's and the chart's DCGM exporter.

    ``honorLabels``: the exporter's own ``pod``/``namespace``/``container`` labels name the workload holding the
    GPU; without it Prometheus renames them ``exported_*`` in favour of the exporter pod's target labels.
    """
    monitor: dict = {"enabled": monitoring}
    if monitoring:
        monitor["honorLabels"] = True
        if service_monitor_labels:
            monitor["additionalLabels"] = dict(sorted(service_monitor_labels.items()))
    return monitor


# Driver upgrades (the operator's upgrade controller, NVIDIA/k8s-operator-libs pkg/upgrade as vendored by
# gpu-operator@v26.7.0): a node whose driver is to change is cordoned, then waits until no pod matching
# ``waitForCompletion.podSelector`` runs or is pending on it, then has its GPU pods evicted (``gpuPodDeletion``;
# drain.Helper with the Eviction API, so PodDisruptionBudgets hold), falls back to a drain (cordon and evict every
# non-DaemonSet pod, PodDisruptionBudgets holding) if that fails, restarts the driver pod and is uncordoned.
DRIVER_UPGRADE_WAIT_TIMEOUT_SECONDS = 0
"""``waitForCompletion.timeoutSeconds``: 0 waits for ever (pod_manager.go: no timeout when 0). A job is never cut
short to upgrade a driver; the upgrade of that node waits, the others go on one at a time."""
GPU_POD_EVICTION_TIMEOUT_SECONDS = 300
"""``gpuPodDeletion.timeoutSeconds`` (the chart's value): how long the GPU pods left once the jobs are done (inference
replicas) may take to terminate. Eviction that a PodDisruptionBudget refuses until then hands over to the drain."""
DRAIN_TIMEOUT_SECONDS = 1800
"""``drain.timeoutSeconds``: a drain still refused by a PodDisruptionBudget after 30 minutes stops; the node is left
cordoned in state ``upgrade-failed`` (label ``nvidia.com/gpu-driver-upgrade-state``) with nothing killed, for a person
to look at. The chart's comment advises a finite timeout (values.yaml@v26.7.0 ``driver.upgradePolicy.drain``)."""


def driver_upgrade_wait_selector(kueue: bool) -> str:
    """The ``waitForCompletion.podSelector``: one Kubernetes label selector (the controller passes it to a pod list
    as ``LabelSelector``, pod_manager.go ``ListPods``), so it cannot say "Kueue's or ours".

    With Kueue: every pod of a workload Kueue admitted carries ``kueue.x-k8s.io/podset`` while it runs, the platform's
    reference training job and every team's job alike; Kueue also admits Deployments (``deployment`` and ``pod``
    integrations), whose replicas never complete, so pods of Deployments, StatefulSets and DaemonSets (their
    controllers' hash labels) are left out. Without Kueue: the platform's own label, which its training pods carry and
    a team's job adds to its pod template to opt in.
    """
    if kueue:
        # Kueue's key first: the chart writes the selector unquoted into the ClusterPolicy (clusterpolicy.yaml@v26.7.0
        # ``podSelector: {{ ... }}``), and a YAML scalar may not start with "!".
        return (f"{labels.KUEUE_PODSET_LABEL},!{labels.POD_TEMPLATE_HASH_LABEL},"
                f"!{labels.CONTROLLER_REVISION_HASH_LABEL}")
    return f"{labels.DRIVER_UPGRADE_LABEL}={labels.DRIVER_UPGRADE_WAIT}"


def driver_upgrade_policy(kueue: bool) -> dict:
    """``driver.upgradePolicy`` of the GPU Operator chart (keys of values.yaml@v26.7.0): automatic, one node at a time,
    waiting for the jobs on it, then evicting (never force-deleting) what is left, PodDisruptionBudgets honoured.

    ``force: false``: a pod no controller owns stops the upgrade of its node instead of being deleted for good.
    ``deleteEmptyDir: true``: the platform's pods keep only scratch in emptyDir (/tmp, caches; checkpoints live on
    volumes), and with ``false`` the controller refuses any node running such a pod (drain.Helper's local-storage
    filter), so no node would ever upgrade.
    """
    return {
        "autoUpgrade": True,
        "maxParallelUpgrades": 1,
        "maxUnavailable": 1,
        "waitForCompletion": {"podSelector": driver_upgrade_wait_selector(kueue),
                              "timeoutSeconds": DRIVER_UPGRADE_WAIT_TIMEOUT_SECONDS},
        "gpuPodDeletion": {"force": False, "timeoutSeconds": GPU_POD_EVICTION_TIMEOUT_SECONDS, "deleteEmptyDir": True},
        "drain": {"enable": True, "force": False, "timeoutSeconds": DRAIN_TIMEOUT_SECONDS, "deleteEmptyDir": True},
    }


def gpu_operator_values(
    cloud: str,
    pools: Sequence[GpuPool],
    *,
    monitoring: bool,
    service_monitor_labels: Optional[dict] = None,
    sharing_checksum: Optional[str] = None,
    mig_strategy: str = "single",
    driver_preinstalled: Optional[bool] = None,
    kueue: bool = True,
) -> dict:
    """Values of the ``gpu-operator`` chart.

    ``sharing_checksum``: set when the sharing ConfigMap exists; it wires ``devicePlugin.config`` to it and goes
    into ``daemonsets.annotations`` (the chart's only pod-annotation key, copied onto every operand pod template
    by ``applyCommonDaemonsetMetadata``), so a changed config rolls the device plugin and GFD that read it.
    The driver DaemonSet is ``OnDelete`` by design and is not restarted by it.

    Where the operator installs the driver it also upgrades it (`driver_upgrade_policy`; ``kueue``: the cluster runs
    Kueue, which picks the pods the upgrade waits for). Where the node image or the cloud owns the driver there is
    nothing for the operator to upgrade and no policy is set.
    """
    preset = host_preset(cloud, driver_preinstalled)
    tolerations = all_pool_tolerations(pools)
    daemonsets: dict = {"tolerations": tolerations}
    device_plugin: dict = {"enabled": True}
    if sharing_checksum:
        daemonsets["annotations"] = {sharing.CHECKSUM_ANNOTATION: sharing_checksum}
        device_plugin["config"] = {"name": sharing.CONFIG_MAP_NAME, "default": sharing.DEFAULT_CONFIG}
    dra = [p for p in pools if p.dra]
    if dra and all(p.dra for p in pools):
        # No pool uses the device plugin; with it on, the operator's validator would wait on every DRA node for an
        # nvidia.com/gpu that never comes (gpu-operator#2550). Mixed clusters keep it, off per node by label.
        device_plugin["enabled"] = False
    driver: dict = {"enabled": preset.driver}
    if preset.driver:
        driver["upgradePolicy"] = driver_upgrade_policy(kueue)
    if dra and preset.driver:
        # NVIDIA's DRA guide: the driver manager evicts the pods that select this label before it upgrades the driver.
        driver["manager"] = {"env": [{"name": "NODE_LABEL_FOR_GPU_POD_EVICTION",
                                      "value": labels.DRA_KUBELET_PLUGIN_LABEL}]}
    toolkit: dict = {"enabled": preset.toolkit}
    if preset.toolkit and preset.toolkit_install_dir:
        toolkit["installDir"] = preset.toolkit_install_dir
    if preset.toolkit and preset.toolkit_env:
        toolkit["env"] = [{"name": k, "value": v} for k, v in preset.toolkit_env]
    values: dict = {
        # The cluster's one NFD: the Network Operator's own stays off when this runs.
        "nfd": {"enabled": True},
        "node-feature-discovery": {"worker": {"tolerations": tolerations}},
        "daemonsets": daemonsets,
        "driver": driver,
        "toolkit": toolkit,
        "devicePlugin": device_plugin,
        "gfd": {"enabled": True},
        "mig": {"strategy": mig_strategy},
        "migManager": {"enabled": True},
        "dcgmExporter": {"enabled": True, "serviceMonitor": service_monitor(monitoring, service_monitor_labels)},
    }
    if preset.mig_manager_env:
        values["migManager"]["env"] = [{"name": k, "value": v} for k, v in preset.mig_manager_env]
    if preset.runtime_class:
        values["operator"] = {"runtimeClass": preset.runtime_class}
    if preset.driver_install_dir:
        values["hostPaths"] = {"driverInstallDir": preset.driver_install_dir}
    if preset.cdi is not None:
        values["cdi"] = {"enabled": preset.cdi}
    return values


def device_plugin_values(
    pools: Sequence[GpuPool],
    *,
    sharing_checksum: Optional[str] = None,
    mig_strategy: str = "single",
) -> dict:
    """Values of the standalone ``nvidia-device-plugin`` chart (with GPU Feature Discovery and its NFD).

    The chart's default affinity needs NFD's ``pci-10de`` label (or ``nvidia.com/gpu.present``); ours selects
    the platform's GPU nodes directly, minus the nodes whose own plugin owns the GPUs (HAMi, Bottlerocket). The
    same affinity applies to GFD and the MPS control daemon of the chart.
    """
    tolerations = all_pool_tolerations(pools)
    values: dict = {
        "gfd": {"enabled": True},
        # GFD turns the NFD subchart on; its worker must run on every tainted GPU node (the upstream default
        # tolerates only nvidia.com/gpu=present and not the pools' own taints).
        "nfd": {"worker": {"tolerations": tolerations}},
        "tolerations": tolerations,
        "affinity": gpu_node_affinity(without_nvidia_plugin=True),
        # Without MIG pools the plugin's own default (none) applies; with them, the platform's strategy.
        "migStrategy": mig_strategy if mig_pools(pools) else "none",
    }
    if sharing_checksum:
        values["config"] = {"name": sharing.CONFIG_MAP_NAME, "default": sharing.DEFAULT_CONFIG}
        # The chart only checksums an embedded config map (``config.map``); for ours, we pass the checksum.
        values["podAnnotations"] = {sharing.CHECKSUM_ANNOTATION: sharing_checksum}
    return values


def dcgm_exporter_values(
    pools: Sequence[GpuPool], *, monitoring: bool, service_monitor_labels: Optional[dict] = None
) -> dict:
    """Values of the standalone ``dcgm-exporter`` chart (device-plugin and cloud-managed modes).

    The chart's ServiceMonitor is on by default and has no CRD check, so it is set explicitly; its default
    tolerations cover only the control plane (dcgm-exporter#731), so the pools' are set.
    """
    return {
        "tolerations": all_pool_tolerations(pools),
        "affinity": gpu_node_affinity(),
        "serviceMonitor": service_monitor(monitoring, service_monitor_labels),
    }


def hami_values(cloud: str, pools: Sequence[GpuPool], gpu_software: str,
                driver_preinstalled: Optional[bool] = None) -> dict:
    """Values of the ``hami`` chart for the pools whose ``sharing.mode`` is ``hami``.

    - Its device plugin runs only on HAMi pools: the chart's default nodeSelector ``gpu=on`` (HAMi's own label)
      plus the sharing label, both set on HAMi pools, where ``nvidia.com/gpu.deploy.device-plugin=false`` keeps
      NVIDIA's plugin off.
    - Its webhook, which would move every pod requesting ``nvidia.com/gpu`` to ``hami-scheduler`` (whose
      extender filters out nodes without HAMi devices), only mutates pods labelled
      ``gpu-platform.io/gpu-sharing=hami``: workloads opt in, everything else keeps the default scheduler.
    - ``deviceSplitCount`` (chart-wide, hence one replica count for all HAMi pools) = ``sharing.replicas``.
    - With the GPU Operator's toolkit (CDI, ``nvidia`` not the default runtime) HAMi pods use the ``nvidia``
      RuntimeClass the operator creates, and the plugin waits for the toolkit to be ready.
    """
    selected = hami_pools(pools)
    if not selected:
        return {}
    registry, repository = HAMI_KUBE_SCHEDULER_REGISTRY
    device_plugin: dict = {
        "nvidiaNodeSelector": {labels.SHARING_LABEL: HAMI_MODE},
        "tolerations": all_pool_tolerations(selected),
        "deviceSplitCount": selected[0].sharing.replicas,
    }
    if gpu_software == "operator" and host_preset(cloud, driver_preinstalled).toolkit:
        device_plugin["runtimeClassName"] = "nvidia"
        device_plugin["gpuOperatorToolkitReady"] = {"enabled": True}
    return {
        "scheduler": {
            "kubeScheduler": {"image": {"registry": registry, "repository": repository}},
            "admissionWebhook": {"objectSelector": {"matchExpressions": [
                {"key": labels.SHARING_LABEL, "operator": "In", "values": [HAMI_MODE]}]}},
        },
        "devicePlugin": device_plugin,
    }



def gke_quota_pods(pools: Sequence[GpuPool]) -> int:
    """``pods`` of the GKE critical-pod quota: NVIDIA's 100, or more when the pools can grow past it."""
    return max(GKE_QUOTA_MIN_PODS, GKE_QUOTA_PODS_PER_NODE * sum(p.max_nodes for p in pools))


def gke_critical_pod_quota(namespace: str, pools: Sequence[GpuPool]) -> dict:
    """The ResourceQuota that lets system-node/cluster-critical pods run in the operator namespace on GKE."""
    return {
        "metadata": metadata(GKE_QUOTA_NAME, namespace),
        "spec": {
            "hard": {"pods": str(gke_quota_pods(pools))},
            "scopeSelector": {"matchExpressions": [
                {"operator": "In", "scopeName": "PriorityClass", "values": list(CRITICAL_PRIORITY_CLASSES)}]},
        },
    }


def sharing_configmap_body(namespace: str, data: dict[str, str]) -> dict:
    """The device plugin's ConfigMap of named sharing configs."""
    return {"metadata": metadata(sharing.CONFIG_MAP_NAME, namespace), "data": data}
