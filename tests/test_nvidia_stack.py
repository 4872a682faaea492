"""`NvidiaGpuStack` under the mock engine: children per mode and cloud, their inputs and their install order."""

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from gpu_platform.accelerators import sharing
from gpu_platform.accelerators.nvidia import NvidiaGpuStack
from gpu_platform.errors import ConfigError
from gpu_platform.labels import Taint
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.testing import run_program

RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
NAMESPACE = "kubernetes:core/v1:Namespace"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}


# A 4-GPU shape of each cloud's catalog (components re-check every pool against it): type, GPU, GiB per GPU.
FOUR_GPUS = {"aws": ("g6.12xlarge", "l4", 24), "gcp": ("g2-standard-48", "l4", 24),
             "azure": ("Standard_NC64as_T4_v3", "t4", 16), "oci": ("BM.GPU.A10.4", "a10", 24),
             "existing": ("l4-node", "l4", 24)}


def pool(name, cloud, mode="exclusive", replicas=1, profile=None, taints=()):
    instance_type, gpu, memory = FOUR_GPUS[cloud]
    return GpuPool(name, cloud, instance_type, gpu, 4, memory, 0, 3, sharing=Sharing(mode, replicas, profile),
                   user_taints=taints).spec()


def stack(cloud, gpu_software, pools, **extra):
    return run_program(lambda: NvidiaGpuStack("nv", {"cloud": cloud, "gpu_software": gpu_software,
                                                      "pools": pools, **extra}))


def names(rec, type_):
    return sorted(r.name for r in rec.of_type(type_))


def deps(rec, reg):
    return sorted(d.rsplit("::", 1)[-1] for d in reg.dependencies)


def test_operator_stack_creates_namespace_sharing_configmap_and_release_in_order():
    rec = stack("existing", "operator", [pool("shared", "existing", "time-slicing", 4), pool("whole", "existing")],
                monitoring=True)
    component = rec.one("gpuplatform:index:NvidiaGpuStack", "nv")
    assert {r.name for r in rec.children_of(component)} == {"nv-namespace", "nv-sharing", "nv-gpu-operator"}
    release = rec.one(RELEASE, "nv-gpu-operator")
    assert {k: release.inputs[k] for k in ("chart", "version", "repositoryOpts", "name", "namespace",
                                           "createNamespace")} == {
        "chart": "gpu-operator", "version": "v26.7.0", "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"},
        "name": "gpu-operator", "namespace": "gpu-operator", "createNamespace": False}
    # The ConfigMap exists before the operator reads it; both live in the namespace.
    assert deps(rec, release) == ["nv-namespace", "nv-sharing"]
    assert deps(rec, rec.one(CONFIG_MAP, "nv-sharing")) == ["nv-namespace"]


