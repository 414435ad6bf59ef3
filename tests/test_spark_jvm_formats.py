"""The JVM reader's file formats in Java (BlockBytes with S2 and LZ4, HighwayHash, IndexDb)
give what the Python/Cython code gives for the same bytes.

One JVM (jsstore.spark.FormatsInspect, tests/java) runs for the whole module and answers one
JSON line per command, so Hypothesis examples cost a pipe round trip, not a JVM launch.  Files come from
jsstore's FileStore (compression none, s2, lz4) and from the real nats-server (s2); corrupt
variants must fail in both implementations alike.
"""

from __future__ import annotations

import asyncio
import glob
import hashlib
import json
import os
import random
import subprocess

import lz4.frame
import pytest
import xxhash
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

import jsstore
from jsstore import StoreOptions
from jsstore._core.storage.compress import (ALG_LZ4, ALG_NONE, ALG_S2, _crc32c, block_alg,
                                           compress_block)
from jsstore._core.storage.hashing import highway64_digest, meta_hash_key
from jsstore.errors import BadMsg, CorruptFile
from jsstore.gocompat.varints import put_uvarint
from jsstore.spark import jvmjar
from jvminspect import driver_classpath, java_binary
from jsstore.spark.planning import read_plain_block
from jsstore.store.indexdb import decode_index

U64 = 1 << 64
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


# ---- the Java side ------------------------------------------------------------------------

