"""What the publish path hands around: a message that passed the checks (``Prepared``), and
the answers a publisher gets (``PubAck`` and the error form), as nats-server writes them."""

from __future__ import annotations

import msgspec

from jsstore.deferred import deferred
from jsstore.errors import WriteError
from jsstore.gocompat import json as gojson

# the API errors (a generated table of some 230 classes) load with the first error
api_errors = deferred("jsstore.wire.apierrors")


class PubAck(msgspec.Struct, omit_defaults=True):
    """The answer to a stored publish: the stream and the message's sequence."""
    stream: str
    seq: int
    duplicate: bool = False        # a Nats-Msg-Id seen inside the window: seq is the original
    domain: str | None = None      # the JetStream domain, when one is configured
    val: str | None = None         # a counter's new total (decimal text)
    batch: str | None = None       # a committed atomic batch's id
    count: int = 0                 # and how many messages it stored

    def to_json(self) -> bytes:
        """The PubAck as nats-server writes it (its duplicate form has a space after the
        colon)."""
        head = b'{"stream":' + gojson.encode(self.stream)
        if self.domain:
            head += b',"domain":' + gojson.encode(self.domain)
        head += b',"seq":' + str(self.seq).encode()
        if self.duplicate:
            return head + b',"duplicate": true}'
        if self.val is not None:
            head += b',"val":' + gojson.encode(self.val)
        if self.batch is not None:
            head += b',"batch":' + gojson.encode(self.batch) + b',"count":' + str(self.count).encode()
        return head + b"}"


def pub_error_json(stream: str, error: api_errors.ApiError) -> bytes:
    """A rejected publish's answer: the error, then the stream with sequence 0."""
    return (b'{"error":' + gojson.encode(error.to_dict()) + b',"stream":'
            + gojson.encode(stream) + b',"seq":0}')


def unanswered(error: api_errors.ApiError) -> bool:
    """Whether a publish that failed with `error` goes unanswered: nats-server (2.15) sends
    the publisher nothing when its store fails to write the message (a critical write
    error: out of space, an I/O error), neither then nor for any publish after it until
    the stream is reloaded; the publisher's request times out."""
    return isinstance(error.__cause__, WriteError)


class Prepared:
    """A message that passed the publish checks, ready to store."""
    __slots__ = ("subject", "hdr", "payload", "ttl", "msg_id", "rollup", "duplicate_seq",
                 "counter", "schedule", "scheduler_purge")

    def __init__(self, subject: str, hdr: bytes | None, payload: bytes, ttl: int = 0,
                 msg_id: str = "", rollup: str | None = None, duplicate_seq: int | None = None):
        self.subject = subject
        self.hdr = hdr                  # the header block to store (a raised TTL rewritten)
        self.payload = payload
        self.ttl = ttl                  # seconds; 0 none, -1 never
        self.msg_id = msg_id            # Nats-Msg-Id ("" none)
        self.rollup = rollup            # None, "sub" or "all"
        self.duplicate_seq = duplicate_seq  # set: answer duplicate, store nothing
        self.counter = None             # counters.CounterUpdate of a counter publish
        self.schedule = None            # schedules.Schedule of a schedule message
        self.scheduler_purge = None     # the schedule subject a fired one-shot purges
