# Subject interning and per-subject state.
#
# SubjectIndex is the stream-wide table (nats-server's psim): one entry per distinct
# subject currently in the stream, keyed by the subject bytes (xxh64 hashed, open
# addressing over a uint32 slot array), holding its message count and first/last
# sequence.  Entries are dense in an array of 16 bytes each and named by a uint32 id,
# which is stable while the subject has messages; an id is reused only after its
# subject left the stream.  No Python object exists per subject.
#
# Memory per subject: the 16-byte entry, ~4-8 bytes of slots and the subject's record in
# the arena.  A record is a header byte (and varints for large values) and the subject's
# bytes; a subject whose parent (the part before its last ".") is shared with other
# subjects stores only its last token and the id of that parent, kept once in a second
# SubjectIndex (`parents`, reference counted through its totals).  "orders.1234567"
# takes 8 bytes of arena, not 15.
#
# Sequences are kept as 32-bit offsets from `seq_base`, counts as 32-bit numbers; a value
# that does not fit (a count of 2^32 - 1 or more, a sequence outside base..base+2^32-2)
# is marked WIDE in the entry and kept in the `wide` dict.  The base moves up (one pass
# over the entries) when new sequences outgrow it, so a stream only falls back to the
# dict for subjects whose messages stay 2^31 sequences behind the newest ones.  Read and
# write them with the accessors below only.
#
# BlockSubjects is one block's table (nats-server's fss): subject id -> count and
# first/last sequence inside that block.  It is built lazily and can be dropped.
from libc.stdint cimport uint64_t, uint32_t, uint16_t, uint8_t, int64_t

cdef extern from *:
    """
    #define JSS_SUBJ_WIDE 0xFFFFFFFFu
    #define JSS_SUBJ_FREE 0xFFFFFFFFu
    """
    const uint32_t SUBJ_WIDE "JSS_SUBJ_WIDE"     # field value: the real one is in `wide`
    const uint32_t SUBJ_FREE "JSS_SUBJ_FREE"     # entry off: the entry is not in use

cdef struct SubjEntry:
    uint32_t total                # messages with this subject in the stream (WIDE: see `wide`)
    uint32_t first                # first_seq - seq_base (WIDE: see `wide`)
    uint32_t last                 # last_seq - seq_base (WIDE: see `wide`)
    uint32_t off                  # offset of the subject's record in the arena (FREE = unused)
    # first_seq / last_seq are bounds: exact when set by a store, then moved past a removed
    # sequence (first up, last down) and made exact again lazily by the engine.  The
    # blocks holding them (nats-server's psi.fblk / lblk) follow from a block lookup.

