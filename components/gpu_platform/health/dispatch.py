"""``gpu-platform health-dispatch``: bind each active health check to an existing idle node.

A check pod requests every GPU of a node. Left to the scheduler, a check that finds no idle node stays Pending with
``PodScheduled=False, reason Unschedulable``: Cluster Autoscaler skips it (priority below its expendable cutoff),
Karpenter has no such cutoff and launches a GPU instance to run it. This program instead picks the pool's idle nodes
and creates one Job per node from the pool's check template (a suspended CronJob), with the pod's ``nodeName`` set:

- a pod with ``nodeName`` bypasses kube-scheduler (the kubelet of that node admits it, or fails it with
  ``OutOf<resource>`` when its GPUs were taken meanwhile), so it never carries the Unschedulable condition;
- Karpenter provisions only for pods the scheduler marked Unschedulable and not yet bound to a node
  (kubernetes-sigs/karpenter v1.14.1 pkg/utils/pod/scheduling.go:102-108 ``IsProvisionable``: ``FailedToSchedule``
  and ``!IsScheduled``, where ``IsScheduled`` is ``pod.Spec.NodeName != ""``, lines 134-136; its pod trigger
  pkg/controllers/provisioning/controller.go:67);
- Cluster Autoscaler (EKS, AKS, OKE; GKE's autoscaler is built on it) scales up for pods the scheduler marked
  unschedulable (cluster-autoscaler FAQ, "How does scale-up work?"): a bound pod never is.

The decisions (which nodes, how many, the Job's name and body) are pure functions; `DispatchApi` is the thin adapter
around the Kubernetes API. Exit codes: 0 done (also when no node was idle), 1 the Kubernetes API failed, 2 bad usage.
"""

import argparse
import copy
import hashlib
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from .. import labels
from .remediation import parse_time, rfc3339

EXIT_OK, EXIT_API, EXIT_USAGE = 0, 1, 2
TERMINAL_PHASES = ("Succeeded", "Failed")
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
"""Field selector of the pods that still hold their resources (pods support ``status.phase`` selectors)."""
CHECK_COMPONENT = "health-check"
"""``app.kubernetes.io/component`` of the check pods (`kube.health_objects.CHECK`)."""
JOB_NAME_PREFIX_LIMIT = 40
"""A Job's name is also its pods' ``batch.kubernetes.io/job-name`` label value (63 characters at most): the prefix
(the template's name), a dash and ten hex digits stay within 51."""


# ---------------------------------------------------------------------------------------------------------
# The check template


@dataclass(frozen=True)
class CheckTemplate:
    """What the dispatcher reads from a pool's check template (a suspended CronJob, API JSON form)."""

    name: str
    namespace: str
    pool: str
    """The pool label's value on the template (every node of the pool carries it)."""
    node_selector: tuple[tuple[str, str], ...]
    tolerations: tuple[Mapping[str, Any], ...]
    accelerators: tuple[tuple[str, int], ...]
    """The extended resources the pod takes and how many (the whole node's GPUs)."""
    labels: tuple[tuple[str, str], ...]
    job_spec: Mapping[str, Any]
    """``spec.jobTemplate.spec``."""


class TemplateError(ValueError):
    """A template the dispatcher cannot bind (not a check template of a pool)."""


def quantity(value: Any) -> int:
    """An extended resource's count (integers only: ``8`` or ``"8"``); anything else counts as 0."""
    try:
        return int(str(value))
    except ValueError:
        return 0


