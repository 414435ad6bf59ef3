# The deleted-sequence set: a sorted array of 2048-sequence bitmap nodes (see seqset.pxd).
#
# Invariants kept by every operation: nodes[0..n_nodes) are sorted by base, bases are
# multiples of 2048 and distinct, no node is empty, and count is the number of set bits.
# Because of them, two equal sets have byte-identical node arrays.
#
# The byte encoding (nats-server's avl.SequenceSet) lives in seqcodec.pyx, which fills
# and reads the node array through the fields and helpers declared in seqset.pxd.
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport uint64_t
from libc.string cimport memcmp, memcpy, memmove, memset

cdef extern from *:
    """
    #define SEQSET_ALL_BITS 0xFFFFFFFFFFFFFFFFULL
    static inline int seqset_popcount64(unsigned long long word) { return __builtin_popcountll(word); }
    /* lowest / highest set bit of a non-zero word */
    static inline int seqset_lowest_bit(unsigned long long word) { return __builtin_ctzll(word); }
    static inline int seqset_highest_bit(unsigned long long word) { return 63 - __builtin_clzll(word); }
    """
    const uint64_t SEQSET_ALL_BITS
    const Py_ssize_t PY_SSIZE_T_MAX
    int seqset_popcount64(uint64_t word) noexcept nogil
    int seqset_lowest_bit(uint64_t word) noexcept nogil
    int seqset_highest_bit(uint64_t word) noexcept nogil

cdef enum:
    OFFSET_MASK = SEQSET_NODE_BITS - 1


# ---- helpers over a node array ---------------------------------------------------------

cdef inline uint64_t base_of(uint64_t seq) noexcept nogil:
    return seq & ~(<uint64_t>OFFSET_MASK)


cdef inline uint64_t word_mask(unsigned int first_offset, unsigned int last_offset,
                               unsigned int word) noexcept nogil:
    """Bits of `word` whose node offsets lie in [first_offset, last_offset]."""
    cdef uint64_t mask = SEQSET_ALL_BITS
    if word == first_offset >> 6:
        mask &= SEQSET_ALL_BITS << (first_offset & 63)
    if word == last_offset >> 6:
        mask &= SEQSET_ALL_BITS >> (63 - (last_offset & 63))
    return mask


cdef inline Py_ssize_t lower_bound(const SeqNode* nodes, Py_ssize_t n_nodes,
                                   uint64_t base) noexcept nogil:
    """Index of the first node whose base is >= base (n_nodes if none)."""
    cdef Py_ssize_t low = 0, high = n_nodes, middle
    if n_nodes > 0:                         # deletes are mostly ascending: try the end first
        if nodes[n_nodes - 1].base < base:
            return n_nodes
        if nodes[n_nodes - 1].base == base:
            return n_nodes - 1
    while low < high:
        middle = (low + high) >> 1
        if nodes[middle].base < base:
            low = middle + 1
        else:
            high = middle
    return low


cdef inline bint node_is_empty(const SeqNode* node) noexcept nogil:
    cdef int word
    for word in range(SEQSET_NODE_WORDS):
        if node.bits[word]:
            return False
    return True


cdef uint64_t count_members(const SeqNode* nodes, Py_ssize_t n_nodes) noexcept nogil:
    cdef uint64_t total = 0
    cdef Py_ssize_t index
    cdef int word
    for index in range(n_nodes):
        for word in range(SEQSET_NODE_WORDS):
            total += seqset_popcount64(nodes[index].bits[word])
    return total


cdef uint64_t count_in_node(const SeqNode* node, unsigned int first_offset,
                            unsigned int last_offset) noexcept nogil:
    cdef uint64_t total = 0
    cdef unsigned int word
    for word in range(first_offset >> 6, (last_offset >> 6) + 1):
        total += seqset_popcount64(node.bits[word] & word_mask(first_offset, last_offset, word))
    return total


cdef uint64_t clear_in_node(SeqNode* node, unsigned int first_offset,
                            unsigned int last_offset) noexcept nogil:
    """Clear offsets [first_offset, last_offset]; returns how many members were removed."""
    cdef uint64_t removed = 0, mask
    cdef unsigned int word
    for word in range(first_offset >> 6, (last_offset >> 6) + 1):
        mask = word_mask(first_offset, last_offset, word)
        removed += seqset_popcount64(node.bits[word] & mask)
        node.bits[word] &= ~mask
    return removed


