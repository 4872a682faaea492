"""Dynamic Resource Allocation objects of DRA pools as plain bodies: ResourceClaimTemplates (``resource.k8s.io/v1``)
for their GPUs, NVIDIA ComputeDomains (``resource.nvidia.com/v1beta1``) for multi-node NVLink, and the names quotas
count them by.

Facts relied on (kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1, the pinned driver; Kubernetes 1.34 API):

* The driver's chart creates the DeviceClasses ``gpu.nvidia.com`` (whole GPUs), ``mig.nvidia.com`` (MIG devices
  that already exist: static partitions, here the GPU Operator MIG manager's) and
  ``compute-domain-default-channel.nvidia.com`` (IMEX channels) (``templates/deviceclass-*.yaml``). A MIG device's
  profile is the attribute ``device.attributes['gpu.nvidia.com'].profile`` (``cmd/gpu-kubelet-plugin/mig.go``).
* A ComputeDomain's ``spec.channel.resourceClaimTemplate.name`` names a ResourceClaimTemplate the driver's controller
  creates in the ComputeDomain's namespace; a pod joins the domain by claiming from it. ``numNodes`` is deprecated
  (0 with ``IMEXDaemonsWithDNSNames``, on by default); the spec is immutable (CRD ``self == oldSelf``).
* A claim request is ``exactly: {deviceClassName, allocationMode: ExactCount, count}``: the only form Kueue's DRA
  integration counts (kueue@v0.19.2 ``pkg/dra/claims.go``). Kueue counts claim templates only, never named claims.
* ResourceQuota counts a namespace's devices of one class as ``<class>.deviceclass.resource.k8s.io/devices``
  (Kubernetes 1.34 resource quota docs).
* Pod claim names and request names are DNS labels; template names DNS subdomains.
"""

from collections.abc import Sequence
from typing import Optional

from .. import catalog
from ..kubernetes_base.common import metadata
from ..pools import GpuPool

RESOURCE_API_VERSION = "resource.k8s.io/v1"
COMPUTE_DOMAIN_API_VERSION = "resource.nvidia.com/v1beta1"
DRIVER_NAME = "gpu.nvidia.com"
"""The DRA driver (and attribute domain) of NVIDIA GPUs."""
GPU_DEVICE_CLASS = "gpu.nvidia.com"
MIG_DEVICE_CLASS = "mig.nvidia.com"
IMEX_CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
GPU_REQUEST = "gpu"
"""The request name inside the platform's GPU claim templates (a container asks for ``{name: <claim>}``)."""
GPU_CLAIM = "gpus"
"""The pod-level claim name of a workload's GPUs."""
IMEX_CLAIM = "imex-channel"
"""The pod-level claim name of a workload's IMEX channel (ComputeDomain)."""
KUEUE_GPU_RESOURCE = "nvidia.com/gpu"
"""What Kueue counts DRA GPUs (whole or MIG) as (``resources.deviceClassMappings``): the same name as the device
plugin's, so ``gpuQuota`` and every flavor count a team's GPUs however its pools hand them out. A pod never asks
for a GPU both ways, so nothing is counted twice."""
KUEUE_IMEX_CHANNEL_RESOURCE = "nvidia.com/imex-channel"
"""What Kueue counts IMEX channel claims as: an unmapped device class makes a workload inadmissible."""


def device_class(pool: GpuPool) -> str:
    """The DeviceClass a DRA pool's GPUs are claimed from: MIG devices on a MIG pool, whole GPUs otherwise."""
    return MIG_DEVICE_CLASS if pool.sharing.mode == "mig" else GPU_DEVICE_CLASS


def device_classes(pools: Sequence[GpuPool]) -> tuple[str, ...]:
    """The GPU DeviceClasses the DRA pools use, in pool order, each once."""
    return tuple(dict.fromkeys(device_class(p) for p in pools if p.dra))


def quota_resource(device_class_name: str) -> str:
    """The ResourceQuota name of a namespace's devices of one class."""
    return f"{device_class_name}.deviceclass.resource.k8s.io/devices"


