"""Pure builders for the health layer's Kubernetes objects (`kube.health.GpuHealth` registers them).

Everything lives in one namespace (default ``gpu-health``, Pod Security ``privileged``: node-problem-detector reads
``/dev/kmsg`` from the host as upstream's manifest runs it, privileged, and DCGM diagnostics need ``SYS_ADMIN``):

- passive: node-problem-detector (`npd_daemon_set`) on the NVIDIA and AMD pools, with the platform's
  system-log-monitor configuration (`health_catalog.npd_config`) only: the conditions and Events it sets are the
  ones `health_catalog` lists. Its ClusterRole is the one upstream binds (Kubernetes' ``system:node-problem-detector``
  bootstrap role): get nodes, patch nodes/status, write Events;
- active (`check_cron_job`, `dispatcher_cron_job`): per checked pool a check template, a CronJob kept suspended, whose
  pod requests every accelerator of a node at a negative priority (`CHECK_PRIORITY`) that anything preempts. The
  template never runs by itself: on the schedule, ``gpu-platform health-dispatch`` (`gpu_platform.health.dispatch`)
  picks the pool's idle nodes and creates one Job per node from it with the pod's ``nodeName`` set. A bound pod
  bypasses the scheduler, so it is never Unschedulable, the only pods Karpenter and Cluster Autoscaler provision for
  (the dispatch module's docstring cites both): no check ever buys a node. The checks run as init containers in
  order, each writing its output and exit code under ``/results`` and never failing the pod; the last container,
  ``gpu-platform health-report``, reads them and labels the node;
- remediation (`remediation_deployment`): ``gpu-platform remediate`` with the stack's policy (`remediation_policy`),
  RBAC with no write verb on nodes in dry-run (`remediation_rules`);
- NetworkPolicies: everything denied but DNS and the API server for the three programs that call it, and
  Prometheus' scrapes of the two metrics ports.
"""

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from .. import labels
from ..kubernetes_base.common import all_pool_tolerations, metadata
from ..monitoring import monitoring_policies
from ..pools import GpuPool
from ..security import namespace_security, pod_security
from . import health_catalog

NAMESPACE = "gpu-health"
APP = "gpu-health"
NPD, CHECK, REMEDIATION = "node-problem-detector", "health-check", "remediation"
DISPATCH = "health-dispatch"
NPD_NAME = "gpu-node-problem-detector"
REPORTER_NAME = "gpu-health-reporter"
DISPATCHER_NAME = "gpu-health-dispatch"
DISPATCH_DEADLINE_SECONDS = 300
"""The dispatcher lists nodes and pods and creates a few Jobs: seconds, or an API server in trouble."""
CHECK_PERCENT_AT_ONCE = 10
"""Most nodes of a pool under check at once, in percent of its maximum (at least one): a check holds an idle node for
minutes to hours, and every workload preempts it, but a pool should not find most of its idle nodes busy with checks
when a burst of work arrives."""
REMEDIATION_NAME = "gpu-remediation"
NPD_CONFIG_FILE = "gpu-monitor.json"
NPD_CONFIG_DIR = "/etc/node-problem-detector"
NPD_METRICS_PORT = 20257
"""node-problem-detector's Prometheus port (``--prometheus-port``, its default)."""
REMEDIATION_METRICS_PORT = 8080
"""``gpu-platform remediate --metrics-port`` (its default)."""
REMEDIATION_CONFIG_DIR = "/etc/gpu-platform"
REMEDIATION_CONFIG_FILE = "remediation.json"
REMEDIATION_INTERVAL_SECONDS = 60
"""How often the controller reads the nodes' conditions."""
RESULTS_DIR = "/results"
CHECKS_DIR = "/checks"
ALL_REDUCE_FILE = "allreduce.py"
CHECK_PRIORITY_CLASS = "gpu-health-check"
CHECK_PRIORITY = -100
"""Below every workload (the default priority is 0): any pod that needs the node preempts a check. (Also below
cluster-autoscaler's expendable cutoff, -10; the checks are bound to nodes by the dispatcher, so no autoscaler ever
sees them pending.)"""
API_SERVER_PORTS = (443, 6443)
DIAG_DEADLINE_SECONDS = {1: 3600, 2: 3600, 3: 3 * 3600, 4: 6 * 3600}
"""``activeDeadlineSeconds`` of a check per DCGM diagnostic level: the diagnostic (seconds at 1, minutes at 2, about
half an hour at 3, hours at 4) plus the pull of the training image, tens of GB, on a node that lacks it."""
STARTING_DEADLINE_SECONDS = 1800
"""A dispatch the CronJob controller missed by more than this is skipped, not started late."""


