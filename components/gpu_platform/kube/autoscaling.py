"""`WorkloadAutoscaling`: the Vertical Pod Autoscaler (pinned chart) and one VPA per training workload.

Cloud-agnostic: node autoscaling lives with each cloud (``clouds/aws/karpenter.py``, ``clouds/aws/cluster_
autoscaler.py``, the AKS/GKE autoscaler profiles, the OKE add-on); horizontal autoscaling with the inference
service. What joins them here is the rule that a VPA and a horizontal autoscaler never act on the same resource
of one workload: the component refuses to build VPAs that would (`autoscaler_conflicts.check_autoscaler_conflicts`),
before it registers anything.
"""

from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from ..versions import VPA
from . import vpa_objects
from .autoscaler_conflicts import check_autoscaler_conflicts
from .common import child_opts, helm_release
from .custom_object import KubernetesObject


class VpaTargetSpec(TypedDict, total=False):
    """A workload controller to size."""

    namespace: str
    """Namespace of the workload."""
    kind: str
    """``Deployment``, ``StatefulSet``, ``Job``, ``CronJob``..."""
    name: str
    """Name of the workload."""
    api_version: str
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


class WorkloadAutoscaling(pulumi.ComponentResource):
    """The VPA recommender (and, for ``Initial``, its admission controller) from the pinned ``vpa`` chart, with a
    VerticalPodAutoscaler on CPU/memory for each target; never one that acts on what an HPA scales on."""

    release: k8s.helm.v3.Release
    """The ``vpa`` Helm release (it installs the ``autoscaling.k8s.io`` CRDs)."""

    def __init__(self, name: str, args: WorkloadAutoscalingArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("gpuplatform:index:WorkloadAutoscaling", name, {}, opts)
        mode = args.get("vpa_mode", "Off")
        resources = tuple(args.get("vpa_resources") or vpa_objects.RESOURCES)
        targets = [vpa_objects.VpaTarget(t["namespace"], t["kind"], t["name"], t["api_version"])
                   for t in args.get("vpa_targets", [])]
        bodies = [vpa_objects.vertical_pod_autoscaler(t, mode, resources) for t in targets]
        # Before anything is registered: a conflicting set builds nothing.
        check_autoscaler_conflicts(list(args.get("horizontal_autoscalers") or []), bodies)

        self.release = helm_release(
            f"{name}-vpa", VPA, "vpa", args.get("namespace", vpa_objects.NAMESPACE),
            vpa_objects.chart_values(mode, bool(args.get("metrics_server", False))), child_opts(self, opts))
        # The chart's crds/ install the VerticalPodAutoscaler kind: every VPA waits for the release.
        # The VerticalPodAutoscalers, in target order (KubernetesObjects have no cross-language schema form:
        # annotated here, not at class level, so they stay a Python-only attribute).
        self.vpas: list[KubernetesObject] = [
            KubernetesObject(f"{name}-{t.namespace}-{t.kind.lower()}-{t.name}", body,
                             child_opts(self, opts, depends_on=[self.release]))
            for t, body in zip(targets, bodies, strict=True)
        ]
        self.register_outputs({"vpas": [f"{t.namespace}/{t.name}" for t in targets], "mode": mode})
