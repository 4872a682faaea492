"""The rollout's decisions: wave order, gates, bake, stop at the first failed gate, resume where it stopped.

Everything here is pure or takes what it touches as arguments: the Pulumi side is a `Driver` (the real one is
`automation.AutomationDriver`, the tests pass a fake), the ``verify`` gate a function, time a clock and a sleep
(wall-clock seconds: a bake deadline outlives the process), the state file a ``save`` function.

Per stack, in wave order and within a wave in file order: refresh, preview (the ``preview`` gate judges its
steps), up (the stack is then on the release), ``gpu-platform verify`` (the ``verify`` gate). The first failure stops
the rollout and is recorded (`state.Stop`); nothing after it runs. A wave that passed bakes (`Wave.bake_s`) before
the next wave starts; the deadline is recorded, so a resumed run waits only what is left of it.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Optional, Protocol

from ..upgrades import replacements
from .fleet_file import Fleet, FleetError, FleetStack, VerifySettings, Wave
from .state import Bake, RolloutState, StackRecord, Stop

DISRUPTIVE_OPS = ("replace", "create-replacement", "delete-replaced", "delete")
"""Pulumi step operations (``OpType`` values) that remove a live resource."""

BAKE_TICK_S = 60.0
"""How often a bake reports the time left (it sleeps in slices of at most this)."""

VERIFY_EXITS = {1: "a check failed", 2: "bad usage, configuration or kubeconfig", 130: "interrupted"}
"""``gpu-platform verify``'s exit codes other than 0, as the stop reason says them."""


@dataclass(frozen=True)
class PlannedStep:
    """One step of a live preview (from the engine's ``ResourcePreEvent``)."""

    op: str
    """The ``OpType`` value: ``create``, ``update``, ``replace``, ``delete``..."""
    type: str
    urn: str


class StepFailed(Exception):
    """A rollout step failed: ``step`` (``select``, ``refresh``, ``preview``, ``up``, ``verify``) and a one-line
    ``reason``."""

    def __init__(self, step: str, reason: str):
        super().__init__(f"{step}: {reason}")
        self.step, self.reason = step, reason


class Driver(Protocol):
    """What a rollout needs of Pulumi, per stack of the fleet. Each method raises `StepFailed`."""

    def select(self, member: FleetStack) -> None:
        """Select the stack (it must exist)."""
        ...

    def refresh(self, member: FleetStack) -> None:
        """Refresh the stack's state from the cloud."""
        ...

    def preview(self, member: FleetStack) -> list[PlannedStep]:
        """Preview the update: its steps."""
        ...

    def up(self, member: FleetStack) -> Optional[int]:
        """Update the stack; the update's number when the engine reports one."""
        ...


Verify = Callable[[FleetStack, VerifySettings], int]
"""Runs ``gpu-platform verify`` for a stack with the wave's settings; returns its exit code."""


# --------------------------------------------------------------------------------------------- decisions


def layout(fleet: Fleet) -> tuple[tuple[str, ...], ...]:
    """The stacks of every wave, in order."""
    return tuple(tuple(m.stack for m in wave.stacks) for wave in fleet.waves)


def start(fleet: Fleet, previous: Optional[RolloutState], resume: bool) -> RolloutState:
    """The state a run starts from.

    A new rollout (no ``--resume``) keeps only which release each stack is on: every stack runs again, from the
    first wave. A resume keeps the passed stacks and the bake deadline and refuses (`FleetError`) when there is
    nothing recorded, the release changed or the waves changed: then the recorded order no longer holds.
    """
    source = str(fleet.source)
    if not resume:
        recorded = previous.stacks if previous else {}
        records = {name: replace(record, passed=False) for name, record in recorded.items()}
        return RolloutState(fleet.name, fleet.release, layout(fleet), records)
    if previous is None:
        raise FleetError("--resume", "no rollout recorded in the state file: run fleet up without --resume", source)
    if previous.fleet != fleet.name:
        raise FleetError("name", f"the state records fleet {previous.fleet}, not {fleet.name}", source)
    if previous.release != fleet.release:
        raise FleetError("release", f"the recorded rollout brings release {previous.release}, the file now "
                                    f"{fleet.release}: run fleet up without --resume to start that rollout", source)
    if previous.waves != layout(fleet):
        raise FleetError("waves", "the waves changed since the rollout started (recorded: "
                                  f"{_layout_text(previous.waves)}): run fleet up without --resume", source)
    return replace(previous, stopped=None)


def _layout_text(waves: Iterable[Iterable[str]]) -> str:
    return " | ".join(", ".join(wave) for wave in waves)


def is_done(state: RolloutState, stack: str) -> bool:
    """Whether a stack is on the rollout's release with its gates passed."""
    record = state.record(stack)
    return record.release == state.release and record.passed


def pending(fleet: Fleet, state: RolloutState) -> list[tuple[Wave, tuple[FleetStack, ...]]]:
    """The waves still to run, each with its stacks not done, in rollout order."""
    waves = [(wave, tuple(m for m in wave.stacks if not is_done(state, m.stack))) for wave in fleet.waves]
    return [(wave, members) for wave, members in waves if members]


def preview_problem(steps: Sequence[PlannedStep], allow_disruption: bool) -> Optional[str]:
    """Why the ``preview`` gate fails, or None: a step that replaces or deletes a control plane, a node pool,
    state or a Kueue flavor (`replacements.kind_of`, the rules ``gpu-platform diff`` uses) in a wave that does not
    allow disruption."""
    if allow_disruption:
        return None
    disruptive = [s for s in steps
                  if s.op in DISRUPTIVE_OPS and replacements.kind_of(s.type) != replacements.OTHER_KIND]
    if not disruptive:
        return None
    first = disruptive[0]
    more = f" and {len(disruptive) - 1} more" if len(disruptive) > 1 else ""
    return (f"the preview would {first.op} {replacements.kind_of(first.type)} {first.urn.rsplit('::', 1)[-1]} "
            f"({first.type}){more}; the wave does not allow disruption (allowDisruption)")


