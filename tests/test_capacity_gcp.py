"""How GKE pools buy their VMs (``nodePools[].provisioning``): the exact node pool inputs of on-demand, Spot,
reservation, flex-start and queued pools, the taint a queued pool's workloads tolerate, and each rule GKE imposes
refused with its exact message, in a stack file and at the components' boundary."""

import pulumi
import pytest

from gpu_platform import pool_args, testing
from gpu_platform.clouds import gcp
from gpu_platform.clouds.gcp import GkeCluster, GkeGpuNodePool
from gpu_platform.clouds.gcp import pools as gcp_pools
from gpu_platform.config import ConfigError, parse_config
from gpu_platform.labels import Taint
from gpu_platform.pools import GpuPool

R = "us-central1"
NODE_POOL = "gcp:container/nodePool:NodePool"
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
QUEUED_TAINT = Taint("cloud.google.com/gke-queued", "true", "NoSchedule")


def l4(**keys):
    return {"name": "l4", "instanceType": "g2-standard-8", "maxNodes": 4, **keys}


def h100(**keys):
    return {"name": "h100", "instanceType": "a3-highgpu-8g", "maxNodes": 4, "role": "training", **keys}


def stack(*pools):
    return {"cloud": "gcp", "region": R, "project": "gpu-dev-1", "nodePools": list(pools)}


def build(*pools):
    config = parse_config(stack(*pools), "dev")
    captured = {}

    def program():
        captured["handle"] = gcp.cluster_from_config("dev", config, pulumi.ResourceOptions())

    recording = testing.run_program(program, stack="dev")
    return recording, captured["handle"]


@pytest.fixture(scope="module")
def modes():
    return build(
        l4(name="od", reservationAffinity="ANY_RESERVATION"),
        l4(name="spot", provisioning="spot", minNodes=0),
        h100(name="reserved", provisioning="reservation", reservation="h100-res/reservationBlocks/block-1",
             zones=[f"{R}-a"]),
        h100(name="flex", provisioning="flex-start", minNodes=0),
        h100(name="queued", provisioning="queued", minNodes=0),
    )


def inputs(recording, name):
    return recording.one(NODE_POOL, f"dev-{name}-pool").inputs


# ---------------------------------------------------------------------------------------------------------
# Node pool inputs per mode


def test_on_demand_pool_keeps_its_reservation_affinity_and_gke_defaults(modes):
    pool = inputs(modes[0], "od")
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "ANY_RESERVATION"}
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4}
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert "queuedProvisioning" not in pool
    assert not {"spot", "flexStart"} & set(pool["nodeConfig"])


def test_spot_pool_takes_no_reservation_and_scales_in_any_zone(modes):
    pool = inputs(modes[0], "spot")
    assert pool["nodeConfig"]["spot"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"}
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert pool["nodeConfig"]["taints"] == GPU_TAINT  # GKE Standard adds no Spot taint


def test_reservation_pool_consumes_its_named_reservation(modes):
    pool = inputs(modes[0], "reserved")
    assert pool["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": ["h100-res/reservationBlocks/block-1"]}
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4}
    assert not {"spot", "flexStart"} & set(pool["nodeConfig"])


