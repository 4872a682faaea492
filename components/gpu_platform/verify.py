"""``gpu-platform verify``: the checks of a conformance run against a live cluster, as pure functions.

After ``pulumi up``, ``verify`` reads the same stack configuration ``gpu-platform plan`` reads and checks that the
cluster holds what the plan promised (`CHECKS` says what each check proves). Everything here is pure: the
expectations come from the parsed `PlatformConfig` and its `GpuPool`s, the checks take objects already fetched
(nodes, DaemonSets, pods and their logs, a Workload, a Prometheus answer, an HTTP status) and return a
`CheckResult`, and the objects a check needs created are built here as plain manifests. `verify_live` fetches,
creates, waits (bounded) and deletes; it holds no decision.

Every object built here carries ``gpu-platform.io/verify-run=<run id>`` (`labels.VERIFY_RUN_LABEL`).
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import catalog, labels, versions
from .errors import ConfigError
from .health import allreduce, nccl
from .pools import GpuPool

PASS, FAIL, SKIP = "pass", "fail", "skip"
STATUSES = (PASS, FAIL, SKIP)

CHECKS: dict[str, str] = {
    "nodes": "every pool has at least its minimum number of nodes, all Ready, each advertising the pool's "
             "accelerators (and RDMA devices) as allocatable and carrying the pool's taints; a scale-from-zero "
             "pool with no node now is skipped, not failed",
    "gpu-software": "every DaemonSet of the accelerator software the stack deploys (GPU Operator or device "
                    "plugin and DRA driver, AMD GPU Operator, Neuron, RDMA network operator or EFA plugin) has "
                    "all its scheduled pods ready",
    "smoke": "per pool with a node, a pod asking for one accelerator runs nvidia-smi -L (NVIDIA), rocm-smi (AMD) "
             "or neuron-ls (Neuron) and exits 0",
    "all-reduce": "per RDMA pool with two or more Ready nodes, an NCCL/RCCL all-reduce over every GPU of two "
                  "nodes: no wrong values, NCCL used the fabric (EFA: OFI; InfiniBand/RoCE: IB; GPUDirect-TCPX/"
                  "TCPXO/RDMA: their plugin; sockets fail) and the bus bandwidth reaches the shape's threshold "
                  "(80 % of its published two-node figure; informational where none is published)",
    "kueue": "a two-pod gang Job in the first team's LocalQueue gets its Workload Admitted",
    "dcgm": "Prometheus (the monitoring namespace's, through the API server's service proxy) has a DCGM exporter "
            "target up: up{job=~\".*dcgm.*\"} == 1",
    "inference": "the sentiment app's Service answers POST /analyze with 200 and a label",
}
"""Every check, in the order a run performs them, and what passing it means (``gpu-platform verify --help``)."""

DEFAULT_TIMEOUT_S = 300
"""Default bound of every wait of one check (``--timeout-per-check``)."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check on one target."""

    name: str
    """The check (a key of `CHECKS`)."""
    target: str
    """What it checked: a pool, a namespace, a team, ``cluster``."""
    status: str
    """``pass``, ``fail`` or ``skip``."""
    detail: str
    """One line: what was found, or why it failed or was skipped."""
    duration: float = 0.0
    """Seconds the check took (set by `verify_live`; 0 for a pure evaluation)."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """Measured values for the JSON report (bus bandwidth, threshold, transport...)."""


def _result(name: str, target: str, status: str, detail: str, **data: Any) -> CheckResult:
    return CheckResult(name, target, status, detail, data=data)


# --- configuration ---------------------------------------------------------------------------------------------

def load_stack(stack: Optional[str], config_file: Optional[Path]):
    """The stack name and parsed `PlatformConfig` ``verify`` holds the cluster to, found the way ``gpu-platform
    plan`` finds stacks: ``--config FILE``, else the named stack of the working directory's Pulumi project, else its
    only stack. Raises `ConfigError` (one line)."""
    from . import plan as planner

    if config_file is not None:
        stacks = planner.resolve_stacks([], config_file)
    else:
        project = planner.find_project()
        stacks = planner.resolve_stacks([stack] if stack else [], None, project.stacks_dir)
        if not stacks:
            raise ConfigError("", f"no Pulumi.<stack>.yaml in {project.stacks_dir} (project {project.name})")
        if len(stacks) > 1:
            raise ConfigError("", f"the project has {len(stacks)} stacks ({', '.join(stacks)}): name one")
    name, path = next(iter(stacks.items()))
    return name, planner.parse_config(planner.strip_namespace(planner.load_stack_file(path)), name)


# --- nodes -----------------------------------------------------------------------------------------------------

def _labels_of(obj: Mapping) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def quantity(value: Any) -> int:
    """An extended-resource quantity (``"8"``, ``8``) as an int; 0 when absent or not a whole number."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


