"""Planning a directory read on the driver: which block files, which sequences of each, in
which partitions, from the stream's index and block metadata.

Where a block's range, times and deletes come from:
  - a current `msgs/index.db` (it verifies, its last block is the last block file and that
    file still ends with the hash it recorded: the store was stopped cleanly, or nats-server
    wrote it since the last append): everything, with no block read at all;
  - otherwise every block's record headers are walked once (`summarize_block`; compressed
    blocks are decompressed for it): its live range, times, subjects and tombstones.  An
    index.db that verifies but is stale still contributes the deletes it lists, and its
    first sequence (everything below was removed).
Messages removed by limits while a store is open, without a tombstone, are only known to the
running store; they are left out once it writes index.db (nats-server does so every two
minutes, jsstore on a clean stop).

The snapshot is everything up to the last sequence seen here: a partition never reads past
it, so a store being appended to while Spark reads gives one consistent cut.

Damage (loud or right: a read returns everything the store holds, or fails naming what it
cannot read).  Every record's hash is checked as it is read (the block key is SHA-256 of
"<stream>-<index>", as nats-server's); bytes that are not a record, or a record whose hash
is wrong, are a damaged stretch, and the walk goes on at the next intact record.  What is
missing is what the store should hold there and no read can give:
  - from a current index.db, every sequence of a block's [first, last] that index.db does
    not list as deleted (`BlockSlice.complete`);
  - otherwise the sequences between the last intact record before a damaged stretch and the
    first one after it, or, when nothing intact follows, up to the block's known last
    sequence: a stale index.db's range for the block, else the next block's first sequence
    less one.  A damaged end of the last block with nothing known after it is a write cut
    short (nats-server and jsstore drop it when they recover the store): the end of the
    stream.  A block file a stale index.db lists and that is gone loses its range, unless
    index.db is only older than the blocks (then, as for the store's own recovery and
    nats-server, the block was removed since).
Sequences that are deleted (index.db's deletes, tombstones) are never missing.  By default
a read with missing sequences fails (`DataLoss`, naming the file, the offset and the
sequences); with option fail_on_data_loss=false it gives what can be read.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field

from jsstore._core.columns.arrowblock import MAX_SEQ, summarize_block
from jsstore._core.storage.compress import block_alg, decompress_block
from jsstore._core.storage.hashing import block_hash_key
from jsstore.errors import BadMsg, CorruptFile
from jsstore.spark.scan import ScanFilter
from jsstore.store.indexdb import decode_index

BLOCK_SUFFIX = ".blk"
INDEX_FILE = "index.db"
MSGS_DIR = "msgs"
TS_MIN = -(1 << 63)
TS_MAX = (1 << 63) - 1


class StreamNotFound(FileNotFoundError):
    """No stream directory (no meta.inf) where the options point."""


class DataLoss(IOError):
    """Messages the store holds cannot be read: a damaged or missing block file."""


RETRY_HINT = "option fail_on_data_loss=false reads what is readable"


def seq_ranges_text(seqs) -> str:
    """Sorted sequences as "1-5, 9" (at most 20 runs shown)."""
    runs: list[list[int]] = []
    for seq in sorted(seqs):
        if runs and runs[-1][1] + 1 == seq:
            runs[-1][1] = seq
        else:
            runs.append([seq, seq])
    shown = [f"{a}-{b}" if a != b else str(a) for a, b in runs[:20]]
    if len(runs) > 20:
        shown.append(f"... ({len(runs) - 20} more ranges)")
    return ", ".join(shown)


@dataclass
class Loss:
    """Sequences a read cannot give, and why."""
    path: str
    problem: str
    seqs: list[int]

    def text(self) -> str:
        return (f"data loss: {self.path}: {self.problem}: {len(self.seqs)} message(s) "
                f"missing, sequences {seq_ranges_text(self.seqs)} ({RETRY_HINT})")


def missing_between(low: int, high: int, deleted) -> list[int]:
    return [seq for seq in range(low, high + 1) if seq not in deleted]


@dataclass
class BlockInfo:
    index: int                     # N of N.blk
    path: str
    size: int                      # bytes on disk (compressed size when compressed)
    first_seq: int                 # lowest live sequence (first > last: no live message)
    last_seq: int
    first_ts: int
    last_ts: int
    msgs: int                      # live messages (before tombstones found in later blocks)
    deleted: set[int] = field(default_factory=set)
    subjects: frozenset[str] | None = None   # distinct subjects; None when not known
    tombstones: list[int] = field(default_factory=list)
    holes: list = field(default_factory=list)  # damaged stretches the walk found (summary)


@dataclass
class StreamBlocks:
    """The blocks of a stream as seen at planning time."""
    directory: str
    blocks: list[BlockInfo]
    last_seq: int                  # the snapshot: nothing above it is read
    first_seq: int                 # nothing below it is read
    source: str                    # "index" or "scan"
    # subject -> (total, first block index, last block index), from a current index.db
    subject_blocks: dict[str, tuple[int, int, int]] | None = None
    losses: list[Loss] = field(default_factory=list)   # found while planning (missing files)
    name: str = ""

    def check_losses(self, scan: ScanFilter, fail: bool) -> None:
        """Fail with the first loss found while planning that the scan's range touches."""
        if not fail:
            return
        for loss in self.losses:
            touched = [seq for seq in loss.seqs if scan.seq_low <= seq <= scan.seq_high]
            if touched:
                raise DataLoss(Loss(loss.path, loss.problem, touched).text())


