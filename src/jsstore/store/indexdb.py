"""`msgs/index.db`: the stream state nats-server writes on a clean stop (read v1-4, write v4).

    [11][version]
    uvarint msgs, uvarint bytes, uvarint first_seq, varint first_ts, uvarint last_seq, varint last_ts
    uvarint subjects; each: uvarint len, subject, uvarint total, uvarint fblk, uvarint lblk
                            (before v4, lblk only when total > 1, else lblk = fblk)
    uvarint blocks; each: uvarint index, uvarint bytes, uvarint first_seq, varint first_ts - base,
                          uvarint last_seq, varint last_ts - base, uvarint num_deleted,
                          [v>=2] uvarint ttls, [v>=3] uvarint schedules,
                          [num_deleted > 0] the deleted set (avl.SequenceSet encoding)
    uvarint last block index, 8 bytes: hash of the last record of the last block
    8 bytes: HighwayHash-64 keyed by SHA-256(stream name) over everything above
base = first_ts.  A state that does not match the block files is ignored (rebuild).
"""

from __future__ import annotations

import os

from jsstore._core.storage import seqcodec
from jsstore._core.storage.block import MsgBlock
from jsstore._core.storage.hashing import block_hash_key, highway64_digest, meta_hash_key
from jsstore._core.storage.subjects import SubjectIndex
from jsstore.errors import CorruptFile, CorruptStreamState, StoreError
from jsstore.gocompat.varints import get_uvarint, put_uvarint, put_varint, unzigzag
from jsstore.store.files import write_atomically

MAGIC = 11
VERSION = 4
MIN_LEN = 32


class _Reader:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes, end: int):
        self.buf, self.pos, self.end = buf, 0, end

    def uvarint(self) -> int:
        value, self.pos = get_uvarint(self.buf, self.pos, self.end, "index.db: truncated varint")
        return value

    def varint(self) -> int:
        return unzigzag(self.uvarint())

    def take(self, n: int) -> bytes:
        if self.pos + n > self.end:
            raise CorruptFile("index.db: truncated")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out


def encode_index(store) -> bytes:
    out = bytearray([MAGIC, VERSION])
    base = store.first_ts if store.msgs else 0
    for v in (store.msgs, store.bytes, store.first_seq):
        put_uvarint(out, v)
    put_varint(out, base)
    put_uvarint(out, store.last_seq)
    put_varint(out, store.last_ts)
    psim = store.psim
    subjects = [(subj, sid) for subj, sid in psim.items() if psim.get(sid)[0] > 0]
    put_uvarint(out, len(subjects))
    for subj, sid in subjects:
        raw = subj.encode("utf-8", "surrogateescape")
        total, first, last = psim.get(sid)
        fblk, lblk = store.block_index_at(first), store.block_index_at(last)
        put_uvarint(out, len(raw))
        out += raw
        put_uvarint(out, total)
        put_uvarint(out, fblk)
        put_uvarint(out, lblk)
    put_uvarint(out, len(store.blocks))
    for mb in store.blocks:
        deleted = mb.deleted
        put_uvarint(out, mb.index)
        put_uvarint(out, mb.bytes)
        put_uvarint(out, mb.first_seq)
        put_varint(out, (mb.first_ts - base) if mb.first_ts else 0)
        put_uvarint(out, mb.last_seq)
        put_varint(out, (mb.last_ts - base) if mb.last_ts else 0)
        put_uvarint(out, len(deleted))
        put_uvarint(out, 0)  # ttls
        put_uvarint(out, 0)  # schedules
        if len(deleted):
            out += seqcodec.encode(deleted)
    put_uvarint(out, store.lmb.index if store.lmb is not None else 0)
    out += store.lmb.last_hash if store.lmb is not None else b"\0" * 8
    out += highway64_digest(meta_hash_key(store.name), bytes(out))
    return bytes(out)


def write_index(store, path: str) -> None:
    write_atomically(path, encode_index(store))


