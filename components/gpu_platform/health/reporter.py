"""``gpu-platform health-report``: turn what an active-check pod's init containers left behind into node state.

The active-check pod's init containers write into a shared directory: ``dcgm-diag.json`` (``dcgmi diag -r <level>
-j``) and ``dcgm-diag.rc`` (its exit status) and, on multi-GPU nodes, ``all-reduce.log`` and ``all-reduce.rc`` (the
single-node all-reduce of `allreduce`). This program judges them (`evaluate`, pure) and records the verdict on the
Node: the ``gpu-platform.io/health-check`` label (``passed``/``failed``), the one-line detail annotation and the
``GpuHealthCheckFailed`` condition (``True`` on failure; ``lastTransitionTime`` kept while the status is unchanged).
Exit codes: 0 recorded (pass or fail), 1 the Kubernetes API call failed, 2 bad usage.
"""

import argparse
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from .. import labels
from .dcgm import DcgmParseError, parse_diag
from .nccl import parse_all_reduce
from .remediation import rfc3339

EXIT_OK, EXIT_API, EXIT_USAGE = 0, 1, 2
DCGM_JSON, DCGM_RC, ALL_REDUCE_LOG, ALL_REDUCE_RC = "dcgm-diag.json", "dcgm-diag.rc", "all-reduce.log", "all-reduce.rc"
DCGM, ALL_REDUCE = "dcgm-diag", "all-reduce"
CHECKS = (DCGM, ALL_REDUCE)
"""The checks ``--expect`` can name."""
MESSAGE_LIMIT = 512
"""Longest condition message / detail line: enough for the failing tests and DCGM's first reason."""


@dataclass(frozen=True)
class CheckFiles:
    """The texts the init containers left (None: the file is missing)."""

    dcgm_json: Optional[str] = None
    dcgm_rc: Optional[str] = None
    all_reduce_log: Optional[str] = None
    all_reduce_rc: Optional[str] = None


@dataclass(frozen=True)
class Verdict:
    """The check's outcome."""

    passed: bool
    reason: str
    """The condition's reason (CamelCase): ``ActiveCheckPassed``, ``DcgmDiagMissing``, ``DcgmDiagUnreadable``,
    ``DcgmDiagFailed``, ``AllReduceMissing``, ``AllReduceFailed``, ``BusBandwidthLow`` or ``NoCheckResults``."""
    message: str
    """One line: what was found."""


def read_results(directory: Path) -> CheckFiles:
    """Read the four files (absent ones as None)."""
    def text(name: str) -> Optional[str]:
        path = directory / name
        return path.read_text(errors="replace") if path.is_file() else None

    return CheckFiles(text(DCGM_JSON), text(DCGM_RC), text(ALL_REDUCE_LOG), text(ALL_REDUCE_RC))


def _rc(text: str) -> Optional[int]:
    try:
        return int(text.strip())
    except ValueError:
        return None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MESSAGE_LIMIT else line[:MESSAGE_LIMIT - 3] + "..."


def _missing(pairs: tuple[tuple[str, Optional[str]], ...]) -> str:
    return " and ".join(name for name, text in pairs if text is None)


def _dcgm(files: CheckFiles) -> tuple[Optional[Verdict], str]:
    if files.dcgm_json is None or files.dcgm_rc is None:
        missing = _missing(((DCGM_JSON, files.dcgm_json), (DCGM_RC, files.dcgm_rc)))
        return Verdict(False, "DcgmDiagMissing", f"dcgm-diag: {missing} missing: the diagnostic did not run"), ""
    rc = _rc(files.dcgm_rc)
    try:
        report = parse_diag(files.dcgm_json)
    except DcgmParseError as err:
        return Verdict(False, "DcgmDiagUnreadable", f"dcgm-diag: exit {files.dcgm_rc.strip()}: {err}"), ""
    if report.runtime_error:
        return Verdict(False, "DcgmDiagFailed", f"dcgm-diag: did not run: {report.runtime_error}"), ""
    failures = report.failures
    if failures:
        parts = []
        for test in failures:
            where = f" on {', '.join(test.failed_entities)}" if test.failed_entities else ""
            why = f" ({test.messages[0]})" if test.messages else ""
            parts.append(f"{test.name} {test.status}{where}{why}")
        return Verdict(False, "DcgmDiagFailed", f"dcgm-diag: {'; '.join(parts)}"), ""
    if not report.tests:
        return Verdict(False, "DcgmDiagFailed", "dcgm-diag: the document reports no test"), ""
    if rc != 0:
        return Verdict(False, "DcgmDiagFailed", f"dcgm-diag: dcgmi exited {files.dcgm_rc.strip()} "
                                                f"although no test failed"), ""
    notes = [f"{t.name} {t.status}" for t in report.tests if t.status != "pass"]
    version = f" (DCGM {report.version})" if report.version else ""
    summary = f"dcgm-diag: pass, {len(report.tests)} tests{version}" + (f" ({', '.join(notes)})" if notes else "")
    return None, summary


