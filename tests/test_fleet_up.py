"""``gpu-platform fleet up``: the Automation API adapter (`gpu_platform.fleet.automation`) against a fake
``select_stack`` whose fake stacks answer with the API's own result, event and error types, and the command with a
fake driver, verify, clock and sleep: exit codes, the state file after a stop, the resume.

The Pulumi CLI is not installed where these tests run; nothing here claims a real ``pulumi up``. The one test that
goes through the real ``pulumi.automation`` shows what happens without the CLI: exit 2 before anything runs."""

import argparse
import datetime
import inspect
import json
import os
from pathlib import Path

import pytest
from fleet_fakes import Clock, FakeDriver
from pulumi import automation as auto
from pulumi.automation import errors

from gpu_platform import cli, verify_live
from gpu_platform.fleet import automation, command, state
from gpu_platform.fleet.automation import AutomationDriver
from gpu_platform.fleet.fleet_file import FleetStack, VerifySettings, load_fleet
from gpu_platform.fleet.rollout import PlannedStep, StepFailed
from gpu_platform.fleet.state import RolloutState, StackRecord, Stop

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fleet" / "fleet.yaml"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
MEMBER = FleetStack("aws-dev", ROOT / "stacks" / "Pulumi.aws-dev.yaml", "acme/gpu-platform/aws-dev")


def summary(result: str = "succeeded", version: int = 12) -> auto.UpdateSummary:
    return auto.UpdateSummary(kind="update", start_time=datetime.datetime(2026, 11, 29), message="", environment={},
                              config={}, result=result, end_time=datetime.datetime(2026, 11, 29), version=version)


def pre_event(op: auto.OpType, type_token: str, name: str) -> auto.EngineEvent:
    urn = f"urn:pulumi:aws-dev::gpu-platform::{type_token}::{name}"
    return auto.EngineEvent(sequence=1, timestamp=0, resource_pre_event=auto.ResourcePreEvent(
        auto.StepEventMetadata(op=op, urn=urn, type=type_token, provider="")))


def command_error(kind=errors.CommandError, stderr: str = "error: something\n") -> errors.CommandError:
    return kind(auto.CommandResult(stdout="Updating (aws-dev)\n", stderr=stderr, code=255))


class FakeStack:
    """What the adapter uses of ``auto.Stack``; records each call with its keyword arguments."""

    def __init__(self, calls: list, events=(), result: str = "succeeded", fail=None):
        self.calls, self.events, self.result, self.fail = calls, list(events), result, dict(fail or {})

    def _call(self, method: str, kwargs: dict) -> None:
        self.calls.append((method, sorted(kwargs)))
        kwargs["on_output"](f"{method} output")
        if method in self.fail:
            raise self.fail[method]

    def refresh(self, **kwargs):
        self._call("refresh", kwargs)
        return auto.RefreshResult("", "", summary())

    def preview(self, **kwargs):
        self._call("preview", kwargs)
        for event in self.events:
            kwargs["on_event"](event)
        kwargs["on_event"](auto.EngineEvent(sequence=9, timestamp=0))  # not a step: ignored
        return auto.PreviewResult("", "", {auto.OpType.REPLACE: 1, auto.OpType.SAME: 40})

    def up(self, **kwargs):
        self._call("up", kwargs)
        return auto.UpResult("", "", summary(self.result, 12), outputs={})


def driver_with(stack: FakeStack, calls: list, select_error=None):
    output: list[str] = []

    def select_stack(**kwargs):
        calls.append(("select_stack", kwargs))
        if select_error is not None:
            raise select_error
        return stack

    return AutomationDriver(Path("/p"), on_output=output.append, select_stack=select_stack), output


def test_the_adapter_selects_refreshes_previews_and_ups_through_the_api():
    calls: list = []
    stack = FakeStack(calls, events=[pre_event(auto.OpType.UPDATE, "kubernetes:core/v1:ConfigMap", "cm"),
                                     pre_event(auto.OpType.REPLACE, NODE_GROUP, "gpu")])
    driver, output = driver_with(stack, calls)
    driver.select(MEMBER)
    driver.refresh(MEMBER)
    steps = driver.preview(MEMBER)
    update = driver.up(MEMBER)
    assert calls == [("select_stack", {"stack_name": "acme/gpu-platform/aws-dev", "work_dir": "/p"}),
                     ("refresh", ["on_output"]), ("preview", ["on_event", "on_output"]), ("up", ["on_output"])]
    assert steps == [PlannedStep("update", "kubernetes:core/v1:ConfigMap",
                                 "urn:pulumi:aws-dev::gpu-platform::kubernetes:core/v1:ConfigMap::cm"),
                     PlannedStep("replace", NODE_GROUP, f"urn:pulumi:aws-dev::gpu-platform::{NODE_GROUP}::gpu")]
    assert update == 12
    assert output == ["refresh output", "preview output",
                      "preview of acme/gpu-platform/aws-dev: 1 to replace, 40 to same", "up output"]


