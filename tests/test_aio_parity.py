"""jsstore.aio against nats-py: each body runs in process, against `jsstore serve` and
against nats-server (tests/threeways.py), and records the same each way — PubAcks, infos
(times masked), messages, metadata, exception classes and err_codes."""

from __future__ import annotations

import asyncio

import pytest
from threeways import assert_same, outcome, plain, three_ways, until

pytestmark = pytest.mark.natsserver


async def streams_and_publish(js, errors):
    out = []
    out.append(await outcome(js.add_stream(name="ORDERS", subjects=["orders.>"],
                                           allow_direct=True)))
    out.append(await outcome(js.add_stream(name="CLASH", subjects=["orders.eu"])))
    out.append(await outcome(js.publish("orders.eu", b"one")))
    out.append(await outcome(js.publish("orders.us", b"two", headers={"Nats-Msg-Id": "m-1"})))
    out.append(await outcome(js.publish("orders.us", b"two", headers={"Nats-Msg-Id": "m-1"})))
    out.append(await outcome(js.publish("orders.eu", b"three",
                                        headers={"Nats-Expected-Last-Sequence": "1"})))
    out.append(await outcome(js.publish("orders.eu", b"three",
                                        headers={"Nats-Expected-Last-Sequence": "2"})))
    out.append(await outcome(js.publish("orders.eu", b"four", stream="OTHER")))
    out.append(await outcome(js.publish("orders.eu", b"four", stream="ORDERS",
                                        headers={"Nats-Expected-Last-Subject-Sequence": "3",
                                                 "X-Trace": "t"})))
    out.append(await outcome(js.publish("orders.us", b"five",
                                        headers={"Nats-Expected-Last-Msg-Id": "m-1"})))
    out.append(await outcome(js.publish("orders.us", b"five",
                                        headers={"Nats-Expected-Last-Msg-Id": "m-9"})))
    out.append(await outcome(js.publish("nowhere", b"lost")))
    out.append(await outcome(js.stream_info("ORDERS")))
    out.append(await outcome(js.stream_info("ORDERS", subjects_filter="orders.*")))
    out.append(await outcome(js.stream_info("MISSING")))
    out.append(await outcome(js.find_stream_name_by_subject("orders.eu")))
    out.append(await outcome(js.find_stream_name_by_subject("elsewhere")))
    out.append(await outcome(js.get_msg("ORDERS", 2)))
    out.append(await outcome(js.get_msg("ORDERS", 99)))
    out.append(await outcome(js.get_msg("ORDERS", 1, subject="orders.eu", next=True)))
    out.append(await outcome(js.get_last_msg("ORDERS", "orders.eu")))
    out.append(await outcome(js.get_last_msg("ORDERS", "orders.none")))
    out.append(await outcome(js.get_msg("ORDERS", 4, direct=True)))
    out.append(await outcome(js.get_last_msg("ORDERS", "orders.us", direct=True)))
    out.append(await outcome(js.get_msg("ORDERS", 99, direct=True)))
    out.append(await outcome(js.delete_msg("ORDERS", 1)))
    out.append(await outcome(js.delete_msg("ORDERS", 1)))
    out.append(await outcome(js.update_stream(name="ORDERS", subjects=["orders.>"],
                                              max_msgs_per_subject=5, max_age=3600,
                                              allow_direct=True)))
    out.append(await outcome(js.update_stream(name="MISSING", subjects=["m"])))
    out.append(await outcome(js.add_stream(name="AUDIT", subjects=["audit"],
                                           storage="memory", duplicate_window=30)))
    out.append(await outcome(js.streams_info()))
    page = await js.streams_info_iterator(offset=1)
    out.append((page.offset, page.total, [plain(info) for info in page]))
    out.append(await outcome(js.purge_stream("ORDERS", subject="orders.us")))
    out.append(await outcome(js.purge_stream("ORDERS", keep=1)))
    out.append(await outcome(js.stream_info("ORDERS")))
    out.append(await outcome(js.purge_stream("MISSING")))
    out.append(await outcome(js.delete_stream("AUDIT")))
    out.append(await outcome(js.delete_stream("AUDIT")))
    return out


def test_streams_and_publish(tmp_path):
    assert_same(three_ways(tmp_path, streams_and_publish))


