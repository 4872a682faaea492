"""``gpu-platform remediate``: the remediation controller's loop around the pure decisions of `remediation`.

Every ``intervalSeconds`` it lists the nodes, decides (`remediation.decide`), acts (in ``cordon``/``drain`` mode
only), and records each action as a Kubernetes Event on the Node and as Prometheus metrics. ``--once`` makes one pass.
Exit codes: 0 done, 1 the Kubernetes API failed (``--once``), 2 bad configuration or usage.
"""

import argparse
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from .. import labels
from .remediation import (
    DRAIN,
    QUARANTINE,
    RELEASE,
    SKIP,
    Action,
    NodeState,
    Plan,
    PolicyError,
    RemediationPolicy,
    decide,
    eviction_body,
    load_policy,
    node_state,
    pods_to_evict,
    quarantine_patch,
    release_patch,
    rfc3339,
)

EXIT_OK, EXIT_API, EXIT_USAGE = 0, 1, 2
COMPONENT = "gpu-platform-remediation"
"""The Events' ``source.component``."""
EVENT_NAMESPACE = "default"
"""Events about cluster-scoped Nodes live in ``default``, where the kubelet and ``kubectl describe node`` put them."""
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
REASONS = {QUARANTINE: "GpuPlatformQuarantine", DRAIN: "GpuPlatformQuarantine", RELEASE: "GpuPlatformRelease",
           SKIP: "GpuPlatformQuarantineSkipped"}
"""Event reasons by action; dry-run appends ``DryRun`` (``GpuPlatformQuarantineDryRun``...)."""


def first_line(error: BaseException) -> str:
    """One line for an error: ``409 Conflict`` for an API refusal, else the message's first line."""
    status, reason = getattr(error, "status", None), getattr(error, "reason", None)
    if status:
        return f"{status} {reason}" if reason else str(status)
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _plain(obj: Any) -> Any:
    """The API's JSON form (camelCase dicts) of a client model, a list of them or a dict."""
    if isinstance(obj, (dict, list)):
        return obj
    from kubernetes.client import ApiClient

    return ApiClient().sanitize_for_serialization(obj)


def _model(kind: str, body: dict) -> Any:
    """``body`` as the client's model class ``kind`` where the client validates its arguments (its pydantic models
    have ``from_dict``); older clients take the dict as it is."""
    from kubernetes import client

    cls = getattr(client, kind)
    return cls.from_dict(body) if hasattr(cls, "from_dict") else body


class ClusterApi:
    """The few CoreV1Api calls remediation and the reporter make, in and out as plain JSON dicts.

    ``core`` is a `kubernetes.client.CoreV1Api` or, in tests, an in-memory fake with the same methods."""

    def __init__(self, core: Any):
        self.core = core

    def list_nodes(self) -> list[dict]:
        """Every Node."""
        return list(_plain(self.core.list_node()).get("items") or [])

    def read_node(self, name: str) -> dict:
        """One Node."""
        return _plain(self.core.read_node(name))

    def pods_on(self, node: str) -> list[dict]:
        """The pods bound to ``node``, every namespace."""
        return list(_plain(self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}"))
                    .get("items") or [])

    def patch_node(self, name: str, body: dict) -> None:
        """Strategic-merge patch of the Node (the client would otherwise pick JSON-patch for a dict body)."""
        self.core.patch_node(name, body, _content_type=STRATEGIC_MERGE)

    def patch_node_status(self, name: str, body: dict) -> None:
        """Strategic-merge patch of the Node's status (conditions merge by ``type``)."""
        self.core.patch_node_status(name, body, _content_type=STRATEGIC_MERGE)

    def evict(self, namespace: str, name: str) -> bool:
        """Ask the Eviction API to evict a pod; False when a PodDisruptionBudget refuses it now (429)."""
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.create_namespaced_pod_eviction(name, namespace, _model("V1Eviction", eviction_body(namespace,
                                                                                                          name)))
        except ApiException as err:
            if err.status == 429:
                return False
            if err.status == 404:  # gone meanwhile: nothing left to evict
                return True
            raise
        return True

    def record_event(self, body: dict) -> None:
        """Create a core/v1 Event."""
        self.core.create_namespaced_event(body["metadata"]["namespace"], _model("CoreV1Event", body))


def event_body(node: dict, reason: str, message: str, warning: bool, now: datetime) -> dict:
    """A core/v1 Event about a Node."""
    meta = node.get("metadata") or {}
    name = meta.get("name", "")
    involved = {"apiVersion": "v1", "kind": "Node", "name": name}
    if meta.get("uid"):
        involved["uid"] = meta["uid"]
    stamp = rfc3339(now)
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": EVENT_NAMESPACE},
            "involvedObject": involved, "reason": reason, "message": message[:1024],
            "type": "Warning" if warning else "Normal", "source": {"component": COMPONENT},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1}


