/*
 * XXH64, written from the published algorithm description (xxHash specification, v0.1).
 *
 * Inputs of 32 bytes or more run four accumulators over 32-byte stripes, which are then
 * folded together; the rest of the input is consumed 8, then 4, then 1 byte at a time,
 * and a final avalanche mixes the bits. All reads are little-endian.
 */
#include "xxh64.h"
#include "le_bytes.h"

#include <string.h>

#define XXH_PRIME64_1 0x9E3779B185EBCA87ULL
#define XXH_PRIME64_2 0xC2B2AE3D27D4EB4FULL
#define XXH_PRIME64_3 0x165667B19E3779F9ULL
#define XXH_PRIME64_4 0x85EBCA77C2B2AE63ULL
#define XXH_PRIME64_5 0x27D4EB2F165667C5ULL

static inline uint64_t xxh_rotl64(uint64_t value, unsigned bits)
{
    return (value << bits) | (value >> (64 - bits));
}

#define xxh_read64 le_load64
#define xxh_read32 le_load32

/* One accumulator step over an 8-byte lane. */
static inline uint64_t xxh_round(uint64_t accumulator, uint64_t lane)
{
    accumulator += lane * XXH_PRIME64_2;
    accumulator = xxh_rotl64(accumulator, 31);
    return accumulator * XXH_PRIME64_1;
}

/* Fold one of the four stripe accumulators into the result. */
static inline uint64_t xxh_merge_accumulator(uint64_t result, uint64_t accumulator)
{
    result ^= xxh_round(0, accumulator);
    return result * XXH_PRIME64_1 + XXH_PRIME64_4;
}

uint64_t jss_xxh64(const void *data, size_t n, uint64_t seed)
{
    const uint8_t *p = (const uint8_t *)data;
    const uint8_t *const end = p + n;
    uint64_t result;

    if (n >= 32) {
        const uint8_t *const last_stripe = end - 32;
        uint64_t acc1 = seed + XXH_PRIME64_1 + XXH_PRIME64_2;
        uint64_t acc2 = seed + XXH_PRIME64_2;
        uint64_t acc3 = seed;
        uint64_t acc4 = seed - XXH_PRIME64_1;
        do {
            acc1 = xxh_round(acc1, xxh_read64(p));
            acc2 = xxh_round(acc2, xxh_read64(p + 8));
            acc3 = xxh_round(acc3, xxh_read64(p + 16));
            acc4 = xxh_round(acc4, xxh_read64(p + 24));
            p += 32;
        } while (p <= last_stripe);
        result = xxh_rotl64(acc1, 1) + xxh_rotl64(acc2, 7) + xxh_rotl64(acc3, 12) +
                 xxh_rotl64(acc4, 18);
        result = xxh_merge_accumulator(result, acc1);
        result = xxh_merge_accumulator(result, acc2);
        result = xxh_merge_accumulator(result, acc3);
        result = xxh_merge_accumulator(result, acc4);
    } else {
        result = seed + XXH_PRIME64_5;
    }
    result += (uint64_t)n;

    while (end - p >= 8) {
        result ^= xxh_round(0, xxh_read64(p));
        result = xxh_rotl64(result, 27) * XXH_PRIME64_1 + XXH_PRIME64_4;
        p += 8;
    }
    if (end - p >= 4) {
        result ^= (uint64_t)xxh_read32(p) * XXH_PRIME64_1;
        result = xxh_rotl64(result, 23) * XXH_PRIME64_2 + XXH_PRIME64_3;
        p += 4;
    }
    while (p < end) {
        result ^= (uint64_t)(*p) * XXH_PRIME64_5;
        result = xxh_rotl64(result, 11) * XXH_PRIME64_1;
        p++;
    }

    /* Avalanche. */
    result ^= result >> 33;
    result *= XXH_PRIME64_2;
    result ^= result >> 29;
    result *= XXH_PRIME64_3;
    result ^= result >> 32;
    return result;
}
