# Two commands for a new machine: `make demo` and `make test`. Both set up everything first.

PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3.13 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo demo-stop test lint typecheck postgres clean

$(INSTALLED): pyproject.toml
	@$(PYTHON) -c 'import sys; assert (3, 11) <= sys.version_info[:2] <= (3, 13), "PEDL needs Python 3.11 to 3.13, found " + sys.version' \
		|| (echo "Set PYTHON=/path/to/python3.11 (or 3.12, 3.13)"; exit 1)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[tf,dev,examples]'
	touch $@

## demo: start a master (SQLite), run a random search on the digits example, follow it.
## PEDL_DEMO_PORT (8080) and PEDL_DEMO_HOME (.pedl-demo) move it; it stops with a reason and
## the end of the master's log if the master dies.
demo: $(INSTALLED)
	scripts/demo.sh

demo-stop:
	-kill $$(cat .pedl-demo/master.pid) && rm -f .pedl-demo/master.pid

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
	rm -rf $(VENV) pedl-local .pedl-demo .pytest_cache .mypy_cache .ruff_cache
