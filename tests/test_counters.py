"""Message counters: increments, bodies, sourced counters, and the Nats-Incr publish checks."""

import asyncio
import json

import pytest
from hypothesis import given, strategies as st

from jsstore.stream import counters
from jsstore.wire import headers
from jsstore.stream import checks as pubchecks
from jsstore.wire.apierrors import (JSMessageCounterBrokenErr, JSMessageIncrDisabledErr,
                                    JSMessageIncrInvalidErr, JSMessageIncrMissingErr,
                                    JSMessageIncrPayloadErr, JSMessageTTLDisabledErr)

BIG = st.integers(min_value=-(10 ** 60), max_value=10 ** 60)


@pytest.mark.parametrize("text,value", [("1", 1), ("+5", 5), ("-7", -7), ("007", 7), ("-0", 0),
                                        ("123456789012345678901234567890",
                                         123456789012345678901234567890)])
def test_parse_incr_accepts_signed_decimals(text, value):
    assert counters.parse_incr(text) == value
    assert counters.parse_incr(text.encode()) == value


@pytest.mark.parametrize("text", ["", "+", "-", "abc", "0x10", "1_000", " 1", "1 ", "1.5", "1e3",
                                  "\u0663", "--1", "+-1"])
def test_parse_incr_rejects_what_big_int_rejects(text):
    with pytest.raises(JSMessageIncrInvalidErr):
        counters.parse_incr(text)


@given(BIG)
def test_body_round_trip(value):
    body = counters.counter_body(value)
    assert body == b'{"val":"%d"}' % value
    assert counters.counter_value(body) == value
    assert counters.parse_incr(json.loads(body)["val"]) == value


@given(BIG, st.sampled_from(["", "+"]))
def test_incr_round_trip(value, plus):
    text = (plus if value >= 0 else "") + str(value)
    assert counters.parse_incr(text) == value


@pytest.mark.parametrize("body,value", [
    (b'{"val":"12"}', 12), (b'{"VAL":"3"}', 3), (b'{"val":"1","Val":"4"}', 4), (b"null", 0),
    (b"{}", 0), (b'{"val":null}', 0), (b'{"val":"12abc"}', 12), (b'{"val":"-4x"}', -4),
    (b'{"val":"abc"}', 0), (b'{"val":""}', 0), (b' {"other":1, "val":"9"} ', 9)])
def test_counter_value_reads_like_go(body, value):
    assert counters.counter_value(body) == value


@pytest.mark.parametrize("body", [b"", b"x", b'{"val":5}', b"[]", b'"5"', b'{"val":"1"',
                                  b'{"val":"1","x":NaN}', b'{"val":["1"]}'])
def test_broken_counter_body(body):
    with pytest.raises(JSMessageCounterBrokenErr):
        counters.counter_value(body)


def test_sources_header_is_go_json():
    sources = {"S2": {"b": "1", "a": "-2"}, "S1": {"x<y": "3"}}
    text = counters.sources_header(sources)
    assert text == '{"S1":{"x\\u003cy":"3"},"S2":{"a":"-2","b":"1"}}'
    assert counters.parse_sources(text) == sources
    with pytest.raises(JSMessageCounterBrokenErr):
        counters.parse_sources(b"garbage")
    with pytest.raises(JSMessageCounterBrokenErr):
        counters.parse_sources(b'{"S":{"a":1}}')
    assert counters.parse_sources(None) == {}


def test_sourced_increment_applies_the_difference():
    source = "C 4 > > c.z gUeZTt5l"
    first = counters.sourced_increment(None, source, "ignored", b'{"val":"15"}')
    assert (first.delta, first.sources) == (15, {"C": {"c.z": "15"}})
    assert first.header_value == '{"C":{"c.z":"15"}}'
    second = counters.sourced_increment(first.sources, "C 5 > > c.z h", "c.z", b'{"val":"-5"}')
    assert second.delta == -20 and second.sources == {"C": {"c.z": "-5"}}
    assert first.sources == {"C": {"c.z": "15"}}  # not modified
    short = counters.sourced_increment(second.sources, "D 1", "own", b'{"val":"2"}')
    assert short.delta == 2 and short.sources == {"C": {"c.z": "-5"}, "D": {"own": "2"}}
    with pytest.raises(JSMessageCounterBrokenErr):
        counters.sourced_increment(None, source, "c.z", b"")


