"""Protocol abuse, against `jsstore serve` and nats-server alike: control lines over
max_control_line (4096), payloads over max_payload, malformed verbs and sizes.  The
offending connection gets nats-server's -ERR (or none, where nats-server sends none) and is
closed; a well-behaved client connected at the same time sees no error and is answered.
An exception inside a handler is logged and leaves the connection up (in process)."""

from __future__ import annotations

import json
import logging

import pytest

import jsstore
from bothservers import server  # noqa: F401  (the fixture)
from inprocess import Conn, frames
from jsstore.server import Server
from test_server_protocol import Raw

pytestmark = pytest.mark.natsserver

CONTROL_LINE = b"-ERR 'maximum control line exceeded'"
UNKNOWN = b"-ERR 'Unknown Protocol Operation'"
PAYLOAD = b"-ERR 'Maximum Payload Violation'"

# what is sent after CONNECT -> the lines nats-server 2.15 answers before it closes
ABUSE = {
    "control line over 4096": (b"PUB " + b"a" * 5000 + b" 1\r\nx\r\n", [CONTROL_LINE]),
    "control line over 4096, no end": (b"SUB " + b"a" * 5000, [CONTROL_LINE]),
    "unknown verb": (b"FOO bar\r\n", [UNKNOWN]),
    "binary garbage": (b"\x00\x01\x02\r\n", [UNKNOWN]),
    "PUB without arguments": (b"PUB\r\n", [UNKNOWN]),
    "UNSUB without arguments": (b"UNSUB\r\n", [UNKNOWN]),
    "PUB size not a number": (b"PUB a x\r\nhi\r\n", []),
    "PUB negative size": (b"PUB a -1\r\nhi\r\n", []),
    "PUB size beyond 64 bits": (b"PUB a 99999999999999999999\r\n", []),
    "PUB payload longer than its size": (b"PUB a 2\r\nhello\r\n", [UNKNOWN]),
    "HPUB header size over total": (b"HPUB a 20 5\r\nhello\r\n", []),
    "PUB over max_payload": (b"PUB a 1048577\r\n", [PAYLOAD]),
    "SUB without sid": (b"SUB a\r\n", []),
    "CONNECT not JSON": (b"CONNECT {bad\r\n", []),
}


@pytest.mark.parametrize("name", list(ABUSE))
def test_abuse_is_answered_and_closed_as_nats_server(server, name):
    data, expected = ABUSE[name]
    bystander = Raw(server.port)
    bystander.send(b'CONNECT {"verbose":false}\r\nSUB by 1\r\n')
    bystander.until_pong()
    raw = Raw(server.port)
    raw.send(b'CONNECT {"verbose":false}\r\n' + data)
    lines = []
    raw.sock.settimeout(2.0)
    try:
        while True:
            lines.append(raw.line())
    except (ConnectionError, OSError):
        pass
    gone = raw.closed(0.5)
    raw.close()
    # the other client saw nothing of it and is still served
    bystander.send(b"PUB by 2\r\nok\r\n")
    seen = bystander.until_pong()
    bystander.close()
    assert (lines, gone) == (expected, True)
    assert seen == [b"MSG by 1 2", b"ok"]


# -- an exception inside a handler (jsstore only) -------------------------------------------
@pytest.fixture
def js(tmp_path):
    js = jsstore.open(tmp_path)
    yield js
    js.close()


def test_an_exception_in_a_handler_is_logged_and_the_connection_stays(js, caplog):
    server = Server(js, host="127.0.0.1", port=-1)
    conn = Conn(server)
    account = conn.client.account
    account.router = account.js.router()     # (made now: its first request would make it)
    original = account.router.dispatch

    def broken(subject, *args, **kwargs):
        if subject == "$JS.API.INFO":
            raise RuntimeError("a bug in a handler")
        return original(subject, *args, **kwargs)
    account.router.dispatch = broken
    with caplog.at_level(logging.ERROR, logger="jsstore.server"):
        conn.feed(conn.request("$JS.API.INFO", b"") +
                  conn.request("$JS.API.STREAM.NAMES", b"") + b"PING\r\n")
    out = conn.read()
    assert not conn.client.closed
    assert out.endswith(b"PONG\r\n")
    bodies = [json.loads(body) for _, _, _, body in frames(out)]
    # the failed request goes unanswered; the one after it is answered
    assert [b["type"] for b in bodies] == ["io.nats.jetstream.api.v1.stream_names_response"]
    assert "a bug in a handler" in caplog.text
    assert "RuntimeError" in caplog.text


# -- subjects with an empty token -----------------------------------------------------------
def test_a_subject_with_an_empty_token_matches_nothing(server):
    """nats-server's subject table matches "a..b", ".a" or "a." to nothing: no subscriber,
    stream or API handler gets it, and a requester is told there are no responders."""
    body = b'{"name":"E","subjects":["cap.>"]}'
    raw = Raw(server.port)
    raw.send(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,'
             b'"no_responders":true}\r\nSUB e.> 1\r\nSUB _R.* 2\r\n'
             b"PUB $JS.API.STREAM.CREATE.E _R.1 %d\r\n%s\r\n" % (len(body), body))
    created = _answer(raw, b"_R.1")
    raw.send(b"PUB e..x 1\r\na\r\nPUB e.x. 1\r\nb\r\nPUB cap..x _R.2 1\r\nc\r\n"
             b"PUB cap.x. 1\r\nd\r\nPUB $JS.API.STREAM.INFO..E _R.3 0\r\n\r\n")
    lines = raw.until_pong()
    raw.send(b"PUB $JS.API.STREAM.INFO.E _R.4 0\r\n\r\n")
    info = _answer(raw, b"_R.4")
    raw.close()
    assert b'"name":"E"' in created
    assert lines == [b"HMSG _R.2 2 38 38", b"NATS/1.0 503", b"Nats-Subject: cap..x", b"", b"",
                     b"HMSG _R.3 2 54 54", b"NATS/1.0 503",
                     b"Nats-Subject: $JS.API.STREAM.INFO..E", b"", b""]
    assert b'"messages":0' in info


def _answer(raw: Raw, inbox: bytes) -> bytes:
    """The payload of the next message to `inbox` (nats-server answers the API after
    the PONG to a PING sent with the request)."""
    while not raw.line().startswith(b"MSG " + inbox + b" "):
        pass
    return raw.line()
