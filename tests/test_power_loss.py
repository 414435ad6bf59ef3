"""Power loss under ``sync_interval: always``: `jsstore serve` runs with the durable-length
log armed (jsstore.store.durablelog), takes acknowledged publishes from several connections
at once, is killed (SIGKILL) with more publishes in flight, and every file of its store is
cut back to what its last fsync made durable (files never synced removed) -- what the disk
would hold had the power gone at that moment.  The disk is made slow (each fsync 50 ms),
so the kill lands while an fsync is under way.  Reopened, the store holds every message that
was acknowledged, with its content, and the consumer created before."""

from __future__ import annotations

import asyncio
import os

import nats
import pytest

import jsstore
from jsstore.store import durablelog
from jsstoreserver import start_jsstore_server

CLIENTS = 4
WAVES = 5
PER_WAVE = 250


def body(client: int, wave: int, i: int) -> bytes:
    return (b"%d/%d/%d:" % (client, wave, i)).ljust(128, b"x")


async def publish_and_kill(server) -> dict[int, tuple[str, bytes]]:
    conns = [await nats.connect(server.url) for _ in range(CLIENTS)]
    js = conns[0].jetstream()
    await js.add_stream(name="P", subjects=["p.>"])
    await js.add_consumer("P", durable_name="D", ack_policy="explicit")
    acked: dict[int, tuple[str, bytes]] = {}

    async def one(client: int, wave: int, i: int) -> None:
        subject = f"p.{client}.{i % 7}"
        data = body(client, wave, i)
        ack = await conns[client].jetstream().publish(subject, data)
        acked[ack.seq] = (subject, data)

    for wave in range(WAVES):
        await asyncio.gather(*(one(c, wave, i) for c in range(CLIENTS) for i in range(PER_WAVE)))
    # more in flight, never awaited: whatever of them is acknowledged is not known here
    for i in range(500):
        await conns[i % CLIENTS].publish(f"p.late.{i}", b"late", reply=f"_INBOX.none.{i}")
    for conn in conns:
        await conn.flush()
    server.kill()
    for conn in conns:
        try:
            await conn.close()
        except Exception:
            pass
    return acked


@pytest.mark.timeout(120)
def test_every_acknowledged_message_survives_a_power_loss(tmp_path, monkeypatch):
    log = tmp_path / "durable.log"
    store = tmp_path / "store"
    monkeypatch.setenv(durablelog.ENV, str(log))
    monkeypatch.setenv(durablelog.SLOW_ENV, "0.05")     # a slow disk: kills land mid-fsync
    server = start_jsstore_server(store, ["--sync_interval", "always"])
    try:
        acked = asyncio.run(publish_and_kill(server))
    finally:
        server.kill()
        os.unlink(server.log_path)
    assert len(acked) == CLIENTS * WAVES * PER_WAVE
    # a power loss: every file back to its durable length, files never synced gone
    cut, removed = durablelog.cut_to_durable(str(store), str(log))
    assert cut >= 1                    # (the write block was longer than what was durable)
    fsyncs = sum(1 for line in open(log) if line.rstrip().endswith(".blk"))
    assert fsyncs < len(acked) / 10    # group commit: far fewer fsyncs than acks
    js = jsstore.open(store, timers=False)
    try:
        for seq, (subject, data) in sorted(acked.items()):
            msg = js.get_msg("P", seq)
            assert (msg.subject, msg.data) == (subject, data)
        assert js.consumer_info("P", "D").name == "D"
    finally:
        js.close()


def test_a_power_loss_keeps_what_the_group_synced_across_sealed_blocks(tmp_path):
    """The store side alone, with blocks small enough to seal many: what a SyncGroup's
    collect and run covered survives the cut, sealed blocks included; what was written
    after it is gone without damaging the rest."""
    from jsstore.store.config import StoreConfig, StoreOptions
    from jsstore.store.filestore import FileStore
    from jsstore.store.syncgroup import SyncGroup
    log = tmp_path / "durable.log"
    durablelog.arm(str(log))
    group = SyncGroup()
    store = FileStore(tmp_path / "S", StoreConfig(name="S"),
                      StoreOptions(sync="always", group=group, block_size=64 * 1024))
    try:
        for i in range(3000):
            store.store_msg(f"a.{i % 5}", None, (b"%d:" % i).ljust(100, b"x"))
        assert group.dirty == [store]
        assert group.run(group.collect()) is None
        assert group.dirty == []
        for i in range(3000, 3500):                  # written, never synced
            store.store_msg("late", None, (b"%d:" % i).ljust(100, b"x"))
        durablelog.cut_to_durable(str(tmp_path / "S"), str(log))
    finally:
        durablelog.disarm()
    again = FileStore(tmp_path / "S", StoreConfig(name="S"), StoreOptions())
    try:
        assert len(again.blocks) > 5
        assert again.state().last_seq == 3000
        for seq in (1, 1500, 3000):
            assert again.load_msg(seq).msg == (b"%d:" % (seq - 1)).ljust(100, b"x")
    finally:
        again.stop()
        store.closed = True          # (the first instance is the one that "lost power")
