# Developer and CI entry points. Everything runs inside .venv, created on demand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Extra pytest arguments, e.g. make test PYTEST_ARGS="tests/workers -x"
PYTEST_ARGS ?=
# Only the packages that exist yet, so lint works while the project grows.
LINT_PATHS := $(wildcard outreach_core http_api mcp_server workers outreach_app tests)

.PHONY: venv serve test lint dev-mail

venv: $(STAMP)

# Re-installs only when pyproject.toml changes (or the stamp is missing).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e ".[test]"
	@touch $@

serve: venv
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
