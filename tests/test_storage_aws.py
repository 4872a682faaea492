"""Issue 23 on AWS: FSx for Lustre, Mountpoint for S3 and their identities, from a stack's ``storage`` keys to the
exact inputs AWS receives and the CSI sources the Kubernetes layer mounts; and nothing at all without the keys."""

import copy
import json
from pathlib import Path

import pulumi
import pytest
import yaml

from gpu_platform import plan
from gpu_platform.clouds.aws import storage as aws_storage
from gpu_platform.clouds.aws import storage_options as so
from gpu_platform.clouds.aws.cluster import cluster_from_config
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.security.pod_security import RUN_AS_ID
from gpu_platform.storage import storage_config
from gpu_platform.testing import DEFAULT_REGION, run_program

ROOT = Path(__file__).resolve().parent.parent
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
ADDON = "aws:eks/addon:Addon"
ROLE = "aws:iam/role:Role"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
NAMESPACES = ["inference", "llm", "product", "research"]
"""aws-dev's bucket namespaces: its two teams, the sentiment app's and the LLM service's."""


def dev_stack() -> dict:
    return plan.load_stack_file(ROOT / "stacks" / "Pulumi.aws-dev.yaml")


def without_storage(namespaced: dict) -> dict:
    """The stack file as it was before issue 23: no ``storage`` section, no ``storageQuota``."""
    stripped = copy.deepcopy(namespaced)
    del stripped["gpu-platform:storage"]
    for team in stripped["gpu-platform:teams"]:
        team.pop("storageQuota", None)
    return stripped


def plan_of(namespaced: dict, tmp_path: Path, stack: str = "aws-dev"):
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump({"config": namespaced}))
    return plan.plan_stack(stack, path)


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """aws-dev planned as committed (with storage) and without its storage keys."""
    with_keys = plan_of(dev_stack(), tmp_path_factory.mktemp("aws-storage"))
    without = plan_of(without_storage(dev_stack()), tmp_path_factory.mktemp("aws-no-storage"))
    return with_keys, without


def resources(stack_plan, type_):
    return {r.name: r for r in stack_plan.recording.registrations if r.type == type_}


