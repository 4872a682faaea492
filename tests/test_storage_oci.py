"""Issue 23 on OCI: an OCI File Storage file system, its mount target, export and NFS rules, and Object Storage
buckets through the rclone CSI driver with OKE workload identity, from a stack's ``storage`` keys to the exact inputs
OCI receives, the chart values (checked against the chart's key list) and the CSI sources the Kubernetes layer
mounts; the keys OCI cannot honour refused in one line; and nothing at all without the keys."""

import copy
import json
from pathlib import Path

import pulumi
import pytest
import yaml
from chart_keys import load_keys, unknown_keys

from gpu_platform import plan, versions
from gpu_platform.clouds.oci import storage as oci_storage
from gpu_platform.clouds.oci import storage_options as so
from gpu_platform.clouds.oci.cluster import cluster_from_config
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.testing import MOCK_OCI_OBJECT_STORAGE_NAMESPACE, run_program

ROOT = Path(__file__).resolve().parent.parent
COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
FS = "oci:FileStorage/fileSystem:FileSystem"
MOUNT_TARGET = "oci:FileStorage/mountTarget:MountTarget"
EXPORT = "oci:FileStorage/export:Export"
NSG = "oci:Core/networkSecurityGroup:NetworkSecurityGroup"
NSG_RULE = "oci:Core/networkSecurityGroupSecurityRule:NetworkSecurityGroupSecurityRule"
QUOTA = "oci:FileStorage/fileSystemQuotaRule:FileSystemQuotaRule"
POLICY = "oci:Identity/policy:Policy"
RELEASE = "kubernetes:helm.sh/v3:Release"
PV = "kubernetes:core/v1:PersistentVolume"
KEYS_DIR = ROOT / "tests" / "data" / "chart_keys"
A10 = {"name": "a10-infer", "instanceType": "VM.GPU.A10.1", "minNodes": 1, "maxNodes": 4}
TEAM_ON_A10 = {"name": "research", "gpuQuota": 4}
"""A team the A10 pool alone holds (4 GPUs at its maximum size)."""
H100 = {"name": "h100-train", "instanceType": "BM.GPU.H100.8", "minNodes": 2, "maxNodes": 2, "rdma": True,
        "imageId": "ocid1.image.oc1.iad.aaaaaaaaubuntudocaofed", "zones": [2]}


def config_of(storage: dict, pools=None, **top):
    raw = {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT, "storage": storage,
           "nodePools": pools or [dict(A10), dict(H100)], "teams": [{"name": "research", "gpuQuota": 8}], **top}
    return parse_config(raw, "s")


def run(config, exports=None):
    def program():
        handle = cluster_from_config("oke", config, pulumi.ResourceOptions())
        if exports is not None:
            exports(handle)
    return run_program(program, stack="s")


# ---------------------------------------------------------------------------------------------------------
# Configuration rules


@pytest.mark.parametrize(("storage", "path"), [
    ({"sharedFileSystem": {"sizeGiB": 1024, "throughputPerTiB": 125}}, "storage.sharedFileSystem.throughputPerTiB"),
    ({"imagePulls": {"streaming": True}}, "storage.imagePulls.streaming"),
])
def test_keys_oci_cannot_honour_are_refused_in_one_line(storage, path):
    with pytest.raises(ConfigError) as err:
        config_of(storage)
    assert str(err.value) == f"s: {path}: {so.REFUSED[path]}"
    assert "\n" not in str(err.value)


def test_buckets_are_accepted_and_storage_account_stays_azure_only():
    config = config_of({"buckets": [{"name": "data", "bucket": "datasets"},
                                    {"name": "ckpt", "bucket": "ckpts", "readOnly": False, "profile": "checkpoint"}]})
    assert [(b.name, b.bucket, b.read_only, b.profile) for b in config.storage.buckets] == [
        ("data", "datasets", True, "training"), ("ckpt", "ckpts", False, "checkpoint")]
    assert "storage.buckets" not in so.REFUSED
    with pytest.raises(ConfigError) as err:
        config_of({"buckets": [{"name": "data", "bucket": "datasets", "storageAccount": "acct1"}]})
    assert str(err.value).startswith("s: storage.buckets[0].storageAccount: ")


