# Stream-sequence keyed C containers behind the consumer ack state (ackstate.pyx):
#
#   SeqMap    u64 stream seq -> (u64 value, i64 timestamp); open addressing with linear
#             probing and backward-shift deletion, capacity a power of two, at most 3/4 full.
#             AckState keeps two: pending (value = delivery seq, ts = last delivery time) and
#             redelivered (value = redelivery count, ts unused).
#   SeqOrder  the pending stream seqs in ascending order with a bitmap of the ones still
#             pending: removals clear bits, so finding the next pending seq above a point
#             scans 64 sequences per word instead of probing the map.  Each pending map
#             entry keeps its index here (pos), so a removal is O(1) with no search.
#
# No Python object per sequence; every function is nogil except map_sorted_keys, which
# raises MemoryError. Functions returning int give 0 on success and -1 when out of memory.
from libc.stdint cimport uint8_t, uint64_t, int64_t

cdef enum:
    MAP_MIN_CAPACITY = 16         # slots of an empty map (power of two)

cdef struct MapEntry:
    uint64_t key                  # stream sequence
    uint64_t value                # pending: delivery (consumer) seq; redelivered: count
    int64_t ts                    # pending: Unix ns of the last delivery; unused otherwise
    size_t pos                    # pending: the key's index in the SeqOrder; unused otherwise

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


# -- SeqMap ----------------------------------------------------------------------------------

# Allocate capacity (a power of two) empty slots; on failure m is left empty with capacity 0.
cdef int map_init(SeqMap* m, size_t capacity) noexcept nogil
# Release the slots; m becomes empty with capacity 0.
cdef void map_free(SeqMap* m) noexcept nogil
# The entry for key, or NULL.
cdef MapEntry* map_find(SeqMap* m, uint64_t key) noexcept nogil
# The entry for key, created (value and ts zeroed, created[0] set) if missing; NULL when out
# of memory. Growing may move entries: earlier entry pointers become invalid.
cdef MapEntry* map_upsert(SeqMap* m, uint64_t key, bint* created) noexcept nogil
# Remove key; False when it was not there.
cdef bint map_remove(SeqMap* m, uint64_t key) noexcept nogil
# Remove the entry map_find returned (no second probe); entry pointers become invalid.
cdef void map_remove_entry(SeqMap* m, MapEntry* entry) noexcept nogil
# Remove every key, shrinking back to MAP_MIN_CAPACITY slots.
cdef int map_reset(SeqMap* m) noexcept nogil
# The keys in ascending order in a malloc'ed array of max(count, 1) entries (caller frees).
cdef uint64_t* map_sorted_keys(SeqMap* m) except NULL


# -- SeqOrder --------------------------------------------------------------------------------

# Release the arrays; o becomes empty with capacity 0.
cdef void order_free(SeqOrder* o) noexcept nogil
# Drop every entry, keeping the allocation.
cdef void order_clear(SeqOrder* o) noexcept nogil
# Add seq as live; it must be greater than every seq already in o.
cdef int order_append(SeqOrder* o, uint64_t seq) noexcept nogil
# Refill o with the keys of m, all live, in ascending order (setting each entry's pos).
cdef int order_rebuild(SeqOrder* o, SeqMap* m) noexcept nogil
# Index of the first live entry at or after i, or o.count when there is none.
cdef size_t order_next_live(SeqOrder* o, size_t i) noexcept nogil
# Mark the entry at index i (an entry's pos) no longer live; compacts when most entries
# are dead, rewriting the pos of the entries of m that move.
cdef void order_kill(SeqOrder* o, SeqMap* m, size_t i) noexcept nogil
# Smallest live seq greater than seq, or 0.
cdef uint64_t order_next_above(SeqOrder* o, uint64_t seq) noexcept nogil
