"""Messages from the JetStream's bus into the event loop.

A consumer delivers on the JetStream's bus (``jsstore.wire.bus``) in whichever thread
stored, acked or ticked; an ``Inbox`` subscribes a subject there and hands every message
to the event loop with ``call_soon_threadsafe``, where ``await inbox.get(timeout)`` waits
for it.  Nothing polls: a waiter is a future the delivery resolves.
"""

from __future__ import annotations

import asyncio
import itertools

from jsstore.aio import errors
from jsstore.wire.bus import Bus, Msg

_ids = itertools.count(1)


def new_inbox() -> str:
    """A reply subject no other subscription uses."""
    return f"_INBOX.aio.{next(_ids)}"


class Inbox:
    """A bus subscription whose messages queue up in the event loop."""

    def __init__(self, subject: str, loop: asyncio.AbstractEventLoop, on_msg=None):
        self.subject = subject
        self.loop = loop
        # called in the loop with each message instead of queueing it (it may call put)
        self.on_msg = on_msg
        self.queue: asyncio.Queue[Msg] = asyncio.Queue()
        self.received = 0           # messages handed over so far
        self._sub = None

    def subscribe(self, bus: Bus) -> None:
        """Start receiving (on the worker thread: a push consumer may deliver at once)."""
        self._sub = bus.subscribe(self.subject, self._arrived)

    def unsubscribe(self) -> None:
        """Stop receiving (on the worker thread)."""
        if self._sub is not None:
            self._sub.unsubscribe()
            self._sub = None

    @property
    def active(self) -> bool:
        return self._sub is not None

    def _arrived(self, msg: Msg) -> None:
        """In the delivering thread."""
        try:
            self.loop.call_soon_threadsafe(self._put, msg)
        except RuntimeError:        # the loop is closed: nobody is waiting any more
            pass

    def _put(self, msg: Msg) -> None:
        if self.on_msg is not None:
            self.on_msg(msg)
        else:
            self.put(msg)

    def put(self, msg: Msg) -> None:
        """Queue a message for get (in the loop)."""
        self.received += 1
        self.queue.put_nowait(msg)

    async def get(self, timeout: float | None) -> Msg:
        """The next message; errors.TimeoutError when none came within `timeout`
        seconds (None: wait for ever)."""
        if timeout is not None and timeout <= 0 and self.queue.empty():
            raise errors.TimeoutError()
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            raise errors.TimeoutError() from None

    def get_nowait(self) -> Msg | None:
        try:
            return self.queue.get_nowait()
        except asyncio.QueueEmpty:
            return None
