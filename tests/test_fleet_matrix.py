"""``gpu-platform fleet plan``: the matrix (`gpu_platform.fleet.matrix`) with a fake planner and policy check, and
the command on the three-stack example fleet, planned offline for real: the matrix it prints, a disruptive change
in a wave not marked ``allowDisruption`` failing it (exit 3), and the same change allowed."""

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
import yaml

from gpu_platform import cli
from gpu_platform.fleet import command, matrix
from gpu_platform.fleet.fleet_file import Fleet, FleetStack, Wave
from gpu_platform.fleet.matrix import Planned, Row
from gpu_platform.upgrades.plan_diff import Plan, PlanError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fleet" / "fleet.yaml"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def resource(stack: str, type_token: str, name: str, **inputs) -> dict:
    return {"urn": f"urn:pulumi:{stack}::gpu-platform::{type_token}::{name}", "type": type_token, "name": name,
            "parent": "", "custom": True, "protect": False, "inputs": inputs}


def plan_of(stack: str, *resources: dict, version: str = "1.34") -> Plan:
    return Plan(stack, {r["urn"]: r for r in resources}, "aws", version)


def member(name: str) -> FleetStack:
    return FleetStack(name, Path(f"/p/stacks/Pulumi.{name}.yaml"), name)


FLEET = Fleet("reference", Path("/p/fleet.yaml"), "2.0", Path("/p"), (
    Wave("canary", (member("existing"),)),
    Wave("rest", (member("aws-dev"), member("gcp-dev")), allow_disruption=True),
))


class Violation:
    def __init__(self, resource, rule, message):
        self.resource, self.rule, self.message = resource, rule, message


def NO_VIOLATIONS(plan_dir):  # noqa: N802 - a stand-in for the policy check that finds nothing
    return []


def fake_planner(plans: dict[str, Plan], errors=None):
    def plan(m: FleetStack) -> Planned:
        if m.stack not in plans:
            return Planned(None, None, ("the program failed: RuntimeError: boom",))
        return Planned(plans[m.stack], Path("/out") / m.stack, tuple((errors or {}).get(m.stack, ())))
    return plan


CM_OLD = resource("existing", CONFIG_MAP, "cm", data={"a": "1"})
CM_NEW = resource("existing", CONFIG_MAP, "cm", data={"a": "2"})
POOL = resource("aws-dev", NODE_GROUP, "gpu-old", instanceTypes=["p5.48xlarge"])


def test_rows_compare_with_the_baseline_and_carry_the_policy_check():
    new = {"existing": plan_of("existing", CM_NEW), "aws-dev": plan_of("aws-dev", resource("aws-dev", CONFIG_MAP, "x")),
           "gcp-dev": plan_of("gcp-dev")}
    baselines = {"existing": plan_of("existing", CM_OLD), "aws-dev": plan_of("aws-dev", POOL,
                                                                             resource("aws-dev", CONFIG_MAP, "x"))}
    checked: list[Path] = []

    def violations(plan_dir: Path):
        checked.append(plan_dir)
        return [Violation("cm", "no-latest-tag", "image tag latest")] if plan_dir.name == "gcp-dev" else []

    rows = matrix.build_rows(FLEET, fake_planner(new), baselines, violations)
    assert rows == [
        Row("canary", "existing", False, 1, True, (), 1, (), ()),
        Row("rest", "aws-dev", True, 1, True, ("gpu-old: deletes node group: its nodes and the pods on them go",), 0,
            (), ()),
        Row("rest", "gcp-dev", True, 0, False, (), 0, ("cm: no-latest-tag: image tag latest",), ()),
    ]
    assert checked == [Path("/out/existing"), Path("/out/aws-dev"), Path("/out/gcp-dev")]
    assert [r.verdict for r in rows] == ["ok", "disrupts (allowed)", "VIOLATES POLICY"]
    assert matrix.exit_code(rows) == 1
    assert matrix.render(FLEET, rows, Path("build/fleet/reference/plans")) == "\n".join([
        "fleet reference (release 2.0): 3 stacks in 2 waves, baseline build/fleet/reference/plans",
        "WAVE    STACK     RESOURCES  DISRUPTIVE   IN-PLACE  VIOLATIONS  VERDICT",
        "canary  existing          1            0         1           0  ok",
        "rest    aws-dev           1            1         0           0  disrupts (allowed)",
        "rest    gcp-dev           0  no baseline         -           1  VIOLATES POLICY",
        "rest/aws-dev: 1 disruptive (allowed):",
        "  gpu-old: deletes node group: its nodes and the pods on them go",
        "rest/gcp-dev: 1 policy violations:",
        "  cm: no-latest-tag: image tag latest",
        "failed: a stack failed to plan, is invalid or violates a policy",
    ])


