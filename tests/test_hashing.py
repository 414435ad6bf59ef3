"""HighwayHash-64 and XXH64: published vectors, streaming, both HighwayHash code paths,
the nats-server key/meta.sum helpers, and a cross-check against files written by a real
nats-server."""

import asyncio
import hashlib
import os
import struct

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from jsstore._core.storage import hashing
from jsstore._core.storage.hashing import (
    Highway64,
    block_hash_key,
    consumer_meta_hash_key,
    highway64,
    highway64_digest,
    meta_hash_key,
    meta_sum,
    xxh64,
)

# HighwayHash-64 of bytes 0..n-1 under the key bytes 0..31, for n = 0..64: the golden
# table kept by minio/highwayhash (identical to google/highwayhash's kExpected64). Each
# entry is the 8-byte digest in hex, i.e. the little-endian bytes of the 64-bit value.
VECTOR_KEY = bytes(range(32))
VECTORS_64 = [
    "536ec222de567a90", "78ddcdc7aa43ab7e", "623db5b09a56d0b8", "803d468aabef6b5c",
    "da7e009368a405f2", "4145a9e468168a2b", "6fcaef5b32cc4cbd", "8294f53817ae024d",
    "71315fe5085120e1", "84157ac74e64d232", "0ba903b1cd0ae1f6", "155c415b61f4bbc3",
    "9cfa630004c23c24", "ff41e665ce589aa8", "235a4548a331b024", "3bf349a4863f7940",
    "32b87ef98934abcf", "e2c0c5c8d267fe19", "c25c569ca690dd04", "04c571238e51d975",
    "16ddd341119bad38", "e0708acd2c436402", "90336888625adba9", "8c023f009254b0d7",
    "1ee559ea5a615f20", "8428052196c8e0ee", "4f4f28a7931afc1b", "1da90db7b5752151",
    "39c6a2a076891ff7", "e7e3841fef3f09ae", "0f866111b092ca22", "685a03cf7c00c79f",
    "fc80d5ecd964c9a0", "fc8131a03cf7902c", "9eeb91564ef85c18", "9baa5227eff5c14f",
    "eb330a5e1a39b7f5", "9c6ce9b4834bb8b9", "b4d95c2a71fe425e", "dc973f0cf9f250a1",
    "7d632d5ed722a57f", "2bd3ff0dccd01a18", "2840851e98ed8938", "2dee86c5e89742fb",
    "9c0528bb454a066d", "0c86ecb309365690", "66c69740e9fca47a", "081e916bc0ba2613",
    "344f152b8d1626b9", "8d94b14589841999", "be5e8234c58fa9a2", "b6f03e21959080e9",
    "e9c07b7083542e58", "f56a8aa814946e08", "3d74f6208db986ee", "a7c0b109f67f9bf8",
    "e8c3229ec19c7d4c", "6f2a56245000979a", "efebe623f41cd45d", "27e268049c6013df",
    "5a158841f6a40d6e", "a1d4d7504bba55b7", "bd79746484347a88", "a03921bfe9eb8eab",
    "ffa6d24c5d2c5475",
]

SIMD_AVAILABLE = hashing.use_simd(True)
PATHS = [pytest.param(False, id="portable")] + (
    [pytest.param(True, id="ssse3")] if SIMD_AVAILABLE else []
)


@pytest.fixture(params=PATHS)
def code_path(request):
    """Run the test once per HighwayHash implementation, then restore the default."""
    assert hashing.use_simd(request.param) == request.param
    yield request.param
    hashing.use_simd(True)


# ---------------------------------------------------------------- HighwayHash vectors


def test_vector_table_is_complete():
    assert len(VECTORS_64) == 65
    assert len(set(VECTORS_64)) == 65


@pytest.mark.parametrize("length", range(65))
def test_published_vectors_one_shot(code_path, length):
    data = bytes(range(length))
    assert highway64_digest(VECTOR_KEY, data).hex() == VECTORS_64[length]
    assert highway64(VECTOR_KEY, data) == int.from_bytes(
        bytes.fromhex(VECTORS_64[length]), "little"
    )


@pytest.mark.parametrize("length", range(65))
def test_published_vectors_byte_by_byte(code_path, length):
    hasher = Highway64(VECTOR_KEY)
    for value in range(length):
        hasher.update(bytes([value]))
    assert hasher.digest().hex() == VECTORS_64[length]


def test_google_table_form():
    # google/highwayhash lists the same results as uint64 values.
    assert highway64(VECTOR_KEY, b"") == 0x907A56DE22C26E53
    assert highway64(VECTOR_KEY, bytes(range(64))) == 0x75542C5D4CD2A6FF


# ---------------------------------------------------------------- streaming, paths


