"""AKS components as a library: every argument takes effect or is refused with one `ConfigError` line, and a pool
built with `pool_args("azure", entry)` plans exactly what the same stack-file entry plans."""

import re

import pulumi
import pytest

from gpu_platform.clouds.azure import AksCluster, AksGpuNodePool, cluster_from_config
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.pool_builder import gpu_pool, pool_args
from gpu_platform.testing import run_program

AGENT_POOL = "azure-native:containerservice:AgentPool"
FEATURE = "azure-native:features:SubscriptionFeatureRegistration"
A100 = {"name": "a100", "instanceType": "Standard_NC24ads_A100_v4", "maxNodes": 3}
H100_IB = {"name": "h100-ib", "instanceType": "Standard_ND96isr_H100_v5", "maxNodes": 2, "rdma": True}
GROUP = {"resource_group_name": "rg", "cluster_name": "aks"}


def cluster(*entries, **args):
    return AksCluster("dev", {"location": "westeurope", "gpu_pools": list(entries), **args})


def refused(program, line: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(line)}$"):
        run_program(program)


MISUSE = {
    "pool of another cloud": (
        lambda: cluster({"pool": gpu_pool("gcp", {"name": "l4", "instanceType": "g2-standard-8"}).spec()}),
        "AksCluster dev: gpu_pools[0].pool.cloud: pool 'l4' is a GCP pool; AksCluster takes Azure pools"),
    "negative system nodes": (
        lambda: cluster(system_pool_min_nodes=-1),
        "AksCluster dev: system_pool_min_nodes: must be >= 1, got -1"),
    "system min above max": (
        lambda: cluster(system_pool_min_nodes=4, system_pool_max_nodes=3),
        "AksCluster dev: system_pool_max_nodes: must be >= system_pool_min_nodes (4), got 3"),
    "kubernetes version": (
        lambda: cluster(kubernetes_version="1.99"),
        "AksCluster dev: kubernetes_version: '1.99' is not a Kubernetes minor version from 1.25 to 1.39 such as 1.36"),
    "camelCase key": (
        lambda: cluster(skuTier="Free"),
        "AksCluster dev: skuTier: unknown argument; arguments are snake_case in Python: use 'sku_tier' (camelCase "
        "is the stack file's spelling)"),
    "sku tier": (lambda: cluster(sku_tier="Gold"), "AksCluster dev: sku_tier: 'Gold' is not one of Free, Standard, "
                                                  "Premium"),
    "os sku": (lambda: cluster(os_sku="Windows2022"),
               "AksCluster dev: os_sku: 'Windows2022' is not one of Ubuntu, Ubuntu2204, AzureLinux, AzureLinux3"),
    "missing location": (lambda: AksCluster("dev", {}), "AksCluster dev: location: is required"),
    "duplicate pool": (lambda: cluster(pool_args("azure", A100), pool_args("azure", A100)),
                       "AksCluster dev: gpu_pools[1]: duplicate pool name 'a100' (also gpu_pools[0])"),
    "zone out of range": (
        lambda: cluster({**pool_args("azure", A100), "availability_zones": ["4"]}),
        "AksCluster dev: gpu_pools[0].availability_zones[0]: '4' is not one of 1, 2, 3"),
    "spot price on a regular pool": (
        lambda: cluster({**pool_args("azure", A100), "spot_max_price": 2.0}),
        "AksCluster dev: gpu_pools[0].spot_max_price: only applies to spot pools (pool 'a100' has spot false)"),
    "cluster name per pool (would be overwritten)": (
        lambda: cluster({**pool_args("azure", A100), "cluster_name": "other"}),
        "AksCluster dev: gpu_pools[0].cluster_name: is set by AksCluster (its own cluster_name); remove it"),
    "InfiniBand switch without an InfiniBand pool": (
        lambda: cluster(pool_args("azure", A100), register_infiniband_feature=False),
        "AksCluster dev: register_infiniband_feature: only applies when a pool has an InfiniBand RDMA fabric (rdma "
        "on Standard_ND96isr_H100_v5...)"),
    "autoscaler setting misspelt": (
        lambda: cluster(auto_scaler_profile={"scale_down_unneded_time": "5m"}),
        "AksCluster dev: auto_scaler_profile.scale_down_unneded_time: is not an AKS cluster autoscaler setting; did "
        "you mean 'scale_down_unneeded_time'?"),
    "overlapping pod range": (
        lambda: cluster(pod_cidr="10.224.0.0/16"),
        "AksCluster dev: pod_cidr: 10.224.0.0/16 overlaps vnet_address_space 10.224.0.0/12; Azure CNI overlay pod "
        "ranges must not"),
    "VNet range with an existing subnet (would be dropped)": (
        lambda: cluster(vnet_address_space="10.0.0.0/8", vnet_subnet_id=(
            "/subscriptions/1/resourceGroups/n/providers/Microsoft.Network/virtualNetworks/h/subnets/a")),
        "AksCluster dev: vnet_address_space: does not apply with vnet_subnet_id (the existing subnet has its own "
        "range)"),
    "standalone pool without its cluster": (
        lambda: AksGpuNodePool("p", pool_args("azure", A100)),
        "AksGpuNodePool p: resource_group_name: is required (AksCluster sets it for the pools in its gpu_pools)"),
    "gpu driver": (lambda: AksGpuNodePool("p", {**pool_args("azure", A100), **GROUP, "gpu_driver": "Auto"}),
                   "AksGpuNodePool p: gpu_driver: 'Auto' is not one of Install, None"),
    "os disk too small": (lambda: AksGpuNodePool("p", {**pool_args("azure", A100), **GROUP, "os_disk_size_gb": 10}),
                          "AksGpuNodePool p: os_disk_size_gb: must be >= 30, got 10"),
    "initial nodes above max": (
        lambda: AksGpuNodePool("p", {**pool_args("azure", A100), **GROUP, "initial_nodes": 5}),
        "AksGpuNodePool p: initial_nodes: must be between pool.min_nodes (0) and pool.max_nodes (3), got 5"),
    "agent pool named system": (
        lambda: AksGpuNodePool("p", {**pool_args("azure", A100), **GROUP, "agent_pool_name": "system"}),
        "AksGpuNodePool p: agent_pool_name: 'system' is the cluster's System pool"),
    "eviction policy": (
        lambda: AksGpuNodePool("p", {**pool_args("azure", {**A100, "spot": True}), **GROUP,
                                     "spot_eviction_policy": "Stop"}),
        "AksGpuNodePool p: spot_eviction_policy: 'Stop' is not one of Delete, Deallocate"),
    "MIG profile AKS cannot apply": (
        lambda: AksGpuNodePool("p", {**GROUP, "pool": gpu_pool("azure", {
            **A100, "instanceType": "Standard_ND96isr_H100_v5", "sharing": {"mode": "mig", "profile": "1g.20gb"}})
            .spec()}),
        "AksGpuNodePool p: pool.mig_profile: AKS applies MIG through gpuInstanceProfile, which offers 1g.10gb "
        "(MIG1g), 2g.20gb (MIG2g), 3g.40gb (MIG3g), 4g.40gb (MIG4g), 7g.80gb (MIG7g) on Standard_ND96isr_H100_v5; "
        "use one of them or gpu_driver 'None' (the GPU Operator's MIG manager)"),
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_misuse_is_refused_before_any_resource(case, monkeypatch):
    program, line = MISUSE[case]
    registered: list[str] = []
    init = pulumi.ComponentResource.__init__

    def recording_init(self, t, name, *args, **kwargs):
        if t.startswith("gpuplatform:"):  # the harness registers the stack itself
            registered.append(name)
        init(self, t, name, *args, **kwargs)

    monkeypatch.setattr(pulumi.ComponentResource, "__init__", recording_init)
    refused(program, line)
    assert registered == []


def pool_inputs(entry: dict, **cluster_args) -> dict:
    rec = run_program(lambda: cluster(entry, **cluster_args))
    return rec.one(AGENT_POOL).inputs


SPOT = {"scaleSetPriority", "scaleSetEvictionPolicy", "spotMaxPrice", "nodeTaints"}  # what spot: true changes
# nodePools key -> (value, the AgentPool inputs that change, the new value of the first); the entry is A100, spot
# where the key needs it.
TAKES_EFFECT = {
    "agentPoolName": ("gpua", {"agentPoolName"}, "gpua"),
    "osSku": ("AzureLinux", {"osSKU"}, "AzureLinux"),
    "spotMaxPrice": (0.75, {"spotMaxPrice"}, 0.75),
    "spotEvictionPolicy": ("Deallocate", {"scaleSetEvictionPolicy"}, "Deallocate"),
    "osDiskSizeGb": (256, {"osDiskSizeGB"}, 256),
    "zones": (["2", "3"], {"availabilityZones"}, ["2", "3"]),
    "desiredNodes": (2, {"count"}, 2),
    "spot": (True, SPOT, "Spot"),
}


@pytest.mark.parametrize("key", sorted(TAKES_EFFECT))
def test_every_pool_key_reaches_the_agent_pool(key):
    value, fields, expected = TAKES_EFFECT[key]
    spot = {"spot": True} if key in ("spotMaxPrice", "spotEvictionPolicy") else {}
    before = pool_inputs(pool_args("azure", {**A100, **spot}))
    after = pool_inputs(pool_args("azure", {**A100, **spot, key: value}))
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == fields
    first = "scaleSetPriority" if key == "spot" else next(iter(fields))
    assert after[first] == expected


def test_pool_args_keeps_every_aks_key_of_the_entry():
    entry = pool_args("azure", {**A100, "spot": True, "agentPoolName": "gpua", "osSku": "AzureLinux",
                                "spotMaxPrice": 0.75, "spotEvictionPolicy": "Deallocate", "osDiskSizeGb": 256,
                                "zones": ["1"], "desiredNodes": 1})
    assert {k: v for k, v in entry.items() if k != "pool"} == {
        "agent_pool_name": "gpua", "os_sku": "AzureLinux", "spot_max_price": 0.75,
        "spot_eviction_policy": "Deallocate", "os_disk_size_gb": 256, "availability_zones": ["1"],
        "initial_nodes": 1}


def stack_pool_and_feature(pool: dict) -> tuple[dict, dict]:
    config = parse_config({"cloud": "azure", "region": "westeurope", "kubernetesVersion": "1.34",
                           "gpuSoftware": "device-plugin", "nodePools": [pool]}, "dev")
    rec = run_program(lambda: cluster_from_config("dev", config, pulumi.ResourceOptions()))
    return rec.one(AGENT_POOL).inputs, rec.one(FEATURE).inputs


def test_hand_composed_infiniband_pool_gets_the_stack_plumbing():
    entry = {**H100_IB, "zones": ["1"], "desiredNodes": 1}
    stack_pool, stack_feature = stack_pool_and_feature(entry)
    rec = run_program(lambda: cluster(pool_args("azure", entry), kubernetes_version="1.34"))
    assert rec.one(AGENT_POOL).inputs == stack_pool
    assert rec.one(FEATURE).inputs == stack_feature == {
        "featureName": "AKSInfinibandSupport", "providerNamespace": "Microsoft.ContainerService"}
    assert stack_pool["nodeLabels"]["gpu-platform.io/rdma"] == "infiniband"
    # The pool waits for the feature: AKS only places it on one InfiniBand network once it is registered.
    assert rec.one(FEATURE).urn in rec.one(AGENT_POOL).dependencies
