"""The column builder hands its buffers over without copying them: batches stay intact after
the builder is gone and while later batches are built, and read back as the store wrote."""

from __future__ import annotations

import gc
import os

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore._core.columns.arrowblock import BlockColumns, HandedBuffer
from jsstore.spark.arrow import (
    BUF_DATA_BYTES,
    STREAM_COLUMNS,
    arrow_schema,
    column_bits,
    record_batch,
)
from jsstore.spark.planning import read_plain_block


def messages(count):
    return [(f"a.{i % 7}",
             b"NATS/1.0\r\nTag: x\r\nTag: %d\r\n\r\n" % i if i % 3 == 0 else None,
             os.urandom(i % 50)) for i in range(count)]


def block_bytes(tmp_path, rows):
    fs = jsstore.FileStore(jsstore.stream_dir(str(tmp_path), "S"),
                           StreamConfig(name="S", subjects=["a.>"]), StoreOptions(sync_interval=0))
    for subject, hdr, data in rows:
        fs.store_msg(subject, hdr, data)
    fs.stop()
    msgs = os.path.join(jsstore.stream_dir(str(tmp_path), "S"), "msgs")
    blocks = sorted(name for name in os.listdir(msgs) if name.endswith(".blk"))
    assert len(blocks) == 1
    return read_plain_block(os.path.join(msgs, blocks[0]))


def test_batches_outlive_the_builder_and_each_other(tmp_path):
    rows = messages(1000)
    walker = BlockColumns(block_bytes(tmp_path, rows), column_bits(STREAM_COLUMNS))
    schema = arrow_schema(STREAM_COLUMNS)
    batches = []
    while (out := walker.next_batch(64)) is not None:
        count, buffers = out
        data = buffers[BUF_DATA_BYTES]
        assert isinstance(data, HandedBuffer) and len(data) == len(memoryview(data))
        assert memoryview(data).readonly
        batches.append(record_batch(STREAM_COLUMNS, schema, count, buffers))
    del walker, out, buffers, data
    gc.collect()
    noise = [os.urandom(4096) for _ in range(2000)]   # reuse whatever was freed
    got = [row for batch in batches for row in batch.to_pylist()]
    assert len(batches) == 16 and len(noise) == 2000
    assert [r["seq"] for r in got] == list(range(1, 1001))
    assert [(r["subject"], r["data"]) for r in got] == [(s, d) for s, _h, d in rows]
    assert [r["headers"] for r in got] == [
        [("Tag", ["x", str(i)])] if hdr else None for i, (_s, hdr, _d) in enumerate(rows)]
