# The way out of the server: what the core needs to deliver a published message to client
# connections with no Python object per message.
#
# Conn          a client connection's output side, the base class of the server's Client:
#               its output buffer (frames waiting to be written), its message counters and
#               the flags deliveries depend on.  put_msg renders one MSG / HMSG frame into
#               the buffer; it is the one renderer of deliveries (the core's own and
#               Python's through Conn.deliver / deliver_many).
# Totals        the server's message counters, shared by its connections.
# Subscription  one SUB of one connection.
# Plan          what a publish on one subject does when Python has nothing to decide for it:
#               the plain subscriptions it reaches and the queue groups one member of each
#               of which it reaches.  Python compiles plans (Interest's compile callbacks);
#               a subject Python must see each message of has no plan.
# StoreTarget   a stream that does nothing with a publish without headers beyond storing
#               it and telling its listeners: the one implementation of that publish, for
#               plans (the core's) and Stream.publish_plain (Python's); its store's side is
#               streamtarget.StreamTarget.
# Interest      one account's plans by subject, and by inbox head (every subject
#               <head>.<token> of an inbox subscription <head>.*), cleared by Python on
#               every change they depend on (subscriptions, streams, a client's checks);
#               publish() follows a plan for the parser, route() for Python's deliveries.
#
# Frames are as nats-server writes them:
#   MSG <subject> <sid> [<reply>] <size>\r\n<payload>\r\n
#   HMSG <subject> <sid> [<reply>] <header size> <total size>\r\n<headers><payload>\r\n
# A connection that did not ask for headers gets MSG with the payload alone.

from libc.stdint cimport int64_t, uint64_t


cdef class Totals:
    cdef public int64_t in_msgs       # messages and bytes (payload and headers) received
    cdef public int64_t in_bytes
    cdef public int64_t out_msgs      # ... and queued for clients
    cdef public int64_t out_bytes


cdef class Subscription


cdef class Conn:
    cdef public bytearray out         # frames waiting to be written
    cdef public set dirty             # the server's connections with output waiting
    cdef public Totals totals         # the server's counters
    cdef public bint closed           # closed: delivers nothing more
    cdef public bint headers          # CONNECT's headers: HMSG, else MSG without headers
    cdef public bint echo             # CONNECT's echo: gets its own publishes
    cdef public bint checked          # its deliveries pass its permissions (Python's)
    cdef public bint verbose          # CONNECT's verbose: +OK for each operation
    cdef public bint pedantic         # CONNECT's pedantic: -ERR for an invalid subject
    cdef public list acks             # its plain acks not applied yet (Python's): a plan's
    #                                   store waits for them (Python's way applies them first)
    cdef public int64_t in_msgs
    cdef public int64_t in_bytes
    cdef public int64_t out_msgs
    cdef public int64_t out_bytes

    cdef int put_msg(self, const char* subject, Py_ssize_t subject_len,
                     const char* sid, Py_ssize_t sid_len,
                     const char* reply, Py_ssize_t reply_len,
                     const char* hdr, Py_ssize_t hdr_len,
                     const char* data, Py_ssize_t data_len) except -1
    cdef int count_in(self, int64_t msgs, int64_t size) except -1
    cdef int count_out(self, int64_t msgs, int64_t size) except -1
    cdef int put(self, const char* frame, Py_ssize_t length) except -1
    cdef int64_t _put_objects(self, Subscription sub, object subject, object reply,
                              object hdr, object payload) except -1
    cdef _delivered(self, Subscription sub, int64_t count, int64_t size)


cdef class Subscription:
    cdef public Conn client
    cdef public str subject
    cdef public object queue          # its queue group (str), or None
    cdef public str sid
    cdef readonly bytes sid_wire      # the sid as written in frames
    cdef public int64_t max           # UNSUB <sid> <max>: deliveries allowed (0: no limit)
    cdef public int64_t delivered


cdef class StoreTarget:
    # (abstract: jsstore._core.delivery.streamtarget.StreamTarget stores into a BlockStore;
    # plans know only this, so that the server loads no store before a stream is used)
    cdef readonly object stream       # the jsstore.stream.stream.Stream
    cdef readonly int64_t max_msg_size   # larger: not taken (-1: no limit)
    cdef bytes ack_head               # b'{"stream":"S"[,"domain":"D"],"seq":'

    cdef uint64_t last_seq(self)      # the store's last sequence
    cdef uint64_t store_plain(self, const char* subject, Py_ssize_t subject_len,
                              const char* data, Py_ssize_t data_len) except? 0
    cdef int stored(self, uint64_t seq, object subject,
                    const char* data, Py_ssize_t data_len) except -1
    cdef bytes ack(self, uint64_t seq)


cdef class Plan:
    cdef tuple subs                   # plain subscriptions
    cdef tuple groups                 # queue groups, each a tuple of subscriptions
    cdef readonly Py_ssize_t reach    # len(subs) + len(groups)
    cdef readonly bint valid          # its subject is a valid publish subject (pedantic)
    cdef readonly StoreTarget target  # the stream it is stored in, or None

    cdef Py_ssize_t deliver(self, Conn origin, uint64_t* rng,
                            const char* subject, Py_ssize_t subject_len,
                            const char* reply, Py_ssize_t reply_len,
                            const char* hdr, Py_ssize_t hdr_len,
                            const char* data, Py_ssize_t data_len) except -1


cdef class Interest:
    cdef dict plans                   # subject bytes -> Plan, or None (Python decides)
    cdef dict heads                   # inbox head bytes -> Plan, or None (ask by subject)
    cdef object compile               # subject str -> Plan or None
    cdef object compile_head          # head str -> Plan for every <head>.<token>, or None
    cdef object unanswered            # (origin, subject, reply): a request reached nobody
    cdef object failed                # (origin, exception): a stored publish went wrong
    #                                   after it was stored (it stays, unanswered)
    cdef public object lock           # the account's JetStream lock: held while plans store
    cdef bint holding                 # ... from the first store of a read to release()
    cdef uint64_t rng                 # queue members are picked at random
    cdef readonly Py_ssize_t generation   # clear()s so far

    cdef Plan plan(self, const char* subject, Py_ssize_t length)
    cdef int release(self) except -1
    cdef Py_ssize_t publish(self, Plan plan, Conn origin,
                            const char* subject, Py_ssize_t subject_len,
                            const char* reply, Py_ssize_t reply_len,
                            const char* hdr, Py_ssize_t hdr_len,
                            const char* data, Py_ssize_t data_len) except -2
