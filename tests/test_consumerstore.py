"""Consumer stores: the ConsumerStore contract on memory and file, o.dat / meta.inf /
meta.sum on disk, and a cross-check against the files nats-server writes."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import threading
import time

import pytest

from jsstore.store import consumerstore
from jsstore._core.storage.ackstate import AckState, decode
from jsstore._core.storage.hashing import consumer_meta_hash_key, meta_sum
from jsstore.gocompat.json import encode as go_json
from jsstore.gocompat.times import rfc3339_nano
from jsstore.store.consumerstore import FileConsumerStore, MemConsumerStore, read_consumer_meta
from jsstore.errors import (CorruptFile, CorruptStreamState, MsgNotFound, NoAckPolicy, OldUpdate,
                            StoreClosed, StoreError)
from jsstore.store.contract import ConsumerState, ConsumerStore, Pending, SequencePair

SECOND = 1_000_000_000
CREATED = 1_700_000_000 * SECOND + 123_456_000
EXPLICIT = {"durable_name": "dur", "ack_policy": "explicit", "max_deliver": -1}


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


@pytest.fixture(params=["memory", "file"])
def make_store(request, tmp_path):
    stores = []

    def make(config=EXPLICIT, name="dur"):
        if request.param == "memory":
            store = MemConsumerStore(name, CREATED, config)
        else:
            store = FileConsumerStore(str(tmp_path), "ORDERS", name, CREATED, config)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.stop()


def truncated(state: ConsumerState) -> ConsumerState:
    """The state as o.dat keeps it: pending timestamps in whole seconds."""
    pending = {s: Pending(p.sequence, p.timestamp // SECOND * SECOND)
               for s, p in (state.pending or {}).items()}
    return ConsumerState(state.delivered, state.ack_floor, pending or None, state.redelivered)


# -- the contract, on both stores -------------------------------------------------------------

def test_satisfies_the_protocol(make_store):
    store = make_store()
    assert isinstance(store, ConsumerStore)
    assert store.type() in ("memory", "file")
    assert store.config == EXPLICIT


def test_deliver_ack_and_state(make_store):
    store = make_store()
    assert not store.has_state()
    for i in range(1, 6):
        store.update_delivered(i, 10 + i, 1, i * SECOND)
    store.update_delivered(6, 12, 2, 9 * SECOND)
    store.update_acks(1, 11)
    store.update_acks(4, 14)
    state = store.state()
    assert state.delivered == SequencePair(6, 15)
    assert state.ack_floor == SequencePair(1, 11)
    assert state.pending == {12: Pending(2, 9 * SECOND), 13: Pending(3, 3 * SECOND),
                             15: Pending(5, 5 * SECOND)}
    assert state.redelivered == {12: 1}
    assert store.has_state()
    with pytest.raises(MsgNotFound):
        store.update_acks(6, 14)
    assert decode(store.encoded_state()) == truncated(state)


def test_ack_none_store(make_store):
    store = make_store({"ack_policy": "none"})
    store.update_delivered(1, 3, 1, 0)
    assert store.state().ack_floor == SequencePair(1, 3)
    with pytest.raises(NoAckPolicy):
        store.update_acks(1, 3)
    with pytest.raises(NoAckPolicy):
        store.update_delivered(2, 4, 2, 0)


def test_starting_and_reset(make_store):
    store = make_store()
    store.set_starting(41)
    assert store.state() == ConsumerState(SequencePair(0, 41), SequencePair(0, 41))
    store.update_starting(40)
    store.update_starting(50)
    assert store.state() == ConsumerState(SequencePair(0, 50), SequencePair(0, 41))
    store.update_delivered(1, 51, 1, 0)
    store.reset(7)
    assert store.state() == ConsumerState(SequencePair(0, 7), SequencePair(0, 7))


def test_update_checks_and_old_updates(make_store):
    store = make_store()
    good = ConsumerState(SequencePair(10, 20), SequencePair(5, 12), {15: Pending(7, SECOND)}, {15: 2})
    store.update(good)
    assert store.state() == good
    for bad, text in [
        (ConsumerState(SequencePair(4, 20), SequencePair(5, 12)), "bad ack floor for consumer"),
        (ConsumerState(SequencePair(10, 11), SequencePair(5, 12)), "bad ack floor for stream"),
        (ConsumerState(SequencePair(10, 20), SequencePair(5, 12), {12: Pending(1, 0)}),
         "bad pending entry, sequence [12] out of range"),
    ]:
        with pytest.raises(StoreError, match=text.replace("[", r"\[").replace("]", r"\]")):
            store.update(bad)
    with pytest.raises(OldUpdate):
        store.update(ConsumerState(SequencePair(9, 20), SequencePair(5, 12)))
    with pytest.raises(OldUpdate):
        store.update(ConsumerState(SequencePair(10, 20), SequencePair(5, 11)))
    older = ConsumerState(SequencePair(3, 4), SequencePair(1, 2))
    store.force_update(older)
    assert store.state() == older


def test_remove_redelivered_below(make_store):
    store = make_store()
    for sseq in (2, 4, 6):
        store.update_delivered(sseq, sseq, 1, 0)
        store.update_delivered(sseq + 10, sseq, 2, 0)
    store.remove_redelivered_below(5)
    assert store.state().redelivered == {6: 1}


def test_update_config_changes_policy(make_store):
    store = make_store()
    store.update_delivered(1, 1, 1, 0)
    store.update_config({"ack_policy": "none"})
    assert store.config == {"ack_policy": "none"}
    with pytest.raises(NoAckPolicy):
        store.update_acks(1, 1)


def test_closed_store(make_store):
    store = make_store()
    store.update_delivered(1, 1, 1, 0)
    store.stop()
    store.stop()
    for call in (store.state, store.encoded_state, lambda: store.update_acks(1, 1),
                 lambda: store.update_delivered(2, 2, 1, 0), lambda: store.set_starting(3)):
        with pytest.raises(StoreClosed):
            call()


def test_empty_name_is_rejected(tmp_path):
    with pytest.raises(StoreError):
        MemConsumerStore("", CREATED, EXPLICIT)
    with pytest.raises(StoreError):
        FileConsumerStore(str(tmp_path), "ORDERS", "", CREATED, EXPLICIT)


# -- the file store ---------------------------------------------------------------------------

def open_file_store(tmp_path, config=EXPLICIT, name="dur"):
    return FileConsumerStore(str(tmp_path), "ORDERS", name, CREATED, config)


def test_persists_across_reopen(tmp_path):
    store = open_file_store(tmp_path)
    for i in range(1, 101):
        store.update_delivered(i, 2 * i, 1, CREATED + i * 10_000_000)
    for i in range(1, 101, 3):
        store.update_acks(i, 2 * i)
    store.update_delivered(101, 8, 3, CREATED + 5 * SECOND)
    before = store.state()
    store.stop()
    reopened = open_file_store(tmp_path)
    assert reopened.has_state()
    assert reopened.state() == truncated(before)
    reopened.update_acks(3, 6)   # it keeps working from the restored state
    assert 6 not in reopened.state().pending
    reopened.stop()


def test_background_flush_writes_o_dat(tmp_path):
    store = open_file_store(tmp_path)
    path = os.path.join(store.directory, "o.dat")
    store.update_delivered(1, 5, 1, CREATED)
    wait_for(lambda: os.path.exists(path) and decode(open(path, "rb").read()).delivered.stream_seq == 5)
    store.update_acks(1, 5)
    wait_for(lambda: decode(open(path, "rb").read()).ack_floor == SequencePair(1, 5))
    assert not os.path.exists(path + ".tmp")
    store.stop()


def test_background_flush_is_rate_limited(tmp_path, monkeypatch):
    writes = []
    real_write = consumerstore._write_atomically

    def counting_write(path, data, sync=False):
        if path.endswith("o.dat"):
            writes.append(time.monotonic())
        real_write(path, data, sync)

    monkeypatch.setattr(consumerstore, "_write_atomically", counting_write)
    store = open_file_store(tmp_path)
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < 0.6:
        i += 1
        store.update_delivered(i, i, 1, CREATED)
        time.sleep(0.001)
    elapsed = time.monotonic() - start
    wait_for(lambda: decode(open(os.path.join(store.directory, "o.dat"), "rb").read())
             .delivered.consumer_seq == i)
    assert 2 <= len(writes) <= elapsed / consumerstore.FLUSH_INTERVAL + 2
    gaps = [b - a for a, b in zip(writes, writes[1:])]
    assert min(gaps) >= consumerstore.FLUSH_INTERVAL * 0.9
    store.stop()


def test_a_costly_encoding_spaces_the_timer_writes(tmp_path, monkeypatch):
    """The timer writes o.dat at most every ENCODE_SHARE x the last encoding's duration
    (an encoding of 1M pending acks holds the store's lock for about 0.3 s)."""
    store = open_file_store(tmp_path)
    clock = itertools.cycle([10.0, 10.5])   # every encoding "takes" 0.5 s

    class SlowClock:
        @staticmethod
        def perf_counter():
            return next(clock)

        monotonic = staticmethod(time.monotonic)

    scheduled = []
    monkeypatch.setattr(consumerstore, "time", SlowClock)
    monkeypatch.setattr(consumerstore._FLUSHER, "schedule",
                        lambda st, due: scheduled.append((st, due)))
    store.update_delivered(1, 5, 1, CREATED)        # schedules the first write
    assert len(scheduled) == 1
    store._flush_from_timer()                       # writes, encoding "for 0.5 s"
    written = store._last_write
    assert decode(open(os.path.join(store.directory, "o.dat"), "rb").read()) \
        .delivered.stream_seq == 5
    store.update_delivered(2, 6, 1, CREATED)        # schedules the next write: 5 s later
    assert len(scheduled) == 2
    assert scheduled[1][1] >= written + consumerstore.ENCODE_SHARE * 0.5
    monkeypatch.undo()
    store.stop()


def test_synchronous_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(consumerstore, "FLUSH_INTERVAL", 3600.0)   # no timer write in this test
    store = open_file_store(tmp_path)
    path = os.path.join(store.directory, "o.dat")
    store.set_starting(9)
    assert decode(open(path, "rb").read()) == ConsumerState(SequencePair(0, 9), SequencePair(0, 9))
    forced = ConsumerState(SequencePair(4, 20), SequencePair(2, 15), {18: Pending(3, 7 * SECOND)})
    store.force_update(forced)
    assert decode(open(path, "rb").read()) == forced
    store.update_delivered(5, 21, 1, 8 * SECOND)
    store.flush()
    assert decode(open(path, "rb").read()).delivered == SequencePair(5, 21)
    store.update_delivered(6, 22, 1, 8 * SECOND)
    store.stop()                                  # stop writes what the timer has not
    assert decode(open(path, "rb").read()).delivered == SequencePair(6, 22)


def test_concurrent_updates_and_flushes(tmp_path):
    store = open_file_store(tmp_path)
    errors = []

    def deliver(offset):
        try:
            for i in range(offset, 4000, 4):
                store.update_delivered(i + 1, i + 1, 1, CREATED)
                if i % 50 == 0:
                    store.flush()
        except Exception as exc:   # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=deliver, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    expected = store.state()
    store.stop()
    assert open_file_store(tmp_path).state() == truncated(expected)


def test_meta_files(tmp_path):
    store = open_file_store(tmp_path)
    directory = os.path.join(str(tmp_path), "obs", "dur")
    assert store.directory == directory
    data = open(os.path.join(directory, "meta.inf"), "rb").read()
    info = json.loads(data)
    assert list(info)[:2] == ["Created", "Name"]
    assert info["Created"] == "2023-11-14T22:13:20.123456Z"
    assert info["Name"] == "dur" and info["ack_policy"] == "explicit"
    expected_sum = meta_sum(consumer_meta_hash_key("ORDERS", "dur"), data)
    assert open(os.path.join(directory, "meta.sum"), "rb").read() == expected_sum
    assert len(expected_sum) == 16
    assert read_consumer_meta(directory, "ORDERS") == info
    store.update_config({**EXPLICIT, "max_deliver": 3})
    assert read_consumer_meta(directory, "ORDERS")["max_deliver"] == 3
    with open(os.path.join(directory, "meta.inf"), "ab") as f:
        f.write(b" ")
    with pytest.raises(CorruptFile):
        read_consumer_meta(directory, "ORDERS")
    with pytest.raises(CorruptFile):
        read_consumer_meta(directory, "OTHER")
    store.stop()


def test_meta_inf_written_only_when_missing(tmp_path):
    open_file_store(tmp_path).stop()
    path = os.path.join(str(tmp_path), "obs", "dur", "meta.inf")
    first = open(path, "rb").read()
    FileConsumerStore(str(tmp_path), "ORDERS", "dur", CREATED + SECOND, EXPLICIT).stop()
    assert open(path, "rb").read() == first


def test_corrupt_o_dat_fails_open(tmp_path):
    store = open_file_store(tmp_path)
    store.set_starting(5)
    store.stop()
    with open(os.path.join(str(tmp_path), "obs", "dur", "o.dat"), "wb") as f:
        f.write(b"\x16\x09garbage")
    with pytest.raises(CorruptStreamState):
        open_file_store(tmp_path)


def test_delete_removes_directory(tmp_path):
    store = open_file_store(tmp_path)
    store.set_starting(3)
    store.update_delivered(1, 4, 1, 0)
    store.delete()
    assert not os.path.exists(os.path.join(str(tmp_path), "obs", "dur"))
    with pytest.raises(StoreClosed):
        store.state()


def test_go_json_escapes():
    assert go_json({"a": "x.>", "b": "<&>", "c": "\u2028é", "n": 1}) == \
        b'{"a":"x.\\u003e","b":"\\u003c\\u0026\\u003e","c":"\\u2028\xc3\xa9","n":1}'


def test_meta_inf_uses_go_escapes(tmp_path):
    store = open_file_store(tmp_path, {**EXPLICIT, "filter_subject": "orders.>"})
    with open(os.path.join(store.directory, "meta.inf"), "rb") as f:
        assert b'"filter_subject":"orders.\\u003e"' in f.read()
    store.stop()


@pytest.mark.parametrize("name", [".", "..", "a/b"])
def test_path_like_names_are_rejected(tmp_path, name):
    with pytest.raises(StoreError):
        FileConsumerStore(str(tmp_path), "ORDERS", name, CREATED, EXPLICIT)


@pytest.mark.parametrize("ts, text", [
    (0, "1970-01-01T00:00:00Z"),
    (CREATED, "2023-11-14T22:13:20.123456Z"),
    (1_700_000_000 * SECOND + 1, "2023-11-14T22:13:20.000000001Z"),
    (1_700_000_000 * SECOND + 500_000_000, "2023-11-14T22:13:20.5Z"),
])
def test_rfc3339_nano(ts, text):
    assert rfc3339_nano(ts) == text


# -- cross-check with nats-server -------------------------------------------------------------

async def _server_session(url, stream, durable):
    """Publish 20 messages, fetch 10, ack 5 of them, let 2 redeliver; returns consumer info."""
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig

    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(name=stream, subjects=["orders.>"])
        for i in range(20):
            await js.publish(f"orders.{i % 3}", f"m{i}".encode())
        sub = await js.pull_subscribe("orders.>", durable=durable, config=ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT, ack_wait=1.0, max_deliver=5))
        msgs = await sub.fetch(10, timeout=5)
        assert len(msgs) == 10
        by_seq = {m.metadata.sequence.stream: m for m in msgs}
        for seq in (1, 2, 3, 6, 9):
            await by_seq[seq].ack_sync()
        await asyncio.sleep(1.3)                   # 4, 5, 7, 8, 10 pass their ack wait
        again = await sub.fetch(2, timeout=5)      # redeliveries of the oldest two
        assert [m.metadata.sequence.stream for m in again] == [4, 5]
        await asyncio.sleep(0.3)                   # let the server flush o.dat
        return await js.consumer_info(stream, durable)
    finally:
        await nc.close()


