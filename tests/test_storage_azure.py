"""AKS ``storage``: the Azure Managed Lustre file system and its subnet, blob access through Workload Identity, the
Blob CSI add-on and the volume sources the Kubernetes layer mounts, under the mock engine; the pure rules in
`azure.storage_options`."""

from pathlib import Path

import pulumi
import pytest
from conftest import planned_stack

from gpu_platform.clouds.azure import cluster_from_config
from gpu_platform.clouds.azure import storage_options as so
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.storage.storage_backends import CsiDriverManifests
from gpu_platform.testing import AZURE_SUBSCRIPTION_ID, run_program

CLUSTER = "azure-native:containerservice:ManagedCluster"
AMLFS = "azure-native:storagecache:AmlFilesystem"
SUBNET = "azure-native:network:Subnet"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
FEDERATED = "azure-native:managedidentity:FederatedIdentityCredential"
ROLE = "azure-native:authorization:RoleAssignment"
POOLS = [
    {"name": "infer", "instanceType": "Standard_NC24ads_A100_v4", "minNodes": 1, "maxNodes": 2, "role": "inference",
     "zones": ["1", "2"]},
    {"name": "train", "instanceType": "Standard_ND96isr_H100_v5", "minNodes": 0, "maxNodes": 2, "rdma": True,
     "role": "training", "zones": ["3"]},
]
BUCKETS = [{"name": "datasets", "bucket": "datasets", "storageAccount": "acmedata"},
           {"name": "ckpt", "bucket": "ckpt", "storageAccount": "acmedata", "readOnly": False,
            "profile": "checkpoint"}]
STORAGE = {"sharedFileSystem": {"sizeGiB": 16384, "throughputPerTiB": 250}, "buckets": BUCKETS}


def raw_stack(storage=None, **top):
    raw = {"cloud": "azure", "region": "westeurope", "kubernetesVersion": "1.34", "nodePools": POOLS,
           "teams": [{"name": "research", "gpuQuota": 8}], **top}
    if storage is not None:
        raw["storage"] = storage
    return raw


def build(storage=None, **top):
    """Run `cluster_from_config`; returns (recording, what the storage backends resolve to)."""
    config = parse_config(raw_stack(storage, **top), "dev")
    seen: dict = {}

    def program():
        backends = cluster_from_config("dev", config, pulumi.ResourceOptions()).outputs.get("storage")
        seen["backends"] = backends
        if backends is None:
            return
        if backends.shared_file_system is not None:
            source = backends.shared_file_system.csi_source("research-datasets", "teams/research/datasets")
            pulumi.Output.from_input(source).apply(lambda s: seen.setdefault("lustre", s))
            root = backends.shared_file_system.csi_source("root", "")
            pulumi.Output.from_input(root).apply(lambda s: seen.setdefault("root", s))
        for bucket in backends.buckets:
            pulumi.Output.from_input(bucket.csi_source(f"research-{bucket.name}")).apply(
                lambda s, n=bucket.name: seen.setdefault(n, s))
        pulumi.Output.from_input(backends.service_account_annotations).apply(lambda a: seen.setdefault("sa", a))

    return run_program(program, stack="dev"), seen


@pytest.fixture(scope="module")
def with_storage():
    return build(STORAGE, storageResourceGroup="data-rg")


def test_amlfs_in_its_own_subnet_and_the_rdma_pools_zone(with_storage):
    recording, _ = with_storage
    subnet = recording.one(SUBNET, "dev-lustre").inputs
    assert subnet["addressPrefix"] == "10.225.0.0/27"  # 16 TiB: a /27, right after the nodes' 10.224.0.0/16
    amlfs = recording.one(AMLFS).inputs
    assert amlfs["sku"] == {"name": "AMLFS-Durable-Premium-250"}
    assert amlfs["storageCapacityTiB"] == 16
    assert amlfs["zones"] == ["3"]
    assert amlfs["maintenanceWindow"] == {"dayOfWeek": "Sunday", "timeOfDayUTC": "02:00"}
    assert amlfs["filesystemSubnet"].endswith("/Microsoft.Network/virtualNetworks/dev-vnet/subnets/dev-lustre")


def test_lustre_volume_sources_mount_subdirectories(with_storage):
    _, seen = with_storage
    fs = seen["backends"].shared_file_system
    assert (fs.kind, fs.capacity_gib, fs.driver, fs.throughput_mbps_per_tib) == (
        "azure-managed-lustre", 16384, "azurelustre.csi.azure.com", 250)
    assert fs.mount_options == ("noatime", "flock")
    assert (fs.csi_chart, fs.csi_manifests) == (None, CsiDriverManifests("azurelustre-csi-driver"))
    assert fs.sub_directory_mounts is True
    assert seen["lustre"] == {
        "driver": "azurelustre.csi.azure.com",
        "volumeHandle": "research-datasets#lustrefs#10.225.0.4#teams/research/datasets#f#",
        "volumeAttributes": {"mgs-ip-address": "10.225.0.4", "sub-dir": "teams/research/datasets"}}
    assert seen["root"]["volumeAttributes"] == {"mgs-ip-address": "10.225.0.4"}  # no empty sub-dir: the driver refuses


