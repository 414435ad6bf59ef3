/* Go's encoding/binary varints: uvarint (LEB128) and varint (zig-zag). */
#ifndef JSSTORE_VARINT_H
#define JSSTORE_VARINT_H

#include <stdint.h>
#include <stddef.h>

#define VARINT_MAX_LEN 10

static inline size_t put_uvarint(uint8_t *out, uint64_t v) {
    size_t i = 0;
    while (v >= 0x80) { out[i++] = (uint8_t)(v | 0x80); v >>= 7; }
    out[i++] = (uint8_t)v;
    return i;
}

static inline size_t put_varint(uint8_t *out, int64_t v) {
    uint64_t u = (uint64_t)v << 1;
    if (v < 0) u = ~u;
    return put_uvarint(out, u);
}

/* Decode at *pos within [0, n); returns 0 and advances *pos, or -1 on truncation/overflow. */
static inline int get_uvarint(const uint8_t *buf, size_t n, size_t *pos, uint64_t *out) {
    uint64_t v = 0; unsigned shift = 0; size_t i = *pos;
    for (int k = 0; k < VARINT_MAX_LEN; k++) {
        if (i >= n) return -1;
        uint8_t b = buf[i++];
        if (b < 0x80) {
            if (k == VARINT_MAX_LEN - 1 && b > 1) return -1;
            *out = v | ((uint64_t)b << shift); *pos = i; return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift; shift += 7;
    }
    return -1;
}

static inline int get_varint(const uint8_t *buf, size_t n, size_t *pos, int64_t *out) {
    uint64_t u;
    if (get_uvarint(buf, n, pos, &u) < 0) return -1;
    int64_t x = (int64_t)(u >> 1);
    if (u & 1) x = ~x;
    *out = x; return 0;
}

#endif
