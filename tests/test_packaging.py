"""Packaging: ranges for users, exact versions for the repository, a lazy public API, the CI checks."""

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

import gpu_platform
from gpu_platform import provider

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS = PROJECT["optional-dependencies"]
RUNTIME = [Requirement(r) for r in [*PROJECT["dependencies"], *(r for extra in ("aws", "azure", "gcp", "oci",
                                                                                "optimizer") for r in EXTRAS[extra])]]


def constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins exact versions: {line!r}"
            pins[name.lower().replace("_", "-")] = version
    return pins


@pytest.mark.parametrize("requirement", RUNTIME, ids=str)
def test_runtime_dependencies_are_ranges_with_a_lower_bound(requirement):
    operators = {spec.operator for spec in requirement.specifier}
    assert "==" not in operators and "===" not in operators, f"{requirement} pins; exact versions go to constraints.txt"
    assert ">=" in operators, f"{requirement} needs a lower bound (scripts/check-lowest.sh tests it)"
    if requirement.name.startswith("pulumi"):
        assert "<" in operators, f"{requirement}: a Pulumi SDK stays within the major the code supports"


def test_a_different_pulumi_aws_minor_is_allowed():
    aws = next(r for r in RUNTIME if r.name == "pulumi-aws")
    assert "7.48.0" in aws.specifier and "8.0.0" not in aws.specifier


def test_constraints_pin_every_dependency_and_the_environment_matches():
    pins = constraints()
    dev = [Requirement(r) for r in EXTRAS["dev"] if not r.startswith("gpu-platform")]
    for requirement in [*RUNTIME, *dev]:
        assert requirement.name in pins, f"{requirement.name} missing from constraints.txt"
        assert pins[requirement.name] in requirement.specifier, f"{requirement.name}=={pins[requirement.name]}"
    for name in (r.name for r in RUNTIME):  # the test suite runs against the locked versions
        assert metadata.version(name) == pins[name], name


def test_make_and_ci_install_with_the_constraints_and_run_the_checks():
    makefile = (ROOT / "Makefile").read_text()
    assert len(re.findall(r"install .*-c constraints\.txt", makefile)) == 4
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("make test") < ci.index("make check-lowest") < ci.index("make check-consumer")
    for script in ("check-lowest.sh", "check-consumer.sh"):
        assert os.access(ROOT / "scripts" / script, os.X_OK)
    assert "--resolution lowest-direct" in (ROOT / "scripts" / "check-lowest.sh").read_text()


def test_every_served_component_is_exported_from_the_top_level():
    for path in provider.COMPONENTS:
        name = path.split(":")[1]
        assert name in gpu_platform.__all__, name
        assert getattr(gpu_platform, name) is provider.load(path)
        assert f"{name}Args" in gpu_platform.__all__
    assert set(gpu_platform.__all__) <= set(dir(gpu_platform))


def test_every_export_resolves():
    for name in gpu_platform.__all__:
        assert getattr(gpu_platform, name) is not None, name


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'EksClustr'"):
        gpu_platform.EksClustr  # noqa: B018


OTHER_SDKS = {"aws": "pulumi_aws", "gcp": "pulumi_gcp", "azure": "pulumi_azure_native", "oci": "pulumi_oci"}


@pytest.mark.parametrize(("statement", "cloud"), [
    ("from gpu_platform import EksCluster, pool_args, gpu_pool, GpuPool, ConfigError", "aws"),
    ("from gpu_platform import GkeCluster", "gcp"),
    ("from gpu_platform import AksCluster", "azure"),
    ("from gpu_platform import OkeCluster", "oci"),
    ("from gpu_platform import InferenceService, NvidiaGpuStack, pool_args, versions", None),
])
def test_importing_one_clouds_components_imports_no_other_cloud_sdk(statement, cloud):
    code = f"import sys\n{statement}\nprint(sorted(m for m in sys.modules if m in {sorted(OTHER_SDKS.values())}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == repr([OTHER_SDKS[cloud]] if cloud else [])


def test_import_gpu_platform_imports_no_pulumi_sdk():
    code = "import sys, gpu_platform\nprint(sorted(m for m in sys.modules if m.split('.')[0].startswith('pulumi')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
