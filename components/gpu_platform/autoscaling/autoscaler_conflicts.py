"""The rule that a VerticalPodAutoscaler and a horizontal autoscaler never act on the same resource of one target.

An HPA that scales on CPU (or memory) utilisation divides usage by the pods' requests; a VPA that rewrites those
requests moves the HPA's signal under it and the two fight (VPA README, "Known limitations"). VPAs only act on CPU
and memory, so a horizontal autoscaler on other metrics (queue depth, GPU utilisation) never conflicts, and neither
does a VPA in ``Off`` mode, which only recommends.

Horizontal autoscalers are ``autoscaling/v2`` HorizontalPodAutoscalers (``Resource`` / ``ContainerResource``
metrics) and KEDA ScaledObjects (``cpu`` / ``memory`` triggers, which KEDA turns into the same HPA metrics).
Everything here reads plain manifest bodies: it checks what the platform builds before anything is registered.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

VPA_DEFAULT_RESOURCES = ("cpu", "memory")
"""``controlledResources`` when a container policy leaves it out (VPA CRD: "the default of [ResourceCPU,
ResourceMemory] will be used")."""
VPA_DEFAULT_UPDATE_MODE = "Recreate"
"""``updatePolicy.updateMode`` when left out (VPA CRD: "The default is 'Recreate'")."""
KEDA_RESOURCE_TRIGGERS = ("cpu", "memory")
"""KEDA trigger types that are resource metrics of the target's pods."""


class AutoscalerConflict(ValueError):
    """A VPA and a horizontal autoscaler act on the same resource of the same workload."""


def _target_key(namespace: str, ref: Mapping[str, Any], default_kind: str = "") -> tuple[str, str, str]:
    return namespace, str(ref.get("kind") or default_kind), str(ref.get("name", ""))


def _describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{obj.get('kind')} {meta.get('namespace', 'default')}/{meta.get('name')}"


def horizontal_resources(obj: Mapping[str, Any]) -> tuple[tuple[str, str, str], set[str]]:
    """(namespace, kind, name) of what a horizontal autoscaler scales, and the pod resources it scales on."""
    namespace = obj.get("metadata", {}).get("namespace", "default")
    spec = obj.get("spec", {})
    if obj.get("kind") == "ScaledObject":
        # KEDA's scaleTargetRef kind defaults to Deployment.
        target = _target_key(namespace, spec.get("scaleTargetRef", {}), "Deployment")
        resources = {t["type"] for t in spec.get("triggers", []) if t.get("type") in KEDA_RESOURCE_TRIGGERS}
        return target, resources
    if obj.get("kind") == "HorizontalPodAutoscaler":
        target = _target_key(namespace, spec.get("scaleTargetRef", {}))
        resources = set()
        for metric in spec.get("metrics", []):
            if metric.get("type") == "Resource":
                resources.add(metric.get("resource", {}).get("name", ""))
            elif metric.get("type") == "ContainerResource":
                resources.add(metric.get("containerResource", {}).get("name", ""))
        return target, resources
    raise ValueError(f"{_describe(obj)} is not a HorizontalPodAutoscaler or a KEDA ScaledObject")


def vpa_resources(obj: Mapping[str, Any]) -> tuple[tuple[str, str, str], set[str]]:
    """(namespace, kind, name) of a VPA's target and the resources it changes (none in ``Off`` mode)."""
    if obj.get("kind") != "VerticalPodAutoscaler":
        raise ValueError(f"{_describe(obj)} is not a VerticalPodAutoscaler")
    namespace = obj.get("metadata", {}).get("namespace", "default")
    spec = obj.get("spec", {})
    target = _target_key(namespace, spec.get("targetRef", {}))
    if spec.get("updatePolicy", {}).get("updateMode", VPA_DEFAULT_UPDATE_MODE) == "Off":
        return target, set()
    policies = spec.get("resourcePolicy", {}).get("containerPolicies") or [{}]
    acted: set[str] = set()
    for policy in policies:
        if policy.get("mode") != "Off":
            acted.update(policy.get("controlledResources") or VPA_DEFAULT_RESOURCES)
    return target, acted


def autoscaler_conflicts(hpas: Iterable[Mapping[str, Any]], vpas: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per (VPA, horizontal autoscaler, resource) that act on the same target; empty when none do."""
    horizontal = [(obj, *horizontal_resources(obj)) for obj in hpas]
    problems = []
    for vpa in vpas:
        target, acted = vpa_resources(vpa)
        for hpa, hpa_target, scaled_on in horizontal:
            if hpa_target != target:
                continue
            for resource in sorted(acted & scaled_on):
                namespace, kind, name = target
                problems.append(
                    f"{_describe(vpa)} and {_describe(hpa)} both act on {resource} of {kind} {namespace}/{name}: "
                    f"the VPA rewrites the requests the autoscaler's {resource} utilisation is measured against; "
                    f"drop {resource} from the VPA's controlled resources, set its mode to Off, or scale the "
                    f"workload on other metrics")
    return problems


def check_autoscaler_conflicts(hpas: Sequence[Mapping[str, Any]], vpas: Sequence[Mapping[str, Any]]) -> None:
    """Raise `AutoscalerConflict` (one line) for the first VPA/HPA pair acting on one resource of one target."""
    problems = autoscaler_conflicts(hpas, vpas)
    if problems:
        raise AutoscalerConflict(problems[0])
