"""How a node pool is upgraded, and whether the cloud may upgrade it on its own (``nodePools[].upgrade``).

One cloud-neutral description, `PoolUpgrade`, parsed from the stack key or from the pool components' ``upgrade``
argument (`PoolUpgradeArgs`, the same keys in snake_case), with defaults by the pool's role:

- training pools: no surge (GPU capacity for a surge node is rarely there, and reserved capacity has none spare),
  one node unavailable at a time, and no automatic upgrade while jobs run (``automatic: never``; per cloud:
  docs/upgrades.md);
- inference and general pools: a rolling surge, one new node before an old one goes (``maxSurge: 1``,
  ``maxUnavailable: 0``), automatic upgrades in the stack's maintenance window (``automatic: window``).

Each cloud maps the result to its own API (EKS ``updateConfig``, AKS ``upgradeSettings``, GKE ``upgradeSettings``
and maintenance exclusions, OKE ``nodePoolCyclingDetails``, Karpenter disruption budgets) and refuses, with one line,
the settings its API cannot honour (`PoolUpgrade.given` says which the user wrote).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Optional, TypedDict

from ..errors import ConfigError, check_keys, did_you_mean, one_of

SURGE = "surge"
BLUE_GREEN = "blue-green"
STRATEGIES = (SURGE, BLUE_GREEN)
"""``strategy``: ``surge`` (new nodes before or while old ones drain, every cloud) or ``blue-green`` (GKE: a second
set of nodes, the old set kept until the soak ends)."""

WINDOW = "window"
NEVER = "never"
AUTOMATIC = (WINDOW, NEVER)
"""``automatic``: ``window`` (the cloud may upgrade the pool's nodes on its own, only inside the stack's maintenance
window) or ``never`` (only a ``pulumi up`` that changes the pool upgrades it)."""

TRAINING = "training"

KEYS = ("maxSurge", "maxUnavailable", "strategy", "drainTimeoutMinutes", "soakMinutes", "automatic")
"""The keys of ``nodePools[].upgrade``."""
_KEYS = {
    "maxSurge": "max_surge", "maxUnavailable": "max_unavailable", "strategy": "strategy",
    "drainTimeoutMinutes": "drain_timeout_minutes", "soakMinutes": "soak_minutes", "automatic": "automatic",
}
"""Stack keys -> `PoolUpgrade` fields (the component argument uses the field names)."""

_COUNT = re.compile(r"^(0|[1-9]\d*)(%?)$")
MAX_DRAIN_TIMEOUT_MINUTES = 1440
"""AKS's bound for ``drainTimeoutInMinutes`` (1-1440, AgentPoolUpgradeSettings); the strictest cloud's."""
MAX_SOAK_MINUTES = 30
"""AKS's bound for ``nodeSoakDurationInMinutes`` (0-30, AgentPoolUpgradeSettings)."""


class PoolUpgradeArgs(TypedDict, total=False):
    """``upgrade`` argument of every cloud's GPU pool component (stack key ``nodePools[].upgrade``)."""

    max_surge: str
    """Extra nodes created during an upgrade: a count (``"1"``) or a percentage of the pool (``"33%"``). Default
    ``"0"`` on training pools, ``"1"`` otherwise."""
    max_unavailable: str
    """Nodes that may be down at once during an upgrade: a count or a percentage. Default ``"1"`` on training pools,
    ``"0"`` otherwise (at least one of the two must be above 0)."""
    strategy: str
    """``surge`` (default) or ``blue-green`` (GKE only)."""
    drain_timeout_minutes: int
    """How long an upgrade waits for a node's pods to leave (PodDisruptionBudgets honoured) before it gives up.
    Default: the cloud's own (AKS 30 minutes)."""
    soak_minutes: int
    """How long an upgraded node (AKS) or the new node set (GKE blue-green) is watched before the next step.
    Default: none."""
    automatic: str
    """``window`` or ``never``: whether the cloud may upgrade the pool's nodes on its own, in the maintenance window.
    Default ``never`` on training pools where the cloud can hold them (GKE, Karpenter), ``window`` otherwise."""


