"""jsstore for asyncio: an in-process JetStream with nats-py's ``JetStreamContext`` face.

    import jsstore

    async with jsstore.aio.open("data") as js:      # jsstore.aio.open(): in memory
        await js.add_stream(name="ORDERS", subjects=["orders.>"])
        ack = await js.publish("orders.new", b"hello", headers={"Nats-Msg-Id": "o-1"})
        sub = await js.pull_subscribe("orders.>", "DISPATCH")
        for msg in await sub.fetch(10, timeout=1):
            await msg.ack()

The methods, arguments, answers (``jsstore.aio.api``) and exceptions
(``jsstore.aio.errors``) are nats-py's; nats-py itself is not needed.  Store work runs
on a worker thread, so the event loop never waits on the disk.
"""

from __future__ import annotations

import os

from jsstore.aio import api, errors
from jsstore.aio.context import JetStreamContext
from jsstore.aio.manager import JetStreamManager
from jsstore.aio.msg import Metadata, Msg
from jsstore.aio.opening import Opening
from jsstore.aio.pull import PullSubscription
from jsstore.aio.push import PushSubscription
from jsstore.store.config import StoreOptions


def open(directory: str | os.PathLike | None = None, options: StoreOptions | None = None,
         **kwargs) -> Opening:
    """The JetStream of a store directory (None: in memory), for ``async with`` or
    ``await``; the keyword arguments are ``jsstore.open``'s."""
    return Opening(directory, options, kwargs)


__all__ = ["open", "api", "errors", "JetStreamContext", "JetStreamManager", "Msg",
           "Metadata", "PullSubscription", "PushSubscription", "Opening"]
