"""`GpuPlatform`: composes a whole environment from the stack configuration.

Cluster and GPU pools from the cloud layer, then the cloud-agnostic Kubernetes layers in dependency order:
the NetworkPolicy engine where the cloud's CNI has none, monitoring (its CRDs first), NVIDIA and Neuron software,
the gateway, cert-manager, AMD software, RDMA, scheduling, tenancy, workloads, optimizer, autoscaling.
"""

import importlib
from collections.abc import Mapping
from typing import Any, Optional

import pulumi

from . import catalog
from .clouds.handle import ClusterHandle
from .config import PlatformConfig, parse_config, strip_namespace
from .errors import ConfigError


def build_cluster(name: str, config: PlatformConfig, opts: pulumi.ResourceOptions) -> ClusterHandle:
    """The cloud layer's cluster for ``config.cloud`` (its SDK is imported only here, only for that cloud)."""
    module = importlib.import_module(f"gpu_platform.clouds.{config.cloud}")
    return module.cluster_from_config(name, config, opts)


class GpuPlatform(pulumi.ComponentResource):
    """A GPU Kubernetes platform for one environment, built from a validated `PlatformConfig`."""

    kubeconfig: pulumi.Output[str]
    cluster_name: pulumi.Output[str]

    def __init__(self, name: str, config: PlatformConfig, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("gpuplatform:index:GpuPlatform", name, {}, opts)
        self.config = config
        self.cluster = build_cluster(name, config, pulumi.ResourceOptions(parent=self))
        self.pools = self.cluster.pools
        self.kubernetes_provider = self._kubernetes_provider(name)
        self.layers: dict[str, Any] = {}
        self._build_kubernetes_layers(name)
        self.kubeconfig = pulumi.Output.secret(self.cluster.kubeconfig)
        self.cluster_name = pulumi.Output.from_input(self.cluster.cluster_name)
        self.register_outputs({"kubeconfig": self.kubeconfig, "cluster_name": self.cluster_name})

    def _kubernetes_provider(self, name: str):
        """The provider of every Kubernetes layer, registered only once the cluster is ready.

        Waiting through the provider, not through a ``depends_on`` on each object: the SDK walks the target's
        dependency closure for every edge, and hundreds of objects times every node pool made large plans
        quadratic. Objects that use a provider wait for it, so one gated provider orders them all.
        """
        if not self.cluster.ready:
            return self.cluster.provider
        import pulumi_kubernetes as k8s

        args = self.cluster.provider_args or {"kubeconfig": self.cluster.kubeconfig}
        return k8s.Provider(f"{name}-kubernetes", enable_server_side_apply=True, **args,
                            opts=pulumi.ResourceOptions(parent=self, depends_on=self.cluster.ready))

    def _k8s_opts(self, depends_on: Optional[list] = None) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self,
            providers={"kubernetes": self.kubernetes_provider},
            depends_on=list(depends_on or []),
        )

    def _priority_objects(self, *class_names: str) -> list:
        """The PriorityClasses and Kueue WorkloadPriorityClasses of these names (what a workload refers to)."""
        scheduling = self.layers["scheduling"]
        found = [scheduling.priority_classes.get(n) for n in class_names]
        found += [scheduling.workload_priority_classes.get(n) for n in class_names]
        return [r for r in found if r is not None]

    def _dra_driver(self, pool) -> list:
        """The DRA driver's release where a workload on ``pool`` claims through it: its chart brings the ComputeDomain
        CRD and the DeviceClasses the workload's claims name."""
        release = getattr(self.layers.get("nvidia"), "dra_release", None)
        return [release] if pool.dra and release is not None else []

    def _build_kubernetes_layers(self, name: str) -> None:
        """Each layer takes the pools as `GpuPoolSpec`s and the cluster's Kubernetes provider."""
        config = self.config
        specs = [p.spec() for p in self.pools]

        def specs_of(*vendors: str) -> list:
            """The specs of the pools of these accelerator vendors (each vendor's layer takes its own pools)."""
            return [s for p, s in zip(self.pools, specs, strict=True) if p.vendor in vendors]

        # Layers in dependency order; each stores its component in self.layers[<layer>] and passes
        # depends_on through self._k8s_opts([...]) where it needs an earlier layer (CRDs, webhooks).
        # [layer: network_policy]
        engine = self.cluster.outputs.get("network_policy_engine")
        if engine is not None:
            from .security.network_policy_engine import CalicoPolicyEngine

            # First, where the cloud's CNI enforces no NetworkPolicy (OKE): the policies later layers declare need
            # something on each node to enforce them. Nothing waits for it: a NetworkPolicy is accepted before its
            # enforcer runs and Felix applies every existing one when it starts, so a dependency would only
            # serialise the deployment (and still leave nodes that join later unenforced until calico-node is up).
            self.layers["network_policy"] = CalicoPolicyEngine(f"{name}-network-policy", {**engine, "pools": specs},
                                                               opts=self._k8s_opts())
        # [layer: monitoring]
        if config.monitoring.enabled:
            from .monitoring.gpu_monitoring import GpuMonitoring, monitoring_args

            # First: later layers' ServiceMonitors need the CRDs its release installs (they depend on .release).
            self.layers["monitoring"] = GpuMonitoring(f"{name}-monitoring", monitoring_args(config, specs),
                                                      opts=self._k8s_opts())
        # [layer: nvidia]
        monitoring = self.layers.get("monitoring")
        nvidia_specs = specs_of(catalog.NVIDIA)
        # The NVIDIA software runs where there are NVIDIA pools (or no accelerator pool at all: a cluster whose GPU
        # nodes join later, as on existing clusters); a cluster of other vendors' accelerators gets none of it.
        if nvidia_specs or not specs:
            from .accelerators.nvidia import NvidiaGpuStack, gke_manages_everything, manages_driver

            preinstalled = True if self.cluster.outputs.get("driver_preinstalled") else None
            # The DCGM exporter's ServiceMonitor needs kube-prometheus-stack's CRDs: the whole stack waits for them.
            self.layers["nvidia"] = NvidiaGpuStack(f"{name}-nvidia", {
                "cloud": config.cloud,
                "gpu_software": config.gpu_software,
                "pools": nvidia_specs,
                "kubernetes_version": config.kubernetes_version,
                # GKE stacks with arm64 (A4X) pools run COS with Google's driver installer (the GKE layer's output).
                **({"driver_preinstalled": True} if preinstalled else {}),
                # Driver upgrades wait for the jobs Kueue admitted, or for the labelled pods without Kueue.
                **({"kueue": config.scheduling.kueue}
                   if manages_driver(config.cloud, config.gpu_software, preinstalled) else {}),
                # GKE's cloud-managed software has its own DCGM exporter (the monitoring layer scrapes it).
                **({"monitoring": True, "service_monitor_labels": dict(monitoring.service_monitor_labels)}
                   if monitoring is not None and not gke_manages_everything(config.cloud, config.gpu_software)
                   else {}),
            }, opts=self._k8s_opts(depends_on=[monitoring.release] if monitoring is not None else []))
        # [layer: neuron]
        neuron_specs = specs_of(catalog.AWS_NEURON)
        if neuron_specs:
            from .accelerators.neuron import NeuronStack

            # Neuron device plugin, scheduler extension, node problem detector and neuron-monitor; its
            # ServiceMonitor needs kube-prometheus-stack's CRDs, so the stack waits for them.
            self.layers["neuron"] = NeuronStack(f"{name}-neuron", {
                "pools": neuron_specs,
                "kubernetes_version": config.kubernetes_version,
                # GKE stacks with arm64 (A4X) pools run COS with Google's driver installer (the GKE layer's output).
                **({"driver_preinstalled": True} if self.cluster.outputs.get("driver_preinstalled") else {}),
                "monitoring": monitoring is not None,
                **({"service_monitor_labels": dict(monitoring.service_monitor_labels),
                    "monitoring_namespace": monitoring.namespace} if monitoring is not None else {}),
            }, opts=self._k8s_opts(depends_on=[monitoring.release] if monitoring is not None else []))
        # [layer: gateway]
        from .serving.gateway import build_gateway_layer

        # The Gateway API entry point (CRDs, controller, Gateway) the inference services publish their routes on;
        # before cert-manager, which watches Gateways from the start and so needs the Gateway API CRDs first.
        gateway = build_gateway_layer(self, name)
        # [layer: cert_manager]
        from .serving import gateway_objects
        from .serving.cert_manager import CertManager, cert_manager_args

        amd_specs = specs_of(catalog.AMD)
        # One cert-manager for whatever needs certificates: the AMD GPU Operator and the Gateway's HTTPS listener
        # (its ClusterIssuers too). It took over the install the AMD stack made itself before (aliases).
        cert_manager_config = cert_manager_args(
            config, amd=bool(amd_specs), amd_stack=f"{name}-amd", gateway_name=gateway_objects.GATEWAY_NAME,
            gateway_namespace=gateway_objects.GATEWAY_NAMESPACE, http_listener=gateway_objects.HTTP_LISTENER)
        if cert_manager_config is not None:
            gateway_crds = gateway.crds if gateway is not None and cert_manager_config.get("gateway_api") else []
            self.layers["cert_manager"] = CertManager(f"{name}-cert-manager", cert_manager_config,
                                                      opts=self._k8s_opts(depends_on=gateway_crds))
        # [layer: amd]
        if amd_specs:
            from .accelerators.amd import AmdGpuStack

            # cert-manager, the AMD GPU Operator and a DeviceConfig per AMD pool. Its NFD only when the NVIDIA stack
            # runs none (one NFD per cluster); the exporter's ServiceMonitor needs the Prometheus Operator CRDs.
            amd_driver_image = self.cluster.outputs.get("amd_driver_image")
            shared_cert_manager = self.layers["cert_manager"]
            self.layers["amd"] = AmdGpuStack(f"{name}-amd", {
                "cloud": config.cloud,
                "pools": amd_specs,
                "cert_manager_installed": True,
                "nfd_installed": bool(getattr(self.layers.get("nvidia"), "runs_nfd", False)),
                "monitoring": monitoring is not None,
                **({"driver_image": amd_driver_image} if amd_driver_image else {}),
                **({"service_monitor_labels": dict(monitoring.service_monitor_labels),
                    "monitoring_namespace": monitoring.namespace} if monitoring is not None else {}),
            }, opts=self._k8s_opts(depends_on=[shared_cert_manager.release,
                                               *([monitoring.release] if monitoring is not None else [])]))
        # [layer: tpu]
        tpu_specs = specs_of(catalog.GOOGLE_TPU)
        if tpu_specs:
            from .accelerators.tpu import TpuJobSet

            # GKE brings the TPU runtime, device plugin, taint and node labels; the platform adds the JobSet
            # controller multi-host slices' workloads run under. No ServiceMonitor or dashboard: GKE exports TPU
            # metrics to Cloud Monitoring, not to an in-cluster endpoint.
            self.layers["tpu"] = TpuJobSet(f"{name}-tpu", {"pools": tpu_specs}, opts=self._k8s_opts())
        # [layer: rdma]
        if any(p.rdma_fabric for p in self.pools):
            from .accelerators.rdma import RdmaStack

            # After the accelerator stacks: the NFD one of them runs (the cluster's only one) labels the NICs the
            # Network Operator uses.
            accelerator_stacks = [self.layers[k] for k in ("nvidia", "amd") if k in self.layers]
            self.layers["rdma"] = RdmaStack(f"{name}-rdma", {
                "cloud": config.cloud, "pools": specs,
                "nfd_installed": any(getattr(stack, "runs_nfd", False) for stack in accelerator_stacks),
            }, opts=self._k8s_opts(depends_on=accelerator_stacks))
        # [layer: scheduling]
        from .scheduling.policy import SchedulingPolicy
        from .scheduling.teams import Team, team_spec

        monitoring = self.layers.get("monitoring")
        # One Team object per team, given to its ClusterQueue and its namespace alike.
        teams = [Team(**team_spec(t)) for t in config.teams]
        manager = config.multikueue is not None and config.multikueue.manager
        if manager:
            from .scheduling import multikueue_objects
        # With monitoring, Kueue's chart adds a ServiceMonitor: it needs the Prometheus Operator CRDs first.
        self.layers["scheduling"] = SchedulingPolicy(f"{name}-scheduling", {
            "pools": specs,
            "teams": teams,
            "kueue": config.scheduling.kueue,
            "per_gpu_priority_classes": config.scheduling.per_gpu_priority_classes,
            "default_priority_class": config.scheduling.default_priority_class,
            "enable_prometheus": monitoring is not None,
            "overcommit": config.scheduling.overcommit,
            # A MultiKueue manager's team queues dispatch to its workers (the next layer builds the check).
            **({"admission_checks": [multikueue_objects.ADMISSION_CHECK],
                "multikueue": multikueue_objects.controller_section(config.multikueue)} if manager else {}),
        }, opts=self._k8s_opts(depends_on=[monitoring.release] if monitoring is not None else []))
        # [layer: multikueue]
        from .scheduling.multikueue import build_multikueue_layer

        build_multikueue_layer(self, name)
        # [layer: tenancy]
        from .scheduling.tenancy import TeamNamespace

        scheduling = self.layers["scheduling"]
        # After Kueue's release: its webhooks (which watch team namespaces) answer before team objects. Depending on
        # the release alone, not the whole scheduling component: every dependency edge costs the SDK a walk of the
        # target's dependency closure, and one edge per team object to every Kueue object made plans quadratic.
        kueue_ready = [scheduling.release] if scheduling.release is not None else []
        self.layers["tenancy"] = {
            team.name: TeamNamespace(f"{name}-team-{team.name}", {
                "team": team,
                "cluster_queue": team.name if scheduling.release is not None else None,
                "monitoring_namespace": monitoring.namespace if monitoring is not None else None,
                "pools": specs,
                "pod_security": team_config.pod_security,
                # A MultiKueue manager's quotas bound what it dispatches, not what its own pools hold.
                "overcommit": config.scheduling.overcommit or (config.multikueue is not None
                                                               and config.multikueue.manager),
            }, opts=self._k8s_opts(depends_on=kueue_ready))
            for team, team_config in zip(teams, config.teams, strict=True)
        }
        # [layer: storage]
        from .storage.data_plane import build_storage_layer

        # The data plane (issue 23): CSI drivers the cloud offers as no add-on, the shared file system's and the
        # buckets' volumes, team claims under their storage quotas, image pre-pulling. After the team namespaces
        # (the claims live there), before the workloads that mount them.
        build_storage_layer(self, name)
        # [layer: training]
        from .autoscaling.autoscaling_plan import reference_tpu_slice, reference_training
        from .scheduling.kueue_objects import default_topology_level
        from .scheduling.priorities import HIGH, INFERENCE_CRITICAL, MEDIUM
        from .scheduling.priority_objects import workload_class_name
        from .training.workload import TrainingWorkload

        # The reference job is PyTorch DDP on NVIDIA or AMD GPUs (a TPU slice's job is the TPU layer's; the
        # configuration refuses training on Neuron pools).
        planned_training = reference_training(config, self.pools)
        storage = self.layers.get("storage")
        if planned_training is not None:
            from .storage.data_plane import backends_of, training_storage

            train_pool, team = planned_training
            per_gpu = config.scheduling.per_gpu_priority_classes
            # The team's datasets and checkpoints claims and the buckets, when the stack has storage (else {}).
            mounts = training_storage(config, backends_of(self), team.name) if config.storage.enabled else {}
            self.layers["training"] = TrainingWorkload(f"{name}-training", {
                "pool": train_pool.spec(),
                "namespace": team.name,
                "gpu_quota": team.quota_of(train_pool.resource),
                "local_queue": self.layers["tenancy"][team.name].local_queue_name,
                # The stack's level was checked against the pool's (config.check_training_topology).
                "topology_level": (config.training.topology_level or default_topology_level(train_pool)
                                   if scheduling.release is not None else None),
                "topology_policy": config.training.topology_policy,
                "job_priority_class": workload_class_name(MEDIUM, train_pool, per_gpu),
                "retrain_priority_class": workload_class_name(HIGH, train_pool, per_gpu),
                "schedule": config.training.schedule,
                **({} if "checkpoint_claim" in mounts else {
                    "checkpoint_size": config.training.checkpoint_size,
                    "checkpoint_storage_class": config.training.checkpoint_storage_class}),
                **mounts,
            }, opts=self._k8s_opts(depends_on=[*(storage.ready if storage is not None else []),
                *kueue_ready, *self._priority_objects(workload_class_name(MEDIUM, train_pool, per_gpu),
                                                      workload_class_name(HIGH, train_pool, per_gpu)),
                self.layers["tenancy"][team.name], *self._dra_driver(train_pool)]))
        # [layer: tpu example]
        # The reference training workload of a TPU slice: a JobSet on the first training-role TPU pool, in the first
        # team with a google.com/tpu quota, through Kueue (after JobSet's release, Kueue and the team's namespace).
        planned_slice = reference_tpu_slice(config, self.pools)
        if planned_slice is not None:
            from .accelerators.tpu import TpuSliceJob

            tpu_pool, tpu_team = planned_slice
            tenancy = self.layers["tenancy"][tpu_team.name]
            self.layers["tpu_example"] = TpuSliceJob(f"{name}-tpu-slice-job", {
                "pool": tpu_pool.spec(),
                "namespace": tpu_team.name,
                "local_queue": tenancy.local_queue_name,
                "tpu_quota": tpu_team.quota_of(tpu_pool.resource),
            }, opts=self._k8s_opts(depends_on=[self.layers["tpu"].release, *kueue_ready, tenancy]))
        # [layer: workloads]
        from .serving.workloads import chosen_pool

        infer_pool = chosen_pool(config, self.pools)
        if config.inference.enabled and infer_pool is not None:
            from .serving.keda import KedaOperator
            from .serving.workloads import InferenceService, inference_args
            from .storage.data_plane import backends_of, inference_cache

            monitoring = self.layers.get("monitoring")
            gateway = self.layers.get("gateway")
            # The inference-critical PriorityClass first (and the DRA driver's DeviceClasses on a DRA pool); with
            # monitoring, the ServiceMonitor CRD and KEDA; with a Gateway, its CRDs, controller and Gateway.
            after = [*self._priority_objects(INFERENCE_CRITICAL.name), *self._dra_driver(infer_pool),
                     *(gateway.ready if gateway is not None else []),
                     # The shared model cache's volume, which the app's cache claim binds to.
                     *(storage.volumes.values() if storage is not None else [])]
            if monitoring is not None:
                after.append(monitoring.release)
                if config.inference.autoscaler == "keda":
                    self.layers["keda"] = KedaOperator(f"{name}-keda", {
                        "monitoring": True, "service_monitor_labels": dict(monitoring.service_monitor_labels),
                        "monitoring_namespace": monitoring.namespace,
                    }, opts=self._k8s_opts(depends_on=[monitoring.release]))
                    after.append(self.layers["keda"].release)
            self.layers["workloads"] = InferenceService(f"{name}-inference", inference_args(
                config, infer_pool,
                prometheus_url=monitoring.prometheus_url if monitoring is not None else None,
                monitoring_namespace=monitoring.namespace if monitoring is not None else None,
                service_monitor_labels=dict(monitoring.service_monitor_labels) if monitoring is not None else None,
                route=gateway.route_args(
                    hostname=config.inference.ingress_host, request_timeout=config.gateway.request_timeout,
                    max_request_body_size=config.gateway.body_limit(config.cloud),
                    rate_limit_per_minute=config.gateway.rate_limit_per_minute) if gateway is not None else None,
                model_cache=inference_cache(config, backends_of(self)),
            ), opts=self._k8s_opts(depends_on=after))
        # [layer: llm]
        from .serving.llm import build_llm_layer

        # The LLM service: vLLM behind an InferencePool, routed by the gateway's endpoint picker.
        build_llm_layer(self, name)
        # [layer: service_storage]
        from .storage.data_plane import build_service_storage

        # The buckets' claims and ServiceAccounts in the services' namespaces, which the services create (issue 23).
        build_service_storage(self, name)
        # [layer: optimizer]
        monitoring = self.layers.get("monitoring")
        if config.runs_optimizer and monitoring is not None:
            from .optimizer.gpu_optimizer import GpuOptimizer
            from .optimizer.signals import VENDORS_WITH_SIGNAL

            # Runs only with the platform's Prometheus (nothing to read utilisation from otherwise) and reads each
            # vendor's per-pod utilisation (DCGM, AMD's exporter), so it looks after the pools of vendors that have
            # one (`PlatformConfig.runs_optimizer`, `optimizer.signals`).
            self.layers["optimizer"] = GpuOptimizer(f"{name}-optimizer", {
                "pools": specs_of(*VENDORS_WITH_SIGNAL),
                "prometheus_url": monitoring.prometheus_url,
                "prometheus_namespace": monitoring.namespace,
                "action": config.optimizer.action,
                "schedule": config.optimizer.schedule,
                "utilization_threshold": config.optimizer.utilization_threshold,
                "dry_run": config.optimizer.dry_run,
            }, opts=self._k8s_opts())
        # [layer: health]
        from .health.gpu_health import build_health_layer

        # GPU and RDMA node health (issue 21): node conditions, active checks on idle nodes, remediation (dry-run
        # by default) and their alerts.
        build_health_layer(self, name)
        # [layer: autoscaling]
        from .clouds.autoscalers import node_autoscaler_from_config

        # GPU node autoscaling per cloud: Karpenter or cluster-autoscaler on EKS, the OKE add-on; AKS and GKE scale
        # their pools themselves with the profile their cloud layer set on the cluster.
        node_autoscaler = node_autoscaler_from_config(name, config, self.cluster, self._k8s_opts())
        if node_autoscaler is not None:
            self.layers["node_autoscaler"] = node_autoscaler
        if config.autoscaling.vpa:
            from .autoscaling.autoscaling_plan import planned_vpa_targets
            from .autoscaling.workload_autoscaling import WorkloadAutoscaling
            from .serving import inference_objects

            # The VPAs are checked against the horizontal autoscaler the workloads layer actually built.
            inference = getattr(self.layers.get("workloads"), "spec", None)
            hpas = [] if inference is None or inference.autoscaler == "none" else [
                inference_objects.scaled_object(inference) if inference.uses_keda
                else inference_objects.horizontal_pod_autoscaler(inference)]
            self.layers["autoscaling"] = WorkloadAutoscaling(f"{name}-autoscaling", {
                "vpa_targets": [{"namespace": t.namespace, "kind": t.kind, "name": t.name,
                                 "api_version": t.api_version} for _, t in planned_vpa_targets(config, self.pools)],
                "vpa_mode": config.autoscaling.vpa_mode,
                "vpa_resources": list(config.autoscaling.vpa_resources),
                "horizontal_autoscalers": hpas,
                "metrics_server": config.autoscaling.metrics_server,
            }, opts=self._k8s_opts())