def storage_config_of(storage: dict, pools=None, teams=None):
    raw = {"cloud": "aws", "region": "us-west-2", "storage": storage,
           "nodePools": pools or [{"name": "train", "instanceType": "p5.48xlarge", "minNodes": 0, "maxNodes": 2,
                                   "rdma": True, "zones": ["us-west-2b"]},
                                  {"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 2}],
           "teams": teams or [{"name": "research", "gpuQuota": 8}]}
    return parse_config(raw, "s")


# ---------------------------------------------------------------------------------------------------------
# Configuration rules


@pytest.mark.parametrize("size", [1200, 2400, 4800, 24000])
def test_fsx_capacities_aws_accepts(size):
    assert so.fsx_capacity_problem(size) is None
    assert storage_config_of({"sharedFileSystem": {"sizeGiB": size}}).storage.shared_file_system.size_gib == size


@pytest.mark.parametrize(("size", "nearest"), [(1000, "1200 or 2400"), (1300, "1200 or 2400"),
                                               (3600, "2400 or 4800"), (5000, "4800 or 7200")])
def test_fsx_capacity_outside_1200_2400_and_multiples_is_refused(size, nearest):
    with pytest.raises(ConfigError) as err:
        storage_config_of({"sharedFileSystem": {"sizeGiB": size}})
    assert str(err.value) == (f"s: storage.sharedFileSystem.sizeGiB: {size} is no FSx for Lustre PERSISTENT_2 "
                              f"capacity: 1200, 2400 or a multiple of 2400 GiB (nearest: {nearest})")


def test_fsx_tiers_are_the_generic_tiers():
    # check_storage leaves the tier to the generic parser: that holds only while both lists are the same.
    assert so.FSX_THROUGHPUT_TIERS == storage_config.THROUGHPUT_TIERS == (125, 250, 500, 1000)


def test_image_streaming_is_refused_naming_pre_pull():
    with pytest.raises(ConfigError) as err:
        storage_config_of({"imagePulls": {"streaming": True}})
    assert str(err.value) == ("s: storage.imagePulls.streaming: EKS node groups have no image-streaming setting this "
                              "platform can verify; use storage.imagePulls.prePull to pull the large images onto GPU "
                              "nodes in advance")
    assert storage_config_of({"imagePulls": {"prePull": True}}).storage.image_pulls.pre_pull


# ---------------------------------------------------------------------------------------------------------
# Pure decisions


def test_fsx_csi_source_gives_each_volume_its_handle_and_subdirectory():
    assert so.fsx_csi_source("fs-0abc", "fs-0abc.fsx.us-west-2.amazonaws.com", "x7yz", "research-datasets",
                             "teams/research/datasets") == {
        "driver": "fsx.csi.aws.com", "volumeHandle": "fs-0abc::research-datasets",
        "volumeAttributes": {"dnsname": "fs-0abc.fsx.us-west-2.amazonaws.com",
                             "mountname": "x7yz/teams/research/datasets"}}
    assert so.fsx_mount_name("x7yz", "") == "x7yz"
    assert so.fsx_mount_name("x7yz", "/models/") == "x7yz/models"


CACHE = "cacheEmptyDirSizeLimit"


@pytest.mark.parametrize(("profile", "read_only", "options", "attributes"), [
    ("training", True, ("metadata-ttl indefinite", "read-only"), {"cache": "emptyDir", CACHE: "100Gi"}),
    ("serving", True, ("metadata-ttl indefinite", "read-only"), {"cache": "emptyDir", CACHE: "50Gi"}),
    ("checkpoint", False, ("metadata-ttl minimal", "allow-delete", "allow-overwrite"), {}),
])
def test_bucket_mount_options_and_attributes_follow_the_profile(profile, read_only, options, attributes):
    assert so.bucket_mount_options(profile, read_only, "us-west-2", RUN_AS_ID) == (
        "region us-west-2", *options, f"uid={RUN_AS_ID}", f"gid={RUN_AS_ID}", "allow-other")
    assert so.bucket_csi_source("acme", profile, "ckpt-research") == {
        "driver": "s3.csi.aws.com", "volumeHandle": "ckpt-research",
        "volumeAttributes": {"bucketName": "acme", "authenticationSource": "pod", **attributes}}


def test_bucket_policy_lists_reads_and_writes_exactly_the_configured_buckets():
    policy = json.loads(so.bucket_policy([("data", True), ("ckpt", False)]))
    assert policy == {"Version": "2012-10-17", "Statement": [
        {"Sid": "ListBuckets", "Effect": "Allow", "Action": ["s3:ListBucket"],
         "Resource": ["arn:aws:s3:::ckpt", "arn:aws:s3:::data"]},
        {"Sid": "ReadObjects", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": ["arn:aws:s3:::ckpt/*", "arn:aws:s3:::data/*"]},
        {"Sid": "WriteObjects", "Effect": "Allow",
         "Action": ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:PutObject"], "Resource": ["arn:aws:s3:::ckpt/*"]},
    ]}
    assert [s["Sid"] for s in json.loads(so.bucket_policy([("data", True)]))["Statement"]] == [
        "ListBuckets", "ReadObjects"]


def test_file_system_goes_to_the_rdma_pool_else_the_first_gpu_pool():
    config = storage_config_of({"sharedFileSystem": {"sizeGiB": 1200}})
    assert aws_storage.file_system_placement(config, ["us-west-2a", "us-west-2b"], []) == (
        "us-west-2b", None, "the RDMA pool train")
    no_rdma = storage_config_of({"sharedFileSystem": {"sizeGiB": 1200}}, pools=[
        {"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 2}],
        teams=[{"name": "research", "gpuQuota": 2}])  # what the pool holds
    assert aws_storage.file_system_placement(no_rdma, ["us-west-2c", "us-west-2a"], []) == (
        "us-west-2c", None, "no RDMA pool: the first GPU pool infer")
    existing = parse_config({
        "cloud": "aws", "region": "us-west-2", "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
        "storage": {"sharedFileSystem": {"sizeGiB": 1200}},
        "nodePools": [{"name": "train", "instanceType": "p5.48xlarge", "minNodes": 0, "maxNodes": 2, "rdma": True,
                       "subnetIds": ["subnet-0bbbbbbbbbbbbbbb1"]}]}, "s")
    assert aws_storage.file_system_placement(existing, [], ["subnet-0aaaaaaaaaaaaaaa1"]) == (
        None, "subnet-0bbbbbbbbbbbbbbb1", "the RDMA pool train")


# ---------------------------------------------------------------------------------------------------------
# aws-dev with storage: what AWS receives


def test_aws_dev_fsx_file_system_exact_inputs(plans):
    with_keys, _ = plans
    fs = resources(with_keys, FSX)["aws-dev-fsx"]
    assert fs.inputs == {
        "deploymentType": "PERSISTENT_2", "storageType": "SSD", "storageCapacity": 1200,
        "perUnitStorageThroughput": 125, "fileSystemTypeVersion": "2.15", "dataCompressionType": "LZ4",
        "subnetIds": "subnet-aws-dev-private-us-west-2a",  # the EFA pool h100-train's zone
        "securityGroupIds": ["sg-aws-dev-fsx"], "tags": {"Name": "aws-dev-fsx", "gpu-platform.io/stack": "aws-dev"}}
    rule_urns = {r.urn for r in with_keys.recording.registrations if r.type in (INGRESS, EGRESS)
                 and ("fsx" in r.name or "lustre" in r.name)}
    assert len(rule_urns) == 10 and rule_urns <= set(fs.dependencies)


def test_aws_dev_lustre_rules_both_ways_between_servers_and_nodes(plans):
    with_keys, _ = plans
    rules = {(r.type.split("/")[1].split(":")[0], r.inputs["securityGroupId"], r.inputs["referencedSecurityGroupId"],
              r.inputs["ipProtocol"], r.inputs["fromPort"], r.inputs["toPort"])
             for r in with_keys.recording.registrations if r.type in (INGRESS, EGRESS)
             and "lustre" in r.inputs.get("description", "").lower()}
    expected = set()
    for low, high in ((988, 988), (1018, 1023)):
        for peer in ("sg-aws-dev-fsx", "sg-aws-dev"):
            expected |= {("securityGroupIngressRule", "sg-aws-dev-fsx", peer, "tcp", low, high),
                         ("securityGroupEgressRule", "sg-aws-dev-fsx", peer, "tcp", low, high)}
        expected.add(("securityGroupIngressRule", "sg-aws-dev", "sg-aws-dev-fsx", "tcp", low, high))
    assert rules == expected


def test_aws_dev_csi_addons_wait_for_the_system_nodes_and_take_no_role(plans):
    with_keys, _ = plans
    addons = resources(with_keys, ADDON)
    system = next(r.urn for r in with_keys.recording.registrations if r.name == "aws-dev-system")
    for addon in ("aws-fsx-csi-driver", "aws-mountpoint-s3-csi-driver"):
        inputs = addons[f"aws-dev-{addon}"].inputs
        assert inputs["addonName"] == addon
        assert inputs["addonVersion"] == "v1.0.0-eksbuild.1-mock-k8s1.36"  # resolved for the stack's 1.36
        assert "serviceAccountRoleArn" not in inputs and "podIdentityAssociations" not in inputs
        assert system in addons[f"aws-dev-{addon}"].dependencies


def test_aws_dev_bucket_role_is_trusted_by_storage_access_in_the_bucket_namespaces_only(plans):
    with_keys, _ = plans
    role = resources(with_keys, ROLE)["aws-dev-storage-access"].inputs
    assert json.loads(role["assumeRolePolicy"]) == {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Condition": {"StringEquals": {"aws:RequestTag/eks-cluster-name": "aws-dev",
                                       "aws:RequestTag/kubernetes-namespace": NAMESPACES,
                                       "aws:RequestTag/kubernetes-service-account": "storage-access"}}}]}
    policy = resources(with_keys, "aws:iam/rolePolicy:RolePolicy")["aws-dev-storage-access-buckets"].inputs
    assert json.loads(policy["policy"]) == json.loads(so.bucket_policy([("acme-ml-datasets", True)]))
    associations = resources(with_keys, ASSOCIATION)
    assert {(a.inputs["namespace"], a.inputs["serviceAccount"], a.inputs["roleArn"]) for a in associations.values()
            if a.name.startswith("aws-dev-storage-access-")} == {
        (ns, "storage-access", "arn:aws:iam::123456789012:role/aws-dev-storage-access") for ns in NAMESPACES}


def test_without_the_keys_nothing_changes_and_with_them_aws_resources_are_only_added(plans):
    with_keys, without = plans
    added = {FSX, ADDON, ROLE, ASSOCIATION, INGRESS, EGRESS, "aws:ec2/securityGroup:SecurityGroup",
             "aws:iam/rolePolicy:RolePolicy"}
    before = {r.urn: r for r in without.recording.registrations if r.type.startswith("aws:")}
    after = {r.urn: r for r in with_keys.recording.registrations if r.type.startswith("aws:")}
    assert set(before) <= set(after)
    assert all(after[urn].inputs == before[urn].inputs for urn in before)
    new = {after[urn].type for urn in set(after) - set(before)}
    assert new == added
    assert not [r for r in without.recording.registrations if r.type in (FSX, ASSOCIATION)
                and ("fsx" in r.name or "storage" in r.name)]
    assert not [r for r in without.recording.registrations
                if r.type == ADDON and r.inputs["addonName"] in (so.FSX_CSI_ADDON, so.S3_CSI_ADDON)]


# ---------------------------------------------------------------------------------------------------------
# What the Kubernetes layer receives (ClusterHandle.outputs["storage"])


def backends_of(config):
    def program():
        handle = cluster_from_config("gpu", config, pulumi.ResourceOptions())
        backends = handle.outputs["storage"]
        fs = backends.shared_file_system
        pulumi.export("fs", {"kind": fs.kind, "capacity": fs.capacity_gib, "driver": fs.driver,
                             "mount_options": list(fs.mount_options), "throughput": fs.throughput_mbps_per_tib,
                             "chart": fs.csi_chart,
                             "datasets": fs.csi_source("research-datasets", "teams/research/datasets"),
                             "models": fs.csi_source("models", "models")})
        pulumi.export("buckets", [{"name": b.name, "bucket": b.bucket, "driver": b.driver, "read_only": b.read_only,
                                   "mount_options": list(b.mount_options), "csi": b.csi_source(f"{b.name}-research")}
                                  for b in backends.buckets])
        pulumi.export("annotations", dict(backends.service_account_annotations))
        pulumi.export("keys", sorted(handle.outputs))
    return run_program(program).exports


def test_cluster_handle_carries_the_backends_with_resolved_csi_sources():
    config = storage_config_of({
        "sharedFileSystem": {"sizeGiB": 2400, "throughputPerTiB": 500},
        "buckets": [{"name": "data", "bucket": "acme-data"},
                    {"name": "ckpt", "bucket": "acme-ckpt", "readOnly": False, "profile": "checkpoint"}]})
    out = backends_of(config)
    fs = out["fs"]
    assert (fs["kind"], fs["capacity"], fs["driver"], fs["mount_options"], fs["throughput"], fs["chart"]) == (
        "fsx-lustre", 2400, "fsx.csi.aws.com", ["flock"], 500, None)
    assert fs["datasets"] == {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-gpu-fsx::research-datasets",
                              "volumeAttributes": {"dnsname": f"fs-gpu-fsx.fsx.{DEFAULT_REGION}.amazonaws.com",
                                                   "mountname": "abcdefgh/teams/research/datasets"}}
    assert fs["models"]["volumeHandle"] == "fs-gpu-fsx::models"
    assert fs["models"]["volumeAttributes"]["mountname"] == "abcdefgh/models"
    assert out["buckets"] == [
        {"name": "data", "bucket": "acme-data", "driver": "s3.csi.aws.com", "read_only": True,
         "mount_options": list(so.bucket_mount_options("training", True, "us-west-2", RUN_AS_ID)),
         "csi": so.bucket_csi_source("acme-data", "training", "data-research")},
        {"name": "ckpt", "bucket": "acme-ckpt", "driver": "s3.csi.aws.com", "read_only": False,
         "mount_options": list(so.bucket_mount_options("checkpoint", False, "us-west-2", RUN_AS_ID)),
         "csi": so.bucket_csi_source("acme-ckpt", "checkpoint", "ckpt-research")}]
    assert out["annotations"] == {}  # EKS Pod Identity: the association binds the ServiceAccount, no annotation
    assert "storage" in out["keys"]


def test_cluster_handle_has_no_storage_output_without_the_keys():
    config = parse_config({"cloud": "aws", "region": "us-west-2",
                           "nodePools": [{"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0,
                                          "maxNodes": 2}]}, "s")

    def program():
        pulumi.export("keys", sorted(cluster_from_config("gpu", config, pulumi.ResourceOptions()).outputs))
    assert "storage" not in run_program(program).exports["keys"]


@pytest.mark.parametrize(("storage", "type_", "name", "key", "value"), [
    ({"sharedFileSystem": {"sizeGiB": 4800}}, FSX, "gpu-fsx", "storageCapacity", 4800),
    ({"sharedFileSystem": {"sizeGiB": 1200, "throughputPerTiB": 1000}}, FSX, "gpu-fsx", "perUnitStorageThroughput",
     1000),
])
def test_each_key_reaches_the_file_system(storage, type_, name, key, value):
    config = storage_config_of(storage)
    rec = run_program(lambda: cluster_from_config("gpu", config, pulumi.ResourceOptions()))
    assert rec.one(type_, name).inputs[key] == value
    assert rec.one(type_, name).inputs["subnetIds"] == "subnet-gpu-private-us-west-2b"  # pool train's zone


def test_a_read_write_bucket_gets_write_permissions():
    config = storage_config_of({"buckets": [{"name": "ckpt", "bucket": "acme-ckpt", "readOnly": False,
                                             "profile": "checkpoint"}]})
    rec = run_program(lambda: cluster_from_config("gpu", config, pulumi.ResourceOptions()))
    policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "gpu-storage-access-buckets").inputs["policy"])
    assert policy["Statement"][-1]["Action"] == ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:PutObject"]
    assert policy["Statement"][-1]["Resource"] == ["arn:aws:s3:::acme-ckpt/*"]
    assert not rec.of_type(FSX)  # buckets alone: no file system


def test_existing_vpc_puts_the_file_system_in_the_rdma_pools_subnet():
    config = parse_config({
        "cloud": "aws", "region": "us-west-2", "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
        "storage": {"sharedFileSystem": {"sizeGiB": 2400}},
        "nodePools": [{"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 2},
                      {"name": "train", "instanceType": "p5.48xlarge", "minNodes": 0, "maxNodes": 2, "rdma": True,
                       "subnetIds": ["subnet-0bbbbbbbbbbbbbbb1"]}]}, "s")
    rec = run_program(lambda: cluster_from_config("gpu", config, pulumi.ResourceOptions()))
    assert rec.one(FSX, "gpu-fsx").inputs["subnetIds"] == "subnet-0bbbbbbbbbbbbbbb1"
    assert rec.one("aws:ec2/securityGroup:SecurityGroup", "gpu-fsx").inputs["vpcId"] == "vpc-0123456789abcdef0"
