"""Push subscriptions with nats-py's face: a callback awaited per message, or ``await
sub.next_msg(timeout)``; queue groups (``jsstore.aio.queuegroup``); ordered consumers.

The consumer delivers to the subscription's deliver subject on the JetStream's bus; the
inbox hands each message to the event loop, where control messages are answered (flow
control) or checked (idle heartbeats) and the rest queued.  An ordered consumer checks
every delivery sequence as nats-py does and, should one be skipped, starts over on a new
consumer from the stream sequence after the last one it got, so no message is missed.
"""

from __future__ import annotations

import asyncio
import logging

from jsstore.aio import api, errors
from jsstore.aio.inbox import Inbox, new_inbox
from jsstore.aio.msg import Metadata, Msg
from jsstore.aio.pull import status_of
from jsstore.aio.queuegroup import QueueGroup

log = logging.getLogger(__name__)

LAST_CONSUMER = "Nats-Last-Consumer"
CONSUMER_STALLED = "Nats-Consumer-Stalled"


class PushSubscription:
    """A push consumer's deliveries."""

    def __init__(self, ctx, stream: str, consumer: str, config: api.ConsumerConfig,
                 cb=None, manual_ack: bool = False, ordered: bool = False,
                 group: QueueGroup | None = None):
        self._ctx = ctx
        self._stream = stream
        self._consumer = consumer
        self._config = config
        self._cb = cb
        # a callback's messages are acked after it returns, as nats-py does
        self._auto_ack = cb is not None and not manual_ack and config.ack_policy not in (
            api.AckPolicy.NONE, api.AckPolicy.FLOW_CONTROL)
        self._ordered = ordered
        self._group = group         # the queue group it is a member of
        self._inbox = self._new_inbox(config.deliver_subject, asyncio.get_running_loop())
        self._task: asyncio.Task | None = None
        self._dseq = 1              # the delivery sequence expected next
        self._sseq = 0              # the stream sequence of the last delivery taken
        self._tracking = False      # whether a delivery came yet
        self._background: set[asyncio.Task] = set()
        self._closed = False
        self.errors: list[Exception] = []   # sequence mismatches of a non-ordered one

    async def start(self) -> None:
        """Subscribe the deliver subject (the consumer starts delivering)."""
        if self._group is not None:
            await self._group.join(self, self._ctx._worker, self._ctx._js.bus)
        else:
            await self._ctx._worker.run(self._inbox.subscribe, self._ctx._js.bus)
        if self._cb is not None:
            self._task = asyncio.create_task(self._dispatch())

    @property
    def delivered(self) -> int:
        return self._inbox.received

    @property
    def pending_msgs(self) -> int:
        return self._inbox.queue.qsize()

    async def consumer_info(self) -> api.ConsumerInfo:
        return await self._ctx.consumer_info(self._stream, self._consumer)

    # -- arrivals (in the loop) -----------------------------------------------------------
    def _later(self, coro) -> None:
        """Run `coro` in the background (flow control answers, restarts); a failure is
        logged, and nothing once the context is closed."""
        async def guarded():
            try:
                await coro
            except errors.ConnectionClosedError:
                pass
            except Exception:
                log.exception("push subscription on %r", self._config.deliver_subject)
        task = asyncio.create_task(guarded())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        # cancelled before it ran (unsubscribe right after a flow control message): the
        # coroutine is closed, not left to warn that it was never awaited
        task.add_done_callback(lambda _: coro.close())

    def _new_inbox(self, subject: str, loop) -> Inbox:
        inbox = Inbox(subject, loop)
        inbox.on_msg = lambda raw: self._arrived(inbox, raw)
        return inbox

    def take(self, raw) -> None:
        """A message its queue group hands it (in the loop)."""
        self._arrived(self._inbox, raw)

    def _arrived(self, inbox: Inbox, raw) -> None:
        if inbox is not self._inbox:        # to the deliver subject before a restart
            return
        block = status_of(raw)
        if block is not None and block.status == "100":
            if raw.reply:                                   # flow control: answer it
                self._later(self._ctx.send(raw.reply, b""))
                return
            stalled = block.get(CONSUMER_STALLED)
            if stalled:
                self._later(self._ctx.send(stalled, b""))
            self._check_heartbeat(block)
            return
        if raw.reply:
            meta = Metadata.from_reply(raw.reply)
            if self._ordered and meta.sequence.consumer != self._dseq:
                self._restart()
                return
            self._tracking = True
            self._dseq = meta.sequence.consumer + 1
            self._sseq = meta.sequence.stream
        self._inbox.put(raw)

    def _check_heartbeat(self, block) -> None:
        last = block.get(LAST_CONSUMER)
        if last is None or not self._tracking or int(last) == self._dseq - 1:
            return
        if self._ordered:
            self._restart()
        else:
            self.errors.append(errors.ConsumerSequenceMismatchError(
                stream_resume_sequence=self._sseq + 1, consumer_sequence=self._dseq - 1,
                last_consumer_sequence=int(last)))

    def _restart(self) -> None:
        """Start the ordered consumer over after the last stream sequence taken: from now
        on only a new deliver subject counts; the new consumer is made in the background."""
        if self._closed:
            return
        old_inbox, old_consumer = self._inbox, self._consumer
        self._config = self._config.evolve(
            deliver_subject=new_inbox(), deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=self._sseq + 1)
        self._dseq, self._tracking = 1, False
        self._inbox = self._new_inbox(self._config.deliver_subject, old_inbox.loop)
        self._inbox.queue, self._inbox.received = old_inbox.queue, old_inbox.received
        self._later(self._recreate(old_inbox, old_consumer, self._inbox, self._config))

    async def _recreate(self, old_inbox: Inbox, old_consumer: str, inbox: Inbox,
                        config: api.ConsumerConfig) -> None:
        worker = self._ctx._worker
        await worker.run(old_inbox.unsubscribe)
        try:
            await self._ctx.delete_consumer(self._stream, old_consumer)
        except errors.NotFoundError:
            pass
        info = await self._ctx.add_consumer(self._stream, config=config)
        if inbox is self._inbox:
            self._consumer = info.name
            await worker.run(inbox.subscribe, self._ctx._js.bus)

    # -- taking messages ------------------------------------------------------------------
    def _msg(self, raw) -> Msg:
        return Msg(raw.subject, raw.data, raw.hdr, raw.reply, self._ctx)

    async def next_msg(self, timeout: float | None = 1.0) -> Msg:
        """The next message; errors.TimeoutError when none came within `timeout`."""
        if self._cb is not None:
            raise errors.NatsError("nats: next_msg cannot be used in async subscriptions")
        if self._closed and self._inbox.queue.empty():
            raise errors.BadSubscriptionError()
        return self._msg(await self._inbox.get(timeout))

    async def _dispatch(self) -> None:
        while True:
            raw = await self._inbox.queue.get()
            msg = self._msg(raw)
            try:
                await self._cb(msg)
                if self._auto_ack and not msg.is_acked:
                    await msg.ack()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("subscription callback failed on %r", msg.subject)

    async def unsubscribe(self, limit: int = 0) -> None:
        """Stop receiving; the consumer stays (an ephemeral one goes away by itself)."""
        self._closed = True
        tasks = list(self._background)
        if self._task is not None:
            tasks.append(self._task)
            self._task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._group is None:
            await self._ctx._worker.run(self._inbox.unsubscribe)
        elif await self._group.leave(self, self._ctx._worker):
            self._ctx._queue_groups.pop(self._group.key, None)
