"""What a node pool resource of any cloud says about its nodes: labels, taints, machine types, accelerator vendor.

Each cloud spells a pool differently (property names as the provider and ``plan.json`` record them):

- ``aws:eks/nodeGroup:NodeGroup``: ``labels``, ``taints`` [{key, value, effect: NO_SCHEDULE}], ``instanceTypes``,
  ``amiType``;
- ``gcp:container/nodePool:NodePool``: ``nodeConfig.labels``, ``nodeConfig.taints`` (effect NO_SCHEDULE),
  ``nodeConfig.machineType``, ``nodeConfig.guestAccelerators``;
- ``azure-native:containerservice:AgentPool``: ``nodeLabels``, ``nodeTaints`` ["key=value:NoSchedule"], ``vmSize``;
- ``oci:ContainerEngine/nodePool:NodePool``: ``initialNodeLabels`` [{key, value}], ``nodeShape``; OKE has no taint
  field, so the taints are the kubelet's ``--register-with-taints`` in the cloud-init of ``nodeMetadata.user_data``
  (base64);
- ``kubernetes:karpenter.sh/v1:NodePool``: ``spec.template.metadata.labels``, ``spec.template.spec.taints``
  (effect NoSchedule), instance types from ``spec.template.spec.requirements``;
- ``kubernetes:core/v1:NodePatch`` (nodes of an existing cluster): ``metadata.labels``, ``spec.taints``.

Props are read through `props` (plain JSON from ``plan.json``, pulumi-policy's proxies under the policy engine).
"""

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from .. import catalog, labels
from ..labels import Taint
from .props import get, items, string_map

EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"
OKE_NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
KARPENTER_NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_PATCH = "kubernetes:core/v1:NodePatch"
POOL_TYPES = (EKS_NODE_GROUP, GKE_NODE_POOL, AKS_AGENT_POOL, OKE_NODE_POOL, KARPENTER_NODE_POOL, NODE_PATCH)

_CLOUD_OF = {EKS_NODE_GROUP: "aws", GKE_NODE_POOL: "gcp", AKS_AGENT_POOL: "azure", OKE_NODE_POOL: "oci",
             KARPENTER_NODE_POOL: "aws", NODE_PATCH: "existing"}
ACCELERATOR_TAINT_KEYS = tuple(sorted({vendor.taint.key for vendor in catalog.VENDORS.values()}))
"""The taint keys of accelerator pools (``nvidia.com/gpu``, ``amd.com/gpu``, ``aws.amazon.com/neuron``,
``google.com/tpu``): each vendor's resource name, which its device plugin and charts tolerate."""
_EFFECTS = {enum: effect for effect, enum in labels.EFFECT_TO_API_ENUM.items()}
"""The cloud API enum spelling of a taint effect (EKS, GKE: ``NO_SCHEDULE``) to Kubernetes' (``NoSchedule``)."""
_REGISTER_WITH_TAINTS = re.compile(r"--register-with-taints[= ]([^\s'\"]+)")
_INSTANCE_TYPE_KEYS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")


@dataclass(frozen=True)
class PoolView:
    """One node pool resource as the guardrails see it."""

    cloud: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    machine_types: tuple[str, ...]
    vendor: Optional[str]
    """``catalog.VENDORS`` key of its accelerators; None for a pool of plain CPU nodes."""

    @property
    def accelerated(self) -> bool:
        return self.vendor is not None


def _taint(key: Any, value: Any, effect: Any) -> Taint:
    effect = str(effect or "")
    return Taint(str(key or ""), str(value or ""), _EFFECTS.get(effect, effect))


def _object_taints(values: Any) -> tuple[Taint, ...]:
    return tuple(_taint(t.get("key"), t.get("value"), t.get("effect")) for t in items(values)
                 if isinstance(t, Mapping))


