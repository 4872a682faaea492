"""``multikueue``: the stack section that makes a stack a MultiKueue *manager* or *worker* (parsed with `fields`).

A manager's team ClusterQueues dispatch their workloads to the clusters of its worker stacks; a worker is a
standalone Kueue cluster that lets the manager create Jobs and Workloads in it::

    gpu-platform:multikueue:            # the manager stack
      role: manager
      workers:
        - name: us-east                 # the MultiKueueCluster (DNS label)
          stack: acme/gpu-platform/mk-worker-us   # the worker's stack, fully qualified
      dispatcher: all-at-once           # or incremental
      workerLostTimeout: 15m

    gpu-platform:multikueue:            # each worker stack
      role: worker

`parse_multikueue` reads the section (rules that need only the section); `check_multikueue` the rules that need the
whole configuration; `check_not_self` the one that needs the running project; `check_worker_stacks` what can be
known of the worker stacks when their stack files sit beside the manager's (the offline plan calls it). A leaf
module (errors and fields only): `config_model` holds `MultiKueueSettings` in `PlatformConfig`.

Facts relied on (kubernetes-sigs/kueue at v0.19.2): a MultiKueueConfig lists at most 20 clusters, each once (CRD);
the manager cannot be one of its own workers, a ClusterQueue cannot use a MultiKueue and a ProvisioningRequest
check together (``pkg/cache/scheduler/clusterqueue.go``: the queue goes inactive); a worker must have the job's
namespace and LocalQueue (docs ``tasks/manage/setup_multikueue.md``), which the platform names after the team, so a
worker must have every team of the manager; Kueue's configuration ``multiKueue.dispatcherName`` and
``workerLostTimeout`` (``apis/config/v1beta2/configuration_types.go``, defaults all-at-once and 15 minutes).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from ..errors import ConfigError, check_keys, did_you_mean, join
from ..fields import as_mapping, read_dns_label, read_enum, read_list, read_str
from ..fields import section as _section

MANAGER = "manager"
WORKER = "worker"
ROLES = (MANAGER, WORKER)

ALL_AT_ONCE = "all-at-once"
INCREMENTAL = "incremental"
DISPATCHERS = {
    ALL_AT_ONCE: "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    INCREMENTAL: "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}
"""``dispatcher`` values and the ``multiKueue.dispatcherName`` each one sets (configuration_types.go constants)."""

DEFAULT_WORKER_LOST_TIMEOUT = "15m"
"""Kueue's own default (``DefaultMultiKueueWorkerLostTimeout``): how long a workload stays admitted on the manager
when its worker cannot be reached."""

MAX_WORKERS = 20
"""MultiKueueConfig ``spec.clusters`` maxItems (CRD at v0.19.2)."""

STACK_REFERENCE = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
"""A fully qualified stack name, ``<organization>/<project>/<stack>``."""
DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
"""A Go ``time.Duration`` as ``metav1.Duration`` parses it (``90s``, ``15m``, ``1h30m``)."""

KEYS = {"role", "workers", "dispatcher", "workerLostTimeout"}
MANAGER_KEYS = KEYS
WORKER_KEYS = {"role"}
WORKER_ENTRY_KEYS = {"name", "stack"}


@dataclass(frozen=True)
class MultiKueueWorker:
    """One ``multikueue.workers`` entry of a manager."""

    name: str
    """The worker's MultiKueueCluster name, also its kubeconfig Secret's suffix (DNS label, unique)."""
    stack: str
    """The worker's stack, ``<organization>/<project>/<stack>``: its ``multikueueKubeconfig`` output is read through a
    StackReference."""

    @property
    def project(self) -> str:
        return self.stack.split("/")[1]

    @property
    def stack_name(self) -> str:
        return self.stack.split("/")[2]


@dataclass(frozen=True)
class MultiKueueSettings:
    """``multikueue``: this stack's part in MultiKueue, if any."""

    role: str
    """``manager`` (its teams' ClusterQueues dispatch to the workers) or ``worker`` (the manager may run jobs here)."""
    workers: tuple[MultiKueueWorker, ...] = ()
    """Manager only: the worker stacks, in dispatch preference order (at least one, at most 20)."""
    dispatcher: str = ALL_AT_ONCE
    """Manager only: ``all-at-once`` (a workload is copied to every worker, the first to admit it runs it) or
    ``incremental`` (workers nominated a few at a time, in ``workers`` order)."""
    worker_lost_timeout: str = DEFAULT_WORKER_LOST_TIMEOUT
    """Manager only, ``workerLostTimeout``: how long a workload stays admitted when its worker is unreachable."""

    @property
    def manager(self) -> bool:
        return self.role == MANAGER

    @property
    def worker(self) -> bool:
        return self.role == WORKER


def _parse_worker(raw_value: Any, path: str) -> MultiKueueWorker:
    raw = as_mapping(raw_value, path)
    check_keys(raw, WORKER_ENTRY_KEYS, path)
    name = read_dns_label(raw, "name", path)
    stack = read_str(raw, "stack", path, required=True)
    if not STACK_REFERENCE.match(stack):
        raise ConfigError(join(path, "stack"), f"'{stack}' is not a fully qualified stack name "
                                                "(<organization>/<project>/<stack>)")
    return MultiKueueWorker(name, stack)


