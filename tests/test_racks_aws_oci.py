"""GB200 NVL72 racks on EKS and OKE (issue 18): the arm64 AMI and images, Capacity Blocks and dedicated capacity,
the p6e-gb200 EFA layout and the host IMEX unit turned off on DRA multi-node NVLink pools; exact inputs and the exact
one-line refusals."""

import base64

import pulumi
import pytest

from gpu_platform import catalog, versions
from gpu_platform.clouds import aws
from gpu_platform.clouds.aws import efa, options
from gpu_platform.clouds.aws import nodes as aws_nodes
from gpu_platform.clouds.aws import user_data as aws_user_data
from gpu_platform.clouds.oci import OkeGpuNodePool, cluster_from_config
from gpu_platform.clouds.oci import cloud_init as oci_cloud_init
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import pool_args
from gpu_platform.testing import run_program

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
OKE_NODE_POOL = "oci:ContainerEngine/nodePool:NodePool"
BLOCK = "cr-0123456789abcdef0"
SUBNET, VPC, CLUSTER_SG = "subnet-0aaaaaaaaaaaaaaa1", "vpc-0123456789abcdef0", "sg-0123456789abcdef0"
RACK = {"name": "rack", "instanceType": "p6e-gb200.36xlarge", "role": "training", "rdma": True, "maxNodes": 18,
        "capacityBlock": True, "provisioning": "reservation", "reservation": BLOCK, "zones": ["us-east-1a"]}
H100 = {"name": "h100", "instanceType": "p5.48xlarge", "maxNodes": 2}

IMEX_OFF = [
    "if systemctl cat nvidia-imex.service >/dev/null 2>&1; then",
    "  systemctl disable --now nvidia-imex.service",
    "  systemctl mask nvidia-imex.service",
    "else",
    '  echo "gpu-platform: nvidia-imex.service is not installed; nothing to disable"',
    "fi",
]


def aws_stack(*pools, **top):
    return {"cloud": "aws", "region": "us-east-1", "gpuSoftware": "operator", "nodePools": list(pools), **top}


def refused(raw) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    return str(err.value)


# ---------------------------------------------------------------------------------------------------------
# AWS: AMI type by architecture


def test_ami_tables_by_vendor_and_architecture():
    assert options.AMI_TYPES_BY_VENDOR == {
        "nvidia": {"amd64": ("AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA"), "arm64": ("AL2023_ARM_64_NVIDIA",)},
        "aws-neuron": {"amd64": ("AL2023_x86_64_NEURON",)},
    }
    assert options.AMI_ARCHITECTURES == {"AL2023_x86_64_NVIDIA": "amd64", "BOTTLEROCKET_x86_64_NVIDIA": "amd64",
                                         "AL2023_ARM_64_NVIDIA": "arm64", "AL2023_x86_64_NEURON": "amd64"}
    assert set(aws_nodes.IMAGE_VOLUME_DEVICE) == set(options.ACCELERATOR_AMI_TYPES)
    assert aws_nodes.IMAGE_VOLUME_DEVICE["AL2023_ARM_64_NVIDIA"] == "/dev/xvda"
    assert options.default_ami_type("nvidia", "arm64") == "AL2023_ARM_64_NVIDIA"
    assert options.default_ami_type("nvidia", "amd64") == "AL2023_x86_64_NVIDIA"
    assert options.default_ami_type("aws-neuron", "amd64") == "AL2023_x86_64_NEURON"
    assert options.ami_problem("nvidia", "arm64", "AL2023_ARM_64_NVIDIA") is None
    assert options.ami_problem("aws-neuron", "arm64", "AL2023_x86_64_NEURON") == (
        "EKS publishes no AWS Neuron AMI for arm64 (aarch64) nodes")


def test_rack_pool_gets_the_arm_nvidia_ami_and_a_capacity_block():
    config = parse_config(aws_stack(RACK, H100), "s")
    rack, h100 = (p.cloud_options for p in config.node_pools)
    assert (rack.ami_type, rack.capacity_type, rack.capacity_reservation_id, rack.placement_group) == (
        "AL2023_ARM_64_NVIDIA", "CAPACITY_BLOCK", BLOCK, False)
    assert h100.ami_type == "AL2023_x86_64_NVIDIA"
    pool = config.gpu_pools()[0]
    assert (pool.architecture, pool.gpu_allocation, pool.min_nodes, pool.max_nodes) == ("arm64", "dra", 18, 18)


