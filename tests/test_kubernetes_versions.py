"""Kubernetes versions as data: the calendars, the default minor, refusals, node skew and the support warning."""

import datetime
from pathlib import Path

import pytest
import yaml
from conftest import planned_stack

from gpu_platform import config_model
from gpu_platform.clouds import aws, azure, gcp, oci
from gpu_platform.config import ConfigError, parse_config
from gpu_platform.plan import summary
from gpu_platform.pool_builder import pool_args
from gpu_platform.testing import run_program
from gpu_platform.upgrades import kubernetes_versions as kv

STACKS = Path(__file__).resolve().parent.parent / "stacks"


def test_every_cloud_has_a_sourced_dated_calendar():
    assert set(kv.CALENDARS) == {"aws", "azure", "gcp", "oci"}
    for cloud, cal in kv.CALENDARS.items():
        assert cal.source.startswith("https://"), cloud
        assert cal.read_on == datetime.date(2026, 11, 29)
        assert cal.skew_source.startswith("https://"), cloud
        minors = [m.minor for m in cal.minors]
        assert minors == sorted(minors, key=kv.minor_number), cloud
        assert all(isinstance(m.standard_support_ends, datetime.date) for m in cal.minors)


def test_calendar_dates():
    table = {cloud: {m.minor: m.standard_support_ends.isoformat() for m in cal.minors}
             for cloud, cal in kv.CALENDARS.items()}
    assert table == {
        "aws": {"1.32": "2026-03-23", "1.33": "2026-07-29", "1.34": "2026-12-02", "1.35": "2027-03-27",
                "1.36": "2027-08-02"},
        "azure": {"1.34": "2026-11-30", "1.35": "2027-03-31", "1.36": "2027-06-30"},
        "gcp": {"1.32": "2026-04-11", "1.33": "2026-08-03", "1.34": "2026-10-01", "1.35": "2027-04-11",
                "1.36": "2027-08-09"},
        "oci": {"1.34": "2026-10-27", "1.35": "2027-02-28", "1.36": "2027-06-28"},
    }
    # OKE publishes no date, only a rule: its entries say they are estimates; the others are the calendars'.
    assert {m.basis for m in kv.CALENDARS["oci"].minors} == {
        "estimate: upstream end of life (OKE: 30 days after it releases 1.37)",
        "estimate: upstream end of life (OKE: 30 days after it releases 1.38)",
        "estimate: upstream end of life (OKE: 30 days after it releases 1.39)"}
    assert {m.basis for c in ("aws", "azure", "gcp") for m in kv.CALENDARS[c].minors} == {"calendar"}


def test_standard_support_on_the_date_read():
    assert kv.in_standard_support("aws") == ("1.34", "1.35", "1.36")
    assert kv.in_standard_support("azure") == ("1.34", "1.35", "1.36")
    assert kv.in_standard_support("gcp") == ("1.35", "1.36")
    assert kv.in_standard_support("oci") == ("1.35", "1.36")


def test_default_is_the_newest_minor_every_cloud_offers_in_standard_support():
    assert kv.default_minor() == "1.36"
    assert config_model.DEFAULT_KUBERNETES_VERSION == "1.36"
    assert kv.default_minor(("aws", "azure")) == "1.36"


