"""One consumer of a stream: what it delivers next, and what its acknowledgements mean.

The semantics are nats-server's ``consumer`` (server/consumer.go), run synchronously:

* ``next_stream_seq``/``next_delivery_seq`` are the next stream and delivery (consumer)
  sequences.  Every delivery attempt takes a new delivery sequence; a redelivery keeps
  its stream sequence.
* The pending and ack-floor state is the consumer store's ``AckState`` (the Cython core):
  a delivery is ``update_delivered``, an ack ``update_acks``; ``consumer info`` reports its
  delivered pair and ack floor, as nats-server does.
* Timers (ack wait and backoff, pull request expiry, heartbeats, inactivity, pause, pins)
  are due times in Unix ns on the owner's clock; ``tick(now)`` runs what is due and
  returns when the next thing is.  Nothing sleeps.
* Messages go out through the owner's bus (a delivery is a ``Msg`` whose ``to`` is the
  pull request's reply or the deliver subject, carrying the stored message's subject and
  the ack reply subject), or to the sink of an embedded fetch.

The consumer keeps its configuration, its sequences and the delivery loop (``gather``:
nats-server's ``loopAndGatherMsgs``, ``getNextMsg`` and ``deliverMsg``), and owns four
collaborators, each with its own state and a few named methods:

* ``acknowledgements`` (``Acknowledgements``): the acks themselves (the ack subjects'
  ``+ACK``, ``-NAK``, ``+WPI``, ``+TERM``, ``+NXT``), the ack floor, redelivery counts and
  queue, the ack-wait timer;
* ``delete_timer`` (``DeleteTimer``): when an inactive consumer is deleted;
* ``pull`` (``PullRequests``, pull consumers only): the wait queue and the pinned client;
* ``push`` (``PushDelivery``, push consumers only): the deliver subject and its interest,
  flow control, idle heartbeats, replay and rate pacing.

Its owner (the JetStream's consumer registry) gives it a clock, a bus,
``schedule(due, consumer)``, ``consumer_inactive(consumer)`` and ``signal(consumer)``
(a stored message or an ack may let the consumer deliver more: it gathers then, or once the
read of a client being handled is done, jsstore.jetstream.signals); the owner ticks a
consumer only when it said something is due (``schedule``, or what ``tick`` returned).
Every method runs under the owning JetStream's lock.

Where jsstore differs: the pending timestamps written to ``o.dat`` are delivery times
(nats-server writes the message's own timestamp there and keeps delivery times in
memory only), so the ack wait runs from the delivery across a restart too.
"""

from __future__ import annotations

import random

import msgspec

from jsstore._core.delivery.runs import take_run
from jsstore._core.storage.engine import BlockStore
from jsstore._core.storage.subjects import _subject_matches, is_subset_match
from jsstore.consumer import events as consumerevents
from jsstore.consumer import pullrequests
from jsstore.consumer.acknowledgements import TERM_LIMITS_REASON, Acknowledgements
from jsstore.consumer.delivery import (
    FIRST_HANDOVER,
    MAX_ACK_PENDING,
    LONG_RUN,
    RUN,
    RUN_ACK_POLICIES,
    headers_only,
    reset_refusal,
    starting_position,
    with_header,
)
from jsstore.consumer.inactivity import DeleteTimer
from jsstore.consumer.pull import PullRequests
from jsstore.consumer.push import PushDelivery
from jsstore.consumer.waitqueue import WaitingRequest
from jsstore.errors import MsgNotFound, StoreEOF, StoreError
from jsstore.gocompat.durations import MILLISECOND as MS
from jsstore.gocompat.durations import SECOND
from jsstore.gocompat.times import parse_time_ns
from jsstore.stream.advisories import ADVISORY_PREFIX
from jsstore.wire import apierrors as api_errors
from jsstore.wire.bus import Msg
from jsstore.wire.subjecttree import SubjectTree

ACK_WAIT_DELAY = MS                     # ackWaitDelay: lets a burst expire together
FILTERS_IN_A_LIST = 8                   # more filters than this are matched in a tree
DELETE_WAIT_DEFAULT = 5 * SECOND        # JsDeleteWaitTimeDefault (ephemerals)
PINNED_TTL_DEFAULT = 120 * SECOND       # JsDefaultPinnedTTL


