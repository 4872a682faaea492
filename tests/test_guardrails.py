"""The GPU guardrails (gpu_platform.guardrails) over offline plans: every reference stack passes every rule, every
rule fails its violating plans (tests/guardrail_cases.py), and ``gpu-platform policy check`` / ``plan`` report them.
The same rules through the policy pack and pulumi-policy: tests/test_policy_pack.py."""

import copy
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from conftest import planned_stack, reference_stacks, write_planned_stacks
from guardrail_cases import CASES, inputs

from gpu_platform import cli, plan
from gpu_platform.guardrails import Violation, check_plan_dir, images, plan_check, pool_view, rules

STACKS = reference_stacks()


@pytest.fixture(scope="module")
def plan_root(tmp_path_factory) -> Path:
    """``gpu-platform plan --out DIR`` of every reference stack."""
    return write_planned_stacks(tmp_path_factory.mktemp("plan"))


def document(plan_root: Path, stack: str) -> dict:
    return json.loads((plan_root / stack / "plan.json").read_text())


@pytest.mark.parametrize("stack", STACKS)
def test_every_reference_stack_passes_every_rule(plan_root, stack):
    assert check_plan_dir(plan_root / stack) == []


def test_the_plan_records_the_settings_its_stack_implies(plan_root):
    """The existing stack declares its NetworkPolicy engine (networkPolicyEnforced): its plan.json says so, the
    other stacks' plans carry no policyConfig."""
    recorded = document(plan_root, "existing")["policyConfig"]
    assert recorded == {"network-policies-enforced": {"engineOutsideStack": True}}
    assert plan_check.policy_config_of(planned_stack("existing").config) == recorded
    assert [s for s in STACKS if "policyConfig" in document(plan_root, s)] == ["existing"]


def test_every_rule_has_violating_cases_and_every_case_is_a_reference_stack():
    assert {case.rule for case in CASES} == {rule.name for rule in rules.RULES}
    assert {case.stack for case in CASES} <= set(STACKS)
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule}-{c.id}")
def test_a_violating_plan_fails_its_rule_naming_the_resource(plan_root, case):
    broken = case.break_plan(document(plan_root, case.stack))
    config = case.policy_config if case.policy_config is not None else {}
    found = plan_check.check_document(broken, config)
    assert [v for v in found if v.rule != case.rule] == []  # nothing else broke
    assert case.resource in {v.resource for v in found if v.rule == case.rule}, found


def test_the_existing_stack_fails_without_its_declared_engine(plan_root):
    undeclared = {k: v for k, v in document(plan_root, "existing").items() if k != "policyConfig"}
    [violation] = plan_check.check_document(undeclared)
    assert violation.rule == "network-policies-enforced"
    assert plan_check.check_document(undeclared, {"network-policies-enforced": {"engineOutsideStack": True}}) == []
    # an explicit setting overrides what the plan records
    [violation] = check_plan_dir(plan_root / "existing", {"network-policies-enforced": {"engineOutsideStack": False}})
    assert violation.rule == "network-policies-enforced"


def test_a_disabled_rule_is_not_run(plan_root):
    assert check_plan_dir(plan_root / "existing", {"network-policies-enforced": "disabled"}) == []
    assert check_plan_dir(plan_root / "existing",
                          {"network-policies-enforced": {"enforcementLevel": "disabled"}}) == []


def test_image_digest_exemptions_are_configurable(plan_root):
    broken = next(c for c in CASES if c.id == "image-by-tag").break_plan(document(plan_root, "aws-dev"))
    exempt = {"image-digest": {"exemptRepositories": ["docker.io/library/busybox"]}}
    assert plan_check.check_document(broken, exempt) == []


# ---------------------------------------------------------------------------------------------------------
# The readers


@pytest.mark.parametrize(("text", "taint"), [
    ("nvidia.com/gpu=present:NoSchedule", pool_view.Taint("nvidia.com/gpu", "present", "NoSchedule")),
    ("dedicated:NoExecute", pool_view.Taint("dedicated", "", "NoExecute")),
])
def test_taints_in_kubelet_and_aks_spelling(text, taint):
    assert pool_view.parse_taint(text) == taint


@pytest.mark.parametrize(("image", "repository", "pinned"), [
    ("ghcr.io/gpu-platform/gpu-platform:0.1.0", "ghcr.io/gpu-platform/gpu-platform", False),
    ("localhost:5000/app", "localhost:5000/app", False),
    ("nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3@sha256:" + "a" * 64, "nvcr.io/nvidia/k8s/dcgm-exporter", True),
])
def test_image_references(image, repository, pinned):
    assert images.repository(image) == repository
    assert images.pinned(image) is pinned


class _ReadOnlyMapping(Mapping):
    """Props as pulumi-policy hands them to a policy: Mappings and Sequences, never dicts and lists."""

    def __init__(self, target: dict):
        self._target = {k: _read_only(v) for k, v in target.items()}

    def __getitem__(self, key):
        return self._target[key]

    def __iter__(self):
        return iter(self._target)

    def __len__(self):
        return len(self._target)


class _ReadOnlySequence(Sequence):
    def __init__(self, target: list):
        self._target = [_read_only(v) for v in target]

    def __getitem__(self, index):
        return self._target[index]

    def __len__(self):
        return len(self._target)


def _read_only(value):
    if isinstance(value, dict):
        return _ReadOnlyMapping(value)
    if isinstance(value, list):
        return _ReadOnlySequence(value)
    return value


