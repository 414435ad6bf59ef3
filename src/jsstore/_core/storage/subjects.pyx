# Subject interning (SubjectIndex), per-block subject tables (BlockSubjects) and the
# subject rules exposed to Python.  Field meanings are in subjects.pxd.
#
# SubjectIndex invariants:
#   - an entry is in use iff its off != SUBJ_FREE (empty subjects are never interned);
#   - every entry in use is referenced by exactly one slot (value id + 1), reached by
#     linear probing from xxh64(subject) & slot_mask;
#   - slot_used (live + tombstone slots) stays <= 3/4 of the slot count, so every
#     probe sequence ends at an empty slot;
#   - arena_len - arena_garbage is the sum of the record lengths of the entries in use;
#   - a parent's total is the number of entries in use whose record names it;
#   - a field is SUBJ_WIDE iff `wide` holds its value.
#
# A record (at entries[sid].off) is a header and the subject's bytes after its parent:
#   h < 0x7F          no parent, h bytes follow
#   h == 0x7F         no parent, uvarint length, that many bytes
#   0x80 <= h < 0xF0  parent id (h >> 4) & 7 (0..6), (h & 15) bytes (0..14): the last token
#   h == 0xFF         uvarint parent id, uvarint length, that many bytes
# The subject is then the parent's bytes, ".", and the bytes of the record.
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memcmp, memset
from libc.stdint cimport uint64_t, uint32_t, uint16_t, uint8_t, int64_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8

cdef extern from "xxh64.h":
    uint64_t jss_xxh64(const void* data, size_t n, uint64_t seed) nogil

cdef extern from *:
    """
    #define JSS_SLOT_EMPTY 0u
    #define JSS_SLOT_TOMBSTONE 0xFFFFFFFFu
    #define JSS_NO_SID 0xFFFFFFFFu
    """
    const uint32_t SLOT_EMPTY "JSS_SLOT_EMPTY"
    const uint32_t SLOT_TOMBSTONE "JSS_SLOT_TOMBSTONE"
    const uint32_t NO_SID "JSS_NO_SID"

cdef enum:
    MIN_SLOTS = 16                # smallest hash slot array
    MIN_ENTRIES = 16              # smallest entry array
    MIN_ARENA = 256               # smallest arena, bytes
    MIN_BLOCK_SLOTS = 8           # smallest BlockSubjects table
    MAX_SUBJECT_LEN = 65535       # longest subject
    MAX_RECORD_HEADER = 9         # 0xFF, uvarint parent id (5), uvarint length (3)
    SEEN_SLOTS = 256              # parents seen once, by hash (direct mapped)
    NO_PARENT = 0xFFFFFFFF

cdef uint64_t HASH_SEED = 0
cdef uint64_t ARENA_LIMIT = 0xFFFFFFFF   # offsets are uint32 and below SUBJ_FREE
cdef uint32_t MAX_ENTRIES = 0xFFFFFFFE   # slot value id + 1 must differ from the tombstone
cdef uint64_t REBASE_HEADROOM = 0x80000000   # a base move leaves this many sequences above the newest


cdef inline uint64_t _hash(const char* subj, Py_ssize_t n) noexcept nogil:
    return jss_xxh64(subj, <size_t>n, HASH_SEED)


cdef bytes _subject_bytes(object subject):
    if isinstance(subject, bytes):
        return <bytes>subject
    if isinstance(subject, str):
        return (<str>subject).encode("utf-8", "surrogateescape")
    return bytes(subject)


cdef Py_ssize_t _literal_prefix_len(const char* flt, Py_ssize_t n) noexcept nogil:
    # Length of the filter before its first wildcard token (it ends with '.' or is 0).
    cdef Py_ssize_t i
    cdef char c
    for i in range(n):
        c = flt[i]
        if (c == b'*' or c == b'>') and (i == 0 or flt[i - 1] == b'.') and (i + 1 == n or flt[i + 1] == b'.'):
            return i
    return n


# ---- records ----

cdef inline Py_ssize_t _put_uvarint(uint8_t* out, uint64_t v) noexcept nogil:
    cdef Py_ssize_t i = 0
    while v >= 0x80:
        out[i] = <uint8_t>(v | 0x80)
        v >>= 7
        i += 1
    out[i] = <uint8_t>v
    return i + 1

cdef inline Py_ssize_t _get_uvarint(const uint8_t* r, uint64_t* out) noexcept nogil:
    # (records are written by _put_record only: no bounds to check)
    cdef uint64_t v = 0
    cdef unsigned shift = 0
    cdef Py_ssize_t i = 0
    while r[i] >= 0x80:
        v |= <uint64_t>(r[i] & 0x7F) << shift
        shift += 7
        i += 1
    out[0] = v | (<uint64_t>r[i] << shift)
    return i + 1

