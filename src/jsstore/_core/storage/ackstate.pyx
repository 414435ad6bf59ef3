"""Consumer ack state (see ackstate.pxd for the layout).

The containers live in seqmap.pyx, the o.dat codec in odat.pyx.
"""
from libc.stdint cimport uint8_t, uint64_t, int64_t
from libc.stdlib cimport free

from jsstore._core.storage.seqmap cimport (MapEntry, SeqMap, MAP_MIN_CAPACITY, map_init, map_free,
                                           map_find, map_upsert, map_remove, map_reset,
                                           map_sorted_keys, order_free, order_clear, order_append,
                                           order_rebuild, order_next_live, order_kill,
                                           order_next_above, map_remove_entry)
from jsstore._core.storage.odat cimport ConsumerSeqs, odat_encode, odat_parse

import time

from jsstore.errors import MsgNotFound, NoAckPolicy
from jsstore.state import ConsumerState, Pending, SequencePair

ACK_POLICIES = {"none": ACK_NONE, "all": ACK_ALL, "explicit": ACK_EXPLICIT,
                "flow_control": ACK_FLOW_CONTROL}
_POLICY_NAMES = {code: name for name, code in ACK_POLICIES.items()}


cdef class AckState:
    """In-memory consumer state with nats-server's update semantics.

    ``AckState(ack_policy="explicit", max_deliver=-1)``; ack_policy is one of
    ``none``, ``all``, ``explicit``, ``flow_control``.
    """

    def __cinit__(self):
        if map_init(&self.pending, MAP_MIN_CAPACITY) < 0 or \
                map_init(&self.redelivered, MAP_MIN_CAPACITY) < 0:
            raise MemoryError()

    def __init__(self, ack_policy="explicit", max_deliver=-1):
        self.ack_policy = ack_policy
        self.max_deliver = max_deliver

    def __dealloc__(self):
        map_free(&self.pending)
        map_free(&self.redelivered)
        order_free(&self.order)

    # -- configuration --------------------------------------------------------------------

    @property
    def ack_policy(self):
        return _POLICY_NAMES[self.ack_policy_code]

    @ack_policy.setter
    def ack_policy(self, value):
        if value not in ACK_POLICIES:
            raise ValueError(f"unknown ack policy {value!r}")
        self.ack_policy_code = ACK_POLICIES[value]

    @property
    def max_deliver(self):
        return self.max_deliver_limit

    @max_deliver.setter
    def max_deliver(self, int64_t value):
        self.max_deliver_limit = value

    @property
    def num_pending(self):
        return self.pending.count

    @property
    def num_redelivered(self):
        return self.redelivered.count

    def pending_entry(self, uint64_t sseq):
        """(delivery seq, timestamp) of a pending stream seq, or None."""
        cdef MapEntry* entry = map_find(&self.pending, sseq)
        return None if entry == NULL else (entry.value, entry.ts)

    def next_pending_above(self, uint64_t sseq):
        """(stream seq, delivery seq) of the lowest pending seq above sseq, or None."""
        cdef uint64_t found = order_next_above(&self.order, sseq)
        if found == 0:
            return None
        cdef MapEntry* entry = map_find(&self.pending, found)
        return None if entry == NULL else (found, entry.value)

    def pending_items(self):
        """Every pending entry as (stream seq, delivery seq, timestamp), ascending."""
        cdef list out = []
        cdef MapEntry* entry
        cdef size_t i = order_next_live(&self.order, self.order.head)
        while i < self.order.count:
            entry = map_find(&self.pending, self.order.seqs[i])
            out.append((entry.key, entry.value, entry.ts))
            i = order_next_live(&self.order, i + 1)
        return out

    def scan_pending(self, int64_t now, int64_t ack_wait, uint64_t keep_from,
                     int64_t next_wait, list backoff=None, dict rdc=None):
        """One pass of nats-server's checkPending over the pending seqs, in C.

        Returns (stale, expired, next_wait): stale is [(stream seq, delivery seq)] of the
        pending seqs below keep_from (gone from the stream, or at or below the consumer's
        ack floor); expired the stream seqs, ascending, whose deadline has passed: the
        ack wait, or with a backoff list the step for the seq's redelivery count in rdc
        (the last step once past the end); next_wait the least time left to any other
        deadline, starting from the given next_wait (with backoff also each counted seq's
        next step)."""
        cdef list stale = [], expired = []
        cdef MapEntry* entry
        cdef uint64_t seq
        cdef int64_t elapsed, deadline, step
        cdef Py_ssize_t dc, nbi, steps = len(backoff) if backoff else 0
        cdef size_t i = order_next_live(&self.order, self.order.head)
        while i < self.order.count:
            seq = self.order.seqs[i]
            i = order_next_live(&self.order, i + 1)
            entry = map_find(&self.pending, seq)
            if seq < keep_from:
                stale.append((seq, entry.value))
                continue
            elapsed = now - entry.ts
            deadline = ack_wait
            if steps:
                dc = rdc.get(seq, 0) if rdc else 0
                if dc < 0:
                    dc = 0
                nbi = dc + 1
                if dc + 1 >= steps:
                    dc = nbi = steps - 1
                deadline = backoff[dc]
                step = backoff[nbi]
                if step < next_wait:
                    next_wait = step
            if elapsed >= deadline:
                expired.append(seq)
            elif deadline - elapsed < next_wait:
                next_wait = deadline - elapsed
        return stale, expired, next_wait

    def redelivery_count(self, uint64_t sseq):
        """How many times sseq was redelivered (0 when not recorded)."""
        cdef MapEntry* entry = map_find(&self.redelivered, sseq)
        return 0 if entry == NULL else entry.value

    # -- internals ------------------------------------------------------------------------

    cdef int _pending_add(self, uint64_t sseq, uint64_t dseq, int64_t ts) except -1:
        cdef bint created
        cdef MapEntry* entry = map_upsert(&self.pending, sseq, &created)
        if entry == NULL:
            raise MemoryError()
        entry.value = dseq
        entry.ts = ts
        if not created:
            return 0
        if self.order.count and sseq <= self.order.seqs[self.order.count - 1]:
            return self._rebuild_order()     # out of order: only after set_starting moved back
        if order_append(&self.order, sseq) < 0:
            raise MemoryError()
        entry.pos = self.order.count - 1
        return 0

    cdef bint _pending_remove(self, uint64_t sseq) noexcept nogil:
        cdef MapEntry* entry = map_find(&self.pending, sseq)
        if entry == NULL:
            return False
        # the order first: compacting it rewrites the pos of the entries still in the map
        order_kill(&self.order, &self.pending, entry.pos)
        map_remove_entry(&self.pending, entry)     # compaction moves no map entries
        return True

    cdef int _rebuild_order(self) except -1:
        if order_rebuild(&self.order, &self.pending) < 0:
            raise MemoryError()
        return 0

    cdef void _clear(self) noexcept nogil:
        self.delivered_consumer = self.delivered_stream = 0
        self.ack_floor_consumer = self.ack_floor_stream = 0
        map_reset(&self.pending)
        map_reset(&self.redelivered)
        order_clear(&self.order)

    cdef void _take(self, AckState other) noexcept:
        """Move other's sequences and maps into self (other gets self's old ones)."""
        self.delivered_consumer, other.delivered_consumer = other.delivered_consumer, self.delivered_consumer
        self.delivered_stream, other.delivered_stream = other.delivered_stream, self.delivered_stream
        self.ack_floor_consumer, other.ack_floor_consumer = other.ack_floor_consumer, self.ack_floor_consumer
        self.ack_floor_stream, other.ack_floor_stream = other.ack_floor_stream, self.ack_floor_stream
        self.pending, other.pending = other.pending, self.pending
        self.redelivered, other.redelivered = other.redelivered, self.redelivered
        self.order, other.order = other.order, self.order

    # -- nats ConsumerStore semantics -----------------------------------------------------

    def set_starting(self, uint64_t sseq):
        """Start delivering after sseq: delivered.stream = ack_floor.stream = sseq."""
        self.delivered_stream = sseq
        self.ack_floor_stream = sseq

    def update_starting(self, uint64_t sseq):
        """Raise delivered.stream to sseq if higher (AckNone: the ack floor too)."""
        if sseq > self.delivered_stream:
            self.delivered_stream = sseq
            if self.ack_policy_code == ACK_NONE:
                self.ack_floor_stream = sseq

    def reset(self, uint64_t sseq):
        """Forget everything, then set_starting(sseq)."""
        self._clear()
        self.set_starting(sseq)

    def update_delivered(self, uint64_t dseq, uint64_t sseq, uint64_t dc, int64_t ts):
        """Record delivery number dc of stream seq sseq as consumer seq dseq at ts (Unix ns).

        Returns False when the update is older than the ack floor and was ignored.
        """
        return self._update_delivered(dseq, sseq, dc, ts) == 1

    def update_delivered_run(self, uint64_t first_dseq, list sseqs, int64_t ts):
        """update_delivered of first deliveries (dc 1) of sseqs[i] as consumer seq
        first_dseq + i, in order, all at ts.  Returns whether any was recorded."""
        cdef Py_ssize_t i
        cdef bint any_recorded = False
        for i in range(len(sseqs)):
            if self._update_delivered(first_dseq + <uint64_t>i, <uint64_t>sseqs[i], 1, ts) == 1:
                any_recorded = True
        return any_recorded

    cdef int _update_delivered(self, uint64_t dseq, uint64_t sseq, uint64_t dc,
                               int64_t ts) except -1:
        """update_delivered: 1 recorded, 0 older than the ack floor."""
        if dc != 1 and self.ack_policy_code == ACK_NONE:
            raise NoAckPolicy()
        if dseq <= self.ack_floor_consumer:
            return 0
        cdef MapEntry* entry
        cdef bint created
        if self.ack_policy_code == ACK_NONE:
            if dseq > self.delivered_consumer:
                self.delivered_consumer = self.ack_floor_consumer = dseq
            if sseq > self.delivered_stream:
                self.delivered_stream = self.ack_floor_stream = sseq
            return 1
        if sseq <= self.delivered_stream:
            entry = map_find(&self.pending, sseq)
            if entry != NULL:
                entry.ts = ts            # a redelivery keeps its original delivery seq
        else:
            self._pending_add(sseq, dseq, ts)
        if dseq > self.delivered_consumer:
            self.delivered_consumer = dseq
        if sseq > self.delivered_stream:
            self.delivered_stream = sseq
        if dc > 1:
            if self.max_deliver_limit > 0 and dc > <uint64_t>self.max_deliver_limit:
                self._pending_remove(sseq)
            entry = map_upsert(&self.redelivered, sseq, &created)
            if entry == NULL:
                raise MemoryError()
            if entry.value < dc - 1:
                entry.value = dc - 1
        return 1

    def update_acks(self, uint64_t dseq, uint64_t sseq):
        """Apply an ack of (dseq, sseq). Returns False when older than the ack floor."""
        cdef int applied = self._update_acks(dseq, sseq)
        if applied < 0:
            raise MsgNotFound()
        return applied == 1

    cdef int _update_acks(self, uint64_t dseq, uint64_t sseq) except -2:
        """update_acks: 1 applied, 0 older than the ack floor, -1 not pending."""
        if self.ack_policy_code == ACK_NONE:
            raise NoAckPolicy()
        map_remove(&self.redelivered, sseq)
        if dseq <= self.ack_floor_consumer:
            return 0
        cdef MapEntry* entry = map_find(&self.pending, sseq)
        if entry == NULL:
            return -1
        cdef uint64_t gap, seq, low, next_seq
        if self.ack_policy_code == ACK_ALL or self.ack_policy_code == ACK_FLOW_CONTROL:
            gap = sseq - self.ack_floor_stream
            self.ack_floor_consumer = dseq
            self.ack_floor_stream = sseq
            if gap > self.pending.count:
                # Everything pending at or below sseq sits at the front of the order.
                while self.order.live_count and self.order.seqs[self.order.head] <= sseq:
                    seq = self.order.seqs[self.order.head]
                    self._pending_remove(seq)
                    map_remove(&self.redelivered, seq)
            else:
                seq = sseq
                low = sseq - gap
                while seq > low and self.pending.count:
                    self._pending_remove(seq)
                    map_remove(&self.redelivered, seq)
                    seq -= 1
            return 1
        if dseq > entry.value and entry.value > 0:
            dseq = entry.value           # the original delivery seq
        self._pending_remove(sseq)
        if self.pending.count == 0:
            self.ack_floor_consumer = self.delivered_consumer
            self.ack_floor_stream = self.delivered_stream
        elif dseq == self.ack_floor_consumer + 1:
            self.ack_floor_consumer = dseq
            self.ack_floor_stream = sseq
            if self.delivered_consumer > dseq:
                next_seq = order_next_above(&self.order, sseq)
                if next_seq and next_seq <= self.delivered_stream:
                    entry = map_find(&self.pending, next_seq)
                    if entry.value > 0:
                        self.ack_floor_consumer = entry.value - 1
                        self.ack_floor_stream = next_seq - 1
        return 1

    def ack_explicit_run(self, list sseqs, list dseqs, uint64_t floor_d, uint64_t floor_s,
                         uint64_t next_dseq, uint64_t next_sseq):
        """A run of explicit acks of delivered messages, in order, each as the consumer's
        Acknowledgements.ack applies it: `sseqs` / `dseqs` the stream and delivery seqs of
        the ack subjects (every sseq below next_sseq).  A pending seq is acked by its own
        delivery seq (update_acks) and moves the consumer's ack floor (floor_d, floor_s:
        moveAckFloor, against next_dseq / next_sseq); one not pending goes to update_acks
        by the subject's delivery seq (its redelivery count dropped; MsgNotFound ignored).
        Returns (floor_d, floor_s, whether the stored state changed)."""
        cdef Py_ssize_t i, n = len(sseqs)
        cdef uint64_t sseq, dseq, above
        cdef MapEntry* entry
        cdef size_t redelivered_before
        cdef bint changed = False
        if len(dseqs) != n:
            raise ValueError("sseqs and dseqs differ in length")
        for i in range(n):
            sseq = sseqs[i]
            redelivered_before = self.redelivered.count
            entry = map_find(&self.pending, sseq)
            if entry == NULL:
                if self._update_acks(<uint64_t>dseqs[i], sseq) == 1:
                    changed = True
                elif self.redelivered.count != redelivered_before:
                    changed = True
                continue
            dseq = entry.value
            if self._update_acks(dseq, sseq) == 1 or self.redelivered.count != redelivered_before:
                changed = True
            if self.pending.count == 0:
                floor_d = next_dseq - 1
                floor_s = next_sseq - 1
            elif dseq == floor_d + 1:
                floor_d = dseq
                floor_s = sseq
                above = order_next_above(&self.order, sseq)
                if above != 0 and above < next_sseq:
                    entry = map_find(&self.pending, above)
                    if entry != NULL and entry.value > 0:
                        floor_d = entry.value - 1
                        floor_s = above - 1
        return floor_d, floor_s, changed

    def remove_redelivered_below(self, uint64_t seq):
        """Forget the redelivery counts of stream seqs below seq. True if any was removed."""
        if seq == 0 or self.redelivered.count == 0:
            return False
        cdef SeqMap kept
        cdef MapEntry* entry
        cdef bint created
        cdef size_t i
        if map_init(&kept, MAP_MIN_CAPACITY) < 0:
            raise MemoryError()
        for i in range(self.redelivered.capacity):
            if self.redelivered.used[i] and self.redelivered.entries[i].key >= seq:
                entry = map_upsert(&kept, self.redelivered.entries[i].key, &created)
                if entry == NULL:
                    map_free(&kept)
                    raise MemoryError()
                entry.value = self.redelivered.entries[i].value
        removed = kept.count != self.redelivered.count
        map_free(&self.redelivered)
        self.redelivered = kept
        return removed

    # -- Python boundary ------------------------------------------------------------------

    def state(self):
        """A ConsumerState copy (pending in ascending stream order); maps are None when empty."""
        cdef size_t i
        cdef uint64_t* keys
        cdef MapEntry* entry
        pending = redelivered = None
        if self.pending.count:
            pending = {}
            i = order_next_live(&self.order, self.order.head)
            while i < self.order.count:
                entry = map_find(&self.pending, self.order.seqs[i])
                pending[entry.key] = Pending(entry.value, entry.ts)
                i = order_next_live(&self.order, i + 1)
        if self.redelivered.count:
            keys = map_sorted_keys(&self.redelivered)
            try:
                redelivered = {keys[i]: map_find(&self.redelivered, keys[i]).value
                               for i in range(self.redelivered.count)}
            finally:
                free(keys)
        return ConsumerState(SequencePair(self.delivered_consumer, self.delivered_stream),
                             SequencePair(self.ack_floor_consumer, self.ack_floor_stream),
                             pending, redelivered)

    def load(self, state):
        """Replace everything with a ConsumerState (no validation; see the stores' update)."""
        cdef AckState fresh = AckState(self.ack_policy, self.max_deliver_limit)
        cdef MapEntry* entry
        cdef bint created
        fresh.delivered_consumer = state.delivered.consumer_seq
        fresh.delivered_stream = state.delivered.stream_seq
        fresh.ack_floor_consumer = state.ack_floor.consumer_seq
        fresh.ack_floor_stream = state.ack_floor.stream_seq
        for sseq, pending in (state.pending or {}).items():
            entry = map_upsert(&fresh.pending, sseq, &created)
            if entry == NULL:
                raise MemoryError()
            entry.value = pending.sequence
            entry.ts = pending.timestamp
        for sseq, count in (state.redelivered or {}).items():
            entry = map_upsert(&fresh.redelivered, sseq, &created)
            if entry == NULL:
                raise MemoryError()
            entry.value = count
        fresh._rebuild_order()
        self._take(fresh)

    def encode(self, now_ns=None):
        """o.dat version 2. now_ns (Unix ns) sets the timestamp base; default: the clock."""
        now = time.time_ns() if now_ns is None else int(now_ns)
        cdef int64_t mints = (now + 500_000_000) // 1_000_000_000  # Go: Round(time.Second)
        cdef ConsumerSeqs seqs
        seqs.delivered_consumer = self.delivered_consumer
        seqs.delivered_stream = self.delivered_stream
        seqs.ack_floor_consumer = self.ack_floor_consumer
        seqs.ack_floor_stream = self.ack_floor_stream
        return odat_encode(mints, &seqs, &self.pending, &self.order, &self.redelivered)

    def load_encoded(self, buf):
        """Replace everything with a decoded o.dat (v1 or v2). CorruptStreamState on garbage."""
        cdef AckState fresh = AckState(self.ack_policy, self.max_deliver_limit)
        cdef const uint8_t[::1] view = buf
        cdef ConsumerSeqs seqs
        odat_parse(&view[0] if view.shape[0] else NULL, view.shape[0], &seqs,
                   &fresh.pending, &fresh.redelivered)
        fresh.delivered_consumer = seqs.delivered_consumer
        fresh.delivered_stream = seqs.delivered_stream
        fresh.ack_floor_consumer = seqs.ack_floor_consumer
        fresh.ack_floor_stream = seqs.ack_floor_stream
        fresh._rebuild_order()
        self._take(fresh)

    @staticmethod
    def decode(buf):
        """Decode an o.dat buffer (v1 or v2) into a ConsumerState."""
        return decode(buf)


def decode(buf):
    """Decode an o.dat buffer (version 1 or 2) into a ConsumerState.

    Raises CorruptStreamState on a bad header, an unknown version, or truncated or
    overlong varints among the sequences and pending entries.
    """
    cdef AckState parsed = AckState()
    parsed.load_encoded(buf)
    return parsed.state()
