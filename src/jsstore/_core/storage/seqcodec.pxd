# The byte encoding of a SeqSet: nats-server's avl.SequenceSet, v2 written, v1 and v2 read
# (layout and the reasons for the tree shape are in seqcodec.pyx).  The codec fills and
# reads SeqSet's node array directly; seqset.pyx itself knows nothing of the format.
from jsstore._core.storage.seqset cimport SeqSet

cdef enum:
    SEQCODEC_MAGIC = 22             # first byte of every encoded set
    SEQCODEC_VERSION = 2            # the version we write
    SEQCODEC_HEADER_LEN = 10        # magic, version, u32 node count, u32 size
    SEQCODEC_NODE_LEN_V2 = 266      # u64 base + 32 x u64 words + u16 height
    SEQCODEC_WORDS_V1 = 64          # a v1 node held 64 words (4096 sequences)
    SEQCODEC_NODE_LEN_V1 = 522      # u64 base + 64 x u64 words + u16 height

# Bytes the v2 encoding of seqs takes.
cdef Py_ssize_t c_encoded_len(SeqSet seqs) noexcept
# The v2 encoding of seqs.
cdef bytes c_encode(SeqSet seqs)
# Fill the empty set seqs from an encoded set (v1 or v2); returns the bytes consumed and
# raises CorruptStreamState on anything malformed.
cdef Py_ssize_t decode_into(SeqSet seqs, const unsigned char[::1] buf) except -1
