"""Compression of sealed block files: nats-server's "cmp" metadata around an S2 stream.

The layout and the constants are documented in compress.pxd.  S2 decoding and encoding are C
(csrc/s2.c) and run without the GIL; LZ4 (a jsstore extension) uses the ``lz4`` package.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memcmp
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.buffer cimport PyBUF_READ
from cpython.memoryview cimport PyMemoryView_FromMemory

import lz4.frame

from jsstore.errors import BadMsg

cdef extern from "s2.h" nogil:
    ctypedef struct s2_error:
        int code
        size_t offset
    int S2_OK
    size_t S2_IDENTIFIER_LEN
    const char* s2_strerror(int code)
    uint32_t s2_crc32c(uint32_t crc, const uint8_t* data, size_t n)
    uint32_t s2_crc32c_portable(uint32_t crc, const uint8_t* data, size_t n)
    int s2_stream_decoded_len(const uint8_t* src, size_t src_len, uint64_t* decoded_len,
                              s2_error* err)
    int s2_stream_decode(const uint8_t* src, size_t src_len, uint8_t* dst, size_t dst_len,
                         s2_error* err)
    size_t s2_stream_max_encoded_len(size_t n)
    size_t s2_stream_encode(uint8_t* dst, const uint8_t* src, size_t n)

cdef extern from "varint.h" nogil:
    size_t put_uvarint(uint8_t* out, uint64_t v)
    int get_uvarint(const uint8_t* buf, size_t n, size_t* pos, uint64_t* out)

cdef extern from "record.h" nogil:
    uint32_t RECORD_LEN_MASK      # record length bits of a record's first u32
    uint32_t RECORD_MAX_LEN       # nats' largest acceptable record
    uint32_t rec_get_u32(const uint8_t* p)

ALG_NONE = COMPRESS_NONE
ALG_S2 = COMPRESS_S2
ALG_LZ4 = COMPRESS_LZ4
CHECKSUM_SIZE = BLOCK_CHECKSUM_SIZE

cdef enum:
    # Largest original size a block header may claim (sealed blocks are at most a few tens of
    # MiB: 8 MiB blocks, or one record of up to 32 MiB).  Guards allocations against corrupt
    # headers.
    ORIGINAL_SIZE_LIMIT = 1 << 30

MAX_ORIGINAL_SIZE = ORIGINAL_SIZE_LIMIT

cdef const char* EMPTY = b""

# What a block file's first bytes say.
cdef struct BlockHeader:
    int alg                  # COMPRESS_*
    uint64_t original_size   # length of the uncompressed file (the input length when plain)
    size_t header_len        # bytes of "cmp" metadata before the body; 0 for a plain file


cdef inline bint _is_stream_identifier(const uint8_t* p, size_t n) noexcept nogil:
    if n < S2_IDENTIFIER_LEN or p[0] != 0xff or p[1] != 6 or p[2] != 0 or p[3] != 0:
        return False
    return memcmp(p + 4, b"sNaPpY", 6) == 0 or memcmp(p + 4, b"S2sTwO", 6) == 0


cdef int _read_header(const uint8_t* data, Py_ssize_t size, BlockHeader* header) except -1:
    """Classify a block file.

    nats-server's rule is: "cmp" + alg byte + uvarint means compressed.  But the first 4 bytes
    of a plain block are its first record's length, and "cmp" + 0x00/0x01/0x80/0x81 is a valid
    length (7.0 or 23.0 MiB, with or without the header bit).  When the file is long enough to
    hold such a record, the prefix counts as compressed only if it is an S2 header followed by a
    stream identifier chunk, which no record's sequence bytes can spell.
    """
    cdef uint64_t original_size = 0
    cdef size_t pos = 4
    cdef uint32_t record_len
    cdef int alg
    cdef bint has_size
    header.alg = COMPRESS_NONE
    header.original_size = <uint64_t>size
    header.header_len = 0
    if size < 5 or data[0] != b'c' or data[1] != b'm' or data[2] != b'p':
        return 0
    alg = data[3]
    has_size = get_uvarint(data, <size_t>size, &pos, &original_size) == 0
    record_len = rec_get_u32(data) & RECORD_LEN_MASK
    if record_len <= RECORD_MAX_LEN and record_len <= <uint64_t>size:
        if alg != COMPRESS_S2 or not has_size or not _is_stream_identifier(data + pos, size - pos):
            return 0
    elif alg != COMPRESS_NONE and alg != COMPRESS_S2 and alg != COMPRESS_LZ4:
        raise BadMsg(f"compressed block: unknown compression algorithm 0x{alg:02x} at offset 3")
    elif not has_size:
        raise BadMsg("compressed block: truncated or invalid original-size uvarint at offset 4")
    header.alg = alg
    header.original_size = original_size
    header.header_len = pos
    return 0


cdef int _s2_check(int rc, s2_error* err, size_t base, str what) except -1:
    if rc != S2_OK:
        raise BadMsg(f"{what}: {s2_strerror(rc).decode()} at byte {base + err.offset}")
    return 0


cdef uint64_t _s2_decoded_len(const uint8_t* src, size_t n, size_t base, str what) except? 0:
    cdef s2_error err
    cdef uint64_t total = 0
    cdef int rc
    with nogil:
        rc = s2_stream_decoded_len(src, n, &total, &err)
    _s2_check(rc, &err, base, what)
    return total


cdef int _s2_decode_into(const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len,
                         size_t base, str what) except -1:
    cdef s2_error err
    cdef int rc
    with nogil:
        rc = s2_stream_decode(src, n, dst, dst_len, &err)
    return _s2_check(rc, &err, base, what)


cdef bytes _lz4_decode(const uint8_t* src, size_t n, size_t expected_len, size_t base):
    """Decode the one LZ4 frame that must fill [src, src+n) exactly."""
    decompressor = lz4.frame.LZ4FrameDecompressor()
    try:
        plain = decompressor.decompress(PyMemoryView_FromMemory(<char*>src, n, PyBUF_READ))
    except RuntimeError as exc:
        raise BadMsg(f"LZ4 block file: corrupt LZ4 frame at bytes {base}..{base + n}: {exc}") from None
    if not decompressor.eof:
        raise BadMsg(f"LZ4 block file: LZ4 frame at byte {base} ends before its end mark")
    if decompressor.unused_data:
        raise BadMsg(f"LZ4 block file: {len(decompressor.unused_data)} stray bytes after the LZ4 "
                     f"frame, before the checksum at byte {base + n}")
    if <size_t>len(plain) != expected_len:
        raise BadMsg(f"LZ4 block file: frame decodes to {len(plain)} bytes, header says "
                     f"{expected_len} (+ {BLOCK_CHECKSUM_SIZE} checksum bytes)")
    return plain


cdef int _validate(const uint8_t* data, Py_ssize_t size, BlockHeader* header) except -1:
    """Read the header and check a compressed file's sizes, and an S2 file's framing, before
    anything is allocated for its contents."""
    _read_header(data, size, header)
    if header.header_len == 0:
        return 0
    if header.alg == COMPRESS_NONE:
        # Metadata saying "not compressed": nats-server strips it and keeps the rest as it is.
        if header.original_size != <uint64_t>size - header.header_len:
            raise BadMsg(f"uncompressed block with metadata: header says {header.original_size} "
                         f"bytes, {size - header.header_len} follow it")
        return 0
    name = "S2 block file" if header.alg == COMPRESS_S2 else "LZ4 block file"
    if <size_t>size - header.header_len < BLOCK_CHECKSUM_SIZE:
        raise BadMsg(f"{name}: {size} bytes end before the {BLOCK_CHECKSUM_SIZE}-byte checksum "
                     f"that follows the {header.header_len}-byte header")
    if header.original_size < BLOCK_CHECKSUM_SIZE or header.original_size > ORIGINAL_SIZE_LIMIT:
        raise BadMsg(f"{name}: implausible original size {header.original_size} in the header")
    if header.alg == COMPRESS_S2:
        body_len = header.original_size - BLOCK_CHECKSUM_SIZE
        total = _s2_decoded_len(data + header.header_len,
                                <size_t>size - header.header_len - BLOCK_CHECKSUM_SIZE,
                                header.header_len, name)
        if total != body_len:
            raise BadMsg(f"{name}: stream decodes to {total} bytes, header says {body_len} "
                         f"(+ {BLOCK_CHECKSUM_SIZE} checksum bytes)")
    return 0


cdef int _decode_validated(const uint8_t* data, Py_ssize_t size, BlockHeader* header,
                           uint8_t* dst) except -1:
    """Write the plain file (header.original_size bytes) of a validated compressed file."""
    cdef const uint8_t* stream = data + header.header_len
    cdef size_t stream_len = <size_t>size - header.header_len - BLOCK_CHECKSUM_SIZE
    cdef size_t body_len = <size_t>header.original_size - BLOCK_CHECKSUM_SIZE
    cdef const uint8_t* checksum = data + size - BLOCK_CHECKSUM_SIZE
    if header.alg == COMPRESS_NONE:
        memcpy(dst, stream, <size_t>header.original_size)
    elif header.alg == COMPRESS_S2:
        _s2_decode_into(stream, stream_len, dst, body_len, header.header_len, "S2 block file")
        memcpy(dst + body_len, checksum, BLOCK_CHECKSUM_SIZE)
    else:
        body = _lz4_decode(stream, stream_len, body_len, header.header_len)
        memcpy(dst, <const char*>body, body_len)
        memcpy(dst + body_len, checksum, BLOCK_CHECKSUM_SIZE)
    return 0


cdef int c_block_alg(const unsigned char* data, Py_ssize_t size) except -1:
    cdef BlockHeader header
    _read_header(data, size, &header)
    return header.alg


cdef Py_ssize_t c_plain_size(const unsigned char* data, Py_ssize_t size) except -1:
    cdef BlockHeader header
    _validate(data, size, &header)
    return <Py_ssize_t>header.original_size


cdef int c_decompress_into(const unsigned char* data, Py_ssize_t size, uint8_t* dst,
                           size_t dst_len) except -1:
    cdef BlockHeader header
    _validate(data, size, &header)
    if dst_len != header.original_size:
        raise ValueError(f"destination of {dst_len} bytes for a {header.original_size}-byte block")
    if header.header_len == 0:
        memcpy(dst, data, dst_len)
        return 0
    return _decode_validated(data, size, &header, dst)


cdef object c_decompress_block(const unsigned char* data, Py_ssize_t size):
    cdef BlockHeader header
    _validate(data, size, &header)
    if header.header_len == 0:
        return None
    out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>header.original_size)
    _decode_validated(data, size, &header, <uint8_t*>PyBytes_AS_STRING(out))
    return out


cdef size_t _write_header(uint8_t* out, int alg, uint64_t original_size) noexcept nogil:
    out[0] = b'c'
    out[1] = b'm'
    out[2] = b'p'
    out[3] = <uint8_t>alg
    return 4 + put_uvarint(out + 4, original_size)


cdef bytes _compress_plain(const uint8_t* data, Py_ssize_t size, int alg):
    cdef uint8_t header[COMPRESS_HEADER_MAX]
    cdef size_t header_len, stream_len, capacity
    cdef size_t body_len
    cdef uint8_t* buf
    if size < BLOCK_CHECKSUM_SIZE:
        raise BadMsg(f"block of {size} bytes is shorter than its {BLOCK_CHECKSUM_SIZE}-byte checksum")
    body_len = <size_t>size - BLOCK_CHECKSUM_SIZE
    if alg == COMPRESS_LZ4:
        header_len = _write_header(header, alg, <uint64_t>size)
        frame = lz4.frame.compress(PyMemoryView_FromMemory(<char*>data, body_len, PyBUF_READ),
                                   content_checksum=True)
        return b"".join((PyBytes_FromStringAndSize(<const char*>header, header_len), frame,
                         PyBytes_FromStringAndSize(<const char*>data + body_len, BLOCK_CHECKSUM_SIZE)))
    capacity = COMPRESS_HEADER_MAX + s2_stream_max_encoded_len(body_len) + BLOCK_CHECKSUM_SIZE
    buf = <uint8_t*>malloc(capacity)
    if buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            header_len = _write_header(buf, alg, <uint64_t>size)
            stream_len = s2_stream_encode(buf + header_len, data, body_len)
            memcpy(buf + header_len + stream_len, data + body_len, BLOCK_CHECKSUM_SIZE)
        return PyBytes_FromStringAndSize(<const char*>buf, header_len + stream_len + BLOCK_CHECKSUM_SIZE)
    finally:
        free(buf)


cdef bytes c_compress_block(const unsigned char* data, Py_ssize_t size, int alg):
    cdef BlockHeader header
    cdef const uint8_t* plain_ptr
    if alg != COMPRESS_NONE and alg != COMPRESS_S2 and alg != COMPRESS_LZ4:
        raise ValueError(f"unknown compression algorithm {alg}")
    _read_header(data, size, &header)
    if header.header_len == 0:
        if alg == COMPRESS_NONE:
            return PyBytes_FromStringAndSize(<const char*>data, size)
        return _compress_plain(data, size, alg)
    if header.alg == alg and alg != COMPRESS_NONE:
        return PyBytes_FromStringAndSize(<const char*>data, size)
    plain = c_decompress_block(data, size)
    if alg == COMPRESS_NONE:
        return plain
    plain_ptr = <const uint8_t*>PyBytes_AS_STRING(plain)
    return _compress_plain(plain_ptr, len(plain), alg)


cdef inline const uint8_t* _data_ptr(const unsigned char[::1] view) noexcept:
    return &view[0] if view.shape[0] > 0 else <const uint8_t*>EMPTY


def block_alg(data) -> int:
    """The compression algorithm of a block file: ALG_NONE, ALG_S2 or ALG_LZ4."""
    cdef const unsigned char[::1] view = data
    return c_block_alg(_data_ptr(view), view.shape[0])


def decompress_block(data):
    """The plain block file; ``data`` itself when it is not compressed.

    Raises BadMsg, saying what is wrong and where, when a compressed file is corrupt.
    """
    cdef const unsigned char[::1] view = data
    plain = c_decompress_block(_data_ptr(view), view.shape[0])
    return data if plain is None else plain


def compress_block(data, int alg) -> bytes:
    """The block file compressed with ``alg`` (ALG_S2 or ALG_LZ4; ALG_NONE gives it plain).

    The last 8 bytes (the last record's hash) stay uncompressed at the end of the file.  A
    compressed input is decompressed first; one already using ``alg`` is returned as it is.
    """
    cdef const unsigned char[::1] view = data
    return c_compress_block(_data_ptr(view), view.shape[0], alg)


def s2_encode_stream(data) -> bytes:
    """Snappy-framed stream ("sNaPpY", 64 KiB chunks) of ``data``, readable by S2 readers."""
    cdef const unsigned char[::1] view = data
    cdef const uint8_t* src = _data_ptr(view)
    cdef size_t n = view.shape[0]
    cdef size_t written
    cdef uint8_t* buf = <uint8_t*>malloc(s2_stream_max_encoded_len(n))
    if buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            written = s2_stream_encode(buf, src, n)
        return PyBytes_FromStringAndSize(<const char*>buf, written)
    finally:
        free(buf)


def s2_decode_stream(data) -> bytes:
    """Decode a whole S2 or Snappy framed stream, checking every chunk's CRC-32C.

    Raises BadMsg, with the byte offset of the bad chunk or element, on corrupt input.
    """
    cdef const unsigned char[::1] view = data
    cdef const uint8_t* src = _data_ptr(view)
    cdef size_t n = view.shape[0]
    total = _s2_decoded_len(src, n, 0, "S2 stream")
    out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>total)
    _s2_decode_into(src, n, <uint8_t*>PyBytes_AS_STRING(out), total, 0, "S2 stream")
    return out


def plain_size(data) -> int:
    """Length of the plain block file: ``len(data)`` when plain, the header's original size
    when compressed (after checking the header and an S2 file's framing)."""
    cdef const unsigned char[::1] view = data
    return c_plain_size(_data_ptr(view), view.shape[0])


def decompress_block_into(data, unsigned char[::1] out) -> None:
    """Write the plain block file into ``out`` (a writable buffer of ``plain_size(data)`` bytes)."""
    cdef const unsigned char[::1] view = data
    cdef uint8_t dummy
    c_decompress_into(_data_ptr(view), view.shape[0], &out[0] if out.shape[0] else &dummy,
                      out.shape[0])


def _crc32c(data, bint portable=False) -> int:
    """CRC-32C of ``data`` as the S2 framing computes it (test hook: ``portable`` forces the
    table-driven code instead of the CPU instruction)."""
    cdef const unsigned char[::1] view = data
    cdef const uint8_t* src = _data_ptr(view)
    cdef size_t n = view.shape[0]
    cdef uint32_t crc
    with nogil:
        crc = s2_crc32c_portable(0, src, n) if portable else s2_crc32c(0, src, n)
    return crc
