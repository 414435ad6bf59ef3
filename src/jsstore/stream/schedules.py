"""Message schedules: the `Nats-Schedule*` publish headers, when a schedule fires, the
message it fires, and `msgs/sched.db`.

A schedule is a message stored on its own subject with `Nats-Schedule: <pattern>` and
`Nats-Schedule-Target: <subject>` (both inside the stream). Patterns, as nats-server 2.15:

* `@at <RFC3339>`: fires once (a time in the past fires at once);
* `@every <Go duration>` (at least one second), UTC;
* a 6-field cron `sec min hour day-of-month month day-of-week` (numbers, `*`, `?`, ranges,
  lists, steps, `jan`..`dec`, `sun`..`sat`), or `@yearly`/`@annually`, `@monthly`,
  `@weekly`, `@daily`/`@midnight`, `@hourly`; evaluated in `Nats-Schedule-Time-Zone`
  (an IANA name, `UTC` or `Local`; cron only) or UTC. A pattern with no fire time in the
  next five years is invalid.

Optional: `Nats-Schedule-TTL` (the fired message's `Nats-TTL`), `Nats-Schedule-Rollup: sub`
(the fired message rolls up its subject), `Nats-Schedule-Source` (the fired message carries
the last message of that subject, falling back to the schedule's own when there is none).
nats-server stores the schedule with `Nats-Rollup: sub` added, so a subject holds one.

A fired message has the (source or schedule) headers without `Nats-Schedule`,
`Nats-Schedule-*`, `Nats-Expected-*`, `Nats-Msg-Id`, `Nats-TTL` and `Nats-Rollup`, then
`Nats-Scheduler: <schedule subject>`, `Nats-Schedule-Next: purge` (one-shot) or the next
fire time (RFC 3339, seconds, in the schedule's zone), and the TTL and rollup if asked.
Storing a message with `Nats-Schedule-Next: purge` purges the scheduler's subject.

sched.db: u8 version 1, u64 LE count, u64 LE high_seq, then count x {u16 LE subject
length, subject, varint (zigzag) fire ns, uvarint seq}.
"""

from __future__ import annotations

import heapq
import struct
from dataclasses import dataclass
from typing import Callable

from jsstore._core.storage.subjects import filters_overlap, is_literal, is_valid_subject
from jsstore.deferred import deferred
from jsstore.errors import CorruptFile
from jsstore.gocompat.varints import get_uvarint, put_uvarint, put_varint, unzigzag
from jsstore.store.ttl import parse_msg_ttl
from jsstore.wire import headers
from jsstore.wire.apierrors import (
    JSMessageSchedulesDisabledErr,
    JSMessageSchedulesPatternInvalidErr,
    JSMessageSchedulesRollupInvalidErr,
    JSMessageSchedulesSchedulerInvalidErr,
    JSMessageSchedulesSourceInvalidErr,
    JSMessageSchedulesTargetInvalidErr,
    JSMessageSchedulesTimeZoneInvalidErr,
    JSMessageSchedulesTTLInvalidErr,
    JSMessageTTLDisabledErr,
)

# cron patterns and time zones (zoneinfo) load with the first schedule that has one
cron = deferred("jsstore.stream.cron")

SCHEDULE = "Nats-Schedule"
SCHEDULE_TARGET = "Nats-Schedule-Target"
SCHEDULE_SOURCE = "Nats-Schedule-Source"
SCHEDULE_TTL = "Nats-Schedule-TTL"
SCHEDULE_TIME_ZONE = "Nats-Schedule-Time-Zone"
SCHEDULE_ROLLUP = "Nats-Schedule-Rollup"
SCHEDULER = "Nats-Scheduler"
SCHEDULE_NEXT = "Nats-Schedule-Next"
NEXT_PURGE = "purge"
ROLLUP = "Nats-Rollup"
ROLLUP_SUBJECT = "sub"
MSG_TTL = "Nats-TTL"
MSG_ID = "Nats-Msg-Id"

SCHED_DB_VERSION = 1
_SCHED_DB_HEADER = struct.Struct("<BQQ")
_SUBJECT_LEN = struct.Struct("<H")


def _text(value: bytes | None) -> str:
    return "" if value is None else value.decode("utf-8", "surrogateescape")


def _literal_subject(subject: str) -> bool:
    return bool(subject) and is_valid_subject(subject) and is_literal(subject)


def _in_stream(subject: str, stream_subjects: list[str]) -> bool:
    return any(filters_overlap(filter, subject) for filter in stream_subjects)


