"""The asyncio JetStream context: nats-py's ``JetStreamContext`` over an in-process
JetStream — pull and push subscriptions — on top of publishing (``jsstore.aio.publisher``)
and the management API (``jsstore.aio.manager``).

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
import secrets

from jsstore.aio import api, errors, kv, objectstore
from jsstore.aio.inbox import Inbox, new_inbox
from jsstore.aio.kv import KeyValue
from jsstore.aio.objectstore import ObjectStore
from jsstore.aio.publisher import DEFAULT_MAX_PENDING, Publisher
from jsstore.aio.pull import PullSubscription
from jsstore.aio.push import PushSubscription
from jsstore.aio.queuegroup import QueueGroup
from jsstore.aio.worker import Worker
from jsstore.jetstream.account import JetStream
from jsstore.wire.bus import Msg as BusMsg


class JetStreamContext(Publisher):
    """Publish and consume, and manage streams and consumers, in process."""

    def __init__(self, js: JetStream, *, owns: bool = True, worker: Worker | None = None,
                 publish_async_max_pending: int = DEFAULT_MAX_PENDING):
        super().__init__(js, worker or Worker(), publish_async_max_pending)
        self._owns = owns           # close() closes the JetStream too
        self._subs: list = []
        self._queue_groups: dict[tuple[str, str], QueueGroup] = {}
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
            if ordered_consumer and queue:
                raise errors.Error("an ordered consumer can not be a queue subscription")
            consumer = (await self.add_consumer(stream, config=config)).name
        return await self.subscribe_bind(stream, config, consumer, cb=cb,
                                         manual_ack=manual_ack,
                                         ordered_consumer=ordered_consumer)

    async def subscribe_bind(self, stream: str, config: api.ConsumerConfig, consumer: str,
                             cb=None, manual_ack: bool = False,
                             ordered_consumer: bool = False, **_limits) -> PushSubscription:
        """A push subscription to an existing consumer delivering to
        ``config.deliver_subject`` (in its ``deliver_group`` when it has one)."""
        if config.deliver_subject is None:
            raise TypeError("config.deliver_subject is required")
        group = None
        if config.deliver_group:
            key = (config.deliver_subject, config.deliver_group)
            group = self._queue_groups.get(key)
            if group is None:
                group = self._queue_groups[key] = QueueGroup(*key, asyncio.get_running_loop())
        sub = PushSubscription(self, stream, consumer, config, cb, manual_ack=manual_ack,
                               ordered=ordered_consumer, group=group)
        await sub.start()
        self._subs.append(sub)
        return sub

    # -- key-value buckets -----------------------------------------------------------------
    async def create_key_value(self, config: api.KeyValueConfig | None = None,
                               **params) -> KeyValue:
        """Create a key-value bucket (its stream ``KV_<bucket>``)."""
        return await kv.create_key_value(self, config, **params)

    async def key_value(self, bucket: str) -> KeyValue:
        """A key-value bucket; errors.BucketNotFoundError when there is none."""
        return await kv.key_value(self, bucket)

    async def delete_key_value(self, bucket: str) -> bool:
        return await kv.delete_key_value(self, bucket)

    # -- object stores ---------------------------------------------------------------------
    async def create_object_store(self, bucket: str | None = None,
                                  config: api.ObjectStoreConfig | None = None,
                                  **params) -> ObjectStore:
        """Create an object store (its stream ``OBJ_<bucket>``)."""
        return await objectstore.create_object_store(self, bucket, config, **params)

    async def object_store(self, bucket: str) -> ObjectStore:
        """An object store; errors.BucketNotFoundError when there is none."""
        return await objectstore.object_store(self, bucket)

    async def delete_object_store(self, bucket: str) -> bool:
        return await objectstore.delete_object_store(self, bucket)

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
        await self._worker.aclose()

    def close_blocking(self) -> None:
        """close() for when no event loop runs any more (a test fixture's teardown): the
        worker finishes what it was given, then the JetStream is closed, its consumers and
        the subscriptions' bindings with it."""
        if self.closed:
            return
        self.closed = True
        self._worker.shutdown()
        if self._owns:
            self._js.close()

    async def __aenter__(self) -> JetStreamContext:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
