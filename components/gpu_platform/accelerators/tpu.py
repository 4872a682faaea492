"""Google Cloud TPU layer: `TpuJobSet` (the JobSet controller multi-host TPU workloads run under) and
`TpuSliceJob` (an example JobSet on a TPU slice, admitted by Kueue).

GKE does the rest of what an NVIDIA stack installs: TPU nodes come with their runtime and device plugin (they
advertise ``google.com/tpu``), a ``google.com/tpu=present:NoSchedule`` taint and labels for the TPU type and slice
topology. GKE exports TPU metrics (duty cycle, HBM use, TensorCore utilisation) to Cloud Monitoring, not to an
in-cluster Prometheus endpoint, so this layer adds no ServiceMonitor or Grafana dashboard.

The JobSet controller's namespace enforces Pod Security ``restricted`` (the chart's pod meets it: runAsNonRoot,
seccomp RuntimeDefault, no privilege escalation, all capabilities dropped, charts/jobset/values.yaml@v0.12.0) and
admits ingress only to its webhook.
"""

from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import catalog
from ..component_args import DNS_LABEL, Args, KeywordArgs
from ..kubernetes_base.common import check_pool_set, child_opts, helm_release, pools_of
from ..kubernetes_base.custom_object import KubernetesObject
from ..pools import GpuPoolSpec
from ..security import namespace_security
from ..versions import JOBSET, TPU_EXAMPLE_IMAGE
from . import tpu_objects

JOBSET_POD_SECURITY = namespace_security.PodSecurity(namespace_security.RESTRICTED, (
    "JobSet 0.12.0's controller meets restricted with the chart's defaults (charts/jobset/values.yaml "
    "controller.securityContext and controller.podSecurityContext)"))


class TpuJobSetArgs(TypedDict, total=False):
    """Arguments of `TpuJobSet`."""

    pools: Required[list[GpuPoolSpec]]
    """The cluster's accelerator pools; at least one must be a TPU pool."""
    namespace: str
    """Namespace of the JobSet controller. Default ``jobset-system``."""


def checked_args(name: str, args: TpuJobSetArgs) -> dict:
    """``args`` checked (one `ConfigError` line naming the component, ``name`` and the argument), normalised."""
    checker = Args("TpuJobSet", name)
    checked = checker.check(args, TpuJobSetArgs, {"namespace": DNS_LABEL})
    check_pool_set(checker, checked["pools"])
    if not any(p.vendor == catalog.GOOGLE_TPU for p in pools_of(checked["pools"])):
        checker.fail("pools", "no TPU pool: the JobSet controller is installed for TPU slices")
    return checked


class TpuJobSet(pulumi.ComponentResource, metaclass=KeywordArgs):
    """The JobSet controller (pinned chart, its ``jobset.x-k8s.io/v1alpha2`` CRD) in a ``restricted`` namespace
    whose ingress admits only the API server's webhook calls.

    Attributes: ``release`` (depend on it before creating JobSets), ``namespace``, ``network_policies``.
    """

    release: k8s.helm.v3.Release
    namespace: str

    def __init__(self, name: str, args: TpuJobSetArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:TpuJobSet", name, {}, opts)
        self.namespace = args.get("namespace") or tpu_objects.JOBSET_NAMESPACE
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", **namespace_security.namespace_body(self.namespace, JOBSET_POD_SECURITY),
            opts=child_opts(self, opts))
        in_namespace = child_opts(self, opts, depends_on=[namespace])
        self.network_policies = [
            k8s.networking.v1.NetworkPolicy(f"{name}-{body['metadata']['name']}", metadata=body["metadata"],
                                            spec=body["spec"], opts=in_namespace)
            for body in tpu_objects.network_policies(self.namespace)
        ]
        self.release = helm_release(f"{name}-release", JOBSET, tpu_objects.RELEASE_NAME, self.namespace,
                                    tpu_objects.jobset_values(),
                                    child_opts(self, opts, depends_on=[namespace, *self.network_policies]),
                                    create_namespace=False)
        self.register_outputs({"namespace": self.namespace})


class TpuSliceJobArgs(TypedDict, total=False):
    """Arguments of `TpuSliceJob`."""

    pool: Required[GpuPoolSpec]
    """A GKE TPU pool (its spec carries the TPU type and topology labels `GkeCluster` gives TPU pools)."""
    namespace: Required[str]
    """The team namespace the JobSet runs in."""
    local_queue: Required[str]
    """The Kueue LocalQueue of that namespace that admits it."""
    tpu_quota: Required[int]
    """The team's ``google.com/tpu`` quota: it must hold one slice."""


def checked_slice_args(name: str, args: TpuSliceJobArgs) -> dict:
    """``args`` checked: a TPU pool with a topology, and a quota that admits one whole slice."""
    checker = Args("TpuSliceJob", name)
    checked = checker.check(args, TpuSliceJobArgs, {"namespace": DNS_LABEL, "local_queue": DNS_LABEL})
    pool = pools_of([checked["pool"]])[0]
    try:
        chips = catalog.tpu_chips(tpu_objects.tpu_topology(pool))
    except ValueError as err:
        checker.fail("pool", str(err))
    if checked["tpu_quota"] < chips:
        checker.fail("tpu_quota", f"a slice of pool '{pool.name}' is {chips} chips; a quota of "
                                  f"{checked['tpu_quota']} would never admit it")
    return checked


class TpuSliceJob(pulumi.ComponentResource, metaclass=KeywordArgs):
    """An example multi-host TPU JobSet on one slice of a TPU pool (`tpu_objects.multihost_jobset`), queued through
    Kueue; create it after the JobSet release, the team namespace and its LocalQueue."""

    def __init__(self, name: str, args: TpuSliceJobArgs, opts: Optional[pulumi.ResourceOptions] = None):
        args = checked_slice_args(name, args)  # before anything is registered
        super().__init__("gpuplatform:index:TpuSliceJob", name, {}, opts)
        pool = pools_of([args["pool"]])[0]
        body = tpu_objects.multihost_jobset(pool, args["namespace"], args["local_queue"], TPU_EXAMPLE_IMAGE.reference)
        # KubernetesObject is Python-only (no cross-language schema form), as in SchedulingPolicy.
        self.jobset: KubernetesObject = KubernetesObject(f"{name}-jobset", body, opts=child_opts(self, opts))
        self.register_outputs({"jobset_name": body["metadata"]["name"]})