async def pull_consumers(js, errors):
    out = []
    await js.add_stream(name="JOBS", subjects=["jobs.*"])
    for n in range(5):
        await js.publish(f"jobs.{n % 2}", b"job %d" % n)
    out.append(await outcome(js.add_consumer("JOBS", durable_name="W", ack_policy="explicit",
                                             ack_wait=30, max_deliver=5)))
    out.append(await outcome(js.add_consumer("MISSING", durable_name="W")))
    out.append(await outcome(js.consumer_info("JOBS", "W")))
    out.append(await outcome(js.consumer_info("JOBS", "NOBODY")))
    out.append(await outcome(js.consumer_info("MISSING", "W")))
    sub = await js.pull_subscribe("jobs.*", "W", stream="JOBS")
    msgs = await sub.fetch(3, timeout=2)
    out.append([(m.subject, m.data, plain(m.metadata)) for m in msgs])
    await msgs[0].ack_sync()
    out.append(await outcome(msgs[0].ack()))          # already acknowledged
    await msgs[1].nak()
    await msgs[2].in_progress()
    await msgs[2].term()
    # over NATS a nak is applied after it arrives, maybe after the next pull request: so
    # the rest is fetched until the redelivery is among it, and recorded in stream order
    rest = []
    while len(rest) < 3:
        rest += await sub.fetch(3, timeout=2)
    rest.sort(key=lambda m: m.metadata.sequence.stream)
    out.append([(m.subject, m.data, m.metadata.sequence.stream, m.metadata.num_delivered)
                for m in rest])
    for m in rest:
        await m.ack_sync()
    out.append(await outcome(sub.fetch(1, timeout=0.5)))
    out.append(await outcome(sub.fetch(3, timeout=0.5)))
    info = await js.consumer_info("JOBS", "W")
    while info.num_ack_pending:         # the term applied (over NATS: after it arrived)
        info = await js.consumer_info("JOBS", "W")
    out.append((info.delivered.stream_seq, info.ack_floor.stream_seq, info.num_ack_pending,
                info.num_redelivered, info.num_pending))
    durable = await js.pull_subscribe("jobs.1", "ODD", stream="JOBS")
    out.append([(m.subject, m.data) for m in await durable.fetch(10, timeout=1)])
    out.append(plain((await durable.consumer_info()).config))
    out.append(await outcome(js.delete_consumer("JOBS", "ODD")))
    out.append(await outcome(js.delete_consumer("JOBS", "ODD")))
    ephemeral = await js.pull_subscribe("jobs.0")
    out.append([(m.subject, m.metadata.sequence.stream) for m in await ephemeral.fetch(2)])
    await js.publish("jobs.9", b"with headers", headers={"X-Trace": "abc", "X-Two": "2"})
    # the ConsumerConfig of the way under test, found on an info it answered
    tail = await js.pull_subscribe("jobs.9", "TAIL", config=type(info.config)(
        deliver_policy="last", ack_policy="explicit"))
    [last] = await tail.fetch(1, timeout=2, heartbeat=0.5)
    out.append((last.subject, last.data, last.headers, plain(last.metadata)))
    # a fetch waiting when the message is published gets it; a bigger batch than there is
    # gets what there is
    waiting = asyncio.ensure_future(tail.fetch(1, timeout=5))
    await asyncio.sleep(0.2)
    await js.publish("jobs.9", b"while waiting")
    out.append([(m.data, m.metadata.sequence.stream) for m in await waiting])
    await js.publish("jobs.9", b"one more")
    out.append([m.data for m in await tail.fetch(5, timeout=1)])
    out.append(await outcome(js.add_consumer("JOBS", durable_name="BAD", ack_policy="none",
                                             max_ack_pending=10)))
    out.append(await outcome(js.add_consumer("JOBS", durable_name="W", ack_wait=60)))
    return out


def test_pull_consumers(tmp_path):
    assert_same(three_ways(tmp_path, pull_consumers))


async def push_consumers(js, errors):
    out = []
    await js.add_stream(name="EVENTS", subjects=["events.>"])
    for n in range(3):
        await js.publish(f"events.{n}", b"e%d" % n)
    got = []

    async def on_msg(msg):
        got.append((msg.subject, msg.data, plain(msg.metadata)))
    sub = await js.subscribe("events.>", cb=on_msg, durable="AUDITOR")
    await until(lambda: len(got) == 3)
    await js.publish("events.late", b"late")
    await until(lambda: len(got) == 4)
    out.append(got)
    await sub.unsubscribe()
    out.append(plain((await js.consumer_info("EVENTS", "AUDITOR")).config))

    manual = await js.subscribe("events.1", durable="ONE", manual_ack=True)
    first = await manual.next_msg(timeout=2)
    out.append((first.subject, first.data, plain(first.metadata)))
    await first.ack_sync()
    out.append(await outcome(manual.next_msg(timeout=0.5)))
    await manual.unsubscribe()

    newest = await js.subscribe("events.>", deliver_policy="last", headers_only=True)
    latest = await newest.next_msg(timeout=2)
    out.append((latest.subject, latest.data, latest.headers, latest.metadata.sequence.stream))
    await newest.unsubscribe()

    ordered = await js.subscribe("events.>", ordered_consumer=True)
    seen = [await ordered.next_msg(timeout=2) for _ in range(4)]
    await js.publish("events.after", b"after")
    seen.append(await ordered.next_msg(timeout=2))
    out.append([(m.subject, m.data, m.metadata.sequence.stream, m.metadata.sequence.consumer,
                 m.metadata.num_delivered) for m in seen])
    config = (await ordered.consumer_info()).config
    out.append((config.ack_policy, config.max_deliver, config.flow_control,
                config.idle_heartbeat, config.mem_storage, config.deliver_policy))
    await ordered.unsubscribe()
    return out


