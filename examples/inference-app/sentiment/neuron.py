"""AWS Inferentia/Trainium: the model compiled by ``torch_neuronx`` for static shapes.

The Neuron compiler turns a traced graph of fixed input shapes into a NEFF for the NeuronCores; a shape it has not
seen needs a new compilation (tens of seconds). So every input is padded to the tokenizer's ``max_length`` and to a
batch *bucket* (the next power of two, up to the largest batch seen), and one graph is compiled per bucket on first
use; the server's warm-up compiles every bucket up to ``MAX_BATCH_SIZE`` before ``/readyz`` says yes.
``torch_neuronx`` comes with the Neuron image (AWS Neuron Deep Learning Containers); it is imported only here.
"""

from collections.abc import Callable

import torch


def bucket(rows: int) -> int:
    """The batch size a request of ``rows`` texts runs at: the next power of two."""
    return 1 << max(0, rows - 1).bit_length()


class _Logits(torch.nn.Module):
    """The model as a function of positional tensors returning the logits tensor: what a tracer can compile (the
    Hugging Face forward takes keywords and returns an output object)."""

    def __init__(self, model: torch.nn.Module, input_names: tuple[str, ...]):
        super().__init__()
        self.model, self.input_names = model, input_names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.input_names, tensors, strict=True))).logits


class NeuronModel:
    """Callable like the Hugging Face model (``model(**inputs).logits``) over compiled static-shape graphs."""

    def __init__(self, model: torch.nn.Module, input_names: tuple[str, ...],
                 trace: Callable[[torch.nn.Module, tuple], Callable] | None = None):
        if trace is None:
            import torch_neuronx  # only in the Neuron image

            trace = torch_neuronx.trace
        self._model, self._names, self._trace = _Logits(model, input_names).eval(), input_names, trace
        self._compiled: dict[tuple[int, int], Callable] = {}
        self.config = model.config

    def _graph(self, rows: int, length: int) -> Callable:
        key = (rows, length)
        if key not in self._compiled:
            example = tuple(torch.zeros(rows, length, dtype=torch.long) for _ in self._names)
            self._compiled[key] = self._trace(self._model, example)
        return self._compiled[key]

    def __call__(self, **inputs: torch.Tensor) -> "NeuronOutput":
        rows, length = inputs[self._names[0]].shape
        size = bucket(rows)
        # Padding rows are all-padding sequences (attention mask 0); their logits are dropped below.
        padded = [torch.nn.functional.pad(inputs[name], (0, 0, 0, size - rows)) for name in self._names]
        return NeuronOutput(self._graph(size, length)(*padded)[:rows])

    @property
    def compiled_shapes(self) -> list[tuple[int, int]]:
        """The (batch, length) shapes compiled so far."""
        return sorted(self._compiled)


class NeuronOutput:
    """The ``.logits`` of a compiled forward pass."""

    def __init__(self, logits: torch.Tensor):
        self.logits = logits
