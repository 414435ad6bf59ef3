"""Priority groups through the embedded API on a hand clock, one behaviour each: the
cases where jsstore once differed from nats-server (tests/test_server_priority.py runs the
same behaviours against both servers over the wire)."""

from __future__ import annotations

import json

import pytest

import jsstore
from clocks import SECOND, Clock

NEXT = "$JS.API.CONSUMER.MSG.NEXT.S."
ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER."
ZERO_TIME = "0001-01-01T00:00:00Z"


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def js(clock, tmp_path):
    js = jsstore.open(tmp_path, clock=clock)
    js.add_stream(name="S", subjects=["s.*"])
    yield js
    js.close()


def advisories(js, kind: str) -> list[dict]:
    got = []
    js.bus.subscribe(f"{ADVISORY}{kind}.S.*", lambda m: got.append(json.loads(m.data)))
    return got


def pull(js, consumer: str, body, inbox: str):
    """Send a pull request; what reaches its inbox, and the inbox's subscription."""
    got = []
    sub = js.bus.subscribe(inbox, got.append)
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    js.router().dispatch(NEXT + consumer, payload, None, lambda hdr, data: None, inbox)
    return got, sub


def pin_of(msg) -> str:
    return msg.hdr.split(b"Nats-Pin-Id: ")[1].split(b"\r\n")[0].decode()


def info(js, consumer: str) -> dict:
    return json.loads(js.request(f"$JS.API.CONSUMER.INFO.S.{consumer}", b""))


def test_a_body_that_is_not_json_waits_behind_every_priority(js):
    js.add_consumer("S", durable_name="R", ack_policy="explicit",
                    priority_policy="prioritized", priority_groups=["A"])
    plain, _ = pull(js, "R", b"1", "_INBOX.plain")
    last, _ = pull(js, "R", {"group": "A", "priority": 9, "batch": 1}, "_INBOX.nine")
    first, _ = pull(js, "R", {"group": "A", "batch": 1}, "_INBOX.zero")
    for n in range(3):
        js.publish("s.x", b"%d" % n)
    assert ([m.data for m in first], [m.data for m in last], [m.data for m in plain]) == (
        [b"0"], [b"1"], [b"2"])


def test_a_pin_given_to_a_request_over_its_max_bytes_passes_to_the_next(js):
    pinned = advisories(js, "PINNED")
    js.add_consumer("S", durable_name="P", ack_policy="explicit",
                    priority_policy="pinned_client", priority_groups=["A"])
    small, _ = pull(js, "P", {"group": "A", "batch": 1, "max_bytes": 10, "expires": SECOND},
                    "_INBOX.small")
    large, _ = pull(js, "P", {"group": "A", "expires": SECOND}, "_INBOX.large")
    js.publish("s.x", b"more than ten bytes")
    assert [m.hdr for m in small] == [
        b"NATS/1.0 409 Message Size Exceeds MaxBytes\r\nNats-Pending-Messages: 1\r\n"
        b"Nats-Pending-Bytes: 10\r\n\r\n"]
    [msg] = large
    assert msg.data == b"more than ten bytes"
    assert [a["pinned_id"] for a in pinned][1:] == [pin_of(msg)] and len(pinned) == 2


def test_a_pin_given_to_a_request_without_a_reader_passes_to_the_next(js):
    pinned = advisories(js, "PINNED")
    js.add_consumer("S", durable_name="P", ack_policy="explicit",
                    priority_policy="pinned_client", priority_groups=["A"])
    _, gone = pull(js, "P", {"group": "A", "expires": SECOND}, "_INBOX.gone")
    following, _ = pull(js, "P", {"group": "A", "expires": SECOND}, "_INBOX.next")
    gone.unsubscribe()
    js.publish("s.x", b"m")
    [msg] = following
    assert len(pinned) == 2 and pinned[1]["pinned_id"] == pin_of(msg) != pinned[0]["pinned_id"]
    assert info(js, "P")["priority_groups"][0]["pinned_client_id"] == pin_of(msg)


def test_the_pin_times_out_in_the_group_of_its_request(js, clock):
    unpinned = advisories(js, "UNPINNED")
    js.add_consumer("S", durable_name="P", ack_policy="explicit",
                    priority_policy="pinned_client", priority_groups=["A", "B"],
                    priority_timeout=SECOND)
    got, _ = pull(js, "P", {"group": "B", "batch": 1}, "_INBOX.b")
    js.publish("s.x", b"m")
    pin = pin_of(got[0])
    clock.advance(SECOND // 2)
    # a request carrying the pin (in another group) starts its second over
    pull(js, "P", {"group": "A", "id": pin, "expires": 5 * SECOND}, "_INBOX.renew")
    clock.advance(SECOND * 3 // 4)
    js.tick()
    assert unpinned == []
    clock.advance(SECOND // 4)
    js.tick()
    assert [(a["group"], a["reason"]) for a in unpinned] == [("B", "timeout")]
    assert info(js, "P")["priority_groups"] == [{"group": "A", "pinned_ts": ZERO_TIME}]


def test_unpin_advises_the_group_asked_for_pinned_or_not(js):
    unpinned = advisories(js, "UNPINNED")
    js.add_consumer("S", durable_name="P", ack_policy="explicit",
                    priority_policy="pinned_client", priority_groups=["A", "B"])
    js.add_consumer("S", durable_name="O", ack_policy="explicit",
                    priority_policy="overflow", priority_groups=["A"])
    js.unpin_consumer("S", "P", "B")
    js.unpin_consumer("S", "O", "A")
    holder, _ = pull(js, "P", {"group": "A", "batch": 2, "expires": SECOND}, "_INBOX.a")
    js.publish("s.x", b"m0")
    pin = pin_of(holder[0])
    assert info(js, "P")["priority_groups"][0]["pinned_client_id"] == pin
    js.unpin_consumer("S", "P", "B")
    assert [(a["consumer"], a["group"], a["reason"]) for a in unpinned] == [
        ("P", "B", "admin"), ("O", "A", "admin"), ("P", "B", "admin")]
    assert info(js, "P")["priority_groups"] == [{"group": "A", "pinned_ts": ZERO_TIME}]
    # the holder's request still carries the old pin: the next message drops it
    js.publish("s.x", b"m1")
    assert holder[-1].hdr == (b"NATS/1.0 423 Nats-Wrong-Pin-Id\r\nNats-Pending-Messages: 1\r\n"
                              b"Nats-Pending-Bytes: 0\r\n\r\n")
