"""The component package other Pulumi languages consume: the inferred schema against its checked-in snapshot,
the served component list, schema-expressible args, the plugin files, and components built through the provider's
construct path (the way a TypeScript or YAML program builds them)."""

import importlib
import inspect
import json
import pkgutil
import re
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import pulumi
import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider

import gpu_platform
from gpu_platform import generate, provider
from gpu_platform.testing import run_program

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "provider" / "schema.json"


@pytest.fixture(scope="module")
def schema():
    return provider.schema()


def test_schema_snapshot_is_current(schema):
    """A change of any component's inputs or outputs shows in review as a diff of provider/schema.json."""
    checked_in = json.loads(SNAPSHOT.read_text())
    if provider.schema_text(schema) != SNAPSHOT.read_text():
        changes = provider.schema_changes(checked_in, schema) or ["descriptions or ordering only"]
        pytest.fail("provider/schema.json is stale; regenerate it with "
                    f"`.venv/bin/{generate.COMMAND}` and review these changes (BREAKING ones break other-language "
                    "programs):\n  " + "\n  ".join(changes))


def test_schema_names_the_package_and_its_dependencies(schema):
    assert (schema["name"], schema["namespace"], schema["version"]) == ("gpuplatform", "gpu-platform",
                                                                         gpu_platform.__version__)
    dependencies = {d["name"]: d["version"] for d in schema["dependencies"]}
    assert dependencies["kubernetes"] == version("pulumi-kubernetes")
    assert dependencies["aws"] == version("pulumi-aws")


def test_every_served_component_is_a_component_resource_in_the_schema(schema):
    for path in provider.COMPONENTS:
        cls = provider.load(path)
        resource = schema["resources"][f"gpuplatform:index:{cls.__name__}"]
        assert resource["isComponent"] is True
        assert resource["description"] == cls.__doc__.strip()
        assert resource["inputProperties"], f"{cls.__name__} has no inputs in the schema"
    assert len(schema["resources"]) == len(provider.COMPONENTS)


def test_pool_spec_is_one_shared_type(schema):
    spec = schema["types"]["gpuplatform:index:GpuPoolSpec"]
    assert spec["properties"]["gpusPerNode"]["type"] == "integer"
    labels = spec["properties"]["labels"]
    assert (labels["type"], labels["additionalProperties"]["type"]) == ("object", "string")
    assert labels["description"] == "User node labels."
    nvidia = schema["resources"]["gpuplatform:index:NvidiaGpuStack"]["inputProperties"]["pools"]
    assert nvidia["items"]["$ref"] == "#/types/gpuplatform:index:GpuPoolSpec"


def test_outputs_reference_the_cloud_resources(schema):
    eks = schema["resources"]["gpuplatform:index:EksCluster"]["properties"]
    assert eks["cluster"]["$ref"] == f"/aws/v{version('pulumi-aws')}/schema.json#/resources/aws:eks%2Fcluster:Cluster"
    assert eks["kubeconfig"] == {"type": "string"}


COMPONENT_PACKAGES = ("clouds", "kubernetes_base", "security", "accelerators", "scheduling", "monitoring", "serving",
                      "training", "storage", "health", "autoscaling", "optimizer", "upgrades")
"""The packages that define components: the clouds and every feature."""


def _component_classes() -> dict[str, type]:
    """Every ComponentResource defined in the library's cloud layers, its feature packages and the platform."""
    found: dict[str, type] = {}
    package = Path(gpu_platform.__file__).parent
    modules = ["gpu_platform.platform"] + [
        m.name for sub in COMPONENT_PACKAGES
        for m in pkgutil.walk_packages([str(package / sub)], prefix=f"gpu_platform.{sub}.") if not m.ispkg]
    for name in modules:
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, pulumi.ComponentResource) and value.__module__ == name:
                found[f"{name}:{value.__name__}"] = value
    return found


def test_every_component_is_served_or_deliberately_python_only():
    found = set(_component_classes())
    listed = set(provider.COMPONENTS) | set(provider.PYTHON_ONLY)
    assert found - listed == set(), "add new components to gpu_platform.provider.COMPONENTS"
    assert listed - found == set(), "gpu_platform.provider lists components that no longer exist"


@pytest.mark.parametrize("path", provider.COMPONENTS)
def test_served_component_args_are_schema_expressible(path):
    assert provider.schema_problems(provider.load(path)) == []


def test_python_only_platform_takes_a_config_object():
    from gpu_platform.platform import GpuPlatform

    assert "args" not in inspect.signature(GpuPlatform.__init__).parameters