def test_flex_start_pool(modes):
    pool = inputs(modes[0], "flex")
    assert pool["nodeConfig"]["flexStart"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"}
    assert pool["management"] == {"autoRepair": False, "autoUpgrade": True}
    assert "queuedProvisioning" not in pool
    assert "spot" not in pool["nodeConfig"]


def test_queued_pool(modes):
    pool = inputs(modes[0], "queued")
    assert pool["queuedProvisioning"] == {"enabled": True}
    assert pool["nodeConfig"]["flexStart"] is True  # GKE: --flex-start with --enable-queued-provisioning
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert pool["autoscaling"] == {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"}
    assert pool["management"] == {"autoRepair": False, "autoUpgrade": False}
    assert pool["initialNodeCount"] == 0
    assert "placementPolicy" not in pool
    assert pool["nodeConfig"]["labels"]["cloud.google.com/gke-queued"] == "true"
    # GKE puts the queued taint on the nodes itself; the pool declares only its own.
    assert pool["nodeConfig"]["taints"] == GPU_TAINT


def test_queued_pool_workloads_tolerate_gkes_queued_taint(modes):
    pools = {p.name: p for p in modes[1].pools}
    assert QUEUED_TAINT in pools["queued"].taints
    assert {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true",
            "effect": "NoSchedule"} in pools["queued"].tolerations
    assert all(QUEUED_TAINT not in pools[n].taints for n in ("od", "spot", "reserved", "flex"))
    queued = pools["queued"]
    assert gcp_pools.with_cloud_taints(queued) == queued  # already there: not added twice


def test_stack_and_composed_pools_get_the_same_inputs():
    for entry in (h100(provisioning="queued", minNodes=0), h100(provisioning="flex-start", minNodes=0),
                  h100(provisioning="reservation", reservation="r1", zones=[f"{R}-a"])):
        recording, _ = build(entry)
        composed = testing.run_program(lambda e=entry: GkeCluster("dev", {
            "region": R, "project": "gpu-dev-1", "kubernetes_version": "1.36",
            "gpu_pools": [pool_args("gcp", e)]}))
        assert inputs(recording, "h100") == composed.one(NODE_POOL, "dev-h100-pool").inputs


def planned(entry):
    rec = testing.run_program(lambda: GkeCluster("dev", {"region": R, "gpu_pools": [pool_args("gcp", entry)]}))
    return rec.one(NODE_POOL, f"dev-{entry['name']}-pool").inputs


TAKES_EFFECT = [
    ({"provisioning": "spot", "minNodes": 0}, lambda p: p["nodeConfig"].get("spot"), True),
    ({"provisioning": "reservation", "reservation": "r1"},
     lambda p: p["nodeConfig"].get("reservationAffinity", {}).get("values"), ["r1"]),
    ({"provisioning": "flex-start", "minNodes": 0}, lambda p: p["nodeConfig"].get("flexStart"), True),
    ({"provisioning": "queued", "minNodes": 0}, lambda p: p.get("queuedProvisioning"), {"enabled": True}),
    ({"reservationAffinity": "NO_RESERVATION"}, lambda p: p["nodeConfig"].get("reservationAffinity"),
     {"consumeReservationType": "NO_RESERVATION"}),
]


@pytest.mark.parametrize(("change", "read", "expected"), TAKES_EFFECT, ids=[",".join(c) for c, _, _ in TAKES_EFFECT])
def test_provisioning_keys_take_effect(change, read, expected):
    assert read(planned(l4())) != expected
    assert read(planned(l4(**change))) == expected


def test_flex_start_may_be_compact_on_a3_ultra():
    pool = planned({"name": "ultra", "instanceType": "a3-ultragpu-8g", "rdma": True, "maxNodes": 2,
                    "provisioning": "flex-start", "minNodes": 0, "zones": [f"{R}-b"]})
    assert (pool["nodeConfig"]["flexStart"], pool["placementPolicy"]) == (True, {"type": "COMPACT"})


# ---------------------------------------------------------------------------------------------------------
# Guards: stack file


STACK_ERRORS = [
    ("queued with a minimum", stack(h100(provisioning="queued", minNodes=1)),
     "dev: nodePools[0].minNodes: GKE adds queued-provisioning nodes only for a ProvisioningRequest and removes them "
     "after, so the pool's total minimum is 0: set minNodes: 0, got 1"),
    ("queued with initial nodes", stack(h100(provisioning="queued", minNodes=0, desiredNodes=2)),
     "dev: nodePools[0].desiredNodes: GKE adds queued-provisioning nodes only for a ProvisioningRequest; remove "
     "desiredNodes (2)"),
    ("queued and compact", stack(h100(provisioning="queued", minNodes=0, compactPlacement=True, zones=[f"{R}-a"])),
     "dev: nodePools[0].compactPlacement: GKE does not place queued-provisioning nodes COMPACT (except TPUs); set "
     "compactPlacement: false or use another provisioning"),
    ("queued RDMA pool, compact by default",
     stack({"name": "ultra", "instanceType": "a3-ultragpu-8g", "rdma": True, "maxNodes": 2, "minNodes": 0,
            "provisioning": "queued", "zones": [f"{R}-b"]}),
     "dev: nodePools[0].compactPlacement: GKE does not place queued-provisioning nodes COMPACT (except TPUs); set "
     "compactPlacement: false or use another provisioning"),
    ("queued with a reservation affinity",
     stack(h100(provisioning="queued", minNodes=0, reservationAffinity="ANY_RESERVATION")),
     "dev: nodePools[0].reservationAffinity: queued VMs come from Dynamic Workload Scheduler, not from reservations "
     "(GKE requires NO_RESERVATION); remove reservationAffinity"),
    ("queued with a reservation", stack(h100(provisioning="queued", minNodes=0, reservation="r1")),
     "dev: nodePools[0].reservation: only applies with provisioning: reservation (provisioning is queued)"),
    ("queued and spot", stack(h100(provisioning="queued", minNodes=0, spot=True)),
     "dev: nodePools[0].spot: spot: true is provisioning: spot, and provisioning is queued; give one of them"),
    ("flex-start at a fixed size", stack(h100(provisioning="flex-start", minNodes=4)),
     "dev: nodePools[0].maxNodes: flex-start VMs come when capacity is found and live at most 7 days, so the pool "
     "autoscales: set minNodes below maxNodes, got 4-4"),
    ("flex-start compact on A3 High",
     stack(h100(provisioning="flex-start", minNodes=0, compactPlacement=True, zones=[f"{R}-a"])),
     "dev: nodePools[0].compactPlacement: GKE places flex-start VMs COMPACT only on A3 Ultra, A4 and H4D, not "
     "a3-highgpu-8g; set compactPlacement: false or use another provisioning"),
    ("flex-start with a reservation affinity",
     stack(h100(provisioning="flex-start", minNodes=0, reservationAffinity="ANY_RESERVATION_THEN_FAIL")),
     "dev: nodePools[0].reservationAffinity: flex-start VMs come from Dynamic Workload Scheduler, not from "
     "reservations (GKE requires NO_RESERVATION); remove reservationAffinity"),
    ("flex-start with a reservation", stack(h100(provisioning="flex-start", minNodes=0, reservation="r1")),
     "dev: nodePools[0].reservation: only applies with provisioning: reservation (provisioning is flex-start)"),
    ("flex-start and spot", stack(h100(provisioning="flex-start", minNodes=0, spot=True)),
     "dev: nodePools[0].spot: spot: true is provisioning: spot, and provisioning is flex-start; give one of them"),
    ("reservation without its name", stack(h100(provisioning="reservation")),
     "dev: nodePools[0].reservation: is required with provisioning: reservation (the reservation's id or name)"),
    ("reservation with an affinity",
     stack(h100(provisioning="reservation", reservation="r1", reservationAffinity="NO_RESERVATION")),
     "dev: nodePools[0].reservationAffinity: provisioning: reservation consumes the named reservation "
     "(SPECIFIC_RESERVATION); remove reservationAffinity"),
    ("a specific reservation as an affinity", stack(h100(reservationAffinity="SPECIFIC_RESERVATION")),
     "dev: nodePools[0].reservationAffinity: a specific reservation is provisioning: reservation with reservation: "
     "<name>; remove reservationAffinity"),
    ("the old reservations list", stack(h100(reservations=["r1"])),
     "dev: nodePools[0].reservations: replaced by provisioning: reservation with reservation: <name> (or "
     "<name>/reservationBlocks/<block>)"),
]


@pytest.mark.parametrize(("case", "raw", "error"), STACK_ERRORS, ids=[e[0] for e in STACK_ERRORS])
def test_stack_guards(case, raw, error):
    with pytest.raises(ConfigError) as info:
        parse_config(raw, "dev")
    assert str(info.value) == error


# ---------------------------------------------------------------------------------------------------------
# Guards: components


def spec(**changes):
    return {**pool_args("gcp", h100())["pool"], **changes}


def solo(**args):
    return {"pool": spec(), "cluster": "c", "location": f"{R}-a", **args}


COMPONENT_ERRORS = [
    ("queued with a minimum", GkeGpuNodePool, lambda: solo(pool=spec(provisioning="queued", min_nodes=1)),
     "GkeGpuNodePool dev: pool.min_nodes: GKE adds queued-provisioning nodes only for a ProvisioningRequest and "
     "removes them after, so the pool's total minimum is 0: set pool.min_nodes: 0, got 1"),
    ("queued with initial nodes", GkeGpuNodePool,
     lambda: solo(pool=spec(provisioning="queued", min_nodes=0), desired_nodes=1),
     "GkeGpuNodePool dev: desired_nodes: GKE adds queued-provisioning nodes only for a ProvisioningRequest; remove "
     "desired_nodes (1)"),
    ("queued and compact", GkeGpuNodePool,
     lambda: solo(pool=spec(provisioning="queued", min_nodes=0), compact_placement=True),
     "GkeGpuNodePool dev: compact_placement: GKE does not place queued-provisioning nodes COMPACT (except TPUs); set "
     "compact_placement: false or use another provisioning"),
    ("queued with a reservation affinity", GkeGpuNodePool,
     lambda: solo(pool=spec(provisioning="queued", min_nodes=0), reservation_affinity="ANY_RESERVATION"),
     "GkeGpuNodePool dev: reservation_affinity: queued VMs come from Dynamic Workload Scheduler, not from "
     "reservations (GKE requires NO_RESERVATION); remove reservation_affinity"),
    ("queued and spot", GkeGpuNodePool, lambda: solo(pool=spec(provisioning="queued", min_nodes=0, spot=True)),
     "GkeGpuNodePool dev: pool.spot: spot: true is provisioning: spot, and provisioning is queued; give one of them"),
    ("flex-start at a fixed size", GkeGpuNodePool,
     lambda: solo(pool=spec(provisioning="flex-start", min_nodes=4)),
     "GkeGpuNodePool dev: pool.max_nodes: flex-start VMs come when capacity is found and live at most 7 days, so the "
     "pool autoscales: set pool.min_nodes below pool.max_nodes, got 4-4"),
    ("reservation without its name", GkeGpuNodePool, lambda: solo(pool=spec(provisioning="reservation")),
     "GkeGpuNodePool dev: pool.reservation: is required with provisioning: reservation (the reservation's id or name)"),
    ("the old reservations list", GkeCluster,
     lambda: {"region": R, "gpu_pools": [{**pool_args("gcp", h100()), "reservations": ["r1"]}]},
     "GkeCluster dev: gpu_pools[0].reservations: replaced by pool.provisioning 'reservation' with pool.reservation "
     "'<name>' (or '<name>/reservationBlocks/<block>')"),
]


@pytest.mark.parametrize(("case", "component", "make", "error"), COMPONENT_ERRORS,
                         ids=[e[0] for e in COMPONENT_ERRORS])
def test_component_guards(case, component, make, error):
    with pytest.raises(ConfigError) as info:
        testing.run_program(lambda: component("dev", make()))
    assert str(info.value) == error


def test_pure_consumption_and_management():
    pool = GpuPool.from_spec(spec(provisioning="queued", min_nodes=0))
    assert gcp_pools.consumed_reservation(pool, None) == ("NO_RESERVATION", ())
    assert gcp_pools.management(pool) == {"auto_repair": False, "auto_upgrade": False}
    assert gcp_pools.queued_provisioning(pool) == {"enabled": True}
    assert gcp_pools.dws_node_config(pool) == {"flex_start": True}
    on_demand = GpuPool.from_spec(spec())
    assert gcp_pools.consumed_reservation(on_demand, None) == (None, ())
    assert (gcp_pools.queued_provisioning(on_demand), gcp_pools.dws_node_config(on_demand)) == (None, {})
