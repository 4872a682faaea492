"""Old module paths of modules that moved into the feature packages (issue 37), kept importable.

``import gpu_platform.kube.nvidia``, ``from gpu_platform.kube.nvidia import NvidiaGpuStack`` and
``from gpu_platform.kube import nvidia`` keep working: a `sys.meta_path` finder, installed by the package's
``__init__``, answers each old name in `MOVED` with the module object that lives at the new name (one module, two
names: a test's ``monkeypatch`` of either reaches the same code). New code imports the new paths; a test checks
that nothing in the library or its tests imports an old one.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Optional

MOVED = {
    # The shared Kubernetes plumbing (helm releases, child options, custom objects) every feature builds on
    "gpu_platform.kube.common": "gpu_platform.kubernetes_base.common",
    "gpu_platform.kube.custom_object": "gpu_platform.kubernetes_base.custom_object",
    # Security: Pod Security levels, security contexts, the network policy engine
    "gpu_platform.kube.namespace_security": "gpu_platform.security.namespace_security",
    "gpu_platform.kube.pod_security": "gpu_platform.security.pod_security",
    "gpu_platform.kube.network_policy_engine": "gpu_platform.security.network_policy_engine",
    "gpu_platform.isolation": "gpu_platform.security.isolation",
    # Accelerators: NVIDIA, AMD, Neuron, TPU, DRA, sharing, RDMA
    "gpu_platform.kube.nvidia": "gpu_platform.accelerators.nvidia",
    "gpu_platform.kube.nvidia_values": "gpu_platform.accelerators.nvidia_values",
    "gpu_platform.kube.sharing": "gpu_platform.accelerators.sharing",
    "gpu_platform.kube.dra_objects": "gpu_platform.accelerators.dra_objects",
    "gpu_platform.kube.dra_values": "gpu_platform.accelerators.dra_values",
    "gpu_platform.kube.amd": "gpu_platform.accelerators.amd",
    "gpu_platform.kube.amd_values": "gpu_platform.accelerators.amd_values",
    "gpu_platform.kube.neuron": "gpu_platform.accelerators.neuron",
    "gpu_platform.kube.neuron_values": "gpu_platform.accelerators.neuron_values",
    "gpu_platform.kube.tpu": "gpu_platform.accelerators.tpu",
    "gpu_platform.kube.tpu_objects": "gpu_platform.accelerators.tpu_objects",
    "gpu_platform.kube.rdma": "gpu_platform.accelerators.rdma",
    "gpu_platform.kube.rdma_specs": "gpu_platform.accelerators.rdma_specs",
    "gpu_platform.gpu_allocation": "gpu_platform.accelerators.gpu_allocation",
    "gpu_platform.gpu_software": "gpu_platform.accelerators.gpu_software",
    # Scheduling and tenancy: priorities, Kueue objects, quotas, team namespaces
    "gpu_platform.priorities": "gpu_platform.scheduling.priorities",
    "gpu_platform.kube.priority_objects": "gpu_platform.scheduling.priority_objects",
    "gpu_platform.kube.kueue_objects": "gpu_platform.scheduling.kueue_objects",
    "gpu_platform.kube.quota_split": "gpu_platform.scheduling.quota_split",
    "gpu_platform.kube.topology_labels": "gpu_platform.scheduling.topology_labels",
    "gpu_platform.kube.tenancy_objects": "gpu_platform.scheduling.tenancy_objects",
    "gpu_platform.kube.scheduling": "gpu_platform.scheduling.policy",
    "gpu_platform.kube.teams": "gpu_platform.scheduling.teams",
    "gpu_platform.kube.tenancy": "gpu_platform.scheduling.tenancy",
    # Monitoring: the stack, rules, dashboards, metric names, its lockdown
    "gpu_platform.kube.monitoring": "gpu_platform.monitoring.gpu_monitoring",
    "gpu_platform.kube.alerts": "gpu_platform.monitoring.alerts",
    "gpu_platform.kube.dashboards": "gpu_platform.monitoring.dashboards",
    "gpu_platform.kube.metric_names": "gpu_platform.monitoring.metric_names",
    "gpu_platform.kube.monitoring_policies": "gpu_platform.monitoring.monitoring_policies",
    "gpu_platform.kube.llm_monitoring": "gpu_platform.monitoring.llm_monitoring",
    "gpu_platform.kube.rule_model": "gpu_platform.monitoring.rule_model",
    "gpu_platform.kube.panels": "gpu_platform.monitoring.panels",
    # Serving: inference services, KEDA, the Gateway, cert-manager, the LLM service
    "gpu_platform.kube.inference_objects": "gpu_platform.serving.inference_objects",
    "gpu_platform.kube.workloads": "gpu_platform.serving.workloads",
    "gpu_platform.kube.keda": "gpu_platform.serving.keda",
    "gpu_platform.kube.gateway": "gpu_platform.serving.gateway",
    "gpu_platform.kube.gateway_objects": "gpu_platform.serving.gateway_objects",
    "gpu_platform.kube.gateway_values": "gpu_platform.serving.gateway_values",
    "gpu_platform.kube.cert_manager": "gpu_platform.serving.cert_manager",
    "gpu_platform.kube.llm": "gpu_platform.serving.llm",
    "gpu_platform.kube.llm_objects": "gpu_platform.serving.llm_objects",
    "gpu_platform.gateway_config": "gpu_platform.serving.gateway_config",
    "gpu_platform.llm_config": "gpu_platform.serving.llm_config",
    "gpu_platform.llm_models": "gpu_platform.serving.llm_models",
    # Training: the reference training job
    "gpu_platform.kube.training": "gpu_platform.training.workload",
    "gpu_platform.kube.training_objects": "gpu_platform.training.training_objects",
    "gpu_platform.kube.training_script": "gpu_platform.training.training_script",
    # Storage: the data plane
    "gpu_platform.kube.storage": "gpu_platform.storage.data_plane",
    "gpu_platform.kube.storage_objects": "gpu_platform.storage.storage_objects",
    "gpu_platform.storage_config": "gpu_platform.storage.storage_config",
    "gpu_platform.storage_backends": "gpu_platform.storage.storage_backends",
    "gpu_platform.storage_quotas": "gpu_platform.storage.quotas",
    # Health: node health in the cluster (the programs were already here)
    "gpu_platform.kube.health": "gpu_platform.health.gpu_health",
    "gpu_platform.kube.health_objects": "gpu_platform.health.health_objects",
    "gpu_platform.kube.health_monitoring": "gpu_platform.health.health_monitoring",
    "gpu_platform.kube.health_placement": "gpu_platform.health.health_placement",
    "gpu_platform.health_config": "gpu_platform.health.health_config",
    "gpu_platform.health_catalog": "gpu_platform.health.health_catalog",
    # Post-deploy conformance plans the stack, so it sits with the commands above the composer
    "gpu_platform.health.verify": "gpu_platform.verify",
    "gpu_platform.health.verify_live": "gpu_platform.verify_live",
    # Autoscaling: HPA/VPA for the workloads, the autoscaler conflict rules
    "gpu_platform.kube.autoscaling": "gpu_platform.autoscaling.workload_autoscaling",
    "gpu_platform.kube.autoscaling_plan": "gpu_platform.autoscaling.autoscaling_plan",
    "gpu_platform.kube.autoscaler_conflicts": "gpu_platform.autoscaling.autoscaler_conflicts",
    "gpu_platform.kube.vpa_objects": "gpu_platform.autoscaling.vpa_objects",
    # Optimizer: its in-cluster deployment beside the program
    "gpu_platform.kube.optimizer": "gpu_platform.optimizer.gpu_optimizer",
    "gpu_platform.kube.optimizer_objects": "gpu_platform.optimizer.optimizer_objects",
}
"""Old dotted module name -> the module's name now."""

