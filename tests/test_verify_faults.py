"""jsstore verify on crafted damage, in stores written by `jsstore serve` and by
nats-server (a stream of 90 messages in three blocks: 1..31, 32..62, 63..90, and a
consumer that acked 5): each fault is reported with the file, what is wrong and what is
lost (exit 1), and the state verify reports is the state a jsstore reopen recovers, and
the state nats-server finds when it is started on the same damaged copy -- except where
they trust index.db without reading the damaged block, noted in the table: nats-server
walks the first and last blocks' records at the start but checks hashes only when a
message is read; a jsstore reopen walks the last block only (hashes checked).

Faults: a flipped byte in a record of the first and of a middle block, a torn tail,
garbage in the middle of a block, a missing block in the middle; index.db with a wrong count, a lower or higher last
sequence, a wrong checksum, cut in half, and one that is consistent but lies about the
blocks; a corrupt and an inconsistent o.dat; meta.inf not matching meta.sum."""

from __future__ import annotations

import json
import os
import shutil

import nats
import pytest
from bothservers import run
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

import jsstore
from jsstore._core.storage.hashing import highway64_digest, meta_hash_key
from jsstore.cli import main
from jsstore.gocompat.varints import put_uvarint, put_varint
from jsstore.store.indexdb import decode_index

pytestmark = pytest.mark.natsserver

STREAM = os.path.join("jetstream", "$G", "streams", "F")
MSGS = os.path.join(STREAM, "msgs")
RECORD = 22 + 1 + 1000 + 8          # subject "f", 1000 bytes of payload
BLOCKS = {1: (1, 31), 2: (32, 62), 3: (63, 90)}


async def _write(url) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        # max_bytes 120,000: 32,000-byte blocks in both servers, and nothing removed
        await js.add_stream(name="F", subjects=["f"], max_bytes=120_000)
        for n in range(90):
            await js.publish("f", bytes([n]) * 1000)
        sub = await js.pull_subscribe("f", durable="C")
        for msg in await sub.fetch(5, timeout=5):
            await msg.ack_sync()
    finally:
        await nc.close()


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict:
    require_nats_server()
    root = tmp_path_factory.mktemp("faults")
    with jsstore_server(root / "jsstore") as server:
        run(_write(server.url))
    with nats_server(root / "nats-server") as server:
        run(_write(server.url))
    for writer in ("jsstore", "nats-server"):
        assert sorted(os.listdir(root / writer / MSGS)) == ["1.blk", "2.blk", "3.blk",
                                                           "index.db"]
    return {"jsstore": root / "jsstore", "nats-server": root / "nats-server"}


# -- the faults ------------------------------------------------------------------------
def _edit(path, change) -> None:
    with open(path, "rb") as f:
        data = bytearray(f.read())
    change(data)
    with open(path, "wb") as f:
        f.write(bytes(data))


def _flip(path, offset: int) -> None:
    def change(data):
        data[offset] ^= 0x40
    _edit(path, change)


def _encode_index(name: str, st: dict) -> bytes:
    """index.db from decode_index's description (no deleted sets), as version 4."""
    out = bytearray([11, 4])
    for value in (st["msgs"], st["bytes"], st["first_seq"]):
        put_uvarint(out, value)
    put_varint(out, st["first_ts"])
    put_uvarint(out, st["last_seq"])
    put_varint(out, st["last_ts"])
    put_uvarint(out, len(st["subjects"]))
    for subject, total, fblk, lblk in st["subjects"]:
        put_uvarint(out, len(subject))
        out += subject
        for value in (total, fblk, lblk):
            put_uvarint(out, value)
    put_uvarint(out, len(st["blocks"]))
    for b in st["blocks"]:
        assert not b["deleted"]
        for value in (b["index"], b["bytes"], b["first_seq"]):
            put_uvarint(out, value)
        put_varint(out, b["first_ts"] - st["first_ts"])
        put_uvarint(out, b["last_seq"])
        put_varint(out, b["last_ts"] - st["first_ts"])
        for value in (0, 0, 0):          # deleted, ttls, schedules
            put_uvarint(out, value)
    put_uvarint(out, st["last_index"])
    out += st["lchk"]
    return bytes(out + highway64_digest(meta_hash_key(name), bytes(out)))


def _restate(store, change) -> None:
    path = os.path.join(store, MSGS, "index.db")
    with open(path, "rb") as f:
        st = decode_index("F", f.read())
    with open(path, "rb") as f:
        assert _encode_index("F", st) == f.read()       # the encoder is faithful
    change(st)
    with open(path, "wb") as f:
        f.write(_encode_index("F", st))


