"""Opening a JetStream for asyncio: ``jsstore.aio.open(directory)`` gives something to
``async with`` (the context closes the store on the way out) or to ``await``.  The store
is opened (its streams recovered from disk) on the context's worker thread."""

from __future__ import annotations

from jsstore.aio.context import JetStreamContext
from jsstore.aio.worker import Worker
from jsstore.jetstream.account import JetStream


class Opening:
    """A JetStreamContext on its way: ``async with`` it, or ``await`` it."""

    def __init__(self, directory, options, kwargs: dict):
        self._args = (directory, options)
        self._kwargs = kwargs
        self._ctx: JetStreamContext | None = None

    async def _open(self) -> JetStreamContext:
        worker = Worker()
        try:
            js = await worker.run(JetStream, *self._args, **self._kwargs)
        except BaseException:
            worker.shutdown()
            raise
        return JetStreamContext(js, worker=worker)

    def __await__(self):
        return self._open().__await__()

    async def __aenter__(self) -> JetStreamContext:
        self._ctx = await self._open()
        return self._ctx

    async def __aexit__(self, *exc) -> None:
        await self._ctx.close()
