"""Issue 22, scheduler side: Topology levels from the labels each cloud's nodes carry, flavor order for fallback
pools, spot tolerations, GKE queued provisioning (AdmissionCheck + ProvisioningRequestConfig), and the training
job's topology request."""

import re

import pytest

from gpu_platform import schemas
from gpu_platform.config import parse_config
from gpu_platform.config_model import TeamConfig
from gpu_platform.errors import ConfigError
from gpu_platform.pools import GpuPool
from gpu_platform.scheduling import kueue_objects as ko
from gpu_platform.scheduling import policy as scheduling
from gpu_platform.schemas import validate_manifest
from gpu_platform.training import training_objects

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
AWS3 = [f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3)]


def pool(name="train", cloud="aws", instance_type="p5.48xlarge", fabric="efa", nodes=(4, 4), mode="on-demand",
         fallback="", extra=(), gpu="h100"):
    return GpuPool(name, cloud, instance_type, gpu, 8, 80, nodes[0], nodes[1], rdma_fabric=fabric or None,
                   rdma_interfaces=8 if fabric else 0, spot=mode == "spot", provisioning=mode,
                   reservation="r-1" if mode == "reservation" else "", fallback_pool=fallback, extra_taints=extra)


def levels(p):
    return [level["nodeLabel"] for level in ko.topology(p)["spec"]["levels"]]


# --- Topology per cloud and shape ---------------------------------------------------------------------------


@pytest.mark.parametrize("cloud, instance_type, name, expected", [
    ("aws", "p5.48xlarge", "gpu-network-aws-3", [ZONE, *AWS3, HOST]),
    ("aws", "g6e.48xlarge", "gpu-network-aws-3", [ZONE, *AWS3, HOST]),
    ("aws", "p6-b200.48xlarge", "gpu-network-aws-4", [ZONE, *AWS3, "topology.k8s.aws/network-node-layer-4", HOST]),
    ("aws", "p5.4xlarge", "gpu-network", [ZONE, HOST]),  # not on EC2's topology list
    ("gcp", "a3-megagpu-8g", "gpu-network-gcp", [ZONE, "cloud.google.com/gce-topology-block",
                                                 "cloud.google.com/gce-topology-subblock",
                                                 "cloud.google.com/gce-topology-host", HOST]),
    ("gcp", "a3-highgpu-4g", "gpu-network", [ZONE, HOST]),
    ("oci", "BM.GPU.H100.8", "gpu-network-oci", [ZONE, "oci.oraclecloud.com/rdma.hpc_island_id",
                                                 "oci.oraclecloud.com/rdma.network_block_id",
                                                 "oci.oraclecloud.com/rdma.local_block_id", HOST]),
    ("azure", "Standard_ND96isr_H100_v5", "gpu-network", [ZONE, HOST]),
    ("existing", "unknown", "gpu-network", [HOST]),
])
def test_topology_levels_are_the_labels_of_the_shape(cloud, instance_type, name, expected):
    p = pool(cloud=cloud, instance_type=instance_type, fabric="infiniband")
    body = ko.topology(p)
    assert body == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                    "metadata": {"name": name, "labels": body["metadata"]["labels"]},
                    "spec": {"levels": [{"nodeLabel": label} for label in expected]}}
    assert ko.topology_name(p) == name
    validate_manifest(body, "1.34")
    flavor = ko.resource_flavor(ko.flavor_plans([p])[0])
    assert flavor["spec"]["topologyName"] == name
    validate_manifest(flavor, "1.34")


def test_one_topology_per_level_list():
    plans = ko.flavor_plans([pool("a"), pool("b"), pool("c", instance_type="p6-b200.48xlarge"),
                             pool("d", instance_type="p5.48xlarge", nodes=(0, 4))])
    assert [t["metadata"]["name"] for t in ko.topologies(plans)] == ["gpu-network-aws-3", "gpu-network-aws-4"]


def test_default_level_is_the_coarsest_fabric_level():
    assert ko.default_topology_level(pool()) == AWS3[0]
    assert ko.default_topology_level(pool(cloud="azure", instance_type="Standard_ND96isr_H100_v5")) == ZONE
    assert ko.default_topology_level(pool(nodes=(0, 4))) is None


def test_queued_pools_are_not_topology_aware():
    assert not ko.topology_aware(pool(cloud="gcp", instance_type="a3-megagpu-8g", mode="queued"))


# --- flavor order, spot tolerations ---------------------------------------------------------------------------


def queue_flavors(pools, gpus=16):
    plans = ko.flavor_plans(pools)
    quota = ko.team_quotas([TeamConfig("research", gpus, 8 * gpus, 64 * gpus, "research")], plans)[0]
    body = ko.cluster_queue(quota, plans)
    validate_manifest(body, "1.34")
    return body


def test_flavors_are_reserved_then_on_demand_then_spot_in_pool_order():
    pools = [pool("spot-a", mode="spot", nodes=(0, 2)), pool("od", nodes=(0, 2)),
             pool("res", mode="reservation", nodes=(0, 2)), pool("spot-b", mode="spot", nodes=(0, 2))]
    body = queue_flavors(pools)
    assert [f["name"] for f in body["spec"]["resourceGroups"][0]["flavors"]] == [
        "cpu.default", "res", "od", "spot-a", "spot-b"]
    assert "admissionChecksStrategy" not in body["spec"]


