"""RDMA device stack: EFA plugin values, Network Operator values, the NicClusterPolicy and the component."""

import json
from pathlib import Path

import pytest

from gpu_platform import catalog
from gpu_platform.accelerators import rdma_specs as specs
from gpu_platform.accelerators.rdma import RdmaStack
from gpu_platform.labels import Taint
from gpu_platform.pools import GpuPool
from gpu_platform.schemas import ManifestError, crd_schema, validate_manifest
from gpu_platform.testing import run_program

RELEASE = "kubernetes:helm.sh/v3:Release"
NCP = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
DEDICATED_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}


def pool(name, cloud, fabric=None, interfaces=0, taints=(), annotations=()):
    return GpuPool(name, cloud, "x", "h100", 8, 80, 0, 4, rdma_fabric=fabric, rdma_interfaces=interfaces,
                   user_taints=taints, rdma_pod_annotations=annotations)


def test_efa_plugin_runs_only_on_efa_pools_and_tolerates_their_taints():
    pools = [pool("train", "aws", "efa", 32, taints=(Taint("dedicated", "ml"),)), pool("infer", "aws")]
    assert specs.efa_values(pools) == {
        "nodeSelector": {"gpu-platform.io/rdma": "efa"},
        "tolerations": [DEDICATED_TOLERATION, GPU_TOLERATION],
    }


def test_every_catalog_efa_shape_is_one_the_pinned_efa_chart_schedules_on():
    """The chart's own affinity allows only listed instance types (supportedInstanceLabels at v0.5.30)."""
    listed = Path(__file__).parent / "data" / "chart_keys" / "aws-efa-k8s-device-plugin-v0.5.30.instance-types"
    supported = {line for line in listed.read_text().splitlines() if line and not line.startswith("#")}
    efa_shapes = [s.name for s in catalog.shapes_of("aws") if s.rdma_fabric == catalog.EFA]
    assert "p5.48xlarge" in efa_shapes
    assert [s for s in efa_shapes if s not in supported] == []


def test_network_operator_keeps_its_nfd_off_when_one_runs():
    pools = [pool("ib", "existing", "infiniband", 8, taints=(Taint("dedicated", "ml"),))]
    assert specs.network_operator_values(pools, nfd_installed=True) == {"nfd": {"enabled": False}}
    assert specs.network_operator_values(pools, nfd_installed=False) == {
        "nfd": {"enabled": True},
        "node-feature-discovery": {"worker": {"tolerations": [DEDICATED_TOLERATION, GPU_TOLERATION]}},
    }


def test_nic_cluster_policy_for_infiniband_on_an_existing_cluster():
    policy = specs.nic_cluster_policy("existing", [pool("ib", "existing", "infiniband", 8), pool("infer", "existing")])
    assert policy == {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy", "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gpu-platform.io/rdma", "operator": "In", "values": ["infiniband"]}]}]}},
            "tolerations": [GPU_TOLERATION],
            "rdmaSharedDevicePlugin": {
                "image": "k8s-rdma-shared-dev-plugin",
                "repository": "nvcr.io/nvidia/mellanox",
                "version": "sha256:a2ea9cb60f1ce50d109650daca7e074b38cb9ac6a88bed78e266ef99c012782e",
                "config": policy["spec"]["rdmaSharedDevicePlugin"]["config"],
            },
        },
    }
    assert json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"]) == {"configList": [{
        "resourceName": "ib", "resourcePrefix": "rdma", "rdmaHcaMax": 63,
        "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]}}]}


def test_resource_names_are_the_ones_pools_publish():
    pools = [pool("ib", "existing", "infiniband", 8), pool("roce", "existing", "roce", 4)]
    config = specs.shared_device_plugin_config(pools)["configList"]
    assert [f"{c['resourcePrefix']}/{c['resourceName']}" for c in config] == [p.rdma_resource for p in pools]
    assert [c["selectors"]["linkTypes"] for c in config] == [["infiniband"], ["ether"]]


