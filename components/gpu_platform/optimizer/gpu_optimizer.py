"""`GpuOptimizer`: the utilisation optimizer as a CronJob with least-privilege RBAC and locked-down egress."""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import config_model, versions
from ..component_args import CRON, DNS_LABEL, NON_EMPTY, Args, KeywordArgs, between, choice
from ..kubernetes_base.common import HTTP_URL, check_pool_set, child_opts, metadata, pools_of
from ..pools import GpuPoolSpec
from ..security import namespace_security, pod_security
from .optimizer_objects import egress_rules, optimizer_args, policy_for, policy_yaml, rbac_rules

APP_LABELS = {"app.kubernetes.io/name": "gpu-optimizer", "app.kubernetes.io/part-of": "gpu-platform"}
TMP_SIZE = "64Mi"
"""``/tmp`` (also ``HOME``): the only writable path of the read-only optimizer container; Python's temporary files."""


class GpuOptimizerArgs(TypedDict, total=False):
    """Arguments of `GpuOptimizer`."""

    pools: list[GpuPoolSpec]
    """The platform's GPU pools (targets of `recommend`)."""
    prometheus_url: Required[pulumi.Input[str]]
    """In-cluster Prometheus base URL."""
    prometheus_namespace: str
    """Namespace Prometheus runs in (egress is allowed there only). Default ``monitoring``."""
    namespace: str
    """Namespace of the CronJob. Default ``gpu-optimizer``."""
    action: str
    """``report`` (default), ``annotate``, ``scale-down`` or ``recommend``."""
    schedule: str
    """Cron schedule. Default every 30 minutes."""
    utilization_threshold: float
    """GPU utilisation (%) under which an allocation is idle. Default 10."""
    dry_run: bool
    """Default true: report what would change; RBAC then grants no write verbs at all."""
    image: str
    """Image running ``gpu-platform optimize``. Default the platform image of `versions.PLATFORM_IMAGE`."""


RULES = {
    "prometheus_url": HTTP_URL,
    "prometheus_namespace": DNS_LABEL,
    "namespace": DNS_LABEL,
    "action": choice(*config_model.OPTIMIZER_ACTIONS),
    "schedule": CRON,
    "utilization_threshold": between(0, 100),
    "image": NON_EMPTY,
}


def checked_args(name: str, args: GpuOptimizerArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("GpuOptimizer", name)
    checked = checker.check(args, GpuOptimizerArgs, RULES)
    check_pool_set(checker, checked.get("pools", []))
    return checked


class GpuOptimizer(pulumi.ComponentResource, metaclass=KeywordArgs):
    """CronJob running ``gpu-platform optimize``, its policy ConfigMap, ServiceAccount, RBAC and NetworkPolicy."""

    namespace: pulumi.Output[str]

    def __init__(self, name: str, args: GpuOptimizerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:GpuOptimizer", name, {}, opts)
        ns_name = args.get("namespace", "gpu-optimizer")
        action = args.get("action", "report")
        dry_run = bool(args.get("dry_run", True))
        policy = policy_for(pools_of(args.get("pools", [])), action, float(args.get("utilization_threshold", 10.0)),
                            dry_run)
        namespace = k8s.core.v1.Namespace(f"{name}-ns", **namespace_security.namespace_body(
            ns_name, namespace_security.namespace_pod_security("optimizer")), opts=child_opts(self, opts))
        in_ns = child_opts(self, opts, depends_on=[namespace])
        account = k8s.core.v1.ServiceAccount(f"{name}-sa", metadata=metadata("gpu-optimizer", ns_name, APP_LABELS),
                                             opts=in_ns)
        role = k8s.rbac.v1.ClusterRole(f"{name}-role", metadata=metadata("gpu-platform-optimizer", None, APP_LABELS),
                                       rules=rbac_rules(action, dry_run), opts=child_opts(self, opts))
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding", metadata=metadata("gpu-platform-optimizer", None, APP_LABELS),
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpu-platform-optimizer"},
            subjects=[{"kind": "ServiceAccount", "name": "gpu-optimizer", "namespace": ns_name}],
            opts=child_opts(self, opts, depends_on=[role, account]))
        config = k8s.core.v1.ConfigMap(f"{name}-policy", metadata=metadata("gpu-optimizer-policy", ns_name, APP_LABELS),
                                       data={"policy.yaml": policy_yaml(policy)}, opts=in_ns)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-egress", metadata=metadata("gpu-optimizer", ns_name, APP_LABELS),
            spec={"podSelector": {"matchLabels": APP_LABELS}, "policyTypes": ["Ingress", "Egress"],
                  "ingress": [], "egress": egress_rules(args.get("prometheus_namespace", "monitoring"))},
            opts=in_ns)
        tmp_volume, tmp_mount = pod_security.writable_dir("tmp", pod_security.TMP_PATH, TMP_SIZE)
        container = {
            "name": "optimizer",
            "image": args.get("image", versions.PLATFORM_IMAGE.reference),
            "args": pulumi.Output.from_input(args["prometheus_url"]).apply(lambda url: optimizer_args(url, dry_run)),
            "env": [{"name": "HOME", "value": pod_security.TMP_PATH}],
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
            "securityContext": pod_security.container_security_context(),
            "volumeMounts": [{"name": "policy", "mountPath": "/etc/gpu-optimizer", "readOnly": True}, tmp_mount],
        }
        self.cron_job = k8s.batch.v1.CronJob(
            f"{name}-cronjob",
            metadata=metadata("gpu-optimizer", ns_name, APP_LABELS),
            spec={
                "schedule": args.get("schedule", "*/30 * * * *"),
                # One evaluation at a time: a slow Prometheus must not stack up runs that act on stale data.
                "concurrencyPolicy": "Forbid",
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {"spec": {"backoffLimit": 0, "activeDeadlineSeconds": 600, "template": {
                    "metadata": {"labels": APP_LABELS},
                    "spec": {"serviceAccountName": "gpu-optimizer", "restartPolicy": "Never",
                             # The only platform pod with a token: it lists pods, ReplicaSets, HPAs and
                             # Deployments (and patches them when the action writes) through the API.
                             "automountServiceAccountToken": True,
                             "securityContext": pod_security.pod_security_context(),
                             "containers": [container],
                             "volumes": [{"name": "policy", "configMap": {"name": "gpu-optimizer-policy"}},
                                         tmp_volume]},
                }}},
            },
            opts=child_opts(self, opts, depends_on=[config, account]),
        )
        self.namespace = namespace.metadata.apply(lambda m: m["name"] if isinstance(m, dict) else m.name)
        self.register_outputs({"namespace": self.namespace})
