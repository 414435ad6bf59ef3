"""Stream features on the embedded publish path: message counters (Nats-Incr), message
schedules fired by js.tick(), republish onto the bus."""

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
    yield handle
    handle.close()


# -- counters ------------------------------------------------------------------------------

def test_counter_increments_and_answers_val(js):
    js.add_stream(name="C", subjects=["c.*"], allow_msg_counter=True)
    assert js.request("c.a", b"", {"Nats-Incr": "5"}) == b'{"stream":"C","seq":1,"val":"5"}'
    ack = js.publish("c.a", headers={"Nats-Incr": "-7"})
    assert (ack.seq, ack.val) == (2, "-2")
    big = "123456789012345678901234567890"
    assert js.publish("c.b", headers={"Nats-Incr": big}).val == big
    assert js.get_msg("C", 2).data == b'{"val":"-2"}'
    assert js.get_msg("C", 2).headers == {"Nats-Incr": "-7"}


def test_counter_errors(js):
    js.add_stream(name="C", subjects=["c.*"], allow_msg_counter=True)
    with pytest.raises(E.JSMessageIncrMissingErr):
        js.publish("c.a", b"")
    with pytest.raises(E.JSMessageIncrPayloadErr):
        js.publish("c.a", b"x", headers={"Nats-Incr": "1"})
    with pytest.raises(E.JSMessageIncrInvalidErr):
        js.publish("c.a", headers={"Nats-Incr": "one"})
    js.add_stream(name="P", subjects=["p.*"])
    with pytest.raises(E.JSMessageIncrDisabledErr):
        js.publish("p.a", headers={"Nats-Incr": "1"})
    assert js.stream_info("C").state.messages == 0


def test_counter_survives_reopen(tmp_path, clock):
    with jsstore.open(tmp_path, clock=clock) as js:
        js.add_stream(name="C", subjects=["c.*"], allow_msg_counter=True)
        js.publish("c.a", headers={"Nats-Incr": "40"})
    with jsstore.open(tmp_path, clock=clock) as js:
        assert js.publish("c.a", headers={"Nats-Incr": "2"}).val == "42"


# -- schedules -----------------------------------------------------------------------------

def at(ns: int) -> str:
    from jsstore.gocompat.times import rfc3339_nano
    return "@at " + rfc3339_nano(ns)


def schedule_stream(js):
    js.add_stream(name="S", subjects=["sched.*", "target.*"], allow_msg_schedules=True,
                  allow_rollup_hdrs=True, allow_msg_ttl=True)


def test_one_shot_schedule_fires_once_and_is_purged(js, clock):
    schedule_stream(js)
    js.publish("sched.a", b"body", headers={"Nats-Schedule": at(START + 5 * SECOND),
                                            "Nats-Schedule-Target": "target.a"})
    assert js.tick() == START + 5 * SECOND
    clock.now += 5 * SECOND
    assert js.tick() is None
    fired = js.get_msg("S", 0, last_by_subject="target.a")
    assert fired.data == b"body"
    assert fired.headers["Nats-Scheduler"] == "sched.a"
    assert fired.headers["Nats-Schedule-Next"] == "purge"
    with pytest.raises(E.JSNoMessageFoundErr):   # the schedule itself is gone
        js.get_msg("S", 0, last_by_subject="sched.a")
    clock.now += 60 * SECOND
    js.tick()
    assert js.stream_info("S").state.messages == 1


def test_repeating_schedule_fires_every_interval(js, clock):
    schedule_stream(js)
    js.publish("sched.r", b"tick", headers={"Nats-Schedule": "@every 10s",
                                            "Nats-Schedule-Target": "target.r"})
    fired = 0
    for _ in range(3):
        due = js.tick()
        assert due is not None and due > clock.now
        clock.now = due
        js.tick()
        fired += 1
    info = js.stream_info("S", subjects_filter="target.r").state
    assert info.subjects == {"target.r": fired}
    # the schedule message is still there, a newer schedule on the subject replaces it
    js.publish("sched.r", b"other", headers={"Nats-Schedule": at(clock.now + SECOND),
                                             "Nats-Schedule-Target": "target.r"})
    assert js.stream_info("S", subjects_filter="sched.r").state.subjects == {"sched.r": 1}


