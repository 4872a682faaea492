"""Which input changes replace a resource or roll its nodes: the table `gpu-platform diff` judges a change by.

One `Rule` per (resource type token, input path or prefix, effect, source). A changed input path takes the rule of
the longest matching path for its type (``nodeConfig.taints`` beats ``nodeConfig``); a path no rule names is an
in-place update, as the providers apply every input they do not mark "forces new resource".

Effects:
- ``replace``: the provider deletes and recreates the resource (Terraform "Forces new resource", the Kubernetes
  provider's force-new fields, an immutable field of the API).
- ``roll``: the resource is updated in place, but the cloud applies the change by replacing or reimaging the
  nodes (an EKS node group's new launch template version, an AKS ``orchestratorVersion``, a Karpenter drift).
- ``control-plane``: the control plane's Kubernetes version changes (one way: no cloud downgrades a control plane).
- ``shrink-replaces``: in place when the number grows, a replacement (or a refused update) when it shrinks.
- ``in-place``: named here only to record why a field that looks disruptive is not (taints that the API updates on
  running nodes, the cluster autoscaler's bounds).

Where the provider can be read offline it is the source: the OCI SDK marks every updatable input "(Updatable)" in
its docstrings, and ``tests/test_upgrade_diff.py`` checks the OCI rows against the installed ``pulumi_oci``. Other
rows cite the provider's or the cloud's documentation.
"""

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Optional

REPLACE, ROLL, CONTROL_PLANE, SHRINK_REPLACES, IN_PLACE = "replace", "roll", "control-plane", "shrink-replaces", \
    "in-place"
EFFECTS = (REPLACE, ROLL, CONTROL_PLANE, SHRINK_REPLACES, IN_PLACE)

CONTROL_PLANE_KIND, POOL_KIND, STATEFUL_KIND, KUEUE_KIND, OTHER_KIND = "control plane", "node pool", "stateful", \
    "kueue", "other"

EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
AWS_KMS_KEY = "aws:kms/key:Key"
AKS_CLUSTER = "azure-native:containerservice:ManagedCluster"
AKS_POOL = "azure-native:containerservice:AgentPool"
AMLFS = "azure-native:storagecache:AmlFilesystem"
AZURE_KEY = "azure-native:keyvault:Key"
AZURE_VAULT = "azure-native:keyvault:Vault"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_POOL = "gcp:container/nodePool:NodePool"
GCP_LUSTRE = "gcp:lustre/instance:Instance"
GCP_KMS_KEY = "gcp:kms/cryptoKey:CryptoKey"
GCP_KEY_RING = "gcp:kms/keyRing:KeyRing"
OKE_CLUSTER = "oci:ContainerEngine/cluster:Cluster"
OKE_POOL = "oci:ContainerEngine/nodePool:NodePool"
OCI_FILE_SYSTEM = "oci:FileStorage/fileSystem:FileSystem"
OCI_KMS_KEY = "oci:Kms/key:Key"
OCI_VAULT = "oci:Kms/vault:Vault"
KARPENTER_NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
RESOURCE_FLAVOR = "kubernetes:kueue.x-k8s.io/*:ResourceFlavor"
TOPOLOGY = "kubernetes:kueue.x-k8s.io/*:Topology"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
PV = "kubernetes:core/v1:PersistentVolume"
ANY_KUBERNETES = "kubernetes:*"

_TF_AWS = "https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/"
_TF_GOOGLE = "https://registry.terraform.io/providers/hashicorp/google/latest/docs/resources/"
_OCI_SDK = "pulumi_oci docstrings: not marked (Updatable)"
_OKE_CYCLE = ("OKE applies it to new nodes only; existing nodes are replaced by node cycling "
              "(https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengupgradingimageworkernode.htm)")
_K8S_FORCE_NEW = "pulumi-kubernetes provider/pkg/provider/diff.go forceNew (metadata.name, metadata.namespace)"


@dataclass(frozen=True)
class Rule:
    """One row of the table: changing ``path`` (or anything below it) of a ``type`` resource has ``effect``."""

    type: str
    """Pulumi type token; ``*`` matches any run of characters (``kubernetes:kueue.x-k8s.io/*:Topology``)."""
    path: str
    """Input path in the plan's camelCase wire form, ``[*]`` for any list index; ``""`` is every input."""
    effect: str
    source: str
    """Where the effect is documented: a provider doc URL, the SDK, the CRD."""