@dataclass
class BlockSlice:
    """Part of one block to read: [seq_low, seq_high] minus `deleted` (packed u64).
    `complete`: every one of those sequences must be there (a current index.db says so);
    `hash_key`: the block's record key, every record's hash is checked."""
    path: str
    index: int
    size: int
    seq_low: int
    seq_high: int
    deleted: bytes = b""
    complete: bool = False
    hash_key: bytes = b""


@dataclass
class PlannedPartition:
    slices: list[BlockSlice]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.slices)


def block_files(msgs_dir: str) -> list[tuple[int, str, int]]:
    """(index, path, size) of every N.blk, ascending index."""
    out = []
    try:
        names = os.listdir(msgs_dir)
    except FileNotFoundError:
        return out
    for name in names:
        if name.endswith(BLOCK_SUFFIX) and name[:-len(BLOCK_SUFFIX)].isdigit():
            path = os.path.join(msgs_dir, name)
            try:
                size = os.path.getsize(path)
            except FileNotFoundError:
                continue
            out.append((int(name[:-len(BLOCK_SUFFIX)]), path, size))
    out.sort()
    return out


def read_plain_block(path: str) -> bytes:
    """A block file's bytes, decompressed when the file is s2 or lz4 compressed."""
    with open(path, "rb") as f:
        data = f.read()
    return decompress_block(data) if block_alg(data) else data


def _tail(path: str, size: int) -> bytes:
    if size < 8:
        return b"\0" * 8
    with open(path, "rb") as f:
        f.seek(size - 8)
        return f.read(8)


def _read_index(stream_name: str, msgs_dir: str):
    try:
        with open(os.path.join(msgs_dir, INDEX_FILE), "rb") as f:
            return decode_index(stream_name, f.read())
    except (OSError, CorruptFile):
        return None


def _index_is_current(state, files) -> bool:
    if state is None or not files or not state["blocks"]:
        return False
    on_disk = {index: (path, size) for index, path, size in files}
    last_index, last_path, last_size = files[-1]
    if state["last_index"] != last_index or state["blocks"][-1]["index"] != last_index:
        return False
    if any(b["index"] not in on_disk for b in state["blocks"]):
        return False
    return _tail(last_path, last_size) == state["lchk"]