@settings(max_examples=300, deadline=None)
@given(
    key=st.binary(min_size=32, max_size=32),
    data=st.binary(max_size=700),
    cuts=st.lists(st.integers(min_value=0, max_value=700), max_size=12),
    simd=st.booleans(),
)
def test_streaming_matches_one_shot(key, data, cuts, simd):
    hashing.use_simd(simd)
    try:
        expected = highway64(key, data)
        points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
        hasher = Highway64(key)
        for start, end in zip(points, points[1:]):
            hasher.update(data[start:end])
            # Reading a digest mid-stream must not disturb the stream.
            assert hasher.intdigest() == highway64(key, data[:end])
        hasher.update(b"")
        assert hasher.intdigest() == expected
        assert hasher.digest() == expected.to_bytes(8, "little")
    finally:
        hashing.use_simd(True)


@pytest.mark.skipif(not SIMD_AVAILABLE, reason="CPU has no SSSE3")
@settings(max_examples=300, deadline=None)
@given(key=st.binary(min_size=32, max_size=32), data=st.binary(max_size=2000))
def test_portable_and_simd_agree(key, data):
    try:
        hashing.use_simd(False)
        portable = highway64(key, data)
        hashing.use_simd(True)
        assert highway64(key, data) == portable
    finally:
        hashing.use_simd(True)


def test_large_input_releases_gil_and_matches_streaming():
    data = np.random.default_rng(7).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    key = hashlib.sha256(b"large").digest()
    hasher = Highway64(key)
    for start in range(0, len(data), 100_003):
        hasher.update(data[start:start + 100_003])
    assert hasher.intdigest() == highway64(key, data)


def test_reset_and_key_sensitivity():
    key = bytes(range(32))
    hasher = Highway64(key).update(b"some bytes")
    hasher.reset()
    assert hasher.intdigest() == highway64(key, b"")
    other_key = bytes([1]) + key[1:]
    assert highway64(other_key, b"abc") != highway64(key, b"abc")
    assert highway64(key, b"abc") != highway64(key, b"abd")


def test_bytes_like_inputs():
    key = bytes(range(32))
    data = bytes(range(200))
    expected = highway64(key, data)
    assert highway64(bytearray(key), bytearray(data)) == expected
    assert highway64(memoryview(key), memoryview(data)) == expected
    assert highway64(key, np.frombuffer(data, dtype=np.uint8)) == expected
    assert highway64(key, memoryview(b"xx" + data)[2:]) == expected


@pytest.mark.parametrize("bad_key", [b"", bytes(31), bytes(33)])
def test_key_must_be_32_bytes(bad_key):
    with pytest.raises(ValueError):
        highway64(bad_key, b"x")
    with pytest.raises(ValueError):
        Highway64(bad_key)


def test_non_buffer_data_is_rejected():
    with pytest.raises(TypeError):
        highway64(bytes(32), "text")
    with pytest.raises(TypeError):
        xxh64(12345)


# ---------------------------------------------------------------- XXH64


def test_xxh64_published_empty_value():
    # XXH64 of the empty input with seed 0, from the xxHash documentation.
    assert xxh64(b"") == 0xEF46DB3751D8E999


@pytest.mark.parametrize("length", range(0, 100))
def test_xxh64_every_tail_shape(length):
    data = bytes((i * 37 + 11) & 0xFF for i in range(length))
    assert xxh64(data) == xxhash.xxh64_intdigest(data)
    assert xxh64(data, 12345) == xxhash.xxh64_intdigest(data, seed=12345)


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=1000), seed=st.integers(min_value=0, max_value=2**64 - 1))
def test_xxh64_matches_xxhash_package(data, seed):
    assert xxh64(data, seed) == xxhash.xxh64_intdigest(data, seed=seed)


def test_xxh64_large_and_bytes_like():
    data = np.random.default_rng(3).integers(0, 256, 200_001, dtype=np.uint8)
    assert xxh64(data) == xxhash.xxh64_intdigest(data.tobytes())
    assert xxh64(bytearray(b"subject.a.b"), 9) == xxhash.xxh64_intdigest(b"subject.a.b", seed=9)


# ---------------------------------------------------------------- nats-server keys


def test_block_hash_key():
    assert block_hash_key("ORDERS", 1) == hashlib.sha256(b"ORDERS-1").digest()
    assert block_hash_key("ORDERS", 12) == hashlib.sha256(b"ORDERS-12").digest()
    assert block_hash_key("ÜBER", 3) == hashlib.sha256("ÜBER-3".encode()).digest()
    assert len(block_hash_key("S", 1)) == 32
    with pytest.raises(ValueError):
        block_hash_key("S", -1)


def test_meta_keys():
    assert meta_hash_key("ORDERS") == hashlib.sha256(b"ORDERS").digest()
    assert consumer_meta_hash_key("ORDERS", "dur") == hashlib.sha256(b"ORDERS/dur").digest()


def test_meta_sum_format():
    key = meta_hash_key("ORDERS")
    data = b'{"name":"ORDERS"}'
    text = meta_sum(key, data)
    assert isinstance(text, bytes) and len(text) == 16
    assert text == text.lower()
    assert bytes.fromhex(text.decode()) == highway64_digest(key, data)


# ---------------------------------------------------------------- real nats-server files

