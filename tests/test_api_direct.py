"""DIRECT.GET answers at the byte level, over a FileStore and a MemStore, and compared with a
real nats-server."""

from __future__ import annotations

import json
import socket
import time

import pytest

import jsstore
from jsstore.api import direct
from jsstore.api.direct import direct_get
from jsstore.gocompat.times import parse_time_ns
from jsstore.gocompat.times import rfc3339_nano

BASE_TS = 1_700_000_000_123_456_789
CUSTOM = b"NATS/1.0\r\nx-custom: v\r\n\r\n"
DOUBLED = b"NATS/1.0\r\nNats-Stream: other\r\nA: 1\r\nA: 2\r\n\r\n"
NOT_FOUND = [(b"NATS/1.0 404 Message Not Found\r\n\r\n", b"")]
NO_RESULTS = [(b"NATS/1.0 404 No Results\r\n\r\n", b"")]
EMPTY = [(b"NATS/1.0 408 Empty Request\r\n\r\n", b"")]
MALFORMED = [(b"NATS/1.0 408 Malformed Request\r\n\r\n", b"")]
BAD = [(b"NATS/1.0 408 Bad Request\r\n\r\n", b"")]


def message_header(i: int) -> bytes | None:
    if i == 7:
        return DOUBLED
    return CUSTOM if i % 2 else None


def ts_of(seq: int) -> int:
    return BASE_TS + seq * 1_000_000_007


def fill(store) -> None:
    """a.1 a.2 a.0 a.1(deleted) a.2 a.0 a.1 a.2 a.0 a.1 at seqs 1..10."""
    for i in range(1, 11):
        store.store_raw_msg(f"a.{i % 3}", message_header(i), b"x%d" % i, i, ts_of(i))
    store.remove_msg(4)


@pytest.fixture(params=["memory", "file"])
def store(request, tmp_path):
    config = jsstore.StreamConfig(name="S", subjects=["a.>"])
    made = jsstore.MemStore(config) if request.param == "memory" else \
        jsstore.FileStore(str(tmp_path / "S"), config)
    fill(made)
    yield made
    made.stop()


def get(store, body: bytes | str = b"", suffix: str | None = None, hdr: bytes | None = None):
    payload = body.encode() if isinstance(body, str) else body
    return direct_get(store, "S", suffix, hdr, payload, now=0)


def block(seq: int, extra: str = "") -> bytes:
    """The header block nats-server sends with message seq of fill()."""
    subject = f"a.{seq % 3}"
    start = (message_header(seq) or b"NATS/1.0\r\n\r\n")[:-2]
    return start + (f"Nats-Stream: S\r\nNats-Subject: {subject}\r\nNats-Sequence: {seq}\r\n"
                    f"Nats-Time-Stamp: {rfc3339_nano(ts_of(seq))}\r\n{extra}\r\n").encode()


def batch_block(seq: int, pending: int, last: int) -> bytes:
    return block(seq, f"Nats-Num-Pending: {pending}\r\nNats-Last-Sequence: {last}\r\n")


def eob(pending: int, last: int, up_to: int | None = None) -> tuple[bytes, bytes]:
    text = f"NATS/1.0 204 EOB\r\nNats-Num-Pending: {pending}\r\nNats-Last-Sequence: {last}\r\n"
    if up_to is not None:
        text += f"Nats-UpTo-Sequence: {up_to}\r\n"
    return (text + "\r\n").encode(), b""


def payload(seq: int) -> bytes:
    return b"x%d" % seq


# -- single gets ---------------------------------------------------------------------------

