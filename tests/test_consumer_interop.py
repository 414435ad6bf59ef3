"""Consumer state moves between jsstore and nats-server with the store directory.

A consumer's obs/<name>/ (meta.inf, meta.sum, o.dat) written by jsstore is read by a real
nats-server, and the reverse: both report the same delivered / ack floor / pending
numbers and carry on delivering from the same place.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

import jsstore
from natsserver import nats_server, require_nats_server

nats = pytest.importorskip("nats")

pytestmark = pytest.mark.natsserver

NUMBERS = ("delivered", "ack_floor", "num_ack_pending", "num_redelivered", "num_pending")


def numbers(info: dict) -> dict:
    out = {}
    for key in NUMBERS:
        value = info[key]
        out[key] = ((value["consumer_seq"], value["stream_seq"]) if isinstance(value, dict)
                    else value)
    return out


def jsstore_numbers(js, stream: str, name: str) -> dict:
    info = js.consumer_info(stream, name)
    return {"delivered": (info.delivered.consumer_seq, info.delivered.stream_seq),
            "ack_floor": (info.ack_floor.consumer_seq, info.ack_floor.stream_seq),
            "num_ack_pending": info.num_ack_pending,
            "num_redelivered": info.num_redelivered, "num_pending": info.num_pending}


async def _request(nc, subject: str, body: bytes = b"") -> dict:
    reply = await nc.request(subject, body, timeout=5)
    return json.loads(reply.data)


async def _nats_infos(url: str, stream: str, names: list[str]) -> dict:
    nc = await nats.connect(url)
    try:
        return {name: await _request(nc, f"$JS.API.CONSUMER.INFO.{stream}.{name}")
                for name in names}
    finally:
        await nc.close()


async def _nats_fetch(url: str, stream: str, name: str, batch: int) -> list[tuple[int, int, int]]:
    """(stream seq, consumer seq, delivered count) of a no-wait pull of `batch`."""
    nc = await nats.connect(url)
    try:
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{name}",
                         json.dumps({"batch": batch, "no_wait": True}).encode(), reply=inbox)
        got = []
        while True:
            msg = await sub.next_msg(timeout=2)
            if not msg.reply:
                break                       # the 404 / 408 status ends it
            tokens = msg.reply.split(".")
            got.append((int(tokens[5]), int(tokens[6]), int(tokens[4])))
        return got
    finally:
        await nc.close()


def test_jsstore_consumers_open_in_nats_server(tmp_path):
    require_nats_server()
    js = jsstore.open(tmp_path)
    js.add_stream(name="ORDERS", subjects=["orders.*"])
    for i in range(10):
        js.publish(f"orders.{'a' if i % 3 else 'b'}", b"order %d" % i)
    js.add_consumer("ORDERS", durable_name="EXPLICIT", ack_policy="explicit")
    js.add_consumer("ORDERS", durable_name="ALL", ack_policy="all")
    js.add_consumer("ORDERS", durable_name="FILTERED", ack_policy="explicit",
                    filter_subject="orders.b")
    explicit = js.pull_subscribe("orders.*", "EXPLICIT", stream="ORDERS")
    msgs = explicit.fetch(6, timeout=0)
    msgs[0].ack()
    msgs[1].ack()
    msgs[3].ack()
    msgs[4].nak()
    again = explicit.fetch(1, timeout=0)            # the naked message, redelivered
    assert again[0].metadata.num_delivered == 2
    every = js.pull_subscribe("orders.*", "ALL", stream="ORDERS")
    every.fetch(5, timeout=0)[2].ack()
    filtered = js.pull_subscribe("orders.b", "FILTERED", stream="ORDERS")
    filtered.fetch(2, timeout=0)[0].ack()
    names = ["EXPLICIT", "ALL", "FILTERED"]
    expected = {name: jsstore_numbers(js, "ORDERS", name) for name in names}
    js.close()

    with nats_server(tmp_path) as server:
        infos = asyncio.run(_nats_infos(server.url, "ORDERS", names))
        for name in names:
            assert "error" not in infos[name], infos[name]
            assert numbers(infos[name]) == expected[name], name
        # nats-server carries on after the last delivery
        # (stream seq, consumer seq, delivery count): 1-6 went out, 5 twice
        assert asyncio.run(_nats_fetch(server.url, "ORDERS", "EXPLICIT", 10)) == [
            (7, 8, 1), (8, 9, 1), (9, 10, 1), (10, 11, 1)]
        assert asyncio.run(_nats_fetch(server.url, "ORDERS", "FILTERED", 10)) == [
            (7, 3, 1), (10, 4, 1)]


async def _nats_session(url: str) -> None:
    nc = await nats.connect(url)
    jsc = nc.jetstream()
    try:
        await jsc.add_stream(name="ORDERS", subjects=["orders.*"])
        for i in range(8):
            await jsc.publish(f"orders.{'a' if i % 2 else 'b'}", b"order %d" % i)
        await jsc.add_consumer("ORDERS", durable_name="EXPLICIT", ack_policy="explicit")
        await jsc.add_consumer("ORDERS", durable_name="FILTERED", ack_policy="explicit",
                               filter_subject="orders.a")
        sub = await jsc.pull_subscribe("orders.*", "EXPLICIT", stream="ORDERS")
        msgs = await sub.fetch(5, timeout=2)
        await msgs[0].ack_sync()
        await msgs[2].ack_sync()
        await msgs[3].nak()
        await asyncio.sleep(0.2)
        redelivered = await sub.fetch(1, timeout=2)
        assert redelivered[0].metadata.num_delivered == 2
        other = await jsc.pull_subscribe("orders.a", "FILTERED", stream="ORDERS")
        await (await other.fetch(2, timeout=2))[1].ack_sync()
        await nc.flush()
    finally:
        await nc.close()


def test_nats_server_consumers_open_in_jsstore(tmp_path):
    require_nats_server()
    names = ["EXPLICIT", "FILTERED"]
    with nats_server(tmp_path) as server:
        asyncio.run(_nats_session(server.url))
        expected = {name: numbers(info) for name, info in
                    asyncio.run(_nats_infos(server.url, "ORDERS", names)).items()}
        # nats-server writes a consumer's o.dat from a background flusher; under load a
        # stop right after the last ack can come before it (seen as one more pending)
        time.sleep(0.5)
        server.stop()
    js = jsstore.open(tmp_path)
    try:
        for name in names:
            assert jsstore_numbers(js, "ORDERS", name) == expected[name], name
        sub = js.pull_subscribe("orders.*", "EXPLICIT", stream="ORDERS")
        got = [(m.metadata.sequence.stream, m.metadata.sequence.consumer,
                m.metadata.num_delivered) for m in sub.fetch(10, timeout=0)]
        assert got == [(6, 7, 1), (7, 8, 1), (8, 9, 1)]
    finally:
        js.close()
