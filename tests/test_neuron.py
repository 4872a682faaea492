"""AWS Neuron (Inferentia2, Trainium, Trainium2): catalog, EKS node groups and Karpenter, the Neuron Helm chart,
neuron-monitor's metrics and dashboard, the aws-neuron reference stack and its configuration errors."""

from dataclasses import replace
from pathlib import Path

import pytest
from chart_keys import load_keys, unknown_keys
from conftest import planned_stack

from gpu_platform import catalog, labels, versions
from gpu_platform.accelerators import neuron_values, rdma_specs
from gpu_platform.accelerators.neuron import checked_args
from gpu_platform.clouds.aws import cluster as aws_cluster
from gpu_platform.clouds.aws import karpenter_objects as ko
from gpu_platform.clouds.aws import nodes as aws_nodes
from gpu_platform.clouds.aws.options import AwsPoolOptions
from gpu_platform.config import parse_config
from gpu_platform.errors import ConfigError
from gpu_platform.labels import Taint
from gpu_platform.monitoring import dashboards
from gpu_platform.pools import GpuPool

ROOT = Path(__file__).resolve().parents[1]
KEYS = ROOT / "tests" / "data" / "chart_keys"
STACK = ROOT / "stacks" / "Pulumi.aws-neuron.yaml"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
NEURON, NEURONCORE = "aws.amazon.com/neuron", "aws.amazon.com/neuroncore"
NEURON_TOLERATION = {"key": "aws.amazon.com/neuron", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def aws_pool(name, instance_type, max_nodes, min_nodes=0, role="general", rdma=False):
    shape = catalog.find_shape("aws", instance_type)
    return GpuPool(name, "aws", instance_type, shape.gpu_model, shape.gpu_count, shape.gpu.memory_gib, min_nodes,
                   max_nodes, shape.vcpus, shape.memory_gib, rdma_fabric=shape.rdma_fabric if rdma else None,
                   rdma_interfaces=shape.rdma_interfaces if rdma else 0, role=role)


INF2 = aws_pool("inf2-infer", "inf2.xlarge", min_nodes=1, max_nodes=4, role="inference")
TRN2 = aws_pool("trn2-train", "trn2.48xlarge", max_nodes=2, role="training", rdma=True)
L4 = aws_pool("l4", "g6.xlarge", max_nodes=2)
DEDICATED_INF2 = replace(aws_pool("inf2-dedicated", "inf2.48xlarge", max_nodes=1),
                         user_taints=(Taint("dedicated", "ml"),))
CHART_TOLERATIONS = [  # chart 1.10.0's devicePlugin.tolerations
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "Equal", "value": "Unschedulable",
     "effect": "NoSchedule"},
]
CHART_KEYS = KEYS / "neuron-helm-chart-1.10.0.keys"


@pytest.fixture(scope="module")
def planned():
    result = planned_stack("aws-neuron")
    assert result.errors == []
    return result


def _manifests(result, kind):
    return {m["metadata"]["name"]: m for m in result.manifests if m["kind"] == kind}


# Catalog


def test_neuron_models_memory_and_neuroncores_per_device():
    models = {k: (m.vendor, m.memory_gib, m.secondary_per_device) for k, m in catalog.GPU_MODELS.items()
              if m.vendor == catalog.AWS_NEURON}
    assert models == {
        "inferentia2": ("aws-neuron", 32, ((NEURONCORE, 2),)),
        "trainium1": ("aws-neuron", 32, ((NEURONCORE, 2),)),
        # Trainium2: 8 physical NeuronCore-v3, advertised as 4 logical ones at the default LNC=2.
        "trainium2": ("aws-neuron", 96, ((NEURONCORE, 4),)),
    }


def test_neuron_shapes_devices_cpus_memory_and_efa():
    shapes = {s.name: (s.gpu_model, s.gpu_count, s.vcpus, s.memory_gib, s.rdma_fabric, s.rdma_interfaces)
              for s in catalog.shapes_of("aws") if s.gpu and s.gpu.vendor == catalog.AWS_NEURON}
    assert shapes == {
        "inf2.xlarge": ("inferentia2", 1, 4, 16, None, 0),
        "inf2.8xlarge": ("inferentia2", 1, 32, 128, None, 0),
        "inf2.24xlarge": ("inferentia2", 6, 96, 384, None, 0),
        "inf2.48xlarge": ("inferentia2", 12, 192, 768, None, 0),
        "trn1.2xlarge": ("trainium1", 1, 8, 32, None, 0),
        "trn1.32xlarge": ("trainium1", 16, 128, 512, "efa", 8),
        "trn1n.32xlarge": ("trainium1", 16, 128, 512, "efa", 16),
        "trn2.48xlarge": ("trainium2", 16, 192, 2048, "efa", 16),
    }


