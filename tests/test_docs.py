"""Documentation that cannot drift: generated pages are current, every accepted configuration key is in the
reference, README code examples run, links resolve, and the two set-up commands stay as they are."""

import dataclasses
import importlib
import re
from pathlib import Path

import pytest

from gpu_platform import catalog, config, control_plane, generate, node_pools
from gpu_platform.autoscaling import autoscaling_config
from gpu_platform.docgen import config_reference
from gpu_platform.docgen.accepted_keys import key_checks
from gpu_platform.monitoring import monitoring_config
from gpu_platform.optimizer import optimizer_config
from gpu_platform.scheduling import scheduling_config
from gpu_platform.serving import gateway_config, inference_config, llm_config
from gpu_platform.testing import run_program
from gpu_platform.training import training_config
from gpu_platform.upgrades import maintenance, pool_upgrade

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
REFERENCE = (ROOT / "docs" / "configuration.md").read_text()
MATRIX = (ROOT / "docs" / "support-matrix.md").read_text()
CLOUDS = ("aws", "azure", "gcp", "oci", "existing")


def test_generated_pages_are_current():
    outdated = generate.stale(ROOT, only=["docs/configuration.md", "docs/support-matrix.md", "docs/components.md",
                                          "README.md"])
    assert outdated == [], (f"stale generated documentation {outdated}: regenerate with "
                            f"`.venv/bin/{generate.COMMAND}` and commit the result")


# ---------------------------------------------------------------------------------------------------------
# Configuration reference


def documented(anchor: str) -> set[str]:
    """Keys in the table under ``<a id="anchor">`` of docs/configuration.md."""
    start = REFERENCE.index(f'<a id="{anchor}"></a>')
    end = REFERENCE.find('<a id="', start + 1)
    section = REFERENCE[start:end if end > 0 else None]
    return set(re.findall(r"^\| `([A-Za-z]+)` \|", section, re.MULTILINE))


def _options(cloud: str):
    return importlib.import_module(f"gpu_platform.clouds.{cloud}.options")


def _checked(module, function: str) -> set[str]:
    return {k for c in key_checks(module) if c.function == function and c.keys for k in c.keys}


PARSED_IN = {
    "monitoring": monitoring_config,
    "scheduling": scheduling_config,
    "inference": inference_config,
    "optimizer": optimizer_config,
    "autoscaling": autoscaling_config,
    "training": training_config,
}
"""The feature module whose ``parse_<section>`` parses each top-level section of `config_reference.SECTIONS`
(`config` only composes them)."""

EXPECTED_SECTIONS = {
    "top-level-keys": lambda: config.TOP_LEVEL_KEYS,
    "nodepools": lambda: config.POOL_KEYS,
    "nodepools-sharing": lambda: _checked(node_pools, "parse_sharing"),
    "nodepools-taints": lambda: _checked(node_pools, "parse_taint"),
    # A team's keys: the namespace's and totals in one table, its Kueue queue's in the next, preemption below it.
    "teams": lambda: _checked(scheduling_config, "parse_team") - set(scheduling_config.QUEUE_KEYS),
    "teams-kueue": lambda: set(scheduling_config.QUEUE_KEYS),
    "teams-preemption": lambda: _checked(scheduling_config, "_parse_preemption"),
    **{name: (lambda n=name: _checked(PARSED_IN[n], f"parse_{n}")) for name in config_reference.SECTIONS},
    "llm": lambda: _checked(llm_config, "parse_llm"),
    "gateway": lambda: _checked(gateway_config, "parse_gateway"),
    # The managed clouds' shared API-endpoint and Secrets keys have their own table.
    **{f"{cloud}-cluster": (lambda c=cloud: set(_options(c).CLUSTER_KEYS) - control_plane.KEYS) for cloud in CLOUDS},
    "control-plane": lambda: control_plane.KEYS,
    **{f"{cloud}-pools": (lambda c=cloud: _options(c).POOL_KEYS) for cloud in CLOUDS},
    "gcp-pools-n1": lambda: {"gpuCount"},
    "gcp-systempool": lambda: _options("gcp").SYSTEM_POOL_KEYS,
    "nodepools-upgrade": lambda: _checked(pool_upgrade, "parse_pool_upgrade"),
    "maintenance-window": lambda: _checked(maintenance, "parse_window"),
}


@pytest.mark.parametrize("anchor", sorted(EXPECTED_SECTIONS))
def test_every_accepted_key_is_in_the_reference(anchor):
    accepted = set(EXPECTED_SECTIONS[anchor]())
    assert accepted, anchor
    assert documented(anchor) == accepted


