"""Pool upgrades on EKS (managed node groups, Karpenter NodePools), OKE and existing clusters: the exact provider
inputs each ``nodePools[].upgrade`` key and ``maintenance.window`` reach, for the reference stacks and composed
components, and one refusal per key a cloud cannot honour."""

import re
from pathlib import Path

import pulumi
import pytest
from conftest import planned_stack

from gpu_platform.clouds import aws
from gpu_platform.clouds.aws import upgrade as aws_upgrade
from gpu_platform.clouds.aws.karpenter import KarpenterAutoscaler, karpenter_from_config
from gpu_platform.clouds.oci import OkeGpuNodePool
from gpu_platform.clouds.oci import cluster_from_config as oci_cluster_from_config
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import pool_args
from gpu_platform.schemas import validate_manifest
from gpu_platform.testing import run_program
from gpu_platform.upgrades.maintenance import parse_window
from gpu_platform.upgrades.pool_upgrade import PoolUpgrade

STACKS = Path(__file__).resolve().parents[1] / "stacks"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
OKE_POOL = "oci:ContainerEngine/nodePool:NodePool"
COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
CONSOLIDATION = {"nodes": "1", "reasons": ["Empty", "Underutilized"]}
CLOSED_DEFAULT = {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 12 * * 6", "duration": "156h"}


# ---------------------------------------------------------------------------------------------------------
# Reference stacks


@pytest.fixture(scope="module")
def aws_dev():
    result = planned_stack("aws-dev")
    assert result.errors == []
    return result.recording


@pytest.fixture(scope="module")
def oci_dev():
    result = planned_stack("oci-dev")
    assert result.errors == []
    return result.recording


def test_aws_dev_node_groups_get_the_role_defaults(aws_dev):
    groups = {r.name: r.inputs["updateConfig"] for r in aws_dev.of_type(NODE_GROUP)}
    # Inference: EKS launches replacements first (DEFAULT); training: no surge node (MINIMAL), one down at a time.
    assert groups["aws-dev-l4-infer-nodes"] == {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}
    assert groups["aws-dev-l4-spot-nodes"] == {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}
    assert groups["aws-dev-h100-train-nodes"] == {"maxUnavailable": 1, "updateStrategy": "MINIMAL"}
    assert groups["aws-dev-system"] == {"maxUnavailable": 1}


def test_oci_dev_pools_cycle_by_role_and_training_never_force_deletes(oci_dev):
    pools = {r.name: r.inputs for r in oci_dev.of_type(OKE_POOL)}
    infer, train = pools["oci-dev-a10-infer-nodes"], pools["oci-dev-h100-train-nodes"]
    assert infer["nodePoolCyclingDetails"] == {"isNodeCyclingEnabled": True, "maximumSurge": "1",
                                               "maximumUnavailable": "0"}
    assert infer["nodeEvictionNodePoolSettings"] == {"isForceDeleteAfterGraceDuration": True}
    assert train["nodePoolCyclingDetails"] == {"isNodeCyclingEnabled": True, "maximumSurge": "0",
                                               "maximumUnavailable": "1"}
    assert train["nodeEvictionNodePoolSettings"] == {"isForceDeleteAfterGraceDuration": False}


# ---------------------------------------------------------------------------------------------------------
# EKS managed node groups: each key changes the plan


AWS = {"cloud": "aws", "region": "us-west-2"}
INFER = {"name": "infer", "instanceType": "g6.xlarge", "minNodes": 1, "maxNodes": 2, "role": "inference"}
TRAIN = {"name": "train", "instanceType": "g6e.12xlarge", "minNodes": 0, "maxNodes": 2, "role": "training"}


def aws_update_config(upgrade=None, pool=INFER):
    entry = {**pool, **({"upgrade": upgrade} if upgrade is not None else {})}
    config = parse_config({**AWS, "nodePools": [entry]}, "u")
    rec = run_program(lambda: aws.cluster_from_config("u", config, pulumi.ResourceOptions()), stack="u")
    return rec.one(NODE_GROUP, f"u-{pool['name']}-nodes").inputs["updateConfig"]


@pytest.mark.parametrize(("upgrade", "expected"), [
    (None, {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}),
    ({"maxUnavailable": 3}, {"maxUnavailable": 3, "updateStrategy": "DEFAULT"}),
    ({"maxUnavailable": "25%"}, {"maxUnavailablePercentage": 25, "updateStrategy": "DEFAULT"}),
    ({"maxSurge": 0, "maxUnavailable": 2}, {"maxUnavailable": 2, "updateStrategy": "MINIMAL"}),
    ({"strategy": "surge"}, {"maxUnavailable": 1, "updateStrategy": "DEFAULT"}),
])
def test_node_group_update_config_follows_each_key(upgrade, expected):
    assert aws_update_config(upgrade) == expected


def test_composed_node_group_takes_the_same_upgrade_argument():
    entry = {**INFER, "upgrade": {"maxUnavailable": "50%", "maxSurge": "0"}}
    args = pool_args("aws", entry)
    assert args["upgrade"] == {"max_surge": "0", "max_unavailable": "50%"}

    def program():
        aws.EksGpuNodePool("p", {**args, "cluster_name": "c", "node_role_arn": "arn:aws:iam::123456789012:role/n",
                                 "subnet_ids": ["subnet-0123456789abcdef0"]})

    rec = run_program(program)
    assert rec.one(NODE_GROUP).inputs["updateConfig"] == {"maxUnavailablePercentage": 50, "updateStrategy": "MINIMAL"}


NODE_GROUP_REFUSALS = {
    "maxSurge above 0": ({"maxSurge": 2}, "nodePools[0].upgrade.maxSurge: EKS picks the surge of a managed node "
                                          "group itself"),
    "automatic": ({"automatic": "never"}, "nodePools[0].upgrade.automatic: EKS never upgrades a managed node group "
                                          "on its own"),
    "drainTimeoutMinutes": ({"drainTimeoutMinutes": 30}, "nodePools[0].upgrade.drainTimeoutMinutes: EKS drains a "
                                                         "managed node group's node for a fixed 15 minutes"),
    "soakMinutes": ({"soakMinutes": 5}, "nodePools[0].upgrade.soakMinutes: EKS managed node groups has no setting"),
    "blue-green": ({"strategy": "blue-green"}, "nodePools[0].upgrade.strategy: EKS managed node groups upgrades "
                                               "pools by surge only, not blue-green"),
    "maxUnavailable above 100": ({"maxUnavailable": 101}, "nodePools[0].upgrade.maxUnavailable: EKS takes at most "
                                                          "100 nodes"),
}


@pytest.mark.parametrize("case", sorted(NODE_GROUP_REFUSALS))
def test_node_group_refuses_what_eks_cannot_honour(case):
    upgrade, start = NODE_GROUP_REFUSALS[case]
    with pytest.raises(ConfigError, match=f"^s: {re.escape(start)}"):
        parse_config({**AWS, "nodePools": [{**INFER, "upgrade": upgrade}]}, "s")


def test_node_group_component_refuses_with_the_argument_name():
    args = {**pool_args("aws", INFER), "upgrade": {"max_surge": "2"}, "cluster_name": "c",
            "node_role_arn": "arn:aws:iam::123456789012:role/n", "subnet_ids": ["subnet-0123456789abcdef0"]}
    with pytest.raises(ConfigError, match=r"^EksGpuNodePool p: upgrade\.max_surge: EKS picks the surge"):
        run_program(lambda: aws.EksGpuNodePool("p", args))


def test_a_window_on_eks_without_karpenter_is_refused():
    with pytest.raises(ConfigError, match=r"^s: maintenance\.window: EKS never upgrades managed node groups"):
        parse_config({**AWS, "nodePools": [INFER], "maintenance": {"window": {"days": ["Sunday"]}}}, "s")


# ---------------------------------------------------------------------------------------------------------
# Karpenter NodePools


def karpenter_disruption(*pools, **top):
    """The NodePool ``spec`` by pool name of a Karpenter stack of ``pools``."""
    config = parse_config({**AWS, "nodePools": list(pools), "autoscaling": {"autoscaler": "karpenter"}, **top}, "k")

    def program():
        handle = aws.cluster_from_config("k", config, pulumi.ResourceOptions())
        karpenter_from_config("k", config, handle, pulumi.ResourceOptions(providers={"kubernetes": handle.provider}))

    rec = run_program(program, stack="k")
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.of_type(NODE_POOL)}, rec