def test_size_and_pre_pull_are_accepted():
    config = config_of({"sharedFileSystem": {"sizeGiB": 4096}, "imagePulls": {"prePull": True}})
    assert config.storage.shared_file_system.size_gib == 4096
    assert config.storage.image_pulls.pre_pull


# ---------------------------------------------------------------------------------------------------------
# Pure decisions


def test_volume_handle_is_ocid_ip_and_the_directory_below_the_export():
    assert so.fss_csi_source("ocid1.filesystem.oc1.iad.aaa", "10.0.16.5", "teams/research/datasets") == {
        "driver": "fss.csi.oraclecloud.com",
        "volumeHandle": "ocid1.filesystem.oc1.iad.aaa:10.0.16.5:/gpu-platform/teams/research/datasets"}
    assert so.fss_volume_handle("ocid1.filesystem.oc1.iad.aaa", "10.0.16.5", "") == (
        "ocid1.filesystem.oc1.iad.aaa:10.0.16.5:/gpu-platform")
    assert so.volume_path("/models/") == "/gpu-platform/models"


def test_nfs_rules_are_the_documented_ports_from_the_workers():
    rules = so.nfs_rules("10.20.16.0/20")
    assert [(r["protocol"], r.get("tcp_options", r.get("udp_options"))["destination_port_range"]) for r in rules] == [
        ("6", {"min": 111, "max": 111}), ("6", {"min": 2048, "max": 2050}),
        ("17", {"min": 111, "max": 111}), ("17", {"min": 2048, "max": 2048})]
    assert {(r["direction"], r["source"], r["source_type"], r["stateless"]) for r in rules} == {
        ("INGRESS", "10.20.16.0/20", "CIDR_BLOCK", False)}


@pytest.mark.parametrize(("rdma", "first", "default", "ad"), [
    ((2,), (1,), (3,), 2), ((), (3,), (1,), 3), ((), (), (2,), 2), ((), (), (), 1)])
def test_file_system_ad_prefers_the_rdma_pool(rdma, first, default, ad):
    assert so.file_system_ad(rdma, first, default) == ad


def test_file_system_ad_of_a_stack():
    assert oci_storage.file_system_ad_number(config_of({"sharedFileSystem": {"sizeGiB": 100}})) == 2
    assert oci_storage.file_system_ad_number(config_of({"sharedFileSystem": {"sizeGiB": 100}},
                                                       pools=[dict(A10)], teams=[TEAM_ON_A10])) == 1


# ---------------------------------------------------------------------------------------------------------
# What OCI receives and what the Kubernetes layer gets


@pytest.fixture(scope="module")
def with_fss():
    out: dict = {}

    def exports(handle):
        backends = handle.outputs["storage"]
        fs = backends.shared_file_system
        out["backend"] = (fs.kind, fs.capacity_gib, fs.driver, fs.mount_options, fs.csi_chart,
                          backends.buckets, dict(backends.service_account_annotations))
        pulumi.export("datasets", fs.csi_source("research-datasets", "teams/research/datasets"))
        pulumi.export("models", fs.csi_source("models", "models"))
    rec = run(config_of({"sharedFileSystem": {"sizeGiB": 4096}}), exports)
    return rec, out


def test_file_system_mount_target_and_export_exact_inputs(with_fss):
    rec, _ = with_fss
    ad = "Uocm:US-ASHBURN-AD-2"  # the RDMA pool's AD
    assert rec.one(FS).inputs == {"availabilityDomain": ad, "compartmentId": COMPARTMENT, "displayName": "oke-shared",
                                  "areQuotaRulesEnabled": True}
    assert rec.one(QUOTA).inputs == {"fileSystemId": "ocid1.filesystem.oc1.iad.oke-fss", "isHardQuota": True,
                                     "principalType": "FILE_SYSTEM_LEVEL", "quotaLimitInGigabytes": 4096,
                                     "displayName": "sizeGiB 4096"}
    target = rec.one(MOUNT_TARGET)
    assert target.inputs == {"availabilityDomain": ad, "compartmentId": COMPARTMENT, "displayName": "oke-fss",
                             "subnetId": "ocid1.subnet.oc1.iad.oke-network-workers",
                             "nsgIds": ["ocid1.networksecuritygroup.oc1.iad.oke-fss"]}
    assert {r.urn for r in rec.of_type(NSG_RULE)} <= set(target.dependencies)
    assert rec.one(EXPORT).inputs == {
        "exportSetId": "ocid1.exportset.oc1.iad.oke-fss", "fileSystemId": "ocid1.filesystem.oc1.iad.oke-fss",
        "path": "/gpu-platform",
        "exportOptions": [{"source": "10.0.16.0/20", "access": "READ_WRITE", "identitySquash": "NONE",
                           "requirePrivilegedSourcePort": True}]}
    assert rec.one(NSG).inputs["vcnId"] == "ocid1.vcn.oc1.iad.oke-network-vcn"
    assert [r.inputs["source"] for r in rec.of_type(NSG_RULE)] == ["10.0.16.0/20"] * 4