def test_apply_increment_local_and_sourced():
    hdr = headers.build({"Nats-Incr": "5"})
    update = counters.apply_increment(hdr, b"", "c.x", 5, 10, {})
    assert (update.total, update.body, update.hdr) == (15, b'{"val":"15"}', hdr)
    hdr = headers.build([("Nats-Incr", "5"), ("Nats-Stream-Source", "C 4 > > c.z gU")])
    update = counters.apply_increment(hdr, b'{"val":"15"}', "c.z", 5, 100, {"C": {"c.z": "10"}})
    assert update.total == 105 and update.body == b'{"val":"105"}'
    assert update.hdr == (b'NATS/1.0\r\nNats-Incr: 5\r\nNats-Stream-Source: C 4 > > c.z gU\r\n'
                          b'Nats-Counter-Sources: {"C":{"c.z":"15"}}\r\n\r\n')
    assert counters.previous_state(update.hdr, update.body) == (105, {"C": {"c.z": "15"}})
    assert counters.previous_state(None, None) == (0, {})


def _checks(hdr, *, allow_msg_counter=True, payload_len=0, allow_msg_ttl=False, dedupe=None):
    return pubchecks.check_headers(
        hdr, subject="c.x", stream_name="C", last_seq=3, last_msg_id="",
        last_seq_for_subject=lambda subject: 0, dedupe=dedupe, now=0, allow_msg_ttl=allow_msg_ttl,
        allow_rollup_hdrs=True, allow_msg_counter=allow_msg_counter, payload_len=payload_len)


@pytest.mark.parametrize("pairs,kwargs,error", [
    ([("Nats-Incr", "abc")], dict(allow_msg_counter=False), JSMessageIncrInvalidErr),
    ([("Nats-Incr", "1")], dict(allow_msg_counter=False, payload_len=1), JSMessageIncrDisabledErr),
    ([("Nats-Incr", "1"), ("Nats-Expected-Stream", "X")], dict(allow_msg_counter=False),
     JSMessageIncrDisabledErr),
    ([("Nats-Incr", "1")], dict(payload_len=1), JSMessageIncrPayloadErr),
    ([("Nats-Incr", "zz")], dict(payload_len=1), JSMessageIncrInvalidErr),
    ([("Nats-Incr", "1"), ("Nats-Rollup", "sub")], {}, JSMessageIncrInvalidErr),
    ([("Nats-Incr", "1"), ("Nats-Expected-Stream", "C")], {}, JSMessageIncrInvalidErr),
    ([("Nats-Incr", "1"), ("Nats-Expected-Last-Sequence", "abc")], {}, JSMessageIncrInvalidErr),
    ([("Nats-Incr", "1"), ("Nats-Expected-Last-Subject-Sequence", "3")], {}, JSMessageIncrInvalidErr),
    ([("Nats-Incr", "1"), ("Nats-Expected-Last-Subject-Sequence-Subject", "c.y")], {},
     JSMessageIncrInvalidErr),
    ([("Nats-Incr", "1"), ("Nats-Expected-Last-Msg-Id", "m")], {}, JSMessageIncrInvalidErr),
    ([("Nats-Incr", "1"), ("Nats-TTL", "5s")], {}, JSMessageTTLDisabledErr),
    ([("Nats-Msg-Id", "q")], {}, JSMessageIncrMissingErr),
    ([("Nats-Incr", "")], {}, JSMessageIncrMissingErr),
])
def test_incr_checks_in_order(pairs, kwargs, error):
    with pytest.raises(error):
        _checks(headers.build(pairs), **kwargs)


