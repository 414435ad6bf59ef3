"""Per-message TTLs: expiry, the Nats-TTL header, thw.db persistence and recovery."""

import os
import time

import pytest

import jsstore
from jsstore import StoreOptions, StreamConfig
from jsstore.errors import CorruptFile, MsgNotFound
from jsstore.store.ttl import TTLSchedule, parse_ttl, ttl_from_header

SECOND = 1_000_000_000


@pytest.mark.parametrize("text,seconds", [("never", -1), ("NEVER", -1), ("5", 5), ("90s", 90),
                                          ("1m30s", 90), ("1h", 3600), ("1.5s", 1), ("2500ms", 2)])
def test_parse_ttl(text, seconds):
    assert parse_ttl(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "500ms", "abc", "5x", "1s2", "-5", "s"])
def test_parse_ttl_rejects(text):
    with pytest.raises(ValueError):
        parse_ttl(text)


def test_ttl_from_header():
    assert ttl_from_header(b"NATS/1.0\r\nNats-TTL: 10s\r\n\r\n") == 10
    assert ttl_from_header(b"NATS/1.0\r\nX: y\r\nNats-TTL:3\r\n\r\n") == 3
    assert ttl_from_header(b"NATS/1.0\r\nnats-ttl: 3\r\n\r\n") == 0
    assert ttl_from_header(b"NATS/1.0\r\nNats-TTL: nope\r\n\r\n") == 0
    assert ttl_from_header(b"NATS/1.0\r\nX: Nats-TTL\r\n\r\n") == 0
    assert ttl_from_header(None) == 0


def test_thw_codec_round_trip_and_layout():
    sched = TTLSchedule()
    sched.add(7, 5 * SECOND)
    sched.add(3, 2 * SECOND)
    buf = sched.encode(high_seq=8)
    assert buf[:17] == bytes([1]) + (2).to_bytes(8, "little") + (8).to_bytes(8, "little")
    again, high = TTLSchedule.decode(buf)
    assert high == 8 and sorted(again.heap) == [(2 * SECOND, 3), (5 * SECOND, 7)]
    for bad in (buf[:5], b"\x02" + buf[1:], buf[:-1], buf[:17] + b"\xff" * 3):
        with pytest.raises(CorruptFile):
            TTLSchedule.decode(bad)


def _stores(tmp_path):
    cfg = StreamConfig(name="T", subjects=["t.>"], allow_msg_ttl=True)
    yield "memory", lambda: jsstore.MemStore(StreamConfig(name="T", subjects=["t.>"], storage="memory",
                                                          allow_msg_ttl=True))
    yield "file", lambda: jsstore.FileStore(tmp_path / "f", cfg, StoreOptions(sync_interval=0))


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_expiry_on_write_and_on_demand(tmp_path, kind, monkeypatch):
    make = dict(_stores(tmp_path))[kind]
    store = make()
    seq1, ts1 = store.store_msg("t.a", None, b"short", ttl=1)
    seq2, _ = store.store_msg("t.b", None, b"long", ttl=3600)
    seq3, _ = store.store_msg("t.c", None, b"none")
    assert store.expire_msgs() == 0
    # move the clock: the store reads it through time.time_ns for expire_msgs
    monkeypatch.setattr(time, "time_ns", lambda: ts1 + 2 * SECOND)
    assert store.expire_msgs() == 1
    with pytest.raises(MsgNotFound):
        store.load_msg(seq1)
    assert store.load_msg(seq2).msg == b"long" and store.load_msg(seq3).msg == b"none"
    assert store.state().messages == 2
    store.stop()


def test_expiry_checked_on_store(tmp_path):
    store = jsstore.MemStore(StreamConfig(name="T", subjects=["t.>"], storage="memory"))
    seq, ts = store.store_msg("t.a", None, b"x", ttl=1)
    assert store.next_ttl_expiry == ts + SECOND
    store.ttls.heap = [(ts, seq)]  # as if that second had passed: the next write expires it
    store.next_ttl_expiry = ts
    store.store_msg("t.b", None, b"y")
    with pytest.raises(MsgNotFound):
        store.load_msg(seq)


