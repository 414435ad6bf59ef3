"""Acknowledgements and redelivery: the ack kinds, the ack floor, the ack-wait timer.

A mixin of ``jsstore.consumer.consumer.Consumer``.  nats-server's ``processAck`` family:

* ``+ACK`` (``ack``): explicit acks take one message off pending; ``all`` (and
  ``flow_control``) acks everything up to it.  The consumer's own ack floor moves as
  ``moveAckFloor`` moves it; the store's (what consumer info reports) as ``UpdateAcks``
  moves it.  An ack for a sequence not delivered yet is ignored.
* ``-NAK`` (``nak``): redeliver now (the redelivery queue), or after a delay (the
  pending timestamp is set so the ack wait runs out then).
* ``+WPI`` (``progress``): the ack wait starts again.
* ``+TERM`` (``term``): an ack without redelivery, advised with its reason.
* ``check_pending``: the ack-wait (or backoff) timer; expired deliveries are queued for
  redelivery in order, those at max_deliver are dropped and advised.
"""

from __future__ import annotations

import random

from jsstore.wire import ackreply as ack_protocol
from jsstore.stream import advisories
from jsstore.consumer import events as consumerevents
from jsstore.errors import MsgNotFound, StoreError

from jsstore.gocompat.durations import MILLISECOND as MS

ACK_WAIT_DELAY = MS                     # ackWaitDelay: lets a burst expire together
TERM_LIMITS_REASON = "Message deleted by stream limits"
TERM_UNACKED_REASON = "Unacknowledged message was deleted"


