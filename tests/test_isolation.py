"""Isolation the platform declares must be enforced: an `existing` cluster states whether it runs a NetworkPolicy
engine, and a stack isolated by NetworkPolicies on a cluster that enforces none does not plan."""

import pathlib

import pytest
import yaml

from gpu_platform import cli, plan
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.security.isolation import network_policy_users

POOL = {"name": "train", "gpuModel": "h100", "gpusPerNode": 8, "minNodes": 1, "maxNodes": 1}
NOTHING_ISOLATED = {"monitoring": {"enabled": False}, "inference": {"enabled": False},
                    "optimizer": {"enabled": False}, "training": {"enabled": False}}


def existing(**changes):
    return {"cloud": "existing", "nodePools": [dict(POOL)], **changes}


def test_reference_existing_stack_without_enforcement_fails_to_plan(tmp_path, capsys):
    stack = yaml.safe_load(pathlib.Path(plan.discover_stacks()["existing"]).read_text())
    del stack["config"]["gpu-platform:networkPolicyEnforced"]
    assert stack["config"]["gpu-platform:teams"], "the reference stack isolates teams"
    path = tmp_path / "Pulumi.existing.yaml"
    path.write_text(yaml.safe_dump(stack))
    assert cli.main(["plan", "--config", str(path), "--out", str(tmp_path / "out")]) == cli.EXIT_CONFIG
    assert capsys.readouterr().err.strip() == (
        "error: existing: networkPolicyEnforced: the cluster is not declared to enforce NetworkPolicies, but teams, "
        "monitoring, inference, optimizer rely on them; run a policy engine (Calico, Cilium) and set "
        "networkPolicyEnforced: true, or turn those off")
    assert not (tmp_path / "out" / "existing").exists()


def test_team_isolation_alone_is_refused_without_enforcement():
    with pytest.raises(ConfigError, match=r"^s: networkPolicyEnforced: .* but teams rely on them"):
        parse_config(existing(teams=[{"name": "research", "gpuQuota": 8}], **NOTHING_ISOLATED), "s")


def test_a_stack_without_policies_plans_on_a_cluster_without_an_engine():
    config = parse_config(existing(**NOTHING_ISOLATED), "s")
    assert config.cluster_options.network_policy_enforced is False
    assert network_policy_users(config) == ()


def test_declared_enforcement_is_recorded():
    config = parse_config(existing(networkPolicyEnforced=True, teams=[{"name": "research", "gpuQuota": 8}]), "s")
    assert config.cluster_options.network_policy_enforced is True
    assert network_policy_users(config) == ("teams", "monitoring", "inference", "optimizer")


def test_enforcement_key_is_refused_on_managed_clouds():
    with pytest.raises(ConfigError, match=r"^s: networkPolicyEnforced: unknown key"):
        parse_config({"cloud": "aws", "region": "us-west-2", "networkPolicyEnforced": True,
                      "nodePools": [{"name": "a", "instanceType": "g6.xlarge"}]}, "s")
