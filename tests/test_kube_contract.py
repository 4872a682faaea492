"""The Kubernetes-layer components as a library: every bad argument is one `ConfigError` line naming the component,
its name and the argument, raised before anything is registered; every accepted argument reaches a resource."""

import pulumi
import pytest
from conftest import refused

from gpu_platform.accelerators.nvidia import NvidiaGpuStack
from gpu_platform.accelerators.rdma import RdmaStack
from gpu_platform.autoscaling.workload_autoscaling import WorkloadAutoscaling
from gpu_platform.monitoring.gpu_monitoring import GpuMonitoring
from gpu_platform.optimizer.gpu_optimizer import GpuOptimizer
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.scheduling.policy import SchedulingPolicy
from gpu_platform.scheduling.tenancy import TeamNamespace
from gpu_platform.security.network_policy_engine import CalicoPolicyEngine
from gpu_platform.serving.keda import KedaOperator
from gpu_platform.serving.workloads import InferenceService
from gpu_platform.testing import run_program
from gpu_platform.training.workload import TrainingWorkload

L4 = GpuPool("l4", "aws", "g6.12xlarge", "l4", 4, 24, 0, 3)
EFA = GpuPool("train", "aws", "p5.48xlarge", "h100", 8, 80, 2, 2, rdma_fabric="efa", rdma_interfaces=32)
GKE_L4 = GpuPool("l4", "gcp", "g2-standard-48", "l4", 4, 24, 0, 3)
TEAM = {"name": "ml", "gpu_quota": 4}
PROMETHEUS = "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"
TARGET = {"namespace": "ml", "kind": "Job", "name": "reference-training", "api_version": "batch/v1"}
RELEASE = "kubernetes:helm.sh/v3:Release"


def refusal(build) -> str:
    """The error line of ``build()`` under the mock engine, after checking that nothing at all was registered."""
    message, registered = refused(build)
    assert registered == []
    return message

