"""Grace-Blackwell NVL72 racks on GKE (A4X) and AKS (ND GB200 / GB300 v6): the exact node pool inputs each cloud
receives for a rack pool (driver, image, labels, taints, placement, networks, reservation), the GPU software the
stack's GPU Operator must match, and every refusal with its one line."""

import json
import re

import pulumi
import pytest

from gpu_platform import catalog, plan, pool_args, testing
from gpu_platform.accelerators import rdma_specs
from gpu_platform.clouds import azure, gcp
from gpu_platform.clouds.azure import AksCluster, AksGpuNodePool
from gpu_platform.clouds.azure import specs as azure_specs
from gpu_platform.clouds.gcp import GkeCluster, GkeGpuNodePool
from gpu_platform.clouds.gcp import options as gcp_options
from gpu_platform.clouds.gcp import pools as gcp_pools
from gpu_platform.config import ConfigError, parse_config, strip_namespace
from gpu_platform.pools import GpuPool

R = "us-central1"
ZONE = f"{R}-b"
NODE_POOL = "gcp:container/nodePool:NodePool"
RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
NETWORK = "gcp:compute/network:Network"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
PARAM_SET = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"
AGENT_POOL = "azure-native:containerservice:AgentPool"
GKE_GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
GB200 = "Standard_ND128isr_NDR_GB200_v6"
GB300 = "Standard_ND128isr_GB300_v6"


def a4x(**keys):
    """A stack-file ``nodePools`` entry of one A4X rack (a key given None is left out)."""
    entry = {"name": "rack", "instanceType": "a4x-highgpu-4g", "rdma": True, "maxNodes": 18, "role": "training",
             "zones": [ZONE], "provisioning": "reservation", "reservation": "gb200-res/reservationBlocks/block-1",
             **keys}
    return {k: v for k, v in entry.items() if v is not None}


def h100(**keys):
    return {"name": "infer", "instanceType": "a3-highgpu-8g", "maxNodes": 2, "role": "inference", **keys}


NO_INFERENCE = {"enabled": False}
"""A stack of a rack alone turns the reference inference app off: its image is amd64 only."""


def gke_stack(*pools, **top):
    inference = {} if any(p["instanceType"] == "a3-highgpu-8g" for p in pools) else {"inference": NO_INFERENCE}
    return {"cloud": "gcp", "region": R, "project": "gpu-dev-1", "nodePools": list(pools), **inference, **top}


def error_of(raw) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(raw, "dev")
    return str(info.value)


def build_gke(raw):
    """`cluster_from_config` of a GKE stack under mocks: (recording, handle)."""
    config = parse_config(raw, "dev")
    captured = {}

    def program():
        captured["handle"] = gcp.cluster_from_config("dev", config, pulumi.ResourceOptions())

    return testing.run_program(program, stack="dev"), captured["handle"]


# ---------------------------------------------------------------------------------------------------------
# GKE: the A4X rack pool of a stack


@pytest.fixture(scope="module")
def a4x_stack():
    return build_gke(gke_stack(a4x(), h100()))


