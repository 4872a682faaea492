"""GkeCluster and GkeGpuNodePool as library components: every argument is checked (one line naming the component,
its name and the argument path, before anything is registered) and every accepted argument reaches a resource.

The takes-effect tests plan ``GkeCluster(gpu_pools=[pool_args("gcp", entry)])`` for a base ``nodePools`` entry and
for the entry with one GCP key changed, and assert the exact node pool input that key sets.
"""

import json
import re

import pulumi
import pytest

from gpu_platform import gpu_pool, pool_args, testing
from gpu_platform.clouds.gcp import GkeCluster, GkeGpuNodePool
from gpu_platform.config_model import DEFAULT_KUBERNETES_VERSION
from gpu_platform.errors import ConfigError

R = "us-central1"
NODE_POOL = "gcp:container/nodePool:NodePool"
NETWORK = "gcp:compute/network:Network"
PARAM_SET = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"


def l4(**keys):
    """The pool_args entry of an L4 pool, with extra ``nodePools`` keys."""
    return pool_args("gcp", {"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 4, **keys})


def ultra(**keys):
    return pool_args(
        "gcp",
        {"name": "ultra", "instanceType": "a3-ultragpu-8g", "rdma": True, "maxNodes": 2, "zones": [f"{R}-b"], **keys},
    )


def np(**args):
    """GkeGpuNodePool args of the L4 pool."""
    return {"pool": l4()["pool"], "cluster": "c", "location": R, **args}


# ---------------------------------------------------------------------------------------------------------
# Misuse: refused before any resource is registered (the constructors raise before registering anything, so
# they are called here without an engine).

MISUSE = [
    (
        "aws",
        GkeGpuNodePool,
        lambda: {
            "pool": gpu_pool("aws", {"name": "h100", "instanceType": "p5.48xlarge"}).spec(),
            "cluster": "c",
            "location": R,
        },
        "GkeGpuNodePool dev: pool.cloud: pool 'h100' is an AWS pool; GkeGpuNodePool takes GCP pools",
    ),
    (
        "channel",
        GkeCluster,
        lambda: {"region": R, "release_channel": "FAST"},
        "GkeCluster dev: release_channel: 'FAST' is not one of RAPID, REGULAR, STABLE, EXTENDED",
    ),
    (
        "driver",
        GkeGpuNodePool,
        lambda: np(gpu_driver_version="R535"),
        "GkeGpuNodePool dev: gpu_driver_version: 'R535' is not one of DEFAULT, LATEST, INSTALLATION_DISABLED",
    ),
    (
        "image",
        GkeGpuNodePool,
        lambda: np(image_type="UBUNTU"),
        "GkeGpuNodePool dev: image_type: 'UBUNTU' is not one of COS_CONTAINERD, UBUNTU_CONTAINERD",
    ),
    (
        "affinity",
        GkeGpuNodePool,
        lambda: np(reservation_affinity="SPECIFIC"),
        "GkeGpuNodePool dev: reservation_affinity: 'SPECIFIC' is not one of NO_RESERVATION, ANY_RESERVATION, "
        "SPECIFIC_RESERVATION, ANY_RESERVATION_THEN_FAIL",
    ),
    (
        "res_any",
        GkeGpuNodePool,
        lambda: {**np(reservation_affinity="ANY_RESERVATION"),
                 "pool": l4(provisioning="reservation", reservation="r1")["pool"]},
        "GkeGpuNodePool dev: reservation_affinity: pool.provisioning: reservation consumes the named reservation "
        "(SPECIFIC_RESERVATION); remove reservation_affinity",
    ),
    (
        "sysminmax",
        GkeCluster,
        lambda: {"region": R, "system_min_nodes": 4},
        "GkeCluster dev: system_min_nodes: must be <= system_max_nodes (3), got 4",
    ),
    (
        "sysneg",
        GkeCluster,
        lambda: {"region": R, "system_min_nodes": -1},
        "GkeCluster dev: system_min_nodes: must be >= 0, got -1",
    ),
    (
        "disk",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [l4(diskSizeGb=10) | {"disk_size_gb": 5}]},
        "GkeCluster dev: gpu_pools[0].disk_size_gb: must be >= 10, got 5",
    ),
    (
        "cidr",
        GkeCluster,
        lambda: {"region": R, "node_cidr": "10.0.0.0/33"},
        # One message for every CIDR on every cloud (gpu_platform.cidrs); GKE said "IPv4 CIDR range" without why.
        "GkeCluster dev: node_cidr: '10.0.0.0/33' is not an IPv4 CIDR block such as 10.0.0.0/20 ('33' is not a valid "
        "netmask)",
    ),
    (
        "net",
        GkeCluster,
        lambda: {"region": R, "network": "vpc"},
        "GkeCluster dev: subnetwork: an existing VPC needs both network and subnetwork",
    ),
    (
        "netcidr",
        GkeCluster,
        lambda: {"region": R, "network": "vpc", "subnetwork": "s", "pod_cidr": "10.4.0.0/14"},
        "GkeCluster dev: pod_cidr: applies only to a new VPC; the given subnetwork has its own ranges",
    ),
    (
        "k8s",
        GkeCluster,
        lambda: {"region": R, "kubernetes_version": "1.34.2"},
        "GkeCluster dev: kubernetes_version: '1.34.2' is not a Kubernetes minor version from 1.25 to 1.39 such as 1.36",
    ),
    (
        "dup",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [l4(), l4()]},
        "GkeCluster dev: gpu_pools[1]: duplicate pool name 'l4' (also gpu_pools[0])",
    ),
    (
        "zone",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [l4() | {"node_locations": ["europe-west4-a"]}]},
        "GkeCluster dev: gpu_pools[0].node_locations[0]: zone 'europe-west4-a' is not in region 'us-central1'",
    ),
    (
        "czone",
        GkeCluster,
        lambda: {"region": R, "zone": "us-east1-b"},
        "GkeCluster dev: zone: zone 'us-east1-b' is not in region 'us-central1'",
    ),
    (
        "asp",
        GkeCluster,
        lambda: {"region": R, "autoscaling_profile": "OPTIMIZE"},
        "GkeCluster dev: autoscaling_profile: 'OPTIMIZE' is not one of BALANCED, OPTIMIZE_UTILIZATION",
    ),
    (
        "camel",
        GkeCluster,
        lambda: {"region": R, "systemMinNodes": 2},
        "GkeCluster dev: systemMinNodes: unknown argument; arguments are snake_case in Python: use "
        "'system_min_nodes' (camelCase is the stack file's spelling)",
    ),
    (
        "camelpool",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [{"pool": l4()["pool"], "nodeLocations": [f"{R}-a"]}]},
        "GkeCluster dev: gpu_pools[0].nodeLocations: unknown argument; arguments are snake_case in Python: use "
        "'node_locations' (camelCase is the stack file's spelling)",
    ),
    (
        "rdma_alone",
        GkeGpuNodePool,
        lambda: {"pool": ultra()["pool"], "cluster": "c", "location": f"{R}-b"},
        "GkeGpuNodePool dev: additional_networks: GPUDirect pool 'ultra' (a3-ultragpu-8g) needs 9 GPU NIC networks; "
        "build it with GkeCluster(gpu_pools=[...]), which plans them",
    ),
    (
        "gpu_networks",
        GkeCluster,
        lambda: {
            "region": R,
            "gpu_pools": [ultra()],
            "gpu_networks": [
                {
                    "key": "vpc1",
                    "mtu": 8244,
                    "subnets": [{"name": "vpc1", "cidr": "192.168.0.0/21", "device_mode": "NetDevice"}],
                }
            ],
        },
        "GkeCluster dev: gpu_networks: the cluster plans the NIC networks of GPUDirect pool 'ultra' (gpu_pools[0]); "
        "give gpu_networks only for pools built outside the cluster",
    ),
    (
        "compact",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [l4(compactPlacement=True)]},
        "GkeCluster dev: gpu_pools[0].node_locations: compact placement needs exactly one zone, got GKE default; set "
        "node_locations: ['us-central1-a'] (a zone offering the GPU) or compact_placement: false",
    ),
    (
        "spotres",
        GkeGpuNodePool,
        lambda: {**np(reservation_affinity="ANY_RESERVATION"), "pool": l4(spot=True)["pool"]},
        "GkeGpuNodePool dev: reservation_affinity: Spot VMs cannot consume reservations; use NO_RESERVATION or "
        "another provisioning",
    ),
    (
        "acc",
        GkeGpuNodePool,
        lambda: np(accelerator_type="nvidia-tesla-t4"),
        "GkeGpuNodePool dev: accelerator_type: 'g2-standard-8' carries its own GPUs (nvidia-l4); leave "
        "accelerator_type out",
    ),
    (
        "desired",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [l4() | {"desired_nodes": 5}]},
        "GkeCluster dev: gpu_pools[0].desired_nodes: must be between the pool's min_nodes (0) and max_nodes (4), got 5",
    ),
    (
        "zonecount",
        GkeGpuNodePool,
        lambda: np(node_locations=[f"{R}-a"], zone_count=2),
        "GkeGpuNodePool dev: zone_count: applies only without node_locations, which give the zones",
    ),
    (
        "gpucidr",
        GkeCluster,
        lambda: {"region": R, "gpu_network_cidr": "192.168.0.0/16"},
        "GkeCluster dev: gpu_network_cidr: no GPUDirect pool or gpu_networks takes GPU NIC subnets from it",
    ),
    (
        "multinet",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [ultra()], "multi_networking": False},
        "GkeCluster dev: multi_networking: GPU NIC networks need GKE multi-networking; remove multi_networking: false",
    ),
    (
        "system",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [pool_args("gcp", {"name": "system", "instanceType": "g2-standard-8"})]},
        "GkeCluster dev: gpu_pools[0].pool.name: 'system' is GkeCluster's own CPU pool; choose another name",
    ),
    (
        "policy",
        GkeGpuNodePool,
        lambda: np(placement_policy_name="pol", compact_placement=False),
        "GkeGpuNodePool dev: compact_placement: placement_policy_name is a compact placement policy; remove one",
    ),
    (
        "dcgm",
        GkeCluster,
        lambda: {"region": R, "managed_dcgm": True, "gpu_pools": [l4() | {"disable_gke_device_plugin": True}]},
        "GkeCluster dev: managed_dcgm: GKE's managed DCGM metrics need GKE's driver and device plugin; gpu_pools[0] "
        "turns them off",
    ),
    (
        "output",
        GkeCluster,
        lambda: {"region": pulumi.Output.from_input(R)},
        "GkeCluster dev: region: must be a plain str, not an Output: the component reads it when it is constructed",
    ),
    (
        "rdmazones",
        GkeCluster,
        lambda: {"region": R, "gpu_pools": [ultra(), ultra(name="ultra2", zones=[f"{R}-c"])]},
        "GkeCluster dev: gpu_pools[1].node_locations: every GPUDirect-RDMA pool shares one RoCE network; use the "
        "zone of gpu_pools[0] (us-central1-b)",
    ),
    (
        "n1acc",
        GkeGpuNodePool,
        lambda: {
            "pool": pool_args("gcp", {"name": "t4", "instanceType": "n1-standard-8", "accelerator": "nvidia-tesla-t4"})[
                "pool"
            ],
            "cluster": "c",
            "location": R,
            "accelerator_type": "nvidia-tesla-v100",
        },
        "GkeGpuNodePool dev: accelerator_type: pool 't4' has t4 GPUs, which attach as 'nvidia-tesla-t4', not "
        "'nvidia-tesla-v100'",
    ),
]


