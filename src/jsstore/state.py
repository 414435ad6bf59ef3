"""The values a store reports: stream and consumer state, as nats-server's ``server/store.go``
declares them.  A leaf module (no imports of jsstore): the Cython core builds these, the store
contract returns them, the stream and consumer layers read them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class SimpleState:
    """Count, first and last sequence of the messages matching a filter (nats ``SimpleState``)."""

    msgs: int = 0
    first: int = 0
    last: int = 0


@dataclass(slots=True)
class LostStreamData:
    msgs: list[int] = field(default_factory=list)
    bytes: int = 0


@dataclass(slots=True)
class StreamState:
    """nats-server's ``StreamState``; field names are its JSON names."""

    messages: int = 0
    bytes: int = 0
    first_seq: int = 0
    first_ts: int = 0
    last_seq: int = 0
    last_ts: int = 0
    num_subjects: int = 0
    num_deleted: int = 0
    deleted: list[int] | None = None
    lost: LostStreamData | None = None
    consumer_count: int = 0
    subjects: dict[str, int] | None = None


@dataclass(slots=True)
class SequencePair:
    consumer_seq: int = 0
    stream_seq: int = 0


@dataclass(slots=True)
class Pending:
    sequence: int  # the delivery (consumer) sequence
    timestamp: int  # Unix ns of the last delivery


@dataclass(slots=True)
class ConsumerState:
    delivered: SequencePair = field(default_factory=SequencePair)
    ack_floor: SequencePair = field(default_factory=SequencePair)
    pending: dict[int, Pending] | None = None  # stream seq -> Pending
    redelivered: dict[int, int] | None = None  # stream seq -> redelivery count
