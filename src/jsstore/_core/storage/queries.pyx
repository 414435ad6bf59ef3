"""Queries over the engine state (see queries.pxd).

A filter takes a stored subject token by token: a literal token of the filter the same
token, `*` any one token, `>` the rest.  A subject published with `*` or `>` tokens is
stored as published, and those tokens are tokens like any other ("kv.a.*" lies under the
filters "kv.a.*", "kv.*.*" and "kv.>", not under "kv.a.b").  nats-server tests some of its
store paths with subjectIsSubsetMatch instead, where a stored `>` token lies under a `>`
of the filter only: "s.>" is not under "s.*" there.  Which paths, the two stores differ
(checked against nats-server in tests/test_server_wildcard_publish.py), and a store says
so in two flags: ``subset_next`` (the file store's load_next_msg with one filter: what a
consumer with one filter delivers, next_by_subj) and ``subset_subjects`` (the memory
store's subjects_state and subjects_totals).  A filtered purge removes by the subset test
in both stores (purge_ex).
"""

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdlib cimport free

from jsstore._core.storage.engine cimport BlockStore
from jsstore._core.storage.block cimport MsgBlock
from jsstore._core.storage.subjects cimport SubjectIndex, BlockSubjects, BlockSubj
from jsstore._core.storage.record cimport StoreMsg
from jsstore.errors import StoreClosed, MsgNotFound, StoreEOF, TooManyResults
from jsstore.state import SimpleState, StreamState, LostStreamData

cdef uint32_t SLOT_EMPTY = 0xFFFFFFFF
cdef int SMALL_FILTER = 16        # up to this many subjects: per-subject lookups beat scans


cdef inline bytes _filter_bytes(object flt):
    return flt.encode() if isinstance(flt, str) else bytes(flt)


cdef Filter compile_filter(BlockStore store, object flt, bint subset=False):
    cdef Filter f = Filter.__new__(Filter)
    cdef list filters
    cdef bytes fb
    cdef uint32_t* ids
    cdef Py_ssize_t n, i
    cdef int64_t sid
    cdef SubjectIndex psim = store.psim
    cdef set seen = set()
    if flt is None or isinstance(flt, (str, bytes)):
        filters = [flt] if flt else []
    else:
        filters = list(flt)
        subset = False          # several filters: a sublist's match (nats-server's Multi loads)
    filters = [_filter_bytes(x) for x in filters if x]
    if not filters or b">" in filters:
        f.kind = FILTER_ALL
        return f
    f.sids = []
    for fb in filters:
        n = psim.c_match(<const char*>fb, len(fb), &ids, subset)
        try:
            for i in range(n):
                if ids[i] not in seen:
                    seen.add(ids[i])
                    f.sids.append(ids[i])
        finally:
            free(ids)
    if not f.sids:
        f.kind = FILTER_NONE
    elif len(f.sids) == 1:
        f.kind = FILTER_ONE
        f.sid = f.sids[0]
    else:
        f.kind = FILTER_MASK
        f.mask_len = psim.n_entries
        f.mask = bytearray(f.mask_len)
        for sid in f.sids:
            f.mask[sid] = 1
    return f


cdef inline int _check_open(BlockStore store) except -1:
    if store.closed:
        raise StoreClosed()
    return 0


cdef uint64_t next_match(BlockStore store, Filter f, uint64_t start) except? 0:
    """Lowest live sequence >= start whose subject matches (0 if none)."""
    cdef Py_ssize_t pos, n = PyList_GET_SIZE(store.blocks)
    cdef MsgBlock mb
    cdef uint64_t seq, best = 0
    cdef object sid
    if start < store.first_seq:
        start = store.first_seq
    if start > store.last_seq or store.msgs == 0 or f.kind == FILTER_NONE:
        return 0
    if f.kind == FILTER_ONE:
        return store.c_subject_first(f.sid, start)
    if f.kind == FILTER_MASK and len(f.sids) <= SMALL_FILTER:
        for sid in f.sids:
            seq = store.c_subject_first(<uint32_t>sid, start)
            if seq and (best == 0 or seq < best):
                best = seq
        return best
    pos = store.c_block_pos(start)
    while pos < n:
        mb = <MsgBlock>PyList_GET_ITEM(store.blocks, pos)
        pos += 1
        if mb.msgs == 0 or mb.last_seq < start:
            continue
        if f.kind == FILTER_ALL:
            seq = mb.c_next_live(start)
        else:
            store.c_ensure_loaded(mb)
            seq = mb.c_find_mask(<const uint8_t*><char*>f.mask, f.mask_len, start, mb.last_seq, False)
        if seq:
            return seq
    return 0


