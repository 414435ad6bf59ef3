"""What FileStore and MemStore share above the Cython engine: the query methods bound
from the core, and the bulk removals (purge, purge_ex, compact, truncate)."""

from __future__ import annotations

import time

from jsstore._core.storage import queries
from jsstore._core.storage.engine import BlockStore
from jsstore._core.storage.subjects import SubjectIndex
from jsstore.errors import StoreClosed, StoreEOF
from jsstore.gocompat.durations import SECOND
from jsstore.store.ttl import TTLSchedule


class StoreBase(BlockStore):
    synced_writes = False   # each write waits for an fsync (a file store's sync always)

    # read-only queries, implemented in the core and bound here as methods
    load_next_msg = queries.load_next_msg
    load_prev_msg = queries.load_prev_msg
    load_last_msg = queries.load_last_msg
    num_pending = queries.num_pending
    filtered_state = queries.filtered_state
    subjects_state = queries.subjects_state
    subjects_totals = queries.subjects_totals
    multi_last_seqs = queries.multi_last_seqs
    all_last_seqs = queries.all_last_seqs
    get_seq_from_time = queries.get_seq_from_time
    state = queries.state
    fast_state = queries.fast_state

    consumer_count = 0
    # the stream expires TTL'd messages itself (it may store subject delete markers instead)
    defer_ttl_expiry = False

    def __init__(self, config, **engine_options):
        super().__init__(config, **engine_options)
        self.ttls = TTLSchedule()

    # -- per-message TTLs -------------------------------------------------------------
    def _ttl_added(self, seq: int, ts: int, ttl: int) -> None:
        expires = ts + ttl * SECOND
        self.ttls.add(seq, expires)
        if expires < self.next_ttl_expiry:
            self.next_ttl_expiry = expires

    def _expire_ttls(self, now: int) -> int:
        if self.defer_ttl_expiry:
            return 0
        removed = 0
        for seq in self.ttls.pop_due(now):
            removed += self.remove_msg(seq)  # a TTL expiry writes a tombstone, as in nats-server
        self.next_ttl_expiry = self.ttls.next_expiry()
        return removed

    def pop_due_ttls(self, now: int) -> list[int]:
        """Take the sequences whose TTL has run out at `now` off the schedule (the caller
        removes them)."""
        due = self.ttls.pop_due(now)
        self.next_ttl_expiry = self.ttls.next_expiry()
        return due

    def _forget_ttls(self, keep) -> None:
        self.ttls.keep(keep)
        self.next_ttl_expiry = self.ttls.next_expiry()

    def expire_msgs(self) -> int:
        """Remove what max_age and per-message TTLs say has expired; returns how many."""
        return BlockStore.expire_msgs(self) + self._expire_ttls(time.time_ns())

    # -- hooks for the bulk operations -----------------------------------------------
    def _fresh_lmb(self, first_seq: int) -> None:
        """Replace every block with one empty write block starting at first_seq."""
        old = list(self.blocks)
        index = (self.lmb.index + 1) if self.lmb is not None else 1
        for mb in old:
            mb.close_file()
        mb = self._new_block(index)
        mb.first_seq = first_seq
        mb.last_seq = first_seq - 1
        mb.load_bytes(b"")
        self.psim = SubjectIndex()
        mb.build_cache(self.psim)
        self.blocks = [mb]
        self.lmb = mb
        self._attach_block(mb)
        self.cache_bytes = 0
        self.msgs = 0
        self.bytes = 0
        # a stream that never held a sequence keeps reporting 0 (as after a fresh open)
        self.first_seq = first_seq if first_seq > 1 or self.last_seq else 0
        self.first_ts = 0
        if first_seq - 1 > self.last_seq or self.last_seq == 0:
            self.last_seq = first_seq - 1
        self.dirty += 1
        if self.last_seq and not self.mem_sized:
            # keep last_seq across a rebuild from the blocks alone
            self._write_tombstone(self.last_seq, self.last_ts)
            self._sync_block(mb)
        for old_mb in old:
            self._remove_block(old_mb)

    def _sync_block(self, mb) -> None:
        pass

    def _check_writable(self) -> None:
        if self.closed:
            raise StoreClosed()
        if self.write_error is not None:
            raise self.write_error

    # -- bulk removal ------------------------------------------------------------------
    def purge(self) -> int:
        """Remove every message; numbering continues at last_seq + 1. Returns the count."""
        self._check_writable()
        purged = self.msgs
        self._fresh_lmb(self.last_seq + 1)
        self._forget_ttls(lambda seq: False)
        return purged

    def compact(self, seq: int) -> int:
        """Remove every message with a sequence below seq (0 = purge). Returns the count."""
        self._check_writable()
        if seq == 0:
            return self.purge()
        if seq <= self.first_seq or self.msgs == 0 and seq <= self.last_seq + 1:
            return 0
        if seq > self.last_seq:
            purged = self.msgs
            self._fresh_lmb(seq)
            self._forget_ttls(lambda s: False)
            return purged
        purged = 0
        touched = None
        while self.msgs and self.first_seq < seq:
            first = self.first_seq
            mb = self._block_for(first)
            if mb is not touched and touched is not None and touched in self.blocks:
                # (a block emptied by the removals was dropped, file and all: leave it gone)
                self._rewrite_block(touched)
            touched = mb
            if self.remove_msg_via_limits(first):
                purged += 1
            else:
                break
        if touched is not None and touched in self.blocks:
            self._rewrite_block(touched)
        self._forget_ttls(lambda s: s >= seq)
        return purged

    def purge_ex(self, subject: str, seq: int = 0, keep: int = 0) -> int:
        """Filtered purge, as nats-server: remove the messages matching `subject` below seq
        (when seq > 1), or all but the newest `keep` of them counted across the whole filter
        (when keep > 0). For the whole stream, seq > 1 is compact(seq) and keep > 0 is
        compact(last_seq - keep + 1). Returns the count."""
        self._check_writable()
        if not subject or subject == ">":
            if keep == 0 and seq == 0:
                return self.purge()
            if seq > 1:
                return self.compact(seq)
            if keep > 0 and keep < self.msgs:
                return self.compact(self.last_seq - keep + 1)
            return 0
        ss = self.filtered_state(1, subject)
        if ss.msgs == 0:
            return 0
        to_remove = ss.msgs
        if keep > 0:
            if keep >= ss.msgs:
                return 0
            to_remove -= keep
        last = seq - 1 if seq > 1 else ss.last
        purged = 0
        # as nats-server: counted by the filter, removed by the subset test (a stored ">"
        # token only under a ">" of the filter: jsstore._core.storage.queries)
        try:
            cur = self.load_next_msg(subject, ss.first, subset=True)[1]
        except StoreEOF:
            return 0
        while purged < to_remove and 0 < cur <= last:
            self.remove_msg(cur)
            purged += 1
            if cur >= last:
                break
            try:
                cur = self.load_next_msg(subject, cur + 1, subset=True)[1]
            except StoreEOF:
                break
        return purged

    def truncate(self, seq: int) -> None:
        """Remove every message with a sequence above seq (last_seq becomes seq)."""
        self._check_writable()
        if seq >= self.last_seq:
            return
        if self.msgs == 0 or seq < self.first_seq:
            self.last_seq = seq
            self.last_ts = 0  # no message at or below seq is left to take it from
            self._fresh_lmb(seq + 1)
            self._forget_ttls(lambda s: s <= seq)
            return
        while self.msgs:
            last = self._last_live()
            if last <= seq:
                break
            self.remove_msg_via_limits(last)
        tombstones = []
        while len(self.blocks) > 1 and self.blocks[-1].first_seq > seq:
            mb = self.blocks.pop()
            tombstones.extend(t for t in self._block_tombstones(mb) if t[0] <= seq)
            if mb.is_loaded and mb is not self.lmb:
                self.cache_bytes -= min(self.cache_bytes, mb.cache_size)
            self._remove_block(mb)
        keep = self.blocks[-1]
        if keep is not self.lmb and keep.is_loaded:
            self.cache_bytes -= min(self.cache_bytes, keep.cache_size)
        self.lmb = keep
        # the removals above left their sequences in the deleted set; they are reused now
        keep.deleted.delete_above(seq)
        if keep.msgs and keep.last_seq < seq:
            # sequences up to seq lived in dropped blocks and were all removed: holes here
            keep.deleted.insert_range(keep.last_seq + 1, seq)
        keep.last_seq = seq
        if keep.msgs == 0:
            keep.first_seq = seq + 1
        last = self._last_live()
        ts = self.load_msg(last).ts if last else 0
        keep.last_ts = ts
        self.last_seq = seq
        self.last_ts = ts
        self._rewrite_block(keep, tombstones)
        self._forget_ttls(lambda s: s <= seq)  # those sequences may be used again
        self.dirty += 1

    def _last_live(self) -> int:
        if self.msgs == 0:
            return 0
        return self.load_prev_msg(">", self.last_seq).seq

    def _block_for(self, seq):
        for mb in self.blocks:
            if mb.first_seq <= seq <= mb.last_seq:
                return mb
        return None

    def _block_tombstones(self, mb) -> list:
        self.ensure_loaded(mb)
        return mb.tombstone_list()

    def _compose_block(self, mb, extra_tombstones=()) -> bytes:
        """The bytes of `mb` with only its live records, its tombstones (plus extra ones),
        and a skip record for last_seq when that sequence holds no message."""
        self.ensure_loaded(mb)
        # tombstones past the block's last sequence belong to sequences a truncate took back
        # (and that may be used again): replaying them would remove the new messages
        parts = [mb.make_record(seq | (1 << 62), ts)
                 for seq, ts in list(mb.tombstone_list()) + list(extra_tombstones) if seq <= mb.last_seq]
        seq = mb.first_seq
        last_live = 0
        while mb.msgs and seq <= mb.last_seq:
            try:
                sm, seq = self.load_next_msg(">", seq)
            except Exception:
                break
            if seq > mb.last_seq:
                break
            parts.append(sm.record)
            last_live = seq
            seq += 1
        if mb.last_seq and last_live != mb.last_seq:
            parts.append(mb.make_record(mb.last_seq | (1 << 63), mb.last_ts))
        return b"".join(parts)

    def _rewrite_block(self, mb, extra_tombstones=()) -> None:
        """Rewrite a block to its live content (after compaction or truncation)."""
        data = self._compose_block(mb, extra_tombstones)
        was_loaded = mb.is_loaded
        if was_loaded and mb is not self.lmb:
            self.cache_bytes -= min(self.cache_bytes, mb.cache_size)
        self._persist_block(mb, data)
        mb.load_bytes(data)
        mb.build_cache(self.psim)
        mb.raw_bytes = len(data)
        mb.tombstones = len(mb.tombstone_list())
        mb.update_last_hash()
        if mb is not self.lmb:
            self.cache_bytes += mb.cache_size
        else:
            self._attach_block(mb)

    def _persist_block(self, mb, data: bytes) -> None:
        """Write a rewritten block's bytes to its file (file store only)."""