def test_a4x_pool_is_a_dra_pool_without_gke_driver_or_device_plugin(a4x_stack):
    recording, _ = a4x_stack
    pool = recording.one(NODE_POOL, "dev-rack-pool").inputs
    config = pool["nodeConfig"]
    assert config["machineType"] == "a4x-highgpu-4g"
    assert config["guestAccelerators"] == [{
        "type": "nvidia-gb200", "count": 4,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"}}]
    assert config["labels"] == {
        "gpu-platform.io/pool": "rack",
        "gpu-platform.io/accelerator": "gb200",
        "gpu-platform.io/gpu-sharing": "exclusive",
        "gpu-platform.io/rdma": "gpudirect-rdma",
        "gpu-platform.io/gpu-allocation": "dra",
        "nvidia.com/gpu.deploy.device-plugin": "false",
        "nvidia.com/dra-kubelet-plugin": "true",
        "gke-no-default-nvidia-gpu-device-plugin": "true",
        "nvidia.com/gpu.present": "true",
    }
    assert config["taints"] == GKE_GPU_TAINT
    assert config["taintConfig"] == {"architectureTaintBehavior": "NONE"}
    assert config["imageType"] == "COS_CONTAINERD"
    assert "gpuSharingConfig" not in config["guestAccelerators"][0]


def test_a4x_pool_consumes_its_reservation_at_a_fixed_size(a4x_stack):
    recording, _ = a4x_stack
    pool = recording.one(NODE_POOL, "dev-rack-pool").inputs
    assert pool["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": ["gb200-res/reservationBlocks/block-1"]}
    assert "spot" not in pool["nodeConfig"]
    assert pool["autoscaling"] == {"totalMinNodeCount": 18, "totalMaxNodeCount": 18}
    assert (pool["nodeLocations"], pool["initialNodeCount"]) == ([ZONE], 18)


def test_a4x_pool_is_placed_by_a_1x72_workload_policy_it_creates(a4x_stack):
    recording, _ = a4x_stack
    policy = recording.one(RESOURCE_POLICY, "dev-rack-nvlink")
    assert policy.inputs == {"name": "dev-rack-nvlink", "project": "gpu-dev-1", "region": R,
                             "workloadPolicy": {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}}
    assert policy.delete_before_replace is True
    assert policy.parent == recording.one("gpuplatform:index:GkeGpuNodePool", "dev-rack").urn
    pool = recording.one(NODE_POOL, "dev-rack-pool").inputs
    assert pool["placementPolicy"] == {"type": "COMPACT", "policyName": "dev-rack-nvlink"}
    assert len(recording.of_type(RESOURCE_POLICY)) == 1  # the H100 pool gets none


def test_a4x_pool_attaches_a_gvnic_and_its_four_rdma_nics(a4x_stack):
    recording, handle = a4x_stack
    pool = recording.one(NODE_POOL, "dev-rack-pool").inputs
    assert pool["networkConfig"] == {"additionalNodeNetworkConfigs": [
        {"network": "dev-gvnic-1-net", "subnetwork": "dev-gvnic-1-sub"},
        {"network": "dev-rdma-net", "subnetwork": "dev-rdma-0-sub"},
        {"network": "dev-rdma-net", "subnetwork": "dev-rdma-1-sub"},
        {"network": "dev-rdma-net", "subnetwork": "dev-rdma-2-sub"},
        {"network": "dev-rdma-net", "subnetwork": "dev-rdma-3-sub"},
    ]}
    rdma = recording.one(NETWORK, "dev-rdma-net").inputs
    assert (rdma["mtu"], rdma["networkProfile"]) == (
        8896, "projects/gpu-dev-1/global/networkProfiles/us-central1-b-vpc-roce")
    subnets = {r.name: r.inputs["ipCidrRange"] for r in recording.of_type(SUBNETWORK) if "-rdma-" in r.name}
    assert subnets == {"dev-rdma-0-sub": "192.168.128.0/21", "dev-rdma-1-sub": "192.168.136.0/21",
                       "dev-rdma-2-sub": "192.168.144.0/21", "dev-rdma-3-sub": "192.168.152.0/21"}
    params = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in recording.of_type(PARAM_SET)}
    assert params == {
        "gvnic-1": {"vpc": "dev-gvnic-1-net", "vpcSubnet": "dev-gvnic-1-sub", "deviceMode": "NetDevice"},
        **{f"rdma-{i}": {"vpc": "dev-rdma-net", "vpcSubnet": f"dev-rdma-{i}-sub", "deviceMode": "RDMA"}
           for i in range(4)}}
    assert handle.outputs["gpu_networks"] == ["gvnic-1", "rdma-0", "rdma-1", "rdma-2", "rdma-3"]
    rack = next(p for p in handle.pools if p.name == "rack")
    assert json.loads(dict(rack.rdma_pod_annotations)["networking.gke.io/interfaces"]) == [
        {"interfaceName": "eth0", "network": "default"},
        {"interfaceName": "eth1", "network": "gvnic-1"},
        *({"interfaceName": f"eth{i + 2}", "network": f"rdma-{i}"} for i in range(4))]
    assert "networkConfig" not in recording.one(NODE_POOL, "dev-infer-pool").inputs


def test_every_gpu_pool_of_an_a4x_stack_runs_googles_cos_driver_installer(a4x_stack):
    recording, handle = a4x_stack
    infer = recording.one(NODE_POOL, "dev-infer-pool").inputs["nodeConfig"]
    assert infer["imageType"] == "COS_CONTAINERD"
    assert infer["guestAccelerators"] == [{
        "type": "nvidia-h100-80gb", "count": 8,
        "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"}}]
    assert infer["labels"] == {"gpu-platform.io/pool": "infer", "gpu-platform.io/accelerator": "h100",
                               "gpu-platform.io/gpu-sharing": "exclusive",
                               "gke-no-default-nvidia-gpu-device-plugin": "true"}
    assert "taintConfig" not in infer  # amd64: GKE adds no architecture taint
    assert handle.outputs["driver_preinstalled"] is True
    assert handle.outputs["driver_install_dir"] == "/home/kubernetes/bin/nvidia"


