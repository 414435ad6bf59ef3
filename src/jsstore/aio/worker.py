"""The thread a ``jsstore.aio`` JetStream's store work runs on, off the event loop.

Everything that may wait on the disk or on the JetStream's lock (publishes, API requests,
acks, bus subscriptions, which start push deliveries) goes through ``await
worker.run(fn, ...)``: one dedicated thread per JetStream, since the synchronous API runs
under one lock anyway.  The event loop keeps running while it works.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from jsstore.aio import errors


class Worker:
    """One thread that runs a JetStream's blocking calls, in the order they are given."""

    def __init__(self, name: str = "jsstore-aio"):
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.closed = False

    def submit(self, fn: Callable[..., Any], *args, **kwargs) -> asyncio.Future:
        """Queue `fn(*args, **kwargs)` for the worker thread now; the future of its
        result (or exception); errors.ConnectionClosedError once shut down."""
        if self.closed:
            raise errors.ConnectionClosedError()
        loop = asyncio.get_running_loop()
        return loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def run(self, fn: Callable[..., Any], *args, **kwargs) -> Any:
        """`fn(*args, **kwargs)` on the worker thread; its result (or exception)."""
        return await self.submit(fn, *args, **kwargs)

    def shutdown(self) -> None:
        """Wait for what was given and stop the thread (blocking: for when nothing is
        queued)."""
        self.closed = True
        self._executor.shutdown(wait=True)

    async def aclose(self) -> None:
        """Take no more work, wait (on the loop) for what was given, stop the thread."""
        self.closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, _nothing)   # runs after all given before
        self._executor.shutdown(wait=False)


def _nothing() -> None:
    pass
