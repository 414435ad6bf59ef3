# cython: freethreading_compatible = False
"""Record encode/parse/verify and the StoreMsg returned by every load."""

from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcpy
from jsstore._core.storage.hashing cimport hh_state, hh_init, hh_update, hh_final64


cdef int record_parse(const uint8_t* buf, size_t avail, RecordView* out) noexcept nogil:
    cdef uint32_t raw_len, length, pos
    cdef uint64_t raw_seq
    if avail < RECORD_EMPTY_LEN:
        return -1
    raw_len = rec_get_u32(buf)
    length = raw_len & RECORD_LEN_MASK
    if length < RECORD_EMPTY_LEN or length > RECORD_MAX_LEN or length > avail:
        return -1
    out.length = length
    out.has_hdr = (raw_len & RECORD_HDR_BIT) != 0
    raw_seq = rec_get_u64(buf + RECORD_OFF_SEQ)
    out.erased = (raw_seq & SEQ_ERASE_BIT) != 0
    out.tombstone = (raw_seq & SEQ_TOMB_BIT) != 0
    out.seq = raw_seq & SEQ_MASK
    out.ts = <int64_t>rec_get_u64(buf + RECORD_OFF_TS)
    out.subj_off = RECORD_OFF_SUBJ
    out.subj_len = rec_get_u16(buf + RECORD_OFF_SUBJ_LEN)
    pos = RECORD_OFF_SUBJ + out.subj_len
    if <uint64_t>pos + RECORD_HASH_SIZE > length:
        return -1
    if out.has_hdr:
        if <uint64_t>pos + 4 + RECORD_HASH_SIZE > length:
            return -1
        out.hdr_len = rec_get_u32(buf + pos)
        pos += 4
        if <uint64_t>pos + out.hdr_len + RECORD_HASH_SIZE > length:
            return -1
        out.hdr_off = pos
        pos += out.hdr_len
    else:
        out.hdr_off = pos
        out.hdr_len = 0
    out.msg_off = pos
    out.msg_len = length - RECORD_HASH_SIZE - pos
    return 0


cdef inline uint64_t _hash_parts(const uint8_t* rec, const uint8_t* subj, size_t subj_len,
                                 const uint8_t* hdr, size_t hdr_len,
                                 const uint8_t* msg, size_t msg_len,
                                 const uint64_t* hash_key) noexcept nogil:
    cdef hh_state state
    hh_init(&state, hash_key)
    hh_update(&state, rec + RECORD_OFF_SEQ, 16)
    if subj_len:
        hh_update(&state, subj, subj_len)
    if hdr_len:
        hh_update(&state, hdr, hdr_len)
    if msg_len:
        hh_update(&state, msg, msg_len)
    return hh_final64(&state)


cdef uint32_t record_encode(uint8_t* out, uint64_t seq_bits, int64_t ts,
                            const uint8_t* subj, size_t subj_len,
                            const uint8_t* hdr, size_t hdr_len, bint has_hdr,
                            const uint8_t* msg, size_t msg_len,
                            const uint64_t* hash_key) noexcept nogil:
    cdef uint32_t length = <uint32_t>rec_size(subj_len, hdr_len, msg_len, has_hdr)
    cdef uint32_t pos = RECORD_OFF_SUBJ
    cdef uint8_t* hdr_dst = out
    cdef uint8_t* msg_dst
    rec_put_u32(out, length | (RECORD_HDR_BIT if has_hdr else 0))
    rec_put_u64(out + RECORD_OFF_SEQ, seq_bits)
    rec_put_u64(out + RECORD_OFF_TS, <uint64_t>ts)
    rec_put_u16(out + RECORD_OFF_SUBJ_LEN, <uint16_t>subj_len)
    if subj_len:
        memcpy(out + pos, subj, subj_len)
    pos += subj_len
    if has_hdr:
        rec_put_u32(out + pos, <uint32_t>hdr_len)
        pos += 4
        hdr_dst = out + pos
        if hdr_len:
            memcpy(hdr_dst, hdr, hdr_len)
        pos += hdr_len
    msg_dst = out + pos
    if msg_len:
        memcpy(msg_dst, msg, msg_len)
    pos += msg_len
    rec_put_u64(out + pos, _hash_parts(out, out + RECORD_OFF_SUBJ, subj_len,
                                        hdr_dst, hdr_len if has_hdr else 0,
                                        msg_dst, msg_len, hash_key))
    return length