def test_operator_stacks_without_arm64_pools_keep_ubuntu_and_the_operators_driver():
    recording, handle = build_gke(gke_stack(h100(), gpuSoftware="operator"))
    assert recording.one(NODE_POOL, "dev-infer-pool").inputs["nodeConfig"]["imageType"] == "UBUNTU_CONTAINERD"
    assert "driver_preinstalled" not in handle.outputs and "driver_install_dir" not in handle.outputs


def test_google_driver_installer_follows_the_arm64_pools():
    config = parse_config(gke_stack(a4x(), h100()), "dev")
    assert gcp_options.google_driver_installer(config.gpu_software, config.node_pools) is True
    assert gcp_options.google_driver_installer("operator", config.node_pools[1:]) is False
    assert gcp_options.image_type(gcp_options.GcpPoolOptions(), "operator", google_installer=True) == "COS_CONTAINERD"
    assert gcp_options.image_type(gcp_options.GcpPoolOptions(), "operator") == "UBUNTU_CONTAINERD"
    assert gcp_options.compact_placement(config.node_pools[0]) is True


def test_dra_pool_without_rdma_keeps_placement_and_no_networks():
    recording, _ = build_gke(gke_stack(a4x(rdma=False)))
    pool = recording.one(NODE_POOL, "dev-rack-pool").inputs
    assert pool["placementPolicy"] == {"type": "COMPACT", "policyName": "dev-rack-nvlink"}
    assert "networkConfig" not in pool
    assert "gpu-platform.io/rdma" not in pool["nodeConfig"]["labels"]


def test_named_placement_policy_replaces_the_created_one():
    recording, _ = build_gke(gke_stack(a4x(placementPolicyName="my-a4x-1x72")))
    assert recording.of_type(RESOURCE_POLICY) == []
    assert recording.one(NODE_POOL, "dev-rack-pool").inputs["placementPolicy"] == {
        "type": "COMPACT", "policyName": "my-a4x-1x72"}


def test_pure_gke_rack_decisions():
    rack = GpuPool.from_spec(pool_args("gcp", a4x())["pool"])
    shape = catalog.SHAPES[("gcp", "a4x-highgpu-4g")]
    assert gcp_pools.taint_config(rack) == {"architecture_taint_behavior": "NONE"}
    assert gcp_pools.workload_policy(shape) == {"type": "HIGH_THROUGHPUT", "accelerator_topology": "1x72"}
    assert gcp_pools.node_labels(rack, True)["nvidia.com/gpu.present"] == "true"
    h100_pool = GpuPool.from_spec(pool_args("gcp", h100())["pool"])
    assert gcp_pools.taint_config(h100_pool) is None
    assert "nvidia.com/gpu.present" not in gcp_pools.node_labels(h100_pool, True)


# ---------------------------------------------------------------------------------------------------------
# GKE: refusals in a stack file

