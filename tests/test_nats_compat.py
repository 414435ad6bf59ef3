"""On-disk compatibility with the reference nats-server, in both directions.

nats-server -> jsstore: the server writes a stream (publishes, deletes, subject purges),
its view of every message and of the stream state is read over the JetStream API, the
server is stopped and jsstore opens the stream directory, with the server's index.db and
with index.db removed (a rebuild from the blocks and tombstones).

jsstore -> nats-server: jsstore writes a stream directory, the server is started on it and
everything jsstore wrote must come back over the JetStream API, with our index.db, without
it, and with S2-compressed sealed blocks.
"""

from __future__ import annotations

import asyncio
import base64
import calendar
import json
import os
import shutil
import time

import pytest

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore.store import indexdb as statefile
from jsstore.store.config import stream_config_from_json, stream_config_json
from jsstore.errors import StoreEOF
from jsstore._core.storage.hashing import meta_hash_key, meta_sum

from natsserver import nats_server, require_nats_server

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

ZERO_TIME = "0001-01-01T00:00:00Z"


# -- helpers -------------------------------------------------------------------------------

def rfc3339_to_ns(text: str) -> int:
    """Unix nanoseconds of an RFC 3339 time as nats-server prints it (0 for Go's zero time)."""
    if text.startswith("0001-01-01T00:00:00"):
        return 0
    offset = 0
    if text.endswith("Z"):
        text = text[:-1]
    else:
        sign = 1 if text[-6] == "+" else -1
        offset = sign * (int(text[-5:-3]) * 3600 + int(text[-2:]) * 60)
        text = text[:-6]
    whole, _, frac = text.partition(".")
    seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) - offset
    return seconds * 1_000_000_000 + int((frac + "000000000")[:9])


def run(coro):
    return asyncio.run(coro)


async def api(nc, subject: str, request: dict | None = None) -> dict:
    payload = json.dumps(request).encode() if request is not None else b""
    reply = await nc.request(subject, payload, timeout=10)
    return json.loads(reply.data)


async def read_stream(url: str, name: str) -> tuple[dict, dict]:
    """The stream state (with deleted details and per-subject counts) and every stored
    message as {seq: (subject, header bytes or None, payload, ts)}, as the server sees them."""
    nc = await nats.connect(url)
    try:
        info = await api(nc, f"$JS.API.STREAM.INFO.{name}",
                         {"deleted_details": True, "subjects_filter": ">"})
        assert "error" not in info, info
        state = info["state"]
        messages = {}
        seqs = list(range(state["first_seq"], state["last_seq"] + 1))
        for start in range(0, len(seqs), 256):
            chunk = seqs[start:start + 256]
            replies = await asyncio.gather(*(api(nc, f"$JS.API.STREAM.MSG.GET.{name}", {"seq": s})
                                             for s in chunk))
            for seq, reply in zip(chunk, replies):
                if "error" in reply:
                    assert reply["error"]["err_code"] == 10037, reply  # no message found
                    continue
                m = reply["message"]
                assert m["seq"] == seq
                hdr = base64.b64decode(m["hdrs"]) if m.get("hdrs") else None
                data = base64.b64decode(m["data"]) if m.get("data") else b""
                messages[seq] = (m["subject"], hdr, data, rfc3339_to_ns(m["time"]))
        return state, messages
    finally:
        await nc.close()


def payload(i: int) -> bytes:
    size = (i * 37) % 211
    return bytes((i + k) % 251 for k in range(size))


SMALL_SUBJECTS = ["orders.new.1", "orders.new.2", "orders.ship.eu", "orders.ship.us.west",
                  "events.a", "events.b", "events.c", "misc"]


