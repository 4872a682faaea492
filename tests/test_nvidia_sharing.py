"""Device-plugin sharing configs: one ConfigMap, one named config per time-slicing/MPS pool, a safe default."""

import yaml

from gpu_platform import labels
from gpu_platform.accelerators import sharing
from gpu_platform.pools import GpuPool, Sharing


def pool(name, mode="exclusive", replicas=1, profile=None, gpus=4):
    return GpuPool(name, "aws", "g6.12xlarge", "l4", gpus, 24, 0, 3, sharing=Sharing(mode, replicas, profile))


def test_time_slicing_pool_gets_four_replicas_of_nvidia_gpu():
    data = sharing.configmap_data([pool("l4-shared", "time-slicing", 4)])
    assert yaml.safe_load(data["l4-shared"]) == {
        "version": "v1",
        "sharing": {"timeSlicing": {
            "renameByDefault": False,
            "failRequestsGreaterThanOne": True,
            "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
        }},
    }


def test_mps_pool_uses_the_mps_section():
    config = yaml.safe_load(sharing.configmap_data([pool("mps", "mps", 3)])["mps"])
    assert config["sharing"] == {"mps": {
        "renameByDefault": False, "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}}


def test_one_config_per_shared_pool_plus_a_default_that_shares_nothing():
    pools = [pool("b-ts", "time-slicing", 2), pool("a-mps", "mps", 4), pool("whole"), pool("mig", "mig", 1, "1g.10gb")]
    data = sharing.configmap_data(pools)
    # Exclusive and MIG pools have no config of their own: without the node label they use the default.
    assert list(data) == ["exclusive.default", "a-mps", "b-ts"]
    assert yaml.safe_load(data[sharing.DEFAULT_CONFIG]) == {"version": "v1"}


def test_no_shared_pool_means_no_configmap():
    assert sharing.configmap_data([pool("whole"), pool("mig", "mig", 1, "1g.10gb")]) == {}


def test_default_config_key_cannot_collide_with_a_pool_name():
    # Pool names are DNS labels: no dots.
    assert "." in sharing.DEFAULT_CONFIG


def test_config_keys_match_the_node_label_the_cloud_layer_sets():
    shared = pool("l4-shared", "time-slicing", 4)
    assert shared.labels[labels.DEVICE_PLUGIN_CONFIG_LABEL] == "l4-shared"
    assert sharing.node_config_label(shared) in sharing.configmap_data([shared])
    assert sharing.node_config_label(pool("whole")) == sharing.DEFAULT_CONFIG


def test_checksum_changes_with_the_config_and_only_then():
    four = sharing.configmap_data([pool("l4-shared", "time-slicing", 4)])
    eight = sharing.configmap_data([pool("l4-shared", "time-slicing", 8)])
    assert sharing.config_checksum(four) == sharing.config_checksum(dict(reversed(list(four.items()))))
    assert sharing.config_checksum(four) != sharing.config_checksum(eight)
    assert len(sharing.config_checksum(four)) == 64
