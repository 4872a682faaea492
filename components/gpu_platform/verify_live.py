"""``gpu-platform verify`` against a live cluster: fetch, create, wait (bounded), delete. No decision lives here.

`run_checks` drives the pure checks of `verify` through a `Cluster` (the real one is `KubeClient`, over the
``kubernetes`` client with ``--kubeconfig``/``--context``; the tests pass an in-memory one). What it creates:

- the namespace ``gpu-platform-verify-<run id>`` holding the smoke pods (one per pool with a Ready node), the
  all-reduce ConfigMap, headless Services and Indexed Jobs (one per RDMA pool with two Ready nodes) and, on DRA
  pools, their ResourceClaimTemplates;
- the gang Job of the ``kueue`` check, in the first team's namespace (its LocalQueue lives there).

Every object carries ``gpu-platform.io/verify-run=<run id>`` and is deleted in a ``finally`` (newest first, Jobs with
their pods, the namespace last), also when a check raises, on Ctrl-C (SIGINT) and on SIGTERM, which is turned into
the same interruption. Every wait is bounded by ``timeout`` seconds per check.
"""

import contextlib
import json
import secrets
import signal
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any, Optional, Protocol

from . import catalog, labels, verify
from .verify import FAIL, PASS, SKIP, CheckResult
from .versions import KUEUE_API_VERSION


class Cluster(Protocol):
    """What `run_checks` needs of a cluster: objects are plain dicts in their wire form."""

    def list(self, api_version: str, kind: str, namespace: Optional[str] = None) -> list[dict]:
        """Every object of a kind (in ``namespace`` when given)."""
        ...

    def create(self, obj: dict) -> None:
        """Create ``obj``."""
        ...

    def delete(self, obj: dict) -> None:
        """Delete ``obj`` and what it owns (background propagation); an object already gone is no error."""
        ...

    def pod_log(self, namespace: str, name: str) -> str:
        """The log of a pod's only container."""
        ...

    def proxy(self, method: str, path: str, body: Optional[dict] = None) -> tuple[int, str]:
        """An API-server request (``path`` may carry a query string): (HTTP status, body text)."""
        ...


def new_run_id() -> str:
    """A short random id for a run: a DNS label part."""
    return secrets.token_hex(4)


def wait_until(probe: Callable[[], Any], timeout: float, sleep: Callable[[float], None],
               clock: Callable[[], float], interval: float = 2.0) -> Any:
    """``probe()``'s first truthy value, probing every ``interval`` seconds for at most ``timeout``; None on timeout."""
    deadline = clock() + timeout
    while True:
        value = probe()
        if value:
            return value
        if clock() >= deadline:
            return None
        sleep(min(interval, max(0.0, deadline - clock())))


def _terminate(signum, frame):  # noqa: ARG001 - signal handler signature
    raise KeyboardInterrupt(f"signal {signum}")


class _Run:
    """One run's state: the objects it created (to delete), the clock, and the per-check bound."""

    def __init__(self, client: Cluster, run_id: str, timeout: float, sleep, clock, interval: float):
        self.client, self.run_id, self.timeout = client, run_id, timeout
        self.sleep, self.clock, self.interval = sleep, clock, interval
        self.created: list[dict] = []
        self.namespace: Optional[str] = None

    def create(self, obj: dict) -> None:
        self.client.create(obj)
        self.created.append(obj)

    def ensure_namespace(self) -> str:
        if self.namespace is None:
            self.create(verify.verify_namespace(self.run_id))
            self.namespace = verify.namespace_name(self.run_id)
        return self.namespace

    def wait(self, probe: Callable[[], Any]) -> Any:
        return wait_until(probe, self.timeout, self.sleep, self.clock, self.interval)

    def cleanup(self) -> list[str]:
        """Delete every created object, newest first; returns the errors (a failed delete never stops the rest)."""
        errors = []
        for obj in reversed(self.created):
            try:
                self.client.delete(obj)
            except Exception as err:  # noqa: BLE001 - keep deleting the others
                errors.append(f"{obj['kind']} {obj['metadata']['name']}: {err}")
        self.created.clear()
        return errors


def _pods(run: _Run, namespace: str) -> list[dict]:
    return run.client.list("v1", "Pod", namespace)


def _pod_named(run: _Run, namespace: str, name: str) -> Optional[dict]:
    return next((p for p in _pods(run, namespace) if p["metadata"]["name"] == name), None)


def _phase(pod: Optional[dict]) -> Optional[str]:
    return ((pod or {}).get("status") or {}).get("phase")