async def write_small_with_nats(url: str, name: str) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=name, subjects=["orders.>", "events.*", "misc"], storage="file")
        for i in range(1, 401):
            subject = SMALL_SUBJECTS[(i * 7) % len(SMALL_SUBJECTS)]
            headers = {"X-Id": str(i), "Trace": "t-%d" % (i % 5)} if i % 3 == 0 else None
            await js.publish(subject, payload(i), headers=headers)
        for seq in (1, 5, 6, 7, 100, 101, 250, 399):
            assert await js.delete_msg(name, seq)
        await js.purge_stream(name, subject="events.a")
        await js.purge_stream(name, subject="orders.new.1", keep=3)
        await js.purge_stream(name, subject="events.b", seq=200)
        for i in range(401, 431):
            subject = SMALL_SUBJECTS[i % len(SMALL_SUBJECTS)]
            await js.publish(subject, payload(i), headers={"Late": "yes"} if i % 2 else None)
        assert await js.delete_msg(name, 430)  # the last message: last_seq stays
        await nc.flush()
    finally:
        await nc.close()


async def write_large_with_nats(url: str, name: str) -> None:
    """About 10 MB: more than one 8 MiB block."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=name, subjects=["big.>"], storage="file")
        body = bytes(range(256)) * 16  # 4 KiB
        futures = []
        for i in range(1, 2601):
            subject = f"big.{i % 13}.{'x' if i % 2 else 'y'}"
            headers = {"N": str(i)} if i % 10 == 0 else None
            futures.append(js.publish(subject, body[: 3000 + i % 1000] + i.to_bytes(4, "big"),
                                      headers=headers))
            if len(futures) == 100:
                await asyncio.gather(*futures)
                futures = []
        await asyncio.gather(*futures)
        for seq in (2, 3, 1000, 2000, 2100, 2599):
            assert await js.delete_msg(name, seq)
        await js.purge_stream(name, subject="big.5.x", keep=10)
        await js.purge_stream(name, subject="big.7.y")
        await nc.flush()
    finally:
        await nc.close()


async def write_compacted_with_nats(url: str, name: str) -> None:
    """S2-compressed sealed blocks, a configured first sequence, a compaction (purge up to a
    sequence), erases in both blocks and a full purge of one subject with tombstones."""
    nc = await nats.connect(url)
    try:
        reply = await api(nc, f"$JS.API.STREAM.CREATE.{name}", {
            "name": name, "subjects": ["cmp.*"], "storage": "file", "compression": "s2",
            "first_seq": 50, "retention": "limits", "discard": "old", "num_replicas": 1})
        assert "error" not in reply, reply
        js = nc.jetstream()
        body = bytes(range(256)) * 16
        futures = []
        for i in range(1, 2601):
            futures.append(js.publish(f"cmp.{i % 9}", body[: 3000 + i % 1000] + i.to_bytes(4, "big"),
                                      headers={"K": str(i)} if i % 7 == 0 else None))
            if len(futures) == 100:
                await asyncio.gather(*futures)
                futures = []
        await asyncio.gather(*futures)
        await js.purge_stream(name, seq=400)  # everything below seq 400
        for seq in (400, 401, 402, 1200, 2300, 2640):
            assert await js.delete_msg(name, seq)
        nc2 = await api(nc, f"$JS.API.STREAM.MSG.DELETE.{name}", {"seq": 900, "no_erase": True})
        assert nc2.get("success"), nc2
        await js.purge_stream(name, subject="cmp.4")
        await nc.flush()
    finally:
        await nc.close()


def assert_store_matches(fs, state: dict, messages: dict) -> None:
    """Everything jsstore holds equals what nats-server reported."""
    st = fs.state()
    assert st.messages == state["messages"]
    assert st.bytes == state["bytes"]
    assert st.first_seq == state["first_seq"]
    assert st.last_seq == state["last_seq"]
    assert st.first_ts == rfc3339_to_ns(state["first_ts"])
    assert st.last_ts == rfc3339_to_ns(state["last_ts"])
    assert st.num_deleted == state.get("num_deleted", 0)
    assert sorted(st.deleted or []) == sorted(state.get("deleted") or [])
    assert st.num_subjects == state.get("num_subjects", 0)
    assert fs.subjects_totals(">") == (state.get("subjects") or {})
    for seq in range(state["first_seq"], state["last_seq"] + 1):
        if seq in messages:
            subject, hdr, data, ts = messages[seq]
            sm = fs.load_msg(seq)
            assert (sm.seq, sm.subject, sm.hdr or None, bytes(sm.msg), sm.ts) == (seq, subject, hdr, data, ts)
        else:
            with pytest.raises(Exception):
                fs.load_msg(seq)
    # walk by subject filter as well: the subject index must agree with the messages
    seen, seq = [], 0
    while True:
        try:
            sm, seq = fs.load_next_msg(">", seq + 1 if seen else state["first_seq"])
        except StoreEOF:
            break
        seen.append(seq)
    assert seen == sorted(messages)


def nats_stream_dir(store_dir, name: str) -> str:
    return jsstore.stream_dir(os.fspath(store_dir), name)


def open_like_nats(directory: str) -> jsstore.FileStore:
    with open(os.path.join(directory, "meta.inf"), "rb") as f:
        config = stream_config_from_json(json.loads(f.read()))
    return jsstore.FileStore(directory, config, StoreOptions(sync_interval=0))


# -- nats-server -> jsstore ----------------------------------------------------------------

@pytest.fixture(scope="module")
def nats_written(tmp_path_factory):
    """Store directories written by nats-server (pristine copies) and what it reported."""
    require_nats_server()
    root = tmp_path_factory.mktemp("nats-written")
    out = {}
    for name, writer in (("SMALL", write_small_with_nats), ("LARGE", write_large_with_nats),
                         ("COMPACTED", write_compacted_with_nats)):
        sd = root / name
        with nats_server(sd) as server:
            run(writer(server.url, name))
            state, messages = run(read_stream(server.url, name))
            server.stop()
            log = server.log_text()
        # nats-server's own view after a rebuild from the blocks (index.db removed): it can
        # differ from the live view (the last time is zero when the last message was erased)
        rebuilt_sd = root / (name + "-rebuilt")
        shutil.copytree(sd, rebuilt_sd)
        os.unlink(os.path.join(nats_stream_dir(rebuilt_sd, name), "msgs", "index.db"))
        with nats_server(rebuilt_sd) as server:
            rebuilt_state, rebuilt_messages = run(read_stream(server.url, name))
        assert rebuilt_messages == messages
        out[name] = (nats_stream_dir(sd, name), state, messages, log, rebuilt_state)
    return out


def _copy_stream(src: str, dst) -> str:
    dst = os.fspath(dst)
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("name", ["SMALL", "LARGE", "COMPACTED"])
@pytest.mark.parametrize("with_index", [True, False], ids=["index.db", "rebuild"])
def test_nats_written_stream_opens_in_jsstore(nats_written, tmp_path, name, with_index):
    src, state, messages, _log, rebuilt_state = nats_written[name]
    if not with_index:
        state = rebuilt_state
    directory = _copy_stream(src, tmp_path / name)
    index_path = os.path.join(directory, "msgs", "index.db")
    assert os.path.exists(index_path), "a clean stop writes index.db"
    blocks = sorted(f for f in os.listdir(os.path.join(directory, "msgs")) if f.endswith(".blk"))
    if name != "SMALL":
        assert len(blocks) >= 2
    if name == "COMPACTED":  # the sealed first block was compressed by the server
        with open(os.path.join(directory, "msgs", blocks[0]), "rb") as f:
            assert f.read(3) == b"cmp"
    if not with_index:
        os.unlink(index_path)
    fs = open_like_nats(directory)
    try:
        assert_store_matches(fs, state, messages)
    finally:
        fs.stop()
    # and again from the index.db jsstore wrote
    fs = open_like_nats(directory)
    try:
        assert_store_matches(fs, state, messages)
    finally:
        fs.stop()


@pytest.mark.parametrize("name", ["SMALL", "LARGE", "COMPACTED"])
def test_nats_index_db_decodes_and_round_trips(nats_written, tmp_path, name):
    """jsstore loads nats-server's index.db and writes back the same state."""
    src, state, _messages, _log, _rebuilt = nats_written[name]
    directory = _copy_stream(src, tmp_path / name)
    index_path = os.path.join(directory, "msgs", "index.db")
    with open(index_path, "rb") as f:
        theirs = f.read()
    decoded = statefile.decode_index(name, theirs)
    assert decoded["msgs"] == state["messages"]
    assert decoded["bytes"] == state["bytes"]
    assert decoded["first_seq"] == state["first_seq"]
    assert decoded["last_seq"] == state["last_seq"]
    assert decoded["first_ts"] == rfc3339_to_ns(state["first_ts"])
    assert decoded["last_ts"] == rfc3339_to_ns(state["last_ts"])
    assert {s.decode(): total for s, total, _f, _l in decoded["subjects"]} == state["subjects"]
    fs = open_like_nats(directory)
    fs.stop()
    with open(index_path, "rb") as f:
        ours = f.read()
    mine = statefile.decode_index(name, ours)
    assert {k: v for k, v in mine.items() if k not in ("subjects", "blocks")} == \
        {k: v for k, v in decoded.items() if k not in ("subjects", "blocks")}
    assert sorted(mine["subjects"]) == sorted(decoded["subjects"])

    def blocks(d):
        return [{**b, "deleted": sorted(b["deleted"]) if b["deleted"] is not None else []}
                for b in d["blocks"]]
    assert blocks(mine) == blocks(decoded)
    # subjects keep the order they were loaded in, so the whole file is byte-identical
    assert ours == theirs


