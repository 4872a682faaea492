"""Typed stack configuration (namespace ``gpu-platform``), validated with field-path errors.

`parse_config(raw, stack)` turns the stack's configuration (the ``gpu-platform:`` keys of
``Pulumi.<stack>.yaml`` with the namespace stripped) into a `PlatformConfig`, or raises one `ConfigError`
``<stack>: <path>: <problem>``. Nothing here touches the engine, so every rule is a plain unit test.

Only ``cloud``, ``region`` (``compartmentId`` on OCI) and ``nodePools`` are required; every other key has a
default documented on its field. Cloud-specific keys are parsed by ``clouds/<cloud>/options.py`` (pure
modules without cloud SDK imports), so each cloud owns its own settings and rules; each feature package parses its
own section (`serving.gateway_config`, `serving.llm_config`, `storage.storage_config`, `health.health_config`,
`upgrades.maintenance`...) with the field readers of `fields`, and ``nodePools[]`` entries are `node_pools`'. This
module composes them and runs the checks that span sections; nothing below it imports it.
"""

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Optional

from . import catalog, provisioning
from .accelerators import gpu_allocation
from .accelerators.gpu_software import DEFAULT_GPU_SOFTWARE, GPU_SOFTWARE, default_gpu_software  # noqa: F401  (re-exported)
from .accelerators.gpu_software import check_pool_software as _check_pool_software
from .autoscaling.autoscaling_plan import check_platform_autoscalers, reference_tpu_slice
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
from .fields import section as _section
from .health.health_config import check_health, parse_health
from .node_pools import (  # noqa: F401  (re-exported: the nodePools parser's former home)
    POOL_KEYS,
    POOL_ROLES,
    _with_allocation,
    parse_node_pool,
    parse_sharing,
    parse_taint,
)
from .scheduling import priorities
from .scheduling.kueue_objects import MAX_POOL_TAINTS
from .security.namespace_security import LEVELS as POD_SECURITY_LEVELS
from .serving.gateway_config import parse_gateway
from .serving.llm_config import check_llm, parse_llm
from .storage.quotas import check_storage_quotas
from .storage.storage_config import parse_storage
from .upgrades import kubernetes_versions
from .upgrades.maintenance import parse_maintenance

NAMESPACE = "gpu-platform"
KUBERNETES_VERSION = re.compile(r"^1\.(2[5-9]|3[0-9])$")
SECRET_PLACEHOLDER = "[secret]"


# ---------------------------------------------------------------------------------------------------------
# Sections


def _check_fallbacks(config: PlatformConfig) -> None:
    """Each ``fallbackPool`` names another pool of the same accelerator that has no fallback of its own."""
    pools = {p.name: (p.resource, p.fallback_pool) for p in config.gpu_pools()}
    for i, pool in enumerate(config.node_pools):
        problem = provisioning.fallback_problem(pool.name, pool.fallback_pool, pools)
        if problem is not None:
            raise ConfigError(join(join("nodePools", i), problem[0]), problem[1])


def parse_quotas(raw: Mapping, path: str, advertised: tuple[str, ...]) -> dict[str, int]:
    """``teams[].quotas``: ``{<resource>: <count>}``, each a resource a pool advertises, counts integers >= 0."""
    if raw.get("quotas") is None:
        return {}
    qpath = join(path, "quotas")
    quotas = {}
    for resource, _ in as_mapping(raw["quotas"], qpath).items():
        at = join(qpath, str(resource))
        if resource not in advertised:
            raise ConfigError(at, f"no node pool advertises '{resource}' (the pools advertise "
                                  f"{', '.join(advertised)}){did_you_mean(str(resource), advertised)}")
        if resource == catalog.NVIDIA_GPU_RESOURCE and raw.get("gpuQuota") is not None:
            raise ConfigError(at, f"duplicates gpuQuota, the team's {resource} quota; give one of them")
        quotas[str(resource)] = read_int(raw["quotas"], resource, qpath, minimum=0, required=True)
    return quotas


