"""The checks nats-server makes on a message published to a stream, as pure functions.

They follow `stream.processJetStreamMsg` (single server) and raise the same API errors with
the same texts. The stream calls them in nats-server's order:

1. sealed                       -> JSStreamSealedErr (the stream's own flag)
2. `check_headers(...)`         -> the header checks, in order: Nats-Incr (`check_incr`),
   Expected-Stream, TTL allowed, Expected-Last-Subject-Sequence(-Subject),
   Expected-Last-Sequence, Msg-Id dedupe (not an error: the result carries the original
   sequence), Expected-Last-Msg-Id, Rollup, and on a counter stream the missing increment
3. `check_sizes(...)`           -> message size, then header size
4. `msg_ttl(...)`               -> the TTL to store with, or JSMessageTTLInvalidErr
5. store, then `DedupeWindow.record(...)` and the rollup purge

Each step also exists on its own (`check_expected`, `rollup_mode`, ...). The counter
arithmetic itself is in `jsstore.stream.counters`, atomic batch staging in `jsstore.stream.batches`;
schedules are not covered here.

Numbers in headers are read as nats-server reads them: ASCII digits only, anything else
(a sign, spaces, letters) gives -1, which as an unsigned sequence is 2**64-1 and so never
matches a real one.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Iterable

from jsstore.gocompat.durations import MINUTE
from jsstore.gocompat.quoting import quote
from jsstore.store.ttl import parse_msg_ttl
from jsstore.stream import schedules
from jsstore.stream.counters import INCR, parse_incr
from jsstore.wire import headers
from jsstore.wire.apierrors import (
    JSMessageIncrDisabledErr,
    JSMessageIncrInvalidErr,
    JSMessageIncrMissingErr,
    JSMessageIncrPayloadErr,
    JSMessageTTLDisabledErr,
    JSMessageTTLInvalidErr,
    JSStreamExpectedLastSeqPerSubjectInvalid,
    JSStreamHeaderExceedsMaximumErr,
    JSStreamMessageExceedsMaximumErr,
    JSStreamNotMatchErr,
    JSStreamRollupFailedF,
    JSStreamWrongLastMsgIDErrF,
    JSStreamWrongLastSequenceErrF,
)

MSG_ID = "Nats-Msg-Id"
EXPECTED_STREAM = "Nats-Expected-Stream"
EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJECT_SEQ_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
ROLLUP = "Nats-Rollup"
MSG_TTL = "Nats-TTL"
ROLLUP_SUBJECT = "sub"
ROLLUP_ALL = "all"
MAX_HEADER_SIZE = 0xFFFF  # math.MaxUint16
DEFAULT_DUPLICATE_WINDOW_NS = 2 * MINUTE  # StreamDefaultDuplicatesWindow
_UINT64 = 1 << 64

LastSeqForSubject = Callable[[str], int]


def parse_uint(value: bytes | None) -> int | None:
    """A header number as nats-server's parseInt64 reads it, seen as uint64: None when the
    header is absent or empty, 2**64-1 when it is not all ASCII digits."""
    if not value:
        return None
    if not value.isdigit():  # bytes.isdigit: ASCII digits only
        return _UINT64 - 1
    return int(value) % _UINT64  # Go's int64 arithmetic wraps; seen unsigned


def _text(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8", "surrogateescape")


# ---- Expected-* headers ------------------------------------------------------------------

def check_expected_stream(hdr: bytes | None, stream_name: str) -> None:
    """`Nats-Expected-Stream` naming another stream -> JSStreamNotMatchErr."""
    expected = headers.get(hdr, EXPECTED_STREAM)
    if expected and _text(expected) != stream_name:
        raise JSStreamNotMatchErr()


def check_expected_sequences(hdr: bytes | None, *, subject: str, last_seq: int,
                             last_seq_for_subject: LastSeqForSubject) -> None:
    """`Nats-Expected-Last-Subject-Sequence` (checked against the last sequence of the
    message's subject, or of `...-Subject` when given; 0 = no message may exist) and then
    `Nats-Expected-Last-Sequence` (against the stream's last sequence, skips included).
    A mismatch -> JSStreamWrongLastSequenceErrF with the actual sequence; `...-Subject`
    without the sequence header -> JSStreamExpectedLastSeqPerSubjectInvalid."""
    if not hdr:
        return
    expected_subject_seq = parse_uint(headers.get(hdr, EXPECTED_LAST_SUBJECT_SEQ))
    subject_override = headers.get(hdr, EXPECTED_LAST_SUBJECT_SEQ_SUBJECT)
    if expected_subject_seq is not None:
        check_subject = _text(subject_override) if subject_override else subject
        actual = last_seq_for_subject(check_subject)
        if actual != expected_subject_seq:
            raise JSStreamWrongLastSequenceErrF(seq=actual)
    elif subject_override:
        raise JSStreamExpectedLastSeqPerSubjectInvalid()
    expected_seq = parse_uint(headers.get(hdr, EXPECTED_LAST_SEQ))
    if expected_seq is not None and expected_seq != last_seq:
        raise JSStreamWrongLastSequenceErrF(seq=last_seq)


def check_expected_last_msg_id(hdr: bytes | None, last_msg_id: str) -> None:
    """`Nats-Expected-Last-Msg-Id` other than the Msg-Id of the last stored message ->
    JSStreamWrongLastMsgIDErrF naming that one ("" when it had none)."""
    expected = headers.get(hdr, EXPECTED_LAST_MSG_ID)
    if expected and _text(expected) != last_msg_id:
        raise JSStreamWrongLastMsgIDErrF(id=last_msg_id)


def check_expected(hdr: bytes | None, *, stream_name: str, last_seq: int, last_msg_id: str,
                   last_seq_for_subject: LastSeqForSubject, subject: str) -> None:
    """All Expected-* headers in nats-server's order (Stream, Last-Subject-Sequence,
    Last-Sequence, Last-Msg-Id). nats-server answers a Msg-Id duplicate between the last
    two: `check_headers` keeps that order."""
    if not hdr:
        return
    check_expected_stream(hdr, stream_name)
    check_expected_sequences(hdr, subject=subject, last_seq=last_seq,
                             last_seq_for_subject=last_seq_for_subject)
    check_expected_last_msg_id(hdr, last_msg_id)


# ---- Counter increments -------------------------------------------------------------------

# Headers that can not go with Nats-Incr (any of them, present and non-empty -> invalid).
_INCR_EXCLUSIVE = (ROLLUP, EXPECTED_STREAM, EXPECTED_LAST_MSG_ID,
                   EXPECTED_LAST_SUBJECT_SEQ_SUBJECT, EXPECTED_LAST_SEQ, EXPECTED_LAST_SUBJECT_SEQ)


def check_incr(hdr: bytes | None, *, allow_msg_counter: bool, payload_len: int,
               sourced: bool = False) -> int | None:
    """The first header check of the publish path: the `Nats-Incr` increment (None when
    absent or empty). A value that is not a signed base-10 integer ->
    JSMessageIncrInvalidErr on any stream. Unless the message came through a source: on a
    stream without allow_msg_counter -> JSMessageIncrDisabledErr, with a payload ->
    JSMessageIncrPayloadErr, together with Nats-Rollup or any Expected-* header ->
    JSMessageIncrInvalidErr."""
    value = headers.get(hdr, INCR)
    if not value:
        return None
    incr = parse_incr(value)
    if sourced:
        return incr
    if not allow_msg_counter:
        raise JSMessageIncrDisabledErr()
    if payload_len > 0:
        raise JSMessageIncrPayloadErr()
    if any(headers.get(hdr, name) for name in _INCR_EXCLUSIVE):
        raise JSMessageIncrInvalidErr()
    return incr


def check_incr_present(incr: int | None, allow_msg_counter: bool) -> None:
    """After the other header checks: a counter stream needs an increment ->
    JSMessageIncrMissingErr."""
    if incr is None and allow_msg_counter:
        raise JSMessageIncrMissingErr()


# ---- Rollup and TTL ----------------------------------------------------------------------

def rollup_mode(hdr: bytes | None, allow_rollup_hdrs: bool, deny_purge: bool = False) -> str | None:
    """None, "sub" or "all" from `Nats-Rollup` (any case). A rollup on a stream without
    allow_rollup_hdrs (or with deny_purge) -> JSStreamRollupFailedF "rollup not permitted";
    any other value -> "rollup value invalid: \\"x\\"" (x lower-cased)."""
    value = headers.get(hdr, ROLLUP)
    if not value:
        return None
    if not allow_rollup_hdrs or deny_purge:
        raise JSStreamRollupFailedF(err="rollup not permitted")
    mode = _text(value).lower()
    if mode in (ROLLUP_SUBJECT, ROLLUP_ALL):
        return mode
    raise JSStreamRollupFailedF(err=f"rollup value invalid: {quote(mode)}")


def ttl_allowed(hdr: bytes | None, allow_msg_ttl: bool) -> None:
    """The early check of the publish path: a valid, non-zero `Nats-TTL` on a stream without
    allow_msg_ttl -> JSMessageTTLDisabledErr. An invalid one passes here (nats-server
    rejects it later, after the size checks, as JSMessageTTLInvalidErr)."""
    if allow_msg_ttl or not hdr:
        return
    try:
        ttl = parse_msg_ttl(headers.get(hdr, MSG_TTL))
    except ValueError:
        return
    if ttl != 0:
        raise JSMessageTTLDisabledErr()


def msg_ttl(hdr: bytes | None, allow_msg_ttl: bool,
            subject_delete_marker_ttl: int = 0, max_msgs_per_subject: int = -1) -> int:
    """The TTL (seconds; 0 none, -1 never) to store the message with.
    JSMessageTTLDisabledErr when the stream does not allow TTLs, JSMessageTTLInvalidErr when
    the value does not parse. With subject delete markers (`subject_delete_marker_ttl`
    seconds > 0) and max_msgs_per_subject other than 1, a shorter TTL is raised to it."""
    ttl_allowed(hdr, allow_msg_ttl)
    try:
        ttl = parse_msg_ttl(headers.get(hdr, MSG_TTL))
    except ValueError:
        raise JSMessageTTLInvalidErr() from None
    if ttl > 0 and subject_delete_marker_ttl > 0 and max_msgs_per_subject != 1:
        ttl = max(ttl, subject_delete_marker_ttl)
    return ttl


# ---- Sizes -------------------------------------------------------------------------------

def check_sizes(hdr_len: int, msg_len: int, max_msg_size: int, max_payload: int | None = None) -> None:
    """Header plus payload over the stream's max_msg_size (when >= 0) or the server's
    max_payload (when given), whichever is smaller -> JSStreamMessageExceedsMaximumErr;
    then a header block over 65535 bytes -> JSStreamHeaderExceedsMaximumErr."""
    limit = max_payload if max_payload is not None and max_payload >= 0 else None
    if max_msg_size >= 0 and (limit is None or max_msg_size < limit):
        limit = max_msg_size
    if limit is not None and (hdr_len > limit or msg_len > limit - hdr_len):
        raise JSStreamMessageExceedsMaximumErr()
    if hdr_len > MAX_HEADER_SIZE:
        raise JSStreamHeaderExceedsMaximumErr()


# ---- Dedupe window -----------------------------------------------------------------------

class DedupeWindow:
    """`Nats-Msg-Id` -> (sequence, timestamp) for the messages stored in the last `window_ns`.

    An id recorded at ts is a duplicate while `now - ts < window_ns`. Entries leave in the
    order they were recorded, as nats-server's ddarr: `expire(now)` (and every `record`,
    with its ts as now) drops them from the front while they are out of the window, so
    the memory held is the ids of one window.
    """

    __slots__ = ("window_ns", "entries")

    def __init__(self, window_ns: int = DEFAULT_DUPLICATE_WINDOW_NS):
        if window_ns <= 0:
            raise ValueError(f"duplicate window must be positive, got {window_ns}")
        self.window_ns: int = window_ns  # duplicate_window in nanoseconds
        # msg id -> (seq, ts), oldest record first
        self.entries: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, msg_id: object) -> bool:
        return msg_id in self.entries

    def check(self, msg_id: str, now: int) -> int | None:
        """The sequence the id was stored at when it is a duplicate at time `now`, else None."""
        if not msg_id:
            return None
        entry = self.entries.get(msg_id)
        if entry is None or now - entry[1] >= self.window_ns:
            return None
        return entry[0]

    def record(self, msg_id: str, seq: int, ts: int) -> None:
        """Remember a stored message's id (an empty id is not recorded)."""
        if not msg_id:
            return
        self.entries.pop(msg_id, None)
        self.entries[msg_id] = (seq, ts)
        self.expire(ts)

    def expire(self, now: int) -> int:
        """Drop the entries out of the window at `now` from the front; how many went."""
        dropped = 0
        entries, cutoff = self.entries, now - self.window_ns
        while entries:
            msg_id, (_, ts) = next(iter(entries.items()))
            if ts > cutoff:
                break
            del entries[msg_id]
            dropped += 1
        return dropped

    def next_expiry(self) -> int | None:
        """When the oldest entry leaves the window (for a timer), or None when empty."""
        if not self.entries:
            return None
        return next(iter(self.entries.values()))[1] + self.window_ns

    def clear(self) -> None:
        self.entries.clear()

    def set_window(self, window_ns: int) -> None:
        """A new duplicate_window (stream update); entries are kept until they expire."""
        if window_ns <= 0:
            raise ValueError(f"duplicate window must be positive, got {window_ns}")
        self.window_ns = window_ns

    def rebuild(self, messages: Iterable[tuple[str | None, int, int]], now: int | None = None) -> str:
        """Refill from stored messages (msg_id or None, seq, ts) in sequence order, as
        nats-server does after a restart from the messages since `now - window` up to the
        last one. Returns the Msg-Id of the last message given ("" when it had none or
        there were none): the stream's last_msg_id."""
        last_msg_id = ""
        for msg_id, seq, ts in messages:
            if msg_id:
                self.record(msg_id, seq, ts)
            last_msg_id = msg_id or ""
        if now is not None:
            self.expire(now)
        return last_msg_id