STREAM = "HASHCHK"
CONSUMER = "checker"
# (subject, headers or None, payload): empty and multi-packet payloads, with and without
# headers, so every remainder branch of the hash is exercised by the server's records.
PUBLISHED = [
    ("hash.a", None, b""),
    ("hash.b", None, b"x"),
    ("hash.with.a.longer.subject.name", None, b"0123456789abcdef" * 3),
    ("hash.h", {"Key": "value"}, b""),
    ("hash.h", {"Key": "v", "Other-Header": "something longer"}, bytes(range(256)) * 2),
    ("hash.c", None, b"payload of thirty-one bytes ..."),
    ("hash.h2", {"A": "1"}, b"abc"),
] + [(f"hash.n.{i}", {"N": str(i)} if i % 3 == 0 else None, os.urandom(i * 7)) for i in range(20)]


def parse_block(raw):
    """Split an uncompressed, unencrypted block into records (nats record layout)."""
    records = []
    offset = 0
    while offset < len(raw):
        (length_word,) = struct.unpack_from("<I", raw, offset)
        has_headers = bool(length_word & 0x80000000)
        length = length_word & 0x7FFFFFFF
        assert 30 <= length <= len(raw) - offset, f"bad record length at offset {offset}"
        record = raw[offset:offset + length]
        seq, ts, subject_len = struct.unpack_from("<QqH", record, 4)
        position = 22 + subject_len
        subject = record[22:position]
        headers = b""
        if has_headers:
            (headers_len,) = struct.unpack_from("<I", record, position)
            headers = record[position + 4:position + 4 + headers_len]
            position += 4 + headers_len
        payload = record[position:length - 8]
        records.append(
            {
                "seq": seq,
                "ts": ts,
                "subject": subject,
                "headers": headers,
                "has_headers": has_headers,
                "payload": payload,
                "hash": record[length - 8:],
                "covered": record[4:20],
            }
        )
        offset += length
    return records


async def _publish_and_create_consumer(url):
    import nats

    connection = await nats.connect(url)
    try:
        jetstream = connection.jetstream()
        await jetstream.add_stream(name=STREAM, subjects=["hash.>"])
        for subject, headers, payload in PUBLISHED:
            await jetstream.publish(subject, payload, headers=headers)
        await jetstream.add_consumer(STREAM, durable_name=CONSUMER)
    finally:
        await connection.close()


@pytest.fixture(scope="module")
def server_store(tmp_path_factory):
    """A store directory written by the reference server, which has been stopped."""
    from natsserver import nats_server, require_nats_server

    require_nats_server()
    store_dir = tmp_path_factory.mktemp("nats-store")
    with nats_server(store_dir) as server:
        asyncio.run(_publish_and_create_consumer(server.url))
    return store_dir / "jetstream" / "$G" / "streams" / STREAM


@pytest.mark.natsserver
def test_server_record_hashes(server_store, code_path):
    raw = (server_store / "msgs" / "1.blk").read_bytes()
    assert raw[:3] != b"cmp"  # the last block is never compressed
    records = parse_block(raw)
    assert [r["seq"] for r in records] == list(range(1, len(PUBLISHED) + 1))
    key = block_hash_key(STREAM, 1)
    for record, (subject, headers, payload) in zip(records, PUBLISHED):
        assert record["subject"] == subject.encode()
        assert record["payload"] == payload
        assert record["has_headers"] == (headers is not None)
        if headers:
            assert record["headers"].startswith(b"NATS/1.0\r\n")
        covered = record["covered"] + record["subject"] + record["headers"] + record["payload"]
        assert highway64_digest(key, covered) == record["hash"]
        streamed = Highway64(key)
        for part in ("covered", "subject", "headers", "payload"):
            streamed.update(record[part])
        assert streamed.digest() == record["hash"]
        # The key really is per block and the hash really covers the payload.
        assert highway64_digest(block_hash_key(STREAM, 2), covered) != record["hash"]
        assert highway64_digest(key, covered + b"!") != record["hash"]


@pytest.mark.natsserver
def test_server_meta_sums(server_store, code_path):
    meta_inf = (server_store / "meta.inf").read_bytes()
    assert meta_sum(meta_hash_key(STREAM), meta_inf) == (server_store / "meta.sum").read_bytes()
    consumer_dir = server_store / "obs" / CONSUMER
    consumer_inf = (consumer_dir / "meta.inf").read_bytes()
    expected = meta_sum(consumer_meta_hash_key(STREAM, CONSUMER), consumer_inf)
    assert expected == (consumer_dir / "meta.sum").read_bytes()
    assert meta_sum(meta_hash_key(STREAM), consumer_inf) != expected


@pytest.mark.natsserver
def test_server_index_db_trailer(server_store, code_path):
    # index.db (written on clean shutdown) ends with the stream-keyed hash of the rest,
    # and stores the last record's hash (lchk) just before that trailer.
    index = (server_store / "msgs" / "index.db").read_bytes()
    assert index[0] == 11  # full state magic
    assert highway64_digest(meta_hash_key(STREAM), index[:-8]) == index[-8:]
    last_hash = parse_block((server_store / "msgs" / "1.blk").read_bytes())[-1]["hash"]
    assert index[-16:-8] == last_hash
