"""`CalicoPolicyEngine`: Calico in policy-only mode beside a cloud CNI that does not enforce NetworkPolicies.

A NetworkPolicy does nothing unless something on each node enforces it. OKE's CNIs (OCI VCN-native pod networking
and flannel) implement none: Oracle's "Example: Installing Calico and Setting Up Network Policies"
(docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengsettingupcalico.htm) says neither supports NetworkPolicy
resources and documents open source Calico, policy-only, "alongside the OCI VCN-Native Pod Networking CNI plugin".
OKE offers no cluster add-on for it (contengconfiguringclusteraddons-configurationarguments.htm lists none), so the
platform installs it the way that page does, from Calico's ``calico-policy-only.yaml`` (Kubernetes API datastore),
with Oracle's changes for VCN-native pod networking:

- no ``initContainers`` on ``calico-node`` (the OCI CNI owns ``/opt/cni/bin`` and ``/etc/cni/net.d``; Calico must
  not install its CNI plugin), no ``cni-bin-dir``/``cni-net-dir``/``cni-log-dir`` volumes or mounts;
- no Typha (``FELIX_TYPHAK8SSERVICENAME`` removed; so neither its Deployment, Service and PDB nor the
  ``calico-config`` ConfigMap that only fed Typha and the CNI installer are created) and no
  ``kubernetes-services-endpoint`` ``envFrom``;
- ``FELIX_INTERFACEPREFIX=<the CNI's host interface prefix>`` (``oci``), ``NO_DEFAULT_POOLS=true``,
  ``FELIX_CHAININSERTMODE=Append``, ``FELIX_IPTABLESMANGLEALLOWACTION=Return``.

Oracle adds ``FELIX_IPTABLESBACKEND=NFT`` for Oracle Linux 8 nodes only; a stack mixes Oracle Linux GPU images
and Ubuntu RDMA images, so Felix keeps its own default, ``auto``, which detects the backend per node (Felix
``IptablesBackend`` ``oneof(legacy,nft,auto);auto`` in calico v3.31.3 felix/config/config_params.go). Without the
``calico-cni-plugin`` account (``CALICO_MANAGE_CNI`` is false in the policy-only manifest, so calico-node never mints
its token) the rest is the manifest as published: RBAC, the calico-node DaemonSet, calico-kube-controllers and
its PodDisruptionBudget; the CRDs come from the same release (`versions.CALICO_CRDS_MANIFEST`). The ``ebpf-bootstrap``
init container that v3.31 adds goes with the other init containers (the iptables data plane does not use it),
and with it the ``sys-fs`` and ``nodeproc`` volumes only it mounted.

The release is v3.31.3 (`versions`: the newest with published image digests). Its policy-only manifest differs from
v3.31.7's, for what is rendered here, only in the image tags and in the read-only ``/sys/kernel/security`` mount
v3.31.7 adds to ``calico-node`` (Felix's kernel lockdown check for its BPF programs, which 3.31.3 does not make);
RBAC, environment, probes and the other volumes are the same, and the Felix parameters set here (interface prefix
``iface-list`` of ``[a-zA-Z0-9_-]{1,15}`` names, case-insensitive ``oneof`` chain insert mode and mangle action)
parse the same way at both.

No cloud SDK here: the cloud layer says which prefix its CNI uses (`ClusterHandle.outputs`).
"""

from collections.abc import Sequence
from typing import Any, Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import Required

from .. import labels, versions
from ..component_args import Args, KeywordArgs, matching
from ..kubernetes_base.common import all_pool_tolerations, check_pool_set, child_opts, metadata, pools_of, snake_case
from ..pools import GpuPoolSpec

NAMESPACE = "kube-system"
NODE = "calico-node"
KUBE_CONTROLLERS = "calico-kube-controllers"
TIER_GETTER = "calico-tier-getter"
RBAC_GROUP = "rbac.authorization.k8s.io"
INTERFACE_PREFIX = matching(r"[a-z][a-z0-9]{0,14}", "a host interface name prefix such as oci")


def _rule(groups: Sequence[str], resources: Sequence[str], verbs: Sequence[str],
          names: Sequence[str] = ()) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
    if names:
        rule["resourceNames"] = list(names)
    return rule


_CALICO = "crd.projectcalico.org"
_WATCH = ("get", "list", "watch")

