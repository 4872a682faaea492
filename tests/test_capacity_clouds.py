"""``provisioning: reservation`` on AWS, Azure and OCI: the exact inputs each cloud receives (EKS launch template
reservation target and Capacity Block market, Karpenter's capacity reservation selector and ``reserved`` capacity
type, the AKS agent pool's capacity reservation group and the cluster identity's role on its resource group, the
OKE placement configs' capacity reservation) and the exact refusals (the first-round AWS key, malformed ids,
``capacityBlock`` without a reservation, an OCI reservation pool over several ADs), from stack files and at the
component boundary alike."""

import pulumi
import pytest

from gpu_platform import versions
from gpu_platform.clouds import aws
from gpu_platform.clouds.azure import AksGpuNodePool
from gpu_platform.clouds.azure import cluster_from_config as aks_from_config
from gpu_platform.clouds.oci import OkeGpuNodePool
from gpu_platform.clouds.oci import cluster_from_config as oke_from_config
from gpu_platform.clouds.oci.cluster import placement_configs
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool, pool_args
from gpu_platform.testing import run_program

CR = "cr-0123456789abcdef0"
CRG = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpu-capacity/providers/"
       "Microsoft.Compute/capacityReservationGroups/h100-crg")
OCI_CR = "ocid1.capacityreservation.oc1.iad.aaaaaaaaexamplereservation"
COMPARTMENT = "ocid1.compartment.oc1..aaaaaaaaexamplecompartment"
SUBNET, CLUSTER_SG = "subnet-0aaaaaaaaaaaaaaa1", "sg-0123456789abcdef0"
RESERVED = {"provisioning": "reservation"}

AWS_L4 = {"name": "l4", "instanceType": "g6.xlarge", "maxNodes": 3}
AZ_H100 = {"name": "h100", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2}
OCI_A10 = {"name": "a10", "instanceType": "VM.GPU.A10.1", "maxNodes": 3}


def aws_stack(*pools, **top):
    return {"cloud": "aws", "region": "us-west-2", "nodePools": list(pools), **top}


def azure_stack(*pools):
    return {"cloud": "azure", "region": "westeurope", "kubernetesVersion": "1.34", "nodePools": list(pools)}


def oci_stack(*pools):
    return {"cloud": "oci", "region": "us-ashburn-1", "compartmentId": COMPARTMENT, "nodePools": list(pools)}


# ---------------------------------------------------------------------------------------------------------
# AWS: managed node groups and Karpenter


def eks_pool(entry):
    rec = run_program(lambda: aws.EksCluster("dev", {
        "region": "us-west-2", "kubernetes_version": "1.36", "addon_versions": dict(versions.EKS_ADDONS["1.36"]),
        "availability_zones": ["us-west-2a", "us-west-2b"], "gpu_pools": [pool_args("aws", entry)]}))
    name = entry["name"]
    return (rec.one("aws:eks/nodeGroup:NodeGroup", f"dev-{name}-nodes").inputs,
            rec.one("aws:ec2/launchTemplate:LaunchTemplate", f"dev-{name}-lt").inputs)


def test_aws_reservation_targets_the_odcr_from_the_launch_template():
    group, template = eks_pool({**AWS_L4, **RESERVED, "reservation": CR, "zones": ["us-west-2b"]})
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": CR}}
    assert "instanceMarketOptions" not in template
    assert (group["capacityType"], group["instanceTypes"], group["subnetIds"]) == (
        "ON_DEMAND", ["g6.xlarge"], ["subnet-dev-private-us-west-2b"])


def test_aws_capacity_block_adds_the_market_type_and_the_capacity_type():
    group, template = eks_pool({**AWS_L4, **RESERVED, "reservation": CR, "capacityBlock": True,
                                "zones": ["us-west-2a"]})
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": CR}}
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert (group["capacityType"], "instanceTypes" in group) == ("CAPACITY_BLOCK", False)


def test_aws_on_demand_and_spot_pools_name_no_reservation():
    group, template = eks_pool(AWS_L4)
    assert "capacityReservationSpecification" not in template
    assert group["capacityType"] == "ON_DEMAND"
    group, _ = eks_pool({**AWS_L4, "provisioning": "spot"})
    assert group["capacityType"] == "SPOT"


