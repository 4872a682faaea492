"""Accepted means used (issue 38 item 6): every declared input of a component, changed from one sample value to
another, changes the resources the component registers, or one of the two values is refused in one line.

The table holds, per component, a baseline and one pair of values per input (with what else the input needs given
in both runs); a component listed here must list every input its args TypedDict declares, so an input added later
without a row fails `test_every_input_of_a_tabled_component_has_a_row`. A storage component's table also builds the
`DataPlaneStorage` a program mounts it with (`Table.compose`): what it registers from the component counts too. An
output counts by its value, a secret one included (a MultiKueue worker's kubeconfig)."""

import inspect
import json
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import pulumi
import pytest
from conftest import planned_stack

from gpu_platform import provider, versions
from gpu_platform.component_args import type_hints
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool, pool_args
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.testing import run_program, sample_kubeconfig

L4 = GpuPool("l4", "aws", "g6.12xlarge", "l4", 4, 24, 0, 3)
L4_SHARED = GpuPool("l4", "aws", "g6.12xlarge", "l4", 4, 24, 0, 3, sharing=Sharing("time-slicing", 4))
MIG = GpuPool("mig", "aws", "p5.48xlarge", "h100", 8, 80, 0, 2, sharing=Sharing("mig", 1, "1g.10gb"))
EFA = GpuPool("train", "aws", "p5.48xlarge", "h100", 8, 80, 2, 2, rdma_fabric="efa", rdma_interfaces=32)
AZURE = GpuPool("a100", "azure", "Standard_NC24ads_A100_v4", "a100-80gb", 1, 80, 0, 2)
AZURE_IB = GpuPool("h100", "azure", "Standard_ND96isr_H100_v5", "h100", 8, 80, 2, 2, rdma_fabric="infiniband",
                   rdma_interfaces=8)
DRA = GpuPool("h100", "existing", "", "h100", 8, 80, 2, 2, gpu_allocation="dra")
EXISTING = GpuPool("a100", "existing", "", "a100-80gb", 8, 80, 2, 2)
TPU = GpuPool("train", "gcp", "ct6e-standard-4t", "tpu-v6e", 4, 32, 4, 4, user_labels=(
    ("cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice"), ("cloud.google.com/gke-tpu-topology", "4x4")))
TPU_HOST = GpuPool("infer", "gcp", "ct6e-standard-4t", "tpu-v6e", 4, 32, 0, 2, user_labels=(
    ("cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice"), ("cloud.google.com/gke-tpu-topology", "2x2")))
INF2 = gpu_pool("aws", {"name": "inf2", "instanceType": "inf2.24xlarge", "maxNodes": 2})
MI300X = gpu_pool("azure", {"name": "mi300x", "instanceType": "Standard_ND96isr_MI300X_v5", "maxNodes": 2})
GKE_POOL = GpuPool("l4", "gcp", "g2-standard-48", "l4", 4, 24, 0, 3)
PROMETHEUS = "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"
LLM_POOL = GpuPool("l4", "aws", "g6.2xlarge", "l4", 1, 24, 1, 4, vcpus_per_node=8, memory_gib_per_node=32)
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
EFA_NODES = {"pool": EFA.spec(), "vpc_id": "vpc-0123456789abcdef0",
             "cluster_security_group_id": "sg-0123456789abcdef0"}
OCI_COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
OKE_POOL = {"node_pool_id": "ocid1.nodepool.oc1.iad.aaaa", "min_nodes": 0, "max_nodes": 2}
AZURE_SUBNET = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"
                "Microsoft.Network/virtualNetworks/vnet/subnets/nodes")
OKE_PLAIN = {"cluster_id": "ocid1.cluster.oc1.iad.aaaaaaaacluster", "compartment_id": OCI_COMPARTMENT,
             "kubernetes_version": "v1.34.1", "worker_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaaworkers",
             "pod_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaapods", "availability_domains": ["Uocm:US-ASHBURN-AD-1"]}
A10 = gpu_pool("oci", {"name": "a10", "instanceType": "VM.GPU.A10.1", "maxNodes": 3})
OCI_H100 = GpuPool("h100", "oci", "BM.GPU.H100.8", "h100", 8, 80, 2, 2, rdma_fabric="roce", rdma_interfaces=16)
GCP_R = "us-central1"
G2 = gpu_pool("gcp", {"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 4})
A2_MIG = gpu_pool("gcp", {"name": "a100", "instanceType": "a2-highgpu-1g", "maxNodes": 2,
                          "sharing": {"mode": "mig", "profile": "1g.5gb"}})
V6E = gpu_pool("gcp", {"name": "v6e", "instanceType": "ct6e-standard-4t", "minNodes": 4, "maxNodes": 4})
KARPENTER_POOL = {"pool": L4.spec(), "subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1"], "nodes": 3}
OKE_VCN = {"vcn_id": "ocid1.vcn.oc1.iad.aaaaaaaaone", "endpoint_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaaendpoint",
           "worker_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaaworkers",
           "pod_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaapods",
           "load_balancer_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaalbs", "vcn_cidr": None}
EKS = {"cluster_name": "gpu", "region": "us-west-2", "kubernetes_version": "1.34",
       "addon_versions": dict(versions.EKS_ADDONS["1.34"]), "availability_zones": ["us-west-2a", "us-west-2b"]}
EKS_VPC = {"availability_zones": None, "private_subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
           "vpc_id": "vpc-0123456789abcdef0"}
EKS_POOL = pool_args("aws", {"name": "l4", "instanceType": "g6.xlarge", "maxNodes": 3})
AKS_POOL = pool_args("azure", {"name": "a100", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 3})
AKS_IB_POOL = pool_args("azure", {"name": "h100", "instanceType": "Standard_ND96isr_H100_v5", "minNodes": 2,
                                  "maxNodes": 2, "rdma": True})
GKE_NET = {"network": "vpc-one", "subnetwork": "nodes-one"}
GKE_ENTRY = pool_args("gcp", {"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 4})
GKE_GPU_VPC = {"key": "vpc1", "mtu": 8244,
               "subnets": [{"name": "vpc1", "cidr": "192.168.0.0/21", "device_mode": "NetDevice"}]}
ROUTE = {"gateway_name": "inference", "gateway_namespace": "gateway", "section_name": "http",
         "implementation": "envoy-gateway"}
GKE = {"cloud": "gcp", "class_name": "gke-l7-rilb", "proxy_source_ranges": ["10.9.0.0/23"]}
TLS = {"hostname": "chat.example.com", "cluster_issuer": "letsencrypt"}
ACME = {"email": "ops@example.com", "gateway_name": "inference", "gateway_namespace": "gateway"}
TARGET = {"namespace": "ml", "kind": "Job", "name": "reference-training", "api_version": "batch/v1"}
HPA = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
       "metadata": {"name": "sentiment", "namespace": "inference"},
       "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sentiment"},
                "minReplicas": 1, "maxReplicas": 4,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                    "type": "Utilization", "averageUtilization": 60}}}]}}

HPA_ON_TARGET = {**HPA, "metadata": {"name": "reference-training", "namespace": "ml"},
                 "spec": {**HPA["spec"], "scaleTargetRef": {"apiVersion": "batch/v1", "kind": "Job",
                                                            "name": "reference-training"}}}


# The storage components: what a program gives them from its cluster component, and what they give
# `DataPlaneStorage` (`compose`: a claim on the file system, the buckets' claims in a granted namespace).
FSX = {"cluster_name": "gpu", "kubernetes_version": "1.34", "vpc_id": "vpc-0123456789abcdef0",
       "subnet_id": "subnet-0aaaaaaaaaaaaaaa1", "node_security_group_id": "sg-0123456789abcdef0", "size_gib": 2400}
S3 = {"name": "datasets", "bucket": "acme-datasets"}
EKS_BUCKETS = {"cluster_name": "gpu", "kubernetes_version": "1.34", "region": "us-west-2", "namespaces": ["research"],
               "buckets": [S3]}
AMLFS = {"resource_group_name": "rg", "location": "westeurope", "virtual_network_name": "vnet",
         "subnet_address_prefix": "10.225.0.0/27", "size_gib": 8192}
