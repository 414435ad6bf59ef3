"""Push delivery: the deliver subject and whether anyone listens on it, idle heartbeats,
flow control, and the pacing of replay_policy original and rate_limit_bps.

``PushDelivery`` is owned by push consumers only (a pull consumer has none).  A push
consumer delivers while something listens on its deliver subject (``active``); without
interest it stops, and an ephemeral one is deleted after its inactive threshold (the
consumer keeps that timer).  Waits that nats-server sleeps through (the original gaps of a
replay, the rate limiter's delay) are due times here: the message is put back and offered
again when the consumer's ``tick`` reaches the time.
"""

from __future__ import annotations

import random

from jsstore._core.storage.subjects import _subject_matches
from jsstore.consumer import pullrequests
from jsstore.gocompat.durations import MILLISECOND as MS
from jsstore.gocompat.durations import SECOND
from jsstore.wire import headers as header_block
from jsstore.wire.bus import Msg

FLOW_CONTROL_MAX_PENDING = 32 * 1024 * 1024    # JsFlowControlMaxPending
DEFAULT_MAX_PAYLOAD = 1024 * 1024              # the rate limiter's burst without max_msg_size
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
LAST_CONSUMER = "Nats-Last-Consumer"
LAST_STREAM = "Nats-Last-Stream"


