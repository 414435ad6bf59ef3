"""Go's encoding/binary varints, as nats-server's state files (index.db, thw.db, sched.db)
write them: unsigned LEB128, and signed values zigzag-encoded first."""

from __future__ import annotations

from jsstore.errors import CorruptFile


def put_uvarint(out: bytearray, value: int) -> None:
    """Append an unsigned varint (7 bits a byte, low bits first)."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def zigzag(value: int) -> int:
    """A signed value as Go's PutVarint maps it onto an unsigned one."""
    return (value << 1) if value >= 0 else ((-value << 1) - 1)


def unzigzag(value: int) -> int:
    return (value >> 1) if not value & 1 else ~(value >> 1)


def put_varint(out: bytearray, value: int) -> None:
    put_uvarint(out, zigzag(value))


def get_uvarint(buf: bytes, pos: int, end: int, truncated: str) -> tuple[int, int]:
    """(value, position after it) of the varint at pos; CorruptFile(truncated) when it runs
    past end or over 64 bits."""
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise CorruptFile(truncated)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
