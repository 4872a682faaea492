"""`gpu-platform` from any install: the project is found from the working directory, `--version`."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_platform import __version__, cli, plan

ROOT = Path(__file__).resolve().parents[1]


def make_project(root: Path, name: str = "my-gpus", stack_dir: str = "config") -> Path:
    """A user's project elsewhere: Pulumi.yaml with stackConfigDir, one stack file, no program of its own."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\nstackConfigDir: {stack_dir}\n")
    (root / stack_dir).mkdir()
    shutil.copy(ROOT / "stacks" / "Pulumi.existing.yaml", root / stack_dir / "Pulumi.existing.yaml")
    return root


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpu-platform {__version__}"


def test_version_from_the_console_script():
    script = Path(sys.executable).with_name("gpu-platform")
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == f"gpu-platform {__version__}"


def test_plan_finds_the_project_from_a_subdirectory(tmp_path, monkeypatch, capsys):
    project = make_project(tmp_path / "infra")
    (project / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(project / "src" / "deep")
    assert cli.main(["plan", "--out", str(tmp_path / "out")]) == cli.EXIT_OK
    document = json.loads((tmp_path / "out" / "existing" / "plan.json").read_text())
    assert document["stack"] == "existing"
    assert all("::my-gpus::" in r["urn"] for r in document["resources"]), "the project's own name is used"
    assert "stack existing" in capsys.readouterr().out


def test_a_named_stack_is_looked_up_in_the_stack_config_dir(tmp_path, monkeypatch, capsys):
    project = make_project(tmp_path / "infra")
    monkeypatch.chdir(project)
    assert cli.main(["plan", "aws-dev", "--out", str(tmp_path / "out")]) == cli.EXIT_CONFIG
    err = capsys.readouterr().err
    assert err.startswith("error: aws-dev: no stack file config/Pulumi.aws-dev.yaml")
    assert len(err.strip().splitlines()) == 1


def test_outside_a_project_one_line_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["plan", "--out", str(tmp_path / "out")]) == cli.EXIT_CONFIG
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("error: not inside a Pulumi project: no Pulumi.yaml in")
    assert not (tmp_path / "out").exists()


def test_config_file_works_outside_a_project(tmp_path, monkeypatch):
    shutil.copy(ROOT / "stacks" / "Pulumi.existing.yaml", tmp_path / "Pulumi.existing.yaml")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["plan", "--config", "Pulumi.existing.yaml", "--out", "out"]) == cli.EXIT_OK
    assert (tmp_path / "out" / "existing" / "manifests.yaml").stat().st_size > 0


def test_the_project_program_is_its_main(tmp_path, monkeypatch):
    project = make_project(tmp_path / "infra")
    (project / "Pulumi.yaml").write_text("name: my-gpus\nruntime: python\nstackConfigDir: config\nmain: app/\n")
    (project / "app").mkdir()
    (project / "app" / "helper.py").write_text("MARK = 'from-the-program'\n")
    (project / "app" / "__main__.py").write_text(
        "import pulumi\nfrom helper import MARK\nfrom gpu_platform.platform import main\n"
        "main()\npulumi.export('mark', MARK)\n")
    found = plan.find_project(project / "config")
    assert (found.name, found.stacks_dir, found.program) == ("my-gpus", project / "config", project / "app")
    result = plan.plan_stack("existing", found.stacks_dir / "Pulumi.existing.yaml")
    assert result.recording.exports["mark"] == "from-the-program"


def test_the_repository_project_is_found_from_its_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    project = plan.find_project()
    assert (project.name, project.stacks_dir) == ("gpu-platform", ROOT / "stacks")
    assert "aws-dev" in plan.discover_stacks()
