"""Issue 36 item 4: `gpu-platform diff` and `plan --compare` judge what an upgrade disrupts, on hand-built plan
documents and on reference stacks planned in-process at two configurations."""

import copy
import inspect
import json
import re
import tempfile
from functools import cache
from pathlib import Path

import pytest
import yaml

from gpu_platform import cli, plan
from gpu_platform.upgrades import plan_diff as pd
from gpu_platform.upgrades import replacements as rp
from gpu_platform.upgrades.version_skew import control_plane_step_problem

ROOT = Path(__file__).resolve().parent.parent
NS = "gpu-platform:"


# ------------------------------------------------------------------------------------------ hand-built documents


def doc(stack="s", version="1.35", cloud="aws", resources=()):
    return {"stack": stack, "cloud": cloud, "kubernetesVersion": version, "resources": list(resources)}


def res(type_, name, inputs, urn=None):
    return {"urn": urn or f"urn:pulumi:s::p::{type_}::{name}", "type": type_, "name": name, "parent": "",
            "custom": True, "protect": False, "inputs": inputs}


def diff_docs(old, new):
    return pd.diff_plans(pd.read_plan(old, "old"), pd.read_plan(new, "new"))


NODE_GROUP = {"instanceTypes": ["p5.48xlarge"], "scalingConfig": {"maxSize": 2, "minSize": 0, "desiredSize": 0},
              "taints": [{"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "present"}]}


def test_inputs_diff_as_dotted_paths_with_old_and_new_values():
    old = {"nodeConfig": {"taints": [{"effect": "NO_SCHEDULE", "key": "a"}]}, "same": 1}
    new = {"nodeConfig": {"taints": [{"effect": "NO_EXECUTE", "key": "a"}, {"effect": "NO_SCHEDULE", "key": "b"}]},
           "same": 1, "added": {"x": True}}
    changes = [(c.path, c.old, c.new) for c in pd.diff_inputs(old, new)]
    assert [(p, o if not pd.is_missing(o) else None, n) for p, o, n in changes] == [
        ("added.x", None, True),
        ("nodeConfig.taints[0].effect", "NO_SCHEDULE", "NO_EXECUTE"),
        ("nodeConfig.taints[1].effect", None, "NO_SCHEDULE"),
        ("nodeConfig.taints[1].key", None, "b"),
    ]


def test_an_instance_type_change_replaces_the_node_group():
    new_inputs = {**NODE_GROUP, "instanceTypes": ["p5e.48xlarge"]}
    [change] = diff_docs(doc(resources=[res(rp.EKS_NODE_GROUP, "h100", NODE_GROUP)]),
                         doc(resources=[res(rp.EKS_NODE_GROUP, "h100", new_inputs)])).changes
    assert change.action == "~" and change.verdict.disruptive
    assert change.verdict.reason == "replaces node group: instanceTypes[0] changes force a new NodeGroup"


def test_rules_take_the_longest_matching_path():
    assert rp.rule_for(rp.GKE_POOL, "nodeConfig.taints[0].effect").effect == rp.IN_PLACE
    assert rp.rule_for(rp.GKE_POOL, "nodeConfig.guestAccelerators[0].count").effect == rp.REPLACE
    assert rp.rule_for(rp.GKE_POOL, "nodeConfig.machineType").effect == rp.ROLL
    assert rp.rule_for(rp.AKS_CLUSTER, "agentPoolProfiles[0].orchestratorVersion").effect == rp.ROLL
    assert rp.rule_for(rp.LAUNCH_TEMPLATE, "blockDeviceMappings[0].ebs.volumeSize").effect == rp.ROLL
    assert rp.rule_for(rp.LAUNCH_TEMPLATE, "tags.team").effect == rp.IN_PLACE
    assert rp.rule_for("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "spec.nodeLabels.a").effect == rp.REPLACE
    assert rp.rule_for(rp.EKS_NODE_GROUP, "scalingConfig.maxSize") is None


def test_every_rule_names_a_known_effect_and_a_source():
    for rule in rp.RULES:
        assert rule.effect in rp.EFFECTS and rule.source, rule


def _oci_fixed_inputs(args_class) -> set[str]:
    """camelCase inputs of an OCI SDK args class whose docstring does not mark them (Updatable)."""
    text = inspect.getdoc(args_class.__init__) or ""
    fixed = set()
    for name, description in re.findall(r":param [^:]*? (\w+): (.*)", text):
        if not description.startswith("(Updatable)"):
            head, *rest = name.split("_")
            fixed.add(head + "".join(part.title() for part in rest))
    return fixed


@pytest.mark.parametrize("type_token, args_path", [
    (rp.OKE_CLUSTER, "containerengine.ClusterArgs"), (rp.OKE_POOL, "containerengine.NodePoolArgs"),
    (rp.OCI_FILE_SYSTEM, "filestorage.FileSystemArgs"), (rp.OCI_KMS_KEY, "kms.KeyArgs")])
def test_oci_replacing_rows_are_the_inputs_the_sdk_does_not_mark_updatable(type_token, args_path):
    import importlib

    module, name = args_path.split(".")
    args_class = getattr(importlib.import_module(f"pulumi_oci.{module}"), name)
    fixed = _oci_fixed_inputs(args_class) - {"locks", "cloneAttachStatus"}  # outputs in the args, never set
    rows = {r.path for r in rp.RULES if r.type == type_token and r.effect == rp.REPLACE}
    assert rows == fixed


def test_a_shrunk_file_system_is_replaced_and_a_grown_one_is_not():
    fsx = {"storageCapacity": 2400, "deploymentType": "PERSISTENT_2"}
    old = doc(resources=[res(rp.FSX_LUSTRE, "fsx", fsx)])
    shrunk = diff_docs(old, doc(resources=[res(rp.FSX_LUSTRE, "fsx", {**fsx, "storageCapacity": 1200})]))
    grown = diff_docs(old, doc(resources=[res(rp.FSX_LUSTRE, "fsx", {**fsx, "storageCapacity": 3600})]))
    assert shrunk.changes[0].verdict.reason == ("replaces LustreFileSystem: storageCapacity shrinks 2400 -> 1200 "
                                                "(it only grows; a smaller one is a new, empty one)")
    assert grown.changes[0].verdict.disruptive is False
    assert grown.changes[0].verdict.reason == "grows in place: storageCapacity 2400 -> 3600"


FLAVOR_TYPE = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
FLAVOR = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "h100"},
          "spec": {"nodeLabels": {"gpu-platform.io/pool": "h100"}}}


def test_a_resource_flavor_label_change_replaces_it_and_requeues_jobs():
    new = copy.deepcopy(FLAVOR)
    new["spec"]["nodeLabels"]["gpu-platform.io/pool"] = "h100-train"
    [change] = diff_docs(doc(resources=[res(FLAVOR_TYPE, "f", FLAVOR)]),
                         doc(resources=[res(FLAVOR_TYPE, "f", new)])).changes
    assert change.kind == rp.KUEUE_KIND and change.verdict.disruptive
    assert change.verdict.reason == ("replaces ResourceFlavor: spec.nodeLabels.gpu-platform.io/pool changes force a "
                                     "new ResourceFlavor (jobs admitted to it are requeued)")


def test_a_custom_resource_on_a_new_api_version_is_the_same_object_with_a_crd_version_change():
    old_type = "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor"
    old_flavor = {**FLAVOR, "apiVersion": "kueue.x-k8s.io/v1beta1"}
    diff = diff_docs(doc(resources=[res(old_type, "f", old_flavor)]), doc(resources=[res(FLAVOR_TYPE, "f", FLAVOR)]))
    [change] = diff.changes
    assert (change.action, change.old_urn, change.urn) == (
        "~", f"urn:pulumi:s::p::{old_type}::f", f"urn:pulumi:s::p::{FLAVOR_TYPE}::f")
    assert [(i.path, i.old, i.new) for i in change.inputs] == [
        ("apiVersion", "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")]
    assert change.verdict.reason == ("changes a CRD version: ResourceFlavor kueue.x-k8s.io/v1beta1 -> "
                                     "kueue.x-k8s.io/v1beta2 (the object is recreated under the new version)")


def test_removing_state_is_disruptive_and_adding_is_not():
    key = res(rp.AWS_KMS_KEY, "key", {"enableKeyRotation": True})
    policy = res("kubernetes:networking.k8s.io/v1:NetworkPolicy", "np", {"metadata": {"name": "np"}})
    diff = diff_docs(doc(resources=[key]), doc(resources=[policy]))
    assert [(c.action, c.verdict.disruptive, c.verdict.reason) for c in diff.changes] == [
        ("-", True, "deletes Key: its data goes with it"),
        ("+", False, "creates NetworkPolicy"),
    ]


def test_control_plane_steps_are_one_minor_up_at_most():
    assert control_plane_step_problem("1.35", "1.35") is None
    assert control_plane_step_problem("1.35", "1.36") is None
    assert control_plane_step_problem("1.34", "1.36") == ("Kubernetes control planes upgrade one minor at a time: "
                                                          "1.34 -> 1.36 skips 1.35; plan 1.35 first")
    assert control_plane_step_problem("1.36", "1.35") == ("Kubernetes control planes cannot be downgraded: "
                                                          "1.36 -> 1.35; keep kubernetesVersion at 1.36 or later")


def test_bad_inputs_are_one_line_plan_errors(tmp_path):
    with pytest.raises(pd.PlanError, match=r"^.*missing: no such plan file or folder$"):
        pd.load_plans(tmp_path / "missing")
    (tmp_path / "x.json").write_text('{"stack": 1}')
    with pytest.raises(pd.PlanError, match=r"x.json: not a gpu-platform plan \(a plan.json with 'stack' and"):
        pd.load_plans(tmp_path / "x.json")
    with pytest.raises(pd.PlanError, match=r"^different stacks compared: a \(old\) and b \(new\)$"):
        pd.compare({"a": pd.read_plan(doc("a"), "a")}, {"b": pd.read_plan(doc("b"), "b")})
    with pytest.raises(pd.PlanError, match=r"^s: Kubernetes control planes upgrade one minor at a time: 1.34 -> 1.36"):
        pd.compare({"s": pd.read_plan(doc(version="1.34"), "o")}, {"s": pd.read_plan(doc(version="1.36"), "n")})


def test_plan_folders_and_plan_roots_load_by_stack(tmp_path):
    for stack in ("a", "b"):
        (tmp_path / stack).mkdir()
        (tmp_path / stack / "plan.json").write_text(json.dumps(doc(stack)))
    assert sorted(pd.load_plans(tmp_path)) == ["a", "b"]
    assert list(pd.load_plans(tmp_path / "a")) == ["a"]
    assert list(pd.load_plans(tmp_path / "b" / "plan.json")) == ["b"]


# ------------------------------------------------------------------------------------------ planned stacks


def _set_pool(namespaced, pool_name, **keys):
    for pool in namespaced[NS + "nodePools"]:
        if pool["name"] == pool_name:
            pool.update(keys)
            return namespaced
    raise AssertionError(f"no pool {pool_name}")


def _set_team_quota(namespaced, team, quota):
    for entry in namespaced[NS + "teams"]:
        if entry["name"] == team:
            entry["gpuQuota"] = quota
    return namespaced


def _set_fsx(namespaced, size):
    namespaced[NS + "storage"]["sharedFileSystem"]["sizeGiB"] = size
    return namespaced


EDITS = {
    "none": lambda ns: ns,
    "instance-type": lambda ns: _set_pool(ns, "l4-infer", instanceType="g6e.xlarge"),
    "max-nodes": lambda ns: _set_pool(ns, "l4-infer", maxNodes=5),
    "team-quota": lambda ns: _set_team_quota(ns, "research", 12),
    "fsx-2400": lambda ns: _set_fsx(ns, 2400),
    "taint": lambda ns: _set_pool(ns, ns[NS + "nodePools"][0]["name"], taints=["dedicated=ml:NoSchedule"]),
}


@cache
def planned(stack: str, version: str, edit: str = "none") -> str:
    """``stack``'s reference configuration at Kubernetes ``version`` with one ``EDITS`` change, planned in-process;
    its plan.json path (each combination planned once per session)."""
    namespaced = plan.load_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    namespaced[NS + "kubernetesVersion"] = version
    namespaced = EDITS[edit](copy.deepcopy(namespaced))
    folder = Path(tempfile.mkdtemp(prefix=f"diff-{stack}-{version}-{edit}-"))
    stack_file = folder / f"Pulumi.{stack}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": namespaced}))
    result = plan.plan_stack(stack, stack_file)
    assert result.errors == []
    return str(plan.write_plan(result, folder / "out") / "plan.json")