def test_a_disruptive_change_in_a_wave_not_marked_for_it_exits_3():
    unmarked = Fleet("f", Path("/p/f.yaml"), "2.0", Path("/p"), (Wave("canary", (member("aws-dev"),)),))
    rows = matrix.build_rows(unmarked, fake_planner({"aws-dev": plan_of("aws-dev")}),
                             {"aws-dev": plan_of("aws-dev", POOL)}, NO_VIOLATIONS)
    assert rows == [Row("canary", "aws-dev", False, 0, True,
                        ("gpu-old: deletes node group: its nodes and the pods on them go",), 0, (), ())]
    assert rows[0].disrupts_unmarked and rows[0].verdict == "DISRUPTS (wave not marked allowDisruption)"
    assert matrix.exit_code(rows) == 3
    assert matrix.render(unmarked, rows, Path("old")).splitlines() == [
        "fleet f (release 2.0): 1 stacks in 1 waves, baseline old",
        "WAVE    STACK    RESOURCES  DISRUPTIVE  IN-PLACE  VIOLATIONS  VERDICT",
        "canary  aws-dev          0           1         0           0  DISRUPTS (wave not marked allowDisruption)",
        "canary/aws-dev: 1 disruptive (wave canary is not marked allowDisruption):",
        "  gpu-old: deletes node group: its nodes and the pods on them go",
        "refused: a wave not marked allowDisruption would disrupt",
    ]


def test_a_failed_or_invalid_stack_is_exit_1_before_disruption():
    rows = matrix.build_rows(FLEET, fake_planner({"existing": plan_of("existing"), "aws-dev": plan_of("aws-dev")},
                                                 errors={"aws-dev": ["Deployment x: spec.replicas: bad"]}),
                             {"existing": plan_of("existing", CM_OLD, POOL)}, NO_VIOLATIONS)
    assert [(r.stack, r.resources, r.errors, r.verdict) for r in rows] == [
        ("existing", 0, (), "DISRUPTS (wave not marked allowDisruption)"),
        ("aws-dev", 0, ("Deployment x: spec.replicas: bad",), "INVALID"),
        ("gcp-dev", None, ("the program failed: RuntimeError: boom",), "PLAN FAILED")]
    assert matrix.cells(rows[2]) == ("rest", "gcp-dev", "-", "-", "-", "-", "PLAN FAILED")
    assert matrix.exit_code(rows) == 1
    assert matrix.exit_code(rows[:1]) == 3 and matrix.exit_code([]) == 0


def test_more_than_five_reasons_are_cut_short():
    many = [resource("aws-dev", NODE_GROUP, f"pool-{i}") for i in range(7)]
    fleet = Fleet("f", Path("f.yaml"), "1", Path("/p"), (Wave("w", (member("aws-dev"),)),))
    rows = matrix.build_rows(fleet, fake_planner({"aws-dev": plan_of("aws-dev")}),
                             {"aws-dev": plan_of("aws-dev", *many)}, NO_VIOLATIONS)
    text = matrix.render(fleet, rows, Path("b")).splitlines()
    assert text[3:10] == ["w/aws-dev: 7 disruptive (wave w is not marked allowDisruption):",
                          *[f"  pool-{i}: deletes node group: its nodes and the pods on them go" for i in range(5)],
                          "  ... and 2 more (gpu-platform diff shows all)"]


def test_baselines_and_the_kubernetes_step(tmp_path):
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "plan.json").write_text(json.dumps(
        {"stack": "existing", "kubernetesVersion": "1.33", "resources": []}))
    (tmp_path / "aws-dev").mkdir()
    (tmp_path / "aws-dev" / "plan.json").write_text(json.dumps({"stack": "gcp-dev", "resources": []}))
    with pytest.raises(PlanError) as err:
        matrix.load_baselines(tmp_path, FLEET)
    assert str(err.value) == f"{tmp_path}/aws-dev/plan.json is a plan of stack gcp-dev, not aws-dev"
    shutil.rmtree(tmp_path / "aws-dev")
    baselines = matrix.load_baselines(tmp_path, FLEET)
    assert list(baselines) == ["existing"] and baselines["existing"].kubernetes_version == "1.33"
    assert matrix.step_problems(baselines, {"existing": "1.34"}) == []
    assert matrix.step_problems(baselines, {"existing": "1.35"})[0].startswith("existing: ")


def test_the_policy_check_is_the_guardrails():
    from gpu_platform.guardrails import check_plan_dir

    assert command.policy_check() is check_plan_dir


