"""The public mock harness records what the engine would receive."""

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
