# cython: freethreading_compatible = False
"""Python access to the store's hashes, and the keys nats-server derives for them.

HighwayHash-64 (keyed, 32-byte key) checks every message record, meta.sum files and the
index.db trailer; the keys are SHA-256 digests of names (see the *_hash_key functions).
XXH64 is the fast unkeyed hash used for subject interning.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from libc.stdint cimport uint8_t, uint64_t

import hashlib

# Inputs at least this long are hashed with the GIL released; shorter ones are not worth
# the cost of releasing and taking it back.
cdef Py_ssize_t RELEASE_GIL_BYTES = 1 << 16

# A valid pointer for empty inputs (the C functions never read it when n == 0).
cdef uint8_t _empty_input[1]


cdef inline const uint8_t* _buffer_bytes(Py_buffer* view) noexcept nogil:
    if view.len == 0:
        return _empty_input
    return <const uint8_t*>view.buf


cdef int _load_key(object key, uint64_t* words) except -1:
    """Validate a 32-byte key (any bytes-like object) and convert it to 4 words."""
    cdef Py_buffer view
    PyObject_GetBuffer(key, &view, PyBUF_SIMPLE)
    try:
        if view.len != 32:
            raise ValueError(f"HighwayHash key must be 32 bytes, got {view.len}")
        hh_key_from_bytes(<const uint8_t*>view.buf, words)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef uint64_t _highway64(object key, object data) except? 0:
    cdef uint64_t words[4]
    cdef Py_buffer view
    cdef uint64_t result
    _load_key(key, words)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if view.len >= RELEASE_GIL_BYTES:
            with nogil:
                result = hh_hash64(words, _buffer_bytes(&view), <size_t>view.len)
        else:
            result = hh_hash64(words, _buffer_bytes(&view), <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return result


def highway64(key, data) -> int:
    """HighwayHash-64 of `data` (bytes-like) under a 32-byte `key`, as an unsigned int."""
    return _highway64(key, data)


def highway64_digest(key, data) -> bytes:
    """The 8-byte digest nats-server stores: the little-endian encoding of highway64()."""
    return _highway64(key, data).to_bytes(8, "little")


def block_hash_key(str stream, index) -> bytes:
    """Record checksum key of block `index` of `stream`: SHA-256 of "<stream>-<index>"."""
    index = int(index)
    if index < 0:
        raise ValueError(f"block index must not be negative, got {index}")
    return hashlib.sha256(f"{stream}-{index}".encode()).digest()


def meta_hash_key(str name) -> bytes:
    """meta.sum and index.db key of stream `name`: SHA-256 of the name."""
    return hashlib.sha256(name.encode()).digest()


def consumer_meta_hash_key(str stream, str consumer) -> bytes:
    """meta.sum key of a consumer: SHA-256 of "<stream>/<consumer>"."""
    return hashlib.sha256(f"{stream}/{consumer}".encode()).digest()


def meta_sum(key, data) -> bytes:
    """The content of a meta.sum file for meta.inf bytes `data`: lower-case hex of the
    8-byte digest (16 ASCII characters, no newline)."""
    return highway64_digest(key, data).hex().encode("ascii")


def xxh64(data, uint64_t seed=0) -> int:
    """XXH64 of `data` (bytes-like) with `seed`; equals xxhash.xxh64_intdigest."""
    cdef Py_buffer view
    cdef uint64_t result
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if view.len >= RELEASE_GIL_BYTES:
            with nogil:
                result = jss_xxh64(_buffer_bytes(&view), <size_t>view.len, seed)
        else:
            result = jss_xxh64(_buffer_bytes(&view), <size_t>view.len, seed)
    finally:
        PyBuffer_Release(&view)
    return result


def use_simd(bint enable) -> bool:
    """Choose the SSSE3 HighwayHash path (if the CPU has it) or force the portable one.
    Affects this module's hashing only; returns whether SIMD is now in use."""
    return hh_use_simd(enable) != 0


def simd_active() -> bool:
    """Whether this module's HighwayHash runs the SSSE3 path."""
    return hh_simd_active() != 0


cdef class Highway64:
    """Streaming HighwayHash-64: Highway64(key).update(a).update(b).intdigest()
    equals highway64(key, a + b). Reading a digest does not end the stream."""

    def __init__(self, key):
        _load_key(key, self.key)
        hh_init(&self.state, self.key)

    def update(self, data):
        """Add bytes-like `data`; returns self so calls can be chained."""
        cdef Py_buffer view
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if view.len >= RELEASE_GIL_BYTES:
                with nogil:
                    hh_update(&self.state, _buffer_bytes(&view), <size_t>view.len)
            else:
                hh_update(&self.state, _buffer_bytes(&view), <size_t>view.len)
        finally:
            PyBuffer_Release(&view)
        return self

    def reset(self):
        """Start over with the same key."""
        hh_init(&self.state, self.key)

    def intdigest(self) -> int:
        return hh_final64(&self.state)

    def digest(self) -> bytes:
        """8 bytes, little-endian, as nats-server stores it."""
        return hh_final64(&self.state).to_bytes(8, "little")