def parse_team(raw_value: Any, path: str,
               advertised: tuple[str, ...] = (catalog.NVIDIA_GPU_RESOURCE,)) -> TeamConfig:
    """One ``teams`` entry; ``advertised``: the accelerator resources the stack's node pools advertise."""
    raw = as_mapping(raw_value, path)
    check_keys(raw, {"name", "gpuQuota", "cpuQuota", "memoryQuotaGi", "group", "borrowingLimit", "lendingLimit",
                     "podSecurity", "quotas", "storageQuota"}, path)
    name = read_dns_label(raw, "name", path)
    quotas = parse_quotas(raw, path, advertised)
    # `quotas: {nvidia.com/gpu: n}` is gpuQuota spelled the other way: one field holds it.
    gpu_quota = quotas.pop(catalog.NVIDIA_GPU_RESOURCE, None)
    if gpu_quota is None:
        gpu_quota = read_int(raw, "gpuQuota", path, 0, minimum=0)
    if gpu_quota and catalog.NVIDIA_GPU_RESOURCE not in advertised:
        raise ConfigError(join(path, "gpuQuota"), f"counts {catalog.NVIDIA_GPU_RESOURCE}, which no node pool "
                                                  f"advertises (the pools advertise {', '.join(advertised)}); "
                                                  "give the team quotas of those")
    lending = read_int(raw, "lendingLimit", path, None, minimum=0)
    if lending is not None and lending > gpu_quota:
        raise ConfigError(join(path, "lendingLimit"), f"cannot exceed gpuQuota ({gpu_quota}), got {lending}")
    devices = accelerator_devices(gpu_quota, quotas)
    return TeamConfig(
        name=name,
        gpu_quota=gpu_quota,
        cpu_quota=read_int(raw, "cpuQuota", path, max(4, 8 * devices), minimum=0),
        memory_quota_gib=read_int(raw, "memoryQuotaGi", path, max(16, 64 * devices), minimum=0),
        group=read_str(raw, "group", path, name),
        borrowing_limit=read_int(raw, "borrowingLimit", path, None, minimum=0),
        lending_limit=lending,
        pod_security=read_enum(raw, "podSecurity", path, POD_SECURITY_LEVELS, "baseline"),
        quotas=tuple(sorted(quotas.items())),
        storage_quota=_storage_quota(raw, path),
    )


def _storage_quota(raw: Mapping, path: str) -> Optional[str]:
    """``teams[].storageQuota`` checked (`storage_config.parse_storage_quota`), as given."""
    from .storage.storage_config import parse_storage_quota

    value = read_str(raw, "storageQuota", path, None)
    parse_storage_quota(value, join(path, "storageQuota"))
    return value


def parse_monitoring(raw: Mapping) -> MonitoringConfig:
    sec, path = _section(raw, "monitoring"), "monitoring"
    check_keys(sec, {"enabled", "retention", "storageSize", "grafanaAdminPassword"}, path)
    retention = read_str(sec, "retention", path, "15d")
    if not re.fullmatch(r"\d+(ms|s|m|h|d|w|y)", retention):
        raise ConfigError(join(path, "retention"), f"'{retention}' is not a Prometheus duration such as 15d")
    storage = read_str(sec, "storageSize", path, "50Gi")
    if not re.fullmatch(r"\d+(Ki|Mi|Gi|Ti)", storage):
        raise ConfigError(join(path, "storageSize"), f"'{storage}' is not a storage quantity such as 50Gi")
    password = sec.get("grafanaAdminPassword")
    return MonitoringConfig(
        enabled=read_bool(sec, "enabled", path, True),
        retention=retention,
        storage_size=storage,
        grafana_admin_password=Secret(password) if password is not None else None,
    )


def parse_scheduling(raw: Mapping) -> SchedulingConfig:
    sec, path = _section(raw, "scheduling"), "scheduling"
    check_keys(sec, {"kueue", "perGpuPriorityClasses", "defaultPriorityClass"}, path)
    return SchedulingConfig(
        kueue=read_bool(sec, "kueue", path, True),
        per_gpu_priority_classes=read_bool(sec, "perGpuPriorityClasses", path, False),
        default_priority_class=read_enum(sec, "defaultPriorityClass", path, tuple(t.name for t in priorities.TIERS)),
    )


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