def test_single_get_without_and_with_stored_headers(store):
    assert get(store, '{"seq":2}') == [(
        b"NATS/1.0\r\nNats-Stream: S\r\nNats-Subject: a.2\r\nNats-Sequence: 2\r\n"
        b"Nats-Time-Stamp: 2023-11-14T22:13:22.123456803Z\r\n\r\n", b"x2")]
    assert get(store, '{"seq":3}') == [(
        b"NATS/1.0\r\nx-custom: v\r\nNats-Stream: S\r\nNats-Subject: a.0\r\nNats-Sequence: 3\r\n"
        b"Nats-Time-Stamp: 2023-11-14T22:13:23.12345681Z\r\n\r\n", b"x3")]
    # Stored keys are kept as they are, even a Nats-Stream of their own.
    assert get(store, '{"seq":7}') == [(block(7), b"x7")]
    assert block(7).startswith(b"NATS/1.0\r\nNats-Stream: other\r\nA: 1\r\nA: 2\r\nNats-Stream: S\r\n")


def test_single_get_forms(store):
    assert get(store, '{"last_by_subj":"a.1"}') == [(block(10), payload(10))]
    assert get(store, '{"last_by_subj":"a.*"}') == [(block(10), payload(10))]
    assert get(store, '{"next_by_subj":"a.0"}') == [(block(3), payload(3))]
    assert get(store, '{"next_by_subj":"a.1","seq":2}') == [(block(7), payload(7))]
    assert get(store, '{"start_time":"%s"}' % rfc3339_nano(ts_of(5))) == [(block(5), payload(5))]
    assert get(store, '{"start_time":"%s"}' % rfc3339_nano(ts_of(4))) == [(block(5), payload(5))]
    assert get(store, '{"start_time":"2000-01-01T00:00:00Z"}') == [(block(1), payload(1))]
    assert get(store, '{"start_time":"%s","next_by_subj":"a.1"}' % rfc3339_nano(ts_of(5))) == \
        [(block(7), payload(7))]
    # max_bytes does not limit a single get; no_hdr sends the payload alone.
    assert get(store, '{"seq":1,"max_bytes":1}') == [(block(1), payload(1))]
    assert get(store, '{"seq":2,"no_hdr":true}') == [(b"", b"x2")]
    assert get(store, '{"last_by_subj":"a.1","no_hdr":true}') == [(b"", b"x10")]


def test_last_by_subject_in_the_subject(store):
    assert get(store, b"", "a.1") == [(block(10), payload(10))]
    assert get(store, b"", "a.*") == [(block(10), payload(10))]
    assert get(store, b"", "a.>") == [(block(10), payload(10))]
    assert get(store, b"", "a.9") == NOT_FOUND
    for body in ("{}", "null", '{"max_bytes":1}', '{"seq":0,"batch":0}', '{"no_hdr":false}'):
        assert get(store, body, "a.2") == [(block(8), payload(8))], body
    assert get(store, '{"no_hdr":true}', "a.2") == [(b"", b"x8")]
    for body in ('{"seq":3}', '{"batch":2}', '{"last_by_subj":"a.2"}', '{"next_by_subj":"a.2"}',
                 '{"multi_last":["a.2"]}', '{"up_to_seq":3}', '{"start_time":"2000-01-01T00:00:00Z"}',
                 '{"up_to_time":"2000-01-01T00:00:00Z"}'):
        assert get(store, body, "a.1") == BAD, body
    assert get(store, b"junk", "a.1") == MALFORMED
    assert get(store, b" ", "a.1") == MALFORMED
    assert get(store, b"", "") == BAD


def test_not_found(store):
    for body in ('{"seq":4}', '{"seq":11}', '{"seq":99}', '{"last_by_subj":"b"}',
                 '{"next_by_subj":"a.1","seq":11}', '{"next_by_subj":"a..b"}',
                 '{"start_time":"2100-01-01T00:00:00Z"}',
                 '{"seq":11,"batch":3}', '{"next_by_subj":"c","batch":3}'):
        assert get(store, body) == NOT_FOUND, body


# -- request decoding ----------------------------------------------------------------------

@pytest.mark.parametrize("body", [b"", b"{}", b"null", b'{"seq":0}', b'{"multi_last":[]}',
                                  b'{"seq":null,"batch":5}', b'{"other":1}'])
def test_empty_requests(store, body):
    assert get(store, body) == EMPTY