@dataclass(frozen=True)
class HealthSpec:
    """Everything the health layer's objects are decided from (`kube.health.spec_from_args` builds it)."""

    pools: tuple[GpuPool, ...]
    """Pools node-problem-detector runs on (NVIDIA and AMD GPUs)."""
    checked_pools: tuple[GpuPool, ...] = ()
    """Pools that get an active check CronJob."""
    namespace: str = NAMESPACE
    schedule: str = "0 */6 * * *"
    dcgm_diag_level: int = 2
    all_reduce: bool = True
    mode: str = "dry-run"
    max_quarantined_per_pool: int = 1
    max_quarantined_percent: int = 10
    cooldown_minutes: int = 60
    monitoring_namespace: Optional[str] = None
    """Namespace of the platform's Prometheus (None: no scrape, no PodMonitor/ServiceMonitor)."""
    service_monitor_labels: tuple[tuple[str, str], ...] = ()
    npd_image: str = ""
    dcgm_image: str = ""
    platform_image: str = ""
    training_images: tuple[tuple[str, str], ...] = ()
    """Image of the all-reduce per vendor (``nvidia``, ``amd``)."""
    all_reduce_program: str = ""
    """The all-reduce program (`gpu_platform.health.allreduce.PROGRAM`); empty when no pool runs it."""
    fatal_conditions: tuple[str, ...] = field(default_factory=lambda: (*health_catalog.fatal_conditions(),
                                                                      labels.HEALTH_CHECK_CONDITION))

    @property
    def dry_run(self) -> bool:
        return self.mode == "dry-run"

    def runs_all_reduce(self, pool: GpuPool) -> bool:
        """Whether ``pool``'s check includes the all-reduce: asked for, and two GPUs at least."""
        return self.all_reduce and pool.gpus_per_node > 1

    @property
    def any_all_reduce(self) -> bool:
        return any(self.runs_all_reduce(p) for p in self.checked_pools)


def app_labels(component: str) -> dict[str, str]:
    return {labels.APP_NAME_LABEL: APP, labels.APP_COMPONENT_LABEL: component}


def _tcp(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": port} for port in ports]


# ---------------------------------------------------------------------------------------------------------
# Namespace


def namespace(spec: HealthSpec) -> dict[str, Any]:
    return namespace_security.namespace_body(spec.namespace, namespace_security.namespace_pod_security("health"))


# ---------------------------------------------------------------------------------------------------------
# Passive: node-problem-detector


def npd_config_map(spec: HealthSpec) -> dict[str, Any]:
    rdma = any(p.rdma_fabric for p in spec.pools)
    return {"metadata": metadata(NPD_NAME, spec.namespace, app_labels(NPD)),
            "data": {NPD_CONFIG_FILE: health_catalog.npd_config_json(rdma)}}


def npd_cluster_role() -> dict[str, Any]:
    """What node-problem-detector's Kubernetes exporter calls (pkg/exporters/k8sexporter/problemclient at the
    pinned tag: Nodes().Get, Nodes().PatchStatus, an Event recorder), as Kubernetes' bootstrap role
    ``system:node-problem-detector`` grants it."""
    return {"metadata": metadata(NPD_NAME, None, app_labels(NPD)),
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
                      {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
                      {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]}]}


def cluster_role_binding(name: str, namespace_name: str, account: str, component: str) -> dict[str, Any]:
    return {"metadata": metadata(name, None, app_labels(component)),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace_name}]}


def service_account(name: str, spec: HealthSpec, component: str) -> dict[str, Any]:
    return {"metadata": metadata(name, spec.namespace, app_labels(component))}


