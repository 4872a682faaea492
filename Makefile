# Two entry points for a fresh machine (see README): `make plan` and `make test`.
# Each creates the virtual environment on first use; nothing else needs installing by hand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLAN_DIR ?= build/plan
TORCH_VERSION := 2.13.0
# checkov's version (tests/test_checkov.py checks the one it runs against this line); see its target below.
CHECKOV_VERSION := 3.3.30
CHECKOV_RESOLVED_AT := 2026-10-21T00:00:00Z
CHECKOV_VENV := $(VENV)/tools/checkov
# The GPU policy pack's environment (policy/requirements.txt); see its target below.
POLICY_RESOLVED_AT := 2026-11-29T00:00:00Z
POLICY_VENV := $(VENV)/tools/policy

.PHONY: plan test lint bench bench-inference clean check-lowest check-consumer

$(BIN)/uv:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip -c constraints.txt uv

# The library and every cloud SDK (uv installs them in seconds), at the exact versions of constraints.txt (the
# package itself declares ranges; see pyproject.toml). Bytecode is compiled at install time: the
# cloud SDKs are thousands of modules, and environments that set PYTHONDONTWRITEBYTECODE would otherwise
# recompile them on every run (20-30 s per plan instead of 1-3 s).
$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c constraints.txt -e '.[all]'
	touch $@

# checkov for tests/test_checkov.py, in an environment of its own (.venv/tools/checkov): its own pins
# (packaging<24, networkx<2.7, an exact boto3) conflict with constraints.txt. Its dependencies resolve as PyPI had
# them on CHECKOV_RESOLVED_AT (the day after the release), so every machine gets the same tree; bump both together.
$(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION): | $(BIN)/uv
	rm -rf $(CHECKOV_VENV)
	$(BIN)/uv venv --quiet --python $(PYTHON) $(CHECKOV_VENV)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(CHECKOV_VENV)/bin/python \
	  --exclude-newer $(CHECKOV_RESOLVED_AT) checkov==$(CHECKOV_VERSION)
	touch $@

# pulumi-policy for tests/test_policy_pack.py, in an environment of its own (.venv/tools/policy): pulumi-policy
# requires protobuf<5.30, constraints.txt pins protobuf 6. It installs policy/requirements.txt, the list the Pulumi CLI
# installs into the pack's own venv (exact pulumi-policy, pulumi and protobuf, and this repository), from policy/ so
# that its relative path means the same to uv as to pip; the rest resolves as PyPI had it on POLICY_RESOLVED_AT.
$(POLICY_VENV)/.installed: policy/requirements.txt pyproject.toml | $(BIN)/uv
	rm -rf $(POLICY_VENV)
	$(BIN)/uv venv --quiet --python $(PYTHON) $(POLICY_VENV)
	cd policy && ../$(BIN)/uv pip install --quiet --compile-bytecode --python ../$(POLICY_VENV)/bin/python \
	  --exclude-newer $(POLICY_RESOLVED_AT) -r requirements.txt
	touch $@

# Test tools, the inference app's stack, promtool, checkov, pulumi-policy. torch goes through pip on purpose: pip
# honours the machine's pip configuration (a local CPU wheel where one is provided); uv does not.
$(VENV)/.installed-dev: $(VENV)/.installed $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION) \
  $(POLICY_VENV)/.installed
	$(BIN)/python -m pip install --quiet --compile -c constraints.txt torch==$(TORCH_VERSION)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c constraints.txt -e '.[dev]'
	bash scripts/ensure-promtool.sh
	touch $@

plan: $(VENV)/.installed
	$(BIN)/gpu-platform plan --out $(PLAN_DIR)

# The suite on every core (pytest-xdist), each test file whole on one worker: a file's module fixtures (a server,
# a checkov run) start once, and the reference stacks' shared plans (tests/conftest.py) are planned once per worker.
# docs/testing.md, "How long the suite takes". A plain `pytest` runs serially, as before.
test: $(VENV)/.installed-dev
	$(BIN)/ruff check components tests examples benchmarks stacks policy
	$(BIN)/pytest -n auto --dist loadfile

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/plan_scale.py

# The inference app against its raw ceiling and a naive Flask + pipeline server (examples/inference-app/README.md,
# "Benchmark"): about 6 minutes per model on 2 cores; SIZES=tiny for one model.
SIZES ?= tiny mini
bench-inference: $(VENV)/.installed-dev
	for size in $(SIZES); do $(BIN)/python examples/inference-app/bench.py --size $$size || exit 1; done

# The ranges' lower bounds (fresh venv, uv --resolution lowest-direct) and the library used from a separate
# project (wheel, non-editable, another pulumi-aws minor). CI runs both after `make test`.
check-lowest: | $(BIN)/uv
	UV=$(BIN)/uv bash scripts/check-lowest.sh

check-consumer: | $(BIN)/uv
	UV=$(BIN)/uv bash scripts/check-consumer.sh

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache

# Image digests (docs/security.md): resolve every pinned image tag (gpu_platform.versions.PINNED_IMAGES) at its
# registry and rewrite components/gpu_platform/image_digests.json. Only the standard library: any python3 runs it.
#   make digests                                 rewrite the third-party pins
#   make digests DIGESTS_FLAGS=--check           exit 1 if a pin is stale (CI)
#   make digests DIGESTS_FLAGS=--project-built   also this project's images, after the release pushed them
.PHONY: digests
digests:
	$(PYTHON) scripts/refresh-image-digests.py $(DIGESTS_FLAGS)