cdef uint64_t prev_match(BlockStore store, Filter f, uint64_t start) except? 0:
    """Highest live sequence <= start whose subject matches (0 if none)."""
    cdef Py_ssize_t pos
    cdef MsgBlock mb
    cdef uint64_t seq, best = 0
    cdef object sid
    if start > store.last_seq:
        start = store.last_seq
    if start < store.first_seq or store.msgs == 0 or f.kind == FILTER_NONE:
        return 0
    if f.kind == FILTER_ONE:
        return store.c_subject_last(f.sid, start)
    if f.kind == FILTER_MASK and len(f.sids) <= SMALL_FILTER:
        for sid in f.sids:
            seq = store.c_subject_last(<uint32_t>sid, start)
            if seq > best:
                best = seq
        return best
    pos = store.c_block_pos(start)
    if pos >= PyList_GET_SIZE(store.blocks):
        pos = PyList_GET_SIZE(store.blocks) - 1
    while pos >= 0:
        mb = <MsgBlock>PyList_GET_ITEM(store.blocks, pos)
        pos -= 1
        if mb.msgs == 0 or mb.first_seq > start:
            continue
        if f.kind == FILTER_ALL:
            seq = mb.c_prev_live(start)
        else:
            store.c_ensure_loaded(mb)
            seq = mb.c_find_mask(<const uint8_t*><char*>f.mask, f.mask_len, mb.first_seq, start, True)
        if seq:
            return seq
    return 0


cdef uint64_t _block_count(BlockStore store, MsgBlock mb, Filter f, uint64_t lo, uint64_t hi) except? 0:
    """Matching live messages of one block within [lo, hi]."""
    cdef BlockSubj* bsub
    cdef BlockSubjects subjects
    cdef uint64_t total = 0, first, last, outside
    cdef uint32_t i
    cdef bint whole
    if mb.msgs == 0 or hi < mb.first_seq or lo > mb.last_seq:
        return 0
    whole = lo <= mb.first_seq and hi >= mb.last_seq
    if f.kind == FILTER_ALL:
        return mb.c_count_live(lo, hi)
    store.c_ensure_loaded(mb)
    subjects = mb.subjects
    if f.kind == FILTER_ONE:
        bsub = subjects.c_get(f.sid)
        if bsub == NULL or bsub.count == 0:
            return 0
        if whole or (lo <= bsub.first_seq and hi >= bsub.last_seq):
            return bsub.count
        # scan whichever is shorter: the range, or the rest of the subject's span in the block
        first = bsub.first_seq if bsub.first_seq > mb.first_seq else mb.first_seq
        last = bsub.last_seq if bsub.last_seq < mb.last_seq else mb.last_seq
        if lo < first:
            lo = first
        if hi > last:
            hi = last
        if lo > hi:
            return 0
        if (hi - lo + 1) * 2 <= last - first + 1:
            return mb.c_count_sid(f.sid, lo, hi)
        outside = 0
        if lo > first:
            outside += mb.c_count_sid(f.sid, first, lo - 1)
        if hi < last:
            outside += mb.c_count_sid(f.sid, hi + 1, last)
        return bsub.count - outside
    if whole:
        for i in range(subjects.mask + 1):
            bsub = &subjects.slots[i]
            if bsub.sid != SLOT_EMPTY and bsub.count > 0 and bsub.sid < f.mask_len and f.mask[bsub.sid]:
                total += bsub.count
        return total
    return mb.c_count_mask(<const uint8_t*><char*>f.mask, f.mask_len, lo, hi)