cdef inline Py_ssize_t _put_record(uint8_t* out, uint32_t parent, const char* tail, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t h
    if parent == NO_PARENT:
        if n < 0x7F:
            out[0] = <uint8_t>n
            h = 1
        else:
            out[0] = 0x7F
            h = 1 + _put_uvarint(out + 1, <uint64_t>n)
    elif parent < 7 and n < 15:
        out[0] = <uint8_t>(0x80 | (parent << 4) | n)
        h = 1
    else:
        out[0] = 0xFF
        h = 1 + _put_uvarint(out + 1, parent)
        h += _put_uvarint(out + h, <uint64_t>n)
    memcpy(out + h, tail, n)
    return h + n

cdef inline Py_ssize_t _record_header(const uint8_t* r, uint32_t* parent, Py_ssize_t* n) noexcept nogil:
    # Header length; the parent id (NO_PARENT) and the byte count that follows.
    cdef uint8_t h = r[0]
    cdef uint64_t v, w
    cdef Py_ssize_t k
    if h < 0x7F:
        parent[0] = NO_PARENT
        n[0] = h
        return 1
    if h == 0x7F:
        parent[0] = NO_PARENT
        k = 1 + _get_uvarint(r + 1, &v)
        n[0] = <Py_ssize_t>v
        return k
    if h != 0xFF:
        parent[0] = (h >> 4) & 7
        n[0] = h & 15
        return 1
    k = 1 + _get_uvarint(r + 1, &v)
    k += _get_uvarint(r + k, &w)
    parent[0] = <uint32_t>v
    n[0] = <Py_ssize_t>w
    return k

cdef inline Py_ssize_t _record_len(const uint8_t* r) noexcept nogil:
    cdef uint32_t parent
    cdef Py_ssize_t n
    cdef Py_ssize_t h = _record_header(r, &parent, &n)
    return h + n

cdef inline const uint8_t* _plain_bytes(SubjectIndex index, uint32_t sid, Py_ssize_t* n) noexcept nogil:
    # The bytes of a record without a parent (the parents' index has only such records).
    cdef uint32_t parent
    cdef const uint8_t* r = index.arena + index.entries[sid].off
    return r + _record_header(r, &parent, n)


# ---- SubjectIndex internals (module functions: a .pxd'd class cannot add C methods) ----

cdef inline bint _entry_is(SubjectIndex index, uint32_t sid, const char* subj, Py_ssize_t n) noexcept:
    cdef uint32_t parent
    cdef Py_ssize_t tn, pn
    cdef const uint8_t* r = index.arena + index.entries[sid].off
    cdef Py_ssize_t h = _record_header(r, &parent, &tn)
    cdef const uint8_t* p
    if parent == NO_PARENT:
        return tn == n and memcmp(r + h, subj, n) == 0
    p = _plain_bytes(index.parents, parent, &pn)
    return (pn + 1 + tn == n and subj[pn] == b'.' and memcmp(r + h, subj + pn + 1, tn) == 0
            and memcmp(p, subj, pn) == 0)

cdef int64_t _find_hashed(SubjectIndex index, const char* subj, Py_ssize_t n, uint64_t h) noexcept:
    cdef uint32_t mask = index.slot_mask
    cdef uint32_t i = <uint32_t>h & mask
    cdef uint32_t s
    while True:
        s = index.slots[i]
        if s == SLOT_EMPTY:
            return -1
        if s != SLOT_TOMBSTONE and _entry_is(index, s - 1, subj, n):
            return s - 1
        i = (i + 1) & mask

cdef int _reserve_entry(SubjectIndex index) except -1:
    if index.n_entries < index.cap_entries:
        return 0
    if index.n_entries >= MAX_ENTRIES:
        raise OverflowError("too many distinct subjects")
    cdef uint64_t cap = <uint64_t>index.cap_entries * 2 if index.cap_entries else MIN_ENTRIES
    if cap > MAX_ENTRIES:
        cap = MAX_ENTRIES
    cdef SubjEntry* grown = <SubjEntry*>realloc(index.entries, cap * sizeof(SubjEntry))
    if grown == NULL:
        raise MemoryError()
    index.entries = grown
    index.cap_entries = <uint32_t>cap
    return 0

cdef int _reserve_arena(SubjectIndex index, uint64_t n) except -1:
    if index.arena_len + n <= index.arena_cap:
        return 0
    if index.arena_garbage * 2 > index.arena_len and _compact_arena(index, n) == 0:
        return 0
    if index.arena_len + n > ARENA_LIMIT:
        if index.arena_garbage and _compact_arena(index, n) == 0 and index.arena_len + n <= ARENA_LIMIT:
            return 0
        raise OverflowError("subject arena is full")
    cdef uint64_t cap = index.arena_cap * 2 if index.arena_cap else MIN_ARENA
    while cap < index.arena_len + n:
        cap *= 2
    if cap > ARENA_LIMIT:
        cap = ARENA_LIMIT
    cdef uint8_t* grown = <uint8_t*>realloc(index.arena, cap)
    if grown == NULL:
        raise MemoryError()
    index.arena = grown
    index.arena_cap = cap
    return 0

cdef int _reserve_scratch(SubjectIndex index, Py_ssize_t n) except -1:
    if n <= index.scratch_cap:
        return 0
    cdef Py_ssize_t cap = 64
    while cap < n:
        cap *= 2
    cdef char* grown = <char*>realloc(index.scratch, cap)
    if grown == NULL:
        raise MemoryError()
    index.scratch = grown
    index.scratch_cap = cap
    return 0

cdef int _compact_arena(SubjectIndex index, uint64_t extra) noexcept:
    # Copy the records in use into a fresh arena with room for `extra` more bytes.
    # Returns 0, or -1 (nothing changed) when memory is short.
    cdef uint64_t live_bytes = index.arena_len - index.arena_garbage
    cdef uint64_t cap = (live_bytes + extra) + (live_bytes + extra) // 2
    if cap < MIN_ARENA:
        cap = MIN_ARENA
    if cap > ARENA_LIMIT:
        cap = ARENA_LIMIT
    if live_bytes + extra > cap:
        return -1
    cdef uint8_t* fresh = <uint8_t*>malloc(cap)
    if fresh == NULL:
        return -1
    cdef uint64_t pos = 0
    cdef uint32_t sid
    cdef Py_ssize_t length
    cdef SubjEntry* e
    for sid in range(index.n_entries):
        e = &index.entries[sid]
        if e.off != SUBJ_FREE:
            length = _record_len(index.arena + e.off)
            memcpy(fresh + pos, index.arena + e.off, length)
            e.off = <uint32_t>pos
            pos += length
    free(index.arena)
    index.arena = fresh
    index.arena_cap = cap
    index.arena_len = pos
    index.arena_garbage = 0
    return 0

cdef inline uint64_t _entry_hash(SubjectIndex index, uint32_t sid) noexcept:
    cdef Py_ssize_t n = index.subject_copy(sid, index.scratch)
    return _hash(index.scratch, n)

cdef int _rehash(SubjectIndex index, uint64_t needed) except -1:
    # New slot array sized so `needed` live entries fill at most half; drops tombstones.
    cdef uint64_t size = MIN_SLOTS
    while size < needed * 2:
        size *= 2
    if size > (<uint64_t>1 << 32):
        raise OverflowError("subject hash table is full")
    cdef uint32_t* fresh = <uint32_t*>calloc(size, sizeof(uint32_t))
    if fresh == NULL:
        raise MemoryError()
    cdef uint32_t mask = <uint32_t>(size - 1)
    cdef uint32_t sid, i
    for sid in range(index.n_entries):
        if index.entries[sid].off != SUBJ_FREE:
            i = <uint32_t>_entry_hash(index, sid) & mask
            while fresh[i] != SLOT_EMPTY:
                i = (i + 1) & mask
            fresh[i] = sid + 1
    free(index.slots)
    index.slots = fresh
    index.slot_mask = mask
    index.slot_used = index.n_live
    return 0

cdef void _push_free_id(SubjectIndex index, uint32_t sid) noexcept:
    cdef uint32_t cap
    cdef uint32_t* grown
    if index.n_free == index.cap_free:
        cap = index.cap_free * 2 if index.cap_free else MIN_ENTRIES
        grown = <uint32_t*>realloc(index.free_ids, <size_t>cap * sizeof(uint32_t))
        if grown == NULL:
            return          # out of memory: the id is simply not reused
        index.free_ids = grown
        index.cap_free = cap
    index.free_ids[index.n_free] = sid
    index.n_free += 1

cdef void _reset(SubjectIndex index) noexcept:
    # Nothing is interned any more: start ids, slots and arena from scratch.
    memset(index.slots, 0, (<size_t>index.slot_mask + 1) * sizeof(uint32_t))
    index.slot_used = 0
    index.n_entries = 0
    index.n_free = 0
    index.arena_len = 0
    index.arena_garbage = 0
    index.n_full_wild = 0
    if index.wide:
        index.wide.clear()

cdef int _check_live(SubjectIndex index, object sid) except -1:
    if not (0 <= sid < index.n_entries) or index.entries[<uint32_t>sid].off == SUBJ_FREE:
        raise KeyError(sid)
    return 0

cdef uint32_t _parent_for(SubjectIndex index, const char* subj, Py_ssize_t n) except? 0xFFFFFFFE:
    # The parent id a new subject's record names (its reference taken), or NO_PARENT.
    # A parent is made the second time a subject under it is interned; the first one
    # stores all of its bytes.
    cdef Py_ssize_t d = n - 1
    while d > 0 and subj[d] != b'.':
        d -= 1
    if d <= 0:
        return NO_PARENT
    cdef uint64_t ph = _hash(subj, d)
    cdef int64_t pid = -1
    cdef SubjectIndex parents = index.parents
    if parents is not None and parents.n_live:
        pid = _find_hashed(parents, subj, d, ph)
    if pid < 0:
        if index.seen == NULL:
            index.seen = <uint64_t*>calloc(SEEN_SLOTS, sizeof(uint64_t))
            if index.seen == NULL:
                raise MemoryError()
        if index.seen[ph % SEEN_SLOTS] != ph:
            index.seen[ph % SEEN_SLOTS] = ph
            return NO_PARENT
        if parents is None:
            parents = SubjectIndex()
            parents.compress = False
            index.parents = parents
        pid = parents.c_intern(subj, d)
    parents.set_total(<uint32_t>pid, parents.total(<uint32_t>pid) + 1)
    return <uint32_t>pid

cdef void _drop_parent(SubjectIndex index, uint32_t pid) noexcept:
    cdef SubjectIndex parents = index.parents
    cdef uint64_t refs = parents.total(pid) - 1
    if refs == 0:
        parents.c_release(pid)
    else:
        parents.set_total(pid, refs)

cdef int _rebase(SubjectIndex index, uint64_t newest) except -1:
    # Move seq_base up so `newest` fits with REBASE_HEADROOM to spare, but not past the
    # lowest sequence any entry holds; what falls below the new base becomes WIDE.
    cdef uint64_t old = index.seq_base, lowest = newest, v, base
    cdef uint32_t sid
    cdef int field
    cdef uint32_t* slot
    for sid in range(index.n_entries):
        if index.entries[sid].off != SUBJ_FREE:
            v = index.first_seq(sid)
            if v < lowest:
                lowest = v
            v = index.last_seq(sid)
            if v < lowest:
                lowest = v
    base = newest - REBASE_HEADROOM if newest > REBASE_HEADROOM else 0
    if lowest > base:
        base = lowest
    if base <= old:
        return 0
    for sid in range(index.n_entries):
        if index.entries[sid].off == SUBJ_FREE:
            continue
        for field in range(1, 3):
            slot = &index.entries[sid].first if field == 1 else &index.entries[sid].last
            if slot[0] == SUBJ_WIDE:
                v = index.wide[(<uint64_t>sid << 2) | field]
            else:
                v = old + slot[0]
            if v >= base and v - base < SUBJ_WIDE:
                if slot[0] == SUBJ_WIDE:
                    del index.wide[(<uint64_t>sid << 2) | field]
                slot[0] = <uint32_t>(v - base)
            else:
                if index.wide is None:
                    index.wide = {}
                index.wide[(<uint64_t>sid << 2) | field] = v
                slot[0] = SUBJ_WIDE
    index.seq_base = base
    return 0


cdef class SubjectIndex:
    """Stream-wide subject table: subject bytes <-> dense uint32 id, plus per-subject state."""

    def __cinit__(self):
        self.slots = <uint32_t*>calloc(MIN_SLOTS, sizeof(uint32_t))
        if self.slots == NULL:
            raise MemoryError()
        self.slot_mask = MIN_SLOTS - 1
        self.compress = True

    def __dealloc__(self):
        free(self.slots)
        free(self.entries)
        free(self.free_ids)
        free(self.arena)
        free(self.seen)
        free(self.scratch)

    # ---- C API (see subjects.pxd) ----

    cdef int64_t c_find(self, const char* subj, Py_ssize_t n) noexcept:
        if n <= 0 or n > MAX_SUBJECT_LEN:
            return -1
        return _find_hashed(self, subj, n, _hash(subj, n))

    cdef int64_t c_intern(self, const char* subj, Py_ssize_t n) except -2:
        if n <= 0 or n > MAX_SUBJECT_LEN:
            raise ValueError(f"subject length {n} is outside 1..{MAX_SUBJECT_LEN}")
        cdef uint64_t h = _hash(subj, n)
        cdef int64_t found = _find_hashed(self, subj, n, h)
        if found >= 0:
            return found
        # Reserve everything that can fail before changing any state.
        if self.n_free == 0:
            _reserve_entry(self)
        _reserve_arena(self, <uint64_t>(n + MAX_RECORD_HEADER))
        _reserve_scratch(self, n)
        if (<uint64_t>self.slot_used + 1) * 4 > (<uint64_t>self.slot_mask + 1) * 3:
            _rehash(self, <uint64_t>self.n_live + 1)
        cdef uint32_t parent = _parent_for(self, subj, n) if self.compress else NO_PARENT
        cdef Py_ssize_t skip = 0
        if parent != NO_PARENT:         # the record holds what follows the last "."
            skip = n - 1
            while subj[skip] != b'.':
                skip -= 1
            skip += 1
        cdef uint32_t sid
        if self.n_free > 0:
            self.n_free -= 1
            sid = self.free_ids[self.n_free]
        else:
            sid = self.n_entries
            self.n_entries += 1
        cdef SubjEntry* e = &self.entries[sid]
        e.total = 0
        e.first = 0
        e.last = 0
        e.off = <uint32_t>self.arena_len
        self.arena_len += <uint64_t>_put_record(self.arena + self.arena_len, parent, subj + skip, n - skip)
        cdef uint32_t i = <uint32_t>h & self.slot_mask
        while self.slots[i] != SLOT_EMPTY and self.slots[i] != SLOT_TOMBSTONE:
            i = (i + 1) & self.slot_mask
        if self.slots[i] == SLOT_EMPTY:
            self.slot_used += 1
        self.slots[i] = sid + 1
        self.n_live += 1
        if subject_has_full_wildcard(subj, <size_t>n):
            self.n_full_wild += 1
        if self.seq_base:                 # a new entry's first/last are 0, below the base
            self.c_wide_set(sid, 1, 0)
            self.c_wide_set(sid, 2, 0)
        return sid

    cdef void c_release(self, uint32_t sid) noexcept:
        if sid >= self.n_entries or self.entries[sid].off == SUBJ_FREE:
            return
        cdef SubjEntry* e = &self.entries[sid]
        cdef Py_ssize_t n = self.subject_copy(sid, self.scratch)
        cdef uint32_t mask = self.slot_mask
        cdef uint32_t i = <uint32_t>_hash(self.scratch, n) & mask
        cdef uint32_t parent
        cdef Py_ssize_t tail
        cdef Py_ssize_t length = _record_header(self.arena + e.off, &parent, &tail)
        cdef int k
        length += tail
        if subject_has_full_wildcard(self.scratch, <size_t>n):
            self.n_full_wild -= 1
        while self.slots[i] != sid + 1:
            i = (i + 1) & mask
        if self.slots[(i + 1) & mask] == SLOT_EMPTY:
            # End of a probe chain: this slot and the tombstones before it become empty.
            while self.slots[i] == sid + 1 or self.slots[i] == SLOT_TOMBSTONE:
                self.slots[i] = SLOT_EMPTY
                self.slot_used -= 1
                i = (i - 1) & mask
        else:
            self.slots[i] = SLOT_TOMBSTONE
        if <uint64_t>e.off + length == self.arena_len:
            self.arena_len -= length            # last record written: reclaim at once
        else:
            self.arena_garbage += length
        if parent != NO_PARENT:
            _drop_parent(self, parent)
        if self.wide and (e.total == SUBJ_WIDE or e.first == SUBJ_WIDE or e.last == SUBJ_WIDE):
            for k in range(3):
                self.wide.pop((<uint64_t>sid << 2) | k, None)
        e.off = SUBJ_FREE
        e.total = 0
        self.n_live -= 1
        if self.n_live == 0:
            _reset(self)
            return
        _push_free_id(self, sid)
        if self.arena_garbage * 2 > self.arena_len:
            _compact_arena(self, 0)

    cdef Py_ssize_t subject_len(self, uint32_t sid) noexcept:
        cdef uint32_t parent
        cdef Py_ssize_t n, pn
        _record_header(self.arena + self.entries[sid].off, &parent, &n)
        if parent != NO_PARENT:
            _plain_bytes(self.parents, parent, &pn)
            n += pn + 1
        return n

    cdef Py_ssize_t subject_copy(self, uint32_t sid, char* out) noexcept:
        cdef uint32_t parent
        cdef Py_ssize_t n, pn = 0
        cdef const uint8_t* r = self.arena + self.entries[sid].off
        cdef Py_ssize_t h = _record_header(r, &parent, &n)
        cdef const uint8_t* p
        if parent != NO_PARENT:
            p = _plain_bytes(self.parents, parent, &pn)
            memcpy(out, p, pn)
            out[pn] = b'.'
            pn += 1
        memcpy(out + pn, r + h, n)
        return pn + n

    cdef object subject_str(self, uint32_t sid):
        cdef Py_ssize_t n = self.subject_copy(sid, self.scratch)
        return PyUnicode_DecodeUTF8(self.scratch, n, "surrogateescape")

    cdef uint64_t c_wide_get(self, uint32_t sid, int field) noexcept:
        if self.wide is None:
            return 0
        return self.wide.get((<uint64_t>sid << 2) | field, 0)

    cdef int c_wide_set(self, uint32_t sid, int field, uint64_t value) except -1:
        cdef uint32_t* slot
        cdef uint64_t key = (<uint64_t>sid << 2) | field
        cdef uint32_t narrow
        if field == 0:
            slot = &self.entries[sid].total
            narrow = <uint32_t>value if value < SUBJ_WIDE else SUBJ_WIDE
        else:
            slot = &self.entries[sid].first if field == 1 else &self.entries[sid].last
            if value >= self.seq_base and value - self.seq_base >= SUBJ_WIDE:
                _rebase(self, value)
            if value >= self.seq_base and value - self.seq_base < SUBJ_WIDE:
                narrow = <uint32_t>(value - self.seq_base)
            else:
                narrow = SUBJ_WIDE
        if narrow != SUBJ_WIDE:
            if slot[0] == SUBJ_WIDE:
                del self.wide[key]
            slot[0] = narrow
        else:
            if self.wide is None:
                self.wide = {}
            self.wide[key] = value
            slot[0] = SUBJ_WIDE
        return 0

    cdef uint64_t c_note_store_wide(self, uint32_t sid, uint64_t seq) except 0:
        cdef uint64_t total = self.total(sid) + 1
        if total == 1:
            self.set_first(sid, seq)
        self.set_total(sid, total)
        self.set_last(sid, seq)
        return total

    cdef Py_ssize_t c_match(self, const char* flt, Py_ssize_t n, uint32_t** out, bint subset) except -1:
        cdef bint literal = n > 0 and not (n == 1 and flt[0] == b'>') and subject_is_literal(flt, <size_t>n)
        cdef uint64_t cap = self.n_live if self.n_live > 0 and not literal else 1
        cdef uint32_t* ids = <uint32_t*>malloc(cap * sizeof(uint32_t))
        if ids == NULL:
            raise MemoryError()
        cdef Py_ssize_t count = 0, prefix_len, length
        cdef int64_t found
        cdef uint32_t sid, n_entries = self.n_entries
        cdef SubjEntry* entries = self.entries
        cdef char* buf = self.scratch
        if n == 0 or (n == 1 and flt[0] == b'>'):
            for sid in range(n_entries):
                if entries[sid].off != SUBJ_FREE:
                    ids[count] = sid
                    count += 1
        elif literal:                    # (at most one id: the array has room for one)
            found = self.c_find(flt, n)
            if found >= 0:
                ids[0] = <uint32_t>found
                count = 1
        elif n_entries:
            # Reject on the literal prefix (memcmp) before the token-wise match.
            prefix_len = _literal_prefix_len(flt, n)
            subset = subset and self.n_full_wild > 0    # otherwise the two tests agree
            for sid in range(n_entries):
                if entries[sid].off == SUBJ_FREE:
                    continue
                length = self.subject_copy(sid, buf)
                if length <= prefix_len:
                    continue
                if prefix_len and memcmp(buf, flt, prefix_len) != 0:
                    continue
                if subject_matches(buf + prefix_len, length - prefix_len,
                                   flt + prefix_len, <size_t>(n - prefix_len)) and (
                        not subset or subject_is_subset_match(
                            buf + prefix_len, length - prefix_len,
                            flt + prefix_len, <size_t>(n - prefix_len))):
                    ids[count] = sid
                    count += 1
        out[0] = ids
        return count

    # ---- Python API ----

    def intern(self, subject):
        """Id of `subject` (str or bytes), adding it with zeroed state if new."""
        cdef bytes b = _subject_bytes(subject)
        return self.c_intern(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))

    def find(self, subject):
        """Id of `subject`, or None."""
        cdef bytes b = _subject_bytes(subject)
        cdef int64_t sid = self.c_find(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))
        return None if sid < 0 else sid

    def release(self, sid):
        """Forget subject `sid`; its id may be handed out again. KeyError if not in use."""
        _check_live(self, sid)
        self.c_release(<uint32_t>sid)

    def subject(self, sid):
        _check_live(self, sid)
        return self.subject_str(<uint32_t>sid)

    def get(self, sid):
        """(total, first_seq, last_seq) of subject `sid`."""
        _check_live(self, sid)
        return (self.total(sid), self.first_seq(sid), self.last_seq(sid))

    def set(self, sid, uint64_t total, uint64_t first_seq, uint64_t last_seq):
        _check_live(self, sid)
        self.set_total(sid, total)
        self.set_first(sid, first_seq)
        self.set_last(sid, last_seq)

    def match(self, filter, bint subset=False):
        """Ids (ascending) of the subjects matching `filter`; "" and ">" match all.  With
        `subset`, a stored ">" token is taken by a ">" of the filter only."""
        cdef bytes b = _subject_bytes(filter)
        cdef uint32_t* ids = NULL
        cdef Py_ssize_t count = self.c_match(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), &ids,
                                             subset)
        try:
            return [ids[k] for k in range(count)]
        finally:
            free(ids)

    def items(self):
        """[(subject, id)] for every interned subject, by ascending id."""
        cdef uint32_t sid
        return [(self.subject_str(sid), sid) for sid in range(self.n_entries) if self.in_use(sid)]

    def __len__(self):
        return self.n_live

    def stats(self):
        """Sizes of the internal arrays (for tests and memory reports)."""
        return {
            "live": self.n_live, "ids": self.n_entries, "free_ids": self.n_free,
            "slots": self.slot_mask + 1, "slot_used": self.slot_used,
            "entry_capacity": self.cap_entries, "arena_len": self.arena_len,
            "arena_capacity": self.arena_cap, "arena_garbage": self.arena_garbage,
            "full_wild": self.n_full_wild, "seq_base": self.seq_base,
            "wide": len(self.wide) if self.wide else 0,
            "parents": len(self.parents) if self.parents is not None else 0,
            "parents_arena_len": self.parents.arena_len if self.parents is not None else 0,
        }

    def verify(self):
        """Check the invariants listed at the top of this file; AssertionError if broken."""
        cdef uint32_t sid, i, live = 0, used = 0, full_wild = 0, parent
        cdef uint64_t live_bytes = 0
        cdef Py_ssize_t n, length
        cdef int field
        cdef uint32_t* fields
        refs = {}
        for sid in range(self.n_entries):
            if self.entries[sid].off == SUBJ_FREE:
                continue
            live += 1
            n = self.subject_copy(sid, self.scratch)
            subject = PyBytes_FromStringAndSize(self.scratch, n)
            full_wild += subject_has_full_wildcard(self.scratch, n)
            length = _record_header(self.arena + self.entries[sid].off, &parent, &n)
            length += n
            live_bytes += length
            assert self.entries[sid].off + length <= self.arena_len, sid
            if parent != NO_PARENT:
                assert self.parents is not None and self.parents.in_use(parent), (sid, parent)
                refs[parent] = refs.get(parent, 0) + 1
            assert self.find(subject) == sid, sid
            fields = &self.entries[sid].total
            for field in range(3):
                assert (fields[field] == SUBJ_WIDE) == (self.wide is not None and
                                                        ((sid << 2) | field) in self.wide), (sid, field)
        for i in range(self.slot_mask + 1):
            if self.slots[i] != SLOT_EMPTY:
                used += 1
                if self.slots[i] != SLOT_TOMBSTONE:
                    assert self.entries[self.slots[i] - 1].off != SUBJ_FREE, i
        assert live == self.n_live, (live, self.n_live)
        assert full_wild == self.n_full_wild, (full_wild, self.n_full_wild)
        assert used == self.slot_used, (used, self.slot_used)
        assert used * 4 <= (self.slot_mask + 1) * 3, (used, self.slot_mask + 1)
        assert live_bytes == self.arena_len - self.arena_garbage, (live_bytes, self.arena_len, self.arena_garbage)
        assert live + self.n_free <= self.n_entries
        assert len(self.wide or ()) == sum(1 for sid in range(self.n_entries) if self.in_use(sid)
                                           for field in range(3)
                                           if (&self.entries[sid].total)[field] == SUBJ_WIDE)
        for i in range(self.n_free):
            assert self.entries[self.free_ids[i]].off == SUBJ_FREE, self.free_ids[i]
        if self.parents is not None:
            self.parents.verify()
            assert {sid: self.parents.total(sid) for sid in range(self.parents.n_entries)
                    if self.parents.in_use(sid)} == refs, "parent reference counts"
            assert self.parents.parents is None


