"""AMD Instinct MI300X on AKS and OKE: catalog facts, cloud pools, the AMD GPU Operator stack, RCCL settings and the
reference stacks ``azure-mi300x`` / ``oci-mi300x``."""

import json
from pathlib import Path

import pytest
from chart_keys import load_keys, unknown_keys
from conftest import planned_stack

from gpu_platform import catalog, versions
from gpu_platform.accelerators import amd_values as av
from gpu_platform.accelerators.amd import checked_args
from gpu_platform.clouds.azure.specs import agent_pool_properties, default_gpu_driver
from gpu_platform.clouds.oci import rdma as oci_rdma
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pools import GpuPool
from gpu_platform.schemas import validate_manifest

KEYS_DIR = Path(__file__).parent / "data" / "chart_keys"
AMD_TOLERATION = {"key": "amd.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
OCI_IMAGE = "ocid1.image.oc1.iad.aaaaaaaagpuplatformexampleubuntu2404rocmdocaofedmi300ximage0"
COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"


def mi300x_pool(cloud="oci", name="mi300x-train", fabric="roce", **extra) -> GpuPool:
    shape = {"oci": "BM.GPU.MI300X.8", "azure": "Standard_ND96isr_MI300X_v5"}[cloud]
    return GpuPool(name, cloud, shape, "mi300x", 8, 192, 0, 4, rdma_fabric=fabric, rdma_interfaces=8, **extra)


# --- catalog ---------------------------------------------------------------------------------------------


def test_mi300x_model_is_amd_with_192_gb_and_no_partitioning():
    model = catalog.GPU_MODELS["mi300x"]
    assert (model.display_name, model.memory_gib, model.vendor, model.mig_profiles) == (
        "AMD Instinct MI300X", 192, "amd", ())
    assert catalog.vendor_of("mi300x").resources == ("amd.com/gpu",)
    assert catalog.VENDORS["amd"].sharing_modes == ("exclusive",)


def test_azure_nd_mi300x_v5_shape():
    shape = catalog.find_shape("azure", "Standard_ND96isr_MI300X_v5")
    assert (shape.gpu_model, shape.gpu_count, shape.vcpus, shape.memory_gib, shape.rdma_fabric,
            shape.rdma_interfaces) == ("mi300x", 8, 96, 1850, "infiniband", 8)


def test_oci_bm_gpu_mi300x_8_shape():
    shape = catalog.find_shape("oci", "BM.GPU.MI300X.8")
    assert (shape.gpu_model, shape.gpu_count, shape.vcpus, shape.memory_gib, shape.rdma_fabric,
            shape.rdma_interfaces) == ("mi300x", 8, 224, 2048, "roce", 8)


def test_amd_pool_resource_taint_and_tolerations():
    pool = mi300x_pool()
    assert pool.vendor == "amd" and pool.resource == "amd.com/gpu"
    assert pool.taint.as_string() == "amd.com/gpu=present:NoSchedule"
    assert pool.tolerations == [AMD_TOLERATION]
    assert pool.resources_per_node == {"amd.com/gpu": 8}


# --- config errors ---------------------------------------------------------------------------------------


def oci_raw(pool_overrides=None, **top):
    pool = {"name": "mi300x-train", "instanceType": "BM.GPU.MI300X.8", "minNodes": 0, "maxNodes": 2,
            "imageId": OCI_IMAGE, **(pool_overrides or {})}
    return {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT, "nodePools": [pool], **top}


def azure_raw(pool_overrides=None, **top):
    pool = {"name": "mi300x-train", "instanceType": "Standard_ND96isr_MI300X_v5", "minNodes": 0, "maxNodes": 2,
            **(pool_overrides or {})}
    return {"cloud": "azure", "region": "westeurope", "amdDriverImage": "example.azurecr.io/amdgpu-driver",
            "nodePools": [pool], **top}


@pytest.mark.parametrize("mode", ["time-slicing", "mps", "mig", "hami"])
def test_sharing_modes_other_than_exclusive_are_refused_on_mi300x(mode):
    sharing = {"mode": mode, **({"profile": "1g.10gb"} if mode == "mig" else {"replicas": 2})}
    with pytest.raises(ConfigError) as err:
        parse_config(oci_raw({"sharing": sharing}), "t")
    assert "nodePools[0].sharing.mode" in str(err.value) and "exclusive" in str(err.value)


def test_oci_amd_pool_without_image_is_refused():
    raw = oci_raw()
    del raw["nodePools"][0]["imageId"]
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "t")
    assert str(err.value).startswith("t: nodePools[0].imageId: is required on an AMD Instinct shape")


