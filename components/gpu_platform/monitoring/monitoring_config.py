"""``monitoring``: the stack section of the monitoring stack (parsed with `fields`).

The dataclass (`MonitoringConfig`) stays in `config_model`; `config` composes `parse_monitoring` and re-exports it.
"""

import re
from collections.abc import Mapping

from ..config_model import MonitoringConfig, Secret
from ..errors import ConfigError, check_keys, join
from ..fields import read_bool, read_str
from ..fields import section as _section


def parse_monitoring(raw: Mapping) -> MonitoringConfig:
    sec, path = _section(raw, "monitoring"), "monitoring"
    check_keys(sec, {"enabled", "retention", "storageSize", "grafanaAdminPassword"}, path)
    retention = read_str(sec, "retention", path, "15d")
    if not re.fullmatch(r"\d+(ms|s|m|h|d|w|y)", retention):
        raise ConfigError(join(path, "retention"), f"'{retention}' is not a Prometheus duration such as 15d")
    storage = read_str(sec, "storageSize", path, "50Gi")
    if not re.fullmatch(r"\d+(Ki|Mi|Gi|Ti)", storage):
        raise ConfigError(join(path, "storageSize"), f"'{storage}' is not a storage quantity such as 50Gi")
    password = sec.get("grafanaAdminPassword")
    return MonitoringConfig(
        enabled=read_bool(sec, "enabled", path, True),
        retention=retention,
        storage_size=storage,
        grafana_admin_password=Secret(password) if password is not None else None,
    )
