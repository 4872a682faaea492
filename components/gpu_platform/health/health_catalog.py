"""The passive health catalogue: which kernel messages make which node condition, as data, and the
node-problem-detector configuration generated from it.

NVIDIA's driver logs every GPU fault as an XID on the kernel ring buffer (``NVRM: Xid (PCI:0000:65:00): 79, pid=...,
GPU has fallen off the bus.``). NVIDIA's XID catalogue (`XID_SOURCE`) gives each code an immediate action
(restart the application, reset the GPU, reboot the node) and an investigatory one. The platform sorts the codes it
acts on into three classes:

- ``fatal``: the GPU (or its node) cannot be trusted until it is reset, rebooted or replaced: a *permanent* node
  condition (True until node-problem-detector restarts, i.e. usually until the node reboots), which remediation
  quarantines on;
- ``recoverable``: the hardware contained the fault (a corrected or contained ECC error, a row marked for remapping at
  the next reset): a *temporary* event, counted and alerted on, no quarantine;
- ``application``: usually the program's own fault (illegal address, graphics exception, timeout): a temporary event;
  NVIDIA's device plugin keeps the GPU healthy on these too (`kube.alerts.APPLICATION_XIDS`).

RDMA: the mlx5 driver (InfiniBand and RoCE NICs of Azure ND, OCI RDMA shapes, the Network Operator's DOCA driver)
logs ``<netdev>: Link down`` (``mlx5e_update_carrier``) and ``Port module event: module N, Cable unplugged`` /
``Port module event[error]: ...`` (``mlx5_port_module_event``). A link can come back by itself, and a kmsg rule can
only set a condition, never clear it, so these are temporary events (counted by node-problem-detector's
``problem_counter{reason=...}`` metric and alerted on), not conditions remediation acts on. EFA logs no link-state
message of its own; EFA link state is not watched (docs/health.md).

Pure data and pure functions: `npd_config` is the system-log-monitor file (node-problem-detector
``config/kernel-monitor.json`` format at `versions.NODE_PROBLEM_DETECTOR_IMAGE`'s tag), tested against the format's
fields and against sample kernel lines.
"""

import json
from dataclasses import dataclass
from typing import Any, Optional

XID_SOURCE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
"""NVIDIA's XID catalogue (Ampere and newer), with each code's resolution buckets."""
FATAL, RECOVERABLE, APPLICATION = "fatal", "recoverable", "application"
CLASSES = (FATAL, RECOVERABLE, APPLICATION)

# Node conditions (True is a problem, node-problem-detector's convention).
GPU_FELL_OFF_BUS = "GpuFellOffBus"
GPU_ROW_REMAP_FAILURE = "GpuRowRemapFailure"
GPU_NVLINK_ERROR = "GpuNvlinkError"
GPU_DOUBLE_BIT_ECC = "GpuDoubleBitEcc"
GPU_XID_FATAL = "GpuXidFatal"
"""Every other fatal XID."""

NEURON_HEALTH = "NeuronHealth"
"""The condition the Neuron node problem detector (the Neuron Helm chart's ``npd``, `kube.neuron_values`) sets on
Neuron nodes: remediation acts on it as on the fatal GPU conditions."""
GKE_NODE_CONDITIONS = ("KernelDeadlock", "ReadonlyFilesystem")
"""The permanent conditions of node-problem-detector's stock kernel monitor (config/kernel-monitor.json), which GKE runs
on its nodes: on TPU pools remediation acts on them (the platform adds no detector of its own there; GKE's node
auto-repair recreates broken TPU nodes, and the quarantine only keeps new slices off a node until then)."""
WATCHED_VENDORS = ("nvidia", "amd", "aws-neuron", "google-tpu")
"""Vendors whose pools the health layer watches (each with its own source of conditions: docs/health.md)."""
NPD_VENDORS = ("nvidia", "amd")
"""Vendors whose pools run the platform's node-problem-detector (XID rules for NVIDIA, RDMA rules for both). Neuron
pools have Neuron's own detector; GKE's TPU nodes Google's (docs/health.md)."""

