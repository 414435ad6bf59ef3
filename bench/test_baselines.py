"""The baselines and the expected-value arithmetic must be right before any timing is believed."""

import data
import pytest
from baselines import LMDBBaseline, SQLiteBaseline
from workloads import (LMDBDriver, SQLiteDriver, expected_last_seq, expected_pending,
                       split_batches, verify)


def brute_last_seq(k, n, distinct):
    seqs = [i + 1 for i in range(n) if i % distinct == k]
    return seqs[-1] if seqs else 0


def brute_pending(start_seq, k, n, distinct):
    return sum(1 for i in range(n) if i % distinct == k and i + 1 >= start_seq)


@pytest.mark.parametrize("n,distinct", [(1, 10), (9, 10), (10, 10), (11, 10), (257, 10), (1000, 7)])
def test_expected_values_match_brute_force(n, distinct):
    for k in range(distinct):
        assert expected_last_seq(k, n, distinct) == brute_last_seq(k, n, distinct)
        for start_seq in range(1, n + 2):
            assert expected_pending(start_seq, k, n, distinct) == brute_pending(start_seq, k, n, distinct)


def test_data_is_deterministic_and_shaped():
    assert data.messages(50) == data.messages(50)
    msgs = data.messages(2500)
    assert msgs[0][0] == "orders.0" and msgs[1001][0] == "orders.1"
    assert all(len(payload) == data.PAYLOAD_SIZE and hdr is None for _s, hdr, payload in msgs)
    assert len({payload for _s, _h, payload in msgs}) == data.PAYLOAD_POOL_SIZE
    assert data.random_seqs(100, 5, 9) == data.random_seqs(100, 5, 9)
    assert set(data.random_seqs(1000, 5, 9)) == {5, 6, 7, 8, 9}
    chunks = list(data.distinct_subject_chunks(2500, chunk=1000))
    assert [len(c) for c in chunks] == [1000, 1000, 500]
    assert len({s for c in chunks for s, _h, _p in c}) == 2500


def test_bench_n_env(monkeypatch):
    monkeypatch.delenv("JSSTORE_BENCH_N", raising=False)
    assert data.bench_n() == data.DEFAULT_N and data.bench_n(quick=True) == data.QUICK_N
    monkeypatch.setenv("JSSTORE_BENCH_N", "12_345")
    assert data.bench_n() == 12345


@pytest.mark.parametrize("driver_cls", [SQLiteDriver, LMDBDriver])
@pytest.mark.parametrize("mode", ["each", "batch"])
def test_baseline_holds_what_was_written(tmp_path, driver_cls, mode):
    n, distinct = 3500, 100  # not a multiple of the transaction size: the tail must be flushed
    msgs = data.messages(n, distinct)
    driver = driver_cls(str(tmp_path))
    if mode == "each":
        driver.store_each(msgs)
    else:
        driver.store_batches(split_batches(msgs))
    verify(driver, msgs, distinct)
    driver.load_points(data.random_seqs(100, 1, n))
    driver.close()
    reopened = driver_cls(str(tmp_path))  # everything was committed
    assert reopened.store.last_seq == n
    verify(reopened, msgs, distinct)
    reopened.close()


def test_sqlite_queries_use_the_subject_index(tmp_path):
    store = SQLiteBaseline(str(tmp_path / "s.sqlite"))
    assert store.uses_index()
    store.close()


def test_sqlite_store_one_returns_seq_and_ts(tmp_path):
    store = SQLiteBaseline(str(tmp_path / "s.sqlite"))
    seq1, ts1 = store.store_one("a.b", b"NATS/1.0\r\n\r\n", b"x")
    seq2, ts2 = store.store_one("a.c", None, b"y")
    assert (seq1, seq2) == (1, 2) and ts2 >= ts1 > 0
    store.flush()
    assert store.load(1) == ("a.b", ts1, b"NATS/1.0\r\n\r\n", b"x")
    assert store.load(3) is None
    assert store.load_last("a.c") == (2, ts2, None, b"y")
    assert store.num_pending(1, "a.b") == 1 and store.num_pending(2, "a.b") == 0
    store.close()


def test_lmdb_value_round_trip_and_keys_sort_by_seq(tmp_path):
    value = LMDBBaseline.encode("orders.5", 123456789, b"NATS/1.0\r\nA: b\r\n\r\n", b"payload")
    assert LMDBBaseline.decode(value) == ("orders.5", 123456789, b"NATS/1.0\r\nA: b\r\n\r\n", b"payload")
    assert LMDBBaseline.decode(LMDBBaseline.encode("s", 1, None, b""))[2:] == (None, b"")
    store = LMDBBaseline(str(tmp_path / "db"), map_size=64 << 20)
    store.store_batch([("s", None, bytes([i % 256])) for i in range(300)])
    with store.env.begin() as txn:
        keys = [key for key, _ in txn.cursor()]
    assert keys == sorted(keys) and len(keys) == 300
    assert store.load(256)[3] == bytes([255]) and store.load(301) is None
    store.close()