cdef class SubjectIndex:
    cdef uint32_t* slots          # hash slots: 0 = empty, 0xFFFFFFFF = tombstone, else id + 1
    cdef uint32_t slot_mask       # slot count - 1 (power of two)
    cdef uint32_t slot_used       # non-empty slots (live + tombstones), drives growth
    cdef SubjEntry* entries       # dense entry array, indexed by id
    cdef uint32_t n_entries       # high-water mark of ids handed out
    cdef uint32_t cap_entries     # allocated entries
    cdef uint32_t n_live          # entries in use (interned and not released)
    cdef uint32_t* free_ids       # stack of released ids for reuse
    cdef uint32_t n_free, cap_free
    cdef uint8_t* arena           # subject records, back to back
    cdef uint64_t arena_len, arena_cap, arena_garbage   # garbage = bytes of released records
    cdef uint32_t n_full_wild     # entries in use whose subject has a ">" token (published as
                                  # such): the only ones a subset match tells apart (c_match)
    cdef uint64_t seq_base        # first/last are offsets from this
    cdef dict wide                # (sid << 2 | field) -> value of a field marked WIDE
    cdef bint compress            # store shared parents once (off for the parents' own index)
    cdef SubjectIndex parents     # parent subjects (the part before the last "."), or None
    cdef uint64_t* seen           # hashes of parents seen once (a parent is made on the second)
    cdef char* scratch            # room for the longest subject interned (subject_copy)
    cdef Py_ssize_t scratch_cap

    cdef int64_t c_find(self, const char* subj, Py_ssize_t n) noexcept   # id, or -1
    cdef int64_t c_intern(self, const char* subj, Py_ssize_t n) except -2 # id (new entries: total 0, first/last 0)
    cdef void c_release(self, uint32_t sid) noexcept       # forget an entry whose total reached 0
    cdef Py_ssize_t subject_copy(self, uint32_t sid, char* out) noexcept
        # write the subject's bytes to out (room for its length); returns the length
    cdef Py_ssize_t subject_len(self, uint32_t sid) noexcept
    cdef object subject_str(self, uint32_t sid)            # the subject as a Python str
    cdef Py_ssize_t c_match(self, const char* flt, Py_ssize_t n, uint32_t** out, bint subset) except -1
        # ids of live subjects matching the filter (`*`/`>` wildcards; "" and ">" match all),
        # written to a malloc'ed array the caller frees; returns the count.  A stored "*" or
        # ">" token is a token like any other, taken by a wildcard of the filter; with
        # `subset`, a stored ">" token only by a ">" of the filter (nats-server's
        # subjectIsSubsetMatch, which some of its store paths test: see queries.pyx)

    # per-subject state of a live id (the slow paths handle WIDE values and base moves)
    cdef uint64_t c_wide_get(self, uint32_t sid, int field) noexcept
    cdef int c_wide_set(self, uint32_t sid, int field, uint64_t value) except -1
    cdef inline bint in_use(self, uint32_t sid) noexcept:
        return sid < self.n_entries and self.entries[sid].off != SUBJ_FREE
    cdef inline uint64_t total(self, uint32_t sid) noexcept:
        cdef uint32_t v = self.entries[sid].total
        return v if v != SUBJ_WIDE else self.c_wide_get(sid, 0)
    cdef inline uint64_t first_seq(self, uint32_t sid) noexcept:
        cdef uint32_t v = self.entries[sid].first
        return self.seq_base + v if v != SUBJ_WIDE else self.c_wide_get(sid, 1)
    cdef inline uint64_t last_seq(self, uint32_t sid) noexcept:
        cdef uint32_t v = self.entries[sid].last
        return self.seq_base + v if v != SUBJ_WIDE else self.c_wide_get(sid, 2)
    cdef uint64_t c_note_store_wide(self, uint32_t sid, uint64_t seq) except 0
    cdef inline uint64_t note_store(self, uint32_t sid, uint64_t seq) except 0:
        # One more message of `sid` at `seq` (the newest): total + 1, last = seq, first =
        # seq if it had none; returns the new total.
        cdef SubjEntry* e = &self.entries[sid]
        cdef uint64_t d = seq - self.seq_base
        if (e.total < SUBJ_WIDE - 1 and e.last != SUBJ_WIDE and e.first != SUBJ_WIDE
                and seq >= self.seq_base and d < SUBJ_WIDE):
            if e.total == 0:
                e.first = <uint32_t>d
            e.total += 1
            e.last = <uint32_t>d
            return e.total
        return self.c_note_store_wide(sid, seq)
    cdef inline int set_total(self, uint32_t sid, uint64_t v) except -1:
        if v < SUBJ_WIDE and self.entries[sid].total != SUBJ_WIDE:
            self.entries[sid].total = <uint32_t>v
            return 0
        return self.c_wide_set(sid, 0, v)
    cdef inline int set_first(self, uint32_t sid, uint64_t v) except -1:
        if v >= self.seq_base and v - self.seq_base < SUBJ_WIDE and self.entries[sid].first != SUBJ_WIDE:
            self.entries[sid].first = <uint32_t>(v - self.seq_base)
            return 0
        return self.c_wide_set(sid, 1, v)
    cdef inline int set_last(self, uint32_t sid, uint64_t v) except -1:
        if v >= self.seq_base and v - self.seq_base < SUBJ_WIDE and self.entries[sid].last != SUBJ_WIDE:
            self.entries[sid].last = <uint32_t>(v - self.seq_base)
            return 0
        return self.c_wide_set(sid, 2, v)

cdef struct BlockSubj:
    uint32_t sid                  # subject id in the stream's SubjectIndex (0xFFFFFFFF = empty slot)
    uint32_t count                # messages of that subject in this block
    uint64_t first_seq            # lowest live sequence of that subject in this block
    uint64_t last_seq             # highest live sequence of that subject in this block

cdef class BlockSubjects:
    cdef BlockSubj* slots         # open addressing keyed by sid
    cdef uint32_t mask            # capacity - 1 (power of two)
    cdef uint32_t used            # slots holding an entry (count may be 0 after removals: first/last kept stale)
    cdef uint32_t live            # entries with count > 0

    cdef BlockSubj* c_get(self, uint32_t sid) noexcept     # entry or NULL
    cdef BlockSubj* c_add(self, uint32_t sid, uint64_t seq) except NULL  # count += 1, widen first/last
    cdef void c_clear(self) noexcept

# Subject syntax and matching (csrc/subject.c)
cdef extern from "subject.h":
    int subject_is_literal(const char* s, size_t n) nogil          # no `*` / `>` tokens
    int subject_has_full_wildcard(const char* s, size_t n) nogil   # a `>` token somewhere
    int subject_is_valid(const char* s, size_t n, int allow_wildcards) nogil
    int subject_is_routable(const char* s, size_t n) nogil   # can be published on (`*`/`>` tokens too)
    int subject_matches(const char* subj, size_t sn, const char* flt, size_t fn) nogil   # literal subj vs filter
    int subject_filters_overlap(const char* a, size_t an, const char* b, size_t bn) nogil  # some subject matches both
    int subject_is_subset_match(const char* subj, size_t sn, const char* test, size_t tn) nogil
        # every subject subj matches, test matches too (nats-server's subjectIsSubsetMatch)