@pytest.mark.parametrize("body", [b"{bad", b" ", b"[1]", b'"x"', b"1", b'{"seq":-1}',
                                  b'{"seq":1.0}', b'{"seq":1e0}', b'{"seq":"x"}',
                                  b'{"seq":18446744073709551616}', b'{"seq":true}',
                                  b'{"no_hdr":1}', b'{"start_time":"yesterday"}',
                                  b'{"start_time":"2000-01-01t00:00:00z"}',
                                  b'{"start_time":"2000-02-30T00:00:00Z"}', b'{"multi_last":"a"}',
                                  b'{"batch":9223372036854775808}', b'{"seq":2} x'])
def test_malformed_requests(store, body):
    assert get(store, body) == MALFORMED


@pytest.mark.parametrize("body", [
    '{"seq":1,"last_by_subj":"a.1"}', '{"seq":1,"start_time":"2000-01-01T00:00:00Z"}',
    '{"start_time":"2000-01-01T00:00:00Z","last_by_subj":"a.1"}',
    '{"last_by_subj":"a.1","next_by_subj":"a.1"}', '{"last_by_subj":"a.1","batch":2}',
    '{"last_by_subj":"a.1","multi_last":["a.1"]}', '{"next_by_subj":"a.1","multi_last":["a.1"]}',
    '{"multi_last":["a.*"],"up_to_seq":3,"up_to_time":"2000-01-01T00:00:00Z"}',
    '{"seq":3,"up_to_time":"2000-01-01T00:00:00Z","up_to_seq":1}'])
def test_conflicting_requests(store, body):
    assert get(store, body) == BAD


def test_go_json_decoding_rules(store):
    assert get(store, '{"SEQ":2}') == get(store, '{"seq":2}')
    assert get(store, '{"Seq":2,"seq":3}') == get(store, '{"seq":3}')
    assert get(store, '{"seq":2,"x":[1,{"y":2}]}') == get(store, '{"seq":2}')
    assert get(store, ' {"seq":2} ') == get(store, '{"seq":2}')
    assert get(store, '{"seq":2,"start_time":null,"up_to_time":null,"multi_last":null}') == \
        get(store, '{"seq":2}')
    assert get(store, '{"seq":null,"next_by_subj":"a.0"}') == [(block(3), payload(3))]


def test_go_time_parsing(store):
    assert parse_time_ns("1970-01-01T00:00:00Z") == 0
    assert parse_time_ns("2000-01-01T00:00:00.5+01:00") == 946_681_200_500_000_000
    assert parse_time_ns("2023-11-14T22:13:22.123456803Z") == BASE_TS + 2_000_000_014
    assert parse_time_ns("2023-11-14T22:13:22.1234568039Z") == BASE_TS + 2_000_000_014
    for text in ("2023-11-14 22:13:22Z", "2023-11-14T24:00:00Z", "2023-11-14T22:13:22",
                 "2023-11-14T22:13:22+0100", "2023-13-01T00:00:00Z"):
        assert get(store, '{"start_time":"%s"}' % text) == MALFORMED
    # what Go's time.Parse takes beyond the strict form, nats-server takes here too
    for text in ("2023-11-14T1:00:00Z", "2023-11-14T01:00:00,5Z", "2023-11-14T01:00:00+24:00"):
        assert get(store, '{"start_time":"%s"}' % text) == get(store, '{"seq":1}')


def test_required_api_level(store):
    too_high = [(b"NATS/1.0 412 Required Api Level\r\n\r\n", b"")]
    assert get(store, '{"seq":2}', hdr=b"NATS/1.0\r\nNats-Required-Api-Level: 99\r\n\r\n") == too_high
    assert get(store, '{"seq":2}', hdr=b"NATS/1.0\r\nNats-Required-Api-Level: x\r\n\r\n") == too_high
    assert get(store, b"", "a.1", hdr=b"NATS/1.0\r\nNats-Required-Api-Level: 6\r\n\r\n") == too_high
    assert get(store, '{"seq":2}', hdr=b"NATS/1.0\r\nNats-Required-Api-Level: 5\r\n\r\n") == \
        get(store, '{"seq":2}')
    assert get(store, '{"seq":2}', hdr=b"NATS/1.0\r\nOther: 1\r\n\r\n") == get(store, '{"seq":2}')


