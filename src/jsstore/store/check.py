"""A read-only check of one file stream's directory.  The stream is recovered in memory
by the file store's own recovery -- the code a reopen runs -- twice when index.db is
used: as a reopen takes it (index.db, when it matches the block files), and from the
blocks alone with every record's hash verified.  Nothing is written: a damaged block is
reported, not truncated (the next open of the stream does that, as nats-server does).

Findings:
- every damaged or missing block, with what is lost (jsstore.store.damage: the bytes cut
  off and, where they can be known, the message sequences), as the recovery records it;
- index.db: corrupt (it does not decode or verify), stale (a reopen does not use it: the
  reason), or wrong (a reopen would use it, and its state is not the blocks' state).  One
  only older than the blocks (they hold records written after it, as a crash of
  nats-server leaves it) is a note, not a finding: a reopen rebuilds and loses nothing;
- the expiry state ``msgs/thw.db`` (and other state files of the same shape a caller
  names, such as the schedules' ``msgs/sched.db``): corrupt, or covering messages past the
  blocks;
- each consumer's ``o.dat``: corrupt, or past the stream's end.

The state reported is the state a reopen reaches (limits applied); with damaged blocks,
what the blocks still hold once the damage is cut off."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from jsstore._core.storage.ackstate import AckState
from jsstore.errors import CorruptFile, StoreError
from jsstore.store import indexdb
from jsstore.store.config import StoreConfig, StoreOptions
from jsstore.store.consumerstore import CONSUMER_DIR, STATE_FILE
from jsstore.store.damage import Damage
from jsstore.store.filestore import INDEX_FILE, MSGS_DIR, TTL_FILE, FileStore
from jsstore.store.ttl import TTLSchedule

# msgs/ state files that decode to (table, high_seq) and that the store rebuilds from the
# messages' own headers: their name -> (decoder, what rebuilds them)
STATE_FILES = {TTL_FILE: (TTLSchedule.decode, "the messages' Nats-TTL headers")}


class InMemoryRecovery(FileStore):
    """A file store recovered by FileStore's own recovery with every write kept in memory:
    no lock taken, no file created, truncated, rewritten or removed.  `use_index`: whether
    the state may come from index.db (as a reopen takes it) or only from the blocks."""

    def __init__(self, directory: str, config: StoreConfig, *, use_index: bool):
        self.use_index = use_index
        super().__init__(directory, config, StoreOptions(sync_interval=0, mmap=False))

    def _take_directory(self) -> int:
        return -1

    def _drop_file(self, path: str) -> None:
        pass

    def _write_file(self, path: str, data: bytes, sync: bool = True) -> None:
        pass

    def _attach_block(self, mb) -> None:
        pass

    def _remove_block(self, mb) -> None:
        mb.close_file()

    def _persist_truncated(self, mb, data: bytes) -> None:
        pass

    def _rewrite_record(self, mb, offset: int, record: bytes) -> None:
        pass

    def stop(self) -> None:
        """Close without writing a state file."""
        self.closed = True
        for mb in self.blocks:
            mb.close_file()


@dataclass
class StreamCheck:
    """What a stream directory's check found: the stream's state and the findings."""
    name: str
    directory: str
    messages: int = 0
    bytes: int = 0
    first_seq: int = 0
    last_seq: int = 0
    findings: list[Damage] = field(default_factory=list)
    # (path, note): what is normal but worth saying
    notes: list[tuple[str, str]] = field(default_factory=list)


def _state(store) -> dict:
    return {"messages": store.msgs, "bytes": store.bytes, "first_seq": store.first_seq,
            "last_seq": store.last_seq, "subjects": store.subjects_totals(">")}


def check_stream(name: str, directory: str, config: StoreConfig,
                 state_files: dict | None = None) -> StreamCheck:
    """Check a stream directory (its msgs/ blocks, index.db, the state files of
    STATE_FILES and `state_files`, and obs/*/o.dat); `config`: the stream's (meta.inf)."""
    result = StreamCheck(name, directory)
    msgs_dir = os.path.join(directory, MSGS_DIR)
    index_path = os.path.join(msgs_dir, INDEX_FILE)
    if not os.path.isdir(msgs_dir):
        result.findings.append(Damage(msgs_dir, "missing messages folder", lost_unknown=True))
        return result
    reopen = InMemoryRecovery(directory, config, use_index=True)
    scan = reopen if reopen.index_refusal else InMemoryRecovery(directory, config,
                                                                 use_index=False)
    try:
        if scan is not reopen:
            # the same moment for both, as far as max_age goes
            reopen.enforce_limits()
            scan.enforce_limits()
        result.findings.extend(scan.damage)
        blocks_damaged = bool(scan.damage)
        decoded = _read_index(name, index_path, result)
        if (decoded is not None and reopen.index_outdated and not blocks_damaged
                and not scan.kept_last_seq):
            # older than the blocks, as a crash of nats-server leaves it: a reopen rebuilds
            # from the blocks and loses nothing
            result.notes.append((index_path, f"older than the blocks ({reopen.index_refusal}): "
                                             "rebuilt from them on the next open, nothing "
                                             "lost"))
        elif decoded is not None and reopen.index_refusal and not blocks_damaged:
            saved = {"messages": decoded["msgs"], "bytes": decoded["bytes"],
                     "first_seq": decoded["first_seq"], "last_seq": decoded["last_seq"]}
            refusal = reopen.index_refusal
            more = [d for d in _differences(saved, _state(scan))
                    if d.split(",")[0] != refusal.split(",")[0]]
            result.findings.append(Damage(index_path, "stale: " + "; ".join([refusal] + more)
                                           + " (rebuilt from the blocks on the next open)"))
        elif scan is not reopen and not blocks_damaged:
            reasons = _differences(_state(reopen), _state(scan))
            if reasons:
                result.findings.append(Damage(index_path, "wrong: " + "; ".join(reasons)
                                               + " (a reopen would trust it)"))
        state = _state(scan)
        result.messages, result.bytes = state["messages"], state["bytes"]
        result.first_seq, result.last_seq = state["first_seq"], state["last_seq"]
    finally:
        reopen.stop()
        scan.stop()
    for file_name, (decode, rebuilt_from) in {**STATE_FILES, **(state_files or {})}.items():
        _check_state_file(os.path.join(msgs_dir, file_name), decode, rebuilt_from, result,
                          blocks_damaged)
    _check_consumers(directory, result)
    return result


def _read_index(name: str, path: str, result: StreamCheck) -> dict | None:
    """index.db decoded; None when there is none or it is corrupt (a finding)."""
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except FileNotFoundError:
        return None                 # no state file (a crash): the blocks are the truth
    try:
        return indexdb.decode_index(name, buf)
    except StoreError as exc:
        result.findings.append(Damage(path, f"corrupt: {exc} (rebuilt from the blocks on "
                                             "the next open)"))
        return None


def _differences(saved: dict, blocks: dict) -> list[str]:
    """How a state index.db gives differs from the blocks' state (subject counts compared
    when both have them and nothing else differs)."""
    reasons = []
    if saved["last_seq"] != blocks["last_seq"]:
        reasons.append(f"it says last sequence {saved['last_seq']}, the blocks end at "
                       f"{blocks['last_seq']}")
    if saved["first_seq"] != blocks["first_seq"]:
        reasons.append(f"it says first sequence {saved['first_seq']}, the blocks start at "
                       f"{blocks['first_seq']}")
    if saved["messages"] != blocks["messages"]:
        reasons.append(f"it counts {saved['messages']} messages, the blocks hold "
                       f"{blocks['messages']}")
    if saved["bytes"] != blocks["bytes"]:
        reasons.append(f"it counts {saved['bytes']} bytes, the blocks hold {blocks['bytes']}")
    if not reasons and "subjects" in saved and saved["subjects"] != blocks["subjects"]:
        differ = sorted(set(saved["subjects"]) ^ set(blocks["subjects"])
                        | {s for s in saved["subjects"]
                           if saved["subjects"][s] != blocks["subjects"].get(s)})
        reasons.append(f"its subject counts differ from the blocks' ({differ[0]!s} first)")
    return reasons


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
        result.findings.append(Damage(path, f"corrupt: {exc} (rebuilt from {rebuilt_from} "
                                             "on the next open)"))
        return
    # high_seq: the first sequence the file does not cover (the last one's successor)
    if high_seq > result.last_seq + 1 and not blocks_damaged:
        result.findings.append(Damage(path, f"stale: it covers messages up to "
                                             f"{high_seq - 1}, the blocks end at "
                                             f"{result.last_seq}"))


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
            result.findings.append(Damage(path, f"corrupt consumer state: {exc} (its "
                                                 "deliveries and acks are lost)",
                                           lost_unknown=True))
            continue
        if (state.delivered_stream > result.last_seq
                or state.ack_floor_stream > state.delivered_stream):
            result.findings.append(Damage(
                path, f"inconsistent consumer state: delivered stream sequence "
                      f"{state.delivered_stream}, ack floor {state.ack_floor_stream}, the "
                      f"stream ends at {result.last_seq}"))
