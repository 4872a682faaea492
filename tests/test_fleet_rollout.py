"""The rollout's decisions (`gpu_platform.fleet.rollout`) and its state (`gpu_platform.fleet.state`), with a fake
driver, a fake verify, a fake clock and sleep: wave order, the preview and verify gates, bake time, the stop at a
failed canary, resume from where it stopped (and from an interrupted bake)."""

import json
from pathlib import Path

import pytest
from fleet_fakes import T0, Clock, FakeDriver

from gpu_platform.fleet import rollout, state
from gpu_platform.fleet.fleet_file import Fleet, FleetError, FleetStack, VerifySettings, Wave
from gpu_platform.fleet.rollout import PlannedStep
from gpu_platform.fleet.state import Bake, RolloutState, StackRecord, Stop

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def member(name: str) -> FleetStack:
    return FleetStack(name, Path(f"/p/stacks/Pulumi.{name}.yaml"), name)


def make_fleet(bake_s: float = 1800.0, canary_gates=("preview", "verify"), rest_disruption: bool = False,
               release: str = "2.0") -> Fleet:
    return Fleet("reference", Path("/p/fleet.yaml"), release, Path("/p"), (
        Wave("canary", (member("existing"),), False, bake_s, canary_gates, VerifySettings(("inference",), 60.0)),
        Wave("rest", (member("aws-dev"), member("gcp-dev")), rest_disruption, 600.0),
    ))


def fake_verify(driver: FakeDriver, codes=None):
    def verify(m: FleetStack, settings: VerifySettings) -> int:
        driver.events.append((driver.clock() - T0, "verify", m.stack))
        driver.verified_with = settings
        return (codes or {}).get(m.stack, 0)
    return verify


def go(fleet, start_state, driver, clock, verify=None, saved=None):
    saved = saved if saved is not None else []
    final = rollout.run(fleet, start_state, driver, verify or fake_verify(driver), clock, clock.sleep, saved.append)
    return final, saved


def stack_steps(stack: str, at: float, verify: bool = True) -> list[tuple[float, str, str]]:
    return [(at, step, stack) for step in ("refresh", "preview", "up") + (("verify",) if verify else ())]


# ------------------------------------------------------------------------------------------------- the run


def test_waves_run_in_order_and_the_canary_bakes_before_the_rest():
    fleet, clock = make_fleet(), Clock()
    driver = FakeDriver(clock)
    final, saved = go(fleet, rollout.start(fleet, None, resume=False), driver, clock)
    # The rest wave starts exactly when the canary's 30 min bake is over; no bake after the last wave.
    assert driver.events == stack_steps("existing", 0) + stack_steps("aws-dev", 1800) + stack_steps("gcp-dev", 1800)
    assert clock.sleeps == [60.0] * 30 and clock.now == T0 + 1800
    assert driver.verified_with == VerifySettings((), 300.0)  # the rest wave's settings for gcp-dev
    assert final == RolloutState("reference", "2.0", (("existing",), ("aws-dev", "gcp-dev")), {
        "existing": StackRecord("2.0", True, 41), "aws-dev": StackRecord("2.0", True, 42),
        "gcp-dev": StackRecord("2.0", True, 43)}, stopped=None, bake=None, complete=True)
    assert saved[-1] == final
    assert Bake("canary", T0 + 1800) in [s.bake for s in saved]  # recorded while baking, for a resume


def test_a_failed_canary_stops_the_rollout_before_any_other_stack():
    fleet, clock = make_fleet(), Clock()
    driver = FakeDriver(clock)
    final, saved = go(fleet, rollout.start(fleet, None, resume=False), driver, clock,
                      verify=fake_verify(driver, {"existing": 1}))
    assert driver.events == stack_steps("existing", 0)
    assert clock.sleeps == []
    assert driver.verified_with == VerifySettings(("inference",), 60.0)
    assert final.stopped == Stop("canary", "existing", "verify", "gpu-platform verify exited 1: a check failed")
    assert final.stacks == {"existing": StackRecord("2.0", False, 41)}
    assert (final.complete, final.bake) == (False, None)
    assert saved[-1] == final
    assert rollout.render_versions(fleet, final) == "\n".join([
        "WAVE    STACK     RELEASE  STATUS",
        "canary  existing  2.0      stopped: verify failed",
        "rest    aws-dev   -        not updated",
        "rest    gcp-dev   -        not updated",
        "on 2.0: existing",
        "not updated by this fleet yet: aws-dev, gcp-dev",
    ])