def decode_index(name: str, buf: bytes) -> dict:
    """Parse index.db bytes into a plain description; CorruptFile when it does not verify."""
    if len(buf) < MIN_LEN or buf[0] != MAGIC or not 1 <= buf[1] <= VERSION:
        raise CorruptFile("index.db: bad header")
    if highway64_digest(meta_hash_key(name), buf[:-8]) != buf[-8:]:
        raise CorruptFile("index.db: checksum mismatch")
    version = buf[1]
    r = _Reader(buf, len(buf) - 8)
    r.pos = 2
    st = {"msgs": r.uvarint(), "bytes": r.uvarint(), "first_seq": r.uvarint(),
          "first_ts": r.varint(), "last_seq": r.uvarint(), "last_ts": r.varint()}
    base = st["first_ts"]
    subjects = []
    for _ in range(r.uvarint()):
        subj = r.take(r.uvarint())
        total, fblk = r.uvarint(), r.uvarint()
        lblk = r.uvarint() if version >= 4 or total > 1 else fblk
        subjects.append((subj, total, fblk, lblk))
    blocks = []
    for _ in range(r.uvarint()):
        blk = {"index": r.uvarint(), "bytes": r.uvarint(), "first_seq": r.uvarint(),
               "first_ts": r.varint() + base, "last_seq": r.uvarint(), "last_ts": r.varint() + base}
        num_deleted = r.uvarint()
        if version >= 2:
            r.uvarint()
        if version >= 3:
            r.uvarint()
        deleted = None
        if num_deleted:
            try:
                deleted, used = seqcodec.decode(buf[r.pos:r.end])
            except CorruptStreamState as exc:
                raise CorruptFile(f"index.db: {exc}") from exc
            r.pos += used
        blk["deleted"] = deleted
        blocks.append(blk)
    st["subjects"] = subjects
    st["blocks"] = blocks
    st["last_index"] = r.uvarint()
    st["lchk"] = r.take(8)
    return st


def load_index(store, path: str, indexes: list[int]) -> tuple[str, bool]:
    """Set the store's state from index.db when it matches the block files.  Returns ("",
    False), or why the state was not used (the store then rebuilds from the blocks) and
    whether it is only outdated: the blocks hold records written after it (as after a
    crash; nats-server's errPriorState), so blocks it lists that are gone were removed
    since, not lost."""
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except FileNotFoundError:
        return "no index.db", False
    except OSError as exc:
        return f"unreadable: {exc.strerror}", False
    try:
        st = decode_index(store.name, buf)
    except CorruptFile as exc:
        return f"corrupt: {exc}", False
    blocks_meta = st["blocks"]
    # In nats-server's order: the last block it lists must be there and end with the record
    # it names, no block file may come after it, every block it lists must be there (a
    # block file it does not list, kept only for its tombstones, is left alone), and the
    # totals must add up.
    on_disk = set(indexes)
    last_index = st["last_index"]
    if not blocks_meta or blocks_meta[-1]["index"] != last_index:
        return f"its last block {last_index} is not the last it lists", False
    if last_index not in on_disk:
        return f"its last block {last_index} is missing", False
    lmb_path = store._block_path(last_index)
    try:
        size = os.path.getsize(lmb_path)
        with open(lmb_path, "rb") as f:
            if size >= 8:
                f.seek(size - 8)
                tail = f.read(8)
            else:
                tail = b"\0" * 8
    except OSError as exc:
        return f"last block unreadable: {exc.strerror}", False
    if tail != st["lchk"]:
        return "its last record hash does not match the last block's", True
    if indexes[-1] != last_index:
        return f"its last block is {last_index}, on disk {indexes[-1]}", True
    missing = [b["index"] for b in blocks_meta if b["index"] not in on_disk]
    if missing:
        return f"block {missing[0]} it lists is missing", False
    problem = _tracking_mismatch(st) or _last_block_mismatch(store, blocks_meta[-1])
    if problem:
        return problem, False
    psim = SubjectIndex()
    blocks = []
    by_index = {}
    for b in blocks_meta:
        mb = MsgBlock(b["index"], block_hash_key(store.name, b["index"]), store._block_path(b["index"]), False)
        mb.first_seq, mb.last_seq = b["first_seq"], b["last_seq"]
        mb.first_ts, mb.last_ts = b["first_ts"], b["last_ts"]
        if b["deleted"] is not None:
            mb.deleted = b["deleted"]
        mb.msgs = _block_msgs(b)
        mb.bytes = b["bytes"]
        try:
            mb.raw_bytes = os.path.getsize(mb.path)
        except OSError as exc:
            return f"block {mb.index} unreadable: {exc.strerror}", False
        blocks.append(mb)
        by_index[mb.index] = mb
    for subj, total, fblk, lblk in st["subjects"]:
        sid = psim.intern(subj)
        first = by_index[fblk].first_seq if fblk in by_index else st["first_seq"]
        last = by_index[lblk].last_seq if lblk in by_index else st["last_seq"]
        psim.set(sid, total, first, last)
    store.psim = psim
    store.blocks = blocks
    store.lmb = blocks[-1]
    store.lmb.last_hash = st["lchk"]
    store.msgs, store.bytes = st["msgs"], st["bytes"]
    store.first_seq, store.first_ts = st["first_seq"], st["first_ts"]
    store.last_seq, store.last_ts = st["last_seq"], st["last_ts"]
    return "", False


