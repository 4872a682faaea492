"""`gpu-platform optimize`: one evaluation of GPU utilisation, then the policy's action.

Prometheus is read first; if it is unreachable, slow or answers garbage the run stops with exit 3 before any
Kubernetes call, so no action is ever based on missing data. Dry-run is the default (``--apply`` to change).
"""

import argparse
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Optional

from .actions import apply_actions, plan_actions
from .analysis import Finding, analyse
from .inventory import Inventory, load_inventory
from .policy import ACTIONS, Policy, PolicyError, load_policy
from .prometheus import PrometheusClient, PrometheusError
from .queries import merge, signal_queries

EXIT_OK, EXIT_USAGE, EXIT_PROMETHEUS, EXIT_KUBERNETES = 0, 2, 3, 4


class KubernetesError(RuntimeError):
    """The Kubernetes API could not be reached or refused a call."""


def kubernetes_apis(kubeconfig: Optional[str]) -> tuple[Any, Any, Any]:
    """CoreV1Api, AppsV1Api, AutoscalingV2Api from in-cluster config or a kubeconfig."""
    import os

    from kubernetes import client, config

    try:
        if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
            config.load_incluster_config()
        else:
            config.load_kube_config(config_file=kubeconfig)
    except Exception as err:  # noqa: BLE001 - the client raises several unrelated types
        raise KubernetesError(f"cannot load Kubernetes credentials: {err}") from None
    return client.CoreV1Api(), client.AppsV1Api(), client.AutoscalingV2Api()


def evaluate(prometheus: PrometheusClient, inventory_loader, policy: Policy, now: Optional[float] = None
             ) -> tuple[list[Finding], Inventory]:
    """Run the constant query set (four per vendor signal), then load the inventory, then judge every pod."""
    now = time.time() if now is None else now
    answers = [(vendor, [prometheus.query(q, now) for q in queries.all()])
               for vendor, queries in zip(policy.vendors, signal_queries(policy), strict=True)]
    facts = merge(answers, policy)
    inventory = inventory_loader()
    return analyse(facts.utilization, facts.memory_used_mib, facts.first_seen, facts.gpus, inventory, policy, now,
                   facts.vendor), inventory


def render_table(findings: list[Finding]) -> str:
    header = f"{'namespace':<20} {'pod':<40} {'gpus':>4} {'util%':>6} {'mem MiB':>9} {'owner':<36} {'opt-in':<6} reason"
    lines = [header]
    for f in findings:
        lines.append(f"{f.namespace:<20} {f.pod:<40} {f.gpus:>4} {f.utilization:>6.1f} {f.memory_used_mib:>9.0f} "
                     f"{(f.owner_kind + '/' + f.owner_name):<36} {'yes' if f.opted_in else 'no':<6} {f.reason}")
    return "\n".join(lines)


def write_metrics(path: Path, findings: list[Finding], results: list, queries: int, now: float) -> None:
    """Prometheus text-format metrics of the run (for a textfile collector or a sidecar)."""
    from prometheus_client import CollectorRegistry, Counter, Gauge, write_to_textfile

    registry = CollectorRegistry()
    Gauge("gpu_optimizer_pods_observed", "Pods holding GPUs seen in this run", registry=registry).set(len(findings))
    Gauge("gpu_optimizer_idle_pods", "Idle, opted-in pods", registry=registry).set(
        sum(f.actionable for f in findings))
    Gauge("gpu_optimizer_idle_gpus", "GPUs held by idle pods (opted in or not)", registry=registry).set(
        sum(f.gpus for f in findings if f.idle))
    Gauge("gpu_optimizer_queries", "Prometheus queries this run sent", registry=registry).set(queries)
    Gauge("gpu_optimizer_last_run_timestamp_seconds", "End of the last run", registry=registry).set(now)
    actions = Counter("gpu_optimizer_actions", "Action decisions by outcome", ["action", "outcome"], registry=registry)
    for result in results:
        actions.labels(result.action, result.outcome.split(":")[0]).inc()
    write_to_textfile(str(path), registry)


