# cython: language_level=3, boundscheck=False, wraparound=False
"""The NATS client protocol: the parser of what clients send and the frames the server
sends back (see protocol.pxd for the operations and the error model)."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.string cimport memchr, memcmp, memcpy

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)

PING_FRAME = b"PING\r\n"
PONG_FRAME = b"PONG\r\n"
OK_FRAME = b"+OK\r\n"

UNKNOWN_OPERATION = "Unknown Protocol Operation"
MAX_CONTROL_LINE = "maximum control line exceeded"   # ErrMaxControlLine, as sent
MAX_PAYLOAD = "Maximum Payload Violation"

DEFAULT_MAX_CONTROL_LINE = 4096      # MAX_CONTROL_LINE_SIZE
DEFAULT_MAX_PAYLOAD = 1024 * 1024    # MAX_PAYLOAD_SIZE

# what operations and errors are called in Python
PUB, SUB, UNSUB, CONNECT, PING, PONG, OK, ERR, INFO = (
    OP_PUB, OP_SUB, OP_UNSUB, OP_CONNECT, OP_PING, OP_PONG, OP_OK, OP_ERR, OP_INFO)
SEND, CLOSE = ERR_SEND, ERR_CLOSE


cdef inline bint _is_space(unsigned char c) noexcept nogil:
    return c == 32 or c == 9


cdef inline bint _is_split(unsigned char c) noexcept nogil:
    return c == 32 or c == 9 or c == 13 or c == 10


cdef inline unsigned char _upper(unsigned char c) noexcept nogil:
    return c - 32 if 97 <= c <= 122 else c


cdef inline bint _word(const unsigned char* s, Py_ssize_t at, Py_ssize_t end,
                       const char* word, Py_ssize_t length) noexcept nogil:
    """Whether s[at:at+length] spells `word` in any case (and lies before end)."""
    cdef Py_ssize_t i
    if at + length > end:
        return False
    for i in range(length):
        if _upper(s[at + i]) != <unsigned char>word[i]:
            return False
    return True


cdef Py_ssize_t _size(const unsigned char* s, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    """nats-server's parseSize: the decimal digits in s[start:end], -1 if any is not one
    (or there are none, or there are too many)."""
    cdef Py_ssize_t n = 0, i
    if end <= start or end - start > 18:
        return -1
    for i in range(start, end):
        if s[i] < 48 or s[i] > 57:
            return -1
        n = n * 10 + (s[i] - 48)
    return n


cdef list _split(const unsigned char* s, Py_ssize_t start, Py_ssize_t end):
    """The argument tokens of a control line: (start, end) pairs split on spaces, tabs, CR
    and LF, as processPub / processSub split them."""
    cdef list out = []
    cdef Py_ssize_t i = start, at
    while i < end:
        while i < end and _is_split(s[i]):
            i += 1
        if i >= end:
            break
        at = i
        while i < end and not _is_split(s[i]):
            i += 1
        out.append((at, i))
    return out


cdef Py_ssize_t _verb_prefix_ok(const unsigned char* s, Py_ssize_t start, Py_ssize_t end) noexcept nogil:
    """For a control line not complete yet: 1 when its first bytes can still begin an
    operation a client may send, 0 when nats-server would already have refused them."""
    cdef const char* words[10]
    words[0] = b"PUB"; words[1] = b"HPUB"; words[2] = b"SUB"; words[3] = b"UNSUB"
    words[4] = b"CONNECT"; words[5] = b"PING"; words[6] = b"PONG"; words[7] = b"+OK"
    words[8] = b"-ERR"; words[9] = b"INFO"
    cdef Py_ssize_t length = end - start, w, i, wl
    cdef bint match
    for w in range(10):
        wl = 0
        while words[w][wl] != 0:
            wl += 1
        match = True
        for i in range(min(length, wl)):
            if _upper(s[start + i]) != <unsigned char>words[w][i]:
                match = False
                break
        if match:
            return 1
    return 0


cdef class Parser:
    """One connection's inbound protocol (see protocol.pxd)."""

    def __init__(self, Py_ssize_t max_control_line=DEFAULT_MAX_CONTROL_LINE,
                 Py_ssize_t max_payload=DEFAULT_MAX_PAYLOAD):
        self.pending = bytearray()
        self.max_control_line = max_control_line
        self.max_payload = max_payload
        self.error = None
        self.subjects = {}

    cdef str _text(self, const unsigned char* s, Py_ssize_t start, Py_ssize_t end):
        cdef bytes key = s[start:end]
        cdef object found = self.subjects.get(key)
        if found is not None:
            return <str>found
        text = key.decode("utf-8", "surrogateescape")
        if len(self.subjects) < 4096:
            self.subjects[key] = text
        return text

    cdef int _fail(self, int kind, str text) except -1:
        self.error = (kind, text)
        return 0

    def feed(self, data):
        """Every operation completed by `data` (see protocol.pxd); sets `error` on a
        protocol violation and returns the operations before it."""
        cdef list ops = []
        if self.error is not None:
            return ops
        cdef bytes buf
        if self.pending:
            self.pending += data
            buf = bytes(self.pending)
            self.pending = bytearray()
        else:
            buf = bytes(data)
        cdef const unsigned char* s = buf
        cdef Py_ssize_t n = len(buf), pos = 0, eol, arg, arg_end, line_len
        cdef const unsigned char* found
        cdef unsigned char c0
        cdef Py_ssize_t consumed
        while pos < n:
            found = <const unsigned char*>memchr(s + pos, 10, n - pos)
            if found == NULL:
                if not _verb_prefix_ok(s, pos, min(n, pos + 8)):
                    self._fail(ERR_SEND, UNKNOWN_OPERATION)
                    return ops
                if n - pos > self.max_control_line:
                    self._fail(ERR_SEND, MAX_CONTROL_LINE)
                    return ops
                break
            eol = found - s
            if eol - pos > self.max_control_line + 1:
                # a whole control line over the limit (its CR not counted): nats-server
                # refuses one that reaches it in pieces, as a line that long from a new
                # connection does (its first reads are small)
                self._fail(ERR_SEND, MAX_CONTROL_LINE)
                return ops
            c0 = _upper(s[pos])
            consumed = self._operation(ops, s, n, pos, eol, c0)
            if consumed < 0:
                return ops              # error set
            if consumed == 0:
                break                   # the payload is not all here yet
            pos = consumed
        if pos < n:
            self.pending += buf[pos:]
        return ops

    def leading_acks(self, data, list acks):
        """Take the plain acks `data` starts with: ``PUB $JS.ACK.<...> 0`` with an empty or
        ``+ACK`` payload, no reply, written the one plain way (``PUB``, single spaces,
        CRLF), each subject appended to `acks` as feed() would give it.  Stops at the
        first frame that is anything else or incomplete (and takes nothing while the
        parser holds part of a frame or has failed).  Returns (bytes consumed, acks
        taken, payload bytes)."""
        if self.error is not None or self.pending or type(data) is not bytes:
            return 0, 0, 0
        cdef const unsigned char* s = data
        cdef Py_ssize_t n = len(<bytes>data), pos = 0, i, subject_end, size, body
        cdef Py_ssize_t line_limit = self.max_control_line // 2
        cdef Py_ssize_t count = 0, total = 0
        while n - pos >= 4 + 8 + 2 + 2 + 2:
            if memcmp(s + pos, b"PUB $JS.ACK.", 12) != 0:
                break
            i = pos + 12
            while i < n and s[i] != 32 and s[i] != 9 and s[i] != 13 and s[i] != 10:
                i += 1
            subject_end = i
            if i >= n or s[i] != 32:
                break
            i += 1
            size = 0
            while i < n and 48 <= s[i] <= 57 and i - subject_end < 4:
                size = size * 10 + (s[i] - 48)
                i += 1
            if i + 1 >= n or s[i] != 13 or s[i + 1] != 10 or s[i - 1] == 32:
                break
            if (size != 0 and size != 4) or i + 2 - pos > line_limit or size > self.max_payload:
                break
            body = i + 2
            if body + size + 2 > n or s[body + size] != 13 or s[body + size + 1] != 10:
                break
            if size == 4 and memcmp(s + body, b"+ACK", 4) != 0:
                break
            acks.append(self._text(s, pos + 4, subject_end))
            count += 1
            total += size
            pos = body + size + 2
        return pos, count, total

    cdef Py_ssize_t _arg_end(self, const unsigned char* s, Py_ssize_t arg, Py_ssize_t eol):
        """Where an argument ends: before the LF, one byte earlier when a CR came in it
        (nats-server's drop)."""
        cdef Py_ssize_t i
        for i in range(arg, eol):
            if s[i] == 13:
                return eol - 1 if eol - 1 >= arg else arg
        return eol

    cdef Py_ssize_t _operation(self, list ops, const unsigned char* s, Py_ssize_t n,
                               Py_ssize_t pos, Py_ssize_t eol, unsigned char c0) except -2:
        """One operation whose control line is s[pos:eol+1]: the position after it, 0 when
        its payload is not complete, -1 on an error."""
        cdef Py_ssize_t arg
        if c0 == 80:          # P
            if _word(s, pos, eol, b"PUB", 3):
                if pos + 3 >= eol or not _is_space(s[pos + 3]):
                    return self._unknown()
                return self._pub(ops, s, n, pos + 4, eol, False)
            if _word(s, pos, eol, b"PING", 4):
                ops.append((OP_PING,))
                return eol + 1
            if _word(s, pos, eol, b"PONG", 4):
                ops.append((OP_PONG,))
                return eol + 1
            return self._unknown()
        if c0 == 72:          # H
            if _word(s, pos, eol, b"HPUB", 4) and pos + 4 < eol and _is_space(s[pos + 4]):
                return self._pub(ops, s, n, pos + 5, eol, True)
            return self._unknown()
        if c0 == 83:          # S
            if _word(s, pos, eol, b"SUB", 3) and pos + 3 < eol and _is_space(s[pos + 3]):
                return self._sub(ops, s, pos + 4, eol)
            return self._unknown()
        if c0 == 85:          # U
            if _word(s, pos, eol, b"UNSUB", 5) and pos + 5 < eol and _is_space(s[pos + 5]):
                return self._unsub(ops, s, pos + 6, eol)
            return self._unknown()
        if c0 == 67:          # C
            if _word(s, pos, eol, b"CONNECT", 7):
                arg = pos + 7
                while arg < eol and _is_space(s[arg]):
                    arg += 1
                ops.append((OP_CONNECT, s[arg:self._arg_end(s, arg, eol)]))
                return eol + 1
            return self._unknown()
        if c0 == 73:          # I
            if _word(s, pos, eol, b"INFO", 4):
                arg = pos + 4
                while arg < eol and _is_space(s[arg]):
                    arg += 1
                ops.append((OP_INFO, s[arg:self._arg_end(s, arg, eol)]))
                return eol + 1
            return self._unknown()
        if c0 == 43:          # +
            if _word(s, pos, eol, b"+OK", 3):
                ops.append((OP_OK,))
                return eol + 1
            return self._unknown()
        if c0 == 45:          # -
            if _word(s, pos, eol, b"-ERR", 4) and pos + 4 < eol and _is_space(s[pos + 4]):
                arg = pos + 5
                while arg < eol and _is_space(s[arg]):
                    arg += 1
                ops.append((OP_ERR, s[arg:self._arg_end(s, arg, eol)].decode(
                    "utf-8", "replace")))
                return eol + 1
            return self._unknown()
        return self._unknown()

    cdef Py_ssize_t _unknown(self) except -2:
        self._fail(ERR_SEND, UNKNOWN_OPERATION)
        return -1

    cdef Py_ssize_t _pub(self, list ops, const unsigned char* s, Py_ssize_t n,
                         Py_ssize_t arg, Py_ssize_t eol, bint headers) except -2:
        cdef list tokens = _split(s, arg, self._arg_end(s, arg, eol))
        cdef Py_ssize_t count = len(tokens), size, hsize = 0, start, end
        cdef object reply = None
        cdef Py_ssize_t base = 1 if headers else 0
        if count == 2 + base:
            pass
        elif count == 3 + base:
            start, end = tokens[1]
            reply = self._text(s, start, end)
        else:
            self._fail(ERR_CLOSE, "processPub Parse Error")
            return -1
        start, end = tokens[count - 1]
        size = _size(s, start, end)
        if size < 0:
            self._fail(ERR_CLOSE, "processPub Bad or Missing Size")
            return -1
        if headers:
            start, end = tokens[count - 2]
            hsize = _size(s, start, end)
            if hsize < 0 or hsize > size:
                self._fail(ERR_CLOSE, "processHeaderPub Bad or Missing Header Size")
                return -1
        if self.max_payload >= 0 and size > self.max_payload:
            self._fail(ERR_SEND, MAX_PAYLOAD)
            return -1
        cdef Py_ssize_t body = eol + 1
        if body + size + 2 > n:
            return 0
        if s[body + size] != 13 or s[body + size + 1] != 10:
            return self._unknown()
        start, end = tokens[0]
        subject = self._text(s, start, end)
        if headers:
            ops.append((OP_PUB, subject, reply, s[body:body + hsize],
                        s[body + hsize:body + size]))
        else:
            ops.append((OP_PUB, subject, reply, None, s[body:body + size]))
        return body + size + 2

    cdef Py_ssize_t _sub(self, list ops, const unsigned char* s, Py_ssize_t arg,
                         Py_ssize_t eol) except -2:
        cdef list tokens = _split(s, arg, self._arg_end(s, arg, eol))
        cdef Py_ssize_t count = len(tokens)
        if count == 2:
            ops.append((OP_SUB, self._text(s, tokens[0][0], tokens[0][1]), None,
                        self._text(s, tokens[1][0], tokens[1][1])))
        elif count == 3:
            ops.append((OP_SUB, self._text(s, tokens[0][0], tokens[0][1]),
                        self._text(s, tokens[1][0], tokens[1][1]),
                        self._text(s, tokens[2][0], tokens[2][1])))
        else:
            self._fail(ERR_CLOSE, "processSub Parse Error")
            return -1
        return eol + 1

    cdef Py_ssize_t _unsub(self, list ops, const unsigned char* s, Py_ssize_t arg,
                           Py_ssize_t eol) except -2:
        cdef list tokens = _split(s, arg, self._arg_end(s, arg, eol))
        cdef Py_ssize_t count = len(tokens), limit = 0
        if count == 2:
            limit = _size(s, tokens[1][0], tokens[1][1])
            if limit < 0:
                self._fail(ERR_CLOSE, "processUnsub Bad maximum")
                return -1
        elif count != 1:
            self._fail(ERR_CLOSE, "processUnsub Parse Error")
            return -1
        ops.append((OP_UNSUB, self._text(s, tokens[0][0], tokens[0][1]), limit))
        return eol + 1


