"""CONSUMER.RESET and js.reset_consumer: a consumer starts over, one behaviour each.

What the answers look like is compared with nats-server in the differential table
(tests/scenarios_consumers.py, group "consumer reset", and tests/test_api_subjects.py);
these tests follow what a reset does to the deliveries that come after it.
"""

from __future__ import annotations

import json

import pytest

import jsstore
from clocks import SECOND, Clock
from jsstore.wire import apierrors as api_errors

RESET = "$JS.API.CONSUMER.RESET.ORDERS."


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(params=["file", "memory"])
def js(request, clock, tmp_path):
    js = jsstore.open(tmp_path if request.param == "file" else None, clock=clock)
    js.add_stream(name="ORDERS", subjects=["orders.*"])
    for i in range(1, 6):
        js.publish("orders.new" if i % 2 else "orders.old", b"%d" % i)
    yield js
    js.close()


def fetch(sub, batch=10):
    try:
        return sub.fetch(batch, timeout=0)
    except TimeoutError:
        return []


def seqs(msgs):
    return [(m.metadata.sequence.stream, m.metadata.sequence.consumer,
             m.metadata.num_delivered) for m in msgs]


def test_a_reset_redelivers_what_is_above_the_ack_floor(js):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    first = fetch(sub, 3)
    first[0].ack()
    first[2].ack()
    info = js.reset_consumer("ORDERS", "C")
    assert info.reset_seq == 2
    assert (info.delivered.consumer_seq, info.delivered.stream_seq) == (0, 1)
    assert (info.ack_floor.consumer_seq, info.ack_floor.stream_seq) == (0, 1)
    assert (info.num_ack_pending, info.num_redelivered, info.num_pending) == (0, 0, 4)
    # delivery sequences start at 1 again, and every message is a first delivery
    assert seqs(fetch(sub)) == [(2, 1, 1), (3, 2, 1), (4, 3, 1), (5, 4, 1)]


def test_a_reset_to_a_sequence_goes_forward_and_back(js):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    assert js.reset_consumer("ORDERS", "C", seq=4).reset_seq == 4
    assert seqs(fetch(sub)) == [(4, 1, 1), (5, 2, 1)]
    info = js.reset_consumer("ORDERS", "C", seq=2)
    assert (info.ack_floor.stream_seq, info.num_pending) == (1, 4)
    assert [m.metadata.sequence.stream for m in fetch(sub)] == [2, 3, 4, 5]
    # past the end: nothing until the stream gets there
    info = js.reset_consumer("ORDERS", "C", seq=8)
    assert (info.delivered.stream_seq, info.num_pending) == (7, 0)
    js.publish("orders.new", b"6")
    js.publish("orders.new", b"7")
    assert fetch(sub) == []
    js.publish("orders.new", b"8")
    assert [m.data for m in fetch(sub)] == [b"8"]


def test_seq_zero_is_the_ack_floor(js):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    js.reset_consumer("ORDERS", "C", seq=3)
    assert js.reset_consumer("ORDERS", "C", seq=0).reset_seq == 3
    assert fetch(sub)[0].metadata.sequence.stream == 3


@pytest.mark.parametrize("config, seq, reason", [
    ({"deliver_policy": "last"}, 2, "not allowed"),
    ({"deliver_policy": "new"}, 2, "not allowed"),
    ({"deliver_policy": "last_per_subject", "filter_subject": "orders.*"}, 2, "not allowed"),
    ({"deliver_policy": "by_start_sequence", "opt_start_seq": 3}, 2, "below start seq"),
    ({"deliver_policy": "by_start_time", "opt_start_time": "2100-01-01T00:00:00Z"}, 2,
     "below start time"),
])
def test_what_a_configuration_refuses(js, config, seq, reason):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", **config)
    before = js.consumer_info("ORDERS", "C")
    with pytest.raises(api_errors.JSConsumerInvalidResetErr) as refused:
        js.reset_consumer("ORDERS", "C", seq=seq)
    assert refused.value.description == f"invalid reset: {reason}"
    assert js.consumer_info("ORDERS", "C").delivered == before.delivered
    # without a sequence every configuration may start over at its ack floor
    assert js.reset_consumer("ORDERS", "C").reset_seq == before.ack_floor.stream_seq + 1


