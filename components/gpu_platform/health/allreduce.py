"""The all-reduce benchmark the active checks and ``gpu-platform verify`` run: `PROGRAM`, a PyTorch script.

It is nccl-tests' ``all_reduce_perf`` in the platform's own training image (``versions.TRAINING_IMAGE``; ROCm:
``versions.ROCM_TRAINING_IMAGE``, where PyTorch's ``nccl`` backend is RCCL), so no extra image has to be built,
pinned or trusted. Launched with ``torchrun``: one node ``torchrun --standalone --nproc_per_node=N allreduce.py``,
two nodes ``torchrun --nnodes=2 --node_rank=R --nproc_per_node=N --master_addr=... allreduce.py``.

What it does, per message size from ``--min-bytes`` to ``--max-bytes`` (times ``--factor``): float32 tensors filled
with ``rank + 1``, ``--warmup`` untimed all-reduces, then ``--iters`` timed ones in one window (CUDA/HIP events on
GPUs, a monotonic clock on CPU), as nccl-tests does; the time of a size is the slowest rank's mean.
``torch.distributed.all_reduce`` works in place, so the in-place columns time it alone and the out-of-place columns
time a copy of the input into a separate output buffer followed by the in-place all-reduce (what an out-of-place
collective costs). After the timed loops one more all-reduce of the same input is checked against n(n+1)/2:
``#wrong`` counts the elements that differ.

Rank 0 prints the nccl-tests table (same columns: size, count, type, redop, root, time, algbw, busbw, #wrong for
out-of-place then in-place), ``# Out of bounds values : N OK|FAILED`` and ``# Avg bus bandwidth`` so that
`nccl.parse_all_reduce` reads this and the real ``all_reduce_perf`` alike. algbw = bytes / time; busbw = algbw *
2(n-1)/n, the all-reduce bus bandwidth of nccl-tests' PERFORMANCE.md, in GB/s (10^9 bytes). It sets
``NCCL_DEBUG=INFO`` unless the environment already sets NCCL_DEBUG, so NCCL/RCCL log the network they use
("Using network IB", "via NET/...") on stderr. ``--backend`` ``auto`` (the default) picks ``nccl`` when a GPU is
visible and ``gloo`` otherwise; ``gloo`` runs it on CPU (the tests do). Exit status: 0, or 1 when any element was
wrong.
"""

PROGRAM = r'''"""all-reduce benchmark in the nccl-tests all_reduce_perf format (gpu-platform health/allreduce.py)."""
import argparse
import os
import socket
import sys
import time

os.environ.setdefault("NCCL_DEBUG", "INFO")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

UNITS = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def size_arg(text):
    text = text.strip().upper()
    unit = text[-1] if text[-1] in UNITS and not text[-1].isdigit() else ""
    return int(text[: len(text) - len(unit)]) * UNITS[unit]


def parse_args(argv):
    p = argparse.ArgumentParser(description="all-reduce bus bandwidth, printed like nccl-tests all_reduce_perf")
    p.add_argument("-b", "--min-bytes", type=size_arg, default=size_arg("1M"))
    p.add_argument("-e", "--max-bytes", type=size_arg, default=size_arg("1G"))
    p.add_argument("-f", "--factor", type=int, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup", type=int, default=5)
    p.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    return p.parse_args(argv)


def sizes(args):
    size = max(4, args.min_bytes - args.min_bytes % 4)
    while size <= args.max_bytes:
        yield size
        if args.factor <= 1:
            break
        size *= args.factor


class Timer:
    def __init__(self, device):
        self.gpu = device.type == "cuda"

    def __enter__(self):
        if self.gpu:
            self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.start.record()
        else:
            self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.gpu:
            self.end.record()
            self.end.synchronize()
            self.seconds = self.start.elapsed_time(self.end) / 1000.0
        else:
            self.seconds = time.perf_counter() - self.t0


def slowest(seconds, device):
    t = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def run_size(nbytes, args, device, world):
    count = nbytes // 4
    src = torch.full((count,), float(dist.get_rank() + 1), dtype=torch.float32, device=device)
    buf = torch.empty_like(src)
    results = []
    for out_of_place in (True, False):
        for _ in range(args.warmup):
            buf.copy_(src)
            dist.all_reduce(buf)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        dist.barrier()
        # One timed window over all iterations, as nccl-tests does: no per-iteration synchronisation overhead.
        with Timer(device) as t:
            for _ in range(args.iters):
                if out_of_place:
                    buf.copy_(src)
                dist.all_reduce(buf)
        seconds = slowest(t.seconds / args.iters, device)
        # The check is a separate, untimed all-reduce of the known input (repeated in-place sums grow).
        buf.copy_(src)
        dist.all_reduce(buf)
        wrong = torch.tensor([int((buf != world * (world + 1) / 2.0).sum().item())], dtype=torch.int64, device=device)
        dist.all_reduce(wrong)
        algbw = nbytes / seconds / 1e9 if seconds > 0 else 0.0
        busbw = algbw * 2 * (world - 1) / world
        results.append((seconds * 1e6, algbw, busbw, int(wrong.item())))
    return count, results


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend=backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    devices = [None] * world
    dist.all_gather_object(devices, (rank, socket.gethostname(), str(device), name))
    lead = rank == 0
    if lead:
        print(f"# gpu-platform allreduce.py backend {backend} nranks {world} minBytes {args.min_bytes} "
              f"maxBytes {args.max_bytes} step: {args.factor}(factor) warmup iters: {args.warmup} iters: {args.iters}")
        print("#\n# Using devices")
        for r, host, dev, model in devices:
            print(f"#  Rank {r:2d} on {host} device {dev} {model}")
        print("#")
        print("#" + " " * 62 + "out-of-place" + " " * 23 + "in-place")
        print("#       size         count      type   redop    root     time   algbw   busbw #wrong"
              "     time   algbw   busbw #wrong")
        print("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
              "     (us)  (GB/s)  (GB/s)")
    total_wrong, busbws = 0, []
    for nbytes in sizes(args):
        count, results = run_size(nbytes, args, device, world)
        cols = "".join(f" {us:8.2f} {alg:7.2f} {bus:7.2f} {wrong:6d}" for us, alg, bus, wrong in results)
        total_wrong += sum(r[3] for r in results)
        busbws.append(results[1][2])
        if lead:
            print(f"{nbytes:12d} {count:13d} {'float':>9s} {'sum':>7s} {-1:7d}{cols}", flush=True)
    if lead:
        print(f"# Out of bounds values : {total_wrong} {'OK' if total_wrong == 0 else 'FAILED'}")
        avg = sum(busbws) / len(busbws) if busbws else 0.0
        print(f"# Avg bus bandwidth    : {avg:.4f} ")
        print("#", flush=True)
    dist.destroy_process_group()
    return 0 if total_wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
'''
"""The benchmark's source: mounted from a ConfigMap at ``/checks/allreduce.py`` and run with ``torchrun``."""

CONFIGMAP_KEY = "allreduce.py"
"""The key `PROGRAM` takes in a ConfigMap, and so its file name where the ConfigMap is mounted."""

MOUNT_PATH = "/checks"
"""Where the active checks and ``verify`` mount the ConfigMap: the program runs as ``/checks/allreduce.py``."""
