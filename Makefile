# Two commands do everything on a fresh machine: `make run` and `make test` (see README.md).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Kubeflow's v1 and v2 SDKs in a virtualenv of their own (they need kubernetes<36; see requirements-kubeflow-sdk.txt).
SDK_VENV := .venv-kubeflow-sdk
SDK_STAMP := $(SDK_VENV)/.installed
# Real TensorFlow, JAX, XGBoost and TensorBoard (CPU builds) for the process kubelet's framework images and
# examples/training (see requirements-frameworks.txt).
FRAMEWORKS_VENV := .venv-frameworks
FRAMEWORKS_STAMP := $(FRAMEWORKS_VENV)/.installed
PORT ?= 8000

.PHONY: run test lint typecheck bench clean

$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	touch $(STAMP)

$(SDK_STAMP): requirements-kubeflow-sdk.txt
	test -x $(SDK_VENV)/bin/python || $(PYTHON) -m venv $(SDK_VENV)
	$(SDK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-kubeflow-sdk.txt
	touch $(SDK_STAMP)

$(FRAMEWORKS_STAMP): requirements-frameworks.txt
	test -x $(FRAMEWORKS_VENV)/bin/python || $(PYTHON) -m venv $(FRAMEWORKS_VENV)
	$(FRAMEWORKS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-frameworks.txt
	touch $(FRAMEWORKS_STAMP)

run: $(STAMP) $(FRAMEWORKS_STAMP)
	DEBUG=$${DEBUG:-true} $(BIN)/python manage.py devstack --port $(PORT)

test: $(STAMP) $(SDK_STAMP) $(FRAMEWORKS_STAMP)
	bash scripts/test.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy .

bench: $(STAMP)
	for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) $(SDK_VENV) $(FRAMEWORKS_VENV) .dev .pytest_cache .mypy_cache .ruff_cache