cdef bint record_hash_ok(const uint8_t* rec, const RecordView* view, const uint64_t* hash_key) noexcept nogil:
    cdef uint64_t computed = _hash_parts(rec, rec + view.subj_off, view.subj_len,
                                         rec + view.hdr_off, view.hdr_len,
                                         rec + view.msg_off, view.msg_len, hash_key)
    return computed == rec_get_u64(rec + view.length - RECORD_HASH_SIZE)


cdef StoreMsg make_store_msg(const uint8_t* rec, const RecordView* view, bint mem_sized):
    cdef StoreMsg sm = StoreMsg.__new__(StoreMsg)
    sm.seq = view.seq
    sm.ts = view.ts
    sm._raw = PyBytes_FromStringAndSize(<const char*>rec, view.length)
    sm._view = view[0]
    sm._mem_sized = mem_sized
    return sm


cdef class StoreMsg:
    """A stored message: ``subject``, ``hdr`` (raw header block or None), ``msg``, ``seq``, ``ts``.

    Holds one copy of the record; the parts are sliced out on first access.
    """

    def __init__(self, subject, hdr, msg, seq=0, ts=0):
        # Built by hand (tests, the memory side of the Python layer): encode it as a record.
        cdef bytes subj_b = (subject.encode("utf-8", "surrogateescape") if isinstance(subject, str)
                              else bytes(subject))
        cdef bytes hdr_b = bytes(hdr) if hdr is not None else b""
        cdef bytes msg_b = bytes(msg) if msg is not None else b""
        cdef uint64_t zero_key[4]
        cdef bint has_hdr = hdr is not None
        zero_key[0] = zero_key[1] = zero_key[2] = zero_key[3] = 0
        cdef size_t n = rec_size(len(subj_b), len(hdr_b), len(msg_b), has_hdr)
        raw = PyBytes_FromStringAndSize(NULL, n)
        record_encode(<uint8_t*>PyBytes_AS_STRING(raw), seq, ts,
                      <const uint8_t*>PyBytes_AS_STRING(subj_b), len(subj_b),
                      <const uint8_t*>PyBytes_AS_STRING(hdr_b), len(hdr_b), has_hdr,
                      <const uint8_t*>PyBytes_AS_STRING(msg_b), len(msg_b), zero_key)
        self._raw = raw
        record_parse(<const uint8_t*>PyBytes_AS_STRING(raw), n, &self._view)
        self.seq = seq
        self.ts = ts

    @property
    def subject(self):
        if self._subject is None:
            self._subject = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(self._raw) + self._view.subj_off,
                                                 self._view.subj_len, "surrogateescape")
        return self._subject

    @property
    def subject_bytes(self):
        return self._raw[self._view.subj_off:self._view.subj_off + self._view.subj_len]

    @property
    def hdr(self):
        if not self._view.has_hdr:
            return None
        return self._raw[self._view.hdr_off:self._view.hdr_off + self._view.hdr_len]

    @property
    def msg(self):
        return self._raw[self._view.msg_off:self._view.msg_off + self._view.msg_len]

    @property
    def data(self):
        return self.msg

    @property
    def record(self):
        """The raw record bytes as stored (file layout, including the hash)."""
        return self._raw

    def size(self):
        """Bytes this message counts for in the stream's accounting."""
        if self._mem_sized:
            return self._view.subj_len + self._view.hdr_len + self._view.msg_len + 16
        return self._view.length

    def __eq__(self, other):
        if not isinstance(other, StoreMsg):
            return NotImplemented
        return (self.seq == other.seq and self.ts == other.ts and self.subject == other.subject
                and self.hdr == other.hdr and self.msg == other.msg)

    def __repr__(self):
        return (f"StoreMsg(seq={self.seq}, ts={self.ts}, subject={self.subject!r}, "
                f"hdr={self.hdr!r}, msg={self.msg[:32]!r}{'...' if self._view.msg_len > 32 else ''})")


def message_size(size_t subj_len, size_t hdr_len, size_t msg_len, bint has_hdr,
                 bint memory=False):
    """The bytes one message counts for in a stream's state and its account's usage, as
    nats-server counts them: its record's length in a file store; subject, header and
    payload plus 16 in a memory store."""
    if memory:
        return subj_len + hdr_len + msg_len + 16
    return rec_size(subj_len, hdr_len, msg_len, has_hdr)