@pytest.mark.parametrize(("case", "component", "args", "error"), MISUSE, ids=[m[0] for m in MISUSE])
def test_misuse_is_refused_with_one_line(case, component, args, error):
    with pytest.raises(ConfigError, match=f"^{re.escape(error)}$"):
        component("dev", args())


def test_a_refused_cluster_registers_nothing():
    def program():
        with pytest.raises(ConfigError):
            GkeCluster("dev", {"region": R, "gpu_pools": [l4(), l4()]})

    assert list(testing.run_program(program)) == []


# ---------------------------------------------------------------------------------------------------------
# Takes effect: each GCP key of a nodePools entry, through pool_args and GkeCluster(gpu_pools=...)

BASE = {"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 4}


def planned_pool(entry: dict, **cluster) -> dict:
    """The NodePool inputs GKE receives for ``entry`` in a GkeCluster named dev."""
    rec = testing.run_program(
        lambda: GkeCluster("dev", {"region": R, **cluster, "gpu_pools": [pool_args("gcp", entry)]})
    )
    return rec.one(NODE_POOL, f"dev-{entry['name']}-pool").inputs


def at(inputs: dict, path: str):
    for key in path.split("."):
        inputs = inputs.get(key) if isinstance(inputs, dict) else inputs[int(key)]
    return inputs


@pytest.fixture(scope="module")
def base_pool():
    return planned_pool(BASE)


TAKES_EFFECT = [
    ({"zones": [f"{R}-a", f"{R}-b"]}, "nodeLocations", [f"{R}-a", f"{R}-b"]),
    ({"desiredNodes": 4}, "initialNodeCount", 2),  # per zone: 4 over GKE's 3 zones of a regional cluster
    ({"spot": True}, "nodeConfig.spot", True),
    ({"spot": True}, "nodeConfig.reservationAffinity", {"consumeReservationType": "NO_RESERVATION"}),
    (
        {"gpuDriverVersion": "LATEST"},
        "nodeConfig.guestAccelerators.0.gpuDriverInstallationConfig",
        {"gpuDriverVersion": "LATEST"},
    ),
    ({"imageType": "UBUNTU_CONTAINERD"}, "nodeConfig.imageType", "UBUNTU_CONTAINERD"),
    (
        {"reservationAffinity": "ANY_RESERVATION"},
        "nodeConfig.reservationAffinity",
        {"consumeReservationType": "ANY_RESERVATION"},
    ),
    (
        {"provisioning": "reservation", "reservation": "l4-res"},
        "nodeConfig.reservationAffinity",
        {
            "consumeReservationType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": ["l4-res"],
        },
    ),
    ({"compactPlacement": True, "zones": [f"{R}-a"]}, "placementPolicy", {"type": "COMPACT"}),
    (
        {"placementPolicyName": "l4-compact", "zones": [f"{R}-a"]},
        "placementPolicy",
        {"type": "COMPACT", "policyName": "l4-compact"},
    ),
    ({"diskSizeGb": 500}, "nodeConfig.diskSizeGb", 500),
    ({"diskType": "pd-ssd"}, "nodeConfig.diskType", "pd-ssd"),
    (
        {"serviceAccount": "l4@gpu-dev-1.iam.gserviceaccount.com"},
        "nodeConfig.serviceAccount",
        "l4@gpu-dev-1.iam.gserviceaccount.com",
    ),
    (
        {"instanceType": "n1-standard-8", "accelerator": "nvidia-tesla-v100", "gpuCount": 2},
        "nodeConfig.guestAccelerators.0",
        {"type": "nvidia-tesla-v100", "count": 2, "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"}},
    ),
]


