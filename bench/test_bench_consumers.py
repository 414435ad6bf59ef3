"""pytest-benchmark: draining a durable consumer (bench/consumers.py's embedded pull:
``fetch(100)`` and an explicit ``ack()`` of every message) beside SQLite doing the same
job its way: the rows read in order 100 at a time, and after each batch, in one
transaction, a row per message acknowledged and the consumer's position (a durable
cursor with explicit acks).

Run with ``.venv/bin/python -m pytest bench/test_bench_consumers.py [--quick]``."""

import os
import sqlite3
import tempfile

import data
import pytest
from consumers import BATCH, STREAM, _filled_stream
from ratios import record_contender
from workloads import SQLiteDriver

ROUNDS = int(os.environ.get("JSSTORE_BENCH_ROUNDS", "3"))
GROUP = "drain a consumer (fetch 100, ack each)"


@pytest.fixture(scope="module")
def msgs(request):
    return data.messages(data.bench_n(quick=request.config.getoption("--quick")))


def _drain_jsstore(js, n: int) -> None:
    sub = js.pull_subscribe("orders.>", "DRAIN", stream=STREAM)
    got = 0
    while got < n:
        batch = sub.fetch(BATCH, timeout=0)
        for msg in batch:
            msg.ack()
        got += len(batch)


def _drain_sqlite(conn: sqlite3.Connection, n: int) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS cursor (name TEXT PRIMARY KEY, seq INTEGER)")
    conn.execute("CREATE TABLE IF NOT EXISTS acked (seq INTEGER PRIMARY KEY)")
    conn.execute("INSERT OR REPLACE INTO cursor VALUES ('DRAIN', 0)")
    conn.commit()
    position = got = 0
    while got < n:
        rows = conn.execute("SELECT seq, subj, data FROM msgs WHERE seq > ? ORDER BY seq "
                            "LIMIT ?", (position, BATCH)).fetchall()
        position = rows[-1][0]
        got += len(rows)
        with conn:
            conn.executemany("INSERT INTO acked VALUES (?)", [(row[0],) for row in rows])
            conn.execute("UPDATE cursor SET seq = ? WHERE name = 'DRAIN'", (position,))


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("name", ["jsstore", "sqlite"])
def test_drain(benchmark, name, msgs, tmp_path):
    n = len(msgs)
    if name == "jsstore":
        def setup():
            js = _filled_stream(tempfile.mkdtemp(dir=tmp_path), msgs)
            js.add_consumer(STREAM, durable_name="DRAIN", ack_policy="explicit")
            return (js,), {}

        def run(js):
            _drain_jsstore(js, n)

        def teardown(js):
            info = js.consumer_info(STREAM, "DRAIN")
            js.close()
            assert (info.num_ack_pending, info.ack_floor.stream_seq) == (0, n)
    else:
        def setup():
            driver = SQLiteDriver(tempfile.mkdtemp(dir=tmp_path))
            driver.store_batches([msgs[i:i + 1000] for i in range(0, n, 1000)])
            return (driver,), {}

        def run(driver):
            _drain_sqlite(driver.store.conn, n)

        def teardown(driver):
            conn = driver.store.conn
            seq = conn.execute("SELECT seq FROM cursor").fetchone()[0]
            acked = conn.execute("SELECT count(*) FROM acked").fetchone()[0]
            driver.close()
            assert seq == acked == n
    benchmark.pedantic(run, setup=setup, teardown=teardown, rounds=ROUNDS)
    record_contender(benchmark, name, "sqlite")
    benchmark.extra_info["ops_per_round"] = n
