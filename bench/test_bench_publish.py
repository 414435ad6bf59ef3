"""pytest-benchmark: the embedded publish (``js.publish``, bench/publish.py's contenders)
beside SQLite's one-row-per-call insert, on the same messages; one round publishes all N
into a fresh stream (setup and the check of what was stored are not timed).

Run with ``.venv/bin/python -m pytest bench/test_bench_publish.py [--quick]``."""

import gc
import os
import shutil
import tempfile

import data
import pytest
from publish import CONTENDERS, STREAM
from ratios import record_contender
from workloads import SQLiteDriver

ROUNDS = int(os.environ.get("JSSTORE_BENCH_ROUNDS", "3"))


@pytest.fixture(scope="module")
def msgs(request):
    return data.messages(data.bench_n(quick=request.config.getoption("--quick")))


def _jsstore_round(name: str, work: str):
    import jsstore
    storage, limits = CONTENDERS[name]
    js = jsstore.open(tempfile.mkdtemp(dir=work))
    js.add_stream(name=STREAM, subjects=["orders.>"], storage=storage, **limits)
    gc.collect()
    return (js,), {}


def _publish_all(js, msgs) -> None:
    publish = js.publish
    for subject, _hdr, payload in msgs:
        publish(subject, payload)
    js._streams[STREAM].store.flush_all_pending()


@pytest.mark.benchmark(group="publish (one call per message)")
@pytest.mark.parametrize("name", list(CONTENDERS) + ["sqlite"])
def test_publish(benchmark, name, msgs, tmp_path):
    work = str(tmp_path)
    if name == "sqlite":
        def setup():
            return (SQLiteDriver(tempfile.mkdtemp(dir=work)),), {}

        def run(driver):
            driver.store_each(msgs)

        def teardown(driver):
            assert driver.store.last_seq == len(msgs)
            driver.close()
    else:
        def setup():
            return _jsstore_round(name, work)

        def run(js):
            _publish_all(js, msgs)

        def teardown(js):
            last = js.stream_info(STREAM).state.last_seq
            js.close()
            assert last == len(msgs)
    benchmark.pedantic(run, setup=setup, teardown=teardown, rounds=ROUNDS)
    record_contender(benchmark, name, "sqlite")
    benchmark.extra_info["ops_per_round"] = len(msgs)
    shutil.rmtree(work, ignore_errors=True)
