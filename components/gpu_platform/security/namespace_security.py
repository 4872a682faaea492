"""The Pod Security Admission level of every namespace the platform creates, and why.

Each namespace enforces the strictest Pod Security Standard its pods comply with; ``audit`` and ``warn`` are
``restricted`` everywhere, so whatever a namespace allows beyond ``restricted`` shows in the audit log and as a
warning to whoever applies it. The reasons below are the table (`NAMESPACE_LEVELS`, `FABRIC_NEEDS`); the
functions only pick from it.

No ``enforce-version`` label: Pod Security Admission then applies the ``latest`` standard of the cluster's own
Kubernetes minor. The platform supports several minors; a pinned version would have to follow each cluster's and
would go stale on upgrade.

Never labelled here: ``kube-system`` (the EFA device plugin, Karpenter and cluster-autoscaler run there; it belongs
to the cloud and its add-ons) and namespaces the cloud owns (``gke-managed-system``).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from .. import catalog, labels
from ..kubernetes_base.common import metadata
from ..pools import GpuPool

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
"""Pod Security Standards, most to least permissive."""
AUDIT_AND_WARN_LEVEL = RESTRICTED


@dataclass(frozen=True)
class PodSecurity:
    """A namespace's enforced Pod Security level and the reason for it."""

    level: str
    """``privileged``, ``baseline`` or ``restricted``."""
    reason: str
    """What the namespace's pods need that a stricter level forbids (or why they meet this one)."""


# The platform's namespaces, by role. Every ``restricted`` entry was checked against the chart's default pod and
# container securityContext at the pinned version: runAsNonRoot, allowPrivilegeEscalation false, capabilities
# drop ALL, seccompProfile RuntimeDefault, no host namespaces, ports or paths.
NAMESPACE_LEVELS: dict[str, PodSecurity] = {
    "gpu-software": PodSecurity(PRIVILEGED, (
        "GPU Operator operands (driver, container toolkit, device plugin, DCGM, MIG manager, validator), the "
        "standalone device plugin, GPU feature discovery, node-feature-discovery workers, dcgm-exporter and HAMi "
        "run privileged or with hostPath volumes (/run/nvidia, /var/lib/kubelet/device-plugins, "
        "/var/lib/kubelet/pod-resources); NVIDIA documents enforce=privileged for the operator namespace")),
    "network-operator": PodSecurity(PRIVILEGED, (
        "the Network Operator's DOCA-OFED driver container, RDMA shared device plugin and secondary-network "
        "CNI installers run privileged, with hostNetwork and hostPath volumes")),
    "monitoring": PodSecurity(PRIVILEGED, (
        "prometheus-node-exporter (kube-prometheus-stack 88.5.3 subchart 4.56.1) uses hostNetwork, hostPID and "
        "hostPath mounts of /, /proc and /sys; baseline forbids all three")),
    "keda": PodSecurity(RESTRICTED, (
        "KEDA 2.20.2's operator, metrics API server and admission webhooks meet restricted with the chart's "
        "defaults (kedacore/charts@v2.20.2 keda/values.yaml securityContext, podSecurityContext)")),
    "kueue": PodSecurity(RESTRICTED, (
        "Kueue 0.19.2's controller manager meets restricted with the chart's defaults (charts/kueue/values.yaml "
        "controllerManager.manager.podSecurityContext and containerSecurityContext)")),
    "vpa": PodSecurity(RESTRICTED, (
        "the vpa 5.0.0 chart's recommender, admission controller and certgen Job, and its metrics-server 3.13.1 "
        "subchart, meet restricted with the charts' defaults (securityContext, podSecurityContext)")),
    "optimizer": PodSecurity(RESTRICTED, "the optimizer CronJob's pod is the platform's own and meets restricted"),
    "health": PodSecurity(PRIVILEGED, (
        "node-problem-detector v1.36.0 reads the host's /dev/kmsg (a hostPath character device) privileged, as its "
        "upstream manifest runs it, and the DCGM diagnostic of the active health check runs as root with SYS_ADMIN; "
        "baseline forbids hostPath volumes, privileged containers and SYS_ADMIN")),
    "inference": PodSecurity(RESTRICTED, "the inference Deployment's pod is the platform's own and meets restricted"),
    "llm": PodSecurity(RESTRICTED, (
        # The text is the namespace's annotation (plans compare byte for byte): it keeps the module's former path.
        "the LLM service's model server (vLLM as UID 10001 with a read-only root filesystem, "
        "kube/llm_objects.py) and endpoint picker (the Inference Extension's distroless EPP image, as UID 10001) "
        "meet restricted")),
    "gateway": PodSecurity(RESTRICTED, (
        "the Gateway's namespace runs only cert-manager v1.21.1's ACME HTTP-01 solver pods, which meet restricted "
        "(pkg/issuer/acme/http/pod.go: runAsNonRoot, RuntimeDefault seccomp, drop ALL, no privilege escalation)")),
    "envoy-gateway": PodSecurity(RESTRICTED, (
        "Envoy Gateway v1.9.0's controller and certgen Job (charts/gateway-helm values securityContext) and the Envoy "
        "pods it creates (internal/infrastructure/kubernetes/resource DefaultSecurityContext: non-root 65532, drop "
        "ALL, RuntimeDefault seccomp), with Envoy AI Gateway v1.1.0's external processor beside Envoy "
        "(internal/controller/extproc_builder.go, the same settings), meet restricted")),
    "envoy-ai-gateway": PodSecurity(RESTRICTED, (
        "Envoy AI Gateway v1.1.0's controller meets restricted with the chart's defaults "
        "(controller.podSecurityContext and securityContext: non-root 65532, drop ALL, RuntimeDefault seccomp)")),
}

