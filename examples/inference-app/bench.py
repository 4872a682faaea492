"""Benchmark: the server against the model's raw batched ceiling and against a naive Flask + pipeline server.

One run, one model, one machine, rounds interleaved (so whatever else the machine does weighs on all alike;
medians over rounds are reported):

(a) raw: ``Classifier.predict`` on full batches of ``--max-batch-size`` texts back to back, no HTTP: the ceiling;
(b) server: ``python -m sentiment`` under closed-loop load (one text per request) at each ``--concurrency``,
    clients honouring ``Retry-After`` (a refused client sleeps that long); then at ``--ignore-levels`` clients
    that resend at once, and at the top level clients that also send ``X-Request-Timeout-Ms:
    --shed-timeout-ms``, a deadline short enough that the server must shed most of them;
(c) naive: naive_server.py, Flask's threaded server and ``transformers.pipeline``, one forward per request.

Per row: good answers per second (texts/s), p50/p99 latency of good answers, the shed fraction (503s of all
answers), the load generator's CPU (cores: it shares the machine with the servers) and the server's (its
process and the model workers), the CPU per good answer of each of the three, and the TCP segments per answer
(Linux: the host's count, so both directions over loopback; a request answered within the kernel's delayed-ack
time has its acknowledgement ride on the answer, a longer wait costs a bare acknowledgement of its own).
It checks the targets: concurrency 1 p50 <= 1.2 x naive; concurrency 64 >= 0.8 x raw; goodput at the two top
levels >= 0.95 x the peak, whether clients honour Retry-After or not; p99 of answered requests within the
deadline at the top level.

    python bench.py --size tiny                  # build a model with random weights (tiny, mini, small, base)
    python bench.py --model /models/sst2         # or benchmark a model directory

The load generator is a minimal keep-alive HTTP/1.1 client on asyncio protocols, about 40 µs of CPU per request:
on a small machine the client shares the CPU with the server, so it must cost as little as possible.
"""

import argparse
import asyncio
import gc
import json
import math
import os
import random
import re
import resource
import signal
import socket
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

DEFAULT_DEADLINE_MS = 1000.0  # the server's DEADLINE_MS default (sentiment/settings.py)
GRACE_S = 10.0  # how long after its window a load level waits for answers still outstanding
TARGETS = {"c1_p50_vs_naive": 1.2, "c64_vs_raw": 0.8, "goodput_vs_peak": 0.95}


def review_texts(count: int, seed: int = 0) -> list[str]:
    """Product-review-like texts of 5 to 30 words (deterministic)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) + "." for _ in range(count)]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a list (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100.0 * len(ordered))))
    return ordered[rank - 1]


def cpu_times(pids: list[int]) -> tuple[float, float]:
    """User and system CPU seconds of these processes so far (Linux /proc; 0 for a process that is gone)."""
    user = system = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user += int(fields[11]) / os.sysconf("SC_CLK_TCK")
        system += int(fields[12]) / os.sysconf("SC_CLK_TCK")
    return user, system


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far (Linux /proc; 0 for a process that is gone)."""
    return sum(cpu_times(pids))


def host_idle(stat: Path = Path("/proc/stat")) -> Optional[tuple[int, int]]:
    """(idle, total) CPU time of the host so far, in clock ticks (Linux: the ``cpu`` line of /proc/stat, idle and
    iowait counted idle; None elsewhere): whether a slower row lost CPU time to idleness or spent more per answer."""
    try:
        fields = [int(x) for x in stat.read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    return fields[3] + fields[4], sum(fields)


def tcp_segments_sent(snmp: Path = Path("/proc/net/snmp")) -> Optional[int]:
    """TCP segments the host has sent so far (Linux: ``OutSegs`` of the ``Tcp:`` lines of /proc/net/snmp; None
    elsewhere). Host-wide: over loopback it counts every segment between the load generator and the servers once,
    data and bare acknowledgements alike."""
    try:
        header, values = [line.split() for line in snmp.read_text().splitlines() if line.startswith("Tcp:")][:2]
        return int(values[header.index("OutSegs")])
    except (OSError, ValueError):
        return None


def process_tree(pid: int) -> list[int]:
    """``pid`` and its children (the server's model worker)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(pid):
                    children.append(int(entry.name))
            except OSError:
                continue
    return [pid, *children]


def settle(pids: list[int], quiet_cores: float = 0.05, timeout: float = 60.0) -> None:
    """Wait until these processes use less than ``quiet_cores`` of CPU (over half a second): a server still
    working off the previous row's backlog (the naive server's threads, after 1024 clients) would otherwise take
    the next row's CPU."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = cpu_seconds(pids)
        time.sleep(0.5)
        if cpu_seconds(pids) - before < quiet_cores * 0.5:
            return


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


