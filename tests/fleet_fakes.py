"""Fakes of what `gpu_platform.fleet.rollout` drives, for tests/test_fleet_rollout.py and tests/test_fleet_up.py: a
clock that only its own sleep moves, and a driver that records each step and fails where it is told to."""

from typing import Optional

from gpu_platform.fleet.fleet_file import FleetStack
from gpu_platform.fleet.rollout import PlannedStep, StepFailed

T0 = 1_800_000_000.0
"""Where a `Clock` starts, and what a `FakeDriver`'s times count from."""


class Clock:
    """Wall-clock seconds that only a sleep moves."""

    def __init__(self, now: float = T0):
        self.now = now
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class FakeDriver:
    """Records (seconds since `T0` on ``clock``, or 0 without one; step; stack) in ``events``; fails with
    `StepFailed` where ``fail`` says ((stack, step) -> reason); previews what ``previews`` says (stack -> planned
    steps); each ``up`` answers the next update number, 41, 42 and so on."""

    def __init__(self, clock: Optional[Clock] = None, fail=None, previews=None):
        self.clock, self.fail, self.previews = clock, dict(fail or {}), dict(previews or {})
        self.events: list[tuple[float, str, str]] = []
        self.updates = 0

    @property
    def calls(self) -> list[tuple[str, str]]:
        """(step, stack) of every step, in order."""
        return [(step, stack) for _, step, stack in self.events]

    def _step(self, step: str, m: FleetStack) -> None:
        self.events.append((self.clock() - T0 if self.clock else 0, step, m.stack))
        if (m.stack, step) in self.fail:
            raise StepFailed(step, self.fail[(m.stack, step)])

    def select(self, m: FleetStack) -> None:
        self._step("select", m)

    def refresh(self, m: FleetStack) -> None:
        self._step("refresh", m)

    def preview(self, m: FleetStack) -> list[PlannedStep]:
        self._step("preview", m)
        return self.previews.get(m.stack, [])

    def up(self, m: FleetStack) -> int:
        self._step("up", m)
        self.updates += 1
        return 40 + self.updates
