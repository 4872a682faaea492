#!/usr/bin/env python3
"""Time the test suite per file (docs/testing.md, "How long the suite takes").

    .venv/bin/python scripts/test_durations.py                    run pytest (pyproject's options) and report
    .venv/bin/python scripts/test_durations.py -- -n 0            the same, serial (extra pytest arguments after --)
    .venv/bin/python scripts/test_durations.py --xml run.xml      report a JUnit XML file pytest already wrote
    .venv/bin/python scripts/test_durations.py --xml after.xml --before before.xml
                                                                  both runs side by side, per file

Per file: the sum of its tests' times (setup, call and teardown, so a module fixture counts once, in the test
that first uses it). Under pytest-xdist the files' times add up to more than the wall-clock time, since workers
run side by side; the wall-clock time of the run is printed separately. Only the standard library: any python3
reads the XML.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def per_file(xml_path: Path) -> tuple[dict[str, float], dict[str, int], float]:
    """(seconds per test file, tests per file, the time pytest recorded for the whole run)."""
    root = ET.parse(xml_path).getroot()
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in root.iter("testcase"):
        module = case.get("classname", "")
        # "tests.test_plan" or "tests.test_plan.TestClass": the file is the first two components.
        name = "/".join(module.split(".")[:2]) + ".py" if module else "?"
        seconds[name] += float(case.get("time") or 0.0)
        counts[name] += 1
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = sum(float(s.get("time") or 0.0) for s in suites)
    return dict(seconds), dict(counts), total


def report(after: Path, before: Path | None, top: int) -> str:
    seconds, counts, total = per_file(after)
    lines = []
    if before is None:
        lines.append(f"{'file':<44} {'tests':>6} {'seconds':>9}")
        for name, sec in sorted(seconds.items(), key=lambda kv: -kv[1])[:top]:
            lines.append(f"{name:<44} {counts[name]:>6} {sec:>9.1f}")
        lines.append(f"{'all ' + str(len(seconds)) + ' files':<44} {sum(counts.values()):>6} "
                     f"{sum(seconds.values()):>9.1f}  (sum of test times)")
        lines.append(f"pytest's own run time: {total:.1f} s")
        return "\n".join(lines)
    old, old_counts, old_total = per_file(before)
    lines.append(f"{'file':<44} {'tests':>11} {'before s':>9} {'after s':>9}")
    names = sorted(set(seconds) | set(old), key=lambda n: -max(seconds.get(n, 0.0), old.get(n, 0.0)))
    for name in names[:top]:
        lines.append(f"{name:<44} {old_counts.get(name, 0):>5}/{counts.get(name, 0):<5} "
                     f"{old.get(name, 0.0):>9.1f} {seconds.get(name, 0.0):>9.1f}")
    lines.append(f"{'all files (sum of test times)':<44} {sum(old_counts.values()):>5}/{sum(counts.values()):<5} "
                 f"{sum(old.values()):>9.1f} {sum(seconds.values()):>9.1f}")
    lines.append(f"{'pytest run time (wall clock)':<44} {'':>11} {old_total:>9.1f} {total:>9.1f}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xml", type=Path, help="report this JUnit XML file instead of running pytest")
    parser.add_argument("--before", type=Path, help="a JUnit XML file of an earlier run, shown beside it")
    parser.add_argument("--keep", type=Path, help="where to keep the JUnit XML of this run")
    parser.add_argument("--top", type=int, default=30, help="files to list (default 30)")
    parser.add_argument("pytest_args", nargs="*", help="arguments for pytest, after --")
    args = parser.parse_args(argv)
    xml_path = args.xml
    if xml_path is None:
        xml_path = args.keep or Path(tempfile.mkdtemp()) / "junit.xml"
        load = os.getloadavg()
        started = time.monotonic()
        code = subprocess.call([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                f"--junitxml={xml_path}", *args.pytest_args])
        wall = time.monotonic() - started
        print(f"\npytest exited {code} after {wall:.1f} s wall clock; load average before: "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if not xml_path.exists():
            return code or 1
    print(report(xml_path, args.before, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
