"""The workload autoscalers a stack's configuration asks for, as bodies, decided before anything is registered.

The platform's horizontal autoscaler is the inference service's (a KEDA ScaledObject on queue depth and CPU, or a
CPU HPA); its VPAs size the workloads ``autoscaling.vpaWorkloads`` names. `check_platform_autoscalers` applies the
VPA/HPA rule to them while the configuration is parsed, so a conflicting stack fails with one line naming
``autoscaling.vpaWorkloads`` and no resource is created.
"""

from typing import Any, Optional

from .. import catalog
from ..config_model import PlatformConfig, TeamConfig
from ..errors import ConfigError
from ..pools import GpuPool, training_pool
from ..serving import inference_objects
from ..training import training_objects
from ..versions import TRAINING_IMAGES
from .autoscaler_conflicts import autoscaler_conflicts
from .vpa_objects import VpaTarget, vertical_pod_autoscaler

PLANNED_PROMETHEUS_URL = "http://prometheus.monitoring.svc:9090"
"""Stands in for the monitoring layer's address: it only reaches a trigger's metadata, never what is scaled."""


def training_targets(namespace: str) -> list[VpaTarget]:
    """The reference training Job and its retraining CronJob (VPA follows a CronJob to the Jobs' pods)."""
    return [VpaTarget(namespace, "Job", training_objects.NAME, "batch/v1"),
            VpaTarget(namespace, "CronJob", training_objects.RETRAIN_NAME, "batch/v1")]


def inference_target(namespace: str, name: str = inference_objects.APP_NAME) -> VpaTarget:
    """The inference Deployment."""
    return VpaTarget(namespace, "Deployment", name, "apps/v1")


def reference_training(config: PlatformConfig, pools: list[GpuPool]) -> Optional[tuple[GpuPool, TeamConfig]]:
    """(pool, team) of the reference training job, or None when the platform builds none: training enabled, a
    training pool of a vendor it has an image for, a first team with a quota of that pool's accelerator. The
    training layer (`platform.GpuPlatform`) builds exactly when this says so."""
    team, pool = (config.teams[0] if config.teams else None), training_pool(pools)
    if (config.training.enabled and pool is not None and team is not None and pool.vendor in TRAINING_IMAGES
            and team.quota_of(pool.resource) > 0):
        return pool, team
    return None


def reference_tpu_slice(config: PlatformConfig, pools: list[GpuPool]) -> Optional[tuple[GpuPool, TeamConfig]]:
    """(pool, team) of the TPU layer's example JobSet, or None when the platform builds none: training enabled,
    Kueue on (the JobSet is gang-admitted through it), the first training-role TPU pool, the first team with a
    quota of its chips."""
    if not (config.training.enabled and config.scheduling.kueue):
        return None
    pool = next((p for p in pools if p.vendor == catalog.GOOGLE_TPU and p.role == "training"), None)
    team = next((t for t in config.teams if pool is not None and t.quota_of(pool.resource) > 0), None)
    return (pool, team) if pool is not None and team is not None else None


def training_namespace(config: PlatformConfig, pools: list[GpuPool]) -> Optional[str]:
    """The team namespace the training layer puts the reference job in, or None when it builds none."""
    planned = reference_training(config, pools)
    return planned[1].name if planned is not None else None


def inference_pool_of(config: PlatformConfig, pools: list[GpuPool]) -> Optional[GpuPool]:
    if not config.inference.enabled:
        return None
    from ..serving.workloads import chosen_pool

    return chosen_pool(config, pools)


def planned_vpa_targets(config: PlatformConfig, pools: list[GpuPool]) -> list[tuple[str, VpaTarget]]:
    """(workload, target) for every workload of ``autoscaling.vpaWorkloads`` the platform builds."""
    targets: list[tuple[str, VpaTarget]] = []
    if "training" in config.autoscaling.vpa_workloads:
        namespace = training_namespace(config, pools)
        if namespace is not None:
            targets += [("training", t) for t in training_targets(namespace)]
    if "inference" in config.autoscaling.vpa_workloads and inference_pool_of(config, pools) is not None:
        targets.append(("inference", inference_target(config.inference.namespace)))
    return targets


def planned_horizontal_autoscalers(config: PlatformConfig, pools: list[GpuPool]) -> list[dict[str, Any]]:
    """The inference service's ScaledObject or HPA, as the workloads layer will build it (none without one)."""
    pool = inference_pool_of(config, pools)
    if pool is None:
        return []
    from ..serving.workloads import inference_args, spec_from_args

    prometheus = PLANNED_PROMETHEUS_URL if config.monitoring.enabled else None
    spec = spec_from_args(inference_args(config, pool, prometheus_url=prometheus))
    if spec.autoscaler == "none":
        return []
    if spec.uses_keda:
        return [inference_objects.scaled_object(spec)]
    return [inference_objects.horizontal_pod_autoscaler(spec)]


def check_platform_autoscalers(config: PlatformConfig) -> None:
    """`ConfigError` at ``autoscaling.vpaWorkloads[i]`` when a VPA the configuration asks for and the platform's
    horizontal autoscaler would act on the same resource of one workload."""
    pools = config.gpu_pools()
    autoscaling = config.autoscaling
    hpas = planned_horizontal_autoscalers(config, pools)
    for workload, target in planned_vpa_targets(config, pools):
        vpa = vertical_pod_autoscaler(target, autoscaling.vpa_mode, autoscaling.vpa_resources)
        problems = autoscaler_conflicts(hpas, [vpa])
        if problems:
            index = autoscaling.vpa_workloads.index(workload)
            raise ConfigError(f"autoscaling.vpaWorkloads[{index}]", problems[0])
