"""The GPU utilisation optimizer: the program (``gpu-platform optimize``: `run`, `analysis`, `actions`, `policy`,
`queries`, `signals`, ...) and its in-cluster deployment (`gpu_optimizer`: `GpuOptimizer`; `optimizer_objects`).

May import: the data modules, `kubernetes_base`, `security`, the configuration model. The program's own modules
import no Pulumi SDK.
"""