cdef inline uint32_t _sid_home(uint32_t sid, uint32_t mask) noexcept nogil:
    return <uint32_t>((<uint64_t>sid * <uint64_t>0x9E3779B97F4A7C15) >> 32) & mask


cdef int _grow_block_subjects(BlockSubjects table) except -1:
    # Double the table (or create it) and re-insert every slot.
    cdef uint64_t size = (<uint64_t>table.mask + 1) * 2 if table.slots != NULL else MIN_BLOCK_SLOTS
    if size > (<uint64_t>1 << 31):
        raise OverflowError("block subject table is full")
    cdef BlockSubj* fresh = <BlockSubj*>malloc(size * sizeof(BlockSubj))
    if fresh == NULL:
        raise MemoryError()
    memset(fresh, 0xFF, size * sizeof(BlockSubj))     # sid = NO_SID everywhere
    cdef uint32_t new_mask = <uint32_t>(size - 1), k, i
    if table.slots != NULL:
        for k in range(table.mask + 1):
            if table.slots[k].sid != NO_SID:
                i = _sid_home(table.slots[k].sid, new_mask)
                while fresh[i].sid != NO_SID:
                    i = (i + 1) & new_mask
                fresh[i] = table.slots[k]
    free(table.slots)
    table.slots = fresh
    table.mask = new_mask
    return 0


