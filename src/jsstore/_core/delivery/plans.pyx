# cython: language_level=3, boundscheck=False, wraparound=False
"""The way out of the server: connections' output buffers, subscriptions, and the plans
that deliver a publish in the core (see plans.pxd)."""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.object cimport PyObject
from cpython.set cimport PySet_Add
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)

CACHE_LIMIT = 4096      # plans remembered by subject (then forgotten all at once)
cdef Py_ssize_t _CACHE_LIMIT = CACHE_LIMIT


cdef inline Py_ssize_t _width(uint64_t n) noexcept:
    cdef Py_ssize_t d = 1
    while n >= 10:
        n //= 10
        d += 1
    return d


cdef inline char* _put(char* p, const char* s, Py_ssize_t n) noexcept:
    memcpy(p, s, n)
    return p + n


cdef inline char* _put_number(char* p, uint64_t n) noexcept:
    cdef Py_ssize_t d = _width(n), i
    for i in range(d - 1, -1, -1):
        p[i] = <char>(48 + n % 10)
        n //= 10
    return p + d


cdef inline object _wire(object text):
    """A subject, reply or sid as its bytes on the wire: an ASCII str as it is (its UTF-8
    is itself), bytes as they are, any other str as UTF-8 with the bytes a surrogate
    escape stands for given back (a subject may be any bytes, as on nats-server)."""
    if type(text) is bytes or PyUnicode_IS_ASCII(text):
        return text
    return (<str>text).encode("utf-8", "surrogateescape")


cdef inline const char* _chars(object wire, Py_ssize_t* n) except NULL:
    """The bytes of what _wire gave."""
    if type(wire) is bytes:
        n[0] = PyBytes_GET_SIZE(wire)
        return PyBytes_AS_STRING(wire)
    return PyUnicode_AsUTF8AndSize(wire, n)


cdef struct _Message:
    const char* subject
    Py_ssize_t subject_len
    const char* reply
    Py_ssize_t reply_len
    const char* hdr
    Py_ssize_t hdr_len
    const char* data
    Py_ssize_t data_len


cdef tuple _message(object subject, object reply, object hdr, object payload,
                    _Message* m):
    """A message of Python objects (str or bytes subject and reply, bytes-like headers and
    payload) as the pointers put_msg and Plan.deliver take; the objects they point into,
    which the caller keeps while it uses them."""
    subject = _wire(subject)
    m.subject = _chars(subject, &m.subject_len)
    m.reply = NULL
    m.reply_len = 0
    if reply:
        reply = _wire(reply)
        m.reply = _chars(reply, &m.reply_len)
    m.hdr = NULL
    m.hdr_len = 0
    if hdr:
        if type(hdr) is not bytes:
            hdr = bytes(hdr)
        m.hdr = PyBytes_AS_STRING(hdr)
        m.hdr_len = PyBytes_GET_SIZE(hdr)
    if type(payload) is not bytes:
        payload = bytes(payload)
    m.data = PyBytes_AS_STRING(payload)
    m.data_len = PyBytes_GET_SIZE(payload)
    return (subject, reply, hdr, payload)


cdef class Totals:
    """The server's message counters (see plans.pxd)."""


