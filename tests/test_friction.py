"""Issue 38's smaller friction: a missing cloud extra is named, keyword arguments work, the README installs from the
project's repository."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_platform.accelerators.nvidia import NvidiaGpuStack
from gpu_platform.clouds import missing_extra
from gpu_platform.errors import ConfigError
from gpu_platform.health.gpu_health import DEFAULT_RUNBOOK_BASE_URL
from gpu_platform.pools import GpuPool
from gpu_platform.scheduling.tenancy import TeamNamespace
from gpu_platform.testing import run_program

ROOT = Path(__file__).resolve().parents[1]
L4 = GpuPool("l4", "aws", "g6.12xlarge", "l4", 4, 24, 0, 3)

# ---------------------------------------------------------------------------------------------------------
# A cloud's components without its extra

MISSING = """
import sys
for sdk in ("pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "pulumi_oci"):
    sys.modules[sdk] = None  # what an environment without the extra gives: the import fails
import gpu_platform
for name in ("EksCluster", "KarpenterAutoscaler", "AksGpuNodePool", "GkeGpuNodePool", "OkeVcn"):
    try:
        getattr(gpu_platform, name)
    except ModuleNotFoundError as err:
        print(err)
from gpu_platform.config import parse_config  # the stack parser needs no cloud SDK
parse_config({"cloud": "aws", "region": "us-east-1",
              "nodePools": [{"name": "l4", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 1}]}, "dev")
print("parsed")
"""


def test_a_missing_cloud_extra_names_the_extra_to_install():
    out = subprocess.run([sys.executable, "-c", MISSING], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "components"), "PATH": ""}).stdout.splitlines()
    assert out == [
        "the AWS components need the pulumi_aws package, which the 'aws' extra installs: pip install "
        "'gpu-platform[aws]'",
        "the AWS components need the pulumi_aws package, which the 'aws' extra installs: pip install "
        "'gpu-platform[aws]'",
        "the Azure components need the pulumi_azure_native package, which the 'azure' extra installs: pip install "
        "'gpu-platform[azure]'",
        "the GCP components need the pulumi_gcp package, which the 'gcp' extra installs: pip install "
        "'gpu-platform[gcp]'",
        "the OCI components need the pulumi_oci package, which the 'oci' extra installs: pip install "
        "'gpu-platform[oci]'",
        "parsed"]


def test_a_module_missing_inside_an_sdk_is_its_own_error():
    err = ModuleNotFoundError("No module named 'grpc'", name="grpc")
    assert missing_extra(err) is err
    sub = missing_extra(ModuleNotFoundError("x", name="pulumi_gcp.container"))
    assert (sub.name, str(sub)) == ("pulumi_gcp.container", "the GCP components need the pulumi_gcp package, which "
                                                            "the 'gcp' extra installs: pip install 'gpu-platform[gcp]'")


def test_every_extra_is_in_the_packaging():
    from gpu_platform.clouds import EXTRAS

    pyproject = (ROOT / "pyproject.toml").read_text()
    for sdk, extra in EXTRAS.items():
        assert re.search(rf'^{extra} = \["{sdk.replace("_", "-")}[>=<]', pyproject, re.M), extra


# ---------------------------------------------------------------------------------------------------------
# Keyword arguments


def test_keyword_arguments_are_the_args_mapping():
    by_keyword = run_program(lambda: NvidiaGpuStack("nv", cloud="aws", pools=[L4.spec()], monitoring=True))
    by_mapping = run_program(lambda: NvidiaGpuStack("nv", {"cloud": "aws", "pools": [L4.spec()], "monitoring": True}))
    mixed = run_program(lambda: NvidiaGpuStack("nv", {"cloud": "aws"}, pools=[L4.spec()], monitoring=True))
    assert [(r.urn, r.inputs) for r in by_keyword] == [(r.urn, r.inputs) for r in by_mapping] == [
        (r.urn, r.inputs) for r in mixed]
    named = run_program(lambda: TeamNamespace(name="ml", args={"team": {"name": "ml", "gpu_quota": 4}}))
    assert named.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]["requests.nvidia.com/gpu"] == "4"


def test_every_served_component_takes_keyword_arguments():
    from gpu_platform import provider
    from gpu_platform.component_args import KeywordArgs

    assert [path for path in provider.COMPONENTS if not isinstance(provider.load(path), KeywordArgs)] == []


OKE_FILE_SYSTEM = {"compartment_id": "ocid1.compartment.oc1..aaaa", "availability_domain": "Uocm:US-ASHBURN-AD-1",
                   "vcn_id": "ocid1.vcn.oc1.iad.aaaa", "subnet_id": "ocid1.subnet.oc1.iad.aaaa",
                   "client_cidr": "10.0.16.0/20", "size_gib": 4096}


@pytest.mark.parametrize(("path", "args"), [
    # A storage component: its DataPlaneStorage mixin base and the metaclass go together.
    ("gpu_platform.clouds.oci.storage_components:OkeSharedFileSystem", OKE_FILE_SYSTEM),
    ("gpu_platform.scheduling.multikueue:MultiKueueManager",
     {"workers": [{"name": "us", "stack": "acme/gpu-platform/worker-us"}]}),
])
def test_keyword_arguments_of_the_storage_and_multikueue_components(path, args):
    from gpu_platform import provider

    cls = provider.load(path)
    by_keyword = run_program(lambda: cls("c", **args))
    by_mapping = run_program(lambda: cls("c", args))
    assert len(by_mapping) > 1
    assert [(r.urn, r.inputs) for r in by_keyword] == [(r.urn, r.inputs) for r in by_mapping]


@pytest.mark.parametrize(("build", "line"), [
    (lambda: NvidiaGpuStack("nv", {"cloud": "aws"}, cloud="gcp"),
     "NvidiaGpuStack nv: cloud: is given twice, as a keyword and in args: give it once"),
    (lambda: NvidiaGpuStack("nv", clod="aws"), "NvidiaGpuStack nv: clod: unknown argument; did you mean 'cloud'?"),
    (lambda: TeamNamespace("ml", team={"name": "ml"}, clusterQueue="ml"),
     "TeamNamespace ml: clusterQueue: unknown argument; arguments are snake_case in Python: use 'cluster_queue' "
     "(camelCase is the stack file's spelling)"),
])
def test_keyword_misuse_is_one_line(build, line):
    with pytest.raises(ConfigError) as err:
        run_program(build)
    assert str(err.value) == line


# ---------------------------------------------------------------------------------------------------------
# The README


def test_the_readme_installs_from_the_projects_repository():
    readme = (ROOT / "README.md").read_text()
    assert "<org>" not in readme
    repository = DEFAULT_RUNBOOK_BASE_URL.removesuffix("/blob/main")
    assert f'pip install "gpu-platform[aws] @ git+{repository}"' in readme


# ---------------------------------------------------------------------------------------------------------
# memoryQuotaGi (stack files) is memory_quota_gib (components): each side names the other's spelling

STACK = {"cloud": "aws", "region": "us-east-1",
         "nodePools": [{"name": "l4", "instanceType": "g6.xlarge", "minNodes": 0, "maxNodes": 1}]}


@pytest.mark.parametrize(("team", "line"), [
    ({"name": "ml", "memoryQuotaGib": 4},
     "dev: teams[0].memoryQuotaGib: unknown key; stack files spell it 'memoryQuotaGi' (the component argument is "
     "'memory_quota_gib')"),
    ({"name": "ml", "memory_quota_gib": 4},
     "dev: teams[0].memory_quota_gib: unknown key; stack files spell it 'memoryQuotaGi' (the component argument is "
     "'memory_quota_gib')"),
    ({"name": "ml", "gpu_quota": 4},
     "dev: teams[0].gpu_quota: unknown key; stack files spell it 'gpuQuota' (the component argument is "
     "'gpu_quota')"),
    ({"name": "ml", "memoryQuotaGi": -1}, "dev: teams[0].memoryQuotaGi: must be >= 0, got -1"),
])
def test_a_stack_file_names_its_own_spelling(team, line):
    from gpu_platform.config import parse_config

    with pytest.raises(ConfigError) as err:
        parse_config({**STACK, "teams": [team]}, "dev")
    assert str(err.value) == line


def test_a_component_names_the_argument_of_a_stack_spelling():
    with pytest.raises(ConfigError) as err:
        run_program(lambda: TeamNamespace("ml", {"team": {"name": "ml", "memoryQuotaGi": 4}}))
    assert str(err.value) == ("TeamNamespace ml: team.memoryQuotaGi: unknown argument; arguments are snake_case in "
                              "Python: use 'memory_quota_gib' (camelCase is the stack file's spelling)")
    from gpu_platform.config import parse_config

    config = parse_config({**STACK, "teams": [{"name": "ml", "memoryQuotaGi": 48}]}, "dev")
    rec = run_program(lambda: TeamNamespace("ml", {"team": {"name": "ml", "memory_quota_gib": 48}}))
    assert config.teams[0].memory_quota_gib == 48
    assert rec.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]["requests.memory"] == "48Gi"


def test_upgrade_arguments_keep_their_own_suggestion():
    from gpu_platform.upgrades.pool_upgrade import upgrade_from_args

    with pytest.raises(ConfigError, match=r"^upgrade.maxSurge: unknown key; did you mean 'max_surge'\?$"):
        upgrade_from_args({"maxSurge": 1}, "upgrade")


# ---------------------------------------------------------------------------------------------------------
# The mocks refuse what the engine refuses


def test_two_resources_with_one_urn_are_refused_as_the_engine_does():
    import pulumi_kubernetes as k8s

    from gpu_platform.testing import DuplicateUrnError

    def program():
        k8s.core.v1.Namespace("team")
        k8s.core.v1.Namespace("team")

    with pytest.raises(DuplicateUrnError) as err:
        run_program(program)
    assert str(err.value) == ("Duplicate resource URN 'urn:pulumi:test::gpu-platform::pulumi:pulumi:Stack$"
                              "kubernetes:core/v1:Namespace::team'; try giving it a unique name")
    twice = run_program(lambda: [k8s.core.v1.Namespace("team"), k8s.core.v1.ConfigMap("team")])
    assert sorted(r.type for r in twice) == ["kubernetes:core/v1:ConfigMap", "kubernetes:core/v1:Namespace"]



def test_the_fixture_refuses_them_too(pulumi_mocks):
    from gpu_platform.testing import DuplicateUrnError

    TeamNamespace("ml", {"team": {"name": "ml", "gpu_quota": 4}})
    TeamNamespace("ml", {"team": {"name": "ml", "gpu_quota": 4}})
    with pytest.raises(DuplicateUrnError) as err:
        pulumi_mocks.finish()
    assert str(err.value) == ("Duplicate resource URN 'urn:pulumi:test::gpu-platform::pulumi:pulumi:Stack$"
                              "gpuplatform:index:TeamNamespace::ml'; try giving it a unique name")


# ---------------------------------------------------------------------------------------------------------
# A TPU slice without zones: each layer names its own key


def test_a_tpu_slice_without_zones_names_the_key_the_user_writes():
    from gpu_platform.clouds.gcp.cluster import GkeCluster
    from gpu_platform.clouds.gcp.options import pool_args
    from gpu_platform.config import parse_config

    slice_pool = {"name": "v6e", "instanceType": "ct6e-standard-4t", "tpuTopology": "4x4", "minNodes": 4,
                  "maxNodes": 4}
    stack = {"cloud": "gcp", "region": "us-east5", "project": "gpu-platform-dev", "nodePools": [slice_pool],
             "inference": {"enabled": False}}
    with pytest.raises(ConfigError) as err:
        parse_config(stack, "dev")
    assert str(err.value) == ("dev: nodePools[0].zones: a multi-host TPU slice (4x4 on ct6e-standard-4t) lives in "
                              "one zone, got GKE default; set zones: [<a zone offering the TPU>]")
    config = parse_config({**stack, "nodePools": [{**slice_pool, "zones": ["us-east5-b"]}]}, "dev")
    entry = pool_args(config.node_pools[0], config.gpu_pools()[0])
    del entry["node_locations"]
    with pytest.raises(ConfigError) as err:
        run_program(lambda: GkeCluster("dev", {"region": "us-east5", "gpu_pools": [entry]}))
    assert str(err.value) == ("GkeCluster dev: gpu_pools[0].node_locations: a multi-host TPU slice lives in one zone, "
                              "got GKE default; set node_locations to one zone")


# ---------------------------------------------------------------------------------------------------------
# Stack names Pulumi accepts (letters, digits, '-', '_' and '.')


def test_a_dotted_stack_name_plans_on_oci_with_the_amd_stack_cert_manager_adopts(tmp_path):
    from gpu_platform.plan import plan_stack

    stack_file = tmp_path / "Pulumi.Team.Oci.yaml"
    stack_file.write_text((ROOT / "stacks" / "Pulumi.oci-mi300x.yaml").read_text())
    plan = plan_stack("Team.Oci", stack_file)
    assert plan.errors == []
    release = plan.recording.one("kubernetes:helm.sh/v3:Release", "Team.Oci-cert-manager-release")
    assert release.inputs["chart"] == "cert-manager"


def test_cert_manager_adopts_a_sibling_named_by_any_pulumi_name():
    from gpu_platform.serving.cert_manager import CertManager

    rec = run_program(lambda: CertManager("Team.Azure-cert-manager", {"replaces_amd_stack": "Team.Azure-amd"}))
    assert rec.one("kubernetes:core/v1:Namespace").name == "Team.Azure-cert-manager-namespace"
    with pytest.raises(ConfigError) as err:
        run_program(lambda: CertManager("cm", {"replaces_amd_stack": ""}))
    assert str(err.value) == "CertManager cm: replaces_amd_stack: must not be empty"


@pytest.mark.parametrize(("cloud", "extra", "line"), [
    ("aws", {"region": "us-east-1"},
     "Team.Azure: the stack name is part of the names of EKS node groups, which take only letters, digits, '-' and "
     "'_': name the stack 'Team-Azure'"),
    ("azure", {"region": "eastus"},
     "Team.Azure: the stack name is part of the names of the AKS cluster and its managed identity, which take only "
     "letters, digits, '-' and '_': name the stack 'Team-Azure'"),
])
def test_a_dotted_stack_name_is_refused_first_where_the_cloud_cannot_name_resources_after_it(cloud, extra, line):
    from gpu_platform.config import parse_config

    # A bad pool too: the stack's name is the first thing refused.
    raw = {"cloud": cloud, **extra, "nodePools": [{"name": "Bad Pool", "instanceType": "nope"}]}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "Team.Azure")
    assert str(err.value) == line
    assert parse_config({**raw, "nodePools": [{"name": "a", "instanceType": "g6.xlarge" if cloud == "aws" else
                                               "Standard_NC24ads_A100_v4", "minNodes": 0, "maxNodes": 1}]},
                        "Team-Azure").cloud == cloud


def test_eks_cluster_names_are_what_eks_takes():
    from gpu_platform.clouds.aws.contract import eks_cluster_name

    assert [eks_cluster_name(n) for n in ("dev", "Team.Azure", "_x.y", "a" * 120)] == [
        "dev", "Team-Azure", "x-y", "a" * 100]


# ---------------------------------------------------------------------------------------------------------
# Every input documented (GkeGpuNodePool's inherited ones included)


def test_every_served_input_and_type_property_has_a_description():
    import json

    schema = json.loads((ROOT / "provider" / "schema.json").read_text())
    missing = [f"{token} {prop}" for token, resource in schema["resources"].items()
               for prop, spec in resource.get("inputProperties", {}).items() if not spec.get("description")]
    missing += [f"{token} {prop}" for token, kind in schema.get("types", {}).items()
                for prop, spec in kind.get("properties", {}).items() if not spec.get("description")]
    assert missing == []
    gke = schema["resources"]["gpuplatform:index:GkeGpuNodePool"]["inputProperties"]
    assert gke["zoneCount"]["description"].startswith("Zones the pool spans when ``node_locations`` is empty")