def test_backend_and_resolved_csi_sources(with_fss):
    rec, out = with_fss
    assert out["backend"] == ("oci-file-storage", 4096, "fss.csi.oraclecloud.com", (), None, (), {})
    assert rec.exports["datasets"] == {
        "driver": "fss.csi.oraclecloud.com",
        "volumeHandle": "ocid1.filesystem.oc1.iad.oke-fss:10.0.16.200:/gpu-platform/teams/research/datasets"}
    assert rec.exports["models"]["volumeHandle"] == "ocid1.filesystem.oc1.iad.oke-fss:10.0.16.200:/gpu-platform/models"


def test_size_reaches_the_quota_and_the_persistent_volumes():
    out: dict = {}
    rec = run(config_of({"sharedFileSystem": {"sizeGiB": 512}}),
              lambda h: out.update(size=h.outputs["storage"].shared_file_system.capacity_gib))
    assert out["size"] == 512
    assert rec.one(QUOTA).inputs["quotaLimitInGigabytes"] == 512


def test_existing_vcn_admits_the_worker_subnets_own_cidr():
    subnet = "ocid1.subnet.oc1.iad.aaaaaaaa{}"
    config = config_of({"sharedFileSystem": {"sizeGiB": 100}}, pools=[dict(A10)], teams=[TEAM_ON_A10],
                       vcnId="ocid1.vcn.oc1.iad.aaaaaaaavcn", endpointSubnetId=subnet.format("api"),
                       workerSubnetId=subnet.format("workers"), podSubnetId=subnet.format("pods"),
                       loadBalancerSubnetId=subnet.format("lb"))
    rec = run(config)
    assert rec.one(MOUNT_TARGET).inputs["subnetId"] == subnet.format("workers")
    assert rec.one(MOUNT_TARGET).inputs["availabilityDomain"] == "Uocm:US-ASHBURN-AD-1"
    # the mock's getSubnet answers 10.0.16.0/20 for the owner's worker subnet
    assert rec.one(EXPORT).inputs["exportOptions"][0]["source"] == "10.0.16.0/20"
    assert rec.one(NSG).inputs["vcnId"] == "ocid1.vcn.oc1.iad.aaaaaaaavcn"


def test_pre_pull_alone_creates_nothing_on_oci():
    rec = run(config_of({"imagePulls": {"prePull": True}}))
    assert not rec.of_type(FS) and not rec.of_type(MOUNT_TARGET) and not rec.of_type(NSG)


# ---------------------------------------------------------------------------------------------------------
# oci-dev as committed, and without its storage keys


def dev_stack() -> dict:
    return plan.load_stack_file(ROOT / "stacks" / "Pulumi.oci-dev.yaml")


def plan_of(namespaced: dict, tmp: Path):
    path = tmp / "Pulumi.oci-dev.yaml"
    path.write_text(yaml.safe_dump({"config": namespaced}))
    return plan.plan_stack("oci-dev", path)


