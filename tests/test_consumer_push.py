"""Push consumers on the embedded bus: delivery once someone listens, queue groups of one
bus, ack subjects, redelivery, idle heartbeats, flow control, replay at the original rate,
headers_only, interest loss.  Time is a hand clock driven with js.tick()."""

from __future__ import annotations

import pytest

import jsstore
from clocks import SECOND, Clock
from jsstore.wire import headers as header_block


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def js(clock, tmp_path):
    js = jsstore.open(tmp_path, clock=clock)
    js.add_stream(name="ORDERS", subjects=["orders.*"])
    yield js
    js.close()


def listen(js, subject="deliver.orders"):
    got = []
    sub = js.bus.subscribe(subject, got.append)
    return got, sub


def data_msgs(got):
    return [m for m in got if m.hdr is None or not m.hdr.startswith(b"NATS/1.0 100")]


def status_msgs(got):
    return [m for m in got if m.hdr and m.hdr.startswith(b"NATS/1.0 100")]


def test_delivers_once_someone_listens_with_ack_subjects(js, clock):
    for i in range(3):
        js.publish("orders.new", b"o%d" % i)
    info = js.add_consumer("ORDERS", durable_name="P", deliver_subject="deliver.orders",
                           ack_policy="explicit")
    assert not info.push_bound
    assert js.consumer_info("ORDERS", "P").delivered.consumer_seq == 0
    got, _ = listen(js)
    assert [m.data for m in got] == [b"o0", b"o1", b"o2"]
    assert [m.subject for m in got] == ["orders.new"] * 3
    assert [m.to for m in got] == ["deliver.orders"] * 3
    assert got[0].reply.split(".")[:7] == ["$JS", "ACK", "ORDERS", "P", "1", "1", "1"]
    assert got[2].reply.split(".")[8] == "0"           # nothing pending after the third
    assert [int(m.reply.split(".")[7]) for m in got] == [
        js._streams["ORDERS"].store.load_msg(seq).ts for seq in (1, 2, 3)]
    info = js.consumer_info("ORDERS", "P")
    assert info.push_bound
    assert (info.delivered.consumer_seq, info.num_ack_pending, info.num_pending) == (3, 3, 0)
    # acks come back through the router, a new message goes straight out
    assert js.request(got[0].reply, b"+ACK") == b""
    js.publish("orders.new", b"o3")
    assert got[-1].data == b"o3"
    info = js.consumer_info("ORDERS", "P")
    assert (info.ack_floor.consumer_seq, info.num_ack_pending) == (1, 3)


def test_redelivery_after_ack_wait(js, clock):
    got, _ = listen(js)
    js.add_consumer("ORDERS", durable_name="P", deliver_subject="deliver.orders",
                    ack_policy="explicit", ack_wait=2 * SECOND)
    js.publish("orders.new", b"a")
    js.publish("orders.new", b"b")
    js.request(got[1].reply, b"+ACK")
    clock.advance(2 * SECOND + 2_000_000)
    js.tick()
    assert [m.data for m in got] == [b"a", b"b", b"a"]
    assert got[2].reply.split(".")[4:7] == ["2", "1", "3"]     # delivered twice, cseq 3
    assert js.consumer_info("ORDERS", "P").num_redelivered == 1


def test_idle_heartbeats_name_the_last_sequences(js, clock):
    got, _ = listen(js)
    js.add_consumer("ORDERS", durable_name="P", deliver_subject="deliver.orders",
                    ack_policy="none", idle_heartbeat=5 * SECOND)
    js.publish("orders.new", b"a")
    js.publish("orders.new", b"b")
    assert not status_msgs(got)
    clock.advance(5 * SECOND)
    js.tick()
    [hb] = status_msgs(got)
    assert hb.hdr == (b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 2\r\n"
                      b"Nats-Last-Stream: 2\r\n\r\n")
    assert hb.data == b"" and hb.reply is None
    # a delivery pushes the next heartbeat back
    clock.advance(4 * SECOND)
    js.publish("orders.new", b"c")
    clock.advance(2 * SECOND)
    js.tick()
    assert len(status_msgs(got)) == 1
    clock.advance(3 * SECOND)
    js.tick()
    assert status_msgs(got)[-1].hdr.endswith(b"Nats-Last-Consumer: 3\r\n"
                                             b"Nats-Last-Stream: 3\r\n\r\n")