# -- batches -------------------------------------------------------------------------------

def test_batch_paging(store):
    # Pending counts what is left after each message; seq 4 was deleted and is stepped over.
    assert get(store, '{"seq":2,"batch":4}') == [
        (batch_block(2, 7, 0), payload(2)), (batch_block(3, 6, 2), payload(3)),
        (batch_block(5, 5, 3), payload(5)), (batch_block(6, 4, 5), payload(6)), eob(4, 6)]
    assert get(store, '{"seq":9,"batch":5}') == [
        (batch_block(9, 1, 0), payload(9)), (batch_block(10, 0, 9), payload(10)), eob(0, 10)]
    # A batch starts at the first message at or after seq (a single get does not).
    assert get(store, '{"seq":4,"batch":2}') == [
        (batch_block(5, 5, 0), payload(5)), (batch_block(6, 4, 5), payload(6)), eob(4, 6)]
    assert get(store, '{"seq":1,"batch":1}') == [(batch_block(1, 8, 0), payload(1)), eob(8, 1)]
    assert get(store, '{"seq":1,"batch":-1}') == [eob(9, 0)]
    # Paging by the EOB: the next request starts after Nats-Last-Sequence.
    seen, start = [], 1
    while True:
        answers = get(store, '{"seq":%d,"batch":3}' % start)
        if answers == NOT_FOUND:
            break
        seen += [int(h.split(b"Nats-Sequence: ")[1].split(b"\r\n")[0]) for h, _ in answers[:-1]]
        last = int(answers[-1][0].split(b"Nats-Last-Sequence: ")[1].split(b"\r\n")[0])
        pending = int(answers[-1][0].split(b"Nats-Num-Pending: ")[1].split(b"\r\n")[0])
        assert pending == len([s for s in (1, 2, 3, 5, 6, 7, 8, 9, 10) if s > last])
        start = last + 1
    assert seen == [1, 2, 3, 5, 6, 7, 8, 9, 10]


def test_batch_next_by_subject_and_start_time(store):
    assert get(store, '{"next_by_subj":"a.1","seq":2,"batch":10}') == [
        (batch_block(7, 1, 0), payload(7)), (batch_block(10, 0, 7), payload(10)), eob(0, 10)]
    assert get(store, '{"next_by_subj":"a.*","batch":3}') == [
        (batch_block(1, 8, 0), payload(1)), (batch_block(2, 7, 1), payload(2)),
        (batch_block(3, 6, 2), payload(3)), eob(6, 3)]
    assert get(store, '{"start_time":"%s","batch":2,"next_by_subj":"a.1"}' % rfc3339_nano(ts_of(5))) \
        == [(batch_block(7, 1, 0), payload(7)), (batch_block(10, 0, 7), payload(10)), eob(0, 10)]


def test_batch_max_bytes(store):
    # Counted: subject + stored headers + payload, checked after each message is sent.
    # seq 1 = 3 + 25 + 2 = 30, seq 2 = 5, seq 3 = 30.
    assert get(store, '{"seq":1,"batch":5,"max_bytes":10}') == [
        (batch_block(1, 8, 0), payload(1)), eob(8, 1)]
    assert get(store, '{"seq":1,"batch":5,"max_bytes":35}') == [
        (batch_block(1, 8, 0), payload(1)), (batch_block(2, 7, 1), payload(2)), eob(7, 2)]
    assert get(store, '{"seq":1,"batch":5,"max_bytes":36}') == [
        (batch_block(1, 8, 0), payload(1)), (batch_block(2, 7, 1), payload(2)),
        (batch_block(3, 6, 2), payload(3)), eob(6, 3)]


