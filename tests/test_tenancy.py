"""`TeamNamespace`: namespace labels, GPU quota, defaults, RBAC, network policies and the LocalQueue."""

import pytest

from gpu_platform.config import TeamConfig
from gpu_platform.kube import tenancy_objects as to
from gpu_platform.kube.tenancy import TeamNamespace
from gpu_platform.plan import render_manifests
from gpu_platform.schemas import validate_manifest
from gpu_platform.testing import run_program

TEAM = {"name": "research", "gpu_quota": 24, "cpu_quota": 192, "memory_quota_gib": 1536, "group": "ml-research"}


def build(**extra):
    args = {"team": TEAM, "cluster_queue": "research", "monitoring_namespace": "monitoring", **extra}
    return run_program(lambda: TeamNamespace("team-research", args))


def by_kind(rec, kind):
    return {r.inputs["metadata"]["name"]: r.inputs for r in rec if r.type.endswith(f":{kind}")}


def test_namespace_carries_team_and_pod_security_labels():
    ns = by_kind(build(), "Namespace")["research"]
    assert ns["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "gpu-platform",
        "gpu-platform.io/team": "research",
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }


def test_resource_quota_caps_gpus_cpu_memory_and_pods():
    quota = by_kind(build(), "ResourceQuota")["team-quota"]
    assert quota["metadata"]["namespace"] == "research"
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "24", "requests.cpu": "192",
                                     "requests.memory": "1536Gi", "pods": "340"}


def test_limit_range_gives_default_requests():
    limits = by_kind(build(), "LimitRange")["container-defaults"]
    assert limits["spec"] == {"limits": [{"type": "Container", "defaultRequest": {"cpu": "250m", "memory": "512Mi"}}]}


def test_team_group_gets_the_edit_role():
    binding = by_kind(build(), "RoleBinding")["research-edit"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ml-research"}]


def test_network_policies_deny_ingress_except_namespace_monitoring_and_ingress():
    policies = by_kind(build(ingress_namespaces=["ingress-nginx", "gateway"]), "NetworkPolicy")
    assert policies["default-deny-ingress"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert policies["allow-same-namespace"]["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]
    assert policies["allow-monitoring"]["spec"]["ingress"] == [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]}]
    assert policies["allow-ingress-controller"]["spec"]["ingress"] == [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}}]}]


def test_no_monitoring_no_monitoring_allowance():
    assert "allow-monitoring" not in by_kind(build(monitoring_namespace=None), "NetworkPolicy")


def test_local_queue_feeds_the_cluster_queue_and_waits_for_the_namespace():
    rec = build()
    queue = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")
    assert (queue.inputs["metadata"]["namespace"], queue.inputs["metadata"]["name"]) == ("research", "gpu")
    assert queue.inputs["spec"] == {"clusterQueue": "research"}
    namespace = rec.one("kubernetes:core/v1:Namespace")
    for reg in rec:
        if reg.custom and reg is not namespace:
            assert namespace.urn in reg.dependencies, reg.name


def test_without_kueue_no_local_queue():
    assert build(cluster_queue=None).of_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue") == []


def test_manifests_validate():
    manifests = render_manifests(build())
    assert len(manifests) == 9  # namespace, quota, limits, binding, 4 policies, queue
    for obj in manifests:
        validate_manifest(obj, "1.34")


def test_pods_quota_grows_with_gpus():
    assert to.pods_quota(TeamConfig("a", 0, 4, 16, "a")) == 100
    assert to.pods_quota(TeamConfig("a", 8, 64, 512, "a")) == 180


def test_unknown_pod_security_level_is_refused():
    with pytest.raises(ValueError, match="pod_security"):
        run_program(lambda: TeamNamespace("t", {"team": TEAM, "pod_security": "strict"}))
