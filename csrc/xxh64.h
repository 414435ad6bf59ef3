/*
 * XXH64, the 64-bit xxHash (non-cryptographic, fast), used for hashing subjects when
 * interning them. Same results as the reference xxHash library and the Python
 * `xxhash.xxh64_intdigest`.
 */
#ifndef JSSTORE_XXH64_H
#define JSSTORE_XXH64_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* XXH64 of data[0:n] with the given seed. No allocation; safe without the Python GIL. */
uint64_t jss_xxh64(const void *data, size_t n, uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif /* JSSTORE_XXH64_H */