cdef class Conn:
    """A client connection's output side (see plans.pxd).  Its Python subclass sets
    dirty and totals to the server's; `unsubscribe(sub)` is the subclass's."""

    def __cinit__(self, *args, **kwargs):
        self.out = bytearray()
        self.echo = True
        self.acks = []

    cdef int put_msg(self, const char* subject, Py_ssize_t subject_len,
                     const char* sid, Py_ssize_t sid_len,
                     const char* reply, Py_ssize_t reply_len,
                     const char* hdr, Py_ssize_t hdr_len,
                     const char* data, Py_ssize_t data_len) except -1:
        cdef bytearray out = self.out
        cdef Py_ssize_t old = PyByteArray_GET_SIZE(out), size
        cdef char* p
        if not self.headers:
            hdr_len = 0
        # "MSG " / "HMSG ", subject, " ", sid, [" ", reply], [" ", header size], " ",
        # size, CRLF, headers, payload, CRLF
        size = 4 + subject_len + 1 + sid_len + 1 + _width(hdr_len + data_len) + 2 \
            + hdr_len + data_len + 2
        if reply_len:
            size += reply_len + 1
        if hdr_len:
            size += 1 + _width(hdr_len) + 1
        PyByteArray_Resize(out, old + size)
        p = PyByteArray_AS_STRING(out) + old
        if hdr_len:
            p = _put(p, b"HMSG ", 5)
        else:
            p = _put(p, b"MSG ", 4)
        p = _put(p, subject, subject_len)
        p[0] = 32
        p = _put(p + 1, sid, sid_len)
        p[0] = 32
        p += 1
        if reply_len:
            p = _put(p, reply, reply_len)
            p[0] = 32
            p += 1
        if hdr_len:
            p = _put_number(p, hdr_len)
            p[0] = 32
            p += 1
        p = _put_number(p, hdr_len + data_len)
        p[0] = 13
        p[1] = 10
        p += 2
        if hdr_len:
            p = _put(p, hdr, hdr_len)
        p = _put(p, data, data_len)
        p[0] = 13
        p[1] = 10
        if old == 0:
            PySet_Add(self.dirty, self)
        return 0

    cdef int put(self, const char* frame, Py_ssize_t length) except -1:
        """Queue a frame that is not a delivery (+OK)."""
        cdef bytearray out = self.out
        cdef Py_ssize_t old = PyByteArray_GET_SIZE(out)
        PyByteArray_Resize(out, old + length)
        memcpy(PyByteArray_AS_STRING(out) + old, frame, length)
        if old == 0:
            PySet_Add(self.dirty, self)
        return 0

    cdef int count_in(self, int64_t msgs, int64_t size) except -1:
        self.in_msgs += msgs
        self.in_bytes += size
        self.totals.in_msgs += msgs
        self.totals.in_bytes += size
        return 0

    cdef int count_out(self, int64_t msgs, int64_t size) except -1:
        self.out_msgs += msgs
        self.out_bytes += size
        self.totals.out_msgs += msgs
        self.totals.out_bytes += size
        return 0

    # -- Python's deliveries ---------------------------------------------------------
    def write(self, frame) -> None:
        """Queue frames (bytes) that are not deliveries: answers, PONG, -ERR, INFO."""
        if not PyByteArray_GET_SIZE(self.out):
            PySet_Add(self.dirty, self)
        self.out += frame

    def tally_in(self, int64_t msgs, int64_t size) -> None:
        """Count `msgs` messages of `size` bytes received from this client."""
        self.count_in(msgs, size)

    def deliver(self, Subscription sub, object subject, object reply, object hdr,
                object payload) -> None:
        """Queue a message for one of this client's subscriptions (its UNSUB limit
        reached, the subscription goes)."""
        self._delivered(sub, 1, self._put_objects(sub, subject, reply, hdr, payload))

    def deliver_many(self, Subscription sub, list msgs) -> None:
        """Queue a burst of JetStream messages (bus Msgs: subject, reply, hdr, data) for
        one subscription, stopping where its UNSUB limit is reached."""
        cdef Py_ssize_t count = len(msgs), i
        cdef int64_t size = 0
        cdef object msg
        if sub.max:
            count = max(0, min(count, sub.max - sub.delivered))
        for i in range(count):
            msg = msgs[i]
            size += self._put_objects(sub, msg.subject, msg.reply, msg.hdr, msg.data)
        self._delivered(sub, count, size)

    cdef int64_t _put_objects(self, Subscription sub, object subject, object reply,
                              object hdr, object payload) except -1:
        """put_msg of Python objects (str or bytes subjects, any bytes-like payload);
        the bytes it counts (headers it sent, payload)."""
        cdef _Message m
        cdef tuple keep = _message(subject, reply, hdr, payload, &m)
        if not self.headers:
            m.hdr_len = 0
        self.put_msg(m.subject, m.subject_len, PyBytes_AS_STRING(sub.sid_wire),
                     PyBytes_GET_SIZE(sub.sid_wire), m.reply, m.reply_len, m.hdr, m.hdr_len,
                     m.data, m.data_len)
        return m.hdr_len + m.data_len

    cdef _delivered(self, Subscription sub, int64_t count, int64_t size):
        self.count_out(count, size)
        PySet_Add(self.dirty, self)
        sub.delivered += count
        if sub.max and sub.delivered >= sub.max:
            self.unsubscribe(sub)


