"""Issue 38 item 4: each cloud's storage as components a program composes with its cluster component.

For every cloud, a composed program (the cluster component, the cloud's file-system and bucket-access components and
`DataPlaneStorage`, called as a user's own program would) plans exactly the storage resources the stack path plans
for the same settings: same types, names, parents' types and inputs. The stack path keeps its storage resources'
names and inputs, and aliases each to the URN it had as a child of the cluster (no replacement on a deployed stack).
"""

import json
import re
from pathlib import Path

import pulumi
import pytest
import yaml
from conftest import planned_stack, refused

from gpu_platform import plan, versions
from gpu_platform.clouds.aws import EksBucketAccess, EksCluster, EksSharedFileSystem
from gpu_platform.clouds.aws import storage_options as aws_options
from gpu_platform.clouds.azure import AksBucketAccess, AksCluster, AksSharedFileSystem
from gpu_platform.clouds.gcp import GkeBucketAccess, GkeCluster, GkeSharedFileSystem
from gpu_platform.clouds.oci import OkeBucketAccess, OkeCluster, OkeSharedFileSystem
from gpu_platform.clouds.oci import storage_options as oci_options
from gpu_platform.clouds.oci.iam import compartment_scope
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool, pool_args
from gpu_platform.storage.data_plane import DataPlaneStorage
from gpu_platform.testing import run_program

DATA_PLANE = "gpuplatform:index:DataPlaneStorage"
STORAGE_COMPONENTS = {f"gpuplatform:index:{prefix}{kind}" for prefix in ("Eks", "Aks", "Gke", "Oke")
                      for kind in ("SharedFileSystem", "BucketAccess")} | {DATA_PLANE}
TEAM = {"name": "research", "gpuQuota": 8, "storageQuota": "2Ti"}
CLAIM = "1023Gi"
"""Each of the team's two claims: half of 2Ti less the bucket claim's 1Gi (`storage_config.team_claim_gib`)."""
ONLY_STORAGE = {"inference": {"enabled": False}, "training": {"enabled": False}}
OVERCOMMIT = {"scheduling": {"overcommit": True}}
"""The team's 8 GPUs on a 2-GPU pool (Azure's and OCI's here) are declared, or refused."""

AWS_POOL = {"name": "train", "instanceType": "p5.48xlarge", "minNodes": 0, "maxNodes": 2, "rdma": True,
            "zones": ["us-west-2b"]}
AZURE_POOL = {"name": "a100", "instanceType": "Standard_NC24ads_A100_v4", "minNodes": 0, "maxNodes": 2,
              "zones": ["2"]}
GCP_POOL = {"name": "train", "instanceType": "a3-highgpu-8g", "minNodes": 0, "maxNodes": 2, "role": "training",
            "zones": ["us-central1-c"]}
OCI_POOL = {"name": "a10", "instanceType": "VM.GPU.A10.1", "minNodes": 0, "maxNodes": 2, "zones": [1]}
A10 = gpu_pool("oci", {k: v for k, v in OCI_POOL.items() if k != "zones"})
COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaagpuplatformexamplecompartment0000000000000000"

STACKS = {
    "aws": {"cloud": "aws", "region": "us-west-2", "availabilityZones": ["us-west-2a", "us-west-2b"],
            "nodePools": [AWS_POOL], "teams": [TEAM], **ONLY_STORAGE,
            "storage": {"sharedFileSystem": {"sizeGiB": 2400, "throughputPerTiB": 250},
                        "buckets": [{"name": "datasets", "bucket": "acme-datasets"}]}},
    "azure": {"cloud": "azure", "region": "westeurope", "osSku": "Ubuntu", "nodePools": [AZURE_POOL],
              "teams": [TEAM], **ONLY_STORAGE, **OVERCOMMIT,
              "storage": {"sharedFileSystem": {"sizeGiB": 8192, "throughputPerTiB": 250},
                          "buckets": [{"name": "datasets", "bucket": "datasets", "storageAccount": "acmedata",
                                       "readOnly": False, "profile": "checkpoint"}]}},
    "gcp": {"cloud": "gcp", "region": "us-central1", "project": "acme-ml", "nodePools": [GCP_POOL], "teams": [TEAM],
            **ONLY_STORAGE,
            "storage": {"sharedFileSystem": {"sizeGiB": 18000, "throughputPerTiB": 500},
                        "buckets": [{"name": "datasets", "bucket": "acme-datasets", "profile": "serving"}]}},
    "oci": {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT, "nodePools": [OCI_POOL],
            "teams": [TEAM], **ONLY_STORAGE, **OVERCOMMIT,
            "storage": {"sharedFileSystem": {"sizeGiB": 4096},
                        "buckets": [{"name": "datasets", "bucket": "acme-datasets"}]}},
}