def test_rdma_on_a_shape_without_fabric_is_refused():
    with pytest.raises(ConfigError) as err:
        parse_config({"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT, "nodePools": [
            {"name": "a10", "instanceType": "VM.GPU.A10.1", "minNodes": 0, "maxNodes": 1, "rdma": True}]}, "t")
    assert "nodePools[0].rdma" in str(err.value) and "has no RDMA fabric" in str(err.value)


def test_azure_amd_pool_needs_the_driver_image_and_ubuntu():
    raw = azure_raw()
    del raw["amdDriverImage"]
    with pytest.raises(ConfigError, match="^t: amdDriverImage: is required with an AMD Instinct pool"):
        parse_config(raw, "t")
    with pytest.raises(ConfigError, match="^t: amdDriverImage: 'example.azurecr.io/amdgpu-driver:v1' is not an image"):
        parse_config(azure_raw(amdDriverImage="example.azurecr.io/amdgpu-driver:v1"), "t")
    with pytest.raises(ConfigError, match=r"^t: nodePools\[0\].osSku: 'AzureLinux' is not supported on AMD GPU pools"):
        parse_config(azure_raw({"osSku": "AzureLinux"}), "t")


def test_azure_driver_image_is_refused_without_an_amd_pool():
    raw = azure_raw({"instanceType": "Standard_NC24ads_A100_v4"})
    with pytest.raises(ConfigError, match="^t: amdDriverImage: only applies with an AMD Instinct pool"):
        parse_config(raw, "t")


def test_amd_stack_args_are_checked():
    pool = mi300x_pool("azure", fabric="infiniband").spec()
    with pytest.raises(ConfigError, match="driver_image: is required on Azure"):
        checked_args("x", {"cloud": "azure", "pools": [pool]})
    with pytest.raises(ConfigError, match="driver_image"):
        checked_args("x", {"cloud": "oci", "pools": [mi300x_pool().spec()], "driver_image": "r.io/d"})
    nvidia = GpuPool("h100", "oci", "BM.GPU.H100.8", "h100", 8, 80, 0, 1).spec()
    with pytest.raises(ConfigError, match=r"pools\[0\].gpu_model: 'h100' is not an AMD accelerator"):
        checked_args("x", {"cloud": "oci", "pools": [nvidia]})


# --- AKS / OKE pools -------------------------------------------------------------------------------------


def test_aks_amd_pool_skips_the_driver_and_is_tainted():
    pool = mi300x_pool("azure", fabric="infiniband")
    assert default_gpu_driver(pool) == "None"
    props = agent_pool_properties(pool, agent_pool_name="mi300x", driver=default_gpu_driver(pool))
    assert props["gpu_profile"] == {"driver": "None"}
    assert props["vm_size"] == "Standard_ND96isr_MI300X_v5"
    assert props["node_taints"] == ["amd.com/gpu=present:NoSchedule"]
    assert props["node_labels"]["gpu-platform.io/accelerator"] == "mi300x"


# --- RCCL ------------------------------------------------------------------------------------------------


def test_oci_mi300x_rccl_env_is_the_published_row():
    assert oci_rdma.nccl_env("BM.GPU.MI300X.8") == {
        "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "41", "NCCL_IB_SL": "0", "NCCL_IB_TIMEOUT": "22",
        "NCCL_IB_SPLIT_DATA_ON_QPS": "0", "NCCL_DEBUG": "WARN", "NCCL_CUMEM_ENABLE": "0",
        "NCCL_IB_QPS_PER_CONNECTION": "1", "NCCL_IB_HCA": "=mlx5_0,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_7,mlx5_8,mlx5_9",
        "NCCL_PXN_DISABLE": "0", "NCCL_NET_PLUGIN": "none"}
    assert dict(oci_rdma.with_roce_nccl_env(mi300x_pool()).nccl_env)["NCCL_IB_HCA"].startswith("=mlx5_0,mlx5_2")


# --- chart values and objects ----------------------------------------------------------------------------


def chart_keys(chart: versions.Chart) -> dict[str, str]:
    return load_keys(KEYS_DIR / f"{chart.name}-{chart.version}.keys")


def test_chart_pins():
    assert versions.AMD_GPU_OPERATOR.release_args() == {
        "chart": "gpu-operator-charts", "version": "v1.5.1", "repository_opts": {"repo": "https://rocm.github.io/gpu-operator"}}
    assert versions.CERT_MANAGER.release_args() == {
        "chart": "cert-manager", "version": "v1.21.1", "repository_opts": {"repo": "https://charts.jetstack.io"}}


