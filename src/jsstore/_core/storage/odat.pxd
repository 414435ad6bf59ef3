# o.dat, the file a durable consumer's state is kept in: nats-server's encodeConsumerState
# layout (version 2 written, versions 1 and 2 read), encoded from and decoded into the C
# containers of the ack state (seqmap.pxd). The byte layout is described in odat.pyx.
from libc.stdint cimport uint8_t, uint64_t, int64_t
from jsstore._core.storage.seqmap cimport SeqMap, SeqOrder

cdef enum:
    CONSUMER_STATE_MAGIC = 22     # first byte of o.dat
    CONSUMER_STATE_VERSION = 2    # version written; version 1 is still read

cdef struct ConsumerSeqs:
    uint64_t delivered_consumer   # consumer seq of the newest delivery
    uint64_t delivered_stream     # stream seq of the newest delivery
    uint64_t ack_floor_consumer   # consumer seq at or below which all is acked
    uint64_t ack_floor_stream     # stream seq at or below which all is acked

# o.dat version 2 of the state. mints: the timestamp base, Unix seconds (now rounded to the
# second). Pending entries are written in order's ascending order, redelivered ones in
# ascending stream seq.
cdef bytes odat_encode(int64_t mints, ConsumerSeqs* seqs, SeqMap* pending, SeqOrder* order,
                       SeqMap* redelivered)
# Decode buf[0:size] (version 1 or 2) into seqs and the two maps, which must start empty;
# the caller rebuilds the pending order. CorruptStreamState on garbage, MemoryError.
cdef int odat_parse(const uint8_t* buf, size_t size, ConsumerSeqs* seqs, SeqMap* pending,
                    SeqMap* redelivered) except -1
