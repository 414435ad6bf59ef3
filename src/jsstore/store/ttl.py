"""Per-message TTLs: the expiry schedule of a store, its `Nats-TTL` header form, and
`msgs/thw.db`, the file nats-server keeps it in.

A message stored with ttl > 0 (seconds) is removed, with a tombstone, once `ts + ttl` has
passed; the store checks on every write and when `expire_msgs()` is called. ttl = 0 means
no TTL of its own, -1 never (not tracked here).

thw.db, as nats-server writes it (`thw.HashWheel.Encode`): u8 version = 1, u64 LE count,
u64 LE high_seq (= last_seq + 1 when written), then count x {varint expires_ns, uvarint seq}.
A file whose high_seq is not above the stream's last sequence is stale: the messages from
high_seq on are scanned for their `Nats-TTL` headers.
"""

from __future__ import annotations

import heapq
import struct

from jsstore.errors import CorruptFile
from jsstore.gocompat.durations import INT64_MAX, SECOND, parse_go_duration
from jsstore.gocompat.varints import get_uvarint, put_uvarint, put_varint, unzigzag

NEVER = INT64_MAX                   # the schedule's "nothing due"
THW_VERSION = 1
_HEADER = struct.Struct("<BQQ")


def parse_ttl(value: str) -> int:
    """Seconds from a `Nats-TTL` value: "never" -> -1, an integer of seconds, or a Go
    duration ("90s", "1h30m"); ValueError if it is none of these or under one second."""
    value = value.strip()
    if value.lower() == "never":
        return -1
    if value.isdigit():
        seconds = int(value)
    else:
        try:
            seconds = parse_go_duration(value) // SECOND
        except ValueError:
            raise ValueError(f"invalid TTL {value!r}") from None
    if seconds < 1:
        raise ValueError(f"TTL {value!r} is under one second")
    return seconds


def ttl_from_header(hdr: bytes | None) -> int:
    """The TTL a message's header block carries (0 when it has none or it is invalid)."""
    if not hdr or b"Nats-TTL" not in hdr:
        return 0
    for line in hdr.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name == b"Nats-TTL":  # header names match exactly, as in nats-server
            try:
                return parse_ttl(value.decode("utf-8", "replace"))
            except ValueError:
                return 0
    return 0


def parse_msg_ttl(value: bytes | None) -> int:
    """Seconds from a `Nats-TTL` value as nats-server's parseMessageTTL reads it: 0 when
    absent or empty, -1 for "never" (any case), else a Go duration of at least one second
    or a whole number of seconds. ValueError when it is none of these."""
    if not value:
        return 0
    text = value.decode("utf-8", "surrogateescape")
    if text.lower() == "never":
        return -1
    if not text.isascii() or text != text.strip():
        raise ValueError(f"invalid TTL {text!r}")
    if text[0] in "+-":  # Go durations take a sign; a negative one is under a second
        unsigned = text[1:]
        if text[0] == "-" or unsigned.isdigit() or not unsigned:
            raise ValueError(f"invalid TTL {text!r}")
        text = unsigned
    seconds = parse_ttl(text)
    if seconds < 1:
        raise ValueError(f"invalid TTL {text!r}")
    return seconds


class TTLSchedule:
    """Pending expiries as a heap of (expires_ns, seq)."""

    __slots__ = ("heap",)

    def __init__(self):
        self.heap: list[tuple[int, int]] = []

    def __len__(self) -> int:
        return len(self.heap)

    def add(self, seq: int, expires: int) -> None:
        heapq.heappush(self.heap, (expires, seq))

    def next_expiry(self) -> int:
        return self.heap[0][0] if self.heap else NEVER

    def pop_due(self, now: int) -> list[int]:
        due = []
        while self.heap and self.heap[0][0] <= now:
            due.append(heapq.heappop(self.heap)[1])
        return due

    def keep(self, predicate) -> None:
        """Drop the entries whose sequence fails predicate (after purge, compact, truncate)."""
        self.heap = [e for e in self.heap if predicate(e[1])]
        heapq.heapify(self.heap)

    def encode(self, high_seq: int) -> bytes:
        out = bytearray(_HEADER.pack(THW_VERSION, len(self.heap), high_seq))
        for expires, seq in sorted(self.heap):
            put_varint(out, expires)
            put_uvarint(out, seq)
        return bytes(out)

    @classmethod
    def decode(cls, buf: bytes) -> tuple["TTLSchedule", int]:
        """(schedule, high_seq) from thw.db bytes; CorruptFile when they do not parse."""
        if len(buf) < _HEADER.size:
            raise CorruptFile("thw.db: too short")
        version, count, high_seq = _HEADER.unpack_from(buf)
        if version != THW_VERSION:
            raise CorruptFile(f"thw.db: unknown version {version}")
        if count > (len(buf) - _HEADER.size) // 2:
            raise CorruptFile(f"thw.db: {count} entries cannot fit in {len(buf)} bytes")
        sched, pos = cls(), _HEADER.size
        for _ in range(count):
            expires, pos = get_uvarint(buf, pos, len(buf), "thw.db: truncated")
            seq, pos = get_uvarint(buf, pos, len(buf), "thw.db: truncated")
            sched.heap.append((unzigzag(expires), seq))
        heapq.heapify(sched.heap)
        return sched, high_seq