def parse_optimizer(raw: Mapping) -> OptimizerConfig:
    sec, path = _section(raw, "optimizer"), "optimizer"
    check_keys(sec, {"enabled", "action", "schedule", "utilizationThreshold", "dryRun"}, path)
    schedule = read_str(sec, "schedule", path, OptimizerConfig.schedule)
    if len(schedule.split()) != 5:
        raise ConfigError(join(path, "schedule"), f"'{schedule}' is not a five-field cron schedule")
    return OptimizerConfig(
        enabled=read_bool(sec, "enabled", path, True),
        action=read_enum(sec, "action", path, OPTIMIZER_ACTIONS, "report"),
        schedule=schedule,
        utilization_threshold=read_float(sec, "utilizationThreshold", path, 10.0, 0.0, 100.0),
        dry_run=read_bool(sec, "dryRun", path, True),
    )


AUTOSCALERS = {"aws": ("cluster-autoscaler", "karpenter")}
METRICS_SERVER_DEFAULT = {"aws": True, "oci": True}
"""Clouds whose clusters come without metrics-server (EKS and OKE offer it only as an add-on)."""


def _read_choices(sec: Mapping, key: str, path: str, choices: tuple[str, ...], default: tuple[str, ...]
                  ) -> tuple[str, ...]:
    """A list of distinct values out of ``choices`` (at least one); the default when the key is absent."""
    if key not in sec or sec[key] is None:
        return default
    values = read_list(sec, key, path, non_empty=True)
    for i, value in enumerate(values):
        if not isinstance(value, str) or value not in choices:
            raise ConfigError(join(join(path, key), i), one_of(str(value), choices))
        if value in values[:i]:
            raise ConfigError(join(join(path, key), i), f"'{value}' is listed twice")
    return tuple(values)


def parse_autoscaling(raw: Mapping, cloud: str) -> AutoscalingConfig:
    sec, path = _section(raw, "autoscaling"), "autoscaling"
    check_keys(sec, {"autoscaler", "vpa", "vpaMode", "vpaWorkloads", "vpaResources", "scaleDownUnneededMinutes",
                     "maxNodeProvisionMinutes", "metricsServer"}, path)
    choices = AUTOSCALERS.get(cloud, ("built-in",))
    return AutoscalingConfig(
        autoscaler=read_enum(sec, "autoscaler", path, choices, choices[0]),
        vpa=read_bool(sec, "vpa", path, True),
        vpa_mode=read_enum(sec, "vpaMode", path, VPA_MODES, "Off"),
        vpa_workloads=_read_choices(sec, "vpaWorkloads", path, VPA_WORKLOADS, ("training",)),
        vpa_resources=_read_choices(sec, "vpaResources", path, VPA_RESOURCES, VPA_RESOURCES),
        scale_down_unneeded_minutes=read_int(sec, "scaleDownUnneededMinutes", path, 30, minimum=1),
        max_node_provision_minutes=read_int(sec, "maxNodeProvisionMinutes", path, 25, minimum=1),
        metrics_server=read_bool(sec, "metricsServer", path, METRICS_SERVER_DEFAULT.get(cloud, False)),
    )


def parse_training(raw: Mapping) -> TrainingConfig:
    sec, path = _section(raw, "training"), "training"
    check_keys(sec, {"enabled", "schedule", "checkpointStorageClass", "checkpointSize", "topologyPolicy",
                     "topologyLevel"}, path)
    schedule = read_str(sec, "schedule", path, TrainingConfig.schedule)
    if len(schedule.split()) != 5:
        raise ConfigError(join(path, "schedule"), f"'{schedule}' is not a five-field cron schedule")
    size = read_str(sec, "checkpointSize", path, TrainingConfig.checkpoint_size)
    if not re.fullmatch(r"[1-9]\d*(Mi|Gi|Ti)", size):
        raise ConfigError(join(path, "checkpointSize"), f"'{size}' is not a storage quantity such as 100Gi")
    storage_class = read_str(sec, "checkpointStorageClass", path, None)
    if storage_class is not None and not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", storage_class):
        raise ConfigError(join(path, "checkpointStorageClass"), f"'{storage_class}' is not a StorageClass name")
    return TrainingConfig(
        enabled=read_bool(sec, "enabled", path, True),
        schedule=schedule,
        checkpoint_storage_class=storage_class,
        checkpoint_size=size,
        topology_policy=read_enum(sec, "topologyPolicy", path, TOPOLOGY_POLICIES, TrainingConfig.topology_policy),
        topology_level=read_str(sec, "topologyLevel", path, None),
    )


