/* Little-endian loads and stores, for every on-disk integer (records, hashes, state files).
 * memcpy keeps them safe at any alignment; on a big-endian host the bytes are swapped. */
#ifndef JSSTORE_LE_BYTES_H
#define JSSTORE_LE_BYTES_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define JSS_HOST_TO_LE16(v) __builtin_bswap16(v)
#define JSS_HOST_TO_LE32(v) __builtin_bswap32(v)
#define JSS_HOST_TO_LE64(v) __builtin_bswap64(v)
#else
#define JSS_HOST_TO_LE16(v) (v)
#define JSS_HOST_TO_LE32(v) (v)
#define JSS_HOST_TO_LE64(v) (v)
#endif

static inline uint16_t le_load16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return JSS_HOST_TO_LE16(v); }
static inline uint32_t le_load32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return JSS_HOST_TO_LE32(v); }
static inline uint64_t le_load64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return JSS_HOST_TO_LE64(v); }
static inline void le_store16(uint8_t *p, uint16_t v) { v = JSS_HOST_TO_LE16(v); memcpy(p, &v, 2); }
static inline void le_store32(uint8_t *p, uint32_t v) { v = JSS_HOST_TO_LE32(v); memcpy(p, &v, 4); }
static inline void le_store64(uint8_t *p, uint64_t v) { v = JSS_HOST_TO_LE64(v); memcpy(p, &v, 8); }

#endif
