"""DRA pools in scheduling and tenancy: Kueue's device class mappings, IMEX channel quotas, no topology-aware
flavors, the team namespace's DRA device quota and the ResourceClaimTemplates it gets."""

import yaml

from gpu_platform.config import TeamConfig
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.scheduling import kueue_objects as ko
from gpu_platform.scheduling import program_teams
from gpu_platform.scheduling import tenancy_objects as to
from gpu_platform.scheduling.policy import SchedulingPolicy
from gpu_platform.scheduling.tenancy import TeamNamespace
from gpu_platform.schemas import validate_manifest
from gpu_platform.testing import run_program

H100 = GpuPool("h100", "aws", "p5.48xlarge", "h100", 8, 80, 0, 4)
DRA_H100 = GpuPool("h100-dra", "aws", "p5.48xlarge", "h100", 8, 80, 0, 4, gpu_allocation="dra")
DRA_MIG = GpuPool("mig", "aws", "p5.48xlarge", "h100", 8, 80, 0, 2, sharing=Sharing("mig", 1, "1g.10gb"),
                  gpu_allocation="dra")
# GB200 NVL72-like: 18 nodes of 4 GPUs in one NVLink domain (the model is "b200" until the catalog has GB200).
RACK = GpuPool("rack", "aws", "p6e-gb200.36xlarge", "b200", 4, 186, 18, 18, gpu_allocation="dra",
               architecture="arm64", nvlink_domain_gpus=72)
# Component args check instance types against the catalog: the component tests use an existing cluster's pools.
EXISTING_H100 = GpuPool(**{**H100.__dict__, "cloud": "existing", "instance_type": ""})
EXISTING_RACK = GpuPool(**{**RACK.__dict__, "cloud": "existing", "instance_type": ""})
GPU_MAPPING = {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]}
IMEX_MAPPING = {"name": "nvidia.com/imex-channel", "deviceClassNames": ["compute-domain-default-channel.nvidia.com"]}


def team(name, gpus, cpu=None, mem=None, borrow=None, lend=None):
    return TeamConfig(name, gpus, cpu if cpu is not None else 8 * gpus, mem if mem is not None else 64 * gpus, name,
                      borrow, lend)


# --- Kueue's Configuration --------------------------------------------------------------------------------------


def test_no_dra_pool_no_device_class_mappings():
    resources = ko.controller_configuration([H100])["resources"]
    assert resources == {"excludeResourcePrefixes": list(ko.EXCLUDED_RESOURCE_PREFIXES)}
    assert ko.controller_configuration([H100]) == ko.controller_configuration()


def test_dra_whole_gpu_pool_maps_the_gpu_class_to_nvidia_gpu():
    resources = ko.controller_configuration([H100, DRA_H100])["resources"]
    assert resources == {"excludeResourcePrefixes": list(ko.EXCLUDED_RESOURCE_PREFIXES),
                         "deviceClassMappings": [GPU_MAPPING]}


