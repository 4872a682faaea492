"""The GPU policy pack (policy/) loaded and served by pulumi-policy's own API, as the Pulumi CLI runs it.

pulumi-policy pins protobuf 5.29 and the project's environment has protobuf 6 (constraints.txt), so the pack runs in
an environment of its own, .venv/tools/policy (the Makefile builds it from policy/requirements.txt, the list the
Pulumi CLI installs into the pack's venv). tests/policy_pack_client.py runs there: it starts the pack with
``python -u -m pulumi.policy`` (what the CLI's ``pulumi-analyzer-policy-python`` runs) and calls its Analyzer gRPC
service with every reference stack's plan and every violating plan of tests/guardrail_cases.py. The Pulumi CLI
itself is not on the build machines (docs/policy.md).
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import planned_stack, reference_stacks, write_planned_stacks
from guardrail_cases import CASES

from gpu_platform.guardrails import plan_check, rules

ROOT = Path(__file__).resolve().parents[1]
PACK = ROOT / "policy"
PYTHON = ROOT / ".venv" / "tools" / "policy" / "bin" / "python"
CLIENT = ROOT / "tests" / "policy_pack_client.py"
STACKS = reference_stacks()


def _request(document: dict, config: dict) -> dict:
    """What the engine sends the pack for a plan: each resource's inputs (Analyze) and outputs (AnalyzeStack)."""
    resources = [r for r in document["resources"] if r["custom"]]
    return {"config": config, "resources": [
        {"type": r["type"], "name": r["name"], "urn": r["urn"], "inputs": r["inputs"] or {},
         "outputs": dict(plan_check._with_outputs(r).props)} for r in resources]}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The pack's answers: one client run over every reference stack, then every violating case."""
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON.relative_to(ROOT)} is missing: `make test` builds it (Makefile, POLICY_VENV)")
    plans = write_planned_stacks(tmp_path_factory.mktemp("plan"))
    work = tmp_path_factory.mktemp("requests")
    documents = {s: json.loads((plans / s / "plan.json").read_text()) for s in STACKS}
    requests = [_request(documents[s], plan_check.policy_config_of(planned_stack(s).config)) for s in STACKS]
    requests += [_request(c.break_plan(documents[c.stack]), c.policy_config or {}) for c in CASES]
    files = []
    for i, request in enumerate(requests):
        files.append(work / f"{i}.json")
        files[-1].write_text(json.dumps(request))
    # The checkout's library first: the tools environment may have been built from another checkout.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "LANG": "C.UTF-8",
           "PYTHONPATH": str(ROOT / "components")}
    result = subprocess.run([str(PYTHON), str(CLIENT), str(PACK), *map(str, files)], cwd=work, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    answer = json.loads(result.stdout)
    urns = [{r["urn"]: r["name"] for r in request["resources"]} for request in requests]
    for result_, names in zip(answer["results"], urns, strict=True):
        for d in result_["diagnostics"]:
            d["resource"] = d["resource"] or names.get(d["urn"], "")
    answer["stacks"] = dict(zip(STACKS, answer["results"][:len(STACKS)], strict=True))
    answer["cases"] = dict(zip((c.id for c in CASES), answer["results"][len(STACKS):], strict=True))
    return answer


def test_the_pack_is_the_pulumi_policy_pinned_in_its_requirements(served):
    pins = dict(re.findall(r"^([a-z-]+)==(\S+)$", (PACK / "requirements.txt").read_text(), re.MULTILINE))
    assert served["sdkVersion"] == pins["pulumi-policy"]
    assert served["pack"] == "gpu-platform-guardrails"


def test_the_pack_serves_every_rule_at_its_level(served):
    assert served["policies"] == [
        {"name": r.name, "description": r.description, "enforcementLevel": r.enforcement_level,
         "type": "resource" if r.check_resource else "stack"} for r in rules.RULES]


@pytest.mark.parametrize("stack", STACKS)
def test_every_reference_stack_passes_the_pack(served, stack):
    assert served["stacks"][stack]["diagnostics"] == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule}-{c.id}")
def test_the_pack_fails_each_violating_plan_on_its_rule(served, case):
    diagnostics = served["cases"][case.id]["diagnostics"]
    assert {d["policy"] for d in diagnostics} == {case.rule}
    assert case.resource in {d["resource"] for d in diagnostics}
    assert all(d["enforcementLevel"] == "mandatory" for d in diagnostics)


def test_the_pack_reports_what_the_plan_check_reports(served, tmp_path):
    """The same functions: the pack's message for a violation is the rule's description and the check's reason."""
    case = next(c for c in CASES if c.id == "eks-node-group")
    plans = write_planned_stacks(tmp_path)
    broken = case.break_plan(json.loads((plans / case.stack / "plan.json").read_text()))
    [violation] = plan_check.check_document(broken)
    [diagnostic] = served["cases"][case.id]["diagnostics"]
    description = next(r.description for r in rules.RULES if r.name == violation.rule)
    assert diagnostic["message"] == f"{description}\n{violation.message}"