cdef int reserve(SeqSet seqs, Py_ssize_t needed) except -1:
    """Grow the node array to hold at least `needed` nodes."""
    cdef Py_ssize_t new_cap
    cdef void* grown
    if needed <= seqs.cap:
        return 0
    if needed > PY_SSIZE_T_MAX // <Py_ssize_t>sizeof(SeqNode):
        raise MemoryError("sequence set too large")
    new_cap = 4
    if seqs.cap >= 2 and seqs.cap <= PY_SSIZE_T_MAX // 2 // <Py_ssize_t>sizeof(SeqNode):
        new_cap = seqs.cap * 2
    if new_cap < needed:
        new_cap = needed
    grown = PyMem_Realloc(seqs.nodes, new_cap * sizeof(SeqNode))
    if grown == NULL:
        raise MemoryError()
    seqs.nodes = <SeqNode*>grown
    seqs.cap = new_cap
    return 0


cdef SeqNode* insert_node_at(SeqSet seqs, Py_ssize_t index, uint64_t base) except NULL:
    """Open an empty node with `base` at `index` (the caller keeps the order)."""
    cdef SeqNode* node
    reserve(seqs, seqs.n_nodes + 1)
    memmove(&seqs.nodes[index + 1], &seqs.nodes[index], (seqs.n_nodes - index) * sizeof(SeqNode))
    seqs.n_nodes += 1
    node = &seqs.nodes[index]
    node.base = base
    memset(node.bits, 0, sizeof(node.bits))
    return node


cdef void remove_nodes(SeqSet seqs, Py_ssize_t start, Py_ssize_t stop) noexcept:
    """Drop nodes [start, stop) from the array (count is the caller's business)."""
    memmove(&seqs.nodes[start], &seqs.nodes[stop], (seqs.n_nodes - stop) * sizeof(SeqNode))
    seqs.n_nodes -= stop - start


cdef (bint, uint64_t) next_member(const SeqNode* nodes, Py_ssize_t n_nodes,
                                  uint64_t seq) noexcept nogil:
    """The smallest member >= seq, as (found, member)."""
    cdef Py_ssize_t index = lower_bound(nodes, n_nodes, base_of(seq))
    cdef unsigned int word, first_offset = 0
    cdef uint64_t bits
    if index < n_nodes and nodes[index].base == base_of(seq):
        first_offset = <unsigned int>(seq - nodes[index].base)
    while index < n_nodes:
        for word in range(first_offset >> 6, <unsigned int>SEQSET_NODE_WORDS):
            bits = nodes[index].bits[word] & word_mask(first_offset, OFFSET_MASK, word)
            if bits:
                return True, nodes[index].base + word * 64 + seqset_lowest_bit(bits)
        first_offset = 0
        index += 1
    return False, 0


