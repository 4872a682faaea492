"""One team for every component that takes a team (issue 38 item 3): a frozen `Team` given to `SchedulingPolicy` and
`TeamNamespace`; two components that disagree on a team, a LocalQueue feeding a ClusterQueue nobody defines, and
quotas beyond what the pools hold are refused in one line before the refused component registers anything; team
inputs one component cannot use are refused there."""

import pytest
from conftest import refused

from gpu_platform import Team
from gpu_platform.errors import ConfigError
from gpu_platform.pools import GpuPool
from gpu_platform.scheduling.policy import SchedulingPolicy
from gpu_platform.scheduling.tenancy import TeamNamespace
from gpu_platform.storage.data_plane import DataPlaneStorage
from gpu_platform.testing import run_program

QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
# Two L4 GPUs in all.
POOLS = [GpuPool("l4-infer", "aws", "g6.2xlarge", "l4", 1, 24, 0, 2).spec()]


def refusal(*builds) -> tuple[str, list[str]]:
    """The error line of the last of ``builds`` (the others must succeed) and the names of what was registered."""
    return refused(*builds)

def policy(*teams, **extra):
    return lambda: SchedulingPolicy("sched", {"pools": POOLS, "teams": list(teams), **extra})


def namespace(team, **extra):
    name = team.name if isinstance(team, Team) else team["name"]
    return lambda: TeamNamespace(f"team-{name}", {"team": team, "pools": POOLS, **extra})


def test_one_team_object_plans_both_components():
    research = Team(name="research", pool_quotas={"l4": 2}, group="ml-research", storage_quota="1Ti",
                    preemption={"within_cluster_queue": "Never"})
    rec = run_program(lambda: (policy(research)(), namespace(research, cluster_queue="research")()))
    queue = rec.one(QUEUE).inputs["spec"]
    gpus = [next(r for r in f["resources"] if r["name"] == "nvidia.com/gpu")
            for f in queue["resourceGroups"][0]["flavors"]]
    assert gpus == [{"name": "nvidia.com/gpu", "nominalQuota": 0}, {"name": "nvidia.com/gpu", "nominalQuota": 2}]
    assert queue["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}
    # What the namespace uses of the same object: the total, group and storage quota.
    hard = rec.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]
    assert (hard["requests.nvidia.com/gpu"], hard["requests.storage"]) == ("2", "1Ti")
    binding = rec.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding").inputs
    assert binding["subjects"][0]["name"] == "ml-research"
    assert rec.one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue").inputs["spec"] == {"clusterQueue": "research"}


def test_a_team_is_frozen_and_checked_when_built():
    team = Team(name="research", gpu_quota=2)
    with pytest.raises(AttributeError, match="frozen"):
        team.name = "other"  # type: ignore[misc]
    assert team == Team(name="research", gpu_quota=2) and team != Team(name="research", gpu_quota=1)
    with pytest.raises(ConfigError) as err:
        Team(name="research", gpu_quota=-1)
    assert str(err.value) == "Team research: gpu_quota: must be >= 0, got -1"


def test_the_namespace_disagreeing_with_the_policy_is_refused():
    line, registered = refusal(policy({"name": "research", "gpu_quota": 2}),
                               namespace({"name": "research", "gpu_quota": 32}, overcommit=True))
    assert line == ("TeamNamespace team-research: team: team 'research' has gpu_quota 32 here but 2 in "
                    "SchedulingPolicy sched teams[0]; build one Team and give it to both")
    assert not [n for n in registered if n.startswith("team-research")]


def test_the_policy_disagreeing_with_a_namespace_is_refused():
    line, registered = refusal(namespace({"name": "research", "gpu_quota": 1}),
                               policy({"name": "research", "gpu_quota": 2}))
    assert line == ("SchedulingPolicy sched: teams[0]: team 'research' has gpu_quota 2 here but 1 in TeamNamespace "
                    "team-research; build one Team and give it to both")
    assert not [n for n in registered if n.startswith("sched")]