def test_resume_continues_at_the_stack_that_stopped():
    fleet, clock = make_fleet(), Clock()
    driver = FakeDriver(clock, fail={("gcp-dev", "up"): "pulumi up of gcp-dev failed: quota exceeded"})
    stopped, _ = go(fleet, rollout.start(fleet, None, resume=False), driver, clock)
    assert stopped.stopped == Stop("rest", "gcp-dev", "up", "pulumi up of gcp-dev failed: quota exceeded")
    assert stopped.stacks == {"existing": StackRecord("2.0", True, 41), "aws-dev": StackRecord("2.0", True, 42)}
    assert [v[3] for v in rollout.versions(fleet, stopped)] == ["gates passed", "gates passed", "stopped: up failed"]

    # The quota is raised; the resumed run touches only gcp-dev, and waits no bake again.
    resumed_from = rollout.start(fleet, json_round_trip(stopped), resume=True)
    assert resumed_from == RolloutState("reference", "2.0", stopped.waves, stopped.stacks, None, None, False)
    assert rollout.pending(fleet, resumed_from) == [(fleet.waves[1], (member("gcp-dev"),))]
    driver2 = FakeDriver(clock)
    final, _ = go(fleet, resumed_from, driver2, clock)
    assert driver2.events == stack_steps("gcp-dev", 1800)
    assert clock.sleeps == [60.0] * 30  # the canary's bake, once, in the first run
    assert final.complete and final.stopped is None
    assert final.stacks["gcp-dev"] == StackRecord("2.0", True, 41)


def test_a_stop_after_up_keeps_the_new_release_and_resume_runs_that_stack_again():
    fleet, clock = make_fleet(bake_s=0), Clock()
    driver = FakeDriver(clock)
    stopped, _ = go(fleet, rollout.start(fleet, None, resume=False), driver, clock,
                    verify=fake_verify(driver, {"aws-dev": 2}))
    assert stopped.stopped == Stop("rest", "aws-dev", "verify",
                                   "gpu-platform verify exited 2: bad usage, configuration or kubeconfig")
    assert stopped.stacks["aws-dev"] == StackRecord("2.0", False, 42)
    assert rollout.versions(fleet, stopped)[1] == ("rest", "aws-dev", "2.0", "stopped: verify failed")
    driver2 = FakeDriver(clock)
    final, _ = go(fleet, rollout.start(fleet, stopped, resume=True), driver2, clock)
    assert driver2.events == stack_steps("aws-dev", 0) + stack_steps("gcp-dev", 0)
    assert final.complete


def test_resume_after_an_interrupted_bake_waits_only_what_is_left():
    fleet, clock = make_fleet(), Clock()
    driver = FakeDriver(clock)
    saved: list[RolloutState] = []

    def interrupting_sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now - T0 >= 1200:  # Ctrl-C 20 min into the 30 min bake
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rollout.run(fleet, rollout.start(fleet, None, False), driver, fake_verify(driver), clock, interrupting_sleep,
                    saved.append)
    interrupted = saved[-1]
    assert interrupted.bake == Bake("canary", T0 + 1800) and interrupted.stopped is None
    assert interrupted.stacks == {"existing": StackRecord("2.0", True, 41)}

    later = Clock(T0 + 1500)  # resumed 5 min after the interruption
    driver2 = FakeDriver(later)
    resumed_from = rollout.start(fleet, json_round_trip(interrupted), resume=True)
    assert rollout.bake_left(resumed_from, later()) == 300.0
    final, _ = go(fleet, resumed_from, driver2, later)
    assert later.sleeps == [60.0] * 5
    assert driver2.events == stack_steps("aws-dev", 1800) + stack_steps("gcp-dev", 1800)
    assert final.complete and final.bake is None


def test_a_bake_already_over_waits_nothing():
    fleet, clock = make_fleet(), Clock(T0 + 4000)
    recorded = RolloutState("reference", "2.0", rollout.layout(fleet), {"existing": StackRecord("2.0", True, 7)},
                            bake=Bake("canary", T0 + 1800))
    driver = FakeDriver(clock)
    final, _ = go(fleet, rollout.start(fleet, recorded, True), driver, clock)
    assert clock.sleeps == [] and driver.events[0] == (4000, "refresh", "aws-dev")
    assert final.complete


def test_a_new_rollout_starts_over_and_keeps_which_release_each_stack_is_on():
    fleet = make_fleet(release="3.0")
    previous = RolloutState("reference", "2.0", rollout.layout(fleet), {
        "existing": StackRecord("2.0", True, 41), "aws-dev": StackRecord("2.0", False, 42)},
        stopped=Stop("rest", "aws-dev", "verify", "x"), bake=Bake("canary", T0))
    fresh = rollout.start(fleet, previous, resume=False)
    assert fresh == RolloutState("reference", "3.0", rollout.layout(fleet), {
        "existing": StackRecord("2.0", False, 41), "aws-dev": StackRecord("2.0", False, 42)})
    assert rollout.pending(fleet, fresh) == [(fleet.waves[0], (member("existing"),)),
                                             (fleet.waves[1], (member("aws-dev"), member("gcp-dev")))]
    assert rollout.versions(fleet, fresh) == [("canary", "existing", "2.0", "not updated"),
                                              ("rest", "aws-dev", "2.0", "not updated"),
                                              ("rest", "gcp-dev", "-", "not updated")]
    # The same release again, without --resume: every stack runs again.
    again = rollout.start(make_fleet(release="2.0"), previous, resume=False)
    assert [m.stack for _, ms in rollout.pending(fleet, again) for m in ms] == ["existing", "aws-dev", "gcp-dev"]