def version(cloud: str) -> str:
    """The stack's Kubernetes version (the default): a composed program names the same one."""
    return parse_config(STACKS[cloud], "s").kubernetes_version


def data_plane(name: str, file_system, buckets, provider) -> DataPlaneStorage:
    """`DataPlaneStorage` as a program composes it: the team's claims on the file system, the buckets' claims and
    ServiceAccounts in its namespace, checked against its quota."""
    bucket_part = buckets.data_plane_args(["research"])
    return DataPlaneStorage(f"{name}-storage", {
        **file_system.data_plane_args(), **bucket_part,
        "volumes": [file_system.volume("research", "research-datasets", CLAIM, "teams/research/datasets", keep=True),
                    file_system.volume("research", "research-checkpoints", CLAIM, "teams/research/checkpoints",
                                       keep=True),
                    *bucket_part["volumes"]],
        "storage_quotas": {"research": "2Ti"},
    }, opts=pulumi.ResourceOptions(provider=provider))


def composed_aws() -> None:
    v = version("aws")
    tags = {"gpu-platform.io/stack": "s"}
    cluster = EksCluster("s", {"region": "us-west-2", "kubernetes_version": v, "addon_versions": versions.EKS_ADDONS[v],
                               "availability_zones": ["us-west-2a", "us-west-2b"],
                               "gpu_pools": [pool_args("aws", AWS_POOL)]})
    inside = pulumi.ResourceOptions(parent=cluster)
    file_system = EksSharedFileSystem("s", {
        "cluster_name": cluster.system_node_group.cluster_name, "kubernetes_version": v, "vpc_id": cluster.vpc_id,
        "subnet_id": cluster.private_subnets["us-west-2b"].id,
        "node_security_group_id": cluster.cluster_security_group_id, "size_gib": 2400, "throughput_per_tib": 250,
        "description": "FSx for Lustre of s (placed by the RDMA pool train)", "tags": tags}, opts=inside)
    buckets = EksBucketAccess("s", {
        "cluster_name": cluster.system_node_group.cluster_name, "kubernetes_version": v, "region": "us-west-2",
        "namespaces": ["research"], "buckets": [{"name": "datasets", "bucket": "acme-datasets"}],
        "description": "Bucket access of the storage-access ServiceAccounts of s", "tags": tags}, opts=inside)
    data_plane("s", file_system, buckets, cluster.provider)


def composed_azure() -> None:
    tags = {"gpu-platform-stack": "s"}
    cluster = AksCluster("s", {"location": "westeurope", "kubernetes_version": version("azure"), "os_sku": "Ubuntu",
                               "gpu_pools": [pool_args("azure", AZURE_POOL)], "blob_csi_driver": True})
    file_system = AksSharedFileSystem("s", {
        "resource_group_name": cluster.resource_group_name, "location": "westeurope",
        "virtual_network_name": cluster.virtual_network.name, "subnet_address_prefix": "10.225.0.0/27",
        "size_gib": 8192, "throughput_per_tib": 250, "zone": "2", "tags": tags},
        opts=pulumi.ResourceOptions(parent=cluster, depends_on=[cluster.subnet]))
    buckets = AksBucketAccess("s", {
        "resource_group_name": cluster.resource_group_name, "location": "westeurope",
        "oidc_issuer_url": cluster.oidc_issuer_url, "namespaces": ["research"], "tags": tags,
        "buckets": [{"name": "datasets", "bucket": "datasets", "storage_account": "acmedata", "read_only": False,
                     "profile": "checkpoint"}]}, opts=pulumi.ResourceOptions(parent=cluster))
    data_plane("s", file_system, buckets, cluster.provider)


def composed_gcp() -> None:
    cluster = GkeCluster("s", {"region": "us-central1", "project": "acme-ml", "cluster_name": "s",
                               "kubernetes_version": version("gcp"), "gpu_pools": [pool_args("gcp", GCP_POOL)],
                               "lustre_csi_driver": True, "gcs_fuse_csi_driver": True})
    inside = pulumi.ResourceOptions(parent=cluster)
    file_system = GkeSharedFileSystem("s", {
        "project": cluster.project, "zone": "us-central1-c", "network": cluster.network.name,
        "network_id": cluster.network.id, "size_gib": 18000, "throughput_per_tib": 500}, opts=inside)
    buckets = GkeBucketAccess("s", {
        "project": cluster.project, "namespaces": ["research"],
        "buckets": [{"name": "datasets", "bucket": "acme-datasets", "profile": "serving"}]}, opts=inside)
    data_plane("s", file_system, buckets, cluster.provider)


