"""Consumer ack state (see ackstate.pxd for the layout) and the o.dat codec.

o.dat, as nats-server writes it (``encodeConsumerState``), all varints Go-style:

    [0] 22 (magic)   [1] 2 (version)
    uvarint ack_floor.consumer, uvarint ack_floor.stream,
    uvarint delivered.consumer, uvarint delivered.stream
    uvarint number of pending entries
      if > 0: varint mints  (now rounded to the second, Unix seconds)
              per entry: uvarint sseq - ack_floor.stream,
                         uvarint dseq - ack_floor.consumer   (version 2 only)
                         varint  mints - ts/1e9              (version 1: ts/1e9 - mints)
    uvarint number of redelivered entries
      per entry: uvarint sseq - ack_floor.stream, uvarint count

Differences are taken modulo 2**64 like Go's uint64 arithmetic. Version 1 stored
delivered as "next to deliver", relative to the ack floor. nats-server writes entries in
map order; we write them in ascending stream sequence order, which it reads the same way.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint64_t, int64_t
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memset

import time

from jsstore.errors import CorruptStreamState, MsgNotFound, NoAckPolicy
from jsstore.store import ConsumerState, Pending, SequencePair

cdef extern from "varint.h" nogil:
    size_t put_uvarint(uint8_t* out, uint64_t v)
    size_t put_varint(uint8_t* out, int64_t v)
    int get_uvarint(const uint8_t* buf, size_t n, size_t* pos, uint64_t* out)
    int get_varint(const uint8_t* buf, size_t n, size_t* pos, int64_t* out)

cdef extern from * nogil:
    int __builtin_ctzll(unsigned long long x)

cdef enum:
    VARINT_MAX = 10
    NS_PER_SECOND = 1000000000

ACK_POLICIES = {"none": ACK_NONE, "all": ACK_ALL, "explicit": ACK_EXPLICIT,
                "flow_control": ACK_FLOW_CONTROL}
_POLICY_NAMES = {code: name for name, code in ACK_POLICIES.items()}


# -- u64 -> entry hash map: linear probing, backward-shift deletion -------------------------

cdef inline size_t _home(uint64_t key, size_t capacity) noexcept nogil:
    key ^= key >> 33
    key *= <uint64_t>0xff51afd7ed558ccd
    key ^= key >> 33
    key *= <uint64_t>0xc4ceb9fe1a85ec53
    key ^= key >> 33
    return <size_t>(key & (capacity - 1))

cdef int map_init(SeqMap* m, size_t capacity) noexcept nogil:
    m.entries = <MapEntry*>malloc(capacity * sizeof(MapEntry))
    m.used = <uint8_t*>calloc(capacity, 1)
    m.count = 0
    if m.entries == NULL or m.used == NULL:
        free(m.entries)
        free(m.used)
        m.entries = NULL
        m.used = NULL
        m.capacity = 0
        return -1
    m.capacity = capacity
    return 0

cdef void map_free(SeqMap* m) noexcept nogil:
    free(m.entries)
    free(m.used)
    m.entries = NULL
    m.used = NULL
    m.capacity = 0
    m.count = 0

cdef MapEntry* map_find(SeqMap* m, uint64_t key) noexcept nogil:
    if m.count == 0:
        return NULL
    cdef size_t mask = m.capacity - 1
    cdef size_t i = _home(key, m.capacity)
    while m.used[i]:
        if m.entries[i].key == key:
            return &m.entries[i]
        i = (i + 1) & mask
    return NULL

cdef int map_resize(SeqMap* m, size_t capacity) noexcept nogil:
    cdef SeqMap old = m[0]
    cdef size_t i, j
    if capacity < MAP_MIN_CAPACITY:
        capacity = MAP_MIN_CAPACITY
    if map_init(m, capacity) < 0:
        m[0] = old
        return -1
    for i in range(old.capacity):
        if old.used[i]:
            j = _home(old.entries[i].key, capacity)
            while m.used[j]:
                j = (j + 1) & (capacity - 1)
            m.entries[j] = old.entries[i]
            m.used[j] = 1
            m.count += 1
    map_free(&old)
    return 0

cdef MapEntry* map_upsert(SeqMap* m, uint64_t key, bint* created) noexcept nogil:
    """The entry for key, created (value and ts zeroed) if missing; NULL when out of memory."""
    if (m.count + 1) * 4 > m.capacity * 3 and map_resize(m, m.capacity * 2) < 0:
        return NULL
    cdef size_t mask = m.capacity - 1
    cdef size_t i = _home(key, m.capacity)
    while m.used[i]:
        if m.entries[i].key == key:
            created[0] = False
            return &m.entries[i]
        i = (i + 1) & mask
    m.used[i] = 1
    m.entries[i].key = key
    m.entries[i].value = 0
    m.entries[i].ts = 0
    m.count += 1
    created[0] = True
    return &m.entries[i]

cdef bint map_remove(SeqMap* m, uint64_t key) noexcept nogil:
    cdef MapEntry* entry = map_find(m, key)
    if entry == NULL:
        return False
    cdef size_t mask = m.capacity - 1
    cdef size_t hole = <size_t>(entry - m.entries)
    cdef size_t j = hole, home
    m.used[hole] = 0
    m.count -= 1
    while True:
        j = (j + 1) & mask
        if not m.used[j]:
            return True
        home = _home(m.entries[j].key, m.capacity)
        # The entry at j may stay if its home lies cyclically in (hole, j].
        if (hole < j and hole < home <= j) or (hole > j and (home > hole or home <= j)):
            continue
        m.entries[hole] = m.entries[j]
        m.used[hole] = 1
        m.used[j] = 0
        hole = j

cdef int map_reset(SeqMap* m) noexcept nogil:
    if m.capacity > MAP_MIN_CAPACITY:
        map_free(m)
        return map_init(m, MAP_MIN_CAPACITY)
    memset(m.used, 0, m.capacity)
    m.count = 0
    return 0


# -- ascending pending order with a liveness bitmap ------------------------------------------

cdef int _cmp_u64(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0], y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)

cdef int order_reserve(SeqOrder* o, size_t needed) noexcept nogil:
    if needed <= o.capacity:
        return 0
    cdef size_t capacity = o.capacity * 2 if o.capacity else 64
    while capacity < needed:
        capacity *= 2
    cdef uint64_t* seqs = <uint64_t*>realloc(o.seqs, capacity * sizeof(uint64_t))
    if seqs == NULL:
        return -1
    o.seqs = seqs
    cdef uint64_t* live = <uint64_t*>realloc(o.live, capacity // 64 * sizeof(uint64_t))
    if live == NULL:
        return -1
    memset(live + o.capacity // 64, 0, (capacity - o.capacity) // 64 * sizeof(uint64_t))
    o.live = live
    o.capacity = capacity
    return 0

cdef inline bint order_is_live(SeqOrder* o, size_t i) noexcept nogil:
    return (o.live[i >> 6] >> (i & 63)) & 1

cdef size_t order_next_live(SeqOrder* o, size_t i) noexcept nogil:
    """Index of the first live entry at or after i, or o.count when there is none."""
    cdef size_t word
    cdef uint64_t bits
    while i < o.count:
        word = i >> 6
        bits = o.live[word] >> (i & 63)
        if bits:
            i += <size_t>__builtin_ctzll(bits)
            return i if i < o.count else o.count
        i = (word + 1) << 6
    return o.count

cdef size_t order_lower_bound(SeqOrder* o, uint64_t seq) noexcept nogil:
    """Index of the first entry at or after head whose seq is >= seq."""
    cdef size_t low = o.head, high = o.count, mid
    while low < high:
        mid = low + (high - low) // 2
        if o.seqs[mid] < seq:
            low = mid + 1
        else:
            high = mid
    return low

cdef void order_compact(SeqOrder* o) noexcept nogil:
    cdef size_t i = order_next_live(o, o.head), kept = 0
    while i < o.count:
        o.seqs[kept] = o.seqs[i]
        kept += 1
        i = order_next_live(o, i + 1)
    memset(o.live, 0, (o.count + 63) // 64 * sizeof(uint64_t))
    for i in range(kept):
        o.live[i >> 6] |= (<uint64_t>1) << (i & 63)
    o.count = kept
    o.head = 0

cdef void order_kill(SeqOrder* o, uint64_t seq) noexcept nogil:
    cdef size_t i = order_lower_bound(o, seq)
    if i >= o.count or o.seqs[i] != seq or not order_is_live(o, i):
        return
    o.live[i >> 6] &= ~((<uint64_t>1) << (i & 63))
    o.live_count -= 1
    if o.live_count == 0:
        o.head = 0
        o.count = 0
        return
    if i == o.head:
        o.head = order_next_live(o, i + 1)
    cdef size_t dead = o.count - o.live_count
    if dead > 64 and dead > o.live_count:
        order_compact(o)

cdef uint64_t order_next_above(SeqOrder* o, uint64_t seq) noexcept nogil:
    """Smallest live seq greater than seq, or 0."""
    if o.live_count == 0 or seq == <uint64_t>-1:
        return 0
    cdef size_t i = order_next_live(o, order_lower_bound(o, seq + 1))
    return o.seqs[i] if i < o.count else 0


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
        free(self.order.seqs)
        free(self.order.live)

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
        if order_reserve(&self.order, self.order.count + 1) < 0:
            raise MemoryError()
        self.order.seqs[self.order.count] = sseq
        self.order.live[self.order.count >> 6] |= (<uint64_t>1) << (self.order.count & 63)
        self.order.count += 1
        self.order.live_count += 1
        return 0

    cdef bint _pending_remove(self, uint64_t sseq) noexcept nogil:
        if not map_remove(&self.pending, sseq):
            return False
        order_kill(&self.order, sseq)
        return True

    cdef int _rebuild_order(self) except -1:
        cdef size_t i, n = 0
        if order_reserve(&self.order, self.pending.count) < 0:
            raise MemoryError()
        for i in range(self.pending.capacity):
            if self.pending.used[i]:
                self.order.seqs[n] = self.pending.entries[i].key
                n += 1
        if n:
            qsort(self.order.seqs, n, sizeof(uint64_t), _cmp_u64)
        if self.order.capacity:
            memset(self.order.live, 0, self.order.capacity // 64 * sizeof(uint64_t))
        for i in range(n):
            self.order.live[i >> 6] |= (<uint64_t>1) << (i & 63)
        self.order.count = n
        self.order.live_count = n
        self.order.head = 0
        return 0

    cdef void _clear(self) noexcept nogil:
        self.delivered_consumer = self.delivered_stream = 0
        self.ack_floor_consumer = self.ack_floor_stream = 0
        map_reset(&self.pending)
        map_reset(&self.redelivered)
        self.order.count = self.order.live_count = self.order.head = 0
        if self.order.capacity:
            memset(self.order.live, 0, self.order.capacity // 64 * sizeof(uint64_t))

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
        if dc != 1 and self.ack_policy_code == ACK_NONE:
            raise NoAckPolicy()
        if dseq <= self.ack_floor_consumer:
            return False
        cdef MapEntry* entry
        cdef bint created
        if self.ack_policy_code == ACK_NONE:
            if dseq > self.delivered_consumer:
                self.delivered_consumer = self.ack_floor_consumer = dseq
            if sseq > self.delivered_stream:
                self.delivered_stream = self.ack_floor_stream = sseq
            return True
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
        return True

    def update_acks(self, uint64_t dseq, uint64_t sseq):
        """Apply an ack of (dseq, sseq). Returns False when older than the ack floor."""
        if self.ack_policy_code == ACK_NONE:
            raise NoAckPolicy()
        map_remove(&self.redelivered, sseq)
        if dseq <= self.ack_floor_consumer:
            return False
        cdef MapEntry* entry = map_find(&self.pending, sseq)
        if entry == NULL:
            raise MsgNotFound()
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
            return True
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
        return True

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
            keys = _sorted_keys(&self.redelivered)
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
        cdef size_t size = 2 + 7 * VARINT_MAX + self.pending.count * 3 * VARINT_MAX \
            + self.redelivered.count * 2 * VARINT_MAX
        cdef uint8_t* buf = <uint8_t*>malloc(size)
        if buf == NULL:
            raise MemoryError()
        cdef uint64_t* keys = NULL
        try:
            if self.redelivered.count:
                keys = _sorted_keys(&self.redelivered)
            with nogil:
                size = _encode_into(buf, mints, self.ack_floor_consumer, self.ack_floor_stream,
                                    self.delivered_consumer, self.delivered_stream,
                                    &self.pending, &self.order, &self.redelivered, keys)
            return PyBytes_FromStringAndSize(<char*>buf, size)
        finally:
            free(buf)
            free(keys)

    def load_encoded(self, buf):
        """Replace everything with a decoded o.dat (v1 or v2). CorruptStreamState on garbage."""
        cdef AckState fresh = AckState(self.ack_policy, self.max_deliver_limit)
        cdef const uint8_t[::1] view = buf
        fresh._parse(&view[0] if view.shape[0] else NULL, view.shape[0])
        self._take(fresh)

    @staticmethod
    def decode(buf):
        """Decode an o.dat buffer (v1 or v2) into a ConsumerState."""
        return decode(buf)

    cdef int _parse(self, const uint8_t* buf, size_t size) except -1:
        cdef size_t pos = 2
        cdef uint64_t num, i, sseq, dseq, count
        cdef int64_t mints, ts
        cdef MapEntry* entry
        cdef bint created
        if size < 2 or buf[0] != CONSUMER_STATE_MAGIC:
            raise CorruptStreamState("consumer state: bad magic")
        cdef int version = buf[1]
        if version != 1 and version != 2:
            raise CorruptStreamState(f"consumer state: unsupported version {version}")
        if (get_uvarint(buf, size, &pos, &self.ack_floor_consumer) < 0
                or get_uvarint(buf, size, &pos, &self.ack_floor_stream) < 0
                or get_uvarint(buf, size, &pos, &self.delivered_consumer) < 0
                or get_uvarint(buf, size, &pos, &self.delivered_stream) < 0):
            raise CorruptStreamState(f"consumer state: bad sequences at byte {pos}")
        if version == 1:             # delivered was stored as the next seq to deliver
            if self.ack_floor_consumer > 1:
                self.delivered_consumer += self.ack_floor_consumer - 1
            if self.ack_floor_stream > 1:
                self.delivered_stream += self.ack_floor_stream - 1
        if (self.ack_floor_stream | self.delivered_stream) >> 63:
            raise CorruptStreamState("consumer state: stream sequence out of range")
        # Like nats-server, a buffer that ends right after the sequences has no pending
        # and no redelivered entries.
        if get_uvarint(buf, size, &pos, &num) == 0 and num > 0:
            if get_varint(buf, size, &pos, &mints) < 0:
                raise CorruptStreamState(f"consumer state: bad timestamp base at byte {pos}")
            i = 0
            while i < num:
                dseq = 0
                if (get_uvarint(buf, size, &pos, &sseq) < 0
                        or (version == 2 and get_uvarint(buf, size, &pos, &dseq) < 0)
                        or get_varint(buf, size, &pos, &ts) < 0):
                    raise CorruptStreamState(f"consumer state: bad pending entry at byte {pos}")
                sseq += self.ack_floor_stream
                if sseq == 0:
                    raise CorruptStreamState(f"consumer state: pending sequence 0 at byte {pos}")
                if version == 2:
                    dseq += self.ack_floor_consumer
                    ts = <int64_t>((<uint64_t>mints - <uint64_t>ts) * NS_PER_SECOND)
                else:
                    ts = <int64_t>((<uint64_t>ts + <uint64_t>mints) * NS_PER_SECOND)
                entry = map_upsert(&self.pending, sseq, &created)
                if entry == NULL:
                    raise MemoryError()
                entry.value = dseq
                entry.ts = ts
                i += 1
        # Redelivered entries: nats-server stops quietly at the end of the buffer and skips
        # entries with a zero offset or count.
        if get_uvarint(buf, size, &pos, &num) == 0:
            i = 0
            while i < num:
                if get_uvarint(buf, size, &pos, &sseq) < 0 or get_uvarint(buf, size, &pos, &count) < 0:
                    break
                if sseq > 0 and count > 0:
                    entry = map_upsert(&self.redelivered, sseq + self.ack_floor_stream, &created)
                    if entry == NULL:
                        raise MemoryError()
                    entry.value = count
                i += 1
        return self._rebuild_order()


cdef uint64_t* _sorted_keys(SeqMap* m) except NULL:
    cdef uint64_t* keys = <uint64_t*>malloc((m.count or 1) * sizeof(uint64_t))
    cdef size_t i, n = 0
    if keys == NULL:
        raise MemoryError()
    for i in range(m.capacity):
        if m.used[i]:
            keys[n] = m.entries[i].key
            n += 1
    qsort(keys, n, sizeof(uint64_t), _cmp_u64)
    return keys

cdef size_t _encode_into(uint8_t* buf, int64_t mints, uint64_t floor_consumer, uint64_t floor_stream,
                         uint64_t delivered_consumer, uint64_t delivered_stream, SeqMap* pending,
                         SeqOrder* order, SeqMap* redelivered, uint64_t* redelivered_keys) noexcept nogil:
    cdef size_t n = 2, i
    cdef MapEntry* entry
    buf[0] = CONSUMER_STATE_MAGIC
    buf[1] = CONSUMER_STATE_VERSION
    n += put_uvarint(buf + n, floor_consumer)
    n += put_uvarint(buf + n, floor_stream)
    n += put_uvarint(buf + n, delivered_consumer)
    n += put_uvarint(buf + n, delivered_stream)
    n += put_uvarint(buf + n, pending.count)
    if pending.count:
        n += put_varint(buf + n, mints)
        i = order_next_live(order, order.head)
        while i < order.count:
            entry = map_find(pending, order.seqs[i])
            n += put_uvarint(buf + n, entry.key - floor_stream)
            n += put_uvarint(buf + n, entry.value - floor_consumer)
            # Go: mints - Timestamp/time.Second (truncating division, wrapping subtraction)
            n += put_varint(buf + n, <int64_t>(<uint64_t>mints - <uint64_t>(entry.ts // NS_PER_SECOND)))
            i = order_next_live(order, i + 1)
    n += put_uvarint(buf + n, redelivered.count)
    for i in range(redelivered.count):
        entry = map_find(redelivered, redelivered_keys[i])
        n += put_uvarint(buf + n, entry.key - floor_stream)
        n += put_uvarint(buf + n, entry.value)
    return n


def decode(buf):
    """Decode an o.dat buffer (version 1 or 2) into a ConsumerState.

    Raises CorruptStreamState on a bad header, an unknown version, or truncated or
    overlong varints among the sequences and pending entries.
    """
    cdef AckState parsed = AckState()
    parsed.load_encoded(buf)
    return parsed.state()
