# The store's side of a StoreTarget (jsstore._core.delivery.plans): a plain publish
# stored into a BlockStore the way BlockStore.store_msg stores it (the store's limits,
# discard policy and per-subject limits in the core), and what follows a store as the
# stream's full publish does it.  Its own module, so that the server's plans load no store.

from libc.stdint cimport int64_t

from jsstore._core.delivery.plans cimport StoreTarget
from jsstore._core.storage.engine cimport BlockStore


cdef class StreamTarget(StoreTarget):
    cdef BlockStore store
    cdef list listeners               # the stream's own list: (stream, seq, subject, hdr,
    #                                   payload, ts) of every message stored
    cdef object on_due                # told when a first message will expire (max_age)
    cdef int64_t max_age
