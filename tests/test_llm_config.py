"""The ``llm`` section: parsing, the checks against the stack's pools and gateway (the GPU-memory guard among them),
and the defaults derived from the pool; every refusal one line naming the key."""

import re

import pytest

from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.serving import llm_config, llm_models

L4 = {"name": "l4-infer", "instanceType": "g6.2xlarge", "role": "inference", "minNodes": 1, "maxNodes": 4}
H100 = {"name": "h100", "instanceType": "p5.48xlarge", "role": "training", "maxNodes": 2}
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def stack(llm, pools=(L4,), **extra):
    return {"cloud": "aws", "region": "us-west-2", "nodePools": [dict(p) for p in pools], "llm": llm, **extra}


def parsed(llm, pools=(L4,), **extra):
    return parse_config(stack(llm, pools, **extra), "s")


def refused(llm, message, pools=(L4,), **extra):
    with pytest.raises(ConfigError) as err:
        parsed(llm, pools, **extra)
    assert str(err.value) == message
    return err.value


# ---------------------------------------------------------------------------------------------------------
# Parsing


def test_no_section_no_llm():
    assert parse_config({"cloud": "aws", "region": "us-west-2", "nodePools": [L4]}, "s").llm is None


def test_a_model_alone_takes_every_default():
    llm = parsed({"model": MODEL}).llm
    assert llm == llm_config.LlmConfig(model=MODEL)
    assert (llm.namespace, llm.replicas, llm.dtype, llm.gpu_memory_utilization, llm.model_source,
            llm.cache_access_mode, llm.autoscaler, llm.target_waiting_requests, llm.target_kv_cache_usage,
            llm.request_timeout) == ("llm", 1, "auto", 0.9, "huggingface", "ReadWriteOnce", "keda", 5, 0.8, "5m")
    assert llm.api_model_name == MODEL


def test_every_key_is_read():
    llm = parsed({"model": MODEL, "pool": "h100", "servedModelName": "llama", "namespace": "chat",
                  "image": "docker.io/vllm/vllm-openai:v0.31.0-cu129", "replicas": 2, "maxReplicas": 3,
                  "tensorParallelSize": 4, "maxModelLen": 8192, "dtype": "bfloat16", "quantization": "fp8",
                  "gpuMemoryUtilization": 0.85, "cacheSize": "50Gi", "cacheStorageClass": "efs-sc",
                  "cacheAccessMode": "ReadWriteMany", "hfTokenSecret": "hf-token", "targetWaitingRequests": 8,
                  "targetKvCacheUsage": 0.7, "requestTimeout": "10m"}, pools=(L4, H100)).llm
    assert llm == llm_config.LlmConfig(
        model=MODEL, pool="h100", served_model_name="llama", namespace="chat",
        image="docker.io/vllm/vllm-openai:v0.31.0-cu129", replicas=2, max_replicas=3, tensor_parallel_size=4,
        max_model_len=8192, dtype="bfloat16", quantization="fp8", gpu_memory_utilization=0.85, cache_size="50Gi",
        cache_storage_class="efs-sc", cache_access_mode="ReadWriteMany", hf_token_secret="hf-token",
        target_waiting_requests=8, target_kv_cache_usage=0.7, request_timeout="10m")
    assert llm.api_model_name == "llama"
    pvc = parsed({"model": MODEL, "modelSource": "pvc", "modelClaim": "weights", "modelPath": "llama/8b",
                  "autoscaler": "none"}).llm
    assert (pvc.model_source, pvc.model_claim, pvc.model_path, pvc.autoscaler) == ("pvc", "weights", "llama/8b",
                                                                                   "none")


