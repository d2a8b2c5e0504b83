# Developer and CI entry points. Everything runs inside .venv, created on demand.
#
# `make serve` installs only what serving needs (the package and its runtime dependencies); `make test`,
# `make lint` and `make venv` install the test, lint and type-check tools too (the `dev` extra).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed
# Extra pytest arguments, e.g. make test PYTEST_ARGS="tests/workers -x"
PYTEST_ARGS ?=
# Only the packages that exist yet, so lint works while the project grows.
LINT_PATHS := $(wildcard outreach_core http_api mcp_server workers outreach_app tests)

.PHONY: venv serve test lint dev-mail

venv: $(STAMP)

# Each re-installs only when pyproject.toml changes (or its stamp is missing).
$(SERVE_STAMP): pyproject.toml
	@test -x $(BIN)/python || { echo "outreach: creating a virtualenv in $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@echo "outreach: installing the service and what it needs to serve into $(VENV) (a minute or two the first time)"
	@$(BIN)/python -m pip install -q --upgrade pip
	@PYTHONWARNINGS=ignore $(BIN)/python -m pip install -q -e .
	@echo "outreach: installed $$($(BIN)/outreach --version)"
	@touch $@

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || { echo "outreach: creating a virtualenv in $(VENV)"; $(PYTHON) -m venv $(VENV); }
	@echo "outreach: installing the service with its test, lint and type-check tools (.[dev]) into $(VENV)"
	@$(BIN)/python -m pip install -q --upgrade pip
	@PYTHONWARNINGS=ignore $(BIN)/python -m pip install -q -e ".[dev]"
	@touch $@ $(SERVE_STAMP)

serve: $(SERVE_STAMP)
	@echo "outreach: serving on http://127.0.0.1:8000 (REST /api/v1, MCP /mcp; Ctrl-C stops)"
	$(BIN)/outreach serve --host 127.0.0.1 --port 8000

test: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# A local SMTP server and Dovecot IMAP mailbox to try the service with (README "Try it end to end"); Dovecot
# is started as root, so this uses sudo unless it already runs as root.
dev-mail: venv
	@if [ "$$(id -u)" = 0 ]; then $(BIN)/python -m tests.local_mail; else sudo $(BIN)/python -m tests.local_mail; fi
