"""Benchmark: the server against the model's raw batched ceiling and against a naive one-forward-per-request server.

One run, one model, one machine:

(a) raw: ``Classifier.predict`` on batches of ``--max-batch-size`` texts in a tight loop, no HTTP (the ceiling);
(b) server: ``python -m sentiment`` (dynamic micro-batching) under closed-loop load at each ``--concurrency``,
    one text per request, throughput and p50/p99 latency;
(c) naive: the same model worker, tokenizer and HTTP stack, but one forward pass per request (no batching),
    under the same load.

It prints a table and the ratios server/raw and server/naive (target at concurrency 64: >= 0.8 and >= 5).

    python bench.py --size base                # build a DistilBERT-base-sized model with random weights
    python bench.py --model /models/sst2       # or benchmark a model directory

The load generator is a minimal keep-alive HTTP/1.1 client on asyncio protocols: on a small machine the client
shares the CPU with the server, so it must cost as little as possible per request.
"""

import argparse
import asyncio
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# Before anything imports torch (make_model does): the same OpenMP wait policy as the server (classifier.py),
# or the raw loop's spinning OpenMP threads starve the tokenizer's threads (measured 50x slower on 2 cores).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from make_model import WORDS, build  # noqa: E402


def review_texts(count: int, seed: int = 0) -> list[str]:
    """Product-review-like texts of 5 to 30 words (deterministic)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) + "." for _ in range(count)]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100.0 * len(ordered))))
    return ordered[rank - 1]


# ---------------------------------------------------------------------------------------------------------
# (a) raw batched throughput


class RawLoop:
    """The model in this process: ``predict`` on full batches back to back, no HTTP, no queue."""

    def __init__(self, model_dir: str, batch_size: int, device: str, dtype: str, threads: int):
        from sentiment.classifier import Classifier

        self.classifier = Classifier(model_dir, device, dtype, threads=threads)
        self.classifier.warm_up(batch_size)
        self.batch_size = batch_size
        self.texts = review_texts(4096, seed=1)

    def run(self, duration: float) -> dict:
        done = 0
        started = time.perf_counter()
        while time.perf_counter() - started < duration:
            batch = [self.texts[(done + k) % len(self.texts)] for k in range(self.batch_size)]
            self.classifier.predict(batch)
            done += self.batch_size
        elapsed = time.perf_counter() - started
        return {"batch_size": self.batch_size, "texts_per_s": done / elapsed,
                "device": str(self.classifier.device), "dtype": str(self.classifier.dtype).replace("torch.", "")}


# ---------------------------------------------------------------------------------------------------------
# (b, c) closed-loop HTTP load


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; `send` writes a request and resolves with the status code."""

    def __init__(self) -> None:
        self.transport: Optional[asyncio.Transport] = None
        self.buffer = bytearray()
        self.waiter: Optional[asyncio.Future] = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buffer[:end]).decode("latin-1")
        match = re.search(r"(?im)^content-length:\s*(\d+)", head)
        length = int(match.group(1)) if match else 0
        if len(self.buffer) < end + 4 + length:
            return
        status = int(head.split(" ", 2)[1])
        del self.buffer[:end + 4 + length]
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(status)

    def connection_lost(self, exc) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("connection closed"))

    def send(self, request: bytes) -> asyncio.Future:
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self.waiter