def test_the_adapter_uses_only_what_the_installed_api_has():
    """Every keyword the adapter passes exists in the installed SDK's signatures (no invented argument)."""
    assert {"stack_name", "work_dir"} <= set(inspect.signature(auto.select_stack).parameters)
    assert "on_output" in inspect.signature(auto.Stack.refresh).parameters
    assert {"on_output", "on_event"} <= set(inspect.signature(auto.Stack.preview).parameters)
    assert "on_output" in inspect.signature(auto.Stack.up).parameters
    assert automation.SUCCEEDED == "succeeded"


def test_a_stack_is_selected_once_even_without_a_preflight():
    calls: list = []
    driver, _ = driver_with(FakeStack(calls), calls)
    driver.refresh(MEMBER)
    driver.up(MEMBER)
    assert [c[0] for c in calls] == ["select_stack", "refresh", "up"]


@pytest.mark.parametrize("method, error, step, reason", [
    ("refresh", command_error(stderr="error: getting credentials: expired token\nmore\n"), "refresh",
     "pulumi refresh of acme/gpu-platform/aws-dev failed: CommandError: error: getting credentials: expired token"),
    ("preview", command_error(errors.ConcurrentUpdateError,
                              "error: [409] Conflict: Another update is currently in progress.\n"), "preview",
     "pulumi preview of acme/gpu-platform/aws-dev failed: ConcurrentUpdateError: error: [409] Conflict: Another "
     "update is currently in progress."),
    ("up", command_error(stderr=""), "up",
     "pulumi up of acme/gpu-platform/aws-dev failed: CommandError: code: 255"),
    ("up", errors.CommandError(auto.CommandResult(
        stdout="Updating (aws-dev)\nDiagnostics:\n  aws:eks:NodeGroup (gpu):\n    error: creating EKS Node Group: "
               "InsufficientCapacity\n", stderr="", code=255)), "up",
     "pulumi up of acme/gpu-platform/aws-dev failed: CommandError: error: creating EKS Node Group: "
     "InsufficientCapacity"),
])
def test_api_errors_become_one_line_step_failures(method, error, step, reason):
    calls: list = []
    driver, _ = driver_with(FakeStack(calls, fail={method: error}), calls)
    with pytest.raises(StepFailed) as failure:
        getattr(driver, method)(MEMBER)
    assert (failure.value.step, failure.value.reason) == (step, reason)


def test_an_update_that_does_not_succeed_fails_the_up_step():
    calls: list = []
    driver, _ = driver_with(FakeStack(calls, result="failed"), calls)
    with pytest.raises(StepFailed) as failure:
        driver.up(MEMBER)
    assert (failure.value.step, failure.value.reason) == ("up", "pulumi up of acme/gpu-platform/aws-dev ended failed")


@pytest.mark.parametrize("error, reason", [
    (command_error(errors.StackNotFoundError, "error: no stack named 'acme/gpu-platform/aws-dev' found\n"),
     "pulumi select of acme/gpu-platform/aws-dev failed: StackNotFoundError: error: no stack named "
     "'acme/gpu-platform/aws-dev' found"),
    (errors.InvalidVersionError("Minimum version requirement failed. The minimum CLI version requirement is 3.1.0, "
                                "your current CLI version is 3.0.0."),
     "the Pulumi CLI is too old for this pulumi SDK: Minimum version requirement failed. The minimum CLI version "
     "requirement is 3.1.0, your current CLI version is 3.0.0."),
    (FileNotFoundError(2, "No such file or directory", "pulumi"),
     "the Pulumi CLI is not installed (No such file or directory: pulumi); fleet up drives it through "
     "pulumi.automation"),
])
def test_a_stack_that_cannot_be_selected(error, reason):
    calls: list = []
    driver, _ = driver_with(FakeStack(calls), calls, select_error=error)
    with pytest.raises(StepFailed) as failure:
        driver.select(MEMBER)
    assert (failure.value.step, failure.value.reason) == ("select", reason)


# ------------------------------------------------------------------------------------------------- the command


