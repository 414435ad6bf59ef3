# Consumer state: what a JetStream consumer has delivered and what is still unacknowledged.
#
# The in-memory form of nats-server's ConsumerState with no Python object per sequence:
#
#   delivered    (consumer seq, stream seq) of the newest delivery
#   ack floor    (consumer seq, stream seq) below which everything is acknowledged
#   pending      stream seq -> (delivery seq, last delivery time), a SeqMap (seqmap.pxd)
#   redelivered  stream seq -> redelivery count, another SeqMap
#   order        the pending stream seqs in ascending order, a SeqOrder (seqmap.pxd): moving
#                the ack floor finds the next unacknowledged seq without probing the map
#
# The semantics (ack policies, max deliver, stale updates) are those of nats-server's
# consumerFileStore / consumerMemStore; encode() writes o.dat version 2 byte for byte
# (the codec is odat.pyx).
from libc.stdint cimport uint64_t, int64_t
from jsstore._core.storage.seqmap cimport SeqMap, SeqOrder

cdef enum:
    ACK_NONE = 0                  # nats AckNone: delivered == ack floor, nothing pending
    ACK_ALL = 1                   # nats AckAll: an ack covers every seq at or below it
    ACK_EXPLICIT = 2              # nats AckExplicit: every message is acked on its own
    ACK_FLOW_CONTROL = 3          # nats AckFlowControl (2.14): stored like AckAll

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
    cdef int _update_delivered(self, uint64_t dseq, uint64_t sseq, uint64_t dc, int64_t ts) except -1
    cdef int _update_acks(self, uint64_t dseq, uint64_t sseq) except -2   # 1 / 0 / -1 not pending
    cdef bint _pending_remove(self, uint64_t sseq) noexcept nogil
    cdef void _clear(self) noexcept nogil
    cdef int _rebuild_order(self) except -1
    cdef void _take(self, AckState other) noexcept