cdef class Subscription:
    """One SUB of one connection (see plans.pxd)."""

    def __init__(self, Conn client, str subject, object queue, str sid):
        self.client = client
        self.subject = subject
        self.queue = queue
        self.sid = sid
        self.sid_wire = sid.encode("utf-8", "surrogateescape")
        self.max = 0
        self.delivered = 0

    def __repr__(self):
        return f"Subscription({self.subject!r}, queue={self.queue!r}, sid={self.sid!r})"


cdef class StoreTarget:
    """A stream the core stores plain publishes into (see plans.pxd); the store's side is
    jsstore._core.delivery.streamtarget.StreamTarget's."""

    cdef uint64_t last_seq(self):
        raise NotImplementedError

    cdef uint64_t store_plain(self, const char* subject, Py_ssize_t subject_len,
                              const char* data, Py_ssize_t data_len) except? 0:
        raise NotImplementedError

    cdef int stored(self, uint64_t seq, object subject,
                    const char* data, Py_ssize_t data_len) except -1:
        raise NotImplementedError

    cdef bytes ack(self, uint64_t seq):
        """The PubAck of `seq`."""
        cdef Py_ssize_t head = PyBytes_GET_SIZE(self.ack_head), width = _width(seq)
        cdef bytes out = PyBytes_FromStringAndSize(NULL, head + width + 1)
        cdef char* p = PyBytes_AS_STRING(out)
        p = _put(p, PyBytes_AS_STRING(self.ack_head), head)
        p = _put_number(p, seq)
        p[0] = 125      # }
        return out

    def publish(self, str subject, bytes payload):
        """Store a message (no headers) and tell what follows; its PubAck JSON.  The
        caller holds the JetStream's lock and has checked the size and the account's
        limits."""
        cdef bytes wire = subject.encode("utf-8", "surrogateescape")
        cdef uint64_t seq = self.store_plain(PyBytes_AS_STRING(wire), PyBytes_GET_SIZE(wire),
                                             PyBytes_AS_STRING(payload),
                                             PyBytes_GET_SIZE(payload))
        self.stored(seq, subject, PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload))
        return self.ack(seq)


cdef inline uint64_t _next_random(uint64_t* state) noexcept:
    """xorshift64*: the pick of a queue member."""
    cdef uint64_t x = state[0]
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    state[0] = x
    return x * 2685821657736338717ULL


