"""What every cloud's options module (``clouds/<cloud>/options.py``) shares: the managed cluster's control-plane
field, the read of an optional key that must match a pattern, and the component args of a ``nodePools`` entry.

Pure and without a cloud SDK, like the options modules themselves.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ..control_plane import ControlPlaneSecurity
from ..fields import ConfigError, join, read_str


@dataclass(frozen=True)
class ManagedClusterOptions:
    """What a managed cluster's options (EKS, AKS, GKE, OKE) hold beside their cloud's own keys."""

    control_plane: ControlPlaneSecurity = ControlPlaneSecurity()
    """Who may reach the API endpoint (``apiAllowedCidrs``; none: private only) and whether Secrets are
    envelope-encrypted (``secretsEncryption``), parsed by `control_plane.parse_control_plane`."""


def read_matching(raw: Mapping, key: str, path: str, pattern: re.Pattern, what: str,
                  default: Optional[str] = None) -> Optional[str]:
    """An optional string key that must match ``pattern`` (``default`` when absent); refused as
    ``'<value>' is not <what>`` at its path."""
    value = read_str(raw, key, path, default)
    if value is not None and not pattern.match(value):
        raise ConfigError(join(path, key), f"'{value}' is not {what}")
    return value


def entry_args(pool: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """A pool component's args: ``{"pool": <spec>}`` and every one of ``args`` that is not None (what the
    ``nodePools`` entry left out keeps the component's default)."""
    return {"pool": pool.spec(), **{key: value for key, value in args.items() if value is not None}}


def physical_name_problem(stack: str, named: str) -> Optional[str]:
    """Why ``stack`` cannot be deployed on a cloud whose resources ``named`` (``"EKS node groups"``) take their names
    from it and only letters, digits, '-' and '_', or None. Pulumi's stack names also take '.' (``Team.Azure``)."""
    if re.fullmatch(r"[A-Za-z0-9_-]+", stack):
        return None
    return (f"the stack name is part of the names of {named}, which take only letters, digits, '-' and '_': name "
            f"the stack '{re.sub(r'[^A-Za-z0-9_-]', '-', stack)}'")
