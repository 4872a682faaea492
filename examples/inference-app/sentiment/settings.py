"""Service settings, read once from the environment (every knob has a default that suits a GPU pod)."""

import math
import os
from dataclasses import dataclass, fields
from typing import Optional


class SettingsError(ValueError):
    """An environment variable with a value the service cannot use."""


DEVICES = ("auto", "cpu", "cuda", "neuron")
EVENT_LOOPS = ("auto", "uvloop", "asyncio")


@dataclass(frozen=True)
class Settings:
    """Environment variable = field name upper-cased (``MAX_BATCH_SIZE``)."""

    model_path: str = ""
    """Local directory holding the model (baked into the image or on a PVC). Wins over ``model_id``."""
    model_id: str = ""
    """Hugging Face model id, used when ``model_path`` is empty (the cluster must be allowed to download)."""
    device: str = "auto"
    """``auto`` (CUDA when present), ``cpu``, ``cuda`` (NVIDIA, or AMD with the ROCm image) or ``neuron`` (AWS
    Inferentia/Trainium with the Neuron image: the model compiled per batch bucket, see ``neuron.py``)."""
    dtype: str = "auto"
    """``auto`` (float16 on CUDA, float32 on CPU), ``float32``, ``float16`` or ``bfloat16``."""
    host: str = "0.0.0.0"
    port: int = 8080
    max_batch_size: int = 32
    """Most texts in one forward pass."""
    max_wait_ms: float = 0.0
    """When the model is idle, how long a text waits for others to share its forward pass (0: it starts at once).
    Texts that arrive during a forward pass never wait for this: they leave together when it ends."""
    max_queue: int = 1024
    """Most texts waiting for a forward pass (a memory bound; the deadline usually refuses first): beyond it
    requests get 503 with Retry-After."""
    deadline_ms: float = 1000.0
    """Longest a request may take, receipt to answer. A request whose expected wait (the backlog ahead of it at
    the measured speed of the model) exceeds it is refused at once (503, Retry-After from the backlog); an
    admitted one that can no longer make it is dropped before its forward pass. A client may ask for less with
    the ``X-Request-Timeout-Ms`` header (or the ``X-Envoy-Expected-Rq-Timeout-Ms`` that Envoy sets)."""
    max_texts_per_request: int = 64
    max_text_chars: int = 10_000
    max_body_bytes: int = 1 << 20
    max_sequence_length: int = 256
    """Tokens per text after truncation (and the longest sequence the model ever sees)."""
    model_worker: str = "process"
    """``process``: the model runs in a child process (no GIL shared with the HTTP server; see worker.py);
    ``thread``: in this process, on the forward-pass thread."""
    model_workers: int = 1
    """Model worker processes (``MODEL_WORKER=process``), each with the whole model; batches go to whichever is
    free. On a GPU keep 1. On CPU, single-threaded workers side by side beat one multi-threaded worker on small
    models (their threads never wait for each other): e.g. the CPU count, with ``TORCH_THREADS=1``."""
    torch_threads: int = 0
    """CPU threads for the forward pass (0: every CPU the container may use but one, which the HTTP server gets;
    see cpus.py)."""
    shutdown_delay_s: float = 0.0
    """After SIGTERM, keep serving (while /readyz says 503) so endpoints stop routing here before we close."""
    drain_timeout_s: float = 25.0
    """Longest to wait, once the listener is closed, for in-flight requests and for the kept connections to be
    closed after their next answer; idle ones still open then are closed."""
    keepalive_timeout_s: float = 3630.0
    """How long an idle keep-alive connection stays open (aiohttp's default); every answer on a kept connection
    says so (``Keep-Alive: timeout=N``). Keep it longer than the idle timeout of whatever pools connections in
    front of the pods (a load balancer, a proxy). While draining, a connection idle this long is closed at once."""
    retry_after_s: int = 1
    """``Retry-After`` of 503 answers while loading or draining, and the least one of overload answers (which
    say how many seconds of backlog stand above the deadline)."""
    header_timeout_s: float = 10.0
    """Longest a request head (request line and headers) may take to arrive, from its first byte; then the
    connection is closed (slow clients, slowloris)."""
    body_timeout_s: float = 30.0
    """Longest a request body may take to arrive once its head is in; then 408 and the connection is closed."""
    event_loop: str = "auto"
    """``auto`` (uvloop when it is installed, as in the image; else asyncio's own), ``uvloop`` or ``asyncio``.
    uvloop's transports cost less CPU per connection and per request, which is what the HTTP side spends on a
    small model with a thousand clients."""

    @property
    def model_source(self) -> str:
        return self.model_path or self.model_id


def _convert(name: str, kind: type, raw: str):
    try:
        value = kind(raw)
    except ValueError:
        raise SettingsError(f"{name.upper()}: expected {kind.__name__}, got {raw!r}") from None
    if kind is float and not math.isfinite(value):  # "inf" and "nan" parse as floats
        raise SettingsError(f"{name.upper()}: must be a finite number, got {raw!r}")
    if kind in (int, float) and value < 0:
        raise SettingsError(f"{name.upper()}: must be >= 0, got {raw!r}")
    return value


def from_env(env: Optional[dict] = None) -> Settings:
    """Settings from ``env`` (default ``os.environ``); raises `SettingsError` naming the variable."""
    env = os.environ if env is None else env
    values = {}
    for f in fields(Settings):
        raw = env.get(f.name.upper())
        if raw is not None and raw != "":
            values[f.name] = _convert(f.name, type(f.default), raw)
    settings = Settings(**values)
    if not settings.model_source:
        raise SettingsError("MODEL_PATH or MODEL_ID must be set")
    if settings.device not in DEVICES:
        raise SettingsError(f"DEVICE: expected auto, cpu, cuda or neuron, got {settings.device!r}")
    if settings.dtype not in ("auto", "float32", "float16", "bfloat16"):
        raise SettingsError(f"DTYPE: expected auto, float32, float16 or bfloat16, got {settings.dtype!r}")
    if settings.event_loop not in EVENT_LOOPS:
        raise SettingsError(f"EVENT_LOOP: expected auto, uvloop or asyncio, got {settings.event_loop!r}")
    if settings.model_worker not in ("process", "thread"):
        raise SettingsError(f"MODEL_WORKER: expected process or thread, got {settings.model_worker!r}")
    for name in ("max_batch_size", "max_queue", "max_texts_per_request", "max_text_chars", "max_body_bytes",
                 "max_sequence_length", "model_workers"):
        if getattr(settings, name) < 1:
            raise SettingsError(f"{name.upper()}: must be >= 1")
    if settings.port > 65535:
        raise SettingsError(f"PORT: must be <= 65535, got {settings.port}")
    for name in ("header_timeout_s", "body_timeout_s", "deadline_ms", "keepalive_timeout_s"):
        if getattr(settings, name) <= 0:
            raise SettingsError(f"{name.upper()}: must be > 0")
    if settings.max_wait_ms >= settings.deadline_ms:
        raise SettingsError(f"MAX_WAIT_MS: must be < DEADLINE_MS ({settings.deadline_ms:g}), got "
                            f"{settings.max_wait_ms:g}")
    if settings.model_workers > 1 and settings.model_worker != "process":
        raise SettingsError("MODEL_WORKERS: more than 1 needs MODEL_WORKER=process")
    if settings.max_texts_per_request > settings.max_queue:
        raise SettingsError("MAX_TEXTS_PER_REQUEST: must be <= MAX_QUEUE (a request must fit in the queue)")
    return settings
