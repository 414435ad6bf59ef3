"""FileStore: the stream engine over `N.blk` files in nats-server's directory layout.

    <stream dir>/meta.inf, meta.sum        stream configuration (+ its HighwayHash)
    <stream dir>/msgs/N.blk                message blocks
    <stream dir>/msgs/index.db             stream state written on a clean stop
    <stream dir>/obs/<consumer>/...        consumer stores

Durability: every store hands its record to the OS (write) before returning; fsync runs
every `sync_interval` seconds, or, with sync="always", through group commit: the storing
threads share fsyncs, or, with a `SyncGroup` in the options, the group's owner runs them
(`sync_targets`; jsstore.store.syncgroup).
"""

from __future__ import annotations

import os
import shutil
import threading
import time

from jsstore._core.storage import faults
from jsstore._core.storage.block import MsgBlock
from jsstore._core.storage.compress import (
    ALG_LZ4,
    ALG_NONE,
    ALG_S2,
    block_alg,
    compress_block,
    decompress_block,
)
from jsstore._core.storage.hashing import block_hash_key, meta_hash_key, meta_sum
from jsstore._core.storage.subjects import SubjectIndex
from jsstore.deferred import deferred
from jsstore.errors import BadMsg, CorruptFile, StoreClosed, StoreEOF, WriteError
from jsstore.gocompat import json as gojson
from jsstore.gocompat.durations import SECOND
from jsstore.gocompat.times import rfc3339_nano
from jsstore.store import indexdb as statefile
from jsstore.store.base import StoreBase
from jsstore.store.config import (
    StoreConfig,
    StoreOptions,
    dyn_block_size,
    store_config_of,
    stream_config_json,
)
from jsstore.store.consumerstore import FileConsumerStore, MemConsumerStore
from jsstore.store.contract import FILE_STORAGE
from jsstore.store.damage import Damage, seq_ranges
from jsstore.store.files import lock_stream_dir, make_dirs, write_atomically
from jsstore.store.layout import DIR_MODE, META_FILE, META_SUM_FILE
from jsstore.store.syncgroup import SyncTarget
from jsstore.store.ttl import TTLSchedule, ttl_from_header

# snapshots (tar archives) load with the first one
snapshots = deferred("jsstore.store.snapshot")

MSGS_DIR = "msgs"
CONSUMERS_DIR = "obs"
INDEX_FILE = "index.db"
TTL_FILE = "thw.db"
BLOCK_SUFFIX = ".blk"
RECORD_LEN_MASK = 0x7FFFFFFF  # record_len without the header flag (csrc/record.h)
RECORD_EMPTY_LEN = 30        # the shortest record: no subject, no data

_ALGS = {"none": ALG_NONE, "s2": ALG_S2, "lz4": ALG_LZ4}


def _runs_past_end(data: bytes, offset: int) -> bool:
    """Whether the record at `offset` runs past the end of the data (cut short)."""
    if len(data) - offset < 4:
        return True
    length = int.from_bytes(data[offset:offset + 4], "little") & RECORD_LEN_MASK
    return offset + length > len(data)


def _os_error_text(exc: OSError) -> str:
    """An OSError's reason as Go writes it ("no space left on device")."""
    return faults.errno_text(exc.errno) if exc.errno else str(exc)


