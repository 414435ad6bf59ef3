"""Consumers told that they may deliver more: a message was stored that they may take
(nats-server's processStreamSignal) or an ack made room under max_ack_pending
(signalNewMessages).

nats-server only wakes the consumer's own goroutine, which then delivers what it can in one
go.  Here a signal gathers at once, except on a thread that defers (`defer()` to
`settle()`): the server's handling of one read of a client.  There every consumer signalled
is gathered once, when the read is done, in the order first signalled: a read of 1,000
publishes or 1,000 acks makes each consumer look for messages once, not 1,000 times.  A
client cannot tell the difference: nats-server delivers after the publish or ack too, from
another goroutine.
"""

from __future__ import annotations

from threading import get_ident


class Signals:
    """The consumers waiting to gather (see the module), under one JetStream's lock."""

    __slots__ = ("_lock", "_thread", "_waiting")

    def __init__(self, lock):
        self._lock = lock               # the JetStream's: gathers run under it
        self._thread = None             # the thread deferring its signals, if any
        self._waiting: dict = {}        # consumer -> None, in the order signalled

    def signal(self, consumer) -> None:
        """`consumer` may deliver more: gather now, or once the deferring read is done.
        (The JetStream lock is held.)"""
        if self._thread is not None and self._thread == get_ident():
            self._waiting[consumer] = None
        else:
            consumer.gather()

    def defer(self) -> bool:
        """Signals of this thread wait until `settle()`, which gathers each consumer
        signalled once.  False (nothing changes) when a thread defers already: only the
        server's event loop thread does, and a nested call leaves it to the outer one."""
        if self._thread is not None:
            return False
        self._thread = get_ident()
        return True

    def settle(self) -> None:
        """Stop deferring; gather every consumer waiting, in the order signalled (their
        gathers' own signals gather at once).  An error of one consumer's gather is
        raised after the others gathered."""
        self._thread = None
        waiting = self._waiting
        if not waiting:
            return
        error = None
        with self._lock:
            while waiting:
                consumer = next(iter(waiting))
                del waiting[consumer]
                if consumer.closed:
                    continue
                try:
                    consumer.gather()
                except Exception as exc:     # (raised below, once every one gathered)
                    error = error or exc
        if error is not None:
            raise error