def _smoke(run: _Run, pools, ready: dict[str, int]) -> list[CheckResult]:
    results: dict[str, CheckResult] = {}
    started = []
    for pool in pools:  # every pod first, so they run side by side; then each is awaited (bounded)
        if not ready.get(pool.name):
            results[pool.name] = CheckResult("smoke", pool.name, SKIP, "no Ready node")
            continue
        objects = verify.smoke_objects(pool, run.ensure_namespace(), run.run_id)
        if not objects:
            results[pool.name] = CheckResult("smoke", pool.name, SKIP, f"no smoke command for {pool.vendor}")
            continue
        for obj in objects:
            run.create(obj)
        started.append((pool, objects[-1]["metadata"]["name"], run.clock()))
    for pool, name, began in started:
        namespace = run.ensure_namespace()

        def done(name=name, namespace=namespace):
            pod = _pod_named(run, namespace, name)
            return pod if _phase(pod) in ("Succeeded", "Failed") else None

        pod = run.wait(done)
        if pod is None:
            phase = _phase(_pod_named(run, namespace, name))
            result = CheckResult("smoke", pool.name, FAIL, f"timed out after {run.timeout:g} s (pod {phase})")
        else:
            result = verify.check_smoke(pool, _phase(pod), run.client.pod_log(namespace, name))
        results[pool.name] = _timed(result, run.clock() - began)
    return [results[pool.name] for pool in pools]