def _index_outdated(state, files) -> bool:
    """Whether a stale index.db is only older than the blocks: records were written after it
    (its last block no longer ends with the hash it names, or block files follow its last),
    as a running or crashed server leaves it.  As the store's own recovery and nats-server
    take it, a block it lists that is gone was then removed since, not lost."""
    if state is None or not files:
        return False
    on_disk = {index: (path, size) for index, path, size in files}
    if files[-1][0] > state["last_index"]:
        return True
    last = on_disk.get(state["last_index"])
    return last is not None and _tail(last[0], last[1]) != state["lchk"]


def stream_exists(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "meta.inf"))


def load_stream_blocks(directory: str, stream_name: str) -> StreamBlocks:
    if not stream_exists(directory):
        raise StreamNotFound(f"no stream {stream_name!r} in the store directory "
                             f"(looked for {os.path.join(directory, 'meta.inf')})")
    msgs_dir = os.path.join(directory, MSGS_DIR)
    files = block_files(msgs_dir)
    state = _read_index(stream_name, msgs_dir)
    if _index_is_current(state, files):
        stream = _from_index(directory, state, files)
    else:
        stream = _from_scan(directory, stream_name, state, files)
    stream.name = stream_name
    return stream


def _from_index(directory: str, state, files) -> StreamBlocks:
    sizes = {index: (path, size) for index, path, size in files}
    blocks = []
    for b in state["blocks"]:
        path, size = sizes[b["index"]]
        deleted = set(b["deleted"].to_list()) if b["deleted"] is not None else set()
        live = b["last_seq"] - b["first_seq"] + 1 - len(deleted) if b["last_seq"] >= b["first_seq"] else 0
        blocks.append(BlockInfo(b["index"], path, size, b["first_seq"], b["last_seq"],
                                b["first_ts"], b["last_ts"], live, deleted))
    subject_blocks = {subject.decode("utf-8", "surrogateescape"): (total, fblk, lblk)
                      for subject, total, fblk, lblk in state["subjects"]}
    return StreamBlocks(directory, blocks, state["last_seq"], state["first_seq"], "index",
                        subject_blocks)


# path -> (size, mtime ns, summary): a block file that has not changed is not walked again
# (a streaming query plans every micro-batch in the same process); every summary is taken
# with the block's hash key (the directory's name is the stream's)
_summaries: dict[str, tuple[int, int, dict]] = {}
SUMMARY_CACHE_LIMIT = 100_000


def block_summary(path: str, reuse: bool = True, hash_key: bytes | None = None) -> dict:
    """summarize_block of a block file (hashes checked with `hash_key`), reused while its
    size and mtime stay the same.  Never reuse for the last block: a store appends to it
    through a file mapping that changes neither its size (reserved up front) nor, right
    away, its mtime.  A compressed block that does not decompress is one damaged stretch."""
    info = os.stat(path)
    cached = _summaries.get(path)
    if reuse and cached is not None and cached[0] == info.st_size and cached[1] == info.st_mtime_ns:
        return cached[2]
    try:
        plain = read_plain_block(path)
    except BadMsg as exc:
        summary = summarize_block(b"")
        summary["holes"] = [[0, 1, 0]]
        summary["unreadable"] = str(exc)
    else:
        summary = summarize_block(plain, hash_key)
    if len(_summaries) >= SUMMARY_CACHE_LIMIT:
        _summaries.clear()
    _summaries[path] = (info.st_size, info.st_mtime_ns, summary)
    return summary


def latest_sequence(directory: str) -> int:
    """The highest sequence in a stream's block files (0 when none), reading only the last
    block(s): what a streaming query polls."""
    files = block_files(os.path.join(directory, MSGS_DIR))
    for position in range(len(files) - 1, -1, -1):
        try:
            summary = block_summary(files[position][1], reuse=position < len(files) - 1,
                                    hash_key=block_hash_key(os.path.basename(directory),
                                                            files[position][0]))
        except FileNotFoundError:
            continue
        last = max(summary["max_seq"], summary["last_seq"], max(summary["tombstones"], default=0))
        if last:
            return last
    return 0


