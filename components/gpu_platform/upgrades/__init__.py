"""Day 2: upgrading a GPU platform without killing a training job.

Kubernetes minors as data (`kubernetes_versions`), the version skew rules (`version_skew`), how each pool may be
upgraded and when the cloud may do it on its own (`pool_upgrade`, `maintenance`), and the comparison of two offline
plans that says what an upgrade would disrupt (`plan_diff`). The package sits below the stack parser, the composer
and the CLI: it imports only the data modules (catalog, versions, labels, errors).
"""
