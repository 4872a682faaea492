"""Helm values of the NVIDIA stack per cloud and mode, asserted exactly."""

import pytest
import yaml

from gpu_platform.accelerators import nvidia_values as nv
from gpu_platform.labels import AKS_SPOT_TAINT, Taint
from gpu_platform.pools import GpuPool, Sharing

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
DEDICATED = Taint("dedicated", "ml")
DEDICATED_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
                   "effect": "NoSchedule"}


# The GPU Operator's driver upgrade where it owns the driver (values.yaml@v26.7.0 driver.upgradePolicy): automatic, one
# node at a time, waiting for ever for the jobs Kueue admitted (not for Deployment/StatefulSet/DaemonSet replicas),
# then evicting what is left and, failing that, draining: never forcing, PodDisruptionBudgets honoured.
UPGRADE_POLICY_WITH_KUEUE = {
    "autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": 1,
    "waitForCompletion": {"podSelector": "kueue.x-k8s.io/podset,!pod-template-hash,!controller-revision-hash",
                          "timeoutSeconds": 0},
    "gpuPodDeletion": {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": True},
    "drain": {"enable": True, "force": False, "timeoutSeconds": 1800, "deleteEmptyDir": True},
}


def pool(name, cloud="aws", mode="exclusive", replicas=1, profile=None, taints=(), extra=(), max_nodes=3):
    return GpuPool(name, cloud, "x", "a100-80gb", 8, 80, 0, max_nodes, sharing=Sharing(mode, replicas, profile),
                   user_taints=taints, extra_taints=extra)


def test_eks_operator_keeps_the_amis_driver_and_toolkit_and_wires_sharing():
    pools = [pool("shared", mode="time-slicing", replicas=4), pool("train", taints=(DEDICATED,))]
    values = nv.gpu_operator_values("aws", pools, monitoring=True,
                                    service_monitor_labels={"release": "kube-prometheus-stack"},
                                    sharing_checksum="c0ffee")
    assert values == {
        "nfd": {"enabled": True},
        "node-feature-discovery": {"worker": {"tolerations": [DEDICATED_TOLERATION, GPU_TOLERATION]}},
        "daemonsets": {"tolerations": [DEDICATED_TOLERATION, GPU_TOLERATION],
                       "annotations": {"checksum/config": "c0ffee"}},
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        "devicePlugin": {"enabled": True, "config": {"name": "gpu-sharing-config", "default": "exclusive.default"}},
        "gfd": {"enabled": True},
        "mig": {"strategy": "single"},
        "migManager": {"enabled": True},
        "dcgmExporter": {"enabled": True, "serviceMonitor": {
            "enabled": True, "honorLabels": True, "additionalLabels": {"release": "kube-prometheus-stack"}}},
    }


def test_aks_operator_installs_driver_and_toolkit_on_pools_created_without_aks_driver():
    values = nv.gpu_operator_values("azure", [pool("a", "azure", extra=(AKS_SPOT_TAINT,))], monitoring=False)
    assert values["driver"] == {"enabled": True, "upgradePolicy": UPGRADE_POLICY_WITH_KUEUE}
    assert values["toolkit"] == {"enabled": True}
    assert "operator" not in values
    # AKS spot pools carry AKS's own taint: every operand tolerates it.
    assert values["daemonsets"] == {"tolerations": [SPOT_TOLERATION, GPU_TOLERATION]}
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": False}}
    assert "config" not in values["devicePlugin"]


def test_aks_preset_with_the_default_image_driver_uses_its_runtime_class():
    values = nv.gpu_operator_values("azure", [pool("a", "azure")], monitoring=False, driver_preinstalled=True)
    assert (values["driver"], values["toolkit"], values["operator"]) == (
        {"enabled": False}, {"enabled": False}, {"runtimeClass": "nvidia-container-runtime"})


def test_gke_operator_installs_the_driver_on_the_gke_layers_ubuntu_pools():
    values = nv.gpu_operator_values("gcp", [pool("l4", "gcp")], monitoring=False)
    assert values["driver"] == {"enabled": True, "upgradePolicy": UPGRADE_POLICY_WITH_KUEUE}
    assert values["toolkit"] == {"enabled": True, "env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]}
    assert values["migManager"] == {"enabled": True, "env": [{"name": "WITH_REBOOT", "value": "true"}]}
    assert "hostPaths" not in values and "cdi" not in values
    preset = nv.host_preset("gcp")
    assert preset.critical_pod_quota and preset.driver_installer_manifest is None


def test_gke_operator_with_googles_driver_installer_uses_gke_paths_and_cdi():
    values = nv.gpu_operator_values("gcp", [pool("l4", "gcp")], monitoring=False, driver_preinstalled=True)
    assert values["driver"] == {"enabled": False}
    assert values["hostPaths"] == {"driverInstallDir": "/home/kubernetes/bin/nvidia"}
    assert values["toolkit"] == {"enabled": True, "installDir": "/home/kubernetes/bin/nvidia",
                                 "env": [{"name": "RUNTIME_CONFIG_SOURCE", "value": "file"}]}
    assert values["cdi"] == {"enabled": True}
    preset = nv.host_preset("gcp", driver_preinstalled=True)
    assert preset.critical_pod_quota
    assert preset.driver_installer_manifest == (
        "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
        "f2cf4197a5c3f0f20133be15d5fad8b7453beed5/nvidia-driver-installer/cos/daemonset-preloaded.yaml")


@pytest.mark.parametrize("cloud,driver,toolkit", [
    ("existing", True, True), ("oci", False, True), ("aws", False, False), ("azure", True, True), ("gcp", True, True)])
def test_driver_and_toolkit_per_cloud(cloud, driver, toolkit):
    values = nv.gpu_operator_values(cloud, [pool("p", cloud)], monitoring=False)
    assert (values["driver"]["enabled"], values["toolkit"]["enabled"]) == (driver, toolkit)
    assert "hostPaths" not in values and "cdi" not in values and "installDir" not in values["toolkit"]


def test_existing_cluster_hosts_with_a_driver_keep_it():
    values = nv.gpu_operator_values("existing", [pool("p", "existing")], monitoring=False, driver_preinstalled=True)
    assert (values["driver"], values["toolkit"]) == ({"enabled": False}, {"enabled": True})


def test_mixed_mig_strategy_is_passed_through():
    values = nv.gpu_operator_values("existing", [pool("m", "existing", "mig", 1, "3g.40gb")], monitoring=False,
                                    mig_strategy="mixed")
    assert values["mig"] == {"strategy": "mixed"}


def test_device_plugin_chart_with_gfd_sharing_checksum_and_gpu_node_affinity():
    pools = [pool("shared", mode="mps", replicas=2), pool("train", taints=(DEDICATED,))]
    assert nv.device_plugin_values(pools, sharing_checksum="c0ffee") == {
        "gfd": {"enabled": True},
        "nfd": {"worker": {"tolerations": [DEDICATED_TOLERATION, GPU_TOLERATION]}},
        "tolerations": [DEDICATED_TOLERATION, GPU_TOLERATION],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [
                {"key": "gpu-platform.io/pool", "operator": "Exists"},
                {"key": "nvidia.com/gpu.deploy.device-plugin", "operator": "NotIn", "values": ["false"]},
            ]}]}}},
        "migStrategy": "none",
        "config": {"name": "gpu-sharing-config", "default": "exclusive.default"},
        "podAnnotations": {"checksum/config": "c0ffee"},
    }