TOPOLOGY_POLICIES = ("preferred", "required")


def check_training_topology(config: PlatformConfig, raw: Mapping) -> None:
    """``training.topologyPolicy`` and ``topologyLevel`` act only where Kueue places the reference job on a
    topology-aware flavor, and the level must be one its pool's nodes carry (a Topology level no node carries would
    leave the job unplaceable)."""
    from .autoscaling.autoscaling_plan import reference_training
    from .scheduling.kueue_objects import topology_aware, topology_levels

    sec = _section(raw, "training")
    given = [key for key in ("topologyPolicy", "topologyLevel") if key in sec]
    planned = reference_training(config, config.gpu_pools())
    if not given or planned is None:
        return
    pool = planned[0]
    if not config.scheduling.kueue:
        raise ConfigError(join("training", given[0]), "takes effect only with Kueue (scheduling.kueue: true)")
    if not topology_aware(pool):
        raise ConfigError(join("training", given[0]),
                          f"pool '{pool.name}' has no topology-aware Kueue flavor (only fixed-size RDMA pools with "
                          "device-plugin GPUs, not queued-provisioning ones, have)")
    levels = topology_levels(pool)
    level = config.training.topology_level
    if level is not None and level not in levels:
        raise ConfigError("training.topologyLevel",
                          f"the nodes of pool '{pool.name}' carry no label '{level}'; their topology levels are "
                          f"{', '.join(levels)}")


TOP_LEVEL_KEYS = {
    "cloud", "region", "compartmentId", "kubernetesVersion", "gpuSoftware", "nodePools", "teams",
    "monitoring", "scheduling", "inference", "optimizer", "autoscaling", "training", "gateway", "llm",
    "health", "storage", "maintenance",
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
    teams = [parse_team(t, join("teams", i), advertised) for i, t in enumerate(read_list(raw, "teams", ""))]
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
    )
    _check_software(config, explicit_software=raw.get("gpuSoftware") is not None)
    _check_dra(config)
    _check_fallbacks(config)
    check_training_topology(config, raw)
    _check_reference_workloads(config, explicit_optimizer=raw.get("optimizer") is not None)
    _check_scheduling(config)
    _check_autoscalers(config)
    check_llm(config)
    check_health(config, raw)
    check_storage_quotas(config)
    parse_cluster = getattr(options, "parse_cluster_options", None)
    if parse_cluster is not None:
        config = replace(config, cluster_options=parse_cluster(raw, config))
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


def _check_autoscalers(config: PlatformConfig) -> None:
    """A VPA and an HPA never act on the same resource of the same workload (the autoscaling layer's rule)."""
    if not config.autoscaling.vpa:
        return
    check_platform_autoscalers(config)




def _check_scheduling(config: PlatformConfig) -> None:
    """Limits the scheduling layer inherits from Kueue's API."""
    if not config.scheduling.kueue:
        return
    for i, pool in enumerate(config.gpu_pools()):
        if len(pool.taints) > MAX_POOL_TAINTS:
            raise ConfigError(join(join("nodePools", i), "taints"),
                              f"the pool's nodes would carry {len(pool.taints)} taints (the GPU taint included); "
                              f"a Kueue flavor tolerates at most {MAX_POOL_TAINTS}")


def _check_software(config: PlatformConfig, explicit_software: bool) -> None:
    if explicit_software and not any(p.vendor == catalog.NVIDIA for p in config.gpu_pools()):
        # gpuSoftware picks the NVIDIA stack, which a cluster without NVIDIA pools does not get.
        raise ConfigError("gpuSoftware", "chooses the NVIDIA GPU software, and no node pool has NVIDIA GPUs; "
                                         "leave it out")
    _check_pool_software(config.cloud, config.gpu_software, list(config.node_pools))


