# Two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
# Extra pip requirement installed after the project, e.g. DJANGO_SPEC='Django>=6,<7'.
DJANGO_SPEC ?=
# The project's extra that brings the tools and a database driver (pyproject.toml): dev
# (psycopg 3), dev-psycopg2 (in a virtualenv of its own: Django prefers psycopg 3 whenever it
# is importable) or dev-mariadb (mysqlclient, built against Debian's libmariadb-dev).
# Unset, a virtualenv keeps the extra it was made with (its stamp): the demo tests run
# `make demo VENV=<the running virtualenv>`, which must not put psycopg 3 into a psycopg2 one.
EXTRA ?= $(or $(patsubst $(VENV)/.installed-%,%,$(firstword $(wildcard $(VENV)/.installed-*))),dev)
BIN := $(VENV)/bin
# One stamp per extra: switching extras installs the new one's packages.
STAMP := $(VENV)/.installed-$(EXTRA)
PEERS := tests/e2e/peers
# The official conformance suite (two versions) and the Node 22 it needs.
CONFORMANCE := tests/conformance/peers
# fastmcp with the tasks extension: fastmcp-tasks pins fastmcp-slim to its own release, which the
# project's virtualenv (a newer fastmcp) cannot hold, so that peer runs from a virtualenv of its own.
FASTMCP_TASKS := tests/peers/fastmcp-tasks
FASTMCP_TASKS_SPEC := fastmcp-tasks==4.1.4

.PHONY: demo test test-fast lint typecheck pytest venv peers clean

# PYTHONWARNINGS=ignore: setuptools prints a warning box for every editable install; it says
# nothing about this one.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install -q -e '.[$(EXTRA)]' $(if $(DJANGO_SPEC),'$(DJANGO_SPEC)')
	touch $(STAMP)

venv: $(STAMP)

# server-everything (npm) is a real MCP peer of the integration tests; the conformance
# suite drives our client through tests/conformance/client.py.
peers: $(PEERS)/node_modules/.installed $(CONFORMANCE)/node_modules/.installed $(FASTMCP_TASKS)/.venv/.installed
$(PEERS)/node_modules/.installed: $(PEERS)/package.json $(PEERS)/package-lock.json
	npm ci --prefix $(PEERS) --no-audit --no-fund --loglevel=error
	touch $@
$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	npm ci --prefix $(CONFORMANCE) --no-audit --no-fund --loglevel=error
	touch $@
# Remade when the Makefile changes (where the pin lives); pip keeps what already fits.
$(FASTMCP_TASKS)/.venv/.installed: Makefile
	test -x $(FASTMCP_TASKS)/.venv/bin/python || $(PYTHON) -m venv $(FASTMCP_TASKS)/.venv
	$(FASTMCP_TASKS)/.venv/bin/python -m pip install -q '$(FASTMCP_TASKS_SPEC)'
	touch $@

# exec: python replaces the recipe's shell, so the SIGTERM make passes on to its recipe
# reaches the demo, which stops its children (project/demo.py); a shell in between would
# die of it and leave them running.
demo: venv
	exec $(BIN)/python -m project.demo

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy nr_llm project tests $(wildcard bench)

# Without Debian's chromium the browser tests fail; NR_LLM_ALLOW_BROWSER_SKIP=1 skips them and
# the run's last line says so (tests/e2e/chromium.py). CI never skips them (.ci/run).
# Most of the suite's time is spent waiting on real servers, not on the CPU: four processes
# (pytest-xdist) keep two cores busy. A file's tests stay together on one process, so the
# servers a module starts once are started once. PYTEST_WORKERS=0 runs in this process alone.
PYTEST_WORKERS ?= 4
XDIST := $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadfile)
pytest: venv peers
	$(BIN)/pytest $(XDIST) $(PYTEST_ARGS)

test: lint typecheck pytest

# The unit layer while you work: no real servers, browser or conformance suite (marker e2e,
# tests/e2e/, tests/conformance/) and no wheel build; no npm peers needed.
test-fast: venv
	$(BIN)/pytest $(XDIST) -m "not e2e and not wheel" --ignore=tests/e2e --ignore=tests/conformance $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info
