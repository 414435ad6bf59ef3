"""The consumer ack protocol as nats-server 2.15 speaks it: ack reply subjects and ack
payloads.

Every message a consumer delivers carries a reply subject the client acks to:

* v1 (what nats-server 2.15 sends by default):
  ``$JS.ACK.<stream>.<consumer>.<numbers>``
* v2 (feature flag ``js_ack_fc_v2``):
  ``$JS.ACK.<domain or _>.<account hash>.<stream>.<consumer>.<numbers>``
  where the account hash is nats-server's getHash of the account name (``$G`` without
  accounts); a v2 subject may carry more tokens after these, which are ignored.

The numbers are ``<delivered count>.<stream seq>.<consumer seq>.<timestamp ns>.<num
pending>``.

`AckSubjects` builds them (once per delivered message, so it only concatenates a prefix
made up front). `ack_reply_info` reads one back as nats-server's ``ackReplyInfo`` does:
the subject must be exactly 9 tokens, or at least 11, starting ``$JS.ACK``, or every
number is 0 (and a stream seq of 0 means "not an ack": no double-ack reply). A number
token that is empty or has anything but ASCII digits reads as -1, which the unsigned
fields see as 2**64-1 (so such an ack is past anything delivered and is ignored) and the
timestamp as -1; digits past 2**64 wrap as Go's int64 arithmetic does.

The ack payload (the message body, without headers) is read by `parse_ack`, following
``processAck``:

* empty, ``+ACK`` or ``+OK`` exactly: ack;
* ``+NXT`` and anything after it: ack, then the rest (untrimmed here) is a pull request
  body answered to the ack message's reply subject (`pullrequests.parse_request`);
* ``-NAK`` and anything after it: redeliver. What follows, trimmed as bytes.TrimSpace
  does (no space is required: ``-NAK5s`` works), is a delay: a JSON object
  ``{"delay": <ns>}`` (Go's encoding/json; ``{}`` or a null delay is a delay of 0) or a
  Go duration (``1m30s``, negative allowed). A delay that does not parse makes it a
  plain NAK (nats-server only logs a warning). A delay, even 0 or negative, is kept as a
  delay: nats-server then sets the pending timestamp to now - AckWait + delay, so the
  message is redelivered by the ack timer once `delay` has passed (at once when it is 0
  or less), instead of going straight onto the redelivery queue as a plain NAK does;
* ``+WPI`` exactly: work in progress (the ack timer restarts);
* ``+TERM`` and anything after it: terminate; the rest, trimmed, is the reason
  (``+TERMfoo`` has the reason "foo");
* anything else (``+ACK `` with a trailing space, ``+WPI2``, ``ACK``): nothing is done,
  but the double-ack reply below is still sent.

The double ack: when the ack message has a reply subject, nats-server answers it with an
empty message (`sends_reply`): never for ``+NXT`` or when the subject's stream seq reads
as 0; for an ack or a TERM once the ack was applied (its stream seq is below the next one
to deliver, the consumer is open, and it is not an ack-none consumer of a limits stream);
for NAK, WPI and unknown payloads always.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from jsstore.deferred import deferred
from jsstore.gocompat import json as gojson
from jsstore.gocompat.durations import parse_go_duration
from jsstore.gocompat.text import trim_space, valid_text
from jsstore.wire.api import ACK_PREFIX

hashlib = deferred("hashlib")       # for v2 subjects' account hashes only

NO_DOMAIN = "_"                      # the domain token of a v2 subject without a domain
GLOBAL_ACCOUNT = "$G"                # the account of a server without accounts

V1_TOKENS = 9
V2_TOKENS = 11
_UINT64 = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1
_HASH_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HASH_LENGTH = 8


def account_hash(account: str) -> str:
    """nats-server's getHash of an account name: the first 8 bytes of its SHA-256, each
    mapped to one of 62 letters and digits."""
    digest = hashlib.sha256(account.encode("utf-8", "surrogateescape")).digest()
    return "".join(_HASH_DIGITS[byte % 62] for byte in digest[:_HASH_LENGTH])


class AckSubjects:
    """The ack reply subjects of one consumer: the prefix is made once and each
    `subject` call only appends the five numbers.

        subjects = AckSubjects("ORDERS", "worker")            # v1
        subjects = AckSubjects("ORDERS", "worker", v2=True)   # v2, no domain, account $G
        subjects.subject(delivered, stream_seq, consumer_seq, timestamp_ns, pending)
    """

    __slots__ = ("prefix", "stream", "consumer", "_template")

    def __init__(self, stream: str, consumer: str, *, v2: bool = False,
                 domain: str | None = None, account: str = GLOBAL_ACCOUNT):
        self.stream = stream
        self.consumer = consumer
        if v2:
            self.prefix = (f"{ACK_PREFIX}{domain or NO_DOMAIN}.{account_hash(account)}."
                           f"{stream}.{consumer}.")
        else:
            self.prefix = f"{ACK_PREFIX}{stream}.{consumer}."
        # a %-template (names may hold "%", escaped) is the quickest way to append numbers
        self._template = self.prefix.replace("%", "%%") + "%d.%d.%d.%d.%d"

    def subject(self, delivered: int, stream_seq: int, consumer_seq: int, timestamp: int,
                pending: int) -> str:
        """The reply subject of one delivery: how many times it was delivered, its stream
        and consumer sequences, its stored time (Unix ns) and what was still pending."""
        return self._template % (delivered, stream_seq, consumer_seq, timestamp, pending)

    def __repr__(self) -> str:
        return f"AckSubjects({self.prefix!r})"


def ack_subject(stream: str, consumer: str, delivered: int, stream_seq: int,
                consumer_seq: int, timestamp: int, pending: int) -> str:
    """One v1 ack reply subject (use `AckSubjects` to make many)."""
    return (f"{ACK_PREFIX}{stream}.{consumer}.{delivered}.{stream_seq}.{consumer_seq}."
            f"{timestamp}.{pending}")


def _number(token: str) -> int:
    """parseAckReplyNum: the token's ASCII digits as Go's int64 would hold them (wrapping),
    -1 when it is empty or has anything else."""
    if not token.isdigit() or not token.isascii():
        return -1
    value = int(token) & _UINT64
    return value - (1 << 64) if value > _INT64_MAX else value


_NOT_AN_ACK = (0, 0, 0, 0, 0)


def ack_reply_info(subject: str) -> tuple[int, int, int, int, int]:
    """nats-server's ackReplyInfo: (stream seq, consumer seq, delivered count, timestamp,
    pending) of an ack subject, all 0 when it is not laid out as one. Bad numbers read
    as 2**64-1 (the timestamp as -1)."""
    tokens = subject.split(".")
    count = len(tokens)
    if count == V1_TOKENS:
        at = 2
    elif count >= V2_TOKENS:
        at = 4
    else:
        return _NOT_AN_ACK
    if tokens[0] != "$JS" or tokens[1] != "ACK":
        return _NOT_AN_ACK
    delivered, stream_seq, consumer_seq, timestamp, pending = tokens[at + 2:at + 7]
    if (delivered.isdigit() and stream_seq.isdigit() and consumer_seq.isdigit()
            and timestamp.isdigit() and pending.isdigit()
            and (delivered + stream_seq + consumer_seq + timestamp + pending).isascii()):
        # the usual case: all five in range (no wrapping to do)
        values = (int(stream_seq), int(consumer_seq), int(delivered), int(timestamp),
                  int(pending))
        if values[3] <= _INT64_MAX and max(values) <= _UINT64:
            return values
    return (_number(stream_seq) & _UINT64, _number(consumer_seq) & _UINT64,
            _number(delivered) & _UINT64, _number(timestamp), _number(pending) & _UINT64)


class AckSubject(NamedTuple):
    """An ack reply subject taken apart (`parse_ack_subject`)."""

    stream: str
    consumer: str
    delivered: int                  # times delivered (1 the first time)
    stream_seq: int
    consumer_seq: int
    timestamp: int                  # the message's stored time, Unix ns
    pending: int                    # messages still pending for the consumer then
    domain: str | None = None       # v2 only: the JetStream domain token ("_" for none)
    account_hash: str | None = None  # v2 only
    extra: tuple[str, ...] = ()     # v2 only: tokens after the nine fields


def parse_ack_subject(subject: str) -> AckSubject | None:
    """An ack reply subject with its names, as `ack_reply_info` reads its numbers; None
    when nats-server would not take it for one. Round trip: a subject `AckSubjects` built
    from in-range numbers (timestamp >= 0) parses back to them."""
    tokens = subject.split(".")
    count = len(tokens)
    if (count != V1_TOKENS and count < V2_TOKENS) or tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    at = 4 if count >= V2_TOKENS else 2
    numbers = [_number(token) for token in tokens[at + 2:at + 7]]
    delivered, stream_seq, consumer_seq, timestamp, pending = numbers
    if at == 2:
        return AckSubject(tokens[2], tokens[3], delivered & _UINT64, stream_seq & _UINT64,
                          consumer_seq & _UINT64, timestamp, pending & _UINT64)
    return AckSubject(tokens[4], tokens[5], delivered & _UINT64, stream_seq & _UINT64,
                      consumer_seq & _UINT64, timestamp, pending & _UINT64,
                      domain=tokens[2], account_hash=tokens[3], extra=tuple(tokens[11:]))


# -- ack payloads ---------------------------------------------------------------------------
class AckKind(str, enum.Enum):
    """What an ack payload asks for."""

    ACK = "ack"
    NAK = "nak"
    PROGRESS = "progress"           # +WPI
    NEXT = "next"                   # +NXT: ack, then a pull request
    TERM = "term"
    UNKNOWN = "unknown"             # anything else: ignored (but still answered)


ACK, NAK, PROGRESS, NEXT, TERM, UNKNOWN = (AckKind.ACK, AckKind.NAK, AckKind.PROGRESS,
                                           AckKind.NEXT, AckKind.TERM, AckKind.UNKNOWN)


class Ack(NamedTuple):
    """One decoded ack payload."""

    kind: AckKind
    delay: int | None = None        # NAK: ns to wait before redelivery; None for a plain NAK
    reason: str = ""                # TERM: the reason given (invalid UTF-8 as U+FFFD)
    next_request: bytes | None = None  # NEXT: the pull request body after "+NXT"


ACKED = Ack(ACK)
PLAIN_NAK = Ack(NAK)
IN_PROGRESS = Ack(PROGRESS)
TERMINATED = Ack(TERM)
IGNORED = Ack(UNKNOWN)

_ACK_ACK = b"+ACK"
_ACK_OK = b"+OK"
_ACK_NAK = b"-NAK"
_ACK_PROGRESS = b"+WPI"
_ACK_NEXT = b"+NXT"
_ACK_TERM = b"+TERM"
_NAK_OPTIONS = gojson.struct("server.ConsumerNakOptions", {"delay": gojson.DURATION})


def _nak(payload: bytes) -> Ack:
    """processNak's reading of the delay after "-NAK"."""
    argument = trim_space(payload[4:])
    if not argument:
        return PLAIN_NAK
    try:
        if argument[0] == 0x7B:
            delay = gojson.unmarshal(argument, _NAK_OPTIONS).get("delay", 0)
        else:
            delay = parse_go_duration(argument)
    except ValueError:             # GoJSONError is one
        return PLAIN_NAK
    return Ack(NAK, delay)


