# cython: freethreading_compatible = False
"""JetStream deliveries read off a client connection, turned into block records (for the
Spark data source reading over NATS: jsstore.spark.natsclient), with no Python object per
message.

next_records(buffer, start, out, high) walks the complete MSG / HMSG frames of
buffer[start:].  A JetStream delivery (its reply subject is an ack subject, `$JS.ACK.`...,
which carries the stream sequence and the timestamp) with a sequence <= high is appended to
`out` as a message record in the block layout (jsstore._core.storage.record: length with the header
bit, seq, ts, subject length, subject, header length and header block when there is one,
payload, an 8-byte hash left zero), which BlockColumns reads like a block file.  The walk
stops, and returns, at the first of:

  - the end of the complete frames: event None (read more bytes, call again);
  - a control line (PING, PONG, +OK, -ERR ..., INFO ...): event is the line (bytes);
  - a message that is not a delivery (a status such as 404 / 408 / 100, an answer to a
    request): event (subject, reply or None, header block or None, payload), all bytes;
  - a delivery with a sequence above `high`: event is that sequence (int).

It returns (position after the last frame consumed, deliveries appended, the last sequence
appended or 0, event).
"""

from libc.string cimport memchr, memcmp, memcpy, memset
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize

cdef enum:
    MAX_TOKENS = 6                # HMSG <subject> <sid> <reply> <hdr size> <total size>
    HEAD_SIZE = 22                # u32 length, u64 seq, i64 ts, u16 subject length
    HASH_SIZE = 8

cdef uint32_t HEADER_BIT = 0x80000000u
cdef const char* ACK_PREFIX = b"$JS.ACK."


cdef inline bint _blank(uint8_t c) noexcept nogil:
    return c == 32 or c == 9