MISUSE = [
    # TeamNamespace
    (lambda: TeamNamespace("ml", {"team": {"name": "ml", "gpu_quota": -4}}),
     "TeamNamespace ml: team.gpu_quota: must be >= 0, got -4"),
    (lambda: TeamNamespace("ml", {"team": {"name": "ml", "gpuquota": 4}}),
     "TeamNamespace ml: team.gpuquota: unknown argument; did you mean 'gpu_quota'?"),
    (lambda: TeamNamespace("ml", {"team": {"name": "ml", "gpuQuota": 4}}),
     "TeamNamespace ml: team.gpuQuota: unknown argument; arguments are snake_case in Python: use 'gpu_quota' "
     "(camelCase is the stack file's spelling)"),
    (lambda: TeamNamespace("ml", {"team": {"name": "ML Team"}}),
     "TeamNamespace ml: team.name: 'ML Team' is not a DNS label (lower-case letters, digits and '-')"),
    (lambda: TeamNamespace("ml", {"team": {"name": "ml", "gpu_quota": 2, "lending_limit": 3}}),
     "TeamNamespace ml: team.lending_limit: is the team's ClusterQueue's (SchedulingPolicy); a namespace makes no "
     "use of it: give it there, or one Team to both"),
    (lambda: TeamNamespace("ml", {"team": TEAM, "pod_security": "strict"}),
     "TeamNamespace ml: pod_security: 'strict' is not one of privileged, baseline, restricted; did you mean "
     "'restricted'?"),
    (lambda: TeamNamespace("ml", {"cluster_queue": "ml"}), "TeamNamespace ml: team: is required"),
    (lambda: TeamNamespace("ml", {"team": {"gpu_quota": 4}}), "TeamNamespace ml: team.name: is required"),
    (lambda: TeamNamespace("ml", {"team": TEAM, "cluster_queue": pulumi.Output.from_input("ml")}),
     "TeamNamespace ml: cluster_queue: must be a plain str, not an Output: the component reads it when it is "
     "constructed"),
    # SchedulingPolicy
    (lambda: SchedulingPolicy("sched", {"pools": [L4.spec()], "teams": [TEAM, {"name": "ml"}]}),
     "SchedulingPolicy sched: teams[1]: duplicate team name 'ml' (also teams[0])"),
    (lambda: SchedulingPolicy("sched", {"pools": [L4.spec(), EFA.spec() | {"name": "l4"}]}),
     "SchedulingPolicy sched: pools[1]: duplicate pool name 'l4' (also pools[0])"),
    (lambda: SchedulingPolicy("sched", {"pools": [L4.spec(), GKE_L4.spec() | {"name": "g2"}]}),
     "SchedulingPolicy sched: pools[1].cloud: pool 'g2' is a GCP pool; pools[0] is an AWS pool: one cluster's pools "
     "are on one cloud"),
    (lambda: SchedulingPolicy("sched", {"pools": [L4.spec()], "default_priority_class": "critical"}),
     "SchedulingPolicy sched: default_priority_class: 'critical' is not one of inference-critical, high-priority, "
     "medium-priority, low-priority; did you mean 'inference-critical'?"),
    (lambda: SchedulingPolicy("sched", {"pools": [L4.spec()], "teams": [{"name": "ml", "borrowing_limit": -1}]}),
     "SchedulingPolicy sched: teams[0].borrowing_limit: must be >= 0, got -1"),
    # NvidiaGpuStack
    (lambda: NvidiaGpuStack("nv", {"cloud": "aswd", "pools": [L4.spec()]}),
     "NvidiaGpuStack nv: cloud: 'aswd' is not one of aws, azure, gcp, oci, existing; did you mean 'aws'?"),
    (lambda: NvidiaGpuStack("nv", {"pools": [L4.spec()]}), "NvidiaGpuStack nv: cloud: is required"),
    (lambda: NvidiaGpuStack("nv", {"cloud": "gcp", "pools": [L4.spec()]}),
     "NvidiaGpuStack nv: pools[0].cloud: pool 'l4' is an AWS pool; NvidiaGpuStack takes GCP pools"),
    (lambda: NvidiaGpuStack("nv", {"cloud": "gcp", "gpu_software": "device-plugin", "pools": [GKE_L4.spec()]}),
     "NvidiaGpuStack nv: gpu_software: 'device-plugin' is not supported on GKE, which runs its own device plugin; "
     "use 'cloud-managed' (GKE's) or 'operator'"),
    (lambda: NvidiaGpuStack("nv", {"cloud": "aws", "gpu_software": "cloud-managed", "mig_strategy": "mixed"}),
     "NvidiaGpuStack nv: mig_strategy: takes effect only with gpu_software 'operator' or 'device-plugin' (the cloud "
     "partitions MIG GPUs itself)"),
    (lambda: NvidiaGpuStack("nv", {"cloud": "aws", "driver_preinstalled": False}),
     "NvidiaGpuStack nv: driver_preinstalled: AWS GPU node images always carry the NVIDIA driver; the GPU Operator "
     "does not install one there"),
    (lambda: NvidiaGpuStack("nv", {"cloud": "azure", "gpu_software": "device-plugin", "driver_preinstalled": True}),
     "NvidiaGpuStack nv: driver_preinstalled: takes effect only with gpu_software 'operator'"),
    (lambda: NvidiaGpuStack("nv", {"cloud": "aws", "service_monitor_labels": {"release": "prom"}}),
     "NvidiaGpuStack nv: service_monitor_labels: takes effect only with monitoring: true"),
    # RdmaStack
    (lambda: RdmaStack("rdma", {"cloud": "aws", "pools": [EFA.spec()], "namespace": "Network_Operator"}),
     "RdmaStack rdma: namespace: 'Network_Operator' is not a DNS label (lower-case letters, digits and '-')"),
    (lambda: RdmaStack("rdma", {"cloud": "azure", "pools": [EFA.spec()]}),
     "RdmaStack rdma: pools[0].cloud: pool 'train' is an AWS pool; RdmaStack takes Azure pools"),
    # GpuMonitoring
    (lambda: GpuMonitoring("mon", {"pools": [L4.spec()], "retention": "two weeks"}),
     "GpuMonitoring mon: retention: 'two weeks' is not a Prometheus duration such as 15d"),
    (lambda: GpuMonitoring("mon", {"pools": [L4.spec()], "storage_size": "50GB"}),
     "GpuMonitoring mon: storage_size: '50GB' is not a storage quantity such as 50Gi"),
    (lambda: GpuMonitoring("mon", {"pools": [L4.spec()], "gke_managed_dcgm": True}),
     "GpuMonitoring mon: gke_managed_dcgm: GKE's managed DCGM exporter runs on GKE only; pool 'l4' is an AWS pool"),
    (lambda: GpuMonitoring("mon", {"pools": [L4.spec()], "alert_thresholds": {"gpu_temperature_celsius": -1}}),
     "GpuMonitoring mon: alert_thresholds.gpu_temperature_celsius: must be a non-negative number, got -1"),
    # TrainingWorkload
    (lambda: TrainingWorkload("train", {"namespace": "ml", "gpu_quota": 8}),
     "TrainingWorkload train: pool: is required"),
    (lambda: TrainingWorkload("train", {"pool": EFA.spec(), "namespace": "ml"}),
     "TrainingWorkload train: gpu_quota: is required (the job is sized to fit the team's GPU quota)"),
    (lambda: TrainingWorkload("train", {"pool": EFA.spec(), "namespace": "ml", "gpu_quota": 8, "schedule": "weekly"}),
     "TrainingWorkload train: schedule: 'weekly' is not a five-field cron schedule such as '*/30 * * * *'"),
    (lambda: TrainingWorkload("train", {"pool": EFA.spec(), "namespace": "ml", "gpu_quota": 8,
                                        "checkpoint_size": "100G"}),
     "TrainingWorkload train: checkpoint_size: '100G' is not a storage quantity such as 50Gi"),
    (lambda: TrainingWorkload("train", {"pool": L4.spec(), "namespace": "ml", "gpu_quota": 8, "local_queue": "gpu",
                                        "topology_level": "topology.kubernetes.io/zone"}),
     "TrainingWorkload train: topology_level: pool 'l4' has no topology-aware Kueue flavor (only fixed-size RDMA "
     "pools do)"),
    (lambda: TrainingWorkload("train", {"pool": EFA.spec(), "namespace": "ml", "gpu_quota": 8,
                                        "topology_level": "topology.kubernetes.io/zone"}),
     "TrainingWorkload train: topology_level: takes effect only with local_queue (Kueue places the ranks)"),
    # KedaOperator
    (lambda: KedaOperator("keda", {"service_monitor_labels": {"release": "prom"}}),
     "KedaOperator keda: service_monitor_labels: takes effect only with monitoring: true"),
    (lambda: KedaOperator("keda", {"namespace": "KEDA"}),
     "KedaOperator keda: namespace: 'KEDA' is not a DNS label (lower-case letters, digits and '-')"),
    # InferenceService
    (lambda: InferenceService("inf", {"pool": L4.spec(), "cpu_request": "lots"}),
     "InferenceService inf: cpu_request: 'lots' is not a CPU quantity such as 500m or 2"),
    (lambda: InferenceService("inf", {"pool": L4.spec(), "min_replicas": 0}),
     "InferenceService inf: min_replicas: must be >= 1, got 0"),
    (lambda: InferenceService("inf", {"pool": L4.spec(), "min_replicas": 6, "max_replicas": 4}),
     "InferenceService inf: max_replicas: must be >= min_replicas (6), got 4"),
    (lambda: InferenceService("inf", {"pool": L4.spec(), "route": {
        "gateway_name": "inference", "gateway_namespace": "gateway", "section_name": "http", "implementation": "gke",
        "rate_limit_per_minute": 0}}),
     "InferenceService inf: route.rate_limit_per_minute: must be >= 1, got 0"),
    (lambda: InferenceService("inf", {"pool": L4.spec(), "autoscaler": "none", "cpu_utilization": 50}),
     "InferenceService inf: cpu_utilization: takes effect only with an autoscaler"),
    (lambda: InferenceService("inf", {"pool": L4.spec(), "namespace": "Inference"}),
     "InferenceService inf: namespace: 'Inference' is not a DNS label (lower-case letters, digits and '-')"),
    # GpuOptimizer
    (lambda: GpuOptimizer("opt", {"prometheus_url": PROMETHEUS, "action": "delete"}),
     "GpuOptimizer opt: action: 'delete' is not one of report, annotate, scale-down, recommend"),
    (lambda: GpuOptimizer("opt", {"prometheus_url": PROMETHEUS, "schedule": "every 5 minutes"}),
     "GpuOptimizer opt: schedule: 'every 5 minutes' is not a five-field cron schedule such as '*/30 * * * *'"),
    (lambda: GpuOptimizer("opt", {"prometheus_url": PROMETHEUS, "utilization_threshold": 150}),
     "GpuOptimizer opt: utilization_threshold: must be <= 100, got 150"),
    (lambda: GpuOptimizer("opt", {"pools": [L4.spec()]}), "GpuOptimizer opt: prometheus_url: is required"),
    # CalicoPolicyEngine
    (lambda: CalicoPolicyEngine("np", {"pools": [L4.spec()]}), "CalicoPolicyEngine np: interface_prefix: is required"),
    (lambda: CalicoPolicyEngine("np", {"interface_prefix": "oci", "interfacePrefix": "oci"}),
     "CalicoPolicyEngine np: interfacePrefix: unknown argument; arguments are snake_case in Python: use "
     "'interface_prefix' (camelCase is the stack file's spelling)"),
    (lambda: CalicoPolicyEngine("np", {"interface_prefix": "oci",
                                       "pools": [L4.spec(), GKE_L4.spec() | {"name": "g2"}]}),
     "CalicoPolicyEngine np: pools[1].cloud: pool 'g2' is a GCP pool; pools[0] is an AWS pool: one cluster's pools "
     "are on one cloud"),
    # WorkloadAutoscaling
    (lambda: WorkloadAutoscaling("auto", {"vpa_targets": [TARGET], "vpa_mode": "Auto"}),
     "WorkloadAutoscaling auto: vpa_mode: 'Auto' is not one of Off, Initial"),
    (lambda: WorkloadAutoscaling("auto", {"vpa_targets": [TARGET], "vpa_resources": ["nvidia.com/gpu"]}),
     "WorkloadAutoscaling auto: vpa_resources[0]: 'nvidia.com/gpu' is not one of cpu, memory"),
    (lambda: WorkloadAutoscaling("auto", {"vpa_targets": [{"namespace": "ml", "kind": "Job", "name": "x"}]}),
     "WorkloadAutoscaling auto: vpa_targets[0].api_version: is required"),
    (lambda: WorkloadAutoscaling("auto", {"vpa_targets": [TARGET, TARGET]}),
     "WorkloadAutoscaling auto: vpa_targets[1]: duplicate workload 'ml/Job/reference-training' (also "
     "vpa_targets[0])"),
    (lambda: WorkloadAutoscaling("auto", {"vpa_targets": [TARGET], "horizontal_autoscalers": [{"kind": "Pod"}]}),
     "WorkloadAutoscaling auto: horizontal_autoscalers[0]: kind 'Pod': not an autoscaling/v2 HorizontalPodAutoscaler "
     "or a KEDA ScaledObject body"),
]