def test_flow_control_stalls_until_answered(js, clock):
    got, _ = listen(js)
    js.add_consumer("ORDERS", durable_name="P", deliver_subject="deliver.orders",
                    ack_policy="none", flow_control=True, idle_heartbeat=5 * SECOND)
    consumer = js.consumers.find_locked("ORDERS", "P")
    big = b"x" * (512 * 1024)
    for _ in range(8):
        js.publish("orders.new", big)
    requests = [m for m in got if m.hdr == b"NATS/1.0 100 FlowControl Request\r\n\r\n"]
    assert len(requests) == 1
    fc = requests[0]
    assert fc.reply.startswith("$JS.FC.ORDERS.P.") and fc.data == b""
    delivered = len(data_msgs(got))
    assert 0 < delivered < 8
    # the window is full: nothing more until the request is answered
    js.publish("orders.new", big)
    assert len(data_msgs(got)) == delivered
    # a heartbeat meanwhile says the consumer is stalled on that reply
    clock.advance(5 * SECOND)
    js.tick()
    hb = status_msgs(got)[-1]
    assert header_block.get(hb.hdr, "Nats-Consumer-Stalled") in (fc.reply, fc.reply.encode())
    js.handle(jsstore.wire.bus.Msg(fc.reply, b""))
    assert len(data_msgs(got)) == 9
    assert [m.data for m in data_msgs(got)] == [big] * 9
    assert consumer.push.flow_control_reply != fc.reply


def test_replay_original_keeps_the_gaps(js, clock):
    js.publish("orders.new", b"a")
    clock.advance(3 * SECOND)
    js.publish("orders.new", b"b")
    clock.advance(1 * SECOND)
    js.publish("orders.new", b"c")
    got, _ = listen(js)
    js.add_consumer("ORDERS", durable_name="R", deliver_subject="deliver.orders",
                    ack_policy="none", replay_policy="original")
    assert [m.data for m in got] == [b"a"]
    clock.advance(2 * SECOND)
    js.tick()
    assert [m.data for m in got] == [b"a"]
    clock.advance(1 * SECOND)
    js.tick()
    assert [m.data for m in got] == [b"a", b"b"]
    clock.advance(1 * SECOND)
    js.tick()
    assert [m.data for m in got] == [b"a", b"b", b"c"]
    # caught up: new messages go out at once
    js.publish("orders.new", b"d")
    assert got[-1].data == b"d"


def test_headers_only(js):
    got, _ = listen(js)
    js.add_consumer("ORDERS", durable_name="H", deliver_subject="deliver.orders",
                    ack_policy="none", headers_only=True)
    js.publish("orders.new", b"12345", headers={"X-Kind": "big"})
    [msg] = got
    assert msg.data == b""
    assert header_block.get(msg.hdr, "X-Kind") in ("big", b"big")
    assert header_block.get(msg.hdr, "Nats-Msg-Size") in ("5", b"5")


def test_ephemeral_push_goes_when_nobody_listens(js, clock):
    got, sub = listen(js)
    info = js.add_consumer("ORDERS", deliver_subject="deliver.orders", ack_policy="none",
                           inactive_threshold=10 * SECOND)
    name = info.name
    js.publish("orders.new", b"a")
    assert len(got) == 1
    sub.unsubscribe()
    assert not js.consumer_info("ORDERS", name).push_bound
    clock.advance(5 * SECOND)
    js.tick()
    assert name in js.consumer_names("ORDERS")
    clock.advance(6 * SECOND)
    js.tick()
    assert name not in js.consumer_names("ORDERS")


def test_push_consumers_refuse_pull_requests(js):
    js.add_consumer("ORDERS", durable_name="P", deliver_subject="deliver.orders")
    [answer] = js.request_msgs("$JS.API.CONSUMER.MSG.NEXT.ORDERS.P", b"1")
    assert answer.hdr == b"NATS/1.0 409 Consumer is push based\r\n\r\n"
