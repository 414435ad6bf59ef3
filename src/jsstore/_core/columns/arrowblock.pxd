# Arrow column buffers straight from block bytes, for the Spark data source (jsstore.spark).
#
# A BlockColumns walks the records of one plain (decompressed) block file and appends the
# messages that pass its filters to growable C buffers, one set per Arrow column, with no
# Python object per message.  next_batch() hands the buffers over without copying them, as
# HandedBuffer objects (the buffer protocol; the memory is freed when the last user lets
# go), laid out as Arrow expects them (little-endian values, int32 offsets, LSB-first
# validity bits); jsstore.spark.arrow wraps them with pyarrow.Array.from_buffers.  The
# next batch allocates its buffers afresh, at the size the last one reached.
#
# Which records become rows:
#   - tombstones and erased / skip records never do;
#   - only sequences in [seq_low, seq_high] (the walk stops past seq_high: a block's message
#     records are in ascending sequence order);
#   - not the sequences listed in `deleted` (sorted ascending: the block's interior deletes);
#   - only timestamps in [time_low, time_high] (Unix ns);
#   - only subjects the SubjectPredicate accepts.
# The walk stops at the first record whose lengths do not hold together: the torn tail of a
# block being written, or the zero-filled space reserved past a mapped write block's end.
#
# The columns (COLUMN_* bits select which are built; the others stay empty):
#   seq       int64                     the stream sequence
#   subject   utf8: int32 offsets + bytes
#   time      int64 microseconds (Spark's TIMESTAMP precision), floor of ns / 1000
#   time_ns   int64 nanoseconds, exact
#   headers   map<utf8, list<utf8>>: null for a message without a header block; otherwise
#             one entry per distinct key in order of first appearance, its values in order
#             (a repeated key keeps every value).  The NATS/1.0 status line is not a header.
#   data      binary: int32 offsets + bytes, the payload
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from jsstore._core.storage.subjects cimport SubjectIndex

cdef enum:
    COLUMN_SEQ = 1
    COLUMN_SUBJECT = 2
    COLUMN_TIME = 4
    COLUMN_TIME_NS = 8
    COLUMN_HEADERS = 16
    COLUMN_DATA = 32
    HEADER_LINES_MAX = 256        # header lines of one message grouped by key; more are dropped

cdef enum:
    # BufferSlot: one GrowBuffer per Arrow buffer, in the order of next_batch()'s tuple
    BUF_SEQ = 0                   # int64 values
    BUF_TIME = 1                  # int64 microseconds
    BUF_TIME_NS = 2               # int64 nanoseconds
    BUF_SUBJECT_OFFSETS = 3       # int32, rows + 1
    BUF_SUBJECT_BYTES = 4
    BUF_DATA_OFFSETS = 5          # int32, rows + 1
    BUF_DATA_BYTES = 6
    BUF_HEADER_VALIDITY = 7       # one bit per row, 1 = has a header block
    BUF_MAP_OFFSETS = 8           # int32, rows + 1: entry index of each row's first key
    BUF_KEY_OFFSETS = 9           # int32, entries + 1
    BUF_KEY_BYTES = 10
    BUF_LIST_OFFSETS = 11         # int32, entries + 1: value index of each entry's first value
    BUF_VALUE_OFFSETS = 12        # int32, values + 1
    BUF_VALUE_BYTES = 13
    BUF_COUNT = 14

cdef struct GrowBuffer:
    uint8_t* data                 # malloc'ed, NULL until first use and after a hand-over
    size_t length                 # bytes written
    size_t capacity               # bytes allocated
    size_t hint                   # bytes to allocate first (what the last batch reached)

cdef class HandedBuffer:
    # Bytes a BlockColumns built and handed over (read-only buffer protocol, len()).
    cdef uint8_t* data            # malloc'ed, freed with the object
    cdef Py_ssize_t length

cdef struct HeaderLine:
    uint32_t key_off, key_len     # offsets inside the header block
    uint32_t value_off, value_len # value with the blanks around it trimmed
    bint taken                    # already emitted under an earlier line's key

cdef class SubjectPredicate:
    # A conjunction of subject clauses, decided once per distinct subject:
    cdef SubjectIndex exact       # equality / IN: the subject must be one of these (None: no clause)
    cdef list prefixes            # bytes: the subject must start with every one
    cdef list wildcards           # bytes NATS filters: the subject must match one (empty: no clause)
    cdef readonly bint match_all  # no clause at all
    cdef SubjectIndex seen        # subjects decided so far (prefix / wildcard clauses)
    cdef bytearray decisions      # decisions[id in seen] = 1 accepted, 2 rejected

    cdef int c_accept(self, const uint8_t* subject, size_t length) except -1   # 1 / 0

cdef class BlockColumns:
    cdef object source            # the object whose buffer `buf` points into (kept alive)
    cdef const uint8_t* buf       # plain block bytes
    cdef size_t size              # bytes in buf
    cdef size_t pos               # offset of the next record to look at
    cdef bint finished            # the walk reached the end, a bad record or seq_high
    cdef uint64_t seq_low, seq_high
    cdef int64_t time_low, time_high
    cdef object deleted_source    # keeps `deleted` alive
    cdef const uint64_t* deleted  # sorted deleted sequences of this block
    cdef size_t deleted_len
    cdef size_t deleted_pos       # first entry not below the last sequence looked at
    cdef SubjectPredicate predicate
    cdef readonly int columns     # COLUMN_* bits
    cdef GrowBuffer buffers[14]   # BUF_COUNT buffers of the batch being built
    cdef HeaderLine lines[256]    # HEADER_LINES_MAX: scratch for one message's header lines
    cdef size_t rows              # rows in the batch being built
    cdef size_t entries           # header map entries in the batch being built
    cdef size_t values            # header values in the batch being built
    cdef readonly uint64_t records_walked   # records looked at so far (all kinds)
    cdef readonly uint64_t rows_emitted     # rows handed out so far
    cdef bint check_hash          # every record's hash is checked against hash_key
    cdef uint64_t hash_key[4]     # HighwayHash key of the block: SHA-256("<stream>-<index>")
    # what the walk accounted for (read once next_batch has returned None):
    cdef readonly bint damaged              # met bytes that are not a record, or a record
                                            # whose hash is wrong (zeros are an end)
    cdef readonly list holes                # [offset, first, last] of every damaged stretch:
                                            # sequences first..last may have been there (last
                                            # 0: no message record after it, up to seq_high)
    cdef list open_hole                     # the last hole, until a message record closes it
    cdef readonly bint passed_high          # stopped at a record above seq_high
    cdef readonly uint64_t last_seq         # highest message sequence <= seq_high walked
    cdef readonly uint64_t accounted        # live messages in [seq_low, seq_high] not in
                                            # `deleted` (before the time and subject filters)

    cdef int c_row(self, const uint8_t* record, uint64_t seq, int64_t ts, uint32_t subj_off,
                   uint32_t subj_len, bint has_hdr, uint32_t hdr_off, uint32_t hdr_len,
                   uint32_t msg_off, uint32_t msg_len) except -1
    cdef int c_headers(self, const uint8_t* block, uint32_t length) except -1
    cdef bint c_skip_damage(self) except -1   # note a damaged stretch, go to the next record
    cdef void c_reset_batch(self) noexcept