def test_incr_checks_results():
    assert _checks(None, allow_msg_counter=False).incr is None
    with pytest.raises(JSMessageIncrMissingErr):
        _checks(None)
    assert _checks(headers.build({"Nats-Incr": "-12"})).incr == -12
    dedupe = pubchecks.DedupeWindow()
    dedupe.record("m1", 6, 0)
    found = _checks(headers.build({"Nats-Msg-Id": "m1"}), dedupe=dedupe)
    assert found.duplicate_seq == 6 and found.incr is None  # a duplicate answers first
    sourced = headers.build([("Nats-Incr", "1"), ("Nats-Rollup", "sub")])
    assert pubchecks.check_incr(sourced, allow_msg_counter=False, payload_len=9, sourced=True) == 1


COUNTER_CASES = [
    ("n.x", {"Nats-Incr": "abc"}), ("n.x", {"Nats-Incr": "1"}), ("c.x", {"Nats-Incr": "zz"}),
    ("c.x", {"Nats-Msg-Id": "q"}), ("c.x", {"Nats-Incr": "+5"}), ("c.x", {"Nats-Incr": "-7"}),
    ("c.x", {"Nats-Incr": "123456789012345678901234567890"}), ("c.x", {"Nats-Incr": "0x10"}),
    ("c.x", {"Nats-Incr": "1_000"}), ("c.x", {"Nats-Incr": "-0"}), ("c.x", {"Nats-Incr": "+"}),
    ("c.x", {"Nats-Incr": "1", "Nats-Rollup": "sub"}),
    ("c.x", {"Nats-Incr": "1", "Nats-Expected-Last-Sequence": "3"}),
    ("c.x", {"Nats-Incr": "1", "Nats-Expected-Last-Msg-Id": "m"}),
    ("c.x", {"Nats-Incr": "1", "Nats-TTL": "5s"}),
    ("c.y", {"Nats-Incr": "1", "Nats-Counter-Sources": "garbage"}), ("c.y", {"Nats-Incr": "1"}),
]


def _model_publish(state, subject, hdr, payload):
    """The answer our modules give for a publish on stream C (counters) or N (plain)."""
    stream = "C" if subject.startswith("c.") else "N"
    try:
        checks = pubchecks.check_headers(
            hdr, subject=subject, stream_name=stream, last_seq=len(state[stream]),
            last_msg_id="", last_seq_for_subject=lambda s: 0, dedupe=None, now=0,
            allow_msg_ttl=False, allow_rollup_hdrs=False, allow_msg_counter=stream == "C",
            payload_len=len(payload))
        last = [m for m in state[stream] if m[0] == subject]
        total, sources = counters.previous_state(*(last[-1][1:] if last else (None, None)))
        update = counters.apply_increment(hdr, payload, subject, checks.incr, total, sources)
    except Exception as error:  # an ApiError: the error part of the PubAck
        return {"error": error.to_dict(), "stream": stream, "seq": 0}
    state[stream].append((subject, update.hdr, update.body))
    return {"stream": stream, "seq": len(state[stream]), "val": str(update.total)}


@pytest.mark.natsserver
def test_counter_answers_match_nats_server(tmp_path):
    natsserver = pytest.importorskip("natsserver")
    nats = pytest.importorskip("nats")
    natsserver.require_nats_server()
    state = {"C": [], "N": []}

    async def run(url):
        nc = await nats.connect(url)
        try:
            for cfg in (dict(name="C", subjects=["c.>"], allow_msg_counter=True),
                        dict(name="N", subjects=["n.>"])):
                await nc.request("$JS.API.STREAM.CREATE." + cfg["name"], json.dumps(cfg).encode(),
                                 timeout=2)
            for subject, pairs in COUNTER_CASES:
                real = json.loads((await nc.request(subject, b"", timeout=2, headers=pairs)).data)
                mine = _model_publish(state, subject, headers.build(pairs), b"")
                assert mine == real, (subject, pairs)
        finally:
            await nc.close()

    with natsserver.nats_server(tmp_path / "server") as server:
        asyncio.run(run(server.url))