def _container_accelerators(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    found: dict[str, int] = {}
    for section in ("limits", "requests"):
        for name, value in (resources.get(section) or {}).items():
            if "/" in name:  # extended resources are domain-prefixed: nvidia.com/gpu, amd.com/gpu
                found[name] = max(found.get(name, 0), quantity(value))
    return found


def pod_accelerators(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """The extended resources a pod holds on its node: per resource, the larger of the sum over its containers and
    the largest init container (Kubernetes' effective request)."""
    total: dict[str, int] = {}
    for container in pod_spec.get("containers") or []:
        for name, count in _container_accelerators(container).items():
            total[name] = total.get(name, 0) + count
    for container in pod_spec.get("initContainers") or []:
        for name, count in _container_accelerators(container).items():
            total[name] = max(total.get(name, 0), count)
    return {name: count for name, count in total.items() if count > 0}


def template_from_cron_job(cron: Mapping[str, Any]) -> CheckTemplate:
    """A pool's check template from its CronJob; `TemplateError` when it is not one."""
    meta = cron.get("metadata") or {}
    name = meta.get("name", "")
    cron_labels = meta.get("labels") or {}
    pool = cron_labels.get(labels.POOL_LABEL)
    if not pool or cron_labels.get(labels.APP_COMPONENT_LABEL) != CHECK_COMPONENT:
        raise TemplateError(f"{name}: not a health-check template (labels {labels.APP_COMPONENT_LABEL}="
                            f"{CHECK_COMPONENT} and {labels.POOL_LABEL} expected)")
    job_spec = ((cron.get("spec") or {}).get("jobTemplate") or {}).get("spec") or {}
    pod = job_spec.get("template") or {}
    pod_spec = pod.get("spec") or {}
    accelerators = pod_accelerators(pod_spec)
    if not accelerators:
        raise TemplateError(f"{name}: its pod requests no accelerator")
    return CheckTemplate(
        name=name, namespace=meta.get("namespace", ""), pool=pool,
        node_selector=tuple(sorted((pod_spec.get("nodeSelector") or {}).items())),
        tolerations=tuple(pod_spec.get("tolerations") or ()),
        accelerators=tuple(sorted(accelerators.items())),
        labels=tuple(sorted(((pod.get("metadata") or {}).get("labels") or {}).items())),
        job_spec=job_spec)


# ---------------------------------------------------------------------------------------------------------
# Nodes and pods


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' toleration matching: the effect (empty tolerates every effect), then the key (empty key with
    ``Exists`` tolerates every taint), then the value for ``Equal`` (the default operator)."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration["key"] != taint.get("key"):
        return False
    return operator == "Exists" or (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taint(taints: Iterable[Mapping[str, Any]],
                      tolerations: Sequence[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """The first ``NoSchedule`` or ``NoExecute`` taint no toleration matches (what kube-scheduler's TaintToleration
    filter would refuse: a bound pod skips the scheduler, so the dispatcher applies the filter itself)."""
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def active(pod: Mapping[str, Any]) -> bool:
    """Not Succeeded or Failed. A terminating pod still holds its devices until it is gone: only the phase
    counts."""
    return (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES


def is_check_pod(pod: Mapping[str, Any], template: CheckTemplate) -> bool:
    """A check pod of ``template``'s pool (its labels) in the template's namespace."""
    meta = pod.get("metadata") or {}
    pod_labels = meta.get("labels") or {}
    return (meta.get("namespace") == template.namespace
            and pod_labels.get(labels.APP_COMPONENT_LABEL) == CHECK_COMPONENT
            and pod_labels.get(labels.POOL_LABEL) == template.pool)


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def _ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _quarantined(node: Mapping[str, Any]) -> bool:
    return any(t.get("key") == labels.QUARANTINE_TAINT_KEY for t in (node.get("spec") or {}).get("taints") or [])


def last_checked(node: Mapping[str, Any]) -> Optional[datetime]:
    """When the node's last check ran (the reporter's detail annotation starts with its RFC 3339 time)."""
    detail = ((node.get("metadata") or {}).get("annotations") or {}).get(labels.HEALTH_CHECK_DETAIL_ANNOTATION, "")
    return parse_time(detail.split(" ", 1)[0]) if detail else None


def refusal(node: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], template: CheckTemplate) -> Optional[str]:
    """Why ``node`` cannot take ``template``'s check now (None: it can). ``pods`` are the active pods bound to it."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    node_labels = meta.get("labels") or {}
    if any(node_labels.get(k) != v for k, v in template.node_selector):
        return "not in the pool"
    if meta.get("deletionTimestamp"):
        return "being deleted"
    if not _ready(node):
        return "not Ready"
    # A node remediation quarantined is cordoned by it: its check is what releases it. Anyone else's cordon (an
    # operator, a node upgrade's drain, an autoscaler removing the node) means: leave the node alone.
    if spec.get("unschedulable") and not _quarantined(node):
        return "cordoned"
    taint = untolerated_taint(spec.get("taints") or [], template.tolerations)
    if taint is not None:
        return f"taint {_taint_text(taint)}"
    if any(is_check_pod(p, template) for p in pods):
        return "under check"
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    for resource, count in template.accelerators:
        if quantity(allocatable.get(resource, 0)) < count:
            return f"{quantity(allocatable.get(resource, 0))} of {count} {resource} allocatable"
        used = sum(pod_accelerators(p.get("spec") or {}).get(resource, 0) for p in pods)
        if used:
            return f"busy: {used} {resource} requested"
    return None


@dataclass(frozen=True)
class Decision:
    """One template's dispatch: the nodes to check now, in order, and why the others are not."""

    template: str
    chosen: tuple[str, ...]
    in_flight: int
    """Check pods of the pool still running or pending."""
    cap: int
    skipped: tuple[tuple[str, str], ...] = ()
    """(node, reason) of the pool's nodes not chosen: refused, or past the cap ("cap")."""


def _order(node: Mapping[str, Any]) -> tuple:
    """Quarantined nodes first (a passing check releases them), then never checked, then the longest unchecked."""
    checked = last_checked(node)
    return (not _quarantined(node), checked is not None, checked or datetime.min.replace(tzinfo=timezone.utc),
            node["metadata"]["name"])


def decide(template: CheckTemplate, nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
           cap: int) -> Decision:
    """Which of the pool's nodes get a check now: those `refusal` lets through, in `_order`, at most ``cap`` check
    pods of the pool at once (the pending and running ones count)."""
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name and active(pod):
            by_node.setdefault(node_name, []).append(pod)
    in_flight = sum(1 for p in pods if active(p) and is_check_pod(p, template))
    pool = [n for n in nodes if all(((n.get("metadata") or {}).get("labels") or {}).get(k) == v
                                    for k, v in template.node_selector)]
    free = max(0, cap - in_flight)
    chosen: list[str] = []
    skipped: list[tuple[str, str]] = []
    for node in sorted(pool, key=_order):
        name = node["metadata"]["name"]
        reason = refusal(node, by_node.get(name, []), template)
        if reason is None and len(chosen) >= free:
            reason = "cap"
        if reason is None:
            chosen.append(name)
        else:
            skipped.append((name, reason))
    return Decision(template.name, tuple(chosen), in_flight, cap, tuple(sorted(skipped)))


# ---------------------------------------------------------------------------------------------------------
# The Job


def job_name(template: str, node: str, now: datetime) -> str:
    """``<template>-<10 hex digits of node and time>``: unique per node and run, within a label value's 63."""
    digest = hashlib.sha256(f"{node}/{rfc3339(now)}".encode()).hexdigest()[:10]
    return f"{template[:JOB_NAME_PREFIX_LIMIT].rstrip('-')}-{digest}"


def _string_quantities(pod_spec: dict[str, Any]) -> None:
    """Resource quantities as the API writes them (strings), whatever form the template came in."""
    for container in [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])]:
        for section in (container.get("resources") or {}).values():
            for key, value in section.items():
                section[key] = str(value)


def check_job(template: CheckTemplate, node: str, now: datetime) -> dict[str, Any]:
    """The Job that runs ``template``'s check on ``node``: the template's Job spec with the pod bound to the node
    (``nodeName``). No owner: the Job's ``ttlSecondsAfterFinished`` removes it, and the suspended template's
    CronJob controller does not report it as a Job it did not create."""
    spec = copy.deepcopy(dict(template.job_spec))
    pod = spec.setdefault("template", {})
    pod["metadata"] = {"labels": dict(template.labels)}
    pod_spec = pod.setdefault("spec", {})
    pod_spec["nodeName"] = node
    _string_quantities(pod_spec)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job_name(template.name, node, now), "namespace": template.namespace,
                         "labels": dict(template.labels)},
            "spec": spec}


