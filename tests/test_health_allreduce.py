"""`health.allreduce.PROGRAM` run for real on CPU: torchrun, gloo, 2 processes, tiny sizes; its output read back with
`health.nccl.parse_all_reduce`, the parser of nccl-tests' own output."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_platform.health import allreduce
from gpu_platform.health.nccl import parse_all_reduce

TORCHRUN = Path(sys.executable).with_name("torchrun")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    script = tmp_path_factory.mktemp("checks") / allreduce.CONFIGMAP_KEY
    script.write_text(allreduce.PROGRAM, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "MASTER_", "RANK", "WORLD_"))}
    proc = subprocess.run(
        [str(TORCHRUN), "--standalone", "--nproc-per-node=2", str(script), "--backend", "gloo",
         "-b", "64K", "-e", "256K", "-n", "3", "-w", "1"],
        capture_output=True, text=True, timeout=60, env={**env, "OMP_NUM_THREADS": "1"},
    )
    return proc


def test_exits_zero_and_prints_the_nccl_tests_table(run):
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert lines[0] == ("# gpu-platform allreduce.py backend gloo nranks 2 minBytes 65536 maxBytes 262144 "
                        "step: 2(factor) warmup iters: 1 iters: 3")
    assert "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw" \
           "   busbw #wrong" in lines
    assert lines[-3] == "# Out of bounds values : 0 OK"
    assert sum(line.startswith("#  Rank ") for line in lines) == 2


def test_parser_reads_it_with_the_bus_bandwidth_formula(run):
    result = parse_all_reduce(run.stdout + run.stderr)
    assert [r.size_bytes for r in result.rows] == [65536, 131072, 262144]
    assert result.errors == ()
    assert result.transport is None  # gloo: no NCCL network line
    for row in result.rows:
        assert (row.wrong, row.in_place_wrong) == (0, 0)
        for time_us, algbw, busbw in ((row.time_us, row.algbw_gbps, row.busbw_gbps),
                                      (row.in_place_time_us, row.in_place_algbw_gbps, row.in_place_busbw_gbps)):
            assert algbw == pytest.approx(row.size_bytes / (time_us * 1e3), abs=0.011)  # bytes/us -> GB/s
            assert busbw == pytest.approx(algbw * 2 * (2 - 1) / 2, abs=0.011)  # busbw = algbw * 2(n-1)/n, n = 2
    assert result.bus_bandwidth_gbps == result.rows[-1].best_busbw_gbps
    avg = sum(r.in_place_busbw_gbps for r in result.rows) / 3
    assert result.avg_bus_bandwidth_gbps == pytest.approx(avg, abs=0.01)


def test_rows_carry_size_count_type_and_root(run):
    rows = [line.split() for line in run.stdout.splitlines() if line.strip() and not line.startswith("#")]
    assert [r[:5] for r in rows] == [["65536", "16384", "float", "sum", "-1"],
                                     ["131072", "32768", "float", "sum", "-1"],
                                     ["262144", "65536", "float", "sum", "-1"]]


def test_program_turns_on_nccl_info_unless_told_otherwise(tmp_path):
    script = tmp_path / allreduce.CONFIGMAP_KEY
    script.write_text(allreduce.PROGRAM, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "NCCL_DEBUG"}
    # Loaded twice in one process (torch imports once): without NCCL_DEBUG, then with NCCL_DEBUG=WARN set.
    probe = (f"import os, runpy; runpy.run_path({str(script)!r}, run_name='probe'); print(os.environ['NCCL_DEBUG']);"
             f"os.environ['NCCL_DEBUG'] = 'WARN'; runpy.run_path({str(script)!r}, run_name='probe');"
             "print(os.environ['NCCL_DEBUG'])")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.split() == ["INFO", "WARN"], out.stderr[-1000:]
    assert (allreduce.MOUNT_PATH, allreduce.CONFIGMAP_KEY) == ("/checks", "allreduce.py")
