"""jsstore verify on healthy stores of every shape, as each server writes them: one body
(limits that removed messages, per-subject limits, per-message TTLs that ran out, purges
of every kind, KV history, delete and purge markers, erased and not erased deletes, s2
compression, work-queue and interest retention after acks, many small blocks, an empty
stream, a stream whose every message was removed) runs in process (jsstore.aio), through
nats-py against `jsstore serve`, and against the real nats-server; each server is stopped
cleanly.  On each of the three store directories:

- verify exits 0 and reports each stream as the server last reported it (messages, bytes,
  first and last sequence);
- verify changes no file;
- a reopen of the directory by jsstore finds the same state verify reported.

The same body with each server killed instead of stopped: verify finds healthy stores in
the state nats-server and jsstore find when they start on a copy."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil

import nats
import pytest
from bothservers import run
from jsstoreserver import jsstore_server, start_jsstore_server
from nats.js import api
from natsserver import nats_server, require_nats_server, start_nats_server

import jsstore
from jsstore.cli import main

pytestmark = pytest.mark.natsserver

KIB = 1024
# max_bytes of 120,000 gives a 32,000-byte block in both servers (nats-server's dynBlkSize)
SMALL_BLOCKS = 120_000


async def _delete(js, stream: str, seq: int, erase: bool) -> None:
    request = json.dumps({"seq": seq, "no_erase": not erase}).encode()
    response = await js._api_request(f"$JS.API.STREAM.MSG.DELETE.{stream}", request)
    assert response.get("success"), response


async def _until_empty(js, stream: str) -> None:
    while (await js.stream_info(stream)).state.messages:
        await asyncio.sleep(0.05)


async def write_shapes(js) -> dict:
    """Every shape, one stream (or bucket) each; returns each stream's last reported state."""
    kv = await js.create_key_value(api.KeyValueConfig(bucket="ONE", history=1))
    await kv.put("k", b"first")
    await kv.put("k", b"second")
    await kv.put("other", b"x")
    kv = await js.create_key_value(api.KeyValueConfig(bucket="HIST", history=3))
    for n in range(6):
        await kv.put("k", f"v{n}".encode())
    await kv.put("gone", b"1")
    await kv.delete("gone")                           # a delete marker
    await kv.put("purged", b"1")
    await kv.put("purged", b"2")
    await kv.purge("purged")                          # a purge marker, history removed

    await js.add_stream(name="MAXMSGS", subjects=["maxmsgs"], max_msgs=2)
    for n in range(3):
        await js.publish("maxmsgs", f"{n}".encode())
    await js.add_stream(name="MAXBYTES", subjects=["maxbytes"], max_bytes=SMALL_BLOCKS)
    for n in range(300):                              # many blocks; the first ones dropped
        await js.publish("maxbytes", bytes([n % 256]) * 1000)
    await js.add_stream(name="PERSUBJ", subjects=["per.*"], max_msgs_per_subject=2)
    for n in range(5):
        await js.publish("per.a", f"a{n}".encode())
        if n < 3:
            await js.publish("per.b", f"b{n}".encode())
    await js.add_stream(name="AGED", subjects=["aged"], max_age=0.5)
    for n in range(3):
        await js.publish("aged", f"{n}".encode())
    await _until_empty(js, "AGED")                    # every message removed by max_age
    await js.add_stream(name="TTL", subjects=["ttl"], allow_msg_ttl=True)
    await js.publish("ttl", b"stays", headers={"Nats-TTL": "1h"})
    for n in range(2):
        await js.publish("ttl", b"goes", headers={"Nats-TTL": "1s"})
    await js.publish("ttl", b"no ttl")
    while (await js.stream_info("TTL")).state.messages > 2:   # per-message TTLs ran out
        await asyncio.sleep(0.05)

    await js.add_stream(name="SUBJPURGE", subjects=["sp.*"])
    for n in range(4):
        await js.publish("sp.a", b"a")
        await js.publish("sp.b", b"b")
    await js.purge_stream("SUBJPURGE", subject="sp.a")
    await js.add_stream(name="FULLPURGE", subjects=["fp"])
    for n in range(5):
        await js.publish("fp", b"x")
    await js.purge_stream("FULLPURGE")
    await js.publish("fp", b"after")
    await js.add_stream(name="KEEP", subjects=["keep.*"])
    for n in range(6):
        await js.publish("keep.a", b"a")
        await js.publish("keep.b", b"b")
    await js.purge_stream("KEEP", subject="keep.a", keep=2)
    await js.add_stream(name="UPTO", subjects=["upto"])
    for n in range(8):
        await js.publish("upto", b"x")
    await js.purge_stream("UPTO", seq=5)

    await js.add_stream(name="DELETES", subjects=["del"], max_bytes=SMALL_BLOCKS)
    for n in range(80):                               # three blocks
        await js.publish("del", bytes([n]) * 1000)
    for seq, erase in ((1, True), (2, False), (20, True), (21, False), (40, False),
                       (79, True), (80, False)):
        await _delete(js, "DELETES", seq, erase)
    await js.add_stream(name="S2", subjects=["s2"], max_bytes=SMALL_BLOCKS,
                        compression=api.StoreCompression.S2)
    for n in range(80):
        await js.publish("s2", b"compressible " * 70)
    for seq, erase in ((3, True), (4, False), (50, True)):
        await _delete(js, "S2", seq, erase)

    await js.add_stream(name="WORK", subjects=["work"],
                        retention=api.RetentionPolicy.WORK_QUEUE)
    for n in range(6):
        await js.publish("work", f"{n}".encode())
    sub = await js.pull_subscribe("work", durable="W")
    for msg in await sub.fetch(4, timeout=5):
        if msg.metadata.sequence.stream != 2:
            await msg.ack_sync()
    await js.add_stream(name="INTEREST", subjects=["int"],
                        retention=api.RetentionPolicy.INTEREST)
    one = await js.pull_subscribe("int", durable="ONE")
    two = await js.pull_subscribe("int", durable="TWO")
    for n in range(5):
        await js.publish("int", f"{n}".encode())
    for msg in await one.fetch(5, timeout=5):
        await msg.ack_sync()
    for msg in await two.fetch(3, timeout=5):
        await msg.ack_sync()

    await js.add_stream(name="EMPTY", subjects=["empty"])
    await js.add_stream(name="ALLGONE", subjects=["allgone"])
    for n in range(3):
        await js.publish("allgone", b"x")
    for seq in (1, 2, 3):
        await _delete(js, "ALLGONE", seq, erase=seq != 2)

    states = {}
    for name in await js.streams_info():
        state = name.state
        states[name.config.name] = {"messages": state.messages, "bytes": state.bytes,
                                    "first_seq": state.first_seq, "last_seq": state.last_seq}
    return states