def _msgs(field, delta):
    def change(st):
        st[field] += delta
    return change


def _last_block_lie(st):
    """More messages in the last block than it holds, told consistently (totals and the
    block's range agree, the last record's hash is the real one)."""
    st["blocks"][-1]["last_seq"] += 5
    st["last_seq"] += 5
    st["msgs"] += 5


def _first_block_lie(st):
    """Messages 1 and 2 gone, told consistently; the block still holds them (no tombstone,
    no limit removes them: a crash would bring them back)."""
    st["blocks"][0]["first_seq"] = 3
    st["blocks"][0]["bytes"] -= 2 * RECORD
    st["first_seq"] = 3
    st["msgs"] -= 2
    st["bytes"] -= 2 * RECORD


def _middle_garbage(path):
    def change(data):
        data[10_000:10_000 + 4096] = bytes((n * 7 + 3) % 256 for n in range(4096))
    _edit(path, change)


def _block(store, index):
    return os.path.join(store, MSGS, f"{index}.blk")


def _index(store):
    return os.path.join(store, MSGS, "index.db")


def _odat(store):
    return os.path.join(store, STREAM, "obs", "C", "o.dat")


def _write_bytes(path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _odat_past_the_stream(store) -> None:
    out = bytearray([22, 2])
    for value in (5, 5, 5, 200, 0, 0):   # ack floor 5/5, delivered 5/200, none pending
        put_uvarint(out, value)
    _write_bytes(_odat(store), bytes(out))


LOST_6_31 = list(range(6, 32))
# name: (damage, [(file, problem starts with, lost (first, last) ranges)],
#        (messages, last_seq) verify reports,
#        ((messages, last_seq), lost messages) of a jsstore reopen of the copy,
#        the same of a jsstore reopen of the copy without index.db, where it differs (the
#        reopen trusted index.db and did not read the damaged block),
#        (messages, last_seq) of nats-server started on the copy)
FAULTS = {
    "flipped byte": (lambda s: _flip(_block(s, 1), 5 * RECORD + 500),
                     [("1.blk", "bad record at offset 5155", [[6, 31]])], (64, 90),
                     ((90, 90), []), ((64, 90), LOST_6_31), (90, 90)),
    "flipped byte in a middle block": (
        lambda s: _flip(_block(s, 2), 4 * RECORD + 500),
        [("2.blk", "bad record at offset 4124", [[36, 62]])], (63, 90),
        ((90, 90), []), ((63, 90), list(range(36, 63))), (90, 90)),
    "torn tail": (lambda s: os.truncate(_block(s, 3), os.path.getsize(_block(s, 3)) - 5),
                  [("3.blk", "truncated record at offset 27837", [[90, 90]])], (89, 90),
                  ((89, 90), [90]), None, (89, 90)),
    "garbage in a block": (lambda s: _middle_garbage(_block(s, 1)),
                           [("1.blk", "bad record at offset 9279", [[10, 31]])], (68, 90),
                           ((90, 90), []), ((68, 90), list(range(10, 32))), (68, 90)),
    "missing middle block": (lambda s: os.unlink(_block(s, 2)),
                             [("2.blk", "missing block (listed in index.db)", [[32, 62]])],
                             (59, 90), ((59, 90), list(range(32, 63))), None, (59, 90)),
    "index.db wrong count": (lambda s: _restate(s, _msgs("msgs", 1)),
                             [("index.db", "stale: it counts 91 messages, its blocks add "
                                           "up to 90", [])],
                             (90, 90), ((90, 90), []), None, (90, 90)),
    "index.db lower last sequence": (
        lambda s: _restate(s, _msgs("last_seq", -1)),
        [("index.db", "stale: it says last sequence 89, its blocks end at 90", [])],
        (90, 90), ((90, 90), []), None, (90, 90)),
    "index.db higher last sequence": (
        lambda s: _restate(s, _msgs("last_seq", 5)),
        [("index.db", "stale: it says last sequence 95, its blocks end at 90", [])],
        (90, 95), ((90, 95), []), None, (90, 95)),
    "index.db lies about the last block": (
        lambda s: _restate(s, _last_block_lie),
        [("index.db", "stale: it says its last block ends at 95, its records end at 90",
          [])],
        (90, 95), ((90, 95), []), None, (90, 90)),
    "index.db lies about the first block": (
        lambda s: _restate(s, _first_block_lie),
        [("index.db", "wrong: it says first sequence 3, the blocks start at 1; it counts 88 "
                      "messages, the blocks hold 90", [])],
        (90, 90), ((88, 90), []), ((90, 90), []), (88, 90)),
    "index.db wrong checksum": (lambda s: _flip(_index(s), os.path.getsize(_index(s)) - 3),
                                [("index.db", "corrupt: index.db: checksum mismatch", [])],
                                (90, 90), ((90, 90), []), None, (90, 90)),
    "index.db cut in half": (lambda s: os.truncate(_index(s), os.path.getsize(_index(s)) // 2),
                             [("index.db", "corrupt: index.db: ", [])],
                             (90, 90), ((90, 90), []), None, (90, 90)),
    "o.dat corrupt": (lambda s: _write_bytes(_odat(s), b"\x16\x02garbage"),
                      [("o.dat", "corrupt consumer state", [])],
                      (90, 90), ((90, 90), []), None, (90, 90)),
    "o.dat past the stream": (_odat_past_the_stream,
                              [("o.dat", "inconsistent consumer state: delivered stream "
                                         "sequence 200", [])],
                              (90, 90), ((90, 90), []), None, (90, 90)),
    "meta.sum mismatch": (lambda s: _write_bytes(os.path.join(s, STREAM, "meta.sum"),
                                                 b"0" * 16),
                          [("F", "meta.inf checksum does not match meta.sum", [])],
                          None, None, None, None),
}


def _verify(capsys, store) -> tuple[int, dict, str]:
    code = main(["verify", "--store", os.fspath(store), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert main(["verify", "--store", os.fspath(store)]) == code
    return code, report, capsys.readouterr().out


async def _nats_server_state(url):
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info("F")
        return info.state.messages, info.state.last_seq
    except nats.js.errors.NotFoundError:
        return None
    finally:
        await nc.close()


def _jsstore_state(store):
    js = jsstore.open(os.fspath(store))
    try:
        if "F" in js.unrecovered:
            return None, None
        state = js.stream_info("F").state
        return (state.messages, state.last_seq), (state.lost.msgs if state.lost else [])
    finally:
        js.close()


@pytest.mark.parametrize("writer", ["jsstore", "nats-server"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_is_found(bases, writer, fault, tmp_path, capsys):
    damage, expected, state, reopen, rebuilt, nats_state = FAULTS[fault]
    store = tmp_path / "store"
    shutil.copytree(bases[writer], store)
    assert _verify(capsys, store)[0] == 0
    damage(store)
    code, report, text = _verify(capsys, store)
    assert code == 1 and not report["ok"] and text.endswith("damaged\n")
    (stream,) = report["streams"]
    got = [(os.path.basename(f["path"]), f["problem"], f["lost_seqs"])
           for f in stream["findings"]]
    assert [(path, problem[:len(want)], lost) for (path, problem, lost), (_p, want, _l)
            in zip(got, expected)] == expected, got
    assert len(got) == len(expected), got
    if state is not None:
        assert (stream["messages"], stream["last_seq"]) == state

    # jsstore reopens a copy as it is, and one without index.db
    reopened = tmp_path / "reopened"
    shutil.copytree(store, reopened)
    assert _jsstore_state(reopened) == (reopen if reopen is not None else (None, None))
    if rebuilt is not None:
        rebuilt_copy = tmp_path / "rebuilt"
        shutil.copytree(store, rebuilt_copy)
        os.unlink(_index(rebuilt_copy))
        assert _jsstore_state(rebuilt_copy) == rebuilt

    # nats-server started on a copy of the damaged store
    served = tmp_path / "served"
    shutil.copytree(store, served)
    with nats_server(served) as server:
        assert run(_nats_server_state(server.url)) == nats_state


def test_verify_changes_nothing_in_a_damaged_store(bases, tmp_path, capsys):
    store = tmp_path / "store"
    shutil.copytree(bases["nats-server"], store)
    FAULTS["torn tail"][0](store)
    FAULTS["missing middle block"][0](store)
    before = {name: open(os.path.join(store, MSGS, name), "rb").read()
              for name in os.listdir(os.path.join(store, MSGS))}
    assert _verify(capsys, store)[0] == 1
    assert {name: open(os.path.join(store, MSGS, name), "rb").read()
            for name in os.listdir(os.path.join(store, MSGS))} == before