def _job_finished(job: Optional[dict]) -> Optional[str]:
    for condition in ((job or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return None


def _all_reduce(run: _Run, pools, ready: dict[str, int]) -> list[CheckResult]:
    results = []
    for pool in pools:
        reason = verify.all_reduce_skip_reason(pool, ready.get(pool.name, 0))
        if reason:
            results.append(CheckResult("all-reduce", pool.name, SKIP, reason))
            continue
        began = run.clock()
        namespace = run.ensure_namespace()
        if not any(o["kind"] == "ConfigMap" for o in run.created):
            run.create(verify.program_config_map(namespace, run.run_id))
        objects = verify.all_reduce_objects(pool, namespace, run.run_id)
        for obj in objects:
            run.create(obj)
        job_name = objects[-1]["metadata"]["name"]

        def finished(job_name=job_name, namespace=namespace):
            jobs = [j for j in run.client.list("batch/v1", "Job", namespace) if j["metadata"]["name"] == job_name]
            return _job_finished(jobs[0] if jobs else None)

        outcome = run.wait(finished)
        rank0 = next((p for p in _pods(run, namespace)
                      if (p.get("spec") or {}).get("hostname") == f"{job_name}-0"), None)
        log = run.client.pod_log(namespace, rank0["metadata"]["name"]) if rank0 else ""
        if outcome is None:
            result = CheckResult("all-reduce", pool.name, FAIL, f"timed out after {run.timeout:g} s "
                                 f"(rank 0 pod {_phase(rank0) or 'not created'})")
        else:
            result = verify.check_all_reduce(pool, outcome == "Complete", log)
        results.append(_timed(result, run.clock() - began))
    return results


def _owned_by(obj: dict, name: str) -> bool:
    return any(ref.get("name") == name for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])


def _kueue(run: _Run, config) -> list[CheckResult]:
    if not config.scheduling.kueue:
        return [CheckResult("kueue", "-", SKIP, "scheduling.kueue is off")]
    if not config.teams:
        return [CheckResult("kueue", "-", SKIP, "no team: no LocalQueue to submit to")]
    team = config.teams[0].name
    job = verify.kueue_job(team, run.run_id)
    run.create(job)

    def workloads():
        return [w for w in run.client.list(KUEUE_API_VERSION, "Workload", team)
                if _owned_by(w, job["metadata"]["name"])]

    admitted = run.wait(lambda: (found := workloads()) and verify.check_kueue(team, found).status == PASS and found)
    return [verify.check_kueue(team, admitted or workloads())]


def _dcgm(run: _Run, config, pools) -> list[CheckResult]:
    if not config.monitoring.enabled:
        return [CheckResult("dcgm", "prometheus", SKIP, "monitoring is off")]
    if not any(p.vendor == catalog.NVIDIA for p in pools):
        return [CheckResult("dcgm", "prometheus", SKIP, "no NVIDIA pool: no DCGM exporter")]
    path = f"{verify.dcgm_query_path()}?{urllib.parse.urlencode({'query': verify.DCGM_QUERY})}"
    last: list[CheckResult] = []

    def probe():
        last[:] = [verify.check_dcgm(*run.client.proxy("GET", path))]
        return last[0].status == PASS

    run.wait(probe)
    return last


def _inference(run: _Run, config) -> list[CheckResult]:
    if not config.inference.enabled:
        return [CheckResult("inference", "sentiment", SKIP, "inference is off")]
    last: list[CheckResult] = []

    def probe():
        last[:] = [verify.check_inference(*run.client.proxy("POST", verify.inference_path(config),
                                                             verify.INFERENCE_REQUEST))]
        return last[0].status == PASS

    run.wait(probe)
    return last


def _timed(result: CheckResult, seconds: float) -> CheckResult:
    return CheckResult(result.name, result.target, result.status, result.detail, round(seconds, 3), result.data)


def run_checks(config, client: Cluster, run_id: str, timeout: float = verify.DEFAULT_TIMEOUT_S,
               skip: Sequence[str] = (), sleep: Callable[[float], None] = time.sleep,
               clock: Callable[[], float] = time.monotonic, interval: float = 2.0,
               cleanup_errors: Optional[list[str]] = None) -> list[CheckResult]:
    """Run every check of `verify.CHECKS` not in ``skip`` against ``client`` and return the results in order.

    A check that raises becomes a ``fail`` result naming the error; the others still run. Whatever happens (a
    KeyboardInterrupt from Ctrl-C or SIGTERM included, which is re-raised afterwards), every object created is
    deleted before this returns; deletion errors are appended to ``cleanup_errors``."""
    run = _Run(client, run_id, timeout, sleep, clock, interval)
    pools = config.gpu_pools()
    results: list[CheckResult] = []
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        nodes: list[dict] = []
        ready: dict[str, int] = {}

        def nodes_check() -> list[CheckResult]:
            nodes[:] = client.list("v1", "Node")
            for pool in pools:
                ready[pool.name] = sum(verify.node_ready(n) for n in verify.pool_nodes(pool, nodes))
            return [verify.check_pool_nodes(pool, nodes) for pool in pools]

        def software_check() -> list[CheckResult]:
            return [verify.check_daemonsets(e, client.list("apps/v1", "DaemonSet", e.namespace))
                    for e in verify.expected_software(config, pools)]

        steps: dict[str, Callable[[], list[CheckResult]]] = {
            "nodes": nodes_check,
            "gpu-software": software_check,
            "smoke": lambda: _smoke(run, pools, ready),
            "all-reduce": lambda: _all_reduce(run, pools, ready),
            "kueue": lambda: _kueue(run, config),
            "dcgm": lambda: _dcgm(run, config, pools),
            "inference": lambda: _inference(run, config),
        }
        if "nodes" in skip and not {"smoke", "all-reduce"} <= set(skip):
            nodes_check()  # smoke and all-reduce need the Ready node counts, even unreported
        for name in verify.CHECKS:
            if name in skip:
                results.append(CheckResult(name, "-", SKIP, "skipped by --skip"))
                continue
            began = clock()
            try:
                found = steps[name]()
            except KeyboardInterrupt:
                raise
            except Exception as err:  # noqa: BLE001 - one failing check never stops the run
                found = [CheckResult(name, "-", FAIL, f"error: {type(err).__name__}: {err}".splitlines()[0])]
            spent = clock() - began
            results += [r if r.duration else _timed(r, spent / max(1, len(found))) for r in found]
        return results
    finally:
        errors = run.cleanup()
        if cleanup_errors is not None:
            cleanup_errors.extend(errors)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class KubeClient:
    """`Cluster` over the ``kubernetes`` Python client (``pip install gpu-platform[optimizer]``)."""

    def __init__(self, api_client):
        self.api_client = api_client
        self._dynamic = None

    @property
    def dynamic(self):
        """The dynamic client, made on first use: its discovery talks to the API server, which loading a kubeconfig
        must not."""
        if self._dynamic is None:
            from kubernetes import dynamic

            self._dynamic = dynamic.DynamicClient(self.api_client)
        return self._dynamic

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Optional[str] = None, context: Optional[str] = None) -> "KubeClient":
        """A client for ``context`` of ``kubeconfig`` (defaults: ``$KUBECONFIG`` or ``~/.kube/config``, its current
        context)."""
        from kubernetes import config as kube_config

        return cls(kube_config.new_client_from_config(config_file=kubeconfig, context=context))

    def _resource(self, api_version: str, kind: str):
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def list(self, api_version: str, kind: str, namespace: Optional[str] = None) -> list[dict]:
        return self._resource(api_version, kind).get(namespace=namespace).to_dict().get("items") or []

    def create(self, obj: dict) -> None:
        namespace = obj["metadata"].get("namespace")
        self._resource(obj["apiVersion"], obj["kind"]).create(body=obj, namespace=namespace)

    def delete(self, obj: dict) -> None:
        from kubernetes.dynamic.exceptions import NotFoundError

        with contextlib.suppress(NotFoundError):
            self._resource(obj["apiVersion"], obj["kind"]).delete(
                name=obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"),
                propagation_policy="Background")

    def pod_log(self, namespace: str, name: str) -> str:
        from kubernetes import client

        return client.CoreV1Api(self.api_client).read_namespaced_pod_log(name, namespace)

    def proxy(self, method: str, path: str, body: Optional[dict] = None) -> tuple[int, str]:
        from kubernetes.client.exceptions import ApiException

        path, _, query = path.partition("?")
        request = self.api_client.param_serialize(
            method, path, query_params=urllib.parse.parse_qsl(query), body=body, auth_settings=["BearerToken"],
            header_params={"Accept": "application/json", "Content-Type": "application/json"})
        try:
            response = self.api_client.call_api(*request)
        except ApiException as err:
            return int(err.status or 0), str(err.body or err.reason or "")
        return int(response.status), (response.read() or b"").decode("utf-8", "replace")