def composed_oci() -> None:
    cluster = OkeCluster("s", {"compartment_id": COMPARTMENT, "kubernetes_version": version("oci")})
    inside = pulumi.ResourceOptions(parent=cluster)
    file_system = OkeSharedFileSystem("s", {
        "compartment_id": COMPARTMENT, "availability_domain": cluster.availability_domains.apply(lambda ads: ads[0]),
        "vcn_id": cluster.vcn_id, "subnet_id": cluster.worker_subnet_id,
        "client_cidr": cluster.network.layout.workers, "size_gib": 4096}, opts=inside)
    buckets = OkeBucketAccess("s", {
        "compartment_id": COMPARTMENT, "cluster_id": cluster.cluster_id, "region": "us-ashburn-1",
        "buckets": [{"name": "datasets", "bucket": "acme-datasets"}], "pools": [A10.spec()],
        "description": "rclone CSI driver of s: the configured Object Storage buckets (workload identity)"},
        opts=inside)
    data_plane("s", file_system, buckets, cluster.provider)


COMPOSED = {"aws": composed_aws, "azure": composed_azure, "gcp": composed_gcp, "oci": composed_oci}


def storage_of(registrations) -> dict[tuple[str, str], tuple[str, str]]:
    """The storage components and everything under them: ``(type, name) -> (parent's type, inputs as JSON)``."""
    by_urn = {r.urn: r for r in registrations}
    parent_type = {r.urn: r.type for r in registrations}
    roots = {r.urn for r in registrations if r.type in STORAGE_COMPONENTS}

    def under_storage(urn: str) -> bool:
        while urn:
            if urn in roots:
                return True
            urn = by_urn[urn].parent if urn in by_urn else ""
        return False

    # DataPlaneStorage's own parent is the program's choice (the platform component on the stack path).
    return {(r.type, r.name): ("" if r.type == DATA_PLANE else parent_type.get(r.parent, ""),
                               json.dumps(r.inputs, sort_keys=True))
            for r in registrations if under_storage(r.urn)}


def stack_plan(cloud: str, tmp_path: Path):
    path = tmp_path / f"Pulumi.s-{cloud}.yaml"
    path.write_text(yaml.safe_dump({"config": {f"gpu-platform:{k}": v for k, v in STACKS[cloud].items()}}))
    result = plan.plan_stack("s", path)
    assert not result.errors, result.errors
    return result.recording


@pytest.mark.parametrize("cloud", sorted(COMPOSED))
def test_a_composed_program_plans_the_storage_the_stack_path_plans(cloud, tmp_path):
    stack = storage_of(stack_plan(cloud, tmp_path))
    composed = storage_of(run_program(COMPOSED[cloud]))
    assert len(stack) >= 10  # the file system, the bucket grants, the team's volumes and claims...
    assert composed == stack


# ---------------------------------------------------------------------------------------------------------
# The stack path: every storage resource keeps its name and inputs, and is aliased to its former URN


@pytest.mark.parametrize(("stack", "cluster"), [("aws-dev", "EksCluster"), ("azure-dev", "AksCluster"),
                                                ("gcp-dev", "GkeCluster"), ("oci-dev", "OkeCluster")])
def test_the_stack_paths_storage_resources_are_aliased_to_their_urns_under_the_cluster(stack, cluster):
    recording = planned_stack(stack).recording
    components = {r.urn: r for r in recording if r.type in STORAGE_COMPONENTS and r.type != DATA_PLANE}
    assert {r.type.rsplit(":", 1)[-1] for r in components.values()} == {
        cluster[:3] + "SharedFileSystem", cluster[:3] + "BucketAccess"}
    assert {r.parent.rsplit("::", 1)[-1] for r in components.values()} == {stack}
    children = [r for r in recording if r.parent in components]
    assert len(children) >= 8
    for child in children:
        # The URN it had as the cluster's child, before these components (the mock engine's URN form).
        # (azure-native resources also carry the provider's own aliases, of their API-versioned types)
        assert f"urn:pulumi:{stack}::gpu-platform::gpuplatform:index:{cluster}${child.type}::{child.name}" in \
            child.aliases
        assert child.name.startswith(f"{stack}-")


# ---------------------------------------------------------------------------------------------------------
# Claims fit the quota: a cross-component misuse refused at construction


def claims(*sizes: str, namespace: str = "research") -> list[dict]:
    return [{"name": f"claim-{i}", "namespace": namespace, "size": size, "storage_class": "cephfs"}
            for i, size in enumerate(sizes)]


def refusal(build) -> tuple[str, list[str]]:
    """The one error line ``build()`` raises under the mock engine, and what was registered."""
    message, registered = refused(build)
    assert "\n" not in message
    return message, registered

