"""Karpenter's NodePool / EC2NodeClass bodies, chart values, IAM and interruption rules: pure, no engine.

Every body is validated against the upstream CRD schemas vendored at the pinned version (karpenter.sh/v1 NodePool,
karpenter.k8s.aws/v1 EC2NodeClass from aws/karpenter-provider-aws@v1.14.1), and the CRDs' CEL rules that JSON
Schema cannot express are re-checked here one by one.
"""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_nvidia_chart_keys import unknown_keys

from gpu_platform import catalog, versions
from gpu_platform.clouds.aws import karpenter_objects as ko
from gpu_platform.labels import Taint
from gpu_platform.pools import GpuPool, Sharing
from gpu_platform.schemas import crd_schema, validate_manifest

KEYS = Path(__file__).parent / "data" / "chart_keys"
SUBNETS = ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2"]
GROUPS = ["sg-0cccccccccccccccc", "sg-0ddddddddddddddd"]


def pool_of(instance_type, rdma=False, min_nodes=0, max_nodes=2, role="general", **extra):
    shape = catalog.find_shape("aws", instance_type)
    return GpuPool(name="pool", cloud="aws", instance_type=instance_type, gpu_model=shape.gpu_model,
                   gpus_per_node=shape.gpu_count, gpu_memory_gib=shape.gpu.memory_gib, min_nodes=min_nodes,
                   max_nodes=max_nodes, rdma_fabric="efa" if rdma else None,
                   rdma_interfaces=shape.rdma_interfaces if rdma else 0, role=role, **extra)


def kpool(pool, nodes=None, ami="AL2023_x86_64_NVIDIA", capacity="ON_DEMAND", reservation=None, disk=200):
    return ko.KarpenterPool(pool=pool, nodes=pool.max_nodes if nodes is None else nodes, ami_type=ami,
                            capacity_type=capacity, capacity_reservation_id=reservation, disk_size_gib=disk,
                            consolidate_after_minutes=30)


def node_class(kp, placement=None):
    return ko.ec2_node_class(kp, "gpu-karpenter-node-profile", SUBNETS, GROUPS, placement, {"team": "ml"})


