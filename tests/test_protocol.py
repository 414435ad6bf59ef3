"""The NATS client protocol core: the parser of client frames and the server frames."""

from __future__ import annotations

import socket
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jsstore._core.delivery.plans import Conn, Totals
from jsstore._core.wire import protocol as p

CLIENT_STREAM = (b'CONNECT {"verbose":false,"headers":true}\r\n'
                 b"PING\r\n"
                 b"PUB orders.new 5\r\nhello\r\n"
                 b"pub\torders.new  _INBOX.1\t3\r\nabc\r\n"
                 b"HPUB orders.x _INBOX.2 18 20\r\nNATS/1.0\r\nA: b\r\n\r\nhi\r\n"
                 b"SUB orders.* 1\r\n"
                 b"sub orders.> workers 2\r\n"
                 b"UNSUB 1\r\n"
                 b"UNSUB 2 10\r\n"
                 b"PONG\r\n"
                 b"+OK\r\n"
                 b"-ERR 'oops'\r\n"
                 b"PUB empty 0\r\n\r\n")

EXPECTED = [
    (p.CONNECT, b'{"verbose":false,"headers":true}'),
    (p.PING,),
    (p.PUB, "orders.new", None, None, b"hello"),
    (p.PUB, "orders.new", "_INBOX.1", None, b"abc"),
    (p.PUB, "orders.x", "_INBOX.2", b"NATS/1.0\r\nA: b\r\n\r\n", b"hi"),
    (p.SUB, "orders.*", None, "1"),
    (p.SUB, "orders.>", "workers", "2"),
    (p.UNSUB, "1", 0),
    (p.UNSUB, "2", 10),
    (p.PONG,),
    (p.OK,),
    (p.ERR, "'oops'"),
    (p.PUB, "empty", None, None, b""),
]


def test_every_operation():
    parser = p.Parser()
    assert parser.feed(CLIENT_STREAM) == EXPECTED
    assert parser.error is None


@settings(max_examples=300)
@given(st.lists(st.integers(0, len(CLIENT_STREAM)), max_size=12))
def test_split_anywhere_parses_the_same(cuts):
    parser = p.Parser()
    ops = []
    at = 0
    for cut in sorted(cuts) + [len(CLIENT_STREAM)]:
        ops += parser.feed(CLIENT_STREAM[at:cut])
        at = cut
    assert ops == EXPECTED
    assert parser.error is None


@settings(max_examples=200)
@given(st.lists(st.tuples(st.from_regex(r"[a-z]{1,8}(\.[a-z*]{1,8}){0,3}", fullmatch=True),
                          st.one_of(st.none(), st.just("_INBOX.x")),
                          st.one_of(st.none(), st.just(b"NATS/1.0\r\nK: v\r\n\r\n")),
                          st.binary(max_size=64)), max_size=20))
def test_pub_frames_round_trip(msgs):
    wire = b""
    for subject, reply, hdr, payload in msgs:
        head = "HPUB" if hdr else "PUB"
        sizes = (f"{len(hdr)} {len(hdr) + len(payload)}" if hdr else str(len(payload)))
        wire += (f"{head} {subject} {reply + ' ' if reply else ''}{sizes}\r\n".encode()
                 + (hdr or b"") + payload + b"\r\n")
    assert p.Parser().feed(wire) == [(p.PUB, s, r, h, d) for s, r, h, d in msgs]


@pytest.mark.parametrize("wire, error, ops", [
    (b"XYZ\r\n", (p.SEND, "Unknown Protocol Operation"), 0),
    (b"\r\n", (p.SEND, "Unknown Protocol Operation"), 0),
    (b"PING\r\nQ", (p.SEND, "Unknown Protocol Operation"), 1),
    (b"PUB a 2000000\r\n", (p.SEND, "Maximum Payload Violation"), 0),
    (b"PUB " + b"a" * 5000, (p.SEND, "maximum control line exceeded"), 0),
    (b"PUB a 2\r\nabc\r\n", (p.SEND, "Unknown Protocol Operation"), 0),
    (b"PUBX a 1\r\n", (p.SEND, "Unknown Protocol Operation"), 0),
    (b"PUB a\r\n", (p.CLOSE, "processPub Parse Error"), 0),
    (b"PUB a x\r\n", (p.CLOSE, "processPub Bad or Missing Size"), 0),
    (b"SUB a\r\n", (p.CLOSE, "processSub Parse Error"), 0),
    (b"HPUB a 5 3\r\n", (p.CLOSE, "processHeaderPub Bad or Missing Header Size"), 0),
])
def test_violations(wire, error, ops):
    parser = p.Parser()
    assert len(parser.feed(wire)) == ops
    assert parser.error == error
    assert parser.feed(b"PING\r\n") == []          # nothing more once it failed


def test_ping_pong_and_ok_ignore_the_rest_of_the_line():
    assert p.Parser().feed(b"PING xyz\r\nPONG\n+OK whatever\r\n") == [
        (p.PING,), (p.PONG,), (p.OK,)]


def test_limits_are_settable():
    parser = p.Parser(max_control_line=16, max_payload=4)
    assert parser.feed(b"PUB a 4\r\nabcd\r\n") == [(p.PUB, "a", None, None, b"abcd")]
    assert parser.feed(b"PUB a 5\r\n") == []
    assert parser.error == (p.SEND, "Maximum Payload Violation")


