"""The JVM reader (format "jsstore-jvm") against the Python source on the same stores: the
same rows, the same plan, its own options and errors.

The reading tests shared with the Python source (every column, pushdown, pruning, nats-server
stores...) run against both readers through the `source_format` fixture; these are the ones
only the JVM reader has.
"""

from __future__ import annotations

import os
import random
import re
import shutil

import pytest

import jsstore
from jsstore.spark.planning import load_stream_blocks, plan
from jsstore.spark.scan import ScanFilter
from sparksession import JVM_FORMAT, jvm_scan_metrics, require_jvm_reader
from test_spark_read import fill

pytestmark = pytest.mark.spark

PLANNED = re.compile(r"plannedBytes=(\d+)")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("jvm-orders"))
    return directory, fill(directory, count=4000, compression="s2", block_size=8 * 1024)


@pytest.fixture(autouse=True)
def _jvm(spark):
    require_jvm_reader()


def read(spark, directory, fmt=JVM_FORMAT, **options):
    reader = spark.read.format(fmt).option("path", directory).option("stream", "ORDERS")
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def every_cell(df):
    return sorted((r["seq"], r["subject"], r["time"], r["time_ns"],
                   None if r["headers"] is None else sorted(r["headers"].items()),
                   bytes(r["data"])) for r in df.collect())


def test_every_cell_equals_the_python_source(spark, store):
    directory, expected = store
    jvm = every_cell(read(spark, directory))
    assert jvm == every_cell(read(spark, directory, "jsstore"))
    assert [row[0] for row in jvm] == sorted(expected)


@pytest.mark.parametrize("batch_rows", [1, 7, 4096])
def test_rows_path_and_batch_sizes_give_the_same_rows(spark, store, batch_rows):
    directory, _ = store
    want = every_cell(read(spark, directory, "jsstore"))
    assert every_cell(read(spark, directory, batch_rows=batch_rows)) == want
    assert every_cell(read(spark, directory, batch_rows=batch_rows, columnar="false")) == want


@pytest.mark.parametrize("columns", [["seq"], ["data", "seq"], ["headers"], ["time", "subject"], []])
def test_projections(spark, store, columns):
    directory, expected = store
    df = read(spark, directory).select(*columns)
    if not columns:
        assert df.count() == len(expected)
        return
    got = sorted(tuple(repr(v) for v in r) for r in df.collect())
    want = sorted(tuple(repr(v) for v in r)
                  for r in read(spark, directory, "jsstore").select(*columns).collect())
    assert got == want


def jvm_planned(df) -> tuple[int, int]:
    plan_text = df._jdf.queryExecution().executedPlan().toString()
    found = PLANNED.findall(plan_text)
    assert len(found) == 1, plan_text
    return int(found[0]), df.rdd.getNumPartitions()


@pytest.mark.parametrize("condition, scan", [
    ("seq > 0", ScanFilter()),
    ("seq BETWEEN 1200 AND 1300", ScanFilter(seq_low=1200, seq_high=1300)),
    ("subject = 'orders.early.new'", ScanFilter(exact={"orders.early.new"})),
    ("subject IN ('orders.eu.new', 'orders.none')", ScanFilter(exact={"orders.eu.new", "orders.none"})),
    ("seq > 100000000", ScanFilter(seq_low=100000001)),
])
def test_the_plan_is_the_python_planners(spark, store, condition, scan):
    directory, _ = store
    target = 64 * 1024
    _stream, parts = plan(jsstore.stream_dir(directory, "ORDERS"), "ORDERS", scan, target)
    planned, partitions = jvm_planned(read(spark, directory, partition_bytes=target).filter(condition))
    assert planned == sum(p.size for p in parts)
    assert partitions == len(parts)


def test_a_user_schema_with_an_unknown_column_is_refused(spark, store):
    directory, _ = store
    with pytest.raises(Exception, match="unknown column"):
        (spark.read.format(JVM_FORMAT).schema("seq BIGINT, nope STRING").option("path", directory)
         .option("stream", "ORDERS").load().collect())


@pytest.mark.parametrize("option, value", [("kv", "cfg"), ("url", "nats://127.0.0.1:4222")])
def test_what_only_the_python_source_does_is_refused_by_name(spark, store, option, value):
    directory, _ = store
    with pytest.raises(Exception, match=rf"option '{option}' is taken by format\(\"jsstore\"\) only"):
        read(spark, directory, **{option: value}).collect()


@pytest.mark.parametrize("option, value, message", [
    ("batch_rows", "0", "outside"), ("partition_bytes", "lots", "not an integer"),
    ("columnar", "maybe", "not true or false")])