def test_batch_without_headers_keeps_the_pending_count(store):
    assert get(store, '{"seq":2,"batch":4,"no_hdr":true}') == [
        (b"", b"x2"), (b"", b"x3"), (b"", b"x5"), (b"", b"x6"), eob(8, 6)]
    assert get(store, '{"seq":1,"batch":2,"no_hdr":true,"max_bytes":1}') == [(b"", b"x1"), eob(9, 1)]


# -- multi_last ----------------------------------------------------------------------------

def test_multi_last(store):
    assert get(store, '{"multi_last":["a.*"]}') == [
        (batch_block(8, 2, 0), payload(8)), (batch_block(9, 1, 8), payload(9)),
        (batch_block(10, 0, 9), payload(10)), eob(0, 10, 10)]
    # no_hdr does not apply to multi_last; overlapping filters give each message once.
    assert get(store, '{"multi_last":["a.*"],"no_hdr":true}') == get(store, '{"multi_last":["a.*"]}')
    assert get(store, '{"multi_last":["a.1","a.*"]}') == get(store, '{"multi_last":["a.*"]}')
    assert get(store, '{"multi_last":["a.*"],"up_to_seq":5}') == [
        (batch_block(1, 2, 0), payload(1)), (batch_block(3, 1, 1), payload(3)),
        (batch_block(5, 0, 3), payload(5)), eob(0, 5, 5)]
    assert get(store, '{"multi_last":["a.*"],"up_to_seq":99}')[-1] == eob(0, 10, 99)
    assert get(store, '{"multi_last":["a.*"],"batch":2}') == [
        (batch_block(8, 2, 0), payload(8)), (batch_block(9, 1, 8), payload(9)), eob(1, 9, 10)]
    assert get(store, '{"multi_last":["a.*"],"batch":-1}') == get(store, '{"multi_last":["a.*"]}')
    assert get(store, '{"multi_last":["a.*"],"max_bytes":1}') == [
        (batch_block(8, 2, 0), payload(8)), eob(2, 8, 10)]
    # Sequences below seq are skipped, and counted off the pending.
    assert get(store, '{"multi_last":["a.*"],"seq":9}') == [
        (batch_block(9, 1, 0), payload(9)), (batch_block(10, 0, 9), payload(10)), eob(0, 10, 10)]


def test_multi_last_up_to_time(store):
    # The ceiling is the sequence before the first message at or after the time.
    assert get(store, '{"multi_last":["a.*"],"up_to_time":"%s"}' % rfc3339_nano(ts_of(5))) == [
        (batch_block(1, 2, 0), payload(1)), (batch_block(2, 1, 1), payload(2)),
        (batch_block(3, 0, 2), payload(3)), eob(0, 3, 4)]
    assert get(store, '{"multi_last":["a.*"],"up_to_time":"2000-01-01T00:00:00Z"}') == NO_RESULTS
    assert get(store, '{"multi_last":["a.*"],"up_to_time":"%s"}' % rfc3339_nano(ts_of(1))) == NO_RESULTS


def test_multi_last_no_results_and_too_many(store, tmp_path):
    assert get(store, '{"multi_last":["b.*"]}') == NO_RESULTS
    wide = jsstore.MemStore(jsstore.StreamConfig(name="W", subjects=["w.>"]))
    wide.store_batch((f"w.{n}", None, b"") for n in range(direct.MAX_MULTI_RESULTS + 1))
    too_many = [(b"NATS/1.0 413 Too Many Results\r\n\r\n", b"")]
    assert direct_get(wide, "W", None, None, b'{"multi_last":["w.*"]}', now=0) == too_many
    answers = direct_get(wide, "W", None, None, b'{"multi_last":["w.*"],"up_to_seq":1024}', now=0)
    assert len(answers) == 1025 and answers[-1][0].endswith(b"Nats-UpTo-Sequence: 1024\r\n\r\n")


def test_empty_stream(tmp_path):
    empty = jsstore.MemStore(jsstore.StreamConfig(name="E", subjects=["e"]))
    for body in (b'{"seq":1}', b'{"last_by_subj":"e"}', b'{"next_by_subj":"e","batch":2}',
                 b'{"start_time":"2000-01-01T00:00:00Z"}'):
        assert direct_get(empty, "E", None, None, body, now=0) == NOT_FOUND, body
    assert direct_get(empty, "E", None, None, b'{"multi_last":["e"]}', now=0) == NO_RESULTS


