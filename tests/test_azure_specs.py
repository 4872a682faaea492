"""Pure AKS decisions: agent pool names, MIG instance profiles, driver mode, and property dicts that the installed
pulumi-azure-native SDK really accepts."""

import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulumi_azure_native import containerservice

from gpu_platform.clouds.azure import specs as azure_specs
from gpu_platform.clouds.azure.names import AGENT_POOL_NAME, agent_pool_name, dns_prefix
from gpu_platform.config import DNS_LABEL, parse_config
from gpu_platform.pools import GpuPool, Sharing


def enum_values(enum) -> set[str]:
    return {member.value for member in enum}


def init_params(cls) -> set[str]:
    return set(inspect.signature(cls.__init__).parameters) - {"self", "__self__"}


# --- names ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("pool", "agent_pool"), [
    ("h100-train", "h100train"),
    ("a100", "a100"),
    ("gpu-pool-0001", "gpupool0001"),
    ("twelve-chars", "twelvechars"),
    ("a100-inference-east", "a100infec624"),
    ("a100-inference-west", "a100infe6025"),
    ("8x-h100", "p8xh1002021"),
])
def test_agent_pool_names_are_valid_and_deterministic(pool, agent_pool):
    assert agent_pool_name(pool) == agent_pool
    assert AGENT_POOL_NAME.match(agent_pool)


@given(st.from_regex(DNS_LABEL, fullmatch=True))
def test_every_dns_label_pool_name_gives_a_valid_linux_agent_pool_name(name):
    derived = agent_pool_name(name)
    assert AGENT_POOL_NAME.match(derived), derived
    assert len(derived) <= 12 and derived == agent_pool_name(name)


@pytest.mark.parametrize(("name", "prefix"), [("azure-dev", "azure-dev"), ("gpu_dev.1", "gpu-dev-1"),
                                               ("-x-", "x"), ("___", "aks"), ("a" * 70, "a" * 54)])
def test_dns_prefix(name, prefix):
    assert dns_prefix(name) == prefix


# --- values match the SDK enums ---------------------------------------------------------------------------------


def test_enum_values_are_the_sdks():
    assert set(azure_specs.GPU_INSTANCE_PROFILES) == enum_values(containerservice.GPUInstanceProfile)
    assert {azure_specs.GPU_DRIVER_INSTALL, azure_specs.GPU_DRIVER_NONE} == enum_values(containerservice.GPUDriver)
    assert set(azure_specs.EVICTION_POLICIES) == enum_values(containerservice.ScaleSetEvictionPolicy)
    assert {azure_specs.SPOT_PRIORITY, azure_specs.REGULAR_PRIORITY} == enum_values(containerservice.ScaleSetPriority)
    assert set(azure_specs.SKU_TIERS) == enum_values(containerservice.ManagedClusterSKUTier)
    assert set(azure_specs.LINUX_OS_SKUS) < enum_values(containerservice.OSSKU)
    assert "Windows2022" not in azure_specs.LINUX_OS_SKUS


def test_driver_none_only_when_the_operator_owns_it():
    assert azure_specs.gpu_driver("operator") == "None"
    assert azure_specs.gpu_driver("device-plugin") == "Install"
    assert azure_specs.gpu_driver("cloud-managed") == "Install"


# --- MIG ---------------------------------------------------------------------------------------------------------


def test_mig_instance_profiles_match_the_aks_table_for_nd96asr_v4():
    # AKS gpu-multi-instance.md: Standard_ND96asr_v4 (A100 40GB) MIG1g=1g.5gb ... MIG7g=7g.40gb
    assert azure_specs.aks_mig_profiles("a100-40gb") == {
        "1g.5gb": "MIG1g", "2g.10gb": "MIG2g", "3g.20gb": "MIG3g", "4g.20gb": "MIG4g", "7g.40gb": "MIG7g"}


def test_double_memory_profiles_have_no_instance_profile():
    h100 = azure_specs.aks_mig_profiles("h100")
    assert h100["3g.40gb"] == "MIG3g" and h100["1g.10gb"] == "MIG1g"
    assert "1g.20gb" not in h100
    assert azure_specs.aks_mig_profiles("t4") == {}


# --- property dicts --------------------------------------------------------------------------------------------


def azure_pool(**overrides) -> GpuPool:
    fields = dict(name="a100-infer", cloud="azure", instance_type="Standard_NC24ads_A100_v4", gpu_model="a100-80gb",
                  gpus_per_node=1, gpu_memory_gib=80, min_nodes=1, max_nodes=4)
    return GpuPool(**{**fields, **overrides})


