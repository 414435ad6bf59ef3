"""Acknowledgements and redelivery: the ack kinds, the ack floor, the ack-wait timer.

``Acknowledgements`` is the part of a consumer that knows what awaits an ack and what goes
out again (nats-server's ``processAck`` family, ``checkPending``, ``moveAckFloor``):

* ``+ACK`` (``ack``): explicit acks take one message off pending; ``all`` (and
  ``flow_control``) acks everything up to it.  The consumer's own ack floor moves as
  ``moveAckFloor`` moves it; the store's (what consumer info reports) as ``UpdateAcks``
  moves it.  An ack for a sequence not delivered yet is ignored.
* ``-NAK`` (``nak``): redeliver now (the redelivery queue), or after a delay (the
  pending timestamp is set so the ack wait runs out then).
* ``+WPI`` (``progress``): the ack wait starts again.
* ``+TERM`` (``term``): an ack without redelivery, advised with its reason.
* ``tick``: the ack-wait (or backoff) timer; expired deliveries are queued for
  redelivery in order, those at max_deliver are dropped and advised.

The pending deliveries themselves are the consumer store's ``AckState`` (read directly,
changed through the store).  The consumer owns the sequences and the settings read from
its configuration; this object owns the ack floor, the redelivery counts and queue, the
ack timer and the time of the last ack, and nothing else writes them.
"""

from __future__ import annotations

import random
from collections import OrderedDict

from jsstore.consumer import events as consumerevents
from jsstore.errors import MsgNotFound, StoreError
from jsstore.gocompat.durations import MILLISECOND as MS
from jsstore.gocompat.durations import SECOND
from jsstore.store.contract import ConsumerState, SequencePair
from jsstore.stream import advisories
from jsstore.wire import ackreply as ack_protocol

ACK_WAIT_DELAY = MS                     # ackWaitDelay: lets a burst expire together
TERM_LIMITS_REASON = "Message deleted by stream limits"
TERM_UNACKED_REASON = "Unacknowledged message was deleted"