async def _in_process(directory):
    async with jsstore.aio.open(directory) as js:
        return await write_shapes(js)


async def _over_nats(url):
    nc = await nats.connect(url)
    try:
        return await write_shapes(nc.jetstream())
    finally:
        await nc.close()


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    """The shapes written three ways: way -> (store directory, stream states)."""
    require_nats_server()
    root = tmp_path_factory.mktemp("shapes")
    out = {"jsstore.aio": (root / "embedded", run(_in_process(root / "embedded"), 120))}
    with jsstore_server(root / "serve") as server:
        out["jsstore serve"] = (root / "serve", run(_over_nats(server.url), 120))
    with nats_server(root / "nats") as server:
        out["nats-server"] = (root / "nats", run(_over_nats(server.url), 120))
    return out


def _tree(directory) -> dict:
    """Every file under `directory`: its path -> the SHA-256 of its bytes."""
    out = {}
    for parent, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(parent, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
    return out


def _verify(capsys, store) -> tuple[int, dict]:
    code = main(["verify", "--store", os.fspath(store), "--json"])
    return code, json.loads(capsys.readouterr().out)


WAYS = ["jsstore.aio", "jsstore serve", "nats-server"]


@pytest.mark.parametrize("way", WAYS)
def test_verify_agrees_with_the_server_and_a_reopen(written, way, capsys):
    store, states = written[way]
    assert len(states) == 17
    before = _tree(store)
    code, report = _verify(capsys, store)
    assert _tree(store) == before                              # read-only
    bad = {s["stream"]: s["findings"] for s in report["streams"] if s["findings"]}
    assert bad == {}
    assert code == 0 and report["ok"]
    seen = {s["stream"]: {k: s[k] for k in ("messages", "bytes", "first_seq", "last_seq")}
            for s in report["streams"]}
    assert seen == states
    js = jsstore.open(os.fspath(store))
    try:
        reopened = {}
        for name in states:
            state = js.stream_info(name).state
            reopened[name] = {"messages": state.messages, "bytes": state.bytes,
                              "first_seq": state.first_seq, "last_seq": state.last_seq}
    finally:
        js.close()
    assert reopened == seen


@pytest.mark.parametrize("way", WAYS)
def test_verify_agrees_after_a_reopen_rewrote_the_state(written, way, capsys, tmp_path):
    """jsstore reopens and stops a copy (its own index.db and blocks now): still healthy,
    same state."""
    store, states = written[way]
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    jsstore.open(os.fspath(copy)).close()
    code, report = _verify(capsys, copy)
    bad = {s["stream"]: s["findings"] for s in report["streams"] if s["findings"]}
    assert bad == {}
    assert code == 0
    assert {s["stream"]: {k: s[k] for k in ("messages", "bytes", "first_seq", "last_seq")}
            for s in report["streams"]} == states


@pytest.mark.parametrize("way", WAYS)
def test_verify_agrees_without_index_db(written, way, capsys, tmp_path):
    """A copy without index.db (as after a crash, or a state too big to write): verify
    and a reopen rebuild from the blocks alone, and find the state the server reported."""
    store, states = written[way]
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    for parent, _dirs, files in os.walk(copy):
        if "index.db" in files:
            os.unlink(os.path.join(parent, "index.db"))
    code, report = _verify(capsys, copy)
    bad = {s["stream"]: s["findings"] for s in report["streams"] if s["findings"]}
    assert bad == {}
    assert code == 0
    seen = {s["stream"]: {k: s[k] for k in ("messages", "bytes", "first_seq", "last_seq")}
            for s in report["streams"]}
    assert seen == states


@pytest.fixture(scope="module")
def crashed(tmp_path_factory) -> dict:
    """The shapes written by each server, which is then killed (SIGKILL: no state file
    written on the way out): way -> store directory."""
    require_nats_server()
    root = tmp_path_factory.mktemp("crashed")
    out = {}
    for way, start in (("jsstore serve", start_jsstore_server),
                       ("nats-server", start_nats_server)):
        server = start(root / way)
        try:
            run(_over_nats(server.url), 120)
        finally:
            server.kill()
            os.unlink(server.log_path)
        out[way] = root / way
    return out


async def _states_over_nats(url) -> dict:
    nc = await nats.connect(url)
    try:
        return {info.config.name: {"messages": info.state.messages, "bytes": info.state.bytes,
                                   "first_seq": info.state.first_seq,
                                   "last_seq": info.state.last_seq}
                for info in await nc.jetstream().streams_info()}
    finally:
        await nc.close()


@pytest.mark.parametrize("way", ["jsstore serve", "nats-server"])
def test_verify_agrees_after_a_crash(crashed, way, capsys, tmp_path):
    """After a kill, verify finds what nats-server and jsstore find when they start on a
    copy of the store (an index.db older than the blocks is a note, not damage)."""
    store = crashed[way]
    code, report = _verify(capsys, store)
    bad = {s["stream"]: s["findings"] for s in report["streams"] if s["findings"]}
    assert bad == {}
    assert code == 0
    seen = {s["stream"]: {k: s[k] for k in ("messages", "bytes", "first_seq", "last_seq")}
            for s in report["streams"]}
    assert len(seen) == 17
    served = tmp_path / "served"
    shutil.copytree(store, served)
    with nats_server(served) as server:
        assert run(_states_over_nats(server.url)) == seen
    reopened = tmp_path / "reopened"
    shutil.copytree(store, reopened)
    js = jsstore.open(os.fspath(reopened))
    try:
        assert {name: {"messages": st.messages, "bytes": st.bytes, "first_seq": st.first_seq,
                       "last_seq": st.last_seq}
                for name in seen for st in [js.stream_info(name).state]} == seen
    finally:
        js.close()