@pytest.mark.parametrize("previous, message", [
    (None, "/p/fleet.yaml: --resume: no rollout recorded in the state file: run fleet up without --resume"),
    (RolloutState("other", "2.0", (("existing",), ("aws-dev", "gcp-dev"))),
     "/p/fleet.yaml: name: the state records fleet other, not reference"),
    (RolloutState("reference", "1.9", (("existing",), ("aws-dev", "gcp-dev"))),
     "/p/fleet.yaml: release: the recorded rollout brings release 1.9, the file now 2.0: run fleet up without "
     "--resume to start that rollout"),
    (RolloutState("reference", "2.0", (("existing", "aws-dev"), ("gcp-dev",))),
     "/p/fleet.yaml: waves: the waves changed since the rollout started (recorded: existing, aws-dev | gcp-dev): "
     "run fleet up without --resume"),
])
def test_resume_refuses_what_no_longer_matches(previous, message):
    with pytest.raises(FleetError) as err:
        rollout.start(make_fleet(), previous, resume=True)
    assert str(err.value) == message


def test_nothing_pending_when_every_stack_passed():
    fleet = make_fleet()
    done = RolloutState("reference", "2.0", rollout.layout(fleet),
                        {s: StackRecord("2.0", True, 1) for s in ("existing", "aws-dev", "gcp-dev")}, complete=True)
    assert rollout.pending(fleet, rollout.start(fleet, done, True)) == []
    assert [rollout.is_done(done, s) for s in ("existing", "aws-dev", "nope")] == [True, True, False]


# ------------------------------------------------------------------------------------------------- gates


def test_the_preview_gate_stops_a_disruptive_canary_before_its_up():
    fleet, clock = make_fleet(), Clock()
    steps = [PlannedStep("update", CONFIG_MAP, "urn:pulumi:existing::gpu-platform::" + CONFIG_MAP + "::cm"),
             PlannedStep("replace", NODE_GROUP, "urn:pulumi:existing::gpu-platform::" + NODE_GROUP + "::gpu-a"),
             PlannedStep("delete", NODE_GROUP, "urn:pulumi:existing::gpu-platform::" + NODE_GROUP + "::gpu-b")]
    driver = FakeDriver(clock, previews={"existing": steps})
    final, _ = go(fleet, rollout.start(fleet, None, False), driver, clock)
    assert driver.events == [(0, "refresh", "existing"), (0, "preview", "existing")]
    assert final.stopped == Stop("canary", "existing", "preview",
                                 "the preview would replace node pool gpu-a (aws:eks/nodeGroup:NodeGroup) and 1 more; "
                                 "the wave does not allow disruption (allowDisruption)")
    assert final.stacks == {}


@pytest.mark.parametrize("allow, stopped", [
    (False, Stop("rest", "aws-dev", "preview", "the preview would replace node pool gpu (aws:eks/nodeGroup:NodeGroup); "
                                               "the wave does not allow disruption (allowDisruption)")),
    (True, None),
])
def test_a_wave_marked_allow_disruption_passes_a_disruptive_preview(allow, stopped):
    fleet, clock = make_fleet(bake_s=0, rest_disruption=allow), Clock()
    driver = FakeDriver(clock, previews={"aws-dev": [PlannedStep("replace", NODE_GROUP, "urn:x::gpu")]})
    final, _ = go(fleet, rollout.start(fleet, None, False), driver, clock)
    assert final.stopped == stopped and final.complete is (stopped is None)
    assert ((0, "up", "aws-dev") in driver.events) is allow


def test_without_the_preview_gate_a_disruptive_preview_goes_ahead():
    fleet, clock = make_fleet(bake_s=0, canary_gates=("verify",)), Clock()
    steps = [PlannedStep("replace", NODE_GROUP, "urn:x::gpu-a")]
    driver = FakeDriver(clock, previews={"existing": steps})
    final, _ = go(fleet, rollout.start(fleet, None, False), driver, clock)
    assert driver.events[:4] == stack_steps("existing", 0) and final.complete


