"""Pod Security Admission on every namespace the platform creates: the decision table, and every reference stack."""

import pytest
from conftest import planned_stack
from network_policy_eval import Endpoint, admitted

from gpu_platform import labels, plan
from gpu_platform.plan import render_manifests
from gpu_platform.pools import GpuPool
from gpu_platform.schemas import validate_manifest
from gpu_platform.security import namespace_security
from gpu_platform.serving import keda
from gpu_platform.serving.keda import KedaOperator
from gpu_platform.testing import run_program

STACKS = sorted(plan.discover_stacks())
PLATFORM_NAMESPACES = {
    "gpu-operator": "privileged", "nvidia-network-operator": "privileged", "monitoring": "privileged",
    "keda": "restricted", "kueue-system": "restricted", "vpa": "restricted", "gpu-optimizer": "restricted",
    "inference": "restricted",
    # The health layer: node-problem-detector reads /dev/kmsg privileged, DCGM diagnostics need SYS_ADMIN.
    "gpu-health": "privileged",
    # Accelerator vendors' software: the Neuron node problem detector (hostPath) and neuron-monitor (privileged),
    # and the AMD GPU Operator's operands and NFD workers (privileged or hostPath), need host access; cert-manager
    # and the JobSet controller meet restricted with their charts' defaults (accelerators/neuron_values.py,
    # accelerators/amd_values.py, accelerators/tpu.py).
    "aws-neuron": "privileged", "kube-amd-gpu": "privileged", "cert-manager": "restricted",
    "jobset-system": "restricted",
    # The Gateway's namespace (only cert-manager's ACME solver pods ever run there), Envoy Gateway's controller and
    # Envoy pods, Envoy AI Gateway's controller: all meet restricted (security/namespace_security.py names the sources).
    "gateway": "restricted", "envoy-gateway-system": "restricted", "envoy-ai-gateway-system": "restricted",
    # The LLM service: vLLM and its endpoint picker, the platform's own pods (serving/llm_objects.py).
    "llm": "restricted",
    # The storage layer: the pre-pull DaemonSets meet restricted; the directories Job runs as root (a new file
    # system's root belongs to root), which baseline allows (storage/storage_objects.py).
    "gpu-storage": "baseline",
}
"""Every namespace of the reference stacks that is not a team's, with the level it must enforce."""
NEVER_LABELLED = {"kube-system", "gke-managed-system"}


def pool(fabric=None):
    return GpuPool(f"p-{fabric}", "existing", "", "h100", 8, 80, 0, 4, rdma_fabric=fabric)


def test_decision_table():
    assert {role: s.level for role, s in namespace_security.NAMESPACE_LEVELS.items()} == {
        "gpu-software": "privileged", "network-operator": "privileged", "monitoring": "privileged",
        "keda": "restricted", "kueue": "restricted", "vpa": "restricted", "optimizer": "restricted",
        "health": "privileged",
        "inference": "restricted", "llm": "restricted", "gateway": "restricted", "envoy-gateway": "restricted",
        "envoy-ai-gateway": "restricted"}
    for security in namespace_security.NAMESPACE_LEVELS.values():
        assert security.reason
    assert set(namespace_security.FABRIC_NEEDS) == {"infiniband", "roce", "gpudirect-tcpx", "gpudirect-tcpxo",
                                                    "gpudirect-rdma"}
    assert "IPC_LOCK" in namespace_security.FABRIC_NEEDS["infiniband"]
    assert "hostPath" in namespace_security.FABRIC_NEEDS["gpudirect-rdma"]
    with pytest.raises(ValueError, match="no Pod Security decision for namespace role 'ingress'"):
        namespace_security.namespace_pod_security("ingress")


def test_team_level_is_baseline_unless_the_team_asks():
    """RDMA pools never make a team namespace privileged on their own: a privileged namespace lets any member run
    privileged pods on GPU nodes shared with other teams."""
    mixed_pools = [pool("roce"), pool("efa"), pool("infiniband")]
    assert namespace_security.team_pod_security([]) == namespace_security.TEAM_DEFAULT
    assert namespace_security.team_pod_security(mixed_pools) == namespace_security.TEAM_DEFAULT
    assert namespace_security.team_pod_security(mixed_pools, "restricted").level == "restricted"
    privileged = namespace_security.team_pod_security(mixed_pools, "privileged")
    assert privileged.level == "privileged"
    assert privileged.reason == ("the team asked for privileged (podSecurity): "
                                 f"infiniband: {namespace_security.FABRIC_NEEDS['infiniband']}; "
                                 f"roce: {namespace_security.FABRIC_NEEDS['roce']}")
    assert namespace_security.team_pod_security([pool("efa")], "privileged").reason == (
        "the team asked for privileged (podSecurity)")
    with pytest.raises(ValueError, match="got 'root'"):
        namespace_security.team_pod_security([], "root")


def test_labels_enforce_the_level_and_audit_and_warn_restricted():
    assert namespace_security.pod_security_labels("baseline") == {
        "pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted"}
    with pytest.raises(ValueError, match="one of privileged, baseline, restricted, got 'strict'"):
        namespace_security.pod_security_labels("strict")
    body = namespace_security.namespace_body("keda", namespace_security.namespace_pod_security("keda"))
    assert body["metadata"]["annotations"] == {
        labels.POD_SECURITY_REASON_ANNOTATION: namespace_security.NAMESPACE_LEVELS["keda"].reason}