def test_what_a_configuration_allows(js):
    js.add_consumer("ORDERS", durable_name="SEQ", ack_policy="explicit",
                    deliver_policy="by_start_sequence", opt_start_seq=3)
    assert js.reset_consumer("ORDERS", "SEQ", seq=3).reset_seq == 3
    js.add_consumer("ORDERS", durable_name="TIME", ack_policy="explicit",
                    deliver_policy="by_start_time", opt_start_time="2100-01-01T00:00:00Z")
    # no message at or after the sequence: nothing is older than the start time
    assert js.reset_consumer("ORDERS", "TIME", seq=6).reset_seq == 6
    js.add_consumer("ORDERS", durable_name="PAST", ack_policy="explicit",
                    deliver_policy="by_start_time", opt_start_time="2000-01-01T00:00:00Z")
    assert js.reset_consumer("ORDERS", "PAST", seq=1).reset_seq == 1


def test_a_filtered_consumer_counts_only_its_subjects(js):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit",
                    filter_subject="orders.old")
    info = js.reset_consumer("ORDERS", "C", seq=3)
    assert info.num_pending == 1
    sub = js.pull_subscribe("orders.old", "C", stream="ORDERS")
    assert [m.metadata.sequence.stream for m in fetch(sub)] == [4]


def test_redelivery_counts_and_the_ack_timer_start_over(js, clock):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit", max_deliver=2,
                    ack_wait=SECOND)
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    fetch(sub, 1)[0].nak()
    assert seqs(fetch(sub, 1)) == [(1, 2, 2)]           # the last delivery allowed
    assert js.consumer_info("ORDERS", "C").num_redelivered == 1
    js.reset_consumer("ORDERS", "C")
    assert js.consumer_info("ORDERS", "C").num_redelivered == 0
    first = fetch(sub, 1)
    assert seqs(first) == [(1, 1, 1)]                   # max_deliver counts from 0 again
    # the deliveries from before the reset are not waited for any more
    clock.advance(2 * SECOND)
    js.tick()
    assert seqs(fetch(sub, 1)) == [(1, 2, 2)]


def test_an_ack_of_a_delivery_from_before_the_reset(js):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    old = fetch(sub, 2)
    js.reset_consumer("ORDERS", "C")
    again = fetch(sub, 2)
    old[0].ack()                        # acks stream sequence 1, now delivery 1
    info = js.consumer_info("ORDERS", "C")
    assert (info.ack_floor.consumer_seq, info.ack_floor.stream_seq) == (1, 1)
    assert info.num_ack_pending == 1
    again[1].ack()
    assert js.consumer_info("ORDERS", "C").ack_floor.stream_seq == 2


def test_a_waiting_pull_request_gets_the_messages_from_the_reset_point(js):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    got = []
    js.bus.subscribe("_INBOX.wait", got.append)
    js.router().dispatch("$JS.API.CONSUMER.MSG.NEXT.ORDERS.C", b'{"batch": 10}', None,
                         lambda hdr, data: None, "_INBOX.wait")
    assert [m.data for m in got] == [b"1", b"2", b"3", b"4", b"5"]
    got.clear()
    info = js.reset_consumer("ORDERS", "C", seq=4)
    assert (info.num_waiting, info.num_pending) == (1, 2)  # the info is from before
    assert [(m.data, m.reply.split(".")[4:7]) for m in got] == [
        (b"4", ["1", "4", "1"]), (b"5", ["1", "5", "2"])]