cdef int64_t _number(const uint8_t* s, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    """A non-negative decimal of digits only that fits an int64, or -1."""
    cdef uint64_t n = 0
    cdef Py_ssize_t i
    if end <= start or end - start > 19:
        return -1
    for i in range(start, end):
        if s[i] < 48 or s[i] > 57:
            return -1
        n = n * 10 + (s[i] - 48)
    if n > <uint64_t>0x7fffffffffffffff:
        return -1
    return <int64_t>n


cdef int _ack_metadata(const uint8_t* s, Py_ssize_t start, Py_ssize_t end,
                       int64_t* seq, int64_t* ts) noexcept nogil:
    """Sequence and timestamp of an ack subject (v1: 9 tokens, v2: domain and account hash
    after $JS.ACK); 0 on success, -1 when it is not one."""
    cdef Py_ssize_t starts[16]
    cdef Py_ssize_t ends[16]
    cdef int count = 0, seq_token, ts_token
    cdef Py_ssize_t i, at = start
    if end - start < 8 or memcmp(s + start, ACK_PREFIX, 8) != 0:
        return -1
    for i in range(start, end + 1):
        if i == end or s[i] == 46:
            if count == 16:
                return -1
            starts[count] = at
            ends[count] = i
            count += 1
            at = i + 1
    if count == 9:
        seq_token, ts_token = 5, 7
    elif count >= 11:
        seq_token, ts_token = 7, 9
    else:
        return -1
    seq[0] = _number(s, starts[seq_token], ends[seq_token])
    ts[0] = _number(s, starts[ts_token], ends[ts_token])
    if seq[0] < 0 or ts[0] < 0:
        return -1
    return 0


cdef int _append_record(bytearray out, int64_t seq, int64_t ts, const uint8_t* subject,
                        Py_ssize_t subject_len, const uint8_t* header, Py_ssize_t header_len,
                        const uint8_t* payload, Py_ssize_t payload_len) except -1:
    cdef Py_ssize_t length = HEAD_SIZE + subject_len + payload_len + HASH_SIZE
    cdef Py_ssize_t old = PyByteArray_GET_SIZE(out)
    cdef uint32_t head_length, header_len32
    cdef uint64_t useq = <uint64_t>seq
    cdef uint16_t subject_len16
    cdef uint8_t* p
    if header_len:
        length += 4 + header_len
    PyByteArray_Resize(out, old + length)
    p = <uint8_t*>PyByteArray_AS_STRING(out) + old
    head_length = <uint32_t>length | (HEADER_BIT if header_len else 0)
    memcpy(p, &head_length, 4)
    memcpy(p + 4, &useq, 8)
    memcpy(p + 12, &ts, 8)
    subject_len16 = <uint16_t>subject_len
    memcpy(p + 20, &subject_len16, 2)
    p += HEAD_SIZE
    memcpy(p, subject, subject_len)
    p += subject_len
    if header_len:
        header_len32 = <uint32_t>header_len
        memcpy(p, &header_len32, 4)
        memcpy(p + 4, header, header_len)
        p += 4 + header_len
    memcpy(p, payload, payload_len)
    memset(p + payload_len, 0, HASH_SIZE)
    return 0



cdef int _control_line(const uint8_t* s, Py_ssize_t pos, Py_ssize_t line_end, bint headers,
                       Py_ssize_t* starts, Py_ssize_t* ends, Py_ssize_t* total,
                       Py_ssize_t* header_size) except -1:
    """A MSG / HMSG control line from `pos` to `line_end`: its arguments after the verb
    split into starts/ends, the frame's total and header sizes set; returns how many
    arguments (with or without a reply).  A malformed line raises ValueError."""
    cdef int count = 0
    cdef Py_ssize_t i = pos + (5 if headers else 4), at
    while i < line_end:
        while i < line_end and _blank(s[i]):
            i += 1
        if i >= line_end:
            break
        if count == MAX_TOKENS:
            raise ValueError("malformed MSG line: " + bytes(s[pos:line_end]).decode(errors="replace"))
        at = i
        while i < line_end and not _blank(s[i]):
            i += 1
        starts[count] = at
        ends[count] = i
        count += 1
    if count != (5 if headers else 4) and count != (4 if headers else 3):
        raise ValueError("malformed MSG line: " + bytes(s[pos:line_end]).decode(errors="replace"))
    total[0] = _number(s, starts[count - 1], ends[count - 1])
    header_size[0] = _number(s, starts[count - 2], ends[count - 2]) if headers else 0
    if total[0] < 0 or header_size[0] < 0 or header_size[0] > total[0]:
        raise ValueError("malformed MSG line: " + bytes(s[pos:line_end]).decode(errors="replace"))
    return count


cdef enum:
    FRAME_INCOMPLETE = -2         # _next_frame: the frame's bytes are not all there yet
    FRAME_CONTROL = -3            # _next_frame: a line that is not MSG / HMSG


cdef int _next_frame(const uint8_t* s, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t* eol,
                     Py_ssize_t* line_end, bint* headers, Py_ssize_t* starts, Py_ssize_t* ends,
                     Py_ssize_t* total, Py_ssize_t* header_size) except -1:
    """The frame at `pos` of s[0:n]: FRAME_INCOMPLETE, FRAME_CONTROL (the line is
    s[pos:line_end], the next one starts after eol), or a complete MSG / HMSG frame: its
    control line's argument count (_control_line), its body at eol + 1."""
    cdef const uint8_t* found = <const uint8_t*>memchr(s + pos, 10, n - pos)
    cdef int count
    if found == NULL:
        return FRAME_INCOMPLETE
    eol[0] = found - s
    line_end[0] = eol[0]
    if line_end[0] > pos and s[line_end[0] - 1] == 13:
        line_end[0] -= 1
    headers[0] = line_end[0] - pos >= 5 and memcmp(s + pos, b"HMSG ", 5) == 0
    if not headers[0] and not (line_end[0] - pos >= 4 and memcmp(s + pos, b"MSG ", 4) == 0):
        return FRAME_CONTROL
    count = _control_line(s, pos, line_end[0], headers[0], starts, ends, total, header_size)
    if eol[0] + 1 + total[0] + 2 > n:
        return FRAME_INCOMPLETE
    return count


def next_records(bytearray buffer, Py_ssize_t start, bytearray out, uint64_t high):
    """(position, deliveries appended, last sequence appended, event): see the module."""
    cdef const uint8_t* s = <const uint8_t*>PyByteArray_AS_STRING(buffer)
    cdef Py_ssize_t n = PyByteArray_GET_SIZE(buffer)
    cdef Py_ssize_t pos = start, eol, line_end, body, total, header_size
    cdef Py_ssize_t starts[MAX_TOKENS]
    cdef Py_ssize_t ends[MAX_TOKENS]
    cdef int count, reply_token
    cdef bint headers
    cdef int64_t seq = 0, ts = 0
    cdef uint64_t last = 0
    cdef Py_ssize_t appended = 0
    cdef object reply
    while pos < n:
        count = _next_frame(s, n, pos, &eol, &line_end, &headers, starts, ends, &total,
                            &header_size)
        if count == FRAME_INCOMPLETE:
            break
        if count == FRAME_CONTROL:
            return eol + 1, appended, last, bytes(s[pos:line_end])
        body = eol + 1
        reply_token = 2 if count == (5 if headers else 4) else -1
        if reply_token > 0 and _ack_metadata(s, starts[2], ends[2], &seq, &ts) == 0:
            pos = body + total + 2
            if <uint64_t>seq > high:
                return pos, appended, last, seq
            _append_record(out, seq, ts, s + starts[0], ends[0] - starts[0],
                           s + body, header_size, s + body + header_size, total - header_size)
            appended += 1
            last = <uint64_t>seq
            continue
        reply = bytes(s[starts[2]:ends[2]]) if reply_token > 0 else None
        return (body + total + 2, appended, last,
                (bytes(s[starts[0]:ends[0]]), reply,
                 bytes(s[body:body + header_size]) if headers else None,
                 bytes(s[body + header_size:body + total])))
    return pos, appended, last, None


# -- batched direct gets -------------------------------------------------------------------
#
# next_direct_records(buffer, start, out, low, high) walks the answers to batched
# `$JS.API.DIRECT.GET.<stream>` requests ({"seq": N, "batch": B}, nats-server 2.11+) the same
# way.  Each message of a batch carries its stored header block (or a bare `NATS/1.0`) with
# Nats-Stream, Nats-Subject, Nats-Sequence, Nats-Time-Stamp (RFC 3339, UTC), Nats-Num-Pending
# and Nats-Last-Sequence appended; the record gets the subject, sequence and timestamp from
# them and the header block as stored (what precedes the last Nats-Stream line; none when
# that is the bare status line).  A message with a sequence below `low` is consumed and
# skipped (an overlapping batch); one above `high` ends the walk (event: its sequence); a
# status (204 EOB, 404, 408 ...) or any other message is the event (subject, reply, header
# block, payload), as in next_records.

cdef const char* BARE_STATUS = b"NATS/1.0\r\n"


cdef inline bint _starts(const uint8_t* s, Py_ssize_t at, Py_ssize_t end, const char* word,
                         Py_ssize_t size) noexcept nogil:
    return end - at >= size and memcmp(s + at, word, size) == 0


cdef int64_t _days_from_civil(int64_t y, int64_t m, int64_t d) noexcept nogil:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    cdef int64_t era, yoe, doy, doe
    if m <= 2:
        y -= 1
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef int _rfc3339_utc(const uint8_t* s, Py_ssize_t at, Py_ssize_t end,
                      int64_t* nanos) noexcept nogil:
    """Unix ns of `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (Go's RFC3339Nano in UTC); -1 if not."""
    cdef int64_t year, month, day, hour, minute, second, frac = 0
    cdef Py_ssize_t i, digits = 0
    if end - at < 20 or s[at + 4] != 45 or s[at + 7] != 45 or s[at + 10] != 84 \
            or s[at + 13] != 58 or s[at + 16] != 58 or s[end - 1] != 90:
        return -1
    year = _number(s, at, at + 4)
    month = _number(s, at + 5, at + 7)
    day = _number(s, at + 8, at + 10)
    hour = _number(s, at + 11, at + 13)
    minute = _number(s, at + 14, at + 16)
    second = _number(s, at + 17, at + 19)
    if year < 0 or month < 1 or month > 12 or day < 1 or day > 31 or hour < 0 or hour > 23 \
            or minute < 0 or minute > 59 or second < 0 or second > 60:
        return -1
    i = at + 19
    if i < end - 1:
        if s[i] != 46:
            return -1
        i += 1
        while i < end - 1:
            if s[i] < 48 or s[i] > 57 or digits == 9:
                return -1
            frac = frac * 10 + (s[i] - 48)
            digits += 1
            i += 1
        if digits == 0:
            return -1
        while digits < 9:
            frac *= 10
            digits += 1
    nanos[0] = ((_days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60
                 + second) * 1000000000 + frac)
    return 0


cdef int _direct_metadata(const uint8_t* s, Py_ssize_t start, Py_ssize_t end,
                          int64_t* seq, int64_t* ts, Py_ssize_t* subject_at,
                          Py_ssize_t* subject_len, Py_ssize_t* stored_len) noexcept nogil:
    """From a direct get header block s[start:end]: sequence, timestamp, the subject's span
    and the length of the stored header block before the appended fields (0: none);
    -1 when it is not a message (a status) or a field is missing."""
    cdef Py_ssize_t pos, eol, cut = -1
    cdef const uint8_t* found
    cdef bint has_seq = False, has_ts = False, has_subject = False
    if end - start < 12 or memcmp(s + start, BARE_STATUS, 10) != 0:
        return -1
    pos = start + 10
    while pos < end:
        found = <const uint8_t*>memchr(s + pos, 10, end - pos)
        if found == NULL:
            break
        eol = found - s
        if eol - 1 <= pos:            # the empty line that ends the block
            break
        if _starts(s, pos, eol - 1, b"Nats-Stream: ", 13):
            cut = pos
            has_seq = has_ts = has_subject = False
        elif cut >= 0 and _starts(s, pos, eol - 1, b"Nats-Subject: ", 14):
            subject_at[0] = pos + 14
            subject_len[0] = eol - 1 - (pos + 14)
            has_subject = True
        elif cut >= 0 and _starts(s, pos, eol - 1, b"Nats-Sequence: ", 15):
            seq[0] = _number(s, pos + 15, eol - 1)
            has_seq = seq[0] >= 0
        elif cut >= 0 and _starts(s, pos, eol - 1, b"Nats-Time-Stamp: ", 17):
            has_ts = _rfc3339_utc(s, pos + 17, eol - 1, ts) == 0
        pos = eol + 1
    if cut < 0 or not (has_seq and has_ts and has_subject):
        return -1
    # the stored block is what precedes the appended fields, closed by an empty line
    stored_len[0] = 0 if cut == start + 10 else cut - start + 2
    return 0


def next_direct_records(bytearray buffer, Py_ssize_t start, bytearray out, uint64_t low,
                        uint64_t high):
    """(position, records appended, last sequence appended, event): see above."""
    cdef const uint8_t* s = <const uint8_t*>PyByteArray_AS_STRING(buffer)
    cdef Py_ssize_t n = PyByteArray_GET_SIZE(buffer)
    cdef Py_ssize_t pos = start, eol, line_end, body, total, header_size
    cdef Py_ssize_t subject_at = 0, subject_len = 0, stored_len = 0
    cdef Py_ssize_t starts[MAX_TOKENS]
    cdef Py_ssize_t ends[MAX_TOKENS]
    cdef int count
    cdef bint headers
    cdef int64_t seq = 0, ts = 0
    cdef uint64_t last = 0
    cdef Py_ssize_t appended = 0
    cdef bytearray stored
    while pos < n:
        count = _next_frame(s, n, pos, &eol, &line_end, &headers, starts, ends, &total,
                            &header_size)
        if count == FRAME_INCOMPLETE:
            break
        if count == FRAME_CONTROL:
            return eol + 1, appended, last, bytes(s[pos:line_end])
        body = eol + 1
        if headers and _direct_metadata(s, body, body + header_size, &seq, &ts, &subject_at,
                                        &subject_len, &stored_len) == 0:
            pos = body + total + 2
            if <uint64_t>seq < low:
                continue
            if <uint64_t>seq > high:
                return pos, appended, last, seq
            if stored_len:
                # the stored block without its closing CRLF, then the CRLF again
                stored = bytearray(s[body:body + stored_len])
                stored[stored_len - 2] = 13
                stored[stored_len - 1] = 10
                _append_record(out, seq, ts, s + subject_at, subject_len,
                               <const uint8_t*>PyByteArray_AS_STRING(stored), stored_len,
                               s + body + header_size, total - header_size)
            else:
                _append_record(out, seq, ts, s + subject_at, subject_len, NULL, 0,
                               s + body + header_size, total - header_size)
            appended += 1
            last = <uint64_t>seq
            low = last + 1
            continue
        return (body + total + 2, appended, last,
                (bytes(s[starts[0]:ends[0]]),
                 bytes(s[starts[2]:ends[2]]) if count == (5 if headers else 4) else None,
                 bytes(s[body:body + header_size]) if headers else None,
                 bytes(s[body + header_size:body + total])))
    return pos, appended, last, None
