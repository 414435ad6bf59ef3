"""The core's reading of JetStream deliveries off a client connection (what the Spark data
source's range reads over NATS use): frames split anywhere, both ack subject layouts, the
frames that are not deliveries handed back in order, and the records read back as rows."""

from __future__ import annotations

from jsstore._core.columns.arrowblock import COLUMNS, BlockColumns
from jsstore._core.columns.natsrecords import next_direct_records, next_records
from jsstore.gocompat.times import rfc3339_nano
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


# -- batched direct gets ------------------------------------------------------------------

def direct_message(subject: bytes, seq: int, ts: int, payload: bytes, stored: bytes = b"",
                   pending: int = 0, last: int = 0) -> bytes:
    """A message of a batched direct get answer, its header block made as nats-server's
    genHeader makes it: the stored block without its final CRLF, the appended fields."""
    header = ((stored[:-2] if stored else b"NATS/1.0\r\n")
              + b"Nats-Stream: S\r\nNats-Subject: %s\r\nNats-Sequence: %d\r\n" % (subject, seq)
              + b"Nats-Time-Stamp: %s\r\n" % rfc3339_nano(ts).encode()
              + b"Nats-Num-Pending: %d\r\nNats-Last-Sequence: %d\r\n\r\n" % (pending, last))
    return b"HMSG _INBOX.x.g 1 %d %d\r\n%s%s\r\n" % (len(header), len(header) + len(payload),
                                                     header, payload)


EOB = b"NATS/1.0 204 EOB\r\nNats-Num-Pending: 0\r\nNats-Last-Sequence: 9\r\n\r\n"
# the stored header block itself names a stream: only the last Nats-Stream line is appended
TRICKY = b"NATS/1.0\r\nNats-Stream: other\r\nTag: b\r\n\r\n"
DIRECT = (direct_message(b"a.1", 5, 1_700_000_000_000_000_005, b"abc")
          + direct_message(b"a.2", 6, 1_700_000_000_000_000_000, b"xy", HEADERS)
          + b"PING\r\n"
          + direct_message(b"a.2", 6, 1_700_000_000_000_000_000, b"xy", HEADERS)   # overlap
          + direct_message(b"a.3", 9, 1_700_000_000_120_000_000, b"", TRICKY)
          + b"HMSG _INBOX.x.g 1 %d %d\r\n%s\r\n" % (len(EOB), len(EOB), EOB)
          + direct_message(b"a.4", 12, 1_700_000_000_000_000_012, b"past"))


def walk_direct(data: bytes, low: int, high: int, step: int):
    buffer, out, events, pos = bytearray(), bytearray(), [], 0
    for start in range(0, len(data), step):
        buffer += data[start:start + step]
        while True:
            pos, appended, last, event = next_direct_records(buffer, pos, out, low, high)
            if appended:
                low = last + 1
            if event is None:
                break
            events.append(event)
            if isinstance(event, int):
                return out, events
    return out, events


def test_direct_gets_give_the_same_records_as_deliveries():
    whole, events = walk_direct(DIRECT, 1, 10, len(DIRECT))
    assert events == [b"PING", (b"_INBOX.x.g", None, EOB, b""), 12]
    for step in (1, 7, 64):
        assert walk_direct(DIRECT, 1, 10, step) == (whole, events)
    first = (delivery(b"a.1", 5, 1_700_000_000_000_000_005, b"abc")
             + delivery(b"a.2", 6, 1_700_000_000_000_000_000, b"xy", HEADERS))
    later = delivery(b"a.3", 9, 1_700_000_000_120_000_000, b"", TRICKY)
    assert bytes(whole) == bytes(walk(first + later, 10, 1000)[0])
    # below low: read and skipped
    skipped, _events = walk_direct(DIRECT, 7, 10, len(DIRECT))
    assert bytes(skipped) == bytes(walk(later, 10, 1000)[0])


def test_direct_get_timestamps_of_every_precision():
    for ts in (0, 1, 10, 999_999_999, 1_000_000_000, 1_700_000_000_100_000_000,
               1_709_251_199_999_999_999, 4_102_444_800_000_000_000, 951_782_400_000_000_007):
        out = bytearray()
        _pos, appended, _last, event = next_direct_records(
            bytearray(direct_message(b"t", 1, ts, b"")), 0, out, 0, 10)
        assert (appended, event) == (1, None)
        assert out[12:20] == ts.to_bytes(8, "little"), ts
