# cython: freethreading_compatible = False
"""Arrow column buffers from block bytes (fields and rules in arrowblock.pxd), and the
metadata walk the Spark planner uses on blocks that index.db does not describe."""

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memcmp, memset
from libc.stdint cimport uint8_t, uint32_t, int32_t, uint64_t, int64_t, INT64_MAX, INT64_MIN
from cpython.buffer cimport PyBuffer_FillInfo

from jsstore._core.storage.record cimport RECORD_EMPTY_LEN, RecordView, record_hash_ok, record_parse
from jsstore._core.storage.subjects cimport SubjectIndex, subject_matches

COLUMNS = {"seq": COLUMN_SEQ, "subject": COLUMN_SUBJECT, "time": COLUMN_TIME,
           "time_ns": COLUMN_TIME_NS, "headers": COLUMN_HEADERS, "data": COLUMN_DATA}
MAX_SEQ = (1 << 62) - 1           # above every sequence a record can carry

cdef const char* VERSION_LINE = b"NATS/1.0"


# -- growable buffers --------------------------------------------------------------------

cdef int _reserve(GrowBuffer* b, size_t extra) except -1:
    cdef size_t need = b.length + extra
    cdef size_t capacity
    cdef uint8_t* grown
    if need <= b.capacity:
        return 0
    capacity = b.capacity * 2 if b.capacity else max(<size_t>4096, b.hint)
    while capacity < need:
        capacity *= 2
    grown = <uint8_t*>realloc(b.data, capacity)
    if grown == NULL:
        raise MemoryError()
    b.data = grown
    b.capacity = capacity
    return 0


cdef inline int _append(GrowBuffer* b, const uint8_t* src, size_t n) except -1:
    if b.length + n > b.capacity:
        _reserve(b, n)
    if n:
        memcpy(b.data + b.length, src, n)
        b.length += n
    return 0


cdef inline int _append_i64(GrowBuffer* b, int64_t value) except -1:
    if b.length + 8 > b.capacity:
        _reserve(b, 8)
    memcpy(b.data + b.length, &value, 8)
    b.length += 8
    return 0


cdef inline int _append_i32(GrowBuffer* b, int32_t value) except -1:
    if b.length + 4 > b.capacity:
        _reserve(b, 4)
    memcpy(b.data + b.length, &value, 4)
    b.length += 4
    return 0


cdef bint _all_zero(const uint8_t* p, size_t n) noexcept nogil:
    cdef size_t i
    for i in range(n):
        if p[i]:
            return False
    return True


cdef size_t _resync(const uint8_t* buf, size_t size, size_t start, const uint64_t* key,
                    uint64_t after_seq) noexcept nogil:
    """Offset of the first intact record at or after `start` (it parses, its hash is right,
    and a message record's sequence is above `after_seq`), or `size` when there is none: the
    walk goes on after a damaged stretch of a block."""
    cdef RecordView view
    cdef size_t at = start
    while at + RECORD_EMPTY_LEN <= size:
        if (record_parse(buf + at, size - at, &view) == 0 and record_hash_ok(buf + at, &view, key)
                and (view.tombstone or view.seq > after_seq)):
            return at
        at += 1
    return size


cdef inline bint _blank(uint8_t c) noexcept nogil:
    return c == 32 or c == 9


cdef class HandedBuffer:
    """Bytes a BlockColumns built, handed over without a copy: read through the buffer
    protocol (pyarrow.py_buffer keeps the object alive) and freed with the object."""

    def __dealloc__(self):
        free(self.data)
        self.data = NULL

    def __len__(self):
        return self.length

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.data, self.length, 1, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass


cdef object _hand_over(GrowBuffer* b):
    """The buffer's bytes as a HandedBuffer; the GrowBuffer starts empty again, to be
    allocated at the size it reached."""
    cdef HandedBuffer out = HandedBuffer.__new__(HandedBuffer)
    out.data = b.data
    out.length = b.length
    b.hint = b.length
    b.data = NULL
    b.length = 0
    b.capacity = 0
    return out


# -- subject clauses ---------------------------------------------------------------------

