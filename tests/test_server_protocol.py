"""The core protocol on a live connection, against `jsstore serve` and nats-server alike:
verbose and pedantic modes, echo, subject checks, max payload, many connections."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver


class Raw:
    """A bare protocol session: send bytes, read what comes back."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.info = json.loads(self.line()[5:])

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def until_pong(self) -> list[bytes]:
        """Lines up to the PONG answering a PING sent now (the PONG left out)."""
        self.send(b"PING\r\n")
        lines = []
        while (line := self.line()) != b"PONG":
            lines.append(line)
        return lines

    def closed(self, wait: float = 2.0) -> bool:
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


def test_verbose_answers_every_operation(server):
    raw = Raw(server.port)
    raw.send(b'CONNECT {"verbose":true}\r\nSUB v 1\r\nPUB v 2\r\nhi\r\nUNSUB 1\r\n')
    lines = raw.until_pong()
    raw.close()
    assert lines == [b"+OK", b"+OK", b"+OK", b"MSG v 1 2", b"hi", b"+OK"]


def test_pedantic_and_subject_checks(server):
    raw = Raw(server.port)
    raw.send(b'CONNECT {"verbose":false,"pedantic":true}\r\nPUB a.* 1\r\nx\r\n'
             b'SUB a..b 1\r\nSUB ok 2\r\nPUB ok 1\r\ny\r\n')
    lines = raw.until_pong()
    raw.close()
    assert lines == [b"-ERR 'Invalid Publish Subject'", b"-ERR 'Invalid Subject'",
                     b"MSG ok 2 1", b"y"]


def test_echo_off_keeps_a_clients_own_messages_from_it(server):
    raw = Raw(server.port)
    raw.send(b'CONNECT {"verbose":false,"echo":false}\r\nSUB e 1\r\nPUB e 1\r\nx\r\n')
    # its own message is not sent back; the PONG also tells that the SUB is in place
    # before the other client publishes (without it the publish could come first)
    assert raw.until_pong() == []
    other = Raw(server.port)
    other.send(b'CONNECT {"verbose":false}\r\nPUB e 1\r\nz\r\n')
    other.until_pong()
    lines = raw.until_pong()
    raw.close()
    other.close()
    assert lines == [b"MSG e 1 1", b"z"]


def test_max_payload(server):
    raw = Raw(server.port)
    limit = raw.info["max_payload"]
    raw.send(b'CONNECT {"verbose":false}\r\nPUB big %d\r\n' % (limit + 1))
    err = raw.line()
    gone = raw.closed()
    raw.close()

    async def client_side():
        nc = await nats.connect(server.url)
        with pytest.raises(nats.errors.MaxPayloadError):
            await nc.publish("big", b"x" * (nc.max_payload + 1))
        await nc.publish("fits", b"x" * nc.max_payload)
        await nc.flush()
        size = nc.max_payload
        await nc.close()
        return size
    assert limit == 1024 * 1024
    assert err == b"-ERR 'Maximum Payload Violation'"
    assert gone
    assert run(client_side()) == limit


def test_many_connections(server):
    async def main():
        clients = [await nats.connect(server.url) for _ in range(150)]
        counts = [0] * len(clients)

        def counter(i):
            async def cb(msg):
                counts[i] += 1
            return cb
        for i, nc in enumerate(clients):
            await nc.subscribe("fan", cb=counter(i))
            await nc.subscribe("work", queue="q", cb=counter(i))
        for nc in clients:
            await nc.flush()
        for _ in range(3):
            await clients[0].publish("fan", b"all")
        for _ in range(300):
            await clients[-1].publish("work", b"one")
        await clients[0].flush()
        await clients[-1].flush()
        deadline = time.monotonic() + 10
        while sum(counts) < 3 * len(clients) + 300 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for nc in clients:
            await nc.close()
        return counts
    counts = run(main(), timeout=60)
    assert sum(counts) == 3 * len(counts) + 300      # every fan-out, each queued one once
    assert all(c >= 3 for c in counts)


def test_no_responders_status_names_the_subject(server):
    raw = Raw(server.port)
    raw.send(b'CONNECT {"headers":true,"no_responders":true,"verbose":false,'
             b'"pedantic":false}\r\nSUB _INBOX.x 1\r\nPUB nothing.here _INBOX.x 2\r\nhi\r\n')
    assert raw.until_pong() == [b"HMSG _INBOX.x 1 44 44",
                                b"NATS/1.0 503", b"Nats-Subject: nothing.here", b"", b""]
    raw.close()
