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

Plugging in a store.  A *store factory* makes the stream store of every file-storage
stream of a JetStream (``jsstore.open(directory, store_factory=f)``, ``jsstore serve
--store-factory module:callable``); see ``StreamStoreFactory``.  Its store must satisfy
``StreamStore``, the stream layer's direct reads included (the attributes at the top of
the Protocol, and the expiry hooks).  What the JetStream does around a plug-in store:

* the stream's directory is ``<dir>/jetstream/<account>/streams/<name>/`` and belongs to
  the store, except ``meta.inf``/``meta.sum``: the JetStream writes those (nats-server's
  format) before calling the factory for a new stream and again after each successful
  ``update_config``; reopening the directory finds the stream by them and calls the
  factory with the same directory and the stream's configuration, so the store must find
  its messages there again;
* after ``delete()`` the JetStream removes the stream's directory;
* durable consumers are found again by their ``obs/<name>/meta.inf`` files under the
  store's ``directory`` attribute, which jsstore's ``FileConsumerStore`` writes: a store
  whose ``consumer_store`` returns another kind keeps its consumers for the life of the
  process only;
* memory-storage streams always get jsstore's ``MemStore`` (the factory is for what is
  kept in the directory); a snapshot of a plug-in store is taken from its messages
  (``load_next_msg``) without its consumers; a restore into a file stream goes through the
  factory: the messages are copied into the new store, the snapshot's consumers are not
  restored.

``jsstore.testing.StreamStoreContract`` runs this contract's tests against a store.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Protocol, Sequence, Sized, runtime_checkable

# the values the contract returns live in jsstore.state, beneath the Cython core that builds them
from jsstore.state import (
    ConsumerState,
    LostStreamData,
    Pending,
    SequencePair,
    SimpleState,
    StreamState,
)
from jsstore.store.config import StoreConfig, StoreOptions

FILE_STORAGE = "file"
MEMORY_STORAGE = "memory"


@runtime_checkable
class StoredMessage(Protocol):
    subject: str
    hdr: bytes | None
    msg: bytes
    seq: int
    ts: int


@runtime_checkable
class ConsumerStore(Protocol):
    def set_starting(self, stream_seq: int) -> None: ...
    def update_starting(self, stream_seq: int) -> None: ...
    def reset(self, stream_seq: int) -> None: ...
    def has_state(self) -> bool: ...
    def update_delivered(self, delivery_seq: int, stream_seq: int, deliveries: int,
                         delivered_at: int) -> None: ...
    def update_acks(self, delivery_seq: int, stream_seq: int) -> None: ...
    def remove_redelivered_below(self, stream_seq: int) -> None: ...
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
    # -- what the stream layer reads directly (kept current by every change) ----
    first_seq: int          # first live sequence (last_seq + 1 when empty, 0 if never used)
    last_seq: int
    msgs: int               # live messages
    bytes: int              # their size as the store counts it (what max_bytes limits)
    first_ts: int           # the first live message's timestamp (0 when empty)

    # -- expiry: the stream layer drives it ------------------------------------
    max_age: int            # ns; the stream layer sets 0 when it expires by age itself
    defer_ttl_expiry: bool  # True: expire_msgs leaves TTL'd messages to the stream layer
    next_ttl_expiry: int    # ns of the next per-message TTL due (INT64_MAX when none)
    ttls: Sized             # the scheduled per-message TTLs (len() = how many)

    def expire_msgs(self) -> int:
        """Remove what max_age (and, unless deferred, per-message TTLs) says has expired
        at the wall clock's now; returns how many."""

    def remove_msg_via_limits(self, seq: int) -> bool:
        """remove_msg for a removal by limits (nats-server writes no tombstone for it)."""

    def pop_due_ttls(self, now: int) -> list[int]:
        """Take the sequences whose TTL has run out at `now` off the schedule."""

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


class StreamStoreFactory(Protocol):
    """Makes the stream store of a file-storage stream: called with the stream's own
    directory (it may not exist yet; meta.inf is already there when it does), the storage
    view of the stream's configuration and the JetStream's StoreOptions (None: defaults).
    Called when a stream is created, restored from a snapshot, and for each stream found
    again when its directory is reopened."""

    def __call__(self, directory: str, config: StoreConfig,
                 options: StoreOptions | None) -> StreamStore: ...