def test_without_the_verify_gate_verify_does_not_run():
    fleet, clock = make_fleet(bake_s=0, canary_gates=("preview",)), Clock()
    driver = FakeDriver(clock)
    final, _ = go(fleet, rollout.start(fleet, None, False), driver, clock, verify=fake_verify(driver, {"existing": 1}))
    assert driver.events[:3] == stack_steps("existing", 0, verify=False)
    assert driver.events[3] == (0, "refresh", "aws-dev")
    assert final.stacks["existing"] == StackRecord("2.0", True, 41) and final.complete


@pytest.mark.parametrize("steps, allow, problem", [
    ([], False, None),
    ([PlannedStep("update", NODE_GROUP, "urn:x::a"), PlannedStep("create", NODE_GROUP, "urn:x::b")], False, None),
    ([PlannedStep("delete", CONFIG_MAP, "urn:x::cm"), PlannedStep("replace", "kubernetes:apps/v1:Deployment",
                                                                     "urn:x::d")], False, None),
    ([PlannedStep("replace", NODE_GROUP, "urn:x::gpu")], True, None),
    ([PlannedStep("create-replacement", "gcp:container/nodePool:NodePool", "urn:x::gpu")], False,
     "the preview would create-replacement node pool gpu (gcp:container/nodePool:NodePool); the wave does not "
     "allow disruption (allowDisruption)"),
    ([PlannedStep("delete", "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "urn:x::h100")], False,
     "the preview would delete kueue h100 (kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor); the wave does not "
     "allow disruption (allowDisruption)"),
    ([PlannedStep("replace", "aws:eks/cluster:Cluster", "urn:x::eks")], False,
     "the preview would replace control plane eks (aws:eks/cluster:Cluster); the wave does not allow disruption "
     "(allowDisruption)"),
])
def test_preview_gate(steps, allow, problem):
    assert rollout.preview_problem(steps, allow) == problem


@pytest.mark.parametrize("code, problem", [
    (0, None), (1, "gpu-platform verify exited 1: a check failed"),
    (2, "gpu-platform verify exited 2: bad usage, configuration or kubeconfig"),
    (130, "gpu-platform verify exited 130: interrupted"), (7, "gpu-platform verify exited 7: unexpected exit code")])
def test_verify_gate(code, problem):
    assert rollout.verify_problem(code) == problem


def test_preflight_selects_every_pending_stack_and_names_those_that_fail():
    fleet, clock = make_fleet(), Clock()
    driver = FakeDriver(clock, fail={("gcp-dev", "select"): "no stack named 'gcp-dev' found"})
    recorded = RolloutState("reference", "2.0", rollout.layout(fleet), {"existing": StackRecord("2.0", True, 1)})
    assert rollout.preflight(fleet, recorded, driver) == ["gcp-dev: no stack named 'gcp-dev' found"]
    assert [e[1:] for e in driver.events] == [("select", "aws-dev"), ("select", "gcp-dev")]


# ------------------------------------------------------------------------------------------------- state


def json_round_trip(value: RolloutState) -> RolloutState:
    return state.from_json(json.loads(json.dumps(state.to_json(value))), "state.json")


def test_the_state_document():
    recorded = RolloutState("reference", "2.0", (("existing",), ("aws-dev", "gcp-dev")),
                            {"existing": StackRecord("2.0", True, 41), "aws-dev": StackRecord("1.9", False, None)},
                            Stop("rest", "aws-dev", "up", "boom"), Bake("canary", 12.5), False)
    assert state.to_json(recorded) == {
        "format": 1, "fleet": "reference", "release": "2.0", "waves": [["existing"], ["aws-dev", "gcp-dev"]],
        "stacks": {"aws-dev": {"release": "1.9", "passed": False, "update": None},
                   "existing": {"release": "2.0", "passed": True, "update": 41}},
        "stopped": {"wave": "rest", "stack": "aws-dev", "step": "up", "reason": "boom"},
        "bake": {"wave": "canary", "until": 12.5}, "complete": False}
    assert json_round_trip(recorded) == recorded


def test_save_and_load(tmp_path):
    path = tmp_path / "deep" / "state.json"
    assert state.load(path) is None
    recorded = RolloutState("reference", "2.0", (("existing",),), {"existing": StackRecord("2.0", True, 3)},
                            complete=True)
    state.save(recorded, path)
    assert state.load(path) == recorded
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.json"]


@pytest.mark.parametrize("text, message", [
    ('{"format": 2}', "state.json: format: not a fleet state of format 1"),
    ('{"format": 1}', "state.json: not a fleet state file (KeyError: 'fleet')"),
    ("[]", "state.json: not a fleet state file (AttributeError: 'list' object has no attribute 'get')"),
])
def test_a_bad_state_file(tmp_path, text, message):
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(FleetError) as err:
        state.load(path)
    assert str(err.value) == message.replace("state.json", str(path), 1)