async def _consumer_info(url, stream, durable):
    import nats

    nc = await nats.connect(url)
    try:
        return await nc.jetstream().consumer_info(stream, durable)
    finally:
        await nc.close()


@pytest.mark.natsserver
def test_decodes_the_o_dat_nats_server_writes(tmp_path):
    from natsserver import nats_server, require_nats_server

    require_nats_server()
    store_dir = str(tmp_path / "store")
    with nats_server(store_dir) as server:
        info = asyncio.run(_server_session(server.url, "ORDERS", "dur"))
    consumer_dir = os.path.join(store_dir, "jetstream", "$G", "streams", "ORDERS", "obs", "dur")
    with open(os.path.join(consumer_dir, "o.dat"), "rb") as f:
        state = decode(f.read())

    assert state.delivered == SequencePair(info.delivered.consumer_seq, info.delivered.stream_seq)
    assert state.ack_floor == SequencePair(info.ack_floor.consumer_seq, info.ack_floor.stream_seq)
    assert state.ack_floor == SequencePair(3, 3)
    assert sorted(state.pending) == [4, 5, 7, 8, 10] and len(state.pending) == info.num_ack_pending
    assert state.redelivered == {4: 1, 5: 1} and info.num_redelivered == 2
    assert state.pending[7].sequence == 7                   # original delivery seqs
    assert state.pending[4].sequence == 4
    now = time.time_ns()
    assert all(now - 30 * SECOND < p.timestamp <= now + SECOND for p in state.pending.values())

    # meta.inf / meta.sum as nats-server wrote them pass our checksum check, and our JSON
    # writer reproduces the server's bytes (Go's escapes, compact separators).
    meta = read_consumer_meta(consumer_dir, "ORDERS")
    with open(os.path.join(consumer_dir, "meta.inf"), "rb") as f:
        raw_meta = f.read()
    assert b'"filter_subject":"orders.\\u003e"' in raw_meta
    assert go_json(json.loads(raw_meta)) == raw_meta
    assert meta["Name"] == "dur" and meta["durable_name"] == "dur"
    assert meta["ack_policy"] == "explicit" and meta["max_deliver"] == 5

    # Our encoding read back by nats-server: ack 4 and 5 (the floor moves to 6) and restart.
    acks = AckState(ack_policy="explicit", max_deliver=5)
    with open(os.path.join(consumer_dir, "o.dat"), "rb") as f:
        acks.load_encoded(f.read())
    acks.update_acks(state.pending[4].sequence, 4)
    acks.update_acks(state.pending[5].sequence, 5)
    assert (acks.ack_floor_consumer, acks.ack_floor_stream) == (6, 6)
    with open(os.path.join(consumer_dir, "o.dat"), "wb") as f:
        f.write(acks.encode())
    with nats_server(store_dir) as server:
        info = asyncio.run(_consumer_info(server.url, "ORDERS", "dur"))
    assert (info.ack_floor.consumer_seq, info.ack_floor.stream_seq) == (6, 6)
    assert info.num_ack_pending == 3
    assert (info.delivered.consumer_seq, info.delivered.stream_seq) == (12, 10)
