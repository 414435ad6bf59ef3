"""The consumer events beyond jsstore.stream.advisories: pause, pinning and ack samples.

Same conventions as ``jsstore.stream.advisories`` (typed-event head, nats-server's field order,
``omitempty`` fields left out, ``(subject, json_bytes)`` from every builder):

    pause / resume     $JS.EVENT.ADVISORY.CONSUMER.PAUSE.<stream>.<consumer>     consumer_pause
    pinned             $JS.EVENT.ADVISORY.CONSUMER.PINNED.<stream>.<consumer>    consumer_group_pinned
    unpinned           $JS.EVENT.ADVISORY.CONSUMER.UNPINNED.<stream>.<consumer>  consumer_group_unpinned
    ack sample         $JS.EVENT.METRIC.CONSUMER.ACK.<stream>.<consumer>         (metric) consumer_ack
"""

from __future__ import annotations

import msgspec

from jsstore.gocompat import json as gojson
from jsstore.gocompat.times import rfc3339_nano
from jsstore.stream.advisories import (
    ACCOUNT,
    ADVISORY_PREFIX,
    ADVISORY_TYPE_PREFIX,
    _timestamp,
    next_id,
)

METRIC_PREFIX = "$JS.EVENT.METRIC"
PAUSE_TYPE = ADVISORY_TYPE_PREFIX + "consumer_pause"
PINNED_TYPE = ADVISORY_TYPE_PREFIX + "consumer_group_pinned"
UNPINNED_TYPE = ADVISORY_TYPE_PREFIX + "consumer_group_unpinned"
ACK_METRIC_TYPE = "io.nats.jetstream.metric.v1.consumer_ack"


class ConsumerPause(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    consumer: str
    paused: bool               # always written (Go has no omitempty on it)
    pause_until: str = ""
    domain: str = ""


class GroupPinned(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    account: str = ""
    stream: str
    consumer: str
    domain: str = ""
    group: str
    pinned_id: str


class GroupUnpinned(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    account: str = ""
    stream: str
    consumer: str
    domain: str = ""
    group: str
    reason: str                # "timeout" or "admin"


class AckMetric(msgspec.Struct, omit_defaults=True, kw_only=True):
    type: str
    id: str
    timestamp: str
    stream: str
    consumer: str
    consumer_seq: int
    stream_seq: int
    ack_time: int              # ns from the delivery to the ack
    deliveries: int
    domain: str = ""


def pause_subject(stream: str, consumer: str) -> str:
    return f"{ADVISORY_PREFIX}.CONSUMER.PAUSE.{stream}.{consumer}"


def ack_metric_subject(stream: str, consumer: str) -> str:
    return f"{METRIC_PREFIX}.CONSUMER.ACK.{stream}.{consumer}"


def consumer_pause(stream: str, consumer: str, pause_until: int, *, now: int,
                   domain: str = "") -> tuple[str, bytes]:
    """Paused until `pause_until` (Unix ns; 0 = no pause set), or resumed."""
    event = ConsumerPause(type=PAUSE_TYPE, id=next_id(), timestamp=_timestamp(now),
                          stream=stream, consumer=consumer, paused=now < pause_until,
                          pause_until=rfc3339_nano(pause_until) if pause_until else "",
                          domain=domain)
    return pause_subject(stream, consumer), gojson.encode(event)


def group_pinned(stream: str, consumer: str, group: str, pin_id: str, *, now: int,
                 account: str = ACCOUNT, domain: str = "") -> tuple[str, bytes]:
    event = GroupPinned(type=PINNED_TYPE, id=next_id(), timestamp=_timestamp(now),
                        account=account, stream=stream, consumer=consumer, domain=domain,
                        group=group, pinned_id=pin_id)
    return f"{ADVISORY_PREFIX}.CONSUMER.PINNED.{stream}.{consumer}", gojson.encode(event)


def group_unpinned(stream: str, consumer: str, group: str, reason: str, *, now: int,
                   account: str = ACCOUNT, domain: str = "") -> tuple[str, bytes]:
    event = GroupUnpinned(type=UNPINNED_TYPE, id=next_id(), timestamp=_timestamp(now),
                          account=account, stream=stream, consumer=consumer, domain=domain,
                          group=group, reason=reason)
    return f"{ADVISORY_PREFIX}.CONSUMER.UNPINNED.{stream}.{consumer}", gojson.encode(event)


def ack_metric(stream: str, consumer: str, consumer_seq: int, stream_seq: int,
               ack_time: int, deliveries: int, *, now: int,
               domain: str = "") -> tuple[str, bytes]:
    """One sampled acknowledgement: how long after its delivery the message was acked."""
    event = AckMetric(type=ACK_METRIC_TYPE, id=next_id(), timestamp=_timestamp(now),
                      stream=stream, consumer=consumer, consumer_seq=consumer_seq,
                      stream_seq=stream_seq, ack_time=ack_time, deliveries=deliveries,
                      domain=domain)
    return ack_metric_subject(stream, consumer), gojson.encode(event)
