"""Azure configuration keys: defaults, derived values, and every bad combination as a one-line field-path error."""

import pytest

from gpu_platform import cli
from gpu_platform.clouds.azure.options import AzureClusterOptions, AzurePoolOptions
from gpu_platform.config import ConfigError, parse_config

A100 = {"name": "a100-infer", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 2}
H100_IB = {"name": "h100-train", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 4, "rdma": True}


def azure(*pools, **keys):
    return {"cloud": "azure", "region": "westeurope", "nodePools": list(pools) or [dict(A100)], **keys}


def pool(**fields):
    return {**A100, **fields}


def test_defaults_follow_aks_own_defaults():
    config = parse_config(azure(), "s")
    assert config.gpu_software == "device-plugin"
    assert config.cluster_options == AzureClusterOptions(
        resource_group_name=None, cluster_name=None, vnet_subnet_id=None, vnet_address_space="10.224.0.0/12",
        subnet_address_prefix="10.224.0.0/16", pod_cidr="10.244.0.0/16", service_cidr="10.0.0.0/16",
        dns_service_ip="10.0.0.10", os_sku="Ubuntu", system_pool_vm_size="Standard_D4ds_v5",
        system_pool_min_nodes=2, system_pool_max_nodes=3, sku_tier="Standard", register_infiniband_feature=True)
    assert config.node_pools[0].cloud_options == AzurePoolOptions(agent_pool_name="a100infer")


def test_every_key_is_read():
    config = parse_config(azure(
        pool(spot=True, spotMaxPrice=0.98765, spotEvictionPolicy="Deallocate", osSku="AzureLinux",
             agentPoolName="infer1", osDiskSizeGb=256, zones=["1", "3"]),
        resourceGroupName="rg-gpu", clusterName="aks-gpu-dev",
        vnetSubnetId="/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/n",
        podCidr="192.168.0.0/16", serviceCidr="172.16.0.0/16", osSku="AzureLinux", systemPoolVmSize="Standard_D8s_v5",
        systemPoolMinNodes=3, systemPoolMaxNodes=5, skuTier="Premium"), "s")
    options = config.cluster_options
    assert (options.resource_group_name, options.cluster_name, options.os_sku, options.sku_tier) == (
        "rg-gpu", "aks-gpu-dev", "AzureLinux", "Premium")
    assert (options.pod_cidr, options.service_cidr, options.dns_service_ip) == (
        "192.168.0.0/16", "172.16.0.0/16", "172.16.0.10")
    assert (options.system_pool_vm_size, options.system_pool_min_nodes, options.system_pool_max_nodes) == (
        "Standard_D8s_v5", 3, 5)
    assert config.node_pools[0].cloud_options == AzurePoolOptions(
        agent_pool_name="infer1", os_sku="AzureLinux", spot_max_price=0.98765, spot_eviction_policy="Deallocate",
        os_disk_size_gb=256)
    assert config.node_pools[0].zones == ("1", "3")


def test_spot_pool_defaults_to_on_demand_cap_and_tolerates_the_spot_taint():
    config = parse_config(azure(pool(spot=True)), "s")
    assert config.node_pools[0].cloud_options.spot_max_price is None  # AKS default -1 is applied by the pool
    assert {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot",
            "effect": "NoSchedule"} in config.gpu_pools()[0].tolerations


def test_mig_profiles_aks_cannot_apply_are_fine_when_the_operator_owns_mig():
    h100 = {**H100_IB, "rdma": False, "sharing": {"mode": "mig", "profile": "1g.20gb"}}
    config = parse_config(azure(h100, gpuSoftware="operator"), "s")
    assert config.gpu_pools()[0].labels["nvidia.com/mig.config"] == "all-1g.20gb"


def test_infiniband_pool_may_opt_out_of_feature_registration():
    config = parse_config(azure(dict(H100_IB), registerInfinibandFeature=False), "s")
    assert config.cluster_options.register_infiniband_feature is False
    assert config.gpu_pools()[0].labels["gpu-platform.io/rdma"] == "infiniband"


