"""Configuration of the scheduling, tenancy and training layers: defaults, and one-line errors naming the path."""

import pytest

from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError

POOL = {"name": "train", "gpuModel": "h100", "gpusPerNode": 8, "minNodes": 2, "maxNodes": 2}


def existing(**changes):
    return {"cloud": "existing", "networkPolicyEnforced": True, "nodePools": [dict(POOL)], **changes}


def test_defaults():
    config = parse_config(existing(), "s")
    assert config.scheduling.default_priority_class is None
    assert (config.training.enabled, config.training.schedule, config.training.checkpoint_size,
            config.training.checkpoint_storage_class) == (True, "0 3 * * 0", "100Gi", None)


def test_training_settings_are_read():
    config = parse_config(existing(training={"schedule": "30 2 * * *", "checkpointSize": "2Ti",
                                             "checkpointStorageClass": "azurefile-csi", "enabled": False}), "s")
    assert (config.training.enabled, config.training.schedule, config.training.checkpoint_size,
            config.training.checkpoint_storage_class) == (False, "30 2 * * *", "2Ti", "azurefile-csi")


def test_default_priority_class_names_a_tier():
    assert parse_config(existing(scheduling={"defaultPriorityClass": "low-priority"}), "s").scheduling \
        .default_priority_class == "low-priority"


NINE_TAINTS = [f"example.com/t{i}=x:NoSchedule" for i in range(8)]  # + the GPU taint = 9

CASES = [
    (existing(scheduling={"defaultPriorityClass": "high-prority"}),
     "s: scheduling.defaultPriorityClass: 'high-prority' is not one of inference-critical, high-priority, "
     "medium-priority, low-priority; did you mean 'high-priority'?"),
    (existing(nodePools=[{**POOL, "taints": NINE_TAINTS}]),
     "s: nodePools[0].taints: the pool's nodes would carry 9 taints (the GPU taint included); "
     "a Kueue flavor tolerates at most 8"),
    (existing(training={"schedule": "weekly"}),
     "s: training.schedule: 'weekly' is not a five-field cron schedule"),
    (existing(training={"checkpointSize": "100GB"}),
     "s: training.checkpointSize: '100GB' is not a storage quantity such as 100Gi"),
    (existing(training={"checkpointStorageClass": "Azure_Files"}),
     "s: training.checkpointStorageClass: 'Azure_Files' is not a StorageClass name"),
    (existing(training={"retain": True}),
     "s: training.retain: unknown key"),
]


@pytest.mark.parametrize("raw, message", CASES, ids=[c[1].split(":")[1].strip() for c in CASES])
def test_bad_scheduling_configuration_is_one_line(raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    assert str(err.value) == message


def test_taint_limit_does_not_apply_without_kueue():
    config = parse_config(existing(nodePools=[{**POOL, "taints": NINE_TAINTS}], scheduling={"kueue": False}), "s")
    assert len(config.gpu_pools()[0].taints) == 9