def test_two_team_objects_of_one_name_must_agree_on_everything():
    line, _ = refusal(policy(Team(name="research", gpu_quota=2, group="a")),
                      namespace(Team(name="research", gpu_quota=2, group="b"), cluster_queue="research"))
    assert line == ("TeamNamespace team-research: team: team 'research' has group b here but a in SchedulingPolicy "
                    "sched teams[0]; build one Team and give it to both")
    line, _ = refusal(policy(Team(name="research", pool_quotas={"l4": 2}, flavor_order=["l4"])),
                      namespace(Team(name="research", pool_quotas={"l4": 2}), cluster_queue="research"))
    assert line == ("TeamNamespace team-research: team: team 'research' has flavor_order none here but [l4] in "
                    "SchedulingPolicy sched teams[0]; build one Team and give it to both")


def test_a_cluster_queue_nobody_defines_is_refused():
    line, registered = refusal(namespace({"name": "research", "gpu_quota": 2}, cluster_queue="research"))
    assert line == ("TeamNamespace team-research: cluster_queue: no SchedulingPolicy of this program defines "
                    "ClusterQueue 'research' (defined: none); build the SchedulingPolicy with that team first")
    assert registered == []
    line, _ = refusal(policy({"name": "product", "gpu_quota": 1}, kueue=True),
                      namespace({"name": "research", "gpu_quota": 1}, cluster_queue="research"))
    assert line.endswith("ClusterQueue 'research' (defined: product); build the SchedulingPolicy with that team first")


def test_another_teams_cluster_queue_is_refused():
    line, _ = refusal(policy({"name": "product", "gpu_quota": 1}, {"name": "research", "gpu_quota": 1}),
                      namespace({"name": "research", "gpu_quota": 1}, cluster_queue="product"))
    assert line == ("TeamNamespace team-research: cluster_queue: ClusterQueue 'product' (SchedulingPolicy sched) "
                    "admits namespace 'product' only (its namespaceSelector); team 'research' feeds ClusterQueue "
                    "'research'")


def test_without_kueue_no_queue_is_defined():
    line, _ = refusal(policy({"name": "research", "gpu_quota": 1}, kueue=False),
                      namespace({"name": "research", "gpu_quota": 1}, cluster_queue="research"))
    assert "no SchedulingPolicy of this program defines ClusterQueue 'research' (defined: none)" in line


def test_a_new_program_starts_afresh():
    run_program(policy({"name": "research", "gpu_quota": 1}))
    line, _ = refusal(namespace({"name": "research", "gpu_quota": 1}, cluster_queue="research"))
    assert "(defined: none)" in line


@pytest.mark.parametrize(("field", "value"), [("group", "ml"), ("storage_quota", "1Ti")])
def test_namespace_settings_given_to_the_policy_are_refused(field, value):
    line, registered = refusal(policy({"name": "research", "gpu_quota": 1, field: value}))
    assert line == (f"SchedulingPolicy sched: teams[0].{field}: is the team namespace's (TeamNamespace); a "
                    "ClusterQueue makes no use of it: give it there, or one Team to both")
    assert registered == []


@pytest.mark.parametrize(("field", "value"), [
    ("borrowing_limit", 1), ("lending_limit", 1), ("pool_borrowing_limits", {"l4": 1}), ("flavor_order", ["l4"]),
    ("preemption", {"within_cluster_queue": "Never"}), ("fair_sharing_weight", 2.0),
])
def test_queue_settings_given_to_a_namespace_are_refused(field, value):
    line, registered = refusal(namespace({"name": "research", "gpu_quota": 2, field: value}))
    assert line == (f"TeamNamespace team-research: team.{field}: is the team's ClusterQueue's (SchedulingPolicy); a "
                    "namespace makes no use of it: give it there, or one Team to both")
    assert registered == []


