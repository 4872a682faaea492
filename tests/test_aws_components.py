"""EksCluster and EksGpuNodePool under the mock engine: the exact inputs AWS would receive."""

import pulumi
import pytest

from gpu_platform import catalog, versions
from gpu_platform.clouds import aws
from gpu_platform.config import parse_config
from gpu_platform.pools import GpuPool
from gpu_platform.testing import run_program

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
CA = "k8s.io/cluster-autoscaler/node-template"
SUBNET, VPC, CLUSTER_SG = "subnet-0aaaaaaaaaaaaaaa1", "vpc-0123456789abcdef0", "sg-0123456789abcdef0"


def pool_spec(instance_type, rdma=False, spot=False, min_nodes=0, max_nodes=2):
    shape = catalog.find_shape("aws", instance_type)
    return GpuPool(name="train", cloud="aws", instance_type=instance_type, gpu_model=shape.gpu_model,
                   gpus_per_node=shape.gpu_count, gpu_memory_gib=shape.gpu.memory_gib, min_nodes=min_nodes,
                   max_nodes=max_nodes, rdma_fabric="efa" if rdma else None,
                   rdma_interfaces=shape.rdma_interfaces if rdma else 0, spot=spot).spec()


def run_pool(instance_type, rdma=False, spot=False, reservation="", **args):
    pool = pool_spec(instance_type, rdma, spot)
    if reservation:
        pool = {**pool, "provisioning": "reservation", "reservation": reservation}
    base = {"pool": pool, "cluster_name": "gpu",
            "node_role_arn": "arn:aws:iam::123456789012:role/nodes", "subnet_ids": [SUBNET], "vpc_id": VPC,
            "cluster_security_group_id": CLUSTER_SG}
    return run_program(lambda: aws.EksGpuNodePool("train", {**base, **args}))


def efa_interfaces(cards):
    groups = [CLUSTER_SG, "sg-train-efa"]
    return [{"deleteOnTermination": "true", "deviceIndex": 0, "interfaceType": "efa", "networkCardIndex": 0,
             "securityGroups": groups}] + [
        {"deleteOnTermination": "true", "deviceIndex": 1, "interfaceType": "efa-only", "networkCardIndex": card,
         "securityGroups": groups} for card in range(1, cards)]


