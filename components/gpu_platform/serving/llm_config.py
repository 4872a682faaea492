"""``llm``: the LLM service (vLLM behind an InferencePool) a stack may deploy (typed, validated).

`parse_llm` reads the section (types, ranges, keys that only make sense together); `check_llm` then checks it
against the stack's pools and gateway, before anything is registered: the pool must be an NVIDIA pool whose GPUs are
not shared, the tensor-parallel size must fit one of its nodes, the replicas its size, and, for a model whose size
`llm_models` knows, one replica's GPU memory must hold the weights at the chosen precision. The decisions both the
check and the Kubernetes layer need (the pool, the tensor-parallel size, the replica ceiling, the cache size) are the
pure functions below, so the layer builds exactly what was checked.
"""

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from .. import catalog
from ..errors import ConfigError, did_you_mean
from ..pools import GpuPool, inference_pool
from . import llm_models
from .gateway_config import TIMEOUT

DEFAULT_NAMESPACE = "llm"
MODEL_SOURCES = ("huggingface", "pvc")
CACHE_ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany")
AUTOSCALERS = ("keda", "none")
DEFAULT_CACHE_SIZE = "100Gi"
"""Cache volume of a model whose size `llm_models` does not know."""
SHARED_SHARING_MODES = ("time-slicing", "mps", "hami")
KEYS = {
    "model", "pool", "servedModelName", "namespace", "image", "replicas", "maxReplicas", "tensorParallelSize",
    "maxModelLen", "dtype", "quantization", "gpuMemoryUtilization", "modelSource", "modelClaim", "modelPath",
    "cacheSize", "cacheStorageClass", "cacheAccessMode", "hfTokenSecret", "autoscaler", "targetWaitingRequests",
    "targetKvCacheUsage", "requestTimeout",
}
OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
MODEL_PATH = re.compile(r"^(?!.*(^|/)\.\.?(/|$))[\w.-]+(/[\w.-]+)*$")
"""A relative path inside the model claim: no leading '/', no '.' or '..' segments."""


@dataclass(frozen=True)
class LlmConfig:
    """``llm``: one OpenAI-compatible model server (vLLM) on a GPU pool, behind the gateway's InferencePool route."""

    model: str
    """Hugging Face model id served (``meta-llama/Llama-3.1-8B-Instruct``); required. When the platform knows the
    model's size (docs/llm.md lists them), a pool whose GPUs cannot hold its weights is refused."""
    pool: Optional[str] = None
    """Node pool the model server runs on. Default: the inference pool rule (the first ``role: inference`` pool, else
    the first pool without RDMA)."""
    served_model_name: str = ""
    """Model name clients put in requests (``model`` of ``/v1/chat/completions``) and the ``model_name`` label of
    vLLM's metrics. Default: ``model``."""
    namespace: str = DEFAULT_NAMESPACE
    """Namespace of the service (Pod Security ``restricted``)."""
    image: Optional[str] = None
    """vLLM image. Default: the pinned ``vllm/vllm-openai`` release (CUDA 13, NVIDIA driver R580 or newer; give its
    ``-cu129`` variant for older drivers)."""
    replicas: int = 1
    """Model server replicas (the minimum the autoscaler keeps)."""
    max_replicas: Optional[int] = None
    """Most replicas the autoscaler may reach. Default derived: 4, or fewer when the pool cannot hold 4, never below
    ``replicas``."""
    tensor_parallel_size: Optional[int] = None
    """GPUs per replica (vLLM ``--tensor-parallel-size``); must divide the pool's GPUs per node. Default derived: all
    GPUs of one node (1 on MIG pools)."""
    max_model_len: Optional[int] = None
    """Longest context, prompt and answer, in tokens (vLLM ``--max-model-len``). Default: the model's own; set it on
    small GPUs, whose KV cache may not hold one full-length sequence."""
    dtype: str = "auto"
    """Weight and activation precision (vLLM ``--dtype``): ``auto``, ``bfloat16``, ``float16``, ``half``, ``float``,
    ``float32``."""
    quantization: Optional[str] = None
    """Quantization method (vLLM ``--quantization``): ``fp8``, ``modelopt``, ``awq``, ``awq_marlin``, ``gptq``,
    ``gptq_marlin``, ``bitsandbytes``, ``mxfp4``, ``modelopt_fp4`` or ``compressed-tensors``. Default: none (vLLM reads
    a quantized checkpoint's own method from its config)."""
    gpu_memory_utilization: float = 0.9
    """Share of each GPU's memory vLLM takes for weights and KV cache (``--gpu-memory-utilization``), 0.1 to 1."""
    model_source: str = "huggingface"
    """``huggingface``: an init container downloads the model from the Hub into the cache volume, then vLLM serves it
    offline; ``pvc``: the weights are already on a PersistentVolumeClaim (``modelClaim``). Object stores: stage the
    weights onto a claim."""
    model_claim: Optional[str] = None
    """PersistentVolumeClaim in ``namespace`` holding the weights (``modelSource: pvc``, required there)."""
    model_path: str = ""
    """Directory of the weights inside ``modelClaim`` (``modelSource: pvc``). Default: the claim's root."""
    cache_size: Optional[str] = None
    """Size of the model cache volume (``modelSource: huggingface``). Default derived: 1.5 times the weights of a
    known model rounded up to 10Gi, at least 20Gi; 100Gi for other models."""
    cache_storage_class: Optional[str] = None
    """StorageClass of the cache volume. Default: the cluster's default class."""
    cache_access_mode: str = "ReadWriteOnce"
    """``ReadWriteOnce``: each replica downloads into its own volume (a generic ephemeral volume, deleted with the
    pod; any block StorageClass); ``ReadWriteMany``: the replicas share one PersistentVolumeClaim and download once
    (needs a ReadWriteMany StorageClass, ``cacheStorageClass``)."""
    hf_token_secret: Optional[str] = None
    """Secret in ``namespace`` whose ``token`` key holds a Hugging Face token, for gated models (mounted as a file
    into the download step only). Never the token itself."""
    autoscaler: str = "keda"
    """``keda``: replicas follow vLLM's waiting requests and KV-cache usage (needs monitoring; without it the
    replica count stays fixed); ``none``: fixed ``replicas``."""
    target_waiting_requests: int = 5
    """Requests waiting per replica above which KEDA adds replicas."""
    target_kv_cache_usage: float = 0.8
    """Average KV-cache usage (0 to 1) above which KEDA adds replicas."""
    request_timeout: str = "5m"
    """Longest a request may take through the gateway, ``<n>s`` or ``<n>m`` (the route's ``timeouts.request``; on GKE
    the InferencePool's backend policy)."""

    @property
    def api_model_name(self) -> str:
        """The name clients request and metrics carry: ``servedModelName``, else the model id."""
        return self.served_model_name or self.model