STACK_ERRORS = [
    ("no reservation", gke_stack(a4x(provisioning=None, reservation=None)),
     "dev: nodePools[0].provisioning: a4x-highgpu-4g is sold through reservations only (Compute Engine GPU machine "
     "types), not on-demand; set provisioning: reservation and reservation: <reservation> or "
     "<reservation>/reservationBlocks/<block>"),
    ("any reservation instead of a named one",
     gke_stack(a4x(provisioning=None, reservation=None, reservationAffinity="ANY_RESERVATION")),
     "dev: nodePools[0].provisioning: a4x-highgpu-4g is sold through reservations only (Compute Engine GPU machine "
     "types), not on-demand; set provisioning: reservation and reservation: <reservation> or "
     "<reservation>/reservationBlocks/<block>"),
    ("spot", gke_stack(a4x(provisioning=None, reservation=None, spot=True)),
     "dev: nodePools[0].provisioning: a4x-highgpu-4g is sold through reservations only (Compute Engine GPU machine "
     "types), not spot; set provisioning: reservation and reservation: <reservation> or "
     "<reservation>/reservationBlocks/<block>"),
    ("the old reservations list", gke_stack(a4x(provisioning=None, reservation=None, reservations=["gb200-res"])),
     "dev: nodePools[0].reservations: replaced by provisioning: reservation with reservation: <name> (or "
     "<name>/reservationBlocks/<block>)"),
    ("no compact placement", gke_stack(a4x(compactPlacement=False)),
     "dev: nodePools[0].compactPlacement: a4x-highgpu-4g forms its 72-GPU NVLink domain only under a workload "
     "policy, which Compute Engine requires for it; remove compactPlacement: false"),
    ("two racks in one pool", gke_stack(a4x(maxNodes=36)),
     "dev: nodePools[0].maxNodes: each a4x-highgpu-4g node pool is one 72-GPU NVLink domain (workload policy "
     "accelerator topology 1x72: 18 VMs), got maxNodes 36; add a pool per domain"),
    ("Ubuntu beside an arm64 pool", gke_stack(a4x(), h100(imageType="UBUNTU_CONTAINERD")),
     "dev: nodePools[1].imageType: this stack's GPU pools run Google's COS driver installer (nodePools[0] has arm64 "
     "nodes, which GKE runs on COS); remove imageType or use COS_CONTAINERD"),
    ("Ubuntu on the rack", gke_stack(a4x(imageType="UBUNTU_CONTAINERD")),
     "dev: nodePools[0].imageType: this stack's GPU pools run Google's COS driver installer (nodePools[0] has arm64 "
     "nodes, which GKE runs on COS); remove imageType or use COS_CONTAINERD"),
    ("TCPXO beside an arm64 pool",
     gke_stack(a4x(), {"name": "mega", "instanceType": "a3-megagpu-8g", "rdma": True, "maxNodes": 2,
                       "zones": [f"{R}-c"]}),
     "dev: nodePools[1].rdma: gpudirect-tcpxo on GKE needs GKE's driver and device plugin (gpuSoftware "
     "'cloud-managed'); under the GPU Operator the platform runs gpudirect-rdma only"),
    ("driver version on the rack", gke_stack(a4x(gpuDriverVersion="LATEST")),
     "dev: nodePools[0].gpuDriverVersion: the GPU Operator installs the driver (gpuSoftware 'operator'); remove it"),
    ("MIG on a GKE DRA pool",
     gke_stack(h100(gpuAllocation="dra", minNodes=2, sharing={"mode": "mig", "profile": "1g.10gb"})),
     "dev: nodePools[0].sharing.mode: GKE's DRA setup cannot use multi-instance GPUs (GKE 'Prepare GKE "
     "infrastructure for DRA workloads', Limitations); use exclusive or gpuAllocation: device-plugin"),
]


@pytest.mark.parametrize(("case", "raw", "error"), STACK_ERRORS, ids=[e[0] for e in STACK_ERRORS])
def test_gke_rack_stack_errors(case, raw, error):
    assert error_of(raw) == error


# ---------------------------------------------------------------------------------------------------------
# GKE: the components' boundary


def rack_entry(**extra):
    return {**pool_args("gcp", a4x()), **extra}


def rack_spec(**changes):
    return {**pool_args("gcp", a4x())["pool"], **changes}


def solo(**args):
    return {"pool": rack_spec(), "cluster": "c", "location": ZONE, **args}