def test_oci_dev_plans_the_file_system_and_bucket_and_without_the_keys_nothing_changes(tmp_path_factory):
    with_keys = plan_of(dev_stack(), tmp_path_factory.mktemp("oci-storage"))
    stripped = copy.deepcopy(dev_stack())
    del stripped["gpu-platform:storage"]
    for team in stripped["gpu-platform:teams"]:
        team.pop("storageQuota", None)
    without = plan_of(stripped, tmp_path_factory.mktemp("oci-no-storage"))
    assert not with_keys.errors and not without.errors
    fs = [r for r in with_keys.recording.registrations if r.type == FS]
    assert [r.inputs["availabilityDomain"] for r in fs] == ["Uocm:US-ASHBURN-AD-1"]  # h100-train's zones: [1]
    before = {r.urn: r for r in without.recording.registrations if r.type.startswith("oci:")}
    after = {r.urn: r for r in with_keys.recording.registrations if r.type.startswith("oci:")}
    assert set(before) <= set(after)
    assert all(after[urn].inputs == before[urn].inputs for urn in before)
    assert {after[urn].type for urn in set(after) - set(before)} == {FS, QUOTA, MOUNT_TARGET, EXPORT, NSG, NSG_RULE,
                                                                      POLICY}
    assert not [r for r in without.recording.registrations if r.type in (FS, MOUNT_TARGET, EXPORT)]
    # The datasets bucket: read-only grant to the driver's identity, the driver's release, one static volume per
    # namespace that mounts buckets (every manifest validated by the plan: no errors above).
    policy = next(r for r in with_keys.recording.registrations if r.type == POLICY and r.name == "oci-dev-buckets")
    assert [st.split(" in ")[0] for st in policy.inputs["statements"]] == [
        "Allow any-user to read buckets", "Allow any-user to read objects"]
    assert all("target.bucket.name='gpu-platform-datasets'}" in st for st in policy.inputs["statements"])
    releases = [r for r in with_keys.recording.registrations
                if r.type == RELEASE and r.inputs["chart"] == "csi-rclone"]
    assert [(r.inputs["name"], r.inputs["namespace"], r.inputs["version"]) for r in releases] == [
        ("csi-rclone", "kube-system", "0.6.0")]
    assert not [r for r in without.recording.registrations
                if r.type == RELEASE and r.inputs["chart"] == "csi-rclone"]
    volumes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in with_keys.recording.registrations
               if r.type == PV and r.inputs["spec"]["csi"]["driver"] == "csi-rclone"}
    assert sorted(volumes) == ["inference-datasets-oos", "product-datasets-oos", "research-datasets-oos"]
    spec = volumes["research-datasets-oos"]
    assert spec["accessModes"] == ["ReadOnlyMany"] and spec["csi"]["readOnly"] is True
    assert spec["claimRef"] == {"name": "datasets-oos", "namespace": "research"}
    assert spec["csi"]["volumeAttributes"]["remotePath"] == "gpu-platform-datasets"


# ---------------------------------------------------------------------------------------------------------
# Buckets: rclone CSI driver, OKE workload identity, one IAM policy limited to the configured buckets

CLUSTER = "ocid1.cluster.oc1.iad.aaaa"
PRINCIPAL = ("request.principal.type='workload', request.principal.namespace='kube-system', "
             f"request.principal.service_account='csi-rclone-nodeplugin', request.principal.cluster_id='{CLUSTER}'")


def test_policy_grants_the_driver_identity_each_bucket_read_only_unless_read_write():
    scope = f"compartment id {COMPARTMENT}"
    assert so.bucket_policy_statements(scope, CLUSTER, [("datasets", True), ("ckpts", False)]) == [
        f"Allow any-user to read buckets in {scope} where ALL {{{PRINCIPAL}, target.bucket.name='datasets'}}",
        f"Allow any-user to read objects in {scope} where ALL {{{PRINCIPAL}, target.bucket.name='datasets'}}",
        f"Allow any-user to read buckets in {scope} where ALL {{{PRINCIPAL}, target.bucket.name='ckpts'}}",
        f"Allow any-user to manage objects in {scope} where ALL {{{PRINCIPAL}, target.bucket.name='ckpts'}}",
    ]


def test_rclone_config_is_workload_identity_without_keys():
    assert so.rclone_config("mytenancyns", "eu-frankfurt-1") == (
        "[oos]\ntype = oracleobjectstorage\nprovider = workload_identity_auth\nnamespace = mytenancyns\n"
        "region = eu-frankfurt-1\nno_check_bucket = true\n")


