"""The JVM reader (format "jsstore-jvm") against the Python source on the same stores: the
same rows, the same plan, its own options and errors.

The reading tests shared with the Python source (every column, pushdown, pruning, nats-server
stores...) run against both readers through the `source_format` fixture; these are the ones
only the JVM reader has.
"""

from __future__ import annotations

import os
import re

import pytest

import jsstore
from jsstore.spark.planning import plan
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
    with pytest.raises(Exception, match=f"option '{option}' is not supported"):
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


def test_a_subject_query_writes_indexes_and_the_next_reads_through_them(spark, plain_store, tmp_path):
    directory, expected = plain_store
    index_dir = tmp_path / "index"
    condition = "subject IN ('orders.eu.new', 'orders.us.paid')"
    want = subject_rows(spark, directory, condition, subject_index="false")
    assert [r[0] for r in want] == sorted(s for s, v in expected.items()
                                          if v[0] in ("orders.eu.new", "orders.us.paid"))
    first = jvm_scan_metrics(read(spark, directory, subject_index_dir=index_dir).filter(condition))
    blocks = len([n for n in os.listdir(os.path.join(jsstore.stream_dir(directory, "ORDERS"), "msgs"))
                  if n.endswith(".blk")])
    written = os.listdir(index_dir)
    assert len(written) == blocks - 1                        # every block but the last
    assert first["blockBytesRead"] == first["plannedBlockBytes"]
    second = jvm_scan_metrics(read(spark, directory, subject_index_dir=index_dir).filter(condition))
    assert second["blockBytesRead"] < first["blockBytesRead"] / 2
    assert second["recordsWalked"] < first["recordsWalked"] / 2
    assert subject_rows(spark, directory, condition, subject_index_dir=index_dir) == want
    # a subject no indexed block holds reads the last block alone
    none = jvm_scan_metrics(read(spark, directory, subject_index_dir=index_dir)
                        .filter("subject = 'orders.nowhere'"))
    assert none["recordsWalked"] == 0


def test_an_index_of_another_version_of_the_block_is_not_used(spark, plain_store, tmp_path):
    directory, _ = plain_store
    index_dir = tmp_path / "index"
    condition = "subject = 'orders.ap.new'"
    want = subject_rows(spark, directory, condition, subject_index="false")
    assert subject_rows(spark, directory, condition, subject_index_dir=index_dir) == want
    msgs = os.path.join(jsstore.stream_dir(directory, "ORDERS"), "msgs")
    first_block = os.path.join(msgs, sorted((n for n in os.listdir(msgs) if n.endswith(".blk")),
                                            key=lambda n: int(n[:-4]))[0])
    stat = os.stat(first_block)
    os.utime(first_block, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    for name in sorted(os.listdir(index_dir))[::2]:          # and damage every other index
        path = index_dir / name
        path.write_bytes(path.read_bytes()[:40] + b"\xff" * 7)
    again = read(spark, directory, subject_index_dir=index_dir).filter(condition)
    assert every_cell(again) == want
    with jsstore.open(directory) as js:                      # deletes in indexed blocks
        for seq in [row[0] for row in want[:5]]:
            js.delete_msg("ORDERS", seq)
    after = subject_rows(spark, directory, condition, subject_index_dir=index_dir)
    assert after == want[5:]
    assert after == subject_rows(spark, directory, condition, subject_index="false")


def test_no_index_without_exact_subjects_or_when_turned_off_or_unwritable(spark, plain_store, tmp_path):
    directory, _ = plain_store
    index_dir = tmp_path / "index"
    read(spark, directory, subject_index_dir=index_dir).filter("subject LIKE 'orders.eu%'").collect()
    read(spark, directory, subject_index_dir=index_dir, subject_index="false").filter(
        "subject = 'orders.eu.new'").collect()
    assert not index_dir.exists()
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a directory")
    condition = "subject = 'orders.eu.new'"
    assert (subject_rows(spark, directory, condition, subject_index_dir=blocker)
            == subject_rows(spark, directory, condition, subject_index="false"))


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