@dataclass(frozen=True)
class PoolUpgrade:
    """A pool's upgrade settings; empty fields take the role's default (`resolved`)."""

    max_surge: str = ""
    """Extra nodes an upgrade may create: a count (``1``) or a percentage of the pool (``'33%'``). Default 0 on
    training pools (GPU capacity for a surge node is rarely there), 1 on the others."""
    max_unavailable: str = ""
    """Nodes an upgrade may take down at once: a count or a percentage. Default 1 on training pools, 0 on the
    others (a rolling surge)."""
    strategy: str = SURGE
    """``surge`` or ``blue-green`` (GKE only: the old nodes stay until the new set has soaked)."""
    drain_timeout_minutes: Optional[int] = None
    """How long an upgrade waits for a node's pods to leave, PodDisruptionBudgets honoured, 1-1440. Default: the
    cloud's own (AKS 30 minutes); refused where the cloud has no such setting."""
    soak_minutes: Optional[int] = None
    """How long an upgraded node (AKS, 0-30) or the new node set (GKE blue-green) is watched before the next.
    Default: none; refused where the cloud has no such setting."""
    automatic: str = ""
    """``window`` (the cloud may upgrade the pool's nodes on its own, only in ``maintenance.window``) or ``never``
    (only a ``pulumi up`` that changes the pool does). Default ``never`` on training pools where the cloud can hold
    them, ``window`` otherwise (docs/upgrades.md)."""
    given: frozenset = frozenset()
    """The fields the user wrote (clouds refuse those they cannot honour; defaults never fail)."""

    def resolved(self, role: str, automatic_default: str = "") -> "PoolUpgrade":
        """The settings with every default of a pool of ``role`` filled in. ``automatic_default`` is the cloud's
        default for pools that say nothing (`default_automatic`)."""
        training = role == TRAINING
        surge = self.max_surge or ("0" if training else "1")
        unavailable = self.max_unavailable or ("1" if training else "0")
        if "max_unavailable" not in self.given and count_of(surge) == 0 and count_of(unavailable) == 0:
            unavailable = "1"  # maxSurge: 0 alone still has to make progress
        if "max_surge" not in self.given and count_of(surge) == 0 and count_of(unavailable) == 0:
            surge = "1"
        return replace(self, max_surge=surge, max_unavailable=unavailable,
                       automatic=self.automatic or automatic_default or default_automatic(role))

    def as_args(self) -> PoolUpgradeArgs:
        """The component argument that says the same (only what the user wrote)."""
        return {field: getattr(self, field) for field in _KEYS.values() if field in self.given}  # type: ignore

    def is_percentage(self, field: str) -> bool:
        """``max_surge`` / ``max_unavailable`` is a percentage of the pool."""
        return str(getattr(self, field)).endswith("%")


def default_automatic(role: str) -> str:
    """``never`` for training pools (an automatic upgrade drains a node under a running job), ``window`` otherwise."""
    return NEVER if role == TRAINING else WINDOW


def count_of(value: str) -> int:
    """The number in ``"3"`` or ``"25%"``."""
    return int(str(value).rstrip("%") or 0)


