"""The store contract: what a stream store and a consumer store must do.

These Protocols are the snake_case of nats-server's ``StreamStore`` and
``ConsumerStore`` interfaces (``server/store.go``).  ``jsstore.FileStore`` and
``jsstore.MemStore`` implement ``StreamStore``; anything else that satisfies the
Protocol can be swapped in under the stream layer.

Conventions shared by every method:

* sequences are ``int`` (unsigned 64-bit), timestamps are ``int`` Unix nanoseconds;
* subjects are ``str``; filters may use ``*`` and ``>``; ``""`` and ``">"`` mean all;
* a filter argument may also be a list of filters (multi-subject filters), which must
  not overlap;
* headers are the raw NATS header block (``b"NATS/1.0\\r\\n...\\r\\n\\r\\n"``) or ``None``;
* errors are the classes of ``jsstore.errors``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Protocol, Sequence, runtime_checkable

FILE_STORAGE = "file"
MEMORY_STORAGE = "memory"


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


@runtime_checkable
class StoredMessage(Protocol):
    subject: str
    hdr: bytes | None
    msg: bytes
    seq: int
    ts: int


@runtime_checkable
class ConsumerStore(Protocol):
    def set_starting(self, sseq: int) -> None: ...
    def update_starting(self, sseq: int) -> None: ...
    def reset(self, sseq: int) -> None: ...
    def has_state(self) -> bool: ...
    def update_delivered(self, dseq: int, sseq: int, dc: int, ts: int) -> None: ...
    def update_acks(self, dseq: int, sseq: int) -> None: ...
    def remove_redelivered_below(self, sseq: int) -> None: ...
    def update_config(self, config: dict) -> None: ...
    def update(self, state: ConsumerState) -> None: ...
    def force_update(self, state: ConsumerState) -> None: ...
    def state(self) -> ConsumerState: ...
    def encoded_state(self) -> bytes: ...
    def type(self) -> str: ...
    def stop(self) -> None: ...
    def delete(self) -> None: ...


@runtime_checkable
class StreamStore(Protocol):
    # -- writing -------------------------------------------------------------
    def store_msg(self, subject: str, hdr: bytes | None, msg: bytes, ttl: int = 0) -> tuple[int, int]:
        """Append at last_seq + 1 with ts = now; returns (seq, ts). Runs the discard-new checks."""

    def store_raw_msg(self, subject: str, hdr: bytes | None, msg: bytes, seq: int, ts: int,
                      ttl: int = 0, discard_new_check: bool = False) -> None: ...
    def store_batch(self, msgs: Iterable[tuple[str, bytes | None, bytes]]) -> tuple[int, int]:
        """Append many messages in one call; returns (first seq, last seq) stored."""

    def skip_msg(self, seq: int = 0) -> int: ...
    def skip_msgs(self, seq: int, num: int) -> None: ...
    def flush_all_pending(self) -> None: ...

    # -- reading -------------------------------------------------------------
    def load_msg(self, seq: int) -> StoredMessage: ...
    def load_next_msg(self, filter: str | Sequence[str], start: int) -> tuple[StoredMessage, int]: ...
    def load_last_msg(self, subject: str) -> StoredMessage: ...
    def load_prev_msg(self, filter: str | Sequence[str], start: int) -> StoredMessage: ...
    def subject_for_seq(self, seq: int) -> str: ...
    def get_seq_from_time(self, ts: int) -> int: ...

    # -- removing ------------------------------------------------------------
    def remove_msg(self, seq: int) -> bool: ...
    def erase_msg(self, seq: int) -> bool: ...
    def purge(self) -> int: ...
    def purge_ex(self, subject: str, seq: int, keep: int) -> int: ...
    def compact(self, seq: int) -> int: ...
    def truncate(self, seq: int) -> None: ...

    # -- state ---------------------------------------------------------------
    def state(self) -> StreamState: ...
    def fast_state(self) -> StreamState: ...
    def filtered_state(self, sseq: int, subject: str) -> SimpleState: ...
    def subjects_state(self, filter: str) -> dict[str, SimpleState]: ...
    def subjects_totals(self, filter: str) -> dict[str, int]: ...
    def num_pending(self, sseq: int, filter: str | Sequence[str], last_per_subject: bool = False) -> tuple[int, int]: ...
    def multi_last_seqs(self, filters: Sequence[str], max_seq: int, max_allowed: int) -> list[int]: ...
    def all_last_seqs(self) -> list[int]: ...
    def utilization(self) -> tuple[int, int]: ...
    def type(self) -> str: ...

    # -- lifecycle -----------------------------------------------------------
    def update_config(self, config) -> None: ...
    def consumer_store(self, name: str, created: int, config: dict) -> ConsumerStore: ...
    def snapshot(self, include_consumers: bool = True) -> Iterator[bytes]: ...
    def stop(self) -> None: ...
    def delete(self) -> None: ...