def cel_node_class(body):
    """The EC2NodeClass CRD's x-kubernetes-validations (karpenter.k8s.aws_ec2nodeclasses.yaml@v1.14.1)."""
    spec = body["spec"]
    assert ("role" in spec) != ("instanceProfile" in spec), "must specify exactly one of ['role', 'instanceProfile']"
    terms = spec["amiSelectorTerms"]
    if any("alias" in t for t in terms):
        assert len(terms) == 1 and set(terms[0]) == {"alias"}, "'alias' is mutually exclusive"
        family, _, version = terms[0]["alias"].partition("@")
        assert family in ("al2", "al2023", "bottlerocket") and version
    else:
        assert "amiFamily" in spec, "must specify amiFamily if amiSelectorTerms does not contain an alias"
    nics = spec.get("networkInterfaces", [])
    if nics:
        assert any(n == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"} for n in nics), \
            "networkInterfaces must include a primary interface with interfaceType='interface'"
        pairs = [(n["networkCardIndex"], n["deviceIndex"]) for n in nics]
        assert len(pairs) == len(set(pairs)), "no duplicate networkCardIndex and deviceIndex pairs"
        efa_cards = [n["networkCardIndex"] for n in nics if n["interfaceType"] == "efa-only"]
        assert len(efa_cards) == len(set(efa_cards)), "at most one efa device per network card"
    if "placementGroupSelector" in spec:
        assert len(spec["placementGroupSelector"]) == 1, "'name' and 'id' are mutually exclusive"
    roots = [m for m in spec.get("blockDeviceMappings", []) if m.get("rootVolume")]
    assert len(roots) <= 1


def cel_node_pool(body):
    """The NodePool CRD's CEL rules on requirements, labels and static pools (karpenter.sh_nodepools.yaml@v1.14.1)."""
    template = body["spec"]["template"]
    for req in template["spec"]["requirements"]:
        if req["operator"] == "In":
            assert req["values"], "requirements with operator 'In' must have a value defined"
        domain = req["key"].split("/")[0]
        assert not domain.endswith("karpenter.sh") or req["key"] in ("karpenter.sh/capacity-type",)
    for key in template["metadata"].get("labels", {}):
        domain = key.split("/")[0]
        assert not domain.endswith("karpenter.sh") and not domain.endswith("karpenter.k8s.aws"), key
        assert key != "kubernetes.io/hostname"
    assert "replicas" not in body["spec"], "dynamic NodePools only"


def test_vendored_schemas_name_the_pinned_release():
    root = Path(__file__).resolve().parents[1] / "components" / "gpu_platform" / "crd_schemas"
    for path, crd in (("karpenter.sh/v1/NodePool.json", "karpenter.sh_nodepools.yaml"),
                      ("karpenter.k8s.aws/v1/EC2NodeClass.json", "karpenter.k8s.aws_ec2nodeclasses.yaml")):
        source = json.loads((root / path).read_text())["source"]
        assert source == f"aws/karpenter-provider-aws@v{versions.KARPENTER.version}:pkg/apis/crds/{crd}"
    assert crd_schema(versions.KARPENTER_API_VERSION, "NodePool") is not None
    assert crd_schema(versions.KARPENTER_AWS_API_VERSION, "EC2NodeClass") is not None


def test_inference_pool_node_pool_exact_body():
    pool = pool_of("g6.2xlarge", min_nodes=1, max_nodes=4, role="inference")
    body = ko.node_pool(kpool(pool, nodes=3))
    assert body == {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": "pool", "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"gpu-platform.io/accelerator": "l4", "gpu-platform.io/gpu-sharing": "exclusive",
                                        "gpu-platform.io/pool": "pool"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "pool"},
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6.2xlarge"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                    ],
                    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                    "expireAfter": "Never",
                    "terminationGracePeriod": "48h",
                },
            },
            "limits": {"nvidia.com/gpu": "3"},
            # Inference default: drift (a new AMI) one node at a time, only in the default window (Saturday
            # 00:00-12:00 UTC): closed from Saturday 12:00 for the 156 hours to the next Saturday.
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30m",
                           "budgets": [{"nodes": "1", "reasons": ["Empty", "Underutilized"]},
                                       {"nodes": "1", "reasons": ["Drifted"]},
                                       {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 12 * * 6",
                                        "duration": "156h"}]},
        },
    }
    validate_manifest(body, "1.34")
    cel_node_pool(body)


def test_training_and_rdma_pools_are_only_consolidated_when_empty():
    assert ko.node_pool(kpool(pool_of("p5.48xlarge", rdma=True)))["spec"]["disruption"]["consolidationPolicy"] == \
        "WhenEmpty"
    assert ko.node_pool(kpool(pool_of("g6e.12xlarge", role="training")))["spec"]["disruption"][
        "consolidationPolicy"] == "WhenEmpty"


@pytest.mark.parametrize(("capacity", "reservation", "expected"), [
    ("ON_DEMAND", None, "on-demand"), ("SPOT", None, "spot"), ("ON_DEMAND", "cr-0123456789abcdef0", "reserved"),
    ("CAPACITY_BLOCK", "cr-0123456789abcdef0", "reserved")])
def test_capacity_type_requirement(capacity, reservation, expected):
    pool = pool_of("p5.48xlarge", spot=capacity == "SPOT")
    body = ko.node_pool(kpool(pool, capacity=capacity, reservation=reservation))
    assert body["spec"]["template"]["spec"]["requirements"][1] == {
        "key": "karpenter.sh/capacity-type", "operator": "In", "values": [expected]}
    validate_manifest(body, "1.34")
    node_class_body = node_class(kpool(pool, capacity=capacity, reservation=reservation))
    if reservation:
        assert node_class_body["spec"]["capacityReservationSelectorTerms"] == [{"id": reservation}]
    else:
        assert "capacityReservationSelectorTerms" not in node_class_body["spec"]
    validate_manifest(node_class_body, "1.34")


