# Everything runs inside a project-local virtual environment (.venv).
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' && echo $$p && break; done)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.deps-stamp

.PHONY: all deps build test bench bench-durable bench-spark bench-load clean fuzz serve java soak

all: build

$(STAMP): requirements-dev.txt pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.11+ is required"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

deps: $(STAMP) java

# Spark (the data source tests) needs a JVM: install a JDK 17 where there is no java
java:
	@command -v java >/dev/null 2>&1 || { \
		SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends openjdk-17-jre-headless; }

build: deps
	$(PY) setup.py -q build_ext --inplace -j 2

serve: build
	PYTHONPATH=src $(PY) -m jsstore serve -js -a 127.0.0.1 -p 4222 -sd ./data

test: build
	$(PY) -m pytest -q tests

bench: build
	$(PY) bench/report.py
	$(PY) bench/publish.py
	$(PY) bench/consumers.py
	$(PY) bench/server.py

fuzz: build
	$(PY) -m pytest -q tests -k fuzz

bench-durable: build
	$(PY) bench/durable.py

# the server soak: 100 SIGKILL-and-restart cycles of jsstore serve under nats-py traffic
soak: build
	$(PY) bench/soak.py --cycles 100 --quiet

bench-spark: build
	$(PY) bench/spark.py

# 1,000 connections publishing with PubAcks and consuming, then protocol abuse under
# measurement; both servers (LOAD_SECONDS=60 for the full minute)
LOAD_SECONDS ?= 10
bench-load: build
	$(PY) bench/load.py --connections 1000 --seconds $(LOAD_SECONDS)
	$(PY) bench/abuse.py --seconds $(LOAD_SECONDS)

clean:
	rm -rf build src/jsstore/_core/*.c src/jsstore/_core/*.so .pytest_cache