MONITOR_SOURCE = "gpu-health-monitor"
"""node-problem-detector's ``source`` for the conditions and events of `npd_config` (the Events' source)."""
KMSG_PATH = "/dev/kmsg"
LOOKBACK = "10m"
"""How far back node-problem-detector reads the ring buffer when it starts: a fault logged just before a restart
(of the DaemonSet pod, not of the node: the ring buffer does not survive a reboot) still sets its condition."""
BUFFER_SIZE = 10
"""Lines node-problem-detector keeps to match multi-line patterns (its default; every pattern here is one line)."""

XID_PREFIX = r"NVRM: Xid \(PCI:[0-9a-fA-F:.]+\): "
"""What every XID line starts with: the driver's tag and the GPU's PCI address."""


@dataclass(frozen=True)
class Xid:
    """One NVIDIA XID the platform classifies."""

    code: int
    name: str
    """NVIDIA's short description."""
    klass: str
    """``fatal``, ``recoverable`` or ``application``."""
    action: str
    """What to do about it (NVIDIA's catalogue, as the platform applies it)."""
    condition: Optional[str] = None
    """The node condition a fatal XID sets (None: a temporary event)."""


XIDS: tuple[Xid, ...] = (
    Xid(13, "Graphics engine exception", APPLICATION, "check the application (out-of-range access, bad instruction)"),
    Xid(31, "GPU memory page fault", APPLICATION, "check the application (illegal memory access)"),
    Xid(43, "GPU stopped processing", APPLICATION, "restart the application"),
    Xid(45, "Preemptive cleanup, due to previous errors", APPLICATION,
        "none by itself: it follows another XID or a killed process; read the XID before it"),
    Xid(48, "Double-bit ECC error", FATAL,
        "quarantine; reset the GPU (retires the page or remaps the row); replace it if the errors recur",
        GPU_DOUBLE_BIT_ECC),
    Xid(62, "Internal micro-controller halt", FATAL, "quarantine; reset the GPU", GPU_XID_FATAL),
    Xid(63, "ECC page retirement or row remapping recorded", RECOVERABLE,
        "reset the GPU when it is idle, so the remapped row takes effect"),
    Xid(64, "ECC page retirement or row remapping failure", FATAL,
        "quarantine; reset the GPU; replace it if it recurs (no spare rows left)", GPU_ROW_REMAP_FAILURE),
    Xid(68, "Video processor exception", APPLICATION, "restart the application"),
    Xid(74, "NVLink error", FATAL, "quarantine; reset the GPUs of the NVLink domain; check the links if it recurs",
        GPU_NVLINK_ERROR),
    Xid(79, "GPU has fallen off the bus", FATAL,
        "quarantine; reboot the node (the GPU is unreachable); replace the GPU if it recurs", GPU_FELL_OFF_BUS),
    Xid(92, "High single-bit ECC error rate", RECOVERABLE, "watch the ECC counters; replace the GPU if it grows"),
    Xid(94, "Contained ECC error", RECOVERABLE,
        "restart the affected application; reset the GPU when it is idle"),
    Xid(95, "Uncontained ECC error", FATAL, "quarantine; reset the GPU", GPU_XID_FATAL),
    Xid(109, "Context switch timeout", APPLICATION, "restart the application"),
    Xid(119, "GSP RPC timeout", FATAL, "quarantine; reset the GPU or reboot the node", GPU_XID_FATAL),
    Xid(120, "GSP error", FATAL, "quarantine; reset the GPU or reboot the node", GPU_XID_FATAL),
)
"""The XIDs the platform classifies (NVIDIA's catalogue, `XID_SOURCE`, has many more: unused codes, display and
virtualisation ones). An XID not listed here is not matched: the DCGM exporter's ``DCGM_FI_DEV_XID_ERRORS`` still
alerts on it (`kube.alerts`)."""


@dataclass(frozen=True)
class LogRule:
    """One node-problem-detector rule: a kernel-log pattern and what it reports."""

    reason: str
    pattern: str
    """Go regular expression node-problem-detector matches against the end of the buffer (it appends ``\\z``)."""
    condition: Optional[str] = None
    """The condition a permanent rule sets True (None: a temporary event)."""
    message: str = ""
    """Why this matters, for the condition's default message."""

    @property
    def permanent(self) -> bool:
        return self.condition is not None


