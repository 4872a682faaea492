"""Rolling update under load on 127.0.0.1: is any request lost when a server gets SIGTERM?

Each run replaces an "old" server by a "new" one, as a Deployment's rolling update (maxSurge 1, maxUnavailable 0)
replaces a pod, while ``--clients`` keep-alive clients send request after request:

1. the old server is the only backend; the clients connect and send for ``--before`` seconds;
2. the new server (started and ready beforehand, as the surge pod is before the old one goes) joins the backends,
   and the old server gets SIGTERM;
3. ``--endpoint-lag`` seconds later the old server leaves the backends: in Kubernetes the endpoint is removed as
   the pod turns terminating, and kube-proxy (or a proxy's endpoint list) catches up a moment later, which is what
   the server's ``SHUTDOWN_DELAY_S`` waits for; it must be longer than this lag;
4. the load goes on until the old server exited and ``--after`` seconds more.

The Service is emulated by the clients themselves: a client that opens a connection (its first, or after the
server closed one, or after an answer said ``Connection: close``) takes the next backend, round robin, from the
current list. Kept connections stay with their server, as they do behind a Service.

Every client counts what each request it sent came to: answered 200, another status (a 503 with ``Retry-After``
is waited out and the request sent again), or a failure: ``reset`` (ECONNRESET or EPIPE), ``closed`` (the server
closed the connection without an answer), ``refused`` (connect refused), ``timeout`` (no answer in 10 s). A failed
request is sent again on a new connection. Per run: requests answered (old server / new), failures by kind, the
old server's drain (SIGTERM to its last log line) and exit code, and the idle connections it closed (its log).

    python rollout_bench.py --size tiny --runs 10 --clients 64

The servers of all runs (runs + 1) start together and are all ready before the first run, then wait idle
(``--starts N``: N at a time, the next ones starting while the first runs go on).
"""

import argparse
import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402
from bench import analyze_request, review_texts, run_client  # noqa: E402
from make_model import build  # noqa: E402

FAILURES = ("reset", "closed", "refused", "timeout")
ANSWER_TIMEOUT_S = 10.0


class Backend:
    """A ``python -m sentiment`` process (or ``command``: a script that runs its `serve`) on a free port; its log
    lines are kept."""

    def __init__(self, env: dict, command: tuple = ("-m", "sentiment")):
        self.proc = subprocess.Popen([sys.executable, *command], cwd=HERE,
                                     env={**os.environ, "HOST": "127.0.0.1", "PORT": "0", "PYTHONPATH": str(HERE),
                                          **env},
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.port = 0
        self._listening = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)
            match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                self._listening.set()

    def wait_ready(self, timeout: float = 300.0) -> "Backend":
        deadline = time.monotonic() + timeout
        if not self._listening.wait(timeout):
            raise RuntimeError("server did not listen:\n" + "".join(self.lines))
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("server exited:\n" + "".join(self.lines)) from None
                time.sleep(0.1)
        raise RuntimeError("server not ready in time:\n" + "".join(self.lines))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)

    def stopped(self) -> bool:
        """The server logged its last line (its listener and connections are closed; the process exits)."""
        return self.proc.poll() is not None or any("stopped (exit code" in line for line in self.lines[-3:])

    def idle_closed(self) -> Optional[int]:
        """Idle connections the server closed, from its log: at SIGTERM (before the fix, "N idle connections
        closed"), or after the keep-alive timeout and at the drain timeout (None: not logged)."""
        log = "".join(self.lines)
        match = re.search(r"draining: \d+ texts pending, (\d+) idle connections closed", log)
        if match:
            return int(match.group(1))
        match = re.search(r"(\d+) closed idle after the keep-alive timeout, (\d+) quiet ones closed", log)
        return int(match.group(1)) + int(match.group(2)) if match else None


class Failure(Exception):
    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