def up(argv: list[str], driver, verify_codes=None, clock=None):
    args = cli.build_parser().parse_args(["fleet", "up", *argv])
    verified: list[tuple[str, VerifySettings]] = []

    def verify(m, settings):
        verified.append((m.stack, settings))
        return (verify_codes or {}).get(m.stack, 0)

    clock = clock or Clock()
    return command.up(args, driver=driver, verify=verify, clock=clock, sleep=clock.sleep), verified, clock


def test_fleet_up_stops_at_the_failed_canary_and_resume_finishes(tmp_path, capsys):
    state_file = tmp_path / "state.json"
    driver = FakeDriver()
    code, verified, clock = up([str(EXAMPLE), "--state", str(state_file)], driver, {"existing": 1})
    assert code == 1
    assert driver.calls == [("select", "existing"), ("select", "aws-dev"), ("select", "gcp-dev"),
                            ("refresh", "existing"), ("preview", "existing"), ("up", "existing")]
    assert verified == [("existing", VerifySettings(("inference",), 600.0))]
    release = load_fleet(EXAMPLE).release
    assert json.loads(state_file.read_text()) == {
        "format": 1, "fleet": "reference", "release": release, "waves": [["existing"], ["aws-dev", "gcp-dev"]],
        "stacks": {"existing": {"release": release, "passed": False, "update": 41}},
        "stopped": {"wave": "canary", "stack": "existing", "step": "verify",
                    "reason": "gpu-platform verify exited 1: a check failed"},
        "bake": None, "complete": False}
    out = capsys.readouterr().out.splitlines()
    width = max(len("RELEASE"), len(release))
    assert out[-8:] == [
        f"WAVE    STACK     {'RELEASE':<{width}}  STATUS",
        f"canary  existing  {release:<{width}}  stopped: verify failed",
        f"clouds  aws-dev   {'-':<{width}}  not updated",
        f"clouds  gcp-dev   {'-':<{width}}  not updated",
        f"on {release}: existing",
        "not updated by this fleet yet: aws-dev, gcp-dev",
        "stopped at wave canary, stack existing: verify failed: gpu-platform verify exited 1: a check failed",
        f"recorded in {state_file}; after the fix: gpu-platform fleet up {EXAMPLE} --resume",
    ]

    # The cluster is fixed: --resume runs the canary again, bakes 30 min, then the clouds wave.
    driver2 = FakeDriver()
    code, verified, clock = up([str(EXAMPLE), "--state", str(state_file), "--resume"], driver2)
    assert code == 0
    assert [c for c in driver2.calls if c[0] != "select"] == [
        ("refresh", "existing"), ("preview", "existing"), ("up", "existing"),
        ("refresh", "aws-dev"), ("preview", "aws-dev"), ("up", "aws-dev"),
        ("refresh", "gcp-dev"), ("preview", "gcp-dev"), ("up", "gcp-dev")]
    assert [v[0] for v in verified] == ["existing", "aws-dev", "gcp-dev"]
    assert sum(clock.sleeps) == 1800.0
    final = state.load(state_file)
    assert final == RolloutState("reference", release, (("existing",), ("aws-dev", "gcp-dev")),
                                 {"existing": StackRecord(release, True, 41), "aws-dev": StackRecord(release, True, 42),
                                  "gcp-dev": StackRecord(release, True, 43)},
                                 None, None, True)
    assert capsys.readouterr().out.splitlines()[-1] == f"complete: every stack is on release {release}"

    # Resumed again: nothing left to do.
    driver3 = FakeDriver()
    assert up([str(EXAMPLE), "--state", str(state_file), "--resume"], driver3)[0] == 0
    assert driver3.calls == []
    assert capsys.readouterr().out.splitlines()[0] == (f"every stack is on release {release} with its gates passed: "
                                                       "nothing to roll out")


def test_a_stop_in_the_second_wave_resumes_there(tmp_path):
    state_file = tmp_path / "state.json"
    code, _, _ = up([str(EXAMPLE), "--state", str(state_file)],
                    FakeDriver(fail={("gcp-dev", "preview"): "pulumi preview of gcp-dev failed: CommandError: x"}))
    assert code == 1
    recorded = state.load(state_file)
    assert recorded.stopped == Stop("clouds", "gcp-dev", "preview", "pulumi preview of gcp-dev failed: CommandError: x")
    assert sorted(s for s in recorded.stacks if recorded.stacks[s].passed) == ["aws-dev", "existing"]
    driver = FakeDriver()
    assert up([str(EXAMPLE), "--state", str(state_file), "--resume"], driver)[0] == 0
    assert driver.calls == [("select", "gcp-dev"), ("refresh", "gcp-dev"), ("preview", "gcp-dev"), ("up", "gcp-dev")]


