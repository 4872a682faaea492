"""The fleet plan matrix (``gpu-platform fleet plan``): every stack planned offline, against its last recorded plan.

One row per stack, in rollout order: its wave, how many resources the plan registers, the disruptive and in-place
changes against the stack's recorded plan (`upgrades.plan_diff`, the comparison ``gpu-platform diff`` makes), the
policy violations of the new plan, and a verdict. `exit_code` turns the rows into the command's exit code: 1 when a
stack failed to plan, has an invalid manifest or violates a policy; else 3 when a stack of a wave not marked
``allowDisruption`` would be disrupted; else 0.

Planning and the policy check are arguments (`build_rows`), so the matrix is tested without the engine;
`plan_offline` is the real planner (`gpu_platform.plan`).
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ..upgrades import plan_diff, version_skew
from .fleet_file import Fleet, FleetStack

REASONS_SHOWN = 5
"""Disruptive reasons listed per stack under the matrix before it says how many more."""

EXIT_OK, EXIT_INVALID, EXIT_BAD_INPUT, EXIT_DISRUPTIVE = 0, 1, 2, 3


@dataclass(frozen=True)
class Planned:
    """One stack planned offline: its plan (None when the program failed), where it was written, its errors."""

    plan: Optional[plan_diff.Plan]
    plan_dir: Optional[Path]
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    """One stack's row of the matrix."""

    wave: str
    stack: str
    allow_disruption: bool
    resources: Optional[int]
    """Resources the new plan registers (None when it failed)."""
    has_baseline: bool
    disruptive: tuple[str, ...]
    """One line per disruptive change against the recorded plan: the resource and the verdict's reason."""
    in_place: int
    violations: tuple[str, ...]
    """One line per policy violation: ``resource: rule: message``."""
    errors: tuple[str, ...]

    @property
    def disrupts_unmarked(self) -> bool:
        """Disruptive changes in a wave not marked ``allowDisruption``."""
        return bool(self.disruptive) and not self.allow_disruption

    @property
    def verdict(self) -> str:
        if self.resources is None:
            return "PLAN FAILED"
        if self.errors:
            return "INVALID"
        if self.violations:
            return "VIOLATES POLICY"
        if self.disrupts_unmarked:
            return "DISRUPTS (wave not marked allowDisruption)"
        if self.disruptive:
            return "disrupts (allowed)"
        return "ok"


Violations = Callable[[Path], Sequence[Any]]
"""The policy check: a stack's plan folder -> its violations (objects with ``resource``, ``rule``, ``message``)."""


def load_baselines(directory: Path, fleet: Fleet) -> dict[str, plan_diff.Plan]:
    """Each fleet stack's recorded plan, ``directory/<stack>/plan.json``; a stack without one is left out (nothing
    recorded: nothing to disrupt). `plan_diff.PlanError` for a file that is not a plan of that stack."""
    plans = {}
    for member in fleet.stacks:
        path = directory / member.stack / plan_diff.PLAN_FILE
        if not path.is_file():
            continue
        [plan] = plan_diff.load_plans(path).values()
        if plan.stack != member.stack:
            raise plan_diff.PlanError(f"{path} is a plan of stack {plan.stack}, not {member.stack}")
        plans[member.stack] = plan
    return plans


def step_problems(baselines: Mapping[str, plan_diff.Plan], versions: Mapping[str, str]) -> list[str]:
    """A stack whose Kubernetes minor (``versions``, from its configuration) cannot follow its recorded plan's: one
    line each (``gpu-platform plan --compare`` refuses the same)."""
    problems = []
    for stack, plan in baselines.items():
        if plan.kubernetes_version is not None and stack in versions:
            problem = version_skew.control_plane_step_problem(plan.kubernetes_version, versions[stack])
            if problem:
                problems.append(f"{stack}: {problem}")
    return problems


def _violation_line(violation: Any) -> str:
    return f"{violation.resource}: {violation.rule}: {violation.message}"


def row(wave: str, allow_disruption: bool, stack: str, planned: Planned, baseline: Optional[plan_diff.Plan],
        violations: Violations) -> Row:
    """The matrix row of one planned stack."""
    if planned.plan is None:
        return Row(wave, stack, allow_disruption, None, baseline is not None, (), 0, (), planned.errors)
    disruptive: tuple[str, ...] = ()
    in_place = 0
    if baseline is not None:
        diff = plan_diff.diff_plans(baseline, planned.plan)
        disruptive = tuple(f"{c.name}: {c.verdict.reason}" for c in diff.disruptive)
        in_place = len(diff.in_place)
    found = tuple(_violation_line(v) for v in violations(planned.plan_dir)) if planned.plan_dir is not None else ()
    return Row(wave, stack, allow_disruption, len(planned.plan.resources), baseline is not None, disruptive,
               in_place, found, planned.errors)


