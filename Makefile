# Everything runs inside a project-local virtual environment (.venv).
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' && echo $$p && break; done)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.deps-stamp

.PHONY: all deps build test bench bench-save bench-compare bench-durable bench-spark bench-load \
	bench-bruteforce clean fuzz fuzz-all \
	fuzz-replay test-asan serve java soak

all: build

$(STAMP): requirements-dev.txt pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.11+ is required"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

deps: $(STAMP) java

# Spark (the data source tests) needs a JVM, and the JVM reader's jar a compiler: install a
# JDK 17 where there is no java or no javac
java:
	@{ command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; } || { \
		SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends openjdk-17-jdk-headless; }

# the extensions built in place, then jsstore installed into .venv in editable mode (so
# that .venv/bin/jsstore and `import jsstore` work from anywhere)
EDITABLE := $(VENV)/.editable-stamp
build: deps $(EDITABLE)
	$(PY) setup.py -q build_ext --inplace -j 2

$(EDITABLE): $(STAMP) pyproject.toml setup.py
	JSSTORE_INPLACE_BUILT=1 $(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(EDITABLE)

serve: build
	$(VENV)/bin/jsstore serve -js -a 127.0.0.1 -p 4222 -sd ./data

test: build
	$(PY) -m pytest -q tests

# every benchmark, then one table of every target (bench/suite.py; BENCH_ARGS=--quick for a look)
bench: build
	$(PY) bench/suite.py $(BENCH_ARGS)

# one atheris harness: make fuzz TARGET=<name> SECONDS=<n> (fuzz/targets.py lists them);
# FUZZ_ARGS adds libFuzzer flags (e.g. -runs=1000000)
FUZZ_TARGETS := block_records block_file filestore_open index_db odat_decode seqset_decode \
	protocol_parse api_request header_block server_config ack_payload pull_request \
	file_edits consumer_create consumer_session
FUZZ_SECONDS ?= 60
SECONDS ?= $(FUZZ_SECONDS)
fuzz: build
	@test -n "$(TARGET)" || { echo "usage: make fuzz TARGET=<name> SECONDS=<n>; targets: $(FUZZ_TARGETS)"; exit 1; }
	$(PY) -m pip install -q -r fuzz/requirements.txt
	$(PY) fuzz/run.py $(TARGET) -max_total_time=$(SECONDS) $(FUZZ_ARGS)

# every harness for FUZZ_SECONDS each, one after the other (one core)
fuzz-all: build
	$(PY) -m pip install -q -r fuzz/requirements.txt
	@for t in $(FUZZ_TARGETS); do echo "== $$t"; \
		$(PY) fuzz/run.py $$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_ARGS) || exit 1; done

# the saved fuzz inputs replayed (the test suite does this too)
fuzz-replay: build
	$(PY) -m pytest -q tests/test_fuzz_corpus.py

# the extensions built with AddressSanitizer and UndefinedBehaviorSanitizer in a copy of
# the tree (build/asan), and the core tests run against it; Python itself is not
# instrumented, so the ASan runtime is preloaded and leak checking is off; -s so that a
# sanitizer's report is not swallowed by pytest's capture when it ends the process; the
# memory-per-subject bound does not hold under ASan's allocator
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
ASAN_TESTS ?= tests/test_store_contract.py tests/test_store_model.py tests/test_seqset.py \
	tests/test_compress.py tests/test_hashing.py tests/test_subjects.py tests/test_protocol.py \
	tests/test_corruption.py tests/test_ackstate.py tests/test_consumerstore.py \
	tests/test_statefile.py tests/test_fuzz_corpus.py
test-asan: deps
	rm -rf build/asan && mkdir -p build/asan
	cp -r setup.py pyproject.toml README.md csrc build/asan/ && cp -r src build/asan/src
	find build/asan/src/jsstore/_core \( -name '*.so' -o -name '*.c' \) -delete
	cd build/asan && JSSTORE_EXTRA_CFLAGS="$(SANITIZE)" JSSTORE_EXTRA_LDFLAGS="$(SANITIZE)" \
		$(abspath $(PY)) setup.py -q build_ext --inplace -j 2
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(PY) -m pytest -q -s -p no:cacheprovider -o pythonpath=build/asan/src $(ASAN_TESTS) \
		--deselect tests/test_subjects.py::test_memory_per_subject_at_one_million

# pytest-benchmark regression runs: bench-save keeps a run (with its machine information)
# as the baseline; bench-compare runs again and fails when a benchmark's ratio to its
# same-run baseline (SQLite, LMDB or nats-server) fell by more than BENCH_THRESHOLD.
# In-process benchmarks are timed in CPU seconds of the process (steadier on a shared
# machine), the server ones in wall-clock seconds (the work is in the servers).
BENCH_INPROCESS := bench/test_bench_store.py bench/test_bench_publish.py \
	bench/test_bench_consumers.py
BENCH_N ?= 200000
BENCH_ROUNDS ?= 5
BENCH_ARGS ?=
BENCH_TIMER ?= --benchmark-timer=time.process_time
BENCH_THRESHOLD ?= 0.25
BENCH_SAVED := bench/results/saved
BENCH_PYTEST := JSSTORE_BENCH_N=$(BENCH_N) JSSTORE_BENCH_ROUNDS=$(BENCH_ROUNDS) $(PY) -m pytest \
	-q -p no:cacheprovider $(BENCH_ARGS)
define bench_run
	mkdir -p $(1)
	$(BENCH_PYTEST) $(BENCH_INPROCESS) $(BENCH_TIMER) \
		--benchmark-json=$(1)/inprocess.json
	$(BENCH_PYTEST) bench/test_bench_server.py --benchmark-json=$(1)/server.json
endef
bench-save: build
	$(call bench_run,$(BENCH_SAVED))

bench-compare: build
	@test -d $(BENCH_SAVED) || { echo "no saved run: make bench-save first"; exit 2; }
	$(call bench_run,build/bench/run)
	$(PY) bench/compare.py $(BENCH_SAVED) build/bench/run --threshold $(BENCH_THRESHOLD)

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

# failed CONNECTs as fast as attackers can send them, and what a bystander's round trips
# cost meanwhile; both servers (BRUTEFORCE_SECONDS per server)
BRUTEFORCE_SECONDS ?= 10
bench-bruteforce: build
	$(PY) bench/bruteforce.py --seconds $(BRUTEFORCE_SECONDS)

clean:
	rm -rf build .pytest_cache
	find src/jsstore/_core \( -name '*.so' -o -name '*.c' \) -delete
