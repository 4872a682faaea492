"""The public mock harness records what the engine would receive."""

import re
import subprocess
import sys
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.testing import run_program


class Box(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("gpuplatform:index:Box", name, {}, opts)
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret", metadata={"name": "s", "namespace": "ns"},
            string_data=pulumi.Output.secret({"password": "hunter2"}), opts=pulumi.ResourceOptions(parent=self))
        self.deployment = k8s.apps.v1.Deployment(
            f"{name}-app", metadata={"name": "app"},
            spec={"replicas": 3, "selector": {"match_labels": {"app": "a"}},
                  "template": {"metadata": {"labels": {"app": "a"}},
                               "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}},
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True))
        self.register_outputs({})


def test_records_parents_flags_and_wire_form_inputs():
    rec = run_program(lambda: Box("box"))
    box = rec.one("gpuplatform:index:Box")
    assert box.custom is False
    deployment = rec.one("kubernetes:apps/v1:Deployment")
    assert deployment.parent == box.urn
    assert deployment.protect is True and deployment.retain_on_delete is True
    assert deployment.inputs["spec"]["replicas"] == 3 and isinstance(deployment.inputs["spec"]["replicas"], int)
    assert deployment.inputs["spec"]["selector"] == {"matchLabels": {"app": "a"}}
    assert [r.name for r in rec.children_of(box)] == ["box-app", "box-secret"]


def test_secrets_are_redacted_leaf_by_leaf():
    rec = run_program(lambda: Box("box"))
    assert rec.one("kubernetes:core/v1:Secret").inputs["stringData"] == {"password": "[secret]"}


def test_mocks_return_realistic_outputs():
    import pulumi_aws as aws

    seen = {}

    def program():
        role = aws.iam.Role("node", assume_role_policy="{}")
        role.arn.apply(lambda arn: seen.setdefault("arn", arn))

    run_program(program)
    assert seen["arn"] == "arn:aws:iam::123456789012:role/node"


def test_fixture_records_registrations(pulumi_mocks):
    Box("fixture")
    rec = pulumi_mocks.finish()
    assert {r.type for r in rec} == {
        "gpuplatform:index:Box", "kubernetes:core/v1:Secret", "kubernetes:apps/v1:Deployment"}


def test_exports_hold_resolved_values_with_secrets_redacted():
    def program():
        box = Box("box")
        pulumi.export("name", box.deployment.metadata.apply(lambda m: m["name"]))
        pulumi.export("nested", {"replicas": pulumi.Output.from_input(3), "plain": "x"})
        pulumi.export("password", pulumi.Output.secret("hunter2"))

    rec = run_program(program)
    assert rec.exports == {"name": "app", "nested": {"replicas": 3, "plain": "x"}, "password": "[secret]"}


def test_platform_mocks_take_extra_answers_and_record_calls():
    from gpu_platform.testing import CALLS, OUTPUTS, PlatformMocks, RecordingMocks

    mocks = PlatformMocks(outputs={"my:index:Thing": lambda n, i: {"url": f"https://{n}"}},
                          calls={"my:index:getThing": lambda a: {"id": "t-1"}})
    assert RecordingMocks is PlatformMocks
    assert set(OUTPUTS) < set(mocks.outputs) and set(CALLS) < set(mocks.answers)
    resource_id, state = mocks.new_resource(pulumi.runtime.MockResourceArgs("my:index:Thing", "t", {}, "", ""))
    assert state["url"] == "https://t" and resource_id == "t-id"
    assert mocks.call(pulumi.runtime.MockCallArgs("my:index:getThing", {}, "")) == {"id": "t-1"}
    assert mocks.calls == [("my:index:getThing", {})]


SESSION = '''
import asyncio

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.testing import PlatformMocks

LOOPS = []


def test_1_loop_before():
    LOOPS.append(asyncio.get_event_loop_policy().get_event_loop())


def test_2_harness_fixture(pulumi_mocks):
    k8s.core.v1.Namespace("a", metadata={"name": "a"})
    assert pulumi_mocks.finish().one("kubernetes:core/v1:Namespace").name == "a"


def test_3_the_loop_found_is_restored():
    loop = asyncio.get_event_loop_policy().get_event_loop()
    assert loop is LOOPS[0] and not loop.is_closed()


@pulumi.runtime.test
def test_4_plain_set_mocks_after_the_fixture():
    pulumi.runtime.set_mocks(PlatformMocks(), preview=False)
    ns = k8s.core.v1.Namespace("b", metadata={"name": "b"})
    return ns.metadata.apply(lambda m: None)
'''


def run_session(tmp_path, files: dict) -> subprocess.CompletedProcess:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "gpu_platform.testing", "-p", "no:cacheprovider",
                           "-W", "ignore::DeprecationWarning", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_fixture_restores_the_loop_so_plain_set_mocks_tests_follow_in_one_session(tmp_path):
    result = run_session(tmp_path, {"test_session.py": SESSION})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout


def test_the_examples_of_docs_testing_md_pass_in_one_session(tmp_path):
    text = (Path(__file__).resolve().parents[1] / "docs" / "testing.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert len(blocks) == 3
    result = run_session(tmp_path, {f"test_doc_{i}.py": block for i, block in enumerate(blocks)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 passed" in result.stdout
