"""Bare protocol sessions for tests that compare what `jsstore serve` and nats-server say
word for word (``-ERR`` texts, MSG frames, closed connections), and a way to start either
server on one configuration file."""

from __future__ import annotations

import json
import socket
import time

from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

KINDS = ("jsstore", "nats-server")


def start(kind: str, store_dir, conf):
    """A context manager running server `kind` on configuration file `conf`."""
    if kind == "nats-server":
        require_nats_server()
        return nats_server(store_dir, ["-c", str(conf)])
    return jsstore_server(store_dir, ["-c", str(conf)])


def on_both(tmp_path, conf_text: str, outcomes) -> tuple[dict, dict]:
    """(jsstore's, nats-server's) `outcomes(port)` on servers started on one configuration
    file of `conf_text`, each with a store directory of its own."""
    conf = tmp_path / "both.conf"
    conf.write_text(conf_text)
    found = {}
    for kind in KINDS:
        with start(kind, tmp_path / kind, conf) as srv:
            found[kind] = outcomes(srv.port)
    return found["jsstore"], found["nats-server"]


def differences(ours: dict, theirs: dict) -> dict:
    """The outcomes in which jsstore's differ from nats-server's: {key: (ours, theirs)}."""
    return {key: (ours.get(key), theirs[key]) for key in theirs if ours.get(key) != theirs[key]}