RULES: tuple[Rule, ...] = (
    # --- AWS EKS ---
    Rule(EKS_CLUSTER, "version", CONTROL_PLANE,
         _TF_AWS + "eks_cluster#version (UpdateClusterVersion: one minor at a time, no downgrade)"),
    Rule(EKS_CLUSTER, "name", REPLACE, _TF_AWS + "eks_cluster#name (Forces new resource)"),
    Rule(EKS_CLUSTER, "roleArn", REPLACE, _TF_AWS + "eks_cluster#role_arn (Forces new resource)"),
    Rule(EKS_CLUSTER, "bootstrapSelfManagedAddons", REPLACE,
         "pulumi_aws eks.Cluster docstring: 'Changing this value will force a new cluster to be created'"),
    Rule(EKS_NODE_GROUP, "instanceTypes", REPLACE, _TF_AWS + "eks_node_group#instance_types (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "amiType", REPLACE, _TF_AWS + "eks_node_group#ami_type (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "capacityType", REPLACE, _TF_AWS + "eks_node_group#capacity_type (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "diskSize", REPLACE, _TF_AWS + "eks_node_group#disk_size (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "nodeRoleArn", REPLACE, _TF_AWS + "eks_node_group#node_role_arn (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "subnetIds", REPLACE, _TF_AWS + "eks_node_group#subnet_ids (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "clusterName", REPLACE, _TF_AWS + "eks_node_group#cluster_name (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "nodeGroupName", REPLACE, _TF_AWS + "eks_node_group#node_group_name (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "remoteAccess", REPLACE, _TF_AWS + "eks_node_group#remote_access (Forces new resource)"),
    Rule(EKS_NODE_GROUP, "version", ROLL,
         "https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html (new nodes, old drained)"),
    Rule(EKS_NODE_GROUP, "releaseVersion", ROLL,
         "https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html"),
    Rule(EKS_NODE_GROUP, "launchTemplate", ROLL,
         "https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html "
         "(a new launch template version replaces every node)"),
    Rule(EKS_NODE_GROUP, "taints", IN_PLACE,
         "https://docs.aws.amazon.com/eks/latest/APIReference/API_UpdateNodegroupConfig.html "
         "(taints updated on the running nodes)"),
    # Every input of a launch template is part of a new template version, which its node group rolls onto.
    Rule(LAUNCH_TEMPLATE, "", ROLL, _TF_AWS + "launch_template (update_default_version: a new version) + "
         "https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html"),
    Rule(LAUNCH_TEMPLATE, "tags", IN_PLACE, _TF_AWS + "launch_template#tags (the template's own tags, no new version)"),
    Rule(LAUNCH_TEMPLATE, "name", REPLACE, _TF_AWS + "launch_template#name (Forces new resource)"),
    Rule(FSX_LUSTRE, "storageCapacity", SHRINK_REPLACES,
         _TF_AWS + "fsx_lustre_file_system#storage_capacity (increase in place; a decrease forces a new file system)"),
    Rule(FSX_LUSTRE, "deploymentType", REPLACE, _TF_AWS + "fsx_lustre_file_system#deployment_type (Forces new)"),
    Rule(FSX_LUSTRE, "storageType", REPLACE, _TF_AWS + "fsx_lustre_file_system#storage_type (Forces new resource)"),
    Rule(FSX_LUSTRE, "subnetIds", REPLACE, _TF_AWS + "fsx_lustre_file_system#subnet_ids (Forces new resource)"),
    Rule(FSX_LUSTRE, "securityGroupIds", REPLACE,
         _TF_AWS + "fsx_lustre_file_system#security_group_ids (Forces new resource)"),
    Rule(FSX_LUSTRE, "kmsKeyId", REPLACE, _TF_AWS + "fsx_lustre_file_system#kms_key_id (Forces new resource)"),
    Rule(FSX_LUSTRE, "fileSystemTypeVersion", REPLACE,
         _TF_AWS + "fsx_lustre_file_system#file_system_type_version (Forces new resource)"),
    Rule(AWS_KMS_KEY, "customerMasterKeySpec", REPLACE, _TF_AWS + "kms_key#customer_master_key_spec (Forces new)"),
    Rule(AWS_KMS_KEY, "keyUsage", REPLACE, _TF_AWS + "kms_key#key_usage (Forces new resource)"),
    Rule(AWS_KMS_KEY, "multiRegion", REPLACE, _TF_AWS + "kms_key#multi_region (Forces new resource)"),
    # --- Karpenter: a NodePool template or EC2NodeClass change drifts the nodes, which Karpenter replaces ---
    Rule(KARPENTER_NODE_POOL, "spec.template", ROLL, "https://karpenter.sh/docs/concepts/disruption/#drift"),
    Rule(EC2_NODE_CLASS, "spec", ROLL, "https://karpenter.sh/docs/concepts/disruption/#drift"),
    # --- Azure AKS ---
    Rule(AKS_CLUSTER, "kubernetesVersion", CONTROL_PLANE,
         "https://learn.microsoft.com/azure/aks/upgrade-aks-cluster (one minor at a time)"),
    Rule(AKS_CLUSTER, "agentPoolProfiles[*].orchestratorVersion", ROLL,
         "https://learn.microsoft.com/azure/aks/upgrade-cluster (surge: cordon, drain, reimage)"),
    Rule(AKS_CLUSTER, "agentPoolProfiles[*].vmSize", REPLACE,
         "https://learn.microsoft.com/azure/aks/resize-node-pool (an existing pool's VM size cannot change)"),
    Rule(AKS_CLUSTER, "location", REPLACE, "azure-native ManagedCluster: location is part of the resource id"),
    Rule(AKS_POOL, "orchestratorVersion", ROLL, "https://learn.microsoft.com/azure/aks/upgrade-cluster"),
    Rule(AKS_POOL, "nodeImageVersion", ROLL, "https://learn.microsoft.com/azure/aks/node-image-upgrade"),
    Rule(AKS_POOL, "osSKU", ROLL, "https://learn.microsoft.com/azure/aks/upgrade-os-version (reimages the nodes)"),
    Rule(AKS_POOL, "vmSize", REPLACE, "https://learn.microsoft.com/azure/aks/resize-node-pool"),
    Rule(AKS_POOL, "osDiskSizeGB", REPLACE, "https://learn.microsoft.com/azure/aks/resize-node-pool"),
    Rule(AKS_POOL, "osDiskType", REPLACE, "https://learn.microsoft.com/azure/aks/resize-node-pool"),
    Rule(AKS_POOL, "availabilityZones", REPLACE,
         "https://learn.microsoft.com/azure/aks/availability-zones (zones are set when a pool is created)"),
    Rule(AKS_POOL, "vnetSubnetID", REPLACE, "https://learn.microsoft.com/azure/aks/configure-azure-cni"),
    Rule(AKS_POOL, "maxPods", REPLACE, "https://learn.microsoft.com/azure/aks/azure-cni-overview (set at creation)"),
    Rule(AKS_POOL, "scaleSetPriority", REPLACE, "https://learn.microsoft.com/azure/aks/spot-node-pool"),
    Rule(AKS_POOL, "gpuInstanceProfile", REPLACE, "https://learn.microsoft.com/azure/aks/gpu-multi-instance"),
    Rule(AKS_POOL, "gpuProfile", REPLACE, "https://learn.microsoft.com/azure/aks/gpu-cluster (set at creation)"),
    Rule(AKS_POOL, "nodeTaints", IN_PLACE,
         "https://learn.microsoft.com/azure/aks/use-node-taints (az aks nodepool update --node-taints)"),
    Rule(AMLFS, "storageCapacityTiB", REPLACE,
         "https://learn.microsoft.com/azure/azure-managed-lustre/create-file-system-resource-manager "
         "(capacity is fixed at creation)"),
    Rule(AMLFS, "sku", REPLACE, "https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-overview"),
    Rule(AMLFS, "zones", REPLACE, "https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-overview"),
    Rule(AMLFS, "filesystemSubnet", REPLACE, "https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-overview"),
    Rule(AZURE_KEY, "properties.kty", REPLACE, "https://learn.microsoft.com/azure/key-vault/keys/about-keys"),
    Rule(AZURE_KEY, "properties.keySize", REPLACE, "https://learn.microsoft.com/azure/key-vault/keys/about-keys"),
    Rule(AZURE_KEY, "keyName", REPLACE, "azure-native keyvault.Key: keyName is part of the resource id"),
    # --- GCP GKE ---
    Rule(GKE_CLUSTER, "minMasterVersion", CONTROL_PLANE,
         _TF_GOOGLE + "container_cluster#min_master_version"),
    Rule(GKE_CLUSTER, "name", REPLACE, _TF_GOOGLE + "container_cluster#name (Forces new resource)"),
    Rule(GKE_CLUSTER, "location", REPLACE, _TF_GOOGLE + "container_cluster#location (Forces new resource)"),
    Rule(GKE_CLUSTER, "ipAllocationPolicy", REPLACE, _TF_GOOGLE + "container_cluster#ip_allocation_policy"),
    Rule(GKE_CLUSTER, "networkingMode", REPLACE, _TF_GOOGLE + "container_cluster#networking_mode (Forces new)"),
    Rule(GKE_CLUSTER, "datapathProvider", REPLACE, _TF_GOOGLE + "container_cluster#datapath_provider (Forces new)"),
    Rule(GKE_POOL, "version", ROLL, "https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-"
         "strategies (surge or blue-green)"),
    Rule(GKE_POOL, "nodeConfig", REPLACE, _TF_GOOGLE + "container_node_pool#node_config (Forces new resource, "
         "but for the fields the provider updates in place)"),
    Rule(GKE_POOL, "nodeConfig.machineType", ROLL,
         "https://cloud.google.com/kubernetes-engine/docs/how-to/node-pools#vertically-scale (recreates nodes)"),
    Rule(GKE_POOL, "nodeConfig.imageType", ROLL,
         "https://cloud.google.com/kubernetes-engine/docs/concepts/node-images#changing (recreates nodes)"),
    Rule(GKE_POOL, "nodeConfig.diskSizeGb", ROLL,
         "https://cloud.google.com/kubernetes-engine/docs/how-to/node-pools#vertically-scale (recreates nodes)"),
    Rule(GKE_POOL, "nodeConfig.diskType", ROLL,
         "https://cloud.google.com/kubernetes-engine/docs/how-to/node-pools#vertically-scale (recreates nodes)"),
    Rule(GKE_POOL, "nodeConfig.gcfsConfig", ROLL,
         "https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming (recreates nodes)"),
    Rule(GKE_POOL, "nodeConfig.taints", IN_PLACE,
         "https://cloud.google.com/kubernetes-engine/docs/how-to/node-taints#updating (applied to existing nodes)"),
    Rule(GKE_POOL, "nodeConfig.labels", IN_PLACE,
         "https://cloud.google.com/kubernetes-engine/docs/how-to/update-existing-nodepools (labels in place)"),
    Rule(GKE_POOL, "nodeConfig.resourceLabels", IN_PLACE, _TF_GOOGLE + "container_node_pool#resource_labels"),
    Rule(GKE_POOL, "nodeConfig.tags", IN_PLACE, _TF_GOOGLE + "container_node_pool#tags (updated in place)"),
    Rule(GKE_POOL, "nodeConfig.workloadMetadataConfig", IN_PLACE,
         _TF_GOOGLE + "container_node_pool#workload_metadata_config (updated in place)"),
    Rule(GKE_POOL, "name", REPLACE, _TF_GOOGLE + "container_node_pool#name (Forces new resource)"),
    Rule(GKE_POOL, "cluster", REPLACE, _TF_GOOGLE + "container_node_pool#cluster (Forces new resource)"),
    Rule(GKE_POOL, "location", REPLACE, _TF_GOOGLE + "container_node_pool#location (Forces new resource)"),
    Rule(GKE_POOL, "placementPolicy", REPLACE, _TF_GOOGLE + "container_node_pool#placement_policy (Forces new)"),
    Rule(GKE_POOL, "networkConfig", REPLACE, _TF_GOOGLE + "container_node_pool#network_config (Forces new)"),
    Rule(GKE_POOL, "queuedProvisioning", REPLACE, _TF_GOOGLE + "container_node_pool#queued_provisioning"),
    Rule(GCP_LUSTRE, "capacityGib", SHRINK_REPLACES,
         "https://cloud.google.com/managed-lustre/docs/modify-instance (capacity can only grow)"),
    Rule(GCP_LUSTRE, "perUnitStorageThroughput", REPLACE, _TF_GOOGLE + "lustre_instance (Forces new resource)"),
    Rule(GCP_LUSTRE, "filesystem", REPLACE, _TF_GOOGLE + "lustre_instance#filesystem (Forces new resource)"),
    Rule(GCP_LUSTRE, "network", REPLACE, _TF_GOOGLE + "lustre_instance#network (Forces new resource)"),
    Rule(GCP_LUSTRE, "location", REPLACE, _TF_GOOGLE + "lustre_instance#location (Forces new resource)"),
    Rule(GCP_LUSTRE, "instanceId", REPLACE, _TF_GOOGLE + "lustre_instance#instance_id (Forces new resource)"),
    Rule(GCP_KMS_KEY, "purpose", REPLACE, _TF_GOOGLE + "kms_crypto_key#purpose (Forces new resource)"),
    Rule(GCP_KMS_KEY, "keyRing", REPLACE, _TF_GOOGLE + "kms_crypto_key#key_ring (Forces new resource)"),
    Rule(GCP_KMS_KEY, "name", REPLACE, _TF_GOOGLE + "kms_crypto_key#name (Forces new resource)"),
    Rule(GCP_KEY_RING, "location", REPLACE, _TF_GOOGLE + "kms_key_ring#location (Forces new resource)"),
    Rule(GCP_KEY_RING, "name", REPLACE, _TF_GOOGLE + "kms_key_ring#name (Forces new resource)"),
    # --- OCI OKE: inputs the SDK does not mark (Updatable) replace; node properties roll by node cycling ---
    Rule(OKE_CLUSTER, "kubernetesVersion", CONTROL_PLANE,
         "https://docs.oracle.com/en-us/iaas/Content/ContEng/Tasks/contengupgradingk8smasternode.htm"),
    Rule(OKE_CLUSTER, "compartmentId", REPLACE, _OCI_SDK),
    Rule(OKE_CLUSTER, "vcnId", REPLACE, _OCI_SDK),
    Rule(OKE_CLUSTER, "clusterPodNetworkOptions", REPLACE, _OCI_SDK),
    Rule(OKE_CLUSTER, "endpointConfig", REPLACE, _OCI_SDK),
    Rule(OKE_CLUSTER, "kmsKeyId", REPLACE, _OCI_SDK),
    Rule(OKE_POOL, "clusterId", REPLACE, _OCI_SDK),
    Rule(OKE_POOL, "compartmentId", REPLACE, _OCI_SDK),
    Rule(OKE_POOL, "nodeImageId", REPLACE, _OCI_SDK),
    Rule(OKE_POOL, "nodeImageName", REPLACE, _OCI_SDK),
    Rule(OKE_POOL, "kubernetesVersion", ROLL, _OKE_CYCLE),
    Rule(OKE_POOL, "nodeShape", ROLL, _OKE_CYCLE),
    Rule(OKE_POOL, "nodeShapeConfig", ROLL, _OKE_CYCLE),
    Rule(OKE_POOL, "nodeSourceDetails", ROLL, _OKE_CYCLE),
    # The platform's taints reach OKE nodes through kubelet flags in cloud-init (node_metadata.user_data): a
    # running node never re-reads it, so a taint change takes effect as the nodes are replaced.
    Rule(OKE_POOL, "nodeMetadata", ROLL, _OKE_CYCLE),
    Rule(OKE_POOL, "sshPublicKey", ROLL, _OKE_CYCLE),
    Rule(OKE_POOL, "initialNodeLabels", ROLL,
         "https://oracle-terraform-modules.github.io/terraform-oci-oke/guide/workers_node_cycle.html (node labels "
         "are a cycled property)"),
    Rule(OCI_FILE_SYSTEM, "availabilityDomain", REPLACE, _OCI_SDK),
    Rule(OCI_FILE_SYSTEM, "sourceSnapshotId", REPLACE, _OCI_SDK),
    Rule(OCI_KMS_KEY, "keyShape", REPLACE, _OCI_SDK),
    Rule(OCI_KMS_KEY, "managementEndpoint", REPLACE, _OCI_SDK),
    Rule(OCI_KMS_KEY, "externalKeyReference", REPLACE, _OCI_SDK),
    Rule(OCI_KMS_KEY, "protectionMode", REPLACE, _OCI_SDK),
    # --- Kubernetes objects ---
    Rule(ANY_KUBERNETES, "metadata.name", REPLACE, _K8S_FORCE_NEW),
    Rule(ANY_KUBERNETES, "metadata.namespace", REPLACE, _K8S_FORCE_NEW),
    Rule(PVC, "spec", REPLACE,
         "pulumi-kubernetes provider/pkg/provider/diff.go forceNew (PersistentVolumeClaim .spec)"),
    Rule(PV, "spec.csi", REPLACE,
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes/ (a volume's source is immutable)"),
    Rule(PV, "spec.nfs", REPLACE,
         "https://kubernetes.io/docs/concepts/storage/persistent-volumes/ (a volume's source is immutable)"),
    Rule(RESOURCE_FLAVOR, "spec.nodeLabels", REPLACE,
         "crd_schemas/kueue.x-k8s.io ResourceFlavor (nodeLabels immutable with topologyName); "
         "https://kueue.sigs.k8s.io/docs/concepts/resource_flavor/ (admitted workloads keep the old selectors)"),
    Rule(RESOURCE_FLAVOR, "spec.nodeTaints", REPLACE, "https://kueue.sigs.k8s.io/docs/concepts/resource_flavor/"),
    Rule(RESOURCE_FLAVOR, "spec.tolerations", REPLACE,
         "crd_schemas/kueue.x-k8s.io ResourceFlavor (tolerations immutable with topologyName)"),
    Rule(RESOURCE_FLAVOR, "spec.topologyName", REPLACE,
         "crd_schemas/kueue.x-k8s.io ResourceFlavor (topologyName is immutable)"),
    Rule(TOPOLOGY, "spec.levels", REPLACE, "crd_schemas/kueue.x-k8s.io Topology (levels: 'field is immutable')"),
)

KINDS: dict[str, str] = {
    EKS_CLUSTER: CONTROL_PLANE_KIND, AKS_CLUSTER: CONTROL_PLANE_KIND, GKE_CLUSTER: CONTROL_PLANE_KIND,
    OKE_CLUSTER: CONTROL_PLANE_KIND,
    EKS_NODE_GROUP: POOL_KIND, LAUNCH_TEMPLATE: POOL_KIND, AKS_POOL: POOL_KIND, GKE_POOL: POOL_KIND,
    OKE_POOL: POOL_KIND, KARPENTER_NODE_POOL: POOL_KIND, EC2_NODE_CLASS: POOL_KIND,
    FSX_LUSTRE: STATEFUL_KIND, AWS_KMS_KEY: STATEFUL_KIND, "aws:s3/bucket:Bucket": STATEFUL_KIND,
    "aws:s3/bucketV2:BucketV2": STATEFUL_KIND, AMLFS: STATEFUL_KIND, AZURE_KEY: STATEFUL_KIND,
    AZURE_VAULT: STATEFUL_KIND, "azure-native:storage:StorageAccount": STATEFUL_KIND,
    "azure-native:storage:BlobContainer": STATEFUL_KIND, GCP_LUSTRE: STATEFUL_KIND, GCP_KMS_KEY: STATEFUL_KIND,
    GCP_KEY_RING: STATEFUL_KIND, "gcp:storage/bucket:Bucket": STATEFUL_KIND, OCI_FILE_SYSTEM: STATEFUL_KIND,
    OCI_KMS_KEY: STATEFUL_KIND, OCI_VAULT: STATEFUL_KIND, "oci:ObjectStorage/bucket:Bucket": STATEFUL_KIND,
    PVC: STATEFUL_KIND, PV: STATEFUL_KIND,
    RESOURCE_FLAVOR: KUEUE_KIND, TOPOLOGY: KUEUE_KIND,
}
"""What a resource type is to an upgrade: the control plane, a node pool (or what its nodes are launched from),
state that a replacement loses, a Kueue object whose replacement requeues jobs, or other."""


def kind_of(type_token: str) -> str:
    """`KINDS`' kind of a type token (patterns included), ``other`` for any type it does not name."""
    for pattern, kind in KINDS.items():
        if fnmatchcase(type_token, pattern):
            return kind
    return OTHER_KIND


def generic_path(path: str) -> str:
    """``agentPoolProfiles[0].vmSize`` -> ``agentPoolProfiles[*].vmSize``: list indexes as the table writes them."""
    out, i = [], 0
    while i < len(path):
        if path[i] == "[":
            end = path.index("]", i)
            out.append("[*]")
            i = end + 1
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


def _covers(rule_path: str, path: str) -> bool:
    return rule_path == "" or path == rule_path or path.startswith((rule_path + ".", rule_path + "["))


def rule_for(type_token: str, path: str) -> Optional[Rule]:
    """The rule of the longest table path that covers ``path`` of a ``type_token`` resource; None: in place."""
    generic = generic_path(path)
    matches = [r for r in RULES if fnmatchcase(type_token, r.type) and _covers(r.path, generic)]
    return max(matches, key=lambda r: len(r.path)) if matches else None