def pool_nodes(pool: GpuPool, nodes: Iterable[Mapping]) -> list[Mapping]:
    """The nodes of ``pool``: those carrying its selector labels."""
    return [n for n in nodes if all(_labels_of(n).get(k) == v for k, v in pool.selector.items())]


def node_ready(node: Mapping) -> bool:
    """The node's ``Ready`` condition is ``True``."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _node_name(node: Mapping) -> str:
    return str((node.get("metadata") or {}).get("name", "?"))


def expected_allocatable(pool: GpuPool) -> dict[str, tuple[str, int]]:
    """What each node of ``pool`` must advertise: resource -> (``==`` or ``>=``, quantity).

    The accelerator resources exactly as `GpuPool.resources_per_node` (sharing applied), except MIG and HAMi pools
    (at least one unit per GPU: the device plugin advertises instances or shares) and DRA pools (GPUs are
    ResourceSlices there, not allocatable). RDMA: every EFA interface exactly; one or more units of the shared RDMA
    device plugin's resource (it advertises its configured HCA share count)."""
    expected: dict[str, tuple[str, int]] = {}
    if not pool.dra:
        for resource, count in pool.resources_per_node.items():
            if count <= 0:
                continue
            if pool.sharing.mode in ("mig", "hami") and resource == pool.resource:
                expected[resource] = (">=", pool.gpus_per_node)
            else:
                expected[resource] = ("==", count)
    for resource, count in pool.rdma_limits.items():
        expected[resource] = ("==", count) if pool.rdma_fabric == catalog.EFA else (">=", 1)
    return expected


def _taint_set(node: Mapping) -> set[tuple[str, str, str]]:
    return {(t.get("key", ""), t.get("value", "") or "", t.get("effect", ""))
            for t in (node.get("spec") or {}).get("taints") or []}


def check_pool_nodes(pool: GpuPool, nodes: Sequence[Mapping]) -> CheckResult:
    """The ``nodes`` check of one pool over every node of the cluster."""
    mine = pool_nodes(pool, nodes)
    if not mine:
        if pool.min_nodes == 0:
            return _result("nodes", pool.name, SKIP, "no node now (scale-from-zero pool, minimum 0)", nodes=0)
        return _result("nodes", pool.name, FAIL, f"no node with {_selector(pool)} (minimum {pool.min_nodes})",
                       nodes=0)
    problems = []
    ready = [n for n in mine if node_ready(n)]
    if len(ready) < pool.min_nodes:
        problems.append(f"{len(ready)} Ready of minimum {pool.min_nodes}")
    problems += [f"{_node_name(n)} not Ready" for n in mine if not node_ready(n)]
    expected = expected_allocatable(pool)
    wanted_taints = {(t.key, t.value or "", t.effect) for t in pool.taints}
    for node in mine:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for resource, (op, count) in expected.items():
            have = quantity(allocatable.get(resource))
            if (op == "==" and have != count) or (op == ">=" and have < count):
                problems.append(f"{_node_name(node)} allocatable {resource} {have}, expected {op} {count}")
        missing = sorted(wanted_taints - _taint_set(node))
        problems += [f"{_node_name(node)} lacks taint {k}={v}:{e}" if v else f"{_node_name(node)} lacks taint {k}:{e}"
                     for k, v, e in missing]
    failed = [_node_name(n) for n in mine if _labels_of(n).get(labels.HEALTH_CHECK_LABEL) == "failed"]
    note = f"; failed last health check: {', '.join(failed)}" if failed else ""
    if problems:
        return _result("nodes", pool.name, FAIL, "; ".join(problems) + note, nodes=len(mine), ready=len(ready))
    resources = ", ".join(f"{r} {c}" for r, (_, c) in sorted(expected.items())) or "GPUs through DRA"
    return _result("nodes", pool.name, PASS, f"{len(ready)} Ready (minimum {pool.min_nodes}): {resources}; "
                   f"taints {', '.join(t.as_string() for t in pool.taints)}{note}", nodes=len(mine), ready=len(ready))


