"""GKE configuration: every invalid combination fails with one line naming its field; defaults are derived."""

import pytest

from gpu_platform.clouds.gcp import options as gcp_options
from gpu_platform.config import ConfigError, parse_config

REGION = "us-central1"


def gcp(*pools, **top):
    return {"cloud": "gcp", "region": REGION, "nodePools": list(pools), **top}


def l4(**fields):
    return {"name": "infer", "instanceType": "g2-standard-8", "maxNodes": 2, **fields}


def a3(machine="a3-megagpu-8g", **fields):
    return {"name": "train", "instanceType": machine, "maxNodes": 2, "rdma": True, "zones": [f"{REGION}-c"], **fields}


def error_of(raw) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(raw, "dev")
    return str(info.value)


ERRORS = [
    ("time-sharing with one replica", gcp(l4(sharing={"mode": "time-slicing", "replicas": 1})),
     "dev: nodePools[0].sharing.replicas: time-slicing needs at least 2 replicas per GPU, got 1"),
    ("mps with one replica", gcp(l4(sharing={"mode": "mps", "replicas": 1})),
     "dev: nodePools[0].sharing.replicas: mps needs at least 2 replicas per GPU, got 1"),
    ("MIG on L4", gcp(l4(sharing={"mode": "mig", "profile": "1g.10gb"})),
     "dev: nodePools[0].sharing.mode: mig needs a MIG-capable GPU; NVIDIA L4 on 'g2-standard-8' has no MIG"),
    ("MIG profile of another GPU", gcp(l4(instanceType="a2-highgpu-1g", sharing={"mode": "mig", "profile": "1g.10gb"})),
     "dev: nodePools[0].sharing.profile: NVIDIA A100 40GB MIG profile '1g.10gb' is not one of 1g.5gb, 2g.10gb, "
     "3g.20gb, 4g.20gb, 7g.40gb; did you mean '2g.10gb'?"),
    ("GPUDirect on a shape without it", gcp(l4(rdma=True)),
     "dev: nodePools[0].rdma: 'g2-standard-8' has no RDMA fabric; RDMA-capable GCP shapes: a3-highgpu-8g, "
     "a3-megagpu-8g, a3-ultragpu-8g"),
    ("N1 without accelerator", gcp(l4(instanceType="n1-standard-8")),
     "dev: nodePools[0].accelerator: is required"),
    ("N1 with too many T4s", gcp(l4(instanceType="n1-standard-8", accelerator="nvidia-tesla-t4", gpuCount=3)),
     "dev: nodePools[0].gpuCount: nvidia-tesla-t4 attaches (1, 2, 4) GPUs per VM, not 3"),
    ("accelerator on an A3", gcp(a3(accelerator="nvidia-h100-80gb")),
     "dev: nodePools[0].accelerator: 'a3-megagpu-8g' carries its own GPUs; accelerator is only for GCP N1 "
     "machine types"),
    ("GPUDirect pool on a regional cluster without a zone", gcp(a3(zones=[])),
     "dev: nodePools[0].zones: compact placement needs exactly one zone, got GKE default; set zones: "
     "[us-central1-a] (a zone offering the GPU) or compactPlacement: false"),
    ("compact placement over two zones", gcp(l4(compactPlacement=True, zones=[f"{REGION}-a", f"{REGION}-b"])),
     "dev: nodePools[0].zones: compact placement needs exactly one zone, got 2; set zones: [us-central1-a] "
     "(a zone offering the GPU) or compactPlacement: false"),
    ("A3 Ultra without placement still needs one zone", gcp(a3("a3-ultragpu-8g", zones=[], compactPlacement=False)),
     "dev: nodePools[0].zones: GPUDirect-RDMA uses a zonal RoCE network; set exactly one zone"),
    ("A3 Ultra pools in two zones",
     gcp(a3("a3-ultragpu-8g"), a3("a3-ultragpu-8g", name="train2", zones=[f"{REGION}-b"])),
     "dev: nodePools[1].zones: every GPUDirect-RDMA pool shares one RoCE network; use the zone of nodePools[0] "
     "(us-central1-c)"),
    ("zone of another region", gcp(l4(zones=["europe-west4-a"])),
     "dev: nodePools[0].zones[0]: zone 'europe-west4-a' is not in region 'us-central1'"),
    ("not a zone", gcp(l4(zones=["central"])),
     "dev: nodePools[0].zones[0]: 'central' is not a zone name such as us-central1-a"),
    ("cluster zone of another region", gcp(l4(), zone="us-east1-b"),
     "dev: zone: zone 'us-east1-b' is not in region 'us-central1'"),
    ("GPUDirect with the GPU Operator's driver", gcp(a3(), gpuSoftware="operator"),
     "dev: nodePools[0].rdma: GPUDirect on GKE needs GKE's driver (its NCCL plugin installers use "
     "/home/kubernetes/bin/nvidia); use gpuSoftware 'cloud-managed'"),
    ("COS with the GPU Operator's driver", gcp(l4(imageType="COS_CONTAINERD"), gpuSoftware="operator"),
     "dev: nodePools[0].imageType: the GPU Operator's driver needs UBUNTU_CONTAINERD nodes; use gpuSoftware "
     "'cloud-managed' for COS"),
    ("driver version with the GPU Operator", gcp(l4(gpuDriverVersion="LATEST"), gpuSoftware="operator"),
     "dev: nodePools[0].gpuDriverVersion: the GPU Operator installs the driver (gpuSoftware 'operator'); remove it"),
    ("unknown driver version", gcp(l4(gpuDriverVersion="latest")),
     "dev: nodePools[0].gpuDriverVersion: 'latest' is not one of DEFAULT, LATEST"),
    ("managed DCGM without GKE's device plugin", gcp(l4(), gpuSoftware="operator", managedDcgm=True),
     "dev: managedDcgm: GKE's managed DCGM metrics need GKE's driver and device plugin (gpuSoftware "
     "'cloud-managed'), not 'operator'"),
    ("network without subnetwork", gcp(l4(), network="shared-vpc"),
     "dev: subnetwork: an existing VPC needs both network and subnetwork"),
    ("node CIDR with a given subnetwork", gcp(l4(), network="vpc", subnetwork="nodes", nodeCidr="10.1.0.0/20"),
     "dev: nodeCidr: applies only to a new VPC; the given subnetwork has its own ranges"),
    # "IPv4 CIDR block ... (<why>)", as on every cloud since one rule checks them all (gpu_platform.cidrs); GKE said
    # "IPv4 CIDR range" without the reason.
    ("bad CIDR", gcp(l4(), podCidr="10.4.0.0/33"),
     "dev: podCidr: '10.4.0.0/33' is not an IPv4 CIDR block such as 10.4.0.0/14 ('33' is not a valid netmask)"),
    ("IPv6 CIDR", gcp(l4(), nodeCidr="fd00::/64"),
     "dev: nodeCidr: 'fd00::/64' is not an IPv4 CIDR block such as 10.0.0.0/20 (Expected 4 octets in 'fd00::')"),
    ("GPU NIC range too small", gcp(l4(), gpuNetworkCidr="192.168.0.0/24"),
     "dev: gpuNetworkCidr: '192.168.0.0/24' is too small: GPU NIC subnets need a /19 or larger"),
    ("release channel", gcp(l4(), releaseChannel="regular"),
     "dev: releaseChannel: 'regular' is not one of RAPID, REGULAR, STABLE, EXTENDED"),
    ("project id", gcp(l4(), project="My_Project"),
     "dev: project: 'My_Project' is not a project ID (6-30 lower-case letters, digits, '-')"),
    ("specific reservation as an affinity", gcp(l4(reservationAffinity="SPECIFIC_RESERVATION")),
     "dev: nodePools[0].reservationAffinity: a specific reservation is provisioning: reservation with reservation: "
     "<name>; remove reservationAffinity"),
    ("named reservation with another affinity",
     gcp(l4(provisioning="reservation", reservation="r1", reservationAffinity="ANY_RESERVATION")),
     "dev: nodePools[0].reservationAffinity: provisioning: reservation consumes the named reservation "
     "(SPECIFIC_RESERVATION); remove reservationAffinity"),
    ("Spot consuming a reservation", gcp(l4(spot=True, reservationAffinity="ANY_RESERVATION")),
     "dev: nodePools[0].reservationAffinity: Spot VMs cannot consume reservations; use NO_RESERVATION or another "
     "provisioning"),
    ("the old reservations list", gcp(l4(reservations=["r1"])),
     "dev: nodePools[0].reservations: replaced by provisioning: reservation with reservation: <name> (or "
     "<name>/reservationBlocks/<block>)"),
    ("pool named like the system pool", gcp(l4(name="system")),
     "dev: nodePools[0].name: 'system' is the GKE layer's own CPU pool; choose another name"),
    ("pool name too long for GKE", gcp(l4(name="inference-" + "l" * 31)),
     "dev: nodePools[0].name: GKE node pool names have at most 40 characters, 'inference-" + "l" * 31 + "' has 41"),
    ("unknown pool key", gcp(l4(diskSize=100)),
     "dev: nodePools[0].diskSize: unknown key; did you mean 'diskSizeGb'?"),
    ("unknown system pool key", gcp(l4(), systemPool={"machine": "e2-standard-4"}),
     "dev: systemPool.machine: unknown key; did you mean 'machineType'?"),
    ("node service account not an email", gcp(l4(), nodeServiceAccount="nodes"),
     "dev: nodeServiceAccount: 'nodes' is not a service account email"),
]


