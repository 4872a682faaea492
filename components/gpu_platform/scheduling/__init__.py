"""Scheduling and tenancy: PriorityClasses (`priorities`, `priority_objects`), Kueue's flavors, queues and cohorts
(`kueue_objects`, `quota_split`, `topology_labels`) and the component that installs them (`policy`:
`SchedulingPolicy`), team namespaces with quotas (`teams`, `tenancy`: `TeamNamespace`; `tenancy_objects`), the
``teams[]`` and ``scheduling`` stack sections (`scheduling_config`), and MultiKueue: the ``multikueue`` section
(`multikueue_config`), its objects (`multikueue_objects`) and components (`multikueue`: `MultiKueueManager`,
`MultiKueueWorkerAccess`).

May import: the data modules, `kubernetes_base`, `security`, `accelerators` (DRA device classes), `monitoring`
(scrape policies), `serving` (the Gateway's route policies), the configuration model. No cloud SDK.
"""