def test_user_taints_and_labels_reach_the_node_pool():
    pool = pool_of("g6e.12xlarge", user_labels=(("team", "vision"),), user_taints=(Taint("dedicated", "ml"),
                                                                                   Taint("batch", "", "NoExecute")))
    spec = ko.node_pool(kpool(pool))["spec"]
    assert spec["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
        {"key": "batch", "effect": "NoExecute"}]
    assert spec["template"]["metadata"]["labels"]["team"] == "vision"
    assert spec["limits"] == {"nvidia.com/gpu": "8"}  # 2 nodes x 4 L40S
    validate_manifest(ko.node_pool(kpool(pool)), "1.34")


def test_mig_pool_keeps_its_mig_label():
    pool = pool_of("p5.48xlarge", sharing=Sharing("mig", 1, "1g.10gb"))
    labels = ko.node_pool(kpool(pool))["spec"]["template"]["metadata"]["labels"]
    assert labels["nvidia.com/mig.config"] == "all-1g.10gb"


def test_al2023_node_class_exact_body():
    body = node_class(kpool(pool_of("g6.2xlarge")))
    assert body == {
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": "pool", "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "instanceProfile": "gpu-karpenter-node-profile",
            "subnetSelectorTerms": [{"id": s} for s in SUBNETS],
            "securityGroupSelectorTerms": [{"id": g} for g in GROUPS],
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {
                "volumeSize": "200Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}],
            "metadataOptions": {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                                "httpPutResponseHopLimit": 1, "httpTokens": "required"},
            "tags": {"team": "ml"},
        },
    }
    validate_manifest(body, "1.34")
    cel_node_class(body)


def test_bottlerocket_node_class_selects_bottlerocket_and_keeps_the_os_volume():
    kp = kpool(pool_of("g6.2xlarge"), ami="BOTTLEROCKET_x86_64_NVIDIA", disk=300)
    body = node_class(kp)
    assert body["spec"]["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}]
    assert [m["deviceName"] for m in body["spec"]["blockDeviceMappings"]] == ["/dev/xvda", "/dev/xvdb"]
    assert body["spec"]["blockDeviceMappings"][1]["ebs"]["volumeSize"] == "300Gi"
    # Bottlerocket runs its own NVIDIA device plugin: the operator's stays off those nodes.
    assert ko.node_pool(kp)["spec"]["template"]["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "false"
    validate_manifest(body, "1.34")
    cel_node_class(body)


@pytest.mark.parametrize(("instance_type", "cards"), [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("p4d.24xlarge", 4)])
def test_efa_node_class_interfaces_and_placement_group(instance_type, cards):
    body = node_class(kpool(pool_of(instance_type, rdma=True), disk=500), placement="gpu-train-pg")
    spec = body["spec"]
    assert spec["networkInterfaces"] == [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}] + [
        {"networkCardIndex": card, "deviceIndex": 1, "interfaceType": "efa-only"} for card in range(cards)]
    assert sum(1 for n in spec["networkInterfaces"] if n["interfaceType"] == "efa-only") == \
        catalog.find_shape("aws", instance_type).rdma_interfaces
    assert spec["placementGroupSelector"] == {"name": "gpu-train-pg"}
    assert spec["associatePublicIPAddress"] is False
    validate_manifest(body, "1.34")
    cel_node_class(body)


def test_efa_interfaces_need_an_efa_device():
    with pytest.raises(ValueError, match="at least one EFA interface"):
        ko.efa_network_interfaces(0)


def test_schema_rejects_what_karpenter_would():
    body = node_class(kpool(pool_of("g6.2xlarge")))
    body["spec"]["networkInterfaces"] = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}]
    with pytest.raises(ValueError, match="interfaceType"):
        validate_manifest(body, "1.34")
    pool_body = ko.node_pool(kpool(pool_of("g6.2xlarge")))
    pool_body["spec"]["disruption"]["consolidationPolicy"] = "Always"
    with pytest.raises(ValueError, match="consolidationPolicy"):
        validate_manifest(pool_body, "1.34")


@given(st.integers(0, 6), st.integers(1, 8))
def test_split_keeps_the_minimum_on_a_node_group_and_the_rest_on_karpenter(min_nodes, extra):
    pool = pool_of("g6.2xlarge", min_nodes=min_nodes, max_nodes=min_nodes + extra)
    split = ko.split(pool)
    assert split.baseline_nodes == min_nodes
    assert split.baseline_nodes + split.karpenter_nodes == pool.max_nodes
    assert ko.baseline_pool(pool).max_nodes == min_nodes == ko.baseline_pool(pool).min_nodes