TEAM_DEFAULT = PodSecurity(BASELINE, (
    "team workloads are arbitrary images: baseline blocks host namespaces, host paths, privileged containers and "
    "added capabilities beyond the default set, and still runs images that expect root; the platform's training "
    "job itself meets restricted"))
"""Team namespaces unless the team's ``podSecurity`` says otherwise."""

FABRIC_NEEDS: dict[str, str] = {
    # EFA is absent: AWS's EKS EFA pod examples request vpc.amazonaws.com/efa and add no capability or host path.
    catalog.INFINIBAND: (
        "InfiniBand verbs pin memory: NVIDIA's RDMA pod examples add the IPC_LOCK capability "
        "(Mellanox/network-operator@v26.1.2 example/rdma-test-pod1.yml), which baseline's capability list excludes"),
    catalog.ROCE: (
        "RoCE verbs pin memory: NVIDIA's RDMA pod examples add the IPC_LOCK capability "
        "(Mellanox/network-operator@v26.1.2 example/rdma-test-pod1.yml), which baseline's capability list excludes"),
    catalog.GPUDIRECT_TCPX: (
        "GKE's GPUDirect-TCPX pods run the tcpx daemon sidecar with hostPath volumes (the NCCL plugin under "
        "/home/kubernetes/bin, /sys, /proc/sys); baseline forbids hostPath volumes"),
    catalog.GPUDIRECT_TCPXO: (
        "GKE's GPUDirect-TCPXO pods run the tcpxo daemon sidecar with NET_ADMIN and hostPath volumes "
        "(/home/kubernetes/bin/nvidia, /sys, /proc/sys); baseline forbids both"),
    catalog.GPUDIRECT_RDMA: (
        "GKE's GPUDirect-RDMA pods mount the gIB NCCL plugin and the driver from the host "
        "(/home/kubernetes/bin/gib, /home/kubernetes/bin/nvidia); baseline forbids hostPath volumes"),
}
"""RDMA fabrics whose pods, as their vendors' examples write them, need more than baseline allows. Pod Security has
no level between baseline and privileged, and a privileged namespace lets any member run a privileged pod (root on
a GPU node shared with other teams), so the platform never grants it on its own: a team whose jobs need it asks
for it (``teams[].podSecurity: privileged``), and this table gives the reason its namespace records. Non-root pods
rarely need IPC_LOCK at all: container runtimes start containers with an unlimited memlock limit (and Kubernetes
grants added capabilities only to root)."""


def namespace_pod_security(role: str) -> PodSecurity:
    """The level of the platform namespace with this role (a key of `NAMESPACE_LEVELS`)."""
    try:
        return NAMESPACE_LEVELS[role]
    except KeyError:
        raise ValueError(f"no Pod Security decision for namespace role '{role}'; one of "
                         f"{', '.join(sorted(NAMESPACE_LEVELS))}") from None


def team_pod_security(pools: Sequence[GpuPool], level: str = BASELINE) -> PodSecurity:
    """A team namespace's enforced level (``teams[].podSecurity``, default baseline) with its reason; a privileged
    team records what the cluster's RDMA fabrics need (any team may run on any pool: Kueue's flavors are shared)."""
    if level not in LEVELS:
        raise ValueError(f"Pod Security level must be one of {', '.join(LEVELS)}, got '{level}'")
    if level == BASELINE:
        return TEAM_DEFAULT
    if level == RESTRICTED:
        return PodSecurity(RESTRICTED, "the team asked for restricted (podSecurity): its pods run as non-root with "
                                       "no capabilities, like the platform's training job")
    needs = sorted({pool.rdma_fabric for pool in pools if pool.rdma_fabric in FABRIC_NEEDS})
    reason = "the team asked for privileged (podSecurity)"
    if needs:
        reason += ": " + "; ".join(f"{fabric}: {FABRIC_NEEDS[fabric]}" for fabric in needs)
    return PodSecurity(PRIVILEGED, reason)


def pod_security_labels(level: str) -> dict[str, str]:
    """Pod Security Admission labels: ``level`` enforced, ``restricted`` audited and warned about."""
    if level not in LEVELS:
        raise ValueError(f"Pod Security level must be one of {', '.join(LEVELS)}, got '{level}'")
    return {labels.POD_SECURITY_ENFORCE_LABEL: level, labels.POD_SECURITY_AUDIT_LABEL: AUDIT_AND_WARN_LEVEL,
            labels.POD_SECURITY_WARN_LABEL: AUDIT_AND_WARN_LEVEL}


def namespace_body(name: str, security: PodSecurity, extra_labels: Optional[dict[str, str]] = None) -> dict:
    """A Namespace (wire form, ``metadata`` only) with its Pod Security labels and the reason as an annotation."""
    return {"metadata": metadata(name, extra_labels={**(extra_labels or {}), **pod_security_labels(security.level)},
                                 annotations={labels.POD_SECURITY_REASON_ANNOTATION: security.reason})}
