"""AKS components under Pulumi mocks: the exact inputs Azure would receive for the cluster and each GPU pool."""

import json

import pulumi
import pytest

from gpu_platform import plan
from gpu_platform.clouds.azure import AksCluster, AksGpuNodePool, cluster_from_config
from gpu_platform.config import parse_config, strip_namespace
from gpu_platform.testing import AZURE_SUBSCRIPTION_ID, run_program, sample_kubeconfig

AGENT_POOL = "azure-native:containerservice:AgentPool"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
FEATURE = "azure-native:features:SubscriptionFeatureRegistration"
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
EXISTING_SUBNET = ("/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/net/providers/"
                   "Microsoft.Network/virtualNetworks/hub/subnets/aks-nodes")


def config(*pools, **keys):
    raw = {"cloud": "azure", "region": "westeurope", "kubernetesVersion": "1.34", "nodePools": list(pools), **keys}
    return parse_config(raw, "dev")


def run(cfg):
    """Run `cluster_from_config` under mocks; returns the recording and the resolved handle values."""
    seen: dict = {}

    def program():
        handle = cluster_from_config("dev", cfg, pulumi.ResourceOptions())
        seen["handle"] = handle
        handle.kubeconfig.apply(lambda k: seen.setdefault("kubeconfig", k))
        pulumi.Output.from_input(handle.cluster_name).apply(lambda n: seen.setdefault("cluster_name", n))
        handle.outputs["oidcIssuerUrl"].apply(lambda u: seen.setdefault("oidc", u))
        pulumi.Output.all(**handle.node_pool_ids).apply(lambda ids: seen.setdefault("pool_ids", ids))

    return run_program(program, stack="dev"), seen


@pytest.fixture(scope="module")
def operator_stack():
    """gpuSoftware operator: an A100 inference pool and a spot ND H100 v5 InfiniBand pool."""
    return run(config(
        {"name": "a100-infer", "instanceType": "Standard_NC24ads_A100_v4", "minNodes": 1, "maxNodes": 3,
         "role": "inference", "labels": {"team": "product"}, "taints": ["dedicated=inference:NoSchedule"],
         "zones": ["1", "2"]},
        {"name": "h100-train", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 4, "rdma": True,
         "spot": True, "spotMaxPrice": 12.5, "spotEvictionPolicy": "Deallocate", "role": "training",
         "osDiskSizeGb": 256},
        gpuSoftware="operator"))


@pytest.fixture(scope="module")
def device_plugin_stack():
    """gpuSoftware device-plugin (AKS installs the driver): a MIG pool on an A100 size."""
    return run(config(
        {"name": "a100-mig", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2,
         "sharing": {"mode": "mig", "profile": "3g.40gb"}}))


def test_inference_pool_inputs(operator_stack):
    rec, _ = operator_stack
    pool = rec.one(AGENT_POOL, "dev-a100-infer-pool").inputs
    assert pool["vmSize"] == "Standard_NC24ads_A100_v4"
    assert pool["agentPoolName"] == "a100infer"
    assert (pool["mode"], pool["type"], pool["osType"], pool["osSKU"]) == (
        "User", "VirtualMachineScaleSets", "Linux", "Ubuntu")
    assert pool["nodeTaints"] == [GPU_TAINT, "dedicated=inference:NoSchedule"]
    assert pool["nodeLabels"] == {
        "gpu-platform.io/pool": "a100-infer", "gpu-platform.io/accelerator": "a100-80gb",
        "gpu-platform.io/gpu-sharing": "exclusive", "team": "product"}
    assert (pool["enableAutoScaling"], pool["minCount"], pool["maxCount"], pool["count"]) == (True, 1, 3, 1)
    assert pool["scaleSetPriority"] == "Regular"
    assert "scaleSetEvictionPolicy" not in pool and "spotMaxPrice" not in pool
    assert pool["gpuProfile"] == {"driver": "None"}
    assert "gpuInstanceProfile" not in pool
    assert pool["availabilityZones"] == ["1", "2"]
    assert pool["orchestratorVersion"] == "1.34"
    assert pool["resourceGroupName"] == "dev-rg" and pool["resourceName"] == "dev-aks"
    assert pool["vnetSubnetID"] == (f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/resourceGroups/dev-rg/providers/"
                                    "Microsoft.Network/virtualNetworks/dev-vnet/subnets/dev-nodes")