@pytest.mark.parametrize(("build", "line"), MISUSE, ids=[line.split(":")[0] + ":" + line.split(":")[1]
                                                          for _, line in MISUSE])
def test_misuse_is_one_line_before_anything_is_registered(build, line):
    assert refusal(build) == line


# ---------------------------------------------------------------------------------------------------------
# Accepted means used


def test_a_gpu_pool_object_is_taken_where_a_spec_is_expected():
    rec = run_program(lambda: InferenceService("inf", {"pool": L4, "autoscaler": "none"}))
    deployment = rec.one("kubernetes:apps/v1:Deployment").inputs
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {"gpu-platform.io/pool": "l4"}


def test_inference_sizing_and_batching_args_reach_the_deployment_and_autoscaler():
    rec = run_program(lambda: InferenceService("inf", {
        "pool": L4.spec(), "cpu_request": "1500m", "memory_request": "6Gi", "max_wait_ms": 2.5, "max_queue": 64,
        "deadline_ms": 250, "cpu_utilization": 55, "autoscaler": "hpa", "route": {
            "gateway_name": "edge", "gateway_namespace": "gateway", "section_name": "http",
            "implementation": "envoy-gateway", "hostname": "infer.example.com", "request_timeout": "30s"}}))
    container = rec.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["cpu"] == "1500m"
    assert container["resources"]["requests"]["memory"] == container["resources"]["limits"]["memory"] == "6Gi"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (env["MAX_WAIT_MS"], env["MAX_QUEUE"], env["DEADLINE_MS"]) == ("2.5", "64", "250")
    hpa = rec.one("kubernetes:autoscaling/v2:HorizontalPodAutoscaler").inputs
    assert hpa["spec"]["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 55}
    route = rec.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute").inputs["spec"]
    assert (route["parentRefs"][0]["name"], route["hostnames"], route["rules"][0]["timeouts"]) == (
        "edge", ["infer.example.com"], {"request": "30s"})
    # No body or rate limit given: no BackendTrafficPolicy.
    assert rec.of_type("kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy") == []


def test_monitoring_storage_class_and_runbook_url_reach_the_release_and_alerts():
    rec = run_program(lambda: GpuMonitoring("mon", {"pools": [L4.spec()], "storage_class": "gp3",
                                                    "runbook_base_url": "https://git.example.com/platform"}))
    values = rec.one(RELEASE, "mon-kube-prometheus-stack").inputs["values"]
    claim = values["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "gp3"
    alerts = rec.one("kubernetes:monitoring.coreos.com/v1:PrometheusRule", "mon-gpu-platform-alerts").inputs
    urls = {r["annotations"]["runbook_url"] for g in alerts["spec"]["groups"] for r in g["rules"]}
    assert urls and all(u.startswith("https://git.example.com/platform/docs/runbooks.md#") for u in urls)


def test_mig_strategy_reaches_the_operator_and_needs_a_mig_pool():
    mig = GpuPool("mig", "aws", "p5.48xlarge", "h100", 8, 80, 0, 2, sharing=Sharing("mig", 1, "1g.10gb")).spec()
    rec = run_program(lambda: NvidiaGpuStack("nv", {"cloud": "aws", "pools": [mig], "mig_strategy": "mixed"}))
    assert rec.one(RELEASE, "nv-gpu-operator").inputs["values"]["mig"] == {"strategy": "mixed"}
    assert refusal(lambda: NvidiaGpuStack("nv", {"cloud": "aws", "pools": [L4.spec()], "mig_strategy": "mixed"})) == (
        "NvidiaGpuStack nv: mig_strategy: takes effect only with a MIG pool (sharing_mode 'mig')")


def test_keda_namespace_and_monitor_labels_reach_the_release():
    rec = run_program(lambda: KedaOperator("keda", {"namespace": "autoscaling", "monitoring": True,
                                                    "service_monitor_labels": {"release": "prom"}}))
    release = rec.one(RELEASE, "keda-release").inputs
    assert release["namespace"] == "autoscaling"
    assert release["values"]["prometheus"]["operator"]["serviceMonitor"] == {
        "enabled": True, "additionalLabels": {"release": "prom"}}


def test_numbers_from_other_languages_are_normalised():
    rec = run_program(lambda: TeamNamespace("ml", {"team": {"name": "ml", "gpu_quota": 4.0}}))
    quota = rec.one("kubernetes:core/v1:ResourceQuota").inputs
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "4"
