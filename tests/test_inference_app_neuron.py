"""The inference app's Neuron path (``DEVICE=neuron``) without Neuron hardware: ``torch_neuronx.trace`` replaced by
``torch.jit.trace``, which compiles the same static-shape graphs on CPU. What is checked is the app's side: inputs
padded to ``max_length`` and a power-of-two batch bucket, one graph per bucket, padding rows dropped, and the same
answers as the eager CPU model."""

import sys
from pathlib import Path

import pytest

APP_DIR = Path(__file__).resolve().parents[1] / "examples" / "inference-app"
sys.path.insert(0, str(APP_DIR))

from make_model import build  # noqa: E402
from sentiment.settings import SettingsError, from_env  # noqa: E402

# torch, and the app's modules that import it, are imported by the tests that use them: torch takes seconds to
# import, which every pytest-xdist worker would otherwise pay while collecting, whether or not it runs this file.

TEXTS = ["I love using this product!", "terrible service, never again", "the delivery was late",
         "great quality for the price", "it works"]
MAX_LENGTH = 32


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build(tmp_path_factory.mktemp("model") / "tiny-distilbert", "tiny")


@pytest.fixture(scope="module")
def traced():
    """``(trace function, the example shapes it was asked to compile)``."""
    shapes = []

    def trace(model, example):
        import torch

        shapes.append(tuple(tuple(t.shape) for t in example))
        return torch.jit.trace(model, example)

    return trace, shapes


def test_batch_buckets_are_powers_of_two():
    from sentiment.neuron import bucket

    assert [bucket(n) for n in (1, 2, 3, 4, 5, 8, 9, 32)] == [1, 2, 4, 4, 8, 8, 16, 32]


def test_neuron_device_compiles_one_static_graph_per_bucket_and_answers_like_the_cpu(model_dir, traced):
    import torch
    from sentiment.classifier import Classifier

    trace, shapes = traced
    neuron = Classifier(str(model_dir), device="neuron", max_length=MAX_LENGTH, threads=1, neuron_trace=trace)
    cpu = Classifier(str(model_dir), device="cpu", max_length=MAX_LENGTH, threads=1)
    assert neuron.dtype == torch.float32 and neuron.device.type == "cpu"

    got = neuron.predict(TEXTS)  # 5 texts: the bucket of 8
    assert [(p.label, round(p.score, 4)) for p in got] == [(p.label, round(p.score, 4)) for p in cpu.predict(TEXTS)]
    assert shapes == [((8, MAX_LENGTH), (8, MAX_LENGTH))]  # input_ids and attention_mask, padded to max_length

    neuron.predict(TEXTS[:3])  # 3 texts: bucket 4, compiled once
    neuron.predict(TEXTS[:4])  # 4 texts: the same graph
    neuron.predict(TEXTS[:1])
    assert neuron.model.compiled_shapes == [(1, MAX_LENGTH), (4, MAX_LENGTH), (8, MAX_LENGTH)]
    assert len(shapes) == 3


def test_device_setting_accepts_neuron_and_names_the_choices():
    assert from_env({"MODEL_PATH": "/m", "DEVICE": "neuron"}).device == "neuron"
    with pytest.raises(SettingsError, match="DEVICE: expected auto, cpu, cuda or neuron, got 'tpu'"):
        from_env({"MODEL_PATH": "/m", "DEVICE": "tpu"})


def test_warm_up_compiles_every_bucket_a_batch_can_fall_in(model_dir):
    import torch
    from sentiment.classifier import Classifier

    neuron = Classifier(str(model_dir), device="neuron", max_length=MAX_LENGTH, threads=1,
                        neuron_trace=lambda model, example: torch.jit.trace(model, example))
    neuron.warm_up(6)  # batches of 1..6 texts fall in buckets 1, 2, 4 and 8
    assert neuron.model.compiled_shapes == [(1, MAX_LENGTH), (2, MAX_LENGTH), (4, MAX_LENGTH), (8, MAX_LENGTH)]
