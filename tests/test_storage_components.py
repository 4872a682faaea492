"""Issue 38 item 4: each cloud's storage as components a program composes with its cluster component.

For every cloud, a composed program (the cluster component, the cloud's file-system and bucket-access components and
`DataPlaneStorage`, called as a user's own program would) plans exactly the storage resources the stack path plans
for the same settings: same types, names, parents' types and inputs. The stack path keeps its storage resources'
names and inputs, and aliases each to the URN it had as a child of the cluster (no replacement on a deployed stack).
"""

import json
from pathlib import Path

import pulumi
import pytest
import yaml
from conftest import planned_stack

from gpu_platform import plan, versions
from gpu_platform.clouds.aws import EksBucketAccess, EksCluster, EksSharedFileSystem
from gpu_platform.clouds.azure import AksBucketAccess, AksCluster, AksSharedFileSystem
from gpu_platform.clouds.gcp import GkeBucketAccess, GkeCluster, GkeSharedFileSystem
from gpu_platform.clouds.oci import OkeBucketAccess, OkeCluster, OkeSharedFileSystem
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
              "teams": [TEAM], **ONLY_STORAGE,
              "storage": {"sharedFileSystem": {"sizeGiB": 8192, "throughputPerTiB": 250},
                          "buckets": [{"name": "datasets", "bucket": "datasets", "storageAccount": "acmedata",
                                       "readOnly": False, "profile": "checkpoint"}]}},
    "gcp": {"cloud": "gcp", "region": "us-central1", "project": "acme-ml", "nodePools": [GCP_POOL], "teams": [TEAM],
            **ONLY_STORAGE,
            "storage": {"sharedFileSystem": {"sizeGiB": 18000, "throughputPerTiB": 500},
                        "buckets": [{"name": "datasets", "bucket": "acme-datasets", "profile": "serving"}]}},
    "oci": {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT, "nodePools": [OCI_POOL],
            "teams": [TEAM], **ONLY_STORAGE,
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
    errors: list[ConfigError] = []

    def program():
        try:
            build()
        except ConfigError as err:
            errors.append(err)
    registered = [r.name for r in run_program(program)]
    assert len(errors) == 1 and "\n" not in str(errors[0])
    return str(errors[0]), registered


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