def _all_reduce(files: CheckFiles, min_bus_bandwidth: Optional[float]) -> tuple[Optional[Verdict], str]:
    if files.all_reduce_log is None or files.all_reduce_rc is None:
        missing = _missing(((ALL_REDUCE_LOG, files.all_reduce_log), (ALL_REDUCE_RC, files.all_reduce_rc)))
        return Verdict(False, "AllReduceMissing", f"all-reduce: {missing} missing"), ""
    rc = _rc(files.all_reduce_rc)
    result = parse_all_reduce(files.all_reduce_log)
    if rc != 0:
        first = f": {result.errors[0]}" if result.errors else ""
        return Verdict(False, "AllReduceFailed", f"all-reduce: exited {files.all_reduce_rc.strip()}{first}"), ""
    if result.errors:
        return Verdict(False, "AllReduceFailed", f"all-reduce: {result.errors[0]}"), ""
    if result.bus_bandwidth_gbps is None:
        return Verdict(False, "AllReduceFailed", "all-reduce: no result table in the log"), ""
    over = f" over {result.transport}" if result.transport else ""
    measured = f"{result.bus_bandwidth_gbps:.1f} GB/s bus bandwidth{over}"
    if min_bus_bandwidth and result.bus_bandwidth_gbps < min_bus_bandwidth:
        return Verdict(False, "BusBandwidthLow",
                       f"all-reduce: {measured}, below the minimum {min_bus_bandwidth:g} GB/s"), ""
    return None, f"all-reduce: {measured}"


def evaluate(files: CheckFiles, min_bus_bandwidth: Optional[float] = None,
             expect: tuple[str, ...] = ()) -> Verdict:
    """Pass or fail, with a one-line reason: a failed DCGM test, an exit status other than 0, a missing file or a bus
    bandwidth below ``min_bus_bandwidth`` (GB/s; 0 or None: no floor) fails the node; DCGM warnings and skipped tests
    pass (and are named).

    A check is judged when one of its files exists or it is named in ``expect`` (``dcgm-diag``, ``all-reduce``): the
    check pod runs DCGM only on NVIDIA nodes and the all-reduce only on nodes of two GPUs or more, and its init
    containers always write the exit status file (a crash is a status, not a missing file). A positive minimum bus
    bandwidth expects the all-reduce; no result at all fails."""
    run_dcgm = DCGM in expect or files.dcgm_json is not None or files.dcgm_rc is not None
    run_reduce = (ALL_REDUCE in expect or bool(min_bus_bandwidth) or files.all_reduce_log is not None
                  or files.all_reduce_rc is not None)
    if not run_dcgm and not run_reduce:
        return Verdict(False, "NoCheckResults", f"no check result: none of {DCGM_JSON}, {DCGM_RC}, "
                                                f"{ALL_REDUCE_LOG}, {ALL_REDUCE_RC}")
    summaries = []
    if run_dcgm:
        failed, summary = _dcgm(files)
        if failed:
            return Verdict(False, failed.reason, _one_line(failed.message))
        summaries.append(summary)
    if run_reduce:
        failed, summary = _all_reduce(files, min_bus_bandwidth)
        if failed:
            return Verdict(False, failed.reason, _one_line("; ".join([failed.message, *summaries])))
        summaries.append(summary)
    return Verdict(True, "ActiveCheckPassed", _one_line("; ".join(summaries)))


