"""JetStream through nats-py, against `jsstore serve` and nats-server alike: stream and
consumer management, publish acks and errors, every pull status reply, push consumers
with heartbeats and flow control, ordered consumers, direct get and account info."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from bothservers import run, server  # noqa: F401  (the fixture)

nats = pytest.importorskip("nats")
from nats.js import api  # noqa: E402
from nats.js.errors import BadRequestError, NotFoundError  # noqa: E402

pytestmark = pytest.mark.natsserver


def test_stream_management_and_publish_errors(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        out = {}
        info = await js.add_stream(name="S", subjects=["s.*"], max_msgs=100)
        out["created"] = (info.config.name, info.config.subjects, info.config.max_msgs,
                          info.state.messages)
        with pytest.raises(BadRequestError) as overlap:
            await js.add_stream(name="T", subjects=["s.a"])
        out["overlap"] = (overlap.value.code, overlap.value.err_code)
        for i in range(5):
            await js.publish("s.a" if i % 2 else "s.b", b"%d" % i)
        with pytest.raises(BadRequestError) as wrong_last:
            await js.publish("s.a", b"x", headers={"Nats-Expected-Last-Sequence": "3"})
        out["wrong_last"] = (wrong_last.value.code, wrong_last.value.err_code)
        with pytest.raises(BadRequestError) as wrong_stream:
            await js.publish("s.a", b"x", headers={"Nats-Expected-Stream": "OTHER"})
        out["wrong_stream"] = wrong_stream.value.err_code
        with pytest.raises(nats.js.errors.NoStreamResponseError):
            await js.publish("nobody.here", b"x")
        info = await js.update_stream(name="S", subjects=["s.*", "t.*"], max_msgs=100)
        out["updated"] = info.config.subjects
        await js.publish("t.x", b"t")
        out["names"] = await js.streams_info()
        out["names"] = [i.config.name for i in out["names"]]
        await js.delete_msg("S", 2)
        state = (await js.stream_info("S")).state
        out["after_delete"] = (state.messages, state.first_seq, state.last_seq,
                               state.num_deleted)
        await js.purge_stream("S", subject="s.b")
        state = (await js.stream_info("S")).state
        out["after_purge"] = (state.messages, state.first_seq, state.last_seq)
        out["deleted"] = await js.delete_stream("S")
        with pytest.raises(NotFoundError) as missing:
            await js.stream_info("S")
        out["missing"] = (missing.value.code, missing.value.err_code)
        await nc.close()
        return out
    out = run(main())
    assert out["created"] == ("S", ["s.*"], 100, 0)
    assert out["overlap"] == (400, 10065)
    assert out["wrong_last"] == (400, 10071)
    assert out["wrong_stream"] == 10060
    assert out["updated"] == ["s.*", "t.*"]
    assert out["names"] == ["S"]
    assert out["after_delete"] == (5, 1, 6, 1)
    assert out["after_purge"] == (2, 4, 6)          # s.b (1, 3, 5) went: s.a 4 and t.x 6 stay
    assert out["deleted"] is True
    assert out["missing"] == (404, 10059)


def test_consumer_management(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.*"])
        for i in range(4):
            await js.publish("s.a", b"%d" % i)
        out = {}
        info = await js.add_consumer("S", durable_name="D", ack_policy="explicit",
                                     filter_subject="s.a", max_ack_pending=10)
        out["created"] = (info.name, info.config.durable_name, info.config.ack_policy,
                          info.config.max_ack_pending, info.num_pending)
        await js.add_consumer("S", durable_name="E", deliver_policy="last")
        out["list"] = sorted(i.name for i in await js.consumers_info("S"))
        with pytest.raises(BadRequestError) as overlap:
            await js.add_consumer("S", durable_name="F", filter_subjects=["s.*", "s.a"])
        out["overlap"] = overlap.value.err_code
        with pytest.raises(NotFoundError) as missing:
            await js.consumer_info("S", "NOPE")
        out["missing"] = (missing.value.code, missing.value.err_code)
        out["deleted"] = await js.delete_consumer("S", "E")
        out["after"] = [i.name for i in await js.consumers_info("S")]
        await nc.close()
        return out
    out = run(main())
    assert out["created"] == ("D", "D", api.AckPolicy.EXPLICIT, 10, 4)
    assert out["list"] == ["D", "E"]
    assert out["overlap"] == 10138
    assert out["missing"] == (404, 10014)
    assert out["deleted"] is True
    assert out["after"] == ["D"]


async def _pull(nc, stream: str, consumer: str, request: dict, *, count: int,
                wait: float = 2.0) -> list:
    """Send one pull request, return what comes back within `wait` seconds (at most
    `count` messages): (status, description, data, pending headers) each."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}",
                     json.dumps(request).encode(), reply=inbox)
    got = []
    try:
        while len(got) < count:
            msg = await sub.next_msg(timeout=wait)
            headers = msg.headers or {}
            got.append((headers.get("Status"), headers.get("Description"), msg.data,
                        headers.get("Nats-Pending-Messages"),
                        headers.get("Nats-Pending-Bytes")))
    except nats.errors.TimeoutError:
        pass
    await sub.unsubscribe()
    return got


