"""pytest-benchmark suite: jsstore beside SQLite and LMDB, one group per operation.

Run with ``make build && .venv/bin/python -m pytest bench/test_bench_store.py``
(``--quick`` or ``JSSTORE_BENCH_N=...`` for a smaller message count,
``JSSTORE_BENCH_ROUNDS`` for the number of rounds).  One round of a group does the
whole workload (all N writes, or all the reads of the query list), so the
``msgs_per_s`` extra info is ops / median round time.  ``report.py`` turns the same
workloads into the target ratios.
"""

import os
import shutil
import tempfile

import data
import pytest
from ratios import record_contender
from report import OPERATIONS
from workloads import DRIVERS, split_batches, verify

ROUNDS = int(os.environ.get("JSSTORE_BENCH_ROUNDS", "3"))
BASELINE = {op.name: op.baseline for op in OPERATIONS}     # the targets' baselines
WRITERS = ["jsstore-file", "jsstore-memory", "sqlite", "lmdb"]
POINT_READERS = ["jsstore-file", "jsstore-memory", "sqlite", "lmdb"]
SUBJECT_READERS = ["jsstore-file", "jsstore-memory", "sqlite"]  # LMDB has no subject index


@pytest.fixture(scope="session")
def msg_count(request):
    return data.bench_n(quick=request.config.getoption("--quick"))


@pytest.fixture(scope="session")
def msgs(msg_count):
    return data.messages(msg_count)


@pytest.fixture(scope="session")
def work_dir():
    path = tempfile.mkdtemp(prefix="jsstore-bench-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def built_stores(msgs, work_dir):
    """Stores holding ``msgs`` as seqs 1..N, built once per session for the read groups."""
    opened = {}

    def get(name):
        if name not in opened:
            driver = DRIVERS[name](tempfile.mkdtemp(prefix=name + "-", dir=work_dir))
            driver.store_batches(split_batches(msgs))
            verify(driver, msgs, data.DISTINCT_SUBJECTS)
            opened[name] = driver
        return opened[name]

    yield get
    for driver in opened.values():
        driver.close()


def record_rate(benchmark, ops, operation, name):
    record_contender(benchmark, name, BASELINE[operation])
    benchmark.extra_info["ops_per_round"] = ops
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        benchmark.extra_info["msgs_per_s"] = round(ops / stats.stats.median)


def run_write_rounds(benchmark, operation, name, work_dir, msgs, workload, payload):
    def setup():
        directory = tempfile.mkdtemp(prefix=name + "-", dir=work_dir)
        return (DRIVERS[name](directory), directory), {}

    def teardown(driver, directory):
        verify(driver, msgs, data.DISTINCT_SUBJECTS)
        driver.close()
        shutil.rmtree(directory, ignore_errors=True)

    benchmark.pedantic(lambda driver, directory: workload(driver, payload),
                       setup=setup, teardown=teardown, rounds=ROUNDS)
    record_rate(benchmark, len(msgs), operation, name)


@pytest.mark.benchmark(group="store_msg (one call per message)")
@pytest.mark.parametrize("name", WRITERS)
def test_store_msg(benchmark, name, msgs, work_dir):
    run_write_rounds(benchmark, "store_msg", name, work_dir, msgs,
                     lambda d, m: d.store_each(m), msgs)


@pytest.mark.benchmark(group="store_batch (1000 messages a call)")
@pytest.mark.parametrize("name", WRITERS)
def test_store_batch(benchmark, name, msgs, work_dir):
    run_write_rounds(benchmark, "store_batch", name, work_dir, msgs,
                     lambda d, b: d.store_batches(b), split_batches(msgs))


@pytest.mark.benchmark(group="load_msg (random sequences)")
@pytest.mark.parametrize("name", POINT_READERS)
def test_load_msg(benchmark, name, msg_count, built_stores):
    driver = built_stores(name)
    seqs = data.random_seqs(min(msg_count, 200_000), 1, msg_count)
    benchmark.pedantic(driver.load_points, args=(seqs,), rounds=ROUNDS + 2)
    record_rate(benchmark, len(seqs), "load_msg", name)


@pytest.mark.benchmark(group="load_last_msg (random subject)")
@pytest.mark.parametrize("name", SUBJECT_READERS)
def test_load_last_msg(benchmark, name, msg_count, built_stores):
    driver = built_stores(name)
    subjects = data.random_subject_queries(min(msg_count, 100_000))
    benchmark.pedantic(driver.load_lasts, args=(subjects,), rounds=ROUNDS + 2)
    record_rate(benchmark, len(subjects), "load_last_msg", name)


@pytest.mark.benchmark(group="num_pending (one subject, from a random seq)")
@pytest.mark.parametrize("name", SUBJECT_READERS)
def test_num_pending(benchmark, name, msg_count, built_stores):
    driver = built_stores(name)
    queries = data.random_pending_queries(min(msg_count, 20_000), msg_count)
    benchmark.pedantic(driver.pending_counts, args=(queries,), rounds=ROUNDS + 2)
    record_rate(benchmark, len(queries), "num_pending", name)