def build_parser(parser: Optional[argparse.ArgumentParser] = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="gpu-platform optimize", description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", required=True, metavar="URL", help="Prometheus base URL")
    parser.add_argument("--policy", metavar="FILE", help="policy file (YAML/JSON; the ConfigMap's policy.yaml)")
    parser.add_argument("--action", choices=ACTIONS, help="override the policy's action")
    parser.add_argument("--threshold", type=float, help="override utilizationThreshold (%%)")
    parser.add_argument("--window", help="override the window (e.g. 1h)")
    parser.add_argument("--apply", action="store_true", help="make changes (default: dry run)")
    parser.add_argument("--output", choices=("table", "json"), default="table")
    parser.add_argument("--metrics-file", metavar="PATH", help="write Prometheus text metrics of the run here")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per Prometheus query")
    parser.add_argument("--kubeconfig", help="kubeconfig path (default: in-cluster, else ~/.kube/config)")
    return parser


def run(args: argparse.Namespace, apis_factory=kubernetes_apis, out=sys.stdout, err=sys.stderr) -> int:
    """Execute one optimizer run from parsed arguments; returns the exit status."""
    try:
        policy = load_policy(Path(args.policy) if args.policy else None)
        overrides = {k: v for k, v in (("action", args.action), ("utilization_threshold", args.threshold),
                                       ("window", args.window)) if v is not None}
        if args.apply:
            overrides["dry_run"] = False
        policy = replace(policy, **overrides)
    except PolicyError as error:
        print(f"error: policy: {error}", file=err)
        return EXIT_USAGE
    prometheus = PrometheusClient(args.prometheus, args.timeout)
    apis: dict[str, Any] = {}

    def inventory_loader() -> Inventory:
        core, apps, autoscaling = apis_factory(args.kubeconfig)
        apis["apps"] = apps
        try:
            return load_inventory(core, apps, autoscaling)
        except Exception as error:  # noqa: BLE001 - ApiException, urllib3 errors...
            raise KubernetesError(f"Kubernetes API: {str(error).splitlines()[0]}") from None

    now = time.time()
    try:
        findings, inventory = evaluate(prometheus, inventory_loader, policy, now)
    except PrometheusError as error:
        print(f"error: {error}; no action taken", file=err)
        return EXIT_PROMETHEUS
    except KubernetesError as error:
        print(f"error: {error}; no action taken", file=err)
        return EXIT_KUBERNETES
    planned = plan_actions(findings, inventory, policy, now)
    try:
        results = apply_actions(planned, apis.get("apps"), policy.dry_run)
    except Exception as error:  # noqa: BLE001
        print(f"error: Kubernetes API refused a change: {str(error).splitlines()[0]}", file=err)
        return EXIT_KUBERNETES
    if args.output == "json":
        json.dump({"policy": {"action": policy.action, "dryRun": policy.dry_run,
                              "utilizationThreshold": policy.utilization_threshold, "window": policy.window},
                   "queries": prometheus.queries_sent,
                   "findings": [asdict(f) for f in findings],
                   "actions": [asdict(r) for r in results]}, out, indent=2, sort_keys=True)
        out.write("\n")
    else:
        print(render_table(findings), file=out)
        idle = [f for f in findings if f.actionable]
        print(f"\n{len(idle)} idle opted-in pod(s) holding {sum(f.gpus for f in idle)} GPU(s); "
              f"{prometheus.queries_sent} Prometheus queries", file=out)
        for result in results:
            print(f"{result.action} {result.kind}/{result.namespace}/{result.name}: {result.outcome} {result.detail}",
                  file=out)
    if args.metrics_file:
        write_metrics(Path(args.metrics_file), findings, results, prometheus.queries_sent, time.time())
    return EXIT_OK


def main(argv: Optional[list[str]] = None) -> int:
    return run(build_parser().parse_args(argv))