def compare(old: str, new: str) -> pd.PlanDiff:
    [diff] = pd.compare(pd.load_plans(Path(old)), pd.load_plans(Path(new)))
    return diff


def disruptive(diff: pd.PlanDiff) -> list[tuple[str, str]]:
    return [(c.type, c.name) for c in diff.disruptive]


def test_plan_json_records_cloud_and_kubernetes_minor():
    document = json.loads(Path(planned("aws-dev", "1.36")).read_text())
    assert list(document) == ["cloud", "kubernetesVersion", "resources", "stack"]
    assert (document["cloud"], document["kubernetesVersion"]) == ("aws", "1.36")


MINOR_UPGRADE = {
    "aws-dev": [(rp.EKS_CLUSTER, "aws-dev-eks"), *((rp.EKS_NODE_GROUP, f"aws-dev-{pool}") for pool in (
        "system", "h100-train-nodes", "l4-infer-nodes", "l4-spot-nodes"))],
    "azure-dev": [(rp.AKS_CLUSTER, "azure-dev-aks"), (rp.AKS_POOL, "azure-dev-a100-infer-pool"),
                  (rp.AKS_POOL, "azure-dev-a100-spot-pool"), (rp.AKS_POOL, "azure-dev-h100-train-pool")],
    "gcp-dev": [(rp.GKE_CLUSTER, "gcp-dev-cluster"), *((rp.GKE_POOL, f"gcp-dev-{pool}") for pool in (
        "system", "h100-queued-pool", "h100-reserved-pool", "h100-train-pool", "l4-infer-pool", "l4-spot-pool"))],
    "oci-dev": [(rp.OKE_CLUSTER, "oci-dev-oke"), (rp.OKE_POOL, "oci-dev-a10-infer-nodes"),
                (rp.OKE_POOL, "oci-dev-a10-spot-nodes"), (rp.OKE_POOL, "oci-dev-h100-train-nodes")],
}
"""What a 1.35 -> 1.36 upgrade disrupts per cloud, in order: the control plane, then every pool (on EKS and GKE the
system pool too; AKS's system pool is a profile of the managed cluster), in URN order. EKS node groups take the
cluster's ``version`` and GKE node pools its ``master_version``, so the pools follow the control plane."""