BLOB = {"name": "datasets", "bucket": "datasets", "storage_account": "acmedata"}
AKS_BUCKETS = {"resource_group_name": "rg", "location": "westeurope", "oidc_issuer_url": "https://oidc.example.com/a",
               "namespaces": ["research"], "buckets": [BLOB]}
GKE_LUSTRE = {"project": "acme-ml", "zone": "us-central1-c", "network": "vpc-one", "size_gib": 18000}
GKE_BUCKETS = {"project": "acme-ml", "namespaces": ["research"], "buckets": [S3]}
OKE_FSS = {"compartment_id": OCI_COMPARTMENT, "availability_domain": "Uocm:US-ASHBURN-AD-1",
           "vcn_id": "ocid1.vcn.oc1.iad.aaaaaaaaone", "subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaaworkers",
           "client_cidr": "10.0.16.0/20", "size_gib": 4096}
OKE_BUCKETS = {"compartment_id": OCI_COMPARTMENT, "cluster_id": "ocid1.cluster.oc1.iad.aaaaaaaacluster",
               "region": "us-ashburn-1", "buckets": [S3]}
WORKER_US = {"name": "us-central1", "stack": "acme/gpu-platform/mk-worker-us"}
WORKER_EU = {"name": "europe-west4", "stack": "acme/gpu-platform/mk-worker-eu"}
W1 = json.loads(sample_kubeconfig("w1", "https://w1:443"))
TWO_CONTEXTS = json.dumps({**W1, "clusters": [*W1["clusters"], {"name": "w2", "cluster": {
    "server": "https://w2:443", "certificate-authority-data": "Y2E="}}], "contexts": [*W1["contexts"], {
    "name": "w2", "context": {"cluster": "w2", "user": "w1"}}]})
"""A kubeconfig of two clusters, a context each."""
CSI = {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123456789abcdef0::research-data"}
CLAIM = {"name": "research-data", "namespace": "research", "size": "100Gi", "storage_class": "efs"}
STATIC = {"name": "research-data", "namespace": "research", "size": "100Gi", "csi": CSI,
          "directory": "teams/research/data"}
ROOT = {"root_csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123456789abcdef0::root"}, "volumes": [STATIC]}
PRE_PULL = {"pool": L4.spec(), "images": ["nvcr.io/nvidia/pytorch:26.06-py3"]}


def mounted_file_system(file_system):
    """`DataPlaneStorage` with one claim on ``file_system`` and its directories Job (a composed program's)."""
    from gpu_platform.storage.data_plane import DataPlaneStorage

    return DataPlaneStorage("c-storage", {
        **file_system.data_plane_args(),
        "volumes": [file_system.volume("research", "research-data", "100Gi", "teams/research/data")]})


def mounted_buckets(access):
    """`DataPlaneStorage` with the buckets' claims and ServiceAccount in ``research`` (a composed program's)."""
    from gpu_platform.storage.data_plane import DataPlaneStorage

    return DataPlaneStorage("c-storage", access.data_plane_args(["research"]))


class Row(NamedTuple):
    """One input: its two sample values, and what else both runs give (an input that takes effect only with
    another)."""

    key: str
    a: Any
    b: Any
    needs: dict[str, Any] = {}


class Table(NamedTuple):
    component: str
    """``module:Class`` as in `provider.COMPONENTS`."""
    base: dict[str, Any]
    rows: list[Row]
    compose: Optional[Callable[[Any], Any]] = None
    """What a program builds from the component, whose registrations count too: the storage components exist to be
    mounted, so some of their inputs (a bucket's region in its mount options, the pools the bucket driver's node
    plugin tolerates) reach only the objects `DataPlaneStorage` registers from them."""


