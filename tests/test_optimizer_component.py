"""`GpuOptimizer` under the mock harness: least privilege per action, egress, the CronJob."""

import pytest
import yaml

from gpu_platform.optimizer.gpu_optimizer import GpuOptimizer
from gpu_platform.optimizer.optimizer_objects import rbac_rules
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.testing import run_program

POOLS = [
    GpuPool("l4-shared", "aws", "g6.xlarge", "l4", 1, 24, 0, 4, sharing=Sharing("time-slicing", 4)).spec(),
    GpuPool("h100", "aws", "p5.48xlarge", "h100", 8, 80, 0, 2).spec(),
]


def build(**args):
    return run_program(lambda: GpuOptimizer("opt", {
        "pools": POOLS, "prometheus_url": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090", **args}))


def all_verbs(rules):
    return sorted({v for r in rules for v in r["verbs"]})


def test_dry_run_report_grants_list_only_and_no_wildcards():
    rec = build()
    rules = rec.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole").inputs["rules"]
    assert all_verbs(rules) == ["list"]
    assert all("*" not in r["verbs"] and "*" not in r["resources"] for r in rules)


@pytest.mark.parametrize(("action", "dry_run", "patched"), [
    ("scale-down", False, [["deployments"]]),
    ("annotate", False, [["deployments"], ["statefulsets"]]),
    ("scale-down", True, []),
    ("report", False, []),
])
def test_write_verbs_only_for_real_writes(action, dry_run, patched):
    rules = rbac_rules(action, dry_run)
    assert [r["resources"] for r in rules if "patch" in r["verbs"]] == patched


def test_cronjob_runs_the_optimizer_with_its_policy():
    rec = build(action="scale-down", dry_run=False, schedule="0 * * * *", utilization_threshold=5.0)
    cron = rec.one("kubernetes:batch/v1:CronJob").inputs
    assert cron["spec"]["schedule"] == "0 * * * *" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["optimize", "--prometheus", "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
                                 "--policy", "/etc/gpu-optimizer/policy.yaml", "--output", "json", "--apply"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    policy = yaml.safe_load(rec.one("kubernetes:core/v1:ConfigMap").inputs["data"]["policy.yaml"])
    assert (policy["action"], policy["dryRun"], policy["utilizationThreshold"]) == ("scale-down", False, 5.0)
    assert policy["pools"] == [{"name": "l4-shared", "gpuMemoryGiB": 24, "shared": True},
                               {"name": "h100", "gpuMemoryGiB": 80, "shared": False}]


def test_cronjob_pod_is_hardened_and_keeps_its_token_for_the_api():
    pod = build().one("kubernetes:batch/v1:CronJob").inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True  # lists (and may patch) workloads through the API
    assert pod["serviceAccountName"] == "gpu-optimizer"
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    [container] = pod["containers"]
    assert container["image"] == "ghcr.io/gpu-platform/gpu-platform:0.1.0"  # built by the release: no digest yet
    assert container["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
    assert container["env"] == [{"name": "HOME", "value": "/tmp"}]
    assert container["volumeMounts"] == [{"name": "policy", "mountPath": "/etc/gpu-optimizer", "readOnly": True},
                                         {"name": "tmp", "mountPath": "/tmp"}]
    assert pod["volumes"] == [{"name": "policy", "configMap": {"name": "gpu-optimizer-policy"}},
                              {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]


def test_network_policy_allows_dns_prometheus_and_api_server_only():
    rec = build(prometheus_namespace="observability")
    spec = rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy").inputs["spec"]
    assert spec["policyTypes"] == ["Ingress", "Egress"] and spec["ingress"] == []
    assert spec["egress"][1] == {
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}}}],
        "ports": [{"protocol": "TCP", "port": 9090}]}
    assert spec["egress"][2] == {"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]}


def test_children_are_parented_to_the_component():
    rec = build()
    component = rec.one("gpuplatform:index:GpuOptimizer")
    assert {r.type for r in rec.children_of(component)} == {
        "kubernetes:core/v1:Namespace", "kubernetes:core/v1:ServiceAccount", "kubernetes:core/v1:ConfigMap",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy", "kubernetes:batch/v1:CronJob"}


def test_policy_reads_the_signals_of_the_pools_vendors():
    # NVIDIA-only pools: no `vendors` key, the policy document is what it was before other vendors had a signal.
    assert "vendors" not in yaml.safe_load(build().one("kubernetes:core/v1:ConfigMap").inputs["data"]["policy.yaml"])
    azure = [GpuPool("t4", "azure", "Standard_NC4as_T4_v3", "t4", 1, 16, 0, 2).spec(),
             GpuPool("mi300x", "azure", "Standard_ND96isr_MI300X_v5", "mi300x", 8, 192, 0, 2).spec()]
    policy = yaml.safe_load(run_program(lambda: GpuOptimizer("opt", {"pools": azure, "prometheus_url": URL})).one(
        "kubernetes:core/v1:ConfigMap").inputs["data"]["policy.yaml"])
    assert policy["vendors"] == ["nvidia", "amd"]
    assert policy["pools"] == [{"name": "t4", "gpuMemoryGiB": 16, "shared": False},
                               {"name": "mi300x", "gpuMemoryGiB": 192, "shared": False, "vendor": "amd"}]
    amd_only = run_program(lambda: GpuOptimizer("opt", {"pools": azure[1:], "prometheus_url": URL}))
    assert yaml.safe_load(amd_only.one("kubernetes:core/v1:ConfigMap").inputs["data"]["policy.yaml"])[
        "vendors"] == ["amd"]
    # Neuron pools are no `recommend` target and add no signal: neuron-monitor's series name no pod.
    aws = [*POOLS, GpuPool("inf2", "aws", "inf2.xlarge", "inferentia2", 1, 32, 0, 2).spec()]
    policy = yaml.safe_load(run_program(lambda: GpuOptimizer("opt", {"pools": aws, "prometheus_url": URL})).one(
        "kubernetes:core/v1:ConfigMap").inputs["data"]["policy.yaml"])
    assert "vendors" not in policy and [p["name"] for p in policy["pools"]] == ["l4-shared", "h100"]


URL = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
