"""Plan benchmark: synthetic stacks from 1 to 64 GPU pools and 4 to 256 teams.

Prints, per size, the resources registered, the seconds the offline plan took (program under the mock
engine, manifest rendering and schema validation), and seconds per resource. Target: cost per resource
flat within 25% across sizes, and the largest plan under 30 s on 2 cores.

    python benchmarks/plan_scale.py [--cloud aws] [--repeat 1]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import yaml

from gpu_platform import plan

SIZES = [(1, 4), (4, 16), (16, 64), (64, 256)]
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
    }
    if cloud == "oci":
        config["gpu-platform:compartmentId"] = "ocid1.compartment.oc1..aaaabenchmark"
    return config


def run(cloud: str, repeat: int) -> list[tuple[int, int, int, float]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pools, teams in SIZES:
            stack = f"bench-{pools}x{teams}"
            path = Path(tmp) / f"Pulumi.{stack}.yaml"
            path.write_text(yaml.safe_dump({"config": synthetic_config(cloud, pools, teams)}))
            best = float("inf")
            for _ in range(repeat):
                started = time.perf_counter()
                result = plan.plan_stack(stack, path)
                best = min(best, time.perf_counter() - started)
                if result.errors:
                    sys.exit(f"{stack}: invalid manifests: {result.errors[0]}")
            rows.append((pools, teams, len(result.recording), best))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cloud", default="aws", choices=sorted(SHAPES))
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest counts")
    args = parser.parse_args()
    plan.plan_stack("warm-up", _warm_up_file(args.cloud))  # imports and schema caches out of the measurement
    rows = run(args.cloud, args.repeat)
    print(f"{'pools':>5} {'teams':>5} {'resources':>9} {'seconds':>8} {'ms/resource':>11}")
    per_resource = []
    for pools, teams, resources, seconds in rows:
        per_resource.append(seconds / resources)
        print(f"{pools:>5} {teams:>5} {resources:>9} {seconds:>8.2f} {1000 * seconds / resources:>11.3f}")
    spread = max(per_resource) / min(per_resource) - 1
    largest = rows[-1][3]
    print(f"cost per resource spread: {100 * spread:.1f}% (target <= 25%); "
          f"largest plan: {largest:.2f} s (target < 30 s)")
    return 0 if spread <= 0.25 and largest < 30 else 1


def _warm_up_file(cloud: str) -> Path:
    path = Path(tempfile.mkdtemp()) / "Pulumi.warm-up.yaml"
    path.write_text(yaml.safe_dump({"config": synthetic_config(cloud, 1, 1)}))
    return path


if __name__ == "__main__":
    sys.exit(main())
