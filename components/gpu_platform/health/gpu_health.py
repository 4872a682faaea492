"""`GpuHealth`: node health for the accelerator pools (issue 21): passive conditions, active checks on idle nodes,
remediation that cannot cascade (dry-run by default), their alerts and dashboard.

What it deploys (bodies decided in `health_objects`, whose docstring gives the reasons): the ``gpu-health``
namespace; node-problem-detector on the NVIDIA and AMD pools with the platform's XID and RDMA rules
(`health_catalog`); per NVIDIA or AMD pool a check template (DCGM diagnostics and a single-node all-reduce, then
``gpu-platform health-report``) that the dispatcher CronJob (``gpu-platform health-dispatch``) binds to the pool's
idle nodes, so no check pod is ever pending for an autoscaler to provision for; the remediation controller
``gpu-platform remediate`` with its policy and least-privilege RBAC; NetworkPolicies; with monitoring, a PodMonitor, a
ServiceMonitor, the node-health PrometheusRule (`health_monitoring`) and its Grafana dashboard.

Ordering: with ``monitoring_namespace``, make the component depend on the monitoring release (the Prometheus
Operator CRDs); `build_health_layer` does.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import labels, versions
from ..component_args import CRON, DNS_LABEL, NON_EMPTY, Args, KeywordArgs, at_least, between, choice
from ..kubernetes_base.common import HTTP_URL, check_pool_set, child_opts, pools_of, refuse_unless, register_body
from ..kubernetes_base.custom_object import KubernetesObject
from ..pools import GpuPoolSpec
from . import health_catalog, health_config, health_monitoring, remediation
from . import health_objects as objects


class GpuHealthArgs(TypedDict, total=False):
    """Arguments of `GpuHealth`. ``pools`` is required."""

    pools: Required[list[GpuPoolSpec]]
    """The cluster's accelerator pools. node-problem-detector runs on the NVIDIA and AMD ones, the active checks on
    those with whole GPUs per pod (not MIG, DRA or HAMi pools); Neuron pools add Neuron's ``NeuronHealth`` condition
    to what remediation acts on."""
    namespace: str
    """Namespace of everything (Pod Security ``privileged``). Default ``gpu-health``."""
    active_checks: bool
    """Run the active checks. Default true."""
    schedule: str
    """Cron schedule of each pool's check. Default ``0 */6 * * *``."""
    dcgm_diag_level: int
    """``dcgmi diag -r`` level (1-4) on NVIDIA pools. Default 2."""
    all_reduce: bool
    """Add a single-node all-reduce (``gpu_platform.health.allreduce``) on pools of several GPUs per node. Default
    true."""
    remediation_mode: str
    """``dry-run`` (default), ``cordon`` or ``drain``."""
    max_quarantined_per_pool: int
    """Most nodes of a pool quarantined at once. Default 1."""
    max_quarantined_percent: int
    """Most nodes of a pool quarantined at once, in percent. Default 10."""
    cooldown_minutes: int
    """Least minutes between two quarantines in a pool. Default 60."""
    monitoring_namespace: Optional[str]
    """Namespace of the platform's Prometheus: admitted to the metrics ports; the PodMonitor, ServiceMonitor,
    PrometheusRule and dashboard are created (they need the Prometheus Operator CRDs). Default none."""
    service_monitor_labels: dict[str, str]
    """Labels on the PodMonitor, ServiceMonitor and PrometheusRule. Default none."""
    runbook_base_url: str
    """Base URL of the repository whose docs/health.md the alerts link to."""
    npd_image: str
    """node-problem-detector image. Default `versions.NODE_PROBLEM_DETECTOR_IMAGE`."""
    dcgm_image: str
    """DCGM image of the diagnostic. Default `versions.DCGM_IMAGE`."""
    platform_image: str
    """Image with ``gpu-platform`` (reporter, controller). Default `versions.PLATFORM_IMAGE`."""


RULES = {
    "namespace": DNS_LABEL,
    "schedule": CRON,
    "dcgm_diag_level": between(1, 4),
    "remediation_mode": choice(*health_config.REMEDIATION_MODES),
    "max_quarantined_per_pool": at_least(1),
    "max_quarantined_percent": between(1, 100),
    "cooldown_minutes": at_least(0),
    "monitoring_namespace": DNS_LABEL,
    "runbook_base_url": HTTP_URL,
    "npd_image": NON_EMPTY,
    "dcgm_image": NON_EMPTY,
    "platform_image": NON_EMPTY,
}

