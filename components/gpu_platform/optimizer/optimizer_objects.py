"""Pure builders for the optimizer's Kubernetes objects: policy document, least-privilege RBAC, network egress."""

from collections.abc import Sequence

import yaml

from ..pools import GpuPool
from .policy import Policy, PoolOption, policy_to_mapping
from .signals import VENDORS_WITH_SIGNAL

PROMETHEUS_PORT = 9090
API_SERVER_PORTS = (443, 6443)


def policy_for(pools: Sequence[GpuPool], action: str, utilization_threshold: float, dry_run: bool) -> Policy:
    """The policy the CronJob runs with: the pools of vendors with an idleness signal become the `recommend`
    targets, and their vendors the signals read (NVIDIA's alone without pools: GPU nodes that join later)."""
    pools = [p for p in pools if p.vendor in VENDORS_WITH_SIGNAL]
    options = tuple(PoolOption(p.name, p.gpu_memory_gib, p.sharing.shared, p.vendor) for p in pools)
    vendors = tuple(v for v in VENDORS_WITH_SIGNAL if any(p.vendor == v for p in pools)) or Policy.vendors
    return Policy(utilization_threshold=utilization_threshold, action=action, dry_run=dry_run, pools=options,
                  vendors=vendors)


def policy_yaml(policy: Policy) -> str:
    return yaml.safe_dump(policy_to_mapping(policy), sort_keys=True)


def rbac_rules(action: str, dry_run: bool) -> list[dict]:
    """Only the verbs the chosen action needs: list for reading; patch only when the action writes for real."""
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["list"]},
        {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["list"]},
    ]
    writes = not dry_run and action != "report"
    deployment_verbs = ["list", "patch"] if writes else ["list"]
    rules.append({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": deployment_verbs})
    if writes and action in ("annotate", "recommend"):
        rules.append({"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["patch"]})
    return rules


def egress_rules(prometheus_namespace: str) -> list[dict]:
    """DNS, Prometheus in its namespace, and the API server (whose address no selector can name)."""
    return [
        {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
         "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": prometheus_namespace}}}],
         "ports": [{"protocol": "TCP", "port": PROMETHEUS_PORT}]},
        {"ports": [{"protocol": "TCP", "port": port} for port in API_SERVER_PORTS]},
    ]


def optimizer_args(prometheus_url: str, dry_run: bool) -> list[str]:
    args = ["optimize", "--prometheus", prometheus_url, "--policy", "/etc/gpu-optimizer/policy.yaml",
            "--output", "json"]
    return args if dry_run else [*args, "--apply"]
