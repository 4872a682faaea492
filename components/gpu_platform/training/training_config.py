"""``training``: the stack section of the reference training job (parsed with `fields`), and the rules for the pool
it would land on (its accelerators, its image's architecture, a TPU slice's quota, Kueue's topology levels).

The dataclass (`TrainingConfig`) stays in `config_model`; `config` composes these and re-exports `parse_training`,
`check_training_topology` and `TOPOLOGY_POLICIES`. The reference job's pool is `autoscaling.autoscaling_plan`'s
decision (`reference_training`, `reference_tpu_slice`), imported from there.
"""

import re
from collections.abc import Callable, Mapping
from typing import Optional

from .. import catalog
from ..architectures import reference_image_problem
from ..config_model import NodePoolConfig, PlatformConfig, TrainingConfig
from ..errors import ConfigError, check_keys, join
from ..fields import read_bool, read_enum, read_str
from ..fields import section as _section
from ..pools import GpuPool, training_pool

TOPOLOGY_POLICIES = ("preferred", "required")


def parse_training(raw: Mapping) -> TrainingConfig:
    sec, path = _section(raw, "training"), "training"
    check_keys(sec, {"enabled", "schedule", "checkpointStorageClass", "checkpointSize", "topologyPolicy",
                     "topologyLevel"}, path)
    schedule = read_str(sec, "schedule", path, TrainingConfig.schedule)
    if len(schedule.split()) != 5:
        raise ConfigError(join(path, "schedule"), f"'{schedule}' is not a five-field cron schedule")
    size = read_str(sec, "checkpointSize", path, TrainingConfig.checkpoint_size)
    if not re.fullmatch(r"[1-9]\d*(Mi|Gi|Ti)", size):
        raise ConfigError(join(path, "checkpointSize"), f"'{size}' is not a storage quantity such as 100Gi")
    storage_class = read_str(sec, "checkpointStorageClass", path, None)
    if storage_class is not None and not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", storage_class):
        raise ConfigError(join(path, "checkpointStorageClass"), f"'{storage_class}' is not a StorageClass name")
    return TrainingConfig(
        enabled=read_bool(sec, "enabled", path, True),
        schedule=schedule,
        checkpoint_storage_class=storage_class,
        checkpoint_size=size,
        topology_policy=read_enum(sec, "topologyPolicy", path, TOPOLOGY_POLICIES, TrainingConfig.topology_policy),
        topology_level=read_str(sec, "topologyLevel", path, None),
    )


def check_training_topology(config: PlatformConfig, raw: Mapping) -> None:
    """``training.topologyPolicy`` and ``topologyLevel`` act only where Kueue places the reference job on a
    topology-aware flavor, and the level must be one its pool's nodes carry (a Topology level no node carries would
    leave the job unplaceable)."""
    from ..autoscaling.autoscaling_plan import reference_training
    from ..scheduling.kueue_objects import topology_aware, topology_levels

    sec = _section(raw, "training")
    given = [key for key in ("topologyPolicy", "topologyLevel") if key in sec]
    planned = reference_training(config, config.gpu_pools())
    if not given or planned is None:
        return
    pool = planned[0]
    if not config.scheduling.kueue:
        raise ConfigError(join("training", given[0]), "takes effect only with Kueue (scheduling.kueue: true)")
    if not topology_aware(pool):
        raise ConfigError(join("training", given[0]),
                          f"pool '{pool.name}' has no topology-aware Kueue flavor (only fixed-size RDMA pools with "
                          "device-plugin GPUs, not queued-provisioning ones, have)")
    levels = topology_levels(pool)
    level = config.training.topology_level
    if level is not None and level not in levels:
        raise ConfigError("training.topologyLevel",
                          f"the nodes of pool '{pool.name}' carry no label '{level}'; their topology levels are "
                          f"{', '.join(levels)}")


def check_training_accelerator(config: PlatformConfig, pools: list[GpuPool]) -> None:
    """The reference training job (PyTorch DDP over NCCL/RCCL) runs on NVIDIA or AMD GPUs, or as a TPU slice's
    JobSet."""
    from ..versions import TRAINING_IMAGES

    train = training_pool(pools)
    if (config.training.enabled and train is not None and train.vendor not in TRAINING_IMAGES
            and train.vendor != catalog.GOOGLE_TPU):
        vendor = catalog.VENDORS[train.vendor].display_name
        raise ConfigError("training.enabled", f"the reference training job runs PyTorch DDP on NVIDIA or AMD GPUs, "
                                              f"and its pool '{train.name}' has {vendor} accelerators; set "
                                              "training.enabled: false")


def check_training_image(config: PlatformConfig, pools: list[GpuPool]) -> None:
    """On an arm64 pool the reference training job runs only an image published for arm64."""
    from ..versions import TRAINING_IMAGES

    train = training_pool(pools)
    if config.training.enabled and train is not None and train.vendor in TRAINING_IMAGES:
        problem = reference_image_problem(train, TRAINING_IMAGES[train.vendor].tagged)
        if problem is not None:
            raise ConfigError("training.enabled", f"{problem}; set training.enabled: false")


def check_tpu_example(config: PlatformConfig, pools: list[GpuPool],
                      tpu_topology: Callable[[NodePoolConfig], Optional[str]]) -> None:
    """The TPU layer's example JobSet gang-admits one whole slice: the first team with a TPU quota must hold one
    (`accelerators.tpu.TpuSliceJob` refuses less; checked here so nothing is registered first). ``tpu_topology``:
    the cloud's reading of a pool's slice topology (`clouds.<cloud>.options.tpu_topology`), which the caller
    supplies (features import no cloud module)."""
    from ..autoscaling.autoscaling_plan import reference_tpu_slice

    planned = reference_tpu_slice(config, pools)
    if planned is None:
        return
    tpu, team = planned
    topology = tpu_topology(next(c for c in config.node_pools if c.name == tpu.name))
    if topology is None:
        return
    team_index = config.teams.index(team)
    chips, quota = catalog.tpu_chips(topology), team.quota_of(tpu.resource)
    if quota < chips:
        raise ConfigError(join(join("teams", team_index), f"quotas.{tpu.resource}"),
                          f"the example JobSet takes a whole {topology} slice of pool '{tpu.name}' ({chips} chips); "
                          f"a quota of {quota} would never admit it (or set training.enabled: false)")
