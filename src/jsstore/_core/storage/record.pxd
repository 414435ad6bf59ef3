# One message record: encode, parse, verify (layout documented in csrc/record.h), and the
# StoreMsg object handed to callers.
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t

cdef extern from "record.h":
    enum:
        RECORD_HDR_SIZE
        RECORD_HASH_SIZE
        RECORD_EMPTY_LEN
        RECORD_HDR_BIT
        RECORD_LEN_MASK
        RECORD_MAX_LEN
        RECORD_OFF_SEQ
        RECORD_OFF_TS
        RECORD_OFF_SUBJ_LEN
        RECORD_OFF_SUBJ
    uint64_t SEQ_ERASE_BIT
    uint64_t SEQ_TOMB_BIT
    uint64_t SEQ_MASK
    uint16_t rec_get_u16(const uint8_t *p) nogil
    uint32_t rec_get_u32(const uint8_t *p) nogil
    uint64_t rec_get_u64(const uint8_t *p) nogil
    void rec_put_u16(uint8_t *p, uint16_t v) nogil
    void rec_put_u32(uint8_t *p, uint32_t v) nogil
    void rec_put_u64(uint8_t *p, uint64_t v) nogil
    uint64_t rec_size(size_t subj_len, size_t hdr_len, size_t msg_len, int has_hdr) nogil

cdef struct RecordView:
    uint32_t length               # whole record length, flag bit cleared
    uint64_t seq                  # sequence with the erase/tombstone bits cleared
    bint erased                   # SEQ_ERASE_BIT: skip placeholder or erased message
    bint tombstone                # SEQ_TOMB_BIT: marks `seq` (in an older block) removed
    bint has_hdr                  # RECORD_HDR_BIT was set
    int64_t ts                    # Unix ns
    uint32_t subj_off, subj_len   # subject bytes, offsets relative to the record start
    uint32_t hdr_off, hdr_len     # header bytes (hdr_len 0 and has_hdr False when absent)
    uint32_t msg_off, msg_len     # payload bytes

# Parse the record at buf[0:avail]; 0 on success, -1 when lengths are inconsistent or truncated.
cdef int record_parse(const uint8_t* buf, size_t avail, RecordView* out) noexcept nogil

# Encode a record into out (which has room for rec_size(...) bytes); returns its length.
cdef uint32_t record_encode(uint8_t* out, uint64_t seq_bits, int64_t ts,
                            const uint8_t* subj, size_t subj_len,
                            const uint8_t* hdr, size_t hdr_len, bint has_hdr,
                            const uint8_t* msg, size_t msg_len,
                            const uint64_t* hash_key) noexcept nogil

# Recompute the hash of a parsed record and compare with the stored one; 1 when it matches.
cdef bint record_hash_ok(const uint8_t* rec, const RecordView* view, const uint64_t* hash_key) noexcept nogil

cdef class StoreMsg:
    cdef readonly uint64_t seq    # stream sequence
    cdef readonly int64_t ts      # Unix ns
    cdef bytes _raw               # the record bytes (subject, headers and payload are views into it)
    cdef RecordView _view         # offsets into _raw
    cdef object _subject          # decoded subject, cached on first access
    cdef bint _mem_sized          # report memory-store sizes from size()

cdef StoreMsg make_store_msg(const uint8_t* rec, const RecordView* view, bint mem_sized)
