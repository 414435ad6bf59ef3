"""Disk faults through the core's fault shim (jsstore._core.storage.faults): ENOSPC and EIO at write
and at fsync, for message blocks, index.db and o.dat.  Whatever fails, the store reports the
error, stays readable, fails every later write with the same error until it is reopened,
and nothing acknowledged before the fault is lost; a record torn at the fault is cut off
when the store is reopened.  The server answers nothing to a publish whose write failed (as
nats-server 2.15.1 does, tested on a full disk in test_faults_tmpfs.py) and keeps serving
reads."""

from __future__ import annotations

import asyncio
import errno
import json
import os

import nats
import pytest

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore._core.storage import faults
from jsstore.errors import WriteError
from jsstore.jetstream import account as jetstream
from jsstore.server import Server
from jsstore.wire import apierrors as api_errors
from inprocess import serve_in_thread

ERRORS = [(errno.ENOSPC, "no space left on device"), (errno.EIO, "input/output error")]


@pytest.fixture(autouse=True)
def _disarm():
    faults.disarm()
    yield
    faults.disarm()


def _cfg():
    return StreamConfig(name="F", subjects=["f.>"])


def _open(path, **options):
    return jsstore.FileStore(path, _cfg(), StoreOptions(sync_interval=0, **options))


def _payloads(store):
    state = store.state()
    return [store.load_msg(seq).msg for seq in range(state.first_seq, state.last_seq + 1)]


# -- the shim itself ---------------------------------------------------------------------------

def test_the_shim_fails_the_call_after_the_ones_let_through_and_every_one_after(tmp_path):
    path = tmp_path / "x.blk"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        faults.arm("write", errno.EIO, after=2, path="*.blk")
        assert faults.write(fd, b"ab", os.fspath(path)) == 2
        faults.write(fd, b"cd", None)                       # no path: not counted
        assert faults.write(fd, b"ef", os.fspath(path)) == 2
        for _ in range(2):
            with pytest.raises(OSError) as info:
                faults.write(fd, b"gh", os.fspath(path))
            assert info.value.errno == errno.EIO
        faults.fsync(fd, os.fspath(path))                   # another operation: untouched
        assert faults.fired() == 2
        faults.disarm()
        assert faults.write(fd, b"ij", os.fspath(path)) == 2
    finally:
        os.close(fd)
    assert path.read_bytes() == b"abcdefij"


def test_a_partial_write_fault_lets_half_through_then_fails(tmp_path):
    path = tmp_path / "y"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        faults.arm("write", errno.ENOSPC, partial=True)
        with pytest.raises(OSError) as info:
            faults.write_all(fd, b"12345678", os.fspath(path))
        assert info.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
    assert path.read_bytes() == b"1234"


# -- message blocks ----------------------------------------------------------------------------

@pytest.mark.parametrize("err,text", ERRORS)
@pytest.mark.parametrize("partial", [False, True])
def test_a_failed_block_write_is_kept_and_nothing_acked_is_lost(tmp_path, err, text, partial):
    store = _open(tmp_path / "s", mmap=False)
    for i in range(10):
        store.store_msg("f.a", None, b"m%d" % i)
    faults.arm("write", err, path="*.blk", partial=partial)
    with pytest.raises(WriteError) as first:
        store.store_msg("f.a", None, b"lost" * 100)
    assert first.value.errno == err
    assert str(first.value) == f"write {tmp_path / 's' / 'msgs' / '1.blk'}: {text}"
    faults.disarm()                                   # the disk recovers: the store does not
    for write in (lambda: store.store_msg("f.b", None, b"later"),
                  lambda: store.store_batch([("f.b", None, b"later")]),
                  lambda: store.skip_msg(),
                  lambda: store.remove_msg(3),
                  lambda: store.purge(),
                  lambda: store.sync()):
        with pytest.raises(WriteError) as again:
            write()
        assert again.value is first.value
    state = store.state()
    assert (state.messages, state.first_seq, state.last_seq) == (10, 1, 10)
    assert _payloads(store) == [b"m%d" % i for i in range(10)]
    assert store.load_last_msg("f.a").msg == b"m9"
    store.stop()
    store = _open(tmp_path / "s")
    assert _payloads(store) == [b"m%d" % i for i in range(10)]
    lost = store.state().lost
    assert lost is None or not lost.msgs          # the torn record was never acknowledged
    seq, _ = store.store_msg("f.a", None, b"after")
    assert seq == 11
    store.stop()


