"""The one label and taint scheme of the platform.

Every node label key, taint and well-known annotation the platform sets or reads lives here, so a pool, a
Kueue flavor, a workload's nodeSelector and a dashboard all agree by construction.
"""

from dataclasses import dataclass

DOMAIN = "gpu-platform.io"

# Our own node labels, set on every GPU pool by the cloud layer.
POOL_LABEL = f"{DOMAIN}/pool"
"""Name of the GPU pool a node belongs to; the key Kueue flavors and workloads select on."""
ACCELERATOR_LABEL = f"{DOMAIN}/accelerator"
"""GPU model on the node, lower-case (``h100``, ``l4``...)."""
RDMA_LABEL = f"{DOMAIN}/rdma"
"""RDMA fabric of the node (``efa``, ``infiniband``, ``roce``, ``gpudirect-tcpx``, ``gpudirect-tcpxo``,
``gpudirect-rdma``); set only on RDMA pools."""
SHARING_LABEL = f"{DOMAIN}/gpu-sharing"
"""GPU sharing mode of the pool (``exclusive``, ``time-slicing``, ``mps``, ``mig``, ``hami``). Pods that want
HAMi's memory-level GPU sharing carry it too (``hami``): HAMi's webhook only mutates pods with that label."""
GPU_ALLOCATION_LABEL = f"{DOMAIN}/gpu-allocation"
"""Set to ``dra`` on pools whose GPUs NVIDIA's DRA driver allocates (ResourceClaims), for people and selectors to
tell them apart; absent on device-plugin pools."""
DRA_KUBELET_PLUGIN_LABEL = "nvidia.com/dra-kubelet-plugin"
"""``true`` on DRA pools' nodes: the DRA driver's kubelet plugin selects it, and the GPU Operator's driver manager
flips it to evict that plugin before a driver upgrade (NVIDIA's DRA install guide names this label)."""
NVLINK_CLIQUE_LABEL = "nvidia.com/gpu.clique"
"""Set by GPU Feature Discovery on nodes of a multi-node NVLink domain: ``<cluster UUID>.<clique id>``, one value
per NVLink partition of a rack. Kueue's topology groups a ComputeDomain's pods by it."""
TEAM_LABEL = f"{DOMAIN}/team"
"""Team that owns a namespace or workload."""
OPT_IN_LABEL = f"{DOMAIN}/optimize"
"""A workload labelled ``true`` lets the GPU optimizer act on it."""
RECOMMENDATION_ANNOTATION = f"{DOMAIN}/gpu-recommendation"
"""The optimizer's finding/recommendation (JSON) on a workload owner."""
LAST_ACTION_ANNOTATION = f"{DOMAIN}/optimizer-last-action"
"""When the optimizer last changed a workload owner (RFC 3339); enforces the cooldown."""
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gpu-platform"
APP_NAME_LABEL = "app.kubernetes.io/name"
APP_INSTANCE_LABEL = "app.kubernetes.io/instance"
"""Instance of an application: the Prometheus Operator sets it to the Prometheus/Alertmanager object's name on their
pods, the Grafana chart to the Helm release's name."""

# Monitoring.
GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
"""ConfigMaps carrying this label (value ``"1"``) are loaded by Grafana's dashboard sidecar."""
GRAFANA_FOLDER_ANNOTATION = "grafana_folder"
"""Annotation on a dashboard ConfigMap naming the Grafana folder the sidecar files it in."""
HELM_RELEASE_LABEL = "release"
"""kube-prometheus-stack's default selector label for ServiceMonitors, PodMonitors and PrometheusRules."""

# The GPU taint: GKE's own choice, what NVIDIA's charts tolerate by default, and (on EKS) the key the
# ExtendedResourceToleration admission plugin matches to the `nvidia.com/gpu` resource.
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_VALUE = "present"
GPU_TAINT_EFFECT = "NoSchedule"

# NVIDIA labels read by the GPU Operator / device plugin.
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
"""Selects the named time-slicing/MPS config of the device plugin for a node."""
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
"""Selects the MIG partitioning the MIG manager applies to a node."""
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
"""GPU Operator: ``false`` keeps its device plugin off a node (set on EKS Bottlerocket pools, which run their own,
and on HAMi pools); the standalone device plugin chart's affinity honours it too."""

HAMI_NODE_LABEL = "gpu"
HAMI_NODE_VALUE = "on"
"""HAMi's own node label (its README: ``kubectl label nodes <node> gpu=on``; the chart's default nodeSelector of
its device plugin). Set on HAMi pools: Helm merges our nodeSelector into that default, it cannot drop it."""