# -- frames ----------------------------------------------------------------------------------
def info_frame(bytes payload):
    """INFO <json>\\r\\n."""
    return b"INFO " + payload + b"\r\n"


def err_frame(str text):
    """-ERR '<text>'\\r\\n."""
    return b"-ERR '" + text.encode() + b"'\r\n"


cdef inline bytes _wire(str text):
    """A subject (or reply, or sid) as its bytes on the wire: UTF-8, surrogate-escaped
    bytes given back (a subject may be any bytes, as on nats-server)."""
    return text.encode("utf-8", "surrogateescape")


cdef inline const char* _chars(object text, Py_ssize_t* n) except NULL:
    """The bytes of an ASCII str (its own UTF-8) or of bytes (what _wire made)."""
    if type(text) is bytes:
        n[0] = PyBytes_GET_SIZE(text)
        return PyBytes_AS_STRING(text)
    return PyUnicode_AsUTF8AndSize(text, n)


def msg_frame(str subject, str sid, object reply, object hdr, bytes payload):
    """One MSG (or HMSG when there are headers) to a subscriber."""
    cdef bytes subj = _wire(subject), s = _wire(sid)
    cdef Py_ssize_t total
    if hdr:
        total = len(<bytes>hdr) + len(payload)
        if reply:
            return b"HMSG %s %s %s %d %d\r\n%s%s\r\n" % (
                subj, s, _wire(reply), len(<bytes>hdr), total, hdr, payload)
        return b"HMSG %s %s %d %d\r\n%s%s\r\n" % (subj, s, len(<bytes>hdr), total, hdr,
                                                    payload)
    if reply:
        return b"MSG %s %s %s %d\r\n%s\r\n" % (subj, s, _wire(reply), len(payload),
                                               payload)
    return b"MSG %s %s %d\r\n%s\r\n" % (subj, s, len(payload), payload)