def test_spot_infiniband_training_pool_inputs(operator_stack):
    rec, seen = operator_stack
    pool = rec.one(AGENT_POOL, "dev-h100-train-pool").inputs
    assert pool["vmSize"] == "Standard_ND96isr_H100_v5"
    assert pool["nodeTaints"] == [GPU_TAINT, SPOT_TAINT]
    assert pool["nodeLabels"]["gpu-platform.io/rdma"] == "infiniband"
    assert (pool["scaleSetPriority"], pool["scaleSetEvictionPolicy"], pool["spotMaxPrice"]) == (
        "Spot", "Deallocate", 12.5)
    assert (pool["minCount"], pool["maxCount"], pool["count"]) == (0, 4, 0)
    assert pool["osDiskSizeGB"] == 256
    assert pool["gpuProfile"] == {"driver": "None"}
    published = {p.name: p for p in seen["handle"].pools}["h100-train"]
    assert {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
            "effect": "NoSchedule"} in published.tolerations
    assert published.rdma_resource == "rdma/ib" and published.rdma_interfaces == 8


def test_infiniband_feature_is_registered_kept_and_awaited(operator_stack):
    rec, _ = operator_stack
    feature = rec.one(FEATURE, "dev-infiniband-feature")
    assert feature.inputs == {"providerNamespace": "Microsoft.ContainerService", "featureName": "AKSInfinibandSupport"}
    assert feature.retain_on_delete is True
    training = rec.one("gpuplatform:index:AksGpuNodePool", "dev-h100-train")
    assert feature.urn in training.dependencies
    assert feature.urn in rec.one(AGENT_POOL, "dev-h100-train-pool").dependencies
    assert feature.urn not in rec.one(AGENT_POOL, "dev-a100-infer-pool").dependencies


def test_pools_are_created_one_after_another(operator_stack):
    rec, _ = operator_stack
    first = rec.one(AGENT_POOL, "dev-a100-infer-pool")
    assert first.urn in rec.one(AGENT_POOL, "dev-h100-train-pool").dependencies


def test_create_time_properties_replace_the_pool(operator_stack):
    rec, _ = operator_stack
    pool = rec.one(AGENT_POOL, "dev-h100-train-pool")
    assert set(pool.replace_on_changes) == {"vmSize", "gpuProfile", "gpuInstanceProfile", "scaleSetPriority",
                                            "scaleSetEvictionPolicy", "spotMaxPrice", "availabilityZones"}
    assert pool.delete_before_replace is True
    assert pool.ignore_changes == ["count"]


def test_mig_pool_with_aks_driver_gets_the_instance_profile(device_plugin_stack):
    rec, _ = device_plugin_stack
    pool = rec.one(AGENT_POOL, "dev-a100-mig-pool").inputs
    assert pool["gpuProfile"] == {"driver": "Install"}
    assert pool["gpuInstanceProfile"] == "MIG3g"
    assert pool["nodeLabels"]["nvidia.com/mig.config"] == "all-3g.40gb"
    assert pool["nodeLabels"]["gpu-platform.io/gpu-sharing"] == "mig"
    assert rec.of_type(FEATURE) == []


def test_mig_pool_owned_by_the_operator_has_no_instance_profile():
    rec, _ = run(config({"name": "a100-mig", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2,
                         "sharing": {"mode": "mig", "profile": "3g.40gb"}}, gpuSoftware="operator"))
    pool = rec.one(AGENT_POOL, "dev-a100-mig-pool").inputs
    assert "gpuInstanceProfile" not in pool
    assert pool["gpuProfile"] == {"driver": "None"}
    assert pool["nodeLabels"]["nvidia.com/mig.config"] == "all-3g.40gb"


