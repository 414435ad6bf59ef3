# The stream engine: blocks in sequence order over one subject index, with the stream's
# counts and range, the write path, removals and limit enforcement.  FileStore and
# MemStore (Python, in jsstore.store.filestore / jsstore.store.memstore) subclass it: the file one
# supplies block files and recovery; the memory one keeps blocks in memory only.
# Read-only queries over this state live in jsstore._core.storage.queries.
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from jsstore._core.storage.block cimport MsgBlock
from jsstore._core.storage.subjects cimport SubjectIndex
from jsstore._core.storage.record cimport RecordView, StoreMsg

cdef class BlockStore:
    # identity and configuration
    cdef public object config             # jsstore.store.config.StreamConfig
    cdef public str name                  # stream name (part of every block's hash key)
    cdef public bint mem_sized            # memory-store byte accounting
    cdef public uint64_t block_size       # roll over to a new block past this many bytes
    # limits (copied from config; -1 / 0 = unlimited)
    cdef public int64_t max_msgs, max_bytes, max_per_subject, max_msg_size
    cdef public int64_t max_age           # ns
    cdef public bint discard_new, discard_new_per_subject
    # blocks
    cdef public list blocks               # MsgBlock, ascending sequences
    cdef public MsgBlock lmb              # the block being written (last of blocks)
    cdef public SubjectIndex psim         # every subject in the stream, with totals
    # stream state
    cdef public uint64_t msgs, bytes
    cdef public uint64_t first_seq, last_seq
    cdef public int64_t first_ts, last_ts
    # lifecycle and health
    cdef public bint closed
    cdef public object write_error        # sticky WriteError, raised by every later write
    cdef public list lost_msgs            # sequences reported lost in recovery
    cdef public uint64_t lost_bytes
    cdef public uint64_t dirty            # changes since the state file was written
    cdef public int64_t next_ttl_expiry   # earliest per-message TTL expiry (ns); INT64_MAX when none
    # where a filter takes a stored ">" token only under a ">" of its own (nats-server's
    # stores differ here: see queries.pyx); otherwise any wildcard of the filter takes it
    cdef public bint subset_next          # load_next_msg with one filter (the file store)
    cdef public bint subset_subjects      # subjects_state, subjects_totals (the memory store)
    # cache budget
    cdef public uint64_t cache_bytes      # bytes held by loaded block caches
    cdef public uint64_t cache_budget     # evict least recently used blocks past this
    cdef uint64_t tick                    # access counter for LRU

    cdef MsgBlock c_select_block(self, uint64_t seq)          # block whose range holds seq, or None
    cdef Py_ssize_t c_block_pos(self, uint64_t seq) noexcept  # position of first block with last_seq >= seq
    cdef int c_ensure_loaded(self, MsgBlock mb) except -1
    cdef int c_evict(self, MsgBlock keep) except -1         # drop LRU caches past the budget
    cdef int c_check_writable(self) except -1
    cdef int c_store(self, const uint8_t* subj, size_t subj_len, const uint8_t* hdr, size_t hdr_len,
                     bint has_hdr, const uint8_t* msg, size_t msg_len, uint64_t seq, int64_t ts,
                     bint discard_new_check, bint flush) except -1
    cdef int c_store_objects(self, object subject, object hdr, object msg, uint64_t seq, int64_t ts,
                             bint discard_new_check, bint flush) except -1
    cdef int c_after_store(self, int64_t ts, int64_t ttl) except -1   # TTL bookkeeping
    cdef int c_forget_unwritten(self, uint64_t first) except -1  # after a failed flush
    cdef int64_t c_next_ts(self) noexcept                    # now, kept above last_ts
    cdef int c_remove(self, uint64_t seq, bint via_limits, bint secure) except -1   # 1 removed, 0 absent
    cdef int c_after_front_change(self) except -1             # drop empty leading blocks, fix first
    cdef int c_enforce_limits(self, int64_t now) except -1
    cdef int c_enforce_per_subject(self, uint32_t sid) except -1
    cdef uint64_t c_subject_first(self, uint32_t sid, uint64_t start) except? 0  # exact first seq >= start
    cdef uint64_t c_subject_last(self, uint32_t sid, uint64_t max_seq) except? 0 # exact last seq <= max_seq
    cdef StoreMsg c_load(self, uint64_t seq)                  # None when absent