class PushDelivery:
    """The push side of one consumer."""

    def __init__(self, consumer):
        self.consumer = consumer        # jsstore.consumer.consumer.Consumer
        cfg = consumer.config
        self.deliver_subject = cfg.deliver_subject or ""
        self.active = False             # something listens on the deliver subject
        self.pending_bytes_limit = 0    # pblimit: the flow control window's ceiling
        self.max_pending_bytes = 0      # maxpb: the window now (0: no flow control)
        self.pending_bytes = 0          # pbytes: bytes sent and not yet flow-controlled
        self.flow_control_size = 0      # fcsz: pending_bytes when the request went out
        self.flow_control_reply = ""    # fcid: the outstanding flow control request's reply
        self.heartbeat_due = 0          # next idle heartbeat
        self.pacing_due = 0             # replay or rate pacing: when to try again
        self.replay = cfg.replay_policy == "original"
        self.replay_last_seq = consumer.stream.store.last_seq if self.replay else 0
        self.replay_last_ts = 0         # timestamp of the last replayed message
        self.replay_sent_at = 0         # when it went out
        self._configure_rate()
        if cfg.flow_control:
            self.pending_bytes_limit = FLOW_CONTROL_MAX_PENDING
            self.max_pending_bytes = max(FLOW_CONTROL_MAX_PENDING // 16, 1)
        self.active = self.has_interest()
        if cfg.idle_heartbeat:
            self.heartbeat_due = consumer.clock() + cfg.idle_heartbeat
            consumer.schedule(self.heartbeat_due)

    def _configure_rate(self) -> None:
        consumer = self.consumer
        bps = consumer.config.rate_limit_bps or 0
        self.rate = bps // 8            # bytes per second (0: unlimited)
        max_size = getattr(consumer.stream.config, "max_msg_size", 0) or 0
        self.burst = max_size if max_size > 0 else DEFAULT_MAX_PAYLOAD
        self.tokens = float(self.burst)
        self.tokens_at = consumer.clock()

    def reconfigure(self, old) -> bool:
        """The consumer's configuration changed from `old`; whether the deliver subject
        moved (what was pending is then redelivered to the new one)."""
        config = self.consumer.config
        if (config.rate_limit_bps or 0) != (old.rate_limit_bps or 0):
            self._configure_rate()
        if config.deliver_subject == old.deliver_subject:
            return False
        self.deliver_subject = config.deliver_subject
        return True

    # -- interest -------------------------------------------------------------------------
    def has_interest(self) -> bool:
        return bool(self.deliver_subject) and self.consumer.bus.has_interest(self.deliver_subject)

    def read_interest(self) -> bool:
        """Whether anyone listens on the deliver subject now (and remember it)."""
        self.active = self.has_interest()
        return self.active

    def delivers_to(self, filter: str) -> bool:
        """Whether a subscription on `filter` may hear this consumer's deliveries."""
        return bool(self.deliver_subject) and _subject_matches(self.deliver_subject, filter)

    def ready(self, now: int) -> bool:
        """Whether a message may go now: no pacing hold, under the flow control window
        (the consumer checks the interest first)."""
        if self.pacing_due and now < self.pacing_due:
            return False
        self.pacing_due = 0
        return not (self.max_pending_bytes > 0 and self.pending_bytes > self.max_pending_bytes)

    # -- pacing ---------------------------------------------------------------------------
    def pace(self, msg, size: int, now: int) -> int:
        """0 to send `msg` now, else when to try again (replay gaps, rate limit)."""
        if self.replay:
            if (self.consumer.next_stream_seq - 1 > self.replay_last_seq
                    and msg.seq > self.replay_last_seq):
                self.replay = False     # caught up: new messages go out at once
            elif self.replay_last_ts:
                gap = msg.ts - self.replay_last_ts
                if gap > MS and now < self.replay_sent_at + gap:
                    self.pacing_due = self.replay_sent_at + gap
                    return self.pacing_due
        if self.rate:
            elapsed = (now - self.tokens_at) / SECOND
            self.tokens = min(float(self.burst), self.tokens + elapsed * self.rate)
            self.tokens_at = now
            need = min(size, self.burst)
            if self.tokens < need:
                self.pacing_due = now + int((need - self.tokens) / self.rate * SECOND) + 1
                return self.pacing_due
            self.tokens -= need
        if self.replay:
            self.replay_last_ts = msg.ts
            self.replay_sent_at = now
        return 0

    def plain(self) -> bool:
        """Whether deliveries go as they come: no replay pacing, rate limit or flow
        control window (the consumer may then deliver in runs)."""
        return not (self.replay or self.rate or self.max_pending_bytes)

    # -- a delivery -------------------------------------------------------------------------
    def sending(self, size: int) -> None:
        """A delivery of `size` bytes is about to go: it counts against the window."""
        if self.max_pending_bytes > 0:
            self.pending_bytes += size

    def sent(self, size: int, now: int) -> None:
        """A delivery went out: ask for flow control when the window says so, and the
        idle heartbeat starts over."""
        if self.max_pending_bytes > 0 and self._need_flow_control(size):
            self._send_flow_control()
        idle_heartbeat = self.consumer.config.idle_heartbeat
        if idle_heartbeat:
            self.heartbeat_due = now + idle_heartbeat
            self.consumer.schedule(self.heartbeat_due)

    # -- heartbeats -----------------------------------------------------------------------
    def tick(self, now: int) -> None:
        """Send the idle heartbeat when due (the consumer re-read the interest first)."""
        consumer = self.consumer
        heartbeat = consumer.config.idle_heartbeat or 0
        if heartbeat and self.heartbeat_due and now >= self.heartbeat_due:
            if self.active:
                consumer.status(self.deliver_subject, pullrequests.idle_heartbeat(
                    consumer.next_delivery_seq - 1, consumer.next_stream_seq - 1,
                    stalled=self.flow_control_reply or None))
                if (consumer.ack_policy == "flow_control" and consumer.ack_state.num_pending
                        and not self.flow_control_reply):
                    self._send_flow_control()
            self.heartbeat_due = now + heartbeat

    def due(self) -> int:
        dues = [d for d in (self.heartbeat_due, self.pacing_due) if d]
        return min(dues) if dues else 0

    # -- flow control ---------------------------------------------------------------------
    def _need_flow_control(self, size: int) -> bool:
        if self.max_pending_bytes == 0:
            return False
        consumer = self.consumer
        if not self.flow_control_reply and self.pending_bytes > self.max_pending_bytes // 2:
            return True
        if (not self.flow_control_reply and consumer.ack_policy == "flow_control"
                and consumer.max_ack_pending > 0
                and consumer.ack_state.num_pending >= consumer.max_ack_pending):
            return True
        if (self.flow_control_reply
                and self.pending_bytes - self.flow_control_size >= self.max_pending_bytes):
            self.flow_control_size += size
        return False

    def _flow_control_subject(self) -> str:
        token = "".join(random.choice(_DIGITS) for _ in range(4))
        return f"$JS.FC.{self.consumer.stream.name}.{self.consumer.name}.{token}"

    def _send_flow_control(self) -> None:
        reply = self._flow_control_subject()
        self.flow_control_size, self.flow_control_reply = self.pending_bytes, reply
        self.consumer.bus.publish(Msg(self.deliver_subject, b"",
                                      pullrequests.flow_control_request(), reply))

    def process_flow_control(self, subject: str, hdr: bytes | None) -> None:
        """A reply on `subject` to a flow control request: open the window (and, with
        the flow_control ack policy, ack up to the sequences its headers name)."""
        consumer = self.consumer
        if consumer.closed or subject != self.flow_control_reply:
            return
        if self.max_pending_bytes < self.pending_bytes_limit:
            self.max_pending_bytes = min(self.max_pending_bytes * 2, self.pending_bytes_limit)
        self.pending_bytes = max(self.pending_bytes - self.flow_control_size, 0)
        self.flow_control_reply, self.flow_control_size = "", 0
        if consumer.ack_policy == "flow_control" and hdr:
            last_delivery_seq = _int_header(hdr, LAST_CONSUMER)
            last_stream_seq = _int_header(hdr, LAST_STREAM)
            if last_stream_seq > 0:
                consumer.acknowledgements.ack(last_stream_seq, max(last_delivery_seq, 0), 1,
                                              sample=False)
        consumer.gather()

def _int_header(hdr: bytes, key: str) -> int:
    value = header_block.get(hdr, key)
    if value is None:
        return 0
    try:
        return int(value.decode() if isinstance(value, bytes) else value)
    except ValueError:
        return 0