def test_every_key_check_of_the_parsers_is_a_documented_section():
    """A parser section with a check_keys call the reference does not know would go undocumented."""
    assert dict(config_reference.SECTIONS) == PARSED_IN
    sections = {scheduling_config: {"parse_team", "_parse_preemption"}}
    for name, module in PARSED_IN.items():
        sections.setdefault(module, set()).add(f"parse_{name}")
    computed = {"_parse"}  # TOP_LEVEL_KEYS
    how = "add a Section for it in gpu_platform/docgen/config_reference.py and an entry in EXPECTED_SECTIONS"
    checks = key_checks(config)
    assert {c.function for c in checks if c.keys is not None} == set(), how  # config only composes the parsers
    assert {c.function for c in checks if c.keys is None} == computed, how
    # Each feature's section module: every check_keys call is a documented section's parser.
    for module, functions in sections.items():
        feature_checks = key_checks(module)
        assert {c.function for c in feature_checks if c.keys is not None} == functions, (module.__name__, how)
        assert {c.function for c in feature_checks if c.keys is None} == set(), (module.__name__, how)
    # The nodePools[] entry parser: POOL_KEYS plus the cloud's keys, and its sharing and taints sections.
    pool_checks = key_checks(node_pools)
    assert {c.function for c in pool_checks if c.keys is not None} == {"parse_sharing", "parse_taint"}, how
    assert {c.function for c in pool_checks if c.keys is None} == {"parse_node_pool"}, how
    for cloud in CLOUDS:
        nested = {c.function for c in key_checks(_options(cloud))}
        assert nested == ({"_parse_system_pool"} if cloud == "gcp" else set()), (cloud, how)


def test_documented_sections_are_accepted_by_the_parser():
    """Each key of a documented section is accepted where the reference puts it (no 'unknown key' error)."""
    raw = config_reference.minimal_raw("aws")
    for key in _checked(monitoring_config, "parse_monitoring"):
        value = {"enabled": True, "retention": "15d", "storageSize": "50Gi", "grafanaAdminPassword": "x"}[key]
        config.parse_config({**raw, "monitoring": {key: value}}, "docs")
    with pytest.raises(config.ConfigError, match="monitoring.retentoin: unknown key; did you mean 'retention'"):
        config.parse_config({**raw, "monitoring": {"retentoin": "15d"}}, "docs")


def row(key: str, anchor: str) -> str:
    start = REFERENCE.index(f'<a id="{anchor}"></a>')
    return re.search(rf"^\| `{key}` \|.*$", REFERENCE[start:], re.MULTILINE).group(0)


def test_reference_defaults_come_from_the_parser():
    assert "| `15d` |" in row("retention", "monitoring")
    assert "required on aws, azure, gcp, oci" in row("region", "top-level-keys")
    assert "required on oci |" in row("compartmentId", "top-level-keys")
    assert "aws: `device-plugin`; azure: `device-plugin`; gcp: `cloud-managed`; oci: `cloud-managed`; " \
           "existing: `operator`" in row("gpuSoftware", "top-level-keys")
    assert "| required |" in row("name", "teams")
    assert "| `NoSchedule` |" in row("effect", "nodepools-taints")
    assert "| list of strings | `[]` |" in row("subnetIds", "aws-pools")
    assert "| `512` |" in row("bootVolumeSizeGiB", "oci-pools")
    assert "| `[]` |" in row("teams", "top-level-keys")


@dataclasses.dataclass(frozen=True)
class _Undocumented:
    documented_key: int = 1
    """Has a docstring."""
    bare_key: int = 2


def test_a_key_without_a_docstring_cannot_be_documented():
    section = config_reference.Section("x", "x", "x", _Undocumented, ("documentedKey", "bareKey"), ("aws",),
                                       lambda c: None)
    assert config_reference.key_doc(section, "documentedKey") == "Has a docstring."
    with pytest.raises(LookupError, match="_Undocumented.bare_key .key 'bareKey'. has no docstring"):
        config_reference.key_doc(section, "bareKey")
    with pytest.raises(LookupError, match="key 'sizeGiB' has no field 'size_gib'.*FIELD_ALIASES"):
        config_reference.key_doc(section, "sizeGiB")


# ---------------------------------------------------------------------------------------------------------
# Support matrix


def test_support_matrix_lists_every_catalogued_shape():
    for cloud, name in catalog.SHAPES:
        assert f"| `{name}` |" in MATRIX, (cloud, name)


