"""Dynamic batching with deadlines: texts of concurrent requests share forward passes, and no request is kept
waiting past its deadline.

- **Batch when it pays.** A text that arrives while the model is idle starts a forward pass at once (or after at
  most ``max_wait_s``, 0 by default). Texts that arrive during a forward pass queue up and leave together, up to
  ``max_batch_size``, the moment it ends: the next batch is sent from the very callback that receives the
  previous answer. When a full batch is already waiting, it is sent before the running pass ends (two batches
  in flight per model worker at most), so under deep queues the model never waits for a busy event loop to
  read its answer. With several model workers (MODEL_WORKERS, CPU), an idle one takes what is queued at once.
  Under load batches fill by themselves; at low load nobody waits for company. A request with more texts than a
  batch holds is split over consecutive batches.
- **Admission by expected wait.** The batcher measures the model side's speed (seconds per text: the time
  between answers while every worker is busy, else the forward passes' own time; a moving average seeded by a
  timed full batch at start-up, `calibrate`) and the event loop's lag after each answer (how long the answered
  requests wait for their turn on the loop: under heavy load, part of the latency clients see). A request
  whose texts, behind everything queued or in the model, would not be done well before its deadline
  (`ADMISSION_HEADROOM`) is refused at once with
  `Overloaded`, which says how many seconds the backlog needs to drain (the ``Retry-After``: refused clients
  come back when the texts ahead of them are done, not all at once the moment one more would fit). Latency stays
  bounded by the deadline whatever the model's speed; ``max_queue`` (texts) only bounds memory.
- **Expired work is dropped.** When a batch is formed, a request that can no longer finish before its deadline
  fails with `DeadlineExceeded` instead of taking the model's time.

A forward pass is started with a callback (`StartForward`): the model's worker process answers on the event loop
itself (worker.py), an in-process model runs on a thread (`on_thread`). Everything here runs on the event loop.
"""

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, Optional

# ``on_done(outputs, None, seconds)`` or ``on_done(None, error, 0)``, called on the event loop once the pass
# ended; ``seconds``: how long the forward pass itself took (measured where it ran).
OnDone = Callable[[Optional[Sequence[Any]], Optional[BaseException], float], None]
# Starts a forward pass over ``texts`` (same length, same order out) and returns at once.
StartForward = Callable[[list[str], OnDone], None]

# Weight of the newest sample in the seconds-per-text and answer-lag averages: about the last 10 count.
EWMA_WEIGHT = 0.2
# Admission wants a text done within its deadline with this much room: the estimate is right on average, not
# every time, and a request admitted on a hair then dropped before its forward pass (when the backlog drained
# slower than estimated) costs the event loop a whole request and answers nothing. With 1.25, a text is admitted
# when its expected wait is at most 80 % of the time it has left (tiny model, 1024 clients with a 100 ms timeout:
# half as many admitted requests dropped, p99 of answers 122 ms instead of 136-144 ms).
ADMISSION_HEADROOM = 1.25


class Overloaded(Exception):
    """Refused at admission; ``retry_after_s``: the seconds the backlog needs to drain (the ``Retry-After``)."""

    def __init__(self, message: str, retry_after_s: float = 0.0):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DeadlineExceeded(Exception):
    """Admitted, but the request could no longer finish before its deadline: dropped before its forward pass."""


def on_thread(predict: Callable[[list[str]], Sequence[Any]], executor: Executor) -> StartForward:
    """A blocking ``predict`` as a `StartForward`: it runs on ``executor`` (PyTorch releases the GIL in its
    kernels) and ``on_done`` runs on the event loop."""

    def timed(texts: list[str]) -> tuple[Sequence[Any], float]:
        started = time.perf_counter()
        outputs = predict(texts)
        return outputs, time.perf_counter() - started

    def start(texts: list[str], on_done: OnDone) -> None:
        def finished(future: asyncio.Future) -> None:
            error = future.exception()
            if error is not None:
                on_done(None, error, 0.0)
            else:
                outputs, seconds = future.result()
                on_done(outputs, None, seconds)

        asyncio.get_running_loop().run_in_executor(executor, timed, texts).add_done_callback(finished)

    return start


