"""`gpu-platform plan` over every reference stack: valid manifests, deterministic files, redacted secrets."""

import json

import pytest
import yaml
from conftest import planned_stack, write_planned_stacks

from gpu_platform import cli, plan

STACKS = sorted(plan.discover_stacks())


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """Each reference stack planned once into a shared directory (the CLI path users take)."""
    out = tmp_path_factory.mktemp("plan")
    assert cli.main(["plan", "--out", str(out)]) == cli.EXIT_OK
    return out


def test_reference_stacks_exist():
    assert "existing" in STACKS


@pytest.mark.parametrize("stack", STACKS)
def test_stack_plans_with_valid_manifests(stack):
    result = planned_stack(stack)
    assert result.errors == []
    assert result.manifests, "a stack creates Kubernetes objects"
    for obj in result.manifests:
        assert obj["metadata"]["name"]


@pytest.mark.parametrize("stack", STACKS)
def test_plan_json_follows_the_contract(planned, stack):
    document = json.loads((planned / stack / "plan.json").read_text())
    assert document["stack"] == stack
    assert document["resources"], "resources are recorded"
    for resource in document["resources"]:
        # ``aliases`` only on a custom resource that moved: the former URNs ``gpu-platform diff`` pairs it with.
        assert set(resource) - {"aliases"} == {"urn", "type", "name", "parent", "custom", "protect", "inputs"}
        assert "aliases" not in resource or (resource["custom"] and resource["aliases"]
                                             and all(a.startswith("urn:pulumi:") for a in resource["aliases"]))
    urns = [r["urn"] for r in document["resources"]]
    assert urns == sorted(urns)
    platform = [r for r in document["resources"] if r["type"] == "gpuplatform:index:GpuPlatform"]
    assert len(platform) == 1 and platform[0]["custom"] is False
    docs = list(yaml.safe_load_all((planned / stack / "manifests.yaml").read_text()))
    assert all({"apiVersion", "kind", "metadata"} <= set(d) for d in docs)


def test_two_runs_are_byte_identical(planned, tmp_path):
    # The second run: every stack planned again (planned_stack, shared with the other test files) and written.
    write_planned_stacks(tmp_path)
    for stack in STACKS:
        for name in ("plan.json", "manifests.yaml"):
            assert (tmp_path / stack / name).read_bytes() == (planned / stack / name).read_bytes(), (stack, name)


def test_secrets_in_stack_files_are_redacted_not_decrypted(planned):
    text = (planned / "existing" / "plan.json").read_text()
    assert "b3BhcXVlLWNpcGhlcnRleHQ=" not in text


def test_summary_lists_gpu_capacity_per_pool(capsys, tmp_path):
    assert cli.main(["plan", "existing", "--out", str(tmp_path)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "stack existing (existing, Kubernetes 1.36, GPU software operator)" in out
    pool_lines = [line.split() for line in out.splitlines() if line.strip().startswith(("a100-infer", "h100-train"))]
    assert pool_lines[0][:6] == ["a100-infer", "-", "a100-80gb", "4", "2-2", "8"]
    assert pool_lines[1][:6] == ["h100-train", "-", "h100", "8", "4-4", "32"]


def test_config_flag_plans_one_file(tmp_path, capsys):
    source = plan.discover_stacks()["existing"]
    copy = tmp_path / "Pulumi.copy.yaml"
    copy.write_text(source.read_text())
    assert cli.main(["plan", "--config", str(copy), "--out", str(tmp_path / "out")]) == cli.EXIT_OK
    assert json.loads((tmp_path / "out" / "copy" / "plan.json").read_text())["stack"] == "copy"


def test_invalid_manifest_fails_the_plan(monkeypatch, tmp_path, capsys):
    def broken(recording):
        return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "bogus": 1}]

    monkeypatch.setattr(plan, "render_manifests", broken)
    assert cli.main(["plan", "existing", "--out", str(tmp_path)]) == cli.EXIT_INVALID
    assert "INVALID Namespace/x: (root): Additional properties are not allowed ('bogus' was unexpected)" in (
        capsys.readouterr().out)