def test_no_room_for_the_next_mapped_block_falls_back_to_writes_that_fail(tmp_path):
    store = jsstore.FileStore(tmp_path / "s", _cfg(), StoreOptions(sync_interval=0,
                                                                   block_size=4096))
    acked = []
    faults.arm("fallocate", errno.ENOSPC, path="3.blk")
    store.store_msg("f.a", None, b"0000")
    acked.append(1)
    with pytest.raises(WriteError) as first:
        for i in range(1, 1000):
            if store.lmb.path.endswith("3.blk"):
                # the block could not reserve its space: it is written with write(2),
                # and the disk that had no room for it has none for the writes either
                faults.arm("write", errno.ENOSPC, path="3.blk")
            acked.append(store.store_msg("f.a", None, b"%04d" % i + b"x" * 200)[0])
    assert first.value.errno == errno.ENOSPC
    faults.disarm()
    assert len(acked) > 10
    with pytest.raises(WriteError):
        store.store_msg("f.a", None, b"later")
    store.stop()
    store = _open(tmp_path / "s")
    assert store.state().last_seq == len(acked)
    assert [store.load_msg(seq).msg[:4] for seq in acked] == [b"%04d" % i for i in range(len(acked))]
    store.stop()


def test_no_room_to_grow_a_mapped_block_is_kept(tmp_path):
    store = jsstore.FileStore(tmp_path / "s", _cfg(), StoreOptions(sync_interval=0,
                                                                   block_size=8192))
    for i in range(3):
        store.store_msg("f.a", None, b"m%d" % i)
    assert store.lmb.is_mapped
    # the record goes into a new block (reserved: the first fallocate), which must grow
    # past its reserve for it (the second)
    faults.arm("fallocate", errno.ENOSPC, after=1, path="*.blk")
    with pytest.raises(WriteError) as first:
        store.store_msg("f.a", None, b"y" * 20000)
    assert first.value.errno == errno.ENOSPC
    faults.disarm()
    with pytest.raises(WriteError) as again:
        store.store_msg("f.a", None, b"small")
    assert again.value is first.value
    assert _payloads(store) == [b"m0", b"m1", b"m2"]
    store.stop()
    store = _open(tmp_path / "s")
    assert _payloads(store) == [b"m0", b"m1", b"m2"]
    store.stop()


@pytest.mark.parametrize("mmap", [True, False])
@pytest.mark.parametrize("err,text", ERRORS)
def test_a_failed_fsync_is_kept_and_the_store_stays_readable(tmp_path, err, text, mmap):
    store = _open(tmp_path / "s", mmap=mmap)
    for i in range(5):
        store.store_msg("f.a", None, b"m%d" % i)
    faults.arm("fsync", err, path="*.blk")
    with pytest.raises(WriteError) as first:
        store.sync()
    assert first.value.errno == err and str(first.value).endswith(text)
    faults.disarm()
    with pytest.raises(WriteError) as again:
        store.store_msg("f.a", None, b"x")
    assert again.value is first.value
    assert _payloads(store) == [b"m%d" % i for i in range(5)]
    store.stop()
    store = _open(tmp_path / "s")
    assert _payloads(store) == [b"m%d" % i for i in range(5)]
    store.stop()


@pytest.mark.parametrize("err,text", ERRORS)
def test_group_commit_acknowledges_nothing_a_failed_fsync_was_to_cover(tmp_path, err, text):
    store = _open(tmp_path / "s", sync="always")
    acked = [store.store_msg("f.a", None, b"m%d" % i)[0] for i in range(3)]
    faults.arm("fsync", err, path="*.blk")
    with pytest.raises(WriteError) as first:
        store.store_msg("f.a", None, b"unsynced")
    assert first.value.errno == err
    faults.disarm()
    with pytest.raises(WriteError):
        store.store_msg("f.a", None, b"later")
    assert [store.load_msg(seq).msg for seq in acked] == [b"m0", b"m1", b"m2"]
    store.stop()
    store = _open(tmp_path / "s")
    assert [store.load_msg(seq).msg for seq in acked] == [b"m0", b"m1", b"m2"]
    store.stop()


