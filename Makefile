# Two commands for a new machine: `make demo` and `make test`. Both set up everything first.

PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3.13 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL ?= 2
# Python keeps the bytecode it compiles, whatever the environment says
# (PYTHONDONTWRITEBYTECODE): .venv-estimator is made with --no-compile and relies on that, and
# PEDL's own modules (editable) would be compiled again by every process. Measured with it set:
# the estimator pass took 34.7 s of CPU, 25.5 s without it.
unexport PYTHONDONTWRITEBYTECODE

ESTIMATOR_PYTHON ?= $(shell command -v python3.11)
ESTIMATOR_VENV := .venv-estimator
ESTIMATOR_INSTALLED := $(ESTIMATOR_VENV)/.installed

.PHONY: demo demo-stop test test-setup ui-test lint typecheck audit postgres clean ui .venv-estimator azurite docs docs-serve api-types

# Root runs apt-get itself; anyone else through sudo. `make test` sets up side by side, so each
# apt-get holds a lock of its own (two at once fail on dpkg's); scripts/ensure-postgres.sh too.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_GET := $(SUDO) flock /tmp/pedl-apt-get.lock apt-get
UI_BUILT := pedl/master/ui_dist/index.html
UI_SOURCES := $(shell find ui -type f -not -path 'ui/node_modules/*' -not -path 'ui/dist/*' -not -name '*.md' 2>/dev/null)
CHROMIUM := /usr/bin/chromium

$(INSTALLED): pyproject.toml compat/determined/pyproject.toml
	@$(PYTHON) -c 'import sys; assert (3, 11) <= sys.version_info[:2] <= (3, 13), "PEDL needs Python 3.11 to 3.13, found " + sys.version' \
		|| (echo "Set PYTHON=/path/to/python3.11 (or 3.12, 3.13)"; exit 1)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools
	$(BIN)/python -m pip install --quiet -e '.[tf,dev,examples,ray,docs]'
	$(BIN)/python -m pip install --quiet --no-deps -e compat/determined
	# Keras 2 mode (TF_USE_LEGACY_KERAS=1): tf-keras without its dependencies, whose
	# `tensorflow` would pull the GPU build next to tensorflow-cpu.
	$(BIN)/python -m pip install --quiet --no-deps tf-keras==2.21.0
	touch $@

## .venv-estimator: the environment EstimatorTrials run in. tf.estimator is gone from
## TensorFlow 2.16 on, so it is Python 3.11 with TensorFlow 2.15.1, tensorflow-estimator 2.15.0,
## NumPy 1.x (the estimator extra), PEDL itself (editable) and pytest. Made once; remade when
## pyproject.toml changes (--no-compile: Python compiles what a trial imports, on first use,
## rather than all of TensorFlow up front: ~40% less CPU to make it). Point an experiment at it with
## PEDL_TRIAL_PYTHON=$(CURDIR)/.venv-estimator/bin/python (see docs/estimator-trial.md).
.venv-estimator: $(ESTIMATOR_INSTALLED)