@pytest.mark.parametrize("stack", sorted(MINOR_UPGRADE))
def test_a_minor_upgrade_disrupts_the_control_plane_first_then_the_pools_and_nothing_else(stack):
    diff = compare(planned(stack, "1.35"), planned(stack, "1.36"))
    assert disruptive(diff) == MINOR_UPGRADE[stack]
    assert diff.disruptive[0].verdict.reason.startswith("upgrades the control plane: ")
    assert [c.kind for c in diff.disruptive] == [rp.CONTROL_PLANE_KIND] + [rp.POOL_KIND] * (
        len(MINOR_UPGRADE[stack]) - 1)


@pytest.mark.parametrize("stack", sorted(MINOR_UPGRADE))
def test_a_two_minor_jump_is_refused_with_exit_2(stack, tmp_path, capsys):
    old = json.loads(Path(planned(stack, "1.36")).read_text())
    old["kubernetesVersion"] = "1.34"  # a plan written at 1.34: only its recorded minor matters to the check
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert cli.main(["diff", str(tmp_path / "old.json"), planned(stack, "1.36")]) == cli.EXIT_CONFIG
    assert capsys.readouterr().err == (f"error: {stack}: Kubernetes control planes upgrade one minor at a time: "
                                       "1.34 -> 1.36 skips 1.35; plan 1.35 first\n")


