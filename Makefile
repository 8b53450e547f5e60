# GPU Atlas: the two fresh-machine commands are `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# The development mode for run, demo, test and lint (settings: DEBUG is off unless set).
export DEBUG ?= 1

.PHONY: run test venv venv-dev demo lint check browser-deps stack clean

# Two install stamps: `make run` installs the app's runtime dependencies only; `make test` adds the
# test and client toolchains (pytest, Playwright, mypy, schemathesis, the CPU build of PyTorch).
# Either may come first; neither removes what the other installed. Both share one virtual
# environment, so its creation and every pip run hold one lock: started together, the second waits.
# -qq: errors only (setuptools prints a BuildBackendWarning for every editable install).
LOCK := flock $(VENV).lock

$(VENV)/.installed-run: pyproject.toml
	$(LOCK) bash -c '[ -x $(PY) ] || $(PYTHON) -m venv $(VENV); \
	  $(PY) -m pip install -qq --disable-pip-version-check --upgrade pip && \
	  $(PY) -m pip install -qq --disable-pip-version-check -e .'
	touch $@

$(VENV)/.installed-test: pyproject.toml bench_client/pyproject.toml
	$(LOCK) bash -c '[ -x $(PY) ] || $(PYTHON) -m venv $(VENV); \
	  $(PY) -m pip install -qq --disable-pip-version-check --upgrade pip && \
	  $(PY) -m pip install -qq --disable-pip-version-check -e ".[dev]" -e ./bench_client'
	touch $@

## venv: the runtime install (what `make run` needs); venv-dev: plus the test and client toolchains
venv: $(VENV)/.installed-run
venv-dev: $(VENV)/.installed-test

## run: install, migrate, load the real catalogue, prices and benchmark results, serve on http://$(HOST):$(PORT)
run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	$(PY) manage.py runserver $(HOST):$(PORT)

## demo: (re)load the demo data without serving
demo: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo

## test: install the test toolchain and run the whole test suite (SQLite, tasks in-process), a process per core
test: venv-dev browser-deps
	$(PY) -m pytest -q -n auto --dist loadfile

## browser-deps: Debian's chromium for the Playwright browser tests (skipped when it cannot be installed)
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "chromium could not be installed: browser tests will be skipped"; }

lint: venv-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(PY) manage.py makemigrations --check --dry-run

## stack: the production topology without containers (gunicorn x2, 2 Celery workers, beat) on local PostgreSQL/Redis
stack: venv
	bash deploy/stack.sh

clean:
	rm -rf $(VENV) $(VENV).lock db.sqlite3 staticfiles