def msg_frames(list deliveries):
    """Many deliveries, each (subject, sid, reply, hdr, payload), as one buffer."""
    cdef list parts = []
    for subject, sid, reply, hdr, payload in deliveries:
        parts.append(msg_frame(subject, sid, reply, hdr, payload))
    return b"".join(parts)


cdef inline char* _put(char* p, const char* s, Py_ssize_t n) noexcept:
    memcpy(p, s, n)
    return p + n


cdef inline Py_ssize_t _digits(Py_ssize_t n) noexcept:
    cdef Py_ssize_t d = 1
    while n >= 10:
        n //= 10
        d += 1
    return d


cdef inline char* _put_size(char* p, Py_ssize_t n) noexcept:
    cdef Py_ssize_t d = _digits(n), i
    for i in range(d - 1, -1, -1):
        p[i] = <char>(48 + n % 10)
        n //= 10
    return p + d


def burst_frames(list msgs, str sid, bint headers):
    """A burst of bus messages (Msg: subject, data, hdr, reply) to one subscription `sid`
    as one buffer of the frames msg_frame renders one by one (header blocks dropped when
    the client does not take headers).  Returns (frames, payload and header bytes)."""
    cdef Py_ssize_t count = len(msgs), i, total = 0, size = 0
    cdef Py_ssize_t sid_len, subj_len, reply_len, hdr_len, data_len
    cdef bytes sid_bytes = _wire(sid)
    cdef const char* sid_s = _chars(sid_bytes, &sid_len)
    cdef const char* subj_s
    cdef const char* reply_s
    cdef list parts = [None] * (4 * count)      # subject, reply, hdr, data of each
    cdef object msg, subject, reply, hdr, data
    cdef bytes out
    cdef char* p
    for i in range(count):
        msg = msgs[i]
        subject = msg.subject
        reply = msg.reply
        hdr = msg.hdr if headers else None
        data = msg.data
        if type(data) is not bytes:
            data = bytes(data)
        if not hdr:
            hdr = None
        elif type(hdr) is not bytes:
            hdr = bytes(hdr)
        if not reply:
            reply = None
        elif not PyUnicode_IS_ASCII(reply):
            reply = _wire(reply)
        if not PyUnicode_IS_ASCII(subject):
            subject = _wire(subject)
        parts[4 * i] = subject
        parts[4 * i + 1] = reply
        parts[4 * i + 2] = hdr
        parts[4 * i + 3] = data
        _chars(subject, &subj_len)
        data_len = PyBytes_GET_SIZE(data)
        hdr_len = PyBytes_GET_SIZE(hdr) if hdr is not None else 0
        # "HMSG " or "MSG ", subject, " ", sid, [" ", reply], [" ", hdr size], " ", total,
        # CRLF, body, CRLF
        total += (5 if hdr is not None else 4) + subj_len + 1 + sid_len + 1 + 4
        if reply is not None:
            _chars(reply, &reply_len)
            total += reply_len + 1
        if hdr is not None:
            total += _digits(hdr_len) + 1
        total += _digits(hdr_len + data_len) + hdr_len + data_len
        size += hdr_len + data_len
    out = PyBytes_FromStringAndSize(NULL, total)
    p = PyBytes_AS_STRING(out)
    for i in range(count):
        subject = parts[4 * i]
        reply = parts[4 * i + 1]
        hdr = parts[4 * i + 2]
        data = parts[4 * i + 3]
        subj_s = _chars(subject, &subj_len)
        data_len = PyBytes_GET_SIZE(data)
        if hdr is not None:
            hdr_len = PyBytes_GET_SIZE(hdr)
            p = _put(p, b"HMSG ", 5)
        else:
            hdr_len = 0
            p = _put(p, b"MSG ", 4)
        p = _put(p, subj_s, subj_len)
        p[0] = 32
        p = _put(p + 1, sid_s, sid_len)
        p[0] = 32
        p += 1
        if reply is not None:
            reply_s = _chars(reply, &reply_len)
            p = _put(p, reply_s, reply_len)
            p[0] = 32
            p += 1
        if hdr is not None:
            p = _put_size(p, hdr_len)
            p[0] = 32
            p += 1
        p = _put_size(p, hdr_len + data_len)
        p = _put(p, b"\r\n", 2)
        if hdr is not None:
            p = _put(p, PyBytes_AS_STRING(hdr), hdr_len)
        p = _put(p, PyBytes_AS_STRING(data), data_len)
        p = _put(p, b"\r\n", 2)
    return out, size