def test_claims_over_the_team_namespaces_storage_quota_are_refused_naming_both_ends():
    message, registered = refusal(lambda: DataPlaneStorage("data", {
        "volumes": [*claims("1Ti", "1536Gi"), *claims("5Ti", namespace="product")],
        "storage_quotas": {"research": "2Ti"}}))
    assert message == ("DataPlaneStorage data: volumes[1].size: claim research/claim-1 brings the claims in namespace "
                       "'research' to 2560Gi, more than its storage quota 2Ti (storage_quotas.research: the "
                       "TeamNamespace's requests.storage)")
    assert registered == []


def test_claims_that_fit_the_quota_are_planned_and_the_quota_decides():
    volumes = [*claims("1Ti", "1Ti"), *claims("5Ti", namespace="product")]  # product has no quota: not checked
    recording = run_program(lambda: DataPlaneStorage("data", {"volumes": volumes,
                                                              "storage_quotas": {"research": "2Ti"}}))
    assert sorted(r.inputs["metadata"]["name"] for r in recording
                  if r.type == "kubernetes:core/v1:PersistentVolumeClaim") == ["claim-0", "claim-0", "claim-1"]
    message, _ = refusal(lambda: DataPlaneStorage("data", {"volumes": volumes,
                                                           "storage_quotas": {"research": "2047Gi"}}))
    assert message.startswith("DataPlaneStorage data: volumes[1].size: claim research/claim-1 brings the claims in "
                              "namespace 'research' to 2Ti, more than its storage quota 2047Gi")