# ---------------------------------------------------------------------------------------------------------
# The Kubernetes API


class DispatchApi:
    """The four calls the dispatcher makes, in and out as plain JSON dicts. ``core`` and ``batch`` are
    `kubernetes.client.CoreV1Api` and `BatchV1Api` or, in tests, fakes with the same methods."""

    def __init__(self, core: Any, batch: Any):
        self.core, self.batch = core, batch

    def read_template(self, namespace: str, name: str) -> dict:
        """A check template (CronJob)."""
        from .controller import _plain

        return _plain(self.batch.read_namespaced_cron_job(name, namespace))

    def list_nodes(self) -> list[dict]:
        """Every Node."""
        from .controller import _plain

        return list(_plain(self.core.list_node()).get("items") or [])

    def list_active_pods(self) -> list[dict]:
        """Every pod not yet Succeeded or Failed, every namespace (the GPUs they hold, the checks in flight)."""
        from .controller import _plain

        return list(_plain(self.core.list_pod_for_all_namespaces(field_selector=ACTIVE_PODS)).get("items") or [])

    def create_job(self, body: dict) -> None:
        """Create a batch/v1 Job."""
        from .controller import _model

        self.batch.create_namespaced_job(body["metadata"]["namespace"], _model("V1Job", body))


def api_clients(kubeconfig: Optional[str]) -> tuple[Any, Any]:
    """(CoreV1Api, BatchV1Api) from in-cluster config (in a pod) or a kubeconfig."""
    from kubernetes import client

    from .controller import core_v1_api

    core = core_v1_api(kubeconfig)  # loads the configuration
    return core, client.BatchV1Api()


