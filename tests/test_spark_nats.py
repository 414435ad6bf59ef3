"""Spark against the real nats-server and jsstore serve: directories nats-server wrote
(published by nats-py, with deletes and s2 compression) and reads and writes over NATS."""

from __future__ import annotations

import asyncio
import os
import shutil

import nats
import pyarrow as pa
import pytest
from nats.js.api import StorageType, StoreCompression, StreamConfig

import jsstore
from jsstore import StoreOptions
from jsstore.spark import natsclient
from jsstore.spark.natsread import NatsReader
from jsstore.spark.options import SourceOptions
from jsstore.spark.scan import ScanFilter
from jsstore.spark.writer import publish_partition
from jsstore_helpers import read_with_nats_py
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

pytestmark = [pytest.mark.spark, pytest.mark.natsserver]

PAYLOAD = bytes(range(256)) * 4          # 1 KiB: 6,000 messages fill two 4 MiB blocks


async def _publish_with_nats_py(url: str) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream()
    # max_bytes between 128 KB and 32 MB gives 4 MiB blocks; sealed blocks are s2 compressed
    await js.add_stream(StreamConfig(name="EVENTS", subjects=["ev.>"], storage=StorageType.FILE,
                                     compression=StoreCompression.S2, max_bytes=20_000_000))
    for i in range(6000):
        headers = {"Nats-Msg-Id": f"id-{i}", "Kind": f"k{i % 4}"} if i % 5 == 0 else None
        await js.publish(f"ev.{i % 9}.x", PAYLOAD[: 600 + i % 400], headers=headers)
    for seq in (3, 4, 100, 4321, 5999):
        await js.delete_msg("EVENTS", seq)
    await js.purge_stream("EVENTS", subject="ev.7.x")
    kv = await js.create_key_value(bucket="cfg", history=3)
    for round_ in range(5):
        for key in ("a", "b", "c"):
            await kv.put(key, f"{key}{round_}".encode())
    await kv.delete("b")
    await kv.purge("c")
    await kv.put("a", b"last")
    await nc.close()


def rows(df):
    return sorted((r["seq"], r["subject"], bytes(r["data"]),
                   {k: v[0] for k, v in r["headers"].items()} if r["headers"] else None)
                  for r in df.collect())


@pytest.fixture(scope="module")
def nats_store(tmp_path_factory):
    require_nats_server()
    directory = str(tmp_path_factory.mktemp("nats-store"))
    with nats_server(directory) as server:
        asyncio.run(_publish_with_nats_py(server.url))
        expected = asyncio.run(read_with_nats_py(server.url, "EVENTS"))
        msgs = os.path.join(directory, "jetstream", "$G", "streams", "EVENTS", "msgs")
        blocks = sorted(n for n in os.listdir(msgs) if n.endswith(".blk"))
        assert len(blocks) >= 2
        assert open(os.path.join(msgs, blocks[0]), "rb").read(3) == b"cmp"
        yield directory, expected, server


def test_directory_nats_server_writes_reads_as_nats_py_reads(spark, source_format, nats_store):
    directory, expected, _server = nats_store
    df = spark.read.format(source_format).option("path", directory).option("stream", "EVENTS").load()
    assert rows(df) == expected          # the server is running: its index.db is stale


def test_directory_after_nats_server_stopped(spark, source_format, nats_store, tmp_path):
    directory, expected, server = nats_store
    copy = str(tmp_path / "copy")
    shutil.copytree(directory, copy)
    with nats_server(copy):
        pass                             # a clean stop writes a current index.db
    df = spark.read.format(source_format).option("path", copy).option("stream", "EVENTS").load()
    assert rows(df) == expected
    pushed = rows(df.filter("subject IN ('ev.1.x', 'ev.7.x') AND seq > 2000"))
    assert pushed == [r for r in expected if r[1] == "ev.1.x" and r[0] > 2000]
    kv = spark.read.format("jsstore").option("path", copy).option("kv", "cfg").load()
    assert sorted((r["key"], bytes(r["value"])) for r in kv.collect()) == [("a", b"last")]


@pytest.fixture(scope="module")
def jsstore_written(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("written"))
    with jsstore.open(directory, StoreOptions(block_size=64 * 1024)) as js:
        js.add_stream(name="EVENTS", subjects=["ev.>"], compression="s2")
        for i in range(5000):
            js.publish(f"ev.{i % 9}.x", PAYLOAD[: i % 300],
                       headers={"Kind": f"k{i % 4}"} if i % 5 == 0 else None)
        for seq in (10, 11, 2500):
            js.delete_msg("EVENTS", seq)
    return directory


def read_over_nats(spark, url, **options):
    read = (spark.read.format("jsstore").option("url", url).option("stream", "EVENTS")
            .option("nats_partition_messages", "1500"))
    for key, value in options.items():
        read = read.option(key, value)
    return read.load()


