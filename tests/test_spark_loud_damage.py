"""Loud or right: a read of a damaged store returns every message or fails naming the file,
the offset and the sequences it cannot give (option fail_on_data_loss, default true); with
fail_on_data_loss=false it gives exactly the messages that can still be read.

Each damage shape is made on a small store that jsstore wrote and stopped cleanly (so its
index.db describes the blocks), and the sequences that must be reported missing are worked
out here from the block bytes (the records the damage touches), not by the readers. Both
readers (the Python source and the JVM one) are held to the same answer, and a store that
nats-server wrote, damaged the same way, fails the same way.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import random
import re
import shutil

import pytest

import jsstore
from jsstore import StoreOptions

pytestmark = pytest.mark.spark

SUBJECTS = ("orders.eu.new", "orders.eu.paid", "orders.us.new")
SEQ_MASK = (1 << 62) - 1
RECORD_EMPTY_LEN = 30


def record_spans(data: bytes):
    """(offset, length, seq, kind) of every record of plain block bytes; kind is "msg",
    "erased" or "tomb"."""
    out, pos = [], 0
    while pos + RECORD_EMPTY_LEN <= len(data):
        length = int.from_bytes(data[pos:pos + 4], "little") & 0x7FFFFFFF
        if length < RECORD_EMPTY_LEN or pos + length > len(data):
            break
        raw = int.from_bytes(data[pos + 4:pos + 12], "little")
        kind = "erased" if raw >> 63 else "tomb" if (raw >> 62) & 1 else "msg"
        out.append((pos, length, raw & SEQ_MASK, kind))
        pos += length
    return out


def fill(directory, compression="none", count=400, deletes=(7, 150, 151, 152, 301)):
    """A stopped store (index.db written): {seq: subject} of the live messages."""
    live = {}
    with jsstore.open(directory, StoreOptions(block_size=4096)) as js:
        js.add_stream(name="ORDERS", subjects=["orders.>"], compression=compression)
        for i in range(count):
            subject = SUBJECTS[i % 3]
            live[js.publish(subject, b"payload-%05d" % i + b"x" * (i % 40)).seq] = subject
        for seq in deletes:
            js.delete_msg("ORDERS", seq, no_erase=seq % 2 == 0)
            del live[seq]
    return live


def msgs_dir(store):
    return glob.glob(os.path.join(store, "jetstream", "*", "streams", "ORDERS", "msgs"))[0]


def blocks(store):
    found = glob.glob(os.path.join(msgs_dir(store), "*.blk"))
    return sorted(found, key=lambda p: int(os.path.basename(p).split(".")[0]))


def message_seqs(path):
    with open(path, "rb") as f:
        return [seq for _o, _l, seq, kind in record_spans(f.read()) if kind == "msg"]


# -- damage shapes: each changes the store and returns the sequences a read loses -----------

def garbage_in_the_middle(store, live, rng):
    """1 KiB of random bytes over the middle of a sealed block: the messages whose records
    it touches are lost, the intact ones after it are still read."""
    path = blocks(store)[1]
    with open(path, "rb") as f:
        data = f.read()
    start = len(data) // 2 - 512
    end = start + 1024
    lost = {seq for off, length, seq, kind in record_spans(data)
            if kind == "msg" and off < end and off + length > start}
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(rng.randbytes(1024))
    return path, lost & set(live)


def bad_checksum(store, live, rng):
    """One byte of one message's payload changed in a sealed block: that message is lost."""
    path = blocks(store)[2]
    with open(path, "rb") as f:
        data = f.read()
    off, length, seq, _kind = [s for s in record_spans(data) if s[3] == "msg" and s[2] in live][5]
    with open(path, "r+b") as f:
        f.seek(off + length - 10)
        byte = f.read(1)
        f.seek(off + length - 10)
        f.write(bytes([byte[0] ^ 0x41]))
    return path, {seq}