def build_rows(fleet: Fleet, plan: Callable[[FleetStack], Planned], baselines: Mapping[str, plan_diff.Plan],
               violations: Violations) -> list[Row]:
    """Plan every stack of the fleet (``plan``), compare it with its baseline and check it (``violations``), in
    rollout order."""
    return [row(wave.name, wave.allow_disruption, member.stack, plan(member), baselines.get(member.stack), violations)
            for wave in fleet.waves for member in wave.stacks]


def exit_code(rows: Sequence[Row]) -> int:
    """1 a stack failed, is invalid or violates a policy; else 3 a wave not marked allowDisruption would disrupt;
    else 0."""
    if any(r.resources is None or r.errors or r.violations for r in rows):
        return EXIT_INVALID
    if any(r.disrupts_unmarked for r in rows):
        return EXIT_DISRUPTIVE
    return EXIT_OK


def cells(r: Row) -> tuple[str, ...]:
    """The matrix cells of a row: wave, stack, resources, disruptive, in-place, violations, verdict."""
    planned = r.resources is not None
    return (r.wave, r.stack, str(r.resources) if planned else "-",
            (str(len(r.disruptive)) if r.has_baseline else "no baseline") if planned else "-",
            str(r.in_place) if planned and r.has_baseline else "-",
            str(len(r.violations)) if planned else "-", r.verdict)


HEADER = ("WAVE", "STACK", "RESOURCES", "DISRUPTIVE", "IN-PLACE", "VIOLATIONS", "VERDICT")


def render(fleet: Fleet, rows: Sequence[Row], baseline_dir: Path) -> str:
    """The matrix, then per stack what makes it disruptive, invalid or in violation, then the outcome."""
    table = [HEADER, *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER) - 1)]
    numeric = {2, 3, 4, 5}
    lines = [f"fleet {fleet.name} (release {fleet.release}): {len(rows)} stacks in {len(fleet.waves)} waves, "
             f"baseline {baseline_dir}"]
    for line in table:
        lines.append("  ".join(line[i].rjust(widths[i]) if i in numeric and line is not HEADER else
                               line[i].ljust(widths[i]) for i in range(len(widths))) + "  " + line[-1])
    for r in rows:
        where = f"{r.wave}/{r.stack}"
        for error in r.errors:
            lines.append(f"{where}: {error}")
        if r.disruptive:
            allowed = "allowed" if r.allow_disruption else f"wave {r.wave} is not marked allowDisruption"
            lines.append(f"{where}: {len(r.disruptive)} disruptive ({allowed}):")
            lines += [f"  {reason}" for reason in r.disruptive[:REASONS_SHOWN]]
            if len(r.disruptive) > REASONS_SHOWN:
                lines.append(f"  ... and {len(r.disruptive) - REASONS_SHOWN} more (gpu-platform diff shows all)")
        if r.violations:
            lines.append(f"{where}: {len(r.violations)} policy violations:")
            lines += [f"  {v}" for v in r.violations]
    outcome = {EXIT_OK: "ok: every wave can roll out as marked",
               EXIT_INVALID: "failed: a stack failed to plan, is invalid or violates a policy",
               EXIT_DISRUPTIVE: "refused: a wave not marked allowDisruption would disrupt"}[exit_code(rows)]
    lines.append(outcome)
    return "\n".join(lines)


def plan_offline(member: FleetStack, out_dir: Path) -> Planned:
    """Plan one stack with the offline planner and write ``out_dir/<stack>/plan.json`` and ``manifests.yaml`` (the
    next run's baseline). A failing program is a `Planned` without plan; bad configuration raises `ConfigError`."""
    from .. import plan as planner
    from ..errors import ConfigError

    try:
        result = planner.plan_stack(member.stack, member.stack_file)
    except ConfigError:
        raise
    except Exception as err:  # noqa: BLE001 - one line per failing stack, never a traceback
        return Planned(None, None, (f"the program failed: {type(err).__name__}: {err}".splitlines()[0],))
    target = planner.write_plan(result, out_dir)
    document = planner.plan_json(result)
    return Planned(plan_diff.read_plan(document, str(target / plan_diff.PLAN_FILE)), target, tuple(result.errors))