cdef class SubjectPredicate:
    """Subject clauses ANDed together: `exact` (an iterable of subjects, or None), every one
    of `prefixes`, and at least one of `wildcards` (NATS filters) when any is given."""

    def __init__(self, exact=None, prefixes=(), wildcards=()):
        self.exact = None
        if exact is not None:
            self.exact = SubjectIndex()
            for subject in exact:
                raw = subject.encode() if isinstance(subject, str) else bytes(subject)
                if raw:
                    self.exact.intern(raw)
        self.prefixes = [p.encode() if isinstance(p, str) else bytes(p) for p in prefixes]
        self.wildcards = [w.encode() if isinstance(w, str) else bytes(w) for w in wildcards]
        self.match_all = self.exact is None and not self.prefixes and not self.wildcards
        self.seen = SubjectIndex()
        self.decisions = bytearray()

    cdef int c_accept(self, const uint8_t* subject, size_t length) except -1:
        cdef int64_t sid
        cdef bytes clause
        cdef bint ok
        if self.match_all:
            return 1
        if self.exact is not None:
            if self.exact.c_find(<const char*>subject, length) < 0:
                return 0
            if not self.prefixes and not self.wildcards:
                return 1
        sid = self.seen.c_find(<const char*>subject, length)
        if sid >= 0 and <size_t>sid < <size_t>len(self.decisions) and self.decisions[sid]:
            return self.decisions[sid] == 1
        ok = True
        for clause in self.prefixes:
            if <size_t>len(clause) > length or memcmp(subject, <const char*>clause, len(clause)) != 0:
                ok = False
                break
        if ok and self.wildcards:
            ok = False
            for clause in self.wildcards:
                if subject_matches(<const char*>subject, length, <const char*>clause, len(clause)):
                    ok = True
                    break
        if length:
            sid = self.seen.c_intern(<const char*>subject, length)
            while <size_t>len(self.decisions) <= <size_t>sid:
                self.decisions.extend(bytes(max(64, len(self.decisions))))
            self.decisions[sid] = 1 if ok else 2
        return 1 if ok else 0

    def accepts(self, subject) -> bool:
        cdef bytes raw = subject.encode() if isinstance(subject, str) else bytes(subject)
        return self.c_accept(<const uint8_t*><const char*>raw, len(raw)) == 1


# -- the column builder --------------------------------------------------------------------

