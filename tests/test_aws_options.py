"""AWS configuration keys: defaults, derived capacity types and every field-path error of the EKS layer."""

import pytest

from gpu_platform import versions
from gpu_platform.clouds.aws.options import AwsClusterOptions, AwsPoolOptions
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError

INFER = {"name": "infer", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 2}
TRAIN = {"name": "train", "instanceType": "p5.48xlarge", "rdma": True, "maxNodes": 2}


def stack(*pools, **cluster):
    return {"cloud": "aws", "region": "us-west-2", "nodePools": list(pools) or [dict(INFER)], **cluster}


def parse(raw):
    return parse_config(raw, "s")


def test_defaults_new_vpc_and_pinned_addons():
    config = parse(stack())
    options = config.cluster_options
    assert options == AwsClusterOptions(addon_versions=tuple(sorted(versions.EKS_ADDONS["1.36"].items())))
    assert options.new_vpc and options.vpc_cidr == "10.0.0.0/16" and options.system_nodes == 2
    assert dict(options.addon_versions)["vpc-cni"] == "v1.22.4-eksbuild.3"
    pool = config.node_pools[0].cloud_options
    assert pool == AwsPoolOptions(ami_type="AL2023_x86_64_NVIDIA", capacity_type="ON_DEMAND", disk_size_gib=200,
                                  placement_group=False)


def test_efa_pool_gets_placement_group_and_big_disk_by_default():
    options = parse(stack(TRAIN)).node_pools[0].cloud_options
    assert (options.placement_group, options.disk_size_gib, options.capacity_type) == (True, 500, "ON_DEMAND")


RESERVED = {"provisioning": "reservation", "reservation": "cr-0123456789abcdef0"}
"""A pool on an On-Demand Capacity Reservation (the shared keys)."""


@pytest.mark.parametrize(("fields", "capacity_type", "placement"), [
    ({"spot": True}, "SPOT", True),
    ({"provisioning": "spot"}, "SPOT", True),
    ({**RESERVED, "zones": ["us-west-2b"]}, "ON_DEMAND", False),
    ({**RESERVED, "capacityBlock": True, "zones": ["us-west-2b"]}, "CAPACITY_BLOCK", False),
    ({"placementGroup": False}, "ON_DEMAND", False),
])
def test_capacity_type_and_placement_follow_spot_and_reservations(fields, capacity_type, placement):
    options = parse(stack({**TRAIN, **fields})).node_pools[0].cloud_options
    assert (options.capacity_type, options.placement_group) == (capacity_type, placement)
    assert options.capacity_block == (capacity_type == "CAPACITY_BLOCK")


def test_bottlerocket_and_disk_size_and_existing_vpc():
    raw = stack({**TRAIN, "amiType": "BOTTLEROCKET_x86_64_NVIDIA", "diskSizeGiB": 800,
                 "subnetIds": ["subnet-0aaaaaaaaaaaaaaa1"]},
                vpcId="vpc-0123456789abcdef0",
                privateSubnetIds=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
                adminRoleArns=["arn:aws:iam::123456789012:role/admins"], systemNodes=3)
    config = parse(raw)
    pool = config.node_pools[0].cloud_options
    assert (pool.ami_type, pool.disk_size_gib, pool.subnet_ids) == (
        "BOTTLEROCKET_x86_64_NVIDIA", 800, ("subnet-0aaaaaaaaaaaaaaa1",))
    cluster = config.cluster_options
    assert (cluster.vpc_id, cluster.new_vpc, cluster.system_nodes) == ("vpc-0123456789abcdef0", False, 3)
    assert cluster.admin_role_arns == ("arn:aws:iam::123456789012:role/admins",)


def test_rdma_on_a_shape_without_efa_names_the_aws_shapes_that_have_it():
    with pytest.raises(ConfigError) as err:
        parse(stack({**INFER, "instanceType": "g6.2xlarge", "rdma": True}))
    assert str(err.value).startswith("s: nodePools[0].rdma: 'g6.2xlarge' has no RDMA fabric; RDMA-capable AWS "
                                     "shapes: ")
    assert "p5.48xlarge, p5e.48xlarge, p5en.48xlarge" in str(err.value)