DEFAULT_RUNBOOK_BASE_URL = "https://github.com/gpu-platform/gpu-platform/blob/main"
checkable = health_config.checkable
"""Whether a pool gets an active check (`health_config.checkable`)."""


def checked_args(name: str, args: GpuHealthArgs) -> dict[str, Any]:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("GpuHealth", name)
    checked = checker.check(args, GpuHealthArgs, RULES)
    check_pool_set(checker, checked["pools"])
    pools = pools_of(checked["pools"])
    active = bool(checked.get("active_checks", True))
    checked_pools = [p for p in pools if checkable(p)]
    for key in ("schedule", "dcgm_diag_level", "all_reduce"):
        refuse_unless(checker, checked, key, active, "with active_checks: true")
        refuse_unless(checker, checked, key, bool(checked_pools), "with an NVIDIA or AMD pool the check can take "
                                                                  "whole (not MIG, DRA or HAMi)")
    refuse_unless(checker, checked, "dcgm_diag_level", any(p.vendor == "nvidia" for p in checked_pools),
                  "with an NVIDIA pool")
    if checked.get("all_reduce") and not any(p.gpus_per_node > 1 for p in checked_pools):
        checker.fail("all_reduce", "takes effect only with a checked pool of several GPUs per node")
    refuse_unless(checker, checked, "service_monitor_labels", bool(checked.get("monitoring_namespace")),
                  "with monitoring_namespace")
    if not any(p.vendor in health_catalog.WATCHED_VENDORS for p in pools):
        checker.fail("pools", "needs an NVIDIA, AMD, Neuron or TPU pool")
    per_pool, percent = checked.get("max_quarantined_per_pool", 1), checked.get("max_quarantined_percent", 10)
    for i, pool in enumerate(pools):
        size = remediation.size_taken_down(pool.min_nodes, pool.max_nodes, per_pool, percent)
        if size is not None:
            checker.fail("max_quarantined_per_pool", f"{per_pool} with max_quarantined_percent {percent} could "
                                                     f"quarantine every node of pools[{i}] '{pool.name}' at {size} "
                                                     "nodes: remediation must never take a pool down; lower either")
    return checked


def all_reduce_program() -> str:
    """The all-reduce the checks run (`gpu_platform.health.allreduce.PROGRAM`), imported when a pool needs it."""
    from . import allreduce  # issue 21's verify helper owns it

    return allreduce.PROGRAM


def spec_from_args(args: GpuHealthArgs, name: str = "health") -> objects.HealthSpec:
    """The `HealthSpec` the component's objects are decided from."""
    checked = checked_args(name, args)
    pools = pools_of(checked["pools"])
    npd_pools = tuple(p for p in pools if p.vendor in health_catalog.NPD_VENDORS)
    all_reduce = bool(checked.get("all_reduce", True))
    candidates = tuple(p for p in pools if checkable(p)) if checked.get("active_checks", True) else ()
    # Only pools whose check pod runs something (DCGM on NVIDIA, the all-reduce on several GPUs).
    checked_pools = tuple(p for p in candidates if p.vendor == "nvidia" or (all_reduce and p.gpus_per_node > 1))
    conditions: list[str] = []
    if npd_pools:
        conditions += health_catalog.fatal_conditions()
    if checked_pools:
        conditions.append(labels.HEALTH_CHECK_CONDITION)
    if any(p.vendor == "aws-neuron" for p in pools):
        conditions.append(health_catalog.NEURON_HEALTH)
    if any(p.vendor == "google-tpu" for p in pools):
        conditions += health_catalog.GKE_NODE_CONDITIONS
    spec = objects.HealthSpec(
        pools=npd_pools, checked_pools=checked_pools,
        namespace=checked.get("namespace", objects.NAMESPACE),
        schedule=checked.get("schedule", health_config.ActiveChecksConfig.schedule),
        dcgm_diag_level=checked.get("dcgm_diag_level", health_config.ActiveChecksConfig.dcgm_diag_level),
        all_reduce=all_reduce,
        mode=checked.get("remediation_mode", "dry-run"),
        max_quarantined_per_pool=checked.get("max_quarantined_per_pool", 1),
        max_quarantined_percent=checked.get("max_quarantined_percent", 10),
        cooldown_minutes=checked.get("cooldown_minutes", 60),
        monitoring_namespace=checked.get("monitoring_namespace"),
        service_monitor_labels=tuple(sorted(checked.get("service_monitor_labels", {}).items())),
        npd_image=checked.get("npd_image", versions.NODE_PROBLEM_DETECTOR_IMAGE.reference),
        dcgm_image=checked.get("dcgm_image", versions.DCGM_IMAGE.reference),
        platform_image=checked.get("platform_image", versions.PLATFORM_IMAGE.reference),
        training_images=tuple((vendor, image.reference) for vendor, image in sorted(versions.TRAINING_IMAGES.items())),
        fatal_conditions=tuple(conditions),
    )
    if spec.any_all_reduce:
        from dataclasses import replace

        spec = replace(spec, all_reduce_program=all_reduce_program())
    return spec