class _Connection(bench._Connection):
    """`bench`'s keep-alive connection; `send` resolves with (status, Retry-After, Connection: close), or fails with
    `Failure` when the connection is lost before the whole answer came."""

    def answer(self, status: int, retry_after: int, close: bool) -> tuple:
        return status, retry_after, close

    def lost(self, exc: Optional[BaseException]) -> Exception:
        return Failure("reset" if isinstance(exc, (ConnectionResetError, BrokenPipeError)) else "closed")


async def one_run(old: Backend, new: Backend, clients: int, before: float, endpoint_lag: float,
                  after: float, think_ms: float = 0.0) -> dict:
    """One rolling update from ``old`` to ``new`` under ``clients`` closed-loop keep-alive clients."""
    loop = asyncio.get_running_loop()
    backends = [old.port]  # the Service's endpoints, as the clients see them
    turn = [0]
    requests = [analyze_request("127.0.0.1", 0, t) for t in review_texts(256, seed=3)]
    counts = {"ok": 0, "ok_old": 0, "ok_new": 0, "status": {}, **{kind: 0 for kind in FAILURES}}
    stopping = asyncio.Event()

    def pick() -> int:
        turn[0] += 1
        return backends[turn[0] % len(backends)]

    async def client(index: int) -> None:
        conn, port, i = None, 0, index
        think = random.Random(index)
        try:
            while not stopping.is_set():
                if think_ms:
                    await asyncio.sleep(think.uniform(0, think_ms / 1000))
                if conn is None or conn.transport.is_closing():
                    port = pick()
                    try:
                        _, conn = await loop.create_connection(_Connection, "127.0.0.1", port)
                    except OSError:
                        conn = None
                        counts["refused"] += 1
                        await asyncio.sleep(0.01)
                        continue
                try:
                    status, retry_after, _ = await asyncio.wait_for(conn.send(requests[i % len(requests)]),
                                                                    ANSWER_TIMEOUT_S)
                except Failure as failed:
                    counts[failed.kind] += 1
                    conn = None
                    continue
                except TimeoutError:
                    counts["timeout"] += 1
                    conn.transport.close()
                    conn = None
                    continue
                if status == 200:
                    counts["ok"] += 1
                    counts["ok_old" if port == old.port else "ok_new"] += 1
                    i += clients
                    continue
                counts["status"][status] = counts["status"].get(status, 0) + 1
                if status == 503:  # the documented refusal: wait out Retry-After, send the same request again
                    await asyncio.sleep(retry_after)
                else:
                    i += clients
        finally:
            if conn is not None:
                conn.transport.close()

    tasks = [loop.create_task(client(i)) for i in range(clients)]
    await asyncio.sleep(before)
    backends.append(new.port)  # the new pod is ready: its endpoint is added
    sigterm_at = time.monotonic()
    old.proc.send_signal(signal.SIGTERM)
    await asyncio.sleep(endpoint_lag)
    backends.remove(old.port)  # the old pod's endpoint is gone from every client's view
    while not old.stopped() and time.monotonic() < sigterm_at + 60:
        await asyncio.sleep(0.02)
    drain_s = time.monotonic() - sigterm_at
    await asyncio.sleep(after)
    stopping.set()
    _, stuck = await asyncio.wait(tasks, timeout=ANSWER_TIMEOUT_S + 5)
    for task in stuck:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    failed = sum(counts[kind] for kind in FAILURES)
    exit_code = await loop.run_in_executor(None, old.proc.wait, 30)
    return {**counts, "failed": failed, "requests": counts["ok"] + failed + sum(counts["status"].values()),
            "exit_code": exit_code, "drain_s": drain_s, "idle_closed": old.idle_closed(), "stuck_clients": len(stuck)}