@pytest.mark.parametrize("name", ["aws-dev-h100-train-nodes", "aws-dev-team-product-ns",
                                  "aws-dev-inference-deployment"])
def test_resource_rules_read_proxies_as_they_read_json(plan_root, name):
    resource = next(r for r in document(plan_root, "aws-dev")["resources"] if r["name"] == name)
    broken = copy.deepcopy(resource["inputs"])
    broken.pop("taints", None)
    broken.get("metadata", {}).get("labels", {}).pop("pod-security.kubernetes.io/enforce", None)
    for container in broken.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        container["image"] = "busybox:1"
    for rule in rules.RULES:
        if rule.check_resource is not None:
            assert rule.check_resource(resource["type"], _read_only(broken), _ReadOnlyMapping({})) == \
                rule.check_resource(resource["type"], broken, {})
    assert any(rule.check_resource(resource["type"], _read_only(broken), {}) for rule in rules.RULES
               if rule.check_resource is not None)


def test_stack_rules_read_proxies_as_they_read_json(plan_root):
    broken = next(c for c in CASES if c.id == "efa-two-zones").break_plan(document(plan_root, "aws-dev"))
    resources = [plan_check._with_outputs(r) for r in broken["resources"] if r["custom"]]
    proxied = [rules.Resource(r.type, r.name, _read_only(dict(r.props)), r.urn) for r in resources]
    for rule in rules.RULES:
        if rule.check_stack is not None:
            assert [(r.name, m) for r, m in rule.check_stack(proxied, {})] == \
                [(r.name, m) for r, m in rule.check_stack(resources, {})]


# ---------------------------------------------------------------------------------------------------------
# gpu-platform policy check


def _untainted_copy(plan_root: Path, tmp_path: Path) -> Path:
    """aws-dev's plan whose GPU node group h100-train lost its taint."""
    broken = document(plan_root, "aws-dev")
    del inputs(broken, "aws-dev-h100-train-nodes")["taints"]
    target = tmp_path / "aws-dev"
    target.mkdir()
    (target / "plan.json").write_text(json.dumps(broken))
    return target


def test_check_exits_1_naming_the_node_group_that_lost_its_taint(plan_root, tmp_path, capsys):
    assert cli.main(["policy", "check", str(_untainted_copy(plan_root, tmp_path))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("aws-dev-h100-train-nodes: gpu-pool-taint: ")


def test_the_command_line_exits_1_naming_the_node_group(plan_root, tmp_path):
    """The same through the ``gpu-platform`` entry point in a process of its own."""
    result = subprocess.run([sys.executable, "-m", "gpu_platform.cli", "policy", "check",
                             str(_untainted_copy(plan_root, tmp_path))], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("aws-dev-h100-train-nodes: gpu-pool-taint: ")
    assert result.stderr == "1 violation (1 plan, 7 policies)\n"


def test_check_exits_0_on_a_clean_plan(plan_root, capsys):
    assert cli.main(["policy", "check", str(plan_root / "aws-dev")]) == 0
    assert cli.main(["policy", "check", str(plan_root / "aws-dev" / "plan.json")]) == 0
    assert capsys.readouterr().out.startswith("no violations (1 plan, 7 policies)")


def test_check_of_a_plan_root_names_each_stack(plan_root, tmp_path, capsys):
    config = tmp_path / "policy-config.json"
    assert cli.main(["policy", "check", str(plan_root)]) == 0
    config.write_text(json.dumps({"network-policies-enforced": {"engineOutsideStack": False}}))
    assert cli.main(["policy", "check", str(plan_root), "--policy-config", str(config)]) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith(
        "existing: existing-health-allow-api-server: network-policies-enforced: ")


@pytest.mark.parametrize("content", [None, "not json", json.dumps({"stack": "x"}), json.dumps([1])])
def test_check_exits_2_on_bad_input(tmp_path, capsys, content):
    if content is not None:
        (tmp_path / "plan.json").write_text(content)
    assert cli.main(["policy", "check", str(tmp_path / ("" if content is not None else "missing"))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.splitlines()) == 1


def test_check_exits_2_on_an_unknown_policy_in_the_configuration(plan_root, tmp_path, capsys):
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"gpu-taint": "disabled"}))
    assert cli.main(["policy", "check", str(plan_root / "aws-dev"), "--policy-config", str(config)]) == 2
    assert "no policy named gpu-taint" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------
# gpu-platform plan


def test_the_plan_summary_prints_violations_and_reference_stacks_have_none():
    clean = planned_stack("aws-dev")
    assert "POLICY" not in plan.summary(clean)
    broken = copy.deepcopy(clean)
    node_group = next(r for r in broken.recording.registrations if r.name == "aws-dev-h100-train-nodes")
    del node_group.inputs["taints"]
    assert [line for line in plan.summary(broken).splitlines() if "POLICY" in line] == [
        f"  POLICY {v.line()}" for v in plan_check.check_document(plan.plan_json(broken))]
    assert "  POLICY aws-dev-h100-train-nodes: gpu-pool-taint: " in plan.summary(broken)


def test_the_existing_stack_plans_clean_because_its_configuration_declares_its_engine():
    assert "POLICY" not in plan.summary(planned_stack("existing"))


def test_violation_is_the_contract_fleet_codes_against():
    violation = Violation(resource="r", rule="gpu-pool-taint", message="m")
    assert (violation.resource, violation.rule, violation.message) == ("r", "gpu-pool-taint", "m")
    with pytest.raises(AttributeError):
        violation.rule = "x"  # frozen
