"""What the LLM service knows about models before it runs one: sizes of known checkpoints, the width of a weight at
each precision, and the GPU-memory guard built on them.

Data apart from the one decision (`memory_problem`): a model missing from `KNOWN_MODELS` is not checked (vLLM itself
refuses at start-up, minutes into a rollout, when its weights do not fit); a checkpoint that is already quantized
(``...-AWQ``, ``...-FP8``) is its own model id and is not in the table either.
"""

import re
from dataclasses import dataclass
from typing import Optional

GIB = 2**30


@dataclass(frozen=True)
class KnownModel:
    """A Hugging Face checkpoint whose size the guard knows."""

    model_id: str
    parameters_billions: float
    """Parameters in billions, as the model card (or the Hub page's safetensors summary) states them."""
    source: str


KNOWN_MODELS: dict[str, KnownModel] = {m.model_id.lower(): m for m in (
    # Meta Llama: the Hub pages' safetensors summaries ("Model size 8.03B params"); the cards say "8B", "70B".
    KnownModel("meta-llama/Llama-3.1-8B-Instruct", 8.03, "huggingface.co/meta-llama/Llama-3.1-8B-Instruct"),
    KnownModel("meta-llama/Llama-3.1-70B-Instruct", 70.6, "huggingface.co/meta-llama/Llama-3.1-70B-Instruct"),
    KnownModel("meta-llama/Llama-3.3-70B-Instruct", 70.6, "huggingface.co/meta-llama/Llama-3.3-70B-Instruct"),
    KnownModel("meta-llama/Llama-3.2-1B-Instruct", 1.24, "huggingface.co/meta-llama/Llama-3.2-1B-Instruct"),
    KnownModel("meta-llama/Llama-3.2-3B-Instruct", 3.21, "huggingface.co/meta-llama/Llama-3.2-3B-Instruct"),
    # Qwen3 dense models: the cards' "Number of Parameters".
    KnownModel("Qwen/Qwen3-0.6B", 0.6, "huggingface.co/Qwen/Qwen3-0.6B model card"),
    KnownModel("Qwen/Qwen3-8B", 8.2, "huggingface.co/Qwen/Qwen3-8B model card"),
    KnownModel("Qwen/Qwen3-14B", 14.8, "huggingface.co/Qwen/Qwen3-14B model card"),
    KnownModel("Qwen/Qwen3-32B", 32.8, "huggingface.co/Qwen/Qwen3-32B model card"),
    # Mistral: the Hub page's safetensors summary.
    KnownModel("mistralai/Mistral-7B-Instruct-v0.3", 7.25, "huggingface.co/mistralai/Mistral-7B-Instruct-v0.3"),
)}
"""Known checkpoints by lower-case id (the Hub resolves ids case-insensitively). All are bfloat16 checkpoints."""

DTYPE_BYTES: dict[str, float] = {"auto": 2, "bfloat16": 2, "float16": 2, "half": 2, "float": 4, "float32": 4}
"""Bytes per weight of each ``vllm serve --dtype`` choice; ``auto`` keeps the checkpoint's precision, 16-bit for
every model of `KNOWN_MODELS`."""
QUANTIZATION_BYTES: dict[str, float] = {
    "fp8": 1, "modelopt": 1,
    "awq": 0.5, "awq_marlin": 0.5, "gptq": 0.5, "gptq_marlin": 0.5, "bitsandbytes": 0.5, "mxfp4": 0.5,
    "modelopt_fp4": 0.5, "compressed-tensors": 0.5,
}
"""The ``vllm serve --quantization`` methods the platform accepts (vLLM's ``QuantizationMethods`` at v0.31 holds
these among others; the rest are engine internals or hardware-specific) and the narrowest weight each stores: FP8
one byte; AWQ, GPTQ, bitsandbytes and the FP4 formats four bits (GPTQ also has 8-bit checkpoints, compressed-tensors
W8A8 ones: the guard takes the narrowest, so it refuses only what cannot fit)."""
DTYPES = tuple(DTYPE_BYTES)
QUANTIZATIONS = tuple(QUANTIZATION_BYTES)


def known_model(model_id: str) -> Optional[KnownModel]:
    """The table's entry for ``model_id``, or None."""
    return KNOWN_MODELS.get(model_id.lower())


def weight_bytes(model_id: str, dtype: str = "auto", quantization: Optional[str] = None) -> Optional[float]:
    """Bytes of the model's weights at this precision (quantization wins over dtype); None for an unknown model."""
    model = known_model(model_id)
    if model is None:
        return None
    width = QUANTIZATION_BYTES[quantization] if quantization else DTYPE_BYTES[dtype]
    return model.parameters_billions * 1e9 * width


def mig_memory_gib(profile: str) -> int:
    """The memory of one MIG instance from its profile name (``3g.40gb`` -> 40)."""
    match = re.fullmatch(r"\d+g\.(\d+)gb", profile)
    if match is None:
        raise ValueError(f"'{profile}' is not a MIG profile such as 3g.40gb")
    return int(match.group(1))


def precision(dtype: str, quantization: Optional[str]) -> str:
    """The weights' precision in words, for messages."""
    if quantization:
        bits = QUANTIZATION_BYTES[quantization] * 8
        return f"{quantization} ({bits:g}-bit weights)"
    return "bfloat16 (dtype auto)" if dtype == "auto" else dtype


def memory_problem(model_id: str, dtype: str, quantization: Optional[str], tensor_parallel_size: int,
                   device_memory_gib: float, device: str, gpu_memory_utilization: float, pool: str) -> Optional[str]:
    """Why one replica (``tensor_parallel_size`` devices of ``device_memory_gib``, of which vLLM takes
    ``gpu_memory_utilization``) cannot hold the model's weights, or None (it can, or the model is unknown)."""
    weights = weight_bytes(model_id, dtype, quantization)
    if weights is None:
        return None
    available = tensor_parallel_size * device_memory_gib * gpu_memory_utilization
    if weights / GIB <= available:
        return None
    model = known_model(model_id)
    assert model is not None
    return (f"{model_id} has {model.parameters_billions:g}B parameters: {weights / GIB:.1f} GiB of weights in "
            f"{precision(dtype, quantization)}, more than one replica holds on pool '{pool}' ({tensor_parallel_size} "
            f"x {device_memory_gib:g} GiB {device} x gpuMemoryUtilization {gpu_memory_utilization:g} = "
            f"{available:.1f} GiB); choose a pool with more GPU memory, a larger tensorParallelSize or a quantization")