def test_neuron_pool_resources_taint_and_tolerations():
    assert (INF2.vendor, INF2.resource, INF2.resources_per_node) == (
        "aws-neuron", NEURON, {NEURON: 1, NEURONCORE: 2})
    assert TRN2.resources_per_node == {NEURON: 16, NEURONCORE: 64}
    assert [(t.key, t.value, t.effect) for t in TRN2.taints] == [("aws.amazon.com/neuron", "true", "NoSchedule")]
    assert TRN2.tolerations == [NEURON_TOLERATION]


# EKS managed node groups


def _parse(*pools, **cluster):
    return parse_config({"cloud": "aws", "region": "us-east-1", "nodePools": list(pools), **cluster}, "s")


INF2_ENTRY = {"name": "inf2", "instanceType": "inf2.xlarge", "minNodes": 1, "maxNodes": 2}


def test_neuron_pools_default_to_the_neuron_ami_and_nvidia_pools_keep_theirs():
    config = _parse(INF2_ENTRY, {"name": "l4", "instanceType": "g6.xlarge", "maxNodes": 1})
    assert [p.cloud_options.ami_type for p in config.node_pools] == ["AL2023_x86_64_NEURON", "AL2023_x86_64_NVIDIA"]
    assert config.node_pools[0].cloud_options == AwsPoolOptions(ami_type="AL2023_x86_64_NEURON", disk_size_gib=200)


@pytest.mark.parametrize(("entry", "message"), [
    ({**INF2_ENTRY, "amiType": "AL2023_x86_64_NVIDIA"},
     "s: nodePools[0].amiType: AL2023_x86_64_NVIDIA has no AWS Neuron driver; use AL2023_x86_64_NEURON"),
    ({**INF2_ENTRY, "amiType": "BOTTLEROCKET_x86_64_NVIDIA"},
     "s: nodePools[0].amiType: BOTTLEROCKET_x86_64_NVIDIA has no AWS Neuron driver; use AL2023_x86_64_NEURON"),
    ({"name": "l4", "instanceType": "g6.xlarge", "maxNodes": 1, "amiType": "AL2023_x86_64_NEURON"},
     "s: nodePools[0].amiType: AL2023_x86_64_NEURON has no NVIDIA driver; use AL2023_x86_64_NVIDIA or "
     "BOTTLEROCKET_x86_64_NVIDIA"),
    ({**INF2_ENTRY, "amiType": "AL2_x86_64_GPU"},
     "s: nodePools[0].amiType: 'AL2_x86_64_GPU' is not one of AL2023_x86_64_NEURON; did you mean "
     "'AL2023_x86_64_NEURON'?"),
])
def test_an_ami_of_another_vendor_is_refused_in_one_line(entry, message):
    with pytest.raises(ConfigError) as err:
        _parse(entry)
    assert str(err.value) == message


def test_the_component_path_applies_the_same_ami_rule():
    assert aws_cluster.pool_options(INF2, {"pool": INF2.spec()}).ami_type == "AL2023_x86_64_NEURON"
    with pytest.raises(ConfigError, match="pool inf2-infer: ami_type: AL2023_x86_64_NVIDIA has no AWS Neuron driver"):
        aws_cluster.pool_options(INF2, {"pool": INF2.spec(), "ami_type": "AL2023_x86_64_NVIDIA"})


def test_node_group_labels_and_autoscaler_tags_of_a_trainium_pool():
    node_labels = aws_nodes.node_labels(TRN2, "AL2023_x86_64_NEURON")
    # Not the cluster-autoscaler's NVIDIA accelerator label: it would wait for nvidia.com/gpu forever.
    assert labels.AWS_ACCELERATOR_LABEL not in node_labels
    tags = aws_nodes.autoscaler_tags(TRN2, node_labels)
    prefix = aws_nodes.CA_TEMPLATE_PREFIX
    assert tags[f"{prefix}/resources/{NEURON}"] == "16"
    assert tags[f"{prefix}/resources/{NEURONCORE}"] == "64"
    assert tags[f"{prefix}/resources/vpc.amazonaws.com/efa"] == "16"
    assert tags[f"{prefix}/taint/aws.amazon.com/neuron"] == "true:NoSchedule"
    assert aws_nodes.IMAGE_VOLUME_DEVICE["AL2023_x86_64_NEURON"] == "/dev/xvda"


