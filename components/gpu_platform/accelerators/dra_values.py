"""Helm values of NVIDIA's DRA driver for GPUs, and what the GPU Operator changes when DRA pools exist (pure).

Facts relied on, checked in kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1 (``deployments/helm/dra-driver-nvidia-gpu``;
every key set here is in ``tests/data/chart_keys/dra-driver-nvidia-gpu-0.4.1.keys``):

* ``resourceApiVersion`` is detected from the API server when empty, and ``templates/validation.yaml`` fails the
  render when none is found: set to ``resource.k8s.io/v1`` so a render without cluster access works too.
* GPU allocation (``resources.gpus.enabled``, default true) renders only with ``gpuResourcesEnabledOverride: true``,
  the chart's acknowledgement that the device plugin must not run on the same nodes (the platform guarantees it:
  DRA pools carry ``nvidia.com/gpu.deploy.device-plugin=false``). ComputeDomains (``resources.computeDomains``, the
  controller and the IMEX daemons) are turned on only when a pool's NVLink domain spans nodes.
* ``nvidiaDriverRoot``: ``/`` for a driver on the host, ``/run/nvidia/driver`` where the GPU Operator's driver
  container installs it, ``/home/kubernetes/bin/nvidia`` on GKE with Google's installer (docs/install.md).
* The kubelet plugin's default affinity needs NFD's NVIDIA PCI label or ``nvidia.com/gpu.present`` (the operator's);
  ``kubeletPlugin.nodeSelector`` is ANDed with it. Its default tolerations cover only ``nvidia.com/gpu``.
* NVIDIA's GPU Operator guide for DRA: label the DRA nodes (``nvidia.com/dra-kubelet-plugin=true``), select them
  in the driver's ``kubeletPlugin.nodeSelector`` and name the label to the operator's driver manager
  (``NODE_LABEL_FOR_GPU_POD_EVICTION``) so a driver upgrade evicts the DRA plugin first
  (`nvidia_values.gpu_operator_values` does the operator's part).
"""

from collections.abc import Sequence

from .. import labels
from ..kubernetes_base.common import all_pool_tolerations
from ..pools import GpuPool
from .nvidia_values import host_preset

RESOURCE_API_VERSION = "resource.k8s.io/v1"
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
"""Where the GPU Operator's driver container puts the driver (its ``hostPaths.driverInstallDir`` default)."""
HOST_DRIVER_ROOT = "/"
RELEASE_NAME = "dra-driver-nvidia-gpu"


def dra_pools(pools: Sequence[GpuPool]) -> list[GpuPool]:
    """The pools NVIDIA's DRA driver serves, in name order."""
    return sorted((p for p in pools if p.dra), key=lambda p: p.name)


def driver_root(cloud: str, driver_preinstalled: "bool | None" = None) -> str:
    """Where the NVIDIA driver lives on the DRA pools' nodes, given what the GPU Operator installs on this cloud."""
    preset = host_preset(cloud, driver_preinstalled)
    if preset.driver:
        return OPERATOR_DRIVER_ROOT
    return preset.driver_install_dir or HOST_DRIVER_ROOT


def dra_driver_values(cloud: str, pools: Sequence[GpuPool], driver_preinstalled: "bool | None" = None) -> dict:
    """Values of the ``dra-driver-nvidia-gpu`` chart for the DRA pools among ``pools`` (empty without any)."""
    served = dra_pools(pools)
    if not served:
        return {}
    compute_domains = any(p.multi_node_nvlink for p in served)
    return {
        "nvidiaDriverRoot": driver_root(cloud, driver_preinstalled),
        "resourceApiVersion": RESOURCE_API_VERSION,
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": compute_domains}},
        "kubeletPlugin": {
            "nodeSelector": {labels.DRA_KUBELET_PLUGIN_LABEL: "true"},
            # Every taint of the DRA pools (the chart's default tolerates nvidia.com/gpu only).
            "tolerations": all_pool_tolerations(served),
        },
    }