def test_device_plugin_chart_exposes_mig_slices_when_a_pool_uses_mig():
    values = nv.device_plugin_values([pool("m", "azure", "mig", 1, "3g.40gb")])
    assert values["migStrategy"] == "single"
    assert "config" not in values and "podAnnotations" not in values


def test_dcgm_exporter_chart_runs_on_gpu_nodes_with_service_monitor_only_when_monitoring():
    pools = [pool("a", taints=(DEDICATED,))]
    on = nv.dcgm_exporter_values(pools, monitoring=True, service_monitor_labels={"release": "kps"})
    assert on == {
        "tolerations": [DEDICATED_TOLERATION, GPU_TOLERATION],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpu-platform.io/pool", "operator": "Exists"}]}]}}},
        "serviceMonitor": {"enabled": True, "honorLabels": True, "additionalLabels": {"release": "kps"}},
    }
    # The chart's ServiceMonitor defaults to on without checking for the CRD: off explicitly without Prometheus.
    assert nv.dcgm_exporter_values(pools, monitoring=False)["serviceMonitor"] == {"enabled": False}


def test_hami_only_on_hami_pools_with_opt_in_webhook():
    pools = [pool("hami-a", mode="hami", replicas=10, taints=(DEDICATED,)), pool("whole")]
    assert nv.hami_values("aws", pools, "device-plugin") == {
        "scheduler": {
            "kubeScheduler": {"image": {"registry": "registry.k8s.io", "repository": "kube-scheduler"}},
            "admissionWebhook": {"objectSelector": {"matchExpressions": [
                {"key": "gpu-platform.io/gpu-sharing", "operator": "In", "values": ["hami"]}]}},
        },
        "devicePlugin": {
            "nvidiaNodeSelector": {"gpu-platform.io/gpu-sharing": "hami"},
            "tolerations": [DEDICATED_TOLERATION, GPU_TOLERATION],
            "deviceSplitCount": 10,
        },
    }
    assert nv.hami_values("aws", [pool("whole")], "device-plugin") == {}