def test_a_volume_without_its_claim_requests_nothing_against_the_quota():
    fs = {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-1::models"}
    run_program(lambda: DataPlaneStorage("data", {
        "volumes": [{"name": "cache", "namespace": "research", "size": "4Ti", "csi": fs, "claim": False}],
        "storage_quotas": {"research": "1Ti"}}))


@pytest.mark.parametrize(("quotas", "message"), [
    ({"Research": "2Ti"}, "storage_quotas: 'Research' is not a namespace name (a DNS label)"),
    ({"research": "2TB"}, "storage_quotas: research: '2TB' is not a storage quantity such as 50Gi"),
])
def test_bad_storage_quotas_are_refused(quotas, message):
    assert refusal(lambda: DataPlaneStorage("data", {"volumes": claims("1Gi"), "storage_quotas": quotas})) == (
        f"DataPlaneStorage data: {message}", [])


def test_the_stack_path_checks_its_claims_against_the_teams_quotas():
    # The platform passes each team's storageQuota, so the stack path meets the rule a composed program meets (the
    # stack's claims fit: `storage.quotas.check_storage_quotas` sized them).
    from gpu_platform.storage.data_plane import checked_args, storage_args
    from gpu_platform.storage.storage_backends import SharedFileSystemBackend, StorageBackends

    config = parse_config(STACKS["aws"], "s")
    backends = StorageBackends(shared_file_system=SharedFileSystemBackend(
        kind="fsx-lustre", capacity_gib=2400, driver="fsx.csi.aws.com",
        csi_source=lambda volume, directory: {"driver": "fsx.csi.aws.com", "volumeHandle": volume}))
    args = storage_args(config, backends, [])
    assert args["storage_quotas"] == {"research": "2Ti"}
    assert [(v["name"], v["size"]) for v in checked_args("s-storage", args)["volumes"]] == [
        ("research-datasets", CLAIM), ("research-checkpoints", CLAIM)]


def test_bucket_claims_only_in_granted_namespaces():
    made = {}
    run_program(lambda: made.setdefault("access", GkeBucketAccess("b", {
        "project": "acme-ml", "namespaces": ["research"], "buckets": [{"name": "datasets", "bucket": "acme-data"}]})))
    with pytest.raises(ConfigError) as err:
        made["access"].volumes(["product"])
    assert str(err.value) == ("GkeBucketAccess b: volumes(namespaces[0]): 'product' was not granted the buckets (the "
                              "component's namespaces: research)")


# ---------------------------------------------------------------------------------------------------------
# Accepted means used: each argument reaches a resource (or the volumes DataPlaneStorage mounts)

FSX, ADDON = "aws:fsx/lustreFileSystem:LustreFileSystem", "aws:eks/addon:Addon"
SG, NODES_IN = "aws:ec2/securityGroup:SecurityGroup", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
ROLE, ASSOCIATION = "aws:iam/role:Role", "aws:eks/podIdentityAssociation:PodIdentityAssociation"
AMLFS, SUBNET = "azure-native:storagecache:AmlFilesystem", "azure-native:network:Subnet"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
CREDENTIAL = "azure-native:managedidentity:FederatedIdentityCredential"
ASSIGNMENT = "azure-native:authorization:RoleAssignment"
INSTANCE, MEMBER = "gcp:lustre/instance:Instance", "gcp:storage/bucketIAMMember:BucketIAMMember"
FSS, TARGET, EXPORT = ("oci:FileStorage/fileSystem:FileSystem", "oci:FileStorage/mountTarget:MountTarget",
                       "oci:FileStorage/export:Export")
NSG = "oci:Core/networkSecurityGroup:NetworkSecurityGroup"
QUOTA = "oci:FileStorage/fileSystemQuotaRule:FileSystemQuotaRule"
POLICY = "oci:Identity/policy:Policy"

BASE = {
    EksSharedFileSystem: {"cluster_name": "c", "kubernetes_version": "1.34", "vpc_id": "vpc-1", "subnet_id": "subnet-1",
                          "node_security_group_id": "sg-nodes", "size_gib": 1200},
    EksBucketAccess: {"cluster_name": "c", "kubernetes_version": "1.34", "region": "us-west-2",
                      "namespaces": ["research"], "buckets": [{"name": "data", "bucket": "acme-data"}]},
    AksSharedFileSystem: {"resource_group_name": "rg", "location": "westeurope", "virtual_network_name": "vnet",
                          "subnet_address_prefix": "10.225.0.0/27", "size_gib": 4096},
    AksBucketAccess: {"resource_group_name": "rg", "location": "westeurope", "oidc_issuer_url": "https://issuer",
                      "namespaces": ["research"],
                      "buckets": [{"name": "data", "bucket": "data", "storage_account": "acmedata"}]},
    GkeSharedFileSystem: {"project": "acme-ml", "zone": "us-central1-c", "network": "vpc", "size_gib": 9000},
    GkeBucketAccess: {"project": "acme-ml", "namespaces": ["research"],
                      "buckets": [{"name": "data", "bucket": "acme-data"}]},
    OkeSharedFileSystem: {"compartment_id": COMPARTMENT, "availability_domain": "AD-1", "vcn_id": "vcn-1",
                          "subnet_id": "subnet-1", "client_cidr": "10.0.16.0/20", "size_gib": 4096},
    OkeBucketAccess: {"compartment_id": COMPARTMENT, "cluster_id": "ocid1.cluster.oc1..c", "region": "us-ashburn-1",
                      "buckets": [{"name": "data", "bucket": "acme-data"}]},
}


def planned(component, **changes):
    """The component alone with its base args and ``changes``: the recording and the component."""
    made = {}
    recording = run_program(lambda: made.setdefault("c", component("f", {**BASE[component], **changes})))
    return recording, made["c"]


def value(recording, type_, name, key):
    """The input at dotted ``key`` of a registration; None when it or the resource is absent."""
    found = [r for r in recording if (r.type, r.name) == (type_, name)]
    inputs = found[0].inputs if found else None
    for part in key.split("."):
        if inputs is None:
            return None
        inputs = inputs[int(part)] if isinstance(inputs, list) else inputs.get(part)
    return inputs


@pytest.mark.parametrize(("component", "change", "type_", "name", "key", "expected"), [
    (EksSharedFileSystem, {"cluster_name": "prod"}, ADDON, "f-aws-fsx-csi-driver", "clusterName", "prod"),
    (EksSharedFileSystem, {"kubernetes_version": "1.35"}, ADDON, "f-aws-fsx-csi-driver", "addonVersion",
     "v1.0.0-eksbuild.1-mock-k8s1.35"),
    (EksSharedFileSystem, {"vpc_id": "vpc-2"}, SG, "f-fsx", "vpcId", "vpc-2"),
    (EksSharedFileSystem, {"subnet_id": "subnet-2"}, FSX, "f-fsx", "subnetIds", "subnet-2"),
    (EksSharedFileSystem, {"node_security_group_id": "sg-2"}, NODES_IN, "f-nodes-lustre-in-0", "securityGroupId",
     "sg-2"),
    (EksSharedFileSystem, {"size_gib": 4800}, FSX, "f-fsx", "storageCapacity", 4800),
    (EksSharedFileSystem, {"throughput_per_tib": 500}, FSX, "f-fsx", "perUnitStorageThroughput", 500),
    (EksSharedFileSystem, {"description": "FSx of prod"}, SG, "f-fsx", "description", "FSx of prod"),
    (EksSharedFileSystem, {"tags": {"team": "ml"}}, FSX, "f-fsx", "tags", {"team": "ml", "Name": "f-fsx"}),
    (EksBucketAccess, {"cluster_name": "prod"}, ASSOCIATION, "f-storage-access-research", "clusterName", "prod"),
    (EksBucketAccess, {"kubernetes_version": "1.35"}, ADDON, "f-aws-mountpoint-s3-csi-driver", "addonVersion",
     "v1.0.0-eksbuild.1-mock-k8s1.35"),
    (EksBucketAccess, {"namespaces": ["research", "product"]}, ASSOCIATION, "f-storage-access-product", "namespace",
     "product"),
    (EksBucketAccess, {"description": "Buckets of prod"}, ROLE, "f-storage-access", "description", "Buckets of prod"),
    (EksBucketAccess, {"tags": {"team": "ml"}}, ROLE, "f-storage-access", "tags", {"team": "ml"}),
    (AksSharedFileSystem, {"resource_group_name": "rg2"}, AMLFS, "f-amlfs", "resourceGroupName", "rg2"),
    (AksSharedFileSystem, {"location": "northeurope"}, AMLFS, "f-amlfs", "location", "northeurope"),
    (AksSharedFileSystem, {"virtual_network_name": "vnet2"}, SUBNET, "f-lustre", "virtualNetworkName", "vnet2"),
    (AksSharedFileSystem, {"subnet_address_prefix": "10.226.0.0/26"}, SUBNET, "f-lustre", "addressPrefix",
     "10.226.0.0/26"),
    (AksSharedFileSystem, {"size_gib": 8192}, AMLFS, "f-amlfs", "storageCapacityTiB", 8.0),
    (AksSharedFileSystem, {"throughput_per_tib": 250, "size_gib": 8192}, AMLFS, "f-amlfs", "sku.name",
     "AMLFS-Durable-Premium-250"),
    (AksSharedFileSystem, {"zone": "3"}, AMLFS, "f-amlfs", "zones", ["3"]),
    (AksSharedFileSystem, {"tags": {"team": "ml"}}, AMLFS, "f-amlfs", "tags", {"team": "ml"}),
    (AksBucketAccess, {"resource_group_name": "rg2"}, IDENTITY, "f-storage-access", "resourceGroupName", "rg2"),
    (AksBucketAccess, {"location": "northeurope"}, IDENTITY, "f-storage-access", "location", "northeurope"),
    (AksBucketAccess, {"oidc_issuer_url": "https://other"}, CREDENTIAL, "f-storage-access-research", "issuer",
     "https://other"),
    (AksBucketAccess, {"namespaces": ["product"]}, CREDENTIAL, "f-storage-access-product", "subject",
     "system:serviceaccount:product:storage-access"),
    (AksBucketAccess, {"storage_resource_group": "data"}, ASSIGNMENT, "f-data-blob", "scope",
     "/subscriptions/00000000-0000-0000-0000-000000000003/resourceGroups/data/providers/Microsoft.Storage/"
     "storageAccounts/acmedata/blobServices/default/containers/data"),
    (AksBucketAccess, {"tags": {"team": "ml"}}, IDENTITY, "f-storage-access", "tags", {"team": "ml"}),
    (GkeSharedFileSystem, {"project": "other"}, INSTANCE, "f-lustre", "project", "other"),
    (GkeSharedFileSystem, {"zone": "us-east4-a"}, INSTANCE, "f-lustre", "location", "us-east4-a"),
    (GkeSharedFileSystem, {"network": "shared"}, INSTANCE, "f-lustre", "network",
     "projects/acme-ml/global/networks/shared"),
    (GkeSharedFileSystem, {"network_id": "projects/acme-ml/global/networks/vpc"},
     "gcp:compute/globalAddress:GlobalAddress", "f-lustre-range", "network", "projects/acme-ml/global/networks/vpc"),
    (GkeSharedFileSystem, {"size_gib": 18000}, INSTANCE, "f-lustre", "capacityGib", "18000"),
    (GkeSharedFileSystem, {"throughput_per_tib": 500, "size_gib": 18000}, INSTANCE, "f-lustre",
     "perUnitStorageThroughput", "500"),
    (GkeSharedFileSystem, {"filesystem": "data"}, INSTANCE, "f-lustre", "filesystem", "data"),
    (GkeSharedFileSystem, {"description": "Lustre of prod"}, INSTANCE, "f-lustre", "description", "Lustre of prod"),
    (GkeBucketAccess, {"project": "other"}, MEMBER, "f-data-research", "member",
     "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/other.svc.id.goog/"
     "subject/ns/research/sa/storage-access"),
    (GkeBucketAccess, {"namespaces": ["product"]}, MEMBER, "f-data-product", "bucket", "acme-data"),
    (GkeBucketAccess, {"buckets": [{"name": "data", "bucket": "acme-data", "read_only": False}]}, MEMBER,
     "f-data-research", "role", "roles/storage.objectUser"),
    (OkeSharedFileSystem, {"compartment_id": "ocid1.compartment.oc1..other"}, FSS, "f-fss", "compartmentId",
     "ocid1.compartment.oc1..other"),
    (OkeSharedFileSystem, {"availability_domain": "AD-2"}, TARGET, "f-fss", "availabilityDomain", "AD-2"),
    (OkeSharedFileSystem, {"vcn_id": "vcn-2"}, NSG, "f-fss", "vcnId", "vcn-2"),
    (OkeSharedFileSystem, {"subnet_id": "subnet-2"}, TARGET, "f-fss", "subnetId", "subnet-2"),
    (OkeSharedFileSystem, {"client_cidr": "10.1.0.0/16"}, EXPORT, "f-fss", "exportOptions.0.source", "10.1.0.0/16"),
    (OkeSharedFileSystem, {"size_gib": 8192}, QUOTA, "f-fss-size", "quotaLimitInGigabytes", 8192),
    (OkeBucketAccess, {"compartment_id": "ocid1.compartment.oc1..other"}, POLICY, "f-buckets", "compartmentId",
     "ocid1.compartment.oc1..other"),
    (OkeBucketAccess, {"description": "Buckets of prod"}, POLICY, "f-buckets", "description", "Buckets of prod"),
    (OkeBucketAccess, {"cluster_id": "ocid1.cluster.oc1..d"}, POLICY, "f-buckets", "statements",
     oci_options.bucket_policy_statements(compartment_scope(COMPARTMENT), "ocid1.cluster.oc1..d",
                                          [("acme-data", True)])),
    (OkeBucketAccess, {"buckets": [{"name": "data", "bucket": "other", "read_only": False}]}, POLICY, "f-buckets",
     "statements", oci_options.bucket_policy_statements(compartment_scope(COMPARTMENT), "ocid1.cluster.oc1..c",
                                                        [("other", False)])),
    (EksBucketAccess, {"buckets": [{"name": "data", "bucket": "other-data", "read_only": False}]},
     "aws:iam/rolePolicy:RolePolicy", "f-storage-access-buckets", "policy",
     aws_options.bucket_policy([("other-data", False)], "aws")),
])
def test_each_argument_reaches_its_resource(component, change, type_, name, key, expected):
    before, _ = planned(component)
    after, _ = planned(component, **change)
    assert value(after, type_, name, key) == expected
    assert value(before, type_, name, key) != expected


def test_what_reaches_the_volumes_dataplanestorage_mounts():
    # EksBucketAccess.region: Mountpoint's region mount option; OkeBucketAccess.region and pools: the rclone
    # chart's workload-identity region and its node plugin's tolerations (GPU taints, OKE's preemptible one).
    _, access = planned(EksBucketAccess, region="eu-west-1")
    assert access.volumes(["research"])[0]["mount_options"][0] == "region eu-west-1"
    _, plain = planned(OkeBucketAccess)
    _, spot = planned(OkeBucketAccess, region="us-phoenix-1",
                      pools=[gpu_pool("oci", {"name": "spot", "instanceType": "VM.GPU.A10.1", "minNodes": 0,
                                              "maxNodes": 2, "spot": True}).spec()])
    (before,), (after,) = plain.data_plane_args(["research"])["csi_charts"], spot.data_plane_args(["research"])[
        "csi_charts"]
    assert before == {"name": "csi-rclone", "values": oci_options.rclone_chart_values(
        "us-ashburn-1", oci_options.node_plugin_tolerations([], False))}
    assert after == {"name": "csi-rclone", "values": oci_options.rclone_chart_values(
        "us-phoenix-1", oci_options.node_plugin_tolerations(
            [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}], True))}


