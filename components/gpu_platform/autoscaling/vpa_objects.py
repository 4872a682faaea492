"""Vertical Pod Autoscaler as plain bodies: the Fairwinds ``vpa`` chart's values and one VPA per workload.

The platform's VPAs size CPU and memory only (a VPA never touches ``nvidia.com/gpu``) and never evict: ``Off``
keeps recommendations in the VPA's status, ``Initial`` applies them when a pod is created (a new rank of a
training Job, a new inference replica). So the chart runs the recommender, the admission controller only for
``Initial`` (it is what writes the requests into new pods), and no updater (it only evicts, which ``Off`` and
``Initial`` never ask for). The recommender reads ``metrics.k8s.io``; metrics-server comes with the chart where
the cloud has none.
"""

from dataclasses import dataclass
from typing import Any

from ..kubernetes_base.common import metadata
from ..versions import VPA_API_VERSION

MODES = ("Off", "Initial")
RESOURCES = ("cpu", "memory")
ALL_CONTAINERS = "*"
"""``containerName`` wildcard: the policy applies to every container of the target's pods."""
NAMESPACE = "vpa"


@dataclass(frozen=True)
class VpaTarget:
    """A workload controller a VPA sizes (VPA resolves Deployments, Jobs and CronJobs to their pods)."""

    namespace: str
    kind: str
    name: str
    api_version: str

    def ref(self) -> dict[str, str]:
        """``targetRef`` (a CrossVersionObjectReference)."""
        return {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}


def check_mode(mode: str, resources: tuple[str, ...]) -> None:
    """The only modes and resources the platform's VPAs use."""
    if mode not in MODES:
        raise ValueError(f"VPA mode must be one of {', '.join(MODES)}, got '{mode}'")
    if not resources or any(r not in RESOURCES for r in resources):
        raise ValueError(f"VPA resources must be a non-empty subset of {', '.join(RESOURCES)}, got {list(resources)}")


def vertical_pod_autoscaler(target: VpaTarget, mode: str, resources: tuple[str, ...]) -> dict[str, Any]:
    """The VPA of one workload: ``mode`` on ``resources``; limits move with requests so a Guaranteed pod (training
    ranks ask requests == limits) stays Guaranteed."""
    check_mode(mode, resources)
    return {
        "apiVersion": VPA_API_VERSION,
        "kind": "VerticalPodAutoscaler",
        "metadata": metadata(target.name, target.namespace),
        "spec": {
            "targetRef": target.ref(),
            "updatePolicy": {"updateMode": mode},
            "resourcePolicy": {"containerPolicies": [{
                "containerName": ALL_CONTAINERS,
                "controlledResources": list(resources),
                "controlledValues": "RequestsAndLimits",
            }]},
        },
    }


def chart_values(mode: str, metrics_server: bool) -> dict[str, Any]:
    """Values of the ``vpa`` chart for ``Off``/``Initial`` VPAs (keys: tests/data/chart_keys/vpa-5.0.0.keys)."""
    check_mode(mode, RESOURCES)
    return {
        "recommender": {"enabled": True},
        # Off and Initial never evict, so the updater would only watch.
        "updater": {"enabled": False},
        # Initial writes the recommendation into a pod when it is created: the admission webhook does that.
        "admissionController": {"enabled": mode == "Initial"},
        "metrics-server": {"enabled": metrics_server},
    }
