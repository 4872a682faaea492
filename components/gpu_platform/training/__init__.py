"""Training: the reference training job (`workload`: `TrainingWorkload`), its objects (`training_objects`) and the
script it runs (`training_script`).

May import: the data modules, `kubernetes_base`, `security`, `accelerators`, `scheduling`, `storage`, `health`,
the configuration model. No cloud SDK.
"""