@dataclass(frozen=True, slots=True)
class Schedule:
    """One schedule message's headers, checked."""

    pattern: str             # the Nats-Schedule value
    target: str              # Nats-Schedule-Target: where fired messages go
    ttl: str | None          # Nats-Schedule-TTL text, given to fired messages as Nats-TTL
    source: str | None       # Nats-Schedule-Source: subject whose last message is the payload
    time_zone: str | None    # Nats-Schedule-Time-Zone (cron only)
    rollup: str | None       # Nats-Schedule-Rollup ("sub"), given as Nats-Rollup
    next_fire: int | None    # Unix ns of the first fire (None: no time in the next five years)
    hdr: bytes               # the header block to store (Nats-Rollup: sub added if it had none)

    @property
    def repeating(self) -> bool:
        """False for a one-shot `@at` schedule."""
        return not self.pattern.startswith("@at ")

    def next_after(self, ns: int, now: int | None = None) -> int | None:
        """The fire after one at `ns` (Unix ns): None for `@at` (it fires once) and for a
        cron with no time in the next five years. Given `now`, a time before it is skipped
        ahead to the first one after `now`, as nats-server does after a restart."""
        if not self.repeating:
            return None
        try:
            return cron.first_fire(self.pattern, self.time_zone, ns, now)[0]
        except ValueError:
            return None


def _schedule_from(pattern: str, tz: str | None, now: int) -> tuple[int | None, bool]:
    """(first fire, valid) of a non-empty pattern, checked at `now`."""
    try:
        fire, _ = cron.first_fire(pattern, tz, now, now)
    except ValueError:
        return None, False
    return fire, True


def check_schedule_headers(hdr: bytes | None, *, subject: str, stream_subjects: list[str],
                           allow_msg_schedules: bool, now: int,
                           allow_msg_ttl: bool = False) -> Schedule | None:
    """The schedule a published message defines, or None when it defines none (no or an
    empty `Nats-Schedule`). Raises nats-server's ApiError for a bad schedule header, in its
    order: time zone, pattern (JSMessageSchedulesDisabledErr instead on a stream without
    allow_msg_schedules), then disabled, TTL, TTL allowed, schedule rollup, target, source,
    Nats-Rollup; last, for every message, the `Nats-Scheduler`/`Nats-Schedule-Next` pair
    (only `purge` with a literal scheduler subject other than `subject` may be published)."""
    if not hdr:
        return None
    schedule = _check_schedule(hdr, subject, stream_subjects, allow_msg_schedules, now, allow_msg_ttl)
    check_scheduler_headers(hdr, subject=subject, allow_msg_schedules=allow_msg_schedules)
    return schedule


def _check_schedule(hdr: bytes, subject: str, stream_subjects: list[str],
                    allow_msg_schedules: bool, now: int, allow_msg_ttl: bool) -> Schedule | None:
    tz_value = headers.get(hdr, SCHEDULE_TIME_ZONE)
    tz = None if tz_value is None else _text(tz_value)
    if tz is not None and not cron.valid_time_zone(tz):
        raise (JSMessageSchedulesTimeZoneInvalidErr() if allow_msg_schedules
               else JSMessageSchedulesDisabledErr())
    pattern = _text(headers.get(hdr, SCHEDULE))
    if not pattern:
        return None
    fire, valid = _schedule_from(pattern, tz, now)
    if not valid:
        raise (JSMessageSchedulesPatternInvalidErr() if allow_msg_schedules
               else JSMessageSchedulesDisabledErr())
    if not allow_msg_schedules:
        raise JSMessageSchedulesDisabledErr()
    ttl = _text(headers.get(hdr, SCHEDULE_TTL))
    try:
        parse_msg_ttl(ttl.encode("utf-8", "surrogateescape"))
    except ValueError:
        raise JSMessageSchedulesTTLInvalidErr() from None
    if ttl and not allow_msg_ttl:
        raise JSMessageTTLDisabledErr()
    schedule_rollup = _text(headers.get(hdr, SCHEDULE_ROLLUP))
    if schedule_rollup and schedule_rollup != ROLLUP_SUBJECT:
        raise JSMessageSchedulesRollupInvalidErr()
    target = _text(headers.get(hdr, SCHEDULE_TARGET))
    if not _literal_subject(target) or target == subject or not _in_stream(target, stream_subjects):
        raise JSMessageSchedulesTargetInvalidErr()
    source = _text(headers.get(hdr, SCHEDULE_SOURCE))
    if source and (not _literal_subject(source) or source in (subject, target)
                   or not _in_stream(source, stream_subjects)):
        raise JSMessageSchedulesSourceInvalidErr()
    rollup = _text(headers.get(hdr, ROLLUP))
    if not rollup:
        hdr = _append(hdr, ROLLUP, ROLLUP_SUBJECT)
    elif rollup.lower() != ROLLUP_SUBJECT:
        raise JSMessageSchedulesRollupInvalidErr()
    return Schedule(pattern=pattern, target=target, ttl=ttl or None, source=source or None,
                    time_zone=tz, rollup=schedule_rollup or None, next_fire=fire, hdr=hdr)