def _tracking_mismatch(st: dict) -> str:
    """As nats-server's trackingStatesEqual: the state's messages, bytes and last (and,
    past 1, first) sequence must be what its blocks add up to ("" when they are)."""
    blocks = st["blocks"]
    kept = [b for b in blocks[:-1] if _block_msgs(b)] + blocks[-1:]
    msgs = sum(_block_msgs(b) for b in kept)
    size = sum(b["bytes"] for b in kept)
    first = kept[0]["first_seq"] if kept else 0
    last = max((b["last_seq"] for b in kept), default=0)
    if msgs != st["msgs"]:
        return f"it counts {st['msgs']} messages, its blocks add up to {msgs}"
    if size != st["bytes"]:
        return f"it counts {st['bytes']} bytes, its blocks add up to {size}"
    if last != st["last_seq"]:
        return f"it says last sequence {st['last_seq']}, its blocks end at {last}"
    if first > 1 and first != st["first_seq"]:
        return f"it says first sequence {st['first_seq']}, its blocks start at {first}"
    return ""


def _last_block_mismatch(store, b: dict) -> str:
    """As nats-server, which loads the write block at the start: its records (hashes
    verified) must end where the state says it ends ("" when they do).  (No other block
    is read: a clean open reads the write block only.)"""
    mb = MsgBlock(b["index"], block_hash_key(store.name, b["index"]), store._block_path(b["index"]),
                  False)
    try:
        data = store._read_block(mb)
    except (OSError, ValueError, StoreError) as exc:
        return f"its last block is unreadable: {exc}"
    walked = MsgBlock(b["index"], block_hash_key(store.name, b["index"]), None, False)
    walked.load_bytes(data)
    walked.build_cache(SubjectIndex(), True, None)
    if walked.raw_bytes < len(data) and data[walked.raw_bytes:].lstrip(b"\0"):
        return f"its last block has a bad record at offset {walked.raw_bytes}"
    if _block_msgs(b) and walked.last_seq != b["last_seq"]:
        return (f"it says its last block ends at {b['last_seq']}, its records end at "
                f"{walked.last_seq}")
    return ""


def _block_msgs(b: dict) -> int:
    """A listed block's message count (as nats-server loads it: its range less its
    deleted set)."""
    if b["last_seq"] < b["first_seq"]:
        return 0
    return b["last_seq"] - b["first_seq"] + 1 - (len(b["deleted"]) if b["deleted"] else 0)


def fix_subject_hints(store) -> None:
    """Set every subject's total and first/last from the blocks' subject state."""
    psim = store.psim
    totals: dict[int, list] = {}
    for mb in store.blocks:
        if mb.subjects is None:
            store.ensure_loaded(mb)
        for sid, count, first, last in mb.subjects.items():
            if count == 0:
                continue
            cur = totals.get(sid)
            if cur is None:
                totals[sid] = [count, first, last]
            else:
                cur[0] += count
                cur[2] = last
    for subj, sid in psim.items():
        cur = totals.get(sid)
        if cur is None:
            if psim.get(sid)[0] == 0:
                psim.release(sid)
            continue
        psim.set(sid, *cur)
