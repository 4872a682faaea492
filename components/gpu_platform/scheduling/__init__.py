"""Scheduling and tenancy: PriorityClasses (`priorities`, `priority_objects`), Kueue's flavors, queues and cohorts
(`kueue_objects`, `quota_split`, `topology_labels`), a team's own queue settings (`queue_config`: quotas per pool
or GPU model, limits per flavor, flavor order, preemption, fair sharing; `pool_quotas`, `flavor_order`) and the
component that installs them (`policy`: `SchedulingPolicy`), team namespaces with quotas (`teams`: `TeamSpec` and
the frozen `Team`; `tenancy`: `TeamNamespace`; `tenancy_objects`), what one program's components said about its
teams and queues (`program_teams`), the ``teams[]`` and ``scheduling`` stack sections (`scheduling_config`), and
MultiKueue: the ``multikueue`` section (`multikueue_config`), its objects (`multikueue_objects`) and components
(`multikueue`: `MultiKueueManager`, `MultiKueueWorkerAccess`).

May import: the data modules, `kubernetes_base`, `security`, `accelerators` (DRA device classes), `monitoring`
(scrape policies), `serving` (the Gateway's route policies), the configuration model. No cloud SDK.
"""
