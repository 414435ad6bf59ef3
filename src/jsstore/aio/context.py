"""The asyncio JetStream context: nats-py's ``JetStreamContext`` over an in-process
JetStream — publish, pull and push subscriptions — on top of the management API
(``jsstore.aio.manager``).

    async with jsstore.aio.open("data") as js:
        await js.add_stream(name="ORDERS", subjects=["orders.>"])
        ack = await js.publish("orders.new", b"payload")
        sub = await js.pull_subscribe("orders.>", "DISPATCH")
        for msg in await sub.fetch(10, timeout=1):
            await msg.ack()

Store work runs on the context's worker thread; waiting for messages is waiting on
futures the consumers' deliveries resolve.  Leaving the ``async with`` (or ``await
js.close()``) closes the JetStream and its store.
"""

from __future__ import annotations

import asyncio
import json
import secrets

from jsstore.aio import api, errors
from jsstore.aio.inbox import Inbox, new_inbox
from jsstore.aio.manager import JetStreamManager
from jsstore.aio.pull import PullSubscription
from jsstore.aio.push import PushSubscription
from jsstore.aio.worker import Worker
from jsstore.jetstream.account import JetStream
from jsstore.wire.bus import Msg as BusMsg

EXPECTED_STREAM = "Nats-Expected-Stream"
MSG_TTL = "Nats-TTL"