@pytest.mark.parametrize(("instance_type", "cards"), [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("p4d.24xlarge", 4)])
def test_efa_pool_launch_template_interfaces_placement_and_security_group(instance_type, cards):
    rec = run_pool(instance_type, rdma=True)
    template = rec.one(LAUNCH_TEMPLATE, "train-lt").inputs
    assert template["networkInterfaces"] == efa_interfaces(cards)
    assert "vpcSecurityGroupIds" not in template
    assert template["placement"] == {"groupName": "train-pg"}
    assert rec.one("aws:ec2/placementGroup:PlacementGroup", "train-pg").inputs["strategy"] == "cluster"
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup", "train-efa")
    assert sg.inputs["vpcId"] == VPC
    for kind, name in (("Ingress", "train-efa-ingress"), ("Egress", "train-efa-egress")):
        rule = rec.one(f"aws:vpc/securityGroup{kind}Rule:SecurityGroup{kind}Rule", name).inputs
        assert (rule["ipProtocol"], rule["securityGroupId"], rule["referencedSecurityGroupId"]) == (
            "-1", "sg-train-efa", "sg-train-efa")
    group = rec.one(NODE_GROUP, "train-nodes")
    assert group.inputs["launchTemplate"] == {"id": "train-lt-id", "version": "1"}
    assert group.inputs["labels"]["gpu-platform.io/rdma"] == "efa"
    assert group.inputs["tags"][f"{CA}/resources/vpc.amazonaws.com/efa"] == str(cards)
    rule_urns = {r.urn for r in rec.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")}
    assert rule_urns <= set(group.dependencies)


def test_gpu_pool_node_group_exact_inputs():
    rec = run_pool("g6.xlarge")
    group = rec.one(NODE_GROUP, "train-nodes")
    assert group.inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    assert group.inputs["capacityType"] == "ON_DEMAND"
    assert group.inputs["instanceTypes"] == ["g6.xlarge"]
    assert group.inputs["taints"] == GPU_TAINT
    assert group.inputs["labels"] == {"gpu-platform.io/accelerator": "l4", "gpu-platform.io/gpu-sharing": "exclusive",
                                      "gpu-platform.io/pool": "train", "k8s.amazonaws.com/accelerator": "nvidia-l4"}
    assert group.inputs["scalingConfig"] == {"minSize": 0, "maxSize": 2, "desiredSize": 0}
    assert group.inputs["subnetIds"] == [SUBNET]
    assert group.inputs["nodeRepairConfig"] == {"enabled": True}
    assert "diskSize" not in group.inputs  # the launch template's block device sets it
    assert group.ignore_changes == ["scalingConfig.desiredSize"]
    assert group.inputs["tags"] == {
        f"{CA}/label/gpu-platform.io/accelerator": "l4",
        f"{CA}/label/gpu-platform.io/gpu-sharing": "exclusive",
        f"{CA}/label/gpu-platform.io/pool": "train",
        f"{CA}/label/k8s.amazonaws.com/accelerator": "nvidia-l4",
        f"{CA}/resources/nvidia.com/gpu": "1",
        f"{CA}/taint/nvidia.com/gpu": "present:NoSchedule",
    }
    asg_tags = {r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in rec.of_type("aws:autoscaling/tag:Tag")}
    assert asg_tags == group.inputs["tags"]
    assert {r.inputs["autoscalingGroupName"] for r in rec.of_type("aws:autoscaling/tag:Tag")} == {
        "eks-train-nodes-asg"}
    template = rec.one(LAUNCH_TEMPLATE, "train-lt").inputs
    assert template["blockDeviceMappings"] == [{"deviceName": "/dev/xvda", "ebs": {
        "volumeSize": 200, "volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"}}]
    for absent in ("networkInterfaces", "placement", "instanceMarketOptions", "capacityReservationSpecification"):
        assert absent not in template
    assert rec.of_type("aws:ec2/placementGroup:PlacementGroup") == []
    assert rec.of_type("aws:ec2/securityGroup:SecurityGroup") == []
    component = rec.one("gpuplatform:index:EksGpuNodePool", "train")
    assert {r.parent for r in rec if r.custom} == {component.urn}


def test_spot_pool():
    group = run_pool("g6.xlarge", spot=True).one(NODE_GROUP, "train-nodes")
    assert group.inputs["capacityType"] == "SPOT"


def test_capacity_block_pool_puts_market_reservation_and_type_in_the_launch_template():
    rec = run_pool("p5.48xlarge", rdma=True, reservation="cr-0123456789abcdef0", capacity_block=True)
    group = rec.one(NODE_GROUP, "train-nodes").inputs
    assert group["capacityType"] == "CAPACITY_BLOCK"
    assert "instanceTypes" not in group
    template = rec.one(LAUNCH_TEMPLATE, "train-lt").inputs
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}
    assert template["instanceType"] == "p5.48xlarge"
    assert "placement" not in template  # a reservation never goes into a fresh placement group
    assert rec.of_type("aws:ec2/placementGroup:PlacementGroup") == []
    assert len(template["networkInterfaces"]) == 32


def test_on_demand_capacity_reservation_pool():
    rec = run_pool("p4d.24xlarge", reservation="cr-0123456789abcdef0")
    assert rec.one(NODE_GROUP, "train-nodes").inputs["capacityType"] == "ON_DEMAND"
    template = rec.one(LAUNCH_TEMPLATE, "train-lt").inputs
    assert template["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-0123456789abcdef0"}
    assert "instanceMarketOptions" not in template


