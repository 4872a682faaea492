"""The NVIDIA and RDMA layers inside the platform: reference stacks, install order, configuration rules."""

from pathlib import Path

import pytest
from conftest import planned_stack

from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError

STACKS = Path(__file__).resolve().parents[1] / "stacks"
RELEASE = "kubernetes:helm.sh/v3:Release"


def deps(reg):
    return {d.rsplit("::", 1)[-1] for d in reg.dependencies}


@pytest.fixture(scope="module")
def existing():
    return planned_stack("existing")


@pytest.fixture(scope="module")
def aws_dev():
    return planned_stack("aws-dev")


def test_existing_cluster_gets_the_full_operator_and_the_network_operator(existing):
    assert existing.errors == []
    rec = existing.recording
    releases = sorted(r.name for r in rec.of_type(RELEASE) if "nvidia" in r.name or "rdma" in r.name)
    assert releases == ["existing-nvidia-gpu-operator", "existing-rdma-network-operator"]
    values = rec.one(RELEASE, "existing-nvidia-gpu-operator").inputs["values"]
    assert (values["toolkit"], values["mig"]) == ({"enabled": True}, {"strategy": "single"})
    # The operator owns the driver here, so it upgrades it one node at a time, after Kueue's jobs on the node end.
    assert values["driver"] == {"enabled": True, "upgradePolicy": {
        "autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": 1,
        "waitForCompletion": {"podSelector": "kueue.x-k8s.io/podset,!pod-template-hash,!controller-revision-hash",
                              "timeoutSeconds": 0},
        "gpuPodDeletion": {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": True},
        "drain": {"enable": True, "force": False, "timeoutSeconds": 1800, "deleteEmptyDir": True}}}
    # Monitoring is on in this stack: the DCGM exporter gets its ServiceMonitor with honorLabels.
    assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is True
    assert values["dcgmExporter"]["serviceMonitor"]["honorLabels"] is True
    # A MIG pool and an exclusive pool: no sharing ConfigMap.
    assert [r for r in rec.of_type("kubernetes:core/v1:ConfigMap") if r.name.startswith("existing-nvidia")] == []
    # One NFD: the GPU Operator's.
    assert values["nfd"] == {"enabled": True}
    assert rec.one(RELEASE, "existing-rdma-network-operator").inputs["values"] == {"nfd": {"enabled": False}}
    policy = next(m for m in existing.manifests if m["kind"] == "NicClusterPolicy")
    assert policy["metadata"]["name"] == "nic-cluster-policy"


def test_existing_install_order_prometheus_crds_then_operator_then_network_operator(existing):
    rec = existing.recording
    operator = rec.one(RELEASE, "existing-nvidia-gpu-operator")
    network = rec.one(RELEASE, "existing-rdma-network-operator")
    policy = rec.one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy", "existing-rdma-nic-cluster-policy")
    assert "existing-monitoring-kube-prometheus-stack" in deps(operator)
    assert "existing-nvidia-gpu-operator" in deps(network)
    assert {"existing-rdma-network-operator", "existing-nvidia-gpu-operator"} <= deps(policy)


def test_existing_pools_carry_the_labels_the_nvidia_stack_reads(existing):
    nodes = {m["metadata"]["name"]: m["metadata"]["labels"] for m in existing.manifests if m["kind"] == "Node"}
    assert nodes["gpu-node-01"]["nvidia.com/mig.config"] == "all-3g.40gb"
    assert nodes["gpu-node-11"]["gpu-platform.io/rdma"] == "infiniband"


def test_aws_dev_gets_the_device_plugin_dcgm_exporter_and_efa_plugin(aws_dev):
    assert aws_dev.errors == []
    rec = aws_dev.recording
    releases = sorted(r.name for r in rec.of_type(RELEASE) if "nvidia" in r.name or "rdma" in r.name)
    assert releases == ["aws-dev-nvidia-dcgm-exporter", "aws-dev-nvidia-nvidia-device-plugin",
                        "aws-dev-rdma-efa-device-plugin"]
    efa = rec.one(RELEASE, "aws-dev-rdma-efa-device-plugin").inputs
    assert efa["values"]["nodeSelector"] == {"gpu-platform.io/rdma": "efa"}
    # The chart's ServiceMonitor needs the Prometheus Operator CRDs.
    dcgm = rec.one(RELEASE, "aws-dev-nvidia-dcgm-exporter")
    assert "aws-dev-monitoring-kube-prometheus-stack" in deps(dcgm)
    assert dcgm.inputs["values"]["serviceMonitor"]["enabled"] is True


def pools(*entries):
    return [{"name": f"p{i}", "instanceType": t, "maxNodes": 2, **extra} for i, (t, extra) in enumerate(entries)]


@pytest.mark.parametrize("raw,message", [
    ({"cloud": "gcp", "region": "us-central1", "gpuSoftware": "device-plugin",
      "nodePools": pools(("g2-standard-8", {}))},
     "s: gpuSoftware: 'device-plugin' is not supported on GKE, which runs its own device plugin; "
     "use 'cloud-managed' (GKE's) or 'operator'"),
    ({"cloud": "aws", "region": "us-west-2", "gpuSoftware": "device-plugin",
      "nodePools": pools(("p4d.24xlarge", {"sharing": {"mode": "mig", "profile": "3g.20gb"}}))},
     "s: nodePools[0].sharing.mode: mig with gpuSoftware 'device-plugin' needs GPUs the cloud partitions "
     "(AKS only); use 'operator', whose MIG manager applies the pool's profile"),
    ({"cloud": "oci", "region": "us-ashburn-1", "compartmentId": "ocid1.compartment.oc1..x",
      "gpuSoftware": "cloud-managed",
      "nodePools": pools(("VM.GPU.A10.1", {"sharing": {"mode": "hami", "replicas": 4}}))},
     "s: nodePools[0].sharing.mode: hami replaces the NVIDIA device plugin on its pools, which gpuSoftware "
     "'cloud-managed' leaves to the cloud; use 'operator' or 'device-plugin'"),
    ({"cloud": "aws", "region": "us-west-2",
      "nodePools": pools(("g6.xlarge", {"sharing": {"mode": "hami", "replicas": 4}}),
                         ("g6.2xlarge", {"sharing": {"mode": "hami", "replicas": 8}}))},
     "s: nodePools[1].sharing.replicas: hami pools share GPUs one way cluster-wide (HAMi's deviceSplitCount): "
     "nodePools[0] uses 4, got 8"),
    ({"cloud": "aws", "region": "us-west-2",
      "nodePools": pools(("g6.xlarge", {"sharing": {"mode": "hami", "replicas": 1}}))},
     "s: nodePools[0].sharing.replicas: hami needs at least 2 replicas per GPU, got 1"),
])
def test_gpu_software_rules(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    assert str(err.value) == message


def test_default_gpu_software_is_the_clouds_unless_a_pool_needs_the_operator():
    plain = parse_config({"cloud": "aws", "region": "us-west-2", "nodePools": pools(("g6.xlarge", {}))}, "s")
    assert plain.gpu_software == "device-plugin"
    mig = parse_config({"cloud": "aws", "region": "us-west-2", "nodePools": pools(
        ("p4d.24xlarge", {"sharing": {"mode": "mig", "profile": "3g.20gb"}}))}, "s")
    assert mig.gpu_software == "operator"
    shared_oke = parse_config({"cloud": "oci", "region": "us-ashburn-1", "compartmentId": "ocid1.compartment.oc1..x",
                               "nodePools": pools(("VM.GPU.A10.1", {"sharing": {"mode": "time-slicing",
                                                                                  "replicas": 2}}))}, "s")
    assert shared_oke.gpu_software == "operator"
    hami = parse_config({"cloud": "aws", "region": "us-west-2", "nodePools": pools(
        ("g6.xlarge", {"sharing": {"mode": "hami", "replicas": 4}}))}, "s")
    assert (hami.gpu_software, hami.gpu_pools()[0].sharing.replicas) == ("device-plugin", 4)
