# FlowDrop Web. `make run` and `make test` do all the set-up on a fresh machine.
# PYTHON=/path/to/python3.12 picks the interpreter; otherwise .ci/find-python finds one.

VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: help setup run superuser test pytest lint format bench conformance screenshots clean

help:
	@echo "make run          set up, migrate, load the demo transcripts, serve on http://127.0.0.1:8000"
	@echo "                  (OWNER=username: that account owns the demo transcripts, so it can drive them)"
	@echo "make superuser    make an account (asks for a username and a password); the first one this way"
	@echo "make test         set up, lint, and run the whole test suite (browser tests included)"
	@echo "make lint         ruff (lint and format check) and mypy"
	@echo "make format       ruff format and fix"
	@echo "make bench        benchmarks/append.py, api.py, pages.py and exchange.py (set DATABASE_URL for PostgreSQL)"
	@echo "make conformance  regenerate docs/conformance.md from the rule markers"
	@echo "make screenshots  regenerate docs/screenshots/ (needs chromium)"

$(PY):
	@python="$$(.ci/find-python "$(PYTHON)")" || exit 1; \
	echo "Creating $(VENV) with $$python"; \
	"$$python" -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml requirements.lock
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --constraint requirements.lock '.[dev]'
	@touch $@

setup: $(STAMP)

run: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py import_transcripts --skip-existing $(if $(OWNER),--owner $(OWNER)) buffers/demo/*.json buffers/demo/*.jsonl
	FLOWDROP_DEBUG=1 $(PY) manage.py runserver 127.0.0.1:8000

superuser: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py createsuperuser

test: lint pytest

pytest: setup
	$(PY) -m pytest

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy .

format: setup
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

bench: setup
	$(PY) benchmarks/append.py
	$(PY) benchmarks/api.py
	$(PY) benchmarks/pages.py
	$(PY) benchmarks/exchange.py

conformance: setup
	$(PY) -m tests.conformance --write

screenshots: setup
	$(PY) docs/make_screenshots.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .test-db-* staticfiles
