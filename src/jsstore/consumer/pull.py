"""Pull consumers: requests for messages, the wait queue and every status reply.

A mixin of ``jsstore.consumer.consumer.Consumer`` (it uses the consumer's sequences, store and
``gather``).  nats-server's ``processNextMsgRequest``, ``nextWaiting`` and
``processWaiting``, synchronously: a request is checked, queued, and served at once by
``gather`` with what the stream has; what it still wants is served as messages arrive,
and ``tick`` expires it (``408 Request Timeout``), sends its idle heartbeats, and drops it
when nobody listens on its reply subject any more.

The request body and the status header blocks are ``jsstore.consumer.pullrequests``'.
"""

from __future__ import annotations

from jsstore.stream import advisories
from jsstore.consumer import events as consumerevents
from jsstore.consumer import pullrequests
from jsstore.consumer.waitqueue import WaitingRequest, WaitQueue

from jsstore.gocompat.durations import SECOND


class PullMixin:
    """The pull half of a consumer."""

    def _init_pull(self) -> None:
        self.waiting = None
        self.lwqic = 0                  # last time the whole queue was checked
        if self.is_pull:
            self.waiting = WaitQueue(self.config.max_waiting or 0,
                                     self.config.priority_policy == "prioritized")
            self.waiting.last = self.js.clock()

    def _reconfigure_pull(self, old) -> None:
        if self.waiting is not None:
            self.waiting.max = self.config.max_waiting or 0

    # -- requests -------------------------------------------------------------------------
    def request_next(self, reply: str, payload: bytes, *, sink=None) -> WaitingRequest | None:
        """A pull request (processNextMsgRequest): answered with a status, or queued and
        served. Returns the queued request (None when it was answered or refused)."""
        if not reply or self.closed:
            return None
        if not self.is_pull:
            self._status(reply, pullrequests.consumer_is_push_based(), sink)
            return None
        now = self.js.clock()
        try:
            request = pullrequests.parse_request(payload)
        except pullrequests.PullRequestError as exc:
            self._status(reply, exc.status, sink)
            return None
        refused = pullrequests.check_request(self.config, request)
        if refused is not None:
            self._status(reply, refused, sink)
            return None
        group = request.group
        if (group is not None and (self.config.priority_policy or "none") != "none"
                and self.pin_id):
            if request.id == self.pin_id:
                self.pin_due = now + self._pinned_ttl()
                self._schedule(self.pin_due)
            elif request.id:
                self._status(reply, pullrequests.pin_id_mismatch(), sink)
                return None
        waiting = self.waiting
        if waiting.is_full() and now - self.lwqic > SECOND:
            self.process_waiting(False, now)
        if request.no_wait:
            msgs_pending = self.num_pending() + len(self.rdq)
            if msgs_pending == 0 and not request.expires:
                waiting.last = now
                self._status(reply, pullrequests.no_messages(), sink)
                return None
            if msgs_pending > 0:
                batch_pending = self.process_waiting(False, now)[2]
                if msgs_pending < batch_pending:
                    waiting.last = now
                    self._status(reply, pullrequests.requests_pending(), sink)
                    return None
        wr = WaitingRequest(reply, request.batch, max_bytes=request.max_bytes,
                            expires=now + request.expires if request.expires else 0,
                            received=now, heartbeat=request.idle_heartbeat,
                            no_wait=request.no_wait, group=group,
                            min_pending=request.min_pending,
                            min_ack_pending=request.min_ack_pending, pin_id=request.id or "",
                            priority=request.priority, sink=sink)
        if not waiting.add(wr):
            if not request.idle_heartbeat:
                self._status(reply, pullrequests.exceeded_max_waiting(), sink)
            return None
        self.gather()
        due = self._pull_due()
        if due:
            self._schedule(due)
        return wr if wr in list(waiting) else None

    def may_precede_acks(self, payload: bytes) -> bool:
        """Whether the pull request `payload` gets the same answer whether or not plain
        acks (of messages this consumer delivered) are applied before it: what it is
        sent is the next messages in stream order, and acks change neither which ones
        (nothing waits for redelivery, no priority groups) nor how many (the request
        fits under max_ack_pending even with every delivered message still pending).
        nats-server applies acks on their own queue, so a request may overtake them
        there at any time; here only when it cannot matter."""
        if not self.plain_pull or self.closed or self.rdq:
            return False
        try:
            request = pullrequests.parse_request(payload)
        except pullrequests.PullRequestError:
            return False
        if request.group or request.id or request.min_pending or request.min_ack_pending:
            return False
        return self.maxp <= 0 or self.acks.num_pending + max(request.batch, 1) <= self.maxp

    def cancel_requests(self, reply: str) -> None:
        """Forget the requests answering to `reply` (their reader has gone)."""
        if self.waiting is None:
            return
        for wr in self.waiting:
            if wr.reply == reply:
                self.waiting.remove(wr)

    def cancel_request(self, wr: WaitingRequest) -> None:
        if self.waiting is not None:
            self.waiting.remove(wr)

    def _interested(self, wr: WaitingRequest) -> bool:
        return wr.sink is not None or self.js.bus.has_interest(wr.reply)

    # -- serving --------------------------------------------------------------------------
    def next_waiting(self, size: int, now: int) -> WaitingRequest | None:
        """nextWaiting: the request the next message (of `size` bytes) goes to, after
        expiring, pinning, cycling and max_bytes checks; None when none can take it."""
        waiting = self.waiting
        if self.plain_pull and waiting:
            # the usual case: the head request takes it (no pins, priorities or byte limit)
            wr = waiting.peek()
            if ((not wr.expires or now < wr.expires) and not wr.max_bytes
                    and (wr.sink is not None or self.js.bus.has_interest(wr.reply))):
                return waiting.pop()
        policy = self.config.priority_policy or "none"
        need_pin = not self.pin_id and policy == "pinned_client"
        cycled = 0
        while waiting:
            wr = waiting.peek()
            if wr.expires and now >= wr.expires:
                self._status(wr.reply, pullrequests.request_timeout(wr.n, wr.max_bytes), wr.sink)
                waiting.remove(wr)
                continue
            assigned_pin = False
            if need_pin:
                if not wr.pin_id:
                    self._assign_pin(wr, now)
                    assigned_pin = True
                    need_pin = False
                else:
                    self._status(wr.reply, pullrequests.wrong_pin_id(wr.n, wr.max_bytes),
                                 wr.sink)
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
                    self._status(wr.reply, pullrequests.wrong_pin_id(wr.n, wr.max_bytes),
                                 wr.sink)
                    waiting.remove(wr)
                    continue
            if policy == "overflow" and (wr.min_pending > 0 or wr.min_ack_pending > 0):
                over_pending = wr.min_pending > 0 and wr.min_pending <= self.npc + 1
                over_acks = (wr.min_ack_pending > 0
                             and wr.min_ack_pending <= self.acks.num_pending)
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
                        wr.n = 1
                else:
                    self._status(wr.reply, pullrequests.message_size_exceeds_max_bytes(
                        wr.n, wr.max_bytes), wr.sink)
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
        self.lwqic = now
        expired = wants = next_due = 0
        for wr in waiting:
            timed_out = wr.expires and now >= wr.expires
            if (end_of_stream and wr.no_wait) or timed_out:
                if timed_out:
                    self._status(wr.reply, pullrequests.request_timeout(wr.n, wr.max_bytes),
                                 wr.sink)
                    waiting.remove(wr)
                    expired += 1
                    continue
                if not wr.expires or wr.delivered > 0:
                    self._status(wr.reply, pullrequests.no_messages(), wr.sink)
                    waiting.remove(wr)
                    expired += 1
                    continue
            if not self._interested(wr):
                waiting.remove(wr)
                expired += 1
                continue
            wants += wr.n
            if wr.next_heartbeat:
                if now >= wr.next_heartbeat:
                    self._status(wr.reply, pullrequests.idle_heartbeat(
                        self.dseq - 1, self.sseq - 1), wr.sink)
                    wr.next_heartbeat = now + wr.heartbeat
                if not next_due or wr.next_heartbeat < next_due:
                    next_due = wr.next_heartbeat
            if wr.expires and (not next_due or wr.expires < next_due):
                next_due = wr.expires
        return expired, len(waiting), wants, next_due

    def _pull_due(self) -> int:
        due = 0
        for wr in self.waiting or ():
            for t in (wr.expires, wr.next_heartbeat):
                if t and (not due or t < due):
                    due = t
        return due

    def release_requests(self) -> None:
        """The consumer is deleted: every waiting request hears 409 Consumer Deleted."""
        if self.waiting is None:
            return
        for wr in self.waiting.clear():
            self._status(wr.reply, pullrequests.consumer_deleted(), wr.sink)

    def num_waiting(self, now: int) -> int:
        if self.waiting is None:
            return 0
        self.process_waiting(False, now)
        return len(self.waiting)

    # -- pinned client --------------------------------------------------------------------
    def _pinned_ttl(self) -> int:
        return self.config.priority_timeout or 0

    def _assign_pin(self, wr: WaitingRequest, now: int) -> None:
        """assignNewPinId: the request's client holds the pin from now on."""
        if not wr.group:
            return
        self.pin_id = advisories.next_id()
        self.pinned_ts = now
        wr.pin_id = self.pin_id
        self.pin_due = now + self._pinned_ttl()
        self._schedule(self.pin_due)
        self._advise(consumerevents.group_pinned(self.stream.name, self.name, wr.group,
                                                 self.pin_id, now=now))

    def _clear_pin(self) -> None:
        self.pin_id = ""
        self.pinned_ts = 0
        self.pin_due = 0

    def unpin(self, reason: str, now: int) -> None:
        """Release the pin ("timeout" when it expired, "admin" for CONSUMER.UNPIN)."""
        if not self.pin_id:
            return
        self._clear_pin()
        group = (self.config.priority_groups or [""])[0]
        self._advise(consumerevents.group_unpinned(self.stream.name, self.name, group,
                                                   reason, now=now))
        self.gather()

    # -- end of stream bookkeeping --------------------------------------------------------
    def _check_num_pending_on_eof(self) -> None:
        last = self.stream.store.last_seq
        if self.sseq > last and self.npc != 0:
            self.npc, self.npf = 0, last