class AckMixin:
    """What acknowledgements do to a consumer."""

    # -- delivery counts ------------------------------------------------------------------
    def delivery_count(self, seq: int) -> int:
        """deliveryCount: the redelivery count, or 1 (nats-server's own arithmetic)."""
        count = self.rdc.get(seq, 0)
        return count if count >= 1 else 1

    def _inc_delivery_count(self, seq: int) -> int:
        count = self.rdc.get(seq, 0) + 1
        self.rdc[seq] = count
        return count + 1

    def _dec_delivery_count(self, seq: int) -> None:
        count = self.rdc.get(seq)
        if count is None:
            return
        if count > 1:
            self.rdc[seq] = count - 1
        else:
            del self.rdc[seq]

    def _notify_delivery_exceeded(self, seq: int, deliveries: int) -> None:
        self._advise(advisories.max_deliveries(self.stream.name, self.name, seq, deliveries,
                                               now=self.js.clock()))

    def _has_max_deliveries(self, seq: int) -> bool:
        """hasMaxDeliveries: at the limit, drop it from pending (advising once)."""
        if not self.maxdc:
            return False
        dc = self.delivery_count(seq)
        if dc < self.maxdc:
            return False
        if dc == self.maxdc:
            self._notify_delivery_exceeded(seq, dc)
        entry = self.acks.pending_entry(seq)
        if entry is not None:
            self.store.update_delivered(entry[0], seq, dc + 1, entry[1])
            self._move_ack_floor(entry[0], seq)
        self.rdc[seq] = dc
        return True

    # -- the wire -------------------------------------------------------------------------
    def process_ack(self, subject: str, payload: bytes, reply: str = "") -> bool:
        """processAck: an ack message on `subject` (the delivery's ack reply subject).
        Returns whether an ack with a `reply` is answered (the double ack)."""
        sseq, dseq, dc, _, _ = ack_protocol.ack_reply_info(subject)
        request = ack_protocol.parse_ack(payload)
        kind = request.kind
        applied = True
        if kind is ack_protocol.ACK:
            applied = self.ack(sseq, dseq, dc, reply)
        elif kind is ack_protocol.NEXT:
            self.ack(sseq, dseq, dc, reply)
            if reply:
                self.request_next(reply, request.next_request or b"")
        elif kind is ack_protocol.NAK:
            self.nak(sseq, dseq, dc, request.delay)
        elif kind is ack_protocol.PROGRESS:
            self.progress(sseq)
        elif kind is ack_protocol.TERM:
            applied = self.term(sseq, dseq, dc, request.reason, reply)
        return bool(reply) and ack_protocol.sends_reply(request, sseq, applied)

    # -- acknowledgements -----------------------------------------------------------------
    def ack(self, sseq: int, dseq: int, dc: int, reply: str = "", *,
            sample: bool = True) -> bool:
        """processAckMsg: +ACK (and the ack half of +NXT and +TERM). Returns whether it
        was applied (an ack with a reply subject is answered once applied)."""
        if self.closed:
            return False
        if sseq >= self.sseq and not self.config.flow_control:
            return False                        # not delivered yet
        acked_all: list[int] = []
        policy = self.ack_policy
        if policy == "explicit":
            entry = self.acks.pending_entry(sseq)
            if entry is not None:
                if sample and self.sfreq:
                    self._sample_ack(sseq, dseq, dc, entry[1])
                dseq = entry[0]
                self.store.update_acks(dseq, sseq)      # pending: it is there to ack
                if dseq == self.adflr + 1 or not self.acks.num_pending:
                    self._move_ack_floor(dseq, sseq)
            else:
                self._store_ack(dseq, sseq)
            self.rdc.pop(sseq, None)
            self.rdq.pop(sseq, None)
        elif policy in ("all", "flow_control"):
            if dseq <= self.adflr or sseq <= self.asflr:
                return True
            gap = sseq - self.asflr
            self.adflr, self.asflr = dseq, sseq
            retained = self.stream.retention is not None
            if gap > self.acks.num_pending:
                below = [seq for seq, _ in self._pending_items() if seq <= sseq]
            else:
                below = [seq for seq in range(sseq, sseq - gap, -1)
                         if self.acks.pending_entry(seq) is not None]
            for seq in below:
                if retained and seq != sseq:
                    acked_all.append(seq)
                self.rdc.pop(seq, None)
                self.rdq.pop(seq, None)
            self._store_ack(dseq, sseq)
        else:
            # AckNone: nothing to track; answered only where the stream keeps messages
            # for its consumers (nats-server acks those in place)
            return self.stream.retention is not None
        self.lat = self.js.clock()
        if self.stream.retention is not None:
            self.stream.ack(self.name, sseq)
            for seq in acked_all:
                self.stream.ack(self.name, seq)
        if self.maxp > 0 and (self.waiting or not self.is_pull):
            self.gather()               # a stall on max_ack_pending may be over
        if self.dthresh > 0:
            self._ack_activity()
        return True

    def _store_ack(self, dseq: int, sseq: int) -> None:
        try:
            self.store.update_acks(dseq, sseq)
        except MsgNotFound:
            pass

    def _move_ack_floor(self, dseq: int, sseq: int) -> None:
        """moveAckFloor: the consumer's own ack floor after dseq/sseq left pending."""
        if not self.acks.num_pending:
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
        elif dseq == self.adflr + 1:
            self.adflr, self.asflr = dseq, sseq
            above = self.acks.next_pending_above(sseq)
            if above is not None and above[0] < self.sseq and above[1] > 0:
                self.adflr, self.asflr = above[1] - 1, above[0] - 1

    def nak(self, sseq: int, dseq: int, dc: int, delay: int | None) -> None:
        """processNak: redeliver now, or `delay` ns from now."""
        if dseq <= self.adflr or dseq > self.dseq:
            return
        entry = self.acks.pending_entry(sseq)
        if entry is None:
            return
        now = self.js.clock()
        if self.js.bus.has_interest(self.naked_subject):
            self._advise(advisories.msg_naked(self.stream.name, self.name, dseq, sseq, dc,
                                              now=now))
        if delay is not None:
            self.rdq.pop(sseq, None)
            ts = now - self.ack_wait + delay
            self.store.update_delivered(entry[0], sseq, dc, ts)
            self._reset_ptmr(min(self.ptmr_due or (now + 10 * MS), now + 10 * MS))
            return
        if sseq not in self.rdq:
            self.rdq[sseq] = None
        self.gather()

    def progress(self, sseq: int) -> None:
        """+WPI: the ack wait starts again."""
        entry = self.acks.pending_entry(sseq)
        if entry is not None:
            self.store.update_delivered(entry[0], sseq, 1, self.js.clock())

    def term(self, sseq: int, dseq: int, dc: int, reason: str, reply: str = "") -> bool:
        """+TERM: acknowledged without redelivery, and advised."""
        return self._process_term(sseq, dseq, dc, reason, reply)

    def _process_term(self, sseq: int, dseq: int, dc: int, reason: str, reply: str) -> bool:
        applied = self.ack(sseq, dseq, dc, reply, sample=False)
        if self.js.bus.has_interest(self.terminated_subject):
            self._advise(advisories.msg_terminated(self.stream.name, self.name, dseq, sseq, dc,
                                                   reason=reason, now=self.js.clock()))
        return applied

    def _sample_ack(self, sseq: int, dseq: int, dc: int, delivered_at: int) -> None:
        if self.sfreq < 100 and random.randrange(100) > self.sfreq:
            return
        now = self.js.clock()
        self._advise(consumerevents.ack_metric(self.stream.name, self.name, dseq, sseq,
                                               now - delivered_at, dc, now=now))

    def needs_ack(self, sseq: int, subject: str) -> bool:
        """needAck: whether this consumer still needs the message (interest retention)."""
        if self.filters and not self.is_filtered_match(subject):
            return False
        if self.explicit:
            need = sseq > self.asflr and (sseq >= self.sseq
                                          or self.acks.pending_entry(sseq) is not None)
        else:
            need = sseq > self.asflr
        return need or sseq in self.rdc

    # -- the ack timer --------------------------------------------------------------------
    def _pending_items(self) -> list[tuple[int, tuple[int, int]]]:
        """Every pending (stream seq, (delivery seq, timestamp)), ascending."""
        return [(seq, (dseq, ts)) for seq, dseq, ts in self.acks.pending_items()]

    def check_pending(self, now: int) -> None:
        """checkPending: queue the expired deliveries for redelivery, drop what the stream
        no longer has, and set the timer for the next deadline."""
        self.ptmr_due = 0
        if self.closed or not self.ack_wait:
            return
        first = self.stream.store.fast_state().first_seq
        nxt = self._ack_wait_for(0) if not self.backoff else self.backoff[-1]
        stale, due, nxt = self.acks.scan_pending(now, self.ack_wait, max(first, self.asflr + 1),
                                                 nxt, self.backoff or None, self.rdc)
        for seq, dseq in stale:
            self._forget_pending(seq, dseq)
        dropped = bool(stale)
        expired = [seq for seq in due
                   if seq not in self.rdq and not self._has_max_deliveries(seq)]
        # nats-server also shifts the expired entries' times, in memory only; a queued
        # entry is never expired twice (the rdq check above), so the times stay as stored
        # and a restart, which forgets the queue, finds them expired at once as it does
        for seq in expired:
            self.rdq[seq] = None
        if self.acks.num_pending:
            self._reset_ptmr(now + nxt)
        else:
            self.rdq.clear()
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
        if dropped:
            self._write_state()
        if expired:
            self.gather()

    def _forget_pending(self, seq: int, dseq: int) -> None:
        """Drop a pending entry the stream no longer has (no redelivery, no advisory)."""
        self.rdc.pop(seq, None)
        self.rdq.pop(seq, None)
        if seq > self.asflr:
            self.asflr = seq
        if dseq > self.adflr:
            self.adflr = dseq
        self._store_ack(dseq, seq)

    def _write_state(self) -> None:
        """Make the store's state what the consumer tracks (writeStoreStateUnlocked)."""
        from jsstore.store.contract import ConsumerState, SequencePair
        state = self.acks.state()
        pending = {s: p for s, p in (state.pending or {}).items() if s > self.asflr}
        new = ConsumerState(delivered=SequencePair(self.dseq - 1, self.sseq - 1),
                            ack_floor=SequencePair(self.adflr, self.asflr),
                            pending=pending or None, redelivered=dict(self.rdc) or None)
        if new.delivered.stream_seq < state.delivered.stream_seq:
            new.delivered.stream_seq = state.delivered.stream_seq
        try:
            self.store.update(new)
        except StoreError:
            self.store.force_update(new)