def karpenter_objects_of(pool_entry, capacity_type="ON_DEMAND"):
    rec = run_program(lambda: aws.KarpenterAutoscaler("k", {
        "cluster_name": "gpu", "cluster_endpoint": "https://gpu.example", "region": "us-west-2",
        "system_node_group_name": "gpu-system", "cluster_security_group_id": CLUSTER_SG,
        "node_pools": [{"pool": gpu_pool("aws", pool_entry).spec(), "subnet_ids": [SUBNET],
                        "capacity_type": capacity_type}]}))
    node_class = rec.one("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass").inputs["spec"]
    requirements = rec.one("kubernetes:karpenter.sh/v1:NodePool").inputs["spec"]["template"]["spec"]["requirements"]
    capacity = next(r["values"] for r in requirements if r["key"] == "karpenter.sh/capacity-type")
    return node_class, capacity


@pytest.mark.parametrize(("entry", "capacity_type", "terms", "capacity"), [
    ({**AWS_L4, **RESERVED, "reservation": CR}, "ON_DEMAND", [{"id": CR}], ["reserved"]),
    ({**AWS_L4, **RESERVED, "reservation": CR}, "CAPACITY_BLOCK", [{"id": CR}], ["reserved"]),
    (AWS_L4, "ON_DEMAND", None, ["on-demand"]),
    ({**AWS_L4, "provisioning": "spot"}, "SPOT", None, ["spot"]),
], ids=["odcr", "capacity-block", "on-demand", "spot"])
def test_karpenter_selects_the_reservation_and_reserved_capacity(entry, capacity_type, terms, capacity):
    node_class, found = karpenter_objects_of(entry, capacity_type)
    assert node_class.get("capacityReservationSelectorTerms") == terms
    assert found == capacity


# ---------------------------------------------------------------------------------------------------------
# Azure: capacity reservation groups


def test_aks_pool_joins_the_capacity_reservation_group_and_the_identity_gets_contributor_on_its_group():
    config = parse_config(azure_stack({**AZ_H100, **RESERVED, "reservation": CRG}), "dev")
    rec = run_program(lambda: aks_from_config("dev", config, pulumi.ResourceOptions()), stack="dev")
    pool = rec.one("azure-native:containerservice:AgentPool")
    assert (pool.inputs["capacityReservationGroupID"], pool.inputs["scaleSetPriority"]) == (CRG, "Regular")
    role = rec.one("azure-native:authorization:RoleAssignment", "dev-h100-crg-contributor")
    assert role.inputs["scope"] == "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpu-capacity"
    assert role.inputs["roleDefinitionId"].endswith("/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c")
    # AKS checks the role when it associates the pool, so the pool waits for it.
    component = rec.one("gpuplatform:index:AksGpuNodePool")
    assert any(d.endswith("::dev-h100-crg-contributor") for d in component.dependencies)


def test_aks_pools_sharing_a_resource_group_get_one_role_assignment():
    other = CRG.replace("h100-crg", "h100-crg-2")
    config = parse_config(azure_stack({**AZ_H100, **RESERVED, "reservation": CRG},
                                      {**AZ_H100, "name": "h100b", **RESERVED, "reservation": other}), "dev")
    rec = run_program(lambda: aks_from_config("dev", config, pulumi.ResourceOptions()), stack="dev")
    assert [r.name for r in rec.of_type("azure-native:authorization:RoleAssignment") if "crg" in r.name] == [
        "dev-h100-crg-contributor"]


def test_aks_on_demand_pool_has_no_capacity_reservation_group():
    config = parse_config(azure_stack(AZ_H100), "dev")
    rec = run_program(lambda: aks_from_config("dev", config, pulumi.ResourceOptions()), stack="dev")
    assert "capacityReservationGroupID" not in rec.one("azure-native:containerservice:AgentPool").inputs
    assert not [r for r in rec.of_type("azure-native:authorization:RoleAssignment") if "crg" in r.name]


def test_standalone_aks_pool_sets_the_group():
    spec = {**gpu_pool("azure", AZ_H100).spec(), **RESERVED, "reservation": CRG}
    rec = run_program(lambda: AksGpuNodePool("p", {"pool": spec, "resource_group_name": "rg", "cluster_name": "aks"}))
    assert rec.one("azure-native:containerservice:AgentPool").inputs["capacityReservationGroupID"] == CRG


# ---------------------------------------------------------------------------------------------------------
# OCI: compute capacity reservations