def quarantine_toleration() -> dict[str, Any]:
    """Tolerates remediation's quarantine taint: the pods that watch and re-check a node keep running on it."""
    return {"key": labels.QUARANTINE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def pool_affinity(pools: tuple[GpuPool, ...]) -> dict[str, Any]:
    """Nodes of ``pools`` only (by the pool label every pool's nodes carry)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
        "matchExpressions": [{"key": labels.POOL_LABEL, "operator": "In",
                              "values": sorted(p.name for p in pools)}]}]}}}


def npd_args() -> list[str]:
    """Only the platform's monitor: the GPU and RDMA conditions are the platform's own, and the kernel conditions
    the image's stock monitors would add (KernelDeadlock, ReadonlyFilesystem...) are the cloud's node agent's where
    it runs one. Metrics on every address, for Prometheus (the default is 127.0.0.1)."""
    return ["--logtostderr", f"--config.system-log-monitor={NPD_CONFIG_DIR}/{NPD_CONFIG_FILE}",
            "--prometheus-address=0.0.0.0", f"--prometheus-port={NPD_METRICS_PORT}"]


def npd_daemon_set(spec: HealthSpec) -> dict[str, Any]:
    pod_labels = app_labels(NPD)
    return {
        "metadata": metadata(NPD_NAME, spec.namespace, pod_labels),
        "spec": {
            "selector": {"matchLabels": pod_labels},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {"metadata": {"labels": pod_labels}, "spec": {
                "serviceAccountName": NPD_NAME,
                "automountServiceAccountToken": True,  # it patches its node's status and records Events
                # No system-node-critical: GKE admits those outside kube-system only under a PriorityClass-scoped
                # quota (accelerators/nvidia_values.py), and 10m of CPU and 80Mi fit beside any workload.
                "affinity": pool_affinity(spec.pools),
                "tolerations": [*all_pool_tolerations(spec.pools), quarantine_toleration()],
                "containers": [{
                    "name": "node-problem-detector",
                    "image": spec.npd_image,
                    # The image's ENTRYPOINT names the stock monitors (Dockerfile@v1.36.0): replace it.
                    "command": ["/node-problem-detector"],
                    "args": npd_args(),
                    "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                    "ports": [{"name": "metrics", "containerPort": NPD_METRICS_PORT, "protocol": "TCP"}],
                    # Its metrics listener is up once the monitors have started.
                    "readinessProbe": {"tcpSocket": {"port": "metrics"}, "periodSeconds": 20},
                    "livenessProbe": {"tcpSocket": {"port": "metrics"}, "periodSeconds": 20, "failureThreshold": 6},
                    "resources": {"requests": {"cpu": "10m", "memory": "80Mi"}, "limits": {"memory": "160Mi"}},
                    # Upstream's manifest (deployment/node-problem-detector.yaml@v1.36.0) runs it privileged:
                    # /dev/kmsg is a host character device the container runtime's device cgroup denies otherwise.
                    "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
                    "volumeMounts": [{"name": "kmsg", "mountPath": health_catalog.KMSG_PATH, "readOnly": True},
                                     {"name": "config", "mountPath": NPD_CONFIG_DIR, "readOnly": True}],
                }],
                "volumes": [{"name": "kmsg", "hostPath": {"path": health_catalog.KMSG_PATH, "type": "CharDevice"}},
                            {"name": "config", "configMap": {"name": NPD_NAME}}],
            }},
        },
    }


# ---------------------------------------------------------------------------------------------------------
# Active checks


def check_priority_class() -> dict[str, Any]:
    return {"metadata": metadata(CHECK_PRIORITY_CLASS, None, app_labels(CHECK)), "value": CHECK_PRIORITY,
            "preemptionPolicy": "Never", "globalDefault": False,
            "description": "GPU health checks: only on idle nodes; anything preempts them; no autoscaler scale-up."}


def reporter_cluster_role() -> dict[str, Any]:
    """``gpu-platform health-report`` reads its node and sets the label, the annotation and the condition."""
    return {"metadata": metadata(REPORTER_NAME, None, app_labels(CHECK)),
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
                      {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]}]}


def checks_config_map(spec: HealthSpec) -> Optional[dict[str, Any]]:
    """The all-reduce program the checks mount (None when no pool runs it)."""
    if not spec.any_all_reduce:
        return None
    return {"metadata": metadata("gpu-health-checks", spec.namespace, app_labels(CHECK)),
            "data": {ALL_REDUCE_FILE: spec.all_reduce_program}}


def dcgm_diag_command(level: int) -> list[str]:
    """A private DCGM host engine in the pod, the diagnostic in JSON, its exit code in a file: the pod goes on to the
    reporter whatever the result."""
    # The node's other DCGM (the exporter's embedded engine) listens on no port of this pod's network namespace.
    script = ("nv-hostengine -n & engine=$!; "
              "for i in $(seq 30); do dcgmi discovery -l > /dev/null 2>&1 && break; sleep 1; done; "
              f"dcgmi diag -r {level} -j > {RESULTS_DIR}/dcgm-diag.json 2> {RESULTS_DIR}/dcgm-diag.err; "
              f"echo $? > {RESULTS_DIR}/dcgm-diag.rc; kill $engine || true")
    return ["/bin/sh", "-c", script]


def all_reduce_command(gpus: int) -> list[str]:
    script = (f"torchrun --standalone --nproc_per_node={gpus} {CHECKS_DIR}/{ALL_REDUCE_FILE} "
              f"> {RESULTS_DIR}/all-reduce.log 2>&1; echo $? > {RESULTS_DIR}/all-reduce.rc")
    return ["/bin/sh", "-c", script]


def expected_checks(spec: HealthSpec, pool: GpuPool) -> tuple[str, ...]:
    """The checks a pool's pod runs (``dcgm-diag`` on NVIDIA, ``all-reduce`` on several GPUs): the reporter fails the
    node when one of them left no result, instead of judging only the files it happens to find."""
    return (*(("dcgm-diag",) if pool.vendor == "nvidia" else ()),
            *(("all-reduce",) if spec.runs_all_reduce(pool) else ()))


def reporter_args(expect: tuple[str, ...] = ("dcgm-diag",)) -> list[str]:
    """The contract with ``gpu-platform health-report``: the node, the results directory, the checks that must have
    left a result, the least bus bandwidth (0: the all-reduce passes when it completes with correct sums; no
    per-model bandwidth floor is set yet)."""
    return ["health-report", "--node", "$(NODE_NAME)", "--results", RESULTS_DIR,
            *[arg for check in expect for arg in ("--expect", check)], "--min-bus-bandwidth", "0"]


def check_name(pool: GpuPool) -> str:
    return f"gpu-health-check-{pool.name}"


def max_checks_at_once(pool: GpuPool) -> int:
    """Most nodes of ``pool`` under check at once: `CHECK_PERCENT_AT_ONCE` of its maximum, at least one."""
    return max(1, pool.max_nodes * CHECK_PERCENT_AT_ONCE // 100)


def check_cron_job(spec: HealthSpec, pool: GpuPool) -> dict[str, Any]:
    gpus = {pool.resource: pool.schedulable_gpus_per_node}
    tmp_volume, tmp_mount = pod_security.writable_dir("tmp", pod_security.TMP_PATH, "1Gi")
    results_volume, results_mount = pod_security.writable_dir("results", RESULTS_DIR, "64Mi")
    init: list[dict[str, Any]] = []
    volumes = [tmp_volume, results_volume]
    if pool.vendor == "nvidia":
        log_volume, log_mount = pod_security.writable_dir("dcgm-log", "/var/log", "64Mi")
        volumes.append(log_volume)
        init.append({
            "name": "dcgm-diag",
            "image": spec.dcgm_image,
            "command": dcgm_diag_command(spec.dcgm_diag_level),
            "workingDir": pod_security.TMP_PATH,
            "resources": {"limits": {**gpus, "memory": "4Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
            # DCGM's host engine and diagnostics read profiling counters and reset GPU state: root with SYS_ADMIN
            # (NVIDIA's note in dcgm-exporter's Dockerfile: profiling needs root and SYS_ADMIN), nothing else,
            # not privileged.
            "securityContext": {"runAsUser": 0, "runAsNonRoot": False, "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]},
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "volumeMounts": [results_mount, tmp_mount, log_mount],
        })
    if spec.runs_all_reduce(pool):
        shm = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}
        volumes += [shm, {"name": "checks", "configMap": {"name": "gpu-health-checks"}}]
        init.append({
            "name": "all-reduce",
            "image": dict(spec.training_images)[pool.vendor],
            "command": all_reduce_command(pool.gpus_per_node),
            "env": [{"name": "HOME", "value": pod_security.TMP_PATH}],
            # The memory limit covers the 8Gi of /dev/shm (memory-backed) and the ranks' host memory.
            "resources": {"limits": {**gpus, "memory": "32Gi"}, "requests": {"cpu": "2", "memory": "8Gi"}},
            "securityContext": pod_security.container_security_context(),
            "volumeMounts": [results_mount, tmp_mount, {"name": "dshm", "mountPath": "/dev/shm"},
                             {"name": "checks", "mountPath": CHECKS_DIR, "readOnly": True}],
        })
    reporter = {
        "name": "report",
        "image": spec.platform_image,
        "args": reporter_args(expected_checks(spec, pool)),
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "HOME", "value": pod_security.TMP_PATH}],
        # The GPUs again: the reporter runs on the node while no workload may take them.
        "resources": {"limits": {**gpus, "memory": "256Mi"}, "requests": {"cpu": "50m", "memory": "128Mi"}},
        "securityContext": pod_security.container_security_context(),
        "volumeMounts": [results_mount, tmp_mount],
    }
    pod_labels = {**app_labels(CHECK), labels.POOL_LABEL: pool.name}
    return {
        "metadata": metadata(check_name(pool), spec.namespace, pod_labels),
        "spec": {
            # A template only: suspended, the CronJob controller never creates a Job from it, so its pod never
            # reaches the scheduler. The dispatcher (`dispatcher_cron_job`) runs it on the schedule, bound to idle
            # nodes; `kubectl create job --from=cronjob/<name>` would run it unbound (through the scheduler).
            "schedule": spec.schedule,
            "suspend": True,
            "jobTemplate": {"spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": DIAG_DEADLINE_SECONDS[spec.dcgm_diag_level],
                "ttlSecondsAfterFinished": 86400,
                "template": {"metadata": {"labels": pod_labels}, "spec": {
                    "serviceAccountName": REPORTER_NAME,
                    "automountServiceAccountToken": True,  # the reporter patches its node
                    "restartPolicy": "Never",
                    "priorityClassName": CHECK_PRIORITY_CLASS,
                    # The dispatcher binds the pod (nodeName) to a node of the pool; the kubelet still checks the
                    # selector when it admits the pod, so a pod bound to another pool's node fails instead of running.
                    "nodeSelector": dict(pool.selector),
                    # A quarantined node is cordoned and tainted: the check must reach it to release it.
                    "tolerations": [*pool.tolerations, quarantine_toleration(),
                                    {"key": labels.UNSCHEDULABLE_TAINT_KEY, "operator": "Exists",
                                     "effect": "NoSchedule"}],
                    # Per container: the diagnostic runs as root, the all-reduce and reporter as the platform's user.
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"},
                                        "fsGroup": pod_security.RUN_AS_ID},
                    "initContainers": init,
                    "containers": [reporter],
                    "volumes": volumes,
                }},
            }},
        },
    }


def dispatcher_cluster_role() -> dict[str, Any]:
    """``gpu-platform health-dispatch`` lists the nodes and the active pods of every namespace (which nodes are idle;
    the pool's checks in flight). Nothing else cluster-wide."""
    return {"metadata": metadata(DISPATCHER_NAME, None, app_labels(DISPATCH)),
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
                      {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]}


def dispatcher_role(spec: HealthSpec) -> dict[str, Any]:
    """In the health namespace only: read the pools' check templates, create the check Jobs."""
    return {"metadata": metadata(DISPATCHER_NAME, spec.namespace, app_labels(DISPATCH)),
            "rules": [{"apiGroups": ["batch"], "resources": ["cronjobs"], "verbs": ["get"],
                       "resourceNames": sorted(check_name(p) for p in spec.checked_pools)},
                      {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}]}


def role_binding(name: str, spec: HealthSpec, component: str) -> dict[str, Any]:
    return {"metadata": metadata(name, spec.namespace, app_labels(component)),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": spec.namespace}]}


def dispatcher_args(spec: HealthSpec) -> list[str]:
    """The contract with ``gpu-platform health-dispatch``: the namespace, each pool's template and how many of its
    nodes may be under check at once."""
    return ["health-dispatch", "--namespace", spec.namespace,
            *[arg for pool in spec.checked_pools
              for arg in ("--template", f"{check_name(pool)}={max_checks_at_once(pool)}")]]


def dispatcher_cron_job(spec: HealthSpec) -> dict[str, Any]:
    """The scheduled dispatcher: a CPU-only pod (no GPU toleration, so never on a GPU node) that binds each pool's
    check to the pool's idle nodes."""
    pod_labels = app_labels(DISPATCH)
    tmp_volume, tmp_mount = pod_security.writable_dir("tmp", pod_security.TMP_PATH, "64Mi")
    return {
        "metadata": metadata(DISPATCHER_NAME, spec.namespace, pod_labels),
        "spec": {
            "schedule": spec.schedule,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "successfulJobsHistoryLimit": 3,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {
                "backoffLimit": 2,
                "activeDeadlineSeconds": DISPATCH_DEADLINE_SECONDS,
                "ttlSecondsAfterFinished": 86400,
                "template": {"metadata": {"labels": pod_labels}, "spec": {
                    "serviceAccountName": DISPATCHER_NAME,
                    "automountServiceAccountToken": True,  # it lists nodes and pods and creates Jobs
                    "restartPolicy": "Never",
                    "securityContext": pod_security.pod_security_context(),
                    "containers": [{
                        "name": "dispatch",
                        "image": spec.platform_image,
                        "args": dispatcher_args(spec),
                        "env": [{"name": "HOME", "value": pod_security.TMP_PATH}],
                        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                        "securityContext": pod_security.container_security_context(),
                        "volumeMounts": [tmp_mount],
                    }],
                    "volumes": [tmp_volume],
                }},
            }},
        },
    }


# ---------------------------------------------------------------------------------------------------------
# Remediation


def remediation_policy(spec: HealthSpec) -> dict[str, Any]:
    """The controller's configuration (the contract with ``gpu-platform remediate --config``)."""
    return {
        "mode": spec.mode,
        "maxQuarantinedPerPool": spec.max_quarantined_per_pool,
        "maxQuarantinedPercent": spec.max_quarantined_percent,
        "cooldownMinutes": spec.cooldown_minutes,
        "fatalConditions": list(spec.fatal_conditions),
        "poolLabel": labels.POOL_LABEL,
        "intervalSeconds": REMEDIATION_INTERVAL_SECONDS,
        "releaseAfterPassingCheck": True,
    }


def remediation_config_map(spec: HealthSpec) -> dict[str, Any]:
    return {"metadata": metadata(REMEDIATION_NAME, spec.namespace, app_labels(REMEDIATION)),
            "data": {REMEDIATION_CONFIG_FILE: json.dumps(remediation_policy(spec), indent=2, sort_keys=True) + "\n"}}


def remediation_rules(mode: str) -> list[dict[str, Any]]:
    """Read nodes always; patch them (cordon, taint, release) unless dry-run; Events always (dry-run records what it
    would do); list pods (of every namespace, on the node) and evict them only with ``drain``."""
    # It lists the nodes every interval (gpu_platform.health.controller): no watch.
    node_verbs = ["get", "list"] if mode == "dry-run" else ["get", "list", "patch"]
    rules = [{"apiGroups": [""], "resources": ["nodes"], "verbs": node_verbs},
             {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]
    if mode == "drain":
        rules += [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                  {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]
    return rules


def remediation_cluster_role(spec: HealthSpec) -> dict[str, Any]:
    return {"metadata": metadata(REMEDIATION_NAME, None, app_labels(REMEDIATION)),
            "rules": remediation_rules(spec.mode)}


def remediation_deployment(spec: HealthSpec) -> dict[str, Any]:
    pod_labels = app_labels(REMEDIATION)
    tmp_volume, tmp_mount = pod_security.writable_dir("tmp", pod_security.TMP_PATH, "64Mi")
    probe = {"tcpSocket": {"port": "metrics"}, "periodSeconds": 20}
    return {
        "metadata": metadata(REMEDIATION_NAME, spec.namespace, pod_labels),
        "spec": {
            "replicas": 1,
            # One controller at a time: two would each count the quarantined nodes and together exceed the cap.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": pod_labels},
            "template": {"metadata": {"labels": pod_labels}, "spec": {
                "serviceAccountName": REMEDIATION_NAME,
                "automountServiceAccountToken": True,  # it reads and (unless dry-run) patches nodes
                "securityContext": pod_security.pod_security_context(),
                "containers": [{
                    "name": "remediate",
                    "image": spec.platform_image,
                    "args": ["remediate", "--config", f"{REMEDIATION_CONFIG_DIR}/{REMEDIATION_CONFIG_FILE}",
                             "--metrics-port", str(REMEDIATION_METRICS_PORT)],
                    "env": [{"name": "HOME", "value": pod_security.TMP_PATH}],
                    "ports": [{"name": "metrics", "containerPort": REMEDIATION_METRICS_PORT, "protocol": "TCP"}],
                    "readinessProbe": probe,
                    "livenessProbe": {**probe, "failureThreshold": 6},
                    "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                    "securityContext": pod_security.container_security_context(),
                    "volumeMounts": [{"name": "config", "mountPath": REMEDIATION_CONFIG_DIR, "readOnly": True},
                                     tmp_mount],
                }],
                "volumes": [{"name": "config", "configMap": {"name": REMEDIATION_NAME}}, tmp_volume],
            }},
        },
    }


def remediation_service(spec: HealthSpec) -> dict[str, Any]:
    return {"metadata": metadata(REMEDIATION_NAME, spec.namespace, app_labels(REMEDIATION)),
            "spec": {"selector": app_labels(REMEDIATION),
                     "ports": [{"name": "metrics", "port": REMEDIATION_METRICS_PORT, "targetPort": "metrics",
                                "protocol": "TCP"}]}}


# ---------------------------------------------------------------------------------------------------------
# Monitoring


def remediation_service_monitor(spec: HealthSpec) -> dict[str, Any]:
    from ..versions import PROMETHEUS_OPERATOR_API_VERSION

    return {"apiVersion": PROMETHEUS_OPERATOR_API_VERSION, "kind": "ServiceMonitor",
            "metadata": metadata(REMEDIATION_NAME, spec.namespace,
                                 {**app_labels(REMEDIATION), **dict(spec.service_monitor_labels)}),
            "spec": {"selector": {"matchLabels": app_labels(REMEDIATION)},
                     "namespaceSelector": {"matchNames": [spec.namespace]},
                     "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}]}}


def npd_pod_monitor(spec: HealthSpec) -> dict[str, Any]:
    """node-problem-detector's ``problem_counter`` / ``problem_gauge``, with the node's name as ``node``."""
    from ..versions import PROMETHEUS_OPERATOR_API_VERSION

    return {"apiVersion": PROMETHEUS_OPERATOR_API_VERSION, "kind": "PodMonitor",
            "metadata": metadata(NPD_NAME, spec.namespace, {**app_labels(NPD), **dict(spec.service_monitor_labels)}),
            "spec": {"selector": {"matchLabels": app_labels(NPD)},
                     "namespaceSelector": {"matchNames": [spec.namespace]},
                     "podMetricsEndpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s",
                                              "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"],
                                                               "targetLabel": "node", "action": "replace"}]}]}}


# ---------------------------------------------------------------------------------------------------------
# Network


def network_policies(spec: HealthSpec) -> list[dict[str, Any]]:
    """Default deny both ways; DNS and the API server for the programs that call it (node-problem-detector, the
    reporter, the dispatcher, the controller; the checks themselves use only the pod's loopback); Prometheus'
    scrapes."""
    components = (NPD, CHECK, REMEDIATION, *((DISPATCH,) if spec.checked_pools else ()))
    callers = {"matchExpressions": [{"key": labels.APP_COMPONENT_LABEL, "operator": "In",
                                     "values": sorted(components)}]}
    dns = {"to": [monitoring_policies.namespace_peer("kube-system")],
           "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}

    def policy(name: str, spec_body: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": metadata(name, spec.namespace, {labels.APP_NAME_LABEL: APP}), "spec": spec_body}

    policies = [
        policy("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
        # No `to`: the API server's addresses are outside the pod network and differ per cloud.
        policy("allow-api-server", {"podSelector": callers, "policyTypes": ["Egress"],
                                    "egress": [dns, {"ports": _tcp(*API_SERVER_PORTS)}]}),
    ]
    if spec.monitoring_namespace:
        prometheus = monitoring_policies.prometheus_peer(spec.monitoring_namespace)
        policies += [
            policy("allow-prometheus-npd", {"podSelector": {"matchLabels": app_labels(NPD)},
                                            "policyTypes": ["Ingress"],
                                            "ingress": [{"from": [prometheus], "ports": _tcp(NPD_METRICS_PORT)}]}),
            policy("allow-prometheus-remediation", {
                "podSelector": {"matchLabels": app_labels(REMEDIATION)}, "policyTypes": ["Ingress"],
                "ingress": [{"from": [prometheus], "ports": _tcp(REMEDIATION_METRICS_PORT)}]}),
        ]
    return policies
