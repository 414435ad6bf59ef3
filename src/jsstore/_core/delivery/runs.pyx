# cython: language_level=3, boundscheck=False, wraparound=False
"""A consumer's run of first deliveries, loaded and rendered into the receivers' buffers,
or made into bus messages, in C (see runs.pxd)."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from jsstore._core.delivery.plans cimport Interest, Plan
from jsstore._core.storage.block cimport MsgBlock
from jsstore._core.storage.engine cimport BlockStore
from jsstore._core.storage.queries cimport Filter, compile_filter, next_match
from jsstore._core.storage.record cimport RecordView, StoreMsg
from jsstore.errors import StoreClosed


cdef inline char* _put_number(char* p, uint64_t n) noexcept:
    """`n` in decimal at `p`, followed by a dot; the position after it."""
    cdef char digits[20]
    cdef int count = 0
    while True:
        digits[count] = <char>(48 + n % 10)
        count += 1
        n //= 10
        if n == 0:
            break
    while count:
        count -= 1
        p[0] = digits[count]
        p += 1
    p[0] = 46
    return p + 1


def take_run(BlockStore store, object load_filter, uint64_t start, Py_ssize_t limit,
             str prefix, int64_t pending_count, uint64_t delivery_seq, str to,
             Interest interest, object msg_type, list msgs, list seqs, list metas=None):
    """Up to `limit` next messages matching `load_filter` from stream sequence `start`, as
    first deliveries to `to`, each message's stream sequence appended to `seqs`.  With an
    `interest` (the account's, which has a plan for `to`; on its event loop's thread) each
    is rendered by that plan into the receiving connections' buffers straight from the
    store's block; else it is appended to `msgs` as msg_type(subject, payload, header
    block or None, ack reply, to) and, when `metas` is a list, its (stream seq, delivery
    seq, 1, timestamp, pending) to `metas` (what an embedded fetch's sink is given).  The
    ack reply is ``<prefix>1.<seq>.<delivery seq>.<ts>.<pending>``, delivery seqs counting
    up from `delivery_seq` and pending down from `pending_count` (one less for each, never
    below 0), as the consumer's message-by-message loop writes them.  Stops early at the
    end of what matches.  Returns how many were taken."""
    if store.closed:
        raise StoreClosed()
    cdef Filter f = compile_filter(store, load_filter, store.subset_next)
    cdef bytes head = prefix.encode("utf-8", "surrogateescape") + b"1."
    cdef Py_ssize_t head_len = len(head)
    cdef char* reply = NULL
    cdef char* p
    cdef uint64_t seq
    cdef int64_t pending, ts
    cdef StoreMsg msg = None
    cdef Py_ssize_t taken = 0
    cdef Plan plan = None
    cdef MsgBlock mb
    cdef RecordView view
    cdef const uint8_t* rec
    cdef bytes target
    if interest is not None:
        target = to.encode("utf-8", "surrogateescape")
        plan = interest.plan(PyBytes_AS_STRING(target), PyBytes_GET_SIZE(target))
        if plan is None:
            raise ValueError(f"no plan delivers to {to!r}")
    reply = <char*>malloc(head_len + 4 * 21 + 1)
    if reply == NULL:
        raise MemoryError()
    memcpy(reply, <const char*>head, head_len)
    try:
        while taken < limit:
            seq = next_match(store, f, start)
            if seq == 0:
                break
            if plan is not None:
                # the record where it lies in the block's cache (loaded for the run)
                mb = store.c_select_block(seq)
                if mb is None or mb.deleted.c_exists(seq):
                    break
                store.c_ensure_loaded(mb)
                if mb.c_record(seq, &view, &rec) != 0:
                    break
                ts = view.ts
            else:
                msg = store.c_load(seq)
                if msg is None:
                    break
                ts = msg.ts
            start = seq + 1
            pending_count -= 1
            pending = pending_count if pending_count > 0 else 0
            p = _put_number(reply + head_len, seq)
            p = _put_number(p, delivery_seq)
            if ts < 0:              # (never from a clock, but written as Python would)
                p[0] = 45
                p = _put_number(p + 1, <uint64_t>(-(ts + 1)) + 1)
            else:
                p = _put_number(p, <uint64_t>ts)
            p = _put_number(p, <uint64_t>pending) - 1      # (no dot after the last)
            if plan is not None:
                plan.deliver(None, &interest.rng,
                             <const char*>rec + view.subj_off, view.subj_len,
                             reply, p - reply,
                             <const char*>rec + view.hdr_off,
                             view.hdr_len if view.has_hdr else 0,
                             <const char*>rec + view.msg_off, view.msg_len)
            else:
                msgs.append(msg_type(msg.subject, msg.msg, msg.hdr or None,
                                     PyUnicode_DecodeUTF8(reply, p - reply,
                                                          "surrogateescape"), to))
                if metas is not None:
                    metas.append((seq, delivery_seq, 1, ts, pending))
            seqs.append(seq)
            delivery_seq += 1
            taken += 1
    finally:
        free(reply)
    return taken