@pytest.mark.parametrize(("profile", "vfs"), [
    ("training", {"CacheMaxSize": "20G", "CacheMode": "full", "DirCacheTime": "1h", "ReadAhead": "128M"}),
    ("serving", {"CacheMaxSize": "20G", "CacheMode": "full", "DirCacheTime": "1h", "ReadAhead": "128M"}),
    ("checkpoint", {"CacheMaxSize": "20G", "CacheMode": "writes", "DirCacheTime": "1m", "WriteBack": "5s"}),
])
def test_csi_source_carries_remote_config_and_profile(profile, vfs):
    source = so.rclone_csi_source("research-data", "datasets", profile, profile != "checkpoint", "CONFIG")
    assert source == {"driver": "csi-rclone", "volumeHandle": "research-data", "readOnly": profile != "checkpoint",
                      "volumeAttributes": {"remote": "oos", "remotePath": "datasets", "configData": "CONFIG",
                                           "vfsOpt": json.dumps(vfs, sort_keys=True),
                                           "secretName": "research-data", "secretNamespace": "kube-system"}}


def test_chart_values_match_the_chart_key_list_and_set_workload_identity_env():
    tolerations = so.node_plugin_tolerations([{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                                               "effect": "NoSchedule"}], any_spot=True)
    values = so.rclone_chart_values("us-ashburn-1", tolerations)
    chart = versions.CSI_DRIVER_CHARTS[so.RCLONE_CHART]
    assert chart.release_args() == {"chart": "csi-rclone", "version": "0.6.0",
                                    "repository_opts": {"repo": "https://swissdatasciencecenter.github.io/helm-charts"}}
    assert unknown_keys(values, load_keys(KEYS_DIR / f"{chart.name}-{chart.version}.keys")) == []
    assert values == {
        "storageClassName": "csi-rclone", "storageClass": {"create": False},
        "csiNodepluginRclone": {
            "rclone": {"extraEnv": [{"name": "OCI_RESOURCE_PRINCIPAL_VERSION", "value": "2.2"},
                                    {"name": "OCI_RESOURCE_PRINCIPAL_REGION", "value": "us-ashburn-1"}]},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
                            {"key": "oci.oraclecloud.com/oke-is-preemptible", "operator": "Exists",
                             "effect": "NoSchedule"}]}}
    assert so.node_plugin_tolerations([], any_spot=False) == []


@pytest.fixture(scope="module")
def with_buckets():
    out: dict = {}
    storage = {"buckets": [{"name": "data", "bucket": "datasets"},
                           {"name": "ckpt", "bucket": "ckpts", "readOnly": False, "profile": "checkpoint"}]}

    def exports(handle):
        backends = handle.outputs["storage"]
        out["backends"] = backends
        pulumi.export("data", backends.buckets[0].csi_source("research-data"))
        pulumi.export("ckpt", backends.buckets[1].csi_source("research-ckpt"))
    return run(config_of(storage, region="eu-frankfurt-1"), exports), out


def test_bucket_backends_policy_and_chart_of_a_stack(with_buckets):
    rec, out = with_buckets
    backends = out["backends"]
    assert backends.shared_file_system is None and dict(backends.service_account_annotations) == {}
    assert [(b.name, b.bucket, b.driver, b.read_only, b.mount_options) for b in backends.buckets] == [
        ("data", "datasets", "csi-rclone", True, ()), ("ckpt", "ckpts", "csi-rclone", False, ())]
    assert [c.name for c in backends.csi_charts] == ["csi-rclone"]
    assert backends.csi_charts[0].values["csiNodepluginRclone"]["rclone"]["extraEnv"][1] == {
        "name": "OCI_RESOURCE_PRINCIPAL_REGION", "value": "eu-frankfurt-1"}
    policy = rec.one(POLICY, name="oke-buckets")
    cluster_id = "ocid1.cluster.oc1.iad.oke-oke"
    statements = so.bucket_policy_statements(f"compartment id {COMPARTMENT}", cluster_id,
                                             [("datasets", True), ("ckpts", False)])
    assert policy.inputs["compartmentId"] == COMPARTMENT
    assert policy.inputs["statements"] == statements
    data = rec.exports["data"]
    assert data["volumeAttributes"]["configData"] == so.rclone_config(MOCK_OCI_OBJECT_STORAGE_NAMESPACE,
                                                                      "eu-frankfurt-1")
    assert data["volumeAttributes"]["remotePath"] == "datasets" and data["readOnly"] is True
    ckpt = rec.exports["ckpt"]  # readOnly: false and the checkpoint profile reach the volume
    assert (ckpt["readOnly"], ckpt["volumeHandle"], json.loads(ckpt["volumeAttributes"]["vfsOpt"])["CacheMode"]) == (
        False, "research-ckpt", "writes")
    assert not rec.of_type(FS)  # buckets alone: no file system