def test_managed_cluster_inputs(operator_stack):
    rec, _ = operator_stack
    cluster = rec.one(MANAGED_CLUSTER, "dev-aks")
    inputs = cluster.inputs
    identity = rec.one("azure-native:managedidentity:UserAssignedIdentity", "dev-identity")
    assert inputs["identity"] == {"type": "UserAssigned", "userAssignedIdentities": [
        f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/resourceGroups/dev-rg/providers/"
        "Microsoft.ManagedIdentity/userAssignedIdentities/dev-identity"]}
    assert inputs["oidcIssuerProfile"] == {"enabled": True}
    assert inputs["securityProfile"] == {
        "workloadIdentity": {"enabled": True},
        "azureKeyVaultKms": {"enabled": True, "keyVaultNetworkAccess": "Public",
                             "keyId": "https://kvdevb71413b5.vault.azure.net/keys/aks-kms/"
                                      "0123456789abcdef0123456789abcdef"}}
    assert inputs["networkProfile"] == {
        "networkPlugin": "azure", "networkPluginMode": "overlay", "networkDataplane": "cilium",
        "networkPolicy": "cilium", "podCidr": "10.244.0.0/16", "serviceCidr": "10.0.0.0/16",
        "dnsServiceIP": "10.0.0.10", "loadBalancerSku": "standard"}
    assert inputs["aadProfile"] == {"managed": True, "enableAzureRBAC": True}
    assert inputs["disableLocalAccounts"] is True
    assert inputs["apiServerAccessProfile"] == {"enablePrivateCluster": True}
    assert inputs["kubernetesVersion"] == "1.34" and inputs["location"] == "westeurope"
    assert inputs["dnsPrefix"] == "dev" and inputs["enableRBAC"] is True
    assert inputs["sku"] == {"name": "Base", "tier": "Standard"}
    system = inputs["agentPoolProfiles"]
    assert len(system) == 1 and system[0]["name"] == "system" and system[0]["mode"] == "System"
    assert (system[0]["vmSize"], system[0]["minCount"], system[0]["maxCount"]) == ("Standard_D4ds_v5", 2, 3)
    assert "nodeTaints" not in system[0]  # platform services run on the System pool
    role = rec.one("azure-native:authorization:RoleAssignment", "dev-subnet-network-contributor")
    kms_role = rec.one("azure-native:authorization:RoleAssignment", "dev-kms-crypto-user")
    assert {role.urn, kms_role.urn, identity.urn} <= set(cluster.dependencies)
    assert cluster.ignore_changes == ["agentPoolProfiles[0].count"]


def test_network_contributor_on_the_node_subnet(operator_stack):
    rec, _ = operator_stack
    role = rec.one("azure-native:authorization:RoleAssignment", "dev-subnet-network-contributor").inputs
    assert role["roleDefinitionId"] == (f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/providers/Microsoft.Authorization/"
                                        "roleDefinitions/4d97b98b-1d4f-4787-a291-c67834d212e7")
    assert role["scope"].endswith("/virtualNetworks/dev-vnet/subnets/dev-nodes")
    assert (role["principalId"], role["principalType"]) == ("00000000-0000-0000-0000-0000000000a1",
                                                           "ServicePrincipal")


def test_new_network_uses_aks_default_ranges(operator_stack):
    rec, _ = operator_stack
    vnet = rec.one("azure-native:network:VirtualNetwork", "dev-vnet").inputs
    assert vnet["addressSpace"] == {"addressPrefixes": ["10.224.0.0/12"]}
    subnet = rec.one("azure-native:network:Subnet", "dev-nodes").inputs
    assert (subnet["addressPrefix"], subnet["virtualNetworkName"]) == ("10.224.0.0/16", "dev-vnet")
    assert rec.one("azure-native:resources:ResourceGroup", "dev-rg").inputs["location"] == "westeurope"


