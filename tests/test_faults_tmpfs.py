"""A disk that really fills up: a tmpfs of a few MiB mounted by the test (which needs the
right to mount; elsewhere these tests skip), filled by the file store, and by `jsstore serve`
next to nats-server, until the disk has no space left.  The store reports the error, stays
readable, fails every later write with it (even once there is room again) until it is
reopened, and loses nothing it acknowledged.  Both servers answer nothing to the publish
that failed and to those after it, and keep serving reads."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess

import nats
import pytest
from jsstoreserver import start_jsstore_server
from natsserver import nats_server_binary, start_nats_server

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore.errors import WriteError

SIZE = "4m"


def _mount(path, size: str) -> None:
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs",
                           os.fspath(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or 'not permitted'}")


def _grow(path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", os.fspath(path)], check=True)


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    _mount(disk, SIZE)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", os.fspath(disk)], capture_output=True, check=False)


def _cfg():
    return StreamConfig(name="T", subjects=["t.>"])


@pytest.mark.parametrize("mmap", [True, False])
def test_the_store_fills_the_disk_and_loses_nothing_it_acknowledged(small_disk, mmap):
    options = StoreOptions(sync_interval=0, block_size=256 * 1024, mmap=mmap)
    store = jsstore.FileStore(small_disk / "s", _cfg(), options)
    acked = []
    with pytest.raises(WriteError) as first:
        for i in range(10_000):
            acked.append(store.store_msg(f"t.{i % 4}", None, b"%06d" % i + b"p" * 20_000)[0])
    assert "no space left on device" in str(first.value)
    assert len(acked) > 50
    state = store.state()
    assert (state.messages, state.last_seq) == (len(acked), acked[-1])
    assert store.load_msg(acked[0]).msg[:6] == b"000000"
    assert store.load_last_msg("t.1").seq == max(s for s in acked if (s - 1) % 4 == 1)
    _grow(small_disk, "16m")                          # room again: the store still refuses
    with pytest.raises(WriteError) as again:
        store.store_msg("t.0", None, b"later")
    assert again.value is first.value
    store.stop()
    store = jsstore.FileStore(small_disk / "s", _cfg(), options)
    assert store.state().last_seq == acked[-1]
    assert [store.load_msg(seq).msg[:6] for seq in acked] == [b"%06d" % i for i in range(len(acked))]
    assert store.store_msg("t.0", None, b"after")[0] == acked[-1] + 1
    store.stop()


async def _fill(url: str) -> dict:
    """Publish 50 KB messages until one goes unanswered; then read, and try to write."""
    nc = await nats.connect(url)
    out: dict = {"acked": []}
    try:
        await nc.request("$JS.API.STREAM.CREATE.T", json.dumps(
            {"name": "T", "subjects": ["t.>"], "storage": "file",
             "allow_direct": True}).encode())
        await nc.request("$JS.API.CONSUMER.CREATE.T.C", json.dumps(
            {"stream_name": "T", "config": {"durable_name": "C",
                                             "ack_policy": "explicit"}}).encode())
        for i in range(400):
            try:
                answer = await nc.request("t.a", b"%06d" % i + b"x" * 50_000, timeout=2)
            except nats.errors.TimeoutError:
                out["unanswered"] = True
                break
            ack = json.loads(answer.data)
            if "error" in ack:
                out["error"] = ack["error"]
                break
            out["acked"].append(ack["seq"])
        try:
            await nc.request("t.a", b"small", timeout=1)
            out["later_unanswered"] = False
        except nats.errors.TimeoutError:
            out["later_unanswered"] = True
        get = json.loads((await nc.request("$JS.API.STREAM.MSG.GET.T", b'{"seq":2}')).data)
        out["get"] = get["message"]["seq"]
        direct = await nc.request("$JS.API.DIRECT.GET.T", b'{"seq":3}')
        out["direct"] = (direct.headers["Nats-Sequence"], direct.data[:6])
        info = json.loads((await nc.request("$JS.API.STREAM.INFO.T", b"")).data)
        out["state"] = (info["state"]["messages"], info["state"]["last_seq"])
        inbox = await nc.subscribe("pull.inbox")
        await nc.publish("$JS.API.CONSUMER.MSG.NEXT.T.C", b'{"batch":1}', reply="pull.inbox")
        out["fetch"] = (await inbox.next_msg(timeout=5)).data[:6]
        purge = json.loads((await nc.request("$JS.API.STREAM.PURGE.T", b"")).data)
        out["purge"] = purge.get("error")
    finally:
        await nc.close()
    return out


async def _after_restart(url: str) -> dict:
    nc = await nats.connect(url)
    try:
        info = json.loads((await nc.request("$JS.API.STREAM.INFO.T", b"")).data)
        ack = json.loads((await nc.request("t.a", b"after", timeout=5)).data)
        first = json.loads((await nc.request("$JS.API.STREAM.MSG.GET.T", b'{"seq":1}')).data)
    finally:
        await nc.close()
    return {"state": (info["state"]["messages"], info["state"]["last_seq"]),
            "ack": ack, "first": first["message"]["seq"]}


def _serve(kind: str, disk, conf: str):
    if kind == "nats-server":
        return start_nats_server(disk, ["-c", conf])
    return start_jsstore_server(disk, ["-c", conf])


@pytest.mark.natsserver
@pytest.mark.parametrize("kind", ["nats-server", "jsstore"])
def test_a_server_on_a_full_disk_answers_nothing_and_keeps_serving_reads(small_disk, tmp_path,
                                                                         kind):
    if kind == "nats-server" and nats_server_binary() is None:
        pytest.skip("nats-server binary not found")
    conf = tmp_path / "server.conf"
    # a file store limit far above the disk: the disk, not the limit, runs out
    conf.write_text("jetstream {\n  max_file_store: 1G\n}\n")
    server = _serve(kind, small_disk, os.fspath(conf))
    try:
        out = asyncio.run(_fill(server.url))
    finally:
        server.stop()
    acked = out["acked"]
    assert len(acked) > 20 and acked == list(range(1, len(acked) + 1))
    assert out.get("unanswered") and "error" not in out
    assert out["later_unanswered"]
    assert out["get"] == 2
    assert out["direct"] == ("3", b"000002")
    assert out["state"] == (len(acked), len(acked))
    assert out["fetch"] == b"000000"
    assert out["purge"]["code"] == 500 and out["purge"]["err_code"] == 10051
    assert "no space left on device" in out["purge"]["description"]
    _grow(small_disk, "64m")
    server = _serve(kind, small_disk, os.fspath(conf))
    try:
        after = asyncio.run(_after_restart(server.url))
    finally:
        server.stop()
    assert after["state"] == (len(acked), len(acked))
    assert after["ack"] == {"stream": "T", "seq": len(acked) + 1}
    assert after["first"] == 1