class FileStore(StoreBase):
    def __init__(self, directory: str, config: StoreConfig, options: StoreOptions | None = None,
                 *, meta: bytes | None = None):
        config = store_config_of(config)
        options = options or StoreOptions()
        # the stream layer's full meta.inf (nats-server's FileStreamInfo JSON); None = written
        # from the storage config.  Set it before update_config to change what is written.
        self.meta = meta
        block_size = options.block_size or dyn_block_size(config)
        super().__init__(config, mem_sized=False, block_size=block_size,
                         cache_budget=options.cache_budget)
        # as nats-server's file store: a load by one filter takes a stored ">" token under a
        # ">" of the filter only (jsstore._core.storage.queries)
        self.subset_next = True
        self.options = options
        self.directory = os.fspath(directory)
        self.msgs_dir = os.path.join(self.directory, MSGS_DIR)
        self.compression = _ALGS.get(config.compression or "none", ALG_NONE)
        self._consumers = {}
        self.fsyncs = 0
        self._sync_lock = threading.Lock()
        self._sync_cond = threading.Condition(self._sync_lock)
        self._syncing = False
        self._synced_gen = 0
        self._write_gen = 0
        # with a SyncGroup: the owner fsyncs (sync_targets); blocks sealed since its last
        # collect wait in _sealed_targets, a new block file makes msgs/ need one too
        self.group = options.group if options.sync == "always" else None
        self._in_group = False
        self._sealed_targets: list[SyncTarget] = []
        self._dir_dirty = False
        # what recovery found wrong in the files (jsstore.store.damage); why index.db was
        # not used ("" when it was) and whether it was only older than the blocks; the last
        # sequence an index.db remembered past the blocks' end, kept (0: none)
        self.damage: list[Damage] = []
        self.index_refusal = ""
        self.index_outdated = False
        self.kept_last_seq = 0
        self._lock_fd = self._take_directory()
        try:
            if not os.path.exists(os.path.join(self.directory, META_FILE)):
                self._write_meta()
            self._recover()
        except BaseException:
            if self._lock_fd >= 0:
                os.close(self._lock_fd)
                self._lock_fd = -1
            raise
        # each write waits for an fsync (its own, or its group's): store_msg and the
        # others are this store's own, and the core's plain publish may not be used
        self.synced_writes = self.group is not None or options.sync == "always"
        if self.group is not None:
            self.store_msg = self._store_msg_grouped
            self.store_batch = self._store_batch_grouped
            self.store_raw_msg = self._store_raw_msg_grouped
            self.skip_msg = self._skip_msg_grouped
        elif options.sync == "always":
            self.store_msg = self._store_msg_synced
            self.store_batch = self._store_batch_synced
        self._stop_event = threading.Event()
        self._syncer = None
        if options.sync_interval and options.sync_interval > 0:
            self._syncer = threading.Thread(target=self._sync_loop, name=f"jsstore-sync-{self.name}",
                                            daemon=True)
            self._syncer.start()

    def _take_directory(self) -> int:
        """Make the stream's folders and take its lock; returns the lock's descriptor."""
        make_dirs(self.msgs_dir, DIR_MODE, sync=self.options.sync == "always")
        return lock_stream_dir(self.directory)

    def _drop_file(self, path: str) -> None:
        os.unlink(path)

    # -- metadata ----------------------------------------------------------------------
    def _write_meta(self) -> None:
        data = self.meta
        if data is None:
            info = {"Created": rfc3339_nano(time.time_ns())}
            info.update(stream_config_json(self.config))
            data = gojson.encode(info)
        self._write_file(os.path.join(self.directory, META_FILE), data)
        self._write_file(os.path.join(self.directory, META_SUM_FILE),
                         meta_sum(meta_hash_key(self.name), data))

    def update_config(self, config: StoreConfig) -> None:
        config = store_config_of(config)
        self.config = config
        self.apply_limits_config(config)
        self.compression = _ALGS.get(config.compression or "none", ALG_NONE)
        self._write_meta()
        self.enforce_limits()

    def type(self) -> str:
        return FILE_STORAGE

    # -- block files -------------------------------------------------------------------
    def _block_path(self, index: int) -> str:
        return os.path.join(self.msgs_dir, f"{index}{BLOCK_SUFFIX}")

    def _new_block(self, index: int) -> MsgBlock:
        return MsgBlock(index, block_hash_key(self.name, index), self._block_path(index), False)

    def _attach_block(self, mb) -> None:
        self._dir_dirty = True
        try:
            mb.open_for_append(self.block_size if self.options.mmap else 0)
        except OSError as exc:
            err = WriteError(f"open {mb.path}: {exc.strerror}")
            self.write_error = err
            raise err from exc

    def _read_block(self, mb) -> bytes:
        with open(mb.path, "rb") as f:
            data = f.read()
        alg = block_alg(data)
        mb.compression = alg
        return decompress_block(data) if alg else data

    def _remove_block(self, mb) -> None:
        mb.close_file()
        try:
            os.unlink(mb.path)
        except FileNotFoundError:
            pass

    def _sealed(self, mb) -> None:
        mb.trim()
        always = self.options.sync == "always"
        if always and mb.file_fd >= 0:
            if self.group is None:
                self._fsync(mb.file_fd, mb.path)
                self.fsyncs += 1
            elif self.compression == ALG_NONE:
                # the group's owner syncs it with the next collect
                self._sealed_targets.append(
                    SyncTarget(os.dup(mb.file_fd), mb.path, mb.raw_bytes, self))
        mb.close_file()
        if self.compression != ALG_NONE:
            data = mb.raw_data()
            if data is not None:
                self._write_file(mb.path, compress_block(data, self.compression), sync=always)
                mb.compression = self.compression

    def _persist_block(self, mb, data: bytes) -> None:
        is_lmb = mb is self.lmb
        mb.close_file()
        if mb.compression and not is_lmb:
            self._write_file(mb.path, compress_block(data, mb.compression))
        else:
            self._write_file(mb.path, data)
            mb.compression = ALG_NONE

    def _rewrite_record(self, mb, offset: int, record: bytes) -> None:
        if mb.compression:
            self._persist_block(mb, mb.raw_data())
            return
        fd = os.open(mb.path, os.O_WRONLY)
        try:
            os.lseek(fd, offset, os.SEEK_SET)
            faults.write_all(fd, record, mb.path)
        except OSError as exc:
            self._write_failed(f"write {mb.path}", exc)
        finally:
            os.close(fd)

    def _sync_block(self, mb) -> None:
        fd = mb.file_fd
        if fd >= 0:
            self._fsync(fd, mb.path)

    def _fsync(self, fd: int, path: str) -> None:
        """fsync a block file; a failure is the store's sticky write error."""
        try:
            faults.fsync(fd, path)
        except OSError as exc:
            self._write_failed(f"sync {path}", exc)

    def _write_file(self, path: str, data: bytes, sync: bool = True) -> None:
        """A whole file written atomically (meta files, rewritten blocks); a failure is the
        store's sticky write error (the old file stays)."""
        if self.write_error is not None:
            raise self.write_error
        try:
            write_atomically(path, data, sync)
        except OSError as exc:
            self._write_failed(f"write {path}", exc)

    def sync_failed(self, path: str, exc: OSError) -> None:
        """A group commit's fsync of `path` failed (on the sync thread): kept as the
        store's write error, as a failed fsync of its own would be."""
        if self.write_error is None:
            self.write_error = WriteError(f"sync {path}: {_os_error_text(exc)}", exc.errno or 0)

    def _write_failed(self, what: str, exc: OSError):
        """Keep the first write error (every later write fails with it until the store is
        reopened) and raise it."""
        if self.write_error is None:
            self.write_error = WriteError(f"{what}: {_os_error_text(exc)}", exc.errno or 0)
        raise self.write_error from exc

    # -- recovery ----------------------------------------------------------------------
    def _block_indexes(self) -> list[int]:
        out = []
        for name in os.listdir(self.msgs_dir):
            if name.endswith(BLOCK_SUFFIX):
                stem = name[: -len(BLOCK_SUFFIX)]
                if stem.isdigit():
                    out.append(int(stem))
        out.sort()
        return out

    # whether recovery takes the state from index.db when it matches the block files (False:
    # always from the blocks, every record verified)
    use_index = True

    def _recover(self) -> None:
        indexes = self._block_indexes()
        index_path = os.path.join(self.msgs_dir, INDEX_FILE)
        self.index_refusal, self.index_outdated = (
            statefile.load_index(self, index_path, indexes) if self.use_index
            else ("not used", False))
        prior_last_seq = 0
        if not self.index_refusal:
            # trusted only until the next change: a crash from here on rebuilds from the blocks
            self._drop_file(index_path)
        else:
            saved = self._saved_state(index_path)
            self._rebuild(indexes, {} if saved is None else {
                blk["index"]: (blk["first_seq"], blk["last_seq"]) for blk in saved["blocks"]
                if blk["last_seq"] >= blk["first_seq"] > 0}, not self.index_outdated)
            prior_last_seq = saved["last_seq"] if saved is not None else 0
        # as nats-server, on either path: the limits (a state written before a limit was
        # lowered, messages aged past max_age since)
        self.enforce_limits()
        self._recover_ttls()
        if self.lmb is None:
            first = self.config.first_seq if self.config.first_seq and self.last_seq == 0 else 0
            if first > 1:
                self.last_seq = first - 1
                self.first_seq = first
            self._roll_block()
        else:
            self.ensure_loaded(self.lmb)
            self.cache_bytes -= min(self.cache_bytes, self.lmb.cache_size)
            self._attach_block(self.lmb)
        if prior_last_seq > self.last_seq:
            # as nats-server: an index.db that remembers a later last sequence than the
            # blocks hold (their tail lost) keeps it, so no sequence is given out twice; a
            # skip record makes it durable
            self.skip_msgs(self.last_seq + 1, prior_last_seq - self.last_seq)
            self.kept_last_seq = prior_last_seq

    def _recover_ttls(self) -> None:
        """Load thw.db; messages stored after it was written (or every message, when there is
        no thw.db and the stream allows TTLs) give their TTL from their Nats-TTL header."""
        path = os.path.join(self.msgs_dir, TTL_FILE)
        scan_from = None
        try:
            with open(path, "rb") as f:
                self.ttls, high_seq = TTLSchedule.decode(f.read())
            if high_seq <= self.last_seq:
                scan_from = high_seq
        except FileNotFoundError:
            if self.config.allow_msg_ttl:
                scan_from = self.first_seq
        except CorruptFile:
            self.ttls = TTLSchedule()
            scan_from = self.first_seq
        if scan_from is not None and self.msgs:
            self._forget_ttls(lambda seq: seq < scan_from)
            seq = max(scan_from, self.first_seq)
            while seq <= self.last_seq:
                try:
                    sm, seq = self.load_next_msg(">", seq)
                except StoreEOF:
                    break
                ttl = ttl_from_header(sm.hdr)
                if ttl > 0:
                    self.ttls.add(seq, sm.ts + ttl * SECOND)
                seq += 1
        self.next_ttl_expiry = self.ttls.next_expiry()

    def _saved_state(self, index_path: str) -> dict | None:
        """An index.db that verifies but was not used (stale or not matching the files),
        decoded; None when there is none."""
        try:
            with open(index_path, "rb") as f:
                return statefile.decode_index(self.name, f.read())
        except (OSError, CorruptFile):
            return None

    def _rebuild(self, indexes: list[int], saved_ranges: dict | None = None,
                 missing_lost: bool = True) -> None:
        """Recover the state from the block files alone.

        Each block is walked record by record with every hash verified; the file is
        truncated at its first bad record and what is cut off is recorded in `damage`
        (and summed in `lost_bytes` and `lost_msgs`): the bytes, and the sequences that can
        be known (up to the next block's first message, the last the old index.db knew the
        block to hold, or the last intact record after the bad one), and, with
        `missing_lost`, the messages of blocks index.db listed that are gone -- less those a
        tombstone shows were removed.  (An index.db older than the blocks lists blocks
        removed since: as nats-server, their messages are not counted lost.)
        """
        saved_ranges = saved_ranges or {}
        self.psim = SubjectIndex()
        tombstones: list = []
        blocks = []
        damaged = []          # (block, its Damage, lost up to at least): cut here
        last_seq = 0          # highest sequence of the blocks taken so far
        for index in indexes:
            mb = MsgBlock(index, block_hash_key(self.name, index), self._block_path(index), False)
            damage = None
            lost_to = 0       # the last sequence known lost from this block (0: none known)
            try:
                data = self._read_block(mb)
            except (BadMsg, OSError, ValueError) as exc:
                # unreadable as a whole (e.g. bad compressed frame): nothing in it can be trusted
                size = os.path.getsize(mb.path) if os.path.exists(mb.path) else 0
                damage = Damage(mb.path, f"unreadable block: {exc}", size)
                mb.compression = ALG_NONE
                self._persist_truncated(mb, b"")
                data = b""
            mb.load_bytes(data)
            mb.build_cache(self.psim, True, tombstones)
            good = mb.raw_bytes
            if good < len(data) and not data[good:].lstrip(b"\0"):
                # the zero-filled space reserved for a mapped write block: nothing was lost
                self._persist_truncated(mb, data[:good])
            elif good < len(data):
                what = "truncated record" if _runs_past_end(data, good) else "bad record"
                damage = Damage(mb.path, f"{what} at offset {good} (block of {len(data)} bytes)",
                                len(data) - good)
                lost_to = self._last_seq_after(mb, data, good)
                self._persist_truncated(mb, data[:good])
            if mb.msgs == 0 and mb.last_seq < last_seq or mb.last_seq == 0:
                # no message records (empty, or only tombstones for older blocks)
                mb.last_seq = max(mb.last_seq, last_seq)
                mb.first_seq = mb.last_seq + 1
            elif mb.msgs and mb.first_seq <= last_seq:
                # overlaps the blocks before it: not a block of this stream's history
                self._record_damage(Damage(mb.path, "block overlaps the previous one",
                                           mb.raw_bytes), (), set())
                self._remove_block(mb)
                continue
            mb.select_first()
            blocks.append(mb)
            self.cache_bytes += mb.cache_size
            last_seq = max(last_seq, mb.last_seq)
            if damage is not None:
                damaged.append((mb, damage, lost_to))
        removed = {seq for seq, _ts in tombstones}
        for mb, damage, lost_to in damaged:
            saved = saved_ranges.get(mb.index)
            position = blocks.index(mb)
            following = next((b for b in blocks[position + 1:] if b.msgs), None)
            if following is not None:
                lost_to = max(lost_to, following.first_seq - 1)
            elif saved is not None:
                lost_to = max(lost_to, saved[1])
            first_lost = mb.last_seq + 1
            if lost_to >= first_lost:
                self._record_damage(damage, range(first_lost, lost_to + 1), removed)
            else:
                damage.lost_unknown = bool(damage.lost_bytes)
                self._record_damage(damage, (), removed)
        present = set(indexes)
        for index, (first, last) in sorted(saved_ranges.items()):
            if missing_lost and index not in present:
                # a block index.db knew of, gone: its messages are lost unless tombstones
                # show they were removed
                self._record_damage(Damage(self._block_path(index),
                                           "missing block (listed in index.db)"),
                                    range(first, last + 1), removed)
        self.blocks = [mb for mb in blocks if mb.raw_bytes > 0 or mb is blocks[-1]]
        for mb in blocks:
            if mb not in self.blocks:
                self.cache_bytes -= min(self.cache_bytes, mb.cache_size)
                self._remove_block(mb)
        self._recompute_totals()
        if self.blocks:
            self.lmb = self.blocks[-1]
            self.cache_bytes -= min(self.cache_bytes, self.lmb.cache_size)
        for seq, _ts in tombstones:
            if self.first_seq <= seq <= self.last_seq:
                self.remove_msg_via_limits(seq)

    def _record_damage(self, damage: Damage, lost, removed: set) -> None:
        """Keep `damage` with the sequences of `lost` that no tombstone removed (a missing
        block whose messages were all removed is no damage)."""
        seqs = [seq for seq in lost if seq not in removed]
        if not seqs and not damage.lost_bytes and not damage.lost_unknown:
            return
        damage.lost_seqs = seq_ranges(seqs)
        self.damage.append(damage)
        self.lost_bytes += damage.lost_bytes
        self.lost_msgs = sorted(set(self.lost_msgs).union(seqs))

    def _persist_truncated(self, mb, data: bytes) -> None:
        if mb.compression:
            write_atomically(mb.path, compress_block(data, mb.compression) if data else b"")
        else:
            with open(mb.path, "r+b") as f:
                f.truncate(len(data))
                faults.fsync(f.fileno(), mb.path)

    def _last_seq_after(self, mb, data: bytes, bad_offset: int) -> int:
        """The last sequence of the intact records after the bad record at `bad_offset`,
        when its length still leads to them (0: none)."""
        length = int.from_bytes(data[bad_offset:bad_offset + 4], "little") & RECORD_LEN_MASK
        if length < RECORD_EMPTY_LEN or bad_offset + length >= len(data):
            return 0
        rest = MsgBlock(mb.index, block_hash_key(self.name, mb.index), None, False)
        rest.load_bytes(data[bad_offset + length:])
        rest.build_cache(SubjectIndex(), True, None)
        return rest.last_seq if rest.raw_bytes else 0

    def _recompute_totals(self) -> None:
        """Stream counts and range from the blocks, and the subject index hints."""
        self.msgs = sum(mb.msgs for mb in self.blocks)
        self.bytes = sum(mb.bytes for mb in self.blocks)
        self.last_seq = max((mb.last_seq for mb in self.blocks), default=0)
        self.last_ts = 0
        for mb in reversed(self.blocks):
            if mb.last_seq == self.last_seq:
                self.last_ts = mb.last_ts
                break
        live = [mb for mb in self.blocks if mb.msgs]
        if live:
            self.first_seq = live[0].first_seq
            self.first_ts = live[0].first_ts
        else:
            # an empty stream continues after its last sequence; one that never held a
            # sequence reports 0, as nats-server does
            self.first_seq = self.last_seq + 1 if self.last_seq else 0
            self.first_ts = 0
        statefile.fix_subject_hints(self)

    # -- durability --------------------------------------------------------------------
    def sync(self) -> None:
        """fsync the write block (and any block written since the last sync)."""
        if self.closed:
            return
        self.flush_all_pending()
        self._check_writable()
        fd = self.lmb.file_fd if self.lmb is not None else -1
        if fd >= 0:
            fd = os.dup(fd)
            try:
                self._fsync(fd, self.lmb.path)
            finally:
                os.close(fd)

    # group commit: every caller waits for an fsync that began after its write; one
    # fsync covers every write that was handed to the OS while the previous one ran.
    def _store_msg_synced(self, subject, hdr, msg, ttl: int = 0):
        out = StoreBase.store_msg(self, subject, hdr, msg, ttl)
        self._group_commit()
        return out

    def _store_batch_synced(self, msgs):
        out = StoreBase.store_batch(self, msgs)
        self._group_commit()
        return out

    def _group_commit(self) -> None:
        self._write_gen += 1
        mine = self._write_gen
        with self._sync_cond:
            while self._synced_gen < mine:
                if self.write_error is not None:   # a failed fsync covers no write
                    raise self.write_error
                if self._syncing:
                    self._sync_cond.wait()
                    continue
                self._syncing = True
                target = self._write_gen
                fd = self.lmb.file_fd if self.lmb is not None else -1
                path = self.lmb.path if self.lmb is not None else None
                fd = os.dup(fd) if fd >= 0 else -1  # stays valid if the block is sealed meanwhile
                self._sync_cond.release()
                synced = False
                try:
                    if fd >= 0:
                        try:
                            self._fsync(fd, path)
                        finally:
                            os.close(fd)
                        self.fsyncs += 1
                    synced = True
                finally:
                    self._sync_cond.acquire()
                    self._syncing = False
                    if synced:
                        self._synced_gen = max(self._synced_gen, target)
                    self._sync_cond.notify_all()

    # with a SyncGroup: the store returns once the record is handed to the OS and joins the
    # group's dirty list; the group's owner makes it durable (sync_targets, SyncGroup.run)
    def _joined(self) -> None:
        if not self._in_group:
            self._in_group = True
            self.group.dirty.append(self)

    def _store_msg_grouped(self, subject, hdr, msg, ttl: int = 0):
        out = StoreBase.store_msg(self, subject, hdr, msg, ttl)
        if not self._in_group:
            self._joined()
        return out

    def _store_batch_grouped(self, msgs):
        out = StoreBase.store_batch(self, msgs)
        self._joined()
        return out

    def _store_raw_msg_grouped(self, *args, **kwargs):
        out = StoreBase.store_raw_msg(self, *args, **kwargs)
        self._joined()
        return out

    def _skip_msg_grouped(self, *args, **kwargs):
        out = StoreBase.skip_msg(self, *args, **kwargs)
        self._joined()
        return out

    def sync_targets(self) -> list[SyncTarget]:
        """What makes every write so far durable, for a SyncGroup's owner (the lock the
        store runs under held): the blocks sealed since the last call, msgs/ when a block
        file was made, and the write block up to its current length."""
        self._in_group = False
        targets, self._sealed_targets = self._sealed_targets, []
        if self.closed:
            return targets
        if self._dir_dirty:
            self._dir_dirty = False
            fd = os.open(self.msgs_dir, os.O_RDONLY | os.O_DIRECTORY)
            targets.insert(0, SyncTarget(fd, self.msgs_dir, None, self))
        mb = self.lmb
        if mb is not None and mb.file_fd >= 0:
            self.flush_all_pending()
            targets.append(SyncTarget(os.dup(mb.file_fd), mb.path, mb.raw_bytes, self))
        return targets

    def _sync_loop(self) -> None:
        interval = self.options.sync_interval
        while not self._stop_event.wait(interval):
            try:
                self.sync()
            except WriteError:
                return  # kept as the store's write error: the next write reports it
            except Exception as exc:  # the next write reports it
                if self.write_error is None:
                    self.write_error = WriteError(f"sync: {exc}")
                return

    # -- lifecycle ---------------------------------------------------------------------
    def stop(self) -> None:
        """Flush, fsync and write index.db (so the next open scans no block), then close.
        After a write error only the files are closed: the next open recovers from them."""
        if self.closed:
            return
        self._stop_event.set()
        try:
            if self.write_error is None:
                self._write_state_files()
        finally:
            self.closed = True
            targets, self._sealed_targets = self._sealed_targets, []
            for target in targets:
                os.close(target.fd)
            for cs in self._consumers.values():
                try:
                    cs.stop()
                except WriteError:
                    pass   # kept as the consumer store's write_error; its last o.dat stays
            for mb in self.blocks:
                try:
                    mb.close_file()
                except (OSError, WriteError):
                    pass
            if self._syncer is not None and self._syncer is not threading.current_thread():
                self._syncer.join(timeout=5)
            if self._lock_fd >= 0:
                os.close(self._lock_fd)
                self._lock_fd = -1

    def _write_state_files(self) -> None:
        """On a clean stop: the write block to disk, thw.db and index.db. A failure is kept
        as the store's write error (the next open then rebuilds from the blocks)."""
        try:
            self.flush_all_pending()
            if self.lmb is not None:
                self.lmb.trim()
                self.lmb.update_last_hash()
                self._sync_block(self.lmb)
            for target in self._sealed_targets:     # sealed, not collected yet
                self._fsync(target.fd, target.path)
            if len(self.ttls) or os.path.exists(os.path.join(self.msgs_dir, TTL_FILE)):
                write_atomically(os.path.join(self.msgs_dir, TTL_FILE),
                                 self.ttls.encode(self.last_seq + 1))
            if not any(mb.damaged for mb in self.blocks):
                # (with a damaged block, no state file: the next open rebuilds from the
                # blocks, cuts the damage off and reports what was lost)
                statefile.write_index(self, os.path.join(self.msgs_dir, INDEX_FILE))
        except OSError as exc:
            if self.write_error is None:
                self.write_error = WriteError(f"write {exc.filename}: {_os_error_text(exc)}",
                                              exc.errno or 0)
        except WriteError:
            pass   # kept as write_error where it happened
        if self.write_error is not None:
            # what was written of the state files may not be on disk: no index.db, so the
            # next open rebuilds from the blocks and verifies every record
            for name in (INDEX_FILE,):
                try:
                    os.unlink(os.path.join(self.msgs_dir, name))
                except OSError:
                    pass

    def delete(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def utilization(self) -> tuple[int, int]:
        return sum(mb.raw_bytes for mb in self.blocks), self.bytes

    def consumer_store(self, name: str, created: int, config: dict):
        if self.closed:
            raise StoreClosed()
        if config.get("mem_storage"):
            cs = MemConsumerStore(name, created, config)
        else:
            cs = FileConsumerStore(self.directory, self.name, name, created, config,
                                   sync=self.options.sync == "always")
        self._consumers[name] = cs
        return cs

    def snapshot(self, include_consumers: bool = True):
        return snapshots.snapshot_stream(self, include_consumers)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