RDMA_LINK_DOWN = "RdmaLinkDown"
RDMA_CABLE_EVENT = "RdmaPortModuleEvent"
RDMA_RULES: tuple[LogRule, ...] = (
    LogRule(RDMA_LINK_DOWN, r"mlx5_core [0-9a-fA-F:.]+ \S+: Link down"),
    LogRule(RDMA_CABLE_EVENT, r"mlx5_core [0-9a-fA-F:.]+: .*Port module event(\[error\])?: module \d+, "
                              r"(Cable unplugged|Cable error).*"),
)
"""mlx5 NIC link state (temporary events: a link comes back by itself)."""


def xid(code: int) -> Xid:
    """The catalogue entry of ``code``."""
    for entry in XIDS:
        if entry.code == code:
            return entry
    raise KeyError(f"XID {code} is not in the catalogue")


def codes(klass: str) -> tuple[int, ...]:
    """The codes of one class, ascending."""
    if klass not in CLASSES:
        raise ValueError(f"XID class must be one of {', '.join(CLASSES)}, got '{klass}'")
    return tuple(sorted(x.code for x in XIDS if x.klass == klass))


def fatal_conditions() -> tuple[str, ...]:
    """Every condition a fatal XID sets, in catalogue order without repeats: what remediation quarantines on."""
    seen: list[str] = []
    for entry in XIDS:
        if entry.condition and entry.condition not in seen:
            seen.append(entry.condition)
    return tuple(seen)


def _codes_pattern(values: tuple[int, ...]) -> str:
    # The code is followed by a comma: 79 must not match 7 or 790.
    return XID_PREFIX + f"({'|'.join(str(c) for c in values)}),.*"


def xid_rules() -> tuple[LogRule, ...]:
    """One permanent rule per fatal condition (its codes), then one temporary rule per other class."""
    rules = []
    for condition in fatal_conditions():
        matching = tuple(sorted(x.code for x in XIDS if x.condition == condition))
        names = "; ".join(f"XID {x.code} {x.name}" for x in XIDS if x.condition == condition)
        rules.append(LogRule(condition, _codes_pattern(matching), condition, names))
    rules.append(LogRule("GpuXidRecoverable", _codes_pattern(codes(RECOVERABLE))))
    rules.append(LogRule("GpuXidApplication", _codes_pattern(codes(APPLICATION))))
    return tuple(rules)


def log_rules(rdma: bool = True) -> tuple[LogRule, ...]:
    """Every rule of the monitor: the XIDs and, with ``rdma``, the NIC link state."""
    return (*xid_rules(), *(RDMA_RULES if rdma else ()))


def npd_config(rdma: bool = True) -> dict[str, Any]:
    """node-problem-detector's system-log-monitor configuration (``--config.system-log-monitor``): the kmsg log
    watcher, the default state of each condition (False: no problem) and the rules."""
    rules = log_rules(rdma)
    conditions = [{"type": r.condition, "reason": f"No{r.condition}", "message": f"no {r.message}"}
                  for r in rules if r.permanent]
    return {
        "plugin": "kmsg",
        "logPath": KMSG_PATH,
        "lookback": LOOKBACK,
        "bufferSize": BUFFER_SIZE,
        "source": MONITOR_SOURCE,
        "metricsReporting": True,
        "conditions": conditions,
        "rules": [{"type": "permanent", "condition": r.condition, "reason": r.reason, "pattern": r.pattern}
                  if r.permanent else {"type": "temporary", "reason": r.reason, "pattern": r.pattern}
                  for r in rules],
    }


def npd_config_json(rdma: bool = True) -> str:
    """`npd_config` as the file node-problem-detector reads."""
    return json.dumps(npd_config(rdma), indent=2, sort_keys=True) + "\n"


def catalogue_table() -> str:
    """The XID catalogue as a Markdown table (docs/health.md embeds it; a test keeps them equal)."""
    rows = ["| XID | NVIDIA's description | class | node condition | action |", "|---|---|---|---|---|"]
    for x in sorted(XIDS, key=lambda e: e.code):
        rows.append(f"| {x.code} | {x.name} | {x.klass} | {x.condition or '(event only)'} | {x.action} |")
    return "\n".join(rows)