SUBNET = "/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/n"
ERRORS = [
    ("mig on a size without MIG", azure(pool(instanceType="Standard_NC4as_T4_v3", sharing={"mode": "mig",
                                                                                           "profile": "1g.5gb"})),
     "bad: nodePools[0].sharing.mode: mig needs a MIG-capable GPU; NVIDIA T4 on 'Standard_NC4as_T4_v3' has no MIG"),
    ("rdma on a size without InfiniBand", azure(pool(rdma=True)),
     "bad: nodePools[0].rdma: 'Standard_NC24ads_A100_v4' has no RDMA fabric; RDMA-capable Azure shapes: "
     "Standard_ND96amsr_A100_v4, Standard_ND96asr_v4, Standard_ND96isr_H100_v5, Standard_ND96isr_H200_v5, "
     "Standard_ND96isr_MI300X_v5"),
    ("mig profile AKS cannot apply", azure({**H100_IB, "rdma": False, "sharing": {"mode": "mig",
                                                                                 "profile": "1g.20gb"}}),
     "bad: nodePools[0].sharing.profile: AKS applies MIG through gpuInstanceProfile, which offers 1g.10gb (MIG1g), "
     "2g.20gb (MIG2g), 3g.40gb (MIG3g), 4g.40gb (MIG4g), 7g.80gb (MIG7g) on Standard_ND96isr_H100_v5; use one of "
     "them or gpuSoftware 'operator' (MIG manager)"),
    ("bad cluster osSku", azure(osSku="Windows2022"),
     "bad: osSku: 'Windows2022' is not one of Ubuntu, Ubuntu2204, AzureLinux, AzureLinux3"),
    ("bad pool osSku", azure(pool(osSku="ubuntu")),
     "bad: nodePools[0].osSku: 'ubuntu' is not one of Ubuntu, Ubuntu2204, AzureLinux, AzureLinux3; "
     "did you mean 'Ubuntu'?"),
    ("mixed OS with the GPU Operator", azure(pool(osSku="AzureLinux"), gpuSoftware="operator"),
     "bad: nodePools[0].osSku: 'AzureLinux' differs from the cluster's osSku 'Ubuntu'; the NVIDIA GPU Operator does "
     "not support several OS versions in one AKS cluster"),
    ("spotMaxPrice without spot", azure(pool(spotMaxPrice=0.5)),
     "bad: nodePools[0].spotMaxPrice: only applies to spot pools (spot: true)"),
    ("spotEvictionPolicy without spot", azure(pool(spotEvictionPolicy="Delete")),
     "bad: nodePools[0].spotEvictionPolicy: only applies to spot pools (spot: true)"),
    ("spotMaxPrice zero", azure(pool(spot=True, spotMaxPrice=0)),
     "bad: nodePools[0].spotMaxPrice: must be -1 (up to the on-demand price) or a positive USD price with at most "
     "5 decimals, got 0"),
    ("spotMaxPrice six decimals", azure(pool(spot=True, spotMaxPrice=0.123456)),
     "bad: nodePools[0].spotMaxPrice: must be -1 (up to the on-demand price) or a positive USD price with at most "
     "5 decimals, got 0.123456"),
    ("spotMaxPrice not a number", azure(pool(spot=True, spotMaxPrice="cheap")),
     "bad: nodePools[0].spotMaxPrice: must be a number, got 'cheap'"),
    ("bad eviction policy", azure(pool(spot=True, spotEvictionPolicy="Stop")),
     "bad: nodePools[0].spotEvictionPolicy: 'Stop' is not one of Delete, Deallocate"),
    ("agent pool name too long", azure(pool(agentPoolName="a100inference")),
     "bad: nodePools[0].agentPoolName: 'a100inference' is not an AKS agent pool name (lower-case letters and "
     "digits, starting with a letter, at most 12)"),
    ("agent pool names collide", azure(pool(name="a-100"), pool(name="a100")),
     "bad: nodePools[1].agentPoolName: agent pool name 'a100' is also used by nodePools[0]; set a distinct "
     "agentPoolName"),
    ("agent pool named like the System pool", azure(pool(name="system")),
     "bad: nodePools[0].agentPoolName: agent pool name 'system' is also used by the System pool; set a distinct "
     "agentPoolName"),
    ("registerInfinibandFeature without an InfiniBand pool", azure(registerInfinibandFeature=True),
     "bad: registerInfinibandFeature: only applies when a pool has rdma: true on an InfiniBand size "
     "(Standard_ND96isr_H100_v5...)"),
    ("zone that Azure does not have", azure(pool(zones=["1", "4"])),
     "bad: nodePools[0].zones[1]: '4' is not an Azure availability zone (1, 2, 3)"),
    ("label under an AKS reserved prefix", azure(pool(labels={"kubernetes.azure.com/mode": "user"})),
     "bad: nodePools[0].labels.kubernetes.azure.com/mode: 'kubernetes.azure.com/' is a prefix AKS reserves for its "
     "own node labels"),
    ("AKS system taint", azure(pool(taints=["kubernetes.azure.com/scalesetpriority=spot:NoSchedule"])),
     "bad: nodePools[0].taints[0]: 'kubernetes.azure.com/scalesetpriority' is an AKS system taint; AKS sets it "
     "itself (spot pools) and rejects changes to it"),
    ("more nodes than an agent pool holds", azure(pool(maxNodes=1001)),
     "bad: nodePools[0].maxNodes: an AKS agent pool holds at most 1000 nodes, got 1001"),
    ("os disk too small", azure(pool(osDiskSizeGb=10)), "bad: nodePools[0].osDiskSizeGb: must be >= 30, got 10"),
    ("os disk too large", azure(pool(osDiskSizeGb=4096)),
     "bad: nodePools[0].osDiskSizeGb: must be <= 2048, got 4096"),
    ("malformed subnet id", azure(vnetSubnetId="subnet-1"),
     "bad: vnetSubnetId: 'subnet-1' is not a subnet resource ID (/subscriptions/<id>/resourceGroups/<group>/"
     "providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>)"),
    ("address space with an existing subnet", azure(vnetSubnetId=SUBNET, vnetAddressSpace="10.10.0.0/16"),
     "bad: vnetAddressSpace: does not apply with vnetSubnetId (the existing subnet has its own range)"),
    ("subnet outside the VNet", azure(subnetAddressPrefix="10.1.0.0/16"),
     "bad: subnetAddressPrefix: 10.1.0.0/16 is not inside vnetAddressSpace 10.224.0.0/12"),
    ("pod range inside the VNet", azure(podCidr="10.225.0.0/16"),
     "bad: podCidr: 10.225.0.0/16 overlaps vnetAddressSpace 10.224.0.0/12; Azure CNI overlay pod ranges must not"),
    ("service range overlapping pods", azure(serviceCidr="10.244.0.0/20"),
     "bad: podCidr: 10.244.0.0/16 overlaps serviceCidr 10.244.0.0/20; Azure CNI overlay pod ranges must not"),
    ("service range inside the VNet", azure(serviceCidr="10.230.0.0/16"),
     "bad: serviceCidr: 10.230.0.0/16 overlaps vnetAddressSpace 10.224.0.0/12"),
    # "IPv4 CIDR block", as on every cloud since one rule checks them all (gpu_platform.cidrs); AKS said "IPv4 CIDR".
    ("not a CIDR", azure(podCidr="10.244.0.0/33"),
     "bad: podCidr: '10.244.0.0/33' is not an IPv4 CIDR block such as 10.244.0.0/16 ('33' is not a valid netmask)"),
    ("GPU size for the System pool", azure(systemPoolVmSize="Standard_NC24ads_A100_v4"),
     "bad: systemPoolVmSize: 'Standard_NC24ads_A100_v4' is a GPU size; the System pool runs the platform's "
     "services on a CPU size such as Standard_D4ds_v5"),
    ("System pool max below min", azure(systemPoolMinNodes=3, systemPoolMaxNodes=2),
     "bad: systemPoolMaxNodes: must be >= systemPoolMinNodes (3), got 2"),
    ("bad sku tier", azure(skuTier="Basic"), "bad: skuTier: 'Basic' is not one of Free, Standard, Premium"),
    ("bad resource group name", azure(resourceGroupName="rg/gpu"),
     "bad: resourceGroupName: 'rg/gpu' is not a resource group name (1-90 letters, digits, '_', '-', '.', '(', ')', "
     "not ending with '.')"),
    ("bad cluster name", azure(clusterName="-aks"),
     "bad: clusterName: '-aks' is not an AKS cluster name (1-63 letters, digits, '-', '_', starting and ending "
     "with a letter or digit)"),
    ("misspelt key", azure(vnetSubnetID=SUBNET), "bad: vnetSubnetID: unknown key; did you mean 'vnetSubnetId'?"),
]


@pytest.mark.parametrize(("case", "raw", "message"), ERRORS, ids=[c[0] for c in ERRORS])
def test_bad_azure_configuration_is_one_line_naming_the_field(case, raw, message):
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "bad")
    assert str(err.value) == message


def test_bad_azure_stack_fails_the_plan_before_anything_is_registered(tmp_path, capsys):
    import yaml

    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump({"config": {f"gpu-platform:{k}": v for k, v in azure(pool(rdma=True)).items()}}))
    assert cli.main(["plan", "--config", str(path), "--out", str(tmp_path / "out")]) == cli.EXIT_CONFIG
    assert capsys.readouterr().err.startswith("error: bad: nodePools[0].rdma: 'Standard_NC24ads_A100_v4' has no RDMA")
    assert not (tmp_path / "out").exists()