def check_scheduler_headers(hdr: bytes | None, *, subject: str, allow_msg_schedules: bool) -> str | None:
    """The `Nats-Scheduler` subject of a message that asks for its scheduler's subject to be
    purged (`Nats-Schedule-Next: purge`), or None when it has neither header.
    JSMessageSchedulesSchedulerInvalidErr for any other value, an empty, wildcard or own
    subject; then JSMessageSchedulesDisabledErr on a stream without schedules."""
    scheduler = _text(headers.get(hdr, SCHEDULER))
    next_text = _text(headers.get(hdr, SCHEDULE_NEXT))
    if not scheduler and not next_text:
        return None
    if next_text != NEXT_PURGE or not _literal_subject(scheduler) or scheduler == subject:
        raise JSMessageSchedulesSchedulerInvalidErr()
    if not allow_msg_schedules:
        raise JSMessageSchedulesDisabledErr()
    return scheduler


def _append(hdr: bytes | None, key: str, value: str) -> bytes:
    """`Key: value` added at the end of the block (a repeated key is kept, as nats-server's
    genHeader does)."""
    line = key.encode() + b": " + value.encode("utf-8", "surrogateescape") + headers.CRLF
    if not hdr:
        return headers.PREFIX + headers.CRLF + line + headers.CRLF
    body = hdr[:-2] if hdr.endswith(headers.CRLF + headers.CRLF) else hdr
    if not body.endswith(headers.CRLF):
        body += headers.CRLF
    return body + line + headers.CRLF


def _strip(hdr: bytes | None) -> bytes | None:
    """`hdr` without the headers a fired message must not carry."""
    if not hdr:
        return hdr
    lines = hdr.split(headers.CRLF)
    kept = [lines[0]]
    for line in lines[1:]:
        if not line:
            continue
        key = line.split(b":", 1)[0]
        if (key == b"Nats-Schedule" or key.startswith(b"Nats-Schedule-")
                or key.startswith(b"Nats-Expected-") or key in (b"Nats-Msg-Id", b"Nats-TTL", b"Nats-Rollup")):
            continue
        kept.append(line)
    return headers.CRLF.join(kept) + headers.CRLF + headers.CRLF


def next_text(schedule_hdr: bytes | None, next_fire: int | None) -> str:
    """The `Nats-Schedule-Next` value: `purge` for None, else RFC 3339 (whole seconds) in
    the schedule's zone (cron) or UTC (`@every`)."""
    if next_fire is None:
        return NEXT_PURGE
    pattern = _text(headers.get(schedule_hdr, SCHEDULE))
    tz_value = headers.get(schedule_hdr, SCHEDULE_TIME_ZONE)
    tz = None if pattern.startswith("@every ") or tz_value is None else _text(tz_value)
    return cron.format_rfc3339(next_fire, tz)


def fired_headers(schedule_hdr: bytes, schedule_subject: str, next_fire: int | None,
                  source_hdr: bytes | None = None, *, from_source: bool = False) -> bytes:
    """The header block of the message a schedule fires: the schedule's headers (or, with
    `from_source`, those of the source message `source_hdr`) stripped, then Nats-Scheduler,
    Nats-Schedule-Next (`purge` when `next_fire` is None), Nats-TTL and Nats-Rollup from
    the schedule's Nats-Schedule-TTL / Nats-Schedule-Rollup."""
    base = _strip(source_hdr if from_source else schedule_hdr)
    out = _append(base, SCHEDULER, schedule_subject)
    out = _append(out, SCHEDULE_NEXT, next_text(schedule_hdr, next_fire))
    ttl = _text(headers.get(schedule_hdr, SCHEDULE_TTL))
    if ttl:
        out = _append(out, MSG_TTL, ttl)
    rollup = _text(headers.get(schedule_hdr, SCHEDULE_ROLLUP))
    if rollup:
        out = _append(out, ROLLUP, rollup)
    return out


@dataclass(frozen=True, slots=True)
class Fired:
    """A message a schedule fires."""

    target: str              # subject to publish on
    hdr: bytes               # its header block
    data: bytes              # its payload
    next_fire: int | None    # when the schedule fires again (None: one-shot, purge it)


