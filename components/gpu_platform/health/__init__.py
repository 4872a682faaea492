"""Node health: the in-cluster component `GpuHealth` (`gpu_health`; its objects `health_objects`, rules and dashboard
`health_monitoring`, placement away from quarantined nodes `health_placement`), the ``health`` section
(`health_config`), the XID/RDMA catalogue (`health_catalog`), and the programs its pods run: the active checks'
parsers and verdicts (`dcgm`, `nccl`, `allreduce`), the check reporter, the dispatcher and the remediation controller.

May import: the data modules, `kubernetes_base`, `security`, `monitoring`, the configuration model. No cloud SDK;
post-deploy conformance (`gpu_platform.verify`), which plans a stack, lives above the composer.
"""