@pytest.mark.parametrize("name", ["SMALL", "LARGE", "COMPACTED"])
def test_nats_meta_inf_parses(nats_written, name):
    src, _state, _messages, _log, _rebuilt = nats_written[name]
    with open(os.path.join(src, "meta.inf"), "rb") as f:
        raw = f.read()
    with open(os.path.join(src, "meta.sum"), "rb") as f:
        assert f.read() == meta_sum(meta_hash_key(name), raw)
    data = json.loads(raw)
    config = stream_config_from_json(data)
    assert config.name == name
    assert config.subjects == data["subjects"]
    assert config.storage == "file"
    assert config.retention == "limits"
    assert config.discard == "old"
    assert config.max_msgs == -1 and config.max_bytes == -1 and config.max_age == 0
    assert config.duplicate_window == data["duplicate_window"] > 0
    assert config.compression == ("s2" if name == "COMPACTED" else "none")
    assert config.first_seq == (50 if name == "COMPACTED" else 0)


# -- jsstore -> nats-server ----------------------------------------------------------------

def write_with_jsstore(store_dir, name: str, compression: str = "none") -> dict:
    """A multi-block stream written by jsstore; returns what it holds, by seq."""
    directory = nats_stream_dir(store_dir, name)
    os.makedirs(directory)
    config = StreamConfig(name=name, subjects=["orders.>", "events.*", "misc"],
                          compression=compression)
    fs = jsstore.FileStore(directory, config, StoreOptions(block_size=32_000, sync_interval=0))
    for i in range(1, 601):
        subject = SMALL_SUBJECTS[(i * 5) % len(SMALL_SUBJECTS)]
        hdr = b"NATS/1.0\r\nX-Id: %d\r\n\r\n" % i if i % 4 == 0 else None
        fs.store_msg(subject, hdr, payload(i) * 2)
    for seq in (1, 2, 10, 11, 12, 300, 450, 600):
        assert fs.remove_msg(seq)
    fs.purge_ex("events.b", 0, 0)
    fs.purge_ex("orders.new.2", 0, 5)
    for i in range(601, 641):
        fs.store_msg(SMALL_SUBJECTS[i % len(SMALL_SUBJECTS)], None, payload(i))
    assert fs.remove_msg(640)
    expected = {}
    st = fs.state()
    for seq in range(st.first_seq, st.last_seq + 1):
        try:
            sm = fs.load_msg(seq)
        except Exception:
            continue
        expected[seq] = (sm.subject, sm.hdr or None, bytes(sm.msg), sm.ts)
    fs.stop()
    assert len([f for f in os.listdir(os.path.join(directory, "msgs")) if f.endswith(".blk")]) >= 3
    return {"state": st, "messages": expected, "dir": directory}