def fire(schedule_subject: str, schedule_hdr: bytes | None, schedule_data: bytes, fire_ns: int, now: int,
         load_last: Callable[[str], tuple[bytes | None, bytes] | None]) -> Fired | None:
    """The message a stored schedule fires at `fire_ns` (its due time), or None when the
    stored message is no longer a valid schedule (drop it from the table). `load_last`
    gives (hdr, data) of a subject's last message, or None; it is called only when the
    schedule has a Nats-Schedule-Source."""
    pattern = _text(headers.get(schedule_hdr, SCHEDULE))
    if not pattern:
        return None
    tz_value = headers.get(schedule_hdr, SCHEDULE_TIME_ZONE)
    try:
        next_fire, repeating = cron.first_fire(pattern, None if tz_value is None else _text(tz_value),
                                               fire_ns, now)
        parse_msg_ttl(headers.get(schedule_hdr, SCHEDULE_TTL))
    except ValueError:
        return None
    target = _text(headers.get(schedule_hdr, SCHEDULE_TARGET))
    if not target:
        return None
    source = _text(headers.get(schedule_hdr, SCHEDULE_SOURCE))
    loaded = load_last(source) if source else None
    next_fire = next_fire if repeating else None
    if loaded is None:
        return Fired(target, fired_headers(schedule_hdr, schedule_subject, next_fire), schedule_data, next_fire)
    source_hdr, source_data = loaded
    return Fired(target, fired_headers(schedule_hdr, schedule_subject, next_fire, source_hdr, from_source=True),
                 source_data, next_fire)


class ScheduleTable:
    """Schedule subject -> (sequence of its message, next fire ns), with the earliest fire
    found in O(log n) (a heap with stale entries skipped)."""

    __slots__ = ("entries", "heap")

    def __init__(self):
        self.entries: dict[str, tuple[int, int]] = {}      # subject -> (seq, fire ns)
        self.heap: list[tuple[int, int, str]] = []          # (fire ns, seq, subject), may hold stale rows

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, subject: object) -> bool:
        return subject in self.entries

    def get(self, subject: str) -> tuple[int, int] | None:
        return self.entries.get(subject)

    def add(self, subject: str, seq: int, fire_ns: int) -> None:
        """Set (or replace) the schedule of `subject`."""
        self.entries[subject] = (seq, fire_ns)
        heapq.heappush(self.heap, (fire_ns, seq, subject))
        if len(self.heap) > 2 * len(self.entries) + 64:
            self.heap = [(fire, seq_, subj) for subj, (seq_, fire) in self.entries.items()]
            heapq.heapify(self.heap)

    def remove(self, subject: str) -> bool:
        return self.entries.pop(subject, None) is not None

    def remove_seq(self, seq: int) -> bool:
        """Drop the schedule whose message is `seq` (deleted or purged)."""
        for subject, (entry_seq, _) in self.entries.items():
            if entry_seq == seq:
                del self.entries[subject]
                return True
        return False

    def _live(self, row: tuple[int, int, str]) -> bool:
        fire, seq, subject = row
        return self.entries.get(subject) == (seq, fire)

    def next_fire(self) -> int | None:
        while self.heap and not self._live(self.heap[0]):
            heapq.heappop(self.heap)
        return self.heap[0][0] if self.heap else None

    def due(self, now: int) -> list[tuple[str, int]]:
        """(subject, seq) of the schedules due at `now` (fire <= now), by sequence. They
        stay in the table: `add` the next fire or `remove` them once handled."""
        found: list[tuple[int, int, str]] = []
        while self.heap and self.heap[0][0] <= now:
            row = heapq.heappop(self.heap)
            if self._live(row) and row not in found:
                found.append(row)
        for row in found:
            heapq.heappush(self.heap, row)
        return [(subject, seq) for _, seq, subject in sorted(found, key=lambda row: row[1])]

    def encode(self, high_seq: int) -> bytes:
        """sched.db bytes (entries by sequence)."""
        out = bytearray(_SCHED_DB_HEADER.pack(SCHED_DB_VERSION, len(self.entries), high_seq))
        for subject, (seq, fire) in sorted(self.entries.items(), key=lambda item: item[1][0]):
            name = subject.encode("utf-8", "surrogateescape")[:0xFFFF]
            out += _SUBJECT_LEN.pack(len(name)) + name
            put_varint(out, fire)
            put_uvarint(out, seq)
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> tuple["ScheduleTable", int]:
        """(table, high_seq) from sched.db bytes; CorruptFile when they do not parse."""
        if len(data) < _SCHED_DB_HEADER.size:
            raise CorruptFile("sched.db: too short")
        version, count, high_seq = _SCHED_DB_HEADER.unpack_from(data)
        if version != SCHED_DB_VERSION:
            raise CorruptFile(f"sched.db: unknown version {version}")
        table, pos = cls(), _SCHED_DB_HEADER.size
        for _ in range(count):
            if pos + 2 > len(data):
                raise CorruptFile("sched.db: truncated")
            (length,) = _SUBJECT_LEN.unpack_from(data, pos)
            pos += 2
            if pos + length > len(data):
                raise CorruptFile("sched.db: truncated")
            subject = data[pos:pos + length].decode("utf-8", "surrogateescape")
            pos += length
            fire, pos = get_uvarint(data, pos, len(data), "sched.db: truncated")
            seq, pos = get_uvarint(data, pos, len(data), "sched.db: truncated")
            table.add(subject, seq, unzigzag(fire))
        return table, high_seq
