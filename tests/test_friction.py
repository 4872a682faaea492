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
