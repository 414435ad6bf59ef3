"""Batch reads of store directories written by the embedded API, through Spark."""

from __future__ import annotations

import os

import pytest

import jsstore
from jsstore import StoreOptions
from jsstore.wire import headers as header_block
from sparksession import JVM_FORMAT, require_jvm_reader

pytestmark = pytest.mark.spark

SUBJECTS = [f"orders.{region}.{kind}" for region in ("eu", "us", "ap") for kind in ("new", "paid")]


def header_map(hdr: bytes | None):
    """The expected `headers` cell: keys in order of first appearance, every value kept."""
    if hdr is None:
        return None
    out: dict[str, list[str]] = {}
    for key, value in header_block.parse(hdr).fields:
        out.setdefault(key, []).append(value)
    return out


def fill(directory, count=3000, compression="none", block_size=16 * 1024):
    """Publish `count` messages (some with headers, one key repeated), delete a few;
    returns {seq: (subject, headers block, payload, ts)} of what the stream holds."""
    stored = {}
    with jsstore.open(directory, StoreOptions(block_size=block_size)) as js:
        js.add_stream(name="ORDERS", subjects=["orders.>"], compression=compression)
        for i in range(count):
            subject = SUBJECTS[i % len(SUBJECTS)] if i >= 100 else "orders.early.new"
            headers = None
            if i % 3 == 0:
                headers = {"Nats-Msg-Id": f"m-{i}", "Tag": ["a", f"b{i % 5}"], "Empty": ""}
            payload = bytes([i % 251]) * (i % 97)
            ack = js.publish(subject, payload, headers=headers)
            stored[ack.seq] = subject, payload
        for seq in (5, 6, 777, 1500, count - 1):
            js.delete_msg("ORDERS", seq, no_erase=seq % 2 == 0)
            del stored[seq]
        out = {}
        for seq in stored:
            msg = js.get_msg("ORDERS", seq)
            out[seq] = (msg.subject, msg.hdr, msg.data, msg.time)
    return out


def reader(spark, directory, fmt="jsstore", **options):
    read = spark.read.format(fmt).option("path", directory).option("stream", "ORDERS")
    for key, value in options.items():
        read = read.option(key, str(value))
    return read.load()


def rows_by_seq(df):
    return {row["seq"]: row for row in df.collect()}


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("orders"))
    return directory, fill(directory)


