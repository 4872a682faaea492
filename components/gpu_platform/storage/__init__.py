"""Storage: the data plane (`data_plane`: `DataPlaneStorage`; `storage_objects`), the ``storage`` section
(`storage_config`), the storage backends each cloud offers (`storage_backends`), the buckets the clouds' bucket-access
components take (`bucket_args`), what the clouds' storage components give `DataPlaneStorage` (`composition`) and each
team's ``storageQuota`` against the claims the platform makes (`quotas`).

May import: the data modules, `kubernetes_base`, `security`, `autoscaling` (the reference training plan),
`scheduling.program_teams` (the team quotas one program's components took: it imports only the configuration model,
so no cycle), the configuration model. No cloud SDK (each cloud's storage lives in ``clouds/<cloud>/storage.py``).
"""
