# Two entry points for a fresh machine (see README): `make plan` and `make test`.
# Each creates the virtual environment on first use; nothing else needs installing by hand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLAN_DIR ?= build/plan
TORCH_VERSION := 2.13.0

.PHONY: plan test lint bench clean check-lowest check-consumer

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

# Test tools, the inference app's stack, promtool. torch goes through pip on purpose: pip honours the
# machine's pip configuration (a local CPU wheel where one is provided); uv does not.
$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet --compile -c constraints.txt torch==$(TORCH_VERSION)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c constraints.txt -e '.[dev]'
	bash scripts/ensure-promtool.sh
	touch $@

plan: $(VENV)/.installed
	$(BIN)/gpu-platform plan --out $(PLAN_DIR)

test: $(VENV)/.installed-dev
	$(BIN)/ruff check components tests examples benchmarks stacks
	$(BIN)/pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/plan_scale.py

# The ranges' lower bounds (fresh venv, uv --resolution lowest-direct) and the library used from a separate
# project (wheel, non-editable, another pulumi-aws minor). CI runs both after `make test`.
check-lowest: | $(BIN)/uv
	UV=$(BIN)/uv bash scripts/check-lowest.sh

check-consumer: | $(BIN)/uv
	UV=$(BIN)/uv bash scripts/check-consumer.sh

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
