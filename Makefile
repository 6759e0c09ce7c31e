# FlowDrop Web. `make run` and `make test` do all the set-up on a fresh machine.
# PYTHON=/path/to/python3.12 picks the interpreter; otherwise .ci/find-python finds one.

VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# make run HOST=0.0.0.0 PORT=8123: from the command line only (zsh sets HOST to the host name).
ifneq ($(origin HOST),command line)
HOST := 127.0.0.1
endif
ifneq ($(origin PORT),command line)
PORT := 8000
endif
WORKERS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 1) + 1 )))

.PHONY: help setup run serve superuser test chromium pytest lint format bench conformance screenshots clean

help:
	@echo "make run          set up, migrate, load the demo transcripts, serve on http://127.0.0.1:8000,"
	@echo "                  and print a one-time link that signs you in (as \$$USER, or OWNER=username)"
	@echo "                  PORT=8123 HOST=0.0.0.0 choose the address"
	@echo "make serve        production: check the deployment, migrate, serve with gunicorn"
	@echo "                  (FLOWDROP_SECRET_KEY and the other variables in README; WORKERS, PORT, HOST)"
	@echo "make superuser    make an account with a password (asks for a username and a password)"
	@echo "make test         set up, find or install chromium, lint, run the whole test suite"
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
	$(PY) manage.py migrate --noinput --verbosity 0
	FLOWDROP_DEBUG=1 $(PY) manage.py local_signin --address $(HOST):$(PORT) $(if $(OWNER),--owner $(OWNER))
	FLOWDROP_DEBUG=1 $(PY) manage.py runserver $(HOST):$(PORT)

# Production: refuses to start on any deployment finding (no FLOWDROP_SECRET_KEY, debug on...).
serve: setup
	$(PY) manage.py check --deploy --fail-level WARNING
	$(PY) manage.py migrate --noinput
	$(PY) -m gunicorn flowdrop_web.wsgi --workers $(WORKERS) --bind $(HOST):$(PORT) --preload \
		--no-control-socket --access-logfile - --error-logfile - \
		--forwarded-allow-ips "$${FLOWDROP_PROXY_IPS:-127.0.0.1,::1}"

superuser: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py createsuperuser

test: chromium lint pytest

# The browser tests drive Debian's chromium: found, or installed (as root with apt-get), or the
# one command to run is printed and make stops here.
chromium:
	@.ci/find-chromium >/dev/null

pytest: setup chromium
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
