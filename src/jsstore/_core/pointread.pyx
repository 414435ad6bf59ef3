"""Point reads of unloaded blocks: scan record headers from a mark, pread one record."""

from libc.stdint cimport uint8_t, uint32_t
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from jsstore._core.record cimport (record_parse, record_hash_ok, rec_get_u32, RECORD_HDR_SIZE,
                                   RECORD_LEN_MASK, RECORD_MAX_LEN)
from jsstore._core.block cimport MARK_EVERY
import os

# bytes read at a time; a scan from a mark covers MARK_EVERY records, most in one read
cdef Py_ssize_t CHUNK = 16384
# give up (and load the block) past this much scanning: tombstones between two marks
cdef Py_ssize_t SCAN_LIMIT = 1 << 20


cdef object read_record(MsgBlock mb, uint64_t seq, SubjectIndex psim, RecordView* view,
                        int64_t* sid):
    cdef Py_ssize_t off, pos, avail, scanned = 0
    cdef uint32_t length
    cdef size_t j
    cdef const uint8_t* p
    cdef bytes chunk, rec
    if mb.marks == NULL or mb.compression != 0 or mb.damaged or mb.path is None:
        return None
    if seq < mb.first_seq or seq > mb.last_seq or seq < mb.marks_first or mb.deleted.c_exists(seq):
        return None
    if mb.peek is not None and mb.peek_seq == seq:
        p = <const uint8_t*>PyBytes_AS_STRING(mb.peek)
        record_parse(p, len(mb.peek), view)
        sid[0] = mb.peek_sid
        return mb.peek
    j = (seq - mb.marks_first) // MARK_EVERY
    if j >= mb.n_marks:
        j = mb.n_marks - 1
    off = mb.marks[j]
    try:
        fd = os.open(mb.path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunk = os.pread(fd, CHUNK, off)
        pos = 0
        while scanned < SCAN_LIMIT:
            avail = len(chunk) - pos
            if avail < RECORD_HDR_SIZE:
                if avail == 0 and len(chunk) < CHUNK:
                    return None               # end of file
                off += pos
                chunk = os.pread(fd, CHUNK, off)
                pos = 0
                if len(chunk) < RECORD_HDR_SIZE:
                    return None
                continue
            p = <const uint8_t*>PyBytes_AS_STRING(chunk) + pos
            length = rec_get_u32(p) & RECORD_LEN_MASK
            if length < RECORD_HDR_SIZE or length > RECORD_MAX_LEN:
                return None
            if length > <uint32_t>avail:
                off += pos
                chunk = os.pread(fd, max(<Py_ssize_t>length, CHUNK), off)
                pos = 0
                if len(chunk) < length:
                    return None
                continue
            if record_parse(p, length, view) != 0:
                return None
            if not view.tombstone:
                if view.seq > seq:
                    return None
                if view.seq == seq:
                    if view.erased or not record_hash_ok(p, view, mb.hash_key):
                        return None
                    sid[0] = psim.c_find(<const char*>p + view.subj_off, view.subj_len)
                    if sid[0] < 0:
                        return None
                    rec = PyBytes_FromStringAndSize(<const char*>p, length)
                    mb.peek = rec
                    mb.peek_seq = seq
                    mb.peek_sid = sid[0]
                    return rec
            pos += length
            scanned += length
        return None
    finally:
        os.close(fd)