def test_blob_csi_add_on_on_the_cluster(with_storage):
    recording, _ = with_storage
    assert recording.one(CLUSTER).inputs["storageProfile"] == {"blobCSIDriver": {"enabled": True}}


def test_one_identity_federated_per_namespace(with_storage):
    recording, seen = with_storage
    identity = recording.one(IDENTITY, "dev-storage-access")
    credentials = {r.name: r.inputs for r in recording.of_type(FEDERATED)}
    assert set(credentials) == {"dev-storage-access-research", "dev-storage-access-inference"}
    research = credentials["dev-storage-access-research"]
    assert research["subject"] == "system:serviceaccount:research:storage-access"
    assert research["audiences"] == ["api://AzureADTokenExchange"]
    assert research["issuer"].startswith("https://")
    inference = recording.one(FEDERATED, "dev-storage-access-inference")
    assert recording.one(FEDERATED, "dev-storage-access-research").urn in inference.dependencies  # one at a time
    assert identity.inputs["resourceGroupName"] == research["resourceGroupName"]
    assert list(seen["sa"]) == ["azure.workload.identity/client-id"]


def test_roles_scoped_to_each_container(with_storage):
    recording, _ = with_storage
    roles = {r.name: r.inputs for r in recording.of_type(ROLE) if r.name.endswith("-blob")}
    prefix = f"/subscriptions/{AZURE_SUBSCRIPTION_ID}"
    assert roles["dev-datasets-blob"]["roleDefinitionId"] == (
        f"{prefix}/providers/Microsoft.Authorization/roleDefinitions/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1")
    assert roles["dev-ckpt-blob"]["roleDefinitionId"].endswith("/ba92f5b4-2d11-453d-a403-e96b0029c9fe")
    assert roles["dev-datasets-blob"]["scope"] == (
        f"{prefix}/resourceGroups/data-rg/providers/Microsoft.Storage/storageAccounts/acmedata/blobServices/default/"
        "containers/datasets")
    assert roles["dev-datasets-blob"]["principalType"] == "ServicePrincipal"


def test_blob_volume_sources_use_the_workload_token(with_storage):
    _, seen = with_storage
    datasets, ckpt = seen["backends"].buckets
    assert seen["datasets"]["volumeHandle"] == "data-rg#acmedata#datasets#research-datasets"
    assert seen["datasets"]["readOnly"] is True
    attributes = seen["ckpt"]["volumeAttributes"]
    assert {k: v for k, v in attributes.items() if k != "clientID"} == {
        "storageaccount": "acmedata", "containerName": "ckpt", "resourcegroup": "data-rg", "protocol": "fuse2",
        "mountWithWorkloadIdentityToken": "true"}
    assert attributes["clientID"] == seen["sa"]["azure.workload.identity/client-id"]
    assert "readOnly" not in seen["ckpt"]
    assert datasets.pod_labels == {"azure.workload.identity/use": "true"}
    assert "--block-cache" in datasets.mount_options
    assert ckpt.mount_options[-1] == "--file-cache-timeout-in-seconds=120"


def test_without_storage_nothing_changes():
    recording, seen = build()
    assert seen["backends"] is None
    assert "storageProfile" not in recording.one(CLUSTER).inputs
    for type_ in (AMLFS, FEDERATED):
        assert recording.of_type(type_) == []
    assert [r.name for r in recording.of_type(IDENTITY)] == ["dev-identity"]


def test_storage_resource_group_defaults_to_the_clusters():
    recording, seen = build({"buckets": BUCKETS[:1]})
    assert recording.of_type(AMLFS) == []
    assert seen["datasets"]["volumeHandle"].split("#")[0] == "dev-rg"


@pytest.mark.parametrize("storage, top, path, message", [
    ({"sharedFileSystem": {"sizeGiB": 4000}}, {}, "storage.sharedFileSystem.sizeGiB", "whole TiB"),
    ({"sharedFileSystem": {"sizeGiB": 12288, "throughputPerTiB": 250}}, {}, "storage.sharedFileSystem.sizeGiB",
     "steps of 8 TiB"),
    ({"sharedFileSystem": {"sizeGiB": 16384, "throughputPerTiB": 1000}}, {},
     "storage.sharedFileSystem.throughputPerTiB", "125, 250, 500"),
    ({"buckets": [{"name": "data", "bucket": "data"}]}, {}, "storage.buckets[0].storageAccount",
     "is required on Azure"),
    ({"imagePulls": {"streaming": True}}, {}, "storage.imagePulls.streaming", "artifact_streaming_profile"),
    ({"sharedFileSystem": {"sizeGiB": 4096}}, {"osSku": "AzureLinux"}, "osSku", "Ubuntu nodes only"),
    ({"sharedFileSystem": {"sizeGiB": 4096}}, {"vnetSubnetId": (
        "/subscriptions/1/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/hub/subnets/aks")},
     "storage.sharedFileSystem", "with vnetSubnetId"),
    ({"sharedFileSystem": {"sizeGiB": 4096}}, {"storageResourceGroup": "data"}, "storageResourceGroup",
     "only with storage.buckets"),
])
def test_refused(storage, top, path, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw_stack(storage, **top), "dev")
    assert err.value.path == path
    assert message in str(err.value)


