# Compression of sealed block files (nats-server's CompressionInfo metadata + S2 stream).
#
# A compressed block file:
#
#   'c' 'm' 'p'             3 bytes of magic
#   alg                     1 byte: 1 = S2 (nats-server's S2Compression), 0x4C = LZ4 (jsstore only)
#   original_size           uvarint: length of the whole uncompressed block file
#   body                    the block's bytes except the last 8, compressed:
#                             S2  -> an S2/Snappy framed stream (nats reads it with s2.NewReader)
#                             LZ4 -> one LZ4 frame with a content checksum
#   checksum                the block's last 8 bytes (hash of its last record), not compressed,
#                           so the last-record hash is readable without decompressing
#
# A file that does not start with "cmp" is a plain block.  Because the first 4 bytes of a plain
# block are a record length, "cmp" followed by 0x00, 0x01, 0x80 or 0x81 can also be a record of
# 7.0 MiB or 23.0 MiB: such a prefix counts as compressed only if the rest proves it (see
# compress.pyx: _read_header).
#
# jsstore's LZ4 byte 0x4C ('L') is far from nats-server's small enum values and, read as a record
# length, exceeds the 32 MiB record limit, so it can never be mistaken for a plain block.  Files
# using it are not readable by nats-server.
#
# The cdef functions take a pointer and a length: the caller keeps the memory alive and unchanged
# for the duration of the call (S2 work runs without the GIL).
from libc.stdint cimport uint8_t

cdef enum:
    COMPRESS_NONE = 0             # plain block file
    COMPRESS_S2 = 1               # nats-server's S2Compression
    COMPRESS_LZ4 = 0x4C           # jsstore extension
    BLOCK_CHECKSUM_SIZE = 8       # trailing record hash kept uncompressed
    COMPRESS_HEADER_MAX = 14      # 'cmp' + alg + uvarint of up to 10 bytes

# The algorithm of a block file (COMPRESS_*).  Raises BadMsg for a "cmp" header that cannot be
# plain data and is not a valid header.
cdef int c_block_alg(const unsigned char* data, Py_ssize_t size) except -1

# The plain block file of a compressed one, or None when data is already plain.
# Raises BadMsg (what is wrong and at which file offset) on corrupt input.
cdef object c_decompress_block(const unsigned char* data, Py_ssize_t size)

# Length of the plain block file (size itself for a plain file).  Checks the header and, for
# S2, the framing, so a buffer of this size can be allocated safely.  Raises BadMsg.
cdef Py_ssize_t c_plain_size(const unsigned char* data, Py_ssize_t size) except -1

# Write the plain block file into dst, whose length must be c_plain_size(data, size) (a plain
# input is copied as it is).  Raises BadMsg on corrupt input, ValueError on a wrong dst_len.
cdef int c_decompress_into(const unsigned char* data, Py_ssize_t size, uint8_t* dst,
                           size_t dst_len) except -1

# A block file compressed with alg (COMPRESS_*).  A compressed input is decompressed first;
# an input already using alg comes back unchanged; COMPRESS_NONE gives the plain file.
cdef bytes c_compress_block(const unsigned char* data, Py_ssize_t size, int alg)