@pytest.mark.parametrize(("component", "change", "message"), [
    (EksSharedFileSystem, {"size_gib": 1000},
     "size_gib: 1000 is no FSx for Lustre PERSISTENT_2 capacity: 1200, 2400 or a multiple of 2400 GiB (nearest: 1200 "
     "or 2400)"),
    (EksSharedFileSystem, {"throughput_per_tib": 200}, "throughput_per_tib: '200' is not one of 125, 250, 500, 1000"),
    (EksBucketAccess, {"buckets": [{"name": "data", "bucket": "Acme_Data"}]},
     "buckets[0].bucket: 'Acme_Data' is not an S3 bucket name"),
    (EksBucketAccess, {"buckets": [{"name": "data", "bucket": "acme-data", "storage_account": "acme"}]},
     "buckets[0].storage_account: names an Azure storage account; only Azure takes it"),
    (EksBucketAccess, {"buckets": [{"name": "data", "bucket": "a-1"}, {"name": "data", "bucket": "a-2"}]},
     "buckets[1]: duplicate bucket claim name 'data' (also buckets[0])"),
    (EksBucketAccess, {"buckets": []}, "buckets: must list at least one bucket"),
    (GkeBucketAccess, {"buckets": [{"name": "data", "bucket": "acme-data", "profile": "archive"}]},
     "buckets[0].profile: 'archive' is not one of training, checkpoint, serving"),
    (AksBucketAccess, {"buckets": [{"name": "data", "bucket": "data"}]},
     "buckets[0].storage_account: is required on Azure (the container's storage account)"),
    (AksSharedFileSystem, {"size_gib": 4000}, "size_gib: Azure Managed Lustre is sized in whole TiB (multiples of "
                                              "1024 GiB), got 4000"),
    (AksSharedFileSystem, {"throughput_per_tib": 1000}, "throughput_per_tib: Azure Managed Lustre sells 125, 250, 500 "
                                                        "MB/s per TiB here, not 1000"),
    (AksSharedFileSystem, {"size_gib": 40960, "subnet_address_prefix": "10.225.0.0/27"},
     "subnet_address_prefix: a 40 TiB file system needs a /26 subnet at least, got /27"),
    (GkeSharedFileSystem, {"size_gib": 10000}, "size_gib: the 1000 MB/s/TiB tier of Managed Lustre grows in steps of "
                                               "9000 GiB at this size; use 9000 or 18000"),
    (GkeSharedFileSystem, {"zone": "us-central1"}, "zone: 'us-central1' is not a zone such as us-central1-c"),
    (OkeSharedFileSystem, {"size_gib": 0}, "size_gib: must be >= 1, got 0"),
])
def test_bad_arguments_are_one_line_before_anything_is_registered(component, change, message):
    error, registered = refusal(lambda: component("f", {**BASE[component], **change}))
    assert error.startswith(f"{component.__name__} f: {message}")
    assert registered == []