# ---------------------------------------------------------------------------------------------------------
# KEDA's namespace


def test_keda_namespace_is_restricted_and_isolated():
    rec = run_program(lambda: KedaOperator("keda", {"monitoring": True, "monitoring_namespace": "obs"}))
    namespace = rec.one("kubernetes:core/v1:Namespace")
    assert namespace.inputs["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "gpu-platform", "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/audit": "restricted", "pod-security.kubernetes.io/warn": "restricted"}
    policies = {r.inputs["metadata"]["name"]: r.inputs["spec"]
                for r in rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")}
    assert policies == {
        "default-deny-ingress": {"podSelector": {}, "policyTypes": ["Ingress"]},
        "allow-same-namespace": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [
            {"podSelector": {}}]}]},
        "allow-api-server-to-metrics-api": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "keda-operator-metrics-apiserver"}},
            "policyTypes": ["Ingress"], "ingress": [{"ports": [{"protocol": "TCP", "port": 6443}]}]},
        "allow-api-server-to-webhooks": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "keda-admission-webhooks"}},
            "policyTypes": ["Ingress"], "ingress": [{"ports": [{"protocol": "TCP", "port": 9443}]}]},
        "allow-prometheus": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{
            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "obs"}},
                      "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus",
                                                      "app.kubernetes.io/instance":
                                                          "kube-prometheus-stack-prometheus"}}}],
            "ports": [{"protocol": "TCP", "port": 8080}]}]},
    }
    release = rec.one("kubernetes:helm.sh/v3:Release")
    assert namespace.urn in release.dependencies
    for policy in rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy"):
        assert policy.urn in release.dependencies
    for obj in render_manifests(rec):
        validate_manifest(obj, "1.34")


def test_keda_reachable_by_the_api_server_only_on_its_two_tls_ports():
    bodies = keda.network_policies("keda", "monitoring")
    api_server, tenant = Endpoint(ip="10.0.0.5"), Endpoint("research", {})
    metrics_api = Endpoint("keda", {"app.kubernetes.io/name": keda.METRICS_API_SERVER})
    webhooks = Endpoint("keda", {"app.kubernetes.io/name": keda.ADMISSION_WEBHOOKS})
    operator = Endpoint("keda", {"app.kubernetes.io/name": "keda-operator"})
    assert admitted(bodies, api_server, metrics_api, 6443) and admitted(bodies, api_server, webhooks, 9443)
    assert not admitted(bodies, api_server, operator, 9666) and not admitted(bodies, tenant, operator, 9666)
    assert not admitted(bodies, tenant, metrics_api, 8080)
    assert admitted(bodies, metrics_api, operator, 9666)  # the metrics API server asks the operator over gRPC
    assert [p["metadata"]["name"] for p in keda.network_policies("keda", None)] == [
        "default-deny-ingress", "allow-same-namespace", "allow-api-server-to-metrics-api",
        "allow-api-server-to-webhooks"]


def test_keda_monitoring_namespace_needs_monitoring():
    with pytest.raises(ValueError, match="monitoring_namespace: takes effect only with monitoring: true"):
        run_program(lambda: KedaOperator("keda", {"monitoring_namespace": "obs"}))


# ---------------------------------------------------------------------------------------------------------
# Every reference stack


@pytest.fixture(scope="module")
def planned():
    return {stack: planned_stack(stack) for stack in plan.discover_stacks()}


def _namespaces(result) -> dict[str, dict]:
    return {m["metadata"]["name"]: m["metadata"].get("labels", {}) for m in result.manifests
            if m["kind"] == "Namespace"}


@pytest.mark.parametrize("stack", STACKS)
def test_every_namespace_enforces_its_decided_level(planned, stack):
    result = planned[stack]
    assert result.errors == []
    namespaces = _namespaces(result)
    assert not NEVER_LABELLED & set(namespaces)
    teams = {team.name for team in result.config.teams}
    team_level = namespace_security.team_pod_security(result.config.gpu_pools()).level
    for name, ns_labels in namespaces.items():
        expected = team_level if name in teams else PLATFORM_NAMESPACES[name]
        assert ns_labels.get(labels.POD_SECURITY_ENFORCE_LABEL) == expected, (name, ns_labels)
    # Helm creates no namespace: each one is a planned, labelled object.
    for release in result.recording.of_type("kubernetes:helm.sh/v3:Release"):
        assert release.inputs["createNamespace"] is False, release.name
        assert release.inputs["namespace"] in namespaces or release.inputs["namespace"] in NEVER_LABELLED


@pytest.mark.parametrize("stack", STACKS)
def test_every_namespace_audits_and_warns_at_restricted(planned, stack):
    for name, ns_labels in _namespaces(planned[stack]).items():
        assert ns_labels.get(labels.POD_SECURITY_AUDIT_LABEL) == "restricted", name
        assert ns_labels.get(labels.POD_SECURITY_WARN_LABEL) == "restricted", name


def test_the_stacks_cover_every_platform_namespace_and_a_privileged_team(planned):
    seen = {name for result in planned.values() for name in _namespaces(result)}
    assert set(PLATFORM_NAMESPACES) <= seen
    fabrics = {p.rdma_fabric for result in planned.values() for p in result.config.gpu_pools() if p.rdma_fabric}
    assert {"efa", "infiniband"} <= fabrics
