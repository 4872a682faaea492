"""The model in its own process, so the forward pass never waits for the HTTP server's GIL (nor the reverse).

The event loop parses requests, validates and answers in Python; PyTorch runs most of a small model's forward
pass in Python too (module calls, kernel dispatch; on a GPU the launches). In one process the two take turns on
the GIL, and the event loop's share is stolen from the accelerator. A worker process (``spawn``: no inherited
CUDA or OpenMP state) holds the tokenizer and the model; batches go over a pipe (a few kilobytes of text and
scores per batch). `ModelProcess` has the `classifier.Classifier` interface for loading and warm-up (blocking,
on a thread); once `attach`-ed to the event loop, `start_forward` sends a batch and the loop itself reads the
answer when the pipe turns readable. No thread sits between the loop and the worker: a thread would need the GIL
to pass each batch on, and a busy event loop hands it over only at the interpreter's switch interval (5 ms).
`WorkerPool` runs several workers behind one `start_forward` (``MODEL_WORKERS``).

The worker ignores SIGINT and SIGTERM: the server drains first, then stops it (`close`). If it dies, `predict`
raises, `alive` turns false and `sentinel` (a file descriptor) turns readable: the server watches every worker's,
fails /readyz and /healthz at once and exits with code 3, so Kubernetes restarts the pod (see server.py).
"""

import asyncio
import contextlib
import multiprocessing
import signal
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Optional

from .prediction import Prediction


def _serve(conn: Any, source: str, device: str, dtype: str, max_length: int, threads: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        from .classifier import Classifier

        model = Classifier(source, device, dtype, max_length, threads)
    except Exception as err:  # reported to the parent, which logs it and exits non-zero
        conn.send(("error", f"{type(err).__name__}: {err}"))
        return
    conn.send(("ready", (str(model.device), str(model.dtype))))
    while True:
        try:
            op, arg = conn.recv()
        except EOFError:  # the parent is gone
            return
        if op == "stop":
            return
        try:
            if op == "predict":
                started = time.perf_counter()
                pairs = [(p.label, p.score) for p in model.predict(arg)]
                conn.send(("ok", (pairs, time.perf_counter() - started)))
            elif op == "warm_up":
                model.warm_up(arg)
                conn.send(("ok", None))
            else:
                conn.send(("error", f"unknown operation {op!r}"))
        except Exception as err:  # one failed batch, not a dead worker
            conn.send(("error", f"{type(err).__name__}: {err}"))


class ModelProcess:
    """A `classifier.Classifier` living in a child process. Calls block: run them on the forward-pass thread."""

    def __init__(self, source: str, device: str = "auto", dtype: str = "auto", max_length: int = 256,
                 threads: int = 0):
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, source, device, dtype, max_length, threads),
                                        name="model-worker", daemon=True)
        self._process.start()
        child.close()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._on_done: deque[Callable[..., None]] = deque()  # one per batch sent, answered in order
        self.device, self.dtype = self._call("load", None, wait_only=True)

    def _call(self, op: str, arg: Any, wait_only: bool = False) -> Any:
        try:
            if not wait_only:
                self._conn.send((op, arg))
            status, value = self._conn.recv()
        except (EOFError, OSError):
            raise RuntimeError(f"model worker exited (code {self._process.exitcode})") from None
        if status == "error":
            raise RuntimeError(f"model worker: {value}")
        return value

    @property
    def alive(self) -> bool:
        return self._process.is_alive()

    @property
    def sentinel(self) -> int:
        """A file descriptor that turns readable when the worker process ends (for ``loop.add_reader``)."""
        return self._process.sentinel

    @property
    def exitcode(self) -> "int | None":
        """The worker's exit code (negative: killed by that signal); call once `sentinel` is readable."""
        self._process.join(1.0)  # the sentinel turns readable as the process ends, a moment before it is reaped
        return self._process.exitcode

    def predict(self, texts: list[str]) -> list[Prediction]:
        pairs, _ = self._call("predict", list(texts))
        return [Prediction(label, score) for label, score in pairs]

    def warm_up(self, batch_size: int) -> None:
        self._call("warm_up", batch_size)

    # -- on the event loop (after loading and warm-up) --------------------------------------------------
    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Answer `start_forward` on ``loop``: from now on only the loop talks to the worker."""
        self._loop = loop
        loop.add_reader(self._conn.fileno(), self._on_answer)

    def start_forward(self, texts: list[str], on_done: Callable[..., None]) -> None:
        """Send a batch; ``on_done(predictions, None, seconds)`` or ``on_done(None, error, 0)`` runs on the loop
        when its answer is in (the batcher's `StartForward`). The worker answers batches in the order they were
        sent; a second batch waits in the pipe while the first runs."""
        if self._loop is None:
            raise RuntimeError("start_forward needs attach()")
        try:
            # At most MAX_BATCH_SIZE texts, and at most two batches in the pipe: the write does not block for long.
            self._conn.send(("predict", texts))
        except OSError:
            raise RuntimeError(f"model worker exited (code {self._process.exitcode})") from None
        self._on_done.append(on_done)

    @property
    def outstanding(self) -> int:
        """Batches sent and not yet answered."""
        return len(self._on_done)

    def _on_answer(self) -> None:
        on_done = self._on_done.popleft() if self._on_done else None
        try:
            status, value = self._conn.recv()  # readable: the worker wrote its whole answer in one send
        except (EOFError, OSError):
            self._detach()
            error = RuntimeError(f"model worker exited (code {self._process.exitcode})")
            for waiting in (on_done, *self._on_done):
                if waiting is not None:
                    waiting(None, error, 0.0)
            self._on_done.clear()
            return
        if on_done is None:
            return
        if status == "error":
            on_done(None, RuntimeError(f"model worker: {value}"), 0.0)
        else:
            pairs, seconds = value
            on_done([Prediction(label, score) for label, score in pairs], None, seconds)

    def _detach(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self._conn.fileno())
            self._loop = None

    def close(self, timeout: float = 10.0) -> None:
        self._detach()
        if self._process.is_alive():
            with contextlib.suppress(OSError):  # BrokenPipeError is an OSError
                self._conn.send(("stop", None))
            self._process.join(timeout)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout)
        self._conn.close()


class WorkerPool:
    """Several `ModelProcess` behind one `start_forward`: each batch goes to the worker with the fewest batches
    outstanding. On CPU, single-threaded workers side by side use the cores better than one worker whose threads
    wait for each other at every operator (MODEL_WORKERS; cpus.py)."""

    def __init__(self, workers: list[ModelProcess]):
        self.workers = workers
        self.device, self.dtype = workers[0].device, workers[0].dtype

    @property
    def alive(self) -> bool:
        return all(worker.alive for worker in self.workers)

    @property
    def sentinels(self) -> list[int]:
        return [worker.sentinel for worker in self.workers]

    def exitcode_of(self, sentinel: int) -> "int | None":
        """The exit code of the worker whose `sentinel` turned readable."""
        return next(w.exitcode for w in self.workers if w.sentinel == sentinel)

    def predict(self, texts: list[str]) -> list[Prediction]:
        return self.workers[0].predict(texts)

    def warm_up(self, batch_size: int) -> None:
        for worker in self.workers:
            worker.warm_up(batch_size)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        for worker in self.workers:
            worker.attach(loop)

    def start_forward(self, texts: list[str], on_done: Callable[..., None]) -> None:
        min(self.workers, key=lambda worker: worker.outstanding).start_forward(texts, on_done)

    def close(self, timeout: float = 10.0) -> None:
        for worker in self.workers:
            worker.close(timeout)