@pytest.mark.parametrize(("change", "path", "expected"), TAKES_EFFECT, ids=[",".join(c) for c, _, _ in TAKES_EFFECT])
def test_gcp_pool_key_takes_effect(base_pool, change, path, expected):
    assert at(base_pool, path) != expected
    assert at(planned_pool({**BASE, **change}), path) == expected


def test_cluster_defaults_of_a_pool_entry(base_pool):
    # Regional cluster: GKE's three zones; the cluster's own node service account.
    assert (base_pool.get("nodeLocations"), base_pool["initialNodeCount"]) == (None, 0)
    assert base_pool["nodeConfig"]["serviceAccount"] == "dev-nodes@mock.iam.gserviceaccount.com"
    assert base_pool["project"] == "mock-project"


def test_zonal_cluster_places_pools_in_its_zone():
    assert planned_pool(BASE, zone=f"{R}-c")["nodeLocations"] == [f"{R}-c"]


def test_standalone_pool_takes_every_node_pool_argument():
    def program():
        GkeGpuNodePool(
            "solo",
            {
                **np(),
                "pool": l4(spot=True)["pool"],
                "node_locations": [f"{R}-a"],
                "desired_nodes": 2,
                "disable_gke_device_plugin": True,
                "gpu_driver_version": "INSTALLATION_DISABLED",
                "project": "gpu-dev-1",
            },
        )

    pool = testing.run_program(program).one(NODE_POOL, "solo-pool").inputs
    assert (pool["project"], pool["cluster"], pool["location"]) == ("gpu-dev-1", "c", R)
    assert (pool["nodeLocations"], pool["initialNodeCount"]) == ([f"{R}-a"], 2)
    assert pool["nodeConfig"]["imageType"] == "UBUNTU_CONTAINERD"  # the GPU Operator's driver needs Ubuntu
    assert pool["nodeConfig"]["labels"]["gke-no-default-nvidia-gpu-device-plugin"] == "true"
    assert pool["nodeConfig"]["guestAccelerators"] == [
        {"type": "nvidia-l4", "count": 1, "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"}}
    ]