@pytest.mark.parametrize("server_kind", ["jsstore", "nats-server"])
def test_over_nats_gives_the_directory_rows(spark, jsstore_written, tmp_path, server_kind):
    copy = str(tmp_path / "store")
    shutil.copytree(jsstore_written, copy)
    directory_rows = rows(spark.read.format("jsstore").option("path", copy)
                          .option("stream", "EVENTS").load())
    start = jsstore_server if server_kind == "jsstore" else nats_server
    with start(copy) as server:
        df = read_over_nats(spark, server.url)
        assert df.rdd.getNumPartitions() == 4
        assert rows(df) == directory_rows
        narrowed = rows(read_over_nats(spark, server.url).filter(
            "startswith(subject, 'ev.3.') AND seq BETWEEN 100 AND 4000"))
        assert narrowed == [r for r in directory_rows
                            if r[1].startswith("ev.3.") and 100 <= r[0] <= 4000]


def test_write_over_nats_and_a_retried_task_does_not_duplicate(spark, tmp_path):
    with jsstore_server(str(tmp_path)) as server:
        options = SourceOptions(url=server.url, stream="OUT")
        with natsclient.Connection(options) as conn:
            conn.request("$JS.API.STREAM.CREATE.OUT", {"name": "OUT", "subjects": ["out.>"],
                                                       "storage": "file"})
        source = spark.createDataFrame([(f"out.{i % 3}", f"v{i}".encode()) for i in range(2000)],
                                       "subject STRING, data BINARY").repartition(3)
        source.write.format("jsstore").option("url", server.url).option("stream", "OUT") \
            .mode("append").save()
        got = (spark.read.format("jsstore").option("url", server.url).option("stream", "OUT")
               .load().collect())
        assert sorted((r["subject"], bytes(r["data"])) for r in got) == sorted(
            (f"out.{i % 3}", f"v{i}".encode()) for i in range(2000))
        # the same task run twice (as Spark retries it): ids repeat, the stream keeps one copy
        batch = pa.RecordBatch.from_pylist([{"subject": "out.r", "data": b"x"}] * 50)
        first = publish_partition(options, "job-retry", iter([batch]))
        second = publish_partition(options, "job-retry", iter([batch]))
        assert (first.rows, first.duplicates) == (50, 0)
        assert (second.rows, second.duplicates) == (50, 50)
        state = natsclient.stream_info(options, "OUT")["state"]
        assert state["messages"] == 2050


def _allow_direct(url: str) -> None:
    with natsclient.Connection(SourceOptions(url=url, stream="EVENTS")) as conn:
        config = conn.request("$JS.API.STREAM.INFO.EVENTS", b"")["config"]
        config["allow_direct"] = True
        assert conn.request("$JS.API.STREAM.UPDATE.EVENTS", config)["config"]["allow_direct"]


@pytest.mark.parametrize("server_kind", ["jsstore", "nats-server"])
def test_direct_gets_give_the_pull_consumers_records(jsstore_written, tmp_path, server_kind,
                                                     monkeypatch):
    """Batched direct gets (the stream allows them) and the pull consumer hand out the same
    block records (subjects, sequences, timestamps, header blocks, payloads) for ranges
    across deleted sequences, past the end and inside a gap, with batches that overlap
    after deletes and batches cut short by max_bytes."""
    copy = str(tmp_path / "store")
    shutil.copytree(jsstore_written, copy)
    start = jsstore_server if server_kind == "jsstore" else nats_server
    with start(copy) as server:
        _allow_direct(server.url)
        options = SourceOptions(url=server.url, stream="EVENTS", nats_batch=97)
        ranges = ((1, 5000), (9, 2503), (10, 11), (2500, 2500), (4990, 9000), (1, 1))
        for max_bytes in (natsclient.DIRECT_MAX_BYTES, 3000):
            monkeypatch.setattr(natsclient, "DIRECT_MAX_BYTES", max_bytes)
            for low, high in ranges:
                pulled = b"".join(natsclient.fetch_records(options, "EVENTS", low, high, []))
                direct = b"".join(natsclient.fetch_records(options, "EVENTS", low, high, [],
                                                           direct=True))
                assert direct == pulled, (max_bytes, low, high)
        assert not b"".join(natsclient.fetch_records(options, "EVENTS", 10, 11, [],
                                                     direct=True))


@pytest.mark.parametrize("server_kind", ["jsstore", "nats-server"])
def test_over_nats_with_direct_gets_gives_the_directory_rows(spark, jsstore_written, tmp_path,
                                                             server_kind):
    copy = str(tmp_path / "store")
    shutil.copytree(jsstore_written, copy)
    directory_rows = rows(spark.read.format("jsstore").option("path", copy)
                          .option("stream", "EVENTS").load())
    start = jsstore_server if server_kind == "jsstore" else nats_server
    with start(copy) as server:
        options = SourceOptions(url=server.url, stream="EVENTS")
        assert not any(p.direct for p in NatsReader(options, [], ScanFilter()).partitions())
        _allow_direct(server.url)
        assert all(p.direct for p in NatsReader(options, [], ScanFilter()).partitions())
        df = read_over_nats(spark, server.url, nats_batch="700")
        assert df.rdd.getNumPartitions() == 4
        assert rows(df) == directory_rows
        bounded = rows(read_over_nats(spark, server.url).filter("seq BETWEEN 9 AND 2503"))
        assert bounded == [r for r in directory_rows if 9 <= r[0] <= 2503]
        narrowed = rows(read_over_nats(spark, server.url).filter(
            "startswith(subject, 'ev.3.') AND seq BETWEEN 100 AND 4000"))
        assert narrowed == [r for r in directory_rows
                            if r[1].startswith("ev.3.") and 100 <= r[0] <= 4000]