def test_a_stack_that_cannot_be_selected_runs_nothing(tmp_path, capsys):
    state_file = tmp_path / "state.json"
    driver = FakeDriver(fail={("aws-dev", "select"): "pulumi select of aws-dev failed: StackNotFoundError: x"})
    assert up([str(EXAMPLE), "--state", str(state_file)], driver)[0] == 2
    assert [c[0] for c in driver.calls] == ["select", "select", "select"]
    assert capsys.readouterr().err == "error: aws-dev: pulumi select of aws-dev failed: StackNotFoundError: x\n"
    assert not state_file.exists()


def test_resume_without_a_recorded_rollout_is_bad_input(tmp_path, capsys):
    assert up([str(EXAMPLE), "--state", str(tmp_path / "none.json"), "--resume"], FakeDriver())[0] == 2
    assert capsys.readouterr().err == (f"error: {EXAMPLE}: --resume: no rollout recorded in the state file: run "
                                       "fleet up without --resume\n")


def test_an_interrupted_rollout_exits_130_and_keeps_its_state(tmp_path, capsys):
    state_file = tmp_path / "state.json"

    class Interrupted(FakeDriver):
        def up(self, m):
            if m.stack == "aws-dev":
                raise KeyboardInterrupt
            return super().up(m)

    assert up([str(EXAMPLE), "--state", str(state_file)], Interrupted())[0] == 130
    assert capsys.readouterr().err == (f"interrupted: what finished is recorded in {state_file}; gpu-platform fleet "
                                       f"up {EXAMPLE} --resume continues\n")
    recorded = state.load(state_file)
    assert recorded.stacks["existing"].passed and recorded.bake is None and "aws-dev" not in recorded.stacks


def test_without_the_pulumi_cli_fleet_up_exits_2_before_anything_runs(tmp_path, monkeypatch, capsys):
    """Through the real pulumi.automation: the API runs the ``pulumi`` binary, which is not on PATH."""
    monkeypatch.setenv("PATH", str(tmp_path))
    state_file = tmp_path / "state.json"
    assert cli.main(["fleet", "up", str(EXAMPLE), "--state", str(state_file)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("error: existing: the Pulumi CLI is not installed (No such file or directory: pulumi); fleet "
                      "up drives it through pulumi.automation")
    assert len(err) == 3 and not state_file.exists()


def test_the_driver_runs_in_the_fleets_pulumi_project(tmp_path, monkeypatch):
    made: list[Path] = []

    class Recording(FakeDriver):
        def __init__(self, work_dir):
            super().__init__()
            made.append(work_dir)

    monkeypatch.setattr(automation, "AutomationDriver", Recording)
    args = cli.build_parser().parse_args(["fleet", "up", str(EXAMPLE), "--state", str(tmp_path / "s.json")])
    clock = Clock()
    assert command.up(args, verify=lambda m, s: 0, clock=clock, sleep=clock.sleep) == 0
    assert made == [ROOT]


def test_the_default_state_file_is_per_fleet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert up([str(EXAMPLE)], FakeDriver())[0] == 0
    assert state.load(tmp_path / "build" / "fleet" / "reference" / "state.json").complete


# ------------------------------------------------------------------------------------------------- the verify gate


def test_the_verify_gate_runs_gpu_platform_verify_with_the_stacks_settings(monkeypatch):
    fleet = load_fleet(EXAMPLE)
    canary, gcp = fleet.stacks[0], fleet.stacks[2]
    assert vars(command.verify_args(canary, fleet.waves[0].verify)) == {
        "stack": None, "config": str(ROOT / "stacks" / "Pulumi.existing.yaml"), "kubeconfig": None,
        "context": "onprem-gpu", "json": False, "timeout_per_check": 600.0, "skip": ["inference"]}
    assert vars(command.verify_args(gcp, fleet.waves[1].verify)) == {
        "stack": None, "config": str(ROOT / "stacks" / "Pulumi.gcp-dev.yaml"),
        "kubeconfig": os.path.expanduser("~/.kube/gcp-dev"), "context": None, "json": False,
        "timeout_per_check": 300.0, "skip": []}
    # The same arguments the verify command's own parser gives.
    own = vars(cli.build_parser().parse_args(["verify", "--config", "x"]))
    assert set(own) - {"command", "func"} == set(vars(command.verify_args(canary, VerifySettings())))
    seen: list[argparse.Namespace] = []
    monkeypatch.setattr(verify_live, "run", lambda args: seen.append(args) or 1)
    assert command.verify_stack(canary, fleet.waves[0].verify) == 1
    assert seen == [command.verify_args(canary, fleet.waves[0].verify)]