def test_oci_placement_configs_name_the_reservation_on_every_placement():
    assert placement_configs(["AD-1", "AD-2"], "subnet", False, OCI_CR) == [
        {"availability_domain": "AD-1", "subnet_id": "subnet", "capacity_reservation_id": OCI_CR},
        {"availability_domain": "AD-2", "subnet_id": "subnet", "capacity_reservation_id": OCI_CR}]
    assert placement_configs(["AD-1"], "subnet", False) == [{"availability_domain": "AD-1", "subnet_id": "subnet"}]


def test_oke_reservation_pool_plans_the_reservation_in_its_one_ad():
    config = parse_config(oci_stack({**OCI_A10, **RESERVED, "reservation": OCI_CR, "zones": [2]}), "oci-test")
    rec = run_program(lambda: oke_from_config("oci-test", config, pulumi.ResourceOptions()), stack="oci-test")
    placements = rec.one("oci:ContainerEngine/nodePool:NodePool").inputs["nodeConfigDetails"]["placementConfigs"]
    assert [(p["availabilityDomain"], p["capacityReservationId"], "preemptibleNodeConfig" in p)
            for p in placements] == [("Uocm:US-ASHBURN-AD-2", OCI_CR, False)]


# ---------------------------------------------------------------------------------------------------------
# Refusals, each with its exact line


STACK_REFUSALS = [
    ("first-round AWS key", aws_stack({**AWS_L4, "capacityReservationId": CR, "zones": ["us-west-2a"]}),
     "s: nodePools[0].capacityReservationId: replaced by provisioning: reservation and reservation: cr-... "
     "(the same id)"),
    ("AWS id", aws_stack({**AWS_L4, **RESERVED, "reservation": "odcr-1", "zones": ["us-west-2a"]}),
     "s: nodePools[0].reservation: 'odcr-1' is not an EC2 capacity reservation id such as cr-0123456789abcdef0"),
    ("capacityBlock without reservation", aws_stack({**AWS_L4, "capacityBlock": True}),
     "s: nodePools[0].capacityBlock: a Capacity Block is reserved capacity; set provisioning: reservation and "
     "reservation: cr-... (the purchased block's id)"),
    ("AWS reservation over two zones",
     aws_stack({**AWS_L4, **RESERVED, "reservation": CR, "zones": ["us-west-2a", "us-west-2b"]}),
     "s: nodePools[0].zones: name the one zone of the reservation (an EC2 capacity reservation lives in one "
     "availability zone)"),
    ("reservation without provisioning", aws_stack({**AWS_L4, "reservation": CR}),
     "s: nodePools[0].reservation: only applies with provisioning: reservation (provisioning is on-demand)"),
    ("Azure id", azure_stack({**AZ_H100, **RESERVED, "reservation": "h100-crg"}),
     "s: nodePools[0].reservation: 'h100-crg' is not a capacity reservation group id such as "
     "/subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.Compute/"
     "capacityReservationGroups/<name>"),
    ("Azure VM reservation id", azure_stack({**AZ_H100, **RESERVED, "reservation": CRG + "/capacityReservations/r1"}),
     f"s: nodePools[0].reservation: '{CRG}/capacityReservations/r1' is not a capacity reservation group id such as "
     "/subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.Compute/"
     "capacityReservationGroups/<name>"),
    ("OCI id of another kind",
     oci_stack({**OCI_A10, **RESERVED, "reservation": "ocid1.computecluster.oc1.iad.aaaaaaaaexample", "zones": [1]}),
     "s: nodePools[0].reservation: 'ocid1.computecluster.oc1.iad.aaaaaaaaexample' is a computecluster OCID; "
     "expected ocid1.capacityreservation.oc1..<unique id>"),
    ("OCI reservation without its AD", oci_stack({**OCI_A10, **RESERVED, "reservation": OCI_CR}),
     "s: nodePools[0].zones: name the one availability domain of the capacity reservation (a reservation lives in "
     "one AD), got 0"),
]


@pytest.mark.parametrize(("raw", "line"), [c[1:] for c in STACK_REFUSALS], ids=[c[0] for c in STACK_REFUSALS])
def test_stack_refusals(raw, line):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "s")
    assert str(err.value) == line


