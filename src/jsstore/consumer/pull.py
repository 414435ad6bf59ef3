"""Pull requests: the wait queue, the pinned client, and every status reply.

``PullRequests`` is owned by pull consumers only (a push consumer has none).  nats-server's
``processNextMsgRequest``, ``nextWaiting`` and ``processWaiting``, synchronously: a request
is checked, queued, and served at once by the consumer's ``gather`` with what the stream
has; what it still wants is served as messages arrive, and ``tick`` expires it (``408
Request Timeout``), sends its idle heartbeats, and drops it when nobody listens on its
reply subject any more.

The request body and the status header blocks are ``jsstore.consumer.pullrequests``'.
"""

from __future__ import annotations

from jsstore.consumer import events as consumerevents
from jsstore.consumer import pullrequests
from jsstore.consumer.waitqueue import WaitingRequest, WaitQueue
from jsstore.gocompat.durations import SECOND
from jsstore.stream import advisories


class PullRequests:
    """The pull side of one consumer: the requests it holds and the pin."""

    def __init__(self, consumer):
        self.consumer = consumer        # jsstore.consumer.consumer.Consumer
        config = consumer.config
        self.waiting = WaitQueue(config.max_waiting or 0,
                                 config.priority_policy == "prioritized")
        self.waiting.last = consumer.clock()
        self.waiting_checked_at = 0     # lwqic: last time the whole queue was checked
        self.pin_id = ""                # pinned_client: the current pin
        self.pinned_at = 0              # pinnedTS: when it was assigned
        self.pin_due = 0                # when the pin expires
        self.pin_group = ""             # the group of the request the pin went to

    def reconfigure(self) -> None:
        self.waiting.max = self.consumer.config.max_waiting or 0

    def touch(self, now: int) -> None:
        """Something happened that keeps the consumer alive (a delivery, an ack)."""
        self.waiting.last = now

    # -- requests -------------------------------------------------------------------------
    def request(self, reply: str, payload: bytes, sink=None) -> WaitingRequest | None:
        """A pull request (processNextMsgRequest): answered with a status, or queued and
        served. Returns the queued request (None when it was answered or refused)."""
        consumer = self.consumer
        config = consumer.config
        now = consumer.clock()
        try:
            request = pullrequests.parse_request(payload)
        except pullrequests.PullRequestError as exc:
            consumer.status(reply, exc.status, sink)
            return None
        refused = pullrequests.check_request(config, request)
        if refused is not None:
            consumer.status(reply, refused, sink)
            return None
        group = request.group
        if (group is not None and (config.priority_policy or "none") != "none"
                and self.pin_id):
            if request.id == self.pin_id:
                self.pin_due = now + self._pinned_ttl()
                consumer.schedule(self.pin_due)
            elif request.id:
                consumer.status(reply, pullrequests.pin_id_mismatch(), sink)
                return None
        waiting = self.waiting
        if waiting.is_full() and now - self.waiting_checked_at > SECOND:
            self.process_waiting(False, now)
        if request.no_wait:
            msgs_pending = (consumer.num_pending()
                            + len(consumer.acknowledgements.redelivery_queue))
            if msgs_pending == 0 and not request.expires:
                waiting.last = now
                consumer.status(reply, pullrequests.no_messages(), sink)
                return None
            if msgs_pending > 0:
                batch_pending = self.process_waiting(False, now)[2]
                if msgs_pending < batch_pending:
                    waiting.last = now
                    consumer.status(reply, pullrequests.requests_pending(), sink)
                    return None
        wr = WaitingRequest(reply, request.batch, max_bytes=request.max_bytes,
                            expires=now + request.expires if request.expires else 0,
                            received=now, heartbeat=request.idle_heartbeat,
                            no_wait=request.no_wait, group=group,
                            min_pending=request.min_pending,
                            min_ack_pending=request.min_ack_pending, pin_id=request.id or "",
                            priority=request.priority if group is not None else None,
                            sink=sink)
        if not waiting.add(wr):
            if not request.idle_heartbeat:
                consumer.status(reply, pullrequests.exceeded_max_waiting(), sink)
            return None
        consumer.gather()
        due = self.due()
        if due:
            consumer.schedule(due)
        return wr if wr in list(waiting) else None

    def may_precede_acks(self, payload: bytes) -> bool:
        """Whether the pull request `payload` gets the same answer whether or not plain
        acks (of messages this consumer delivered) are applied before it: what it is
        sent is the next messages in stream order, and acks change neither which ones
        (nothing waits for redelivery, no priority groups) nor how many (the request
        fits under max_ack_pending even with every delivered message still pending).
        nats-server applies acks on their own queue, so a request may overtake them
        there at any time; here only when it cannot matter."""
        consumer = self.consumer
        if (not consumer.plain_pull or consumer.closed
                or consumer.acknowledgements.redelivery_queue):
            return False
        try:
            request = pullrequests.parse_request(payload)
        except pullrequests.PullRequestError:
            return False
        if request.group or request.id or request.min_pending or request.min_ack_pending:
            return False
        max_ack_pending = consumer.max_ack_pending
        return (max_ack_pending <= 0
                or consumer.ack_state.num_pending + max(request.batch, 1) <= max_ack_pending)

    def cancel(self, reply: str) -> None:
        """Forget the requests answering to `reply` (their reader has gone)."""
        for wr in self.waiting:
            if wr.reply == reply:
                self.waiting.remove(wr)

    def cancel_request(self, wr: WaitingRequest) -> None:
        self.waiting.remove(wr)

    def _interested(self, wr: WaitingRequest) -> bool:
        return wr.sink is not None or self.consumer.bus.has_interest(wr.reply)

    # -- serving --------------------------------------------------------------------------
    def next_waiting(self, size: int, now: int) -> WaitingRequest | None:
        """nextWaiting: the request the next message (of `size` bytes) goes to, after
        expiring, pinning, cycling and max_bytes checks; None when none can take it."""
        consumer = self.consumer
        waiting = self.waiting
        if consumer.plain_pull and waiting:
            # the usual case: the head request takes it (no pins, priorities or byte limit)
            wr = waiting.peek()
            if ((not wr.expires or now < wr.expires) and not wr.max_bytes
                    and (wr.sink is not None or consumer.bus.has_interest(wr.reply))):
                return waiting.pop()
        status = consumer.status
        policy = consumer.config.priority_policy or "none"
        # decided once: a pin handed to a request that then cannot take the message (it
        # lost its reader, or the message is over its max_bytes) leaves the next request
        # to be pinned anew, as nats-server does
        need_pin = not self.pin_id and policy == "pinned_client"
        cycled = 0
        while waiting:
            wr = waiting.peek()
            if wr.expires and now >= wr.expires:
                status(wr.reply, pullrequests.request_timeout(wr.wanted, wr.max_bytes), wr.sink)
                waiting.remove(wr)
                continue
            assigned_pin = False
            if need_pin:
                if not wr.pin_id:
                    self._assign_pin(wr, now)
                    assigned_pin = True
                else:
                    status(wr.reply, pullrequests.wrong_pin_id(wr.wanted, wr.max_bytes), wr.sink)
                    waiting.remove(wr)
                    continue
            elif self.pin_id:
                if wr.pin_id == self.pin_id:
                    pass
                elif not wr.pin_id:
                    waiting.cycle()
                    cycled += 1
                    if cycled >= len(waiting):
                        return None
                    continue
                else:
                    status(wr.reply, pullrequests.wrong_pin_id(wr.wanted, wr.max_bytes), wr.sink)
                    waiting.remove(wr)
                    continue
            if policy == "overflow" and (wr.min_pending > 0 or wr.min_ack_pending > 0):
                over_pending = (wr.min_pending > 0
                                and wr.min_pending <= consumer.pending_count + 1)
                over_acks = (wr.min_ack_pending > 0
                             and wr.min_ack_pending <= consumer.ack_state.num_pending)
                if not (over_pending or over_acks):
                    waiting.cycle()
                    cycled += 1
                    if cycled >= len(waiting):
                        return None
                    continue
            if wr.max_bytes > 0:
                if size <= wr.max_bytes:
                    wr.max_bytes -= size
                    if wr.max_bytes == 0:
                        wr.wanted = 1
                else:
                    status(wr.reply, pullrequests.message_size_exceeds_max_bytes(
                        wr.wanted, wr.max_bytes), wr.sink)
                    if assigned_pin:
                        self._clear_pin()
                    waiting.remove(wr)
                    continue
            if self._interested(wr):
                return waiting.pop()
            waiting.remove(wr)
        return None

    def process_waiting(self, end_of_stream: bool, now: int) -> tuple[int, int, int, int]:
        """processWaiting: expire requests (and at the end of the stream finish no_wait
        ones), drop those nobody listens to, send due heartbeats. Returns (expired,
        still waiting, messages they still want, next due time or 0)."""
        waiting = self.waiting
        if not waiting:
            return 0, 0, 0, 0
        consumer = self.consumer
        status = consumer.status
        self.waiting_checked_at = now
        expired = wants = next_due = 0
        for wr in waiting:
            timed_out = wr.expires and now >= wr.expires
            if (end_of_stream and wr.no_wait) or timed_out:
                if timed_out:
                    status(wr.reply, pullrequests.request_timeout(wr.wanted, wr.max_bytes), wr.sink)
                    waiting.remove(wr)
                    expired += 1
                    continue
                if not wr.expires or wr.delivered > 0:
                    status(wr.reply, pullrequests.no_messages(), wr.sink)
                    waiting.remove(wr)
                    expired += 1
                    continue
            if not self._interested(wr):
                waiting.remove(wr)
                expired += 1
                continue
            wants += wr.wanted
            if wr.next_heartbeat:
                if now >= wr.next_heartbeat:
                    status(wr.reply, pullrequests.idle_heartbeat(
                        consumer.next_delivery_seq - 1, consumer.next_stream_seq - 1), wr.sink)
                    wr.next_heartbeat = now + wr.heartbeat
                if not next_due or wr.next_heartbeat < next_due:
                    next_due = wr.next_heartbeat
            if wr.expires and (not next_due or wr.expires < next_due):
                next_due = wr.expires
        return expired, len(waiting), wants, next_due

    def tick(self, now: int) -> None:
        """Expire the pin when due, then the requests (processWaiting at the end of what
        the stream has)."""
        if self.pin_due and now >= self.pin_due and self.pin_id:
            self.unpin(self.pin_group, "timeout", now)
        self.process_waiting(True, now)

    def due(self) -> int:
        """The next time a waiting request expires or owes a heartbeat (0: never)."""
        due = 0
        for wr in self.waiting:
            for t in (wr.expires, wr.next_heartbeat):
                if t and (not due or t < due):
                    due = t
        return due

    def release(self) -> None:
        """The consumer is deleted: every waiting request hears 409 Consumer Deleted."""
        for wr in self.waiting.clear():
            self.consumer.status(wr.reply, pullrequests.consumer_deleted(), wr.sink)

    def count(self, now: int) -> int:
        """How many requests wait (after expiring what is due)."""
        self.process_waiting(False, now)
        return len(self.waiting)

    # -- pinned client --------------------------------------------------------------------
    def _pinned_ttl(self) -> int:
        return self.consumer.config.priority_timeout or 0

    def _assign_pin(self, wr: WaitingRequest, now: int) -> None:
        """assignNewPinId: the request's client holds the pin from now on (a request
        without a group, a body that was not JSON, gets none)."""
        if not wr.group:
            return
        consumer = self.consumer
        self.pin_id = advisories.next_id()
        self.pinned_at = now
        self.pin_group = wr.group
        wr.pin_id = self.pin_id
        self.pin_due = now + self._pinned_ttl()
        consumer.schedule(self.pin_due)
        consumer.advise(consumerevents.group_pinned(consumer.stream.name, consumer.name,
                                                    wr.group, self.pin_id, now=now))

    def _clear_pin(self) -> None:
        self.pin_id = ""
        self.pinned_at = 0
        self.pin_due = 0
        self.pin_group = ""

    def unpin(self, group: str, reason: str, now: int) -> None:
        """Release the pin and say so in a ``...CONSUMER.UNPINNED`` advisory naming
        `group`: "timeout" when the pin expired (the group its request named), "admin"
        for CONSUMER.UNPIN (the group the request named; nats-server sends the advisory
        whether or not a client was pinned)."""
        if not self.pin_id and reason != "admin":
            return
        self._clear_pin()
        consumer = self.consumer
        consumer.advise(consumerevents.group_unpinned(consumer.stream.name, consumer.name,
                                                      group, reason, now=now))
        consumer.gather()