def parse_multikueue(raw: Mapping) -> Optional[MultiKueueSettings]:
    """The ``multikueue`` section, or None without one."""
    if raw.get("multikueue") is None:
        return None
    sec, path = _section(raw, "multikueue"), "multikueue"
    role = read_enum(sec, "role", path, ROLES, required=True)
    if role == WORKER:
        for key in sec:
            if key in MANAGER_KEYS - WORKER_KEYS:
                raise ConfigError(join(path, key), "is a manager's key; a worker has only role (the manager reads "
                                                   "its kubeconfig output)")
        check_keys(sec, WORKER_KEYS, path)
        return MultiKueueSettings(role=WORKER)
    check_keys(sec, MANAGER_KEYS, path)
    entries = read_list(sec, "workers", path, required=True, non_empty=True)
    if len(entries) > MAX_WORKERS:
        raise ConfigError(join(path, "workers"), f"lists {len(entries)} workers; a MultiKueueConfig takes at most "
                                                 f"{MAX_WORKERS}")
    workers = [_parse_worker(w, join(join(path, "workers"), i)) for i, w in enumerate(entries)]
    for attribute, what in (("name", "worker name"), ("stack", "worker stack")):
        seen: dict[str, int] = {}
        for i, worker in enumerate(workers):
            value = getattr(worker, attribute)
            if value in seen:
                raise ConfigError(join(join(join(path, "workers"), i), attribute),
                                  f"duplicate {what} '{value}' (also {path}.workers[{seen[value]}])")
            seen[value] = i
    timeout = read_str(sec, "workerLostTimeout", path, DEFAULT_WORKER_LOST_TIMEOUT)
    if not DURATION.match(timeout):
        raise ConfigError(join(path, "workerLostTimeout"), f"'{timeout}' is not a duration such as 15m or 1h30m")
    return MultiKueueSettings(
        role=MANAGER,
        workers=tuple(workers),
        dispatcher=read_enum(sec, "dispatcher", path, tuple(DISPATCHERS), ALL_AT_ONCE),
        worker_lost_timeout=timeout,
    )


def check_multikueue(config: Any) -> None:
    """What the role needs of the whole configuration (a `PlatformConfig`, not imported: this module is a leaf)."""
    settings: Optional[MultiKueueSettings] = config.multikueue
    if settings is None:
        return
    at = "multikueue.role"
    if not config.scheduling.kueue:
        raise ConfigError(at, f"a MultiKueue {settings.role} runs Kueue; remove scheduling.kueue: false")
    if not config.teams:
        what = ("its teams' ClusterQueues are what it dispatches" if settings.manager
                else "the manager's jobs run in its teams' namespaces and LocalQueues")
        raise ConfigError(at, f"a MultiKueue {settings.role} needs teams ({what})")
    if settings.manager:
        for i, pool in enumerate(config.node_pools):
            if pool.provisioning == "queued":
                raise ConfigError(join(join("nodePools", i), "provisioning"),
                                  "queued provisioning on a MultiKueue manager: Kueue 0.19.2 deactivates a "
                                  "ClusterQueue with both a MultiKueue and a ProvisioningRequest check; give "
                                  "queued pools to the workers")
    options = config.cluster_options
    if settings.worker and config.cloud == "existing" and not getattr(options, "kubeconfig", None):
        raise ConfigError(at, "a worker exports a kubeconfig built from its cluster's server and CA, and this "
                              "existing cluster has no kubeconfig key (only the ambient one): give kubeconfig")


def check_not_self(settings: Optional[MultiKueueSettings], project: str, stack: str) -> None:
    """Refuse a manager that lists its own stack as a worker (Kueue does not support a manager as its own worker)."""
    if settings is None or not settings.manager:
        return
    for i, worker in enumerate(settings.workers):
        if (worker.project, worker.stack_name) == (project, stack):
            raise ConfigError(f"multikueue.workers[{i}].stack", f"'{worker.stack}' is this stack: a MultiKueue "
                                                                "manager cannot be one of its own workers")


def check_worker_stacks(settings: Optional[MultiKueueSettings], teams: tuple, project: str, stack: str,
                        worker_configs: Mapping[int, Any]) -> None:
    """What can be known offline of the worker stacks whose stack files are at hand (``worker_configs``: by index
    in ``workers``, the parsed configuration of those in this project): each is a worker and has every team of the
    manager, whose ClusterQueue and LocalQueue ``gpu`` the manager's jobs need there under the same names."""
    check_not_self(settings, project, stack)
    if settings is None or not settings.manager:
        return
    for i, worker_config in sorted(worker_configs.items()):
        at = f"multikueue.workers[{i}].stack"
        worker = settings.workers[i]
        role = worker_config.multikueue.role if worker_config.multikueue is not None else None
        if role != WORKER:
            raise ConfigError(at, f"stack '{worker.stack_name}' is not a MultiKueue worker (its multikueue.role is "
                                  f"{role or 'not set'}); give it multikueue: {{role: worker}}")
        theirs = [t.name for t in worker_config.teams]
        for team in teams:
            if team.name not in theirs:
                raise ConfigError(at, f"stack '{worker.stack_name}' has no team '{team.name}': the manager's jobs "
                                      f"of that team need its namespace, ClusterQueue and LocalQueue there"
                                      f"{did_you_mean(team.name, theirs)}")
