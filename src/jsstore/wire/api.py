"""What the layers share of the JetStream API itself: its subject and response-type
prefixes, the API level and the nats-server release it implements, and nats-server's check
of a request's ``Nats-Required-Api-Level``."""

from __future__ import annotations

from jsstore.wire import headers as header_block

API_PREFIX = "$JS.API."
# a pull request: $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>
PULL_REQUEST_PREFIX = API_PREFIX + "CONSUMER.MSG.NEXT."
# what a stream's capture of a publish returns when it took the message but answers the
# publisher nothing (compared by identity): its store failed to write
# (jsstore.stream.puback.unanswered)
NO_ANSWER = bytes(bytearray(b"(no answer)"))
TYPE_PREFIX = "io.nats.jetstream.api.v1."
API_LEVEL = 5                  # the JetStream API level reported (nats-server 2.15's)
SERVER_VERSION = "2.15.1"      # the nats-server release whose JetStream API this implements
REQUIRED_API_LEVEL = "Nats-Required-Api-Level"
# the header that makes a publish part of an atomic batch (jsstore.stream.batches)
BATCH_ID = "Nats-Batch-Id"
# what every ack reply subject starts with (the ack protocol: jsstore.wire.ackreply)
ACK_PREFIX = "$JS.ACK."
# the status a pull request or direct get gets when that header asks for more
REQUIRED_API_LEVEL_STATUS = b"NATS/1.0 412 Required Api Level\r\n\r\n"

_INT64 = 1 << 63


def api_level_too_high(hdr: bytes | None) -> bool:
    """nats-server's errorOnRequiredApiLevel: a non-empty Nats-Required-Api-Level that is
    not an integer (as Go's strconv.Atoi reads one) or is above API_LEVEL."""
    value = header_block.get(hdr, REQUIRED_API_LEVEL) if hdr else None
    if not value:
        return False
    digits = value[1:] if value[:1] in (b"+", b"-") else value
    if not digits.isdigit():        # (ASCII digits only, as Go's strconv.Atoi takes)
        return True
    level = int(value)
    return not -_INT64 <= level < _INT64 or level > API_LEVEL


def is_plain_ack(subject: str, payload: bytes, reply: str | None) -> bool:
    """An ack that asks for no answer and only acknowledges (what clients send most)."""
    return (not reply and subject.startswith(ACK_PREFIX)
            and (not payload or payload == b"+ACK"))