AWS_REFUSALS = [
    ("x86 AMI on arm64", aws_stack({**RACK, "amiType": "AL2023_x86_64_NVIDIA"}),
     "s: nodePools[0].amiType: AL2023_x86_64_NVIDIA is an x86_64 (amd64) AMI and the pool's nodes are arm64 "
     "(aarch64); use AL2023_ARM_64_NVIDIA"),
    ("bottlerocket on arm64", aws_stack({**RACK, "amiType": "BOTTLEROCKET_x86_64_NVIDIA"}),
     "s: nodePools[0].amiType: BOTTLEROCKET_x86_64_NVIDIA is an x86_64 (amd64) AMI and the pool's nodes are arm64 "
     "(aarch64); use AL2023_ARM_64_NVIDIA"),
    ("arm AMI on amd64", aws_stack({**H100, "amiType": "AL2023_ARM_64_NVIDIA"}),
     "s: nodePools[0].amiType: AL2023_ARM_64_NVIDIA is an arm64 (aarch64) AMI and the pool's nodes are x86_64 "
     "(amd64); use AL2023_x86_64_NVIDIA or BOTTLEROCKET_x86_64_NVIDIA"),
    ("neuron AMI on arm64 NVIDIA", aws_stack({**RACK, "amiType": "AL2023_x86_64_NEURON"}),
     "s: nodePools[0].amiType: AL2023_x86_64_NEURON is an x86_64 (amd64) AMI and the pool's nodes are arm64 "
     "(aarch64); use AL2023_ARM_64_NVIDIA"),
    ("unknown AMI on arm64", aws_stack({**RACK, "amiType": "AL2_ARM_64"}),
     "s: nodePools[0].amiType: 'AL2_ARM_64' is not one of AL2023_ARM_64_NVIDIA; did you mean "
     "'AL2023_ARM_64_NVIDIA'?"),
    ("rack without a capacity block",
     aws_stack({k: v for k, v in RACK.items() if k not in ("capacityBlock", "provisioning", "reservation")}),
     "s: nodePools[0].capacityBlock: p6e-gb200.36xlarge is sold through EC2 Capacity Blocks for ML only; set "
     "provisioning: reservation, reservation: cr-... (the purchased block's id) and capacityBlock: true"),
    ("rack on a plain reservation", aws_stack({k: v for k, v in RACK.items() if k != "capacityBlock"}),
     "s: nodePools[0].capacityBlock: p6e-gb200.36xlarge is sold through EC2 Capacity Blocks for ML only; set "
     "provisioning: reservation, reservation: cr-... (the purchased block's id) and capacityBlock: true"),
    ("rack block without its id",
     aws_stack({k: v for k, v in RACK.items() if k not in ("provisioning", "reservation")}),
     "s: nodePools[0].capacityBlock: p6e-gb200.36xlarge is sold through EC2 Capacity Blocks for ML only; set "
     "provisioning: reservation, reservation: cr-... (the purchased block's id) and capacityBlock: true"),
    ("bottlerocket on a DRA pool", aws_stack({**H100, "gpuAllocation": "dra", "minNodes": 2,
                                             "amiType": "BOTTLEROCKET_x86_64_NVIDIA"}),
     "s: nodePools[0].amiType: a DRA pool runs no device plugin, and Bottlerocket runs its own NVIDIA device plugin; "
     "use AL2023_x86_64_NVIDIA"),
]


@pytest.mark.parametrize(("raw", "line"), [c[1:] for c in AWS_REFUSALS], ids=[c[0] for c in AWS_REFUSALS])
def test_aws_stack_refuses(raw, line):
    assert refused(raw) == line


# ---------------------------------------------------------------------------------------------------------
# AWS: EFA layout and user data


def test_p6e_efa_layout_is_an_ena_primary_and_efa_only_on_cards_1_5_9_13():
    assert efa.efa_network_interfaces(4, ["sg-a"], "p6e-gb200.36xlarge") == [
        {"network_card_index": 0, "device_index": 0, "interface_type": "interface", "security_groups": ["sg-a"],
         "delete_on_termination": "true"},
        *({"network_card_index": card, "device_index": 1, "interface_type": "efa-only", "security_groups": ["sg-a"],
           "delete_on_termination": "true"} for card in (1, 5, 9, 13)),
    ]


def test_every_efa_layout_gives_the_catalogued_efa_devices():
    for shape in catalog.shapes_of("aws"):
        if shape.rdma_fabric == catalog.EFA:
            assert efa.efa_layout(shape.name, shape.rdma_interfaces).efa_devices == shape.rdma_interfaces, shape.name
    with pytest.raises(ValueError, match="^the EFA layout of p6e-gb200.36xlarge gives 4 EFA devices, the catalog "
                                         "says 8$"):
        efa.efa_network_interfaces(8, [], "p6e-gb200.36xlarge")


