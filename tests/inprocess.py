"""A server connection driven in process: bytes fed to a Client as one read, and what it
writes collected by a stand-in transport -- exact and synchronous, for tests of what one
read does."""

from __future__ import annotations

import re
import threading

from jsstore.server import Server
from jsstore.server.client import Client

MSG = re.compile(rb"(H?MSG) (\S+) (\S+) (?:(\S+) )?(?:\d+ )?(\d+)\r\n")


class Transport:
    def __init__(self):
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def get_extra_info(self, key):
        return None

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass


class Conn:
    """One client connection fed by hand; `read()` returns what it was sent since."""

    def __init__(self, server: Server, cid: int = 1, inbox: str = "_INBOX.t"):
        self.client = Client(server, cid)
        self.transport = Transport()
        self.client.connection_made(self.transport)
        self.feed(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nSUB %s.* 1\r\n'
                  % inbox.encode())
        self.read()

    def feed(self, data: bytes) -> None:
        self.client.data_received(data)

    def read(self) -> bytes:
        self.client.flush()
        out = b"".join(self.transport.writes)
        self.transport.writes.clear()
        return out

    def request(self, subject: str, body: bytes, inbox: str = "_INBOX.t.r") -> bytes:
        return b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), inbox.encode(), len(body), body)


def messages(data: bytes) -> list[tuple[str, str]]:
    """(subject, reply) of each MSG in `data`; status messages (HMSG without a reply)
    are left out."""
    found = []
    pos = 0
    while (m := MSG.search(data, pos)) is not None:
        size = int(m.group(5))
        pos = m.end() + size + 2
        if m.group(4) is not None:
            found.append((m.group(2).decode(), m.group(4).decode()))
    return found


def frames(data: bytes) -> list[tuple[str, str, str | None, bytes]]:
    """(subject, sid, reply, payload with any header block) of every MSG and HMSG."""
    found = []
    pos = 0
    while (m := MSG.search(data, pos)) is not None:
        size = int(m.group(5))
        body = data[m.end():m.end() + size]
        pos = m.end() + size + 2
        reply = m.group(4).decode() if m.group(4) is not None else None
        found.append((m.group(2).decode(), m.group(3).decode(), reply, body))
    return found


def serve_in_thread(server: Server, timeout: float = 10.0):
    """`server` listening and served by its loop on a thread of its own (for a test that
    talks to it over sockets from this thread); returns the call that stops it and waits
    for the thread."""
    ready = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            server.run(lambda _server: ready.set())
        except BaseException as exc:        # (the test sees it)
            failed.append(exc)
            ready.set()

    thread = threading.Thread(target=run, name="jsstore-test-server", daemon=True)
    thread.start()
    if not ready.wait(timeout) or failed:
        raise RuntimeError(f"the server did not start: {failed[:1]}")

    def stop() -> None:
        server.loop.stop_threadsafe()
        thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError("the server's thread did not end")

    return stop
