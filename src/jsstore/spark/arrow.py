"""The table shapes of the data source and the Arrow record batches built from the core's
column buffers (jsstore._core.columns.arrowblock).

A stream reads as

    seq BIGINT, subject STRING, time TIMESTAMP, time_ns BIGINT,
    headers MAP<STRING, ARRAY<STRING>>, data BINARY

`time` is Spark's microsecond TIMESTAMP, `time_ns` the exact nanoseconds JetStream stored.
`headers` is null for a message without a header block; a header key written more than once
keeps every value, in order (NATS headers are multi-valued, as HTTP's are).

Spark accepts a batch only if its Arrow schema equals the one it derives from the DDL
(timestamp[us, tz=UTC], string not large_string, nullable fields, Spark's child names), so
every batch is built on the exact types `arrow_schema()` returns.
"""

from __future__ import annotations

import pyarrow as pa

from jsstore._core.columns.arrowblock import COLUMNS

STREAM_COLUMNS = ("seq", "subject", "time", "time_ns", "headers", "data")
STREAM_SCHEMA = ("seq BIGINT, subject STRING, time TIMESTAMP, time_ns BIGINT, "
                 "headers MAP<STRING, ARRAY<STRING>>, data BINARY")
KV_COLUMNS = ("key", "value", "revision", "created", "operation")
KV_SCHEMA = "key STRING, value BINARY, revision BIGINT, created TIMESTAMP, operation STRING"

# buffer positions in BlockColumns.next_batch() (BufferSlot in arrowblock.pxd)
(BUF_SEQ, BUF_TIME, BUF_TIME_NS, BUF_SUBJECT_OFFSETS, BUF_SUBJECT_BYTES, BUF_DATA_OFFSETS,
 BUF_DATA_BYTES, BUF_HEADER_VALIDITY, BUF_MAP_OFFSETS, BUF_KEY_OFFSETS, BUF_KEY_BYTES,
 BUF_LIST_OFFSETS, BUF_VALUE_OFFSETS, BUF_VALUE_BYTES) = range(14)

VALUE_LIST_TYPE = pa.list_(pa.field("element", pa.string()))
HEADER_ENTRY_TYPE = pa.struct([pa.field("key", pa.string(), nullable=False),
                               pa.field("value", VALUE_LIST_TYPE)])
HEADERS_TYPE = pa.map_(HEADER_ENTRY_TYPE.field(0), HEADER_ENTRY_TYPE.field(1))
ARROW_TYPES = {
    "seq": pa.int64(),
    "subject": pa.string(),
    "time": pa.timestamp("us", tz="UTC"),
    "time_ns": pa.int64(),
    "headers": HEADERS_TYPE,
    "data": pa.binary(),
    "key": pa.string(),
    "value": pa.binary(),
    "revision": pa.int64(),
    "created": pa.timestamp("us", tz="UTC"),
    "operation": pa.string(),
}


def arrow_schema(columns) -> pa.Schema:
    return pa.schema([pa.field(name, ARROW_TYPES[name]) for name in columns])


def column_bits(columns) -> int:
    """The core's COLUMN_* bits for the stream columns named."""
    bits = 0
    for name in columns:
        bits |= COLUMNS[name]
    return bits


def _buffer(raw: bytes):
    return pa.py_buffer(raw) if raw else None


def _strings(kind, rows: int, offsets: bytes, data: bytes) -> pa.Array:
    return pa.Array.from_buffers(kind, rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def headers_array(rows: int, buffers) -> pa.Array:
    entries = len(buffers[BUF_KEY_OFFSETS]) // 4 - 1
    values = len(buffers[BUF_VALUE_OFFSETS]) // 4 - 1
    keys = _strings(pa.string(), entries, buffers[BUF_KEY_OFFSETS], buffers[BUF_KEY_BYTES])
    elements = _strings(pa.string(), values, buffers[BUF_VALUE_OFFSETS], buffers[BUF_VALUE_BYTES])
    lists = pa.Array.from_buffers(VALUE_LIST_TYPE, entries,
                                  [None, pa.py_buffer(buffers[BUF_LIST_OFFSETS])],
                                  children=[elements])
    pairs = pa.Array.from_buffers(HEADER_ENTRY_TYPE, entries, [None],
                                  children=[keys, lists])
    return pa.Array.from_buffers(HEADERS_TYPE, rows,
                                 [_buffer(buffers[BUF_HEADER_VALIDITY]),
                                  pa.py_buffer(buffers[BUF_MAP_OFFSETS])],
                                 children=[pairs])


def column_array(name: str, rows: int, buffers) -> pa.Array:
    if name == "seq":
        return pa.Array.from_buffers(pa.int64(), rows, [None, _buffer(buffers[BUF_SEQ])])
    if name == "time":
        return pa.Array.from_buffers(ARROW_TYPES["time"], rows, [None, _buffer(buffers[BUF_TIME])])
    if name == "time_ns":
        return pa.Array.from_buffers(pa.int64(), rows, [None, _buffer(buffers[BUF_TIME_NS])])
    if name == "subject":
        return _strings(pa.string(), rows, buffers[BUF_SUBJECT_OFFSETS], buffers[BUF_SUBJECT_BYTES])
    if name == "data":
        return _strings(pa.binary(), rows, buffers[BUF_DATA_OFFSETS], buffers[BUF_DATA_BYTES])
    if name == "headers":
        return headers_array(rows, buffers)
    raise KeyError(name)


def record_batch(columns, schema: pa.Schema, rows: int, buffers) -> pa.RecordBatch:
    """A batch of the stream columns named (in that order) from one next_batch() result."""
    arrays = [column_array(name, rows, buffers) for name in columns]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)
