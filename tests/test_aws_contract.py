"""The AWS components as a library: every argument is refused before anything is registered, or takes effect.

Misuse: one exact `ConfigError` line per case, raised by the constructor (no resource recorded). Takes effect: a
base `pool_args("aws", entry)` planned through `EksCluster`, one entry key changed, the exact input that changes.
"""

import re

import pulumi
import pytest

from gpu_platform import versions
from gpu_platform.clouds import aws
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool, pool_args
from gpu_platform.testing import run_program

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ADDONS = versions.EKS_ADDONS["1.34"]
L4 = {"name": "l4", "instanceType": "g6.xlarge", "maxNodes": 3}
H100 = {"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2, "rdma": True}
SUBNETS = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]


def cluster_args(**over):
    return {"region": "us-west-2", "kubernetes_version": "1.34", "addon_versions": dict(ADDONS),
            "availability_zones": ["us-west-2a", "us-west-2b", "us-west-2c"],
            "gpu_pools": [pool_args("aws", L4)], **over}


def node_pool_args(**over):
    return {"pool": gpu_pool("aws", L4).spec(), "cluster_name": "gpu",
            "node_role_arn": "arn:aws:iam::123456789012:role/nodes", "subnet_ids": SUBNETS[:1], **over}


def refused_plain(make, line):
    """The check is the constructor's first statement: it raises outside any Pulumi program too."""
    with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
        make()


