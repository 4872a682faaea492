"""Every Helm values key the NVIDIA and RDMA layers set exists in the pinned chart version's values.yaml.

``tests/data/chart_keys/<chart>-<version>.keys`` lists every key of the upstream values.yaml at the pinned
version (extracted mechanically; each file names its source repository, tag and path). A key set here must be
listed; below a key whose upstream value is a list, a scalar or an empty ("open") map, anything is the value.
The value's shape must match too (a list where upstream has a list...). The file is found by the pin in
``versions.py``: bumping a chart without refreshing its key list fails here.
"""

from pathlib import Path

import pytest
from chart_keys import load_keys, unknown_keys

from gpu_platform import versions
from gpu_platform.accelerators import nvidia_values as nv
from gpu_platform.accelerators import rdma_specs
from gpu_platform.labels import Taint
from gpu_platform.pools import GpuPool, Sharing

KEYS_DIR = Path(__file__).parent / "data" / "chart_keys"
CLOUDS = ("aws", "azure", "gcp", "oci", "existing")


def chart_keys(chart: versions.Chart) -> dict[str, str]:
    return load_keys(KEYS_DIR / f"{chart.name}-{chart.version}.keys")


def pools_for(cloud: str) -> list[GpuPool]:
    """Every pool variant that changes values: sharing modes, user and cloud taints, RDMA fabrics."""
    def pool(name, mode="exclusive", replicas=1, profile=None, fabric=None, taints=(), extra=()):
        return GpuPool(name, cloud, "x", "a100-80gb", 8, 80, 0, 4, sharing=Sharing(mode, replicas, profile),
                       rdma_fabric=fabric, rdma_interfaces=8 if fabric else 0, user_taints=taints,
                       extra_taints=extra)
    return [
        pool("whole", taints=(Taint("dedicated", "ml"),)),
        pool("ts", "time-slicing", 4),
        pool("mps", "mps", 2),
        pool("mig", "mig", 1, "3g.40gb"),
        pool("hami", "hami", 10),
        pool("spot", extra=(Taint("kubernetes.azure.com/scalesetpriority", "spot"),)),
        pool("efa", fabric="efa"),
        pool("ib", fabric="infiniband"),
        pool("roce", fabric="roce"),
    ]


def all_values():
    """(chart, values, case) for every values dict the layers can produce."""
    for cloud in CLOUDS:
        pools = pools_for(cloud)
        for preinstalled in (None, True, False):
            for monitoring in (True, False):
                yield versions.GPU_OPERATOR, nv.gpu_operator_values(
                    cloud, pools, monitoring=monitoring, service_monitor_labels={"release": "kps"},
                    sharing_checksum="abc", mig_strategy="mixed", driver_preinstalled=preinstalled), \
                    f"operator {cloud} preinstalled={preinstalled} monitoring={monitoring}"
            for mode in ("operator", "device-plugin"):
                yield versions.HAMI, nv.hami_values(cloud, pools, mode, preinstalled), f"hami {cloud} {mode}"
        yield versions.GPU_OPERATOR, nv.gpu_operator_values(cloud, pools[:1], monitoring=False), f"operator {cloud}"
        yield versions.DEVICE_PLUGIN, nv.device_plugin_values(pools, sharing_checksum="abc"), f"plugin {cloud}"
        yield versions.DEVICE_PLUGIN, nv.device_plugin_values(pools[:1]), f"plugin {cloud} plain"
        yield versions.DCGM_EXPORTER, nv.dcgm_exporter_values(
            pools, monitoring=True, service_monitor_labels={"release": "kps"}), f"dcgm {cloud}"
        yield versions.DCGM_EXPORTER, nv.dcgm_exporter_values(pools, monitoring=False), f"dcgm {cloud} off"
        yield versions.EFA_DEVICE_PLUGIN, rdma_specs.efa_values(pools), f"efa {cloud}"
        for nfd in (True, False):
            yield versions.NETWORK_OPERATOR, rdma_specs.network_operator_values(pools, nfd), f"network {cloud} {nfd}"


@pytest.mark.parametrize("chart,values,case", list(all_values()), ids=lambda v: v if isinstance(v, str) else None)
def test_every_values_key_exists_in_the_pinned_chart(chart, values, case):
    assert values, case
    assert unknown_keys(values, chart_keys(chart)) == []


def test_the_checker_rejects_unknown_keys_and_wrong_shapes():
    keys = chart_keys(versions.GPU_OPERATOR)
    assert unknown_keys({"devicePlugin": {"config": {"name": "x", "nme": "y"}}}, keys) == [
        "devicePlugin.config.nme: not in values.yaml"]
    assert unknown_keys({"daemonsets": {"tolerations": {"key": "x"}}}, keys) == [
        "daemonsets.tolerations: a list upstream, got dict"]
    # cdi.default is deprecated and gone from values.yaml (since v26.3.3) although NVIDIA's GKE guide still sets it.
    assert unknown_keys({"cdi": {"default": True}}, keys) == ["cdi.default: not in values.yaml"]


def test_key_lists_name_their_upstream_source_at_the_pinned_tag():
    sources = {
        versions.GPU_OPERATOR: "NVIDIA/gpu-operator@v26.7.0:deployments/gpu-operator/values.yaml",
        versions.DEVICE_PLUGIN: "NVIDIA/k8s-device-plugin@v0.20.0:deployments/helm/nvidia-device-plugin/values.yaml",
        versions.DCGM_EXPORTER: "NVIDIA/dcgm-exporter@4.5.3-4.8.2:deployment/values.yaml",
        versions.NETWORK_OPERATOR: "Mellanox/network-operator@v26.1.2:deployment/network-operator/values.yaml",
        versions.EFA_DEVICE_PLUGIN: "aws/eks-charts@bfe91c4b9257c80f754ad4b3d6a9a3c239b2b8ec:"
                                    "stable/aws-efa-k8s-device-plugin/values.yaml (chart version v0.5.30)",
        versions.HAMI: "Project-HAMi/HAMi@v2.10.0:charts/hami/values.yaml",
    }
    for chart, source in sources.items():
        text = (KEYS_DIR / f"{chart.name}-{chart.version}.keys").read_text()
        assert f"# source: {source}\n" in text