def test_pure_sizes_and_names():
    assert so.amlfs_capacity_problem(4096, None) is None  # 4 TiB at the default 500 MB/s/TiB
    assert so.amlfs_tier(None).sku == "AMLFS-Durable-Premium-500"
    assert [so.amlfs_subnet_prefix(t * 1024) for t in (4, 16, 20, 48, 96, 128)] == [27, 27, 26, 25, 24, 24]
    assert so.amlfs_subnet("10.0.0.0/16", "10.0.0.0/24", 8192) == "10.0.1.0/27"
    with pytest.raises(ConfigError, match="no room"):
        so.amlfs_subnet("10.0.0.0/24", "10.0.0.0/24", 8192)
    assert so.container_scope("s", "g", "a", "c") == (
        "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/storageAccounts/a/blobServices/default/"
        "containers/c")
    assert so.blob_role(False) == so.BLOB_DATA_CONTRIBUTOR


# ---------------------------------------------------------------------------------------------------------
# azure-dev as committed: the file system, the driver's pinned manifests and the volumes on it

ROOT = Path(__file__).resolve().parent.parent
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
LUSTRE_MANIFESTS = [
    f"https://raw.githubusercontent.com/kubernetes-sigs/azurelustre-csi-driver/v0.4.0/deploy/{f}" for f in (
        "rbac-csi-azurelustre-controller.yaml", "rbac-csi-azurelustre-node.yaml", "csi-azurelustre-driver.yaml",
        "csi-azurelustre-controller.yaml", "csi-azurelustre-node-jammy.yaml", "csi-azurelustre-node-noble.yaml")]


@pytest.fixture(scope="module")
def azure_dev():
    return planned_stack("azure-dev")


def test_azure_dev_plans_the_smallest_amlfs(azure_dev):
    amlfs = azure_dev.recording.one(AMLFS).inputs
    assert (amlfs["sku"], amlfs["storageCapacityTiB"], amlfs["zones"]) == (
        {"name": "AMLFS-Durable-Premium-500"}, 4, ["1"])  # h100-train gives no zones: the first pool with zones
    assert azure_dev.recording.one(SUBNET, "azure-dev-lustre").inputs["addressPrefix"] == "10.225.0.0/27"


def test_azure_dev_applies_the_lustre_driver_manifests_in_order(azure_dev):
    by_file = {r.inputs["file"]: r for r in azure_dev.recording.registrations
               if r.type == CONFIG_FILE and "azurelustre" in r.inputs["file"]}
    assert sorted(by_file) == sorted(LUSTRE_MANIFESTS)
    files = [by_file[url] for url in LUSTRE_MANIFESTS]
    assert [r.name for r in files] == [f"azure-dev-storage-{u.rsplit('/', 1)[1][:-5]}" for u in LUSTRE_MANIFESTS]
    for before, after in zip(files, files[1:], strict=False):  # the upstream installer's order
        assert before.urn in after.dependencies
    # Every volume of the file system waits for the driver (its node plugin mounts them).
    volumes = [r for r in azure_dev.recording.registrations if r.type == "kubernetes:core/v1:PersistentVolume"
               and r.name.startswith("azure-dev-storage-") and "lustre" in str(r.inputs)]
    assert volumes and all(files[-1].urn in v.dependencies for v in volumes)


def test_azure_dev_volumes_carry_the_drivers_attributes(azure_dev):
    pvs = {m["metadata"]["name"]: m["spec"] for m in azure_dev.manifests if m["kind"] == "PersistentVolume"
           and m["spec"]["csi"]["driver"] == "azurelustre.csi.azure.com"}
    assert sorted(pvs) == ["gpu-storage-shared-file-system-root", "inference-sentiment-model-cache",
                           "product-product-checkpoints", "product-product-datasets",
                           "research-research-checkpoints", "research-research-datasets"]
    datasets = pvs["research-research-datasets"]
    assert datasets["csi"] == {
        "driver": "azurelustre.csi.azure.com",
        "volumeHandle": "research-research-datasets#lustrefs#10.225.0.4#teams/research/datasets#f#",
        "volumeAttributes": {"mgs-ip-address": "10.225.0.4", "sub-dir": "teams/research/datasets"}}
    assert (datasets["accessModes"], datasets["mountOptions"]) == (["ReadWriteMany"], ["noatime", "flock"])
    assert pvs["inference-sentiment-model-cache"]["csi"]["volumeAttributes"]["sub-dir"] == "models"
    assert "sub-dir" not in pvs["gpu-storage-shared-file-system-root"]["csi"]["volumeAttributes"]
