"""Violating plans for every GPU guardrail: a reference stack's plan.json with one thing broken.

Shared by tests/test_guardrails.py (the rules over plans, ``gpu-platform policy check``) and
tests/test_policy_pack.py (the same plans through the policy pack, served by pulumi-policy). Each `Case` names the
rule it breaks and the resource the violation must name; ``break_plan`` edits a deep copy of the plan document.
"""

import base64
import copy
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    id: str
    rule: str
    stack: str
    resource: str
    """The resource the violation names (plan.json's ``name``)."""
    edit: Callable[[dict], None]
    """Changes the document in place (a deep copy)."""
    policy_config: dict | None = None

    def break_plan(self, document: dict) -> dict:
        broken = copy.deepcopy(document)
        self.edit(broken)
        return broken


def resource(document: dict, name: str) -> dict:
    return next(r for r in document["resources"] if r["name"] == name)


def inputs(document: dict, name: str) -> dict:
    return resource(document, name)["inputs"]


def _drop(name: str, *path: str) -> Callable[[dict], None]:
    def edit(document: dict) -> None:
        props = inputs(document, name)
        for key in path[:-1]:
            props = props[key]
        del props[path[-1]]
    return edit


def _set(name: str, value, *path: str) -> Callable[[dict], None]:
    def edit(document: dict) -> None:
        props = inputs(document, name)
        for key in path[:-1]:
            props = props[key]
        props[path[-1]] = value
    return edit


def _remove_resource(name: str) -> Callable[[dict], None]:
    def edit(document: dict) -> None:
        document["resources"].remove(resource(document, name))
    return edit


def _oke_without_taints(document: dict) -> None:
    metadata = inputs(document, "oci-dev-a10-infer-nodes")["nodeMetadata"]
    cloud_init = base64.b64decode(metadata["user_data"]).decode()
    metadata["user_data"] = base64.b64encode(
        cloud_init.replace("--register-with-taints=nvidia.com/gpu=present:NoSchedule", "").encode()).decode()


def _add_dra_driver(document: dict) -> None:
    """aws-dev gains NVIDIA's DRA driver with no node selector: its kubelet plugin lands on every GPU pool, which the
    device plugin chart serves too."""
    release = copy.deepcopy(resource(document, "aws-dev-nvidia-nvidia-device-plugin"))
    name = "aws-dev-nvidia-dra-driver"
    release.update(name=name, urn=release["urn"].rsplit("::", 1)[0] + f"::{name}")
    release["inputs"] = {"chart": "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
                         "namespace": "gpu-operator", "version": "0.4.1",
                         "values": {"resources": {"gpus": {"enabled": True}}}}
    document["resources"].append(release)


def _two_zones(document: dict) -> None:
    inputs(document, "aws-dev-h100-train-nodes")["subnetIds"].append("subnet-aws-dev-private-us-west-2b")


