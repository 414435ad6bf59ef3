"""Atomic batch publish (streams with allow_atomic): the staging side, as nats-server 2.15.

A batch is a run of publishes with `Nats-Batch-Id: <id>` (at most 64 characters) and
`Nats-Batch-Sequence: 1, 2, ...`; the last one carries `Nats-Batch-Commit: 1` (stored with
the batch) or `Nats-Batch-Commit: eob` (end of batch: not stored; the last staged message
gets `Nats-Batch-Commit: 1` appended instead). Every staged message is answered with an
empty message; the commit with a PubAck `{"stream":S,"seq":<last>,"batch":id,"count":n}`
(`batch_pub_ack`; no "val" even on counter streams).

`BatchRegistry.stage` checks one batch message, in nats-server's order:
 1. stream without allow_atomic            -> JSAtomicPublishDisabledErr (10174)
 2. id longer than 64                      -> JSAtomicPublishInvalidBatchIDErr (10179)
 3. Nats-Batch-Sequence absent/not digits  -> JSAtomicPublishMissingSeqErr (10175)
    (the batch, if any, is left as it is)
 4. unknown id and sequence other than 1   -> JSAtomicPublishIncompleteBatchErr (10176)
 5. unknown id, and the stream already has max_inflight_per_stream batches, or the
    server max_inflight_total                -> JSAtomicPublishTooManyInflight (10210)
 6. Nats-Batch-Commit present (even empty) and neither "1" nor "eob"
                                           -> JSAtomicPublishInvalidBatchCommitErr (10200)
 7. Nats-Required-Api-Level above ours     -> JSRequiredApiLevelErr (10185), advisory
    reason "unsupported"; the header is removed from the staged message otherwise
 8. sequence not the next one              -> JSAtomicPublishIncompleteBatchErr, "incomplete"
 9. sequence above max_msgs                -> JSAtomicPublishTooLargeBatchErrF(size=max_msgs),
    advisory reason "large"
10. `eob` with nothing staged              -> JSAtomicPublishIncompleteBatchErr, "incomplete"
From step 6 on, an error discards the batch. A batch with no message for `timeout_ns` is
abandoned (reason "timeout"). Discarded batches whose reason is given above are reported
by `take_abandoned()` for the `$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.<stream>` advisory
({"type":"io.nats.jetstream.advisory.v1.stream_batch_abandoned","id","timestamp","stream",
"batch","reason"}).

The commit (for the lead's publish path). With the stream locked, every staged message is
checked in batch order, and the first failure rejects the whole batch (nothing is stored,
the error goes to the commit's reply, no advisory):
  a. `Nats-Expected-Last-Msg-Id` -> JSAtomicPublishUnsupportedHeaderBatchErr(header=
     "Nats-Expected-Last-Msg-Id")                                   (`BatchView.check`)
  b. the ordinary header checks of `pubchecks.check_headers` (Nats-Incr checks,
     Expected-Stream, TTL, ...), except that:
     - `Nats-Expected-Last-Sequence` is only allowed on the first message (checked
       against the stream's last sequence -> 10071 "wrong last sequence: <last>"); on a
       later one -> JSStreamWrongLastSequenceConstantErr (10164)     (`BatchView.check`)
     - `Nats-Expected-Last-Subject-Sequence` on a subject an earlier message of the batch
       was written to -> 10164; otherwise checked against the store (10071 with the
       stored sequence)                                              (`BatchView.check`)
     - a Msg-Id seen earlier in the batch, or in the stream's dedupe window ->
       JSAtomicPublishContainsDuplicateMessageErr (10201): no "duplicate" ack in a batch
  c. counters accumulate inside the batch: the total of a subject written earlier in the
     batch is the running one (`BatchView.counter` / `set_counter`)
  d. then sizes, limits (discard new counts the messages staged before it), TTLs, and the
     store; messages get consecutive sequences, and the ack carries the last one.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from jsstore.gocompat.durations import SECOND
from jsstore.stream.counters import Sources
from jsstore.wire import headers
from jsstore.wire.api import API_LEVEL, BATCH_ID, REQUIRED_API_LEVEL
from jsstore.wire.apierrors import (
    JSAtomicPublishContainsDuplicateMessageErr,
    JSAtomicPublishDisabledErr,
    JSAtomicPublishIncompleteBatchErr,
    JSAtomicPublishInvalidBatchCommitErr,
    JSAtomicPublishInvalidBatchIDErr,
    JSAtomicPublishMissingSeqErr,
    JSAtomicPublishTooLargeBatchErrF,
    JSAtomicPublishTooManyInflight,
    JSAtomicPublishUnsupportedHeaderBatchErr,
    JSRequiredApiLevelErr,
    JSStreamWrongLastSequenceConstantErr,
    JSStreamWrongLastSequenceErrF,
)

BATCH_SEQ = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJECT_SEQ_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"
MSG_ID = "Nats-Msg-Id"
MAX_BATCH_ID_LEN = 64
COMMIT_STORE = b"1"  # commit, and store this message with the batch
COMMIT_END = b"eob"  # commit without storing this message
ABANDONED_TIMEOUT = "timeout"
ABANDONED_INCOMPLETE = "incomplete"
ABANDONED_LARGE = "large"
ABANDONED_UNSUPPORTED = "unsupported"


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """Server limits (`jetstream { limits { batch { ... } } }`)."""

    max_msgs: int = 1000  # messages per batch
    max_inflight_per_stream: int = 50  # open batches per stream
    max_inflight_total: int = 1000  # open batches in the server
    timeout_ns: int = 10 * SECOND  # inactivity before a batch is abandoned


@dataclass(frozen=True, slots=True)
class StagedMsg:
    """One message of a batch as it will be stored."""

    subject: str
    hdr: bytes | None
    payload: bytes


@dataclass(frozen=True, slots=True)
class Staged:
    """The message was staged: answer with an empty message."""

    batch_id: str
    seq: int  # its Nats-Batch-Sequence


@dataclass(frozen=True, slots=True)
class Commit:
    """The batch is complete: check and store `messages` in order, all or none."""

    stream: str
    batch_id: str
    messages: list[StagedMsg]  # in batch order, the commit message last when stored
    stores_commit_msg: bool  # False for `Nats-Batch-Commit: eob`

    @property
    def count(self) -> int:
        return len(self.messages)


@dataclass(frozen=True, slots=True)
class Abandoned:
    """A batch dropped before its commit (for the BATCH_ABANDONED advisory)."""

    stream: str
    batch_id: str
    reason: str  # "timeout", "incomplete", "large" or "unsupported"


@dataclass(slots=True)
class _Batch:
    """An open batch."""

    stream: str
    batch_id: str
    last_seq: int = 0  # Nats-Batch-Sequence of the last staged message
    last_activity: int = 0  # Unix ns of the last staged message
    messages: list[StagedMsg] = field(default_factory=list)


def batch_id(hdr: bytes | None) -> str | None:
    """The `Nats-Batch-Id` of a message, or None when it is not part of a batch."""
    value = headers.get(hdr, BATCH_ID)
    return value.decode("utf-8", "surrogateescape") if value else None


def batch_seq(hdr: bytes | None) -> int | None:
    """`Nats-Batch-Sequence` as nats-server reads it; None when absent, empty or not all
    ASCII digits."""
    value = headers.get(hdr, BATCH_SEQ)
    if not value or not value.isdigit():
        return None
    return int(value) % (1 << 64)


def _api_level_too_high(value: bytes, api_level: int) -> bool:
    """A `Nats-Required-Api-Level` this server can not satisfy (not a number counts)."""
    if not value.isdigit():
        return True
    return int(value) > api_level


class BatchRegistry:
    """The open batches of every stream, keyed by (stream, batch id) in creation order."""

    __slots__ = ("limits", "batches", "abandoned", "api_level")

    def __init__(self, limits: BatchLimits | None = None, api_level: int = API_LEVEL):
        self.limits: BatchLimits = limits or BatchLimits()
        self.api_level: int = api_level  # what Nats-Required-Api-Level is compared with
        # (stream, batch id) -> open batch
        self.batches: OrderedDict[tuple[str, str], _Batch] = OrderedDict()
        # discarded batches not yet reported through take_abandoned()
        self.abandoned: list[Abandoned] = []

    def __len__(self) -> int:
        return len(self.batches)

    def inflight(self, stream: str | None = None) -> int:
        """Open batches of `stream`, or of all streams."""
        if stream is None:
            return len(self.batches)
        return sum(1 for key in self.batches if key[0] == stream)

    def _drop(self, batch: _Batch, reason: str | None) -> None:
        self.batches.pop((batch.stream, batch.batch_id), None)
        if reason is not None:
            self.abandoned.append(Abandoned(batch.stream, batch.batch_id, reason))

    def stage(self, stream: str, hdr: bytes, subject: str, payload: bytes, now: int,
              allow_atomic: bool) -> Staged | Commit:
        """Stage one message carrying `Nats-Batch-Id` (see the module docstring for the
        checks and their order). Batches idle for the timeout at `now` are abandoned
        first (reported by take_abandoned)."""
        for key in self.expire(now):
            self.abandoned.append(Abandoned(key[0], key[1], ABANDONED_TIMEOUT))
        if not allow_atomic:
            raise JSAtomicPublishDisabledErr()
        ident = batch_id(hdr) or ""
        if len(ident) > MAX_BATCH_ID_LEN:
            raise JSAtomicPublishInvalidBatchIDErr()
        seq = batch_seq(hdr)
        if seq is None:
            raise JSAtomicPublishMissingSeqErr()
        batch = self.batches.get((stream, ident))
        if batch is None:
            if seq != 1:
                raise JSAtomicPublishIncompleteBatchErr()
            if (self.inflight(stream) >= self.limits.max_inflight_per_stream
                    or len(self.batches) >= self.limits.max_inflight_total):
                raise JSAtomicPublishTooManyInflight()
            batch = _Batch(stream=stream, batch_id=ident)
            self.batches[(stream, ident)] = batch
        commit = headers.get(hdr, BATCH_COMMIT)
        if commit is not None and commit not in (COMMIT_STORE, COMMIT_END):
            self._drop(batch, None)
            raise JSAtomicPublishInvalidBatchCommitErr()
        required = headers.get(hdr, REQUIRED_API_LEVEL)
        if required:
            if _api_level_too_high(required, self.api_level):
                self._drop(batch, ABANDONED_UNSUPPORTED)
                raise JSRequiredApiLevelErr()
            hdr = headers.remove_header(hdr, REQUIRED_API_LEVEL)
        if seq != batch.last_seq + 1:
            self._drop(batch, ABANDONED_INCOMPLETE)
            raise JSAtomicPublishIncompleteBatchErr()
        if seq > self.limits.max_msgs:
            self._drop(batch, ABANDONED_LARGE)
            raise JSAtomicPublishTooLargeBatchErrF(size=self.limits.max_msgs)
        if commit == COMMIT_END:
            if not batch.messages:
                self._drop(batch, ABANDONED_INCOMPLETE)
                raise JSAtomicPublishIncompleteBatchErr()
            self._drop(batch, None)
            last = batch.messages[-1]
            batch.messages[-1] = StagedMsg(
                last.subject, headers.append_header(last.hdr, BATCH_COMMIT, "1"), last.payload)
            return Commit(stream, ident, batch.messages, stores_commit_msg=False)
        batch.last_seq = seq
        batch.last_activity = now
        batch.messages.append(StagedMsg(subject, hdr, payload))
        if commit == COMMIT_STORE:
            self._drop(batch, None)
            return Commit(stream, ident, batch.messages, stores_commit_msg=True)
        return Staged(ident, seq)

    def expire(self, now: int) -> list[tuple[str, str]]:
        """Drop the batches with no message for the timeout at `now`; their (stream, id)."""
        cutoff = now - self.limits.timeout_ns
        gone = [key for key, batch in self.batches.items() if batch.last_activity <= cutoff]
        for key in gone:
            del self.batches[key]
        return gone

    def next_expiry(self) -> int | None:
        """When the next batch times out (for a timer), or None when none is open."""
        if not self.batches:
            return None
        return min(batch.last_activity for batch in self.batches.values()) + self.limits.timeout_ns

    def discard(self, stream: str) -> list[str]:
        """Drop every open batch of `stream` (deleted, or atomic publish turned off);
        the ids dropped."""
        gone = [key for key in self.batches if key[0] == stream]
        for key in gone:
            del self.batches[key]
        return [key[1] for key in gone]

    def take_abandoned(self) -> list[Abandoned]:
        """The batches dropped with an advisory reason since the last call."""
        taken, self.abandoned = self.abandoned, []
        return taken


def batch_pub_ack(stream: str, seq: int, batch: str, count: int, domain: str | None = None) -> dict:
    """The PubAck of a committed batch, keys in nats-server's order."""
    ack: dict = {"stream": stream}
    if domain:
        ack["domain"] = domain
    ack["seq"] = seq
    ack["batch"] = batch
    ack["count"] = count
    return ack