class Metrics:
    """The controller's Prometheus metrics, in their own registry."""

    def __init__(self, registry: Any = None):
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.registry = registry or CollectorRegistry()
        self.actions = Counter("gpu_platform_remediation_actions", "Remediation actions by kind",
                               ["action", "pool", "reason", "dry_run"], registry=self.registry)
        self.skipped = Counter("gpu_platform_remediation_skipped", "Quarantines a guard held back, by guard",
                               ["pool", "why"], registry=self.registry)
        self.errors = Counter("gpu_platform_remediation_errors", "Kubernetes API calls that failed",
                              ["operation"], registry=self.registry)
        self.quarantined = Gauge("gpu_platform_quarantined_nodes", "Nodes carrying the quarantine taint",
                                 ["pool"], registry=self.registry)
        self.unhealthy = Gauge("gpu_platform_unhealthy_nodes", "Nodes with a fatal condition True",
                               ["pool"], registry=self.registry)
        self.cap = Gauge("gpu_platform_remediation_cap", "Most nodes of the pool that may be out of service",
                         ["pool"], registry=self.registry)
        self.storm = Gauge("gpu_platform_remediation_storm", "1 while more nodes are unhealthy than the cap",
                           ["pool"], registry=self.registry)
        self.last_pass = Gauge("gpu_platform_remediation_last_pass_timestamp_seconds", "End of the last pass",
                               registry=self.registry)

    def value(self, name: str, **label_values: str) -> float:
        """A sample's current value (0 when absent); for tests and the log line."""
        return self.registry.get_sample_value(name, label_values) or 0.0


class Controller:
    """One remediation controller: its policy, the cluster, the metrics, and what it remembers between passes."""

    def __init__(self, api: ClusterApi, policy: RemediationPolicy, metrics: Optional[Metrics] = None,
                 log: Callable[[str], None] = lambda line: print(line, file=sys.stderr)):
        self.api = api
        self.policy = policy
        self.metrics = metrics or Metrics()
        self.log = log
        self.last_quarantine: dict[str, datetime] = {}
        """Latest quarantine per pool, real or (dry-run) simulated: the cool-down outlives a release."""
        self.simulated: dict[str, tuple[str, datetime]] = {}
        """Dry-run: the nodes this controller would have quarantined (reason, when), so later passes decide as if
        it had, and the dry-run Events show what the cap and cool-down would really do."""
        self.reported_skips: dict[str, str] = {}
        """The last skip recorded per node: a guard holding a node back is recorded once, not every pass."""

    def _states(self, nodes: list[dict]) -> list[NodeState]:
        states = []
        for node in nodes:
            state = node_state(node, self.policy)
            if state.name in self.simulated and not state.quarantined and not state.unschedulable:
                reason, at = self.simulated[state.name]
                state = replace(state, quarantine_reason=reason, quarantined_at=at, unschedulable=True)
            states.append(state)
        return states

    def run_pass(self, now: Optional[datetime] = None) -> Plan:
        """List, decide, act, record. Raises the API's error if listing nodes fails (nothing was decided)."""
        now = now or datetime.now(timezone.utc)
        nodes = self.api.list_nodes()
        by_name = {n["metadata"]["name"]: n for n in nodes}
        self.simulated = {k: v for k, v in self.simulated.items() if k in by_name}
        plan = decide(self._states(nodes), self.policy, now, self.last_quarantine)
        skipped_now = {a.node for a in plan.of(SKIP)}
        for action in plan.actions:
            self._apply(action, by_name[action.node], now)
        self.reported_skips = {k: v for k, v in self.reported_skips.items() if k in skipped_now}
        self._gauges(plan, nodes)
        self.metrics.last_pass.set(now.timestamp())
        return plan

    def _apply(self, action: Action, node: dict, now: datetime) -> None:
        dry = self.policy.dry_run
        reason = REASONS[action.kind] + ("DryRun" if dry else "")
        if action.kind == SKIP:
            if self.reported_skips.get(action.node) == action.reason:
                return
            self.reported_skips[action.node] = action.reason
            self.metrics.skipped.labels(action.pool, action.reason).inc()
            self._event(node, reason, action.message, True, now)
            return
        if action.kind == DRAIN:
            self._drain(action, node, now)
            return
        try:
            if action.kind == QUARANTINE:
                if dry:
                    self.simulated[action.node] = (action.reason, now)
                else:
                    self.api.patch_node(action.node, quarantine_patch(node, action.reason, now))
                self.last_quarantine[action.pool] = now
            else:  # RELEASE
                if dry:
                    self.simulated.pop(action.node, None)
                else:
                    self.api.patch_node(action.node, release_patch(node))
        except Exception as err:  # noqa: BLE001 - ApiException (409 conflict...), urllib3 errors: retried next pass
            self.metrics.errors.labels(action.kind).inc()
            self.log(f"error: {action.kind} {action.node}: {first_line(err)}")
            return
        self.metrics.actions.labels(action.kind, action.pool, action.reason, str(dry).lower()).inc()
        message = f"dry-run, not applied: {action.message}" if dry else action.message
        self._event(node, reason, message, action.kind == QUARANTINE, now)
        self.log(f"{action.kind}{' (dry-run)' if dry else ''} {action.node} pool={action.pool}: {action.message}")

    def _drain(self, action: Action, node: dict, now: datetime) -> None:
        # Only reached in drain mode (never in dry-run): a refused eviction (429, a PodDisruptionBudget) is left for
        # the next pass; nothing is ever deleted or forced.
        try:
            pods = pods_to_evict(self.api.pods_on(action.node))
        except Exception as err:  # noqa: BLE001
            self.metrics.errors.labels("list-pods").inc()
            self.log(f"error: drain {action.node}: {first_line(err)}")
            return
        for namespace, name in pods:
            try:
                evicted = self.api.evict(namespace, name)
            except Exception as err:  # noqa: BLE001
                self.metrics.errors.labels("evict").inc()
                self.log(f"error: evict {namespace}/{name}: {first_line(err)}")
                continue
            if not evicted:
                self.log(f"evict {namespace}/{name} on {action.node}: refused by a disruption budget; next pass")
                continue
            self.metrics.actions.labels("evict", action.pool, action.reason, "false").inc()
            self._event(node, REASONS[DRAIN], f"drain: evicted pod {namespace}/{name} ({action.reason})", True, now)

    def _event(self, node: dict, reason: str, message: str, warning: bool, now: datetime) -> None:
        try:
            self.api.record_event(event_body(node, reason, message, warning, now))
        except Exception as err:  # noqa: BLE001 - an Event lost is not worth stopping remediation for
            self.metrics.errors.labels("event").inc()
            self.log(f"error: event {reason} on {node['metadata']['name']}: {first_line(err)}")

    def _gauges(self, plan: Plan, nodes: list[dict]) -> None:
        for summary in plan.pools:
            # The real taint count: a dry-run's simulated quarantines are in the actions counter only.
            real = sum(1 for n in nodes if (n["metadata"].get("labels") or {}).get(self.policy.pool_label)
                       == summary.pool and any(t.get("key") == labels.QUARANTINE_TAINT_KEY
                                               for t in (n.get("spec") or {}).get("taints") or []))
            self.metrics.quarantined.labels(summary.pool).set(real)
            self.metrics.unhealthy.labels(summary.pool).set(summary.unhealthy)
            self.metrics.cap.labels(summary.pool).set(summary.cap)
            self.metrics.storm.labels(summary.pool).set(1 if summary.storm else 0)


