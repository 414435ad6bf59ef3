# Consumer state: what a JetStream consumer has delivered and what is still unacknowledged.
#
# The in-memory form of nats-server's ConsumerState with no Python object per sequence:
#
#   delivered    (consumer seq, stream seq) of the newest delivery
#   ack floor    (consumer seq, stream seq) below which everything is acknowledged
#   pending      stream seq -> (delivery seq, last delivery time), an open-addressing hash map
#   redelivered  stream seq -> redelivery count, the same kind of map
#   order        the pending stream seqs in ascending order with a bitmap of the ones still
#                pending: acks clear bits, so finding the next unacknowledged seq above a point
#                (moving the ack floor) scans 64 sequences per word instead of probing the map
#
# The semantics (ack policies, max deliver, stale updates) are those of nats-server's
# consumerFileStore / consumerMemStore; encode() writes o.dat version 2 byte for byte.
from libc.stdint cimport uint8_t, uint64_t, int64_t

cdef enum:
    ACK_NONE = 0                  # nats AckNone: delivered == ack floor, nothing pending
    ACK_ALL = 1                   # nats AckAll: an ack covers every seq at or below it
    ACK_EXPLICIT = 2              # nats AckExplicit: every message is acked on its own
    ACK_FLOW_CONTROL = 3          # nats AckFlowControl (2.14): stored like AckAll

cdef enum:
    CONSUMER_STATE_MAGIC = 22     # first byte of o.dat
    CONSUMER_STATE_VERSION = 2    # version written; version 1 is still read
    MAP_MIN_CAPACITY = 16         # slots of an empty map (power of two)

cdef struct MapEntry:
    uint64_t key                  # stream sequence
    uint64_t value                # pending: delivery (consumer) seq; redelivered: count
    int64_t ts                    # pending: Unix ns of the last delivery; unused otherwise

cdef struct SeqMap:
    MapEntry* entries             # capacity slots, linear probing
    uint8_t* used                 # used[i] != 0 <=> entries[i] holds a key
    size_t capacity               # number of slots, a power of two
    size_t count                  # keys stored

cdef struct SeqOrder:
    uint64_t* seqs                # stream seqs in strictly ascending order (live and dead)
    uint64_t* live                # bit i set <=> seqs[i] is still pending
    size_t head                   # index of the first live entry (0 when none is live)
    size_t count                  # entries in seqs
    size_t capacity               # entries allocated (a multiple of 64)
    size_t live_count             # live entries == number of pending keys

cdef class AckState:
    cdef int ack_policy_code      # one of ACK_NONE / ACK_ALL / ACK_EXPLICIT / ACK_FLOW_CONTROL
    cdef int64_t max_deliver_limit  # ConsumerConfig.MaxDeliver; <= 0 means unlimited
    cdef readonly uint64_t delivered_consumer   # consumer seq of the newest delivery
    cdef readonly uint64_t delivered_stream     # stream seq of the newest delivery
    cdef readonly uint64_t ack_floor_consumer   # consumer seq at or below which all is acked
    cdef readonly uint64_t ack_floor_stream     # stream seq at or below which all is acked
    cdef SeqMap pending           # stream seq -> (delivery seq, timestamp)
    cdef SeqMap redelivered       # stream seq -> number of redeliveries (delivery count - 1)
    cdef SeqOrder order           # ascending pending stream seqs, for moving the ack floor

    cdef int _pending_add(self, uint64_t sseq, uint64_t dseq, int64_t ts) except -1
    cdef bint _pending_remove(self, uint64_t sseq) noexcept nogil
    cdef void _clear(self) noexcept nogil
    cdef int _rebuild_order(self) except -1
    cdef int _parse(self, const uint8_t* buf, size_t size) except -1
    cdef void _take(self, AckState other) noexcept