@pytest.mark.parametrize(("llm", "message"), [
    ({}, "s: llm.model: is required"),
    ("llama", "s: llm: must be a mapping, got str"),
    ({"model": MODEL, "modell": 1}, "s: llm.modell: unknown key; did you mean 'model'?"),
    ({"model": "not a model"}, "s: llm.model: 'not a model' is not a Hugging Face model id such as org/name"),
    ({"model": MODEL, "pool": "l4"}, "s: llm.pool: no node pool named 'l4'"),
    ({"model": MODEL, "pool": "l4-infr"}, "s: llm.pool: no node pool named 'l4-infr'; did you mean 'l4-infer'?"),
    ({"model": MODEL, "namespace": "LLM"}, "s: llm.namespace: 'LLM' is not a DNS label"),
    ({"model": MODEL, "servedModelName": "a b"}, "s: llm.servedModelName: 'a b' is not a model name such as org/name"),
    ({"model": MODEL, "replicas": 0}, "s: llm.replicas: must be >= 1, got 0"),
    ({"model": MODEL, "replicas": 3, "maxReplicas": 2}, "s: llm.maxReplicas: must be >= replicas (3), got 2"),
    ({"model": MODEL, "dtype": "fp16"},
     "s: llm.dtype: 'fp16' is not one of auto, bfloat16, float16, half, float, float32"),
    ({"model": MODEL, "quantization": "aqlm"}, "s: llm.quantization: 'aqlm' is not one of fp8, modelopt, awq, "
                                               "awq_marlin, gptq, gptq_marlin, bitsandbytes, mxfp4, modelopt_fp4, "
                                               "compressed-tensors"),
    ({"model": MODEL, "gpuMemoryUtilization": 1.5}, "s: llm.gpuMemoryUtilization: must be between 0.1 and 1, got 1.5"),
    ({"model": MODEL, "maxModelLen": 0}, "s: llm.maxModelLen: must be >= 1, got 0"),
    ({"model": MODEL, "image": " "}, "s: llm.image: must not be empty"),
    ({"model": MODEL, "modelSource": "s3"}, "s: llm.modelSource: 's3' is not one of huggingface, pvc"),
    ({"model": MODEL, "modelSource": "pvc"},
     "s: llm.modelClaim: is required with modelSource pvc (the claim holding the weights)"),
    ({"model": MODEL, "modelClaim": "w"}, "s: llm.modelClaim: takes effect only with modelSource pvc"),
    ({"model": MODEL, "modelPath": "x"}, "s: llm.modelPath: takes effect only with modelSource pvc"),
    ({"model": MODEL, "modelSource": "pvc", "modelClaim": "w", "modelPath": "../etc"},
     "s: llm.modelPath: '../etc' is not a relative path inside the claim"),
    ({"model": MODEL, "modelSource": "pvc", "modelClaim": "w", "modelPath": "/abs"},
     "s: llm.modelPath: '/abs' is not a relative path inside the claim"),
    ({"model": MODEL, "modelSource": "pvc", "modelClaim": "w", "cacheSize": "10Gi"},
     "s: llm.cacheSize: takes effect only with modelSource huggingface (the download into the cache)"),
    ({"model": MODEL, "modelSource": "pvc", "modelClaim": "w", "hfTokenSecret": "t"},
     "s: llm.hfTokenSecret: takes effect only with modelSource huggingface (the download into the cache)"),
    ({"model": MODEL, "modelSource": "pvc", "modelClaim": "Weights"},
     "s: llm.modelClaim: 'Weights' is not a PersistentVolumeClaim name"),
    ({"model": MODEL, "cacheSize": "100GB"}, "s: llm.cacheSize: '100GB' is not a storage quantity such as 100Gi"),
    ({"model": MODEL, "cacheAccessMode": "ReadOnlyMany"},
     "s: llm.cacheAccessMode: 'ReadOnlyMany' is not one of ReadWriteOnce, ReadWriteMany; did you mean "
     "'ReadWriteMany'?"),
    ({"model": MODEL, "cacheStorageClass": "EFS"}, "s: llm.cacheStorageClass: 'EFS' is not a StorageClass name"),
    ({"model": MODEL, "hfTokenSecret": "hf_abcdefghijklmnop"},
     "s: llm.hfTokenSecret: 'hf_abcdefghijklmnop' is not a Secret name (the Secret holding the token, not the "
     "token)"),
    ({"model": MODEL, "autoscaler": "hpa"}, "s: llm.autoscaler: 'hpa' is not one of keda, none"),
    ({"model": MODEL, "autoscaler": "none", "maxReplicas": 2}, "s: llm.maxReplicas: takes effect only with autoscaler "
                                                               "keda"),
    ({"model": MODEL, "autoscaler": "none", "targetKvCacheUsage": 0.5},
     "s: llm.targetKvCacheUsage: takes effect only with autoscaler keda"),
    ({"model": MODEL, "targetKvCacheUsage": 80}, "s: llm.targetKvCacheUsage: must be between 0.1 and 1, got 80"),
    ({"model": MODEL, "targetWaitingRequests": 0}, "s: llm.targetWaitingRequests: must be >= 1, got 0"),
    ({"model": MODEL, "requestTimeout": "1h"}, "s: llm.requestTimeout: '1h' is not a duration such as 300s or 5m "
                                               "(whole seconds or minutes)"),
])
def test_bad_values_are_one_line_naming_the_key(llm, message):
    refused(llm, message)


# ---------------------------------------------------------------------------------------------------------
# Against the pools


