/* S2 / Snappy block and framing codec.  Formats are described in s2.h. */
#include "s2.h"

#include <string.h>

#include "varint.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define S2_LITTLE_ENDIAN 1
#else
#define S2_LITTLE_ENDIAN 0
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define S2_HAVE_SSE42 1
#include <nmmintrin.h>
#else
#define S2_HAVE_SSE42 0
#endif

static const char S2_ID_SNAPPY[6] = {'s', 'N', 'a', 'P', 'p', 'Y'};
static const char S2_ID_S2[6] = {'S', '2', 's', 'T', 'w', 'O'};

#define CHUNK_COMPRESSED    0x00
#define CHUNK_UNCOMPRESSED  0x01
#define CHUNK_IDENTIFIER    0xff
#define CHUNK_HEADER_SIZE   4u
#define CHUNK_CRC_SIZE      4u
#define ENCODE_CHUNK_SIZE   65536u      /* bytes of input per chunk the encoder writes */
#define HASH_BITS           14
#define INPUT_MARGIN        15u         /* the match finder stops this far from the end */

const char *s2_strerror(int code) {
    switch (code) {
    case S2_OK: return "ok";
    case S2_ERR_TRUNCATED: return "data ends inside a chunk or element";
    case S2_ERR_NO_IDENTIFIER: return "stream does not start with a stream identifier chunk";
    case S2_ERR_BAD_IDENTIFIER: return "stream identifier is not \"sNaPpY\" or \"S2sTwO\"";
    case S2_ERR_CHUNK_TYPE: return "reserved unskippable chunk type";
    case S2_ERR_CHUNK_LEN: return "data chunk shorter than its 4-byte checksum";
    case S2_ERR_BLOCK_TOO_LARGE: return "chunk decodes to more than the maximum block size";
    case S2_ERR_CRC: return "CRC-32C mismatch";
    case S2_ERR_BAD_PREAMBLE: return "invalid block length preamble";
    case S2_ERR_BAD_OFFSET: return "copy offset is zero or before the start of the block";
    case S2_ERR_OVERRUN: return "element writes past the block's decoded length";
    case S2_ERR_UNDERRUN: return "block ends before its decoded length";
    case S2_ERR_OUTPUT_SIZE: return "stream decodes to an unexpected size";
    default: return "unknown error";
    }
}

/* ---------------------------------------------------------------------------------- */
/* CRC-32C: slicing-by-8 tables, or the SSE4.2 crc32 instruction when the CPU has it.   */

static uint32_t crc_tables[8][256];
static int crc_use_hw;

__attribute__((constructor)) static void s2_crc_tables_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
        crc_tables[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tables[t][i] = (crc_tables[t - 1][i] >> 8) ^ crc_tables[0][crc_tables[t - 1][i] & 0xffu];
#if S2_HAVE_SSE42
    __builtin_cpu_init();
    crc_use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t s2_crc32c_portable(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
#if S2_LITTLE_ENDIAN
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = crc_tables[7][w & 0xff] ^ crc_tables[6][(w >> 8) & 0xff] ^
              crc_tables[5][(w >> 16) & 0xff] ^ crc_tables[4][(w >> 24) & 0xff] ^
              crc_tables[3][(w >> 32) & 0xff] ^ crc_tables[2][(w >> 40) & 0xff] ^
              crc_tables[1][(w >> 48) & 0xff] ^ crc_tables[0][w >> 56];
        p += 8;
        n -= 8;
    }
#endif
    while (n--) crc = (crc >> 8) ^ crc_tables[0][(crc ^ *p++) & 0xffu];
    return ~crc;
}

#if S2_HAVE_SSE42
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = (uint32_t)~crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}
#endif

uint32_t s2_crc32c(uint32_t crc, const uint8_t *data, size_t n) {
#if S2_HAVE_SSE42
    if (crc_use_hw) return crc32c_hw(crc, data, n);
#endif
    return s2_crc32c_portable(crc, data, n);
}

