"""Cloud-agnostic Kubernetes layer: every module takes `GpuPoolSpec`s and a Kubernetes provider.

No module here imports a cloud SDK.
"""