def _selector(pool: GpuPool) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(pool.selector.items()))


# --- accelerator software ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SoftwareExpectation:
    """DaemonSets that must be healthy: those of ``namespace`` (whose name contains ``name_contains`` if set)."""

    namespace: str
    what: str
    name_contains: str = ""


def expected_software(config, pools: Sequence[GpuPool]) -> list[SoftwareExpectation]:
    """The accelerator software the stack deploys, as the namespaces of its DaemonSets (the components' default
    namespaces, which the platform uses): NVIDIA (GPU Operator, device plugin, DRA driver), the cloud's own plugin
    (``cloud-managed``: kube-system's ``nvidia`` DaemonSets), AMD, Neuron, NVIDIA's network operator (InfiniBand
    and RoCE) and the EFA device plugin."""
    from .accelerators import amd_values, neuron_values, nvidia_values, rdma_specs

    vendors = {p.vendor for p in pools}
    expected = []
    if catalog.NVIDIA in vendors:
        if config.gpu_software == "cloud-managed":
            expected.append(SoftwareExpectation("kube-system", "cloud-managed NVIDIA device plugin", "nvidia"))
        else:
            what = "GPU Operator" if config.gpu_software == "operator" else "NVIDIA device plugin"
            if any(p.dra for p in pools):
                what += " and DRA driver"
            expected.append(SoftwareExpectation(nvidia_values.DEFAULT_NAMESPACE, what))
    if catalog.AMD in vendors:
        expected.append(SoftwareExpectation(amd_values.DEFAULT_NAMESPACE, "AMD GPU Operator"))
    if catalog.AWS_NEURON in vendors:
        expected.append(SoftwareExpectation(neuron_values.DEFAULT_NAMESPACE, "Neuron device plugin"))
    fabrics = {p.rdma_fabric for p in pools}
    if fabrics & set(rdma_specs.NETWORK_OPERATOR_FABRICS):
        expected.append(SoftwareExpectation(rdma_specs.NETWORK_OPERATOR_NAMESPACE, "NVIDIA network operator"))
    if catalog.EFA in fabrics:
        expected.append(SoftwareExpectation(rdma_specs.EFA_NAMESPACE, "EFA device plugin", "efa"))
    return expected


def check_daemonsets(expectation: SoftwareExpectation, daemonsets: Sequence[Mapping]) -> CheckResult:
    """The ``gpu-software`` check of one namespace: at least one DaemonSet, each with every scheduled pod ready."""
    mine = [d for d in daemonsets if expectation.name_contains in str((d.get("metadata") or {}).get("name", ""))]
    target = expectation.namespace
    if not mine:
        which = f" named *{expectation.name_contains}*" if expectation.name_contains else ""
        return _result("gpu-software", target, FAIL, f"no DaemonSet{which} ({expectation.what})")
    unready = []
    for ds in mine:
        status = ds.get("status") or {}
        desired, ready = int(status.get("desiredNumberScheduled", 0)), int(status.get("numberReady", 0))
        if ready < desired:
            unready.append(f"{ds['metadata']['name']} {ready}/{desired} ready")
    if unready:
        return _result("gpu-software", target, FAIL, f"{expectation.what}: {'; '.join(unready)}")
    names = ", ".join(sorted(str(d["metadata"]["name"]) for d in mine))
    return _result("gpu-software", target, PASS, f"{expectation.what}: {len(mine)} DaemonSets ready ({names})")


# --- created objects -------------------------------------------------------------------------------------------

def run_labels(run_id: str) -> dict[str, str]:
    """The labels of every object a run creates."""
    return {labels.VERIFY_RUN_LABEL: run_id}


