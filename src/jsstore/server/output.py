"""A client's output side: messages queued as frames, held back briefly for a client
that pipelines, written once per read, and the slow consumer cut off (a client that does
not read what it is sent beyond max_pending bytes is dropped, as nats-server drops it)."""

from __future__ import annotations

import fcntl
import termios

from jsstore._core.wire import protocol

HOLD_TIME = 0.002           # answers held back for a client that pipelines, at most
HOLD_BYTES = 64 * 1024      # ... and no more than this much of them
QUIET_GAP = 0.002           # a client that sent nothing for this long may be waiting;
#                             not above HOLD_TIME, so that a client that does wait for
#                             each answer is answered at once again after one held one


class Output:
    """The output half of ``jsstore.server.client.Client``, in Python: when to write what
    the core rendered into the connection's buffer (``Conn.out``; the Client sets the
    other attributes used here: server, transport, fd, pipelining, held)."""

    def hold(self) -> bool:
        """Whether to hold this client's answers back for up to HOLD_TIME (Nagle's idea,
        a level up): once a client has shown that it sends on without waiting for
        answers -- more of its bytes already wait in the socket when its answers are
        due -- and for as long as it keeps sending, its answers are written a few large
        chunks at a time instead of one small write per packet it sent.  A client that
        waits for each answer never shows that and is answered at once; one that goes
        quiet for QUIET_GAP is again."""
        if not self.out:
            # nothing to hold (and asking FIONREAD now would take a client that is quick
            # to send its next request for one that pipelines)
            return False
        fd = self.fd
        if fd is None:
            sock = self.transport.get_extra_info("socket") if self.transport else None
            fd = self.fd = sock.fileno() if sock is not None else -1
        if self.closed or fd < 0 or len(self.out) >= HOLD_BYTES:
            return False
        if not self.pipelining:
            try:
                waiting = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
            except OSError:
                return False
            self.pipelining = waiting != b"\0\0\0\0"
        return self.pipelining

    def release(self) -> None:
        self.held = False
        self.flush()

    def flush(self) -> None:
        out = self.out
        if out:
            # (a new buffer for what comes next: the transport may keep this one)
            self.out = bytearray()
            if self.transport is not None and not self.closed:
                self.transport.write(out)
                if self.transport.get_write_buffer_size() > self.server.max_pending:
                    # a slow consumer: it does not read what it is sent; nats-server
                    # drops it
                    self.server.slow_consumers += 1
                    self.closed = True
                    self.transport.abort()

    def error_and_close(self, text: str) -> None:
        self.write(protocol.err_frame(text))
        self.flush()
        self.close()

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()
