# The hashes of the store, as C declarations other core modules cimport:
#   HighwayHash-64 (csrc/highwayhash.h): record checksums, meta.sum, index.db trailers;
#   XXH64 (csrc/xxh64.h): subject interning.
# setup.py links a module that cimports these functions with their .c files (highwayhash.c,
# xxh64.c).
from libc.stdint cimport uint8_t, uint64_t


cdef extern from "highwayhash.h" nogil:
    ctypedef struct hh_state:
        uint64_t v0[4]          # state vector 0
        uint64_t v1[4]          # state vector 1
        uint64_t mul0[4]        # multiplication accumulator folded into v1
        uint64_t mul1[4]        # multiplication accumulator folded into v0
        uint8_t packet[32]      # input bytes waiting for a full 32-byte packet
        size_t packet_len       # valid bytes in packet (0..31)

    # key: the 32-byte key as 4 little-endian u64 (see hh_key_from_bytes)
    void hh_init(hh_state* s, const uint64_t* key)
    # streaming: any split of the input gives the same result
    void hh_update(hh_state* s, const uint8_t* data, size_t n)
    # hash of everything added since hh_init; leaves the state unchanged
    uint64_t hh_final64(hh_state* s)
    # one-shot hash of data[0:n]
    uint64_t hh_hash64(const uint64_t* key, const uint8_t* data, size_t n)
    # 32 key bytes -> the 4 words hh_init / hh_hash64 take
    void hh_key_from_bytes(const uint8_t* key32, uint64_t* key)
    # 0: force the portable C path; 1: SSSE3 path if the CPU has it. Returns 1 if SIMD is on.
    int hh_use_simd(int enable)
    int hh_simd_active()


cdef extern from "xxh64.h" nogil:
    uint64_t jss_xxh64(const void* data, size_t n, uint64_t seed)


cdef class Highway64:
    # Streaming HighwayHash-64 for Python callers (hashing a file or record in pieces).
    cdef uint64_t key[4]        # the key as 4 little-endian u64, kept for reset()
    cdef hh_state state         # running state: everything passed to update() so far