QUEUE_TEAM = {"name": "a", "gpu_quota": 4}
TABLES = [
    # The team's own settings, field by field, are in tests/test_team_quotas.py and tests/test_team_wiring.py.
    Table("gpu_platform.scheduling.policy:SchedulingPolicy", {"pools": [L4.spec()], "teams": [QUEUE_TEAM]}, [
        Row("pools", [L4.spec()], [L4.spec(), MIG.spec()]),  # a second flavor
        Row("teams", [QUEUE_TEAM], [{**QUEUE_TEAM, "pool_quotas": {"l4": 4}, "flavor_order": ["l4"],
                                     "preemption": {"within_cluster_queue": "Never"}, "fair_sharing_weight": 2.0}]),
        Row("kueue", True, False),
        Row("per_gpu_priority_classes", False, True),
        Row("default_priority_class", None, "low-priority"),
        Row("enable_prometheus", False, True),
        Row("overcommit", False, True, {"teams": [{"name": "a", "gpu_quota": 100}]}),  # 100 GPUs on 12
        Row("admission_checks", [], ["multikueue"]),
        Row("multikueue", None, {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
                                 "workerLostTimeout": "15m"}),
    ]),
    Table("gpu_platform.scheduling.tenancy:TeamNamespace", {"team": QUEUE_TEAM, "pools": [L4.spec()]}, [
        Row("team", QUEUE_TEAM, {**QUEUE_TEAM, "group": "ml", "storage_quota": "1Ti"}),
        Row("cluster_queue", None, "a"),  # no SchedulingPolicy of the program defines it: refused
        Row("pools", [L4.spec()], [DRA.spec()]),
        Row("pod_security", "baseline", "restricted"),
        Row("monitoring_namespace", None, "monitoring"),
        Row("ingress_namespaces", ["envoy-gateway-system"], ["gateway"]),
        Row("overcommit", False, True, {"team": {"name": "a", "gpu_quota": 100}}),
    ]),
    Table("gpu_platform.accelerators.nvidia:NvidiaGpuStack", {"cloud": "aws", "pools": [L4.spec()]}, [
        Row("cloud", "aws", "oci"),  # an AWS pool on OCI is refused
        Row("gpu_software", "operator", "device-plugin"),
        Row("pools", [L4.spec()], [L4_SHARED.spec()]),
        Row("monitoring", False, True),
        Row("service_monitor_labels", {"release": "a"}, {"release": "b"}, {"monitoring": True}),
        Row("namespace", "gpu-operator", "nvidia"),
        Row("mig_strategy", "single", "mixed", {"pools": [MIG.spec()]}),
        Row("kubernetes_version", "1.30", "1.34", {"cloud": "existing", "pools": [DRA.spec()]}),
        Row("driver_preinstalled", False, True, {"cloud": "azure", "pools": [AZURE.spec()]}),
        Row("kueue", True, False, {"cloud": "azure", "pools": [AZURE.spec()]}),
    ]),
    Table("gpu_platform.accelerators.rdma:RdmaStack", {"cloud": "azure", "pools": [AZURE_IB.spec()]}, [
        Row("cloud", "azure", "aws"),
        Row("pools", [AZURE_IB.spec()], [AZURE.spec()]),
        Row("namespace", "network-operator", "rdma"),
        Row("nfd_installed", False, True),
    ]),
    Table("gpu_platform.accelerators.tpu:TpuJobSet", {"pools": [TPU.spec()]}, [
        Row("pools", [TPU.spec()], [L4.spec()]),  # no TPU pool: refused
        Row("namespace", "jobset-system", "jobs"),
    ]),
    Table("gpu_platform.accelerators.tpu:TpuSliceJob",
          {"pool": TPU.spec(), "namespace": "research", "local_queue": "gpu", "tpu_quota": 16}, [
        Row("pool", TPU.spec(), TPU_HOST.spec()),
        Row("namespace", "research", "product"),
        Row("local_queue", "gpu", "tpu"),
        Row("tpu_quota", 16, 8),  # 8 chips cannot admit a 16-chip slice
    ]),
    Table("gpu_platform.serving.keda:KedaOperator", {}, [
        Row("namespace", "keda", "autoscaling"),
        Row("monitoring", False, True),
        Row("service_monitor_labels", {"release": "a"}, {"release": "b"}, {"monitoring": True}),
        Row("monitoring_namespace", "monitoring", "prometheus", {"monitoring": True}),
    ]),
    Table("gpu_platform.serving.cert_manager:CertManager", {}, [
        Row("namespace", "cert-manager", "certs"),
        Row("gateway_api", False, True),
        Row("private_ca", False, True),
        Row("acme", ACME, {**ACME, "email": "platform@example.com"}, {"gateway_api": True}),
        # Adopting the sibling's resources is an alias (an engine option, not an input): a name is taken, an empty
        # one refused.
        Row("replaces_amd_stack", "dev-amd", ""),
    ]),
    Table("gpu_platform.serving.gateway:InferenceGateway", {"cloud": "aws"}, [
        Row("cloud", "aws", "oci"),
        Row("class_name", "gke-l7-rilb", "gke-l7-regional-external-managed", GKE),
        Row("proxy_source_ranges", ["10.9.0.0/23"], ["10.10.0.0/23"], GKE),
        Row("hostname", "chat.example.com", "api.example.com", {"cluster_issuer": "letsencrypt"}),
        Row("cluster_issuer", "letsencrypt", "private-ca", {"hostname": "chat.example.com"}),
        Row("acme", False, True, TLS),
        Row("max_request_body_size", "1Mi", "4Mi"),
        Row("inference_pool", False, True),
        Row("namespace", "gateway", "edge"),
        Row("name", "inference", "public"),
    ]),
    Table("gpu_platform.health.gpu_health:GpuHealth", {"pools": [L4.spec()]}, [
        Row("pools", [L4.spec()], [L4.spec() | {"name": "l4b"}]),
        Row("namespace", "gpu-health", "health"),
        Row("active_checks", True, False),
        Row("schedule", "0 */6 * * *", "0 3 * * *"),
        Row("dcgm_diag_level", 2, 3),
        Row("all_reduce", True, False),
        Row("remediation_mode", "dry-run", "cordon"),
        Row("max_quarantined_per_pool", 1, 2),
        Row("max_quarantined_percent", 10, 50),
        Row("cooldown_minutes", 60, 30),
        Row("monitoring_namespace", "monitoring", "prometheus"),
        Row("service_monitor_labels", {"release": "a"}, {"release": "b"}, {"monitoring_namespace": "monitoring"}),
        Row("runbook_base_url", "https://git.example.com/a", "https://git.example.com/b",
            {"monitoring_namespace": "monitoring"}),
        Row("npd_image", "registry.example.com/npd:1", "registry.example.com/npd:2"),
        Row("dcgm_image", "registry.example.com/dcgm:1", "registry.example.com/dcgm:2"),
        Row("platform_image", "registry.example.com/platform:1", "registry.example.com/platform:2"),
    ]),
    Table("gpu_platform.security.network_policy_engine:CalicoPolicyEngine", {"interface_prefix": "oci"}, [
        Row("interface_prefix", "oci", "eth"),
        Row("pools", [L4.spec()], [L4.spec() | {"taints": ["dedicated=ml:NoSchedule"]}]),
    ]),
    Table("gpu_platform.clouds.existing.cluster:ExistingGpuNodes",
          {"pool": EXISTING.spec(), "nodes": ["gpu-01", "gpu-02"]}, [
        Row("pool", EXISTING.spec(), EXISTING.spec() | {"name": "a100b"}),
        Row("nodes", ["gpu-01", "gpu-02"], ["gpu-01", "gpu-03"]),
    ]),
    Table("gpu_platform.optimizer.gpu_optimizer:GpuOptimizer", {"prometheus_url": PROMETHEUS}, [
        Row("pools", [L4.spec()], [L4.spec() | {"name": "l4b"}], {"action": "recommend"}),
        Row("prometheus_url", PROMETHEUS, "http://prometheus.observability.svc:9090"),
        Row("prometheus_namespace", "monitoring", "observability"),
        Row("namespace", "gpu-optimizer", "optimizer"),
        Row("action", "report", "annotate"),
        Row("schedule", "*/30 * * * *", "0 * * * *"),
        Row("utilization_threshold", 10, 20),
        Row("dry_run", True, False, {"action": "annotate"}),
        Row("image", "registry.example.com/platform:1", "registry.example.com/platform:2"),
    ]),
    Table("gpu_platform.monitoring.gpu_monitoring:GpuMonitoring", {"pools": [L4.spec()]}, [
        Row("pools", [L4.spec()], [MIG.spec()]),
        Row("namespace", "monitoring", "observability"),
        Row("retention", "15d", "30d"),
        Row("storage_size", "50Gi", "100Gi"),
        Row("storage_class", "gp3", "io2"),
        # A secret (redacted in what the engine records): given, no generated password resource.
        Row("grafana_admin_password", "first-password", None),
        Row("gke_managed_dcgm", False, True, {"pools": [GKE_POOL.spec()]}),
        Row("inference_namespace", "inference", "serving"),
        Row("runbook_base_url", "https://git.example.com/a", "https://git.example.com/b"),
        Row("alert_thresholds", {"gpu_temperature_celsius": 80}, {"gpu_temperature_celsius": 85}),
        Row("prometheus_client_namespaces", ["keda"], ["keda", "gpu-optimizer"]),
        Row("llm_namespace", "llm", "chat"),
    ]),
    Table("gpu_platform.training.workload:TrainingWorkload", {"pool": EFA.spec(), "namespace": "ml", "gpu_quota": 16}, [
        Row("pool", EFA.spec(), EFA.spec() | {"name": "train2"}),
        Row("namespace", "ml", "research"),
        Row("gpu_quota", 16, 8),
        Row("local_queue", "gpu", "train"),
        Row("topology_level", "topology.kubernetes.io/zone", "kubernetes.io/hostname", {"local_queue": "gpu"}),
        Row("topology_policy", "preferred", "required",
            {"local_queue": "gpu", "topology_level": "kubernetes.io/hostname"}),
        Row("image", "registry.example.com/train:1", "registry.example.com/train:2"),
        Row("job_priority_class", "medium-priority", "low-priority"),
        Row("retrain_priority_class", "high-priority", "medium-priority"),
        Row("schedule", "0 3 * * 0", "0 4 * * 0"),
        Row("checkpoint_size", "100Gi", "200Gi"),
        Row("checkpoint_storage_class", "efs", "fsx"),
        Row("checkpoint_claim", "ml-checkpoints", "shared-checkpoints"),
        Row("datasets_claim", "ml-datasets", "shared-datasets"),
        Row("datasets_sub_path", "ml", "research", {"datasets_claim": "shared"}),
        Row("checkpoint_sub_path", "ml", "research", {"checkpoint_claim": "shared"}),
        Row("bucket_claims", ["models"], ["models", "datasets"]),
        Row("service_account", "storage-access", "trainer"),
        Row("pod_labels", {"azure.workload.identity/use": "true"}, {"team": "ml"}),
        Row("pod_annotations", {"gke-gcsfuse/volumes": "true"}, {"team": "ml"}),
    ]),
    Table("gpu_platform.accelerators.neuron:NeuronStack", {"pools": [INF2.spec()]}, [
        Row("pools", [INF2.spec()], [INF2.spec() | {"name": "inf2b"}]),
        Row("namespace", "aws-neuron", "neuron"),
        Row("monitoring", False, True),
        Row("service_monitor_labels", {"release": "a"}, {"release": "b"}, {"monitoring": True}),
        Row("monitoring_namespace", "monitoring", "observability", {"monitoring": True}),
        Row("kubernetes_version", "1.33", "1.34"),
    ]),
    Table("gpu_platform.accelerators.amd:AmdGpuStack",
          {"cloud": "azure", "pools": [MI300X.spec()], "driver_image": "registry.example.com/amdgpu"}, [
        Row("cloud", "azure", "oci"),
        Row("pools", [MI300X.spec()], [MI300X.spec() | {"name": "mi300x-b"}]),
        Row("driver_image", "registry.example.com/amdgpu", "registry.example.com/rocm"),
        Row("driver_version", "30.20.1", "30.10.1"),
        Row("nfd_installed", False, True),
        Row("monitoring", False, True, {"monitoring_namespace": "monitoring"}),
        Row("service_monitor_labels", {"release": "a"}, {"release": "b"},
            {"monitoring": True, "monitoring_namespace": "monitoring"}),
        Row("monitoring_namespace", "monitoring", "observability", {"monitoring": True}),
        Row("namespace", "kube-amd-gpu", "amd"),
        Row("cert_manager_installed", False, True),
    ]),
    Table("gpu_platform.clouds.oci.vcn:OkeVcn", {"compartment_id": "ocid1.compartment.oc1..aaaa"}, [
        Row("compartment_id", "ocid1.compartment.oc1..aaaa", "ocid1.compartment.oc1..bbbb"),
        Row("cidr", "10.0.0.0/16", "10.8.0.0/16"),
        Row("api_allowed_cidrs", ["203.0.113.0/24"], ["198.51.100.0/24"]),
    ]),
    Table("gpu_platform.serving.workloads:InferenceService", {"pool": L4.spec()}, [
        Row("pool", L4.spec(), L4.spec() | {"name": "l4b"}),
        Row("namespace", "inference", "serving"),
        Row("create_namespace", True, False),
        Row("name", "sentiment", "classifier"),
        Row("image", "registry.example.com/app:1", "registry.example.com/app:2"),
        Row("model_id", "distilbert/distilbert-base-uncased-finetuned-sst-2-english", "org/other-model"),
        Row("min_replicas", 1, 2),
        Row("max_replicas", 4, 6),
        Row("max_batch_size", 32, 16),
        Row("max_wait_ms", 2.0, 5.0),
        Row("max_queue", 1024, 512),
        Row("deadline_ms", 1000, 500),
        Row("autoscaler", "hpa", "none"),
        Row("prometheus_url", PROMETHEUS, "http://prometheus.observability.svc:9090"),
        Row("target_queue_depth", 32, 16, {"prometheus_url": PROMETHEUS}),
        Row("cpu_utilization", 70, 50),
        Row("cpu_request", "1", "2"),
        Row("memory_request", "4Gi", "8Gi"),
        Row("route", ROUTE, {**ROUTE, "hostname": "infer.example.com"}),
        Row("model_cache_size", "20Gi", "40Gi"),
        Row("model_cache_storage_class", "efs", "fsx", {"model_cache_size": "20Gi"}),
        Row("model_cache_access_mode", "ReadWriteMany", "ReadWriteOnce", {"model_cache_size": "20Gi"}),
        Row("model_cache_volume", "models-a", "models-b", {"model_cache_size": "20Gi"}),
        Row("model_cache_sub_path", "models", "cache", {"model_cache_size": "20Gi"}),
        Row("monitoring_namespace", "monitoring", "observability"),
        Row("service_monitor", False, True),
        Row("service_monitor_labels", {"release": "a"}, {"release": "b"}, {"service_monitor": True}),
    ]),
    Table("gpu_platform.serving.llm:LlmService", {"pool": LLM_POOL.spec(), "model": MODEL}, [
        Row("pool", LLM_POOL.spec(), LLM_POOL.spec() | {"name": "l4b"}),
        Row("model", MODEL, "Qwen/Qwen2.5-7B-Instruct"),
        Row("served_model_name", "llama", "chat"),
        Row("name", "llm", "chat"),
        Row("namespace", "llm", "chat"),
        Row("create_namespace", True, False),
        Row("install_crds", True, False),
        Row("image", "registry.example.com/vllm:1", "registry.example.com/vllm:2"),
        Row("replicas", 1, 2),
        Row("max_replicas", 4, 3, {"prometheus_url": PROMETHEUS}),
        Row("tensor_parallel_size", 1, 2, {"pool": GpuPool("l4", "aws", "g6.12xlarge", "l4", 4, 24, 1, 4).spec()}),
        Row("max_model_len", 4096, 8192),
        Row("dtype", "auto", "bfloat16"),
        Row("quantization", "fp8", "awq"),
        Row("gpu_memory_utilization", 0.9, 0.8),
        Row("model_source", "huggingface", "pvc", {"model_claim": "weights"}),
        Row("model_claim", "weights", "other-weights", {"model_source": "pvc"}),
        Row("model_path", "llama", "models/llama", {"model_source": "pvc", "model_claim": "weights"}),
        Row("cache_size", "50Gi", "100Gi"),
        Row("cache_storage_class", "efs", "fsx"),
        Row("cache_access_mode", "ReadWriteOnce", "ReadWriteMany"),
        Row("cache_volume", "models-a", "models-b", {"cache_access_mode": "ReadWriteMany"}),
        Row("cache_sub_path", "models", "cache", {"cache_access_mode": "ReadWriteMany"}),
        Row("skip_cached_model", False, True, {"cache_access_mode": "ReadWriteMany"}),
        Row("hf_token_secret", "hf-token", "hugging-face"),
        Row("autoscaler", "keda", "none", {"prometheus_url": PROMETHEUS}),
        Row("prometheus_url", PROMETHEUS, "http://prometheus.observability.svc:9090"),
        Row("target_waiting_requests", 5, 10, {"prometheus_url": PROMETHEUS}),
        Row("target_kv_cache_usage", 0.8, 0.6, {"prometheus_url": PROMETHEUS}),
        Row("monitoring_namespace", "monitoring", "observability"),
        Row("service_monitor", False, True),
        Row("service_monitor_labels", {"release": "a"}, {"release": "b"}, {"service_monitor": True}),
        Row("route", ROUTE, {**ROUTE, "hostname": "chat.example.com"}),
    ]),
    Table("gpu_platform.clouds.aws.cluster:EksGpuNodePool", {
        "pool": L4.spec(), "cluster_name": "gpu", "node_role_arn": "arn:aws:iam::123456789012:role/nodes",
        "subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1"]}, [
        Row("pool", L4.spec(), L4.spec() | {"name": "l4b"}),
        Row("cluster_name", "gpu", "gpu2"),
        Row("node_role_arn", "arn:aws:iam::123456789012:role/nodes", "arn:aws:iam::123456789012:role/gpu"),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("subnet_ids", ["subnet-0aaaaaaaaaaaaaaa1"], ["subnet-0bbbbbbbbbbbbbbb2"]),
        Row("zones", None, ["us-west-2a"]),  # EksCluster's pools only: a standalone node group is refused it
        Row("vpc_id", "vpc-0123456789abcdef0", "vpc-0fedcba9876543210", EFA_NODES),
        Row("cluster_security_group_id", "sg-0123456789abcdef0", "sg-0fedcba9876543210", EFA_NODES),
        Row("ami_type", "AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA"),
        Row("capacity_block", False, True, {"pool": L4.spec() | {"provisioning": "reservation",
                                                                  "reservation": "cr-0123456789abcdef0"}}),
        Row("disk_size_gib", 200, 300),
        Row("placement_group", True, False, EFA_NODES),
        Row("desired_nodes", 0, 1),
        Row("upgrade", {"max_unavailable": "1"}, {"max_unavailable": "2"}),
        Row("tags", {"team": "a"}, {"team": "b"}),
    ]),
    Table("gpu_platform.clouds.aws.cluster_autoscaler:EksClusterAutoscaler", {
        "cluster_name": "gpu", "region": "us-west-2", "kubernetes_version": "1.34",
        "system_node_group_name": "gpu-system"}, [
        Row("cluster_name", "gpu", "gpu2"),
        Row("region", "us-west-2", "us-east-1"),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("system_node_group_name", "gpu-system", "system"),
        Row("autoscaling_group_names", {"l4": "eks-l4-asg"}, {"l4": "eks-l4-asg-2"}),
        Row("scale_down_unneeded_minutes", 30, 10),
        Row("max_node_provision_minutes", 25, 15),
        Row("tags", {"team": "a"}, {"team": "b"}),
    ]),
    Table("gpu_platform.clouds.oci.autoscaler:OkeClusterAutoscaler", {
        "cluster_id": "ocid1.cluster.oc1.iad.aaaaaaaacluster", "compartment_id": OCI_COMPARTMENT,
        "node_pools": [OKE_POOL]}, [
        Row("cluster_id", "ocid1.cluster.oc1.iad.aaaaaaaacluster", "ocid1.cluster.oc1.iad.aaaaaaaaother"),
        Row("compartment_id", OCI_COMPARTMENT, "ocid1.compartment.oc1..aaaaaaaaother"),
        Row("node_pools", [OKE_POOL], [OKE_POOL | {"max_nodes": 4}]),
        Row("scale_down_unneeded_minutes", 30, 10),
        Row("max_node_provision_minutes", 25, 15),
    ]),
    Table("gpu_platform.clouds.azure.cluster:AksGpuNodePool",
          {"pool": AZURE.spec(), "resource_group_name": "rg", "cluster_name": "aks"}, [
        Row("pool", AZURE.spec(), AZURE.spec() | {"max_nodes": 3}),
        Row("resource_group_name", "rg", "rg2"),
        Row("cluster_name", "aks", "aks2"),
        Row("agent_pool_name", "a100", "gpu"),
        Row("os_sku", "Ubuntu", "AzureLinux"),
        Row("vnet_subnet_id", AZURE_SUBNET, AZURE_SUBNET + "2"),
        Row("gpu_driver", "Install", "None"),
        Row("spot_max_price", -1.0, 2.5, {"pool": AZURE.spec() | {"spot": True, "provisioning": "spot"}}),
        Row("spot_eviction_policy", "Delete", "Deallocate",
            {"pool": AZURE.spec() | {"spot": True, "provisioning": "spot"}}),
        Row("availability_zones", ["1"], ["1", "2"]),
        Row("os_disk_size_gb", 128, 256),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("initial_nodes", 0, 1),
        Row("upgrade", {"max_surge": "1"}, {"max_surge": "2"}),
    ]),
    Table("gpu_platform.clouds.oci.cluster:OkeGpuNodePool", {**OKE_PLAIN, "pool": A10.spec()}, [
        Row("pool", A10.spec(), A10.spec() | {"name": "a10b"}),
        Row("cluster_id", OKE_PLAIN["cluster_id"], "ocid1.cluster.oc1.iad.aaaaaaaaother"),
        Row("compartment_id", OCI_COMPARTMENT, "ocid1.compartment.oc1..aaaaaaaaother"),
        Row("kubernetes_version", "v1.34.1", "v1.35.0", {"image_id": "ocid1.image.oc1.iad.aaaaaaaaone"}),
        Row("worker_subnet_id", OKE_PLAIN["worker_subnet_id"], "ocid1.subnet.oc1.iad.aaaaaaaaother"),
        Row("pod_subnet_id", OKE_PLAIN["pod_subnet_id"], "ocid1.subnet.oc1.iad.aaaaaaaaotherpods"),
        Row("availability_domains", ["Uocm:US-ASHBURN-AD-1"], ["Uocm:US-ASHBURN-AD-2"]),
        Row("image_id", "ocid1.image.oc1.iad.aaaaaaaaone", "ocid1.image.oc1.iad.aaaaaaaatwo"),
        Row("zones", [1], [2], {"availability_domains": ["Uocm:US-ASHBURN-AD-1", "Uocm:US-ASHBURN-AD-2"]}),
        Row("boot_volume_size_gib", 512, 256),
        Row("preemptible", False, True),
        Row("size", 0, 1),
        Row("compute_cluster_id", "ocid1.computecluster.oc1.iad.aaaaaaaaone",
            "ocid1.computecluster.oc1.iad.aaaaaaaatwo",
            {"pool": OCI_H100.spec(), "image_id": "ocid1.image.oc1.iad.aaaaaaaaubuntudocaofed"}),
        Row("disable_oke_device_plugin", False, True),
        Row("upgrade", {"max_surge": "1"}, {"max_surge": "2"}),
    ]),
    Table("gpu_platform.clouds.gcp.cluster:GkeGpuNodePool", {"pool": G2.spec(), "cluster": "c", "location": GCP_R}, [
        Row("pool", G2.spec(), G2.spec() | {"name": "l4b"}),
        Row("cluster", "c", "other"),
        Row("location", GCP_R, "us-east1"),
        Row("project", "gpu-platform-dev", "gpu-platform-prod"),
        Row("node_version", "1.34", "1.35"),
        Row("node_locations", [f"{GCP_R}-a"], [f"{GCP_R}-b"]),
        Row("zone_count", 1, 2, {"pool": G2.spec() | {"min_nodes": 2}}),  # initial_node_count is per zone
        Row("desired_nodes", 0, 1),
        Row("accelerator_type", None, "nvidia-l4"),  # a G2 machine type carries its own GPUs: refused
        Row("gpu_driver_version", "DEFAULT", "LATEST"),
        Row("gke_sharing", True, False, {"pool": G2.spec() | {"sharing_mode": "time-slicing", "sharing_replicas": 4}}),
        Row("gke_partitioning", True, False, {"pool": A2_MIG.spec()}),
        Row("disable_gke_device_plugin", False, True),
        Row("image_type", "COS_CONTAINERD", "UBUNTU_CONTAINERD"),
        Row("service_account", "nodes@gpu-platform-dev.iam.gserviceaccount.com",
            "gpu@gpu-platform-dev.iam.gserviceaccount.com"),
        Row("reservation_affinity", "NO_RESERVATION", "ANY_RESERVATION"),
        Row("compact_placement", False, True, {"node_locations": [f"{GCP_R}-a"]}),
        Row("placement_policy_name", "compact-a", "compact-b", {"node_locations": [f"{GCP_R}-a"]}),
        Row("additional_networks", None, [{"network": "vpc1", "subnetwork": "sub1"}]),
        Row("disk_size_gb", 200, 300),
        Row("disk_type", "pd-balanced", "pd-ssd"),
        Row("image_streaming", False, True),
        Row("tpu_topology", "4x4", "2x4", {"pool": V6E.spec(), "node_locations": ["us-east5-b"],
                                           "location": "us-east5"}),
        Row("upgrade", {"max_surge": "1"}, {"max_surge": "2"}),
    ]),
    Table("gpu_platform.clouds.aws.karpenter:KarpenterAutoscaler", {
        "cluster_name": "gpu", "cluster_endpoint": "https://x", "region": "us-west-2",
        "system_node_group_name": "gpu-system", "cluster_security_group_id": "sg-0123456789abcdef0",
        "node_pools": [KARPENTER_POOL]}, [
        Row("cluster_name", "gpu", "gpu2"),
        Row("cluster_endpoint", "https://x", "https://y"),
        Row("region", "us-west-2", "us-east-1"),
        Row("vpc_id", "vpc-0123456789abcdef0", "vpc-0fedcba9876543210",
            {"node_pools": [{"pool": EFA.spec(), "subnet_ids": ["subnet-0aaaaaaaaaaaaaaa1"]}]}),
        Row("cluster_security_group_id", "sg-0123456789abcdef0", "sg-0fedcba9876543210"),
        Row("system_node_group_name", "gpu-system", "system"),
        Row("system_nodes", 1, 2),  # one controller replica per system node, two at most
        Row("node_pools", [KARPENTER_POOL], [KARPENTER_POOL | {"nodes": 4}]),
        Row("consolidate_after_minutes", 30, 10),
        Row("maintenance_window", {"days": ["Saturday"]}, {"days": ["Sunday"]}),
        Row("tags", {"team": "a"}, {"team": "b"}),
    ]),
    Table("gpu_platform.clouds.oci.cluster:OkeCluster", {"compartment_id": OCI_COMPARTMENT}, [
        Row("compartment_id", OCI_COMPARTMENT, "ocid1.compartment.oc1..aaaaaaaaother"),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("cluster_name", "oke", "gpu"),
        Row("vcn_cidr", "10.0.0.0/16", "10.8.0.0/16"),
        Row("vcn_id", "ocid1.vcn.oc1.iad.aaaaaaaaone", "ocid1.vcn.oc1.iad.aaaaaaaatwo", OKE_VCN),
        *[Row(key, OKE_VCN[key], OKE_VCN[key] + "b", {**OKE_VCN, "vcn_id": "ocid1.vcn.oc1.iad.aaaaaaaaone"})
          for key in ("endpoint_subnet_id", "worker_subnet_id", "pod_subnet_id", "load_balancer_subnet_id")],
        Row("api_allowed_cidrs", ["203.0.113.0/24"], ["198.51.100.0/24"]),
        Row("secrets_encryption", True, False),
    ]),
    Table("gpu_platform.clouds.aws.cluster:EksCluster", EKS, [
        Row("cluster_name", "gpu", "gpu2"),
        Row("region", "us-west-2", "us-east-1", {"availability_zones": None}),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("addon_versions", EKS["addon_versions"],
            {**EKS["addon_versions"], "coredns": EKS["addon_versions"]["coredns"] + "x"}),
        Row("vpc_id", "vpc-0123456789abcdef0", "vpc-0fedcba9876543210", EKS_VPC),
        Row("private_subnet_ids", EKS_VPC["private_subnet_ids"], EKS_VPC["private_subnet_ids"][::-1], EKS_VPC),
        Row("public_subnet_ids", ["subnet-0ccccccccccccccc3"], ["subnet-0ddddddddddddddd4"], EKS_VPC),
        Row("vpc_cidr", "10.0.0.0/16", "10.8.0.0/16"),
        Row("availability_zones", ["us-west-2a", "us-west-2b"], ["us-west-2a", "us-west-2c"]),
        Row("single_nat_gateway", True, False),
        Row("admin_role_arns", ["arn:aws:iam::123456789012:role/a"], ["arn:aws:iam::123456789012:role/b"]),
        Row("system_node_instance_type", "m6i.xlarge", "m6i.2xlarge"),
        Row("system_nodes", 2, 3),
        Row("api_allowed_cidrs", ["203.0.113.0/24"], ["198.51.100.0/24"]),
        Row("secrets_encryption", True, False),
        Row("gpu_pools", [], [EKS_POOL]),
        Row("tags", {"team": "a"}, {"team": "b"}),
    ]),
    Table("gpu_platform.clouds.azure.cluster:AksCluster", {"location": "westeurope"}, [
        Row("location", "westeurope", "eastus"),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("resource_group_name", "rg-one", "rg-two"),
        Row("cluster_name", "aks-one", "aks-two"),
        Row("vnet_subnet_id", AZURE_SUBNET, AZURE_SUBNET + "2"),
        Row("vnet_address_space", "10.224.0.0/12", "10.128.0.0/12", {"subnet_address_prefix": "10.128.0.0/16",
                                                                     "pod_cidr": "10.244.0.0/16"}),
        Row("subnet_address_prefix", "10.224.0.0/16", "10.225.0.0/16"),
        Row("pod_cidr", "10.244.0.0/16", "10.245.0.0/16"),
        Row("service_cidr", "10.0.0.0/16", "10.1.0.0/16", {"dns_service_ip": None}),
        Row("dns_service_ip", "10.0.0.10", "10.0.0.11"),
        Row("os_sku", "Ubuntu", "AzureLinux"),
        Row("system_pool_vm_size", "Standard_D4ds_v5", "Standard_D8ds_v5"),
        Row("system_pool_min_nodes", 2, 3),
        Row("system_pool_max_nodes", 3, 4),
        Row("sku_tier", "Standard", "Free"),
        Row("gpu_pools", [], [AKS_POOL]),
        Row("register_infiniband_feature", True, False, {"gpu_pools": [AKS_IB_POOL]}),
        Row("auto_scaler_profile", {"scan_interval": "10s"}, {"scan_interval": "20s"}),
        Row("tags", {"team": "a"}, {"team": "b"}),
        Row("api_allowed_cidrs", ["203.0.113.0/24"], ["198.51.100.0/24"]),
        Row("secrets_encryption", True, False),
        Row("admin_group_object_ids", ["00000000-0000-0000-0000-00000000000a"],
            ["00000000-0000-0000-0000-00000000000b"]),
        Row("maintenance_window", {"days": ["Saturday"]}, {"days": ["Sunday"]}),
        Row("blob_csi_driver", False, True),
    ]),
    Table("gpu_platform.clouds.gcp.cluster:GkeCluster", {"region": GCP_R}, [
        Row("region", GCP_R, "us-east1"),
        Row("project", "gpu-platform-dev", "gpu-platform-prod"),
        Row("zone", f"{GCP_R}-a", f"{GCP_R}-b"),
        Row("cluster_name", "gke-one", "gke-two"),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("release_channel", "REGULAR", "STABLE"),
        Row("network", "vpc-one", "vpc-two", GKE_NET),
        Row("subnetwork", "nodes-one", "nodes-two", GKE_NET),
        Row("pods_range_name", "pods", "pod-range", GKE_NET),
        Row("services_range_name", "services", "service-range", GKE_NET),
        Row("node_cidr", "10.0.0.0/20", "10.1.0.0/20"),
        Row("pod_cidr", "10.4.0.0/14", "10.16.0.0/14"),
        Row("service_cidr", "10.8.0.0/20", "10.9.16.0/20"),
        Row("private_nodes", True, False),
        Row("api_allowed_cidrs", ["203.0.113.0/24"], ["198.51.100.0/24"]),
        Row("secrets_encryption", True, False),
        Row("system_machine_type", "e2-standard-4", "e2-standard-8"),
        Row("system_min_nodes", 1, 2),
        Row("system_max_nodes", 3, 4),
        Row("system_disk_size_gb", 100, 200),
        Row("node_service_account", "nodes@gpu-platform-dev.iam.gserviceaccount.com",
            "gke@gpu-platform-dev.iam.gserviceaccount.com"),
        Row("managed_dcgm", False, True),
        Row("multi_networking", False, True),
        Row("gpu_pools", [], [GKE_ENTRY]),
        Row("gpu_networks", None, [GKE_GPU_VPC]),
        Row("gpu_network_cidr", "192.168.0.0/16", "172.16.0.0/16", {"gpu_networks": [GKE_GPU_VPC]}),
        Row("deletion_protection", True, False),
        Row("autoscaling_profile", "BALANCED", "OPTIMIZE_UTILIZATION"),
        Row("gateway_api", False, True),
        Row("lustre_csi_driver", False, True),
        Row("gcs_fuse_csi_driver", False, True),
        Row("maintenance_window", {"days": ["Saturday"]}, {"days": ["Sunday"]}),
        Row("proxy_only_cidr", "10.9.0.0/23", "10.10.0.0/23", {"gateway_api": True}),
    ]),
    Table("gpu_platform.autoscaling.workload_autoscaling:WorkloadAutoscaling", {"vpa_targets": [TARGET]}, [
        Row("vpa_targets", [TARGET], [TARGET | {"name": "other"}]),
        Row("vpa_mode", "Off", "Initial"),
        Row("vpa_resources", ["cpu"], ["cpu", "memory"]),
        # Read for conflicts only (the autoscalers are other components'): one on the VPA's workload is refused.
        Row("horizontal_autoscalers", [HPA], [HPA_ON_TARGET], {"vpa_mode": "Initial"}),
        Row("metrics_server", False, True),
        Row("namespace", "vpa", "autoscaling"),
    ]),
    Table("gpu_platform.clouds.aws.storage_components:EksSharedFileSystem", FSX, [
        Row("cluster_name", "gpu", "gpu2"),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("vpc_id", "vpc-0123456789abcdef0", "vpc-0fedcba9876543210"),
        Row("subnet_id", "subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"),
        Row("node_security_group_id", "sg-0123456789abcdef0", "sg-0fedcba9876543210"),
        Row("size_gib", 2400, 4800),
        Row("throughput_per_tib", 125, 250),
        Row("description", "FSx for Lustre of a", "FSx for Lustre of b"),
        Row("tags", {"team": "a"}, {"team": "b"}),
    ], mounted_file_system),
    Table("gpu_platform.clouds.aws.storage_components:EksBucketAccess", EKS_BUCKETS, [
        Row("cluster_name", "gpu", "gpu2"),
        Row("kubernetes_version", "1.34", "1.35"),
        Row("region", "us-west-2", "us-east-1"),  # Mountpoint's region mount option
        Row("namespaces", ["research"], ["research", "product"]),
        Row("buckets", [S3], [S3 | {"bucket": "acme-other"}]),
        Row("description", "Bucket access of a", "Bucket access of b"),
        Row("tags", {"team": "a"}, {"team": "b"}),
    ], mounted_buckets),
    Table("gpu_platform.clouds.azure.storage_components:AksSharedFileSystem", AMLFS, [
        Row("resource_group_name", "rg", "rg2"),
        Row("location", "westeurope", "eastus"),
        Row("virtual_network_name", "vnet", "vnet2"),
        Row("subnet_address_prefix", "10.225.0.0/27", "10.226.0.0/27"),
        Row("size_gib", 8192, 16384),
        Row("throughput_per_tib", 500, 250),
        Row("zone", "1", "2"),
        Row("tags", {"team": "a"}, {"team": "b"}),
    ], mounted_file_system),
    Table("gpu_platform.clouds.azure.storage_components:AksBucketAccess", AKS_BUCKETS, [
        Row("resource_group_name", "rg", "rg2"),
        Row("location", "westeurope", "eastus"),
        Row("oidc_issuer_url", "https://oidc.example.com/a", "https://oidc.example.com/b"),
        Row("namespaces", ["research"], ["research", "product"]),
        Row("buckets", [BLOB], [BLOB | {"bucket": "checkpoints"}]),
        Row("storage_resource_group", "rg-data", "rg-data2"),
        Row("tags", {"team": "a"}, {"team": "b"}),
    ], mounted_buckets),
    Table("gpu_platform.clouds.gcp.storage_components:GkeSharedFileSystem", GKE_LUSTRE, [
        Row("project", "acme-ml", "acme-research"),
        Row("zone", "us-central1-c", "us-central1-a"),
        Row("network", "vpc-one", "vpc-two"),
        Row("network_id", None, "projects/acme-ml/global/networks/vpc-one"),
        Row("size_gib", 18000, 36000),
        Row("throughput_per_tib", 1000, 500),
        Row("filesystem", "lustre", "shared"),
        Row("description", "Shared file system a", "Shared file system b"),
    ], mounted_file_system),
    Table("gpu_platform.clouds.gcp.storage_components:GkeBucketAccess", GKE_BUCKETS, [
        Row("project", "acme-ml", "acme-research"),
        Row("namespaces", ["research"], ["research", "product"]),
        Row("buckets", [S3], [S3 | {"bucket": "acme-other"}]),
    ], mounted_buckets),
    Table("gpu_platform.clouds.oci.storage_components:OkeSharedFileSystem", OKE_FSS, [
        Row("compartment_id", OCI_COMPARTMENT, "ocid1.compartment.oc1..aaaaaaaaother"),
        Row("availability_domain", "Uocm:US-ASHBURN-AD-1", "Uocm:US-ASHBURN-AD-2"),
        Row("vcn_id", "ocid1.vcn.oc1.iad.aaaaaaaaone", "ocid1.vcn.oc1.iad.aaaaaaaatwo"),
        Row("subnet_id", "ocid1.subnet.oc1.iad.aaaaaaaaworkers", "ocid1.subnet.oc1.iad.aaaaaaaaother"),
        Row("client_cidr", "10.0.16.0/20", "10.0.32.0/20"),
        Row("size_gib", 4096, 8192),
    ], mounted_file_system),
    Table("gpu_platform.clouds.oci.storage_components:OkeBucketAccess", OKE_BUCKETS, [
        Row("compartment_id", OCI_COMPARTMENT, "ocid1.compartment.oc1..aaaaaaaaother"),
        Row("cluster_id", "ocid1.cluster.oc1.iad.aaaaaaaacluster", "ocid1.cluster.oc1.iad.aaaaaaaaother"),
        Row("region", "us-ashburn-1", "us-phoenix-1"),  # rclone's region: the volumes and the driver's chart
        Row("buckets", [S3], [S3 | {"bucket": "acme-other"}]),
        Row("pools", None, [A10.spec()]),  # the driver's node plugin tolerates the pools' taints
        Row("description", "rclone CSI driver of a", "rclone CSI driver of b"),
    ], mounted_buckets),
    Table("gpu_platform.storage.data_plane:DataPlaneStorage", {}, [
        Row("volumes", [CLAIM], [CLAIM | {"size": "200Gi"}]),
        Row("root_csi", ROOT["root_csi"], {**ROOT["root_csi"], "volumeHandle": "fs-0fedcba9876543210::root"},
            {"volumes": [STATIC]}),
        Row("root_mount_options", ["flock"], ["noatime"], ROOT),
        Row("service_account_namespaces", ["research"], ["product"]),
        Row("service_account_annotations", {"team": "a"}, {"team": "b"},
            {"service_account_namespaces": ["research"]}),
        Row("csi_charts", None, [{"name": "csi-rclone"}]),
        Row("csi_manifests", None, ["azurelustre-csi-driver"]),
        Row("pre_pulls", [PRE_PULL], [PRE_PULL | {"images": ["nvcr.io/nvidia/pytorch:26.05-py3"]}]),
        Row("namespace", "gpu-storage", "storage", {"pre_pulls": [PRE_PULL]}),
        # Checked only: a namespace's claims over its quota are refused (Kubernetes would refuse the last one).
        Row("storage_quotas", {"research": "1Ti"}, {"research": "50Gi"}, {"volumes": [CLAIM]}),
    ]),
    Table("gpu_platform.scheduling.multikueue:MultiKueueManager", {"workers": [WORKER_US]}, [
        Row("workers", [WORKER_US], [WORKER_US, WORKER_EU]),
    ]),
    Table("gpu_platform.scheduling.multikueue:MultiKueueWorkerAccess",
          {"cluster_kubeconfig": sample_kubeconfig("w1", "https://w1:443")}, [
        # Both reach only the kubeconfig output, a secret (`outcome` compares its value, which exports redact).
        Row("cluster_kubeconfig", sample_kubeconfig("w1", "https://w1:443"), sample_kubeconfig("w1", "https://w2:443")),
        Row("context", "w1", "w2", {"cluster_kubeconfig": TWO_CONTEXTS}),
    ]),
]