COMPONENT_ERRORS = [
    ("GKE driver on a DRA pool", GkeCluster,
     lambda: {"region": R, "gpu_pools": [rack_entry(gpu_driver_version="DEFAULT")]},
     "GkeCluster dev: gpu_pools[0].gpu_driver_version: GKE installs no driver on a DRA pool ('Automatic GPU driver "
     "installation isn't supported with DRA'); use INSTALLATION_DISABLED or leave it out"),
    ("GKE device plugin on a DRA pool", GkeCluster,
     lambda: {"region": R, "gpu_pools": [rack_entry(disable_gke_device_plugin=False)]},
     "GkeCluster dev: gpu_pools[0].disable_gke_device_plugin: a DRA pool's GPUs are NVIDIA's DRA driver's, so GKE's "
     "device plugin must stay off; remove it"),
    ("MIG on a DRA pool", GkeGpuNodePool,
     lambda: solo(pool=pool_args("gcp", h100(gpuAllocation="dra", minNodes=2))["pool"]
                  | {"sharing_mode": "mig", "mig_profile": "1g.10gb"}),
     "GkeGpuNodePool dev: pool.sharing_mode: GKE's DRA setup cannot use mig (time-sharing, MIG and MPS are "
     "excluded: 'Prepare GKE infrastructure for DRA workloads'); use exclusive"),
    ("no reservation", GkeCluster,
     lambda: {"region": R, "gpu_pools": [rack_entry(pool=rack_spec(provisioning="on-demand", reservation=""))]},
     "GkeCluster dev: gpu_pools[0].pool.provisioning: a4x-highgpu-4g is sold through reservations only (Compute "
     "Engine GPU machine types), not on-demand; set pool.provisioning: reservation and pool.reservation: "
     "<reservation> or <reservation>/reservationBlocks/<block>"),
    ("spot", GkeGpuNodePool, lambda: solo(pool=rack_spec(spot=True, provisioning="spot", reservation="")),
     "GkeGpuNodePool dev: pool.provisioning: a4x-highgpu-4g is sold through reservations only (Compute Engine GPU "
     "machine types), not spot; set pool.provisioning: reservation and pool.reservation: <reservation> or "
     "<reservation>/reservationBlocks/<block>"),
    ("the old reservations list", GkeGpuNodePool, lambda: solo(reservations=["gb200-res"]),
     "GkeGpuNodePool dev: reservations: replaced by pool.provisioning 'reservation' with pool.reservation '<name>' "
     "(or '<name>/reservationBlocks/<block>')"),
    ("no compact placement", GkeGpuNodePool, lambda: solo(compact_placement=False),
     "GkeGpuNodePool dev: compact_placement: a4x-highgpu-4g forms its 72-GPU NVLink domain only under a workload "
     "policy, which Compute Engine requires for it; remove compact_placement: false"),
    ("two racks in one pool", GkeGpuNodePool, lambda: solo(pool=rack_spec(min_nodes=36, max_nodes=36)),
     "GkeGpuNodePool dev: pool.max_nodes: each a4x-highgpu-4g node pool is one 72-GPU NVLink domain (workload policy "
     "accelerator topology 1x72: 18 VMs), got 36; add a pool per domain"),
    ("GPUDirect-RDMA on Ubuntu without GKE's driver", GkeCluster,
     lambda: {"region": R, "gpu_pools": [rack_entry(image_type="UBUNTU_CONTAINERD")]},
     "GkeCluster dev: gpu_pools[0].image_type: GPUDirect-RDMA without GKE's driver needs COS_CONTAINERD nodes, where "
     "Google's COS driver installer puts the driver in /home/kubernetes/bin/nvidia (the NCCL plugin's path)"),
]


@pytest.mark.parametrize(("case", "component", "args", "error"), COMPONENT_ERRORS,
                         ids=[e[0] for e in COMPONENT_ERRORS])
def test_gke_rack_component_errors(case, component, args, error):
    with pytest.raises(ConfigError, match=f"^{re.escape(error)}$"):
        component("dev", args())


def test_standalone_rack_pool_in_a_zonal_location_creates_its_policy_in_the_region():
    def program():
        GkeGpuNodePool("solo", solo(project="gpu-dev-1",
                                    additional_networks=[{"network": f"n{i}", "subnetwork": f"s{i}"}
                                                         for i in range(5)]))

    recording = testing.run_program(program)
    assert recording.one(RESOURCE_POLICY, "solo-nvlink").inputs == {
        "name": "solo-nvlink", "project": "gpu-dev-1", "region": R,
        "workloadPolicy": {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "1x72"}}
    pool = recording.one(NODE_POOL, "solo-pool").inputs
    assert pool["placementPolicy"] == {"type": "COMPACT", "policyName": "solo-nvlink"}
    assert pool["nodeConfig"]["imageType"] == "COS_CONTAINERD"
    assert pool["nodeConfig"]["guestAccelerators"][0]["gpuDriverInstallationConfig"] == {
        "gpuDriverVersion": "INSTALLATION_DISABLED"}
    assert pool["networkConfig"]["additionalNodeNetworkConfigs"][4] == {"network": "n4", "subnetwork": "s4"}