def _check_tpu_example(config: PlatformConfig, pools: list) -> None:
    """The TPU layer's example JobSet gang-admits one whole slice: the first team with a TPU quota must hold one
    (`kube.tpu.TpuSliceJob` refuses less; checked here so nothing is registered first)."""
    planned = reference_tpu_slice(config, pools)
    if planned is None:
        return
    tpu, team = planned
    topology = options_module(config.cloud).tpu_topology(next(c for c in config.node_pools if c.name == tpu.name))
    if topology is None:
        return
    team_index = config.teams.index(team)
    chips, quota = catalog.tpu_chips(topology), team.quota_of(tpu.resource)
    if quota < chips:
        raise ConfigError(join(join("teams", team_index), f"quotas.{tpu.resource}"),
                          f"the example JobSet takes a whole {topology} slice of pool '{tpu.name}' ({chips} chips); "
                          f"a quota of {quota} would never admit it (or set training.enabled: false)")


def _check_reference_workloads(config: PlatformConfig, explicit_optimizer: bool) -> None:
    """The reference workloads run on the pools they would land on: the training job (PyTorch DDP over NCCL/RCCL)
    on NVIDIA or AMD GPUs, or a TPU slice's JobSet; the inference app on NVIDIA, AMD or Neuron devices; the optimizer
    (per-pod utilisation) on NVIDIA or AMD pools: by default not deployed without them, asked for it is refused."""
    from .pools import training_pool
    from .serving.workloads import chosen_pool
    from .versions import INFERENCE_IMAGES, TRAINING_IMAGES

    pools = config.gpu_pools()
    train = training_pool(pools)
    if (config.training.enabled and train is not None and train.vendor not in TRAINING_IMAGES
            and train.vendor != catalog.GOOGLE_TPU):
        vendor = catalog.VENDORS[train.vendor].display_name
        raise ConfigError("training.enabled", f"the reference training job runs PyTorch DDP on NVIDIA or AMD GPUs, "
                                              f"and its pool '{train.name}' has {vendor} accelerators; set "
                                              "training.enabled: false")
    from .optimizer.signals import VENDORS_WITH_SIGNAL

    if not any(p.vendor in VENDORS_WITH_SIGNAL for p in pools) and explicit_optimizer and config.optimizer.enabled:
        # Its idleness signal is a per-pod utilisation metric; other vendors' exporters name no pod (Neuron) or
        # there is none in the cluster (TPU): on their pools it would find nothing to act on.
        readable = " and ".join(catalog.VENDORS[v].display_name for v in VENDORS_WITH_SIGNAL)
        raise ConfigError("optimizer.enabled", f"the optimizer reads per-pod utilisation of {readable} GPUs only, "
                                               "and no node pool has them; set optimizer.enabled: false")
    if config.training.enabled and train is not None and train.vendor in TRAINING_IMAGES:
        _check_arm64_image(train, TRAINING_IMAGES[train.vendor].tagged, "training.enabled", "training.enabled: false")
    _check_tpu_example(config, pools)
    infer = chosen_pool(config, pools)
    if config.inference.enabled and infer is not None and config.inference.image is None and \
            infer.vendor in INFERENCE_IMAGES:
        field = "inference.pool" if config.inference.pool else "inference.enabled"
        _check_arm64_image(infer, INFERENCE_IMAGES[infer.vendor].tagged, field,
                           "inference.image (an arm64 build), an amd64 inference pool or inference.enabled: false")
    if config.inference.enabled and infer is not None and infer.vendor not in INFERENCE_IMAGES:
        field = "inference.pool" if config.inference.pool else "inference.enabled"
        served = ", ".join(catalog.VENDORS[v].display_name for v in INFERENCE_IMAGES)
        raise ConfigError(field, f"the reference inference app has no image for "
                                 f"{catalog.VENDORS[infer.vendor].display_name} accelerators (pool '{infer.name}'); "
                                 f"choose a pool of {served} accelerators or set inference.enabled: false")


def _check_arm64_image(pool: Any, image: str, field: str, remedy: str) -> None:
    """A reference workload on an arm64 pool (Grace-Blackwell) runs only an image published for arm64."""
    from .versions import ARM64_WORKLOAD_IMAGES

    if pool.architecture == catalog.ARM64 and image not in ARM64_WORKLOAD_IMAGES:
        raise ConfigError(field, f"pool '{pool.name}' has arm64 nodes and the reference image {image} is built for "
                                 f"amd64 only; set {remedy}")


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
