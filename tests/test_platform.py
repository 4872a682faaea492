"""`GpuPlatform` wiring: every Kubernetes object waits for the cluster through one gated provider."""

from conftest import planned_stack


def test_kubernetes_layers_use_a_provider_that_waits_for_the_cluster():
    rec = planned_stack("aws-dev").recording
    gated = rec.one("pulumi:providers:kubernetes", "aws-dev-kubernetes")
    node_groups = {r.urn for r in rec.of_type("aws:eks/nodeGroup:NodeGroup")}
    assert node_groups and node_groups <= set(gated.dependencies)
    assert gated.inputs["enableServerSideApply"] == "true"  # provider inputs travel as strings
    team_namespace = rec.one("kubernetes:core/v1:Namespace", "aws-dev-team-research-ns")
    assert team_namespace.provider.startswith(gated.urn + "::")
    # Ordering comes from the provider, not from an edge to every node pool on every object.
    assert not node_groups & set(team_namespace.dependencies)


def test_team_objects_wait_for_kueue_only():
    rec = planned_stack("existing").recording
    kueue = rec.one("kubernetes:helm.sh/v3:Release", "existing-scheduling-kueue")
    local_queue = next(r for r in rec if r.type.endswith(":LocalQueue"))
    assert kueue.urn in local_queue.dependencies
    cluster_queues = {r.urn for r in rec if r.type.endswith(":ClusterQueue")}
    assert not cluster_queues & set(local_queue.dependencies)