def test_an_instance_type_change_of_a_stack_replaces_its_node_group():
    diff = compare(planned("aws-dev", "1.36"), planned("aws-dev", "1.36", "instance-type"))
    group = next(c for c in diff.changes if c.name == "aws-dev-l4-infer-nodes")
    assert group.verdict.reason == "replaces node group: instanceTypes[0] changes force a new NodeGroup"
    assert ("instanceTypes[0]", "g6.2xlarge", "g6e.xlarge") in [(i.path, i.old, i.new) for i in group.inputs]


def test_a_shrunk_shared_file_system_of_a_stack_is_replaced():
    diff = compare(planned("aws-dev", "1.36", "fsx-2400"), planned("aws-dev", "1.36"))
    assert disruptive(diff) == [(rp.FSX_LUSTRE, "aws-dev-fsx")]
    assert diff.disruptive[0].verdict.reason == ("replaces LustreFileSystem: storageCapacity shrinks 2400 -> 1200 "
                                                 "(it only grows; a smaller one is a new, empty one)")


def test_a_pool_taint_change_rolls_oke_nodes_and_updates_eks_node_groups_in_place():
    # OKE pools have no taint field: the taints are kubelet flags in cloud-init, which only a new node reads.
    oci = compare(planned("oci-dev", "1.36"), planned("oci-dev", "1.36", "taint"))
    pool = next(c for c in oci.changes if c.name == "oci-dev-a10-infer-nodes")
    assert pool.verdict.reason == ("rolls the nodes of node pool: nodeMetadata.user_data changes replace or reimage "
                                   "every node")
    # EKS updates a node group's taints on its running nodes (UpdateNodegroupConfig).
    aws = compare(planned("aws-dev", "1.36"), planned("aws-dev", "1.36", "taint"))
    first_pool = plan.load_stack_file(ROOT / "stacks" / "Pulumi.aws-dev.yaml")[NS + "nodePools"][0]["name"]
    group = next(c for c in aws.changes if c.name == f"aws-dev-{first_pool}-nodes")
    assert [i.path for i in group.inputs if i.path.startswith("taints")] and not group.verdict.disruptive
    # Either way the pool's Kueue flavor must tolerate the new taint: the flavor is replaced.
    assert any(c.kind == rp.KUEUE_KIND and c.verdict.disruptive for c in aws.changes)