# ---------------------------------------------------------------------------------------------------------
# AKS: ND GB200 v6 / ND GB300 v6


def aks_stack(*pools, **keys):
    return {"cloud": "azure", "region": "southcentralus", "kubernetesVersion": "1.35", "nodePools": list(pools),
            "inference": NO_INFERENCE, **keys}


def gb(size=GB200, **keys):
    return {"name": "rack", "instanceType": size, "rdma": True, "maxNodes": 18, "role": "training", **keys}


def aks_pools(raw) -> dict[str, dict]:
    config = parse_config(raw, "dev")
    recording = testing.run_program(
        lambda: azure.cluster_from_config("dev", config, pulumi.ResourceOptions()), stack="dev")
    return {r.inputs["agentPoolName"]: r.inputs for r in recording.of_type(AGENT_POOL)}


@pytest.mark.parametrize("size", [GB200, GB300])
def test_gb_agent_pool_runs_ubuntu_with_the_operators_driver(size):
    pool = aks_pools(aks_stack(gb(size)))["rack"]
    assert {k: pool[k] for k in ("vmSize", "osType", "osSKU", "gpuProfile", "count", "minCount", "maxCount",
                                 "enableAutoScaling", "nodeTaints", "scaleSetPriority")} == {
        "vmSize": size, "osType": "Linux", "osSKU": "Ubuntu", "gpuProfile": {"driver": "None"}, "count": 18,
        "minCount": 18, "maxCount": 18, "enableAutoScaling": True, "nodeTaints": ["nvidia.com/gpu=present:NoSchedule"],
        "scaleSetPriority": "Regular"}
    assert pool["nodeLabels"] == {
        "gpu-platform.io/accelerator": catalog.SHAPES[("azure", size)].gpu_model,
        "gpu-platform.io/gpu-allocation": "dra",
        "gpu-platform.io/gpu-sharing": "exclusive",
        "gpu-platform.io/pool": "rack",
        "gpu-platform.io/rdma": "infiniband",
        "nvidia.com/dra-kubelet-plugin": "true",
        "nvidia.com/gpu.deploy.device-plugin": "false",
    }


def test_gb_pool_infiniband_needs_one_shared_rdma_unit_whatever_its_nic_count():
    rack = GpuPool.from_spec(pool_args("azure", gb())["pool"])
    h100_ib = GpuPool.from_spec(pool_args("azure", gb("Standard_ND96isr_H100_v5", maxNodes=2))["pool"])
    assert (rack.rdma_interfaces, h100_ib.rdma_interfaces) == (4, 8)
    assert rack.rdma_limits == h100_ib.rdma_limits == {"rdma/ib": 1}
    assert rdma_specs.shared_device_plugin_config([rack]) == rdma_specs.shared_device_plugin_config([h100_ib])


def test_gb_sizes_get_no_aks_gpu_software():
    assert azure_specs.aks_lists_gpu_size(catalog.ARM64) is False
    assert azure_specs.aks_lists_gpu_size(catalog.AMD64) is True
    rack = GpuPool.from_spec(pool_args("azure", gb())["pool"])
    assert azure_specs.default_gpu_driver(rack) == "None"


def test_standalone_gb_pool_defaults_to_no_aks_driver():
    recording = testing.run_program(lambda: AksGpuNodePool(
        "solo", {**pool_args("azure", gb()), "resource_group_name": "rg", "cluster_name": "aks"}))
    pool = recording.one(AGENT_POOL, "solo-pool").inputs
    assert (pool["gpuProfile"], pool["osSKU"]) == ({"driver": "None"}, "Ubuntu")


