/*
 * HighwayHash-64. See highwayhash.h for the API and the format notes.
 *
 * One packet update (all operations per 64-bit lane i = 0..3, arithmetic mod 2^64):
 *   v1   += mul0 + packet
 *   mul0 ^= low32(v1) * high32(v0)
 *   v0   += mul1
 *   mul1 ^= low32(v0) * high32(v1)
 *   v0   += zipper(v1)      (a fixed byte shuffle of each lane pair (0,1) and (2,3))
 *   v1   += zipper(v0)
 *
 * Two implementations of the same mixing: portable C (always compiled, the reference)
 * and, on x86-64 with GCC or Clang, an SSSE3 one (the zipper is a single byte shuffle
 * there, about five times faster on short records). The SSSE3 code is compiled with a
 * function target attribute, so no build flag is needed; it is chosen at run time when
 * the CPU reports SSSE3, and hh_use_simd() can force the portable path (tests do, to
 * check both against the published vectors).
 */
#include "highwayhash.h"
#include "le_bytes.h"

#include <string.h>

/* Packet mixing must be inlined into the loops: a call per packet costs more than the mix. */
#if defined(__GNUC__) || defined(__clang__)
#define HH_INLINE static inline __attribute__((always_inline))
#else
#define HH_INLINE static inline
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HH_HAVE_SSSE3 1
#include <cpuid.h>
#include <tmmintrin.h>
#else
#define HH_HAVE_SSSE3 0
#endif

/* Initial values of mul0 and mul1 (the key is mixed into v0 and v1). */
static const uint64_t hh_init_mul0[4] = {
    0xdbe6d5d5fe4cce2fULL, 0xa4093822299f31d0ULL, 0x13198a2e03707344ULL, 0x243f6a8885a308d3ULL};
static const uint64_t hh_init_mul1[4] = {
    0x3bd39e10cb0ef593ULL, 0xc0acf169b5f18a8cULL, 0xbe5466cf34e90c6cULL, 0x452821e638d01377ULL};

/* -1: CPU not probed yet; 0: portable path; 1: SSSE3 path. */
static int hh_simd_mode = -1;

#define hh_load_le64 le_load64

/* Exchange the two 32-bit halves of a lane. */
HH_INLINE uint64_t hh_swap_halves(uint64_t lane)
{
    return (lane >> 32) | (lane << 32);
}

/* Rotate each 32-bit half of a lane left by count (1..31). */
HH_INLINE uint64_t hh_rotate_halves(uint64_t lane, unsigned count)
{
    uint32_t low = (uint32_t)lane;
    uint32_t high = (uint32_t)(lane >> 32);
    low = (low << count) | (low >> (32 - count));
    high = (high << count) | (high >> (32 - count));
    return ((uint64_t)high << 32) | low;
}

/*
 * The packet that carries a final partial input of length 1..31: the whole 4-byte
 * groups first, then either the last 4 input bytes at offset 28 (length >= 16) or up to
 * 3 leftover bytes as first/middle/last at offset 16. Unused bytes are zero.
 */
HH_INLINE void hh_remainder_packet(uint8_t packet[HH_PACKET_BYTES], const uint8_t *tail,
                                   size_t length)
{
    const size_t leftover = length & 3;
    const size_t whole_groups = length & ~(size_t)3;
    memset(packet, 0, HH_PACKET_BYTES);
    memcpy(packet, tail, whole_groups);
    if (length & 16) {
        memcpy(packet + 28, tail + length - 4, 4);
    } else if (leftover) {
        packet[16] = tail[whole_groups];
        packet[17] = tail[whole_groups + (leftover >> 1)];
        packet[18] = tail[length - 1];
    }
}

/* ---------------------------------------------------------------- portable path */

/*
 * Byte shuffle of the 16 bytes (even_lane, odd_lane), added into two destination lanes.
 * Destination byte k of add_even takes source byte {3, 12, 2, 5, 14, 1, 15, 0}[k],
 * destination byte k of add_odd takes {11, 4, 10, 13, 9, 6, 8, 7}[k], where source
 * bytes 0..7 are even_lane and 8..15 are odd_lane (little-endian byte numbering).
 * The expressions below group the bytes that move by the same distance.
 */
