# The two commands that matter: `make run` (the main job) and `make test` (the whole suite).
# Both work from a fresh clone: they create .venv and install what is missing first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 9092
DATA ?= ./data
PYTEST_ARGS ?=

.PHONY: run test bench system-deps clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

system-deps:
	@scripts/ensure-system-deps.sh

run: $(STAMP)
	$(PY) -m roster serve --host $(HOST) --port $(PORT) --data-dir $(DATA)

test: $(STAMP) system-deps
	$(PY) -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) bench/produce_fetch.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build src/*.egg-info