def rollouts(model_dir: str, runs: int, clients: int, env: dict, before: float = 0.5, endpoint_lag: float = 0.2,
             after: float = 0.3, starts: int = 0, think_ms: float = 0.0, report=None,
             command: tuple = ("-m", "sentiment")) -> list[dict]:
    """``runs`` rolling updates in a row, each from the previous run's new server to a fresh one; per-run figures
    (`one_run`). ``report(index, run)`` is called after each run."""
    env = {"MODEL_PATH": model_dir, **env}
    pool = ThreadPoolExecutor(max_workers=starts or runs + 1)
    started = [pool.submit(lambda: Backend(env, command).wait_ready()) for _ in range(runs + 1)]
    results = []
    try:
        if not starts:  # all at once: let them all finish loading before the first run
            for future in started:
                future.result()
        for index in range(runs):
            old, new = started[index].result(), started[index + 1].result()
            run = run_client(one_run(old, new, clients, before, endpoint_lag, after, think_ms))
            results.append(run)
            if report is not None:
                report(index, run)
    finally:
        pool.shutdown(wait=True)
        for future in started:
            if future.done() and future.exception() is None:
                future.result().stop()
    return results


def line(index: int, run: dict) -> str:
    kinds = ", ".join(f"{kind} {run[kind]}" for kind in FAILURES)
    other = ", ".join(f"{status}: {n}" for status, n in sorted(run["status"].items())) or "none"
    return (f"run {index + 1:2d}: {run['requests']:5d} requests, {run['ok']:5d} answered 200 ({run['ok_old']} old, "
            f"{run['ok_new']} new), failed {run['failed']} ({kinds}), other statuses: {other}; old server stopped "
            f"{run['drain_s']:.2f} s after SIGTERM, exit {run['exit_code']}, idle connections it closed "
            f"{run['idle_closed']}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Rolling updates under keep-alive load (see module docstring).")
    parser.add_argument("--model", help="model directory (default: build one with make_model.py --size)")
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--before", type=float, default=0.5, help="seconds of load on the old server alone")
    parser.add_argument("--endpoint-lag", type=float, default=0.2, help="seconds from SIGTERM until the old server "
                        "leaves the backends (below --shutdown-delay)")
    parser.add_argument("--think-ms", type=float, default=0.0, help="each client pauses a random 0 to this many ms "
                        "before each request (the time a real client spends between an answer and its next request)")
    parser.add_argument("--after", type=float, default=0.3, help="seconds of load after the old server exited")
    parser.add_argument("--shutdown-delay", type=float, default=1.0, help="the servers' SHUTDOWN_DELAY_S")
    parser.add_argument("--drain-timeout", type=float, default=20.0, help="the servers' DRAIN_TIMEOUT_S")
    parser.add_argument("--model-worker", default="process", choices=("process", "thread"))
    parser.add_argument("--starts", type=int, default=0, help="servers starting at once (0: all)")
    parser.add_argument("--json", help="also write the per-run figures to this file")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env = {"SHUTDOWN_DELAY_S": str(args.shutdown_delay), "DRAIN_TIMEOUT_S": str(args.drain_timeout),
           "MODEL_WORKER": args.model_worker}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or str(build(Path(tmp) / f"model-{args.size}", args.size))
        print(f"{args.runs} rolling updates, {args.clients} keep-alive clients, {os.cpu_count()} CPUs, "
              f"SHUTDOWN_DELAY_S={args.shutdown_delay:g}, endpoint lag {args.endpoint_lag:g} s, "
              f"think {args.think_ms:g} ms, MODEL_WORKER={args.model_worker}", flush=True)
        results = rollouts(model_dir, args.runs, args.clients, env, args.before, args.endpoint_lag, args.after,
                           args.starts, args.think_ms, report=lambda i, run: print(line(i, run), flush=True))
    requests = sum(r["requests"] for r in results)
    failed = sum(r["failed"] for r in results)
    print(f"total: {requests} requests, {failed} failed ({100 * failed / max(requests, 1):.2f} %), "
          f"runs with a failure: {sum(1 for r in results if r['failed'])} of {len(results)}; "
          + ", ".join(f"{kind} {sum(r[kind] for r in results)}" for kind in FAILURES))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
