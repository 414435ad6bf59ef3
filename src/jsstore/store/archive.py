"""nats-server 2.15's stream snapshot archive (``NATSARC1``), read for a restore.

After S2 decompression the archive is the magic ``NATSARC1`` and entries, each: uvarint
name length, varint (zigzag) timestamp ns, uvarint sequence, uvarint header size, uvarint
payload size, the name, then headers and body.  In order: ``state.json`` (the stream state),
one ``consumers/<name>`` entry per consumer (``{"config": ..., "state": ...}``), the
messages in ascending sequence (the subject as the name), and a sentinel with an empty name
and every number zero.  An archive without its sentinel is incomplete (an error)."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from jsstore.errors import CorruptFile
from jsstore.gocompat.varints import get_uvarint, unzigzag
from jsstore.state import ConsumerState, Pending, SequencePair

MAGIC = b"NATSARC1"
STATE_ENTRY = "state.json"
CONSUMER_PREFIX = "consumers/"


@dataclass
class ArchivedMsg:
    seq: int
    ts: int
    subject: str
    hdr: bytes | None
    msg: bytes


@dataclass
class Archive:
    """What an archive holds: the stream state (JSON), the consumers' entries and the
    messages in sequence order."""
    state: dict
    consumers: list[tuple[str, dict]] = field(default_factory=list)
    messages: list[ArchivedMsg] = field(default_factory=list)


def is_archive(raw: bytes) -> bool:
    """Whether decompressed snapshot bytes are a NATSARC1 archive (else a tar)."""
    return raw[:len(MAGIC)] == MAGIC


def read_archive(raw: bytes) -> Archive:
    """The archive's contents; CorruptFile when it is malformed or ends early."""
    pos, end = len(MAGIC), len(raw)
    archive: Archive | None = None
    last_seq = 0
    while True:
        if pos >= end:
            raise CorruptFile("archive: ends before its end-of-backup entry")
        name_len, pos = get_uvarint(raw, pos, end, "archive: truncated entry")
        ts, pos = get_uvarint(raw, pos, end, "archive: truncated entry")
        seq, pos = get_uvarint(raw, pos, end, "archive: truncated entry")
        hdr_len, pos = get_uvarint(raw, pos, end, "archive: truncated entry")
        body_len, pos = get_uvarint(raw, pos, end, "archive: truncated entry")
        if pos + name_len + hdr_len + body_len > end:
            raise CorruptFile("archive: truncated entry")
        name = raw[pos:pos + name_len].decode("utf-8", "replace")
        pos += name_len
        hdr = raw[pos:pos + hdr_len]
        pos += hdr_len
        body = raw[pos:pos + body_len]
        pos += body_len
        if not name and not (ts or seq or hdr_len or body_len):
            if archive is None:
                raise CorruptFile("archive: no state.json entry")
            return archive
        if archive is None:
            if name != STATE_ENTRY:
                raise CorruptFile(f"archive: first entry is {name!r}, not state.json")
            archive = Archive(_json(body, name))
        elif seq == 0 and name.startswith(CONSUMER_PREFIX):
            entry = _json(body, name)
            if not isinstance(entry.get("config"), dict) or "state" not in entry:
                raise CorruptFile(f"archive: {name} lacks its configuration or state")
            archive.consumers.append((name[len(CONSUMER_PREFIX):], entry))
        elif seq > last_seq:
            archive.messages.append(ArchivedMsg(seq, unzigzag(ts), name, hdr or None, body))
            last_seq = seq
        else:
            raise CorruptFile(f"archive: entry {name!r} out of order (sequence {seq})")


def _json(body: bytes, name: str) -> dict:
    try:
        value = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise CorruptFile(f"archive: {name}: {exc}") from None
    if not isinstance(value, dict):
        raise CorruptFile(f"archive: {name} is not a JSON object")
    return value


def consumer_state(state: dict) -> ConsumerState:
    """A consumer entry's state (nats-server's ConsumerState JSON)."""
    def pair(key: str) -> SequencePair:
        value = state.get(key) or {}
        return SequencePair(int(value.get("consumer_seq", 0)), int(value.get("stream_seq", 0)))
    pending = {int(sseq): Pending(int(p.get("sequence", 0)), int(p.get("ts", 0)))
               for sseq, p in (state.get("pending") or {}).items()}
    redelivered = {int(sseq): int(n) for sseq, n in (state.get("redelivered") or {}).items()}
    return ConsumerState(pair("delivered"), pair("ack_floor"), pending or None,
                         redelivered or None)
