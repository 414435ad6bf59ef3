# The NATS client protocol, as nats-server's parser reads it (server/parser.go, client.go).
#
# Parser: bytes from one client connection in, operations out.  feed(data) takes any chunk
# (a frame may be split anywhere, thousands may arrive at once) and returns, in one pass,
# every complete operation as a tuple:
#
#   (OP_PUB, subject: str, reply: str | None, hdr: bytes | None, payload: bytes)  PUB / HPUB
#   (OP_SUB, subject: str, queue: str | None, sid: str)
#   (OP_UNSUB, sid: str, max: int)              max 0: no limit
#   (OP_CONNECT, json: bytes)
#   (OP_PING,)  (OP_PONG,)  (OP_OK,)  (OP_ERR, text: str)  (OP_INFO, json: bytes)
#
# What nats-server accepts is accepted: verbs in any case, spaces or tabs between
# arguments, CRLF or a bare LF after a control line, anything after PING/PONG/+OK up to
# the LF; a payload must be followed by CRLF.  On a violation the operations before it
# are still returned and `error` is set to (kind, text): kind ERR_SEND means nats-server
# answers "-ERR '<text>'" and closes the connection, ERR_CLOSE that it closes without an
# -ERR (a bad PUB/SUB argument list).  Once set, feed() returns nothing more.
#
# Frames: the server->client side (INFO, MSG, HMSG, PING, PONG, +OK, -ERR), built into
# bytes; msg_frames renders a batch of deliveries into one buffer for one write, and
# burst_frames a burst of bus messages to one subscription (a pull batch) the same way.
#
# Parser.leading_acks takes the plain acks a read starts with (PUB $JS.ACK.<...> with an
# empty or +ACK payload, no reply, written PUB / single spaces / CRLF) as feed() would give
# them, only their subjects, and leaves the rest of the read to feed().

cdef enum:
    OP_PUB = 1
    OP_SUB = 2
    OP_UNSUB = 3
    OP_CONNECT = 4
    OP_PING = 5
    OP_PONG = 6
    OP_OK = 7
    OP_ERR = 8
    OP_INFO = 9

cdef enum:
    ERR_SEND = 1                  # answer -ERR '<text>', then close
    ERR_CLOSE = 2                 # close without an answer

cdef class Parser:
    cdef public bytearray pending  # bytes of an operation not complete yet
    cdef public Py_ssize_t max_control_line
    cdef public Py_ssize_t max_payload
    cdef public object error      # None, or (ERR_SEND / ERR_CLOSE, text)
    cdef dict subjects            # bytes -> str, for subjects seen again and again

    cdef str _text(self, const unsigned char* s, Py_ssize_t start, Py_ssize_t end)
    cdef int _fail(self, int kind, str text) except -1
    cdef Py_ssize_t _arg_end(self, const unsigned char* s, Py_ssize_t arg, Py_ssize_t eol)
    cdef Py_ssize_t _operation(self, list ops, const unsigned char* s, Py_ssize_t n,
                               Py_ssize_t pos, Py_ssize_t eol, unsigned char c0) except -2
    cdef Py_ssize_t _unknown(self) except -2
    cdef Py_ssize_t _pub(self, list ops, const unsigned char* s, Py_ssize_t n,
                         Py_ssize_t arg, Py_ssize_t eol, bint headers) except -2
    cdef Py_ssize_t _sub(self, list ops, const unsigned char* s, Py_ssize_t arg,
                         Py_ssize_t eol) except -2
    cdef Py_ssize_t _unsub(self, list ops, const unsigned char* s, Py_ssize_t arg,
                           Py_ssize_t eol) except -2
