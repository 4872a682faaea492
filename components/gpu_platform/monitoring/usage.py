"""``gpu-platform usage``: GPU showback from Prometheus, per team and pool: GPU-hours admitted, busy, idle share.

``gpu-platform usage --prometheus URL [--since 7d] [--until TIME] [--source auto|rules|raw] [--idle-threshold
PERCENT] [--json]``. Three instant queries (one per showback gauge, `showback_queries`), plus one to find out whether
the showback recording rules cover the window when ``--source auto``. Exit codes: 0 printed, 2 bad usage or no answer
from Prometheus (unreachable, an HTTP error, not a query result); the error is one line naming the flag.
"""

import argparse
import json
import math
import re
import sys
import time
from datetime import datetime
from typing import Optional

from ..optimizer.prometheus import PrometheusClient, PrometheusError
from .alerts import AlertThresholds
from .showback_queries import SOURCES, STEP_SECONDS, Window, gauges, integral, rules_deployed_query, window
from .showback_report import Key, render_text, report, to_json

EXIT_OK, EXIT_USAGE = 0, 2
QUERY_TIMEOUT_SECONDS = 120.0
"""A week of raw series integrated at 5-minute steps is a heavy query on a big cluster."""

_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60}
_DURATION = re.compile(r"(?:\d+[wdhm])+")


class UsageError(ValueError):
    """A bad flag: the message names it."""


def parse_since(text: str) -> int:
    """``7d``, ``36h``, ``1w2d``, ``90m`` -> seconds; a whole number of 5-minute steps."""
    if not _DURATION.fullmatch(text or ""):
        raise UsageError(f"--since: {text!r} is not a duration such as 7d, 36h or 90m")
    seconds = sum(int(n) * _UNITS[u] for n, u in re.findall(r"(\d+)([wdhm])", text))
    if seconds <= 0 or seconds % STEP_SECONDS:
        raise UsageError(f"--since: {text!r} must be a positive whole number of {STEP_SECONDS // 60}m steps")
    return seconds


def parse_until(text: Optional[str], now: float) -> float:
    """An RFC 3339 time (``2026-01-12T00:00:00Z``) or Unix seconds; None is ``now``."""
    if text is None:
        return now
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or seconds < 0:
            raise UsageError(f"--until: {text!r} is not a time")
        return seconds
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--until: {text!r} is not an RFC 3339 time (2026-01-12T00:00:00Z) or Unix seconds") from None
    if moment.tzinfo is None:
        raise UsageError(f"--until: {text!r} has no time zone (end it with Z or +00:00)")
    return moment.timestamp()


def parse_threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"--idle-threshold: {text!r} is not a number") from None
    if not 0 <= value <= 100:
        raise UsageError(f"--idle-threshold: {text!r} is not a utilisation percentage (0-100)")
    return value


def choose_source(client: PrometheusClient, requested: str, win: Window) -> str:
    """``auto``: the recording rules when their gauges exist at the window's start, else the raw series."""
    if requested != "auto":
        return requested
    return "rules" if client.query(rules_deployed_query(), win.start) else "raw"


def integrals(client: PrometheusClient, source: str, win: Window,
              thresholds: AlertThresholds) -> dict[str, dict[Key, float]]:
    """Per showback record, per ``(team, pool)``, the gauge summed over the window's steps."""
    out: dict[str, dict[Key, float]] = {}
    for record, expr in gauges(source, thresholds).items():
        query = integral(expr, win)
        try:
            samples = client.query(query, win.query_time)
        except PrometheusError as err:
            # The raw expressions are pages long: name the gauge instead of quoting the query.
            raise PrometheusError(str(err).replace(repr(query), record)) from None
        out[record] = {(s.labels.get("team", ""), s.labels.get("pool", "")): s.value for s in samples}
    return out


def build_parser(parser: Optional[argparse.ArgumentParser] = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="gpu-platform usage",
                                               description="GPU showback from Prometheus per team and pool.")
    parser.add_argument("--prometheus", required=True, metavar="URL", help="Prometheus base URL")
    parser.add_argument("--since", default="7d", metavar="DURATION",
                        help="the window's length, a whole number of 5m steps (default: 7d)")
    parser.add_argument("--until", metavar="TIME",
                        help="the window's end, RFC 3339 or Unix seconds, rounded down to 5m (default: now)")
    parser.add_argument("--source", choices=("auto", *SOURCES), default="auto",
                        help="rules: the showback recording rules; raw: DCGM, kube-state-metrics and Kueue series; "
                             "auto (default): the rules where they cover the window, else raw")
    parser.add_argument("--idle-threshold", default=str(AlertThresholds().idle_utilization_percent),
                        metavar="PERCENT", help="with raw series: utilisation under which a GPU is idle (default: "
                                                "%(default)s, the alerts' default; the rules use the stack's)")
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of tables")
    return parser


def run(args: argparse.Namespace, out=None, err=None, now: Optional[float] = None) -> int:
    """One showback report from parsed arguments; returns the exit status (``out``/``err``: default the process's
    streams, looked up at the call)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        seconds = parse_since(args.since)
        until = parse_until(args.until, time.time() if now is None else now)
        thresholds = AlertThresholds(idle_utilization_percent=parse_threshold(args.idle_threshold))
        if not re.match(r"https?://[^/\s]+", args.prometheus or ""):
            raise UsageError(f"--prometheus: {args.prometheus!r} is not an http(s) URL")
        win = window(until, seconds)
    except (UsageError, ValueError) as error:
        print(f"error: {error}", file=err)
        return EXIT_USAGE
    client = PrometheusClient(args.prometheus, QUERY_TIMEOUT_SECONDS)
    try:
        source = choose_source(client, args.source, win)
        rep = report(integrals(client, source, win, thresholds), win, source)
    except PrometheusError as error:
        print(f"error: --prometheus: {error}".splitlines()[0], file=err)
        return EXIT_USAGE
    print(json.dumps(to_json(rep), indent=2) if args.json else render_text(rep), file=out)
    return EXIT_OK