def test_aks_gets_the_doca_ofed_driver_and_oke_keeps_its_host_driver():
    azure = specs.nic_cluster_policy("azure", [pool("ib", "azure", "infiniband", 8)])["spec"]
    assert azure["ofedDriver"] == {
        "image": "doca-driver", "repository": "nvcr.io/nvidia/mellanox", "version": "doca3.3.0-26.01-1.0.0.0-0",
        "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1,
                          "drain": {"enable": True, "force": True, "deleteEmptyDir": True, "timeoutSeconds": 300}}}
    oci = specs.nic_cluster_policy("oci", [pool("roce", "oci", "roce", 16)])["spec"]
    assert "ofedDriver" not in oci
    assert oci["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][0]["values"] == ["roce"]


@pytest.mark.parametrize("cloud,fabric", [("azure", "infiniband"), ("oci", "roce"), ("existing", "infiniband")])
def test_nic_cluster_policy_matches_the_vendored_upstream_crd(cloud, fabric):
    assert crd_schema("mellanox.com/v1alpha1", "NicClusterPolicy") is not None
    validate_manifest(specs.nic_cluster_policy(cloud, [pool("p", cloud, fabric, 8)]), "1.34")


def test_the_vendored_crd_rejects_a_misspelt_field():
    policy = specs.nic_cluster_policy("existing", [pool("p", "existing", "infiniband", 8)])
    policy["spec"]["rdmaSharedDevicePlugin"]["configs"] = "{}"
    with pytest.raises(ManifestError, match="rdmaSharedDevicePlugin"):
        validate_manifest(policy, "1.34")


def test_pod_requirements_per_fabric():
    assert specs.pod_requirements(pool("efa", "aws", "efa", 32)) == {
        "resources": {"vpc.amazonaws.com/efa": 32}, "annotations": {}}
    assert specs.pod_requirements(pool("ib", "azure", "infiniband", 8)) == {
        "resources": {"rdma/ib": 1}, "annotations": {}}
    gke = pool("a3", "gcp", "gpudirect-tcpxo", 8, annotations=(("networking.gke.io/interfaces", "[...]"),))
    assert specs.pod_requirements(gke) == {"resources": {}, "annotations": {"networking.gke.io/interfaces": "[...]"}}


# The catalog's 8 x H100 RDMA shape of each cloud: components re-check every pool against the catalog.
H100_X8 = {"aws": "p5.48xlarge", "azure": "Standard_ND96isr_H100_v5", "gcp": "a3-megagpu-8g"}


def stack(cloud, pools, **extra):
    specs = [{**p.spec(), "instance_type": H100_X8[cloud]} for p in pools]
    return run_program(lambda: RdmaStack("rdma", {"cloud": cloud, "pools": specs, **extra}))


def test_efa_pools_get_the_efa_chart_in_kube_system():
    rec = stack("aws", [pool("train", "aws", "efa", 32), pool("infer", "aws")])
    assert [r.name for r in rec.of_type(RELEASE)] == ["rdma-efa-device-plugin"]
    release = rec.one(RELEASE, "rdma-efa-device-plugin").inputs
    assert {k: release[k] for k in ("chart", "version", "repositoryOpts", "namespace", "name")} == {
        "chart": "aws-efa-k8s-device-plugin", "version": "v0.5.30",
        "repositoryOpts": {"repo": "https://aws.github.io/eks-charts"}, "namespace": "kube-system",
        "name": "aws-efa-k8s-device-plugin"}
    assert release["values"]["nodeSelector"] == {"gpu-platform.io/rdma": "efa"}
    assert rec.of_type(NCP) == []


def test_infiniband_pools_get_the_network_operator_then_the_nic_cluster_policy():
    rec = stack("azure", [pool("train", "azure", "infiniband", 8)], nfd_installed=True)
    operator = rec.one(RELEASE, "rdma-network-operator")
    assert {k: operator.inputs[k] for k in ("chart", "version", "repositoryOpts", "namespace", "values")} == {
        "chart": "network-operator", "version": "v26.1.2",
        "repositoryOpts": {"repo": "https://helm.ngc.nvidia.com/nvidia"}, "namespace": "nvidia-network-operator",
        "values": {"nfd": {"enabled": False}}}
    namespace = rec.one("kubernetes:core/v1:Namespace", "rdma-namespace").inputs["metadata"]
    assert namespace["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    policy = rec.one(NCP, "rdma-nic-cluster-policy")
    assert policy.inputs["metadata"]["name"] == "nic-cluster-policy"
    assert policy.inputs["spec"]["rdmaSharedDevicePlugin"]["image"] == "k8s-rdma-shared-dev-plugin"
    assert "ofedDriver" in policy.inputs["spec"]
    # CRD first: the policy waits for the operator's release, which waits for its namespace.
    assert [d.rsplit("::", 1)[-1] for d in policy.dependencies] == ["rdma-network-operator"]
    assert [d.rsplit("::", 1)[-1] for d in operator.dependencies] == ["rdma-namespace"]


def test_gke_gpudirect_pools_are_left_to_the_gke_layer():
    rec = stack("gcp", [pool("a3", "gcp", "gpudirect-tcpxo", 8)])
    assert [r.type for r in rec] == ["gpuplatform:index:RdmaStack"]