def parse_llm(raw: Mapping, pool_names: list[str]) -> Optional[LlmConfig]:
    """The ``llm`` section, or None when the stack serves no LLM."""
    from ..fields import DNS_LABEL, MODEL_ID, as_mapping, check_keys, join, read_enum, read_float, read_int, read_str

    if raw.get("llm") is None:
        return None
    path = "llm"
    sec = as_mapping(raw["llm"], path)
    check_keys(sec, KEYS, path)
    model = read_str(sec, "model", path, required=True)
    if not MODEL_ID.match(model):
        raise ConfigError(join(path, "model"), f"'{model}' is not a Hugging Face model id such as org/name")
    pool = read_str(sec, "pool", path, None)
    if pool is not None and pool not in pool_names:
        raise ConfigError(join(path, "pool"), f"no node pool named '{pool}'{did_you_mean(pool, pool_names)}")
    served = read_str(sec, "servedModelName", path, "")
    if served and not MODEL_ID.match(served):
        raise ConfigError(join(path, "servedModelName"), f"'{served}' is not a model name such as org/name")
    namespace = read_str(sec, "namespace", path, DEFAULT_NAMESPACE)
    if not DNS_LABEL.match(namespace):
        raise ConfigError(join(path, "namespace"), f"'{namespace}' is not a DNS label")
    replicas = read_int(sec, "replicas", path, 1, minimum=1)
    max_replicas = read_int(sec, "maxReplicas", path, None, minimum=1)
    if max_replicas is not None and max_replicas < replicas:
        raise ConfigError(join(path, "maxReplicas"), f"must be >= replicas ({replicas}), got {max_replicas}")
    llm = LlmConfig(
        model=model, pool=pool, served_model_name=served, namespace=namespace,
        image=_non_empty(read_str(sec, "image", path, None), join(path, "image")),
        replicas=replicas, max_replicas=max_replicas,
        tensor_parallel_size=read_int(sec, "tensorParallelSize", path, None, minimum=1),
        max_model_len=read_int(sec, "maxModelLen", path, None, minimum=1),
        dtype=read_enum(sec, "dtype", path, llm_models.DTYPES, "auto"),
        quantization=read_enum(sec, "quantization", path, llm_models.QUANTIZATIONS, None),
        gpu_memory_utilization=read_float(sec, "gpuMemoryUtilization", path, 0.9, 0.1, 1.0),
        model_source=read_enum(sec, "modelSource", path, MODEL_SOURCES, "huggingface"),
        model_claim=_object_name(read_str(sec, "modelClaim", path, None), join(path, "modelClaim"),
                                 "a PersistentVolumeClaim name"),
        model_path=read_str(sec, "modelPath", path, ""),
        cache_size=read_str(sec, "cacheSize", path, None),
        cache_storage_class=_object_name(read_str(sec, "cacheStorageClass", path, None),
                                         join(path, "cacheStorageClass"), "a StorageClass name"),
        cache_access_mode=read_enum(sec, "cacheAccessMode", path, CACHE_ACCESS_MODES, "ReadWriteOnce"),
        hf_token_secret=_object_name(read_str(sec, "hfTokenSecret", path, None), join(path, "hfTokenSecret"),
                                     "a Secret name (the Secret holding the token, not the token)"),
        autoscaler=read_enum(sec, "autoscaler", path, AUTOSCALERS, "keda"),
        target_waiting_requests=read_int(sec, "targetWaitingRequests", path, 5, minimum=1),
        target_kv_cache_usage=read_float(sec, "targetKvCacheUsage", path, 0.8, 0.1, 1.0),
        request_timeout=read_str(sec, "requestTimeout", path, "5m"),
    )
    _check_combinations(sec, llm)
    return llm