def test_hami_with_the_operators_toolkit_uses_the_nvidia_runtime_class():
    values = nv.hami_values("existing", [pool("h", "existing", "hami", 4)], "operator")
    assert values["devicePlugin"]["runtimeClassName"] == "nvidia"
    assert values["devicePlugin"]["gpuOperatorToolkitReady"] == {"enabled": True}
    # EKS: the AMI's toolkit makes nvidia the default runtime; nothing to add.
    assert "runtimeClassName" not in nv.hami_values("aws", [pool("h", mode="hami", replicas=4)], "operator")[
        "devicePlugin"]


def test_hami_pool_nodes_keep_nvidias_plugin_off_and_carry_hamis_label():
    labels = pool("h", mode="hami", replicas=4).labels
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert labels["gpu"] == "on"
    assert labels["gpu-platform.io/gpu-sharing"] == "hami"
    assert "nvidia.com/device-plugin.config" not in labels
    assert pool("h", mode="hami", replicas=4).schedulable_gpus_per_node == 32


def test_gke_quota_admits_critical_pods_and_grows_with_the_pools():
    quota = nv.gke_critical_pod_quota("gpu-operator", [pool("a", "gcp", max_nodes=4)])
    assert quota == {
        "metadata": {"name": "gpu-operator-quota", "namespace": "gpu-operator",
                     "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {"hard": {"pods": "100"}, "scopeSelector": {"matchExpressions": [
            {"operator": "In", "scopeName": "PriorityClass",
             "values": ["system-node-critical", "system-cluster-critical"]}]}},
    }
    assert nv.gke_quota_pods([pool("a", "gcp", max_nodes=10), pool("b", "gcp", max_nodes=5)]) == 180


def test_one_nfd_per_cluster():
    assert nv.runs_nfd("operator") and nv.runs_nfd("device-plugin") and not nv.runs_nfd("cloud-managed")


@pytest.mark.parametrize("cloud,preinstalled,policy", [
    ("aws", None, False), ("oci", None, False), ("azure", None, True), ("azure", True, False),
    ("gcp", None, True), ("gcp", True, False), ("existing", None, True), ("existing", True, False)])
def test_driver_upgrade_policy_only_where_the_operator_owns_the_driver(cloud, preinstalled, policy):
    values = nv.gpu_operator_values(cloud, [pool("a", cloud)], monitoring=False, driver_preinstalled=preinstalled)
    if policy:
        assert values["driver"] == {"enabled": True, "upgradePolicy": UPGRADE_POLICY_WITH_KUEUE}
    else:
        assert values["driver"] == {"enabled": False}


def test_without_kueue_driver_upgrades_wait_for_the_platforms_label():
    values = nv.gpu_operator_values("azure", [pool("a", "azure")], monitoring=False, kueue=False)
    assert values["driver"]["upgradePolicy"] == {
        **UPGRADE_POLICY_WITH_KUEUE,
        "waitForCompletion": {"podSelector": "gpu-platform.io/driver-upgrade=wait-for-completion",
                              "timeoutSeconds": 0}}


@pytest.mark.parametrize("kueue", [True, False])
def test_the_wait_selector_survives_the_charts_unquoted_template(kueue):
    # clusterpolicy.yaml@v26.7.0 writes ``podSelector: {{ .Values...podSelector }}`` without quotes: the selector must
    # read back as the same string (a leading "!" would be a YAML tag, a bare "true" a boolean).
    selector = nv.driver_upgrade_wait_selector(kueue)
    assert yaml.safe_load(f"podSelector: {selector}") == {"podSelector": selector}