def _plain(value: Any) -> bool:
    try:
        json.dumps(value)
    except TypeError:
        return False
    return True


def outcome(build: Callable[[], Any]) -> tuple[str, Any]:
    """("refused", the line) or ("plan", every registration: URN and inputs, with the component's attributes: what
    other components are built from, such as the gateway's ``data_plane_peers`` its routes carry or a cluster's
    subnet ids its pools take; Outputs resolved through stack exports, and by value: an export of a secret, such as
    a MultiKueue worker's kubeconfig, is redacted)."""
    made: list[Any] = []
    values: dict[str, Any] = {}

    def program():
        made.append(build())
        for key, value in vars(made[0]).items():
            if not key.startswith("_") and isinstance(value, pulumi.Output):
                pulumi.export(key, value)
                value.apply(lambda v, key=key: values.__setitem__(key, v))

    try:
        recording = run_program(program)
    except ConfigError as err:
        return "refused", str(err)
    attributes = {k: v for k, v in vars(made[0]).items() if not k.startswith("_") and _plain(v)}
    return "plan", (sorted((r.urn, json.dumps(r.inputs, sort_keys=True)) for r in recording),
                    json.dumps(attributes, sort_keys=True, default=str),
                    json.dumps(recording.exports, sort_keys=True, default=str),
                    json.dumps(values, sort_keys=True, default=str))


