"""Pure AWS decisions: EFA interfaces, VPC layout, node-group labels/taints/tags, IAM documents, kubeconfig, pins."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_platform import catalog, versions
from gpu_platform.clouds.aws import efa as aws_efa
from gpu_platform.clouds.aws import iam as aws_iam
from gpu_platform.clouds.aws import nodes as aws_nodes
from gpu_platform.clouds.aws import vpc as aws_vpc
from gpu_platform.clouds.aws.kubeconfig import eks_kubeconfig
from gpu_platform.clouds.aws.options import AwsPoolOptions
from gpu_platform.labels import Taint
from gpu_platform.pools import GpuPool, Sharing


def pool_of(instance_type, rdma=False, **extra):
    shape = catalog.find_shape("aws", instance_type)
    return GpuPool(name="p", cloud="aws", instance_type=instance_type, gpu_model=shape.gpu_model,
                   gpus_per_node=shape.gpu_count, gpu_memory_gib=shape.gpu.memory_gib, min_nodes=0, max_nodes=4,
                   rdma_fabric="efa" if rdma else None, rdma_interfaces=shape.rdma_interfaces if rdma else 0, **extra)


@pytest.mark.parametrize(("instance_type", "cards"), [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("p4d.24xlarge", 4)])
def test_efa_interfaces_efa_on_card_zero_efa_only_elsewhere(instance_type, cards):
    interfaces = aws_efa.efa_network_interfaces(catalog.find_shape("aws", instance_type).rdma_interfaces, ["sg-1"])
    assert len(interfaces) == cards
    assert interfaces[0] == {"network_card_index": 0, "device_index": 0, "interface_type": "efa",
                             "security_groups": ["sg-1"], "delete_on_termination": "true"}
    assert [(i["network_card_index"], i["device_index"], i["interface_type"]) for i in interfaces[1:]] == [
        (card, 1, "efa-only") for card in range(1, cards)]


def test_efa_interfaces_need_at_least_one():
    with pytest.raises(ValueError):
        aws_efa.efa_network_interfaces(0, [])


def test_efa_security_group_rules_are_all_traffic_both_ways():
    rules = aws_efa.efa_self_rules()
    assert set(rules) == {"ingress", "egress"}
    assert all(r["ip_protocol"] == "-1" for r in rules.values())


def test_every_pinned_vpc_cni_supports_efa_only_interfaces():
    assert aws_efa.vpc_cni_supports_efa_only("v1.18.5-eksbuild.1")
    assert not aws_efa.vpc_cni_supports_efa_only("v1.18.4-eksbuild.1")
    for minor, addons in versions.EKS_ADDONS.items():
        assert set(addons) == {"vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent"}, minor
        assert aws_efa.vpc_cni_supports_efa_only(addons["vpc-cni"]), minor
        assert addons["kube-proxy"].startswith(f"v{minor}."), minor
        for version in addons.values():
            aws_efa.parse_addon_version(version)


def test_subnet_layout_of_a_16():
    assert aws_vpc.subnet_cidrs("10.0.0.0/16", 3) == [
        ("10.0.0.0/18", "10.0.192.0/20"), ("10.0.64.0/18", "10.0.208.0/20"), ("10.0.128.0/18", "10.0.224.0/20")]


@given(prefix=st.integers(min_value=16, max_value=20), zones=st.integers(min_value=1, max_value=3))
def test_subnets_never_overlap_and_stay_inside_the_vpc(prefix, zones):
    import ipaddress

    vpc = ipaddress.IPv4Network(f"10.0.0.0/{prefix}")
    nets = [ipaddress.IPv4Network(c) for pair in aws_vpc.subnet_cidrs(str(vpc), zones) for c in pair]
    assert all(n.subnet_of(vpc) for n in nets)
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])


def test_vpc_zones_configured_then_pool_zones_first():
    region = ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
    assert aws_vpc.vpc_zones(["us-west-2b", "us-west-2c"], ["us-west-2d"], region) == ["us-west-2b", "us-west-2c"]
    assert aws_vpc.vpc_zones([], [], region) == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert aws_vpc.vpc_zones([], ["us-west-2d"], region) == ["us-west-2d", "us-west-2a", "us-west-2b"]


def test_node_taints_use_the_eks_enum_and_keep_user_taints():
    pool = pool_of("g6.xlarge", user_taints=(Taint("team", "research", "NoExecute"),))
    assert aws_nodes.node_taints(pool) == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {"key": "team", "value": "research", "effect": "NO_EXECUTE"},
    ]


def test_bottlerocket_nodes_turn_the_operator_device_plugin_off():
    pool = pool_of("g6.xlarge")
    assert "nvidia.com/gpu.deploy.device-plugin" not in aws_nodes.node_labels(pool, "AL2023_x86_64_NVIDIA")
    assert aws_nodes.node_labels(pool, "BOTTLEROCKET_x86_64_NVIDIA")["nvidia.com/gpu.deploy.device-plugin"] == "false"


def test_autoscaler_tags_count_shared_gpus_and_efa_devices():
    shared = pool_of("g6.xlarge", sharing=Sharing("time-slicing", 4), user_labels=(("team", "a"),))
    tags = aws_nodes.autoscaler_tags(shared, aws_nodes.node_labels(shared, "AL2023_x86_64_NVIDIA"))
    prefix = "k8s.io/cluster-autoscaler/node-template"
    assert tags[f"{prefix}/resources/nvidia.com/gpu"] == "4"
    assert tags[f"{prefix}/label/nvidia.com/device-plugin.config"] == "p"
    assert tags[f"{prefix}/label/team"] == "a"
    assert tags[f"{prefix}/taint/nvidia.com/gpu"] == "present:NoSchedule"
    efa = pool_of("p5en.48xlarge", rdma=True)
    tags = aws_nodes.autoscaler_tags(efa, aws_nodes.node_labels(efa, "AL2023_x86_64_NVIDIA"))
    assert tags[f"{prefix}/resources/vpc.amazonaws.com/efa"] == "16"
    assert tags[f"{prefix}/resources/nvidia.com/gpu"] == "8"
    assert tags[f"{prefix}/label/gpu-platform.io/rdma"] == "efa"


def test_scaling_desired_defaults_to_min():
    pool = pool_of("g6.xlarge")
    assert aws_nodes.scaling(pool, None) == {"min_size": 0, "max_size": 4, "desired_size": 0}
    assert aws_nodes.scaling(pool, 2)["desired_size"] == 2


def test_launch_template_of_a_plain_pool_has_no_efa_no_placement_no_market():
    data = aws_nodes.launch_template_data(pool_of("g6.xlarge"), AwsPoolOptions(disk_size_gib=200))
    assert set(data) == {"block_device_mappings", "metadata_options", "update_default_version", "tag_specifications"}
    assert data["metadata_options"]["http_tokens"] == "required"


def test_iam_documents_and_arns():
    assert json.loads(aws_iam.assume_role_policy("eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession"))) == {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"},
                       "Action": ["sts:AssumeRole", "sts:TagSession"]}]}
    assert aws_iam.managed_policy_arn("aws-cn", "AmazonEKSWorkerNodePolicy") == \
        "arn:aws-cn:iam::aws:policy/AmazonEKSWorkerNodePolicy"
    assert aws_iam.access_policy_arn("aws", "AmazonEKSClusterAdminPolicy") == \
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def test_kubeconfig_execs_aws_eks_get_token():
    doc = json.loads(eks_kubeconfig("gpu", "https://ABC.eks.amazonaws.com", "Q0E=", "us-west-2"))
    assert doc["current-context"] == "gpu"
    assert doc["clusters"][0]["cluster"] == {"server": "https://ABC.eks.amazonaws.com",
                                             "certificate-authority-data": "Q0E="}
    assert doc["users"][0]["user"]["exec"] == {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "interactiveMode": "Never",
        "args": ["eks", "get-token", "--cluster-name", "gpu", "--region", "us-west-2", "--output", "json"]}
