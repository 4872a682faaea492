"""Each accelerator vendor's idleness signal: the per-pod utilisation and memory series its exporter publishes.

Only vendors whose exporter labels a device's series with the pod that holds it have a signal; the optimizer can
attribute nothing to pods elsewhere:

- NVIDIA: dcgm-exporter (``DCGM_FI_DEV_GPU_UTIL`` percent or ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` ratio; framebuffer
  ``DCGM_FI_DEV_FB_USED`` MiB), labels ``pod`` / ``namespace``.
- AMD: the AMD GPU Operator's device metrics exporter (ROCm/device-metrics-exporter@v1.5.1
  ``pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go``: ``gpu_gfx_activity`` "Graphics engine usage in Percentage
  (0-100)", ``gpu_used_vram`` "Used VRAM memory of the GPU (in MB)"; the labels are the lower-cased
  ``MetricLabel`` names ``pod``, ``namespace``, ``container``, empty on GPUs no pod holds). The platform's
  ServiceMonitor scrapes it with ``honorLabels`` (accelerators/amd_values.py), so the names reach Prometheus unchanged.
- AWS Neuron: none. neuron-monitor names pods only with its Beta ``k8s_info`` companion
  (``neuron-monitor-prometheus.py --enable-k8s-info | neuron-monitor-k8s-info.py``; aws-neuron/aws-neuron-sdk
  ``tools/neuron-sys-tools/neuron-monitor-user-guide.rst``: EKS only, not EKS Auto Mode), which the platform does
  not run (accelerators/neuron_values.py), so its series carry no pod.
- Google TPU: none in the cluster (GKE exports TPU metrics to Cloud Monitoring).
"""

from dataclasses import dataclass

from .. import catalog

NVIDIA_METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
"""The NVIDIA utilisation metrics a policy may choose (``Policy.metric``)."""


@dataclass(frozen=True)
class Signal:
    """One vendor's per-pod idleness signal."""

    vendor: str
    """`catalog.VENDORS` key."""
    utilization_metric: str
    """Series per device, labelled with the pod holding it; its count per pod is the pod's devices."""
    percent_scale: str
    """PromQL suffix turning the metric's average into percent (``" * 100"`` for a 0-1 ratio, else empty)."""
    memory_metric: str
    """Device memory used per device, summed per pod and read as MiB (AMD's exporter documents "MB"; the two
    differ by under 5 %, which only matters to `recommend`'s headroom)."""


VENDORS_WITH_SIGNAL = (catalog.NVIDIA, catalog.AMD)
"""Vendors whose pools the optimizer looks after, in the order their queries run."""


def signal_for(vendor: str, nvidia_metric: str = NVIDIA_METRICS[0]) -> Signal:
    """The signal of ``vendor`` (a key of `VENDORS_WITH_SIGNAL`); ``nvidia_metric`` is the policy's DCGM choice."""
    if vendor == catalog.NVIDIA:
        scale = " * 100" if nvidia_metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" else ""
        return Signal(catalog.NVIDIA, nvidia_metric, scale, "DCGM_FI_DEV_FB_USED")
    if vendor == catalog.AMD:
        return Signal(catalog.AMD, "gpu_gfx_activity", "", "gpu_used_vram")
    raise KeyError(vendor)
