"""What a KV or object-store watch hands out: the updates a subscription callback puts in
(entries, or object infos), a None once what was there when the watch began has come, and
the end once the watch is stopped -- read one at a time with a timeout (`updates`) or by
``async for``."""

from __future__ import annotations

import asyncio

from jsstore.aio import errors


class Watcher:
    _STOP = object()

    def __init__(self):
        self._updates: asyncio.Queue = asyncio.Queue()
        self._sub = None
        self._init_done = False

    async def stop(self) -> None:
        await self._sub.unsubscribe()
        self._updates.put_nowait(self._STOP)

    async def updates(self, timeout: float = 5.0):
        """The next update; errors.TimeoutError when none came in `timeout` seconds."""
        try:
            return await asyncio.wait_for(self._updates.get(), timeout)
        except asyncio.TimeoutError:
            raise errors.TimeoutError() from None

    def __aiter__(self) -> Watcher:
        return self

    async def __anext__(self):
        update = await self._updates.get()
        if update is self._STOP:
            raise StopAsyncIteration
        return update

    def _put(self, update) -> None:
        self._updates.put_nowait(update)

    def _caught_up(self, announce: bool = True) -> None:
        """What was there at the start has come: a None says so (unless `announce` is
        off: a watch of updates only), once."""
        if not self._init_done:
            self._init_done = True
            if announce:
                self._updates.put_nowait(None)
