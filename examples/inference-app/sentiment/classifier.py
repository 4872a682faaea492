"""The Hugging Face sequence-classification model behind the service.

Tokenization goes straight to the Rust tokenizer (``encode_batch``) and NumPy: the ``transformers`` call
wrapper costs more than the tokenization itself at these batch sizes. Only the inputs the model's ``forward``
accepts are passed (DistilBERT takes no ``token_type_ids``).
"""

import inspect
import os

# OpenMP's default "active" wait makes PyTorch's CPU threads spin after each forward pass, starving the event
# loop thread that must accept the next requests (measured: p50 at concurrency 1 went from ~0.7 s to ~25 ms on a
# busy 2-core machine). Must be set before torch starts its thread pool.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from .prediction import Prediction  # noqa: E402
from .process_tuning import keep_freed_memory, limit_tokenizer_threads  # noqa: E402

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def pick_device(requested: str) -> torch.device:
    """Where tensors live: CUDA (NVIDIA, or AMD through ROCm's HIP), else the host (CPU, and Neuron, whose runtime
    copies inputs to the NeuronCores itself)."""
    if requested == "cuda" or (requested == "auto" and torch.cuda.is_available()):
        return torch.device("cuda")
    return torch.device("cpu")


def pick_dtype(requested: str, device: torch.device) -> torch.dtype:
    if requested == "auto":
        return torch.float16 if device.type == "cuda" else torch.float32
    return DTYPES[requested]


class Classifier:
    """Loads the model once; `predict` classifies a batch of texts in one forward pass."""

    def __init__(self, source: str, device: str = "auto", dtype: str = "auto", max_length: int = 256,
                 threads: int = 0, neuron_trace=None):
        """``device``: ``auto``, ``cpu``, ``cuda`` or ``neuron`` (compiled for NeuronCores by ``torch_neuronx``;
        ``neuron_trace`` replaces ``torch_neuronx.trace``, for tests)."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        if threads:
            torch.set_num_threads(threads)
        limit_tokenizer_threads(threads)  # the tokenizer's pool within the same budget (process_tuning.py)
        keep_freed_memory()  # before the model's first allocations
        local = os.path.isdir(source)
        neuron = device == "neuron"
        self.device = pick_device("cpu" if neuron else device)
        # Neuron compiles float32 graphs and casts to bf16 itself (the compiler's auto-cast) when asked to.
        self.dtype = torch.float32 if neuron else pick_dtype(dtype, self.device)
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local)
        model = AutoModelForSequenceClassification.from_pretrained(source, local_files_only=local, dtype=self.dtype)
        model = model.to(self.device).eval()
        self.labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
        accepted = inspect.signature(model.forward).parameters
        self._wants_type_ids = "token_type_ids" in accepted
        if neuron:
            from .neuron import NeuronModel

            names = ("input_ids", "attention_mask", *(("token_type_ids",) if self._wants_type_ids else ()))
            self.model = NeuronModel(model, names, neuron_trace)
        else:
            self.model = model
        self._tokenizer = tokenizer.backend_tokenizer
        self._tokenizer.enable_truncation(max_length)
        # Multiples of 8 keep tensor-core shapes on GPU; on CPU padding is pure cost; a Neuron graph has one shape.
        self._tokenizer.enable_padding(pad_id=tokenizer.pad_token_id, pad_token=tokenizer.pad_token,
                                       pad_to_multiple_of=8 if self.device.type == "cuda" else None,
                                       length=max_length if neuron else None)

    def encode(self, texts: list[str]) -> dict[str, torch.Tensor]:
        encodings = self._tokenizer.encode_batch(texts)
        inputs = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if self._wants_type_ids:
            inputs["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        return {k: torch.from_numpy(v).to(self.device, non_blocking=True) for k, v in inputs.items()}

    @torch.inference_mode()
    def predict(self, texts: list[str]) -> list[Prediction]:
        logits = self.model(**self.encode(texts)).logits
        scores, indices = logits.float().softmax(dim=-1).max(dim=-1)
        return [Prediction(self.labels[i], s) for i, s in zip(indices.tolist(), scores.tolist(), strict=True)]

    def warm_up(self, batch_size: int) -> None:
        """First calls pay for allocator growth and kernel selection (on Neuron: the compilation of every batch
        bucket a batch of up to ``batch_size`` can fall in); pay them before /readyz says yes."""
        sizes = {1, max(1, batch_size // 2), batch_size}
        if hasattr(self.model, "compiled_shapes"):
            from .neuron import bucket

            sizes = {1 << i for i in range(bucket(batch_size).bit_length())}
        for size in sorted(sizes):
            self.predict(["warm-up text for the sentiment model"] * size)
