"""Delivery: what a consumer sends next, and how it goes out (nats-server's
``loopAndGatherMsgs``, ``getNextMsg`` and ``deliverMsg``).

A mixin of ``jsstore.consumer.consumer.Consumer``.  ``gather`` delivers while someone wants
messages (a waiting pull request, or an active push subscription under its flow control
window and pacing) and the stream has some: redeliveries first, then the last-per-subject
list, then the next stored message matching the filters.  The common pull case (one plain
request) is served in runs by ``_gather_run``.  Every delivery takes a consumer sequence,
is recorded in the store (``update_delivered``) and arms the ack timer.
"""

from __future__ import annotations

from jsstore.consumer import pullrequests
from jsstore.wire.bus import Msg
from jsstore.consumer.acknowledgements import TERM_UNACKED_REASON
from jsstore.errors import MsgNotFound, StoreEOF, StoreError

from jsstore.gocompat.durations import MILLISECOND as MS

ACK_WAIT_DELAY = MS                     # ackWaitDelay: lets a burst expire together
MAX_ACK_PENDING = "max ack pending reached"   # getNextMsg's stall (errMaxAckPending)
FIRST_HANDOVER = 8              # a pull batch's first messages, handed to the bus on their own


class DeliveryMixin:
    """The delivery half of a consumer."""

    def gather(self) -> None:
        """Deliver while someone wants messages and there are some (loopAndGatherMsgs)."""
        clock = self.js.clock
        while not self.closed:
            now = clock()
            if self.pause_due and now < self.pause_due:
                return
            if self.is_pull:
                waiting = self.waiting
                if not waiting:
                    return
                if (len(waiting) == 1 and self.plain_pull and self.lss is None
                        and not self.rdq and not self.headers_only
                        and self.ack_policy != "none" and self._gather_run(waiting.peek(), now)):
                    continue
            elif not self._push_ready(now):
                return
            msg, dc, err = self._next_msg()
            if msg is None:
                if err is StoreEOF:
                    self._check_num_pending_on_eof()
                if self.is_pull:
                    self.process_waiting(err is not MAX_ACK_PENDING, now)
                return
            if dc == 1:
                self.npc -= 1
            pending = self.npc if self.npc > 0 else 0
            seq = msg.seq
            ack_reply = f"{self.ack_prefix}{dc}.{seq}.{self.dseq}.{msg.ts}.{pending}"
            hdr, payload = msg.hdr, msg.msg
            if self.headers_only:
                hdr, payload = headers_only(hdr, payload), b""
            size = len(msg.subject) + len(ack_reply) + len(payload)
            if hdr:
                size += len(hdr)
            sink = None
            wrn = wrb = 0
            if self.is_pull:
                wr = self.next_waiting(size, now)
                if wr is None:
                    self._put_back(seq, dc)
                    self.process_waiting(True, now)
                    return
                dsubj, sink, wrn, wrb = wr.reply, wr.sink, wr.n, wr.max_bytes
                if self.pinned_client:
                    hdr = _with_header(hdr, "Nats-Pin-Id", self.pin_id)
                if wrn > 0 and wr.heartbeat:
                    wr.next_heartbeat = now + wr.heartbeat
            else:
                dsubj = self.deliver_subject
                hold = self._pace(msg, size, now)
                if hold:
                    self._put_back(seq, dc)
                    self._schedule(hold)
                    return
            self._deliver(dsubj, ack_reply, msg, hdr, payload, dc, pending, sink, now, size)
            if wrn <= 0 and wrb > 0:
                self._status(dsubj, pullrequests.batch_completed(wrn, wrb), sink)

    def _gather_run(self, wr, now: int) -> bool:
        """gather's common case in one go: the only waiting request, a plain one (no pins,
        priorities, byte budget; no redeliveries queued, no headers_only, acks tracked),
        takes the next messages in stream order.  Exactly what the general loop would do
        message by message; it stops at anything that loop must look at (end of the
        stream, max_ack_pending) and returns whether it delivered anything."""
        if wr.max_bytes or (wr.expires and now >= wr.expires):
            return False
        sink = wr.sink
        if sink is None and not self.js.bus.has_interest(wr.reply):
            return False
        load_next = self.stream.store.load_next_msg
        update_delivered = self.store.update_delivered
        acks, maxp, waiting = self.acks, self.maxp, self.waiting
        load_filter, prefix, reply = self.load_filter, self.ack_prefix, wr.reply
        batch: list[Msg] = []
        sent = 0
        while wr.n > 0 and not self.closed:
            if maxp > 0 and acks.num_pending >= maxp:
                break
            try:
                msg, seq = load_next(load_filter, self.sseq)
            except StoreEOF:
                break
            self.sseq = seq + 1
            self.npc -= 1
            pending = self.npc if self.npc > 0 else 0
            dseq = self.dseq
            self.dseq = dseq + 1
            ts = msg.ts
            ack_reply = f"{prefix}1.{seq}.{dseq}.{ts}.{pending}"
            waiting.pop()
            update_delivered(dseq, seq, 1, now)
            out = Msg(msg.subject, msg.msg, msg.hdr or None, ack_reply, reply)
            if sink is not None:
                sink(out, (seq, dseq, 1, ts, pending))
            else:
                batch.append(out)
                if sent == FIRST_HANDOVER - 1:
                    # the first few go at once, so the receiver starts on them while
                    # the rest are read
                    self.js.bus.publish_batch(batch)
                    batch = []
            sent += 1
        if batch:
            self.js.bus.publish_batch(batch)
        if not sent:
            return False
        self.ldt = now
        if self.dthresh > 0:
            waiting.last = now
        if wr.n > 0 and wr.heartbeat:
            wr.next_heartbeat = now + wr.heartbeat
        if self.backoff or not self.ptmr_due:
            self._track_pending(self.sseq - 1, now)
        elif self.ptmr_due > now + self.ack_wait + ACK_WAIT_DELAY:
            self._reset_ptmr(now + self.ack_wait + ACK_WAIT_DELAY)
        return True

    def _put_back(self, seq: int, dc: int) -> None:
        """A message taken by _next_msg could not go out: offer it again next time."""
        if dc == 1 and seq == self.sseq - 1:
            self.sseq -= 1
            self.npc += 1
        elif seq not in self.rdq:
            self._dec_delivery_count(seq)
            self.rdq[seq] = None

    def _next_msg(self):
        """getNextMsg: (message, delivery count, None), or (None, 0, why)."""
        store = self.stream.store
        while self.rdq:
            seq, _ = self.rdq.popitem(last=False)
            dc = self._inc_delivery_count(seq)
            if self.maxdc and dc > self.maxdc:
                if dc == self.maxdc + 1:
                    self._notify_delivery_exceeded(seq, dc - 1)
                entry = self.acks.pending_entry(seq)
                if entry is not None:
                    self.store.update_delivered(entry[0], seq, dc, entry[1])
                    self._move_ack_floor(entry[0], seq)
                continue
            try:
                return store.load_msg(seq), dc, None
            except (StoreError, ValueError):
                self._dec_delivery_count(seq)
                entry = self.acks.pending_entry(seq)
                if entry is not None:
                    self._process_term(seq, entry[0], dc - 1, TERM_UNACKED_REASON, "")
        if self.maxp > 0 and self.acks.num_pending >= self.maxp:
            return None, 0, MAX_ACK_PENDING
        if self.lss:
            seq = self.lss.pop(0)
            if not self.lss:
                self.sseq, self.lss = self.lss_resume, None
            else:
                self.sseq = seq
            self.sseq += 1
            try:
                return store.load_msg(seq), 1, None
            except (StoreError, ValueError):
                return None, 0, MsgNotFound
        try:
            msg, seq = store.load_next_msg(self.load_filter, self.sseq)
        except StoreEOF:
            last = store.last_seq
            if last >= self.sseq:
                self.sseq = last + 1
            return None, 0, StoreEOF
        if seq >= self.sseq:
            self.sseq = seq + 1
        return msg, 1, None

    def _deliver(self, dsubj: str, ack_reply: str, msg, hdr, payload, dc: int, pending: int,
                 sink, now: int, size: int) -> None:
        """deliverMsg: take a delivery sequence, track it, send it (`size`: what the
        delivery counts against max_bytes and flow control)."""
        dseq = self.dseq
        self.dseq = dseq + 1
        seq = msg.seq
        out = Msg(msg.subject, payload, hdr or None, ack_reply, dsubj)
        if self.maxpb > 0:
            self.pbytes += size
        self.store.update_delivered(dseq, seq, dc, now)
        self.ldt = now
        if self.ack_policy == "none":
            self.adflr, self.asflr = dseq, seq
        elif self.backoff or not self.ptmr_due:
            self._track_pending(seq, now)
        elif self.ptmr_due > now + self.ack_wait + ACK_WAIT_DELAY:
            self._reset_ptmr(now + self.ack_wait + ACK_WAIT_DELAY)
        if sink is not None:
            sink(out, (seq, dseq, dc, msg.ts, pending))
        else:
            self.js.bus.publish(out)
        if self.maxpb > 0 and self._need_flow_control(size):
            self._send_flow_control()
        if self.is_pull:
            if self.dthresh > 0:
                self.waiting.last = now
        else:
            self._delivered_push(now)
        if self.ack_policy == "none" and self.stream.retention is not None:
            self.stream.ack(self.name, seq)

    def _track_pending(self, sseq: int, now: int) -> None:
        """trackPending: the ack timer must fire by this message's deadline."""
        delay = self._ack_wait_for(self.rdc.get(sseq, 0))
        due = now + delay
        if not self.ptmr_due or self.ptmr_due > due:
            self._reset_ptmr(due)

    def _ack_wait_for(self, redeliveries: int) -> int:
        """How long an ack may take after delivery number redeliveries+1, plus 1 ms."""
        if self.backoff:
            index = min(max(redeliveries, 0), len(self.backoff) - 1)
            return self.backoff[index] + ACK_WAIT_DELAY
        return self.ack_wait + ACK_WAIT_DELAY

    def _reset_ptmr(self, due: int) -> None:
        self.ptmr_due = due
        self._schedule(due)

    def _schedule(self, due: int) -> None:
        self.js._due(due)

    def _set_dtmr(self, due: int) -> None:
        self.dtmr_due = due
        self._schedule(due)


def headers_only(hdr: bytes | None, payload: bytes) -> bytes:
    """The header block with the payload's size added as Nats-Msg-Size."""
    line = b"Nats-Msg-Size: " + str(len(payload)).encode() + b"\r\n\r\n"
    if not hdr:
        return b"NATS/1.0\r\n" + line
    return hdr[:-2] + line


def _with_header(hdr: bytes | None, key: str, value: str) -> bytes:
    """hdr with `key: value` appended (genHeader)."""
    line = f"{key}: {value}\r\n\r\n".encode()
    if not hdr:
        return b"NATS/1.0\r\n" + line
    return hdr[:-2] + line