def test_a_fault_when_a_block_fills_and_the_next_one_starts(tmp_path):
    store = jsstore.FileStore(tmp_path / "s", _cfg(), StoreOptions(sync_interval=0,
                                                                   block_size=4096,
                                                                   mmap=False))
    acked = []
    faults.arm("write", errno.ENOSPC, path="3.blk")
    with pytest.raises(WriteError):
        for i in range(1000):
            acked.append(store.store_msg("f.a", None, b"%04d" % i + b"x" * 200)[0])
    faults.disarm()
    assert len(acked) > 10
    assert [store.load_msg(seq).msg[:4] for seq in acked] == [b"%04d" % i for i in range(len(acked))]
    store.stop()
    store = _open(tmp_path / "s")
    assert store.state().last_seq == len(acked)
    assert [store.load_msg(seq).msg[:4] for seq in acked] == [b"%04d" % i for i in range(len(acked))]
    store.stop()


# -- folders -------------------------------------------------------------------------------------

@pytest.mark.parametrize("sync", ["always", None])
def test_with_sync_always_the_folders_a_store_makes_are_synced(tmp_path, sync):
    """A stream's and a consumer's folders reach the disk before anything is written in them
    (their parents fsynced): a power loss after a synced PubAck cannot take the stream's
    folder away.  Shown by failing the fsync of the folder that holds the new ones."""
    streams = tmp_path / "streams"
    options = dict(sync_interval=0) if sync is None else dict(sync=sync)
    faults.arm("fsync", errno.EIO, path=os.fspath(streams))
    if sync is None:
        jsstore.FileStore(streams / "F", _cfg(), StoreOptions(**options)).stop()
        return
    with pytest.raises(OSError) as caught:
        jsstore.FileStore(streams / "F", _cfg(), StoreOptions(**options))
    assert caught.value.errno == errno.EIO
    faults.disarm()
    store = jsstore.FileStore(streams / "G", _cfg(), StoreOptions(**options))
    try:
        faults.arm("fsync", errno.EIO, path=os.fspath(streams / "G" / "obs"))
        with pytest.raises(OSError):
            store.consumer_store("C", 0, {"durable_name": "C", "ack_policy": "explicit"})
    finally:
        faults.disarm()
        store.stop()


# -- index.db and thw.db -----------------------------------------------------------------------

@pytest.mark.parametrize("op", ["write", "fsync"])
@pytest.mark.parametrize("err,text", ERRORS)
def test_a_failed_index_db_write_at_stop_leaves_the_blocks_to_recover_from(tmp_path, op, err, text):
    store = _open(tmp_path / "s")
    for i in range(20):
        store.store_msg(f"f.{i % 3}", None, b"m%d" % i)
    store.remove_msg(4)
    faults.arm(op, err, path="index.db*")
    store.stop()
    assert store.write_error is not None and store.write_error.errno == err
    assert str(store.write_error).endswith(text)
    faults.disarm()
    msgs = tmp_path / "s" / "msgs"
    assert not (msgs / "index.db").exists() and not (msgs / "index.db.tmp").exists()
    store = _open(tmp_path / "s")
    state = store.state()
    assert (state.messages, state.first_seq, state.last_seq) == (19, 1, 20)
    assert [store.load_msg(seq).msg for seq in range(1, 21) if seq != 4] == \
        [b"m%d" % i for i in range(20) if i != 3]
    assert store.state().num_subjects == 3
    store.stop()