def _meta(name: str, namespace: Optional[str], run_id: str, extra: Optional[Mapping[str, str]] = None) -> dict:
    meta: dict[str, Any] = {"name": name, "labels": {**run_labels(run_id), **dict(extra or {})}}
    if namespace:
        meta["namespace"] = namespace
    return meta


def namespace_name(run_id: str) -> str:
    """The namespace a run creates for its pods: ``gpu-platform-verify-<id>``."""
    return f"gpu-platform-verify-{run_id}"


def verify_namespace(run_id: str) -> dict:
    """The run's namespace (deleting it deletes whatever was left in it)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace_name(run_id), None, run_id)}


def program_config_map(namespace: str, run_id: str) -> dict:
    """The ConfigMap holding `allreduce.PROGRAM` (mounted at ``/checks``)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("allreduce", namespace, run_id),
            "data": {allreduce.CONFIGMAP_KEY: allreduce.PROGRAM}}


SMOKE_COMMANDS = {
    catalog.NVIDIA: (versions.TRAINING_IMAGE, ["nvidia-smi", "-L"]),
    catalog.AMD: (versions.ROCM_TRAINING_IMAGE, ["rocm-smi"]),
    catalog.AWS_NEURON: (versions.NEURON_INFERENCE_IMAGE, ["neuron-ls"]),
}
"""Per vendor: the pinned image and the command of the smoke pod. NVIDIA: the training image, where the container
toolkit mounts the driver's nvidia-smi; AMD: ROCm's PyTorch image (ROCm ships rocm-smi); Neuron: the inference image,
built on AWS's Neuron PyTorch inference container, whose Dockerfile installs ``aws-neuronx-tools`` (neuron-ls) with
``/opt/aws/neuron/bin`` on PATH (aws-neuron/deep-learning-containers docker/pytorch/inference/*/Dockerfile.neuronx)."""


def _accelerator_resources(pool: GpuPool, count: int, claim_template: str) -> tuple[dict, dict]:
    """(container resources, pod spec additions) for ``count`` accelerators of ``pool``."""
    from .accelerators import dra_objects

    if pool.dra:
        return ({"claims": dra_objects.container_claims()},
                {"resourceClaims": dra_objects.pod_resource_claims(claim_template)})
    return {"limits": {pool.resource: count}}, {}


def smoke_objects(pool: GpuPool, namespace: str, run_id: str) -> list[dict]:
    """The smoke pod of ``pool`` (and on a DRA pool its one-GPU ResourceClaimTemplate, first). Empty for a vendor
    without a smoke command (TPU)."""
    from .accelerators import dra_objects

    if pool.vendor not in SMOKE_COMMANDS:
        return []
    image, command = SMOKE_COMMANDS[pool.vendor]
    name = f"smoke-{pool.name}"
    objects = []
    if pool.dra:
        objects.append(dra_objects.gpu_claim_template(f"{name}-gpu", namespace, pool, 1, run_labels(run_id)))
    resources, extra = _accelerator_resources(pool, 1, f"{name}-gpu")
    objects.append({
        "apiVersion": "v1", "kind": "Pod", "metadata": _meta(name, namespace, run_id),
        "spec": {
            "restartPolicy": "Never", "nodeSelector": pool.selector, "tolerations": pool.tolerations, **extra,
            "containers": [{"name": "smoke", "image": image.reference, "command": command, "resources": resources}],
        },
    })
    return objects


def check_smoke(pool: GpuPool, phase: Optional[str], log: str) -> CheckResult:
    """The ``smoke`` check of one pool from its pod's final phase and log: ``Succeeded`` (the command exited 0) and,
    for NVIDIA, at least one ``GPU <n>: <model>`` line of ``nvidia-smi -L``."""
    first = next((line.strip() for line in log.splitlines() if line.strip()), "")
    if phase != "Succeeded":
        return _result("smoke", pool.name, FAIL, f"pod {phase or 'never ran'}: {first or 'no output'}")
    if pool.vendor == catalog.NVIDIA:
        gpus = [line for line in log.splitlines() if line.startswith("GPU ") and ":" in line]
        if not gpus:
            return _result("smoke", pool.name, FAIL, f"nvidia-smi -L listed no GPU: {first or 'no output'}")
        return _result("smoke", pool.name, PASS, f"{len(gpus)} GPU listed: {gpus[0].split(' (UUID')[0]}")
    return _result("smoke", pool.name, PASS, f"{SMOKE_COMMANDS[pool.vendor][1][0]} exited 0: {first}")