class JetStreamContext(JetStreamManager):
    """Publish and consume, and manage streams and consumers, in process."""

    def __init__(self, js: JetStream, *, owns: bool = True, worker: Worker | None = None):
        super().__init__(js, worker or Worker())
        self._owns = owns           # close() closes the JetStream too
        self._subs: list = []
        self.closed = False

    @property
    def jetstream(self) -> JetStream:
        """The synchronous JetStream underneath."""
        return self._js

    # -- what messages and subscriptions send in ------------------------------------------
    async def send(self, subject: str, payload: bytes = b"", reply: str | None = None) -> None:
        """Hand a message to the JetStream (an ack, a pull request, a flow control
        answer), as a client publishes one."""
        await self._worker.run(self._js.handle, BusMsg(subject, payload, None, reply))

    async def request(self, subject: str, payload: bytes = b"") -> list[BusMsg]:
        """Every answer to a message handed to the JetStream."""
        return await self._request(subject, payload)

    # -- publish --------------------------------------------------------------------------
    async def publish(self, subject: str, payload: bytes = b"", timeout: float | None = None,
                      stream: str | None = None, headers: dict | None = None,
                      msg_ttl: float | None = None) -> api.PubAck:
        """Store a message; its PubAck.  `headers` may carry Nats-Msg-Id (deduplication)
        and the Nats-Expected-* checks; `stream` requires that stream to capture it;
        errors.NoStreamResponseError when no stream does."""
        hdr = dict(headers) if headers else None
        if stream is not None:
            hdr = hdr or {}
            hdr[EXPECTED_STREAM] = stream
        if msg_ttl is not None:
            hdr = hdr or {}
            hdr[MSG_TTL] = str(int(msg_ttl))
        answers = await self._request(subject, payload, hdr)
        if not answers:
            raise errors.NoStreamResponseError()
        resp = json.loads(answers[0].data)
        if "error" in resp:
            raise errors.APIError.from_error(resp["error"])
        return api.PubAck.from_response(resp)

    # -- pull -----------------------------------------------------------------------------
    async def pull_subscribe(self, subject: str, durable: str | None = None,
                             stream: str | None = None,
                             config: api.ConsumerConfig | None = None,
                             **_limits) -> PullSubscription:
        """A pull subscription: binds to `durable` when it exists, else creates the
        consumer (durable, or ephemeral without a name) filtered on `subject`."""
        if stream is None:
            stream = await self.find_stream_name_by_subject(subject)
        create = True
        if durable:
            try:
                await self.consumer_info(stream, durable)
                create = False
            except errors.NotFoundError:
                pass
        name = durable
        if create:
            config = api.ConsumerConfig() if config is None else config.evolve()
            if not config.filter_subjects:
                config.filter_subject = subject
            if durable:
                config.name = config.durable_name = durable
            else:
                name = config.name = secrets.token_hex(11)   # as long as a NUID
            await self.add_consumer(stream, config=config)
        return await self.pull_subscribe_bind(durable=durable, stream=stream, name=name)

    async def pull_subscribe_bind(self, durable: str | None = None, stream: str | None = None,
                                  inbox_prefix: str | None = None, name: str | None = None,
                                  **_limits) -> PullSubscription:
        """A pull subscription to an existing consumer."""
        consumer = name or durable
        if not stream:
            raise ValueError("nats: stream name is required")
        if not consumer:
            raise ValueError("nats: consumer name is required")
        inbox = Inbox(new_inbox(), asyncio.get_running_loop())
        await self._worker.run(inbox.subscribe, self._js.bus)
        sub = PullSubscription(self, stream, consumer, inbox)
        self._subs.append(inbox)
        return sub

    # -- push -----------------------------------------------------------------------------
    async def subscribe(self, subject: str, queue: str | None = None, cb=None,
                        durable: str | None = None, stream: str | None = None,
                        config: api.ConsumerConfig | None = None, manual_ack: bool = False,
                        ordered_consumer: bool = False, idle_heartbeat: float | None = None,
                        flow_control: bool = False, deliver_policy=None,
                        headers_only: bool | None = None,
                        inactive_threshold: float | None = None,
                        **_limits) -> PushSubscription:
        """A push subscription: `cb` is awaited with every message (acked after it
        returns unless `manual_ack`), else ``await sub.next_msg()``.  Binds to `durable`
        when it exists, else creates a consumer delivering to a new inbox;
        `ordered_consumer` makes it nats-py's ordered consumer."""
        if stream is None:
            stream = await self.find_stream_name_by_subject(subject)
        if queue:
            if durable and durable != queue:
                raise errors.Error(f"cannot create queue subscription '{queue}' to "
                                   f"consumer '{durable}'")
            durable = queue
        info = None
        if durable:
            try:
                info = await self.consumer_info(stream, durable)
            except errors.NotFoundError:
                pass
        if info is not None:
            config = info.config
            group = config.deliver_group
            if not group:
                if queue:
                    raise errors.Error("cannot create a queue subscription for a consumer "
                                       "without a deliver group")
                if info.push_bound:
                    raise errors.Error("consumer is already bound to a subscription")
            elif queue != group:
                raise errors.Error(f"cannot create a subscription for a consumer with a "
                                   f"deliver group {group}")
            consumer = durable
        else:
            config = api.ConsumerConfig() if config is None else config.evolve()
            config.durable_name = config.durable_name or durable
            config.deliver_group = config.deliver_group or queue
            config.headers_only = config.headers_only or headers_only
            if deliver_policy:
                config.deliver_policy = deliver_policy
            if inactive_threshold:
                config.inactive_threshold = inactive_threshold
            if config.deliver_subject is None:
                config.deliver_subject = new_inbox()
            if not config.filter_subjects:
                config.filter_subject = subject
            config.flow_control = flow_control
            if idle_heartbeat:
                config.idle_heartbeat = idle_heartbeat
            else:
                idle_heartbeat = config.idle_heartbeat or 5
            if ordered_consumer:
                config.flow_control = True
                config.ack_policy = api.AckPolicy.NONE
                config.max_deliver = 1
                config.ack_wait = 22 * 3600
                config.idle_heartbeat = idle_heartbeat
                config.num_replicas = 1
                config.mem_storage = True
            consumer = (await self.add_consumer(stream, config=config)).name
        sub = PushSubscription(self, stream, consumer, config, cb, manual_ack=manual_ack,
                               ordered=ordered_consumer)
        await sub.start()
        self._subs.append(sub)
        return sub

    # -- lifecycle ------------------------------------------------------------------------
    async def close(self) -> None:
        """Stop the subscriptions and close the JetStream (its store is written and
        released: the directory may be opened again)."""
        if self.closed:
            return
        self.closed = True
        for sub in self._subs:
            if isinstance(sub, PushSubscription):
                await sub.unsubscribe()
            else:
                await self._worker.run(sub.unsubscribe)
        if self._owns:
            await self._worker.run(self._js.close)
        self._worker.shutdown()

    async def __aenter__(self) -> JetStreamContext:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
