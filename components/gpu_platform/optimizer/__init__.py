"""The GPU utilisation optimizer: the program (``gpu-platform optimize``: `run`, `analysis`, `actions`, `policy`,
`queries`, `signals`, ...), its in-cluster deployment (`gpu_optimizer`: `GpuOptimizer`; `optimizer_objects`) and the
``optimizer`` stack section (`optimizer_config`).

May import: the data modules, `kubernetes_base`, `security`, the configuration model. The program's own modules
import no Pulumi SDK.
"""