def _module(tmp_path, name: str, source: str):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def test_schema_problems_name_what_the_analyzer_cannot_read(tmp_path):
    module = _module(tmp_path, "bad_components", '''
        from __future__ import annotations
        from typing import Optional, TypedDict
        import pulumi

        class WidgetArgs(TypedDict, total=False):
            size: int

        class Widget(pulumi.ComponentResource):
            def __init__(self, name: str, args: Optional[WidgetArgs] = None, opts=None):
                super().__init__("other:index:Widget", name, {}, opts)
    ''')
    problems = provider.schema_problems(module.Widget)
    assert any("from __future__ import annotations" in p for p in problems)
    assert any("'args' must be annotated with a TypedDict" in p for p in problems)
    assert any("must register as gpuplatform:index:Widget" in p for p in problems)


def test_schema_changes_mark_breaking_ones():
    old = {"resources": {"gpuplatform:index:A": {
        "inputProperties": {"size": {"type": "integer"}, "name": {"type": "string"}},
        "requiredInputs": [], "properties": {"id": {"type": "string"}}}}, "types": {}}
    new = {"resources": {"gpuplatform:index:A": {
        "inputProperties": {"size": {"type": "string"}, "zone": {"type": "string"}},
        "requiredInputs": ["zone"], "properties": {"id": {"type": "string"}, "url": {"type": "string"}}},
        "gpuplatform:index:B": {}}, "types": {}}
    assert provider.schema_changes(old, new) == [
        "added resource gpuplatform:index:B",
        "BREAKING: gpuplatform:index:A input name removed",
        "added gpuplatform:index:A input zone",
        "BREAKING: gpuplatform:index:A input size type integer -> string",
        "added gpuplatform:index:A output url",
        "BREAKING: gpuplatform:index:A zone is now required",
    ]


def test_plugin_directory_hosts_the_components():
    plugin = ROOT / "provider"
    assert yaml.safe_load((plugin / "PulumiPlugin.yaml").read_text()) == {
        "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}}
    entry = (plugin / "__main__.py").read_text()
    assert "from gpu_platform.provider import main" in entry and 'if __name__ == "__main__":' in entry
    requirement = [line for line in (plugin / "requirements.txt").read_text().splitlines()
                   if line and not line.startswith("#")]
    assert requirement == ["..[aws,azure,gcp,oci]"]  # pip runs in provider/: the repository root
    extras = (ROOT / "pyproject.toml").read_text()
    for extra in ("aws", "azure", "gcp", "oci"):
        assert re.search(rf"^{extra} = \[", extras, re.MULTILINE)


def test_host_serves_the_listed_components(monkeypatch):
    """`provider.main` hands every served component, the package name and version to Pulumi's host."""
    import pulumi.provider.experimental as experimental

    seen = {}
    monkeypatch.setattr(experimental, "component_provider_host",
                        lambda components, name, namespace, version: seen.update(
                            components=components, name=name, namespace=namespace, version=version))
    provider.main()
    assert [c.__name__ for c in seen["components"]] == [p.split(":")[1] for p in provider.COMPONENTS]
    assert (seen["name"], seen["namespace"], seen["version"]) == ("gpuplatform", "gpu-platform",
                                                                  gpu_platform.__version__)


# ---------------------------------------------------------------------------------------------------------
# The construct path: what a program in another language triggers. Inputs arrive camelCased, as plain dicts,
# and every number as a float.


def _floats(value):
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


H100_POOL = {"name": "h100", "cloud": "existing", "instanceType": "", "gpuModel": "h100", "gpusPerNode": 8,
             "gpuMemoryGib": 80, "minNodes": 2, "maxNodes": 2, "sharingMode": "exclusive", "sharingReplicas": 1,
             "rdmaFabric": "infiniband", "rdmaInterfaces": 8, "role": "training", "taints": []}
L4_POOL = {"name": "l4", "cloud": "existing", "instanceType": "", "gpuModel": "l4", "gpusPerNode": 4,
           "gpuMemoryGib": 24, "minNodes": 1, "maxNodes": 3, "sharingMode": "time-slicing", "sharingReplicas": 4,
           "role": "inference"}
TEAM = {"name": "research", "gpuQuota": 16, "cpuQuota": 128, "memoryQuotaGib": 1024, "group": "research"}
QUEUE_TEAM = {k: v for k, v in TEAM.items() if k != "group"}
"""The team as its ClusterQueue takes it (the group is its namespace's)."""


@pytest.fixture(scope="module")
def component_provider():
    # The components that need no cloud SDK: every feature's and the existing-cluster layer's.
    classes = [provider.load(p) for p in provider.COMPONENTS
               if not p.startswith("gpu_platform.clouds.") or "existing" in p]
    return ComponentProvider(classes, provider.PACKAGE, provider.NAMESPACE, gpu_platform.__version__)


def _construct(component_provider, token: str, inputs: dict):
    state = {}

    def program():
        result = component_provider.construct("x", f"gpuplatform:index:{token}", _floats(inputs), None)
        state.update(result.state)

    return run_program(program), state


def test_team_namespace_from_another_language(component_provider):
    state = {}

    def program():
        # The ClusterQueue the LocalQueue feeds comes from the program's SchedulingPolicy, constructed first.
        component_provider.construct("p", "gpuplatform:index:SchedulingPolicy",
                                     _floats({"pools": [H100_POOL, L4_POOL], "teams": [QUEUE_TEAM]}), None)
        state.update(component_provider.construct("x", "gpuplatform:index:TeamNamespace",
                                                  _floats({"team": TEAM, "clusterQueue": "research"}), None).state)

    rec = run_program(program)
    quota = rec.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]
    assert quota["requests.nvidia.com/gpu"] == "16" and quota["requests.cpu"] == "128"
    assert rec.one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue").inputs["spec"]["clusterQueue"] == "research"
    assert set(state) == {"namespace", "resourceQuota", "namespaceName"}