def _non_empty(value: Optional[str], path: str) -> Optional[str]:
    if value is not None and not value.strip():
        raise ConfigError(path, "must not be empty")
    return value


def _object_name(value: Optional[str], path: str, what: str) -> Optional[str]:
    if value is not None and not OBJECT_NAME.match(value):
        raise ConfigError(path, f"'{value}' is not {what}")
    return value


def _check_combinations(sec: Mapping, llm: LlmConfig) -> None:
    """Keys that would configure nothing with the others given, and values each key's own reader cannot judge."""
    def refuse(key: str, needs: str) -> None:
        if sec.get(key) is not None:
            raise ConfigError(f"llm.{key}", f"takes effect only {needs}")

    if llm.model_source == "pvc":
        if llm.model_claim is None:
            raise ConfigError("llm.modelClaim", "is required with modelSource pvc (the claim holding the weights)")
        for key in ("cacheSize", "cacheStorageClass", "cacheAccessMode", "hfTokenSecret"):
            refuse(key, "with modelSource huggingface (the download into the cache)")
    else:
        for key in ("modelClaim", "modelPath"):
            refuse(key, "with modelSource pvc")
    if llm.model_path and not MODEL_PATH.match(llm.model_path):
        raise ConfigError("llm.modelPath", f"'{llm.model_path}' is not a relative path inside the claim")
    if llm.cache_size is not None and not re.fullmatch(r"[1-9]\d*(Mi|Gi|Ti)", llm.cache_size):
        raise ConfigError("llm.cacheSize", f"'{llm.cache_size}' is not a storage quantity such as 100Gi")
    if llm.autoscaler == "none":
        for key in ("maxReplicas", "targetWaitingRequests", "targetKvCacheUsage"):
            refuse(key, "with autoscaler keda")
    if not TIMEOUT.match(llm.request_timeout):
        raise ConfigError("llm.requestTimeout", f"'{llm.request_timeout}' is not a duration such as 300s or 5m (whole "
                                                "seconds or minutes)")


# ---------------------------------------------------------------------------------------------------------
# Decisions the check and the Kubernetes layer share


def llm_pool(llm: LlmConfig, pools: Sequence[GpuPool]) -> Optional[GpuPool]:
    """``llm.pool`` when set, else the inference pool rule (`pools.inference_pool`)."""
    named = next((p for p in pools if p.name == llm.pool), None)
    return named or inference_pool(list(pools))


def tensor_parallel_size(llm: LlmConfig, pool: GpuPool) -> int:
    """GPUs per replica: the configured size, else every GPU of one node (one MIG instance on MIG pools)."""
    if llm.tensor_parallel_size is not None:
        return llm.tensor_parallel_size
    return 1 if pool.sharing.mode == "mig" else pool.gpus_per_node


def devices_per_node(pool: GpuPool) -> int:
    """GPUs (MIG instances on MIG pools) one node of the pool offers a replica."""
    if pool.sharing.mode == "mig" and pool.sharing.mig_profile:
        return pool.gpus_per_node * catalog.mig_instances_per_gpu(catalog.GPU_MODELS[pool.gpu_model],
                                                                  pool.sharing.mig_profile)
    return pool.gpus_per_node


