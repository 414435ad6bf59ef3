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
# Frames: the server->client side's control lines (INFO, PING, PONG, +OK, -ERR); MSG and
# HMSG are rendered into a connection's buffer by jsstore._core.delivery.plans.
#
# Publishes the core delivers itself: a parser given an account's Interest (and its
# connection, `origin`) delivers a PUB / HPUB whose subject has a plan
# (jsstore._core.delivery.plans) there and then, with no operation returned for it.  Operations Python handles keep their
# order with those: once feed() has an operation to return, it stops before the next PUB the
# core would deliver, sets `more`, and reads on from there at the next feed(b"").
#
# With take_acks (the connection's acks are seen by nobody but JetStream), a plain ack --
# PUB/HPUB $JS.ACK.<...> with no reply and an empty or +ACK payload -- is appended to the
# connection's acks (Conn.acks, which Python applies) instead of being an operation, in the
# order of the operations around it.

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

from jsstore._core.delivery.plans cimport Conn, Interest, Plan


cdef class Parser:
    cdef public bytearray pending  # bytes of an operation not complete yet
    cdef public Py_ssize_t max_control_line
    cdef public Py_ssize_t max_payload
    cdef public object error      # None, or (ERR_SEND / ERR_CLOSE, text)
    cdef dict subjects            # bytes -> str, for subjects seen again and again
    cdef public Interest interest  # the account's plans, or None: every PUB to Python
    cdef public Conn origin       # the connection it reads (counts and echo)
    cdef public bint take_acks    # plain acks go to origin.acks (nobody else sees them)
    cdef public bint more         # feed() stopped before the end: call feed(b"") again
    cdef bytes rest               # ... the read it stopped in, and where
    cdef Py_ssize_t rest_pos
    cdef bytes last_subject       # the last subject asked a plan for, and its answer
    cdef Plan last_plan
    cdef Py_ssize_t last_generation   # (the Interest's generation it holds for; -1: none)

    cdef list _feed(self, object data)
    cdef str _text(self, const unsigned char* s, Py_ssize_t start, Py_ssize_t end)
    cdef int _fail(self, int kind, str text) except -1
    cdef Py_ssize_t _arg_end(self, const unsigned char* s, Py_ssize_t arg, Py_ssize_t eol)
    cdef Py_ssize_t _operation(self, list ops, const unsigned char* s, Py_ssize_t n,
                               Py_ssize_t pos, Py_ssize_t eol, unsigned char c0) except -2
    cdef Py_ssize_t _unknown(self) except -2
    cdef Py_ssize_t _pub(self, list ops, const unsigned char* s, Py_ssize_t n,
                         Py_ssize_t arg, Py_ssize_t eol, bint headers) except -2
    cdef Plan _plan(self, const unsigned char* subject, Py_ssize_t length)
    cdef Py_ssize_t _sub(self, list ops, const unsigned char* s, Py_ssize_t arg,
                         Py_ssize_t eol) except -2
    cdef Py_ssize_t _unsub(self, list ops, const unsigned char* s, Py_ssize_t arg,
                           Py_ssize_t eol) except -2