def write_edited_with_jsstore(store_dir, name: str, compression: str = "none") -> dict:
    """Skips, a compaction, erases, a full purge followed by new messages: the less common
    records (skip placeholders, erased records, tombstones for earlier blocks)."""
    directory = nats_stream_dir(store_dir, name)
    os.makedirs(directory)
    config = StreamConfig(name=name, subjects=["orders.>", "events.*", "misc"],
                          compression=compression)
    fs = jsstore.FileStore(directory, config, StoreOptions(block_size=32_000, sync_interval=0))
    for i in range(1, 301):
        fs.store_msg(SMALL_SUBJECTS[i % len(SMALL_SUBJECTS)], None, payload(i) * 3)
    assert fs.purge() == 300
    for i in range(301, 701):
        hdr = b"NATS/1.0\r\nSeq: %d\r\n\r\n" % i if i % 5 == 0 else None
        fs.store_msg(SMALL_SUBJECTS[(i * 3) % len(SMALL_SUBJECTS)], hdr, payload(i) * 3)
    fs.skip_msgs(701, 20)
    fs.store_msg("misc", None, b"after skips")
    fs.skip_msg()
    fs.compact(420)
    for seq in (420, 500, 501, 650):
        assert fs.erase_msg(seq)
    for seq in (430, 431, 690, 721):
        assert fs.remove_msg(seq)
    fs.purge_ex("orders.ship.eu", 600, 0)
    expected = {}
    st = fs.state()
    for seq in range(st.first_seq, st.last_seq + 1):
        try:
            sm = fs.load_msg(seq)
        except Exception:
            continue
        expected[seq] = (sm.subject, sm.hdr or None, bytes(sm.msg), sm.ts)
    fs.stop()
    return {"state": st, "messages": expected, "dir": directory}