AKS_STACK_ERRORS = [
    ("Azure Linux cluster", aks_stack(gb(), osSku="AzureLinux"),
     "dev: osSku: 'AzureLinux' cannot run the arm64 Grace-Blackwell nodes of Standard_ND128isr_NDR_GB200_v6: AKS "
     "builds their node image on Ubuntu 24.04 arm64 only (Azure/AgentBaker); use Ubuntu (nodePools[0] 'rack' takes "
     "the cluster's osSku)"),
    ("Ubuntu 22.04 pool", aks_stack(gb(GB300, osSku="Ubuntu2204")),
     "dev: nodePools[0].osSku: 'Ubuntu2204' cannot run the arm64 Grace-Blackwell nodes of Standard_ND128isr_GB300_v6: "
     "AKS builds their node image on Ubuntu 24.04 arm64 only (Azure/AgentBaker); use Ubuntu"),
]


@pytest.mark.parametrize(("case", "raw", "error"), AKS_STACK_ERRORS, ids=[e[0] for e in AKS_STACK_ERRORS])
def test_aks_rack_stack_errors(case, raw, error):
    assert error_of(raw) == error


AKS_COMPONENT_ERRORS = [
    ("AKS driver on a GB pool", AksGpuNodePool,
     lambda: {**pool_args("azure", gb()), "gpu_driver": "Install", "resource_group_name": "rg", "cluster_name": "aks"},
     "AksGpuNodePool dev: gpu_driver: AKS's GPU software does not cover Standard_ND128isr_NDR_GB200_v6 (not among "
     "AKS's supported GPU sizes, use-nvidia-gpu.md); use 'None' (the GPU Operator installs the driver)"),
    ("Azure Linux 3 pool", AksCluster,
     lambda: {"location": "southcentralus", "gpu_pools": [{**pool_args("azure", gb()), "os_sku": "AzureLinux3"}]},
     "AksCluster dev: gpu_pools[0].os_sku: 'AzureLinux3' cannot run the arm64 Grace-Blackwell nodes of "
     "Standard_ND128isr_NDR_GB200_v6: AKS builds their node image on Ubuntu 24.04 arm64 only (Azure/AgentBaker); use "
     "Ubuntu"),
    ("Azure Linux cluster", AksCluster,
     lambda: {"location": "southcentralus", "os_sku": "AzureLinux", "gpu_pools": [pool_args("azure", gb())]},
     "AksCluster dev: os_sku: 'AzureLinux' cannot run the arm64 Grace-Blackwell nodes of "
     "Standard_ND128isr_NDR_GB200_v6: AKS builds their node image on Ubuntu 24.04 arm64 only (Azure/AgentBaker); use "
     "Ubuntu (gpu_pools[0] 'rack' takes the cluster's)"),
]


@pytest.mark.parametrize(("case", "component", "args", "error"), AKS_COMPONENT_ERRORS,
                         ids=[e[0] for e in AKS_COMPONENT_ERRORS])
def test_aks_rack_component_errors(case, component, args, error):
    with pytest.raises(ConfigError, match=f"^{re.escape(error)}$"):
        component("dev", args())


# ---------------------------------------------------------------------------------------------------------
# The reference stacks


def stack_config(name):
    return parse_config(strip_namespace(plan.load_stack_file(plan.discover_stacks()[name])), name)


def test_gcp_a4x_reference_stack():
    config = stack_config("gcp-a4x")
    assert config.gpu_software == "operator"
    rack, infer = config.gpu_pools()
    assert (rack.instance_type, rack.gpu_allocation, rack.rdma_fabric, rack.min_nodes, rack.max_nodes, rack.role) \
        == ("a4x-highgpu-4g", "dra", "gpudirect-rdma", 18, 18, "training")
    assert (infer.instance_type, infer.gpu_allocation, infer.role) == ("a3-highgpu-8g", "device-plugin", "inference")
    assert (rack.provisioning, rack.reservation) == (
        "reservation", "gb200-nvl72/reservationBlocks/gb200-nvl72-block-0001")
    assert gcp_options.google_driver_installer(config.gpu_software, config.node_pools) is True


def test_azure_gb200_reference_stack():
    config = stack_config("azure-gb200")
    assert (config.gpu_software, config.cluster_options.os_sku, config.kubernetes_version) == (
        "operator", "Ubuntu", "1.36")
    rack, infer = config.gpu_pools()
    assert (rack.instance_type, rack.gpu_allocation, rack.rdma_fabric, rack.min_nodes, rack.max_nodes) == (
        GB200, "dra", "infiniband", 18, 18)
    assert (infer.instance_type, infer.role) == ("Standard_NC40ads_H100_v5", "inference")