def test_bottlerocket_pool_sizes_the_data_volume():
    rec = run_pool("g6.xlarge", ami_type="BOTTLEROCKET_x86_64_NVIDIA", disk_size_gib=300)
    group = rec.one(NODE_GROUP, "train-nodes").inputs
    assert group["amiType"] == "BOTTLEROCKET_x86_64_NVIDIA"
    assert group["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
    mapping = rec.one(LAUNCH_TEMPLATE, "train-lt").inputs["blockDeviceMappings"][0]
    assert (mapping["deviceName"], mapping["ebs"]["volumeSize"]) == ("/dev/xvdb", 300)


def test_component_rejects_a_capacity_block_on_spot():
    with pytest.raises(ValueError, match="Capacity Block"):
        run_pool("p5.48xlarge", spot=True, capacity_block=True)


# ---------------------------------------------------------------------------------------------------------
# The whole cloud layer from a stack configuration


def run_stack(raw):
    config = parse_config(raw, "gpu")
    handles = []
    rec = run_program(lambda: handles.append(aws.cluster_from_config("gpu", config, pulumi.ResourceOptions())),
                      stack="gpu")
    return rec, handles[0]


DEV = {
    "cloud": "aws", "region": "us-west-2", "adminRoleArns": ["arn:aws:iam::123456789012:role/admins"],
    "nodePools": [
        {"name": "l4-infer", "instanceType": "g6.2xlarge", "role": "inference", "minNodes": 1, "maxNodes": 4},
        {"name": "h100-train", "instanceType": "p5.48xlarge", "rdma": True, "maxNodes": 2, "role": "training"},
    ],
}


@pytest.fixture(scope="module")
def dev():
    return run_stack(DEV)


def test_cluster_inputs(dev):
    rec, _ = dev
    cluster = rec.one("aws:eks/cluster:Cluster", "gpu-eks").inputs
    assert cluster["name"] == "gpu" and cluster["version"] == "1.36"
    assert cluster["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}
    assert cluster["bootstrapSelfManagedAddons"] is False
    assert cluster["vpcConfig"]["subnetIds"] == [f"subnet-gpu-{kind}-us-west-2{z}" for kind in ("private", "public")
                                                 for z in "abc"]
    assert rec.one("pulumi:providers:aws", "gpu-aws").inputs["region"] == "us-west-2"
    assert rec.one("pulumi:providers:kubernetes", "gpu-k8s").inputs["kubeconfig"] == "[secret]"


def test_new_vpc_subnets_per_zone(dev):
    rec, _ = dev
    subnets = {r.name: (r.inputs["availabilityZone"], r.inputs["cidrBlock"])
               for r in rec.of_type("aws:ec2/subnet:Subnet")}
    assert subnets == {
        "gpu-private-us-west-2a": ("us-west-2a", "10.0.0.0/18"),
        "gpu-private-us-west-2b": ("us-west-2b", "10.0.64.0/18"),
        "gpu-private-us-west-2c": ("us-west-2c", "10.0.128.0/18"),
        "gpu-public-us-west-2a": ("us-west-2a", "10.0.192.0/20"),
        "gpu-public-us-west-2b": ("us-west-2b", "10.0.208.0/20"),
        "gpu-public-us-west-2c": ("us-west-2c", "10.0.224.0/20"),
    }
    assert rec.one("aws:ec2/subnet:Subnet", "gpu-public-us-west-2a").inputs["tags"]["kubernetes.io/role/elb"] == "1"
    assert len(rec.of_type("aws:ec2/natGateway:NatGateway")) == 1


def test_addons_pinned_and_ordered(dev):
    rec, _ = dev
    addons = {r.inputs["addonName"]: r for r in rec.of_type("aws:eks/addon:Addon")}
    assert {n: a.inputs["addonVersion"] for n, a in addons.items()} == versions.EKS_ADDONS["1.36"]
    system = rec.one(NODE_GROUP, "gpu-system")
    assert system.urn in addons["coredns"].dependencies
    assert addons["vpc-cni"].urn in system.dependencies
    for name in ("gpu-l4-infer-nodes", "gpu-h100-train-nodes"):
        assert addons["vpc-cni"].urn in rec.one(NODE_GROUP, name).dependencies
    assert system.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert system.inputs["instanceTypes"] == ["m6i.xlarge"]
    assert "taints" not in system.inputs


def test_admin_access_entry(dev):
    rec, _ = dev
    entry = rec.one("aws:eks/accessEntry:AccessEntry", "gpu-admin-0").inputs
    assert (entry["principalArn"], entry["type"]) == ("arn:aws:iam::123456789012:role/admins", "STANDARD")
    policy = rec.one("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "gpu-admin-0-policy").inputs
    assert policy["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert policy["accessScope"] == {"type": "cluster"}


def test_node_role_policies(dev):
    rec, _ = dev
    arns = sorted(r.inputs["policyArn"] for r in rec.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
                  if r.name.startswith("gpu-node-role"))
    # No AmazonEKS_CNI_Policy: the VPC CNI has its own role (tests/test_aws_security.py).
    assert arns == [f"arn:aws:iam::aws:policy/{p}" for p in sorted(
        ["AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonSSMManagedInstanceCore"])]


def test_efa_pool_pinned_to_one_zone_inference_pool_everywhere(dev):
    rec, handle = dev
    assert rec.one(NODE_GROUP, "gpu-h100-train-nodes").inputs["subnetIds"] == ["subnet-gpu-private-us-west-2a"]
    assert rec.one(NODE_GROUP, "gpu-l4-infer-nodes").inputs["subnetIds"] == [
        f"subnet-gpu-private-us-west-2{z}" for z in "abc"]
    assert rec.one(LAUNCH_TEMPLATE, "gpu-h100-train-lt").inputs["networkInterfaces"][0]["securityGroups"] == [
        "sg-gpu", "sg-gpu-h100-train-efa"]
    assert [p.name for p in handle.pools] == ["l4-infer", "h100-train"]
    assert handle.pools[1].rdma_resource == "vpc.amazonaws.com/efa" and handle.pools[1].rdma_interfaces == 32
    assert handle.cloud == "aws" and set(handle.node_pool_ids) == {"l4-infer", "h100-train"}


def test_pool_zone_and_existing_vpc():
    raw = {**DEV, "nodePools": [{**DEV["nodePools"][1], "zones": ["us-west-2d"]}]}
    rec, _ = run_stack(raw)
    assert rec.one(NODE_GROUP, "gpu-h100-train-nodes").inputs["subnetIds"] == ["subnet-gpu-private-us-west-2d"]
    existing = {**DEV, "vpcId": "vpc-0123456789abcdef0",
                "privateSubnetIds": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
                "nodePools": [DEV["nodePools"][0],
                              {**DEV["nodePools"][1], "subnetIds": ["subnet-0aaaaaaaaaaaaaaa1"]}]}
    rec, _ = run_stack(existing)
    assert rec.of_type("aws:ec2/vpc:Vpc") == [] and rec.of_type("aws:ec2/subnet:Subnet") == []
    assert rec.one(NODE_GROUP, "gpu-h100-train-nodes").inputs["subnetIds"] == ["subnet-0aaaaaaaaaaaaaaa1"]
    assert rec.one(NODE_GROUP, "gpu-l4-infer-nodes").inputs["subnetIds"] == [
        "subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]
    assert rec.one("aws:ec2/securityGroup:SecurityGroup", "gpu-h100-train-efa").inputs["vpcId"] == \
        "vpc-0123456789abcdef0"


def test_eks_cluster_as_a_library_component_owns_its_gpu_pools():
    rec = run_program(lambda: aws.EksCluster("c", {
        "region": "eu-west-1", "kubernetes_version": "1.34", "addon_versions": versions.EKS_ADDONS["1.34"],
        "gpu_pools": [{"pool": pool_spec("p4d.24xlarge", rdma=True)}, {"pool": {**pool_spec("g6.xlarge"),
                                                                              "name": "infer"}}]}))
    assert sorted(r.inputs["availabilityZone"] for r in rec.of_type("aws:ec2/subnet:Subnet")) == sorted(
        [f"eu-west-1{z}" for z in "abc"] * 2)
    cluster = rec.one("gpuplatform:index:EksCluster", "c")
    pools = rec.of_type("gpuplatform:index:EksGpuNodePool")
    assert {p.name for p in pools} == {"c-train", "c-infer"} and {p.parent for p in pools} == {cluster.urn}
    assert rec.one(NODE_GROUP, "c-train-nodes").inputs["subnetIds"] == ["subnet-c-private-eu-west-1a"]
    assert rec.one(NODE_GROUP, "c-train-nodes").inputs["clusterName"] == "c"
    assert len(rec.one(NODE_GROUP, "c-infer-nodes").inputs["subnetIds"]) == 3
    assert len(rec.one(LAUNCH_TEMPLATE, "c-train-lt").inputs["networkInterfaces"]) == 4