SCRIPT = [
    "#!/bin/bash",
    "# gpu-platform: GPU node of pool rack. NVIDIA's DRA driver runs the IMEX daemons of each",
    "# ComputeDomain; the host's own nvidia-imex.service must stay off (DRA driver prerequisites).",
    "set -euo pipefail",
    *IMEX_OFF,
]
MIME = [
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="==GPUPLATFORM=="',
    "",
    "--==GPUPLATFORM==",
    'Content-Type: text/x-shellscript; charset="us-ascii"',
    "",
    *SCRIPT,
    "",
    "--==GPUPLATFORM==--",
    "",
]


def run_rack_pool(**over):
    args = {**pool_args("aws", {k: v for k, v in RACK.items() if k != "zones"}), "cluster_name": "gpu",
            "node_role_arn": "arn:aws:iam::123456789012:role/nodes", "subnet_ids": [SUBNET], "vpc_id": VPC,
            "cluster_security_group_id": CLUSTER_SG, **over}
    return run_program(lambda: aws.EksGpuNodePool("rack", args))


def test_rack_node_group_and_launch_template_exact_inputs():
    rec = run_rack_pool()
    group = rec.one(NODE_GROUP, "rack-nodes").inputs
    assert (group["amiType"], group["capacityType"], "instanceTypes" in group) == (
        "AL2023_ARM_64_NVIDIA", "CAPACITY_BLOCK", False)
    assert group["scalingConfig"] == {"minSize": 18, "maxSize": 18, "desiredSize": 18}
    # DRA nodes never advertise nvidia.com/gpu: no autoscaler GPU label, no GPU resource in the node template.
    assert group["labels"] == {
        "gpu-platform.io/accelerator": "gb200", "gpu-platform.io/gpu-allocation": "dra",
        "gpu-platform.io/gpu-sharing": "exclusive", "gpu-platform.io/pool": "rack", "gpu-platform.io/rdma": "efa",
        "nvidia.com/dra-kubelet-plugin": "true", "nvidia.com/gpu.deploy.device-plugin": "false"}
    resources = {k: v for k, v in group["tags"].items() if "/resources/" in k}
    assert resources == {"k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa": "4"}
    template = rec.one(LAUNCH_TEMPLATE, "rack-lt").inputs
    groups = [CLUSTER_SG, "sg-rack-efa"]
    assert template["networkInterfaces"] == [
        {"deleteOnTermination": "true", "deviceIndex": 0, "interfaceType": "interface", "networkCardIndex": 0,
         "securityGroups": groups},
        *({"deleteOnTermination": "true", "deviceIndex": 1, "interfaceType": "efa-only", "networkCardIndex": card,
           "securityGroups": groups} for card in (1, 5, 9, 13)),
    ]
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["instanceType"] == "p6e-gb200.36xlarge"
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": BLOCK}}
    assert template["blockDeviceMappings"][0]["deviceName"] == "/dev/xvda"
    assert "placement" not in template
    assert base64.b64decode(template["userData"]).decode("ascii").split("\n") == MIME


def test_user_data_only_on_dra_multi_node_nvlink_pools():
    rec = run_program(lambda: aws.EksGpuNodePool("h100", {
        **pool_args("aws", H100), "cluster_name": "gpu", "node_role_arn": "arn:aws:iam::123456789012:role/nodes",
        "subnet_ids": [SUBNET]}))
    assert "userData" not in rec.one(LAUNCH_TEMPLATE, "h100-lt").inputs
    dra_h100 = parse_config(aws_stack({**H100, "gpuAllocation": "dra", "minNodes": 2}), "s").gpu_pools()[0]
    assert dra_h100.dra and aws_user_data.launch_template_user_data(dra_h100) is None


COMPONENT_REFUSALS = [
    ("x86 AMI", {"ami_type": "AL2023_x86_64_NVIDIA"},
     "EksGpuNodePool rack: ami_type: AL2023_x86_64_NVIDIA is an x86_64 (amd64) AMI and the pool's nodes are arm64 "
     "(aarch64); use AL2023_ARM_64_NVIDIA"),
    ("no capacity block", {"capacity_block": False},
     "EksGpuNodePool rack: capacity_block: p6e-gb200.36xlarge is sold through EC2 Capacity Blocks for ML only; set "
     "pool.provisioning: reservation, pool.reservation: cr-... (the purchased block's id) and capacity_block: "
     "true"),
]