class _Batch:
    """A batch sent to the model: its requests' parts (request, start, offset, count), its size, when it was sent."""

    __slots__ = ("parts", "size", "sent")

    def __init__(self, parts: list, size: int, sent: float):
        self.parts = parts
        self.size = size
        self.sent = sent


class _Pending:
    """One request's texts, the batches they went to, its deadline and the future its handler awaits."""

    __slots__ = ("texts", "results", "future", "deadline", "enqueued", "taken", "remaining")

    def __init__(self, texts: Sequence[str], future: asyncio.Future, deadline: float, enqueued: float):
        self.texts = texts
        self.results: list[Any] = [None] * len(texts)
        self.future = future
        self.deadline = deadline
        self.enqueued = enqueued
        self.taken = 0
        self.remaining = len(texts)


class MicroBatcher:
    """Groups texts into batches for ``start_forward``; admits requests by expected wait against their deadlines."""

    def __init__(
        self,
        start_forward: StartForward,
        max_batch_size: int,
        max_wait_s: float,
        max_queue: int,
        on_batch: Optional[Callable[[int, float], None]] = None,
        on_queue: Optional[Callable[[int], None]] = None,
        workers: int = 1,
    ):
        """``workers``: forward passes the model side runs at once (model worker processes)."""
        self.workers = workers
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        self._start_forward = start_forward
        self._on_batch = on_batch or (lambda size, seconds: None)
        self._on_queue = on_queue or (lambda depth: None)
        self._queue: deque[_Pending] = deque()
        self._queued = 0
        self._in_flight: list[_Batch] = []  # sent to the model, oldest first; two per worker at most
        self._seconds_per_text: Optional[float] = None  # of the whole model side: all workers together
        self._answer_lag = 0.0  # seconds from a batch's answer to its handlers running (moving average)
        self._saturated_since: Optional[float] = None  # the last answer, if every worker has had a batch since
        self._busy_texts, self._busy_seconds = 0, 0.0  # answered while saturated, not yet in the average
        self._timer: Optional[asyncio.TimerHandle] = None
        self._draining = False
        self._running = False

    # -- public ------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._running = True

    @property
    def alive(self) -> bool:
        """True between `start` and `close`."""
        return self._running

    @property
    def queued(self) -> int:
        """Texts waiting for a forward pass."""
        return self._queued

    @property
    def pending(self) -> int:
        """Texts accepted and not yet answered (waiting or in the forward pass)."""
        return self._queued + sum(batch.size for batch in self._in_flight)

    @property
    def seconds_per_text(self) -> Optional[float]:
        """Measured forward-pass time per text of a well-filled batch (None before any measurement)."""
        return self._seconds_per_text

    def calibrate(self, seconds: float, size: int) -> None:
        """Seed the estimate with a timed forward pass of ``size`` texts on one worker (the server times one full
        batch)."""
        self._seconds_per_text = seconds / max(1, size) / self.workers

    def expected_wait(self, texts: int = 0, now: Optional[float] = None) -> float:
        """Seconds until ``texts`` more texts, queued behind the current backlog, would be done (0 unmeasured)."""
        return self._answered_in(self._queued + texts, time.monotonic() if now is None else now)

    def _answered_in(self, queued: int, now: float) -> float:
        """Seconds until the batches in flight and then ``queued`` texts are done and their handlers run: the
        one estimate behind admission and dropping (0 before any measurement)."""
        spt = self._seconds_per_text
        if spt is None:
            return 0.0
        in_model = 0.0
        if self._in_flight:  # the oldest started when it was sent
            in_model = max(0.0, sum(b.size for b in self._in_flight) * spt - (now - self._in_flight[0].sent))
        return in_model + queued * spt + self._answer_lag

    def admit(self, texts: int, deadline: float) -> None:
        """Raise `Overloaded` unless ``texts`` more texts fit in the queue and would be done by ``deadline``
        (a `time.monotonic` instant). Cheap: the server calls it before it even reads the body."""
        if self._queued + texts > self.max_queue:
            raise Overloaded(f"{self._queued} texts queued (max {self.max_queue})", self.expected_wait())
        now = time.monotonic()
        wait = self.expected_wait(texts, now)
        if now + wait * ADMISSION_HEADROOM > deadline:
            raise Overloaded(f"expected wait {wait:.3f}s is beyond the deadline ({deadline - now:.3f}s)",
                             self.expected_wait(0, now))

    async def submit(self, texts: Sequence[str], deadline: float = math.inf) -> list[Any]:
        """The outputs for ``texts`` once their batches ran. Raises `Overloaded` (refused at admission) or
        `DeadlineExceeded` (admitted, then dropped before its forward pass: it could not finish in time)."""
        return await self.enqueue(texts, deadline)

    def enqueue(self, texts: Sequence[str], deadline: float = math.inf) -> "asyncio.Future[list[Any]]":
        """`submit` without a coroutine: raises `Overloaded` at once, else returns the future of the outputs
        (which may fail with `DeadlineExceeded`). For callers that answer from a callback (fast_path.py)."""
        if not self._running:
            raise RuntimeError("the batcher is not running")
        self.admit(len(texts), deadline)
        loop = asyncio.get_running_loop()
        pending = _Pending(texts, loop.create_future(), deadline, loop.time())
        self._queue.append(pending)
        self._queued += len(texts)
        self._on_queue(self._queued)
        self._dispatch()
        return pending.future

    def drain(self) -> None:
        """Stop waiting for batches to fill: everything queued leaves at once (shutdown)."""
        self._draining = True
        self._dispatch()

    async def close(self) -> None:
        """Stop batching (after the server finished its requests); requests still queued or running fail."""
        self._running = False
        if self._timer is not None:
            self._timer.cancel()
        error = RuntimeError("server shut down")
        for pending in [*self._queue, *(part[0] for batch in self._in_flight for part in batch.parts)]:
            if not pending.future.done():
                pending.future.set_exception(error)
        self._queue.clear()

    # -- batching ----------------------------------------------------------------------------------------
    def _dispatch(self, waited: bool = False) -> None:
        """Send the next batch: whatever is queued when a worker is idle (once its oldest text ``waited``
        ``max_wait_s``, when that is not 0), a full batch whenever one is waiting (two in flight per worker at
        most). With one worker a partial batch therefore never goes out while a pass runs: it fills until the
        pass ends."""
        if not self._queue or not self._running or len(self._in_flight) >= 2 * self.workers:
            return
        if len(self._in_flight) >= self.workers and self._queued < self.max_batch_size:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        loop = asyncio.get_running_loop()
        if self.max_wait_s > 0 and self._queued < self.max_batch_size and not (waited or self._draining):
            send_at = self._queue[0].enqueued + self.max_wait_s
            if send_at > loop.time():  # idle model, partial batch: wait a little for company
                self._timer = loop.call_at(send_at, self._dispatch, True)
                return
        texts, parts = self._take(time.monotonic())
        self._on_queue(self._queued)
        if not texts:
            return
        batch = _Batch(parts, len(texts), time.monotonic())
        self._in_flight.append(batch)

        def on_done(outputs: Optional[Sequence[Any]], error: Optional[BaseException], seconds: float) -> None:
            self._finished(batch, outputs, error, seconds)

        try:
            self._start_forward(texts, on_done)
        except Exception as err:  # failed to start (the worker is gone): fail this batch, not from inside itself
            loop.call_soon(on_done, None, err, 0.0)
        self._dispatch()  # another idle worker, or a second full batch

    def _finished(self, batch: _Batch, outputs: Optional[Sequence[Any]], error: Optional[BaseException],
                  seconds: float) -> None:
        """A forward pass ended: answer its requests, then send the next batch at once."""
        self._in_flight.remove(batch)
        parts, size = batch.parts, batch.size
        now = time.monotonic()
        if error is None and outputs is not None and len(outputs) != size:
            error = RuntimeError(f"forward returned {len(outputs)} outputs for {size} texts")
        if error is not None or outputs is None:  # one failed batch fails its requests, never the batcher
            for pending, _, _, _ in parts:
                if not pending.future.done():
                    pending.future.set_exception(error or RuntimeError("forward returned nothing"))
        else:
            self._learn(size, seconds, now)
            asyncio.get_running_loop().call_soon(self._measure_lag, now)  # runs when the handlers' turn comes
            self._on_batch(size, seconds)
            for pending, start, offset, count in parts:
                pending.results[start:start + count] = outputs[offset:offset + count]
                pending.remaining -= count
                if pending.remaining == 0 and not pending.future.done():
                    pending.future.set_result(pending.results)
        self._dispatch()
        self._saturated_since = now if len(self._in_flight) >= self.workers else None

    def _measure_lag(self, answered: float) -> None:
        self._answer_lag += EWMA_WEIGHT * (time.monotonic() - answered - self._answer_lag)

    def _learn(self, size: int, seconds: float, now: float) -> None:
        """Seconds per text of the whole model side, as a moving average. While every worker has had a batch
        since the previous answer, the time between answers is the measure (summed until a batch's worth of
        texts were answered): it includes what the forward pass's own clock misses, the pipe and the worker
        waiting for a busy event loop to read its answer or send its next batch (tiny model, 2 CPUs, 1024
        clients: the forward passes' clock said 150-250 µs per text, answers came every 210 µs per text, and
        admission on the former admitted requests that missed their deadline). Otherwise the forward pass's
        own time, from batches at least half full: a small batch costs more per text (fixed costs), and the
        estimate matters when the backlog is deep, which is when batches are full."""
        if self._saturated_since is not None:
            self._busy_texts += size
            self._busy_seconds += now - self._saturated_since
            if self._busy_texts < self.max_batch_size:
                return
            sample = self._busy_seconds / self._busy_texts
            self._busy_texts, self._busy_seconds = 0, 0.0
        elif size * 2 < self.max_batch_size and self._seconds_per_text is not None:
            return
        else:
            sample = seconds / size / self.workers
        spt = self._seconds_per_text
        self._seconds_per_text = sample if spt is None else spt + EWMA_WEIGHT * (sample - spt)

    def _take(self, now: float) -> tuple[list[str], list[tuple[_Pending, int, int, int]]]:
        """Up to ``max_batch_size`` texts from the head of the queue; parts = (request, start, offset, count).
        Requests that would finish after their deadline even in this batch are dropped (`DeadlineExceeded`)."""
        done_by = now + self._answered_in(min(self._queued, self.max_batch_size), now)
        texts: list[str] = []
        parts = []
        while self._queue and len(texts) < self.max_batch_size:
            pending = self._queue[0]
            if pending.deadline < done_by:
                self._queue.popleft()
                self._queued -= len(pending.texts) - pending.taken
                if not pending.future.done():
                    pending.future.set_exception(DeadlineExceeded(
                        f"could not be answered within its deadline ({len(pending.texts)} texts)"))
                continue
            count = min(self.max_batch_size - len(texts), len(pending.texts) - pending.taken)
            parts.append((pending, pending.taken, len(texts), count))
            texts.extend(pending.texts[pending.taken:pending.taken + count])
            pending.taken += count
            self._queued -= count
            if pending.taken == len(pending.texts):
                self._queue.popleft()
        return texts, parts