HH_INLINE void hh_zipper_add(uint64_t even_lane, uint64_t odd_lane,
                             uint64_t *add_even, uint64_t *add_odd)
{
    *add_even += (((even_lane & 0x00000000ff000000ULL) |
                   (odd_lane & 0x000000ff00000000ULL)) >> 24) |
                 (((even_lane & 0x0000ff0000000000ULL) |
                   (odd_lane & 0x00ff000000000000ULL)) >> 16) |
                 (even_lane & 0x0000000000ff0000ULL) |
                 ((even_lane & 0x000000000000ff00ULL) << 32) |
                 ((odd_lane & 0xff00000000000000ULL) >> 8) |
                 (even_lane << 56);
    *add_odd += (((odd_lane & 0x00000000ff000000ULL) |
                  (even_lane & 0x000000ff00000000ULL)) >> 24) |
                ((odd_lane & 0x0000ff0000000000ULL) >> 16) |
                (odd_lane & 0x0000000000ff0000ULL) |
                ((odd_lane & 0x000000000000ff00ULL) << 24) |
                ((even_lane & 0x00ff000000000000ULL) >> 8) |
                ((odd_lane & 0x00000000000000ffULL) << 48) |
                (even_lane & 0xff00000000000000ULL);
}

/* Mix one packet, given as four lanes, into the state. */
HH_INLINE void hh_mix_lanes(hh_state *s, const uint64_t lanes[4])
{
    int i;
    for (i = 0; i < 4; i++) {
        s->v1[i] += s->mul0[i] + lanes[i];
        s->mul0[i] ^= (s->v1[i] & 0xffffffffULL) * (s->v0[i] >> 32);
        s->v0[i] += s->mul1[i];
        s->mul1[i] ^= (s->v0[i] & 0xffffffffULL) * (s->v1[i] >> 32);
    }
    hh_zipper_add(s->v1[0], s->v1[1], &s->v0[0], &s->v0[1]);
    hh_zipper_add(s->v1[2], s->v1[3], &s->v0[2], &s->v0[3]);
    hh_zipper_add(s->v0[0], s->v0[1], &s->v1[0], &s->v1[1]);
    hh_zipper_add(s->v0[2], s->v0[3], &s->v1[2], &s->v1[3]);
}

/* Mix whole 32-byte packets read from memory. */
HH_INLINE void hh_mix_packets(hh_state *s, const uint8_t *data, size_t packets)
{
    uint64_t lanes[4];
    while (packets-- > 0) {
        lanes[0] = hh_load_le64(data);
        lanes[1] = hh_load_le64(data + 8);
        lanes[2] = hh_load_le64(data + 16);
        lanes[3] = hh_load_le64(data + 24);
        hh_mix_lanes(s, lanes);
        data += HH_PACKET_BYTES;
    }
}

/* Fold in a final partial packet of length 1..31 (length also enters v0 and v1). */
HH_INLINE void hh_mix_remainder(hh_state *s, const uint8_t *tail, size_t length)
{
    uint8_t packet[HH_PACKET_BYTES];
    const uint64_t length_word = ((uint64_t)length << 32) + length;
    int i;
    for (i = 0; i < 4; i++) {
        s->v0[i] += length_word;
        s->v1[i] = hh_rotate_halves(s->v1[i], (unsigned)length);
    }
    hh_remainder_packet(packet, tail, length);
    hh_mix_packets(s, packet, 1);
}

/* Four permute-and-mix rounds, then the 64-bit sum of lane 0 of every vector. */
HH_INLINE uint64_t hh_finish64(hh_state *s)
{
    uint64_t lanes[4];
    int round;
    for (round = 0; round < 4; round++) {
        lanes[0] = hh_swap_halves(s->v0[2]);
        lanes[1] = hh_swap_halves(s->v0[3]);
        lanes[2] = hh_swap_halves(s->v0[0]);
        lanes[3] = hh_swap_halves(s->v0[1]);
        hh_mix_lanes(s, lanes);
    }
    return s->v0[0] + s->v1[0] + s->mul0[0] + s->mul1[0];
}