# ---------------------------------------------------------------------------------------------------------
# GPUDirect through public components only


@pytest.fixture(scope="module")
def composed_ultra():
    captured = {}

    def program():
        captured["cluster"] = GkeCluster("dev", {"region": R, "project": "gpu-dev-1", "gpu_pools": [l4(), ultra()]})

    return testing.run_program(program), captured["cluster"]


def test_cluster_plans_gpudirect_networks_for_its_rdma_pools(composed_ultra):
    rec, cluster = composed_ultra
    pool = rec.one(NODE_POOL, "dev-ultra-pool").inputs
    assert pool["networkConfig"]["additionalNodeNetworkConfigs"] == [
        {"network": "dev-gvnic-1-net", "subnetwork": "dev-gvnic-1-sub"},
        *({"network": "dev-rdma-net", "subnetwork": f"dev-rdma-{i}-sub"} for i in range(8)),
    ]
    assert (pool["nodeLocations"], pool["placementPolicy"]) == ([f"{R}-b"], {"type": "COMPACT"})
    assert (
        rec.one(NETWORK, "dev-rdma-net").inputs["networkProfile"]
        == "projects/gpu-dev-1/global/networkProfiles/us-central1-b-vpc-roce"
    )
    assert rec.one("gcp:container/cluster:Cluster").inputs["enableMultiNetworking"] is True
    assert len(rec.of_type(PARAM_SET)) == 9
    assert "networkConfig" not in rec.one(NODE_POOL, "dev-l4-pool").inputs