# Cloud labels.
GKE_NO_DEFAULT_DEVICE_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"
"""GKE: `true` stops GKE's own device plugin so the GPU Operator's runs instead."""
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
OKE_DISABLE_GPU_DEVICE_PLUGIN_LABEL = "oci.oraclecloud.com/disable-gpu-device-plugin"
"""OKE: `true` keeps OKE's own NVIDIA device plugin off the node so the GPU Operator's or ours runs instead
(oracle-quickstart/oci-hpc-oke terraform/oke-workers.tf sets it on every GPU pool)."""
AKS_SPOT_TAINT_KEY = "kubernetes.azure.com/scalesetpriority"
AKS_SPOT_TAINT_VALUE = "spot"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"
"""Well-known node label: the node's CPU architecture (``amd64``, ``arm64``)."""
EKS_NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
"""Set by EKS on every managed node group node to the node group's name (pins controllers to the system nodes)."""
AWS_ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
"""cluster-autoscaler's AWS GPU label (cloudprovider/aws GPULabel): a node carrying it counts as a GPU node, so
the autoscaler waits for its device plugin to advertise ``nvidia.com/gpu`` instead of adding more nodes."""
KARPENTER_CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
"""Karpenter's capacity type of a node (``on-demand``, ``spot``, ``reserved``); a NodePool requirement key."""
"""Zone of a node, set by every cloud's node controller; the top level of Kueue's topology for RDMA pools."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace to its name: what NetworkPolicies and queues select namespaces by."""
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""Set by the Job controller on a Job's pods; an indexed Job's pods find rank 0 as ``<job-name>-0``."""
APP_NAME_LABEL = "app.kubernetes.io/name"

# Gateway API entry point (`kube.gateway`).
GATEWAY_ROUTES_LABEL = f"{DOMAIN}/gateway-routes"
"""A namespace labelled ``"true"`` may attach routes to the stack's Gateway (its listeners' ``allowedRoutes``)."""
APP_COMPONENT_LABEL = "app.kubernetes.io/component"
"""Component of an application: Envoy Gateway sets it to ``proxy`` on its Envoy pods."""
CONTROL_PLANE_LABEL = "control-plane"
"""Set by the Envoy Gateway chart to ``envoy-gateway`` on its controller's pods."""
CERT_MANAGER_CLUSTER_ISSUER_ANNOTATION = "cert-manager.io/cluster-issuer"
"""On a Gateway: cert-manager's gateway-shim issues each HTTPS listener's certificate from this ClusterIssuer."""

# Pod Security admission labels on every namespace the platform creates (`kube.namespace_security`).
POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
POD_SECURITY_AUDIT_LABEL = "pod-security.kubernetes.io/audit"
POD_SECURITY_WARN_LABEL = "pod-security.kubernetes.io/warn"
POD_SECURITY_REASON_ANNOTATION = f"{DOMAIN}/pod-security-reason"
"""Why a namespace enforces the Pod Security level it does (what its pods need), for whoever audits it."""

# Cluster DNS: CoreDNS/kube-dns pods in kube-system carry this label on EKS, AKS, GKE, OKE and kubeadm clusters.
KUBE_DNS_LABEL = "k8s-app"
KUBE_DNS_VALUE = "kube-dns"

# Kueue.
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
"""Pod-template annotation asking Kueue's topology-aware scheduling to place a pod set within one domain of the
named level when it fits (kueue v1beta2 PodSetPreferredTopologyAnnotation)."""
KUEUE_REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
"""Pod-template annotation: Kueue admits the pod set only within one domain of the named level (kueue v1beta2
PodSetRequiredTopologyAnnotation)."""
KUEUE_PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
"""``controllerName`` of an AdmissionCheck served by Kueue's ProvisioningRequest controller."""
KUEUE_MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
"""``controllerName`` of an AdmissionCheck served by MultiKueue (kueue v1beta2 ``MultiKueueControllerName``)."""
MULTIKUEUE_WORKER_LABEL = f"{DOMAIN}/multikueue-worker"
"""On a MultiKueue manager: the worker a MultiKueueCluster and its kubeconfig Secret stand for."""
KUEUE_PODSET_LABEL = "kueue.x-k8s.io/podset"
"""Pod label Kueue sets on the pod template of every workload it admits, with the pod set's name, when it starts the
job, and removes when it stops it (kueue@v0.19.2 pkg/constants/constants.go ``PodSetLabel``, set in
pkg/controller/jobframework/reconciler.go ``getPodSetsInfoFromStatus``)."""
# Labels the Kubernetes controllers put on the pods of long-running workloads: the Deployment controller's
# ReplicaSet hash, the StatefulSet/DaemonSet revision (kubernetes apps/v1 DefaultDeploymentUniqueLabelKey,
# ControllerRevisionHashLabelKey). Pods of batch Jobs carry neither.
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"