def _header(head: bytes, name: bytes) -> Optional[bytes]:
    """The value of the header ``name`` (b"\\r\\nname:", lower case) in a lower-cased response head whose
    lines all end with CRLF; a few string searches instead of regular expressions: 1.4 µs instead of 4 µs a
    response, and the load generator shares the CPU with the server."""
    start = head.find(name)
    if start < 0:
        return None
    start += len(name)
    return head[start:head.find(b"\r\n", start)].strip()


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; `send` writes a request and resolves with (status, Retry-After)."""

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
        head = bytes(self.buffer[:end + 2]).lower()  # each header line ends with CRLF
        length = int(_header(head, b"\r\ncontent-length:") or 0)
        if len(self.buffer) < end + 4 + length:
            return
        status = int(head[9:12])
        retry = _header(head, b"\r\nretry-after:")
        del self.buffer[:end + 4 + length]
        close = _header(head, b"\r\nconnection:") == b"close"
        if close:  # the next request goes on a new connection
            self.transport.close()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(self.answer(status, int(retry) if retry else 0, close))

    def answer(self, status: int, retry_after: int, close: bool) -> tuple:
        """What `send` resolves with: (status, Retry-After)."""
        return status, retry_after

    def connection_lost(self, exc) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(self.lost(exc))

    def lost(self, exc: Optional[BaseException]) -> Exception:
        """What `send` fails with when the connection closes before the whole answer came."""
        return ConnectionError("connection closed")

    def send(self, request: bytes) -> asyncio.Future:
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self.waiter


def analyze_request(host: str, port: int, text: str, timeout_ms: Optional[float] = None) -> bytes:
    body = json.dumps({"text": text}).encode()
    extra = f"X-Request-Timeout-Ms: {timeout_ms:g}\r\n" if timeout_ms else ""
    return (f"POST /analyze HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def closed_loop(host: str, port: int, concurrency: int, duration: float, warmup: float,
                      honour_retry_after: bool = True, timeout_ms: Optional[float] = None,
                      server_pids: Optional[list[int]] = None) -> dict:
    """``concurrency`` clients, each sending its next request when the previous one is answered (or, after a 503,
    once its Retry-After passed, unless ``honour_retry_after`` is false)."""
    loop = asyncio.get_running_loop()
    requests = [analyze_request(host, port, t, timeout_ms) for t in review_texts(1024, seed=2)]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    measure_from = loop.time() + warmup
    stop_at = measure_from + duration
    marks: dict[str, tuple[float, float]] = {}

    loop_pid, worker_pids = (server_pids or [None])[0], (server_pids or [])[1:]

    def mark() -> tuple[float, float, tuple[float, float], Optional[int], Optional[tuple[int, int]]]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return (usage.ru_utime + usage.ru_stime, cpu_seconds([loop_pid] if loop_pid else []),
                cpu_times(worker_pids), tcp_segments_sent(), host_idle())

    async def client(index: int) -> None:
        conn = None
        i = index
        try:
            while loop.time() < stop_at:
                if conn is None or conn.transport.is_closing():
                    _, conn = await loop.create_connection(_Connection, host, port)
                started = loop.time()
                try:
                    status, retry_after = await conn.send(requests[i % len(requests)])
                except ConnectionError:
                    conn = None
                    status, retry_after = 0, 0
                i += concurrency
                if started >= measure_from and loop.time() <= stop_at:
                    statuses[status] = statuses.get(status, 0) + 1
                    if status == 200:
                        latencies.append(loop.time() - started)
                if status == 503 and honour_retry_after:
                    await asyncio.sleep(min(retry_after, max(0.0, stop_at - loop.time())))
        finally:
            if conn is not None:
                conn.transport.close()

    async def meter() -> None:
        await asyncio.sleep(max(0.0, measure_from - loop.time()))
        marks["start"] = mark()
        await asyncio.sleep(max(0.0, stop_at - loop.time()))
        marks["stop"] = mark()

    # Bounded: a client still waiting GRACE_S after the window (a server that stopped answering, a connection
    # stuck in the listen backlog) is cancelled and counted as stuck.
    tasks = [loop.create_task(client(i)) for i in range(concurrency)]
    await meter()
    _, stuck = await asyncio.wait(tasks, timeout=max(0.0, stop_at + GRACE_S - loop.time()))
    for task in stuck:
        task.cancel()
    await asyncio.gather(*stuck, return_exceptions=True)
    answered = sum(statuses.values())
    ok = statuses.get(200, 0)
    (client0, loop0, (user0, system0), segments0, host0) = marks["start"]
    (client1, loop1, (user1, system1), segments1, host1) = marks["stop"]
    workers0, workers1 = user0 + system0, user1 + system1
    per_ok = 1e6 / max(ok, 1)  # µs of CPU per good answer
    return {"concurrency": concurrency, "honour_retry_after": honour_retry_after, "timeout_ms": timeout_ms,
            "requests": answered, "ok": ok, "statuses": statuses, "texts_per_s": ok / duration,
            "shed": statuses.get(503, 0) / max(answered, 1), "p50_ms": percentile(latencies, 50) * 1000,
            "p99_ms": percentile(latencies, 99) * 1000, "stuck_clients": len(stuck),
            "client_cores": (client1 - client0) / duration,
            "server_cores": (loop1 + workers1 - loop0 - workers0) / duration,
            "client_us_per_ok": (client1 - client0) * per_ok, "loop_us_per_ok": (loop1 - loop0) * per_ok,
            "model_us_per_ok": (workers1 - workers0) * per_ok,
            "model_system_us_per_ok": (system1 - system0) * per_ok,
            "idle_fraction": (None if host0 is None or host1 is None
                              else (host1[0] - host0[0]) / max(host1[1] - host0[1], 1)),
            "tcp_segments_per_request": (None if segments0 is None or segments1 is None
                                         else (segments1 - segments0) / max(answered, 1))}


# ---------------------------------------------------------------------------------------------------------
# Server processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_process(args: list[str], env: dict, probe: bytes = b"") -> tuple[subprocess.Popen, int]:
    """Start a server that logs ``listening on HOST:PORT``; wait until it answers /readyz (or ``probe``, a POST
    /analyze body, for a server without /readyz) with 200."""
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
        url = f"http://127.0.0.1:{port}/" + ("analyze" if probe else "readyz")
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=probe or None), timeout=5) as resp:
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


# ---------------------------------------------------------------------------------------------------------
# Figures


def median_of(runs: list[dict]) -> dict:
    """Per-field median over rounds (throughputs, latencies, fractions, CPU alike); statuses summed."""
    out = dict(runs[0])
    for key in ("texts_per_s", "p50_ms", "p99_ms", "shed", "client_cores", "server_cores", "client_us_per_ok",
                "loop_us_per_ok", "model_us_per_ok", "model_system_us_per_ok", "tcp_segments_per_request",
                "idle_fraction"):
        if key in out:
            values = [r.get(key) for r in runs]
            out[key] = None if None in values else statistics.median(values)
    if "statuses" in out:
        statuses: dict = {}
        for r in runs:
            for code, n in r["statuses"].items():
                statuses[code] = statuses.get(code, 0) + n
        out["statuses"] = statuses
    out["rounds"] = [round(r["texts_per_s"], 1) for r in runs]
    return out


def round_order(rows: list[tuple], round_index: int) -> list[int]:
    """The order the rows (indices) run in a round: as listed in even rounds, reversed in odd ones. The machine's
    speed drifts within a round too (a shared VM: the raw loop alone varied 20 % between rounds); reversing
    every other round makes the drift weigh on the first and the last rows alike, so the medians compare the rows,
    not the moment they ran."""
    order = list(range(len(rows)))
    return order if round_index % 2 == 0 else order[::-1]


def row_label(run: dict) -> str:
    clients = "honour" if run["honour_retry_after"] else "ignore"
    timeout = f", {run['timeout_ms']:g} ms" if run.get("timeout_ms") else ""
    return f"{run['concurrency']} {clients}{timeout}"


def per_round_ratio(numerator: dict, denominator: dict) -> float:
    """Median over rounds of numerator / denominator throughput, each round against its own: the machine's speed
    drifts between rounds, a ratio within a round does not."""
    return statistics.median(n / max(d, 1e-9) for n, d in zip(numerator["rounds"], denominator["rounds"], strict=True))


def peak_ratio(run: dict, honouring: list[dict]) -> float:
    """A row's goodput over the peak: its median over rounds against the best median of the honouring rows.
    Not per round: the best of several rows within one round is the maximum of noisy figures, pulled up by the
    noise itself (on the development machine rows with identical load differed by 6-12 % within a round), so a
    row as fast as the peak would measure below 1. Every median is taken over the same interleaved rounds
    (`round_order`), so drift weighs on all rows alike."""
    return run["texts_per_s"] / max(max(r["texts_per_s"] for r in honouring), 1e-9)


def targets(raw: dict, server: list[dict], naive: dict, deadline_ms: float) -> list[tuple[str, float, float, bool]]:
    """(what, measured, target, met) for each target the issue sets; ``naive`` maps concurrency -> row.
    Server / raw is a median of per-round ratios (`per_round_ratio`); goodput / peak a ratio of medians
    (`peak_ratio`)."""
    honour = {r["concurrency"]: r for r in server if r["honour_retry_after"] and not r["timeout_ms"]}
    top = sorted(honour)[-2:]
    checks = []
    if 1 in honour and 1 in naive:
        ratio = honour[1]["p50_ms"] / max(naive[1]["p50_ms"], 1e-9)
        checks.append(("concurrency 1: p50 server / naive", ratio, TARGETS["c1_p50_vs_naive"],
                       ratio <= TARGETS["c1_p50_vs_naive"]))
    if 64 in honour:
        ratio = per_round_ratio(honour[64], raw)
        checks.append(("concurrency 64: server / raw", ratio, TARGETS["c64_vs_raw"], ratio >= TARGETS["c64_vs_raw"]))
    for run in server:
        if run["concurrency"] in top:
            ratio = peak_ratio(run, list(honour.values()))
            checks.append((f"goodput {row_label(run)} / peak", ratio, TARGETS["goodput_vs_peak"],
                           ratio >= TARGETS["goodput_vs_peak"]))
        # The server's deadline at the top level. (Rows with a shorter client timeout report their p99 only: it
        # is measured by this load generator, which shares the CPU, and for clients that ignore Retry-After it
        # includes the time their early resends waited, unread, for it.)
        if run["concurrency"] == max(honour) and run["ok"] and not run["timeout_ms"]:
            checks.append((f"p99 ms of answered, {row_label(run)}", run["p99_ms"], deadline_ms,
                           run["p99_ms"] <= deadline_ms))
    return checks


def report(raw: dict, server: list[dict], naive: dict, meta: dict) -> str:
    naive_peak = max((n["texts_per_s"] for n in naive.values()), default=0.0)
    lines = [
        f"model {meta['model']} ({meta['size']}), device {raw['device']} {raw['dtype']}, max batch "
        f"{meta['max_batch_size']}, max wait {meta['max_wait_ms']:g} ms, deadline {meta['deadline_ms']:g} ms, model "
        f"in {meta['model_workers']} {meta['model_worker']}(es), {meta['cpus']} CPUs ({meta['cpu_model']}), "
        f"medians of {meta['rounds']} rounds of {meta['duration_s']:g} s, load generator on "
        f"{meta.get('client_event_loop', 'asyncio')}",
        f"(a) raw batched throughput at batch {raw['batch_size']}: {raw['texts_per_s']:.1f} texts/s "
        f"(rounds: {raw['rounds']})",
        f"(c) naive peak: {naive_peak:.1f} texts/s",
        "",
        f"{'clients':>18} | {'server/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'shed':>5} | {'naive/s':>7} {'p50 ms':>7} "
        f"{'p99 ms':>7} | {'srv/raw':>7} {'srv/naive':>9} | {'cpu load':>8} {'cpu srv':>7} | "
        f"{'µs/ok load loop model':>21} {'seg/req':>7}",
    ]
    for s in server:
        n = naive.get(s["concurrency"]) if s["honour_retry_after"] and not s["timeout_ms"] else None
        naive_cells = (f"{n['texts_per_s']:>7.1f} {n['p50_ms']:>7.1f} {n['p99_ms']:>7.1f}" if n
                       else f"{'':>7} {'':>7} {'':>7}")
        versus_naive = f"{s['texts_per_s'] / max(n['texts_per_s'], 1e-9):>9.2f}" if n else f"{'':>9}"
        lines.append(
            f"{row_label(s):>18} | {s['texts_per_s']:>8.1f} {s['p50_ms']:>7.1f} {s['p99_ms']:>7.1f} "
            f"{s['shed']:>5.2f} | {naive_cells} | {s['texts_per_s'] / raw['texts_per_s']:>7.2f} {versus_naive} | "
            f"{s['client_cores']:>8.2f} {s['server_cores']:>7.2f} | {cpu_per_answer(s):>21} "
            f"{segments_cell(s):>7}")
    lines.append("cpu load / cpu srv: cores used by the load generator / by the server and its model workers; "
                 "µs/ok: CPU per good answer of the load generator, the server's event loop and its model workers; "
                 "seg/req: TCP segments per answer, both directions (the host's count)")
    other = {row_label(c): {k: v for k, v in c["statuses"].items() if k not in (200, 503)} for c in server}
    other.update({f"naive {c}": {k: v for k, v in r["statuses"].items() if k != 200} for c, r in naive.items()})
    other = {k: v for k, v in other.items() if v}
    lines.append(f"answers other than 200 and 503: {other or 'none'}")
    lines.append("")
    lines.append("targets:")
    for what, measured, target, met in targets(raw, server, naive, meta["deadline_ms"]):
        sign = "<=" if "p50" in what or "p99" in what else ">="
        lines.append(f"  {what}: {measured:.2f} (target {sign} {target:g}) {'met' if met else 'MISSED'}")
    return "\n".join(lines)


def cpu_per_answer(run: dict) -> str:
    """``load loop model``: µs of CPU per good answer (absent from rows measured before they were recorded)."""
    keys = ("client_us_per_ok", "loop_us_per_ok", "model_us_per_ok")
    return " ".join(f"{run[k]:.0f}" for k in keys) if all(run.get(k) is not None for k in keys) else "-"


def segments_cell(run: dict) -> str:
    segments = run.get("tcp_segments_per_request")
    return "-" if segments is None else f"{segments:.2f}"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


try:  # the load generator on uvloop (a dev dependency, as in the server's image): less of the shared CPU per request
    import uvloop

    run_client, CLIENT_EVENT_LOOP = uvloop.run, "uvloop"
except ImportError:
    run_client, CLIENT_EVENT_LOOP = asyncio.run, "asyncio"


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The model and server settings, and the length of a row (shared with paired_rows.py)."""
    parser.add_argument("--model", help="model directory (default: build one with make_model.py --size)")
    parser.add_argument("--size", default="tiny", help="size for the built model: tiny, mini, small, base, large")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    parser.add_argument("--model-worker", default="process", choices=("process", "thread"),
                        help="where the server runs the model (the app's MODEL_WORKER)")
    parser.add_argument("--model-workers", type=int, default=0, help="the server's MODEL_WORKERS (0: the CPU "
                        "count on CPU, 1 on a GPU)")
    parser.add_argument("--max-batch-size", type=int, default=32)
    parser.add_argument("--max-wait-ms", type=float, default=0.0)
    parser.add_argument("--deadline-ms", type=float, default=DEFAULT_DEADLINE_MS, help="the server's DEADLINE_MS")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per row")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before measuring")