@pytest.mark.parametrize(("case", "raw", "message"), ERRORS, ids=[c[0] for c in ERRORS])
def test_invalid_gcp_configuration_fails_on_one_line(case, raw, message):
    assert error_of(raw) == message


def test_defaults_of_a_minimal_gcp_stack():
    config = parse_config(gcp(l4()), "dev")
    options = config.cluster_options
    assert config.gpu_software == "cloud-managed"
    assert (options.regional, options.release_channel, options.private_nodes) == (True, "REGULAR", True)
    assert (options.node_cidr, options.pod_cidr, options.service_cidr) == ("10.0.0.0/20", "10.4.0.0/14", "10.8.0.0/20")
    assert options.managed_dcgm is True
    pool = config.node_pools[0]
    assert gcp_options.driver_version(pool.cloud_options, config.gpu_software) == "DEFAULT"
    assert gcp_options.image_type(pool.cloud_options, config.gpu_software) == "COS_CONTAINERD"
    assert gcp_options.pool_zones(pool, options) == ()
    assert gcp_options.zone_count(pool, options) == 3
    assert gcp_options.compact_placement(pool) is False


def test_operator_mode_turns_gke_driver_and_device_plugin_off():
    config = parse_config(gcp(l4(), gpuSoftware="operator"), "dev")
    options = config.node_pools[0].cloud_options
    assert gcp_options.driver_version(options, "operator") == "INSTALLATION_DISABLED"
    assert gcp_options.image_type(options, "operator") == "UBUNTU_CONTAINERD"
    assert gcp_options.disables_gke_device_plugin("operator") is True
    assert gcp_options.managed_sharing("operator") is False
    assert gcp_options.managed_partitioning("operator") is False
    assert config.cluster_options.managed_dcgm is False