def test_the_pool_defaults_to_the_inference_pool_rule():
    cfg = parsed({"model": MODEL}, pools=(H100, L4))
    assert llm_config.llm_pool(cfg.llm, cfg.gpu_pools()).name == "l4-infer"
    cfg = parsed({"model": MODEL, "pool": "h100"}, pools=(H100, L4))
    assert llm_config.llm_pool(cfg.llm, cfg.gpu_pools()).name == "h100"


def test_tensor_parallelism_defaults_to_a_whole_node_and_must_divide_it():
    cfg = parsed({"model": MODEL, "pool": "h100"}, pools=(L4, H100))
    h100 = cfg.gpu_pools()[1]
    assert llm_config.tensor_parallel_size(cfg.llm, h100) == 8
    assert llm_config.max_replicas(cfg.llm, h100) == 2  # two nodes of one 8-GPU replica each
    assert llm_config.tensor_parallel_size(parsed({"model": MODEL, "pool": "h100", "tensorParallelSize": 2},
                                                  pools=(L4, H100)).llm, h100) == 2
    refused({"model": MODEL, "pool": "h100", "tensorParallelSize": 3},
            "s: llm.tensorParallelSize: must divide the 8 GPUs of a node of pool 'h100' (replicas fill nodes without "
            "stranding GPUs), got 3", pools=(L4, H100))
    refused({"model": MODEL, "pool": "h100", "tensorParallelSize": 16},
            "s: llm.tensorParallelSize: 16 GPUs per replica, but the nodes of pool 'h100' have 8 (a replica runs on "
            "one node)", pools=(L4, H100))


def test_replicas_must_fit_the_pool_at_its_largest():
    refused({"model": MODEL, "replicas": 5}, "s: llm.replicas: 5 replicas of 1 GPU need more than pool 'l4-infer' "
                                             "has at its largest (4 nodes: 4 replicas)")
    refused({"model": MODEL, "pool": "h100", "tensorParallelSize": 4, "maxReplicas": 5},
            "s: llm.maxReplicas: 5 replicas of 4 GPUs need more than pool 'h100' has at its largest (2 nodes: 4 "
            "replicas)", pools=(L4, H100))
    # The default ceiling follows the pool: 4 replicas at most, never more than it holds, never below replicas.
    cfg = parsed({"model": MODEL, "pool": "h100", "tensorParallelSize": 4, "replicas": 3}, pools=(L4, H100))
    assert llm_config.max_replicas(cfg.llm, cfg.gpu_pools()[1]) == 4
    cfg = parsed({"model": MODEL, "replicas": 2})
    assert llm_config.max_replicas(cfg.llm, cfg.gpu_pools()[0]) == 4


def test_shared_and_foreign_pools_are_refused():
    shared = {**L4, "sharing": {"mode": "time-slicing", "replicas": 4}}
    refused({"model": MODEL}, "s: llm: pool 'l4-infer' shares each GPU (time-slicing, 4 per GPU); vLLM takes "
                              "gpuMemoryUtilization of the whole GPU's memory, so two replicas on one GPU run out of "
                              "memory: use a pool with exclusive or MIG GPUs", pools=(shared,))
    refused({"model": MODEL, "pool": "l4-infer"}, "s: llm.pool: pool 'l4-infer' shares each GPU (time-slicing, 4 "
                                                  "per GPU); vLLM takes gpuMemoryUtilization of the whole GPU's "
                                                  "memory, so two replicas on one GPU run out of memory: use a pool "
                                                  "with exclusive or MIG GPUs", pools=(shared,))
    neuron = {"name": "inf2", "instanceType": "inf2.xlarge", "maxNodes": 2}
    refused({"model": MODEL}, "s: llm: pool 'inf2' has AWS Neuron accelerators; the LLM service runs vLLM's CUDA "
                              "image, on NVIDIA pools only", pools=(neuron,), training={"enabled": False})


