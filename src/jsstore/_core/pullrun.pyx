# cython: language_level=3, boundscheck=False, wraparound=False
"""A pull consumer's run of first deliveries, loaded and made into bus messages in C (see
pullrun.pxd)."""

from libc.stdint cimport int64_t, uint64_t
from libc.stdio cimport snprintf

from jsstore._core.engine cimport BlockStore
from jsstore._core.queries cimport Filter, compile_filter, next_match
from jsstore._core.record cimport StoreMsg
from jsstore.errors import StoreClosed


def take_run(BlockStore store, object load_filter, uint64_t start, Py_ssize_t limit,
             str prefix, int64_t pending_count, uint64_t delivery_seq, str to, object msg_type,
             list msgs, list seqs):
    """Up to `limit` next messages matching `load_filter` from stream sequence `start`, as
    first deliveries: each appended to `msgs` as msg_type(subject, payload, header block or
    None, ack reply, to) and its stream sequence to `seqs`.  The ack reply is
    ``<prefix>1.<seq>.<delivery seq>.<ts>.<pending>``, delivery seqs counting up from
    `delivery_seq` and pending down from `pending_count` (one less for each, never below
    0), as the consumer's message-by-message loop writes them.  Stops early at the end of
    what matches.  Returns how many were taken."""
    if store.closed:
        raise StoreClosed()
    cdef Filter f = compile_filter(store, load_filter, store.subset_next)
    cdef char tail[128]
    cdef int length
    cdef uint64_t seq
    cdef int64_t pending
    cdef StoreMsg msg
    cdef Py_ssize_t taken = 0
    while taken < limit:
        seq = next_match(store, f, start)
        if seq == 0:
            break
        msg = store.c_load(seq)
        if msg is None:
            break
        start = seq + 1
        pending_count -= 1
        pending = pending_count if pending_count > 0 else 0
        length = snprintf(tail, sizeof(tail), "1.%llu.%llu.%lld.%lld",
                          <unsigned long long>seq, <unsigned long long>delivery_seq,
                          <long long>msg.ts, <long long>pending)
        msgs.append(msg_type(msg.subject, msg.msg, msg.hdr or None,
                             prefix + tail[:length].decode("ascii"), to))
        seqs.append(seq)
        delivery_seq += 1
        taken += 1
    return taken
