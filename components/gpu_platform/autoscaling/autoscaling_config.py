"""``autoscaling``: the stack section of node and workload autoscaling (parsed with `fields`), and the rule that a
VPA and an HPA never act on the same resource of the same workload.

The dataclass (`AutoscalingConfig`) stays in `config_model`; `config` composes these and re-exports
`parse_autoscaling`, `AUTOSCALERS` and `METRICS_SERVER_DEFAULT`.
"""

from collections.abc import Mapping

from ..config_model import VPA_MODES, VPA_RESOURCES, VPA_WORKLOADS, AutoscalingConfig, PlatformConfig
from ..errors import ConfigError, check_keys, join, one_of
from ..fields import read_bool, read_enum, read_int, read_list
from ..fields import section as _section
from .autoscaling_plan import check_platform_autoscalers

AUTOSCALERS = {"aws": ("cluster-autoscaler", "karpenter")}
METRICS_SERVER_DEFAULT = {"aws": True, "oci": True}
"""Clouds whose clusters come without metrics-server (EKS and OKE offer it only as an add-on)."""


def _read_choices(sec: Mapping, key: str, path: str, choices: tuple[str, ...], default: tuple[str, ...]
                  ) -> tuple[str, ...]:
    """A list of distinct values out of ``choices`` (at least one); the default when the key is absent."""
    if key not in sec or sec[key] is None:
        return default
    values = read_list(sec, key, path, non_empty=True)
    for i, value in enumerate(values):
        if not isinstance(value, str) or value not in choices:
            raise ConfigError(join(join(path, key), i), one_of(str(value), choices))
        if value in values[:i]:
            raise ConfigError(join(join(path, key), i), f"'{value}' is listed twice")
    return tuple(values)


def parse_autoscaling(raw: Mapping, cloud: str) -> AutoscalingConfig:
    sec, path = _section(raw, "autoscaling"), "autoscaling"
    check_keys(sec, {"autoscaler", "vpa", "vpaMode", "vpaWorkloads", "vpaResources", "scaleDownUnneededMinutes",
                     "maxNodeProvisionMinutes", "metricsServer"}, path)
    choices = AUTOSCALERS.get(cloud, ("built-in",))
    return AutoscalingConfig(
        autoscaler=read_enum(sec, "autoscaler", path, choices, choices[0]),
        vpa=read_bool(sec, "vpa", path, True),
        vpa_mode=read_enum(sec, "vpaMode", path, VPA_MODES, "Off"),
        vpa_workloads=_read_choices(sec, "vpaWorkloads", path, VPA_WORKLOADS, ("training",)),
        vpa_resources=_read_choices(sec, "vpaResources", path, VPA_RESOURCES, VPA_RESOURCES),
        scale_down_unneeded_minutes=read_int(sec, "scaleDownUnneededMinutes", path, 30, minimum=1),
        max_node_provision_minutes=read_int(sec, "maxNodeProvisionMinutes", path, 25, minimum=1),
        metrics_server=read_bool(sec, "metricsServer", path, METRICS_SERVER_DEFAULT.get(cloud, False)),
    )


def check_autoscalers(config: PlatformConfig) -> None:
    """A VPA and an HPA never act on the same resource of the same workload (`autoscaling_plan`'s rule)."""
    if not config.autoscaling.vpa:
        return
    check_platform_autoscalers(config)