cdef class SeqSet:
    """A set of uint64 sequences, stored as 2048-sequence bitmaps."""

    def __init__(self, seqs=None):
        if seqs is not None:
            for seq in sorted(seqs):         # ascending inserts take the append path
                self.c_insert(seq)

    def __dealloc__(self):
        PyMem_Free(self.nodes)
        self.nodes = NULL

    # ---- the cdef interface of the store engine ----------------------------------------

    cdef int c_insert(self, uint64_t seq) except -1:
        cdef uint64_t base = base_of(seq), mask
        cdef Py_ssize_t index = lower_bound(self.nodes, self.n_nodes, base)
        cdef SeqNode* node
        cdef unsigned int offset = <unsigned int>(seq - base)
        if index < self.n_nodes and self.nodes[index].base == base:
            node = &self.nodes[index]
        else:
            node = insert_node_at(self, index, base)
        mask = (<uint64_t>1) << (offset & 63)
        if node.bits[offset >> 6] & mask:
            return 0
        node.bits[offset >> 6] |= mask
        self.count += 1
        return 1

    cdef int c_insert_range(self, uint64_t first, uint64_t last) except -1:
        cdef uint64_t first_base = base_of(first), last_base = base_of(last), base, mask
        cdef uint64_t span, added = 0
        cdef Py_ssize_t start, stop, missing, target, source, index
        cdef unsigned int word, first_offset, last_offset
        cdef SeqNode* node
        if first > last:
            return 0
        span = ((last_base - first_base) >> 11) + 1        # nodes covering [first, last]
        if span > <uint64_t>(PY_SSIZE_T_MAX // <Py_ssize_t>sizeof(SeqNode)):
            raise MemoryError("sequence range too large")
        start = lower_bound(self.nodes, self.n_nodes, first_base)
        stop = lower_bound(self.nodes, self.n_nodes, last_base)
        if stop < self.n_nodes and self.nodes[stop].base == last_base:
            stop += 1
        missing = <Py_ssize_t>span - (stop - start)
        if missing > 0:
            # Open a gap of `missing` nodes after [start, stop), then lay the covering
            # nodes out from the back, moving each existing one to its final slot.
            reserve(self, self.n_nodes + missing)
            memmove(&self.nodes[stop + missing], &self.nodes[stop],
                    (self.n_nodes - stop) * sizeof(SeqNode))
            target, source, base = start + <Py_ssize_t>span - 1, stop - 1, last_base
            while target >= start:
                if source >= start and self.nodes[source].base == base:
                    if target != source:
                        self.nodes[target] = self.nodes[source]
                    source -= 1
                else:
                    self.nodes[target].base = base
                    memset(self.nodes[target].bits, 0, sizeof(self.nodes[target].bits))
                target -= 1
                base -= SEQSET_NODE_BITS
            self.n_nodes += missing
        for index in range(start, start + <Py_ssize_t>span):
            node = &self.nodes[index]
            first_offset = <unsigned int>(first - node.base) if first > node.base else 0
            last_offset = <unsigned int>(last - node.base) if last - node.base < OFFSET_MASK else OFFSET_MASK
            for word in range(first_offset >> 6, (last_offset >> 6) + 1):
                mask = word_mask(first_offset, last_offset, word)
                added += seqset_popcount64(mask & ~node.bits[word])
                node.bits[word] |= mask
        self.count += added
        return 0

    cdef bint c_exists(self, uint64_t seq) noexcept nogil:
        cdef uint64_t base = base_of(seq)
        cdef Py_ssize_t index = lower_bound(self.nodes, self.n_nodes, base)
        cdef unsigned int offset = <unsigned int>(seq - base)
        if index >= self.n_nodes or self.nodes[index].base != base:
            return False
        return (self.nodes[index].bits[offset >> 6] >> (offset & 63)) & 1

    cdef bint c_delete(self, uint64_t seq) noexcept:
        cdef uint64_t base = base_of(seq), mask
        cdef Py_ssize_t index = lower_bound(self.nodes, self.n_nodes, base)
        cdef unsigned int offset = <unsigned int>(seq - base)
        cdef SeqNode* node
        if index >= self.n_nodes or self.nodes[index].base != base:
            return False
        node = &self.nodes[index]
        mask = (<uint64_t>1) << (offset & 63)
        if not node.bits[offset >> 6] & mask:
            return False
        node.bits[offset >> 6] &= ~mask
        self.count -= 1
        if node.bits[offset >> 6] == 0 and node_is_empty(node):
            remove_nodes(self, index, index + 1)
        return True

    cdef void c_clear(self) noexcept:
        PyMem_Free(self.nodes)
        self.nodes = NULL
        self.n_nodes = self.cap = 0
        self.count = 0

    cdef uint64_t c_min(self) noexcept nogil:
        cdef int word
        if self.n_nodes == 0:
            return 0
        for word in range(SEQSET_NODE_WORDS):
            if self.nodes[0].bits[word]:
                return self.nodes[0].base + word * 64 + seqset_lowest_bit(self.nodes[0].bits[word])
        return 0

    cdef uint64_t c_max(self) noexcept nogil:
        cdef int word
        cdef const SeqNode* last
        if self.n_nodes == 0:
            return 0
        last = &self.nodes[self.n_nodes - 1]
        for word in range(SEQSET_NODE_WORDS - 1, -1, -1):
            if last.bits[word]:
                return last.base + word * 64 + seqset_highest_bit(last.bits[word])
        return 0

    cdef uint64_t c_count_range(self, uint64_t first, uint64_t last) noexcept nogil:
        cdef Py_ssize_t index
        cdef uint64_t total = 0, base
        if first > last:
            return 0
        index = lower_bound(self.nodes, self.n_nodes, base_of(first))
        while index < self.n_nodes and self.nodes[index].base <= last:
            base = self.nodes[index].base
            total += count_in_node(&self.nodes[index],
                                   <unsigned int>(first - base) if first > base else 0,
                                   <unsigned int>(last - base) if last - base < OFFSET_MASK else OFFSET_MASK)
            index += 1
        return total

    cdef void c_delete_below(self, uint64_t seq) noexcept:
        cdef uint64_t base = base_of(seq)
        cdef Py_ssize_t drop
        if self.n_nodes == 0 or seq == 0:
            return
        drop = lower_bound(self.nodes, self.n_nodes, base)   # nodes [0, drop) lie wholly below
        if drop > 0:
            if drop * 2 <= self.n_nodes:
                self.count -= count_members(self.nodes, drop)
                remove_nodes(self, 0, drop)
            else:
                remove_nodes(self, 0, drop)
                self.count = count_members(self.nodes, self.n_nodes)
        if self.n_nodes > 0 and self.nodes[0].base == base and seq > base:
            self.count -= clear_in_node(&self.nodes[0], 0, <unsigned int>(seq - base - 1))
            if node_is_empty(&self.nodes[0]):
                remove_nodes(self, 0, 1)

    cdef void c_delete_above(self, uint64_t seq) noexcept:
        cdef uint64_t base = base_of(seq)
        cdef Py_ssize_t keep
        if self.n_nodes == 0 or seq == SEQSET_ALL_BITS:
            return
        keep = lower_bound(self.nodes, self.n_nodes, base)   # nodes [keep, n) start at or above base
        if keep < self.n_nodes and self.nodes[keep].base == base:
            if seq - base < OFFSET_MASK:
                self.count -= clear_in_node(&self.nodes[keep], <unsigned int>(seq - base + 1), OFFSET_MASK)
            if not node_is_empty(&self.nodes[keep]):
                keep += 1
        if keep < self.n_nodes:
            self.count -= count_members(&self.nodes[keep], self.n_nodes - keep)
            self.n_nodes = keep

    cdef uint64_t c_next_absent(self, uint64_t seq) noexcept nogil:
        # Returns 0 only if every sequence from seq to 2**64-1 is a member.
        cdef Py_ssize_t index = lower_bound(self.nodes, self.n_nodes, base_of(seq))
        cdef uint64_t current = seq, free
        cdef unsigned int word, offset
        while index < self.n_nodes and self.nodes[index].base == base_of(current):
            offset = <unsigned int>(current - self.nodes[index].base)
            for word in range(offset >> 6, <unsigned int>SEQSET_NODE_WORDS):
                free = ~self.nodes[index].bits[word] & word_mask(offset, OFFSET_MASK, word)
                if free:
                    return self.nodes[index].base + word * 64 + seqset_lowest_bit(free)
            if self.nodes[index].base == base_of(SEQSET_ALL_BITS):
                return 0
            current = self.nodes[index].base + SEQSET_NODE_BITS
            index += 1
        return current

    cdef uint64_t c_prev_absent(self, uint64_t seq) noexcept nogil:
        cdef Py_ssize_t index = lower_bound(self.nodes, self.n_nodes, base_of(seq))
        cdef uint64_t current = seq, free
        cdef int word
        cdef unsigned int offset
        while 0 <= index < self.n_nodes and self.nodes[index].base == base_of(current):
            offset = <unsigned int>(current - self.nodes[index].base)
            for word in range(<int>(offset >> 6), -1, -1):
                free = ~self.nodes[index].bits[word] & word_mask(0, offset, word)
                if free:
                    return self.nodes[index].base + word * 64 + seqset_highest_bit(free)
            if self.nodes[index].base == 0:
                return 0
            current = self.nodes[index].base - 1
            index -= 1
        return current

    cdef Py_ssize_t c_copy_into(self, uint64_t* out, Py_ssize_t n) noexcept:
        cdef Py_ssize_t written = 0, index
        cdef int word
        cdef uint64_t bits
        for index in range(self.n_nodes):
            for word in range(SEQSET_NODE_WORDS):
                bits = self.nodes[index].bits[word]
                while bits and written < n:
                    out[written] = self.nodes[index].base + word * 64 + seqset_lowest_bit(bits)
                    written += 1
                    bits &= bits - 1
                if written >= n:
                    return written
        return written

    # ---- Python API ----------------------------------------------------------------------

    def insert(self, uint64_t seq):
        """Add seq; True if it was not a member before."""
        return self.c_insert(seq) == 1

    def insert_range(self, uint64_t first, uint64_t last):
        """Add every sequence in [first, last]; returns how many were new."""
        cdef uint64_t before = self.count
        self.c_insert_range(first, last)
        return self.count - before

    def exists(self, uint64_t seq):
        return self.c_exists(seq)

    def __contains__(self, seq):
        if not isinstance(seq, int) or seq < 0 or seq > SEQSET_ALL_BITS:
            return False
        return self.c_exists(seq)

    def delete(self, uint64_t seq):
        """Remove seq; True if it was a member."""
        return self.c_delete(seq)

    def __len__(self):
        return self.count

    def min(self):
        """The smallest member, 0 when empty (as nats-server's MinMax)."""
        return self.c_min()

    def max(self):
        """The largest member, 0 when empty."""
        return self.c_max()

    def count_range(self, uint64_t first, uint64_t last):
        """Members in [first, last]."""
        return self.c_count_range(first, last)

    def delete_below(self, uint64_t seq):
        """Remove every member < seq; returns how many were removed."""
        cdef uint64_t before = self.count
        self.c_delete_below(seq)
        return before - self.count

    def delete_above(self, uint64_t seq):
        """Remove every member > seq; returns how many were removed."""
        cdef uint64_t before = self.count
        self.c_delete_above(seq)
        return before - self.count

    def next_absent(self, uint64_t seq):
        """The smallest s >= seq that is not a member (None if there is none below 2**64)."""
        cdef uint64_t found = self.c_next_absent(seq)
        if found < seq:
            return None
        return found

    def prev_absent(self, uint64_t seq):
        """The largest s <= seq that is not a member (None if there is none)."""
        cdef uint64_t found = self.c_prev_absent(seq)
        if found == 0 and self.c_exists(0):
            return None
        return found

    def clear(self):
        self.c_clear()

    def __iter__(self):
        # A cursor, not a pointer, is kept between steps: the set may change (and its
        # array move) while a caller iterates.  Members added behind the cursor are skipped.
        cdef uint64_t cursor = 0
        cdef bint found
        cdef uint64_t member
        while True:
            found, member = next_member(self.nodes, self.n_nodes, cursor)
            if not found:
                return
            yield member
            if member == SEQSET_ALL_BITS:
                return
            cursor = member + 1

    def to_list(self):
        """Every member, ascending."""
        cdef Py_ssize_t n = <Py_ssize_t>self.count, written, index
        cdef uint64_t* members
        if n == 0:
            return []
        members = <uint64_t*>PyMem_Malloc(n * sizeof(uint64_t))
        if members == NULL:
            raise MemoryError()
        try:
            written = self.c_copy_into(members, n)
            return [members[index] for index in range(written)]
        finally:
            PyMem_Free(members)

    def copy(self):
        cdef SeqSet duplicate = SeqSet.__new__(SeqSet)
        if self.n_nodes:
            reserve(duplicate, self.n_nodes)
            memcpy(duplicate.nodes, self.nodes, self.n_nodes * sizeof(SeqNode))
        duplicate.n_nodes = self.n_nodes
        duplicate.count = self.count
        return duplicate

    def union(self, SeqSet other not None):
        """Add every member of other to this set (in place)."""
        cdef SeqNode* merged
        cdef Py_ssize_t mine = 0, theirs = 0, out = 0, total
        cdef int word
        if other is self or other.n_nodes == 0:
            return
        total = self.n_nodes + other.n_nodes
        merged = <SeqNode*>PyMem_Malloc(total * sizeof(SeqNode))
        if merged == NULL:
            raise MemoryError()
        while mine < self.n_nodes or theirs < other.n_nodes:
            if theirs >= other.n_nodes or (mine < self.n_nodes and
                                            self.nodes[mine].base < other.nodes[theirs].base):
                merged[out] = self.nodes[mine]
                mine += 1
            elif mine >= self.n_nodes or other.nodes[theirs].base < self.nodes[mine].base:
                merged[out] = other.nodes[theirs]
                theirs += 1
            else:
                merged[out] = self.nodes[mine]
                for word in range(SEQSET_NODE_WORDS):
                    merged[out].bits[word] |= other.nodes[theirs].bits[word]
                mine += 1
                theirs += 1
            out += 1
        PyMem_Free(self.nodes)
        self.nodes, self.n_nodes, self.cap = merged, out, total
        self.count = count_members(merged, out)

    def node_count(self):
        """Number of 2048-sequence nodes in use."""
        return self.n_nodes

    def __eq__(self, other):
        cdef SeqSet that
        if not isinstance(other, SeqSet):
            return NotImplemented
        that = other
        return (self.count == that.count and self.n_nodes == that.n_nodes and
                (self.n_nodes == 0 or   # no nodes: memcmp must not see their NULL array
                 memcmp(self.nodes, that.nodes, self.n_nodes * sizeof(SeqNode)) == 0))

    __hash__ = None

    def __repr__(self):
        return f"SeqSet(len={self.count}, nodes={self.n_nodes}, min={self.c_min()}, max={self.c_max()})"