@pytest.mark.parametrize("edit", ["max-nodes", "team-quota"])
def test_capacity_and_quota_changes_are_in_place(edit):
    diff = compare(planned("aws-dev", "1.36"), planned("aws-dev", "1.36", edit))
    assert diff.changes and diff.disruptive == []


def test_an_alert_threshold_change_is_in_place():
    from gpu_platform.monitoring import alerts

    old = planned("aws-dev", "1.36")
    document = json.loads(Path(old).read_text())
    [rule] = [r for r in document["resources"] if r["name"] == "aws-dev-monitoring-gpu-platform-alerts"]
    # What AlertThresholds(gpu_temperature_celsius=80) renders instead of the default: the alert's expression only.
    default, lowered = alerts.AlertThresholds(), alerts.AlertThresholds.from_overrides({"gpu_temperature_celsius": 80})
    expr = "max by (node, gpu, UUID, modelName, pool) (gpu:temperature:celsius) > {:g}"
    text = json.dumps(rule["inputs"])
    assert text.count(expr.format(default.gpu_temperature_celsius)) == 1
    rule["inputs"] = json.loads(text.replace(expr.format(default.gpu_temperature_celsius),
                                             expr.format(lowered.gpu_temperature_celsius)))
    [diff] = pd.compare(pd.load_plans(Path(old)), {"aws-dev": pd.read_plan(document, "edited")})
    [change] = diff.changes
    assert [(i.old, i.new) for i in change.inputs] == [(expr.format(85), expr.format(80))]
    assert change.verdict == pd.Verdict(False, ("updates in place",))


# ------------------------------------------------------------------------------------------ CLI