@pytest.mark.parametrize("compression", ["none", "s2", "lz4"])
def test_every_column_reads_back(spark, source_format, tmp_path, compression):
    expected = fill(str(tmp_path), compression=compression)
    df = reader(spark, str(tmp_path), source_format)
    assert df.columns == ["seq", "subject", "time", "time_ns", "headers", "data"]
    got = rows_by_seq(df)
    assert sorted(got) == sorted(expected)
    for seq, (subject, hdr, data, ts) in expected.items():
        row = got[seq]
        assert row["subject"] == subject
        assert bytes(row["data"]) == data
        assert row["time_ns"] == ts
        micros = row["time"].timestamp() * 1_000_000
        assert abs(micros - ts // 1000) < 2
        assert row["headers"] == header_map(hdr)


def test_repeated_header_keys_keep_every_value(spark, source_format, orders):
    directory, expected = orders
    row = reader(spark, directory, source_format).filter("seq = 1").collect()[0]
    assert row["headers"]["Tag"] == ["a", "b0"]
    assert row["headers"]["Empty"] == [""]
    assert row["headers"]["Nats-Msg-Id"] == ["m-0"]


def test_a_store_that_is_open_reads_the_same(spark, source_format, tmp_path):
    """Without index.db (jsstore removes it while a store is open) the planner walks the
    blocks and finds the deletes from their tombstones."""
    expected = fill(str(tmp_path))
    with jsstore.open(str(tmp_path)) as js:
        extra = js.publish("orders.late.new", b"late").seq
        js.delete_msg("ORDERS", 42, no_erase=True)
        assert not os.path.exists(os.path.join(jsstore.stream_dir(str(tmp_path), "ORDERS"),
                                               "msgs", "index.db"))
        got = rows_by_seq(reader(spark, str(tmp_path), source_format))
    want = set(expected) - {42} | {extra}
    assert set(got) == want


def test_projection_by_user_schema(spark, source_format, orders):
    directory, expected = orders
    df = (spark.read.format(source_format).schema("subject STRING, seq BIGINT")
          .option("path", directory).option("stream", "ORDERS").load())
    rows = df.collect()
    assert df.columns == ["subject", "seq"]
    assert {r["seq"]: r["subject"] for r in rows} == {s: v[0] for s, v in expected.items()}


FILTERS = [
    "subject = 'orders.eu.new'",
    "subject IN ('orders.us.paid', 'orders.ap.new', 'nope')",
    "subject LIKE 'orders.e%'",
    "startswith(subject, 'orders.us.')",
    "seq > 1000 AND seq <= 2100",
    "seq = 777",
    "seq >= 2990",
    "seq < 10 OR seq > 2995",
    "subject = 'orders.eu.new' AND seq BETWEEN 200 AND 900",
    "subject LIKE 'orders.%' AND subject = 'orders.early.new'",
    "seq % 7 = 3",
    "endswith(subject, '.paid')",
    "headers IS NOT NULL AND seq < 500",
    "size(headers['Tag']) = 2 AND subject = 'orders.ap.paid'",
]


@pytest.mark.parametrize("condition", FILTERS)
def test_pushdown_gives_what_spark_filtering_gives(spark, source_format, orders, condition):
    directory, _ = orders
    pushed = reader(spark, directory, source_format).filter(condition)
    plain = reader(spark, directory, pushdown="false").filter(condition)
    got = sorted((r["seq"], r["subject"], bytes(r["data"])) for r in pushed.collect())
    want = sorted((r["seq"], r["subject"], bytes(r["data"])) for r in plain.collect())
    assert got == want


def test_time_filters_pushed_down(spark, source_format, orders):
    directory, expected = orders
    times = sorted(ts for (_s, _h, _d, ts) in expected.values())
    middle_ns = times[len(times) // 2]
    plain = reader(spark, directory, pushdown="false")
    cut = plain.filter(f"time_ns = {middle_ns}").collect()[0]["time"]
    for condition in ("time > '{t}'", "time >= '{t}'", "time < '{t}'", "time = '{t}'",
                      f"time_ns >= {middle_ns} AND time_ns < {middle_ns + 5_000_000}"):
        text = condition.format(t=cut.strftime("%Y-%m-%d %H:%M:%S.%f"))
        got = sorted(r["seq"] for r in reader(spark, directory, source_format).filter(text).collect())
        want = sorted(r["seq"] for r in plain.filter(text).collect())
        assert got == want, text


def test_subject_filter_option_takes_nats_wildcards(spark, source_format, orders):
    directory, expected = orders
    for nats_filter, matches in (("orders.*.new", lambda s: s.endswith(".new")),
                                 ("orders.eu.>", lambda s: s.startswith("orders.eu.")),
                                 ("orders.us.paid,orders.early.*",
                                  lambda s: s == "orders.us.paid" or s.startswith("orders.early."))):
        got = sorted(r["seq"] for r in reader(spark, directory, source_format, subject_filter=nats_filter)
                     .select("seq").collect())
        assert got == sorted(s for s, v in expected.items() if matches(v[0])), nats_filter


def test_pruning_shows_in_the_planned_partitions(spark, orders):
    """The JVM reader prunes blocks by Spark's filters (the Python source takes none: see
    test_spark_loud_reuse.py)."""
    require_jvm_reader()
    directory, expected = orders
    everything = reader(spark, directory, JVM_FORMAT, partition_bytes=1)
    total = everything.rdd.getNumPartitions()
    assert total >= 8
    narrow = everything.filter("seq BETWEEN 1200 AND 1300")
    assert 1 <= narrow.rdd.getNumPartitions() <= 2
    early = everything.filter("subject = 'orders.early.new'")     # only in the first 100
    assert early.rdd.getNumPartitions() <= 2
    assert early.count() == sum(1 for v in expected.values() if v[0] == "orders.early.new")
    last_ts = max(v[3] for v in expected.values())
    recent = everything.filter(f"time_ns > {last_ts - 1}")
    assert recent.rdd.getNumPartitions() == 1 and recent.count() == 1


def test_everything_pruned_reads_nothing(spark, source_format, orders):
    directory, _ = orders
    assert reader(spark, directory, source_format).filter("seq > 100000000").count() == 0
    assert reader(spark, directory, source_format).filter("subject = 'orders.none'").count() == 0


def test_unknown_stream_fails_clearly(spark, source_format, orders):
    directory, _ = orders
    with pytest.raises(Exception, match="no stream 'MISSING'"):
        spark.read.format(source_format).option("path", directory).option("stream", "MISSING").load().count()


# -- KV buckets ---------------------------------------------------------------------------------

def fill_kv(directory):
    """A bucket written the way KV clients write it; returns (latest live, history)."""
    history = []
    with jsstore.open(directory, StoreOptions(block_size=4096)) as js:
        js.add_stream(name="KV_cfg", subjects=["$KV.cfg.>"], max_msgs_per_subject=10,
                      allow_rollup_hdrs=True, allow_direct=True)

        def put(key, value, operation=None):
            headers = {"KV-Operation": operation} if operation else None
            if operation == "PURGE":
                headers["Nats-Rollup"] = "sub"
            ack = js.publish(f"$KV.cfg.{key}", value, headers=headers)
            history.append((key, value, ack.seq, operation or "PUT"))

        for round_ in range(30):
            for key in ("a", "b.c", "d", "e"):
                put(key, f"{key}-{round_}".encode())
        put("d", b"", "DEL")
        put("e", b"", "PURGE")
        put("a", b"final")
    latest = {}
    for key, value, seq, operation in history:
        latest[key] = (value, seq, operation)
    live = {k: v for k, v in latest.items() if v[2] == "PUT"}
    return live, history


def test_kv_bucket_latest_revisions(spark, tmp_path):
    live, _ = fill_kv(str(tmp_path))
    df = spark.read.format("jsstore").option("path", str(tmp_path)).option("kv", "cfg").load()
    assert df.columns == ["key", "value", "revision", "created", "operation"]
    got = {r["key"]: (bytes(r["value"]), r["revision"], r["operation"]) for r in df.collect()}
    assert got == live
    one = df.filter("key = 'b.c'").collect()
    assert [(r["key"], r["revision"]) for r in one] == [("b.c", live["b.c"][1])]


def test_kv_history_has_every_kept_revision(spark, tmp_path):
    _, history = fill_kv(str(tmp_path))
    df = (spark.read.format("jsstore").option("path", str(tmp_path)).option("kv", "cfg")
          .option("kv_history", "true").load())
    got = sorted((r["key"], r["revision"], r["operation"]) for r in df.collect())
    with jsstore.open(str(tmp_path)) as js:
        kept = set()
        for key, _value, seq, _op in history:
            try:
                js.get_msg("KV_cfg", seq)
                kept.add(seq)
            except Exception:
                pass
    assert got == sorted((k, s, op) for k, _v, s, op in history if s in kept)
    revisions = df.filter("key = 'a' AND revision > 100").collect()
    assert sorted(r["revision"] for r in revisions) == sorted(
        s for k, _v, s, _op in history if k == "a" and s > 100 and s in kept)