def _declared(component: str) -> set[str]:
    cls = provider.load(component)
    return set(type_hints(inspect.get_annotations(cls.__init__)["args"]))


def test_every_input_of_a_tabled_component_has_a_row():
    for table in TABLES:
        assert sorted(row.key for row in table.rows) == sorted(_declared(table.component)), table.component


CASES = [(table, row) for table in TABLES for row in table.rows]


@pytest.mark.parametrize(("table", "row"), CASES,
                         ids=[f"{t.component.rsplit(':', 1)[1]}.{r.key}" for t, r in CASES])
def test_an_input_changes_the_plan_or_is_refused(table, row):
    cls = provider.load(table.component)

    def build(value: Any) -> Any:
        component = cls("c", {**table.base, **row.needs, row.key: value})
        if table.compose is not None:
            table.compose(component)
        return component

    runs = [outcome(lambda value=value: build(value)) for value in (row.a, row.b)]
    assert "plan" in (runs[0][0], runs[1][0]), f"both refused: {runs}"
    assert runs[0] != runs[1], f"{row.key}: {row.a!r} and {row.b!r} register the same resources"


# ---------------------------------------------------------------------------------------------------------
# The pool's facts: a `GpuPoolSpec` describes one pool to every component that takes it, and each component reads
# the facts it needs. Every fact is read by one component at least (the row names it), so none is accepted in vain.

