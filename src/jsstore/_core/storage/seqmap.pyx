"""The stream-sequence keyed containers of the consumer ack state (see seqmap.pxd)."""
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memset

cdef extern from * nogil:
    int __builtin_ctzll(unsigned long long x)

cdef int _cmp_u64(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0], y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)


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

cdef int _map_resize(SeqMap* m, size_t capacity) noexcept nogil:
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
    if (m.count + 1) * 4 > m.capacity * 3 and _map_resize(m, m.capacity * 2) < 0:
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
    map_remove_entry(m, entry)
    return True

cdef void map_remove_entry(SeqMap* m, MapEntry* entry) noexcept nogil:
    cdef size_t mask = m.capacity - 1
    cdef size_t hole = <size_t>(entry - m.entries)
    cdef size_t j = hole, home
    m.used[hole] = 0
    m.count -= 1
    while True:
        j = (j + 1) & mask
        if not m.used[j]:
            return
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

cdef uint64_t* map_sorted_keys(SeqMap* m) except NULL:
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


# -- ascending pending order with a liveness bitmap ------------------------------------------

cdef int _order_reserve(SeqOrder* o, size_t needed) noexcept nogil:
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

cdef void order_free(SeqOrder* o) noexcept nogil:
    free(o.seqs)
    free(o.live)
    o.seqs = NULL
    o.live = NULL
    o.head = o.count = o.capacity = o.live_count = 0

cdef void order_clear(SeqOrder* o) noexcept nogil:
    o.count = o.live_count = o.head = 0
    if o.capacity:
        memset(o.live, 0, o.capacity // 64 * sizeof(uint64_t))

cdef int order_append(SeqOrder* o, uint64_t seq) noexcept nogil:
    if _order_reserve(o, o.count + 1) < 0:
        return -1
    o.seqs[o.count] = seq
    o.live[o.count >> 6] |= (<uint64_t>1) << (o.count & 63)
    o.count += 1
    o.live_count += 1
    return 0

cdef int order_rebuild(SeqOrder* o, SeqMap* m) noexcept nogil:
    cdef size_t i, n = 0
    if _order_reserve(o, m.count) < 0:
        return -1
    for i in range(m.capacity):
        if m.used[i]:
            o.seqs[n] = m.entries[i].key
            n += 1
    if n:
        qsort(o.seqs, n, sizeof(uint64_t), _cmp_u64)
    if o.capacity:
        memset(o.live, 0, o.capacity // 64 * sizeof(uint64_t))
    for i in range(n):
        o.live[i >> 6] |= (<uint64_t>1) << (i & 63)
        map_find(m, o.seqs[i]).pos = i
    o.count = n
    o.live_count = n
    o.head = 0
    return 0

cdef inline bint _order_is_live(SeqOrder* o, size_t i) noexcept nogil:
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

cdef size_t _order_lower_bound(SeqOrder* o, uint64_t seq) noexcept nogil:
    """Index of the first entry at or after head whose seq is >= seq."""
    cdef size_t low = o.head, high = o.count, mid
    while low < high:
        mid = low + (high - low) // 2
        if o.seqs[mid] < seq:
            low = mid + 1
        else:
            high = mid
    return low

cdef void _order_compact(SeqOrder* o, SeqMap* m) noexcept nogil:
    cdef size_t i = order_next_live(o, o.head), kept = 0
    while i < o.count:
        o.seqs[kept] = o.seqs[i]
        map_find(m, o.seqs[kept]).pos = kept
        kept += 1
        i = order_next_live(o, i + 1)
    memset(o.live, 0, (o.count + 63) // 64 * sizeof(uint64_t))
    for i in range(kept):
        o.live[i >> 6] |= (<uint64_t>1) << (i & 63)
    o.count = kept
    o.head = 0

cdef void order_kill(SeqOrder* o, SeqMap* m, size_t i) noexcept nogil:
    if i >= o.count or not _order_is_live(o, i):
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
        _order_compact(o, m)

cdef uint64_t order_next_above(SeqOrder* o, uint64_t seq) noexcept nogil:
    """Smallest live seq greater than seq, or 0."""
    if o.live_count == 0 or seq == <uint64_t>-1:
        return 0
    cdef size_t i = order_next_live(o, _order_lower_bound(o, seq + 1))
    return o.seqs[i] if i < o.count else 0