def label_selector(run_id: str) -> str:
    """``kubectl`` selector of a run's objects (for cleaning up by hand after ``kill -9``)."""
    return f"{labels.VERIFY_RUN_LABEL}={run_id}"


def dumps(report: dict) -> str:
    """The JSON report as printed."""
    return json.dumps(report, indent=2, sort_keys=False)


EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def help_epilog() -> str:
    """The checks and exit codes, as ``gpu-platform verify --help`` lists them."""
    import textwrap

    lines = ["checks (in order; --skip any of them):"]
    for name, meaning in verify.CHECKS.items():
        lines += textwrap.wrap(f"{name}: {meaning}", width=100, initial_indent="  ", subsequent_indent="      ",
                               break_on_hyphens=False)
    lines += [
        "",
        "Every object it creates is labelled gpu-platform.io/verify-run=<run id> and deleted at the end, also on",
        "Ctrl-C and SIGTERM: the namespace gpu-platform-verify-<run id> (smoke pods, all-reduce Jobs, Services, a",
        "ConfigMap) and the kueue check's Job in the first team's namespace.",
        "",
        "exit codes: 0 no check failed; 1 a check failed; 2 bad usage, configuration or kubeconfig; 130 interrupted",
        "(after deleting what it created).",
    ]
    return "\n".join(lines)


def build_parser(parser) -> None:
    """The arguments of ``gpu-platform verify``."""
    import argparse

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = help_epilog()
    parser.add_argument("stack", nargs="?", metavar="STACK",
                        help="the stack to verify (default: the project's only stack)")
    parser.add_argument("--config", metavar="FILE", help="verify against this stack file instead")
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current context)")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    parser.add_argument("--timeout-per-check", metavar="S", type=float, default=verify.DEFAULT_TIMEOUT_S,
                        help=f"bound of every wait of one check, seconds (default {verify.DEFAULT_TIMEOUT_S})")
    parser.add_argument("--skip", metavar="CHECK", nargs="+", action="extend", default=[], choices=list(verify.CHECKS),
                        help="checks not to run (reported as skip)")


def run(args, client: Optional[Cluster] = None) -> int:
    """``gpu-platform verify``: print the table (or ``--json`` report) and return the exit code."""
    import sys
    from pathlib import Path

    from .errors import ConfigError

    try:
        if args.timeout_per_check <= 0:
            raise ConfigError("--timeout-per-check", "must be a positive number of seconds")
        stack, config = verify.load_stack(args.stack, Path(args.config) if args.config else None)
        if client is None:
            client = KubeClient.from_kubeconfig(args.kubeconfig, args.context)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as err:  # noqa: BLE001 - a kubeconfig that cannot be loaded is a usage error, one line
        print(f"error: cannot load the kubeconfig: {type(err).__name__}: {err}".splitlines()[0], file=sys.stderr)
        return EXIT_USAGE
    run_id = new_run_id()
    errors: list[str] = []
    try:
        results = run_checks(config, client, run_id, args.timeout_per_check, args.skip, cleanup_errors=errors)
    except KeyboardInterrupt:
        print(f"interrupted: the objects of run {run_id} were deleted"
              + (f" except {len(errors)} ({label_selector(run_id)})" if errors else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    for error in errors:
        print(f"warning: not deleted: {error} (find leftovers with -l {label_selector(run_id)})", file=sys.stderr)
    if args.json:
        print(dumps(verify.report(stack, run_id, results)))
    else:
        print(f"gpu-platform verify {stack} (run {run_id})")
        print(verify.render_table(results))
    return verify.exit_code(results)