def test_sharing_configmap_holds_four_replicas_for_time_slicing_x4_and_its_checksum_rolls_the_plugin():
    rec = stack("aws", "operator", [pool("l4-shared", "aws", "time-slicing", 4), pool("whole", "aws")])
    config_map = rec.one(CONFIG_MAP, "nv-sharing").inputs
    assert config_map["metadata"]["name"] == "gpu-sharing-config"
    assert config_map["metadata"]["namespace"] == "gpu-operator"
    assert sorted(config_map["data"]) == ["exclusive.default", "l4-shared"]
    shared = yaml.safe_load(config_map["data"]["l4-shared"])
    assert shared["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert shared["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True
    values = rec.one(RELEASE, "nv-gpu-operator").inputs["values"]
    assert values["devicePlugin"]["config"] == {"name": "gpu-sharing-config", "default": "exclusive.default"}
    assert values["daemonsets"]["annotations"] == {"checksum/config": sharing.config_checksum(config_map["data"])}


def test_checksum_annotation_changes_when_replicas_change():
    def checksum(replicas):
        rec = stack("aws", "operator", [pool("l4-shared", "aws", "time-slicing", replicas)])
        return rec.one(RELEASE, "nv-gpu-operator").inputs["values"]["daemonsets"]["annotations"]["checksum/config"]
    assert checksum(4) != checksum(8)


def test_no_shared_pool_no_configmap_and_no_plugin_config():
    rec = stack("aws", "operator", [pool("whole", "aws")])
    assert rec.of_type(CONFIG_MAP) == []
    values = rec.one(RELEASE, "nv-gpu-operator").inputs["values"]
    assert "config" not in values["devicePlugin"] and "annotations" not in values["daemonsets"]


def test_operand_daemonsets_tolerate_every_pool_taint():
    rec = stack("existing", "operator", [pool("a", "existing", taints=(Taint("dedicated", "ml"),)),
                                         pool("b", "existing", taints=(Taint("team", "x", "NoExecute"),))])
    values = rec.one(RELEASE, "nv-gpu-operator").inputs["values"]
    expected = [{"key": "team", "operator": "Equal", "value": "x", "effect": "NoExecute"},
                {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}, GPU_TOLERATION]
    assert values["daemonsets"]["tolerations"] == expected
    assert values["node-feature-discovery"]["worker"]["tolerations"] == expected


def test_gke_operator_adds_the_critical_pod_quota_before_the_operator():
    rec = stack("gcp", "operator", [pool("l4", "gcp")])
    assert rec.of_type("kubernetes:yaml/v2:ConfigFile") == []
    assert deps(rec, rec.one(RELEASE, "nv-gpu-operator")) == ["nv-critical-pods", "nv-namespace"]


def test_gke_operator_with_googles_driver_installer_applies_it_before_the_operator():
    rec = stack("gcp", "operator", [pool("l4", "gcp")], driver_preinstalled=True)
    quota = rec.one("kubernetes:core/v1:ResourceQuota", "nv-critical-pods").inputs
    assert quota["metadata"] == {"name": "gpu-operator-quota", "namespace": "gpu-operator",
                                 "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}}
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == [
        "system-node-critical", "system-cluster-critical"]
    installer = rec.one("kubernetes:yaml/v2:ConfigFile", "nv-gke-driver-installer")
    assert installer.inputs["file"].endswith("/nvidia-driver-installer/cos/daemonset-preloaded.yaml")
    assert deps(rec, rec.one(RELEASE, "nv-gpu-operator")) == ["nv-critical-pods", "nv-gke-driver-installer",
                                                              "nv-namespace"]


def test_device_plugin_mode_installs_plugin_with_gfd_and_the_dcgm_exporter_chart():
    rec = stack("aws", "device-plugin", [pool("mps", "aws", "mps", 2)], monitoring=True,
                service_monitor_labels={"release": "kube-prometheus-stack"})
    assert names(rec, RELEASE) == ["nv-dcgm-exporter", "nv-nvidia-device-plugin"]
    plugin = rec.one(RELEASE, "nv-nvidia-device-plugin").inputs
    assert (plugin["chart"], plugin["version"], plugin["repositoryOpts"]) == (
        "nvidia-device-plugin", "0.20.0", {"repo": "https://nvidia.github.io/k8s-device-plugin"})
    data = rec.one(CONFIG_MAP, "nv-sharing").inputs["data"]
    assert plugin["values"]["gfd"] == {"enabled": True}
    assert plugin["values"]["config"] == {"name": "gpu-sharing-config", "default": "exclusive.default"}
    assert plugin["values"]["podAnnotations"] == {"checksum/config": sharing.config_checksum(data)}
    dcgm = rec.one(RELEASE, "nv-dcgm-exporter").inputs
    assert (dcgm["chart"], dcgm["version"], dcgm["repositoryOpts"]) == (
        "dcgm-exporter", "4.8.2", {"repo": "https://nvidia.github.io/dcgm-exporter/helm-charts"})
    assert dcgm["values"]["serviceMonitor"] == {"enabled": True, "honorLabels": True,
                                                "additionalLabels": {"release": "kube-prometheus-stack"}}
    for name in ("nv-dcgm-exporter", "nv-nvidia-device-plugin"):
        assert deps(rec, rec.one(RELEASE, name)) == ["nv-namespace", "nv-sharing"]


def test_cloud_managed_on_gke_adds_nothing():
    rec = stack("gcp", "cloud-managed", [pool("l4", "gcp", "time-slicing", 2)])
    assert [r.type for r in rec] == ["gpuplatform:index:NvidiaGpuStack"]


@pytest.mark.parametrize("cloud", ["azure", "oci"])
def test_cloud_managed_elsewhere_adds_only_the_dcgm_exporter(cloud):
    rec = stack(cloud, "cloud-managed", [pool("a", cloud)])
    assert names(rec, RELEASE) == ["nv-dcgm-exporter"]
    assert names(rec, NAMESPACE) == ["nv-namespace"]
    assert rec.of_type(CONFIG_MAP) == []
    assert rec.one(RELEASE, "nv-dcgm-exporter").inputs["values"]["serviceMonitor"] == {"enabled": False}


def test_hami_release_follows_the_operator():
    rec = stack("existing", "operator", [pool("h", "existing", "hami", 8), pool("whole", "existing")])
    hami = rec.one(RELEASE, "nv-hami")
    assert (hami.inputs["chart"], hami.inputs["version"], hami.inputs["repositoryOpts"]) == (
        "hami", "2.10.0", {"repo": "https://project-hami.github.io/HAMi/"})
    assert hami.inputs["values"]["devicePlugin"]["deviceSplitCount"] == 8
    assert deps(rec, hami) == ["nv-gpu-operator", "nv-namespace"]


def test_every_child_waits_for_what_the_stack_depends_on():
    """The platform makes the stack depend on kube-prometheus-stack: its ServiceMonitors then find the CRDs."""
    def program():
        crds = k8s.core.v1.ConfigMap("kube-prometheus-stack", metadata={"name": "stand-in"})
        NvidiaGpuStack("nv", {"cloud": "aws", "gpu_software": "device-plugin", "monitoring": True,
                              "pools": [pool("a", "aws")]}, opts=pulumi.ResourceOptions(depends_on=[crds]))
    rec = run_program(program)
    for name in ("nv-namespace", "nv-nvidia-device-plugin", "nv-dcgm-exporter"):
        assert "kube-prometheus-stack" in deps(rec, rec.named(name))


def test_outputs_name_namespace_and_sharing_config():
    rec = stack("aws", "device-plugin", [pool("ts", "aws", "time-slicing", 2)], namespace="nvidia")
    assert rec.one(NAMESPACE, "nv-namespace").inputs["metadata"]["name"] == "nvidia"
    assert rec.one(RELEASE, "nv-nvidia-device-plugin").inputs["namespace"] == "nvidia"
    assert rec.one(CONFIG_MAP, "nv-sharing").inputs["metadata"]["namespace"] == "nvidia"


def test_unknown_mode_is_rejected():
    with pytest.raises(ConfigError) as err:
        stack("aws", "gpu-operator", [pool("a", "aws")])
    assert str(err.value) == ("NvidiaGpuStack nv: gpu_software: 'gpu-operator' is not one of operator, device-plugin, "
                              "cloud-managed; did you mean 'operator'?")


@pytest.mark.parametrize("kueue,selector", [
    (True, "kueue.x-k8s.io/podset,!pod-template-hash,!controller-revision-hash"),
    (False, "gpu-platform.io/driver-upgrade=wait-for-completion")])
def test_kueue_picks_the_pods_a_driver_upgrade_waits_for(kueue, selector):
    rec = stack("azure", "operator", [pool("a", "azure")], kueue=kueue)
    policy = rec.one(RELEASE, "nv-gpu-operator").inputs["values"]["driver"]["upgradePolicy"]
    assert policy["waitForCompletion"] == {"podSelector": selector, "timeoutSeconds": 0}


@pytest.mark.parametrize("cloud,gpu_software,extra", [
    ("aws", "operator", {}), ("azure", "device-plugin", {}), ("azure", "cloud-managed", {}),
    ("gcp", "operator", {"driver_preinstalled": True})])
def test_kueue_is_refused_where_the_operator_does_not_upgrade_the_driver(cloud, gpu_software, extra):
    with pytest.raises(ConfigError) as err:
        stack(cloud, gpu_software, [pool("a", cloud)], kueue=False, **extra)
    assert str(err.value) == ("NvidiaGpuStack nv: kueue: takes effect only where the GPU Operator installs the "
                              "driver (it picks the pods a driver upgrade waits for)")
