"""GKE ``storage``: the Managed Lustre instance and its network, bucket grants, CSI add-ons, image streaming and the
volume sources the Kubernetes layer mounts, under the mock engine; the pure rules in `gcp.storage_options`."""

import pulumi
import pytest
from conftest import planned_stack

from gpu_platform import testing
from gpu_platform.clouds import gcp
from gpu_platform.clouds.gcp import storage as gcp_storage
from gpu_platform.clouds.gcp import storage_options as so
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError

REGION = "us-central1"
PROJECT = "gpu-dev-1"
NUMBER = testing.GCP_PROJECT_NUMBER
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
INSTANCE = "gcp:lustre/instance:Instance"
ADDRESS = "gcp:compute/globalAddress:GlobalAddress"
PEERING = "gcp:servicenetworking/connection:Connection"
FIREWALL = "gcp:compute/firewall:Firewall"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
POOLS = [
    {"name": "infer", "instanceType": "g2-standard-8", "minNodes": 1, "maxNodes": 2, "zones": [f"{REGION}-a"],
     "role": "inference"},
    {"name": "train", "instanceType": "a2-highgpu-1g", "minNodes": 0, "maxNodes": 2, "zones": [f"{REGION}-b"],
     "role": "training"},
]
STORAGE = {
    "sharedFileSystem": {"sizeGiB": 18000, "throughputPerTiB": 500},
    "buckets": [{"name": "datasets", "bucket": "acme-datasets"},
                {"name": "ckpt", "bucket": "acme-ckpt", "readOnly": False, "profile": "checkpoint"}],
    "imagePulls": {"streaming": True},
}


def raw_stack(storage=None, **top):
    raw = {"cloud": "gcp", "region": REGION, "project": PROJECT, "kubernetesVersion": "1.34", "nodePools": POOLS,
           "teams": [{"name": "research", "gpuQuota": 4}], **top}
    if storage is not None:
        raw["storage"] = storage
    return raw


def build(storage=None, **top):
    """Run `cluster_from_config`; returns (recording, resolved csi sources of the storage backends)."""
    config = parse_config(raw_stack(storage, **top), "dev")
    resolved: dict = {}

    def program():
        handle = gcp.cluster_from_config("dev", config, pulumi.ResourceOptions())
        backends = handle.outputs.get("storage")
        resolved["backends"] = backends
        if backends is not None and backends.shared_file_system is not None:
            source = backends.shared_file_system.csi_source("research-datasets", "teams/research/datasets")
            pulumi.Output.from_input(source).apply(lambda s: resolved.setdefault("lustre", s))

    return testing.run_program(program, stack="dev"), resolved


@pytest.fixture(scope="module")
def with_storage():
    return build(STORAGE)


def test_managed_lustre_instance_in_the_training_zone(with_storage):
    recording, _ = with_storage
    instance = recording.one(INSTANCE).inputs
    assert instance == {
        "instanceId": "dev-lustre", "location": f"{REGION}-b", "project": PROJECT,
        "network": f"projects/{PROJECT}/global/networks/dev-vpc", "filesystem": "dev",
        "capacityGib": "18000", "perUnitStorageThroughput": "500",
        "description": "Shared file system of the dev GPU platform"}


def test_private_services_access_and_lustre_firewall(with_storage):
    recording, _ = with_storage
    address = recording.one(ADDRESS).inputs
    assert (address["purpose"], address["addressType"], address["address"], address["prefixLength"]) == (
        "VPC_PEERING", "INTERNAL", "10.10.0.0", 20)
    peering = recording.one(PEERING).inputs
    assert peering["service"] == "servicenetworking.googleapis.com"
    assert peering["reservedPeeringRanges"] == ["dev-lustre-range"]
    firewall = recording.one(FIREWALL, "dev-lustre").inputs
    assert firewall["direction"] == "INGRESS"
    assert firewall["sourceRanges"] == ["10.10.0.0/20"]
    assert firewall["allows"] == [{"protocol": "tcp", "ports": ["988"]}]
    instance = recording.one(INSTANCE)
    assert recording.one(PEERING).urn in instance.dependencies
    assert recording.one(FIREWALL, "dev-lustre").urn in instance.dependencies


def test_csi_add_ons_on_the_cluster(with_storage):
    recording, _ = with_storage
    assert recording.one(CLUSTER).inputs["addonsConfig"] == {
        "lustreCsiDriverConfig": {"enabled": True}, "gcsFuseCsiDriverConfig": {"enabled": True}}