def analyze_request(host: str, port: int, text: str) -> bytes:
    body = json.dumps({"text": text}).encode()
    return (f"POST /analyze HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def closed_loop(host: str, port: int, concurrency: int, duration: float, warmup: float) -> dict:
    """``concurrency`` clients, each sending its next request when the previous one is answered."""
    loop = asyncio.get_running_loop()
    requests = [analyze_request(host, port, t) for t in review_texts(1024, seed=2)]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    measure_from = loop.time() + warmup
    stop_at = measure_from + duration

    async def client(index: int) -> None:
        _, conn = await loop.create_connection(_Connection, host, port)
        i = index
        try:
            while True:
                started = loop.time()
                if started >= stop_at:
                    return
                status = await conn.send(requests[i % len(requests)])
                i += concurrency
                if started >= measure_from:
                    latencies.append(loop.time() - started)
                    statuses[status] = statuses.get(status, 0) + 1
        finally:
            conn.transport.close()

    await asyncio.gather(*(client(i) for i in range(concurrency)))
    ok = statuses.get(200, 0)
    return {"concurrency": concurrency, "requests": len(latencies), "ok": ok, "statuses": statuses,
            "texts_per_s": ok / duration, "p50_ms": percentile(latencies, 50) * 1000,
            "p99_ms": percentile(latencies, 99) * 1000}


# ---------------------------------------------------------------------------------------------------------
# Server processes


def start_process(args: list[str], env: dict) -> tuple[subprocess.Popen, int]:
    """Start a server that logs ``listening on HOST:PORT`` and wait until /readyz says 200."""
    proc = subprocess.Popen([sys.executable, *args], cwd=HERE, env={**os.environ, **env},
                            stderr=subprocess.PIPE, text=True)
    port = None
    deadline = time.monotonic() + 300
    while port is None:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError(f"{args} exited with {proc.wait()}")
        match = re.search(r"listening on [^:]+:(\d+)", line)
        port = int(match.group(1)) if match else None
        if time.monotonic() > deadline:
            raise RuntimeError(f"{args} did not start")
    # Keep draining stderr so the server never blocks on a full pipe.
    threading.Thread(target=_discard, args=(proc.stderr,), daemon=True).start()
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
                if resp.status == 200:
                    return proc, port
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{args} never became ready")


def _discard(stream) -> None:
    for _ in stream:
        pass


def stop_process(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve_naive(model_dir: str, port: int, device: str, dtype: str, threads: int, model_worker: str) -> None:
    """The baseline: the server's model worker and HTTP stack, one forward pass per request, one at a time."""
    import logging
    from concurrent.futures import ThreadPoolExecutor

    from aiohttp import web
    from sentiment.server import load_classifier
    from sentiment.settings import Settings

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    classifier = load_classifier(Settings(model_path=model_dir, device=device, dtype=dtype, torch_threads=threads,
                                          model_worker=model_worker))
    classifier.warm_up(1)
    worker = ThreadPoolExecutor(max_workers=1)

    async def analyze(request: web.Request) -> web.Response:
        text = json.loads(await request.read())["text"]
        prediction = (await asyncio.get_running_loop().run_in_executor(worker, classifier.predict, [text]))[0]
        return web.json_response({"label": prediction.label, "score": round(prediction.score, 6)})

    async def readyz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ready"})

    async def run() -> None:
        app = web.Application()
        app.router.add_post("/analyze", analyze)
        app.router.add_get("/readyz", readyz)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
        await site.start()
        logging.info("listening on 127.0.0.1:%s", runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(run())


# ---------------------------------------------------------------------------------------------------------


def median_of(runs: list[dict]) -> dict:
    """Per-field median over rounds (throughputs and latencies alike); statuses summed."""
    out = dict(runs[0])
    for key in ("texts_per_s", "p50_ms", "p99_ms"):
        if key in out:
            out[key] = statistics.median(r[key] for r in runs)
    if "statuses" in out:
        statuses: dict = {}
        for r in runs:
            for code, n in r["statuses"].items():
                statuses[code] = statuses.get(code, 0) + n
        out["statuses"] = statuses
    out["rounds"] = [round(r["texts_per_s"], 1) for r in runs]
    return out


def report(raw: dict, server: list[dict], naive: list[dict], meta: dict) -> str:
    lines = [
        f"model {meta['model']} ({meta['size']}), device {raw['device']} {raw['dtype']}, "
        f"max batch {meta['max_batch_size']}, max wait {meta['max_wait_ms']} ms, model in a {meta['model_worker']}, "
        f"{meta['cpus']} CPUs, "
        f"medians of {meta['rounds']} rounds of {meta['duration_s']:g} s",
        f"(a) raw batched throughput at batch {raw['batch_size']}: {raw['texts_per_s']:.1f} texts/s "
        f"(rounds: {raw['rounds']})",
        "",
        f"{'concurrency':>11} | {'server/s':>9} {'p50 ms':>8} {'p99 ms':>8} | {'naive/s':>9} {'p50 ms':>8} "
        f"{'p99 ms':>8} | {'srv/raw':>7} {'srv/naive':>9}",
    ]
    for s, n in zip(server, naive, strict=True):
        lines.append(
            f"{s['concurrency']:>11} | {s['texts_per_s']:>9.1f} {s['p50_ms']:>8.1f} {s['p99_ms']:>8.1f} | "
            f"{n['texts_per_s']:>9.1f} {n['p50_ms']:>8.1f} {n['p99_ms']:>8.1f} | "
            f"{s['texts_per_s'] / raw['texts_per_s']:>7.2f} {s['texts_per_s'] / max(n['texts_per_s'], 1e-9):>9.2f}")
    non_200 = {c["concurrency"]: c["statuses"] for c in server + naive if set(c["statuses"]) - {200}}
    lines.append(f"non-200 answers: {non_200 or 'none'}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the sentiment server (see module docstring).")
    parser.add_argument("--model", help="model directory (default: build one with make_model.py --size)")
    parser.add_argument("--size", default="base", help="size for the built model: tiny, small, base, large")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    parser.add_argument("--model-worker", default="process", choices=("process", "thread"),
                        help="where the servers run the model (the app's MODEL_WORKER)")
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--max-wait-ms", type=float, default=5.0)
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds measured per load level")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before measuring")
    parser.add_argument("--rounds", type=int, default=3, help="measurement rounds (medians are reported)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--serve-naive", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve_naive:
        serve_naive(args.model, args.port, args.device, args.dtype, args.threads, args.model_worker)
        return
    levels = [int(c) for c in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or str(build(Path(tmp) / f"model-{args.size}", args.size))
        common = ["--device", args.device, "--dtype", args.dtype, "--threads", str(args.threads),
                  "--model-worker", args.model_worker]
        env = {"MODEL_PATH": model_dir, "HOST": "127.0.0.1", "PORT": "0", "DEVICE": args.device,
               "DTYPE": args.dtype, "MAX_BATCH_SIZE": str(args.max_batch_size), "MAX_WAIT_MS": str(args.max_wait_ms),
               "TORCH_THREADS": str(args.threads), "MAX_QUEUE": str(max(1024, 4 * max(levels))),
               "MODEL_WORKER": args.model_worker}
        # Both servers stay up (idle when not under load); rounds interleave raw, server and naive so that
        # whatever else the machine runs meanwhile weighs on all three alike. Medians over rounds are reported.
        processes = [start_process(["-m", "sentiment"], env),
                     start_process([str(HERE / "bench.py"), "--serve-naive", "--model", model_dir, *common], {})]
        try:
            raw_loop = RawLoop(model_dir, args.max_batch_size, args.device, args.dtype, args.threads)
            raw_runs, server_runs, naive_runs = [], [[] for _ in levels], [[] for _ in levels]
            for round_index in range(args.rounds):
                raw_runs.append(raw_loop.run(args.duration))
                for i, level in enumerate(levels):
                    for port, runs in ((processes[0][1], server_runs), (processes[1][1], naive_runs)):
                        runs[i].append(asyncio.run(closed_loop("127.0.0.1", port, level, args.duration,
                                                               args.warmup)))
                print(f"round {round_index + 1}: raw {raw_runs[-1]['texts_per_s']:.1f}/s, server "
                      f"{[round(r[-1]['texts_per_s'], 1) for r in server_runs]}, naive "
                      f"{[round(r[-1]['texts_per_s'], 1) for r in naive_runs]}", flush=True)
        finally:
            for proc, _ in processes:
                stop_process(proc)
    raw = median_of(raw_runs)
    server = [median_of(r) for r in server_runs]
    naive = [median_of(r) for r in naive_runs]
    meta = {"model": args.model or "random weights", "size": args.size if not args.model else "-",
            "max_batch_size": args.max_batch_size, "max_wait_ms": args.max_wait_ms, "cpus": os.cpu_count(),
            "rounds": args.rounds, "duration_s": args.duration, "model_worker": args.model_worker}
    print(report(raw, server, naive, meta))
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "raw": raw, "server": server, "naive": naive}, indent=2))


if __name__ == "__main__":
    main()
