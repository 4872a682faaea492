"""The optimizer's policy: what counts as idle, what may be touched, and how often.

Loaded from a YAML/JSON file (the ConfigMap the `GpuOptimizer` component mounts) and overridden by flags.
"""

import json
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Optional

import yaml

from .. import catalog, labels
from .signals import NVIDIA_METRICS, VENDORS_WITH_SIGNAL

ACTIONS = ("report", "annotate", "scale-down", "recommend")
_DURATION = re.compile(r"^(\d+)(s|m|h|d)$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class PolicyError(ValueError):
    """A policy value that cannot be used; the message names the field."""


def parse_duration(value: str, field_name: str) -> int:
    """``"90m"`` -> 5400 seconds."""
    match = _DURATION.match(str(value).strip())
    if not match:
        raise PolicyError(f"{field_name}: '{value}' is not a duration such as 30m, 6h or 1d")
    return int(match.group(1)) * _SECONDS[match.group(2)]


@dataclass(frozen=True)
class PoolOption:
    """A GPU pool a workload could move to (for `recommend`)."""

    name: str
    gpu_memory_gib: int
    shared: bool = False
    """Time-slicing / MPS pool (several pods per GPU)."""
    vendor: str = catalog.NVIDIA
    """Accelerator vendor: an idle pod is only pointed at a pool of its own vendor."""


@dataclass(frozen=True)
class Policy:
    """Optimizer policy."""

    utilization_threshold: float = 10.0
    """Average GPU utilisation (%) over the window under which an allocation is idle."""
    window: str = "1h"
    """PromQL range the averages are taken over."""
    min_observation: str = "30m"
    """A pod must have been observed at least this long before it is judged."""
    step: str = "1m"
    """Subquery resolution used to find when a pod was first observed."""
    metric: str = "DCGM_FI_DEV_GPU_UTIL"
    """``DCGM_FI_DEV_GPU_UTIL`` (percent) or ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (ratio, scaled to percent)."""
    pod_label: str = "pod"
    """Label carrying the workload pod on DCGM series (``exported_pod`` without honorLabels)."""
    namespace_label: str = "namespace"
    excluded_namespaces: tuple[str, ...] = ("kube-system", "gpu-operator", "monitoring")
    excluded_labels: tuple[str, ...] = ()
    """``key=value`` pod labels that exclude a pod."""
    opt_in_label: str = labels.OPT_IN_LABEL
    """Only pods (and their owners) labelled ``<opt_in_label>=true`` are ever changed."""
    cooldown: str = "6h"
    """Minimum time between two actions on the same owner."""
    action: str = "report"
    dry_run: bool = True
    """Default: print what would be done and change nothing."""
    min_replicas: int = 1
    """scale-down never goes below this (nor below an HPA's minReplicas)."""
    pools: tuple[PoolOption, ...] = field(default=())
    vendors: tuple[str, ...] = (catalog.NVIDIA,)
    """Vendors whose idleness signal is read (`signals.VENDORS_WITH_SIGNAL`): four queries each."""

    def __post_init__(self):
        if self.action not in ACTIONS:
            raise PolicyError(f"action: '{self.action}' is not one of {', '.join(ACTIONS)}")
        if not 0 <= self.utilization_threshold <= 100:
            raise PolicyError(f"utilizationThreshold: must be between 0 and 100, got {self.utilization_threshold}")
        if self.metric not in NVIDIA_METRICS:
            raise PolicyError(f"metric: '{self.metric}' is not DCGM_FI_DEV_GPU_UTIL or DCGM_FI_PROF_GR_ENGINE_ACTIVE")
        for name in ("window", "min_observation", "cooldown", "step"):
            parse_duration(getattr(self, name), _camel(name))
        if self.min_replicas < 0:
            raise PolicyError(f"minReplicas: must be >= 0, got {self.min_replicas}")
        if not self.vendors or any(v not in VENDORS_WITH_SIGNAL for v in self.vendors):
            raise PolicyError(f"vendors: {list(self.vendors)} must be one or more of "
                              f"{', '.join(VENDORS_WITH_SIGNAL)} (the vendors with a per-pod utilisation metric)")
        for pool in self.pools:
            if pool.vendor not in catalog.VENDORS:
                raise PolicyError(f"pools: '{pool.name}' has unknown vendor '{pool.vendor}'")
        for item in self.excluded_labels:
            if "=" not in item:
                raise PolicyError(f"excludedLabels: '{item}' is not key=value")

    @property
    def window_seconds(self) -> int:
        return parse_duration(self.window, "window")

    @property
    def min_observation_seconds(self) -> int:
        return parse_duration(self.min_observation, "minObservation")

    @property
    def cooldown_seconds(self) -> int:
        return parse_duration(self.cooldown, "cooldown")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


_FIELDS = {_camel(f.name): f.name for f in fields(Policy)}


def policy_from_mapping(raw: dict[str, Any], base: Optional[Policy] = None) -> Policy:
    """A `Policy` from camelCase keys (the ConfigMap form); unknown keys are an error."""
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _FIELDS:
            raise PolicyError(f"{key}: unknown policy key")
        name = _FIELDS[key]
        if name == "pools":
            value = tuple(PoolOption(p["name"], int(p["gpuMemoryGiB"]), bool(p.get("shared", False)),
                                     str(p.get("vendor", catalog.NVIDIA))) for p in value)
        elif name in ("excluded_namespaces", "excluded_labels", "vendors"):
            value = tuple(value)
        elif name == "utilization_threshold":
            value = float(value)
        elif name == "min_replicas":
            value = int(value)
        values[name] = value
    return replace(base or Policy(), **values)


def policy_to_mapping(policy: Policy) -> dict[str, Any]:
    """The camelCase form written to the ConfigMap. NVIDIA, the default vendor, is left implicit (``vendors`` and a
    pool's ``vendor``), so an NVIDIA-only policy reads as it did before other vendors had a signal."""
    out: dict[str, Any] = {}
    for camel, name in _FIELDS.items():
        value = getattr(policy, name)
        if name == "vendors" and value == Policy.vendors:
            continue
        if name == "pools":
            value = [{"name": p.name, "gpuMemoryGiB": p.gpu_memory_gib, "shared": p.shared,
                      **({"vendor": p.vendor} if p.vendor != catalog.NVIDIA else {})} for p in value]
        elif isinstance(value, tuple):
            value = list(value)
        out[camel] = value
    return out


def load_policy(path: Optional[Path]) -> Policy:
    """The policy file (YAML or JSON), or the defaults."""
    if path is None:
        return Policy()
    try:
        text = Path(path).read_text(encoding="utf-8")
        raw = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise PolicyError(f"cannot read policy {path}: {str(err).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise PolicyError(f"policy {path} must be a mapping")
    return policy_from_mapping(raw)