def test_image_streaming_on_every_gpu_pool(with_storage):
    recording, _ = with_storage
    for pool in ("infer", "train"):
        assert recording.one(NODE_POOL, f"dev-{pool}-pool").inputs["nodeConfig"]["gcfsConfig"] == {"enabled": True}


def test_bucket_roles_for_each_namespace_principal(with_storage):
    recording, _ = with_storage
    members = {r.name: r.inputs for r in recording.of_type(BUCKET_MEMBER)}
    namespaces = ("research", "inference")  # the team's and the sentiment app's (on by default)
    assert set(members) == {f"dev-{b}-{ns}" for b in ("datasets", "ckpt") for ns in namespaces}
    principal = (f"principal://iam.googleapis.com/projects/{NUMBER}/locations/global/workloadIdentityPools/"
                 f"{PROJECT}.svc.id.goog/subject/ns/research/sa/storage-access")
    assert members["dev-datasets-research"] == {
        "bucket": "acme-datasets", "role": "roles/storage.objectViewer", "member": principal}
    assert members["dev-ckpt-research"]["role"] == "roles/storage.objectUser"
    assert members["dev-ckpt-inference"]["member"].endswith("/subject/ns/inference/sa/storage-access")


def test_backends_describe_the_volumes(with_storage):
    _, resolved = with_storage
    backends = resolved["backends"]
    fs = backends.shared_file_system
    assert (fs.kind, fs.capacity_gib, fs.driver, fs.throughput_mbps_per_tib, fs.csi_chart) == (
        "gcp-managed-lustre", 18000, "lustre.csi.storage.gke.io", 500, None)
    assert fs.sub_directory_mounts is False  # the driver mounts the root: workloads get subPaths
    assert resolved["lustre"] == {
        "driver": "lustre.csi.storage.gke.io",
        "volumeHandle": f"{PROJECT}/{REGION}-b/dev-lustre:research-datasets",
        "volumeAttributes": {"mountpoint": "10.10.0.2@tcp:/dev"}}
    datasets, ckpt = backends.buckets
    assert datasets.csi_source("research-datasets") == {
        "driver": "gcsfuse.csi.storage.gke.io", "volumeHandle": "acme-datasets", "readOnly": True}
    assert ckpt.csi_source("x") == {"driver": "gcsfuse.csi.storage.gke.io", "volumeHandle": "acme-ckpt"}
    assert datasets.pod_annotations == {"gke-gcsfuse/volumes": "true"}
    assert datasets.mount_options == so.GCSFUSE_MOUNT_OPTIONS["training"]
    assert ckpt.mount_options[-2:] == ("metadata-cache:negative-ttl-secs:0", "rename-dir-limit=200000")
    assert backends.service_account_annotations == {}
    assert backends.image_streaming is True


def test_without_storage_nothing_changes():
    recording, resolved = build()
    assert resolved["backends"] is None
    assert "addonsConfig" not in recording.one(CLUSTER).inputs
    assert all("gcfsConfig" not in r.inputs["nodeConfig"] for r in recording.of_type(NODE_POOL))
    for type_ in (INSTANCE, ADDRESS, PEERING, BUCKET_MEMBER):
        assert recording.of_type(type_) == []


def test_buckets_only_turn_on_gcs_fuse_alone():
    recording, resolved = build({"buckets": [{"name": "data", "bucket": "acme-data", "profile": "serving"}]})
    assert recording.one(CLUSTER).inputs["addonsConfig"] == {"gcsFuseCsiDriverConfig": {"enabled": True}}
    assert recording.of_type(INSTANCE) == []
    assert resolved["backends"].buckets[0].mount_options == so.GCSFUSE_MOUNT_OPTIONS["serving"]
    assert all("gcfsConfig" not in r.inputs["nodeConfig"] for r in recording.of_type(NODE_POOL))


def test_existing_network_gets_the_instance_only():
    recording, _ = build({"sharedFileSystem": {"sizeGiB": 9000}}, network="shared-vpc",
                         subnetwork="shared-nodes", zone=f"{REGION}-c", proxyOnlyCidr="10.129.0.0/23")
    instance = recording.one(INSTANCE).inputs
    assert instance["network"] == f"projects/{PROJECT}/global/networks/shared-vpc"
    assert (instance["location"], instance["perUnitStorageThroughput"]) == (f"{REGION}-c", "1000")
    assert recording.of_type(ADDRESS) == [] and recording.of_type(PEERING) == []


