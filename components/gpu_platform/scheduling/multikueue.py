"""MultiKueue: a manager cluster whose team ClusterQueues dispatch jobs to worker clusters (Kueue v0.19.2).

`MultiKueueWorkerAccess` runs on a worker: the ServiceAccount ``multikueue-sa`` in ``kueue-system``, the ClusterRole
the manager needs there (`multikueue_objects.WORKER_RULES`, the upstream script's rules for the platform's
integrations) and its binding, a token Secret, and ``kubeconfig``: the worker's API server and CA with that token
only, a secret Output the worker stack exports as ``multikueueKubeconfig``.

`MultiKueueManager` runs on the manager: per worker a `pulumi.StackReference` to the worker's stack, a Secret in
``kueue-system`` holding its ``multikueueKubeconfig`` output under ``kubeconfig`` (a secret input; its data and
stringData are secret outputs too: the kubeconfig never reaches a file or a plan in clear), a MultiKueueCluster
reading that Secret; one MultiKueueConfig listing the workers; the AdmissionCheck of controller
``kueue.x-k8s.io/multikueue`` every team ClusterQueue passes (`SchedulingPolicy`'s ``admission_checks``). The
workers' queues mirror the manager's: each stack builds its team namespaces, ClusterQueues and LocalQueues ``gpu``
from its own ``teams``, under the teams' names (`multikueue_config.check_worker_stacks` refuses a missing team
where the worker's stack file is at hand).
"""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from ..component_args import Args, KeywordArgs, matching
from ..kubernetes_base.common import child_opts
from ..kubernetes_base.custom_object import KubernetesObject
from . import multikueue_objects
from .multikueue_config import MANAGER, STACK_REFERENCE, MultiKueueSettings, MultiKueueWorker


class MultiKueueWorkerSpec(TypedDict):
    """A worker of `MultiKueueManager`."""

    name: str
    """The worker's MultiKueueCluster name (DNS label, unique)."""
    stack: str
    """The worker's stack, ``<organization>/<project>/<stack>``, whose ``multikueueKubeconfig`` output is read."""


class MultiKueueManagerArgs(TypedDict, total=False):
    """Arguments of `MultiKueueManager`."""

    workers: list[MultiKueueWorkerSpec]
    """The worker stacks, in dispatch preference order (1 to 20); each exports its MultiKueue kubeconfig as
    ``multikueueKubeconfig`` (`MultiKueueWorkerAccess`)."""


class MultiKueueWorkerAccessArgs(TypedDict, total=False):
    """Arguments of `MultiKueueWorkerAccess`."""

    cluster_kubeconfig: Required[pulumi.Input[str]]
    """The worker cluster's kubeconfig: its server and CA data go into the manager's kubeconfig (its credentials
    do not)."""
    context: Optional[str]
    """The kubeconfig context whose cluster is the worker. Default: its current context. A context the kubeconfig
    does not have is refused."""


DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
MANAGER_RULES = {
    "workers[].name": matching(DNS_LABEL, "a DNS label"),
    "workers[].stack": matching(STACK_REFERENCE.pattern, "a fully qualified stack name (<organization>/<project>/"
                                                        "<stack>)"),
}


def checked_manager_args(name: str, args: MultiKueueManagerArgs) -> dict:
    """``args`` checked (one `ConfigError` line), before anything is registered."""
    checker = Args("MultiKueueManager", name)
    checked = checker.check(args, MultiKueueManagerArgs, MANAGER_RULES)
    workers = checked.get("workers") or []
    if not workers:
        checker.fail("workers", "must list at least one worker")
    if len(workers) > 20:
        checker.fail("workers", f"lists {len(workers)} workers; a MultiKueueConfig takes at most 20")
    checker.unique([w["name"] for w in workers], "workers", "worker name")
    checker.unique([w["stack"] for w in workers], "workers", "worker stack")
    return checked