@pytest.mark.parametrize("variant", [
    "index.db", "rebuild", "s2", "edited",
    "edited-rebuild",
    "edited-s2"])
def test_jsstore_written_stream_opens_in_nats(tmp_path, variant):
    require_nats_server()
    name = "JSW"
    writer = write_edited_with_jsstore if variant.startswith("edited") else write_with_jsstore
    written = writer(tmp_path, name, compression="s2" if variant.endswith("s2") else "none")
    st, expected = written["state"], written["messages"]
    index_path = os.path.join(written["dir"], "msgs", "index.db")
    with open(index_path, "rb") as f:
        ours = f.read()
    if variant.endswith("rebuild"):
        os.unlink(index_path)
    if variant.endswith("s2"):
        compressed = 0
        for f in os.listdir(os.path.join(written["dir"], "msgs")):
            if f.endswith(".blk"):
                with open(os.path.join(written["dir"], "msgs", f), "rb") as blk:
                    compressed += blk.read(3) == b"cmp"
        assert compressed >= 2
    with nats_server(tmp_path) as server:
        state, messages = run(read_stream(server.url, name))
        server.stop()
        log = server.log_text()
    assert "Stream state" not in log, log
    # on its clean stop nats-server writes its own index.db for the same content
    with open(index_path, "rb") as f:
        theirs = f.read()
    decoded = statefile.decode_index(name, theirs)
    assert decoded["msgs"] == st.messages and decoded["last_seq"] == st.last_seq
    mine = statefile.decode_index(name, ours)
    if variant.endswith("rebuild"):
        # after a rebuild nats-server lists subjects in another order and keeps the first
        # block hint of a subject whose first messages were removed by tombstones (a hint
        # is only a lower bound); all else is the same
        assert {k: v for k, v in mine.items() if k != "subjects"} == \
            {k: v for k, v in decoded.items() if k != "subjects"}
        their_subjects = {s: (total, fblk, lblk) for s, total, fblk, lblk in decoded["subjects"]}
        assert len(their_subjects) == len(mine["subjects"])
        for subj, total, fblk, lblk in mine["subjects"]:
            assert their_subjects[subj][0::2] == (total, lblk)
            assert their_subjects[subj][1] <= fblk
    else:
        assert mine == decoded
        assert ours == theirs
    assert state["messages"] == st.messages
    assert state["bytes"] == st.bytes
    assert state["first_seq"] == st.first_seq
    assert state["last_seq"] == st.last_seq
    assert rfc3339_to_ns(state["first_ts"]) == st.first_ts
    assert rfc3339_to_ns(state["last_ts"]) == st.last_ts
    assert state.get("num_deleted", 0) == st.num_deleted
    assert state.get("num_subjects", 0) == st.num_subjects
    assert sorted(state.get("deleted") or []) == sorted(st.deleted or [])
    assert messages == expected


