#!/usr/bin/env bash
# The lowest versions pyproject.toml allows: a fresh virtual environment with every direct dependency at its
# range's lower bound (uv --resolution lowest-direct), then a short subset: every cloud module imports, one
# reference stack plans offline, and a few tests. Run by .ci/run after `make test`; `make check-lowest` locally.
set -euo pipefail
cd "$(dirname "$0")/.."
UV="${UV:-.venv/bin/uv}"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-platform-lowest.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
start=$SECONDS

"$UV" venv --quiet --python "$PYTHON" "$WORK/venv"
# lowest-direct: the package's own dependencies at their lower bounds, their dependencies as the resolver picks.
# pytest and hypothesis come at the repository's versions (they are tools, not the library's dependencies).
grep -E '^(pytest|hypothesis|iniconfig|pluggy|packaging|sortedcontainers|attrs)==' constraints.txt > "$WORK/tools.txt"
"$UV" pip install --quiet --compile-bytecode --python "$WORK/venv/bin/python" --resolution lowest-direct \
  '.[all]' -r "$WORK/tools.txt"
echo "lowest versions:"
"$UV" pip freeze --python "$WORK/venv/bin/python" \
  | grep -E '^(pulumi|pulumi-[a-z-]+|pyyaml|kubernetes-validate|jsonschema|referencing|typing-extensions)==' \
  | sed 's/^/  /'

# Every cloud module imports (the components and their SDK calls resolve at import time).
"$WORK/venv/bin/python" - <<'PY'
import importlib
import pkgutil

import gpu_platform
from gpu_platform import provider

modules = [info.name for info in pkgutil.walk_packages(gpu_platform.__path__, "gpu_platform.")]
for name in modules:
    importlib.import_module(name)
classes = provider.components()
print(f"imported {len(modules)} modules; {len(classes)} served components load")
PY

# One reference stack planned offline from the project directory, then a few tests.
(cd stacks && "$WORK/venv/bin/gpu-platform" plan aws-dev --out "$WORK/plan")
test -s "$WORK/plan/aws-dev/manifests.yaml"
"$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider \
  tests/test_testing_harness.py tests/test_aws_components.py tests/test_gcp.py tests/test_oci_cluster.py \
  tests/test_azure.py
echo "lowest-direct check passed in $((SECONDS - start)) s"
