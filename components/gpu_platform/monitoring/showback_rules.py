"""Showback: the GPUs each team holds, keeps busy and has admitted by Kueue, per team and pool, as recording rules.

Pure. Three gauges, recorded with the labels ``team`` and ``pool`` at every rule evaluation; `showback_queries`
integrates them over a window into GPU-hours, and the "GPU showback" dashboard shows them (docs/showback.md has the
definitions):

- `TEAM_POOL_GPU_ADMITTED`: GPU devices held by the team's pods that are bound to a node and not finished
  (kube-state-metrics ``kube_pod_container_resource_requests`` and ``kube_pod_status_phase``, through
  `rule_model.POD_GPU_ALLOCATED`), whichever scheduler admitted them. The team is the namespace's
  ``gpu-platform.io/team`` label, the pool the node's ``gpu-platform.io/pool`` label (``pool=""`` for a node of no
  pool).
- `TEAM_POOL_GPU_BUSY`: the team's GPU devices (or MIG instances) whose DCGM utilisation
  (``DCGM_FI_DEV_GPU_UTIL``, attributed to pods by `rule_model.GPU_UTILIZATION`) is at or above the idle threshold.
- `TEAM_POOL_GPU_KUEUE_ADMITTED`: the ``nvidia.com/gpu`` quota Kueue's admitted workloads use in the team's
  ClusterQueue (``kueue_cluster_queue_resource_usage``; the ClusterQueue is named after the team and each flavor
  after its pool, `scheduling.kueue_objects`), counted by the leader replica only.

Below `alerts` (which adds `showback_group` to the stack's recording rules): it imports only the rule vocabulary.
"""

from . import metric_names as m
from .rule_model import (
    GPU_UTILIZATION,
    NAMESPACE_TEAM_INFO,
    NODE_POOL_INFO,
    POD_GPU_ALLOCATED,
    RecordingRule,
    RuleGroup,
)

TEAM_POOL_GPU_ADMITTED = "team_pool:gpu_admitted:sum"
TEAM_POOL_GPU_BUSY = "team_pool:gpu_busy:count"
TEAM_POOL_GPU_KUEUE_ADMITTED = "team_pool:gpu_kueue_admitted:sum"
SHOWBACK_RECORDS = (TEAM_POOL_GPU_ADMITTED, TEAM_POOL_GPU_BUSY, TEAM_POOL_GPU_KUEUE_ADMITTED)
"""In the order the report lists them."""

GROUP_NAME = "gpu-platform.showback.rules"
KUEUE_GPU_RESOURCE = "nvidia.com/gpu"
"""Kueue labels its resource metrics with the Kubernetes resource name, unsanitised."""
KUEUE_LEADER = 'replica_role!="follower"'
"""Followers of a replicated Kueue report the same usage: count the leader's (or a standalone replica's) only."""

_TEAM = f"* on (namespace) group_left (team) {NAMESPACE_TEAM_INFO}"


def admitted_expr() -> str:
    """GPUs held per team and pool: pods on a node of no pool keep ``pool=""`` rather than vanish."""
    held = f"sum by (namespace, node) ({POD_GPU_ALLOCATED})"
    with_pool = (f"(({held}) * on (node) group_left (pool) {NODE_POOL_INFO})"
                 f" or (({held}) unless on (node) {NODE_POOL_INFO})")
    return f"sum by (team, pool) (({with_pool}) {_TEAM})"


def busy_expr(idle_utilization_percent: float) -> str:
    """Attributed GPUs at or above the idle threshold per team and pool; ``>= bool`` keeps a team with none busy at
    0. Unattributed GPUs have no ``namespace`` and so no team."""
    return f"sum by (team, pool) (({GPU_UTILIZATION} >= bool {idle_utilization_percent:g}) {_TEAM})"


def kueue_admitted_expr() -> str:
    """Kueue's admitted GPU usage per ClusterQueue (the team) and flavor (the pool)."""
    usage = f'{m.KUEUE_CLUSTER_QUEUE_RESOURCE_USAGE}{{resource="{KUEUE_GPU_RESOURCE}", {KUEUE_LEADER}}}'
    renamed = (f'label_replace(label_replace({usage}, "team", "$1", "cluster_queue", "(.+)"), '
               '"pool", "$1", "flavor", "(.+)")')
    return f"sum by (team, pool) ({renamed})"


def showback_rules(idle_utilization_percent: float) -> tuple[RecordingRule, ...]:
    """The three showback gauges, in `SHOWBACK_RECORDS` order."""
    return (RecordingRule(TEAM_POOL_GPU_ADMITTED, admitted_expr()),
            RecordingRule(TEAM_POOL_GPU_BUSY, busy_expr(idle_utilization_percent)),
            RecordingRule(TEAM_POOL_GPU_KUEUE_ADMITTED, kueue_admitted_expr()))


def showback_group(idle_utilization_percent: float) -> RuleGroup:
    """The showback group; it reads the per-GPU group's records, so it is listed after it."""
    return RuleGroup(GROUP_NAME, showback_rules(idle_utilization_percent))
