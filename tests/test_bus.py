"""The in-process bus, and messages sent into JetStream: API requests and publishes
answered through js.handle / js.request / js.request_msgs."""

import json

import pytest

import jsstore
from jsstore.wire.bus import Bus, Msg


def test_literal_and_wildcard_subscriptions_in_subscription_order():
    bus = Bus()
    seen = []
    bus.subscribe("a.>", lambda m: seen.append(("gt", m.subject)))
    bus.subscribe("a.b", lambda m: seen.append(("lit", m.subject)))
    bus.subscribe("a.*", lambda m: seen.append(("star", m.subject)))
    assert bus.publish(Msg("a.b", b"x")) == 3
    assert seen == [("gt", "a.b"), ("lit", "a.b"), ("star", "a.b")]
    seen.clear()
    assert bus.publish(Msg("a.b.c")) == 1
    assert bus.publish(Msg("b")) == 0
    assert seen == [("gt", "a.b.c")]
    assert bus.has_interest("a.x") and not bus.has_interest("b.x")


def test_a_subject_with_wildcard_tokens_reaches_the_wildcards_that_take_them():
    """As nats-server's sublist (tests/test_server_wildcard_publish.py checks it against
    nats-server): a `*` or `>` token of a published subject is an ordinary token."""
    bus = Bus()
    filters = ["a.b", "a.*", "a.>", "*.*", ">", "*", "a.*.c"]
    seen = []
    for flt in filters:
        bus.subscribe(flt, lambda m, flt=flt: seen.append((flt, m.subject)))
    for subject in ["a.*", "a.>", "*", "a.>.c", "a..b"]:
        bus.publish(Msg(subject))
    assert seen == [("a.*", "a.*"), ("a.>", "a.*"), ("*.*", "a.*"), (">", "a.*"),
                    ("a.*", "a.>"), ("a.>", "a.>"), ("*.*", "a.>"), (">", "a.>"),
                    (">", "*"), ("*", "*"),
                    ("a.>", "a.>.c"), (">", "a.>.c"), ("a.*.c", "a.>.c")]
    assert bus.has_interest("a.*") and not bus.has_interest("a..b")


def test_unsubscribe_stops_delivery():
    bus = Bus()
    seen = []
    sub = bus.subscribe("x", seen.append)
    bus.publish(Msg("x", b"1"))
    sub.unsubscribe()
    sub.unsubscribe()       # twice is harmless
    assert bus.publish(Msg("x", b"2")) == 0
    assert [m.data for m in seen] == [b"1"]
    assert not bus.has_interest("x")


def test_invalid_filter_is_rejected():
    with pytest.raises(ValueError):
        Bus().subscribe("a..b", print)


def test_publishing_from_a_callback_is_delivered_after_the_current_message():
    bus = Bus()
    order = []

    def first(msg):
        order.append(("first", msg.subject))
        if msg.subject == "x":
            bus.publish(Msg("y"))
    bus.subscribe(">", first)
    bus.subscribe(">", lambda m: order.append(("second", m.subject)))
    bus.publish(Msg("x"))
    assert order == [("first", "x"), ("second", "x"), ("first", "y"), ("second", "y")]


def test_a_failing_callback_does_not_reach_the_publisher(caplog):
    bus = Bus()
    seen = []
    bus.subscribe("x", lambda m: 1 / 0)
    bus.subscribe("x", seen.append)
    assert bus.publish(Msg("x")) == 2
    assert len(seen) == 1
    assert "ZeroDivisionError" in caplog.text


# -- JetStream entry points ------------------------------------------------------------

@pytest.fixture
def js():
    with jsstore.open() as handle:
        handle.add_stream(name="S", subjects=["s.>"])
        yield handle


def test_publish_through_request_answers_puback_json_as_nats_server(js):
    assert js.request("s.a", b"1") == b'{"stream":"S","seq":1}'
    assert js.request("s.a", b"2", {"Nats-Msg-Id": "m"}) == b'{"stream":"S","seq":2}'
    assert js.request("s.a", b"2", {"Nats-Msg-Id": "m"}) == b'{"stream":"S","seq":2,"duplicate": true}'
    assert js.request("s.a", b"x", {"Nats-Expected-Stream": "X"}) == (
        b'{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"},'
        b'"stream":"S","seq":0}')
    assert js.stream_info("S").state.messages == 2


def test_nothing_answers_an_uncaptured_subject_or_an_unknown_api_subject(js):
    assert js.request("t.a", b"1") is None
    assert js.request_msgs("$JS.API.NOPE") == []
    assert not js.handle(Msg("t.a", b"1", reply="r"))     # over NATS: no responders
    # nats-server's JetStream takes every $JS.API.> subject: unanswered, not "no responders"
    answers = []
    js.bus.subscribe("r", answers.append)
    assert js.handle(Msg("$JS.API.STREAM.INFO", b"", reply="r"))
    assert answers == []


def test_handle_sends_answers_to_the_reply_subject(js):
    answers = []
    js.bus.subscribe("reply.>", answers.append)
    assert js.handle(Msg("$JS.API.STREAM.INFO.S", b"", reply="reply.1"))
    assert js.handle(Msg("s.x", b"payload", reply="reply.2"))
    assert js.handle(Msg("s.y", b"no reply wanted"))
    assert [m.subject for m in answers] == ["reply.1", "reply.2"]
    assert json.loads(answers[0].data)["config"]["name"] == "S"
    assert answers[1].data == b'{"stream":"S","seq":1}'
    assert js.stream_info("S").state.messages == 2


def test_a_required_api_level_above_ours_is_refused(js):
    answer = json.loads(js.request("$JS.API.STREAM.INFO.S", b"", {"Nats-Required-Api-Level": "99"}))
    assert answer["error"] == {"code": 412, "err_code": 10185,
                               "description": "JetStream minimum api level required"}
    ok = json.loads(js.request("$JS.API.STREAM.INFO.S", b"", {"Nats-Required-Api-Level": "1"}))
    assert "error" not in ok


def test_direct_get_is_answered_only_with_allow_direct():
    with jsstore.open() as js:
        js.add_stream(name="D", subjects=["d.>"], allow_direct=True)
        js.add_stream(name="N", subjects=["n.>"])
        js.publish("d.a", b"one")
        js.publish("n.a", b"one")
        answers = js.request_msgs("$JS.API.DIRECT.GET.D", b'{"seq":1}')
        assert [m.data for m in answers] == [b"one"]
        assert b"Nats-Sequence: 1\r\n" in answers[0].hdr
        last = js.request_msgs("$JS.API.DIRECT.GET.D.d.a", b"")
        assert [m.data for m in last] == [b"one"]
        assert js.request_msgs("$JS.API.DIRECT.GET.N", b'{"seq":1}') == []
        assert js.request_msgs("$JS.API.DIRECT.GET.X", b'{"seq":1}') == []
        no_hdr = js.request_msgs("$JS.API.DIRECT.GET.D", b'{"seq":1,"no_hdr":true}')
        assert [(m.hdr, m.data) for m in no_hdr] == [(None, b"one")]