def test_kubeconfig_is_the_decoded_user_credential_and_a_secret(operator_stack):
    rec, seen = operator_stack
    assert seen["kubeconfig"] == sample_kubeconfig("dev-aks")
    assert json.loads(seen["kubeconfig"])["current-context"] == "dev-aks"
    provider = rec.one("pulumi:providers:kubernetes", "dev-k8s")
    assert provider.inputs["kubeconfig"] == "[secret]"
    assert provider.inputs["enableServerSideApply"] == "true"


def test_handle_exposes_names_pools_and_outputs(operator_stack):
    _, seen = operator_stack
    handle = seen["handle"]
    assert handle.cloud == "azure"
    assert seen["cluster_name"] == "dev-aks"
    assert [p.name for p in handle.pools] == ["a100-infer", "h100-train"]
    assert seen["pool_ids"]["h100-train"] == (
        f"/subscriptions/{AZURE_SUBSCRIPTION_ID}/resourceGroups/dev-rg/providers/"
        "Microsoft.ContainerService/managedClusters/dev-aks/agentPools/h100train")
    assert seen["oidc"] == "https://westeurope.oic.prod-aks.azure.com/dev-aks/"
    assert [type(r).__name__ for r in handle.ready] == ["ManagedCluster", "AgentPool", "AgentPool"]


def test_every_resource_is_parented_inside_the_cluster_component(operator_stack):
    rec, _ = operator_stack
    cluster = rec.one("gpuplatform:index:AksCluster", "dev")
    for pool_component in rec.of_type("gpuplatform:index:AksGpuNodePool"):
        assert pool_component.parent == cluster.urn
        assert [r.type for r in rec.children_of(pool_component)] == [AGENT_POOL]
    custom = [r for r in rec if r.custom]
    allowed = {cluster.urn} | {c.urn for c in rec.of_type("gpuplatform:index:AksGpuNodePool")}
    assert all(r.parent in allowed for r in custom)


def test_existing_group_and_subnet_are_used_as_given():
    rec, _ = run(config({"name": "a100", "instanceType": "Standard_NC24ads_A100_v4"},
                        resourceGroupName="rg-platform", vnetSubnetId=EXISTING_SUBNET, clusterName="aks-gpu"))
    assert rec.of_type("azure-native:resources:ResourceGroup") == []
    assert rec.of_type("azure-native:network:VirtualNetwork") == []
    assert rec.of_type("azure-native:network:Subnet") == []
    pool = rec.one(AGENT_POOL).inputs
    assert (pool["resourceGroupName"], pool["vnetSubnetID"], pool["resourceName"]) == (
        "rg-platform", EXISTING_SUBNET, "aks-gpu")
    cluster = rec.one(MANAGED_CLUSTER).inputs
    assert cluster["resourceName"] == "aks-gpu" and cluster["resourceGroupName"] == "rg-platform"
    assert cluster["agentPoolProfiles"][0]["vnetSubnetID"] == EXISTING_SUBNET
    assert rec.one("azure-native:authorization:RoleAssignment", "dev-subnet-network-contributor").inputs[
        "scope"] == EXISTING_SUBNET


def test_infiniband_registration_can_be_left_to_the_subscription_owner():
    rec, _ = run(config({"name": "h100", "instanceType": "Standard_ND96isr_H100_v5", "rdma": True},
                        registerInfinibandFeature=False))
    assert rec.of_type(FEATURE) == []
    assert rec.one(AGENT_POOL).inputs["nodeLabels"]["gpu-platform.io/rdma"] == "infiniband"