@pytest.mark.parametrize("cloud, minor, message", [
    ("aws", "1.31", "s: kubernetesVersion: EKS does not offer Kubernetes 1.31; it offers 1.32, 1.33, 1.34, 1.35, "
                    "1.36 (as of 2026-11-29)"),
    ("azure", "1.33", "s: kubernetesVersion: AKS does not offer Kubernetes 1.33; it offers 1.34, 1.35, 1.36 "
                      "(as of 2026-11-29)"),
    ("gcp", "1.37", "s: kubernetesVersion: GKE does not offer Kubernetes 1.37; it offers 1.32, 1.33, 1.34, 1.35, "
                    "1.36 (as of 2026-11-29)"),
    ("oci", "1.33", "s: kubernetesVersion: OKE does not offer Kubernetes 1.33; it offers 1.34, 1.35, 1.36 "
                    "(as of 2026-11-29)"),
])
def test_stack_refuses_a_minor_the_cloud_does_not_offer(cloud, minor, message):
    where = {"aws": {"region": "us-west-2"}, "azure": {"region": "westeurope"},
             "gcp": {"region": "us-central1", "project": "p"},
             "oci": {"region": "us-ashburn-1", "compartmentId": "ocid1.compartment.oc1..aaaa"}}[cloud]
    raw = {"cloud": cloud, **where, "kubernetesVersion": minor,
           "nodePools": [{"name": "gpu", "instanceType": "none", "maxNodes": 1}]}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    assert str(err.value) == message


def test_existing_cluster_accepts_any_well_formed_minor():
    raw = {"cloud": "existing", "kubernetesVersion": "1.30",
           "nodePools": [{"name": "gpu", "instanceType": "nvidia-h100-80gb", "maxNodes": 1, "gpusPerNode": 8}]}
    try:
        config = parse_config(raw, "s")
    except ConfigError as err:  # a later rule about the pool or another key; the version itself passed
        assert not str(err).startswith("s: kubernetesVersion"), err
    else:
        assert config.kubernetes_version == "1.30"
    assert kv.offered_problem("existing", "1.30") is None


@pytest.mark.parametrize("build, message", [
    (lambda: aws.EksCluster("dev", {"region": "us-west-2", "kubernetes_version": "1.31", "addon_versions": {}}),
     "EksCluster dev: kubernetes_version: EKS does not offer Kubernetes 1.31; it offers 1.32, 1.33, 1.34, 1.35, "
     "1.36 (as of 2026-11-29)"),
    (lambda: azure.AksCluster("dev", {"location": "westeurope", "kubernetes_version": "1.33"}),
     "AksCluster dev: kubernetes_version: AKS does not offer Kubernetes 1.33; it offers 1.34, 1.35, 1.36 "
     "(as of 2026-11-29)"),
    (lambda: gcp.GkeCluster("dev", {"region": "us-central1", "kubernetes_version": "1.31"}),
     "GkeCluster dev: kubernetes_version: GKE does not offer Kubernetes 1.31; it offers 1.32, 1.33, 1.34, 1.35, "
     "1.36 (as of 2026-11-29)"),
    (lambda: oci.OkeCluster("dev", {"compartment_id": "ocid1.compartment.oc1..aaaa", "kubernetes_version": "v1.33.1"}),
     "OkeCluster dev: kubernetes_version: OKE does not offer Kubernetes 1.33; it offers 1.34, 1.35, 1.36 "
     "(as of 2026-11-29)"),
])
def test_cluster_components_refuse_a_minor_the_cloud_does_not_offer(build, message):
    with pytest.raises(ConfigError) as err:
        run_program(build)
    assert str(err.value) == message


@pytest.mark.parametrize("cloud, plane, node, problem", [
    ("aws", "1.36", "1.36", None),
    ("aws", "1.36", "1.33", None),
    ("aws", "1.36", "1.32", "nodes at Kubernetes 1.32 would trail the control plane (1.36) by 4 minors; EKS allows "
                            "at most 3"),
    ("azure", "1.36", "1.33", None),
    ("oci", "1.36", "1.33", None),
    ("gcp", "1.36", "1.34", None),
    ("gcp", "1.36", "1.33", "nodes at Kubernetes 1.33 would trail the control plane (1.36) by 3 minors; GKE allows "
                            "at most 2"),
    ("oci", "1.35", "1.36", "nodes at Kubernetes 1.36 would be newer than the control plane (1.35)"),
    ("existing", "1.36", "1.33", None),
    ("existing", "1.36", "1.32", "nodes at Kubernetes 1.32 would trail the control plane (1.36) by 4 minors; "
                                 "Kubernetes allows at most 3"),
])
def test_node_skew(cloud, plane, node, problem):
    assert kv.node_skew_problem(cloud, plane, node) == problem