/* ---------------------------------------------------------------- SSSE3 path */
#if HH_HAVE_SSSE3

#define HH_SSSE3 static inline __attribute__((target("ssse3"), always_inline))

/* The state in eight registers: each vector as lanes (0,1) and lanes (2,3). */
typedef struct {
    __m128i v0_lo, v0_hi, v1_lo, v1_hi, mul0_lo, mul0_hi, mul1_lo, mul1_hi;
} hh_sse_state;

HH_SSSE3 __m128i hh_sse_load(const void *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

HH_SSSE3 void hh_sse_from_state(hh_sse_state *r, const hh_state *s)
{
    r->v0_lo = hh_sse_load(s->v0);
    r->v0_hi = hh_sse_load(s->v0 + 2);
    r->v1_lo = hh_sse_load(s->v1);
    r->v1_hi = hh_sse_load(s->v1 + 2);
    r->mul0_lo = hh_sse_load(s->mul0);
    r->mul0_hi = hh_sse_load(s->mul0 + 2);
    r->mul1_lo = hh_sse_load(s->mul1);
    r->mul1_hi = hh_sse_load(s->mul1 + 2);
}

HH_SSSE3 void hh_sse_to_state(hh_state *s, const hh_sse_state *r)
{
    _mm_storeu_si128((__m128i *)s->v0, r->v0_lo);
    _mm_storeu_si128((__m128i *)(s->v0 + 2), r->v0_hi);
    _mm_storeu_si128((__m128i *)s->v1, r->v1_lo);
    _mm_storeu_si128((__m128i *)(s->v1 + 2), r->v1_hi);
    _mm_storeu_si128((__m128i *)s->mul0, r->mul0_lo);
    _mm_storeu_si128((__m128i *)(s->mul0 + 2), r->mul0_hi);
    _mm_storeu_si128((__m128i *)s->mul1, r->mul1_lo);
    _mm_storeu_si128((__m128i *)(s->mul1 + 2), r->mul1_hi);
}

/* The zipper shuffle of one lane pair (byte orders as in hh_zipper_add). */
HH_SSSE3 __m128i hh_sse_zipper(__m128i pair)
{
    const __m128i order = _mm_set_epi8(7, 8, 6, 9, 13, 10, 4, 11, 0, 15, 1, 14, 5, 2, 12, 3);
    return _mm_shuffle_epi8(pair, order);
}

/* _mm_mul_epu32 multiplies the low 32 bits of each 64-bit lane. */
HH_SSSE3 void hh_sse_mix(hh_sse_state *r, __m128i packet_lo, __m128i packet_hi)
{
    r->v1_lo = _mm_add_epi64(r->v1_lo, _mm_add_epi64(r->mul0_lo, packet_lo));
    r->v1_hi = _mm_add_epi64(r->v1_hi, _mm_add_epi64(r->mul0_hi, packet_hi));
    r->mul0_lo = _mm_xor_si128(r->mul0_lo, _mm_mul_epu32(r->v1_lo, _mm_srli_epi64(r->v0_lo, 32)));
    r->mul0_hi = _mm_xor_si128(r->mul0_hi, _mm_mul_epu32(r->v1_hi, _mm_srli_epi64(r->v0_hi, 32)));
    r->v0_lo = _mm_add_epi64(r->v0_lo, r->mul1_lo);
    r->v0_hi = _mm_add_epi64(r->v0_hi, r->mul1_hi);
    r->mul1_lo = _mm_xor_si128(r->mul1_lo, _mm_mul_epu32(r->v0_lo, _mm_srli_epi64(r->v1_lo, 32)));
    r->mul1_hi = _mm_xor_si128(r->mul1_hi, _mm_mul_epu32(r->v0_hi, _mm_srli_epi64(r->v1_hi, 32)));
    r->v0_lo = _mm_add_epi64(r->v0_lo, hh_sse_zipper(r->v1_lo));
    r->v0_hi = _mm_add_epi64(r->v0_hi, hh_sse_zipper(r->v1_hi));
    r->v1_lo = _mm_add_epi64(r->v1_lo, hh_sse_zipper(r->v0_lo));
    r->v1_hi = _mm_add_epi64(r->v1_hi, hh_sse_zipper(r->v0_hi));
}

HH_SSSE3 void hh_sse_mix_packets(hh_sse_state *r, const uint8_t *data, size_t packets)
{
    while (packets-- > 0) {
        hh_sse_mix(r, hh_sse_load(data), hh_sse_load(data + 16));
        data += HH_PACKET_BYTES;
    }
}

/* Final partial packet, then the four permute rounds (shuffle 0xB1 swaps lane halves). */
HH_SSSE3 uint64_t hh_sse_finish64(hh_sse_state *r, const uint8_t *tail, size_t length)
{
    int round;
    if (length > 0) {
        uint8_t packet[HH_PACKET_BYTES];
        const __m128i length_word = _mm_set1_epi64x((long long)(((uint64_t)length << 32) + length));
        const __m128i left = _mm_cvtsi32_si128((int)length);
        const __m128i right = _mm_cvtsi32_si128(32 - (int)length);
        r->v0_lo = _mm_add_epi64(r->v0_lo, length_word);
        r->v0_hi = _mm_add_epi64(r->v0_hi, length_word);
        r->v1_lo = _mm_or_si128(_mm_sll_epi32(r->v1_lo, left), _mm_srl_epi32(r->v1_lo, right));
        r->v1_hi = _mm_or_si128(_mm_sll_epi32(r->v1_hi, left), _mm_srl_epi32(r->v1_hi, right));
        hh_remainder_packet(packet, tail, length);
        hh_sse_mix_packets(r, packet, 1);
    }
    for (round = 0; round < 4; round++)
        hh_sse_mix(r, _mm_shuffle_epi32(r->v0_hi, 0xB1), _mm_shuffle_epi32(r->v0_lo, 0xB1));
    return (uint64_t)_mm_cvtsi128_si64(_mm_add_epi64(_mm_add_epi64(r->v0_lo, r->v1_lo),
                                                     _mm_add_epi64(r->mul0_lo, r->mul1_lo)));
}

__attribute__((target("ssse3"))) static void
hh_sse_update_packets(hh_state *s, const uint8_t *data, size_t packets)
{
    hh_sse_state r;
    hh_sse_from_state(&r, s);
    hh_sse_mix_packets(&r, data, packets);
    hh_sse_to_state(s, &r);
}

__attribute__((target("ssse3"))) static uint64_t hh_sse_final64(const hh_state *s)
{
    hh_sse_state r;
    hh_sse_from_state(&r, s);
    return hh_sse_finish64(&r, s->packet, s->packet_len);
}

__attribute__((target("ssse3"))) static uint64_t
hh_sse_hash64(const uint64_t key[4], const uint8_t *data, size_t n)
{
    hh_sse_state r;
    const __m128i key_lo = hh_sse_load(key);
    const __m128i key_hi = hh_sse_load(key + 2);
    r.mul0_lo = hh_sse_load(hh_init_mul0);
    r.mul0_hi = hh_sse_load(hh_init_mul0 + 2);
    r.mul1_lo = hh_sse_load(hh_init_mul1);
    r.mul1_hi = hh_sse_load(hh_init_mul1 + 2);
    r.v0_lo = _mm_xor_si128(r.mul0_lo, key_lo);
    r.v0_hi = _mm_xor_si128(r.mul0_hi, key_hi);
    r.v1_lo = _mm_xor_si128(r.mul1_lo, _mm_shuffle_epi32(key_lo, 0xB1));
    r.v1_hi = _mm_xor_si128(r.mul1_hi, _mm_shuffle_epi32(key_hi, 0xB1));
    hh_sse_mix_packets(&r, data, n / HH_PACKET_BYTES);
    return hh_sse_finish64(&r, data + (n & ~(size_t)(HH_PACKET_BYTES - 1)),
                           n & (HH_PACKET_BYTES - 1));
}

static int hh_cpu_has_ssse3(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    return (ecx & bit_SSSE3) != 0;
}

#endif /* HH_HAVE_SSSE3 */

/* ---------------------------------------------------------------- dispatch and API */

static inline int hh_simd_on(void)
{
#if HH_HAVE_SSSE3
    if (hh_simd_mode < 0)
        hh_simd_mode = hh_cpu_has_ssse3();
    return hh_simd_mode;
#else
    return 0;
#endif
}

int hh_use_simd(int enable)
{
#if HH_HAVE_SSSE3
    hh_simd_mode = (enable && hh_cpu_has_ssse3()) ? 1 : 0;
    return hh_simd_mode;
#else
    (void)enable;
    hh_simd_mode = 0;
    return 0;
#endif
}

int hh_simd_active(void)
{
    return hh_simd_on();
}

void hh_key_from_bytes(const uint8_t key32[32], uint64_t key[4])
{
    key[0] = hh_load_le64(key32);
    key[1] = hh_load_le64(key32 + 8);
    key[2] = hh_load_le64(key32 + 16);
    key[3] = hh_load_le64(key32 + 24);
}

void hh_init(hh_state *s, const uint64_t key[4])
{
    int i;
    for (i = 0; i < 4; i++) {
        s->mul0[i] = hh_init_mul0[i];
        s->mul1[i] = hh_init_mul1[i];
        s->v0[i] = hh_init_mul0[i] ^ key[i];
        s->v1[i] = hh_init_mul1[i] ^ hh_swap_halves(key[i]);
    }
    s->packet_len = 0;
}

static inline void hh_update_packets(hh_state *s, const uint8_t *data, size_t packets)
{
#if HH_HAVE_SSSE3
    if (hh_simd_on()) {
        hh_sse_update_packets(s, data, packets);
        return;
    }
#endif
    hh_mix_packets(s, data, packets);
}

void hh_update(hh_state *s, const uint8_t *data, size_t n)
{
    size_t packets;
    if (s->packet_len > 0) {
        size_t room = HH_PACKET_BYTES - s->packet_len;
        if (n < room) {
            memcpy(s->packet + s->packet_len, data, n);
            s->packet_len += n;
            return;
        }
        memcpy(s->packet + s->packet_len, data, room);
        hh_update_packets(s, s->packet, 1);
        s->packet_len = 0;
        data += room;
        n -= room;
    }
    packets = n / HH_PACKET_BYTES;
    if (packets > 0) {
        hh_update_packets(s, data, packets);
        data += packets * HH_PACKET_BYTES;
        n -= packets * HH_PACKET_BYTES;
    }
    if (n > 0) {
        memcpy(s->packet, data, n);
        s->packet_len = n;
    }
}

uint64_t hh_final64(hh_state *s)
{
    hh_state work;
#if HH_HAVE_SSSE3
    if (hh_simd_on())
        return hh_sse_final64(s);
#endif
    memcpy(&work, s, sizeof(work));
    if (work.packet_len > 0)
        hh_mix_remainder(&work, s->packet, s->packet_len);
    return hh_finish64(&work);
}

uint64_t hh_hash64(const uint64_t key[4], const uint8_t *data, size_t n)
{
    hh_state work;
    size_t packets = n / HH_PACKET_BYTES;
#if HH_HAVE_SSSE3
    if (hh_simd_on())
        return hh_sse_hash64(key, data, n);
#endif
    hh_init(&work, key);
    hh_mix_packets(&work, data, packets);
    data += packets * HH_PACKET_BYTES;
    n -= packets * HH_PACKET_BYTES;
    if (n > 0)
        hh_mix_remainder(&work, data, n);
    return hh_finish64(&work);
}