cdef uint64_t count_from(BlockStore store, Filter f, uint64_t sseq) except? 0:
    """Matching live messages with sequence >= sseq."""
    cdef uint64_t total = 0, before = 0
    cdef Py_ssize_t pos, i, n = PyList_GET_SIZE(store.blocks)
    cdef object sid
    cdef MsgBlock mb
    if sseq < store.first_seq:
        sseq = store.first_seq
    if sseq > store.last_seq or store.msgs == 0 or f.kind == FILTER_NONE:
        return 0
    if f.kind == FILTER_ALL:
        total = store.msgs
    else:
        for sid in f.sids:
            total += store.psim.total(<uint32_t>sid)
    if sseq <= store.first_seq:
        return total
    if f.kind == FILTER_ONE:
        if sseq <= store.psim.first_seq(f.sid):
            return total
        if sseq > store.psim.last_seq(f.sid):
            return 0
    pos = store.c_block_pos(sseq)
    if pos * 2 < n:
        # fewer blocks before sseq: subtract what lies below it
        for i in range(pos + 1):
            mb = <MsgBlock>PyList_GET_ITEM(store.blocks, i)
            before += _block_count(store, mb, f, 0, sseq - 1)
        return total - before
    for i in range(pos, n):
        mb = <MsgBlock>PyList_GET_ITEM(store.blocks, i)
        before += _block_count(store, mb, f, sseq, store.last_seq)
    return before


# -- the query methods (bound onto the store classes) -------------------------------

def load_next_msg(BlockStore self, filter, uint64_t start, subset=None):
    """First message with seq >= start matching filter: (msg, seq); StoreEOF when none.
    `subset` (one filter): a stored `>` token lies under a `>` of the filter only; None
    is the store's way (``subset_next``)."""
    _check_open(self)
    cdef bint by_subset = self.subset_next if subset is None else subset
    cdef uint64_t seq = next_match(self, compile_filter(self, filter, by_subset), start)
    if seq == 0:
        raise StoreEOF()
    return self.c_load(seq), seq


def load_prev_msg(BlockStore self, filter, uint64_t start):
    """Last message with seq <= start matching filter; StoreEOF when none."""
    _check_open(self)
    cdef uint64_t seq = prev_match(self, compile_filter(self, filter), start)
    if seq == 0:
        raise StoreEOF()
    return self.c_load(seq)


def load_last_msg(BlockStore self, subject):
    """Last message whose subject matches (wildcards allowed; "" or ">" = the last message)."""
    _check_open(self)
    cdef uint64_t seq = prev_match(self, compile_filter(self, subject), self.last_seq)
    if seq == 0:
        raise MsgNotFound()
    return self.c_load(seq)


def num_pending(BlockStore self, uint64_t sseq, filter, bint last_per_subject=False):
    """(matching messages with seq >= sseq, last_seq); with last_per_subject, count subjects."""
    _check_open(self)
    cdef Filter f = compile_filter(self, filter)
    cdef uint64_t count = 0
    cdef uint32_t sid
    if not last_per_subject:
        return count_from(self, f, sseq), self.last_seq
    if sseq < self.first_seq:
        sseq = self.first_seq
    if f.kind == FILTER_NONE:
        return 0, self.last_seq
    for sid in (_live_ids(self.psim) if f.kind == FILTER_ALL else f.sids):
        if self.psim.last_seq(sid) >= sseq and self.c_subject_last(sid, 0) >= sseq:
            count += 1
    return count, self.last_seq


def filtered_state(BlockStore self, uint64_t sseq, subject):
    """SimpleState(msgs, first, last) of the messages >= sseq matching subject."""
    _check_open(self)
    cdef Filter f = compile_filter(self, subject)
    cdef uint64_t msgs = count_from(self, f, sseq)
    if msgs == 0:
        return SimpleState(0, 0, 0)
    return SimpleState(msgs, next_match(self, f, sseq), prev_match(self, f, self.last_seq))


cdef list _live_ids(SubjectIndex psim):
    cdef uint32_t sid
    return [sid for sid in range(psim.n_entries) if psim.in_use(sid) and psim.total(sid) > 0]