def test_pull_status_replies(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.*"])
        config = {"durable_name": "C", "ack_policy": "explicit", "max_waiting": 1,
                  "max_batch": 5}
        created = await nc.request("$JS.API.CONSUMER.CREATE.S.C",
                                   json.dumps({"stream_name": "S", "config": config}).encode())
        assert "error" not in json.loads(created.data)
        out = {}
        out["no_wait"] = await _pull(nc, "S", "C", {"batch": 1, "no_wait": True}, count=1)
        out["expired"] = await _pull(nc, "S", "C", {"batch": 3, "expires": 200_000_000},
                                     count=1)
        out["max_batch"] = await _pull(nc, "S", "C", {"batch": 9}, count=1)
        await js.publish("s.a", b"x" * 100)
        out["max_bytes"] = await _pull(nc, "S", "C", {"batch": 1, "max_bytes": 10}, count=1)
        out["heartbeat"] = await _pull(
            nc, "S", "C", {"batch": 2, "expires": 600_000_000, "idle_heartbeat": 100_000_000},
            count=2)
        await asyncio.sleep(0.6)                  # the heartbeat request has expired
        await js.publish("s.a", b"w")
        # one request waits; a second one is more than max_waiting 1 allows
        inbox = nc.new_inbox()
        waiting = await nc.subscribe(inbox)
        await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.C",
                         json.dumps({"batch": 5, "expires": 5_000_000_000}).encode(),
                         reply=inbox)
        await nc.flush()
        first = await waiting.next_msg(timeout=2)            # the message just published
        out["waiting_got"] = first.data
        out["max_waiting"] = await _pull(nc, "S", "C", {"batch": 1, "expires": 1_000_000_000},
                                         count=1)
        await js.delete_consumer("S", "C")
        deleted = await waiting.next_msg(timeout=2)
        out["deleted"] = (deleted.headers.get("Status"), deleted.headers.get("Description"))
        await nc.close()
        return out
    out = run(main())
    assert out["no_wait"] == [("404", "No Messages", b"", None, None)]
    assert out["expired"] == [("408", "Request Timeout", b"", "3", "0")]
    assert out["max_batch"] == [("409", "Exceeded MaxRequestBatch of 5", b"", None, None)]
    assert out["max_bytes"] == [("409", "Message Size Exceeds MaxBytes", b"", "1", "10")]
    assert out["heartbeat"][0][:2] == (None, None)                  # the message
    assert out["heartbeat"][1][:2] == ("100", "Idle Heartbeat")
    assert out["waiting_got"] == b"w"
    assert out["max_waiting"] == [("409", "Exceeded MaxWaiting", b"", None, None)]
    assert out["deleted"] == ("409", "Consumer Deleted")


