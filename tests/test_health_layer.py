"""The health layer (issue 21): the XID catalogue and node-problem-detector's configuration, the ``health`` section,
`GpuHealth`'s objects under the mock engine, the node affinity of the platform's workloads, the alerts (promtool) and
the plan of a reference stack."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import planned_stack

from gpu_platform import labels, versions
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.health import health_catalog, health_config, health_monitoring, health_objects, health_placement
from gpu_platform.health.gpu_health import GpuHealth
from gpu_platform.monitoring import alerts
from gpu_platform.platform import GpuPlatform
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.testing import run_program

ROOT = Path(__file__).resolve().parents[1]
PROMTOOL_TESTS = ROOT / "tests" / "promtool" / "health"
RULE_FILE = "gpu-platform-health-rules.yaml"
RUNBOOK_BASE = "https://github.com/gpu-platform/gpu-platform/blob/main"

H100 = GpuPool("h100", "existing", "", "h100", 8, 80, 1, 2, rdma_fabric="infiniband")
L4 = GpuPool("l4", "existing", "", "l4", 1, 24, 0, 4)
MI300X = GpuPool("mi300x", "existing", "", "mi300x", 8, 192, 0, 2)
A100_MIG = GpuPool("a100-mig", "existing", "", "a100-80gb", 8, 80, 0, 2, sharing=Sharing("mig", mig_profile="1g.10gb"))


# ---------------------------------------------------------------------------------------------------------
# The catalogue and node-problem-detector's configuration


def test_the_xid_classes():
    assert health_catalog.codes("fatal") == (48, 62, 64, 74, 79, 95, 119, 120)
    assert health_catalog.codes("recoverable") == (63, 92, 94)
    assert health_catalog.codes("application") == (13, 31, 43, 45, 68, 109)
    # The device plugin's application XIDs (the monitoring layer's alert split) are the application class.
    assert set(alerts.APPLICATION_XIDS) == set(health_catalog.codes("application"))
    assert health_catalog.fatal_conditions() == ("GpuDoubleBitEcc", "GpuXidFatal", "GpuRowRemapFailure",
                                                 "GpuNvlinkError", "GpuFellOffBus")
    with pytest.raises(ValueError, match="XID class must be one of fatal, recoverable, application, got 'bad'"):
        health_catalog.codes("bad")


def test_the_monitor_has_the_kernel_monitor_format():
    """The fields of node-problem-detector's config/kernel-monitor.json at v1.36.0 (pkg/systemlogmonitor/config.go:
    plugin, logPath, lookback, bufferSize, source, metricsReporting, conditions, rules)."""
    config = health_catalog.npd_config()
    assert set(config) == {"plugin", "logPath", "lookback", "bufferSize", "source", "metricsReporting", "conditions",
                           "rules"}
    assert (config["plugin"], config["logPath"], config["lookback"], config["source"]) == (
        "kmsg", "/dev/kmsg", "10m", "gpu-health-monitor")
    assert config["conditions"][-1] == {"type": "GpuFellOffBus", "reason": "NoGpuFellOffBus",
                                        "message": "no XID 79 GPU has fallen off the bus"}
    assert [c["type"] for c in config["conditions"]] == list(health_catalog.fatal_conditions())
    for rule in config["rules"]:
        assert set(rule) == ({"type", "condition", "reason", "pattern"} if rule["type"] == "permanent"
                             else {"type", "reason", "pattern"})
    assert [r["reason"] for r in config["rules"] if r["type"] == "temporary"] == [
        "GpuXidRecoverable", "GpuXidApplication", "RdmaLinkDown", "RdmaPortModuleEvent"]
    assert [r["reason"] for r in health_catalog.npd_config(rdma=False)["rules"]][-1] == "GpuXidApplication"
    assert json.loads(health_catalog.npd_config_json()) == config


def matching_reasons(line: str) -> list[str]:
    """The rules a kernel line triggers, matched as node-problem-detector does (the pattern must reach the end)."""
    return [r.reason for r in health_catalog.log_rules() if re.search(r.pattern + r"\Z", line)]


@pytest.mark.parametrize(("line", "reasons"), [
    ("NVRM: Xid (PCI:0000:65:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
     ["GpuFellOffBus"]),
    ("NVRM: Xid (PCI:0000:3b:00): 48, pid=1896, name=python, An uncorrectable double bit error (DBE) has been "
     "detected on GPU in the framebuffer at partition 0, subpartition 0.", ["GpuDoubleBitEcc"]),
    ("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
     ["GpuXidRecoverable"]),
    ("NVRM: Xid (PCI:0000:10:1c): 64, pid='<unknown>', name=<unknown>, Row Remapper: Failed to remap row",
     ["GpuRowRemapFailure"]),
    ("NVRM: Xid (PCI:0000:b7:00): 74, pid=2231, name=python, NVLink: fatal error detected on link 3",
     ["GpuNvlinkError"]),
    ("NVRM: Xid (PCI:0000:b7:00): 119, pid=91, name=nvidia-smi, Timeout after 6s of waiting for RPC response",
     ["GpuXidFatal"]),
    ("NVRM: Xid (PCI:0000:07:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)", ["GpuXidApplication"]),
    # 7 and 790 are not 79; an unlisted XID matches nothing.
    ("NVRM: Xid (PCI:0000:65:00): 7, pid=1, something", []),
    ("NVRM: Xid (PCI:0000:65:00): 790, pid=1, something", []),
    ("mlx5_core 0000:3b:00.0 ibp59s0: Link down", ["RdmaLinkDown"]),
    ("mlx5_core 0000:3b:00.0 ibp59s0: Link up", []),
    ("mlx5_core 0000:3b:00.0: Port module event: module 0, Cable unplugged", ["RdmaPortModuleEvent"]),
    ("mlx5_core 0000:3b:00.0: mlx5_port_module_event:1162:(pid 0): Port module event[error]: module 0, Cable error, "
     "Bus stuck (I2C or data shorted)", ["RdmaPortModuleEvent"]),
    ("mlx5_core 0000:3b:00.0: Port module event: module 0, Cable plugged", []),
])
def test_kernel_lines_make_the_right_problem(line, reasons):
    assert matching_reasons(line) == reasons


def test_the_docs_carry_the_catalogue():
    assert health_catalog.catalogue_table() in (ROOT / "docs" / "health.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------
# The health section


def test_defaults():
    health = health_config.parse_health({}, "aws")
    assert health == health_config.HealthConfig(
        True, health_config.ActiveChecksConfig(True, "0 */6 * * *", 2, True),
        health_config.RemediationConfig("dry-run", 1, 10, 60))


def test_every_key_is_read():
    health = health_config.parse_health({"health": {
        "activeChecks": {"schedule": "0 3 * * *", "dcgmDiagLevel": 3, "allReduce": False},
        "remediation": {"mode": "drain", "maxQuarantinedPerPool": 2, "maxQuarantinedPercent": 25,
                        "cooldownMinutes": 15}}}, "aws")
    assert health.active_checks == health_config.ActiveChecksConfig(True, "0 3 * * *", 3, False)
    assert health.remediation == health_config.RemediationConfig("drain", 2, 25, 15)


@pytest.mark.parametrize(("section", "message"), [
    ({"activeChecks": {"dcgmDiagLevel": 5}}, "health.activeChecks.dcgmDiagLevel: must be 1, 2, 3 or 4 (dcgmi diag "
                                             "-r), got 5"),
    ({"activeChecks": {"schedule": "every hour"}}, "health.activeChecks.schedule: 'every hour' is not a five-field "
                                                   "cron schedule"),
    ({"activeChecks": {"enabled": False, "schedule": "0 * * * *"}},
     "health.activeChecks.schedule: takes effect only with health.activeChecks.enabled: true"),
    ({"enabled": False, "remediation": {"mode": "cordon"}},
     "health.remediation: takes effect only with health.enabled: true"),
    ({"remediation": {"mode": "reboot"}}, "health.remediation.mode: 'reboot' is not one of dry-run, cordon, drain"),
    ({"remediation": {"maxQuarantinedPercent": 150}}, "health.remediation.maxQuarantinedPercent: must be <= 100, "
                                                      "got 150"),
    ({"remediation": {"maxQuarantinedPerPool": 0}}, "health.remediation.maxQuarantinedPerPool: must be >= 1, got 0"),
    ({"remediation": {"cooldown": 5}}, "health.remediation.cooldown: unknown key; did you mean 'cooldownMinutes'?"),
])
def test_bad_values_are_refused(section, message):
    with pytest.raises(ConfigError) as err:
        health_config.parse_health({"health": section}, "aws")
    assert str(err.value).startswith(message)


def small_stack(pools=None, **extra) -> dict:
    """An existing cluster without the slow layers."""
    return {"cloud": "existing", "inference": {"enabled": False}, "training": {"enabled": False},
            "optimizer": {"enabled": False}, "scheduling": {"kueue": False}, "autoscaling": {"vpa": False},
            "monitoring": {"enabled": False},
            "nodePools": pools or [{"name": "h100", "gpuModel": "h100", "gpusPerNode": 8, "minNodes": 1,
                                    "maxNodes": 2},
                                   {"name": "l4", "gpuModel": "l4", "gpusPerNode": 1, "minNodes": 0, "maxNodes": 2}],
            **extra}


@pytest.mark.parametrize(("pools", "health", "message"), [
    ([{"name": "l4", "gpuModel": "l4", "gpusPerNode": 1, "minNodes": 0, "maxNodes": 2}],
     {"activeChecks": {"allReduce": True}},
     "health.activeChecks.allReduce: takes effect only on a pool with several NVIDIA or AMD GPUs per node"),
    ([{"name": "mi", "gpuModel": "mi300x", "gpusPerNode": 8, "minNodes": 0, "maxNodes": 2}],
     {"activeChecks": {"dcgmDiagLevel": 3}},
     "health.activeChecks.dcgmDiagLevel: takes effect only on a stack with an NVIDIA GPU pool"),
    ([{"name": "mig", "gpuModel": "a100-80gb", "gpusPerNode": 8, "minNodes": 0, "maxNodes": 2,
       "sharing": {"mode": "mig", "profile": "1g.10gb"}}],
     {"activeChecks": {"schedule": "0 * * * *"}},
     "health.activeChecks.schedule: takes effect only on a stack with an NVIDIA or AMD GPU pool that a pod can take "
     "whole (not MIG, DRA or HAMi)"),
])
def test_keys_the_pools_cannot_honour_are_refused(pools, health, message):
    with pytest.raises(ConfigError) as err:
        parse_config(small_stack(pools, health=health), "s")
    assert message in str(err.value)


# ---------------------------------------------------------------------------------------------------------
# GpuHealth


def build(pools=(H100, L4, MI300X, A100_MIG), **args):
    return run_program(lambda: GpuHealth("health", {"pools": [p.spec() for p in pools], **args}))


def cron_pod(rec, pool: str) -> dict:
    cron = rec.one("kubernetes:batch/v1:CronJob", f"health-check-{pool}").inputs
    return cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def test_node_problem_detector_runs_on_the_nvidia_and_amd_pools_with_the_platform_monitor():
    rec = build()
    ds = rec.one("kubernetes:apps/v1:DaemonSet").inputs
    pod = ds["spec"]["template"]["spec"]
    assert pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": labels.POOL_LABEL, "operator": "In", "values": ["a100-mig", "h100", "l4",
                                                                                       "mi300x"]}]}]
    container = pod["containers"][0]
    assert container["image"] == versions.NODE_PROBLEM_DETECTOR_IMAGE.reference
    assert container["command"] == ["/node-problem-detector"]
    assert container["args"] == ["--logtostderr", "--config.system-log-monitor=/etc/node-problem-detector/"
                                 "gpu-monitor.json", "--prometheus-address=0.0.0.0", "--prometheus-port=20257"]
    assert {"key": labels.QUARANTINE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert {"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"] or any(
        t.get("key") == "amd.com/gpu" for t in pod["tolerations"])
    config = json.loads(rec.one("kubernetes:core/v1:ConfigMap", "health-npd-config").inputs["data"]["gpu-monitor.json"])
    assert config == health_catalog.npd_config(rdma=True)  # the H100 pool has InfiniBand
    role = rec.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "health-npd-role").inputs
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
                             {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
                             {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]}]


def test_one_check_per_pool_a_pod_can_take_whole():
    rec = build()
    assert sorted(r.name for r in rec.of_type("kubernetes:batch/v1:CronJob")) == [
        "health-check-h100", "health-check-l4", "health-check-mi300x", "health-dispatcher"]  # not the MIG pool
    cron = rec.one("kubernetes:batch/v1:CronJob", "health-check-h100").inputs["spec"]
    # A template the dispatcher binds to idle nodes: suspended, it never creates a Job by itself.
    assert (cron["schedule"], cron["suspend"]) == ("0 */6 * * *", True)
    assert "concurrencyPolicy" not in cron and "startingDeadlineSeconds" not in cron
    assert cron["jobTemplate"]["spec"]["activeDeadlineSeconds"] == 3600
    dispatcher = rec.one("kubernetes:batch/v1:CronJob", "health-dispatcher").inputs["spec"]
    assert (dispatcher["schedule"], dispatcher["concurrencyPolicy"], dispatcher["startingDeadlineSeconds"]) == (
        "0 */6 * * *", "Forbid", 1800)
    assert dispatcher["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "health-dispatch", "--namespace", "gpu-health", "--template", "gpu-health-check-h100=1",
        "--template", "gpu-health-check-l4=1", "--template", "gpu-health-check-mi300x=1"]
    h100 = cron_pod(rec, "h100")
    assert [c["name"] for c in h100["initContainers"]] == ["dcgm-diag", "all-reduce"]
    dcgm, all_reduce = h100["initContainers"]
    assert dcgm["image"] == versions.DCGM_IMAGE.reference
    assert "dcgmi diag -r 2 -j > /results/dcgm-diag.json" in dcgm["command"][2]
    assert dcgm["command"][2].endswith("echo $? > /results/dcgm-diag.rc; kill $engine || true")
    assert dcgm["resources"]["limits"] == {"nvidia.com/gpu": 8, "memory": "4Gi"}
    assert dcgm["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}
    assert all_reduce["image"] == versions.TRAINING_IMAGE.reference
    assert all_reduce["command"] == ["/bin/sh", "-c", "torchrun --standalone --nproc_per_node=8 /checks/allreduce.py "
                                     "> /results/all-reduce.log 2>&1; echo $? > /results/all-reduce.rc"]
    reporter = h100["containers"][0]
    assert reporter["image"] == versions.PLATFORM_IMAGE.reference
    assert reporter["args"] == ["health-report", "--node", "$(NODE_NAME)", "--results", "/results",
                                "--expect", "dcgm-diag", "--expect", "all-reduce", "--min-bus-bandwidth", "0"]
    assert (h100["priorityClassName"], h100["nodeSelector"]) == ("gpu-health-check", {labels.POOL_LABEL: "h100"})
    assert {"key": labels.UNSCHEDULABLE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"} in h100["tolerations"]
    # A single-GPU pool: the diagnostic only; an AMD pool: the all-reduce (RCCL in the ROCm image) only.
    assert [c["name"] for c in cron_pod(rec, "l4")["initContainers"]] == ["dcgm-diag"]
    assert cron_pod(rec, "l4")["containers"][0]["args"][5:7] == ["--expect", "dcgm-diag"]
    assert cron_pod(rec, "mi300x")["containers"][0]["args"][5:7] == ["--expect", "all-reduce"]
    mi300x = cron_pod(rec, "mi300x")["initContainers"]
    assert [(c["name"], c["image"]) for c in mi300x] == [("all-reduce", versions.ROCM_TRAINING_IMAGE.reference)]
    assert mi300x[0]["resources"]["limits"] == {"amd.com/gpu": 8, "memory": "32Gi"}
    priority = rec.one("kubernetes:scheduling.k8s.io/v1:PriorityClass").inputs
    assert (priority["value"], priority["preemptionPolicy"]) == (-100, "Never")
    program = rec.one("kubernetes:core/v1:ConfigMap", "health-checks").inputs["data"]["allreduce.py"]
    from gpu_platform.health import allreduce

    assert program == allreduce.PROGRAM


@pytest.mark.parametrize(("args", "path", "expected"), [
    ({"schedule": "0 1 * * *"}, ("spec", "schedule"), "0 1 * * *"),
    ({"dcgm_diag_level": 3}, ("spec", "jobTemplate", "spec", "activeDeadlineSeconds"), 3 * 3600),
])
def test_check_settings_reach_the_cron_job(args, path, expected):
    rec = build(**args)
    value = rec.one("kubernetes:batch/v1:CronJob", "health-check-h100").inputs
    for key in path:
        value = value[key]
    assert value == expected
    if path == ("spec", "schedule"):  # the dispatcher runs on the schedule
        assert rec.one("kubernetes:batch/v1:CronJob", "health-dispatcher").inputs["spec"]["schedule"] == expected


def test_no_all_reduce_when_turned_off_and_no_checks_at_all_when_off():
    assert [c["name"] for c in cron_pod(build(all_reduce=False), "h100")["initContainers"]] == ["dcgm-diag"]
    # An AMD pool has no DCGM: without the all-reduce (or with one GPU per node) its pod would run nothing and the
    # reporter would fail healthy nodes for want of results, so it gets no CronJob at all.
    one_gpu_amd = GpuPool("mi-1", "existing", "", "mi300x", 1, 192, 0, 2)
    assert sorted(r.name for r in build(all_reduce=False).of_type("kubernetes:batch/v1:CronJob")) == [
        "health-check-h100", "health-check-l4", "health-dispatcher"]
    assert [r.name for r in build(pools=(L4, one_gpu_amd)).of_type("kubernetes:batch/v1:CronJob")] == [
        "health-check-l4", "health-dispatcher"]
    rec = build(active_checks=False)
    assert rec.of_type("kubernetes:batch/v1:CronJob") == []
    policy = json.loads(rec.one("kubernetes:core/v1:ConfigMap", "health-remediation-config").inputs["data"][
        "remediation.json"])
    assert labels.HEALTH_CHECK_CONDITION not in policy["fatalConditions"]


def test_the_remediation_policy_and_its_least_privilege():
    rec = build(remediation_mode="cordon", max_quarantined_per_pool=2, max_quarantined_percent=20,
                cooldown_minutes=30)
    policy = json.loads(rec.one("kubernetes:core/v1:ConfigMap", "health-remediation-config").inputs["data"][
        "remediation.json"])
    assert policy == {"mode": "cordon", "maxQuarantinedPerPool": 2, "maxQuarantinedPercent": 20,
                      "cooldownMinutes": 30, "fatalConditions": [*health_catalog.fatal_conditions(),
                                                                 "GpuHealthCheckFailed"],
                      "poolLabel": labels.POOL_LABEL, "intervalSeconds": 60, "releaseAfterPassingCheck": True}
    deployment = rec.one("kubernetes:apps/v1:Deployment", "health-remediation").inputs
    assert (deployment["spec"]["replicas"], deployment["spec"]["strategy"]) == (1, {"type": "Recreate"})
    assert deployment["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "remediate", "--config", "/etc/gpu-platform/remediation.json", "--metrics-port", "8080"]
    assert health_objects.remediation_rules("dry-run") == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]
    assert health_objects.remediation_rules("cordon")[0]["verbs"] == ["get", "list", "patch"]
    assert health_objects.remediation_rules("drain")[2:] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]
    role = rec.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "health-remediation-role").inputs
    assert role["rules"] == health_objects.remediation_rules("cordon")


def test_neuron_pools_add_their_condition_and_no_detector():
    neuron = GpuPool("trn2", "aws", "trn2.48xlarge", "trainium2", 16, 96, 0, 2)
    rec = build(pools=(neuron,))
    assert rec.of_type("kubernetes:apps/v1:DaemonSet") == [] and rec.of_type("kubernetes:batch/v1:CronJob") == []
    policy = json.loads(rec.one("kubernetes:core/v1:ConfigMap", "health-remediation-config").inputs["data"][
        "remediation.json"])
    assert policy["fatalConditions"] == ["NeuronHealth"]


def test_tpu_pools_act_on_the_conditions_of_gkes_own_detector():
    tpu = GpuPool("v5e", "gcp", "ct5lp-hightpu-4t", "tpu-v5e", 4, 16, 0, 2)
    rec = build(pools=(tpu,))
    assert rec.of_type("kubernetes:apps/v1:DaemonSet") == [] and rec.of_type("kubernetes:batch/v1:CronJob") == []
    policy = json.loads(rec.one("kubernetes:core/v1:ConfigMap", "health-remediation-config").inputs["data"][
        "remediation.json"])
    assert (policy["fatalConditions"], policy["mode"]) == (["KernelDeadlock", "ReadonlyFilesystem"], "dry-run")


def test_network_policies_and_monitoring():
    plain = build()
    assert sorted(r.name for r in plain.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")) == [
        "health-allow-api-server", "health-default-deny"]
    assert plain.of_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule") == []
    rec = build(monitoring_namespace="monitoring", service_monitor_labels={"release": "kube-prometheus-stack"})
    names = sorted(r.name for r in rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy"))
    assert names == ["health-allow-api-server", "health-allow-prometheus-npd", "health-allow-prometheus-remediation",
                     "health-default-deny"]
    rule = rec.one("kubernetes:monitoring.coreos.com/v1:PrometheusRule").inputs
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert [r["alert"] for r in rule["spec"]["groups"][0]["rules"]] == [
        "GpuNodeFatalCondition", "GpuNodeHealthCheckFailed", "GpuNodeQuarantined", "GpuRowRemapFailure",
        "GpuUncorrectableRemappedRows", "RdmaLinkDown"]
    monitor = rec.one("kubernetes:monitoring.coreos.com/v1:PodMonitor").inputs
    assert monitor["spec"]["podMetricsEndpoints"][0]["relabelings"] == [
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}]
    dashboard = rec.one("kubernetes:core/v1:ConfigMap", "health-dashboard").inputs
    assert dashboard["metadata"]["namespace"] == "monitoring"


@pytest.mark.parametrize(("args", "message"), [
    ({"remediation_mode": "reboot"}, "GpuHealth health: remediation_mode: 'reboot' is not one of dry-run, cordon, "
                                     "drain"),
    ({"dcgm_diag_level": 5}, "GpuHealth health: dcgm_diag_level: must be <= 4, got 5"),
    ({"active_checks": False, "schedule": "0 * * * *"}, "GpuHealth health: schedule: takes effect only with "
                                                        "active_checks: true"),
    ({"service_monitor_labels": {"a": "b"}}, "GpuHealth health: service_monitor_labels: takes effect only with "
                                             "monitoring_namespace"),
])
def test_bad_args_are_refused(args, message):
    with pytest.raises(ConfigError) as err:
        build(**args)
    assert str(err.value) == message


def test_dcgm_level_needs_an_nvidia_pool():
    with pytest.raises(ConfigError, match="dcgm_diag_level: takes effect only with an NVIDIA pool"):
        build(pools=(MI300X,), dcgm_diag_level=1)


# ---------------------------------------------------------------------------------------------------------
# Workloads avoid failed nodes


def test_the_healthy_node_affinity_merges_into_every_term():
    requirement = {"key": labels.HEALTH_CHECK_LABEL, "operator": "NotIn", "values": ["failed"]}
    assert health_placement.with_healthy_nodes(None) == {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [requirement]}]}}}
    clique = {"key": "nvidia.com/gpu.clique", "operator": "Exists"}
    merged = health_placement.with_healthy_nodes({
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [clique]}, {"matchFields": [{"key": "metadata.name", "operator": "In",
                                                               "values": ["n"]}]}]}},
        "podAffinity": {"x": 1}})
    terms = merged["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [clique, requirement]},
                     {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}],
                      "matchExpressions": [requirement]}]
    assert merged["podAffinity"] == {"x": 1}


# ---------------------------------------------------------------------------------------------------------
# Alerts


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    assert path, "promtool not found on PATH: apt-get install -y --no-install-recommends prometheus"
    return path


def write_rules(directory: Path) -> None:
    group = health_monitoring.alert_group(RUNBOOK_BASE)
    (directory / RULE_FILE).write_text(yaml.safe_dump(alerts.rule_file([group]), sort_keys=False, width=1000),
                                       encoding="utf-8")


def test_the_alerts_pass_promtool_check_and_their_unit_tests(promtool, tmp_path):
    write_rules(tmp_path)
    check = subprocess.run([promtool, "check", "rules", RULE_FILE], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    shutil.copy(PROMTOOL_TESTS / "health.yaml", tmp_path)
    result = subprocess.run([promtool, "test", "rules", "health.yaml"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_unit_tests_bite(promtool, tmp_path):
    """A changed threshold fails the unit tests: they pin the rules, not just run them."""
    write_rules(tmp_path)
    rules = (tmp_path / RULE_FILE).read_text(encoding="utf-8").replace("[15m]", "[1m]")
    (tmp_path / RULE_FILE).write_text(rules, encoding="utf-8")
    shutil.copy(PROMTOOL_TESTS / "health.yaml", tmp_path)
    result = subprocess.run([promtool, "test", "rules", "health.yaml"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode != 0


def test_every_alert_is_tested_and_has_a_runbook():
    names = alerts.alert_names([health_monitoring.alert_group(RUNBOOK_BASE)])
    tested = (PROMTOOL_TESTS / "health.yaml").read_text(encoding="utf-8")
    doc = (ROOT / "docs" / "health.md").read_text(encoding="utf-8")
    for name in names:
        assert f"alertname: {name}" in tested, name
        assert f"### {name}" in doc, name


def test_the_dashboard_queries_parse(promtool, tmp_path):
    from gpu_platform.monitoring import dashboards

    exprs = [e for _, e in dashboards.dashboard_expressions(health_monitoring.health_dashboard())]
    assert len(exprs) == 5
    rules = {"groups": [{"name": "d", "rules": [{"record": f"r{i}", "expr": e} for i, e in enumerate(exprs)]}]}
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(rules), encoding="utf-8")
    result = subprocess.run([promtool, "check", "rules", "d.yaml"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------------------
# The platform


def platform_objects(raw: dict) -> dict:
    rec = run_program(lambda: GpuPlatform("s", parse_config(raw, "s")))
    return {r.name: r.inputs for r in rec.registrations}


def policy_of(found: dict) -> dict:
    return json.loads(found["s-health-remediation-config"]["data"]["remediation.json"])


@pytest.fixture(scope="module")
def default_stack() -> dict:
    return platform_objects(small_stack())


@pytest.mark.parametrize(("health", "read"), [
    ({"activeChecks": {"schedule": "0 2 * * *"}}, lambda f: f["s-health-check-h100"]["spec"]["schedule"]),
    ({"activeChecks": {"dcgmDiagLevel": 4}},
     lambda f: f["s-health-check-h100"]["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"]),
    ({"activeChecks": {"allReduce": False}}, lambda f: [c["name"] for c in f["s-health-check-h100"]["spec"][
        "jobTemplate"]["spec"]["template"]["spec"]["initContainers"]]),
    ({"activeChecks": {"enabled": False}}, lambda f: "s-health-check-h100" in f),
    ({"remediation": {"mode": "drain"}}, lambda f: policy_of(f)["mode"]),
    ({"remediation": {"maxQuarantinedPerPool": 3}}, lambda f: policy_of(f)["maxQuarantinedPerPool"]),
    ({"remediation": {"maxQuarantinedPercent": 50}}, lambda f: policy_of(f)["maxQuarantinedPercent"]),
    ({"remediation": {"cooldownMinutes": 5}}, lambda f: policy_of(f)["cooldownMinutes"]),
    ({"enabled": False}, lambda f: "s-health" in f),
])
def test_every_key_changes_the_plan(default_stack, health, read):
    assert read(platform_objects(small_stack(health=health))) != read(default_stack)


def test_a_reference_stack_plans_the_health_layer_valid_against_the_schemas():
    result = planned_stack("aws-dev")
    assert result.errors == []
    found = {(m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in result.manifests}
    assert {("Namespace", None, "gpu-health"), ("DaemonSet", "gpu-health", "gpu-node-problem-detector"),
            ("CronJob", "gpu-health", "gpu-health-check-h100-train"),
            ("CronJob", "gpu-health", "gpu-health-check-l4-infer"),
            ("Deployment", "gpu-health", "gpu-remediation"), ("PrometheusRule", "gpu-health",
                                                              "gpu-platform-node-health")} <= found
    policy = next(json.loads(m["data"]["remediation.json"]) for m in result.manifests
                  if m["kind"] == "ConfigMap" and m["metadata"]["name"] == "gpu-remediation")
    assert policy["mode"] == "dry-run"
    # The platform's GPU workloads stay off nodes that failed their check.
    requirement = health_placement.healthy_node_requirement()
    for kind, name in (("Deployment", "sentiment"), ("Deployment", "llm"), ("Job", "reference-training")):
        pod = next(m for m in result.manifests if m["kind"] == kind and m["metadata"]["name"] == name)[
            "spec"]["template"]["spec"]
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert all(requirement in t["matchExpressions"] for t in terms), (kind, name)