def test_gpudirect_nodes_turn_lustre_multi_nic_off():
    assert gcp.cluster.storage_addons(True, False, True) == {
        "lustre_csi_driver_config": {"enabled": True, "disable_multi_nic": True}}
    assert gcp.cluster.storage_addons(False, False, True) is None


@pytest.mark.parametrize("fs, key, message", [
    ({"sizeGiB": 9000, "throughputPerTiB": 500}, "sizeGiB", "takes 18000-20016000 GiB, got 9000"),
    ({"sizeGiB": 20000}, "sizeGiB", "steps of 9000 GiB at this size; use 18000 or 27000"),
    ({"sizeGiB": 1_602_000}, "sizeGiB", "steps of 72000 GiB"),
    ({"sizeGiB": 72000, "throughputPerTiB": 125}, None, None),
])
def test_lustre_capacity_rules(fs, key, message):
    if key is None:
        assert parse_config(raw_stack({"sharedFileSystem": fs}), "dev").storage.shared_file_system.size_gib == 72000
        return
    with pytest.raises(ConfigError) as err:
        parse_config(raw_stack({"sharedFileSystem": fs}), "dev")
    assert err.value.path == f"storage.sharedFileSystem.{key}"
    assert message in str(err.value)


def test_lustre_needs_a_zone_and_a_port_988_minor():
    no_zones = [{**POOLS[0], "zones": []}]
    with pytest.raises(ConfigError, match="lives in one zone"):
        parse_config(raw_stack({"sharedFileSystem": {"sizeGiB": 9000}}, nodePools=no_zones,
                               teams=[{"name": "research", "gpuQuota": 2}]), "dev")
    with pytest.raises(ConfigError, match="port 988 from 1.33.2-gke.4780000"):
        parse_config(raw_stack({"sharedFileSystem": {"sizeGiB": 9000}}, kubernetesVersion="1.33"), "dev")


def test_pure_names_and_zone_choice():
    assert so.lustre_filesystem_name("2024-Research_Stack") == "research"
    assert so.lustre_filesystem_name("123") == "gpu"
    assert gcp_storage.network_path("p1", "https://www.googleapis.com/compute/v1/projects/host/global/networks/n") \
        == "projects/host/global/networks/n"
    config = parse_config(raw_stack(), "dev")
    assert so.lustre_zone(None, config.node_pools) == f"{REGION}-b"  # the training pool's
    assert so.lustre_zone(f"{REGION}-f", config.node_pools) == f"{REGION}-f"
    assert so.bucket_role(True) == "roles/storage.objectViewer"


# ---------------------------------------------------------------------------------------------------------
# gcp-dev as committed: every volume is the whole file system, so the platform's pods mount their directory


@pytest.fixture(scope="module")
def gcp_dev():
    return planned_stack("gcp-dev")


def pod_mounts(manifests, name):
    """(kind, object, container, mount) of every ``volumeMounts`` entry named ``name`` in a pod template."""
    out = []
    for m in manifests:
        spec = m.get("spec", {})
        template = spec.get("template") or spec.get("jobTemplate", {}).get("spec", {}).get("template") or {}
        for c in [*template.get("spec", {}).get("initContainers", []), *template.get("spec", {}).get("containers", [])]:
            out += [(m["kind"], m["metadata"]["name"], c["name"], v) for v in c.get("volumeMounts", [])
                    if v["name"] == name]
    return out


def test_gcp_dev_pods_keep_to_their_directories(gcp_dev):
    datasets = pod_mounts(gcp_dev.manifests, "datasets")
    assert datasets and {(v["mountPath"], v["subPath"], v["readOnly"]) for *_, v in datasets} <= {
        ("/data", f"teams/{team}/datasets", True) for team in ("research", "product")}
    checkpoints = [v for *_, v in pod_mounts(gcp_dev.manifests, "checkpoints")]
    assert checkpoints and all(v["subPath"] in ("teams/research/checkpoints", "teams/product/checkpoints")
                               for v in checkpoints)
    caches = [v for *_, v in pod_mounts(gcp_dev.manifests, "model-cache")]
    assert caches and all(v == {"name": "model-cache", "mountPath": "/model-cache", "subPath": "models"}
                          for v in caches)
    # The volumes themselves are the whole file system: what the subPaths are for.
    pvs = [m for m in gcp_dev.manifests if m["kind"] == "PersistentVolume"
           and m["spec"]["csi"]["driver"] == "lustre.csi.storage.gke.io"]
    assert pvs and {pv["spec"]["csi"]["volumeAttributes"]["mountpoint"] for pv in pvs} == {
        pvs[0]["spec"]["csi"]["volumeAttributes"]["mountpoint"]}
