# A set of stream sequences (the deleted-sequence map of a block or a stream).
#
# Layout: a sorted array of bitmap nodes, each covering NUM_ENTRIES = 2048 consecutive
# sequences starting at base = seq // 2048 * 2048.  Deletes are dense and mostly
# ascending, so a sorted array with binary search beats a tree here; the encoding is
# still nats-server's avl.SequenceSet v2 so index.db files interoperate (the codec is
# seqcodec.pyx: encode(SeqSet), decode(buf), encoded_len(SeqSet)).
from libc.stdint cimport uint64_t, int64_t

cdef enum:
    SEQSET_NODE_BITS = 2048       # sequences covered by one node
    SEQSET_NODE_WORDS = 32        # uint64 words in one node bitmap

cdef struct SeqNode:
    uint64_t base                 # first sequence covered by this node (multiple of 2048)
    uint64_t bits[32]             # bit i of word w set <=> base + w*64 + i is in the set

cdef class SeqSet:
    cdef SeqNode* nodes           # nodes sorted by base, none empty
    cdef Py_ssize_t n_nodes       # nodes in use
    cdef Py_ssize_t cap           # nodes allocated
    cdef uint64_t count           # number of sequences in the set

    cdef int c_insert(self, uint64_t seq) except -1         # 1 if added, 0 if already present
    cdef int c_insert_range(self, uint64_t first, uint64_t last) except -1   # add [first, last]
    cdef bint c_exists(self, uint64_t seq) noexcept nogil
    cdef bint c_delete(self, uint64_t seq) noexcept          # True if it was present
    cdef void c_clear(self) noexcept
    cdef uint64_t c_min(self) noexcept nogil                 # 0 when empty
    cdef uint64_t c_max(self) noexcept nogil                 # 0 when empty
    cdef uint64_t c_count_range(self, uint64_t first, uint64_t last) noexcept nogil  # members in [first, last]
    cdef void c_delete_below(self, uint64_t seq) noexcept    # drop members < seq
    cdef void c_delete_above(self, uint64_t seq) noexcept    # drop members > seq
    cdef uint64_t c_next_absent(self, uint64_t seq) noexcept nogil   # smallest s >= seq not in the set
    cdef uint64_t c_prev_absent(self, uint64_t seq) noexcept nogil   # largest s <= seq not in the set (0 if none)
    cdef Py_ssize_t c_copy_into(self, uint64_t* out, Py_ssize_t n) noexcept  # ascending members, up to n; returns count written

# Helpers over a node array, defined in seqset.pyx and shared with the codec (seqcodec.pyx).
cdef int reserve(SeqSet seqs, Py_ssize_t needed) except -1    # grow seqs.nodes to hold `needed` nodes
cdef uint64_t count_members(const SeqNode* nodes, Py_ssize_t n_nodes) noexcept nogil   # set bits in nodes[0..n_nodes)
