"""Connections and listeners on the server's event loop (jsstore.server.eventloop).

A protocol object (a client, the monitor's HTTP exchange) is told ``connection_made
(transport)``, ``data_received(bytes)`` for each read, ``eof_received()`` when the peer
has closed its side (a true answer keeps the connection open for writing; the server's
protocols answer None) and ``connection_lost(exc)`` once, when the connection is gone
(exc None for a close of ours).  The transport writes at once what the socket takes and
keeps the rest until the socket is writable again; ``get_write_buffer_size()`` is what
is kept (the server drops a client that lets it grow past max_pending).  ``close()``
stops reading and closes once what is kept is written; ``abort()`` closes at once.
"""

from __future__ import annotations

import errno
import itertools
import socket
from collections import deque

from jsstore.deferred import deferred_logger
from jsstore.server.eventloop import HANGUP, READ, WRITE

log = deferred_logger("jsstore.server")

MAX_READ = 256 * 1024       # bytes taken from a socket per read (asyncio's and uvloop's)
ACCEPT_BACKLOG = 128        # connections accepted per wake-up at most
MAX_CHUNKS = 512            # kept chunks written in one sendmsg at most (IOV_MAX: 1,024)


class SocketTransport:
    """One connected socket, non-blocking, TCP_NODELAY, driven by the loop."""

    __slots__ = ("loop", "protocol", "_sock", "_fd", "_buffer", "_size", "_closing",
                 "_lost", "_events", "_extra")

    def __init__(self, loop, sock: socket.socket, protocol, extra: dict | None = None):
        self.loop = loop
        self.protocol = protocol
        self._sock = sock
        self._fd = sock.fileno()
        self._buffer: deque = deque()      # what the socket did not take yet
        self._size = 0
        self._closing = False
        self._lost = False
        self._events = READ
        self._extra = extra or {}
        loop.add_handler(self._fd, READ, self)

    # -- the loop's side ------------------------------------------------------------------
    def on_ready(self, events: int) -> None:
        if events & WRITE:
            self._write_ready()
        if events & (READ | HANGUP) and self._events & READ and not self._lost:
            self._read_ready()
        elif events & HANGUP and not self._events & WRITE:
            self._finish(None)      # (gone while neither read nor written: epoll says so
                                    # on every turn until the descriptor is removed)

    def _read_ready(self) -> None:
        try:
            data = self._sock.recv(MAX_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._fail(exc)
            return
        if data:
            try:
                self.protocol.data_received(data)
            except Exception as exc:    # a bug: logged, the connection closed
                log.exception("error handling a read of %r", self.protocol)
                self._fail(exc)
        elif not self._closing:
            self._set_events(self._events & ~READ)
            if not self.protocol.eof_received():
                self.close()

    def _write_ready(self) -> None:
        buffer = self._buffer
        try:
            if len(buffer) == 1:
                sent = self._sock.send(buffer[0])
            else:               # (the chunks kept, in one system call)
                sent = self._sock.sendmsg(list(itertools.islice(buffer, MAX_CHUNKS)))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._fail(exc)
            return
        self._size -= sent
        while sent:
            chunk = buffer[0]
            if sent < len(chunk):
                buffer[0] = memoryview(chunk)[sent:]
                return
            sent -= len(chunk)
            buffer.popleft()
        if buffer:
            return              # (the rest when the socket is writable again)
        self._set_events(self._events & ~WRITE)
        if self._closing:
            self._finish(None)

    def _set_events(self, events: int) -> None:
        if events != self._events and not self._lost:
            self._events = events
            self.loop.modify_handler(self._fd, events)

    # -- the protocol's side --------------------------------------------------------------
    def write(self, data) -> None:
        if self._closing or not data:
            return
        if not self._buffer:
            try:
                sent = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._fail(exc)
                return
            if sent == len(data):
                return
            data = memoryview(data)[sent:]
            self._set_events(self._events | WRITE)
        self._buffer.append(data)
        self._size += len(data)

    def get_write_buffer_size(self) -> int:
        return self._size

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Stop reading; the connection closes once what is kept is written."""
        if self._closing:
            return
        self._closing = True
        self._set_events(self._events & ~READ)
        if not self._buffer:
            self._finish(None)

    def abort(self) -> None:
        """Close at once; what is kept is dropped."""
        self._closing = True
        self._finish(None)

    def _fail(self, exc: BaseException) -> None:
        self._closing = True
        self._finish(exc)

    def _finish(self, exc: BaseException | None) -> None:
        if self._lost:
            return
        self._lost = True
        self._buffer.clear()
        self._size = 0
        self.loop.remove_handler(self._fd)
        self.loop.call_soon(self._lose, exc)

    def _lose(self, exc: BaseException | None) -> None:
        try:
            self.protocol.connection_lost(exc)
        finally:
            self._sock.close()

    def get_extra_info(self, name: str, default=None):
        if name in self._extra:
            return self._extra[name]
        sock = self._sock
        try:
            if name == "peername":
                value = sock.getpeername()
            elif name == "sockname":
                value = sock.getsockname()
            else:
                return default
        except OSError:
            return default
        self._extra[name] = value
        return value


class Listener:
    """A listening socket: each connection accepted gets ``factory()`` as its protocol."""

    def __init__(self, loop, sock: socket.socket, factory, backlog: int = 511):
        self.loop = loop
        self.sock = sock
        self._factory = factory
        self._fd = sock.fileno()
        sock.setblocking(False)
        sock.listen(backlog)
        loop.add_handler(self._fd, READ, self)

    def on_ready(self, events: int) -> None:
        sock = self.sock
        for _ in range(ACCEPT_BACKLOG):
            try:
                conn, address = sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # out of descriptors: the connection waits in the backlog; the
                    # listener rests a second (as asyncio's does)
                    log.error("error accepting a client connection: %s", exc)
                    self.loop.remove_handler(self._fd)
                    self.loop.call_later(1.0, self._resume)
                    return
                raise
            conn.setblocking(False)
            if conn.family in (socket.AF_INET, socket.AF_INET6):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            protocol = self._factory()
            transport = SocketTransport(self.loop, conn, protocol, {"peername": address})
            protocol.connection_made(transport)

    def _resume(self) -> None:
        if self._fd >= 0:
            self.loop.add_handler(self._fd, READ, self)

    def close(self) -> None:
        """Stop listening (the connections accepted stay)."""
        if self._fd >= 0:
            self.loop.remove_handler(self._fd)
            self._fd = -1
            self.sock.close()
