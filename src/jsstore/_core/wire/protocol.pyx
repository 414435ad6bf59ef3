# cython: language_level=3, boundscheck=False, wraparound=False
"""The NATS client protocol: the parser of what clients send and the frames the server
sends back (see protocol.pxd for the operations and the error model)."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memchr, memcmp

from jsstore._core.delivery.plans cimport Conn, Interest, Plan

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


cdef enum:
    MOST_TOKENS = 4         # HPUB <subject> <reply> <header size> <size>


cdef int _split(const unsigned char* s, Py_ssize_t start, Py_ssize_t end,
                Py_ssize_t* starts, Py_ssize_t* ends) noexcept nogil:
    """The argument tokens of a control line, split on spaces, tabs, CR and LF as
    processPub / processSub split them: their count, each token's start and end in
    starts / ends (the first MOST_TOKENS of them; a count above that: too many)."""
    cdef int count = 0
    cdef Py_ssize_t i = start, at
    while i < end:
        while i < end and _is_split(s[i]):
            i += 1
        if i >= end:
            break
        at = i
        while i < end and not _is_split(s[i]):
            i += 1
        if count < MOST_TOKENS:
            starts[count] = at
            ends[count] = i
        count += 1
        if count > MOST_TOKENS:
            break
    return count


cdef bint _fills_every_token(const unsigned char* s, Py_ssize_t start,
                             Py_ssize_t end) noexcept nogil:
    """Whether a subject has no empty token (one with one matches nothing)."""
    cdef Py_ssize_t i
    if end <= start or s[start] == 46 or s[end - 1] == 46:
        return False
    for i in range(start + 1, end):
        if s[i] == 46 and s[i - 1] == 46:
            return False
    return True


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
                 Py_ssize_t max_payload=DEFAULT_MAX_PAYLOAD, Conn origin=None):
        self.pending = bytearray()
        self.max_control_line = max_control_line
        self.max_payload = max_payload
        self.error = None
        self.subjects = {}
        self.interest = None
        self.origin = origin
        self.more = False
        self.rest = None
        self.rest_pos = 0
        self.last_generation = -1

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
        protocol violation and returns the operations before it.  A JetStream lock a
        plan's store took is let go before it returns."""
        try:
            return self._feed(data)
        finally:
            if self.interest is not None:
                self.interest.release()

    cdef list _feed(self, object data):
        cdef list ops = []
        self.more = False
        if self.error is not None:
            return ops
        cdef bytes buf
        cdef Py_ssize_t pos = 0
        if self.rest is not None:          # where the last feed() stopped
            buf = self.rest
            pos = self.rest_pos
            self.rest = None
            if data:
                buf = buf[pos:] + bytes(data)
                pos = 0
        elif self.pending:
            self.pending += data
            buf = bytes(self.pending)
            self.pending = bytearray()
        else:
            buf = bytes(data)
        cdef const unsigned char* s = buf
        cdef Py_ssize_t n = len(buf), eol, arg, arg_end, line_len
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
            if consumed == -3:          # a PUB the core delivers, after operations
                self.rest = buf
                self.rest_pos = pos
                self.more = True
                return ops
            if consumed < 0:
                return ops              # error set
            if consumed == 0:
                break                   # the payload is not all here yet
            pos = consumed
        if pos < n:
            self.pending += buf[pos:]
        return ops

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
        """A PUB / HPUB: delivered by the core when its subject has a plan (-3 when
        operations come before it: feed() stops there), else an operation."""
        cdef Py_ssize_t starts[MOST_TOKENS]
        cdef Py_ssize_t ends[MOST_TOKENS]
        cdef int count = _split(s, arg, self._arg_end(s, arg, eol), starts, ends)
        cdef Py_ssize_t size, hsize = 0, reply_at = 0, reply_len = 0
        cdef Py_ssize_t base = 1 if headers else 0
        cdef Plan plan
        if count == 3 + base:
            reply_at = starts[1]
            reply_len = ends[1] - starts[1]
        elif count != 2 + base:
            self._fail(ERR_CLOSE, "processPub Parse Error")
            return -1
        size = _size(s, starts[count - 1], ends[count - 1])
        if size < 0:
            self._fail(ERR_CLOSE, "processPub Bad or Missing Size")
            return -1
        if headers:
            hsize = _size(s, starts[count - 2], ends[count - 2])
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
        if (self.take_acks and reply_len == 0 and ends[0] - starts[0] > 8
                and memcmp(s + starts[0], b"$JS.ACK.", 8) == 0
                and (size - hsize == 0 or (size - hsize == 4
                                           and memcmp(s + body + hsize, b"+ACK", 4) == 0))
                and _fills_every_token(s, starts[0], ends[0])):
            # a plain ack (it asks for no answer, only acknowledges): it waits with the
            # connection's others, as Python's way has it (Account.publish)
            if ops:
                return -3
            self.origin.acks.append(self._text(s, starts[0], ends[0]))
            self.origin.count_in(1, size)
            return body + size + 2
        if self.interest is not None:
            plan = self._plan(s + starts[0], ends[0] - starts[0])
            # (a reply in the service imports' space is refused, and an invalid subject
            # from a pedantic client answered with -ERR: Python's)
            if plan is not None and not (reply_len >= 4 and memcmp(s + reply_at, b"_R_.", 4)
                                         == 0) and (plan.valid or not self.origin.pedantic):
                if ops:
                    return -3
                if self.interest.publish(
                        plan, self.origin, <const char*>s + starts[0], ends[0] - starts[0],
                        <const char*>s + reply_at, reply_len, <const char*>s + body, hsize,
                        <const char*>s + body + hsize, size - hsize) >= 0:
                    return body + size + 2
        subject = self._text(s, starts[0], ends[0])
        reply = self._text(s, reply_at, reply_at + reply_len) if reply_len else None
        if headers:
            ops.append((OP_PUB, subject, reply, s[body:body + hsize],
                        s[body + hsize:body + size]))
        else:
            ops.append((OP_PUB, subject, reply, None, s[body:body + size]))
        return body + size + 2

    cdef Plan _plan(self, const unsigned char* subject, Py_ssize_t length):
        """The plan of a subject, the last one's remembered."""
        cdef bytes last = self.last_subject
        if (self.last_generation == self.interest.generation and last is not None
                and PyBytes_GET_SIZE(last) == length
                and memcmp(PyBytes_AS_STRING(last), subject, length) == 0):
            return self.last_plan
        plan = self.interest.plan(<const char*>subject, length)
        self.last_subject = PyBytes_FromStringAndSize(<const char*>subject, length)
        self.last_plan = plan
        self.last_generation = self.interest.generation
        return plan

    cdef Py_ssize_t _sub(self, list ops, const unsigned char* s, Py_ssize_t arg,
                         Py_ssize_t eol) except -2:
        cdef Py_ssize_t starts[MOST_TOKENS]
        cdef Py_ssize_t ends[MOST_TOKENS]
        cdef int count = _split(s, arg, self._arg_end(s, arg, eol), starts, ends)
        if count == 2:
            ops.append((OP_SUB, self._text(s, starts[0], ends[0]), None,
                        self._text(s, starts[1], ends[1])))
        elif count == 3:
            ops.append((OP_SUB, self._text(s, starts[0], ends[0]),
                        self._text(s, starts[1], ends[1]),
                        self._text(s, starts[2], ends[2])))
        else:
            self._fail(ERR_CLOSE, "processSub Parse Error")
            return -1
        return eol + 1

    cdef Py_ssize_t _unsub(self, list ops, const unsigned char* s, Py_ssize_t arg,
                           Py_ssize_t eol) except -2:
        cdef Py_ssize_t starts[MOST_TOKENS]
        cdef Py_ssize_t ends[MOST_TOKENS]
        cdef int count = _split(s, arg, self._arg_end(s, arg, eol), starts, ends)
        cdef Py_ssize_t limit = 0
        if count == 2:
            limit = _size(s, starts[1], ends[1])
            if limit < 0:
                self._fail(ERR_CLOSE, "processUnsub Bad maximum")
                return -1
        elif count != 1:
            self._fail(ERR_CLOSE, "processUnsub Parse Error")
            return -1
        ops.append((OP_UNSUB, self._text(s, starts[0], ends[0]), limit))
        return eol + 1


# -- frames ----------------------------------------------------------------------------------
def info_frame(bytes payload):
    """INFO <json>\\r\\n."""
    return b"INFO " + payload + b"\r\n"


def err_frame(str text):
    """-ERR '<text>'\\r\\n."""
    return b"-ERR '" + text.encode() + b"'\r\n"