def torn_tail(store, live, rng):
    """The last block cut in the middle of a record: the messages after the cut are lost
    (index.db knew them)."""
    path = blocks(store)[-1]
    with open(path, "rb") as f:
        data = f.read()
    spans = [s for s in record_spans(data) if s[3] == "msg"]
    cut = spans[-6][0] + 9
    with open(path, "r+b") as f:
        f.truncate(cut)
    return path, {s[2] for s in spans[-6:]} & set(live)


def truncated_to_zero(store, live, rng):
    """A sealed block emptied: every message it held is lost."""
    path = blocks(store)[2]
    lost = set(message_seqs(path)) & set(live)
    with open(path, "r+b") as f:
        f.truncate(0)
    return path, lost


def missing_block(store, live, rng):
    """A block file in the middle of the sequence range removed."""
    path = blocks(store)[1]
    lost = set(message_seqs(path)) & set(live)
    os.unlink(path)
    return path, lost


def index_disagrees(store, live, rng):
    """A sealed block rewritten without two of its records (intact, with their hashes): a
    current index.db says the block holds them."""
    path = blocks(store)[3]
    with open(path, "rb") as f:
        data = f.read()
    spans = [s for s in record_spans(data) if s[3] == "msg" and s[2] in live]
    gone = spans[3:5]
    kept = b"".join(data[off:off + length] for off, length, _s, _k in record_spans(data)
                    if (off, length) not in {(g[0], g[1]) for g in gone})
    with open(path, "r+b") as f:
        f.write(kept)
        f.truncate(len(kept))
    return path, {g[2] for g in gone}


