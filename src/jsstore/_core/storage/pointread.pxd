# Point reads: one record of a block whose cache is not loaded, read from its file at the
# offset its marks give (MsgBlock.marks), without loading and indexing the whole block.
from libc.stdint cimport uint64_t, int64_t
from jsstore._core.storage.block cimport MsgBlock
from jsstore._core.storage.subjects cimport SubjectIndex
from jsstore._core.storage.record cimport RecordView

# The record of live message seq as bytes (view filled, hash verified, subject known to
# psim: *sid set), or None when a point read cannot tell (no marks, a compressed or damaged
# block, seq deleted or absent, any doubt): the caller then loads the block as before.
cdef object read_record(MsgBlock mb, uint64_t seq, SubjectIndex psim, RecordView* view,
                        int64_t* sid)
