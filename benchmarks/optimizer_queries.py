"""Optimizer benchmark: 10,000 GPU series in a real Prometheus on 127.0.0.1.

Evaluates the optimizer's constant query set (one query per fact, aggregated by pod) and the naive
one-query-per-pod approach against the same data, and prints time and number of queries for each with the
ratio. Needs the ``prometheus`` binary (Debian package).

    python benchmarks/optimizer_queries.py [--gpus 10000] [--gpus-per-pod 8]
"""

import argparse
import sys
import time

from gpu_platform.optimizer.local_prometheus import GpuSeries, LocalPrometheus
from gpu_platform.optimizer.policy import Policy
from gpu_platform.optimizer.prometheus import PrometheusClient
from gpu_platform.optimizer.queries import per_pod_queries, pod_queries


def synthetic_series(gpus: int, gpus_per_pod: int) -> list[GpuSeries]:
    series = []
    for i in range(gpus):
        pod = i // gpus_per_pod
        series.append(GpuSeries(f"team-{pod % 50:02d}", f"job-{pod:05d}", i % gpus_per_pod,
                                utilization=float((pod * 37) % 100), memory_used_mib=float(1000 + pod % 70000),
                                hostname=f"node-{pod:05d}"))
    return series


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10000)
    parser.add_argument("--gpus-per-pod", type=int, default=8)
    args = parser.parse_args()
    series = synthetic_series(args.gpus, args.gpus_per_pod)
    pods = sorted({(s.namespace, s.pod) for s in series})
    policy = Policy(window="1m", step="2s")
    with LocalPrometheus(series, scrape_interval="2s") as prometheus:
        now = time.time()
        batched = PrometheusClient(prometheus.url, timeout_seconds=60)
        started = time.perf_counter()
        results = [batched.query(q, now) for q in pod_queries(policy).all()]
        batched_seconds = time.perf_counter() - started
        naive = PrometheusClient(prometheus.url, timeout_seconds=60)
        started = time.perf_counter()
        for namespace, pod in pods:
            for q in per_pod_queries(policy, namespace, pod):
                naive.query(q, now)
        naive_seconds = time.perf_counter() - started
    assert len(results[0]) == len(pods), f"expected {len(pods)} pods in the result, got {len(results[0])}"
    print(f"GPU series: {len(series)}, pods: {len(pods)}")
    print(f"{'approach':<22} {'queries':>8} {'seconds':>9}")
    print(f"{'constant (by pod)':<22} {batched.queries_sent:>8} {batched_seconds:>9.3f}")
    print(f"{'one query per pod':<22} {naive.queries_sent:>8} {naive_seconds:>9.3f}")
    print(f"speed-up: {naive_seconds / batched_seconds:.1f}x, "
          f"queries: {naive.queries_sent // batched.queries_sent}x fewer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
