"""Structured Streaming: the jsstore stream reader (directories and NATS) and the sink."""

from __future__ import annotations

import datetime
import os

import pytest

import jsstore
from jsstore import StoreOptions
from jsstore.spark import natsclient
from jsstore.spark.options import SourceOptions
from jsstoreserver import jsstore_server

pytestmark = pytest.mark.spark


def publish(directory, start, count, stream="TICKS"):
    with jsstore.open(directory, StoreOptions(block_size=32 * 1024)) as js:
        if stream not in js.stream_names():
            js.add_stream(name=stream, subjects=[f"{stream.lower()}.>"])
        for i in range(start, start + count):
            js.publish(f"{stream.lower()}.{i % 5}", f"m{i}".encode())


def run_available_now(spark, reader, sink_format, out, checkpoint, **sink_options):
    writer = (reader.writeStream.format(sink_format).option("checkpointLocation", checkpoint)
              .trigger(availableNow=True))
    if out is not None and sink_format != "jsstore":
        writer = writer.option("path", out)
    for key, value in sink_options.items():
        writer = writer.option(key, value)
    query = writer.start()
    query.awaitTermination(180)
    assert query.exception() is None, query.exception()
    return query


def stream_reader(spark, directory, **options):
    read = spark.readStream.format("jsstore").option("path", directory).option("stream", "TICKS")
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


def parquet_seqs(spark, out):
    return sorted(r["seq"] for r in spark.read.parquet(out).select("seq").collect())


def test_available_now_then_restart_reads_only_what_is_new(spark, tmp_path):
    directory, out, checkpoint = str(tmp_path / "store"), str(tmp_path / "out"), str(tmp_path / "ck")
    publish(directory, 0, 2500)
    query = run_available_now(spark, stream_reader(spark, directory, maxMessagesPerTrigger="1000"),
                              "parquet", out, checkpoint)
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [1000, 1000, 500]
    assert parquet_seqs(spark, out) == list(range(1, 2501))
    publish(directory, 2500, 300)
    query = run_available_now(spark, stream_reader(spark, directory, maxMessagesPerTrigger="1000"),
                              "parquet", out, checkpoint)
    assert sum(p["numInputRows"] for p in query.recentProgress) == 300
    assert parquet_seqs(spark, out) == list(range(1, 2801))


def test_starting_offsets(spark, tmp_path):
    directory = str(tmp_path / "store")
    publish(directory, 0, 200)
    with jsstore.open(directory) as js:
        times = {seq: js.get_msg("TICKS", seq).time for seq in range(1, 201)}
    micros = times[120] // 1000                     # a time at or before message 120's
    stamp = (datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
             + datetime.timedelta(microseconds=micros))
    from_time = min(seq for seq, ts in times.items() if ts >= micros * 1000)
    cases = {"latest": [], "150": list(range(150, 201)), "earliest": list(range(1, 201)),
             stamp.isoformat(): list(range(from_time, 201))}
    for number, (start, expected) in enumerate(cases.items()):
        out, ck = str(tmp_path / f"out{number}"), str(tmp_path / f"ck{number}")
        run_available_now(spark, stream_reader(spark, directory, startingOffsets=start),
                          "parquet", out, ck)
        written = os.path.isdir(out) and any(n.endswith(".parquet") for n in os.listdir(out))
        assert (parquet_seqs(spark, out) if written else []) == expected, start


def test_streaming_over_nats_restarts_with_only_new(spark, tmp_path):
    directory, out, checkpoint = str(tmp_path / "store"), str(tmp_path / "out"), str(tmp_path / "ck")
    publish(directory, 0, 1200)
    with jsstore_server(directory) as server:
        reader = (spark.readStream.format("jsstore").option("url", server.url)
                  .option("stream", "TICKS").option("maxMessagesPerTrigger", "500").load())
        run_available_now(spark, reader, "parquet", out, checkpoint)
        assert parquet_seqs(spark, out) == list(range(1, 1201))
        options = SourceOptions(url=server.url, stream="TICKS")
        natsclient.publish_all(options, "TICKS", ((f"ticks.{i % 5}", b"late", None)
                                                  for i in range(100)))
        reader = (spark.readStream.format("jsstore").option("url", server.url)
                  .option("stream", "TICKS").load())
        query = run_available_now(spark, reader, "parquet", out, checkpoint)
        assert sum(p["numInputRows"] for p in query.recentProgress) == 100
        assert parquet_seqs(spark, out) == list(range(1, 1301))


def _forget_last_commit(checkpoint):
    """What a crash between the sink's commit and the checkpoint's commit record leaves:
    Spark runs the last batch again on restart."""
    commits = os.path.join(checkpoint, "commits")
    last = max((n for n in os.listdir(commits) if n.isdigit()), key=int)
    os.unlink(os.path.join(commits, last))
    crc = os.path.join(commits, f".{last}.crc")
    if os.path.exists(crc):
        os.unlink(crc)


def sink_rows(spark, directory, stream="COPY"):
    df = spark.read.format("jsstore").option("path", directory).option("stream", stream).load()
    return sorted(bytes(r["data"]) for r in df.collect())


def test_sink_writes_each_row_once_across_a_restart(spark, tmp_path):
    directory, checkpoint = str(tmp_path / "store"), str(tmp_path / "ck")
    publish(directory, 0, 600)
    with jsstore.open(directory) as js:
        js.add_stream(name="COPY", subjects=["copy.>"])
    source = stream_reader(spark, directory, maxMessagesPerTrigger="250").selectExpr(
        "concat('copy.', subject) AS subject", "data")
    run_available_now(spark, source, "jsstore", None, checkpoint, path=directory, stream="COPY",
                      server_stopped="true")
    assert sink_rows(spark, directory) == sorted(f"m{i}".encode() for i in range(600))
    _forget_last_commit(checkpoint)
    publish(directory, 600, 50)
    source = stream_reader(spark, directory, maxMessagesPerTrigger="250").selectExpr(
        "concat('copy.', subject) AS subject", "data")
    run_available_now(spark, source, "jsstore", None, checkpoint, path=directory, stream="COPY",
                      server_stopped="true")
    assert sink_rows(spark, directory) == sorted(f"m{i}".encode() for i in range(650))


def test_nats_sink_writes_each_row_once_across_a_restart(spark, tmp_path):
    directory, checkpoint = str(tmp_path / "store"), str(tmp_path / "ck")
    publish(directory, 0, 400)
    with jsstore.open(directory) as js:
        js.add_stream(name="COPY", subjects=["copy.>"])
    with jsstore_server(directory) as server:
        def run():
            source = (spark.readStream.format("jsstore").option("url", server.url)
                      .option("stream", "TICKS").option("maxMessagesPerTrigger", "150").load()
                      .selectExpr("concat('copy.', subject) AS subject", "data"))
            run_available_now(spark, source, "jsstore", None, checkpoint, url=server.url,
                              stream="COPY", sink_id="copy-test")
        run()
        _forget_last_commit(checkpoint)
        run()
        options = SourceOptions(url=server.url, stream="COPY")
        assert natsclient.stream_info(options, "COPY")["state"]["messages"] == 400
        got = spark.read.format("jsstore").option("url", server.url).option("stream", "COPY").load()
        assert sorted(bytes(r["data"]) for r in got.collect()) == sorted(
            f"m{i}".encode() for i in range(400))