def parse_ack(payload: bytes) -> Ack:
    """What an ack payload (the body, headers excluded) asks for, as processAck reads it;
    never raises. See the module notes for every form."""
    if not payload or payload == _ACK_ACK or payload == _ACK_OK:
        return ACKED
    head = payload[:4]
    if head == _ACK_NEXT:
        return Ack(NEXT, next_request=bytes(payload[4:]))
    if head == _ACK_NAK:
        return _nak(payload) if len(payload) > 4 else PLAIN_NAK
    if payload == _ACK_PROGRESS:
        return IN_PROGRESS
    if payload[:5] == _ACK_TERM:
        reason = trim_space(payload[5:])
        return Ack(TERM, reason=valid_text(reason)) if reason else TERMINATED
    return IGNORED


def sends_reply(ack: Ack, stream_seq: int, applied: bool) -> bool:
    """Whether nats-server answers an ack message that has a reply subject with an empty
    message: never for +NXT or when the ack subject's stream seq read as 0; for an ack or
    a TERM when the ack was `applied` (not dropped as past the next sequence to deliver,
    on a closed consumer, or on an ack-none consumer of a limits stream); otherwise
    always."""
    if stream_seq == 0:
        return False
    kind = ack.kind
    if kind is NEXT:
        return False
    if kind is ACK or kind is TERM:
        return applied
    return True
