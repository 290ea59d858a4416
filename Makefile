# Two commands for a new machine: `make demo` and `make test`. Both set up everything first.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test lint typecheck unit postgres clean

$(INSTALLED): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "PEDL needs Python 3.11, found " + sys.version' \
		|| (echo "Set PYTHON=/path/to/python3.11"; exit 1)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[tf,dev,examples]'
	touch $@

## demo: train the digits example (a search) and print where everything is.
demo: $(INSTALLED)
	$(BIN)/pedl experiment create --local examples/digits_keras/const.yaml examples/digits_keras

## test: lint, type-check, and run the whole test suite (PostgreSQL is started if needed).
test: lint typecheck postgres
	$(BIN)/pytest

lint: $(INSTALLED)
	$(BIN)/ruff check
	$(BIN)/ruff format --check

typecheck: $(INSTALLED)
	$(BIN)/mypy

postgres:
	scripts/ensure-postgres.sh

clean:
	rm -rf $(VENV) pedl-local .pytest_cache .mypy_cache .ruff_cache