def test_zonal_cluster_places_pools_in_its_zone_and_rdma_pools_compactly():
    config = parse_config(gcp(l4(), a3(zones=[]), zone=f"{REGION}-c"), "dev")
    infer, train = config.node_pools
    assert gcp_options.pool_zones(infer, config.cluster_options) == (f"{REGION}-c",)
    assert gcp_options.zone_count(infer, config.cluster_options) == 1
    assert (gcp_options.compact_placement(infer), gcp_options.compact_placement(train)) == (False, True)


def test_reservations_and_spot_set_the_affinity():
    from gpu_platform.clouds.gcp import pools as gcp_pools

    config = parse_config(gcp(l4(provisioning="reservation", reservation="h100-block"), l4(name="spot", spot=True),
                              l4(name="od", reservationAffinity="ANY_RESERVATION")), "dev")
    reserved, spot, on_demand = config.gpu_pools()
    assert gcp_pools.consumed_reservation(reserved, None) == ("SPECIFIC_RESERVATION", ("h100-block",))
    assert gcp_pools.consumed_reservation(spot, None) == ("NO_RESERVATION", ())
    assert config.node_pools[2].cloud_options.reservation_affinity == "ANY_RESERVATION"
    assert gcp_pools.consumed_reservation(on_demand, "ANY_RESERVATION") == ("ANY_RESERVATION", ())


def test_placement_policy_name_implies_compact_placement():
    config = parse_config(gcp(l4(placementPolicyName="dense-a", zones=[f"{REGION}-a"])), "dev")
    assert gcp_options.compact_placement(config.node_pools[0]) is True