def test_agent_pool_properties_of_a_mig_spot_pool():
    pool = azure_pool(spot=True, sharing=Sharing("mig", 1, "3g.40gb"))
    props = azure_specs.agent_pool_properties(pool, agent_pool_name="a100infer", spot_max_price=0.5)
    assert props == {
        "agent_pool_name": "a100infer", "mode": "User", "type": "VirtualMachineScaleSets", "os_type": "Linux",
        "os_sku": "Ubuntu", "vm_size": "Standard_NC24ads_A100_v4", "count": 1, "enable_auto_scaling": True,
        "min_count": 1, "max_count": 4,
        "node_taints": ["nvidia.com/gpu=present:NoSchedule", "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"],
        "node_labels": {"gpu-platform.io/accelerator": "a100-80gb", "gpu-platform.io/gpu-sharing": "mig",
                        "gpu-platform.io/pool": "a100-infer", "nvidia.com/mig.config": "all-3g.40gb"},
        "gpu_profile": {"driver": "Install"}, "scale_set_priority": "Spot", "scale_set_eviction_policy": "Delete",
        "spot_max_price": 0.5, "gpu_instance_profile": "MIG3g",
    }


def test_operator_owned_mig_pool_has_no_instance_profile():
    pool = azure_pool(sharing=Sharing("mig", 1, "3g.40gb"))
    props = azure_specs.agent_pool_properties(pool, agent_pool_name="a", driver="None")
    assert "gpu_instance_profile" not in props and props["gpu_profile"] == {"driver": "None"}


def test_spot_settings_on_a_regular_pool_are_refused():
    with pytest.raises(ValueError, match="spot pools only"):
        azure_specs.agent_pool_properties(azure_pool(), agent_pool_name="a", spot_max_price=1.0)


def test_spot_taint_is_added_once_even_when_the_spec_lacks_it():
    pool = azure_pool(spot=True)
    assert azure_specs.node_taints(pool).count("kubernetes.azure.com/scalesetpriority=spot:NoSchedule") == 1
    tainted = azure_specs.aks_pool(pool)
    assert azure_specs.node_taints(tainted) == azure_specs.node_taints(pool)
    assert azure_specs.aks_pool(tainted) is tainted


def test_every_property_is_a_real_sdk_argument():
    pool = azure_pool(spot=True, sharing=Sharing("mig", 1, "1g.10gb"))
    props = azure_specs.agent_pool_properties(pool, agent_pool_name="a", spot_eviction_policy="Deallocate",
                                              zones=["1"], os_disk_size_gb=128)
    assert set(props) <= init_params(containerservice.AgentPoolArgs)
    assert set(props["gpu_profile"]) <= init_params(containerservice.GPUProfileArgs)
    system = azure_specs.system_pool_profile("Standard_D4ds_v5", 2, 3, "Ubuntu")
    assert set(system) <= init_params(containerservice.ManagedClusterAgentPoolProfileArgs)
    network = azure_specs.network_profile("10.244.0.0/16", "10.0.0.0/16", "10.0.0.10")
    assert set(network) <= init_params(containerservice.ContainerServiceNetworkProfileArgs)
    assert network["network_plugin"] in enum_values(containerservice.NetworkPlugin)
    assert network["network_plugin_mode"] in enum_values(containerservice.NetworkPluginMode)
    assert network["load_balancer_sku"] in enum_values(containerservice.LoadBalancerSku)
    identity = azure_specs.cluster_identity_profiles("/subscriptions/x/identity")
    assert set(identity) <= init_params(containerservice.ManagedClusterArgs)
    assert set(identity["identity"]) <= init_params(containerservice.ManagedClusterIdentityArgs)
    assert identity["identity"]["type"] in enum_values(containerservice.ResourceIdentityType)
    assert set(identity["security_profile"]["workload_identity"]) <= init_params(
        containerservice.ManagedClusterSecurityProfileWorkloadIdentityArgs)


def test_config_pools_map_to_properties():
    config = parse_config({"cloud": "azure", "region": "westeurope", "gpuSoftware": "operator", "nodePools": [
        {"name": "h100-train", "instanceType": "Standard_ND96isr_H100_v5", "rdma": True, "maxNodes": 2,
         "labels": {"team": "research"}, "taints": ["dedicated=training:NoSchedule"]}]}, "s")
    pool = config.gpu_pools()[0]
    props = azure_specs.agent_pool_properties(pool, agent_pool_name="h100train", driver="None")
    assert props["node_taints"] == ["nvidia.com/gpu=present:NoSchedule", "dedicated=training:NoSchedule"]
    assert props["node_labels"]["gpu-platform.io/rdma"] == "infiniband"
    assert props["node_labels"]["team"] == "research"
    assert (props["count"], props["min_count"], props["max_count"]) == (0, 0, 2)