def test_dra_mig_pool_maps_the_mig_class():
    assert ko.controller_configuration([DRA_MIG])["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["mig.nvidia.com"]}]
    # Both classes, in pool order, under the one name gpuQuota counts.
    assert ko.controller_configuration([DRA_MIG, DRA_H100])["resources"]["deviceClassMappings"] == [
        {"name": "nvidia.com/gpu", "deviceClassNames": ["mig.nvidia.com", "gpu.nvidia.com"]}]


def test_multi_node_nvlink_pool_maps_imex_channels_too():
    assert ko.controller_configuration([H100, RACK])["resources"]["deviceClassMappings"] == [GPU_MAPPING, IMEX_MAPPING]


def test_switching_a_pool_to_dra_changes_the_chart_values():
    plugin = ko.helm_values(False, [H100])
    dra = ko.helm_values(False, [GpuPool(**{**H100.__dict__, "gpu_allocation": "dra"})])
    assert plugin != dra
    config = yaml.safe_load(dra["managerConfig"]["controllerManagerConfigYaml"])
    assert config["resources"]["deviceClassMappings"] == [GPU_MAPPING]
    assert "deviceClassMappings" not in yaml.safe_load(plugin["managerConfig"]["controllerManagerConfigYaml"])[
        "resources"]
    assert "featureGates" not in config  # KueueDRAIntegration is on by default at the pinned Kueue
    assert "controllerManager" not in dra


def test_scheduling_policy_passes_its_pools_to_the_chart():
    rec = run_program(lambda: SchedulingPolicy("sched", {"pools": [EXISTING_H100.spec(), EXISTING_RACK.spec()],
                                                         "teams": [{"name": "ml", "gpu_quota": 8}]}))
    release = rec.one("kubernetes:helm.sh/v3:Release")
    config = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config == ko.controller_configuration([EXISTING_H100, EXISTING_RACK])
    assert config["resources"]["deviceClassMappings"] == [GPU_MAPPING, IMEX_MAPPING]
    queue = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    assert queue.inputs["spec"]["resourceGroups"][0]["coveredResources"] == [
        "cpu", "memory", "nvidia.com/gpu", "nvidia.com/imex-channel"]


# --- ClusterQueues ----------------------------------------------------------------------------------------------


def test_queues_of_a_device_plugin_and_a_multi_node_dra_pool():
    plans = ko.flavor_plans([H100, RACK])
    assert [(p.name, p.capacity, p.topology) for p in plans] == [("h100", 32, False), ("rack", 72, False)]
    assert ko.covered_resources(plans) == ("cpu", "memory", "nvidia.com/gpu", "nvidia.com/imex-channel")
    assert [p.capacity_of("nvidia.com/imex-channel") for p in plans] == [0, 72]
    research, product = ko.team_quotas([team("research", 48, borrow=8, lend=6), team("product", 16)], plans)
    # research: 48 over the free capacity (32, 72): 14.77/33.23 -> 15, 33; product: 16 over (17, 39) -> 5, 11.
    assert (research.quota_of("nvidia.com/gpu"), product.quota_of("nvidia.com/gpu")) == ((15, 33), (5, 11))
    # Channels follow the GPUs on the multi-node NVLink flavor only.
    assert (research.quota_of("nvidia.com/imex-channel"), product.quota_of("nvidia.com/imex-channel")) == (
        (0, 33), (0, 11))

    cq = ko.cluster_queue(research, plans)
    [group] = cq["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", "nvidia.com/imex-channel"]
    # CPU 384 and memory 3072Gi: a quarter on the CPU-only flavor, the rest following the GPUs (15:33).
    assert group["flavors"] == [
        {"name": "cpu.default", "resources": [
            {"name": "cpu", "nominalQuota": 96}, {"name": "memory", "nominalQuota": "768Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": 0}, {"name": "nvidia.com/imex-channel", "nominalQuota": 0}]},
        {"name": "h100", "resources": [
            {"name": "cpu", "nominalQuota": 90}, {"name": "memory", "nominalQuota": "720Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": 15, "borrowingLimit": 8, "lendingLimit": 2},
            {"name": "nvidia.com/imex-channel", "nominalQuota": 0}]},
        {"name": "rack", "resources": [
            {"name": "cpu", "nominalQuota": 198}, {"name": "memory", "nominalQuota": "1584Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": 33, "borrowingLimit": 8, "lendingLimit": 4},
            {"name": "nvidia.com/imex-channel", "nominalQuota": 33}]},
    ]
    validate_manifest(cq, "1.34")

    other = ko.cluster_queue(product, plans)
    validate_manifest(other, "1.34")
    nominal = [{r["name"]: r["nominalQuota"] for r in f["resources"]} for f in other["spec"]["resourceGroups"][0][
        "flavors"]]
    assert [(n["nvidia.com/gpu"], n["nvidia.com/imex-channel"]) for n in nominal] == [(0, 0), (5, 0), (11, 11)]
    # The channels of the rack add up to its GPUs' quota, never above the GPUs it has.
    assert research.quota_of("nvidia.com/imex-channel")[1] + product.quota_of("nvidia.com/imex-channel")[1] == 44


def test_dra_pool_within_one_node_needs_no_imex_channels():
    plans = ko.flavor_plans([H100, DRA_H100])
    assert ko.covered_resources(plans) == ("cpu", "memory", "nvidia.com/gpu")
    [quota] = ko.team_quotas([team("ml", 16)], plans)
    assert quota.quota_of("nvidia.com/gpu") == (8, 8)  # DRA GPUs count as nvidia.com/gpu, like the device plugin's
    assert quota.imex_channels == (0, 0)
    cq = ko.cluster_queue(quota, plans)
    assert cq["spec"]["resourceGroups"][0]["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    validate_manifest(cq, "1.34")


def test_device_plugin_multi_node_nvlink_pool_claims_no_channels_through_kueue():
    plugin_rack = GpuPool(**{**RACK.__dict__, "gpu_allocation": "device-plugin"})
    assert not ko.claims_imex_channels(plugin_rack)
    assert ko.covered_resources(ko.flavor_plans([plugin_rack])) == ("cpu", "memory", "nvidia.com/gpu")


def test_imex_channel_quota_rule():
    plans = ko.flavor_plans([RACK, H100, GpuPool(**{**RACK.__dict__, "name": "rack2"})])
    assert ko.imex_channel_quota(plans, [7, 5, 3]) == (7, 0, 3)


# --- topology-aware flavors -------------------------------------------------------------------------------------


def test_dra_rdma_pool_of_fixed_size_is_not_topology_aware():
    plugin = GpuPool("train", "aws", "p5.48xlarge", "h100", 8, 80, 4, 4, rdma_fabric="efa", rdma_interfaces=32)
    dra = GpuPool(**{**plugin.__dict__, "gpu_allocation": "dra"})
    assert ko.topology_aware(plugin) is True
    assert ko.topology_aware(dra) is False
    # The coarsest network-fabric level the shape's nodes carry (issue 22), formerly the zone.
    assert ko.default_topology_level(plugin) == "topology.k8s.aws/network-node-layer-1"
    assert ko.default_topology_level(dra) is None
    assert "topologyName" not in ko.resource_flavor(ko.flavor_plans([dra])[0])["spec"]
    assert ko.resource_flavor(ko.flavor_plans([plugin])[0])["spec"]["topologyName"] == "gpu-network-aws-3"


# --- team namespaces --------------------------------------------------------------------------------------------


def test_team_quota_caps_dra_devices_at_the_gpu_quota():
    research = team("research", 24)
    hard = to.resource_quota(research, [H100, DRA_H100])["spec"]["hard"]
    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "24"
    assert hard["requests.nvidia.com/gpu"] == "24"
    assert [k for k in hard if "deviceclass" in k] == ["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"]
    both = to.resource_quota(research, [DRA_MIG, RACK])["spec"]["hard"]
    assert {k: v for k, v in both.items() if "deviceclass" in k} == {
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "24",
        "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "24"}
    without = to.resource_quota(research, [H100])
    assert not any("deviceclass" in k for k in without["spec"]["hard"])
    assert without == to.resource_quota(research)
    body = {"apiVersion": "v1", "kind": "ResourceQuota", **to.resource_quota(research, [DRA_MIG, RACK])}
    validate_manifest(body, "1.34")


def test_claim_templates_of_dra_pools_validate():
    research = team("research", 24)
    bodies = {b["metadata"]["name"]: b for b in to.claim_templates(research, [H100, DRA_MIG, RACK])}
    assert list(bodies) == ["mig-gpu", "mig-node", "rack-gpu", "rack-node"]
    for body in bodies.values():
        validate_manifest(body, "1.34")
        assert (body["apiVersion"], body["kind"], body["metadata"]["namespace"]) == (
            "resource.k8s.io/v1", "ResourceClaimTemplate", "research")
        assert body["metadata"]["labels"]["gpu-platform.io/team"] == "research"
    mig_selector = [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'"}}]
    assert bodies["mig-gpu"]["spec"] == {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 1, "selectors": mig_selector}}]}}}
    # An H100 holds seven 1g.10gb instances: 8 GPUs make 56 per node.
    assert bodies["mig-node"]["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {
        "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 56, "selectors": mig_selector}}]
    assert bodies["rack-gpu"]["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}}]
    assert bodies["rack-node"]["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 4}}]
    assert to.claim_templates(research, [H100]) == []


def test_team_namespace_registers_claim_templates_after_the_namespace():
    args = {"team": {"name": "research", "gpu_quota": 24}, "cluster_queue": "research",
            "pools": [EXISTING_H100.spec(), EXISTING_RACK.spec()]}
    holder = {}
    rec = run_program(lambda: (program_teams.remember_queues("another stack", ["research"]),
                               holder.setdefault("ns", TeamNamespace("team-research", args))))
    component = rec.one("gpuplatform:index:TeamNamespace")
    namespace = rec.one("kubernetes:core/v1:Namespace")
    templates = rec.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
    assert [(t.name, t.inputs["metadata"]["name"]) for t in templates] == [
        ("team-research-claim-rack-gpu", "rack-gpu"), ("team-research-claim-rack-node", "rack-node")]
    for t in templates:
        assert t.parent == component.urn
        assert namespace.urn in t.dependencies
        assert t.inputs["metadata"]["namespace"] == "research"
        validate_manifest(t.inputs, "1.34")
    assert holder["ns"].claim_template_names == ["rack-gpu", "rack-node"]
    hard = rec.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]
    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "24"


def test_team_namespace_without_dra_pools_has_no_claim_templates():
    rec = run_program(lambda: TeamNamespace("team-ml", {"team": {"name": "ml", "gpu_quota": 4},
                                                        "pools": [EXISTING_H100.spec()]}))
    assert rec.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate") == []
    hard = rec.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]
    assert not any("deviceclass" in k for k in hard)