def _from_scan(directory: str, stream_name: str, state, files) -> StreamBlocks:
    blocks = []
    last_seq = 0
    tombstones: list[int] = []
    present = set()
    saved = {b["index"]: b for b in state["blocks"]} if state is not None else {}
    for position, (index, path, size) in enumerate(files):
        try:
            summary = block_summary(path, reuse=position < len(files) - 1,
                                    hash_key=block_hash_key(stream_name, index))
        except FileNotFoundError:
            continue               # removed since it was listed (limits, compaction)
        present.add(index)
        last_seq = max(last_seq, summary["max_seq"], summary["last_seq"])
        tombstones.extend(summary["tombstones"])
        if summary["msgs"] == 0 and not summary["holes"]:
            continue
        blocks.append(BlockInfo(index, path, size, summary["first_seq"] or last_seq + 1,
                                summary["last_seq"] or last_seq, summary["first_ts"],
                                summary["last_ts"], summary["msgs"],
                                subjects=(frozenset(summary["subjects"])
                                          if summary["msgs"] and not summary["holes"] else None),
                                holes=summary["holes"]))
    first_seq = 0
    losses: list[Loss] = []
    if state is not None:
        # a stale index.db: its deletes still hold, nothing below its first sequence lives,
        # and each block it lists held at least its range
        first_seq = state["first_seq"]
        last_seq = max(last_seq, state["last_seq"])
        for block in blocks:
            old = saved.get(block.index)
            if old is not None and old["deleted"] is not None:
                block.deleted.update(old["deleted"].to_list())
    _known_ranges(blocks, saved, first_seq)
    _assign_tombstones(blocks, tombstones)
    removed = set(tombstones)
    outdated = _index_outdated(state, files)
    for index, old in sorted(saved.items()):
        if outdated or index in present or old["last_seq"] < max(old["first_seq"], first_seq):
            continue
        deleted = set(old["deleted"].to_list()) if old["deleted"] is not None else set()
        seqs = [seq for seq in range(max(old["first_seq"], first_seq), old["last_seq"] + 1)
                if seq not in deleted and seq not in removed]
        if seqs:
            losses.append(Loss(os.path.join(directory, MSGS_DIR, f"{index}{BLOCK_SUFFIX}"),
                               "block file listed in index.db is missing", seqs))
    blocks = [b for b in blocks if b.last_seq >= first_seq and b.last_seq >= b.first_seq]
    return StreamBlocks(directory, blocks, last_seq, first_seq, "scan", None, losses)


def _known_ranges(blocks: list[BlockInfo], saved: dict, first_seq: int) -> None:
    """Stretch the range of each damaged block to what it is known to have held, so that its
    reader finds the sequences it cannot give: a stale index.db's range for it; before a
    damaged start, from the previous block's last sequence on; after a damaged end (nothing
    intact after it), up to the next block's first sequence less one.  An undamaged block
    keeps its own range: messages a server removed since index.db was written are not
    missing."""
    for position, block in enumerate(blocks):
        if not block.holes:
            continue
        old = saved.get(block.index)
        if old is not None and old["last_seq"] >= old["first_seq"]:
            block.first_seq = min(block.first_seq, old["first_seq"])
            block.last_seq = max(block.last_seq, old["last_seq"])
        if block.holes[0][1] <= 1:             # damaged before any intact message record
            before = blocks[position - 1].last_seq + 1 if position else max(first_seq, 1)
            block.first_seq = min(block.first_seq, before)
        if block.holes[-1][2] == 0:            # nothing intact after the last damage
            following = next((b for b in blocks[position + 1:] if b.msgs), None)
            if following is not None:
                block.last_seq = max(block.last_seq, following.first_seq - 1)


def _assign_tombstones(blocks: list[BlockInfo], tombstones: list[int]) -> None:
    if not tombstones or not blocks:
        return
    firsts = [b.first_seq for b in blocks]
    for seq in tombstones:
        pos = bisect_right(firsts, seq) - 1
        if pos >= 0 and blocks[pos].first_seq <= seq <= blocks[pos].last_seq:
            blocks[pos].deleted.add(seq)


