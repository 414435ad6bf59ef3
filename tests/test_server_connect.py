"""CONNECT decoded as nats-server decodes it (Go's json.Unmarshal into its ClientOpts,
which start with verbose, pedantic and echo on), against `jsstore serve` and nats-server
alike: keys in any letter case, null as "leave the default", unknown keys skipped, a value
of the wrong type or JSON that does not parse closing the connection without an -ERR, and
no_responders without headers refused."""

from __future__ import annotations

import socket

import pytest

from bothservers import server  # noqa: F401  (the fixture)

pytestmark = pytest.mark.natsserver

ACKED, SILENT, CLOSED = "+OK", "no +OK", "closed"

CASES = [
    (b'{"verbose":true}', ACKED),
    (b'{"verbose":false}', SILENT),
    (b'{"Verbose":true}', ACKED),
    (b'{"VERBOSE":true,"echo":false}', ACKED),
    (b'{}', ACKED),                                  # ClientOpts start verbose
    (b'{"verbose":null}', ACKED),                    # null leaves the default
    (b'{"pedantic":null,"name":null}', ACKED),
    (b'{"verbose":true,"unknown":[1,{"x":2}]}', ACKED),
    (b'{"echo":false,"Verbose":true,"verbose":false}', SILENT),   # the later key wins
    (b'{"verbose":false,"protocol":0,"lang":"python","version":"2.0"}', SILENT),
    (b'{"verbose":"yes"}', CLOSED),
    (b'{"verbose":1}', CLOSED),
    (b'{"verbose":false,"protocol":"1"}', CLOSED),
    (b'{"verbose":false,"lang":5}', CLOSED),
    (b'{"verbose":false,"import":5}', CLOSED),
    (b'{bad', CLOSED),
    (b'[]', CLOSED),
    (b'"text"', CLOSED),
]


def exchange(port: int, connect: bytes) -> tuple[list[bytes], bool]:
    """The lines a server answers `CONNECT <connect>` and a PING with, and whether it then
    closed the connection."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        data = b""
        while b"\r\n" not in data:
            data += sock.recv(65536)                 # the INFO line
        data = data.split(b"\r\n", 1)[1]
        sock.sendall(b"CONNECT " + connect + b"\r\nPING\r\n")
        closed = False
        while b"PONG\r\n" not in data:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                chunk = b""
            if not chunk:
                closed = True
                break
            data += chunk
        return [line for line in data.split(b"\r\n") if line], closed
    finally:
        sock.close()


@pytest.mark.parametrize("connect, outcome", CASES, ids=[c.decode() for c, _ in CASES])
def test_connect_options_are_read_as_go_reads_them(server, connect, outcome):
    lines, closed = exchange(server.port, connect)
    if outcome == CLOSED:
        assert closed and lines == [], lines
    else:
        assert not closed
        assert lines == ([b"+OK", b"PONG"] if outcome == ACKED else [b"PONG"]), lines


def test_no_responders_needs_headers(server):
    lines, closed = exchange(server.port, b'{"verbose":false,"headers":null,"no_responders":true}')
    assert lines == [b"-ERR 'no responders requires headers support'"] and closed
    lines, closed = exchange(server.port, b'{"verbose":false,"headers":true,"no_responders":true}')
    assert lines == [b"PONG"] and not closed