def replica_capacity(pool: GpuPool, tensor_parallel: int) -> int:
    """Replicas the pool holds at its largest (a replica's GPUs are on one node)."""
    return pool.max_nodes * (devices_per_node(pool) // tensor_parallel)


def max_replicas(llm: LlmConfig, pool: GpuPool) -> int:
    """The autoscaler's ceiling: ``maxReplicas``, else 4 or what the pool holds, never below ``replicas``."""
    if llm.max_replicas is not None:
        return llm.max_replicas
    return max(llm.replicas, min(4, replica_capacity(pool, tensor_parallel_size(llm, pool))))


def cache_size(llm: LlmConfig) -> str:
    """The cache volume's size: ``cacheSize``, else 1.5 times the checkpoint's weights rounded up to 10Gi (at least
    20Gi: tokenizer, configs and the Hub's own bookkeeping beside the weights), else `DEFAULT_CACHE_SIZE`."""
    if llm.cache_size:
        return llm.cache_size
    weights = llm_models.weight_bytes(llm.model)  # the checkpoint as published: dtype auto, not quantized yet
    if weights is None:
        return DEFAULT_CACHE_SIZE
    return f"{max(20, math.ceil(weights * 1.5 / llm_models.GIB / 10) * 10)}Gi"


def device_memory(pool: GpuPool) -> tuple[float, str]:
    """(GiB, description) of the device one GPU of the pool gives a replica: a whole GPU or a MIG instance."""
    model = catalog.GPU_MODELS.get(pool.gpu_model)
    name = model.display_name if model is not None else pool.gpu_model
    if pool.sharing.mode == "mig" and pool.sharing.mig_profile:
        return llm_models.mig_memory_gib(pool.sharing.mig_profile), f"{name} {pool.sharing.mig_profile} MIG instance"
    return pool.gpu_memory_gib, name


# ---------------------------------------------------------------------------------------------------------
# The stack-level check


def pool_problem(llm: LlmConfig, pool: GpuPool) -> Optional[tuple[str, str]]:
    """(key, problem) when ``pool`` cannot run the service as configured, else None. Keys are ``llm`` paths."""
    where = "pool" if llm.pool else ""
    if pool.vendor != catalog.NVIDIA:
        return where, (f"pool '{pool.name}' has {catalog.VENDORS[pool.vendor].display_name} accelerators; the LLM "
                       "service runs vLLM's CUDA image, on NVIDIA pools only")
    if pool.sharing.mode in SHARED_SHARING_MODES:
        return where, (f"pool '{pool.name}' shares each GPU ({pool.sharing.mode}, {pool.sharing.replicas} per GPU); "
                       "vLLM takes gpuMemoryUtilization of the whole GPU's memory, so two replicas on one GPU run "
                       "out of memory: use a pool with exclusive or MIG GPUs")
    tensor_parallel = tensor_parallel_size(llm, pool)
    if pool.sharing.mode == "mig" and tensor_parallel > 1:
        return "tensorParallelSize", (f"pool '{pool.name}' hands out MIG instances, which tensor parallelism cannot "
                                      f"join (no NCCL peer-to-peer between MIG instances); use 1, got "
                                      f"{tensor_parallel}")
    if tensor_parallel > pool.gpus_per_node:
        return "tensorParallelSize", (f"{_gpus(tensor_parallel)} per replica, but the nodes of pool '{pool.name}' "
                                      f"have {pool.gpus_per_node} (a replica runs on one node)")
    if pool.gpus_per_node % tensor_parallel:
        return "tensorParallelSize", (f"must divide the {pool.gpus_per_node} GPUs of a node of pool '{pool.name}' "
                                      f"(replicas fill nodes without stranding GPUs), got {tensor_parallel}")
    capacity = replica_capacity(pool, tensor_parallel)
    for key, replicas in (("replicas", llm.replicas), ("maxReplicas", max_replicas(llm, pool))):
        if replicas > capacity:
            return key, (f"{replicas} replicas of {_gpus(tensor_parallel)} need more than pool '{pool.name}' has "
                         f"at its largest ({pool.max_nodes} nodes: {capacity} replicas)")
    memory, device = device_memory(pool)
    problem = llm_models.memory_problem(llm.model, llm.dtype, llm.quantization, tensor_parallel, memory, device,
                                        llm.gpu_memory_utilization, pool.name)
    if problem is not None:
        return "model", problem
    return None


def _gpus(count: int) -> str:
    return f"{count} GPU{'s' if count != 1 else ''}"


def check_llm(config: Any) -> None:
    """The ``llm`` section against the stack (a `PlatformConfig`): its pool, its gateway. One `ConfigError`."""
    llm: Optional[LlmConfig] = config.llm
    if llm is None:
        return
    pools = config.gpu_pools()
    pool = llm_pool(llm, pools)
    if pool is None:
        raise ConfigError("llm", "the stack has no node pool to run the model server on")
    problem = pool_problem(llm, pool)
    if problem is not None:
        key, text = problem
        raise ConfigError(f"llm.{key}" if key else "llm", text)
    if not config.gateway.enabled:
        raise ConfigError("llm", "is published through the gateway (an HTTPRoute to its InferencePool), and "
                                 "gateway.enabled is false")