def _eks_pool(**over):
    return aws.EksGpuNodePool("p", {"pool": gpu_pool("aws", AWS_L4).spec(), "cluster_name": "gpu",
                                    "node_role_arn": "arn:aws:iam::123456789012:role/nodes", "subnet_ids": [SUBNET],
                                    **over})


OKE_ARGS = {"cluster_id": "ocid1.cluster.oc1.iad.aaaaaaaacluster", "compartment_id": COMPARTMENT,
            "kubernetes_version": "v1.34.1", "worker_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaaworkers",
            "pod_subnet_id": "ocid1.subnet.oc1.iad.aaaaaaaapods", "availability_domains": ["Uocm:US-ASHBURN-AD-1"]}

COMPONENT_REFUSALS = [
    ("first-round EksGpuNodePool argument", lambda: _eks_pool(capacity_reservation_id=CR),
     "EksGpuNodePool p: capacity_reservation_id: was replaced by pool.provisioning 'reservation' and "
     "pool.reservation (the same cr-... id)"),
    ("first-round EksCluster argument", lambda: aws.EksCluster("dev", {
        "region": "us-west-2", "kubernetes_version": "1.36", "addon_versions": dict(versions.EKS_ADDONS["1.36"]),
        "gpu_pools": [{**pool_args("aws", AWS_L4), "capacity_reservation_id": CR}]}),
     "EksCluster dev: gpu_pools[0].capacity_reservation_id: was replaced by pool.provisioning 'reservation' and "
     "pool.reservation (the same cr-... id)"),
    ("first-round Karpenter argument", lambda: aws.KarpenterAutoscaler("k", {
        "cluster_name": "gpu", "cluster_endpoint": "https://gpu.example", "region": "us-west-2",
        "system_node_group_name": "gpu-system", "cluster_security_group_id": CLUSTER_SG,
        "node_pools": [{"pool": gpu_pool("aws", AWS_L4).spec(), "subnet_ids": [SUBNET],
                        "capacity_reservation_id": CR}]}),
     "KarpenterAutoscaler k: node_pools[0].capacity_reservation_id: was replaced by pool.provisioning "
     "'reservation' and pool.reservation (the same cr-... id)"),
    ("EKS bad id", lambda: _eks_pool(pool={**gpu_pool("aws", AWS_L4).spec(), **RESERVED, "reservation": "odcr-1"}),
     "EksGpuNodePool p: pool.reservation: 'odcr-1' is not an EC2 capacity reservation id such as "
     "cr-0123456789abcdef0"),
    ("EKS capacity block without reservation", lambda: _eks_pool(capacity_block=True),
     "EksGpuNodePool p: capacity_block: a Capacity Block is reserved capacity; set pool.provisioning: reservation "
     "and pool.reservation: cr-... (the purchased block's id)"),
    ("AKS bad id", lambda: AksGpuNodePool("p", {
        "pool": {**gpu_pool("azure", AZ_H100).spec(), **RESERVED, "reservation": "h100-crg"},
        "resource_group_name": "rg", "cluster_name": "aks"}),
     "AksGpuNodePool p: pool.reservation: 'h100-crg' is not a capacity reservation group id such as "
     "/subscriptions/<subscription id>/resourceGroups/<group>/providers/Microsoft.Compute/"
     "capacityReservationGroups/<name>"),
    ("OKE bad id", lambda: OkeGpuNodePool("p", {
        **OKE_ARGS, "pool": {**gpu_pool("oci", OCI_A10).spec(), **RESERVED, "reservation": "cr-1"}, "zones": [1]}),
     "OkeGpuNodePool p: pool.reservation: 'cr-1' is not a valid OCID; expected "
     "ocid1.capacityreservation.oc1..<unique id>"),
    ("OKE reservation without its AD", lambda: OkeGpuNodePool("p", {
        **OKE_ARGS, "pool": {**gpu_pool("oci", OCI_A10).spec(), **RESERVED, "reservation": OCI_CR}}),
     "OkeGpuNodePool p: zones: name the one availability domain of the capacity reservation (a reservation lives "
     "in one AD), got 0"),
]


@pytest.mark.parametrize(("make", "line"), [c[1:] for c in COMPONENT_REFUSALS],
                         ids=[c[0] for c in COMPONENT_REFUSALS])
def test_component_refusals(make, line):
    with pytest.raises(ConfigError) as err:
        make()
    assert str(err.value) == line