# GPU driver upgrades (docs/nvidia.md "Driver upgrades that wait for jobs").
DRIVER_UPGRADE_LABEL = f"{DOMAIN}/driver-upgrade"
"""Pod label: ``wait-for-completion`` asks the GPU Operator's driver upgrade to wait until the pod has finished
before it upgrades the driver of the pod's node, on clusters without Kueue (with Kueue, every job Kueue admits is
waited for). The platform's reference training pods carry it."""
DRIVER_UPGRADE_WAIT = "wait-for-completion"
GKE_PROVISIONING_REQUEST_LABEL = "autoscaling.gke.io/provisioning-request"
"""Set by GKE on the nodes it creates for a ProvisioningRequest; Kueue pins a queued job's pods to them."""

# Network-fabric topology labels the clouds put on nodes (which shapes carry them: `kube.topology_labels`).
AWS_NETWORK_NODE_LAYER_PREFIX = "topology.k8s.aws/network-node-layer-"
"""AWS cloud-controller-manager: one label per EC2 instance-topology network node, ``-1`` the broadest
(kubernetes/cloud-provider-aws pkg/providers/v1/well_known_labels.go)."""
GKE_TOPOLOGY_BLOCK_LABEL = "cloud.google.com/gce-topology-block"
GKE_TOPOLOGY_SUBBLOCK_LABEL = "cloud.google.com/gce-topology-subblock"
GKE_TOPOLOGY_HOST_LABEL = "cloud.google.com/gce-topology-host"
"""GKE (1.31+): a VM's reservation block, sub-block and host, from Compute Engine's ``physical_host``."""
OKE_RDMA_HPC_ISLAND_LABEL = "oci.oraclecloud.com/rdma.hpc_island_id"
OKE_RDMA_NETWORK_BLOCK_LABEL = "oci.oraclecloud.com/rdma.network_block_id"
OKE_RDMA_LOCAL_BLOCK_LABEL = "oci.oraclecloud.com/rdma.local_block_id"
"""OKE: RDMA locality of a bare-metal node in a cluster network (oracle-quickstart/oci-hpc-oke,
docs/using-rdma-network-locality-when-running-workloads-on-oke.md)."""
GKE_QUEUED_TAINT_KEY = "cloud.google.com/gke-queued"
"""GKE taints the nodes of a queued-provisioning pool ``cloud.google.com/gke-queued=true:NoSchedule``."""
OKE_PREEMPTIBLE_TAINT_KEY = "oci.oraclecloud.com/oke-is-preemptible"
"""OKE taints preemptible nodes with this key (NoSchedule; the value is not documented, so tolerated with
``Exists``)."""


@dataclass(frozen=True)
class Taint:
    """A Kubernetes node taint in Kubernetes' own spelling (effect ``NoSchedule``...)."""

    key: str
    """Taint key."""
    value: str
    """Taint value (may be empty)."""
    effect: str = "NoSchedule"
    """``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute``."""

    def as_string(self) -> str:
        """``key=value:Effect``: AKS ``node_taints`` and kubelet ``--register-with-taints`` form."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"

    def toleration(self) -> dict:
        """The Kubernetes toleration (camelCase, wire form) that tolerates exactly this taint."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


GPU_TAINT = Taint(GPU_TAINT_KEY, GPU_TAINT_VALUE, GPU_TAINT_EFFECT)
"""The taint of NVIDIA pools (`catalog.VENDORS` gives each accelerator vendor its taint)."""

# The taints of the other accelerator vendors' pools: the ones each vendor's or cloud's own material puts on such
# nodes, so pods and device plugins written for those nodes tolerate ours. Keys equal the resource names, like
# NVIDIA's, so Kubernetes' ExtendedResourceToleration admission plugin matches them too.
NEURON_TAINT_KEY = "aws.amazon.com/neuron"
NEURON_TAINT = Taint(NEURON_TAINT_KEY, "true", "NoSchedule")
"""AWS Inferentia/Trainium nodes: ``aws.amazon.com/neuron=true:NoSchedule``, the taint of the Neuron NodePools in the
EKS Workshop (eksworkshop.com docs/aiml/chatbot/nodepool), AWS's Karpenter blueprints (neuron-workload) and the EKS
Auto Mode samples."""
AMD_GPU_TAINT_KEY = "amd.com/gpu"
AMD_GPU_TAINT = Taint(AMD_GPU_TAINT_KEY, "present", "NoSchedule")
"""AMD Instinct nodes: ``amd.com/gpu=present:NoSchedule``, what Oracle's OKE MI300X guide
(oracle-quickstart/oci-hpc-oke) taints them with, mirroring NVIDIA's ``present``."""
TPU_TAINT_KEY = "google.com/tpu"
TPU_TAINT = Taint(TPU_TAINT_KEY, "present", "NoSchedule")
"""Google Cloud TPU nodes: GKE itself taints TPU slice nodes ``google.com/tpu=present:NoSchedule`` (GKE docs,
"TPUs in GKE", how TPUs work)."""
AKS_SPOT_TAINT = Taint(AKS_SPOT_TAINT_KEY, AKS_SPOT_TAINT_VALUE, "NoSchedule")

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# Cloud API enum spellings of the taint effects (EKS and GKE use the same enum).
EFFECT_TO_API_ENUM = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}


