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
HTTP_PORT ?=
# the group console and /metrics (docs/observability.md) when HTTP_PORT is given
HTTP := $(if $(HTTP_PORT),--http-port $(HTTP_PORT))

.PHONY: run serve test test-quick bench deps system-deps kafka-deps go-deps clean fuzz report soak kgo-suite

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

system-deps:
	@scripts/ensure-system-deps.sh

# Apache Kafka 4.4 (broker, tools, clients, Streams) resolved through Maven into .cache/, for the
# tests that run it beside roster (tests/support/kafka_peer.py).
kafka-deps:
	@scripts/ensure-kafka.sh

# The Go modules of tests/go/ (franz-go and IBM/sarama judging transactions) through the Go module
# proxy into Go's module cache; tests/support/go_judges.py builds the programs into .cache/.
go-deps:
	@scripts/ensure-go-modules.sh

# The main job: broker + synthetic clicks + a PySpark pipeline that reads them as a static
# group member (bounded; `make run ARGS=--forever` runs until Ctrl-C).
run: $(STAMP) system-deps
	$(PY) -m roster.pipeline --port $(PORT) --data-dir $(DATA) $(HTTP) $(ARGS)

# Just the broker, in the foreground.
serve: $(STAMP)
	$(PY) -m roster serve --host $(HOST) --port $(PORT) --data-dir $(DATA) $(HTTP)

# The Spark rebalance report over the broker at HOST:PORT (ARGS: --group G, --out FILE).
report: $(STAMP) system-deps
	$(PY) -m roster report --bootstrap-server $(HOST):$(PORT) $(ARGS)

# Everything the suite needs, side by side: pip, apt, Maven and the Go toolchain wait mostly on
# the network, and one after the other they took over four minutes on a fresh machine. Each
# target's output is printed whole when it is done; the scripts that may apt-get take turns
# (scripts/apt-install.sh).
deps:
	@$(MAKE) --no-print-directory -j4 --output-sync=target $(STAMP) system-deps kafka-deps go-deps

# The whole suite, nothing skipped; the 30 slowest tests are listed at the end of the run.
# Three workers on two cores: the tests wait (on session timeouts, JVMs, the network) about
# two fifths of the time, which two workers left idle; the suite is built to pass on a
# loaded machine (README, Tests).
TEST_WORKERS ?= 3
test: deps
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=30 $(PYTEST_ARGS)

# The quick loop while developing: tests/unit (no Kafka, Spark or JVM; a few minutes).
test-quick: $(STAMP)
	$(PY) -m pytest -n 2 --durations=10 tests/unit $(PYTEST_ARGS)

# Longer fuzzing (docs/protocol.md, Fuzzing): the regression corpus, the live-broker campaign
# for half of FUZZ_SECONDS, then atheris on the pure decoders for the rest. Findings land in
# fuzz/corpus/new and fuzz/corpus/atheris/; `make test` runs a bounded campaign.
FUZZ_SECONDS ?= 600
fuzz: $(STAMP)
	@$(PY) -c 'import atheris' 2>/dev/null || $(PY) -m pip install --quiet -e '.[fuzz]'
	$(PY) -m fuzz all --seconds $(FUZZ_SECONDS)

# Longer runs of the kill -9 tests (docs/transactions.md): the consume-transform-produce loop
# killed SOAK_KILLS times instead of make test's 20.
SOAK_KILLS ?= 300
soak: $(STAMP)
	ROSTER_KILLED_LOOP_KILLS=$(SOAK_KILLS) $(PY) -m pytest -n 0 tests/interop/test_killed_loops.py

# franz-go's own integration tests (pkg/kgo) against a fresh roster: a client's suite written for
# Kafka (docs/testing.md, "Other projects' suites"); about four minutes.
kgo-suite: $(STAMP) go-deps
	scripts/kgo-suite.sh

bench: $(STAMP)
	$(PY) bench/produce_fetch.py
	$(PY) bench/coordinator.py
	$(PY) bench/offsets.py
	$(PY) bench/assignors.py
	$(PY) bench/security.py
	$(PY) bench/authorizer.py
	$(PY) bench/down_conversion.py
	$(PY) bench/server_assignors.py
	$(PY) bench/consumer_coordinator.py
	$(PY) bench/observability.py
	$(PY) bench/spark_pipeline.py
	$(PY) bench/compaction.py
	$(PY) bench/versus_kafka.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build src/*.egg-info