def parse_template_arg(value: str) -> tuple[str, int]:
    """``NAME=MAX_CONCURRENT`` (``MAX_CONCURRENT`` >= 1)."""
    name, sep, cap = value.partition("=")
    if not sep or not name or not cap.isdigit() or int(cap) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not NAME=MAX_CONCURRENT with MAX_CONCURRENT >= 1")
    return name, int(cap)


def build_parser(parser: Optional[argparse.ArgumentParser] = None) -> argparse.ArgumentParser:
    """The ``health-dispatch`` subcommand's arguments."""
    parser = parser or argparse.ArgumentParser(prog="gpu-platform health-dispatch",
                                               description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True, help="namespace of the check templates and their Jobs")
    parser.add_argument("--template", action="append", type=parse_template_arg, required=True,
                        metavar="NAME=MAX_CONCURRENT",
                        help="a pool's check template (suspended CronJob) and the most of its checks at once "
                             "(repeatable)")
    parser.add_argument("--kubeconfig", help="kubeconfig path (default: in-cluster, else ~/.kube/config)")
    return parser


def run(args: argparse.Namespace, api_factory: Optional[Callable[[Optional[str]], tuple[Any, Any]]] = None,
        now: Optional[datetime] = None, out: Any = None, err: Any = None) -> int:
    """Bind each template's checks to idle nodes; returns the exit status. A template that fails (API error, not a
    template) does not stop the others; the status is then 1."""
    from .controller import first_line

    out, err = out or sys.stdout, err or sys.stderr
    now = now or datetime.now(timezone.utc)
    try:
        api = DispatchApi(*(api_factory or api_clients)(args.kubeconfig))
        nodes, pods = api.list_nodes(), api.list_active_pods()
    except Exception as error:  # noqa: BLE001 - ApiException, urllib3 and config errors: one line, exit 1
        print(f"error: Kubernetes API: {first_line(error)}", file=err)
        return EXIT_API
    status = EXIT_OK
    for name, cap in args.template:
        try:
            template = template_from_cron_job(api.read_template(args.namespace, name))
        except TemplateError as error:
            print(f"error: {error}", file=err)
            status = EXIT_API
            continue
        except Exception as error:  # noqa: BLE001
            print(f"error: Kubernetes API: cannot read {args.namespace}/{name}: {first_line(error)}", file=err)
            status = EXIT_API
            continue
        decision = decide(template, nodes, pods, cap)
        for node, reason in decision.skipped:
            print(f"{name}: {node}: skipped ({reason})", file=out)
        for node in decision.chosen:
            body = check_job(template, node, now)
            try:
                api.create_job(body)
            except Exception as error:  # noqa: BLE001
                print(f"error: Kubernetes API: cannot create Job {body['metadata']['name']} for {node}: "
                      f"{first_line(error)}", file=err)
                status = EXIT_API
                continue
            print(f"{name}: {node}: Job {body['metadata']['name']}", file=out)
        print(f"{name}: {len(decision.chosen)} started, {decision.in_flight} in flight, at most {cap} at once",
              file=out)
    return status