# -- o.dat ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("err,text", ERRORS)
def test_a_failed_o_dat_write_is_kept_and_the_last_written_state_survives(tmp_path, err, text):
    # (o.dat is written without an fsync of its own, as nats-server writes it)
    store = _open(tmp_path / "s")
    for i in range(6):
        store.store_msg("f.a", None, b"m%d" % i)
    cs = store.consumer_store("C", 0, {"ack_policy": "explicit"})
    for seq in range(1, 5):
        cs.update_delivered(seq, seq, 1, 0)
    cs.update_acks(1, 1)
    cs.update_acks(2, 2)
    cs.flush()
    written = cs.state()
    faults.arm("write", err, path="*o.dat*")
    cs.update_acks(3, 3)
    with pytest.raises(WriteError) as first:
        cs.flush()
    assert str(first.value).endswith(text)
    faults.disarm()
    cs.update_acks(4, 4)                             # the state in memory goes on
    assert cs.state().ack_floor.stream_seq == 4
    with pytest.raises(WriteError) as again:
        cs.flush()
    assert again.value is first.value
    store.stop()                                     # no o.dat write over the kept one
    store = _open(tmp_path / "s")
    cs = store.consumer_store("C", 0, {"ack_policy": "explicit"})
    assert cs.state() == written
    assert _payloads(store) == [b"m%d" % i for i in range(6)]
    store.stop()


# -- the server --------------------------------------------------------------------------------

@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO])
def test_the_server_answers_nothing_to_a_failed_publish_and_keeps_serving_reads(tmp_path, err):
    async def main():
        # (written with write(2): a mapped block meets a full disk only at its next block,
        # which test_faults_tmpfs.py fills for real)
        js = jetstream.open(tmp_path, options=StoreOptions(mmap=False))
        server = Server(js, host="127.0.0.1", port=-1)
        stop = serve_in_thread(server)
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        out = {}
        try:
            create = await nc.request("$JS.API.STREAM.CREATE.F", json.dumps(
                {"name": "F", "subjects": ["f.>"], "storage": "file",
                 "allow_direct": True}).encode())
            assert b"error" not in create.data
            await nc.request("$JS.API.CONSUMER.CREATE.F.C", json.dumps(
                {"stream_name": "F", "config": {"durable_name": "C",
                                                 "ack_policy": "explicit"}}).encode())
            for i in range(5):
                ack = json.loads((await nc.request("f.a", b"m%d" % i)).data)
                assert ack == {"stream": "F", "seq": i + 1}
            # this server answers a connection's requests in order: once the STREAM.INFO
            # sent after them is answered, an answer to the publishes would be in
            acks = await nc.subscribe("pub.inbox")
            faults.arm("write", err, path="*.blk")
            await nc.publish("f.a", b"lost", reply="pub.inbox")
            await nc.request("$JS.API.STREAM.INFO.F", b"")
            faults.disarm()
            await nc.publish("f.a", b"later", reply="pub.inbox")
            await nc.request("$JS.API.STREAM.INFO.F", b"")
            out["answers"] = acks.pending_msgs
            get = json.loads((await nc.request("$JS.API.STREAM.MSG.GET.F",
                                               b'{"seq":2}')).data)
            out["get"] = get["message"]["seq"]
            direct = await nc.request("$JS.API.DIRECT.GET.F", b'{"seq":3}')
            out["direct"] = (direct.headers["Nats-Sequence"], direct.data)
            info = json.loads((await nc.request("$JS.API.STREAM.INFO.F", b"")).data)
            out["state"] = (info["state"]["messages"], info["state"]["last_seq"])
            inbox = await nc.subscribe("pull.inbox")
            await nc.publish("$JS.API.CONSUMER.MSG.NEXT.F.C", b'{"batch":1}',
                             reply="pull.inbox")
            out["fetch"] = (await inbox.next_msg(timeout=5)).data
            purge = json.loads((await nc.request("$JS.API.STREAM.PURGE.F", b"")).data)
            out["purge"] = purge["error"]
            delete = json.loads((await nc.request("$JS.API.STREAM.MSG.DELETE.F",
                                                  b'{"seq":1}')).data)
            out["delete"] = delete["error"]
        finally:
            await nc.close()
            stop()
            js.close()
        return out

    out = asyncio.run(main())
    text = os.strerror(err)
    text = text[:1].lower() + text[1:]
    assert out["answers"] == 0
    assert out["get"] == 2
    assert out["direct"] == ("3", b"m2")
    assert out["state"] == (5, 5)
    assert out["fetch"] == b"m0"
    assert out["purge"]["code"] == 500 and out["purge"]["err_code"] == 10051
    assert out["purge"]["description"].endswith("1.blk: " + text)
    assert out["delete"]["code"] == 500 and out["delete"]["err_code"] == 10057
    assert out["delete"]["description"] == out["purge"]["description"]
    js = jetstream.open(tmp_path)
    try:
        assert js.publish("f.a", b"after").seq == 6
        assert [js.get_msg("F", seq).data for seq in range(1, 6)] == \
            [b"m%d" % i for i in range(5)]
    finally:
        js.close()



