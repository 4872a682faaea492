"""Paired rows: is one load level really slower than another, or was the machine slower while it ran?

bench.py runs each row once a round, seconds to minutes after the others; on a shared VM the machine's speed moves
by 10-25 % over that time, and two rows with identical load (1024 clients honouring and ignoring Retry-After when
the server sheds nothing) came out 12 % apart in one run. This script starts one server and runs the given rows
back to back, ``--pairs`` times, every other time in reverse order, and compares each row with the first one
pair by pair: the median of the per-pair throughput ratios and in how many pairs the row was the slower, with
the CPU per good answer of the load generator, the server's event loop and its model workers (and of those the
system time: the kernel's network work lands there when it interrupts a worker) and the host's idle share, so
that a slower row says where its CPU went.

    python paired_rows.py --size tiny --pairs 8 256 1024 1024:100 1024:100:ignore

A row is ``CLIENTS[:TIMEOUT_MS][:ignore]``: that many closed-loop clients (bench.closed_loop), sending
``X-Request-Timeout-Ms: TIMEOUT_MS`` when given, resending a refused request at once with ``ignore``.
"""

import argparse
import gc
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional

import bench
from make_model import build

# Per-answer fields reported as medians over the pairs (bench.closed_loop's names).
PER_ANSWER = ("client_us_per_ok", "loop_us_per_ok", "model_us_per_ok", "model_system_us_per_ok",
              "tcp_segments_per_request", "idle_fraction", "shed")

Row = tuple[int, bool, Optional[float]]  # clients, honour Retry-After, X-Request-Timeout-Ms


def parse_row(spec: str) -> Row:
    """``"1024:100:ignore"`` -> (1024, False, 100.0); ``"256"`` -> (256, True, None)."""
    clients, *rest = spec.split(":")
    honour = "ignore" not in rest
    timeouts = [part for part in rest if part != "ignore"]
    if not clients.isdigit() or int(clients) < 1 or len(timeouts) > 1:
        raise ValueError(f"row {spec!r}: expected CLIENTS[:TIMEOUT_MS][:ignore]")
    try:
        timeout = float(timeouts[0]) if timeouts else None
    except ValueError:
        timeout = math.nan
    if timeout is not None and not 0 < timeout < math.inf:
        raise ValueError(f"row {spec!r}: the timeout must be a positive number of milliseconds")
    return int(clients), honour, timeout


def compare(reference: list[dict], runs: list[dict]) -> dict:
    """A row's runs against the reference row's, pair by pair: ``ratio`` (median of per-pair goodput ratios),
    ``slower`` (pairs in which the row had less goodput), ``pairs``, and the median of each `PER_ANSWER` field
    (None when a run lacks it)."""
    ratios = [run["texts_per_s"] / max(ref["texts_per_s"], 1e-9) for run, ref in zip(runs, reference, strict=True)]
    summary = {"ratio": statistics.median(ratios), "slower": sum(r < 1.0 for r in ratios), "pairs": len(ratios),
               "texts_per_s": statistics.median(run["texts_per_s"] for run in runs)}
    for field in PER_ANSWER:
        values = [run.get(field) for run in runs]
        summary[field] = None if None in values else statistics.median(values)
    return summary


def describe(row: Row) -> str:
    """The row's label, as bench.py writes it (`bench.row_label`)."""
    clients, honour, timeout = row
    return bench.row_label({"concurrency": clients, "honour_retry_after": honour, "timeout_ms": timeout})


def report(rows: list[Row], summaries: list[dict]) -> str:
    def cell(value: Optional[float], form: str) -> str:
        return "-" if value is None else format(value, form)

    lines = [f"{'row':>20} | {'ok/s':>7} {'vs first':>8} {'slower':>7} {'shed':>5} | {'µs/ok load':>10} "
             f"{'loop':>5} {'model':>6} {'(sys)':>5} | {'seg/req':>7} {'idle':>5}"]
    for row, s in zip(rows, summaries, strict=True):
        lines.append(
            f"{describe(row):>20} | {s['texts_per_s']:>7.0f} {s['ratio']:>8.3f} {s['slower']:>3}/{s['pairs']:<3} "
            f"{s['shed']:>5.2f} | {cell(s['client_us_per_ok'], '.1f'):>10} {cell(s['loop_us_per_ok'], '.1f'):>5} "
            f"{cell(s['model_us_per_ok'], '.1f'):>6} {cell(s['model_system_us_per_ok'], '.1f'):>5} | "
            f"{cell(s['tcp_segments_per_request'], '.2f'):>7} "
            f"{'-' if s['idle_fraction'] is None else format(s['idle_fraction'], '.1%'):>5}")
    lines.append("vs first: median of per-pair goodput ratios to the first row; slower: pairs in which the row had "
                 "less goodput; µs/ok: CPU per good answer (model: the workers, (sys) their system time); "
                 "seg/req: TCP segments per answer (the host's count); idle: the host's idle CPU share")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="Paired benchmark rows on one server (see module docstring).")
    bench.add_server_arguments(parser)
    parser.add_argument("--pairs", type=int, default=8, help="times every row runs")
    parser.add_argument("rows", nargs="+", help="CLIENTS[:TIMEOUT_MS][:ignore]; the first is the reference")
    args = parser.parse_args(argv)
    try:
        rows = [parse_row(spec) for spec in args.rows]
    except ValueError as err:
        parser.error(str(err))
    if len(rows) < 2 or args.pairs < 1:
        parser.error("give at least two rows and one pair")
    runs: list[list[dict]] = [[] for _ in rows]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model or str(build(Path(tmp) / f"model-{args.size}", args.size))
        proc, port = bench.start_process(["-m", "sentiment"], bench.server_env(args, model_dir,
                                                                             max(r[0] for r in rows)))
        pids = bench.process_tree(proc.pid)
        gc.collect()
        gc.freeze()  # as bench.py: the load generator's collections skip PyTorch's objects
        try:
            for pair in range(args.pairs):
                for i in bench.round_order(rows, pair):  # reversed in every other pair
                    clients, honour, timeout = rows[i]
                    bench.settle(pids)
                    runs[i].append(bench.run_client(bench.closed_loop(
                        "127.0.0.1", port, clients, args.duration, args.warmup, honour, timeout, pids)))
                print(f"pair {pair + 1}: {[round(r[-1]['texts_per_s']) for r in runs]}", file=sys.stderr, flush=True)
        finally:
            bench.stop_process(proc)
    print(f"model {args.model or 'random weights'} ({args.size if not args.model else '-'}), {args.pairs} pairs of "
          f"{args.duration:g} s rows, {os.cpu_count()} CPUs ({bench.cpu_model()}), load generator on "
          f"{bench.CLIENT_EVENT_LOOP}")
    print(report(rows, [compare(runs[0], r) for r in runs]))


if __name__ == "__main__":
    main()
