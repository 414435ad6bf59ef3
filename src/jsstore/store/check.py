"""A read-only check of one file stream's directory: every block's records (their hashes
and sequence order, as recovery walks them), ``msgs/index.db`` against the blocks, the
expiry state ``msgs/thw.db`` (and other state files of the same shape a caller names, such
as the schedules' ``msgs/sched.db``), and each consumer's ``o.dat``.  Nothing is written: a damaged block is reported, not truncated (the
next open of the stream does that, as nats-server does).

Each finding says what is damaged and what is lost: the bytes cut off a block and, where
they can be known (from index.db's block ranges or the next block's first sequence), the
message sequences."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from jsstore._core.ackstate import AckState
from jsstore._core.block import MsgBlock
from jsstore._core.compress import block_alg, decompress_block
from jsstore._core.hashing import block_hash_key
from jsstore._core.subjects import SubjectIndex
from jsstore.errors import CorruptFile, StoreError
from jsstore.store import indexdb
from jsstore.store.consumerstore import CONSUMER_DIR, STATE_FILE
from jsstore.store.filestore import BLOCK_SUFFIX, INDEX_FILE, MSGS_DIR, TTL_FILE
from jsstore.store.ttl import TTLSchedule

# msgs/ state files that decode to (table, high_seq) and that the store rebuilds from the
# messages' own headers: their name -> (decoder, what rebuilds them)
STATE_FILES = {TTL_FILE: (TTLSchedule.decode, "the messages' Nats-TTL headers")}


@dataclass
class Finding:
    """One damaged file: where, what is wrong, and what it costs (`lost_bytes` cut off,
    `lost_seqs` (first, last) ranges of messages gone, `lost_unknown` when some are gone
    whose sequences cannot be known)."""
    path: str
    problem: str
    lost_bytes: int = 0
    lost_seqs: list[tuple[int, int]] = field(default_factory=list)
    lost_unknown: bool = False

    @property
    def loses(self) -> bool:
        return bool(self.lost_bytes or self.lost_seqs or self.lost_unknown)


@dataclass
class BlockState:
    index: int
    first_seq: int
    last_seq: int
    msgs: int
    good_bytes: int
    size: int
    last_hash: bytes = b""


@dataclass
class StreamCheck:
    """What a stream directory's check found: the blocks as read, and the findings."""
    name: str
    directory: str
    blocks: list[BlockState] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def messages(self) -> int:
        return sum(b.msgs for b in self.blocks)

    @property
    def last_seq(self) -> int:
        return max((b.last_seq for b in self.blocks), default=0)


def block_indexes(msgs_dir: str) -> list[int]:
    out = []
    for name in os.listdir(msgs_dir) if os.path.isdir(msgs_dir) else ():
        stem = name[:-len(BLOCK_SUFFIX)] if name.endswith(BLOCK_SUFFIX) else ""
        if stem.isdigit():
            out.append(int(stem))
    return sorted(out)


def read_block(name: str, index: int, path: str) -> tuple[BlockState, Finding | None]:
    """A block walked record by record (hashes verified): its state and what is wrong."""
    with open(path, "rb") as f:
        data = f.read()
    mb = MsgBlock(index, block_hash_key(name, index), path, False)
    try:
        raw = decompress_block(data) if block_alg(data) else data
    except (StoreError, ValueError) as exc:
        return (BlockState(index, 0, 0, 0, 0, len(data)),
                Finding(path, f"unreadable block: {exc}", len(data), lost_unknown=True))
    mb.load_bytes(raw)
    mb.build_cache(SubjectIndex(), True, [])
    good = mb.raw_bytes
    mb.select_first()
    state = BlockState(index, mb.first_seq, mb.last_seq, mb.msgs, good, len(raw))
    if good < len(raw) and raw[good:].lstrip(b"\0"):
        what = "truncated record" if _is_truncated(raw, good) else "bad record"
        return state, Finding(path, f"{what} at offset {good} (block of {len(raw)} bytes)",
                              len(raw) - good)
    state.last_hash = raw[good - 8:good] if good >= 8 else b"\0" * 8
    return state, None


def _is_truncated(raw: bytes, offset: int) -> bool:
    """Whether the record at `offset` runs past the end of the data (cut short)."""
    if len(raw) - offset < 4:
        return True
    length = int.from_bytes(raw[offset:offset + 4], "little") & 0x7FFFFFFF
    return offset + length > len(raw)


def check_stream(name: str, directory: str, state_files: dict | None = None) -> StreamCheck:
    """Check a stream directory (its msgs/ blocks, index.db, the state files of
    STATE_FILES and `state_files`, and obs/*/o.dat)."""
    result = StreamCheck(name, directory)
    msgs_dir = os.path.join(directory, MSGS_DIR)
    saved = _read_index(name, os.path.join(msgs_dir, INDEX_FILE), result)
    saved_blocks = {b["index"]: b for b in saved["blocks"]} if saved else {}
    damaged: list[tuple[BlockState, Finding]] = []
    for index in block_indexes(msgs_dir):
        state, finding = read_block(name, index, os.path.join(msgs_dir, f"{index}{BLOCK_SUFFIX}"))
        result.blocks.append(state)
        if finding is not None:
            damaged.append((state, finding))
            result.findings.append(finding)
    for state, finding in damaged:
        _lost_sequences(state, finding, result.blocks, saved_blocks.get(state.index))
    if saved is not None:
        _compare_index(saved, result, os.path.join(msgs_dir, INDEX_FILE), bool(damaged))
    for file_name, (decode, rebuilt_from) in {**STATE_FILES, **(state_files or {})}.items():
        _check_state_file(os.path.join(msgs_dir, file_name), decode, rebuilt_from, result,
                          bool(damaged))
    _check_consumers(directory, result)
    return result