SUBNETS = ["subnet-0aaaaaaaaaaaaaaa1"]


def node_group(pool):
    from gpu_platform.clouds.aws.cluster import EksGpuNodePool

    return EksGpuNodePool("c", {"pool": pool, "cluster_name": "gpu", "subnet_ids": SUBNETS,
                                "node_role_arn": "arn:aws:iam::123456789012:role/nodes"})


def training(pool):
    from gpu_platform.training.workload import TrainingWorkload

    return TrainingWorkload("c", {"pool": pool, "namespace": "ml", "gpu_quota": 16})


def nvidia(pool):
    from gpu_platform.accelerators.nvidia import NvidiaGpuStack

    return NvidiaGpuStack("c", {"cloud": pool["cloud"], "pools": [pool]})


def scheduling(pool):
    from gpu_platform.scheduling.policy import SchedulingPolicy

    return SchedulingPolicy("c", {"pools": [pool, EXISTING.spec() | {"name": "spare"}],
                                  "teams": [{"name": "ml", "gpu_quota": 8}]})


def inference(pool):
    from gpu_platform.serving.workloads import InferenceService

    return InferenceService("c", {"pool": pool})


def optimizer(pool):
    from gpu_platform.optimizer.gpu_optimizer import GpuOptimizer

    return GpuOptimizer("c", {"prometheus_url": "http://prometheus.monitoring.svc:9090", "pools": [pool]})