class Inspector:
    """A running FormatsInspect: ask(command) -> the decoded JSON answer."""

    def __init__(self, process: subprocess.Popen):
        self.process = process

    def ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"FormatsInspect exited ({self.process.poll()}) on {command[:200]!r}"
        return json.loads(line)


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    try:
        jvmjar.javac()
    except jvmjar.JarBuildError as exc:
        pytest.skip(str(exc))
    saved = os.environ.get("JSSTORE_JAR_CACHE")
    os.environ["JSSTORE_JAR_CACHE"] = str(tmp_path_factory.mktemp("jar"))
    try:
        jar = jvmjar.jar_path()
    finally:
        if saved is None:
            del os.environ["JSSTORE_JAR_CACHE"]
        else:
            os.environ["JSSTORE_JAR_CACHE"] = saved
    classpath = driver_classpath(jar, str(tmp_path_factory.mktemp("drivers")))
    process = subprocess.Popen([java_binary(), "-cp", classpath, "jsstore.spark.FormatsInspect"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               encoding="utf-8")
    try:
        yield Inspector(process)
    finally:
        process.stdin.close()
        assert process.wait(timeout=30) == 0


# ---- what the Python side says ------------------------------------------------------------

def python_plain(path: str) -> dict:
    try:
        data = read_plain_block(path)
    except BadMsg as exc:
        return {"error": str(exc)}
    return {"len": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def same_plain(java: Inspector, path: str) -> dict:
    """Check both implementations agree on the block file at path; returns Python's answer."""
    expected = python_plain(path)
    got = java.ask(f"plain {path}")
    if "error" in expected:
        assert "error" in got, (path, expected, got)
        # an IOException naming the file, never an exception of another kind
        assert got["error"].startswith(f"IOException: {path}: "), got
    else:
        assert got == expected, (path, got)
    return expected


def int64(value: int) -> int:
    """A Python int as the Java long (Go int64) the same arithmetic gives."""
    value %= U64
    return value - U64 if value >= 1 << 63 else value


def python_index(name: str, buf: bytes) -> dict:
    """decode_index's answer in FormatsInspect's JSON form (or {"error"}): a value Java cannot
    hold (a varint over 64 bits, which Go rejects too) counts as an error."""
    try:
        st = decode_index(name, buf)
    except CorruptFile as exc:
        return {"error": str(exc)}
    unsigned = [st["msgs"], st["bytes"], st["first_seq"], st["last_seq"], st["last_index"]]
    for subj, total, fblk, lblk in st["subjects"]:
        unsigned += [total, fblk, lblk]
    for b in st["blocks"]:
        unsigned += [b["index"], b["bytes"], b["first_seq"], b["last_seq"]]
    if any(v >= U64 for v in unsigned):
        return {"error": "varint over 64 bits"}
    return {
        "msgs": st["msgs"], "bytes": st["bytes"], "first_seq": st["first_seq"],
        "first_ts": int64(st["first_ts"]), "last_seq": st["last_seq"],
        "last_ts": int64(st["last_ts"]),
        "subjects": [[subj.decode("utf-8", "replace"), total, fblk, lblk]
                     for subj, total, fblk, lblk in st["subjects"]],
        "blocks": [{"index": b["index"], "bytes": b["bytes"], "first_seq": b["first_seq"],
                    "first_ts": int64(b["first_ts"]), "last_seq": b["last_seq"],
                    "last_ts": int64(b["last_ts"]),
                    "deleted": list(b["deleted"]) if b["deleted"] is not None else []}
                   for b in st["blocks"]],
        "last_index": st["last_index"], "lchk": st["lchk"].hex(),
    }


def same_index(java: Inspector, name: str, path: str) -> dict:
    with open(path, "rb") as f:
        expected = python_index(name, f.read())
    got = java.ask(f"index {name} {path}")
    if "error" in expected:
        assert "error" in got, (path, expected, got)
        assert got["error"].startswith("IOException: index.db: "), got
    else:
        assert got == expected
    return expected


def with_checksum(name: str, body: bytes) -> bytes:
    return body + highway64_digest(meta_hash_key(name), body)


# ---- stores -------------------------------------------------------------------------------

SPARSE = range(7, 9000, 5)                  # spans several 2048-sequence nodes in a block
DENSE = range(5000, 7100)                   # a whole node full, and the ones around it


def fill_jsstore(directory: str, compression: str) -> str:
    """A stream whose first blocks hold ~9000 small messages each, with sparse and dense
    deletes; returns its msgs directory (index.db is written on close)."""
    with jsstore.open(directory, StoreOptions(block_size=256 * 1024)) as js:
        js.add_stream(name="ORDERS", subjects=["orders.>"], compression=compression)
        for i in range(12000):
            headers = {"Nats-Msg-Id": f"m-{i}"} if i % 4 == 0 else None
            js.publish(f"orders.{'ü' if i % 11 == 0 else i % 7}", bytes([i % 251]) * (i % 13),
                       headers=headers)
        for seq in sorted(set(SPARSE) | set(DENSE)):
            js.delete_msg("ORDERS", seq, no_erase=seq % 2 == 0)
    return os.path.join(directory, "jetstream", "$G", "streams", "ORDERS", "msgs")


@pytest.fixture(scope="module")
def jsstore_dirs(tmp_path_factory):
    return {compression: fill_jsstore(str(tmp_path_factory.mktemp(f"js-{compression}")),
                                      compression)
            for compression in ("none", "s2", "lz4")}


def block_files(msgs_dir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(msgs_dir, "*.blk")),
                  key=lambda p: int(os.path.basename(p).split(".")[0]))


async def _fill_nats(url: str, store_dir: str) -> None:
    import nats

    nc = await nats.connect(url)
    try:
        config = {"name": "CMP", "subjects": ["CMP.>"], "storage": "file",
                  "compression": "s2", "max_bytes": 20_000_000}
        reply = await nc.request("$JS.API.STREAM.CREATE.CMP", json.dumps(config).encode(),
                                 timeout=10)
        assert b'"error"' not in reply.data, reply.data
        js = nc.jetstream()
        for i in range(4600):                 # 4 MiB blocks: a second block exists
            payload = b'{"n":%d,"text":"%s"}' % (i, b"abcdefgh" * (100 + i % 20))
            await js.publish(f"CMP.{i % 5}", payload,
                             headers={"X-Index": str(i)} if i % 3 == 0 else None)
        for seq in sorted(set(range(3, 4400, 7)) | set(range(1000, 3100))):
            reply = await nc.request("$JS.API.STREAM.MSG.DELETE.CMP",
                                     json.dumps({"seq": seq, "no_erase": seq % 2 == 0}).encode(),
                                     timeout=10)
            assert b'"success":true' in reply.data, reply.data
        pattern = os.path.join(store_dir, "jetstream", "*", "streams", "CMP", "msgs", "1.blk")
        for _ in range(400):                   # sealed blocks are compressed in the background
            with open(glob.glob(pattern)[0], "rb") as f:
                if f.read(3) == b"cmp":
                    break
            await asyncio.sleep(0.025)
    finally:
        await nc.close()


@pytest.fixture(scope="module")
def nats_dir(tmp_path_factory):
    from natsserver import nats_server, require_nats_server

    require_nats_server()
    store_dir = str(tmp_path_factory.mktemp("nats"))
    with nats_server(store_dir) as server:
        asyncio.run(_fill_nats(server.url, store_dir))
    return glob.glob(os.path.join(store_dir, "jetstream", "*", "streams", "CMP", "msgs"))[0]


# ---- HighwayHash --------------------------------------------------------------------------

def test_highway_matches_python_on_every_length(java):
    rng = random.Random(7)
    keys = [bytes(32), bytes(range(32)), meta_hash_key("ORDERS"), rng.randbytes(32)]
    lengths = list(range(101)) + [4096 + k for k in range(32)] + [65536 + 5, 1 << 17]
    for key in keys:
        for n in lengths:
            data = rng.randbytes(n)
            got = java.ask(f"highway {key.hex()} {data.hex()}")
            assert got == {"digest": highway64_digest(key, data).hex()}, (key.hex(), n)


@FUZZ
@given(key=st.binary(min_size=32, max_size=32), data=st.binary(max_size=300))
def test_highway_random_bytes(java, key, data):
    assert java.ask(f"highway {key.hex()} {data.hex()}") == \
        {"digest": highway64_digest(key, data).hex()}


@FUZZ
@given(data=st.binary(max_size=200), cut=st.tuples(st.integers(0, 200), st.integers(0, 200)))
def test_highway_of_a_slice(java, data, cut):
    off, end = sorted(min(c, len(data)) for c in cut)
    key = meta_hash_key("S")
    assert java.ask(f"highway {key.hex()} {data.hex()} {off} {end - off}") == \
        {"digest": highway64_digest(key, data[off:end]).hex()}


def test_highway_rejects_a_short_key(java):
    assert "error" in java.ask(f"highway {bytes(31).hex()} 00")


# ---- block files --------------------------------------------------------------------------

@pytest.mark.parametrize("compression", ["none", "s2", "lz4"])
def test_blocks_written_by_jsstore_read_alike(java, jsstore_dirs, compression):
    files = block_files(jsstore_dirs[compression])
    assert len(files) >= 3
    algs = set()
    for path in files:
        with open(path, "rb") as f:
            algs.add(block_alg(f.read()))
        assert "error" not in same_plain(java, path)
    want = {"none": ALG_NONE, "s2": ALG_S2, "lz4": ALG_LZ4}[compression]
    assert want in algs                      # the sealed blocks are compressed


@pytest.mark.natsserver
def test_blocks_written_by_nats_server_read_alike(java, nats_dir):
    files = block_files(nats_dir)
    assert len(files) >= 2
    with open(files[0], "rb") as f:
        assert block_alg(f.read()) == ALG_S2, "nats-server did not compress the sealed block"
    for path in files:
        assert "error" not in same_plain(java, path)


def variants(data: bytes, rng: random.Random) -> list[bytes]:
    """Truncations and single-byte flips all over a compressed block file."""
    n = len(data)
    cuts = list(range(0, 40)) + [n - k for k in range(1, 40)] + rng.sample(range(n), 40)
    flips = list(range(0, 40)) + [n - k for k in range(9, 60)] + rng.sample(range(n), 120)
    out = [data[:cut] for cut in cuts if 0 <= cut < n]
    for at in flips:
        if 0 <= at < n:
            changed = bytearray(data)
            changed[at] ^= 1 << rng.randrange(8)
            out.append(bytes(changed))
    return out


WRITERS = ["jsstore", pytest.param("nats-server", marks=pytest.mark.natsserver)]


def written_by(request, writer: str) -> list[tuple[str, str]]:
    """(stream name, msgs directory) of the stores `writer` wrote (nats-server's only when a
    test asks for it: the fixture starts the server)."""
    if writer == "jsstore":
        dirs = request.getfixturevalue("jsstore_dirs")
        return [("ORDERS", dirs["s2"]), ("ORDERS", dirs["lz4"])]
    return [("CMP", request.getfixturevalue("nats_dir"))]


@pytest.mark.parametrize("writer", WRITERS)
def test_corrupt_compressed_blocks_fail_in_both(java, request, writer, tmp_path):
    rng = random.Random(3)
    sources = [block_files(msgs_dir)[0] for _name, msgs_dir in written_by(request, writer)]
    errors = total = 0
    for number, source in enumerate(sources):
        with open(source, "rb") as f:
            data = f.read()
        assert block_alg(data) != ALG_NONE
        for k, variant in enumerate(variants(data, rng)):
            path = str(tmp_path / f"{number}-{k}.blk")
            with open(path, "wb") as f:
                f.write(variant)
            errors += "error" in same_plain(java, path)
            total += 1
            os.unlink(path)
    assert errors > total // 2                 # most of them are corrupt, and seen to be


@FUZZ
@given(data=st.binary(min_size=8, max_size=3000), alg=st.sampled_from([ALG_S2, ALG_LZ4]),
       repeat=st.integers(1, 40))
def test_compressed_random_blocks_read_alike(java, tmp_path, data, alg, repeat):
    assume(not data.startswith(b"cmp"))      # compress_block would take it as compressed
    path = str(tmp_path / "block.blk")
    with open(path, "wb") as f:
        f.write(compress_block(data * repeat, alg))
    assert same_plain(java, path) == {"len": len(data) * repeat,
                                      "sha256": hashlib.sha256(data * repeat).hexdigest()}


@FUZZ
@given(data=st.binary(min_size=8, max_size=2000), repeat=st.integers(1, 300),
       block_size=st.sampled_from([lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX256KB]),
       linked=st.booleans(), block_checksum=st.booleans(), content_checksum=st.booleans(),
       store_size=st.booleans(), level=st.sampled_from([0, 9]))
def test_lz4_frames_of_every_option_read_alike(java, tmp_path, data, repeat, block_size, linked,
                                               block_checksum, content_checksum, store_size,
                                               level):
    """jsstore writes one kind of LZ4 frame; the Java decoder reads the others too (independent
    blocks, block checksums, no content size or checksum, high compression)."""
    plain = data * repeat
    frame = lz4.frame.compress(plain[:-8], block_size=block_size, block_linked=linked,
                               block_checksum=block_checksum, content_checksum=content_checksum,
                               store_size=store_size, compression_level=level)
    header = bytearray(b"cmp\x4c")
    put_uvarint(header, len(plain))
    path = str(tmp_path / "frame.blk")
    with open(path, "wb") as f:
        f.write(bytes(header) + frame + plain[-8:])
    assert same_plain(java, path) == {"len": len(plain),
                                      "sha256": hashlib.sha256(plain).hexdigest()}


@FUZZ
@given(garbage=st.binary(max_size=400), snappy=st.booleans())
def test_garbage_after_an_s2_header_reads_alike(java, tmp_path, garbage, snappy):
    header = bytearray(b"cmp\x01")
    put_uvarint(header, len(garbage) + 8)
    ident = b"\xff\x06\x00\x00" + (b"sNaPpY" if snappy else b"S2sTwO")
    path = str(tmp_path / "garbage.blk")
    with open(path, "wb") as f:
        f.write(bytes(header) + ident + garbage + bytes(8))
    same_plain(java, path)


def s2_element(op, out: bytearray, last: list) -> bytes:
    """Encode one S2 block element and apply it to out (the model of what it decodes to);
    last[0] is the repeat offset, last[1] is set False when the element is not valid.  A copy
    whose offset is not `wild` gets one inside the output so far."""
    kind, a, b, wild = op
    if kind in ("copy1", "copy2", "copy4") and not wild and out:
        b = 1 + b % min(len(out), {"copy1": 2047, "copy2": 65535, "copy4": 1 << 32}[kind])
    if kind == "lit":                        # a bytes of literal, length code by size
        data = bytes((a * 31 + i) % 256 for i in range(a))
        n = a - 1
        if n < 60:
            head = bytes([n << 2])
        else:
            extra = 1 if n < 1 << 8 else 2 if n < 1 << 16 else 3
            head = bytes([(59 + extra) << 2]) + n.to_bytes(extra, "little")
        out += data
        return head + data
    if kind == "copy1":                      # length a in 4..11, offset b in 1..2047
        encoded, length, offset = bytes([1 | (a - 4) << 2 | (b >> 8) << 5, b & 0xFF]), a, b
    elif kind == "copy2":                    # length a in 1..64, offset b
        encoded, length, offset = bytes([2 | (a - 1) << 2]) + b.to_bytes(2, "little"), a, b
    elif kind == "copy4":
        encoded, length, offset = bytes([3 | (a - 1) << 2]) + b.to_bytes(4, "little"), a, b
    else:                                    # repeat: length code a in 0..7, extra value b
        offset = last[0]
        if a < 5:
            encoded, length = bytes([1 | a << 2, 0]), a + 4
        elif a == 5:
            encoded, length = bytes([1 | 5 << 2, 0, b & 0xFF]), (b & 0xFF) + 8
        elif a == 6:
            encoded, length = bytes([1 | 6 << 2, 0]) + (b & 0xFFFF).to_bytes(2, "little"), \
                (b & 0xFFFF) + 260
        else:
            encoded, length = bytes([1 | 7 << 2, 0]) + (b & 0xFFFFFF).to_bytes(3, "little"), \
                (b & 0xFFFFFF) + 65540
    last[0] = offset
    if offset == 0 or offset > len(out):
        last[1] = False
        out += bytes(length)
    else:
        for _ in range(length):
            out.append(out[-offset])
    return encoded


WILD = st.integers(0, 9).map(lambda n: n == 0)     # an offset left as drawn, 1 in 10
S2_OPS = st.one_of(
    st.tuples(st.just("lit"), st.integers(1, 300), st.just(0), st.just(False)),
    st.tuples(st.just("copy1"), st.integers(4, 11), st.integers(1, 2047), WILD),
    st.tuples(st.just("copy2"), st.integers(1, 64), st.integers(0, 400), WILD),
    st.tuples(st.just("copy4"), st.integers(1, 64), st.integers(0, 70000), WILD),
    st.tuples(st.just("repeat"), st.integers(0, 7), st.integers(0, 70000), st.just(False)),
)


@settings(FUZZ, max_examples=300)
@given(first=st.integers(1, 100), ops=st.lists(S2_OPS, max_size=25), tamper=st.integers(-3, 3))
def test_s2_elements_decode_alike(java, tmp_path, first, ops, tamper):
    """Blocks of every S2 element kind (literal length codes, copy1/2/4, repeats with each
    length code), valid or not (offsets out of range, a repeat first, a wrong preamble)."""
    out, last, elements = bytearray(), [0, True], b""
    for op in [("lit", first, 0, False), *ops]:
        elements += s2_element(op, out, last)
    preamble = bytearray()
    put_uvarint(preamble, max(0, len(out) + (tamper if abs(tamper) == 1 else 0)))
    crc = _crc32c(bytes(out))
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    body = masked.to_bytes(4, "little") + bytes(preamble) + elements
    chunk = b"\x00" + len(body).to_bytes(3, "little") + body
    header = bytearray(b"cmp\x01")
    put_uvarint(header, len(out) + 8)
    path = str(tmp_path / "elements.blk")
    with open(path, "wb") as f:
        f.write(bytes(header) + b"\xff\x06\x00\x00S2sTwO" + chunk + bytes(range(8)))
    expected = same_plain(java, path)
    event("error" if "error" in expected else "decoded")
    if last[1] and tamper not in (-1, 1) and len(out) <= 4 << 20:
        assert expected == {"len": len(out) + 8,
                            "sha256": hashlib.sha256(bytes(out) + bytes(range(8))).hexdigest()}


def test_lz4_match_offset_zero_reads_as_the_reference_decoder_reads_it(java, tmp_path):
    """Offset 0 is not valid LZ4, but lz4 1.9's decoder writes zeros for it, so a flipped
    offset byte can still give the right content (found by the corruption test)."""
    body = b"ABCDEFGH" + bytes(8) + b"IJKLMNOPQRSTUVWX"
    reference = lz4.frame.compress(body, content_checksum=True)
    header, checksum = reference[:15], reference[-4:]
    assert header[4] & 0x0C == 0x0C                        # content size and checksum
    block = bytes([0x84]) + b"ABCDEFGH" + b"\x00\x00" + bytes([0xF0, 16 - 15]) + body[16:]
    frame = header + len(block).to_bytes(4, "little") + block + bytes(4) + checksum
    plain = body + bytes(range(8))
    file_header = bytearray(b"cmp\x4c")
    put_uvarint(file_header, len(plain))
    path = str(tmp_path / "1.blk")
    with open(path, "wb") as f:
        f.write(bytes(file_header) + frame + plain[-8:])
    assert same_plain(java, path) == {"len": len(plain),
                                      "sha256": hashlib.sha256(plain).hexdigest()}


@pytest.mark.parametrize("reach_back", [False, True])
def test_lz4_frame_with_a_dictionary_id(java, tmp_path, reach_back):
    """No dictionary is given: the frame reads when no match reaches before its start."""
    body = b"ABCDEFGH" * 4 + b"IJKLMNOPQRSTUVWX"
    # 8 literals, an 8-byte match 8 back (or 9: before the frame's start), 32 literals
    offset = b"\x09\x00" if reach_back else b"\x08\x00"
    block = bytes([0x84]) + body[:8] + offset + bytes([0xF0, 32 - 15]) + body[16:]
    descriptor = bytes([0x40 | 0x20 | 0x08 | 0x04 | 0x01, 0x40]) \
        + len(body).to_bytes(8, "little") + (12345).to_bytes(4, "little")
    hc = (xxhash.xxh32_intdigest(descriptor) >> 8) & 0xFF
    frame = (0x184D2204).to_bytes(4, "little") + descriptor + bytes([hc]) \
        + len(block).to_bytes(4, "little") + block + bytes(4) \
        + xxhash.xxh32_intdigest(body).to_bytes(4, "little")
    plain = body + bytes(range(8))
    file_header = bytearray(b"cmp\x4c")
    put_uvarint(file_header, len(plain))
    path = str(tmp_path / "1.blk")
    with open(path, "wb") as f:
        f.write(bytes(file_header) + frame + plain[-8:])
    expected = same_plain(java, path)
    if reach_back:
        assert "error" in expected
    else:
        assert expected == {"len": len(plain), "sha256": hashlib.sha256(plain).hexdigest()}


def masked_crc(data: bytes) -> bytes:
    crc = _crc32c(data)
    return ((((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF).to_bytes(4, "little")


def chunk(kind: int, body: bytes) -> bytes:
    return bytes([kind]) + len(body).to_bytes(3, "little") + body


S2_ID = chunk(0xFF, b"S2sTwO")
SNAPPY_ID = chunk(0xFF, b"sNaPpY")
BIG = bytes(range(256)) * 300                       # 76800 bytes: over Snappy's 64 KiB
FRAMINGS = {                                        # name: (chunks, decodes to or None)
    "stored": ([S2_ID, chunk(1, masked_crc(b"hello") + b"hello")], b"hello"),
    "padding and skippable": ([S2_ID, chunk(0xFE, bytes(5)), chunk(0x99, b"index"),
                               chunk(1, masked_crc(b"ab") + b"ab"), chunk(0x80, b"")], b"ab"),
    "two streams": ([SNAPPY_ID, chunk(1, masked_crc(b"x") + b"x"), S2_ID,
                     chunk(1, masked_crc(b"y") + b"y")], b"xy"),
    "big chunk in S2": ([S2_ID, chunk(1, masked_crc(BIG) + BIG)], BIG),
    "big chunk in Snappy": ([SNAPPY_ID, chunk(1, masked_crc(BIG) + BIG)], None),
    "compressed": ([S2_ID, chunk(0, masked_crc(b"abcabcabc") + b"\x09\x08abc\x09\x03")],
                   b"abcabcabc"),
    "no identifier": ([chunk(1, masked_crc(b"hello") + b"hello")], None),
    "bad identifier": ([chunk(0xFF, b"sNaPpZ"), chunk(1, masked_crc(b"a") + b"a")], None),
    "short identifier": ([chunk(0xFF, b"S2sTw"), chunk(1, masked_crc(b"a") + b"a")], None),
    "reserved chunk": ([S2_ID, chunk(0x05, b"")], None),
    "crc mismatch": ([S2_ID, chunk(1, masked_crc(b"hellp") + b"hello")], None),
    "chunk shorter than its crc": ([S2_ID, chunk(1, b"abc")], None),
    "truncated chunk": ([S2_ID, chunk(1, masked_crc(b"hello") + b"hello")[:-1]], None),
    "repeat first": ([S2_ID, chunk(0, masked_crc(bytes(4)) + b"\x04\x01\x00")], None),
    "preamble too long": ([S2_ID, chunk(0, masked_crc(b"ab") + b"\x03\x04ab")], None),
}


@pytest.mark.parametrize("name", sorted(FRAMINGS))
def test_s2_framing_reads_alike(java, tmp_path, name):
    chunks, decoded = FRAMINGS[name]
    stream = b"".join(chunks)
    body_len = len(decoded) if decoded is not None else 5
    header = bytearray(b"cmp\x01")
    put_uvarint(header, body_len + 8)
    path = str(tmp_path / "1.blk")
    with open(path, "wb") as f:
        f.write(bytes(header) + stream + bytes(range(8)))
    expected = same_plain(java, path)
    if decoded is None:
        assert "error" in expected
    else:
        plain = decoded + bytes(range(8))
        assert expected == {"len": len(plain), "sha256": hashlib.sha256(plain).hexdigest()}


def test_a_plain_block_starting_with_cmp_stays_plain(java, tmp_path):
    # "cmp\x00" read as a record length is 7.0 MiB: a file that long is a plain block
    path = str(tmp_path / "1.blk")
    with open(path, "wb") as f:
        f.write(b"cmp\x00" + bytes(0x00706D63))
    assert same_plain(java, path)["len"] == 4 + 0x00706D63
    with open(path, "wb") as f:
        f.write(b"cmp\x07\x10" + bytes(20))     # short: a header with an unknown algorithm
    assert "error" in same_plain(java, path)


# ---- index.db -----------------------------------------------------------------------------

def node_count(deleted: list[int]) -> int:
    return len({seq >> 11 for seq in deleted})


@pytest.mark.parametrize("compression", ["none", "s2", "lz4"])
def test_index_written_by_jsstore_decodes_alike(java, jsstore_dirs, compression):
    state = same_index(java, "ORDERS", os.path.join(jsstore_dirs[compression], "index.db"))
    deleted = [b["deleted"] for b in state["blocks"]]
    assert any(node_count(d) >= 2 for d in deleted)          # several nodes in one set
    assert any(len(d) >= 2048 for d in deleted)               # a dense one
    assert any(s[0] == "orders.ü" for s in state["subjects"])


@pytest.mark.natsserver
def test_index_written_by_nats_server_decodes_alike(java, nats_dir):
    state = same_index(java, "CMP", os.path.join(nats_dir, "index.db"))
    assert any(node_count(b["deleted"]) >= 2 for b in state["blocks"])
    assert sum(len(b["deleted"]) for b in state["blocks"]) > 2048


def test_index_of_another_stream_name_fails_its_checksum(java, jsstore_dirs):
    path = os.path.join(jsstore_dirs["none"], "index.db")
    assert "checksum" in java.ask(f"index OTHER {path}")["error"]


@pytest.mark.parametrize("writer", WRITERS)
def test_index_with_a_flipped_byte_fails(java, request, writer, tmp_path):
    rng = random.Random(5)
    for name, msgs_dir in written_by(request, writer):
        with open(os.path.join(msgs_dir, "index.db"), "rb") as f:
            data = f.read()
        for at in list(range(12)) + rng.sample(range(len(data)), 40) + [len(data) - 1]:
            changed = bytearray(data)
            changed[at] ^= 1 << rng.randrange(8)
            path = str(tmp_path / "index.db")
            with open(path, "wb") as f:
                f.write(changed)
            assert "error" in same_index(java, name, path)
        for cut in (0, 1, 31, 32, len(data) // 2, len(data) - 1):
            with open(path, "wb") as f:
                f.write(data[:cut])
            assert "error" in same_index(java, name, path)


@pytest.mark.parametrize("writer", WRITERS)
def test_index_reread_with_checksums_redone(java, request, writer, tmp_path):
    """Truncated bodies and older version bytes, with a valid checksum: the structure is
    decoded (or rejected) alike."""
    path = str(tmp_path / "index.db")
    for name, msgs_dir in written_by(request, writer):
        with open(os.path.join(msgs_dir, "index.db"), "rb") as f:
            body = f.read()[:-8]
        cases = [body[:cut] for cut in range(24, len(body), max(1, len(body) // 97))]
        cases += [body[:1] + bytes([version]) + body[2:] for version in (1, 2, 3)]
        for case in cases:
            with open(path, "wb") as f:
                f.write(with_checksum(name, case))
            same_index(java, name, path)


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
       cut=st.integers(0, 10**6), head=st.booleans())
def test_index_random_edits_decode_alike(java, jsstore_dirs, tmp_path, edits, cut, head):
    """Edits anywhere, or in the first 200 bytes (the counts, subjects and block summaries
    before the deleted sets), with the checksum redone."""
    with open(os.path.join(jsstore_dirs["lz4"], "index.db"), "rb") as f:
        body = bytearray(f.read()[:-8])
    for at, value in edits:
        body[at % (200 if head else len(body))] = value
    if cut % 3 == 0:
        del body[max(2, cut % len(body)):]
    path = str(tmp_path / "index.db")
    with open(path, "wb") as f:
        f.write(with_checksum("ORDERS", bytes(body)))
    event("error" if "error" in same_index(java, "ORDERS", path) else "decoded")
