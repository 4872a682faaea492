"""Typed stack configuration (namespace ``gpu-platform``), validated with field-path errors.

`parse_config(raw, stack)` turns the stack's configuration (the ``gpu-platform:`` keys of
``Pulumi.<stack>.yaml`` with the namespace stripped) into a `PlatformConfig`, or raises one `ConfigError`
``<stack>: <path>: <problem>``. Nothing here touches the engine, so every rule is a plain unit test.

Only ``cloud``, ``region`` (``compartmentId`` on OCI) and ``nodePools`` are required; every other key has a
default documented on its field. Cloud-specific keys are parsed by ``clouds/<cloud>/options.py`` (pure
modules without cloud SDK imports), so each cloud owns its own settings and rules; each feature package parses its
own section with the field readers of `fields` (`scheduling.scheduling_config`: ``teams[]`` and ``scheduling``;
`monitoring.monitoring_config`, `serving.inference_config`, `serving.gateway_config`, `serving.llm_config`,
`optimizer.optimizer_config`, `autoscaling.autoscaling_config`, `training.training_config`,
`storage.storage_config`, `health.health_config`, `upgrades.maintenance`), and ``nodePools[]`` entries are
`node_pools`'. This module composes them: the top-level keys, each section's parser, then each feature's checks of
the whole configuration, in a fixed order (the first broken rule is the error), and the checks that span features
(GPU software, DRA and fallback pools over ``nodePools``; the reference workloads' pools). Every name that used to
live here is re-exported; nothing below this module imports it.
"""

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from . import catalog, provisioning
from .accelerators import gpu_allocation
from .accelerators.gpu_software import DEFAULT_GPU_SOFTWARE, GPU_SOFTWARE, default_gpu_software  # noqa: F401  (re-exported)
from .accelerators.gpu_software import check_pool_software as _check_pool_software
from .autoscaling.autoscaling_config import (  # noqa: F401  (re-exported: the section's former home)
    AUTOSCALERS,
    METRICS_SERVER_DEFAULT,
    check_autoscalers,
    parse_autoscaling,
)
from .clouds import options_module
from .config_model import (  # noqa: F401  (re-exported: the configuration's public types)
    DEFAULT_KUBERNETES_VERSION,
    OPTIMIZER_ACTIONS,
    VPA_MODES,
    VPA_RESOURCES,
    VPA_WORKLOADS,
    AutoscalingConfig,
    InferenceConfig,
    MonitoringConfig,
    NodePoolConfig,
    OptimizerConfig,
    PlatformConfig,
    SchedulingConfig,
    Secret,
    TeamConfig,
    TrainingConfig,
    accelerator_devices,
    gpu_pool,
)
from .errors import ConfigError, check_keys, did_you_mean, join, one_of  # noqa: F401  (check_keys, join: re-exported)
from .fields import (  # noqa: F401  (re-exported: the readers' former home)
    DNS_LABEL,
    HOST_NAME,
    MODEL_ID,
    as_mapping,
    read_bool,
    read_dns_label,
    read_enum,
    read_float,
    read_int,
    read_list,
    read_str,
    read_string_map,
)
from .health.health_config import check_health, parse_health
from .monitoring.monitoring_config import parse_monitoring
from .node_pools import (  # noqa: F401  (re-exported: the nodePools parser's former home)
    POOL_KEYS,
    POOL_ROLES,
    _with_allocation,
    parse_node_pool,
    parse_sharing,
    parse_taint,
)
from .optimizer.optimizer_config import check_optimizer_pools, parse_optimizer
from .scheduling.kueue_objects import MAX_POOL_TAINTS  # noqa: F401  (re-exported)
from .scheduling.multikueue_config import check_multikueue, parse_multikueue
from .scheduling.scheduling_config import (  # noqa: F401  (re-exported: the sections' former home)
    check_scheduling,
    parse_quotas,
    parse_scheduling,
    parse_team,
)
from .security.namespace_security import LEVELS as POD_SECURITY_LEVELS  # noqa: F401  (re-exported)
from .serving.gateway_config import parse_gateway
from .serving.inference_config import (  # noqa: F401  (re-exported: the section's former home)
    check_inference_pool,
    parse_inference,
    parse_inference_extras,
)
from .serving.llm_config import check_llm, parse_llm
from .storage.quotas import check_storage_quotas
from .storage.storage_config import parse_storage
from .training.training_config import (  # noqa: F401  (re-exported: the section's former home)
    TOPOLOGY_POLICIES,
    check_tpu_example,
    check_training_accelerator,
    check_training_image,
    check_training_topology,
    parse_training,
)
from .upgrades import kubernetes_versions
from .upgrades.maintenance import parse_maintenance