def test_diff_exit_codes_and_total(capsys):
    base = planned("aws-dev", "1.36")
    assert cli.main(["diff", base, base]) == cli.EXIT_OK
    assert capsys.readouterr().out.splitlines()[-1] == "0 disruptive, 0 in-place"
    assert cli.main(["diff", base, planned("aws-dev", "1.36", "max-nodes")]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "  ~ aws:eks/nodeGroup:NodeGroup aws-dev-l4-infer-nodes" in out
    assert "      scalingConfig.maxSize: 4 -> 5" in out
    assert out.splitlines()[-1].startswith("0 disruptive, ")
    assert cli.main(["diff", base, planned("aws-dev", "1.36", "instance-type")]) == cli.EXIT_DISRUPTIVE


def test_diff_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert cli.main(["diff", str(tmp_path / "nope"), planned("aws-dev", "1.36")]) == cli.EXIT_CONFIG
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope'}: no such plan file or folder\n"
    assert cli.main(["diff", planned("aws-dev", "1.36"), planned("oci-dev", "1.36")]) == cli.EXIT_CONFIG
    assert capsys.readouterr().err == "error: different stacks compared: aws-dev (old) and oci-dev (new)\n"


def test_diff_json_document(capsys):
    assert cli.main(["diff", planned("aws-dev", "1.36", "fsx-2400"), planned("aws-dev", "1.36"), "--json"]) == \
        cli.EXIT_DISRUPTIVE
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"format", "stacks", "totals"} and document["format"] == 1
    [stack] = document["stacks"]
    assert set(stack) == {"stack", "cloud", "kubernetesVersion", "changes", "totals"}
    assert stack["kubernetesVersion"] == {"old": "1.36", "new": "1.36"}
    fsx = next(c for c in stack["changes"] if c["name"] == "aws-dev-fsx")
    assert fsx == {"action": "changed", "urn": fsx["urn"], "oldUrn": None, "type": rp.FSX_LUSTRE,
                   "name": "aws-dev-fsx", "kind": "stateful", "disruptive": True, "reason": fsx["reasons"][0],
                   "reasons": fsx["reasons"],
                   "inputs": [{"path": "storageCapacity", "old": {"value": 2400}, "new": {"value": 1200}}]}
    assert document["totals"] == {"disruptive": stack["totals"]["disruptive"], "inPlace": stack["totals"]["inPlace"]}


def _stack_copy(tmp_path, stack, version, edit="none"):
    namespaced = EDITS[edit](plan.load_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml"))
    namespaced[NS + "kubernetesVersion"] = version
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": namespaced}))
    return path


def test_plan_compare_writes_the_plan_and_exits_3_when_disruptive(tmp_path, capsys):
    old_root = Path(planned("aws-dev", "1.36", "fsx-2400")).parent.parent
    stack_file = _stack_copy(tmp_path, "aws-dev", "1.36")
    out = tmp_path / "out"
    assert cli.main(["plan", "--config", str(stack_file), "--out", str(out), "--compare", str(old_root)]) == \
        cli.EXIT_DISRUPTIVE
    assert (out / "aws-dev" / "plan.json").is_file()
    assert "disruptive aws-dev-fsx: replaces LustreFileSystem: storageCapacity shrinks 2400 -> 1200" in \
        capsys.readouterr().out
    same = Path(planned("aws-dev", "1.36")).parent
    assert cli.main(["plan", "--config", str(stack_file), "--out", str(out), "--compare", str(same)]) == cli.EXIT_OK


def test_plan_compare_refuses_a_two_minor_jump_before_writing(tmp_path, capsys):
    old = json.loads(Path(planned("aws-dev", "1.36")).read_text())
    old["kubernetesVersion"] = "1.34"
    (tmp_path / "old" / "aws-dev").mkdir(parents=True)
    (tmp_path / "old" / "aws-dev" / "plan.json").write_text(json.dumps(old))
    out = tmp_path / "out"
    stack_file = _stack_copy(tmp_path, "aws-dev", "1.36")
    assert cli.main(["plan", "--config", str(stack_file), "--out", str(out), "--compare", str(tmp_path / "old")]) \
        == cli.EXIT_CONFIG
    assert capsys.readouterr().err == ("error: aws-dev: Kubernetes control planes upgrade one minor at a time: "
                                       "1.34 -> 1.36 skips 1.35; plan 1.35 first\n")
    assert not out.exists()