def pool_node_labels(
    pool_name: str, accelerator: str, sharing_mode: str, rdma_fabric: str | None, gpu_allocation: str = "device-plugin"
) -> dict[str, str]:
    """The platform's labels for every node of a GPU pool (user labels are merged on top by the caller)."""
    labels = {POOL_LABEL: pool_name, ACCELERATOR_LABEL: accelerator, SHARING_LABEL: sharing_mode}
    if gpu_allocation == "dra":
        # NVIDIA's DRA driver hands these GPUs out; the device plugin (operator operand or chart) stays off, so a GPU
        # is never advertised both ways, and the DRA driver's kubelet plugin selects exactly these nodes.
        labels[GPU_ALLOCATION_LABEL] = "dra"
        labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
        labels[DRA_KUBELET_PLUGIN_LABEL] = "true"
    if rdma_fabric:
        labels[RDMA_LABEL] = rdma_fabric
    if sharing_mode in ("time-slicing", "mps"):
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool_name
    if sharing_mode == "hami":
        # HAMi's device plugin owns nvidia.com/gpu on these nodes; NVIDIA's (operator or chart) stays off.
        labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
        labels[HAMI_NODE_LABEL] = HAMI_NODE_VALUE
    return labels


# Node health (issue 21): what the health checks report on a node and what remediation marks it with.
HEALTH_CHECK_LABEL = f"{DOMAIN}/health-check"
"""``passed`` or ``failed``: the last active health check of the node (DCGM diagnostics, single-node all-reduce),
set by ``gpu-platform health-report``. The platform's workloads avoid nodes labelled ``failed`` (node affinity)."""
HEALTH_CHECK_DETAIL_ANNOTATION = f"{DOMAIN}/health-check-detail"
"""One line: when the last active check ran and what it found (``2026-11-25T03:00:00Z dcgm-diag level 2: pass``)."""
HEALTH_CHECK_CONDITION = "GpuHealthCheckFailed"
"""Node condition the active check sets: ``True`` when the node failed its last check (node-problem-detector's
convention: a condition that is True is a problem)."""
QUARANTINE_TAINT_KEY = f"{DOMAIN}/quarantined"
"""Taint (``NoSchedule``, value: the reason's condition type) remediation puts on a node it quarantines, beside
cordoning it; every scheduler (Kueue's topology-aware one included) keeps new pods off it."""
QUARANTINED_AT_ANNOTATION = f"{DOMAIN}/quarantined-at"
"""When remediation quarantined the node (RFC 3339): the cool-down and the release after a passing check read it."""
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
"""The taint Kubernetes puts on a cordoned node: the active health check tolerates it, so that a quarantined
(cordoned) node can be checked again and released."""


# Storage (issue 23): what pods that mount the stack's buckets carry for their cloud's CSI driver and identity.
GKE_GCSFUSE_VOLUMES_ANNOTATION = "gke-gcsfuse/volumes"
"""``"true"`` on a pod that mounts a Cloud Storage FUSE volume: GKE's webhook injects the gcsfuse sidecar (GKE "Access
Cloud Storage buckets with the Cloud Storage FUSE CSI driver")."""
AZURE_WORKLOAD_IDENTITY_USE_LABEL = "azure.workload.identity/use"
"""``"true"`` on a pod whose ServiceAccount's federated token it should get (Azure Workload Identity's webhook)."""
AZURE_WORKLOAD_IDENTITY_CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
"""ServiceAccount annotation: the client id of the user-assigned managed identity its tokens are exchanged for."""
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
"""The kubelet's annotation on the mirror pod of a static pod (kubernetes ``pkg/kubelet/types/pod_update.go``,
``ConfigMirrorAnnotationKey``): remediation's drain never evicts such pods, like ``kubectl drain``."""
VERIFY_RUN_LABEL = f"{DOMAIN}/verify-run"
"""On every object ``gpu-platform verify`` creates (its namespace, pods, Jobs, Services, ConfigMaps), valued with the
run's id: what the run deletes at its end, and what ``kubectl delete ... -l gpu-platform.io/verify-run`` finds if a
run was killed before it could."""
