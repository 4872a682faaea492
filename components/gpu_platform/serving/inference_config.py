"""``inference``: the stack section of the reference inference app (parsed with `fields`), and the rules for the
pool it would land on.

The dataclass (`InferenceConfig`) stays in `config_model`; `config` composes these and re-exports `parse_inference`
and `parse_inference_extras`.
"""

import re
from collections.abc import Mapping
from typing import Any

from .. import catalog
from ..architectures import reference_image_problem
from ..config_model import InferenceConfig, PlatformConfig
from ..errors import ConfigError, check_keys, did_you_mean, join
from ..fields import DNS_LABEL, HOST_NAME, MODEL_ID, read_bool, read_enum, read_int, read_str
from ..fields import section as _section
from ..pools import GpuPool


def parse_inference(raw: Mapping, pool_names: list[str]) -> InferenceConfig:
    sec, path = _section(raw, "inference"), "inference"
    check_keys(sec, {"enabled", "pool", "replicas", "maxReplicas", "image", "namespace", "modelId", "autoscaler",
                     "targetQueueDepth", "ingressHost", "modelCacheSize", "modelCacheStorageClass"}, path)
    pool = read_str(sec, "pool", path, None)
    if pool is not None and pool not in pool_names:
        raise ConfigError(join(path, "pool"), f"no node pool named '{pool}'{did_you_mean(pool, pool_names)}")
    replicas = read_int(sec, "replicas", path, 1, minimum=1)
    max_replicas = read_int(sec, "maxReplicas", path, max(4, replicas), minimum=1)
    if max_replicas < replicas:
        raise ConfigError(join(path, "maxReplicas"), f"must be >= replicas ({replicas}), got {max_replicas}")
    namespace = read_str(sec, "namespace", path, "inference")
    if not DNS_LABEL.match(namespace):
        raise ConfigError(join(path, "namespace"), f"'{namespace}' is not a DNS label")
    return InferenceConfig(
        enabled=read_bool(sec, "enabled", path, True),
        pool=pool,
        replicas=replicas,
        max_replicas=max_replicas,
        image=read_str(sec, "image", path, InferenceConfig.image),
        namespace=namespace,
        **parse_inference_extras(sec, path),
    )


def parse_inference_extras(sec: Mapping, path: str) -> dict[str, Any]:
    """Model, autoscaler, host name (``ingressHost``: the Gateway's route and HTTPS listener) and model-cache keys of
    ``inference``."""
    model_id = read_str(sec, "modelId", path, "")
    if model_id and not MODEL_ID.match(model_id):
        raise ConfigError(join(path, "modelId"), f"'{model_id}' is not a Hugging Face model id such as org/name")
    host = read_str(sec, "ingressHost", path, None)
    if host is not None and (len(host) > 253 or not HOST_NAME.match(host)):
        raise ConfigError(join(path, "ingressHost"), f"'{host}' is not a DNS host name")
    size = read_str(sec, "modelCacheSize", path, None)
    if size is not None and not re.fullmatch(r"[1-9]\d*(Mi|Gi|Ti)", size):
        raise ConfigError(join(path, "modelCacheSize"), f"'{size}' is not a storage quantity such as 20Gi")
    storage_class = read_str(sec, "modelCacheStorageClass", path, None)
    if storage_class is not None and not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", storage_class):
        raise ConfigError(join(path, "modelCacheStorageClass"), f"'{storage_class}' is not a StorageClass name")
    if storage_class is not None and size is None:
        raise ConfigError(join(path, "modelCacheStorageClass"), "needs modelCacheSize (no cache volume without it)")
    return {
        "model_id": model_id,
        "autoscaler": read_enum(sec, "autoscaler", path, ("keda", "hpa", "none"), "keda"),
        "target_queue_depth": read_int(sec, "targetQueueDepth", path, None, minimum=1),
        "ingress_host": host,
        "model_cache_size": size,
        "model_cache_storage_class": storage_class,
    }


def check_inference_pool(config: PlatformConfig, pools: list[GpuPool]) -> None:
    """The reference inference app runs on the pool it would land on: NVIDIA, AMD or Neuron devices, and on an arm64
    pool only with an image built for it."""
    from ..versions import INFERENCE_IMAGES
    from .workloads import chosen_pool

    infer = chosen_pool(config, pools)
    if config.inference.enabled and infer is not None and config.inference.image is None and \
            infer.vendor in INFERENCE_IMAGES:
        field = "inference.pool" if config.inference.pool else "inference.enabled"
        problem = reference_image_problem(infer, INFERENCE_IMAGES[infer.vendor].tagged)
        if problem is not None:
            raise ConfigError(field, f"{problem}; set inference.image (an arm64 build), an amd64 inference pool or "
                                     "inference.enabled: false")
    if config.inference.enabled and infer is not None and infer.vendor not in INFERENCE_IMAGES:
        field = "inference.pool" if config.inference.pool else "inference.enabled"
        served = ", ".join(catalog.VENDORS[v].display_name for v in INFERENCE_IMAGES)
        raise ConfigError(field, f"the reference inference app has no image for "
                                 f"{catalog.VENDORS[infer.vendor].display_name} accelerators (pool '{infer.name}'); "
                                 f"choose a pool of {served} accelerators or set inference.enabled: false")