def parse_pool_upgrade(raw: Any, path: str) -> PoolUpgrade:
    """``nodePools[].upgrade`` (camelCase keys) as a `PoolUpgrade`; a `ConfigError` naming ``path.<key>`` when a
    value is wrong."""
    if raw is None:
        return PoolUpgrade()
    if not isinstance(raw, Mapping):
        raise ConfigError(path, f"must be a mapping of {', '.join(_KEYS)}, got {type(raw).__name__}")
    check_keys(raw, KEYS, path)
    values: dict[str, Any] = {}
    for key, field in _KEYS.items():
        if key not in raw or raw[key] is None:
            continue
        value = raw[key]
        where = f"{path}.{key}"
        if field in ("max_surge", "max_unavailable"):
            values[field] = _count(value, where)
        elif field in ("strategy", "automatic"):
            choices = STRATEGIES if field == "strategy" else AUTOMATIC
            if value not in choices:
                raise ConfigError(where, one_of(value, choices))
            values[field] = value
        else:
            maximum = MAX_DRAIN_TIMEOUT_MINUTES if field == "drain_timeout_minutes" else MAX_SOAK_MINUTES
            minimum = 1 if field == "drain_timeout_minutes" else 0
            values[field] = _minutes(value, where, minimum, maximum)
    upgrade = PoolUpgrade(**values, given=frozenset(values))
    surge, unavailable = values.get("max_surge"), values.get("max_unavailable")
    if surge is not None and unavailable is not None and count_of(surge) == 0 and count_of(unavailable) == 0:
        raise ConfigError(f"{path}.maxUnavailable", "maxSurge and maxUnavailable are both 0: an upgrade could never "
                                                     "replace a node; raise one of them")
    return upgrade


def upgrade_from_args(value: Any, path: str) -> PoolUpgrade:
    """A component's ``upgrade`` argument (`PoolUpgradeArgs`) as a `PoolUpgrade`, with the stack key's rules;
    errors name the argument (``upgrade.max_surge``)."""
    if value is None:
        return PoolUpgrade()
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be a mapping of {', '.join(_KEYS.values())}, got {type(value).__name__}")
    stack_keys = {field: key for key, field in _KEYS.items()}
    for key in value:
        if key not in stack_keys:
            raise ConfigError(f"{path}.{key}", f"unknown key{did_you_mean(str(key), list(stack_keys))}")
    try:
        return parse_pool_upgrade({stack_keys[k]: v for k, v in value.items()}, path)
    except ConfigError as err:
        key = err.path[len(path) + 1:]
        raise ConfigError(f"{path}.{_KEYS.get(key, key)}", err.problem) from None


def _count(value: Any, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(path, f"must be a node count (2) or a percentage ('25%'), got {value!r}")
    text = str(value).strip()
    match = _COUNT.match(text)
    if not match:
        raise ConfigError(path, f"must be a node count (2) or a percentage ('25%'), got {value!r}")
    if match.group(2) and int(match.group(1)) > 100:
        raise ConfigError(path, f"a percentage must be at most 100%, got {text}")
    return text


def _minutes(value: Any, path: str, minimum: int, maximum: int) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be a number of minutes, got {value!r}")
    if not minimum <= value <= maximum:
        raise ConfigError(path, f"must be between {minimum} and {maximum} minutes, got {value}")
    return value


def refuse_unsupported(upgrade: PoolUpgrade, path: str, supported: Mapping[str, str], cloud_name: str,
                       strategies: tuple[str, ...] = (SURGE,)) -> None:
    """Refuse a field the user wrote that ``cloud_name``'s API cannot honour. ``supported`` maps each honoured field
    to the provider input it reaches (for the docs and the error of the others)."""
    stack_keys = {field: key for key, field in _KEYS.items()}
    for field in sorted(upgrade.given):
        if field not in supported:
            reaches = ", ".join(stack_keys[f] for f in supported)
            raise ConfigError(f"{path}.{stack_keys[field]}",
                              f"{cloud_name} has no setting for it (its pools take {reaches})")
    if upgrade.strategy not in strategies:
        raise ConfigError(f"{path}.strategy", f"{cloud_name} upgrades pools by {' or '.join(strategies)} only, "
                                              f"not {upgrade.strategy}")


def argument_path(path: str) -> str:
    """A refusal's path in stack keys (``upgrade.maxSurge``) as the component argument's (``upgrade.max_surge``), so
    a cloud's checks written for the stack serve its components too."""
    head, _, key = path.rpartition(".")
    return f"{head}.{_KEYS[key]}" if key in _KEYS else path


def stack_key(field: str) -> str:
    """The stack key of a `PoolUpgrade` field (``max_surge`` -> ``maxSurge``)."""
    return {f: k for k, f in _KEYS.items()}[field]