GCP_POOL = gpu_pool("gcp", {"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 1}).spec()

CLUSTER_MISUSE = [
    ("system nodes", cluster_args(system_nodes=-1), "EksCluster dev: system_nodes: must be >= 1, got -1"),
    ("kubernetes version", cluster_args(kubernetes_version="1.99"),
     "EksCluster dev: kubernetes_version: '1.99' is not a Kubernetes minor version from 1.25 to 1.39 such as 1.36"),
    ("camelCase key", cluster_args(systemNodeInstanceType="m6i.large"),
     "EksCluster dev: systemNodeInstanceType: unknown argument; arguments are snake_case in Python: use "
     "'system_node_instance_type' (camelCase is the stack file's spelling)"),
    ("missing region", {k: v for k, v in cluster_args().items() if k != "region"},
     "EksCluster dev: region: is required"),
    ("missing addon_versions", {k: v for k, v in cluster_args().items() if k != "addon_versions"},
     "EksCluster dev: addon_versions: is required"),
    ("addon missing", cluster_args(addon_versions={k: v for k, v in ADDONS.items() if k != "vpc-cni"}),
     "EksCluster dev: addon_versions: missing the vpc-cni add-on version (EksCluster installs vpc-cni, kube-proxy, "
     "eks-pod-identity-agent, coredns; pinned sets: gpu_platform.versions.EKS_ADDONS)"),
    ("addon unknown", cluster_args(addon_versions={**ADDONS, "aws-ebs-csi-driver": "v1.40.0-eksbuild.1"}),
     "EksCluster dev: addon_versions: EksCluster installs only vpc-cni, kube-proxy, eks-pod-identity-agent, "
     "coredns; remove aws-ebs-csi-driver"),
    ("old vpc-cni with EFA", cluster_args(addon_versions={**ADDONS, "vpc-cni": "v1.18.1-eksbuild.1"},
                                          gpu_pools=[pool_args("aws", H100)]),
     "EksCluster dev: addon_versions.vpc-cni: EFA pools need vpc-cni v1.18.5 or later (efa-only interfaces), got "
     "v1.18.1-eksbuild.1"),
    ("vpc without subnets", cluster_args(vpc_id="vpc-0123456789abcdef0", availability_zones=None),
     "EksCluster dev: private_subnet_ids: an existing VPC (vpc_id) needs at least two private subnets (EKS requires "
     "two availability zones)"),
    ("vpc with one subnet", cluster_args(vpc_id="vpc-0123456789abcdef0", availability_zones=None,
                                         private_subnet_ids=SUBNETS[:1]),
     "EksCluster dev: private_subnet_ids: an existing VPC (vpc_id) needs at least two private subnets (EKS requires "
     "two availability zones)"),
    ("subnets without vpc", cluster_args(private_subnet_ids=SUBNETS),
     "EksCluster dev: private_subnet_ids: only applies with vpc_id (an existing VPC)"),
    ("new-VPC key with vpc_id", cluster_args(vpc_id="vpc-0123456789abcdef0", private_subnet_ids=SUBNETS),
     "EksCluster dev: availability_zones: only applies to a new VPC; remove it or remove vpc_id"),
    ("bad vpc id", cluster_args(vpc_id="vpc-1", availability_zones=None, private_subnet_ids=SUBNETS),
     "EksCluster dev: vpc_id: 'vpc-1' is not a VPC id such as vpc-0123456789abcdef0"),
    ("bad cidr", cluster_args(api_allowed_cidrs=["10.0.0.1/8"]),
     "EksCluster dev: api_allowed_cidrs[0]: '10.0.0.1/8' is not an IPv4 CIDR block such as 203.0.113.0/24 "
     "(10.0.0.1/8 has host bits set)"),
    ("cidr not a string", cluster_args(api_allowed_cidrs=["203.0.113.0/24", 7]),
     "EksCluster dev: api_allowed_cidrs[1]: must be a string, got 7"),
    ("cidr twice", cluster_args(api_allowed_cidrs=["203.0.113.0/24", "203.0.113.0/24"]),
     "EksCluster dev: api_allowed_cidrs: lists a CIDR twice"),
    ("too many cidrs", cluster_args(api_allowed_cidrs=[f"203.0.{i}.0/24" for i in range(41)]),
     "EksCluster dev: api_allowed_cidrs: lists 41 CIDRs; at most 40 (the smallest limit of the clouds)"),
    ("cidrs not a list", cluster_args(api_allowed_cidrs="203.0.113.0/24"),
     "EksCluster dev: api_allowed_cidrs: must be a list, got '203.0.113.0/24'"),
    ("old endpoint_public_access", cluster_args(endpoint_public_access=True),
     "EksCluster dev: endpoint_public_access: was replaced by api_allowed_cidrs (empty: private endpoint only; a "
     "list of CIDRs: a public endpoint open to those CIDRs only)"),
    ("old public_access_cidrs", cluster_args(public_access_cidrs=["203.0.113.0/24"]),
     "EksCluster dev: public_access_cidrs: was replaced by api_allowed_cidrs (empty: private endpoint only; a "
     "list of CIDRs: a public endpoint open to those CIDRs only)"),
    ("secrets_encryption not a bool", cluster_args(secrets_encryption="no"),
     "EksCluster dev: secrets_encryption: must be true or false, got 'no'"),
    ("one zone", cluster_args(availability_zones=["us-west-2a"]),
     "EksCluster dev: availability_zones: name two or three zones (EKS needs two), got 1"),
    ("zone of another region", cluster_args(availability_zones=["us-west-2a", "eu-west-1b"]),
     "EksCluster dev: availability_zones[1]: 'eu-west-1b' is not an availability zone of us-west-2 (such as "
     "us-west-2a)"),
    ("admin arn", cluster_args(admin_role_arns=["admins"]),
     "EksCluster dev: admin_role_arns[0]: 'admins' is not an IAM role or user ARN"),
    ("pool zone outside the VPC", cluster_args(gpu_pools=[pool_args("aws", {**L4, "zones": ["us-west-2d"]})]),
     "EksCluster dev: gpu_pools[0].zones[0]: 'us-west-2d' is not one of availability_zones (us-west-2a, "
     "us-west-2b, us-west-2c)"),
    ("duplicate pools", cluster_args(gpu_pools=[pool_args("aws", L4), pool_args("aws", {**L4, "maxNodes": 1})]),
     "EksCluster dev: gpu_pools[1]: duplicate pool name 'l4' (also gpu_pools[0])"),
    ("GCP pool", cluster_args(gpu_pools=[{"pool": GCP_POOL}]),
     "EksCluster dev: gpu_pools[0].pool.cloud: pool 'l4' is a GCP pool; EksCluster takes AWS pools"),
    ("misspelt instance type", cluster_args(gpu_pools=[{"pool": {"name": "x", "cloud": "aws",
                                                                 "instance_type": "p5.48xlarg", "max_nodes": 1}}]),
     None),
    ("min > max", cluster_args(gpu_pools=[{"pool": {"name": "x", "cloud": "aws", "instance_type": "g6.xlarge",
                                                    "min_nodes": 3, "max_nodes": 1}}]),
     "EksCluster dev: gpu_pools[0].pool.min_nodes: minNodes (3) is greater than maxNodes (1)"),
    ("negative counts", cluster_args(gpu_pools=[{"pool": {"name": "x", "cloud": "aws", "instance_type": "g6.xlarge",
                                                          "min_nodes": -1, "max_nodes": 1}}]),
     "EksCluster dev: gpu_pools[0].pool.min_nodes: must be >= 0, got -1"),
    ("missing pool", cluster_args(gpu_pools=[{"disk_size_gib": 300}]),
     "EksCluster dev: gpu_pools[0].pool: is required"),
    ("desired negative", cluster_args(gpu_pools=[{**pool_args("aws", L4), "desired_nodes": -3}]),
     "EksCluster dev: gpu_pools[0].desired_nodes: must be >= 0, got -3"),
    ("desired above max", cluster_args(gpu_pools=[{**pool_args("aws", L4), "desired_nodes": 5}]),
     "EksCluster dev: gpu_pools[0].desired_nodes: must be between the pool's min_nodes (0) and max_nodes (3), got 5"),
    ("disk not a number", cluster_args(gpu_pools=[{**pool_args("aws", L4), "disk_size_gib": "big"}]),
     "EksCluster dev: gpu_pools[0].disk_size_gib: must be an integer, got 'big'"),
    ("disk too small", cluster_args(gpu_pools=[{**pool_args("aws", L4), "disk_size_gib": 20}]),
     "EksCluster dev: gpu_pools[0].disk_size_gib: must be >= 50, got 20"),
    ("unknown ami", cluster_args(gpu_pools=[{**pool_args("aws", L4), "ami_type": "AL2_x86_64_GPU"}]),
     "EksCluster dev: gpu_pools[0].ami_type: 'AL2_x86_64_GPU' is not one of AL2023_x86_64_NVIDIA, "
     "BOTTLEROCKET_x86_64_NVIDIA, AL2023_ARM_64_NVIDIA, AL2023_x86_64_NEURON; did you mean "
     "'AL2023_x86_64_NEURON'?"),
    ("capacity block without reservation", cluster_args(gpu_pools=[{**pool_args("aws", L4), "capacity_block": True}]),
     "EksCluster dev: gpu_pools[0].capacity_block: a Capacity Block is reserved capacity; set pool.provisioning: "
     "reservation and pool.reservation: cr-... (the purchased block's id)"),
    ("first-round reservation argument", cluster_args(gpu_pools=[{**pool_args("aws", L4),
                                                                  "capacity_reservation_id": "cr-0123456789abcdef0",
                                                                  "zones": ["us-west-2a"]}]),
     "EksCluster dev: gpu_pools[0].capacity_reservation_id: was replaced by pool.provisioning 'reservation' and "
     "pool.reservation (the same cr-... id)"),
    ("placement without EFA", cluster_args(gpu_pools=[{**pool_args("aws", L4), "placement_group": True}]),
     "EksCluster dev: gpu_pools[0].placement_group: a cluster placement group is only for rdma: true pools"),
    ("reservation without its zone", cluster_args(gpu_pools=[pool_args("aws", {
        **L4, "provisioning": "reservation", "reservation": "cr-0123456789abcdef0"})]),
     "EksCluster dev: gpu_pools[0].zones: name the one zone of pool.reservation (an EC2 capacity reservation lives "
     "in one availability zone)"),
    ("cluster key in a pool", cluster_args(gpu_pools=[{**pool_args("aws", L4), "cluster_name": "other"}]),
     "EksCluster dev: gpu_pools[0].cluster_name: is set by the EksCluster for its own pools; remove it"),
    ("subnet_ids in a new VPC", cluster_args(gpu_pools=[{**pool_args("aws", L4), "subnet_ids": SUBNETS[:1]}]),
     "EksCluster dev: gpu_pools[0].subnet_ids: only applies with vpc_id; in a new VPC use zones"),
    ("EFA pool in two zones", cluster_args(gpu_pools=[pool_args("aws", {**H100, "zones": ["us-west-2a",
                                                                                       "us-west-2b"]})]),
     "EksCluster dev: gpu_pools[0].zones: EFA traffic stays in one subnet of one zone; name one zone, not 2"),
    ("EFA pool in an existing VPC without subnets",
     cluster_args(vpc_id="vpc-0123456789abcdef0", availability_zones=None, private_subnet_ids=SUBNETS,
                  gpu_pools=[pool_args("aws", H100)]),
     "EksCluster dev: gpu_pools[0].subnet_ids: an EFA pool in an existing VPC needs the subnet(s) of its one "
     "availability zone"),
    ("Output where a plain value is read", cluster_args(region=pulumi.Output.from_input("us-west-2")),
     "EksCluster dev: region: must be a plain str, not an Output: the component reads it when it is constructed"),
]


@pytest.mark.parametrize(("args", "line"), [c[1:] for c in CLUSTER_MISUSE], ids=[c[0] for c in CLUSTER_MISUSE])
def test_eks_cluster_refuses(args, line):
    args = {k: v for k, v in args.items() if v is not None}
    if line is None:  # the catalog's message: only its start is ours
        with pytest.raises(ConfigError, match=re.escape("EksCluster dev: gpu_pools[0].pool.instance_type: ")):
            aws.EksCluster("dev", args)
        return
    refused_plain(lambda: aws.EksCluster("dev", args), line)


NODE_POOL_MISUSE = [
    ("missing pool", {k: v for k, v in node_pool_args().items() if k != "pool"}, "EksGpuNodePool p: pool: is required"),
    ("standalone without cluster", {k: v for k, v in node_pool_args().items() if k != "cluster_name"},
     "EksGpuNodePool p: cluster_name: is required (an EksCluster sets it for the pools in its gpu_pools)"),
    ("zones standalone", node_pool_args(zones=["us-west-2a"]),
     "EksGpuNodePool p: zones: only an EksCluster maps zones to its subnets; give this node group subnet_ids"),
    ("GCP pool", node_pool_args(pool=GCP_POOL),
     "EksGpuNodePool p: pool.cloud: pool 'l4' is a GCP pool; EksGpuNodePool takes AWS pools"),
    ("EFA without VPC", node_pool_args(pool=gpu_pool("aws", H100).spec()),
     "EksGpuNodePool p: vpc_id: is required for the EFA pool 'h100' (its security group)"),
    ("capacity block on spot", node_pool_args(pool=gpu_pool("aws", {**L4, "spot": True}).spec(), capacity_block=True),
     "EksGpuNodePool p: capacity_block: a Capacity Block is reserved capacity; set pool.provisioning: reservation "
     "and pool.reservation: cr-... (the purchased block's id)"),
    ("bottlerocket with sharing",
     node_pool_args(pool=gpu_pool("aws", {**L4, "sharing": {"mode": "time-slicing", "replicas": 4}}).spec(),
                    ami_type="BOTTLEROCKET_x86_64_NVIDIA"),
     "EksGpuNodePool p: ami_type: time-slicing sharing needs the platform's device plugin, which Bottlerocket "
     "replaces with its own; use AL2023_x86_64_NVIDIA"),
    ("bad subnet id", node_pool_args(subnet_ids=["subnet-a"]),
     "EksGpuNodePool p: subnet_ids[0]: 'subnet-a' is not a subnet id such as subnet-0123456789abcdef0"),
    ("bad reservation id", node_pool_args(pool={**gpu_pool("aws", L4).spec(), "provisioning": "reservation",
                                                "reservation": "res-1"}),
     "EksGpuNodePool p: pool.reservation: 'res-1' is not an EC2 capacity reservation id such as "
     "cr-0123456789abcdef0"),
    ("first-round reservation argument", node_pool_args(capacity_reservation_id="cr-0123456789abcdef0"),
     "EksGpuNodePool p: capacity_reservation_id: was replaced by pool.provisioning 'reservation' and "
     "pool.reservation (the same cr-... id)"),
]


@pytest.mark.parametrize(("args", "line"), [c[1:] for c in NODE_POOL_MISUSE], ids=[c[0] for c in NODE_POOL_MISUSE])
def test_eks_gpu_node_pool_refuses(args, line):
    refused_plain(lambda: aws.EksGpuNodePool("p", args), line)


def test_refused_inside_a_program_before_any_resource():
    with pytest.raises(ConfigError, match=re.escape("EksCluster dev: system_nodes: must be >= 1, got -1")):
        run_program(lambda: aws.EksCluster("dev", cluster_args(system_nodes=-1)))


def test_a_gpu_pool_object_where_a_spec_is_expected_works():
    rec = run_program(lambda: aws.EksCluster("dev", cluster_args(gpu_pools=[{"pool": gpu_pool("aws", L4)}])))
    assert rec.one(NODE_GROUP, "dev-l4-nodes").inputs["instanceTypes"] == ["g6.xlarge"]


AUTOSCALER = {"cluster_name": "gpu", "region": "us-west-2", "kubernetes_version": "1.34",
              "system_node_group_name": "gpu-system"}
KARPENTER = {"cluster_name": "gpu", "cluster_endpoint": "https://x", "region": "us-west-2",
             "system_node_group_name": "gpu-system", "cluster_security_group_id": "sg-0123456789abcdef0"}


@pytest.mark.parametrize(("make", "line"), [
    (lambda: aws.EksClusterAutoscaler("ca", {**AUTOSCALER, "kubernetes_version": "1.30"}),
     "EksClusterAutoscaler ca: kubernetes_version: '1.30' is not one of 1.33, 1.34, 1.35, 1.36; did you mean '1.36'?"),
    (lambda: aws.EksClusterAutoscaler("ca", {**AUTOSCALER, "scale_down_unneeded_minutes": 0}),
     "EksClusterAutoscaler ca: scale_down_unneeded_minutes: must be >= 1, got 0"),
    (lambda: aws.EksClusterAutoscaler("ca", {k: v for k, v in AUTOSCALER.items() if k != "region"}),
     "EksClusterAutoscaler ca: region: is required"),
    (lambda: aws.KarpenterAutoscaler("k", {**KARPENTER, "node_pools": [{"nodes": 2}]}),
     "KarpenterAutoscaler k: node_pools[0].pool: is required"),
    (lambda: aws.KarpenterAutoscaler("k", {**KARPENTER, "node_pools": [{"pool": gpu_pool("aws", L4).spec()}]}),
     "KarpenterAutoscaler k: node_pools[0].subnet_ids: is required (the subnets Karpenter launches the pool's "
     "nodes in)"),
    (lambda: aws.KarpenterAutoscaler("k", {**KARPENTER, "node_pools": [
        {"pool": gpu_pool("aws", L4).spec(), "subnet_ids": SUBNETS, "capacity_type": "SPOT"}]}),
     "KarpenterAutoscaler k: node_pools[0].capacity_type: 'SPOT' disagrees with the pool's spot: False"),
    (lambda: aws.KarpenterAutoscaler("k", {**KARPENTER, "node_pools": [
        {"pool": gpu_pool("aws", {**L4, "sharing": {"mode": "mps", "replicas": 2}}).spec(), "subnet_ids": SUBNETS}]}),
     "KarpenterAutoscaler k: node_pools[0].pool.sharing_mode: mps advertises 2 GPUs per physical GPU, which "
     "Karpenter cannot know when it sizes nodes (it would launch a node per pod); use EksClusterAutoscaler or "
     "sharing mode exclusive/mig"),
    (lambda: aws.KarpenterAutoscaler("k", {**KARPENTER, "node_pools": [
        {"pool": gpu_pool("aws", L4).spec(), "subnet_ids": SUBNETS, "nodes": 0}]}),
     "KarpenterAutoscaler k: node_pools[0].nodes: must be >= 1, got 0"),
], ids=["ca version", "ca minutes", "ca region", "karpenter pool", "karpenter subnets", "karpenter spot",
        "karpenter sharing", "karpenter nodes"])
def test_autoscalers_refuse(make, line):
    refused_plain(make, line)


# ---------------------------------------------------------------------------------------------------------
# Takes effect: every AWS key of a pool_args entry reaches the node group or the launch template.


def plan_pool(entry, **cluster):
    rec = run_program(lambda: aws.EksCluster("dev", cluster_args(gpu_pools=[pool_args("aws", entry)], **cluster)))
    name = entry["name"]
    return rec.one(NODE_GROUP, f"dev-{name}-nodes").inputs, rec.one(LAUNCH_TEMPLATE, f"dev-{name}-lt").inputs, rec


RESERVATION = {"capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}
TAKES_EFFECT = [
    ("minNodes", {"minNodes": 1}, lambda g, t: g["scalingConfig"], {"minSize": 1, "maxSize": 3, "desiredSize": 1}),
    ("maxNodes", {"maxNodes": 5}, lambda g, t: g["scalingConfig"], {"minSize": 0, "maxSize": 5, "desiredSize": 0}),
    ("desiredNodes", {"desiredNodes": 2}, lambda g, t: g["scalingConfig"],
     {"minSize": 0, "maxSize": 3, "desiredSize": 2}),
    ("zones", {"zones": ["us-west-2b"]}, lambda g, t: g["subnetIds"], ["subnet-dev-private-us-west-2b"]),
    ("spot", {"spot": True}, lambda g, t: g["capacityType"], "SPOT"),
    ("amiType", {"amiType": "BOTTLEROCKET_x86_64_NVIDIA"}, lambda g, t: (g["amiType"],
                                                                         t["blockDeviceMappings"][0]["deviceName"]),
     ("BOTTLEROCKET_x86_64_NVIDIA", "/dev/xvdb")),
    ("diskSizeGiB", {"diskSizeGiB": 321}, lambda g, t: t["blockDeviceMappings"][0]["ebs"]["volumeSize"], 321),
    ("provisioning", {"provisioning": "spot"}, lambda g, t: g["capacityType"], "SPOT"),
    ("reservation", {"provisioning": "reservation", "reservation": "cr-0123456789abcdef0", "zones": ["us-west-2a"]},
     lambda g, t: (t["capacityReservationSpecification"], g["subnetIds"], g["capacityType"]),
     (RESERVATION, ["subnet-dev-private-us-west-2a"], "ON_DEMAND")),
    ("capacityBlock", {"capacityBlock": True, "provisioning": "reservation", "reservation": "cr-0123456789abcdef0",
                       "zones": ["us-west-2a"]},
     lambda g, t: (g["capacityType"], t["instanceMarketOptions"], t["instanceType"], "instanceTypes" in g),
     ("CAPACITY_BLOCK", {"marketType": "capacity-block"}, "g6.xlarge", False)),
    ("labels", {"labels": {"team": "a"}}, lambda g, t: g["labels"]["team"], "a"),
    ("taints", {"taints": ["dedicated=a:NoSchedule"]}, lambda g, t: g["taints"][1],
     {"key": "dedicated", "value": "a", "effect": "NO_SCHEDULE"}),
    ("sharing", {"sharing": {"mode": "time-slicing", "replicas": 4}},
     lambda g, t: (g["labels"]["gpu-platform.io/gpu-sharing"],
                   g["tags"]["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"]),
     ("time-slicing", "4")),
]


@pytest.mark.parametrize(("change", "read", "expected"), [c[1:] for c in TAKES_EFFECT],
                         ids=[c[0] for c in TAKES_EFFECT])
def test_pool_key_takes_effect(change, read, expected):
    base_group, base_template, _ = plan_pool(L4)
    group, template, _ = plan_pool({**L4, **change})
    assert read(group, template) == expected
    try:
        before = read(base_group, base_template)
    except (KeyError, IndexError):
        return  # absent from the base plan: the key added it
    assert before != expected


@pytest.mark.parametrize(("change", "expected"), [
    ({}, ({"groupName": "dev-h100-pg"}, 32)),
    ({"placementGroup": False}, (None, 32)),
])
def test_efa_keys_take_effect(change, expected):
    _, template, _ = plan_pool({**H100, **change})
    assert (template.get("placement"), len(template["networkInterfaces"])) == expected


def test_subnet_ids_take_effect_in_an_existing_vpc():
    group, _, _ = plan_pool({**H100, "subnetIds": SUBNETS[1:]}, vpc_id="vpc-0123456789abcdef0",
                            availability_zones=None, private_subnet_ids=SUBNETS)
    assert group["subnetIds"] == SUBNETS[1:]


def test_pool_tags_add_to_the_cluster_tags():
    rec = run_program(lambda: aws.EksCluster("dev", cluster_args(
        tags={"env": "dev"}, gpu_pools=[{**pool_args("aws", L4), "tags": {"team": "a"}}])))
    tags = rec.one(LAUNCH_TEMPLATE, "dev-l4-lt").inputs["tags"]
    assert tags == {"env": "dev", "team": "a"}


def test_pool_zone_outside_the_region_default_zones_gets_a_subnet():
    rec = run_program(lambda: aws.EksCluster("dev", {**cluster_args(gpu_pools=[
        pool_args("aws", {**L4, "zones": ["us-west-2d"]})]), "availability_zones": None}))
    assert rec.one(NODE_GROUP, "dev-l4-nodes").inputs["subnetIds"] == ["subnet-dev-private-us-west-2d"]


# ---------------------------------------------------------------------------------------------------------
# Composition: a scale-from-zero pool gets its autoscaler from the cluster's public attributes.


def test_cluster_autoscaler_composes_with_an_eks_cluster():
    def program():
        cluster = aws.EksCluster("dev", cluster_args())
        aws.EksClusterAutoscaler("dev-ca", {
            "cluster_name": cluster.cluster_name, "region": cluster.region,
            "kubernetes_version": cluster.kubernetes_version,
            "system_node_group_name": cluster.system_node_group_name,
            "autoscaling_group_names": cluster.autoscaling_group_names,
        }, opts=pulumi.ResourceOptions(providers={"kubernetes": cluster.provider}))
    rec = run_program(program)
    tags = {(r.inputs["autoscalingGroupName"], r.inputs["tag"]["key"], r.inputs["tag"]["value"])
            for r in rec.of_type("aws:autoscaling/tag:Tag") if r.name.startswith("dev-ca-")}
    assert tags == {("eks-dev-l4-nodes-asg", "k8s.io/cluster-autoscaler/enabled", "true"),
                    ("eks-dev-l4-nodes-asg", "k8s.io/cluster-autoscaler/dev", "owned")}
    values = rec.one("kubernetes:helm.sh/v3:Release", "dev-ca-chart").inputs["values"]
    assert (values["autoDiscovery"], values["awsRegion"], values["image"]) == (
        {"clusterName": "dev"}, "us-west-2", {"tag": "v1.34.0"})
    assert values["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "dev-system"}