cdef list _filter_ids(BlockStore store, object flt, bint subset=False):
    cdef Filter f = compile_filter(store, flt, subset)
    if f.kind == FILTER_ALL:
        return _live_ids(store.psim)
    if f.kind == FILTER_NONE:
        return []
    return f.sids


def subjects_totals(BlockStore self, filter=">"):
    _check_open(self)
    cdef uint32_t sid
    return {self.psim.subject_str(sid): self.psim.total(sid)
            for sid in _filter_ids(self, filter, self.subset_subjects)}


def subjects_state(BlockStore self, filter=">"):
    _check_open(self)
    cdef uint32_t sid
    cdef dict out = {}
    for sid in _filter_ids(self, filter, self.subset_subjects):
        out[self.psim.subject_str(sid)] = SimpleState(self.psim.total(sid),
                                                      self.c_subject_first(sid, 0),
                                                      self.c_subject_last(sid, 0))
    return out


def multi_last_seqs(BlockStore self, filters, uint64_t max_seq=0, int64_t max_allowed=0):
    """Sorted last sequence <= max_seq of every subject matching any of filters."""
    _check_open(self)
    cdef uint32_t sid
    cdef uint64_t seq
    cdef list out = []
    if isinstance(filters, (str, bytes)):
        filters = [filters]
    if max_seq == 0 or max_seq > self.last_seq:
        max_seq = self.last_seq
    for sid in _filter_ids(self, list(filters) or [">"]):
        seq = self.c_subject_last(sid, max_seq)
        if seq:
            out.append(seq)
            if 0 < max_allowed < len(out):
                raise TooManyResults()
    out.sort()
    return out


def all_last_seqs(BlockStore self):
    _check_open(self)
    cdef uint32_t sid
    out = [self.c_subject_last(sid, 0) for sid in _live_ids(self.psim)]
    out.sort()
    return out


def get_seq_from_time(BlockStore self, int64_t ts):
    """First sequence whose timestamp is >= ts, or last_seq + 1."""
    _check_open(self)
    cdef MsgBlock mb
    cdef uint64_t seq
    cdef StoreMsg sm
    if self.msgs == 0:
        return self.last_seq + 1
    if ts <= self.first_ts:
        return self.first_seq
    for mb in self.blocks:
        if mb.msgs == 0 or mb.last_ts < ts:
            continue
        seq = mb.c_next_live(mb.first_seq)
        while seq:
            sm = self.c_load(seq)
            if sm is not None and sm.ts >= ts:
                return seq
            seq = mb.c_next_live(seq + 1)
    return self.last_seq + 1


def deleted_list(BlockStore self):
    """Every sequence in [first_seq, last_seq] that holds no message, ascending."""
    cdef list out = []
    cdef MsgBlock mb
    cdef uint64_t expect = self.first_seq
    cdef uint64_t s
    for mb in self.blocks:
        if mb.msgs == 0:
            continue
        if mb.first_seq > expect:
            out.extend(range(expect, mb.first_seq))
        for s in mb.deleted:
            if mb.first_seq <= s <= mb.last_seq:
                out.append(s)
        expect = mb.last_seq + 1
    if self.msgs and expect <= self.last_seq:
        out.extend(range(expect, self.last_seq + 1))
    return out


def fast_state(BlockStore self):
    st = StreamState()
    _fill_state(self, st)
    return st


def state(BlockStore self):
    st = StreamState()
    _fill_state(self, st)
    st.deleted = deleted_list(self) if st.num_deleted else None
    return st


cdef _fill_state(BlockStore self, object st):
    st.messages = self.msgs
    st.bytes = self.bytes
    st.first_seq = self.first_seq
    st.first_ts = self.first_ts if self.msgs else 0
    st.last_seq = self.last_seq
    st.last_ts = self.last_ts
    st.num_subjects = self.psim.n_live
    st.num_deleted = (self.last_seq - self.first_seq + 1 - self.msgs) if self.msgs else 0
    if self.lost_msgs:
        st.lost = LostStreamData(list(self.lost_msgs), self.lost_bytes)
    st.consumer_count = getattr(self, "consumer_count", 0)
