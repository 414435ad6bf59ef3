# Encoding and decoding of a SeqSet (see seqcodec.pxd).
#
# Wire format: nats-server's avl.SequenceSet (little-endian throughout)
#
#   v2:  u8 magic=22, u8 version=2, u32 node_count, u32 size,
#        node_count x { u64 base, 32 x u64 words, u16 height }          (266 bytes a node)
#   v1:  same header with version=1, node_count x { u64 base, 64 x u64 words, u16 height }
#
# Member of a node: bit b of word w  <=>  sequence base + 64*w + b.  Nodes are written in
# pre-order of the AVL tree and `height` counts a leaf as 1.  size is the number of
# members truncated to 32 bits.  An empty set is the 10-byte header with both counts 0.
#
# How nats-server decodes v2: it does not rebalance or recompute heights; it trusts the
# stored heights and hangs each node, in file order, under the binary-search-tree walk
# from the root.  So the file order must be a valid BST pre-order and the heights must be
# the true heights for later inserts to keep the tree balanced.  We write the shape of a
# perfectly balanced tree over the sorted array (middle element as root, recursively);
# a subtree of k nodes then has height bit_length(k).  Its v2 decoder never compares
# `size` with the bits; its v1 decoder re-inserts every member one by one and does.
#
# Our nodes cover 2048 sequences, as nats-server's v2 nodes do, so a v2 node maps onto one
# of ours; a v1 node (4096 sequences) is split into two.
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport qsort

from jsstore._core.storage.seqset cimport (SEQSET_NODE_BITS, SEQSET_NODE_WORDS, SeqNode, SeqSet,
                                           count_members, reserve)

from jsstore.errors import CorruptStreamState

cdef extern from *:
    """
    #define SEQCODEC_LAST_SEQ 0xFFFFFFFFFFFFFFFFULL
    /* lowest set bit of a non-zero word */
    static inline int seqcodec_lowest_bit(unsigned long long word) { return __builtin_ctzll(word); }
    static inline int seqcodec_bit_length(unsigned long long value) {
        return value ? 64 - __builtin_clzll(value) : 0;
    }
    static inline unsigned long long seqcodec_get_le64(const unsigned char *p) {
        unsigned long long value = 0;
        for (int i = 7; i >= 0; i--) value = (value << 8) | p[i];
        return value;
    }
    static inline unsigned int seqcodec_get_le32(const unsigned char *p) {
        return (unsigned int)p[0] | ((unsigned int)p[1] << 8) | ((unsigned int)p[2] << 16)
             | ((unsigned int)p[3] << 24);
    }
    static inline void seqcodec_put_le64(unsigned char *p, unsigned long long value) {
        for (int i = 0; i < 8; i++) { p[i] = (unsigned char)value; value >>= 8; }
    }
    static inline void seqcodec_put_le32(unsigned char *p, unsigned int value) {
        for (int i = 0; i < 4; i++) { p[i] = (unsigned char)value; value >>= 8; }
    }
    """
    const uint64_t SEQCODEC_LAST_SEQ      # 2**64 - 1, the largest sequence
    int seqcodec_lowest_bit(uint64_t word) noexcept nogil
    int seqcodec_bit_length(uint64_t value) noexcept nogil
    uint64_t seqcodec_get_le64(const unsigned char* p) noexcept nogil
    uint32_t seqcodec_get_le32(const unsigned char* p) noexcept nogil
    void seqcodec_put_le64(unsigned char* p, uint64_t value) noexcept nogil
    void seqcodec_put_le32(unsigned char* p, uint32_t value) noexcept nogil

cdef enum:
    OFFSET_MASK = SEQSET_NODE_BITS - 1

# base of the last node a set can have (the one holding 2**64 - 1)
cdef uint64_t LAST_NODE_BASE = SEQCODEC_LAST_SEQ & ~(<uint64_t>OFFSET_MASK)


# ---- encoding ---------------------------------------------------------------------------