def test_mig_pools_serve_one_instance_per_replica():
    existing = {"cloud": "existing", "networkPolicyEnforced": True, "nodePools": [
        {"name": "a100", "gpuModel": "a100-80gb", "gpusPerNode": 4, "minNodes": 1, "maxNodes": 2,
         "sharing": {"mode": "mig", "profile": "3g.40gb"}}]}
    cfg = parse_config({**existing, "llm": {"model": MODEL}}, "s")
    pool = cfg.gpu_pools()[0]
    assert llm_config.tensor_parallel_size(cfg.llm, pool) == 1
    assert llm_config.device_memory(pool) == (40, "NVIDIA A100 80GB 3g.40gb MIG instance")
    assert llm_config.replica_capacity(pool, 1) == 16  # 2 nodes x 4 GPUs x 2 instances of 3g.40gb
    with pytest.raises(ConfigError, match=re.escape(
            "s: llm.tensorParallelSize: pool 'a100' hands out MIG instances, which tensor parallelism cannot join "
            "(no NCCL peer-to-peer between MIG instances); use 1, got 2")):
        parse_config({**existing, "llm": {"model": MODEL, "tensorParallelSize": 2}}, "s")
    # 70B in bfloat16 cannot fit one 40 GB instance.
    with pytest.raises(ConfigError, match=re.escape("40 GiB NVIDIA A100 80GB 3g.40gb MIG instance")):
        parse_config({**existing, "llm": {"model": "meta-llama/Llama-3.3-70B-Instruct"}}, "s")


# ---------------------------------------------------------------------------------------------------------
# The GPU-memory guard


def test_a_model_too_large_for_the_pool_is_refused_with_the_numbers():
    refused({"model": "meta-llama/Llama-3.1-70B-Instruct"},
            "s: llm.model: meta-llama/Llama-3.1-70B-Instruct has 70.6B parameters: 131.5 GiB of weights in bfloat16 "
            "(dtype auto), more than one replica holds on pool 'l4-infer' (1 x 24 GiB NVIDIA L4 x "
            "gpuMemoryUtilization 0.9 = 21.6 GiB); choose a pool with more GPU memory, a larger tensorParallelSize "
            "or a quantization")


def test_the_guard_follows_precision_parallelism_and_utilisation():
    # Qwen3-32B: 61.1 GiB in bfloat16, 30.5 GiB in FP8, 15.3 GiB at 4 bits; one L4 holds 21.6 GiB.
    refused({"model": "Qwen/Qwen3-32B", "quantization": "fp8"},
            "s: llm.model: Qwen/Qwen3-32B has 32.8B parameters: 30.5 GiB of weights in fp8 (8-bit weights), more "
            "than one replica holds on pool 'l4-infer' (1 x 24 GiB NVIDIA L4 x gpuMemoryUtilization 0.9 = 21.6 "
            "GiB); choose a pool with more GPU memory, a larger tensorParallelSize or a quantization")
    assert parsed({"model": "Qwen/Qwen3-32B", "quantization": "awq"}).llm.quantization == "awq"
    # float32 doubles the weights: 8B no longer fits an L4.
    refused({"model": MODEL, "dtype": "float32"},
            "s: llm.model: meta-llama/Llama-3.1-8B-Instruct has 8.03B parameters: 29.9 GiB of weights in float32, more "
            "than one replica holds on pool 'l4-infer' (1 x 24 GiB NVIDIA L4 x gpuMemoryUtilization 0.9 = 21.6 "
            "GiB); choose a pool with more GPU memory, a larger tensorParallelSize or a quantization")
    # A lower utilisation leaves less for the weights.
    refused({"model": MODEL, "gpuMemoryUtilization": 0.6},
            "s: llm.model: meta-llama/Llama-3.1-8B-Instruct has 8.03B parameters: 15.0 GiB of weights in bfloat16 "
            "(dtype auto), more than one replica holds on pool 'l4-infer' (1 x 24 GiB NVIDIA L4 x "
            "gpuMemoryUtilization 0.6 = 14.4 GiB); choose a pool with more GPU memory, a larger tensorParallelSize "
            "or a quantization")
    # 70B over a whole H100 node fits (8 x 80 x 0.9 = 576 GiB); over two GPUs it does not (144 GiB).
    assert parsed({"model": "meta-llama/Llama-3.1-70B-Instruct", "pool": "h100"}, pools=(L4, H100)).llm
    assert parsed({"model": "meta-llama/Llama-3.1-70B-Instruct", "pool": "h100", "tensorParallelSize": 2},
                  pools=(L4, H100)).llm
    refused({"model": "meta-llama/Llama-3.1-70B-Instruct", "pool": "h100", "tensorParallelSize": 1},
            "s: llm.model: meta-llama/Llama-3.1-70B-Instruct has 70.6B parameters: 131.5 GiB of weights in bfloat16 "
            "(dtype auto), more than one replica holds on pool 'h100' (1 x 80 GiB NVIDIA H100 80GB x "
            "gpuMemoryUtilization 0.9 = 72.0 GiB); choose a pool with more GPU memory, a larger tensorParallelSize "
            "or a quantization", pools=(L4, H100))


