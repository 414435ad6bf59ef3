"""Atomic batch publish through the publish path (js.request with Nats-Batch-* headers and
js.publish_batch), all or nothing; stream advisories and the API audit on the bus."""

import json

import pytest

import jsstore
from jsstore.wire import apierrors as E

from clocks import SECOND, START, Clock


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(params=["file", "memory"])
def js(request, tmp_path, clock):
    handle = jsstore.open(tmp_path if request.param == "file" else None, clock=clock)
    handle.add_stream(name="B", subjects=["b.*"], allow_atomic=True)
    yield handle
    handle.close()


def batch(js, items, batch_id="x", commit="1"):
    answers = []
    for index, (subject, payload, extra) in enumerate(items, 1):
        headers = {"Nats-Batch-Id": batch_id, "Nats-Batch-Sequence": str(index), **extra}
        if index == len(items) and commit:
            headers["Nats-Batch-Commit"] = commit
        answers.append(js.request(subject, payload, headers))
    return answers


def test_staged_messages_answer_empty_and_the_commit_stores_all(js):
    answers = batch(js, [("b.a", b"1", {}), ("b.b", b"2", {}), ("b.a", b"3", {})])
    assert answers[:2] == [b"", b""]
    assert answers[2] == b'{"stream":"B","seq":3,"batch":"x","count":3}'
    assert js.stream_info("B").state.messages == 3
    assert js.get_msg("B", 2).headers["Nats-Batch-Sequence"] == "2"


def test_nothing_is_stored_before_the_commit(js):
    batch(js, [("b.a", b"1", {}), ("b.b", b"2", {})], commit=None)
    assert js.stream_info("B").state.messages == 0


def test_a_failing_message_rejects_the_whole_batch(js):
    js.publish("b.a", b"0")
    answers = batch(js, [("b.a", b"1", {}), ("b.b", b"2", {"Nats-Expected-Last-Sequence": "1"})])
    error = json.loads(answers[-1])["error"]
    assert error["err_code"] == 10164      # only the first message may expect a sequence
    assert js.stream_info("B").state.messages == 1
    answers = batch(js, [("b.a", b"1", {"Nats-Msg-Id": "m"}), ("b.b", b"2", {"Nats-Msg-Id": "m"})], "y")
    assert json.loads(answers[-1])["error"]["err_code"] == 10201
    assert js.stream_info("B").state.messages == 1


def test_discard_new_limits_count_the_whole_batch(js):
    js.update_stream(name="B", subjects=["b.*"], allow_atomic=True, max_msgs=3, discard="new")
    js.publish("b.a", b"0")
    answers = batch(js, [("b.a", b"1", {}), ("b.b", b"2", {}), ("b.c", b"3", {})])
    assert json.loads(answers[-1])["error"]["description"] == "maximum messages exceeded"
    assert js.stream_info("B").state.messages == 1


def test_counters_add_up_inside_a_batch(tmp_path, clock):
    with jsstore.open(clock=clock) as js:
        js.add_stream(name="C", subjects=["c.*"], allow_atomic=True, allow_msg_counter=True)
        js.publish("c.a", headers={"Nats-Incr": "10"})
        ack = js.publish_batch([("c.a", b"", {"Nats-Incr": "1"}), ("c.a", b"", {"Nats-Incr": "2"})])
        assert (ack.seq, ack.batch, ack.count, ack.val) == (3, ack.batch, 2, None)
        assert js.get_msg("C", 3).data == b'{"val":"13"}'


def test_publish_batch_is_atomic(js):
    ack = js.publish_batch([("b.a", b"1"), ("b.b", b"2", {"K": "v"})])
    assert (ack.seq, ack.count) == (2, 2)
    with pytest.raises(E.JSStreamWrongLastSequenceConstantErr):
        js.publish_batch([("b.a", b"3"), ("b.b", b"4", {"Nats-Expected-Last-Sequence": "2"})])
    assert js.stream_info("B").state.messages == 2


def test_batches_on_a_stream_without_allow_atomic(js):
    js.add_stream(name="N", subjects=["n.*"])
    answers = batch(js, [("n.a", b"1", {})])
    assert json.loads(answers[0])["error"]["err_code"] == 10174


def test_an_idle_batch_is_abandoned_with_an_advisory(js, clock):
    seen = []
    js.bus.subscribe("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.>", seen.append)
    batch(js, [("b.a", b"1", {})], commit=None)
    assert js.tick() == START + 10 * SECOND
    clock.now += 10 * SECOND
    js.tick()
    assert [json.loads(m.data)["reason"] for m in seen] == ["timeout"]
    answers = batch(js, [("b.a", b"2", {})], batch_id="x", commit=None)
    assert answers == [b""]          # the id can start over


# -- advisories ----------------------------------------------------------------------------

def test_stream_advisories_and_api_audit():
    with jsstore.open() as js:
        seen = []
        js.bus.subscribe("$JS.EVENT.ADVISORY.>", seen.append)
        js.add_stream(name="A", subjects=["a"])
        js.add_stream(name="A", subjects=["a"])       # unchanged: no second advisory
        js.update_stream(name="A", subjects=["a", "b"])
        js.request("$JS.API.STREAM.INFO.A")
        js.delete_stream("A")
        subjects = [m.subject for m in seen]
        assert subjects == ["$JS.EVENT.ADVISORY.STREAM.CREATED.A",
                            "$JS.EVENT.ADVISORY.STREAM.UPDATED.A",
                            "$JS.EVENT.ADVISORY.API",
                            "$JS.EVENT.ADVISORY.STREAM.DELETED.A"]
        actions = [json.loads(m.data).get("action") for m in seen]
        assert actions == ["create", "modify", None, "delete"]
        audit = json.loads(seen[2].data)
        assert audit["subject"] == "$JS.API.STREAM.INFO.A"
        assert json.loads(audit["response"])["config"]["name"] == "A"
