"""A team namespace's objects as plain bodies: namespace, quota, defaults, RBAC, network policies and the
ResourceClaimTemplates of DRA pools."""

from collections.abc import Sequence
from typing import Optional

from .. import catalog, labels
from ..accelerators import dra_objects
from ..config_model import TeamConfig
from ..kubernetes_base.common import metadata
from ..monitoring.monitoring_policies import namespace_peer, prometheus_peer
from ..pools import GpuPool
from ..security import namespace_security
from ..serving.gateway_objects import ENVOY_GATEWAY_NAMESPACE

POD_SECURITY_LEVELS = namespace_security.LEVELS
DEFAULT_POD_SECURITY = namespace_security.TEAM_DEFAULT.level
"""Enforced on team namespaces without RDMA pools that need more (`namespace_security.team_pod_security`): blocks
host access and privilege escalation paths, still runs common GPU images. ``restricted`` is audited and warned
about, so teams see what a stricter namespace would reject."""
DNS_NAMESPACE = "kube-system"
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
"""Excluded from the team egress policy's internet rule: RFC 1918 private ranges, where every cloud puts its VPC,
its pods and services, and RFC 6598 shared space (100.64.0.0/10), used for pod ranges (EKS custom networking) and
never an internet destination."""
EDIT_CLUSTER_ROLE = "edit"
"""Kubernetes' built-in aggregated role; Kueue's chart aggregates LocalQueue and Workload read access into it."""
DEFAULT_CONTAINER_REQUESTS = {"cpu": "250m", "memory": "512Mi"}
"""Requests a container without its own gets, so the namespace's CPU/memory quota can count it."""
DEFAULT_INGRESS_NAMESPACES = (ENVOY_GATEWAY_NAMESPACE,)
"""Envoy Gateway's namespace, where the Envoy pods of every Gateway of the platform's GatewayClass run (a team may
publish its own services through a Gateway of its own); on GKE the load balancer's proxies are outside the cluster."""


def pods_quota(team: TeamConfig) -> int:
    """Pod count cap: room for ten pods per GPU (or other accelerator device) on top of a hundred for CPU-side
    work."""
    return 100 + 10 * team.accelerator_quota


def namespace(team: TeamConfig, pod_security: namespace_security.PodSecurity = namespace_security.TEAM_DEFAULT
              ) -> dict:
    """The team namespace: team label (what Kueue's namespace selector matches), Pod Security labels (the level
    enforced, ``restricted`` audited and warned about) and the level's reason."""
    return namespace_security.namespace_body(team.name, pod_security, {labels.TEAM_LABEL: team.name})


def resource_quota(team: TeamConfig, pools: Sequence[GpuPool] = ()) -> dict:
    """The hard cap of the namespace: GPUs and the team's other accelerator ``quotas`` (extended resources only take
    ``requests.``), CPU, memory, pods.

    With DRA pools among ``pools``, the devices the namespace's ResourceClaims get of each of their DeviceClasses
    (``<class>.deviceclass.resource.k8s.io/devices``) are capped at ``gpuQuota`` too: DRA GPUs never appear as
    ``requests.nvidia.com/gpu``, and Kueue counts them under the same ``gpuQuota``.

    Kueue's nominal quotas are per flavor and borrowing may exceed them; this quota caps the team's total. With a
    ``storage_quota``, ``requests.storage`` caps what the namespace's PersistentVolumeClaims request in total (the
    team's shared-file-system and bucket claims included).
    """
    return {
        "metadata": metadata("team-quota", team.name, extra_labels={labels.TEAM_LABEL: team.name}),
        "spec": {"hard": {
            f"requests.{catalog.NVIDIA_GPU_RESOURCE}": str(team.gpu_quota),
            **{dra_objects.quota_resource(cls): str(team.gpu_quota) for cls in dra_objects.device_classes(pools)},
            **{f"requests.{resource}": str(count) for resource, count in team.quotas},
            "requests.cpu": str(team.cpu_quota),
            "requests.memory": f"{team.memory_quota_gib}Gi",
            "pods": str(pods_quota(team)),
            **({"requests.storage": team.storage_quota} if team.storage_quota is not None else {}),
        }},
    }