def verify_problem(exit_code: int) -> Optional[str]:
    """Why the ``verify`` gate fails, or None (``gpu-platform verify`` exited 0)."""
    if exit_code == 0:
        return None
    return f"gpu-platform verify exited {exit_code}: {VERIFY_EXITS.get(exit_code, 'unexpected exit code')}"


def bake_left(state: RolloutState, now: float) -> float:
    """Seconds the recorded bake still has to run (0 when none)."""
    return max(0.0, state.bake.until - now) if state.bake is not None else 0.0


def versions(fleet: Fleet, state: RolloutState) -> list[tuple[str, str, str, str]]:
    """(wave, stack, release, status) per stack in rollout order: which stacks are on which version."""
    rows = []
    for wave in fleet.waves:
        for member in wave.stacks:
            record = state.record(member.stack)
            if state.stopped is not None and state.stopped.stack == member.stack:
                status = f"stopped: {state.stopped.step} failed"
            elif is_done(state, member.stack):
                status = "gates passed"
            elif record.release == state.release:
                status = "updated, gates not passed"
            else:
                status = "not updated"
            rows.append((wave.name, member.stack, record.release or "-", status))
    return rows


def render_versions(fleet: Fleet, state: RolloutState) -> str:
    """The table of `versions`, then one line per release: which stacks are on it."""
    rows = [("WAVE", "STACK", "RELEASE", "STATUS"), *versions(fleet, state)]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3] for row in rows]
    by_release: dict[str, list[str]] = {}
    for _, stack, release, _ in rows[1:]:
        by_release.setdefault(release, []).append(stack)
    for release, stacks in by_release.items():
        label = "not updated by this fleet yet" if release == "-" else f"on {release}"
        lines.append(f"{label}: {', '.join(stacks)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- the run


def preflight(fleet: Fleet, state: RolloutState, driver: Driver) -> list[str]:
    """Select every stack still to run before anything changes: one line per stack that cannot be selected."""
    problems = []
    for _, members in pending(fleet, state):
        for member in members:
            try:
                driver.select(member)
            except StepFailed as failure:
                problems.append(f"{member.stack}: {failure.reason}")
    return problems


def _record(state: RolloutState, stack: str, record: StackRecord) -> RolloutState:
    return replace(state, stacks={**state.stacks, stack: record})


def _run_stack(wave: Wave, member: FleetStack, state: RolloutState, driver: Driver, verify: Verify,
               save: Callable[[RolloutState], None], log: Callable[[str], None]) -> RolloutState:
    """One stack through refresh, preview (gate), up, verify (gate); the state after it, stopped on a failure."""
    where = f"{wave.name}/{member.stack}"
    try:
        log(f"{where}: refresh")
        driver.refresh(member)
        log(f"{where}: preview")
        steps = driver.preview(member)
        if "preview" in wave.gates:
            problem = preview_problem(steps, wave.allow_disruption)
            if problem:
                raise StepFailed("preview", problem)
        log(f"{where}: up")
        update = driver.up(member)
        state = _record(state, member.stack, StackRecord(state.release, False, update))
        save(state)
        if "verify" in wave.gates:
            log(f"{where}: verify")
            problem = verify_problem(verify(member, wave.verify))
            if problem:
                raise StepFailed("verify", problem)
        state = _record(state, member.stack, StackRecord(state.release, True, update))
    except StepFailed as failure:
        log(f"{where}: {failure.step} failed: {failure.reason}")
        state = replace(state, stopped=Stop(wave.name, member.stack, failure.step, failure.reason))
    save(state)
    return state


def _wait_for_bake(state: RolloutState, clock: Callable[[], float], sleep: Callable[[float], None],
                   save: Callable[[RolloutState], None], log: Callable[[str], None]) -> RolloutState:
    """Wait until the recorded bake is over (in slices, reporting what is left), then clear it."""
    if state.bake is None:
        return state
    left = bake_left(state, clock())
    while left > 0:
        log(f"wave {state.bake.wave} bakes: {left:.0f} s left")
        sleep(min(left, BAKE_TICK_S))
        left = bake_left(state, clock())
    state = replace(state, bake=None)
    save(state)
    return state


def run(fleet: Fleet, state: RolloutState, driver: Driver, verify: Verify, clock: Callable[[], float],
        sleep: Callable[[float], None], save: Callable[[RolloutState], None],
        log: Callable[[str], None] = lambda line: None) -> RolloutState:
    """Run the rollout from ``state`` (see `start`) and return the final state: ``complete``, or ``stopped`` at
    the first failed step or gate. ``save`` is called after every change, so an interrupted run can resume."""
    state = replace(state, stopped=None, complete=False)
    save(state)
    last = len(fleet.waves) - 1
    for wave, members in pending(fleet, state):
        state = _wait_for_bake(state, clock, sleep, save, log)
        for member in members:
            state = _run_stack(wave, member, state, driver, verify, save, log)
            if state.stopped is not None:
                return state
        if wave.bake_s > 0 and fleet.waves.index(wave) < last:
            state = replace(state, bake=Bake(wave.name, clock() + wave.bake_s))
            save(state)
    state = replace(state, bake=None, complete=True)
    save(state)
    return state
