"""The server's event loop: one thread, the kernel's readiness poller, timers, callbacks.

``jsstore serve`` needs little of an event loop: sockets that become readable or
writable, timers (PINGs, auth and TLS time limits, lame duck), callbacks for later in
the same turn (flushes), callbacks handed in from other threads (JetStream's timer and
sync threads) and signals.  This loop does that and nothing else, with the standard
library's ``select`` (epoll, or poll where there is no epoll): a server reaches ready
without importing asyncio (which imports ssl, concurrent.futures, logging and inspect)
and without a second event-loop library.

One turn (``run_once``): wait for I/O until the next timer is due (not at all when
callbacks wait), hand each ready descriptor to its handler (a connection reads or
writes, a listener accepts), move the timers that came due to the callbacks, then run
the callbacks that were waiting when the turn began; those they schedule run in the next
turn, after its I/O.  The callbacks of one read (a client's flush) so run once that
turn's reads are all handled.

Everything but ``call_soon_threadsafe`` and ``stop_threadsafe`` belongs to the loop's
thread.  Transports and listeners are in jsstore.server.transport.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import select
import signal
import threading
import time
from collections import deque

from jsstore.deferred import deferred_logger

log = deferred_logger("jsstore.server")

if hasattr(select, "epoll"):
    READ, WRITE = select.EPOLLIN, select.EPOLLOUT
    HANGUP = select.EPOLLERR | select.EPOLLHUP

    def _poller():
        return select.epoll()

    def _wait(poller, timeout: float | None) -> list:
        return poller.poll(-1 if timeout is None else timeout)
else:                                                     # (no epoll: BSD, macOS)
    READ, WRITE = select.POLLIN, select.POLLOUT
    HANGUP = select.POLLERR | select.POLLHUP

    def _poller():
        return select.poll()

    def _wait(poller, timeout: float | None) -> list:
        return poller.poll(None if timeout is None else math.ceil(timeout * 1000))


class Handle:
    """A callback waiting to run; ``cancel()`` keeps it from running."""

    __slots__ = ("callback", "args", "cancelled")

    def __init__(self, callback, args: tuple):
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.callback = self.args = None

    def run(self) -> None:
        callback = self.callback
        if callback is not None:
            callback(*self.args)


class TimerHandle(Handle):
    """A timer's callback; its loop counts the timers cancelled before they came due."""

    __slots__ = ("loop",)

    def __init__(self, callback, args: tuple, loop: Loop):
        super().__init__(callback, args)
        self.loop = loop

    def cancel(self) -> None:
        if not self.cancelled and self.loop is not None:    # (None: it came due)
            self.loop._cancelled_timers += 1
        super().cancel()