# ------------------------------------------------------------------------------------- the command, for real


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """``gpu-platform fleet plan`` on the example (three reference stacks), once, with the real policy check
    (`gpu_platform.guardrails`), recording which plan folders it was given."""
    out = tmp_path_factory.mktemp("fleet") / "plans"
    checked: list[Path] = []

    real_check = command.policy_check

    def recording_check():
        check = real_check()

        def recorded(plan_dir: Path):
            checked.append(plan_dir)
            return check(plan_dir)
        return recorded

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "policy_check", recording_check)
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = cli.main(["fleet", "plan", str(EXAMPLE), "--out", str(out)])
    return code, stdout.getvalue(), stderr.getvalue(), out, checked


def resources_in(out: Path, stack: str) -> int:
    return len(json.loads((out / stack / "plan.json").read_text())["resources"])


def test_fleet_plan_prints_the_matrix_of_three_stacks(example_run):
    code, stdout, stderr, out, checked = example_run
    counts = {s: resources_in(out, s) for s in ("existing", "aws-dev", "gcp-dev")}
    assert (code, stderr) == (0, "")
    assert checked == [out / "existing", out / "aws-dev", out / "gcp-dev"]
    rows = [("canary", "existing"), ("clouds", "aws-dev"), ("clouds", "gcp-dev")]
    assert stdout.splitlines() == [
        f"fleet reference (release {command.load_fleet(EXAMPLE).release}): 3 stacks in 2 waves, baseline {out}",
        "WAVE    STACK     RESOURCES  DISRUPTIVE   IN-PLACE  VIOLATIONS  VERDICT",
        *[f"{wave:<6}  {stack:<8}  {counts[stack]:>9}  no baseline         -           0  ok" for wave, stack in rows],
        "ok: every wave can roll out as marked",
        f"wrote the plans to {out} (the next fleet plan's baseline unless --baseline says otherwise)",
    ]
    assert all(counts[s] > 100 for s in counts)
    assert sorted(p.name for p in (out / "existing").iterdir()) == ["manifests.yaml", "plan.json"]


def one_stack_fleet(tmp_path: Path, allow: bool) -> Path:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(yaml.safe_dump({"name": "one", "project": str(ROOT), "waves": [
        {"name": "canary", "stacks": ["existing"], "allowDisruption": allow}]}))
    return fleet_file


def tampered_baseline(example_out: Path, tmp_path: Path) -> Path:
    """The example's plan of ``existing`` with a GPU node group the new plan no longer has: deleting it disrupts."""
    baseline = tmp_path / "baseline"
    (baseline / "existing").mkdir(parents=True)
    document = json.loads((example_out / "existing" / "plan.json").read_text())
    document["resources"].append(resource("existing", NODE_GROUP, "gpu-retired", instanceTypes=["p4d.24xlarge"]))
    (baseline / "existing" / "plan.json").write_text(json.dumps(document))
    return baseline


@pytest.mark.parametrize("allow, code, verdict, outcome", [
    (False, 3, "DISRUPTS (wave not marked allowDisruption)",
     "refused: a wave not marked allowDisruption would disrupt"),
    (True, 0, "disrupts (allowed)", "ok: every wave can roll out as marked"),
])
def test_a_disruptive_change_fails_fleet_plan_unless_the_wave_allows_it(example_run, tmp_path, capsys, monkeypatch,
                                                                        allow, code, verdict, outcome):
    monkeypatch.setattr(command, "policy_check", lambda: NO_VIOLATIONS)
    baseline = tampered_baseline(example_run[3], tmp_path)
    out = tmp_path / "new"
    assert cli.main(["fleet", "plan", str(one_stack_fleet(tmp_path, allow)), "--out", str(out),
                     "--baseline", str(baseline)]) == code
    lines = capsys.readouterr().out.splitlines()
    count = resources_in(out, "existing")
    assert lines[2] == f"canary  existing  {count:>9}           1         0           0  {verdict}"
    assert lines[3:6] == [
        f"canary/existing: 1 disruptive ({'allowed' if allow else 'wave canary is not marked allowDisruption'}):",
        "  gpu-retired: deletes node group: its nodes and the pods on them go",
        outcome]


def test_fleet_plan_refuses_a_baseline_that_is_not_a_plan(tmp_path, capsys):
    baseline = tmp_path / "baseline"
    (baseline / "existing").mkdir(parents=True)
    (baseline / "existing" / "plan.json").write_text("{}")
    assert cli.main(["fleet", "plan", str(one_stack_fleet(tmp_path, False)), "--out", str(tmp_path / "new"),
                     "--baseline", str(baseline)]) == 2
    assert capsys.readouterr().err == (f"error: {baseline}/existing/plan.json: not a gpu-platform plan (a plan.json "
                                       "with 'stack' and 'resources')\n")
    assert not (tmp_path / "new").exists()
