"""Message blocks: record bytes, the seq -> offset index and per-block subject state."""

from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memcpy
from libc.stdint cimport uintptr_t
from libc.errno cimport errno, EINTR
from posix.unistd cimport ftruncate
from posix.mman cimport mmap, munmap, mremap, PROT_READ, PROT_WRITE, MAP_SHARED, MAP_FAILED

cdef extern from "sys/mman.h" nogil:
    enum: MREMAP_MAYMOVE
    int madvise(void* addr, size_t length, int advice)

# madvise(2) advice (Linux 5.14): fault a range in for writing with one call. Older kernels
# answer EINVAL and the pages fault one by one as before.
cdef int MADV_POPULATE_WRITE = 23
# how far ahead of the appends a block's pages are faulted in, in one call (c_populate)
cdef size_t POPULATE_AHEAD = 256 * 1024

cdef size_t PAGE = 4096

cdef inline size_t page_round(size_t n) noexcept nogil:
    return (n + PAGE - 1) & ~(PAGE - 1)

from jsstore._core.storage.record cimport (record_parse, record_encode, record_hash_ok, rec_size,
                                           rec_get_u32, RECORD_HASH_SIZE, SEQ_MASK)
from jsstore._core.storage.hashing cimport hh_key_from_bytes
from jsstore._core.storage.faults cimport io_write, io_fallocate
from jsstore._core.storage.faults import errno_text
from jsstore.errors import BadMsg, WriteError
import os