def test_quota_beyond_capacity_is_refused_unless_overcommit():
    line, registered = refusal(policy({"name": "research", "gpu_quota": 1000}))
    assert line == ("SchedulingPolicy sched: teams[0].gpu_quota: 1000 nvidia.com/gpu is more than the 2 the node "
                    "pools hold at their maximum size; lower it, or pass overcommit=True")
    assert registered == []
    rec = run_program(policy({"name": "research", "gpu_quota": 1000}, overcommit=True))
    flavors = rec.one(QUEUE).inputs["spec"]["resourceGroups"][0]["flavors"]
    assert [next(r["nominalQuota"] for r in f["resources"] if r["name"] == "nvidia.com/gpu") for f in flavors] == [
        0, 1000]


def test_a_namespace_beyond_capacity_is_refused_unless_overcommit():
    line, _ = refusal(namespace({"name": "research", "gpu_quota": 1000}))
    assert line == ("TeamNamespace team-research: team.gpu_quota: 1000 nvidia.com/gpu is more than the 2 the node "
                    "pools hold at their maximum size; lower it, or pass overcommit=True")
    rec = run_program(namespace({"name": "research", "gpu_quota": 1000}, overcommit=True))
    assert rec.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]["requests.nvidia.com/gpu"] == "1000"


def test_pool_quotas_of_teams_beyond_a_pool_are_refused():
    line, _ = refusal(policy({"name": "a", "pool_quotas": {"l4-infer": 2}}, {"name": "b", "pool_quotas": {"l4": 1}}))
    assert line == ("SchedulingPolicy sched: teams[1].pool_quotas: 1 nvidia.com/gpu with the 2 of the teams before it "
                    "is more than the 2 the node pools hold at their maximum size; lower it, or pass overcommit=True")


def test_kueue_settings_without_kueue_are_refused():
    line, _ = refusal(policy({"name": "a", "pool_quotas": {"l4": 1}}, kueue=False))
    assert line == ("SchedulingPolicy sched: teams[0].pool_quotas: is a Kueue setting and kueue is false; remove it "
                    "or install Kueue")


def test_a_pool_name_needs_the_pools():
    line, _ = refusal(lambda: TeamNamespace("team-a", {"team": {"name": "a", "pool_quotas": {"l4-infer": 1}}}))
    assert line == ("TeamNamespace team-a: team.pool_quotas.l4-infer: names no GPU model, and no pools are given to "
                    "name a pool: pass pools")


def test_against_the_engine_a_program_is_its_stack(monkeypatch):
    """The provider serving another language's program gets a fresh monitor client per construct call: the record
    follows the stack, not the client."""
    import grpc
    from pulumi.runtime import settings
    from pulumi.runtime.proto import resource_pb2_grpc

    from gpu_platform.scheduling import program_teams

    def client():
        return resource_pb2_grpc.ResourceMonitorStub(grpc.insecure_channel("127.0.0.1:1"))

    stack = {"name": "dev"}
    monkeypatch.setattr(settings, "get_stack", lambda: stack["name"])
    monkeypatch.setattr(settings, "get_monitor", client)
    program_teams.remember_queues("SchedulingPolicy sched", ["research"])
    assert program_teams.queue_problem("research", "research") is None  # another client, the same stack
    stack["name"] = "prod"
    assert "(defined: none)" in program_teams.queue_problem("research", "research")


# The team's storage quota and DataPlaneStorage's claims (issue 38): one quota, whichever is constructed first.
def storage(*sizes, quotas=None, namespace="research"):
    """A `DataPlaneStorage` "data" with dynamic claims of ``sizes`` in ``namespace`` (and ``storage_quotas``)."""
    volumes = [{"name": f"claim-{i}", "namespace": namespace, "size": s, "storage_class": "shared"}
               for i, s in enumerate(sizes)]
    return lambda: DataPlaneStorage("data", {"volumes": volumes, **({"storage_quotas": quotas} if quotas else {})})


RESEARCH = Team(name="research", pool_quotas={"l4": 2}, storage_quota="1Ti")


