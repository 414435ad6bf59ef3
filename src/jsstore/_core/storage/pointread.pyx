"""Point reads of unloaded blocks: scan record headers from a mark, pread one record."""

from libc.stdint cimport uint8_t, uint32_t
from libc.stdlib cimport malloc, realloc, free
from posix.fcntl cimport open, O_RDONLY, O_CLOEXEC
from posix.unistd cimport pread, close
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from jsstore._core.storage.record cimport (record_parse, record_hash_ok, rec_get_u32,
                                           RECORD_HDR_SIZE, RECORD_LEN_MASK, RECORD_MAX_LEN)
from jsstore._core.storage.block cimport MARK_EVERY
import os

# bytes read at a time: a scan from a mark covers up to MARK_EVERY records, half on average
cdef size_t CHUNK = 4096
# give up (and load the block) past this much scanning: tombstones between two marks
cdef size_t SCAN_LIMIT = 1 << 20


cdef ssize_t _read_at(int fd, uint8_t** buf, size_t* cap, size_t want, size_t off) noexcept:
    """pread want bytes at off into buf (grown to fit); bytes read, -1 on an error."""
    cdef uint8_t* nb
    cdef ssize_t n
    cdef size_t got = 0
    if want > cap[0]:
        nb = <uint8_t*>realloc(buf[0], want)
        if nb == NULL:
            return -1
        buf[0] = nb
        cap[0] = want
    while got < want:
        n = pread(fd, buf[0] + got, want - got, off + got)
        if n < 0:
            return -1
        if n == 0:
            break
        got += n
    return got


cdef object read_record(MsgBlock mb, uint64_t seq, SubjectIndex psim, RecordView* view,
                        int64_t* sid):
    cdef size_t off, pos = 0, avail, scanned = 0, cap = 0
    cdef ssize_t got
    cdef uint32_t length
    cdef size_t j
    cdef const uint8_t* p
    cdef uint8_t* buf = NULL
    cdef bytes path, rec
    cdef int fd
    if mb.marks == NULL or mb.compression != 0 or mb.damaged or mb.path is None:
        return None
    if seq < mb.first_seq or seq > mb.last_seq or seq < mb.marks_first or mb.deleted.c_exists(seq):
        return None
    if mb.peek is not None and mb.peek_seq == seq:
        record_parse(<const uint8_t*>PyBytes_AS_STRING(mb.peek), len(mb.peek), view)
        sid[0] = mb.peek_sid
        return mb.peek
    j = (seq - mb.marks_first) // MARK_EVERY
    if j >= mb.n_marks:
        j = mb.n_marks - 1
    off = mb.marks[j]
    path = os.fsencode(mb.path)
    fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0:
        return None
    try:
        got = _read_at(fd, &buf, &cap, CHUNK, off)
        if got < 0:
            return None
        while scanned < SCAN_LIMIT:
            avail = <size_t>got - pos
            if avail < RECORD_HDR_SIZE:
                if <size_t>got < CHUNK:
                    return None               # end of file
                off += pos
                pos = 0
                got = _read_at(fd, &buf, &cap, CHUNK, off)
                if got < <ssize_t>RECORD_HDR_SIZE:
                    return None
                continue
            p = buf + pos
            length = rec_get_u32(p) & RECORD_LEN_MASK
            if length < RECORD_HDR_SIZE or length > RECORD_MAX_LEN:
                return None
            if length > avail:
                off += pos
                pos = 0
                got = _read_at(fd, &buf, &cap, length if length > CHUNK else CHUNK, off)
                if got < <ssize_t>length:
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
        close(fd)
        free(buf)
