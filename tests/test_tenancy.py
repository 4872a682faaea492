"""`TeamNamespace`: namespace labels, GPU quota, defaults, RBAC, network policies and the LocalQueue."""

import pytest
from network_policy_eval import Endpoint, admitted

from gpu_platform.config import TeamConfig
from gpu_platform.plan import render_manifests
from gpu_platform.pools import GpuPool
from gpu_platform.scheduling import program_teams
from gpu_platform.scheduling import tenancy_objects as to
from gpu_platform.scheduling.tenancy import TeamNamespace
from gpu_platform.schemas import validate_manifest
from gpu_platform.security import namespace_security
from gpu_platform.testing import run_program

TEAM = {"name": "research", "gpu_quota": 24, "cpu_quota": 192, "memory_quota_gib": 1536, "group": "ml-research"}
PROMETHEUS_PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus",
                                                   "app.kubernetes.io/instance": "kube-prometheus-stack-prometheus"}}}


def build(**extra):
    args = {"team": TEAM, "cluster_queue": "research", "monitoring_namespace": "monitoring", **extra}

    def program():
        # The ClusterQueue the LocalQueue feeds must exist in the program (made by another program here).
        program_teams.remember_queues("another stack", ["research"])
        return TeamNamespace("team-research", args)

    return run_program(program)


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
    assert ns["metadata"]["annotations"] == {
        "gpu-platform.io/pod-security-reason": namespace_security.TEAM_DEFAULT.reason}


def _pool(name, fabric):
    return GpuPool(name, "existing", "", "h100", 8, 80, 0, 4, rdma_fabric=fabric).spec()


@pytest.mark.parametrize("fabrics", [(), ("efa",), ("infiniband",), ("roce",), ("efa", "gpudirect-tcpxo"),
                                     ("gpudirect-rdma",), ("gpudirect-tcpx",)])
def test_team_namespace_is_baseline_whatever_the_pools(fabrics):
    pools = [_pool("plain", None), *(_pool(f"p{i}", f) for i, f in enumerate(fabrics))]
    ns = by_kind(build(pools=pools), "Namespace")["research"]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/audit"] == "restricted"
    reason = ns["metadata"]["annotations"]["gpu-platform.io/pod-security-reason"]
    assert reason == namespace_security.TEAM_DEFAULT.reason


@pytest.mark.parametrize(("level", "reason_part"), [
    ("restricted", "the team asked for restricted (podSecurity)"),
    ("privileged", "the team asked for privileged (podSecurity): infiniband: InfiniBand verbs pin memory"),
])
def test_a_team_chooses_its_level(level, reason_part):
    ns = by_kind(build(pools=[_pool("ib", "infiniband")], pod_security=level), "Namespace")["research"]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == level
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/warn"] == "restricted"
    assert ns["metadata"]["annotations"]["gpu-platform.io/pod-security-reason"].startswith(reason_part)


def test_stack_key_sets_the_team_level():
    from gpu_platform.config import parse_config
    from gpu_platform.platform import GpuPlatform
    from gpu_platform.testing import run_program

    raw = {"cloud": "existing", "networkPolicyEnforced": True,
           "nodePools": [{"name": "ib", "gpuModel": "h100", "gpusPerNode": 8, "rdma": True}],
           "teams": [{"name": "research", "gpuQuota": 8, "podSecurity": "privileged"}, {"name": "product"}]}
    rec = run_program(lambda: GpuPlatform("s", parse_config(raw, "s")))
    levels = {r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
              for r in rec.of_type("kubernetes:core/v1:Namespace")
              if r.inputs["metadata"]["name"] in ("research", "product")}
    assert levels == {"research": "privileged", "product": "baseline"}


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
    policies = by_kind(build(ingress_namespaces=["envoy-gateway-system", "gateway"]), "NetworkPolicy")
    assert policies["default-deny-ingress"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert policies["allow-same-namespace"]["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]
    assert policies["allow-monitoring"]["spec"]["ingress"] == [{"from": [PROMETHEUS_PEER]}]
    assert policies["allow-ingress-controller"]["spec"]["ingress"] == [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}}},
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}}]}]


def test_egress_is_the_namespace_dns_and_the_internet():
    policies = by_kind(build(), "NetworkPolicy")
    assert policies["restrict-egress"]["spec"] == {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"podSelector": {}}]},
        {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                 "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
         "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0",
                             "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"]}}]},
    ]}


def test_what_a_team_pod_reaches_and_what_reaches_it():
    policies = list(by_kind(build(), "NetworkPolicy").values())
    rank, other_rank = Endpoint("research", {"app.kubernetes.io/name": "trainer"}), Endpoint("research", {})
    dns = Endpoint("kube-system", {"k8s-app": "kube-dns"})
    prometheus = Endpoint("monitoring", {"app.kubernetes.io/name": "prometheus",
                                         "app.kubernetes.io/instance": "kube-prometheus-stack-prometheus"})
    assert admitted(policies, rank, other_rank, 29500)  # NCCL / the torchrun rendezvous
    assert admitted(policies, rank, dns, 53, "UDP") and admitted(policies, rank, dns, 53)
    assert not admitted(policies, rank, Endpoint("kube-system", {"k8s-app": "metrics-server"}), 443)
    assert admitted(policies, rank, Endpoint(ip="104.18.0.1"), 443)  # a model hub on the internet
    assert admitted(policies, rank, Endpoint(ip="169.254.169.254"), 80)  # metadata server (workload identity)
    for private in ("10.0.4.12", "172.20.0.1", "192.168.1.5", "100.64.3.2"):  # FSx, the API server's ENIs...
        assert not admitted(policies, rank, Endpoint(ip=private), 988)
    assert admitted(policies, prometheus, rank, 8000)
    assert not admitted(policies, Endpoint("monitoring", {"app.kubernetes.io/name": "grafana"}), rank, 8000)
    assert not admitted(policies, Endpoint("product", {}), rank, 29500)


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
    assert len(manifests) == 10  # namespace, quota, limits, binding, 5 policies, queue
    for obj in manifests:
        validate_manifest(obj, "1.34")


def test_pods_quota_grows_with_gpus():
    assert to.pods_quota(TeamConfig("a", 0, 4, 16, "a")) == 100
    assert to.pods_quota(TeamConfig("a", 8, 64, 512, "a")) == 180


def test_unknown_pod_security_level_is_refused():
    with pytest.raises(ValueError, match="pod_security"):
        run_program(lambda: TeamNamespace("t", {"team": TEAM, "pod_security": "strict"}))