uint32_t s2_masked_crc(const uint8_t *data, size_t n) {
    uint32_t crc = s2_crc32c(0, data, n);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static inline uint32_t get_le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static inline uint32_t get_le24(const uint8_t *p) { return get_le16(p) | (uint32_t)p[2] << 16; }
static inline uint32_t get_le32(const uint8_t *p) { return get_le24(p) | (uint32_t)p[3] << 24; }
static inline void put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

/* ---------------------------------------------------------------------------------- */
/* Block decoder                                                                        */

int s2_block_decoded_len(const uint8_t *src, size_t src_len, uint64_t *decoded_len,
                         size_t *preamble_len) {
    size_t pos = 0;
    uint64_t v;
    if (get_uvarint(src, src_len, &pos, &v) < 0 || v > 0xffffffffu) return S2_ERR_BAD_PREAMBLE;
    *decoded_len = v;
    *preamble_len = pos;
    return S2_OK;
}

/* Copy `length` bytes that start `offset` bytes back; the regions may overlap, in which
 * case the last `offset` bytes repeat.  Caller checked 0 < offset <= written and room. */
static inline void copy_back(uint8_t *out, size_t offset, size_t length) {
    const uint8_t *from = out - offset;
    if (offset >= length) {
        memcpy(out, from, length);
        return;
    }
    if (offset == 1) {
        memset(out, from[0], length);
        return;
    }
    /* Grow the repeated pattern: after each step the copied span is a whole number of
     * periods, so source [from, from+k) never overlaps destination [out+done, ...). */
    size_t done = 0;
    while (done < length) {
        size_t k = offset + done;
        if (k > length - done) k = length - done;
        memcpy(out + done, from, k);
        done += k;
    }
}

int s2_block_decode(uint8_t *dst, size_t dst_len, const uint8_t *src, size_t src_len,
                    s2_error *err) {
    uint64_t want;
    size_t s;
    int rc = s2_block_decoded_len(src, src_len, &want, &s);
    if (rc != S2_OK) { err->code = rc; err->offset = 0; return rc; }
    if (want != dst_len) { err->code = S2_ERR_OUTPUT_SIZE; err->offset = 0; return S2_ERR_OUTPUT_SIZE; }

    size_t d = 0;        /* bytes written */
    size_t offset = 0;   /* last copy offset, for S2 repeats; 0 = none yet */
    while (s < src_len) {
        const size_t start = s;
        const uint8_t tag = src[s];
        uint64_t length;
        switch (tag & 3u) {
        case 0: { /* literal */
            uint32_t x = tag >> 2;
            if (x < 60) {
                s += 1;
            } else {
                size_t extra = x - 59;   /* 1..4 length bytes */
                if (src_len - s < 1 + extra) goto truncated;
                x = 0;
                for (size_t i = 0; i < extra; i++) x |= (uint32_t)src[s + 1 + i] << (8 * i);
                s += 1 + extra;
            }
            length = (uint64_t)x + 1;
            if (length > dst_len - d) goto overrun;
            if (length > src_len - s) goto truncated;
            memcpy(dst + d, src + s, (size_t)length);
            d += (size_t)length;
            s += (size_t)length;
            continue;
        }
        case 1: { /* copy, 1-byte offset; offset 0 = S2 repeat */
            if (src_len - s < 2) goto truncated;
            length = (tag >> 2) & 7u;
            size_t tag_offset = ((size_t)(tag & 0xe0u) << 3) | src[s + 1];
            s += 2;
            if (tag_offset == 0) {
                if (length == 5) {
                    if (src_len - s < 1) goto truncated;
                    length = (uint64_t)src[s] + 4;
                    s += 1;
                } else if (length == 6) {
                    if (src_len - s < 2) goto truncated;
                    length = (uint64_t)get_le16(src + s) + (1u << 8);
                    s += 2;
                } else if (length == 7) {
                    if (src_len - s < 3) goto truncated;
                    length = (uint64_t)get_le24(src + s) + (1u << 16);
                    s += 3;
                }
            } else {
                offset = tag_offset;
            }
            length += 4;
            break;
        }
        case 2: /* copy, 2-byte offset */
            if (src_len - s < 3) goto truncated;
            length = 1 + (uint64_t)(tag >> 2);
            offset = get_le16(src + s + 1);
            s += 3;
            break;
        default: /* copy, 4-byte offset */
            if (src_len - s < 5) goto truncated;
            length = 1 + (uint64_t)(tag >> 2);
            offset = get_le32(src + s + 1);
            s += 5;
            break;
        }
        if (offset == 0 || offset > d) {
            err->code = S2_ERR_BAD_OFFSET; err->offset = start; return S2_ERR_BAD_OFFSET;
        }
        if (length > dst_len - d) goto overrun;
        copy_back(dst + d, offset, (size_t)length);
        d += (size_t)length;
        continue;

    truncated:
        err->code = S2_ERR_TRUNCATED; err->offset = start; return S2_ERR_TRUNCATED;
    overrun:
        err->code = S2_ERR_OVERRUN; err->offset = start; return S2_ERR_OVERRUN;
    }
    if (d != dst_len) { err->code = S2_ERR_UNDERRUN; err->offset = src_len; return S2_ERR_UNDERRUN; }
    err->code = S2_OK;
    err->offset = 0;
    return S2_OK;
}

/* ---------------------------------------------------------------------------------- */
/* Block encoder: greedy hash-table matcher writing plain Snappy elements.              */

/* Largest output of encode_block for n input bytes. */
static size_t block_max_encoded_len(size_t n) { return 32 + n + n / 6; }

static inline uint32_t load32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint32_t hash4(uint32_t v) { return (v * 0x1e35a7bdu) >> (32 - HASH_BITS); }

static uint8_t *emit_literal(uint8_t *op, const uint8_t *lit, size_t len) {
    size_t n = len - 1;
    if (n < 60) {
        *op++ = (uint8_t)(n << 2);
    } else {
        size_t bytes = n < (1u << 8) ? 1 : n < (1u << 16) ? 2 : n < (1u << 24) ? 3 : 4;
        *op++ = (uint8_t)((59 + bytes) << 2);
        for (size_t i = 0; i < bytes; i++) *op++ = (uint8_t)(n >> (8 * i));
    }
    memcpy(op, lit, len);
    return op + len;
}

/* 4 <= len <= 64, offset < 65536 */
static uint8_t *emit_copy_short(uint8_t *op, size_t offset, size_t len) {
    if (len < 12 && offset < 2048) {
        *op++ = (uint8_t)(1u | ((len - 4) << 2) | ((offset >> 8) << 5));
        *op++ = (uint8_t)offset;
    } else {
        *op++ = (uint8_t)(2u | ((len - 1) << 2));
        *op++ = (uint8_t)offset;
        *op++ = (uint8_t)(offset >> 8);
    }
    return op;
}

static uint8_t *emit_copy(uint8_t *op, size_t offset, size_t len) {
    while (len >= 68) { op = emit_copy_short(op, offset, 64); len -= 64; }
    if (len > 64) { op = emit_copy_short(op, offset, 60); len -= 60; }
    return emit_copy_short(op, offset, len);
}

/* Length of the common prefix of a and b, not reading at or past end (b < end). */
static inline size_t match_length(const uint8_t *a, const uint8_t *b, const uint8_t *end) {
    const uint8_t *start = b;
#if S2_LITTLE_ENDIAN && (defined(__GNUC__) || defined(__clang__))
    while ((size_t)(end - b) >= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return (size_t)(b - start) + ((size_t)__builtin_ctzll(x ^ y) >> 3);
        a += 8;
        b += 8;
    }
#endif
    while (b < end && *a == *b) { a++; b++; }
    return (size_t)(b - start);
}

static size_t encode_block(uint8_t *dst, const uint8_t *src, size_t n, uint16_t *table) {
    uint8_t *op = dst + put_uvarint(dst, n);
    if (n < INPUT_MARGIN + 2) {
        if (n > 0) op = emit_literal(op, src, n);
        return (size_t)(op - dst);
    }
    memset(table, 0, sizeof(uint16_t) << HASH_BITS);
    const uint8_t *end = src + n;
    const uint8_t *ip_limit = end - INPUT_MARGIN;
    const uint8_t *next_emit = src;
    const uint8_t *ip = src + 1;
    uint32_t next_hash = hash4(load32(ip));

    for (;;) {
        /* Look for a 4-byte match, stepping further the longer nothing is found. */
        uint32_t skip = 32;
        const uint8_t *next_ip = ip;
        const uint8_t *candidate;
        do {
            ip = next_ip;
            uint32_t h = next_hash;
            next_ip = ip + (skip++ >> 5);
            if (next_ip > ip_limit) goto remainder;
            next_hash = hash4(load32(next_ip));
            candidate = src + table[h];
            table[h] = (uint16_t)(ip - src);
        } while (load32(ip) != load32(candidate));

        if (ip > next_emit) op = emit_literal(op, next_emit, (size_t)(ip - next_emit));

        /* Emit copies for as long as the position right after a match matches again. */
        do {
            size_t matched = 4 + match_length(candidate + 4, ip + 4, end);
            op = emit_copy(op, (size_t)(ip - candidate), matched);
            ip += matched;
            next_emit = ip;
            if (ip >= ip_limit) goto remainder;
            table[hash4(load32(ip - 1))] = (uint16_t)(ip - 1 - src);
            uint32_t h = hash4(load32(ip));
            candidate = src + table[h];
            table[h] = (uint16_t)(ip - src);
        } while (load32(ip) == load32(candidate));

        ip++;
        next_hash = hash4(load32(ip));
    }
remainder:
    if (next_emit < end) op = emit_literal(op, next_emit, (size_t)(end - next_emit));
    return (size_t)(op - dst);
}

/* ---------------------------------------------------------------------------------- */
/* Framing                                                                              */

/* Walk the chunks of a stream.  With dst == NULL only check the framing and add up the
 * decoded sizes; otherwise also decode into dst and verify every checksum. */
static int stream_walk(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                       uint64_t *decoded_len, s2_error *err) {
    size_t pos = 0;
    uint64_t out = 0;
    int seen_identifier = 0;
    size_t max_block = S2_MAX_BLOCK;
    int rc;

    while (pos < src_len) {
        const size_t chunk_start = pos;
        if (src_len - pos < CHUNK_HEADER_SIZE) { rc = S2_ERR_TRUNCATED; goto fail; }
        const uint8_t type = src[pos];
        const size_t chunk_len = get_le24(src + pos + 1);
        pos += CHUNK_HEADER_SIZE;
        if (chunk_len > src_len - pos) { rc = S2_ERR_TRUNCATED; goto fail; }
        const uint8_t *body = src + pos;
        if (!seen_identifier && type != CHUNK_IDENTIFIER) { rc = S2_ERR_NO_IDENTIFIER; goto fail; }

        if (type == CHUNK_IDENTIFIER) {
            if (chunk_len != sizeof S2_ID_SNAPPY) { rc = S2_ERR_BAD_IDENTIFIER; goto fail; }
            if (memcmp(body, S2_ID_SNAPPY, sizeof S2_ID_SNAPPY) == 0) {
                max_block = S2_SNAPPY_MAX_BLOCK;
            } else if (memcmp(body, S2_ID_S2, sizeof S2_ID_S2) == 0) {
                max_block = S2_MAX_BLOCK;
            } else {
                rc = S2_ERR_BAD_IDENTIFIER;
                goto fail;
            }
            seen_identifier = 1;
        } else if (type == CHUNK_COMPRESSED || type == CHUNK_UNCOMPRESSED) {
            if (chunk_len < CHUNK_CRC_SIZE) { rc = S2_ERR_CHUNK_LEN; goto fail; }
            const uint32_t want_crc = get_le32(body);
            const uint8_t *payload = body + CHUNK_CRC_SIZE;
            const size_t payload_len = chunk_len - CHUNK_CRC_SIZE;
            uint64_t n;
            if (type == CHUNK_COMPRESSED) {
                size_t preamble;
                rc = s2_block_decoded_len(payload, payload_len, &n, &preamble);
                if (rc != S2_OK) { err->code = rc; err->offset = pos + CHUNK_CRC_SIZE; return rc; }
            } else {
                n = payload_len;
            }
            if (n > max_block) { rc = S2_ERR_BLOCK_TOO_LARGE; goto fail; }
            if (dst != NULL) {
                if (n > dst_len - out) { rc = S2_ERR_OUTPUT_SIZE; goto fail; }
                uint8_t *target = dst + out;
                if (type == CHUNK_COMPRESSED) {
                    s2_error block_err;
                    rc = s2_block_decode(target, (size_t)n, payload, payload_len, &block_err);
                    if (rc != S2_OK) {
                        err->code = rc;
                        err->offset = pos + CHUNK_CRC_SIZE + block_err.offset;
                        return rc;
                    }
                } else {
                    memcpy(target, payload, (size_t)n);
                }
                if (s2_masked_crc(target, (size_t)n) != want_crc) { rc = S2_ERR_CRC; goto fail; }
            }
            out += n;
        } else if (type < 0x80) {
            rc = S2_ERR_CHUNK_TYPE;
            goto fail;
        }
        /* 0x80-0xfe: padding, S2 index and other skippable chunks */
        pos += chunk_len;
        continue;

    fail:
        err->code = rc;
        err->offset = chunk_start;
        return rc;
    }
    if (dst != NULL && out != dst_len) {
        err->code = S2_ERR_OUTPUT_SIZE;
        err->offset = src_len;
        return S2_ERR_OUTPUT_SIZE;
    }
    *decoded_len = out;
    err->code = S2_OK;
    err->offset = 0;
    return S2_OK;
}

int s2_stream_decoded_len(const uint8_t *src, size_t src_len, uint64_t *decoded_len,
                          s2_error *err) {
    return stream_walk(src, src_len, NULL, 0, decoded_len, err);
}

int s2_stream_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                     s2_error *err) {
    uint64_t total;
    return stream_walk(src, src_len, dst, dst_len, &total, err);
}