def window_start(now: int, window_ns: int) -> int:
    """The timestamp to look up the first message to rebuild from (`get_seq_from_time`)."""
    return now - window_ns


# ---- The header checks of one publish, in order -------------------------------------------

@dataclass(slots=True)
class HeaderChecks:
    """What the header checks of one publish found."""

    msg_id: str = ""  # Nats-Msg-Id ("" when none)
    duplicate_seq: int | None = None  # the original's sequence when the id is a duplicate
    rollup: str | None = None  # None, "sub" or "all"
    incr: int | None = None  # the Nats-Incr increment (None when the message has none)
    # the header block to store (a schedule gains Nats-Rollup: sub); not part of equality
    hdr: bytes | None = field(default=None, compare=False)
    schedule: object | None = None  # the schedules.Schedule of a schedule message
    scheduler_purge: str | None = None  # Nats-Scheduler subject to purge after the store


def check_headers(hdr: bytes | None, *, subject: str, stream_name: str, last_seq: int,
                  last_msg_id: str, last_seq_for_subject: LastSeqForSubject,
                  dedupe: DedupeWindow | None, now: int, allow_msg_ttl: bool,
                  allow_rollup_hdrs: bool, deny_purge: bool = False,
                  mirror: bool = False, allow_msg_counter: bool = False,
                  payload_len: int = 0, sourced: bool = False,
                  allow_msg_schedules: bool = False,
                  stream_subjects: Iterable[str] = (), internal: bool = False) -> HeaderChecks:
    """The header checks of nats-server's publish path in its order. A duplicate stops the
    checks (the Expected-Last-Msg-Id and Rollup headers of a duplicate are not looked at,
    nor is a missing counter increment) and is returned in `duplicate_seq`: the caller
    answers `duplicate: true` and stores nothing. Mirrors do not dedupe. The increment
    (`incr`) is for `counters.apply_increment`; `payload_len` is the message body's length
    and `sourced` whether it came through a stream source. The schedule headers are
    checked after the expected sequences; a schedule's block (`hdr`) gains the rollup.
    `internal` messages (the scheduler's own) may carry any `Nats-Schedule-Next`."""
    result = HeaderChecks(hdr=hdr)
    if not hdr:
        check_incr_present(None, allow_msg_counter)
        return result
    result.incr = check_incr(hdr, allow_msg_counter=allow_msg_counter,
                             payload_len=payload_len, sourced=sourced)
    check_expected_stream(hdr, stream_name)
    ttl_allowed(hdr, allow_msg_ttl)
    check_expected_sequences(hdr, subject=subject, last_seq=last_seq,
                             last_seq_for_subject=last_seq_for_subject)
    if b"Nats-Schedule" in hdr:     # also Nats-Scheduler and Nats-Schedule-Next
        if internal:
            if _text(headers.get(hdr, schedules.SCHEDULE_NEXT)) == schedules.NEXT_PURGE:
                result.scheduler_purge = _text(headers.get(hdr, schedules.SCHEDULER)) or None
        else:
            schedule = schedules.check_schedule_headers(
                hdr, subject=subject, stream_subjects=list(stream_subjects),
                allow_msg_schedules=allow_msg_schedules, now=now, allow_msg_ttl=allow_msg_ttl)
            result.scheduler_purge = schedules.check_scheduler_headers(
                hdr, subject=subject, allow_msg_schedules=allow_msg_schedules)
            if schedule is not None:
                result.schedule = schedule
                hdr = result.hdr = schedule.hdr
    result.msg_id = _text(headers.get(hdr, MSG_ID))
    if result.msg_id and dedupe is not None and not mirror:
        result.duplicate_seq = dedupe.check(result.msg_id, now)
        if result.duplicate_seq is not None:
            return result
    check_expected_last_msg_id(hdr, last_msg_id)
    result.rollup = rollup_mode(hdr, allow_rollup_hdrs, deny_purge)
    check_incr_present(result.incr, allow_msg_counter)
    return result