def parse_taint(text: str) -> Taint:
    """``key=value:Effect`` or ``key:Effect`` (AKS ``nodeTaints``, kubelet ``--register-with-taints``)."""
    key_value, _, effect = text.rpartition(":")
    key, _, value = key_value.partition("=")
    return _taint(key, value, effect)


def _cloud_init_taints(user_data: Any) -> tuple[Taint, ...]:
    if not isinstance(user_data, str):
        return ()
    try:
        text = base64.b64decode(user_data, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        text = user_data  # a plain cloud-init
    return tuple(parse_taint(t) for match in _REGISTER_WITH_TAINTS.findall(text) for t in match.split(",") if t)


def _vendor_of_shapes(cloud: str, machine_types: Sequence[str]) -> Optional[str]:
    for name in machine_types:
        shape = catalog.SHAPES.get((cloud, name))
        if shape is not None and shape.gpu_model:
            return catalog.vendor_of(shape.gpu_model).key
    return None


def _vendor_of_accelerator_label(pool_labels: Mapping[str, str]) -> Optional[str]:
    model = pool_labels.get(labels.ACCELERATOR_LABEL)
    return catalog.vendor_of(model).key if model else None


def pool_view(resource_type: str, props: Any) -> Optional[PoolView]:
    """The `PoolView` of a node pool resource, None for any other resource."""
    cloud = _CLOUD_OF.get(resource_type)
    if cloud is None:
        return None
    vendor: Optional[str] = None
    if resource_type == EKS_NODE_GROUP:
        pool_labels, taints = string_map(get(props, "labels")), _object_taints(get(props, "taints"))
        machine_types = tuple(str(t) for t in items(get(props, "instanceTypes")))
        ami = str(get(props, "amiType") or "")
        vendor = catalog.NVIDIA if "NVIDIA" in ami else catalog.AWS_NEURON if "NEURON" in ami else None
    elif resource_type == GKE_NODE_POOL:
        pool_labels = string_map(get(props, "nodeConfig", "labels"))
        taints = _object_taints(get(props, "nodeConfig", "taints"))
        machine_types = tuple(filter(None, [get(props, "nodeConfig", "machineType")]))
        accelerators = [str(get(a, "type") or "") for a in items(get(props, "nodeConfig", "guestAccelerators"))]
        if any(a.startswith("nvidia-") for a in accelerators):
            vendor = catalog.NVIDIA
    elif resource_type == AKS_AGENT_POOL:
        pool_labels = string_map(get(props, "nodeLabels"))
        taints = tuple(parse_taint(str(t)) for t in items(get(props, "nodeTaints")))
        machine_types = tuple(filter(None, [get(props, "vmSize")]))
    elif resource_type == OKE_NODE_POOL:
        pool_labels = {str(get(item, "key")): str(get(item, "value"))
                       for item in items(get(props, "initialNodeLabels"))}
        taints = _cloud_init_taints(get(props, "nodeMetadata", "user_data"))
        machine_types = tuple(filter(None, [get(props, "nodeShape")]))
    elif resource_type == KARPENTER_NODE_POOL:
        pool_labels = string_map(get(props, "spec", "template", "metadata", "labels"))
        taints = _object_taints(get(props, "spec", "template", "spec", "taints"))
        machine_types = tuple(str(v) for r in items(get(props, "spec", "template", "spec", "requirements"))
                              if get(r, "key") in _INSTANCE_TYPE_KEYS and get(r, "operator") == "In"
                              for v in items(get(r, "values")))
    else:  # NODE_PATCH
        pool_labels = string_map(get(props, "metadata", "labels"))
        taints = _object_taints(get(props, "spec", "taints"))
        machine_types = tuple(str(pool_labels[k]) for k in _INSTANCE_TYPE_KEYS if k in pool_labels)
    vendor = vendor or _vendor_of_shapes(cloud, machine_types) or _vendor_of_accelerator_label(pool_labels)
    return PoolView(cloud, pool_labels, taints, machine_types, vendor)