size_t s2_stream_max_encoded_len(size_t n) {
    size_t full = n / ENCODE_CHUNK_SIZE, rest = n % ENCODE_CHUNK_SIZE;
    size_t per_chunk = CHUNK_HEADER_SIZE + CHUNK_CRC_SIZE;
    return S2_IDENTIFIER_LEN + full * (per_chunk + block_max_encoded_len(ENCODE_CHUNK_SIZE)) +
           (rest ? per_chunk + block_max_encoded_len(rest) : 0);
}

size_t s2_stream_encode(uint8_t *dst, const uint8_t *src, size_t n) {
    uint16_t table[1u << HASH_BITS];
    uint8_t *op = dst;
    op[0] = CHUNK_IDENTIFIER;
    op[1] = sizeof S2_ID_SNAPPY;
    op[2] = 0;
    op[3] = 0;
    memcpy(op + CHUNK_HEADER_SIZE, S2_ID_SNAPPY, sizeof S2_ID_SNAPPY);
    op += S2_IDENTIFIER_LEN;

    for (size_t pos = 0; pos < n;) {
        size_t k = n - pos < ENCODE_CHUNK_SIZE ? n - pos : ENCODE_CHUNK_SIZE;
        const uint8_t *chunk = src + pos;
        uint8_t *header = op;
        uint8_t *payload = header + CHUNK_HEADER_SIZE + CHUNK_CRC_SIZE;
        size_t payload_len = encode_block(payload, chunk, k, table);
        if (payload_len >= k - k / 8) {
            /* Compression saves less than 12.5%: store the bytes as they are. */
            header[0] = CHUNK_UNCOMPRESSED;
            memcpy(payload, chunk, k);
            payload_len = k;
        } else {
            header[0] = CHUNK_COMPRESSED;
        }
        size_t chunk_len = payload_len + CHUNK_CRC_SIZE;
        header[1] = (uint8_t)chunk_len;
        header[2] = (uint8_t)(chunk_len >> 8);
        header[3] = (uint8_t)(chunk_len >> 16);
        put_le32(header + CHUNK_HEADER_SIZE, s2_masked_crc(chunk, k));
        op = payload + payload_len;
        pos += k;
    }
    return (size_t)(op - dst);
}