cdef class BlockColumns:
    """Rows of one plain block: BlockColumns(data, columns, seq_low, seq_high, time_low,
    time_high, deleted, predicate); next_batch(max_rows) until it returns None."""

    def __cinit__(self):
        memset(self.buffers, 0, sizeof(self.buffers))

    def __init__(self, data, int columns, uint64_t seq_low=0, uint64_t seq_high=MAX_SEQ,
                 int64_t time_low=INT64_MIN, int64_t time_high=INT64_MAX, deleted=None,
                 SubjectPredicate predicate=None, hash_key=None):
        """hash_key: the block's 32-byte record key (hashing.block_hash_key); given, a record
        whose hash does not match stops the walk as damage."""
        cdef const uint8_t[::1] view = data
        cdef const uint8_t[::1] deleted_view
        cdef bytes key
        self.check_hash = hash_key is not None
        if self.check_hash:
            key = bytes(hash_key)
            if len(key) != 32:
                raise ValueError("hash_key must be 32 bytes")
            memcpy(self.hash_key, <const char*>key, 32)
        self.damaged = False
        self.holes = []
        self.open_hole = None
        self.passed_high = False
        self.last_seq = 0
        self.accounted = 0
        self.source = data
        self.size = view.shape[0]
        self.buf = &view[0] if self.size else NULL
        self.pos = 0
        self.finished = self.size == 0
        self.columns = columns
        self.seq_low, self.seq_high = seq_low, seq_high
        self.time_low, self.time_high = time_low, time_high
        self.deleted = NULL
        self.deleted_len = 0
        self.deleted_pos = 0
        if deleted is not None and len(deleted):
            # packed little-endian u64, ascending (array('Q') or numpy uint64 bytes)
            self.deleted_source = deleted
            deleted_view = memoryview(deleted).cast("B")
            self.deleted_len = deleted_view.shape[0] // 8
            self.deleted = <const uint64_t*>&deleted_view[0]
        self.predicate = predicate if predicate is not None else SubjectPredicate()
        self.c_reset_batch()

    def __dealloc__(self):
        cdef int i
        for i in range(BUF_COUNT):
            free(self.buffers[i].data)
            self.buffers[i].data = NULL

    @property
    def position(self):
        """Byte offset of the next record to walk."""
        return self.pos

    cdef void c_reset_batch(self) noexcept:
        cdef int i
        for i in range(BUF_COUNT):
            self.buffers[i].length = 0
        self.rows = 0
        self.entries = 0
        self.values = 0

    def next_batch(self, size_t max_rows):
        """(rows, buffers) for up to max_rows more rows, buffers a tuple of bytes in
        BufferSlot order; None once the block has no more rows."""
        cdef RecordView view
        cdef const uint8_t* record
        cdef uint64_t seq
        cdef int i
        if self.finished:
            return None
        self.c_reset_batch()
        for i in (BUF_SUBJECT_OFFSETS, BUF_DATA_OFFSETS, BUF_MAP_OFFSETS, BUF_KEY_OFFSETS,
                  BUF_LIST_OFFSETS, BUF_VALUE_OFFSETS):
            _append_i32(&self.buffers[i], 0)
        while self.rows < max_rows:
            if self.pos >= self.size:
                self.finished = True
                break
            record = self.buf + self.pos
            if (record_parse(record, self.size - self.pos, &view) != 0
                    or (self.check_hash and not record_hash_ok(record, &view, self.hash_key))):
                if _all_zero(record, self.size - self.pos):
                    self.finished = True           # the zero-filled end of a block
                    break
                if self.c_skip_damage():
                    continue
                self.finished = True
                break
            if view.tombstone:
                self.pos += view.length
                self.records_walked += 1
                continue
            seq = view.seq
            if self.open_hole is not None:
                self.open_hole[2] = seq - 1
                self.open_hole = None
            if seq > self.seq_high:
                self.records_walked += 1
                self.passed_high = True
                self.finished = True
                break
            self.pos += view.length
            self.records_walked += 1
            if seq > self.last_seq:
                self.last_seq = seq
            if view.erased or seq < self.seq_low:
                continue
            while self.deleted_pos < self.deleted_len and self.deleted[self.deleted_pos] < seq:
                self.deleted_pos += 1
            if self.deleted_pos < self.deleted_len and self.deleted[self.deleted_pos] == seq:
                continue
            self.accounted += 1
            if view.ts < self.time_low or view.ts > self.time_high:
                continue
            if not self.predicate.match_all and not self.predicate.c_accept(
                    record + view.subj_off, view.subj_len):
                continue
            self.c_row(record, seq, view.ts, view.subj_off, view.subj_len, view.has_hdr,
                       view.hdr_off, view.hdr_len, view.msg_off, view.msg_len)
        if self.rows == 0 and self.finished:
            return None
        self.rows_emitted += self.rows
        out = []
        for i in range(BUF_COUNT):
            out.append(_hand_over(&self.buffers[i]) if self.buffers[i].length else b"")
        return self.rows, tuple(out)

    cdef bint c_skip_damage(self) except -1:
        """Note the damaged stretch at `pos` and move to the next intact record (only when
        hashes are checked: without them garbage can pass for records); False at the end."""
        cdef size_t found = self.size
        self.damaged = True
        if self.check_hash:
            found = _resync(self.buf, self.size, self.pos + 1, self.hash_key, self.last_seq)
        if self.open_hole is None:
            self.open_hole = [self.pos, self.last_seq + 1, 0]
            self.holes.append(self.open_hole)
        self.pos = found
        return found < self.size

    cdef int c_row(self, const uint8_t* record, uint64_t seq, int64_t ts, uint32_t subj_off,
                   uint32_t subj_len, bint has_hdr, uint32_t hdr_off, uint32_t hdr_len,
                   uint32_t msg_off, uint32_t msg_len) except -1:
        cdef int columns = self.columns
        cdef GrowBuffer* b
        cdef int64_t micros
        if columns & COLUMN_SEQ:
            _append_i64(&self.buffers[BUF_SEQ], <int64_t>seq)
        if columns & COLUMN_TIME:
            micros = ts // 1000
            if ts < 0 and micros * 1000 != ts:
                micros -= 1
            _append_i64(&self.buffers[BUF_TIME], micros)
        if columns & COLUMN_TIME_NS:
            _append_i64(&self.buffers[BUF_TIME_NS], ts)
        if columns & COLUMN_SUBJECT:
            b = &self.buffers[BUF_SUBJECT_BYTES]
            _append(b, record + subj_off, subj_len)
            _append_i32(&self.buffers[BUF_SUBJECT_OFFSETS], <int32_t>b.length)
        if columns & COLUMN_DATA:
            b = &self.buffers[BUF_DATA_BYTES]
            _append(b, record + msg_off, msg_len)
            _append_i32(&self.buffers[BUF_DATA_OFFSETS], <int32_t>b.length)
        if columns & COLUMN_HEADERS:
            b = &self.buffers[BUF_HEADER_VALIDITY]
            if self.rows % 8 == 0:
                _reserve(b, 1)
                b.data[b.length] = 0
                b.length += 1
            if has_hdr:
                b.data[self.rows // 8] |= <uint8_t>(1 << (self.rows % 8))
                self.c_headers(record + hdr_off, hdr_len)
            _append_i32(&self.buffers[BUF_MAP_OFFSETS], <int32_t>self.entries)
        self.rows += 1
        return 0

    cdef int c_headers(self, const uint8_t* block, uint32_t length) except -1:
        """Append one message's header map: its lines grouped by key."""
        cdef uint32_t pos = 0, end, colon, a, z
        cdef size_t n = 0, i, j
        cdef HeaderLine* line
        cdef GrowBuffer* keys = &self.buffers[BUF_KEY_BYTES]
        cdef GrowBuffer* vals = &self.buffers[BUF_VALUE_BYTES]
        # skip the version / status line
        while pos < length and block[pos] != 10:
            pos += 1
        pos += 1
        while pos < length and n < HEADER_LINES_MAX:
            end = pos
            while end < length and block[end] != 10:
                end += 1
            z = end
            if z > pos and block[z - 1] == 13:
                z -= 1
            colon = pos
            while colon < z and block[colon] != 58:
                colon += 1
            if colon < z and colon > pos:
                a = colon + 1
                while a < z and _blank(block[a]):
                    a += 1
                while z > a and _blank(block[z - 1]):
                    z -= 1
                line = &self.lines[n]
                line.key_off, line.key_len = pos, colon - pos
                line.value_off, line.value_len = a, z - a
                line.taken = False
                n += 1
            pos = end + 1
        for i in range(n):
            if self.lines[i].taken:
                continue
            _append(keys, block + self.lines[i].key_off, self.lines[i].key_len)
            _append_i32(&self.buffers[BUF_KEY_OFFSETS], <int32_t>keys.length)
            for j in range(i, n):
                if self.lines[j].taken or self.lines[j].key_len != self.lines[i].key_len or memcmp(
                        block + self.lines[j].key_off, block + self.lines[i].key_off,
                        self.lines[i].key_len) != 0:
                    continue
                self.lines[j].taken = True
                _append(vals, block + self.lines[j].value_off, self.lines[j].value_len)
                _append_i32(&self.buffers[BUF_VALUE_OFFSETS], <int32_t>vals.length)
                self.values += 1
            self.entries += 1
            _append_i32(&self.buffers[BUF_LIST_OFFSETS], <int32_t>self.values)
        return 0


# -- planning metadata -------------------------------------------------------------------

def summarize_block(data, hash_key=None):
    """What a planner needs of a block index.db does not describe, from one walk over the
    record headers: a dict with msgs (live message records), first_seq / last_seq and
    first_ts / last_ts of those (0 when none), max_seq (highest sequence of any record,
    skips included), tombstones (the sequences they remove, ascending order of the walk),
    subjects (the distinct subjects, str) and holes: [offset, first, last] of every damaged
    stretch, as BlockColumns reports them (bytes that are not a record; with hash_key, the
    block's record key, a record whose hash is wrong too), the walk going on at the next
    intact record when hashes are checked."""
    cdef const uint8_t[::1] view = data
    cdef size_t size = view.shape[0]
    cdef const uint8_t* buf = &view[0] if size else NULL
    cdef size_t pos = 0
    cdef RecordView rec
    cdef uint64_t msgs = 0, first_seq = 0, last_seq = 0, max_seq = 0
    cdef int64_t first_ts = 0, last_ts = 0
    cdef SubjectIndex subjects = SubjectIndex()
    cdef list tombstones = []
    cdef list holes = []
    cdef list open_hole = None
    cdef uint64_t key[4]
    cdef bytes key_bytes
    cdef bint check = hash_key is not None
    if check:
        key_bytes = bytes(hash_key)
        if len(key_bytes) != 32:
            raise ValueError("hash_key must be 32 bytes")
        memcpy(key, <const char*>key_bytes, 32)
    while pos < size:
        if (record_parse(buf + pos, size - pos, &rec) != 0
                or (check and not record_hash_ok(buf + pos, &rec, key))):
            if _all_zero(buf + pos, size - pos):
                break
            if open_hole is None:
                open_hole = [pos, max_seq + 1, 0]
                holes.append(open_hole)
            pos = _resync(buf, size, pos + 1, key, max_seq) if check else size
            continue
        if rec.tombstone:
            tombstones.append(rec.seq)
        else:
            if open_hole is not None:
                open_hole[2] = rec.seq - 1
                open_hole = None
            if rec.seq > max_seq:
                max_seq = rec.seq
            if not rec.erased:
                if msgs == 0 or rec.seq < first_seq:
                    first_seq = rec.seq
                if rec.seq > last_seq:
                    last_seq = rec.seq
                if msgs == 0 or rec.ts < first_ts:
                    first_ts = rec.ts
                if msgs == 0 or rec.ts > last_ts:
                    last_ts = rec.ts
                msgs += 1
                if rec.subj_len:
                    subjects.c_intern(<const char*>(buf + pos + rec.subj_off), rec.subj_len)
        pos += rec.length
    return {"msgs": msgs, "first_seq": first_seq, "last_seq": last_seq, "first_ts": first_ts,
            "last_ts": last_ts, "max_seq": max_seq, "tombstones": tombstones,
            "subjects": [subject for subject, _sid in subjects.items()], "walked_bytes": pos,
            "holes": holes}
