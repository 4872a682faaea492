"""Parsing valid configuration: defaults, derived values, GpuPools."""

import pytest

from gpu_platform.config import ConfigError, parse_config
from gpu_platform.labels import GPU_TAINT, Taint


def test_minimal_stack_gets_every_default(aws_config):
    config = parse_config(aws_config, "aws-dev")
    assert config.kubernetes_version == "1.36"
    assert config.gpu_software == "device-plugin"
    assert config.teams == ()
    assert config.monitoring.enabled and config.monitoring.retention == "15d"
    assert config.scheduling.kueue and config.scheduling.default_priority_class is None
    assert config.inference.enabled and config.inference.replicas == 1
    pool = config.node_pools[0]
    assert (pool.gpu_model, pool.gpus_per_node, pool.min_nodes, pool.max_nodes) == ("l4", 1, 0, 2)
    assert pool.sharing.mode == "exclusive"


def test_gpu_pool_carries_labels_taints_and_sharing(aws_config):
    aws_config["nodePools"] = [{
        "name": "infer", "instanceType": "g6.12xlarge", "maxNodes": 3,
        "sharing": {"mode": "time-slicing", "replicas": 4},
        "labels": {"tier": "online"}, "taints": ["dedicated=inference:NoSchedule"],
    }]
    pool = parse_config(aws_config, "s").gpu_pools()[0]
    assert pool.labels == {
        "tier": "online",
        "gpu-platform.io/pool": "infer",
        "gpu-platform.io/accelerator": "l4",
        "gpu-platform.io/gpu-sharing": "time-slicing",
        "nvidia.com/device-plugin.config": "infer",
    }
    assert pool.taints == (GPU_TAINT, Taint("dedicated", "inference", "NoSchedule"))
    assert pool.schedulable_gpus_per_node == 16
    assert pool.max_gpus == 12


def test_rdma_pool_gets_fabric_and_mig_label():
    config = parse_config({"cloud": "aws", "region": "us-west-2", "gpuSoftware": "operator", "nodePools": [
        {"name": "train", "instanceType": "p5.48xlarge", "rdma": True, "maxNodes": 4,
         "sharing": {"mode": "mig", "profile": "3g.40gb"}}]}, "s")
    pool = config.gpu_pools()[0]
    assert (pool.rdma_fabric, pool.rdma_interfaces, pool.rdma_resource) == ("efa", 32, "vpc.amazonaws.com/efa")
    assert pool.labels["nvidia.com/mig.config"] == "all-3g.40gb"
    assert pool.labels["gpu-platform.io/rdma"] == "efa"


def test_azure_spot_pool_tolerates_the_aks_spot_taint():
    config = parse_config({"cloud": "azure", "region": "westeurope", "nodePools": [
        {"name": "spot", "instanceType": "Standard_NC24ads_A100_v4", "spot": True}]}, "s")
    assert Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule") in config.gpu_pools()[0].taints


def test_gcp_n1_needs_an_accelerator():
    with pytest.raises(ConfigError, match=r"^s: nodePools\[0\].accelerator: is required$"):
        parse_config({"cloud": "gcp", "region": "us-central1", "nodePools": [
            {"name": "t4", "instanceType": "n1-standard-8"}]}, "s")
    config = parse_config({"cloud": "gcp", "region": "us-central1", "nodePools": [
        {"name": "t4", "instanceType": "n1-standard-8", "accelerator": "nvidia-tesla-t4", "gpuCount": 2}]}, "s")
    assert (config.node_pools[0].gpu_model, config.node_pools[0].gpus_per_node) == ("t4", 2)


def test_oci_requires_compartment():
    with pytest.raises(ConfigError, match=r"^s: compartmentId: is required$"):
        parse_config({"cloud": "oci", "region": "us-ashburn-1", "nodePools": [
            {"name": "a10", "instanceType": "VM.GPU.A10.1"}]}, "s")


def test_existing_cluster_needs_gpu_model_not_region():
    config = parse_config({"cloud": "existing", "networkPolicyEnforced": True, "nodePools": [
        {"name": "onprem", "gpuModel": "h100", "gpusPerNode": 8, "nodes": ["n1"]}]}, "s")
    assert config.gpu_software == "operator"
    assert config.gpu_pools()[0].gpus_per_node == 8


@pytest.mark.parametrize(("change", "message"), [
    ({"nodePools": [{"name": "a", "instanceType": "g6.xlarge", "colour": "red"}]},
     "s: nodePools[0].colour: unknown key"),
    ({"teems": []}, "s: teems: unknown key; did you mean 'teams'?"),
    ({"kubernetesVersion": "1.34.2"}, "s: kubernetesVersion: '1.34.2' is not a Kubernetes minor version such as 1.36"),
    ({"monitoring": {"retention": "two weeks"}},
     "s: monitoring.retention: 'two weeks' is not a Prometheus duration such as 15d"),
    ({"inference": {"pool": "infr"}}, "s: inference.pool: no node pool named 'infr'; did you mean 'infer'?"),
    ({"nodePools": [{"name": "a", "instanceType": "g6.xlarge", "taints": ["bad taint"]}]},
     "s: nodePools[0].taints[0]: 'bad taint' is not a taint of the form key=value:Effect"),
    ({"nodePools": [{"name": "a", "instanceType": "g6.xlarge", "labels": {"gpu-platform.io/pool": "x"}}]},
     "s: nodePools[0].labels.gpu-platform.io/pool: keys under gpu-platform.io/ are set by the platform"),
    ({"nodePools": [{"name": "a", "instanceType": "p5.48xlarge", "sharing": {"mode": "mig", "profile": "1g.5gb"}}]},
     "s: nodePools[0].sharing.profile: NVIDIA H100 80GB MIG profile '1g.5gb' is not one of 1g.10gb, 1g.20gb, 2g.20gb, "
     "3g.40gb, 4g.40gb, 7g.80gb; did you mean '1g.20gb'?"),
])
def test_more_field_path_errors(aws_config, change, message):
    aws_config["nodePools"] = [{"name": "infer", "instanceType": "g6.xlarge"}]
    aws_config.update(change)
    with pytest.raises(ConfigError) as err:
        parse_config(aws_config, "s")
    assert str(err.value) == message
