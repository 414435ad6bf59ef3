# Subject interning and per-subject state.
#
# SubjectIndex is the stream-wide table (nats-server's psim): one entry per distinct
# subject currently in the stream, keyed by the subject bytes (xxh64 hashed, open
# addressing over a uint32 slot array), holding its message count, first/last
# sequence and first/last block index.  Entries are dense in an array and named by
# a uint32 id, which is stable while the subject has messages; an id is reused only
# after its subject left the stream.  Subject bytes live in one arena.  No Python
# object exists per subject: ~40 bytes of entry + ~6 bytes of slots + the subject.
#
# BlockSubjects is one block's table (nats-server's fss): subject id -> count and
# first/last sequence inside that block.  It is built lazily and can be dropped.
from libc.stdint cimport uint64_t, uint32_t, uint16_t, int64_t

cdef struct SubjEntry:
    uint64_t total                # messages with this subject in the stream
    uint64_t first_seq            # lowest live sequence with this subject (a lower bound, see below)
    uint64_t last_seq             # highest live sequence with this subject (an upper bound)
    uint32_t off                  # offset of the subject bytes in the arena
    uint16_t length               # subject length in bytes (0 = free entry)
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
    cdef char* arena              # subject bytes, back to back
    cdef uint64_t arena_len, arena_cap, arena_garbage   # garbage = bytes of released subjects
    cdef uint32_t n_full_wild     # entries in use whose subject has a ">" token (published as
                                  # such): the only ones a subset match tells apart (c_match)

    cdef int64_t c_find(self, const char* subj, Py_ssize_t n) noexcept   # id, or -1
    cdef int64_t c_intern(self, const char* subj, Py_ssize_t n) except -2 # id (new entries start zeroed except off/length)
    cdef void c_release(self, uint32_t sid) noexcept       # forget an entry whose total reached 0
    cdef inline SubjEntry* entry(self, uint32_t sid) noexcept:
        return &self.entries[sid]
    cdef inline const char* subject_ptr(self, uint32_t sid) noexcept:
        return self.arena + self.entries[sid].off
    cdef object subject_str(self, uint32_t sid)            # the subject as a Python str
    cdef Py_ssize_t c_match(self, const char* flt, Py_ssize_t n, uint32_t** out, bint subset) except -1
        # ids of live subjects matching the filter (`*`/`>` wildcards; "" and ">" match all),
        # written to a malloc'ed array the caller frees; returns the count.  A stored "*" or
        # ">" token is a token like any other, taken by a wildcard of the filter; with
        # `subset`, a stored ">" token only by a ">" of the filter (nats-server's
        # subjectIsSubsetMatch, which some of its store paths test: see queries.pyx)

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