cdef unsigned char* write_preorder(const SeqNode* nodes, Py_ssize_t size,
                                   unsigned char* out) noexcept nogil:
    """Write nodes[0..size) as the pre-order of a balanced tree; returns the end of output."""
    cdef Py_ssize_t left_size, word
    cdef const SeqNode* root
    if size <= 0:
        return out
    left_size = (size - 1) >> 1              # the right subtree gets the extra node, if any
    root = &nodes[left_size]
    seqcodec_put_le64(out, root.base)
    for word in range(SEQSET_NODE_WORDS):
        seqcodec_put_le64(out + 8 + 8 * word, root.bits[word])
    # u16 height of a balanced subtree of `size` nodes, a leaf being 1 (as nats-server
    # counts); it is at most 64, so the high byte is 0
    out[SEQCODEC_NODE_LEN_V2 - 2] = <unsigned char>seqcodec_bit_length(<uint64_t>size)
    out[SEQCODEC_NODE_LEN_V2 - 1] = 0
    out = write_preorder(nodes, left_size, out + SEQCODEC_NODE_LEN_V2)
    return write_preorder(nodes + left_size + 1, size - 1 - left_size, out)


cdef Py_ssize_t c_encoded_len(SeqSet seqs) noexcept:
    return SEQCODEC_HEADER_LEN + seqs.n_nodes * SEQCODEC_NODE_LEN_V2


cdef bytes c_encode(SeqSet seqs):
    cdef Py_ssize_t length = c_encoded_len(seqs)
    cdef bytes encoded
    cdef unsigned char* out
    if seqs.n_nodes > 0xFFFFFFFF:
        raise OverflowError("too many nodes for the encoding")
    encoded = PyBytes_FromStringAndSize(NULL, length)
    out = <unsigned char*>PyBytes_AS_STRING(encoded)
    out[0] = SEQCODEC_MAGIC
    out[1] = SEQCODEC_VERSION
    seqcodec_put_le32(out + 2, <uint32_t>seqs.n_nodes)
    seqcodec_put_le32(out + 6, <uint32_t>seqs.count)
    with nogil:
        write_preorder(seqs.nodes, seqs.n_nodes, out + SEQCODEC_HEADER_LEN)
    return encoded


# ---- decoding ---------------------------------------------------------------------------

cdef int compare_bases(const void* left, const void* right) noexcept nogil:
    cdef uint64_t left_base = (<const SeqNode*>left).base
    cdef uint64_t right_base = (<const SeqNode*>right).base
    return (left_base > right_base) - (left_base < right_base)


cdef corrupt(str detail):
    return CorruptStreamState(f"sequence set: {detail}")