class BatchView:
    """What the commit of one batch has seen so far, for the within-batch checks.

    Call `check(hdr, subject, msg_id_seen)` for each staged message in order before the
    ordinary checks, then `record(subject, hdr)` once it passed them.
    """

    __slots__ = ("stream_last_seq", "index", "msg_ids", "subjects", "counters")

    def __init__(self, stream_last_seq: int):
        self.stream_last_seq: int = stream_last_seq  # the stream's last sequence before the batch
        self.index: int = 0  # how many messages were recorded
        self.msg_ids: set[str] = set()  # Msg-Ids of the recorded messages
        self.subjects: set[str] = set()  # subjects the recorded messages go to
        self.counters: dict[str, tuple[int, Sources]] = {}  # subject -> running (total, sources)

    @property
    def last_seq(self) -> int:
        """The stream's last sequence once the recorded messages are stored."""
        return self.stream_last_seq + self.index

    def check(self, hdr: bytes | None, subject: str,
              in_dedupe_window: Callable[[str], bool] = lambda msg_id: False,
              last_seq_for_subject: Callable[[str], int] | None = None) -> None:
        """The batch-specific checks of the next message (module docstring, a and b).
        `last_seq_for_subject` is the store's lookup (0 when the subject has none); when
        given, Expected-Last-Subject-Sequence is checked here too."""
        if not hdr:
            return
        if headers.get(hdr, EXPECTED_LAST_MSG_ID):
            raise JSAtomicPublishUnsupportedHeaderBatchErr(header=EXPECTED_LAST_MSG_ID)
        expected = headers.get(hdr, EXPECTED_LAST_SEQ)
        if expected:
            if self.index > 0:
                raise JSStreamWrongLastSequenceConstantErr()
            if not expected.isdigit() or int(expected) != self.stream_last_seq:
                raise JSStreamWrongLastSequenceErrF(seq=self.stream_last_seq)
        msg_id = headers.get(hdr, MSG_ID)
        if msg_id:
            text = msg_id.decode("utf-8", "surrogateescape")
            if text in self.msg_ids or in_dedupe_window(text):
                raise JSAtomicPublishContainsDuplicateMessageErr()
        expected_subject = headers.get(hdr, EXPECTED_LAST_SUBJECT_SEQ)
        if expected_subject:
            override = headers.get(hdr, EXPECTED_LAST_SUBJECT_SEQ_SUBJECT)
            check_subject = override.decode("utf-8", "surrogateescape") if override else subject
            if check_subject in self.subjects:
                raise JSStreamWrongLastSequenceConstantErr()
            if last_seq_for_subject is not None:
                actual = last_seq_for_subject(check_subject)
                if not expected_subject.isdigit() or int(expected_subject) != actual:
                    raise JSStreamWrongLastSequenceErrF(seq=actual)

    def record(self, subject: str, hdr: bytes | None) -> None:
        """A message passed its checks and will be stored at `last_seq + 1`."""
        self.index += 1
        self.subjects.add(subject)
        msg_id = headers.get(hdr, MSG_ID)
        if msg_id:
            self.msg_ids.add(msg_id.decode("utf-8", "surrogateescape"))

    def counter(self, subject: str) -> tuple[int, Sources] | None:
        """The running (total, sources) of a counter written earlier in the batch."""
        return self.counters.get(subject)

    def set_counter(self, subject: str, total: int, sources: Sources) -> None:
        self.counters[subject] = (total, sources)