@pytest.mark.parametrize(("over", "line"), [c[1:] for c in COMPONENT_REFUSALS], ids=[c[0] for c in COMPONENT_REFUSALS])
def test_eks_gpu_node_pool_refuses_rack_misuse(over, line):
    with pytest.raises(ConfigError) as err:
        run_rack_pool(**over)
    assert str(err.value) == line


def test_eks_cluster_and_karpenter_refuse_rack_misuse():
    base = {"region": "us-east-1", "kubernetes_version": "1.36",
            "addon_versions": dict(versions.EKS_ADDONS["1.36"]),
            "availability_zones": ["us-east-1a", "us-east-1b"]}
    entry = pool_args("aws", RACK)
    with pytest.raises(ConfigError) as err:
        aws.EksCluster("dev", {**base, "gpu_pools": [{**entry, "ami_type": "AL2023_x86_64_NVIDIA"}]})
    assert str(err.value) == (
        "EksCluster dev: gpu_pools[0].ami_type: AL2023_x86_64_NVIDIA is an x86_64 (amd64) AMI and the pool's nodes "
        "are arm64 (aarch64); use AL2023_ARM_64_NVIDIA")
    with pytest.raises(ConfigError) as err:
        aws.EksCluster("dev", {**base, "gpu_pools": [
            {k: v for k, v in entry.items() if k != "capacity_block"}]})
    assert str(err.value) == (
        "EksCluster dev: gpu_pools[0].capacity_block: p6e-gb200.36xlarge is sold through EC2 Capacity Blocks for ML "
        "only; set pool.provisioning: reservation, pool.reservation: cr-... (the purchased block's id) and "
        "capacity_block: true")
    with pytest.raises(ConfigError) as err:
        aws.KarpenterAutoscaler("k", {
            "cluster_name": "gpu", "cluster_endpoint": "https://x", "region": "us-east-1",
            "system_node_group_name": "gpu-system", "cluster_security_group_id": CLUSTER_SG,
            "node_pools": [{"pool": entry["pool"], "subnet_ids": [SUBNET], "capacity_type": "CAPACITY_BLOCK"}]})
    assert str(err.value) == (
        "KarpenterAutoscaler k: node_pools[0].pool.gpu_allocation: Karpenter 1.14.1 does not provision nodes for DRA "
        "ResourceClaims; give the pool to an EksCluster (managed node groups) instead")


# ---------------------------------------------------------------------------------------------------------
# OCI: arm64 image, dedicated capacity, host IMEX off

COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
GB_IMAGE = "ocid1.image.oc1.iad.aaaaaaaaubuntu2404aarch64docaofed"
COMPUTE_CLUSTER = "ocid1.computecluster.oc1.iad.aaaaaaaagb200capacity"
OCI_RACK = {"name": "rack", "instanceType": "BM.GPU.GB200.4", "role": "training", "rdma": True, "maxNodes": 18,
            "zones": [1], "imageId": GB_IMAGE, "computeClusterId": COMPUTE_CLUSTER}
OCI_H100 = {"name": "h100", "instanceType": "BM.GPU.H100.8", "role": "inference", "maxNodes": 2}


def oci_stack(*pools):
    return {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT, "gpuSoftware": "operator",
            "nodePools": list(pools)}


OCI_REFUSALS = [
    ("GB200 without an image", oci_stack({k: v for k, v in OCI_RACK.items() if k != "imageId"}),
     "s: nodePools[0].imageId: is required on BM.GPU.GB200.4: its nodes are arm64 (Grace) and OKE's GPU images are "
     "NVIDIA x86_64 ones; import an arm64 (aarch64) GPU image, such as the Canonical-Ubuntu-24.04-aarch64 DOCA-OFED "
     "GPU images of oracle-quickstart/oci-hpc-oke docs/worker-node-images.md"),
    ("GB300 without an image", oci_stack({k: v for k, v in OCI_RACK.items() if k != "imageId"}
                                         | {"instanceType": "BM.GPU.GB300.4"}),
     "s: nodePools[0].imageId: is required on BM.GPU.GB300.4: its nodes are arm64 (Grace) and OKE's GPU images are "
     "NVIDIA x86_64 ones; import an arm64 (aarch64) GPU image, such as the Canonical-Ubuntu-24.04-aarch64 DOCA-OFED "
     "GPU images of oracle-quickstart/oci-hpc-oke docs/worker-node-images.md"),
    ("GB200 without its compute cluster", oci_stack({k: v for k, v in OCI_RACK.items() if k != "computeClusterId"}),
     "s: nodePools[0].computeClusterId: is required on BM.GPU.GB200.4: OCI sells it as dedicated capacity only, its "
     "hosts in a compute cluster whose GPU memory clusters form the racks' NVLink domains; set that compute "
     "cluster's OCID (with rdma: true)"),
    ("GB200 compute cluster without rdma", oci_stack({**OCI_RACK, "rdma": False}),
     "s: nodePools[0].computeClusterId: only applies with rdma: true"),
]


