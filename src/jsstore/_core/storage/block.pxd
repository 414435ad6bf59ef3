# One message block: a run of records in one `N.blk` file (or in memory for the memory
# store), with the block's range, accounting, deleted set, and its cache: the record
# bytes, the seq -> offset index and the per-subject state, loaded and dropped together.
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from jsstore._core.storage.seqset cimport SeqSet
from jsstore._core.storage.subjects cimport SubjectIndex, BlockSubjects
from jsstore._core.storage.record cimport RecordView

cdef enum:
    IDX_HOLE = 0x40000000         # idx entry flag: sequence deleted / skipped (no record)
    IDX_CHECKED = 0x80000000      # idx entry flag: record hash already verified
    IDX_OFF_MASK = 0x3FFFFFFF     # idx entry: byte offset of the record in buf
    MAX_INDEX_GAP = 1 << 24       # a sequence gap this large inside one block is corruption
    SID_NONE = 0xFFFFFFFF         # sids entry of a hole
    MARK_EVERY = 32               # one mark per this many sequences (MsgBlock.marks)

cdef class MsgBlock:
    # identity
    cdef readonly uint32_t index          # N of N.blk, from 1, increasing
    cdef uint64_t hash_key[4]             # HighwayHash key: SHA-256("<stream>-<index>")
    cdef readonly object path             # file path, None for a memory block
    cdef int fd                           # open descriptor for appends, -1 when closed
    # range and accounting
    cdef public uint64_t first_seq        # lowest live sequence; empty block: last_seq + 1
    cdef public uint64_t last_seq         # highest sequence used (live, deleted or skipped)
    cdef public int64_t first_ts          # timestamp of first_seq
    cdef public int64_t last_ts           # timestamp of last_seq
    cdef public uint64_t msgs             # live messages
    cdef public uint64_t bytes            # live bytes (store accounting)
    cdef public uint64_t raw_bytes        # uncompressed length of all records, deleted included
    cdef public uint64_t tombstones       # tombstone records held (for older blocks' messages)
    cdef public SeqSet deleted            # interior deletes within [first_seq, last_seq]
    cdef public bytes last_hash           # hash of the last record (lchk), 8 bytes
    cdef public int compression           # algorithm of the file on disk (0 = none)
    cdef public bint damaged              # a record failed its checks after a trusted open: the
                                          # rest of the block reads as absent, and the store
                                          # rebuilds from the block files on its next open
    # cache
    cdef uint8_t* buf                     # record bytes, uncompressed, NULL when not loaded
    cdef size_t buf_len                   # bytes in buf
    cdef size_t buf_cap                   # bytes allocated (heap), or bytes of the mapping backed
                                          # by reserved file space (mapped)
    cdef bint mapped                      # buf is a shared mapping of the file: appends land in
                                          # the OS page cache with no system call. The file is
                                          # preallocated to buf_cap while written, and cut back to
                                          # buf_len (buf_cap = buf_len) when the block is trimmed,
                                          # sealed or closed; the mapping stays as the cache
    cdef size_t map_len                   # length of the mapping (munmap), >= buf_cap
    cdef size_t flushed                   # bytes of buf already handed to the OS
    cdef size_t populated                 # bytes of buf faulted in ahead of the appends
                                          # (c_populate; whole pages of it only); 0 when not loaded
    cdef uint32_t* idx                    # idx[seq - idx_first] = offset | IDX_* flags
    cdef uint32_t* sids                   # sids[seq - idx_first] = subject id of a live record, SID_NONE otherwise
    cdef uint64_t idx_first               # sequence of idx[0] and sids[0]
    cdef size_t idx_len, idx_cap          # entries used / allocated (idx and sids alike)
    cdef public BlockSubjects subjects    # per-subject state of live messages; None when not loaded
    cdef public uint64_t last_used        # access tick for cache eviction
    # what a point read of an unloaded block needs (jsstore._core.storage.pointread), kept when the
    # cache is dropped and freed when it is loaded again
    cdef uint32_t* marks                  # marks[j]: file offset of a record with sequence
                                          # <= marks_first + j * MARK_EVERY (or 0): a scan for
                                          # a sequence starts there; NULL when not known
    cdef size_t n_marks
    cdef uint64_t marks_first
    cdef public bytes peek                # the last record read by a point read (hash and
    cdef public uint64_t peek_seq         # subject checked), its sequence and subject id
    cdef int64_t peek_sid                 # (while the message lives its id stays); None / 0
    cdef bint mem_sized                   # memory store accounting (len(subj+hdr+msg)+16)

    cdef bint loaded(self) noexcept
    cdef int c_reserve(self, size_t extra) except -1
    cdef void c_populate(self, size_t need) noexcept            # fault pages of buf in ahead of need
    cdef uint32_t c_append(self, uint64_t seq_bits, int64_t ts, const uint8_t* subj, size_t subj_len,
                           const uint8_t* hdr, size_t hdr_len, bint has_hdr,
                           const uint8_t* msg, size_t msg_len) except 0
    cdef int c_index_append(self, uint64_t seq, uint32_t off, uint32_t sid) except -1
    cdef int c_flush(self) except -1
    cdef int c_map(self, size_t capacity) except -1          # switch the loaded cache to a file mapping
    cdef int c_trim(self) except -1                          # cut the file back to buf_len, keep the mapping
    cdef int c_unmap(self, bint keep_cache) except -1        # trim, then release the mapping (copy to heap)
    cdef long c_offset(self, uint64_t seq) noexcept           # record offset, -1 when absent
    cdef void c_mark_removed(self, uint64_t seq) noexcept    # make seq a hole in idx/sids
    cdef int c_record(self, uint64_t seq, RecordView* view, const uint8_t** rec) except -2
        # 0 found (hash verified), -1 absent; raises BadMsg on a checksum failure
    cdef int c_build_cache(self, SubjectIndex psim, bint intern, list tombstones) except -1
        # index buf: idx, per-subject state; collect (seq, ts) of tombstones when a list is given
    cdef void c_drop_cache(self) noexcept                    # keeps marks (from idx) for point reads
    cdef void c_keep_marks(self) noexcept                    # sample idx into marks
    cdef void c_forget_marks(self) noexcept                  # free marks, clear peek
    cdef uint64_t c_next_live(self, uint64_t seq) noexcept   # first live seq >= seq in the block, 0 if none
    cdef uint64_t c_prev_live(self, uint64_t seq) noexcept   # last live seq <= seq in the block, 0 if none
    cdef int c_select_first(self) except -1                  # move first_seq to the first live message
    cdef bint _clamp(self, uint64_t* lo, uint64_t* hi) noexcept   # clip [lo, hi] to the indexed live range
    # scans of the loaded sids array over [lo, hi] (clamped to the block); seq or 0 / a count
    cdef uint64_t c_find_sid(self, uint32_t sid, uint64_t lo, uint64_t hi, bint backward) noexcept
    cdef uint64_t c_find_mask(self, const uint8_t* mask, uint32_t mask_len, uint64_t lo, uint64_t hi,
                              bint backward) noexcept
    cdef uint64_t c_count_sid(self, uint32_t sid, uint64_t lo, uint64_t hi) noexcept
    cdef uint64_t c_count_mask(self, const uint8_t* mask, uint32_t mask_len, uint64_t lo, uint64_t hi) noexcept
    cdef uint64_t c_count_live(self, uint64_t lo, uint64_t hi) noexcept   # from first/last/deleted only