def condition_patch(node: dict, verdict: Verdict, now: datetime) -> dict:
    """Strategic-merge patch of the Node's status: the check condition (conditions merge by ``type``), its
    ``lastTransitionTime`` kept while the status stays the same."""
    status = "False" if verdict.passed else "True"
    previous = next((c for c in (node.get("status") or {}).get("conditions") or []
                     if c.get("type") == labels.HEALTH_CHECK_CONDITION), None)
    stamp = rfc3339(now)
    transition = previous.get("lastTransitionTime") if previous and previous.get("status") == status else None
    return {"status": {"conditions": [{
        "type": labels.HEALTH_CHECK_CONDITION, "status": status, "reason": verdict.reason,
        "message": verdict.message, "lastHeartbeatTime": stamp, "lastTransitionTime": transition or stamp}]}}


def metadata_patch(verdict: Verdict, now: datetime) -> dict:
    """Strategic-merge patch of the Node's label and detail annotation."""
    return {"metadata": {
        "labels": {labels.HEALTH_CHECK_LABEL: "passed" if verdict.passed else "failed"},
        "annotations": {labels.HEALTH_CHECK_DETAIL_ANNOTATION: f"{rfc3339(now)} {verdict.message}"}}}


def record(api: Any, node_name: str, verdict: Verdict, now: datetime) -> None:
    """Write the verdict on the Node: the condition first, then the label and annotation (either order is safe for
    remediation: a release needs both a ``passed`` label and no True fatal condition)."""
    node = api.read_node(node_name)
    api.patch_node_status(node_name, condition_patch(node, verdict, now))
    api.patch_node(node_name, metadata_patch(verdict, now))


def build_parser(parser: Optional[argparse.ArgumentParser] = None) -> argparse.ArgumentParser:
    """The ``health-report`` subcommand's arguments."""
    parser = parser or argparse.ArgumentParser(prog="gpu-platform health-report", description=__doc__.splitlines()[0])
    parser.add_argument("--node", required=True, help="the Node to record the verdict on (the pod's spec.nodeName)")
    parser.add_argument("--results", required=True, metavar="DIR",
                        help=f"directory holding {DCGM_JSON}, {DCGM_RC} and, on multi-GPU nodes, "
                             f"{ALL_REDUCE_LOG} and {ALL_REDUCE_RC}")
    parser.add_argument("--min-bus-bandwidth", type=float, metavar="GBPS",
                        help="fail the node when the all-reduce bus bandwidth (GB/s) is below this (0: no floor)")
    parser.add_argument("--expect", action="append", choices=CHECKS, default=[],
                        help="a check that must have run (repeatable); the others are judged when their files exist")
    parser.add_argument("--kubeconfig", help="kubeconfig path (default: in-cluster, else ~/.kube/config)")
    return parser


def run(args: argparse.Namespace, api_factory: Optional[Callable[[Optional[str]], Any]] = None,
        now: Optional[datetime] = None, out: Any = None, err: Any = None) -> int:
    """Judge the results and record them; returns the exit status."""
    out, err = out or sys.stdout, err or sys.stderr
    from .controller import ClusterApi, core_v1_api, first_line

    directory = Path(args.results)
    if not directory.is_dir():
        print(f"error: --results: {directory} is not a directory", file=err)
        return EXIT_USAGE
    if args.min_bus_bandwidth is not None and not args.min_bus_bandwidth >= 0:
        print(f"error: --min-bus-bandwidth: {args.min_bus_bandwidth:g} is not a GB/s figure >= 0", file=err)
        return EXIT_USAGE
    verdict = evaluate(read_results(directory), args.min_bus_bandwidth, tuple(args.expect))
    now = now or datetime.now(timezone.utc)
    print(f"{args.node}: {'passed' if verdict.passed else 'failed'} ({verdict.reason}): {verdict.message}", file=out)
    try:
        api = ClusterApi((api_factory or core_v1_api)(args.kubeconfig))
        record(api, args.node, verdict, now)
    except Exception as error:  # noqa: BLE001 - ApiException, urllib3 and config errors: one line, exit 1
        print(f"error: Kubernetes API: cannot record the check on {args.node}: "
              f"{first_line(error)}", file=err)
        return EXIT_API
    return EXIT_OK