cdef class BlockSubjects:
    """One block's subject table: subject id -> (count, first_seq, last_seq)."""

    def __dealloc__(self):
        free(self.slots)

    cdef BlockSubj* c_get(self, uint32_t sid) noexcept:
        if self.slots == NULL:
            return NULL
        cdef uint32_t i = _sid_home(sid, self.mask)
        while self.slots[i].sid != NO_SID:
            if self.slots[i].sid == sid:
                return &self.slots[i]
            i = (i + 1) & self.mask
        return NULL

    cdef BlockSubj* c_add(self, uint32_t sid, uint64_t seq) except NULL:
        if sid == NO_SID:
            raise ValueError("subject id out of range")
        cdef BlockSubj* slot = self.c_get(sid)
        if slot != NULL:
            if slot.count == 0:
                slot.first_seq = seq        # stale after removals: restart the range
                slot.last_seq = seq
                self.live += 1
            elif seq < slot.first_seq:
                slot.first_seq = seq
            elif seq > slot.last_seq:
                slot.last_seq = seq
            slot.count += 1
            return slot
        if self.slots == NULL or (<uint64_t>self.used + 1) * 4 > (<uint64_t>self.mask + 1) * 3:
            _grow_block_subjects(self)
        cdef uint32_t i = _sid_home(sid, self.mask)
        while self.slots[i].sid != NO_SID:
            i = (i + 1) & self.mask
        slot = &self.slots[i]
        slot.sid = sid
        slot.count = 1
        slot.first_seq = seq
        slot.last_seq = seq
        self.used += 1
        self.live += 1
        return slot

    cdef void c_clear(self) noexcept:
        free(self.slots)
        self.slots = NULL
        self.mask = 0
        self.used = 0
        self.live = 0

    def add(self, uint32_t sid, uint64_t seq):
        """Count one more message of subject `sid` at sequence `seq` in this block."""
        self.c_add(sid, seq)

    def get(self, uint32_t sid):
        """(count, first_seq, last_seq) of `sid` in this block, or None if it has none."""
        cdef BlockSubj* slot = self.c_get(sid)
        if slot == NULL or slot.count == 0:
            return None
        return (slot.count, slot.first_seq, slot.last_seq)

    def items(self):
        """[(sid, count, first_seq, last_seq)] of subjects with messages, by ascending sid."""
        if self.slots == NULL:
            return []
        return sorted((self.slots[k].sid, self.slots[k].count, self.slots[k].first_seq, self.slots[k].last_seq)
                      for k in range(self.mask + 1)
                      if self.slots[k].sid != NO_SID and self.slots[k].count)

    def __len__(self):
        return self.live

    def clear(self):
        self.c_clear()