class MultiKueueManager(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The manager's side of MultiKueue: worker kubeconfig Secrets (from StackReferences), MultiKueueClusters, a
    MultiKueueConfig and the AdmissionCheck team ClusterQueues name (`admission_check_name`)."""

    admission_check_name: str

    def __init__(self, name: str, args: MultiKueueManagerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_manager_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:MultiKueueManager", name, {}, opts)
        workers = [MultiKueueWorker(w["name"], w["stack"]) for w in args["workers"]]
        self.stack_references: dict[str, pulumi.StackReference] = {}
        self.secrets: dict[str, k8s.core.v1.Secret] = {}
        self.clusters: dict[str, KubernetesObject] = {}
        for worker in workers:
            reference = pulumi.StackReference(f"{name}-{worker.name}-stack", stack_name=worker.stack,
                                              opts=pulumi.ResourceOptions(parent=self))
            self.stack_references[worker.name] = reference
            # Secret whatever the worker stack says of its output: a kubeconfig is a credential. (The SDK's Secret
            # makes its data and stringData secret outputs by itself.)
            kubeconfig = pulumi.Output.secret(reference.require_output(multikueue_objects.KUBECONFIG_OUTPUT))
            self.secrets[worker.name] = k8s.core.v1.Secret(
                f"{name}-{worker.name}-kubeconfig", metadata=multikueue_objects.kubeconfig_secret_metadata(worker),
                type="Opaque", string_data={multikueue_objects.KUBECONFIG_KEY: kubeconfig},
                opts=child_opts(self, opts))
            self.clusters[worker.name] = KubernetesObject(
                f"{name}-{worker.name}", multikueue_objects.multikueue_cluster(worker),
                child_opts(self, opts, depends_on=[self.secrets[worker.name]]))
        self.config = KubernetesObject(
            f"{name}-config", multikueue_objects.multikueue_config(MultiKueueSettings(MANAGER, tuple(workers))),
            child_opts(self, opts, depends_on=list(self.clusters.values())))
        self.admission_check = KubernetesObject(f"{name}-admission-check", multikueue_objects.admission_check(),
                                                child_opts(self, opts, depends_on=[self.config]))
        self.admission_check_name = multikueue_objects.ADMISSION_CHECK
        self.register_outputs({"admission_check_name": self.admission_check_name,
                               "worker_names": [w.name for w in workers]})


class MultiKueueWorkerAccess(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The worker's side of MultiKueue: what the manager may do here, and the kubeconfig it does it with."""

    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, args: MultiKueueWorkerAccessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("MultiKueueWorkerAccess", name)
        args = checker.check(args, MultiKueueWorkerAccessArgs)  # before registering
        context = args.get("context")
        if context is not None and isinstance(args["cluster_kubeconfig"], str):
            problem = multikueue_objects.missing_context(args["cluster_kubeconfig"], context)
            if problem is not None:
                checker.fail("context", problem)
        super().__init__("gpuplatform:index:MultiKueueWorkerAccess", name, {}, opts)
        sa_body, role_body, binding_body, token_body = (
            multikueue_objects.service_account(), multikueue_objects.cluster_role(),
            multikueue_objects.cluster_role_binding(), multikueue_objects.token_secret())
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-service-account", metadata=sa_body["metadata"],
            automount_service_account_token=sa_body["automountServiceAccountToken"], opts=child_opts(self, opts))
        self.cluster_role = k8s.rbac.v1.ClusterRole(f"{name}-role", metadata=role_body["metadata"],
                                                    rules=role_body["rules"], opts=child_opts(self, opts))
        self.cluster_role_binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding", metadata=binding_body["metadata"], role_ref=binding_body["roleRef"],
            subjects=binding_body["subjects"],
            opts=child_opts(self, opts, depends_on=[self.service_account, self.cluster_role]))
        # The provider waits for the token controller to fill a service-account-token Secret's data
        # (pulumi-kubernetes #2048), so ``data.token`` is known once it is created.
        self.token_secret = k8s.core.v1.Secret(
            f"{name}-token", metadata=token_body["metadata"], type=token_body["type"],
            opts=child_opts(self, opts, depends_on=[self.service_account]))
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(args["cluster_kubeconfig"], self.token_secret.data)
                                               .apply(lambda a: multikueue_objects.worker_kubeconfig(
                                                   a[0], (a[1] or {}).get("token"), context)))
        self.register_outputs({"kubeconfig": self.kubeconfig})


def build_multikueue_layer(platform, name: str) -> Optional[pulumi.ComponentResource]:
    """The stack's MultiKueue side (`GpuPlatform`'s layer, after scheduling): a manager's `MultiKueueManager` or a
    worker's `MultiKueueWorkerAccess` (whose ``kubeconfig`` the program exports as ``multikueueKubeconfig``); None
    for a stack with no ``multikueue`` section."""
    settings = platform.config.multikueue
    if settings is None:
        return None
    scheduling = platform.layers["scheduling"]
    if settings.manager:
        # After Kueue's release: it brings the MultiKueue CRDs.
        layer: pulumi.ComponentResource = MultiKueueManager(f"{name}-multikueue", {
            "workers": [{"name": w.name, "stack": w.stack} for w in settings.workers],
        }, opts=platform._k8s_opts(depends_on=[scheduling.release]))
    else:
        # In Kueue's namespace, which the scheduling layer creates.
        layer = MultiKueueWorkerAccess(f"{name}-multikueue", {
            "cluster_kubeconfig": platform.cluster.kubeconfig,
            "context": getattr(platform.config.cluster_options, "context", None),
        }, opts=platform._k8s_opts(depends_on=[scheduling.kueue_namespace]))
    platform.layers["multikueue"] = layer
    return layer
