"""The o.dat codec of the consumer ack state (see odat.pxd).

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
from libc.stdlib cimport malloc, free

from jsstore._core.storage.seqmap cimport (MapEntry, SeqMap, SeqOrder, map_find, map_upsert,
                                           map_sorted_keys, order_next_live)

from jsstore.errors import CorruptStreamState

cdef extern from "varint.h" nogil:
    size_t put_uvarint(uint8_t* out, uint64_t v)
    size_t put_varint(uint8_t* out, int64_t v)
    int get_uvarint(const uint8_t* buf, size_t n, size_t* pos, uint64_t* out)
    int get_varint(const uint8_t* buf, size_t n, size_t* pos, int64_t* out)

cdef enum:
    VARINT_MAX = 10
    NS_PER_SECOND = 1000000000


cdef bytes odat_encode(int64_t mints, ConsumerSeqs* seqs, SeqMap* pending, SeqOrder* order,
                       SeqMap* redelivered):
    cdef size_t size = 2 + 7 * VARINT_MAX + pending.count * 3 * VARINT_MAX \
        + redelivered.count * 2 * VARINT_MAX
    cdef uint8_t* buf = <uint8_t*>malloc(size)
    if buf == NULL:
        raise MemoryError()
    cdef uint64_t* keys = NULL
    try:
        if redelivered.count:
            keys = map_sorted_keys(redelivered)
        with nogil:
            size = _encode_into(buf, mints, seqs, pending, order, redelivered, keys)
        return PyBytes_FromStringAndSize(<char*>buf, size)
    finally:
        free(buf)
        free(keys)


cdef size_t _encode_into(uint8_t* buf, int64_t mints, ConsumerSeqs* seqs, SeqMap* pending,
                         SeqOrder* order, SeqMap* redelivered,
                         uint64_t* redelivered_keys) noexcept nogil:
    cdef uint64_t floor_consumer = seqs.ack_floor_consumer, floor_stream = seqs.ack_floor_stream
    cdef size_t n = 2, i
    cdef MapEntry* entry
    buf[0] = CONSUMER_STATE_MAGIC
    buf[1] = CONSUMER_STATE_VERSION
    n += put_uvarint(buf + n, floor_consumer)
    n += put_uvarint(buf + n, floor_stream)
    n += put_uvarint(buf + n, seqs.delivered_consumer)
    n += put_uvarint(buf + n, seqs.delivered_stream)
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


cdef int odat_parse(const uint8_t* buf, size_t size, ConsumerSeqs* seqs, SeqMap* pending,
                    SeqMap* redelivered) except -1:
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
    if (get_uvarint(buf, size, &pos, &seqs.ack_floor_consumer) < 0
            or get_uvarint(buf, size, &pos, &seqs.ack_floor_stream) < 0
            or get_uvarint(buf, size, &pos, &seqs.delivered_consumer) < 0
            or get_uvarint(buf, size, &pos, &seqs.delivered_stream) < 0):
        raise CorruptStreamState(f"consumer state: bad sequences at byte {pos}")
    if version == 1:             # delivered was stored as the next seq to deliver
        if seqs.ack_floor_consumer > 1:
            seqs.delivered_consumer += seqs.ack_floor_consumer - 1
        if seqs.ack_floor_stream > 1:
            seqs.delivered_stream += seqs.ack_floor_stream - 1
    if (seqs.ack_floor_stream | seqs.delivered_stream) >> 63:
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
            sseq += seqs.ack_floor_stream
            if sseq == 0:
                raise CorruptStreamState(f"consumer state: pending sequence 0 at byte {pos}")
            if version == 2:
                dseq += seqs.ack_floor_consumer
                ts = <int64_t>((<uint64_t>mints - <uint64_t>ts) * NS_PER_SECOND)
            else:
                ts = <int64_t>((<uint64_t>ts + <uint64_t>mints) * NS_PER_SECOND)
            entry = map_upsert(pending, sseq, &created)
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
                entry = map_upsert(redelivered, sseq + seqs.ack_floor_stream, &created)
                if entry == NULL:
                    raise MemoryError()
                entry.value = count
            i += 1
    return 0