NAMESPACE = "gpu-platform"
KUBERNETES_VERSION = re.compile(r"^1\.(2[5-9]|3[0-9])$")
SECRET_PLACEHOLDER = "[secret]"


# ---------------------------------------------------------------------------------------------------------
# Composition


def _check_fallbacks(config: PlatformConfig) -> None:
    """Each ``fallbackPool`` names another pool of the same accelerator that has no fallback of its own."""
    pools = {p.name: (p.resource, p.fallback_pool) for p in config.gpu_pools()}
    for i, pool in enumerate(config.node_pools):
        problem = provisioning.fallback_problem(pool.name, pool.fallback_pool, pools)
        if problem is not None:
            raise ConfigError(join(join("nodePools", i), problem[0]), problem[1])


TOP_LEVEL_KEYS = {
    "cloud", "region", "compartmentId", "kubernetesVersion", "gpuSoftware", "nodePools", "teams",
    "monitoring", "scheduling", "inference", "optimizer", "autoscaling", "training", "gateway", "llm",
    "health", "storage", "maintenance", "multikueue",
}


def _unique(names: list[str], path: str, what: str) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise ConfigError(join(join(path, i), "name"),
                              f"duplicate {what} name '{name}' (also {path}[{seen[name]}])")
        seen[name] = i


def _parse(raw: Mapping, stack: str) -> PlatformConfig:
    cloud = read_str(raw, "cloud", "", required=True)
    if cloud not in catalog.CLOUDS:
        raise ConfigError("cloud", one_of(cloud, catalog.CLOUDS))
    options = options_module(cloud)
    stack_problem = getattr(options, "stack_name_problem", lambda _stack: None)(stack)
    if stack_problem:  # first: nothing else about the stack matters if it cannot be deployed under its name
        raise ConfigError("", stack_problem)
    if cloud != "existing":
        # Imported here: control_plane reads values with this module's helpers.
        from .control_plane import refuse_renamed

        refuse_renamed(raw)  # before the unknown-key check, so an old key names the key that replaced it
    check_keys(raw, TOP_LEVEL_KEYS | set(getattr(options, "CLUSTER_KEYS", set())), "")
    region = read_str(raw, "region", "", "", required=cloud != "existing")
    compartment = read_str(raw, "compartmentId", "", "", required=cloud == "oci")
    if compartment and not compartment.startswith(("ocid1.compartment.", "ocid1.tenancy.")):
        raise ConfigError("compartmentId", f"'{compartment}' is not a compartment OCID (ocid1.compartment...)")
    version = read_str(raw, "kubernetesVersion", "", DEFAULT_KUBERNETES_VERSION)
    if not KUBERNETES_VERSION.match(version):
        raise ConfigError("kubernetesVersion",
                          f"'{version}' is not a Kubernetes minor version such as {DEFAULT_KUBERNETES_VERSION}")
    offered_problem = kubernetes_versions.offered_problem(cloud, version)
    if offered_problem:
        raise ConfigError("kubernetesVersion", offered_problem)
    gpu_software = read_enum(raw, "gpuSoftware", "", GPU_SOFTWARE, None)
    raw_pools = read_list(raw, "nodePools", "", required=True, non_empty=True)
    pools = [parse_node_pool(p, join("nodePools", i), cloud, options) for i, p in enumerate(raw_pools)]
    if gpu_software is None:
        gpu_software = default_gpu_software(cloud, pools)
    _unique([p.name for p in pools], "nodePools", "pool")
    advertised = catalog.advertised_resources(p.gpu_model for p in pools)
    teams = [parse_team(t, join("teams", i), advertised, pools) for i, t in enumerate(read_list(raw, "teams", ""))]
    _unique([t.name for t in teams], "teams", "team")
    config = PlatformConfig(
        stack=stack,
        cloud=cloud,
        region=region,
        node_pools=tuple(pools),
        compartment_id=compartment,
        kubernetes_version=version,
        gpu_software=gpu_software,
        teams=tuple(teams),
        monitoring=parse_monitoring(raw),
        scheduling=parse_scheduling(raw),
        inference=parse_inference(raw, [p.name for p in pools]),
        optimizer=parse_optimizer(raw),
        autoscaling=parse_autoscaling(raw, cloud),
        training=parse_training(raw),
        gateway=parse_gateway(raw, cloud),
        llm=parse_llm(raw, [p.name for p in pools]),
        health=parse_health(raw, cloud),
        storage=parse_storage(raw, cloud),
        maintenance=parse_maintenance(raw.get("maintenance")),
        multikueue=parse_multikueue(raw),
    )
    _check_software(config, explicit_software=raw.get("gpuSoftware") is not None)
    _check_dra(config)
    _check_fallbacks(config)
    check_training_topology(config, raw)
    _check_reference_workloads(config, explicit_optimizer=raw.get("optimizer") is not None)
    check_scheduling(config)
    check_autoscalers(config)
    check_llm(config)
    check_health(config, raw)
    check_storage_quotas(config)
    parse_cluster = getattr(options, "parse_cluster_options", None)
    if parse_cluster is not None:
        config = replace(config, cluster_options=parse_cluster(raw, config))
    check_multikueue(config)  # after the cloud's options: an existing worker needs its kubeconfig key
    return config


