"""The private event-loop thread of the synchronous buckets: a thread running an asyncio
loop that the blocking calls hand their coroutines to and wait on."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine

from jsstore.aio import errors


class LoopThread:
    """An event loop on a thread of its own; ``run(coro)`` runs a coroutine there and
    blocks until it is done.  ``close()`` stops the loop and joins the thread."""

    def __init__(self, name: str = "jsstore-buckets"):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.closed = False
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
            tasks = asyncio.all_tasks(self._loop)
            for task in tasks:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
        finally:
            self._loop.close()

    def run(self, coro: Coroutine, timeout: float | None = None) -> Any:
        """What `coro` returns (or raises), run on the loop; errors.ConnectionClosedError
        once closed.  Not from the loop's own thread (it would wait on itself)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a blocking bucket call from the buckets' own event loop")
        if self.closed:
            coro.close()
            raise errors.ConnectionClosedError()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def close(self) -> None:
        """Stop the loop (what still runs on it is cancelled) and join its thread."""
        if self.closed:
            return
        self.closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