def test_oke_spot_flavor_tolerates_the_preemptible_taint():
    spot = pool(cloud="oci", instance_type="VM.GPU.A10.2", fabric="", mode="spot", nodes=(0, 2))
    flavor = ko.resource_flavor(ko.flavor_plans([spot])[0])
    assert flavor["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "oci.oraclecloud.com/oke-is-preemptible", "operator": "Exists", "effect": "NoSchedule"}]
    validate_manifest(flavor, "1.34")
    on_demand = pool(cloud="oci", instance_type="VM.GPU.A10.2", fabric="", nodes=(0, 2))
    assert len(ko.resource_flavor(ko.flavor_plans([on_demand])[0])["spec"]["tolerations"]) == 1


def test_spot_toleration_is_not_repeated_when_the_pool_declares_the_taint():
    from gpu_platform.labels import Taint

    spot = pool(cloud="oci", instance_type="VM.GPU.A10.2", fabric="", mode="spot", nodes=(0, 2),
                extra=(Taint("oci.oraclecloud.com/oke-is-preemptible", "true"),))
    keys = [t["key"] for t in ko.flavor_tolerations(spot)]
    assert keys == ["nvidia.com/gpu", "oci.oraclecloud.com/oke-is-preemptible"]


def test_a_job_on_a_pool_with_a_fallback_selects_the_gpu_model():
    assert training_objects.node_selector(pool(fallback="spot")) == {"gpu-platform.io/accelerator": "h100"}
    assert training_objects.node_selector(pool()) == {"gpu-platform.io/pool": "train"}
    # The flavors keep the pool label: Kueue injects the one of the flavor it assigns.
    flavor = ko.resource_flavor(ko.flavor_plans([pool(fallback="spot")])[0])
    assert flavor["spec"]["nodeLabels"]["gpu-platform.io/pool"] == "train"


# --- GKE queued provisioning ------------------------------------------------------------------------------------


def test_queued_pool_gets_an_admission_check_on_its_flavor_only():
    pools = [pool("od", cloud="gcp", instance_type="a3-highgpu-8g", fabric="", nodes=(0, 2)),
             pool("dws", cloud="gcp", instance_type="a3-highgpu-8g", fabric="", nodes=(0, 4), mode="queued")]
    plans = ko.flavor_plans(pools)
    config, check = ko.provisioning_request_config(plans), ko.admission_check(plans)
    assert config == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
                      "metadata": config["metadata"], "spec": {
                          "provisioningClassName": "queued-provisioning.gke.io",
                          "managedResources": ["nvidia.com/gpu"],
                          "podSetUpdates": {"nodeSelector": [{
                              "key": "autoscaling.gke.io/provisioning-request",
                              "valueFromProvisioningClassDetail": "ResizeRequestName"}]}}}
    assert config["metadata"]["name"] == "queued-provisioning"
    assert check == {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": check["metadata"],
                     "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                              "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                             "name": "queued-provisioning"}}}
    validate_manifest(config, "1.34")
    validate_manifest(check, "1.34")
    body = queue_flavors(pools)
    assert body["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "queued-provisioning", "onFlavors": ["dws"]}]}
    flavor = ko.resource_flavor(plans[1])
    assert flavor["spec"]["tolerations"][-1] == {"key": "cloud.google.com/gke-queued", "operator": "Exists",
                                                 "effect": "NoSchedule"}


def test_no_admission_check_without_queued_pools():
    plans = ko.flavor_plans([pool()])
    assert ko.provisioning_request_config(plans) is None and ko.admission_check(plans) is None


def test_case_insensitive_crd_patterns_compile_and_still_check():
    schema = schemas._without_k8s_extensions({"type": "string", "pattern": "^(?i)[a-z]+$"})
    assert schema["pattern"] == "(?i)^[a-z]+$"
    assert re.search(schema["pattern"], "ProvisioningRequestConfig")
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "x"},
           "spec": {"controllerName": "c", "parameters": {"apiGroup": "g", "kind": "Not-", "name": "n"}}}
    with pytest.raises(schemas.ManifestError):
        validate_manifest(bad, "1.34")


# --- guards ----------------------------------------------------------------------------------------------------

POOL = {"name": "train", "gpuModel": "h100", "gpusPerNode": 8, "minNodes": 2, "maxNodes": 2, "rdma": True}
TEAM = {"name": "research", "gpuQuota": 16}


def existing(training, pools=None):
    return {"cloud": "existing", "networkPolicyEnforced": True, "nodePools": pools or [dict(POOL)],
            "teams": [TEAM], "training": training}


def test_training_topology_keys_are_read():
    config = parse_config(existing({"topologyPolicy": "required", "topologyLevel": HOST}), "s")
    assert (config.training.topology_policy, config.training.topology_level) == ("required", HOST)


@pytest.mark.parametrize("training, pools, message", [
    ({"topologyLevel": ZONE}, None,
     "s: training.topologyLevel: the nodes of pool 'train' carry no label 'topology.kubernetes.io/zone'; their "
     "topology levels are kubernetes.io/hostname"),
    ({"topologyPolicy": "strict"}, None,
     "s: training.topologyPolicy: 'strict' is not one of preferred, required"),
    ({"topologyPolicy": "required"}, [{**POOL, "minNodes": 0}],
     "s: training.topologyPolicy: pool 'train' has no topology-aware Kueue flavor (only fixed-size RDMA pools with "
     "device-plugin GPUs, not queued-provisioning ones, have)"),
])
def test_training_topology_guards(training, pools, message):
    with pytest.raises(ConfigError) as err:
        parse_config(existing(training, pools), "s")
    assert str(err.value) == message


def test_scheduling_component_refuses_a_fallback_to_itself():
    spec = pool(fallback="train", fabric="").spec()
    with pytest.raises(ConfigError) as err:
        scheduling.checked_args("sched", {"pools": [spec]})
    assert str(err.value) == "SchedulingPolicy sched: pools[0].fallback_pool: names the pool itself"