def _check_dra(config: PlatformConfig) -> None:
    """What DRA pools need of the whole stack: the Kubernetes minor the DRA driver serves, and the GPU Operator."""
    first = next((i for i, p in enumerate(config.node_pools) if p.gpu_allocation == gpu_allocation.DRA), None)
    if first is None:
        return
    at = join(join("nodePools", first), "gpuAllocation")
    for problem in (gpu_allocation.kubernetes_problem(config.kubernetes_version),
                    gpu_allocation.software_problem(config.gpu_software)):
        if problem is not None:
            raise ConfigError(at, problem)


def _check_software(config: PlatformConfig, explicit_software: bool) -> None:
    if explicit_software and not any(p.vendor == catalog.NVIDIA for p in config.gpu_pools()):
        # gpuSoftware picks the NVIDIA stack, which a cluster without NVIDIA pools does not get.
        raise ConfigError("gpuSoftware", "chooses the NVIDIA GPU software, and no node pool has NVIDIA GPUs; "
                                         "leave it out")
    _check_pool_software(config.cloud, config.gpu_software, list(config.node_pools))


def _check_reference_workloads(config: PlatformConfig, explicit_optimizer: bool) -> None:
    """The reference workloads run on the pools they would land on: the training job (PyTorch DDP over NCCL/RCCL)
    on NVIDIA or AMD GPUs, or a TPU slice's JobSet; the inference app on NVIDIA, AMD or Neuron devices; the optimizer
    (per-pod utilisation) on NVIDIA or AMD pools: by default not deployed without them, asked for it is refused.

    Each rule is its feature's; they run here, in this order, so a stack breaking several gets the same first error
    as ever. The TPU example's slice topology is the cloud's (`clouds.<cloud>.options.tpu_topology`), which features
    do not import."""
    pools = config.gpu_pools()
    check_training_accelerator(config, pools)
    check_optimizer_pools(config, pools, explicit_optimizer)
    check_training_image(config, pools)
    check_tpu_example(config, pools, lambda pool: options_module(config.cloud).tpu_topology(pool))
    check_inference_pool(config, pools)


def parse_config(raw: Mapping, stack: str) -> PlatformConfig:
    """Validate a stack's ``gpu-platform`` configuration; raise one `ConfigError` naming the stack and path."""
    try:
        return _parse(as_mapping(raw, ""), stack)
    except ConfigError as err:
        raise err.for_stack(stack) from None


# ---------------------------------------------------------------------------------------------------------
# Reading configuration from a stack file or from the engine


def strip_namespace(config: Mapping[str, Any]) -> dict[str, Any]:
    """``{"gpu-platform:cloud": "aws", "aws:region": ...}`` -> ``{"cloud": "aws"}`` (other namespaces dropped)."""
    prefix = NAMESPACE + ":"
    return {k[len(prefix):]: v for k, v in config.items() if k.startswith(prefix)}


def redact_secure(value: Any) -> Any:
    """Replace ``{secure: ...}`` stack-file entries by a `Secret` placeholder; offline plans never decrypt."""
    if isinstance(value, Mapping):
        if set(value) == {"secure"}:
            return Secret(SECRET_PLACEHOLDER)
        return {k: redact_secure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_secure(v) for v in value]
    return value