def _workload_by_tag(document: dict) -> None:
    deployment = inputs(document, "aws-dev-inference-deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "docker.io/library/busybox:1.37"


PRIVILEGED = "privileged"

CASES: tuple[Case, ...] = (
    # gpu-pool-taint: every cloud's pool resource, and a taint of the wrong effect
    Case("eks-node-group", "gpu-pool-taint", "aws-dev", "aws-dev-h100-train-nodes",
         _drop("aws-dev-h100-train-nodes", "taints")),
    Case("eks-prefer-no-schedule", "gpu-pool-taint", "aws-dev", "aws-dev-l4-infer-nodes",
         _set("aws-dev-l4-infer-nodes", [{"effect": "PREFER_NO_SCHEDULE", "key": "nvidia.com/gpu",
                                          "value": "present"}], "taints")),
    Case("gke-node-pool", "gpu-pool-taint", "gcp-dev", "gcp-dev-l4-infer-pool",
         _drop("gcp-dev-l4-infer-pool", "nodeConfig", "taints")),
    Case("aks-agent-pool", "gpu-pool-taint", "azure-dev", "azure-dev-a100-spot-pool",
         _set("azure-dev-a100-spot-pool", ["kubernetes.azure.com/scalesetpriority=spot:NoSchedule"], "nodeTaints")),
    Case("oke-node-pool", "gpu-pool-taint", "oci-dev", "oci-dev-a10-infer-nodes", _oke_without_taints),
    Case("karpenter-node-pool", "gpu-pool-taint", "aws-karpenter", "aws-karpenter-karpenter-l4-infer-node-pool",
         _set("aws-karpenter-karpenter-l4-infer-node-pool", [], "spec", "template", "spec", "taints")),
    Case("existing-nodes", "gpu-pool-taint", "existing", "existing-h100-train-gpu-node-11",
         _drop("existing-h100-train-gpu-node-11", "spec", "taints"),
         {"network-policies-enforced": {"engineOutsideStack": True}}),
    Case("neuron-node-group", "gpu-pool-taint", "aws-neuron", "aws-neuron-inf2-infer-nodes",
         _drop("aws-neuron-inf2-infer-nodes", "taints")),
    # single-gpu-allocator
    Case("operator-on-dra-pool", "single-gpu-allocator", "aws-gb200", "aws-gb200-gb200-train-nodes",
         _drop("aws-gb200-gb200-train-nodes", "labels", "nvidia.com/gpu.deploy.device-plugin")),
    Case("gke-plugin-on-dra-pool", "single-gpu-allocator", "gcp-a4x", "gcp-a4x-gb200-train-pool",
         _drop("gcp-a4x-gb200-train-pool", "nodeConfig", "labels", "gke-no-default-nvidia-gpu-device-plugin")),
    Case("dra-driver-everywhere", "single-gpu-allocator", "aws-dev", "aws-dev-l4-infer-nodes", _add_dra_driver),
    # rdma-pool-placement
    Case("efa-two-zones", "rdma-pool-placement", "aws-dev", "aws-dev-h100-train-nodes", _two_zones),
    Case("efa-no-placement", "rdma-pool-placement", "aws-dev", "aws-dev-h100-train-nodes",
         _drop("aws-dev-h100-train-lt", "capacityReservationSpecification")),
    Case("karpenter-efa-no-placement", "rdma-pool-placement", "aws-karpenter",
         "aws-karpenter-karpenter-h100-train-node-class",
         _drop("aws-karpenter-karpenter-h100-train-node-class", "spec", "placementGroupSelector")),
    Case("gke-rdma-two-zones", "rdma-pool-placement", "gcp-dev", "gcp-dev-h100-train-pool",
         _set("gcp-dev-h100-train-pool", ["us-central1-b", "us-central1-c"], "nodeLocations")),
    Case("gke-rdma-not-compact", "rdma-pool-placement", "gcp-dev", "gcp-dev-h100-train-pool",
         _drop("gcp-dev-h100-train-pool", "placementPolicy")),
    Case("aks-infiniband-zones", "rdma-pool-placement", "azure-dev", "azure-dev-h100-train-pool",
         _set("azure-dev-h100-train-pool", ["1", "2"], "availabilityZones")),
    Case("oke-roce-no-compute-cluster", "rdma-pool-placement", "oci-dev", "oci-dev-h100-train-nodes",
         _drop("oci-dev-h100-train-nodes", "nodeConfigDetails", "computeClusterId")),
    # image-digest
    Case("image-by-tag", "image-digest", "aws-dev", "aws-dev-inference-deployment", _workload_by_tag),
    # network-policies-enforced
    Case("eks-without-agent", "network-policies-enforced", "aws-dev", "aws-dev-eks",
         _set("aws-dev-vpc-cni", "{}", "configurationValues")),
    Case("aks-without-policy", "network-policies-enforced", "azure-dev", "azure-dev-aks",
         _drop("azure-dev-aks", "networkProfile", "networkPolicy")),
    Case("gke-legacy-datapath", "network-policies-enforced", "gcp-dev", "gcp-dev-cluster",
         _drop("gcp-dev-cluster", "datapathProvider")),
    Case("oke-without-calico", "network-policies-enforced", "oci-dev", "oci-dev-oke",
         _remove_resource("oci-dev-network-policy-daemon-set-calico-node")),
    # the existing cluster's plan without the engine its stack declares (policyConfig, from networkPolicyEnforced)
    Case("existing-undeclared", "network-policies-enforced", "existing", "existing-health-allow-api-server",
         lambda document: document.pop("policyConfig")),
    # team-pod-security
    Case("team-privileged", "team-pod-security", "aws-dev", "aws-dev-team-product-ns",
         _set("aws-dev-team-product-ns", PRIVILEGED, "metadata", "labels", "pod-security.kubernetes.io/enforce")),
    Case("team-unenforced", "team-pod-security", "gcp-dev", "gcp-dev-team-research-ns",
         _drop("gcp-dev-team-research-ns", "metadata", "labels", "pod-security.kubernetes.io/enforce")),
    # kueue-flavor-pools
    Case("flavor-names-no-pool", "kueue-flavor-pools", "aws-dev", "aws-dev-scheduling-flavor-l4-spot",
         _set("aws-dev-scheduling-flavor-l4-spot", "l4-spt", "spec", "nodeLabels", "gpu-platform.io/pool")),
    Case("flavor-wrong-accelerator", "kueue-flavor-pools", "gcp-tpu", "gcp-tpu-scheduling-flavor-v6e-train",
         _set("gcp-tpu-scheduling-flavor-v6e-train", "tpu-v5p", "spec", "nodeLabels",
              "gpu-platform.io/accelerator")),
)
"""At least one violating plan per rule; several where each cloud spells the resource its own way."""