def test_a_push_consumer_delivers_again_after_the_answer(js):
    order = []
    js.bus.subscribe("push.c", lambda m: order.append(("deliver", m.data, m.reply)))
    js.add_consumer("ORDERS", durable_name="P", ack_policy="explicit",
                    deliver_subject="push.c")
    assert len(order) == 5
    order.clear()

    def send(hdr, data):
        order.append(("answer", json.loads(data)["reset_seq"], None))
    assert js.router().dispatch(RESET + "P", b'{"seq": 4}', None, send, "_INBOX.r")
    assert [o[:2] for o in order] == [("answer", 4), ("deliver", b"4"), ("deliver", b"5")]
    assert order[1][2].split(".")[4:7] == ["1", "4", "1"]


def test_the_reset_state_is_kept_across_a_restart(clock, tmp_path):
    js = jsstore.open(tmp_path, clock=clock)
    js.add_stream(name="ORDERS", subjects=["orders.*"])
    for i in range(5):
        js.publish("orders.new", b"%d" % i)
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    fetch(js.pull_subscribe("orders.*", "C", stream="ORDERS"), 5)
    js.reset_consumer("ORDERS", "C", seq=4)
    js.close()
    js = jsstore.open(tmp_path, clock=clock)
    info = js.consumer_info("ORDERS", "C")
    assert (info.delivered.consumer_seq, info.delivered.stream_seq) == (0, 3)
    assert (info.num_ack_pending, info.num_pending) == (0, 2)
    sub = js.pull_subscribe("orders.*", "C", stream="ORDERS")
    assert seqs(fetch(sub)) == [(4, 1, 1), (5, 2, 1)]
    js.close()


def test_an_interest_stream_lets_go_of_what_the_reset_skips(clock):
    js = jsstore.open(clock=clock)
    js.add_stream(name="I", subjects=["i.*"], retention="interest")
    js.add_consumer("I", durable_name="ALL", ack_policy="explicit")
    js.add_consumer("I", durable_name="B", ack_policy="explicit", filter_subject="i.b")
    for subject in ("i.a", "i.b", "i.a", "i.b", "i.a"):
        js.publish(subject, b"")
    js.reset_consumer("I", "ALL", seq=5)
    # i.a messages below 5 were only ALL's; B still needs the i.b ones
    state = js.stream_info("I", deleted_details=True).state
    assert (state.messages, state.first_seq) == (3, 2)
    js.reset_consumer("I", "ALL", seq=1)          # what is gone stays gone
    assert js.stream_info("I").state.messages == 3
    js.close()


def test_a_work_queue_keeps_what_the_reset_skips(clock):
    js = jsstore.open(clock=clock)
    js.add_stream(name="W", subjects=["w.*"], retention="workqueue")
    js.add_consumer("W", durable_name="C", ack_policy="explicit")
    for _ in range(3):
        js.publish("w.a", b"")
    js.reset_consumer("W", "C", seq=3)
    assert js.stream_info("W").state.messages == 3
    js.close()


def test_missing_consumers(js):
    with pytest.raises(api_errors.JSConsumerNotFoundErr):
        js.reset_consumer("ORDERS", "NOPE")
    with pytest.raises(api_errors.JSStreamNotFoundErr):
        js.reset_consumer("NOPE", "C")
    # over the wire nobody answers (nats-server's consumer subscribes it)
    assert js.request(RESET + "NOPE") is None


def test_the_wire_answer(js):
    js.add_consumer("ORDERS", durable_name="C", ack_policy="explicit")
    answer = json.loads(js.request(RESET + "C", b'{"seq": 2}'))
    assert list(answer)[:3] == ["type", "stream_name", "name"]
    assert list(answer)[-2:] == ["ts", "reset_seq"]
    assert (answer["type"], answer["reset_seq"]) == (
        "io.nats.jetstream.api.v1.consumer_reset_response", 2)
    assert answer["config"]["metadata"]["_nats.level"]
    error = json.loads(js.request(RESET + "C", b'{"seq": -1}'))
    assert list(error) == ["type", "error", "reset_seq"]
    assert (error["error"]["err_code"], error["reset_seq"]) == (10025, 0)
    # not an API request of the account: neither counted nor audited
    assert json.loads(js.request("$JS.API.INFO"))["api"]["total"] == 0