def test_support_matrix_follows_the_configuration_rules():
    assert "| GCP | `device-plugin` |" not in MATRIX  # refused on GKE
    assert "Refused: GCP `device-plugin`" in MATRIX
    sharing = {line.split("|")[1].strip() + " " + line.split("|")[2].strip(): line
               for line in MATRIX.splitlines() if line.startswith("| ") and "`gpuSoftware`" not in line}
    assert sharing["Azure `cloud-managed`"].split("|")[6].strip() == "yes"  # AKS partitions MIG itself
    assert sharing["AWS `cloud-managed`"].split("|")[6].strip().startswith("no")
    assert sharing["GCP `cloud-managed`"].split("|")[4].strip() == "yes"  # GKE time-sharing


# ---------------------------------------------------------------------------------------------------------
# README


SETUP = """## Set-up: two commands

On a fresh machine with Python >= 3.10 and `make` (each command creates `.venv` on first use):

```bash
make plan   # installs the library + cloud SDKs, plans every reference stack offline into build/plan/
make test   # installs the test tools (pytest, torch 2.13.0 CPU, Debian's prometheus, checkov), runs the suite
```
"""


def test_readme_keeps_the_two_setup_commands():
    assert SETUP in README
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^plan: ", makefile, re.MULTILINE) and re.search(r"^test: ", makefile, re.MULTILINE)


def test_readme_covers_what_users_need():
    assert "```mermaid\nflowchart" in README
    for text in ("pulumi login", "pulumi stack select", "AWS_PROFILE", "az login",
                 "gcloud auth application-default login", "oci setup config", "gpu-platform plan", "--diagram",
                 "gpu-platform optimize", "benchmarks/plan_scale.py", "benchmarks/optimizer_queries.py",
                 "examples/inference-app/bench.py", "pulumi package add"):
        assert text in README, text


def code_block(text: str, marker: str) -> str:
    match = re.search(rf"<!-- example: {marker} -->\n```python\n(.*?)```", text, re.DOTALL)
    assert match, marker
    return match.group(1)


def test_readme_compose_example_runs():
    source = code_block(README, "compose")
    rec = run_program(lambda: exec(compile(source, "README.md", "exec"), {}), stack="dev")
    patches = rec.of_type("kubernetes:core/v1:NodePatch")
    assert sorted(p.inputs["metadata"]["name"] for p in patches) == ["gpu-01", "gpu-02"]
    assert patches[0].inputs["metadata"]["labels"]["nvidia.com/mig.config"] == "all-3g.40gb"
    assert rec.one("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue").inputs["metadata"]["namespace"] == "vision"
    quota = rec.one("kubernetes:core/v1:ResourceQuota").inputs["spec"]["hard"]
    assert quota["requests.nvidia.com/gpu"] == "8"


def test_readme_testing_example_passes():
    namespace: dict = {}
    exec(compile(code_block(README, "testing"), "README.md", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert tests
    for test in tests:
        test()


def test_examples_readme_snippet_runs():
    text = (ROOT / "examples" / "README.md").read_text()
    source = re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)
    namespace: dict = {}
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        exec(compile(source, "examples/README.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    assert namespace["rec"].named("train-h100-efa-nodes").inputs["instanceTypes"] == ["p5.48xlarge"]


MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*/README.md")),
            ROOT / "examples" / "README.md"]


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    text = path.read_text()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (path.parent / target).exists(), f"{path.relative_to(ROOT)} links to missing {target}"


def test_readme_links_every_docs_page():
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in README, f"link docs/{page.name} from the README's Documentation table"


def test_generated_section_markers_are_required():
    with pytest.raises(ValueError, match="missing markers <!-- generated:x -->"):
        generate.replace_section("no markers here", "x", "body")
    text = "a <!-- generated:x -->\nold\n<!-- /generated:x --> b"
    assert generate.replace_section(text, "x", "new\n") == "a <!-- generated:x -->\nnew\n<!-- /generated:x --> b"


def test_stack_file_json_schema_accepts_every_reference_stack_and_catches_typos():
    import glob

    import jsonschema
    import yaml

    from gpu_platform.docgen import stack_schema

    validator = jsonschema.Draft202012Validator(stack_schema.schema())
    for path in sorted(glob.glob(str(ROOT / "stacks" / "Pulumi.*.yaml"))):
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(Path(path).read_text(encoding="utf-8")))]
        assert errors == [], f"{path}: {errors}"
    typo = {"config": {"gpu-platform:cloud": "aws", "gpu-platform:nodePools": [{"name": "a", "instanceTyp": "p5"}]}}
    assert [e.message for e in validator.iter_errors(typo)] == [
        "Additional properties are not allowed ('instanceTyp' was unexpected)"]
    wrong = {"config": {"gpu-platform:cloud": "aws", "gpu-platform:nodePools": [{"name": "a", "maxNodes": "two"}]}}
    assert list(validator.iter_errors(wrong)), "maxNodes 'two' must fail"