def test_bad_option_values_are_refused(spark, store, option, value, message):
    directory, _ = store
    with pytest.raises(Exception, match=f"option '{option}'.*{message}"):
        read(spark, directory, **{option: value}).collect()


def test_a_missing_path_or_stream_is_refused(spark, store):
    directory, _ = store
    with pytest.raises(Exception, match="option 'stream' is required"):
        spark.read.format(JVM_FORMAT).option("path", directory).load().collect()
    with pytest.raises(Exception, match="option 'path'"):
        spark.read.format(JVM_FORMAT).option("stream", "ORDERS").load().collect()


# -- per-block subject indexes ------------------------------------------------------------------

@pytest.fixture
def plain_store(tmp_path):
    directory = str(tmp_path / "store")
    return directory, fill(directory, count=3000, block_size=16 * 1024)


def subject_rows(spark, directory, condition, **options):
    return every_cell(read(spark, directory, **options).filter(condition))


def touch_first_block(directory):
    """Move the first block file's mtime: its indexes describe another version of it now."""
    msgs = os.path.join(jsstore.stream_dir(directory, "ORDERS"), "msgs")
    first_block = os.path.join(msgs, sorted((n for n in os.listdir(msgs) if n.endswith(".blk")),
                                            key=lambda n: int(n[:-4]))[0])
    stat = os.stat(first_block)
    os.utime(first_block, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


def test_a_subject_query_writes_indexes_and_the_next_reads_through_them(spark, plain_store, tmp_path):
    directory, expected = plain_store
    index_dir = tmp_path / "index"
    condition = "subject IN ('orders.eu.new', 'orders.us.paid')"
    want = subject_rows(spark, directory, condition, block_index="false")
    assert [r[0] for r in want] == sorted(s for s, v in expected.items()
                                          if v[0] in ("orders.eu.new", "orders.us.paid"))
    first = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter(condition))
    blocks = len([n for n in os.listdir(os.path.join(jsstore.stream_dir(directory, "ORDERS"), "msgs"))
                  if n.endswith(".blk")])
    written = os.listdir(index_dir)
    assert len(written) == blocks - 1                        # every block but the last
    assert first["blockBytesRead"] == first["plannedBlockBytes"]
    second = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter(condition))
    assert second["blockBytesRead"] < first["blockBytesRead"] / 2
    assert second["recordsWalked"] < first["recordsWalked"] / 2
    assert subject_rows(spark, directory, condition, block_index_dir=index_dir) == want
    # a subject no indexed block holds reads the last block alone
    none = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir)
                        .filter("subject = 'orders.nowhere'"))
    assert none["recordsWalked"] == 0


def test_an_index_of_another_version_of_the_block_is_not_used(spark, plain_store, tmp_path):
    directory, _ = plain_store
    index_dir = tmp_path / "index"
    condition = "subject = 'orders.ap.new'"
    want = subject_rows(spark, directory, condition, block_index="false")
    assert subject_rows(spark, directory, condition, block_index_dir=index_dir) == want
    touch_first_block(directory)
    for name in sorted(os.listdir(index_dir))[::2]:          # and damage every other index
        path = index_dir / name
        path.write_bytes(path.read_bytes()[:40] + b"\xff" * 7)
    again = read(spark, directory, block_index_dir=index_dir).filter(condition)
    assert every_cell(again) == want
    with jsstore.open(directory) as js:                      # deletes in indexed blocks
        for seq in [row[0] for row in want[:5]]:
            js.delete_msg("ORDERS", seq)
    after = subject_rows(spark, directory, condition, block_index_dir=index_dir)
    assert after == want[5:]
    assert after == subject_rows(spark, directory, condition, block_index="false")


def test_no_index_without_exact_subjects_or_when_turned_off_or_unwritable(spark, plain_store, tmp_path):
    directory, _ = plain_store
    index_dir = tmp_path / "index"
    read(spark, directory, block_index_dir=index_dir).filter("subject LIKE 'orders.eu%'").collect()
    read(spark, directory, block_index_dir=index_dir, block_index="false").filter(
        "subject = 'orders.eu.new'").collect()
    assert not index_dir.exists()
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a directory")
    condition = "subject = 'orders.eu.new'"
    assert (subject_rows(spark, directory, condition, block_index_dir=blocker)
            == subject_rows(spark, directory, condition, block_index="false"))


# -- per-block position indexes -----------------------------------------------------------------

BASE_NS = 1_780_000_000_000_000_000
RANGED_COUNT = 12_000