class GpuHealth(pulumi.ComponentResource, metaclass=KeywordArgs):
    """node-problem-detector, active checks and the remediation controller (see the module docstring).

    Attributes: ``spec`` (the decided `HealthSpec`), ``namespace``, ``remediation`` (the controller's Deployment),
    ``checks`` (the check templates, suspended CronJobs, by pool name), ``dispatcher`` (the CronJob that binds them to
    idle nodes, or None), ``detector`` (the DaemonSet or None).
    """

    namespace: str

    def __init__(self, name: str, args: GpuHealthArgs, opts: Optional[pulumi.ResourceOptions] = None):
        spec = spec_from_args(args, name)  # checked before anything is registered
        super().__init__("gpuplatform:index:GpuHealth", name, {}, opts)
        self.spec = spec
        self.namespace = spec.namespace
        ns = register_body(k8s.core.v1.Namespace, f"{name}-namespace", objects.namespace(spec), child_opts(self, opts))
        in_ns = child_opts(self, opts, depends_on=[ns])

        def account(suffix: str, account_name: str, component: str, role_body: dict) -> list[Any]:
            sa = register_body(k8s.core.v1.ServiceAccount, f"{name}-{suffix}-sa",
                               objects.service_account(account_name, spec, component), in_ns)
            role = register_body(k8s.rbac.v1.ClusterRole, f"{name}-{suffix}-role", role_body, child_opts(self, opts))
            binding = register_body(
                k8s.rbac.v1.ClusterRoleBinding, f"{name}-{suffix}-binding",
                objects.cluster_role_binding(account_name, spec.namespace, account_name, component),
                child_opts(self, opts, depends_on=[sa, role]))
            return [sa, binding]

        self.detector = None
        if spec.pools:
            before = account("npd", objects.NPD_NAME, objects.NPD, objects.npd_cluster_role())
            config = register_body(k8s.core.v1.ConfigMap, f"{name}-npd-config", objects.npd_config_map(spec), in_ns)
            self.detector = register_body(k8s.apps.v1.DaemonSet, f"{name}-npd", objects.npd_daemon_set(spec),
                                          child_opts(self, opts, depends_on=[ns, config, *before]))

        self.checks: dict[str, Any] = {}
        self.dispatcher = None
        if spec.checked_pools:
            priority = register_body(k8s.scheduling.v1.PriorityClass, f"{name}-check-priority",
                                     objects.check_priority_class(), child_opts(self, opts))
            before = [priority, *account("reporter", objects.REPORTER_NAME, objects.CHECK,
                                         objects.reporter_cluster_role())]
            programs = objects.checks_config_map(spec)
            if programs is not None:
                before.append(register_body(k8s.core.v1.ConfigMap, f"{name}-checks", programs, in_ns))
            for pool in spec.checked_pools:
                self.checks[pool.name] = register_body(
                    k8s.batch.v1.CronJob, f"{name}-check-{pool.name}", objects.check_cron_job(spec, pool),
                    child_opts(self, opts, depends_on=[ns, *before]))
            # The dispatcher binds the (suspended) templates above to idle nodes, on the schedule.
            dispatch = account("dispatcher", objects.DISPATCHER_NAME, objects.DISPATCH,
                               objects.dispatcher_cluster_role())
            role = register_body(k8s.rbac.v1.Role, f"{name}-dispatcher-ns-role", objects.dispatcher_role(spec), in_ns)
            dispatch.append(register_body(
                k8s.rbac.v1.RoleBinding, f"{name}-dispatcher-ns-binding",
                objects.role_binding(objects.DISPATCHER_NAME, spec, objects.DISPATCH),
                child_opts(self, opts, depends_on=[ns, role, *dispatch])))
            self.dispatcher = register_body(k8s.batch.v1.CronJob, f"{name}-dispatcher",
                                            objects.dispatcher_cron_job(spec),
                                            child_opts(self, opts, depends_on=[ns, *dispatch,
                                                                               *self.checks.values()]))

        before = account("remediation", objects.REMEDIATION_NAME, objects.REMEDIATION,
                         objects.remediation_cluster_role(spec))
        policy = register_body(k8s.core.v1.ConfigMap, f"{name}-remediation-config",
                               objects.remediation_config_map(spec), in_ns)
        self.remediation = register_body(k8s.apps.v1.Deployment, f"{name}-remediation",
                                         objects.remediation_deployment(spec),
                                         child_opts(self, opts, depends_on=[ns, policy, *before]))
        service = register_body(k8s.core.v1.Service, f"{name}-remediation-service",
                                objects.remediation_service(spec), in_ns)
        for body in objects.network_policies(spec):
            register_body(k8s.networking.v1.NetworkPolicy, f"{name}-{body['metadata']['name']}", body, in_ns)

        if spec.monitoring_namespace:
            from ..monitoring.gpu_monitoring import dashboard_configmap_body, prometheus_rule_body

            KubernetesObject(f"{name}-remediation-monitor", objects.remediation_service_monitor(spec),
                             child_opts(self, opts, depends_on=[ns, service]))
            if self.detector is not None:
                KubernetesObject(f"{name}-npd-monitor", objects.npd_pod_monitor(spec), in_ns)
            rule = prometheus_rule_body(health_monitoring.RULE_NAME, spec.namespace, [health_monitoring.alert_group(
                args.get("runbook_base_url") or DEFAULT_RUNBOOK_BASE_URL)])
            rule["metadata"]["labels"].update(dict(spec.service_monitor_labels))
            KubernetesObject(f"{name}-rules", rule, in_ns)
            register_body(k8s.core.v1.ConfigMap, f"{name}-dashboard",
                          dashboard_configmap_body(health_monitoring.DASHBOARD_SLUG, spec.monitoring_namespace,
                                                   health_monitoring.health_dashboard()),
                          child_opts(self, opts))
        self.register_outputs({"namespace": self.namespace})