cdef class Plan:
    """What a publish on one subject reaches (see plans.pxd)."""

    def __init__(self, subs=(), groups=(), bint valid=True, StoreTarget target=None):
        self.valid = valid
        self.target = target
        self.subs = tuple(subs)
        self.groups = tuple(tuple(group) for group in groups)
        for sub in self.subs:
            if not isinstance(sub, Subscription):
                raise TypeError("a plan delivers to Subscriptions")
        for group in self.groups:
            if not group or not all(isinstance(sub, Subscription) for sub in group):
                raise TypeError("a queue group is a non-empty tuple of Subscriptions")
        self.reach = len(self.subs) + len(self.groups)

    cdef Py_ssize_t deliver(self, Conn origin, uint64_t* rng,
                            const char* subject, Py_ssize_t subject_len,
                            const char* reply, Py_ssize_t reply_len,
                            const char* hdr, Py_ssize_t hdr_len,
                            const char* data, Py_ssize_t data_len) except -1:
        cdef Py_ssize_t count = 0, i, members, first, j
        cdef Subscription sub
        cdef Conn conn
        cdef tuple group
        for i in range(len(self.subs)):
            sub = <Subscription>self.subs[i]
            conn = sub.client
            if conn.closed or (conn is origin and not origin.echo):
                continue
            conn.put_msg(subject, subject_len, PyBytes_AS_STRING(sub.sid_wire),
                         PyBytes_GET_SIZE(sub.sid_wire), reply, reply_len, hdr, hdr_len,
                         data, data_len)
            conn.count_out(1, (hdr_len if conn.headers else 0) + data_len)
            sub.delivered += 1
            count += 1
        for i in range(len(self.groups)):
            # one member at random; one that cannot take it (closed, or the publisher
            # without echo) passes its turn to the next, as on nats-server
            group = <tuple>self.groups[i]
            members = len(group)
            first = <Py_ssize_t>(_next_random(rng) % <uint64_t>members)
            for j in range(members):
                sub = <Subscription>group[(first + j) % members]
                conn = sub.client
                if not conn.closed and not (conn is origin and not origin.echo):
                    break
            else:
                continue
            conn.put_msg(subject, subject_len, PyBytes_AS_STRING(sub.sid_wire),
                         PyBytes_GET_SIZE(sub.sid_wire), reply, reply_len, hdr, hdr_len,
                         data, data_len)
            conn.count_out(1, (hdr_len if conn.headers else 0) + data_len)
            sub.delivered += 1
            count += 1
        return count


