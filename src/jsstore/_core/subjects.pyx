# Subject interning (SubjectIndex), per-block subject tables (BlockSubjects) and the
# subject rules exposed to Python.  Field meanings are in subjects.pxd.
#
# SubjectIndex invariants:
#   - an entry is in use iff its length != 0 (empty subjects are never interned);
#   - every entry in use is referenced by exactly one slot (value id + 1), reached by
#     linear probing from xxh64(subject) & slot_mask;
#   - slot_used (live + tombstone slots) stays <= 3/4 of the slot count, so every
#     probe sequence ends at an empty slot;
#   - arena_len - arena_garbage is the sum of the lengths of the entries in use.
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memcmp, memset
from libc.stdint cimport uint64_t, uint32_t, uint16_t, int64_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
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
    MAX_SUBJECT_LEN = 65535       # entry length is a uint16

cdef uint64_t HASH_SEED = 0
cdef uint64_t ARENA_LIMIT = 0xFFFFFFFF   # offsets are uint32
cdef uint32_t MAX_ENTRIES = 0xFFFFFFFE   # slot value id + 1 must differ from the tombstone


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


# ---- SubjectIndex internals (module functions: a .pxd'd class cannot add C methods) ----

cdef int64_t _find_hashed(SubjectIndex index, const char* subj, Py_ssize_t n, uint64_t h) noexcept:
    cdef uint32_t mask = index.slot_mask
    cdef uint32_t i = <uint32_t>h & mask
    cdef uint32_t s
    cdef SubjEntry* e
    while True:
        s = index.slots[i]
        if s == SLOT_EMPTY:
            return -1
        if s != SLOT_TOMBSTONE:
            e = &index.entries[s - 1]
            if e.length == n and memcmp(index.arena + e.off, subj, n) == 0:
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
    cdef char* grown = <char*>realloc(index.arena, cap)
    if grown == NULL:
        raise MemoryError()
    index.arena = grown
    index.arena_cap = cap
    return 0

cdef int _compact_arena(SubjectIndex index, uint64_t extra) noexcept:
    # Copy the subjects in use into a fresh arena with room for `extra` more bytes.
    # Returns 0, or -1 (nothing changed) when memory is short.
    cdef uint64_t live_bytes = index.arena_len - index.arena_garbage
    cdef uint64_t cap = (live_bytes + extra) + (live_bytes + extra) // 2
    if cap < MIN_ARENA:
        cap = MIN_ARENA
    if cap > ARENA_LIMIT:
        cap = ARENA_LIMIT
    if live_bytes + extra > cap:
        return -1
    cdef char* fresh = <char*>malloc(cap)
    if fresh == NULL:
        return -1
    cdef uint64_t pos = 0
    cdef uint32_t sid
    cdef SubjEntry* e
    for sid in range(index.n_entries):
        e = &index.entries[sid]
        if e.length != 0:
            memcpy(fresh + pos, index.arena + e.off, e.length)
            e.off = <uint32_t>pos
            pos += e.length
    free(index.arena)
    index.arena = fresh
    index.arena_cap = cap
    index.arena_len = pos
    index.arena_garbage = 0
    return 0

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
    cdef SubjEntry* e
    for sid in range(index.n_entries):
        e = &index.entries[sid]
        if e.length != 0:
            i = <uint32_t>_hash(index.arena + e.off, e.length) & mask
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

cdef SubjEntry* _live_entry(SubjectIndex index, object sid) except NULL:
    if not (0 <= sid < index.n_entries) or index.entries[<uint32_t>sid].length == 0:
        raise KeyError(sid)
    return &index.entries[<uint32_t>sid]


