"""A minimal raw-socket NATS client for the benchmarks that drive a server hard.

nats-py spends more per message than either server does, so a benchmark of the server's
own cost sends prebuilt protocol frames and parses the answers with a few `bytes.find`
calls.  `RawClient` offers what `growth.py` needs:

- ``request(subject, payload)``: one request, wait for its answer (JSON API calls);
- ``pipeline(frames, window)``: send frames, each of which draws exactly one answer on
  ``_R.>``, keeping at most `window` unanswered; returns the answers' count;
- ``collect(count)``: read `count` messages of any subscription (push deliveries, pulls).

Every message read is a (subject, reply, payload) tuple; HMSG frames (answers with
headers, such as direct gets) count as messages, their headers kept in front of the
payload.
"""

from __future__ import annotations

import json
import socket
import time

STALL = 10.0            # no answer for this long: the server lost the requests


class RawClient:
    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(STALL)
        self.buf = b""
        self._read_info()
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,'
                          b'"no_responders":true}\r\nSUB _R.> 1\r\nPING\r\n')
        self._wait_pong()
        self._sids = 1
        self._inbox = 0

    def _read_info(self) -> None:
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        self.buf = self.buf[self.buf.index(b"\r\n") + 2:]

    def _wait_pong(self) -> None:
        while True:
            eol = self.buf.find(b"\r\n")
            if eol >= 0:
                line = self.buf[:eol]
                if line == b"PONG":
                    self.buf = self.buf[eol + 2:]
                    return
                if not line.startswith((b"MSG ", b"HMSG ")):
                    self.buf = self.buf[eol + 2:]
                    continue
                raise RuntimeError("a message arrived before the PONG")
            self._fill()

    def _fill(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise RuntimeError("the server closed the connection")
        self.buf += data

    def close(self) -> None:
        self.sock.close()

    def subscribe(self, subject: str) -> None:
        self._sids += 1
        self.sock.sendall(b"SUB %s %d\r\n" % (subject.encode(), self._sids))

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _messages(self, limit: int) -> list[tuple[bytes, bytes, bytes]]:
        """The whole messages at the front of the buffer (at most `limit`), consumed."""
        buf, pos, out = self.buf, 0, []
        find = buf.find
        while len(out) < limit:
            eol = find(b"\r\n", pos)
            if eol < 0:
                break
            line = buf[pos:eol]
            if line.startswith(b"MSG "):
                parts = line.split(b" ")
                size = int(parts[-1])
                end = eol + 2 + size
                if end + 2 > len(buf):
                    break
                reply = parts[3] if len(parts) == 5 else b""
                out.append((parts[1], reply, buf[eol + 2:end]))
                pos = end + 2
            elif line.startswith(b"HMSG "):
                parts = line.split(b" ")
                size = int(parts[-1])
                end = eol + 2 + size
                if end + 2 > len(buf):
                    break
                reply = parts[3] if len(parts) == 6 else b""
                out.append((parts[1], reply, buf[eol + 2:end]))
                pos = end + 2
            elif line == b"PING":
                self.sock.sendall(b"PONG\r\n")
                pos = eol + 2
            elif line.startswith(b"-ERR"):
                raise RuntimeError(f"server error: {line!r}")
            else:
                pos = eol + 2
        self.buf = buf[pos:]
        return out

    def collect(self, count: int, *, keep: bool = True) -> list:
        """Read `count` messages (a list of them when `keep`, else their count only)."""
        got: list = []
        seen = 0
        while seen < count:
            msgs = self._messages(count - seen)
            seen += len(msgs)
            if keep:
                got.extend(msgs)
            if seen < count:
                self._fill()
        return got if keep else []

    def request(self, subject: str, payload: bytes = b"") -> bytes:
        """One request and its answer's payload."""
        self._inbox += 1
        self.sock.sendall(b"PUB %s _R.q%d %d\r\n%s\r\n" % (subject.encode(), self._inbox,
                                                          len(payload), payload))
        ((_subject, _reply, data),) = self.collect(1)
        return data

    def api(self, subject: str, body: dict | None = None) -> dict:
        """A JetStream API request; raises on an error answer."""
        answer = json.loads(self.request(subject, json.dumps(body).encode() if body else b""))
        if "error" in answer:
            raise RuntimeError(f"{subject}: {answer['error']}")
        return answer

    def pipeline(self, frames, window: int = 1000, batch: int = 100) -> float:
        """Send every frame of the iterable `frames` (bytes; each draws one answer), with
        at most `window` unanswered; returns the seconds from the first send to the last
        answer."""
        it = iter(frames)
        outstanding = 0
        done = False
        start = time.perf_counter()
        while True:
            if not done and outstanding < window:
                chunk = []
                room = min(batch, window - outstanding)
                for frame in it:
                    chunk.append(frame)
                    if len(chunk) >= room:
                        break
                if chunk:
                    self.sock.sendall(b"".join(chunk))
                    outstanding += len(chunk)
                if len(chunk) < room:
                    done = True
                if outstanding < window and not done:
                    continue
            if outstanding == 0:
                break
            msgs = self._messages(outstanding)
            if msgs:
                outstanding -= len(msgs)
            else:
                self._fill()
        return time.perf_counter() - start
