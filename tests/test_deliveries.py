"""The core's reading of JetStream deliveries off a client connection (what the Spark data
source's range reads over NATS use): frames split anywhere, both ack subject layouts, the
frames that are not deliveries handed back in order, and the records read back as rows."""

from __future__ import annotations

from jsstore._core.arrowblock import COLUMNS, BlockColumns
from jsstore._core.deliveries import next_records

from jsstore.spark.arrow import STREAM_COLUMNS, arrow_schema, record_batch

HEADERS = b"NATS/1.0\r\nTag: a\r\nTag: b\r\n\r\n"
STATUS = b"NATS/1.0 404 No Messages\r\n\r\n"


def delivery(subject: bytes, seq: int, ts: int, payload: bytes, headers: bytes = b"",
             v2: bool = False) -> bytes:
    ack = (b"$JS.ACK.dom.hash.S.c.1.%d.%d.%d.0.token" if v2 else b"$JS.ACK.S.c.1.%d.%d.%d.0") % (
        seq, seq, ts)
    if headers:
        return b"HMSG %s 1 %s %d %d\r\n%s%s\r\n" % (subject, ack, len(headers),
                                                     len(headers) + len(payload), headers, payload)
    return b"MSG %s 1 %s %d\r\n%s\r\n" % (subject, ack, len(payload), payload)


STREAM = (delivery(b"a.1", 5, 1_700_000_000_000_000_005, b"abc")
          + delivery(b"a.2", 6, 1_700_000_000_000_000_006, b"xy", HEADERS)
          + b"PING\r\n"
          + b"HMSG _INBOX.x.m 1 %d %d\r\n%s\r\n" % (len(STATUS), len(STATUS), STATUS)
          + delivery(b"a.3", 9, 1_700_000_000_000_000_009, b"", v2=True)
          + delivery(b"a.4", 12, 1_700_000_000_000_000_012, b"past"))


def walk(data: bytes, high: int, step: int):
    """Feed `data` `step` bytes at a time; (records, events) until the end or past high."""
    buffer, out, events, pos = bytearray(), bytearray(), [], 0
    for start in range(0, len(data), step):
        buffer += data[start:start + step]
        while True:
            pos, _appended, _last, event = next_records(buffer, pos, out, high)
            if event is None:
                break
            events.append(event)
            if isinstance(event, int):
                return out, events
    return out, events


def rows(records: bytearray):
    walker = BlockColumns(records, COLUMNS["seq"] | COLUMNS["subject"] | COLUMNS["time_ns"]
                          | COLUMNS["headers"] | COLUMNS["data"])
    out = walker.next_batch(100)
    return out[0] if out else 0


def test_every_split_gives_the_same_records_and_events():
    whole, whole_events = walk(STREAM, 10, len(STREAM))
    assert whole_events == [b"PING", (b"_INBOX.x.m", None, STATUS, b""), 12]
    assert rows(whole) == 3
    for step in (1, 7, 64):
        records, events = walk(STREAM, 10, step)
        assert bytes(records) == bytes(whole)
        assert events == whole_events


def test_records_read_back_as_rows():
    records, _events = walk(STREAM, 10, len(STREAM))
    walker = BlockColumns(records, sum(COLUMNS.values()))
    count, buffers = walker.next_batch(100)
    got = record_batch(STREAM_COLUMNS, arrow_schema(STREAM_COLUMNS), count, buffers).to_pylist()
    assert [(r["seq"], r["subject"], r["time_ns"], r["headers"], r["data"]) for r in got] == [
        (5, "a.1", 1_700_000_000_000_000_005, None, b"abc"),
        (6, "a.2", 1_700_000_000_000_000_006, [("Tag", ["a", "b"])], b"xy"),
        (9, "a.3", 1_700_000_000_000_000_009, None, b""),
    ]
