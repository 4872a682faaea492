"""The thin adapter between a rollout (`rollout.Driver`) and Pulumi's Automation API (``pulumi.automation``).

Per stack: ``auto.select_stack(stack_name=..., work_dir=<project>)`` (a local program: the project's own
``Pulumi.yaml`` and ``Pulumi.<stack>.yaml``), then ``Stack.refresh()``, ``Stack.preview()`` (its
``ResourcePreEvent`` steps, through ``on_event``, feed the ``preview`` gate) and ``Stack.up()``
(``UpResult.summary.result`` must be ``succeeded``; ``summary.version`` is the update's number). Engine output goes
to ``on_output`` line by line. An Automation API error (``auto.errors.CommandError`` and its kinds) or a missing
Pulumi CLI (the API runs the ``pulumi`` binary) becomes `rollout.StepFailed` with one line. No decision lives here.

The Pulumi CLI is not installed on the machines this package is built on: this adapter is tested against a fake
``select_stack`` returning fake stacks that give the API's own result types, never against a real run.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from .fleet_file import FleetStack
from .rollout import PlannedStep, StepFailed

SUCCEEDED = "succeeded"
"""``UpdateSummary.result`` of an update that succeeded."""


def _value(op: Any) -> str:
    """An ``OpType`` (a str Enum) or its JSON string, as the plain value (``replace``)."""
    return str(getattr(op, "value", op))


def _first_line(err: BaseException) -> str:
    """One line for a failure. The API's ``CommandError`` carries the command's whole output (``CommandResult``:
    code, stdout, stderr): the cause is stderr's first line, else the first ``error:`` line of stdout (where
    ``pulumi up`` prints its diagnostics), else the exit code."""
    text = str(err)
    if "stderr:" not in text or "stdout:" not in text:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return f"{type(err).__name__}: {lines[0] if lines else text}"
    head, stderr = text.split("stderr:", 1)
    stdout = head.split("stdout:", 1)[1]
    code = head.split("stdout:", 1)[0].strip()
    found = [line.strip() for line in stderr.splitlines() if line.strip()] or \
        [line.strip() for line in stdout.splitlines() if line.strip().startswith("error:")] or [code]
    return f"{type(err).__name__}: {found[0]}"


class AutomationDriver:
    """`rollout.Driver` over ``pulumi.automation``: one ``Stack`` per fleet stack, selected once."""

    def __init__(self, work_dir: Path, on_output: Callable[[str], Any] = print,
                 select_stack: Optional[Callable[..., Any]] = None):
        """``work_dir``: the Pulumi project; ``select_stack``: ``auto.select_stack`` unless a test passes a fake."""
        if select_stack is None:
            from pulumi import automation as auto

            select_stack = auto.select_stack
        self.work_dir, self.on_output, self._select_stack = work_dir, on_output, select_stack
        self._stacks: dict[str, Any] = {}

    def _call(self, step: str, member: FleetStack, action: Callable[[], Any]) -> Any:
        from pulumi.automation import errors

        try:
            return action()
        except errors.CommandError as err:
            raise StepFailed(step, f"pulumi {step} of {member.pulumi_stack} failed: {_first_line(err)}") from None
        except errors.InvalidVersionError as err:  # the installed CLI is older than this SDK needs
            raise StepFailed(step, f"the Pulumi CLI is too old for this pulumi SDK: {err}".splitlines()[0]) from None
        except FileNotFoundError as err:  # LocalWorkspace runs the `pulumi` binary; none on PATH
            raise StepFailed(step, f"the Pulumi CLI is not installed ({err.strerror or err}: "
                                   f"{err.filename or 'pulumi'}); fleet up drives it through pulumi.automation") \
                from None

    def _stack(self, member: FleetStack) -> Any:
        if member.pulumi_stack not in self._stacks:
            self.select(member)
        return self._stacks[member.pulumi_stack]

    def select(self, member: FleetStack) -> None:
        """``auto.select_stack(stack_name=..., work_dir=...)``: the stack must exist (no stack is created)."""
        self._stacks[member.pulumi_stack] = self._call(
            "select", member,
            lambda: self._select_stack(stack_name=member.pulumi_stack, work_dir=str(self.work_dir)))

    def refresh(self, member: FleetStack) -> None:
        """``Stack.refresh()``."""
        stack = self._stack(member)
        self._call("refresh", member, lambda: stack.refresh(on_output=self.on_output))

    def preview(self, member: FleetStack) -> list[PlannedStep]:
        """``Stack.preview()``; the steps its ``ResourcePreEvent``s announce, in order."""
        stack = self._stack(member)
        steps: list[PlannedStep] = []

        def on_event(event: Any) -> None:
            pre = getattr(event, "resource_pre_event", None)
            if pre is not None and pre.metadata is not None:
                steps.append(PlannedStep(_value(pre.metadata.op), pre.metadata.type, pre.metadata.urn))

        result = self._call("preview", member, lambda: stack.preview(on_output=self.on_output, on_event=on_event))
        counts = {_value(op): n for op, n in (result.change_summary or {}).items()}
        self.on_output(f"preview of {member.pulumi_stack}: "
                       + (", ".join(f"{n} to {op}" for op, n in sorted(counts.items())) or "no changes"))
        return steps

    def up(self, member: FleetStack) -> Optional[int]:
        """``Stack.up()``; `StepFailed` unless ``UpResult.summary.result`` is ``succeeded``."""
        stack = self._stack(member)
        result = self._call("up", member, lambda: stack.up(on_output=self.on_output))
        if result.summary.result != SUCCEEDED:
            raise StepFailed("up", f"pulumi up of {member.pulumi_stack} ended {result.summary.result}")
        return result.summary.version