@pytest.mark.parametrize("managed", [True, False])
@pytest.mark.parametrize("nfd", [True, False])
def test_every_values_key_exists_in_the_pinned_charts(managed, nfd):
    values = av.operator_values([mi300x_pool()], driver_managed=managed, nfd_installed=nfd)
    assert unknown_keys(values, chart_keys(versions.AMD_GPU_OPERATOR)) == []
    assert unknown_keys(av.cert_manager_values(), chart_keys(versions.CERT_MANAGER)) == []


def test_operator_values():
    pool = mi300x_pool()
    assert av.operator_values([pool], driver_managed=False, nfd_installed=False) == {
        "crds": {"defaultCR": {"install": False}},
        "kmm": {"enabled": False, "watch": False},
        "remediation": {"enabled": False, "installCRDs": False},
        "node-feature-discovery": {"enabled": True, "worker": {"tolerations": [
            {"key": "amd-dcm", "operator": "Equal", "value": "up", "effect": "NoExecute"},
            {"key": "amd-gpu-unhealthy", "operator": "Exists", "effect": "NoSchedule"},
            {"effect": "NoSchedule", "key": "amd.com/gpu", "operator": "Equal", "value": "present"}]}},
    }
    managed = av.operator_values([pool], driver_managed=True, nfd_installed=True)
    assert managed["kmm"] == {"enabled": True, "watch": True}
    assert managed["node-feature-discovery"] == {"enabled": False}
    assert av.cert_manager_values() == {"crds": {"enabled": True}}


def test_device_config_per_cloud_is_schema_valid():
    oci = av.device_config(mi300x_pool(), "kube-amd-gpu", driver_managed=False)
    assert oci["apiVersion"] == "amd.com/v1alpha1" and oci["kind"] == "DeviceConfig"
    assert oci["metadata"]["name"] == "amd-mi300x-train"
    spec = oci["spec"]
    assert spec["selector"] == {"gpu-platform.io/pool": "mi300x-train"}
    assert spec["driver"] == {"enable": False}
    assert spec["devicePlugin"] == {"enableDevicePlugin": True, "enableNodeLabeller": True,
                                    "devicePluginTolerations": [AMD_TOLERATION],
                                    "nodeLabellerTolerations": [AMD_TOLERATION]}
    assert spec["metricsExporter"] == {"enable": True, "serviceType": "ClusterIP", "port": 5000,
                                       "tolerations": [AMD_TOLERATION]}
    azure = av.device_config(mi300x_pool("azure", fabric="infiniband"), "kube-amd-gpu", driver_managed=True,
                             driver_image="example.azurecr.io/amdgpu-driver")
    # Where the operator owns the driver it upgrades it: one node at a time, a drain through the Eviction API that
    # never forces and waits for ever (the operator has no wait-for-jobs step; PodDisruptionBudgets are the wait).
    assert azure["spec"]["driver"] == {
        "enable": True, "blacklist": True, "image": "example.azurecr.io/amdgpu-driver", "version": "30.20.1",
        "tolerations": [AMD_TOLERATION],
        "upgradePolicy": {"enable": True, "maxParallelUpgrades": 1, "maxUnavailableNodes": 1,
                          "nodeDrainPolicy": {"force": False, "timeoutSeconds": 0, "gracePeriodSeconds": -1}}}
    # Where the node image owns it (OKE), there is nothing for the operator to upgrade.
    assert "upgradePolicy" not in spec["driver"]
    for body in (oci, azure):
        validate_manifest(body, "1.34")
    with pytest.raises(ValueError, match="driver image"):
        av.device_config(mi300x_pool(), "ns", driver_managed=True)


def test_driver_presets_per_cloud():
    assert {c: p.operator_installs for c, p in av.DRIVER_PRESETS.items()} == {"azure": True, "oci": False}


def test_service_monitor_scrapes_every_device_config_exporter():
    body = av.service_monitor([mi300x_pool(), mi300x_pool(name="b")], "kube-amd-gpu",
                              {"release": "kube-prometheus-stack"})
    validate_manifest(body, "1.34")
    assert body["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert body["spec"]["selector"] == {"matchExpressions": [{
        "key": "app.kubernetes.io/service", "operator": "In",
        "values": ["amd-b-metrics-exporter", "amd-mi300x-train-metrics-exporter"]}]}
    assert body["spec"]["namespaceSelector"] == {"matchNames": ["kube-amd-gpu"]}
    assert body["spec"]["endpoints"][0]["port"] == "exporter-port"


