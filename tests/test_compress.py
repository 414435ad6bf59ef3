"""Block compression: the "cmp" block-file wrapper, the S2/Snappy codec in C, and LZ4.

Streams are built byte by byte here (with a CRC-32C written in Python) so the decoder is checked
against the format, not against its own encoder; python-snappy checks the encoder's framing;
and the nats-server tests decode blocks the real server compressed and make it read ours.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import random
import struct

import pytest
import snappy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from jsstore._core.storage import compress
from jsstore._core.storage.compress import (
    ALG_LZ4,
    ALG_NONE,
    ALG_S2,
    block_alg,
    compress_block,
    decompress_block,
    decompress_block_into,
    plain_size,
    s2_decode_stream,
    s2_encode_stream,
)
from jsstore.errors import BadMsg

# ---------------------------------------------------------------------------------------------
# Format helpers written from the specification, independent of the code under test.


def crc32c_reference(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c_reference(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def chunk(chunk_type: int, body: bytes) -> bytes:
    return bytes([chunk_type]) + len(body).to_bytes(3, "little") + body


def identifier(text: bytes = b"S2sTwO") -> bytes:
    return chunk(0xFF, text)


def compressed_chunk(block: bytes, decoded: bytes) -> bytes:
    return chunk(0x00, struct.pack("<I", masked_crc(decoded)) + block)


def uncompressed_chunk(data: bytes) -> bytes:
    return chunk(0x01, struct.pack("<I", masked_crc(data)) + data)


def block_file(stream: bytes, body_len: int, checksum: bytes = b"CHECKSUM", alg: int = 1) -> bytes:
    return b"cmp" + bytes([alg]) + uvarint(body_len + len(checksum)) + stream + checksum


# Block elements (Snappy format description + the S2 repeat extension).
def literal(data: bytes) -> bytes:
    n = len(data) - 1
    if n < 60:
        return bytes([n << 2]) + data
    size = (n.bit_length() + 7) // 8
    return bytes([(59 + size) << 2]) + n.to_bytes(size, "little") + data


def copy1(offset: int, length: int) -> bytes:
    assert 4 <= length <= 11 and 0 < offset < 2048
    return bytes([0x01 | ((length - 4) << 2) | ((offset >> 8) << 5), offset & 0xFF])


def copy2(offset: int, length: int) -> bytes:
    assert 1 <= length <= 64
    return bytes([0x02 | ((length - 1) << 2)]) + struct.pack("<H", offset)


def copy4(offset: int, length: int) -> bytes:
    assert 1 <= length <= 64
    return bytes([0x03 | ((length - 1) << 2)]) + struct.pack("<I", offset)


def repeat(length: int) -> bytes:
    """S2 repeat of the previous offset: copy1 with offset 0; length codes 0-4 are lengths 4-8,
    5 is 8 + 1 byte, 6 is 260 + 2 bytes, 7 is 65540 + 3 bytes (little-endian)."""
    if length <= 8:
        return bytes([0x01 | ((length - 4) << 2), 0])
    if length < 264:
        return bytes([0x01 | (5 << 2), 0, length - 8])
    if length < 65540:
        return bytes([0x01 | (6 << 2), 0]) + (length - 260).to_bytes(2, "little")
    return bytes([0x01 | (7 << 2), 0]) + (length - 65540).to_bytes(3, "little")


def expect_copy(out: bytearray, offset: int, length: int) -> None:
    """What a copy means: byte by byte from `offset` back (so overlaps repeat)."""
    for _ in range(length):
        out.append(out[-offset])


def tag_kinds(block: bytes) -> dict:
    """Count the element kinds in a block (to see which encodings a real file used)."""
    pos = 0
    while block[pos] & 0x80:
        pos += 1
    pos += 1
    kinds: dict = {}
    while pos < len(block):
        tag = block[pos]
        kind = tag & 3
        if kind == 0:
            n = tag >> 2
            if n >= 60:
                size = n - 59
                n = int.from_bytes(block[pos + 1 : pos + 1 + size], "little")
                pos += size
            pos += 1 + n + 1
            name = "literal"
        elif kind == 1:
            offset = ((tag & 0xE0) << 3) | block[pos + 1]
            code = (tag >> 2) & 7
            pos += 2
            if offset == 0:
                pos += {5: 1, 6: 2, 7: 3}.get(code, 0)
                name = "repeat"
            else:
                name = "copy1"
        elif kind == 2:
            pos += 3
            name = "copy2"
        else:
            pos += 5
            name = "copy4"
        kinds[name] = kinds.get(name, 0) + 1
    return kinds


def stream_chunks(stream: bytes):
    pos = 0
    while pos < len(stream):
        length = int.from_bytes(stream[pos + 1 : pos + 4], "little")
        yield stream[pos], stream[pos + 4 : pos + 4 + length]
        pos += 4 + length


def split_block_file(data: bytes):
    """(alg, original size, stream, checksum) of a compressed file, by hand."""
    assert data[:3] == b"cmp"
    pos, value, shift = 4, 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    return data[3], value, data[pos:-8], data[-8:]


def sample_block(size: int, seed: int = 1) -> bytes:
    """Block-like bytes: repetitive JSON-ish records with some randomness, then 8 bytes."""
    rng = random.Random(seed)
    parts = []
    total = 0
    while total < size:
        part = b'{"seq":%d,"subject":"orders.%d","v":"%s"}' % (
            total, rng.randrange(20), rng.randbytes(rng.randrange(0, 12)).hex().encode())
        parts.append(part)
        total += len(part)
    return b"".join(parts)[:size] + rng.randbytes(8)


# ---------------------------------------------------------------------------------------------
# CRC-32C


def test_crc32c_matches_the_reference_on_both_code_paths():
    assert compress._crc32c(b"123456789") == 0xE3069283
    assert compress._crc32c(b"123456789", True) == 0xE3069283
    rng = random.Random(7)
    data = rng.randbytes(300)
    for start in range(0, 9):
        for length in (0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 200):
            piece = data[start : start + length]
            want = crc32c_reference(piece)
            assert compress._crc32c(piece) == want
            assert compress._crc32c(piece, True) == want


# ---------------------------------------------------------------------------------------------
# Round trips


compressible = st.lists(
    st.tuples(st.binary(min_size=1, max_size=40), st.integers(min_value=1, max_value=60)),
    min_size=0, max_size=40,
).map(lambda parts: b"".join(piece * times for piece, times in parts))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(st.binary(max_size=3000), compressible), checksum=st.binary(min_size=8, max_size=8),
       alg=st.sampled_from([ALG_S2, ALG_LZ4]))
def test_round_trip(body, checksum, alg):
    plain = body + checksum
    assume(not plain.startswith(b"cmp"))  # real blocks start with a record length
    packed = compress_block(plain, alg)
    assert packed[:3] == b"cmp" and packed[3] == alg
    assert packed[-8:] == checksum
    assert split_block_file(packed)[1] == len(plain)
    assert block_alg(packed) == alg
    assert decompress_block(packed) == plain
    assert decompress_block(bytearray(packed)) == plain
    assert decompress_block(memoryview(packed)) == plain
    # the same into a caller's buffer
    assert plain_size(packed) == len(plain) == plain_size(plain)
    out = bytearray(len(plain))
    decompress_block_into(packed, out)
    assert out == plain
    out = bytearray(len(plain))
    decompress_block_into(plain, out)
    assert out == plain


def test_decompress_into_checks_the_destination_size():
    plain = sample_block(5000)
    packed = compress_block(plain, ALG_S2)
    for wrong in (len(plain) - 1, len(plain) + 1, 0):
        with pytest.raises(ValueError, match=f"destination of {wrong} bytes for a {len(plain)}-byte block"):
            decompress_block_into(packed, bytearray(wrong))
    with pytest.raises(BufferError):
        decompress_block_into(packed, bytes(len(plain)))  # not writable
    metadata_only = b"cmp\x00" + uvarint(20) + b"y" * 20
    assert plain_size(metadata_only) == 20
    out = bytearray(20)
    decompress_block_into(metadata_only, out)
    assert out == b"y" * 20
    with pytest.raises(BadMsg, match="stream decodes to 5 bytes, header says 6"):
        plain_size(block_file(identifier() + uncompressed_chunk(b"hello"), 6))


@pytest.mark.parametrize("alg", [ALG_S2, ALG_LZ4])
@pytest.mark.parametrize("size", [8, 9, 100, 65536 + 8, 65536 * 3 + 1000, 3 * 1024 * 1024])
def test_round_trip_multi_chunk(alg, size):
    plain = sample_block(size - 8) if size > 8 else b"12345678"
    packed = compress_block(plain, alg)
    assert decompress_block(packed) == plain
    if size > 1000:
        assert len(packed) < len(plain) // 2


def test_incompressible_data_is_stored_in_uncompressed_chunks():
    plain = random.Random(3).randbytes(200_000)
    packed = compress_block(plain, ALG_S2)
    _, _, stream, _ = split_block_file(packed)
    types = [chunk_type for chunk_type, _ in stream_chunks(stream)]
    assert types == [0xFF, 0x01, 0x01, 0x01, 0x01]
    assert decompress_block(packed) == plain
    assert len(packed) < len(plain) + 100


def test_encoder_writes_snappy_framing_that_python_snappy_reads():
    plain = sample_block(500_000, seed=5)
    packed = compress_block(plain, ALG_S2)
    _, original_size, stream, checksum = split_block_file(packed)
    assert original_size == len(plain) and checksum == plain[-8:]
    assert stream[:10] == b"\xff\x06\x00\x00sNaPpY"
    for chunk_type, body in stream_chunks(stream):
        assert chunk_type in (0xFF, 0x00, 0x01)
        if chunk_type == 0x00:
            assert len(snappy.uncompress(body[4:])) <= 65536
    assert snappy.StreamDecompressor().decompress(stream) == plain[:-8]
    assert snappy.StreamDecompressor().decompress(s2_encode_stream(b"abc" * 50000)) == b"abc" * 50000


def test_decoder_reads_python_snappy_output():
    data = sample_block(300_000, seed=9)
    assert s2_decode_stream(snappy.StreamCompressor().add_chunk(data)) == data
    block = snappy.compress(data[:60000])  # a raw Snappy block, framed by hand
    stream = identifier(b"sNaPpY") + compressed_chunk(block, data[:60000])
    assert s2_decode_stream(stream) == data[:60000]


def test_compress_block_conversions():
    plain = sample_block(10_000)
    s2 = compress_block(plain, ALG_S2)
    lz4 = compress_block(s2, ALG_LZ4)
    assert block_alg(lz4) == ALG_LZ4 and decompress_block(lz4) == plain
    assert compress_block(lz4, ALG_S2) == s2
    assert compress_block(s2, ALG_S2) == s2
    assert compress_block(s2, ALG_NONE) == plain
    assert compress_block(plain, ALG_NONE) == plain
    assert block_alg(plain) == ALG_NONE
    buffer = bytearray(plain)
    assert decompress_block(buffer) is buffer
    with pytest.raises(ValueError):
        compress_block(plain, 7)
    with pytest.raises(BadMsg, match="shorter than its 8-byte checksum"):
        compress_block(b"1234567", ALG_S2)


def test_empty_streams():
    assert s2_decode_stream(b"") == b""
    assert s2_decode_stream(identifier()) == b""
    assert s2_encode_stream(b"") == b"\xff\x06\x00\x00sNaPpY"
    assert decompress_block(block_file(b"", 0)) == b"CHECKSUM"


# ---------------------------------------------------------------------------------------------
# Hand-made streams


def test_hand_made_s2_block_with_every_element_kind():
    out = bytearray()
    block = bytearray()

    def add_literal(data):
        block.extend(literal(data))
        out.extend(data)

    def add(encoded, offset, length):
        block.extend(encoded)
        expect_copy(out, offset, length)

    add_literal(b"abcdefgh")
    add(copy1(8, 4), 8, 4)                 # abcd
    add(repeat(4), 8, 4)                   # repeat offset 8: efgh
    add(repeat(8), 8, 8)                   # length code 4
    add(repeat(5), 8, 5)                   # length code 1
    add(copy1(3, 11), 3, 11)               # overlapping copy
    add(repeat(40), 3, 40)                 # length code 5: 8 + 1 byte
    add_literal(bytes(range(100)))         # 1-byte literal length (tag 60)
    add(copy2(100, 64), 100, 64)
    add(copy2(1, 30), 1, 30)               # run of one byte
    add(repeat(300), 1, 300)               # length code 6: 260 + 2 bytes
    add_literal(bytes(range(256)) * 2)     # 2-byte literal length (tag 61)
    add(copy4(700, 50), 700, 50)
    add(repeat(70000), 700, 70000)         # length code 7: 65540 + 3 bytes
    add(repeat(6), 700, 6)                 # length codes 0..4 -> 4..8
    add(repeat(7), 700, 7)
    add(copy2(4464, 9), 4464, 9)           # 2-byte offset above copy1's 2047
    add(copy1(1500, 7), 1500, 7)           # copy1 offset using the tag's top 3 bits
    add_literal(bytes(range(7)) * 10000)   # 3-byte literal length (tag 62)
    block.extend(bytes([62 << 2]) + (4).to_bytes(3, "little") + b"01234")  # longer than needed
    block.extend(bytes([63 << 2]) + (9).to_bytes(4, "little") + b"0123456789")
    out.extend(b"01234" + b"0123456789")
    add(copy4(70_000, 33), 70_000, 33)     # 4-byte offset > 64 KiB
    add(repeat(4), 70_000, 4)              # repeat after a 4-byte copy
    data = bytes(out)
    encoded = uvarint(len(data)) + bytes(block)
    assert tag_kinds(encoded)["repeat"] == 9
    stream = identifier(b"S2sTwO") + compressed_chunk(encoded, data)
    assert s2_decode_stream(stream) == data
    assert decompress_block(block_file(stream, len(data))) == data + b"CHECKSUM"


def test_hand_made_framing_features():
    parts = [b"first part " * 10, b"second, stored ", b"third " * 100, b"fourth"]
    block3 = uvarint(600) + literal(b"third ") + copy2(6, 64) * 9 + copy2(6, 18)
    stream = b"".join([
        identifier(b"sNaPpY"),
        uncompressed_chunk(parts[0]),
        chunk(0xFE, b"\x00" * 17),                       # padding
        uncompressed_chunk(parts[1]),
        chunk(0x80, b"skippable"),                        # reserved skippable
        chunk(0x99, b"\x00" * 40),                        # S2 seek index
        identifier(b"S2sTwO"),                            # a concatenated stream
        compressed_chunk(block3, parts[2]),
        chunk(0xFD, b""),
        compressed_chunk(uvarint(6) + literal(b"fourth"), parts[3]),
    ])
    assert s2_decode_stream(stream) == b"".join(parts)


def test_chunk_size_limits_depend_on_the_identifier():
    data = bytes(range(256)) * 257                     # 65792 bytes: over Snappy's 64 KiB
    block = uvarint(len(data)) + literal(data[:256]) + copy4(256, 64) * 1024
    assert s2_decode_stream(identifier(b"S2sTwO") + compressed_chunk(block, data)) == data
    with pytest.raises(BadMsg, match="maximum block size at byte 10"):
        s2_decode_stream(identifier(b"sNaPpY") + compressed_chunk(block, data))
    with pytest.raises(BadMsg, match="maximum block size"):
        s2_decode_stream(identifier(b"sNaPpY") + uncompressed_chunk(data))


# ---------------------------------------------------------------------------------------------
# Corrupt input: always a clean BadMsg that says what and where


def claimed_size(stream: bytes) -> int:
    """What the chunks of a (possibly corrupt) stream say they decode to; 0 if unreadable."""
    total, pos = 0, 0
    while pos + 4 <= len(stream):
        chunk_type = stream[pos]
        length = int.from_bytes(stream[pos + 1 : pos + 4], "little")
        body = stream[pos + 4 : pos + 4 + length]
        if chunk_type == 0x00 and len(body) > 4:
            value, shift = 0, 0
            for byte in body[4:14]:
                value |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
            total += value
        elif chunk_type == 0x01 and len(body) >= 4:
            total += len(body) - 4
        pos += 4 + length
    return total if total < 1 << 29 else 0


@pytest.mark.parametrize("stream, problem, position", [
    (chunk(0x00, b"\x00" * 8), "stream does not start with a stream identifier chunk", 0),
    (identifier(b"sNaPpX"), 'stream identifier is not "sNaPpY" or "S2sTwO"', 0),
    (chunk(0xFF, b"sNaPpY!"), 'stream identifier is not "sNaPpY" or "S2sTwO"', 0),
    (identifier() + chunk(0x02, b""), "reserved unskippable chunk type", 10),
    (identifier() + chunk(0x00, b"\x01\x02\x03"), "data chunk shorter than its 4-byte checksum", 10),
    (identifier() + chunk(0x01, b""), "data chunk shorter than its 4-byte checksum", 10),
    (identifier() + b"\x00\x05", "data ends inside a chunk or element", 10),
    (identifier() + chunk(0x00, b"\x00" * 4 + b"\x80\x80"), "invalid block length preamble", 18),
    (identifier() + chunk(0x00, b"\x00" * 4 + b"\xff\xff\xff\xff\x7f"), "invalid block length preamble", 18),
    (identifier() + compressed_chunk(b"\x04" + repeat(4), b"????"),
     "copy offset is zero or before the start of the block", 19),
    (identifier() + compressed_chunk(b"\x06" + literal(b"ab") + copy1(3, 4), b"??????"),
     "copy offset is zero or before the start of the block", 22),
    (identifier() + compressed_chunk(b"\x06" + literal(b"ab") + copy4(0, 4), b"??????"),
     "copy offset is zero or before the start of the block", 22),
    (identifier() + compressed_chunk(b"\x03" + literal(b"abcd"), b"abc"),
     "element writes past the block's decoded length", 19),
    (identifier() + compressed_chunk(b"\x05" + literal(b"ab") + copy1(1, 4), b"?????"),
     "element writes past the block's decoded length", 22),
    (identifier() + compressed_chunk(b"\x05" + literal(b"abcd"), b"abcd?"),
     "block ends before its decoded length", 24),
    (identifier() + compressed_chunk(b"\x05" + bytes([4 << 2]) + b"ab", b"ab"),
     "data ends inside a chunk or element", 19),
    (identifier() + compressed_chunk(b"\x05" + bytes([61 << 2, 4]), b""),
     "data ends inside a chunk or element", 19),
    (identifier() + compressed_chunk(b"\x05" + literal(b"a") + b"\x02\x01", b"a"),
     "data ends inside a chunk or element", 21),
    (identifier() + compressed_chunk(b"\x05" + literal(b"abcde"), b"abcdf"), "CRC-32C mismatch", 10),
    (identifier() + uncompressed_chunk(b"hello")[:4] + b"\x00\x00\x00\x00hello", "CRC-32C mismatch", 10),
    (identifier(b"sNaPpY") + uncompressed_chunk(b"ok") + chunk(0x01, b"\x00" * 4 + b"z" * 65537),
     "chunk decodes to more than the maximum block size", 20),
], ids=lambda value: "stream" if isinstance(value, bytes) else str(value))
def test_corrupt_streams_are_reported_with_their_position(stream, problem, position):
    with pytest.raises(BadMsg) as raised:
        s2_decode_stream(stream)
    assert str(raised.value) == f"S2 stream: {problem} at byte {position}"
    # In a block file the position is a file offset: after the "cmp" metadata.
    packed = block_file(stream, claimed_size(stream))
    header_len = len(packed) - len(stream) - 8
    with pytest.raises(BadMsg) as raised:
        decompress_block(packed)
    assert str(raised.value) == f"S2 block file: {problem} at byte {position + header_len}"


@pytest.mark.parametrize("alg", [ALG_S2, ALG_LZ4])
def test_every_truncation_is_an_error(alg):
    plain = sample_block(300, seed=2)
    packed = compress_block(plain, alg)
    for cut in range(len(packed)):
        piece = packed[:cut]
        if cut < 5:  # too short to carry the "cmp" metadata: a (broken) plain block
            assert decompress_block(piece) is piece
            continue
        with pytest.raises(BadMsg):
            decompress_block(piece)


@pytest.mark.parametrize("alg", [ALG_S2, ALG_LZ4])
def test_every_bit_flip_is_an_error_or_harmless(alg):
    plain = b"".join(b"record %d payload payload payload " % i for i in range(8)) + b"12345678"
    packed = compress_block(plain, alg)
    errors = 0
    for pos in range(len(packed)):
        for bit in range(8):
            flipped = bytearray(packed)
            flipped[pos] ^= 1 << bit
            flipped = bytes(flipped)
            if pos < 3:  # no longer "cmp": taken as a plain block
                assert decompress_block(flipped) is flipped
            elif pos >= len(packed) - 8:  # the uncompressed last-record hash
                assert decompress_block(flipped) == plain[:-8] + flipped[-8:]
            else:
                try:
                    result = decompress_block(flipped)
                except BadMsg:
                    errors += 1
                else:
                    # e.g. a copy offset changed to another one holding the same bytes
                    assert result == plain
    assert errors > (len(packed) - 11) * 8 * 0.9  # nearly every flip is detected


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400), seed=st.integers(0, 2**32))
def test_garbage_never_crashes(data, seed):
    rng = random.Random(seed)
    valid = compress_block(sample_block(rng.randrange(8, 2000), seed), ALG_S2)
    mutated = bytearray(valid)
    for _ in range(rng.randrange(1, 6)):
        mutated[rng.randrange(4, len(mutated))] = rng.randrange(256)
    for candidate in (bytes(mutated), b"cmp\x01" + uvarint(len(data) + 8) + data,
                      b"cmp\x01" + uvarint(len(data)) + identifier() + data,
                      identifier() + data, identifier(b"sNaPpY") + chunk(0, data)):
        for call in (decompress_block, s2_decode_stream):
            try:
                call(candidate)
            except BadMsg:
                pass


def test_lz4_trailing_bytes_and_bad_sizes():
    plain = sample_block(1000)
    packed = compress_block(plain, ALG_LZ4)
    alg, size, frame, checksum = split_block_file(packed)
    with pytest.raises(BadMsg, match="stray bytes after the LZ4 frame"):
        decompress_block(block_file(frame + b"xx", len(plain) - 8, checksum, ALG_LZ4))
    with pytest.raises(BadMsg, match="frame decodes to 1000 bytes, header says 999"):
        decompress_block(block_file(frame, 999, checksum, ALG_LZ4))


def test_bad_headers():
    with pytest.raises(BadMsg, match="unknown compression algorithm 0x07 at offset 3"):
        decompress_block(b"cmp\x07\x10" + b"x" * 20)
    with pytest.raises(BadMsg, match="unknown compression algorithm"):
        block_alg(b"cmp\x02\x10" + b"x" * 20)
    with pytest.raises(BadMsg, match="original-size uvarint at offset 4"):
        decompress_block(b"cmp\x01\x80\x80")
    with pytest.raises(BadMsg, match="implausible original size"):
        decompress_block(block_file(identifier(), 1 << 40))
    with pytest.raises(BadMsg, match="stream decodes to 5 bytes, header says 6"):
        decompress_block(block_file(identifier() + uncompressed_chunk(b"hello"), 6))
    with pytest.raises(BadMsg, match="end before the 8-byte checksum"):
        decompress_block(b"cmp\x01\x20abc")


def test_plain_blocks_whose_first_record_length_spells_cmp():
    # A first record of 0x00706d63 bytes (7.0 MiB) starts with "cmp\x00"; with the header bit
    # 0x80706d63 and 0x01706d63 (23.0 MiB) likewise.  Such files are plain, not compressed.
    for first_u32 in (0x00706D63, 0x80706D63, 0x01706D63, 0x81706D63):
        record_len = first_u32 & 0x7FFFFFFF
        seq = 1
        record = struct.pack("<IQqH", first_u32, seq, 1_700_000_000_000_000_000, 3) + b"a.b"
        record += b"x" * (record_len - len(record))
        assert record[:3] == b"cmp"
        assert block_alg(record) == ALG_NONE
        assert decompress_block(record) is record
        assert decompress_block(compress_block(record, ALG_S2)) == record
    # The same prefix on a file too short to hold such a record is metadata: "cmp" + alg 0
    # means "not compressed", and nats-server strips the header.
    assert decompress_block(b"cmp\x00" + uvarint(20) + b"y" * 20) == b"y" * 20
    with pytest.raises(BadMsg, match="header says 21 bytes, 20 follow it"):
        decompress_block(b"cmp\x00" + uvarint(21) + b"y" * 20)


# ---------------------------------------------------------------------------------------------
# Against nats-server


def walk_records(block: bytes):
    """(seq, subject, headers, payload) of each record in a plain block (reference §2.2)."""
    pos = 0
    while pos < len(block):
        first, seq, _ts, subject_len = struct.unpack_from("<IQqH", block, pos)
        record_len = first & 0x7FFFFFFF
        assert 30 <= record_len <= len(block) - pos
        at = pos + 22
        subject = block[at : at + subject_len]
        at += subject_len
        headers = b""
        if first & 0x80000000:
            (headers_len,) = struct.unpack_from("<I", block, at)
            headers = block[at + 4 : at + 4 + headers_len]
            at += 4 + headers_len
        payload = block[at : pos + record_len - 8]
        yield seq, subject.decode(), headers, payload
        pos += record_len
    assert pos == len(block)


def published_payload(i: int) -> bytes:
    rng = random.Random(i)
    return b"".join(b'{"n":%d,"k":%d,"v":"%s"}' % (i, j, rng.randbytes(4).hex().encode())
                    for j in range(800))


async def fill_stream(url: str, name: str, compression: str, store_dir: str) -> tuple[int, list]:
    """Create a stream whose blocks are 4 MiB (max_bytes of 20 MB), publish until a second
    block exists, and return the number of messages."""
    import nats

    nc = await nats.connect(url)
    try:
        config = {"name": name, "subjects": [f"{name}.>"], "storage": "file",
                  "compression": compression, "max_bytes": 20_000_000}
        reply = await nc.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(config).encode(), timeout=10)
        assert b'"error"' not in reply.data, reply.data
        js = nc.jetstream()
        count = 0
        pattern = os.path.join(store_dir, "jetstream", "*", "streams", name, "msgs", "*.blk")
        while len(glob.glob(pattern)) < 2:
            headers = {"X-Index": str(count)} if count % 3 == 0 else None
            await js.publish(f"{name}.{count % 5}", published_payload(count), headers=headers)
            count += 1
            assert count < 1000
        blocks = sorted(glob.glob(pattern), key=lambda p: int(os.path.basename(p).split(".")[0]))
        if compression == "s2":  # the first block is compressed in the background after rollover
            for _ in range(400):
                with open(blocks[0], "rb") as f:
                    if f.read(3) == b"cmp":
                        break
                await asyncio.sleep(0.025)
        return count, blocks
    finally:
        await nc.close()


def check_records(plain: bytes, first_seq: int, name: str) -> int:
    seq = first_seq
    for record_seq, subject, headers, payload in walk_records(plain):
        assert record_seq == seq
        index = seq - 1
        assert subject == f"{name}.{index % 5}"
        assert payload == published_payload(index)
        if index % 3 == 0:
            assert headers.startswith(b"NATS/1.0\r\n") and b"X-Index: %d\r\n" % index in headers
        else:
            assert headers == b""
        seq += 1
    return seq


@pytest.mark.natsserver
def test_decode_blocks_compressed_by_nats_server(tmp_path):
    from natsserver import nats_server, require_nats_server

    require_nats_server()
    with nats_server(tmp_path) as server:
        count, blocks = asyncio.run(fill_stream(server.url, "CMP", "s2", str(tmp_path)))
    with open(blocks[0], "rb") as f:
        packed = f.read()
    assert packed[:3] == b"cmp", "nats-server did not compress the sealed block"
    assert block_alg(packed) == ALG_S2
    alg, original_size, stream, checksum = split_block_file(packed)
    plain = decompress_block(packed)
    assert len(plain) == original_size > 4_000_000
    assert plain[-8:] == checksum
    # The server's S2 writer: "S2sTwO", 1 MB chunks, repeat offsets and 4-byte copies in use.
    chunks = list(stream_chunks(stream))
    assert chunks[0] == (0xFF, b"S2sTwO")
    kinds: dict = {}
    for chunk_type, body in chunks[1:]:
        if chunk_type == 0x00:
            for kind, n in tag_kinds(body[4:]).items():
                kinds[kind] = kinds.get(kind, 0) + n
    assert kinds.get("repeat", 0) > 0 and kinds.get("copy4", 0) > 0
    assert len(chunks) > 2
    next_seq = check_records(plain, 1, "CMP")
    # the next block continues where this one stopped
    with open(blocks[1], "rb") as f:
        tail = f.read()
    assert block_alg(tail) == ALG_NONE
    assert check_records(tail, next_seq, "CMP") == count + 1


@pytest.mark.natsserver
def test_nats_server_reads_blocks_we_compressed(tmp_path):
    import nats
    from natsserver import nats_server, require_nats_server

    require_nats_server()
    with nats_server(tmp_path) as server:
        count, blocks = asyncio.run(fill_stream(server.url, "OURS", "none", str(tmp_path)))
    for path in blocks[:-1]:  # sealed blocks; the last one stays plain like nats does
        with open(path, "rb") as f:
            plain = f.read()
        assert block_alg(plain) == ALG_NONE
        packed = compress_block(plain, ALG_S2)
        assert len(packed) < len(plain) // 2
        with open(path, "wb") as f:
            f.write(packed)
    msgs_dir = os.path.dirname(blocks[0])
    os.unlink(os.path.join(msgs_dir, "index.db"))  # make the server rebuild from the blocks

    async def read_back(url):
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            info = await js.stream_info("OURS")
            assert info.state.messages == count and info.state.last_seq == count
            for seq in range(1, count + 1):
                msg = await js.get_msg("OURS", seq)
                assert msg.subject == f"OURS.{(seq - 1) % 5}"
                assert msg.data == published_payload(seq - 1)
                if (seq - 1) % 3 == 0:
                    assert msg.headers["X-Index"] == str(seq - 1)
        finally:
            await nc.close()

    with nats_server(tmp_path) as server:
        asyncio.run(read_back(server.url))
        log = server.log_text()
    assert f"Restored {count} messages" in log
    assert "[ERR]" not in log and "[WRN]" not in log