MOVED_PACKAGES: dict[str, str] = {
    "gpu_platform.kube": "The former flat Kubernetes layer: its modules moved into the feature packages "
                         "(docs/architecture.md); gpu_platform._moved.MOVED maps each old name to the new one.",
}
"""Old packages that no longer exist, each answered by an empty package (so ``gpu_platform.kube.<old>`` imports
through it) whose docstring names where its modules went."""


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module already imported under its new name."""

    def __init__(self, target: str):
        self.target = target
        self.own_spec: Optional[importlib.machinery.ModuleSpec] = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system has just set the old name's spec on the shared module: give it back its own, so the
        # module's identity (``__spec__.name``, reloads, pickling) stays its new name.
        module.__spec__ = self.own_spec


class _OldPackage(importlib.abc.Loader):
    """An empty package standing for a removed one: its submodules are all old names in `MOVED`."""

    def __init__(self, note: str):
        self.note = note

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__doc__ = self.note
        module.__path__ = []


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old names of moved modules (`MOVED`) and of removed packages (`MOVED_PACKAGES`)."""

    def find_spec(self, fullname: str, path: object = None, target: object = None
                  ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname in MOVED:
            return importlib.machinery.ModuleSpec(fullname, _Alias(MOVED[fullname]))
        if fullname in MOVED_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, _OldPackage(MOVED_PACKAGES[fullname]), is_package=True)
        return None


def install() -> None:
    """Put the finder first on `sys.meta_path` (once), so an old name never reaches a real file of that name."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
