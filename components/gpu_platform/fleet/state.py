"""The rollout state ``gpu-platform fleet up`` records after every step (``--state FILE``).

It says which stacks are on which release (and whether they passed their gates there), where a rollout stopped and
why, and until when a wave bakes, so ``fleet up --resume`` continues where the last run stopped or was interrupted.
The document is JSON (`to_json`, `from_json`); `save` replaces the file atomically, so a run killed mid-write
leaves the previous state.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .fleet_file import FleetError

FORMAT = 1
"""Version of the state document; it changes only when a key changes meaning or goes away."""


@dataclass(frozen=True)
class StackRecord:
    """Where one stack is."""

    release: Optional[str] = None
    """The release its last successful ``up`` applied (None: no rollout of this fleet updated it yet)."""
    passed: bool = False
    """Whether it passed its wave's gates at that release."""
    update: Optional[int] = None
    """The Pulumi update number of that ``up`` (``UpResult.summary.version``)."""


@dataclass(frozen=True)
class Stop:
    """Where and why a rollout stopped."""

    wave: str
    stack: str
    step: str
    """``select``, ``refresh``, ``preview``, ``up`` or ``verify``."""
    reason: str


@dataclass(frozen=True)
class Bake:
    """A wave baking: the next wave starts at ``until`` (seconds since the epoch)."""

    wave: str
    until: float


@dataclass(frozen=True)
class RolloutState:
    """The whole state of a fleet's rollout."""

    fleet: str
    release: str
    """The release the current (or last) rollout brings every stack to."""
    waves: tuple[tuple[str, ...], ...]
    """The stacks of every wave when the rollout started: a resume refuses a fleet file whose waves changed."""
    stacks: dict[str, StackRecord] = field(default_factory=dict)
    stopped: Optional[Stop] = None
    bake: Optional[Bake] = None
    complete: bool = False
    """Every stack is on the release with its gates passed."""

    def record(self, stack: str) -> StackRecord:
        """A stack's record (an empty one for a stack never updated)."""
        return self.stacks.get(stack, StackRecord())


def to_json(state: RolloutState) -> dict:
    """The state document."""
    return {
        "format": FORMAT,
        "fleet": state.fleet,
        "release": state.release,
        "waves": [list(w) for w in state.waves],
        "stacks": {name: {"release": r.release, "passed": r.passed, "update": r.update}
                   for name, r in sorted(state.stacks.items())},
        "stopped": None if state.stopped is None else {"wave": state.stopped.wave, "stack": state.stopped.stack,
                                                       "step": state.stopped.step, "reason": state.stopped.reason},
        "bake": None if state.bake is None else {"wave": state.bake.wave, "until": state.bake.until},
        "complete": state.complete,
    }


def from_json(document: Any, source: str) -> RolloutState:
    """The state a document records; `FleetError` naming ``source`` when it is not one."""
    try:
        if document.get("format") != FORMAT:
            raise FleetError("format", f"not a fleet state of format {FORMAT}", source)
        stopped, bake = document.get("stopped"), document.get("bake")
        return RolloutState(
            fleet=str(document["fleet"]),
            release=str(document["release"]),
            waves=tuple(tuple(str(s) for s in wave) for wave in document["waves"]),
            stacks={str(name): StackRecord(r.get("release"), bool(r.get("passed")), r.get("update"))
                    for name, r in document["stacks"].items()},
            stopped=None if stopped is None else Stop(stopped["wave"], stopped["stack"], stopped["step"],
                                                      stopped["reason"]),
            bake=None if bake is None else Bake(bake["wave"], float(bake["until"])),
            complete=bool(document.get("complete")),
        )
    except FleetError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise FleetError("", f"not a fleet state file ({type(err).__name__}: {err})", source) from None


def load(path: Path) -> Optional[RolloutState]:
    """The state recorded at ``path``; None when there is no such file."""
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise FleetError("", f"cannot read the state: {err}", str(path)) from None
    return from_json(document, str(path))


def save(state: RolloutState, path: Path) -> None:
    """Write the state atomically (a temporary file renamed over the old one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(to_json(state), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)
