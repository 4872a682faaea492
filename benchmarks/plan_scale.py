"""Plan benchmark: synthetic stacks from 1 to 64 GPU pools and 4 to 256 teams.

Prints, per size, the resources registered, the seconds the offline plan took (program under the mock
engine, manifest rendering and schema validation; the median of ``--repeat`` rounds, in which the sizes take
turns), milliseconds per resource, the CPU seconds of the run with their milliseconds per resource (a check on a
shared machine: wall seconds grow with other load, CPU seconds much less), and the average bytes of a resource's
inputs as JSON (the mix of resources changes with size: a small plan is mostly the platform's own large objects,
dashboards and Helm values; a large one mostly small per-team objects). Targets (issue 37 item 2): cost per
resource flat within 10% from 1 to 64 pools (the spread of ms per resource across sizes), and the 64-pool x
256-team plan under 5 s on 2 cores. The verdict is on wall seconds; the same spread and largest plan in CPU
seconds are printed beside it. Exits 1 when a target is missed.

    python benchmarks/plan_scale.py [--cloud aws|gcp|azure|oci] [--repeat 3]
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from gpu_platform import plan

SIZES = [(1, 4), (4, 16), (16, 64), (64, 256)]
SPREAD_TARGET = 0.10
"""Largest over smallest cost per resource, minus one, at most."""
LARGEST_TARGET_S = 5.0
"""Seconds the 64-pool x 256-team plan may take, at most."""
SHAPES = {
    "aws": ["g6.xlarge", "g6e.12xlarge", "p5.48xlarge", "g5.2xlarge"],
    "azure": ["Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3", "Standard_ND96isr_H100_v5"],
    "gcp": ["g2-standard-8", "a2-highgpu-1g", "a3-highgpu-8g"],
    "oci": ["VM.GPU.A10.1", "BM.GPU.A10.4", "BM.GPU.H100.8"],
}
REGIONS = {"aws": "us-west-2", "azure": "westeurope", "gcp": "us-central1", "oci": "us-ashburn-1"}


def synthetic_config(cloud: str, pools: int, teams: int) -> dict:
    """A valid stack configuration with ``pools`` GPU pools and ``teams`` teams."""
    shapes = SHAPES[cloud]
    config = {
        "gpu-platform:cloud": cloud,
        "gpu-platform:region": REGIONS[cloud],
        "gpu-platform:nodePools": [
            {"name": f"pool-{i:03d}", "instanceType": shapes[i % len(shapes)], "minNodes": 0, "maxNodes": 4,
             "role": "inference" if i == 0 else "training"}
            for i in range(pools)
        ],
        "gpu-platform:teams": [{"name": f"team-{i:03d}", "gpuQuota": 1 + i % 8} for i in range(teams)],
        # Many teams on few pools promise more GPUs than the pools hold: said, or the stack is refused.
        "gpu-platform:scheduling": {"overcommit": True},
    }
    if cloud == "oci":
        config["gpu-platform:compartmentId"] = "ocid1.compartment.oc1..aaaabenchmark"
    return config


def run(cloud: str, repeat: int) -> list[tuple[int, int, int, float, float, int]]:
    """(pools, teams, resources, median seconds, median CPU seconds, input bytes per resource) per size.

    The sizes take turns: each of the ``repeat`` rounds plans every size once, smallest first, so that a slow
    spell of a shared machine (these cores drift 10-25 % over minutes) falls on every size alike instead of on
    whichever size happened to be measured then; the median of a size's rounds counts."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for pools, teams in SIZES:
            stack = f"bench-{pools}x{teams}"
            paths[stack] = Path(tmp) / f"Pulumi.{stack}.yaml"
            paths[stack].write_text(yaml.safe_dump({"config": synthetic_config(cloud, pools, teams)}))
        seconds: dict[str, list[float]] = {stack: [] for stack in paths}
        cpu: dict[str, list[float]] = {stack: [] for stack in paths}
        resources: dict[str, int] = {}
        input_bytes: dict[str, int] = {}
        for _ in range(repeat):
            for stack, path in paths.items():
                started, started_cpu = time.perf_counter(), time.process_time()
                result = plan.plan_stack(stack, path)
                seconds[stack].append(time.perf_counter() - started)
                cpu[stack].append(time.process_time() - started_cpu)
                if result.errors:
                    sys.exit(f"{stack}: invalid manifests: {result.errors[0]}")
                resources[stack] = len(result.recording)
                if stack not in input_bytes:  # after the clock stopped
                    input_bytes[stack] = sum(len(json.dumps(r.inputs, default=str)) for r in result.recording)
                del result  # freed here, not inside the next size's measurement
    return [(pools, teams, resources[stack], statistics.median(seconds[stack]), statistics.median(cpu[stack]),
             input_bytes[stack] // resources[stack])
            for (pools, teams), stack in zip(SIZES, paths, strict=True)]


def verdict(rows: list[tuple[int, int, int, float, float, int]], cpu: bool = False) -> tuple[float, float, bool, bool]:
    """(spread of the cost per resource, seconds of the largest plan, spread met, largest met), in wall seconds or
    (``cpu``) CPU seconds."""
    column = 4 if cpu else 3
    per_resource = [row[column] / row[2] for row in rows]
    spread = max(per_resource) / min(per_resource) - 1
    largest = rows[-1][column]
    return spread, largest, spread <= SPREAD_TARGET, largest < LARGEST_TARGET_S


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cloud", default="aws", choices=sorted(SHAPES))
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the median counts")
    args = parser.parse_args()
    plan.plan_stack("warm-up", _warm_up_file(args.cloud))  # imports and schema caches out of the measurement
    rows = run(args.cloud, args.repeat)
    print(f"{args.cloud}, median of {args.repeat} round(s) per size")
    print(f"{'pools':>5} {'teams':>5} {'resources':>9} {'seconds':>8} {'ms/resource':>11} {'cpu s':>7} "
          f"{'cpu ms/res':>10} {'input B/res':>11}")
    for pools, teams, resources, seconds, cpu, size in rows:
        print(f"{pools:>5} {teams:>5} {resources:>9} {seconds:>8.2f} {1000 * seconds / resources:>11.3f} {cpu:>7.2f} "
              f"{1000 * cpu / resources:>10.3f} {size:>11}")
    spread, largest, spread_met, largest_met = verdict(rows)
    print(f"cost per resource spread: {100 * spread:.1f}% (target <= {100 * SPREAD_TARGET:.0f}%: "
          f"{'met' if spread_met else 'missed'}); largest plan: {largest:.2f} s (target < {LARGEST_TARGET_S:g} s: "
          f"{'met' if largest_met else 'missed'})")
    cpu_spread, cpu_largest, _, _ = verdict(rows, cpu=True)
    print(f"in CPU seconds: spread {100 * cpu_spread:.1f}%, largest plan {cpu_largest:.2f} s")
    return 0 if spread_met and largest_met else 1


def _warm_up_file(cloud: str) -> Path:
    path = Path(tempfile.mkdtemp()) / "Pulumi.warm-up.yaml"
    path.write_text(yaml.safe_dump({"config": synthetic_config(cloud, 1, 1)}))
    return path


if __name__ == "__main__":
    sys.exit(main())