$(ESTIMATOR_INSTALLED): pyproject.toml
	@$(ESTIMATOR_PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null \
		|| (echo "The estimator environment needs Python 3.11 (TensorFlow 2.15 supports 3.9 to 3.11): set ESTIMATOR_PYTHON=/path/to/python3.11"; exit 1)
	test -x $(ESTIMATOR_VENV)/bin/python || $(ESTIMATOR_PYTHON) -m venv $(ESTIMATOR_VENV)
	$(ESTIMATOR_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(ESTIMATOR_VENV)/bin/python -m pip install --quiet --no-compile -e '.[estimator]' 'pytest>=8,<10' 'pytest-timeout>=2.3,<3'
	touch $@

## demo: start a master (SQLite), run a random search on the digits example, follow it.
## PEDL_DEMO_PORT (8080) and PEDL_DEMO_HOME (.pedl-demo) move it; it stops with a reason and
## the end of the master's log if the master dies.
demo: $(INSTALLED) ui
	scripts/demo.sh

## demo-stop: stop the master `make demo` started (its pid in PEDL_DEMO_HOME, .pedl-demo).
DEMO_HOME := $(or $(PEDL_DEMO_HOME),.pedl-demo)
demo-stop:
	@pidfile='$(DEMO_HOME)/master.pid'; \
	if [ ! -f "$$pidfile" ]; then echo "No demo master to stop ($$pidfile is missing)"; exit 0; fi; \
	if kill "$$(cat "$$pidfile")" 2>/dev/null; then echo "Stopped the demo master (pid $$(cat "$$pidfile"))"; \
	else echo "The demo master (pid $$(cat "$$pidfile")) was not running"; fi; \
	rm -f "$$pidfile"

## docs: the documentation site (mkdocs.yml, docs/) built strictly into site/: a broken link or
## anchor, a reference that does not resolve, a config field or master setting without a
## description, any warning fails it. The references are generated from the code at build time.
## docs-serve: the same, served at http://127.0.0.1:8000 and rebuilt on every change.
export NO_MKDOCS_2_WARNING := 1
docs: $(INSTALLED)
	$(BIN)/mkdocs build --strict

docs-serve: $(INSTALLED)
	$(BIN)/mkdocs serve --strict

## test: lint, type-check, build the documentation site (make docs), and run the whole test suite
## (PostgreSQL is started if needed; tests/docs reads the site make docs built); the
## EstimatorTrial tests that need tf.estimator in the test process run in .venv-estimator.
## The suite runs in TEST_WORKERS pytest-xdist processes (default 2, the CI machine's cores;
## most tests wait on subprocesses that import TensorFlow); TEST_WORKERS=0 runs it in one.
## Work stealing moves its cuts to test modules' edges (tests/module_stealing.py), so that a
## module's master and reference search are not started in both.
## The tests marked serial load the master on purpose and run alone afterwards; their files are
## found by the marker's name in them (collecting the whole suite again to find them would import
## every test module: ~15 s of CPU).
## The tests marked keras2 (the Keras controller's representative suite) run a second time in
## Keras 2 mode (TF_USE_LEGACY_KERAS=1: tf-keras as tf.keras).
## The set-up before the suite (test-setup) runs SETUP_JOBS steps side by side (default 3):
## while one Python environment installs and is linted, type-checked, audited and documented, the
## estimator environment, the UI (built and its tests run), Azurite and Chromium install
## (--output-sync: each step's output whole, when it ends).
TEST_WORKERS ?= 2
SETUP_JOBS ?= 3
SERIAL_TESTS = $(shell grep -rl --include='test_*.py' 'pytest.mark.serial' tests)
test:
	$(MAKE) -j$(SETUP_JOBS) --output-sync=target test-setup
	PEDL_DOCS_SITE=site $(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal -m "not serial" --durations=15
	TF_USE_LEGACY_KERAS=1 $(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal -m "keras2 and not serial" tests/keras tests/frameworks
	$(if $(SERIAL_TESTS),$(BIN)/pytest -m serial $(SERIAL_TESTS))
	$(ESTIMATOR_VENV)/bin/pytest tests/estimator

test-setup: lint typecheck audit docs postgres ui-test azurite $(CHROMIUM) $(ESTIMATOR_INSTALLED)

ui-test: ui
	cd ui && npm test

## ui: build the web UI (ui/: TypeScript, Vite) into pedl/master/ui_dist/, which the master
## serves at / (and a wheel includes); rebuilt when a file under ui/ changes. Node and npm
## come from Debian's packages where missing. `npm ci`: exactly what package-lock.json says, which
## it never rewrites (the lock lists every platform's optional packages, rollup's and esbuild's,
## so no npm adds entries to it); a lock out of step with package.json fails with npm's reason.
ui: $(UI_BUILT)

$(UI_BUILT): $(UI_SOURCES)
	@if [ ! -f ui/package.json ]; then echo "ui/package.json is missing: no web UI to build"; exit 0; fi; \
	set -e; command -v npm >/dev/null || ($(APT_GET) update && $(APT_GET) install -y nodejs npm); \
	cd ui; \
	if [ ! -f node_modules/.package-lock.json ] || [ package.json -nt node_modules/.package-lock.json ] \
		|| [ package-lock.json -nt node_modules/.package-lock.json ]; then \
		npm ci --no-audit --no-fund; \
	fi; \
	npm run build; cd ..; touch $@

## api-types: the web UI's API types from the master's code: ui/openapi.json (the OpenAPI
## document, scripts/openapi_dump.py), then ui/src/api-types.ts from it (`npm run api-types`,
## openapi-typescript as package-lock.json pins it). Run after changing the REST API and commit
## both; tests/ui/test_api_types.py fails while either is out of date.
api-types: $(INSTALLED)
	$(BIN)/python scripts/openapi_dump.py
	cd ui && ([ -d node_modules/openapi-typescript ] || npm ci --no-audit --no-fund) && npm run api-types

# The browser tests drive Debian's Chromium (headless) with Playwright.
$(CHROMIUM):
	$(APT_GET) update
	$(APT_GET) install -y chromium

lint: $(INSTALLED)
	$(BIN)/ruff check
	$(BIN)/ruff format --check

typecheck: $(INSTALLED)
	$(BIN)/mypy
	cd bench && ../$(BIN)/mypy --config-file ../pyproject.toml *.py

## audit: known vulnerabilities in .venv's Python packages (pip-audit) and in the UI's
## package-lock.json (npm audit); a finding fails unless audit-allowlist.toml accepts it with a
## reason. What could not be audited is listed; AUDIT_REQUIRED=1 makes that fail too.
AUDIT_REQUIRED ?= 0
audit: $(INSTALLED)
	$(BIN)/python scripts/audit.py $(if $(filter 1,$(AUDIT_REQUIRED)),--require)

## azurite: Azure Storage's emulator (npm, pinned) in .azurite/, which the azure checkpoint
## storage tests start on loopback (tests/azurite_server.py). Node and npm as for the UI.
AZURITE_VERSION := 3.37.0
AZURITE := .azurite/node_modules/.bin/azurite-blob
azurite: $(AZURITE)

$(AZURITE):
	@command -v npm >/dev/null || ($(APT_GET) update && $(APT_GET) install -y nodejs npm)
	npm install --prefix .azurite --no-audit --no-fund --loglevel=error azurite@$(AZURITE_VERSION)
	touch $@

postgres:
	scripts/ensure-postgres.sh

clean:
	rm -rf $(VENV) $(ESTIMATOR_VENV) site pedl-local .pedl-demo .pytest_cache .mypy_cache bench/.mypy_cache .ruff_cache pedl/master/ui_dist ui/node_modules .azurite