cdef class SubjectIndex:
    """Stream-wide subject table: subject bytes <-> dense uint32 id, plus per-subject state."""

    def __cinit__(self):
        self.slots = <uint32_t*>calloc(MIN_SLOTS, sizeof(uint32_t))
        if self.slots == NULL:
            raise MemoryError()
        self.slot_mask = MIN_SLOTS - 1

    def __dealloc__(self):
        free(self.slots)
        free(self.entries)
        free(self.free_ids)
        free(self.arena)

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
        _reserve_arena(self, <uint64_t>n)
        if (<uint64_t>self.slot_used + 1) * 4 > (<uint64_t>self.slot_mask + 1) * 3:
            _rehash(self, <uint64_t>self.n_live + 1)
        cdef uint32_t sid
        if self.n_free > 0:
            self.n_free -= 1
            sid = self.free_ids[self.n_free]
        else:
            sid = self.n_entries
            self.n_entries += 1
        cdef SubjEntry* e = &self.entries[sid]
        memset(e, 0, sizeof(SubjEntry))
        e.off = <uint32_t>self.arena_len
        e.length = <uint16_t>n
        memcpy(self.arena + self.arena_len, subj, n)
        self.arena_len += <uint64_t>n
        cdef uint32_t i = <uint32_t>h & self.slot_mask
        while self.slots[i] != SLOT_EMPTY and self.slots[i] != SLOT_TOMBSTONE:
            i = (i + 1) & self.slot_mask
        if self.slots[i] == SLOT_EMPTY:
            self.slot_used += 1
        self.slots[i] = sid + 1
        self.n_live += 1
        if subject_has_full_wildcard(subj, <size_t>n):
            self.n_full_wild += 1
        return sid

    cdef void c_release(self, uint32_t sid) noexcept:
        if sid >= self.n_entries or self.entries[sid].length == 0:
            return
        cdef SubjEntry* e = &self.entries[sid]
        cdef uint32_t mask = self.slot_mask
        cdef uint32_t i = <uint32_t>_hash(self.arena + e.off, e.length) & mask
        if subject_has_full_wildcard(self.arena + e.off, e.length):
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
        if <uint64_t>e.off + e.length == self.arena_len:
            self.arena_len -= e.length           # last subject written: reclaim at once
        else:
            self.arena_garbage += e.length
        memset(e, 0, sizeof(SubjEntry))
        self.n_live -= 1
        if self.n_live == 0:
            _reset(self)
            return
        _push_free_id(self, sid)
        if self.arena_garbage * 2 > self.arena_len:
            _compact_arena(self, 0)

    cdef object subject_str(self, uint32_t sid):
        cdef SubjEntry* e = &self.entries[sid]
        return PyUnicode_DecodeUTF8(self.arena + e.off, e.length, "surrogateescape")

    cdef Py_ssize_t c_match(self, const char* flt, Py_ssize_t n, uint32_t** out, bint subset) except -1:
        cdef uint64_t cap = self.n_live if self.n_live > 0 else 1
        cdef uint32_t* ids = <uint32_t*>malloc(cap * sizeof(uint32_t))
        if ids == NULL:
            raise MemoryError()
        cdef Py_ssize_t count = 0, prefix_len
        cdef int64_t found
        cdef uint32_t sid, n_entries = self.n_entries
        cdef SubjEntry* entries = self.entries
        cdef const char* arena = self.arena
        cdef const SubjEntry* e
        if n == 0 or (n == 1 and flt[0] == b'>'):
            for sid in range(n_entries):
                if entries[sid].length != 0:
                    ids[count] = sid
                    count += 1
        elif subject_is_literal(flt, <size_t>n):
            found = self.c_find(flt, n)
            if found >= 0:
                ids[0] = <uint32_t>found
                count = 1
        else:
            # Reject on the literal prefix (memcmp) before the token-wise match.
            prefix_len = _literal_prefix_len(flt, n)
            subset = subset and self.n_full_wild > 0    # otherwise the two tests agree
            with nogil:
                for sid in range(n_entries):
                    e = &entries[sid]
                    if e.length <= prefix_len:
                        continue
                    if prefix_len and memcmp(arena + e.off, flt, prefix_len) != 0:
                        continue
                    if subject_matches(arena + e.off + prefix_len, e.length - prefix_len,
                                       flt + prefix_len, <size_t>(n - prefix_len)) and (
                            not subset or subject_is_subset_match(
                                arena + e.off + prefix_len, e.length - prefix_len,
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
        _live_entry(self, sid)
        self.c_release(<uint32_t>sid)

    def subject(self, sid):
        _live_entry(self, sid)
        return self.subject_str(<uint32_t>sid)

    def get(self, sid):
        """(total, first_seq, last_seq) of subject `sid`."""
        cdef SubjEntry* e = _live_entry(self, sid)
        return (e.total, e.first_seq, e.last_seq)

    def set(self, sid, uint64_t total, uint64_t first_seq, uint64_t last_seq):
        cdef SubjEntry* e = _live_entry(self, sid)
        e.total = total
        e.first_seq = first_seq
        e.last_seq = last_seq

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
        return [(self.subject_str(sid), sid) for sid in range(self.n_entries) if self.entries[sid].length]

    def __len__(self):
        return self.n_live

    def stats(self):
        """Sizes of the internal arrays (for tests and memory reports)."""
        return {
            "live": self.n_live, "ids": self.n_entries, "free_ids": self.n_free,
            "slots": self.slot_mask + 1, "slot_used": self.slot_used,
            "entry_capacity": self.cap_entries, "arena_len": self.arena_len,
            "arena_capacity": self.arena_cap, "arena_garbage": self.arena_garbage,
            "full_wild": self.n_full_wild,
        }

    def verify(self):
        """Check the invariants listed at the top of this file; AssertionError if broken."""
        cdef uint32_t sid, i, live = 0, used = 0, full_wild = 0
        cdef uint64_t live_bytes = 0
        for sid in range(self.n_entries):
            if self.entries[sid].length:
                live += 1
                full_wild += subject_has_full_wildcard(self.arena + self.entries[sid].off,
                                                       self.entries[sid].length)
                live_bytes += self.entries[sid].length
                assert self.entries[sid].off + self.entries[sid].length <= self.arena_len, sid
                assert self.find(self.arena[self.entries[sid].off:self.entries[sid].off + self.entries[sid].length]) == sid, sid
        for i in range(self.slot_mask + 1):
            if self.slots[i] != SLOT_EMPTY:
                used += 1
                if self.slots[i] != SLOT_TOMBSTONE:
                    assert self.entries[self.slots[i] - 1].length != 0, i
        assert live == self.n_live, (live, self.n_live)
        assert full_wild == self.n_full_wild, (full_wild, self.n_full_wild)
        assert used == self.slot_used, (used, self.slot_used)
        assert used * 4 <= (self.slot_mask + 1) * 3, (used, self.slot_mask + 1)
        assert live_bytes == self.arena_len - self.arena_garbage, (live_bytes, self.arena_len, self.arena_garbage)
        assert live + self.n_free <= self.n_entries
        for i in range(self.n_free):
            assert self.entries[self.free_ids[i]].length == 0, self.free_ids[i]


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