def read_engine_config() -> dict[str, Any]:
    """The stack's ``gpu-platform`` configuration as the engine passes it (JSON strings decoded)."""
    import contextlib
    import json

    from pulumi.runtime import config as runtime_config

    merged: dict[str, Any] = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw = strip_namespace(merged)
    decoded: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, str) and value[:1] in "[{":
            with contextlib.suppress(ValueError):  # not JSON after all: the parser reports the type
                value = json.loads(value)
        decoded[key] = value
    secret_keys = {k.split(":", 1)[1] for k in merged if runtime_config.is_config_secret(k) and ":" in k}
    return _mark_secrets(decoded, secret_keys)


def _mark_secrets(raw: Mapping[str, Any], secret_keys: set[str]) -> dict[str, Any]:
    from .config import Secret

    return {k: Secret(v) if k in secret_keys and isinstance(v, str) else v for k, v in raw.items()}


def main() -> Optional[GpuPlatform]:
    """The project program: validate the stack configuration, then build the platform and export its outputs."""
    stack = pulumi.get_stack()
    try:
        config = parse_config(read_engine_config(), stack)
        from .scheduling.multikueue_config import check_not_self

        check_not_self(config.multikueue, pulumi.get_project(), stack)
    except ConfigError as err:
        # RunError prints the one-line message without a traceback.
        raise pulumi.RunError(str(err.for_stack(stack))) from None
    platform = GpuPlatform(stack, config)
    pulumi.export("kubeconfig", platform.kubeconfig)
    pulumi.export("clusterName", platform.cluster_name)
    pulumi.export("gpuPools", [
        {"name": p.name, "instanceType": p.instance_type, "gpuModel": p.gpu_model, "gpusPerNode": p.gpus_per_node,
         "maxNodes": p.max_nodes, "rdma": p.rdma_fabric or "none"} for p in platform.pools
    ])
    worker_kubeconfig = getattr(platform.layers.get("multikueue"), "kubeconfig", None)
    if worker_kubeconfig is not None:  # a MultiKueue worker: what its manager reads through a StackReference
        from .scheduling.multikueue_objects import KUBECONFIG_OUTPUT

        pulumi.export(KUBECONFIG_OUTPUT, worker_kubeconfig)
    return platform
