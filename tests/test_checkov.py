"""An external policy suite: checkov over every reference stack's manifests.yaml, against a reviewed skip list.

checkov is pinned in the Makefile (CHECKOV_VERSION) and installed by `make test` into an environment of its own,
.venv/tools/checkov (its pins conflict with constraints.txt). It runs offline: --skip-download (no policy metadata
or guidelines from the Prisma Cloud platform), BC_SKIP_MAPPING, and CKV_SKIP_PACKAGE_UPDATE_CHECK (no PyPI version
check); the proxy variables point at a closed local port so that any request it still tried would fail rather
than reach the network. tests/data/checkov-skips.yaml lists the accepted failures, each with its reason.
"""

import fnmatch
import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from conftest import write_planned_stacks

from gpu_platform import plan

ROOT = Path(__file__).resolve().parents[1]
CHECKOV = ROOT / ".venv" / "tools" / "checkov" / "bin" / "checkov"
SKIPS_FILE = ROOT / "tests" / "data" / "checkov-skips.yaml"
STACKS = sorted(plan.discover_stacks())
CHECK_ID = re.compile(r"^CKV2?_K8S_\d+$")
CLOSED_PORT = "http://127.0.0.1:9"


def pinned_version() -> str:
    match = re.search(r"^CHECKOV_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, "the Makefile pins checkov (CHECKOV_VERSION := ...)"
    return match.group(1)


def load_skips() -> list[dict]:
    return yaml.safe_load(SKIPS_FILE.read_text())["skips"]


def offline_env(home: Path) -> dict[str, str]:
    """A clean environment: nothing from the caller's CKV_*/BC_*/PRISMA_* settings or ~/.checkov.yaml."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "BC_SKIP_MAPPING": "TRUE", "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "LOG_LEVEL": "WARNING",
           "NO_PROXY": "", "no_proxy": ""}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[name] = CLOSED_PORT
    return env


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """Every reference stack planned once, then one checkov run over all their manifests.yaml files."""
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV.relative_to(ROOT)} is missing: `make test` installs it (Makefile, CHECKOV_VERSION)")
    out = write_planned_stacks(tmp_path_factory.mktemp("plan"))  # the files of `gpu-platform plan --out`
    files = [out / stack / "manifests.yaml" for stack in STACKS]
    work = tmp_path_factory.mktemp("checkov")  # cwd and HOME: no .checkov.yaml is picked up from either
    command = [str(CHECKOV), "--framework", "kubernetes", "--skip-download", "--output", "json", "--compact",
               *[arg for path in files for arg in ("--file", str(path))]]
    result = subprocess.run(command, cwd=work, env=offline_env(work), capture_output=True, text=True, timeout=300)
    # 0: no failed check, 1: some failed; anything else is checkov's own error.
    assert result.returncode in (0, 1), f"checkov exited {result.returncode}:\n{result.stderr[-4000:]}"
    document = json.loads(result.stdout)
    if isinstance(document, list):  # one report per framework; only kubernetes was asked for
        (document,) = document
    return document


def failures(report) -> dict[tuple[str, str, str], str]:
    """(check id, stack, KIND/NAMESPACE/NAME) -> check name, for every failed check."""
    found = {}
    for check in report["results"]["failed_checks"]:
        stack = Path(check["file_abs_path"]).parent.name
        kind, namespace, name = check["resource"].split(".", 2)  # checkov's id: kind.namespace.name
        found[(check["check_id"], stack, f"{kind}/{namespace}/{name}")] = check["check_name"]
    return found


def covers(entry: dict, check_id: str, stack: str, resource: str, pattern: str) -> bool:
    return (entry["check"] == check_id and stack in entry.get("stacks", STACKS)
            and fnmatch.fnmatchcase(resource, pattern))


def uncovered(found: dict[tuple[str, str, str], str], skips: list[dict]) -> list[str]:
    """One line per failing check and object that no skip covers, with the stacks it fails in."""
    stacks_of: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for (check_id, stack, resource), check_name in sorted(found.items()):
        if not any(covers(entry, check_id, stack, resource, pattern)
                   for entry in skips for pattern in entry["resources"]):
            stacks_of[(check_id, resource, check_name)].append(stack)
    return [f"  {check_id} {resource} ({'every stack' if stacks == STACKS else ', '.join(stacks)}): {name}"
            for (check_id, resource, name), stacks in sorted(stacks_of.items())]


def stale(found: dict[tuple[str, str, str], str], skips: list[dict]) -> list[str]:
    """One line per skip pattern that matches no failure."""
    return [f"  {entry['check']} {pattern}"
            for entry in skips for pattern in entry["resources"]
            if not any(covers(entry, check_id, stack, resource, pattern) for check_id, stack, resource in found)]


def test_skip_list_is_well_formed():
    seen = set()
    for entry in load_skips():
        assert set(entry) <= {"check", "resources", "stacks", "reason"}, entry
        assert CHECK_ID.match(entry["check"]), entry
        assert entry["resources"] and all(isinstance(p, str) for p in entry["resources"]), entry
        # Several entries may skip one check for different reasons, never the same resources twice.
        for pattern in entry["resources"]:
            assert (entry["check"], pattern) not in seen, f"{entry['check']} {pattern}: skipped twice"
            seen.add((entry["check"], pattern))
        for pattern in entry["resources"]:
            assert pattern == "*" or pattern.count("/") == 2, f"{entry['check']}: {pattern!r} is not KIND/NS/NAME"
        assert set(entry.get("stacks", STACKS)) <= set(STACKS), entry
        assert len(entry.get("reason", "").split()) >= 8, f"{entry['check']}: say why, in a sentence"


def test_matching_reports_uncovered_failures_and_stale_skips():
    found = {("CKV_K8S_11", stack, "Deployment/inference/sentiment"): "CPU limits" for stack in STACKS}
    found[("CKV_K8S_43", STACKS[0], "Job/research/train")] = "digest"
    skips = [{"check": "CKV_K8S_11", "resources": ["Deployment/inference/*", "CronJob/x/y"]},
             {"check": "CKV_K8S_43", "resources": ["Job/research/train"], "stacks": STACKS[1:]}]
    assert uncovered(found, skips) == [f"  CKV_K8S_43 Job/research/train ({STACKS[0]}): digest"]
    assert stale(found, skips) == ["  CKV_K8S_11 CronJob/x/y", "  CKV_K8S_43 Job/research/train"]


def test_runs_the_pinned_version_over_every_stack(report):
    assert report["summary"]["checkov_version"] == pinned_version()
    assert report["summary"]["parsing_errors"] == 0, report["results"].get("parsing_errors")
    checked = {Path(c["file_abs_path"]).parent.name
               for key in ("passed_checks", "failed_checks") for c in report["results"].get(key, [])}
    assert checked == set(STACKS)


def test_no_failing_check_outside_the_skip_list(report):
    lines = uncovered(failures(report), load_skips())
    assert not lines, ("checkov failures not in tests/data/checkov-skips.yaml (fix the manifest, or add a skip "
                       "with its reason):\n" + "\n".join(lines))


def test_every_skip_still_matches_a_failure(report):
    lines = stale(failures(report), load_skips())
    assert not lines, ("skips in tests/data/checkov-skips.yaml that match no failure any more (delete them):\n"
                       + "\n".join(lines))