def test_unknown_models_are_not_checked_and_ids_match_case_insensitively():
    assert parsed({"model": "acme/huge-1T"}).llm.model == "acme/huge-1T"
    assert llm_models.known_model("META-LLAMA/llama-3.1-70b-instruct").parameters_billions == 70.6
    assert llm_models.weight_bytes("acme/huge-1T") is None


def test_the_size_table_and_widths():
    assert {k: m.parameters_billions for k, m in llm_models.KNOWN_MODELS.items()} == {
        "meta-llama/llama-3.1-8b-instruct": 8.03, "meta-llama/llama-3.1-70b-instruct": 70.6,
        "meta-llama/llama-3.3-70b-instruct": 70.6, "meta-llama/llama-3.2-1b-instruct": 1.24,
        "meta-llama/llama-3.2-3b-instruct": 3.21, "qwen/qwen3-0.6b": 0.6, "qwen/qwen3-8b": 8.2,
        "qwen/qwen3-14b": 14.8, "qwen/qwen3-32b": 32.8, "mistralai/mistral-7b-instruct-v0.3": 7.25}
    assert all(m.source for m in llm_models.KNOWN_MODELS.values())
    assert llm_models.weight_bytes(MODEL) == pytest.approx(8.03e9 * 2)
    assert llm_models.weight_bytes(MODEL, "float32") == pytest.approx(8.03e9 * 4)
    assert llm_models.weight_bytes(MODEL, "float32", "fp8") == pytest.approx(8.03e9)  # quantization wins over dtype
    assert llm_models.weight_bytes(MODEL, quantization="gptq") == pytest.approx(8.03e9 / 2)
    assert llm_models.mig_memory_gib("1g.10gb") == 10
    with pytest.raises(ValueError, match="'3g' is not a MIG profile"):
        llm_models.mig_memory_gib("3g")


def test_memory_problem_is_none_when_it_fits_exactly():
    # 8.03e9 x 2 bytes = 14.96 GiB: fits 15 GiB, not 14.9 GiB.
    assert llm_models.memory_problem(MODEL, "auto", None, 1, 15, "GPU", 1.0, "p") is None
    assert llm_models.memory_problem(MODEL, "auto", None, 1, 14.9, "GPU", 1.0, "p") is not None


def test_the_cache_follows_the_checkpoint():
    assert llm_config.cache_size(llm_config.LlmConfig(model=MODEL)) == "30Gi"  # 15 GiB x 1.5, up to 10Gi
    assert llm_config.cache_size(llm_config.LlmConfig(model="meta-llama/Llama-3.1-70B-Instruct")) == "200Gi"
    assert llm_config.cache_size(llm_config.LlmConfig(model="Qwen/Qwen3-0.6B")) == "20Gi"  # at least 20Gi
    assert llm_config.cache_size(llm_config.LlmConfig(model="acme/x")) == "100Gi"
    assert llm_config.cache_size(llm_config.LlmConfig(model=MODEL, cache_size="64Gi")) == "64Gi"
    # A quantization applied at load time does not shrink the download.
    assert llm_config.cache_size(llm_config.LlmConfig(model=MODEL, quantization="fp8")) == "30Gi"


def test_requests_per_gpu_follow_the_node_shape():
    from gpu_platform.serving import llm_objects

    l4 = GpuPool("l4", "aws", "g6.2xlarge", "l4", 1, 24, 0, 4, vcpus_per_node=8, memory_gib_per_node=32)
    h100 = GpuPool("h100", "aws", "p5.48xlarge", "h100", 8, 80, 0, 2, vcpus_per_node=192, memory_gib_per_node=2048)
    bare = GpuPool("bare", "existing", "", "h100", 8, 80, 0, 2)
    mig = GpuPool("mig", "existing", "", "a100-80gb", 4, 80, 0, 2, vcpus_per_node=64, memory_gib_per_node=512,
                  sharing=Sharing("mig", 1, "3g.40gb"))
    assert llm_objects.server_requests(l4, 1) == ("5", "22Gi")
    assert llm_objects.server_requests(h100, 8) == ("134", "1433Gi")
    assert llm_objects.server_requests(h100, 2) == ("33", "358Gi")
    assert llm_objects.server_requests(bare, 2) == ("8", "32Gi")
    assert llm_objects.server_requests(mig, 1) == ("5", "44Gi")  # 8 instances per node


# ---------------------------------------------------------------------------------------------------------
# Against the gateway


def test_the_llm_needs_the_gateway():
    refused({"model": MODEL}, "s: llm: is published through the gateway (an HTTPRoute to its InferencePool), and "
                              "gateway.enabled is false", gateway={"enabled": False})
