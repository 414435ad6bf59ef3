"""The stream engine: write path, removals, limits, loads (see engine.pxd)."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_CheckExact, PyTuple_GET_SIZE, PyTuple_GET_ITEM
from libc.stdint cimport uint16_t
from libc.string cimport memcmp

from jsstore._core.storage.block cimport MsgBlock, IDX_HOLE, SID_NONE
from jsstore._core.storage.subjects cimport SubjectIndex, BlockSubjects, BlockSubj
from jsstore._core.storage.pointread cimport read_record
from jsstore._core.storage.record cimport (RecordView, StoreMsg, make_store_msg, rec_size,
                                           SEQ_ERASE_BIT, SEQ_TOMB_BIT, RECORD_HDR_SIZE,
                                           RECORD_HASH_SIZE)
from jsstore.errors import (StoreClosed, MsgNotFound, StoreEOF, MaxMsgsExceeded, MaxBytesExceeded,
                            MaxMsgsPerSubjectExceeded, MsgTooLarge, SequenceMismatch, WriteError,
                            BadMsg)
import os

cdef extern from "time.h" nogil:
    ctypedef long time_t
    struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk, timespec* ts)
    enum: CLOCK_REALTIME

cdef inline int64_t now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec

cdef uint64_t MAX_SUBJECT_LEN = 0xFFFF
cdef int64_t INT64_MAX = 0x7FFFFFFFFFFFFFFF


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)


cdef inline object subject_bytes(object subject):
    """A subject as the core stores it: a str that is not all ASCII encoded here, its
    surrogate-escaped bytes given back (a subject is bytes on the wire, and may be any);
    an ASCII str or bytes as it is (as_bytes points into it)."""
    if isinstance(subject, str) and not PyUnicode_IS_ASCII(subject):
        return (<str>subject).encode("utf-8", "surrogateescape")
    return subject


cdef inline int as_bytes(object obj, const uint8_t** ptr, Py_ssize_t* n) except -1:
    """Point at the bytes of a str (UTF-8) or bytes-like object without copying."""
    cdef const char* p
    cdef const uint8_t[::1] view
    if isinstance(obj, str):
        p = PyUnicode_AsUTF8AndSize(obj, n)
        ptr[0] = <const uint8_t*>p
    elif isinstance(obj, bytes):
        ptr[0] = <const uint8_t*>PyBytes_AS_STRING(obj)
        n[0] = PyBytes_GET_SIZE(obj)
    else:
        view = obj
        n[0] = view.shape[0]
        ptr[0] = &view[0] if n[0] else <const uint8_t*>""
    return 0


cdef class BlockStore:
    """Shared engine of FileStore and MemStore. Not used directly."""

    def __init__(self, config, *, bint mem_sized, uint64_t block_size, uint64_t cache_budget):
        self.config = config
        self.name = config.name
        self.mem_sized = mem_sized
        self.block_size = block_size
        self.cache_budget = cache_budget
        self.blocks = []
        self.lmb = None
        self.psim = SubjectIndex()
        self.lost_msgs = []
        self.next_ttl_expiry = INT64_MAX
        self.apply_limits_config(config)

    def apply_limits_config(self, config):
        self.max_msgs = config.max_msgs if config.max_msgs > 0 else -1
        self.max_bytes = config.max_bytes if config.max_bytes > 0 else -1
        self.max_per_subject = config.max_msgs_per_subject if config.max_msgs_per_subject > 0 else -1
        self.max_msg_size = config.max_msg_size if config.max_msg_size > 0 else -1
        self.max_age = config.max_age if config.max_age > 0 else 0
        self.discard_new = config.discard == "new"
        self.discard_new_per_subject = bool(getattr(config, "discard_new_per_subject", False))

    # -- hooks the subclasses provide ------------------------------------------
    def _new_block(self, uint32_t index):
        raise NotImplementedError

    def _read_block(self, MsgBlock mb):
        raise NotImplementedError

    def _remove_block(self, MsgBlock mb):
        raise NotImplementedError

    def _sealed(self, MsgBlock mb):
        pass

    def _ttl_added(self, uint64_t seq, int64_t ts, int64_t ttl):
        """A message stored with a TTL of ttl seconds (the Python layer keeps the schedule)."""

    def _expire_ttls(self, int64_t now):
        """Remove the messages whose TTL has passed; returns how many."""
        return 0

    def _attach_block(self, MsgBlock mb):
        """Make a block with a loaded cache the write block's backing (files: open, map)."""
        pass

    def _rewrite_record(self, MsgBlock mb, long offset, bytes record):
        pass

    # -- block selection and cache ---------------------------------------------
    cdef Py_ssize_t c_block_pos(self, uint64_t seq) noexcept:
        cdef Py_ssize_t lo = 0, hi = PyList_GET_SIZE(self.blocks), mid
        # the newest messages are the most asked for: the last two blocks first
        if hi and (<MsgBlock>PyList_GET_ITEM(self.blocks, hi - 1)).last_seq >= seq:
            if hi == 1 or (<MsgBlock>PyList_GET_ITEM(self.blocks, hi - 2)).last_seq < seq:
                return hi - 1
            if hi == 2 or (<MsgBlock>PyList_GET_ITEM(self.blocks, hi - 3)).last_seq < seq:
                return hi - 2
        while lo < hi:
            mid = (lo + hi) >> 1
            if (<MsgBlock>PyList_GET_ITEM(self.blocks, mid)).last_seq < seq:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef MsgBlock c_select_block(self, uint64_t seq):
        cdef Py_ssize_t pos = self.c_block_pos(seq)
        cdef MsgBlock mb
        if pos >= PyList_GET_SIZE(self.blocks):
            return None
        mb = <MsgBlock>PyList_GET_ITEM(self.blocks, pos)
        if seq < mb.first_seq or seq > mb.last_seq:
            return None
        return mb

    cdef int c_ensure_loaded(self, MsgBlock mb) except -1:
        self.tick += 1
        mb.last_used = self.tick
        if mb.loaded():
            return 0
        mb.load_bytes(self._read_block(mb))
        mb.c_build_cache(self.psim, False, None)
        self.cache_bytes += mb.cache_size
        return self.c_evict(mb)

    cdef int c_evict(self, MsgBlock keep) except -1:
        cdef MsgBlock other, victim
        while self.cache_bytes > self.cache_budget:
            victim = None
            for other in self.blocks:
                if other is keep or other is self.lmb or not other.loaded():
                    continue
                if victim is None or other.last_used < victim.last_used:
                    victim = other
            if victim is None:
                break
            self.cache_bytes -= min(self.cache_bytes, victim.cache_size)
            victim.c_drop_cache()
        return 0

    def block_index_at(self, uint64_t seq):
        """Index of the block holding seq, or of the next block after it (the last block if none)."""
        cdef Py_ssize_t pos = self.c_block_pos(seq)
        if not self.blocks:
            return 0
        if pos >= PyList_GET_SIZE(self.blocks):
            pos = PyList_GET_SIZE(self.blocks) - 1
        return (<MsgBlock>PyList_GET_ITEM(self.blocks, pos)).index

    def ensure_loaded(self, MsgBlock mb):
        self.c_ensure_loaded(mb)

    def drop_caches(self):
        """Release every sealed block's cache (the write block stays)."""
        cdef MsgBlock mb
        for mb in self.blocks:
            if mb is not self.lmb and mb.loaded():
                self.cache_bytes -= min(self.cache_bytes, mb.cache_size)
                mb.c_drop_cache()

    # -- writing ---------------------------------------------------------------
    cdef int c_check_writable(self) except -1:
        if self.closed:
            raise StoreClosed()
        if self.write_error is not None:
            raise self.write_error
        return 0

    def _roll_block(self):
        cdef MsgBlock old = self.lmb
        cdef MsgBlock mb
        cdef uint32_t index = old.index + 1 if old is not None else 1
        if old is not None:
            old.c_flush()
            old.update_last_hash()
        mb = self._new_block(index)
        mb.first_seq = self.last_seq + 1
        mb.last_seq = self.last_seq
        mb.load_bytes(b"")
        mb.c_build_cache(self.psim, False, None)
        self.blocks.append(mb)
        self.lmb = mb
        self._attach_block(mb)
        if old is not None:
            self._sealed(old)
            self.tick += 1
            old.last_used = self.tick
            if old.loaded():
                self.cache_bytes += old.cache_size
                self.c_evict(None)
        return mb

    cdef int c_store(self, const uint8_t* subj, size_t subj_len, const uint8_t* hdr, size_t hdr_len,
                     bint has_hdr, const uint8_t* msg, size_t msg_len, uint64_t seq, int64_t ts,
                     bint discard_new_check, bint flush) except -1:
        cdef uint64_t length = rec_size(subj_len, hdr_len, msg_len, has_hdr)
        cdef uint64_t size = (subj_len + hdr_len + msg_len + 16) if self.mem_sized else length
        cdef MsgBlock mb = self.lmb
        cdef int64_t sid
        cdef SubjectIndex psim
        cdef uint64_t total
        cdef size_t undo_len
        cdef uint32_t off
        if subj_len == 0 or subj_len > MAX_SUBJECT_LEN:
            raise ValueError("invalid subject length")
        if length > 0x7FFFFFFF or length > (32 << 20):
            raise MsgTooLarge()
        if self.max_msg_size >= 0 and <int64_t>(hdr_len + msg_len) > self.max_msg_size:
            raise MsgTooLarge()
        if seq == 0:
            seq = self.last_seq + 1
        elif seq != self.last_seq + 1:
            raise SequenceMismatch()
        if discard_new_check and self.discard_new:
            if self.max_msgs > 0 and self.msgs >= <uint64_t>self.max_msgs:
                raise MaxMsgsExceeded()
            if self.max_bytes > 0 and self.bytes + size > <uint64_t>self.max_bytes:
                raise MaxBytesExceeded()
        if discard_new_check and self.max_per_subject > 0 and self.discard_new and self.discard_new_per_subject:
            sid = self.psim.c_find(<const char*>subj, subj_len)
            if sid >= 0 and self.psim.total(<uint32_t>sid) >= <uint64_t>self.max_per_subject:
                raise MaxMsgsPerSubjectExceeded()
        if mb is None or (mb.raw_bytes > 0 and mb.raw_bytes + length > self.block_size):
            mb = self._roll_block()
        undo_len = mb.buf_len
        off = <uint32_t>undo_len
        try:
            mb.c_append(seq, ts, subj, subj_len, hdr, hdr_len, has_hdr, msg, msg_len)
        except WriteError as exc:   # no room to grow a mapped block
            self.write_error = exc
            raise
        if flush:
            try:
                mb.c_flush()
            except WriteError as exc:
                # the record is not kept; a part of it the OS took stays in the file, to be
                # cut off as a torn tail when the store is reopened
                mb.buf_len = undo_len
                if mb.flushed > undo_len:
                    mb.flushed = undo_len
                mb.raw_bytes -= length
                self.write_error = exc
                raise
        sid = self.psim.c_intern(<const char*>subj, subj_len)
        total = self.psim.note_store(<uint32_t>sid, seq)
        mb.c_index_append(seq, off, <uint32_t>sid)
        mb.subjects.c_add(<uint32_t>sid, seq)
        if mb.msgs == 0:
            mb.first_seq = seq
            mb.first_ts = ts
            mb.deleted.c_clear()
        mb.msgs += 1
        mb.bytes += size
        mb.last_seq = seq
        mb.last_ts = ts
        if self.msgs == 0:
            self.first_seq = seq
            self.first_ts = ts
        self.msgs += 1
        self.bytes += size
        self.last_seq = seq
        self.last_ts = ts
        self.dirty += 1
        if self.max_per_subject > 0 and total > <uint64_t>self.max_per_subject:
            self.c_enforce_per_subject(<uint32_t>sid)
        if self.max_msgs > 0 or self.max_bytes > 0 or self.max_age > 0:
            self.c_enforce_limits(ts)
        return 0

    cdef int c_store_objects(self, object subject, object hdr, object msg, uint64_t seq, int64_t ts,
                             bint discard_new_check, bint flush) except -1:
        """c_store over Python objects (str or bytes-like subject, header block or None, payload)."""
        cdef const uint8_t* sp
        cdef const uint8_t* hp = NULL
        cdef const uint8_t* mp = <const uint8_t*>""
        cdef Py_ssize_t sn, hn = 0, mn = 0
        subject = subject_bytes(subject)
        as_bytes(subject, &sp, &sn)
        if hdr is not None:
            as_bytes(hdr, &hp, &hn)
        if msg is not None:
            as_bytes(msg, &mp, &mn)
        return self.c_store(sp, sn, hp, hn, hn > 0, mp, mn, seq, ts, discard_new_check, flush)

    cdef int c_after_store(self, int64_t ts, int64_t ttl) except -1:
        """Per-message TTL bookkeeping after a store at ts."""
        if ttl > 0:
            self._ttl_added(self.last_seq, ts, ttl)
        if ts >= self.next_ttl_expiry:
            self._expire_ttls(ts)
        return 0

    cdef inline int64_t c_next_ts(self) noexcept:
        cdef int64_t ts = now_ns()
        return ts if ts > self.last_ts else self.last_ts + 1

    def store_msg(self, subject, hdr, msg, int64_t ttl=0):
        """Store at last_seq + 1 with ts = now; returns (seq, ts)."""
        cdef int64_t ts
        cdef uint64_t seq
        self.c_check_writable()
        ts = self.c_next_ts()
        self.c_store_objects(subject, hdr, msg, 0, ts, True, True)
        seq = self.last_seq
        self.c_after_store(ts, ttl)
        return seq, ts

    def store_raw_msg(self, subject, hdr, msg, uint64_t seq, int64_t ts, int64_t ttl=0,
                      bint discard_new_check=False):
        """Store with a given sequence (0 = next) and timestamp (replication, sourcing)."""
        self.c_check_writable()
        if ts == 0:
            ts = now_ns()
        self.c_store_objects(subject, hdr, msg, seq, ts, discard_new_check, True)
        self.c_after_store(ts, ttl)

    def store_batch(self, msgs):
        """Store many (subject, hdr, msg) tuples with one write to the OS; returns (first, last).
        A message that fails (limits, size) stops the batch: the ones before it are stored."""
        cdef int64_t ts
        cdef uint64_t first = 0, last
        cdef object subject, hdr, msg
        cdef uint64_t start
        self.c_check_writable()
        ts = self.c_next_ts()
        start = self.last_seq + 1
        try:
            for obj in msgs:
                if PyTuple_CheckExact(obj) and PyTuple_GET_SIZE(obj) == 3:
                    subject = <object>PyTuple_GET_ITEM(obj, 0)
                    hdr = <object>PyTuple_GET_ITEM(obj, 1)
                    msg = <object>PyTuple_GET_ITEM(obj, 2)
                else:
                    subject, hdr, msg = obj
                self.c_store_objects(subject, hdr, msg, 0, ts, True, False)
                if first == 0:
                    first = self.last_seq
        finally:
            if self.lmb is not None:
                try:
                    self.lmb.c_flush()
                except WriteError as exc:
                    self.write_error = exc
                    self.c_forget_unwritten(start)
                    raise
        last = self.last_seq
        self.c_after_store(ts, 0)
        return first, last

    cdef int c_forget_unwritten(self, uint64_t first) except -1:
        """After a failed flush of the write block: the messages from `first` on whose records
        did not all reach the OS are removed from memory (the file does not hold them)."""
        cdef MsgBlock mb = self.lmb
        cdef RecordView view
        cdef const uint8_t* rec
        cdef long off
        cdef uint64_t seq, last = self.last_seq
        for seq in range(first, last + 1):
            off = mb.c_offset(seq)
            if off < 0 or mb.c_record(seq, &view, &rec) != 0:
                continue
            if <size_t>off + view.length > mb.flushed:
                self.c_remove(seq, True, False)
        return 0

    def skip_msg(self, uint64_t seq=0):
        """Use up one sequence without storing a message; returns it."""
        self.skip_msgs(seq if seq else self.last_seq + 1, 1)
        return self.last_seq

    def skip_msgs(self, uint64_t seq, uint64_t num):
        """Use up [seq, seq + num - 1]; seq must be last_seq + 1."""
        cdef MsgBlock mb
        cdef uint64_t last
        # the skip record carries the stream's last time (now, for an empty stream), so a
        # rebuild from the blocks finds the same last_ts as the live state
        cdef int64_t ts = self.last_ts if self.last_ts else now_ns()
        self.c_check_writable()
        if num == 0:
            return
        if seq != self.last_seq + 1:
            raise SequenceMismatch()
        last = seq + num - 1
        mb = self.lmb
        if mb is None or (mb.raw_bytes > 0 and (mb.raw_bytes + 30 > self.block_size or num > 65536)):
            mb = self._roll_block()
        try:
            mb.c_append(last | SEQ_ERASE_BIT, ts, NULL, 0, NULL, 0, False, NULL, 0)
        except WriteError as exc:
            self.write_error = exc
            raise
        mb.c_index_append(last, IDX_HOLE, SID_NONE)
        if mb.msgs == 0:
            mb.first_seq = last + 1
            mb.deleted.c_clear()
        else:
            mb.deleted.c_insert_range(seq, last)
        mb.last_seq = last
        try:
            mb.c_flush()
        except WriteError as exc:
            self.write_error = exc
            raise
        mb.last_ts = ts
        self.last_seq = last
        if self.last_ts == 0:
            self.last_ts = ts
        if self.msgs == 0:
            self.first_seq = last + 1
            self.first_ts = 0
        self.dirty += 1

    def flush_all_pending(self):
        if self.lmb is not None:
            try:
                self.lmb.c_flush()
            except WriteError as exc:
                if self.write_error is None:
                    self.write_error = exc
                raise

    # -- removing --------------------------------------------------------------
    def _write_tombstone(self, uint64_t seq, int64_t ts):
        cdef MsgBlock mb = self.lmb
        if mb is None or (mb.raw_bytes > 0 and mb.raw_bytes + 30 > self.block_size):
            mb = self._roll_block()
        try:
            mb.c_append(seq | SEQ_TOMB_BIT, ts, NULL, 0, NULL, 0, False, NULL, 0)
        except WriteError as exc:
            self.write_error = exc
            raise
        mb.tombstones += 1
        try:
            mb.c_flush()
        except WriteError as exc:
            self.write_error = exc
            raise

    cdef int c_remove(self, uint64_t seq, bint via_limits, bint secure) except -1:
        cdef MsgBlock mb = self.c_select_block(seq)
        cdef RecordView view
        cdef const uint8_t* rec
        cdef int64_t sid
        cdef SubjectIndex psim
        cdef uint64_t total
        cdef BlockSubj* bsub
        cdef uint64_t size
        cdef int64_t ts
        cdef long off
        if mb is None or mb.deleted.c_exists(seq):
            return 0
        self.c_ensure_loaded(mb)
        if mb.c_record(seq, &view, &rec) != 0:
            return 0
        sid = self.psim.c_find(<const char*>rec + view.subj_off, view.subj_len)
        size = (view.subj_len + view.hdr_len + view.msg_len + 16) if self.mem_sized else view.length
        ts = view.ts
        if secure:
            off = mb.c_offset(seq)
            self._erase_record(mb, off, seq)
        elif not via_limits and not self.mem_sized:
            self._write_tombstone(seq, ts)
        # per-block state
        mb.msgs -= 1
        mb.bytes -= size
        mb.deleted.c_insert(seq)
        mb.c_mark_removed(seq)
        if sid >= 0:
            bsub = mb.subjects.c_get(<uint32_t>sid) if mb.subjects is not None else NULL
            if bsub != NULL and bsub.count > 0:
                bsub.count -= 1
                if bsub.count == 0:
                    mb.subjects.live -= 1
                if bsub.first_seq == seq:
                    bsub.first_seq = seq + 1
                if bsub.last_seq == seq:
                    bsub.last_seq = seq - 1
            psim = self.psim
            total = psim.total(<uint32_t>sid) - 1
            if total == 0:
                psim.c_release(<uint32_t>sid)
            else:
                psim.set_total(<uint32_t>sid, total)
                if psim.first_seq(<uint32_t>sid) == seq:
                    psim.set_first(<uint32_t>sid, seq + 1)
                if psim.last_seq(<uint32_t>sid) == seq:
                    psim.set_last(<uint32_t>sid, seq - 1)
        if seq == mb.first_seq:
            if mb.msgs and not mb.loaded():
                # a tombstone's new block may have evicted it: the new first's ts is in it
                self.c_ensure_loaded(mb)
            mb.c_select_first()
        # stream state
        self.msgs -= 1
        self.bytes -= size
        self.dirty += 1
        if seq == self.first_seq or self.msgs == 0:
            self.c_after_front_change()
        elif mb.msgs == 0 and mb is not self.lmb and mb.tombstones == 0:
            self._drop_block(mb)
        return 1

    def _erase_record(self, MsgBlock mb, long off, uint64_t seq):
        """Overwrite a record with random bytes under the erase bit (same length)."""
        cdef RecordView view
        cdef const uint8_t* rec
        mb.c_record(seq, &view, &rec)
        filler = os.urandom(view.length - RECORD_HDR_SIZE - RECORD_HASH_SIZE)
        record = mb.make_record(seq | SEQ_ERASE_BIT, 0, b"", None, filler)
        mb.overwrite(off, record)
        self._rewrite_record(mb, off, record)

    def _drop_block(self, MsgBlock mb):
        if mb.loaded():
            self.cache_bytes -= min(self.cache_bytes, mb.cache_size)
        self.blocks.remove(mb)
        self._remove_block(mb)

    cdef int c_after_front_change(self) except -1:
        cdef MsgBlock mb
        while PyList_GET_SIZE(self.blocks) > 1:
            mb = <MsgBlock>PyList_GET_ITEM(self.blocks, 0)
            if mb.msgs > 0 or mb is self.lmb:
                break
            self._drop_block(mb)
        if self.msgs == 0:
            self.first_seq = self.last_seq + 1 if self.last_seq else 0
            self.first_ts = 0
            return 0
        for mb in self.blocks:
            if mb.msgs > 0:
                self.first_seq = mb.first_seq
                self.first_ts = mb.first_ts
                return 0
        return 0

    cdef int c_enforce_limits(self, int64_t now) except -1:
        if self.max_msgs > 0:
            while self.msgs > <uint64_t>self.max_msgs:
                if self.c_remove(self.first_seq, True, False) == 0:
                    break
        if self.max_bytes > 0:
            while self.bytes > <uint64_t>self.max_bytes and self.msgs > 0:
                if self.c_remove(self.first_seq, True, False) == 0:
                    break
        if self.max_age > 0 and self.msgs > 0:
            while self.msgs > 0 and self.first_ts <= now - self.max_age:
                if self.c_remove(self.first_seq, True, False) == 0:
                    break
        return 0

    cdef int c_enforce_per_subject(self, uint32_t sid) except -1:
        cdef uint64_t first
        while self.psim.in_use(sid) and self.psim.total(sid) > <uint64_t>self.max_per_subject:
            first = self.c_subject_first(sid, 0)
            if first == 0 or self.c_remove(first, True, False) == 0:
                break
        return 0

    def enforce_limits(self):
        """Apply max msgs/bytes/age and msgs-per-subject (after a config change or recovery)."""
        cdef uint32_t sid
        if self.max_per_subject > 0:
            for sid in range(self.psim.n_entries):
                if self.psim.in_use(sid) and self.psim.total(sid) > <uint64_t>self.max_per_subject:
                    self.c_enforce_per_subject(sid)
        self.c_enforce_limits(now_ns())

    def expire_msgs(self):
        """Remove messages older than max_age; returns how many were removed."""
        cdef uint64_t before = self.msgs
        if self.max_age > 0 and self.write_error is None:   # removals write too
            self.c_enforce_limits(now_ns())
        return before - self.msgs

    def remove_msg(self, uint64_t seq):
        self.c_check_writable()
        return self.c_remove(seq, False, False) == 1

    def erase_msg(self, uint64_t seq):
        self.c_check_writable()
        return self.c_remove(seq, False, True) == 1

    def remove_msg_via_limits(self, uint64_t seq):
        return self.c_remove(seq, True, False) == 1

    # -- per-subject exact first/last ------------------------------------------
    cdef uint64_t c_subject_first(self, uint32_t sid, uint64_t start) except? 0:
        """Exact lowest live sequence >= start with this subject (0 if none); fixes the hints."""
        cdef SubjectIndex psim = self.psim
        cdef uint64_t seq
        cdef Py_ssize_t pos, n = PyList_GET_SIZE(self.blocks)
        cdef MsgBlock mb
        cdef BlockSubj* bsub
        if not psim.in_use(sid) or psim.total(sid) == 0:
            return 0
        cdef uint64_t hint = psim.first_seq(sid)
        cdef bint exact_hint = start <= hint
        if start < hint:
            start = hint
        pos = self.c_block_pos(start)
        while pos < n:
            mb = <MsgBlock>PyList_GET_ITEM(self.blocks, pos)
            pos += 1
            if mb.msgs == 0:
                continue
            self.c_ensure_loaded(mb)
            bsub = mb.subjects.c_get(sid)
            if bsub == NULL or bsub.count == 0 or bsub.last_seq < start:
                continue
            seq = mb.c_find_sid(sid, bsub.first_seq if bsub.first_seq > start else start,
                                bsub.last_seq, False)
            if seq == 0:
                continue
            if start <= bsub.first_seq:
                bsub.first_seq = seq
            if exact_hint and psim.in_use(sid):
                psim.set_first(sid, seq)
            return seq
        return 0

    cdef uint64_t c_subject_last(self, uint32_t sid, uint64_t max_seq) except? 0:
        """Exact highest live sequence <= max_seq (0 = no bound) with this subject (0 if none)."""
        cdef SubjectIndex psim = self.psim
        cdef uint64_t seq, hint
        cdef Py_ssize_t pos
        cdef MsgBlock mb
        cdef BlockSubj* bsub
        cdef bint exact_hint
        cdef RecordView view
        cdef int64_t found
        if not psim.in_use(sid) or psim.total(sid) == 0:
            return 0
        hint = psim.last_seq(sid)
        if max_seq == 0 or max_seq > hint:
            max_seq = hint
        exact_hint = max_seq >= hint
        pos = self.c_block_pos(max_seq)
        if pos >= PyList_GET_SIZE(self.blocks):
            pos = PyList_GET_SIZE(self.blocks) - 1
        while pos >= 0:
            mb = <MsgBlock>PyList_GET_ITEM(self.blocks, pos)
            pos -= 1
            if mb.msgs == 0 or mb.first_seq > max_seq:
                continue
            if not mb.loaded() and max_seq <= mb.last_seq:
                # max_seq itself may be the answer: one record read, no block load
                if read_record(mb, max_seq, psim, &view, &found) is not None and found == sid:
                    return max_seq
            self.c_ensure_loaded(mb)
            bsub = mb.subjects.c_get(sid)
            if bsub == NULL or bsub.count == 0 or bsub.first_seq > max_seq:
                continue
            seq = mb.c_find_sid(sid, bsub.first_seq, bsub.last_seq if bsub.last_seq < max_seq else max_seq, True)
            if seq == 0:
                continue
            if max_seq >= bsub.last_seq:
                bsub.last_seq = seq
            if exact_hint and psim.in_use(sid):
                psim.set_last(sid, seq)
            return seq
        return 0

    # -- loading ---------------------------------------------------------------
    cdef StoreMsg c_load(self, uint64_t seq):
        cdef MsgBlock mb = self.c_select_block(seq)
        cdef RecordView view
        cdef const uint8_t* rec
        cdef object data
        cdef int64_t sid
        if mb is None or mb.deleted.c_exists(seq):
            return None
        if not mb.loaded():
            data = read_record(mb, seq, self.psim, &view, &sid)
            if data is not None:
                self.tick += 1
                mb.last_used = self.tick
                return make_store_msg(<const uint8_t*><const char*>data, &view, self.mem_sized)
        self.c_ensure_loaded(mb)
        if mb.c_record(seq, &view, &rec) != 0:
            return None
        return make_store_msg(rec, &view, self.mem_sized)

    def load_msg(self, uint64_t seq):
        """The message at seq (0 = the first). MsgNotFound if deleted, StoreEOF past the end."""
        cdef StoreMsg sm
        if self.closed:
            raise StoreClosed()
        if seq == 0:
            # the first message; an empty store has none (EOF, whatever first_seq says)
            seq = self.first_seq if self.msgs else self.last_seq + 1
        if seq > self.last_seq:
            raise StoreEOF()
        if seq < self.first_seq:
            raise MsgNotFound()
        sm = self.c_load(seq)
        if sm is None:
            raise MsgNotFound()
        return sm

    def subject_for_seq(self, uint64_t seq):
        return self.load_msg(seq).subject