class Acknowledgements:
    """What awaits an ack on one consumer, and what is to be delivered again."""

    def __init__(self, consumer):
        self.consumer = consumer        # jsstore.consumer.consumer.Consumer
        self.store = consumer.store     # the ConsumerStore: every change of pending goes here
        self.ack_state = consumer.ack_state   # its AckState, read directly
        self.ack_floor_delivery = 0     # adflr: the consumer's ack floor, delivery sequence
        self.ack_floor_stream = 0       # asflr: ... and stream sequence
        self.redelivery_counts: dict[int, int] = {}   # rdc: stream seq -> redeliveries so far
        self.redelivery_queue: OrderedDict[int, None] = OrderedDict()   # rdq: in order
        self.ack_timer_due = 0          # ptmr: when pending acks are next checked (0: none)
        self.last_acked_at = 0          # lat: Unix ns of the last ack (0: none)

    # -- start ------------------------------------------------------------------------------
    def start_at(self, stream_seq: int) -> None:
        """A new consumer: nothing is acknowledged below `stream_seq` yet."""
        self.ack_floor_delivery, self.ack_floor_stream = 0, stream_seq - 1

    def reset(self, floor: int) -> None:
        """A consumer reset (CONSUMER.RESET): nothing pending, no redeliveries counted or
        queued, no ack seen, the ack floor at (0, `floor`); the store starts over there."""
        self.ack_floor_delivery, self.ack_floor_stream = 0, floor
        self.redelivery_counts.clear()
        self.redelivery_queue.clear()
        self.ack_timer_due = 0
        self.last_acked_at = 0
        self.store.reset(floor)

    def restore(self, state, first_seq: int) -> None:
        """Carry on from a stored state (applyState); `first_seq`: the stream's first."""
        consumer = self.consumer
        self.ack_floor_delivery = state.ack_floor.consumer_seq
        self.ack_floor_stream = state.ack_floor.stream_seq
        self.redelivery_counts = dict(state.redelivered or {})
        if state.pending:
            ack_wait = consumer.ack_wait
            delay = min(ack_wait + ACK_WAIT_DELAY, SECOND) if ack_wait else SECOND
            self.reset_timer(consumer.clock() + delay)
        for seq in [s for s in self.redelivery_counts if s < first_seq]:
            del self.redelivery_counts[seq]

    # -- delivery counts ------------------------------------------------------------------
    def delivery_count(self, seq: int) -> int:
        """deliveryCount: the redelivery count, or 1 (nats-server's own arithmetic)."""
        count = self.redelivery_counts.get(seq, 0)
        return count if count >= 1 else 1

    def num_redelivered(self) -> int:
        return len(self.redelivery_counts)

    def _inc_delivery_count(self, seq: int) -> int:
        count = self.redelivery_counts.get(seq, 0) + 1
        self.redelivery_counts[seq] = count
        return count + 1

    def _dec_delivery_count(self, seq: int) -> None:
        count = self.redelivery_counts.get(seq)
        if count is None:
            return
        if count > 1:
            self.redelivery_counts[seq] = count - 1
        else:
            del self.redelivery_counts[seq]

    def _notify_delivery_exceeded(self, seq: int, deliveries: int) -> None:
        consumer = self.consumer
        consumer.advise(advisories.max_deliveries(consumer.stream.name, consumer.name, seq,
                                                  deliveries, now=consumer.clock()))

    def _has_max_deliveries(self, seq: int) -> bool:
        """hasMaxDeliveries: at the limit, drop it from pending (advising once)."""
        max_deliver = self.consumer.max_deliver
        if not max_deliver:
            return False
        deliveries = self.delivery_count(seq)
        if deliveries < max_deliver:
            return False
        if deliveries == max_deliver:
            self._notify_delivery_exceeded(seq, deliveries)
        entry = self.ack_state.pending_entry(seq)
        if entry is not None:
            self.store.update_delivered(entry[0], seq, deliveries + 1, entry[1])
            self._move_ack_floor(entry[0], seq)
        self.redelivery_counts[seq] = deliveries
        return True

    # -- redelivery ---------------------------------------------------------------------------
    def take_redelivery(self, load_msg):
        """The next queued redelivery that can go out: (message, delivery count), or None
        when the queue is empty.  Entries past max_deliver are dropped (advised once) and
        entries the stream no longer has are terminated on the way."""
        queue = self.redelivery_queue
        max_deliver = self.consumer.max_deliver
        while queue:
            seq, _ = queue.popitem(last=False)
            deliveries = self._inc_delivery_count(seq)
            if max_deliver and deliveries > max_deliver:
                if deliveries == max_deliver + 1:
                    self._notify_delivery_exceeded(seq, deliveries - 1)
                entry = self.ack_state.pending_entry(seq)
                if entry is not None:
                    self.store.update_delivered(entry[0], seq, deliveries, entry[1])
                    self._move_ack_floor(entry[0], seq)
                continue
            try:
                return load_msg(seq), deliveries
            except (StoreError, ValueError):
                self._dec_delivery_count(seq)
                entry = self.ack_state.pending_entry(seq)
                if entry is not None:
                    self.terminate(seq, entry[0], deliveries - 1, TERM_UNACKED_REASON)
        return None

    def requeue(self, seq: int) -> None:
        """A redelivery taken by take_redelivery could not go out: queue it again."""
        if seq not in self.redelivery_queue:
            self._dec_delivery_count(seq)
            self.redelivery_queue[seq] = None

    def sent(self, delivery_seq: int, stream_seq: int, now: int) -> None:
        """A delivery went out (the store has it): with AckNone it is acknowledged at
        once, else the ack timer must fire by its deadline (trackPending)."""
        consumer = self.consumer
        if consumer.ack_policy == "none":
            self.ack_floor_delivery, self.ack_floor_stream = delivery_seq, stream_seq
            return
        due = self.ack_timer_due
        if consumer.backoff or not due:
            self._track_pending(stream_seq, now)
        elif due > now + consumer.ack_wait + ACK_WAIT_DELAY:
            self.reset_timer(now + consumer.ack_wait + ACK_WAIT_DELAY)

    # -- the wire -------------------------------------------------------------------------
    def process(self, subject: str, payload: bytes, reply: str = "") -> bool:
        """processAck: an ack message on `subject` (the delivery's ack reply subject).
        Returns whether an ack with a `reply` is answered (the double ack)."""
        stream_seq, delivery_seq, deliveries, _, _ = ack_protocol.ack_reply_info(subject)
        request = ack_protocol.parse_ack(payload)
        kind = request.kind
        applied = True
        if kind is ack_protocol.ACK:
            applied = self.ack(stream_seq, delivery_seq, deliveries)
        elif kind is ack_protocol.NEXT:
            self.ack(stream_seq, delivery_seq, deliveries)
            if reply:
                self.consumer.request_next(reply, request.next_request or b"")
        elif kind is ack_protocol.NAK:
            self.nak(stream_seq, delivery_seq, deliveries, request.delay)
        elif kind is ack_protocol.PROGRESS:
            self.progress(stream_seq)
        elif kind is ack_protocol.TERM:
            applied = self.terminate(stream_seq, delivery_seq, deliveries, request.reason)
        return bool(reply) and ack_protocol.sends_reply(request, stream_seq, applied)

    # -- acknowledgements -----------------------------------------------------------------
    def ack(self, stream_seq: int, delivery_seq: int, deliveries: int, *,
            sample: bool = True) -> bool:
        """processAckMsg: +ACK (and the ack half of +NXT and +TERM). Returns whether it
        was applied (an ack with a reply subject is answered once applied).  A consumer
        that may deliver more now is signalled (Consumer.owner.signal)."""
        consumer = self.consumer
        if consumer.closed:
            return False
        if stream_seq >= consumer.next_stream_seq and not consumer.config.flow_control:
            return False                        # not delivered yet
        acked_all: list[int] = []
        policy = consumer.ack_policy
        ack_state = self.ack_state
        if policy == "explicit":
            entry = ack_state.pending_entry(stream_seq)
            if entry is not None:
                if sample and consumer.sample_percent:
                    self._sample_ack(stream_seq, delivery_seq, deliveries, entry[1])
                delivery_seq = entry[0]
                self.store.update_acks(delivery_seq, stream_seq)   # pending: there to ack
                if delivery_seq == self.ack_floor_delivery + 1 or not ack_state.num_pending:
                    self._move_ack_floor(delivery_seq, stream_seq)
            else:
                self._store_ack(delivery_seq, stream_seq)
            self.redelivery_counts.pop(stream_seq, None)
            self.redelivery_queue.pop(stream_seq, None)
        elif policy in ("all", "flow_control"):
            if delivery_seq <= self.ack_floor_delivery or stream_seq <= self.ack_floor_stream:
                return True
            gap = stream_seq - self.ack_floor_stream
            self.ack_floor_delivery, self.ack_floor_stream = delivery_seq, stream_seq
            retained = consumer.stream.retention is not None
            if gap > ack_state.num_pending:
                below = [seq for seq, _ in self.pending_items() if seq <= stream_seq]
            else:
                below = [seq for seq in range(stream_seq, stream_seq - gap, -1)
                         if ack_state.pending_entry(seq) is not None]
            for seq in below:
                if retained and seq != stream_seq:
                    acked_all.append(seq)
                self.redelivery_counts.pop(seq, None)
                self.redelivery_queue.pop(seq, None)
            self._store_ack(delivery_seq, stream_seq)
        else:
            # AckNone: nothing to track; answered only where the stream keeps messages
            # for its consumers (nats-server acks those in place)
            return consumer.stream.retention is not None
        self.last_acked_at = consumer.clock()
        stream = consumer.stream
        if stream.retention is not None:
            stream.ack(consumer.name, stream_seq)
            for seq in acked_all:
                stream.ack(consumer.name, seq)
        if consumer.max_ack_pending > 0 and (
                consumer.pull is None or consumer.pull.waiting):
            consumer.owner.signal(consumer)     # a stall on max_ack_pending may be over
        if consumer.delete_threshold > 0:
            consumer.delete_timer.activity()
        return True

    def ack_run(self, stream_seqs: list[int], delivery_seqs: list[int],
                subjects: list[str]) -> None:
        """Plain acks (no reply, an empty or +ACK payload) of v1 subjects, in the order
        sent: `subjects` and their stream and delivery seqs (taken apart in C,
        jsstore._core.wire.ackparse).  Each is applied as `ack` would; when the consumer
        acks explicitly, samples no acks, its store takes a run and every ack names a
        delivered message, in one go in C, else one by one (`process`).  The consumer is
        signalled once after them."""
        consumer = self.consumer
        if consumer.closed:
            return
        run = getattr(self.store, "ack_explicit_run", None)
        if (run is None or consumer.ack_policy != "explicit" or consumer.sample_percent
                or max(stream_seqs) >= consumer.next_stream_seq):
            for subject in subjects:
                self.process(subject, b"")
            return
        self.ack_floor_delivery, self.ack_floor_stream = run(
            stream_seqs, delivery_seqs, (self.ack_floor_delivery, self.ack_floor_stream),
            (consumer.next_delivery_seq, consumer.next_stream_seq))
        counts = self.redelivery_counts
        if counts:
            for seq in stream_seqs:
                counts.pop(seq, None)
        queue = self.redelivery_queue
        if queue:
            for seq in stream_seqs:
                queue.pop(seq, None)
        self.last_acked_at = consumer.clock()
        stream = consumer.stream
        if stream.retention is not None:
            for seq in stream_seqs:
                stream.ack(consumer.name, seq)
        if consumer.max_ack_pending > 0 and (consumer.pull is None or consumer.pull.waiting):
            consumer.owner.signal(consumer)
        if consumer.delete_threshold > 0:
            consumer.delete_timer.activity()

    def _store_ack(self, delivery_seq: int, stream_seq: int) -> None:
        try:
            self.store.update_acks(delivery_seq, stream_seq)
        except MsgNotFound:
            pass

    def _move_ack_floor(self, delivery_seq: int, stream_seq: int) -> None:
        """moveAckFloor: the consumer's own ack floor after the delivery left pending."""
        consumer = self.consumer
        if not self.ack_state.num_pending:
            self.ack_floor_delivery = consumer.next_delivery_seq - 1
            self.ack_floor_stream = consumer.next_stream_seq - 1
        elif delivery_seq == self.ack_floor_delivery + 1:
            self.ack_floor_delivery, self.ack_floor_stream = delivery_seq, stream_seq
            above = self.ack_state.next_pending_above(stream_seq)
            if above is not None and above[0] < consumer.next_stream_seq and above[1] > 0:
                self.ack_floor_delivery, self.ack_floor_stream = above[1] - 1, above[0] - 1

    def nak(self, stream_seq: int, delivery_seq: int, deliveries: int,
            delay: int | None) -> None:
        """processNak: redeliver now, or `delay` ns from now."""
        consumer = self.consumer
        if delivery_seq <= self.ack_floor_delivery or delivery_seq > consumer.next_delivery_seq:
            return
        entry = self.ack_state.pending_entry(stream_seq)
        if entry is None:
            return
        now = consumer.clock()
        if consumer.bus.has_interest(consumer.naked_subject):
            consumer.advise(advisories.msg_naked(consumer.stream.name, consumer.name,
                                                 delivery_seq, stream_seq, deliveries,
                                                 now=now))
        if delay is not None:
            self.redelivery_queue.pop(stream_seq, None)
            delivered_at = now - consumer.ack_wait + delay
            self.store.update_delivered(entry[0], stream_seq, deliveries, delivered_at)
            self.reset_timer(min(self.ack_timer_due or (now + 10 * MS), now + 10 * MS))
            return
        if stream_seq not in self.redelivery_queue:
            self.redelivery_queue[stream_seq] = None
        consumer.owner.signal(consumer)

    def progress(self, stream_seq: int) -> None:
        """+WPI: the ack wait starts again."""
        entry = self.ack_state.pending_entry(stream_seq)
        if entry is not None:
            self.store.update_delivered(entry[0], stream_seq, 1, self.consumer.clock())

    def terminate(self, stream_seq: int, delivery_seq: int, deliveries: int,
                  reason: str = "") -> bool:
        """+TERM (processTerm): acknowledged without redelivery, and advised."""
        consumer = self.consumer
        applied = self.ack(stream_seq, delivery_seq, deliveries, sample=False)
        if consumer.bus.has_interest(consumer.terminated_subject):
            consumer.advise(advisories.msg_terminated(
                consumer.stream.name, consumer.name, delivery_seq, stream_seq, deliveries,
                reason=reason, now=consumer.clock()))
        return applied

    def _sample_ack(self, stream_seq: int, delivery_seq: int, deliveries: int,
                    delivered_at: int) -> None:
        consumer = self.consumer
        if consumer.sample_percent < 100 and random.randrange(100) > consumer.sample_percent:
            return
        now = consumer.clock()
        consumer.advise(consumerevents.ack_metric(consumer.stream.name, consumer.name,
                                                  delivery_seq, stream_seq,
                                                  now - delivered_at, deliveries, now=now))

    def still_needed(self, stream_seq: int) -> bool:
        """needAck's part of the acks: whether the message may still be acked by us."""
        consumer = self.consumer
        if consumer.explicit:
            need = stream_seq > self.ack_floor_stream and (
                stream_seq >= consumer.next_stream_seq
                or self.ack_state.pending_entry(stream_seq) is not None)
        else:
            need = stream_seq > self.ack_floor_stream
        return need or stream_seq in self.redelivery_counts

    # -- the ack timer --------------------------------------------------------------------
    def pending_items(self) -> list[tuple[int, tuple[int, int]]]:
        """Every pending (stream seq, (delivery seq, timestamp)), ascending."""
        return [(seq, (delivery_seq, ts))
                for seq, delivery_seq, ts in self.ack_state.pending_items()]

    def ack_wait_for(self, redeliveries: int) -> int:
        """How long an ack may take after delivery number redeliveries+1, plus 1 ms."""
        backoff = self.consumer.backoff
        if backoff:
            index = min(max(redeliveries, 0), len(backoff) - 1)
            return backoff[index] + ACK_WAIT_DELAY
        return self.consumer.ack_wait + ACK_WAIT_DELAY

    def _track_pending(self, stream_seq: int, now: int) -> None:
        """trackPending: the ack timer must fire by this message's deadline."""
        due = now + self.ack_wait_for(self.redelivery_counts.get(stream_seq, 0))
        if not self.ack_timer_due or self.ack_timer_due > due:
            self.reset_timer(due)

    def reset_timer(self, due: int) -> None:
        self.ack_timer_due = due
        self.consumer.schedule(due)

    def ack_wait_changed(self, now: int) -> None:
        """The ack wait was updated: a running timer checks again soon."""
        if self.ack_timer_due:
            self.reset_timer(now + 100 * MS)

    def last_deadline(self) -> int:
        """When the last pending delivery's ack wait runs out (0: nothing pending)."""
        latest = 0
        for seq, (_delivery_seq, ts) in self.pending_items():
            latest = max(latest, ts + self.ack_wait_for(self.redelivery_counts.get(seq, 0)))
        return latest

    def tick(self, now: int) -> None:
        """checkPending, when the ack timer is due."""
        if self.ack_timer_due and now >= self.ack_timer_due:
            self.check_pending(now)

    def check_pending(self, now: int) -> None:
        """checkPending: queue the expired deliveries for redelivery, drop what the stream
        no longer has, and set the timer for the next deadline."""
        consumer = self.consumer
        self.ack_timer_due = 0
        ack_wait, backoff = consumer.ack_wait, consumer.backoff
        if consumer.closed or not ack_wait:
            return
        first = consumer.stream.store.fast_state().first_seq
        next_check = self.ack_wait_for(0) if not backoff else backoff[-1]
        stale, due, next_check = self.ack_state.scan_pending(
            now, ack_wait, max(first, self.ack_floor_stream + 1), next_check, backoff or None,
            self.redelivery_counts)
        for seq, delivery_seq in stale:
            self._forget_pending(seq, delivery_seq)
        dropped = bool(stale)
        expired = [seq for seq in due
                   if seq not in self.redelivery_queue and not self._has_max_deliveries(seq)]
        # nats-server also shifts the expired entries' times, in memory only; a queued
        # entry is never expired twice (the queue check above), so the times stay as
        # stored and a restart, which forgets the queue, finds them expired at once as it does
        for seq in expired:
            self.redelivery_queue[seq] = None
        if self.ack_state.num_pending:
            self.reset_timer(now + next_check)
        else:
            self.redelivery_queue.clear()
            self.ack_floor_delivery = consumer.next_delivery_seq - 1
            self.ack_floor_stream = consumer.next_stream_seq - 1
        if dropped:
            self.write_state()
        if expired:
            consumer.gather()

    def expire_all(self, now: int) -> None:
        """forceExpirePending: queue everything pending for redelivery."""
        expired = [seq for seq, _ in self.pending_items()
                   if seq not in self.redelivery_queue and not self._has_max_deliveries(seq)]
        for seq in expired:
            self.redelivery_queue[seq] = None
        if expired:
            self.reset_timer(now + self.ack_wait_for(0))

    def _forget_pending(self, seq: int, delivery_seq: int) -> None:
        """Drop a pending entry the stream no longer has (no redelivery, no advisory)."""
        self.redelivery_counts.pop(seq, None)
        self.redelivery_queue.pop(seq, None)
        if seq > self.ack_floor_stream:
            self.ack_floor_stream = seq
        if delivery_seq > self.ack_floor_delivery:
            self.ack_floor_delivery = delivery_seq
        self._store_ack(delivery_seq, seq)

    # -- the stream was purged ----------------------------------------------------------------
    def purged(self, floor: int, wider: bool) -> int:
        """Everything below `floor` (a stream sequence) is gone: move the ack floor past
        it and drop those pending; `wider`, a filtered purge, also drops the pending
        messages the stream no longer has.  Returns the highest delivery sequence the
        ack floor moved to (0: it did not move that way)."""
        raised = 0
        if self.ack_floor_stream >= floor:
            return raised
        self.ack_floor_stream = floor - 1
        store = self.consumer.stream.store
        for seq, (delivery_seq, _ts) in self.pending_items():
            gone = seq <= self.ack_floor_stream
            if not gone and wider:
                try:
                    store.load_msg(seq)
                except (StoreError, ValueError):
                    gone = True
            if gone:
                if delivery_seq > self.ack_floor_delivery:
                    self.ack_floor_delivery = raised = delivery_seq
                self.redelivery_counts.pop(seq, None)
                self._store_ack(delivery_seq, seq)
        return raised

    def settle_purge(self) -> None:
        """After a purge moved the consumer's sequences: an empty pending set puts the
        floor right below them, queued redeliveries below them go, the store follows."""
        consumer = self.consumer
        if not self.ack_state.num_pending:
            self.redelivery_counts.clear()
            self.ack_floor_delivery = consumer.next_delivery_seq - 1
            self.ack_floor_stream = consumer.next_stream_seq - 1
        for seq in [s for s in self.redelivery_queue if s < consumer.next_stream_seq]:
            del self.redelivery_queue[seq]
        self.write_state()

    def write_state(self) -> None:
        """Make the store's state what the consumer tracks (writeStoreStateUnlocked)."""
        consumer = self.consumer
        state = self.ack_state.state()
        pending = {s: p for s, p in (state.pending or {}).items() if s > self.ack_floor_stream}
        new = ConsumerState(
            delivered=SequencePair(consumer.next_delivery_seq - 1, consumer.next_stream_seq - 1),
            ack_floor=SequencePair(self.ack_floor_delivery, self.ack_floor_stream),
            pending=pending or None, redelivered=dict(self.redelivery_counts) or None)
        if new.delivered.stream_seq < state.delivered.stream_seq:
            new.delivered.stream_seq = state.delivered.stream_seq
        try:
            self.store.update(new)
        except StoreError:
            self.store.force_update(new)