def test_karpenter_training_pool_never_drifts_by_default():
    specs, _ = karpenter_disruption(TRAIN)
    assert specs["train"]["disruption"]["budgets"] == [CONSOLIDATION, {"nodes": "0", "reasons": ["Drifted"]}]
    assert specs["train"]["template"]["spec"]["expireAfter"] == "Never"
    assert specs["train"]["template"]["spec"]["terminationGracePeriod"] == "48h"


def test_karpenter_keys_change_the_node_pool():
    upgrade = {"automatic": "window", "maxUnavailable": "2", "drainTimeoutMinutes": 90}
    window = {"days": ["Tuesday", "Wednesday"], "start": "22:30", "hours": 6}
    specs, _ = karpenter_disruption({**TRAIN, "upgrade": upgrade}, maintenance={"window": window})
    # Open Tue 22:30-Wed 04:30 and Wed 22:30-Thu 04:30: closed Wed 04:30 for 18 h, Thu 04:30 for 138 h.
    assert specs["train"]["disruption"]["budgets"] == [
        CONSOLIDATION, {"nodes": "2", "reasons": ["Drifted"]},
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "30 4 * * 3", "duration": "18h"},
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "30 4 * * 4", "duration": "138h"}]
    assert specs["train"]["template"]["spec"]["terminationGracePeriod"] == "1h30m"