def test_chart_values_exact_and_every_key_in_the_pinned_chart():
    values = ko.chart_values("gpu", "https://ABC.gr7.us-west-2.eks.amazonaws.com", "gpu-interruptions",
                             "gpu-system-1a2b", ko.controller_replicas(3), "us-west-2")
    assert values == {
        "settings": {"clusterName": "gpu", "clusterEndpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
                     "interruptionQueue": "gpu-interruptions"},
        "serviceAccount": {"create": True, "name": "karpenter"},
        "replicas": 2,
        "nodeSelector": {"kubernetes.io/os": "linux", "eks.amazonaws.com/nodegroup": "gpu-system-1a2b"},
        "controller": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                     "limits": {"cpu": "1", "memory": "1Gi"}},
                       # Its region without IMDS, which the pod cannot reach (hop limit 1).
                       "env": [{"name": "AWS_REGION", "value": "us-west-2"}]},
    }
    keys = {}
    text = (KEYS / f"karpenter-{versions.KARPENTER.version}.keys").read_text()
    assert f"# source: aws/karpenter-provider-aws@v{versions.KARPENTER.version}:charts/karpenter/values.yaml\n" in text
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, kind = line.split()[:2]
            keys[key] = kind
    assert unknown_keys(values, keys) == []
    assert versions.KARPENTER.release_args() == {"chart": "oci://public.ecr.aws/karpenter/karpenter",
                                                 "version": "1.14.1"}


def test_one_controller_replica_per_system_node_up_to_two():
    assert [ko.controller_replicas(n) for n in (1, 2, 5)] == [1, 2, 2]


def test_interruption_rules_match_karpenters_cloudformation():
    assert {e: json.loads(ko.event_pattern(e)) for e in ko.INTERRUPTION_EVENTS} == {
        "scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
        "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
        "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
        "instance-state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
        "capacity-reservation-interruption": {
            "source": ["aws.ec2"], "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"]},
    }
    policy = json.loads(ko.queue_policy("arn:aws:sqs:us-west-2:123456789012:q"))
    allow, deny = policy["Statement"]
    assert allow["Principal"] == {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]}
    assert (allow["Action"], allow["Resource"]) == ("sqs:SendMessage", "arn:aws:sqs:us-west-2:123456789012:q")
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_controller_iam_is_scoped_to_the_cluster_and_passes_only_the_node_role():
    lifecycle = json.loads(ko.node_lifecycle_policy("aws", "us-west-2", "gpu"))["Statement"]
    assert [s["Sid"] for s in lifecycle] == [
        "AllowScopedEC2InstanceAccessActions", "AllowScopedEC2LaunchTemplateAccessActions",
        "AllowScopedEC2InstanceActionsWithTags", "AllowScopedResourceCreationTagging", "AllowScopedResourceTagging",
        "AllowScopedDeletion"]
    deletion = lifecycle[-1]
    assert deletion["Action"] == ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"]
    assert deletion["Condition"]["StringEquals"] == {"aws:ResourceTag/kubernetes.io/cluster/gpu": "owned"}
    assert "arn:aws:ec2:us-west-2:*:placement-group/*" in lifecycle[0]["Resource"]
    integration = json.loads(ko.integration_policy("aws", "us-west-2", "123456789012", "gpu",
                                                   "arn:aws:iam::123456789012:role/nodes",
                                                   "arn:aws:sqs:us-west-2:123456789012:q"))["Statement"]
    by_sid = {s["Sid"]: s for s in integration}
    assert by_sid["AllowPassingInstanceRole"]["Resource"] == "arn:aws:iam::123456789012:role/nodes"
    assert by_sid["AllowInterruptionQueueActions"]["Action"] == [
        "sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    assert by_sid["AllowAPIServerEndpointDiscovery"]["Resource"] == "arn:aws:eks:us-west-2:123456789012:cluster/gpu"
    # The stack owns the instance profile: the controller may read it, never create or delete one.
    actions = {a for s in integration for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert "iam:CreateInstanceProfile" not in actions and "iam:DeleteInstanceProfile" not in actions
    assert "iam:GetInstanceProfile" in actions