def test_frames():
    assert p.info_frame(b"{}") == b"INFO {}\r\n"
    assert p.err_frame("Unknown Protocol Operation") == b"-ERR 'Unknown Protocol Operation'\r\n"
    assert (p.PING_FRAME, p.PONG_FRAME, p.OK_FRAME) == (b"PING\r\n", b"PONG\r\n", b"+OK\r\n")


_ACKISH = st.sampled_from([
    b"PUB $JS.ACK.S.C.1.2.3.4.5 0\r\n\r\n", b"PUB $JS.ACK.S.C.1.9.9.4.0 4\r\n+ACK\r\n",
    b"PUB $JS.ACK.S.C.1.2.3.4.5 4\r\n-NAK\r\n", b"PUB $JS.ACK.S.C.1.2.3.4.5 _R 0\r\n\r\n",
    b"pub $JS.ACK.S.C.1.2.3.4.5 0\r\n\r\n", b"PUB $JS.ACK.S.C.1.2.3.4.5  0\r\n\r\n",
    b"PUB $JS.ACK.S.C.1.2.3.4.5\t0\r\n\r\n", b"PUB $JS.ACK.S.C.1.2.3.4.5 00\r\n\r\n",
    b"PUB $JS.ACK.S.C.1.2.3.4.5 0\n\r\n", b"PUB $JS.ACK.S.C.1.2.3.4.5 1\r\nx\r\n",
    b"PUB $JS.ACK. 0\r\n\r\n", b"PUB $JS.ACK.\xc3\xa9 0\r\n\r\n",
    b"PUB $JS.ACK.S.C.1.2.3.4.5 0\r\nxx\r\n", b"PUB $JS.API.CONSUMER.MSG.NEXT.S.C _I 2\r\n{}\r\n",
    b"PING\r\n", b"SUB x 1\r\n", b"HPUB $JS.ACK.S.C.1.2.3.4.5 12 12\r\nNATS/1.0\r\n\r\n\r\n"])


class _Origin(Conn):
    """A connection with no socket, for the parser's counts and acks."""

    def __init__(self):
        self.dirty = set()
        self.totals = Totals()


def _plain_ack(op) -> bool:
    """What Account.publish keeps as a plain ack: no reply, an ack subject with no empty
    token, an empty or +ACK payload."""
    return (op[0] == p.PUB and op[2] is None and op[1].startswith("$JS.ACK.")
            and ".." not in op[1] and not op[1].endswith(".") and op[4] in (b"", b"+ACK"))


@settings(max_examples=400, deadline=None)
@given(st.lists(_ACKISH, max_size=10), st.integers(0, 60), st.integers(0, 8),
       st.sampled_from([4096, 40, 20]), st.lists(st.integers(1, 80), max_size=3))
def test_plain_acks_are_taken_where_feed_would_give_them(frames, cut, max_payload,
                                                          max_control_line, reads):
    """With take_acks, the parser puts every plain ack into the connection's acks instead
    of returning it, and stops before one that follows an operation (so that operation is
    handled first): the acks and the operations, in their order, are those a parser
    without it gives, as is the error, whatever the read's cuts and limits."""
    data = b"".join(frames)
    data = data[:max(len(data) - cut, 0)]
    whole = p.Parser(max_control_line, max_payload)
    expected = whole.feed(data)
    origin = _Origin()
    parser = p.Parser(max_control_line, max_payload, origin=origin)
    parser.take_acks = True
    got = []
    points = sorted({0, len(data), *(min(r, len(data)) for r in reads)})
    for start, end in zip(points, points[1:]):
        chunk = data[start:end]
        while True:
            # (what one feed() takes comes before what it returns: it stops before an
            # ack that follows an operation)
            ops = parser.feed(chunk)
            chunk = b""
            got += [("ack", subject) for subject in origin.acks]
            origin.acks = []
            got += [("op", op) for op in ops]
            if not parser.more:
                break
    want = [("ack", op[1]) if _plain_ack(op) else ("op", op) for op in expected]
    assert got == want
    assert whole.error == parser.error
    assert origin.in_msgs == sum(1 for kind, _ in want if kind == "ack")


# -- against nats-server ----------------------------------------------------------------------
def _nats_answer(port: int, wire: bytes) -> bytes:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(2)
    sock.recv(65536)                                    # INFO
    sock.sendall(b'CONNECT {"verbose":false}\r\n' + wire)
    out = b""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            out += b"<closed>"
            break
        out += chunk
    sock.close()
    return out


@pytest.mark.natsserver
def test_error_texts_match_nats_server():
    natsserver = pytest.importorskip("natsserver")
    natsserver.require_nats_server()
    cases = [b"XYZ\r\n", b"PUB a 2000000\r\n", b"PUB " + b"a" * 5000, b"PUB a\r\n",
             b"PUB a 2\r\nabc\r\n", b"SUB a\r\n"]
    with natsserver.nats_server(jetstream=False) as server:
        for wire in cases:
            parser = p.Parser()
            parser.feed(wire)
            kind, text = parser.error
            expected = (p.err_frame(text) if kind == p.SEND else b"") + b"<closed>"
            assert _nats_answer(server.port, wire) == expected, wire
