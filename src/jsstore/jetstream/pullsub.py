"""The embedded pull interface: fetch messages from a consumer and acknowledge them.

    sub = js.pull_subscribe("orders.*", "DISPATCH", stream="ORDERS")
    for msg in sub.fetch(100, timeout=1.0):
        handle(msg.data)
        msg.ack()                   # or msg.nak(delay=5), msg.in_progress(), msg.term("bad")
    msg.metadata.sequence.stream, msg.metadata.num_delivered, msg.metadata.num_pending

``fetch`` sends one pull request for ``batch`` messages and returns what the consumer
delivers for it.  When nothing is there yet it waits up to ``timeout`` seconds for the
first message on the wall clock; with a clock of the caller's own it does not wait (drive
time with ``js.tick``).  It raises ``TimeoutError`` when no message came, as nats-py does.
"""

from __future__ import annotations

import threading

import msgspec

from jsstore.gocompat.durations import SECOND
from jsstore.gocompat.times import rfc3339_nano
from jsstore.wire.headers import decode_headers


class SequencePair(msgspec.Struct, frozen=True):
    stream: int
    consumer: int


class MsgMetadata(msgspec.Struct, frozen=True):
    """What a delivered message's ack subject tells (nats-py's Msg.Metadata)."""
    sequence: SequencePair
    num_delivered: int
    num_pending: int
    timestamp: int                  # Unix ns the message was stored
    stream: str
    consumer: str
    domain: str | None = None


class JsMsg:
    """A message delivered by a consumer, with its acknowledgement methods."""

    __slots__ = ("subject", "data", "hdr", "reply", "_js", "_consumer", "_stream_seq",
                 "_delivery_seq", "_deliveries", "_ts", "_pending", "_acked")

    def __init__(self, js, consumer, msg, meta):
        self.subject = msg.subject
        self.data = msg.data
        self.hdr = msg.hdr
        self.reply = msg.reply
        self._js = js
        self._consumer = consumer
        self._stream_seq, self._delivery_seq, self._deliveries, self._ts, self._pending = meta
        self._acked = False

    @property
    def headers(self) -> dict[str, str] | None:
        return decode_headers(self.hdr)

    @property
    def metadata(self) -> MsgMetadata:
        c = self._consumer
        return MsgMetadata(SequencePair(self._stream_seq, self._delivery_seq), self._deliveries,
                           self._pending, self._ts, c.stream.name, c.name)

    @property
    def timestamp(self) -> str:
        return rfc3339_nano(self._ts)

    def _settle(self) -> None:
        if self._acked:
            raise ValueError("message was already acknowledged")
        self._acked = True

    def ack(self) -> bool:
        """+ACK. Returns whether the consumer applied it (a stale ack is ignored)."""
        self._settle()
        with self._js.lock:
            return self._consumer.acknowledgements.ack(self._stream_seq, self._delivery_seq,
                                                       self._deliveries)

    ack_sync = ack   # the embedded ack is applied before it returns (a "double ack")

    def nak(self, delay: float | None = None) -> None:
        """-NAK: redeliver now, or after `delay` seconds."""
        self._settle()
        with self._js.lock:
            self._consumer.acknowledgements.nak(
                self._stream_seq, self._delivery_seq, self._deliveries,
                None if delay is None else int(delay * SECOND))

    def in_progress(self) -> None:
        """+WPI: still working on it; the ack wait starts again (may be repeated)."""
        if self._acked:
            raise ValueError("message was already acknowledged")
        with self._js.lock:
            self._consumer.acknowledgements.progress(self._stream_seq)

    def term(self, reason: str = "") -> None:
        """+TERM: never redeliver."""
        self._settle()
        with self._js.lock:
            self._consumer.acknowledgements.terminate(self._stream_seq, self._delivery_seq,
                                                      self._deliveries, reason)

    def __repr__(self) -> str:
        return f"JsMsg(subject={self.subject!r}, seq={self._stream_seq}, data={self.data[:32]!r})"


class PullSubscription:
    """A pull consumer bound for fetching."""

    def __init__(self, js, stream: str, consumer: str, *, ephemeral: bool = False):
        self._js = js
        self.stream = stream
        self.consumer = consumer
        self._ephemeral = ephemeral
        self._inboxes = 0

    def fetch(self, batch: int = 1, timeout: float | None = 5.0) -> list[JsMsg]:
        """Up to `batch` messages; TimeoutError when none came within `timeout` seconds."""
        if batch < 1:
            raise ValueError("batch must be at least 1")
        js = self._js
        got: list[JsMsg] = []
        arrived = threading.Event()
        woken: list[bool] = []         # set the event once, not per message
        timeout_ns = int((timeout or 0) * SECOND)
        self._inboxes += 1
        inbox = f"_INBOX.fetch.{self.stream}.{self.consumer}.{self._inboxes}"

        with js.lock:
            consumer = js.consumers.lookup_locked(self.stream, self.consumer)

            def sink(msg, meta=None):
                if meta is not None:
                    got.append(JsMsg(js, consumer, msg, meta))
                if not woken:
                    woken.append(True)
                    arrived.set()
            body = (b'{"batch":%d,"expires":%d}' % (batch, timeout_ns) if timeout_ns
                    else b'{"batch":%d,"no_wait":true}' % batch)
            wr = consumer.request_next(inbox, body, sink=sink)
            if wr is None or got or not js.wall_clock or not timeout_ns:
                if wr is not None:
                    consumer.pull.cancel_request(wr)
                return self._result(got)
        arrived.wait(timeout_ns / SECOND)
        with js.lock:
            consumer.pull.cancel_request(wr)
            return self._result(got)

    @staticmethod
    def _result(got: list[JsMsg]) -> list[JsMsg]:
        if not got:
            raise TimeoutError("no messages")
        return got

    def consumer_info(self):
        return self._js.consumer_info(self.stream, self.consumer)

    def unsubscribe(self) -> None:
        """Stop; an ephemeral consumer made for this subscription is deleted."""
        if self._ephemeral:
            try:
                self._js.delete_consumer(self.stream, self.consumer)
            except Exception:  # noqa: BLE001 - already gone is fine
                pass
