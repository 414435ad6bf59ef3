"""Consumers through the embedded API, one behaviour each, on a hand clock."""

from __future__ import annotations

import json

import pytest

import jsstore
from clocks import SECOND, Clock

NEXT = "$JS.API.CONSUMER.MSG.NEXT.ORDERS."


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def js(clock, tmp_path):
    js = jsstore.open(tmp_path, clock=clock)
    js.add_stream(name="ORDERS", subjects=["orders.*"])
    yield js
    js.close()


def events(js, subject):
    got = []
    js.bus.subscribe(subject, lambda m: got.append(json.loads(m.data)))
    return got


def pull(js, name, body, inbox="_INBOX.t"):
    """Every message sent to a pull request's inbox, until the request goes."""
    got = []
    sub = js.bus.subscribe(inbox, got.append)
    js.router().dispatch(NEXT + name, body, None, lambda hdr, data: None, inbox)
    return got, sub


def test_max_deliver_advisory_and_drop(js, clock):
    advised = events(js, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.C")
    js.publish("orders.a", b"x")
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", max_deliver=2,
                    ack_wait=SECOND)
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    assert sub.fetch(1, timeout=0)[0].metadata.num_delivered == 1
    clock.advance(2 * SECOND)
    js.tick()
    assert sub.fetch(1, timeout=0)[0].metadata.num_delivered == 2
    clock.advance(2 * SECOND)
    js.tick()
    with pytest.raises(TimeoutError):
        sub.fetch(1, timeout=0)
    assert [(a["stream_seq"], a["deliveries"]) for a in advised] == [(1, 2)]
    info = js.consumer_info("ORDERS", "C")
    assert info.num_ack_pending == 0
    # the store's ack floor does not move over a dropped message (nats-server reports the
    # same; the differential table's "max deliver through the ack wait" checks it)
    assert (info.ack_floor.stream_seq, info.delivered.consumer_seq) == (0, 2)


def test_backoff_steps(js, clock):
    js.publish("orders.a", b"x")
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", max_deliver=5,
                    backoff=[SECOND, 3 * SECOND, 10 * SECOND])
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    sub.fetch(1, timeout=0)
    deliveries = []
    for step in range(16):
        clock.advance(SECOND)
        js.tick()
        try:
            msg = sub.fetch(1, timeout=0)[0]
        except TimeoutError:
            continue
        deliveries.append((step + 1, msg.metadata.num_delivered))
    # redelivered 1 s after the first delivery, then 3 s, then every 10 s
    assert deliveries == [(2, 2), (5, 3), (15, 4)]


def test_max_ack_pending_stalls_until_an_ack(js):
    for i in range(5):
        js.publish("orders.a", b"%d" % i)
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", max_ack_pending=2)
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    first = sub.fetch(5, timeout=0)
    assert [m.data for m in first] == [b"0", b"1"]
    with pytest.raises(TimeoutError):
        sub.fetch(1, timeout=0)
    first[1].ack()
    assert [m.data for m in sub.fetch(5, timeout=0)] == [b"2"]


def test_ack_all_acks_everything_below(js):
    for i in range(5):
        js.publish("orders.a", b"%d" % i)
    js.add_consumer("ORDERS", durable_name="C", ack_policy="all")
    msgs = js.pull_subscribe("orders.*", "C", stream="ORDERS").fetch(5, timeout=0)
    msgs[2].ack()
    info = js.consumer_info("ORDERS", "C")
    assert (info.ack_floor.stream_seq, info.num_ack_pending) == (3, 2)
    msgs[1].ack()                       # below the floor: nothing changes
    info = js.consumer_info("ORDERS", "C")
    assert (info.ack_floor.stream_seq, info.num_ack_pending) == (3, 2)
    msgs[4].ack()
    info = js.consumer_info("ORDERS", "C")
    assert (info.ack_floor.stream_seq, info.num_ack_pending) == (5, 0)


def test_interest_stream_keeps_messages_until_every_consumer_acked(clock, tmp_path):
    js = jsstore.open(tmp_path, clock=clock)
    js.add_stream(name="I", subjects=["i.*"], retention="interest")
    js.add_consumer("I", durable_name="A", ack_policy="explicit")
    js.add_consumer("I", durable_name="B", ack_policy="explicit")
    js.publish("i.x", b"1")
    js.publish("i.x", b"2")
    a = js.pull_subscribe("i.*", "A", stream="I").fetch(2, timeout=0)
    b = js.pull_subscribe("i.*", "B", stream="I").fetch(2, timeout=0)
    a[0].ack()
    assert js.stream_info("I").state.messages == 2
    b[0].ack()
    assert js.stream_info("I").state.messages == 1
    b[1].term()
    a[1].ack()
    assert js.stream_info("I").state.messages == 0
    js.close()


def test_ephemeral_pull_consumer_goes_after_inactive_threshold(js, clock):
    deleted = events(js, "$JS.EVENT.ADVISORY.CONSUMER.DELETED.ORDERS.*")
    info = js.add_consumer("ORDERS", ack_policy="explicit", inactive_threshold=5 * SECOND)
    clock.advance(5 * SECOND)
    js.tick()
    assert info.name in js.consumer_names("ORDERS")     # the threshold gets some jitter
    clock.advance(2 * SECOND)
    js.tick()
    assert info.name not in js.consumer_names("ORDERS")
    assert [e["consumer"] for e in deleted] == [info.name]