# -- rewritten files: meta.inf, compressed blocks ------------------------------------------------

@pytest.mark.parametrize("err,text", ERRORS)
def test_a_failed_meta_inf_write_is_kept_and_the_old_one_stays(tmp_path, err, text):
    store = _open(tmp_path / "s")
    store.store_msg("f.a", None, b"m0")
    meta = (tmp_path / "s" / "meta.inf").read_bytes()
    faults.arm("write", err, path="meta.inf*")
    with pytest.raises(WriteError) as first:
        store.update_config(StreamConfig(name="F", subjects=["f.>"], max_msgs=10))
    assert first.value.errno == err and str(first.value).endswith(text)
    faults.disarm()
    assert (tmp_path / "s" / "meta.inf").read_bytes() == meta
    with pytest.raises(WriteError) as again:
        store.store_msg("f.a", None, b"m1")
    assert again.value is first.value
    assert store.load_msg(1).msg == b"m0"
    store.stop()


@pytest.mark.parametrize("err,text", ERRORS)
def test_a_failed_compressed_block_rewrite_keeps_the_sealed_block(tmp_path, err, text):
    cfg = StreamConfig(name="F", subjects=["f.>"], compression="s2")
    store = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(sync_interval=0,
                                                                block_size=4096))
    # the first block is written through its mapping; the first write(2) to it is its
    # compressed copy when it is sealed
    faults.arm("write", err, path="1.blk")
    acked = []
    with pytest.raises(WriteError) as first:
        for i in range(100):
            acked.append(store.store_msg("f.a", None, b"%03d" % i + b"z" * 300)[0])
    assert first.value.errno == err
    faults.disarm()
    with pytest.raises(WriteError):
        store.store_msg("f.a", None, b"later")
    assert [store.load_msg(seq).msg[:3] for seq in acked] == [b"%03d" % i for i in range(len(acked))]
    store.stop()
    store = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(sync_interval=0))
    assert [store.load_msg(seq).msg[:3] for seq in acked] == [b"%03d" % i for i in range(len(acked))]
    store.stop()


@pytest.mark.parametrize("err,text", ERRORS)
def test_a_batch_whose_write_fails_leaves_nothing_of_itself_to_read(tmp_path, err, text):
    store = _open(tmp_path / "s", mmap=False)
    for i in range(5):
        store.store_msg("f.a", None, b"m%d" % i)
    faults.arm("write", err, path="*.blk")
    with pytest.raises(WriteError) as first:
        store.store_batch([("f.b", None, b"b%d" % i) for i in range(5)])
    assert first.value.errno == err
    faults.disarm()
    state = store.state()
    assert state.messages == 5 and state.num_subjects == 1
    for seq in range(6, 11):
        with pytest.raises(jsstore.errors.StoreError):
            store.load_msg(seq)
    assert [store.load_msg(seq).msg for seq in range(1, 6)] == [b"m%d" % i for i in range(5)]
    store.stop()
    store = _open(tmp_path / "s")
    state = store.state()
    assert (state.messages, state.last_seq) == (5, 5)
    assert _payloads(store) == [b"m%d" % i for i in range(5)]
    store.stop()


def test_an_embedded_publish_whose_write_fails_raises_the_store_error(tmp_path):
    js = jetstream.open(tmp_path, options=StoreOptions(mmap=False))
    try:
        js.add_stream(name="F", subjects=["f.>"])
        js.publish("f.a", b"m0")
        faults.arm("write", errno.ENOSPC, path="*.blk")
        for payload in (b"lost", b"later"):
            with pytest.raises(api_errors.ApiError) as info:
                js.publish("f.a", payload)
            assert (info.value.code, info.value.err_code) == (503, 10077)
            assert str(info.value.to_dict()["description"]).endswith("1.blk: no space left on device")
        faults.disarm()
        assert js.get_msg("F", 1).data == b"m0"
    finally:
        js.close()