def claim_templates(team: TeamConfig, pools: Sequence[GpuPool]) -> list[dict]:
    """The ResourceClaimTemplates a team's workloads name to claim the GPUs of each DRA pool
    (`dra_objects.pool_claim_templates`: ``<pool>-gpu``, ``<pool>-node``), in pool order, with the team label.
    Empty without DRA pools."""
    bodies = []
    for pool in pools:
        if not pool.dra:
            continue
        for body in dra_objects.pool_claim_templates(pool, team.name):
            body["metadata"]["labels"][labels.TEAM_LABEL] = team.name
            bodies.append(body)
    return bodies


def limit_range(team: TeamConfig) -> dict:
    """Default container requests, so pods without requests are admitted under the CPU/memory quota."""
    return {
        "metadata": metadata("container-defaults", team.name, extra_labels={labels.TEAM_LABEL: team.name}),
        "spec": {"limits": [{"type": "Container", "defaultRequest": dict(DEFAULT_CONTAINER_REQUESTS)}]},
    }


def edit_role_binding(team: TeamConfig) -> dict:
    """The team's identity-provider group gets the built-in ``edit`` role in its namespace."""
    return {
        "metadata": metadata(f"{team.name}-edit", team.name, extra_labels={labels.TEAM_LABEL: team.name}),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": EDIT_CLUSTER_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": team.group}],
    }


def egress_rules() -> list[dict]:
    """Where a team's pods may connect: the namespace itself (NCCL and the rendezvous between a job's pods),
    cluster DNS, and addresses outside the private ranges (datasets, model hubs, package registries on the internet).

    What this blocks: every other namespace (Prometheus, Grafana, other teams, the platform's controllers), and
    private endpoints in the VPC: FSx/Filestore/NFS servers, databases, S3/Blob/GCS private endpoints, and the
    Kubernetes API server where its endpoint is private (EKS, private AKS/GKE/OKE clusters). Link-local addresses
    stay reachable (the cloud metadata and pod identity endpoints that workload identity needs, node-local DNS).
    A default, not a boundary: a team widens it with a policy of its own (policies add up), and the ingress
    policies of the other namespaces are what keep a team out of them.
    """
    dns = namespace_peer(DNS_NAMESPACE, {labels.KUBE_DNS_LABEL: labels.KUBE_DNS_VALUE})
    return [
        {"to": [{"podSelector": {}}]},
        {"to": [dns], "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": list(PRIVATE_RANGES)}}]},
    ]


def network_policies(team: TeamConfig, monitoring_namespace: Optional[str],
                     ingress_namespaces: Sequence[str]) -> list[dict]:
    """Ingress isolation: deny by default, then allow the namespace itself, Prometheus and the ingress proxies;
    egress restricted to the namespace, DNS and the internet (`egress_rules`).

    Namespaces are matched by ``kubernetes.io/metadata.name``, which the API server sets and nobody can forge.
    Replies to admitted connections pass both ways (policies are stateful), so Prometheus still scrapes the pods.
    """
    def policy(name: str, ingress: Optional[list[dict]], egress: Optional[list[dict]] = None) -> dict:
        spec: dict = {"podSelector": {}, "policyTypes": ["Egress" if egress is not None else "Ingress"]}
        if ingress is not None:
            spec["ingress"] = ingress
        if egress is not None:
            spec["egress"] = egress
        return {"metadata": metadata(name, team.name, extra_labels={labels.TEAM_LABEL: team.name}), "spec": spec}

    policies = [
        policy("default-deny-ingress", None),
        policy("allow-same-namespace", [{"from": [{"podSelector": {}}]}]),
        policy("restrict-egress", None, egress_rules()),
    ]
    if monitoring_namespace:
        # Prometheus' pods only: Grafana or anything else in that namespace has no business with a team's pods.
        policies.append(policy("allow-monitoring", [{"from": [prometheus_peer(monitoring_namespace)]}]))
    if ingress_namespaces:
        policies.append(policy("allow-ingress-controller", [{"from": [namespace_peer(n) for n in ingress_namespaces]}]))
    return policies