ERRORS = [
    ("bad amiType", stack({**INFER, "amiType": "AL2_x86_64_GPU"}),
     "s: nodePools[0].amiType: 'AL2_x86_64_GPU' is not one of AL2023_x86_64_NVIDIA, BOTTLEROCKET_x86_64_NVIDIA; "
     "did you mean 'AL2023_x86_64_NVIDIA'?"),
    ("capacity block on spot", stack({**TRAIN, "spot": True, "capacityBlock": True}),
     "s: nodePools[0].capacityBlock: a Capacity Block is reserved capacity; set provisioning: reservation and "
     "reservation: cr-... (the purchased block's id)"),
    ("capacity block without reservation", stack({**TRAIN, "capacityBlock": True}),
     "s: nodePools[0].capacityBlock: a Capacity Block is reserved capacity; set provisioning: reservation and "
     "reservation: cr-... (the purchased block's id)"),
    ("reservation on spot", stack({**INFER, "spot": True, **RESERVED}),
     "s: nodePools[0].spot: spot: true is provisioning: spot, and provisioning is reservation; give one of them"),
    ("malformed reservation id", stack({**INFER, "provisioning": "reservation", "reservation": "reservation-1"}),
     "s: nodePools[0].reservation: 'reservation-1' is not an EC2 capacity reservation id such as "
     "cr-0123456789abcdef0"),
    ("first-round reservation key", stack({**INFER, "capacityReservationId": "cr-0123456789abcdef0"}),
     "s: nodePools[0].capacityReservationId: replaced by provisioning: reservation and reservation: cr-... "
     "(the same id)"),
    ("disk too small", stack({**INFER, "diskSizeGiB": 20}), "s: nodePools[0].diskSizeGiB: must be >= 50, got 20"),
    ("placement group without rdma", stack({**INFER, "placementGroup": True}),
     "s: nodePools[0].placementGroup: a cluster placement group is only for rdma: true pools"),
    ("placement group with a reservation",
     stack({**TRAIN, "placementGroup": True, **RESERVED, "zones": ["us-west-2a"]}),
     "s: nodePools[0].placementGroup: cannot be combined with provisioning: reservation: reserved instances cannot "
     "launch into a new placement group"),
    ("time-slicing on bottlerocket",
     stack({**INFER, "amiType": "BOTTLEROCKET_x86_64_NVIDIA", "sharing": {"mode": "time-slicing", "replicas": 4}}),
     "s: nodePools[0].amiType: time-slicing sharing needs the platform's device plugin, which Bottlerocket "
     "replaces with its own; use AL2023_x86_64_NVIDIA"),
    ("efa pool over two zones", stack({**TRAIN, "zones": ["us-west-2a", "us-west-2b"]}),
     "s: nodePools[0].zones: EFA traffic stays in one subnet of one zone; name one zone, not 2"),
    ("reservation without its zone", stack({**INFER, **RESERVED}),
     "s: nodePools[0].zones: name the one zone of the reservation (an EC2 capacity reservation lives in one "
     "availability zone)"),
    ("zone of another region", stack({**INFER, "zones": ["eu-west-1a"]}),
     "s: nodePools[0].zones[0]: 'eu-west-1a' is not an availability zone of us-west-2 (such as us-west-2a)"),
    ("zone outside availabilityZones",
     stack({**INFER, "zones": ["us-west-2d"]}, availabilityZones=["us-west-2a", "us-west-2b"]),
     "s: nodePools[0].zones[0]: 'us-west-2d' is not one of availabilityZones (us-west-2a, us-west-2b)"),
    ("pools name four zones", stack(*[{**INFER, "name": f"p{z}", "zones": [f"us-west-2{z}"]} for z in "abcd"]),
     "s: nodePools[3].zones[0]: pools name more than 3 zones (us-west-2a, us-west-2b, us-west-2c, us-west-2d); "
     "a new VPC spans 3"),
    ("subnetIds without vpcId", stack({**INFER, "subnetIds": ["subnet-0aaaaaaaaaaaaaaa1"]}),
     "s: nodePools[0].subnetIds: only applies with vpcId; in a new VPC use zones"),
    ("vpcId without subnets", stack(vpcId="vpc-0123456789abcdef0"),
     "s: privateSubnetIds: an existing VPC needs at least two private subnets (EKS requires two availability zones)"),
    ("subnets without vpcId", stack(privateSubnetIds=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]),
     "s: privateSubnetIds: only applies with vpcId (an existing VPC)"),
    ("malformed subnet id", stack(vpcId="vpc-0123456789abcdef0", privateSubnetIds=["subnet-1", "subnet-2"]),
     "s: privateSubnetIds[0]: 'subnet-1' is not a subnet id such as subnet-0123456789abcdef0"),
    ("malformed vpc id", stack(vpcId="vpc1"), "s: vpcId: 'vpc1' is not a VPC id such as vpc-0123456789abcdef0"),
    ("vpcCidr with vpcId",
     stack(vpcId="vpc-0123456789abcdef0", privateSubnetIds=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"],
           vpcCidr="10.1.0.0/16"),
     "s: vpcCidr: only applies to a new VPC; remove it or remove vpcId"),
    ("efa pool in existing vpc without subnets",
     stack(TRAIN, vpcId="vpc-0123456789abcdef0",
           privateSubnetIds=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]),
     "s: nodePools[0].subnetIds: an EFA pool in an existing VPC needs the subnet(s) of its one availability zone"),
    ("zones with vpcId",
     stack({**INFER, "zones": ["us-west-2a"]}, vpcId="vpc-0123456789abcdef0",
           privateSubnetIds=["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]),
     "s: nodePools[0].zones: with vpcId, place the pool with subnetIds instead"),
    # One CIDR rule for every cloud (gpu_platform.cidrs): AWS said "prefix /24 is outside /16../20" and "not an IPv4
    # CIDR such as" where the other clouds said "too small: <why>" and "not an IPv4 CIDR block such as ... (<why>)".
    ("vpc cidr too small", stack(vpcCidr="10.0.0.0/24"),
     "s: vpcCidr: '10.0.0.0/24' is too small: a new VPC is a /16 (the largest block AWS allows) to a /20 (its private "
     "subnets are quarters of it, one per zone)"),
    ("vpc cidr too large", stack(vpcCidr="10.0.0.0/8"),
     "s: vpcCidr: '10.0.0.0/8' is too large: a new VPC is a /16 (the largest block AWS allows) to a /20 (its private "
     "subnets are quarters of it, one per zone)"),
    ("vpc cidr not a cidr", stack(vpcCidr="10.0.0.1/16"),
     "s: vpcCidr: '10.0.0.1/16' is not an IPv4 CIDR block such as 10.0.0.0/16 (10.0.0.1/16 has host bits set)"),
    ("one availability zone", stack(availabilityZones=["us-west-2a"]),
     "s: availabilityZones: name two or three zones, got 1"),
    ("admin not an IAM ARN", stack(adminRoleArns=["admins"]),
     "s: adminRoleArns[0]: 'admins' is not an IAM role or user ARN"),
    ("system instance type", stack(systemNodeInstanceType="large"),
     "s: systemNodeInstanceType: 'large' is not an EC2 instance type such as m6i.xlarge"),
    ("system nodes zero", stack(systemNodes=0), "s: systemNodes: must be >= 1, got 0"),
    ("kubernetes version without pins", stack(kubernetesVersion="1.32"),
     "s: kubernetesVersion: EKS add-on versions are pinned for Kubernetes 1.33, 1.34, 1.35, 1.36; got '1.32'"),
    ("region not an AWS region", {"cloud": "aws", "region": "westeurope", "nodePools": [INFER]},
     "s: region: 'westeurope' is not an AWS region such as us-west-2"),
    ("unknown AWS key", stack(vpcID="vpc-0123456789abcdef0"), "s: vpcID: unknown key; did you mean 'vpcId'?"),
    ("unknown pool key", stack({**INFER, "amiTyp": "AL2023_x86_64_NVIDIA"}),
     "s: nodePools[0].amiTyp: unknown key; did you mean 'amiType'?"),
]


@pytest.mark.parametrize(("case", "raw", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_invalid_aws_configuration_fails_with_the_field_path(case, raw, message):
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert str(err.value) == message
