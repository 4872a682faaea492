"""Every stack with arm64 GPU pools runs only arm64-capable software on them: each Helm release is either recorded as
published for arm64 (`architectures.ARM64_ON_GPU_NODES`) or confined to the system nodes, and each DaemonSet image
the platform renders itself is recorded too."""

from pathlib import Path

import pytest
import yaml

from gpu_platform import architectures, catalog, config, plan

RELEASE = "kubernetes:helm.sh/v3:Release"

RACK_STACK = {"config": {
    "gpu-platform:cloud": "existing",
    "gpu-platform:networkPolicyEnforced": True,
    "gpu-platform:inference": {"image": "registry.example/sentiment:arm64"},
    "gpu-platform:nodePools": [{"name": "rack", "gpuModel": "gb200", "gpusPerNode": 4, "nvlinkDomainGpus": 72,
                                "maxNodes": 18, "rdma": True, "role": "training"}],
    "gpu-platform:teams": [{"name": "research", "gpuQuota": 72}],
}}


def arm64_stacks() -> dict[str, Path]:
    """The reference stacks with an arm64 pool."""
    found = {}
    for stack, path in plan.discover_stacks().items():
        parsed = config.parse_config(config.strip_namespace(plan.load_stack_file(path)), stack)
        if any(p.architecture == catalog.ARM64 for p in parsed.gpu_pools()):
            found[stack] = path
    return found


@pytest.fixture(scope="module")
def rack_stack(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("arm64") / "Pulumi.rack.yaml"
    path.write_text(yaml.safe_dump(RACK_STACK))
    return path


def unrecorded(result) -> list[str]:
    problems = []
    for resource in plan.plan_json(result)["resources"]:
        if resource["type"] == RELEASE:
            chart = resource["inputs"]["chart"]
            if chart not in architectures.ARM64_ON_GPU_NODES and chart not in architectures.SYSTEM_NODES_ONLY:
                problems.append(f"release {chart}")
    for obj in result.manifests:
        if obj["kind"] == "DaemonSet":
            for container in obj["spec"]["template"]["spec"]["containers"]:
                image = container["image"].split("@")[0]
                if image not in architectures.ARM64_ON_GPU_NODES:
                    problems.append(f"DaemonSet {obj['metadata']['name']} image {image}")
    return problems


def test_an_existing_cluster_rack_runs_only_arm64_software(rack_stack):
    result = plan.plan_stack("rack", rack_stack)
    assert result.errors == []
    charts = {r["inputs"]["chart"] for r in plan.plan_json(result)["resources"] if r["type"] == RELEASE}
    assert {"gpu-operator", "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
            "network-operator", "kube-prometheus-stack"} <= charts
    assert unrecorded(result) == []


def test_reference_stacks_include_arm64_racks():
    assert len(arm64_stacks()) >= 4


@pytest.mark.parametrize("stack", sorted(arm64_stacks()))
def test_arm64_reference_stacks_run_only_arm64_software(stack):
    result = plan.plan_stack(stack, arm64_stacks()[stack])
    assert result.errors == []
    assert unrecorded(result) == []


def test_an_unrecorded_chart_is_caught(rack_stack, monkeypatch):
    monkeypatch.delitem(architectures.ARM64_ON_GPU_NODES, "network-operator")
    assert unrecorded(plan.plan_stack("rack", rack_stack)) == ["release network-operator"]
