"""Dynamic micro-batching: texts from concurrent requests share one forward pass.

One coroutine forms batches; the forward pass runs on one worker thread so the event loop keeps accepting
and answering requests meanwhile (PyTorch releases the GIL inside its kernels). A batch leaves when it holds
``max_batch_size`` texts or when its oldest text has waited ``max_wait_s``; while a forward pass runs, new texts
queue up and leave together as soon as it ends, so under load batches fill by themselves and the wait costs
nothing. A request with more texts than a batch holds is split over consecutive batches. The queue is bounded
(``max_queue`` texts): beyond it `submit` raises `Overloaded` at once instead of letting latency grow unbounded.
"""

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional


class Overloaded(Exception):
    """The queue is full; the caller should answer 503 with Retry-After."""


class _Pending:
    """One request's texts, the batches they went to, and the future its handler awaits."""

    __slots__ = ("texts", "results", "future", "enqueued", "taken", "remaining")

    def __init__(self, texts: Sequence[str], future: asyncio.Future, enqueued: float):
        self.texts = texts
        self.results: list[Any] = [None] * len(texts)
        self.future = future
        self.enqueued = enqueued
        self.taken = 0
        self.remaining = len(texts)


class MicroBatcher:
    """Groups texts into batches for ``predict(texts) -> outputs`` (same length, same order)."""

    def __init__(
        self,
        predict: Callable[[list[str]], Sequence[Any]],
        max_batch_size: int,
        max_wait_s: float,
        max_queue: int,
        on_batch: Optional[Callable[[int, float], None]] = None,
        on_queue: Optional[Callable[[int], None]] = None,
    ):
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.max_queue = max_queue
        self._predict = predict
        self._on_batch = on_batch or (lambda size, seconds: None)
        self._on_queue = on_queue or (lambda depth: None)
        self._queue: deque[_Pending] = deque()
        self._queued = 0
        self._in_forward = 0
        self._wakeup: Optional[asyncio.Future] = None
        self._wake_at = 1
        self._draining = False
        self._task: Optional[asyncio.Task] = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forward")

    # -- public ------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="micro-batcher")

    @property
    def alive(self) -> bool:
        """False once the batching task has died (the liveness probe then restarts the pod)."""
        return self._task is not None and not self._task.done()

    @property
    def queued(self) -> int:
        """Texts waiting for a forward pass."""
        return self._queued

    @property
    def pending(self) -> int:
        """Texts accepted and not yet answered (waiting or in the forward pass)."""
        return self._queued + self._in_forward

    async def submit(self, texts: Sequence[str]) -> list[Any]:
        """The outputs for ``texts``, once their batches ran. Raises `Overloaded` when the queue is full."""
        if self._queued + len(texts) > self.max_queue:
            raise Overloaded(f"{self._queued} texts queued (max {self.max_queue})")
        loop = asyncio.get_running_loop()
        pending = _Pending(texts, loop.create_future(), loop.time())
        self._queue.append(pending)
        self._queued += len(texts)
        self._on_queue(self._queued)
        if self._queued >= self._wake_at:
            self._wake()
        return await pending.future

    def drain(self) -> None:
        """Stop waiting for batches to fill: everything queued leaves at once (shutdown)."""
        self._draining = True
        self._wake()

    async def close(self) -> None:
        """Stop the batching task and the worker thread (after the server finished its requests)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for pending in self._queue:
            if not pending.future.done():
                pending.future.set_exception(RuntimeError("server shut down"))
        self._executor.shutdown(wait=True)

    def run_sync(self, fn: Callable[..., Any], *args: Any) -> "asyncio.Future[Any]":
        """Run ``fn`` on the forward-pass thread (loading and warming the model, off the event loop)."""
        return asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    # -- batching loop -----------------------------------------------------------------------------------
    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def _sleep(self, wake_at: int, deadline: Optional[float]) -> None:
        """Sleep until ``wake_at`` texts are queued, ``deadline`` passes, or `drain`/`submit` wakes us."""
        loop = asyncio.get_running_loop()
        self._wakeup = loop.create_future()
        self._wake_at = wake_at
        timer = loop.call_at(deadline, self._wake) if deadline is not None else None
        try:
            await self._wakeup
        finally:
            self._wakeup = None
            if timer is not None:
                timer.cancel()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._queue:
                await self._sleep(1, None)
                continue
            if self._queued < self.max_batch_size and not self._draining:
                deadline = self._queue[0].enqueued + self.max_wait_s
                if deadline > loop.time():
                    await self._sleep(self.max_batch_size, deadline)
                    continue  # re-check: full, deadline passed, or draining
            texts, parts = self._take()
            self._on_queue(self._queued)
            self._in_forward = len(texts)
            started = time.perf_counter()
            try:
                outputs = await loop.run_in_executor(self._executor, self._predict, texts)
                if len(outputs) != len(texts):
                    raise RuntimeError(f"predict returned {len(outputs)} outputs for {len(texts)} texts")
            except Exception as err:  # one failed batch fails its requests, never the batcher
                for pending, _, _, _ in parts:
                    if not pending.future.done():
                        pending.future.set_exception(err)
                continue
            finally:
                self._in_forward = 0
            self._on_batch(len(texts), time.perf_counter() - started)
            for pending, start, offset, count in parts:
                pending.results[start:start + count] = outputs[offset:offset + count]
                pending.remaining -= count
                if pending.remaining == 0 and not pending.future.done():
                    pending.future.set_result(pending.results)

    def _take(self) -> tuple[list[str], list[tuple[_Pending, int, int, int]]]:
        """Up to ``max_batch_size`` texts from the head of the queue; parts = (request, start, offset, count)."""
        texts: list[str] = []
        parts = []
        while self._queue and len(texts) < self.max_batch_size:
            pending = self._queue[0]
            count = min(self.max_batch_size - len(texts), len(pending.texts) - pending.taken)
            parts.append((pending, pending.taken, len(texts), count))
            texts.extend(pending.texts[pending.taken:pending.taken + count])
            pending.taken += count
            if pending.taken == len(pending.texts):
                self._queue.popleft()
        self._queued -= len(texts)
        return texts, parts