# -- against nats-server -------------------------------------------------------------------

class RawClient:
    """A bare NATS protocol client: nats-py decodes header blocks into dicts, which loses
    the byte order this comparison is about."""

    def __init__(self, host: str, port: int):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.buffer = b""
        self.count = 0
        self.sock.sendall(b'CONNECT {"verbose":false,"headers":true,"no_responders":true,'
                          b'"protocol":1}\r\nSUB _IN.> 1\r\nPING\r\n')
        while self._line() != b"PONG":
            pass

    def _fill(self) -> None:
        data = self.sock.recv(1 << 16)
        if not data:
            raise EOFError("server closed the connection")
        self.buffer += data

    def _line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _take(self, size: int) -> bytes:
        while len(self.buffer) < size + 2:
            self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size + 2:]
        return data

    def publish(self, subject: str, body: bytes, hdr: bytes | None = None, reply: str = "") -> None:
        if hdr is None:
            self.sock.sendall(f"PUB {subject} {reply} {len(body)}\r\n".encode() + body + b"\r\n")
        else:
            self.sock.sendall(f"HPUB {subject} {reply} {len(hdr)} {len(hdr) + len(body)}\r\n".encode()
                              + hdr + body + b"\r\n")

    def request(self, subject: str, body: bytes, hdr: bytes | None = None, expect: int = 1,
                linger: float = 0.05) -> list[tuple[bytes, bytes]]:
        """Every answer to one request: waits for `expect` of them, then `linger` more."""
        self.count += 1
        inbox = f"_IN.{self.count}"
        self.publish(subject, body, hdr, inbox)
        answers: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + 5
        quiet_until = None
        while True:
            now = time.monotonic()
            if len(answers) >= expect and quiet_until is None:
                quiet_until = now + linger
            limit = quiet_until if quiet_until is not None else deadline
            if now >= limit:
                return answers
            self.sock.settimeout(max(limit - now, 0.001))
            try:
                line = self._line()
            except socket.timeout:
                continue
            finally:
                self.sock.settimeout(5)
            kind = line.split(b" ", 1)[0]
            if kind == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif kind in (b"MSG", b"HMSG"):
                parts = line.split()
                if kind == b"MSG":
                    answer = (b"", self._take(int(parts[-1])))
                else:
                    data = self._take(int(parts[-1]))
                    answer = (data[:int(parts[-2])], data[int(parts[-2]):])
                if parts[1].decode() == inbox:
                    answers.append(answer)
            elif kind.startswith(b"-ERR"):
                raise RuntimeError(line)