def test_push_consumers(tmp_path):
    assert_same(three_ways(tmp_path, push_consumers))


async def account_async_publish_and_queues(js, errors):
    out = []
    await js.add_stream(name="TASKS", subjects=["tasks.>"])
    futures = [await js.publish_async(f"tasks.{n}", b"t%d" % n) for n in range(5)]
    futures.append(await js.publish_async("tasks.0", b"dup", headers={"Nats-Msg-Id": "d"}))
    futures.append(await js.publish_async("tasks.0", b"dup", headers={"Nats-Msg-Id": "d"}))
    # (not a failing one: nats-py 2.16 never settles its future, its reply handler raising
    # the error instead; tests/test_aio.py covers jsstore.aio's)
    await js.publish_async_completed()
    out.append(js.publish_async_pending())
    out.append([await outcome(f) for f in futures])
    out.append(await outcome(js.account_info()))

    shares = {"a": [], "b": []}

    def member(name):
        async def on_msg(msg):
            shares[name].append(msg.data)
        return on_msg
    first = await js.subscribe("tasks.>", queue="workers", cb=member("a"))
    second = await js.subscribe("tasks.>", queue="workers", cb=member("b"))
    await until(lambda: len(shares["a"]) + len(shares["b"]) == 6)
    out.append(sorted(shares["a"] + shares["b"]))
    out.append(plain((await first.consumer_info()).config))
    out.append(await outcome(js.subscribe("tasks.>", queue="others", durable="workers")))
    await first.unsubscribe()
    await second.unsubscribe()

    await js.add_consumer("TASKS", durable_name="LATER", deliver_policy="by_start_sequence",
                          opt_start_seq=3)
    out.append(await outcome(js.pause_consumer("TASKS", "LATER", "2999-01-01T00:00:00Z")))
    out.append(await outcome(js.resume_consumer("TASKS", "LATER")))
    out.append(await outcome(js.reset_consumer("TASKS", "LATER", seq=4)))
    out.append(await outcome(js.reset_consumer("TASKS", "LATER", seq=2)))
    out.append(await outcome(js.consumers_info("TASKS")))
    return out


def test_account_async_publish_and_queues(tmp_path):
    assert_same(three_ways(tmp_path, account_async_publish_and_queues))


async def key_value_buckets(js, errors):
    out = []
    kv = await js.create_key_value(bucket="PROFILES", history=5, direct=True)
    out.append(await outcome(kv.status()))
    out.append(await outcome(kv.put("alice", b"a1")))
    out.append(await outcome(kv.put("bob", b"b1")))
    out.append(await outcome(kv.put("alice", b"a2")))
    out.append(await outcome(kv.get("alice")))
    out.append(await outcome(kv.get("alice", revision=1)))
    out.append(await outcome(kv.get("nobody")))
    out.append(await outcome(kv.get("bad key")))
    out.append(await outcome(kv.create("alice", b"again")))
    out.append(await outcome(kv.create("carol", b"c1")))
    out.append(await outcome(kv.update("carol", b"c2", last=5)))
    out.append(await outcome(kv.update("carol", b"c3", last=5)))
    out.append(await outcome(kv.delete("bob")))
    out.append(await outcome(kv.get("bob")))
    out.append(await outcome(kv.create("bob", b"b2")))
    out.append(await outcome(kv.purge("carol")))
    out.append(await outcome(kv.keys()))
    out.append(await outcome(kv.history("alice")))
    out.append(await outcome(kv.history("carol")))
    watcher = await kv.watchall()
    first = []
    while (update := await watcher.updates(timeout=5)) is not None:
        first.append(plain(update))
    out.append(first)
    await kv.put("dave", b"d1")
    out.append(plain(await watcher.updates(timeout=5)))
    await watcher.stop()
    out.append(await outcome(bound(js.key_value("PROFILES"))))
    out.append(await outcome(bound(js.key_value("MISSING"))))
    out.append(await outcome(js.create_key_value(bucket="HUGE", history=65)))
    empty = await js.create_key_value(bucket="EMPTY")
    out.append(await outcome(empty.keys()))
    out.append(await outcome(js.delete_key_value("EMPTY")))
    out.append(await outcome(bound(js.key_value("EMPTY"))))
    return out