def compressed_corrupt(store, live, rng):
    """A byte in the middle of a compressed (s2 or lz4) sealed block changed: the block
    does not decompress, every message it held is lost."""
    from jsstore.spark.planning import read_plain_block
    path = blocks(store)[1]
    lost = {seq for _o, _l, seq, kind in record_spans(read_plain_block(path)) if kind == "msg"}
    with open(path, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(size // 2)
        byte = f.read(1)
        f.seek(size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    return path, lost & set(live)


SHAPES = {
    "garbage in the middle": (garbage_in_the_middle, "none"),
    "bad checksum": (bad_checksum, "none"),
    "torn tail": (torn_tail, "none"),
    "truncated to zero": (truncated_to_zero, "none"),
    "missing block": (missing_block, "none"),
    "index.db disagrees": (index_disagrees, "none"),
    "s2 corrupt": (compressed_corrupt, "s2"),
    "lz4 corrupt": (compressed_corrupt, "lz4"),
}


def read(spark, fmt, store, **options):
    reader = spark.read.format(fmt).option("path", store).option("stream", "ORDERS")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def named_seqs(message: str) -> set[int]:
    """The sequences an error names ("sequences 5-9, 12 (")."""
    found = re.search(r"sequences ([0-9, \-]+)", message)
    assert found, message[:3000]
    out = set()
    for part in found.group(1).split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def check_loud_then_lenient(spark, fmt, store, path, live, lost):
    assert lost, "the damage must cost messages"
    with pytest.raises(Exception) as caught:
        read(spark, fmt, store).select("seq").collect()
    text = str(caught.value)
    assert os.path.basename(path) in text, text[:3000]
    assert "fail_on_data_loss" in text
    assert named_seqs(text) == lost, text[:3000]
    got = sorted(r["seq"] for r in read(spark, fmt, store, fail_on_data_loss="false")
                 .select("seq").collect())
    assert got == sorted(set(live) - lost)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_damaged_store_fails_naming_what_is_missing(spark, source_format, tmp_path, shape):
    damage, compression = SHAPES[shape]
    store = str(tmp_path / "store")
    live = fill(store, compression)
    path, lost = damage(store, live, random.Random(shape))
    check_loud_then_lenient(spark, source_format, store, path, live, lost)


def test_garbage_in_an_open_stores_last_block(spark, source_format, tmp_path):
    """No index.db (a store that is open or crashed): garbage in the middle of the last
    block still costs the messages it covers, found between the intact records around it."""
    store = str(tmp_path / "store")
    live = fill(store)
    os.unlink(os.path.join(msgs_dir(store), "index.db"))
    path = blocks(store)[-1]
    with open(path, "rb") as f:
        data = f.read()
    spans = [s for s in record_spans(data) if s[3] == "msg"]
    start, end = spans[2][0], spans[4][0] + 3
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(b"\xa5" * (end - start))
    lost = {s[2] for s in spans if s[0] < end and s[0] + s[1] > start} & set(live)
    check_loud_then_lenient(spark, source_format, store, path, live, lost)


def test_a_write_cut_short_at_the_end_is_the_end(spark, source_format, tmp_path):
    """No index.db and the last record of the last block cut short (a write a crash
    interrupted, which nats-server's and jsstore's recovery drop): nothing else is known to
    be missing, so the read gives every intact message; a byte changed in a record before
    it is still a loss."""
    store = str(tmp_path / "store")
    live = fill(store, deletes=())
    os.unlink(os.path.join(msgs_dir(store), "index.db"))
    path = blocks(store)[-1]
    with open(path, "rb") as f:
        spans = [s for s in record_spans(f.read()) if s[3] == "msg"]
    with open(path, "r+b") as f:
        f.truncate(spans[-1][0] + 12)
    intact = set(live) - {spans[-1][2]}
    got = sorted(r["seq"] for r in read(spark, source_format, store).select("seq").collect())
    assert got == sorted(intact)
    off, length, seq, _kind = spans[-3]
    with open(path, "r+b") as f:
        f.seek(off + length - 9)
        byte = f.read(1)
        f.seek(off + length - 9)
        f.write(bytes([byte[0] ^ 0x41]))
    check_loud_then_lenient(spark, source_format, store, path, intact, {seq})


# -- the same damage on a store nats-server wrote --------------------------------------------

async def _fill_nats(url):
    import nats

    nc = await nats.connect(url)
    try:
        config = {"name": "ORDERS", "subjects": ["orders.>"], "storage": "file"}
        reply = await nc.request("$JS.API.STREAM.CREATE.ORDERS", json.dumps(config).encode(), timeout=10)
        assert b'"error"' not in reply.data, reply.data
        js = nc.jetstream()
        live = {}
        for i in range(400):
            ack = await js.publish(SUBJECTS[i % 3], b"payload-%05d" % i + b"x" * (i % 40))
            live[ack.seq] = SUBJECTS[i % 3]
        for seq in (7, 150):
            reply = await nc.request("$JS.API.STREAM.MSG.DELETE.ORDERS",
                                     json.dumps({"seq": seq}).encode(), timeout=10)
            assert b'"success":true' in reply.data, reply.data
            del live[seq]
        return live
    finally:
        await nc.close()


@pytest.fixture(scope="module")
def nats_store(tmp_path_factory):
    from natsserver import nats_server, require_nats_server

    require_nats_server()
    store = str(tmp_path_factory.mktemp("nats-written"))
    with nats_server(store) as server:
        live = asyncio.run(_fill_nats(server.url))
    return store, live


async def _unreadable(url, seqs):
    """The sequences nats-server cannot give (STREAM.MSG.GET answers an error)."""
    import nats

    nc = await nats.connect(url)
    try:
        out = set()
        for seq in seqs:
            reply = await nc.request("$JS.API.STREAM.MSG.GET.ORDERS",
                                     json.dumps({"seq": seq}).encode(), timeout=10)
            if b'"error"' in reply.data:
                out.add(seq)
        return out
    finally:
        await nc.close()


@pytest.mark.parametrize("shape", ["garbage in the middle", "bad checksum", "torn tail"])
def test_a_damaged_nats_server_store_fails_the_same_way(spark, source_format, tmp_path,
                                                         nats_store, shape):
    """nats-server writes one block for this stream (its blocks are large): the damage goes
    into it, and both readers name the same messages as for a jsstore store. nats-server,
    started on a copy of the damaged store, cannot give exactly those messages either (a bad
    checksum, a torn tail); with garbage in the middle it drops the rest of the block from
    the damage on (its recovery truncates there), where the readers go on at the next
    intact record."""
    from natsserver import nats_server

    original, live = nats_store
    store = str(tmp_path / "copy")
    shutil.copytree(original, store)
    only = blocks(store)
    assert len(only) == 1
    if shape == "garbage in the middle":
        path = only[0]
        with open(path, "rb") as f:
            data = f.read()
        start = len(data) // 2 - 512
        lost = {seq for off, length, seq, kind in record_spans(data)
                if kind == "msg" and off < start + 1024 and off + length > start} & set(live)
        with open(path, "r+b") as f:
            f.seek(start)
            f.write(random.Random(3).randbytes(1024))
    elif shape == "bad checksum":
        path = only[0]
        with open(path, "rb") as f:
            data = f.read()
        off, length, seq, _k = [s for s in record_spans(data) if s[3] == "msg" and s[2] in live][100]
        with open(path, "r+b") as f:
            f.seek(off + length - 10)
            byte = f.read(1)
            f.seek(off + length - 10)
            f.write(bytes([byte[0] ^ 0x41]))
        lost = {seq}
    else:
        path, lost = torn_tail(store, live, None)
    served = str(tmp_path / "served")
    shutil.copytree(store, served)
    check_loud_then_lenient(spark, source_format, store, path, live, lost)
    with nats_server(served) as server:
        unreadable = asyncio.run(_unreadable(server.url, sorted(live)))
    if shape == "garbage in the middle":
        assert lost <= unreadable and min(unreadable) == min(lost)
        assert unreadable == {seq for seq in live if seq >= min(lost)}
    else:
        assert unreadable == lost


def test_a_streaming_read_of_a_damaged_store_fails_the_same_way(spark, tmp_path):
    """spark.readStream (the Python source) accounts for every micro-batch as a batch read
    does; with fail_on_data_loss=false it streams what is readable."""
    store = str(tmp_path / "store")
    live = fill(store)
    path, lost = bad_checksum(store, live, None)

    def run(name, **options):
        reader = (spark.readStream.format("jsstore").option("path", store).option("stream", "ORDERS")
                  .option("maxMessagesPerTrigger", "150"))
        for key, value in options.items():
            reader = reader.option(key, value)
        query = (reader.load().select("seq").writeStream.format("memory").queryName(name)
                 .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start())
        try:
            query.awaitTermination(180)
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            return sorted(r["seq"] for r in spark.sql(f"SELECT seq FROM {name}").collect())
        finally:
            query.stop()

    with pytest.raises(Exception) as caught:
        run("loud_damaged_stream")
    assert os.path.basename(path) in str(caught.value) and named_seqs(str(caught.value)) == lost
    assert run("lenient_damaged_stream", fail_on_data_loss="false") == sorted(set(live) - lost)


def test_damage_after_a_clean_read_is_found_by_the_next(spark, tmp_path):
    """The JVM reader does not hash again the records of a block it checked whole and that
    is unchanged since (its size, modification time and last bytes); a block changed since,
    as any write changes it, is checked again: a clean read, then a flipped byte, then a
    read that fails naming it. Both reads of the clean store give the same rows."""
    store = str(tmp_path / "store")
    live = fill(store)
    first = sorted(r["seq"] for r in read(spark, "jsstore-jvm", store).select("seq").collect())
    again = sorted(r["seq"] for r in read(spark, "jsstore-jvm", store).select("seq").collect())
    assert first == again == sorted(live)
    path, lost = bad_checksum(store, live, random.Random(1))
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # (a later write)
    check_loud_then_lenient(spark, "jsstore-jvm", store, path, live, lost)