# --- all-reduce --------------------------------------------------------------------------------------------------

ALL_REDUCE_VENDORS = (catalog.NVIDIA, catalog.AMD)
"""Vendors with an NCCL/RCCL all-reduce (Neuron and TPUs use other collectives libraries)."""
RENDEZVOUS_PORT = 29500


def all_reduce_skip_reason(pool: GpuPool, ready_nodes: int) -> Optional[str]:
    """Why ``pool`` gets no two-node all-reduce (None: it gets one)."""
    if not pool.rdma_fabric:
        return "no RDMA fabric"
    if pool.vendor not in ALL_REDUCE_VENDORS:
        return f"{pool.vendor} has no NCCL/RCCL all-reduce"
    if pool.sharing.shared:
        return f"GPU sharing ({pool.sharing.mode}): an all-reduce needs whole GPUs"
    if ready_nodes < 2:
        return f"{ready_nodes} Ready node(s): a two-node all-reduce needs 2"
    return None


def all_reduce_sizes(pool: GpuPool) -> tuple[str, str]:
    """(``-b``, ``-e``) of the run: 1 to 8 GiB where the published figures are measured, 256 MiB to 1 GiB on GPUs
    of less than 40 GiB (two 8 GiB buffers would not fit beside the CUDA context)."""
    return ("1G", "8G") if pool.gpu_memory_gib >= 40 else ("256M", "1G")