class Fact(NamedTuple):
    field: str
    reader: Callable[[dict], Any]
    pool: dict
    a: Any
    b: Any
    also_b: dict = {}
    """What else the pool with ``b`` says (a fact that comes with another)."""


FACTS = [
    Fact("name", node_group, L4.spec(), "l4", "l4b"),
    Fact("cloud", node_group, L4.spec(), "aws", "gcp"),
    Fact("instance_type", node_group, L4.spec(), "g6.12xlarge", "g6.24xlarge"),
    Fact("gpu_model", scheduling, EXISTING.spec(), "a100-80gb", "h100"),
    Fact("gpus_per_node", training, EXISTING.spec(), 8, 4),
    Fact("gpu_memory_gib", optimizer, EXISTING.spec(), 80, 40),
    Fact("min_nodes", node_group, L4.spec(), 0, 1),
    Fact("max_nodes", node_group, L4.spec(), 3, 4),
    Fact("vcpus_per_node", inference, EXISTING.spec(), 16, 64),  # half a GPU slot's share: 1 and 4 CPUs
    Fact("memory_gib_per_node", inference, EXISTING.spec(), 64, 256),
    Fact("sharing_mode", nvidia, L4.spec(), "exclusive", "time-slicing", {"sharing_replicas": 4}),
    Fact("sharing_replicas", nvidia, L4_SHARED.spec(), 4, 2),
    Fact("mig_profile", node_group, MIG.spec(), "1g.10gb", "3g.40gb"),
    Fact("rdma_fabric", training, EFA.spec(), "efa", "", {"rdma_interfaces": 0}),
    Fact("rdma_interfaces", training, EFA.spec(), 32, 16),
    Fact("spot", node_group, L4.spec(), False, True, {"provisioning": "spot"}),
    Fact("labels", node_group, L4.spec(), {}, {"team": "ml"}),
    Fact("taints", node_group, L4.spec(), [], ["dedicated=ml:NoSchedule"]),
    Fact("rdma_pod_annotations", training, EFA.spec(), {}, {"k8s.v1.cni.cncf.io/networks": "rdma"}),
    Fact("nccl_env", training, EFA.spec(), {}, {"NCCL_IB_GID_INDEX": "3"}),
    Fact("role", node_group, L4.spec(), "general", "training"),  # training pools upgrade without surge
    Fact("gpu_allocation", nvidia, DRA.spec(), "dra", "device-plugin"),
    Fact("architecture", training, EXISTING.spec(), "amd64", "arm64"),
    Fact("nvlink_domain_gpus", scheduling, EXISTING.spec(), 0, 72),
    Fact("provisioning", node_group, L4.spec(), "on-demand", "spot", {"spot": True}),
    Fact("reservation", node_group, L4.spec() | {"provisioning": "reservation"}, "cr-0123456789abcdef0",
         "cr-0fedcba9876543210"),
    # Checked only: the flavor order (the pools' order) is what spills a pool over to its fallback.
    Fact("fallback_pool", scheduling, EXISTING.spec(), "spare", "missing"),
]