def test_pause_and_resume(js, clock):
    js.publish("orders.a", b"x")
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    paused = events(js, "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.ORDERS.C")
    info = js.pause_consumer("ORDERS", "C", clock.now + 10 * SECOND)
    assert info.paused and info.pause_remaining == 10 * SECOND
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    with pytest.raises(TimeoutError):
        sub.fetch(1, timeout=0)
    clock.advance(10 * SECOND)
    js.tick()
    assert not js.consumer_info("ORDERS", "C").paused
    assert [m.data for m in sub.fetch(1, timeout=0)] == [b"x"]
    assert [e["paused"] for e in paused] == [True, False]


def test_ack_sampling_metric(js, clock):
    metrics = events(js, "$JS.EVENT.METRIC.CONSUMER.ACK.ORDERS.C")
    js.publish("orders.a", b"x")
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", sample_freq="100%")
    msg = js.pull_subscribe("orders.*", "C", stream="ORDERS").fetch(1, timeout=0)[0]
    clock.advance(SECOND // 4)
    msg.ack()
    [metric] = metrics
    assert metric["type"] == "io.nats.jetstream.metric.v1.consumer_ack"
    assert (metric["stream_seq"], metric["consumer_seq"], metric["deliveries"]) == (1, 1, 1)
    assert metric["ack_time"] == SECOND // 4


def test_advisories_for_create_delete_nak_term(js):
    created = events(js, "$JS.EVENT.ADVISORY.CONSUMER.CREATED.ORDERS.*")
    naked = events(js, "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.ORDERS.C")
    terminated = events(js, "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS.C")
    js.publish("orders.a", b"x")
    js.publish("orders.a", b"y")
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    msgs = js.pull_subscribe("orders.*", "C", stream="ORDERS").fetch(2, timeout=0)
    msgs[0].nak()
    msgs[1].term("no good")
    assert [e["consumer"] for e in created] == ["C"]
    assert [(e["stream_seq"], e["deliveries"]) for e in naked] == [(1, 1)]
    assert [(e["stream_seq"], e["reason"]) for e in terminated] == [(2, "no good")]


def test_double_acks_and_next_through_the_wire(js):
    for i in range(3):
        js.publish("orders.a", b"%d" % i)
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    got, _ = pull(js, "C", b"1")
    [first] = got
    assert js.request(first.reply, b"+ACK") == b""           # answered once applied
    assert js.request(first.reply, b"+ACK") == b""           # (as nats-server: again)
    assert js.request(first.reply, b"-NAK") == b""           # NAKs are always answered
    more, _ = pull(js, "C", b"", inbox="_INBOX.n")
    js.router().dispatch(more[0].reply, b"+NXT 2", None, lambda h, d: None, "_INBOX.n")
    assert [m.data for m in more] == [b"1", b"2"]
    info = js.consumer_info("ORDERS", "C")
    assert (info.ack_floor.stream_seq, info.num_ack_pending) == (2, 1)


def test_pull_statuses(js, clock):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", max_waiting=1)
    got, _ = pull(js, "C", b'{"batch":1,"no_wait":true}')
    assert [m.hdr for m in got] == [b"NATS/1.0 404 No Messages\r\n\r\n"]
    waiting, _ = pull(js, "C", b'{"batch":3,"expires":2000000000,"idle_heartbeat":500000000}',
                      inbox="_INBOX.w")
    refused, _ = pull(js, "C", b'{"batch":1,"expires":1000000000}', inbox="_INBOX.r")
    assert [m.hdr for m in refused] == [b"NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n"]
    assert js.consumer_info("ORDERS", "C").num_waiting == 1
    clock.advance(SECOND // 2)
    js.tick()
    assert waiting[-1].hdr == (b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 0\r\n"
                               b"Nats-Last-Stream: 0\r\n\r\n")
    js.publish("orders.a", b"x")
    assert waiting[-1].data == b"x"
    clock.advance(2 * SECOND)
    js.tick()
    assert waiting[-1].hdr == (b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\n"
                               b"Nats-Pending-Bytes: 0\r\n\r\n")
    js.publish("orders.a", b"y" * 100)
    small, _ = pull(js, "C", b'{"batch":1,"max_bytes":10}', inbox="_INBOX.s")
    assert [m.hdr for m in small] == [b"NATS/1.0 409 Message Size Exceeds MaxBytes\r\n"
                                      b"Nats-Pending-Messages: 1\r\nNats-Pending-Bytes: 10\r\n\r\n"]
    left, _ = pull(js, "C", b'{"batch":5,"expires":5000000000}', inbox="_INBOX.d")
    assert [m.data for m in left] == [b"y" * 100]
    js.delete_consumer("ORDERS", "C")
    assert left[-1].hdr == b"NATS/1.0 409 Consumer Deleted\r\n\r\n"