def test_schedule_errors_and_disabled(js):
    schedule_stream(js)
    with pytest.raises(E.JSMessageSchedulesTargetInvalidErr):
        js.publish("sched.a", b"", headers={"Nats-Schedule": "@every 10s",
                                           "Nats-Schedule-Target": "elsewhere"})
    js.add_stream(name="N", subjects=["n.*"])
    with pytest.raises(E.JSMessageSchedulesDisabledErr):
        js.publish("n.a", b"", headers={"Nats-Schedule": "@every 10s",
                                       "Nats-Schedule-Target": "n.b"})


def test_schedules_are_found_again_after_reopen(tmp_path, clock):
    with jsstore.open(tmp_path, clock=clock) as js:
        schedule_stream(js)
        js.publish("sched.a", b"later", headers={"Nats-Schedule": at(START + 30 * SECOND),
                                                 "Nats-Schedule-Target": "target.a"})
    clock.now += 30 * SECOND
    with jsstore.open(tmp_path, clock=clock) as js:
        js.tick()
        assert js.get_msg("S", 0, last_by_subject="target.a").data == b"later"


# -- republish -----------------------------------------------------------------------------

def test_republish_sends_the_stored_message_with_nats_headers(js, clock):
    js.add_stream(name="R", subjects=["r.>"], republish={"src": "r.*", "dest": "out.$1"})
    seen = []
    js.bus.subscribe("out.>", seen.append)
    js.publish("r.a", b"1")
    js.publish("r.a", b"2", headers={"X": "y"})
    js.publish("r.a.deep", b"3")        # r.* does not match: not republished
    assert [m.subject for m in seen] == ["out.a", "out.a"]
    assert seen[0].data == b"1"
    assert seen[0].hdr == (b"NATS/1.0\r\nNats-Stream: R\r\nNats-Subject: r.a\r\nNats-Sequence: 1\r\n"
                           b"Nats-Time-Stamp: 2027-01-15T08:00:00Z\r\nNats-Last-Sequence: 0\r\n\r\n")
    assert seen[1].hdr.startswith(b"NATS/1.0\r\nX: y\r\nNats-Stream: R\r\n")
    assert b"Nats-Last-Sequence: 1\r\n" in seen[1].hdr


def test_republish_headers_only(js):
    js.add_stream(name="R", subjects=["r.>"],
                  republish={"src": ">", "dest": "out.>", "headers_only": True})
    seen = []
    js.bus.subscribe("out.>", seen.append)
    js.publish("r.a", b"12345")
    assert seen[0].subject == "out.r.a" and seen[0].data == b""
    assert seen[0].hdr.endswith(b"Nats-Msg-Size: 5\r\n\r\n")


def test_stream_subject_transform_rewrites_published_subjects(js):
    js.add_stream(name="T", subjects=["in.*.*"],
                  subject_transform={"src": "in.*.*", "dest": "stored.$2.$1"})
    assert js.request("in.a.b", b"1") == b'{"stream":"T","seq":1}'
    assert js.get_msg("T", 1).subject == "stored.b.a"


def test_stream_info_carries_mirror_and_sources_progress(js):
    js.add_stream(name="O", subjects=["o.*"])
    js.publish("o.a", b"1")
    js.add_stream(name="M", mirror={"name": "O"})
    js.add_stream(name="A", subjects=["agg"], sources=[{"name": "O"}])
    mirror = json.loads(js.request("$JS.API.STREAM.INFO.M"))
    assert list(mirror)[-2:] == ["mirror", "ts"]
    assert (mirror["mirror"]["name"], mirror["mirror"]["lag"]) == ("O", 0)
    assert mirror["state"]["messages"] == 1
    sourced = json.loads(js.request("$JS.API.STREAM.INFO.A"))
    assert [s["name"] for s in sourced["sources"]] == ["O"]
    assert "mirror" not in sourced and "sources" not in json.loads(js.request("$JS.API.STREAM.INFO.O"))
