"""examples/sqlite_store: the contract kit against SqliteStore, and `jsstore serve
--store-factory examples.sqlite_store:open_store` serving nats-py across a restart."""

from __future__ import annotations

import asyncio
import contextlib
import os

import nats
import pytest

import jsstore
from examples.sqlite_store import SqliteStore, open_store
from jsstore.store.config import StoreOptions
from jsstore.testing import StreamStoreContract
from jsstore.testing.server import start_jsstore_server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FACTORY = "examples.sqlite_store:open_store"


class TestSqliteStore(StreamStoreContract):
    def open_store(self, directory, config):
        return SqliteStore(directory, config, StoreOptions(sync_interval=0))

    def abandon(self, store):
        """The process dies: the database is just closed (every change was committed)."""
        store.closed = True
        store.db.close()


@contextlib.contextmanager
def serving(store_dir):
    server = start_jsstore_server(store_dir, ["--store-factory", FACTORY])
    try:
        yield server
    finally:
        server.stop()
        with contextlib.suppress(OSError):
            os.unlink(server.log_path)


async def first_run(url: str) -> list[bytes]:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.>"])
        for i in range(5):
            await js.publish(f"orders.{i}", b"order %d" % i, headers={"N": str(i)})
        sub = await js.pull_subscribe("orders.>", "D")
        msgs = await sub.fetch(3, timeout=5)
        for msg in msgs:
            await msg.ack_sync()
        kv = await js.create_key_value(bucket="CFG")
        await kv.put("a", b"1")
        await kv.put("b", b"2")
        await kv.put("a", b"3")
        return [m.data for m in msgs]
    finally:
        await nc.close()


async def second_run(url: str) -> dict:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        info = await js.stream_info("ORDERS")
        sub = await js.pull_subscribe("orders.>", "D")
        rest = await sub.fetch(5, timeout=2)
        for msg in rest:
            await msg.ack_sync()
        fourth = await js.get_msg("ORDERS", 4)
        kv = await js.key_value("CFG")
        return {"messages": info.state.messages, "last_seq": info.state.last_seq,
                "rest": [m.data for m in rest], "fourth": (fourth.data, fourth.headers),
                "a": (await kv.get("a")).value, "b": (await kv.get("b")).value}
    finally:
        await nc.close()


def test_serve_with_the_sqlite_store_across_a_restart(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", ROOT)      # where the child imports the example from
    store_dir = tmp_path / "store"
    with serving(store_dir) as server:
        assert asyncio.run(first_run(server.url)) == [b"order 0", b"order 1", b"order 2"]
    stream = jsstore.stream_dir(str(store_dir), "ORDERS")
    assert os.path.isfile(os.path.join(stream, "messages.sqlite3"))
    assert not os.path.exists(os.path.join(stream, "msgs"))     # no block files
    with serving(store_dir) as server:
        got = asyncio.run(second_run(server.url))
    assert got == {"messages": 5, "last_seq": 5, "rest": [b"order 3", b"order 4"],
                   "fourth": (b"order 3", {"N": "3"}), "a": b"3", "b": b"2"}


def test_the_factory_reopens_the_embedded_jetstream(tmp_path):
    js = jsstore.open(tmp_path, store_factory=open_store)
    js.add_stream(name="S", subjects=["s.>"], max_msgs_per_subject=2)
    for i in range(6):
        js.publish(f"s.{i % 2}", b"%d" % i)
    js.close()
    again = jsstore.open(tmp_path, store_factory=open_store)
    state = again.stream_info("S").state
    assert (state.messages, state.first_seq, state.last_seq) == (4, 3, 6)
    assert again.get_msg("S", 6).data == b"5"
    again.close()


@pytest.mark.parametrize("spec", ["examples.sqlite_store", "examples.sqlite_store:nope"])
def test_a_bad_factory_spec_stops_serve_with_one_line(tmp_path, spec):
    with pytest.raises(RuntimeError) as info:
        start_jsstore_server(tmp_path, ["--store-factory", spec], timeout=20)
    log = str(info.value).splitlines()[1:]
    assert len(log) == 1 and log[0].startswith("jsstore: --store-factory")