def test_jsstore_meta_inf_accepted_by_nats(tmp_path):
    """nats-server recovers the stream from our meta.inf with the same configuration."""
    require_nats_server()
    name = "META"
    directory = nats_stream_dir(tmp_path, name)
    os.makedirs(directory)
    config = StreamConfig(name=name, subjects=["a.>", "b"], max_msgs=1000, max_bytes=1 << 20,
                          max_age=3600 * 10**9, max_msgs_per_subject=7, discard="new",
                          duplicate_window=60 * 10**9, max_msg_size=4096)
    fs = jsstore.FileStore(directory, config, StoreOptions(sync_interval=0))
    fs.store_msg("a.1", None, b"x")
    fs.stop()
    with nats_server(tmp_path) as server:
        async def info():
            nc = await nats.connect(server.url)
            try:
                return await api(nc, f"$JS.API.STREAM.INFO.{name}")
            finally:
                await nc.close()
        reply = run(info())
        log = server.log_text()
    assert "error" not in reply, (reply, log)
    cfg = reply["config"]
    expected = stream_config_json(config)
    for key in ("name", "subjects", "retention", "max_msgs", "max_bytes", "max_age",
                "max_msgs_per_subject", "max_msg_size", "discard", "storage", "duplicate_window"):
        assert cfg[key] == expected[key], key
    assert reply["state"]["messages"] == 1


@pytest.mark.parametrize("writer", [write_with_jsstore, write_edited_with_jsstore],
                         ids=["plain", "edited"])
def test_jsstore_reopens_from_its_own_index_db(tmp_path, writer):
    """The index.db jsstore writes is accepted by jsstore itself (no rebuild): a loaded
    index.db is removed at open, a rejected one would stay behind."""
    written = writer(tmp_path, "OWN")
    index_path = os.path.join(written["dir"], "msgs", "index.db")
    assert os.path.exists(index_path)
    fs = open_like_nats(written["dir"])
    try:
        assert not os.path.exists(index_path)
        st = fs.state()
        assert (st.messages, st.bytes, st.first_seq, st.last_seq, st.first_ts, st.last_ts,
                sorted(st.deleted or [])) == \
            (written["state"].messages, written["state"].bytes, written["state"].first_seq,
             written["state"].last_seq, written["state"].first_ts, written["state"].last_ts,
             sorted(written["state"].deleted or []))
        for seq, (subject, hdr, data, ts) in written["messages"].items():
            sm = fs.load_msg(seq)
            assert (sm.subject, sm.hdr or None, bytes(sm.msg), sm.ts) == (subject, hdr, data, ts)
    finally:
        fs.stop()
