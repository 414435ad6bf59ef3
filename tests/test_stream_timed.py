"""Timed work of streams, driven by an explicit clock through js.tick(): max_age, per-message
TTLs, subject delete markers (their bytes as nats-server writes them), TTL "never", and the
timer thread on the wall clock."""

import time

import pytest

import jsstore
from jsstore.stream import expiry
from jsstore.wire import headers as header_block

from clocks import SECOND, START, Clock


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(params=["file", "memory"])
def js(request, tmp_path, clock):
    handle = jsstore.open(tmp_path if request.param == "file" else None, clock=clock)
    yield handle
    handle.close()


def live(js, name):
    state = js.stream_info(name).state
    return state.messages, state.first_seq, state.last_seq


def test_max_age_expires_on_tick_and_reports_the_next_due_time(js, clock):
    js.add_stream(name="S", subjects=["s.*"], max_age=10 * SECOND)
    js.publish("s.a", b"1")
    clock.advance(4 * SECOND)
    js.publish("s.b", b"2")
    assert js.tick() == START + 10 * SECOND
    clock.advance(6 * SECOND)           # the first is 10 s old
    assert js.tick() == START + 14 * SECOND
    assert live(js, "S") == (1, 2, 2)
    clock.advance(4 * SECOND)
    assert js.tick() is None
    assert live(js, "S")[0] == 0


def test_ttl_expiry_on_tick(js, clock):
    js.add_stream(name="S", subjects=["s.*"], allow_msg_ttl=True)
    js.publish("s.a", b"1", headers={"Nats-TTL": "5s"})
    js.publish("s.b", b"2")
    js.publish("s.c", b"3", headers={"Nats-TTL": "2"})
    assert js.tick() == START + 2 * SECOND
    clock.advance(2 * SECOND)
    assert js.tick() == START + 5 * SECOND
    assert live(js, "S") == (2, 1, 3)
    clock.advance(3 * SECOND)
    assert js.tick() is None
    assert live(js, "S") == (1, 2, 3)


def test_never_ttl_outlives_max_age(js, clock):
    js.add_stream(name="S", subjects=["s.*"], max_age=5 * SECOND, allow_msg_ttl=True)
    js.publish("s.keep", b"schema", headers={"Nats-TTL": "never"})
    js.publish("s.a", b"1")
    clock.advance(5 * SECOND)
    js.publish("s.b", b"2")             # the store itself must not age out "never"
    js.tick()
    msgs = [js.get_msg("S", seq).subject for seq in (1, 3)]
    assert msgs == ["s.keep", "s.b"]
    assert live(js, "S")[0] == 2


def test_subject_delete_marker_replaces_the_last_message_of_a_subject(js, clock):
    # observed on nats-server 2.15: s.b keeps a message so its expired one goes plainly;
    # s.c's only message becomes a marker whose rollup removes it
    js.add_stream(name="S", subjects=["s.*"], allow_msg_ttl=True, allow_rollup_hdrs=True,
                  subject_delete_marker_ttl=SECOND)
    js.publish("s.a", b"1")
    js.publish("s.b", b"2")
    js.publish("s.b", b"3", headers={"Nats-TTL": "1s"})
    js.publish("s.c", b"4", headers={"Nats-TTL": "1s"})
    clock.advance(SECOND)
    js.tick()
    info = js.stream_info("S", deleted_details=True).state
    assert (info.messages, info.first_seq, info.last_seq) == (3, 1, 5)
    assert sorted(info.deleted) == [3, 4]
    marker = js.get_msg("S", 5)
    assert marker.subject == "s.c" and marker.data == b""
    assert marker.hdr == b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 1s\r\nNats-Rollup: sub\r\n\r\n"
    # the marker expires by its own TTL, and is removed without a new marker
    clock.advance(SECOND)
    js.tick()
    assert live(js, "S") == (2, 1, 5)


def test_markers_for_max_age(js, clock):
    js.add_stream(name="S", subjects=["s.*"], max_age=10 * SECOND, allow_msg_ttl=True,
                  allow_rollup_hdrs=True, subject_delete_marker_ttl=60 * SECOND)
    js.publish("s.a", b"1")
    js.publish("s.a", b"2")
    clock.advance(10 * SECOND)
    js.tick()
    # seq 1 is not the last of s.a: removed; seq 2 is: a marker takes its place
    assert live(js, "S") == (1, 3, 3)
    marker = js.get_msg("S", 3)
    assert marker.headers == {"Nats-Marker-Reason": "MaxAge", "Nats-TTL": "1m0s", "Nats-Rollup": "sub"}


def test_a_ttl_under_the_marker_ttl_is_raised_and_rewritten(js, clock):
    js.add_stream(name="S", subjects=["s.*"], allow_msg_ttl=True, allow_rollup_hdrs=True,
                  subject_delete_marker_ttl=60 * SECOND)
    js.publish("s.a", b"1", headers={"Nats-TTL": "1s"})
    assert js.get_msg("S", 1).headers == {"Nats-TTL": "60"}   # as nats-server rewrites it
    clock.advance(59 * SECOND)
    js.tick()
    assert live(js, "S")[0] == 1


def test_marker_ttl_is_a_go_duration():
    ttls = [header_block.get_str(expiry.marker_header(n), "Nats-TTL")
            for n in (1, 59, 60, 61, 3600, 3661)]
    assert ttls == ["1s", "59s", "1m0s", "1m1s", "1h0m0s", "1h1m1s"]


def test_timer_thread_expires_on_the_wall_clock(tmp_path):
    with jsstore.open(tmp_path) as js:
        js.add_stream(name="S", subjects=["s"], max_age=200_000_000)
        js.publish("s", b"x")
        deadline = time.monotonic() + 5
        while js.stream_info("S").state.messages and time.monotonic() < deadline:
            time.sleep(0.02)
        assert js.stream_info("S").state.messages == 0


def test_no_timer_thread_without_timed_streams_or_when_turned_off(tmp_path):
    with jsstore.open() as js:
        js.add_stream(name="S", subjects=["s"])
        assert js._timers is None
    with jsstore.open(timers=False) as js:
        js.add_stream(name="S", subjects=["s"], max_age=SECOND)
        assert js._timers is None
