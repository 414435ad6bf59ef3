# Read-only queries over a BlockStore's state: filtered loads, pending counts, per-subject
# state.  Every function takes the store first, so the Python store classes bind them as
# methods.  A filter is compiled once per call into a Filter.
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from jsstore._core.storage.engine cimport BlockStore

cdef enum FilterKind:
    FILTER_ALL = 0                # "", ">" or None: every subject
    FILTER_NONE = 1               # nothing in the stream can match
    FILTER_ONE = 2                # exactly one live subject (a literal filter): sid
    FILTER_MASK = 3               # a set of subject ids: mask[sid] != 0

cdef class Filter:
    cdef FilterKind kind
    cdef uint32_t sid             # FILTER_ONE: the subject id
    cdef bytearray mask           # FILTER_MASK: one byte per subject id
    cdef list sids                # FILTER_ONE / FILTER_MASK: the matching subject ids
    cdef uint32_t mask_len

cdef Filter compile_filter(BlockStore store, object flt, bint subset=*)
    # `subset`: one filter takes a stored ">" token with a ">" only (see queries.pyx)
cdef uint64_t next_match(BlockStore store, Filter f, uint64_t start) except? 0
cdef uint64_t prev_match(BlockStore store, Filter f, uint64_t start) except? 0
cdef uint64_t count_from(BlockStore store, Filter f, uint64_t sseq) except? 0