cdef class Interest:
    """One account's plans (see plans.pxd).  compile(subject) and compile_head(head)
    are Python's: a Plan, or None for a subject Python takes message by message (and a
    head whose subjects are asked for one by one); unanswered(origin, subject, reply) is
    told of a request the core delivered to nobody."""

    def __init__(self, compile, compile_head, unanswered, failed=None):
        self.plans = {}
        self.heads = {}
        self.compile = compile
        self.compile_head = compile_head
        self.unanswered = unanswered
        self.failed = failed
        self.rng = 0x9E3779B97F4A7C15ULL
        self.generation = 0

    def pick(self, Py_ssize_t members) -> int:
        """A queue group member's index, at random: the core's own pick, for Python's
        deliveries too (one sequence, which seed() sets)."""
        return <Py_ssize_t>(_next_random(&self.rng) % <uint64_t>members)

    def seed(self, uint64_t value) -> None:
        self.rng = value * 2 + 1          # (xorshift: never 0)

    cdef int release(self) except -1:
        """Let the JetStream's lock go if a store of this read took it."""
        if self.holding:
            self.holding = False
            self.lock.release()
        return 0

    def clear(self) -> None:
        """Forget every plan: something they depend on changed."""
        self.plans.clear()
        self.heads.clear()
        self.generation += 1

    def plan_for(self, subject: bytes):
        """The plan of `subject` (None: Python takes its messages)."""
        return self.plan(PyBytes_AS_STRING(subject), PyBytes_GET_SIZE(subject))

    def reach(self, object subject) -> int:
        """How many subscriptions and queue groups `subject`'s plan reaches, -1 when it
        has none (the caller asks the subject table)."""
        cdef Py_ssize_t length
        subject = _wire(subject)
        cdef const char* text = _chars(subject, &length)
        cdef Plan plan = self.plan(text, length)
        return -1 if plan is None else plan.reach

    cdef Plan plan(self, const char* subject, Py_ssize_t length):
        cdef bytes key = PyBytes_FromStringAndSize(subject, length)
        cdef PyObject* found = PyDict_GetItem(self.plans, key)
        cdef Py_ssize_t dot = -1, i
        cdef bytes head
        cdef object made
        if found != NULL:
            return <Plan>found if <object>found is not None else None
        for i in range(length - 1, 0, -1):
            if subject[i] == 46:
                dot = i
                break
        if 0 < dot < length - 1 and not (dot == length - 2 and (
                subject[length - 1] == 42 or subject[length - 1] == 62)):
            # an inbox's reply subject: one plan for every <head>.<token>
            head = PyBytes_FromStringAndSize(subject, dot)
            found = PyDict_GetItem(self.heads, head)
            if found == NULL:
                made = self.compile_head(head.decode("utf-8", "surrogateescape"))
                if made is not None and not isinstance(made, Plan):
                    raise TypeError("compile_head() gives a Plan or None")
                if len(self.heads) >= _CACHE_LIMIT:
                    self.heads.clear()
                PyDict_SetItem(self.heads, head, made)
                found = <PyObject*>made
            if <object>found is not None:
                return <Plan>found
        made = self.compile(key.decode("utf-8", "surrogateescape"))
        if made is not None and not isinstance(made, Plan):
            raise TypeError("compile() gives a Plan or None")
        if len(self.plans) >= _CACHE_LIMIT:
            self.plans.clear()
        PyDict_SetItem(self.plans, key, made)
        return <Plan>made if made is not None else None

    def route(self, object subject, object target, object reply, object hdr, object payload,
              Conn origin=None):
        """Deliver a message to what `target` reaches by its plan, the frames carrying
        `subject` (Python's deliveries: answers, JetStream's messages, the publishes the
        core declined); how many subscriptions got it, or -1 when `target` has no plan
        (the caller then matches it itself).  Nothing is stored: delivery only."""
        cdef Py_ssize_t target_len
        cdef _Message m
        target = _wire(target)
        cdef const char* target_s = _chars(target, &target_len)
        cdef Plan plan = self.plan(target_s, target_len)
        if plan is None:
            return -1
        cdef tuple keep = _message(subject, reply, hdr, payload, &m)
        return plan.deliver(origin, &self.rng, m.subject, m.subject_len, m.reply,
                            m.reply_len, m.hdr, m.hdr_len, m.data, m.data_len)

    cdef Py_ssize_t publish(self, Plan plan, Conn origin,
                            const char* subject, Py_ssize_t subject_len,
                            const char* reply, Py_ssize_t reply_len,
                            const char* hdr, Py_ssize_t hdr_len,
                            const char* data, Py_ssize_t data_len) except -2:
        """One publish by `plan`: stored (when it has a stream), +OK to a verbose
        publisher, delivered, answered; how many subscriptions got it.  -1 when the plan
        does not take this message and nothing happened (Python's then): headers or too
        large for its stream, acks of the publisher's waiting (they go first), a reply with
        no plan, a store that refused it."""
        cdef StoreTarget target = plan.target
        cdef Plan answer = None
        cdef Py_ssize_t count
        cdef uint64_t seq = 0, last
        cdef bytes ack
        cdef object failure = None
        if target is not None:
            if hdr_len or 0 <= target.max_msg_size < data_len or origin.acks:
                return -1
            if reply_len:
                answer = self.plan(reply, reply_len)
                if answer is None:
                    return -1
            if not self.holding:        # (released when the parser's read is done)
                self.lock.acquire()
                self.holding = True
            last = target.last_seq()
            try:
                seq = target.store_plain(subject, subject_len, data, data_len)
            except Exception as exc:
                if target.last_seq() == last:
                    return -1           # refused before it was stored
                failure = exc           # stored, then something failed (a bug)
        origin.count_in(1, hdr_len + data_len)
        if origin.verbose:              # (before it is routed, as nats-server)
            origin.put(b"+OK\r\n", 5)
        count = plan.deliver(origin, &self.rng, subject, subject_len, reply, reply_len,
                             hdr, hdr_len, data, data_len)
        if target is None:
            if count == 0 and reply_len:
                self.unanswered(origin,
                                subject[:subject_len].decode("utf-8", "surrogateescape"),
                                reply[:reply_len].decode("utf-8", "surrogateescape"))
            return count
        if failure is None:
            try:
                target.stored(seq, subject[:subject_len], data, data_len)
            except Exception as exc:
                failure = exc
        if failure is not None:
            # (stored, as on Python's way, and unanswered; the failure is reported)
            self.failed(origin, failure)
        elif answer is not None:
            ack = target.ack(seq)
            answer.deliver(origin, &self.rng, reply, reply_len, NULL, 0, NULL, 0,
                           PyBytes_AS_STRING(ack), PyBytes_GET_SIZE(ack))
        return count