def gather_filters(config) -> list[str]:
    """filter_subject and filter_subjects as one list (empty: every subject)."""
    filters = list(config.filter_subjects or ())
    if config.filter_subject:
        filters.append(config.filter_subject)
    return filters


def sample_frequency(text: str | None) -> int:
    """The percentage of acks to sample ("80%" or "80"); 0 for none or a bad value."""
    if not text:
        return 0
    try:
        return int(text.removesuffix("%"))
    except ValueError:
        return 0


def rfc3339_ns(text: str | None) -> int:
    """Unix ns of an RFC 3339 config time; 0 for none (or Go's zero time)."""
    if not text:
        return 0
    ns = parse_time_ns(text)
    return ns if ns > 0 else 0


class Consumer:
    """A consumer of one stream (pull when it has no deliver_subject, else push)."""

    def __init__(self, owner, stream, name: str, config, store, created_ns: int):
        self.owner = owner      # the registry: clock, bus, schedule, consumer_inactive, signal
        self.clock = owner.clock        # Unix ns
        self.bus = owner.bus            # where deliveries, statuses and advisories go
        self.signal = owner.signal      # (self): it may deliver more (see the module)
        self.stream = stream            # jsstore.stream.stream.Stream
        self.name = name
        self.store = store              # the ConsumerStore
        self.ack_state = store.ack_state   # its AckState, read directly (changes go via store)
        self.created = created_ns
        self.closed = False
        self.next_stream_seq = 1        # sseq: next stream sequence to look at
        self.next_delivery_seq = 1      # dseq: next delivery sequence
        self.pending_count = 0          # npc: messages left to deliver (num_pending)
        self.pending_counted_through = 0   # npf: stream seq pending_count is valid up to
        self.last_per_subject_seqs: list[int] | None = None  # lss: seqs still to deliver
        self.last_per_subject_resume = 0   # ... and where to carry on after them
        self.last_delivered_at = 0      # ldt: Unix ns of the last delivery (0: none)
        self.pause_due = 0              # when a pause ends (0: not paused)
        self._configure(config)
        self.acknowledgements = Acknowledgements(self)
        self.delete_timer = DeleteTimer(self)
        self.pull = PullRequests(self) if self.is_pull else None
        self.push = None if self.is_pull else PushDelivery(self)
        if store.has_state():
            self._apply_state(store.state())
        else:
            self._select_starting_seq()
        self._stream_num_pending()
        if self.delete_threshold > 0 and (self.pull is not None or not self.push.active):
            self.delete_timer.start(self.clock() + self.delete_threshold)
        self._update_pause_state()

    # -- configuration --------------------------------------------------------------------
    def _configure(self, config) -> None:
        self.config = config
        self.filters = gather_filters(config)
        # many filters are matched in a tree of their tokens (a message's check took a
        # comparison per filter: 10,000 of them for every message stored)
        self.filter_tree = None
        if len(self.filters) > FILTERS_IN_A_LIST:
            self.filter_tree = SubjectTree()
            for subject in self.filters:
                self.filter_tree.insert(subject, subject)
        # what the store's filtered loads take: all, one filter, or a list
        self.load_filter = (">" if not self.filters else
                            self.filters[0] if len(self.filters) == 1 else list(self.filters))
        self.ack_policy = config.ack_policy or "none"
        self.explicit = self.ack_policy == "explicit"
        self.ack_wait = config.ack_wait or 0
        self.backoff = list(config.backoff or ())
        self.max_deliver = max(config.max_deliver or 0, 0)    # maxdc
        self.max_ack_pending = config.max_ack_pending or 0    # maxp
        self.sample_percent = sample_frequency(config.sample_freq)   # sfreq
        self.is_pull = not config.deliver_subject
        self.headers_only = bool(config.headers_only)
        self.pinned_client = config.priority_policy == "pinned_client"
        # pull requests need no pins, priorities or overflow checks
        self.plain_pull = self.is_pull and (config.priority_policy or "none") == "none"
        self.ack_prefix = f"$JS.ACK.{self.stream.name}.{self.name}."
        # advisories sent per ack are only built when someone listens
        self.naked_subject = f"{ADVISORY_PREFIX}.CONSUMER.MSG_NAKED.{self.stream.name}.{self.name}"
        self.terminated_subject = (f"{ADVISORY_PREFIX}.CONSUMER.MSG_TERMINATED."
                                   f"{self.stream.name}.{self.name}")
        self._update_inactive_threshold()

    def _update_inactive_threshold(self) -> None:
        threshold = self.config.inactive_threshold or 0
        jitter = 100 * MS + random.randrange(900) * MS
        # dthresh: how long the consumer may be inactive before it is deleted (0: never)
        if not self.config.durable_name and threshold <= 0:
            self.delete_threshold = DELETE_WAIT_DEFAULT + jitter
        elif threshold > 0:
            self.delete_threshold = threshold + jitter if self.is_pull else threshold
        else:
            self.delete_threshold = 0

    def is_equal_or_subset(self, subject: str) -> bool:
        """isEqualOrSubsetMatch: one of the filters lies inside `subject` (none: False)."""
        return any(f == subject or is_subset_match(f, subject) for f in self.filters)

    def is_filtered_match(self, subject: str) -> bool:
        filters = self.filters
        if not filters:
            return True
        if len(filters) == 1:
            return _subject_matches(subject, filters[0])
        if self.filter_tree is not None:
            return bool(self.filter_tree.match(subject))
        return any(_subject_matches(subject, f) for f in filters)

    # -- what the owner gives -------------------------------------------------------------
    def schedule(self, due: int) -> None:
        """Something of this consumer is due at `due` (Unix ns): tick it by then."""
        self.owner.schedule(due, self)

    def advise(self, advisory: tuple[str, bytes]) -> None:
        subject, data = advisory
        if self.bus.has_interest(subject):
            self.bus.publish(Msg(subject, data))

    def status(self, reply: str, hdr: bytes, sink=None) -> None:
        """A header-only status message to a request's reply subject."""
        out = Msg(reply, b"", hdr)
        if sink is not None:
            sink(out)
        else:
            self.bus.publish(out)

    # -- start and recovery ---------------------------------------------------------------
    def _select_starting_seq(self) -> None:
        """selectStartingSeqNo: where a new consumer starts."""
        seq, self.last_per_subject_seqs, self.last_per_subject_resume = starting_position(
            self.config, self.stream, self.filters, rfc3339_ns)
        self.next_stream_seq, self.next_delivery_seq = seq, 1
        self.acknowledgements.start_at(seq)
        if seq > 0:
            self.store.set_starting(seq - 1)

    def _apply_state(self, state) -> None:
        """applyState: carry on from a stored state (a restart)."""
        self.next_stream_seq = state.delivered.stream_seq + 1
        self.next_delivery_seq = state.delivered.consumer_seq + 1
        self.acknowledgements.restore(state, self.stream.store.fast_state().first_seq)

    # -- num pending ----------------------------------------------------------------------
    def _stream_num_pending(self) -> int:
        """Recount num_pending from the store (streamNumPending)."""
        count, valid_through = self.stream.store.num_pending(
            self.next_stream_seq, self.load_filter,
            (self.config.deliver_policy or "") == "last_per_subject")
        self.pending_count, self.pending_counted_through = count, valid_through
        return count

    def num_pending(self) -> int:
        return self.pending_count if self.pending_count > 0 else 0

    def check_num_pending(self) -> int:
        """checkNumPending: never more than the stream can still hold for us."""
        state = self.stream.store.fast_state()
        if self.next_stream_seq > state.last_seq:
            self.pending_count = 0
        elif self.pending_count > 0:
            self.pending_count = min(self.pending_count, state.messages,
                                     state.last_seq - self.next_stream_seq + 1)
        return self.num_pending()

    def _check_num_pending_on_eof(self) -> None:
        last = self.stream.store.last_seq
        if self.next_stream_seq > last and self.pending_count != 0:
            self.pending_count, self.pending_counted_through = 0, last

    # -- the stream told us ---------------------------------------------------------------
    def on_stored(self, seq: int, subject: str) -> None:
        """A new message was stored (processStreamSignal)."""
        if self.closed or (self.filters and not self.is_filtered_match(subject)):
            return
        if seq > self.pending_counted_through:
            self.pending_count += 1
        if seq >= self.next_stream_seq:
            self.signal(self)

    def on_removed(self, seq: int, subject: str) -> None:
        """A message was deleted (decStreamPending): one fewer to deliver, or, when it was
        waiting for an ack, it is terminated as deleted."""
        if self.closed:
            return
        if seq >= self.next_stream_seq and self.is_filtered_match(subject):
            self.pending_count -= 1
        if self.ack_policy != "none":
            entry = self.ack_state.pending_entry(seq)
            if entry is not None:
                acknowledgements = self.acknowledgements
                acknowledgements.terminate(seq, entry[0], acknowledgements.delivery_count(seq),
                                           TERM_LIMITS_REASON)

    def on_purged(self, first_seq: int, last_seq: int, wider: bool) -> None:
        """The stream was purged up to first_seq (purge): drop what can no longer be
        delivered; `wider` when the purge was filtered (some pending may remain)."""
        if self.closed:
            return
        floor = first_seq
        if floor == 0 and not wider:
            floor = last_seq + 1
        if self.next_stream_seq < floor:
            self.next_stream_seq = floor
        acked_to = self.acknowledgements.purged(floor, wider)
        if acked_to > self.next_delivery_seq:
            self.next_delivery_seq = acked_to
        self.acknowledgements.settle_purge()
        self._stream_num_pending()

    def stream_deleted(self) -> None:
        """The stream is gone (its files with it): waiting requests hear 409 Consumer
        Deleted, and nothing is delivered any more."""
        if self.pull is not None:
            self.pull.release()
        self.closed = True

    # -- delivery -------------------------------------------------------------------------
    def gather(self) -> None:
        """Deliver while someone wants messages and there are some (loopAndGatherMsgs):
        redeliveries first, then the last-per-subject list, then the next stored message
        matching the filters.  First deliveries in stream order go in runs made in C
        (``_deliver_run``) to a push consumer's deliver subject or a plain pull request
        waiting alone, when nothing needs a look at each message; the loop below is for
        everything else."""
        clock = self.clock
        pull, push = self.pull, self.push
        while not self.closed:
            now = clock()
            if self.pause_due and now < self.pause_due:
                return
            runs = self._runs_now()
            if pull is not None:
                waiting = pull.waiting
                if not waiting:
                    return
                if runs and len(waiting) == 1 and self.plain_pull:
                    wr = waiting.peek()
                    if (not wr.max_bytes and not (wr.expires and now >= wr.expires)
                            and (wr.sink is not None or self.bus.has_interest(wr.reply))
                            and self._deliver_run(wr.reply, now, wr)):
                        continue
            else:
                if not push.active:
                    self.interest_changed()
                    if not push.active:
                        return
                if not push.ready(now):
                    return
                if runs and push.plain() and self._deliver_run(push.deliver_subject, now):
                    continue
            msg, deliveries, err = self._next_msg()
            if msg is None:
                if err is StoreEOF:
                    self._check_num_pending_on_eof()
                if pull is not None:
                    pull.process_waiting(err is not MAX_ACK_PENDING, now)
                return
            if deliveries == 1:
                self.pending_count -= 1
            pending = self.pending_count if self.pending_count > 0 else 0
            seq = msg.seq
            ack_reply = (f"{self.ack_prefix}{deliveries}.{seq}.{self.next_delivery_seq}."
                         f"{msg.ts}.{pending}")
            hdr, payload = msg.hdr, msg.msg
            if self.headers_only:
                hdr, payload = headers_only(hdr, payload), b""
            size = len(msg.subject) + len(ack_reply) + len(payload)
            if hdr:
                size += len(hdr)
            sink = None
            left = bytes_left = 0       # what the pull request still wants after this one
            if pull is not None:
                wr = pull.next_waiting(size, now)
                if wr is None:
                    self._put_back(seq, deliveries)
                    pull.process_waiting(True, now)
                    return
                deliver_to, sink, left, bytes_left = wr.reply, wr.sink, wr.wanted, wr.max_bytes
                if self.pinned_client:
                    hdr = with_header(hdr, "Nats-Pin-Id", pull.pin_id)
                if left > 0 and wr.heartbeat:
                    wr.next_heartbeat = now + wr.heartbeat
            else:
                deliver_to = push.deliver_subject
                hold = push.pace(msg, size, now)
                if hold:
                    self._put_back(seq, deliveries)
                    self.schedule(hold)
                    return
            self._deliver(deliver_to, ack_reply, msg, hdr, payload, deliveries, pending, sink,
                          now, size)
            if left <= 0 and bytes_left > 0:
                self.status(deliver_to, pullrequests.batch_completed(left, bytes_left), sink)

    def _runs_now(self) -> bool:
        """Whether the next deliveries may go in a run (``_deliver_run``): first deliveries
        in stream order (no redelivery queued, no last-per-subject list), each adding a
        pending entry to a consumer store that records runs, of messages as stored (no
        headers_only) from a BlockStore, acks tracked (explicit or all)."""
        ack_state = self.ack_state
        return (self.ack_policy in RUN_ACK_POLICIES and not self.headers_only
                and self.last_per_subject_seqs is None
                and not self.acknowledgements.redelivery_queue
                and self.next_stream_seq > ack_state.delivered_stream
                and self.next_delivery_seq > ack_state.ack_floor_consumer
                and isinstance(self.stream.store, BlockStore)
                and hasattr(self.store, "update_delivered_run"))

    def _deliver_run(self, to: str, now: int, wr: WaitingRequest | None = None) -> bool:
        """The next messages in stream order as first deliveries to `to`: the reply subject
        of `wr`, a plain pull request waiting alone (up to what it wants), or the push
        consumer's deliver subject; up to max_ack_pending.  Loaded and made into bus
        messages in C (runs.take_run) and recorded (update_delivered_run) a run at a time
        before they go: the first FIRST_HANDOVER at once (the receiver starts on them
        while the rest are read), then runs of up to RUN.  What the message-by-message
        loop would deliver; it stops where that loop must look (the end of the stream,
        max_ack_pending).  Whether anything went."""
        ack_state, max_ack_pending = self.ack_state, self.max_ack_pending
        store, bus = self.stream.store, self.bus
        update_run = self.store.update_delivered_run
        waiting = self.pull.waiting if wr is not None else None
        sink = wr.sink if wr is not None else None
        # rendered by the core into the receivers' buffers when the bus's outside alone
        # takes `to` (the server's clients), else made into bus messages
        interest = bus.run_target(to) if sink is None else None
        sent = 0
        part = FIRST_HANDOVER
        while not self.closed:
            limit = part
            if wr is not None:
                limit = min(limit, wr.wanted if waiting.peek() is wr else 0)
            if max_ack_pending > 0:
                limit = min(limit, max_ack_pending - ack_state.num_pending)
            if limit <= 0:
                break
            batch: list[Msg] = []
            seqs: list[int] = []
            metas: list | None = [] if sink is not None else None
            first = self.next_delivery_seq
            try:
                take_run(store, self.load_filter, self.next_stream_seq, limit, self.ack_prefix,
                         self.pending_count, first, to, interest, Msg, batch, seqs, metas)
            finally:
                taken = len(seqs)
                if taken:       # (what was taken is accounted and recorded, come what may)
                    self.next_stream_seq = seqs[-1] + 1
                    self.pending_count -= taken
                    self.next_delivery_seq = first + taken
                    if waiting is not None:
                        waiting.take(taken)
                    update_run(first, seqs, now)
            if taken:
                if sink is not None:
                    for out, meta in zip(batch, metas):
                        sink(out, meta)
                else:
                    # the first few of a long run go out at once: the receiver starts on
                    # them while the rest are made
                    more = self.pending_count if wr is None else min(self.pending_count,
                                                                     wr.wanted)
                    at_once = part == FIRST_HANDOVER and more >= LONG_RUN
                    if interest is not None:
                        bus.ran(at_once)
                    else:
                        bus.publish_batch(batch, at_once)
                sent += taken
            if taken < limit:
                break
            part = RUN
        if not sent:
            return False
        self.last_delivered_at = now
        if wr is None:
            self.push.sent(0, now)      # (no flow control: the idle heartbeat starts over)
        else:
            if self.delete_threshold > 0:
                self.pull.touch(now)
            if wr.wanted > 0 and wr.heartbeat:
                wr.next_heartbeat = now + wr.heartbeat
        self.acknowledgements.sent(self.next_delivery_seq - 1, self.next_stream_seq - 1, now)
        return True

    def _put_back(self, seq: int, deliveries: int) -> None:
        """A message taken by _next_msg could not go out: offer it again next time."""
        if deliveries == 1 and seq == self.next_stream_seq - 1:
            self.next_stream_seq -= 1
            self.pending_count += 1
        else:
            self.acknowledgements.requeue(seq)

    def _next_msg(self):
        """getNextMsg: (message, delivery count, None), or (None, 0, why)."""
        store = self.stream.store
        if self.acknowledgements.redelivery_queue:
            taken = self.acknowledgements.take_redelivery(store.load_msg)
            if taken is not None:
                return taken[0], taken[1], None
        if self.max_ack_pending > 0 and self.ack_state.num_pending >= self.max_ack_pending:
            return None, 0, MAX_ACK_PENDING
        if self.last_per_subject_seqs:
            seq = self.last_per_subject_seqs.pop(0)
            if not self.last_per_subject_seqs:
                self.next_stream_seq = self.last_per_subject_resume
                self.last_per_subject_seqs = None
            else:
                self.next_stream_seq = seq
            self.next_stream_seq += 1
            try:
                return store.load_msg(seq), 1, None
            except (StoreError, ValueError):
                return None, 0, MsgNotFound
        try:
            msg, seq = store.load_next_msg(self.load_filter, self.next_stream_seq)
        except StoreEOF:
            last = store.last_seq
            if last >= self.next_stream_seq:
                self.next_stream_seq = last + 1
            return None, 0, StoreEOF
        if seq >= self.next_stream_seq:
            self.next_stream_seq = seq + 1
        return msg, 1, None

    def _deliver(self, deliver_to: str, ack_reply: str, msg, hdr, payload, deliveries: int,
                 pending: int, sink, now: int, size: int) -> None:
        """deliverMsg: take a delivery sequence, track it, send it (`size`: what the
        delivery counts against max_bytes and flow control)."""
        delivery_seq = self.next_delivery_seq
        self.next_delivery_seq = delivery_seq + 1
        seq = msg.seq
        out = Msg(msg.subject, payload, hdr or None, ack_reply, deliver_to)
        push = self.push
        if push is not None:
            push.sending(size)
        self.store.update_delivered(delivery_seq, seq, deliveries, now)
        self.last_delivered_at = now
        self.acknowledgements.sent(delivery_seq, seq, now)
        if sink is not None:
            sink(out, (seq, delivery_seq, deliveries, msg.ts, pending))
        else:
            self.bus.publish(out)
        if push is not None:
            push.sent(size, now)
        elif self.delete_threshold > 0:
            self.pull.touch(now)
        if self.ack_policy == "none" and self.stream.retention is not None:
            self.stream.ack(self.name, seq)

    # -- acknowledgements -----------------------------------------------------------------
    def needs_ack(self, stream_seq: int, subject: str) -> bool:
        """needAck: whether this consumer still needs the message (interest retention)."""
        if self.filters and not self.is_filtered_match(subject):
            return False
        return self.acknowledgements.still_needed(stream_seq)

    # -- pull requests (pull consumers only) ----------------------------------------------
    def request_next(self, reply: str, payload: bytes, *, sink=None) -> WaitingRequest | None:
        """A pull request (processNextMsgRequest): answered with a status, or queued and
        served. Returns the queued request (None when it was answered or refused)."""
        if not reply or self.closed:
            return None
        if self.pull is None:
            self.status(reply, pullrequests.consumer_is_push_based(), sink)
            return None
        return self.pull.request(reply, payload, sink)

    # -- push delivery (push consumers only) ----------------------------------------------
    def interest_changed(self) -> None:
        """Re-read whether anyone listens on the deliver subject (updateDeliveryInterest):
        start delivering when someone does; start the delete countdown when nobody does."""
        push = self.push
        if push is None or self.closed:
            return
        was = push.active
        if not push.read_interest():
            if self.delete_threshold > 0 and not self.delete_timer.due:
                self.delete_timer.start(self.clock() + self.delete_threshold)
            return
        self.delete_timer.stop()
        if not was:
            self.gather()

    # -- timers ---------------------------------------------------------------------------
    def tick(self, now: int) -> int | None:
        """Run whatever is due at `now`; returns when something is next due (or None)."""
        if self.closed:
            return None
        acknowledgements = self.acknowledgements
        acknowledgements.tick(now)
        if self.pause_due and now >= self.pause_due:
            self.pause_due = 0
            self._advise_pause(now)
        pull, push = self.pull, self.push
        if pull is not None:
            pull.tick(now)
        elif not self.closed:
            self.interest_changed()
            push.tick(now)
        self.gather()
        delete_timer = self.delete_timer
        if delete_timer.due and now >= delete_timer.due:
            delete_timer.check(now)
            if self.closed:
                return None
        return self.next_due()

    def next_due(self) -> int | None:
        """When this consumer's timed work is next due (None: it has none)."""
        pull = self.pull
        dues = [d for d in (self.acknowledgements.ack_timer_due, self.delete_timer.due,
                            self.pause_due, pull.pin_due if pull is not None else 0,
                            pull.due() if pull is not None else self.push.due()) if d]
        return min(dues) if dues else None

    # -- pause ----------------------------------------------------------------------------
    def _update_pause_state(self) -> None:
        until = rfc3339_ns(self.config.pause_until)
        now = self.clock()
        self.pause_due = until if until > now else 0
        if self.pause_due:
            self.schedule(self.pause_due)

    def _advise_pause(self, now: int) -> None:
        self.advise(consumerevents.consumer_pause(
            self.stream.name, self.name, rfc3339_ns(self.config.pause_until), now=now))

    # -- reset ----------------------------------------------------------------------------
    def reset(self, seq: int = 0) -> int:
        """CONSUMER.RESET (nats-server 2.14): start over as if created again at stream
        sequence `seq`, or, with 0, just above the ack floor.  Nothing stays pending or
        counted as redelivered, delivery sequences start at 1 again, the ack floor is
        (0, seq - 1); waiting pull requests stay.  An interest stream lets go of the
        messages of ours now below the floor (a work queue keeps them).  Returns the
        sequence delivery starts from; JSConsumerInvalidResetErr when the configuration
        does not allow `seq`.  The caller delivers (``gather``) once it has answered."""
        if seq:
            refusal = reset_refusal(self.config, self.stream.store, seq, rfc3339_ns)
            if refusal is not None:
                raise api_errors.JSConsumerInvalidResetErr(err=refusal)
        else:
            seq = self.acknowledgements.ack_floor_stream + 1
        self.next_stream_seq = seq
        self.next_delivery_seq = 1
        self.last_per_subject_seqs, self.last_per_subject_resume = None, 0
        self.last_delivered_at = 0
        self.acknowledgements.reset(seq - 1)
        self._stream_num_pending()
        if (self.stream.config.retention or "limits") == "interest":
            self._release_through(seq - 1)
        return seq

    def _release_through(self, floor: int) -> None:
        """Interest retention: every message of ours at or below `floor` is acknowledged
        (removed once no other consumer needs it)."""
        store = self.stream.store
        last = min(floor, store.last_seq)
        seq = store.first_seq
        while 0 < seq <= last:
            try:
                _, seq = store.load_next_msg(self.load_filter, seq)
            except StoreError:
                return
            if seq > last:
                return
            self.stream.ack(self.name, seq)
            seq += 1

    # -- configuration updates ------------------------------------------------------------
    def update_config(self, config) -> None:
        """updateConfig: adopt an allowed change (checked by the caller)."""
        old = self.config
        self.store.update_config(msgspec.to_builtins(config))
        old_filters = self.filters
        old_pause = old.pause_until
        self._configure(config)
        if self.pull is not None:
            self.pull.reconfigure()
        if self.push is not None and self.push.reconfigure(old):
            if self.ack_state.num_pending:
                self.acknowledgements.expire_all(self.clock())
            self.push.read_interest()
        if (config.ack_wait or 0) != (old.ack_wait or 0):
            self.acknowledgements.ack_wait_changed(self.clock())
        if (config.inactive_threshold or 0) != (old.inactive_threshold or 0):
            self.delete_timer.restart(self.clock())
        if config.pause_until != old_pause:
            self._update_pause_state()
            self._advise_pause(self.clock())
        if sorted(self.filters) != sorted(old_filters):
            self._stream_num_pending()
        self.gather()

    # -- end ------------------------------------------------------------------------------
    def stop(self, *, delete: bool) -> None:
        """Stop delivering; with delete, answer waiting requests 409 Consumer Deleted and
        remove the store's files, else keep them (a clean shutdown)."""
        if self.closed:
            return
        if delete and self.pull is not None:
            self.pull.release()
        self.closed = True
        if delete:
            self.store.delete()
        else:
            self.store.stop()
