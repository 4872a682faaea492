"""`WorkloadAutoscaling`: the Vertical Pod Autoscaler (pinned chart) and one VPA per training workload.

Cloud-agnostic: node autoscaling lives with each cloud (``clouds/aws/karpenter.py``, ``clouds/aws/cluster_
autoscaler.py``, the AKS/GKE autoscaler profiles, the OKE add-on); horizontal autoscaling with the inference
service. What joins them here is the rule that a VPA and a horizontal autoscaler never act on the same resource
of one workload: the component refuses to build VPAs that would (`autoscaler_conflicts.autoscaler_conflicts`),
before it registers anything.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import config_model
from ..component_args import DNS_LABEL, NON_EMPTY, Args, KeywordArgs, choice, matching
from ..kubernetes_base.common import DNS_SUBDOMAIN, child_opts, helm_release
from ..kubernetes_base.custom_object import KubernetesObject
from ..security import namespace_security
from ..versions import VPA
from . import vpa_objects
from .autoscaler_conflicts import autoscaler_conflicts, horizontal_resources


class VpaTargetSpec(TypedDict, total=False):
    """A workload controller to size."""

    namespace: Required[str]
    """Namespace of the workload."""
    kind: Required[str]
    """``Deployment``, ``StatefulSet``, ``Job``, ``CronJob``..."""
    name: Required[str]
    """Name of the workload."""
    api_version: Required[str]
    """Its API version (``apps/v1``, ``batch/v1``)."""


class WorkloadAutoscalingArgs(TypedDict, total=False):
    """Arguments of `WorkloadAutoscaling`."""

    vpa_targets: list[VpaTargetSpec]
    """Workloads that get a VerticalPodAutoscaler (the platform's: the reference training Job and CronJob)."""
    vpa_mode: str
    """``Off`` (recommendations only, default) or ``Initial`` (applied when a pod is created; never evicts)."""
    vpa_resources: list[str]
    """Resources the VPAs control: a subset of ``cpu``, ``memory``. Default both."""
    horizontal_autoscalers: list[dict[str, Any]]
    """Bodies of the horizontal autoscalers in the cluster (HPAs, KEDA ScaledObjects) the VPAs must not fight:
    a VPA acting on a resource an autoscaler of the same workload scales on is rejected."""
    metrics_server: bool
    """Install metrics-server with the VPA (its recommender reads ``metrics.k8s.io``). Default false."""
    namespace: str
    """Namespace of the VPA components. Default ``vpa``."""


RULES = {
    "vpa_targets[].namespace": DNS_LABEL,
    "vpa_targets[].kind": matching(r"[A-Z][A-Za-z0-9]*", "a Kubernetes kind such as Deployment"),
    "vpa_targets[].name": DNS_SUBDOMAIN,
    "vpa_targets[].api_version": matching(r"([a-z0-9.-]+/)?v\d+((alpha|beta)\d+)?", "an API version such as apps/v1"),
    "vpa_mode": choice(*config_model.VPA_MODES),
    "vpa_resources": NON_EMPTY,
    "vpa_resources[]": choice(*config_model.VPA_RESOURCES),
    "namespace": DNS_LABEL,
}


def checked_args(name: str, args: WorkloadAutoscalingArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised; a VPA
    that would act on what a horizontal autoscaler of the same workload scales on is refused here too."""
    checker = Args("WorkloadAutoscaling", name)
    checked = checker.check(args, WorkloadAutoscalingArgs, RULES)
    targets = checked.get("vpa_targets", [])
    # One VPA per workload (a second would fight the first, and both would share one resource name).
    checker.unique([f"{t['namespace']}/{t['kind']}/{t['name']}" for t in targets], "vpa_targets", "workload")
    checker.unique(checked.get("vpa_resources", []), "vpa_resources", "resource")
    hpas = checked.get("horizontal_autoscalers", [])
    for i, body in enumerate(hpas):
        try:
            horizontal_resources(body)
        except (ValueError, KeyError, TypeError, AttributeError):
            checker.fail(f"horizontal_autoscalers[{i}]", f"kind {body.get('kind')!r}: not an autoscaling/v2 "
                                                         "HorizontalPodAutoscaler or a KEDA ScaledObject body")
    conflicts = autoscaler_conflicts(hpas, vpa_bodies(checked))
    if conflicts:
        checker.fail("horizontal_autoscalers", conflicts[0])
    return checked


def vpa_targets(args: dict) -> list[vpa_objects.VpaTarget]:
    return [vpa_objects.VpaTarget(t["namespace"], t["kind"], t["name"], t["api_version"])
            for t in args.get("vpa_targets", [])]


def vpa_bodies(args: dict) -> list[dict[str, Any]]:
    """The VerticalPodAutoscalers of checked ``args``, in target order."""
    mode, resources = args.get("vpa_mode", "Off"), tuple(args.get("vpa_resources") or vpa_objects.RESOURCES)
    return [vpa_objects.vertical_pod_autoscaler(t, mode, resources) for t in vpa_targets(args)]


class WorkloadAutoscaling(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The VPA recommender (and, for ``Initial``, its admission controller) from the pinned ``vpa`` chart, with a
    VerticalPodAutoscaler on CPU/memory for each target; never one that acts on what an HPA scales on."""

    release: k8s.helm.v3.Release
    """The ``vpa`` Helm release (it installs the ``autoscaling.k8s.io`` CRDs)."""

    def __init__(self, name: str, args: WorkloadAutoscalingArgs, opts: Optional[pulumi.ResourceOptions] = None):
        # Before anything is registered: bad args, or a conflicting set, build nothing.
        args = checked_args(name, args)
        super().__init__("gpuplatform:index:WorkloadAutoscaling", name, {}, opts)
        mode = args.get("vpa_mode", "Off")
        targets, bodies = vpa_targets(args), vpa_bodies(args)

        namespace = args.get("namespace", vpa_objects.NAMESPACE)
        # The namespace is ours, not Helm's (create_namespace would leave it unlabelled): Pod Security restricted.
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", **namespace_security.namespace_body(
                namespace, namespace_security.namespace_pod_security("vpa")), opts=child_opts(self, opts))
        self.release = helm_release(
            f"{name}-vpa", VPA, "vpa", namespace,
            vpa_objects.chart_values(mode, bool(args.get("metrics_server", False))),
            child_opts(self, opts, depends_on=[self.namespace]), create_namespace=False)
        # The chart's crds/ install the VerticalPodAutoscaler kind: every VPA waits for the release.
        # The VerticalPodAutoscalers, in target order (KubernetesObjects have no cross-language schema form:
        # annotated here, not at class level, so they stay a Python-only attribute).
        self.vpas: list[KubernetesObject] = [
            KubernetesObject(f"{name}-{t.namespace}-{t.kind.lower()}-{t.name}", body,
                             child_opts(self, opts, depends_on=[self.release]))
            for t, body in zip(targets, bodies, strict=True)
        ]
        self.register_outputs({"vpas": [f"{t.namespace}/{t.name}" for t in targets], "mode": mode})
