"""Batch writes into store directories through Spark: append, create, abort, ownership."""

from __future__ import annotations

import os

import pytest

import jsstore
from jsstore.spark.staged import STAGING_DIR

pytestmark = pytest.mark.spark


def source_rows(count, prefix="in"):
    return [(f"{prefix}.{i % 4}", f"payload-{i}".encode(),
             {"Tag": [f"t{i % 3}", "x"], "N": [str(i)]} if i % 2 else None) for i in range(count)]


def write(df, directory, stream="OUT", **options):
    """A directory write; no nats-server serves these stores (option server_stopped)."""
    writer = df.write.format("jsstore").option("path", directory).option("stream", stream)
    writer = writer.option("server_stopped", "true")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.mode("append").save()


def read(spark, directory, stream="OUT"):
    return spark.read.format("jsstore").option("path", directory).option("stream", stream).load()


def test_write_then_read_back(spark, tmp_path):
    directory = str(tmp_path)
    rows = source_rows(1500)
    df = spark.createDataFrame(rows, "subject STRING, data BINARY, headers MAP<STRING, ARRAY<STRING>>")
    write(df.repartition(3), directory, create="true", subjects="in.>")
    back = read(spark, directory).collect()
    assert sorted(r["seq"] for r in back) == list(range(1, 1501))      # contiguous
    got = sorted((r["subject"], bytes(r["data"]), r["headers"]) for r in back)
    assert got == sorted((s, d, h) for s, d, h in rows)
    # a second append continues the sequence; the stream's meta.inf came from add_stream
    write(spark.createDataFrame([("in.9", "text")], "subject STRING, data STRING"), directory)
    last = read(spark, directory).filter("seq > 1500").collect()
    assert [(r["seq"], r["subject"], bytes(r["data"])) for r in last] == [(1501, "in.9", b"text")]
    with jsstore.open(directory) as js:
        assert js.stream_info("OUT").state.messages == 1501
    assert os.listdir(os.path.join(directory, STAGING_DIR, "$G", "OUT")) == []


def test_write_applies_the_stream_limits(spark, tmp_path):
    directory = str(tmp_path)
    with jsstore.open(directory) as js:
        js.add_stream(name="OUT", subjects=["in.>"], max_msgs_per_subject=2)
    write(spark.createDataFrame([(f"in.{i % 3}", b"v") for i in range(30)],
                                "subject STRING, data BINARY").coalesce(1), directory)
    back = read(spark, directory).collect()
    assert sorted(r["seq"] for r in back) == [25, 26, 27, 28, 29, 30]


def test_a_failed_job_is_aborted_and_leaves_the_stream_untouched(spark, tmp_path):
    from pyspark.sql import functions as F   # optional dependency of the test body
    directory = str(tmp_path)
    with jsstore.open(directory) as js:
        js.add_stream(name="OUT", subjects=["in.>"])
        js.publish("in.0", b"before")

    @F.udf("binary")
    def explode_on(i):
        if i == 777:
            raise ValueError("boom")
        return b"x"

    df = spark.range(0, 1000, numPartitions=4).select(
        F.lit("in.1").alias("subject"), explode_on("id").alias("data"))
    with pytest.raises(Exception, match="boom"):
        write(df, directory)
    assert [r["data"] for r in read(spark, directory).collect()] == [bytearray(b"before")]
    assert os.listdir(os.path.join(directory, STAGING_DIR, "$G", "OUT")) == []


def test_a_store_owned_by_a_running_process_is_refused(spark, tmp_path):
    directory = str(tmp_path)
    with jsstore.open(directory) as js:           # this process owns the store now
        js.add_stream(name="OUT", subjects=["in.>"])
        df = spark.createDataFrame([("in.1", b"x")], "subject STRING, data BINARY")
        with pytest.raises(Exception, match=f"in use by pid {os.getpid()}"):
            write(df, directory)
        assert js.stream_info("OUT").state.messages == 0


def test_missing_stream_without_create_is_an_error(spark, tmp_path):
    df = spark.createDataFrame([("in.1", b"x")], "subject STRING, data BINARY")
    with pytest.raises(Exception, match="set option 'create'"):
        write(df, str(tmp_path), stream="NONE")


def test_a_subject_outside_the_stream_is_refused(spark, tmp_path):
    directory = str(tmp_path)
    with jsstore.open(directory) as js:
        js.add_stream(name="OUT", subjects=["in.>"])
    df = spark.createDataFrame([("in.1", b"x"), ("elsewhere", b"y")], "subject STRING, data BINARY")
    with pytest.raises(Exception, match="not one of stream 'OUT'"):
        write(df.coalesce(1), directory)
    assert read(spark, directory).count() == 0           # nothing appended before the refusal


@pytest.mark.parametrize("config", [
    {},
    {"max_msgs_per_subject": 2},
    {"max_msgs": 5, "discard": "new"},
    {"max_bytes": 400},
    {"subject_transform": {"src": "in.>", "dest": "moved.>"}, "subjects": ["in.>", "moved.>"]},
], ids=["plain", "per-subject", "discard-new", "max-bytes", "transform"])
def test_a_commit_appends_what_publishing_each_row_does(tmp_path, config):
    """The commit's append (Stream.publish_plain for rows without headers) leaves the
    stream as publishing every row through the embedded API does, errors included."""
    import pyarrow as pa   # optional dependency of the test body

    from jsstore.spark.rows import batch_rows
    from jsstore.spark.staged import append_batch
    rows = [(f"in.{i % 3}", f"payload-{i}".encode(),
             {"Nats-Msg-Id": [f"id-{i % 8}"]} if i % 4 == 1 else None) for i in range(12)]  # id-1 twice
    batch = pa.RecordBatch.from_arrays(
        [pa.array([r[0] for r in rows]), pa.array([r[1] for r in rows], pa.binary()),
         pa.array([list(r[2].items()) if r[2] else None for r in rows],
                  pa.map_(pa.string(), pa.list_(pa.string())))],
        names=["subject", "data", "headers"])
    params = {"subjects": ["in.>"], **config}
    outcomes = []
    for way in ("each row", "commit"):
        directory = str(tmp_path / way.replace(" ", "-"))
        with jsstore.open(directory) as js:
            js.add_stream(name="OUT", **params)
            error = None
            try:
                if way == "each row":
                    for subject, payload, headers in batch_rows(batch):
                        js.publish(subject, payload, headers=headers)
                else:
                    append_batch(js, "OUT", batch)
            except Exception as exc:     # noqa: BLE001 - compared between the two ways
                error = type(exc).__name__
            state = js.stream_info("OUT").state
            stored = []
            for seq in range(state.first_seq, state.last_seq + 1):
                try:
                    msg = js.get_msg("OUT", seq)
                except Exception:        # noqa: BLE001 - a removed sequence
                    continue
                stored.append((msg.seq, msg.subject, msg.data, msg.headers))
            outcomes.append((error, state.messages, stored))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][2], "something was stored"
