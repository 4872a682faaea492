"""The event loop's Python cost of one request on the fast path, without sockets or a model.

`bench.py` measures the whole machine; on a shared 2-CPU VM its figures move by 5-10 % from one minute to the
next, more than most changes to the request path are worth. This measures that path alone, in one process: plain
``POST /analyze`` requests go through the connection guard, the fast path, admission, the batcher and the
metrics of a real `ServiceState`, into transports that only count what is written, and a model that answers at
once. It prints microseconds per request:

- **answered**: ``--batch`` requests arrive, their texts share forward passes, each gets its 200;
- **refused**: every request carries a timeout shorter than the expected wait and gets a 503 with
  ``Retry-After`` (the connection is then held: the hold is timed too, then cancelled).

Not in these figures: syscalls, the kernel's TCP, uvloop's own work and the worker process. Under `bench.py` the
event loop's process spends about 45 µs of CPU per request in all on the development machine, against about 18 µs
of Python measured here. Medians of ``--repeat`` runs.

    python request_cost.py [--requests 20000] [--batch 32] [--repeat 5]
"""

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from sentiment.connections import Guard  # noqa: E402
from sentiment.prediction import Prediction  # noqa: E402
from sentiment.server import ServiceState  # noqa: E402
from sentiment.settings import from_env  # noqa: E402

HEAD = b"POST /analyze HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def request(text: str, timeout_ms: "float | None" = None) -> bytes:
    body = b'{"text": "%s"}' % text.encode()
    extra = b"X-Request-Timeout-Ms: %g\r\n" % timeout_ms if timeout_ms else b""
    return HEAD + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


class CountingTransport:
    """Keeps the status line of each response written to it."""

    def __init__(self) -> None:
        self.statuses: list[bytes] = []
        self.retry_after = 0

    def write(self, data: bytes) -> None:
        self.statuses.append(data[9:12])
        self.retry_after += b"\r\nRetry-After: " in data

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass

    def get_extra_info(self, name: str) -> tuple:
        return ("127.0.0.1", 0)


class IdleProtocol:
    """aiohttp's protocol as the guard sees it on a connection that only the fast path serves."""

    keepalive_timeout = 75.0
    _next_keepalive_close_time = 0.0

    def connection_made(self, transport: object) -> None:
        pass


def instant_model(texts: list[str], on_done) -> None:
    """A forward pass that ends on the next turn of the loop."""
    asyncio.get_running_loop().call_soon(on_done, [Prediction("POSITIVE", 0.9)] * len(texts), None, 0.001)


def service() -> ServiceState:
    state = ServiceState(from_env({"MODEL_PATH": "unused", "MAX_QUEUE": "100000"}), lambda settings: None)
    state.start_forward = instant_model
    state.ready = True
    state.batcher.start()
    state.batcher.calibrate(0.005, 32)  # 5 ms a batch of 32: a few hundred queued texts take longer than 1 ms
    return state


def connections(state: ServiceState, count: int) -> list[tuple[Guard, CountingTransport]]:
    out = []
    for _ in range(count):
        guard, transport = Guard(IdleProtocol(), state.connections), CountingTransport()
        guard.connection_made(transport)
        out.append((guard, transport))
    return out


async def answered(requests: int, batch: int) -> float:
    """Seconds per answered request: ``batch`` arrive, then the loop runs until all are answered."""
    state = service()
    clients = connections(state, batch)
    data = request("a fine product that does what it says.")
    started = time.perf_counter()
    for _ in range(requests // batch):
        for guard, _ in clients:
            guard.data_received(data)
        while state.batcher.pending or any(guard.taken for guard, _ in clients):
            await asyncio.sleep(0)
    elapsed = time.perf_counter() - started
    statuses = {status for _, transport in clients for status in transport.statuses}
    if statuses != {b"200"}:
        raise RuntimeError(f"expected only 200s, got {statuses}")
    return elapsed / (requests // batch * batch)


async def refused(requests: int, backlog: int = 400) -> float:
    """Seconds per refused request (a 1 ms timeout behind ``backlog`` queued texts)."""
    state = service()
    # The backlog ahead of every request. The loop does not turn while the refusals are timed, so none of it is
    # answered meanwhile, and no further batch reaches a model.
    state.batcher.enqueue(["queued"] * backlog)
    state.start_forward = lambda texts, on_done: None
    clients = connections(state, 1024)
    data = request("a fine product that does what it says.", timeout_ms=1)
    started = time.perf_counter()
    for i in range(requests):
        guard, _ = clients[i % len(clients)]
        guard.data_received(data)
        guard._held.cancel()  # the hold it was given (Retry-After): released by hand for the next request
        guard._release()
    elapsed = time.perf_counter() - started
    if sum(len(t.statuses) for _, t in clients) != requests or any(s != b"503" for _, t in clients
                                                                    for s in t.statuses):
        raise RuntimeError("expected a 503 for every request")
    if sum(t.retry_after for _, t in clients) != requests:
        raise RuntimeError("expected Retry-After on every 503")
    return elapsed / requests


def measure(requests: int, batch: int, repeat: int) -> dict[str, float]:
    """Median microseconds per answered and per refused request."""
    try:
        import uvloop

        run = uvloop.run
    except ImportError:
        run = asyncio.run
    answers = [run(answered(requests, batch)) for _ in range(repeat)]
    refusals = [run(refused(requests)) for _ in range(repeat)]
    return {"answered_us": statistics.median(answers) * 1e6, "refused_us": statistics.median(refusals) * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=32, help="requests arriving together (one batch)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    figures = measure(args.requests, args.batch, args.repeat)
    print(f"answered: {figures['answered_us']:.1f} µs of Python per request (batches of {args.batch})")
    print(f"refused:  {figures['refused_us']:.1f} µs of Python per request (503 with Retry-After, connection held)")


if __name__ == "__main__":
    main()