class Loop:
    """The event loop of one server (see the module's docstring)."""

    def __init__(self):
        self._poller = _poller()
        self._handlers: dict[int, object] = {}    # fd -> an object with on_ready(events)
        self._ready: deque[Handle] = deque()
        self._timers: list = []                    # heap of (when, order, TimerHandle)
        self._cancelled_timers = 0                 # of those, cancelled
        self._order = itertools.count()
        self._stopping = False
        self._closed = False
        self.thread = threading.get_ident()        # the thread that runs it
        self._signals: dict[int, object] = {}      # signal -> the handler it replaced
        # the wake-up descriptor: other threads and signal handlers write to it (re-entrant:
        # a signal handler may run while the loop's own thread holds the lock)
        self._wake_lock = threading.RLock()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self.add_handler(self._wake_read, READ, self)

    # -- time and callbacks ---------------------------------------------------------------
    def call_soon(self, callback, *args) -> Handle:
        handle = Handle(callback, args)
        self._ready.append(handle)
        return handle

    def call_later(self, delay: float, callback, *args) -> Handle:
        return self.call_at(time.monotonic() + delay, callback, *args)

    def call_at(self, when: float, callback, *args) -> Handle:
        handle = TimerHandle(callback, args, self)
        heapq.heappush(self._timers, (when, next(self._order), handle))
        return handle

    def call_soon_threadsafe(self, callback, *args) -> Handle:
        """From any thread (or a signal handler): `callback` runs on the loop's thread.
        Once the loop is closed nothing runs (the server has stopped)."""
        handle = Handle(callback, args)
        with self._wake_lock:           # (not closed while it writes to the pipe)
            if self._closed:
                handle.cancel()
                return handle
            self._ready.append(handle)
            try:
                os.write(self._wake_write, b"\0")
            except (BlockingIOError, InterruptedError):
                pass        # (the pipe is full: the loop wakes all the same)
        return handle

    def on_ready(self, events: int) -> None:
        """The wake-up pipe: emptied (what woke the loop is in the callbacks)."""
        try:
            while os.read(self._wake_read, 4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    # -- descriptors ----------------------------------------------------------------------
    def add_handler(self, fd: int, events: int, handler) -> None:
        """`handler.on_ready(events)` is called when `fd` is ready for `events`."""
        self._poller.register(fd, events)
        self._handlers[fd] = handler

    def modify_handler(self, fd: int, events: int) -> None:
        self._poller.modify(fd, events)

    def remove_handler(self, fd: int) -> None:
        if self._handlers.pop(fd, None) is not None:
            try:
                self._poller.unregister(fd)
            except (OSError, ValueError, KeyError):
                pass        # (the descriptor was closed already)

    # -- signals --------------------------------------------------------------------------
    def add_signal_handler(self, sig: int, callback, *args) -> None:
        """`callback(*args)` runs on the loop's thread after `sig` arrives.  (Python runs
        signal handlers on the main thread: the loop must run there for them to wake it
        at once.)"""
        previous = signal.signal(sig, lambda _sig, _frame: self.call_soon_threadsafe(
            callback, *args))
        self._signals.setdefault(sig, previous)

    def remove_signal_handlers(self) -> None:
        for sig, previous in self._signals.items():
            signal.signal(sig, previous)
        self._signals.clear()

    # -- running --------------------------------------------------------------------------
    def run_once(self, timeout: float | None = None) -> None:
        """One turn: I/O (waiting at most `timeout` seconds, None: until a timer or
        something else is due), due timers, then the callbacks waiting."""
        ready = self._ready
        timers = self._timers
        if ready or self._stopping:
            wait = 0.0
        else:
            wait = timeout
            if timers:
                due = max(0.0, timers[0][0] - time.monotonic())
                wait = due if wait is None else min(wait, due)
        handlers = self._handlers
        for fd, events in _wait(self._poller, wait):
            handler = handlers.get(fd)
            if handler is not None:
                try:
                    handler.on_ready(events)
                except Exception:       # a bug: logged; the loop goes on
                    log.exception("error handling descriptor %d", fd)
        if timers:
            now = time.monotonic()
            while timers and timers[0][0] <= now:
                handle = heapq.heappop(timers)[2]
                if handle.cancelled:
                    self._cancelled_timers -= 1
                else:
                    handle.loop = None
                    ready.append(handle)
            if self._cancelled_timers > 64 and 2 * self._cancelled_timers > len(timers):
                # (most are cancelled PING timers of gone clients: dropped at once)
                self._timers = timers = [e for e in timers if not e[2].cancelled]
                heapq.heapify(timers)
                self._cancelled_timers = 0
        for _ in range(len(ready)):
            handle = ready.popleft()
            try:
                handle.run()
            except Exception:           # a bug: logged; the loop goes on
                log.exception("error in callback %r", handle.callback)

    def run_forever(self) -> None:
        """Turn until ``stop()``."""
        self.thread = threading.get_ident()
        self._stopping = False
        try:
            while not self._stopping:
                self.run_once()
        finally:
            self._stopping = False

    def run_until(self, done, timeout: float) -> bool:
        """Turn until `done()` is true or `timeout` seconds went by; whether it is."""
        self.thread = threading.get_ident()
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.run_once(min(left, 0.05))
        return True

    def stop(self) -> None:
        """End ``run_forever`` after the current turn."""
        self._stopping = True

    def stop_threadsafe(self) -> None:
        self.call_soon_threadsafe(self.stop)

    def close(self) -> None:
        if self._closed:
            return
        self.remove_signal_handlers()
        with self._wake_lock:
            self._closed = True
            self.remove_handler(self._wake_read)
            self._poller.close()
            os.close(self._wake_read)
            os.close(self._wake_write)
