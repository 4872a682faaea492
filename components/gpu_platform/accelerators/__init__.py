"""Accelerators: the NVIDIA GPU software (operator or device plugin, `nvidia`, `nvidia_values`), GPU sharing
(`sharing`), Dynamic Resource Allocation (`dra_objects`, `dra_values`, `gpu_allocation`), which GPU software a stack
runs (`gpu_software`), AMD (`amd`, `amd_values`), AWS Neuron (`neuron`, `neuron_values`), Cloud TPU (`tpu`,
`tpu_objects`) and RDMA device plugins (`rdma`, `rdma_specs`).

May import: the data modules, `kubernetes_base`, `security`, `monitoring` (dashboards and scrape rules for the
vendors' exporters), the configuration model. No cloud SDK.
"""