def ranged_store(directory, times):
    """ORDERS with message i at sequence i + 1 and time times[i] (40-byte payloads, 256 KiB
    blocks: about 3,500 records and 16 position samples a block)."""
    config = jsstore.StreamConfig(name="ORDERS", subjects=["orders.>"])
    store = jsstore.FileStore(jsstore.stream_dir(directory, "ORDERS"), config,
                              jsstore.StoreOptions(block_size=256 * 1024))
    for i, ts in enumerate(times):
        store.store_raw_msg(f"orders.{i % 7}", None, bytes([i % 251]) * 40, i + 1, ts)
    store.stop()


def index_files(index_dir, suffix):
    return [n for n in os.listdir(index_dir) if n.endswith(suffix)] if index_dir.exists() else []


def block_count(directory):
    msgs = os.path.join(jsstore.stream_dir(directory, "ORDERS"), "msgs")
    return len([n for n in os.listdir(msgs) if n.endswith(".blk")])


def test_a_range_query_writes_position_indexes_and_the_next_reads_only_its_part(spark, tmp_path):
    directory = str(tmp_path / "store")
    ranged_store(directory, [BASE_NS + 1000 * i for i in range(RANGED_COUNT)])
    index_dir = tmp_path / "index"
    window = f"time_ns BETWEEN {BASE_NS + 1000 * 5000} AND {BASE_NS + 1000 * 5600}"
    want = subject_rows(spark, directory, window, block_index="false")
    assert [r[0] for r in want] == list(range(5001, 5602))
    first = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter(window))
    assert first["blockBytesRead"] == first["plannedBlockBytes"]
    assert index_files(index_dir, ".jsbp") and not index_files(index_dir, ".jssi")
    jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir))    # a whole read
    every = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter("seq >= 1"))
    assert len(index_files(index_dir, ".jsbp")) == block_count(directory) - 1   # not the last
    second = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter(window))
    assert second["blockBytesRead"] < first["blockBytesRead"] / 3
    assert second["recordsWalked"] < first["recordsWalked"] / 3
    assert subject_rows(spark, directory, window, block_index_dir=index_dir) == want
    assert every["blockBytesRead"] >= every["plannedBlockBytes"]         # every block, whole
    # random ranges of sequences, of times and of both, with and without subject clauses,
    # read through the indexes: the rows of a read without them
    rng = random.Random(7)
    for _ in range(12):
        low, high = sorted(rng.randrange(-50, RANGED_COUNT + 50) for _ in range(2))
        t_low, t_high = sorted(rng.randrange(-50, RANGED_COUNT + 50) for _ in range(2))
        condition = rng.choice([
            f"seq BETWEEN {low} AND {high}",
            f"time_ns >= {BASE_NS + 1000 * t_low} AND time_ns < {BASE_NS + 1000 * t_high}",
            f"seq > {low} AND time_ns <= {BASE_NS + 1000 * t_high} AND subject LIKE 'orders.3%'",
            f"seq < {high} AND time_ns > {BASE_NS + 1000 * t_low} AND subject = 'orders.5'",
        ])
        assert (subject_rows(spark, directory, condition, block_index_dir=index_dir)
                == subject_rows(spark, directory, condition, block_index="false")), condition


def test_times_that_go_down_in_a_block_bound_nothing(spark, tmp_path):
    """In a block whose times go down somewhere, the part read is bounded by sequences
    alone: a window of times still finds a message stored out of time order. (Blocks are
    pruned by their first and last times on the driver, as nats-server looks up a start
    time, so the out-of-order message here stays inside its block's first/last times.)"""
    times = [BASE_NS + 1000 * i for i in range(RANGED_COUNT)]
    directory = str(tmp_path / "store")
    ranged_store(directory, times)
    third = load_stream_blocks(jsstore.stream_dir(directory, "ORDERS"), "ORDERS").blocks[2]
    early, late = third.first_seq + 100, third.last_seq - 100  # message i is sequence i + 1
    shutil.rmtree(directory)
    times[late - 1] = times[early - 1] + 1                   # older than those before it
    ranged_store(directory, times)
    index_dir = tmp_path / "index"
    window = f"time_ns BETWEEN {times[early - 1]} AND {times[early - 1] + 1}"
    want = subject_rows(spark, directory, window, block_index="false")
    assert [r[0] for r in want] == [early, late]
    first = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter(window))
    assert subject_rows(spark, directory, window, block_index_dir=index_dir) == want
    again = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter(window))
    assert again["blockBytesRead"] >= first["blockBytesRead"]    # the whole block, again
    # in a block whose times never go down, the same kind of window reads a small part
    other = load_stream_blocks(jsstore.stream_dir(directory, "ORDERS"), "ORDERS").blocks[1]
    ts = times[other.first_seq + 99]
    narrow = f"time_ns BETWEEN {ts} AND {ts + 1}"
    jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter(narrow))
    small = jvm_scan_metrics(read(spark, directory, block_index_dir=index_dir).filter(narrow))
    assert small["blockBytesRead"] < first["blockBytesRead"] / 4
    assert subject_rows(spark, directory, narrow, block_index_dir=index_dir) == subject_rows(
        spark, directory, narrow, block_index="false")
    assert [r[0] for r in subject_rows(spark, directory, narrow, block_index_dir=index_dir)] == [
        other.first_seq + 100]