class Session:
    """One connection: frames out, lines and messages in."""

    def __init__(self, port: int, user: str | None = None, password: str = "p", *,
                 connect: bool = True, **options):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.eof = False
        self.requests = 0
        self.info = json.loads(self.line()[5:])
        if connect:
            creds = {"user": user, "pass": password} if user else {}
            self.send(b"CONNECT " + json.dumps({
                "verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                **creds, **options}).encode() + b"\r\n")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, timeout: float) -> bool:
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(65536)
        except (TimeoutError, socket.timeout):
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def line(self, timeout: float = 5.0) -> bytes | None:
        """The next line (None: none came within `timeout`, or the connection closed)."""
        deadline = time.monotonic() + timeout
        while b"\r\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or self.eof or not self._fill(left):
                return None
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def frame(self, timeout: float = 5.0) -> tuple | None:
        """The next frame: ("MSG", subject, reply, headers, payload, sid), or (line,)."""
        line = self.line(timeout)
        if line is None:
            return None
        if line.startswith((b"MSG ", b"HMSG ")):
            words = line.decode().split()
            hmsg = words[0] == "HMSG"
            size = int(words[-1])
            hsize = int(words[-2]) if hmsg else 0
            reply = words[3] if len(words) == (6 if hmsg else 5) else None
            while len(self.buf) < size + 2 and not self.eof:
                self._fill(timeout)
            body, self.buf = self.buf[:size], self.buf[size + 2:]
            return ("MSG", words[1], reply, body[:hsize], body[hsize:], words[2])
        return (line.decode(),)

    def exchange(self, frames: bytes = b"") -> list[tuple]:
        """Send `frames` and a PING; the frames up to its PONG (the PONG left out; a
        server's own PINGs and INFO updates skipped).  ("closed",) ends a closed one."""
        self.send(frames + b"PING\r\n")
        out = []
        while True:
            frame = self.frame()
            if frame is None:
                out.append(("closed",))
                return out
            if frame == ("PONG",):
                return out
            if frame == ("PING",) or frame[0].startswith("INFO "):
                continue
            out.append(frame)

    def request(self, subject: str, payload: bytes = b"", inbox: str = "_INBOX.t",
                timeout: float = 5.0) -> tuple:
        """A request over a fresh inbox: what the PUB itself drew (-ERR lines) and the
        answer's payload (None when there was none: the publish was refused)."""
        self.requests += 1
        reply = f"{inbox}.{self.requests}"
        errors = self.exchange(b"SUB %s 901\r\nPUB %s %s %d\r\n%s\r\n" % (
            reply.encode(), subject.encode(), reply.encode(), len(payload), payload))
        answers = [f[3] + f[4] for f in errors if f[0] == "MSG" and f[1] == reply]
        errors = [f for f in errors if f[0] != "MSG"]
        answer = answers[0] if answers else None
        if not errors and answer is None:
            while (frame := self.frame(timeout)) is not None and frame[:2] != ("MSG", reply):
                pass
            answer = frame[3] + frame[4] if frame is not None else None
        self.send(b"UNSUB 901\r\n")
        return [f[0] for f in errors], answer

    def is_open(self) -> bool:
        try:
            return self.exchange() == []
        except OSError:
            return False

    def until_closed(self, timeout: float = 10.0) -> list[tuple]:
        """Every frame up to the server's closing the connection (("open",) ends the list
        when it does not close within `timeout`)."""
        out = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            frame = self.frame(deadline - time.monotonic())
            if frame is None:
                if self.eof:
                    return out
                continue
            out.append(frame)
        return out + [("open",)]

    def closed(self, timeout: float = 5.0) -> bool:
        """Whether the server closes the connection within `timeout` (reading on)."""
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            if not self._fill(deadline - time.monotonic()):
                continue
        return self.eof

    def close(self) -> None:
        self.sock.close()


class ByteSession:
    """A connection that keeps every byte the server sends, subjects that are not UTF-8
    included (Session decodes lines as text)."""

    def __init__(self, port: int, user: str | None = None, password: str = "p"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.read_until(b"\r\n")
        creds = {"user": user, "pass": password} if user else {}
        self.sock.sendall(b"CONNECT " + json.dumps({
            "verbose": False, "headers": True, "no_responders": True, **creds}).encode()
            + b"\r\n")
        self.inbox = 0
        self.passed = b""       # the frames a request read past on its way to its answer

    def _fill(self, deadline: float) -> bool:
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = self.sock.recv(65536)
        except (TimeoutError, socket.timeout):
            return False
        self.buf += chunk
        return bool(chunk)

    def read_until(self, marker: bytes, timeout: float = 5.0) -> bytes:
        deadline = time.monotonic() + timeout
        while marker not in self.buf:
            if not self._fill(deadline) or time.monotonic() > deadline:
                out, self.buf = self.buf, b""
                return out + b"<no " + marker + b">"
        out, _, self.buf = self.buf.partition(marker)
        return out

    def exchange(self, frames: bytes) -> bytes:
        """What the server sends after `frames`, up to the PONG of a PING sent after them
        (with what requests read past before)."""
        self.sock.sendall(frames + b"PING\r\n")
        out, self.passed = self.passed + self.read_until(b"PONG\r\n"), b""
        return out

    def _frame(self, deadline: float) -> tuple[bytes, bytes] | None:
        """The next frame: (control line, body or b"")."""
        while b"\r\n" not in self.buf:
            if not self._fill(deadline):
                return None
        line, _, self.buf = self.buf.partition(b"\r\n")
        if not line.startswith((b"MSG ", b"HMSG ")):
            return line, b""
        size = int(line.split()[-1])
        while len(self.buf) < size + 2:
            if not self._fill(deadline):
                return None
        body, self.buf = self.buf[:size], self.buf[size + 2:]
        return line, body

    def request(self, subject: bytes, body: bytes, timeout: float = 3.0) -> bytes:
        """The answer's payload (b"" for none within `timeout`)."""
        self.inbox += 1
        inbox = b"_INBOX.n%d" % self.inbox
        self.sock.sendall(b"SUB %s r%d\r\nPUB %s %s %d\r\n%s\r\n" % (
            inbox, self.inbox, subject, inbox, len(body), body))
        deadline = time.monotonic() + timeout
        while (frame := self._frame(deadline)) is not None:
            line, payload = frame
            if line.startswith((b"MSG ", b"HMSG ")) and line.split()[2] == b"r%d" % self.inbox:
                self.sock.sendall(b"UNSUB r%d\r\n" % self.inbox)
                return payload
            if line.startswith((b"MSG ", b"HMSG ")):
                self.passed += line + b"\r\n" + payload + b"\r\n"
        return b""

    def close(self) -> None:
        self.sock.close()
