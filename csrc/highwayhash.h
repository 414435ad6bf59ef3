/*
 * HighwayHash-64: the keyed hash nats-server uses for message record checksums,
 * meta.sum files and index.db trailers (Go package minio/highwayhash, New64 with a
 * 32-byte key; the algorithm is google/highwayhash's, and the outputs are identical).
 *
 * State: four 256-bit vectors (v0, v1, mul0, mul1), each held as four 64-bit lanes.
 * Input is consumed in 32-byte packets read as four little-endian u64 lanes. A final
 * partial packet (1..31 bytes) is folded in with a length-dependent mix, then four
 * permute-and-update rounds produce the 64-bit result.
 *
 * Streaming: hh_update may be called with any split of the input; bytes that do not
 * fill a packet wait in `packet`. hh_final64 does not modify the state, so more data may
 * be added afterwards (like Go's hash.Hash64.Sum64). No function allocates; all are
 * safe to call without the Python GIL.
 *
 * Go's Digest64.Sum() writes the result as 8 little-endian bytes; that is what
 * nats-server stores after each record and what meta.sum holds (in hex).
 */
#ifndef JSSTORE_HIGHWAYHASH_H
#define JSSTORE_HIGHWAYHASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HH_KEY_BYTES 32     /* key length in bytes */
#define HH_PACKET_BYTES 32  /* input is consumed in packets of this size */
#define HH_DIGEST64_BYTES 8 /* size of the stored 64-bit digest */

typedef struct {
    uint64_t v0[4];      /* state vector 0 */
    uint64_t v1[4];      /* state vector 1 */
    uint64_t mul0[4];    /* multiplication accumulator folded into v1 */
    uint64_t mul1[4];    /* multiplication accumulator folded into v0 */
    uint8_t packet[32];  /* buffered input bytes that do not yet fill a packet */
    size_t packet_len;   /* number of valid bytes in packet (0..31) */
} hh_state;

/* Reset the state for a new message. key = the 32-byte key read as 4 little-endian u64. */
void hh_init(hh_state *s, const uint64_t key[4]);

/* Add n bytes of input. Any split of a message gives the same final result. */
void hh_update(hh_state *s, const uint8_t *data, size_t n);

/* The 64-bit hash of everything added since hh_init. The state is left unchanged. */
uint64_t hh_final64(hh_state *s);

/* One-shot hash of data[0:n]; the fast path for whole records. */
uint64_t hh_hash64(const uint64_t key[4], const uint8_t *data, size_t n);

/* Convert a 32-byte key to the 4 little-endian u64 words hh_init takes. */
void hh_key_from_bytes(const uint8_t key32[32], uint64_t key[4]);

/*
 * Implementation choice. On x86-64 an SSSE3 path is used when the CPU has it (checked
 * once, at the first hash); otherwise the portable C path. Both give identical results.
 * hh_use_simd(0) forces the portable path, hh_use_simd(1) restores the SSSE3 path if
 * available; it returns 1 when the SSSE3 path is now in use. The choice is per extension
 * module (each module links its own copy of this file) and is meant for tests and
 * benchmarks: do not switch while another thread is hashing. hh_simd_active() reports it.
 */
int hh_use_simd(int enable);
int hh_simd_active(void);

#ifdef __cplusplus
}
#endif

#endif /* JSSTORE_HIGHWAYHASH_H */