def all_reduce_objects(pool: GpuPool, namespace: str, run_id: str) -> list[dict]:
    """The headless Service and two-pod Indexed Job of ``pool``'s all-reduce (after a ResourceClaimTemplate on a DRA
    pool): one pod per node (anti-affinity), every GPU and RDMA device of the node, `allreduce.PROGRAM` from the
    run's ConfigMap under ``torchrun`` with ``NCCL_DEBUG=INFO`` and the pool's NCCL settings."""
    from .accelerators import dra_objects

    name = f"allreduce-{pool.name}"
    selector = {labels.JOB_NAME_LABEL: name}  # the Job controller labels the Job's pods with it
    objects: list[dict] = []
    if pool.dra:
        objects.append(dra_objects.gpu_claim_template(f"{name}-gpu", namespace, pool, pool.gpus_per_node,
                                                      run_labels(run_id)))
    resources, extra = _accelerator_resources(pool, pool.gpus_per_node, f"{name}-gpu")
    if pool.rdma_limits:  # RDMA NICs stay device-plugin resources on DRA pools too
        resources.setdefault("limits", {}).update(pool.rdma_limits)
    first, last = all_reduce_sizes(pool)
    env = {**dict(pool.nccl_env), "NCCL_DEBUG": "INFO"}
    image = versions.TRAINING_IMAGES[pool.vendor]
    objects.append({
        "apiVersion": "v1", "kind": "Service", "metadata": _meta(name, namespace, run_id),
        "spec": {"clusterIP": "None", "selector": selector,
                 "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT}]},
    })
    pod_meta: dict[str, Any] = {"labels": run_labels(run_id)}
    if pool.rdma_pod_annotations:
        pod_meta["annotations"] = dict(pool.rdma_pod_annotations)
    objects.append({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name, namespace, run_id),
        "spec": {
            "completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimit": 0,
            "template": {
                "metadata": pod_meta,
                "spec": {
                    "restartPolicy": "Never", "subdomain": name, "nodeSelector": pool.selector,
                    "tolerations": pool.tolerations, **extra,
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": selector}, "topologyKey": labels.HOSTNAME_LABEL}]}},
                    "containers": [{
                        "name": "allreduce", "image": image.reference, "command": ["torchrun"],
                        "args": ["--nnodes=2", f"--nproc-per-node={pool.gpus_per_node}",
                                 "--node-rank=$(JOB_COMPLETION_INDEX)", f"--master-addr={name}-0.{name}",
                                 f"--master-port={RENDEZVOUS_PORT}",
                                 f"{allreduce.MOUNT_PATH}/{allreduce.CONFIGMAP_KEY}", "-b", first, "-e", last],
                        "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
                        "ports": [{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT}],
                        "resources": resources,
                        "volumeMounts": [{"name": "checks", "mountPath": allreduce.MOUNT_PATH, "readOnly": True},
                                         {"name": "dshm", "mountPath": "/dev/shm"}],
                    }],
                    "volumes": [{"name": "checks", "configMap": {"name": "allreduce"}},
                                {"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                },
            },
        },
    })
    return objects


def check_all_reduce(pool: GpuPool, succeeded: bool, log: str) -> CheckResult:
    """The ``all-reduce`` check of one pool from whether its Job succeeded and rank 0's log."""
    result = nccl.parse_all_reduce(log)
    shape = catalog.SHAPES.get((pool.cloud, pool.instance_type))
    threshold = shape.min_all_reduce_bus_bandwidth_gbps if shape else None
    data = {"bus_bandwidth_gbps": result.bus_bandwidth_gbps, "threshold_gbps": threshold,
            "transport": result.transport, "gpu_direct_rdma": result.gpu_direct_rdma, "fabric": pool.rdma_fabric,
            "source": shape.bus_bandwidth_source if shape else ""}
    if not succeeded or not result.rows:
        reason = result.errors[0] if result.errors else "no all-reduce table in the log"
        return _result("all-reduce", pool.name, FAIL, f"the job failed: {reason}", **data)
    if result.errors:
        return _result("all-reduce", pool.name, FAIL, "; ".join(result.errors[:3]), **data)
    allowed = nccl.FABRIC_TRANSPORTS.get(pool.rdma_fabric or "", ())
    if result.transport is None:
        return _result("all-reduce", pool.name, FAIL,
                       "no 'Using network'/'via NET/' line: cannot tell NCCL used the fabric", **data)
    if result.transport not in allowed:
        what = "fell back to sockets" if result.transport == "Socket" else f"used {result.transport}"
        return _result("all-reduce", pool.name, FAIL,
                       f"NCCL {what}, not the {pool.rdma_fabric} fabric ({' or '.join(allowed)})", **data)
    measured = f"{result.bus_bandwidth_gbps:.1f} GB/s bus bandwidth at {result.rows[-1].size_bytes} B over " \
               f"{result.transport}"
    if threshold is None:
        return _result("all-reduce", pool.name, PASS, f"{measured}; no threshold (informational): no published "
                       f"two-node figure for {pool.instance_type}", **data)
    if (result.bus_bandwidth_gbps or 0.0) < threshold:
        return _result("all-reduce", pool.name, FAIL, f"{measured}, below {threshold:.1f} GB/s (80 % of "
                       f"{pool.instance_type}'s published {shape.all_reduce_bus_bandwidth_gbps:.1f})", **data)
    return _result("all-reduce", pool.name, PASS, f"{measured} >= {threshold:.1f} GB/s", **data)


# --- Kueue -------------------------------------------------------------------------------------------------------

def kueue_job(team: str, run_id: str) -> dict:
    """A two-pod gang Job (parallelism 2) in ``team``'s namespace and LocalQueue, suspended for Kueue to admit, asking
    for a little CPU only (every ClusterQueue covers CPU and memory) and sleeping a moment."""
    from .scheduling import kueue_objects

    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": _meta(f"verify-gang-{run_id}", team, run_id,
                          {labels.KUEUE_QUEUE_LABEL: kueue_objects.LOCAL_QUEUE_NAME}),
        "spec": {
            "suspend": True, "parallelism": 2, "completions": 2, "backoffLimit": 0,
            "template": {"metadata": {"labels": run_labels(run_id)}, "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "gang", "image": versions.TPU_EXAMPLE_IMAGE.reference,
                                "command": ["python", "-c", "import time; time.sleep(5)"],
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                              "limits": {"cpu": "100m", "memory": "64Mi"}}}],
            }},
        },
    }