def test_the_documented_aws_example_runs():
    text = (Path(__file__).resolve().parent.parent / "docs" / "storage.md").read_text()
    source = re.search(r"### AWS\n\n```python\n(.*?)```", text, re.DOTALL).group(1)
    recording = run_program(lambda: exec(source, {}))
    assert value(recording, FSX, "prod-fsx", "storageCapacity") == 2400
    assert value(recording, FSX, "prod-fsx", "subnetIds") == "subnet-prod-private-us-west-2b"
    assert sorted((r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"], r.inputs["spec"]["resources"])
                  for r in recording.of_type("kubernetes:core/v1:PersistentVolumeClaim")) == [
        ("gpu-storage", "shared-file-system-root", {"requests": {"storage": "1Gi"}}),  # the directories Job's
        ("research", "datasets", {"requests": {"storage": "1Gi"}}),
        ("research", "research-checkpoints", {"requests": {"storage": "1023Gi"}}),
        ("research", "research-datasets", {"requests": {"storage": "1023Gi"}})]


def test_gpu_platform_diff_pairs_a_moved_resource_with_its_former_urn():
    from gpu_platform.upgrades.plan_diff import ADDED, CHANGED, REMOVED, diff_plans, read_plan

    old_urn = ("urn:pulumi:s::gpu-platform::gpuplatform:index:EksCluster$aws:fsx/lustreFileSystem:LustreFileSystem::"
               "s-fsx")
    new_urn = ("urn:pulumi:s::gpu-platform::gpuplatform:index:EksSharedFileSystem$aws:fsx/lustreFileSystem:"
               "LustreFileSystem::s-fsx")
    fsx = {"type": FSX, "name": "s-fsx", "custom": True, "inputs": {"storageCapacity": 2400}}
    old = read_plan({"stack": "s", "resources": [{**fsx, "urn": old_urn}]}, "old")
    new = read_plan({"stack": "s", "resources": [{**fsx, "urn": new_urn, "aliases": [old_urn]}]}, "new")
    (change,) = diff_plans(old, new).changes
    assert (change.action, change.urn, change.old_urn, change.verdict.disruptive, change.verdict.reasons) == (
        CHANGED, new_urn, old_urn, False, ("moves to a new URN its alias adopts: nothing is replaced",))
    # Without the alias the same plans say the file system is deleted (its data with it) and created again.
    unaliased = read_plan({"stack": "s", "resources": [{**fsx, "urn": new_urn}]}, "new")
    assert [(c.action, c.verdict.disruptive) for c in diff_plans(old, unaliased).changes] == [
        (REMOVED, True), (ADDED, False)]


def test_the_plan_records_the_aliases_of_moved_resources_only():
    resources = plan.plan_json(planned_stack("aws-dev"))["resources"]
    fsx = next(r for r in resources if r["type"] == FSX)
    assert fsx["aliases"] == [
        "urn:pulumi:aws-dev::gpu-platform::gpuplatform:index:EksCluster$aws:fsx/lustreFileSystem:LustreFileSystem::"
        "aws-dev-fsx"]
    assert {r["name"] for r in resources if "aliases" in r} == {
        r.name for r in planned_stack("aws-dev").recording if r.parent.split("::")[2].split("$")[-1] in (
            "gpuplatform:index:EksSharedFileSystem", "gpuplatform:index:EksBucketAccess")}