def test_push_consumer_heartbeats_and_flow_control(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.*"])
        payload = b"y" * 8192
        for i in range(400):                                 # 3.2 MB
            await js.publish("s.a", payload)
        inbox = nc.new_inbox()
        seen = {"msgs": 0, "fc": 0, "hb": 0}
        done = asyncio.Event()

        async def on_msg(msg):
            status = (msg.headers or {}).get("Status")
            if status == "100" and msg.reply:                # flow control: answer it
                seen["fc"] += 1
                await nc.publish(msg.reply, b"")
            elif status == "100":
                seen["hb"] += 1
                if seen["msgs"] == 400:
                    done.set()
            else:
                seen["msgs"] += 1
        await nc.subscribe(inbox, cb=on_msg)
        await js.add_consumer("S", durable_name="P", deliver_subject=inbox,
                              ack_policy="none", flow_control=True, idle_heartbeat=0.2)
        with contextlib.suppress(asyncio.TimeoutError):   # the assertions say what is missing
            await asyncio.wait_for(done.wait(), 10)
        await nc.close()
        return seen
    seen = run(main())
    assert seen["msgs"] == 400
    assert seen["fc"] >= 1
    assert seen["hb"] >= 1


def test_push_subscription_through_the_client(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.*"])
        for i in range(50):
            await js.publish("s.a", b"%d" % i)
        got = []
        done = asyncio.Event()

        async def on_msg(msg):
            got.append((msg.data, msg.metadata.sequence.stream))
            await msg.ack()
            if len(got) == 60:
                done.set()
        await js.subscribe("s.*", durable="PUSH", cb=on_msg, manual_ack=True,
                           idle_heartbeat=0.5, flow_control=True)
        for i in range(50, 60):
            await js.publish("s.b", b"%d" % i)
        with contextlib.suppress(asyncio.TimeoutError):   # the assertions say what is missing
            await asyncio.wait_for(done.wait(), 10)
        await asyncio.sleep(0.2)
        info = await js.consumer_info("S", "PUSH")
        await nc.close()
        return got, info
    got, info = run(main())
    assert got == [(b"%d" % i, i + 1) for i in range(60)]
    assert (info.num_ack_pending, info.num_pending, info.delivered.stream_seq) == (0, 0, 60)


def test_ordered_consumer(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.*"])
        for i in range(30):
            await js.publish("s.a" if i % 3 else "s.b", b"%d" % i)
        sub = await js.subscribe("s.a", ordered_consumer=True)
        got = [(await sub.next_msg(timeout=2)).data for _ in range(20)]
        await js.publish("s.a", b"late")
        got.append((await sub.next_msg(timeout=2)).data)
        info = await sub.consumer_info()
        await nc.close()
        return got, info
    got, info = run(main())
    assert got == [b"%d" % i for i in range(30) if i % 3] + [b"late"]
    assert info.config.ack_policy == api.AckPolicy.NONE
    assert info.config.flow_control is True
    assert info.config.mem_storage is True


def test_direct_get(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.*"], allow_direct=True)
        for i in range(5):
            await js.publish(f"s.{'ab'[i % 2]}", b"%d" % i, headers={"K": str(i)})
        by_seq = await js.get_msg("S", seq=3, direct=True)
        last_b = await js.get_last_msg("S", "s.b", direct=True)
        next_a = await js.get_msg("S", seq=1, subject="s.b", next=True, direct=True)
        with pytest.raises(NotFoundError):
            await js.get_msg("S", seq=99, direct=True)
        plain = await js.get_msg("S", seq=4)
        await nc.close()
        return by_seq, last_b, next_a, plain
    by_seq, last_b, next_a, plain = run(main())
    assert (by_seq.seq, by_seq.subject, by_seq.data, by_seq.headers["K"]) == (3, "s.a", b"2",
                                                                             "2")
    assert (last_b.seq, last_b.data) == (4, b"3")
    assert (next_a.seq, next_a.data) == (2, b"1")
    assert (plain.seq, plain.subject, plain.data) == (4, "s.b", b"3")


def test_account_info(server):
    async def main():
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        empty = await js.account_info()
        await js.add_stream(name="S", subjects=["s.*"])
        await js.add_stream(name="M", subjects=["m.*"], storage="memory")
        await js.add_consumer("S", durable_name="C")
        for _ in range(10):
            await js.publish("s.a", b"z" * 100)
            await js.publish("m.a", b"z" * 100)
        full = await js.account_info()
        await nc.close()
        return empty, full
    empty, full = run(main())
    assert (empty.streams, empty.consumers, empty.storage, empty.memory) == (0, 0, 0, 0)
    assert (full.streams, full.consumers) == (2, 1)
    assert full.storage > 1000 and full.memory > 1000
    assert full.limits.max_streams == -1 and full.limits.max_consumers == -1
    assert full.api.total > 0 and full.api.errors == 0
