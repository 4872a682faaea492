"""Training: the reference training job (`workload`: `TrainingWorkload`), its objects (`training_objects`) and the
script it runs (`training_script`); the ``training`` stack section (`training_config`).

May import: the data modules, `kubernetes_base`, `security`, `accelerators`, `scheduling`, `storage`, `health`,
`autoscaling.autoscaling_plan` (the reference job's pool, decided there; `training_config` only), the configuration
model. No cloud SDK.
"""
