"""The fleet file (`gpu_platform.fleet.fleet_file`): what each key becomes, and the one-line error of bad input,
naming the file and the key path, before anything runs (``gpu-platform fleet ...`` exits 2)."""

from pathlib import Path

import pytest
import yaml

from gpu_platform import __version__, cli, verify
from gpu_platform.errors import ConfigError
from gpu_platform.fleet.fleet_file import (
    FleetError,
    FleetStack,
    VerifySettings,
    Wave,
    load_fleet,
    parse_duration,
    parse_fleet,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fleet" / "fleet.yaml"
STACK_FILES = {name: Path(f"/p/stacks/Pulumi.{name}.yaml") for name in ("existing", "aws-dev", "gcp-dev")}
CHECKS = tuple(verify.CHECKS)


def parse(document: dict):
    return parse_fleet(document, Path("/p/fleet.yaml"), Path("/p"), STACK_FILES, "9.9.9", CHECKS)


def refused(document: dict) -> str:
    with pytest.raises(ConfigError) as err:
        parse(document)
    return str(err.value)


def test_the_example_fleet_file():
    fleet = load_fleet(EXAMPLE)
    stacks = ROOT / "stacks"
    assert fleet.name == "reference" and fleet.release == __version__ and fleet.source == EXAMPLE
    assert fleet.project_dir == ROOT
    assert fleet.waves == (
        Wave("canary", (FleetStack("existing", stacks / "Pulumi.existing.yaml", "existing", None, "onprem-gpu"),),
             False, 1800.0, ("preview", "verify"), VerifySettings(("inference",), 600.0)),
        Wave("clouds", (FleetStack("aws-dev", stacks / "Pulumi.aws-dev.yaml", "aws-dev"),
                        FleetStack("gcp-dev", stacks / "Pulumi.gcp-dev.yaml", "acme/gpu-platform/gcp-dev",
                                   "~/.kube/gcp-dev", None)),
             True, 0.0, ("preview", "verify"), VerifySettings((), 300.0)),
    )
    assert [m.stack for m in fleet.stacks] == ["existing", "aws-dev", "gcp-dev"]
    assert fleet.wave_of("gcp-dev").name == "clouds"


def test_defaults_and_every_key():
    fleet = parse({"name": "prod", "release": "2026.12",
                   "waves": [{"name": "one", "stacks": ["existing"]},
                             {"name": "two", "stacks": [{"stack": "aws-dev"}], "gates": ["verify", "preview"],
                              "allowDisruption": True, "bake": "1h30m"},
                             {"name": "three", "stacks": ["gcp-dev"], "gates": []}]})
    assert (fleet.name, fleet.release, fleet.project_dir) == ("prod", "2026.12", Path("/p"))
    one, two, three = fleet.waves
    assert one == Wave("one", (FleetStack("existing", STACK_FILES["existing"], "existing"),))
    assert (one.allow_disruption, one.bake_s, one.gates, one.verify) == (False, 0.0, ("preview", "verify"),
                                                                         VerifySettings((), 300.0))
    assert (two.allow_disruption, two.bake_s, two.gates) == (True, 5400.0, ("preview", "verify"))
    assert three.gates == ()


def test_name_defaults_to_the_file_stem_and_release_to_the_package_version():
    fleet = parse({"waves": [{"name": "all", "stacks": ["existing"]}]})
    assert (fleet.name, fleet.release) == ("fleet", "9.9.9")


@pytest.mark.parametrize("value, seconds", [
    (0, 0.0), (90, 90.0), (2.5, 2.5), ("45s", 45.0), ("30m", 1800.0), ("1h", 3600.0), ("1h30m", 5400.0),
    ("1h0m15s", 3615.0), ("24h", 86400.0)])
def test_bake_durations(value, seconds):
    assert parse_duration(value, "waves[0].bake") == seconds


@pytest.mark.parametrize("value, message", [
    ("10x", "waves[0].bake: '10x' is not a duration like 30m, 1h30m or 45s"),
    ("", "waves[0].bake: '' is not a duration like 30m, 1h30m or 45s"),
    ("m30", "waves[0].bake: 'm30' is not a duration like 30m, 1h30m or 45s"),
    (-5, "waves[0].bake: must not be negative, got -5"),
    (True, "waves[0].bake: must be a duration like 30m, 1h30m or 45s, got True"),
    ([1], "waves[0].bake: must be a duration like 30m, 1h30m or 45s, got [1]"),
    ("25h", "waves[0].bake: '25h' is longer than 24h (the rollout process waits it out)"),
])
def test_bad_bake_times(value, message):
    with pytest.raises(ConfigError) as err:
        parse_duration(value, "waves[0].bake")
    assert str(err.value) == message


@pytest.mark.parametrize("document, message", [
    ({"waves": [{"name": "a", "stacks": ["existing"]}], "colour": 1}, "colour: unknown key"),
    ({"waves": [{"name": "a", "stacks": ["existing"], "bakee": "1m"}]}, "waves[0].bakee: unknown key; did you mean "
                                                                        "'bake'?"),
    ({"waves": [{"name": "a", "stacks": [{"stack": "existing", "kube": "x"}]}]},
     "waves[0].stacks[0].kube: unknown key"),
    ({"waves": [{"name": "a", "stacks": ["existing"], "verify": {"skipp": []}}]},
     "waves[0].verify.skipp: unknown key; did you mean 'skip'?"),
    ({"waves": [{"name": "a", "stacks": ["existing"]}, {"name": "b", "stacks": ["aws-dev", "existing"]}]},
     "waves[1].stacks[1]: stack existing is already in wave a (a stack rolls out in one wave)"),
    ({"waves": [{"name": "a", "stacks": ["existing"]}, {"name": "b", "stacks": []}]},
     "waves[1].stacks: a wave needs at least one stack"),
    ({"waves": [{"name": "a"}]}, "waves[0].stacks: is required"),
    ({"waves": []}, "waves: must have at least one entry"),
    ({}, "waves: is required"),
    ({"waves": [{"name": "a", "stacks": ["existing"], "bake": "soon"}]},
     "waves[0].bake: 'soon' is not a duration like 30m, 1h30m or 45s"),
    ({"waves": [{"name": "a", "stacks": ["existing"]},
                {"name": "b", "stacks": ["aws-dev"], "gates": ["verify", "smoke"]}]},
     "waves[1].gates[1]: unknown gate: 'smoke' is not one of preview, verify"),
    ({"waves": [{"name": "a", "stacks": ["existing"], "gates": ["verify", "verify"]}]},
     "waves[0].gates: names a gate twice"),
    ({"waves": [{"name": "a", "stacks": ["existing"], "gates": ["preview"], "verify": {"skip": ["kueue"]}}]},
     "waves[0].verify: set, but the wave has no verify gate (add verify to gates)"),
    ({"waves": [{"name": "a", "stacks": ["existing"], "verify": {"skip": ["kueue", "zzz"]}}]},
     "waves[0].verify.skip[1]: 'zzz' is not one of " + ", ".join(CHECKS)),
    ({"waves": [{"name": "a", "stacks": ["existing"], "verify": {"timeoutPerCheck": 0}}]},
     "waves[0].verify.timeoutPerCheck: must be >= 1, got 0"),
    ({"waves": [{"name": "a", "stacks": ["existing"], "allowDisruption": "maybe"}]},
     "waves[0].allowDisruption: must be true or false, got 'maybe'"),
    ({"waves": [{"name": "a", "stacks": ["existng"]}]},
     "waves[0].stacks[0]: no stack file Pulumi.existng.yaml in the project; did you mean 'existing'?"),
    ({"waves": [{"name": "a", "stacks": [{"stack": "gcp-devv"}]}]},
     "waves[0].stacks[0].stack: no stack file Pulumi.gcp-devv.yaml in the project; did you mean 'gcp-dev'?"),
    ({"waves": [{"name": "a", "stacks": [{"stack": "aws-dev", "pulumiStack": "acme/gpu-platform/prod"}]}]},
     "waves[0].stacks[0].pulumiStack: 'acme/gpu-platform/prod' reads Pulumi.prod.yaml, not the stack file "
     "Pulumi.aws-dev.yaml"),
    ({"waves": [{"name": "a", "stacks": [{"stack": "aws-dev", "pulumiStack": "acme/x/aws-dev"},
                                         {"stack": "existing"}]},
                {"name": "a", "stacks": ["gcp-dev"]}]},
     "waves[1].name: 'a' is already the name of waves[0]"),
    ({"waves": [{"stacks": ["existing"]}]}, "waves[0].name: is required"),
    ({"waves": ["canary"]}, "waves[0]: must be a mapping, got str"),
    ({"name": "../x", "waves": [{"name": "a", "stacks": ["existing"]}]},
     "name: '../x' is not a fleet name (letters, digits, '.', '_' and '-', starting with a letter or digit): it names "
     "the folder build/fleet/<name>"),
    (["waves"], "must be a mapping, got list"),
])
def test_bad_input_is_one_line_naming_the_key(document, message):
    assert refused(document) == message


def test_load_names_the_file_and_the_cli_exits_2(tmp_path, capsys):
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(yaml.safe_dump({"project": str(ROOT), "waves": [
        {"name": "canary", "stacks": ["existing"], "bake": "-1m"}]}))
    with pytest.raises(FleetError) as err:
        load_fleet(fleet_file)
    assert str(err.value) == f"{fleet_file}: waves[0].bake: '-1m' is not a duration like 30m, 1h30m or 45s"
    for command in ("plan", "up"):
        assert cli.main(["fleet", command, str(fleet_file), "--out" if command == "plan" else "--state",
                         str(tmp_path / "out")]) == 2
        captured = capsys.readouterr()
        assert captured.err == f"error: {err.value}\n" and captured.out == ""
    assert not (tmp_path / "out").exists()


def test_project_key_points_at_the_pulumi_project(tmp_path):
    fleet_file = tmp_path / "elsewhere" / "fleet.yaml"
    fleet_file.parent.mkdir()
    fleet_file.write_text(yaml.safe_dump({"project": str(ROOT), "waves": [{"name": "a", "stacks": ["aws-dev"]}]}))
    fleet = load_fleet(fleet_file)
    assert fleet.project_dir == ROOT
    assert fleet.stacks[0].stack_file == ROOT / "stacks" / "Pulumi.aws-dev.yaml"


@pytest.mark.parametrize("project, message", [
    ("nowhere", "project: no Pulumi.yaml in {tmp}/nowhere"),
    (3, "project: must be a path, got int"),
])
def test_a_bad_project_key(tmp_path, project, message):
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(yaml.safe_dump({"project": project, "waves": [{"name": "a", "stacks": ["aws-dev"]}]}))
    with pytest.raises(FleetError) as err:
        load_fleet(fleet_file)
    assert str(err.value) == f"{fleet_file}: " + message.format(tmp=tmp_path)


def test_a_file_that_is_not_yaml(tmp_path):
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text("waves: [\n")
    with pytest.raises(FleetError) as err:
        load_fleet(fleet_file)
    assert str(err.value).startswith(f"{fleet_file}: cannot read the fleet file: while parsing a flow")