KUBE_CONTROLLERS_RULES = [
    _rule([""], ["nodes"], ["watch", "list", "get"]),
    _rule([""], ["pods"], _WATCH),
    _rule([""], ["namespaces"], _WATCH),
    _rule([""], ["services", "services/status"], ["get", "list", "update", "watch"]),
    _rule([_CALICO], ["ipreservations"], ["list"]),
    _rule([_CALICO], ["blockaffinities", "ipamblocks", "ipamhandles", "ipamconfigs", "tiers"],
          ["get", "list", "create", "update", "delete", "watch"]),
    _rule([_CALICO], ["ippools"], ["list", "watch"]),
    _rule([_CALICO], ["hostendpoints"], ["get", "list", "create", "update", "delete", "watch"]),
    _rule([_CALICO], ["clusterinformations"], ["get", "list", "create", "update", "watch"]),
    _rule([_CALICO], ["kubecontrollersconfigurations"], ["get", "list", "create", "update", "watch"]),
]
"""ClusterRole ``calico-kube-controllers`` of calico v3.31.3 (templates/calico-kube-controllers-rbac.yaml)."""

NODE_RULES = [
    _rule([""], ["serviceaccounts/token"], ["create"], names=["calico-cni-plugin"]),
    _rule([""], ["pods", "nodes", "namespaces"], ["get"]),
    _rule(["discovery.k8s.io"], ["endpointslices"], ["watch", "list"]),
    _rule([""], ["endpoints", "services"], ["watch", "list", "get"]),
    _rule([""], ["configmaps"], ["get"]),
    _rule([""], ["nodes/status"], ["patch", "update"]),
    _rule(["networking.k8s.io"], ["networkpolicies"], ["watch", "list"]),
    _rule(["policy.networking.k8s.io"], ["adminnetworkpolicies", "baselineadminnetworkpolicies"], ["watch", "list"]),
    _rule([""], ["pods", "namespaces", "serviceaccounts"], ["list", "watch"]),
    _rule([""], ["pods/status"], ["patch"]),
    _rule([_CALICO], [
        "globalfelixconfigs", "felixconfigurations", "bgppeers", "bgpfilters", "globalbgpconfigs",
        "bgpconfigurations", "ippools", "ipreservations", "ipamblocks", "globalnetworkpolicies",
        "stagedglobalnetworkpolicies", "networkpolicies", "stagednetworkpolicies", "stagedkubernetesnetworkpolicies",
        "globalnetworksets", "networksets", "clusterinformations", "hostendpoints", "blockaffinities",
        "caliconodestatuses", "tiers",
    ], list(_WATCH)),
    _rule([_CALICO], ["tiers"], ["create"]),
    _rule([_CALICO], ["ippools", "felixconfigurations", "clusterinformations"], ["create", "update"]),
    _rule([_CALICO], ["caliconodestatuses"], ["update"]),
    _rule([""], ["nodes"], list(_WATCH)),
    _rule([_CALICO], ["bgpconfigurations", "bgppeers"], ["create", "update"]),
]
"""ClusterRole ``calico-node`` of calico v3.31.3 (templates/calico-node-rbac.yaml), unchanged: the token rule names
the CNI plugin's account, which calico-node only uses when it manages Calico's CNI (it does not here)."""

TIER_GETTER_RULES = [_rule(["projectcalico.org"], ["tiers"], ["get"])]
"""Lets kube-controller-manager read Calico tiers when it garbage-collects tiered policies (templates/tier-getter)."""


