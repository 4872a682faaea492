"""``optimizer``: the stack section of the GPU utilisation optimizer (parsed with `fields`), and the rule that it
runs only where it can read a per-pod utilisation signal.

The dataclass (`OptimizerConfig`) stays in `config_model`; `config` composes these and re-exports `parse_optimizer`.
"""

from collections.abc import Mapping

from .. import catalog
from ..config_model import OPTIMIZER_ACTIONS, OptimizerConfig, PlatformConfig
from ..errors import ConfigError, check_keys, join
from ..fields import read_bool, read_enum, read_float, read_str
from ..fields import section as _section
from ..pools import GpuPool


def parse_optimizer(raw: Mapping) -> OptimizerConfig:
    sec, path = _section(raw, "optimizer"), "optimizer"
    check_keys(sec, {"enabled", "action", "schedule", "utilizationThreshold", "dryRun"}, path)
    schedule = read_str(sec, "schedule", path, OptimizerConfig.schedule)
    if len(schedule.split()) != 5:
        raise ConfigError(join(path, "schedule"), f"'{schedule}' is not a five-field cron schedule")
    return OptimizerConfig(
        enabled=read_bool(sec, "enabled", path, True),
        action=read_enum(sec, "action", path, OPTIMIZER_ACTIONS, "report"),
        schedule=schedule,
        utilization_threshold=read_float(sec, "utilizationThreshold", path, 10.0, 0.0, 100.0),
        dry_run=read_bool(sec, "dryRun", path, True),
    )


def check_optimizer_pools(config: PlatformConfig, pools: list[GpuPool], explicit_optimizer: bool) -> None:
    """The optimizer (per-pod utilisation) runs on NVIDIA or AMD pools: by default not deployed without them, asked
    for it (``optimizer`` given, ``enabled``) is refused."""
    from .signals import VENDORS_WITH_SIGNAL

    if not any(p.vendor in VENDORS_WITH_SIGNAL for p in pools) and explicit_optimizer and config.optimizer.enabled:
        # Its idleness signal is a per-pod utilisation metric; other vendors' exporters name no pod (Neuron) or
        # there is none in the cluster (TPU): on their pools it would find nothing to act on.
        readable = " and ".join(catalog.VENDORS[v].display_name for v in VENDORS_WITH_SIGNAL)
        raise ConfigError("optimizer.enabled", f"the optimizer reads per-pod utilisation of {readable} GPUs only, "
                                               "and no node pool has them; set optimizer.enabled: false")