# -- pruning and partitions ----------------------------------------------------------------

def _subject_block_ranges(stream: StreamBlocks, scan: ScanFilter):
    """Index ranges [first, last] of the blocks holding a subject the scan accepts (from a
    current index.db), or None when not known / not narrowing."""
    if stream.subject_blocks is None or scan.all_subjects:
        return None
    if scan.exact is not None:
        candidates = [s for s in scan.exact if s in stream.subject_blocks]
    else:
        candidates = stream.subject_blocks.keys()
    predicate = scan.predicate()
    return [(stream.subject_blocks[s][1], stream.subject_blocks[s][2])
            for s in candidates if predicate.accepts(s)]


def block_may_match(block: BlockInfo, scan: ScanFilter, ranges, predicate) -> bool:
    if block.first_seq > block.last_seq:
        return False
    if not scan.overlaps(block.first_seq, block.last_seq, block.first_ts, block.last_ts):
        return False
    if ranges is not None and not any(low <= block.index <= high for low, high in ranges):
        return False
    if block.subjects is not None and predicate is not None:
        if not any(predicate.accepts(s) for s in block.subjects):
            return False
    return True


def plan_slices(stream: StreamBlocks, scan: ScanFilter) -> list[BlockSlice]:
    """The block slices a scan must read, in sequence order."""
    if scan.empty:
        return []
    ranges = _subject_block_ranges(stream, scan)
    predicate = None if scan.all_subjects else scan.predicate()
    low_bound = max(scan.seq_low, stream.first_seq)
    high_bound = min(scan.seq_high, stream.last_seq)
    out = []
    for block in stream.blocks:
        if not block_may_match(block, scan, ranges, predicate):
            continue
        low = max(block.first_seq, low_bound)
        high = min(block.last_seq, high_bound)
        if low > high:
            continue
        deleted = sorted(s for s in block.deleted if low <= s <= high)
        if len(deleted) == high - low + 1:
            continue
        out.append(BlockSlice(block.path, block.index, block.size, low, high,
                              array("Q", deleted).tobytes(), stream.source == "index",
                              block_hash_key(stream.name, block.index)))
    return out


def group_slices(slices: list[BlockSlice], target_bytes: int) -> list[PlannedPartition]:
    """Consecutive slices grouped into as few partitions as keep each under target_bytes
    (a block bigger than that is a partition of its own), with the bytes spread evenly:
    the job lasts as long as its biggest task."""
    total = sum(piece.size for piece in slices)
    if not slices:
        return []
    count = max(1, -(-total // max(target_bytes, 1)))
    partitions: list[PlannedPartition] = []
    current: list[BlockSlice] = []
    done = 0
    for piece in slices:
        # cut before this piece when it would carry the group past its even share
        boundary = total * (len(partitions) + 1) / count
        if current and (done + piece.size / 2 > boundary or
                        sum(p.size for p in current) + piece.size > target_bytes):
            partitions.append(PlannedPartition(current))
            current = []
        current.append(piece)
        done += piece.size
    partitions.append(PlannedPartition(current))
    return partitions


def plan(directory: str, stream_name: str, scan: ScanFilter, target_bytes: int,
         fail_on_data_loss: bool = True) -> tuple[StreamBlocks, list[PlannedPartition]]:
    stream = load_stream_blocks(directory, stream_name)
    stream.check_losses(scan, fail_on_data_loss)
    return stream, group_slices(plan_slices(stream, scan), target_bytes)


__all__ = ["BlockInfo", "BlockSlice", "DataLoss", "Loss", "PlannedPartition", "StreamBlocks",
           "StreamNotFound",
           "load_stream_blocks", "plan", "plan_slices", "group_slices", "read_plain_block",
           "MAX_SEQ"]