cdef Py_ssize_t decode_into(SeqSet seqs, const unsigned char[::1] buf) except -1:
    cdef Py_ssize_t length = buf.shape[0], node_len, node_count, index, kept
    cdef Py_ssize_t halves, half
    cdef const unsigned char* data
    cdef const unsigned char* record
    cdef uint64_t base, bits, offset, occupied
    cdef uint32_t declared_size
    cdef int version, word, n_words
    cdef bint unaligned = False
    cdef SeqNode* node
    if length < SEQCODEC_HEADER_LEN:
        raise corrupt(f"{length} bytes is shorter than the {SEQCODEC_HEADER_LEN}-byte header")
    data = &buf[0]
    if data[0] != SEQCODEC_MAGIC:
        raise corrupt(f"bad magic {data[0]} at offset 0 (expected {SEQCODEC_MAGIC})")
    version = data[1]
    if version == 2:
        node_len, n_words = SEQCODEC_NODE_LEN_V2, SEQSET_NODE_WORDS
    elif version == 1:
        node_len, n_words = SEQCODEC_NODE_LEN_V1, SEQCODEC_WORDS_V1
    else:
        raise corrupt(f"unsupported version {version} at offset 1")
    node_count = seqcodec_get_le32(data + 2)
    declared_size = seqcodec_get_le32(data + 6)
    if node_count > (length - SEQCODEC_HEADER_LEN) // node_len:
        raise corrupt(f"header at offset 2 declares {node_count} nodes of {node_len} bytes "
                      f"but only {length - SEQCODEC_HEADER_LEN} bytes follow")
    halves = n_words // SEQSET_NODE_WORDS
    reserve(seqs, node_count * halves)
    # Pass 1: nodes with a 2048-aligned base go straight into the array, unsorted.
    for index in range(node_count):
        record = data + SEQCODEC_HEADER_LEN + index * node_len
        base = seqcodec_get_le64(record)
        if base & OFFSET_MASK:
            unaligned = True                 # handled member by member below
            continue
        for half in range(halves):
            if half and base == LAST_NODE_BASE:
                for word in range(SEQSET_NODE_WORDS, SEQCODEC_WORDS_V1):
                    if seqcodec_get_le64(record + 8 + 8 * word):
                        raise corrupt(f"node at offset {SEQCODEC_HEADER_LEN + index * node_len} "
                                      f"holds sequences beyond 2**64-1")
                continue
            node = &seqs.nodes[seqs.n_nodes]
            node.base = base + <uint64_t>half * SEQSET_NODE_BITS
            occupied = 0
            for word in range(SEQSET_NODE_WORDS):
                node.bits[word] = seqcodec_get_le64(record + 8 + 8 * (half * SEQSET_NODE_WORDS + word))
                occupied |= node.bits[word]
            if occupied:                     # an empty node is not kept
                seqs.n_nodes += 1
    # Sort by base and merge duplicate bases (nats-server never writes those, but a
    # peer's file is not trusted to keep our invariants).
    if seqs.n_nodes > 1:
        qsort(seqs.nodes, seqs.n_nodes, sizeof(SeqNode), compare_bases)
        kept = 1
        for index in range(1, seqs.n_nodes):
            if seqs.nodes[index].base == seqs.nodes[kept - 1].base:
                for word in range(SEQSET_NODE_WORDS):
                    seqs.nodes[kept - 1].bits[word] |= seqs.nodes[index].bits[word]
            else:
                seqs.nodes[kept] = seqs.nodes[index]
                kept += 1
        seqs.n_nodes = kept
    seqs.count = count_members(seqs.nodes, seqs.n_nodes)
    # Pass 2: a node whose base is not aligned (nats-server's SetInitialMin can make one).
    if unaligned:
        for index in range(node_count):
            record = data + SEQCODEC_HEADER_LEN + index * node_len
            base = seqcodec_get_le64(record)
            if not base & OFFSET_MASK:
                continue
            for word in range(n_words):
                bits = seqcodec_get_le64(record + 8 + 8 * word)
                while bits:
                    offset = <uint64_t>word * 64 + seqcodec_lowest_bit(bits)
                    if offset > SEQCODEC_LAST_SEQ - base:
                        raise corrupt(f"node at offset {SEQCODEC_HEADER_LEN + index * node_len} "
                                      f"holds sequences beyond 2**64-1")
                    seqs.c_insert(base + offset)
                    bits &= bits - 1
    # nats-server's v1 decoder checks size; v2 trusts it.  We check both: an encoder
    # always writes the true size, so a mismatch means the bytes are damaged.
    if <uint32_t>seqs.count != declared_size:
        raise corrupt(f"header at offset 6 declares {declared_size} members, "
                      f"the nodes hold {seqs.count}")
    return SEQCODEC_HEADER_LEN + node_count * node_len


# ---- Python API -------------------------------------------------------------------------

def encoded_len(SeqSet seqs not None):
    """Bytes the avl.SequenceSet v2 encoding of seqs takes."""
    return c_encoded_len(seqs)


def encode(SeqSet seqs not None):
    """The avl.SequenceSet v2 encoding of seqs."""
    return c_encode(seqs)


def decode(buf):
    """Decode an avl.SequenceSet (v1 or v2); returns (set, bytes consumed)."""
    cdef SeqSet decoded = SeqSet()
    cdef Py_ssize_t consumed = decode_into(decoded, buf)
    return decoded, consumed