def test_the_reference_stack_node_group_runs_the_neuron_ami(planned):
    groups = {r.name: r.inputs for r in planned.recording.of_type(NODE_GROUP)}
    inf2 = groups["aws-neuron-inf2-infer-nodes"]
    assert inf2["amiType"] == "AL2023_x86_64_NEURON"
    assert inf2["instanceTypes"] == ["inf2.xlarge"]
    assert inf2["taints"] == [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NO_SCHEDULE"}]
    # minNodes 0 with Karpenter: the trn2 pool has no node group at all.
    assert not any("trn2" in name for name in groups)


# Karpenter


def test_karpenter_node_pools_and_node_classes_of_the_reference_stack(planned):
    pools = _manifests(planned, "NodePool")
    trn2 = pools["trn2-train"]["spec"]
    assert trn2["limits"] == {NEURON: "32"}
    assert trn2["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["trn2.48xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
    assert trn2["template"]["spec"]["taints"] == [{"key": "aws.amazon.com/neuron", "value": "true",
                                                   "effect": "NoSchedule"}]
    assert trn2["disruption"]["consolidationPolicy"] == "WhenEmpty"
    # The node group keeps minNodes 1 of inf2's 4: Karpenter may add the other 3 devices.
    assert pools["inf2-infer"]["spec"]["limits"] == {NEURON: "3"}
    classes = _manifests(planned, "EC2NodeClass")
    for name in ("trn2-train", "inf2-infer"):
        assert classes[name]["spec"]["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    interfaces = classes["trn2-train"]["spec"]["networkInterfaces"]
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    assert [i["networkCardIndex"] for i in interfaces[1:]] == list(range(16))
    assert {i["interfaceType"] for i in interfaces[1:]} == {"efa-only"}
    assert "networkInterfaces" not in classes["inf2-infer"]["spec"]


def test_karpenter_pool_of_a_neuron_pool_uses_its_ami_and_resource():
    kp = ko.KarpenterPool(pool=TRN2, nodes=3, ami_type="AL2023_x86_64_NEURON", capacity_type="ON_DEMAND",
                          capacity_reservation_id=None, disk_size_gib=500, consolidate_after_minutes=10)
    assert ko.node_pool(kp)["spec"]["limits"] == {NEURON: "48"}
    spec = ko.ec2_node_class(kp, "profile", ["subnet-1"], ["sg-1"], None, {})["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert spec["blockDeviceMappings"][0]["deviceName"] == "/dev/xvda"


# EFA on Trainium


def test_efa_device_plugin_covers_trainium_and_tolerates_the_neuron_taint():
    listed = (KEYS / "aws-efa-k8s-device-plugin-v0.5.30.instance-types").read_text().split()
    assert {"trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge"} <= set(listed)
    values = rdma_specs.efa_values([INF2, TRN2, L4])
    assert values["tolerations"] == [NEURON_TOLERATION]
    assert values["nodeSelector"] == {labels.RDMA_LABEL: "efa"}


# The Neuron Helm chart


def test_chart_pin():
    assert versions.NEURON_HELM_CHART.release_args() == {
        "chart": "oci://public.ecr.aws/neuron/neuron-helm-chart", "version": "1.10.0"}
    text = CHART_KEYS.read_text()
    assert "# source: helm show values oci://public.ecr.aws/neuron/neuron-helm-chart --version 1.10.0\n" in text
    assert "sha256:ed5d8f73b7a05d3a1edf17b2bfaf277ea995ad1c65b115fa8ba2c7b4dc649346" in text
    # Keys new in 1.10.0 that the values set.
    keys = load_keys(CHART_KEYS)
    assert (keys["draDriver.enabled"], keys["ultraserverOperator.enabled"], keys["devicePlugin.enabled"]) == (
        "scalar", "scalar", "scalar")


@pytest.mark.parametrize("pools", [[INF2], [TRN2], [INF2, TRN2, L4], [DEDICATED_INF2]],
                         ids=["inf2", "trn2", "mixed", "user-taint"])
def test_every_values_key_exists_in_the_pinned_chart(pools):
    values = neuron_values.helm_values(pools, kubernetes_version="1.34")
    assert unknown_keys(values, load_keys(CHART_KEYS)) == []


def test_the_second_scheduler_runs_the_clusters_minor():
    # The chart default (eks-distro kube-scheduler v1.31) is outside the version-skew policy on 1.33-1.35 clusters.
    scheduler = neuron_values.helm_values([TRN2], kubernetes_version="1.35")["scheduler"]
    assert scheduler["enabled"] is True
    assert scheduler["customScheduler"]["image"] == {"repository": "registry.k8s.io/kube-scheduler", "tag": "v1.35.0"}
    assert "image" not in neuron_values.helm_values([TRN2])["scheduler"]["customScheduler"]


def test_every_catalogued_neuron_type_is_one_the_chart_device_plugin_runs_on():
    # The chart's device plugin affinity admits only its neuronInstances list (values "__NEURON_INSTANCES__").
    listed = set((KEYS / "neuron-helm-chart-1.10.0.instance-types").read_text().split())
    neuron_types = {s.name for s in catalog.shapes_of("aws") if s.gpu and s.gpu.vendor == catalog.AWS_NEURON}
    assert neuron_types == {"inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge", "trn1.2xlarge",
                            "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge"}
    assert neuron_types <= listed


def test_values_tolerate_the_neuron_pools_and_enable_the_scheduler_extension_for_multi_device_nodes():
    values = neuron_values.helm_values([INF2, TRN2, L4])
    assert values == {
        "draDriver": {"enabled": False},
        "ultraserverOperator": {"enabled": False},
        # The chart's own list already tolerates the Neuron taint: nothing added.
        "devicePlugin": {"enabled": True, "tolerations": CHART_TOLERATIONS},
        "scheduler": {"enabled": True, "customScheduler": {"enabled": True}},
        "npd": {"enabled": True, "namespaceOverride": "aws-neuron", "nodeRecovery": {"enabled": False}},
    }
    assert neuron_values.helm_values([INF2], namespace="neuron")["npd"]["namespaceOverride"] == "neuron"
    # One-device inf2.xlarge nodes: any request is contiguous, no extension.
    assert neuron_values.helm_values([INF2])["scheduler"]["enabled"] is False
    big_inf2 = aws_pool("inf2-big", "inf2.48xlarge", max_nodes=1)
    assert neuron_values.helm_values([big_inf2])["scheduler"]["enabled"] is True


def test_a_user_taint_of_a_neuron_pool_is_added_to_the_device_plugin_tolerations():
    tolerations = neuron_values.helm_values([DEDICATED_INF2, L4])["devicePlugin"]["tolerations"]
    assert tolerations == [*CHART_TOLERATIONS,
                           {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]


def test_the_reference_stack_installs_the_chart(planned):
    release = planned.recording.one(RELEASE, "aws-neuron-neuron-chart").inputs
    assert (release["chart"], release["version"], release["namespace"], release["name"]) == (
        "oci://public.ecr.aws/neuron/neuron-helm-chart", "1.10.0", "aws-neuron", "neuron")
    assert release["values"]["scheduler"]["enabled"] is True
    assert release["values"]["draDriver"] == {"enabled": False}
    assert release["values"]["npd"]["namespaceOverride"] == "aws-neuron"
    assert release["createNamespace"] is False
    namespace = _manifests(planned, "Namespace")["aws-neuron"]["metadata"]["labels"]
    assert namespace[labels.POD_SECURITY_ENFORCE_LABEL] == "privileged"


def test_neuron_stack_args_are_checked():
    with pytest.raises(ConfigError, match="NeuronStack n: pools: has no AWS Neuron pool"):
        checked_args("n", {"pools": [L4.spec()]})
    with pytest.raises(ConfigError, match="service_monitor_labels: takes effect only with monitoring: true"):
        checked_args("n", {"pools": [INF2.spec()], "service_monitor_labels": {"release": "x"}})


# neuron-monitor: scraping and dashboard


def test_monitor_daemonset_runs_on_the_neuron_pools_only():
    ds = neuron_values.monitor_daemonset([INF2, TRN2, L4])
    spec = ds["spec"]["template"]["spec"]
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": labels.POOL_LABEL, "operator": "In", "values": ["inf2-infer", "trn2-train"]}]}]}
    assert spec["tolerations"] == [NEURON_TOLERATION]
    assert spec["automountServiceAccountToken"] is False
    container = spec["containers"][0]
    assert container["image"].startswith("public.ecr.aws/neuron/neuron-monitor:1.3.0")
    assert container["args"] == ["--port", "8000", "--neuron-monitor-config", "/opt/aws/neuron/bin/neuron-monitor.conf"]
    assert container["ports"] == [{"name": "metrics", "containerPort": 8000, "protocol": "TCP"}]


def test_service_monitor_and_prometheus_admission(planned):
    monitor = _manifests(planned, "ServiceMonitor")["neuron-monitor"]
    assert monitor["metadata"]["namespace"] == "aws-neuron"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"] == {"matchLabels": {labels.APP_NAME_LABEL: "neuron-monitor"}}
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    service = next(m for m in planned.manifests if m["kind"] == "Service" and m["metadata"]["name"] == "neuron-monitor")
    assert service["spec"]["ports"][0]["port"] == 8000
    policies = {m["metadata"]["name"]: m["spec"] for m in planned.manifests
                if m["kind"] == "NetworkPolicy" and m["metadata"].get("namespace") == "aws-neuron"}
    assert policies["default-deny-ingress"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    allow = policies["allow-prometheus"]["ingress"][0]
    assert allow["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert allow["from"][0]["namespaceSelector"] == {"matchLabels": {labels.NAMESPACE_NAME_LABEL: "monitoring"}}


def test_dashboard_reads_neuron_monitor_metrics(planned):
    dash = neuron_values.dashboard()
    exprs = [e for _, e in dashboards.dashboard_expressions(dash)]
    assert "100 * avg(neuroncore_utilization_ratio)" in exprs
    used = {m for m in neuron_values.NEURON_METRICS if any(m in e for e in exprs)}
    assert used == {"neuroncore_utilization_ratio", "neuron_runtime_memory_used_bytes", "execution_latency_seconds",
                    "execution_status_total", "instance_info"}
    configmap = next(m for m in planned.manifests if m["kind"] == "ConfigMap"
                     and m["metadata"]["name"] == "neuron-dashboard")
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["labels"][labels.GRAFANA_DASHBOARD_LABEL] == "1"
    assert "neuroncore_utilization_ratio" in configmap["data"]["neuron.json"]


# Quotas and Kueue of the reference stack


def test_kueue_flavors_and_team_quotas_count_neuron_devices(planned):
    flavors = _manifests(planned, "ResourceFlavor")
    assert flavors["trn2-train"]["spec"] == {
        "nodeLabels": {labels.ACCELERATOR_LABEL: "trainium2", labels.POOL_LABEL: "trn2-train"},
        "tolerations": [NEURON_TOLERATION]}
    research = _manifests(planned, "ClusterQueue")["research"]["spec"]["resourceGroups"][0]
    assert NEURON in research["coveredResources"]
    nominal = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in research["flavors"]}
    assert nominal["trn2-train"][NEURON] + nominal["inf2-infer"][NEURON] == 32
    quotas = {m["metadata"]["namespace"]: m["spec"]["hard"] for m in planned.manifests if m["kind"] == "ResourceQuota"
              and m["metadata"]["name"] == "team-quota"}
    assert quotas["research"][f"requests.{NEURON}"] == "32"
    assert quotas["product"][f"requests.{NEURON}"] == "4"


def test_nvidia_only_stacks_get_no_neuron_layer():
    result = planned_stack("aws-karpenter")
    assert not [r for r in result.recording.of_type(RELEASE) if "neuron" in r.inputs["chart"]]
    assert "aws-neuron" not in _manifests(result, "Namespace")


# Configuration errors (issue 20 item 6)


@pytest.mark.parametrize(("entry", "message"), [
    ({**INF2_ENTRY, "rdma": True}, "s: nodePools[0].rdma: 'inf2.xlarge' has no RDMA fabric; RDMA-capable AWS shapes:"),
    ({**INF2_ENTRY, "sharing": {"mode": "time-slicing", "replicas": 2}},
     "s: nodePools[0].sharing.mode: "),
])
def test_neuron_configuration_errors(entry, message):
    with pytest.raises(ConfigError) as err:
        _parse(entry)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_a_neuron_pool_spec_round_trips():
    assert GpuPool.from_spec(TRN2.spec()) == TRN2