def test_dashboard_queries_the_exporter_metric_names():
    text = json.dumps(av.dashboard())
    for metric in ("gpu_gfx_activity", "gpu_umc_activity", "gpu_used_vram", "gpu_total_vram", "gpu_package_power",
                   "gpu_junction_temperature"):
        assert metric in text
    assert "DCGM_" not in text


# --- reference stacks ------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["azure-mi300x", "oci-mi300x"])
def stack(request):
    result = planned_stack(request.param)
    assert result.errors == []
    return request.param, result


def objects(result, kind, name=None):
    return [o for o in result.manifests if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def test_stack_runs_the_amd_stack_and_no_nvidia_software(stack):
    name, result = stack
    releases = {r.inputs["chart"]: r.inputs for r in result.recording.of_type("kubernetes:helm.sh/v3:Release")}
    assert releases["gpu-operator-charts"]["version"] == "v1.5.1"
    assert releases["gpu-operator-charts"]["namespace"] == "kube-amd-gpu"
    assert releases["cert-manager"]["version"] == "v1.21.1"
    assert not {"gpu-operator", "nvidia-device-plugin", "dcgm-exporter"} & set(releases)
    # The AMD operator runs the cluster's one NFD; the Network Operator's stays off.
    assert releases["network-operator"]["values"]["nfd"] == {"enabled": False}
    assert releases["gpu-operator-charts"]["values"]["node-feature-discovery"]["enabled"] is True
    (device_config,) = objects(result, "DeviceConfig")
    assert device_config["spec"]["driver"]["enable"] is (name == "azure-mi300x")
    (monitor,) = objects(result, "ServiceMonitor", "amd-device-metrics-exporter")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (dash,) = objects(result, "ConfigMap", "amd-gpu-dashboard")
    assert dash["metadata"]["namespace"] == "monitoring" and "gpu_gfx_activity" in dash["data"]["amd-gpu.json"]
    namespaces = {o["metadata"]["name"]: o["metadata"]["labels"] for o in objects(result, "Namespace")}
    assert namespaces["kube-amd-gpu"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert namespaces["cert-manager"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_stack_kueue_and_quotas_count_amd_gpus(stack):
    _, result = stack
    (flavor,) = objects(result, "ResourceFlavor", "mi300x-train")
    assert flavor["spec"]["nodeLabels"]["gpu-platform.io/pool"] == "mi300x-train"
    assert {"key": "amd.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in \
        flavor["spec"]["tolerations"]
    queues = {q["metadata"]["name"]: q for q in objects(result, "ClusterQueue")}
    covered = {r for q in queues.values() for g in q["spec"]["resourceGroups"] for r in g["coveredResources"]}
    assert "amd.com/gpu" in covered and "nvidia.com/gpu" not in covered
    flavors = {f["name"]: f["resources"] for f in queues["research"]["spec"]["resourceGroups"][0]["flavors"]}
    assert {"name": "amd.com/gpu", "nominalQuota": 24} in flavors["mi300x-train"]
    assert {"name": "amd.com/gpu", "nominalQuota": 0} in flavors["cpu.default"]
    quotas = {q["metadata"]["namespace"]: q["spec"]["hard"] for q in objects(result, "ResourceQuota")
              if "requests.amd.com/gpu" in q["spec"]["hard"]}
    assert quotas["research"]["requests.amd.com/gpu"] == "24"
    assert quotas["product"]["requests.amd.com/gpu"] == "8"


def test_azure_stack_pool_and_driver_image():
    result = planned_stack("azure-mi300x")
    pool = result.recording.one("azure-native:containerservice:AgentPool").inputs
    assert pool["gpuProfile"] == {"driver": "None"}
    assert pool["osSKU"] == "Ubuntu"
    assert pool["nodeTaints"] == ["amd.com/gpu=present:NoSchedule"]
    (device_config,) = objects(result, "DeviceConfig")
    assert device_config["spec"]["driver"]["image"] == "gpuplatformexample.azurecr.io/amdgpu-driver"


def test_oci_stack_pool_image_device_plugin_switch_and_rccl():
    result = planned_stack("oci-mi300x")
    pool = result.recording.one("oci:ContainerEngine/nodePool:NodePool").inputs
    assert pool["nodeShape"] == "BM.GPU.MI300X.8"
    assert pool["nodeSourceDetails"]["imageId"] == OCI_IMAGE
    node_labels = {lab["key"]: lab["value"] for lab in pool["initialNodeLabels"]}
    assert node_labels["oci.oraclecloud.com/disable-gpu-device-plugin"] == "true"
    job_env = json.dumps([o for o in result.manifests if o["kind"] in ("Job", "CronJob")])
    assert "=mlx5_0,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_7,mlx5_8,mlx5_9" in job_env
