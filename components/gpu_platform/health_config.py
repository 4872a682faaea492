"""``health``: GPU and RDMA node health, active checks and remediation, typed and validated.

STUB written by the lead: the health helper completes the keys, the validation and this docstring.
"""

from collections.abc import Mapping
from dataclasses import dataclass

KEYS = {"enabled"}  # the helper adds activeChecks, remediation, ...


@dataclass(frozen=True)
class HealthConfig:
    """``health``: passive conditions, active checks and remediation (dry-run by default)."""

    enabled: bool = True
    """Deploy the health checks and remediation (default true)."""


def parse_health(raw: Mapping, cloud: str) -> HealthConfig:
    """The ``health`` section of a stack's configuration (``raw`` is the whole stack configuration)."""
    from .config import _section, check_keys, read_bool

    sec = _section(raw, "health")
    check_keys(sec, KEYS, "health")
    return HealthConfig(enabled=read_bool(sec, "enabled", "health", True))