# ---- subject rules (csrc/subject.c) ----

def is_valid_subject(subject, bint allow_wildcards=False):
    """True for a well-formed subject; wildcard tokens only with allow_wildcards."""
    cdef bytes b = _subject_bytes(subject)
    return bool(subject_is_valid(PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b), allow_wildcards))


def is_routable(subject):
    """True when a message can be published on `subject`: no empty token, no white space;
    `*` and `>` tokens anywhere (a publish on "kv.a.*" is routed to the subscriptions
    whose wildcards match those tokens, as nats-server does)."""
    cdef bytes b = _subject_bytes(subject)
    return bool(subject_is_routable(PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b)))


def is_literal(subject):
    """True when no token is exactly "*" or ">"."""
    cdef bytes b = _subject_bytes(subject)
    return bool(subject_is_literal(PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b)))


def _subject_matches(subject, filter):
    """True when the literal `subject` is matched by `filter` (empty never matches)."""
    cdef bytes s = _subject_bytes(subject)
    cdef bytes f = _subject_bytes(filter)
    return bool(subject_matches(PyBytes_AS_STRING(s), <size_t>PyBytes_GET_SIZE(s),
                                PyBytes_AS_STRING(f), <size_t>PyBytes_GET_SIZE(f)))


def filters_overlap(a, b):
    """True when some literal subject matches both filters."""
    cdef bytes x = _subject_bytes(a)
    cdef bytes y = _subject_bytes(b)
    return bool(subject_filters_overlap(PyBytes_AS_STRING(x), <size_t>PyBytes_GET_SIZE(x),
                                        PyBytes_AS_STRING(y), <size_t>PyBytes_GET_SIZE(y)))


def is_subset_match(subject, test):
    """True when every subject that `subject` matches is matched by `test` too (both may
    hold wildcards): nats-server's subjectIsSubsetMatch.  "foo.*" lies inside "foo.>",
    "*.*" and ">"; "foo" does not lie inside "foo.>", nor "foo.>" inside "foo.*"."""
    cdef bytes s = _subject_bytes(subject)
    cdef bytes t = _subject_bytes(test)
    return bool(subject_is_subset_match(PyBytes_AS_STRING(s), <size_t>PyBytes_GET_SIZE(s),
                                        PyBytes_AS_STRING(t), <size_t>PyBytes_GET_SIZE(t)))


# A `def subject_matches` would shadow the C function of the same name declared in
# subjects.pxd, so the Python function is published under that name here.
_subject_matches.__name__ = "subject_matches"
_subject_matches.__qualname__ = "subject_matches"
globals()["subject_matches"] = _subject_matches