def test_aks_pool_version_must_be_within_the_skew_of_the_cluster():
    entry = {"name": "a100", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2}
    with pytest.raises(ConfigError) as err:
        run_program(lambda: azure.AksCluster("dev", {
            "location": "westeurope", "kubernetes_version": "1.34",
            "gpu_pools": [{**pool_args("azure", entry), "kubernetes_version": "1.35"}]}))
    assert str(err.value) == ("AksCluster dev: gpu_pools[0].kubernetes_version: nodes at Kubernetes 1.35 would be "
                              "newer than the control plane (1.34)")


@pytest.mark.parametrize("today, expected", [
    (datetime.date(2027, 5, 3), None),  # 91 days before 2027-08-02
    (datetime.date(2027, 5, 5), "WARNING Kubernetes 1.36 leaves EKS standard support on 2027-08-02 (in 89 days); "
                                "plan an upgrade to 1.37 once EKS offers it (update upgrades/kubernetes_versions.py) "
                                "(docs/upgrades.md)"),
    (datetime.date(2027, 8, 12), "WARNING Kubernetes 1.36 left EKS standard support on 2027-08-02 (10 days ago) and "
                                 "is no longer supported as standard; upgrade to 1.37 once EKS offers it (update "
                                 "upgrades/kubernetes_versions.py) (docs/upgrades.md)"),
])
def test_warning_for_the_newest_minor(today, expected):
    # No newer minor is listed yet: the warning names the next one and the table to update.
    assert kv.support_warning("aws", "1.36", today) == expected


def test_warning_names_the_next_minor():
    today = datetime.date(2026, 11, 29)
    assert kv.support_warning("aws", "1.35", datetime.date(2026, 12, 26)) is None  # 91 days before 2027-03-27
    assert kv.support_warning("aws", "1.35", datetime.date(2026, 12, 28)) == (
        "WARNING Kubernetes 1.35 leaves EKS standard support on 2027-03-27 (in 89 days); plan an upgrade to 1.36 "
        "(docs/upgrades.md)")
    assert kv.support_warning("azure", "1.34", today) == (
        "WARNING Kubernetes 1.34 leaves AKS standard support on 2026-11-30 (in 1 days); plan an upgrade to 1.35 "
        "(docs/upgrades.md)")
    assert kv.support_warning("oci", "1.34", today) == (
        "WARNING Kubernetes 1.34 left OKE standard support on about 2026-10-27 (33 days ago) and is no longer "
        "supported as standard; upgrade to 1.35 now (docs/upgrades.md)")
    assert kv.support_warning("existing", "1.30", today) is None


def _stack(name: str) -> dict:
    values = yaml.safe_load((STACKS / f"Pulumi.{name}.yaml").read_text())["config"]
    return {k.split(":", 1)[1]: v for k, v in values.items() if k.startswith("gpu-platform:")}


def test_every_reference_stack_is_on_the_default():
    stacks = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
    assert len(stacks) == 17
    assert {name: _stack(name).get("kubernetesVersion") for name in stacks} == {name: "1.36" for name in stacks}


def test_summary_warns_with_an_injected_today():
    plan = planned_stack("aws-dev")
    assert plan.errors == []
    lines = summary(plan, today=datetime.date(2027, 5, 5)).splitlines()
    assert lines[1] == ("  WARNING Kubernetes 1.36 leaves EKS standard support on 2027-08-02 (in 89 days); plan an "
                        "upgrade to 1.37 once EKS offers it (update upgrades/kubernetes_versions.py) "
                        "(docs/upgrades.md)")
    assert "WARNING" not in summary(plan, today=datetime.date(2027, 5, 3))