def test_cluster_exposes_its_pools_and_the_pods_annotations(composed_ultra):
    rec, cluster = composed_ultra
    assert set(cluster.node_pools) == {"l4", "ultra"}
    assert [p.name for p in cluster.gpu_pools] == ["l4", "ultra"]
    ultra_pool = cluster.node_pools["ultra"].pool
    interfaces = json.loads(dict(ultra_pool.rdma_pod_annotations)["networking.gke.io/interfaces"])
    assert [i["network"] for i in interfaces] == ["default", "gvnic-1", *(f"rdma-{i}" for i in range(8))]
    assert cluster.node_pools["l4"].pool.rdma_pod_annotations == ()
    component = rec.one("gpuplatform:index:GkeGpuNodePool", "dev-ultra")
    assert component.parent == rec.one("gpuplatform:index:GkeCluster", "dev").urn


def test_stack_and_composed_pools_get_the_same_node_pool_inputs():
    from gpu_platform.clouds.gcp import cluster_from_config
    from gpu_platform.config import parse_config

    entry = {
        "name": "mega",
        "instanceType": "a3-megagpu-8g",
        "rdma": True,
        "maxNodes": 2,
        "zones": [f"{R}-c"],
        "provisioning": "reservation",
        "reservation": "mega-res",
        "diskSizeGb": 400,
    }
    config = parse_config({"cloud": "gcp", "region": R, "nodePools": [entry], "gpuSoftware": "cloud-managed"}, "dev")
    stack = testing.run_program(lambda: cluster_from_config("dev", config, pulumi.ResourceOptions()))
    composed = testing.run_program(
        lambda: GkeCluster("dev", {"region": R, "kubernetes_version": DEFAULT_KUBERNETES_VERSION,
                                   "gpu_pools": [pool_args("gcp", entry)]})
    )
    assert stack.one(NODE_POOL, "dev-mega-pool").inputs == composed.one(NODE_POOL, "dev-mega-pool").inputs


def test_node_pools_follow_the_control_plane_version():
    """A GkeCluster's pools (GPU and system) take its control plane's ``master_version`` (the mocks answer the minor
    asked for), so a new ``kubernetes_version`` rolls them after the control plane; a standalone pool takes
    ``node_version`` as given, and leaves the version to GKE without it."""
    rec = testing.run_program(lambda: GkeCluster("dev", {"region": R, "kubernetes_version": "1.35",
                                                          "gpu_pools": [l4()]}))
    assert sorted((r.name, r.inputs["version"]) for r in rec.of_type(NODE_POOL)) == [
        ("dev-l4-pool", "1.35"), ("dev-system", "1.35")]
    pinned = testing.run_program(lambda: GkeGpuNodePool("solo", np(node_version="1.36.2-gke.1100")))
    assert pinned.one(NODE_POOL, "solo-pool").inputs["version"] == "1.36.2-gke.1100"
    assert "version" not in testing.run_program(lambda: GkeGpuNodePool("solo", np())).one(NODE_POOL).inputs
