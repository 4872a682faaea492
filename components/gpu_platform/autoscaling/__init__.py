"""Autoscaling: HPA and VPA for the reference workloads (`workload_autoscaling`: `WorkloadAutoscaling`;
`autoscaling_plan`, `vpa_objects`) and the rules that keep node autoscalers and workload autoscalers from fighting
(`autoscaler_conflicts`); the ``autoscaling`` stack section (`autoscaling_config`).

May import: the data modules, `kubernetes_base`, `security`, `serving` and `training` (the workloads it sizes), the
configuration model. No cloud SDK (node autoscalers live in ``clouds/``).
"""