def test_every_fact_of_a_pool_has_a_row():
    from gpu_platform.pools import GpuPoolSpec

    assert sorted(f.field for f in FACTS) == sorted(type_hints(GpuPoolSpec))


@pytest.mark.parametrize("fact", FACTS, ids=[f"{f.field}-{f.reader.__name__}" for f in FACTS])
def test_a_pool_fact_changes_the_plan_of_its_reader_or_is_refused(fact):
    runs = [outcome(lambda pool=pool: fact.reader(pool))
            for pool in (fact.pool | {fact.field: fact.a}, fact.pool | {fact.field: fact.b, **fact.also_b})]
    assert "plan" in (runs[0][0], runs[1][0]), f"both refused: {runs}"
    assert runs[0] != runs[1], f"{fact.field}: {fact.a!r} and {fact.b!r} register the same resources"


# ---------------------------------------------------------------------------------------------------------
# GKE's cloud-managed GPU software: the stack creates nothing, so what would configure it is refused

GKE_L4 = GpuPool("l4", "gcp", "g2-standard-48", "l4", 4, 24, 0, 3)


@pytest.mark.parametrize(("key", "value"), [("monitoring", True), ("namespace", "nvidia")])
def test_gke_cloud_managed_software_refuses_what_gke_runs_itself(key, value):
    from gpu_platform.accelerators.nvidia import NvidiaGpuStack

    args = {"cloud": "gcp", "gpu_software": "cloud-managed", "pools": [GKE_L4.spec()]}
    assert outcome(lambda: NvidiaGpuStack("nv", {**args, key: value})) == ("refused", (
        f"NvidiaGpuStack nv: {key}: takes effect only off GKE's cloud-managed GPU software (GKE runs the driver, "
        "device plugin and DCGM exporter itself: the stack creates nothing there; GpuMonitoring's gke_managed_dcgm "
        "scrapes GKE's exporter)"))
    rec = run_program(lambda: NvidiaGpuStack("nv", {**args, "monitoring": False}))
    assert [r.type for r in rec] == ["gpuplatform:index:NvidiaGpuStack"]
    elsewhere = run_program(lambda: NvidiaGpuStack("nv", {**args, "cloud": "aws", "pools": [L4.spec()], key: value}))
    assert len(elsewhere) > 1


def test_gke_stacks_with_cloud_managed_software_still_plan():
    plan = planned_stack("gcp-dev")
    assert plan.config.gpu_software == "cloud-managed" and plan.errors == []
    assert [r.name for r in plan.recording.of_type("gpuplatform:index:NvidiaGpuStack")] == ["gcp-dev-nvidia"]


def test_llm_autoscaling_settings_without_prometheus_are_refused():
    from gpu_platform.serving.llm import LlmService

    assert outcome(lambda: LlmService("chat", {"pool": LLM_POOL.spec(), "model": MODEL, "max_replicas": 3})) == (
        "refused", "LlmService chat: max_replicas: takes effect only with prometheus_url (KEDA's triggers query it; "
                   "without it the replicas stay fixed)")


UNTABLED: dict[str, str] = {}
"""Served components without a table yet, and why."""


def test_every_served_component_has_a_table_or_a_reason():
    tabled = {table.component for table in TABLES}
    assert sorted(set(provider.COMPONENTS) - tabled) == sorted(UNTABLED)
    assert not tabled & set(UNTABLED)
