#!/usr/bin/env bash
# The library as a separate project uses it: build the wheel, install it NON-editable into a fresh virtual
# environment beside another pulumi-aws minor than the one this repository tests with (inside the supported
# range), copy examples/consumer-project out of the repository and run its tests there (one pytest session: the
# harness and plain pulumi.runtime.set_mocks). Run by .ci/run after `make test`; `make check-consumer` locally.
set -euo pipefail
cd "$(dirname "$0")/.."
UV="${UV:-.venv/bin/uv}"
PYTHON="${PYTHON:-python3}"
OTHER_AWS="${OTHER_AWS:-pulumi-aws==7.48.0}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-platform-consumer.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
start=$SECONDS

"$UV" build --quiet --wheel --out-dir "$WORK/dist" .
wheel="$(ls "$WORK"/dist/gpu_platform-*.whl)"
"$UV" venv --quiet --python "$PYTHON" "$WORK/venv"
# Every other package at the repository's versions; pulumi-aws at another minor.
grep -v '^pulumi-aws==' constraints.txt > "$WORK/constraints.txt"
"$UV" pip install --quiet --compile-bytecode --python "$WORK/venv/bin/python" -c "$WORK/constraints.txt" \
  "gpu-platform[aws,gcp] @ file://$wheel" "$OTHER_AWS" pytest
"$UV" pip freeze --python "$WORK/venv/bin/python" | grep -E '^(gpu-platform|pulumi|pulumi-aws|pulumi-gcp)[=@ ]' \
  | sed 's/^/  /'

cp -r examples/consumer-project "$WORK/project"
cd "$WORK/project"
# The library comes from the installed wheel, not from the repository's source tree.
"$WORK/venv/bin/python" -c '
import sys, gpu_platform
assert "site-packages" in gpu_platform.__file__, gpu_platform.__file__
print("  gpu_platform from", gpu_platform.__file__)'
"$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider tests
echo "consumer check passed in $((SECONDS - start)) s"