def _check_state_file(path: str, decode, rebuilt_from: str, result: StreamCheck,
                      blocks_damaged: bool) -> None:
    """A (table, high_seq) state file: one that does not decode is corrupt (the store
    rebuilds it from the messages); one that covers messages past the blocks' last is
    stale."""
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except FileNotFoundError:
        return
    try:
        _table, high_seq = decode(buf)
    except CorruptFile as exc:
        result.findings.append(Finding(path, f"corrupt: {exc} (rebuilt from {rebuilt_from} "
                                             "on the next open)"))
        return
    # high_seq: the first sequence the file does not cover (the last one's successor)
    if high_seq > result.last_seq + 1 and not blocks_damaged:
        result.findings.append(Finding(path, f"stale: it covers messages up to "
                                             f"{high_seq - 1}, the blocks end at "
                                             f"{result.last_seq}"))


def _read_index(name: str, path: str, result: StreamCheck) -> dict | None:
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except FileNotFoundError:
        return None                 # no state file (a crash): the blocks are the truth
    try:
        return indexdb.decode_index(name, buf)
    except StoreError as exc:
        result.findings.append(Finding(path, f"corrupt: {exc} (rebuilt from the blocks on "
                                             "the next open)"))
        return None


def _lost_sequences(state: BlockState, finding: Finding, blocks: list[BlockState],
                    saved: dict | None) -> None:
    """The sequences a damaged block loses: up to the next block's first message, or to
    the last sequence index.db knew the block to hold."""
    first_lost = (state.last_seq + 1) if state.last_seq else (saved or {}).get("first_seq", 0)
    later = [b for b in blocks if b.index > state.index and b.msgs]
    if later:
        last_lost = later[0].first_seq - 1
    elif saved is not None:
        last_lost = saved["last_seq"]
    else:
        finding.lost_unknown = True
        return
    if first_lost and last_lost >= first_lost:
        finding.lost_seqs.append((first_lost, last_lost))
        finding.lost_unknown = False
    elif finding.lost_bytes and not later and saved is None:
        finding.lost_unknown = True


def _compare_index(saved: dict, result: StreamCheck, path: str, blocks_damaged: bool) -> None:
    """index.db against the blocks: blocks it lists that are gone lose their messages; an
    index.db that does not describe the blocks (older or newer than they are) is stale."""
    on_disk = {b.index: b for b in result.blocks}
    for b in saved["blocks"]:
        if b["index"] not in on_disk and b["last_seq"] >= b["first_seq"] > 0:
            result.findings.append(Finding(
                os.path.join(os.path.dirname(path), f"{b['index']}{BLOCK_SUFFIX}"),
                "missing block (listed in index.db)",
                lost_seqs=[(b["first_seq"], b["last_seq"])]))
    if blocks_damaged:
        return
    last = result.blocks[-1] if result.blocks else None
    reasons = []
    if saved["last_seq"] != result.last_seq:
        reasons.append(f"it says last sequence {saved['last_seq']}, the blocks end at "
                       f"{result.last_seq}")
    if saved["msgs"] != result.messages:
        reasons.append(f"it counts {saved['msgs']} messages, the blocks hold "
                       f"{result.messages}")
    if last is not None and saved["last_index"] != last.index:
        reasons.append(f"its last block is {saved['last_index']}, on disk {last.index}")
    elif last is not None and last.last_hash and saved["lchk"] != last.last_hash:
        reasons.append("its last record hash does not match the last block's")
    if reasons:
        result.findings.append(Finding(path, "stale: " + "; ".join(reasons)
                                       + " (rebuilt from the blocks on the next open)"))


def _check_consumers(directory: str, result: StreamCheck) -> None:
    root = os.path.join(directory, CONSUMER_DIR)
    if not os.path.isdir(root):
        return
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, STATE_FILE)
        try:
            with open(path, "rb") as f:
                encoded = f.read()
        except FileNotFoundError:
            continue
        if not encoded:
            continue
        state = AckState()
        try:
            state.load_encoded(encoded)
        except (StoreError, ValueError) as exc:
            result.findings.append(Finding(path, f"corrupt consumer state: {exc} (its "
                                                 "deliveries and acks are lost)",
                                           lost_unknown=True))
            continue
        if (state.delivered_stream > result.last_seq
                or state.ack_floor_stream > state.delivered_stream):
            result.findings.append(Finding(
                path, f"inconsistent consumer state: delivered stream sequence "
                      f"{state.delivered_stream}, ack floor {state.ack_floor_stream}, the "
                      f"stream ends at {result.last_seq}"))