def test_a_position_index_of_another_version_of_the_block_is_not_used(spark, tmp_path):
    directory = str(tmp_path / "store")
    ranged_store(directory, [BASE_NS + 1000 * i for i in range(RANGED_COUNT)])
    index_dir = tmp_path / "index"
    window = "seq BETWEEN 3000 AND 4200"
    want = subject_rows(spark, directory, window, block_index="false")
    assert subject_rows(spark, directory, window, block_index_dir=index_dir) == want
    touch_first_block(directory)
    for name in index_files(index_dir, ".jsbp"):               # and damage every index:
        path = index_dir / name                                 # a late sample's sequence 0
        raw = bytearray(path.read_bytes())                      # would make its part start there
        count = int.from_bytes(raw[36:40], "little")
        at = 40 + 20 * (count - 2) + 4
        raw[at:at + 8] = bytes(8)
        path.write_bytes(bytes(raw))
    assert subject_rows(spark, directory, window, block_index_dir=index_dir) == want
    store = jsstore.FileStore(jsstore.stream_dir(directory, "ORDERS"),
                              jsstore.StreamConfig(name="ORDERS", subjects=["orders.>"]),
                              jsstore.StoreOptions(block_size=256 * 1024))
    for seq in (3000, 3500, 4100):                          # deletes in indexed blocks
        store.remove_msg(seq)
    store.stop()
    after = subject_rows(spark, directory, window, block_index_dir=index_dir)
    assert [r[0] for r in after] == [r[0] for r in want if r[0] not in (3000, 3500, 4100)]
    assert after == subject_rows(spark, directory, window, block_index="false")


def test_a_read_is_spread_over_the_cores_as_spark_splits_files(spark, tmp_path):
    """Bytes per task: at most partition_bytes, and an even share per core unless that share
    is under 4 MiB (Spark's openCostInBytes)."""
    directory = str(tmp_path / "store")
    with jsstore.open(directory, jsstore.StoreOptions(block_size=1024 * 1024)) as js:
        js.add_stream(name="ORDERS", subjects=["orders.>"])
        for i in range(12_000):
            js.publish(f"orders.{i % 10}", bytes([i % 256]) * 800)
    cores = spark.sparkContext.defaultParallelism
    assert cores == 2
    whole = read(spark, directory)
    assert whole.rdd.getNumPartitions() == 2                 # ~10 MB: two shares over 4 MiB
    assert whole.count() == 12_000
    assert read(spark, directory, "jsstore").rdd.getNumPartitions() == 1   # 128 MiB a task
    small = whole.filter("seq <= 3000")                      # ~2.5 MB: one task is enough
    assert small.rdd.getNumPartitions() == 1 and small.count() == 3000


def test_two_readers_in_one_task_keep_their_own_blocks(spark, tmp_path):
    """Two scans zipped partition by partition are read in one task thread, each reader
    still walking a block while the other reads one (batches of 2 rows): the block buffer a
    thread reuses must not be shared by them."""
    directory = str(tmp_path / "store")
    with jsstore.open(directory, jsstore.StoreOptions(block_size=2048)) as js:
        js.add_stream(name="ORDERS", subjects=["orders.>"])
        for i in range(400):
            js.publish(f"orders.{i % 3}", f"m{i}-".encode() * (i % 20 + 1))
    seqs = read(spark, directory, batch_rows=2, partition_bytes=8192).select("seq")
    data = read(spark, directory, batch_rows=2, partition_bytes=8192).select("data")
    assert seqs.rdd.getNumPartitions() > 1
    pairs = seqs.rdd.zip(data.rdd).map(lambda p: (p[0]["seq"], bytes(p[1]["data"]))).collect()
    want = [(r["seq"], bytes(r["data"])) for r in read(spark, directory, "jsstore").collect()]
    assert sorted(pairs) == sorted(want) and len(pairs) == 400
