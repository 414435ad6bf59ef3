"""Blocking calls made of asynchronous ones: ``blocking(method)`` is a method that runs the
asynchronous `method` of the object it wraps on the buckets' loop thread and returns its
result; ``Watcher`` is a watch read as an iterator."""

from __future__ import annotations

import asyncio
import functools
from typing import Callable

from jsstore.buckets.loop import LoopThread

_END = object()


def blocking(method: Callable, wrap: Callable | None = None) -> Callable:
    """A method of a wrapper (``self._loop``, ``self._aio``) that is ``await
    method(self._aio, ...)`` run on the loop thread; its result, passed through
    ``wrap(self._loop, result)`` when given.  Same name, signature and documentation."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        result = self._loop.run(method(self._aio, *args, **kwargs))
        return result if wrap is None else wrap(self._loop, result)
    return call


class Watcher:
    """A key-value or object store watch, blocking: iterate over it for the updates (None
    once those there at the start have come, as nats-py's watchers give them); the
    iteration ends when the watch is stopped, or when no update came in `timeout` seconds
    (None: it waits as long as it takes).  ``updates(timeout)`` is the next update or
    errors.TimeoutError.  A ``with`` block stops it on the way out."""

    def __init__(self, loop: LoopThread, watcher, timeout: float | None = None):
        self._loop = loop
        self._aio = watcher
        self.timeout = timeout

        self.stopped = False

    def updates(self, timeout: float = 5.0):
        """The next update; errors.TimeoutError when none came in `timeout` seconds."""
        return self._loop.run(self._aio.updates(timeout))

    def stop(self) -> None:
        """Stop the watch (its consumer goes)."""
        if not self.stopped:
            self.stopped = True
            self._loop.run(self._aio.stop())

    async def _next(self):
        try:
            return await asyncio.wait_for(self._aio.__anext__(), self.timeout)
        except (StopAsyncIteration, asyncio.TimeoutError):
            return _END

    def __iter__(self) -> Watcher:
        return self

    def __next__(self):
        update = self._loop.run(self._next())
        if update is _END:
            raise StopIteration
        return update

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