def test_standalone_node_pool_from_a_spec_adds_the_spot_taint():
    spec = {"name": "l-spot", "cloud": "azure", "instance_type": "Standard_NC40ads_H100_v5", "gpu_model": "h100-nvl",
            "gpus_per_node": 1, "min_nodes": 0, "max_nodes": 2, "spot": True}
    seen = {}

    def program():
        pool = AksGpuNodePool("spot", {"pool": spec, "resource_group_name": "rg", "cluster_name": "aks",
                                       "gpu_driver": "None", "os_sku": "AzureLinux"})
        seen["pool"] = pool.pool

    rec = run_program(program)
    inputs = rec.one(AGENT_POOL).inputs
    assert inputs["nodeTaints"] == [GPU_TAINT, SPOT_TAINT]
    assert (inputs["agentPoolName"], inputs["osSKU"], inputs["spotMaxPrice"]) == ("lspot", "AzureLinux", -1)
    assert seen["pool"].tolerations[-1]["key"] == "kubernetes.azure.com/scalesetpriority"


def test_standalone_cluster_needs_only_a_location():
    def program():
        AksCluster("solo", {"location": "eastus"})
        AksCluster("big", {"location": "eastus", "system_pool_min_nodes": 5})

    rec = run_program(program)
    assert rec.of_type(AGENT_POOL) == [] and rec.of_type(FEATURE) == []
    inputs = rec.one(MANAGED_CLUSTER, "solo-aks").inputs
    assert "kubernetesVersion" not in inputs and inputs["location"] == "eastus"
    system = inputs["agentPoolProfiles"][0]
    assert (system["osSKU"], system["minCount"], system["maxCount"]) == ("Ubuntu", 2, 3)
    big = rec.one(MANAGED_CLUSTER, "big-aks").inputs["agentPoolProfiles"][0]
    assert (big["count"], big["minCount"], big["maxCount"]) == (5, 5, 5)


def test_azure_dev_reference_stack():
    """The cloud layer of stacks/Pulumi.azure-dev.yaml (the full plan and its manifests are in test_plan)."""
    stack_file = plan.discover_stacks()["azure-dev"]
    cfg = parse_config(strip_namespace(plan.load_stack_file(stack_file)), "azure-dev")
    rec, seen = run(cfg)
    pools = {r.inputs["agentPoolName"]: r.inputs for r in rec.of_type(AGENT_POOL)}
    assert set(pools) == {"a100infer", "a100spot", "h100train"}
    assert pools["a100infer"]["vmSize"] == "Standard_NC24ads_A100_v4"
    # a100-spot is a100-infer's fallback: the same size on spot; h100-train runs in a capacity reservation group.
    assert (pools["a100spot"]["vmSize"], pools["a100spot"]["scaleSetPriority"]) == ("Standard_NC24ads_A100_v4", "Spot")
    assert pools["h100train"]["capacityReservationGroupID"] == (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpu-capacity/providers/"
        "Microsoft.Compute/capacityReservationGroups/h100-crg")
    assert "capacityReservationGroupID" not in pools["a100infer"]
    assert pools["a100infer"]["nodeLabels"]["gpu-platform.io/pool"] == "a100-infer"
    assert pools["a100infer"]["availabilityZones"] == ["1", "2", "3"]
    assert pools["h100train"]["vmSize"] == "Standard_ND96isr_H100_v5"
    assert pools["h100train"]["nodeLabels"]["gpu-platform.io/rdma"] == "infiniband"
    assert (pools["h100train"]["minCount"], pools["h100train"]["maxCount"]) == (2, 2)  # its reservation, fixed
    assert all(p["gpuProfile"] == {"driver": "None"} for p in pools.values())
    assert all(p["nodeTaints"] == [GPU_TAINT] for n, p in pools.items() if n != "a100spot")
    assert pools["a100spot"]["nodeTaints"] == [GPU_TAINT, "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"]
    assert len(rec.of_type(FEATURE)) == 1
    assert [(p.name, p.role) for p in seen["handle"].pools] == [
        ("a100-infer", "inference"), ("a100-spot", "inference"), ("h100-train", "training")]
    assert [t.name for t in cfg.teams] == ["research", "product"]