def server_env(args: argparse.Namespace, model_dir: str, most_clients: int) -> dict:
    """The server's environment for these arguments (`add_server_arguments`); its queue holds every client's text."""
    workers = args.model_workers or (os.cpu_count() or 1 if args.device == "cpu" else 1)
    return {"MODEL_PATH": model_dir, "HOST": "127.0.0.1", "PORT": "0", "DEVICE": args.device,
            "DTYPE": args.dtype, "MAX_BATCH_SIZE": str(args.max_batch_size), "MAX_WAIT_MS": str(args.max_wait_ms),
            "DEADLINE_MS": str(args.deadline_ms), "TORCH_THREADS": str(args.threads),
            "MAX_QUEUE": str(max(1024, 4 * most_clients)), "MODEL_WORKER": args.model_worker,
            "MODEL_WORKERS": str(workers if args.model_worker == "process" else 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the sentiment server (see module docstring).")
    add_server_arguments(parser)
    parser.add_argument("--concurrency", default="1,16,64,256,1024", help="clients honouring Retry-After")
    parser.add_argument("--ignore-levels", default="256,1024", help="levels also run with clients that resend a "
                        "refused request at once")
    parser.add_argument("--shed-timeout-ms", type=float, default=100.0, help="X-Request-Timeout-Ms of the extra "
                        "row at the top level (clients ignoring Retry-After; 0: no such row)")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive server")
    parser.add_argument("--rounds", type=int, default=5, help="measurement rounds (medians are reported)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    # SIGTERM runs the cleanup below too (stops both servers and the model workers), like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    levels = [int(c) for c in args.concurrency.split(",")]
    ignore_levels = [int(c) for c in args.ignore_levels.split(",") if c]
    # (concurrency, honour Retry-After, X-Request-Timeout-Ms) per server row.
    # Rows of one level run back to back (the machine's speed drifts over minutes), the naive server's last.
    rows = []
    for c in levels:
        rows += [(c, True, None)] + ([(c, False, None)] if c in ignore_levels else [])
        if args.shed_timeout_ms and c == max(levels):
            rows += [(c, True, args.shed_timeout_ms), (c, False, args.shed_timeout_ms)]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or str(build(Path(tmp) / f"model-{args.size}", args.size))
        env = server_env(args, model_dir, max(levels))
        # Both servers stay up (idle when not under load); rounds interleave raw, server and naive.
        server_proc, server_port = start_process(["-m", "sentiment"], env)
        naive_proc = None
        if not args.no_naive:
            naive_proc, naive_port = start_process(
                [str(HERE / "naive_server.py"), "--model", model_dir, "--port", str(free_port()), "--device",
                 args.device, "--threads", str(args.threads)], {}, probe=b'{"text": "ready?"}')
        server_pids = process_tree(server_proc.pid)
        all_pids = server_pids + ([naive_proc.pid] if naive_proc is not None else [])
        try:
            raw_loop = RawLoop(model_dir, args.max_batch_size, args.device, args.dtype, args.threads)
            # The load generator shares this process with PyTorch and the model: about 350,000 objects that every
            # full collection of the load generator's garbage would walk. Frozen, as the server does (tune_gc).
            gc.collect()
            gc.freeze()
            raw_runs, server_runs, naive_runs = [], [[] for _ in rows], {c: [] for c in levels}
            for round_index in range(args.rounds):
                settle(all_pids)
                raw_runs.append(raw_loop.run(args.duration))
                order = round_order(rows, round_index)
                for position, i in enumerate(order):
                    level, honour, timeout = rows[i]
                    settle(all_pids)
                    server_runs[i].append(run_client(closed_loop(
                        "127.0.0.1", server_port, level, args.duration, args.warmup, honour, timeout, server_pids)))
                    last_of_level = position + 1 == len(order) or rows[order[position + 1]][0] != level
                    if naive_proc is not None and last_of_level:
                        settle(all_pids)
                        naive_runs[level].append(run_client(closed_loop(
                            "127.0.0.1", naive_port, level, args.duration, args.warmup,
                            server_pids=[naive_proc.pid])))
                print(f"round {round_index + 1}: raw {raw_runs[-1]['texts_per_s']:.1f}/s, server "
                      f"{[round(r[-1]['texts_per_s'], 1) for r in server_runs]}, naive "
                      f"{[round(r[-1]['texts_per_s'], 1) for r in naive_runs.values() if r]}", flush=True)
        finally:
            stop_process(server_proc)
            if naive_proc is not None:
                stop_process(naive_proc)
    raw = median_of(raw_runs)
    server = [median_of(r) for r in server_runs]
    naive = {c: median_of(r) for c, r in naive_runs.items() if r}
    meta = {"model": args.model or "random weights", "size": args.size if not args.model else "-",
            "max_batch_size": args.max_batch_size, "max_wait_ms": args.max_wait_ms, "deadline_ms": args.deadline_ms,
            "cpus": os.cpu_count(), "cpu_model": cpu_model(), "rounds": args.rounds, "duration_s": args.duration,
            "model_worker": args.model_worker, "model_workers": env["MODEL_WORKERS"],
            "client_event_loop": CLIENT_EVENT_LOOP}
    print(report(raw, server, naive, meta))
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "raw": raw, "server": server, "naive": naive,
                                               "targets": targets(raw, server, naive, args.deadline_ms)}, indent=2))


if __name__ == "__main__":
    main()