def test_storage_quotas_disagreeing_with_the_team_namespace_are_refused():
    line, registered = refusal(namespace(RESEARCH), storage("10Gi", quotas={"research": "50Gi"}))
    assert line == ("DataPlaneStorage data: storage_quotas.research: 50Gi, but TeamNamespace team-research says "
                    "storage_quota 1Ti; give one quota (the Team's)")
    assert "data" not in registered and "team-research" in registered


def test_a_team_namespace_disagreeing_with_earlier_storage_quotas_is_refused():
    line, registered = refusal(storage("10Gi", quotas={"research": "50Gi"}), namespace(RESEARCH))
    assert line == ("TeamNamespace team-research: team.storage_quota: 1Ti, but DataPlaneStorage data says "
                    "storage_quotas.research: 50Gi; give one quota (the Team's)")
    assert "team-research" not in registered and "data" in registered


def test_a_namespace_without_a_quota_disagrees_with_storage_quotas_naming_one():
    no_quota = Team(name="research", pool_quotas={"l4": 2})
    line, _ = refusal(namespace(no_quota), storage("10Gi", quotas={"research": "50Gi"}))
    assert line == ("DataPlaneStorage data: storage_quotas.research: 50Gi, but TeamNamespace team-research says "
                    "storage_quota none; give one quota (the Team's)")


def test_the_policys_team_object_carries_the_storage_quota_too():
    line, _ = refusal(policy(RESEARCH), storage("10Gi", quotas={"research": "50Gi"}))
    assert line == ("DataPlaneStorage data: storage_quotas.research: 50Gi, but SchedulingPolicy sched teams[0] says "
                    "storage_quota 1Ti; give one quota (the Team's)")
    line, _ = refusal(storage("10Gi", quotas={"research": "50Gi"}), policy(RESEARCH))
    assert line == ("SchedulingPolicy sched: teams[0].storage_quota: 1Ti, but DataPlaneStorage data says "
                    "storage_quotas.research: 50Gi; give one quota (the Team's)")


def test_agreeing_quotas_plan_in_either_order():
    for builds in ((namespace(RESEARCH), storage("512Gi", "512Gi", quotas={"research": "1024Gi"})),
                   (storage("512Gi", "512Gi", quotas={"research": "1Ti"}), namespace(RESEARCH))):
        recording = run_program(lambda builds=builds: [build() for build in builds])
        assert len([r for r in recording if r.type == "kubernetes:core/v1:PersistentVolumeClaim"]) == 2
        assert recording.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]["requests.storage"] == "1Ti"


def test_claims_over_the_team_namespaces_quota_are_refused_without_storage_quotas():
    line, registered = refusal(namespace(RESEARCH), storage("512Gi", "600Gi"))
    assert line == ("DataPlaneStorage data: volumes[1].size: claim research/claim-1 brings the claims in namespace "
                    "'research' to 1112Gi, more than its storage quota 1Ti (TeamNamespace team-research's "
                    "storage_quota)")
    assert "data" not in registered
    # The other order: the namespace's quota cannot hold what the data plane already claims there.
    line, _ = refusal(storage("512Gi", "600Gi"), namespace(RESEARCH))
    assert line == ("TeamNamespace team-research: team.storage_quota: 1Ti is less than the 1112Gi the claims of "
                    "DataPlaneStorage data request in namespace 'research'")


def test_claims_of_a_namespace_no_team_owns_are_checked_as_before():
    # Another team's namespace changes nothing for "product": its claims are checked against storage_quotas alone.
    run_program(lambda: (namespace(RESEARCH)(), storage("5Ti", namespace="product")()))
    line, _ = refusal(namespace(RESEARCH), storage("5Ti", quotas={"product": "4Ti"}, namespace="product"))
    assert line == ("DataPlaneStorage data: volumes[0].size: claim product/claim-0 brings the claims in namespace "
                    "'product' to 5Ti, more than its storage quota 4Ti (storage_quotas.product: the TeamNamespace's "
                    "requests.storage)")