def test_purge_and_truncate_forget_ttls(tmp_path):
    store = jsstore.MemStore(StreamConfig(name="T", subjects=["t.>"], storage="memory"))
    store.store_msg("t.a", None, b"1", ttl=5)
    store.store_msg("t.a", None, b"2", ttl=5)
    store.truncate(1)
    assert [s for _, s in store.ttls.heap] == [1]
    store.purge()
    assert len(store.ttls) == 0 and store.next_ttl_expiry == (1 << 63) - 1


def test_thw_db_survives_clean_restart(tmp_path):
    cfg = StreamConfig(name="T", subjects=["t.>"], allow_msg_ttl=True)
    fs = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(sync_interval=0))
    seq, ts = fs.store_msg("t.a", None, b"x", ttl=60)
    fs.stop()
    assert os.path.exists(tmp_path / "s" / "msgs" / "thw.db")
    fs = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(sync_interval=0))
    assert fs.ttls.heap == [(ts + 60 * SECOND, seq)]
    assert fs.next_ttl_expiry == ts + 60 * SECOND
    fs.stop()


def test_ttls_recovered_from_headers_after_a_crash(tmp_path):
    cfg = StreamConfig(name="T", subjects=["t.>"], allow_msg_ttl=True)
    fs = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(sync_interval=0))
    fs.store_msg("t.a", b"NATS/1.0\r\nNats-TTL: 30s\r\n\r\n", b"x", ttl=30)
    fs.stop()                                    # thw.db with high_seq 2
    fs = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(sync_interval=0))
    seq, ts = fs.store_msg("t.b", b"NATS/1.0\r\nNats-TTL: 1m\r\n\r\n", b"y", ttl=60)
    fs.store_msg("t.c", b"NATS/1.0\r\nNats-TTL: never\r\n\r\n", b"z", ttl=-1)
    for mb in fs.blocks:                         # crash: no stop, thw.db is stale now
        mb.close_file()
    fs.closed = True
    fs = jsstore.FileStore(tmp_path / "s", cfg, StoreOptions(sync_interval=0))
    assert sorted(s for _, s in fs.ttls.heap) == [1, seq]
    assert (ts + 60 * SECOND, seq) in fs.ttls.heap
    fs.stop()


@pytest.mark.natsserver
def test_thw_db_written_by_nats_server(tmp_path):
    """nats-server's thw.db decodes to the TTLs it was given; jsstore opens that stream with
    the same schedule."""
    import asyncio
    import nats
    from natsserver import nats_server, require_nats_server
    require_nats_server()
    sd = tmp_path / "sd"

    async def write(url):
        nc = await nats.connect(url)
        js = nc.jetstream()
        await nc.request("$JS.API.STREAM.CREATE.TTLS", b'{"name":"TTLS","subjects":["ttl.>"],'
                         b'"storage":"file","allow_msg_ttl":true}', timeout=5)
        acks = []
        for i, ttl in enumerate(["1h", "90s", "never", None, "2h"]):
            headers = {"Nats-TTL": ttl} if ttl else None
            acks.append(await js.publish(f"ttl.{i}", b"x%d" % i, headers=headers))
        await nc.close()
        return acks

    with nats_server(store_dir=str(sd)) as srv:
        acks = asyncio.run(write(srv.url))
    directory = jsstore.stream_dir(str(sd), "TTLS")
    with open(os.path.join(directory, "msgs", "thw.db"), "rb") as f:
        sched, high_seq = TTLSchedule.decode(f.read())
    assert high_seq == 6
    fs = jsstore.FileStore(directory, StreamConfig(name="TTLS", subjects=["ttl.>"], allow_msg_ttl=True))
    by_seq = {seq: expires for expires, seq in sched.heap}
    assert sorted(by_seq) == [1, 2, 5]          # "never" and no header are not scheduled
    for seq, ttl in ((1, 3600), (2, 90), (5, 7200)):
        assert by_seq[seq] == fs.load_msg(seq).ts + ttl * SECOND
    assert sorted(fs.ttls.heap) == sorted(sched.heap)
    fs.stop()