def health_args(config: Any, pools: list, monitoring: Any = None) -> GpuHealthArgs:
    """`GpuHealth` args from a stack's configuration (``config.health``), its pools (`GpuPool`) and the monitoring
    layer (None when absent)."""
    health = config.health
    checks, remediation = health.active_checks, health.remediation
    args = GpuHealthArgs(
        pools=[p.spec() for p in pools], active_checks=checks.enabled,
        remediation_mode=remediation.mode, max_quarantined_per_pool=remediation.max_quarantined_per_pool,
        max_quarantined_percent=remediation.max_quarantined_percent,
        cooldown_minutes=remediation.cooldown_minutes)
    if checks.enabled and any(checkable(p) for p in pools):
        args["schedule"] = checks.schedule
        if any(checkable(p) and p.vendor == "nvidia" for p in pools):
            args["dcgm_diag_level"] = checks.dcgm_diag_level
        args["all_reduce"] = checks.all_reduce and any(checkable(p) and p.gpus_per_node > 1 for p in pools)
    if monitoring is not None:
        args["monitoring_namespace"] = monitoring.namespace
        args["service_monitor_labels"] = dict(monitoring.service_monitor_labels)
    return args


def build_health_layer(platform: Any, name: str) -> Optional[GpuHealth]:
    """Adds ``platform.layers["health"]`` when ``health.enabled`` (the default) and the stack has a pool whose
    health the platform watches (NVIDIA, AMD, Neuron, TPU); after the monitoring release when there is one."""
    config = platform.config
    if not config.health.enabled:
        return None
    pools = [p for p in platform.pools if p.vendor in health_catalog.WATCHED_VENDORS]
    if not pools:
        return None
    monitoring = platform.layers.get("monitoring")
    after = [monitoring.release] if monitoring is not None else []
    platform.layers["health"] = GpuHealth(f"{name}-health", health_args(config, pools, monitoring),
                                          opts=platform._k8s_opts(depends_on=after))
    return platform.layers["health"]