DIFFERENTIAL = [
    (None, '{"seq":2}'), (None, '{"seq":3}'), (None, '{"seq":4}'), (None, '{"seq":7}'),
    (None, ""), (None, "{}"), (None, "null"), (None, "{bad"), (None, '{"seq":-1}'),
    (None, '{"seq":1.0}'), (None, '{"SEQ":2}'), (None, '{"seq":2,"seq":3}'),
    (None, '{"seq":1,"last_by_subj":"a.1"}'), (None, '{"last_by_subj":"a.1","batch":2}'),
    (None, '{"seq":2,"batch":4}'), (None, '{"seq":4,"batch":3}'), (None, '{"seq":9,"batch":5}'),
    (None, '{"seq":11,"batch":3}'), (None, '{"seq":1,"batch":-1}'), (None, '{"seq":1,"batch":1}'),
    (None, '{"seq":2,"batch":4,"no_hdr":true}'), (None, '{"seq":2,"no_hdr":true}'),
    (None, '{"seq":1,"batch":5,"max_bytes":10}'), (None, '{"seq":1,"batch":5,"max_bytes":60}'),
    (None, '{"next_by_subj":"a.1","seq":2,"batch":10}'), (None, '{"next_by_subj":"a.*","batch":3}'),
    (None, '{"next_by_subj":"a..b"}'), (None, '{"last_by_subj":"a.1","no_hdr":true}'),
    (None, '{"start_time":"2000-01-01T00:00:00Z"}'), (None, '{"start_time":"2100-01-01T00:00:00Z"}'),
    (None, '{"start_time":"@5"}'), (None, '{"start_time":"@5","batch":2,"next_by_subj":"a.1"}'),
    (None, '{"multi_last":["a.*"]}'), (None, '{"multi_last":["a.*"],"up_to_seq":5}'),
    (None, '{"multi_last":["a.*"],"batch":2}'), (None, '{"multi_last":["a.*"],"seq":9}'),
    (None, '{"multi_last":["a.*"],"no_hdr":true}'), (None, '{"multi_last":["a.*"],"max_bytes":1}'),
    (None, '{"multi_last":["a.1","a.*"]}'), (None, '{"multi_last":["b.*"]}'),
    (None, '{"multi_last":["a.*"],"up_to_time":"@5"}'),
    (None, '{"multi_last":["a.*"],"up_to_time":"2000-01-01T00:00:00Z"}'),
    (None, '{"multi_last":["a.*"],"up_to_seq":3,"up_to_time":"2000-01-01T00:00:00Z"}'),
    (None, '{"multi_last":[]}'),
    ("a.1", ""), ("a.9", ""), ("a.1", "{}"), ("a.1", '{"no_hdr":true}'),
    ("a.1", '{"seq":3}'), ("a.1", '{"batch":2}'), ("a.1", "junk"), ("a.1", '{"max_bytes":1}'),
]


@pytest.mark.natsserver
def test_answers_match_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    natsserver.require_nats_server()
    with natsserver.nats_server(tmp_path / "server") as server:
        client = RawClient(server.host, server.port)
        created = client.request("$JS.API.STREAM.CREATE.S", json.dumps(
            {"name": "S", "subjects": ["a.>"], "allow_direct": True}).encode())
        assert b'"allow_direct":true' in created[0][1]
        for i in range(1, 11):
            assert b'"seq":%d' % i in client.request(f"a.{i % 3}", b"x%d" % i, message_header(i))[0][1]
        assert b'"success":true' in client.request("$JS.API.STREAM.MSG.DELETE.S", b'{"seq":4}')[0][1]
        # The same messages, with the server's time stamps, in both of our stores.
        times = {}
        for seq in (1, 2, 3, 5, 6, 7, 8, 9, 10):
            hdr = client.request("$JS.API.DIRECT.GET.S", b'{"seq":%d}' % seq)[0][0]
            times[seq] = parse_time_ns(hdr.split(b"Nats-Time-Stamp: ")[1].split(b"\r\n")[0].decode())
        times[4] = times[3] + 1
        config = jsstore.StreamConfig(name="S", subjects=["a.>"])
        stores = [jsstore.MemStore(config), jsstore.FileStore(str(tmp_path / "mine"), config)]
        for mine in stores:
            for i in range(1, 11):
                mine.store_raw_msg(f"a.{i % 3}", message_header(i), b"x%d" % i, i, times[i])
            mine.remove_msg(4)
        try:
            for suffix, body in DIFFERENTIAL:
                body = body.replace("@5", rfc3339_nano(times[5]))
                expected = [direct_get(mine, "S", suffix, None, body.encode(), now=0)
                            for mine in stores]
                assert expected[0] == expected[1], (suffix, body)
                subject = "$JS.API.DIRECT.GET.S" + ("" if suffix is None else "." + suffix)
                real = client.request(subject, body.encode(), expect=len(expected[0]))
                assert real == expected[0], (suffix, body)
            level = b"NATS/1.0\r\nNats-Required-Api-Level: 99\r\n\r\n"
            assert client.request("$JS.API.DIRECT.GET.S", b'{"seq":2}', level) == \
                direct_get(stores[0], "S", None, level, b'{"seq":2}', now=0)
        finally:
            for mine in stores:
                mine.stop()
            client.sock.close()
