# cython: language_level=3, boundscheck=False, wraparound=False
"""A stream's plain publishes stored by the core (see streamtarget.pxd)."""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t, uint64_t

from jsstore._core.storage.engine cimport BlockStore


cdef class StreamTarget(StoreTarget):
    """A stream that does nothing with a publish without headers beyond storing it and
    telling its listeners (see plans.pxd); made by the stream for its configuration
    (Stream.plain_target), which says when it may not be used."""

    def __init__(self, stream, BlockStore store, bytes ack_head, list listeners, on_due,
                 int64_t max_age, int64_t max_msg_size):
        self.stream = stream
        self.store = store
        self.ack_head = ack_head
        self.listeners = listeners
        self.on_due = on_due
        self.max_age = max_age
        self.max_msg_size = max_msg_size

    cdef uint64_t last_seq(self):
        return self.store.last_seq

    cdef uint64_t store_plain(self, const char* subject, Py_ssize_t subject_len,
                              const char* data, Py_ssize_t data_len) except? 0:
        """Store a message; its sequence.  Raises what the store raises: before storing
        when the store refuses it (last_seq unchanged)."""
        cdef BlockStore store = self.store
        cdef int64_t ts
        store.c_check_writable()
        ts = store.c_next_ts()
        store.c_store(<const uint8_t*>subject, subject_len, NULL, 0, False,
                      <const uint8_t*>data, data_len, 0, ts, True, True)
        store.c_after_store(ts, 0)
        return store.last_seq

    cdef int stored(self, uint64_t seq, object subject,
                    const char* data, Py_ssize_t data_len) except -1:
        """What follows a store, as the stream's full publish does it: the last Msg-Id
        forgotten, the first expiry scheduled, the listeners told."""
        cdef object stream = self.stream
        cdef int64_t ts = self.store.last_ts
        if stream.last_msg_id and stream.dedupe_loaded:
            stream.last_msg_id = ""
        if self.on_due is not None and self.store.msgs == 1:
            self.on_due(ts + self.max_age)
        if self.listeners:
            payload = PyBytes_FromStringAndSize(data, data_len)
            if type(subject) is bytes:
                subject = (<bytes>subject).decode("utf-8", "surrogateescape")
            for listener in self.listeners:
                listener(stream, seq, subject, None, payload, ts)
        return 0