def felix_env(interface_prefix: str) -> list[dict[str, Any]]:
    """``calico-node``'s environment: the policy-only manifest's, less Typha, plus Oracle's VCN-native settings."""
    return [
        {"name": "DATASTORE_TYPE", "value": "kubernetes"},
        {"name": "USE_POD_CIDR", "value": "true"},
        {"name": "WAIT_FOR_DATASTORE", "value": "true"},
        {"name": "NODENAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "CALICO_NETWORKING_BACKEND", "value": "none"},  # no BGP, no routes: the cloud CNI routes
        {"name": "CLUSTER_TYPE", "value": "k8s"},
        {"name": "CALICO_MANAGE_CNI", "value": "false"},
        {"name": "CALICO_DISABLE_FILE_LOGGING", "value": "true"},
        {"name": "FELIX_DEFAULTENDPOINTTOHOSTACTION", "value": "ACCEPT"},
        {"name": "FELIX_IPV6SUPPORT", "value": "false"},
        {"name": "FELIX_HEALTHENABLED", "value": "true"},
        # Oracle's settings for VCN-native pod networking: Felix treats the CNI's host-side interfaces as workload
        # endpoints, creates no IP pool, appends its chains after the CNI's and returns (not accepts) in mangle.
        {"name": "FELIX_INTERFACEPREFIX", "value": interface_prefix},
        {"name": "NO_DEFAULT_POOLS", "value": "true"},
        {"name": "FELIX_CHAININSERTMODE", "value": "Append"},
        {"name": "FELIX_IPTABLESMANGLEALLOWACTION", "value": "Return"},
    ]


def _host_path(name: str, path: str, kind: Optional[str] = None) -> dict[str, Any]:
    host: dict[str, Any] = {"path": path}
    if kind:
        host["type"] = kind
    return {"name": name, "hostPath": host}


def node_daemonset(interface_prefix: str) -> dict[str, Any]:
    """The ``calico-node`` DaemonSet: Felix on every node (it tolerates every taint, GPU nodes included)."""
    selector = {labels.APP_NAME_LABEL: NODE}
    container = {
        "name": NODE,
        "image": versions.CALICO_NODE_IMAGE.reference,
        "imagePullPolicy": "IfNotPresent",
        "env": felix_env(interface_prefix),
        "securityContext": {"privileged": True},
        "resources": {"requests": {"cpu": "250m"}},
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/calico-node", "-shutdown"]}}},
        "livenessProbe": {"exec": {"command": ["/bin/calico-node", "-felix-live"]}, "periodSeconds": 10,
                          "initialDelaySeconds": 10, "failureThreshold": 6, "timeoutSeconds": 10},
        "readinessProbe": {"exec": {"command": ["/bin/calico-node", "-felix-ready"]}, "periodSeconds": 10,
                           "timeoutSeconds": 10},
        "volumeMounts": [
            {"mountPath": "/lib/modules", "name": "lib-modules", "readOnly": True},
            {"mountPath": "/run/xtables.lock", "name": "xtables-lock", "readOnly": False},
            {"mountPath": "/var/run/calico", "name": "var-run-calico", "readOnly": False},
            {"mountPath": "/var/lib/calico", "name": "var-lib-calico", "readOnly": False},
            {"mountPath": "/var/run/nodeagent", "name": "policysync"},
            {"mountPath": "/sys/fs/bpf", "name": "bpffs"},
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(NODE, NAMESPACE, selector),
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": dict(selector)},
                "spec": {
                    "nodeSelector": {labels.OS_LABEL: "linux"},
                    "hostNetwork": True,
                    # Every node, whatever its taints: an unenforced node is a hole in every policy.
                    "tolerations": [{"effect": "NoSchedule", "operator": "Exists"},
                                    {"effect": "NoExecute", "operator": "Exists"}],
                    "serviceAccountName": NODE,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "terminationGracePeriodSeconds": 0,
                    "priorityClassName": "system-node-critical",
                    "containers": [container],
                    "volumes": [
                        _host_path("lib-modules", "/lib/modules"),
                        _host_path("var-run-calico", "/var/run/calico", "DirectoryOrCreate"),
                        _host_path("var-lib-calico", "/var/lib/calico", "DirectoryOrCreate"),
                        _host_path("xtables-lock", "/run/xtables.lock", "FileOrCreate"),
                        _host_path("bpffs", "/sys/fs/bpf", "Directory"),
                        _host_path("policysync", "/var/run/nodeagent", "DirectoryOrCreate"),
                    ],
                },
            },
        },
    }


def kube_controllers_deployment(tolerations: list[dict]) -> dict[str, Any]:
    """``calico-kube-controllers`` (one instance: it cannot run more). ``tolerations``: OKE clusters of this
    platform may have GPU nodes only, and an unschedulable pod would hold ``pulumi up``."""
    selector = {labels.APP_NAME_LABEL: KUBE_CONTROLLERS}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(KUBE_CONTROLLERS, NAMESPACE, selector),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(selector)},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": dict(selector)},
                "spec": {
                    # The pinned digest is the linux/amd64 image (see versions.CALICO_KUBE_CONTROLLERS_IMAGE).
                    "nodeSelector": {labels.OS_LABEL: "linux", labels.ARCH_LABEL: "amd64"},
                    "tolerations": list(tolerations),
                    "serviceAccountName": KUBE_CONTROLLERS,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "priorityClassName": "system-cluster-critical",
                    "containers": [{
                        "name": KUBE_CONTROLLERS,
                        "image": versions.CALICO_KUBE_CONTROLLERS_IMAGE.reference,
                        "imagePullPolicy": "IfNotPresent",
                        "env": [{"name": "ENABLED_CONTROLLERS", "value": "node,loadbalancer"},
                                {"name": "DATASTORE_TYPE", "value": "kubernetes"}],
                        "livenessProbe": {"exec": {"command": ["/usr/bin/check-status", "-l"]}, "periodSeconds": 10,
                                          "initialDelaySeconds": 10, "failureThreshold": 6, "timeoutSeconds": 10},
                        "readinessProbe": {"exec": {"command": ["/usr/bin/check-status", "-r"]},
                                           "periodSeconds": 10},
                        "securityContext": {"runAsNonRoot": True},
                    }],
                },
            },
        },
    }