async def bound(opening):
    """What a bucket binding gives: its class name and what its status says."""
    kv = await opening
    status = await kv.status()
    return type(kv).__name__, status.bucket, status.values, status.history


def test_key_value_buckets(tmp_path):
    assert_same(three_ways(tmp_path, key_value_buckets))


async def object_stores(js, errors):
    out = []
    store = await js.create_object_store("FILES", description="files")
    out.append(await outcome(store.status()))
    content = bytes(range(256)) * 1200                      # 300 KiB: three chunks
    out.append(await outcome(store.put("big.bin", content)))
    out.append(await outcome(store.put("note.txt", "hello")))
    out.append(await outcome(store.put("empty", b"")))
    got = await store.get("big.bin")
    out.append((plain(got.info), got.data == content))
    out.append(await outcome(store.get("note.txt")))
    out.append(await outcome(store.get("empty")))
    out.append(await outcome(store.get("missing")))
    out.append(await outcome(store.put("note.txt", b"hello again")))     # replaces
    out.append(await outcome(store.get("note.txt")))
    out.append(await outcome(store.list()))
    out.append(await outcome(store.delete("empty")))
    out.append(await outcome(store.get_info("empty")))
    out.append(await outcome(store.get_info("empty", show_deleted=True)))
    meta = type(got.info.meta)(name="renamed.txt", description="moved")
    out.append(await outcome(store.update_meta("note.txt", meta)))
    out.append(await outcome(store.list(ignore_deletes=True)))
    out.append(await outcome(store.status()))
    await store.seal()
    out.append(await outcome(store.put("late", b"x")))
    out.append(await outcome(bound_store(js.object_store("FILES"))))
    out.append(await outcome(bound_store(js.object_store("MISSING"))))
    out.append(await outcome(js.create_object_store("bad name")))
    empty = await js.create_object_store("NOTHING")
    out.append(await outcome(empty.list()))
    out.append(await outcome(js.delete_object_store("NOTHING")))
    return out


async def bound_store(opening):
    store = await opening
    status = await store.status()
    return type(store).__name__, status.bucket, status.sealed, status.description


def test_object_stores(tmp_path):
    assert_same(three_ways(tmp_path, object_stores))


async def key_value_ttls_and_markers(js, errors):
    """Per-key TTLs (create, purge) and the markers limit_marker_ttl has the server leave,
    as a watch, get, keys, history and purge_deletes see them."""
    out = []
    kv = await js.create_key_value(bucket="TTL", ttl=3600, limit_marker_ttl=2)
    out.append(await outcome(kv.status()))
    out.append(await outcome(kv.create("short", b"x", msg_ttl=1)))
    out.append(await outcome(kv.put("kept", b"y")))
    out.append((await js.get_last_msg("KV_TTL", "$KV.TTL.short")).headers)
    watcher = await kv.watch("short")
    out.append(plain(await watcher.updates(timeout=5)))
    out.append(plain(await watcher.updates(timeout=5)))
    out.append(plain(await watcher.updates(timeout=10)))     # the marker, once expired
    await watcher.stop()
    out.append(await outcome(kv.get("short")))
    out.append(await outcome(kv.keys()))
    out.append(await outcome(kv.purge("kept", msg_ttl=60)))
    out.append((await js.get_last_msg("KV_TTL", "$KV.TTL.kept")).headers)
    out.append(await outcome(kv.history("kept")))
    history = await js.create_key_value(bucket="DELS", history=5)
    await history.put("a", b"1")
    await history.put("b", b"2")
    await history.delete("a")
    await history.purge("b")
    out.append(await outcome(history.purge_deletes(olderthan=3600)))
    out.append(await outcome(history.history("a")))
    out.append(await outcome(history.purge_deletes(olderthan=-1)))
    out.append(await outcome(history.history("a")))
    out.append(await outcome(history.history("b")))
    out.append(await outcome(js.stream_info("KV_DELS")))
    return out


def test_key_value_ttls_and_markers(tmp_path):
    assert_same(three_ways(tmp_path, key_value_ttls_and_markers))