cdef class MsgBlock:
    """One block. The engine owns the policy (when to load, flush, seal); this owns the bytes."""

    def __cinit__(self):
        self.fd = -1
        self.buf = NULL
        self.idx = NULL
        self.sids = NULL
        self.marks = NULL
        self.subjects = None

    def __init__(self, uint32_t index, bytes hash_key, path=None, bint mem_sized=False):
        if len(hash_key) != 32:
            raise ValueError("hash key must be 32 bytes")
        self.index = index
        hh_key_from_bytes(<const uint8_t*><const char*>hash_key, self.hash_key)
        self.path = path
        self.deleted = SeqSet()
        self.last_hash = b"\0" * 8
        self.mem_sized = mem_sized

    def __dealloc__(self):
        if self.mapped:
            munmap(self.buf, self.map_len)
            if self.fd >= 0 and self.buf_cap != self.buf_len:
                ftruncate(self.fd, self.buf_len)
        else:
            PyMem_Free(self.buf)
        PyMem_Free(self.idx)
        PyMem_Free(self.sids)
        PyMem_Free(self.marks)
        if self.fd >= 0:
            os.close(self.fd)

    # -- file -----------------------------------------------------------------
    def open_for_append(self, size_t map_size=0):
        """Open the file for writing; with map_size, write through a mapping of that size."""
        if self.fd < 0 and self.path is not None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        if map_size and self.fd >= 0 and self.buf != NULL and not self.mapped:
            self.c_flush()
            self.c_map(map_size if map_size > self.buf_len else self.buf_len)

    def unmap(self):
        """Leave mapped mode, keeping the cache in memory; the file is cut back to its records."""
        self.c_unmap(True)

    def trim(self):
        """Cut the file back to its records (the reserved space goes); the mapping stays."""
        self.c_trim()

    def close_file(self):
        """Close the descriptor (after trimming the file); a mapped cache stays readable."""
        self.c_trim()
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    @property
    def is_mapped(self):
        return self.mapped

    cdef int c_map(self, size_t capacity) except -1:
        cdef void* p
        cdef int rc
        capacity = page_round(capacity if capacity > self.buf_len else self.buf_len)
        if self.mapped or self.fd < 0 or capacity == 0:
            return 0
        rc = io_fallocate(self.fd, 0, capacity, self.path)
        if rc != 0:
            return 0  # no room reserved: stay with write(2), which reports ENOSPC cleanly
        p = mmap(NULL, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, self.fd, 0)
        if p == MAP_FAILED:
            ftruncate(self.fd, self.buf_len)
            return 0
        PyMem_Free(self.buf)
        self.buf = <uint8_t*>p
        self.buf_cap = capacity
        self.map_len = capacity
        self.flushed = self.buf_len
        self.mapped = True
        self.populated = self.buf_len & ~(PAGE - 1)
        return 0

    cdef int c_trim(self) except -1:
        if not self.mapped or self.buf_cap == self.buf_len or self.fd < 0:
            return 0
        if ftruncate(self.fd, self.buf_len) != 0:
            raise WriteError(f"truncate {self.path}: {os.strerror(errno)}")
        self.buf_cap = self.buf_len   # mapped pages past the end of the file are never touched
        if self.populated > self.buf_len:
            self.populated = self.buf_len & ~(PAGE - 1)
        return 0

    cdef int c_unmap(self, bint keep_cache) except -1:
        cdef uint8_t* heap = NULL
        cdef size_t cap = self.buf_len if self.buf_len > 64 else 64
        if not self.mapped:
            return 0
        self.c_trim()
        if keep_cache:
            heap = <uint8_t*>PyMem_Malloc(cap)
            if heap == NULL:
                raise MemoryError()
            memcpy(heap, self.buf, self.buf_len)
        munmap(self.buf, self.map_len)
        self.mapped = False
        self.map_len = 0
        self.populated = 0
        self.buf = heap
        self.buf_cap = cap if keep_cache else 0
        return 0

    @property
    def file_fd(self):
        return self.fd

    # -- cache ----------------------------------------------------------------
    cdef bint loaded(self) noexcept:
        return self.buf != NULL

    @property
    def is_loaded(self):
        return self.buf != NULL

    @property
    def cache_size(self):
        return (self.buf_len if self.mapped else self.buf_cap) + self.idx_cap * 8

    cdef int c_reserve(self, size_t extra) except -1:
        cdef size_t need = self.buf_len + extra
        cdef size_t cap
        cdef uint8_t* nb
        cdef void* p
        cdef int rc
        if need <= self.buf_cap and self.buf != NULL:
            if need > self.populated:
                self.c_populate(need)
            return 0
        if self.mapped:
            if self.fd < 0:
                raise WriteError(f"append to closed block {self.path}")
            cap = page_round(need if need > self.map_len else self.map_len * 2)
            rc = io_fallocate(self.fd, 0, cap, self.path)
            if rc != 0:
                raise WriteError(f"grow {self.path}: {errno_text(rc)}", rc)
            if cap > self.map_len:
                p = mremap(self.buf, self.map_len, cap, MREMAP_MAYMOVE)
                if p == MAP_FAILED:
                    raise WriteError(f"grow mapping of {self.path}: {os.strerror(errno)}")
                self.buf = <uint8_t*>p
                self.map_len = cap
            self.buf_cap = cap
            self.c_populate(need)
            return 0
        cap = self.buf_cap if self.buf_cap else 4096
        while cap < need:
            cap *= 2
        nb = <uint8_t*>PyMem_Realloc(self.buf, cap)
        if nb == NULL:
            raise MemoryError()
        self.buf = nb
        self.buf_cap = cap
        self.populated = self.buf_len   # (a moved buffer: only what realloc copied is in)
        self.c_populate(need)
        return 0

    cdef void c_populate(self, size_t need) noexcept:
        """Fault in the whole pages of buf up to need + POPULATE_AHEAD (within buf_cap) for
        writing, in one system call: appends then take no page fault each 4 KiB (the
        mapping of a file block, or the heap buffer of a memory block). A kernel without
        MADV_POPULATE_WRITE leaves the pages to fault in one by one."""
        cdef size_t hi = page_round(need) + POPULATE_AHEAD
        cdef uintptr_t start, end
        if hi > self.buf_cap:
            hi = self.buf_cap
        if hi <= self.populated:
            return
        start = page_round(<uintptr_t>(self.buf + self.populated))
        end = (<uintptr_t>(self.buf + hi)) & ~(<uintptr_t>PAGE - 1)
        if end > start:
            madvise(<void*>start, end - start, MADV_POPULATE_WRITE)
        self.populated = hi

    def load_bytes(self, data):
        """Take the uncompressed record bytes of this block as its cache (does not index them)."""
        cdef const uint8_t[::1] view = data
        self.c_drop_cache()
        self.c_forget_marks()
        self.c_reserve(max(<size_t>view.shape[0], 64))
        if view.shape[0]:
            memcpy(self.buf, &view[0], view.shape[0])
        self.buf_len = view.shape[0]
        self.flushed = view.shape[0]

    def overwrite(self, long offset, bytes record):
        """Replace the record at offset with one of the same length (erase)."""
        cdef Py_ssize_t n = len(record)
        cdef size_t i
        if self.buf == NULL or offset < 0 or <size_t>offset + n > self.buf_len:
            raise ValueError("overwrite out of range")
        memcpy(self.buf + offset, <const char*>record, n)
        for i in range(self.idx_len):
            if (self.idx[i] & IDX_OFF_MASK) == <uint32_t>offset and not (self.idx[i] & IDX_HOLE):
                self.idx[i] = IDX_HOLE
                self.sids[i] = SID_NONE

    def make_record(self, uint64_t seq_bits, int64_t ts, bytes subject=b"", bytes hdr=None, bytes msg=b""):
        """A record encoded with this block's hash key (not appended)."""
        cdef uint64_t length = rec_size(len(subject), len(hdr) if hdr is not None else 0, len(msg), hdr is not None)
        out = PyBytes_FromStringAndSize(NULL, length)
        record_encode(<uint8_t*><char*>out, seq_bits, ts, <const uint8_t*><char*>subject, len(subject),
                      <const uint8_t*><char*>hdr if hdr is not None else NULL,
                      len(hdr) if hdr is not None else 0, hdr is not None,
                      <const uint8_t*><char*>msg, len(msg), self.hash_key)
        return out

    def tombstone_list(self):
        """(seq, ts) of every tombstone record in the cached bytes."""
        cdef size_t pos = 0
        cdef RecordView view
        cdef list out = []
        while pos < self.buf_len:
            if record_parse(self.buf + pos, self.buf_len - pos, &view) != 0:
                break
            if view.tombstone:
                out.append((view.seq, view.ts))
            pos += view.length
        return out

    def raw_data(self):
        """The uncompressed record bytes held in the cache."""
        if self.buf == NULL:
            return None
        return PyBytes_FromStringAndSize(<const char*>self.buf, self.buf_len)

    cdef void c_forget_marks(self) noexcept:
        PyMem_Free(self.marks)
        self.marks = NULL
        self.n_marks = 0
        self.peek = None
        self.peek_seq = 0

    cdef void c_keep_marks(self) noexcept:
        """Sample idx into marks before it is freed (a block file whose offsets are buf's)."""
        cdef size_t i, n
        cdef uint32_t cur = 0
        self.c_forget_marks()
        if self.path is None or self.compression != 0 or self.idx_len == 0 or self.damaged:
            return
        n = (self.idx_len + MARK_EVERY - 1) // MARK_EVERY
        self.marks = <uint32_t*>PyMem_Malloc(n * sizeof(uint32_t))
        if self.marks == NULL:
            return
        for i in range(self.idx_len):
            if not (self.idx[i] & IDX_HOLE):
                cur = self.idx[i] & IDX_OFF_MASK
            if i % MARK_EVERY == 0:
                self.marks[i // MARK_EVERY] = cur
        self.n_marks = n
        self.marks_first = self.idx_first

    cdef void c_drop_cache(self) noexcept:
        if self.idx != NULL and self.buf != NULL and self.flushed == self.buf_len:
            self.c_keep_marks()
        if self.mapped:
            munmap(self.buf, self.map_len)
            self.mapped = False
            self.map_len = 0
            if self.fd >= 0 and self.buf_cap != self.buf_len:
                ftruncate(self.fd, self.buf_len)
        else:
            PyMem_Free(self.buf)
        PyMem_Free(self.idx)
        PyMem_Free(self.sids)
        self.populated = 0
        self.buf = NULL
        self.idx = NULL
        self.sids = NULL
        self.buf_len = self.buf_cap = self.flushed = 0
        self.idx_len = self.idx_cap = 0
        self.subjects = None

    def drop_cache(self):
        self.c_drop_cache()

    cdef int c_index_append(self, uint64_t seq, uint32_t off, uint32_t sid) except -1:
        cdef uint32_t* ni
        cdef uint32_t* ns
        cdef size_t cap
        if self.idx_len == 0:
            self.idx_first = seq
        elif seq < self.idx_first + self.idx_len:
            raise BadMsg(f"sequence {seq} out of order in {self.index}.blk")
        elif seq - (self.idx_first + self.idx_len) > MAX_INDEX_GAP:
            raise BadMsg(f"sequence {seq} jumps too far in {self.index}.blk")
        while True:
            if self.idx_len == self.idx_cap:
                cap = self.idx_cap * 2 if self.idx_cap else 1024
                ni = <uint32_t*>PyMem_Realloc(self.idx, cap * sizeof(uint32_t))
                if ni == NULL:
                    raise MemoryError()
                self.idx = ni
                ns = <uint32_t*>PyMem_Realloc(self.sids, cap * sizeof(uint32_t))
                if ns == NULL:
                    raise MemoryError()
                self.sids = ns
                self.idx_cap = cap
            if self.idx_first + self.idx_len == seq:
                self.idx[self.idx_len] = off
                self.sids[self.idx_len] = SID_NONE if off & IDX_HOLE else sid
                self.idx_len += 1
                return 0
            self.idx[self.idx_len] = IDX_HOLE
            self.sids[self.idx_len] = SID_NONE
            self.idx_len += 1

    cdef uint32_t c_append(self, uint64_t seq_bits, int64_t ts, const uint8_t* subj, size_t subj_len,
                           const uint8_t* hdr, size_t hdr_len, bint has_hdr,
                           const uint8_t* msg, size_t msg_len) except 0:
        cdef size_t length = rec_size(subj_len, hdr_len, msg_len, has_hdr)
        cdef uint32_t off = <uint32_t>self.buf_len
        self.c_reserve(length)
        record_encode(self.buf + off, seq_bits, ts, subj, subj_len, hdr, hdr_len, has_hdr,
                      msg, msg_len, self.hash_key)
        self.buf_len += length
        self.raw_bytes += length
        return <uint32_t>length

    cdef int c_flush(self) except -1:
        cdef ssize_t n
        cdef int err
        cdef size_t todo
        if self.fd < 0 or self.mapped:
            self.flushed = self.buf_len   # a mapped append is already in the OS page cache
            return 0
        while self.flushed < self.buf_len:
            todo = self.buf_len - self.flushed
            # the GIL stays held: another thread must not grow buf during the write
            n = io_write(self.fd, self.buf + self.flushed, todo, self.path)
            if n < 0:
                err = errno
                if err == EINTR:
                    continue
                raise WriteError(f"write {self.path}: {errno_text(err)}", err)
            self.flushed += n
        return 0

    def pending_bytes(self):
        return self.buf_len - self.flushed

    def update_last_hash(self):
        if self.buf_len >= RECORD_HASH_SIZE:
            self.last_hash = PyBytes_FromStringAndSize(<const char*>self.buf + self.buf_len - RECORD_HASH_SIZE,
                                                       RECORD_HASH_SIZE)

    # -- lookups --------------------------------------------------------------
    cdef long c_offset(self, uint64_t seq) noexcept:
        cdef uint64_t i
        cdef uint32_t entry
        if self.buf == NULL or seq < self.idx_first:
            return -1
        i = seq - self.idx_first
        if i >= self.idx_len:
            return -1
        entry = self.idx[i]
        if entry & IDX_HOLE:
            return -1
        return entry & IDX_OFF_MASK

    cdef void c_mark_removed(self, uint64_t seq) noexcept:
        cdef uint64_t i
        if self.idx == NULL or seq < self.idx_first:
            return
        i = seq - self.idx_first
        if i < self.idx_len:
            self.idx[i] = IDX_HOLE
            self.sids[i] = SID_NONE

    cdef int c_record(self, uint64_t seq, RecordView* view, const uint8_t** rec) except -2:
        cdef uint64_t i
        cdef uint32_t entry, off
        if self.buf == NULL or seq < self.idx_first or seq < self.first_seq or seq > self.last_seq:
            return -1
        i = seq - self.idx_first
        if i >= self.idx_len:
            return -1
        entry = self.idx[i]
        if entry & IDX_HOLE:
            return -1
        off = entry & IDX_OFF_MASK
        if record_parse(self.buf + off, self.buf_len - off, view) != 0:
            self.damaged = True
            raise BadMsg(f"malformed or corrupt message in {self.index}.blk at offset {off}")
        if not (entry & IDX_CHECKED):
            if not record_hash_ok(self.buf + off, view, self.hash_key):
                self.damaged = True
                raise BadMsg(f"malformed or corrupt message in {self.index}.blk: checksum mismatch for seq {seq}")
            self.idx[i] = entry | IDX_CHECKED
        rec[0] = self.buf + off
        return 0

    cdef uint64_t c_next_live(self, uint64_t seq) noexcept:
        if seq < self.first_seq:
            seq = self.first_seq
        while seq <= self.last_seq:
            seq = self.deleted.c_next_absent(seq)
            if seq > self.last_seq:
                return 0
            if self.buf == NULL or self.c_offset(seq) >= 0:
                return seq
            seq += 1
        return 0

    cdef uint64_t c_prev_live(self, uint64_t seq) noexcept:
        if seq > self.last_seq:
            seq = self.last_seq
        while seq >= self.first_seq and seq > 0:
            seq = self.deleted.c_prev_absent(seq)
            if seq < self.first_seq or seq == 0:
                return 0
            if self.buf == NULL or self.c_offset(seq) >= 0:
                return seq
            seq -= 1
        return 0

    cdef int c_select_first(self) except -1:
        """Move first_seq forward to the first live message; drop the deletes below it."""
        cdef uint64_t seq
        cdef RecordView view
        cdef const uint8_t* rec
        if self.msgs == 0:
            self.first_seq = self.last_seq + 1
            self.first_ts = 0
            self.deleted.c_clear()
            return 0
        seq = self.c_next_live(self.first_seq)
        if seq == 0:
            self.first_seq = self.last_seq + 1
            self.deleted.c_clear()
            return 0
        self.first_seq = seq
        self.deleted.c_delete_below(seq)
        if self.buf != NULL and self.c_record(seq, &view, &rec) == 0:
            self.first_ts = view.ts
        return 0

    cdef bint _clamp(self, uint64_t* lo, uint64_t* hi) noexcept:
        cdef uint64_t top
        if self.idx_len == 0 or self.sids == NULL:
            return False
        top = self.idx_first + self.idx_len - 1
        if lo[0] < self.idx_first:
            lo[0] = self.idx_first
        if lo[0] < self.first_seq:
            lo[0] = self.first_seq
        if hi[0] > top:
            hi[0] = top
        if hi[0] > self.last_seq:
            hi[0] = self.last_seq
        return lo[0] <= hi[0]

    cdef uint64_t c_find_sid(self, uint32_t sid, uint64_t lo, uint64_t hi, bint backward) noexcept:
        cdef size_t i, a, b
        if not self._clamp(&lo, &hi):
            return 0
        a = lo - self.idx_first
        b = hi - self.idx_first
        if backward:
            i = b + 1
            while i > a:
                i -= 1
                if self.sids[i] == sid:
                    return self.idx_first + i
        else:
            for i in range(a, b + 1):
                if self.sids[i] == sid:
                    return self.idx_first + i
        return 0

    cdef uint64_t c_find_mask(self, const uint8_t* mask, uint32_t mask_len, uint64_t lo, uint64_t hi,
                              bint backward) noexcept:
        cdef size_t i, a, b
        cdef uint32_t sid
        if not self._clamp(&lo, &hi):
            return 0
        a = lo - self.idx_first
        b = hi - self.idx_first
        if backward:
            i = b + 1
            while i > a:
                i -= 1
                sid = self.sids[i]
                if sid < mask_len and mask[sid]:
                    return self.idx_first + i
        else:
            for i in range(a, b + 1):
                sid = self.sids[i]
                if sid < mask_len and mask[sid]:
                    return self.idx_first + i
        return 0

    cdef uint64_t c_count_sid(self, uint32_t sid, uint64_t lo, uint64_t hi) noexcept:
        cdef size_t i, a, b
        cdef uint64_t n = 0
        if not self._clamp(&lo, &hi):
            return 0
        a = lo - self.idx_first
        b = hi - self.idx_first
        for i in range(a, b + 1):
            n += self.sids[i] == sid
        return n

    cdef uint64_t c_count_mask(self, const uint8_t* mask, uint32_t mask_len, uint64_t lo, uint64_t hi) noexcept:
        cdef size_t i, a, b
        cdef uint64_t n = 0
        cdef uint32_t sid
        if not self._clamp(&lo, &hi):
            return 0
        a = lo - self.idx_first
        b = hi - self.idx_first
        for i in range(a, b + 1):
            sid = self.sids[i]
            if sid < mask_len and mask[sid]:
                n += 1
        return n

    cdef uint64_t c_count_live(self, uint64_t lo, uint64_t hi) noexcept:
        if lo < self.first_seq:
            lo = self.first_seq
        if hi > self.last_seq:
            hi = self.last_seq
        if self.msgs == 0 or lo > hi:
            return 0
        if lo == self.first_seq and hi == self.last_seq:
            return self.msgs
        return (hi - lo + 1) - self.deleted.c_count_range(lo, hi)

    def select_first(self):
        self.c_select_first()

    def offset_of(self, uint64_t seq):
        return self.c_offset(seq)

    # -- indexing -------------------------------------------------------------
    cdef int c_build_cache(self, SubjectIndex psim, bint intern, list tombstones) except -1:
        """Index the record bytes in buf.

        With ``intern`` (recovery from the blocks alone) this also derives the block's range,
        counts and deleted set from the records, verifies every hash, and stops at the first
        bad record: the caller truncates there (``raw_bytes`` is set to the good length).
        Without it, the range, counts and deletes are trusted and only the index and the
        per-subject state are built.
        """
        cdef size_t pos = 0
        cdef RecordView view
        cdef uint64_t seq, prev = 0
        cdef bint any_record = False
        cdef int64_t sid
        cdef BlockSubjects subjects = BlockSubjects()
        cdef uint64_t msgs = 0, nbytes = 0, tombs = 0, max_tomb = 0
        cdef uint64_t first = 0, last = 0
        cdef int64_t first_ts = 0, last_ts = 0
        cdef bint live
        self.idx_len = 0
        while pos < self.buf_len:
            if record_parse(self.buf + pos, self.buf_len - pos, &view) != 0:
                self.damaged = not intern
                break
            if intern and not record_hash_ok(self.buf + pos, &view, self.hash_key):
                break
            if view.tombstone:
                tombs += 1
                if view.seq > max_tomb:
                    max_tomb = view.seq
                if tombstones is not None:
                    tombstones.append((view.seq, view.ts))
                pos += view.length
                continue
            seq = view.seq
            if (any_record and seq <= prev) or (any_record and seq - prev > MAX_INDEX_GAP) or \
                    (not intern and seq > self.last_seq):
                self.damaged = not intern
                break
            if not any_record:
                first = seq
                first_ts = view.ts
            if view.erased:
                self.c_index_append(seq, IDX_HOLE, SID_NONE)
                if intern:
                    self.deleted.c_insert(seq)
            else:
                if intern:
                    live = True
                else:
                    live = seq >= self.first_seq and seq <= self.last_seq and not self.deleted.c_exists(seq)
                if live:
                    if intern:
                        sid = psim.c_intern(<const char*>self.buf + pos + view.subj_off, view.subj_len)
                        msgs += 1
                        nbytes += (view.subj_len + view.hdr_len + view.msg_len + 16) if self.mem_sized else view.length
                    else:
                        sid = psim.c_find(<const char*>self.buf + pos + view.subj_off, view.subj_len)
                    if sid >= 0:
                        subjects.c_add(<uint32_t>sid, seq)
                        self.c_index_append(seq, <uint32_t>pos | (IDX_CHECKED if intern else 0), <uint32_t>sid)
                    else:  # a subject the stream does not know: the record is damaged
                        self.damaged = True
                        self.c_index_append(seq, IDX_HOLE, SID_NONE)
                else:
                    self.c_index_append(seq, IDX_HOLE, SID_NONE)
            if intern and any_record and seq > prev + 1:
                self.deleted.c_insert_range(prev + 1, seq - 1)
            prev = seq
            last = seq
            last_ts = view.ts
            any_record = True
            pos += view.length
        if intern:
            self.buf_len = pos
            self.flushed = pos
            self.raw_bytes = pos
            self.tombstones = tombs
            self.msgs = msgs
            self.bytes = nbytes
            if any_record:
                self.first_seq = first
                self.first_ts = first_ts
                self.last_seq = last
                self.last_ts = last_ts
            elif max_tomb:
                self.last_seq = max_tomb
                self.first_seq = max_tomb + 1
            self.update_last_hash()
        self.subjects = subjects
        return 0

    def build_cache(self, SubjectIndex psim, bint intern=False, list tombstones=None):
        self.c_build_cache(psim, intern, tombstones)

    def __repr__(self):
        return (f"MsgBlock(index={self.index}, first={self.first_seq}, last={self.last_seq}, "
                f"msgs={self.msgs}, bytes={self.bytes}, raw={self.raw_bytes}, loaded={self.buf != NULL})")
