"""Pull subscriptions with nats-py's face: ``await sub.fetch(batch, timeout)``.

A fetch sends the pull requests a nats-py client sends (``$JS.API.CONSUMER.MSG.NEXT``,
the answers going to the subscription's inbox) and waits on the inbox: the consumer
delivers on the JetStream's bus when messages are there or arrive, and its status
messages (404 no messages, 408 request expired, 409 ...) end a wait, as over NATS.
Nothing polls.  A fetch that got nothing raises ``errors.TimeoutError`` (an
``asyncio.TimeoutError``), as nats-py does.
"""

from __future__ import annotations

import json
import time

from jsstore.aio import errors
from jsstore.aio.inbox import Inbox
from jsstore.aio.msg import Msg
from jsstore.wire.headers import HeaderBlock, parse

_TEMPORARY = ("404", "408", "409")      # no messages, request expired, conflict
_HEARTBEAT = "100"


def status_of(msg) -> HeaderBlock | None:
    """The status line of a status message (no payload, a status in its header block)."""
    if msg.data or not msg.hdr:
        return None
    block = parse(msg.hdr)
    return block if block.status else None


class PullSubscription:
    """A pull consumer bound to an inbox."""

    def __init__(self, ctx, stream: str, consumer: str, inbox: Inbox):
        self._ctx = ctx
        self._stream = stream
        self._consumer = consumer
        self._inbox = inbox
        self._next = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"

    @property
    def pending_msgs(self) -> int:
        """Messages delivered to the inbox and not fetched yet."""
        return self._inbox.queue.qsize()

    @property
    def delivered(self) -> int:
        return self._inbox.received

    async def consumer_info(self):
        return await self._ctx.consumer_info(self._stream, self._consumer)

    async def unsubscribe(self) -> None:
        """Stop receiving on the inbox (the consumer stays)."""
        if not self._inbox.active:
            raise ValueError("nats: invalid subscription")
        await self._ctx._worker.run(self._inbox.unsubscribe)

    def _msg(self, raw) -> Msg:
        return Msg(raw.subject, raw.data, raw.hdr, raw.reply, self._ctx)

    async def _pull(self, request: dict) -> None:
        await self._ctx.send(self._next, json.dumps(request).encode(), self._inbox.subject)

    async def fetch(self, batch: int = 1, timeout: float | None = 5,
                    heartbeat: float | None = None) -> list[Msg]:
        """Up to `batch` messages; errors.TimeoutError when none came in `timeout` seconds."""
        if not self._inbox.active:
            raise ValueError("nats: invalid subscription")
        if batch < 1:
            raise ValueError("nats: invalid batch size")
        if timeout is not None and timeout <= 0:
            raise ValueError("nats: invalid fetch timeout")
        start = time.monotonic()
        expires = int(timeout * 1_000_000_000) - 100_000 if timeout else None

        def left() -> float | None:
            return None if timeout is None else timeout - (time.monotonic() - start)

        got: list[Msg] = []
        while len(got) < batch:             # what earlier fetches left in the inbox
            raw = self._inbox.get_nowait()
            if raw is None:
                break
            if status_of(raw) is None:
                got.append(self._msg(raw))
        if len(got) == batch:
            return got
        request: dict = {"batch": batch - len(got)}
        if heartbeat:
            request["idle_heartbeat"] = int(heartbeat * 1_000_000_000)
        if batch == 1:
            if expires:
                request["expires"] = expires
            await self._pull(request)
            return [await self._first(left)]
        # first a no_wait request for what is there now, then a waiting one for the rest
        if expires and not got:
            request["expires"] = expires
        request["no_wait"] = True
        await self._pull(request)
        ended = await self._collect(got, batch, left, first_wait=timeout)
        if got:
            return got
        remaining = left()
        if remaining is not None and remaining <= 0:
            raise errors.TimeoutError()
        request = {"batch": batch}
        if remaining is not None:
            request["expires"] = int(remaining * 1_000_000_000) - 100_000
            if request["expires"] <= 0:
                raise errors.TimeoutError()
        if heartbeat:
            request["idle_heartbeat"] = int(heartbeat * 1_000_000_000)
        await self._pull(request)
        got.append(await self._first(left, heartbeats_seen=ended))
        await self._collect(got, batch, left)
        return got

    async def _first(self, left, heartbeats_seen: bool = False) -> Msg:
        """The first message of a request; a temporary status or no answer in time is a
        timeout (FetchTimeoutError after a heartbeat), another status its APIError."""
        while True:
            try:
                raw = await self._inbox.get(left())
            except errors.TimeoutError:
                if heartbeats_seen:
                    raise errors.FetchTimeoutError() from None
                raise
            block = status_of(raw)
            if block is None:
                return self._msg(raw)
            if block.status == _HEARTBEAT:
                heartbeats_seen = True
                continue
            if block.status in _TEMPORARY:
                raise errors.TimeoutError()
            raise errors.APIError.from_status(block.status, block.description)

    async def _collect(self, got: list[Msg], batch: int, left,
                       first_wait: float | None = None) -> bool:
        """More messages of a request until `batch`, its end (a status) or the deadline;
        returns whether a heartbeat came."""
        heartbeats = False
        wait = first_wait
        while len(got) < batch:
            try:
                raw = await self._inbox.get(left() if wait is None else wait)
            except errors.TimeoutError:
                break
            wait = None
            block = status_of(raw)
            if block is None:
                got.append(self._msg(raw))
                continue
            if block.status == _HEARTBEAT:
                heartbeats = True
                continue
            if block.status in _TEMPORARY or got:
                break
            raise errors.APIError.from_status(block.status, block.description)
        return heartbeats