def selectors(pool: GpuPool) -> list[dict]:
    """CEL selectors of the pool's devices: the MIG profile of a MIG pool (its class offers every profile)."""
    if pool.sharing.mode == "mig" and pool.sharing.mig_profile:
        return [{"cel": {"expression": f"device.attributes['{DRIVER_NAME}'].profile == '{pool.sharing.mig_profile}'"}}]
    return []


def devices_per_node(pool: GpuPool) -> int:
    """Devices a DRA pool's node publishes in its class: GPUs, or MIG instances of the pool's profile."""
    if pool.sharing.mode == "mig" and pool.sharing.mig_profile:
        model = catalog.GPU_MODELS[pool.gpu_model]
        return pool.gpus_per_node * catalog.mig_instances_per_gpu(model, pool.sharing.mig_profile)
    return pool.gpus_per_node


def gpu_claim_spec(pool: GpuPool, count: int) -> dict:
    """A ResourceClaim spec of ``count`` devices of the pool's class."""
    exactly: dict = {"deviceClassName": device_class(pool), "allocationMode": "ExactCount", "count": count}
    found = selectors(pool)
    if found:
        exactly["selectors"] = found
    return {"devices": {"requests": [{"name": GPU_REQUEST, "exactly": exactly}]}}


def gpu_claim_template(name: str, namespace: str, pool: GpuPool, count: int,
                       labels: Optional[dict[str, str]] = None) -> dict:
    """A ResourceClaimTemplate of ``count`` GPUs (or MIG devices) of a DRA pool: each pod that names it gets its own
    claim of that many devices."""
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata(name, namespace, labels),
        "spec": {"spec": gpu_claim_spec(pool, count)},
    }


def pool_claim_templates(pool: GpuPool, namespace: str) -> list[dict]:
    """The claim templates a team namespace gets for a DRA pool, for workloads to name: ``<pool>-gpu`` (one device)
    and ``<pool>-node`` (every device of one node), both of the pool's class."""
    one = gpu_claim_template(f"{pool.name}-gpu", namespace, pool, 1)
    whole = gpu_claim_template(f"{pool.name}-node", namespace, pool, devices_per_node(pool))
    return [one, whole] if devices_per_node(pool) > 1 else [one]


def compute_domain(name: str, namespace: str, channel_template: str, labels: Optional[dict[str, str]] = None) -> dict:
    """A ComputeDomain whose IMEX channel pods claim from ``channel_template`` (created by the driver's controller)."""
    return {
        "apiVersion": COMPUTE_DOMAIN_API_VERSION,
        "kind": "ComputeDomain",
        "metadata": metadata(name, namespace, labels),
        "spec": {"numNodes": 0,
                 "channel": {"resourceClaimTemplate": {"name": channel_template}, "allocationMode": "Single"}},
    }


def pod_resource_claims(gpu_template: str, channel_template: Optional[str] = None) -> list[dict]:
    """``spec.resourceClaims`` of a pod claiming GPUs (and an IMEX channel) from these templates."""
    claims = [{"name": GPU_CLAIM, "resourceClaimTemplateName": gpu_template}]
    if channel_template:
        claims.append({"name": IMEX_CLAIM, "resourceClaimTemplateName": channel_template})
    return claims


def container_claims(with_channel: bool = False) -> list[dict]:
    """``resources.claims`` of the container that uses the pod's GPUs (and IMEX channel)."""
    return [{"name": GPU_CLAIM}, *([{"name": IMEX_CLAIM}] if with_channel else [])]


def kueue_device_class_mappings(pools: Sequence[GpuPool]) -> list[dict]:
    """Kueue's ``resources.deviceClassMappings``: the GPU classes DRA pools use counted as ``nvidia.com/gpu``, and
    IMEX channels where a pool's NVLink domain spans nodes. Empty without DRA pools."""
    mappings = []
    classes = device_classes(pools)
    if classes:
        mappings.append({"name": KUEUE_GPU_RESOURCE, "deviceClassNames": list(classes)})
    if any(p.dra and p.multi_node_nvlink for p in pools):
        mappings.append({"name": KUEUE_IMEX_CHANNEL_RESOURCE, "deviceClassNames": [IMEX_CHANNEL_DEVICE_CLASS]})
    return mappings