def test_scheduling_policy_from_another_language(component_provider):
    rec, _ = _construct(component_provider, "SchedulingPolicy",
                        {"pools": [H100_POOL, L4_POOL], "teams": [QUEUE_TEAM], "kueue": True})
    queue = rec.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue").inputs["spec"]
    quotas = [r["nominalQuota"] for g in queue["resourceGroups"] for f in g["flavors"] for r in f["resources"]
              if r["name"] == "nvidia.com/gpu"]
    assert all(isinstance(q, int) for q in quotas) and sum(quotas) == 16


def test_existing_nodes_and_nvidia_stack_from_another_language(component_provider):
    rec, state = _construct(component_provider, "ExistingGpuNodes",
                            {"pool": H100_POOL, "nodes": ["dgx-01", "dgx-02"]})
    patch = rec.one("kubernetes:core/v1:NodePatch", "x-dgx-01").inputs
    assert patch["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert patch["metadata"]["labels"]["gpu-platform.io/rdma"] == "infiniband"
    rec, _ = _construct(component_provider, "NvidiaGpuStack",
                        {"cloud": "existing", "gpuSoftware": "operator", "pools": [H100_POOL, L4_POOL]})
    config_map = rec.one("kubernetes:core/v1:ConfigMap").inputs["data"]
    assert "replicas: 4" in config_map["l4"]  # time-slicing replicas arrive as 4.0 and stay an integer


def test_other_languages_get_the_same_one_line_errors(component_provider):
    """Through the provider's construct path (what a TypeScript or Go program reaches), a bad input fails with
    the same line a Python program gets."""
    from pulumi.provider.server import ComponentInitError

    with pytest.raises(ComponentInitError, match=re.escape("ExistingGpuNodes x: nodes: lists 1 nodes but "
                                                           "pool.min_nodes is 2")):
        _construct(component_provider, "ExistingGpuNodes", {"pool": H100_POOL, "nodes": ["dgx-01"]})
    with pytest.raises(ComponentInitError, match=re.escape("pool 'h100' is an existing-cluster pool; "
                                                           "NvidiaGpuStack takes AWS pools")):
        _construct(component_provider, "NvidiaGpuStack", {"cloud": "aws", "gpuSoftware": "operator",
                                                          "pools": [H100_POOL]})


def test_yaml_program_example_matches_the_schema(schema):
    """The Pulumi YAML consumer program in docs/other-languages.md names real types, inputs and required ones."""
    text = (ROOT / "docs" / "other-languages.md").read_text()
    block = re.search(r"```yaml\n(# Pulumi\.yaml.*?)```", text, re.DOTALL).group(1)
    program = yaml.safe_load(block)
    assert program["packages"]["gpuplatform"]
    for name, resource in program["resources"].items():
        if not resource["type"].startswith("gpuplatform:"):
            continue
        declared = schema["resources"][resource["type"]]
        unknown = set(resource["properties"]) - set(declared["inputProperties"])
        assert unknown == set(), (name, unknown)
        assert set(declared.get("requiredInputs", [])) <= set(resource["properties"])


def test_inputs_a_component_cannot_do_without_are_required(schema):
    """Other languages see them as required (a missing one is refused before Python runs), not a KeyError."""
    required = {token.rsplit(":", 1)[-1]: set(r.get("requiredInputs", [])) for token, r in schema["resources"].items()}
    assert required["TeamNamespace"] == {"team"}
    assert required["NvidiaGpuStack"] == required["RdmaStack"] == {"cloud"}
    assert required["EksCluster"] == {"region", "kubernetesVersion", "addonVersions"}
    assert required["OkeGpuNodePool"] == {"pool", "clusterId", "compartmentId", "kubernetesVersion", "workerSubnetId",
                                          "podSubnetId", "availabilityDomains"}
    # Pools a cluster component creates get their cluster, role and network from it: only the pool is required.
    assert schema["types"]["gpuplatform:index:EksGpuNodePoolArgs"]["required"] == ["pool"]
    assert required["SchedulingPolicy"] == set()
