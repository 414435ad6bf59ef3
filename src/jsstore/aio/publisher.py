"""Publishing with nats-py's face: ``publish`` (wait for the PubAck) and ``publish_async``
(a future of it, at most ``publish_async_max_pending`` outstanding).

A publish is the message a NATS client sends to the subject, answered by the JetStream's
wire API on the worker thread: nats-server's checks, its PubAck JSON or error.  The
worker takes publishes in the order they were made.
"""

from __future__ import annotations

import asyncio
import json

from jsstore.aio import api, errors
from jsstore.aio.manager import JetStreamManager

EXPECTED_STREAM = "Nats-Expected-Stream"
MSG_TTL = "Nats-TTL"
DEFAULT_MAX_PENDING = 4000      # nats-py's publish_async_max_pending


def _headers(headers: dict | None, stream: str | None, msg_ttl: float | None) -> dict | None:
    hdr = dict(headers) if headers else None
    if stream is not None:
        hdr = hdr or {}
        hdr[EXPECTED_STREAM] = stream
    if msg_ttl is not None:
        hdr = hdr or {}
        hdr[MSG_TTL] = str(int(msg_ttl))
    return hdr


def _pub_ack(answers: list) -> api.PubAck:
    """The PubAck of a publish's answers, or the error it is."""
    if not answers:
        raise errors.NoStreamResponseError()
    resp = json.loads(answers[0].data)
    if "error" in resp:
        raise errors.APIError.from_error(resp["error"])
    return api.PubAck.from_response(resp)


class Publisher(JetStreamManager):
    """publish and publish_async over the management API's plumbing."""

    def __init__(self, js, worker, publish_async_max_pending: int = DEFAULT_MAX_PENDING):
        super().__init__(js, worker)
        self._async_pending: set[asyncio.Future] = set()
        self._async_done = asyncio.Event()
        self._async_done.set()
        self._async_slots = asyncio.Semaphore(publish_async_max_pending)

    async def publish(self, subject: str, payload: bytes = b"", timeout: float | None = None,
                      stream: str | None = None, headers: dict | None = None,
                      msg_ttl: float | None = None) -> api.PubAck:
        """Store a message; its PubAck.  `headers` may carry Nats-Msg-Id (deduplication)
        and the Nats-Expected-* checks; `stream` requires that stream to capture it;
        errors.NoStreamResponseError when no stream does."""
        return _pub_ack(await self._request(subject, payload, _headers(headers, stream,
                                                                       msg_ttl)))

    async def publish_async(self, subject: str, payload: bytes = b"",
                            wait_stall: float | None = None, stream: str | None = None,
                            headers: dict | None = None,
                            msg_ttl: float | None = None) -> asyncio.Future:
        """Queue a publish; a future of its PubAck (or error).  Waits for a free slot
        when publish_async_max_pending are outstanding: errors.TooManyStalledMsgsError
        after `wait_stall` seconds."""
        try:
            await asyncio.wait_for(self._async_slots.acquire(), timeout=wait_stall)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            raise errors.TooManyStalledMsgsError() from None
        loop = asyncio.get_running_loop()
        result = loop.create_future()
        try:
            answered = self._worker.submit(self._js.request_msgs, subject, payload,
                                           _headers(headers, stream, msg_ttl))
        except BaseException:
            self._async_slots.release()
            raise
        self._async_pending.add(result)
        self._async_done.clear()

        def settle(done: asyncio.Future) -> None:
            self._async_pending.discard(result)
            self._async_slots.release()
            if not self._async_pending:
                self._async_done.set()
            if result.cancelled():
                return
            try:
                result.set_result(_pub_ack(done.result()))
            except Exception as exc:  # noqa: BLE001 - the caller's future carries it
                result.set_exception(exc)
        answered.add_done_callback(settle)
        return result

    def publish_async_pending(self) -> int:
        """How many publish_async calls wait for their PubAck."""
        return len(self._async_pending)

    async def publish_async_completed(self) -> None:
        """Wait until every publish_async has its PubAck."""
        await self._async_done.wait()