def test_karpenter_inference_pool_with_a_baseline_keeps_its_node_group_settings():
    specs, rec = karpenter_disruption({**INFER, "maxNodes": 3, "upgrade": {"automatic": "never",
                                                                          "maxUnavailable": "50%"}})
    assert specs["infer"]["disruption"]["budgets"] == [CONSOLIDATION, {"nodes": "0", "reasons": ["Drifted"]}]
    # automatic is the NodePool's; the baseline node group keeps maxUnavailable.
    assert rec.one(NODE_GROUP, "k-infer-nodes").inputs["updateConfig"] == {"maxUnavailablePercentage": 50,
                                                                           "updateStrategy": "DEFAULT"}


def test_budgets_for_the_default_window_and_windows_that_wrap_the_week():
    inference = PoolUpgrade().resolved("inference")
    assert aws_upgrade.disruption_budgets(inference, parse_window(None, "w")) == [
        CONSOLIDATION, {"nodes": "1", "reasons": ["Drifted"]}, CLOSED_DEFAULT]
    # Sunday 20:00 for 8 hours runs into Monday 04:00: closed from Monday 04:00 for 160 hours.
    sunday = parse_window({"days": ["Sunday"], "start": "20:00", "hours": 8}, "w")
    assert aws_upgrade.disruption_budgets(inference, sunday)[2:] == [
        {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 4 * * 1", "duration": "160h"}]


def test_composed_karpenter_takes_the_upgrade_and_window_arguments():
    pool = pool_args("aws", {**TRAIN, "upgrade": {"automatic": "window", "maxUnavailable": "1"}})

    def program(window):
        KarpenterAutoscaler("k", {
            "cluster_name": "c", "cluster_endpoint": "https://c", "region": "us-west-2",
            "system_node_group_name": "sys", "cluster_security_group_id": "sg-0123456789abcdef0",
            "node_pools": [{"pool": pool["pool"], "upgrade": pool["upgrade"],
                            "subnet_ids": ["subnet-0123456789abcdef0"]}],
            "maintenance_window": window})

    saturday = run_program(lambda: program({"days": ["Saturday"], "start": "00:00", "hours": 12}))
    friday = run_program(lambda: program({"days": ["Friday"], "start": "00:00", "hours": 12}))
    assert saturday.one(NODE_POOL).inputs["spec"]["disruption"]["budgets"][2] == CLOSED_DEFAULT
    assert friday.one(NODE_POOL).inputs["spec"]["disruption"]["budgets"][2] == {
        "nodes": "0", "reasons": ["Drifted"], "schedule": "0 12 * * 5", "duration": "156h"}


KARPENTER_REFUSALS = {
    "maxSurge": ({"maxSurge": "1"}, "nodePools[0].upgrade.maxSurge: Karpenter launches one replacement"),
    "soakMinutes": ({"soakMinutes": 5}, "nodePools[0].upgrade.soakMinutes: Karpenter has no setting for it"),
    "blue-green": ({"strategy": "blue-green"}, "nodePools[0].upgrade.strategy: Karpenter upgrades pools by surge "
                                               "only, not blue-green"),
}


@pytest.mark.parametrize("case", sorted(KARPENTER_REFUSALS))
def test_karpenter_refuses_what_it_cannot_honour(case):
    upgrade, start = KARPENTER_REFUSALS[case]
    with pytest.raises(ConfigError, match=f"^s: {re.escape(start)}"):
        parse_config({**AWS, "nodePools": [{**TRAIN, "upgrade": upgrade}],
                      "autoscaling": {"autoscaler": "karpenter"}}, "s")


def test_karpenter_refuses_a_window_no_pool_uses():
    with pytest.raises(ConfigError, match=r"^s: maintenance\.window: no Karpenter pool replaces drifted nodes"):
        parse_config({**AWS, "nodePools": [TRAIN], "autoscaling": {"autoscaler": "karpenter"},
                      "maintenance": {"window": {"days": ["Sunday"]}}}, "s")


def test_karpenter_refuses_drain_timeout_on_a_pool_with_a_baseline_node_group():
    with pytest.raises(ConfigError, match=r"^s: nodePools\[0\]\.upgrade\.drainTimeoutMinutes: EKS drains"):
        parse_config({**AWS, "nodePools": [{**INFER, "upgrade": {"drainTimeoutMinutes": 30}}],
                      "autoscaling": {"autoscaler": "karpenter"}}, "s")


def test_karpenter_component_refuses_with_the_argument_name():
    pool = pool_args("aws", TRAIN)["pool"]
    args = {"cluster_name": "c", "cluster_endpoint": "https://c", "region": "us-west-2",
            "system_node_group_name": "sys", "cluster_security_group_id": "sg-0123456789abcdef0",
            "node_pools": [{"pool": pool, "upgrade": {"max_surge": "1"}, "subnet_ids": ["subnet-0123456789abcdef0"]}]}
    with pytest.raises(ConfigError, match=r"^KarpenterAutoscaler k: node_pools\[0\]\.upgrade\.max_surge: Karpenter"):
        run_program(lambda: KarpenterAutoscaler("k", args))


def test_windowed_node_pool_validates_against_the_pinned_crd():
    specs, rec = karpenter_disruption({**TRAIN, "upgrade": {"automatic": "window", "drainTimeoutMinutes": 90}},
                                      maintenance={"window": {"days": ["Monday", "Thursday"], "hours": 4}})
    body = rec.one(NODE_POOL).inputs
    validate_manifest(body, "1.34")
    assert len(specs["train"]["disruption"]["budgets"]) == 4  # consolidation, drift in the window, two closed spans


# ---------------------------------------------------------------------------------------------------------
# OKE


OCI = {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT}
A10 = {"name": "a10", "instanceType": "VM.GPU.A10.1", "minNodes": 1, "maxNodes": 4, "role": "inference"}


def oke_pool(upgrade=None, pool=A10):
    entry = {**pool, **({"upgrade": upgrade} if upgrade is not None else {})}
    config = parse_config({**OCI, "nodePools": [entry]}, "o")
    rec = run_program(lambda: oci_cluster_from_config("o", config, pulumi.ResourceOptions()), stack="o")
    inputs = rec.one(OKE_POOL, f"o-{pool['name']}-nodes").inputs
    return inputs["nodePoolCyclingDetails"], inputs["nodeEvictionNodePoolSettings"]


def test_oke_keys_change_the_node_pool():
    assert oke_pool({"maxSurge": "2", "maxUnavailable": "25%", "drainTimeoutMinutes": 45}) == (
        {"isNodeCyclingEnabled": True, "maximumSurge": "2", "maximumUnavailable": "25%"},
        {"isForceDeleteAfterGraceDuration": True, "evictionGraceDuration": "PT45M"})
    assert oke_pool({"maxSurge": 0, "strategy": "surge"})[0] == {
        "isNodeCyclingEnabled": True, "maximumSurge": "0", "maximumUnavailable": "1"}
    assert oke_pool(pool={**A10, "role": "training"}) == (
        {"isNodeCyclingEnabled": True, "maximumSurge": "0", "maximumUnavailable": "1"},
        {"isForceDeleteAfterGraceDuration": False})


def test_composed_oke_pool_takes_the_same_upgrade_argument():
    args = pool_args("oci", {**A10, "upgrade": {"maxUnavailable": "2", "drainTimeoutMinutes": 10}})
    assert args["upgrade"] == {"max_unavailable": "2", "drain_timeout_minutes": 10}

    def program():
        OkeGpuNodePool("p", {**args, "cluster_id": "ocid1.cluster.oc1.iad.aaaa", "compartment_id": COMPARTMENT,
                             "kubernetes_version": "v1.35.1", "worker_subnet_id": "ocid1.subnet.oc1.iad.w",
                             "pod_subnet_id": "ocid1.subnet.oc1.iad.p",
                             "availability_domains": ["Uocm:US-ASHBURN-AD-1"],
                             "image_id": "ocid1.image.oc1.iad.aaaa"})

    inputs = run_program(program).one(OKE_POOL).inputs
    assert inputs["nodePoolCyclingDetails"] == {"isNodeCyclingEnabled": True, "maximumSurge": "1",
                                                "maximumUnavailable": "2"}
    assert inputs["nodeEvictionNodePoolSettings"] == {"isForceDeleteAfterGraceDuration": True,
                                                      "evictionGraceDuration": "PT10M"}


OKE_REFUSALS = {
    "automatic": ({"automatic": "window"}, "nodePools[0].upgrade.automatic: OKE never upgrades or cycles"),
    "drain above 60": ({"drainTimeoutMinutes": 61}, "nodePools[0].upgrade.drainTimeoutMinutes: OKE's eviction grace "
                                                    "is at most 60 minutes, got 61"),
    "soakMinutes": ({"soakMinutes": 5}, "nodePools[0].upgrade.soakMinutes: OKE has no setting for it"),
    "blue-green": ({"strategy": "blue-green"}, "nodePools[0].upgrade.strategy: OKE upgrades pools by surge only, "
                                               "not blue-green"),
}


@pytest.mark.parametrize("case", sorted(OKE_REFUSALS))
def test_oke_refuses_what_it_cannot_honour(case):
    upgrade, start = OKE_REFUSALS[case]
    with pytest.raises(ConfigError, match=f"^s: {re.escape(start)}"):
        parse_config({**OCI, "nodePools": [{**A10, "upgrade": upgrade}]}, "s")


def test_oke_refuses_a_maintenance_window():
    with pytest.raises(ConfigError, match=r"^s: maintenance\.window: OKE has no maintenance window"):
        parse_config({**OCI, "nodePools": [A10], "maintenance": {"window": {"days": ["Sunday"]}}}, "s")


# ---------------------------------------------------------------------------------------------------------
# Existing clusters


EXISTING = {"cloud": "existing", "networkPolicyEnforced": True,
            "nodePools": [{"name": "h100", "gpuModel": "h100", "gpusPerNode": 8, "maxNodes": 2}]}


def test_existing_cluster_refuses_pool_upgrades_and_a_window():
    pools = [{**EXISTING["nodePools"][0], "upgrade": {"maxSurge": "1"}}]
    with pytest.raises(ConfigError, match=r"^s: nodePools\[0\]\.upgrade: the platform does not create or upgrade"):
        parse_config({**EXISTING, "nodePools": pools}, "s")
    with pytest.raises(ConfigError, match=r"^s: maintenance: the platform does not manage an existing cluster"):
        parse_config({**EXISTING, "maintenance": {"window": {"days": ["Sunday"]}}}, "s")


def test_node_groups_follow_the_cluster_version_and_take_a_standalone_one():
    """An EksCluster's GPU and system node groups carry its version (a new minor rolls them after the control
    plane); a standalone EksGpuNodePool takes ``kubernetes_version``, refused when EKS does not offer it."""
    config = parse_config({**AWS, "kubernetesVersion": "1.35", "nodePools": [INFER]}, "u")
    rec = run_program(lambda: aws.cluster_from_config("u", config, pulumi.ResourceOptions()), stack="u")
    assert sorted((r.name, r.inputs["version"]) for r in rec.of_type(NODE_GROUP)) == [
        ("u-infer-nodes", "1.35"), ("u-system", "1.35")]
    args = {**pool_args("aws", INFER), "cluster_name": "c", "node_role_arn": "arn:aws:iam::123456789012:role/n",
            "subnet_ids": ["subnet-0123456789abcdef0"]}
    for version in ("1.35", "1.36"):
        standalone = run_program(lambda v=version: aws.EksGpuNodePool("p", {**args, "kubernetes_version": v}))
        assert standalone.one(NODE_GROUP).inputs["version"] == version
    assert "version" not in run_program(lambda: aws.EksGpuNodePool("p", args)).one(NODE_GROUP).inputs
    with pytest.raises(ConfigError, match=r"^EksGpuNodePool p: kubernetes_version: .*1\.29"):
        run_program(lambda: aws.EksGpuNodePool("p", {**args, "kubernetes_version": "1.29"}))