def check_kueue(team: str, workloads: Sequence[Mapping]) -> CheckResult:
    """The ``kueue`` check from the Workloads of the gang Job: one of them ``Admitted``."""
    if not workloads:
        return _result("kueue", team, FAIL, "Kueue created no Workload for the Job (is the LocalQueue there?)")
    for workload in workloads:
        conditions = (workload.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Admitted" and c.get("status") == "True" for c in conditions):
            return _result("kueue", team, PASS, f"Workload {workload['metadata']['name']} Admitted")
    last = next((c for w in workloads for c in reversed((w.get("status") or {}).get("conditions") or [])), {})
    return _result("kueue", team, FAIL, f"not Admitted: {last.get('type', 'no condition')} "
                                        f"{last.get('message', '')}".strip())


# --- Prometheus and inference -------------------------------------------------------------------------------------

DCGM_QUERY = 'up{job=~".*dcgm.*"}'


def dcgm_query_path() -> str:
    """The API server's service-proxy path of the platform's Prometheus query API."""
    from .monitoring import gpu_monitoring as monitoring

    return (f"/api/v1/namespaces/{monitoring.DEFAULT_NAMESPACE}/services/http:{monitoring.RELEASE_NAME}-prometheus:"
            f"{monitoring.PROMETHEUS_PORT}/proxy/api/v1/query")


def check_dcgm(status: int, body: str) -> CheckResult:
    """The ``dcgm`` check from Prometheus' answer to `DCGM_QUERY`."""
    if status != 200:
        return _result("dcgm", "prometheus", FAIL, f"Prometheus answered HTTP {status}: {body[:120]}")
    try:
        series = json.loads(body)["data"]["result"]
    except (ValueError, KeyError, TypeError):
        return _result("dcgm", "prometheus", FAIL, f"not a Prometheus query answer: {body[:120]}")
    up = [s for s in series if str((s.get("value") or [None, "0"])[1]) == "1"]
    if not up:
        return _result("dcgm", "prometheus", FAIL, f"{len(series)} DCGM targets, none up" if series
                       else "no DCGM exporter target")
    instances = sorted({s.get("metric", {}).get("instance", "?") for s in up})
    return _result("dcgm", "prometheus", PASS, f"{len(up)} of {len(series)} DCGM targets up "
                   f"({', '.join(instances[:3])}{' ...' if len(instances) > 3 else ''})", targets_up=len(up))


INFERENCE_REQUEST = {"text": "The platform passed its conformance run."}


def inference_path(config) -> str:
    """The service-proxy path of the sentiment app's ``/analyze`` (`kube.inference_objects`: Service port 80)."""
    from .serving import inference_objects

    return (f"/api/v1/namespaces/{config.inference.namespace}/services/http:{inference_objects.APP_NAME}:"
            f"{inference_objects.SERVICE_PORT}/proxy/analyze")


def check_inference(status: int, body: str) -> CheckResult:
    """The ``inference`` check from the app's answer: 200 with a ``label``."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if status == 200 and isinstance(answer, dict) and "label" in answer:
        return _result("inference", "sentiment", PASS, f"POST /analyze: {answer['label']} "
                       f"({answer.get('score', '?')})")
    return _result("inference", "sentiment", FAIL, f"POST /analyze answered HTTP {status}: {body[:120]}")


# --- report ------------------------------------------------------------------------------------------------------

def exit_code(results: Sequence[CheckResult]) -> int:
    """0 when no check failed, 1 otherwise."""
    return 1 if any(r.status == FAIL for r in results) else 0


def render_table(results: Sequence[CheckResult]) -> str:
    """The report as a fixed-width table: check, target, status, detail."""
    rows = [("CHECK", "TARGET", "STATUS", "DETAIL"), *((r.name, r.target, r.status.upper(), r.detail)
                                                      for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(row[i].ljust(widths[i]) for i in range(3)) + "  " + row[3] for row in rows]
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    lines.append(f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped")
    return "\n".join(lines)


def report(stack: str, run_id: str, results: Sequence[CheckResult]) -> dict:
    """The JSON report (``--json``)."""
    return {
        "stack": stack, "run": run_id, "passed": exit_code(results) == 0,
        "checks": [{"name": r.name, "target": r.target, "status": r.status, "detail": r.detail,
                    "duration_s": round(r.duration, 3), **({"data": dict(r.data)} if r.data else {})}
                   for r in results],
    }