@pytest.mark.parametrize(("raw", "line"), [c[1:] for c in OCI_REFUSALS], ids=[c[0] for c in OCI_REFUSALS])
def test_oci_stack_refuses(raw, line):
    assert refused(raw) == line


PLAIN = {"cluster_id": "ocid1.cluster.oc1.iad.aaaaaaaacluster", "compartment_id": COMPARTMENT,
         "kubernetes_version": "v1.34.1", "worker_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaaworkers",
         "pod_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaapods", "availability_domains": ["Uocm:US-ASHBURN-AD-1"]}


@pytest.mark.parametrize(("drop", "line"), [
    ("image_id", "OkeGpuNodePool p: image_id: is required on BM.GPU.GB200.4: its nodes are arm64 (Grace) and OKE's "
                 "GPU images are NVIDIA x86_64 ones; import an arm64 (aarch64) GPU image, such as the "
                 "Canonical-Ubuntu-24.04-aarch64 DOCA-OFED GPU images of oracle-quickstart/oci-hpc-oke "
                 "docs/worker-node-images.md"),
    ("compute_cluster_id", "OkeGpuNodePool p: compute_cluster_id: is required on BM.GPU.GB200.4: OCI sells it as "
                           "dedicated capacity only, its hosts in a compute cluster whose GPU memory clusters form "
                           "the racks' NVLink domains; set that compute cluster's OCID (with pool.rdma_fabric "
                           "'roce')"),
])
def test_oke_gpu_node_pool_refuses_a_rack_without(drop, line):
    args = {**PLAIN, **pool_args("oci", OCI_RACK)}
    del args[drop]
    with pytest.raises(ConfigError) as err:
        OkeGpuNodePool("p", args)
    assert str(err.value) == line


def oke_cloud_inits(*pools) -> dict[str, list[str]]:
    config = parse_config(oci_stack(*pools), "oci-test")
    rec = run_program(lambda: cluster_from_config("oci-test", config, pulumi.ResourceOptions()), stack="oci-test")
    return {r.inputs["name"]: base64.b64decode(r.inputs["nodeMetadata"]["user_data"]).decode().split("\n")
            for r in rec.of_type(OKE_NODE_POOL)}, rec


def test_oke_rack_pool_turns_the_host_imex_unit_off_before_joining():
    scripts, rec = oke_cloud_inits(OCI_RACK, OCI_H100)
    rack = rec.one(OKE_NODE_POOL, "oci-test-rack-nodes").inputs
    assert (rack["nodeShape"], rack["nodeSourceDetails"]["imageId"]) == ("BM.GPU.GB200.4", GB_IMAGE)
    assert rack["nodeConfigDetails"]["computeClusterId"] == COMPUTE_CLUSTER
    assert rack["nodeConfigDetails"]["size"] == 18
    assert rec.of_type("oci:Core/computeCluster:ComputeCluster") == []
    lines = scripts["rack"]
    start = lines.index("# NVIDIA's DRA driver runs the IMEX daemons of each ComputeDomain; the host's own unit must "
                        "stay off.")
    assert lines[start + 1:start + 1 + len(IMEX_OFF)] == IMEX_OFF
    assert lines[start + 1 + len(IMEX_OFF)] == "if command -v oke >/dev/null 2>&1; then"  # before the bootstrap
    assert not any("nvidia-imex" in line for line in scripts["h100"])


def test_render_cloud_init_host_imex_off_is_opt_in():
    plain = oci_cloud_init.render_cloud_init("p", ()).split("\n")
    off = oci_cloud_init.render_cloud_init("p", (), host_imex_off=True).split("\n")
    assert not any("nvidia-imex" in line for line in plain)
    bootstrap = plain.index("if command -v oke >/dev/null 2>&1; then")
    assert off == [*plain[:bootstrap], "# NVIDIA's DRA driver runs the IMEX daemons of each ComputeDomain; the host's "
                   "own unit must stay off.", *IMEX_OFF, *plain[bootstrap:]]
