"""Which software hands out a pool's NVIDIA GPUs: a device plugin, NVIDIA's DRA driver, or (wrongly) both.

A GPU advertised by a device plugin (``nvidia.com/gpu``) and published by the DRA driver (a ResourceSlice device)
can be given to two pods at once: the scheduler counts the two separately. What serves a pool follows from the
stack's Helm releases and the pool's labels:

- the DRA driver (chart ``dra-driver-nvidia-gpu``): its kubelet plugin runs where ``kubeletPlugin.nodeSelector``
  matches, unless ``resources.gpus.enabled`` is false (ComputeDomains only);
- the GPU Operator (chart ``gpu-operator``): its device plugin runs on every GPU node unless
  ``devicePlugin.enabled`` is false or the node is labelled ``nvidia.com/gpu.deploy.device-plugin=false``;
- NVIDIA's device plugin chart (``nvidia-device-plugin``): where its ``nodeSelector`` and required node affinity
  match;
- the cloud's own plugin: GKE's on a pool with NVIDIA ``guestAccelerators`` unless labelled
  ``gke-no-default-nvidia-gpu-device-plugin=true``, OKE's on a GPU shape unless labelled
  ``oci.oraclecloud.com/disable-gpu-device-plugin=true``.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from .. import labels
from .pool_view import GKE_NODE_POOL, OKE_NODE_POOL
from .props import Resource, get, items, string_map

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
DRA_DRIVER_CHART = "dra-driver-nvidia-gpu"
GPU_OPERATOR_CHART = "gpu-operator"
DEVICE_PLUGIN_CHART = "nvidia-device-plugin"


def _chart(release: Resource) -> str:
    """The chart's own name (the last path segment of an ``oci://`` reference)."""
    return str(get(release.props, "chart") or "").rstrip("/").rsplit("/", 1)[-1]


def _expression_matches(expression: Any, node_labels: Mapping[str, str]) -> bool:
    key, operator = str(get(expression, "key")), get(expression, "operator")
    values = [str(v) for v in items(get(expression, "values"))]
    if operator == "In":
        return node_labels.get(key) in values
    if operator == "NotIn":
        return node_labels.get(key) not in values
    if operator == "Exists":
        return key in node_labels
    if operator == "DoesNotExist":
        return key not in node_labels
    return True  # Gt/Lt on numeric labels: not a pool choice the guardrails can judge


def _affinity_matches(affinity: Any, node_labels: Mapping[str, str]) -> bool:
    terms = items(get(affinity, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                      "nodeSelectorTerms"))
    return not terms or any(all(_expression_matches(e, node_labels) for e in items(get(t, "matchExpressions")))
                            for t in terms)


def _selects(node_selector: Any, node_labels: Mapping[str, str]) -> bool:
    return all(node_labels.get(k) == v for k, v in string_map(node_selector).items())


def dra_drivers(pool_labels: Mapping[str, str], releases: Sequence[Resource]) -> list[str]:
    """The DRA driver releases whose kubelet plugin serves GPUs on nodes with these labels."""
    return [r.name for r in releases if _chart(r) == DRA_DRIVER_CHART
            and get(r.props, "values", "resources", "gpus", "enabled") is not False
            and _selects(get(r.props, "values", "kubeletPlugin", "nodeSelector"), pool_labels)]


def device_plugins(pool: Resource, pool_labels: Mapping[str, str], releases: Sequence[Resource]) -> list[str]:
    """What runs a device plugin on nodes with these labels: release names, or the cloud's plugin."""
    found = []
    for release in releases:
        values, chart = get(release.props, "values"), _chart(release)
        operator_plugin = (chart == GPU_OPERATOR_CHART and get(values, "devicePlugin", "enabled") is not False
                           and pool_labels.get(labels.DEVICE_PLUGIN_DEPLOY_LABEL) != "false")
        chart_plugin = (chart == DEVICE_PLUGIN_CHART and _selects(get(values, "nodeSelector"), pool_labels)
                        and _affinity_matches(get(values, "affinity"), pool_labels))
        if operator_plugin or chart_plugin:
            found.append(release.name)
    if pool.type == GKE_NODE_POOL and pool_labels.get(labels.GKE_NO_DEFAULT_DEVICE_PLUGIN_LABEL) != "true":
        found.append("GKE's device plugin")
    if pool.type == OKE_NODE_POOL and pool_labels.get(labels.OKE_DISABLE_GPU_DEVICE_PLUGIN_LABEL) != "true":
        found.append("OKE's device plugin")
    return found