def _binding(name: str, subject: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": metadata(name),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name}, "subjects": [subject]}


def _account(name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}


def calico_objects(interface_prefix: str, tolerations: Sequence[dict] = ()) -> list[dict[str, Any]]:
    """Every object of the policy-only install except the CRDs, in the order they are applied."""
    controllers_selector = {labels.APP_NAME_LABEL: KUBE_CONTROLLERS}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(KUBE_CONTROLLERS, NAMESPACE)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(NODE, NAMESPACE)},
        {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": metadata(KUBE_CONTROLLERS),
         "rules": KUBE_CONTROLLERS_RULES},
        {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": metadata(NODE), "rules": NODE_RULES},
        {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": metadata(TIER_GETTER),
         "rules": TIER_GETTER_RULES},
        _binding(KUBE_CONTROLLERS, _account(KUBE_CONTROLLERS)),
        _binding(NODE, _account(NODE)),
        _binding(TIER_GETTER, {"apiGroup": RBAC_GROUP, "kind": "User", "name": "system:kube-controller-manager"}),
        node_daemonset(interface_prefix),
        kube_controllers_deployment(list(tolerations)),
        # Lets the cluster autoscaler evict the controllers when it empties a node.
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": metadata(KUBE_CONTROLLERS, NAMESPACE, controllers_selector),
         "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(controllers_selector)}}},
    ]


# ---------------------------------------------------------------------------------------------------------
# Component


class CalicoPolicyEngineArgs(TypedDict, total=False):
    """Arguments of `CalicoPolicyEngine`."""

    interface_prefix: Required[str]
    """Prefix of the host-side interfaces the cluster's CNI gives pods (Felix ``interfacePrefix``): ``oci`` for
    OKE's VCN-native pod networking (Oracle's Calico guide)."""
    pools: list[GpuPoolSpec]
    """GPU pools whose taints ``calico-kube-controllers`` tolerates, for clusters whose only nodes are GPU nodes
    (calico-node tolerates every taint already). Default none."""


_KINDS: dict[str, Any] = {
    "ServiceAccount": k8s.core.v1.ServiceAccount,
    "ClusterRole": k8s.rbac.v1.ClusterRole,
    "ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding,
    "DaemonSet": k8s.apps.v1.DaemonSet,
    "Deployment": k8s.apps.v1.Deployment,
    "PodDisruptionBudget": k8s.policy.v1.PodDisruptionBudget,
}


class CalicoPolicyEngine(pulumi.ComponentResource, metaclass=KeywordArgs):
    """Calico (open source, policy-only) enforcing Kubernetes NetworkPolicies beside the cloud's own CNI.

    Attributes: ``crds`` (Calico's CRDs), ``daemonset`` (calico-node: depend on it before relying on policies).
    """

    crds: k8s.yaml.v2.ConfigFile
    daemonset: k8s.apps.v1.DaemonSet

    def __init__(self, name: str, args: CalicoPolicyEngineArgs, opts: Optional[pulumi.ResourceOptions] = None):
        checker = Args("CalicoPolicyEngine", name)
        args = checker.check(args, CalicoPolicyEngineArgs, {"interface_prefix": INTERFACE_PREFIX})  # type: ignore
        check_pool_set(checker, args.get("pools", []))
        super().__init__("gpuplatform:index:CalicoPolicyEngine", name, {}, opts)
        tolerations = all_pool_tolerations(pools_of(args.get("pools", [])))
        # Calico's CRDs as released, fetched by the provider at deploy time (thousands of lines of schema).
        self.crds = k8s.yaml.v2.ConfigFile(f"{name}-crds", file=versions.CALICO_CRDS_MANIFEST,
                                           opts=child_opts(self, opts))
        registered: dict[str, Any] = {}
        for body in calico_objects(args["interface_prefix"], tolerations):
            kind, object_name = body["kind"], body["metadata"]["name"]
            kwargs = {snake_case(k): v for k, v in body.items() if k not in ("apiVersion", "kind")}
            # Accounts and roles before the pods that use them; the pods after the CRDs they read.
            after = [self.crds, *registered.values()] if kind in ("DaemonSet", "Deployment") else []
            registered[f"{kind}/{object_name}"] = _KINDS[kind](
                f"{name}-{snake_case(kind).replace('_', '-')}-{object_name}", **kwargs,
                opts=child_opts(self, opts, depends_on=after))
        self.daemonset = registered[f"DaemonSet/{NODE}"]
        self.register_outputs({})
