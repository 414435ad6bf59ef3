/*
 * S2 / Snappy compression for sealed message blocks.
 *
 * nats-server compresses sealed blocks with klauspost's S2 *stream* format, which is
 * Google's Snappy framing format with two changes: the stream identifier may read
 * "S2sTwO" instead of "sNaPpY", and blocks may use S2's extended copy encodings.
 *
 * Framing (every chunk: 1 byte type, 3 bytes little-endian length, then `length` bytes):
 *
 *   0xff  stream identifier   6 bytes: "sNaPpY" (Snappy: chunks decode to <= 64 KiB)
 *                                      "S2sTwO" (S2: chunks decode to <= 4 MiB)
 *   0x00  compressed data     4-byte masked CRC-32C of the decoded bytes, then one block
 *   0x01  uncompressed data   4-byte masked CRC-32C, then the bytes themselves
 *   0xfe  padding             skipped
 *   0x80-0xfd                 skippable (S2 writes its seek index as 0x99)
 *   0x02-0x7f                 reserved, unskippable: an error
 *
 * The first chunk must be a stream identifier; more identifiers may follow (concatenated
 * streams).  An empty input is a valid, empty stream.
 * Masked CRC = ((crc >> 15) | (crc << 17)) + 0xa282ead8, crc = CRC-32C (Castagnoli).
 *
 * Block: uvarint(decoded length), then elements; the low 2 bits of the tag byte select:
 *
 *   00 literal  tag>>2 < 60: length = (tag>>2) + 1; 60..63: length-1 follows in 1..4 LE bytes
 *   01 copy1    length = 4 + ((tag>>2) & 7), offset = ((tag & 0xe0) << 3) | next byte
 *               S2: offset 0 means "repeat the previous offset"; its length code then reads
 *               0..4 -> 4..8, 5 -> 8 + 1 byte, 6 -> 260 + 2 LE bytes, 7 -> 65540 + 3 LE bytes.
 *               A block may not start with a repeat; the offset is not carried across blocks.
 *   10 copy2    length = 1 + (tag>>2), offset = 2 LE bytes
 *   11 copy4    length = 1 + (tag>>2), offset = 4 LE bytes
 *
 * A copy may overlap its own output (offset < length): it then repeats a pattern.
 *
 * The encoder writes plain Snappy blocks in "sNaPpY" framing with 64 KiB chunks, a subset
 * of S2 that nats-server's S2 reader accepts.
 *
 * Every decoder checks every bound: on garbage it returns an S2_ERR_* code (negative) and
 * the input offset where the problem was found; it never reads or writes out of bounds.
 */
#ifndef JSSTORE_S2_H
#define JSSTORE_S2_H

#include <stddef.h>
#include <stdint.h>

/* Result codes: 0 is success, every error is negative. */
#define S2_OK                    0
#define S2_ERR_TRUNCATED        -1   /* the input ends inside a chunk or an element */
#define S2_ERR_NO_IDENTIFIER    -2   /* the first chunk is not a stream identifier */
#define S2_ERR_BAD_IDENTIFIER   -3   /* identifier chunk of the wrong length or text */
#define S2_ERR_CHUNK_TYPE       -4   /* reserved unskippable chunk type 0x02-0x7f */
#define S2_ERR_CHUNK_LEN        -5   /* data chunk shorter than its 4-byte checksum */
#define S2_ERR_BLOCK_TOO_LARGE  -6   /* chunk decodes to more than the block limit */
#define S2_ERR_CRC              -7   /* CRC-32C of the decoded bytes does not match */
#define S2_ERR_BAD_PREAMBLE     -8   /* block length uvarint invalid or > 2^32-1 */
#define S2_ERR_BAD_OFFSET       -9   /* copy offset 0 without a previous one, or before the start */
#define S2_ERR_OVERRUN         -10   /* an element writes past the block's decoded length */
#define S2_ERR_UNDERRUN        -11   /* the block ends before its decoded length is reached */
#define S2_ERR_OUTPUT_SIZE     -12   /* the stream decodes to a different size than expected */

#define S2_SNAPPY_MAX_BLOCK   65536u          /* decoded bytes per chunk, "sNaPpY" streams */
#define S2_MAX_BLOCK          (4u << 20)      /* decoded bytes per chunk, "S2sTwO" streams */
#define S2_IDENTIFIER_LEN     10u             /* 0xff 06 00 00 + 6 bytes of text */

/* Where a decode failed: the code and the byte offset in the input it was found at. */
typedef struct s2_error {
    int code;          /* S2_ERR_*, or S2_OK */
    size_t offset;     /* offset in the input (stream or block) of the bad chunk/element */
} s2_error;

/* A short English description of an S2_ERR_* code. */
const char *s2_strerror(int code);

/* CRC-32C (Castagnoli) of n bytes, continuing from crc (start with 0).  Uses the SSE4.2
 * instruction when the CPU has it; s2_crc32c_portable is the table-driven code used otherwise. */
uint32_t s2_crc32c(uint32_t crc, const uint8_t *data, size_t n);
uint32_t s2_crc32c_portable(uint32_t crc, const uint8_t *data, size_t n);
/* The framing format's masked CRC-32C of n bytes. */
uint32_t s2_masked_crc(const uint8_t *data, size_t n);

/* --- block format ---------------------------------------------------------------- */

/* Read a block's uvarint preamble: its decoded length and the preamble's size. */
int s2_block_decoded_len(const uint8_t *src, size_t src_len, uint64_t *decoded_len,
                         size_t *preamble_len);
/* Decode one block (preamble included) into dst, whose length must equal the decoded
 * length from the preamble.  On error fills *err (offset relative to src). */
int s2_block_decode(uint8_t *dst, size_t dst_len, const uint8_t *src, size_t src_len,
                    s2_error *err);

/* --- framing (stream) format ------------------------------------------------------- */

/* Walk a stream's chunks without decoding: check framing and sum the decoded sizes. */
int s2_stream_decoded_len(const uint8_t *src, size_t src_len, uint64_t *decoded_len,
                          s2_error *err);
/* Decode a whole stream into dst; the stream must decode to exactly dst_len bytes. */
int s2_stream_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                     s2_error *err);
/* Largest output of s2_stream_encode for n input bytes. */
size_t s2_stream_max_encoded_len(size_t n);
/* Encode n bytes as a Snappy-framed stream ("sNaPpY", 64 KiB chunks) into dst, whose
 * capacity is s2_stream_max_encoded_len(n).  Returns the number of bytes written. */
size_t s2_stream_encode(uint8_t *dst, const uint8_t *src, size_t n);

#endif
