"""Push consumers: delivery to a deliver subject, idle heartbeats, flow control, and the
pacing of replay_policy original and rate_limit_bps.

A mixin of ``jsstore.consumer.consumer.Consumer``.  A push consumer delivers while something
listens on its deliver subject (``active``); without interest it stops, and an ephemeral
one is deleted after its inactive threshold.  Waits that nats-server sleeps through
(the original gaps of a replay, the rate limiter's delay) are due times here: the
message is put back and offered again when ``tick`` reaches the time.
"""

from __future__ import annotations

import random

from jsstore.consumer import pullrequests
from jsstore.wire import headers as header_block
from jsstore.wire.bus import Msg

from jsstore.gocompat.durations import MILLISECOND as MS, SECOND

FLOW_CONTROL_MAX_PENDING = 32 * 1024 * 1024    # JsFlowControlMaxPending
DEFAULT_MAX_PAYLOAD = 1024 * 1024              # the rate limiter's burst without max_msg_size
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
LAST_CONSUMER = "Nats-Last-Consumer"
LAST_STREAM = "Nats-Last-Stream"


class PushMixin:
    """The push half of a consumer."""

    def _init_push(self) -> None:
        cfg = self.config
        self.deliver_subject = cfg.deliver_subject or ""
        self.active = False             # something listens on the deliver subject
        self.pblimit = self.maxpb = self.pbytes = self.fcsz = 0
        self.fcid = ""                  # the outstanding flow control request's reply
        self.hb_due = 0                 # next idle heartbeat
        self.hold_due = 0               # replay or rate pacing: when to try again
        self.replay = cfg.replay_policy == "original"
        self.replay_lseq = self.stream.store.last_seq if self.replay else 0
        self.replay_lts = 0             # timestamp of the last replayed message
        self.replay_sent = 0            # when it went out
        self._configure_rate()
        if self.is_pull:
            return
        if cfg.flow_control:
            self._set_max_pending_bytes(FLOW_CONTROL_MAX_PENDING)
        self.active = self._has_push_interest()
        if cfg.idle_heartbeat:
            self.hb_due = self.js.clock() + cfg.idle_heartbeat
            self._schedule(self.hb_due)

    def _configure_rate(self) -> None:
        bps = self.config.rate_limit_bps or 0
        self.rate = bps // 8            # bytes per second (0: unlimited)
        max_size = getattr(self.stream.config, "max_msg_size", 0) or 0
        self.burst = max_size if max_size > 0 else DEFAULT_MAX_PAYLOAD
        self.tokens = float(self.burst)
        self.tokens_at = self.js.clock()

    def _reconfigure_push(self, old) -> None:
        if self.is_pull:
            return
        if (self.config.rate_limit_bps or 0) != (old.rate_limit_bps or 0):
            self._configure_rate()
        if self.config.deliver_subject != old.deliver_subject:
            self.deliver_subject = self.config.deliver_subject
            if self.acks.num_pending:
                self._force_expire_pending()
            self.active = self._has_push_interest()

    def _set_max_pending_bytes(self, limit: int) -> None:
        self.pblimit = limit
        self.maxpb = max(limit // 16, 1)

    # -- interest -------------------------------------------------------------------------
    def _has_push_interest(self) -> bool:
        return bool(self.deliver_subject) and self.js.bus.has_interest(self.deliver_subject)

    def interest_changed(self) -> None:
        """Re-read whether anyone listens on the deliver subject (updateDeliveryInterest):
        start delivering when someone does; start the delete countdown when nobody does."""
        if self.is_pull or self.closed:
            return
        was = self.active
        self.active = self._has_push_interest()
        now = self.js.clock()
        if not self.active:
            if self.dthresh > 0 and not self.dtmr_due:
                self._set_dtmr(now + self.dthresh)
            return
        self.dtmr_due = 0
        if not was:
            self.gather()

    def _push_ready(self, now: int) -> bool:
        """Whether a push consumer may send now (active, under the flow control window)."""
        if not self.active:
            self.interest_changed()
            if not self.active:
                return False
        if self.hold_due and now < self.hold_due:
            return False
        self.hold_due = 0
        return not (self.maxpb > 0 and self.pbytes > self.maxpb)

    # -- pacing ---------------------------------------------------------------------------
    def _pace(self, msg, size: int, now: int) -> int:
        """0 to send `msg` now, else when to try again (replay gaps, rate limit)."""
        if self.replay:
            if self.sseq - 1 > self.replay_lseq and msg.seq > self.replay_lseq:
                self.replay = False     # caught up: new messages go out at once
            elif self.replay_lts:
                gap = msg.ts - self.replay_lts
                if gap > MS and now < self.replay_sent + gap:
                    self.hold_due = self.replay_sent + gap
                    return self.hold_due
        if self.rate:
            elapsed = (now - self.tokens_at) / SECOND
            self.tokens = min(float(self.burst), self.tokens + elapsed * self.rate)
            self.tokens_at = now
            need = min(size, self.burst)
            if self.tokens < need:
                self.hold_due = now + int((need - self.tokens) / self.rate * SECOND) + 1
                return self.hold_due
            self.tokens -= need
        if self.replay:
            self.replay_lts = msg.ts
            self.replay_sent = now
        return 0

    def _delivered_push(self, now: int) -> None:
        if self.config.idle_heartbeat:
            self.hb_due = now + self.config.idle_heartbeat
            self._schedule(self.hb_due)

    # -- heartbeats -----------------------------------------------------------------------
    def _push_tick(self, now: int) -> None:
        if self.closed:
            return
        self.interest_changed()
        hb = self.config.idle_heartbeat or 0
        if hb and self.hb_due and now >= self.hb_due:
            if self.active:
                self._send_idle_heartbeat(self.deliver_subject)
                if (self.ack_policy == "flow_control" and self.acks.num_pending
                        and not self.fcid):
                    self._send_flow_control()
            self.hb_due = now + hb

    def _push_due(self) -> int:
        dues = [d for d in (self.hb_due, self.hold_due) if d]
        return min(dues) if dues else 0

    def _send_idle_heartbeat(self, subject: str) -> None:
        self._status(subject, pullrequests.idle_heartbeat(self.dseq - 1, self.sseq - 1,
                                                          stalled=self.fcid or None))

    # -- flow control ---------------------------------------------------------------------
    def _need_flow_control(self, size: int) -> bool:
        if self.maxpb == 0:
            return False
        if not self.fcid and self.pbytes > self.maxpb // 2:
            return True
        if (not self.fcid and self.ack_policy == "flow_control" and self.maxp > 0
                and self.acks.num_pending >= self.maxp):
            return True
        if self.fcid and self.pbytes - self.fcsz >= self.maxpb:
            self.fcsz += size
        return False

    def _fc_reply(self) -> str:
        token = "".join(random.choice(_DIGITS) for _ in range(4))
        return f"$JS.FC.{self.stream.name}.{self.name}.{token}"

    def _send_flow_control(self) -> None:
        if self.is_pull:
            return
        reply = self._fc_reply()
        self.fcsz, self.fcid = self.pbytes, reply
        self.js.bus.publish(Msg(self.deliver_subject, b"", pullrequests.flow_control_request(),
                                reply))

    def process_flow_control(self, subject: str, hdr: bytes | None) -> None:
        """A reply to a flow control request: open the window (and, with the
        flow_control ack policy, ack up to the sequences its headers name)."""
        if self.closed or subject != self.fcid:
            return
        if self.maxpb < self.pblimit:
            self.maxpb = min(self.maxpb * 2, self.pblimit)
        self.pbytes = max(self.pbytes - self.fcsz, 0)
        self.fcid, self.fcsz = "", 0
        if self.ack_policy == "flow_control" and hdr:
            last_dseq = _int_header(hdr, LAST_CONSUMER)
            last_sseq = _int_header(hdr, LAST_STREAM)
            if last_sseq > 0:
                self.ack(last_sseq, max(last_dseq, 0), 1, sample=False)
        self.gather()

    def _force_expire_pending(self) -> None:
        """forceExpirePending: redeliver everything pending (the deliver subject moved)."""
        now = self.js.clock()
        expired = [seq for seq, _ in self._pending_items()
                   if seq not in self.rdq and not self._has_max_deliveries(seq)]
        for seq in expired:
            self.rdq[seq] = None
        if expired:
            self._reset_ptmr(now + self._ack_wait_for(0))


def _int_header(hdr: bytes, key: str) -> int:
    value = header_block.get(hdr, key)
    if value is None:
        return 0
    try:
        return int(value.decode() if isinstance(value, bytes) else value)
    except ValueError:
        return 0