def core_v1_api(kubeconfig: Optional[str]) -> Any:
    """CoreV1Api from in-cluster config (in a pod) or a kubeconfig."""
    import os

    from kubernetes import client, config

    if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
        config.load_incluster_config()
    else:
        config.load_kube_config(config_file=kubeconfig)
    return client.CoreV1Api()


def build_parser(parser: Optional[argparse.ArgumentParser] = None) -> argparse.ArgumentParser:
    """The ``remediate`` subcommand's arguments."""
    parser = parser or argparse.ArgumentParser(prog="gpu-platform remediate", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="remediation settings (JSON: mode, maxQuarantinedPerPool, maxQuarantinedPercent, "
                             "cooldownMinutes, fatalConditions, poolLabel, intervalSeconds, releaseAfterPassingCheck)")
    parser.add_argument("--once", action="store_true", help="make one pass and exit")
    parser.add_argument("--metrics-port", type=int, default=8080, metavar="PORT",
                        help="serve Prometheus metrics on this port (default 8080; 0: do not serve)")
    parser.add_argument("--kubeconfig", help="kubeconfig path (default: in-cluster, else ~/.kube/config)")
    return parser


def run(args: argparse.Namespace, api_factory: Optional[Callable[[Optional[str]], Any]] = None,
        sleep: Callable[[float], None] = time.sleep, err: Any = None) -> int:
    """Run the controller from parsed arguments; returns the exit status (``--once``) or runs until stopped."""
    err = err or sys.stderr
    try:
        policy = load_policy(Path(args.config))
    except PolicyError as error:
        print(f"error: remediation config: {error}", file=err)
        return EXIT_USAGE
    if not 0 <= args.metrics_port <= 65535:
        print(f"error: --metrics-port: {args.metrics_port} is not a port number", file=err)
        return EXIT_USAGE
    try:
        api = ClusterApi((api_factory or core_v1_api)(args.kubeconfig))
    except Exception as error:  # noqa: BLE001 - the config loaders raise several unrelated types
        print(f"error: cannot load Kubernetes credentials: {first_line(error)}", file=err)
        return EXIT_API
    controller = Controller(api, policy, log=lambda line: print(line, file=err))
    if args.metrics_port:
        from prometheus_client import start_http_server

        start_http_server(args.metrics_port, registry=controller.metrics.registry)
    print(f"remediation: mode={policy.mode} cap={policy.max_quarantined_per_pool}/pool, "
          f"{policy.max_quarantined_percent}% cool-down={policy.cooldown_minutes}m "
          f"interval={policy.interval_seconds}s", file=err)
    while True:
        try:
            controller.run_pass()
        except Exception as error:  # noqa: BLE001 - listing nodes failed: nothing decided, try again next interval
            controller.metrics.errors.labels("list-nodes").inc()
            print(f"error: Kubernetes API: {first_line(error)}", file=err)
            if args.once:
                return EXIT_API
        if args.once:
            return EXIT_OK
        sleep(policy.interval_seconds)
